"""Elementwise ops with NumPy broadcasting, casts, copies, fills and the in-place machinery.

Every op reads its operands through their strides (any view) and writes a fresh contiguous
output, except the in-place forms, which write into the caller's view.
Kernels: kernels/elementwise.cl (T, IS_FLOAT), kernels/copy.cl (S, D).
"""
from __future__ import annotations

import math
import numbers

from clgrad import autograd, dtypes, layout
from clgrad.autograd import record
from clgrad.ops._util import defines_for, empty, launch_1d, same_device, scalar
from clgrad.tensor import Tensor

__all__ = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "neg", "abs", "exp", "log",
           "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "sin", "cos", "square", "reciprocal",
           "sign", "floor", "ceil", "round", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
           "logical_and", "logical_or", "where", "clamp", "to", "copy_", "fill_", "contiguous",
           "clone", "expand_to", "sum_to", "inplace", "write_into", "fill_raw", "copy_raw",
           "axpby_", "remainder", "masked_fill"]

_FILE = "elementwise.cl"


# -- casts and copies -------------------------------------------------------------------------
def copy_raw(dst: Tensor, src: Tensor):
    """Copy ``src`` (same shape, any dtype, any view) into the view ``dst``; no autograd."""
    same_device("copy_", dst, src)
    d = {"S": src.dtype.cl, "D": dst.dtype.cl}
    if dst.dtype.is_bool:
        d["D_IS_BOOL"] = 1
    launch_1d("copy.cl", "copy", d, dst, (src,))


def fill_raw(dst: Tensor, value):
    """Write ``value`` into every element of the view ``dst``; no autograd, no version bump."""
    launch_1d(_FILE, "fill", defines_for(dst.dtype), dst, (), (scalar(dst.dtype, value),))


def to(x: Tensor, dtype) -> Tensor:
    """``x`` converted to ``dtype`` (x itself when the dtype already matches, as PyTorch).

    Float to int truncates toward zero; anything to bool tests != 0. Grad flows between
    floating types.
    """
    dtype = dtypes.to_dtype(dtype)
    if dtype is x.dtype:
        return x
    out = empty(x.shape, dtype, x.device)
    copy_raw(out, x)
    if not dtype.is_floating_point:
        return out
    src_dtype = x.dtype
    return record("to", out, (x,), lambda g: (to(g, src_dtype),))


def contiguous(x: Tensor, force_copy: bool = False) -> Tensor:
    """``x`` if already contiguous (and not ``force_copy``), else a contiguous copy."""
    if not force_copy and x.is_contiguous():
        return x
    out = empty(x.shape, x.dtype, x.device)
    copy_raw(out, x)
    return record("contiguous", out, (x,), lambda g: (g,))


def clone(x: Tensor) -> Tensor:
    """A contiguous copy with its own storage; the gradient flows back unchanged."""
    return contiguous(x, force_copy=True)


def expand_to(x: Tensor, shape) -> Tensor:
    """A stride-0 broadcast view of ``x`` with ``shape`` (no copy); grad sums back."""
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    return x.expand(shape)


def sum_to(g: Tensor, shape) -> Tensor:
    """Sum ``g`` over the dims that broadcasting added or expanded, giving ``shape``."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    dims = list(range(lead)) + [lead + i for i, n in enumerate(shape)
                                if n == 1 and g.shape[lead + i] != 1]
    out = g.sum(dim=tuple(dims), keepdim=True) if dims else g
    return out.reshape(shape)


# -- binary ops -------------------------------------------------------------------------------
def _is_num(v) -> bool:
    return isinstance(v, numbers.Number) and not isinstance(v, Tensor)


def _prep(op, a, b):
    """Promote dtypes and broadcast. Returns (a, b, dtype, shape); scalars stay numbers."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}: expected at least one Tensor, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    for v in (a, b):
        if not isinstance(v, Tensor) and not _is_num(v):
            raise TypeError(f"{op}: expected a Tensor or a number, got {type(v).__name__}")
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        same_device(op, a, b)
        if a.ndim == 0 and b.ndim > 0 and not a.requires_grad and a.dtype.is_floating_point \
                == b.dtype.is_floating_point:
            dt = b.dtype  # a 0-dim tensor does not lift the dtype (PyTorch's rule)
        elif b.ndim == 0 and a.ndim > 0 and not b.requires_grad and a.dtype.is_floating_point \
                == b.dtype.is_floating_point:
            dt = a.dtype
        else:
            dt = dtypes.promote(a.dtype, b.dtype)
        shape = layout.broadcast_shapes(a.shape, b.shape, op=op)
        return to(a, dt), to(b, dt), dt, shape
    if isinstance(a, Tensor):
        dt = dtypes.scalar_dtype(a.dtype, b)
        return to(a, dt), b, dt, tuple(a.shape)
    dt = dtypes.scalar_dtype(b.dtype, a)
    return a, to(b, dt), dt, tuple(b.shape)


