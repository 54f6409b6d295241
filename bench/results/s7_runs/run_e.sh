# committed copy of the script run on the H200 in session 7 (from the repository root)
#!/bin/bash
# session 7, bare H200 host: ncu of the decode GEMVs after the flat loads, 1 and 8 tokens
export PYTHONPATH=$PWD/overlay:$PWD
NCU=/usr/local/cuda/bin/ncu
K='regex:_gemv13_kernel|_gemv2_kernel'
timeout 200 $NCU --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats -k "$K" -c 8 python3 bench/probe_kernels.py --gemv 1 8 > $OUT/ncu_h200_s7_gemv_m1_m8.txt 2>&1; echo "ncu rc=$?"
timeout 200 $NCU --section WarpStateStats --print-details all -k "$K" -c 8 python3 bench/probe_kernels.py --gemv 1 8 > $OUT/ncu_h200_s7_gemv_stalls.txt 2>&1; echo "ncu2 rc=$?"
grep -E "_gemv|Issued Warp|Eligible Warps|Active Warps Per|Achieved Occupancy|Registers Per|Duration|Memory Throughput|Warp Cycles Per Issued|Theoretical Occ" $OUT/ncu_h200_s7_gemv_m1_m8.txt | head -60
grep -iE "_gemv|stall|scoreboard" $OUT/ncu_h200_s7_gemv_stalls.txt | head -40
