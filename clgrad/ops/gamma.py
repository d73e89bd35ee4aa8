"""The gamma function family (PyTorch's names): lgamma, digamma, polygamma, mvlgamma
(torch.*), torch.special's zeta (Hurwitz's: polygamma's for n >= 2), and the regularized
incomplete gamma functions igamma, igammac (torch.*, Tensor.*; torch.special's gammainc,
gammaincc).

Kernels: kernels/elementwise.cl (``lgamma_op``, ``digamma_op``, ``trigamma_op``, ``zeta_op``,
``polygamma_op``), kernels/gamma.cl (``igamma_op``, ``igammac_op``).
"""
from __future__ import annotations

import math

from clgrad import creation
from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd
from clgrad.ops import views as vw
from clgrad.ops.special import (_F16, _BF16, _not_implemented, _here, _int_arg,
                                _wants)
from clgrad.tensor import Tensor

__all__ = ["lgamma", "digamma", "polygamma", "mvlgamma", "zeta"]

def _trigamma(x: Tensor) -> Tensor:
    """polygamma(1, x): digamma's derivative (no gradient of its own here)."""
    return ew._launch_unary("trigamma_op", x.detach())


lgamma = _here(__name__, ew._unary_float(
    "lgamma_op", "lgamma", lambda g, x, y: ew.mul(g, digamma(x)), "x", double=True))
# (lgamma's second derivative is digamma's first, polygamma(1, x) under create_graph)
lgamma.__doc__ = """log|Gamma(x)| elementwise (PyTorch's torch.lgamma): inf at 0 and at the
    negative integers, inf at +-inf.

    Dtypes:  floats keep theirs; integers and bool give the default dtype.
    Grad:    g * digamma(x).
    Kernels: kernels/elementwise.cl :: lgamma_op (OpenCL's lgamma)
    """
digamma = _here(__name__, ew._unary_float("digamma_op", "digamma",
                                lambda g, x, y: ew.mul(g, _trigamma(x)), "x",
                                double=lambda g, x: ew.mul(g, polygamma(1, x))))
digamma.__doc__ = """The digamma function d/dx log Gamma(x) elementwise (PyTorch's
    torch.digamma / torch.special.digamma): -inf at +0, inf at -0, NaN at the negative
    integers (PyTorch >= 1.8).

    Dtypes:  floats keep theirs; integers and bool give the default dtype.
    Grad:    g * polygamma(1, x) (trigamma's kernel; under create_graph polygamma(1, x),
             whose own gradient is polygamma(2, x) g: differentiable again).
    Kernels: kernels/elementwise.cl :: digamma_op, trigamma_op (PyTorch's calc_digamma and
             calc_trigamma: reflection, recurrence, asymptotic series)
    """


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
                  saved=[x], double=True)


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


# -- the regularized incomplete gamma functions (kernels/gamma.cl) -------------------------------
def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(a, x) = gamma(a, x) / Gamma(a)
    elementwise, a = input, x = other, with broadcasting (PyTorch's torch.igamma,
    Tensor.igamma, torch.special.gammainc; DLMF 8.2.4).

    Values:  PyTorch's boundaries (SciPy's): NaN for a < 0 or x < 0 and at a = x = 0;
             P(0, x > 0) = 1; P(a, 0) = 0; P(inf, x) = 0 (NaN at x = inf); P(a, inf) = 1.
    Accuracy: Cephes igam.c as SciPy revised it (see kernels/gamma.cl), measured against
             float64 references in Python (the series DLMF 8.11.4 and the continued fraction
             8.9.2 in Python floats, tests/test_special_families.py) over a in [0.01, 200],
             x / a in [e^-2, e^2]: float64 within 2.2e-13 relative (the reference's own error:
             math.lgamma's rounding times the exponent), float32 within 132 ulp (the
             exponent of x^a e^-x / Gamma(a) is rounded in float). PyTorch's float64 is off by
             up to 2e-9 relative where it takes its asymptotic expansion (20 < a < 200, x near
             a).
    Dtypes:  promoted (dtypes.result_type), floats only; float16 computes in float, bfloat16
             through float32 copies (PyTorch's too).
    Grad:    other: exp((a - 1) log x - x - lgamma(a)) g (PyTorch's); input: backward raises
             NotImplementedError (PyTorch's "the derivative for 'igamma: input' is not
             implemented.").
    Raises:  NotImplementedError when both are integer or bool tensors (PyTorch's
             "igamma_cpu" not implemented for 'Long'); TypeError for a non-Tensor (the public
             entries); ValueError for shapes that do not broadcast.
    Kernels: kernels/gamma.cl :: igamma_op
    """
    return _igamma("igamma", igamma, input, other)


def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x) elementwise,
    accurate where P is close to 1 (PyTorch's torch.igammac, Tensor.igammac,
    torch.special.gammaincc; DLMF 8.2.4).

    Values:  Q(0, x > 0) = 0; Q(a, 0) = 1; Q(inf, x) = 1 (NaN at x = inf); Q(a, inf) = 0; NaN
             for a < 0 or x < 0 and at a = x = 0.
    Accuracy, dtypes, errors: igamma's (the series DLMF 8.7.3 at small x).
    Grad:    other: -exp((a - 1) log x - x - lgamma(a)) g; input: backward raises
             NotImplementedError ("the derivative for 'igammac: input' is not implemented.").
    Kernels: kernels/gamma.cl :: igammac_op
    """
    return _igamma("igammac", igammac, input, other)


def _igamma(op: str, fn, input, other) -> Tensor:
    a, b, dt, shape = ew._prep(op, input, other)
    if not dt.is_floating_point:
        _not_implemented(op, a if isinstance(a, Tensor) else b)
    if dt is _BF16:
        return ew.via_float32(fn, *ew._opmath((input, other), (a, b)))
    out = ew._launch_binary(op + "_op", a, b, dt, shape, file="gamma.cl")

    def backward(g):
        if _wants(a):
            raise NotImplementedError(f"the derivative for '{op}: input' is not implemented.")
        d = ew.mul(g, ew.exp(ew.sub(ew.sub(ew.mul(ew.sub(a, 1.0), ew.log(b)), b), lgamma(a))))
        return ew._grads(a, b, None, d if op == "igamma" else ew.neg(d))
    return record(op, out, ew._inputs(a, b), backward,  # (double: recording ops)
                  saved=[t for t in ew._inputs(a, b) if t is not None], double=True)


__all__ += ["igamma", "igammac"]
