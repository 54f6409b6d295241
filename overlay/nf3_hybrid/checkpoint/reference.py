"""Float32 reference of a hybrid checkpoint, independent of vLLM and of any kernel.

The hybrid checkpoint is dequantized tensor by tensor with the pure-torch formats,
written as an ordinary Hugging Face checkpoint and loaded by HF transformers on CPU.
Every quality number of the project (weight error per tier, logits KLD and top-1
against the bf16 source, later vLLM's agreement) is measured against this model.
"""
from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import torch

from ..bitmap import KEPT, NF3, TIER_NAMES
from ..formats import fp8
from . import names as N
from . import tiers
from .io import TOKENIZER_FILES, CheckpointReader
from .layout import read_layout

logger = logging.getLogger(__name__)


def iter_dequantized(reader: CheckpointReader, dtype=torch.float32):
    """(name, tensor) of the checkpoint in plain HF naming, every weight dequantized."""
    layout = read_layout(reader)
    codebook = layout.spec.nf3_codebook if layout.spec is not None else None
    names = set(reader.names())
    skip = set()
    for name in layout.non_expert_fp8:
        base = name[: -len(".weight")]
        skip |= {base + fp8.REV2_SCALE_SUFFIX, base + fp8.REV3_SCALE_SUFFIX}
    for name in sorted(names):
        if name in skip or N.parse_expert(name) is not None:
            continue
        kind = layout.non_expert_fp8.get(name)
        base = name[: -len(".weight")]
        if kind == "rev2":
            yield name, fp8.dequantize_rev2(reader.get(name), reader.get(base + fp8.REV2_SCALE_SUFFIX), dtype)
        elif kind == "mxfp8":
            yield name, fp8.dequantize_mxfp8(reader.get(name), reader.get(base + fp8.REV3_SCALE_SUFFIX), dtype)
        else:
            t = reader.get(name)
            yield name, t.to(dtype) if t.is_floating_point() else t
    for layer, ll in sorted(layout.layers.items()):
        for e, fmt in sorted(ll.formats.items()):
            for proj in N.PROJS:
                tensors = {
                    t: reader.get(N.expert_name(ll.moe_prefix, e, proj, t))
                    for t in tiers.TENSORS[fmt]
                }
                w = tiers.dequantize_proj(fmt, tensors, codebook, dtype)
                yield N.expert_name(ll.moe_prefix, e, proj, "weight"), w


