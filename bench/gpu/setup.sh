# bench/gpu/setup.sh — sourced by the bench/gpu/run*.sh scripts on the NVIDIA H200 machine
# (Python 3.12 with numpy and torch+CUDA, no pyopencl), from the repository root:
#   - installs the carried wheels of .whl/ (bench/README.md says how to fetch them) into
#     /tmp/site and puts it and the checkout on PYTHONPATH;
#   - registers NVIDIA's OpenCL ICD;
#   - with GPU_CACHE set (a folder, e.g. .gl: git ignores it), keeps the kernel caches there:
#     pyopencl's binaries and clgrad's cache (XDG_CACHE_HOME: measured conv choices, probes) and
#     NVIDIA's JIT cache (CUDA_CACHE_PATH). Each call gets a fresh machine; carrying the folder
#     back (`run`'s carry) saves the first-use builds, minutes on a zoo run. gpu_cache_out packs
#     it into $OUT/gl.tgz.aa, .ab ...
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD HYPOTHESIS_STORAGE_DIRECTORY=/tmp/hyp
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
if [ -n "${GPU_CACHE:-}" ]; then
    mkdir -p "$GPU_CACHE/xdg" "$GPU_CACHE/nv"
    export XDG_CACHE_HOME=$PWD/$GPU_CACHE/xdg CUDA_CACHE_PATH=$PWD/$GPU_CACHE/nv \
        CUDA_CACHE_MAXSIZE=1073741824
fi
gpu_cache_out() {  # pack GPU_CACHE into $OUT/gl.tgz.aa, .ab ... (15 MiB pieces: a file back
    # from $OUT is at most 16 MiB); here: cat gl.tgz.* | tar -xz, then carry the folder
    [ -n "${GPU_CACHE:-}" ] || return 0
    tar -cz "$GPU_CACHE" | split -b 15M - "$OUT/gl.tgz." && du -ch "$OUT"/gl.tgz.* | tail -1
}
