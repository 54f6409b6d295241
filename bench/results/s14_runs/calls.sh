#!/bin/bash
# Session 14 (2026-12-02), H200: the device calls in order, as run (OUT set by the device tool).
# 1 (bare host, commit e4273d8): tile option wg2_rows's GPU tests and sweep -> kernels_h200_s14_wg2_rows.txt,
#   sweep_h200_s14_wg2_rows.json (18 passed; slower: dropped)
WG_TESTS="resident_down or built_in_tiles" WG_OPTION=wg2_rows bash scripts/gpu_session.sh wgmma s14
# 2 (bare host): tile option wg_tail's GPU tests and sweep (I=512 and 2048) -> kernels_h200_s14_tail.txt,
#   sweep_h200_s14_tail.json, sweep_h200_s14_tail_i2048.json (20 passed)
bash bench/results/s14_runs/run_tail.sh
# 3 (bare host): the bounds of the tails' classes -> sweep_h200_s14_bounds_tail.json (a first try
#   exited at once: no PYTHONPATH after its cd /tmp; fixed in the script)
bash bench/results/s14_runs/run_bounds_tail.sh
# 4 (part1, a fresh host; commit b41b384, the final defaults): every GPU kernel test -> kernels_h200_s14.txt (165 passed)
bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage1.log 2>&1; bash scripts/gpu_session.sh tests s14
# 5 (part2): staging only
bash .gpu-bundle/part2/stage.sh 2 >/tmp/stage2.log 2>&1
# 6 (part3): the table and vLLM -> bench_moe_h200.json/.png, e2e_h200_tp1_s14.json
bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
  bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 && bash scripts/gpu_session.sh final s14
# 7 (bare host, after the final run): the tails' blocks on eight warps -> sweep_h200_s14_warps_tail.json
#   (slower everywhere: kept on four)
bash bench/results/s14_runs/run_warps_tail.sh
# 8-10 (a fresh host: part1, part2 staging only, then part3): the benchmark's default set -> bench_moe_h200_full_s14.json
bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage1.log 2>&1
bash .gpu-bundle/part2/stage.sh 2 >/tmp/stage2.log 2>&1
bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
  bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 &&
  timeout 270 python3 -m nf3_hybrid bench --out-dir "$OUT" --tag h200_full_s14
