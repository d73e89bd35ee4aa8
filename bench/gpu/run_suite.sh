#!/usr/bin/env bash
# bench/gpu/run_suite.sh — the whole test suite on the NVIDIA H200 machine in one device call:
# with CLGRAD_DEVICE unset (the default device, as CI and a new user run it) beside
# CLGRAD_DEVICE=gpu (every GPU code path), each on its own pytest-xdist workers. Run from the
# repository root with the wheels in .whl/ (pytest-xdist among them; bench/README.md says how
# to fetch them):
#
#     bash bench/gpu/run_suite.sh      # writes into $OUT (default /tmp/clgrad-suite)
#
# Files in $OUT: suite_unset.txt, suite_gpu.txt (pytest -v: a line per test as it ends, so a
# run stopped by its time limit still names its failures; then the summary), and
# failures_unset.txt, failures_gpu.txt (each failure's traceback as it ends: tests/conftest.py's
# CLGRAD_TEST_FAILURES; pytest prints them only at the end).
# SUITE_S: the time limit of each half (default 520 s). MODES: the halves to run (default
# "unset gpu"; "gpu" alone gives GPU mode all 15 workers). TESTS: the test files (default tests/;
# 2026-12-05 a cold H100 ran half the suite's 8700 tests in 470 s: the first use of each kernel
# is built by NVIDIA's compiler, so run it in two calls, e.g. TESTS="$(ls tests/test_[a-l]*.py)"
# then TESTS="$(ls tests/test_[m-z]*.py)", or with GPU_CACHE carried from an earlier call).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/clgrad-suite}
mkdir -p "$OUT"
source bench/gpu/setup.sh  # wheels, PYTHONPATH, NVIDIA's ICD, GPU_CACHE
run() {  # run NAME WORKERS [env ...]
    local name=$1 n=$2; shift 2
    env "$@" CLGRAD_TEST_FAILURES="$OUT/failures_$name.txt" \
        timeout -k 10 "${SUITE_S:-520}" python3 -m pytest -v -p no:cacheprovider \
        -n "$n" --tb=line -rfE ${TESTS:-tests} > "$OUT/suite_$name.txt" 2>&1
    echo "$name: exit $? $(grep -c ' PASSED ' "$OUT/suite_$name.txt") passed," \
        "$(grep -c ' FAILED ' "$OUT/suite_$name.txt") failed; $(tail -1 "$OUT/suite_$name.txt")"
    grep ' FAILED \| ERROR ' "$OUT/suite_$name.txt" | sed 's/.*\(FAILED\|ERROR\) /  /' | head -40
}
case "${MODES:-unset gpu}" in
    "unset gpu") run unset 9 -u CLGRAD_DEVICE & run gpu 6 CLGRAD_DEVICE=gpu & ;;
    gpu) run gpu 15 CLGRAD_DEVICE=gpu & ;;
    unset) run unset 15 -u CLGRAD_DEVICE & ;;
    *) echo "MODES: expected 'unset gpu', 'gpu' or 'unset', got '$MODES'" >&2; exit 2 ;;
esac
wait
