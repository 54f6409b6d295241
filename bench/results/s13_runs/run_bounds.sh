#!/bin/bash
# session 13, call 5: where 16-token wgmma blocks stop paying (narrow against mid) and 32
# against 64 (mid against large), I=512 and 2048 -> sweep_h200_s13_bounds.json. The second
# inter's first "built-in" line is the first's chosen tiles (sweep leaves its choice in place).
cd /tmp && python3 -c "
import json,os
from nf3_hybrid import bench
wg=dict(BN13=64,BK13=64,BN2=128,BK2=64,warps=4,stages=3,magic=2,ptx=1,x16=1,ptx4=1,mma=1,mma_kept=1,wgmma=1)
r={}
for inter in (512,2048):
  bench.SWEEP['narrow']=[dict(wg,BM=16),dict(wg,BM=32)]
  bench.SWEEP_TOKENS['narrow']=(288,352,416,480,544)
  bench.SWEEP['mid']=[dict(wg,BM=32),dict(wg,BM=64)]
  bench.SWEEP_TOKENS['mid']=(640,768,896,1024)
  r[inter]=bench.sweep(inter=inter, classes=['narrow','mid'], only='wgmma')
open(os.environ['OUT']+'/sweep_h200_s13_bounds.json','w').write(json.dumps(r,indent=1))
"
