"""Compile clgrad's float16 kernel builds as NVIDIA's OpenCL compiler sees them, with clang.

NVIDIA's driver lists no cl_khr_fp16, yet its compiler runs half arithmetic under the
extension's pragma; it declares no half overloads of OpenCL C's built-ins, so clgrad's
kernels/common.h includes kernels/half_builtins.h there (CLGRAD_FP16_PRAGMA). A built-in that
file lacks, called on a half value, makes the whole program fail to build on NVIDIA only
("call to 'erfc' is ambiguous": every float16 elementwise op raised on the H200 on
2026-12-05), while Intel's, PoCL's and clang's default headers declare it. This check
rebuilds that situation: clang's OpenCL header with cl_khr_fp16 undefined (its half
built-ins absent, the halfN vector types declared by hand), the extension's pragma on,
CLGRAD_FP16_PRAGMA set, then each build below for nvptx.

    python tools/nvidia_half_check.py        # exit status 1 and the errors when one fails

Needs clang-14 (or CLANG=path, and CLANG_INC=its OpenCL header folder); the builds: the
float16 define sets clgrad's hosts make (clgrad/ops/_util.py defines_of: T=half, ACC and
SCALAR_T and OPM float), recorded from the float16 tests, one per kernel file and variant.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"

_HALF = {"T": "half", "IS_FLOAT": 1, "ACC": "float", "SCALAR_T": "float", "OPM": "float"}
BUILDS = [  # (file, defines): float16 builds as the hosts make them
    ("elementwise.cl", _HALF),
    ("elementwise.cl", dict(_HALF, CONTIG=1)),
    ("activation.cl", _HALF),
    ("gamma.cl", _HALF),  # (torch.igamma's float16; bessel.cl and polynomial.cl have none)
    ("activation.cl", dict(_HALF, CONTIG=1)),
    ("loss.cl", dict(_HALF, WG=1)),
    ("loss.cl", dict(_HALF, WG=64, LOSS_T="float")),
    ("dropout.cl", _HALF),
    ("pool.cl", _HALF),
    ("norm.cl", _HALF),
    ("optim.cl", _HALF),
    ("conv_im2col_any.cl", _HALF),
    ("copy.cl", {"S": "half", "D": "float"}),
    ("copy.cl", {"S": "float", "D": "half", "CONTIG": 1}),
    ("copy.cl", {"S": "half", "D": "uchar", "D_VIA_LONG": 1}),
    ("copy.cl", {"S": "ushort", "D": "half", "BF16": 1, "S_BF16": 1}),
    ("reduce.cl", {"T": "half", "OUT": "half", "ACC": "float", "ACC_FLOAT": 1, "OP_SUM": 1,
                   "WG": 32}),
    ("reduce.cl", {"T": "half", "OUT": "half", "ACC": "half", "ACC_FLOAT": 1, "ARG": 1,
                   "OP_MAX": 1, "WG": 32}),
    ("matmul.cl", dict(_HALF, GEMM_TILED=1, A_LOAD=1, B_LOAD=2, I32=1, TSM=128, TSN=128,
                       TSK=16, WPTM=8, WPTN=4)),
]


def clang() -> tuple[str, str] | None:
    """(the clang binary, its OpenCL header folder), or None where there is none."""
    exe = os.environ.get("CLANG") or shutil.which("clang-14")
    inc = os.environ.get("CLANG_INC") or next(iter(sorted(glob.glob(
        "/usr/lib/llvm-14/lib/clang/14*/include"))), None)
    if not exe or not inc or not Path(inc, "opencl-c.h").exists():
        return None
    return exe, inc


def check(file: str, defines: dict, exe: str, inc: str) -> str:
    """The compiler's errors for one build ('' when it builds)."""
    with tempfile.TemporaryDirectory() as tmp:
        wrap = Path(tmp, "wrap.cl")
        types = "".join(f"typedef half half{n} __attribute__((ext_vector_type({n})));\n"
                        for n in (2, 3, 4, 8, 16))
        wrap.write_text("#undef cl_khr_fp16\n#include <opencl-c.h>\n"
                        "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" + types +
                        f'#include "{KERNELS / file}"\n')
        cmd = [exe, "-cc1", "-triple", "nvptx64-nvidia-cuda", "-target-cpu", "sm_80", "-x",
               "cl", "-cl-std=CL1.2", "-cl-ext=+cl_khr_fp16,+cl_khr_fp64", "-I", inc, "-I",
               str(KERNELS), "-DCLGRAD_HAS_FP64=1", "-DCLGRAD_FP16_PRAGMA=1",
               *[f"-D{k}={v}" for k, v in sorted(defines.items())], "-ferror-limit", "0",
               "-fsyntax-only", str(wrap)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        return "\n".join(line for line in r.stderr.splitlines() if "error:" in line)


def main() -> int:
    found = clang()
    if found is None:
        print("nvidia_half_check: no clang-14 with its OpenCL header (set CLANG, CLANG_INC)")
        return 2
    bad = 0
    for file, defines in BUILDS:
        err = check(file, defines, *found)
        print(f"{'FAIL' if err else 'ok  '} {file} {defines}")
        if err:
            bad += 1
            print(err)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
