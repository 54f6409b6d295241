#!/bin/bash
# session 13, bare H200 host: ncu of the wgmma gate/up and down kernels (the SM 9.x defaults)
# at 2048 tokens (GLM-5.2 shape, I=512, hybrid layer: bench/probe_kernels.py) — where the
# large class's time goes -> ncu_h200_s13_wgmma_m2048.txt
export PYTHONPATH=$PWD/overlay:$PWD
NCU=/usr/local/cuda/bin/ncu
timeout 150 $NCU --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section SchedulerStats --section ComputeWorkloadAnalysis --print-details all -k 'regex:wg13_kernel|wg2_kernel' -c 4 \
  python3 bench/probe_kernels.py 2048 > "$OUT/ncu_h200_s13_wgmma_m2048.txt" 2>&1; echo "ncu rc=$?"
grep -E "wg13|wg2|Issued Warp|Eligible Warps|Active Warps Per|Achieved Occupancy|Registers Per|Duration|Warp Cycles Per Issued|Theoretical Occ|Block Limit|Stall|stall|Pipe|Compute \(SM\) Throughput|Memory Throughput" \
  "$OUT/ncu_h200_s13_wgmma_m2048.txt" | head -110
