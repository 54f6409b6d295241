# committed copy of the script run on the H200 in session 8 (from the repository root;
# bench/scratch/nib/overlay = 'git archive 217e663 overlay' plus the NF3_HACK timing variants)
#!/bin/bash
# session 8, bare H200 host: is the NF3 decode GEMV bound by integer-pipe work? Timing of
# instruction streams with fewer decode instructions (NF3_HACK=1: nibble-layout selectors,
# 3: + one fp16 accumulator per 2 words, 4: per 4 words; the data is the checkpoint layout,
# so the values are wrong: timing only), and ncu pipe utilisation.
export PYTHONPATH=$PWD/bench/scratch/nib/overlay:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
T="--ours-only --shape glm5.2 --inter 512 2048 --tokens 1 8 16 64 --out-dir $OUT"
for h in 0 1 3 4 0b; do
  NF3_HACK=${h%b} timeout 120 python3 -m nf3_hybrid bench $T --tag h200_s8_hack$h 2>&1 | grep -v Warning | tail -14
  echo "== hack $h done"
done
NCU=/usr/local/cuda/bin/ncu
K='regex:_gemv13_kernel|_gemv2_kernel'
for h in 0 4; do
  NF3_HACK=$h timeout 100 $NCU --section ComputeWorkloadAnalysis --section InstructionStats --section SchedulerStats --section WarpStateStats --print-details all -k "$K" -c 4 python3 bench/probe_kernels.py --gemv 8 > $OUT/ncu_h200_s8_hack$h.txt 2>&1; echo "ncu $h rc=$?"
done
