"""Hybrid checkpoint maker: bf16 HF MoE checkpoint → NVFP4/MXFP4 + NF3 per expert.

Streams one decoder layer at a time (memory bounded by a layer plus one output shard),
writes into a temporary directory next to the output and renames it into place only
when everything succeeded, so a failure never leaves a half-written checkpoint or
destroys the previous one.
"""
from __future__ import annotations

import json
import logging
import shutil
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import torch
from tqdm.auto import tqdm

from ..bitmap import BIT_MAP_KEY, CODEBOOK_KEY, KEPT_FORMAT_KEY, KEPT_MXFP4, KEPT_NVFP4, MXFP8_MODULES_KEY
from ..formats import fp8, nf3
from . import names as N
from . import saliency, tiers
from .model_config import routed_expert_count, text_config
from .io import HF_QUANT_CONFIG, TOKENIZER_FILES, CheckpointError, CheckpointReader, ShardWriter

logger = logging.getLogger(__name__)

NON_EXPERT_MODES = ("bf16", "fp8", "mxfp8")  # fp8 = rev-2 per-channel, mxfp8 = rev-3
CONFIG_LAYOUTS = ("config", "hf_quant_config")


@dataclass
class MakerOptions:
    kept_per_layer: Optional[int] = None  # None: a quarter of the experts (at least 1)
    kept_format: str = KEPT_NVFP4
    non_expert: str = "bf16"
    all_kept: bool = False
    calib_tokens: Optional[List[List[int]]] = None
    nf3_codebook: Optional[Sequence[float]] = None
    scale_search: int = nf3.DEFAULT_SCALE_SEARCH
    config_layout: str = "config"
    device: str = "cpu"
    force: bool = False
    max_shard_bytes: int = 4 << 30
    progress: bool = True
    gptq_dir: Optional[str] = None  # activation capture directory: GPTQ for the NF3 tier
    gptq_kept: bool = False  # also GPTQ the kept tier (NVFP4 only)
    gptq_min_tokens: int = 128  # experts with fewer captured tokens fall back to round-to-nearest
    # Hessian damping relative to its mean diagonal. An expert sees few tokens (hundreds
    # where dense GPTQ uses ~10^5), so the 0.01 of dense recipes overfits: on the tiny
    # model's held-out tokens 0.1 lowered every layer's NF3 output error, 0.01 did not
    gptq_damp: float = 0.1

    def validate(self):
        if self.kept_format not in (KEPT_NVFP4, KEPT_MXFP4):
            raise ValueError(f"kept format {self.kept_format!r}: use {KEPT_NVFP4} or {KEPT_MXFP4}")
        if self.non_expert not in NON_EXPERT_MODES:
            raise ValueError(f"non-expert mode {self.non_expert!r}: use one of {', '.join(NON_EXPERT_MODES)}")
        if self.config_layout not in CONFIG_LAYOUTS:
            raise ValueError(f"config layout {self.config_layout!r}: use one of {', '.join(CONFIG_LAYOUTS)}")
        if self.all_kept and self.kept_format != KEPT_NVFP4:
            raise ValueError("--all-kept writes a uniform NVFP4 checkpoint; it cannot use an MXFP4 kept format")
        if self.kept_per_layer is not None and self.kept_per_layer < 0:
            raise ValueError("kept experts per layer must be ≥ 0")
        if self.nf3_codebook is not None:
            self.nf3_codebook = nf3.validate_codebook(self.nf3_codebook)
        if self.gptq_dir is not None:
            if self.all_kept:
                raise ValueError("GPTQ quantizes the NF3 tier; it does not apply to --all-kept")
            if self.gptq_kept and self.kept_format != KEPT_NVFP4:
                raise ValueError("GPTQ of the kept tier is implemented for NVFP4 only")
            from ..capture import captured_layers

            if not captured_layers(self.gptq_dir):
                raise ValueError(f"{self.gptq_dir}: no captured activations (layer-XXXXX/chunk-XXXXX.pt)")


@dataclass
class MakerResult:
    out_dir: Path
    bit_map: Dict[int, List[int]]
    mtp_layers: List[int]
    num_tensors: int
    total_bytes: int
    nf3_scale_underflow: float
    saliency: str
    notes: List[str] = field(default_factory=list)
    gptq: Dict[int, dict] = field(default_factory=dict)  # layer → {"gptq": n, "rtn": [experts], "tokens": n}


