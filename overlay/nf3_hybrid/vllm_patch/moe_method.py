"""The MoE method vLLM's ModelOpt NVFP4 config builds for every routed-experts layer.

``HybridNvFp4FusedMoE`` is installed as ``ModelOptNvFp4Config.FusedMoEMethodCls``.
Constructing it for a config without a hybrid bit map returns vLLM's own
``ModelOptNvFp4FusedMoE`` untouched, so ordinary NVFP4 checkpoints behave exactly as
on stock vLLM. For a hybrid config it stores each layer's experts in two compact
tiers and runs ``apply`` as tier A (kept) + tier B (NF3), returning the routed-only,
unreduced output: vLLM's runner adds the shared experts, the routed scaling and the
tensor-parallel all-reduce.

It deliberately does not run the stock constructor: that selects a kernel backend for
the full expert count (and raises where none fits), which the hybrid layout never uses.
"""
from __future__ import annotations

from typing import Dict, Optional

import torch
from .log import get_logger
from vllm.model_executor.layers.fused_moe.activation import MoEActivation
from vllm.model_executor.layers.fused_moe.fused_moe_method_base import FusedMoEMethodBase
from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4FusedMoE

from .. import flags as flags_mod
from ..backends.base import MXFP4, NF3, NVFP4, TierWeights
from ..backends.executor import LayerExecutor
from ..backends.select import backend_class, choose, device_info
from ..bitmap import KEPT, NF3 as NF3_TIER, TIER_NAMES, HybridConfigError, LayerPlan, layer_index_from_name
from .config import spec_of
from .expert_loader import ExpertLoader
from .storage import tier_param_specs

logger = get_logger(__name__)

_announced = set()
_PROFILE_TOKENS = 64  # calls with more tokens than this are "prefill-sized"
_profiler = None
_capture = None


def _profiler_instance():
    global _profiler
    if _profiler is None:
        from ..backends.profile import TierProfiler

        _profiler = TierProfiler(logger.info)
    return _profiler


def _capture_instance(f):
    global _capture
    if _capture is None:
        import atexit

        from ..capture import ActivationCapture

        _capture = ActivationCapture(f.act_capture, max_tokens=f.act_capture_tokens, warn=logger.warning)
        atexit.register(_capture.flush)
        logger.info("nf3-hybrid: capturing MoE-layer activations of prefill-sized calls into %s (%d tokens per "
                    "layer)", f.act_capture, f.act_capture_tokens)
    return _capture


def _once(key, msg, *args):
    if key not in _announced:
        _announced.add(key)
        logger.info(msg, *args)


def _capturing() -> bool:
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def _cuda_graphs_on() -> bool:
    from vllm.config import CUDAGraphMode, get_current_vllm_config_or_none

    cfg = get_current_vllm_config_or_none()
    if cfg is None or cfg.device_config is None or str(cfg.device_config.device) == "cpu":
        return False
    return cfg.compilation_config.cudagraph_mode not in (None, CUDAGraphMode.NONE)


