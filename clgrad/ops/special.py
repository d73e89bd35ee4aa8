"""Elementwise special functions and small math ops (PyTorch's names): erfinv, erfc, lgamma,
digamma, logaddexp, logaddexp2, hypot, xlogy, trunc/fix, frac, signbit, copysign,
deg2rad, rad2deg, clamp_min, clamp_max, float_power, and the predicates is_floating_point and
is_nonzero.

Formulas, special values and gradients are PyTorch's (its docs, and aten's
``derivatives.yaml``); integer and bool inputs of the float functions compute in the default
float dtype (``get_default_dtype()``), as PyTorch's; bfloat16 computes in float32 and rounds once
(``ew.via_float32``).

Kernels: kernels/elementwise.cl (``erfinv_op``, ``erfc_op``, ``lgamma_op``, ``digamma_op``,
``trigamma_op``, ``trunc_op``, ``frac_op``, ``signbit_op``, ``hypot_op``, ``copysign_op``,
``logaddexp_op``, ``logaddexp2_op``, ``xlogy_op``); erfinv has no OpenCL built-in: see its
kernel's comment for the approximation and its error.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from clgrad import creation, dtypes
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops import inplace as ip
from clgrad.ops._util import defines_of, empty, launch_1d, zeros
from clgrad.tensor import Tensor

__all__ = ["erfinv", "erfc", "lgamma", "digamma", "logaddexp", "logaddexp2", "hypot", "xlogy",
           "trunc", "frac", "signbit", "copysign", "deg2rad", "rad2deg", "clamp_min",
           "clamp_max", "float_power", "float_power_", "is_floating_point", "is_nonzero"]

_FILE = "elementwise.cl"
_BF16 = dtypes.bfloat16


def _not_implemented(op: str, x: Tensor):
    kind = "cuda" if x._storage.device.kind == "gpu" else "cpu"
    raise NotImplementedError(f"\"{op}_{kind}\" not implemented for "
                              f"'{dtypes.torch_name(x.dtype)}'")


def _here(f):
    """A function made by ``ew._unary_float``, named as this module's (stubs, pickling)."""
    f.__module__, f.__qualname__ = __name__, f.__name__
    return f


# -- unary float functions ----------------------------------------------------------------------
def _trigamma(x: Tensor) -> Tensor:
    """polygamma(1, x): digamma's derivative (no gradient of its own here)."""
    return ew._launch_unary("trigamma_op", x.detach())


erfinv = _here(ew._unary_float(
    "erfinv_op", "erfinv",
    lambda g, x, y: ew.mul(g, ew.mul(ew.exp(ew.mul(y, y)), math.sqrt(math.pi) / 2))))
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
erfc = _here(ew._unary_float(
    "erfc_op", "erfc",
    lambda g, x, y: ew.mul(g, ew.mul(ew.exp(ew.neg(ew.mul(x, x))), -2.0 / math.sqrt(math.pi))),
    "x"))
erfc.__doc__ = """The complementary error function 1 - erf(x) elementwise, accurate where
    erf(x) is close to 1 (PyTorch's torch.erfc).

    Dtypes:  floats keep theirs; integers and bool give the default dtype.
    Grad:    -2 / sqrt(pi) * exp(-x^2) * g.
    Kernels: kernels/elementwise.cl :: erfc_op (OpenCL's erfc)
    """
lgamma = _here(ew._unary_float("lgamma_op", "lgamma", lambda g, x, y: ew.mul(g, digamma(x)),
                               "x"))
lgamma.__doc__ = """log|Gamma(x)| elementwise (PyTorch's torch.lgamma): inf at 0 and at the
    negative integers, inf at +-inf.

    Dtypes:  floats keep theirs; integers and bool give the default dtype.
    Grad:    g * digamma(x).
    Kernels: kernels/elementwise.cl :: lgamma_op (OpenCL's lgamma)
    """
digamma = _here(ew._unary_float("digamma_op", "digamma",
                                lambda g, x, y: ew.mul(g, _trigamma(x)), "x"))
digamma.__doc__ = """The digamma function d/dx log Gamma(x) elementwise (PyTorch's
    torch.digamma / torch.special.digamma): -inf at +0, inf at -0, NaN at the negative
    integers (PyTorch >= 1.8).

    Dtypes:  floats keep theirs; integers and bool give the default dtype.
    Grad:    g * polygamma(1, x) (trigamma; its own gradient is not recorded: no second
             derivative).
    Kernels: kernels/elementwise.cl :: digamma_op, trigamma_op (PyTorch's calc_digamma and
             calc_trigamma: reflection, recurrence, asymptotic series)
    """


