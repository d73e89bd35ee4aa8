"""gradcheck: analytic gradients against float64 central finite differences."""
from __future__ import annotations

import numpy as np

from clgrad import dtypes, layout
from clgrad.autograd.grad_mode import enable_grad, no_grad
from clgrad.autograd.graph import grad
from clgrad.tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """A gradient differs from its finite-difference reference (PyTorch's
    torch.autograd.gradcheck.GradcheckError, a RuntimeError)."""


# -- gradcheck --------------------------------------------------------------------------------
def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, *,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False,
              check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None) -> bool:
    """Compare analytic gradients with central finite differences, in float64.

    ``inputs``: tensors (views allowed); those with ``requires_grad`` are checked, and must not
    have overlapping elements (build stride-0 views inside ``fn``, so a perturbation moves one
    element). The output may be any shape (or a tuple): it is reduced as ``sum(out * R)`` with
    a fixed random R, so each input needs one backward and ``2 * numel`` forward evaluations.
    Reference: the central difference (f(x+h) - f(x-h)) / 2h, error O(h^2). This is the
    suite's one rule (docs/internals.md): full Jacobian columns, never a random input direction.

    PyTorch's keyword arguments:
      nondet_tol          the backward runs twice and the two gradients may differ by this
                          much (0: identical; PyTorch's reentrancy check)
      check_grad_dtypes   each gradient has its input's dtype
      check_batched_grad  accepted: clgrad's vmap runs the function once per batch element
                          (a loop over this same backward), so its gradients are the ones
                          checked here
      check_backward_ad   False skips the gradient comparison
      fast_mode           accepted: PyTorch's fast mode compares one random projection of the
                          Jacobian; clgrad's check is the one above either way (it already
                          needs a single backward)
      check_undefined_grad  accepted: clgrad's engine hands an op zeros, never an undefined
                          gradient, for an output that got none (a Function with
                          ``set_materialize_grads(False)`` gets None, as PyTorch's)
    Raises: GradcheckError (a RuntimeError) with the worst element when a gradient differs
            (or returns False with raise_exception=False); NotImplementedError for
            check_forward_ad/check_batched_forward_grad (clgrad has no forward-mode AD) and
            for masked=True (no sparse tensors); TypeError for a checked input that is not
            float64.
    """
    if check_forward_ad or check_batched_forward_grad:
        which = "check_forward_ad" if check_forward_ad else "check_batched_forward_grad"
        raise NotImplementedError(
            f"gradcheck: {which}=True needs forward-mode AD (torch.autograd.forward_ad), "
            f"which clgrad does not have; check the reverse-mode gradients "
            f"(check_backward_ad=True) instead")
    if masked:
        raise NotImplementedError("gradcheck: masked=True checks sparse gradients; clgrad "
                                  "has no sparse tensors")
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

    if not check_backward_ad:
        return True

    def projected(ws, retain=False):
        loss = None
        for o, w in zip(outs, ws):
            term = (o * w).sum()
            loss = term if loss is None else loss + term
        if not loss.requires_grad:
            return [None] * len(checked)
        return list(grad(loss, checked, allow_unused=True, retain_graph=retain))

    analytic = projected(weights, retain=True)
    fail = _Failure(raise_exception)
    again = projected(weights)
    for idx, (a, b) in enumerate(zip(analytic, again)):  # PyTorch's reentrancy check
        if a is not None and b is not None:
            diff = np.abs(a.numpy() - b.numpy()).max(initial=0.0)
            if diff > nondet_tol:
                return fail(f"gradcheck: Backward is not reentrant, i.e., running backward "
                            f"with same input and grad_output multiple times gives "
                            f"different values, although analytical gradient matches "
                            f"numerical gradient. The tolerance for nondeterminism was "
                            f"{nondet_tol} (input {idx}: difference {diff:.3e})")
    for idx, (t, ga) in enumerate(zip(checked, analytic)):
        if check_grad_dtypes and ga is not None and ga.dtype is not t.dtype:
            return fail(f"gradcheck: Gradient has dtype mismatch: input {idx} is {t.dtype}, "
                        f"its gradient {ga.dtype}")
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
            return fail(f"gradcheck: input {idx} (shape {tuple(t.shape)}): analytic "
                        f"{ga[where]!r} vs numerical {gn[where]!r} at index {where}; max abs "
                        f"diff {np.abs(ga - gn).max():.3e}")
    return True


class _Failure:
    """Raise GradcheckError with the message, or return False (raise_exception=False)."""

    def __init__(self, raise_exception):
        self.raise_exception = raise_exception

    def __call__(self, msg):
        if self.raise_exception:
            raise GradcheckError(msg)
        return False


def gradgradcheck(func, inputs, grad_outputs=None, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, *, gen_non_contig_grad_outputs=False, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True,
                  fast_mode=False, masked=False) -> bool:
    """Check second derivatives (PyTorch's gradgradcheck): gradcheck of the function
    ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs,
    create_graph=True)``, i.e. the derivatives of the first-order gradients w.r.t. the inputs
    and the ``grad_outputs`` against float64 central differences of those gradients.

    ``grad_outputs``: one float64 tensor per output (None: fixed random ones, requiring grad,
    as PyTorch's; non-contiguous views with ``gen_non_contig_grad_outputs``). The checked
    inputs must be float64 and require grad (see gradcheck, which gets the other keyword
    arguments; ``check_rev_over_rev=False`` skips the check).
    Raises GradcheckError (or returns False) as gradcheck; RuntimeError naming an op whose
    backward is not differentiable in clgrad; NotImplementedError for check_fwd_over_rev
    (no forward-mode AD)."""
    if check_fwd_over_rev:
        raise NotImplementedError(
            "gradgradcheck: check_fwd_over_rev=True needs forward-mode AD "
            "(torch.autograd.forward_ad), which clgrad does not have; use "
            "check_rev_over_rev=True")
    if not check_rev_over_rev:
        return True
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    n = len(inputs)
    if grad_outputs is None:
        with enable_grad():
            out = func(*inputs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        rng = np.random.default_rng(4321)
        grad_outputs = tuple(_grad_output(o, rng, gen_non_contig_grad_outputs) for o in outs)
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
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes,
                     check_batched_grad=check_batched_grad, fast_mode=fast_mode,
                     masked=masked)


def _grad_output(o, rng, non_contiguous):
    """A random float64 gradient of output ``o`` that requires grad; with ``non_contiguous``
    every other element of a tensor twice as long in the last dim (PyTorch's
    gen_non_contig_grad_outputs)."""
    values = rng.standard_normal(o.shape)
    if not non_contiguous or o.dim() == 0:
        return o.new_tensor(values).requires_grad_(True)
    wide = np.zeros(tuple(o.shape[:-1]) + (2 * o.shape[-1],))
    wide[..., ::2] = values
    return o.new_tensor(wide)[..., ::2].detach().requires_grad_(True)


def _poke(t, pos, value):
    # Writes one element of a checked input without touching its version (gradcheck only).
    off = t._offset + sum(i * st for i, st in zip(pos, t._strides))
    t._storage.write(off, dtypes.to_storage(np.array(value), t.dtype))

