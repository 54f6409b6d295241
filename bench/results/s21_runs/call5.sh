#!/bin/bash
# Session 21, call 5 (bare host, no vLLM): the small class's mma.sync kernels with fewer
# weight rows a program on fewer warps (mma_bn13 / mma_bn2 / mma_warps). Their GPU tests,
# then the small class swept with them at I=512 and I=2048 (now with 128 rows on eight warps too; the built-in tiles first and,
# as mma_warps=4, again last).
# -> kernels_h200_s21_rows128.txt, bench_moe_h200_s21_rows128_i{512,2048}.json (kernel_configs)
: "${OUT:?set by the device tool}"
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 200 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_mma_tiles.py tests/kernels/test_expert_kernels.py -k "row_tiles and 128 or compile_for_sm90 and 128" 2>&1 \
  | tail -8 > "$OUT/kernels_h200_s21_rows128.txt"
echo "tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s21_rows128.txt"
for I in 512 2048; do
  PYTHONPATH=$PWD/overlay:$PWD timeout 150 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes small \
    --sweep-only mma_warps --shape glm5.2 --inter $I --tokens 16 --out-dir "$OUT" --tag h200_s21_rows128_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep" | sed 's/.BM.: 16, .BN13.: 64, .BK13.: 128, .BN2.: 64, .BK2.: 128, .warps.: 4, .stages.: 3, .ptx.: 1, .ptx4.: 1, .mma.: 1, .mma_kept.: 1, //' | head -20
done
