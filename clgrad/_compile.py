"""``torch.compile(mode="reduce-overhead")`` and ``torch.cuda.make_graphed_callables``: calls
replayed from captures (clgrad/capture/ records them; here each call is captured as it runs,
``CUDAGraph._run``), keyed by a signature of the arguments and guarded by the Python state the
function can read: a replay happens only while every guard holds, else the call captures again
(see ``compile``). Above the ops (it holds Tensors and runs under no_grad); clgrad/capture, below
them, records launches and allocations only.
"""
from __future__ import annotations

import functools
import itertools
import operator
import random
import sys
import types
import warnings

import numpy as np

from clgrad import capture, dtypes as _dtypes
from clgrad.autograd import is_grad_enabled, no_grad
from clgrad.autograd.grad_mode import autocast_state
from clgrad.capture import _ACTIVE, CUDAGraph, is_capturing
from clgrad.ops.views import as_strided
from clgrad.runtime import discovery as _discovery
from clgrad.tensor import Tensor

__all__ = ["compile", "make_graphed_callables"]


# -- torch.compile(mode="reduce-overhead") ---------------------------------------------------------


def compile(model=None, *, fullgraph: bool = False, dynamic=None, backend="inductor",  # noqa: A001
            mode=None, options=None, disable: bool = False):
    """``torch.compile``. ``mode="reduce-overhead"`` returns a callable that replays captured
    kernels (see the module docstring); any other mode (None, "default", "max-autotune" ...)
    returns ``model`` unchanged (clgrad has no graph compiler: it runs eagerly). Usable as
    ``compile(fn, ...)`` or as a decorator ``@compile(mode=...)``.

    The replaying callable keys its captures on a signature: grad mode, the autocast state
    (``torch.autocast``'s device types and dtypes), the default device, the default dtype
    (``set_default_dtype``: what a factory without a dtype makes, what ints promote to),
    the keyword names, and the arguments, walked through lists, tuples (named too) and dicts:
    per tensor its shape, dtype, device, requires_grad, strides and whether its storage offset
    is 0, per other value its type and value (``f(x, 2)``, ``f(x, 2.0)`` and ``f(x, True)``
    are three signatures; a float by its bits: ``-0.0`` is not ``0.0``, any NaN is NaN; a
    strided argument other than a dense one with permuted dimensions runs eagerly; an object
    hashed by identity by its id, holding no reference to it), and which tensor
    arguments share memory (the same tensor twice shares one captured input; distinct tensors
    sharing a storage run eagerly, and so does a call whose tensor argument shares memory with
    a parameter, buffer or tensor the guards reach: a replay would copy it apart). Per
    signature the first call runs ``fn`` eagerly (a warm-up: optimizer state, built
    kernels); the second runs it eagerly while recording its kernels (a capture); later calls
    copy the tensor arguments into the captured inputs and replay. ``fn``'s Python body runs
    exactly once per call that is not a replay, and a replay runs none of it.

    At most ``capture.SIGNATURE_LIMIT`` (8, torch._dynamo's cache_size_limit) signatures are
    kept per callable: past it (one warning) a new signature replaces the oldest one that has
    no capture, else it runs eagerly (an argument that changes every call, a float timestep or
    a new object, so runs eagerly with bounded memory).

    Guards. A capture also records the Python state ``fn`` can read, and a replay happens only
    when all of it is as it was before the capture; otherwise the call captures again
    (PyTorch's recompile), up to ``capture.RECOMPILE_LIMIT`` (8) captures per signature, each kept
    with its guards (so ``model.train()``/``model.eval()`` switch between two captures); past
    the limit the call runs eagerly, with one warning (PyTorch's recompile-limit warning).
    Guarded, found by walking ``fn`` (the globals and closure cells its code reads — only the
    closure cells for clgrad's own functions — recursively into the functions, bound methods,
    ``functools.partial`` objects, compiled callables, containers and objects they hold, the
    methods of user classes) and the non-tensor arguments:
      - each global and closure variable read: numbers, bools, strings, bytes, None and
        tuples of them by type and value, anything else by identity; the plain attributes a
        function reads from a Python module held in a global (``config.scale``), and of a
        user's module every attribute it reads, the objects walked (``cfgmod.params["s"]``);
        each user function's ``__defaults__`` and ``__kwdefaults__``;
      - every ``nn.Module`` reached, and its submodules: ``training``, every plain attribute
        (``p``, ``momentum``, ``eps``, ``scale`` ...) by type and value, every other public
        attribute (``self.act = torch.relu``), parameter, buffer and submodule by identity,
        each parameter's ``requires_grad``, the keys of its forward/backward hook dicts, and
        the hooks themselves, walked as functions (also the global module hooks);
      - every optimizer reached: the ``param_groups`` list, each group and its parameters
        (identity), every hyperparameter but ``lr`` by type and value (``lr`` is read again
        at every replay, so LR schedulers work), the ``state`` dict and each parameter's
        state dict (identity), its plain attributes;
      - parameters (of modules and optimizers), buffers and tensors reached: their storage
        (``p.data = ...`` and ``Module.to`` swap it in place); ``requires_grad``; their
        ``.grad``: the very tensor where the capture accumulated into it, else whether it
        was None;
      - lists, dicts and sets reached: their items (plain values by type and value, others
        by identity); other objects reached (a config object): their attributes (or
        ``__slots__``) as a module's; user classes: their plain class attributes, the
        identity of their methods and other attributes (``N.forward = ...``), whose objects
        are walked (``cfg = [2.0]``).
      - NumPy arrays reached, up to 1 MiB: their shape, dtype and values (a host array an op
        reads is copied to the device, and a capture keeps that copy).
    Python state the guards do not see (an attribute read through ``getattr`` with a computed
    name, an object more than six references away from ``fn``, a library object other than
    a module, optimizer or LR scheduler, the values of a larger NumPy array, which is
    guarded by identity only) is baked into a capture. Host values that change per call are
    refused before the capture where the walk sees them: a function reached reads Python's
    ``random`` module, ``numpy.random`` (``np.random.rand``) or a generator or function of
    theirs, or calls ``next()`` while an iterator is reached (``itertools.count()``); one
    computed by other Python code (``time.time()``) is baked in.
    Cost per replayed call: one getter per module tree, function and optimizer (C-level maps
    over their dicts): about 1 µs per module, measured on a busy 2-core CPU.

    Refused (the call ran eagerly; this signature then always runs eagerly, with one
    warning naming the reason): a host read (``.item()``, ``print``, a data-dependent
    ``if``), host-side random draws (clgrad's, also from a ``generator=``), a second
    device — the call carries on eagerly from there, so ``fn`` still runs once; host values
    that change per call (see Guards); a change ``fn`` makes to guarded Python state or to an
    LR scheduler it reaches (``scheduler.step()``, ``list.append``, ``self.count += 1``, a
    changed ``lr``, an optimizer's new state), named in the warning, on two capture calls in
    a row (a replay would not make it again; the first such call counts as a warm-up, since
    the first step after a change may set things up once: the state of a new parameter
    group); an output that has a backward graph (the replayed kernels cannot feed autograd);
    a gradient accumulated into a tensor argument (a replay would write into the first
    call's argument).

    Results. Each call returns fresh output tensors (a copy of the captured outputs, one copy
    launch each: an earlier call's results are never overwritten), detached; an output that
    is a tensor argument is that argument, one that views an argument is a copy, and one
    made outside the capture (a parameter) is that tensor. Aliasing between outputs is kept:
    one returned twice is one tensor, and outputs sharing memory (``y, y.view(2, 1)``) are
    views of one copy of their storage. In-place changes ``fn`` makes to
    a tensor argument reach the caller's tensor (also when ``fn`` raises during a capture);
    a ``.grad`` the capture set is set again to the same tensor, which the replay refilled.
    Tensors ``fn`` reaches other than through its arguments (parameters, buffers, optimizer
    state) are used in place, as in CUDA graphs. A compiled callable called while another
    capture runs (a compiled model inside a compiled step) runs its function as part of that
    capture.
    Raises:  whatever ``fn`` raises; nothing of its own (a refusal runs eagerly).
    """
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if disable or mode != "reduce-overhead":
        return model
    return _Replayed(model)


