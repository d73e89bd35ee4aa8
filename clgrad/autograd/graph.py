"""The engine: Nodes with sequence numbers, record, backward/grad as a reverse walk, hooks.

See the package docstring (clgrad/autograd/__init__.py) for the memory and saved-tensor rules.
"""
from __future__ import annotations

import itertools
import operator
import threading
import warnings
import weakref

from clgrad.autograd import anomaly_mode, saved_hooks
from clgrad.autograd.grad_mode import _state as _GRAD_STATE
from clgrad.autograd.saved_hooks import (  # torch.autograd.graph's names
    disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks)
from clgrad._device import of_runtime
from clgrad.tensor import _CONTIG, Tensor, autograd_version

__all__ = ["Node", "record", "backward", "grad", "register_hook", "RemovableHandle",
           "register_post_accumulate_grad_hook", "output_of", "recomputed",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]

# Held while a backward adds into a .grad (a leaf's, or a retain_grad() tensor's): several
# threads may run backward into one shared leaf at once, and each accumulation is a read of
# .grad then a write (PyTorch's AccumulateGrad holds a mutex likewise). One lock for all:
# accumulations are short, and a leaf may be reached through views and aliases alike.
_ACCUMULATE_LOCK = threading.RLock()
_seq = itertools.count()
ABSORB = True  # False: every Node runs its own backward (no _absorb; tests and benches A/B)


