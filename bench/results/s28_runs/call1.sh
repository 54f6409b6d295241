#!/bin/bash
# Session 28, call 1: session 26's call 2 (kconst13 / kconst2 / clamp swept at I=512, 2048 and
# 1024 against the built-in GEMV tiles; the clamp sweep also times clamp with e2m1x2, session
# 27's option, which call 1 of this session found fastest), a second clamp pass at I=512 and
# 2048 to see the run's drift, then the whole GPU kernel suite on four xdist workers.
# Bare host, no vLLM; carry bench/scratch/gpu-extra (pytest-xdist).
# -> bench_moe_h200_s26_{kc13,kc2,clamp}_i*.json, bench_moe_h200_s28_clamp2_i*.json, kernels_h200_s28.txt
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
one() {  # option inter tag
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes gemv \
    --sweep-only $1 --shape glm5.2 --inter $2 --tokens 1 --out-dir "$OUT" --tag $3 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | sed "s/'BN13': 2, 'BK13': 1024, //; s/'warps': 1, //" | head -20
  echo "sweep $1 I=$2 took $((SECONDS-s)) s"
}
for I in 512 2048 1024; do for opt in clamp kconst13 kconst2; do
  one $opt $I h200_s26_${opt/kconst/kc}_i$I
done; done
for I in 512 2048; do one clamp $I h200_s28_clamp2_i$I; done
rm -f "$OUT"/*.png
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout $((570 - SECONDS)) python3 -m pytest -q -p xdist -n 4 tests/kernels 2>&1 \
  | grep -v "Warning\|warn" | tail -40 > "$OUT/kernels_h200_s28.txt"
echo "kernel suite took $((SECONDS-s)) s"; tail -5 "$OUT/kernels_h200_s28.txt"