class _ExpertIndex:
    """Per MoE layer: moe prefix and {expert: {proj: tensor name}} of the source."""

    def __init__(self, reader: CheckpointReader):
        self.layers: Dict[int, dict] = {}
        self.prefix: Dict[int, str] = {}
        self.non_expert: List[str] = []
        for name in reader.names():
            if N.is_fused_expert(name):
                raise CheckpointError(
                    f"{reader.path}: {name} stores all experts of a layer in one tensor; the maker "
                    "needs per-expert tensors (…mlp.experts.E.gate_proj.weight)"
                )
            en = N.parse_expert(name)
            if en is None:
                self.non_expert.append(name)
                continue
            if en.tensor != "weight":
                raise CheckpointError(
                    f"{reader.path}: {name} is not a plain weight — the source must be an unquantized "
                    "(bf16/fp16/fp32) checkpoint"
                )
            self.prefix[en.layer] = en.moe_prefix
            self.layers.setdefault(en.layer, {}).setdefault(en.expert, {})[en.proj] = name
        for layer, experts in self.layers.items():
            n = len(experts)
            if sorted(experts) != list(range(n)):
                missing = sorted(set(range(max(experts) + 1)) - set(experts))
                raise CheckpointError(f"layer {layer}: experts {missing} are missing from the source checkpoint")
            for e, projs in experts.items():
                lost = [p for p in N.PROJS if p not in projs]
                if lost:
                    raise CheckpointError(f"layer {layer} expert {e}: missing {', '.join(lost)} in the source checkpoint")


def _prepare_out(out: Path, src: Path, force: bool) -> Path:
    if out.resolve() == src.resolve():
        raise CheckpointError("the output directory must differ from the source checkpoint")
    if out.exists() and any(out.iterdir()) and not force:
        raise FileExistsError(f"{out} exists and is not empty: pass --force to replace it")
    tmp = out.parent / f".{out.name}.partial"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    return tmp


def _router_row_norms(reader: CheckpointReader, moe_prefix: str) -> Optional[torch.Tensor]:
    name = moe_prefix[: -len(".experts")] + ".gate.weight"
    if name not in reader:
        return None
    return reader.get(name).float().norm(dim=-1)


def _non_expert_tensors(name: str, t: torch.Tensor, mode: str, notes: List[str]):
    if mode == "bf16" or not N.is_linear_weight(name, t.dim()) or not t.is_floating_point():
        return [(name, t)]
    base = name[: -len(".weight")]
    if mode == "fp8":
        q, s = fp8.quantize_rev2(t)
        return [(name, q), (base + fp8.REV2_SCALE_SUFFIX, s)]
    if t.shape[1] % fp8.MX_GROUP:
        notes.append(f"{name}: in-features {t.shape[1]} not a multiple of 32, kept in {t.dtype}")
        return [(name, t)]
    q, s = fp8.quantize_mxfp8(t)
    return [(name, q), (base + fp8.REV3_SCALE_SUFFIX, s)]


def _quant_config(opts: MakerOptions, exclude: List[str], bit_map: Dict[int, List[int]],
                  mxfp8_modules: List[str]) -> dict:
    qc = {
        "quant_method": "modelopt",
        "quant_algo": "NVFP4",
        "group_size": 16,
        "kv_cache_quant_algo": None,
        # weight-only: vLLM then routes NVFP4 through its W4A16 path (activations stay bf16)
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {"num_bits": 4, "type": "float", "group_size": 16, "dynamic": False},
                "input_activations": None,
            }
        },
        "exclude_modules": exclude,
        "producer": {"name": "nf3-hybrid", "version": _version()},
    }
    if not opts.all_kept:
        qc[BIT_MAP_KEY] = {str(k): v for k, v in sorted(bit_map.items())}
        if opts.kept_format != KEPT_NVFP4:
            qc[KEPT_FORMAT_KEY] = opts.kept_format
        if opts.nf3_codebook is not None and tuple(opts.nf3_codebook) != nf3.CODEBOOK:
            qc[CODEBOOK_KEY] = list(opts.nf3_codebook)
        if mxfp8_modules:
            # which non-expert linears are MXFP8: HYBRID_MXFP8_NATIVE serves exactly these
            qc[MXFP8_MODULES_KEY] = sorted(mxfp8_modules)
    return qc


def _version() -> str:
    from .. import __version__

    return __version__


