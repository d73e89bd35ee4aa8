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

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The ``norm_type`` norm of the tensors of ``tensors`` (a Tensor or an iterable of them)
    taken together: the norm of their per-tensor norms ('inf': the largest |x|). PyTorch
    2.6's first half of clip_grad_norm_ (pass it the gradients: ``[p.grad for p in ...]``).

    Tensors may live on several devices: each norm is computed on its tensor's device, the
    total on the first tensor's (no host read unless ``error_if_nonfinite``). ``foreach`` is
    accepted for PyTorch compatibility (no effect).

    Returns: a 0-dim tensor on the first tensor's device (0 of the default dtype on the default
             device when ``tensors`` is empty).
    Raises:  RuntimeError with ``error_if_nonfinite`` when the total norm is nan or inf;
             TypeError for a member that is not a Tensor
    """
    ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    for t in ts:
        if not isinstance(t, Tensor):
            raise TypeError(f"get_total_norm: expected Tensors, got {type(t).__name__}")
    norm_type = float(norm_type)
    if not ts:
        return zeros((), dtypes.get_default_dtype(), default_device())
    first = ts[0]._storage.device
    with no_grad():
        if math.isinf(norm_type):
            total = rd.amax(stack([ew.to_device(rd.amax(ew.abs(g)), first) for g in ts]))
        else:
            total = cp.norm(stack([ew.to_device(cp.norm(g, norm_type), first) for g in ts]),
                            norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(f"get_total_norm: the total norm of order {norm_type} for "
                               f"gradients from `parameters` is non-finite, so it cannot be "
                               f"clipped. To disable this error and scale the gradients by the "
                               f"non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients of ``parameters`` (a Tensor or an iterable of them) in place by
    min(1, max_norm / (total_norm + 1e-6)), ``total_norm`` given (``get_total_norm`` of the
    gradients, or any 0-dim tensor or number): PyTorch 2.6's second half of clip_grad_norm_.
    Parameters without a gradient are skipped; the coefficient is copied to each gradient's
    device and dtype. ``foreach``: accepted, no effect. Returns None."""
    grads = _grads(parameters)
    if not grads:
        return None
    with no_grad():
        if isinstance(total_norm, Tensor):
            coef = ew.clamp(ew.div(float(max_norm), ew.add(total_norm.detach(), 1e-6)),
                            max=1.0)
        else:
            coef = min(1.0, float(max_norm) / (float(total_norm) + 1e-6))
        coefs = {}  # per device
        for g in grads:
            if not isinstance(coef, Tensor):
                g.mul_(coef)
                continue
            dev = g._storage.device
            c = coefs.get(dev)
            if c is None:
                c = coefs[dev] = coef if coef._storage.device is dev else \
                    ew.to_device(coef, dev)
            g.mul_(c if c.dtype is g.dtype else ew.to(c, g.dtype))
    return None


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Scale the gradients of ``parameters`` in place so that their joint ``norm_type`` norm
    (the norm of the per-tensor norms; 'inf' the largest |g|) is at most ``max_norm``:
    g *= min(1, max_norm / (total + 1e-6)). The same as ``get_total_norm`` of the gradients
    then ``clip_grads_with_norm_``.

    Gradients may live on several devices (PyTorch's rule): each norm is computed on its
    gradient's device, the total on the first gradient's, and the coefficient is copied to
    each other device.

    Returns: the total norm before clipping (a 0-dim tensor on the first gradient's device; 0
             when no gradient exists).
    Raises:  RuntimeError with ``error_if_nonfinite`` when the total norm is nan or inf.
    """
    ps = [parameters] if isinstance(parameters, Tensor) else list(parameters)  # (once)
    grads = _grads(ps)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    if grads:
        clip_grads_with_norm_(ps, max_norm, total, foreach)
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
