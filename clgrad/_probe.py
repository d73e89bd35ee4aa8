"""Probe OpenCL devices: can this runtime build and run what clgrad ships? One JSON line each.

Run by ``clgrad.runtime`` as a separate process, so that a runtime which crashes, aborts or
hangs while compiling cannot take the user's process with it::

    python _probe.py [--kernels DIR] [--width W] [--part I/K] [--threads T] P:D [P:D ...]

It imports only pyopencl and NumPy, never the clgrad package (``clgrad.runtime.device`` imports
``build_options`` from here). For each device it

1. builds and runs one tiny kernel (a by-value struct argument, 64-bit index arithmetic, float
   division and sqrt, a barrier) and checks its result;
2. with ``--kernels DIR``, builds a representative set of the programs clgrad ships
   (``programs``: every kernel file, float32 and float64 where the device has fp64, the
   vector-width variants at width W) the way ``Device`` builds them (same options, through
   pyopencl's binary cache), then re-creates each from its binary, as a later process loading
   the cache does, and checks that every kernel is still there: the kernels the source build
   reported, and every ``__kernel`` the file defines outside ``#if`` blocks. PoCL 3.0 (LLVM 14)
   on AMD Zen 4 returns programs without their kernels from the binary, or aborts in LLVM while
   generating code for 16-float vectors: without this check it passed the tiny probe and then
   failed inside ops. ``--part I/K`` builds programs I, I + K, I + 2K ... only: the parent
   runs K such processes at once, as PoCL builds one program at a time a process (86 programs:
   465 s in one process on a 2-core AMD EPYC, 240 s in two), and ``--threads T`` the builds of
   one process in T threads (0: one per core, at most 8).

Output: before each program ``{"index": "P:D", "building": "file (defines)"}`` (so the parent
can name the program when the compiler takes the process down), then
``{"index": "P:D", "usable": bool, "reason": str, "programs": int, "fp16": bool,
"fp16_how": str}``; the reason is one line; ``fp16`` is ``probe_fp16``'s verdict (float16:
listed, or a GPU compiler that runs half arithmetic right without listing it).
The process ends with ``os._exit`` once its output is flushed: PoCL's teardown can abort
("still have references to IRs") after a failed build, which must not turn a verdict into a
crash.
"""
import json
import os
import re
import sys

# The probe kernel exercises what every clgrad kernel relies on: a by-value struct argument,
# 64-bit integer index arithmetic, float division and sqrt, and a barrier in a work-group.
SOURCE = r"""
typedef struct { long offset; long stride; } view_t;
__kernel void probe(__global float *out, __global const float *x, const view_t v, const long n) {
    __local float tile[64];
    long i = get_global_id(0);
    int l = get_local_id(0);
    tile[l] = i < n ? x[v.offset + i * v.stride] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) out[i] = sqrt(tile[l]) / 3.0f + tile[63 - l];
}
"""

# float16 where the driver does not list cl_khr_fp16 (NVIDIA's OpenCL): its compiler may still
# build ``half`` arithmetic under the extension's pragma (bench/gpu/fp16_probe.py: the H200's
# does, and rounds as IEEE binary16). Each operation's result is checked against NumPy's
# float16 (a float32 operation rounded once to half: correctly rounded for +, -, *, / of
# halves, since float32 carries more than twice half's 11 bits), on normal numbers only.
HALF_SOURCE = r"""
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__kernel void half_probe(__global half *out, __global const half *a, __global const half *b,
                         __global const float *f) {
    size_t i = get_global_id(0);
    half x = a[i], y = b[i];
    out[6 * i] = x + y;
    out[6 * i + 1] = x - y;
    out[6 * i + 2] = x * y;
    out[6 * i + 3] = x / y;
    out[6 * i + 4] = (half)f[i];
    out[6 * i + 5] = (half)((float)x * 0.5f);
}
"""

