"""The overlay's part of vLLM's torch.compile cache key.

vLLM 0.33 keys its compile caches (the AOT-compiled model and the inductor artifacts,
under VLLM_CACHE_ROOT) on its own VLLM_* variables and its config. Neither sees the
overlay: two engines of one hybrid checkpoint, one with HYBRID_MXFP8_NATIVE=1 (MXFP8
linears holding ``weight_scale``) and one without (bf16 linears), got one key, and the
second loaded the first one's graph — on the H200 it died in the forward pass with
``KeyError: 'weight_scale'`` (bench/results/e2e_h200_tp1.json, hyb_mxfp8_rev3). Adding
the overlay version and the flags that change the model to ``vllm.envs.compile_factors``
(both caches hash it) gives each setting its own key.
"""
from __future__ import annotations

from .. import __version__, flags

FACTOR = "NF3_HYBRID"


def overlay_factors() -> dict:
    return {"version": __version__, **flags.model_factors(flags.current())}


def patch_compile_factors():
    """Wrap ``compile_factors`` once; callers read it through the module (``envs.compile_factors()``)."""
    import vllm.envs as envs_module

    stock = envs_module.compile_factors
    if getattr(stock, "nf3_hybrid_wrapped", False):
        return

    def compile_factors() -> dict:
        factors = dict(stock())
        factors[FACTOR] = overlay_factors()
        return factors

    compile_factors.nf3_hybrid_wrapped = True
    compile_factors.__doc__ = stock.__doc__
    envs_module.compile_factors = compile_factors