class HybridNvFp4FusedMoE(FusedMoEMethodBase):
    supports_pre_processed_weights = False

    def __new__(cls, quant_config=None, moe_config=None, *args, **kwargs):
        if spec_of(quant_config) is None:
            # not a hybrid checkpoint: vLLM's own method, constructed exactly as stock does
            return ModelOptNvFp4FusedMoE(quant_config=quant_config, moe_config=moe_config)
        return super().__new__(cls)

    def __init__(self, quant_config, moe_config):
        super().__init__(moe_config)
        self.quant_config = quant_config
        self.spec = spec_of(quant_config)
        self.plan: Optional[LayerPlan] = None
        self.loader: Optional[ExpertLoader] = None
        self.tiers: Dict[int, TierWeights] = {}
        self.executor: Optional[LayerExecutor] = None
        self.backends: Dict[int, object] = {}
        self._debug_calls = 0
        self._profile = False
        self._capture = None
        mpc = moe_config.moe_parallel_config
        if mpc.use_ep or mpc.enable_eplb:
            raise HybridConfigError(
                "hybrid checkpoints do not support expert parallelism / EPLB yet "
                "(serve with tensor parallelism only)"
            )
        if moe_config.activation != MoEActivation.SILU or not moe_config.is_act_and_mul:
            raise HybridConfigError(
                f"hybrid MoE layers need SiLU-gated experts, this model uses {moe_config.activation.value}"
            )

    # ------------------------------------------------------------ weights
    def create_weights(self, layer, num_experts, hidden_size, intermediate_size_per_partition,
                       params_dtype, **extra_weight_attrs):
        name = layer.layer_name
        idx = layer_index_from_name(name)
        if idx is None:
            raise HybridConfigError(f"{name}: cannot tell the decoder layer index from the layer name")
        plan = self.spec.plan_for(idx, num_experts)
        kept_fmt = MXFP4 if self.spec.kept_format_for(idx) == MXFP4 else NVFP4
        fmt = {KEPT: kept_fmt, NF3_TIER: NF3}
        H, I = hidden_size, intermediate_size_per_partition
        mpc = self.moe.moe_parallel_config
        for tier, need in ((KEPT, 32 if kept_fmt == MXFP4 else 16), (NF3_TIER, 32)):
            if plan.count(tier) and (I % need or H % need):
                raise HybridConfigError(
                    f"{name} (layer {idx}): the {TIER_NAMES[tier]} tier needs hidden size and per-rank "
                    f"intermediate size divisible by {need}; got hidden {H}, intermediate {I} per rank "
                    f"(tensor parallel size {mpc.tp_size})"
                )
        specs, params = {}, {}
        for tier in (KEPT, NF3_TIER):
            specs[tier] = tier_param_specs(fmt[tier], plan.count(tier), H, I)
            params[tier] = {}
        self.loader = ExpertLoader(name, plan, fmt, specs, params, mpc.tp_rank, mpc.tp_size)
        for tier in (KEPT, NF3_TIER):
            for key, spec in specs[tier].items():
                p = torch.nn.Parameter(torch.zeros(spec.shape, dtype=spec.dtype), requires_grad=False)
                p.weight_loader = self.loader
                p.nf3_family, p.nf3_ckpt = key.split(".", 1)
                layer.register_parameter(spec.name, p)
                params[tier][key] = p
        layer.num_experts = num_experts
        layer.params_dtype = params_dtype
        self.plan = plan
        self.fmt = fmt
        self.hidden, self.inter = H, I
        logger.debug("%s: %d %s + %d NF3 experts (tp %d/%d, I=%d per rank)", name, plan.count(KEPT),
                     kept_fmt, plan.count(NF3_TIER), mpc.tp_rank, mpc.tp_size, I)

    def _release_copied(self, layer, backends, debug: bool) -> None:
        """A backend that prepared its own copy of a tier (b12x) leaves that tier's
        checkpoint-layout packed weights and block scales dead: release them (for the
        kept tier of a GLM-5-class model, about a quarter of the experts' memory per GPU).
        The per-expert global scales stay (small). HYBRID_DEBUG keeps everything: its
        reference backend reads these tensors."""
        formats = {fmt for b in backends.values() for fmt in getattr(b, "copies_formats", ())}
        tiers = [t for t in (KEPT, NF3_TIER) if self.fmt[t] in formats and self.plan.count(t)]
        if not tiers:
            return
        if debug:
            _once(("debug-keeps",), "nf3-hybrid: HYBRID_DEBUG keeps the checkpoint-layout expert tensors next to "
                  "the backend's own copy (its reference reads them)")
            return
        freed = 0
        for tier in tiers:
            for spec in tier_param_specs(self.fmt[tier], self.plan.count(tier), self.hidden, self.inter).values():
                if spec.per_tensor:
                    continue
                p = getattr(layer, spec.name)
                freed += p.numel() * p.element_size()
                p.data = torch.empty((0,) + tuple(p.shape[1:]), dtype=p.dtype, device=p.device)
        logger.debug("%s: released %.1f MiB of checkpoint-layout expert tensors (%s) the backend has copied",
                     layer.layer_name, freed / 2**20, ", ".join(TIER_NAMES[t] for t in tiers))

    def _tier_weights(self, layer, tier: int) -> TierWeights:
        fmt = self.fmt[tier]
        pre = "nf3_scale" if fmt == NF3 else "weight_scale"
        packed = "weight_packed" if fmt == NF3 else "weight"
        local_map = torch.tensor(self.plan.local_map(tier), dtype=torch.int32, device=getattr(layer, f"w13_{packed}").device)
        return TierWeights(
            fmt=fmt,
            num_experts=self.plan.count(tier),
            hidden=self.hidden,
            inter=self.inter,
            w13=getattr(layer, f"w13_{packed}"),
            w13_scale=getattr(layer, f"w13_{pre}"),
            w2=getattr(layer, f"w2_{packed}"),
            w2_scale=getattr(layer, f"w2_{pre}"),
            local_map=local_map,
            w13_scale_2=getattr(layer, "w13_weight_scale_2", None) if fmt == NVFP4 else None,
            w2_scale_2=getattr(layer, "w2_weight_scale_2", None) if fmt == NVFP4 else None,
            codebook=self.spec.nf3_codebook if fmt == NF3 else None,
        )

    def process_weights_after_loading(self, layer) -> None:
        self.loader.check_complete()
        differ = self.loader.check_shared_global_scales()
        if differ:
            logger.warning(
                "%s: kept experts %s have different gate/up weight_scale_2; the hybrid kernels use "
                "each half's own scale", layer.layer_name, differ[:8])
        f = flags_mod.current()
        dev = getattr(layer, "w13_weight").device
        choice = choose(f.kept, f.nf3, device_info(dev), self.fmt[KEPT])
        _once(("backends", choice), "nf3-hybrid backends: kept tier %s, NF3 tier %s (%s)",
              choice.kept, choice.nf3, choice.reason)
        if "triton" in (choice.kept, choice.nf3):
            from ..backends.triton_tiers import Workspace

            max_tokens = f.max_tokens or self.moe.max_num_tokens
            ws = Workspace.get(dev)
            if ws.reserve(max_tokens, self.moe.experts_per_token, self.hidden, self.inter,
                          max(self.plan.count(KEPT), self.plan.count(NF3_TIER))):
                logger.info("nf3-hybrid: kernel scratch on %s: %.2f GiB, shared by all hybrid layers "
                            "(up to %d tokens a step, in passes of %d)", dev, ws.nbytes() / 2**30,
                            ws.max_tokens, ws.chunk)
        if f.tier != "both" and choice.kept == "b12x_nf3":
            raise HybridConfigError(f"HYBRID_TIER={f.tier} isolates one tier, but HYBRID_KEPT=b12x_nf3 runs both in "
                                    "one b12x launch; use HYBRID_KEPT=b12x (or triton) to isolate a tier")
        backends = {}
        for tier, name in ((KEPT, choice.kept), (NF3_TIER, choice.nf3)):
            self.tiers[tier] = self._tier_weights(layer, tier)
            if name != "b12x_nf3":
                backends[tier] = backend_class(name, self.tiers[tier].fmt)(self.tiers[tier])
        if choice.kept == "b12x_nf3":  # one b12x launch serves both tiers
            backends[KEPT] = backend_class("b12x_nf3", NF3)(self.tiers[KEPT], self.tiers[NF3_TIER])
        self.backends = backends
        self._release_copied(layer, backends, f.debug)
        if f.tier != "both":
            keep = KEPT if f.tier == "a" else NF3_TIER
            _once(("tier", f.tier), "nf3-hybrid: HYBRID_TIER=%s: only the %s tier runs, the other contributes "
                  "nothing (debugging isolation)", f.tier, TIER_NAMES[keep])
            if self.plan.count(keep) == 0:
                logger.warning("%s: HYBRID_TIER=%s selects the %s tier, which this layer does not have: its "
                               "routed output is zero", layer.layer_name, f.tier, TIER_NAMES[keep])
            backends = {keep: backends[keep]}
        self.executor = LayerExecutor(backends, self.hidden)
        self._debug_calls = f.debug  # reports still to give (HYBRID_DEBUG=N)
        mpc = self.moe.moe_parallel_config
        first_rank = mpc.tp_rank == 0 and mpc.dp_rank == 0
        self._profile = f.profile and first_rank and dev.type == "cuda"
        self._capture = _capture_instance(f) if (f.act_capture and first_rank) else None
        self._layer_name, self._layer_idx = layer.layer_name, self.plan.layer
        self.executor.warmup(self.plan.num_experts, self.moe.experts_per_token, self.moe.in_dtype)
        if not self.executor.graph_safe and _cuda_graphs_on():
            raise HybridConfigError(
                f"{layer.layer_name}: backends kept={choice.kept} nf3={choice.nf3} are for validation and "
                "cannot run inside CUDA graphs; serve with enforce_eager=True (--enforce-eager) or use "
                "HYBRID_KEPT=triton / HYBRID_NF3=fast"
            )

    # ------------------------------------------------------------ forward
    def get_fused_moe_quant_config(self, layer):
        return None  # the hybrid tiers run outside vLLM's modular kernels

    def uses_weight_scale_2_pattern(self) -> bool:
        return True

    @property
    def supports_eplb(self) -> bool:
        return False

    def apply(self, layer, x, topk_weights, topk_ids, shared_experts=None, shared_experts_input=None):
        on_input = bool(getattr(layer, "apply_router_weight_on_input", False))
        if self._debug_calls and not _capturing():
            self._debug_calls -= 1
            self._debug_report(layer, x, topk_weights, topk_ids, on_input)
        big = x.shape[0] > _PROFILE_TOKENS and not _capturing()
        if big and self._capture is not None:
            self._capture.add(self._layer_idx, self._layer_name, x, topk_ids)
        if big and self._profile and self.executor.can_mark(x.shape[0]):
            prof = _profiler_instance()
            out = self.executor.forward(x, topk_weights, topk_ids, on_input, prof.marks(self._layer_name, x.shape[0]))
            prof.tick()
            return out
        return self.executor.forward(x, topk_weights, topk_ids, on_input)

    def _debug_report(self, layer, x, topk_weights, topk_ids, on_input):
        """HYBRID_DEBUG: one line per call (its first N), each tier's output against the reference."""
        from ..backends.ref import RefBackend

        parts = [f"{layer.layer_name}: M={x.shape[0]} |x|={x.float().norm():.4g}"]
        for tier, backend in self.backends.items():
            if self.plan.count(tier) == 0:
                continue
            fast = torch.zeros((x.shape[0], self.hidden), dtype=torch.float32, device=x.device)
            backend.run_into(fast, x, topk_weights, topk_ids, on_input)
            ref = torch.zeros_like(fast)
            RefBackend(self.tiers[tier]).run_into(ref, x, topk_weights, topk_ids, on_input)
            rel = float((fast - ref).norm() / ref.norm().clamp_min(1e-30))
            parts.append(
                f"{TIER_NAMES[tier]} ({self.tiers[tier].fmt}, {backend.name}): |out|={fast.norm():.4g} "
                f"nan={int(fast.isnan().sum())} inf={int(fast.isinf().sum())} rel.err vs ref={rel:.3g}")
        logger.info("nf3-hybrid debug %s", "; ".join(parts))
