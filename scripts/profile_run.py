#!/usr/bin/env python3
"""HYBRID_PROFILE on a GPU: serve a hybrid checkpoint through vLLM and feed it enough
prefill-sized calls (> 64 tokens) for the profiler's periodic report (every 256 profiled
layer calls), which lands in vLLM's log. Usage (GPU host, overlay installed):
    HYBRID_PROFILE=1 python3 scripts/profile_run.py CHECKPOINT_DIR [--prompts 100]"""
import argparse
import os

os.environ.setdefault("HYBRID_PROFILE", "1")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--prompts", type=int, default=100)
    ap.add_argument("--tokens", type=int, default=200)
    args = ap.parse_args()
    from vllm import LLM, SamplingParams

    llm = LLM(model=args.checkpoint, max_model_len=512, gpu_memory_utilization=0.2, enforce_eager=False)
    vocab = llm.get_tokenizer().vocab_size
    for i in range(args.prompts):
        ids = [(i * 7919 + j * 104729) % (vocab - 10) + 5 for j in range(args.tokens)]
        llm.generate([{"prompt_token_ids": ids}], SamplingParams(max_tokens=1), use_tqdm=False)
    print(f"profile_run: {args.prompts} prompts of {args.tokens} tokens done")


if __name__ == "__main__":
    main()
