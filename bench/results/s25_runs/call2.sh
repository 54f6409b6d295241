#!/bin/bash
# Session 25, call 2 (bare host, no vLLM): ncu (boost clocks, --clock-control none) of the
# stream probe alone, with the real decode, with decode and pad, and of the real layer's
# mma13 kernels, GLM-5.2 I=512 and 2048 at 16 tokens -> ncu_h200_s25_probe_m16.txt
set -u
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD/bench
NCU=/usr/local/cuda/bin/ncu
SECTIONS="--section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section SourceCounters \
  --print-details all --clock-control none"
f="$OUT/ncu_h200_s25_probe_m16.txt"
: > "$f"
for inter in 512 2048; do
  echo "=== I=$inter m=16" >> "$f"
  timeout 200 $NCU $SECTIONS -k 'regex:_stream_kernel|mma13_kernel' -c 5 \
    python3 bench/results/s25_runs/ncu_probe.py $inter 16 >> "$f" 2>&1
  echo "ncu I=$inter rc=$?"
done
grep -E "^=== |^  [_a-z0-9]+_kernel|Duration|Registers Per|Grid Size|Achieved Occupancy|Issue Slots Busy|No Eligible|DRAM Throughput|Pipe Alu Cycles|Pipe Fmaheavy Cycles|Pipe Fma Cycles|Pipe Tensor Cycles|Executed Ipc A|Warp Cycles Per Issued|Stall Long|Stall Math|Stall Wait|Stall Not Sel|Stall Short|Stall Barrier|Stall MIO|Stall Dispatch|Executed Instructions  " "$f" | head -200
