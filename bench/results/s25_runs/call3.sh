#!/bin/bash
# Session 25, call 3 (bare host, no vLLM; carry bench/scratch/gpu-extra: pytest-xdist):
# mma_dahead's GPU bit test, the small class swept with it at I=512 and I=2048 (16 and 64
# tokens, the built-in tiles first), then the mma GPU tests.
# -> kernels_h200_s25_dahead.txt, bench_moe_h200_s25_dahead_i{512,2048}.json, kernels_h200_s25_mma.txt
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 150 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_expert_kernels.py -k "decoded_ahead" 2>&1 | tail -30 > "$OUT/kernels_h200_s25_dahead.txt"
echo "dahead test took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s25_dahead.txt"
for I in 512 2048; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 150 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes small \
    --sweep-only mma_dahead --shape glm5.2 --inter $I --tokens 16 64 --out-dir "$OUT" --tag h200_s25_dahead_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | sed 's/.BM.: 16, .BN13.: 64, .BK13.: 128, .BN2.: 64, .BK2.: 128, .warps.: 4, .stages.: 3, .ptx.: 1, .ptx4.: 1, .mma.: 1, .mma_kept.: 1, //' | head -20
  echo "sweep I=$I took $((SECONDS-s)) s"
done
rm -f "$OUT"/*.png
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 200 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_mma_tiles.py tests/kernels/test_expert_kernels.py -k "mma" 2>&1 \
  | tail -8 > "$OUT/kernels_h200_s25_mma.txt"
echo "mma tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s25_mma.txt"
