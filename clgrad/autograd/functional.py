"""torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp of a function of tensors.

Each takes ``func`` (tensors in, a Tensor or a tuple of Tensors out) and ``inputs`` (a Tensor or
a tuple of Tensors), with PyTorch's signatures and results: a tuple where ``inputs`` (or the
outputs) were a tuple, else a Tensor. The inputs are differentiated as given: detached copies
that require grad (with ``create_graph=True``, inputs that require grad stay in their graph, so
the results can be differentiated again, as PyTorch's ``_grad_preprocess``). Without
``create_graph`` the results are detached. An output independent of an input gives zeros for
that part (``strict=True``: RuntimeError instead).

Everything is reverse mode on autograd.grad: jacobian takes one backward per output element
(PyTorch's vectorize=False loop; ``vectorize=True`` and ``strategy='forward-mode'`` give the
same values by the same loop, as clgrad has no vmap or forward-mode AD), hessian is the
jacobian of the gradient (create_graph), jvp is the double-vjp trick (PyTorch's: a vjp with
a dummy ``u`` that requires grad, then the vjp of that, linear in u, at ``v``), vhp a vjp of
the gradient, and hvp = vhp (the Hessian of a twice continuously differentiable function is
symmetric; PyTorch computes hvp through a double-backward trick instead, with equal values;
``hvp(strict=True)`` takes that trick, so its strict checks are PyTorch's).
Raises RuntimeError naming the op where the second derivative needs a backward that clgrad
cannot differentiate (see autograd.grad's create_graph).
"""
from __future__ import annotations

import numpy as np

from clgrad.autograd.grad_mode import enable_grad
from clgrad.autograd.graph import grad
from clgrad.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _as_tuple(x, arg: str, fn: str):
    """(is_tuple, tuple of Tensors); TypeError for anything else (PyTorch's message)."""
    if isinstance(x, Tensor):
        return False, (x,)
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return True, tuple(x)
    raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of Tensors "
                    f"but the value got is of type {type(x).__name__}.")


def _prepare(inputs, create_graph):
    """The inputs as tensors that require grad (PyTorch's _grad_preprocess)."""
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view(t.shape))  # stays in its graph (a view of it)
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def _call(func, inputs, fn):
    with enable_grad():
        out = func(*inputs)
    is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn)
    return is_tuple, outs


