"""Muon (momentum orthogonalised by Newton-Schulz), PyTorch's torch.optim.Muon (2.9+)."""
from __future__ import annotations

import math

from clgrad import dtypes
from clgrad.optim.optimizer import Optimizer
from clgrad.tensor import Tensor

__all__ = ["Muon"]

# Keller Jordan's quintic coefficients and defaults (PyTorch's torch/optim/_muon.py)
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
EPS, DEFAULT_NS_STEPS = 1e-7, 5
_ADJUST = (None, "original", "match_rms_adamw", "spectral_unclamped")


class Muon(Optimizer):
    """Muon (K. Jordan et al., "Muon: An optimizer for hidden layers in neural networks",
    2024; PyTorch's torch.optim.Muon) for 2-D parameters (A, B):

        buf = lerp(buf, g, 1 - momentum)                    (buf starts at 0)
        u = lerp(g, buf, momentum) if nesterov else buf
        O = NS_k^(a,b,c)(u; eps)
        p = p * (1 - lr * weight_decay)                       (decoupled weight decay)
        p = p - AdjustLR(lr; A, B) * O

    NS_k (``zeropower_via_newtonschulz``): X = u in bfloat16 (transposed when A > B),
    X = X / max(||X||_F, eps), then k times: G = X X^T; X = a X + (b G + c G G) X; PyTorch's
    ``AdjustLR``: 'original' (None) lr * sqrt(max(1, A / B)); 'match_rms_adamw' (Moonshot,
    "Muon is Scalable for LLM Training", 2025) lr * 0.2 * sqrt(max(A, B));
    'spectral_unclamped' lr * sqrt(A / B). lerp is torch.lerp (clgrad.lerp: PyTorch's
    two-sided form, |w| < 0.5: s + w (e - s), else e - (e - s)(1 - w), each rounded once).

    Args:    params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
             ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-7, ns_steps=5,
             adjust_lr_fn=None ('original', 'match_rms_adamw' or 'spectral_unclamped')
    Dtypes:  the Newton-Schulz iteration runs in bfloat16, as PyTorch's (its matmuls summed in
             float32 and rounded once, as PyTorch's CPU); the momentum buffer and the
             parameter keep their dtype, so a float64 parameter follows PyTorch's float64
             trajectory up to the bfloat16 roundings both make at the same points (on large
             matrices the float32 sums' order, PyTorch's BLAS vs clgrad's GEMM, flips one
             now and then, which the iteration amplifies); a bfloat16 parameter is updated
             in float32 and rounded once, as by every clgrad optimizer (PyTorch rounds after
             each op: a bfloat16 unit apart at times)
    State:   ``momentum_buffer`` per parameter (PyTorch's key; no ``step``)
    Ops:     composed of tensor ops (lerp, norm, matmul, addmm): 3 GEMMs per NS step
    Raises:  ValueError (PyTorch's messages) for lr, momentum or weight_decay < 0, another
             adjust_lr_fn, a parameter that is not 2-D ("Muon only supports 2D parameters
             ..."), ns_steps >= 100 or ns_coefficients of other than 3 values (at the step)
    """

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1,
                 momentum: float = 0.95, nesterov: bool = True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps: float = EPS,
                 ns_steps: int = DEFAULT_NS_STEPS, adjust_lr_fn: str | None = None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn not in _ADJUST:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                                      nesterov=nesterov, ns_coefficients=ns_coefficients,
                                      eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {_size(p)}")

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        lr = group["lr"]
        lr = lr.item() if isinstance(lr, Tensor) else lr
        momentum = group["momentum"]
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = grad.new_zeros(tuple(grad.shape))
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                            group["ns_steps"], group["eps"])
        p.mul_(1 - lr * group["weight_decay"])
        p.add_(update, alpha=-adjust_lr(lr, group["adjust_lr_fn"], tuple(p.shape)))


def zeropower_via_newtonschulz(grad: Tensor, ns_coefficients, ns_steps: int,
                               eps: float) -> Tensor:
    """Muon's orthogonalisation, PyTorch's ``_zeropower_via_newtonschulz``: X = grad in
    bfloat16 (transposed when it has more rows than columns), X / max(||X||_F, eps), then
    ``ns_steps`` times G = X X^T, X = a X + (b G + c G G) X. A bfloat16 (A, B) tensor whose
    singular values lie roughly in [0.5, 1.5] (not exactly U V^T: the quintic is tuned for
    speed). Raises ValueError (PyTorch's messages) for ns_steps >= 100, a grad that is not
    2-D, or coefficients of other than 3 values."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = grad.shape[0] > grad.shape[1]
    x = grad.to(dtypes.bfloat16)
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x.matmul(x.T)
        gram_update = gram.addmm(gram, gram, beta=b, alpha=c)
        x = x.addmm(gram_update, x, beta=a)
    return x.T if tall else x


def adjust_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    """Muon's learning-rate scale for a parameter of ``shape`` (A, B, ...): 'original' (None)
    sqrt(max(1, A / B)), 'match_rms_adamw' 0.2 sqrt(max(A, B)), 'spectral_unclamped'
    sqrt(A / B) (PyTorch's ``_adjust_lr``)."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    elif adjust_lr_fn == "spectral_unclamped":
        ratio = math.sqrt(rows / cols)
    else:
        ratio = 1.0
    return lr * ratio


def _size(p: Tensor) -> str:
    """PyTorch's torch.Size repr of p's shape."""
    return f"torch.Size({list(p.shape)})"
