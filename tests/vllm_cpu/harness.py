"""Real vLLM 0.33 objects on a GPU-less machine: a gloo process group,
``VllmConfig(device_config=cpu)``, MoE layers built by vLLM's own ``FusedMoEFactory``
and loaded through their real weight loaders."""
from __future__ import annotations

import json
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

import torch

MOE_PREFIX = "model.layers.{}.mlp.experts"


@contextmanager
def vllm_cpu(tp_size: int = 1, rank: int = 0, init_file: str = None):
    """set_current_vllm_config(cpu) + gloo world of ``tp_size`` + model-parallel groups."""
    from vllm.config import DeviceConfig, VllmConfig, set_current_vllm_config
    from vllm.distributed import parallel_state as ps

    cfg = VllmConfig(device_config=DeviceConfig(device="cpu"))
    cfg.parallel_config.tensor_parallel_size = tp_size
    own = init_file is None
    init_file = init_file or tempfile.mktemp(prefix="nf3-gloo-")
    with set_current_vllm_config(cfg):
        if not ps.model_parallel_is_initialized():
            ps.init_distributed_environment(world_size=tp_size, rank=rank, local_rank=rank,
                                            distributed_init_method=f"file://{init_file}", backend="gloo")
            ps.initialize_model_parallel(tp_size, 1)
        try:
            yield cfg
        finally:
            if own and os.path.exists(init_file):
                os.unlink(init_file)


def quant_config(ckpt_dir):
    """vLLM's ModelOptNvFp4Config built from the checkpoint, as vLLM builds it."""
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    d = Path(ckpt_dir)
    cfg = json.loads((d / "config.json").read_text())
    qc = cfg.get("quantization_config")
    if qc is None:
        qc = json.loads((d / "hf_quant_config.json").read_text())
    return ModelOptNvFp4Config.from_config(qc)


def build_moe(ckpt_dir, layer: int, qc=None):
    """The routed-experts runner of decoder layer ``layer``, as glm4_moe builds it."""
    from vllm.config import get_current_vllm_config
    from vllm.model_executor.layers.fused_moe.layer import FusedMoEFactory

    # tests build the same layer more than once in one process: forget the previous one
    get_current_vllm_config().compilation_config.static_forward_context.pop(MOE_PREFIX.format(layer), None)
    cfg = json.loads((Path(ckpt_dir) / "config.json").read_text())
    return FusedMoEFactory(
        num_experts=cfg["n_routed_experts"],
        top_k=cfg["num_experts_per_tok"],
        hidden_size=cfg["hidden_size"],
        intermediate_size=cfg["moe_intermediate_size"],
        params_dtype=torch.bfloat16,
        renormalize=True,
        use_grouped_topk=True,
        num_expert_group=cfg["n_group"],
        topk_group=cfg["topk_group"],
        quant_config=qc if qc is not None else quant_config(ckpt_dir),
        prefix=MOE_PREFIX.format(layer),
        scoring_func="sigmoid",
        routed_scaling_factor=cfg["routed_scaling_factor"],
        apply_routed_scale_to_output=True,
    )


def expert_tensors(ckpt_dir, layer: int):
    """(full checkpoint name, tensor) of one layer's routed experts."""
    from safetensors import safe_open

    d = Path(ckpt_dir)
    idx = json.loads((d / "model.safetensors.index.json").read_text())["weight_map"]
    pre = MOE_PREFIX.format(layer) + "."
    for name in sorted(idx):
        if name.startswith(pre):
            with safe_open(str(d / idx[name]), "pt") as f:
                yield name, f.get_tensor(name)


def load_keyword(runner, weights, layer: int):
    """The AutoWeightsLoader path (glm4_moe, qwen3_moe): MoERunner.load_weights with
    names relative to the layer; RoutedExperts calls the loader with keywords."""
    pre = MOE_PREFIX.format(layer) + "."
    return list(runner.load_weights((n[len(pre):], t) for n, t in weights))


