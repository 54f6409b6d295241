"""The compile server behind tests/kernels/sm90.py: one child answers probe after probe; a
probe that fails is reported with its error without ending the child; a child that has
ended is replaced; one that ends during a probe fails that probe with its stderr."""
import pytest

from . import sm90
from .sm90 import compile_probe

GOOD = ("--cfg", "BN13=2,BK13=1024,BN2=8,BK2=512,warps=1")  # the decode GEMVs' probe


def test_a_failed_probe_is_reported_and_the_next_one_still_runs(tmp_path):
    with pytest.raises(AssertionError, match="failed:(.|\n)*ValueError"):
        compile_probe(tmp_path / "bad", "--cfg", "BN13=2,BK13=oops")
    child = sm90._server.proc
    out = compile_probe(tmp_path / "good", *GOOD)
    assert sm90._server.proc is child and child.poll() is None  # the same child answered
    report = (out / "report.txt").read_text()
    assert report.startswith("_gemv13_kernel {") and "\n_gemv2_kernel {" in report
    assert (out / "_gemv13_kernel.sass").read_text().count("LDG") > 0


def test_a_child_that_ended_is_replaced(tmp_path):
    compile_probe(tmp_path / "a", *GOOD)
    first = sm90._server.proc
    first.kill()
    first.wait()
    compile_probe(tmp_path / "b", *GOOD)
    assert sm90._server.proc is not first and sm90._server.proc.poll() is None
    assert (tmp_path / "b" / "report.txt").read_text().startswith("_gemv13_kernel {")


def test_a_child_that_ends_during_a_probe_fails_it_with_its_stderr(tmp_path, monkeypatch):
    """A child that dies mid-probe (a stand-in script: it reads the request, writes to
    stderr and exits with 3) fails the probe with why and the child's stderr; the next
    probe gets a fresh child."""
    stand_in = tmp_path / "dies.py"
    stand_in.write_text("import sys\nsys.stdin.readline()\nprint('compiler fell over', file=sys.stderr)\nsys.exit(3)\n")
    sm90._close_server()
    monkeypatch.setattr(sm90, "PROBE", stand_in)
    with pytest.raises(AssertionError, match="it exited \\(3\\):\n(.|\n)*compiler fell over"):
        compile_probe(tmp_path / "x", *GOOD)
    assert sm90._server is None
    monkeypatch.undo()
    compile_probe(tmp_path / "y", *GOOD)
    assert sm90._server.proc.poll() is None