class _Replayed:
    """The callable ``compile(fn, mode="reduce-overhead")`` returns (see ``compile``)."""

    def __init__(self, fn):
        self._fn = fn
        self._entries: dict = {}  # signature -> [_Entry] (most recently used first) | why eager
        self._warned = False
        self._limit_warned = self._size_warned = False
        self._strict = False      # make_graphed_callables: a refusal raises
        self._retried: set = set()  # signatures whose last capture changed Python state
        self._stats = {"eager": 0, "captures": 0, "replays": 0}
        functools.update_wrapper(self, fn, updated=())

    def _key(self, args, kwargs) -> tuple:
        """(signature, the tensor arguments in walk order). The signature has grad mode, the
        autocast state, the default device and dtype, the arguments' signatures and, when tensor
        arguments share memory, which do (the same tensor twice, or views of one storage)."""
        tensors: list = []
        sig = _sig((args, kwargs), tensors, Tensor)
        alias = None
        if len(tensors) > 1:
            st = [id(a._storage) for a in tensors]
            if len(set(st)) != len(st):
                ids = list(map(id, tensors))
                alias = tuple((st.index(x), ids.index(i)) for x, i in zip(st, ids))
        return (is_grad_enabled(), autocast_state(), id(_discovery._DEFAULT[0]),
                _dtypes._DEFAULT[0], alias, sig), tensors

    def __call__(self, *args, **kwargs):
        if is_capturing():  # inside another capture (a compiled model in a compiled step)
            return self._fn(*args, **kwargs)
        try:
            key, tensors = self._key(args, kwargs)
            e = self._entries.get(key)
        except TypeError:  # an unhashable argument: no signature to replay by
            return self._eager("an argument is not hashable", args, kwargs)
        if e is None:  # the warm-up
            if len(self._entries) >= capture.SIGNATURE_LIMIT and not self._evict():
                self._stats["eager"] += 1
                return self._fn(*args, **kwargs)
            self._entries[key] = []
            self._stats["eager"] += 1
            return self._fn(*args, **kwargs)
        if type(e) is str:
            return self._eager(e, args, kwargs)
        for i, ent in enumerate(e):
            if ent.guards.hold():
                if i:
                    e.insert(0, e.pop(i))
                if ent.guards.storages and _shares(tensors, ent.guards.storages):
                    return self._eager(_SHARED, args, kwargs)
                self._stats["replays"] += 1
                return ent.run(tensors)
        if len(e) >= capture.RECOMPILE_LIMIT:
            if not self._limit_warned:
                self._limit_warned = True
                why = e[0].guards.failed()
                warnings.warn(f"compile(mode='reduce-overhead'): {self._name()} hit the "
                              f"recompile limit ({capture.RECOMPILE_LIMIT}, torch._dynamo's "
                              f"config.recompile_limit): the guards of all its captures of "
                              f"this signature failed (last: {why}); it runs eagerly until "
                              f"one holds again", stacklevel=2)
            self._stats["eager"] += 1
            return self._fn(*args, **kwargs)
        return self._capture(key, e, args, kwargs, tensors)

    def _evict(self) -> bool:
        """At the signature limit: warn once, drop the oldest signature that has no capture
        (one warmed up only, or refused); False when every one has captures (the new
        signature then runs eagerly)."""
        if not self._size_warned:
            self._size_warned = True
            warnings.warn(f"compile(mode='reduce-overhead'): {self._name()} hit the signature "
                          f"limit ({capture.SIGNATURE_LIMIT}, torch._dynamo's "
                          f"config.cache_size_limit): an argument changes every call (a float "
                          f"timestep, a new object)? New signatures replace ones never "
                          f"captured, else run eagerly", stacklevel=3)
        for k, e in self._entries.items():
            if not e or type(e) is str:
                del self._entries[k]
                self._retried.discard(k)
                return True
        return False

    def _capture(self, key, entries, args, kwargs, tensors):
        if _ACTIVE[0] is not None:  # another thread is capturing: this call runs eagerly
            self._stats["eager"] += 1
            return self._fn(*args, **kwargs)
        guards = _Guards(self._fn, (args, kwargs))
        if guards.host_random is not None:
            self._entries[key] = guards.host_random
            return self._eager(guards.host_random, args, kwargs)
        if _shares(tensors, guards.storages):
            if not self._entries.get(key):  # no capture to keep: refused for this signature
                self._entries[key] = _SHARED  # (else every call would walk the guards again)
            return self._eager(_SHARED, args, kwargs)
        pre = guards.snapshot()
        pre_grads = [p._grad for p in guards.params]
        statics, made = [], {}
        for a in tensors:  # the same tensor twice: one static input
            s = made.get(id(a))
            if s is None:
                if a.requires_grad and is_grad_enabled():
                    s = _like(a)  # linked to ``a``: a refused call's autograd reaches it
                else:
                    with no_grad():
                        s = _like(a.detach()).requires_grad_(a.requires_grad)
                made[id(a)] = s
            statics.append(s)
        if any(s._strides != a._strides and not _same_layout(s, a)
               for s, a in zip(statics, tensors)):
            why = ("a tensor argument's strides are not those of a dense tensor with permuted "
                   "dimensions (a slice): a captured input cannot have them")
            self._entries[key] = why
            return self._eager(why, args, kwargs)
        if len(made) != len({id(a._storage) for a in tensors}):
            why = ("tensor arguments share memory (views of one tensor): a replay would copy "
                   "them into separate inputs")
            self._entries[key] = why
            return self._eager(why, args, kwargs)
        versions = [s._storage.version for s in statics]
        arg_grads = [(a._grad, a._grad._storage.version) if a._grad is not None else None
                     for a in tensors]
        sargs, skw = _rebuild((args, kwargs), iter(statics), Tensor)
        self._stats["captures"] += 1
        g = CUDAGraph()
        g._run = True
        g.capture_begin()
        try:
            out = self._fn(*sargs, **skw)
        except BaseException:
            if _ACTIVE[0] is g:
                g._stop()
            g._abort()
            _write_back(statics, tensors, versions)
            raise
        if _ACTIVE[0] is g:
            g._stop()
        back = _write_back(statics, tensors, versions)
        why = g._refused
        if why is None:
            why = guards.changed(pre)
            if why is not None and key not in self._retried:
                # the first call after a change of state may set things up once (an
                # optimizer's state of a new parameter): this call counts as a warm-up
                self._retried.add(key)
                g._abort()
                return _map(out, lambda t: _arg_of(t, statics, tensors))
        if why is None and any(
                a._grad is not None and (ag is None or a._grad is not ag[0] or
                                         a._grad._storage.version != ag[1])
                for a, ag in zip(tensors, arg_grads)):
            why = ("it accumulates a gradient into a tensor argument (a replay would write "
                   "into the first call's tensor)")
        if why is None and any(isinstance(t, Tensor) and t.grad_fn is not None and
                               t.grad_fn.backward_fn is not None for t in _leaves(out)):
            why = "an output has a backward graph (replayed kernels cannot feed autograd)"
        if why is not None:
            g._abort()
            self._entries[key] = why
            self._refused(why)
            return _map(out, lambda t: _arg_of(t, statics, tensors))
        self._retried.discard(key)
        g._plan()
        g._captured = True
        guards.expect(pre)
        guards.expect_grads(pre_grads)
        ent = _Entry(guards, g, statics, back, out, tensors,
                     [(p, p._grad) for p, p0 in zip(guards.params, pre_grads)
                      if p._grad is not p0])
        entries.insert(0, ent)
        return ent.outputs(tensors)

    def __getattr__(self, name):  # a compiled Module keeps its attributes (parameters ...)
        if name.startswith("__") or name in ("_fn", "_entries", "_warned", "_limit_warned",
                                             "_size_warned",
                                             "_strict", "_stats", "_retried"):
            raise AttributeError(name)
        return getattr(self._fn, name)

    def _name(self) -> str:
        return getattr(self._fn, "__name__", type(self._fn).__name__)

    def _refused(self, why):
        if self._strict:
            raise NotImplementedError(f"make_graphed_callables: cannot graph this callable: "
                                      f"{why}")
        self._stats["eager"] += 1
        self._warn(why, 5)

    def _warn(self, why, stacklevel=4):
        if not self._warned:
            self._warned = True
            warnings.warn(f"compile(mode='reduce-overhead'): running {self._name()} eagerly: "
                          f"{why}", stacklevel=stacklevel)

    def _eager(self, why, args, kwargs):
        if self._strict:
            raise NotImplementedError(f"make_graphed_callables: cannot graph this callable: "
                                      f"{why}")
        self._warn(why)
        self._stats["eager"] += 1
        return self._fn(*args, **kwargs)


