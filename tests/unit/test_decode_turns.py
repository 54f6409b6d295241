"""scripts/decode_turns.py: the decode engines of vllm_e2e.py time one at a time, after
every other engine has exited, in the planned order — with engine processes played by
threads that share only the turn directory."""
import importlib.util
import threading
import time
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location("decode_turns", Path(__file__).parents[2] / "scripts" / "decode_turns.py")
turns = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(turns)


@pytest.fixture(autouse=True)
def fast_polls(monkeypatch):
    monkeypatch.setattr(turns, "POLL_S", 0.005)


def test_turn_order_alternates_rounds():
    assert turns.turn_order(["a", "b"], 3) == ["a", "b", "b", "a", "a", "b"]
    assert turns.turn_order(["a"], 2) == ["a", "a"]
    with pytest.raises(ValueError, match="at least 1"):
        turns.turn_order(["a"], 0)


def test_plan_refuses_a_timer_that_is_not_an_engine(tmp_path):
    with pytest.raises(ValueError, match=r"\['c'\] are not engines"):
        turns.plan(tmp_path, ["a", "b"], ["a", "c"], 1)


class Log:
    """What the timers did, as (event, name, turn, time)."""

    def __init__(self):
        self.events = []
        self.lock = threading.Lock()

    def add(self, *e):
        with self.lock:
            self.events.append(e + (time.monotonic(),))


def _timer(d, name, log, hold=0.03, timeout=10.0):
    def body():
        def measure(i):
            log.add("start", name, i)
            time.sleep(hold)
            log.add("end", name, i)
            return {"tok_s": 1.0}

        t = turns.Turns(d, name, timeout=timeout)
        res = t.run(measure)
        log.add("done", name, [r["turn"] for r in res])
        turns.mark_exit(d, name)
        return t

    out = {}
    th = threading.Thread(target=lambda: out.setdefault("turns", body()))
    th.start()
    return th, out


def test_timers_wait_for_the_others_then_take_turns_alone(tmp_path):
    d = tmp_path / "t"
    turns.plan(d, ["a", "b", "other", "ref"], ["a", "b"], 2)
    log = Log()
    ta, oa = _timer(d, "a", log)
    tb, ob = _timer(d, "b", log)
    time.sleep(0.1)
    assert not log.events, "timed while other engines still ran"
    turns.mark_exit(d, "other")
    time.sleep(0.1)
    assert not log.events, "timed while the reference still ran"
    released = time.monotonic()
    turns.mark_exit(d, "ref")
    ta.join(5)
    tb.join(5)
    starts = [(n, i) for e, n, i, _ in log.events if e == "start"]
    assert starts == [("a", 0), ("b", 1), ("b", 2), ("a", 3)]
    # one at a time: every turn ends before the next starts
    spans = [t for e, _, _, t in log.events if e in ("start", "end")]
    assert spans == sorted(spans) and spans[0] >= released
    assert not oa["turns"].waited_out and not ob["turns"].waited_out


def test_a_dead_engines_turns_are_skipped(tmp_path):
    d = tmp_path / "t"
    turns.plan(d, ["a", "b"], ["a", "b"], 2)  # order a b b a
    log = Log()
    turns.mark_exit(d, "a")  # a died before its log-prob pass ended
    tb, ob = _timer(d, "b", log)
    tb.join(5)
    assert [(e, n, i) for e, n, i, _ in log.events] == [("start", "b", 1), ("end", "b", 1), ("start", "b", 2),
                                                      ("end", "b", 2), ("done", "b", [1, 2])]
    assert not ob["turns"].waited_out


def test_a_hung_engine_is_waited_out_and_said(tmp_path):
    d = tmp_path / "t"
    turns.plan(d, ["a", "hung"], ["a"], 1)
    log = Log()
    ta, oa = _timer(d, "a", log, timeout=0.2)
    ta.join(5)
    assert [(e, n) for e, n, _, _ in log.events] == [("start", "a"), ("end", "a"), ("done", "a")]
    assert oa["turns"].waited_out


def test_an_engine_without_a_turn_is_refused(tmp_path):
    turns.plan(tmp_path, ["a", "b"], ["a"], 1)
    with pytest.raises(ValueError, match="b has no decode turn"):
        turns.Turns(tmp_path, "b")