def write_dequantized(hybrid_dir, out_dir, dtype=torch.float32, force: bool = False) -> Path:
    """An HF checkpoint of the dequantized weights (no quantization_config)."""
    from safetensors.torch import save_file

    hybrid_dir, out = Path(hybrid_dir), Path(out_dir)
    if out.exists() and any(out.iterdir()) and not force:
        raise FileExistsError(f"{out} exists and is not empty: pass --force to replace it")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with CheckpointReader(hybrid_dir) as reader:
        sd = dict(iter_dequantized(reader, dtype))
        cfg = dict(reader.config)
    cfg.pop("quantization_config", None)
    cfg["dtype"] = str(dtype).replace("torch.", "")
    save_file({k: v.contiguous() for k, v in sd.items()}, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    for fname in TOKENIZER_FILES:
        if (hybrid_dir / fname).is_file():
            shutil.copy2(hybrid_dir / fname, out / fname)
    return out


@dataclass
class WeightErrorRow:
    layer: int
    tier: str  # kept | nf3
    fmt: str
    experts: int
    rel_error: float  # ‖Ŵ − W‖ / ‖W‖ over all gate/up/down weights of the tier's experts


def weight_errors(src_dir, hybrid_dir) -> List[WeightErrorRow]:
    """Relative dequantization error per MoE layer and tier, against the bf16 source."""
    rows = []
    with CheckpointReader(src_dir) as src, CheckpointReader(hybrid_dir) as hyb:
        layout = read_layout(hyb)
        codebook = layout.spec.nf3_codebook if layout.spec is not None else None
        for layer, ll in sorted(layout.layers.items()):
            for tier in (KEPT, NF3):
                experts = ll.plan.experts(tier)
                if not experts:
                    continue
                err2 = ref2 = 0.0
                fmt = ll.formats[experts[0]]
                for e in experts:
                    for proj in N.PROJS:
                        w = src.get(N.expert_name(ll.moe_prefix, e, proj, "weight")).float()
                        tensors = {t: hyb.get(N.expert_name(ll.moe_prefix, e, proj, t)) for t in tiers.TENSORS[fmt]}
                        d = tiers.dequantize_proj(fmt, tensors, codebook)
                        err2 += float(((d - w) ** 2).sum())
                        ref2 += float((w**2).sum())
                rows.append(WeightErrorRow(layer, TIER_NAMES[tier], fmt, len(experts), (err2 / max(ref2, 1e-30)) ** 0.5))
    return rows


@dataclass
class OutputErrorRow:
    layer: int
    tier: str
    experts: int  # experts that received held-out tokens
    tokens: int  # routed (token, expert) pairs evaluated
    rel_error: float  # ‖Ŷ − Y‖ / ‖Y‖ of the experts' outputs over those pairs


@torch.no_grad()
def expert_output_errors(src_dir, hybrid_dir, capture_dir) -> List[OutputErrorRow]:
    """Per layer and tier: the experts' output error on captured (held-out) tokens —
    Y from the bf16 source weights, Ŷ from the dequantized hybrid weights, float32."""
    from ..capture import captured_layers, load_layer

    rows = []
    with CheckpointReader(src_dir) as src, CheckpointReader(hybrid_dir) as hyb:
        layout = read_layout(hyb)
        codebook = layout.spec.nf3_codebook if layout.spec is not None else None
        for layer in captured_layers(capture_dir):
            ll = layout.layers.get(layer)
            if ll is None:
                continue
            x, ids = load_layer(capture_dir, layer)
            x = x.float()
            for tier in (KEPT, NF3):
                err2 = ref2 = 0.0
                n_exp = n_tok = 0
                for e in ll.plan.experts(tier):
                    mask = (ids == e).any(dim=1)
                    if not bool(mask.any()):
                        continue
                    xe = x[mask]
                    fmt = ll.formats[e]
                    w = {p: src.get(N.expert_name(ll.moe_prefix, e, p, "weight")).float() for p in N.PROJS}
                    q = {p: tiers.dequantize_proj(fmt, {t: hyb.get(N.expert_name(ll.moe_prefix, e, p, t))
                                                        for t in tiers.TENSORS[fmt]}, codebook) for p in N.PROJS}

                    def mlp(m):
                        return (torch.nn.functional.silu(xe @ m["gate_proj"].t()) * (xe @ m["up_proj"].t())) @ m["down_proj"].t()

                    y, yq = mlp(w), mlp(q)
                    err2 += float(((yq - y) ** 2).sum())
                    ref2 += float((y ** 2).sum())
                    n_exp += 1
                    n_tok += int(mask.sum())
                if n_exp:
                    rows.append(OutputErrorRow(layer, TIER_NAMES[tier], n_exp, n_tok, (err2 / max(ref2, 1e-30)) ** 0.5))
    return rows


def load_hf(model_dir, dtype=torch.float32):
    import transformers
    from transformers import AutoModelForCausalLM

    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # MTP tensors are "unexpected" to HF: expected here
    try:
        return AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype).eval()
    finally:
        transformers.logging.set_verbosity(verbosity)


@torch.no_grad()
def logprobs(model, token_seqs: Sequence[Sequence[int]]) -> torch.Tensor:
    """Teacher-forced next-token log-probs [n_seqs, len, vocab] in float32."""
    x = torch.tensor([list(s) for s in token_seqs])
    return torch.log_softmax(model(x).logits.float(), dim=-1)


@dataclass
class Agreement:
    kld: float  # mean KL(reference ‖ test) per position, nats
    top1: float  # fraction of positions whose argmax agrees
    positions: int

    def as_dict(self):
        return {"kld": self.kld, "top1": self.top1, "positions": self.positions}


def agreement(ref_logprobs: torch.Tensor, test_logprobs: torch.Tensor) -> Agreement:
    r = ref_logprobs.reshape(-1, ref_logprobs.shape[-1]).double()
    t = test_logprobs.reshape(-1, test_logprobs.shape[-1]).double()
    kld = (r.exp() * (r - t)).sum(-1)
    top1 = (r.argmax(-1) == t.argmax(-1)).double()
    return Agreement(float(kld.mean()), float(top1.mean()), r.shape[0])


