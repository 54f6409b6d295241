# Session 17's device calls, in order (H200, Triton 3.6). Refused starts (no machine lent:
# about 2 min of device time in all) are left out.
# 1 (bare host; the huge class and 4096-token chunks in place: huge_class.patch):
#   bash bench/results/s17_runs/run_gu.sh
#   -> kernels_h200_s17_gu.txt (22 passed), bench_moe_h200_s17_huge.json
# 2 (bare host, same code): bash bench/results/s17_runs/run_sweep_gu.sh
#   -> sweep_h200_s17_gu.json (wg_gu slower in every class), bench_moe_h200_s17_as_large.json
# 3 (bare host, same code): bash bench/results/s17_runs/run_decode_probe.sh
#   -> kernels_h200_s17_final.txt (28 passed), kernel_breakdown_h200_s17.json, ncu_h200_s17_gemv_m1_m16.txt(.gz)
# then the huge class and 4096-token chunks were taken out (a5aff1b), the activation kernel and
# the routing launches written (6ddeac8)
# 4 (bare host): bash bench/results/s17_runs/run_prep.sh
#   -> kernels_h200_s17_prep.txt (96 passed), align_probe_h200_s17.json, kernel_breakdown_h200_s17_prep.json,
#      bench_moe_h200_s17_prep.json
# 5 (carry .gpu-bundle/part1; bench/results moved out of the tree for the call, the carry's cap):
#   bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage1.log 2>&1
# 6 (carry part2): bash .gpu-bundle/part2/stage.sh 2 >/tmp/stage2.log 2>&1
# 7 (carry part3): bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
#   bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 && bash scripts/gpu_session.sh final s17
#   -> bench_moe_h200.json/.png, e2e_h200_tp1_s17.json
# 8 (bare host, the final code 6ddeac8): bash bench/results/s17_runs/run_rest.sh
#   -> kernels_h200_s17_rest.txt (the tests call 4 did not select: 65 passed, no failure, before the 200 s
#      timeout cut the run; the device time was then spent)