def _launch_binary(kname, a, b, dt, shape, out_dtype=None):
    dev = a.device if isinstance(a, Tensor) else b.device
    out = empty(shape, out_dtype or dt, dev)
    d = defines_for(dt)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        launch_1d(_FILE, kname, d, out, (expand_to(a, shape), expand_to(b, shape)))
    elif isinstance(a, Tensor):
        launch_1d(_FILE, kname + "_sb", d, out, (expand_to(a, shape), scalar(dt, b)))
    else:
        launch_1d(_FILE, kname + "_sa", d, out, (scalar(dt, a), expand_to(b, shape)))
    return out


def _grads(a, b, ga, gb):
    """Reduce per-input gradients to the inputs' shapes (None for scalars)."""
    return _sum_back(_shape_of(a), _shape_of(b), ga, gb)


def _shape_of(v):
    """A Tensor operand's shape (what a backward closure keeps instead of the tensor), or
    None for a number."""
    return tuple(v.shape) if isinstance(v, Tensor) else None


def _sum_back(sa, sb, ga, gb):
    """Reduce per-input gradients to the shapes ``sa``/``sb`` (None: no gradient)."""
    return (sum_to(ga, sa) if sa is not None and ga is not None else None,
            sum_to(gb, sb) if sb is not None and gb is not None else None)


def _inputs(a, b):
    return (a if isinstance(a, Tensor) else None, b if isinstance(b, Tensor) else None)


def _needed(a, b):
    """The operands a product-like backward reads: b for a's gradient, a for b's."""
    out = []
    if isinstance(a, Tensor) and a.requires_grad and isinstance(b, Tensor):
        out.append(b)
    if isinstance(b, Tensor) and b.requires_grad and isinstance(a, Tensor):
        out.append(a)
    return out


def add(a, b, alpha=1) -> Tensor:
    """``a + alpha * b`` with broadcasting. Shapes: a (*A), b (*B) -> broadcast(A, B).

    Raises ValueError when shapes do not broadcast, TypeError for non-numeric operands.
    """
    if alpha != 1:
        b = mul(b, alpha)
    a, b, dt, shape = _prep("add", a, b)
    out = _launch_binary("add", a, b, dt, shape)
    sa, sb = _shape_of(a), _shape_of(b)  # the closure keeps shapes, not the operands
    return record("add", out, _inputs(a, b), lambda g: _sum_back(sa, sb, g, g))


def sub(a, b, alpha=1) -> Tensor:
    """``a - alpha * b`` with broadcasting (see add)."""
    if alpha != 1:
        b = mul(b, alpha)
    a, b, dt, shape = _prep("sub", a, b)
    out = _launch_binary("sub", a, b, dt, shape)
    sa, sb = _shape_of(a), _shape_of(b)
    return record("sub", out, _inputs(a, b), lambda g: _sum_back(sa, sb, g, neg(g)))


def mul(a, b) -> Tensor:
    """Elementwise product with broadcasting. Grad: a, b."""
    a, b, dt, shape = _prep("mul", a, b)
    out = _launch_binary("mul", a, b, dt, shape)
    need_a = isinstance(a, Tensor) and a.requires_grad
    need_b = isinstance(b, Tensor) and b.requires_grad
    ka, kb = (a if need_b else None), (b if need_a else None)  # only what backward reads
    sa, sb = _shape_of(a), _shape_of(b)

    def backward(g):
        return _sum_back(sa, sb, mul(g, kb) if need_a else None, mul(g, ka) if need_b else None)
    return record("mul", out, _inputs(a, b), backward, saved=_needed(a, b))


