"""The error function family (PyTorch's names): erfinv, erfc (torch.*), and
torch.special's erfcx, ndtr (the normal CDF), log_ndtr and ndtri (its inverse); erf itself is
clgrad/ops/composite.py's.

Kernels: kernels/elementwise.cl (``erfinv_op``, ``erfc_op``, ``erfcx_op``, ``ndtr_op``,
``log_ndtr_op``, ``ndtri_op``); erfinv has no OpenCL built-in: see its kernel's comment for
the approximation and its error.
"""
from __future__ import annotations

import math

from clgrad.ops import elementwise as ew
from clgrad.ops.special import _here, _unary_xy

__all__ = ["erfinv", "erfc", "erfcx", "ndtr", "log_ndtr", "ndtri"]

_SQRT_2PI = math.sqrt(2.0 * math.pi)

erfinv = _here(__name__, ew._unary_float(
    "erfinv_op", "erfinv",
    lambda g, x, y: ew.mul(g, ew.mul(ew.exp(ew.mul(y, y)), math.sqrt(math.pi) / 2)),
    double=True))  # (recording ops: differentiable again, create_graph)
erfinv.__doc__ = """The inverse error function elementwise: erf(erfinv(y)) = y on (-1, 1);
    erfinv(+-1) = +-inf, NaN outside [-1, 1] (PyTorch's torch.erfinv).

    Shapes:  any, kept. Dtypes: floats keep theirs; integers and bool give the default dtype.
    Grad:    g * sqrt(pi) / 2 * exp(erfinv(y)^2) (PyTorch's).
    Accuracy: OpenCL has no erfinv: Giles' approximation (M. Giles, "Approximating the
             erfinv function", GPU Computing Gems Jade Edition, 2011) refined by Halley
             steps on erf, or on erfc in the tails (|y| > 0.5), so the error is that of the
             device's erf/erfc: measured against a float64 reference (the inverse of
             math.erf / math.erfc by bisection) within 4 ulp of float32 and 1e-14 relative
             in float64 over (-1, 1), tails included (tests/test_special.py).
    Raises:  TypeError for a non-Tensor.
    Kernels: kernels/elementwise.cl :: erfinv_op
    """
erfc = _here(__name__, ew._unary_float(
    "erfc_op", "erfc",
    lambda g, x, y: ew.mul(g, ew.mul(ew.exp(ew.neg(ew.mul(x, x))), -2.0 / math.sqrt(math.pi))),
    "x", double=True))
erfc.__doc__ = """The complementary error function 1 - erf(x) elementwise, accurate where
    erf(x) is close to 1 (PyTorch's torch.erfc).

    Dtypes:  floats keep theirs; integers and bool give the default dtype.
    Grad:    -2 / sqrt(pi) * exp(-x^2) * g.
    Kernels: kernels/elementwise.cl :: erfc_op (OpenCL's erfc)
    """
erfcx = _unary_xy(__name__, "erfcx_op", "erfcx", lambda g, x, y: ew.mul(
    g, ew.sub(ew.mul(ew.mul(x, y), 2.0), 2.0 / math.sqrt(math.pi))), low=False, double=True)
erfcx.__doc__ = """The scaled complementary error function exp(x^2) erfc(x) elementwise
    (PyTorch's torch.special.erfcx): finite for every x >= 0 (1 / (x sqrt(pi)) for large x),
    inf where exp(x^2) overflows for x < 0.

    Accuracy: exp(x^2) erfc(x) with x^2 kept exactly (fma) below 4 (float: 2), a continued
              fraction above; 2 exp(x^2) - erfcx(-x) below 0 (kernels/elementwise.cl's comment;
              measured in tests/test_special_ns.py).
    Dtypes:  float32, float64; integers and bool give the default dtype.
    Grad:    (2 x erfcx(x) - 2 / sqrt(pi)) g (PyTorch's).
    Raises:  NotImplementedError for float16 and bfloat16 (PyTorch's).
    Kernels: kernels/elementwise.cl :: erfcx_op
    """
ndtr = _unary_xy(__name__, "ndtr_op", "ndtr", lambda g, x, y: ew.mul(
    g, ew.mul(ew.exp(ew.mul(ew.mul(x, x), -0.5)), 1.0 / _SQRT_2PI)))
ndtr.__doc__ = """The standard normal CDF (1 + erf(x / sqrt 2)) / 2 elementwise (PyTorch's
    torch.special.ndtr), through erfc in the tails (relative accuracy in the left tail).

    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    exp(-x^2 / 2) / sqrt(2 pi) g.
    Kernels: kernels/elementwise.cl :: ndtr_op
    """
log_ndtr = _unary_xy(__name__, "log_ndtr_op", "log_ndtr", lambda g, x, y: ew.div(
    ew.mul(g, math.sqrt(2.0 / math.pi)), erfcx(ew.mul(x, -math.sqrt(0.5)))), low=False,
    double=True)
log_ndtr.__doc__ = """log(ndtr(x)) elementwise, accurate in both tails (PyTorch's
    torch.special.log_ndtr): below -1 log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 (finite where ndtr
    underflows: log_ndtr(-40) = -804.6 in float32 too), else log1p(-erfc(x / sqrt 2) / 2).

    Dtypes:  float32, float64; integers and bool give the default dtype.
    Grad:    the Mills ratio phi(x) / ndtr(x) g, as sqrt(2 / pi) / erfcx(-x / sqrt 2) g: the
             same value as PyTorch's exp(-(log_ndtr(x) + x^2 / 2)) / sqrt(2 pi) without its
             cancellation in the left tail.
    Raises:  NotImplementedError for float16 and bfloat16 (PyTorch's).
    Kernels: kernels/elementwise.cl :: log_ndtr_op, erfcx_op
    """
ndtri = _unary_xy(__name__, "ndtri_op", "ndtri", lambda g, x, y: ew.mul(
    g, ew.mul(ew.exp(ew.mul(ew.mul(y, y), 0.5)), _SQRT_2PI)), low=False, double=True)
ndtri.__doc__ = """The inverse of ndtr elementwise (PyTorch's torch.special.ndtri): -inf at 0,
    inf at 1, NaN outside [0, 1]; accurate for tiny p (ndtri(1e-30) = -11.464).

    Accuracy: Cephes' ndtri (rational approximations in p - 1/2 and in 1 / sqrt(-2 log p)),
              not through erfinv(2p - 1) (which loses tiny p): measured against a float64
              inversion of ndtr in tests/test_special_ns.py.
    Dtypes:  float32, float64; integers and bool give the default dtype.
    Grad:    sqrt(2 pi) exp(ndtri(p)^2 / 2) g (PyTorch's).
    Raises:  NotImplementedError for float16 and bfloat16 (PyTorch's).
    Kernels: kernels/elementwise.cl :: ndtri_op
    """
