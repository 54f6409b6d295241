#!/bin/bash
# Session 20, call 6 (bare host, no vLLM): tile options maxnreg13 / maxnreg2 (register caps
# of the decode GEMVs): their GPU tests, then the decode GEMV swept with the caps against
# its built-in tiles at I=512. -> kernels_h200_s20_maxnreg.txt, bench_moe_h200_s20_maxnreg.json
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
timeout 150 python3 -m pytest -q tests/kernels/test_expert_kernels.py -k "register_caps" 2>&1 | tail -8 > "$OUT/kernels_h200_s20_maxnreg.txt"
tail -2 "$OUT/kernels_h200_s20_maxnreg.txt"
timeout 330 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes gemv --sweep-only maxnreg2 --shape glm5.2 \
  --inter 512 --tokens 1 2 4 8 16 --out-dir "$OUT" --tag h200_s20_maxnreg 2>&1 | grep -v Warning | grep -E "sweep|ours_hybrid" | head -60
