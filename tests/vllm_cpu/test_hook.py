"""The .pth-armed hook, in fresh interpreters of the test venv (as users start them).

A spawned child (how vLLM starts TP workers) is checked in test_config.py, beside the
pickled config it receives, and by ``make install``'s --check."""
import functools
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

SITE = Path(sysconfig.get_paths()["purelib"])
MODELOPT = "vllm.model_executor.layers.quantization.modelopt"

PROBE = f"""
import json, os, sys
import nf3_hybrid.hook as h
before = dict(h.status(), vllm_loaded="vllm" in sys.modules, torch_loaded="torch" in sys.modules)
import vllm
__PRE__
import {MODELOPT} as m
out = {{"before": before, "after": h.status(), "cls": m.ModelOptNvFp4Config.FusedMoEMethodCls.__name__}}
variants = json.loads(os.environ.get("PROBE_VARIANTS", "{{}}"))
if variants:
    # vLLM's compile-cache key for each flag set, in the same interpreter (each probe is a
    # vLLM import, ~19 CPU s): both caches hash envs.compile_factors()
    import vllm.compilation.backends as backends
    import vllm.compilation.caching as caching
    from vllm.config.utils import hash_factors
    from nf3_hybrid import flags
    out["keys"] = {{}}
    for name, env in variants.items():
        for k in [k for k in os.environ if k.startswith("HYBRID_") and k != "HYBRID_DISABLE"]:
            del os.environ[k]
        os.environ.update(env)
        flags.reset_for_tests()
        f = caching.envs.compile_factors()
        assert backends.envs.compile_factors() == f
        out["keys"][name] = {{"hash": hash_factors(f), "overlay": f.get("NF3_HYBRID")}}
print("RESULT", json.dumps(out))
"""


def run_probe(pre="", env=None, pythonpath=None, variants=None):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("HYBRID_"):
            del e[k]
    e.update(env or {})
    if pythonpath:
        e["PYTHONPATH"] = str(pythonpath)
    if variants:
        e["PROBE_VARIANTS"] = json.dumps(variants)
    p = subprocess.run([sys.executable, "-c", PROBE.replace("__PRE__", pre)], capture_output=True, text=True, env=e, timeout=300)
    line = [l for l in p.stdout.splitlines() if l.startswith("RESULT ")]
    assert p.returncode == 0 and line, p.stdout + p.stderr
    return json.loads(line[0][7:]), p.stderr


@functools.lru_cache(maxsize=None)
def _plain_probe():
    """A fresh interpreter with no overlay flags, shared by the tests of one worker."""
    return run_probe(variants={"plain": {}, "native": {"HYBRID_MXFP8_NATIVE": "1"},
                               "ref": {"HYBRID_KEPT": "ref", "HYBRID_NF3": "ref"}, "debug": {"HYBRID_DEBUG": "1"}})[0]


@functools.lru_cache(maxsize=None)
def _disabled_probe():
    return run_probe(env={"HYBRID_DISABLE": "1"}, variants={"stock": {}})[0]


def test_pth_is_installed_next_to_the_package():
    assert (SITE / "nf3_hybrid.pth").is_file() and (SITE / "nf3_hybrid" / "hook.py").is_file()
    text = (SITE / "nf3_hybrid.pth").read_text()
    assert len(text.strip().splitlines()) == 1 and text.startswith("import ")


def test_fresh_interpreter_is_armed_and_patches_on_import():
    res = _plain_probe()
    assert res["before"]["armed"] and res["before"]["finder"] and not res["before"]["patched"]
    # arming imported neither vLLM nor torch
    assert not res["before"]["vllm_loaded"] and not res["before"]["torch_loaded"]
    assert res["after"]["patched"] and res["cls"] == "HybridNvFp4FusedMoE"


def test_disable_flag_leaves_vllm_stock():
    res = _disabled_probe()
    assert not res["before"]["armed"] and not res["before"]["finder"] and res["cls"] == "ModelOptNvFp4FusedMoE"


def test_flags_that_change_the_model_are_part_of_vllms_compile_cache_key():
    """Both of vLLM's compile caches hash envs.compile_factors(); without the overlay in it
    an engine with HYBRID_MXFP8_NATIVE=1 loaded the graph compiled without it (H200)."""
    keys = _plain_probe()["keys"]
    plain = keys["plain"]
    assert plain["overlay"]["HYBRID_MXFP8_NATIVE"] is False and plain["overlay"]["version"]
    assert len({plain["hash"], keys["native"]["hash"], keys["ref"]["hash"]}) == 3
    # a flag that only logs keeps the key (no recompilation for HYBRID_DEBUG)
    assert keys["debug"]["hash"] == plain["hash"]
    # stock vLLM (overlay disabled) keeps vLLM's own factors
    stock = _disabled_probe()["keys"]["stock"]
    assert stock["overlay"] is None and stock["hash"] != plain["hash"]


def test_plain_python_start_imports_nothing_heavy():
    code = "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('vllm','torch','nf3_hybrid')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == ["nf3_hybrid", "nf3_hybrid.flags", "nf3_hybrid.hook"]


def test_untested_vllm_version_is_refused_with_one_line():
    res, err = run_probe(pre="vllm.__version__ = '0.34.0'")
    assert not res["after"]["patched"] and res["cls"] == "ModelOptNvFp4FusedMoE"
    assert "0.34.0 is not a tested version" in res["after"]["skipped"]
    lines = [l for l in err.splitlines() if "not a tested version" in l]
    assert len(lines) == 1 and "HYBRID_ALLOW_UNTESTED_VLLM=1" in lines[0]
    res, _ = run_probe(pre="vllm.__version__ = '0.34.0'", env={"HYBRID_ALLOW_UNTESTED_VLLM": "1"})
    assert res["after"]["patched"] and res["cls"] == "HybridNvFp4FusedMoE"


def _broken_copy(tmp_path, where, code):
    pkg = tmp_path / "nf3_hybrid"
    shutil.copytree(SITE / "nf3_hybrid", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    target = pkg / where
    target.write_text(target.read_text() + "\n" + code + "\n")
    return tmp_path


def test_broken_patch_logs_one_line_and_vllm_stays_stock(tmp_path):
    path = _broken_copy(tmp_path, "vllm_patch/__init__.py", "raise RuntimeError('overlay is broken')")
    res, err = run_probe(pythonpath=path)
    assert res["before"]["armed"] and not res["after"]["patched"] and res["cls"] == "ModelOptNvFp4FusedMoE"
    assert "overlay is broken" in res["after"]["error"]
    assert len([l for l in err.splitlines() if "overlay is broken" in l]) == 1


def test_broken_hook_never_stops_python_starting(tmp_path):
    path = _broken_copy(tmp_path, "hook.py", "raise ImportError('hook is broken')")
    e = dict(os.environ, PYTHONPATH=str(path))
    p = subprocess.run([sys.executable, "-c", "print('alive')"], capture_output=True, text=True, env=e, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "alive"
    assert [l for l in p.stderr.splitlines() if "hook not armed" in l and "hook is broken" in l]
