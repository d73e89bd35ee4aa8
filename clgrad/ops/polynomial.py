"""The orthogonal polynomials of torch.special (PyTorch's names): chebyshev_polynomial_t/u/v/w,
shifted_chebyshev_polynomial_t/u/v/w, hermite_polynomial_h, hermite_polynomial_he,
laguerre_polynomial_l, legendre_polynomial_p: p_n(x) elementwise.

Every function: ``f(input, n)``, input (x) and n tensors or numbers (not both numbers),
broadcast together.

Shapes:  broadcast(input, n).
Dtypes:  promoted as div (dtypes.result_type; integers and bool give the default dtype): n is
         taken in that dtype too, then truncated to an integer, as PyTorch's.
Values:  PyTorch 2.14's conventions (aten/src/ATen/native/Math.h): n < 0 gives 0, and so does
         a NaN or infinite n (x86's conversion of such n to int64 is negative); exact values at
         the ends of the interval; inside (-1, 1) the Chebyshev polynomials of larger n (T:
         n > 6; U, V, W: n > 8; shifted T, U, V: n > 6, W: n > 4) take their trigonometric
         closed forms (DLMF 18.5.1-18.5.4), elsewhere (|x| > 1 too) the three-term recurrences
         (DLMF 18.9.1-18.9.2, Table 18.9.1), which stop at the first NaN; hermite_polynomial_h
         and _he are NaN for n > 128 (float32) or 512 (float64), PyTorch's limits. A
         recurrence takes n steps per element, as PyTorch's.
         One difference: shifted_chebyshev_polynomial_w where cos(acos(2x - 1) / 2) rounds to
         1 (x within a few ulp below 1) gives W_n(1) = 2n + 1, where PyTorch's gives +-1.
Grad:    none: backward raises NotImplementedError ("the derivative for
         'chebyshev_polynomial_t' is not implemented."). PyTorch 2.14 records none (its outputs
         have no grad_fn, so a graph through them silently drops their part of a gradient);
         clgrad raises instead (README: "Deliberately different from PyTorch").
Raises:  TypeError when neither is a Tensor or for a non-number; NotImplementedError for
         float16 and bfloat16 (PyTorch's "chebyshev_polynomial_t_cpu" not implemented for
         'Half'); ValueError for shapes that do not broadcast.
Accuracy: measured against the recurrences in exact fractions (tests/test_special_families.py)
         over x in [-1.3, 1.3] ([-0.2, 1.2] shifted, [-2, 6] Laguerre), n <= 25: float64
         within 1.2e-14 of max(|p_n(x)|, n, 1) (the closed forms inside (-1, 1) carry n times
         acos's error), float32 within 27 ulp of that scale.
Kernels: kernels/polynomial.cl (chebyshev_t_op ... legendre_p_op)
"""
from __future__ import annotations

from clgrad.autograd import record
from clgrad.ops import elementwise as ew
from clgrad.ops.special import _BF16, _F16, _not_implemented, _wants
from clgrad.tensor import Tensor

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p"]

_FILE = "polynomial.cl"


def _polynomial(op: str, kname: str, input, n) -> Tensor:
    """p_n(input) by the kernel ``kname`` (see the module's docstring)."""
    a, b, dt, shape = ew._prep(op, input, n, floating=True)
    if dt in (_F16, _BF16):
        _not_implemented(op, a if isinstance(a, Tensor) else b)
    out = ew._launch_binary(kname, a, b, dt, shape, file=_FILE)
    if not (_wants(a) or _wants(b)):
        return out

    def backward(g):
        raise NotImplementedError(f"the derivative for '{op}' is not implemented.")
    return record(op, out, ew._inputs(a, b), backward)


