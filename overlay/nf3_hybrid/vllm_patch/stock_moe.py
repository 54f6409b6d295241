"""vLLM's own MoE layers, built with random weights, for the benchmark's comparisons:
uniform NVFP4 through whatever backend vLLM 0.33's oracle picks on this GPU (Marlin
W4A16 on SM90), and bf16 through its unquantized fused MoE (Triton). Built exactly as a
model builds them — ``FusedMoEFactory`` + ``process_weights_after_loading`` — so the
timed call is the one vLLM makes during serving.
"""
from __future__ import annotations

import itertools
import tempfile
from typing import Callable, Tuple

import torch

_counter = itertools.count()


def init_single_gpu():
    """vLLM config, a one-process distributed world and its workspace manager."""
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import parallel_state as ps
    from vllm.v1.worker.workspace import init_workspace_manager, is_workspace_manager_initialized

    cfg = VllmConfig(device_config=DeviceConfig(device="cuda"))
    ctx = set_current_vllm_config(cfg)
    ctx.__enter__()
    if not ps.model_parallel_is_initialized():
        ps.init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                        distributed_init_method=f"file://{tempfile.mktemp()}", backend="nccl")
        ps.initialize_model_parallel(1, 1)
    if not is_workspace_manager_initialized():
        init_workspace_manager(torch.device("cuda"))
    return cfg


def _nvfp4_config():
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    return ModelOptNvFp4Config.from_config({
        "quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": [],
        "config_groups": {"group_0": {"input_activations": None}},
    })


def fill_random(experts: torch.nn.Module, g: torch.Generator) -> None:
    """Random weights for a benchmark contender, one expert at a time: drawing a whole
    bf16 layer at I=2048 in float32 at once held ~50 GB of transients beside the layer,
    which kept that shape off an 80 GB card. Packed bytes uniform, e4m3 block scales
    around 1 (bits 0x30-0x3f), global scales 1e-3 / 1, real weights N(0, 0.02)."""
    with torch.no_grad():
        for name, p in experts.named_parameters():
            if "scale" in name and p.dtype not in (torch.uint8, torch.float8_e4m3fn):
                p.fill_(1e-3 if "weight_scale_2" in name else 1.0)
                continue
            for part in (p if p.dim() > 1 else (p,)):
                if p.dtype == torch.uint8:
                    part.copy_(torch.randint(0, 256, part.shape, generator=g, device=p.device, dtype=torch.uint8))
                elif p.dtype == torch.float8_e4m3fn:
                    bits = torch.randint(0x30, 0x40, part.shape, generator=g, device=p.device, dtype=torch.int32)
                    part.copy_(bits.to(torch.uint8).view(torch.float8_e4m3fn))
                else:
                    part.copy_(torch.randn(part.shape, generator=g, device=p.device, dtype=torch.float32) * 0.02)


def build(kind: str, num_experts: int, hidden: int, inter: int, topk: int, seed: int = 0) -> Tuple[Callable, str, int]:
    """kind "nvfp4" | "bf16" → (apply(x, topk_weights, topk_ids), backend name, weight bytes per expert)."""
    from vllm.model_executor.layers.fused_moe.layer import FusedMoEFactory

    qc = _nvfp4_config() if kind == "nvfp4" else None
    prefix = f"bench.layers.{next(_counter)}.mlp.experts"
    with torch.device("cuda"):
        runner = FusedMoEFactory(num_experts=num_experts, top_k=topk, hidden_size=hidden, intermediate_size=inter,
                                 params_dtype=torch.bfloat16, quant_config=qc, prefix=prefix)
    re = runner.routed_experts
    fill_random(re, torch.Generator(device="cuda").manual_seed(seed))
    per_expert = sum(p.numel() * p.element_size() for n, p in re.named_parameters()
                     if "input_scale" not in n) // num_experts
    method = re.quant_method
    method.process_weights_after_loading(re)
    backend = str(getattr(method, "nvfp4_backend", None) or getattr(method, "unquantized_backend", None)
                  or type(getattr(method, "moe_kernel", None) and method.moe_kernel.fused_experts).__name__)

    def apply(x, topk_weights, topk_ids):
        return method.apply(re, x, topk_weights, topk_ids, None, None)

    return apply, backend, per_expert