# -- the tape ---------------------------------------------------------------------------------
class Node:
    """One recorded op: where its gradient goes, what it saved, how to differentiate it.

    ``next`` holds, per input, the input's Node, the leaf Tensor itself (gradients accumulate
    into its ``.grad``) or None (no gradient needed). ``backward_fn(grad_out)`` returns one
    gradient (or None) per input; it is None once released. ``saved`` is a tuple of
    (tensor, storage version at save time). ``retained`` is a weakref to the output when it
    called ``retain_grad()``. ``out_ndim``: the output's dims (PyTorch's name of reductions).

    ``double``: how the backward is differentiated again (``create_graph=True``): None -- it
    is not (the engine raises rather than return a gradient without its graph), True --
    ``backward_fn`` itself computes with recording ops, or a callable ``double(g, node)``, a
    backward of recording ops (``output_of(node, y)`` re-attaches the saved output ``y``).
    Either may come as ``(double, links, zeros)``: the gradients it gives are *linked* to the
    inputs numbered in ``links`` (see ``_linked``: PyTorch's formula of a piecewise-linear
    op reads its input or output, so its gradient requires grad and a second derivative
    through it is zeros -- ``zeros`` True -- or no gradient at all -- False).

    PyTorch's face: ``name()`` ('MulBackward0'; ``name`` also compares equal to clgrad's own
    op name, 'mul'), ``next_functions`` ((node, input_nr) pairs), ``metadata`` (a dict).
    """

    __slots__ = ("seq", "_op", "next", "backward_fn", "saved", "retained", "input_meta",
                 "hooks", "n_outputs", "slot", "out_ndim", "_metadata", "double", "packed",
                 "fuse", "__weakref__")

    def __init__(self, name, next_edges, backward_fn, saved, input_meta):
        self.seq = next(_seq)
        self._op = name
        self.next = next_edges
        self.backward_fn = backward_fn
        self.saved = saved
        self.retained = None
        self.input_meta = input_meta  # per input: (shape, dtype, its runtime Device) or None
        self.hooks = None      # {key: hook} registered on the output tensor (register_hook)
        self.n_outputs = None  # a Function with several outputs: gradients arrive as a list
        self.slot = None       # the output of such a Function this Node stands for
        self.out_ndim = 0
        self._metadata = None
        self.double = None     # see the class docstring (create_graph)
        self.packed = None     # (hooks, what pack_hook gave per saved tensor): saved_hooks.py
        self.fuse = None       # see _absorb: an activation's name, or a producer's fused backward

    def __repr__(self):
        # PyTorch's: '<MulBackward0 object at 0x7f...>'; a custom Function's node class lives
        # in torch.autograd.function ('<torch.autograd.function.MyFnBackward object at ...>')
        name = grad_fn_name(self, self.out_ndim)
        where = "clgrad.autograd.function." if self._op[:1].isupper() else ""
        return f"<{where}{name} object at {hex(id(self))}>"

    @property
    def name(self) -> str:
        """clgrad's op name ('mul', a Function's class name), a str; calling it, ``name()``,
        gives PyTorch's node name ('MulBackward0', 'MyFnBackward')."""
        return _NodeName(self._op, self)

    @property
    def metadata(self) -> dict:
        """A dict kept with the node for the user's own annotations (PyTorch's; empty at
        first)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    @property
    def next_functions(self) -> tuple:
        """PyTorch's ``((node, input_nr), ...)``, one pair per input: the input's Node, an
        ``AccumulateGrad`` (``.variable`` the leaf) for a leaf that requires grad, or
        ``(None, 0)`` for an input without gradient; ``input_nr`` is the output index of a
        several-output op."""
        if self.slot is not None and len(self.next) == 1 and isinstance(self.next[0], Node):
            return self.next[0].next_functions  # one output of a several-output op: the op's
        return tuple(_next_pair(e) for e in self.next)


# ---------------------------------------- grad_fn names (printed by clgrad/_tensor_str.py)
# clgrad's Node names -> PyTorch's (without "Backward0"); others are CamelCased.
_TORCH_NAMES = {
    "to": "ToCopy", "contiguous": "Clone", "view": "View", "getitem": "Slice",
    "narrow": "Slice", "matmul": "Mm", "pow_op": "Pow", "abs_op": "Abs", "sign_op": "Sign",
    "square": "Pow", "conv2d": "Convolution", "conv_transpose2d": "Convolution",
    "max_pool2d": "MaxPool2DWithIndices", "avg_pool2d": "AvgPool2D",
    "adaptive_avg_pool2d": "AdaptiveAvgPool2D", "adaptive_max_pool2d": "AdaptiveMaxPool2D",
    "batch_norm": "NativeBatchNorm", "batch_norm_relu": "Relu", "batch_norm_relu6": "Hardtanh",
    "batch_norm_silu": "Silu", "layer_norm":
    "NativeLayerNorm", "cross_entropy": "NllLoss", "nll_loss": "NllLoss", "mse_loss":
    "MseLoss", "dropout": "Mul", "relu6": "Hardtanh", "vector_norm": "LinalgVectorNorm",
    "pad": "ConstantPadNd", "interpolate": "UpsampleNearest2D", "copy_": "Copy",
    "binary_cross_entropy_with_logits": "BinaryCrossEntropyWithLogits",
    "log_softmax": "LogSoftmax", "logsumexp": "Logsumexp", "nan_to_num": "NanToNum",
    "clamp": "Clamp", "max": "Max", "min": "Min",
}


def grad_fn_name(node, out_ndim=0) -> str:
    """PyTorch's name of a grad_fn Node: 'AddBackward0', 'ToCopyBackward0', ... (clgrad's
    own node names mapped where they differ), '<Function class>Backward' for a custom
    ``autograd.Function``, as PyTorch prints them. ``out_ndim``: the output's dims (picks
    PyTorch's overload number of reductions)."""
    name = node.name
    if name[:1].isupper():  # an autograd.Function subclass
        return f"{name}Backward"
    base = _TORCH_NAMES.get(name)
    if base is None and name.endswith("_backward"):  # a link (_linked): PyTorch's backward op
        inner = _LINK_NAMES.get(name[:-9]) or _TORCH_NAMES.get(name[:-9])
        base = None if inner is None else inner + "Backward"
    if base is None:
        base = "".join(w[:1].upper() + w[1:] for w in name.split("_") if w)
    # PyTorch's overloads: the reduction over dims is sum/mean "Backward1" (over all: 0),
    # max/min the other way round; clamp with bounds is ClampBackward1
    if name in ("sum", "mean"):
        return f"{base}Backward{1 if out_ndim else 0}"
    if name in ("max", "min"):
        return f"{base}Backward{0 if out_ndim else 1}"
    return f"{base}Backward{'1' if name == 'clamp' else '0'}"


_LINK_NAMES = {"relu": "Threshold"}  # relu's backward is threshold_backward in PyTorch


class _NodeName(str):
    """A Node's op name (a str) that gives PyTorch's node name when called."""

    __slots__ = ("_node",)

    def __new__(cls, op, node):
        self = super().__new__(cls, op)
        self._node = node
        return self

    def __call__(self) -> str:
        return grad_fn_name(self._node, self._node.out_ndim)


class AccumulateGrad:
    """What ``next_functions`` gives for a leaf that requires grad (PyTorch's
    AccumulateGrad): ``variable`` is the leaf; ``name()`` is 'torch::autograd::AccumulateGrad'
    as in PyTorch."""

    __slots__ = ("variable", "__weakref__")
    next_functions = ()

    def __init__(self, variable):
        self.variable = variable

    def name(self) -> str:
        """PyTorch's name of a leaf's accumulation node."""
        return "torch::autograd::AccumulateGrad"

    @property
    def metadata(self) -> dict:
        """An empty dict (PyTorch's per-node metadata; a leaf's holds nothing)."""
        return {}

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


