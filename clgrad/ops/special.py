"""Elementwise small math ops (PyTorch's names): trunc/fix, frac, deg2rad, rad2deg, clamp_min,
clamp_max, logaddexp, logaddexp2, hypot, xlogy, xlog1py, entr, copysign, float_power, frexp;
and the helpers the special-function families share (``_unary_xy``, ``_int_arg`` ...).

The special functions live by family, each its own module: the error function
(clgrad/ops/erf.py: erfinv, erfc, erfcx, ndtr, log_ndtr, ndtri), the gamma function
(clgrad/ops/gamma.py: lgamma, digamma, polygamma, mvlgamma, zeta, gammainc, gammaincc), the
Bessel functions (clgrad/ops/bessel.py), the orthogonal polynomials
(clgrad/ops/polynomial.py); the predicates (is_nonzero, signbit ...) in
clgrad/ops/predicates.py. torch.special's face is clgrad/special.py.

Formulas, special values and gradients are PyTorch's (its docs, and aten's
``derivatives.yaml``); integer and bool inputs of the float functions compute in the default
float dtype (``get_default_dtype()``), as PyTorch's; bfloat16 computes in float32 and rounds once
(``ew.via_float32``).

Kernels: kernels/elementwise.cl (``trunc_op``, ``frac_op``, ``hypot_op``, ``copysign_op``,
``logaddexp_op``, ``logaddexp2_op``, ``xlogy_op``, ``xlog1py_op``, ``entr_op``).
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from clgrad import creation, dtypes
from clgrad.autograd import record
from clgrad.autograd.graph import output_of
from clgrad.ops import elementwise as ew
from clgrad.ops import inplace as ip
from clgrad.ops._util import zeros
from clgrad.tensor import Tensor

__all__ = ["logaddexp", "logaddexp2", "hypot", "xlogy", "trunc", "frac", "copysign", "deg2rad",
           "rad2deg", "clamp_min", "clamp_max", "float_power", "float_power_", "frexp", "entr",
           "xlog1py"]

_FILE = "elementwise.cl"
_BF16 = dtypes.bfloat16
_F16 = dtypes.float16


def _not_implemented(op: str, x: Tensor):
    kind = "cuda" if x._storage.device.kind == "gpu" else "cpu"
    raise NotImplementedError(f"\"{op}_{kind}\" not implemented for "
                              f"'{dtypes.torch_name(x.dtype)}'")


def _here(module: str, f):
    """A function made by ``ew._unary_float``, named as ``module``'s (stubs, pickling)."""
    f.__module__, f.__qualname__ = module, f.__name__
    return f


trunc = _here(__name__, ew._piecewise_constant("trunc_op", "trunc"))
trunc.__doc__ = """x rounded toward zero elementwise (PyTorch's torch.trunc / torch.fix).

    Dtypes:  kept; an integer tensor gives a copy (its values are whole).
    Grad:    zero (PyTorch's TruncBackward0): a float input keeps its graph.
    Raises:  NotImplementedError for bool (PyTorch's).
    Kernels: kernels/elementwise.cl :: trunc_op
    """


