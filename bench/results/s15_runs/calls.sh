#!/bin/bash
# Session 15 (2026-12-02), H200: the device calls in order, as run (OUT set by the device tool).
# A first call got no machine (none could be started: no device time spent on it).
# 1 (bare host, 1898c14 + the wg_maxnreg GPU test and sweep candidates): tile option wg_maxnreg's
#   GPU tests and sweep -> kernels_h200_s15_maxnreg.txt (14 passed), sweep_h200_s15_maxnreg{,_i2048}.json
#   (slower in every class: kept off)
bash bench/results/s15_runs/run_maxnreg.sh
# 2 (bare host, with s15_runs/wg_ashared.patch and its test, dropped_gpu_tests.py.txt):
#   -> kernels_h200_s15_ashared.txt (24 passed), sweep_h200_s15_ashared{,_i2048}.json (30-60 % slower: dropped)
bash bench/results/s15_runs/run_ashared.sh
# 3 (bare host, with s15_runs/wg_async.patch and its test): -> kernels_h200_s15_async.txt (16 passed),
#   sweep_h200_s15_async{,_i2048}.json (1 % faster to 448 tokens, 1-6 % slower above: dropped)
bash bench/results/s15_runs/run_async.sh
# 4 (bare host, with s15_runs/loads_experiment.patch: NF3_EXP_VEC4 / NF3_EXP_PAIRS switches):
#   -> bench_moe_h200_s15_loads_{base,vec4,pairs}{,_i2048}.json, kernels_h200_s15_loads.txt (129 tests
#   of every Gluon kernel with both on: 129 dots, no failure; the summary line cut by the 240 s timeout)
bash bench/results/s15_runs/run_loads.sh
# 5 (refused at once, no device time: the tree with part 1 over 64 MiB — the untracked results of calls
#   1-4 moved out of the tree, then)
# 6-8 (a fresh host; the committed code: NVFP4 vector loads, NF3 loads as before):
bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage1.log 2>&1
bash .gpu-bundle/part2/stage.sh 2 >/tmp/stage2.log 2>&1
#   -> bench_moe_h200.json/.png, e2e_h200_tp1_s15.json
bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
  bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 && bash scripts/gpu_session.sh final s15
# 9 (bare host, the committed code): ncu's memory tables of the four wgmma kernels at 2048 tokens
#   -> ncu_h200_s15_l1_m2048.txt (kept gzipped)
bash bench/results/s15_runs/run_ncu_l1.sh
