#!/bin/bash
# Session 24, call 4 (bare host, no vLLM): the shifts as multiplies in the decode GEMV's
# blocks only ("gemv", the new default) against none ("alu"), alternating processes, twice,
# at the GEMV's sizes; the stream probe with CTA barriers; then the GPU kernel suite on the
# new default.
# -> bench_moe_h200_s24_{alu,gemv}{3,4}.json, stream_probe_h200_s24_bar.json, kernels_h200_s24.txt
: "${OUT:?set by the device tool}"
for r in 3 4; do for mode in alu gemv; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 120 python3 bench/results/s24_runs/shifts_ab.py $mode --ours-only \
    --shape glm5.2 --inter 512 2048 --tokens 1 2 4 8 16 --out-dir "$OUT" --tag h200_s24_${mode}$r 2>&1 \
    | grep -v Warning | grep -E "^shifts|M=.*hybrid|Error|error" | cut -c1-400 | head -12
  echo "$mode $r took $((SECONDS-s)) s"
done; done
rm -f "$OUT"/*.png
PYTHONPATH=$PWD/overlay:$PWD timeout 100 python3 bench/stream_probe.py "$OUT/stream_probe_h200_s24_bar.json" --no-real \
  --inter 512 --inter 2048 --tokens 16 --only pad16_work60 --only pad16_work60_bar1 --only pad16_work60_bar2 \
  --only pad32_work0 --only pad32_work0_bar2 --only pad32_work0_noahead --only pad32_work0_noahead_bar2 2>&1 \
  | grep -v Warning | grep -E "^I=|Error|error" | cut -c1-300
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 330 python3 -m pytest -q -p xdist -n 4 tests/test_nf3_tiled.py \
  tests/test_nf3_nibble.py tests/kernels/ 2>&1 | tail -25 > "$OUT/kernels_h200_s24.txt"
echo "suite took $((SECONDS-s)) s"; tail -4 "$OUT/kernels_h200_s24.txt"