def load_positional(runner, weights, layer: int):
    """The hand-written loader path (deepseek_v2 / GLM-5): the model-wide expert
    mapping, then ``weight_loader(param, tensor, name, shard_id=, expert_id=, …)``."""
    from vllm.model_executor.layers.fused_moe.layer import fused_moe_make_expert_params_mapping

    holder = torch.nn.Module()
    holder.experts = runner
    mapping = fused_moe_make_expert_params_mapping(
        holder, "gate_proj", "down_proj", "up_proj", num_experts=runner.moe_config.num_experts)
    layer_pre = MOE_PREFIX.format(layer)[: -len(".experts")] + "."
    params = {layer_pre + n: p for n, p in holder.named_parameters()}
    loaded = []
    for name, t in weights:
        for param_name, weight_name, expert_id, shard_id in mapping:
            if weight_name not in name:
                continue
            mapped = name.replace(weight_name, param_name)
            param = params[mapped]
            ok = param.weight_loader(param, t, mapped, shard_id=shard_id, expert_id=expert_id, return_success=True)
            if ok:
                loaded.append(mapped)
                break
        else:
            raise AssertionError(f"no mapping for {name}")
    return loaded


def finish_loading(runner):
    runner.routed_experts.quant_method.process_weights_after_loading(runner.routed_experts)


def loaded_moe(ckpt_dir, layer: int):
    """Layer ``layer``'s routed experts built, loaded (keyword convention) and processed."""
    runner = build_moe(ckpt_dir, layer)
    load_keyword(runner, expert_tensors(ckpt_dir, layer), layer)
    finish_loading(runner)
    return runner


def apply_routed(runner, x, topk_weights, topk_ids):
    re = runner.routed_experts
    return re.quant_method.apply(re, x, topk_weights, topk_ids, None, None)


def dequantized_experts(ckpt_dir, layer: int):
    """{expert: (w13 [2I, H], w2 [H, I])} in float64 from the float32 reference pipeline."""
    from nf3_hybrid.checkpoint.io import CheckpointReader
    from nf3_hybrid.checkpoint.reference import iter_dequantized

    pre = MOE_PREFIX.format(layer) + "."
    w = {}
    with CheckpointReader(ckpt_dir) as r:
        for name, t in iter_dequantized(r):
            if name.startswith(pre):
                e, proj = name[len(pre):].split(".")[:2]
                w.setdefault(int(e), {})[proj] = t.double()
    return {e: (torch.cat([p["gate_proj"], p["up_proj"]], 0), p["down_proj"]) for e, p in w.items()}


def reference_moe(experts, x, topk_weights, topk_ids, tp_rank=0, tp_size=1):
    """Routed-only MoE output in float64; with tp_size > 1, this rank's partial sum
    (its slice of the intermediate dimension), so the ranks' outputs sum to the full one."""
    xd = x.double()
    out = torch.zeros(x.shape[0], xd.shape[1], dtype=torch.float64)
    for t in range(x.shape[0]):
        for k in range(topk_ids.shape[1]):
            w13, w2 = experts[int(topk_ids[t, k])]
            inter = w2.shape[1]
            sl = slice(tp_rank * inter // tp_size, (tp_rank + 1) * inter // tp_size)
            g = w13[:inter][sl] @ xd[t]
            u = w13[inter:][sl] @ xd[t]
            y = w2[:, sl] @ (torch.nn.functional.silu(g) * u)
            out[t] += float(topk_weights[t, k]) * y
    return out


def random_routing(m, num_experts, top_k, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.stack([torch.randperm(num_experts, generator=g)[:top_k] for _ in range(m)]).to(torch.int32)
    w = torch.rand(m, top_k, generator=g) + 0.1
    return (w / w.sum(1, keepdim=True)).float(), ids


def rel_err(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def tp_worker(rank, tp_size, init_file, ckpt, layer, convention, m, out_dir):
    """One TP rank in a spawned process: build, load, apply, all-reduce; saves results."""
    import torch.distributed as dist

    from nf3_hybrid import hook

    with vllm_cpu(tp_size, rank, init_file):
        runner = build_moe(ckpt, layer)
        weights = expert_tensors(ckpt, layer)
        (load_keyword if convention == "keyword" else load_positional)(runner, weights, layer)
        finish_loading(runner)
        g = torch.Generator().manual_seed(7)
        x = (torch.randn(m, runner.moe_config.hidden_dim, generator=g)).to(torch.bfloat16)
        w, ids = random_routing(m, runner.moe_config.num_experts, runner.moe_config.experts_per_token)
        part = apply_routed(runner, x, w, ids).float()
        full = part.clone()
        dist.all_reduce(full)
        torch.save({"x": x, "w": w, "ids": ids, "part": part, "full": full, "hook": hook.status(),
                    "shapes": {n: tuple(p.shape) for n, p in runner.named_parameters()}},
                   f"{out_dir}/rank{rank}.pt")