# ... and its half built-ins: NVIDIA's compiler declares none of them (exp, isnan, vload8 of a
# half are ambiguous or missing), so kernels/common.h includes kernels/half_builtins.h there,
# whose overloads compute in float and round once to half. Built as the kernels are (-I, the
# pragma define); exp and sqrt may be one unit in the last place off NumPy's float16 of the
# float32 result (double rounding), isnan and fmax (NaN ignored) must be exact.
HALF_BUILTINS_SOURCE = r"""
#include "common.h"
__kernel void half_builtins_probe(__global half *out, __global const half *a) {
    size_t i = get_global_id(0);
    half x = a[i];
    out[3 * i] = exp(x);
    out[3 * i + 1] = isnan(x) ? (half)1 : (half)0;
    out[3 * i + 2] = sqrt(fabs(x));
}
__kernel void half_vec_probe(__global half *out, __global const half *a) {
    size_t i = get_global_id(0);
    vstore8(fmax(vload8(i, a), (half)0), i, out);
}
"""

POCL = "Portable Computing Language"
# Every context and program the probe makes stays referenced until os._exit: PoCL aborts the
# process ("still have references to IRs - can't release LLVM context") when a context is
# released after a build of it went wrong, which would hide the verdict behind a crash.
_KEEP: list = []


# pyopencl's binary cache serialises its reads and writes with a lock file in the cache folder
# (created with O_EXCL, removed after one read or write: milliseconds). A process killed while
# holding it (SIGKILL, MPI_Abort ending the other ranks, the OOM killer, a timeout) leaves the
# file behind, and every later build in every process then waits 60 s for it, warns, and builds
# without the cache: a training job under mpiexec started just after an aborted one took minutes
# per rank. A lock older than STALE_LOCK_S is therefore taken to be dead and removed before
# each build: Device._build, capture's replay probe, and here before the probes and before
# each program of the check.
STALE_LOCK_S = 15


def pyopencl_cache_dir() -> str:
    """The folder where pyopencl caches compiled programs (its own rule, for this Python)."""
    import platformdirs
    cache = os.environ.get("XDG_CACHE_HOME") if sys.platform == "darwin" else None
    root = (os.path.join(cache, "pyopencl") if cache
            else platformdirs.user_cache_dir("pyopencl", "pyopencl"))
    version = ".".join(str(i) for i in sys.version_info)
    return os.path.join(root, f"pyopencl-compiler-cache-v2-py{version}")


def settle_cache_lock(wait_s: float = STALE_LOCK_S + 1.0) -> bool:
    """Before a build through pyopencl's binary cache: wait up to ``wait_s`` seconds while the
    cache's lock file is young (another process reading or writing), and remove it once it is
    older than STALE_LOCK_S seconds (its holder died). True when a dead lock was removed.
    Never raises: a folder that cannot be read leaves the decision to pyopencl; nothing is
    done under PYOPENCL_NO_CACHE (no cache, no lock).

    Several processes may find the same dead lock: each renames it to a name of its own
    first (one rename wins), and a file that is not the one it judged (same inode and
    modification time: a live holder's lock made meanwhile) is linked back, never deleted."""
    import time
    if os.environ.get("PYOPENCL_NO_CACHE", "").strip().lower() in ("1", "true", "yes", "on",
                                                                   "y", "t"):
        return False  # (pyopencl's strtobool: "0" and "false" keep its cache)
    try:
        lock = os.path.join(pyopencl_cache_dir(), "lock")
    except Exception:  # noqa: BLE001 -- (platformdirs missing: pyopencl decides)
        return False
    deadline = time.monotonic() + wait_s
    while True:
        try:
            st = os.stat(lock)
        except OSError:          # no lock (the usual case), or no cache folder yet
            return False
        if time.time() - st.st_mtime > STALE_LOCK_S:
            mine = f"{lock}.stale-{os.getpid()}-{time.monotonic_ns()}"
            try:
                os.rename(lock, mine)
            except OSError:      # another process took it first
                return False
            try:
                got = os.stat(mine)
                if (got.st_ino, got.st_mtime) != (st.st_ino, st.st_mtime):
                    try:         # a live lock made between the stat and the rename
                        os.link(mine, lock)
                    except OSError:
                        pass
                    return False
                return True
            finally:
                try:
                    os.unlink(mine)
                except OSError:
                    pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def fp32_options(cl, device) -> list:
    """Build options that make float32 division and sqrt correctly rounded where the device
    advertises CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT (OpenCL 1.2+, section 5.8.4.3)."""
    flag = getattr(cl.device_fp_config, "CORRECTLY_ROUNDED_DIVIDE_SQRT", 0)
    try:
        config = device.single_fp_config
    except Exception:  # noqa: BLE001 — a device that cannot answer gets no extra option
        return []
    return ["-cl-fp32-correctly-rounded-divide-sqrt"] if flag and config & flag else []


