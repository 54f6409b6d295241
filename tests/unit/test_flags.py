import pytest

from nf3_hybrid import flags
from nf3_hybrid.backends.select import BackendError, DeviceInfo, choose

OK = lambda name: None  # noqa: E731  every module "imports"


def test_defaults_and_parsing():
    f = flags.parse({})
    assert (f.kept, f.nf3, f.tier, f.debug, f.max_tokens) == ("auto", "fast", "both", 0, None)
    f = flags.parse({"HYBRID_KEPT": " Triton ", "HYBRID_DEBUG": "yes", "HYBRID_MAX_TOKENS": "4096", "HYBRID_TIER": "b"})
    assert (f.kept, f.debug, f.max_tokens, f.tier) == ("triton", 1, 4096, "b")
    assert flags.parse({"HYBRID_DEBUG": " 3 "}).debug == 3 and flags.parse({"HYBRID_DEBUG": "off"}).debug == 0


@pytest.mark.parametrize("env,match", [
    ({"HYBRID_KEPT": "cutlass"}, r"HYBRID_KEPT='cutlass': expected one of auto, triton, b12x, b12x_nf3, ref"),
    ({"HYBRID_NF3": "slow"}, "HYBRID_NF3='slow'"),
    ({"HYBRID_DEBUG": "maybe"}, r"HYBRID_DEBUG='maybe': expected 1 or 0, or a number of calls"),
    ({"HYBRID_MAX_TOKENS": "-3"}, "positive integer"),
    ({"HYBRID_MAX_TOKENS": "lots"}, "positive integer"),
])
def test_bad_values_name_the_variable(env, match):
    with pytest.raises(flags.FlagError, match=match):
        flags.parse(env)


def test_disable_is_read_alone():
    assert flags.disabled({"HYBRID_DISABLE": "1", "HYBRID_KEPT": "nonsense"})
    assert not flags.disabled({})


def test_readme_lists_every_flag():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for var in flags.ENV_NAMES.values():
        assert f"`{var}`" in readme, var


SM90 = DeviceInfo("cuda", (9, 0), "NVIDIA H200")
SM120 = DeviceInfo("cuda", (12, 0), "NVIDIA RTX PRO 6000")


def test_auto_picks_triton_on_sm90_and_b12x_on_sm120():
    c = choose("auto", "fast", SM90, probe=OK)
    assert (c.kept, c.nf3) == ("triton", "triton") and "not SM120/121" in c.reason
    c = choose("auto", "fast", SM120, probe=OK)
    assert (c.kept, c.nf3) == ("b12x", "triton") and "b12x" in c.reason


def test_auto_without_b12x_on_sm120_is_triton_and_says_why():
    c = choose("auto", "fast", SM120, probe=lambda m: "no module" if "b12x" in m else None)
    assert c.kept == "triton" and "b12x not importable" in c.reason


def test_b12x_on_sm90_is_refused():
    for kept in ("b12x", "b12x_nf3"):
        with pytest.raises(BackendError, match=f"HYBRID_KEPT={kept} runs only on SM120/121.*SM90"):
            choose(kept, "fast", SM90, probe=OK)


def test_fallback_is_explicit_when_triton_is_missing():
    miss = lambda m: "ImportError: no triton" if "triton" in m else None  # noqa: E731
    c = choose("auto", "fast", SM90, probe=miss)
    assert (c.kept, c.nf3) == ("ref", "ref") and "Triton kernels unavailable" in c.reason
    with pytest.raises(BackendError, match="HYBRID_KEPT=triton: Triton kernels unavailable"):
        choose("triton", "fast", SM90, probe=miss)


def test_cpu_runs_reference_and_refuses_gpu_backends():
    c = choose("auto", "fast", DeviceInfo("cpu"))
    assert (c.kept, c.nf3) == ("ref", "ref")
    with pytest.raises(BackendError, match="HYBRID_KEPT=triton needs a CUDA GPU"):
        choose("triton", "fast", DeviceInfo("cpu"))


def test_b12x_nf3_without_an_nf3_capable_b12x_names_what_is_missing():
    caps = {"version": "1.5.1", "w4a16": True, "nf3": False}
    with pytest.raises(BackendError) as e:
        choose("b12x_nf3", "fast", SM120, probe=OK, caps_fn=lambda: caps)
    msg = str(e.value)
    assert "needs a b12x with the nf3_2p1 W4A16 weight layout" in msg
    assert "the installed b12x 1.5.1 has no nf3_2p1 layout" in msg
    assert "b12x 1.1.0 provides it" in msg and "nvidia-cutlass-dsl 4.6.0" in msg
    assert "Use HYBRID_KEPT=b12x (kept tier) with HYBRID_NF3=fast instead" in msg


def test_b12x_backends_not_in_this_build_are_reported():
    missing = lambda m: "ModuleNotFoundError" if m.startswith("nf3_hybrid.vllm_patch.b12x") else None  # noqa: E731
    c = choose("auto", "fast", SM120, probe=missing)
    assert c.kept == "triton" and "the b12x kept-tier backend is not in this build" in c.reason
    with pytest.raises(BackendError, match="not part of this nf3-hybrid build yet"):
        choose("b12x", "fast", SM120, probe=missing)


def test_selection_against_the_installed_b12x():
    """The real capability probe of the pinned b12x 1.5.1 (no GPU needed)."""
    from nf3_hybrid.backends.b12x_support import capabilities

    caps = capabilities()
    assert caps["version"] == "1.5.1" and caps["w4a16"] and not caps["nf3"]
    with pytest.raises(BackendError, match="has no nf3_2p1 layout"):
        choose("b12x_nf3", "fast", SM120)
