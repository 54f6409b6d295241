#!/bin/bash
# Session 21, call 1 (bare host, no vLLM): the NF3 mma / wgmma kernels' scaled group tables
# (kernels/ptx_decode.py: NF3_TABLE_SCALE_ASM). The GPU kernel suite, then the hybrid layer
# timed with this session's overlay ("new") and with HEAD 491414a's (.s21-base/overlay,
# carried: "base"), alternating, at the token counts the grouped path serves.
# -> kernels_h200_s21.txt, bench_moe_h200_s21_{base,new}{1,2}.json
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 260 python3 -m pytest -q -p xdist -n 4 \
  tests/test_nf3_tiled.py tests/test_nf3_nibble.py tests/kernels/ 2>&1 | tail -25 > "$OUT/kernels_h200_s21.txt"
echo "suite took $((SECONDS-s)) s"; tail -4 "$OUT/kernels_h200_s21.txt"
for i in 1 2; do
  for v in base new; do
    if [ $v = base ]; then ov=$PWD/.s21-base/overlay; else ov=$PWD/overlay; fi
    s=$SECONDS
    PYTHONPATH=$ov:$PWD timeout 140 python3 -m nf3_hybrid bench --ours-only --shape glm5.2 --inter 512 2048 \
      --tokens 16 32 64 512 1024 2048 4096 --out-dir "$OUT" --tag h200_s21_$v$i 2>&1 | grep -v Warning | grep -E "^\| glm5.2|copy" | head -40
    echo "$v$i took $((SECONDS-s)) s"
  done
done
