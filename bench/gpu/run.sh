#!/usr/bin/env bash
# bench/gpu/run.sh — every GPU measurement in one command, for the NVIDIA H200 machine
# (Python 3.12 with numpy and torch+CUDA, no pyopencl). Run from the repository root with the
# wheels in .whl/ (bench/README.md says how to fetch them):
#
#     bash bench/gpu/run.sh            # writes into $OUT (default /tmp/clgrad-gpu)
#
# Steps: install the carried wheels into /tmp/site; register NVIDIA's OpenCL ICD; a
# correctness smoke (bench/gpu/smoke.py: every GEMM tile candidate and conv2d fwd/bwd against
# NumPy); GEMM tile tuning at 4096^3 then GEMM 2048^3 and 8192^3; conv S1/S2 (N=128)/S3
# (N=128, C=256, 56x56); the S4 training step; per-op overhead; cold start — clgrad on
# NVIDIA's OpenCL against PyTorch/cuDNN (TF32 off) and tinygrad's CL backend on the same GPU.
# Every step has its own time limit (the whole run stays under ~8.5 minutes). Files in $OUT:
# log.txt (everything printed), smoke.txt, results.jsonl (all rows), tables.md (all tables).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/clgrad-gpu}
mkdir -p "$OUT"
T0=$(date +%s)
step() { echo; echo "=== $1 (t=$(( $(date +%s) - T0 ))s)"; }

main() {

step "install wheels"
source bench/gpu/setup.sh  # wheels, PYTHONPATH, NVIDIA's ICD, GPU_CACHE
export CLGRAD_DEVICE=${CLGRAD_DEVICE:-gpu}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
python3 -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda,
    'cudnn', torch.backends.cudnn.version(), 'numpy', numpy.__version__)" || true

R=$(mktemp -d)
step "smoke"
timeout -k 5 60 python3 bench/gpu/smoke.py > "$OUT/smoke.txt" 2>&1
echo "smoke exit status $?"; grep -v '^PASS' "$OUT/smoke.txt" | tail -40

B="--gpu --out $R --reps 7 --budget 6"
step "gemm (tune, then 2048^3 and 8192^3)"
timeout -k 5 100 python3 bench/gemm.py $B --tune
step "conv"
timeout -k 5 180 python3 bench/conv.py $B
step "train_step"
timeout -k 5 60 python3 bench/train_step.py $B
step "overhead"
timeout -k 5 40 python3 bench/overhead.py $B
step "cold_start"
timeout -k 5 50 python3 bench/cold_start.py --gpu --out $R --reps 1 --peers clgrad,torch-cuda

step "collect"
cat "$R"/*.jsonl > "$OUT/results.jsonl" 2>/dev/null
python3 bench/common.py "$R"/gemm.jsonl "$R"/conv.jsonl "$R"/train_step.jsonl \
    "$R"/overhead.jsonl "$R"/cold_start.jsonl > "$OUT/tables.md" 2>/dev/null
cat "$OUT/tables.md"
echo "done in $(( $(date +%s) - T0 )) s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
}

main 2>&1 | tee "$OUT/log.txt"
