"""The grouped kernels decode group scales by arithmetic (expert_mlp._scale_values), not
from a table: every byte of e4m3 and e8m0 against torch's own float8 decoding (CPU
interpreter here, compiled on the GPU host)."""
import pytest
import torch
import triton
import triton.language as tl

from nf3_hybrid.kernels import expert_mlp

DEV = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def _decode_all(bits_ptr, out_ptr, FMT: tl.constexpr):
    i = tl.arange(0, 256)
    tl.store(out_ptr + i, expert_mlp._scale_values(tl.load(bits_ptr + i), FMT).to(tl.float32))


@pytest.mark.parametrize("fmt", [expert_mlp.FMT_NF3, expert_mlp.FMT_NVFP4, expert_mlp.FMT_MXFP4])
def test_every_scale_byte_decodes_like_torch(fmt):
    bits = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    out = torch.empty(256, dtype=torch.float32, device=DEV)
    _decode_all[(1,)](bits.to(DEV), out, FMT=fmt)
    got = out.cpu()
    if fmt == expert_mlp.FMT_MXFP4:
        # e8m0: 2**(b-127); 0 → 2**-127 (a bf16 subnormal), the NaN code 255 → 0
        want = torch.tensor([2.0 ** (b - 127) for b in range(255)] + [0.0])
        if DEV == "cpu":
            # the interpreter flushes the bf16 subnormal to 0 on its way to float32
            assert float(got[0]) in (0.0, 2.0 ** -127)
            got, want = got[1:], want[1:]
    else:
        # e4m3 (NF3 and NVFP4 block scales): exact, subnormals included; the NaN codes
        # (0x7F, 0xFF), which a checkpoint never holds, come out finite
        want = bits.view(torch.float8_e4m3fn).float()
        finite = torch.isfinite(want)
        assert torch.isfinite(got).all()
        got, want = got[finite], want[finite]
    assert torch.equal(got, want)
