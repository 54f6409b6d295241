"""The compile server behind tests/kernels/sm90.py: one child answers probe after probe,
and a probe that fails is reported with its error without ending the child."""
import pytest

from . import sm90
from .sm90 import compile_probe


def test_a_failed_probe_is_reported_and_the_next_one_still_runs(tmp_path):
    with pytest.raises(AssertionError, match="failed:(.|\n)*ValueError"):
        compile_probe(tmp_path / "bad", "--cfg", "BN13=2,BK13=oops")
    child = sm90._server.proc
    out = compile_probe(tmp_path / "good", "--cfg", "BN13=2,BK13=1024,BN2=8,BK2=512,warps=1")
    assert sm90._server.proc is child and child.poll() is None  # the same child answered
    report = (out / "report.txt").read_text()
    assert report.startswith("_gemv13_kernel {") and "\n_gemv2_kernel {" in report
    assert (out / "_gemv13_kernel.sass").read_text().count("LDG") > 0
