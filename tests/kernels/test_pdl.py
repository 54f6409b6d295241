"""The decode path's programmatic dependent launch, checked in the code Triton generates
for SM90 (compiled on the CPU by bench/compile_probe.py in a child process without the
interpreter; the H200 runs it in the GPU tests): each GEMV waits for the kernel before it
only after it has issued its first weight loads, and lets the next kernel launch; without
PDL neither instruction is there."""
import pytest

from .sm90 import compile_probe


@pytest.mark.parametrize("pdl", [1, 0])
def test_gemv_waits_after_its_first_weight_loads(pdl, tmp_path):
    compile_probe(tmp_path, "--cfg", f"BN13=2,BK13=1024,BN2=8,BK2=512,warps=1,pdl={pdl}")
    for kernel in ("_gemv13_kernel", "_gemv2_kernel"):
        lines = (tmp_path / f"{kernel}.ptx").read_text().splitlines()
        waits = [i for i, ln in enumerate(lines) if "griddepcontrol.wait" in ln]
        launches = [i for i, ln in enumerate(lines) if "griddepcontrol.launch_dependents" in ln]
        loads = [i for i, ln in enumerate(lines) if "ld.global" in ln]
        if not pdl:
            assert not waits and not launches, kernel
            continue
        # one wait per tier branch, each after that branch issued its first weight words
        # (vector loads: the prologue's pair, map and weight loads are scalar) and before
        # loads that follow (the activations); dependents let go after both
        assert len(waits) == 2 and len(launches) == 1, (kernel, waits, launches)
        start = 0
        for w in waits:
            assert any(start <= i < w and "ld.global.v" in lines[i] for i in loads), (kernel, w)
            assert any(i > w for i in loads), kernel
            start = w
        assert launches[0] > max(waits), kernel