def _next_pair(e):
    if e is None:
        return None, 0
    if isinstance(e, Node):
        if e.slot is not None and len(e.next) == 1 and isinstance(e.next[0], Node):
            return e.next[0], e.slot
        return e, 0
    acc = _ACCUMULATE.get(id(e))  # one node per leaf, as PyTorch's (graph walks dedupe by id)
    if acc is None:
        acc = _ACCUMULATE[id(e)] = AccumulateGrad(e)
    return acc, 0


# id(leaf) -> its AccumulateGrad while that node lives (it holds the leaf: the id stays unique)
_ACCUMULATE: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def _edge(t):
    """t's Node, t itself (a leaf that requires grad) or None; what the requires_grad and
    grad_fn properties give, read from the slots (a view follows its root's rebase first)."""
    if t is None:
        return None
    base = t._base
    if base is not None and base._rebase != t._rebase_seen:
        t._regenerate_grad_fn()  # bound by _tensor_methods: ops/inplace.py
    if not t._requires_grad:
        return None
    fn = t._grad_fn
    return fn if fn is not None else t


def record(name: str, out, inputs, backward_fn, saved=(), double=None):
    """Attach a Node to ``out`` when grad mode is on and any input requires grad.

    ``inputs``: tensors (or None); ``backward_fn(grad_out) -> tuple`` with one entry per
    input, each of that input's shape; ``saved``: the tensors whose values backward reads
    (their versions are checked). ``backward_fn`` must not capture ``out`` itself (capture
    ``out.detach()``): that would be a reference cycle. ``double``: the Node's ``double``
    (see Node): True when ``backward_fn`` is built of recording ops, a callable
    ``double(g, node)`` for a differentiable alternative, None (the default) when the
    backward cannot be differentiated again (``create_graph=True`` then raises). Returns
    ``out``.
    """
    try:  # the fast exit: no input needs a gradient (what _edge tells, without properties)
        for t in inputs:
            if t is not None and (t._requires_grad or (t._base is not None and
                                                       t._base._rebase != t._rebase_seen)):
                break
        else:
            return out
    except AttributeError:  # not a Tensor: _edge decides
        pass
    if not getattr(_GRAD_STATE, "enabled", True):  # (is_grad_enabled, without its call)
        return out
    # (loops, not comprehensions or generators: each of those is a Python frame per call)
    edges, meta, live = [], [], False
    for t in inputs:
        if t is None:
            edges.append(None)
            meta.append(None)
            continue
        base = t._base  # (_edge, inline)
        if base is not None and base._rebase != t._rebase_seen:
            t._regenerate_grad_fn()  # bound by _tensor_methods: ops/inplace.py
        if t._requires_grad:
            fn = t._grad_fn
            edges.append(fn if fn is not None else t)
            live = True
        else:
            edges.append(None)
        meta.append((t._shape, t._storage.dtype, t._storage.device))
    if not live:
        return out
    versions = []
    for t in saved:  # (autograd_version, inline)
        vc = t._vc
        versions.append((t, t._storage.version - t._storage.hidden if vc is None else vc[0]))
    node = Node(name, tuple(edges), backward_fn, tuple(versions), tuple(meta))
    node.out_ndim = len(out._shape)
    node.double = double
    if saved_hooks.ACTIVE[0] and versions:  # saved_tensors_hooks (clgrad/autograd/saved_hooks)
        hooks = saved_hooks.current()
        if hooks is not None:
            node.packed = (hooks, saved_hooks.pack_all(hooks, saved))
    out._requires_grad = True
    out._grad_fn = node
    return out


def output_of(node, y):
    """The op's output for a differentiable backward (Node.double): ``y``, the output saved
    as ``out.detach()`` (a closure must not hold ``out``: a reference cycle) or as its
    ``(storage, shape, strides, offset, storage version)`` (slot reads: no call on the
    first-order path; RuntimeError here when the output was written in place since), as a
    tensor of ``node`` again, so a second derivative through it flows back into the op
    (PyTorch's SavedVariable of an output, unpacked with its grad_fn). Made per call, kept
    by nobody."""
    if type(y) is tuple:
        storage, shape, strides, offset, version = y
        t = Tensor(storage, shape, strides, offset)
        if storage.version - storage.hidden != version:
            _raise_modified(node, t, storage.version - storage.hidden, version)
    else:
        t = Tensor(y._storage, y._shape, y._strides, y._offset)
    t._requires_grad = True
    t._grad_fn = node
    return t