def is_cpu(cl, device) -> bool:
    """Whether pyopencl device ``device`` is of type CL_DEVICE_TYPE_CPU."""
    return bool(device.type & cl.device_type.CPU)


def has_fp64(device) -> bool:
    """Whether ``device`` has float64: cl_khr_fp64, or a double config (OpenCL 3.0 optional)."""
    return "cl_khr_fp64" in device.extensions or bool(getattr(device, "double_fp_config", 0))


def build_options(cl, device) -> list:
    """The options every clgrad build on ``device`` carries besides ``-I`` and the defines
    (``Device.build_options``): correctly rounded fp32 division/sqrt, PoCL's CPU switches, the
    CPU target-arch marker and CLGRAD_HAS_FP64."""
    opts = fp32_options(cl, device)
    cpu = is_cpu(cl, device)
    if cpu and device.platform.name.strip() == POCL:
        # PoCL's exp is a scalar library call that keeps its work-item loops from vectorising
        # (SiLU 12x slower than a ReLU): kernels/common.h's EXP_T is arithmetic. Its compiler
        # vectorises plain loops inside a work item (copy.cl's copy_runs writes vectors by hand
        # for the runtimes that do not: Intel's took 2x as long).
        opts += ["-DPOLY_EXP=1", "-DLOOP_VECTORIZER=1"]
    arch = os.environ.get("CL_CONFIG_CPU_TARGET_ARCH", "")
    if cpu and arch:
        # Intel's runtime compiles for that instruction set (core-avx2: the AVX2 kernels
        # measured on an AVX-512 machine), which pyopencl's binary cache does not key on: a
        # later run without it loaded the AVX2 binaries (2-3x slower conv layers). A define
        # that no kernel reads keys the cache on it.
        opts += ["-DCPU_TARGET_ARCH_" + "".join(ch if ch.isalnum() else "_" for ch in arch)]
    if has_fp64(device):
        opts.append("-DCLGRAD_HAS_FP64=1")
    return opts


def _dt(t: str) -> dict:
    """The defines ops/_util.defines_for gives element type ``t`` (an OpenCL C type name)."""
    d = {"T": t}
    if t in ("float", "double", "half"):
        d["IS_FLOAT"] = 1
    flag = {"double": "IS_DOUBLE", "long": "IS_LONG", "int": "IS_INT"}.get(t)
    if flag:
        d[flag] = 1
    return d


