#!/usr/bin/env bash
# bench/gpu/run_check.sh — one short GPU check on the NVIDIA H200 machine, after the wheels are
# installed and NVIDIA's ICD is registered (see bench/gpu/run.sh): the device list; the conv,
# elementwise, device, ONNX and matmul tests on the GPU; bench/conv.py's S3, S2 and S1 against
# PyTorch/cuDNN ('auto', measuring its choice for S2); train_step and overhead. Files in $OUT
# (at most 8): log.txt, pytest_gpu.txt, conv.jsonl, train_step.jsonl, overhead.jsonl,
# tables.md, conv_algos.json ('auto''s measured choices).
set -u
OUT=${OUT:-/tmp/clgrad-gpu}
mkdir -p "$OUT"
export CLGRAD_CACHE_DIR=$(mktemp -d)
T0=$(date +%s)
step() { echo; echo "=== $1 (t=$(( $(date +%s) - T0 ))s)"; }
{
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv || true
python3 -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda,
    'cudnn', torch.backends.cudnn.version(), 'numpy', numpy.__version__)" || true
step "devices"
timeout -k 5 60 python3 -m clgrad devices
step "pytest on the GPU"
} 2>&1 | tee "$OUT/log.txt"
timeout -k 5 ${PYTEST_S:-190} python3 -m pytest tests/test_conv.py tests/test_conv_gpu.py \
    tests/test_elementwise.py tests/test_device.py tests/test_onnx.py tests/test_onnx_format.py \
    tests/test_matmul.py -q -x -p no:cacheprovider 2>&1 | tee "$OUT/pytest_gpu.txt" | tail -25
rc=${PIPESTATUS[0]}
echo "pytest exit status $rc" | tee -a "$OUT/log.txt"
R=$(mktemp -d)
B="--gpu --out $R --reps 5 --budget 3 --peers clgrad,torch-cuda"
{
step "bench/conv.py S3,S2,S1"
CLGRAD_CONV_DEBUG=1 timeout -k 5 140 python3 bench/conv.py $B --cases S3,S2,S1 \
    2> "$R/debug.txt"
grep measured "$R/debug.txt"; sort "$R/debug.txt" | uniq -c | sort -rn | head -16
step "train_step"
timeout -k 5 55 python3 bench/train_step.py $B
step "overhead"
timeout -k 5 40 python3 bench/overhead.py $B
step "done"
} 2>&1 | tee -a "$OUT/log.txt"
for f in conv train_step overhead; do cp "$R/$f.jsonl" "$OUT/" 2>/dev/null; done
cp "$CLGRAD_CACHE_DIR/conv_algos.json" "$OUT/" 2>/dev/null
python3 bench/common.py "$R"/conv.jsonl "$R"/train_step.jsonl "$R"/overhead.jsonl \
    > "$OUT/tables.md" 2>/dev/null
