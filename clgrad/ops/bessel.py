"""The Bessel function family (PyTorch's names): torch.special's i0e, i1, i1e (i0 itself
is clgrad/ops/math_ops.py's), and bessel_j0, bessel_j1, bessel_y0, bessel_y1,
modified_bessel_i0, modified_bessel_i1, modified_bessel_k0, modified_bessel_k1,
scaled_modified_bessel_k0, scaled_modified_bessel_k1, spherical_bessel_j0, airy_ai.

The latter twelve, f(input) elementwise:
Shapes:  any, kept; any strided view.
Dtypes:  float32 and float64 keep theirs; integers and bool give the default dtype.
Raises:  TypeError for a non-Tensor; NotImplementedError for float16 and bfloat16 (PyTorch's
         "bessel_j0_cpu" not implemented for 'Half').
Accuracy: measured in tests/test_special_families.py against float64 quadratures of the
         integral representations (Airy: its Maclaurin series in exact fractions); for the
         oscillating J, Y, j0 and Ai the error is relative to max(|f(x)|, min(0.1, 1/sqrt|x|))
         (near a zero any float evaluation's relative error is unbounded). PyTorch's J0, J1,
         Y0, Y1 and Ai are off by up to 6e-6 relative near x = 5 (and Ai by 2e-5 below -2.09):
         its port of Cephes drops the leading 1 of the p1evl denominators; clgrad keeps it.
Grad:    recorded (PyTorch 2.14 records none: its results have no grad_fn, so a graph through
         them silently drops their part of a gradient); airy_ai's backward raises
         NotImplementedError. README: "Deliberately different from PyTorch".
Kernels: kernels/elementwise.cl (``i0_op``, ``i0e_op``, ``i1_op``, ``i1e_op``: also
         modified_bessel_i0 and _i1), kernels/bessel.cl (``bessel_j0_op`` ... ``airy_ai_op``).
"""
from __future__ import annotations

from clgrad.ops import elementwise as ew
from clgrad.ops.special import _unary_xy, _at_zero

__all__ = ["i0e", "i1", "i1e"]

i0e = _unary_xy(__name__, "i0e_op", "i0e", lambda g, x, y: ew.mul(
    g, ew.sub(ew._launch_unary("i1e_op", x), ew.mul(ew.sign(x), y))),
    double=lambda g, x, y: ew.mul(g, ew.sub(i1e(x), ew.mul(ew.sign(x), y))))
i0e.__doc__ = """The exponentially scaled modified Bessel function exp(-|x|) I0(x)
    elementwise (PyTorch's torch.special.i0e): 0 at +-inf.

    Accuracy: i0's series and asymptotic expansion, scaled (the latter without exp(|x|)):
              finite for every x.
    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    (i1e(x) - sgn(x) i0e(x)) g (PyTorch's); differentiable again (create_graph:
             i1e recorded, the output re-attached).
    Kernels: kernels/elementwise.cl :: i0e_op, i1e_op
    """
i1 = _unary_xy(__name__, "i1_op", "i1", lambda g, x, y: ew.mul(g, _at_zero(
    x, 0.5, ew.sub(ew._launch_unary("i0_op", x), ew.div(y, x)))),
    double=lambda g, x, y: ew.mul(g, _at_zero(x, 0.5, ew.sub(modified_bessel_i0(x),
                                                              ew.div(y, x)))))
i1.__doc__ = """The modified Bessel function of the first kind of order 1, I1(x), elementwise
    (PyTorch's torch.special.i1): NaN at +-inf (PyTorch's).

    Accuracy: i0's series and asymptotic expansion (kernels/elementwise.cl).
    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    (i0(x) - i1(x) / x) g, 0.5 g where |x| <= eps (PyTorch's i1_backward);
             differentiable again (create_graph: I0 recorded, the output re-attached).
    Kernels: kernels/elementwise.cl :: i1_op, i0_op
    """
i1e = _unary_xy(__name__, "i1e_op", "i1e", lambda g, x, y: ew.mul(g, _at_zero(x, 0.5, ew.sub(
    ew._launch_unary("i0e_op", x), ew.mul(y, ew.add(ew.sign(x), ew.reciprocal(x)))))),
    double=lambda g, x, y: ew.mul(g, _at_zero(x, 0.5, ew.sub(
        i0e(x), ew.mul(y, ew.add(ew.sign(x), ew.reciprocal(x)))))))
i1e.__doc__ = """The exponentially scaled modified Bessel function exp(-|x|) I1(x)
    elementwise (PyTorch's torch.special.i1e): +-0 at +-inf.

    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    (i0e(x) - i1e(x) (sgn(x) + 1 / x)) g, 0.5 g where |x| <= eps (PyTorch's);
             differentiable again (create_graph: i0e recorded, the output re-attached).
    Kernels: kernels/elementwise.cl :: i1e_op, i0e_op
    """


# -- torch.special's Bessel functions of kernels/bessel.cl (see the module's docstring) -----------
_FILE = "bessel.cl"


