"""Everything that touches vLLM internals lives in this folder.

``install(modelopt_module)`` is called by the import hook right after vLLM imports
``vllm.model_executor.layers.quantization.modelopt``. It returns None when the patch
is in place, or the one-line reason it was not applied (vLLM stays stock).
"""
from __future__ import annotations

from typing import Optional


def install(modelopt) -> Optional[str]:
    import vllm

    from .. import flags
    from ..versions import SUPPORTED_VLLM

    version = getattr(vllm, "__version__", "?")
    if version not in SUPPORTED_VLLM and not flags.current().allow_untested_vllm:
        return (
            f"vLLM {version} is not a tested version (supported: {', '.join(SUPPORTED_VLLM)}); "
            "the hybrid overlay is not applied — set HYBRID_ALLOW_UNTESTED_VLLM=1 to try anyway"
        )
    # import everything first, then assign: a failure leaves vLLM untouched
    from .compile_cache import patch_compile_factors
    from .config import patch_from_config
    from .moe_method import HybridNvFp4FusedMoE
    from .weight_iter import patch_default_loader

    from vllm.model_executor.model_loader.default_loader import DefaultModelLoader  # noqa: F401

    cfg_cls = modelopt.ModelOptNvFp4Config
    patch_from_config(cfg_cls)
    cfg_cls.FusedMoEMethodCls = HybridNvFp4FusedMoE
    patch_default_loader()
    patch_compile_factors()
    return None
