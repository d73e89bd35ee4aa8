"""torch.nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal, as
parametrizations (clgrad/nn/utils/parametrize.py) with PyTorch 2.14's modules, buffers and
state_dict keys. Source: torch/nn/utils/parametrizations.py, followed step by step.
"""
from __future__ import annotations

from enum import Enum, auto

import numpy as np

from clgrad.autograd import no_grad
from clgrad.creation import eye, tensor, zeros_like
from clgrad.nn.conv import ConvTranspose1d, ConvTranspose2d
from clgrad.nn.module import Module
from clgrad.nn.three_d import ConvTranspose3d
from clgrad.nn.utils import parametrize
from clgrad.ops import decomp
from clgrad.ops.composite import mv
from clgrad.ops.index import cat
from clgrad.ops.linalg import householder_product, matrix_exp, vector_norm
from clgrad.ops.products import vdot
from clgrad.ops.reduce import normalize
from clgrad.tensor import Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# -- weight_norm -----------------------------------------------------------------------------

def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """PyTorch's ``torch.norm_except_dim``: the ``pow``-norm of ``v`` over every dim but
    ``dim``, keeping v's rank (shape 1 except at ``dim``); ``dim=-1`` means over the whole
    tensor (a 0-dim result), not over the last dim, as PyTorch (weight_norm's ``dim=None``).
    Raises IndexError for a dim out of range."""
    if dim == -1:
        return vector_norm(v, pow)
    nd = v.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"norm_except_dim: dim {dim} is out of range for a tensor of "
                         f"{nd} dims")
    dim %= nd
    return vector_norm(v, pow, dim=tuple(d for d in range(nd) if d != dim), keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """PyTorch's ``torch._weight_norm``: ``v * (g / norm_except_dim(v, 2, dim))``
    (Salimans & Kingma 2016, arXiv:1602.07868), differentiable in v and g."""
    return v * (g / norm_except_dim(v, 2, dim))


class _WeightNorm(Module):
    """weight = g * v / ||v|| (norm over every dim but ``dim``; dim None/-1: the whole
    tensor); originals: original0 = g, original1 = v (PyTorch's order and names)."""

    def __init__(self, dim: int | None = 0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Weight normalization (Salimans & Kingma 2016): ``module.<name>`` becomes
    ``g * v / ||v||`` with g = ``parametrizations.<name>.original0`` (shape 1 except at
    ``dim``; 0-dim for ``dim=None``) and v = ``original1`` (the weight's shape), the norm over
    every dim but ``dim``. A state_dict of the legacy ``weight_norm`` (``<name>_g``,
    ``<name>_v``) loads into it (a load pre-hook renames the keys, as PyTorch).
    Returns: module.
    Raises:  ValueError when ``name`` names no parameter or buffer"""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def _weight_norm_compat_hook(state_dict, prefix, local_metadata, strict, missing_keys,
                                 unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(_weight_norm_compat_hook)
    return module


# -- spectral_norm ---------------------------------------------------------------------------

class _SpectralNorm(Module):
    """weight / sigma, sigma = u . (W v) with W the weight as a matrix (``dim`` first, the
    rest flattened) and u, v (buffers ``_u``, ``_v``) the power method's estimates of its
    first singular vectors, advanced ``n_power_iterations`` steps on each access in training
    mode only (15 steps at creation); a 1-D weight is normalized exactly instead."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim())
                                                if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """u <- normalize(W v), v <- normalize(W^T u), n times, written into the buffers in
        place (PyTorch's ``out=``: replicas sharing the buffers see the update)."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(mv(weight_mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        # clones: a second forward's in-place update must not touch what the first saved
        u, v = self._u.clone(), self._v.clone()
        sigma = vdot(u, mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Spectral normalization (Miyato et al. 2018, arXiv:1802.05957): ``module.<name>``
    becomes W / sigma(W), sigma estimated by the power method (see _SpectralNorm); buffers
    ``parametrizations.<name>.0._u`` / ``._v`` (PyTorch's keys). ``dim``: the output dim
    (default 0, 1 for ConvTranspose1d/2d/3d). u and v start from clgrad's normal generator,
    so they differ from PyTorch's for one seed; copy them (state_dict) to compare.
    Returns: module.
    Raises:  ValueError when ``name`` names no tensor or n_power_iterations <= 0; IndexError
             for a dim out of range"""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


# -- orthogonal ------------------------------------------------------------------------------

class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


def _is_orthogonal(Q) -> bool:
    """PyTorch's test: allclose(Q^T Q, I, atol=10 n eps(dtype)) (rtol 1e-5)."""
    n, k = Q.shape[-2], Q.shape[-1]
    Id = eye(k, dtype=Q.dtype, device=Q.device)
    atol = 10.0 * n * float(np.finfo(Q.dtype.np).eps)
    return bool(((Q.mT @ Q) - Id).abs().le(atol + 1e-5 * Id).all().item())


def _make_orthogonal(A):
    """The Q of A = QR (A tall) with diag(R) >= 0 (PyTorch's geqrf + householder_product +
    sign fix, here from linalg.qr: the same Q for a full-rank A)."""
    Q, R = decomp.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _geqrf(Q: Tensor):
    """LAPACK geqrf of Q (*, n, k), n >= k, as PyTorch's torch.geqrf: (the Householder vectors
    below the diagonal and R on and above it, tau (*, k)); on the host with NumPy's
    ``qr(mode="raw")`` (which returns the transpose), one matrix at a time."""
    q = Q.detach().numpy().astype(np.float64)
    flat = q.reshape((-1,) + q.shape[-2:])
    raws = [np.linalg.qr(m, mode="raw") for m in flat]
    a = np.stack([h.T for h, _ in raws]).reshape(q.shape)
    tau = np.stack([t for _, t in raws]).reshape(q.shape[:-2] + (q.shape[-1],))
    return _like(a, Q), _like(tau, Q)


def _like(arr: np.ndarray, like: Tensor) -> Tensor:
    return tensor(np.ascontiguousarray(arr), dtype=like.dtype, device=like.device)


class _Orthogonal(Module):
    """Q orthogonal from an unconstrained matrix X (PyTorch's maps): "matrix_exp" exp(A) and
    "cayley" (I + A/2)(I - A/2)^-1 of the skew-symmetric A = X.tril() - X.tril()^T (X padded
    with zeros to n x n), "householder" householder_product(X.tril(-1), tau = 2 / (1 + |v|^2))
    with the columns' signs from X's diagonal; with ``use_trivialization`` Q is ``base @ Q``
    with the buffer ``base`` set by right_inverse."""

    def __init__(self, weight, orthogonal_map: _OrthMaps, *, use_trivialization=True):
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == _OrthMaps.householder:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = householder_product(A, tau)
            # the diagonal of X holds the columns' signs (+-1), not differentiated (PyTorch's)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = decomp.solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        if hasattr(self, "base"):
            Q = self.base @ Q
        if transposed:
            Q = Q.mT
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {Q.shape}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map != _OrthMaps.householder:
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations "
                                              "when use_trivialization=False.")
                # householder: X from the QR of Q, diag(R) > 0 (PyTorch's): the diagonal
                # holds the signs, flipped where LAPACK skipped a reflection (tau == 0)
                A, tau = _geqrf(Q)
                d = A.diagonal(dim1=-2, dim2=-1)
                d.copy_(d.sign() * (1.0 - 2.0 * (tau == 0.0).to(A.dtype)))
                return A.mT if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = Q.new_empty(*(tuple(Q.shape[:-2]) + (n, n - k))).normal_(0, 1)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            neg_Id = zeros_like(Q_init)
            neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_Id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Make ``module.<name>`` (a matrix or a batch of matrices (*, m, n)) orthogonal:
    Q^T Q = I (m >= n) or Q Q^T = I (m < n), PyTorch's parametrization; with
    ``use_trivialization`` (default) the buffer ``parametrizations.<name>.0.base`` holds the
    initial orthogonal matrix (the weight if orthogonal, else its QR's Q with diag(R) >= 0).

    ``orthogonal_map``: "matrix_exp" (linalg.matrix_exp of a skew-symmetric matrix), "cayley"
    or "householder" (linalg.householder_product); None (default): "matrix_exp" for a square
    weight, "householder" otherwise (PyTorch's). "matrix_exp" and "cayley" with
    ``use_trivialization=False`` cannot be assigned to (PyTorch's NotImplementedError);
    "householder" then stores the QR's Householder vectors of the assigned matrix (geqrf on
    the host with NumPy's LAPACK).
    Returns: module.
    Raises:  ValueError for a missing tensor, fewer than 2 dims or an unknown map"""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] \
            else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None) \
        if isinstance(orthogonal_map, str) else None
    if orth_enum is None:
        raise ValueError(f'orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
