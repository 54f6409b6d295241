# Session 19's device calls, in order (each a `run` of the device tool, back to back)
# 1: bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage1.log 2>&1; bash bench/results/s19_runs/call1.sh      carry .gpu-bundle/part1
# 2: bash .gpu-bundle/part2/stage.sh 2 >/tmp/stage2.log 2>&1; bash bench/results/s19_runs/call2.sh      carry .gpu-bundle/part2
# 3: s=$SECONDS; bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh; STAGED_S=$((SECONDS-s)) bash bench/results/s19_runs/call3.sh   carry .gpu-bundle/part3
