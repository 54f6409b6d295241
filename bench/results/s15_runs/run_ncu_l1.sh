#!/bin/bash
# Session 15, bare H200 host: where the wgmma kernels' L1 wavefronts go, on the committed code
# (NVFP4 words by 16-byte loads): ncu's memory tables (wavefronts per instruction kind — global
# loads, cp.async, shared loads / stores — against the ideal) of the gate/up and down kernels of
# both tiers at 2048 tokens (GLM-5.2 shape, I=512, hybrid layer: bench/probe_kernels.py)
# -> ncu_h200_s15_l1_m2048.txt (kept gzipped)
export PYTHONPATH=$PWD/overlay:$PWD
NCU=/usr/local/cuda/bin/ncu
timeout 200 $NCU --section SpeedOfLight --section MemoryWorkloadAnalysis_Tables --print-details all \
  -k 'regex:wg13_kernel|wg2_kernel' -c 4 python3 bench/probe_kernels.py 2048 > "$OUT/ncu_h200_s15_l1_m2048.txt" 2>&1
echo "ncu rc=$?"
grep -E "wg13_kernel|wg2_kernel|Duration|L1/TEX Cache Throughput|Memory Throughput|Wavefronts|Global Load|Shared|LDGSTS|Excessive" \
  "$OUT/ncu_h200_s15_l1_m2048.txt" | head -120
