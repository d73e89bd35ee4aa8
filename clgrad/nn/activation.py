"""Activation layers with PyTorch's names, arguments and reprs; each calls one function of
``clgrad.nn.functional`` (the math and its gradient live in clgrad/ops/activation.py)."""
from __future__ import annotations

from clgrad.creation import full
from clgrad.nn import functional as F
from clgrad.nn.module import Module, Parameter

__all__ = ["ReLU", "LeakyReLU", "ReLU6", "Hardtanh", "GELU", "SiLU", "ELU", "Hardswish",
           "Hardsigmoid", "Softplus", "Mish", "PReLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax"]


class ReLU(Module):
    """max(x, 0) elementwise (written into x when ``inplace``)."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        """max(x, 0); with ``inplace`` written into x, which is returned.

        Shapes:  x (*) -> same; see clgrad.nn.functional.relu
        """
        return F.relu(x, inplace=self.inplace)

    def extra_repr(self):
        """'inplace=True' when in place, else ''."""
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x if x > 0 else negative_slope * x."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x):
        """x where x > 0, else negative_slope * x (in x when ``inplace``).

        Shapes:  x (*) -> same; see clgrad.nn.functional.leaky_relu
        Raises:  TypeError for a non-floating input
        """
        return F.leaky_relu(x, self.negative_slope, inplace=self.inplace)

    def extra_repr(self):
        """'negative_slope=S' (and ', inplace=True'), as PyTorch's repr."""
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace
                                                          else "")


class _Inplace(Module):
    """A parameterless activation ``F.<name>(x, inplace=...)``."""
    _fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        """``F.<name>(x, inplace=self.inplace)``; x (*) -> same (written into x when in place)."""
        return type(self)._fn(x, inplace=self.inplace)

    def extra_repr(self):
        """'inplace=True' when in place, else ''."""
        return "inplace=True" if self.inplace else ""


class ReLU6(_Inplace):
    """min(max(x, 0), 6); gradient 0 at 0 and 6."""
    _fn = F.relu6


class SiLU(_Inplace):
    """x sigmoid(x)."""
    _fn = F.silu


class Hardswish(_Inplace):
    """x relu6(x + 3) / 6."""
    _fn = F.hardswish


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6."""
    _fn = F.hardsigmoid


class Mish(_Inplace):
    """x tanh(softplus(x))."""
    _fn = F.mish


class Hardtanh(Module):
    """clamp(x, min_val, max_val); gradient 0 at and beyond the bounds."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: expected min_val <= max_val, got {min_val} > "
                             f"{max_val}")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x):
        """clamp(x, min_val, max_val); x (*) -> same. See clgrad.nn.functional.hardtanh."""
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        """'min_val=A, max_val=B' (and ', inplace=True')."""
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class GELU(Module):
    """x Phi(x), exact (erf) or ``approximate='tanh'``."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: expected approximate 'none' or 'tanh', got "
                             f"{approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        """x Phi(x) (exact or tanh approximation); x (*) -> same. See clgrad.nn.functional.gelu."""
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self):
        """"approximate='none'" or "approximate='tanh'"."""
        return f"approximate={self.approximate!r}"


class ELU(Module):
    """x for x > 0, else alpha (exp(x) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        """x for x > 0, else alpha (exp(x) - 1); x (*) -> same. See clgrad.nn.functional.elu."""
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self):
        """'alpha=A' (and ', inplace=True')."""
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """log(1 + exp(beta x)) / beta; x where beta x > threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        """log(1 + exp(beta x)) / beta, x where beta x > threshold; x (*) -> same (F.softplus)."""
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        """'beta=B, threshold=T'."""
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module):
    """x where x > 0, else a x with a learnt slope: one (``num_parameters=1``) or one per
    channel (dim 1), initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        if not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"PReLU: expected num_parameters >= 1, got {num_parameters!r}")
        self.num_parameters = num_parameters
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype, device=device))

    def forward(self, x):
        """x where x > 0, else weight * x; weight broadcast along dim 1 when it has C elements.

        Shapes:  x (N, C, *) (or any shape with num_parameters=1) -> same;
                 see clgrad.nn.functional.prelu
        Raises:  RuntimeError when num_parameters is neither 1 nor x.shape[1]
        """
        return F.prelu(x, self.weight)

    def extra_repr(self):
        """'num_parameters=P'."""
        return f"num_parameters={self.num_parameters}"


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, x):
        """1 / (1 + exp(-x)); x (*) -> same. See clgrad.nn.functional.sigmoid."""
        return F.sigmoid(x)


