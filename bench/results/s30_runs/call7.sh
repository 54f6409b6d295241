#!/bin/bash
# Session 30, call 7 (bare host, no vLLM; carry bench/scratch/gpu-extra): the serial-tier rule
# (triton_tiers.SERIAL_TIERS_FROM_INTER, from calls 5-6) — its GPU tests (two streams against
# one with and without the rule, the GLM-5.2 shapes, CUDA-graph replay), then the hybrid layer
# at I=2048 with the built-in choice (auto) against the tiers always concurrent, two passes.
# -> kernels_h200_s30_serial.txt, tiers2_h200_s30.txt, s30_call7.tgz (renamed _h100_ here: bench_moe_h200_s30_rule_{auto,conc}{1,2}_i2048.json)
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 150 python3 -m pytest -q -p xdist -n 4 tests/kernels/test_expert_kernels.py \
  -k "two_streams or large_class or glm5_shapes or cuda_graph or tokens_beyond" 2>&1 | grep -v "Warning\|warn" \
  | tail -15 > "$OUT/kernels_h200_s30_serial.txt"
echo "tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s30_serial.txt"
for r in 1 2; do for t in auto concurrent; do
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 -m nf3_hybrid bench --ours-only --tiers $t --shape glm5.2 --inter 2048 \
    --tokens 1024 2048 3072 4096 --out-dir "$OUT" --tag h200_s30_rule_${t:0:4}${r}_i2048 2>&1 | grep "^glm5.2" | cut -c1-60
done; done 2>&1 | tee "$OUT/tiers2_h200_s30.txt"
rm -f "$OUT"/*.png; (cd "$OUT" && tar czf s30_call7.tgz *.json && rm -f *.json)
