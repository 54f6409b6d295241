#!/bin/bash
# Session 20, call 3 (after `bash .gpu-bundle/part3/stage.sh 3`, env.sh sourced): the
# overlay installed; the hybrid layer's per-kernel times at decode sizes (torch.profiler);
# the benchmark table (Marlin and bf16 in the same run); the tiny checkpoint's decode
# tokens/s with engines one at a time; then the agreement runs with what time is left.
: "${OUT:?set by the device tool}"
start=$SECONDS
bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
timeout 60 python3 -m nf3_hybrid bench --breakdown --ours-only --inter 512 --tokens 1 2 4 8 16 \
  --out-dir "$OUT" --tag h200_s20_decode 2>&1 | grep "^M="
timeout 230 python3 -m nf3_hybrid bench --shape glm5.2 --inter 512 2048 \
  --tokens 1 2 4 8 16 32 64 128 512 1024 2048 4096 --out-dir "$OUT" --tag h200 2>&1 | grep -v Warning | tail -26
timeout 150 python3 scripts/vllm_e2e.py --runs hyb_triton,uniform_overlay --parallel 1 --mem 0.3 \
  --out "$OUT/e2e_h200_decode_sequential_s20.json" --work /tmp/nf3-e2e 2>&1 | tail -8
left=$((575 - (SECONDS - start) - ${STAGED_S:-100}))
echo "time left for the agreement runs: $left s"
if [ "$left" -gt 100 ]; then
  timeout "$left" python3 scripts/vllm_e2e.py --out "$OUT/e2e_h200_tp1_s20.json" --work /tmp/nf3-e2e \
    --runs src_bf16,src_bf16_eager,hyb_triton,hyb_triton_eager,hyb_ref_eager,uniform_overlay --parallel 6 --mem 0.1 2>&1 | tail -25
fi