trunc = _here(ew._piecewise_constant("trunc_op", "trunc"))
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
    return record("frac", out, (input,), lambda g: (g,))


def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set (PyTorch's torch.signbit): x < 0 for integers (never for
    unsigned ones and bool); for floats also -0.0 and a NaN with its sign bit set.

    Shapes: kept. Dtypes: any input; bool result. Grad: none.
    Kernels: kernels/elementwise.cl :: signbit_op
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"signbit: expected a Tensor, got {type(input).__name__}")
    if input._storage.dtype is _BF16:
        return ew.via_float32(signbit, input)
    if input.dtype.is_bool:
        return zeros(input.shape, dtypes.bool_, input._storage.device)
    out = empty(input.shape, dtypes.bool_, input._storage.device)
    launch_1d(_FILE, "signbit_op", defines_of(input.dtype), out, (input,))
    return out


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
                  saved=[t for t in ew._inputs(a, b) if t is not None])


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

    def backward(g):
        ga = ew.div(ew.mul(g, a), y) if _wants(a) else None
        gb = ew.div(ew.mul(g, b), y) if _wants(b) else None
        return ew._grads(a, b, ga, gb)
    return record("hypot", out, ew._inputs(a, b), backward,
                  saved=[t for t in ew._inputs(a, b) if t is not None] + [y])


def xlogy(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log(other) elementwise, with broadcasting, 0 where input is 0 (also at
    other = 0), NaN where other is NaN (PyTorch's torch.xlogy / torch.special.xlogy). Either
    may be a number.

    Dtypes:  promoted as div: integers and bool give the default dtype.
    Grad:    input: xlogy(g, other), 0 where input is 0 and other <= 0; other:
             g * input / other (PyTorch 2.14's: d/dinput at input 0, other 2 is log 2).
    Kernels: kernels/elementwise.cl :: xlogy_op
    """
    a, b, out = _binary_float("xlogy", "xlogy_op", input, other, need_float=False)
    if out is None:  # bfloat16: a tensor with dims taken as bfloat16, a number in float32
        return ew.via_float32(xlogy, *ew._opmath((input, other), (a, b)))

    def backward(g):
        ga = gb = None
        if _wants(a):
            ga = xlogy(g, b)
            if isinstance(b, Tensor):
                ga = ew.where(ew.logical_and(ew.eq(a, 0), ew.le(b, 0)), 0.0, ga)
            elif b <= 0:
                ga = ew.where(ew.eq(a, 0), 0.0, ga)
        if _wants(b):
            gb = ew.div(ew.mul(g, a), b)
        return ew._grads(a, b, ga, gb)
    return record("xlogy", out, ew._inputs(a, b), backward,
                  saved=[t for t in ew._inputs(a, b) if t is not None])


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

    def backward(g):
        ga = gb = None
        if _wants(a):
            ga = ew.where(ew.eq(a, 0), 0.0, ew.mul(g, ew.div(y, a)))
        if _wants(b):
            gb = zeros(b.shape, b.dtype, b._storage.device)
        return ew._grads(a, b, ga, gb)
    return record("copysign", out, ew._inputs(a, b), backward,
                  saved=[t for t in ew._inputs(a, b) if t is not None] + [y])


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


# -- predicates ---------------------------------------------------------------------------------
def is_floating_point(input: Tensor) -> bool:
    """True for a tensor of a floating dtype (float16, bfloat16, float32, float64): PyTorch's
    torch.is_floating_point. Raises TypeError for a non-Tensor (the public entry)."""
    return input.dtype.is_floating_point


def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is not zero (PyTorch's torch.is_nonzero; NaN is
    nonzero). Reads the value back from the device.

    Raises:  RuntimeError for an empty tensor or one of more than one element (PyTorch's
             messages).
    """
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.detach().reshape(()).item() != 0)


def is_complex(input: Tensor) -> bool:
    """False: clgrad has no complex dtypes (PyTorch's torch.is_complex)."""
    return input.dtype.is_complex


def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype is signed: floats and int8..int64, not uint8 or bool
    (PyTorch's torch.is_signed)."""
    return input.dtype.is_signed


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether two tensors have the same shape (PyTorch's torch.is_same_size)."""
    return tuple(input.shape) == tuple(other.shape)


def is_inference(input: Tensor) -> bool:
    """False: clgrad's ``inference_mode`` makes ordinary tensors, not inference tensors
    (PyTorch's torch.is_inference is True only for tensors made inside it)."""
    return False


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


__all__ += ["is_complex", "is_signed", "is_same_size", "is_inference", "frexp"]
