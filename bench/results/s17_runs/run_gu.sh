#!/bin/bash
# Session 17, bare H200 host (no vLLM): tile option wg_gu (gate and up rows in one wgmma
# tile) and the huge class (chunks of up to 4096 tokens in one pass, 128 + 16-slot blocks) —
# first the GPU tests (wg_gu against the two-tile kernel and the reference; the built-in
# tiles' classes and chunks; two streams against one), then the hybrid layer and both tiers
# timed on the new defaults (CHUNK_TOKENS 4096, huge class).
# -> kernels_h200_s17_gu.txt, bench_moe_h200_s17_huge.json
set -u
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=$PWD/overlay:$PWD timeout 250 python3 -m pytest -q tests/kernels/test_expert_kernels.py \
  -k "gate_and_up_rows_in_one_tile or built_in_tiles_on_an_sm90 or two_streams" 2>&1 | tail -15 > "$OUT/kernels_h200_s17_gu.txt"
tail -3 "$OUT/kernels_h200_s17_gu.txt"
PYTHONPATH=$PWD/overlay timeout 200 python3 -m nf3_hybrid bench --ours-only \
  --shape glm5.2 --inter 512 2048 --tokens 2048 3072 4096 8192 --out-dir "$OUT" --tag h200_s17_huge 2>&1 |
  grep -v Warning | grep -E "^glm5" | cut -c1-200
rm -f "$OUT/bench_moe_h200_s17_huge.png"