def programs(cpu: bool, width: int, fp64: bool) -> list:
    """(kernel file, defines) pairs covering every kernel file clgrad ships, as its planners
    build them: float32 (and float64 where the device has it; int64 and uint8 for the files
    that serve integers), the CPU kernels at float vector width ``width`` (16 AVX-512, 8 AVX2;
    float64 at half of it) on CPUs, the GPU kernels on other devices. tests/test_device.py
    builds every entry on the test device, so a define an ops module renames shows there."""
    out = []
    floats = ("float", "double") if fp64 else ("float",)
    for t in floats:
        f, w = _dt(t), (width // 2 if t == "double" else width) if cpu else 1
        dacc = {"IS_DOUBLE_ACC": 1} if t == "double" else {}  # reduce's float64 sums
        out += [("elementwise.cl", {**f, "CONTIG": 1}), ("elementwise.cl", {**f, "ROWS2D": 2}),
                ("activation.cl", f), ("copy.cl", {"S": t, "D": t, "CONTIG": 1}),
                ("copy.cl", {"S": t, "D": t, "RUNS": 2}),
                ("copy.cl", {"S": t, "D": t, "CAT_SLOTS": 8, **{f"S{i}": t for i in range(8)},
                             "CAT_BITS": "long" if t == "double" else "int"}),
                ("reduce.cl", {**f, "ACC": t, "OUT": t, "OP_SUM": 1, "WG": 1, "ACC_FLOAT": 1,
                               "RUNS": 1, "IUNIT": 1, **dacc}),
                ("reduce.cl", {**f, "ACC": t, "OUT": t, "OP_MAX": 1, "WG": 32, "ARG": 1,
                               "ACC_FLOAT": 1}),
                ("reduce.cl", {**f, "ACC": t, "OUT": t, "OP_SUM": 1, "WG": 1, "ACC_FLOAT": 1,
                               "COLS": 1, "VW": 8, "NV": 4, "WO": 1, "WR": 1, "XUNIT": 1,
                               "CB": 8, "OVEC": 1, **dacc}),
                ("index.cl", f), ("loss.cl", {**f, "WG": 64}), ("norm.cl", {**f, "WG": 64}),
                ("norm.cl", {**f, "UNIT": 1}), ("pool.cl", f), ("padding.cl", f),
                ("optim.cl", {**f, "MOMENTUM": 1, "CONTIG": 1}), ("dropout.cl", f),
                ("upsample.cl", f), ("grid_sample.cl", f), ("numeric.cl", {"T": t}),
                ("scan.cl", {"T": t, "ACC": t, "OP_SUM": 1}),
                ("bessel.cl", f), ("gamma.cl", f), ("polynomial.cl", f), ("ctc_loss.cl", f),
                ("sort.cl", {**f, "KCAP": 8}), ("sort.cl", {**f, "SORT_P": 64, "WG": 32}),
                ("conv_direct_any.cl", f), ("conv_im2col_any.cl", f),
                ("conv_winograd.cl", {**f, "WM": 2}), ("conv_winograd.cl", {**f, "WM": 4}),
                ("conv_winograd.cl", {**f, "WM": 2, "KS": 5})]
        if cpu:
            out += [("conv_blocked_cpu.cl", {**f, "BW": w, "MB": 2, "PX": 8, "TK": 8}),
                    ("conv_blocked_cpu.cl", {**f, "BW": w, "MB": 1, "PX": 16, "TK": 16}),
                    ("conv_pw_cpu.cl", {**f, "MR": 6, "NV": 4, "VW": w, "KC": 256,
                                        "HAS_BIAS": 1}),
                    ("conv_pw_cpu.cl", {**f, "MR": 6, "NV": 4, "VW": w, "KC": 256,
                                        "B_VEC": 1, "C_VEC": 1}),
                    ("conv_dw_cpu.cl", {**f, "WIDE": 1}), ("conv_igemm_cpu.cl", f),
                    ("conv_igemm_cpu.cl", {**f, "WIDE": 1}),
                    ("matmul.cl", {**f, "MR": 12, "NV": 2, "MT": 16, "NT": 1, "KC": 256,
                                   "GEMM_CPU": 1, "VW": w, "B_PACK": 1, "C_VEC": 1})]
        else:
            out += [("conv_gemm_gpu.cl", {**f, "TS": 64, "WPT": 4, "TK": 16}),
                    ("conv_igemm_gpu.cl", {**f, "KH": 3, "KW": 3, "SH": 1, "SW": 1, "DH": 1,
                                           "DW": 1, "UH": 1, "UW": 1, "I32": 1, "TSM": 64,
                                           "TSN": 64, "TSK": 16, "WPTM": 4, "WPTN": 4,
                                           "P32": 1}),
                    ("conv_dw_gpu.cl", {**f, "KH": 3, "KW": 3, "SH": 1, "SW": 1, "DH": 1,
                                        "DW": 1, "UH": 1, "UW": 1, "XS1": 1, "YS1": 1, "I32": 1,
                                        "VX": 4, "VY": 1}),
                    ("matmul.cl", {**f, "GEMM_TILED": 1, "TSM": 64, "TSN": 64, "TSK": 16,
                                   "WPTM": 4, "WPTN": 4, "A_LOAD": 1, "B_LOAD": 1})]
    for t in ("long", "uchar"):
        out += [("elementwise.cl", {**_dt(t), "CONTIG": 1}), ("index.cl", _dt(t)),
                ("reduce.cl", {**_dt(t), "ACC": "long", "OUT": "long", "OP_SUM": 1, "WG": 32})]
    return out


_KERNEL = re.compile(r"__kernel\s+void\s+(\w+)\s*\(")


def unconditional_kernels(source: str) -> set:
    """Names of the kernels ``source`` defines outside every ``#if``/``#ifdef`` block and
    outside macro bodies: a build with any defines must contain them."""
    names, depth, continued = set(), 0, False
    for line in source.splitlines():
        s = line.strip()
        in_macro = continued or s.startswith("#define")
        continued = line.rstrip().endswith("\\")
        if s.startswith("#if"):
            depth += 1
        elif s.startswith("#endif"):
            depth -= 1
        elif depth == 0 and not in_macro:
            names.update(_KERNEL.findall(line))
    return names


def kernel_names(cl, prg) -> set:
    """The kernels a built program holds (CL_PROGRAM_KERNEL_NAMES)."""
    return {n for n in prg.get_info(cl.program_info.KERNEL_NAMES).split(";") if n}


def describe(file: str, defines: dict) -> str:
    """'kernels/<file> (K=V ...)': how the check's lines and reasons name a program."""
    return f"kernels/{file} ({' '.join(f'{k}={v}' for k, v in defines.items())})"


def check_program(cl, ctx, device, kdir: str, file: str, defines: dict) -> str:
    """'' when ``file`` built with ``defines`` holds every kernel it should, from source and
    from its binary; else one line saying what is missing."""
    with open(os.path.join(kdir, file)) as f:
        src = f.read()
    opts = [f"-I{kdir}"] + [f"-D{k}={v}" for k, v in sorted(defines.items())]
    opts += build_options(cl, device)
    prg = cl.Program(ctx, src)
    _KEEP.append(prg)
    settle_cache_lock()
    prg = prg.build(options=opts)  # through pyopencl's binary cache
    _KEEP.append(prg)
    built = kernel_names(cl, prg)
    binary = prg.get_info(cl.program_info.BINARIES)[0]
    again = cl.Program(ctx, [device], [binary])
    _KEEP.append(again)
    again.build(options=opts)
    reloaded = kernel_names(cl, again)
    want = built | unconditional_kernels(src)
    if not want:
        return f"{describe(file, defines)} built with no kernel in it"
    for how, got in (("built", built), ("re-created from its binary", reloaded)):
        lost = sorted(want - got)
        if lost:
            return (f"{describe(file, defines)} {how} lacks kernel(s) {', '.join(lost)} "
                    f"(has {len(got)} of {len(want)})")
    return ""


def probe_one(cl, np, device) -> tuple:
    """(usable, reason) of the tiny probe kernel on one pyopencl device."""
    try:
        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx)
        prg = cl.Program(ctx, SOURCE).build(options=fp32_options(cl, device))
        n = 64
        x = np.arange(2 * n, dtype=np.float32)
        mf = cl.mem_flags
        xb = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
        ob = cl.Buffer(ctx, mf.WRITE_ONLY, size=4 * n)
        view = np.array([1, 2], dtype=np.int64)
        prg.probe(queue, (n,), (n,), ob, xb, view, np.int64(n))
        out = np.empty(n, dtype=np.float32)
        cl.enqueue_copy(queue, out, ob)
        queue.finish()
    except Exception as e:  # noqa: BLE001 — any failure makes the device unusable
        return False, _one_line(e)
    tile = x[1::2][:n]
    want = np.sqrt(tile) / np.float32(3) + tile[::-1]
    if not np.allclose(out, want, rtol=1e-5, atol=1e-5):
        bad = int(np.argmax(np.abs(out - want)))
        return False, f"wrong result from the probe kernel (element {bad}: {out[bad]} != " \
                      f"{want[bad]})"
    return True, "ok"