class _Out:
    """How a call gets one output of a capture: "clone" (a fresh copy of the captured
    output), "arg" (the caller's tensor argument ``v``), "same" (``v`` itself)."""
    __slots__ = ("kind", "v")

    def __init__(self, kind, v):
        self.kind, self.v = kind, v


class _Entry:
    """One capture of a signature: its guards, graph, static inputs, the indices of the
    arguments it changes in place (``back``), its outputs and the ``.grad`` attributes it
    set."""

    def __init__(self, guards, g, statics, back, out, tensors, grads):
        self.guards, self.graph, self.statics, self.back, self.grads = (
            guards, g, statics, back, grads)
        index = {id(s): i for i, s in enumerate(statics)}
        inputs = {id(s._storage) for s in statics}
        memo: dict = {}  # id(tensor) -> its _Out: an output returned twice is one object

        def plan(t):
            if not isinstance(t, Tensor):
                return _Out("same", t)
            o = memo.get(id(t))
            if o is not None:
                return o
            if id(t) in index:
                o = _Out("arg", index[id(t)])
            elif (getattr(t._storage.buffer, "int_ptr", None) in g._own
                    or id(t._storage) in inputs):
                o = _Out("clone", t.detach())  # made by the graph, or a view of an input
            else:
                o = _Out("same", t)
            memo[id(t)] = o
            return o
        self.outs = _map(out, plan)
        # outputs sharing a storage (``y, y.view(2, 1)``): views of one copy of the storage
        by_storage: dict = {}
        for o in memo.values():
            if o.kind == "clone":
                by_storage.setdefault(id(o.v._storage), []).append(o)
        self.flats = []
        for group in by_storage.values():
            if len(group) > 1:
                t = group[0].v
                self.flats.append(as_strided(t, (t._storage.size,), (1,), 0))
                for o in group:
                    o.kind, o.v = "view", (len(self.flats) - 1, o.v)
        self.memo = len(memo) < sum(1 for t in _leaves(out) if isinstance(t, Tensor))

    def outputs(self, tensors):
        """This call's outputs: fresh copies of the captured ones, with their aliasing."""
        flats = [f.clone() for f in self.flats]

        def make(o):
            if o.kind == "clone":
                return o.v.clone()
            if o.kind == "view":
                t = o.v[1]
                return as_strided(flats[o.v[0]], t._shape, t._strides, t._offset)
            return tensors[o.v] if o.kind == "arg" else o.v
        get = make
        if self.memo or flats:
            memo: dict = {}

            def get(o):
                r = memo.get(id(o))
                if r is None:
                    r = memo[id(o)] = make(o)
                return r
        with no_grad():
            return _map(self.outs, get)

    def run(self, tensors):
        """Copy ``tensors`` (the call's tensor arguments) into the static inputs, replay the
        graph, and copy the inputs the capture wrote in place back to the caller's tensors."""
        with no_grad():
            for s, a in zip(self.statics, tensors):
                s.copy_(a)
            self.graph.replay()
            for i in self.back:
                tensors[i].copy_(self.statics[i])
        for p, gr in self.grads:
            p._grad = gr
        return self.outputs(tensors)


