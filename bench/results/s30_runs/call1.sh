#!/bin/bash
# Session 30, call 1 (bare host; carry .gpu-bundle/part1 and bench/scratch/gpu-extra; run as
# `bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage.log 2>&1; bash bench/results/s30_runs/call1.sh`).
# Written in session 29 (not run then), trimmed to leave the whole suite to call 2:
# 1. Tile option nf3x4 (the NF3 group block's four words summed in fp16 in one run, built in
#    session 29): its GPU tests (the kernel against the reference and the two-word block, the
#    PTX blocks, the compile test under the host's Triton), then the GEMV class swept with it
#    at I=512 and 2048, twice each, alternating (the built-in tiles first in each sweep), and
#    the accuracy probe with and without it.
# 2. The GEMV's token bounds (session 29 moved them on an H100: I=1024 8 -> 12, I=2048 6 -> 8;
#    I=512 kept at 16), timed on this host: every size on the GEMV against every size on the
#    grouped small class, on today's defaults.
# -> kernels_h200_s30_nf3x4.txt, sweeps_h200_s30.txt, accuracy_h200_s30_nf3x4.json,
#    s30_call1.tgz (bench_moe_h200_s30_nf3x4{1,2}_i*.json, bench_moe_h200_s30_bound_{gemv,small}_i*.json)
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 150 python3 -m pytest -q -p xdist -n 4 tests/kernels/test_expert_kernels.py \
  tests/kernels/test_ptx_decode.py tests/kernels/test_pdl.py -k "four_word or dot_blocks or rendered" 2>&1 \
  | grep -v "Warning\|warn" | tail -20 > "$OUT/kernels_h200_s30_nf3x4.txt"
echo "tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s30_nf3x4.txt"
{
for r in 1 2; do for I in 512 2048; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes gemv \
    --sweep-only nf3x4 --shape glm5.2 --inter $I --tokens 1 --out-dir "$OUT" --tag h200_s30_nf3x4${r}_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | sed "s/'BN13': 2, 'BK13': 1024, //; s/'warps': 1, //" | head -8
  echo "sweep $r I=$I took $((SECONDS-s)) s"
done; done
for I in 512 1024 2048; do
  toks="6 8 10 12 16"; [ $I = 512 ] && toks="12 16 20 24"
  for g in 24 2; do
    s=$SECONDS
    name=$([ $g = 2 ] && echo small || echo gemv)
    PYTHONPATH=$PWD/overlay:$PWD timeout 70 python3 -m nf3_hybrid bench --ours-only --gemv-tokens $g --shape glm5.2 \
      --inter $I --tokens $toks --out-dir "$OUT" --tag h200_s30_bound_${name}_i$I 2>&1 | grep "^| glm5.2" | cut -d'|' -f3-5
    echo "bound $name I=$I took $((SECONDS-s)) s"
  done
done
} 2>&1 | tee "$OUT/sweeps_h200_s30.txt"
rm -f "$OUT"/*.png
(cd "$OUT" && tar czf s30_call1.tgz bench_moe_*.json && rm -f bench_moe_*.json)
for opt in "" "nf3x4=1"; do
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 bench/accuracy_probe.py --hidden 6144 --inter 512 --experts 64 \
    --kept 16 --tokens 1 3 8 16 ${opt:+--gemv-options $opt} 2>&1 | tail -1
done > "$OUT/accuracy_h200_s30_nf3x4.json"
cat "$OUT/accuracy_h200_s30_nf3x4.json"
ls -la "$OUT"
