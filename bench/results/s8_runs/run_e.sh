# committed copy of the script run on the H200 in session 8 (from the repository root)
#!/bin/bash
# session 8, bare H200 host: why the grouped tiles decode 4x slower per weight than the GEMV
# (ncu of the mid-class w13 / w2 kernels at 256 tokens), and mid-class tile candidates
export PYTHONPATH=$PWD/overlay:$PWD
NCU=/usr/local/cuda/bin/ncu
K='regex:_w13_kernel|_w2_kernel'
timeout 200 $NCU --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --print-details all -k "$K" -c 2 python3 bench/probe_kernels.py 256 > $OUT/ncu_h200_s8_grouped_m256.txt 2>&1; echo "ncu rc=$?"
grep -E "_w13|_w2|Issued Warp|Eligible Warps|Active Warps Per|Achieved Occupancy|Registers Per|Duration|Memory Throughput|Warp Cycles Per Issued|Theoretical Occ|Block Limit|Stall|stall|Pipe|Shared Memory" $OUT/ncu_h200_s8_grouped_m256.txt | head -120
