"""Elementwise special functions and small math ops (PyTorch's names): erfinv, erfc, lgamma,
digamma, logaddexp, logaddexp2, hypot, xlogy, trunc/fix, frac, signbit, copysign,
deg2rad, rad2deg, clamp_min, clamp_max, float_power, and the predicates is_floating_point and
is_nonzero; and torch.special's own functions (the face: clgrad/special.py): entr, erfcx,
ndtr, log_ndtr, ndtri, i0e, i1, i1e, xlog1py, zeta, polygamma, mvlgamma.

Formulas, special values and gradients are PyTorch's (its docs, and aten's
``derivatives.yaml``); integer and bool inputs of the float functions compute in the default
float dtype (``get_default_dtype()``), as PyTorch's; bfloat16 computes in float32 and rounds once
(``ew.via_float32``).

Kernels: kernels/elementwise.cl (``erfinv_op``, ``erfc_op``, ``lgamma_op``, ``digamma_op``,
``trigamma_op``, ``trunc_op``, ``frac_op``, ``signbit_op``, ``hypot_op``, ``copysign_op``,
``logaddexp_op``, ``logaddexp2_op``, ``xlogy_op``; torch.special's: ``entr_op``,
``erfcx_op``, ``ndtr_op``, ``log_ndtr_op``, ``ndtri_op``, ``i0e_op``, ``i1e_op``, ``i1_op``,
``xlog1py_op``, ``zeta_op``, ``polygamma_op``); erfinv has no OpenCL built-in: see its
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
from clgrad.ops import reduce as rd
from clgrad.ops import views as vw
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
    return record(name, out, ew._inputs(a, b), backward,
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


# -- torch.special's own functions (the face: clgrad/special.py) -------------------------------
# Values, special values, dtypes and gradients are PyTorch 2.14's, checked by experiment
# (tests/test_special_ns.py): integer and bool inputs compute in the default float dtype;
# float16 computes in float and rounds once; bfloat16 through float32 copies; erfcx,
# log_ndtr, ndtri and zeta have no float16 or bfloat16 kernels (PyTorch's NotImplementedError).
_F16 = dtypes.float16
_SQRT_2PI = math.sqrt(2.0 * math.pi)


def _full_float(op: str, input) -> Tensor:
    """input as a float tensor (integers and bool: the default dtype); NotImplementedError for
    float16 and bfloat16 (the functions PyTorch has no 16-bit kernels of)."""
    x = ew._float_in(op, input)
    if x._storage.dtype in (_F16, _BF16):
        _not_implemented(op, x)
    return x


def _unary_xy(kname: str, op: str, grad_of, low: bool = True):
    """A unary float op whose gradient ``grad_of(g, x, y)`` reads the input x and the output
    y; ``low``: float16 and bfloat16 allowed (else NotImplementedError, as PyTorch's)."""
    def f(input: Tensor) -> Tensor:
        x = ew._float_in(op, input) if low else _full_float(op, input)
        if x._storage.dtype is _BF16:
            return ew.via_float32(f, x)
        out = ew._launch_unary(kname, x)
        y = out.detach()  # (not out: out -> Node -> closure -> out would be a cycle)
        return record(op, out, (x,), lambda g: (grad_of(g, x, y),), saved=[x, y])
    f.__name__ = f.__qualname__ = op
    f.__module__ = __name__
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


entr = _unary_xy("entr_op", "entr",
                 lambda g, x, y: ew.mul(g, ew.neg(ew.add(ew.log(x), 1.0))))
entr.__doc__ = """The entropy term -x log x elementwise (PyTorch's torch.special.entr): 0 at 0,
    -inf below 0, NaN at NaN.

    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    -(1 + log x) g (PyTorch's): +inf at 0, NaN below 0.
    Kernels: kernels/elementwise.cl :: entr_op
    """
erfcx = _unary_xy("erfcx_op", "erfcx", lambda g, x, y: ew.mul(
    g, ew.sub(ew.mul(ew.mul(x, y), 2.0), 2.0 / math.sqrt(math.pi))), low=False)
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
ndtr = _unary_xy("ndtr_op", "ndtr", lambda g, x, y: ew.mul(
    g, ew.mul(ew.exp(ew.mul(ew.mul(x, x), -0.5)), 1.0 / _SQRT_2PI)))
ndtr.__doc__ = """The standard normal CDF (1 + erf(x / sqrt 2)) / 2 elementwise (PyTorch's
    torch.special.ndtr), through erfc in the tails (relative accuracy in the left tail).

    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    exp(-x^2 / 2) / sqrt(2 pi) g.
    Kernels: kernels/elementwise.cl :: ndtr_op
    """
log_ndtr = _unary_xy("log_ndtr_op", "log_ndtr", lambda g, x, y: ew.div(
    ew.mul(g, math.sqrt(2.0 / math.pi)), erfcx(ew.mul(x, -math.sqrt(0.5)))), low=False)
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
ndtri = _unary_xy("ndtri_op", "ndtri", lambda g, x, y: ew.mul(
    g, ew.mul(ew.exp(ew.mul(ew.mul(y, y), 0.5)), _SQRT_2PI)), low=False)
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
i0e = _unary_xy("i0e_op", "i0e", lambda g, x, y: ew.mul(
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
i1 = _unary_xy("i1_op", "i1", lambda g, x, y: ew.mul(g, _at_zero(
    x, 0.5, ew.sub(ew._launch_unary("i0_op", x), ew.div(y, x)))))
i1.__doc__ = """The modified Bessel function of the first kind of order 1, I1(x), elementwise
    (PyTorch's torch.special.i1): NaN at +-inf (PyTorch's).

    Accuracy: i0's series and asymptotic expansion (kernels/elementwise.cl).
    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    (i0(x) - i1(x) / x) g, 0.5 g where |x| <= eps (PyTorch's i1_backward).
    Kernels: kernels/elementwise.cl :: i1_op, i0_op
    """
i1e = _unary_xy("i1e_op", "i1e", lambda g, x, y: ew.mul(g, _at_zero(x, 0.5, ew.sub(
    ew._launch_unary("i0e_op", x), ew.mul(y, ew.add(ew.sign(x), ew.reciprocal(x)))))))
i1e.__doc__ = """The exponentially scaled modified Bessel function exp(-|x|) I1(x)
    elementwise (PyTorch's torch.special.i1e): +-0 at +-inf.

    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    (i0e(x) - i1e(x) (sgn(x) + 1 / x)) g, 0.5 g where |x| <= eps (PyTorch's).
    Kernels: kernels/elementwise.cl :: i1e_op, i0e_op
    """


def xlog1py(input: Tensor | float, other: Tensor | float) -> Tensor:
    """input * log1p(other) elementwise, with broadcasting, 0 where input is 0 (also at
    other = -1), NaN where other is NaN (PyTorch's torch.special.xlog1py). Either may be a
    number (not both).

    Dtypes:  promoted as div: integers and bool give the default dtype.
    Grad:    input: xlog1py(g, other), 0 where input is 0 and other <= -1; other:
             g * input / (other + 1) (PyTorch's derivatives.yaml).
    Kernels: kernels/elementwise.cl :: xlog1py_op
    """
    return _xlog(xlog1py, "xlog1py", input, other, -1)


def zeta(input: Tensor | float, other: Tensor | float) -> Tensor:
    """The Hurwitz zeta function sum_k (other + k)^-input elementwise, with broadcasting
    (PyTorch's torch.special.zeta; zeta(x, 1) is Riemann's). Either may be a number (not
    both). inf at input = 1, NaN below; at other <= 0 inf where other is an integer, NaN
    unless input is one; 0 at other = +inf (PyTorch's: NaN).

    Accuracy: Cephes' zeta: the direct sum, then the Euler-Maclaurin tail (12 Bernoulli
              terms), in the input's dtype (PyTorch's CPU computes float32 in float64).
    Dtypes:  promoted as div: integers and bool give the default dtype.
    Grad:    other: -input zeta(input + 1, other) g; input: none (backward raises
             RuntimeError, PyTorch's "the derivative for 'zeta' is not implemented.").
    Raises:  NotImplementedError for float16 and bfloat16 (PyTorch's).
    Kernels: kernels/elementwise.cl :: zeta_op
    """
    a, b, dt, shape = ew._prep("zeta", input, other, floating=True)
    if dt in (_F16, _BF16):
        _not_implemented("zeta", a if isinstance(a, Tensor) else b)
    out = ew._launch_binary("zeta_op", a, b, dt, shape)

    def backward(g):
        if _wants(a):
            raise RuntimeError("the derivative for 'zeta' is not implemented.")
        s1 = ew.add(a, 1.0) if isinstance(a, Tensor) else a + 1.0
        return ew._grads(a, b, None, ew.mul(ew.mul(g, ew.neg(a) if isinstance(a, Tensor)
                                                   else -a), zeta(s1, b)))
    return record("zeta", out, ew._inputs(a, b), backward,
                  saved=[t for t in ew._inputs(a, b) if t is not None])


def polygamma(n: int, input: Tensor) -> Tensor:
    """The n-th derivative of digamma elementwise (PyTorch's torch.polygamma /
    torch.special.polygamma): digamma for n = 0, trigamma for n = 1, else
    (-1)^(n+1) n! zeta(n + 1, x). inf or NaN at the poles (0 and the negative integers),
    0 at +inf (PyTorch's n >= 2: NaN).

    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers and bool give the default
             dtype.
    Grad:    polygamma(n + 1, x) g.
    Raises:  TypeError for a non-int n (PyTorch's "argument 'n' (position 1) must be int");
             RuntimeError for n < 0 (PyTorch's message).
    Kernels: kernels/elementwise.cl :: polygamma_op (digamma_w, trigamma_w, zeta_w)
    """
    _int_arg("polygamma", "n", 1, n)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = ew._float_in("polygamma", input)
    if x._storage.dtype is _BF16:
        return ew.via_float32(polygamma, n, x)
    out = ew._launch_binary("polygamma_op", int(n), x, x._storage.dtype, x._shape)
    return record("polygamma", out, (x,), lambda g: (ew.mul(g, polygamma(n + 1, x)),),
                  saved=[x])


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """polygamma(n, self): Tensor.polygamma(n) (PyTorch's: self is the input, n first in the
    function)."""
    return polygamma(n, self)


_polygamma_method.__name__ = "polygamma"  # (Tensor.polygamma_'s docstring names it)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension p elementwise (PyTorch's
    torch.mvlgamma / torch.special.multigammaln): sum_{j<p} lgamma(x - j/2) +
    p (p - 1) / 4 log(pi). As PyTorch 2.14, no check of x > (p - 1) / 2 (it would sync):
    below it the sum of lgamma's values (inf at its poles).

    Dtypes:  floats keep theirs (float16 and bfloat16 too); integers give the default dtype.
    Grad:    sum_j digamma(x - j/2) g (through lgamma and the sum).
    Raises:  TypeError for a non-int p; RuntimeError for p < 1 and for a bool tensor
             (PyTorch's messages).
    """
    _int_arg("mvlgamma", "p", 2, p)
    if isinstance(input, Tensor) and input.dtype.is_bool:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = ew._float_in("mvlgamma", input)
    offsets = creation.arange(p, dtype=x.dtype, device=x._storage.device)
    args = ew.add(vw.unsqueeze(x, -1), ew.mul(offsets, -0.5))
    return ew.add(rd.sum(lgamma(args), -1), p * (p - 1) / 4.0 * math.log(math.pi))


__all__ += ["entr", "erfcx", "ndtr", "log_ndtr", "ndtri", "i0e", "i1", "i1e", "xlog1py", "zeta",
            "polygamma", "mvlgamma"]
