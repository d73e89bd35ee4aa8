#!/usr/bin/env bash
# bench/gpu/run_amp.sh — mixed precision on the NVIDIA H200 machine in one command (issue 35,
# part 2): the GPU-mode tests of the float16 and bfloat16 paths (bfloat16's against PyTorch's
# too: tests/test_bf16_torch.py), the float16 convolutions per layer against
# float32 and cuDNN (bench/gpu/conv_half.py, then its per-kernel profile), the mixed batch
# norm against PyTorch's (bench/gpu/batch_norm.py --mixed), and the zoo at batch 128 under
# autocast + GradScaler against PyTorch's (bench/zoo.py --amp). Run from the repository root
# with the wheels in .whl/ (bench/README.md says how to fetch them):
#
#     bash bench/gpu/run_amp.sh        # writes into $OUT (default /tmp/clgrad-amp)
#
# Each step has its own time limit; the whole run stays under ~9.5 minutes (one device call).
# Files in $OUT: pytest.txt, conv_half.txt/.jsonl, conv_half_profile.txt, bn_mixed.txt,
# zoo_amp.txt/.jsonl.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/clgrad-amp}
mkdir -p "$OUT"
source bench/gpu/setup.sh  # wheels, PYTHONPATH, NVIDIA's ICD, GPU_CACHE
export CLGRAD_DEVICE=${CLGRAD_DEVICE:-gpu}
T0=$(date +%s)
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }

timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_conv_half.py \
    tests/test_norm_mixed.py tests/test_matmul_mma.py tests/test_bf16*.py \
    > "$OUT/pytest.txt" 2>&1
tail -3 "$OUT/pytest.txt"
timeout 90 python3 bench/gpu/conv_half.py --profile > "$OUT/conv_half_profile.txt" 2>&1
timeout 100 python3 bench/gpu/conv_half.py --out "$OUT/conv_half.jsonl" \
    > "$OUT/conv_half.txt" 2>&1
tail -10 "$OUT/conv_half.txt"
timeout 40 python3 bench/gpu/batch_norm.py --mixed > "$OUT/bn_mixed.txt" 2>&1
tail -5 "$OUT/bn_mixed.txt"
timeout "$(left)" python3 bench/zoo.py --device gpu --batch 128 --amp --models all \
    --no-profile --out "$OUT/zoo_amp.jsonl" > "$OUT/zoo_amp.txt" 2>&1
grep -E "first loss|train-amp|rror" "$OUT/zoo_amp.txt"
