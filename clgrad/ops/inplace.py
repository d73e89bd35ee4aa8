"""In-place writes and view rebase: target checks, ``write_into``, ``inplace``, ``copy_``,
``fill_``, the copy_slices rebase of a root and the regeneration of its views' grad_fn.

Every write bumps the storage's version once (``bump_version``, clgrad/ops/_util.py);
a Node that saved the storage then raises at backward (clgrad/autograd, "Saved tensors").

Rebase (PyTorch's gradient): every in-place form -- add_ sub_ mul_ div_ pow_ maximum_
minimum_ clamp_/clip_ relu_ neg_ exp_ log_ sqrt_ abs_ tanh_ sigmoid_ copy_ fill_ zero_, the
operators ``+= -= *= /=``, ``t[key] = v`` with ints/slices/None/Ellipsis or a bool mask -- on
a non-leaf, or on a tensor that does not require grad written with a value that does, either
directly or through any non-overlapping view of it (narrow, select, slicing with any step,
getitem, transpose/permute/movedim/t, diagonal, view/flatten/unflatten/unsqueeze/squeeze,
split/chunk/unbind pieces, non-overlapping unfold/as_strided). The root's grad_fn becomes a
``copy_slices`` Node: its old gradient with the written region zeroed, plus the region's
gradient sent to the written value; every view of the root gets an ``as_strided`` grad_fn
from the root's new one the next time it is used. The unary ops whose gradient reads only
their output (relu_, exp_, tanh_, sigmoid_, sqrt_, hardtanh/relu6 in place) written into a
root take ``output_inplace``: one launch into self, the op's own Node over the old grad_fn.
``op_`` computes from a copy of the old self when autograd is involved, so ops whose backward
reads self (mul_, div_, pow_, log_ ...) are exact (PyTorch saves the original self too).
Raise RuntimeError at the write: a leaf that requires grad, or any view of one, with grad mode
on (optimizer updates go under ``no_grad()``); a target whose elements overlap (expand,
overlapping unfold/as_strided); ``op_`` through a view created under ``no_grad()`` of a
tensor that requires grad (its history is unknown); ``detach_()`` of a view that requires
grad. The copy_slices, index_put and as_strided Nodes are differentiable again (create_graph:
region_grads below).
Raise RuntimeError at backward: a saved tensor written in place (clgrad/autograd/).
"""
from __future__ import annotations

import numpy as np

from clgrad import autograd, creation, dtypes, layout
from clgrad.autograd import record
from clgrad.autograd.graph import absorbable, output_of
from clgrad.ops._util import (bump_version, copy_raw, defines_for, defines_of, empty, fill_raw,
                              full, launch_1d, one_device, same_device, scalar, zeros)
from clgrad.ops import index
from clgrad.ops.elementwise import (_is_num, _zeros_scalar, clone, contiguous, expand_to, to,
                                    to_device, where)
from clgrad.tensor import Tensor

__all__ = ["write_into", "inplace", "output_inplace", "scalar_inplace", "copy_", "fill_",
           "zero_", "module_form", "copy_slices",
           "regenerate_view_grad_fn"]


# -- in-place machinery -----------------------------------------------------------------------
# in-place ops allowed on a tensor whose elements share memory (an expanded one): a fill
# writes the same value into every element, so the result does not depend on the order
# (PyTorch's fill_/zero_ skip the overlap check; add_, mul_, copy_ ... keep it)
_OVERLAP_OK = frozenset({"fill_", "zero_"})


def _check_inplace_target(op, self: Tensor):
    if op not in _OVERLAP_OK and layout.has_overlap(self.shape, self.stride()) and \
            self.numel() > 1:
        raise RuntimeError(f"{op}: unsupported operation: more than one element of the written-"
                           f"to tensor refers to a single memory location (shape "
                           f"{tuple(self.shape)}, strides {self.stride()}); clone() it first")
    if autograd.is_grad_enabled():
        root = self._base if self._base is not None else self
        if (self.requires_grad and self.grad_fn is None) or \
                (root.requires_grad and root.grad_fn is None):
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an "
                               f"in-place operation (or a view of one); wrap the update in "
                               f"clgrad.no_grad()")


