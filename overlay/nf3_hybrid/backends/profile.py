"""HYBRID_PROFILE: per-tier GPU time of prefill-sized MoE calls, without host syncs.

Each profiled call records CUDA events between its phases (routing, tier A, tier B).
Nothing waits for them: completed calls are harvested later with ``Event.query()``
and aggregated per layer; every ``every`` profiled calls one summary is reported —
milliseconds per layer call for each tier and the projected MoE time of one forward
(all layers, their average call).
"""
from __future__ import annotations

from collections import defaultdict, deque
from typing import Callable, Deque, Dict, List, Optional, Tuple

PHASES = ("routing", "kept", "nf3")


class TierProfiler:
    def __init__(self, report: Callable[[str], None], every: int = 256, event_factory=None):
        self.report = report
        self.every = every
        self._event = event_factory
        self._pending: Deque[Tuple[str, int, List]] = deque()
        self._ms: Dict[str, Dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self._calls: Dict[str, int] = defaultdict(int)
        self._tokens: Dict[str, int] = defaultdict(int)
        self._seen = 0

    def _new_event(self):
        if self._event is None:
            import torch

            self._event = lambda: torch.cuda.Event(enable_timing=True)
        return self._event()

    def marks(self, layer: str, tokens: int) -> List:
        """Four events to record at: start, after routing, after tier A, after tier B."""
        evs = [self._new_event() for _ in range(len(PHASES) + 1)]
        self._pending.append((layer, tokens, evs))
        return evs

    def harvest(self) -> int:
        done = 0
        while self._pending and self._pending[0][2][-1].query():
            layer, tokens, evs = self._pending.popleft()
            for name, a, b in zip(PHASES, evs, evs[1:]):
                self._ms[layer][name] += a.elapsed_time(b)
            self._calls[layer] += 1
            self._tokens[layer] += tokens
            done += 1
        return done

    def tick(self) -> Optional[str]:
        """Call once per profiled call: harvests, and reports every ``every`` calls."""
        self._seen += 1
        self.harvest()
        if self._seen % self.every:
            return None
        msg = self.summary()
        if msg:
            self.report(msg)
        return msg

    def summary(self) -> Optional[str]:
        if not self._calls:
            return None
        per_layer = {}
        for layer, n in self._calls.items():
            per_layer[layer] = {k: v / n for k, v in self._ms[layer].items()}
        avg = {k: sum(p.get(k, 0.0) for p in per_layer.values()) / len(per_layer) for k in PHASES}
        forward = sum(sum(p.values()) for p in per_layer.values())
        tokens = sum(self._tokens.values()) / sum(self._calls.values())
        return (f"nf3-hybrid profile: {sum(self._calls.values())} prefill-sized calls, {tokens:.0f} tokens on average; "
                f"per layer call: routing {avg['routing']:.3f} ms, kept tier {avg['kept']:.3f} ms, "
                f"NF3 tier {avg['nf3']:.3f} ms; projected MoE time per forward ({len(per_layer)} layers): "
                f"{forward:.2f} ms")
