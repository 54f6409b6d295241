"""scripts/vllm_e2e.py's decode timing as an engine process runs it, with vLLM's own
SamplingParams and a stand-in engine whose generate() takes scripted wall times: each turn
warms each batch size and then times it, and the result is the median over turns."""
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest


@pytest.fixture
def e2e():
    spec = importlib.util.spec_from_file_location("vllm_e2e", Path(__file__).parents[2] / "scripts" / "vllm_e2e.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Engine:
    """generate() → one output per prompt of max_tokens tokens; the clock moves by the
    scripted seconds of each timed call (max_tokens 128) and by nothing on a warm-up."""

    def __init__(self, seconds):
        self.seconds = list(seconds)
        self.now = 0.0
        self.calls = []

    def time(self):
        return self.now

    def generate(self, prompts, sp):
        self.calls.append((len(prompts), sp.max_tokens, sp.ignore_eos, sp.temperature))
        if sp.max_tokens == 128:
            self.now += self.seconds.pop(0)
        return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=list(range(sp.max_tokens)))]) for _ in prompts]


def test_decode_speed_times_each_batch_on_each_turn_and_keeps_the_median(e2e, tmp_path, monkeypatch):
    turns = tmp_path / "turns"
    e2e.decode_turns.plan(turns, ["hyb", e2e.REFERENCE], ["hyb"], 3)
    e2e.decode_turns.mark_exit(turns, e2e.REFERENCE)
    # turn 0: batch 1 in 2 s, batch 32 in 4 s; turn 1: 1 s, 8 s; turn 2: 4 s, 2 s
    eng = Engine([2.0, 4.0, 1.0, 8.0, 4.0, 2.0])
    monkeypatch.setattr(e2e, "time", SimpleNamespace(time=eng.time))
    tokens = [list(range(40)), list(range(100, 140))]
    res = e2e.decode_speed(eng, tokens, {"turns": str(turns), "name": "hyb"})
    # a 16-token warm-up of the same batch before every timed call
    assert eng.calls == [(1, 16, True, 1.0), (1, 128, True, 0.0), (32, 16, True, 1.0), (32, 128, True, 0.0)] * 3
    assert [t["turn"] for t in res["decode_turns"]] == [0, 1, 2]
    assert [t["1"] for t in res["decode_turns"]] == [64.0, 128.0, 32.0]
    assert res["decode_tokens_per_s_by_batch"] == {"1": 64.0, "32": 32 * 128 / 4.0}
    assert res["decode_tokens_per_s"] == 32 * 128 / 4.0 and res["decode_batch"] == 32
    assert res["decode_alone"] is True
