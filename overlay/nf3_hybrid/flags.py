"""Every ``HYBRID_*`` environment variable: parsed and validated here, nowhere else.

Imported by the start-up hook, so it must stay cheap: standard library only.
A bad value is an error that names the variable and the accepted values — a typo in
``HYBRID_KEPT`` must never silently select another backend.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Mapping, Optional

KEPT_BACKENDS = ("auto", "triton", "b12x", "b12x_nf3", "ref")
NF3_BACKENDS = ("fast", "ref")
NF3_LAYOUTS = ("tiled", "nibble")
TIERS = ("both", "a", "b")

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


class FlagError(ValueError):
    """An environment variable with a value the overlay does not accept."""


@dataclass(frozen=True)
class Flags:
    kept: str = "auto"
    nf3: str = "fast"
    nf3_layout: str = "tiled"
    tier: str = "both"
    debug: int = 0
    profile: bool = False
    mxfp8_native: bool = False
    act_capture: str = ""
    act_capture_tokens: int = 32768
    max_tokens: Optional[int] = None
    allow_untested_vllm: bool = False
    disable: bool = False


DOCS = {
    'kept': (
        "kept-tier backend: auto (b12x on SM120/121 when importable, else triton), triton, b12x, b12x_nf3 (both tiers through b12x's NF3-capable W4A16 kernel), ref (dequantize each touched expert, float32 matmul; validation only, needs enforce_eager)."
    ),
    'nf3': (
        'NF3-tier backend: fast (Triton kernel) or ref.'
    ),
    'nf3_layout': (
        "how the fast NF3 backend holds its codes and scales (rewritten in place at load): tiled (by 16-row × 128-column tiles, so the mma kernels' weight loads are contiguous; layers whose shapes are not whole tiles stay nibble) or nibble (row-major)."
    ),
    'tier': (
        'run both tiers, only a (kept) or only b (NF3): isolates a tier while debugging (the other tier contributes nothing).'
    ),
    'debug': (
        "1: the first call of each hybrid layer outside CUDA-graph capture logs the input norm, each tier's output norm, NaN/Inf counts and each tier's relative error against the reference backend on the same call; a number N: the first N calls of each layer (vLLM's own warm-up runs come first)."
    ),
    'profile': (
        "per-tier GPU time of prefill-sized calls (more than 64 tokens) from CUDA events, harvested without host syncs; rank 0 logs ms per layer call per tier and the projected MoE time per forward every 256 profiled calls."
    ),
    'mxfp8_native': (
        "serve the non-expert linears a hybrid checkpoint stores as MXFP8 (rev-3; listed in its hybrid_mxfp8_modules) through vLLM's own ModelOpt MXFP8 linear method instead of dequantizing them to bf16 on load: about half their memory."
    ),
    'act_capture': (
        "directory: rank 0 saves each MoE layer's input activations (fp16) and top-k expert ids for prefill-sized calls, in 8192-token chunks, for `nf3-hybrid quantize --gptq`; a failed write (full disk) stops the capture with one message, serving continues."
    ),
    'act_capture_tokens': (
        "tokens kept per layer by HYBRID_ACT_CAPTURE (bounds its memory and disk)."
    ),
    'max_tokens': (
        "token capacity of the shared kernel scratch buffers (default: vLLM's max_num_batched_tokens)."
    ),
    'allow_untested_vllm': (
        'patch a vLLM version other than the supported one.'
    ),
    'disable': (
        'do not arm the import hook at all (vLLM stays stock).'
    ),
}

ENV_NAMES = {
    "kept": "HYBRID_KEPT",
    "nf3": "HYBRID_NF3",
    "nf3_layout": "HYBRID_NF3_LAYOUT",
    "tier": "HYBRID_TIER",
    "debug": "HYBRID_DEBUG",
    "profile": "HYBRID_PROFILE",
    "mxfp8_native": "HYBRID_MXFP8_NATIVE",
    "act_capture": "HYBRID_ACT_CAPTURE",
    "act_capture_tokens": "HYBRID_ACT_CAPTURE_TOKENS",
    "max_tokens": "HYBRID_MAX_TOKENS",
    "allow_untested_vllm": "HYBRID_ALLOW_UNTESTED_VLLM",
    "disable": "HYBRID_DISABLE",
}
_CHOICES = {"kept": KEPT_BACKENDS, "nf3": NF3_BACKENDS, "nf3_layout": NF3_LAYOUTS, "tier": TIERS}
# flags that change what a hybrid model holds or runs (its linear methods, parameters,
# expert backends): part of vLLM's torch.compile cache key (vllm_patch/compile_cache.py)
MODEL_FLAGS = ("kept", "nf3", "nf3_layout", "tier", "mxfp8_native", "max_tokens")


def _bool(var: str, raw: str) -> bool:
    v = raw.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise FlagError(f"{var}={raw!r}: expected 1 or 0")


def _count(var: str, raw: str) -> int:
    """A switch that may also be a count: 0/1 words, or how many times."""
    v = raw.strip().lower()
    if v in _TRUE or v in _FALSE:
        return int(v in _TRUE)
    if v.isdigit():
        return int(v)
    raise FlagError(f"{var}={raw!r}: expected 1 or 0, or a number of calls")


def parse(env: Mapping[str, str]) -> Flags:
    values = {}
    for f in fields(Flags):
        var = ENV_NAMES[f.name]
        raw = env.get(var)
        if raw is None:
            continue
        if f.name in _CHOICES:
            v = raw.strip().lower()
            if v not in _CHOICES[f.name]:
                raise FlagError(f"{var}={raw!r}: expected one of {', '.join(_CHOICES[f.name])}")
            values[f.name] = v
        elif f.type in ("bool", bool):
            values[f.name] = _bool(var, raw)
        elif f.name == "debug":
            values[f.name] = _count(var, raw)
        elif f.name in ("max_tokens", "act_capture_tokens"):
            if raw.strip() == "":
                continue
            try:
                n = int(raw)
            except ValueError:
                raise FlagError(f"{var}={raw!r}: expected a positive integer") from None
            if n <= 0:
                raise FlagError(f"{var}={raw!r}: expected a positive integer")
            values[f.name] = n
        else:
            values[f.name] = raw.strip()
    return Flags(**values)


def disabled(env: Mapping[str, str]) -> bool:
    """HYBRID_DISABLE alone: the hook reads only this, so a typo in another flag is
    reported where that flag is used (as a start-up error), not by silently
    leaving the overlay out."""
    raw = env.get(ENV_NAMES["disable"])
    return False if raw is None else _bool(ENV_NAMES["disable"], raw)


_current: Optional[Flags] = None


def current() -> Flags:
    """The process's flags, parsed once (TP workers inherit the environment)."""
    global _current
    if _current is None:
        _current = parse(os.environ)
    return _current


def reset_for_tests():
    global _current
    _current = None


def model_factors(f: Flags) -> dict:
    """The MODEL_FLAGS by variable name, as JSON-ready values."""
    return {ENV_NAMES[name]: getattr(f, name) for name in MODEL_FLAGS}


def table() -> str:
    """Markdown table of every flag (README)."""
    rows = ["| variable | default | effect |", "| --- | --- | --- |"]
    defaults = Flags()
    for f in fields(Flags):
        doc = DOCS[f.name]
        rows.append(f"| `{ENV_NAMES[f.name]}` | `{getattr(defaults, f.name)}` | {doc} |")
    return "\n".join(rows)