def recomputed(forward, inputs):
    """A Node.double that differentiates a recomputation: ``forward(*inputs)`` (the op's
    function written with ops whose backward is differentiable; None for an input without
    gradient passes as None) is run again with grad mode on and differentiated with
    ``grad(..., create_graph=True)``, so the gradients carry a graph through ``inputs`` (the
    op's own inputs). For fused kernels (conv2d, the class-index losses, the norms): their
    first-order gradients stay the kernels'; only create_graph pays the recomputation."""
    def double(g, node):
        want = [t for t in inputs if t is not None and t.requires_grad]
        out = forward(*inputs)
        got = iter(grad(out, want, g, create_graph=True, allow_unused=True))
        return tuple(next(got) if t is not None and t.requires_grad else None for t in inputs)
    return double


def _raise_modified(node, t, now, version):
    """The RuntimeError of a saved tensor written in place since it was saved."""
    raise RuntimeError(
        f"one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: a tensor of shape {tuple(t.shape)} saved by {node.name} is "
        f"at version {now}; expected version {version} instead. Hint: do not write "
        f"into it (or any view of its storage) before backward, or clone() it first")


def _collect(roots, pending=None):
    """The Nodes reachable from ``roots``, latest first (an explicit stack, no recursion);
    ``pending`` (a dict, when given) gets per leaf tensor (by id) the number of edges of
    those Nodes into it."""
    seen, stack, nodes = set(), [], []
    for r in roots:  # (a loop, not a comprehension: no Python frame)
        if type(r) is Node:
            stack.append(r)
    while stack:  # (loops, not generators: no Python frame per node)
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        nodes.append(n)
        for e in n.next:
            if type(e) is Node:
                if id(e) not in seen:
                    stack.append(e)
            elif e is not None and pending is not None:
                pending[id(e)] = pending.get(id(e), 0) + 1
    nodes.sort(key=_SEQ, reverse=True)
    return nodes


_SEQ = operator.attrgetter("seq")


def _apply(node, g, retain_graph, create_graph=False, fused=None):
    """Run one Node: [(edge, gradient)] for the inputs that need one. ``create_graph``: the
    Node's differentiable backward (Node.double), run with grad mode on by the caller;
    RuntimeError for a Node without one. ``fused``: the gradients node's backward would give,
    already computed (``_absorb``)."""
    if node.backward_fn is None:
        raise RuntimeError(
            f"Trying to backward through the graph a second time (through {node.name}), but "
            f"the saved tensors have already been freed. Specify retain_graph=True on the first "
            f"backward() or autograd.grad() call.")
    for t, version in node.saved:  # the saved tensors unchanged since (their versions)
        vc, st = t._vc, t._storage  # (autograd_version, inline: per saved tensor)
        if (st.version - st.hidden if vc is None else vc[0]) != version:
            _raise_modified(node, t, autograd_version(t), version)
    if node.packed is not None:  # unpack_hook runs, its results checked (saved_hooks.py)
        hooks, packed = node.packed
        saved_hooks.unpack_all(hooks, packed, [t for t, _ in node.saved])
    if fused is not None:
        grads = fused
    elif create_graph:
        double = node.double
        links = None
        if type(double) is tuple:  # (double, links, zeros): see Node
            double, links, zeros = double
        if double is None:
            raise RuntimeError(
                f"create_graph: the backward of {str(node.name)!r} ({node.name()}) is not "
                f"differentiable in clgrad yet, so the gradient through it would have no graph "
                f"of its own (README: 'Deliberately different from PyTorch' lists the ops "
                f"whose backward is); compute this gradient without create_graph=True")
        grads = node.backward_fn(g) if double is True else double(g, node)
        if links is not None:
            grads = _linked(node, grads if isinstance(grads, tuple) else (grads,), links, zeros)
    else:
        grads = node.backward_fn(g)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if anomaly_mode.STATE[0] and anomaly_mode.STATE[1]:  # detect_anomaly: NaN gradients
        anomaly_mode.check_nan(node, grads)
    if len(grads) != len(node.next):
        raise RuntimeError(f"{node.name} backward returned {len(grads)} gradients for "
                           f"{len(node.next)} inputs (internal error)")
    out = []
    for edge, ig, meta in zip(node.next, grads, node.input_meta):
        if edge is None or ig is None:
            continue
        shape, dtype, device = meta
        if ig._shape != shape:
            raise RuntimeError(f"{node.name} backward returned a gradient of shape "
                               f"{tuple(ig.shape)} for an input of shape {tuple(shape)} (internal "
                               f"error)")
        if ig._storage.device is not device:
            ig = _to_input_device(node, ig, device)
        out.append((edge, ig if ig._storage.dtype is dtype else ig.to(dtype)))
    if not retain_graph and node.saved:
        node.backward_fn, node.saved = None, ()  # frees the saved buffers now
        node.double = node.packed = node.fuse = None
    return out


