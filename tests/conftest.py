"""Shared fixtures: one tiny bf16 model and the hybrid checkpoints made from it, built
once per test session (a few seconds each on the CI machine)."""
import os

import pytest
import torch

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # make test runs a worker per core: torch's intra-op threads (one per core by default)
    # on top of them would put two busy threads on every core
    torch.set_num_threads(1)
if not torch.cuda.is_available():
    # Triton kernels run on the CPU interpreter here (they dot in float32 under it)
    os.environ.setdefault("TRITON_INTERPRET", "1")
if os.environ.get("TRITON_INTERPRET") == "1":
    from tests.triton_interp import install

    install()  # jit helpers patch once per launch: faster, and nothing left patched after


@pytest.fixture(scope="session")
def tiny_bf16(tmp_path_factory):
    from nf3_hybrid.checkpoint.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("ckpt") / "tiny-bf16")


@pytest.fixture(scope="session")
def make_ckpt(tiny_bf16, tmp_path_factory):
    """make_ckpt(name, **MakerOptions fields) → hybrid checkpoint dir (cached by name)."""
    from nf3_hybrid.checkpoint.maker import MakerOptions, make_hybrid_checkpoint

    cache = {}

    def make(name, **opts):
        if name not in cache:
            out = tmp_path_factory.mktemp("ckpt") / name
            opts.setdefault("progress", False)
            make_hybrid_checkpoint(tiny_bf16, out, MakerOptions(**opts))
            cache[name] = out
        return cache[name]

    return make


@pytest.fixture(scope="session")
def tiny_hybrid(make_ckpt):
    return make_ckpt("tiny-hybrid")


@pytest.fixture(scope="session")
def eval_tokens(tiny_bf16):
    from nf3_hybrid.checkpoint.tiny import sample_token_ids

    return sample_token_ids(tiny_bf16, n_seqs=2, seq_len=48)