def make_hybrid_checkpoint(src, out, opts: Optional[MakerOptions] = None) -> MakerResult:
    opts = opts or MakerOptions()
    opts.validate()
    src, out = Path(src), Path(out)
    reader = CheckpointReader(src)
    if reader.quant_config is not None:
        raise CheckpointError(f"{src} is already quantized ({reader.quant_config.get('quant_method', '?')})")
    cfg = reader.config
    n_hidden = text_config(cfg).get("num_hidden_layers")
    if not isinstance(n_hidden, int):
        raise CheckpointError(f"{src}/config.json has no num_hidden_layers")
    index = _ExpertIndex(reader)
    if not index.layers:
        raise CheckpointError(f"{src}: no routed expert tensors (…mlp.experts.E.gate_proj.weight) found")
    expected = routed_expert_count(cfg)
    for layer, experts in sorted(index.layers.items()):
        if expected is not None and len(experts) != expected:
            raise CheckpointError(
                f"layer {layer}: the checkpoint has {len(experts)} experts but config.json says {expected}"
            )
    mtp_layers = sorted(l for l in index.layers if l >= n_hidden)
    calib = None
    if opts.calib_tokens and not opts.all_kept:
        calib = saliency.calib_scores(src, opts.calib_tokens, opts.device)

    tmp = _prepare_out(out, src, opts.force)
    writer = ShardWriter(tmp, opts.max_shard_bytes)
    notes: List[str] = []
    bit_map: Dict[int, List[int]] = {}
    exclude: set = set()
    mxfp8_modules: List[str] = []
    underflow_num = underflow_den = 0
    gptq_report: Dict[int, dict] = {}
    by_layer: Dict[Optional[int], List[str]] = defaultdict(list)
    for name in index.non_expert:
        by_layer[N.layer_of(name)].append(name)
    all_layers = sorted(set(index.layers) | {l for l in by_layer if l is not None})
    try:
        bar = tqdm(total=len(all_layers), desc="quantizing layers", unit="layer", disable=not opts.progress)

        def add_non_expert(name, t):
            for n_, tt in _non_expert_tensors(name, t, opts.non_expert, notes):
                writer.add(n_, tt)
                if opts.non_expert == "mxfp8" and n_.endswith(fp8.REV3_SCALE_SUFFIX):
                    mxfp8_modules.append(n_[: -len(fp8.REV3_SCALE_SUFFIX)])

        for name in sorted(by_layer.get(None, [])):
            add_non_expert(name, reader.get(name))
        if "lm_head.weight" in reader:
            exclude.add("lm_head")
        for layer in all_layers:
            for name in sorted(by_layer.get(layer, [])):
                t = reader.get(name)
                if N.is_linear_weight(name, t.dim()):
                    exclude.add(N.exclude_pattern(name))
                elif N.router_layer(name) is not None:
                    exclude.add(N.router_layer_pattern(name))
                add_non_expert(name, t)
            if layer in index.layers:
                u_num, u_den = _write_moe_layer(reader, writer, index, layer, layer in mtp_layers, opts, calib,
                                                bit_map, gptq_report)
                underflow_num += u_num
                underflow_den += u_den
            bar.update(1)
        bar.close()
        written = writer.finish()
        new_cfg = dict(cfg)
        qc = _quant_config(opts, sorted(exclude), bit_map, mxfp8_modules)
        if opts.config_layout == "config":
            new_cfg["quantization_config"] = qc
        else:
            nested = {k: v for k, v in qc.items() if k not in ("quant_method", "config_groups", "producer")}
            # quant_method (auto-detection) and config_groups (the weight-only marker) stay at
            # the top level, where vLLM looks for them
            doc = {"producer": qc["producer"], "quant_method": "modelopt", "quantization": nested,
                   "config_groups": qc["config_groups"]}
            (tmp / HF_QUANT_CONFIG).write_text(json.dumps(doc, indent=2) + "\n")
        (tmp / "config.json").write_text(json.dumps(new_cfg, indent=2) + "\n")
        for fname in TOKENIZER_FILES:
            if (src / fname).is_file():
                shutil.copy2(src / fname, tmp / fname)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        reader.close()
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    frac = underflow_num / underflow_den if underflow_den else 0.0
    if frac > 0.01:
        notes.append(
            f"{100 * frac:.1f}% of NF3 group scales are e4m3 subnormals (weights with very small "
            "magnitudes lose precision in NF3)"
        )
    for n in notes:
        logger.warning(n)
    return MakerResult(
        out_dir=out,
        bit_map=bit_map,
        mtp_layers=mtp_layers,
        num_tensors=len(written["weight_map"]),
        total_bytes=written["metadata"]["total_size"],
        nf3_scale_underflow=frac,
        saliency="none" if opts.all_kept else ("calib" if calib is not None else "weights"),
        notes=notes,
        gptq=gptq_report,
    )


def _gptq_inputs(opts: MakerOptions, layer: int, is_mtp: bool):
    """(x, topk_ids) captured for this layer, or None (not captured / MTP / no GPTQ)."""
    if opts.gptq_dir is None or is_mtp:
        return None
    from ..capture import captured_layers, load_layer

    if layer not in captured_layers(opts.gptq_dir):
        return None
    x, ids = load_layer(opts.gptq_dir, layer)
    return x.to(opts.device), ids.to(opts.device)