def _to_input_device(node, ig, device):
    """A gradient ``ig`` that reached another device than its input's (``device``, recorded
    in the Node's input_meta): a 0-dim one is moved there (recorded under create_graph), as
    PyTorch's engine does (validate_outputs: a 0-dim CPU tensor joins another device's op, so
    the op's backward computes its gradient on that device); any other raises PyTorch's
    "invalid gradient" RuntimeError."""
    if ig._shape:
        raise RuntimeError(f"{node.name}: invalid gradient - expected device "
                           f"{of_runtime(device)} but got {of_runtime(ig._storage.device)}")
    return ig.to(device)


def absorbable(t) -> bool:
    """Whether an activation of ``t`` may have its backward absorbed (``_absorb``): t is the
    output of a Node whose ``fuse`` recorded it (``fuse.out``: a weak reference to its
    storage, and its version then), itself (no view) and unchanged since (no write, recorded
    or not: ``y.data.add_``,
    ``no_grad`` writes and forward hooks' edits bump the version; ``.data =`` swaps the
    storage), so the pre-activation the producer recomputes is the activation's input."""
    fn = t._grad_fn
    if fn is None or t._base is not None:
        return False
    out = getattr(fn.fuse, "out", None)
    return out is not None and out[0]() is t._storage and out[1] == t._storage.version


def _absorb(node, g, retain_graph, node_grads):
    """Run ``node`` (an activation whose ``fuse`` names it, e.g. relu's "relu") together with
    the Node of its input when that Node can apply the activation's derivative itself
    (``fuse`` a callable ``fuse(g, name)`` giving its own backward's gradients, or None where
    it cannot now: batch norm's, whose kernel recomputes the pre-activation from its input).
    One launch instead of two, the same values bit for bit (the activation's gradient is its
    output's mask, and the fused kernel's mask is the same test on the same pre-activation).

    Only where the activation's gradient is the producer's whole gradient and nobody sees it:
    the producer's output is the activation's input itself (consecutive Nodes, one edge),
    no other Node has sent it a gradient (its other consumers are later Nodes, run before,
    so they would have), and it has no hooks, no retain_grad, no saved-tensor hooks.
    Returns [(edge, gradient)] of the producer's inputs, the producer then left without
    gradient (so not run); None where it does not apply (the caller runs ``node`` itself)."""
    prod = node.next[0] if len(node.next) == 1 else None
    if (type(prod) is not Node or prod.seq != node.seq - 1 or id(prod) in node_grads or
            not callable(prod.fuse) or prod.hooks or prod.retained is not None or
            prod.packed is not None or node.packed is not None or
            prod.n_outputs is not None or node.n_outputs is not None or
            node.backward_fn is None or prod.backward_fn is None):
        return None
    for t, version in node.saved:  # _apply's check of node's (prod's: _apply's own)
        vc, st = t._vc, t._storage  # (autograd_version, inline: per saved tensor)
        if (st.version - st.hidden if vc is None else vc[0]) != version:
            _raise_modified(node, t, autograd_version(t), version)
    grads = prod.fuse(g, node.fuse)
    if grads is None:
        return None
    if not retain_graph:  # (prod's: _apply's)
        node.backward_fn, node.saved, node.double, node.packed = None, (), None, None
    return _apply(prod, g, retain_graph, False, grads)


def _linked(node, grads, links, zeros):
    """``grads`` (node's create_graph gradients) each returned as itself (an alias: same
    storage and geometry, no launch) under a *link* Node whose edges are the gradient's own
    graph and node's inputs numbered in ``links`` that require grad. PyTorch's backward of a
    piecewise-linear op (threshold_backward(grad, result, 0), max_pool2d_with_indices_backward
    (grad, self, ...), convolution_backward(grad, input, weight, ...)) takes its input or
    output, so the gradient requires grad even where its values do not depend on them, and
    differentiating it again gives zeros for them (or, ``zeros`` False, no gradient: PyTorch's
    undefined one, as convolution's and grid_sample's). The link's backward passes the
    gradient to the gradient's own graph unchanged and new zeros (or None) to those inputs.
    Called under create_graph only: a first-order backward never gets here."""
    edges, metas = [], []
    for i in links:
        e = node.next[i]
        if e is not None:
            edges.append(e)
            metas.append(node.input_meta[i])
    if not edges:
        return grads
    metas = tuple(metas)

    def backward_fn(g):
        if not zeros:
            return (g,) + (None,) * len(metas)
        return (g,) + tuple(g.new_zeros(m[0], dtype=m[1]) for m in metas)

    out = []
    for ig in grads:
        if ig is None:
            out.append(None)
            continue
        link = Node(f"{node._op}_backward", (_edge(ig), *edges), backward_fn, (),
                    ((ig._shape, ig._storage.dtype, ig._storage.device),) + metas)
        link.out_ndim = len(ig._shape)
        link.double = True  # (g passed on as is; the zeros are constants)
        t = Tensor(ig._storage, ig._shape, ig._strides, ig._offset)
        t._requires_grad = True
        t._grad_fn = link
        out.append(t)
    return tuple(out)


