#!/bin/bash
# Session 36, call 1 (carry bench/scratch/gpu-extra: pytest and xdist copied from the test
# venv; run as `bash bench/results/s36_runs/call1.sh`), bare host. On an H200 nothing runs
# here: vLLM's three parts and the table follow (s34_runs/call3.sh). On any other GPU: the
# GPU kernel suite on this tree, four xdist workers — the first run of session 36's test
# changes on a GPU (the hybrid layer's reference test takes the GEMV up to 24 tokens, the
# swap13/swap2 test's GPU sizes unchanged; SM90 probes through one compile_probe child).
# -> kernels_<gpu>_s36.txt
: "${OUT:?set by the device tool}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
case "$gpu" in *H200*) echo "an H200: stage vLLM next"; exit 0;; *H100*) tag=h100;; *) tag=gpu;; esac
X=$PWD/bench/scratch/gpu-extra
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout "${LIMIT:-480}" python3 -m pytest -q -p xdist -n 4 \
  tests/kernels tests/test_nf3_nibble.py tests/test_nf3_tiled.py 2>&1 \
  | grep --line-buffered -v "Warning\|warn" | tail -40 > "$OUT/kernels_${tag}_s36.txt"
echo "kernel suite took $((SECONDS-s)) s"; tail -8 "$OUT/kernels_${tag}_s36.txt"
