"""Elementwise math ops of PyTorch's that the other families lack: tan, asin, acos, atan,
sinh, cosh, asinh, acosh, atanh, log2, log10, exp2, sinc, logit, i0, positive; fmax, fmin,
heaviside, ldexp, gcd, lcm, nextafter. (PyTorch's other names of existing ops, ``arcsin`` ...
``arctanh``, ``sgn``, ``negative``, ``absolute``, ``multiply``, ``subtract``, ``greater`` ...
``not_equal``, are rows of the op table over these and elementwise's functions.)

Values, special values, dtypes and gradients are PyTorch 2.14's, checked by experiment
(tests/test_math_ops.py): integer and bool inputs of the float functions compute in the
default float dtype; float16 computes in float and rounds once; bfloat16 computes in float32
and rounds once (``ew.via_float32``); gradients are aten's ``derivatives.yaml`` formulas.
Where clgrad is more accurate than PyTorch, the docstring says so (sinc, i0).

Kernels: kernels/elementwise.cl, the "math ops" block (``<name>_op``, ``sinc_grad``,
``i1_op``, ``nextafter_bf16``).
"""
from __future__ import annotations

import math

from clgrad import dtypes
from clgrad.autograd import record
from clgrad.ops import bessel
from clgrad.ops import elementwise as ew
from clgrad.ops._util import zeros
from clgrad.tensor import Tensor

__all__ = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2",
           "log10", "exp2", "sinc", "logit", "i0", "positive", "fmax", "fmin", "heaviside",
           "ldexp", "gcd", "lcm", "nextafter"]

_BF16 = dtypes.bfloat16
_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _here(f, doc: str):
    """A function made by ``ew._unary_float``, named as this module's (stubs, pickling), with
    its docstring."""
    f.__module__, f.__qualname__, f.__doc__ = __name__, f.__name__, doc
    return f


def _not_implemented(op: str, dt, x: Tensor):
    kind = "cuda" if x._storage.device.kind == "gpu" else "cpu"
    raise NotImplementedError(f"\"{op}_{kind}\" not implemented for '{dtypes.torch_name(dt)}'")


# -- unary float functions: ew._unary_float(kernel, name, grad(g, x, y), reads) ----------------
def _twice(kname, op, grad_of, uses="y"):
    """ew._unary_float of a ``grad_of`` made of recording ops: differentiable again
    (create_graph, Node.double)."""
    return ew._unary_float(kname, op, grad_of, uses, double=True)


def _one_minus_square(x):
    return ew.sub(1.0, ew.mul(x, x))


tan = _here(_twice("tan_op", "tan",
                   lambda g, x, y: ew.mul(g, ew.add(ew.mul(y, y), 1.0))), """\
tan(x) elementwise (PyTorch's torch.tan). Grad: g * (1 + out^2).
    Dtypes: floats keep theirs; integers and bool give the default dtype (as every unary
    function here but positive). Kernels: kernels/elementwise.cl :: tan_op""")
asin = _here(_twice("asin_op", "asin",
                    lambda g, x, y: ew.mul(g, ew.rsqrt(_one_minus_square(x))), "x"), """\
arcsin(x) elementwise, NaN outside [-1, 1] (PyTorch's torch.asin / arcsin).
    Grad: g / sqrt(1 - x^2). Kernels: kernels/elementwise.cl :: asin_op""")
acos = _here(_twice(
    "acos_op", "acos", lambda g, x, y: ew.neg(ew.mul(g, ew.rsqrt(_one_minus_square(x)))), "x"),
    """arccos(x) elementwise, NaN outside [-1, 1] (PyTorch's torch.acos / arccos).
    Grad: -g / sqrt(1 - x^2). Kernels: kernels/elementwise.cl :: acos_op""")
atan = _here(_twice(
    "atan_op", "atan", lambda g, x, y: ew.div(g, ew.add(ew.mul(x, x), 1.0)), "x"), """\
arctan(x) elementwise, +-pi/2 at +-inf (PyTorch's torch.atan / arctan).
    Grad: g / (1 + x^2). Kernels: kernels/elementwise.cl :: atan_op""")
sinh = _here(_twice("sinh_op", "sinh", lambda g, x, y: ew.mul(g, cosh(x)), "x"), """\
sinh(x) elementwise (PyTorch's torch.sinh). Grad: g * cosh(x).
    Kernels: kernels/elementwise.cl :: sinh_op""")
