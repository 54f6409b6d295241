#!/bin/bash
# Session 30, call 6 (the same warm host as call 5, no vLLM; nothing carried; run as typed
# into the device tool, recorded here): call 5 had the hybrid layer at I=2048 faster with the
# tiers one after the other (--serial-tiers) at 2048-4096 tokens. Where else? Concurrent
# against serial tiers at I=512 / 1024 / 2048, 128-4096 tokens, two passes.
# -> tiers_h100_s30.txt, s30_call6.tgz (bench_moe_h100_s30_tiers_{conc,serial}{1,2}_i*.json)
: "${OUT:?set by the device tool}"
for r in 1 2; do for I in 512 1024 2048; do for s in conc serial; do
  a=""; [ $s = serial ] && a="--serial-tiers"
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 -m nf3_hybrid bench --ours-only $a --shape glm5.2 --inter $I \
    --tokens 128 512 1024 2048 4096 --out-dir "$OUT" --tag h100_s30_tiers_${s}${r}_i$I 2>&1 | grep "^glm5.2" | cut -c1-60
done; done; done 2>&1 | tee $OUT/tiers_h100_s30.txt
rm -f $OUT/*.png; cd $OUT && tar czf s30_call6.tgz *.json && rm -f *.json
