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


def _layouts(mod) -> set:
    for name in ("_W4A16_WEIGHT_LAYOUTS", "W4A16_WEIGHT_LAYOUTS"):
        got = getattr(mod, name, None)
        if got:
            return {str(x) for x in got}
    return set()


def capabilities() -> dict:
    """{"version", "w4a16" (fused-MoE W4A16 API present), "nf3" (nf3_2p1 layout present),
    "error" (why b12x could not be inspected, if it could not)}."""
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
    layouts = set()
    for modname in ("b12x.moe.fused_moe._impl", "b12x.moe.fused.w4a16.prepare", "b12x.moe.fused.w4a16.host"):
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        layouts |= _layouts(mod)
        if hasattr(mod, "_nf3_pack_code_experts"):
            layouts.add(NF3_LAYOUT)
    caps["nf3"] = NF3_LAYOUT in layouts
    return caps
