#!/bin/bash
# Session 14, bare H200 host: the tails' blocks on eight warps (two warpgroups, 128 weight rows
# a program sharing one copy of the activations; compile_probe, Triton 3.6: NF3 gate/up 221
# registers at 64 + 16 slots against 230 on four warps), wide and large classes, I=512 and
# 2048 -> sweep_h200_s14_warps_tail.json
export PYTHONPATH=$PWD/overlay; cd /tmp && python3 -c "
import json,os
from nf3_hybrid import bench
wg=dict(BN13=64,BK13=64,BN2=128,BK2=64,warps=4,stages=3,magic=2,ptx=1,x16=1,ptx4=1,mma=1,mma_kept=1,wgmma=1)
r={}
for inter in (512,2048):
  bench.SWEEP['wide']=[dict(wg,BM=32,wg_tail=16,wg_warps=8),dict(wg,BM=64,wg_tail=16,wg_warps=8)]
  bench.SWEEP['large']=[dict(wg,BM=64,wg_tail=16,wg_warps=8),dict(wg,BM=64,wg_tail=16,wg_warps=8,wg_stages=3)]
  r[inter]=bench.sweep(inter=inter, classes=['wide','large'], only='wgmma')
open(os.environ['OUT']+'/sweep_h200_s14_warps_tail.json','w').write(json.dumps(r,indent=1))
" 2>&1 | grep -v Warning | grep -E "^sweep|Error|error" | sed -e "s/'BN13'.*'wgmma': 1, //"