def _run(roots, root_grads, retain_graph, targets=None, create_graph=False):
    """Walk the tape from ``roots`` (Nodes or leaf tensors), seeded with ``root_grads``.

    Without ``targets``: gradients accumulate into the leaves' ``.grad`` (and into tensors
    that called retain_grad()); returns None. With ``targets``: returns {id(t): gradient} for
    those tensors and touches no ``.grad``. ``create_graph``: the walk runs with grad mode on
    and each Node's differentiable backward (Node.double), so the gradients carry a graph of
    their own; with ``targets``, only the Nodes on a path to a target run (PyTorch's), so a
    Node whose backward is not differentiable raises only where its gradient is needed.
    """
    node_grads, leaf_grads, leaves, owned = {}, {}, {}, {}
    # How often each storage was handed along an edge: a leaf may keep a gradient without a
    # copy only when nothing else received that storage (and the caller did not supply it).
    # Keyed by id with a weak reference to the storage: a storage freed during the walk may
    # leave its id to a new one, whose count then starts again (ids alone counted the new
    # gradient as shared, and the leaf copied it).
    deliveries = {}
    for g in root_grads:  # the caller holds it: never kept without a copy (send counts once)
        _deliver(deliveries, g._storage, 2)

    def send(edge, g, slot=None):
        st = g._storage  # (_deliver inline: one call less per edge)
        entry = deliveries.get(id(st))
        if entry is not None and entry[0]() is st:
            entry[1] += 1
        else:
            deliveries[id(st)] = [weakref.ref(st), 1]
        key = id(edge)
        if type(edge) is Node:
            if edge.n_outputs is not None:  # from output `slot`'s Node
                grads = node_grads.setdefault(key, [None] * edge.n_outputs)
                grads[slot] = g if grads[slot] is None else grads[slot] + g
                return
            store = node_grads
        else:
            store = leaf_grads
            leaves[key] = edge
        prev = store.get(key)
        if prev is None:
            store[key] = g
            owned[key] = False  # may alias a tensor someone else holds
        else:
            store[key] = prev + g
            owned[key] = True  # a fresh tensor made by the engine

    want = None if targets is None else {id(t) for t in targets}
    captured = {}
    # no_grad and autocast off for the walk, set on the thread's state directly (the two
    # context managers cost 10 Python calls a backward; grad_mode's no_grad/_autocast_off)
    prev = (getattr(_GRAD_STATE, "enabled", True), getattr(_GRAD_STATE, "autocast", None))
    _GRAD_STATE.enabled, _GRAD_STATE.autocast = bool(create_graph), None
    try:
        for r, g in zip(roots, root_grads):
            send(r, g)
        # Edges still to run into each leaf (counted while collecting): a leaf's gradient is
        # final (and its post-accumulate-grad hooks run) as soon as the last Node sending to
        # it has run.
        pending = {} if want is None else None
        nodes = _collect(roots, pending)
        lead = _leading(nodes, want) if create_graph and want is not None else None
        for node in nodes:
            g = node_grads.pop(id(node), None)
            if lead is not None and g is not None and id(node) not in lead:
                t = node.retained() if node.retained is not None else None
                if t is not None and id(t) in want:
                    captured[id(t)] = _call_hooks(node.hooks, g) if node.hooks else g
                continue  # leads to no target: not run (its backward may not be differentiable)
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
                fused = None
                if (type(node.fuse) is str and ABSORB and not create_graph and
                        not anomaly_mode.STATE[0]):  # (_absorb; anomaly: each Node checked)
                    fused = _absorb(node, g, retain_graph, node_grads)
                if fused is not None:
                    slot = node.next[0].slot
                    for edge, ig in fused:
                        send(edge, ig, slot)
                else:
                    for edge, ig in _apply(node, g, retain_graph, create_graph):
                        send(edge, ig, node.slot)
            if pending is not None:
                for e in node.next:
                    if e is None or type(e) is Node:
                        continue
                    k = id(e)
                    left = pending[k] - 1
                    pending[k] = left
                    if not left and k in leaf_grads:
                        _finish_leaf(e, leaf_grads.pop(k), owned[k], deliveries, create_graph)
        if want is not None:
            captured.update((k, _leaf_hooked(leaves[k], g)) for k, g in leaf_grads.items()
                            if k in want)
            return captured
        for k, g in leaf_grads.items():  # leaves that were roots themselves
            _finish_leaf(leaves[k], g, owned[k], deliveries, create_graph)
    finally:
        _GRAD_STATE.enabled, _GRAD_STATE.autocast = prev
    return None


