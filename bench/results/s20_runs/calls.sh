# Session 20's device calls, in order (each a `run` of the device tool, back to back)
# 1: (bench/results moved out: part1 + tree at the 64 MiB cap) bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage1.log 2>&1;
#    PYTHONPATH=$PWD/overlay python3 -m pytest -q tests/kernels/test_mma_tiles.py -k a_tier_reads     carry .gpu-bundle/part1
# 2: bash .gpu-bundle/part2/stage.sh 2 >/tmp/stage2.log 2>&1; bash bench/results/s20_runs/call2.sh      carry .gpu-bundle/part2 .gpu-extra
# 3: s=$SECONDS; bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh; STAGED_S=$((SECONDS-s)) bash bench/results/s20_runs/call3.sh   carry .gpu-bundle/part3 .gpu-extra
# .gpu-extra: pytest-xdist 3.8.0 and execnet 2.1.2 copied from the local .venv (pure Python)
# 4 (same host, still warm): source .gpu-bundle/part3/env.sh; python3 scripts/vllm_e2e.py --runs hyb_triton,uniform_overlay
#    --parallel 1 --mem 0.3 --out $OUT/e2e_h200_decode_sequential_s20.json --work /tmp/nf3-e2e   carry .gpu-bundle/part3
#    (call 3's sequential run had been cut by its 150 s timeout)
# 5 (bare host): bash bench/results/s20_runs/call5_ncu.sh
# 6: call6_maxnreg.sh — no machine could be started (cost ~120 s of device time)
# 7 (bare host): bash bench/results/s20_runs/call6_maxnreg.sh
