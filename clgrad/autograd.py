"""The tape: Nodes with sequence numbers, backward as a reverse walk, grad mode, gradcheck.

Every differentiable op calls :func:`record` with its output, its inputs and a backward
closure. When grad mode is on and an input requires grad, a :class:`Node` is created with the
next sequence number and becomes ``out.grad_fn``. ``backward()`` collects the Nodes reachable
from the output (iteratively: a chain of any length, no recursion) and runs them in decreasing
sequence number: every consumer of a tensor was recorded after it, so each Node's gradient is
complete when it runs. Leaves accumulate into ``.grad``, one dense tensor of their shape.

Memory. No global list is kept: a graph lives exactly as long as the tensors that reference
it (``out -> Node -> backward closure -> what backward reads``). A closure must not hold its
own output: ``out -> Node -> closure -> out`` is a reference cycle that only the cyclic gc
frees, so device buffers would outlive their loop iteration. Ops that read their output in
backward capture ``out.detach()`` (the same storage, no Node). After a backward without
``retain_graph``, a Node that saved tensors drops its closure (and with it those buffers); a
second backward through it raises RuntimeError. A Node that saved nothing stays usable, as in
PyTorch.

Saved tensors. ``record(..., saved=[...])`` stores each saved tensor with its storage version;
backward compares, so a saved tensor written in place afterwards (directly, through any view
of its storage, through a ``detach()`` alias, with grad mode on or off) raises RuntimeError
naming the op and both versions. What each op saves, hence what must not be written later:
  output:   exp, sqrt, rsqrt, reciprocal, tanh, sigmoid, relu; prod (and its input)
  input:    log, sin, cos, square, abs, clamp (number bounds), ``x ** 2``
  operands: mul (the other operand), div (divisor and output), pow (both operands and the
            output), maximum/minimum (both; so clamp with tensor bounds), where (the
            condition), matmul (both)
  indices:  max/min/amax/amin (the argmax), index_select/gather/scatter_add (the index);
            advanced indexing and index_put_ copy the indices to the host: nothing saved
  nothing:  add, sub, neg, casts, contiguous/clone, sum, mean, every view op,
            cat/stack/split/chunk/unbind
(Ops of other families say what they save in their own docs.)
So ``y = x.exp(); y.narrow(0, 1, 1).mul_(2)`` raises at backward (exp saved y), exactly as
PyTorch, while ``y = x.sin(); y.narrow(0, 1, 1).mul_(2)`` rebases.

In-place writes and how they rebase the graph: clgrad/ops/inplace.py.

Layering: this module imports only tensor, layout and dtypes, never clgrad.ops; the tensors it
makes (implicit gradients, gradcheck's weights) come from Tensor's bound methods.
"""
from __future__ import annotations

import collections
import functools
import itertools
import threading
import weakref

import numpy as np

from clgrad import dtypes, layout
from clgrad.tensor import Tensor

__all__ = ["Node", "record", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
           "is_grad_enabled", "gradcheck", "inference_mode", "Function", "FunctionCtx",
           "register_hook", "RemovableHandle", "once_differentiable",
           "register_post_accumulate_grad_hook"]

_state = threading.local()
# Held while a backward adds into a .grad (a leaf's, or a retain_grad() tensor's): several
# threads may run backward into one shared leaf at once, and each accumulation is a read of
# .grad then a write (PyTorch's AccumulateGrad holds a mutex likewise). One lock for all:
# accumulations are short, and a leaf may be reached through views and aliases alike.
_ACCUMULATE_LOCK = threading.RLock()
_seq = itertools.count()


# -- grad mode --------------------------------------------------------------------------------
def is_grad_enabled() -> bool:
    """True when ops record Nodes (the default); False inside ``no_grad()``. Per thread."""
    return getattr(_state, "enabled", True)


def _set_enabled(mode: bool):
    _state.enabled = bool(mode)