class Tanh(Module):
    """tanh(x)."""

    def forward(self, x):
        """tanh(x); x (*) -> same. See clgrad.nn.functional.tanh."""
        return F.tanh(x)


class Softmax(Module):
    """exp(x) / sum(exp(x)) along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        """softmax(x) along ``dim``; x (*) -> same. See clgrad.nn.functional.softmax
        (``dim=None`` takes PyTorch's legacy choice of dim).
        """
        return F.softmax(x, self.dim)

    def extra_repr(self):
        """'dim=D'."""
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log(softmax(x)) along ``dim``, computed stably."""

    def forward(self, x):
        """log(softmax(x)) along ``dim``, stable; x (*) -> same. See F.log_softmax."""
        return F.log_softmax(x, self.dim)


# -- h4 (issue 22) -----------------------------------------------------------------------------
class LogSigmoid(Module):
    """log(sigmoid(x)), computed stably (finite for every finite x)."""

    def forward(self, x):
        """log(sigmoid(x)); x (*) -> same. See clgrad.nn.functional.logsigmoid."""
        return F.logsigmoid(x)


__all__ += ["LogSigmoid"]


# -- selu, celu, softsign, the shrinks, threshold, glu, softmin, rrelu -----------------------
class SELU(_Inplace):
    """scale (x if x > 0 else alpha (exp(x) - 1)), PyTorch's constants (F.selu)."""
    _fn = F.selu


class CELU(Module):
    """max(0, x) + min(0, alpha (exp(x / alpha) - 1))."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        """F.celu(x, alpha); x (*) -> same (written into x when ``inplace``)."""
        return F.celu(x, self.alpha, self.inplace)

    def extra_repr(self):
        """'alpha=A' (and ', inplace=True')."""
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, x):
        """x / (1 + |x|); x (*) -> same. See clgrad.nn.functional.softsign."""
        return F.softsign(x)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, x):
        """x - tanh(x); x (*) -> same. See clgrad.nn.functional.tanhshrink."""
        return F.tanhshrink(x)


class Softshrink(Module):
    """x -+ lambd outside [-lambd, lambd], else 0."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, x):
        """F.softshrink(x, lambd); x (*) -> same. Raises RuntimeError for lambd < 0."""
        return F.softshrink(x, self.lambd)

    def extra_repr(self):
        """The lambd, as PyTorch's repr."""
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x where |x| > lambd, else 0."""

    def forward(self, x):
        """F.hardshrink(x, lambd); x (*) -> same."""
        return F.hardshrink(x, self.lambd)


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x):
        """F.threshold(x, threshold, value); x (*) -> same (into x when ``inplace``)."""
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        """'threshold=T, value=V' (and ', inplace=True')."""
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else "")


class GLU(Module):
    """a sigmoid(b) of the two halves of the input along ``dim``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        """F.glu(x, dim); (*, 2n, *) -> (*, n, *). Raises RuntimeError for an odd size."""
        return F.glu(x, self.dim)

    def extra_repr(self):
        """'dim=D'."""
        return f"dim={self.dim}"


class Softmin(Softmax):
    """softmax(-x) along ``dim``."""

    def forward(self, x):
        """softmax(-x) along ``dim``; x (*) -> same. See clgrad.nn.functional.softmin."""
        return F.softmin(x, self.dim)


class RReLU(Module):
    """Randomized leaky ReLU: slopes ~ U(lower, upper) per element in training, the mean
    slope (lower + upper) / 2 in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x):
        """F.rrelu(x, lower, upper, self.training); x (*) -> same (into x when ``inplace``)."""
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        """'lower=L, upper=U' (and ', inplace=True')."""
        return f"lower={self.lower}, upper={self.upper}" + (
            ", inplace=True" if self.inplace else "")


__all__ += ["SELU", "CELU", "Softsign", "Tanhshrink", "Softshrink", "Hardshrink", "Threshold",
            "GLU", "Softmin", "RReLU"]


class Softmax2d(Module):
    """softmax over the channels of (N, C, H, W) or (C, H, W) inputs (dim -3)."""

    def forward(self, x):
        """softmax(x, dim=-3). Raises ValueError for an input that is not 3-D or 4-D."""
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {x.ndim}D "
                             f"instead")
        return F.softmax(x, -3)


__all__ += ["Softmax2d"]