_SHARED = ("a tensor argument shares memory with a tensor the function reaches otherwise (a "
           "parameter, buffer, global or closure tensor): a replay would copy it into a "
           "separate input")


def _shares(tensors, storages) -> bool:
    """Whether a tensor argument's storage is one of ``storages`` (of the tensors reached)."""
    for a in tensors:
        if id(a._storage) in storages:
            return True
    return False


def _same_layout(s, a) -> bool:
    """Whether ``s`` and ``a`` (one shape) have the same strides but for dims of size 1."""
    return all(x == y for x, y, n in zip(s._strides, a._strides, a._shape) if n != 1)


def _like(a):
    """A copy of ``a`` (autograd-linked) with its strides where ``a`` is dense with permuted
    dimensions (``x.t()``), else a contiguous copy."""
    if a.is_contiguous():
        return a.clone()
    order = sorted(range(a.ndim), key=lambda d: -a._strides[d])
    return a.permute(order).clone().permute([order.index(d) for d in range(a.ndim)])


def _write_back(statics, tensors, versions) -> list:
    """Copy the static inputs a capture call changed in place into the caller's tensors;
    returns their indices."""
    back = [i for i, (s, v) in enumerate(zip(statics, versions)) if s._storage.version != v]
    if back:
        with no_grad():
            for i in back:
                tensors[i].copy_(statics[i])
    return back


def _arg_of(t, statics, tensors):
    for s, a in zip(statics, tensors):
        if t is s:
            return a
    return t


def _sig(a, tensors, Tensor):
    """The signature of an argument (see ``compile``); appends its tensors to ``tensors``."""
    if isinstance(a, Tensor):
        tensors.append(a)
        return ("T", a._shape, a.dtype, id(a._storage.device), a._requires_grad, a._strides,
                not a._offset)
    t = type(a)
    if t is float:  # -0.0 is not 0.0 (1 / x differs), a NaN is any NaN
        return ("F", a.hex())
    if t is tuple or t is list or (isinstance(a, tuple) and hasattr(a, "_fields")):
        return (t, tuple([_sig(x, tensors, Tensor) for x in a]))
    if t is dict:
        return (t, tuple([(k, _sig(v, tensors, Tensor)) for k, v in a.items()]))
    if t.__hash__ is object.__hash__ and t is not type:  # hashed by identity: by id, no
        return ("O", t, id(a))  # strong reference (a capture's guards keep it: no id reuse)
    return ("V", t, a)


def _rebuild(a, statics, Tensor):
    """``a`` with its tensors replaced by the next ones of the iterator ``statics``."""
    if isinstance(a, Tensor):
        return next(statics)
    t = type(a)
    if t is tuple or t is list:
        return t([_rebuild(x, statics, Tensor) for x in a])
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return t(*[_rebuild(x, statics, Tensor) for x in a])
    if t is dict:
        return {k: _rebuild(v, statics, Tensor) for k, v in a.items()}
    return a


def _leaves(x):
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from _leaves(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _leaves(y)
    else:
        yield x


def _map(x, f):
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_map(y, f) for y in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_map(y, f) for y in x)
    if isinstance(x, dict):
        return {k: _map(v, f) for k, v in x.items()}
    return f(x)


