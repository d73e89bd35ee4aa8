"""Gradient clipping with PyTorch's semantics (torch.nn.utils.clip_grad_norm_/value_).

The total norm and the clip coefficient stay on the device (no host read) unless
``error_if_nonfinite`` asks for a check.
"""
from __future__ import annotations

import math

from clgrad import dtypes
from clgrad.autograd import no_grad
from clgrad.runtime import default_device
from clgrad.ops._util import zeros
from clgrad.ops import composite as cp
from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd
from clgrad.ops.index import stack
from clgrad.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their joint ``norm_type`` norm
    (the norm of the per-tensor norms; 'inf' the largest |g|) is at most ``max_norm``:
    g *= min(1, max_norm / (total + 1e-6)).

    Gradients may live on several devices (PyTorch's rule): each norm is computed on its
    gradient's device, the total on the first gradient's, and the coefficient is copied to
    each other device.

    Returns: the total norm before clipping (a 0-dim tensor on the first gradient's device; 0
             when no gradient exists).
    Raises:  RuntimeError with ``error_if_nonfinite`` when the total norm is nan or inf.
    """
    grads = _grads(parameters)
    norm_type = float(norm_type)
    if not grads:
        return zeros((), dtypes.get_default_dtype(), default_device())
    first = grads[0]._storage.device
    with no_grad():
        if math.isinf(norm_type):
            total = rd.amax(stack([ew.to_device(rd.amax(ew.abs(g)), first) for g in grads]))
        else:
            total = cp.norm(stack([ew.to_device(cp.norm(g, norm_type), first) for g in grads]),
                            norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} for "
                               f"gradients from `parameters` is non-finite, so it cannot be "
                               f"clipped. To disable this error and scale the gradients by the "
                               f"non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = ew.clamp(ew.div(float(max_norm), ew.add(total, 1e-6)), max=1.0)
        coefs = {first: coef}  # per device
        for g in grads:
            dev = g._storage.device
            c = coefs.get(dev)
            if c is None:
                c = coefs[dev] = ew.to_device(coef, dev)
            g.mul_(c if c.dtype is g.dtype else ew.to(c, g.dtype))
    return total


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of ``parameters`` into [-clip_value, clip_value] in place."""
    v = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-v, v)


def _grads(parameters):
    ps = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    return [p.grad for p in ps if p.grad is not None]
