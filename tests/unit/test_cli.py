"""The installed ``nf3-hybrid`` console command, run as a user runs it."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent / "nf3-hybrid"


def run(*args, check=True):
    env = dict(os.environ, TOKENIZERS_PARALLELISM="false")
    p = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, env=env, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def test_console_script_and_module_entry_point():
    assert BIN.is_file()
    p = subprocess.run([sys.executable, "-m", "nf3_hybrid", "--help"], capture_output=True, text=True)
    assert p.returncode == 0 and "quantize" in p.stdout and "inspect" in p.stdout


def test_tiny_quantize_inspect_verify(tmp_path):
    src, hyb = tmp_path / "src", tmp_path / "hyb"
    run("tiny", src, "--experts", "16", "--layers", "3", "--no-mtp")
    out = run("quantize", src, hyb, "--kept", "3", "--non-expert", "fp8").stdout
    assert "layer 1: 3 kept + 13 NF3" in out and "layer 2: 3 kept + 13 NF3" in out
    out = run("inspect", hyb).stdout
    assert "layer 2: 3 kept" in out and "13 NF3" in out and "non-expert fp8 weights" in out
    out = run("verify", src, hyb, "--json", tmp_path / "r.json", "--plot", tmp_path / "r.png", "--seqs", "2").stdout
    assert "top-1 agreement" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    assert {r["tier"] for r in rep["weight_error"]} == {"kept", "nf3"}
    assert (tmp_path / "r.png").stat().st_size > 1000
    # refusing to overwrite is an error with a message, exit code 2, output untouched
    p = run("quantize", src, hyb, check=False)
    assert p.returncode == 2 and "--force" in p.stderr
    assert "layer 2: 3 kept" in run("inspect", hyb).stdout


def test_errors_are_one_line_and_exit_2(tmp_path):
    p = run("inspect", tmp_path, check=False)
    assert p.returncode == 2 and "no config.json" in p.stderr and "Traceback" not in p.stderr
    p = run("quantize", tmp_path, tmp_path / "o", "--codebook", "1,2", check=False)
    assert p.returncode == 2 and "8 levels" in p.stderr