class _GradMode:
    """Sets grad mode for a ``with`` block, restoring the previous mode on exit. As a
    decorator it enters a fresh context on every call, so recursion and threads are safe."""

    mode = True

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        _set_enabled(self._prev)
        return False

    def _fresh(self):
        return type(self)()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self._fresh():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Ops inside record nothing (optimizer updates, evaluation).

    ``with no_grad():``, ``@no_grad()`` or ``@no_grad``.
    """

    mode = False

    def __new__(cls, fn=None):
        return cls()(fn) if fn is not None else super().__new__(cls)


class enable_grad(_GradMode):
    """Turn grad mode back on inside a ``no_grad`` block; ``with``, ``@enable_grad()`` or
    ``@enable_grad``."""

    mode = True

    def __new__(cls, fn=None):
        return cls()(fn) if fn is not None else super().__new__(cls)


class set_grad_enabled(_GradMode):
    """Grad mode ``mode``: for a ``with`` block, around each call of a decorated function, or,
    called as a plain statement, from now on (PyTorch semantics)."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = is_grad_enabled()
        _set_enabled(self.mode)

    def __enter__(self):
        _set_enabled(self.mode)  # the previous mode was taken in __init__
        return self

    def _fresh(self):
        return set_grad_enabled(self.mode)

    def __call__(self, fn):
        _set_enabled(self._prev)  # decorating does not change the mode
        return super().__call__(fn)


# -- the tape ---------------------------------------------------------------------------------
class Node:
    """One recorded op: where its gradient goes, what it saved, how to differentiate it.

    ``next`` holds, per input, the input's Node, the leaf Tensor itself (gradients accumulate
    into its ``.grad``) or None (no gradient needed). ``backward_fn(grad_out)`` returns one
    gradient (or None) per input; it is None once released. ``saved`` is a tuple of
    (tensor, storage version at save time). ``retained`` is a weakref to the output when it
    called ``retain_grad()``.
    """

    __slots__ = ("seq", "name", "next", "backward_fn", "saved", "retained", "input_meta",
                 "hooks", "n_outputs", "slot", "__weakref__")

    def __init__(self, name, next_edges, backward_fn, saved, input_meta):
        self.seq = next(_seq)
        self.name = name
        self.next = next_edges
        self.backward_fn = backward_fn
        self.saved = saved
        self.retained = None
        self.input_meta = input_meta
        self.hooks = None      # {key: hook} registered on the output tensor (register_hook)
        self.n_outputs = None  # a Function with several outputs: gradients arrive as a list
        self.slot = None       # the output of such a Function this Node stands for

    def __repr__(self):
        return f"<{self.name}Backward seq={self.seq}>"

    @property
    def next_functions(self):
        """The Nodes (or leaf tensors, or None) this Node sends gradients to, one per input."""
        return tuple(self.next)


def _edge(t):
    if t is None or not t.requires_grad:
        return None
    fn = t.grad_fn
    return fn if fn is not None else t


def record(name: str, out, inputs, backward_fn, saved=()):
    """Attach a Node to ``out`` when grad mode is on and any input requires grad.

    ``inputs``: tensors (or None); ``backward_fn(grad_out) -> tuple`` with one entry per
    input, each of that input's shape; ``saved``: the tensors whose values backward reads
    (their versions are checked). ``backward_fn`` must not capture ``out`` itself (capture
    ``out.detach()``): that would be a reference cycle. Returns ``out``.
    """
    if not is_grad_enabled():
        return out
    edges = tuple(_edge(t) for t in inputs)
    if all(e is None for e in edges):
        return out
    meta = tuple(None if t is None else (tuple(t.shape), t.dtype) for t in inputs)
    node = Node(name, edges, backward_fn, tuple((t, t._storage.version) for t in saved), meta)
    out._requires_grad = True
    out._grad_fn = node
    return out


