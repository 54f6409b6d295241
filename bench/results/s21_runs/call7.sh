#!/bin/bash
# Session 21, call 7 (bare host, no vLLM): tile option mma_nf3_maxnreg (the NF3 tier's
# mma.sync kernels under a register cap: more programs an SM). Its GPU tests, then the small
# class swept with caps 80 / 72 / 64 and 128 (above what the kernels use: the built-in
# tiles again) at I=512 and I=2048.
# -> kernels_h200_s21_nf3cap.txt, bench_moe_h200_s21_nf3cap_i{512,2048}.json (kernel_configs)
: "${OUT:?set by the device tool}"
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 150 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_mma_tiles.py tests/kernels/test_expert_kernels.py -k "nf3_register_cap" 2>&1 \
  | tail -8 > "$OUT/kernels_h200_s21_nf3cap.txt"
echo "tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s21_nf3cap.txt"
for I in 512 2048; do
  PYTHONPATH=$PWD/overlay:$PWD timeout 120 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes small \
    --sweep-only mma_nf3_maxnreg --shape glm5.2 --inter $I --tokens 16 --out-dir "$OUT" --tag h200_s21_nf3cap_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep" | sed 's/.BM.: 16, .BN13.: 64, .BK13.: 128, .BN2.: 64, .BK2.: 128, .warps.: 4, .stages.: 3, .ptx.: 1, .ptx4.: 1, .mma.: 1, .mma_kept.: 1, //' | head -20
done
