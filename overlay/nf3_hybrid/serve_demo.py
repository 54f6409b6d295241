"""The GPU half of ``make demo``: serve the tiny hybrid checkpoint through vLLM and show
that it agrees with the float32 reference of its dequantized weights.

Uses only vLLM's public API (``vllm.LLM``); the overlay engages through the import hook
like in any other vLLM process.
"""
from __future__ import annotations

import json
import os
from pathlib import Path


def serve_and_compare(src, hybrid, token_seqs, build: Path, topn: int = 20):
    # the demo has touched CUDA in this process already: vLLM's engine must be spawned,
    # not forked (a forked child cannot re-initialise CUDA; seen on the H200)
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    from vllm import LLM, SamplingParams

    from .checkpoint.reference import load_hf, logprobs, topn_agreement, write_dequantized

    # the Triton attention backend runs on every CUDA GPU (FlashAttention builds vary)
    llm = LLM(model=str(hybrid), max_model_len=512, gpu_memory_utilization=0.3,
              attention_config={"backend": "TRITON_ATTN"}, seed=0)
    prompt = "The quiet river"
    out = llm.generate([prompt], SamplingParams(max_tokens=24, temperature=0.0))[0].outputs[0].text
    print(f"[demo] vLLM, hybrid checkpoint: {prompt!r} → {out!r}")
    outs = llm.generate([{"prompt_token_ids": t} for t in token_seqs],
                        SamplingParams(max_tokens=1, prompt_logprobs=topn, temperature=0.0))
    plp = [[{str(k): v.logprob for k, v in pos.items()} for pos in o.prompt_logprobs[1:]] for o in outs]
    ref = logprobs(load_hf(write_dequantized(hybrid, build / "tiny-hybrid-f32", force=True)), token_seqs)
    agr = topn_agreement(plp, ref, topn)
    print(f"[demo] vLLM vs float32 reference of the dequantized checkpoint over {agr['positions']} positions: "
          f"top-1 agreement {100 * agr['top1']:.1f}%, KL over vLLM's top-{topn} {agr['kl_top20']:.2e}")
    (build / "vllm_agreement.json").write_text(json.dumps(agr, indent=2) + "\n")
    return agr