def _check_saved(node):
    for t, version in node.saved:
        now = t._storage.version
        if now != version:
            raise RuntimeError(
                f"one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: a tensor of shape {tuple(t.shape)} saved by {node.name} is "
                f"at version {now}; expected version {version} instead. Hint: do not write "
                f"into it (or any view of its storage) before backward, or clone() it first")


def _collect(roots):
    """The Nodes reachable from ``roots``, latest first (an explicit stack, no recursion)."""
    seen, stack, nodes = set(), [r for r in roots if isinstance(r, Node)], []
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        nodes.append(n)
        stack.extend(e for e in n.next if isinstance(e, Node) and id(e) not in seen)
    nodes.sort(key=lambda n: -n.seq)
    return nodes


def _accumulate(store: dict, key, g, owned: dict):
    prev = store.get(key)
    if prev is None:
        store[key] = g
        owned[key] = False  # may alias a tensor someone else holds
    else:
        store[key] = prev + g
        owned[key] = True  # a fresh tensor made by the engine


def _apply(node, g, retain_graph):
    """Run one Node: [(edge, gradient)] for the inputs that need one."""
    if node.backward_fn is None:
        raise RuntimeError(
            f"Trying to backward through the graph a second time (through {node.name}), but "
            f"the saved tensors have already been freed. Specify retain_graph=True on the first "
            f"backward() or autograd.grad() call.")
    _check_saved(node)
    grads = node.backward_fn(g)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != len(node.next):
        raise RuntimeError(f"{node.name} backward returned {len(grads)} gradients for "
                           f"{len(node.next)} inputs (internal error)")
    out = []
    for edge, ig, meta in zip(node.next, grads, node.input_meta):
        if edge is None or ig is None:
            continue
        shape, dtype = meta
        if tuple(ig.shape) != shape:
            raise RuntimeError(f"{node.name} backward returned a gradient of shape "
                               f"{tuple(ig.shape)} for an input of shape {shape} (internal "
                               f"error)")
        out.append((edge, ig if ig.dtype is dtype else ig.to(dtype)))
    if not retain_graph and node.saved:
        node.backward_fn, node.saved = None, ()  # frees the saved buffers now
    return out


def _run(roots, root_grads, retain_graph, targets=None):
    """Walk the tape from ``roots`` (Nodes or leaf tensors), seeded with ``root_grads``.

    Without ``targets``: gradients accumulate into the leaves' ``.grad`` (and into tensors
    that called retain_grad()); returns None. With ``targets``: returns {id(t): gradient} for
    those tensors and touches no ``.grad``.
    """
    node_grads, leaf_grads, leaves, owned = {}, {}, {}, {}
    # How often each storage was handed along an edge: a leaf may keep a gradient without a
    # copy only when nothing else received that storage (and the caller did not supply it).
    deliveries = dict.fromkeys((id(g._storage) for g in root_grads), 1)

    def send(edge, g, slot=None):
        deliveries[id(g._storage)] = deliveries.get(id(g._storage), 0) + 1
        if isinstance(edge, Node) and edge.n_outputs is not None:  # from output `slot`'s Node
            grads = node_grads.setdefault(id(edge), [None] * edge.n_outputs)
            grads[slot] = g if grads[slot] is None else grads[slot] + g
        elif isinstance(edge, Node):
            _accumulate(node_grads, id(edge), g, owned)
        else:
            _accumulate(leaf_grads, id(edge), g, owned)
            leaves[id(edge)] = edge

    want = None if targets is None else {id(t) for t in targets}
    captured = {}
    with no_grad():
        for r, g in zip(roots, root_grads):
            send(r, g)
        nodes = _collect(roots)
        # Edges still to run into each leaf: a leaf's gradient is final (and its post-
        # accumulate-grad hooks run) as soon as the last Node sending to it has run.
        pending = None if want is not None else collections.Counter(
            id(e) for n in nodes for e in n.next if e is not None and not isinstance(e, Node))
        for node in nodes:
            g = node_grads.pop(id(node), None)
            if g is not None:
                if node.hooks:
                    g = _call_hooks(node.hooks, g)
                t = node.retained() if node.retained is not None else None
                if t is not None and want is None:
                    with _ACCUMULATE_LOCK:  # another thread's backward may add to it too
                        t._grad = (g.contiguous(force_copy=True) if t._grad is None else
                                   t._grad + g)
                elif t is not None and id(t) in want:
                    captured[id(t)] = g
                for edge, ig in _apply(node, g, retain_graph):
                    send(edge, ig, node.slot)
            if pending is not None:
                for e in node.next:
                    if e is None or isinstance(e, Node):
                        continue
                    pending[id(e)] -= 1
                    if pending[id(e)] == 0 and id(e) in leaf_grads:
                        _finish_leaf(e, leaf_grads.pop(id(e)), owned[id(e)], deliveries)
        if want is not None:
            captured.update((k, _leaf_hooked(leaves[k], g)) for k, g in leaf_grads.items()
                            if k in want)
            return captured
        for k, g in leaf_grads.items():  # leaves that were roots themselves
            _finish_leaf(leaves[k], g, owned[k], deliveries)
    return None