def _bessel(op: str, grad_of):
    """The op of kernels/bessel.cl's ``<op>_op``, its gradient ``grad_of(g, x, y)``."""
    return _unary_xy(__name__, op + "_op", op, grad_of, low=False, file=_FILE)


def _airy_backward(g, x, y):
    """airy_ai's: Ai' is not implemented (PyTorch records no derivative)."""
    raise NotImplementedError("the derivative for 'airy_ai' is not implemented.")


bessel_j0 = _bessel("bessel_j0", lambda g, x, y: ew.mul(g, ew.neg(bessel_j1(x))))
bessel_j1 = _bessel("bessel_j1", lambda g, x, y: ew.mul(
    g, _at_zero(x, 0.5, ew.sub(bessel_j0(x), ew.div(y, x)))))
bessel_y0 = _bessel("bessel_y0", lambda g, x, y: ew.mul(g, ew.neg(bessel_y1(x))))
bessel_y1 = _bessel("bessel_y1", lambda g, x, y: ew.mul(g, ew.sub(bessel_y0(x), ew.div(y, x))))
modified_bessel_i0 = _unary_xy(__name__, "i0_op", "modified_bessel_i0", lambda g, x, y: ew.mul(
    g, modified_bessel_i1(x)), low=False, double=True)
modified_bessel_i1 = _unary_xy(__name__, "i1_op", "modified_bessel_i1", lambda g, x, y: ew.mul(
    g, _at_zero(x, 0.5, ew.sub(modified_bessel_i0(x), ew.div(y, x)))), low=False, double=True)
modified_bessel_k0 = _bessel("modified_bessel_k0", lambda g, x, y: ew.mul(
    g, ew.neg(modified_bessel_k1(x))))
modified_bessel_k1 = _bessel("modified_bessel_k1", lambda g, x, y: ew.mul(
    g, ew.neg(ew.add(modified_bessel_k0(x), ew.div(y, x)))))
scaled_modified_bessel_k0 = _bessel("scaled_modified_bessel_k0", lambda g, x, y: ew.mul(
    g, ew.sub(y, scaled_modified_bessel_k1(x))))
scaled_modified_bessel_k1 = _bessel("scaled_modified_bessel_k1", lambda g, x, y: ew.mul(
    g, ew.sub(ew.sub(y, scaled_modified_bessel_k0(x)), ew.div(y, x))))
spherical_bessel_j0 = _bessel("spherical_bessel_j0", lambda g, x, y: ew.mul(
    g, ew.neg(ew._launch_unary("spherical_bessel_j1_op", x, file=_FILE))))
airy_ai = _bessel("airy_ai", _airy_backward)

bessel_j0.__doc__ = """The Bessel function of the first kind of order 0, J0(x), elementwise
    (PyTorch's torch.special.bessel_j0; DLMF 10.2.2); NaN at +-inf (PyTorch's).

    Source:  Cephes j0.c: a rational function of x^2 with the first two zeros factored out up
             to 5, Hankel's asymptotic form (DLMF 10.17.3) with rational P, Q above.
    Accuracy: float64 5e-15, float32 12 ulp of max(|J0|, min(0.1, 1/sqrt|x|)) on [-30, 30].
    Grad:    -J1(x) g (DLMF 10.6.3).
    Kernels: kernels/bessel.cl :: bessel_j0_op
    """
bessel_j1.__doc__ = """The Bessel function of the first kind of order 1, J1(x), elementwise
    (PyTorch's torch.special.bessel_j1); odd; NaN at +-inf.

    Source:  Cephes j1.c (as bessel_j0's).
    Accuracy: float64 6.5e-15, float32 24 ulp of max(|J1|, min(0.1, 1/sqrt|x|)) on [-30, 30].
    Grad:    (J0(x) - J1(x) / x) g, 0.5 g where |x| <= eps (DLMF 10.6.2).
    Kernels: kernels/bessel.cl :: bessel_j1_op
    """
bessel_y0.__doc__ = """The Bessel function of the second kind of order 0, Y0(x), elementwise
    (PyTorch's torch.special.bessel_y0): -inf at 0, NaN below 0 and at +inf (PyTorch's).

    Source:  Cephes j0.c: R(x^2) + (2 / pi) log(x) J0(x) up to 5, Hankel's form above.
    Accuracy: float64 6.4e-15, float32 33 ulp of max(|Y0|, min(0.1, 1/sqrt x)) on [0.1, 30].
    Grad:    -Y1(x) g (DLMF 10.6.3).
    Kernels: kernels/bessel.cl :: bessel_y0_op
    """
bessel_y1.__doc__ = """The Bessel function of the second kind of order 1, Y1(x), elementwise
    (PyTorch's torch.special.bessel_y1): -inf at 0, NaN below 0 and at +inf.

    Source:  Cephes j1.c: x R(x^2) + (2 / pi) (J1(x) log x - 1 / x) up to 5, Hankel's form
             above.
    Accuracy: float64 6.2e-15, float32 23 ulp of max(|Y1|, min(0.1, 1/sqrt x)) on [0.1, 30].
    Grad:    (Y0(x) - Y1(x) / x) g (DLMF 10.6.2).
    Kernels: kernels/bessel.cl :: bessel_y1_op
    """