def probe_fp16(cl, np, device, force: bool = False, kdir: str | None = None) -> tuple:
    """(has float16, how): ``'listed'`` when the device lists cl_khr_fp16; else, on GPUs,
    whether HALF_SOURCE builds and runs right on it (``'compiler'``, or the failure in one
    line). Division may be off by one unit in the last place (cl_khr_fp16's bound); the rest
    must be exact. With ``kdir`` (the kernels folder), HALF_BUILTINS_SOURCE must also build
    with the kernels' pragma define and match NumPy (half_builtins_probe). ``force`` (tests):
    run the kernels whatever the device lists."""
    if not force and "cl_khr_fp16" in device.extensions:
        return True, "listed"
    if not force and is_cpu(cl, device):  # PoCL rejects half variables; a failed build
        return False, "cl_khr_fp16 not listed"  # can abort it at exit
    try:
        ctx = cl.Context([device])
        _KEEP.append(ctx)
        queue = cl.CommandQueue(ctx)
        import warnings
        with warnings.catch_warnings():  # the pragma of an unlisted extension: a warning
            warnings.simplefilter("ignore", cl.CompilerWarning)
            prg = cl.Program(ctx, HALF_SOURCE).build()
        _KEEP.append(prg)
        n = 256
        rng = np.random.default_rng(0)
        sign = np.where(rng.random(n) < 0.5, -1, 1)
        a = (sign * rng.uniform(0.5, 8.0, n)).astype(np.float16)
        b = rng.uniform(0.25, 4.0, n).astype(np.float16)
        f = rng.uniform(-100.0, 100.0, n).astype(np.float32)
        mf = cl.mem_flags
        bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v) for v in (a, b, f)]
        ob = cl.Buffer(ctx, mf.WRITE_ONLY, size=2 * 6 * n)
        prg.half_probe(queue, (n,), None, ob, *bufs)
        out = np.empty((n, 6), dtype=np.float16)
        cl.enqueue_copy(queue, out, ob)
        queue.finish()
    except Exception as e:  # noqa: BLE001 — no float16 on this device
        return False, "cl_khr_fp16 not listed; half arithmetic: " + _one_line(e)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    want = np.stack([a32 + b32, a32 - b32, a32 * b32, a32 / b32, f, a32 * 0.5],
                    axis=1).astype(np.float16)
    ulps = np.abs(out.view(np.int16).astype(np.int32) - want.view(np.int16).astype(np.int32))
    ulps[:, 3] = np.maximum(ulps[:, 3] - 1, 0)  # division: 1 ulp allowed
    if ulps.max() > 0 or not np.isfinite(out).all():
        col = int(np.argmax(ulps.max(axis=0)))
        return False, (f"cl_khr_fp16 not listed; half arithmetic wrong "
                       f"({['+', '-', '*', '/', 'convert', 'scale'][col]})")
    if kdir is not None:
        return half_builtins_probe(cl, np, ctx, queue, device, kdir)
    return True, "compiler"