def _finish_leaf(leaf, g, owned, deliveries):
    """Accumulate the final gradient ``g`` (after the leaf's register_hook hooks) into
    ``leaf.grad``, then run the leaf's post-accumulate-grad hooks."""
    hooked = _leaf_hooked(leaf, g)
    with _ACCUMULATE_LOCK:  # add_ reads then writes .grad: concurrent backwards would lose sums
        if leaf._grad is None:  # a dense tensor of its own, never an alias
            fresh = hooked is g and (owned or deliveries[id(g._storage)] == 1)
            g = hooked
            own = fresh and g._base is None and g._offset == 0 and g.is_contiguous() \
                and g.numel() == g._storage.size
            leaf._grad = g if own else g.contiguous(force_copy=True)
        else:
            leaf._grad.add_(hooked)
    for hook in tuple((leaf._post_acc_hooks or {}).values()):
        hook(leaf)


def register_post_accumulate_grad_hook(tensor, hook) -> RemovableHandle:
    """Run ``hook(tensor)`` after each ``backward()`` has accumulated the gradient of the
    leaf ``tensor`` into ``tensor.grad`` (PyTorch's Tensor.register_post_accumulate_grad_hook).

    The hook runs once per backward, under no_grad, as soon as the gradient is final -- while
    the rest of the backward is still to run, so work can start early (DistributedDataParallel
    starts a bucket's all-reduce there). ``autograd.grad`` accumulates nothing and runs none.
    Raises RuntimeError for a non-leaf or a tensor that does not require grad.
    """
    if not tensor.requires_grad:
        raise RuntimeError("register_post_accumulate_grad_hook: cannot register a hook on a "
                           "tensor that doesn't require gradient")
    if tensor.grad_fn is not None:
        raise RuntimeError("register_post_accumulate_grad_hook: post accumulate grad hooks "
                           "cannot be registered on non-leaf tensors")
    if tensor._post_acc_hooks is None:
        tensor._post_acc_hooks = {}
    key = next(_hook_keys)
    tensor._post_acc_hooks[key] = hook
    return RemovableHandle(tensor._post_acc_hooks, key)


