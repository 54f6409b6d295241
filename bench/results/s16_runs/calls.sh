# Session 16's device calls, in order (H200, Triton 3.6):
# 1 (bare host): bash bench/results/s16_runs/run_ab.sh
#   -> kernels_h200_s16_tiled.txt (14 passed), bench_moe_h200_s16_{nibble,tiled}.json
# 2 (carry .gpu-bundle/part1): bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage1.log 2>&1; bash bench/results/s16_runs/run_decode_ab.sh
#   -> bench_moe_h200_s16_decode_{nibble,tiled}.json (after expert_gemv.tiled_row)
# 3 (carry part2): bash .gpu-bundle/part2/stage.sh 2 >/tmp/stage2.log 2>&1; bash scripts/gpu_session.sh tests s16
#   -> kernels_h200_s16.txt (cut by its 340 s timeout after 163 dots, no failure: all of test_expert_kernels.py)
# 4 (the host had been released: stage 3 found no parts, rc 3); 5-6: parts 1 and 2 staged again
# 7 (carry part3): bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
#   bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 && bash scripts/gpu_session.sh final s16
#   -> bench_moe_h200.json/.png, e2e_h200_tp1_s16.json
# 8: PYTHONPATH=$PWD/overlay:$PWD timeout 280 python3 -m pytest -q tests/kernels/test_mma_tiles.py tests/kernels/test_pdl.py \
#   tests/kernels/test_ptx_decode.py tests/kernels/test_scale_decode.py tests/test_nf3_nibble.py tests/test_nf3_tiled.py
#   -> kernels_h200_s16_rest.txt (49 passed, 1 failed: a test's mock did not take the new tiled= keyword; mended after)
