#!/bin/bash
# Session 13 (2026-12-02), H200: the device calls in order, as run (OUT set by the device tool).
# Calls 1-3 on the session-12 code with bench --tiles (commit 4781332), 4-5 on the same host
# while it was warm; calls 6-8 on the wgmma defaults (commit after it), a fresh host.
# 1 (carry .gpu-bundle/part1): wgmma GPU tests + sweep -> kernels_h200_s13_wgmma.txt, sweep_h200_s13_wgmma.json
bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage1.log 2>&1; bash scripts/gpu_session.sh wgmma s13
# 2 (part2): every GPU kernel test -> kernels_h200_s13.txt (137 passed)
bash .gpu-bundle/part2/stage.sh 2 >/tmp/stage2.log 2>&1; bash scripts/gpu_session.sh tests s13
# 3 (part3): Marlin / bf16 table at the tiles call 1 chose -> bench_moe_h200_s13_swept_tiles.json, e2e_h200_tp1_s13.json
bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
  bash scripts/install_overlay.sh --python python3 --no-extras && TILES=/tmp/nf3_sweep_s13.json bash scripts/gpu_session.sh final s13
# 4: run_small_i2048.sh -> sweep_h200_s13_small_i2048.json; 5: run_bounds.sh -> sweep_h200_s13_bounds.json
# 6 (part1): every GPU kernel test on the wgmma defaults -> kernels_h200_s13_wgmma_default.txt (144 passed,
#   1 failed: the new built-in-tiles test's block-size check at 2500 tokens, a test bug — two chunks of
#   2048 and 452 tokens, each of its own class; fixed after, not rerun)
bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage1.log 2>&1; bash scripts/gpu_session.sh tests s13_wgmma_default
# 7 (part2): staging only (and that test rerun, for its message)
# 8 (part3): the table and vLLM on the wgmma defaults -> bench_moe_h200.json/.png, e2e_h200_tp1_s13_wgmma_default.json
bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
  bash scripts/install_overlay.sh --python python3 --no-extras && bash scripts/gpu_session.sh final s13_wgmma_default
# 9 (bare host, no vLLM): s13_runs/wg_async.patch applied to f1daf13 (asynchronous wgmma; dropped, not on
#   main), its GPU tests and the built-in-tiles test (fixed since call 6), then its candidates
#   swept against the built-in tiles -> kernels_h200_s13_async_wgmma.txt, sweep_h200_s13_async_wgmma.json
WG_TESTS="wgmma_async or built_in_tiles" WG_OPTION=wg_async bash scripts/gpu_session.sh wgmma s13_async
# 10 (bare host): ncu of the wgmma kernels at 2048 tokens -> ncu_h200_s13_wgmma_m2048.txt
bash bench/results/s13_runs/run_ncu.sh
