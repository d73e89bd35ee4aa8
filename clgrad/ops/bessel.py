"""The Bessel function family (PyTorch's names): torch.special's i0e, i1, i1e (i0 itself
is clgrad/ops/math_ops.py's).

Kernels: kernels/elementwise.cl (``i0_op``, ``i0e_op``, ``i1_op``, ``i1e_op``).
"""
from __future__ import annotations

from clgrad.ops import elementwise as ew
from clgrad.ops.special import _unary_xy, _at_zero

__all__ = ["i0e", "i1", "i1e"]

i0e = _unary_xy(__name__, "i0e_op", "i0e", lambda g, x, y: ew.mul(
    g, ew.sub(ew._launch_unary("i1e_op", x), ew.mul(ew.sign(x), y))))
i0e.__doc__ = """The exponentially scaled modified Bessel function exp(-|x|) I0(x)
    elementwise (PyTorch's torch.special.i0e): 0 at +-inf.

    Accuracy: i0's series and asymptotic expansion, scaled (the latter without exp(|x|)):
              finite for every x.
    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    (i1e(x) - sgn(x) i0e(x)) g (PyTorch's).
    Kernels: kernels/elementwise.cl :: i0e_op, i1e_op
    """
i1 = _unary_xy(__name__, "i1_op", "i1", lambda g, x, y: ew.mul(g, _at_zero(
    x, 0.5, ew.sub(ew._launch_unary("i0_op", x), ew.div(y, x)))))
i1.__doc__ = """The modified Bessel function of the first kind of order 1, I1(x), elementwise
    (PyTorch's torch.special.i1): NaN at +-inf (PyTorch's).

    Accuracy: i0's series and asymptotic expansion (kernels/elementwise.cl).
    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    (i0(x) - i1(x) / x) g, 0.5 g where |x| <= eps (PyTorch's i1_backward).
    Kernels: kernels/elementwise.cl :: i1_op, i0_op
    """
i1e = _unary_xy(__name__, "i1e_op", "i1e", lambda g, x, y: ew.mul(g, _at_zero(x, 0.5, ew.sub(
    ew._launch_unary("i0e_op", x), ew.mul(y, ew.add(ew.sign(x), ew.reciprocal(x)))))))
i1e.__doc__ = """The exponentially scaled modified Bessel function exp(-|x|) I1(x)
    elementwise (PyTorch's torch.special.i1e): +-0 at +-inf.

    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    (i0e(x) - i1e(x) (sgn(x) + 1 / x)) g, 0.5 g where |x| <= eps (PyTorch's).
    Kernels: kernels/elementwise.cl :: i1e_op, i0e_op
    """


# -- torch.special's Bessel functions of kernels/bessel.cl ---------------------------------------
# Dtypes (all): float32 and float64 keep theirs; integers and bool give the default dtype;
# float16 and bfloat16 raise NotImplementedError (PyTorch's "bessel_j0_cpu" not implemented for
# 'Half'). Grad: PyTorch 2.14 records none for these (its outputs have no grad_fn, so a graph
# through them silently drops their part of a gradient); clgrad records the derivatives
# (DLMF 10.6.3, 10.29.3-4, 10.51.2), and airy_ai's backward raises NotImplementedError
# (README: "Deliberately different from PyTorch").
_FILE = "bessel.cl"


def _bessel(op: str, grad_of, kname: str = ""):
    return _unary_xy(__name__, kname or op + "_op", op, grad_of, low=False, file=_FILE)


def _no_derivative(what: str):
    """A backward that raises NotImplementedError: ``what`` is not implemented."""
    def grad_of(g, x, y):
        raise NotImplementedError(f"{what} is not implemented.")
    return grad_of


bessel_j0 = _bessel("bessel_j0", lambda g, x, y: ew.mul(g, ew.neg(bessel_j1(x))))
bessel_j1 = _bessel("bessel_j1", lambda g, x, y: ew.mul(
    g, _at_zero(x, 0.5, ew.sub(bessel_j0(x), ew.div(y, x)))))
bessel_y0 = _bessel("bessel_y0", lambda g, x, y: ew.mul(g, ew.neg(bessel_y1(x))))
bessel_y1 = _bessel("bessel_y1", lambda g, x, y: ew.mul(g, ew.sub(bessel_y0(x), ew.div(y, x))))
modified_bessel_i0 = _unary_xy(__name__, "i0_op", "modified_bessel_i0", lambda g, x, y: ew.mul(
    g, modified_bessel_i1(x)), low=False)
modified_bessel_i1 = _unary_xy(__name__, "i1_op", "modified_bessel_i1", lambda g, x, y: ew.mul(
    g, _at_zero(x, 0.5, ew.sub(modified_bessel_i0(x), ew.div(y, x)))), low=False)
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
airy_ai = _bessel("airy_ai", _no_derivative("the derivative for 'airy_ai'"))

__all__ += ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
            "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
            "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
            "airy_ai"]