def write_into(self: Tensor, value: Tensor, op: str = "copy_"):
    """Write ``value`` (broadcastable, castable) into the view ``self`` and rebase autograd.

    With autograd involved (grad mode on, and ``value`` or self's root requires grad), the
    root's grad_fn becomes a copy_slices Node (below): the root's old gradient
    with self's region zeroed, plus the region's gradient sent to ``value`` — PyTorch's
    semantics for in-place writes, into a root or through a view. Every view of the root
    picks up the new grad_fn the next time it is used (Tensor.grad_fn).
    """
    same_device(op, self, value)
    layout.broadcast_shapes(value.shape, self.shape, op=op)
    if value.ndim > self.ndim or any(
            v not in (1, s) for v, s in zip(value.shape[::-1], self.shape[::-1])):
        raise RuntimeError(f"{op}: expected a source broadcastable to {tuple(self.shape)}, got "
                           f"{tuple(value.shape)}")
    _check_inplace_target(op, self)
    root = self._base if self._base is not None else self
    grad_involved = autograd.is_grad_enabled() and (value.requires_grad or root.requires_grad)
    src = expand_to(value, self.shape)
    if src._storage is self._storage and not (src._offset == self._offset and
                                              src._strides == self._strides):
        src = contiguous(src, force_copy=True)  # overlapping read and write: stage it
    copy_raw(self, src)
    bump_version(self)
    if grad_involved:
        copy_slices(root, self, to(src, self.dtype))
    return self


def inplace(op: str, self: Tensor, fn, *others):
    """Apply ``fn(self, *others)`` in place: compute it into a fresh tensor, then write that
    into ``self`` (write_into rebases autograd).

    With autograd involved ``fn`` reads a copy of self, and of any operand sharing self's
    storage: its backward may read their old values (mul_, log_, pow_ ...), which the write
    overwrites (PyTorch saves the original self too).
    The result (computed in ``dtypes.result_type`` of the operands) is cast back to self's
    dtype; raises RuntimeError "result type Float can't be cast to the desired output type
    Long" (PyTorch's) where ``dtypes.can_cast`` forbids it: floating into integer or bool,
    integer into bool (bool ``b += 1``, int ``x *= 2.5``, int ``x.clamp_(2.5)``).
    Raises RuntimeError, with autograd involved, for a view taken under no_grad() of a tensor
    that requires grad (what it is a function of was not recorded; PyTorch raises too), and
    for tensors of two devices among self and ``others`` (``_util.one_device``: a 0-dim
    operand on a CPU device may join, as PyTorch, but self may not) before ``fn`` runs.
    """
    one_device(op, others, {"out": self})  # before fn runs; self, written, is never exempt
    _check_inplace_target(op, self)
    root = self._base if self._base is not None else self
    grad_involved = autograd.is_grad_enabled() and (root.requires_grad or any(
        isinstance(o, Tensor) and o.requires_grad for o in others))
    if grad_involved and root.requires_grad and not self.requires_grad:
        raise RuntimeError(f"{op}: a view created in no_grad mode of a tensor that requires "
                           f"grad is being modified in-place with grad mode enabled; take the "
                           f"view outside no_grad() or clone() it")
    if grad_involved:
        self_copy = clone(self)
        others = tuple(self_copy if o is self else clone(o) if isinstance(o, Tensor) and
                       o._storage is self._storage else o for o in others)
        result = fn(self_copy, *others)
    else:
        result = fn(self, *others)
    if result.dtype is not self.dtype:
        if not dtypes.can_cast(result.dtype, self.dtype):
            raise RuntimeError(f"{op}: result type {dtypes.torch_name(result.dtype)} can't be "
                               f"cast to the desired output type "
                               f"{dtypes.torch_name(self.dtype)}")
        result = to(result, self.dtype)
    return write_into(self, result, op)


