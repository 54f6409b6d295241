#!/bin/bash
# Session 35, one call on a bare host (no carry, no vLLM; run as
# `bash bench/results/s35_runs/h200_bare.sh`), asked for when 517 device seconds were left:
# too few for vLLM's three staged parts and the table with Marlin. On an H200 only (the H100
# has session 33's numbers on today's kernels): session 32's bare.sh — the serial-tier rule
# (one pass) and our tiers' table at I=512 / 2048, no stock contenders, so no ratio to Marlin
# comes from it. Elsewhere it stops at once.
# -> as bare.sh: tiers_h200_s31.txt, s31_call1.tgz, table_h200_s32.txt, s32_bare.tgz, the PNG
: "${OUT:?set by the device tool}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in *H200*) ;; *) echo "$gpu: not an H200, nothing run"; exit 0;; esac
LIMIT=${LIMIT:-200} bash bench/results/s32_runs/bare.sh