def _leading(nodes, want) -> set:
    """The ids of the Nodes among ``nodes`` (latest first, as _collect gives them) whose
    backward leads to a target of ``want`` (ids of tensors): a target leaf among its edges,
    or an edge into a Node that leads to one or that is a target's grad_fn."""
    lead = set()
    for node in reversed(nodes):  # inputs' Nodes before their consumers'
        for e in node.next:
            if e is None:
                continue
            if type(e) is Node:
                if id(e) in lead:
                    break
                t = e.retained() if e.retained is not None else None
                if t is not None and id(t) in want:
                    break
            elif id(e) in want:
                break
        else:
            continue
        lead.add(id(node))
    return lead


def _deliver(deliveries: dict, storage, n: int = 1):
    """Count ``n`` more deliveries of ``storage`` (see _run; its ``send`` counts inline)."""
    entry = deliveries.get(id(storage))
    if entry is not None and entry[0]() is storage:
        entry[1] += n
    else:
        deliveries[id(storage)] = [weakref.ref(storage), n]


def _delivered(deliveries: dict, storage) -> int:
    """How often ``storage`` itself was delivered (0: never)."""
    entry = deliveries.get(id(storage))
    return entry[1] if entry is not None and entry[0]() is storage else 0


def _finish_leaf(leaf, g, owned, deliveries, create_graph=False):
    """Accumulate the final gradient ``g`` (after the leaf's register_hook hooks) into
    ``leaf.grad``, then run the leaf's post-accumulate-grad hooks. ``create_graph``: ``.grad``
    keeps g's graph (a recorded copy; a sum out of place, as PyTorch's AccumulateGrad)."""
    hooked = _leaf_hooked(leaf, g) if _LEAF_HOOKS else g
    with _ACCUMULATE_LOCK:  # add_ reads then writes .grad: concurrent backwards would lose sums
        if create_graph:
            leaf._grad = (hooked.contiguous(force_copy=True) if leaf._grad is None else
                          leaf._grad + hooked)
        elif leaf._grad is None:  # a dense tensor of its own, never an alias
            fresh = hooked is g and (owned or _delivered(deliveries, g._storage) == 1)
            g = hooked
            own = False
            if fresh and g._base is None and g._offset == 0:  # dense over all its storage
                geo = _CONTIG.get(g._shape)  # (the cached contiguous geometry: no call)
                own = (geo[2] == g._storage.size if geo is not None and geo[1] == g._strides
                       else g.is_contiguous() and g.numel() == g._storage.size)
            leaf._grad = g if own else g.contiguous(force_copy=True)
        else:
            leaf._grad.add_(hooked)
    hooks = leaf._post_acc_hooks
    if hooks:
        for hook in tuple(hooks.values()):
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


