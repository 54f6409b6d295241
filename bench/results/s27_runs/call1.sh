#!/bin/bash
# Session 27, call 1 — written, NOT RUN (no device was lent in session 27); for a later session.
# Bare host, no vLLM; carry bench/scratch/gpu-extra (pytest-xdist). Run it before
# s26_runs/call2.sh (which sweeps kconst13 / kconst2 / clamp and runs the whole kernel suite).
# 1. Tile option e2m1x2 (the kept tier's e2m1 words two to a block, built in session 27):
#    its GPU tests (PTX block against the reference and the one-word blocks), its sweep at
#    I=512 and I=2048 against the built-in GEMV tiles, and the accuracy probe with and
#    without it (it rounds differently: 8 fp16 products a half before fp32, not 4).
# -> kernels_h200_s27_e2m1x2.txt, bench_moe_h200_s27_e2m1x2_i*.json, accuracy_h200_s27_e2m1x2.json
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 200 python3 -m pytest -q -p xdist -n 4 tests/kernels/test_expert_kernels.py \
  -k "two_word or k_a_constant" tests/kernels/test_ptx_decode.py 2>&1 | grep -v "Warning\|warn" | tail -20 \
  > "$OUT/kernels_h200_s27_e2m1x2.txt"
echo "tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s27_e2m1x2.txt"
for I in 512 2048; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 90 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes gemv \
    --sweep-only e2m1x2 --shape glm5.2 --inter $I --tokens 1 --out-dir "$OUT" --tag h200_s27_e2m1x2_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | sed "s/'BN13': 2, 'BK13': 1024, //; s/'warps': 1, //" | head -24
  echo "sweep I=$I took $((SECONDS-s)) s"
done
rm -f "$OUT"/*.png
for opt in "" "e2m1x2=1,kconst13=1,kconst2=1"; do
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 bench/accuracy_probe.py --hidden 6144 --inter 512 --experts 64 \
    --kept 16 --tokens 1 3 8 16 ${opt:+--gemv-options $opt} 2>&1 | tail -1
done > "$OUT/accuracy_h200_s27_e2m1x2.json"
cat "$OUT/accuracy_h200_s27_e2m1x2.json"