def div(a, b, rounding_mode=None) -> Tensor:
    """True division ``a / b`` (integers are promoted to float32, as PyTorch).

    ``rounding_mode``: None, 'trunc' or 'floor'.
    """
    if rounding_mode not in (None, "trunc", "floor"):
        raise ValueError(f"div: expected rounding_mode None, 'trunc' or 'floor', got "
                         f"{rounding_mode!r}")
    a, b, dt, shape = _prep("div", a, b)
    if not dt.is_floating_point:
        if rounding_mode is not None and _has_zero(b):  # PyTorch: integer division by zero
            raise ZeroDivisionError(f"div: integer division by zero (rounding_mode="
                                    f"{rounding_mode!r}, divisor dtype {dt})")
        a = to(a, dtypes.float32) if isinstance(a, Tensor) else a
        b = to(b, dtypes.float32) if isinstance(b, Tensor) else b
        q = div(a, b, rounding_mode)
        return to(q, dt) if rounding_mode else q
    out = _launch_binary("div", a, b, dt, shape)
    if rounding_mode == "trunc":
        return to(to(out, dtypes.int64), dt).detach()
    if rounding_mode == "floor":
        return floor(out).detach()

    need_a = isinstance(a, Tensor) and a.requires_grad
    need_b = isinstance(b, Tensor) and b.requires_grad
    y = out.detach() if need_b else None  # not out: out -> Node -> closure -> out is a cycle
    sa, sb = _shape_of(a), _shape_of(b)

    def backward(g):
        ga = div(g, b) if need_a else None
        gb = neg(div(mul(g, y), b)) if need_b else None
        return _sum_back(sa, sb, ga, gb)
    saved = ([b] if isinstance(b, Tensor) else []) + ([y] if need_b else [])
    return record("div", out, _inputs(a, b), backward, saved=saved)


def remainder(a, b) -> Tensor:
    """a - floor(a / b) * b: the remainder with the sign of the divisor (Python's %, PyTorch's
    remainder). Integer division by zero raises ZeroDivisionError."""
    return sub(a, mul(div(a, b, rounding_mode="floor"), b))


