"""What a hybrid checkpoint holds, checked against its own bit map.

Reads only names, shapes and dtypes (plus scale dtypes), so it is cheap on a 750B
checkpoint. Used by ``nf3-hybrid inspect`` and by the reference before dequantizing.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from ..bitmap import KEPT, HybridSpec, LayerPlan, parse_hybrid_spec
from . import names as N
from . import tiers
from .io import CheckpointReader
from .model_config import routed_expert_count, text_config

_DT = {"U8": "uint8", "F8_E4M3": "float8_e4m3fn", "F32": "float32", "BF16": "bfloat16", "F16": "float16"}


class LayoutError(ValueError):
    """A checkpoint whose tensors do not match its hybrid bit map or the format spec."""


def expected_tensors(fmt: str, out_f: int, in_f: int) -> Dict[str, Tuple[Tuple[int, ...], str]]:
    """{tensor name: (shape, dtype)} a projection [out_f, in_f] has in tier format ``fmt``."""
    if fmt == tiers.NVFP4:
        return {
            "weight": ((out_f, in_f // 2), "uint8"),
            "weight_scale": ((out_f, in_f // 16), "float8_e4m3fn"),
            "weight_scale_2": ((), "float32"),
            "input_scale": ((), "float32"),
        }
    if fmt == tiers.MXFP4:
        return {"weight": ((out_f, in_f // 2), "uint8"), "weight_scale": ((out_f, in_f // 32), "uint8")}
    if fmt == tiers.NF3:
        return {"weight_packed": ((out_f, in_f // 8 * 3), "uint8"), "weight_scale": ((out_f, in_f // 32), "float8_e4m3fn")}
    raise ValueError(fmt)


@dataclass
class LayerLayout:
    layer: int
    moe_prefix: str
    plan: LayerPlan
    formats: Dict[int, str]  # expert → tier format
    bytes_by_tier: Dict[int, int] = field(default_factory=dict)
    mtp: bool = False


@dataclass
class CheckpointLayout:
    spec: Optional[HybridSpec]
    hidden_size: int
    moe_intermediate_size: int
    layers: Dict[int, LayerLayout]
    non_expert_fp8: Dict[str, str]  # weight name → "rev2" | "mxfp8"
    total_bytes: int


def read_layout(reader: CheckpointReader) -> CheckpointLayout:
    cfg = text_config(reader.config)
    H = cfg.get("hidden_size")
    I = cfg.get("moe_intermediate_size")
    if not isinstance(H, int) or not isinstance(I, int):
        raise LayoutError(f"{reader.path}/config.json needs hidden_size and moe_intermediate_size")
    n_hidden = cfg.get("num_hidden_layers")
    try:
        spec = parse_hybrid_spec(reader.quant_config, routed_expert_count(reader.config))
    except ValueError as exc:
        raise LayoutError(f"{reader.path}: {exc}") from exc
    found: Dict[int, Dict[int, Dict[str, Dict[str, tuple]]]] = defaultdict(lambda: defaultdict(dict))
    prefixes: Dict[int, str] = {}
    non_expert_fp8: Dict[str, str] = {}
    total = 0
    for name in reader.names():
        shape, dt = reader.shape_dtype(name)
        dt = _DT.get(dt, dt)
        nbytes = _nbytes(shape, dt)
        total += nbytes
        en = N.parse_expert(name)
        if en is None:
            if dt == "float8_e4m3fn" and name.endswith(".weight"):
                base = name[: -len(".weight")]
                if base + ".weight_scale_fp8" in reader:
                    non_expert_fp8[name] = "rev2"
                elif base + ".weight_scale" in reader:
                    non_expert_fp8[name] = "mxfp8"
                else:
                    raise LayoutError(f"{name}: float8 weight without weight_scale_fp8 or weight_scale")
            continue
        prefixes[en.layer] = en.moe_prefix
        found[en.layer][en.expert].setdefault(en.proj, {})[en.tensor] = (shape, dt)
    layers: Dict[int, LayerLayout] = {}
    for layer, experts in sorted(found.items()):
        n_exp = max(experts) + 1
        missing = sorted(set(range(n_exp)) - set(experts))
        if missing:
            raise LayoutError(f"layer {layer}: no tensors for experts {missing}")
        plan = spec.plan_for(layer, n_exp) if spec is not None else LayerPlan.all_kept(layer, n_exp)
        kept_fmt = tiers.MXFP4 if (spec and spec.kept_format_for(layer) != "nvfp4") else tiers.NVFP4
        formats, by_tier = {}, defaultdict(int)
        for e in range(n_exp):
            tier, _ = plan.remap[e]
            fmt = kept_fmt if tier == KEPT else tiers.NF3
            for proj in N.PROJS:
                got = experts[e].get(proj)
                if not got:
                    raise LayoutError(f"layer {layer} expert {e}: {proj} has no tensors")
                out_f, in_f = (H, I) if proj == "down_proj" else (I, H)
                want = expected_tensors(fmt, out_f, in_f)
                for tname, (shape, dt) in want.items():
                    if tname not in got:
                        raise LayoutError(
                            f"layer {layer} expert {e}: {proj}.{tname} is missing (the bit map puts this "
                            f"expert in the {fmt} tier)"
                        )
                    gshape, gdt = got[tname]
                    if tuple(gshape) != shape or gdt != dt:
                        raise LayoutError(
                            f"layer {layer} expert {e}: {proj}.{tname} is {gdt}{list(gshape)}, "
                            f"the {fmt} tier needs {dt}{list(shape)}"
                        )
                    by_tier[tier] += _nbytes(shape, dt)
                extra = sorted(set(got) - set(want))
                if extra:
                    raise LayoutError(
                        f"layer {layer} expert {e}: {proj} has unexpected tensors {extra} for the {fmt} tier"
                    )
            formats[e] = fmt
        layers[layer] = LayerLayout(
            layer, prefixes[layer], plan, formats, dict(by_tier),
            mtp=isinstance(n_hidden, int) and layer >= n_hidden,
        )
    if spec is not None:
        for layer in spec.bit_map:
            if layer not in layers:
                raise LayoutError(f"hybrid_bit_map lists layer {layer} but the checkpoint has no experts there")
    return CheckpointLayout(spec, H, I, layers, non_expert_fp8, total)


def _nbytes(shape, dt: str) -> int:
    n = 1
    for s in shape:
        n *= s
    return n * {"uint8": 1, "float8_e4m3fn": 1, "float32": 4, "bfloat16": 2, "float16": 2}.get(dt, 4)


def describe(layout: CheckpointLayout) -> List[str]:
    lines = []
    if layout.spec is None:
        lines.append("uniform NVFP4 checkpoint (no hybrid_bit_map)")
    else:
        lines.append(f"hybrid checkpoint: kept tier {layout.spec.kept_format}, NF3 tier; "
                     f"{len(layout.spec.bit_map)} layers in the bit map")
    lines.append(f"hidden {layout.hidden_size}, expert intermediate {layout.moe_intermediate_size}")
    for layer, ll in sorted(layout.layers.items()):
        kb = ll.bytes_by_tier.get(0, 0) / 2**20
        nb = ll.bytes_by_tier.get(1, 0) / 2**20
        tag = " (MTP)" if ll.mtp else ""
        lines.append(
            f"  layer {layer}{tag}: {len(ll.plan.kept)} kept ({kb:.2f} MiB) + {len(ll.plan.nf3)} NF3 ({nb:.2f} MiB)"
        )
    if layout.non_expert_fp8:
        kinds = sorted(set(layout.non_expert_fp8.values()))
        lines.append(f"non-expert fp8 weights: {len(layout.non_expert_fp8)} ({', '.join(kinds)})")
    lines.append(f"total {layout.total_bytes / 2**20:.1f} MiB")
    return lines
