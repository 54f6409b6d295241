"""tests/triton_interp.py: interpreted kernels whose jit helpers patch once per launch
compute what they did and leave ``triton.language`` as they found it."""
import os

import pytest
import torch

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("the Triton interpreter only", allow_module_level=True)

import triton
import triton.language as tl
from triton.runtime import interpreter

from tests import triton_interp


@triton.jit
def _scaled(v, s):
    return v * s


@triton.jit
def _row_sums_kernel(x_ptr, out_ptr, N: tl.constexpr, REPEAT: tl.constexpr):
    row = tl.program_id(0)
    v = tl.load(x_ptr + row * N + tl.arange(0, N))
    acc = tl.zeros([N], dtype=tl.float32)
    for i in tl.static_range(REPEAT):
        acc += _scaled(v, i + 1.0)  # an own helper, many calls
    tl.store(out_ptr + row, tl.sum(acc, axis=0))  # tl.sum: a helper whose module holds tl.core


def _language_state():
    names = ("load", "store", "reduce", "static_range", "range", "static_assert", "multiple_of")
    state = {("core", n): getattr(tl.core, n) for n in names}
    state.update({("tl", n): getattr(tl, n) for n in names})
    state.update({("tensor", n): tl.tensor.__dict__.get(n) for n in ("__add__", "__bool__", "__index__", "T")})
    state["to_ir"] = tl.core.dtype.__dict__["to_ir"]
    return state


def test_helpers_patch_once_and_nothing_stays_patched():
    assert triton_interp.install()  # installed by the conftest already: idempotent
    assert interpreter._nf3_patch_once
    x = torch.randn(5, 16)
    out = torch.empty(5)
    _row_sums_kernel[(5,)](x, out, N=16, REPEAT=6)  # once, so that lazily set attributes exist
    before = _language_state()
    x = torch.randn(7, 16)
    out = torch.empty(7)
    _row_sums_kernel[(7,)](x, out, N=16, REPEAT=6)
    torch.testing.assert_close(out, x.sum(1) * 21, rtol=1e-5, atol=1e-5)
    after = _language_state()
    assert [k for k in before if before[k] is not after[k]] == []
    assert tl.core.is_builtin(tl.core.load)  # Triton's own patch scope of tl.sum's call left a wrapper here


def test_remembered_numpy_dtypes_are_the_interpreters():
    """The memoized ``_get_np_dtype`` (installed by the conftest) answers as Triton's own for
    scalars, blocks of them and pointers, asked twice (the second answer remembered)."""
    memo = interpreter._get_np_dtype
    own = memo.triton_own
    assert own.__module__ == "triton.runtime.interpreter" and memo is not own
    scalars = [tl.int1, tl.float16, tl.bfloat16, tl.float32, tl.uint8, tl.int32, tl.uint32, tl.int64, tl.float8e4nv]
    cases = scalars + [tl.block_type(t, [4, 8]) for t in scalars] + [
        tl.pointer_type(tl.float16), tl.block_type(tl.pointer_type(tl.int32), [16])]
    for _ in range(2):
        for t in cases:
            assert memo(t) == own(t), t