def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """``value`` where ``mask`` (bool, broadcast to x) is True, else x. Grad: x where not
    masked (and value, if a tensor)."""
    if not isinstance(mask, Tensor) or not mask.dtype.is_bool:
        raise TypeError(f"masked_fill: expected a bool mask tensor, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        value = to(value, x.dtype)
    out = where(mask, value, x)
    if tuple(out.shape) != tuple(x.shape):
        raise RuntimeError(f"masked_fill: mask of shape {tuple(mask.shape)} does not broadcast "
                           f"to the input's {tuple(x.shape)}")
    return out


def _has_zero(b) -> bool:
    """True when the divisor (a number or a tensor, read on the host) holds a zero."""
    if isinstance(b, Tensor):
        return b.numel() > 0 and bool((b.numpy() == 0).any())
    return b == 0


def pow(a, b) -> Tensor:
    """``a ** b`` elementwise (float). d/da = b a^(b-1); d/db = a^b log a."""
    a, b, dt, shape = _prep("pow", a, b)
    if not dt.is_floating_point:
        if _is_num(b) and b >= 0:
            out = to(pow(to(a, dtypes.float64 if a.device.fp64 else dtypes.float32), b), dt)
            return out
        raise TypeError(f"pow: integer tensors to negative or tensor powers are not supported; "
                        f"got {dt}")
    if _is_num(b) and b == 2:
        out = _launch_unary("square", a)
        return record("pow", out, (a,), lambda g: (mul(g, mul(a, 2.0)),), saved=[a])
    out = _launch_binary("pow_", a, b, dt, shape)
    y = out.detach()  # not out: out -> Node -> closure -> out would be a reference cycle

    def backward(g):
        ga = gb = None
        if isinstance(a, Tensor) and a.requires_grad:
            ga = mul(mul(g, b), pow(a, sub(b, 1) if isinstance(b, Tensor) else b - 1))
        if isinstance(b, Tensor) and b.requires_grad:
            gb = mul(mul(g, y), log(a) if isinstance(a, Tensor) else math.log(a))
        return _grads(a, b, ga, gb)
    saved = [t for t in _inputs(a, b) if t is not None] + [y]
    return record("pow", out, _inputs(a, b), backward, saved=saved)


def _minmax(kname, op, a, b):
    a, b, dt, shape = _prep(op, a, b)
    out = _launch_binary(kname, a, b, dt, shape)

    def backward(g):
        # The gradient goes to a where a wins, ties split evenly (PyTorch's maximum/minimum).
        av = a if isinstance(a, Tensor) else a
        bv = b if isinstance(b, Tensor) else b
        win_a = gt(av, bv) if kname == "maximum" else lt(av, bv)
        tie = eq(av, bv)
        wa = add(to(win_a, dt), mul(to(tie, dt), 0.5))
        wb = sub(1.0, wa)
        return _grads(a, b, mul(g, wa), mul(g, wb))
    return record(op, out, _inputs(a, b), backward,
                  saved=[t for t in _inputs(a, b) if t is not None])


def maximum(a, b) -> Tensor:
    """Elementwise maximum with broadcasting; ties send half the gradient to each side."""
    return _minmax("maximum", "maximum", a, b)


def minimum(a, b) -> Tensor:
    """Elementwise minimum with broadcasting; ties send half the gradient to each side."""
    return _minmax("minimum", "minimum", a, b)


def _compare(kname):
    def op(a, b) -> Tensor:
        a, b, dt, shape = _prep(kname, a, b)
        return _launch_binary(kname, a, b, dt, shape, out_dtype=dtypes.bool_)
    op.__name__ = kname
    op.__doc__ = f"Elementwise ``{kname}`` comparison with broadcasting; returns bool."
    return op


eq, ne, lt, le, gt, ge = (_compare(k) for k in ("eq", "ne", "lt", "le", "gt", "ge"))


def logical_and(a, b) -> Tensor:
    """Elementwise logical and (bool result)."""
    a, b, dt, shape = _prep("logical_and", to(a, dtypes.bool_), to(b, dtypes.bool_))
    return _launch_binary("logical_and", a, b, dt, shape)


def logical_or(a, b) -> Tensor:
    """Elementwise logical or (bool result)."""
    a, b, dt, shape = _prep("logical_or", to(a, dtypes.bool_), to(b, dtypes.bool_))
    return _launch_binary("logical_or", a, b, dt, shape)


def logical_not(x: Tensor) -> Tensor:
    """Elementwise logical not (bool result)."""
    return _launch_unary("logical_not", to(x, dtypes.bool_))


# -- unary ops --------------------------------------------------------------------------------
def _launch_unary(kname, x, dtype=None):
    out = empty(x.shape, x.dtype, x.device)
    launch_1d(_FILE, kname, defines_for(x.dtype), out, (x,))
    return out


def _float_in(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x if x.dtype.is_floating_point else to(x, dtypes.float32)


def _unary_float(kname, op, grad_of, uses="y"):
    """An op on floats; ``grad_of(g, x, y)`` gives the input gradient, reading the input
    (``uses`` 'x') or the output ('y', passed as ``out.detach()``: the closure must not hold
    out itself, a reference cycle) — only that one is kept and saved, the other is None."""
    def f(x: Tensor) -> Tensor:
        x = _float_in(op, x)
        out = _launch_unary(kname, x)
        if uses == "x":
            return record(op, out, (x,), lambda g: (grad_of(g, x, None),), saved=[x])
        y = out.detach()
        return record(op, out, (x,), lambda g: (grad_of(g, None, y),), saved=[y])
    f.__name__ = op
    return f


exp = _unary_float("exp_", "exp", lambda g, x, y: mul(g, y))
log = _unary_float("log_", "log", lambda g, x, y: div(g, x), "x")
sqrt = _unary_float("sqrt_", "sqrt", lambda g, x, y: div(g, mul(y, 2.0)))
rsqrt = _unary_float("rsqrt_", "rsqrt", lambda g, x, y: mul(g, mul(pow(y, 3), -0.5)))
sin = _unary_float("sin_", "sin", lambda g, x, y: mul(g, cos(x)), "x")
cos = _unary_float("cos_", "cos", lambda g, x, y: neg(mul(g, sin(x))), "x")
reciprocal = _unary_float("reciprocal", "reciprocal", lambda g, x, y: neg(mul(g, mul(y, y))))
square = _unary_float("square", "square", lambda g, x, y: mul(g, mul(x, 2.0)), "x")


def _binary_grad(kname, g, y):
    out = empty(g.shape, g.dtype, g.device)
    launch_1d(_FILE, kname, defines_for(g.dtype), out, (g, y))
    return out


tanh = _unary_float("tanh_", "tanh", lambda g, x, y: _binary_grad("tanh_grad", g, y))
sigmoid = _unary_float("sigmoid", "sigmoid", lambda g, x, y: _binary_grad("sigmoid_grad", g, y))


def relu(x: Tensor) -> Tensor:
    """max(x, 0) elementwise; the gradient at 0 is 0 (PyTorch)."""
    out = _launch_unary("relu", x)
    if not x.dtype.is_floating_point:
        return out
    y = out.detach()  # not out: out -> Node -> closure -> out would be a reference cycle
    return record("relu", out, (x,), lambda g: (_binary_grad("relu_grad", g, y),), saved=[y])


def neg(x: Tensor) -> Tensor:
    """-x elementwise."""
    if x.dtype.is_bool:
        raise TypeError("neg: negation of a bool tensor is not supported; use logical_not()")
    out = _launch_unary("neg", x)
    return record("neg", out, (x,), lambda g: (neg(g),))


def abs(x: Tensor) -> Tensor:
    """|x| elementwise; gradient sign(x) (0 at 0)."""
    out = _launch_unary("abs_", x)
    return record("abs", out, (x,), lambda g: (mul(g, sign(x)),), saved=[x])


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 elementwise (no gradient: zero almost everywhere)."""
    return _launch_unary("sign_", x)


def _no_grad_float(kname, op):
    def f(x: Tensor) -> Tensor:
        return _launch_unary(kname, _float_in(op, x)) if x.dtype.is_floating_point else x
    f.__name__ = op
    f.__doc__ = f"Elementwise {op} (no gradient: piecewise constant)."
    return f


floor = _no_grad_float("floor_", "floor")
ceil = _no_grad_float("ceil_", "ceil")
round = _no_grad_float("round_", "round")


def where(cond: Tensor, a, b) -> Tensor:
    """``a`` where ``cond`` else ``b``, with broadcasting of all three. Grad: a, b."""
    if not isinstance(cond, Tensor):
        raise TypeError(f"where: expected condition to be a Tensor, got {type(cond).__name__}")
    ref = a if isinstance(a, Tensor) else b if isinstance(b, Tensor) else cond
    if not isinstance(a, Tensor):
        a = _full_like_scalar(a, ref, b)
    if not isinstance(b, Tensor):
        b = _full_like_scalar(b, ref, a)
    same_device("where", cond, a, b)
    dt = dtypes.promote(a.dtype, b.dtype)
    a, b, cond = to(a, dt), to(b, dt), to(cond, dtypes.bool_)
    shape = layout.broadcast_shapes(cond.shape, a.shape, b.shape, op="where")
    out = empty(shape, dt, a.device)
    launch_1d(_FILE, "where_", defines_for(dt), out,
              (expand_to(cond, shape), expand_to(a, shape), expand_to(b, shape)))

    sa = tuple(a.shape) if a.requires_grad else None  # shapes, not the operands
    sb = tuple(b.shape) if b.requires_grad else None

    def backward(g):
        z = _zeros_scalar(g)
        return (None,) + _sum_back(sa, sb, where(cond, g, z) if sa is not None else None,
                                   where(cond, z, g) if sb is not None else None)
    return record("where", out, (None, a, b), backward, saved=[cond])


def _zeros_scalar(like: Tensor) -> Tensor:
    import clgrad
    return clgrad.zeros((), dtype=like.dtype, device=like.device)


def _full_like_scalar(value, ref: Tensor, other) -> Tensor:
    import clgrad
    if not _is_num(value):
        raise TypeError(f"where: expected a Tensor or a number, got {type(value).__name__}")
    dt = ref.dtype if isinstance(other, Tensor) or ref.dtype.is_floating_point else None
    if dt is None or (isinstance(value, float) and not dt.is_floating_point):
        dt = dtypes.scalar_dtype(ref.dtype if ref.dtype is not dtypes.bool_ else dtypes.int64,
                                 value)
    return clgrad.full((), value, dtype=dt, device=ref.device)


def clamp(x: Tensor, min=None, max=None) -> Tensor:
    """Clamp to [min, max] (either may be None; numbers or tensors). Grad passes inside."""
    if min is None and max is None:
        raise ValueError("clamp: expected at least one of min and max, got neither")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    lo = scalar(x.dtype, 0 if min is None else min)
    hi = scalar(x.dtype, 0 if max is None else max)
    flags = (lo, hi, _i32(min is not None), _i32(max is not None))
    out = empty(x.shape, x.dtype, x.device)
    launch_1d(_FILE, "clamp_", defines_for(x.dtype), out, (x,), flags)

    def backward(g):
        gi = empty(g.shape, g.dtype, g.device)
        launch_1d(_FILE, "clamp_grad", defines_for(g.dtype), gi, (g, x), flags)
        return (gi,)
    return record("clamp", out, (x,), backward, saved=[x])


def _i32(v):
    import numpy as np
    return np.int32(1 if v else 0)


def axpby_(out: Tensor, a: Tensor, alpha, b: Tensor, beta):
    """out = alpha*a + beta*b in one launch, written into ``out`` (no autograd; optimizers)."""
    d = defines_for(out.dtype)
    launch_1d(_FILE, "axpby", d, out, (expand_to(a, out.shape), scalar(out.dtype, alpha),
                                       expand_to(b, out.shape), scalar(out.dtype, beta)))
    out._storage.version += 1
    return out


# -- in-place machinery -----------------------------------------------------------------------
def _check_inplace_target(op, self: Tensor):
    if layout.has_overlap(self.shape, self.stride()) and self.numel() > 1:
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
    root's grad_fn becomes a copy_slices Node (clgrad/ops/views.py): the root's old gradient
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
    self._storage.version += 1
    if grad_involved:
        from clgrad.ops.views import copy_slices
        copy_slices(root, self, to(src, self.dtype))
    return self


def inplace(op: str, self: Tensor, fn, *others):
    """Apply ``fn(self, *others)`` in place: compute it into a fresh tensor, then write that
    into ``self`` (write_into rebases autograd).

    With autograd involved ``fn`` reads a copy of self, and of any operand sharing self's
    storage: its backward may read their old values (mul_, log_, pow_ ...), which the write
    overwrites (PyTorch saves the original self too).
    Raises RuntimeError, with autograd involved, for a view taken under no_grad() of a tensor
    that requires grad (what it is a function of was not recorded; PyTorch raises too).
    """
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
        if not result.dtype.is_floating_point or self.dtype.is_floating_point:
            result = to(result, self.dtype)
        else:
            raise RuntimeError(f"{op}: result type {result.dtype} can't be cast to the desired "
                               f"output type {self.dtype}")
    return write_into(self, result, op)


def copy_(self: Tensor, src, non_blocking=False) -> Tensor:
    """Copy ``src`` (a Tensor, number or NumPy array, broadcast to self) into ``self``."""
    import clgrad
    if not isinstance(src, Tensor):
        src = clgrad.tensor(src, dtype=self.dtype, device=self.device)
    return write_into(self, src if src.dtype is self.dtype else to(src, self.dtype), "copy_")


def fill_(self: Tensor, value) -> Tensor:
    """Fill ``self`` with ``value`` (a number or a one-element tensor)."""
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"fill_: expected a 0-dim value tensor, got shape "
                               f"{tuple(value.shape)}")
        return copy_(self, value.reshape(()))
    if not _is_num(value):
        raise TypeError(f"fill_: expected a number, got {type(value).__name__}")
    if not self.dtype.is_floating_point and isinstance(value, float) and \
            not math.isfinite(value):
        raise RuntimeError(f"fill_: value cannot be converted to type {self.dtype} without "
                           f"overflow")
    dtypes.check_fits("fill_", self.dtype, value)
    _check_inplace_target("fill_", self)
    root = self._base if self._base is not None else self
    if autograd.is_grad_enabled() and (self.requires_grad or root.requires_grad):
        import clgrad
        return write_into(self, clgrad.full((), value, dtype=self.dtype, device=self.device),
                          "fill_")
    fill_raw(self, value)
    self._storage.version += 1
    return self
