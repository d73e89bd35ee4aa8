"""PyTorch's ``torch.special`` names.

Functions clgrad has at the top level too (the same functions, the same signatures): digamma
(and its alias psi), erf, erfc, erfinv, exp2, expm1, expit (sigmoid), gammaln (lgamma), i0,
log1p, log_softmax, softmax, logit, logsumexp, round, sinc, xlogy, polygamma, multigammaln
(mvlgamma). torch.special's own: entr, xlog1py (clgrad/ops/special.py), erfcx, log_ndtr, ndtr,
ndtri (clgrad/ops/erf.py), i0e, i1, i1e (clgrad/ops/bessel.py), zeta (clgrad/ops/gamma.py).
Every function but softmax and log_softmax takes PyTorch's ``out=``.

The Bessel functions (clgrad/ops/bessel.py): bessel_j0, bessel_j1, bessel_y0, bessel_y1,
modified_bessel_i0, modified_bessel_i1, modified_bessel_k0, modified_bessel_k1,
scaled_modified_bessel_k0, scaled_modified_bessel_k1, spherical_bessel_j0, airy_ai; the
incomplete gamma functions gammainc and gammaincc (torch.igamma and torch.igammac:
clgrad/ops/gamma.py); the orthogonal polynomials (clgrad/ops/polynomial.py):
chebyshev_polynomial_t/u/v/w, shifted_chebyshev_polynomial_t/u/v/w, hermite_polynomial_h,
hermite_polynomial_he, laguerre_polynomial_l, legendre_polynomial_p.
"""
from clgrad.errors import missing_attribute as _missing_attribute
from clgrad.ops._util import check_tensor_args as _check_tensor_args
from clgrad.ops.composite import erf, log_softmax, softmax
from clgrad.ops.elementwise import expm1, log1p, round
from clgrad.ops.elementwise import sigmoid as expit
from clgrad.ops.inplace import with_out as _with_out
from clgrad.ops.math_ops import exp2, i0, logit, sinc
from clgrad.ops.reduce import logsumexp
from clgrad.ops.bessel import (airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1, i0e, i1, i1e,
                               modified_bessel_i0, modified_bessel_i1, modified_bessel_k0,
                               modified_bessel_k1, scaled_modified_bessel_k0,
                               scaled_modified_bessel_k1, spherical_bessel_j0)
from clgrad.ops.erf import erfc, erfcx, erfinv, log_ndtr, ndtr, ndtri
from clgrad.ops.gamma import digamma, polygamma, zeta
from clgrad.ops.gamma import digamma as psi
from clgrad.ops.gamma import lgamma as gammaln
from clgrad.ops.gamma import igamma as gammainc
from clgrad.ops.gamma import igammac as gammaincc
from clgrad.ops.gamma import mvlgamma as multigammaln
from clgrad.ops.polynomial import (chebyshev_polynomial_t, chebyshev_polynomial_u,
                                   chebyshev_polynomial_v, chebyshev_polynomial_w,
                                   hermite_polynomial_h, hermite_polynomial_he,
                                   laguerre_polynomial_l, legendre_polynomial_p,
                                   shifted_chebyshev_polynomial_t,
                                   shifted_chebyshev_polynomial_u,
                                   shifted_chebyshev_polynomial_v,
                                   shifted_chebyshev_polynomial_w)
from clgrad.ops.special import entr, xlog1py, xlogy

__all__ = ["digamma", "psi", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit",
           "expm1", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax",
           "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "round", "sinc",
           "softmax", "xlog1py", "xlogy", "zeta"]
__all__ += ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
            "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
            "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
            "gammainc", "gammaincc", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
            "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
            "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
            "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
            "laguerre_polynomial_l", "legendre_polynomial_p"]


def __getattr__(name):
    """A name not in this module: PyTorch's AttributeError, naming it as not implemented."""
    raise _missing_attribute(__name__, name)


_with_out(globals(), {n: False for n in __all__ if n not in ("softmax", "log_softmax")})
_check_tensor_args(globals(), __name__)  # non-Tensor arguments: TypeError naming them