def _roots_and_grads(tensors, grad_tensors, op):
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"{op}: got {len(tensors)} tensors and {len(grad_tensors)} "
                           f"gradients")
    roots, grads = [], []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected Tensors, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"{op}: element {i} of tensors does not require grad and does "
                               f"not have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for scalar "
                                   f"outputs; got an output of shape {tuple(t.shape)}: pass "
                                   f"gradient=")
            g = t.new_ones(t.shape)
        elif not isinstance(g, Tensor):
            g = t.new_tensor(g)
        if tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"{op}: expected gradient of shape {tuple(t.shape)}, got "
                               f"{tuple(g.shape)}")
        if g.dtype is not t.dtype:
            g = g.to(t.dtype)
        fn = t.grad_fn
        roots.append(fn if fn is not None else t)
        grads.append(g.detach())
    return roots, grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute gradients of ``tensors`` w.r.t. the leaves and accumulate them into ``.grad``.

    ``grad_tensors``: one gradient per tensor, same shape; None is allowed only for tensors
    with one element (implicit gradient 1). Raises RuntimeError when a tensor does not require
    grad, on a second backward through freed Nodes, or on a saved tensor modified in place;
    NotImplementedError (a RuntimeError) for ``create_graph=True`` (backward runs under
    no_grad here: no higher-order gradients) and for ``inputs=`` (use autograd.grad).
    """
    _no_create_graph("backward", create_graph)
    if inputs is not None:
        raise NotImplementedError("backward: inputs= is not supported; use "
                                  "clgrad.autograd.grad(outputs, inputs) instead")
    if isinstance(tensors, Tensor):
        tensors, grad_tensors = (tensors,), (grad_tensors,)
    else:
        tensors = tuple(tensors)
        if grad_tensors is None:
            grad_tensors = (None,) * len(tensors)
        elif isinstance(grad_tensors, Tensor):
            grad_tensors = (grad_tensors,)
    roots, grads = _roots_and_grads(tensors, tuple(grad_tensors), "backward")
    _run(roots, grads, bool(retain_graph))


def _no_create_graph(op, create_graph):
    if create_graph:
        raise NotImplementedError(f"{op}: create_graph=True is not supported: clgrad runs "
                                  f"backward under no_grad, so gradients have no graph of "
                                  f"their own (no higher-order derivatives)")


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned (not accumulated into ``.grad``).

    ``inputs`` may be leaves or intermediate tensors. Raises RuntimeError for an input that
    does not require grad, or that the walk does not reach (unless ``allow_unused``: None);
    NotImplementedError (a RuntimeError) for ``create_graph=True``.
    """
    _no_create_graph("grad", create_graph)
    retain_graph = bool(retain_graph)
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = (grad_outputs,)
    for i, t in enumerate(inputs):
        if not isinstance(t, Tensor):
            raise TypeError(f"grad: expected Tensors as inputs, got {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {i} does not require grad")
    roots, grads = _roots_and_grads(outputs, tuple(grad_outputs), "grad")
    handles = []
    for t in inputs:  # intermediate tensors: their gradient is captured at their Node
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


# -- hooks ------------------------------------------------------------------------------------
# A hook on a non-leaf lives on its grad_fn Node (so a hook registered before an in-place write
# sees the gradient of the old value, one registered after sees the new one: PyTorch's rule);
# a hook on a leaf lives in _LEAF_HOOKS, keyed by id and dropped when the leaf dies.
_LEAF_HOOKS: dict = {}
_hook_keys = itertools.count()


