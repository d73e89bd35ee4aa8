"""The tape: Nodes with sequence numbers, backward as a reverse walk, grad mode, gradcheck.

Every differentiable op calls :func:`record` with its output, its inputs and a backward
closure. When grad mode is on and an input requires grad, a :class:`Node` is created with the
next sequence number and becomes ``out.grad_fn``. ``backward()`` collects the Nodes reachable
from the output (iteratively) and runs them in decreasing sequence number: every consumer of a
tensor was recorded after it, so each Node's gradient is complete when it runs. No global list
is kept: a graph lives exactly as long as the tensors that reference it.

Saved tensors are checked against the storage version they had when saved; an in-place write in
between makes backward raise RuntimeError naming the op and both versions.
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import threading
import weakref

import numpy as np

__all__ = ["Node", "record", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "gradcheck"]

_state = threading.local()
_seq = itertools.count()


def is_grad_enabled() -> bool:
    """True when ops record Nodes (the default); False inside ``no_grad()``."""
    return getattr(_state, "enabled", True)


class set_grad_enabled(contextlib.ContextDecorator):
    """Context manager and decorator that sets grad mode to ``mode`` (PyTorch semantics).

    Like PyTorch, calling it as a function also sets the mode immediately.
    """

    def __init__(self, mode: bool):
        self.prev = is_grad_enabled()
        self.mode = bool(mode)
        _state.enabled = self.mode

    def __enter__(self):
        _state.enabled = self.mode
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class no_grad(contextlib.ContextDecorator):
    """Context manager and decorator: ops inside record nothing (e.g. optimizer updates)."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _state.enabled = False
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class enable_grad(contextlib.ContextDecorator):
    """Context manager and decorator: turn grad mode back on inside a ``no_grad`` block."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _state.enabled = True
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class Node:
    """One recorded op: where its gradient goes, what it saved, how to differentiate it.

    ``next`` holds, per input, the input's Node, the leaf Tensor itself (gradients accumulate
    into its ``.grad``) or None (no gradient needed). ``backward_fn(grad_out)`` returns one
    gradient (or None) per input. ``saved`` is a list of (tensor, version at save time).
    """

    __slots__ = ("seq", "name", "next", "backward_fn", "saved", "retained", "input_meta",
                 "__weakref__")

    def __init__(self, name, next_edges, backward_fn, saved, input_meta):
        self.seq = next(_seq)
        self.name = name
        self.next = next_edges
        self.backward_fn = backward_fn
        self.saved = saved
        self.retained = None
        self.input_meta = input_meta

    def __repr__(self):
        return f"<{self.name}Backward seq={self.seq}>"

    def name_(self):
        """The op name (``mul``, ``conv2d`` ...)."""
        return self.name

    @property
    def next_functions(self):
        """The Nodes (or leaf tensors) this Node sends gradients to, one per input."""
        return tuple(self.next)


def _edge(t):
    if t is None or not getattr(t, "requires_grad", False):
        return None
    fn = t.grad_fn
    return fn if fn is not None else t


def record(name: str, out, inputs, backward_fn, saved=()):
    """Attach a Node to ``out`` when grad mode is on and any input requires grad.

    ``inputs``: tensors (or None); ``backward_fn(grad_out) -> tuple`` with one entry per
    input; ``saved``: tensors whose values backward reads (checked for in-place writes).
    Returns ``out``.
    """
    if not is_grad_enabled():
        return out
    edges = tuple(_edge(t) for t in inputs)
    if all(e is None for e in edges):
        return out
    meta = tuple(None if t is None else (t.shape, t.dtype) for t in inputs)
    node = Node(name, edges, backward_fn, [(t, t._storage.version) for t in saved], meta)
    out.requires_grad = True
    out._grad_fn = node
    return out


def _check_saved(node):
    for t, version in node.saved:
        now = t._storage.version
        if now != version:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: a tensor of shape {tuple(t.shape)} saved by {node.name} is "
                f"at version {now}; expected version {version} instead")


def _collect(roots):
    seen, stack, nodes = set(), [r for r in roots if isinstance(r, Node)], []
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        nodes.append(n)
        for e in n.next:
            if isinstance(e, Node) and id(e) not in seen:
                stack.append(e)
    nodes.sort(key=lambda n: -n.seq)
    return nodes


def _accumulate(store: dict, key, g, keep: dict):
    prev = store.get(key)
    if prev is None:
        store[key] = g
        keep[key] = False
    else:
        store[key] = prev + g
        keep[key] = True  # a fresh tensor owned by the engine


def _run(roots, root_grads, retain_graph, targets=None):
    """Walk the tape. Returns {id(leaf or node): grad} for ``targets`` when given."""
    from clgrad.tensor import Tensor

    node_grads, owned = {}, {}
    leaf_grads, leaves = {}, {}
    for r, g in zip(roots, root_grads):
        if isinstance(r, Node):
            _accumulate(node_grads, id(r), g, owned)
        elif isinstance(r, Tensor):
            _accumulate(leaf_grads, id(r), g, owned)
            leaves[id(r)] = r
    want = None if targets is None else {id(t) for t in targets}
    captured = {}
    with no_grad():
        for node in _collect(roots):
            g = node_grads.pop(id(node), None)
            if g is None:
                continue
            if node.retained is not None:
                t = node.retained()
                if t is not None:
                    if want is None:
                        t._grad = g.detach().clone() if t._grad is None else t._grad + g
                    elif id(t) in want:
                        captured[id(t)] = g
            if node.backward_fn is None:
                raise RuntimeError(
                    f"Trying to backward through the graph a second time (through "
                    f"{node.name}), but the saved tensors have already been freed. Specify "
                    f"retain_graph=True on the first backward() or autograd.grad() call.")
            _check_saved(node)
            in_grads = node.backward_fn(g)
            if not isinstance(in_grads, tuple):
                in_grads = (in_grads,)
            for edge, ig, meta in zip(node.next, in_grads, node.input_meta):
                if edge is None or ig is None:
                    continue
                if tuple(ig.shape) != tuple(meta[0]):
                    raise RuntimeError(f"{node.name} backward returned a gradient of shape "
                                       f"{tuple(ig.shape)} for an input of shape "
                                       f"{tuple(meta[0])} (internal error)")
                if ig.dtype is not meta[1]:
                    ig = ig.to(meta[1])
                if isinstance(edge, Node):
                    _accumulate(node_grads, id(edge), ig, owned)
                else:
                    _accumulate(leaf_grads, id(edge), ig, owned)
                    leaves[id(edge)] = edge
            if not retain_graph:
                node.backward_fn = None
                node.saved = []
        if targets is not None:
            for k, g in leaf_grads.items():
                if k in want:
                    captured[k] = g
            return captured
        for k, g in leaf_grads.items():
            leaf = leaves[k]
            if leaf._grad is None:
                leaf._grad = g if owned[k] and g._base is None and g.is_contiguous() \
                    else g.contiguous(force_copy=True)
            else:
                leaf._grad.add_(g)
    return None


def backward(tensors, grad_tensors=None, retain_graph=False):
    """Compute gradients of ``tensors`` w.r.t. the leaves and accumulate them into ``.grad``.

    ``grad_tensors``: one gradient per tensor, same shape; None is allowed only for tensors
    with one element (implicit gradient 1). Raises RuntimeError when a tensor does not require
    grad, on a second backward through freed Nodes, or on a saved tensor modified in place.
    """
    from clgrad.tensor import Tensor
    if isinstance(tensors, Tensor):
        tensors = (tensors,)
        grad_tensors = (grad_tensors,)
    elif grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    roots, grads = _roots_and_grads(tensors, grad_tensors, "backward")
    _run(roots, grads, retain_graph)


def _roots_and_grads(tensors, grad_tensors, op):
    from clgrad.tensor import Tensor
    import clgrad
    roots, grads = [], []
    for t, g in zip(tensors, grad_tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"{op}: element 0 of tensors does not require grad and does not "
                               f"have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for scalar "
                                   f"outputs; got an output of shape {tuple(t.shape)}: pass "
                                   f"gradient=")
            g = clgrad.ones(t.shape, dtype=t.dtype, device=t.device)
        elif not isinstance(g, Tensor):
            g = clgrad.tensor(g, dtype=t.dtype, device=t.device)
        if tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"{op}: expected gradient of shape {tuple(t.shape)}, got "
                               f"{tuple(g.shape)}")
        fn = t.grad_fn
        roots.append(fn if fn is not None else t)
        grads.append(g)
    return roots, grads


def grad(outputs, inputs, grad_outputs=None, retain_graph=False, allow_unused=False):
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned (not accumulated into ``.grad``).

    ``inputs`` may be leaves or intermediate tensors (those must be reachable by the walk).
    Raises RuntimeError for an input that is not reached, unless ``allow_unused``.
    """
    from clgrad.tensor import Tensor
    single_out = isinstance(outputs, Tensor)
    outputs = (outputs,) if single_out else tuple(outputs)
    single_in = isinstance(inputs, Tensor)
    inputs = (inputs,) if single_in else tuple(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,) * len(outputs) if grad_outputs is None else (grad_outputs,)
    roots, grads = _roots_and_grads(outputs, grad_outputs, "grad")
    handles = []
    for t in inputs:  # intermediate tensors: capture the gradient at their Node
        fn = t.grad_fn
        if fn is not None and fn.retained is None:
            fn.retained = weakref.ref(t)
            handles.append(fn)
    try:
        got = _run(roots, grads, retain_graph, targets=inputs)
    finally:
        for fn in handles:
            fn.retained = None
    result = []
    for t in inputs:
        g = got.get(id(t))
        if g is None and not allow_unused:
            raise RuntimeError("grad: one of the differentiated Tensors appears to not have "
                               "been used in the graph; set allow_unused=True if this is the "
                               "desired behavior")
        result.append(g)
    return tuple(result)


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True) -> bool:
    """Compare analytic gradients with central finite differences, in float64.

    ``inputs``: tensors (views allowed); those with ``requires_grad`` are checked. The function
    output may be any shape: it is reduced as ``sum(out * R)`` with a fixed random R, so each
    input needs one backward and ``2 * numel`` forward evaluations.
    Reference: the central difference (f(x+h) - f(x-h)) / 2h, error O(h^2).
    Raises RuntimeError with the worst element when a gradient differs (or returns False).
    """
    import clgrad
    from clgrad.tensor import Tensor
    inputs = tuple(inputs) if isinstance(inputs, (list, tuple)) else (inputs,)
    for t in inputs:
        if isinstance(t, Tensor) and t.requires_grad and t.dtype is not clgrad.float64:
            raise TypeError(f"gradcheck: expected float64 inputs, got {t.dtype}")
    out = fn(*inputs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    rng = np.random.default_rng(1234)
    weights = [clgrad.tensor(rng.standard_normal(o.shape), dtype=o.dtype) for o in outs]

    def scalar():
        with no_grad():
            res = fn(*inputs)
            res = res if isinstance(res, (tuple, list)) else (res,)
            return float(sum((r.to(clgrad.float64) * w).sum().item()
                             for r, w in zip(res, weights)))

    loss = None
    for o, w in zip(outs, weights):
        term = (o * w).sum()
        loss = term if loss is None else loss + term
    checked = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    analytic = grad(loss, checked, allow_unused=True) if loss.requires_grad else \
        [None] * len(checked)
    for idx, (t, ga) in enumerate(zip(checked, analytic)):
        ga = np.zeros(t.shape) if ga is None else ga.numpy()
        gn = np.zeros(t.shape)
        flat_index = list(np.ndindex(*t.shape))
        for pos in flat_index:
            orig = t[pos].item() if t.ndim else t.item()
            with no_grad():
                _poke(t, pos, orig + eps)
                fp = scalar()
                _poke(t, pos, orig - eps)
                fm = scalar()
                _poke(t, pos, orig)
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


def _poke(t, pos, value):
    # Writes one element of a checked input without touching its version (gradcheck only).
    from clgrad.ops import elementwise
    v = t[pos] if t.ndim else t
    elementwise.fill_raw(v, value)


def _wrap_mode(fn, mode_cls):
    @functools.wraps(fn)
    def inner(*a, **k):
        with mode_cls():
            return fn(*a, **k)
    return inner