def _write_moe_layer(reader, writer, index: _ExpertIndex, layer: int, is_mtp: bool, opts: MakerOptions, calib, bit_map,
                     gptq_report):
    experts = index.layers[layer]
    prefix = index.prefix[layer]
    n_exp = len(experts)
    dev = opts.device

    def load(e):
        return {p: reader.get(experts[e][p]).to(dev) for p in N.PROJS}

    if opts.all_kept or is_mtp:
        kept = set(range(n_exp))
    else:
        n_kept = opts.kept_per_layer if opts.kept_per_layer is not None else max(1, n_exp // 4)
        if n_kept > n_exp:
            raise ValueError(f"layer {layer}: cannot keep {n_kept} experts, it has only {n_exp}")
        if calib is not None:
            if layer not in calib:
                raise RuntimeError(f"layer {layer}: calibration recorded no routing for this layer")
            scores = calib[layer].tolist()
        else:
            router = _router_row_norms(reader, prefix)
            scores = []
            for e in range(n_exp):
                w = load(e)
                r = float(router[e]) if router is not None else 1.0
                scores.append(saliency.weight_score(r, *(float(w[p].float().norm()) for p in N.PROJS)))
        kept = set(saliency.choose_kept(scores, n_kept))
        bit_map[layer] = [4 if e in kept else 3 for e in range(n_exp)]
    kept_fmt = tiers.NVFP4 if (opts.all_kept or is_mtp or opts.kept_format == KEPT_NVFP4) else tiers.MXFP4
    u_num = u_den = 0
    captured = _gptq_inputs(opts, layer, is_mtp)
    if opts.gptq_dir is not None and not is_mtp:
        gptq_report[layer] = {"gptq": 0, "rtn": [], "tokens": 0 if captured is None else int(captured[0].shape[0]),
                              "captured": captured is not None}
    experts_iter = range(n_exp)
    if captured is not None:
        experts_iter = tqdm(experts_iter, desc=f"GPTQ layer {layer}", unit="expert", leave=False,
                            disable=not opts.progress)
    for e in experts_iter:
        fmt = kept_fmt if e in kept else tiers.NF3
        weights = load(e)
        stored = None
        if captured is not None and (fmt == tiers.NF3 or (opts.gptq_kept and fmt == tiers.NVFP4)):
            mask = (captured[1] == e).any(dim=1)
            if int(mask.sum()) >= opts.gptq_min_tokens:
                from ..gptq import hessian

                xe = captured[0][mask].float()
                wf = {p: w.float() for p, w in weights.items()}
                act = torch.nn.functional.silu(xe @ wf["gate_proj"].t()) * (xe @ wf["up_proj"].t())
                stored = tiers.gptq_expert(wf, fmt, hessian(xe), hessian(act), opts.nf3_codebook, opts.scale_search,
                                           opts.gptq_damp)
                gptq_report[layer]["gptq"] += 1
            else:
                gptq_report[layer]["rtn"].append(e)
        if stored is None:
            stored = tiers.quantize_expert(weights, fmt, opts.nf3_codebook, opts.scale_search)
        for (proj, tname), t in stored.items():
            writer.add(N.expert_name(prefix, e, proj, tname), t)
            if fmt == tiers.NF3 and tname == "weight_scale":
                sub, nonzero = nf3.scale_underflow_counts(t)
                u_num += sub
                u_den += nonzero
    return u_num, u_den


def summarize(result: MakerResult) -> str:
    lines = [f"wrote {result.out_dir} ({result.num_tensors} tensors, {result.total_bytes / 2**20:.1f} MiB)"]
    for layer, bits in sorted(result.bit_map.items()):
        k = sum(1 for b in bits if b == 4)
        lines.append(f"  layer {layer}: {k} kept + {len(bits) - k} NF3")
    for layer in result.mtp_layers:
        lines.append(f"  layer {layer} (MTP): uniform NVFP4")
    lines.append(f"  saliency: {result.saliency}")
    for layer, g in sorted(result.gptq.items()):
        if not g["captured"]:
            lines.append(f"  layer {layer}: no captured activations, round-to-nearest")
        else:
            few = f"; round-to-nearest for {len(g['rtn'])} experts with too few tokens {g['rtn']}" if g["rtn"] else ""
            lines.append(f"  layer {layer}: GPTQ for {g['gptq']} experts from {g['tokens']} captured tokens{few}")
    return "\n".join(lines)
