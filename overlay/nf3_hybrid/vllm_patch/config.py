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
MAPPED_MXFP8_ATTR = "nf3_hybrid_mxfp8_vllm_names"


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
                                  ("HYBRID_PROFILE", f.profile), ("HYBRID_ACT_CAPTURE", bool(f.act_capture)),
                                  ("HYBRID_MXFP8_NATIVE", f.mxfp8_native)) if on]
    if used and "flags" not in _warned:
        _warned.append("flags")
        logger.warning("nf3-hybrid: %s set, but this checkpoint has no hybrid_bit_map: vLLM runs stock and "
                       "the flag(s) do nothing", ", ".join(used))


def _warn_mxfp8_flag_unused(spec: HybridSpec):
    from .. import flags

    if flags.current().mxfp8_native and not spec.mxfp8_modules and "mxfp8" not in _warned:
        _warned.append("mxfp8")
        logger.warning("nf3-hybrid: HYBRID_MXFP8_NATIVE=1, but this checkpoint lists no MXFP8 non-expert linears "
                       "(hybrid_mxfp8_modules): the flag does nothing")


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
            _warn_mxfp8_flag_unused(spec)
            logger.info(
                "nf3-hybrid: hybrid checkpoint, %d MoE layers in hybrid_bit_map, kept tier %s",
                len(spec.bit_map), spec.kept_format)
        return obj

    from_config._nf3_hybrid = True
    cfg_cls.from_config = classmethod(from_config)
    patch_mxfp8_linears(cfg_cls)


def native_mxfp8_modules(spec: Optional[HybridSpec]) -> tuple:
    """The checkpoint's MXFP8 non-expert modules that are served as MXFP8 (empty unless
    HYBRID_MXFP8_NATIVE is set); everything else fp8 is dequantized on load."""
    from .. import flags

    if spec is None or not flags.current().mxfp8_native:
        return ()
    return spec.mxfp8_modules


def patch_mxfp8_linears(cfg_cls) -> None:
    """HYBRID_MXFP8_NATIVE: the non-expert linears listed in ``hybrid_mxfp8_modules`` get
    vLLM's own ModelOpt MXFP8 linear method (the one its mixed-precision ModelOpt config
    uses) instead of the unquantized method their exclude entry would give them."""
    original = cfg_cls.get_quant_method
    if getattr(original, "_nf3_hybrid", False):
        return

    def get_quant_method(self, layer, prefix):
        modules = native_mxfp8_modules(spec_of(self))
        # module names as vLLM's model names them (a model's hf→vLLM weight mapper may
        # rename; the weight iterator keeps the checkpoint's names)
        modules = getattr(self, MAPPED_MXFP8_ATTR, modules) if modules else modules
        if modules:
            from vllm.model_executor.layers.linear import LinearBase
            from vllm.model_executor.layers.quantization.utils.quant_utils import is_layer_skipped

            if isinstance(layer, LinearBase) and is_layer_skipped(prefix, list(modules), self.packed_modules_mapping):
                return _mxfp8_linear_method(self, prefix, len(modules))
        return original(self, layer, prefix)

    get_quant_method._nf3_hybrid = True
    cfg_cls.get_quant_method = get_quant_method

    original_mapper = cfg_cls.apply_vllm_mapper

    def apply_vllm_mapper(self, hf_to_vllm_mapper):
        original_mapper(self, hf_to_vllm_mapper)
        spec = spec_of(self)
        if spec is not None and spec.mxfp8_modules:
            setattr(self, MAPPED_MXFP8_ATTR, tuple(hf_to_vllm_mapper.apply_list(list(spec.mxfp8_modules))))

    apply_vllm_mapper._nf3_hybrid = True
    cfg_cls.apply_vllm_mapper = apply_vllm_mapper


def _mxfp8_linear_method(nvfp4_config, prefix: str, n_modules: int):
    from vllm.model_executor.layers.quantization.modelopt import ModelOptMxFp8Config, build_linear_method

    mx = getattr(nvfp4_config, "_nf3_mxfp8_config", None)
    if mx is None:
        mx = ModelOptMxFp8Config(is_checkpoint_mxfp8_serialized=True, kv_cache_quant_algo=None, exclude_modules=[])
        mx.packed_modules_mapping = nvfp4_config.packed_modules_mapping
        nvfp4_config._nf3_mxfp8_config = mx
        logger.info("nf3-hybrid: HYBRID_MXFP8_NATIVE: %d non-expert linear modules of the checkpoint are served "
                    "as MXFP8 through vLLM's ModelOpt MXFP8 linear method", n_modules)
    return build_linear_method(mx, "MXFP8", prefix)