def _roots_and_grads(tensors, grad_tensors, op, create_graph=False):
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"{op}: got {len(tensors)} tensors and {len(grad_tensors)} "
                           f"gradients")
    roots, grads = [], []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected Tensors, got {type(t).__name__}")
        if t._base is None:  # (the slots: the properties re-derive a view's graph only)
            rg, fn = t._requires_grad, t._grad_fn
        else:
            rg, fn = t.requires_grad, t.grad_fn
        if not rg:
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
        if g._shape != t._shape:  # (the slots: Size tuples)
            raise RuntimeError(f"{op}: expected gradient of shape {tuple(t.shape)}, got "
                               f"{tuple(g.shape)}")
        if g._storage.device is not t._storage.device:  # PyTorch's validate_outputs
            raise RuntimeError(f"{op}: invalid gradient at index {i} - expected device "
                               f"{t.device} but got {g.device}")
        if g._storage.dtype is not t._storage.dtype:
            g = g.to(t.dtype)
        roots.append(fn if fn is not None else t)
        grads.append(g if create_graph else g.detach())  # (create_graph: g's graph is kept)
    return roots, grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Compute gradients of ``tensors`` w.r.t. the leaves and accumulate them into ``.grad``.

    ``grad_tensors``: one gradient per tensor, same shape; None is allowed only for tensors
    with one element (implicit gradient 1), on the tensor's device. Raises RuntimeError when
    a tensor does not require grad, a gradient is on another device, on a second backward
    through freed Nodes, or on a saved tensor modified in place; NotImplementedError (a
    RuntimeError) for ``inputs=`` (use autograd.grad).

    ``create_graph=True`` (PyTorch's): the backward itself is recorded, so each ``.grad`` it
    accumulates carries a graph (a ``grad_fn``) to differentiate again; ``retain_graph``
    defaults to ``create_graph``. Raises RuntimeError naming the op when the backward of a
    Node on the way is not differentiable in clgrad (README lists the ones that are).
    """
    if retain_graph is None:
        retain_graph = create_graph
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
    roots, grads = _roots_and_grads(tensors, tuple(grad_tensors), "backward", create_graph)
    _run(roots, grads, bool(retain_graph), create_graph=bool(create_graph))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` w.r.t. ``inputs``, returned (not accumulated into ``.grad``).

    ``inputs`` may be leaves or intermediate tensors. Raises RuntimeError for an input that
    does not require grad, or that the walk does not reach (unless ``allow_unused``: None;
    ``materialize_grads``: zeros, and allow_unused defaults to it, as PyTorch's).
    ``only_inputs`` is PyTorch's deprecated, ignored argument (False warns, as there);
    ``is_grads_batched=True`` raises NotImplementedError (it needs vmap).

    ``create_graph=True`` (PyTorch's): the gradients are computed by recorded ops, so they
    carry a graph to differentiate again (``grad_outputs`` that require grad stay in it:
    the double-vjp trick); ``retain_graph`` defaults to ``create_graph``. Only the Nodes on
    a path to ``inputs`` run; one whose backward is not differentiable in clgrad raises
    RuntimeError naming its op, never a gradient silently without its graph.
    """
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to "
                      "True). To accumulate gradient for other parts of the graph, please use "
                      "torch.autograd.backward.", FutureWarning, stacklevel=2)
    if is_grads_batched:
        raise NotImplementedError("grad: is_grads_batched=True is not supported (clgrad has no "
                                  "vmap); call grad once per row of grad_outputs")
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when "
                         "materialize_grads=True, but got: allow_unused=False.")
    if retain_graph is None:
        retain_graph = create_graph
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
    roots, grads = _roots_and_grads(outputs, tuple(grad_outputs), "grad", create_graph)
    handles = []
    for t in inputs:  # intermediate tensors: their gradient is captured at their Node
        fn = t.grad_fn
        if fn is not None and fn.retained is None:
            fn.retained = weakref.ref(t)
            handles.append(fn)
    try:
        got = _run(roots, grads, retain_graph, targets=inputs,
                   create_graph=bool(create_graph))
    finally:
        for fn in handles:
            fn.retained = None
    result = []
    for t in inputs:
        g = got.get(id(t))
        if g is None and materialize_grads:
            g = t.new_zeros(t.shape)
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
    """What register_hook, register_post_accumulate_grad_hook and the module hooks return:
    ``remove()`` unregisters the hook (idempotent; also on ``with`` exit). ``id`` is its key;
    ``extra`` are dicts keyed the same way (a module hook's with_kwargs/always_call marks:
    PyTorch's extra_dict) that remove() clears too."""

    def __init__(self, hooks: dict, key, extra: tuple = ()):
        self._hooks, self.id, self._extra = hooks, key, extra

    def remove(self):
        """Unregister the hook; calling it again (or after the tensor died) does nothing."""
        for d in (self._hooks, *self._extra):
            d.pop(self.id, None)

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
    if r._storage.device is not g._storage.device:
        raise RuntimeError(f"hook '{name}' has changed the type of value (was a tensor on "
                           f"{str(g.device)!r} got a tensor on {str(r.device)!r})")
    if tuple(r.shape) != tuple(g.shape):
        raise RuntimeError(f"hook '{name}' has changed the size of value (was "
                           f"{tuple(g.shape)} got {tuple(r.shape)})")


def _leaf_hooked(leaf, g):
    entry = _LEAF_HOOKS.get(id(leaf))
    if entry is None or entry[0]() is not leaf or not entry[1]:
        return g
    return _call_hooks(entry[1], g)

