#!/usr/bin/env bash
# bench/gpu/run_gaps.sh — the rows issue 35's status table (bench/README.md, "Issue 35: where
# each target stands") lacks, in one device call on the NVIDIA machine, most wanted first:
#   s2        S2 pass by pass with Winograd F(5x5,2x2)'s weight gradient (conv_passes.py --case S2)
#   bandwidth clone (the float4 copy), avg pool and the rest (bandwidth.py)
#   gemm      float32 and float16 GEMMs on the square sizes and the zoo's linear shapes
#             (gemm_mma.py --sizes 2048,4096,8192)
#   profiles  the AMP step of the host-bound models kernel by kernel beside PyTorch's
#             (kernel_profile.py --amp: DenseNet-BC, ShuffleNetV2, EfficientNet-B0)
#   losses    mixed precision's losses against float32's over 20 steps, clgrad's beside
#             PyTorch AMP's own spread (amp_losses.py: ResNet-18, VGG-11)
#   train     the main job on the GPU, float32 and --amp (test accuracy, images/s)
# Run from the repository root with the wheels in .whl/ (bench/README.md says how to fetch
# them); GPU_CACHE (bench/gpu/setup.sh) keeps the kernel caches for the next call:
#
#     GPU_CACHE=.gl bash bench/gpu/run_gaps.sh       # writes into $OUT (default /tmp/clgrad-gaps)
#
# STEPS: the steps to run, in order (default "losses train s2 gemm bandwidth profiles");
# PROFILE_MODELS: the profiles step's models (default "densenet shufflenetv2 efficientnet_b0").
# GAPS_S: the whole run's time limit (default 540 s): each step gets its own limit, never more
# than what is left, and a step that would get less than 30 s is skipped (a cold H100 spends
# minutes building kernels: every command has a limit, so that one slow step cannot take the
# call). Files in $OUT: gaps_logs.tgz (logs/<step>.txt, conv_S2.jsonl, amp_losses.jsonl: one
# file, as a device call brings back at most 8), and with GPU_CACHE gl.txz.* for the next
# call's carry.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/clgrad-gaps}
L=$OUT/logs
mkdir -p "$L"
T0=$(date +%s)
source bench/gpu/setup.sh  # wheels, PYTHONPATH, NVIDIA's ICD, GPU_CACHE
export CLGRAD_DEVICE=gpu
LIMIT=${GAPS_S:-540}
run() {  # run NAME SECONDS COMMAND...: COMMAND under the smaller of SECONDS and what is left
    local name=$1 want=$2 left; shift 2
    left=$(( LIMIT - 20 - ($(date +%s) - T0) ))  # 20 s kept for packing the caches
    [ "$want" -gt "$left" ] && want=$left
    if [ "$want" -lt 30 ]; then echo "$name: skipped (it would get $want s of the $left left)"; return; fi
    timeout -k 5 "$want" "$@" > "$L/$name.txt" 2>&1
    echo "$name: exit $? at $(( $(date +%s) - T0 )) s"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
for s in ${STEPS:-losses train s2 gemm bandwidth profiles}; do
    case $s in
        s2) run s2 150 python3 -u bench/gpu/conv_passes.py --case S2 --out "$L" ;;
        bandwidth) run bandwidth 90 python3 -u bench/gpu/bandwidth.py ;;
        gemm) run gemm 120 python3 -u bench/gpu/gemm_mma.py --sizes 2048,4096,8192 ;;
        profiles) for m in ${PROFILE_MODELS:-densenet shufflenetv2 efficientnet_b0}; do
                      run "profile_$m" 150 python3 -u bench/gpu/kernel_profile.py --amp \
                          --model "$m" --batch 128 --top 30
                  done ;;
        losses) run amp_losses 150 python3 -u bench/gpu/amp_losses.py --models resnet18,vgg11 \
                    --out "$L/amp_losses.jsonl" ;;
        train) for m in f32 amp; do
                   run "train_$m" 90 python3 -u -m clgrad train --device gpu --quiet \
                       --out "/tmp/train_$m" $([ $m = amp ] && echo --amp)
               done ;;
        *) echo "STEPS: expected s2, bandwidth, gemm, profiles, losses or train, got '$s'" >&2
           exit 2 ;;
    esac
done
gpu_cache_out
grep -h "^|\|^## \|test accuracy" "$L"/*.txt 2>/dev/null | head -150
tar -czf "$OUT/gaps_logs.tgz" -C "$OUT" logs && rm -rf "$L"
