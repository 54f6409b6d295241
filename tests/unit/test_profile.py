"""HYBRID_PROFILE's aggregation (the CUDA events themselves only exist on a GPU)."""
from nf3_hybrid.backends.profile import TierProfiler


class FakeEvent:
    """Stands for a CUDA event: records a time, completes when the 'GPU' says so."""

    clock = 0.0
    done_until = float("inf")

    def __init__(self):
        self.t = None

    def record(self):
        FakeEvent.clock += 1.0
        self.t = FakeEvent.clock

    def query(self):
        return self.t is not None and self.t <= FakeEvent.done_until

    def elapsed_time(self, other):
        return other.t - self.t


def test_profiler_harvests_without_waiting_and_reports():
    reports = []
    prof = TierProfiler(reports.append, every=4, event_factory=FakeEvent)
    FakeEvent.done_until = 0.0  # nothing finished on the "GPU" yet
    for layer in ("L1", "L2"):
        evs = prof.marks(layer, 100)
        for e in evs:
            e.record()
        assert prof.tick() is None
    assert prof.harvest() == 0  # pending, never waited for
    FakeEvent.done_until = float("inf")
    for layer in ("L1", "L2"):
        evs = prof.marks(layer, 300)
        for e in evs:
            e.record()
        prof.tick()
    assert len(reports) == 1
    msg = reports[0]
    # every phase took 1 "ms"; 2 layers → projected 2 × 3 ms per forward
    assert "4 prefill-sized calls, 200 tokens on average" in msg
    assert "routing 1.000 ms, kept tier 1.000 ms, NF3 tier 1.000 ms" in msg
    assert "projected MoE time per forward (2 layers): 6.00 ms" in msg
