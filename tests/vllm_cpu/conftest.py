import os

import pytest

# the CPU has no CUDA: the reference backends are what runs here (explicitly)
os.environ.setdefault("HYBRID_KEPT", "ref")
os.environ.setdefault("HYBRID_NF3", "ref")


@pytest.fixture(scope="session")
def vllm_tp1():
    """One gloo world of size 1 for the whole session (vLLM's groups are process-global)."""
    from tests.vllm_cpu.harness import vllm_cpu

    with vllm_cpu(1, 0) as cfg:
        yield cfg