# -- guards -------------------------------------------------------------------------------------
_PLAIN = frozenset((int, float, bool, str, bytes, complex, type(None)))
_LIBS = frozenset(("clgrad", "numpy", "pyopencl", "torch", "builtins", "functools", "math",
                   "operator", "typing", "collections", "abc"))
_MISSING = ("<missing>",)
_DEPTH = 6
GUARD = 0      # a guard, and a change the body makes is refused
GUARD_ONLY = 1  # a guard only (whether a parameter's .grad is None)
EFFECT = 2     # not a guard, but a change the body makes is refused (lr, schedulers)


def _plain(v) -> bool:
    t = type(v)
    return t in _PLAIN or (t is tuple and all(type(x) in _PLAIN for x in v))


def _rep(v):
    """A guard's view of a value: type and value for plain values, else its identity."""
    t = type(v)
    if t is float:
        return t, v.hex()  # -0.0 is not 0.0, a NaN is any NaN
    if t in _PLAIN:
        return t, v
    if t is tuple and all(type(x) in _PLAIN for x in v):
        return t, v, tuple(map(type, v))
    return None, id(v)


_ARRAY_BYTES = 1 << 20  # NumPy arrays up to this size are guarded by value


def _array_rep(a):
    return a.shape, a.dtype.str, a.tobytes()


def _from_lib(obj) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return mod.split(".")[0] in _LIBS


_HOST_RNGS = (random.Random, np.random.Generator, np.random.RandomState)


def _is_host_rng(obj) -> bool:
    """Whether ``obj`` is Python's or NumPy's random module, a generator of theirs, or one of
    their functions (``random.random``, ``np.random.rand``, a bound method of a generator)."""
    if isinstance(obj, types.ModuleType):
        return obj is random or obj.__name__.startswith("numpy.random")
    if isinstance(obj, _HOST_RNGS) or isinstance(getattr(obj, "__self__", None), _HOST_RNGS):
        return True
    mod = getattr(obj, "__module__", None)
    return isinstance(mod, str) and (mod == "random" or mod.startswith("numpy.random"))


def _code_names(code, out: set):
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)


def _no_defaults(fn):  # a C-level getter: (None, None) while ``fn`` has no defaults
    return functools.partial(operator.attrgetter("__defaults__", "__kwdefaults__"), fn)


def _defaults(fn):
    d, kw = fn.__defaults__, fn.__kwdefaults__
    return (tuple(map(_rep, d)) if d else d,
            tuple((k, _rep(v)) for k, v in kw.items()) if kw else kw)


def _cell(c):
    try:
        return _rep(c.cell_contents)
    except ValueError:  # an empty cell
        return _MISSING


