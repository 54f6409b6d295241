"""Non-expert fp8 weights of hybrid checkpoints, dequantized while vLLM loads them.

Hybrid checkpoints may store the non-expert linears (attention, shared experts, dense
MLPs) as fp8 rev-2 (``weight`` e4m3 + bf16 ``weight_scale_fp8`` per output channel) or
MXFP8 rev-3 (``weight`` e4m3 + uint8 e8m0 ``weight_scale`` per 32). Those modules are
in the checkpoint's exclude list, so vLLM builds them unquantized; this wrapper around
``DefaultModelLoader.get_all_weights`` (used by the default safetensors loader and by
``--load-format fastsafetensors`` alike) pairs each e4m3 weight with its scale and
yields the model-dtype weight instead. Expert tensors pass through untouched.

It only engages for models built with the hybrid MoE method. fastsafetensors yields
CUDA tensors: only a weight or scale waiting for its partner is staged on the CPU.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, Iterator, Tuple

import torch
from .log import get_logger

from ..checkpoint.names import parse_expert
from ..formats import fp8

logger = get_logger(__name__)

REV2, MXFP8 = "rev2", "mxfp8"


class NonExpertWeightError(ValueError):
    """An fp8 non-expert tensor that cannot be dequantized."""


def _stage(t: torch.Tensor) -> torch.Tensor:
    return t.cpu() if t.is_cuda else t


def _dequant(weight, kind, scale, dtype):
    dev = weight.device if weight.is_cuda else scale.device
    w, s = weight.to(dev), scale.to(dev)
    if kind == REV2:
        return fp8.dequantize_rev2(w, s, dtype)
    return fp8.dequantize_mxfp8(w, s, dtype)


def dequantize_non_experts(weights: Iterable[Tuple[str, torch.Tensor]], dtype=torch.bfloat16,
                           stats: Dict[str, int] = None,
                           keep_mxfp8: FrozenSet[str] = frozenset()) -> Iterator[Tuple[str, torch.Tensor]]:
    """``keep_mxfp8``: modules served as MXFP8 (HYBRID_MXFP8_NATIVE): their weight and
    scale pass through as stored."""
    stats = stats if stats is not None else {}
    waiting_w: Dict[str, torch.Tensor] = {}
    waiting_s: Dict[str, Tuple[str, torch.Tensor]] = {}
    for name, t in weights:
        if parse_expert(name) is not None or (keep_mxfp8 and name.rsplit(".", 1)[0] in keep_mxfp8):
            yield name, t
            continue
        if name.endswith(fp8.REV2_SCALE_SUFFIX):
            base, kind = name[: -len(fp8.REV2_SCALE_SUFFIX)], REV2
        elif name.endswith(fp8.REV3_SCALE_SUFFIX) and t.dtype == torch.uint8 and t.dim() == 2:
            base, kind = name[: -len(fp8.REV3_SCALE_SUFFIX)], MXFP8
        elif name.endswith(".weight") and t.dtype == torch.float8_e4m3fn:
            base = name[: -len(".weight")]
            s = waiting_s.pop(base, None)
            if s is None:
                waiting_w[base] = _stage(t)
            else:
                stats[s[0]] = stats.get(s[0], 0) + 1
                yield name, _dequant(t, s[0], s[1], dtype)
            continue
        else:
            yield name, t
            continue
        w = waiting_w.pop(base, None)
        if w is None:
            waiting_s[base] = (kind, _stage(t))
        else:
            stats[kind] = stats.get(kind, 0) + 1
            yield base + ".weight", _dequant(w, kind, t, dtype)
    if waiting_w:
        names = sorted(waiting_w)
        raise NonExpertWeightError(
            f"{len(names)} float8 non-expert weights have no weight_scale_fp8 (rev-2) or uint8 "
            f"weight_scale (MXFP8 rev-3) in the checkpoint: {', '.join(n + '.weight' for n in names[:6])}"
        )
    for base, (kind, s) in waiting_s.items():
        if kind == REV2:
            raise NonExpertWeightError(f"{base}.weight_scale_fp8 has no float8 {base}.weight in the checkpoint")
        # a uint8 weight_scale that never met an e4m3 weight is not an MXFP8 pair: hand it on
        yield base + fp8.REV3_SCALE_SUFFIX, s


def _hybrid_method(model: torch.nn.Module):
    """The model's first hybrid MoE method (None: not a hybrid model)."""
    from .moe_method import HybridNvFp4FusedMoE

    return next((m.quant_method for m in model.modules()
                 if isinstance(getattr(m, "quant_method", None), HybridNvFp4FusedMoE)), None)


def patch_default_loader():
    from vllm.model_executor.model_loader.default_loader import DefaultModelLoader

    original = DefaultModelLoader.get_all_weights
    if getattr(original, "_nf3_hybrid", False):
        return

    def get_all_weights(self, model_config, model):
        from .config import native_mxfp8_modules

        weights = original(self, model_config, model)
        method = _hybrid_method(model)
        if method is None:
            return weights
        keep = frozenset(native_mxfp8_modules(method.spec))
        return _logged(dequantize_non_experts(weights, model_config.dtype, stats := {}, keep), stats)

    get_all_weights._nf3_hybrid = True
    get_all_weights.__wrapped__ = original
    DefaultModelLoader.get_all_weights = get_all_weights


def _logged(gen, stats):
    yield from gen
    if stats:
        logger.info("nf3-hybrid: dequantized non-expert weights on load: %s",
                    ", ".join(f"{n} {k}" for k, n in sorted(stats.items())))