modified_bessel_i0.__doc__ = """The modified Bessel function of the first kind of order 0, I0(x),
    elementwise (PyTorch's torch.special.modified_bessel_i0; the values of torch.i0, whose
    kernel it is); NaN at +-inf.

    Source:  the power series and the asymptotic expansion (DLMF 10.25.2, 10.40.1), see
             kernels/elementwise.cl's bessel_i_w.
    Accuracy: float64 1.4e-15 relative, float32 5 ulp on [-30, 30].
    Grad:    I1(x) g (DLMF 10.29.3).
    Kernels: kernels/elementwise.cl :: i0_op
    """
modified_bessel_i1.__doc__ = """The modified Bessel function of the first kind of order 1, I1(x),
    elementwise (PyTorch's torch.special.modified_bessel_i1; torch.special.i1's values);
    NaN at +-inf.

    Accuracy: float64 4e-15 relative, float32 5 ulp on [-30, 30].
    Grad:    (I0(x) - I1(x) / x) g, 0.5 g where |x| <= eps (DLMF 10.29.2).
    Kernels: kernels/elementwise.cl :: i1_op
    """
modified_bessel_k0.__doc__ = """The modified Bessel function of the second kind of order 0, K0(x),
    elementwise (PyTorch's torch.special.modified_bessel_k0): inf at 0, NaN below 0, 0 at +inf.

    Source:  Cephes k0.c: a Chebyshev series in x^2 - 2 minus log(x / 2) I0(x) up to 2, then
             e^-x / sqrt(x) times a Chebyshev series in 8 / x - 2.
    Accuracy: float64 7e-16 relative, float32 3 ulp on [0.01, 40].
    Grad:    -K1(x) g (DLMF 10.29.3).
    Kernels: kernels/bessel.cl :: modified_bessel_k0_op
    """
modified_bessel_k1.__doc__ = """The modified Bessel function of the second kind of order 1, K1(x),
    elementwise (PyTorch's torch.special.modified_bessel_k1): inf at 0, NaN below 0, 0 at +inf.

    Source:  Cephes k1.c (as modified_bessel_k0's).
    Accuracy: float64 8e-16 relative, float32 4 ulp on [0.01, 40].
    Grad:    -(K0(x) + K1(x) / x) g (DLMF 10.29.2).
    Kernels: kernels/bessel.cl :: modified_bessel_k1_op
    """
scaled_modified_bessel_k0.__doc__ = """e^x K0(x) elementwise (PyTorch's
    torch.special.scaled_modified_bessel_k0): finite for every x > 0 (where K0 underflows);
    inf at 0, NaN below 0, 0 at +inf.

    Source:  Cephes k0.c's k0e.
    Accuracy: float64 5e-15 relative, float32 5 ulp on [0.01, 200].
    Grad:    (e^x K0(x) - e^x K1(x)) g.
    Kernels: kernels/bessel.cl :: scaled_modified_bessel_k0_op
    """
scaled_modified_bessel_k1.__doc__ = """e^x K1(x) elementwise (PyTorch's
    torch.special.scaled_modified_bessel_k1): inf at 0, NaN below 0, 0 at +inf.

    Source:  Cephes k1.c's k1e.
    Accuracy: float64 5e-15 relative, float32 3 ulp on [0.01, 200].
    Grad:    (e^x K1(x) (1 - 1 / x) - e^x K0(x)) g.
    Kernels: kernels/bessel.cl :: scaled_modified_bessel_k1_op
    """
spherical_bessel_j0.__doc__ = """The spherical Bessel function of the first kind of order 0,
    j0(x) = sin(x) / x, elementwise (PyTorch's torch.special.spherical_bessel_j0; DLMF
    10.49.3): 1 at 0 (its Taylor series below 0.5), 0 at +-inf.

    Accuracy: float64 4e-16, float32 2 ulp of max(|j0|, min(0.1, 1/sqrt|x|)) on [-30, 30].
    Grad:    -j1(x) g, j1(x) = sin(x) / x^2 - cos(x) / x (its Taylor series below 0.5; DLMF
             10.51.2).
    Kernels: kernels/bessel.cl :: spherical_bessel_j0_op, spherical_bessel_j1_op
    """
airy_ai.__doc__ = """The Airy function Ai(x) elementwise (PyTorch's torch.special.airy_ai; DLMF
    9.2): NaN at +-inf (PyTorch's), 0 above 103.892.

    Source:  Cephes airy.c: the Maclaurin series (DLMF 9.4.1) on (-2.09, 2.09), the
             asymptotic forms (DLMF 9.7.5, 9.7.9) with rational corrections outside.
    Accuracy: float64 9e-15, float32 57 ulp of max(|Ai|, min(0.1, 1/sqrt|x|)) on [-6, 6].
    Grad:    none: backward raises NotImplementedError ("the derivative for 'airy_ai' is not
             implemented."); PyTorch records none (README).
    Kernels: kernels/bessel.cl :: airy_ai_op
    """

__all__ += ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
            "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
            "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
            "airy_ai"]
