#!/bin/bash
# Session 20, call 5 (bare host, no vLLM): ncu of the decode path at 16 tokens, where the
# hybrid layer is level with Marlin (session 17's ncu took both probe calls at one token).
# Hybrid layer, GLM-5.2, I=512: the per-pair GEMVs (bench/probe_kernels.py --gemv 16) and
# the grouped path's mma.sync kernels at the same 16 tokens (probe without --gemv: the
# small class), both tiers; ncu's clocks. -> ncu_h200_s20_decode_m16.txt
set -u
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
NCU=/usr/local/cuda/bin/ncu
SECTIONS="--section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section InstructionStats --print-details all"
f="$OUT/ncu_h200_s20_decode_m16.txt"
timeout 200 $NCU $SECTIONS -k 'regex:_gemv13_kernel|_gemv2_kernel' -c 2 python3 bench/probe_kernels.py --gemv 16 > "$f" 2>&1
echo "ncu gemv rc=$?"
timeout 250 $NCU $SECTIONS -k 'regex:mma13_kernel|mma2_kernel' -c 4 python3 bench/probe_kernels.py 16 >> "$f" 2>&1
echo "ncu mma rc=$?"
grep -E "^  [_a-z0-9]+_kernel|Duration|Registers Per|Grid Size|Block Size|Waves Per SM|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|DRAM Throughput|L2 Hit|Executed Ipc A|Warp Cycles Per Issued|Stall Long|Stall Math|Stall Wait|Stall Not Sel|Stall Short|Stall Barrier|Stall MIO|Executed Instructions  " "$f" | head -120
