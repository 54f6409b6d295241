#!/bin/bash
# Session 30, call 5 (bare host, no vLLM; nothing carried): call 4 had the hybrid layer at
# I=2048 and 2048 tokens (one pass either way) at 4333 µs with --chunk-tokens 4096 against
# 5039 / 5105 with the built-in 2048, while each tier alone took the same time either way.
# Is the pass size the cause (the workspace's sizes follow it), or how the two tiers' streams
# happen to overlap in one captured graph? Twice, alternating: passes of 2048 / 4096 / 8192
# tokens and the built-in with only 1024 and 2048 tokens asked (a workspace planned for 2048),
# then 2048 and 4096 with the tiers one after the other (--serial-tiers); I=2048.
# -> s30_call5.tgz (bench_moe_h200_s30_ws*_i2048.json), chunks2_h200_s30.txt
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
{
for r in 1 2; do
  for c in 2048 4096 8192 small serial2048 serial4096; do
    s=$SECONDS
    case $c in
      small) args="--tokens 1024 2048";;
      serial*) args="--serial-tiers --chunk-tokens ${c#serial} --tokens 1024 2048 4096";;
      *) args="--chunk-tokens $c --tokens 1024 2048 4096";;
    esac
    PYTHONPATH=$PWD/overlay:$PWD timeout 90 python3 -m nf3_hybrid bench --ours-only $args --shape glm5.2 \
      --inter 2048 --out-dir "$OUT" --tag h200_s30_ws${c}_${r}_i2048 2>&1 | grep "^glm5.2\|^| glm5.2" | cut -c1-150
    echo "$c run $r took $((SECONDS-s)) s"
  done
done
} 2>&1 | tee "$OUT/chunks2_h200_s30.txt"
rm -f "$OUT"/*.png
(cd "$OUT" && tar czf s30_call5.tgz *.json && rm -f *.json)