cosh = _here(_twice("cosh_op", "cosh", lambda g, x, y: ew.mul(g, sinh(x)), "x"), """\
cosh(x) elementwise (PyTorch's torch.cosh). Grad: g * sinh(x).
    Kernels: kernels/elementwise.cl :: cosh_op""")
asinh = _here(_twice(
    "asinh_op", "asinh", lambda g, x, y: ew.mul(g, ew.rsqrt(ew.add(ew.mul(x, x), 1.0))), "x"),
    """arsinh(x) elementwise (PyTorch's torch.asinh / arcsinh). Grad: g / sqrt(x^2 + 1).
    Kernels: kernels/elementwise.cl :: asinh_op""")
acosh = _here(_twice(
    "acosh_op", "acosh", lambda g, x, y: ew.mul(g, ew.rsqrt(ew.sub(ew.mul(x, x), 1.0))), "x"),
    """arcosh(x) elementwise, NaN below 1 (PyTorch's torch.acosh / arccosh).
    Grad: g / sqrt(x^2 - 1). Kernels: kernels/elementwise.cl :: acosh_op""")
atanh = _here(_twice(
    "atanh_op", "atanh", lambda g, x, y: ew.div(g, _one_minus_square(x)), "x"), """\
artanh(x) elementwise: +-inf at +-1, NaN outside [-1, 1] (PyTorch's torch.atanh / arctanh).
    Grad: g / (1 - x^2). Kernels: kernels/elementwise.cl :: atanh_op""")
log2 = _here(_twice(
    "log2_op", "log2", lambda g, x, y: ew.div(g, ew.mul(x, _LN2)), "x"), """\
log2(x) elementwise: -inf at 0, NaN below (PyTorch's torch.log2). Grad: g / (x ln 2).
    Kernels: kernels/elementwise.cl :: log2_op""")
log10 = _here(_twice(
    "log10_op", "log10", lambda g, x, y: ew.div(g, ew.mul(x, _LN10)), "x"), """\
log10(x) elementwise: -inf at 0, NaN below (PyTorch's torch.log10). Grad: g / (x ln 10).
    Kernels: kernels/elementwise.cl :: log10_op""")
exp2 = _here(_twice(
    "exp2_op", "exp2", lambda g, x, y: ew.mul(g, ew.mul(y, _LN2))), """\
2^x elementwise (PyTorch's torch.exp2 / special.exp2). Grad: g * out * ln 2.
    Kernels: kernels/elementwise.cl :: exp2_op""")
sinc = _here(ew._unary_float(
    "sinc_op", "sinc", lambda g, x, y: ew._binary_grad("sinc_grad", g, x), "x",
    double=lambda g, x: ew.mul(g, _sinc_derivative(x))), """\
The normalized sinc, sin(pi x) / (pi x), 1 at 0 (PyTorch's torch.sinc / special.sinc).

    Accuracy: computed with sinpi, so exactly 0 at the integers and accurate at large |x|;
              PyTorch's sin(pi * x) / (pi * x) rounds pi * x first (float32 sinc(1) is
              -2.8e-8 there, and sinc(1000.5) off by 50 %), NaN where pi * x overflows.
    Grad:     g * (cos(pi x) - sinc(x)) / x, 0 at 0 (PyTorch's), by its series near 0;
              differentiable again (create_graph: PyTorch's formula of recorded ops,
              (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at 0, so its derivative is 0 there
              as PyTorch's, not sinc''(0) = -pi^2 / 3).
    Kernels:  kernels/elementwise.cl :: sinc_op, sinc_grad""")
i0 = _here(ew._unary_float(
    "i0_op", "i0", lambda g, x, y: ew.mul(g, ew._launch_unary("i1_op", x)), "x",
    double=lambda g, x: ew.mul(g, bessel.i1(x))), """\
The modified Bessel function of the first kind of order 0, I0(x), elementwise (PyTorch's
    torch.i0 / special.i0; NumPy's numpy.i0). +-inf gives NaN (PyTorch's and NumPy's).

    Accuracy: series and asymptotic expansion (kernels/elementwise.cl's comment): float64
              within 1e-14 relative, float32 a few ulp (tests/test_math_ops.py); finite up
              to I0's overflow (float32: 91.9; PyTorch's float32 is inf from 89).
    Grad:     g * I1(x) (PyTorch's); differentiable again (create_graph: special.i1).
    Kernels:  kernels/elementwise.cl :: i0_op, i1_op""")