class _Guards:
    """The Python state a capture of ``fn`` depends on (see ``compile``): a list of
    (name, getter, kind, keys) items; ``snapshot()`` reads them all (and the fast getters),
    ``changed(pre)`` names what differs since, ``failed()`` compares the guards with the
    values they had at the capture: per call only the fast getters run (one per module
    tree, per function's globals ..., through C-level maps); the items name what failed."""

    def __init__(self, fn, args):
        self._items: list = []
        self._fast: list = []  # the getters ``failed`` runs per call (guards only)
        self._pre = self._expected = None
        self._refs: list = []  # keeps what guards compare by identity alive (ids stay unique)
        self._seen: set = set()
        self.params: list = []
        self._pids: set = set()
        self._global_hooks = False  # whether the global module hooks are walked
        self.storages: set = set()  # ids of the storages of the tensors reached (guarded)
        self.host_random = None  # why a capture would bake in a host-side draw, or None
        self._next_by = self._iterator = None  # a function calling next(), an iterator reached
        self._visit(fn, getattr(fn, "__qualname__", type(fn).__name__), 0)
        for x in _leaves(args):
            if not isinstance(x, Tensor):
                self._visit(x, "an argument", 1)
        if self.host_random is None and self._next_by and self._iterator:
            self._host_random(f"{self._next_by} calls next() and reaches the iterator "
                              f"{self._iterator!r}")
        if self.params:
            ps = tuple(self.params)
            self._refs.extend(p._storage for p in ps)
            self._add("the requires_grad or the storage (p.data = ..., Module.to) of the "
                      "parameters and tensors reached",
                      lambda: (tuple(map(_RG, ps)), tuple(map(id, map(_STORAGE, ps)))))

    def _add(self, name, getter, kind=GUARD, keys=None, fast=True):
        """An item; ``fast``: its getter also runs per call (else a merged getter does)."""
        self._items.append((name, getter, kind, keys))
        if fast and kind != EFFECT:
            self._fast.append(getter)

    def expect_grads(self, pre_grads: list):
        """After ``expect``: guard the parameters' ``.grad`` as the capture used them: the
        very tensor where the capture kept it (its kernels accumulate into that one), else
        whether it was None (a None .grad was made by the capture; a tensor was replaced)."""
        same = [(p, g0) for p, g0 in zip(self.params, pre_grads)
                if g0 is not None and p._grad is g0]
        kept = {id(p) for p, _ in same}
        other = [(p, g0) for p, g0 in zip(self.params, pre_grads) if id(p) not in kept]
        ps_s, ps_o = tuple(p for p, _ in same), tuple(p for p, _ in other)
        nones = (None,) * len(ps_o)
        self._refs.extend(g0 for _, g0 in same)

        def get():
            return (tuple(map(id, map(_GRAD, ps_s))),
                    tuple(map(operator.is_, map(_GRAD, ps_o), nones)))
        want = (tuple(id(g0) for _, g0 in same), tuple(g0 is None for _, g0 in other))
        self._items.append(("the parameters' .grad (which tensor, or whether None)", get,
                            GUARD_ONLY, None))
        self._pre.append(want)
        self._fast.append(get)
        self._expected.append(want)

    def snapshot(self) -> tuple:
        """(every item's value, every fast getter's value) now."""
        return [it[1]() for it in self._items], [f() for f in self._fast]

    def expect(self, pre: tuple):
        """Replays need the guards as they were at ``pre``, the snapshot before the capture
        (a parameter's .grad may be None before each call and set during it)."""
        self._pre, self._expected = pre

    def hold(self) -> bool:
        """Whether every guard holds (the per-call check)."""
        try:
            return [f() for f in self._fast] == self._expected
        except Exception:  # noqa: BLE001  (a guarded attribute deleted, a dict changed size)
            return False

    def failed(self):
        """None when every guard holds, else the name of one that failed."""
        if self.hold():
            return None
        try:
            now = [it[1]() for it in self._items]
        except Exception:  # noqa: BLE001
            return "a guarded attribute or container changed shape"
        for (name, _, kind, _), a, b in zip(self._items, now, self._pre):
            if kind != EFFECT and a != b:
                return name + " changed"
        return "a guard changed"

    def changed(self, pre: list):
        """What the body changed (guarded state, LR schedulers, learning rates), as a reason
        for refusing the capture, or None."""
        post = self.snapshot()[0]
        what = []
        for (name, _, kind, keys), a, b in zip(self._items, pre[0], post):
            if kind == GUARD_ONLY or a == b:
                continue
            if keys is not None and a[0] != b[0]:
                name += " (" + ", ".join(
                    k for k, x, y in zip(keys, a[0], b[0]) if x != y or type(x) is not type(y)
                ) + ")"
            what.append(name)
        if not what:
            return None
        return ("it changes Python state that a replay would not change again: "
                + "; ".join(dict.fromkeys(what)) + " (do this outside the compiled function)")

    def _host_random(self, what):
        if self.host_random is None:
            self.host_random = (f"{what}: a host-side value that changes per call (random "
                                f"draws, next()) would be baked into the capture")

    # -- the walk -----------------------------------------------------------------------------
    def _visit(self, obj, name, depth):
        t = type(obj)
        if t in _PLAIN or depth > _DEPTH or id(obj) in self._seen:
            return
        if _is_host_rng(obj):
            self._host_random(f"{name!r} draws random numbers on the host")
        elif hasattr(t, "__next__") and not isinstance(obj, Tensor):
            self._iterator = self._iterator or name
        if isinstance(obj, type):  # a class used as a namespace (``Config.scale``)
            return None if _from_lib(obj) else self._class(obj, name, depth)
        self._seen.add(id(obj))
        self._refs.append(obj)
        if isinstance(obj, Tensor):
            self._param(obj)  # requires_grad and .grad guarded as a parameter's
            return
        if isinstance(obj, (types.ModuleType, types.BuiltinFunctionType)):
            return
        if isinstance(obj, np.ndarray):  # its values reach kernels through host copies
            if obj.nbytes <= _ARRAY_BYTES and obj.dtype != object:
                self._add(f"NumPy array {name!r}", functools.partial(_array_rep, obj))
            return
        if isinstance(obj, _Replayed):
            return self._visit(obj._fn, name, depth)
        if isinstance(obj, types.FunctionType):
            return self._function(obj, depth)
        if isinstance(obj, types.MethodType):
            self._visit(obj.__self__, name, depth)
            return self._visit(obj.__func__, name, depth)
        if isinstance(obj, functools.partial):
            for x in (obj.func, *obj.args, *obj.keywords.values()):
                self._visit(x, name, depth + 1)
            return
        d = getattr(obj, "__dict__", None)
        if isinstance(d, dict) and "_modules" in d and "_parameters" in d and "training" in d:
            return self._module(obj, name, depth)
        if isinstance(d, dict) and "param_groups" in d and "state" in d:
            return self._optimizer(obj, name, depth)
        if isinstance(d, dict) and "optimizer" in d and "last_epoch" in d:
            keys = [k for k, v in d.items() if _plain(v)]
            self._add(f"LR scheduler {name!r} ({t.__name__})",
                      _attrs_getter(d, keys), EFFECT, keys)
            return self._visit(d["optimizer"], f"{name}.optimizer", depth + 1)
        if t in (list, dict, set):
            return self._container(obj, name, depth)
        if t is tuple:
            for x in obj:
                self._visit(x, name, depth + 1)
            return
        if isinstance(d, dict) and not _from_lib(t):
            self._object(obj, d, name, depth)
        elif d is None and not _from_lib(t):  # an object with __slots__
            slots = [n for c in t.__mro__ for n in getattr(c, "__slots__", ())
                     if n not in ("__weakref__", "__dict__")]
            if slots:
                self._add(f"{t.__name__} {name!r} (slots)", lambda: tuple(
                    _rep(getattr(obj, n, _MISSING)) for n in slots))
                for n in slots:
                    x = getattr(obj, n, None)
                    self._refs.append(x)
                    self._visit(x, f"{name}.{n}", depth + 1)
                self._class(t, name, depth)

    def _function(self, fn, depth):
        names: set = set()
        _code_names(fn.__code__, names)
        g, q = fn.__globals__, fn.__qualname__
        # a library's function (clgrad.train's step): its closure only, not its globals
        present = () if _from_lib(fn) else tuple(n for n in sorted(names) if n in g)
        if "next" in names and "next" not in g and not _from_lib(fn):
            self._next_by = self._next_by or q
        for n in present:
            v = g[n]
            if _is_host_rng(v) or (v is np and "random" in names):
                self._host_random(f"{q} reads {n!r}")
        if present:
            self._fast.append(lambda: tuple(map(_rep, map(g.get, present))))
        for n in present:
            v = g[n]
            self._refs.append(v)
            self._add(f"global {n!r} read by {q}",
                      lambda g=g, n=n: _rep(g.get(n, _MISSING)), fast=False)
            if isinstance(v, types.ModuleType):
                # a library module: its plain attributes; a user module (a config module):
                # every attribute the code names, the objects (``cfgmod.params``) walked
                user = v.__name__.split(".")[0] not in _LIBS
                for a in sorted(names):
                    x = getattr(v, a, _MISSING)
                    if x is _MISSING or not (user or _plain(x)):
                        continue
                    self._add(f"{n}.{a} read by {q}", lambda v=v, a=a: _rep(
                        getattr(v, a, _MISSING)))
                    if user and not _plain(x):
                        self._refs.append(x)
                        self._visit(x, f"{n}.{a}", depth + 1)
            else:
                self._visit(v, n, depth + 1)
        if not _from_lib(fn):  # its default values (``f.__defaults__ = ...``)
            self._add(f"the default arguments of {q}", functools.partial(_defaults, fn)
                      if fn.__defaults__ or fn.__kwdefaults__ else _no_defaults(fn))
        cells = fn.__closure__ or ()
        if cells:
            self._fast.append(lambda: tuple(map(_cell, cells)))
        for n, c in zip(fn.__code__.co_freevars, cells):
            self._add(f"closure variable {n!r} of {q}", functools.partial(_cell, c), fast=False)
            try:
                v = c.cell_contents
            except ValueError:
                continue
            self._refs.append(v)
            self._visit(v, n, depth + 1)

    def _module(self, root, name, depth):
        stack, tree = [(name, root)], []
        while stack:
            path, m = stack.pop()
            if m is not root:
                if id(m) in self._seen:
                    continue
                self._seen.add(id(m))
                self._refs.append(m)
            d = m.__dict__
            P, B, M = d["_parameters"], d["_buffers"], d["_modules"]
            keys = [k for k, v in d.items() if _plain(v)]
            okeys = [k for k, v in d.items() if not k.startswith("_") and not _plain(v)]
            hooks = [v for k, v in d.items() if k.startswith("_") and isinstance(v, dict)
                     and k.endswith("hooks") and ("forward" in k or "backward" in k)]
            self._refs.extend((*P.values(), *B.values(), *M.values(), *(d[k] for k in okeys)))
            self._refs.extend(b._storage for b in B.values() if b is not None)
            self.storages.update(id(b._storage) for b in B.values() if b is not None)
            self._add(f"module {path!r} ({type(m).__name__})",
                      _module_getter(d, keys, okeys, P, B, M, hooks), GUARD, keys, fast=False)
            tree.append((d, keys, okeys, P, B, M, hooks))
            for h in hooks:  # the hooks' callables read state as ``fn`` does
                for k, fn in list(h.items()):
                    self._visit(fn, f"{path} hook {k}", depth + 1)
            for p in P.values():
                self._param(p)
            self._class(type(m), path, depth)
            for k, v in d.items():
                if not _plain(v) and not k.startswith("_"):
                    self._visit(v, f"{path}.{k}", depth + 1)
            for k, c in M.items():
                if c is not None:
                    stack.append((f"{path}.{k}", c))
        self._fast.append(_tree_getter(tree))
        if not self._global_hooks:
            self._global_hooks = True
            # the global module hooks (register_module_forward_hook ...), if nn is loaded:
            # looked up, not imported (nn is above this layer)
            mh = sys.modules.get("clgrad.nn.module_hooks")
            stores = [getattr(mh, n) for n in _GLOBAL_HOOKS if hasattr(mh, n)] if mh else []
            if stores:
                self._add("the global module hooks", lambda: tuple(map(tuple, stores)))
                for h in stores:
                    for k, fn in list(h.items()):
                        self._visit(fn, f"global module hook {k}", depth + 1)

    def _param(self, p):
        if p is not None and id(p) not in self._pids:
            self._pids.add(id(p))
            self.params.append(p)
            self.storages.add(id(p._storage))

    def _optimizer(self, opt, name, depth):
        d = opt.__dict__
        keys = [k for k, v in d.items() if _plain(v)]
        self._refs.extend((d["state"], *d["state"].values(), *d["param_groups"]))

        igs = [operator.itemgetter(*[k for k in g if k not in _DYNAMIC], "params")
               for g in d["param_groups"]]

        def get(opt=opt):  # the hyperparameters (but lr) of each group by value and type
            pg, st = opt.param_groups, opt.state
            v = tuple(map(operator.call, igs, pg))
            return (id(pg), tuple(map(id, pg)), tuple(map(len, pg)),
                    tuple([tuple(map(id, x[-1])) for x in v]), [x[:-1] for x in v],
                    [tuple(map(type, x)) for x in v], id(st), tuple(map(id, st)),
                    tuple(map(id, st.values())))
        label = f"optimizer {name!r} ({type(opt).__name__})"
        self._add(f"{label} param_groups or state", get)
        self._add(f"{label} attributes", _attrs_getter(d, keys), GUARD, keys)
        self._add(f"{label} learning rate", lambda opt=opt: tuple(
            _rep(g.get("lr")) for g in opt.param_groups), EFFECT)
        for g in d["param_groups"]:
            for p in g["params"]:
                self._refs.append(p)
                self._param(p)

    def _container(self, c, name, depth):
        items = list(c.items()) if isinstance(c, dict) else list(c)
        self._refs.extend(items)
        if isinstance(c, dict):
            get = functools.partial(lambda c: tuple((k, _rep(v)) for k, v in c.items()), c)
        elif isinstance(c, set):
            get = functools.partial(lambda c: frozenset(map(_rep, c)), c)
        else:
            get = functools.partial(lambda c: tuple(map(_rep, c)), c)
        self._add(f"{type(c).__name__} {name!r}", get)
        for x in (c.values() if isinstance(c, dict) else c):
            self._visit(x, name, depth + 1)

    def _object(self, obj, d, name, depth):
        keys = [k for k, v in d.items() if _plain(v)]
        okeys = [k for k, v in d.items() if not _plain(v)]
        if keys:
            self._add(f"{type(obj).__name__} {name!r}", _attrs_getter(d, keys), GUARD, keys)
        if okeys:
            self._refs.extend(d[k] for k in okeys)
            ig = operator.itemgetter(*okeys, *okeys[:1])
            self._add(f"{type(obj).__name__} {name!r} (attributes that are objects)",
                      lambda: tuple(map(id, ig(d))))
        self._class(type(obj), name, depth)
        for k in okeys:
            self._visit(d[k], f"{name}.{k}", depth + 1)

    def _class(self, t, name, depth):
        """The plain class attributes (guarded) and the methods (walked) of a user class."""
        for cls in t.__mro__:
            if _from_lib(cls) or cls is object or id(cls) in self._seen:
                continue
            self._seen.add(id(cls))
            d = vars(cls)
            keys = [k for k, v in d.items() if not k.startswith("__") and _plain(v)]
            if keys:
                self._add(f"class {cls.__qualname__}", _attrs_getter(d, keys), GUARD, keys)
            # the other attributes by identity (a method replaced: ``N.forward = ...``), the
            # number of attributes (one added), and what they hold walked (``cfg = [2.0]``)
            okeys = [k for k, v in d.items() if not _plain(v) and (
                not k.startswith("__") or isinstance(v, types.FunctionType))]
            self._refs.extend(d[k] for k in okeys)
            ig = operator.itemgetter(*okeys, *okeys[:1]) if okeys else (lambda d: ())
            self._add(f"class {cls.__qualname__} (methods and attributes that are objects)",
                      lambda d=d, ig=ig: (len(d), tuple(map(id, ig(d)))))
            for k in okeys:
                v = d[k]
                v = v.fget if isinstance(v, property) else v
                v = getattr(v, "__func__", v) if isinstance(v, (staticmethod, classmethod)) else v
                self._visit(v, f"{cls.__qualname__}.{k}", depth + 1)


