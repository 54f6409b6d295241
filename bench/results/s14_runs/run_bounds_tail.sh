#!/bin/bash
# Session 14, bare H200 host: where the 16-slot tails start paying in the mid class (32-token
# blocks with and without), whether 32-token blocks with a tail beat 64 with one above
# MID_TOKENS, and wider tails for 4096 tokens; I=512 and 2048 -> sweep_h200_s14_bounds_tail.json.
# The sweep leaves each class's choice in place: the second inter's first line is the first's.
export PYTHONPATH=$PWD/overlay; cd /tmp && python3 -c "
import json,os
from nf3_hybrid import bench
wg=dict(BN13=64,BK13=64,BN2=128,BK2=64,warps=4,stages=3,magic=2,ptx=1,x16=1,ptx4=1,mma=1,mma_kept=1,wgmma=1)
r={}
for inter in (512,2048):
  bench.SWEEP['mid']=[dict(wg,BM=32),dict(wg,BM=32,wg_tail=16)]
  bench.SWEEP_TOKENS['mid']=(640,768,832,896,960,1024)
  bench.SWEEP['large']=[dict(wg,BM=64,wg_tail=16),dict(wg,BM=32,wg_tail=16),dict(wg,BM=32,wg_tail=32),
                        dict(wg,BM=64,wg_tail=32),dict(wg,BM=64,wg_tail=64)]
  bench.SWEEP_TOKENS['large']=(1152,1280,1536,2048,3072,4096)
  r[inter]=bench.sweep(inter=inter, classes=['mid','large'], only='wgmma')
open(os.environ['OUT']+'/sweep_h200_s14_bounds_tail.json','w').write(json.dumps(r,indent=1))
" 2>&1 | grep -v Warning | grep -E "^sweep|Error|error" | sed -e "s/'BN13'.*'wgmma': 1, //"
