"""Activation checkpointing (PyTorch's torch.utils.checkpoint): trade compute for memory.

``checkpoint(fn, *args)`` runs ``fn`` and keeps none of its intermediate activations: the
graph it recorded is cut down to one Node (``CheckpointBackward``) whose inputs are the
tensors ``fn`` read from outside (its tensor arguments, and whatever parameters or other
tensors requiring grad it used). In backward that Node reruns ``fn`` on the same arguments
with grad mode on -- with clgrad's random generator put back where it was, so dropout draws
the same masks -- and walks the recomputed graph back to those inputs. Memory: between
forward and backward only the arguments and the outputs stay alive; during backward one
segment's activations at a time.

How the boundary is found: the forward runs with grad mode on (PyTorch's non-reentrant
variant records too); each Node made during ``fn`` carries a sequence number above the one
taken at the start, so the edges leaving those Nodes toward older Nodes or leaves are the
segment's inputs. Once they are known the segment's Nodes are dropped (the outputs are
re-pointed at the one checkpoint Node), which frees the activations they saved. Peak memory
of a segment's forward is therefore its own activations, as during its recomputation.

Both ``use_reentrant`` values run this mechanism, so gradients reach parameters and
``autograd.grad`` works either way. What differs, as PyTorch: ``use_reentrant=True`` (the
default when the argument is left out, with a warning) rejects keyword arguments to ``fn``
and, when no tensor argument requires grad, warns and returns outputs that do not require
grad (the parameters inside get no gradient); ``use_reentrant=False`` takes keyword arguments
and follows every tensor that requires grad. Not supported: ``context_fn`` other than None,
``debug``; ``determinism_check`` is always "default" (recomputed outputs must have the
shapes and dtypes of the first run, else RuntimeError).
"""
from __future__ import annotations

import contextlib
import warnings

from clgrad.autograd import graph as _graph
from clgrad.autograd import Node, enable_grad, is_grad_enabled, no_grad
from clgrad.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]


def checkpoint(function, *args, use_reentrant=None, context_fn=None,
               determinism_check="default", debug=False, preserve_rng_state=True,
               early_stop=True, **kwargs):
    """``function(*args, **kwargs)``, keeping only its inputs and outputs for backward (the
    forward is run again inside backward); see the module docstring.

    Args:    use_reentrant: True (PyTorch's default, warned about when not given) or False;
             preserve_rng_state: put clgrad's generator back to its state before the first
             run while recomputing (so dropout masks match), then restore it
    Returns: what ``function`` returns (a tensor, or a tuple; non-tensors pass through)
    Raises:  ValueError for keyword arguments with use_reentrant=True (PyTorch's rule);
             NotImplementedError for a context_fn or debug=True; RuntimeError in backward when
             the recomputed forward differs from the first (shapes, dtypes, inputs reached)
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed "
                      "explicitly; clgrad (as PyTorch) defaults to use_reentrant=True. "
                      "use_reentrant=False is recommended.", stacklevel=2)
        use_reentrant = True
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is not None or debug:
        raise NotImplementedError("checkpoint: context_fn and debug=True are not supported")
    if not is_grad_enabled():
        return function(*args, **kwargs)
    if use_reentrant and not any(isinstance(a, Tensor) and a.requires_grad for a in args):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                      stacklevel=2)
        with no_grad():
            return function(*args)
    from clgrad.creation import seed_generator
    rng = seed_generator().bit_generator.state if preserve_rng_state else None
    start = next(_graph._seq)
    out = function(*args, **kwargs)
    single = not isinstance(out, tuple)
    outs = [out] if single else list(out)
    del out
    diff = [k for k, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
    if not diff:
        return outs[0] if single else tuple(outs)
    edges, meta = _boundary([outs[k] for k in diff], start)
    out_meta = [(tuple(outs[k].shape), outs[k].dtype) for k in diff]
    saved = tuple((a, a._storage.version) for a in args if isinstance(a, Tensor))

    def recompute_and_walk(grads):
        return _backward(function, args, kwargs, rng, grads, edges, out_meta)

    for k in diff:  # the outputs, cut from the segment's graph (whose activations go with it)
        outs[k] = outs[k].detach()
    if len(diff) == 1:
        node = Node("Checkpoint", edges, lambda g: recompute_and_walk([g]), saved, meta)
        outs[diff[0]]._requires_grad, outs[diff[0]]._grad_fn = True, node
    else:
        central = Node("Checkpoint", edges, recompute_and_walk, saved, meta)
        central.n_outputs = len(diff)
        for slot, k in enumerate(diff):
            o = outs[k]
            node = Node("Checkpoint", (central,), lambda g: (g,), (), ((tuple(o.shape),
                                                                         o.dtype,
                                                                         o._storage.device),))
            node.slot = slot
            o._requires_grad, o._grad_fn = True, node
    return outs[0] if single else tuple(outs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a Sequential or a list of modules/functions) in ``segments`` chunks,
    each but the last under ``checkpoint`` (PyTorch's torch.utils.checkpoint
    .checkpoint_sequential): only the chunks' boundary activations are kept for backward.

    Args:    segments: the number of chunks (each len(functions) // segments long, the last
             one taking the rest); use_reentrant, preserve_rng_state: as checkpoint
    Raises:  ValueError for other keyword arguments
    """
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant "
                      "parameter should be passed explicitly; defaulting to True (PyTorch's "
                      "default).", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from clgrad.nn.containers import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run_function(start, end):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run_function(start, end), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1)(input)


