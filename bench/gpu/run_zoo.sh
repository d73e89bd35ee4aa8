#!/usr/bin/env bash
# bench/gpu/run_zoo.sh — the zoo at batch 128 on the NVIDIA H200 machine in one command (issue
# 35): float32 (bench/zoo.py --device gpu --batch 128) and under autocast(float16) +
# GradScaler (--amp), clgrad against PyTorch CUDA (TF32 off), every model, no per-launch
# profile. Run from the repository root with the wheels in .whl/:
#
#     GPU_CACHE=.gl bash bench/gpu/run_zoo.sh      # writes into $OUT (default /tmp/clgrad-zoo)
#
# ZOO_S: the time limit of each of the two runs (default 270 s); MODELS (default all);
# MODES (default "f32 amp"). With GPU_CACHE (bench/gpu/setup.sh) the kernel caches and
# the measured conv choices are packed into $OUT/gl.txz.* for the next call's carry.
# Files in $OUT (at most 8 come back): zoo_f32.txt/.jsonl, zoo_amp.txt/.jsonl, gl.txz.aa ...
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/clgrad-zoo}
mkdir -p "$OUT"
source bench/gpu/setup.sh  # wheels, PYTHONPATH, NVIDIA's ICD, GPU_CACHE
for mode in ${MODES:-f32 amp}; do
    flag=$([ "$mode" = amp ] && echo --amp)
    T=$(date +%s)
    timeout -k 5 "${ZOO_S:-270}" python3 bench/zoo.py --device gpu --batch 128 $flag \
        --models "${MODELS:-all}" --no-profile --out "$OUT/zoo_$mode.jsonl" \
        > "$OUT/zoo_$mode.txt" 2>&1
    echo "$mode: exit $? in $(( $(date +%s) - T )) s"
    grep -E "batch 128|train|rror" "$OUT/zoo_$mode.txt"
done
gpu_cache_out
