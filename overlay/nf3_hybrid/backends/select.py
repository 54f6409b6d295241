"""Which backend runs each tier: flags + device → a choice with its reason.

Explicit requests are honoured or refused with an error that says why; only ``auto``
(kept tier) and ``fast`` (NF3 tier, the default) may fall back, and the fallback is
part of the returned reason so the caller logs it once.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

from .base import MXFP4, NF3, NVFP4


class BackendError(RuntimeError):
    """A requested backend that cannot run here."""


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cuda" or "cpu"
    capability: Optional[Tuple[int, int]] = None  # (major, minor) for CUDA
    name: str = ""

    @property
    def is_sm12x(self) -> bool:
        return self.kind == "cuda" and self.capability is not None and self.capability[0] == 12


@dataclass(frozen=True)
class Choice:
    kept: str
    nf3: str
    reason: str


def device_info(device) -> DeviceInfo:
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return DeviceInfo(dev.type)
    idx = dev.index if dev.index is not None else torch.cuda.current_device()
    return DeviceInfo("cuda", torch.cuda.get_device_capability(idx), torch.cuda.get_device_name(idx))


def _module_problem(module: str) -> Optional[str]:
    """None if ``module`` imports, else why not (one line)."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# name → (module holding the backend classes, what it needs)
_TRITON_MODULE = "nf3_hybrid.backends.triton_tiers"
# the b12x backends (SM120/121; built, never run — no such GPU here)
_B12X_MODULE = "nf3_hybrid.vllm_patch.b12x_kept"
_B12X_NF3_MODULE = "nf3_hybrid.backends.b12x_nf3"


def _nf3_b12x_missing(caps: Optional[dict]) -> str:
    from .b12x_support import NF3_LAYOUT, NF3_RELEASE

    have = f"the installed b12x {caps['version']} has no {NF3_LAYOUT} layout" if caps and caps.get("version") \
        else "b12x is not installed"
    return (
        f"HYBRID_KEPT=b12x_nf3 needs a b12x with the {NF3_LAYOUT} W4A16 weight layout, and {have}. "
        f"b12x {NF3_RELEASE} provides it (it pins nvidia-cutlass-dsl 4.6.0 where vLLM 0.33.0 pins 4.8.0, so it "
        "needs its own environment). Use HYBRID_KEPT=b12x (kept tier) with HYBRID_NF3=fast instead."
    )


def _b12x_caps() -> dict:
    from .b12x_support import capabilities

    return capabilities()


def choose(kept_flag: str, nf3_flag: str, dev: DeviceInfo, kept_format: str = NVFP4,
           probe: Callable[[str], Optional[str]] = _module_problem,
           caps_fn: Callable[[], dict] = _b12x_caps) -> Choice:
    """Resolve ``HYBRID_KEPT`` / ``HYBRID_NF3`` for this device. ``probe`` says why a
    module does not import (None if it does); ``caps_fn`` describes the installed b12x."""
    notes = []
    if dev.kind != "cuda":
        for flag, value, ok in (("HYBRID_KEPT", kept_flag, ("auto", "ref")), ("HYBRID_NF3", nf3_flag, ("fast", "ref"))):
            if value not in ok:
                raise BackendError(f"{flag}={value} needs a CUDA GPU; this process runs on {dev.kind}")
        return Choice("ref", "ref", f"no CUDA device ({dev.kind}): reference backend for both tiers")

    triton_problem = probe(_TRITON_MODULE)
    # ---- kept tier
    kept = kept_flag
    if kept_flag == "auto":
        b12x_problem = (probe("b12x") and "b12x not importable") or \
            (probe(_B12X_MODULE) and "the b12x kept-tier backend is not in this build")
        if dev.is_sm12x and not b12x_problem:
            kept = "b12x"
            notes.append(f"SM{dev.capability[0]}{dev.capability[1]} with b12x: b12x kept tier")
        elif triton_problem is None:
            kept = "triton"
            why = "not SM120/121" if not dev.is_sm12x else b12x_problem
            notes.append(f"{why}: Triton kept tier")
        else:
            kept = "ref"
            notes.append(f"Triton kernels unavailable ({triton_problem}): reference kept tier")
    elif kept_flag in ("b12x", "b12x_nf3"):
        if not dev.is_sm12x:
            raise BackendError(
                f"HYBRID_KEPT={kept_flag} runs only on SM120/121 (RTX PRO 6000 / DGX Spark class) GPUs; "
                f"this GPU ({dev.name or 'cuda'}) is SM{dev.capability[0]}{dev.capability[1]}. "
                "Use HYBRID_KEPT=triton (or auto)."
            )
        if probe("b12x"):
            raise BackendError(f"HYBRID_KEPT={kept_flag}: b12x is not usable here ({probe('b12x')})")
        if kept_flag == "b12x_nf3" and not caps_fn().get("nf3"):
            raise BackendError(_nf3_b12x_missing(caps_fn()))
        if probe(_B12X_NF3_MODULE if kept_flag == "b12x_nf3" else _B12X_MODULE):
            raise BackendError(
                f"HYBRID_KEPT={kept_flag}: the b12x backends are not part of this nf3-hybrid build yet "
                "(see README, Backends); use HYBRID_KEPT=triton"
            )
        notes.append(f"HYBRID_KEPT={kept_flag}")
    elif kept_flag == "triton":
        if triton_problem:
            raise BackendError(f"HYBRID_KEPT=triton: Triton kernels unavailable ({triton_problem})")
    # ---- NF3 tier
    if kept == "b12x_nf3":
        nf3 = "b12x_nf3"
    elif nf3_flag == "fast":
        if triton_problem is None:
            nf3 = "triton"
        else:
            nf3 = "ref"
            notes.append(f"Triton kernels unavailable ({triton_problem}): reference NF3 tier")
    else:
        nf3 = "ref"
    if kept == "b12x" and kept_format == MXFP4:
        notes.append("MXFP4 kept tier through b12x")
    reason = "; ".join(notes) if notes else f"HYBRID_KEPT={kept_flag}, HYBRID_NF3={nf3_flag}"
    return Choice(kept, nf3, reason)


def backend_class(name: str, fmt: str) -> type:
    """The TierBackend class for a backend name and a tier format."""
    from .ref import RefBackend

    if name == "ref":
        return RefBackend
    if name == "triton":
        mod = importlib.import_module(_TRITON_MODULE)
        return mod.NF3TritonBackend if fmt == NF3 else mod.FP4TritonBackend
    if name == "b12x":
        return importlib.import_module(_B12X_MODULE).B12xKeptBackend
    if name == "b12x_nf3":
        return importlib.import_module(_B12X_NF3_MODULE).B12xNF3Backend
    raise BackendError(f"unknown backend {name!r}")