def output_inplace(op: str, self: Tensor, fn):
    """``self = fn(self)`` in one launch written straight into self, for the unary ops whose
    gradient reads their output only (``fn.in_place = (launch(out, x), grad_of(g, y),
    again(g, y))``, again: grad_of of recording ops for create_graph):
    relu, hardtanh / relu6, exp, sqrt, tanh, sigmoid ...; PyTorch's relu_ saves its result
    likewise): no copy of self, no fresh result, no copy_slices. With autograd involved, self
    (a root) gets the op's Node over its old grad_fn, saving self at its new version, and its
    views pick it up (``_rebase``). Returns None, having done nothing, where it does not apply
    (no ``in_place``, not a float tensor, a bfloat16 one: computed in float32, or a view
    with autograd involved: ``inplace`` keeps the view rules); the caller then takes
    ``inplace``."""
    spec = getattr(fn, "in_place", None)
    if spec is None or not isinstance(self, Tensor) or not self.dtype.is_floating_point or \
            self._storage.dtype is dtypes.bfloat16:
        return None
    root = self._base if self._base is not None else self
    grad = autograd.is_grad_enabled() and root.requires_grad
    if grad and root is not self:
        return None
    _check_inplace_target(op, self)
    # again(g, y): grad_of of recording ops (create_graph); linked: a piecewise-linear op's
    # create_graph gradient linked to self's old value (autograd.graph._linked)
    launch, grad_of, again, *linked = spec
    fn = self._grad_fn  # (before the write's bump; called only where self's Node has a fuse)
    absorb = grad and op == "relu_" and fn is not None and fn.fuse is not None and \
        absorbable(self)
    launch(self, self)  # elementwise: each element read and written at its own index
    bump_version(self)
    if grad:
        y = self.detach()
        old = self._grad_fn
        double = None if again is None else lambda g, node: (again(g, output_of(node, y)),)
        record(op, self, (self,), lambda g: (grad_of(g, y),), saved=[y],
               double=(double, (0,), True) if linked and double is not None else double)
        if absorb and self._grad_fn is not old:  # as relu's: a batch norm's backward may
            self._grad_fn.fuse = "relu"          # take it (autograd.graph._absorb)
        self._rebase += 1
        if self._retains_grad and old is not None and old.retained is not None:
            old.retained, self._grad_fn.retained = None, old.retained
    return self


# Elementwise kernels (kernels/elementwise.cl, the tensor-number forms) that read and write
# each element at its own index only: ``self OP= number`` runs them with self as output and
# operand, one launch instead of a fresh result and a copy.
_SCALAR_KERNELS = {"add_": "add_sb", "sub_": "sub_sb", "mul_": "mul_sb"}


def scalar_inplace(op: str, self: Tensor, value) -> bool:
    """``self OP= value`` in one launch written straight into self (op: add_, sub_ or mul_;
    value: a Python number) where autograd is not involved and the result keeps self's dtype:
    the same kernel and values as ``inplace``'s path, without the fresh result and its copy.
    Runs the target checks (overlap, leaf) and bumps the version as ``write_into`` does.
    Returns False, having done nothing, where it does not apply (the caller then takes
    ``inplace``: a Python bool value too, so that sub_'s bool check runs; a bfloat16 self,
    computed in float32)."""
    kname = _SCALAR_KERNELS.get(op)
    if kname is None or type(value) not in (int, float) or self.dtype.is_bool or \
            dtypes.scalar_dtype(self.dtype, value) is not self.dtype or \
            self._storage.dtype is dtypes.bfloat16:
        return False
    root = self._base if self._base is not None else self
    if autograd.is_grad_enabled() and root.requires_grad:
        return False
    _check_inplace_target(op, self)
    launch_1d("elementwise.cl", kname, defines_of(self.dtype), self,
              (self, scalar(self.dtype, value, True)))
    bump_version(self)
    return True


def copy_(self: Tensor, src, non_blocking=False) -> Tensor:
    """Copy ``src`` (a Tensor, number or NumPy array, broadcast to self) into ``self``.

    ``src`` may live on another device (PyTorch's copy_ copies across devices); the gradient
    to ``src`` is copied back to its device."""
    if not isinstance(src, Tensor):
        src = creation.tensor(src, dtype=self.dtype, device=self._storage.device)
    return _write_from(self, src, "copy_")


def _write_from(self: Tensor, src: Tensor, op: str) -> Tensor:
    """write_into(self, src) under ``op``'s name, src first moved to self's device and cast
    to its dtype (copy_, and fill_ of a tensor value)."""
    if src._storage.device is not self._storage.device:
        src = to_device(src, self._storage.device)
    return write_into(self, src if src.dtype is self.dtype else to(src, self.dtype), op)


