#!/bin/bash
# Session 26, call 2 — written, NOT RUN (no device was lent after call 1); for a later session.
# Bare host, no vLLM; carry bench/scratch/gpu-extra (pytest-xdist):
# kconst13 / kconst2 one at a time (call 1: both together 5-8 % faster at I=2048, slower at
# 1-2 tokens at I=512) and clamp (unmasked next-block loads, built after call 1) swept at
# I=512, 1024 and 2048 against the built-in tiles (the GEMV's built-in options by token
# count since fac2853: kconst on from I=2048 and from 4 tokens), then the
# whole GPU kernel suite on this tree (session 25's mma tests were cut by their timeout at
# ~80 %), four xdist workers.
# -> bench_moe_h200_s26_kc{13,2}_i*.json, bench_moe_h200_s26_clamp_i*.json, kernels_h200_s26.txt
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
for I in 512 2048 1024; do for opt in kconst13 kconst2 clamp; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes gemv \
    --sweep-only $opt --shape glm5.2 --inter $I --tokens 1 --out-dir "$OUT" --tag h200_s26_${opt/kconst/kc}_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | sed "s/'BN13': 2, 'BK13': 1024, //; s/'warps': 1, //" | head -20
  echo "sweep $opt I=$I took $((SECONDS-s)) s"
done; done
rm -f "$OUT"/*.png
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout $((560 - SECONDS)) python3 -m pytest -q -p xdist -n 4 tests/kernels 2>&1 \
  | grep -v "Warning\|warn" | tail -40 > "$OUT/kernels_h200_s26.txt"
echo "kernel suite took $((SECONDS-s)) s"; tail -5 "$OUT/kernels_h200_s26.txt"
