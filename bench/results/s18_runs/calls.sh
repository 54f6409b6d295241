# Session 18's device calls, in order (H200, Triton 3.6). Two refused starts and two staging
# calls lost to the machine going cold between calls are left out.
# 1 (bare host): bash bench/results/s18_runs/run_pairs.sh
#   -> kernels_h200_s18_pairs.txt (8 passed), bench_moe_h200_s18_{fp32,bf16,small}.json,
#      kernel_breakdown_h200_s18_{gemv16,small16,bf16}.json
# 2 (bare host): bash bench/results/s18_runs/run_bounds.sh
#   -> bench_moe_h200_s18_{gemv,grouped}_bounds.json, bench_moe_h200_s18_small_sweep_i2048.json
# then bf16 pair rows made the default and GEMV_TOKENS_BY_INTER added (the committed code)
# 3 (carry part2 after part1): bash scripts/gpu_session.sh tests s18
#   -> kernels_h200_s18.txt (cut by its 340 s timeout at ~70 %: 158 passed, no failure, the rest not run)
# 4-6 (bench/results moved out of the tree for all three; parts 1, 2, 3):
#   bash .gpu-bundle/part3/stage.sh 3; source .gpu-bundle/part3/env.sh && bash scripts/install_overlay.sh
#   --python python3 --no-extras && bash scripts/gpu_session.sh final s18
#   -> bench_moe_h200.json/.png, e2e_h200_tp1_s18.json
