"""Both tiers of one layer: tier A (kept) + tier B (NF3) → the routed output.

When every non-empty tier runs on Triton, one routing launch serves both, every routed
pair's output row goes to the workspace (bf16, as vLLM's fused MoE keeps them:
triton_tiers.PAIR_ROWS_DTYPE) and each token's rows are summed in fp32 in slot order
(bit-for-bit reproducible), rounded once to the activation dtype; otherwise each tier adds
its part into a fresh fp32 buffer, rounded once at the end.
"""
from __future__ import annotations

from typing import Dict

import torch

from .base import TierBackend
from .base import MXFP4, NVFP4
from ..kernels import interpret
from .triton_tiers import (GEMV_TOKENS, TritonTier, all_wgmma, check_capacity, class_sizes, gemv_tokens,
                           gemv_variant_tokens, run_chunk, run_decode, stacked_maps)

_compiled = set()


class LayerExecutor:
    def __init__(self, backends: Dict[int, TierBackend], hidden: int):
        self.backends = {t: b for t, b in backends.items() if b.tier.num_experts > 0}
        self.hidden = hidden
        active = [self.backends[t] for t in sorted(self.backends)]
        self.fused = bool(active) and all(isinstance(b, TritonTier) for b in active)
        self.triton = active if self.fused else []
        self.maps = stacked_maps(self.triton) if self.fused else None
        self.kept = next((b for b in active if b.tier.fmt in (NVFP4, MXFP4)), None) if self.fused else None
        self.nf3 = next((b for b in active if b.tier.fmt not in (NVFP4, MXFP4)), None) if self.fused else None
        self.graph_safe = all(b.graph_safe for b in active)

    def gemv_tokens(self) -> int:
        """Up to how many tokens this layer takes the per-pair decode GEMV: GEMV_TOKENS (this
        module's copy, which the benchmark and tests move) as lowered for the layer's
        intermediate size (triton_tiers.gemv_tokens); 0 when not every tier is on Triton."""
        if not self.fused:
            return 0
        return gemv_tokens(self.triton[0].tier.inter, GEMV_TOKENS)

    def warmup(self, num_experts: int, topk: int, dtype=torch.bfloat16):
        """Compile every kernel variant this layer shape uses (the decode GEMV, each grouped
        class above it) now, while weights load — not during serving or CUDA-graph capture.
        Once per process and shape. Not under TRITON_INTERPRET: the interpreter compiles
        nothing, so a warm-up there would only run the layer."""
        if not self.fused or interpret():
            return
        t = self.triton[0]
        key = (self.hidden, t.tier.inter, tuple(b.tier.fmt for b in self.triton), topk, t.ws.device)
        if key in _compiled:
            return
        _compiled.add(key)
        dev = t.ws.device
        firsts = class_sizes(all_wgmma(self.triton))  # the bounds this layer's tiers run on
        up_to = self.gemv_tokens()
        gemv = (c for c in gemv_variant_tokens(t.tier.inter) if c <= up_to)  # the GEMV's variants
        sizes = sorted({1, *gemv, up_to + 1, *(c for c in firsts if c > up_to)})
        for m in sizes:
            if m > t.ws.max_tokens:
                break
            ids = (torch.arange(m * topk, device=dev, dtype=torch.int32) % num_experts).view(m, topk)
            w = torch.full((m, topk), 1.0 / topk, device=dev)
            self.forward(torch.zeros((m, self.hidden), dtype=dtype, device=dev), w, ids)

    def can_mark(self, m: int) -> bool:
        """Whether a call of m tokens records all four profiling marks: the fused path
        does in a single grouped pass only (not the per-pair decode path, nor a batch above
        the scratch's chunk such as vLLM's memory-profiling dummy batch)."""
        return not self.fused or self.gemv_tokens() < m <= self.triton[0].ws.chunk

    def forward(self, x: torch.Tensor, topk_weights: torch.Tensor, topk_ids: torch.Tensor,
                weights_on_input: bool = False, marks=None) -> torch.Tensor:
        """``marks``: four CUDA events (HYBRID_PROFILE) recorded at the start, after
        routing, after the kept tier and after the NF3 tier of a single-pass call."""
        m = x.shape[0]
        if not self.backends:
            return torch.zeros_like(x)
        if self.fused:
            ws = self.triton[0].ws
            check_capacity(ws, m)
            result = torch.empty((m, self.hidden), dtype=x.dtype, device=x.device)
            if m <= self.gemv_tokens():
                run_decode(self.kept, self.nf3, result, x, topk_weights, topk_ids, weights_on_input)
                return result
            single = m <= ws.chunk
            for c0 in range(0, m, ws.chunk):
                c1 = min(m, c0 + ws.chunk)
                run_chunk(self.triton, self.maps, x[c0:c1], topk_weights[c0:c1], topk_ids[c0:c1],
                          weights_on_input, result=result[c0:c1], marks=marks if single else None)
            return result
        out = torch.zeros((m, self.hidden), dtype=torch.float32, device=x.device)
        if marks is not None:
            marks[0].record()
            marks[1].record()
        for t in (0, 1):
            if t in self.backends:
                self.backends[t].run_into(out, x, topk_weights, topk_ids, weights_on_input)
            if marks is not None:
                marks[2 + t].record()
        return out.to(x.dtype)
