"""gradcheck: analytic gradients against float64 central finite differences."""
from __future__ import annotations

import numpy as np

from clgrad import dtypes, layout
from clgrad.autograd.grad_mode import enable_grad, no_grad
from clgrad.autograd.graph import grad
from clgrad.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck"]


# -- gradcheck --------------------------------------------------------------------------------
def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True) -> bool:
    """Compare analytic gradients with central finite differences, in float64.

    ``inputs``: tensors (views allowed); those with ``requires_grad`` are checked, and must not
    have overlapping elements (build stride-0 views inside ``fn``, so a perturbation moves one
    element). The output may be any shape (or a tuple): it is reduced as ``sum(out * R)`` with
    a fixed random R, so each input needs one backward and ``2 * numel`` forward evaluations.
    Reference: the central difference (f(x+h) - f(x-h)) / 2h, error O(h^2). This is the
    suite's one rule (docs/internals.md): full Jacobian columns, never a random input direction.
    Raises RuntimeError with the worst element when a gradient differs (or returns False).
    """
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    checked = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    for i, t in enumerate(checked):
        if t.dtype is not dtypes.float64:
            raise TypeError(f"gradcheck: expected float64 inputs, got {t.dtype} (input {i})")
        if t.numel() > 1 and layout.has_overlap(t.shape, t.stride()):
            raise ValueError(f"gradcheck: expected inputs without overlapping elements, got "
                             f"shape {tuple(t.shape)} strides {t.stride()} (input {i}); build "
                             f"expand()/stride-0 views inside fn")
    out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    rng = np.random.default_rng(1234)
    weights = [o.new_tensor(rng.standard_normal(o.shape)) for o in outs]

    def scalar():
        with no_grad():
            res = fn(*inputs)
            res = res if isinstance(res, (tuple, list)) else (res,)
            return float(sum((r.to(dtypes.float64) * w).sum().item()
                             for r, w in zip(res, weights)))

    loss = None
    for o, w in zip(outs, weights):
        term = (o * w).sum()
        loss = term if loss is None else loss + term
    analytic = grad(loss, checked, allow_unused=True) if loss.requires_grad else \
        [None] * len(checked)
    for idx, (t, ga) in enumerate(zip(checked, analytic)):
        ga = np.zeros(t.shape) if ga is None else ga.numpy()
        gn = np.zeros(t.shape)
        values = t.detach().numpy()
        for pos in np.ndindex(*t.shape):
            with no_grad():
                _poke(t, pos, values[pos] + eps)
                fp = scalar()
                _poke(t, pos, values[pos] - eps)
                fm = scalar()
                _poke(t, pos, values[pos])
            gn[pos] = (fp - fm) / (2 * eps)
        bad = ~np.isclose(ga, gn, atol=atol, rtol=rtol)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            msg = (f"gradcheck: input {idx} (shape {tuple(t.shape)}): analytic {ga[where]!r} vs "
                   f"numerical {gn[where]!r} at index {where}; max abs diff "
                   f"{np.abs(ga - gn).max():.3e}")
            if raise_exception:
                raise RuntimeError(msg)
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True) -> bool:
    """Check second derivatives (PyTorch's gradgradcheck): gradcheck of the function
    ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs,
    create_graph=True)``, i.e. the derivatives of the first-order gradients w.r.t. the inputs
    and the ``grad_outputs`` against float64 central differences of those gradients.

    ``grad_outputs``: one float64 tensor per output (None: fixed random ones, requiring grad,
    as PyTorch's). The checked inputs must be float64 and require grad (see gradcheck).
    Raises RuntimeError (or returns False) as gradcheck; RuntimeError naming an op whose
    backward is not differentiable in clgrad."""
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    n = len(inputs)
    if grad_outputs is None:
        with enable_grad():
            out = func(*inputs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        rng = np.random.default_rng(4321)
        grad_outputs = tuple(o.new_tensor(rng.standard_normal(o.shape)).requires_grad_(True)
                             for o in outs)
    else:
        grad_outputs = tuple(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else \
            (grad_outputs,)

    def first(*args):
        ins, gos = args[:n], args[n:]
        with enable_grad():
            out = func(*ins)
            outs = out if isinstance(out, (tuple, list)) else (out,)
            diff = [t for t in ins if isinstance(t, Tensor) and t.requires_grad]
            gs = grad(outs, diff, gos, create_graph=True, allow_unused=True)
        return tuple(t.new_zeros(t.shape) if g is None else g for g, t in zip(gs, diff))
    return gradcheck(first, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)


def _poke(t, pos, value):
    # Writes one element of a checked input without touching its version (gradcheck only).
    off = t._offset + sum(i * st for i, st in zip(pos, t._strides))
    t._storage.write(off, dtypes.to_storage(np.array(value), t.dtype))

