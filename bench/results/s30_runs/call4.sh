#!/bin/bash
# Session 30, call 4 (bare host, no vLLM; nothing carried): why the hybrid layer at 4096 tokens
# takes more than two 2048-token passes' time (H100 table of call 3, I=1024: 4911 µs against
# 2 x 2086; the tiers alone scale 2.0x). The hybrid layer alone at 2048 / 3072 / 4096 tokens
# with passes of 2048 (built-in), 1024 and 4096 tokens, I=1024 and 2048, the built-in twice
# (first and last) for the run's drift; then the per-kernel breakdown at 2048 and 4096.
# -> s30_call4.tgz (bench_moe_h200_s30_chunk{2048,1024,4096,2048b}_i*.json), chunks_h200_s30.txt
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
{
for I in 1024 2048; do
  for c in 2048 1024 4096 2048b; do
    s=$SECONDS
    PYTHONPATH=$PWD/overlay:$PWD timeout 90 python3 -m nf3_hybrid bench --ours-only --chunk-tokens ${c%b} --shape glm5.2 \
      --inter $I --tokens 2048 3072 4096 --out-dir "$OUT" --tag h200_s30_chunk${c}_i$I 2>&1 | grep "^| glm5.2" | cut -d'|' -f3-5
    echo "chunk $c I=$I took $((SECONDS-s)) s"
  done
done
PYTHONPATH=$PWD/overlay:$PWD timeout 120 python3 -m nf3_hybrid bench --ours-only --breakdown --shape glm5.2 \
  --inter 1024 --tokens 2048 4096 --out-dir "$OUT" --tag h200_s30_breakdown 2>&1 | grep -v Warning | tail -40
} 2>&1 | tee "$OUT/chunks_h200_s30.txt"
rm -f "$OUT"/*.png
(cd "$OUT" && tar czf s30_call4.tgz *.json && rm -f *.json)
ls -la "$OUT"
