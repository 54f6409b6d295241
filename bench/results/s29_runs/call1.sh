#!/bin/bash
# Session 29, call 1 (bare host; carry .gpu-bundle/part1 and bench/scratch/gpu-extra; run as
# `bash .gpu-bundle/part1/stage.sh 1 && bash bench/results/s29_runs/call1.sh`): session 28's
# unrun sweeps, trimmed to fit one call — tile option clamp (unmasked next-K-block loads,
# with and without kconst and e2m1x2) at I=512 and I=2048, kconst13 / kconst2 one at a time
# at I=512 (where both together were 3-9 % slower at 1-2 tokens in session 26), then clamp
# again at I=512 to see the run's drift. Each sweep times the built-in GEMV tiles per
# token count beside its candidates, 1-16 tokens. Then the GEMV's token bound at I=1024
# and 2048 (6 and 8 tokens; session 26's kconst made the GEMV at 8 tokens level with the
# small class at I=2048, and I=1024's bound was never timed): the hybrid layer at 4-16 tokens
# with every size on the GEMV (--gemv-tokens 16) and every size on the grouped small class
# (--gemv-tokens 2), alternating.
# -> s29_call1.tgz (bench_moe_h200_s29_{clamp,kc13,kc2,clamp2,bound_gemv,bound_small}_i*.json),
#    sweeps_h200_s29.txt
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
one() {  # option inter tag
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 80 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes gemv \
    --sweep-only $1 --shape glm5.2 --inter $2 --tokens 1 --out-dir "$OUT" --tag $3 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | sed "s/'BN13': 2, 'BK13': 1024, //; s/'warps': 1, //" | head -24
  echo "sweep $1 I=$2 took $((SECONDS-s)) s"
}
{
for I in 512 2048; do one clamp $I h200_s29_clamp_i$I; done
for opt in kconst13 kconst2; do one $opt 512 h200_s29_${opt/kconst/kc}_i512; done
one clamp 512 h200_s29_clamp2_i512
for I in 2048 1024; do for g in 16 2; do
  s=$SECONDS
  name=$([ $g = 2 ] && echo small || echo gemv)
  PYTHONPATH=$PWD/overlay:$PWD timeout 70 python3 -m nf3_hybrid bench --ours-only --gemv-tokens $g --shape glm5.2 \
    --inter $I --tokens 4 6 8 10 12 16 --out-dir "$OUT" --tag h200_s29_bound_${name}_i$I 2>&1 | grep -v Warning | tail -8
  echo "bound $name I=$I took $((SECONDS-s)) s"
done; done
} 2>&1 | tee "$OUT/sweeps_h200_s29.txt"
rm -f "$OUT"/*.png
(cd "$OUT" && tar czf s29_call1.tgz bench_moe_*.json && rm -f bench_moe_*.json)
ls -la "$OUT"
