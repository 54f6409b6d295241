#!/bin/bash
# Session 29, call 4 (bare host, no vLLM; carry bench/scratch/gpu-extra; run as
# `bash bench/results/s29_runs/call4.sh`): the new built-in GEMV options (clamp and e2m1x2 wherever
# K is a constant) through the GPU tests that run the built-in tiles (odd sizes and tails,
# GLM-5.2 shapes, CUDA-graph replay, the tile-option bit tests, the PTX blocks), then the
# GEMV's token bound again on the new options: the hybrid layer with every size on the GEMV
# (--gemv-tokens 24) and every size on the grouped small class (--gemv-tokens 2); then the
# accuracy probe on the built-in GEMV options before (kconst only) and after (kconst, clamp,
# e2m1x2) the change: max relative error against float32 at 1, 3, 8 and 16 tokens (I=512,
# 64 experts of which 16 kept; the options change from 4 tokens there).
# -> kernels_h100_s29_defaults.txt, s29_call4.tgz (bench_moe_h100_s29_bound2_{gemv,small}_i*.json),
#    accuracy_h100_s29_defaults.json
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 300 python3 -m pytest -q -p xdist -n 4 tests/kernels/test_pdl.py \
  tests/kernels/test_ptx_decode.py tests/kernels/test_expert_kernels.py -k "hybrid_layer_matches or sizes_not or glm5 \
  or cuda_graph or decode_gemv or reproducible or bf16_pair or one_tier or custom_codebook or tokens_beyond \
  or gives_way or pdl or ptx or e2m1 or gemv" 2>&1 | grep -v "Warning\|warn" | tail -30 > "$OUT/kernels_h100_s29_defaults.txt"
echo "tests took $((SECONDS-s)) s"; tail -4 "$OUT/kernels_h100_s29_defaults.txt"
for I in 512 1024 2048; do
  toks="6 8 10 12 16"; [ $I = 512 ] && toks="12 16 20 24"
  for g in 24 2; do
    name=$([ $g = 2 ] && echo small || echo gemv)
    PYTHONPATH=$PWD/overlay:$PWD timeout 70 python3 -m nf3_hybrid bench --ours-only --gemv-tokens $g --shape glm5.2 \
      --inter $I --tokens $toks --out-dir "$OUT" --tag h100_s29_bound2_${name}_i$I 2>&1 | grep "^| glm5.2" | cut -d'|' -f3-5
  done
done
rm -f "$OUT"/*.png
(cd "$OUT" && tar czf s29_call4.tgz bench_moe_*.json && rm -f bench_moe_*.json)
for opt in "clamp=0,e2m1x2=0" ""; do
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 bench/accuracy_probe.py --hidden 6144 --inter 512 --experts 64 \
    --kept 16 --tokens 1 3 8 16 ${opt:+--gemv-options $opt} 2>&1 | tail -1
done > "$OUT/accuracy_h100_s29_defaults.json"
cat "$OUT/accuracy_h100_s29_defaults.json"
