#!/bin/bash
# The measurements every GPU session ends with, on the final code, named by TAG:
#   tests: the GPU kernel tests (bare host, or in the call that stages part 2 of the vLLM bundle):
#     bash .gpu-bundle/part2/stage.sh 2 && bash scripts/gpu_session.sh tests s12
#   final: the benchmark table with vLLM's Marlin NVFP4 and bf16 MoE in the same run, then the
#     tiny checkpoint served by vLLM (compiled + CUDA graphs, eager, reference backend), in the
#     call that stages part 3:
#     bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
#     bash scripts/install_overlay.sh --python python3 --no-extras && bash scripts/gpu_session.sh final s12
#     (with TILES=/tmp/nf3_sweep_TAG.json: the table at the tiles a wgmma call's sweep chose)
#   wgmma: the GPU tests of the wgmma kernels (tile option wgmma, built in session 12 without
#     a GPU), then the narrow, mid, wide and large classes swept: their built-in tiles against the wgmma
#     candidates (bare host: no vLLM needed): bash scripts/gpu_session.sh wgmma s12
# Writes under $OUT (the device tool's output folder): kernels_h200_TAG.txt, or
# bench_moe_h200.json/.png and e2e_h200_tp1_TAG.json, or kernels_h200_TAG_wgmma.txt and
# sweep_h200_TAG_wgmma.json (the sweep's trials, then the table at the tiles it chose).
# Each step has a timeout below the device tool's 600 s per call. The per-session copies in
# bench/results/s*_runs/ are the records of earlier sessions.
set -u
mode=${1:?tests, final or wgmma}
tag=${2:?a tag for the result files, e.g. s12}
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
case $mode in
  tests)
    PYTHONPATH=$PWD/overlay:$PWD timeout 340 python3 -m pytest -q tests/kernels tests/test_nf3_nibble.py tests/test_nf3_tiled.py 2>&1 |
      tail -15 > "$OUT/kernels_h200_$tag.txt"
    tail -3 "$OUT/kernels_h200_$tag.txt" ;;
  final)
    # TILES: a sweep's JSON (wgmma mode keeps one in /tmp): the table at the tiles it chose
    timeout 240 python3 -m nf3_hybrid bench --shape glm5.2 --inter 512 2048 ${TILES:+--tiles "$TILES"} \
      --tokens 1 2 4 8 16 32 64 128 512 1024 2048 4096 --out-dir "$OUT" --tag h200 2>&1 | grep -v Warning | tail -26
    timeout 190 python3 scripts/vllm_e2e.py --out "$OUT/e2e_h200_tp1_$tag.json" --work /tmp/nf3-e2e \
      --runs src_bf16,src_bf16_eager,hyb_triton,hyb_triton_eager,hyb_ref_eager,uniform_overlay --parallel 6 --mem 0.1 2>&1 |
      tail -25 ;;
  wgmma)
    # WG_TESTS / WG_OPTION: another test filter / the tile option whose candidates are swept
    PYTHONPATH=$PWD/overlay:$PWD timeout 200 python3 -m pytest -q tests/kernels/test_expert_kernels.py -k "${WG_TESTS:-wgmma}" 2>&1 |
      tail -15 > "$OUT/kernels_h200_${tag}_wgmma.txt"
    tail -3 "$OUT/kernels_h200_${tag}_wgmma.txt"
    PYTHONPATH=$PWD/overlay timeout 330 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes narrow mid wide large \
      --sweep-only "${WG_OPTION:-wgmma}" --shape glm5.2 --inter 512 --tokens 1024 2048 4096 --out-dir "$OUT" \
      --tag "h200_${tag}_wgmma" 2>&1 |
      grep -v Warning | tail -30
    mv "$OUT/bench_moe_h200_${tag}_wgmma.json" "$OUT/sweep_h200_${tag}_wgmma.json" 2>/dev/null
    # the sweep's choice for a later "final" call on this host (TILES=...), only when the
    # wgmma kernels passed their tests: a faster wrong kernel must not reach the table
    if grep -q " passed" "$OUT/kernels_h200_${tag}_wgmma.txt" && ! grep -qE "failed|error" "$OUT/kernels_h200_${tag}_wgmma.txt"; then
      cp "$OUT/sweep_h200_${tag}_wgmma.json" "/tmp/nf3_sweep_${tag}.json" 2>/dev/null && echo "tiles kept: /tmp/nf3_sweep_${tag}.json"
    fi ;;
  *) echo "gpu_session.sh: unknown mode $mode (tests, final or wgmma)" >&2; exit 2 ;;
esac
