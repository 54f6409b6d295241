#!/bin/bash
# Session 24, call 2 (the probes with the real kernel's instruction count and registers) (bare host, no vLLM): bench/stream_probe.py -> stream_probe_h200_s24_work.json
: "${OUT:?set by the device tool}"
set -o pipefail
PYTHONPATH=$PWD/overlay:$PWD timeout 500 python3 bench/stream_probe.py "$OUT/stream_probe_h200_s24_work.json" \
  --inter 512 --inter 2048 --tokens 16 --tokens 64 2>&1 | grep -v Warning | cut -c1-600