class RemovableHandle:
    """What register_hook and register_post_accumulate_grad_hook return: ``remove()``
    unregisters the hook (idempotent; also on ``with`` exit)."""

    def __init__(self, hooks: dict, key):
        self._hooks = hooks
        self._key = key

    def remove(self):
        """Unregister the hook; calling it again (or after the tensor died) does nothing."""
        self._hooks.pop(self._key, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def register_hook(t, hook) -> RemovableHandle:
    """Call ``hook(grad)`` each time the gradient of ``t`` is computed; a returned tensor (of
    t's shape, dtype and device, else RuntimeError as PyTorch's "hook 'name' has changed the
    type of value" / "size of value"; TypeError for a non-tensor) replaces the gradient. On a
    leaf the hook sees the total before it is
    accumulated into ``.grad``; on a non-leaf, before it flows on (and before retain_grad
    stores it). Hooks run in registration order, under no_grad. Raises RuntimeError for a
    tensor that does not require grad."""
    if not t.requires_grad:
        raise RuntimeError("register_hook: cannot register a hook on a tensor that doesn't "
                           "require gradient")
    if not callable(hook):
        raise TypeError(f"register_hook: expected a callable, got {type(hook).__name__}")
    fn = t.grad_fn
    if fn is not None:
        if fn.hooks is None:
            fn.hooks = {}
        hooks = fn.hooks
    else:
        key = id(t)
        entry = _LEAF_HOOKS.get(key)
        if entry is None or entry[0]() is not t:
            entry = (weakref.ref(t, lambda _, k=key: _LEAF_HOOKS.pop(k, None)), {})
            _LEAF_HOOKS[key] = entry
        hooks = entry[1]
    k = next(_hook_keys)
    hooks[k] = hook
    return RemovableHandle(hooks, k)


def _call_hooks(hooks: dict, g):
    for hook in list(hooks.values()):
        r = hook(g)
        if r is not None:
            _check_hook_result(hook, g, r)
            g = r
    return g


def _check_hook_result(hook, g, r):
    """PyTorch's check_variable_result: a hook may replace the gradient only with a tensor of
    the same dtype, device and shape (its messages). Raises TypeError for a non-tensor,
    RuntimeError for a changed dtype, device or shape."""
    if not isinstance(r, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
    name = getattr(hook, "__name__", None) or type(hook).__name__
    if r.dtype is not g.dtype:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was {g.type()} got "
                           f"{r.type()})")
    if r.device is not g.device:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was a tensor on "
                           f"{g.device.name!r} got a tensor on {r.device.name!r})")
    if tuple(r.shape) != tuple(g.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value (was "
                           f"{tuple(g.shape)} got {tuple(r.shape)})")


def _leaf_hooked(leaf, g):
    entry = _LEAF_HOOKS.get(id(leaf))
    if entry is None or entry[0]() is not leaf or not entry[1]:
        return g
    return _call_hooks(entry[1], g)


# -- inference_mode ---------------------------------------------------------------------------
class inference_mode(_GradMode):
    """PyTorch's inference_mode as a context manager or decorator (``@inference_mode()``,
    ``@inference_mode``): here it is ``no_grad()`` (``inference_mode(False)`` changes nothing).

    Unlike PyTorch, tensors made inside are ordinary tensors, not "inference tensors": they
    may be saved for backward or written in place later, and nothing is faster than under
    no_grad (clgrad has no per-tensor autograd bookkeeping to skip).
    """

    def __new__(cls, mode=True):
        if callable(mode):  # bare @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        self.enabled = bool(mode)

    def __enter__(self):
        self._prev = is_grad_enabled()
        if self.enabled:
            _set_enabled(False)
        return self

    def _fresh(self):
        return type(self)(self.enabled)


# -- user-defined Functions -------------------------------------------------------------------
class FunctionCtx:
    """The ``ctx`` of a Function: ``save_for_backward``/``saved_tensors``, ``needs_input_grad``
    (one bool per forward argument), ``mark_non_differentiable``, ``set_materialize_grads``;
    any other attribute may be set in forward and read in backward."""

    def __init__(self, needs_input_grad=()):
        self.needs_input_grad = tuple(needs_input_grad)
        self.to_save = ()
        self.materialize_grads = True
        self._non_differentiable = set()
        self._saved = None

    def save_for_backward(self, *tensors):
        """Keep tensors (or None) for backward; their versions are checked there, so writing
        one in place before backward raises RuntimeError (as for built-in ops)."""
        from clgrad.tensor import Tensor
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward: expected Tensors or None, got "
                                f"{type(t).__name__}; store other values as ctx attributes")
        self.to_save = tensors

    @property
    def saved_tensors(self):
        """The tensors given to save_for_backward (inside backward)."""
        if self._saved is None:
            raise RuntimeError("saved_tensors: only available in backward (and not after the "
                               "graph was freed by a backward without retain_graph)")
        return self._saved

    def mark_non_differentiable(self, *outputs):
        """These outputs do not require grad; backward still gets a gradient for each (zeros,
        or None with set_materialize_grads(False))."""
        self._non_differentiable.update(id(o) for o in outputs)

    def set_materialize_grads(self, value: bool):
        """With True (the default) backward gets zeros for outputs that received no gradient;
        with False it gets None for them."""
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors):
        """Not supported: always raises NotImplementedError.

        PyTorch lets a Function write an input in place and mark it dirty; clgrad does not
        support in-place Functions: return a new tensor instead.
        """
        raise NotImplementedError("mark_dirty: Functions that modify their inputs in place are "
                                  "not supported; return a new tensor instead")


