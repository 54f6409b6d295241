"""``nf3-hybrid``: make, inspect and verify hybrid checkpoints (later: bench, doctor)."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

logger = logging.getLogger("nf3_hybrid")


def _cmd_tiny(args):
    from .checkpoint.tiny import TinySpec, make_tiny_model

    spec = TinySpec(
        hidden_size=args.hidden,
        moe_intermediate_size=args.moe_intermediate,
        num_hidden_layers=args.layers,
        n_routed_experts=args.experts,
        num_experts_per_tok=args.top_k,
        mtp=not args.no_mtp,
        seed=args.seed,
    )
    out = make_tiny_model(args.out, spec, force=args.force)
    print(f"wrote tiny bf16 model to {out}")
    return 0


def _parse_codebook(text):
    if text is None:
        return None
    return [float(v) for v in text.split(",")]


def _cmd_quantize(args):
    from .checkpoint.maker import MakerOptions, make_hybrid_checkpoint, summarize
    from .checkpoint.saliency import load_calib_tokens

    opts = MakerOptions(
        kept_per_layer=args.kept,
        kept_format=args.kept_format,
        non_expert=args.non_expert,
        all_kept=args.all_kept,
        calib_tokens=load_calib_tokens(args.calib) if args.calib else None,
        nf3_codebook=_parse_codebook(args.codebook),
        scale_search=args.scale_search,
        config_layout=args.config_layout,
        device=args.device,
        force=args.force,
        max_shard_bytes=int(args.shard_gib * (1 << 30)),
        gptq_dir=args.gptq,
        gptq_kept=args.gptq_kept,
        gptq_min_tokens=args.gptq_min_tokens,
        gptq_damp=args.gptq_damp,
    )
    print(summarize(make_hybrid_checkpoint(args.src, args.out, opts)))
    return 0


def _cmd_inspect(args):
    from .checkpoint.io import CheckpointReader
    from .checkpoint.layout import describe, read_layout

    with CheckpointReader(args.checkpoint) as reader:
        print("\n".join(describe(read_layout(reader))))
    return 0


def _cmd_capture(args):
    from .capture import capture_hf
    from .checkpoint.saliency import load_calib_tokens
    from .checkpoint.tiny import sample_token_ids

    if args.tokens:
        seqs = load_calib_tokens(args.tokens)
    else:
        seqs = sample_token_ids(args.source, n_seqs=args.seqs, seq_len=args.seq_len, seed=args.seed)
    got = capture_hf(args.source, seqs, args.out, max_tokens=args.max_tokens)
    for layer, n in sorted(got.items()):
        print(f"layer {layer}: {n} tokens captured")
    print(f"wrote {args.out}")
    return 0


def _cmd_verify(args):
    from .checkpoint.reference import (expert_output_errors, format_comparison, format_report, plot_weight_errors,
                                       quality_report)
    from .checkpoint.tiny import sample_token_ids

    tokens = sample_token_ids(args.source, n_seqs=args.seqs, seq_len=args.seq_len)
    rep = quality_report(args.source, args.hybrid, tokens)
    doc = rep.as_dict()
    if args.baseline:
        base = quality_report(args.source, args.baseline, tokens)
        out_a = expert_output_errors(args.source, args.baseline, args.holdout) if args.holdout else []
        out_b = expert_output_errors(args.source, args.hybrid, args.holdout) if args.holdout else []
        print(format_comparison(base, rep, out_a, out_b, args.baseline_name, args.name))
        doc = {"baseline": base.as_dict(), "candidate": rep.as_dict(),
               "holdout_output_error": {"baseline": [r.__dict__ for r in out_a],
                                        "candidate": [r.__dict__ for r in out_b]}}
    else:
        print(format_report(rep))
        if args.holdout:
            rows = expert_output_errors(args.source, args.hybrid, args.holdout)
            doc["holdout_output_error"] = [r.__dict__ for r in rows]
            for r in rows:
                print(f"held-out output error, layer {r.layer} {r.tier}: {r.rel_error:.4f} ({r.tokens} routed tokens)")
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.json}")
    if args.plot:
        plot_weight_errors(rep.weight_rows, args.plot)
        print(f"wrote {args.plot}")
    return 0


def _cmd_doctor(args):
    from .doctor import main as doctor_main

    return doctor_main(spawn_check=not args.no_spawn)


def _cmd_bench(args):
    from .bench import main as bench_main

    return bench_main(args)


def _cmd_demo(args):
    from .demo import run_demo

    return run_demo(Path(args.build_dir), force=args.force)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nf3-hybrid", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="cmd", required=True)

    t = sub.add_parser("tiny", help="write a tiny random GLM-4.5-style MoE model (bf16) with its tokenizer")
    t.add_argument("out")
    t.add_argument("--hidden", type=int, default=256)
    t.add_argument("--moe-intermediate", type=int, default=256)
    t.add_argument("--layers", type=int, default=4, help="decoder layers (the first is dense)")
    t.add_argument("--experts", type=int, default=32)
    t.add_argument("--top-k", type=int, default=4)
    t.add_argument("--no-mtp", action="store_true", help="do not write the MTP layer")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--force", action="store_true", help="replace a non-empty output directory")
    t.set_defaults(func=_cmd_tiny)

    q = sub.add_parser("quantize", help="make a hybrid (or --all-kept uniform NVFP4) checkpoint from a bf16 one")
    q.add_argument("src", help="Hugging Face bf16 MoE checkpoint directory")
    q.add_argument("out", help="output directory")
    q.add_argument("--kept", type=int, default=None, help="experts kept 4-bit per layer (default: a quarter)")
    q.add_argument("--kept-format", default="nvfp4", choices=["nvfp4", "mxfp4_e8m0k32"])
    q.add_argument("--non-expert", default="bf16", choices=["bf16", "fp8", "mxfp8"],
                   help="non-expert linears: bf16, fp8 rev-2 (per-channel) or MXFP8 rev-3")
    q.add_argument("--all-kept", action="store_true", help="uniform NVFP4 ModelOpt checkpoint (no bit map)")
    q.add_argument("--calib", help="token ids (.json list(s) or text lines) for calibration-based saliency")
    q.add_argument("--codebook", help="8 comma-separated NF3 levels (default: the standard NF3 codebook)")
    q.add_argument("--scale-search", type=int, default=8, help="e4m3 scales tried per NF3 group (1 = absmax)")
    q.add_argument("--config-layout", default="config", choices=["config", "hf_quant_config"],
                   help="quantization config in config.json or nested in hf_quant_config.json")
    q.add_argument("--device", default="cpu", help="torch device for quantization (e.g. cuda)")
    q.add_argument("--shard-gib", type=float, default=4.0, help="output shard size")
    q.add_argument("--force", action="store_true", help="replace a non-empty output directory")
    q.add_argument("--gptq", metavar="DIR", help="activation capture directory: quantize the NF3 tier with GPTQ")
    q.add_argument("--gptq-kept", action="store_true", help="also GPTQ the kept tier (NVFP4)")
    q.add_argument("--gptq-min-tokens", type=int, default=128,
                   help="experts with fewer captured tokens use round-to-nearest (reported)")
    q.add_argument("--gptq-damp", type=float, default=0.1, help="Hessian damping relative to its mean diagonal")
    q.set_defaults(func=_cmd_quantize)

    c = sub.add_parser("capture", help="capture MoE-layer inputs and routing for GPTQ (HF forward, CPU)")
    c.add_argument("source", help="the bf16 checkpoint")
    c.add_argument("out", help="capture directory")
    c.add_argument("--tokens", help="token ids (.json list(s) or text lines); default: the tiny model's corpus")
    c.add_argument("--seqs", type=int, default=8)
    c.add_argument("--seq-len", type=int, default=64)
    c.add_argument("--seed", type=int, default=7, help="corpus seed when --tokens is not given")
    c.add_argument("--max-tokens", type=int, default=32768, help="tokens kept per layer")
    c.set_defaults(func=_cmd_capture)

    i = sub.add_parser("inspect", help="summarize a (hybrid) checkpoint and check it against its bit map")
    i.add_argument("checkpoint")
    i.set_defaults(func=_cmd_inspect)

    v = sub.add_parser("verify", help="float32 reference: per-tier weight error, KLD / top-1 vs the bf16 source")
    v.add_argument("source", help="the bf16 source checkpoint")
    v.add_argument("hybrid", help="the hybrid checkpoint made from it")
    v.add_argument("--seqs", type=int, default=4)
    v.add_argument("--seq-len", type=int, default=64)
    v.add_argument("--json", help="write the report as JSON here")
    v.add_argument("--plot", help="write a PNG of per-layer error by tier here")
    v.add_argument("--baseline", help="a second hybrid checkpoint (e.g. round-to-nearest) shown side by side")
    v.add_argument("--holdout", metavar="DIR", help="capture directory of held-out tokens: expert output error")
    v.add_argument("--name", default="candidate")
    v.add_argument("--baseline-name", default="baseline")
    v.set_defaults(func=_cmd_verify)

    dr = sub.add_parser("doctor", help="can this environment serve hybrid checkpoints? (exit 1 if not)")
    dr.add_argument("--no-spawn", action="store_true", help="skip the spawned-child hook check")
    dr.set_defaults(func=_cmd_doctor)

    b = sub.add_parser("bench", help="time the hybrid tiers against vLLM's NVFP4 and bf16 MoE (needs a GPU)")
    b.add_argument("--shape", default="all", choices=["all", "glm5.2", "tiny"])
    b.add_argument("--inter", type=int, nargs="*", help="per-rank intermediate sizes (default 2048 1024 512)")
    b.add_argument("--tokens", type=int, nargs="*", help="token counts (default 1 2 4 8 16 64 512 2048 8192)")
    b.add_argument("--out-dir", default="bench/results")
    b.add_argument("--tag", default="h200")
    b.add_argument("--sweep", action="store_true", help="first pick kernel tile configs by timing candidates")
    b.add_argument("--sweep-classes", nargs="*", choices=["gemv", "small", "narrow", "mid", "wide", "large"],
                   help="batch classes --sweep times (default: all)")
    b.add_argument("--sweep-only", metavar="OPTION",
                   help="--sweep times each class's built-in tiles and only the candidates setting this tile option")
    b.add_argument("--tiles", metavar="JSON",
                   help="time the grouped classes at the tiles a --sweep chose (its JSON, key kernel_configs.chosen)")
    b.add_argument("--gemv-tokens", type=int, help="batch sizes up to this take the per-pair decode path "
                   "(default: the built-in threshold)")
    b.add_argument("--chunk-tokens", type=int, help="tokens a pass of the grouped path at most "
                   "(default: the built-in CHUNK_TOKENS; larger batches run in passes)")
    b.add_argument("--tiers", choices=["auto", "concurrent", "serial"], default="auto",
                   help="the grouped path's two tiers: concurrent (the kept tier on a second stream), serial "
                   "(one after the other), or auto (the built-in choice: serial only where that measured faster)")
    b.add_argument("--pair-rows", choices=["fp32", "bf16"], help="dtype of the per-pair output rows the top-k sum "
                   "reads (default bf16, as vLLM's fused MoE keeps them; fp32: exact rows, twice the bytes)")
    b.add_argument("--breakdown", action="store_true", help="only: per-kernel GPU time of the hybrid layer")
    b.add_argument("--report", nargs="+", metavar="JSON",
                   help="only: print the README's table from benchmark JSONs of one device (no GPU needed)")
    b.add_argument("--ours-only", action="store_true",
                   help="time only the hybrid kernels (no vLLM needed: for kernel work on a bare GPU host)")
    b.set_defaults(func=_cmd_bench)

    d = sub.add_parser("demo", help="tiny model → hybrid checkpoint → quality report (→ vLLM when a GPU is usable)")
    d.add_argument("--build-dir", default="build")
    d.add_argument("--force", action="store_true", help="rebuild outputs that already exist")
    d.set_defaults(func=_cmd_demo)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileExistsError, FileNotFoundError) as exc:
        print(f"nf3-hybrid {args.cmd}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