def fill_(self: Tensor, value) -> Tensor:
    """Fill ``self`` with ``value`` (a number or a one-element tensor)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"fill_: expected a 0-dim value tensor, got shape "
                               f"{tuple(value.shape)}")
        # copy_'s path under fill_'s name (no overlap check: _OVERLAP_OK)
        return _write_from(self, value.reshape(()), "fill_")
    if not _is_num(value):
        raise TypeError(f"fill_: expected a number, got {type(value).__name__}")
    dtypes.check_fits("fill_", self.dtype, value)
    _check_inplace_target("fill_", self)
    root = self._base if self._base is not None else self
    if autograd.is_grad_enabled() and (self.requires_grad or root.requires_grad):
        return write_into(self, full((), value, self.dtype, self._storage.device), "fill_")
    fill_raw(self, value)
    bump_version(self)
    return self


def zero_(input: Tensor) -> Tensor:
    """Fill ``input`` with zeros; returns it."""
    return fill_(input, 0)


_MODULE_FORMS: dict = {}  # (face, name) -> function: one object per name, however often asked


def module_form(name: str, binary: bool, face: str):
    """PyTorch's module-level form of the in-place method ``name`` (``torch.abs_(input)`` is
    ``input.abs_()``, ``torch.xlogy_(input, other)`` is ``input.xlogy_(other)``), for the face
    module ``face`` (``clgrad``, ``clgrad.nn.functional``), which it names as its module: the
    face's argument check then names ``input`` (and ``other``) as PyTorch. The method is looked
    up on the tensor at call time (Tensor's in-place variants are bound above the ops)."""
    fn = _MODULE_FORMS.get((face, name))
    if fn is not None:
        return fn
    if binary:
        def fn(input: Tensor, other: Tensor | float, *args, **kwargs) -> Tensor:
            return getattr(input, name)(other, *args, **kwargs)
    else:
        def fn(input: Tensor, *args, **kwargs) -> Tensor:
            return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = face
    fn.__doc__ = f"``input.{name}(...)``: in place; returns input."
    _MODULE_FORMS[(face, name)] = fn
    return fn


def _add_into(dst: Tensor, g: Tensor):
    """dst[view] += g elementwise, correct when dst's view overlaps itself (atomic adds; on the
    host in a fixed order under use_deterministic_algorithms, see ops/index.py)."""
    if index.widened_add(dst, g, _add_into):  # (float16, int8, uint8, int16: in 32 bits)
        return
    if index.deterministic_add(g):
        index.add_at_host(dst, index._view_offsets(dst), g)
        return
    launch_1d("index.cl", "scatter_add", defines_for(g.dtype), dst, (g,))


# -- autograd through writes into views -------------------------------------------------------
# Gradients of a root and of its views meet in a buffer of the storage's size, each tensor read
# or written through its own (shape, strides, offset), so nothing here depends on the root's
# layout. The closures keep these geometries only, never the tensors.
def _geometry(t: Tensor):
    return tuple(t.shape), t._strides, t._offset


def _at(buf: Tensor, geometry) -> Tensor:
    """A view of the 1-D buffer ``buf`` with ``geometry`` (shape, strides, offset)."""
    return Tensor(buf._storage, *geometry, base=buf)


def _storage_buffer(size: int, covered: bool, like: Tensor) -> Tensor:
    """A 1-D buffer of ``size`` elements; zeroed unless the caller writes every element."""
    return (empty if covered else zeros)(size, like.dtype, like._storage.device)


def copy_slices(root: Tensor, v: Tensor, value: Tensor):
    """Rebase ``root``'s graph after ``value`` (of v's shape) was written into ``v``: root
    itself or a view of it. Root's new grad_fn sends its gradient to the root as it was, with
    v's region zeroed, and v's region to ``value``. A retain_grad() on root moves along.
    Differentiable again (create_graph: ``region_grads``, a recorded gather and where)."""
    root_geom, v_geom = _geometry(root), _geometry(v)
    whole = v is root
    size = root._storage.size
    covered = root.numel() == size  # a root owning its storage covers every element

    def backward(g):  # keeps geometry only: holding root would be a reference cycle
        if whole:
            return None, g
        buf = _storage_buffer(size, covered, g)
        copy_raw(_at(buf, root_geom), g)
        region = _at(buf, v_geom)
        g_value = clone(region)
        fill_raw(region, 0)
        return contiguous(_at(buf, root_geom)), g_value
    def double(g, node):  # create_graph: the same gradients of recorded ops
        return region_grads(g, root_geom, size, index.geometry_offsets(*v_geom), True,
                            "copy_slices")
    old = root._grad_fn
    # (create_graph: a whole write passes g on, recorded as is)
    record("copy_" if whole else "copy_slices", root, (root, value), backward,
           double=True if whole else double)
    root._rebase += 1
    if root._retains_grad and old is not None and old.retained is not None:
        old.retained, root._grad_fn.retained = None, old.retained


def regenerate_view_grad_fn(v: Tensor):
    """Give the view ``v`` a grad_fn from its root's current one (after the root was written
    in place): as_strided of the root, so its gradient is scattered (added, where v overlaps
    itself) into the root's geometry; differentiable again (create_graph: a recorded
    scatter-add into the root's elements)."""
    root = v._base
    v._rebase_seen = root._rebase
    v._grad_fn = None
    v._requires_grad = False
    root_geom, v_geom = _geometry(root), _geometry(v)
    overlap = layout.has_overlap(v_geom[0], v_geom[1])
    size = root._storage.size

    def backward(g):
        wide = overlap and g.dtype is dtypes.bfloat16  # (its sums in float32, rounded once)
        if wide:
            g = to(g, dtypes.float32)
        buf = _storage_buffer(size, False, g)
        (_add_into if overlap else copy_raw)(_at(buf, v_geom), g)
        out = contiguous(_at(buf, root_geom))
        return (to(out, dtypes.bfloat16) if wide else out,)

    def double(g, node):  # create_graph: a recorded scatter-add into root's elements
        at = positions(root_geom, size, index.geometry_offsets(*v_geom), "as_strided")
        idx = creation.tensor(at.reshape(-1), dtype=dtypes.int64, device=g._storage.device)
        n = layout.numel(root_geom[0])
        return (index.scatter_add_rec((n,), 0, idx, g.reshape(-1)).reshape(root_geom[0]),)
    from clgrad.autograd import enable_grad
    with enable_grad():  # the view's grad_fn must exist even if first asked for in no_grad
        record("as_strided", v, (root,), backward, double=double)


def positions(root_geom, size: int, offsets: np.ndarray, op: str) -> np.ndarray:
    """The row-major position among the root's elements (geometry ``root_geom``, in a storage
    of ``size`` elements) of each storage offset of ``offsets`` (int64, any shape): the
    gathers and scatters of a region write's differentiable backward (create_graph). Raises
    RuntimeError naming ``op`` for an offset outside the root's elements (a view reaching
    past its base through as_strided)."""
    pos = np.full(size, -1, np.int64)
    pos[index.geometry_offsets(*root_geom).reshape(-1)] = np.arange(layout.numel(root_geom[0]))
    at = pos[offsets]
    if at.size and at.min() < 0:
        raise RuntimeError(f"create_graph: the backward of {op!r} through a view that reaches "
                           f"storage outside its base's elements is not differentiable in "
                           f"clgrad; compute this gradient without create_graph=True")
    return at


def region_grads(g: Tensor, root_geom, size: int, offsets: np.ndarray, zero: bool, op: str):
    """A region write's gradients as recorded ops (create_graph): (``g``, the root's gradient,
    with the region zeroed when ``zero``; g read at the region, of offsets' shape).
    ``offsets``: the storage offsets of the region's elements (see ``positions``)."""
    at = positions(root_geom, size, offsets, op)
    idx = creation.tensor(at.reshape(-1), dtype=dtypes.int64, device=g._storage.device)
    g_region = index.gather_rec(g.reshape(-1), 0, idx).reshape(offsets.shape)
    if zero:
        mask = np.zeros(layout.numel(root_geom[0]), bool)
        mask[at.reshape(-1)] = True
        g = where(creation.tensor(mask.reshape(root_geom[0]), device=g._storage.device),
                  _zeros_scalar(g), g)
    return g, g_region


# -- out= (PyTorch's out argument on the public functions) ------------------------------------
# Which functions take it, and which require out's exact dtype, is said by their rows in
# clgrad/ops/registry.py (``out=CAST``/``EXACT``); clgrad/__init__.py passes ``registry.outs()``.
_RESIZE_WARNING = ("An output with one or more elements was resized since it had shape {}, "
                   "which does not match the required output shape {}. This behavior is "
                   "deprecated, and in a future PyTorch release outputs will not be resized "
                   "unless they have zero elements. You can explicitly reuse an out tensor t by "
                   "resizing it, inplace, to zero elements with t.resize_(0).")


def with_out(namespace: dict, names: dict):
    """Give each function of ``names`` (``{name: exact}``) in ``namespace`` (a face's globals)
    PyTorch's ``out=`` keyword (see ``_write_out``; ``exact``: out must have the result's
    dtype, as PyTorch checks for matmul-like ops, clamp, where, argmax; else the result is
    cast into out); without ``out`` the call is the function's own."""
    import functools
    import inspect
    done = {}  # id(function) -> its wrapper: aliases (clip = clamp) stay one function
    for name, exact in names.items():
        fn = namespace.get(name)
        if fn is None or getattr(fn, "__with_out__", False):
            continue
        if id(fn) in done:
            namespace[name] = done[id(fn)]
            continue
        params = inspect.signature(fn).parameters
        defaults = tuple(p for p in ("dtype", "device") if p in params)

        def wrapper(*args, out=None, _fn=fn, _name=name, _defaults=defaults, _exact=exact,
                    **kwargs):
            if out is None:
                return _fn(*args, **kwargs)
            return _call_with_out(_name, _fn, args, kwargs, out, _defaults, _exact)
        functools.update_wrapper(wrapper, fn)
        wrapper.__with_out__ = True
        namespace[name] = done[id(fn)] = wrapper


def _tensors_in(values):
    for v in values:
        if isinstance(v, Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (t for t in v if isinstance(t, Tensor))


def _call_with_out(op, fn, args, kwargs, out, defaults, exact):
    """``fn(*args, **kwargs)`` written into ``out`` (a Tensor, or a tuple of them for ops with
    several results), as PyTorch: RuntimeError when grad mode is on and an argument or out
    requires grad; a factory or an op with a ``dtype`` argument computes in out's dtype (and a
    factory on out's device; other ops raise RuntimeError, before they run, for an out on
    another device than their tensors); the result's dtype must be castable to out's (its
    exact dtype for matmul-like ops, clamp, where, argmax); out is resized to the result's
    shape (with PyTorch's deprecation warning when it had elements; a view cannot be
    resized). Returns out (a namedtuple of outs for such results)."""
    outs = tuple(out) if isinstance(out, (list, tuple)) else (out,)
    if not all(isinstance(o, Tensor) for o in outs):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if "device" not in defaults:  # cat([a, b], out=o): outs on the inputs' device, checked first
        one_device(op, (*_tensors_in(args), *_tensors_in(kwargs.values())), {"out": outs})
    if autograd.is_grad_enabled() and any(
            t.requires_grad for t in (*_tensors_in(args), *_tensors_in(kwargs.values()), *outs)):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                           f"differentiation, but one of the arguments requires grad.")
    if len(outs) == 1:
        if "dtype" in defaults and kwargs.get("dtype") is None:
            kwargs["dtype"] = outs[0].dtype
        if "device" in defaults and kwargs.get("device") is None:
            kwargs["device"] = outs[0]._storage.device
    with autograd.no_grad():
        result = fn(*args, **kwargs)
        results = tuple(result) if isinstance(result, tuple) else (result,)
        if len(results) != len(outs):
            raise TypeError(f"{op}(): expected out to be a tuple of {len(results)} Tensors, "
                            f"got {len(outs)}")
        for o, r in zip(outs, results):
            _write_out(op, o, r, exact)
    if isinstance(result, tuple):
        return type(result)(*outs) if hasattr(result, "_fields") else outs
    return out


def _write_out(op, out: Tensor, r: Tensor, exact: bool):
    if r._storage.device is not out._storage.device:
        raise RuntimeError(f"{op}(): Expected out tensor to have device {r.device}, but got "
                           f"{out.device} instead")
    if exact and r.dtype is not out.dtype:
        raise RuntimeError(f"{op}(): Expected out tensor to have dtype {r.dtype}, but got "
                           f"{out.dtype} instead")
    if not dtypes.can_cast(r.dtype, out.dtype):
        raise RuntimeError(f"{op}(): result type {dtypes.torch_name(r.dtype)} can't be cast to "
                           f"the desired output type {dtypes.torch_name(out.dtype)}")
    if tuple(out.shape) != tuple(r.shape):
        if out._base is not None:
            raise RuntimeError(f"{op}(): out is a view of shape {tuple(out.shape)}, the result "
                               f"has shape {tuple(r.shape)}: a view cannot be resized; pass a "
                               f"tensor of the result's shape or with zero elements")
        if out.numel():
            import warnings
            warnings.warn(_RESIZE_WARNING.format(list(out.shape), list(r.shape)),
                          UserWarning, stacklevel=4)
        out._set_data(empty(tuple(r.shape), out.dtype, out._storage.device))
    copy_(out, r)
