# committed copy of the script run on the H200 in session 8 (from the repository root)
#!/bin/bash
# session 8, bare H200 host: the grouped path's two tiers on two CUDA streams — GPU kernel
# tests with it on (the default), then the layer timed with it off and on in one session
export PYTHONPATH=$PWD/overlay:$PWD
timeout 220 python3 -m pytest -q tests/kernels tests/test_nf3_nibble.py 2>&1 | tail -15 > $OUT/kernels_h200_s8_streams.txt; tail -2 $OUT/kernels_h200_s8_streams.txt
for on in 0 1; do
timeout 150 python3 - $on <<'PY' 2>&1 | grep -v Warning | tail -14
import sys
from nf3_hybrid.backends import triton_tiers
triton_tiers.CONCURRENT_TIERS = sys.argv[1] == "1"
from nf3_hybrid.cli import main
main(["bench", "--ours-only", "--shape", "glm5.2", "--inter", "512", "2048", "--tokens", "128", "256", "512",
      "1024", "2048", "4096", "--out-dir", __import__("os").environ["OUT"], "--tag", f"h200_s8_streams{sys.argv[1]}"])
PY
done
