#!/bin/bash
# Session 17, bare H200 host, the final code: the GPU tests of tile option wg_gu and of the
# built-in wgmma tiles; the hybrid layer's per-kernel times (torch.profiler) at 1 / 8 / 64 /
# 2048 tokens; ncu of the decode path's four kernels at 1 and 16 tokens on the tiled NF3
# layout (launch, occupancy, warp states, scheduler, memory tables).
# -> kernels_h200_s17_final.txt, kernel_breakdown_h200_s17.json, ncu_h200_s17_gemv_m1_m16.txt
set -u
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
timeout 150 python3 -m pytest -q tests/kernels/test_expert_kernels.py \
  -k "gate_and_up_rows_in_one_tile or built_in_tiles_on_an_sm90 or wgmma_blocks_with_a_tail" 2>&1 | tail -15 > "$OUT/kernels_h200_s17_final.txt"
tail -3 "$OUT/kernels_h200_s17_final.txt"
timeout 100 python3 -m nf3_hybrid bench --ours-only --breakdown --out-dir "$OUT" --tag h200_s17 2>&1 | grep -E "^M=" | cut -c1-300
NCU=/usr/local/cuda/bin/ncu
timeout 250 $NCU --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats \
  --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --section InstructionStats --print-details all \
  -k 'regex:_gemv13_kernel|_gemv2_kernel|_planes_kernel|_pair_sum_kernel' -c 8 \
  python3 bench/probe_kernels.py --gemv 1 16 > "$OUT/ncu_h200_s17_gemv_m1_m16.txt" 2>&1
echo "ncu rc=$?"
grep -E "_kernel|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Memory Throughput|DRAM Throughput|Stall|Warp Cycles Per Issued" \
  "$OUT/ncu_h200_s17_gemv_m1_m16.txt" | head -90
