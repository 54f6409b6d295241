#!/bin/bash
# Session 25, call 1 (bare host, no vLLM): the stream probe with the real decode's byte
# permutes (bench/stream_probe.py DECODE) beside the pattern alone and the real kernels,
# then the probe's checksum tests on the GPU -> stream_probe_h200_s25_decode.json
: "${OUT:?set by the device tool}"
set -o pipefail
export PYTHONPATH=$PWD/overlay:$PWD
only=""
for p in mirror pad16_work60 decode decode_noahead decode_bar2 decode_pad16 decode_pad16_bar2 bn32_w2_decode bn128_w8_decode; do
  only="$only --only $p"; done
s=$SECONDS
timeout 420 python3 bench/stream_probe.py "$OUT/stream_probe_h200_s25_decode.json" \
  --inter 512 --inter 2048 --tokens 16 --tokens 64 $only 2>&1 | grep -v Warning | cut -c1-400
echo "probe took $((SECONDS-s)) s"
timeout 120 python3 -m pytest -q tests/kernels/test_stream_probe.py 2>&1 | tail -3