_GLOBAL_HOOKS = ("_global_forward_pre_hooks", "_global_forward_hooks",
                 "_global_backward_pre_hooks", "_global_backward_hooks")
_DYNAMIC = frozenset(("params", "lr"))  # param group entries not guarded (lr: read per replay)


def _attrs_getter(d, keys):
    """A getter of the values and types of ``d[k]`` for ``keys`` (KeyError once one is gone)."""
    if not keys:
        return tuple
    ig = operator.itemgetter(*keys, *keys[:1])  # at least two keys: itemgetter gives a tuple

    def get():
        v = ig(d)
        return v, tuple(map(type, v))
    return get


def _module_getter(d, keys, okeys, P, B, M, hooks):
    """A module's guard: its plain attributes (values and types), the identity of its other
    public attributes, parameters, buffers and submodules, the parameters' requires_grad,
    its hook keys (``_tree_getter`` reads these of a whole tree per call)."""
    return _tree_getter([(d, keys, okeys, P, B, M, hooks)])


def _tree_getter(tree):
    """``_module_getter`` of every module of a tree (``(d, keys, P, B, M, hooks)`` each) at
    once: the per-call guard of a model."""
    call, chain, values = operator.call, itertools.chain.from_iterable, dict.values
    none = lambda d: ()  # noqa: E731
    igs = [operator.itemgetter(*t[1], *t[1][:1]) if t[1] else none for t in tree]
    ogs = [operator.itemgetter(*t[2], *t[2][:1]) if t[2] else none for t in tree]
    ds, Ps, Bs, Ms = ([t[i] for t in tree] for i in (0, 3, 4, 5))
    hooks = [h for t in tree for h in t[6]]
    rg = (lambda p: p is not None and p._requires_grad) if any(
        p is None for P in Ps for p in P.values()) else _RG
    sto = (lambda b: b is not None and b._storage) if any(
        b is None for B in Bs for b in B.values()) else _STORAGE

    def get():
        v = tuple(map(call, igs, ds))
        return (v, tuple(map(type, chain(v))), tuple(map(id, chain(map(call, ogs, ds)))),
                tuple(map(len, Ps)), tuple(map(len, Bs)), tuple(map(len, Ms)),
                tuple(map(id, chain(map(values, Ps)))), tuple(map(id, chain(map(values, Bs)))),
                tuple(map(id, chain(map(values, Ms)))), tuple(map(rg, chain(map(values, Ps)))),
                tuple(map(id, map(sto, chain(map(values, Bs))))), tuple(map(tuple, hooks)))
    return get


