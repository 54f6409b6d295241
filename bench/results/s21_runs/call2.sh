#!/bin/bash
# Session 21, call 2 (bare host, no vLLM): tile option mma_ahead (the mma.sync kernels keep
# two K steps of words in flight). Its GPU tests and the mma kernels' others, then the
# small class swept with it at I=512 and I=2048 (the built-in tiles first and again last).
# -> kernels_h200_s21_ahead.txt, sweep_h200_s21_ahead_i{512,2048}.json (via bench --sweep)
: "${OUT:?set by the device tool}"
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 200 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_mma_tiles.py tests/kernels/test_expert_kernels.py -k "mma or wgmma" 2>&1 | tail -8 > "$OUT/kernels_h200_s21_ahead.txt"
echo "tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s21_ahead.txt"
for I in 512 2048; do
  PYTHONPATH=$PWD/overlay:$PWD timeout 150 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes small \
    --sweep-only mma_ahead --shape glm5.2 --inter $I --tokens 16 --out-dir "$OUT" --tag h200_s21_ahead_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep" | head -20
done
