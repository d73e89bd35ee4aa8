"""User-defined ops: Function, FunctionCtx, once_differentiable (torch.autograd.function)."""
from __future__ import annotations

import functools

from clgrad.autograd import saved_hooks
from clgrad.autograd.grad_mode import is_grad_enabled, no_grad
from clgrad.autograd.graph import Node, _edge, output_of
from clgrad.tensor import Tensor, autograd_version

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


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
        self._packed = None  # (hooks, packed values) under saved_tensors_hooks

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
        """The tensors given to save_for_backward (inside backward); saved under
        ``saved_tensors_hooks``, what ``unpack_hook`` returns for each, on each access (as
        PyTorch's)."""
        if self._saved is None:
            raise RuntimeError("saved_tensors: only available in backward (and not after the "
                               "graph was freed by a backward without retain_graph)")
        if self._packed is not None:
            return saved_hooks.unpack_all(self._packed[0], self._packed[1], self._saved)
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
    """PyTorch's decorator for a backward that is not itself differentiable (torch.autograd.
    function.once_differentiable): the decorated backward runs under no_grad; under
    create_graph, when a gradient it got requires grad, each gradient it returns carries a
    ``DelayedError`` node instead of a graph, so differentiating it again raises RuntimeError
    "trying to differentiate twice a function that was marked with @once_differentiable"
    (only then: a first-order use of those gradients works)."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled() or not any(isinstance(a, Tensor) and a.requires_grad
                                            for a in args):
            return outputs
        if not isinstance(outputs, tuple):
            return delayed_error(outputs, _TWICE)
        return tuple(delayed_error(o, _TWICE) for o in outputs)
    return wrapper


_TWICE = ("trying to differentiate twice a function that was marked with "
          "@once_differentiable")


def delayed_error(t, message: str):
    """``t`` (a gradient computed under create_graph) as a new alias whose grad_fn raises
    RuntimeError(``message``) when it is differentiated (PyTorch's DelayedError node, over a
    detached stand-in leaf): once_differentiable's gradients, and those ops give whose
    derivative PyTorch does not define either (scatter_reduce's prod with several zeros)."""
    if not isinstance(t, Tensor):
        return t

    def fail(*_):
        raise RuntimeError(message)
    stand_in = t.detach()
    stand_in._requires_grad = True
    node = Node("DelayedError", (stand_in,), fail, (),
                ((tuple(t.shape), t._storage.dtype, t._storage.device),))
    node.double = fail
    out = t.detach()
    out._requires_grad, out._grad_fn = True, node
    return out


class Function:
    """A user-defined op: subclass with ``forward(ctx, *args)`` and ``backward(ctx, *grads)``
    staticmethods and call ``apply(*args)`` (PyTorch's torch.autograd.Function).

    ``forward`` runs under no_grad and returns a Tensor or a tuple (non-tensor entries pass
    through). ``backward`` gets one gradient per output and returns one per forward argument
    (None for non-tensors and for inputs needing none). The newer style -- ``forward(*args)``
    plus ``setup_context(ctx, inputs, output)`` -- works too. One Node is recorded on the tape
    (one per output more when there are several differentiable outputs); it saves what
    ``ctx.save_for_backward`` got. Double backward as PyTorch's: under ``create_graph=True``
    backward runs with grad mode on, so the ops it calls are recorded and its gradients are
    differentiable again (as far as those ops are); ``ctx.saved_tensors`` then gives the
    saved inputs as they are and the saved outputs re-attached to the Function's node
    (PyTorch's SavedVariable), so second derivatives flow through both; a backward marked
    ``@once_differentiable`` raises when differentiated again. Not supported:
    ``ctx.mark_dirty``, ``vmap``/``jvp``.
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
        under no_grad, or with grad mode on under ``create_graph=True`` (its ops recorded: a
        double backward, as PyTorch). Raises NotImplementedError when not overridden.
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
    originals = ctx.to_save
    saved = tuple(t if t is None or id(t) not in pos else outs[pos[id(t)]].detach()
                  for t in originals)
    ctx._saved, ctx.to_save = saved, ()
    if saved_hooks.ACTIVE[0] and saved:  # saved_tensors_hooks: pack now, unpack in backward
        hooks = saved_hooks.current()
        if hooks is not None:
            ctx._packed = (hooks, saved_hooks.pack_all(hooks, saved))
    meta = [(tuple(o.shape), o.dtype, o._storage.device, o.detach())
            if isinstance(o, Tensor) else None
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

    # create_graph: backward runs with grad mode on (the engine's), its ops recorded; the
    # saved outputs (held detached) are handed to it re-attached to their output's node, so
    # second derivatives flow back through the Function too (PyTorch's SavedVariable)
    saved_slots = []  # per saved tensor: the slot of the differentiable output it is, or None
    for t in originals:  # (a loop, not a generator: no Python frame per apply)
        k = None if t is None else pos.get(id(t))
        saved_slots.append(diff.index(k) if k in diff else None)

    def double(grads, node):
        packed = ctx._packed  # under saved_tensors_hooks: the unpacked values, re-attached
        base = saved if packed is None else saved_hooks.unpack_all(packed[0], packed[1], saved)
        if packed is not None or any(s is not None for s in saved_slots):
            ctx._saved = tuple(_reattached(t, o) if s is None else
                               _saved_output(node, s, t, len(diff) == 1)
                               for t, o, s in zip(base, originals, saved_slots))
        ctx._packed = None
        try:
            return backward_fn([grads] if len(diff) == 1 else grads)
        finally:
            ctx._saved, ctx._packed = saved, packed

    saved_v = tuple((t, autograd_version(t)) for t in saved if t is not None)
    if len(diff) == 1:
        o = outs[diff[0]]
        node = Node(name, tuple(_edge(t) for t in inputs), lambda g: backward_fn([g]), saved_v,
                    tuple((tuple(t.shape), t.dtype, t._storage.device) for t in inputs))
        node.double = double
        o._requires_grad, o._grad_fn = True, node
        return
    central = Node(name, tuple(_edge(t) for t in inputs), backward_fn, saved_v,
                   tuple((tuple(t.shape), t.dtype, t._storage.device) for t in inputs))
    central.n_outputs = len(diff)
    central.double = double
    for slot, k in enumerate(diff):  # one Node per output routes its gradient to its slot
        o = outs[k]
        node = Node(name, (central,), _pass, (), ((tuple(o.shape), o.dtype, o._storage.device),))
        node.slot = slot
        node.double = True
        o._requires_grad, o._grad_fn = True, node


def _pass(g):
    return (g,)


def _reattached(u, t):
    """The saved input ``t`` as ``unpack_hook`` gave it back (``u``), for a backward under
    create_graph: an alias of ``u`` whose gradient flows to ``t``, as PyTorch's SavedVariable
    re-attaches an unpacked input to the input's graph; ``u`` itself where nothing flows."""
    if u is t or t is None or not t.requires_grad:
        return u
    node = Node("alias", (_edge(t),), _pass, (), ((tuple(t.shape), t.dtype, t._storage.device),))
    node.double = True
    out = Tensor(u._storage, u._shape, u._strides, u._offset)
    out._requires_grad, out._grad_fn = True, node
    return out


def _saved_output(node, slot, y, single):
    """The saved output ``y`` (held detached) as a tensor of the Function's graph again, for
    its backward under create_graph: of ``node`` itself (one differentiable output), or of a
    new routing node into output ``slot`` of the central ``node`` (several)."""
    if not single:
        route = Node(node._op, (node,), _pass, (),
                     ((tuple(y.shape), y._storage.dtype, y._storage.device),))
        route.slot = slot
        route.double = True
        node = route
    return output_of(node, y)

