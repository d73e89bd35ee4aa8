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