def _finish(ts, create_graph):
    return tuple(t if t is None or create_graph else t.detach() for t in ts)


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn, kind="output"):
    """autograd.grad of ``outputs`` (those that require grad) at ``grad_outputs`` w.r.t.
    ``inputs``: zeros for an input they do not reach (RuntimeError under ``strict``)."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if strict and len(pairs) != len(outputs):
        i = next(k for k, o in enumerate(outputs) if not o.requires_grad)
        raise RuntimeError(f"The {kind} of the user-provided function given to {fn} with index "
                           f"{i} does not require gradients but strict mode is enabled.")
    got = (grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                create_graph=create_graph, allow_unused=True) if pairs else
           (None,) * len(inputs))
    res = []
    for i, (t, g) in enumerate(zip(inputs, got)):
        if g is None:
            if strict:
                raise RuntimeError(f"The {kind} of the user-provided function given to {fn} is "
                                   f"independent of input {i}. This is not allowed in strict "
                                   f"mode.")
            g = t.new_zeros(t.shape)
        res.append(g)
    return tuple(res)


def _check_v(v, like, arg, fn):
    is_tuple, vs = _as_tuple(v, arg, fn)
    if len(vs) != len(like):
        raise RuntimeError(f"{fn}: {arg} has {len(vs)} tensors but {len(like)} were expected")
    for i, (a, b) in enumerate(zip(vs, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Mismatch in shape: {arg} {i} has shape {tuple(a.shape)} but "
                               f"the expected shape is {tuple(b.shape)}")
    return vs


def _input_v(v, inputs, fn):
    """``v`` checked against ``inputs`` (jvp, vhp, hvp); None only for one single-element
    input (then 1)."""
    if v is not None:
        return _check_v(v, inputs, "v", fn)
    if len(inputs) != 1 or inputs[0].numel() != 1:
        raise RuntimeError("The vector v can only be None if the input to the user-provided "
                           "function is a single Tensor with a single element.")
    return (inputs[0].new_ones(inputs[0].shape),)


def _result(is_tuple, ts):
    return ts if is_tuple else ts[0]


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product of ``func`` at ``inputs``.

    Shapes:  ``v`` like func's outputs (may be None for a single-element output: 1); the
             product like ``inputs``.
    Raises:  RuntimeError for a missing ``v`` with an output of several elements, a ``v`` of
             another shape, an output independent of an input under ``strict``; TypeError
             for inputs or outputs that are not Tensors.
    """
    in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    inputs = _prepare(inputs, create_graph)
    out_tuple, outs = _call(func, inputs, "vjp")
    if v is None:
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function "
                               "returns a single Tensor with a single element.")
        vs = (outs[0].new_ones(outs[0].shape),)
    else:
        vs = _check_v(v, outs, "v", "vjp")
    res = _grads(outs, inputs, vs, create_graph, strict, "vjp")
    return _result(out_tuple, _finish(outs, create_graph)), _result(in_tuple,
                                                                    _finish(res, create_graph))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-vjp trick: with u of
    the outputs' shapes requiring grad, g(u) = u^T J (a vjp with create_graph) is linear in u,
    and its vjp at ``v`` is (J v)^T. ``v`` like ``inputs`` (None for a single-element input).

    Raises:  as vjp; RuntimeError naming an op whose backward is not differentiable in clgrad.
    """
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    inputs = _prepare(inputs, create_graph)
    vs = _input_v(v, inputs, "jvp")
    out_tuple, outs = _call(func, inputs, "jvp")
    us = tuple(o.new_zeros(o.shape).requires_grad_(True) for o in outs)
    g = _grads(outs, inputs, us, True, strict, "jvp")
    res = _grads(g, us, vs, create_graph, strict, "jvp", kind="vjp")
    return _result(out_tuple, _finish(outs, create_graph)), _result(out_tuple,
                                                                   _finish(res, create_graph))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output i and input j a tensor of shape
    ``out_i.shape + in_j.shape`` (entry [a, b] = d out_i[a] / d in_j[b]); nested as
    PyTorch's: a tuple over outputs (if func returns a tuple) of tuples over inputs (if
    ``inputs`` is a tuple).

    One backward per output element (PyTorch's vectorize=False). ``vectorize=True`` and
    ``strategy='forward-mode'`` give the same values by the same loop (clgrad has neither
    vmap nor forward-mode AD). Raises ValueError for another strategy, or 'forward-mode'
    without vectorize (PyTorch's), RuntimeError as vjp.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(f'Expected strategy to be either "forward-mode" or "reverse-mode". '
                         f'Hint: If your function has more outputs than inputs, "forward-mode" '
                         f'tends to be more performant. Otherwise, prefer to use '
                         f'"reverse-mode", got {strategy!r}.')
    if strategy == "forward-mode" and not vectorize:
        raise NotImplementedError("torch.autograd.functional.jacobian: `strategy=\"forward-mode\"` "
                                  "is only implemented for `vectorize=True`.")
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = _prepare(inputs, create_graph)
    out_tuple, outs = _call(func, inputs, "jacobian")
    rows = []
    for i, o in enumerate(outs):
        m = o.numel()
        eye = o.new_tensor(np.eye(m)) if m else None
        per_in = [[] for _ in inputs]
        for a in range(m):
            g = _grads((o,), inputs, (eye[a].reshape(o.shape),), create_graph, strict,
                       "jacobian")
            for j, gj in enumerate(g):
                per_in[j].append(gj)
        blocks = tuple(_stack(per_in[j], eye, tuple(o.shape) + tuple(t.shape), t,
                              create_graph) for j, t in enumerate(inputs))
        rows.append(_result(in_tuple, _finish(blocks, create_graph)))
    return _result(out_tuple, tuple(rows))


def _stack(rows, eye, shape, like, create_graph):
    """The Jacobian block of ``shape`` from its rows (one per output element). Without
    create_graph assembled on the host; with it as sum_a e_a (x) row_a, of mul and add
    (differentiable again; autograd does not import the ops' stack: the layers)."""
    if not rows:
        return like.new_zeros(shape)
    m = len(rows)
    if not create_graph:
        return like.new_tensor(np.stack([r.detach().numpy() for r in rows]).reshape(shape))
    out = None
    for a, r in enumerate(rows):
        term = eye[a].reshape((m,) + (1,) * r.ndim) * r.reshape((1,) + tuple(r.shape))
        out = term if out is None else out + term
    return out.reshape(shape)


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of the scalar function ``func`` at ``inputs``: the jacobian of its
    gradient (taken with create_graph); for inputs i, j a tensor of shape
    ``in_i.shape + in_j.shape``, nested as a tuple of tuples when ``inputs`` is a tuple.

    ``strict=True``: RuntimeError (PyTorch's messages) where the gradient does not require
    grad (a linear function) or an entry of it is independent of an input; a gradient through
    a piecewise-linear op (relu, max_pool2d ...) requires grad as PyTorch's
    (autograd.graph._linked), so its Hessian is zeros there, strict or not.

    Raises:  RuntimeError when func's output has more than one element (PyTorch's message),
             or as jacobian.
    """
    in_tuple, ins = _as_tuple(inputs, "inputs", "hessian")

    def scalar(*inp):
        out = func(*inp)
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if is_tuple or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element")
        return outs[0].reshape(())

    def gradient(*inp):  # the gradient, kept differentiable (a tuple for tuple inputs)
        g = jacobian(scalar, inp, create_graph=True, strict=strict)
        for i, gi in enumerate(g if strict else ()):  # (PyTorch's _check_requires_grad)
            if not gi.requires_grad:
                raise _jacobian_independent(i)
        return g if in_tuple else g[0]
    return jacobian(gradient, ins if in_tuple else ins[0], create_graph=create_graph,
                    strict=strict, vectorize=vectorize, strategy=outer_jacobian_strategy)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): the vector-Hessian product of the scalar function ``func``
    (``v`` like ``inputs``; None for a single-element input), a vjp of its gradient.

    Raises:  RuntimeError for an output of more than one element, or as vjp.
    """
    return _hessian_product("vhp", func, inputs, v, create_graph, strict)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): the Hessian-vector product of the scalar function ``func``;
    equal to vhp (H is symmetric: see the module docstring for how PyTorch computes it).
    ``strict=True`` takes PyTorch's double-backward trick instead (_hvp_strict), so that it
    raises where PyTorch's does: where H v does not depend on the trick's dummy gradient (a
    piecewise-linear function: relu, max_pool2d ..., whose Hessian is zeros).

    Raises:  as vhp; under ``strict``, RuntimeError with PyTorch's messages (an output that
             does not require grad, a gradient independent of an input, a Hessian
             independent of the dummy gradient).
    """
    if strict:
        return _hvp_strict(func, inputs, v, create_graph)
    return _hessian_product("hvp", func, inputs, v, create_graph, strict)


def _jacobian_independent(i: int) -> RuntimeError:
    """PyTorch's strict-mode error of hessian/hvp for a gradient that does not require grad
    (a linear function)."""
    return RuntimeError(
        f"While computing the hessian, found that the jacobian of the user-provided function "
        f"with respect to input {i} is independent of the input. This is not allowed in "
        f"strict mode. You should ensure that your function is twice differentiable and that "
        f"the jacobian depends on the inputs (this would be violated by a linear function for "
        f"example).")


def _hvp_strict(func, inputs, v, create_graph):
    """hvp(strict=True) as PyTorch's: the gradient j (create_graph), then the vjp of j at a
    dummy u (zeros that require grad), linear in u, then the vjp of that w.r.t. u at ``v``:
    H^T v = H v; each stage checked as PyTorch's _check_requires_grad / _fill_in_zeros."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
    inputs = _prepare(inputs, create_graph)
    vs = _input_v(v, inputs, "hvp")
    out_tuple, outs = _call(func, inputs, "hvp")
    if not outs[0].requires_grad:
        raise RuntimeError("Output 0 of the user-provided function does not require gradients. "
                           "The outputs must be computed in a differentiable manner from the "
                           "input when running in strict mode.")
    if out_tuple or outs[0].numel() != 1:
        raise RuntimeError("The function given to hvp should return a single Tensor with a "
                           "single element")
    out = outs[0]
    with enable_grad():
        jac = grad(out, inputs, retain_graph=True, create_graph=True, allow_unused=True)
        for i, j in enumerate(jac):
            if j is None:
                raise RuntimeError(f"The output of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode.")
            if not j.requires_grad:
                raise _jacobian_independent(i)
        dummy = tuple(t.new_zeros(t.shape).requires_grad_(True) for t in inputs)
        back = grad(jac, inputs, dummy, retain_graph=True, create_graph=True,
                    allow_unused=True)
    pairs = [(b, w) for b, w in zip(back, vs) if b is not None and b.requires_grad]
    got = (grad([b for b, _ in pairs], dummy, [w for _, w in pairs], retain_graph=True,
                create_graph=create_graph, allow_unused=True) if pairs else
           (None,) * len(inputs))
    for i, g in enumerate(got):
        if g is None:
            raise RuntimeError(
                f"The hessian of the user-provided function is independent of entry {i} in "
                f"the grad_jacobian. This is not allowed in strict mode as it prevents from "
                f"using the double backward trick to replace forward mode AD.")
        if create_graph and not g.requires_grad:
            raise RuntimeError(f"The hessian of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               f"create_graph=True.")
    return _finish((out,), create_graph)[0], _result(in_tuple, _finish(got, create_graph))


def _hessian_product(fn, func, inputs, v, create_graph, strict):
    in_tuple, inputs = _as_tuple(inputs, "inputs", fn)
    inputs = _prepare(inputs, create_graph)
    vs = _input_v(v, inputs, fn)
    out_tuple, outs = _call(func, inputs, fn)
    if out_tuple or outs[0].numel() != 1:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor with a "
                           f"single element")
    out = outs[0]
    g = _grads((out,), inputs, (out.new_ones(out.shape),), True, strict, fn)
    res = _grads(g, inputs, vs, create_graph, strict, fn, kind="jacobian")
    return _finish((out,), create_graph)[0], _result(in_tuple, _finish(res, create_graph))