def frac(input: Tensor) -> Tensor:
    """The fractional part x - trunc(x) elementwise, with x's sign (PyTorch's torch.frac);
    +-inf gives NaN.

    Dtypes:  floats only, kept. Grad: g (PyTorch's).
    Raises:  TypeError for a non-Tensor; NotImplementedError for integer and bool tensors
             (PyTorch's "frac_cpu" not implemented).
    Kernels: kernels/elementwise.cl :: frac_op
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"frac: expected a Tensor, got {type(input).__name__}")
    if not input.dtype.is_floating_point:
        _not_implemented("frac", input)
    if input._storage.dtype is _BF16:
        return ew.via_float32(frac, input)
    out = ew._launch_unary("frac_op", input)
    return record("frac", out, (input,), lambda g: (g,), double=True)


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians, x * pi / 180 elementwise (PyTorch's torch.deg2rad).
    Dtypes: floats keep theirs; integers and bool give the default dtype. Grad: g * pi / 180."""
    return ew.mul(ew._float_in("deg2rad", input), math.pi / 180.0)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees, x * 180 / pi elementwise (PyTorch's torch.rad2deg).
    Dtypes: floats keep theirs; integers and bool give the default dtype. Grad: g * 180 / pi."""
    return ew.mul(ew._float_in("rad2deg", input), 180.0 / math.pi)


def clamp_min(input: Tensor, min) -> Tensor:
    """max(x, min) elementwise: ``clamp(input, min=min)`` (PyTorch's torch.clamp_min; min a
    number or a tensor). Dtypes, NaN and gradients: clamp's."""
    return ew.clamp(input, min=min)


def clamp_max(input: Tensor, max) -> Tensor:
    """min(x, max) elementwise: ``clamp(input, max=max)`` (PyTorch's torch.clamp_max)."""
    return ew.clamp(input, max=max)


# -- binary float functions ---------------------------------------------------------------------
def _binary_float(op, kname, input, other, need_float=True):
    """(a, b, out) of a float binary kernel over input and other (tensors or numbers) promoted
    as div (integers give the default dtype); out is None where the result is bfloat16 (the caller
    calls via_float32 with ``ew._opmath((input, other), (a, b))``). ``need_float``: integer
    tensors raise NotImplementedError (PyTorch's logaddexp and hypot have no integer
    kernels)."""
    if need_float:
        for v in (input, other):
            if isinstance(v, Tensor) and not v.dtype.is_floating_point:
                dt = dtypes.result_type(input, other)
                if not dt.is_floating_point:
                    _not_implemented(op, v)
    a, b, dt, shape = ew._prep(op, input, other, floating=True)
    if dt is _BF16:
        return a, b, None
    return a, b, ew._launch_binary(kname, a, b, dt, shape)


def _wants(v) -> bool:
    return isinstance(v, Tensor) and v.requires_grad


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """log(exp(input) + exp(other)) elementwise without overflow, with broadcasting
    (PyTorch's torch.logaddexp): max + log1p(exp(-|input - other|)); equal infinities give
    themselves, NaN propagates.

    Dtypes:  promoted (dtypes.result_type), floats only.
    Grad:    input: g / (1 + exp(other - input)); other: g / (1 + exp(input - other)).
    Raises:  NotImplementedError for integer or bool tensors (PyTorch's); ValueError for
             shapes that do not broadcast.
    Kernels: kernels/elementwise.cl :: logaddexp_op
    """
    return _logaddexp("logaddexp", logaddexp, ew.exp, input, other)


def _logaddexp(op, fn, power, input, other):
    """logaddexp (``power`` e^t) or logaddexp2 (2^t): the kernel ``<op>_op``, and the gradient
    g / (1 + power(other - input)) (input), g / (1 + power(input - other)) (other)."""
    a, b, out = _binary_float(op, op + "_op", input, other)
    if out is None:  # bfloat16: a tensor with dims taken as bfloat16, a number in float32
        return ew.via_float32(fn, *ew._opmath((input, other), (a, b)))

    def backward(g):
        ga = ew.div(g, ew.add(power(ew.sub(b, a)), 1.0)) if _wants(a) else None
        gb = ew.div(g, ew.add(power(ew.sub(a, b)), 1.0)) if _wants(b) else None
        return ew._grads(a, b, ga, gb)
    return record(op, out, ew._inputs(a, b), backward,
                  saved=[t for t in ew._inputs(a, b) if t is not None], double=True)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """log2(2^input + 2^other) elementwise without overflow, with broadcasting (PyTorch's
    torch.logaddexp2): max + log1p(2^-|input - other|) / log(2).

    Dtypes, errors: logaddexp's.
    Grad:    input: g / (1 + 2^(other - input)); other: g / (1 + 2^(input - other)).
    Kernels: kernels/elementwise.cl :: logaddexp2_op
    """
    return _logaddexp("logaddexp2", logaddexp2, lambda t: ew.pow(2.0, t), input, other)


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """sqrt(input^2 + other^2) elementwise without overflow, with broadcasting (PyTorch's
    torch.hypot).

    Dtypes:  promoted (dtypes.result_type), floats only.
    Grad:    input: g * input / out; other: g * other / out (PyTorch's: NaN at the origin).
    Raises:  NotImplementedError for integer or bool tensors (PyTorch's).
    Kernels: kernels/elementwise.cl :: hypot_op (OpenCL's hypot)
    """
    a, b, out = _binary_float("hypot", "hypot_op", input, other)
    if out is None:  # bfloat16: a tensor with dims taken as bfloat16, a number in float32
        return ew.via_float32(hypot, *ew._opmath((input, other), (a, b)))
    y = out.detach()  # (not out: out -> Node -> closure -> out would be a cycle)

    def backward(g, y=y):  # (y: the output, re-attached to the node under create_graph)
        ga = ew.div(ew.mul(g, a), y) if _wants(a) else None
        gb = ew.div(ew.mul(g, b), y) if _wants(b) else None
        return ew._grads(a, b, ga, gb)
    return record("hypot", out, ew._inputs(a, b), backward,
                  saved=[t for t in ew._inputs(a, b) if t is not None] + [y],
                  double=lambda g, node: backward(g, output_of(node, y)))


def xlogy(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log(other) elementwise, with broadcasting, 0 where input is 0 (also at
    other = 0), NaN where other is NaN (PyTorch's torch.xlogy / torch.special.xlogy). Either
    may be a number.

    Dtypes:  promoted as div: integers and bool give the default dtype.
    Grad:    input: xlogy(g, other), 0 where input is 0 and other <= 0; other:
             g * input / other (PyTorch 2.14's: d/dinput at input 0, other 2 is log 2);
             differentiable again (create_graph).
    Kernels: kernels/elementwise.cl :: xlogy_op
    """
    return _xlog(xlogy, "xlogy", input, other, 0)


def _xlog(fn, name: str, input, other, pole: int) -> Tensor:
    """xlogy (pole 0) and xlog1py (pole -1): input * log(other - pole) by the kernel
    ``<name>_op``, with PyTorch's gradients: input's is fn(g, other), 0 where input is 0
    and other <= pole; other's is g * input / (other - pole)."""
    a, b, out = _binary_float(name, name + "_op", input, other, need_float=False)
    if out is None:  # bfloat16: a tensor with dims taken as bfloat16, a number in float32
        return ew.via_float32(fn, *ew._opmath((input, other), (a, b)))

    def backward(g):
        ga = gb = None
        if _wants(a):
            ga = fn(g, b)
            if isinstance(b, Tensor):
                ga = ew.where(ew.logical_and(ew.eq(a, 0), ew.le(b, pole)), 0.0, ga)
            elif b <= pole:
                ga = ew.where(ew.eq(a, 0), 0.0, ga)
        if _wants(b):
            gb = ew.div(ew.mul(g, a), ew.sub(b, pole) if pole else b)
        return ew._grads(a, b, ga, gb)
    return record(name, out, ew._inputs(a, b), backward,  # (double: recording ops, fn too)
                  saved=[t for t in ew._inputs(a, b) if t is not None], double=True)


def copysign(input: Tensor, other: Tensor | float) -> Tensor:
    """|input| with the sign of other elementwise, with broadcasting (PyTorch's
    torch.copysign): the sign bit counts, so -0.0 and a negative NaN give a negative result.

    Dtypes:  promoted as div: integers and bool give the default dtype.
    Grad:    input: g * out / input, 0 where input is 0 (PyTorch's); other: zero.
    Kernels: kernels/elementwise.cl :: copysign_op (OpenCL's copysign)
    """
    a, b, out = _binary_float("copysign", "copysign_op", input, other, need_float=False)
    if out is None:  # bfloat16: a tensor with dims taken as bfloat16, a number in float32
        return ew.via_float32(copysign, *ew._opmath((input, other), (a, b)))
    y = out.detach()

    def backward(g, y=y):  # (y: the output, re-attached to the node under create_graph)
        ga = gb = None
        if _wants(a):
            ga = ew.where(ew.eq(a, 0), 0.0, ew.mul(g, ew.div(y, a)))
        if _wants(b):
            gb = zeros(b.shape, b.dtype, b._storage.device)
        return ew._grads(a, b, ga, gb)
    return record("copysign", out, ew._inputs(a, b), backward,
                  saved=[t for t in ew._inputs(a, b) if t is not None] + [y],
                  double=lambda g, node: backward(g, output_of(node, y)))


def float_power(input: Tensor | float, exponent: Tensor | float) -> Tensor:
    """input ** exponent elementwise in double precision (PyTorch's torch.float_power): both
    operands are taken as float64 and the result is float64, whatever their dtypes. Either
    may be a number (not both).

    Grad:    pow's, in float64 (to the given tensors through the casts).
    Raises:  TypeError when neither is a Tensor; RuntimeError on a device without fp64
             (cl_khr_fp64), naming it.
    """
    ts = [v for v in (input, exponent) if isinstance(v, Tensor)]
    if not ts:
        raise TypeError(f"float_power: expected at least one Tensor, got "
                        f"{type(input).__name__} and {type(exponent).__name__}")
    dev = ts[0]._storage.device
    if not dev.fp64:
        raise RuntimeError(f"float_power: the result is float64, but the device {dev.name!r} "
                           f"lacks cl_khr_fp64; use pow in float32 instead")
    f64 = dtypes.float64
    a, b = (ew.to(v, f64) if isinstance(v, Tensor) else v for v in (input, exponent))
    return ew.pow(a, b)


def float_power_(input: Tensor, exponent: Tensor | float) -> Tensor:
    """``input = float_power(input, exponent)`` in place (PyTorch's Tensor.float_power_).

    Raises:  RuntimeError when input is not float64 (PyTorch's message: the result would
             need float64), and as float_power.
    """
    if input.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{dtypes.torch_name(input.dtype)} but the operation's result "
                           f"requires dtype Double")
    return ip.inplace("float_power_", input, float_power, exponent)


FrexpResult = namedtuple("frexp", ["mantissa", "exponent"])


def frexp(input: Tensor):
    """``input`` as mantissa * 2 ** exponent, mantissa in (-1, -0.5] or [0.5, 1) (0, inf and
    NaN: themselves, exponent 0) -> (mantissa, exponent) (PyTorch's torch.frexp, NumPy's
    np.frexp, which computes it on the host).

    Dtypes:  floats; mantissa of input's dtype, exponent int32
    Grad:    input: g / 2 ** exponent through the mantissa (PyTorch's)
    Raises:  TypeError for an integer or bool input
    """
    if not input.dtype.is_floating_point:
        raise TypeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype}")
    host = input.detach().float().numpy() if input.dtype is dtypes.bfloat16 else \
        input.detach().numpy()
    m, e = np.frexp(host)
    dev = input._storage.device
    mant = creation.tensor(m, dtype=input.dtype, device=dev)
    expo = creation.tensor(e.astype(np.int32), device=dev)
    scale = creation.tensor(np.ldexp(1.0, -e.astype(np.int64)), dtype=input.dtype, device=dev)

    def backward(g):
        return (ew.mul(g, scale),)
    return FrexpResult(record("frexp", mant, (input,), backward), expo)


# -- shared by the special-function families (erf.py, gamma.py, bessel.py, polynomial.py) -----
# Values, special values, dtypes and gradients are PyTorch 2.14's, checked by experiment
# (tests/test_special_ns.py): integer and bool inputs compute in the default float dtype;
# float16 computes in float and rounds once; bfloat16 through float32 copies; erfcx,
# log_ndtr, ndtri and zeta have no float16 or bfloat16 kernels (PyTorch's NotImplementedError).


def _full_float(op: str, input) -> Tensor:
    """input as a float tensor (integers and bool: the default dtype); NotImplementedError for
    float16 and bfloat16 (the functions PyTorch has no 16-bit kernels of)."""
    x = ew._float_in(op, input)
    if x._storage.dtype in (_F16, _BF16):
        _not_implemented(op, x)
    return x


def _unary_xy(module: str, kname: str, op: str, grad_of, low: bool = True,
              file: str = _FILE, double=None):
    """A unary float op of ``module`` whose gradient ``grad_of(g, x, y)`` reads the input x
    and the output y; ``low``: float16 and bfloat16 allowed (else NotImplementedError, as
    PyTorch's); ``file``: the kernel file of ``kname``. ``double`` (create_graph, Node.double):
    None (create_graph through it raises), or ``double(g, x, y)`` the gradient of recording
    ops, y the output re-attached to its Node (graph.output_of); True: grad_of is that."""
    again = grad_of if double is True else double

    def f(input: Tensor) -> Tensor:
        x = ew._float_in(op, input) if low else _full_float(op, input)
        if x._storage.dtype is _BF16:
            return ew.via_float32(f, x)
        out = ew._launch_unary(kname, x, file=file)
        y = out.detach()  # (not out: out -> Node -> closure -> out would be a cycle)
        return record(op, out, (x,), lambda g: (grad_of(g, x, y),), saved=[x, y],
                      double=None if again is None else
                      lambda g, node: (again(g, x, output_of(node, y)),))
    f.__name__ = f.__qualname__ = op
    f.__module__ = module
    return f


def _int_arg(op: str, name: str, pos: int, v):
    """PyTorch's TypeError for an int parameter given something else."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return
    t = type(v)
    what = t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"
    raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be int, not {what}")


def _at_zero(x, value, elsewhere):
    """``elsewhere``, but ``value`` where |x| <= x's epsilon (PyTorch's i1_backward: the limit
    at 0 instead of 0 / 0)."""
    return ew.where(ew.le(ew.abs(x), dtypes.finfo(x.dtype).eps), value, elsewhere)


entr = _unary_xy(__name__, "entr_op", "entr",
                 lambda g, x, y: ew.mul(g, ew.neg(ew.add(ew.log(x), 1.0))), double=True)
entr.__doc__ = """The entropy term -x log x elementwise (PyTorch's torch.special.entr): 0 at 0,
    -inf below 0, NaN at NaN.

    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    -(1 + log x) g (PyTorch's): +inf at 0, NaN below 0; differentiable again.
    Kernels: kernels/elementwise.cl :: entr_op
    """


def xlog1py(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log1p(other) elementwise, with broadcasting, 0 where input is 0 (also at
    other = -1), NaN where other is NaN (PyTorch's torch.special.xlog1py). Either may be a
    number (not both).

    Dtypes:  promoted as div: integers and bool give the default dtype.
    Grad:    input: xlog1py(g, other), 0 where input is 0 and other <= -1; other:
             g * input / (other + 1) (PyTorch's derivatives.yaml); differentiable again.
    Kernels: kernels/elementwise.cl :: xlog1py_op
    """
    return _xlog(xlog1py, "xlog1py", input, other, -1)
