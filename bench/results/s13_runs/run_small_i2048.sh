#!/bin/bash
# session 13, call 4 (host warm from call 3, overlay installed): the decode class on wgmma
# (I=512 and 2048) and the large class's 64-token wgmma tiles at I=2048, against the built-in
# tiles of the time -> sweep_h200_s13_small_i2048.json
cd /tmp && PYTHONPATH=/work/overlay python3 -c "
import json,os,sys
from nf3_hybrid import bench
wg=dict(BN13=64,BK13=64,BN2=128,BK2=64,warps=4,stages=3,magic=2,ptx=1,x16=1,ptx4=1,mma=1,mma_kept=1,wgmma=1)
bench.SWEEP['small']=[dict(wg,BM=16),dict(wg,BM=16,wg_stages=3),dict(wg,BM=32)]
bench.SWEEP_TOKENS['small']=(16,32,64,128)
bench.SWEEP['large']=[c for c in bench.SWEEP['large'] if c.get('wgmma') and c['BM']==64]
bench.SWEEP_TOKENS['large']=(2048,4096)
r={}
r['i512']=bench.sweep(inter=512, classes=['small'], only='wgmma')
r['i2048']=bench.sweep(inter=2048, classes=['small','large'], only='wgmma')
open(os.environ['OUT']+'/sweep_h200_s13_small_i2048.json','w').write(json.dumps(r,indent=1))
"
