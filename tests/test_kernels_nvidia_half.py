"""float16 kernel builds as NVIDIA's OpenCL compiler sees them (tools/nvidia_half_check.py):
no half overloads of OpenCL's built-ins beyond kernels/half_builtins.h. A half built-in call
that file lacks builds everywhere else and fails only on NVIDIA (2026-12-05: erfc, lgamma and
hypot made every float16 elementwise op raise on the H200). Needs clang-14 with its OpenCL
header; skipped without it (the check is a compile of kernel source, no device involved)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import nvidia_half_check as nhc  # noqa: E402

FOUND = nhc.clang()


@pytest.mark.skipif(FOUND is None, reason="no clang-14 with its OpenCL header")
@pytest.mark.parametrize("file, defines", nhc.BUILDS,
                         ids=[f"{f}-{i}" for i, (f, _) in enumerate(nhc.BUILDS)])
def test_float16_builds_without_half_builtins(file, defines):
    assert nhc.check(file, defines, *FOUND) == ""


@pytest.mark.skipif(FOUND is None, reason="no clang-14 with its OpenCL header")
def test_the_check_sees_a_missing_half_builtin(tmp_path):
    """A kernel calling erfc on a half (absent from half_builtins.h) fails the check, and the
    same kernel calling it in float builds."""
    bad = tmp_path / "bad.cl"
    bad.write_text('#include "common.h"\n'
                   "__kernel void k(__global T *o) { T x = o[0]; o[0] = erfc(x); }\n")
    good = tmp_path / "good.cl"
    good.write_text('#include "common.h"\n'
                    "__kernel void k(__global T *o) { T x = o[0]; o[0] = (T)erfc((float)x); }\n")
    assert "erfc" in nhc.check(str(bad), nhc._HALF, *FOUND)
    assert nhc.check(str(good), nhc._HALF, *FOUND) == ""