def once_differentiable(fn):
    """PyTorch's decorator for a backward that is not itself differentiable: every clgrad
    backward runs under no_grad, so this returns ``fn`` unchanged."""
    return fn


class Function:
    """A user-defined op: subclass with ``forward(ctx, *args)`` and ``backward(ctx, *grads)``
    staticmethods and call ``apply(*args)`` (PyTorch's torch.autograd.Function).

    ``forward`` runs under no_grad and returns a Tensor or a tuple (non-tensor entries pass
    through). ``backward`` gets one gradient per output and returns one per forward argument
    (None for non-tensors and for inputs needing none). The newer style -- ``forward(*args)``
    plus ``setup_context(ctx, inputs, output)`` -- works too. One Node is recorded on the tape
    (one per output more when there are several differentiable outputs); it saves what
    ``ctx.save_for_backward`` got. Not supported: double backward (backward runs under
    no_grad), ``ctx.mark_dirty``, ``vmap``/``jvp``.
    Raises: RuntimeError in backward when it returns the wrong number of gradients, a gradient
    for a non-tensor argument, or one of the wrong shape.
    """

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the outputs (override as a staticmethod); runs under no_grad.

        Signature ``forward(ctx, *args)``, or ``forward(*args)`` together with setup_context.
        Returns a Tensor or a tuple (non-Tensor entries pass through). Raises NotImplementedError
        when not overridden.
        """
        raise NotImplementedError("Function.forward: subclasses must define forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Gradients of the inputs from the gradients of the outputs (override as a staticmethod).

        Gets one gradient per output (zeros, or None with ctx.set_materialize_grads(False), for
        outputs that got none); returns one per forward argument (None for non-Tensors). Runs
        under no_grad, so double backward is not supported (unlike PyTorch). Raises
        NotImplementedError when not overridden.
        """
        raise NotImplementedError("Function.backward: subclasses must define backward")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Optional (PyTorch 2 style): save what backward needs from ``inputs`` and ``output``;
        when overridden, forward does not take ctx. The base raises NotImplementedError.
        """
        raise NotImplementedError  # not overridden: forward takes ctx (see apply)

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward on ``args`` and, when grad mode is on and some Tensor argument requires grad,
        record one Node for backward. Returns forward's output (a Tensor or a tuple).

        Outputs that are floating point and not marked non-differentiable require grad; an input
        returned as is comes back as a new alias (a detached view carrying the Node). Keyword
        arguments are passed on to forward.
        """
        from clgrad.tensor import Tensor
        ctx = FunctionCtx(isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            if cls.setup_context is not Function.setup_context:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(output, tuple)
        outs = [output] if single else list(output)
        arg_ids = {id(a) for a in args if isinstance(a, Tensor)}
        orig_ids = [id(o) for o in outs]
        diff = [k for k, o in enumerate(outs) if isinstance(o, Tensor) and
                o.dtype.is_floating_point and id(o) not in ctx._non_differentiable]
        for k, o in enumerate(outs):  # an input returned as is: a new alias carries the node
            if isinstance(o, Tensor) and id(o) in arg_ids:
                outs[k] = o.detach()
        inputs = [a for a in args if isinstance(a, Tensor)]
        if is_grad_enabled() and diff and any(ctx.needs_input_grad):
            _record_function(cls, ctx, args, inputs, outs, orig_ids, diff)
        return outs[0] if single else tuple(outs)


def _record_function(cls, ctx, args, inputs, outs, orig_ids, diff):
    """Record the Node(s) of one Function.apply (see Function)."""
    name = cls.__name__
    pos = {i: k for k, i in enumerate(orig_ids)}
    # Saving an output must not hold the output itself (out -> Node -> ctx -> out is a cycle)
    saved = tuple(t if t is None or id(t) not in pos else outs[pos[id(t)]].detach()
                  for t in ctx.to_save)
    ctx._saved, ctx.to_save = saved, ()
    meta = [(tuple(o.shape), o.dtype, o.device, o.detach()) if isinstance(o, Tensor) else None
            for o in outs]
    is_t = [isinstance(a, Tensor) for a in args]
    in_shapes = [tuple(a.shape) for a in inputs]

    def backward_fn(grads):
        full = [None] * len(outs)
        for slot, k in enumerate(diff):
            full[k] = grads[slot]
        if ctx.materialize_grads:
            full = [m[3].new_zeros(m[0]) if g is None and m else g for g, m in zip(full, meta)]
        res = cls.backward(ctx, *full)
        res = res if isinstance(res, tuple) else (res,)
        if len(res) < len(args) or any(r is not None for r in res[len(args):]):
            raise RuntimeError(f"function {name}Backward returned an incorrect number of "
                               f"gradients (expected {len(args)}, got {len(res)})")
        out = []
        for i, (t, r) in enumerate(zip(is_t, res)):
            if not t:
                if r is not None:
                    raise RuntimeError(f"function {name}Backward returned a gradient different "
                                       f"than None at position {i}, but the corresponding "
                                       f"forward input was not a Tensor")
                continue
            if r is not None and tuple(r.shape) != in_shapes[len(out)]:
                raise RuntimeError(f"function {name}Backward returned an invalid gradient at "
                                   f"index {i} - got {tuple(r.shape)} but expected shape "
                                   f"compatible with {in_shapes[len(out)]}")
            out.append(r)
        return tuple(out)

    saved_v = tuple((t, t._storage.version) for t in saved if t is not None)
    if len(diff) == 1:
        o = outs[diff[0]]
        node = Node(name, tuple(_edge(t) for t in inputs), lambda g: backward_fn([g]), saved_v,
                    tuple((tuple(t.shape), t.dtype) for t in inputs))
        o._requires_grad, o._grad_fn = True, node
        return
    central = Node(name, tuple(_edge(t) for t in inputs), backward_fn, saved_v,
                   tuple((tuple(t.shape), t.dtype) for t in inputs))
    central.n_outputs = len(diff)
    for slot, k in enumerate(diff):  # one Node per output routes its gradient to its slot
        o = outs[k]
        node = Node(name, (central,), lambda g: (g,), (), ((tuple(o.shape), o.dtype),))
        node.slot = slot
        o._requires_grad, o._grad_fn = True, node


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


def _poke(t, pos, value):
    # Writes one element of a checked input without touching its version (gradcheck only).
    off = t._offset + sum(i * st for i, st in zip(pos, t._strides))
    t._storage.write(off, np.array(value, dtype=t.dtype.np))


def _function_module():
    """``clgrad.autograd.function`` (PyTorch's torch.autograd.function import path)."""
    import sys
    import types
    mod = types.ModuleType(__name__ + ".function", "Function, FunctionCtx, once_differentiable")
    mod.Function, mod.FunctionCtx, mod.once_differentiable = Function, FunctionCtx, \
        once_differentiable
    sys.modules[mod.__name__] = mod
    return mod


function = _function_module()


from clgrad._legacy import Variable  # noqa: E402,F401  (h4, issue 22: the pre-0.4 name)
