#!/bin/bash
# Session 15, bare H200 host (no vLLM): the grouped kernels' weight loads — NVFP4 words as one
# 16-byte load and scales as one 2-byte load (NF3_EXP_VEC4=1, against the four + two loads
# before: =0), NF3 words as one 8-byte and one 4-byte load (NF3_EXP_PAIRS=1, against three
# 4-byte loads: =0) — timed on the hybrid layer and both whole-layer tiers, then the GPU tests of
# every Gluon kernel with both on.
# -> bench_moe_h200_s15_loads_{base,vec4,pairs}[_i2048].json, kernels_h200_s15_loads.txt
set -u
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for inter in 512 2048; do
  sfx=""; [ $inter = 2048 ] && sfx="_i2048"
  for v in "base 0 0" "vec4 1 0" "pairs 1 1"; do
    set -- $v
    NF3_EXP_VEC4=$2 NF3_EXP_PAIRS=$3 PYTHONPATH=$PWD/overlay timeout 100 python3 -m nf3_hybrid bench --ours-only \
      --shape glm5.2 --inter $inter --tokens 128 512 1024 2048 4096 --out-dir "$OUT" --tag "h200_s15_loads_$1$sfx" 2>&1 |
      grep -v Warning | grep -E "^glm5" | sed "s/^/$1 /" | cut -c1-200
    rm -f "$OUT/bench_moe_h200_s15_loads_$1$sfx.png"
  done
done
NF3_EXP_VEC4=1 NF3_EXP_PAIRS=1 PYTHONPATH=$PWD/overlay:$PWD timeout 240 python3 -m pytest -q tests/kernels \
  -k "wgmma or mma or built_in or two_streams or glm5 or registers_on_gpu or cuda_graph" 2>&1 | tail -15 > "$OUT/kernels_h200_s15_loads.txt"
tail -3 "$OUT/kernels_h200_s15_loads.txt"
