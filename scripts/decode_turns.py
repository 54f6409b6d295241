"""Turn-taking for the decode tokens/s runs of scripts/vllm_e2e.py.

Why: the agreement runs share one GPU (and the host's cores) a few engines at a time,
and a decode tokens/s measured while other engines load, compile or capture graphs says
as much about them as about the MoE path (session 33: hybrid over uniform NVFP4 0.93×
with six engines side by side, against 1.075× in session 30). So the engines that time
decode wait, after their log-prob pass, until every other engine of the run has exited,
then take turns in a fixed order (A B B A …, so that a drift over the minutes of the
phase falls on both alike), one engine timing while the others wait idle.

Coordination is by files in one directory, so that engine processes need nothing but a
path: the parent writes ``exit-<name>`` when an engine's process ends (whatever its
exit code), a decode engine writes ``ready-<name>`` after its log-prob pass, and
``slot`` holds the index of the turn being run. An engine that died loses its turns
(the next engine skips them), and a wait that outlasts ``timeout`` goes on regardless
and says so in the result, so a crashed engine cannot hang the run.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence

POLL_S = 0.2


def turn_order(names: Sequence[str], rounds: int) -> List[str]:
    """Each name ``rounds`` times, every other round reversed (A B, B A, A B …)."""
    if rounds < 1:
        raise ValueError(f"decode rounds must be at least 1, got {rounds}")
    order: List[str] = []
    for r in range(rounds):
        order.extend(names if r % 2 == 0 else list(reversed(names)))
    return order


def _write(path: Path, text: str) -> None:
    """Write by rename, so that a reader polling the file never sees it half written."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def plan(directory: Path, engines: Sequence[str], timers: Sequence[str], rounds: int) -> None:
    """Set up a fresh turn directory for one run: every engine of the run (``engines``),
    and of them those that time decode (``timers``)."""
    unknown = [t for t in timers if t not in engines]
    if unknown:
        raise ValueError(f"decode timers {unknown} are not engines of this run {list(engines)}")
    directory.mkdir(parents=True, exist_ok=True)
    for f in directory.iterdir():
        f.unlink()
    (directory / "plan.json").write_text(json.dumps({"engines": list(engines),
                                                     "order": turn_order(list(timers), rounds)}))
    _write(directory / "slot", "0")


def mark_exit(directory: Path, name: str) -> None:
    """The parent's word that engine ``name``'s process has ended."""
    (directory / f"exit-{name}").write_text("")


class Turns:
    """One decode engine's side of the protocol."""

    def __init__(self, directory: Path, name: str, timeout: float = 900.0):
        self.dir = Path(directory)
        self.name = name
        self.timeout = timeout
        p = json.loads((self.dir / "plan.json").read_text())
        self.engines: List[str] = p["engines"]
        self.order: List[str] = p["order"]
        self.timers = sorted(set(self.order))
        if name not in self.timers:
            raise ValueError(f"{name} has no decode turn in {self.order}")
        self.waited_out = False  # a wait gave up: the timings may overlap other work

    def _exited(self, n: str) -> bool:
        return (self.dir / f"exit-{n}").exists()

    def _idle(self, n: str) -> bool:
        return self._exited(n) or (n in self.timers and (self.dir / f"ready-{n}").exists())

    def _wait(self, done: Callable[[], bool]) -> None:
        end = time.monotonic() + self.timeout
        while not done():
            if time.monotonic() >= end:
                self.waited_out = True
                return
            time.sleep(POLL_S)

    def _slot(self) -> int:
        return int((self.dir / "slot").read_text())

    def _advance_past_dead(self) -> None:
        """Skip the turns of engines that exited without running them."""
        s = self._slot()
        while s < len(self.order) and self.order[s] != self.name and self._exited(self.order[s]):
            s += 1
            _write(self.dir / "slot", str(s))

    def run(self, measure: Callable[[int], Dict]) -> List[Dict]:
        """Say this engine is ready, wait until every engine that times nothing has exited
        and every other timer is ready or gone, then run ``measure(turn)`` on each of this
        engine's turns in order; its results, one per turn."""
        (self.dir / f"ready-{self.name}").write_text("")
        self._wait(lambda: all(self._idle(n) for n in self.engines if n != self.name))
        out = []
        for i, owner in enumerate(self.order):
            if owner != self.name:
                continue

            def mine(i=i):
                self._advance_past_dead()
                return self._slot() >= i

            self._wait(mine)
            out.append(dict(measure(i), turn=i))
            _write(self.dir / "slot", str(i + 1))
        return out
