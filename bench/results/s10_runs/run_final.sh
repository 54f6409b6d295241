# committed copy of the script run on the H200 in session 10 (from the repository root), in the
# call that staged part 3 of the vLLM bundle:
#   bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
#   bash scripts/install_overlay.sh --python python3 --no-extras && bash bench/results/s10_runs/run_final.sh
# (the GPU kernel tests of the same code ran in the call that staged part 2:
#   bash .gpu-bundle/part2/stage.sh 2 && bash bench/results/s10_runs/run_tests.sh)
#!/bin/bash
# session 10, final code: the benchmark with vLLM's Marlin NVFP4 and bf16 MoE in the same run,
# and the tiny checkpoint served by vLLM (CUDA graphs, eager, reference)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 230 python3 -m nf3_hybrid bench --shape glm5.2 --inter 512 2048 --tokens 1 2 4 8 16 32 64 128 512 1024 2048 4096 --out-dir $OUT --tag h200 2>&1 | grep -v Warning | tail -26
timeout 190 python3 scripts/vllm_e2e.py --out $OUT/e2e_h200_tp1_s10.json --work /tmp/nf3-e2e --runs src_bf16,src_bf16_eager,hyb_triton,hyb_triton_eager,hyb_ref_eager,uniform_overlay --parallel 6 --mem 0.1 2>&1 | tail -25