def chebyshev_polynomial_t(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Chebyshev polynomial of the first kind T_n(x) (PyTorch's
    torch.special.chebyshev_polynomial_t; DLMF 18.3): T_0 = 1, T_1 = x,
    T_(k+1) = 2x T_k - T_(k-1); cos(n acos x) inside (-1, 1) for n > 6. See the module's
    docstring for shapes, dtypes, errors and accuracy."""
    return _polynomial("chebyshev_polynomial_t", "chebyshev_t_op", input, n)


def chebyshev_polynomial_u(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Chebyshev polynomial of the second kind U_n(x) (PyTorch's
    torch.special.chebyshev_polynomial_u; DLMF 18.3): U_0 = 1, U_1 = 2x, then T's recurrence;
    sin((n+1) t) / sin t, t = acos x, inside (-1, 1) for n > 8."""
    return _polynomial("chebyshev_polynomial_u", "chebyshev_u_op", input, n)


def chebyshev_polynomial_v(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Chebyshev polynomial of the third kind V_n(x) (PyTorch's
    torch.special.chebyshev_polynomial_v; DLMF 18.3): V_0 = 1, V_1 = 2x - 1, then T's
    recurrence; cos((n + 1/2) t) / cos(t / 2) inside (-1, 1) for n > 8."""
    return _polynomial("chebyshev_polynomial_v", "chebyshev_v_op", input, n)


def chebyshev_polynomial_w(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Chebyshev polynomial of the fourth kind W_n(x) (PyTorch's
    torch.special.chebyshev_polynomial_w; DLMF 18.3): W_0 = 1, W_1 = 2x + 1, then T's
    recurrence; sin((n + 1/2) t) / sin(t / 2) inside (-1, 1) for n > 8."""
    return _polynomial("chebyshev_polynomial_w", "chebyshev_w_op", input, n)


def shifted_chebyshev_polynomial_t(input: Tensor | float, n: Tensor | float) -> Tensor:
    """T*_n(x) = T_n(2x - 1), the Chebyshev polynomial of the first kind on [0, 1] (PyTorch's
    torch.special.shifted_chebyshev_polynomial_t; DLMF 18.7.11)."""
    return _polynomial("shifted_chebyshev_polynomial_t", "shifted_chebyshev_t_op", input, n)


def shifted_chebyshev_polynomial_u(input: Tensor | float, n: Tensor | float) -> Tensor:
    """U*_n(x) = U_n(2x - 1) (PyTorch's torch.special.shifted_chebyshev_polynomial_u)."""
    return _polynomial("shifted_chebyshev_polynomial_u", "shifted_chebyshev_u_op", input, n)


def shifted_chebyshev_polynomial_v(input: Tensor | float, n: Tensor | float) -> Tensor:
    """V*_n(x) = V_n(2x - 1) (PyTorch's torch.special.shifted_chebyshev_polynomial_v)."""
    return _polynomial("shifted_chebyshev_polynomial_v", "shifted_chebyshev_v_op", input, n)


def shifted_chebyshev_polynomial_w(input: Tensor | float, n: Tensor | float) -> Tensor:
    """W*_n(x) = W_n(2x - 1) (PyTorch's torch.special.shifted_chebyshev_polynomial_w)."""
    return _polynomial("shifted_chebyshev_polynomial_w", "shifted_chebyshev_w_op", input, n)


def hermite_polynomial_h(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The physicists' Hermite polynomial H_n(x) (PyTorch's
    torch.special.hermite_polynomial_h; DLMF 18.9.1 with Table 18.9.1): H_0 = 1, H_1 = 2x,
    H_(k+1) = 2x H_k - 2k H_(k-1); NaN for n > 128 (float32) or 512 (float64)."""
    return _polynomial("hermite_polynomial_h", "hermite_h_op", input, n)


def hermite_polynomial_he(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The probabilists' Hermite polynomial He_n(x) (PyTorch's
    torch.special.hermite_polynomial_he): He_0 = 1, He_1 = x, He_(k+1) = x He_k - k He_(k-1);
    NaN for n > 128 (float32) or 512 (float64)."""
    return _polynomial("hermite_polynomial_he", "hermite_he_op", input, n)


def laguerre_polynomial_l(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Laguerre polynomial L_n(x) (PyTorch's torch.special.laguerre_polynomial_l): L_0 = 1,
    L_1 = 1 - x, (k+1) L_(k+1) = (2k + 1 - x) L_k - k L_(k-1); 1 at x = 0."""
    return _polynomial("laguerre_polynomial_l", "laguerre_l_op", input, n)


def legendre_polynomial_p(input: Tensor | float, n: Tensor | float) -> Tensor:
    """The Legendre polynomial P_n(x) (PyTorch's torch.special.legendre_polynomial_p): P_0 = 1,
    P_1 = x, (k+1) P_(k+1) = (2k+1) x P_k - k P_(k-1); +-1 at x = +-1."""
    return _polynomial("legendre_polynomial_p", "legendre_p_op", input, n)
