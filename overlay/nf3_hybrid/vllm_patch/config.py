"""Keep the hybrid keys of the checkpoint's quantization config on vLLM's config object.

vLLM's ``from_config`` keeps only the keys it knows; the wrapped one parses the bit
map, kept format and NF3 codebook (both config layouts) into a ``HybridSpec`` and
stores it on the instance. The spec is plain data, so it travels with the config when
vLLM pickles it into worker processes; workers that rebuild the config from the
checkpoint run this same wrapper (the hook is armed in every process).
"""
from __future__ import annotations

from typing import Optional

from .log import get_logger

from ..bitmap import HybridConfigError, HybridSpec, parse_hybrid_spec

logger = get_logger(__name__)

SPEC_ATTR = "nf3_hybrid_spec"


def spec_of(quant_config) -> Optional[HybridSpec]:
    return getattr(quant_config, SPEC_ATTR, None)


def _check_tp_split(spec: HybridSpec):
    """Fail early, with a message, where vLLM would only assert: the expert
    intermediate size must split evenly across tensor-parallel ranks, in whole
    32-wide NF3 / MXFP4 groups."""
    from vllm.config import get_current_vllm_config_or_none

    cfg = get_current_vllm_config_or_none()
    if cfg is None or cfg.model_config is None:
        return
    text = cfg.model_config.hf_text_config
    inter = getattr(text, "moe_intermediate_size", None)
    tp = cfg.parallel_config.tensor_parallel_size
    if not isinstance(inter, int) or tp <= 1:
        return
    if inter % tp or (inter // tp) % 32:
        raise HybridConfigError(
            f"every hybrid MoE layer: moe_intermediate_size {inter} cannot be split across "
            f"tensor_parallel_size={tp} in whole groups of 32 (per-rank size would be {inter / tp:g})"
        )


_warned = []


def _warn_unused_flags():
    """Flags that only act on hybrid layers are refused, loudly, for other checkpoints."""
    from .. import flags

    f = flags.current()
    used = [name for name, on in (("HYBRID_TIER", f.tier != "both"), ("HYBRID_DEBUG", f.debug),
                                  ("HYBRID_PROFILE", f.profile), ("HYBRID_ACT_CAPTURE", bool(f.act_capture))) if on]
    if used and not _warned:
        _warned.append(True)
        logger.warning("nf3-hybrid: %s set, but this checkpoint has no hybrid_bit_map: vLLM runs stock and "
                       "the flag(s) do nothing", ", ".join(used))


def patch_from_config(cfg_cls) -> None:
    original = cfg_cls.__dict__.get("from_config")
    if getattr(original, "__func__", None) is not None and getattr(original.__func__, "_nf3_hybrid", False):
        return  # already patched
    base = cfg_cls.from_config.__func__  # ModelOptQuantConfigBase.from_config

    def from_config(cls, config):
        obj = base(cls, config)
        spec = parse_hybrid_spec(config)
        setattr(obj, SPEC_ATTR, spec)
        if spec is None:
            _warn_unused_flags()
        else:
            _check_tp_split(spec)
            logger.info(
                "nf3-hybrid: hybrid checkpoint, %d MoE layers in hybrid_bit_map, kept tier %s",
                len(spec.bit_map), spec.kept_format)
        return obj

    from_config._nf3_hybrid = True
    cfg_cls.from_config = classmethod(from_config)