def topn_agreement(prompt_logprobs, ref_logprobs: torch.Tensor, topn: int = 20) -> dict:
    """vLLM's teacher-forced ``prompt_logprobs`` (per sequence, per position after the
    first: {token id: log-prob}) against reference log-probs [S, L, V]: KL(ref ‖ vLLM)
    summed over vLLM's top-``topn`` tokens, top-1 agreement, largest |Δ log-prob|."""
    import math

    kls, top1, maxdiff, n = [], 0, 0.0, 0
    for s, seq in enumerate(prompt_logprobs):
        for i, pos in enumerate(seq):
            r = ref_logprobs[s, i]
            toks = sorted(pos, key=lambda k: -pos[k])[:topn]
            kl = 0.0
            for k in toks:
                rp = float(r[int(k)])
                kl += math.exp(rp) * (rp - pos[k])
                maxdiff = max(maxdiff, abs(rp - pos[k]))
            kls.append(kl)
            top1 += int(int(toks[0]) == int(r.argmax()))
            n += 1
    return {"kl_top20": sum(kls) / n, "top1": top1 / n, "positions": n, "max_abs_dlogprob": maxdiff}


def model_agreement(ref_dir, test_dir, token_seqs) -> Agreement:
    ref = logprobs(load_hf(ref_dir), token_seqs)
    test = logprobs(load_hf(test_dir), token_seqs)
    return agreement(ref, test)


@dataclass
class QualityReport:
    weight_rows: List[WeightErrorRow]
    hybrid_vs_source: Agreement
    positions: int
    source: str
    hybrid: str

    def as_dict(self):
        return {
            "source": self.source,
            "hybrid": self.hybrid,
            "weight_error": [r.__dict__ for r in self.weight_rows],
            "hybrid_vs_source": self.hybrid_vs_source.as_dict(),
        }


def quality_report(src_dir, hybrid_dir, token_seqs, work_dir: Optional[Path] = None) -> QualityReport:
    """Per-tier weight error + logits agreement of the dequantized hybrid vs the source."""
    import tempfile

    rows = weight_errors(src_dir, hybrid_dir)
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        deq = write_dequantized(hybrid_dir, Path(tmp) / "dequantized")
        agr = model_agreement(src_dir, deq, token_seqs)
    return QualityReport(rows, agr, agr.positions, str(src_dir), str(hybrid_dir))


def format_report(rep: QualityReport) -> str:
    lines = ["layer  tier  format         experts  rel. weight error"]
    for r in rep.weight_rows:
        lines.append(f"{r.layer:>5}  {r.tier:<4}  {r.fmt:<13}  {r.experts:>7}  {r.rel_error:.4f}")
    a = rep.hybrid_vs_source
    lines.append(
        f"dequantized hybrid vs bf16 source over {a.positions} positions (float32, HF transformers): "
        f"KLD {a.kld:.4g} nats, top-1 agreement {100 * a.top1:.1f}%"
    )
    return "\n".join(lines)


def format_comparison(base: QualityReport, cand: QualityReport, out_base, out_cand, base_name="baseline",
                      cand_name="candidate") -> str:
    """Two hybrid checkpoints of one source side by side (e.g. RTN vs GPTQ)."""
    lines = [f"layer  tier  {'weight err ' + base_name:>22}  {'weight err ' + cand_name:>22}  "
             f"{'held-out out err ' + base_name:>28}  {'held-out out err ' + cand_name:>28}"]
    ob = {(r.layer, r.tier): r.rel_error for r in out_base}
    oc = {(r.layer, r.tier): r.rel_error for r in out_cand}
    cand_rows = {(r.layer, r.tier): r for r in cand.weight_rows}
    for r in base.weight_rows:
        c = cand_rows.get((r.layer, r.tier))
        k = (r.layer, r.tier)
        f = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
        lines.append(f"{r.layer:>5}  {r.tier:<4}  {f(r.rel_error):>22}  {f(c.rel_error if c else None):>22}  "
                     f"{f(ob.get(k)):>28}  {f(oc.get(k)):>28}")
    for name, rep in ((base_name, base), (cand_name, cand)):
        a = rep.hybrid_vs_source
        lines.append(f"{name}: vs bf16 source over {a.positions} positions: KLD {a.kld:.4g} nats, "
                     f"top-1 {100 * a.top1:.1f}%")
    return "\n".join(lines)


def plot_weight_errors(rows: List[WeightErrorRow], path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for tier, marker in (("kept", "o"), ("nf3", "s")):
        pts = [(r.layer, r.rel_error) for r in rows if r.tier == tier]
        if pts:
            ax.plot(*zip(*pts), marker=marker, label=f"{tier} ({pts and [r.fmt for r in rows if r.tier == tier][0]})")
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.set_xlabel("MoE layer")
    ax.set_ylabel("relative weight error")
    ax.set_title("dequantization error per layer and tier")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)
