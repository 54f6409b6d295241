#!/bin/bash
# Written in session 29 after its last device call, NOT RUN; for the next session's first
# device call (an H200 if one is lent). Bare host, no vLLM; carry bench/scratch/gpu-extra
# (pytest-xdist: `pip install --target bench/scratch/gpu-extra pytest-xdist execnet --no-deps`).
# 1. Tile option nf3x4 (the NF3 group block's four words summed in fp16 in one run, built in
#    session 29): its GPU tests (the kernel against the reference and the two-word block, the
#    PTX blocks, the compile test under the host's Triton), then the GEMV class swept with it
#    at I=512 and 2048, twice each, alternating (the built-in tiles first in each sweep), and
#    the accuracy probe with and without it.
# 2. The whole GPU kernel suite on this tree (session 29 ran it on an H100 only).
# -> kernels_h200_s30_nf3x4.txt, s30_call1.tgz (bench_moe_h200_s30_nf3x4{1,2}_i*.json),
#    accuracy_h200_s30_nf3x4.json, kernels_h200_s30.txt
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 150 python3 -m pytest -q -p xdist -n 4 tests/kernels/test_expert_kernels.py \
  tests/kernels/test_ptx_decode.py tests/kernels/test_pdl.py -k "four_word or dot_blocks or rendered" 2>&1 \
  | grep -v "Warning\|warn" | tail -20 > "$OUT/kernels_h200_s30_nf3x4.txt"
echo "tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s30_nf3x4.txt"
for r in 1 2; do for I in 512 2048; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes gemv \
    --sweep-only nf3x4 --shape glm5.2 --inter $I --tokens 1 --out-dir "$OUT" --tag h200_s30_nf3x4${r}_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | sed "s/'BN13': 2, 'BK13': 1024, //; s/'warps': 1, //" | head -8
  echo "sweep $r I=$I took $((SECONDS-s)) s"
done; done
rm -f "$OUT"/*.png
(cd "$OUT" && tar czf s30_call1.tgz bench_moe_*.json && rm -f bench_moe_*.json)
for opt in "" "nf3x4=1"; do
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 bench/accuracy_probe.py --hidden 6144 --inter 512 --experts 64 \
    --kept 16 --tokens 1 3 8 16 ${opt:+--gemv-options $opt} 2>&1 | tail -1
done > "$OUT/accuracy_h200_s30_nf3x4.json"
cat "$OUT/accuracy_h200_s30_nf3x4.json"
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout $((570 - SECONDS)) python3 -m pytest -q -p xdist -n 4 tests/kernels \
  tests/test_nf3_nibble.py tests/test_nf3_tiled.py 2>&1 | grep -v "Warning\|warn" | tail -30 > "$OUT/kernels_h200_s30.txt"
echo "kernel suite took $((SECONDS-s)) s"; tail -4 "$OUT/kernels_h200_s30.txt"
