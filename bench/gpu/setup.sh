# bench/gpu/setup.sh — sourced by the bench/gpu/run*.sh scripts on the NVIDIA H200 machine
# (Python 3.12 with numpy and torch+CUDA, no pyopencl), from the repository root:
#   - installs the carried wheels of .whl/ (bench/README.md says how to fetch them) into
#     /tmp/site and puts it and the checkout on PYTHONPATH;
#   - registers NVIDIA's OpenCL ICD;
#   - with GPU_CACHE set (a folder, e.g. .gl: git ignores it), keeps the kernel caches there:
#     clgrad's cache (XDG_CACHE_HOME: measured conv choices, the device check's verdict) and
#     NVIDIA's compute cache (CUDA_CACHE_PATH: every OpenCL program NVIDIA's driver built;
#     pyopencl keeps no cache of its own on NVIDIA). Each call gets a fresh machine:
#     gpu_cache_out packs the folder, less PoCL's cache, into $OUT/gl.txz.aa, .ab ... (xz,
#     ~18 MB for the whole zoo's kernels; gzip where xz is missing, ~47 MB), and a carried
#     $GPU_CACHE.txz (the pieces joined: `cat <files_at>/gl.txz.* > .gl.txz`, then `run`'s
#     carry [".whl", ".gl.txz"]; the folder itself, 356 MB, is over carry's 64 MiB) is
#     unpacked here first, so the next call starts warm.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD HYPOTHESIS_STORAGE_DIRECTORY=/tmp/hyp
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
if [ -n "${GPU_CACHE:-}" ]; then
    if [ -f "$GPU_CACHE.txz" ]; then  # carried from an earlier call (gpu_cache_out's pieces)
        tar -xf "$GPU_CACHE.txz" && echo "kernel cache: unpacked $GPU_CACHE.txz"
    fi
    mkdir -p "$GPU_CACHE/xdg" "$GPU_CACHE/nv"
    export XDG_CACHE_HOME=$PWD/$GPU_CACHE/xdg CUDA_CACHE_PATH=$PWD/$GPU_CACHE/nv \
        CUDA_CACHE_MAXSIZE=1073741824
fi
gpu_cache_out() {  # pack GPU_CACHE, less PoCL's cache, into $OUT/gl.txz.aa, .ab ... (15 MiB
    # pieces: a file back from $OUT is at most 16 MiB, and at most 8 files come back)
    [ -n "${GPU_CACHE:-}" ] || return 0
    local z=gzip
    command -v xz > /dev/null && z="xz -T0 -6"
    tar -cf - --exclude="$GPU_CACHE/xdg/pocl" "$GPU_CACHE" | $z | split -b 15M - "$OUT/gl.txz." \
        && du -ch "$OUT"/gl.txz.* | tail -1
}