def _sinc_derivative(x: Tensor) -> Tensor:
    """sinc'(x) of recorded ops, PyTorch's sinc_backward: (pi x cos(pi x) - sin(pi x)) /
    (pi x^2), 0 where x is 0 (create_graph)."""
    zero = ew.eq(x, 0)
    xs = ew.where(zero, 1.0, x)
    px = ew.mul(xs, math.pi)
    d = ew.div(ew.sub(ew.mul(px, ew.cos(px)), ew.sin(px)), ew.mul(px, xs))
    return ew.where(zero, 0.0, d)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """log(x / (1 - x)) elementwise (PyTorch's torch.logit / special.logit); with ``eps``, x
    is first clamped to [eps, 1 - eps]. Without it: -inf at 0, inf at 1, NaN outside [0, 1].

    Dtypes:  floats keep theirs; integers and bool give the default dtype; eps is taken in
             the input's dtype.
    Grad:    g / (x (1 - x)); with eps, 0 outside [eps, 1 - eps]; without it, NaN outside
             [0, 1] (PyTorch's logit_backward).
    Kernels: kernels/elementwise.cl :: logit_op_sb
    """
    x = ew._float_in("logit", input)
    if x._storage.dtype is _BF16:
        return ew.via_float32(logit, x, eps)
    e = -1.0 if eps is None else float(eps)  # (the kernel's "no clamp")
    out = ew._launch_binary("logit_op", x, e, x._storage.dtype, x._shape)

    def backward(g):
        ga = ew.div(g, ew.mul(x, ew.sub(1.0, x)))
        if eps is None:
            return (ew.where(ew.logical_or(ew.lt(x, 0.0), ew.gt(x, 1.0)), math.nan, ga),)
        return (ew.where(ew.logical_or(ew.lt(x, e), ew.gt(x, 1.0 - e)), 0.0, ga),)
    return record("logit", out, (x,), backward, saved=[x], double=True)


def positive(input: Tensor) -> Tensor:
    """``input`` itself (PyTorch's torch.positive returns its argument: same object, no copy).

    Raises:  NotImplementedError for a bool tensor (PyTorch's message)."""
    if input.dtype.is_bool:
        raise NotImplementedError("The `+` operator, on a bool tensor is not supported.")
    return input


# -- binary ------------------------------------------------------------------------------------
def _wants(v) -> bool:
    return isinstance(v, Tensor) and v.requires_grad


