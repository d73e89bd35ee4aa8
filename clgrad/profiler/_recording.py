"""Recording: the wrappers put into the faces while a profile is entered, the session
they record into, and the names they record (``aten::<op>``)."""
from __future__ import annotations

import functools
import sys
import threading
import time

from clgrad import runtime
from clgrad.autograd import graph as _graph
from clgrad.nn import functional as _F
from clgrad.ops import registry as _registry
from clgrad.tensor import Tensor
from clgrad.profiler._events import FunctionEvent

_RECORDING = None  # the _Session recording now (read by every wrapper), or None
_PATCHED = None    # the profile whose wrappers are in the faces now, or None
_LOCK = threading.Lock()


def _shape_of(v):
    if isinstance(v, Tensor):
        return list(v._shape)
    if isinstance(v, (list, tuple)) and v and all(isinstance(t, Tensor) for t in v):
        return [list(t._shape) for t in v]
    return []


def _tensor_devices(values, into: set, depth: int = 3):
    """``into`` plus the devices of the tensors in ``values`` (lists and tuples searched
    ``depth`` levels deep: an op's tuple result, the engine's (edge, gradient) pairs)."""
    for v in values:
        if isinstance(v, Tensor):
            into.add(v._storage.device)
        elif depth > 1 and isinstance(v, (list, tuple)):
            _tensor_devices(v, into, depth - 1)
    return into


class _Session:
    """The events of one trace (start_trace .. stop_trace) and each thread's open events."""

    def __init__(self, record_shapes, sync):
        self.record_shapes, self.sync = record_shapes, sync
        self.events, self.stacks = [], {}
        self.start_ns = time.perf_counter_ns()
        self._ids = iter(range(sys.maxsize))

    def push(self, name, args, kwargs, kind="cpu_op"):
        tid = threading.get_ident()
        stack = self.stacks.get(tid)
        if stack is None:
            stack = self.stacks.setdefault(tid, [])
        shapes = []
        if self.record_shapes and kind == "cpu_op":
            shapes = [_shape_of(a) for a in args] + [_shape_of(v) for v in kwargs.values()]
        devices = None
        if self.sync and kind == "cpu_op":
            devices = _tensor_devices(kwargs.values(), _tensor_devices(args, set()))
            for d in devices or (runtime.default_device(),):
                d.synchronize()
        ev = FunctionEvent(next(self._ids), name, tid, time.perf_counter_ns(), shapes,
                           stack[-1] if stack else None, kind)
        ev._devices = devices
        stack.append(ev)
        return ev

    def pop(self, ev, result=None):
        end = time.perf_counter_ns()
        sync_end = end
        if ev._devices is not None:
            devices = _tensor_devices((result,), ev._devices)
            for d in devices or (runtime.default_device(),):
                d.synchronize()
            sync_end = time.perf_counter_ns()
        stack = self.stacks.get(ev.thread)
        if stack and stack[-1] is ev:
            stack.pop()
        elif stack and ev in stack:  # a block left out of order (an exception in between)
            stack.remove(ev)
        ev.end_ns, ev.sync_end_ns = end, sync_end
        parent = ev.cpu_parent
        if parent is not None:
            parent._child_ns += sync_end - ev.start_ns
            parent._child_dev_ns += sync_end - ev.start_ns
            parent.cpu_children.append(ev)
        self.events.append(ev)


def _op_wrapper(fn, name):
    """``fn`` recording an event named ``name`` while a profile records; otherwise one global
    read more than ``fn`` (only while a profile is entered: outside, the faces hold ``fn``).
    A function with an ``inplace`` parameter records ``name_`` when it is true
    (``F.relu(x, inplace=True)``: ``aten::relu_``, as PyTorch's)."""
    at = _inplace_position(fn)
    inplace_name = name + "_"

    @functools.wraps(fn)
    def recorded(*args, **kwargs):
        s = _RECORDING
        if s is None:
            return fn(*args, **kwargs)
        n = name
        if at is not None and (args[at] if len(args) > at else kwargs.get("inplace")):
            n = inplace_name
        ev = s.push(n, args, kwargs)
        result = None
        try:
            result = fn(*args, **kwargs)
            return result
        finally:
            s.pop(ev, result)
    return recorded


_INPLACE_AT = {}  # id(function) -> (function, position of its inplace parameter or None)