# -- internals ----------------------------------------------------------------------------------
def _boundary(outs, start):
    """The edges from the Nodes recorded after sequence number ``start`` (reachable from
    ``outs``) to older Nodes and leaves: (edges, their (shape, dtype))."""
    edges, meta, seen_edges = [], [], set()

    def add(e, m):
        if id(e) not in seen_edges:
            seen_edges.add(id(e))
            edges.append(e)
            meta.append(m)

    stack, seen = [], set()
    for o in outs:
        fn = o.grad_fn
        if fn is not None and fn.seq > start:
            stack.append(fn)
        else:  # an output made outside the segment (an argument returned as is)
            add(fn if fn is not None else o, (tuple(o.shape), o.dtype, o._storage.device))
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for e, m in zip(n.next, n.input_meta):
            if e is None:
                continue
            if isinstance(e, Node) and e.seq > start:
                stack.append(e)
            else:
                add(e, m)
    return tuple(edges), tuple(meta)


@contextlib.contextmanager
def _rng_at(state):
    """Run with clgrad's generator at ``state`` (None: as it is), then put it back."""
    if state is None:
        yield
        return
    from clgrad.creation import seed_generator
    bits = seed_generator().bit_generator
    now = bits.state
    bits.state = state
    try:
        yield
    finally:
        seed_generator().bit_generator.state = now


def _backward(function, args, kwargs, rng, grads, edges, out_meta):
    """Rerun ``function`` with grad mode on and walk its graph from the outputs (seeded with
    ``grads``) back to ``edges``; one gradient (or None) per edge."""
    with _rng_at(rng), enable_grad():
        start = next(_graph._seq)
        out = function(*args, **kwargs)
    outs = [o for o in ((out,) if not isinstance(out, tuple) else out)
            if isinstance(o, Tensor) and o.requires_grad]
    if [(tuple(o.shape), o.dtype) for o in outs] != list(out_meta):
        raise RuntimeError(f"checkpoint: the recomputed forward gave outputs "
                           f"{[(tuple(o.shape), o.dtype) for o in outs]}, the first run "
                           f"{list(out_meta)}; the checkpointed function must be deterministic")
    where = {id(e): i for i, e in enumerate(edges)}
    found = [None] * len(edges)
    node_grads = {}

    def send(edge, g, slot=None):
        i = where.get(id(edge))
        if i is not None:
            found[i] = g if found[i] is None else found[i] + g
        elif isinstance(edge, Node) and edge.seq > start:
            if edge.n_outputs is not None:
                lst = node_grads.setdefault(id(edge), [None] * edge.n_outputs)
                lst[slot] = g if lst[slot] is None else lst[slot] + g
            else:
                prev = node_grads.get(id(edge))
                node_grads[id(edge)] = g if prev is None else prev + g
        else:
            raise RuntimeError("checkpoint: the recomputed forward used a tensor that requires "
                               "grad which the first run did not use; the checkpointed "
                               "function must be deterministic")

    nodes, stack, seen = [], [], set()
    for o, g in zip(outs, grads):
        if g is None:
            continue
        root = o.grad_fn if o.grad_fn is not None else o
        send(root, g)
        if isinstance(root, Node) and root.seq > start:
            stack.append(root)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        nodes.append(n)
        stack.extend(e for e in n.next if isinstance(e, Node) and e.seq > start)
    del outs, out
    for node in sorted(nodes, key=lambda n: -n.seq):
        g = node_grads.pop(id(node), None)
        if g is None:
            continue
        if node.hooks:
            g = _graph._call_hooks(node.hooks, g)
        for edge, ig in _graph._apply(node, g, False):
            send(edge, ig, node.slot)
    return tuple(found)
