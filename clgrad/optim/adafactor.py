"""Adafactor (factored second moments), PyTorch's torch.optim.Adafactor (2.5+)."""
from __future__ import annotations

from clgrad import dtypes
from clgrad.optim.optimizer import Optimizer
from clgrad.tensor import Tensor

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor (N. Shazeer and M. Stern, "Adafactor: Adaptive Learning Rates with Sublinear
    Memory Cost", ICML 2018) in PyTorch's form (torch.optim.Adafactor, 2.5+: no first moment,
    no relative step), t counting this parameter's steps from 1:

        g = -g if maximize
        b = t^beta2_decay;  rho = min(lr, 1 / sqrt(t))
        a = max(eps2, ||p||_2 / sqrt(numel)) * rho          (p before the decay)
        p = p * (1 - lr * weight_decay)
        p of 2+ dims (..., R, C): row = lerp(row, ||g||^2 over C / C, b)   (..., R, 1)
                                  col = lerp(col, ||g||^2 over R / R, b)   (..., 1, C)
                                  var = row @ col / max(mean of row over R, eps1)
        else:                     var = variance = lerp(variance, g^2, b)
        u = g / sqrt(max(var, eps1^2))
        p = p - a / max(1, ||u||_2 / (sqrt(numel) * d)) * u

    Args:    params, lr=1e-2, beta2_decay=-0.8, eps=(eps1, eps2)=(None, 1e-3) (eps1 None: the
             parameter dtype's machine epsilon), d=1.0 (the update's RMS clipping threshold),
             weight_decay=0.0, foreach=None (accepted), maximize=False
    State:   ``step`` (int); ``row_var`` and ``col_var`` for parameters of 2+ dims,
             ``variance`` for the others
    Ops:     composed of tensor ops (norms, lerp_, matmul), reading ||p|| and ||u|| on the host
             each step as PyTorch does: a step cannot be captured (clgrad.capture)
    Raises:  ValueError (PyTorch's messages) for lr < 0, beta2_decay > 0, eps1 or eps2 < 0,
             d < 1 or weight_decay < 0
    """

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps=(None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach=None, maximize: bool = False):
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=bool(maximize)))

    def _update(self, p: Tensor, grad: Tensor, group: dict, state: dict):
        if "step" not in state:
            state["step"] = 0
            if grad.dim() > 1:
                shape = list(grad.shape)
                state["row_var"] = grad.new_zeros(shape[:-1] + [1])
                state["col_var"] = grad.new_zeros(shape[:-2] + [1, shape[-1]])
            else:
                state["variance"] = grad.new_zeros(tuple(grad.shape))
        if group.get("maximize"):
            grad = -grad
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = dtypes.finfo(p.dtype).eps
        lr = group["lr"]
        t = state["step"] = state["step"] + 1
        beta = float(t) ** group["beta2_decay"]
        rho = min(lr, 1 / (float(t) ** 0.5))
        numel = p.numel()
        alpha = max(eps2, p.norm(2).item() / (numel ** 0.5)) * rho
        if group["weight_decay"] != 0:
            p.mul_(1 - lr * group["weight_decay"])
        if grad.dim() > 1:
            row, col = state["row_var"], state["col_var"]
            row.lerp_(grad.norm(2, dim=-1, keepdim=True).square_().div_(grad.shape[-1]), beta)
            col.lerp_(grad.norm(2, dim=-2, keepdim=True).square_().div_(grad.shape[-2]), beta)
            var = row.matmul(col)
            var.div_(row.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            variance = state["variance"]
            variance.lerp_(grad * grad, beta)
            var = variance.clone()
        update = var.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * group["d"]))
        p.add_(update, alpha=-alpha / denom)
