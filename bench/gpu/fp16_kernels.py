"""Which of clgrad's kernel programs build with T = half on a GPU that does not list cl_khr_fp16?
(issue 35, part 2: CLGRAD_FP16=probe on NVIDIA's OpenCL)

    python bench/gpu/fp16_kernels.py [--all]

Takes the device check's float32 program list (clgrad/_probe.py ``programs``, the GPU kernels)
and builds each with its element type made half (T, S, D, OUT; accumulators stay float, as
clgrad's float16 paths keep them) and ``-DCLGRAD_FP16_PRAGMA=1`` (kernels/common.h enables
cl_khr_fp16), as ``Device(fp16=True)`` would, on every GPU (``--all``: every device). Prints
one line per program, ``ok`` or ``FAIL`` with the compiler's first error lines, then a count;
exits 0 either way. Builds only: whether the kernels compute right is the test suite's job
(``CLGRAD_DEVICE=gpu pytest -k float16``). The list takes every float32 program, so some
configurations here are never built for float16 by clgrad and fail on any compiler: the conv
kernels (conv2d refuses float16) and reduce.cl's RUNS/COLS sums (float/double only); on the
H200 with kernels/half_builtins.h the rest build (2026-12-04d: 22 of 32).
"""
import os
import sys
import warnings
from pathlib import Path

import pyopencl as cl

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
from clgrad import _probe  # noqa: E402  (imports pyopencl only)

KDIR = str(ROOT / "kernels")


def half_defines(defines: dict) -> dict:
    """The float32 program's defines with its element types made half (accumulators float)."""
    out = {}
    for k, v in defines.items():
        if v == "float" and k != "ACC":
            v = "half"
        out[k] = v
    return out


def first_errors(e: Exception, n: int = 3) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if "error" in ln.lower()]
    return " | ".join(lines[:n])[:400] or " ".join(str(e).split())[:400]


def main():
    every = "--all" in sys.argv
    warnings.simplefilter("ignore", cl.CompilerWarning)
    for plat in cl.get_platforms():
        for dev in plat.get_devices():
            if not every and not dev.type & cl.device_type.GPU:
                continue
            print(f"{plat.name.strip()} / {dev.name.strip()}: cl_khr_fp16 listed: "
                  f"{'cl_khr_fp16' in dev.extensions}")
            ctx = cl.Context([dev])
            bad = 0
            todo = [(f, half_defines(d)) for f, d in _probe.programs(False, 1, False)
                    if d.get("T") == "float" or d.get("S") == "float"]
            for file, defines in todo:
                src = (Path(KDIR) / file).read_text()
                opts = [f"-I{KDIR}"] + [f"-D{k}={v}" for k, v in sorted(defines.items())]
                opts += _probe.build_options(cl, dev) + ["-DCLGRAD_FP16_PRAGMA=1"]
                try:
                    cl.Program(ctx, src).build(options=opts)
                    print(f"  ok    {_probe.describe(file, defines)}")
                except cl.Error as e:
                    bad += 1
                    print(f"  FAIL  {_probe.describe(file, defines)}: {first_errors(e)}")
            print(f"  {len(todo) - bad} of {len(todo)} programs built")
    sys.stdout.flush()
    os._exit(0)  # (PoCL can abort at teardown after a failed build)


if __name__ == "__main__":
    main()