def half_builtins_probe(cl, np, ctx, queue, device, kdir: str) -> tuple:
    """probe_fp16's second part: (True, 'compiler') when HALF_BUILTINS_SOURCE builds as the
    kernels do (``-I kdir``, ``-DCLGRAD_FP16_PRAGMA=1``) and its exp, isnan, sqrt and vector
    fmax of halves match NumPy; else (False, the failure in one line)."""
    n = 256
    rng = np.random.default_rng(1)
    a = rng.uniform(-4.0, 4.0, n).astype(np.float16)
    a[::17] = np.nan
    try:
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cl.CompilerWarning)
            prg = cl.Program(ctx, HALF_BUILTINS_SOURCE).build(
                options=[f"-I{kdir}", "-DCLGRAD_FP16_PRAGMA=1"] + build_options(cl, device))
        _KEEP.append(prg)
        mf = cl.mem_flags
        ab = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
        ob = cl.Buffer(ctx, mf.WRITE_ONLY, size=2 * 3 * n)
        vb = cl.Buffer(ctx, mf.WRITE_ONLY, size=2 * n)
        prg.half_builtins_probe(queue, (n,), None, ob, ab)
        prg.half_vec_probe(queue, (n // 8,), None, vb, ab)
        out = np.empty((n, 3), dtype=np.float16)
        vec = np.empty(n, dtype=np.float16)
        cl.enqueue_copy(queue, out, ob)
        cl.enqueue_copy(queue, vec, vb)
        queue.finish()
    except Exception as e:  # noqa: BLE001 — the built-ins do not build or run here
        return False, "cl_khr_fp16 not listed; half built-ins: " + _one_line(e)
    a32 = a.astype(np.float32)
    with np.errstate(invalid="ignore"):
        want = np.stack([np.exp(a32), np.isnan(a32), np.sqrt(np.abs(a32))],
                        axis=1).astype(np.float16)
    nan = np.isnan(a)
    for col, name in ((0, "exp"), (2, "sqrt")):
        got, exp_ = out[~nan, col], want[~nan, col]
        ulps = np.abs(got.view(np.int16).astype(np.int32) - exp_.view(np.int16).astype(np.int32))
        if ulps.max() > 1 or not np.isnan(out[nan, col]).all():
            return False, f"cl_khr_fp16 not listed; half built-in wrong ({name})"
    if not np.array_equal(out[:, 1], want[:, 1]):
        return False, "cl_khr_fp16 not listed; half built-in wrong (isnan)"
    if not np.array_equal(vec, np.fmax(a, np.float16(0))):
        return False, "cl_khr_fp16 not listed; half built-in wrong (vload8/fmax/vstore8)"
    return True, "compiler"


def probe_programs(cl, device, kdir: str, width: int, emit, threads: int = 0,
                   part: tuple = (0, 1)) -> tuple:
    """(usable, reason, count): build ``programs(...)[i::k]`` (``part`` (i, k): this process's
    share; the parent runs k processes, runtime/discovery.py _run_program_check) on ``device``
    in ``threads`` threads (0: one per core, at most 8). ``emit(row)`` prints
    ``{"building": ...}`` before and ``{"built": ...}`` after each build, so that the parent
    can name the programs in flight when the compiler takes the process down. The reason is
    that of the first failing program of the share in table order, and count its position in
    the share; no new build starts after a failure."""
    import threading
    from concurrent.futures import ThreadPoolExecutor
    ctx = cl.Context([device])
    _KEEP.append(ctx)
    todo = programs(is_cpu(cl, device), width, has_fp64(device))[part[0]::part[1]]
    failed = threading.Event()
    emit_lock = threading.Lock()

    def one(item):
        file, defines = item
        if failed.is_set():
            return None
        name = describe(file, defines)
        with emit_lock:
            emit({"building": name})
        try:
            why = check_program(cl, ctx, device, kdir, file, defines)
        except Exception as e:  # noqa: BLE001 — a failed build makes the device unusable
            why = f"{name}: {_one_line(e)}"
        with emit_lock:
            emit({"built": name})
        if why:
            failed.set()
        return why
    n = threads or min(8, os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=n) as pool:
        results = list(pool.map(one, todo))
    for i, why in enumerate(results):
        if why:
            return False, why, i
    return True, "ok", len(todo)


def _one_line(e) -> str:
    text = " ".join(str(e).split())
    for marker in ("error:", "Error:", "ERROR:"):  # a compiler's first error says most
        at = text.find(marker)
        if at >= 0:
            text = text[at:]
            break
    return f"{type(e).__name__}: {text[:300]}"


def main(argv) -> int:
    """Probe the devices named 'P:D' in ``argv``; JSON lines on stdout (module docstring)."""
    import warnings

    import numpy as np
    import pyopencl as cl
    warnings.simplefilter("ignore", cl.CompilerWarning)  # a successful build's log: remarks
    kdir, hdir, width, specs, part, threads = None, None, None, [], (0, 1), 0
    args = iter(argv)
    for a in args:
        if a == "--kernels":
            kdir = next(args)
        elif a == "--fp16-kernels":  # the kernels folder for probe_fp16's built-ins check
            hdir = next(args)
        elif a == "--width":
            width = int(next(args))
        elif a == "--part":  # "i/k": programs i, i + k, i + 2k ... (one of k processes)
            part = tuple(int(x) for x in next(args).split("/"))
        elif a == "--threads":
            threads = int(next(args))
        else:
            specs.append(a)
    platforms = cl.get_platforms()
    settle_cache_lock()  # (the probes' builds go through pyopencl's cache too)

    for spec in specs:
        def emit(row, spec=spec):
            print(json.dumps({"index": spec, **row}), flush=True)
        pi, di = (int(s) for s in spec.split(":"))
        device = platforms[pi].get_devices()[di]
        usable, reason = probe_one(cl, np, device)
        fp16, fp16_how = (probe_fp16(cl, np, device, kdir=hdir or kdir) if usable
                          else (False, "not usable"))
        count = 0
        if usable and kdir:
            w = width or (device.native_vector_width_float if is_cpu(cl, device) else 1)
            usable, reason, count = probe_programs(cl, device, kdir, w, emit, threads, part)
        emit({"usable": usable, "reason": reason, "programs": count, "fp16": fp16,
              "fp16_how": fp16_how})
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