def _inplace_position(fn):
    got = _INPLACE_AT.get(id(fn))
    if got is None or got[0] is not fn:
        import inspect
        try:
            params = list(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            params = []
        got = _INPLACE_AT[id(fn)] = (fn, params.index("inplace") if "inplace" in params
                                     else None)
    return got[1]


def _apply_wrapper(apply):
    """The engine's per-Node step recording ``autograd::engine::evaluate_function: <grad_fn
    name>`` (PyTorch's event name) around each Node's backward."""
    @functools.wraps(apply)
    def recorded(node, g, *rest):
        s = _RECORDING
        if s is None:
            return apply(node, g, *rest)
        ev = s.push("autograd::engine::evaluate_function: "
                    + _graph.grad_fn_name(node, len(g._shape) if isinstance(g, Tensor) else 0),
                    (), {}, "cpu_op")
        result = None
        try:
            result = apply(node, g, *rest)
            return result
        finally:
            s.pop(ev, result)
    return recorded


# PyTorch's ATen op of a public name where the two differ (checked with PyTorch 2.14's
# profiler in tests/test_profiler.py); every other name is aten::<name>
_ATEN = {"cross_entropy": "cross_entropy_loss", "nll_loss": "nll_loss_nd"}
# the operators PyTorch records under their dunder name (x & y: aten::__and__)
_DUNDER_ATEN = ("and", "or", "xor", "lshift", "rshift")


def _aten(name: str) -> str:
    return "aten::" + _ATEN.get(name, name)


def _tensor_names() -> dict:
    """{Tensor attribute: event name}: the table's methods, in-place variants, operators."""
    names = {n: _aten(n) for n in _registry.methods()}
    names.update((n, _aten(n)) for n, _, _ in _registry.inplace_variants())
    for row in _registry.OPS:
        o = row.operator
        if not o:
            continue
        bit = o in _DUNDER_ATEN
        names[f"__{o}__"] = f"aten::__{o}__" if bit else _aten(row.name)
        if row.reflected:  # 2 - x: aten::rsub, as PyTorch's; 2 & x: aten::bitwise_and
            names[f"__r{o}__"] = _aten("rsub" if o == "sub" else row.name)
        if row.augmented:
            names[f"__i{o}__"] = f"aten::__i{o}__" if bit else _aten(row.name + "_")
    return names


def _targets() -> list:
    """[(owner, attribute, event name)] of every face attribute a profile wraps: clgrad's and
    nn.functional's ops (the table's names), Tensor's methods and operators, and each table
    function in the module defining it (``clgrad.ops.norm.batch_norm``, which nn.BatchNorm2d
    calls; internal calls through the module then show as nested events)."""
    clgrad = sys.modules["clgrad"]
    out = []
    for module, face in ((clgrad, _registry.TORCH), (_F, _registry.FUNCTIONAL)):
        ns = vars(module)
        out += [(module, n, _aten(n)) for n in _registry.names(face) if callable(ns.get(n))]
    for n, event in _tensor_names().items():
        fn = Tensor.__dict__.get(n)
        if callable(fn) and not isinstance(fn, (type, staticmethod, classmethod, property)):
            out.append((Tensor, n, event))
    seen = set()
    for row in _registry.OPS:
        fn = row.fn
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        key = (getattr(fn, "__module__", None), getattr(fn, "__name__", None))
        if module is not None and key not in seen and vars(module).get(key[1]) is fn:
            seen.add(key)
            out.append((module, key[1], _aten(row.name)))
    return out


def _module_classes():
    """Every nn.Module subclass defined so far (their class attributes may hold an
    nn.functional function: ``ReLU6._fn = F.relu6``)."""
    from clgrad.nn.module import Module
    todo, out = [Module], []
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return out


def _patch():
    saved, wrapped = [], {}
    done = set()
    for owner, n, event in _targets():
        if (id(owner), n) in done:
            continue
        done.add((id(owner), n))
        fn = vars(owner)[n]
        saved.append((owner, n, fn))
        w = _op_wrapper(fn, event)
        wrapped.setdefault(id(fn), (fn, w))
        setattr(owner, n, w)
    for cls in _module_classes():  # class attributes holding a wrapped function
        for n, v in list(vars(cls).items()):
            got = wrapped.get(id(v)) if callable(v) and not isinstance(v, type) else None
            if got is not None and got[0] is v:
                saved.append((cls, n, v))
                setattr(cls, n, got[1])
    apply = getattr(_graph, "_apply", None)
    if apply is not None:
        saved.append((_graph, "_apply", apply))
        _graph._apply = _apply_wrapper(apply)
        # each Node's backward its own event: no relu backward run inside batch norm's
        saved.append((_graph, "ABSORB", _graph.ABSORB))
        _graph.ABSORB = False
    return saved


def _unpatch(saved):
    for owner, n, fn in reversed(saved):
        setattr(owner, n, fn)
