#!/bin/bash
# Session 22, call 1 (bare host, no vLLM): the mma.sync kernels' GPU tests (the four tile
# option tests now on one helper, and mma_xahead's), then the small class swept with
# mma_xahead at I=512 and I=2048, each twice (the built-in tiles first in each run).
# -> kernels_h200_s22_mma.txt, bench_moe_h200_s22_xahead{1,2}_i{512,2048}.json
: "${OUT:?set by the device tool}"
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 240 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_mma_tiles.py tests/kernels/test_expert_kernels.py -k "mma" 2>&1 \
  | tail -8 > "$OUT/kernels_h200_s22_mma.txt"
echo "tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s22_mma.txt"
for r in 1 2; do for I in 512 2048; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 150 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes small \
    --sweep-only mma_xahead --shape glm5.2 --inter $I --tokens 16 --out-dir "$OUT" --tag h200_s22_xahead${r}_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep" | sed 's/.BM.: 16, .BN13.: 64, .BK13.: 128, .BN2.: 64, .BK2.: 128, .warps.: 4, .stages.: 3, .ptx.: 1, .ptx4.: 1, .mma.: 1, .mma_kept.: 1, //' | head -20
  echo "run $r I=$I took $((SECONDS-s)) s"
done; done
