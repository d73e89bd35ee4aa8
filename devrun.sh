#!/usr/bin/env bash
# device run helper (not committed): devrun.sh MODE
set -u
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
if [ -n "${NVONLY:-}" ]; then mkdir -p /tmp/nv && echo libnvidia-opencl.so.1 > /tmp/nv/nvidia.icd; export OCL_ICD_VENDORS=/tmp/nv; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD
mkdir -p .gl/cache .gl/pocl
export XDG_CACHE_HOME=$PWD/.gl/cache POCL_CACHE_DIR=$PWD/.gl/pocl POCL_MAX_PTHREAD_COUNT=1
export HYPOTHESIS_STORAGE_DIRECTORY=/tmp/hyp
nvidia-smi -L > $OUT/smi.txt 2>&1
start=$(date +%s)
timeout 240 python3 -c "
from clgrad import runtime
for r in runtime.devices(): print(r)
" > $OUT/devices.txt 2>&1
echo "devices: $(( $(date +%s) - start )) s" >> $OUT/devices.txt
left=$(( ${LIMIT:-560} - ($(date +%s) - start) ))
shift 0
eval "$@"