_RG = operator.attrgetter("_requires_grad")
_STORAGE = operator.attrgetter("_storage")
_GRAD = operator.attrgetter("_grad")


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3,
                           allow_unused_input: bool = False, pool=None):
    """``torch.cuda.make_graphed_callables``, for callables whose outputs are not
    differentiated afterwards (inference, or a whole training step): each callable is run
    ``num_warmup_iters`` times on its sample arguments, then captured; the returned callable
    behaves as ``compile(fn, mode="reduce-overhead")`` after its warm-up (guards, fresh
    outputs per call, in-place changes of arguments written back: see ``compile``).
    A tuple of callables gives a tuple.
    Raises:  NotImplementedError when the capture is refused (see ``compile``: an output with
             a backward graph, for which PyTorch graphs the backward pass separately, a host
             read, a Python side effect ...), at capture or at a later re-capture.
    """
    single = not isinstance(callables, tuple)
    fns = (callables,) if single else callables
    samples = (sample_args,) if single else sample_args
    out = []
    for fn, sample in zip(fns, samples):
        sample = sample if isinstance(sample, tuple) else (sample,)
        for _ in range(num_warmup_iters):
            fn(*sample)
        r = _Replayed(fn)
        r._strict = True
        r._entries[r._key(sample, {})[0]] = []
        r(*sample)
        out.append(r)
    return out[0] if single else tuple(out)


# clgrad.capture's names for these (clgrad/capture, below the ops, cannot import them)
capture.compile, capture.make_graphed_callables = compile, make_graphed_callables
