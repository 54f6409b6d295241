"""What the installed b12x can do for the overlay, found by looking at what it exports.

b12x 1.5.1 (the pinned release, a shim over FlashInfer's embedded copy) has NVFP4 W4A16
fused MoE but no NF3 weight layout; b12x 1.1.0 is the last release with the ``nf3_2p1``
layout (and it pins nvidia-cutlass-dsl 4.6.0 where vLLM 0.33.0 pins 4.8.0). Detection
never launches a kernel, so it runs on any machine.
"""
from __future__ import annotations

import importlib
import importlib.metadata as md

NF3_LAYOUT = "nf3_2p1"
NF3_RELEASE = "1.1.0"


# where b12x 1.1.0 keeps the NF3 preparation and the two-tier (NVFP4 + NF3) W4A16 kernel;
# internal modules, so they are looked up by name and every name is checked
_NF3_PREPARE = ("b12x.moe._shared.kernels.w4a16.prepare", ("prepare_nf3_moe_weights", "_nf3_pack_code_experts",
                                                           "_nf3_pack_scale_experts",
                                                           "prepare_w4a16_modelopt_nvfp4_weights"))
_NF3_KERNEL = ("b12x.moe._shared.kernels.w4a16.kernel", ("run_w4a16_moe_hybrid", "build_w4a16_tier_local_map",
                                                         "compile_w4a16_fused_moe_hybrid"))


def _exports(modname: str, names) -> bool:
    try:
        mod = importlib.import_module(modname)
    except ImportError:
        return False
    return all(hasattr(mod, n) for n in names)


def capabilities() -> dict:
    """{"version", "w4a16" (fused-MoE W4A16 API present), "nf3" (the nf3_2p1 NF3
    preparation and the two-tier NVFP4 + NF3 W4A16 kernel present), "error" (why b12x
    could not be inspected, if it could not)}."""
    try:
        version = md.version("b12x")
    except md.PackageNotFoundError:
        return {"version": None, "w4a16": False, "nf3": False, "error": "not installed"}
    caps = {"version": version, "w4a16": False, "nf3": False, "error": None}
    try:
        fm = importlib.import_module("b12x.moe.fused_moe")
    except ImportError as exc:
        caps["error"] = f"{type(exc).__name__}: {exc}"
        return caps
    caps["w4a16"] = all(hasattr(fm, n) for n in ("plan_weights", "prepare_weights", "plan_execution", "bind", "run"))
    caps["nf3"] = _exports(*_NF3_PREPARE) and _exports(*_NF3_KERNEL)
    return caps