def _fminmax(kname, op, fn, input, other):
    a, b, dt, shape = ew._prep(op, input, other)
    if dt is _BF16:
        return ew.via_float32(fn, *ew._opmath((input, other), (a, b)))
    out = ew._launch_binary(kname, a, b, dt, shape)
    keeps = ew.ge if kname == "fmax_op" else ew.le

    def backward(g):
        # PyTorch's (derivatives.yaml; measured on 2.11 and 2.13): input gets g where it wins
        # or ties, or where other is NaN; other gets g everywhere else
        wa = ew.to(ew.logical_or(keeps(a, b), ew.ne(b, b)), dt)
        ga = ew.mul(g, wa) if _wants(a) else None
        gb = ew.mul(g, ew.sub(1.0, wa)) if _wants(b) else None
        return ew._grads(a, b, ga, gb)
    return record(op, out, ew._inputs(a, b), backward,
                  saved=[t for t in ew._inputs(a, b) if t is not None], double=True)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum that ignores NaN (PyTorch's torch.fmax): a NaN operand gives the
    other one, NaN only where both are; with broadcasting.

    Dtypes:  promoted (dtypes.result_type); integers and bool too.
    Grad:    PyTorch's (derivatives.yaml; measured on 2.11 and 2.13): input gets g where
             input >= other (fmin: <=) or other is NaN; other gets g everywhere else, so a
             tie gives input all of it.
    Raises:  TypeError for a number (PyTorch's: tensors only); ValueError for shapes that do
             not broadcast.
    Kernels: kernels/elementwise.cl :: fmax_op
    """
    return _fminmax("fmax_op", "fmax", fmax, input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum that ignores NaN (PyTorch's torch.fmin); see fmax.

    Kernels: kernels/elementwise.cl :: fmin_op
    """
    return _fminmax("fmin_op", "fmin", fmin, input, other)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The Heaviside step elementwise (PyTorch's torch.heaviside): 0 where input < 0 (and
    where it is NaN), ``values`` where it is 0 (or -0), 1 where it is > 0; with broadcasting.

    Dtypes:  input's; values must have the same dtype (PyTorch's RuntimeError otherwise).
    Grad:    none: backward through it raises RuntimeError (PyTorch's "the derivative for
             'heaviside' is not implemented").
    Kernels: kernels/elementwise.cl :: heaviside_op
    """
    if input.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different "
                           "dtypes.")
    a, b, dt, shape = ew._prep("heaviside", input, values)
    if dt is _BF16:
        return ew.via_float32(heaviside, a, b)
    out = ew._launch_binary("heaviside_op", a, b, dt, shape)

    def backward(g):
        raise RuntimeError("the derivative for 'heaviside' is not implemented.")
    return record("heaviside", out, (a, b), backward)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """input * 2^other elementwise, with broadcasting (PyTorch's torch.ldexp, which is
    ``mul(input, pow(2., other))``: so are its dtype, its overflow where 2^other overflows
    the result dtype, and its gradients).

    Dtypes:  result_type(input, pow(2., other)): integers give the default dtype.
    Grad:    input: g * 2^other; other: g * out * ln 2.
    """
    return ew.mul(input, ew.pow(2.0, other))


def _integer(op, input, other):
    a, b, dt, shape = ew._prep(op, input, other)
    if dt.is_floating_point or dt.is_bool:
        _not_implemented(op, dt, a if isinstance(a, Tensor) else b)
    return ew._launch_binary(op + "_op", a, b, dt, shape)


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """The greatest common divisor of |input| and |other| elementwise, with broadcasting
    (PyTorch's torch.gcd): gcd(0, 0) is 0; |MIN| wraps to MIN (int8 gcd(-128, 0) is -128).

    Dtypes:  integers, promoted. Grad: none.
    Raises:  NotImplementedError for floating and bool results (PyTorch's "gcd_cpu" not
             implemented for 'Float').
    Kernels: kernels/elementwise.cl :: gcd_op
    """
    return _integer("gcd", input, other)


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """The least common multiple of |input| and |other| elementwise, with broadcasting
    (PyTorch's torch.lcm): 0 where either is 0; wraps in the dtype (int8 lcm(100, 3) is 44).

    Dtypes, errors: gcd's. Kernels: kernels/elementwise.cl :: lcm_op
    """
    return _integer("lcm", input, other)


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next value of input's dtype after input toward other, elementwise, with
    broadcasting (PyTorch's torch.nextafter; C's nextafter): other where they are equal
    (nextafter(0., -0.) is -0.), NaN where either is; float16 and bfloat16 step by their own
    spacing (subnormals included).

    Dtypes:  promoted, floats only.
    Grad:    input: g, but 0 where input == other; other: zero (PyTorch 2.14's, measured).
    Raises:  NotImplementedError for integer and bool results (PyTorch's).
    Kernels: kernels/elementwise.cl :: nextafter_op, nextafter_bf16 (bfloat16 on float32
             copies: its values are float32's)
    """
    a, b, dt, shape = ew._prep("nextafter", input, other)
    if not dt.is_floating_point:
        _not_implemented("nextafter", dt, a if isinstance(a, Tensor) else b)
    if dt is _BF16:
        f32 = dtypes.float32
        out = ew._launch_binary("nextafter_bf16", ew.to(a, f32), ew.to(b, f32), f32, shape)
        out = ew.to(out, _BF16)  # exact: the step lands on a bfloat16 value
    else:
        out = ew._launch_binary("nextafter_op", a, b, dt, shape)
    sb = b._shape

    def backward(g):  # PyTorch 2.14's (measured): input g, 0 where input == other; other 0
        ga = ew.where(ew.eq(a, b), 0.0, g) if _wants(a) else None
        return ew._grads(a, b, ga, zeros(sb, g._storage.dtype, g._storage.device))
    return record("nextafter", out, (a, b), backward, saved=[a, b])
