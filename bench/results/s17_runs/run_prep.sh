#!/bin/bash
# Session 17, bare H200 host: the grouped path's preparation made cheaper — the activations
# converted and permuted by one kernel (kernels/mma_order.py) instead of a copy and an
# index_select, the routing sort on many programs (kernels/align.py: count, lay out,
# scatter) instead of one per tier. GPU tests of everything that goes through them, then
# the per-kernel times (torch.profiler) and the hybrid layer and tiers timed (ours only).
# -> kernels_h200_s17_prep.txt, align_probe_h200_s17.json, kernel_breakdown_h200_s17_prep.json,
#    bench_moe_h200_s17_prep.json
set -u
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
timeout 250 python3 -m pytest -q tests/kernels/test_expert_kernels.py tests/kernels/test_mma_tiles.py \
  -k "routing or one_kernel or built_in_tiles or two_streams or wgmma_blocks_with_a_tail or gate_and_up or tiled_nf3_layout or wgmma_tiles_match or graph" \
  2>&1 | tail -15 > "$OUT/kernels_h200_s17_prep.txt"
tail -3 "$OUT/kernels_h200_s17_prep.txt"
timeout 60 python3 bench/align_probe.py --tokens 512 2048 --out "$OUT/align_probe_h200_s17.json" 2>&1 | tail -24
timeout 100 python3 -m nf3_hybrid bench --ours-only --breakdown --out-dir "$OUT" --tag h200_s17_prep 2>&1 | grep -E "^M=" | cut -c1-400
timeout 150 python3 -m nf3_hybrid bench --ours-only --shape glm5.2 --inter 512 2048 --tokens 128 512 1024 2048 4096 \
  --out-dir "$OUT" --tag h200_s17_prep 2>&1 | grep -v Warning | grep -E "^glm5" | cut -c1-200
rm -f "$OUT"/*.png
