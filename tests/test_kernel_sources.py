"""Static checks of kernels/*.cl: no unsuffixed floating literal in code float32 builds compile.

An unsuffixed literal (``0.75``, ``1e-5``, ``.5``) is a double in OpenCL C. A device without
cl_khr_fp64 may refuse the source or silently demote it (clang: "double precision constant
requires cl_khr_fp64, casting to single precision"), and where doubles exist it turns float
arithmetic into double. A cast, ``(T)0.75``, still makes the compiler see a double literal, so
it does not count as a fix: write ``0.75f`` (exact in float32 and in double), or an integer
``(T)1``. The one exemption is code that only double builds compile: the branch of an ``#if``
whose condition names IS_DOUBLE or CLGRAD_HAS_FP64 positively (``#ifdef IS_DOUBLE``,
``#if defined(IS_DOUBLE)``), not its ``#else``.
"""
import re
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
SOURCES = sorted(KERNELS.glob("*.cl")) + sorted(KERNELS.glob("*.h"))
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_FLOAT = re.compile(r"(?<![\w.])(?:\d+\.\d*|\.\d+|\d+(?=[eE][+-]?\d))(?:[eE][+-]?\d+)?"
                    r"(?![\w.])")
_DOUBLE_ONLY = re.compile(r"^\s*#\s*(?:ifdef\s+(?:IS_DOUBLE|CLGRAD_HAS_FP64)\b|"
                          r"(?:el)?if\s+defined\s*\(?\s*(?:IS_DOUBLE|CLGRAD_HAS_FP64)\b)")


# WC(v) (elementwise.cl's working-type constant): v##f in float builds, v in double ones;
# GFC(v) (gamma.cl's prefactor constant): WC(v) where the device lacks fp64, else a double
_WC = re.compile(r"\b(?:WC|GFC)\(\s*[-+]?[\d.]+(?:[eE][+-]?\d+)?\s*\)")


def unsuffixed_literals(text: str):
    """(line number, literal) for each unsuffixed floating literal outside double-only code
    (a literal inside WC(...) or GFC(...) gets its suffix from the macro)."""
    text = _COMMENTS.sub(lambda m: "\n" * m.group().count("\n"), text)
    text = _WC.sub("WC()", text)
    found, stack = [], []               # stack: one "double only?" flag per open #if
    for no, line in enumerate(text.splitlines(), 1):
        directive = re.match(r"^\s*#\s*(\w+)", line)
        if directive:
            word = directive.group(1)
            if word in ("if", "ifdef", "ifndef"):
                stack.append(bool(_DOUBLE_ONLY.match(line)))
            elif word == "elif" and stack:
                stack[-1] = bool(_DOUBLE_ONLY.match(line))
            elif word == "else" and stack:
                stack[-1] = False
            elif word == "endif" and stack:
                stack.pop()
            if word != "define":
                continue                # a #define's body is code: it is checked below
        if any(stack):
            continue
        found += [(no, m.group()) for m in _FLOAT.finditer(line)]
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_no_unsuffixed_float_literals(path):
    bad = unsuffixed_literals(path.read_text())
    assert not bad, (f"kernels/{path.name}: unsuffixed floating literal(s) {bad} (line, text) "
                     f"in code float32 builds compile; write them with an f suffix")


def test_the_rule_itself():
    src = """
    T a = x * (T)0.75;        // flagged: a cast still compiles a double literal
    T b = 2.5f + 1e-3F + (T)1 + 0x1E5u + 1.5e-3f;   // fine
    #define EPS 1e-5
    /* 3.0 in a comment */
    #ifdef IS_DOUBLE
    double c = 0.1;           // double-only code: allowed
    #else
    float c = .5;             // flagged: the float32 branch
    #endif
    #if defined(IS_DOUBLE) && WG > 1
    double d = 2.;
    #endif
    """
    assert [lit for _, lit in unsuffixed_literals(src)] == ["0.75", "1e-5", ".5"]
    assert len(SOURCES) > 10


def test_the_literal_check_reads_wc_as_suffixed():
    """WC(1.5) is 1.5f in float builds (elementwise.cl's macro): not flagged; a bare 1.5 is."""
    assert unsuffixed_literals("x = WC(1.5) * y + WC(2.25E-2);") == []
    assert unsuffixed_literals("x = WC(1.5) * 1.5;") == [(1, "1.5")]
    assert unsuffixed_literals("x = GFC(0.5) * y;") == []
