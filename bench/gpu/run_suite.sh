#!/usr/bin/env bash
# bench/gpu/run_suite.sh — the whole test suite on the NVIDIA H200 machine in one device call:
# with CLGRAD_DEVICE unset (the default device, as CI and a new user run it) beside
# CLGRAD_DEVICE=gpu (every GPU code path), each on its own pytest-xdist workers. Run from the
# repository root with the wheels in .whl/ (pytest-xdist among them; bench/README.md says how
# to fetch them):
#
#     bash bench/gpu/run_suite.sh      # writes into $OUT (default /tmp/clgrad-suite)
#
# Files in $OUT: suite_unset.txt, suite_gpu.txt (one line per failure, then the summary).
# SUITE_S: the time limit of each half (default 520 s).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/clgrad-suite}
mkdir -p "$OUT"
source bench/gpu/setup.sh  # wheels, PYTHONPATH, NVIDIA's ICD, GPU_CACHE
run() {  # run NAME WORKERS [env ...]
    local name=$1 n=$2; shift 2
    env "$@" timeout -k 10 "${SUITE_S:-520}" python3 -m pytest -q -p no:cacheprovider \
        -n "$n" --tb=line -rfE tests > "$OUT/suite_$name.txt" 2>&1
    echo "$name: exit $? $(tail -1 "$OUT/suite_$name.txt")"
}
run unset 9 -u CLGRAD_DEVICE &
run gpu 6 CLGRAD_DEVICE=gpu &
wait
