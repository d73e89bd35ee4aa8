#!/usr/bin/env bash
# bench/gpu/run_dw.sh — the GPU run of the grouped/depthwise conv work (issue 15), in one
# command on the NVIDIA H200 machine, after the wheels are installed and NVIDIA's ICD is
# registered (see bench/gpu/run.sh): bench/gpu/conv_passes.py for S3 (smoke + depthwise_gpu's
# tiles) and S2 (igemm_gpu's tiles against im2col/implicit), each pass against cuDNN; the smoke
# of bench/gpu/smoke.py; bench/conv.py's S3, S2 and S1 with the best tiles found ('auto'
# measuring its choice for S2), PyTorch/cuDNN as the peer. Files in $OUT.
set -u
OUT=${OUT:-/tmp/clgrad-gpu}
mkdir -p "$OUT"
T0=$(date +%s)
step() { echo; echo "=== $1 (t=$(( $(date +%s) - T0 ))s)"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv || true
step "conv_passes S3"
timeout -k 5 150 python3 bench/gpu/conv_passes.py --case S3 --out "$OUT" | grep -v '^{"case": "S'
step "conv_passes S2"
timeout -k 5 150 python3 bench/gpu/conv_passes.py --case S2 --no-smoke --out "$OUT" \
    | grep -v '^{"case": "S'
step "smoke"
timeout -k 5 90 python3 bench/gpu/smoke.py > "$OUT/smoke.txt" 2>&1
echo "smoke exit status $?"; grep -v '^PASS' "$OUT/smoke.txt" | tail -20
export CLGRAD_CONV_DWG=$(cat "$OUT/best.txt" 2>/dev/null)
export CLGRAD_CONV_IGEMM=$(cat "$OUT/best_igemm.txt" 2>/dev/null)
step "bench/conv.py ${CASES:-S3,S2,S1} with DWG=$CLGRAD_CONV_DWG IGEMM=$CLGRAD_CONV_IGEMM"
R=$(mktemp -d)
CLGRAD_CONV_DEBUG=1 timeout -k 5 200 python3 bench/conv.py --gpu --out "$R" --reps 7 \
    --budget 4 --peers clgrad,torch-cuda --cases "${CASES:-S3,S2,S1}" 2> "$OUT/debug.txt"
grep measured "$OUT/debug.txt"; sort "$OUT/debug.txt" | uniq -c | sort -rn | head -12
cat "$R"/*.jsonl > "$OUT/conv.jsonl" 2>/dev/null
python3 bench/common.py "$R"/conv.jsonl > "$OUT/tables.md" 2>/dev/null
echo "done in $(( $(date +%s) - T0 )) s"
