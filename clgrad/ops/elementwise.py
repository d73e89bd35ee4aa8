"""Elementwise ops with NumPy broadcasting, casts and copies.

Every op reads its operands through their strides (any view) and writes a fresh contiguous
output (axpby_ excepted: optimizers). The in-place forms (``add_``, ``copy_`` ...) are
clgrad/ops/inplace.py; the raw copy/fill (``copy_raw``, ``fill_raw``) clgrad/ops/_util.py.
Kernels: kernels/elementwise.cl (T, IS_FLOAT), kernels/copy.cl (S, D). An op whose result
dtype is bfloat16 computes in float32 and rounds its result once (``via_float32``).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from clgrad import _memory_format, autograd, dtypes, layout
from clgrad.autograd import record
from clgrad.autograd.graph import absorbable, output_of
from clgrad.errors import IntegerZeroDivisionError
from clgrad.ops._util import copy_raw, fill_raw  # noqa: F401 (moved to _util)
from clgrad.ops._util import (_STRIDED, bump_version, defines_for, defines_of, empty,
                              flat_plan, full, launch_1d, one_device, same_device, scalar,
                              zeros)
from clgrad.ops.plan import key as plan_key
from clgrad.ops.plan import record_launches, replay
from clgrad.tensor import _CONTIG, Tensor

__all__ = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "neg", "abs", "exp", "log",
           "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "sin", "cos", "square", "reciprocal",
           "sign", "floor", "ceil", "round", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
           "logical_and", "logical_or", "where", "clamp", "to", "to_device", "contiguous",
           "clone", "expand_to", "sum_to", "fill_raw", "copy_raw",
           "axpby_", "remainder", "masked_fill", "log1p", "expm1", "atan2", "arctan2",
           # h1 (issue 20): exact integer division, fmod, bitwise ops
           "divide", "true_divide", "floor_divide", "fmod", "bitwise_and", "bitwise_or",
           "bitwise_xor",
           "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "result_type"]

_FILE = "elementwise.cl"


# -- casts and copies -------------------------------------------------------------------------
def to(x: Tensor, dtype) -> Tensor:
    """``x`` converted to ``dtype`` (x itself when the dtype already matches, as PyTorch).

    Float to int truncates toward zero; anything to bool tests != 0. Grad flows between
    floating types.
    """
    dtype = dtypes.to_dtype(dtype)
    if dtype is x.dtype:
        return x
    out = empty(x.shape, dtype, x._storage.device)
    copy_raw(out, x)
    if not dtype.is_floating_point:
        return out
    src_dtype = x.dtype
    return record("to", out, (x,), lambda g: (to(g, src_dtype),), double=True)


_BF16, _F16, _F32 = dtypes.bfloat16, dtypes.float16, dtypes.float32
_LINK_X = (0,)  # Node.double links (autograd.graph._linked): input 0


def _low_in(v, low):
    if isinstance(v, Tensor):
        return to(v, _F32) if v._storage.dtype is low else v
    if isinstance(v, (list, tuple)) and any(isinstance(e, Tensor) and e._storage.dtype is low
                                            for e in v):
        return type(v)(_low_in(e, low) for e in v)
    return v


def _low_out(v, low):
    if isinstance(v, Tensor):
        if v._storage.dtype is not _F32:
            return v
        out = to(v, low)
        node, inner = out._grad_fn, v._grad_fn
        if node is not None and inner is not None:  # the op's name on the result's grad_fn
            node._op = inner._op                    # ('MulBackward0', as PyTorch's)
        return out
    if isinstance(v, tuple):
        items = [_low_out(e, low) for e in v]
        return type(v)(*items) if hasattr(v, "_fields") else tuple(items)
    return v


def via_float32(fn, *args, **kwargs):
    """bfloat16's arithmetic (clgrad/dtypes.py): ``fn(*args, **kwargs)`` with every bfloat16
    tensor argument (also inside a list or tuple argument) converted to float32 and every
    float32 result (also inside a tuple result) converted to bfloat16, rounded once to nearest
    even: PyTorch's bfloat16 ops compute in float ("opmath") and round their result, so the
    values agree with theirs up to that one rounding. Integer and bool results (argmax,
    comparisons) are kept. Both conversions are recorded (``to``), so gradients flow and
    arrive in bfloat16. An op calls this where its result dtype is bfloat16; it costs two
    conversion launches per bfloat16 operand and result (OpenCL C has no bfloat16 type)."""
    return low_via_float32(_BF16, fn, *args, **kwargs)


def low_via_float32(low, fn, *args, **kwargs):
    """via_float32 for the 16-bit float dtype ``low`` (bfloat16 or float16): its tensors in
    ``args`` as float32 copies, ``fn`` run with autocast off (autocast chose the dtype
    already: the float32 op is the op's own arithmetic, not autocast's to lower again), its
    float32 results rounded to ``low`` once. float16's users: the convolutions that run
    float32's kernels (ops/conv/op.py half_via_float32) and the mixed layer/group norm."""
    args = [_low_in(a, low) for a in args]
    for k, v in kwargs.items():
        kwargs[k] = _low_in(v, low)
    mode = autograd.grad_mode
    if not getattr(mode._state, "autocast", None):
        return _low_out(fn(*args, **kwargs), low)
    prev = mode._set_autocast(None)
    try:
        out = fn(*args, **kwargs)
    finally:
        mode._set_autocast(prev)
    return _low_out(out, low)


def _opmath(given, prepped) -> tuple:
    """The operands a bfloat16 (or float16) binary op passes to low_via_float32: a tensor
    with dims (or a NumPy array) as promoted, i.e. rounded to the low dtype as PyTorch's
    kernels load it; a Python number or a 0-dim tensor as given, taken in float32 (PyTorch's
    opmath scalar: bfloat16 x * tensor(257.) is 772, not 768); a 0-dim integer or bool tensor
    as a float32 copy (its value, exact below 2^24: else the op, seeing only integers and
    numbers, would promote to the default dtype again, bfloat16 under
    ``set_default_dtype(bfloat16)``). PyTorch's CPU kernels of add, sub, pow, fmod and
    remainder round a Python number to bfloat16 first, its CUDA kernels do not: clgrad
    follows the latter."""
    out = []
    for g, p in zip(given, prepped):
        if isinstance(g, Tensor):
            out.append(p if g._shape else g if g._storage.dtype.is_floating_point else
                       to(g, _F32))
        else:
            out.append(p if isinstance(g, np.ndarray) and g.ndim else g)
    return tuple(out)


def _wide_0d(given) -> bool:
    """A 0-dim float32/float64 or int16/32/64 tensor among a float16 op's operands: PyTorch
    takes it in float as a number (its opmath scalar: float16 x * tensor(1e5) is 37728, not
    inf; float16 x / tensor(100000) is x * 1e-5, not x / inf = 0), so the op runs through
    float32 copies (low_via_float32) and rounds once, instead of rounding it to half (bool,
    uint8 and int8 values are exact in half: they keep the half kernel)."""
    return any(type(g) is Tensor and not g._shape and g._storage.dtype.itemsize >= 4 - (
        not g._storage.dtype.is_floating_point) * 2 for g in given)


def _bf16_number(v):
    """A Python number rounded to bfloat16 (comparisons take the number in the tensor's
    dtype, as PyTorch's: bfloat16 0.1 == 0.1 is True); anything else unchanged."""
    if isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, bool):
        return float(dtypes.bf16_to_float32(dtypes.to_bf16_bits(float(v))))
    return v


def autocast(op: str, *tensors, lower: bool = True, cuda_only: bool = False):
    """The operands of an op on autocast's lists (clgrad.amp), cast as PyTorch's autocast
    does while it is on for the first tensor's device type: ``lower`` (matmul family): every
    floating tensor but float64 to autocast's dtype (float16 or bfloat16); not ``lower``
    (losses, norms): float16 and bfloat16 tensors to float32. ``cuda_only``: an op on
    PyTorch's CUDA float32 list but not on its CPU one (softmax, log_softmax, layer_norm,
    group_norm): cast only under autocast('cuda'). The casts are recorded (gradients flow
    back in the original dtypes). ``tensors`` unchanged when autocast is off; None entries
    stay None.

    Raises:  (``lower`` only: the float32 list needs neither) RuntimeError when autocast's
             dtype is float16 on a device without cl_khr_fp16.
    """
    if not getattr(autograd.grad_mode._state, "autocast", None):  # off: the common case
        return tensors
    first = next((t for t in tensors if isinstance(t, Tensor)), None)
    if first is None:
        return tensors
    dev = first._storage.device
    dt = autograd.grad_mode.autocast_dtype(dev.type)
    if dt is None or cuda_only and dev.type != "cuda":
        return tensors
    if not lower:  # the float32 list: whatever autocast's dtype, float16 becomes float32
        return tuple(to(t, dtypes.float32) if isinstance(t, Tensor) and
                     (t.dtype is dtypes.float16 or t.dtype is _BF16) else t for t in tensors)
    if dt is dtypes.float16 and not dev.fp16:
        raise RuntimeError(f"{op}: autocast to float16, but the device {dev.name!r} lacks "
                           f"cl_khr_fp16; use autocast(..., enabled=False) (float32)")
    return tuple(to(t, dt) if isinstance(t, Tensor) and t.dtype.is_floating_point and
                 t.dtype is not dtypes.float64 else t for t in tensors)


def to_device(x: Tensor, device) -> Tensor:
    """A contiguous copy of ``x`` on ``device`` (a ``clgrad.runtime.Device``), through the
    host; ``x`` itself when it is already there; on the meta device, a tensor of x's shape
    and dtype without data (from it: NotImplementedError, it has none). Recorded as
    PyTorch's ``ToCopyBackward0``: the gradient is copied back to x's device, so autograd
    flows across devices.
    """
    src_dev = x._storage.device
    if device is src_dev:
        return x
    out = Tensor._empty(x.shape, x.dtype, device)
    if device.type != "meta":  # (to the meta device: shape and dtype only, nothing copied)
        values = x.detach()._host_bits()  # (bfloat16: its bits, which numpy() refuses)
        if values.size:
            out._storage.write(0, values)
            out._storage.keep_host(values)
    if not x.dtype.is_floating_point:
        return out
    return record("to", out, (x,), lambda g: (to_device(g, src_dev),), double=True)


def contiguous(x: Tensor, force_copy: bool = False) -> Tensor:
    """``x`` if already contiguous (and not ``force_copy``), else a contiguous copy.

    The copy's launches are recorded once per layout (plan.key of ``x``: shape, strides,
    offset, dtype) and replayed after: a leaf's gradient copy in every backward takes one
    allocation and one enqueue (copy_raw's checks and planning ran at the recording)."""
    if not force_copy and x.is_contiguous():
        return x
    dev = x._storage.device
    out = Tensor._empty(x._shape, x._storage.dtype, dev)
    key = plan_key(_COPY_TAG, (x,))
    plans = dev.plans.get(key)
    if plans:
        replay(dev, plans, (out._storage.buffer, x._storage.buffer))
    elif plans is None and dev._capture is None:  # (a graph being captured: not recorded)
        rec = record_launches(dev, lambda: copy_raw(out, x),
                              (out._storage.buffer, x._storage.buffer))
        dev.keep_plan(key, rec or False)  # False: this layout is copied by copy_raw
    else:
        copy_raw(out, x)
    return record("contiguous", out, (x,), lambda g: (g,), double=True)


_COPY_TAG = ("copy.cl", "contiguous")  # contiguous's recorded launches (plan.key's tag)


def clone(x: Tensor, *, memory_format=None) -> Tensor:
    """A contiguous copy with its own storage; the gradient flows back unchanged.
    ``memory_format``: None, torch.preserve_format or torch.contiguous_format, all giving a
    contiguous copy (PyTorch's preserve_format keeps a permuted input's strides: README,
    "Deliberately different"); TypeError for anything else."""
    _memory_format.check(memory_format, "clone")
    return contiguous(x, force_copy=True)


def expand_to(x: Tensor, shape) -> Tensor:
    """A stride-0 broadcast view of ``x`` with ``shape`` (no copy); grad sums back."""
    shape = tuple(shape)
    if x._shape == shape:
        return x
    return x.expand(shape)


def _operand(x: Tensor, shape) -> Tensor:
    """``x`` broadcast to ``shape`` (a tuple of ints it broadcasts to) as a kernel operand: a
    stride-0 alias outside autograd (expand_to records a view Node nobody would use)."""
    if x._shape == shape:
        return x
    shp, st, off = layout.expand(x._shape, x._strides, x._offset, tuple(shape))
    return Tensor(x._storage, shp, st, off)


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


def numpy_operand(v):
    """A NumPy scalar as the Python scalar PyTorch takes it for (np.floating -> float,
    np.integer -> int, np.bool_ -> float: PyTorch's arithmetic treats np.True_ as 1.0, so
    ``int_tensor * np.True_`` is float32 there too); anything else unchanged."""
    if isinstance(v, np.generic):
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, (np.floating, np.bool_)):
            return float(v)
    return v


def _array_operands(op, a, b):
    """``tensor OP ndarray`` (either side): PyTorch computes it through NumPy, so the result
    has NumPy's result type of the two; here the array is uploaded to the tensor's device as
    a tensor of that type and the tensor is cast to it (through ``to``: grads flow). A
    bfloat16 tensor, which NumPy lacks, promotes with the array's dtype as PyTorch's."""
    t, arr = (a, b) if isinstance(a, Tensor) else (b, a)
    try:
        if t.dtype is _BF16:  # (NumPy has no bfloat16, its np is the bits: PyTorch's promote)
            dt = dtypes.promote(_BF16, dtypes.from_numpy_dtype(arr.dtype))
        else:
            dt = dtypes.from_numpy_dtype(np.result_type(t.dtype.np, arr.dtype))
    except (TypeError, ValueError, KeyError):
        raise TypeError(f"{op}: expected a NumPy array of a clgrad dtype, got {arr.dtype}") \
            from None
    from clgrad.creation import tensor
    u = tensor(arr, dtype=dt, device=t._storage.device)
    t = to(t, dt)
    return (t, u) if isinstance(a, Tensor) else (u, t)


def _cpu_scalar_along(a: Tensor, b: Tensor):
    """PyTorch lets a 0-dim CPU tensor join a tensor on another device (``gpu_x * cpu_two``,
    and a 0-dim GPU one: nanoGPT's ``losses['val'] < best_val_loss`` after a resume with
    map_location='cuda'): such an operand is copied to the other's device (recorded, so grads
    flow back). Two CPU devices (PoCL and Intel's) are not joined: PyTorch has one CPU."""
    da, db = a._storage.device, b._storage.device
    if da is db:
        return a, b
    if a.ndim == 0 and da.type == "cpu" and (b.ndim > 0 or db.type != "cpu"):
        return to_device(a, db), b
    if b.ndim == 0 and db.type == "cpu" and (a.ndim > 0 or da.type != "cpu"):
        return a, to_device(b, da)
    return a, b


_PY_NUMBERS = frozenset({int, float, bool})


def _prep(op, a, b, floating=False):
    """Promote dtypes (``dtypes.result_type``: PyTorch's rules, 0-dim tensors and numbers
    included) and broadcast. Returns (a, b, dtype, shape), the tensors cast to dtype; scalars
    stay numbers. ``floating``: an integer or bool result type gives the default float dtype
    instead (true division), the operands cast to it directly (uint8 / int64 tensor(350) must
    not wrap 350 into uint8 first). NumPy scalars count as Python scalars, NumPy arrays as
    tensors (see _array_operands)."""
    if isinstance(a, Tensor):  # the common cases first: what the general path gives them
        sa = a._storage
        if isinstance(b, Tensor):
            sb = b._storage
            if sa.dtype is sb.dtype and sa.device is sb.device and \
                    (sa.dtype.is_floating_point or not floating):
                shape = a._shape if a._shape == b._shape else layout.broadcast_shapes(
                    a._shape, b._shape, op=op)
                return a, b, sa.dtype, shape
        elif type(b) in _PY_NUMBERS:
            dt = _floating(dtypes.scalar_dtype(sa.dtype, b), floating)
            return to(a, dt), b, dt, a._shape
    a, b = numpy_operand(a), numpy_operand(b)
    if isinstance(a, np.ndarray) != isinstance(b, np.ndarray) and \
            (isinstance(a, Tensor) or isinstance(b, Tensor)):
        a, b = _array_operands(op, a, b)
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{op}: expected at least one Tensor, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    for v in (a, b):
        if not isinstance(v, Tensor) and not _is_num(v):
            raise TypeError(f"{op}: expected a Tensor or a number, got {type(v).__name__}")
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        a, b = _cpu_scalar_along(a, b)
        same_device(op, a, b)
        dt = _floating(dtypes.result_type(a, b), floating)
        shape = layout.broadcast_shapes(a.shape, b.shape, op=op)
        return to(a, dt), to(b, dt), dt, shape
    dt = _floating(dtypes.result_type(a, b), floating)
    if isinstance(a, Tensor):
        return to(a, dt), b, dt, tuple(a.shape)
    return a, to(b, dt), dt, tuple(b.shape)


def result_type(tensor: Tensor | float, other: Tensor | float) -> dtypes.DType:
    """torch.result_type: the dtype ``tensor OP other`` computes in and returns (every binary
    op, comparison, where and clamp dispatches through ``dtypes.result_type``, which states
    the rules). Either may be a Python number (NumPy scalars count as such).

    Raises TypeError for an operand that is neither a Tensor nor a number."""
    return dtypes.result_type(numpy_operand(tensor), numpy_operand(other))


def _floating(dt, floating):
    """``dt``, or the default float dtype for an integer/bool ``dt`` when ``floating``."""
    return dtypes.get_default_dtype() if floating and not dt.is_floating_point else dt


def _launch_binary(kname, a, b, dt, shape, out_dtype=None, file=_FILE):
    """The BINARY kernel ``kname`` of ``file`` (elementwise.cl, or a family's file that
    includes it) over a and b (tensors or numbers: its _sa / _sb forms) -> a new tensor."""
    dev = a._storage.device if isinstance(a, Tensor) else b._storage.device
    out = empty(shape, out_dtype or dt, dev)
    d = defines_of(dt)
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        launch_1d(file, kname, d, out, (_operand(a, shape), _operand(b, shape)))
    elif isinstance(a, Tensor):
        launch_1d(file, kname + "_sb", d, out, (_operand(a, shape), scalar(dt, b, True)))
    else:
        launch_1d(file, kname + "_sa", d, out, (scalar(dt, a, True), _operand(b, shape)))
    return out


def _grads(a, b, ga, gb):
    """Reduce per-input gradients to the inputs' shapes (None for scalars)."""
    return _sum_back(_shape_of(a), _shape_of(b), ga, gb)


def _shape_of(v):
    """A Tensor operand's shape (what a backward closure keeps instead of the tensor), or
    None for a number."""
    return v._shape if isinstance(v, Tensor) else None


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

    Dtypes: dtypes.result_type(a, b); alpha is taken in it (bool: alpha 2 is True).
    Raises ValueError when shapes do not broadcast, TypeError for non-numeric operands,
    RuntimeError for a float alpha with an integer/bool result type or a bool alpha with a
    non-bool one (PyTorch's).
    """
    key = None
    if type(alpha) is int and alpha == 1 and isinstance(a, Tensor):
        out, key = _cached_binary("add", a, b)
        if out is not None:
            if isinstance(b, Tensor):
                return record("add", out, (a, b), _same_grads, double=True)
            return record("add", out, (a, None), _first_grad, double=True)
    given = a, b
    b = _alpha_scaled(a, b, alpha)
    a, b, dt, shape = _prep("add", a, b)
    one = type(alpha) is int and alpha == 1
    if dt is _BF16 or dt is _F16 and (_wide_0d(given) or not one and type(given[1]) is Tensor):
        # in float32, rounded once (PyTorch's opmath): bfloat16 always, float16 where a 0-dim
        # float tensor or alpha * b would be rounded to half first. The promoted operands (a
        # NumPy array or an integer tensor taken as the low dtype, as PyTorch); with an
        # alpha, the given ones (alpha * b then sums in float32)
        return low_via_float32(dt, add, *_opmath(given, (a, b))) if one else \
            low_via_float32(dt, add, *given, alpha=alpha)
    out = _launch_binary("add", a, b, dt, shape)
    if key is not None:
        _keep_flat(key, given, a, b, out)
    sa, sb = _shape_of(a), _shape_of(b)  # the closure keeps shapes, not the operands
    return record("add", out, _inputs(a, b), lambda g: _sum_back(sa, sb, g, g), double=True)


# The plan tags of the binary ops' fast paths: (file, kernel) of tensor OP tensor and of
# tensor OP number.
_TAGS = {k: ((_FILE, k), (_FILE, k + "_sb")) for k in ("add", "sub", "mul")}


def _cached_binary(kname, a, b):
    """The fast path of ``a kname b`` (a a Tensor, b a Tensor or a Python number) on a cached
    signature: ``(out, key)`` with out computed when ``plan.key(tag, (a, b))`` holds a plan,
    else ``(None, key)`` (``(None, None)`` for another kind of b). The key fixes shapes,
    dtypes, layouts and the number's type, and the plan is kept only for operands that the
    general path ran unchanged (_keep_flat: no promotion, no broadcast; two tensors of one
    shape in any layouts, or a dense tensor and a number), so a hit needs no checks: one
    allocation, bind, enqueue. Operands that cannot have a plan (other shapes, a strided
    tensor with a number) return ``(None, None)`` before any key is made."""
    dev = a._storage.device
    if isinstance(b, Tensor):  # same shapes, any layouts (the engine's gradient sums of views)
        if b._shape != a._shape:
            return None, None
        key = plan_key(_TAGS[kname][0], (a, b))
        plan = dev.plans.get(key) if b._storage.device is dev else None
        if plan is None:
            return None, key
        out = Tensor._empty(a._shape, a._storage.dtype, dev)
        plan.run(dev, out._storage.buffer, a._storage.buffer, b._storage.buffer)
        return out, key
    geo = _CONTIG.get(a._shape)
    if type(b) not in _PY_NUMBERS or geo is None or geo[1] != a._strides:
        return None, None  # (a number with a strided tensor: never planned, cheap misses)
    key = plan_key(_TAGS[kname][1], (a, b))
    plan = dev.plans.get(key)
    if plan is None:
        return None, key
    dt = a._storage.dtype
    out = Tensor._empty(a._shape, dt, dev)
    plan.run_with(dev, (out._storage.buffer, a._storage.buffer), (scalar(dt, b, True),))
    return out, key


def _same_grads(g):
    """The backward of a same-shape add: the gradient to both inputs."""
    return g, g


def _first_grad(g):
    """The backward of tensor + number (or - number): the gradient to the tensor."""
    return g, None


def _keep_flat(key, given, a, b, out):
    """Keep the plan of ``key``'s kernel (its tag: file, name) under ``key`` when the general
    path ran it on the operands ``given`` unchanged: no promotion, no broadcast, at least one
    element; the flat plan where every operand is dense like the fresh ``out``, else (two
    tensors) the strided plan launch_1d kept for their layouts."""
    if (a is not given[0] or b is not given[1] or a._shape != out._shape or
            not out.numel()):
        return
    dev = out._storage.device
    if isinstance(b, Tensor):
        if b._shape != out._shape:
            return
        if a._strides != out._strides or b._strides != out._strides:
            strided = dev.plans.get(plan_key(_FILE, (out, a, b), (
                key[0][1], _STRIDED, *defines_of(out._storage.dtype).items())))
            if strided is not None:
                dev.keep_plan(key, strided)
            return
    elif a._strides != out._strides:
        return
    else:
        b = scalar(out.dtype, b, True)  # (a sample: the plan binds each call's value)
    dev.keep_plan(key, flat_plan(dev, key[0][0], key[0][1], defines_of(out.dtype),
                                 out.numel(), out, (a, b), ()))


def _alpha_scaled(a, b, alpha):
    """``alpha * b`` for add/sub, alpha checked against (and taken in) the result type of a
    and b: PyTorch's alpha_check. A number b is scaled here (as PyTorch)."""
    if type(alpha) is int and alpha == 1:  # the default: nothing to check (host time)
        return b
    alpha = numpy_operand(alpha)
    a, b = numpy_operand(a), numpy_operand(b)
    dt = None
    if all(isinstance(v, Tensor) or _is_num(v) for v in (a, b)):
        dt = dtypes.result_type(a, b)
        if isinstance(alpha, bool) and not dt.is_bool:
            raise RuntimeError(f"Boolean alpha only supported for Boolean results, got alpha="
                               f"{alpha} with result type {dt}")
        if isinstance(alpha, float) and not dt.is_floating_point:
            raise RuntimeError(f"For integral input tensors, argument alpha must not be a "
                               f"floating point number, got alpha={alpha} with result type "
                               f"{dt}")
        if dt.is_bool:
            alpha = bool(alpha)
    if alpha == 1:
        return b
    if not _is_num(b):  # in the result type: float64 + alpha * bfloat16 is not rounded to
        if dt is not None and dt is not b.dtype and dt.is_floating_point and \
                dt is not _BF16 and dt is not _F16:  # bfloat16 first (PyTorch's)
            b = to(b, dt)
        return mul(b, alpha)
    return bool(b * alpha) if isinstance(b, bool) and isinstance(alpha, bool) else b * alpha


def _is_bool(v) -> bool:
    return v.dtype.is_bool if isinstance(v, Tensor) else isinstance(v, bool)


def _check_bool_sub(a, b):
    """PyTorch's sub_check: no subtraction with a bool operand (tensor or Python bool)."""
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def sub(a, b, alpha=1) -> Tensor:
    """``a - alpha * b`` with broadcasting (see add).

    Raises RuntimeError when either operand is a bool tensor or a Python bool (PyTorch's:
    use ``^``/logical_xor or ``~``/logical_not).
    """
    key = None  # (no plan is ever kept for bool operands: the general path refuses them)
    if type(alpha) is int and alpha == 1 and isinstance(a, Tensor):
        out, key = _cached_binary("sub", a, b)
        if out is not None:
            if isinstance(b, Tensor):
                return record("sub", out, (a, b), lambda g: (g, neg(g)), double=True)
            return record("sub", out, (a, None), _first_grad, double=True)
    _check_bool_sub(a, b)
    given = a, b
    b = _alpha_scaled(a, b, alpha)
    a, b, dt, shape = _prep("sub", a, b)
    one = type(alpha) is int and alpha == 1
    if dt is _BF16 or dt is _F16 and (_wide_0d(given) or not one and type(given[1]) is Tensor):
        # in float32, rounded once (PyTorch's opmath): bfloat16 always, float16 where a 0-dim
        # float tensor or alpha * b would be rounded to half first. The promoted operands (a
        # NumPy array or an integer tensor taken as the low dtype, as PyTorch); with an
        # alpha, the given ones (alpha * b then sums in float32)
        return low_via_float32(dt, sub, *_opmath(given, (a, b))) if one else \
            low_via_float32(dt, sub, *given, alpha=alpha)
    out = _launch_binary("sub", a, b, dt, shape)
    if key is not None:
        _keep_flat(key, given, a, b, out)
    sa, sb = _shape_of(a), _shape_of(b)
    return record("sub", out, _inputs(a, b), lambda g: _sum_back(sa, sb, g, neg(g)),
                  double=True)


def mul(a, b) -> Tensor:
    """Elementwise product with broadcasting. Grad: a, b."""
    out = key = None
    if isinstance(a, Tensor):
        out, key = _cached_binary("mul", a, b)
    if out is None:
        given = a, b
        a, b, dt, shape = _prep("mul", a, b)
        if dt is _BF16 or dt is _F16 and _wide_0d(given):  # (see add)
            return low_via_float32(dt, mul, *_opmath(given, (a, b)))
        out = _launch_binary("mul", a, b, dt, shape)
        if key is not None:
            _keep_flat(key, given, a, b, out)
    need_a = isinstance(a, Tensor) and a.requires_grad
    need_b = isinstance(b, Tensor) and b.requires_grad
    ka, kb = (a if need_b else None), (b if need_a else None)  # only what backward reads
    sa, sb = _shape_of(a), _shape_of(b)

    def backward(g):
        return _sum_back(sa, sb, mul(g, kb) if need_a else None, mul(g, ka) if need_b else None)
    return record("mul", out, _inputs(a, b), backward, saved=_needed(a, b), double=True)


def div(a, b, rounding_mode=None) -> Tensor:
    """Division with broadcasting: ``a / b`` (rounding_mode None), or rounded toward zero
    ('trunc') or toward -inf ('floor', Python's ``//``).

    Dtypes: dtypes.result_type of the operands; true division gives the default float dtype
    (get_default_dtype) for an integer or bool result type, the operands cast to it directly (uint8
    [100, 200] / int64 tensor(350) is [0.286, 0.571], as PyTorch); the rounding modes keep the
    promoted dtype and compute integers exactly in integer arithmetic (wrapping: int32 MIN //
    -1 is MIN), floats as PyTorch (floor: from fmod, consistent with remainder).
    Grad: a, b for true division; none through the rounding modes (their result is piecewise
    constant; PyTorch records a zero gradient).
    Raises: ValueError for another rounding_mode; RuntimeError "ZeroDivisionError" (also a
    ZeroDivisionError) for an integer division by zero; floats give inf/nan there (IEEE).
    TypeError for bool tensors with a rounding mode.
    """
    if rounding_mode not in (None, "trunc", "floor"):
        raise ValueError(f"div: expected rounding_mode None, 'trunc' or 'floor', got "
                         f"{rounding_mode!r}")
    given = a, b
    a, b, dt, shape = _prep("div", a, b, floating=rounding_mode is None)
    if dt is _BF16 or dt is _F16 and (_wide_0d(given) or rounding_mode is not None and any(
            not isinstance(g, Tensor) for g in given)):  # (see add)
        # float16's rounding modes with a number too: the half kernels round it to half
        # first (1.5 // 0.1 was 15 from 0.09998; Python's and PyTorch's 14)
        return low_via_float32(dt, div, *_opmath(given, (a, b)), rounding_mode=rounding_mode)
    if rounding_mode is not None:
        kname = "floor_divide" if rounding_mode == "floor" else "trunc_divide"
        return _divmod_op(kname, f"div_{rounding_mode}", a, b, dt, shape).detach()
    out = _launch_binary("div", a, b, dt, shape)

    need_a = isinstance(a, Tensor) and a.requires_grad
    need_b = isinstance(b, Tensor) and b.requires_grad
    ka = a if need_b else None  # the dividend (as PyTorch's; not the quotient), if read
    sa, sb = _shape_of(a), _shape_of(b)

    def backward(g):
        ga = div(g, b) if need_a else None
        gb = _div_grad_b(g, ka, b, dt, shape) if need_b else None
        return _sum_back(sa, sb, ga, gb)

    def double(g, node):  # -g a / b^2 of recording ops (create_graph)
        ga = div(g, b) if need_a else None
        gb = neg(div(mul(g, ka), mul(b, b))) if need_b else None
        return _sum_back(sa, sb, ga, gb)
    saved = [b] if isinstance(b, Tensor) else []
    if isinstance(ka, Tensor):
        saved.append(ka)
    return record("div", out, _inputs(a, b), backward, saved=saved, double=double)


def _div_grad_b(g, a, b, dt, shape):
    """The divisor's gradient of a / b: -g a / b^2 in one launch (kernels/elementwise.cl
    div_grad_b: float16's intermediates in float, the result rounded once); ``a`` a tensor or
    a number, ``b`` a tensor, both before broadcasting to ``shape``, g of that shape."""
    gb = empty(shape, dt, g._storage.device)
    g = _operand(g, shape)
    if isinstance(a, Tensor):
        launch_1d(_FILE, "div_grad_b", defines_of(dt), gb, (g, _operand(a, shape),
                                                            _operand(b, shape)))
    else:
        launch_1d(_FILE, "div_grad_b_sa", defines_of(dt), gb, (g, scalar(dt, a, True),
                                                               _operand(b, shape)))
    return gb


def divide(a, b, rounding_mode=None) -> Tensor:
    """Alias of div (PyTorch's ``torch.divide``)."""
    return div(a, b, rounding_mode=rounding_mode)


def true_divide(a, b) -> Tensor:
    """Alias of div without rounding (PyTorch's ``torch.true_divide``)."""
    return div(a, b)


def floor_divide(a, b) -> Tensor:
    """``a // b``: the quotient rounded toward -inf (Python's and PyTorch's ``//``); see div
    with rounding_mode='floor' for dtypes and errors."""
    return div(a, b, rounding_mode="floor")


def remainder(a, b) -> Tensor:
    """Python's ``a % b``: the remainder with the sign of the divisor (PyTorch's remainder).

    Integers: exact, in integer arithmetic. Floats: ``fmod(a, b)``, plus b where its sign
    differs from b's (PyTorch's formula: ``1 % inf`` is 1, ``-1 % inf`` inf); x % 0 is nan.
    Grad (float): d/da = 1, d/db = -floor(a / b) (PyTorch's).
    Raises: RuntimeError "ZeroDivisionError" (also a ZeroDivisionError) for an integer zero
    divisor; TypeError for bool tensors.
    """
    given = a, b
    a, b, dt, shape = _prep("remainder", a, b)
    if dt is _BF16:
        return via_float32(remainder, *_opmath(given, (a, b)))
    out = _divmod_op("remainder_op", "remainder", a, b, dt, shape)
    return _record_mod("remainder", "floor", out, a, b)


def fmod(a, b) -> Tensor:
    """C's fmod: the remainder of the division truncated toward zero, with the sign of the
    dividend (PyTorch's fmod). Integers exact; a float zero divisor gives nan.
    Grad (float): d/da = 1, d/db = -trunc(a / b) (PyTorch's).
    Raises: as remainder.
    """
    given = a, b
    a, b, dt, shape = _prep("fmod", a, b)
    if dt is _BF16:
        return via_float32(fmod, *_opmath(given, (a, b)))
    out = _divmod_op("fmod_op", "fmod", a, b, dt, shape)
    return _record_mod("fmod", "trunc", out, a, b)


def _record_mod(op, rounding, out, a, b):
    if not out.dtype.is_floating_point:
        return out
    need_b = isinstance(b, Tensor) and b.requires_grad
    sa, sb = _shape_of(a), _shape_of(b)

    def backward(g):
        gb = neg(mul(g, div(a, b, rounding_mode=rounding))) if need_b else None
        return _sum_back(sa, sb, g, gb)
    saved = [t for t in _inputs(a, b) if t is not None] if need_b else []
    return record(op, out, _inputs(a, b), backward, saved=saved, double=True)


def _divmod_op(kname, op, a, b, dt, shape):
    """Launch a rounding division or remainder kernel on prepared operands. Integer kernels
    flag a zero tensor divisor in a one-int buffer read back after the launch (a kernel cannot
    raise); a zero scalar divisor (after wrapping into dt, as PyTorch) raises before."""
    if dt.is_floating_point:
        return _launch_binary(kname, a, b, dt, shape)
    if dt.is_bool:
        raise TypeError(f'{op}: "{op}" not implemented for \'Bool\' tensors; convert them '
                        f'to an integer dtype first')
    if not isinstance(b, Tensor):
        if scalar(dt, b) == 0:
            raise IntegerZeroDivisionError(f"ZeroDivisionError: {op}: integer division by "
                                           f"zero (divisor {b!r} as {dt.name})")
        return _launch_binary(kname, a, b, dt, shape)
    dev = b._storage.device
    out = empty(shape, dt, dev)
    err = zeros((1,), dtypes.int32, dev)
    d = defines_for(dt)
    if isinstance(a, Tensor):
        launch_1d(_FILE, kname, d, out, (expand_to(a, shape), expand_to(b, shape)),
                  (err._storage.buffer,))
    else:
        launch_1d(_FILE, kname + "_sa", d, out, (scalar(dt, a, True), expand_to(b, shape)),
                  (err._storage.buffer,))
    if out.numel() and err.item():
        raise IntegerZeroDivisionError(f"ZeroDivisionError: {op}: integer division by zero "
                                       f"(a zero in the {dt.name} divisor)")
    return out


def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """``value`` where ``mask`` (bool, broadcast to x) is True, else x. Grad: x where not
    masked (and value, if a tensor).

    Dtypes: x's, always (PyTorch's): the value is cast to it, so an int64 x filled with 2.5
    holds 2, a uint8 x filled with -1 holds 255.
    Raises TypeError for a mask that is not a bool tensor or a value neither number nor
    Tensor; RuntimeError for a value tensor that is not 0-dim, a value (number, or tensor of
    another dtype: read back to check it) that does not fit x's dtype (uint8 300, an integer
    x with nan), or a mask that does not broadcast to x.
    """
    if not isinstance(mask, Tensor) or not mask.dtype.is_bool:
        raise TypeError(f"masked_fill: expected a bool mask tensor, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        if value.dtype is not x.dtype and not x.dtype.is_bool and (
                not x.dtype.is_floating_point or
                (x.dtype is dtypes.float32 and value.dtype is dtypes.float64)):
            # PyTorch checks that the value fits (one read of one element), where it can fail
            dtypes.check_fits("masked_fill", x.dtype, value.detach().item())
        value = to(value, x.dtype)
    elif _is_num(numpy_operand(value)):
        value = _scalar_tensor("masked_fill", numpy_operand(value), x.dtype, x._storage.device)
    else:
        raise TypeError(f"masked_fill: expected value to be a number or a Tensor, got "
                        f"{type(value).__name__}")
    out = where(mask, value, x)
    if tuple(out.shape) != tuple(x.shape):
        raise RuntimeError(f"masked_fill: mask of shape {tuple(mask.shape)} does not broadcast "
                           f"to the input's {tuple(x.shape)}")
    return out


def pow(a, b) -> Tensor:
    """``a ** b`` elementwise with broadcasting. Grad (float): d/da = b a^(b-1), 0 where
    b == 0; d/db = a^b log a, 0 where a == 0 and b >= 0 (PyTorch's masks: the gradients of
    x**0 and 0**t at 0 are 0).

    Integers (both operands integer): exact, by squaring, wrapping in the dtype as PyTorch's;
    a negative exponent tensor element gives 1 for a base of 1, +-1 for -1, else 0.
    Dtypes: dtypes.result_type (bool ** True is bool, bool ** 2 int64).
    Raises RuntimeError for an integer tensor to a negative Python int power ("Integers to
    negative integer powers are not allowed.", PyTorch's) or to one that does not fit the
    dtype; TypeError for a bool tensor exponent with a bool result type.
    """
    given = a, b
    a, b, dt, shape = _prep("pow", a, b)
    if dt is _BF16:
        return via_float32(pow, *_opmath(given, (a, b)))
    if not dt.is_floating_point:
        return _int_pow(a, b, dt, shape)
    if _is_num(b) and b == 2:
        out = _launch_unary("square", a)
        return record("pow", out, (a,), lambda g: (mul(g, mul(a, 2.0)),), saved=[a],
                      double=lambda g, node: (mul(g, mul(_pow1(a), 2.0)),))
    out = _launch_binary("pow_op", a, b, dt, shape)
    y = out.detach()  # not out: out -> Node -> closure -> out would be a reference cycle

    def backward(g, y=y):  # (create_graph: y, the output, re-attached to its Node)
        # PyTorch's masked formulas (pow_backward_self / pow_backward_exponent): the base gets
        # 0 where the exponent is 0 (not b * a^(b-1) = 0 * inf at a = 0), the exponent gets 0
        # where the base is 0 and the exponent >= 0 (not y * log 0 = 0 * -inf).
        ga = gb = None
        if isinstance(a, Tensor) and a.requires_grad:
            if isinstance(b, Tensor):
                ga = where(eq(b, 0), 0.0, mul(mul(g, b), pow(a, sub(b, 1))))
            elif b == 0:
                ga = zeros(g.shape, g.dtype, g._storage.device)
            else:
                ga = mul(mul(g, b), pow(a, b - 1))
        if isinstance(b, Tensor) and b.requires_grad:
            if isinstance(a, Tensor):
                zero_base = logical_and(eq(a, 0), ge(b, 0))
                gb = mul(g, where(zero_base, 0.0, mul(y, log(a))))
            elif a == 0:
                gb = mul(g, where(ge(b, 0), 0.0, mul(y, -math.inf)))
            else:
                gb = mul(mul(g, y), math.log(a) if a > 0 else math.nan)
        return _grads(a, b, ga, gb)
    saved = [t for t in _inputs(a, b) if t is not None] + [y]
    return record("pow", out, _inputs(a, b), backward, saved=saved,
                  double=lambda g, node: backward(g, output_of(node, y)))


def _pow1(a: Tensor) -> Tensor:
    """``a ** 1`` as PyTorch's pow_backward forms the gradient of ``a ** 2`` (grad * 2 *
    a.pow(1)), for create_graph (Node.double): a's values (an alias: no launch) under a "pow"
    Node whose gradient g * a.pow(0) reads a, so a Hessian of ``a ** 2`` requires grad under
    create_graph and differentiates to zeros (pow(a, 0)'s gradient), as PyTorch's."""
    out = Tensor(a._storage, a._shape, a._strides, a._offset)
    return record("pow", out, (a,), lambda g: (mul(g, pow(a, 0.0)),), saved=[a], double=True)


def _int_pow(a, b, dt, shape):
    if _is_num(b):
        if b < 0:
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if not dt.is_bool and b > int(np.iinfo(dt.np).max):
            raise RuntimeError(f"pow: value cannot be converted to type {dt.name} without "
                               f"overflow, got exponent {b}")
    if dt.is_bool:
        if isinstance(b, Tensor):
            raise TypeError("pow: \"pow\" not implemented for 'Bool' tensors; convert them to "
                            "an integer dtype first")
        # bool ** True is bool (PyTorch's result type): computed in int64, 0/1 stay 0/1
        return to(_launch_binary("ipow", to(a, dtypes.int64), b, dtypes.int64, shape), dt)
    return _launch_binary("ipow", a, b, dt, shape)


def _minmax(kname, op, a, b):
    given = a, b
    a, b, dt, shape = _prep(op, a, b)
    if dt is _BF16:
        return via_float32(_minmax, kname, op, *_opmath(given, (a, b)))
    out = _launch_binary(kname, a, b, dt, shape)

    def backward(g):
        # PyTorch's maximum/minimum: a side gets the gradient unless it loses; ties split it
        # evenly; where either is NaN (no order) both sides get it all.
        lose_a, lose_b = (lt, gt) if kname == "maximum" else (gt, lt)
        half_tie = mul(to(eq(a, b), dt), 0.5)
        wa = sub(sub(1.0, to(lose_a(a, b), dt)), half_tie)
        wb = sub(sub(1.0, to(lose_b(a, b), dt)), half_tie)
        return _grads(a, b, mul(g, wa), mul(g, wb))
    return record(op, out, _inputs(a, b), backward,
                  saved=[t for t in _inputs(a, b) if t is not None], double=True)


def maximum(a: Tensor, b: Tensor) -> Tensor:
    """Elementwise maximum with broadcasting; NaN in either operand gives NaN (PyTorch).

    Both operands are tensors (the face raises PyTorch's TypeError for a number: use clamp);
    internal callers may pass a number.
    Grad: ties send half the gradient to each side; at a NaN both sides get all of it.
    """
    return _minmax("maximum", "maximum", a, b)


def minimum(a: Tensor, b: Tensor) -> Tensor:
    """Elementwise minimum with broadcasting; NaN propagates and ties split as maximum."""
    return _minmax("minimum", "minimum", a, b)


def _compare(kname):
    def op(a, b) -> Tensor:
        a, b, dt, shape = _prep(kname, a, b)
        if dt is _BF16:  # (bfloat16 to float32 is exact: the order is the same)
            return via_float32(op, _bf16_number(a), _bf16_number(b))
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


# -- bitwise ops ------------------------------------------------------------------------------
def _bitwise(kname, op, a, b, bool_ok=True):
    a, b, dt, shape = _prep(op, a, b)
    if dt.is_floating_point or (dt.is_bool and not bool_ok):
        raise TypeError(f'{op}: "{op}" not implemented for \'{dtypes.torch_name(dt)}\' '
                        f'(expected integer{" or bool" if bool_ok else ""} tensors, got {dt})')
    return _launch_binary(kname, a, b, dt, shape)


def bitwise_and(a, b) -> Tensor:
    """``a & b`` bitwise on integers, logical on bool, with broadcasting and PyTorch's
    promotion (a Python int wraps into the tensor's dtype). Raises TypeError for floats."""
    return _bitwise("bitwise_and", "bitwise_and", a, b)


def bitwise_or(a, b) -> Tensor:
    """``a | b`` bitwise on integers, logical on bool (see bitwise_and)."""
    return _bitwise("bitwise_or", "bitwise_or", a, b)


def bitwise_xor(a, b) -> Tensor:
    """``a ^ b`` bitwise on integers, logical on bool (see bitwise_and)."""
    return _bitwise("bitwise_xor", "bitwise_xor", a, b)


def bitwise_left_shift(a, b) -> Tensor:
    """``a << b`` on integers, wrapping in the dtype; a count that is negative or not below
    the dtype's width gives 0 (PyTorch's). Raises TypeError for floats and bool tensors."""
    return _bitwise("lshift", "bitwise_left_shift", a, b, bool_ok=False)


def bitwise_right_shift(a, b) -> Tensor:
    """``a >> b`` on integers, arithmetic (sign-filling) for signed dtypes; a count that is
    negative or not below the width gives the sign fill, -1 or 0 (PyTorch's). Raises
    TypeError for floats and bool tensors."""
    return _bitwise("rshift", "bitwise_right_shift", a, b, bool_ok=False)


def bitwise_not(x: Tensor) -> Tensor:
    """``~x``: bitwise not on integers (uint8 0 -> 255), logical not on bool. Raises
    TypeError for floats (PyTorch's message)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"bitwise_not: expected a Tensor, got {type(x).__name__}")
    if x.dtype.is_floating_point:
        raise TypeError(f"bitwise_not: ~ (operator.invert) is only implemented on integer and "
                        f"Boolean-type tensors, got {x.dtype}")
    return _launch_unary("logical_not" if x.dtype.is_bool else "bitwise_not", x)


# -- unary ops --------------------------------------------------------------------------------
def _launch_unary(kname, x, dtype=None, file=_FILE):
    st = x._storage  # (the slots: no property calls)
    out = Tensor._empty(x._shape, st.dtype, st.device)
    launch_1d(file, kname, defines_of(st.dtype), out, (x,))
    return out


def _float_in(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    return x if x.dtype.is_floating_point else to(x, dtypes.get_default_dtype())


def _unary_float(kname, op, grad_of, uses="y", double=None):
    """An op on floats; ``grad_of(g, x, y)`` gives the input gradient, reading the input
    (``uses`` 'x') or the output ('y', passed as ``out.detach()``: the closure must not hold
    out itself, a reference cycle) — only that one is kept and saved, the other is None.
    ``double`` (create_graph, Node.double): None (the default) when grad_of is not
    differentiable (a raw kernel: create_graph through it raises), True when it is made of
    recording ops, or ``double(g, v)`` such a gradient, v the input ('x') or the output ('y',
    re-attached to its Node: graph.output_of)."""
    def f(x: Tensor) -> Tensor:
        x = _float_in(op, x)
        if x._storage.dtype is _BF16:
            return via_float32(f, x)
        out = _launch_unary(kname, x)
        if uses == "x":
            return record(op, out, (x,), lambda g: (grad_of(g, x, None),), saved=[x],
                          double=double if double is None or double is True else
                          lambda g, node: (double(g, x),))
        y = out.detach()
        return record(op, out, (x,), lambda g: (grad_of(g, None, y),), saved=[y],
                      double=None if again is None else
                      lambda g, node: (again(g, output_of(node, y)),))
    again = (lambda g, y: grad_of(g, None, y)) if double is True else double
    f.__name__ = op
    if uses == "y":  # the gradient reads the output only: op_ may write into self at once
        f.in_place = (lambda out, x: launch_1d(_FILE, kname, defines_of(x.dtype), out, (x,)),
                      lambda g, y: grad_of(g, None, y), again)
    return f


exp = _unary_float("exp_op", "exp", lambda g, x, y: mul(g, y), double=True)
log = _unary_float("log_op", "log", lambda g, x, y: div(g, x), "x", double=True)
sqrt = _unary_float("sqrt_op", "sqrt", lambda g, x, y: div(g, mul(y, 2.0)), double=True)
rsqrt = _unary_float("rsqrt_op", "rsqrt", lambda g, x, y: mul(g, mul(pow(y, 3), -0.5)), double=True)
sin = _unary_float("sin_op", "sin", lambda g, x, y: mul(g, cos(x)), "x", double=True)
cos = _unary_float("cos_op", "cos", lambda g, x, y: neg(mul(g, sin(x))), "x", double=True)
reciprocal = _unary_float("reciprocal", "reciprocal", lambda g, x, y: neg(mul(g, mul(y, y))),
                          double=True)
_square_float = _unary_float("square", "square", lambda g, x, y: mul(g, mul(x, 2.0)), "x",
                             double=lambda g, x: mul(g, mul(_pow1(x), 2.0)))  # (see _pow1)


def square(x: Tensor) -> Tensor:
    """x * x elementwise. Dtypes: floats keep theirs; integers keep theirs too, computed
    exactly and wrapping in the dtype (int8 12 -> -112), and bool gives int64 (PyTorch's
    ``pow(x, 2)``). Grad (float): 2x. Raises TypeError for a non-Tensor."""
    if isinstance(x, Tensor) and not x.dtype.is_floating_point:
        return pow(x, 2)
    return _square_float(x)


erf = _unary_float("erf_op", "erf", lambda g, x, y: mul(g, mul(exp(neg(mul(x, x))),
                                                                 2.0 / math.sqrt(math.pi))),
                   "x", double=True)
log1p = _unary_float("log1p_op", "log1p", lambda g, x, y: div(g, add(x, 1.0)), "x", double=True)
log1p.__doc__ = """log(1 + x) elementwise, accurate for |x| << 1 (where log(1 + x) rounds to 0).

    Dtypes: floats keep theirs, integers give the default dtype (PyTorch). Grad: g / (1 + x).
    Kernels: kernels/elementwise.cl :: log1p_op (OpenCL's log1p)
    """
expm1 = _unary_float("expm1_op", "expm1", lambda g, x, y: mul(g, add(y, 1.0)), double=True)
expm1.__doc__ = """exp(x) - 1 elementwise, accurate for |x| << 1 (where exp(x) - 1 cancels).

    Dtypes: floats keep theirs, integers give the default dtype (PyTorch). Grad: g * (out + 1).
    Kernels: kernels/elementwise.cl :: expm1_op (OpenCL's expm1)
    """


def atan2(input: Tensor | float, other: Tensor | float) -> Tensor:
    """The angle of the point (other, input): atan2(input, other) elementwise, in [-pi, pi],
    with broadcasting (PyTorch's torch.atan2 / arctan2; NumPy's arctan2). Either may be a
    Python number (PyTorch requires Tensors).

    Dtypes:  promoted as for div: integers give the default dtype (cast directly, see div)
    Grad:    input: g * other * r; other: g * -input * r with r = 1 / (input^2 + other^2),
             and r = 0 where input^2 + other^2 is 0 (so both are 0 at the origin: PyTorch's)
    Raises:  TypeError for an operand that is neither (PyTorch's message, from the public
             entry); ValueError when the shapes do not broadcast
    Kernels: kernels/elementwise.cl :: atan2_op
    """
    a, b, dt, shape = _prep("atan2", input, other, floating=True)
    if dt is _BF16:
        return via_float32(atan2, *_opmath((input, other), (a, b)))
    out = _launch_binary("atan2_op", a, b, dt, shape)
    need_a = isinstance(a, Tensor) and a.requires_grad
    need_b = isinstance(b, Tensor) and b.requires_grad
    sa, sb = _shape_of(a), _shape_of(b)

    def backward(g):
        r2 = add(mul(a, a), mul(b, b))
        recip = where(eq(r2, 0), 0.0, reciprocal(r2))  # 0 at the origin (PyTorch's)
        ga = mul(mul(g, b), recip) if need_a else None
        gb = mul(mul(g, neg(a)), recip) if need_b else None
        return _sum_back(sa, sb, ga, gb)
    return record("atan2", out, _inputs(a, b), backward,
                  saved=[t for t in _inputs(a, b) if t is not None], double=True)


arctan2 = atan2


def _binary_grad(kname, g, y):
    st = g._storage  # (the slots, the shared defines: no property or copy calls)
    out = Tensor._empty(g._shape, st.dtype, st.device)
    launch_1d(_FILE, kname, defines_of(st.dtype), out, (g, y))
    return out


tanh = _unary_float("tanh_op", "tanh", lambda g, x, y: _binary_grad("tanh_grad", g, y),
                    double=lambda g, y: mul(g, sub(1.0, mul(y, y))))
sigmoid = _unary_float("sigmoid", "sigmoid", lambda g, x, y: _binary_grad("sigmoid_grad", g, y),
                       double=lambda g, y: mul(g, mul(y, sub(1.0, y))))


def relu(x: Tensor) -> Tensor:
    """max(x, 0) elementwise; NaN stays NaN. The gradient is 0 at x <= 0 and passes at NaN
    (PyTorch's threshold_backward). Dtypes: floating and integer, kept.

    Raises RuntimeError for a bool tensor (PyTorch's "Boolean inputs not supported for
    relu")."""
    dt = x._storage.dtype  # (the slot: a call less)
    if not dt.is_floating_point:
        if dt.is_bool:
            raise RuntimeError("Boolean inputs not supported for relu")
        return _launch_unary("relu", x)
    if dt is _BF16:
        return via_float32(relu, x)
    out = _launch_unary("relu", x)
    y = out.detach()  # not out: out -> Node -> closure -> out would be a reference cycle
    record("relu", out, (x,), lambda g: (_binary_grad("relu_grad", g, y),), saved=[y],
           double=(lambda g, node: (where(le(y, 0), 0.0, g),), _LINK_X, True))
    fn = x._grad_fn  # (the call only where x's Node has a fuse: a batch norm's)
    if fn is not None and fn.fuse is not None and out._grad_fn is not None and absorbable(x):
        out._grad_fn.fuse = "relu"  # a batch norm's backward may take relu's (graph._absorb)
    return out


# relu_ writes into self at once (its gradient reads the output: clgrad.ops.inplace)
relu.in_place = (lambda out, x: launch_1d(_FILE, "relu", defines_of(x.dtype), out, (x,)),
                 lambda g, y: _binary_grad("relu_grad", g, y),
                 lambda g, y: where(le(y, 0), 0.0, g), True)  # True: linked (as relu)


def neg(x: Tensor) -> Tensor:
    """-x elementwise. Raises RuntimeError for a bool tensor (PyTorch's: use ``~``)."""
    if x.dtype.is_bool:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    if x._storage.dtype is _BF16:
        return via_float32(neg, x)
    out = _launch_unary("neg", x)
    return record("neg", out, (x,), lambda g: (neg(g),), double=True)


def abs(x: Tensor) -> Tensor:
    """|x| elementwise; gradient sign(x) (0 at 0).

    Raises:  NotImplementedError for a bool tensor (PyTorch's message)
    """
    if x.dtype.is_bool:
        kind = "cuda" if x._storage.device.kind == "gpu" else "cpu"
        raise NotImplementedError(f"\"abs_{kind}\" not implemented for 'Bool'")
    if x._storage.dtype is _BF16:
        return via_float32(abs, x)
    out = _launch_unary("abs_op", x)
    return record("abs", out, (x,), lambda g: (mul(g, sign(x)),), saved=[x], double=True)


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1 elementwise, of x's dtype. Grad: zero (PyTorch's SignBackward0), so a
    float input keeps its graph and receives zeros."""
    if x._storage.dtype is _BF16:
        return via_float32(sign, x)
    out = _launch_unary("sign_op", x)
    if not x.dtype.is_floating_point:
        return out
    return record_zero_grad("sign", out, (x,))


def record_zero_grad(name: str, out: Tensor, inputs) -> Tensor:
    """``out`` recorded as ``name`` of ``inputs`` (tensors or None) with zero gradients: a
    piecewise-constant op (a count, an identity power), whose result PyTorch marks
    requires_grad when an input does, so a loss through it alone can backward."""
    metas = [None if t is None else (t._shape, t._storage.dtype, t._storage.device)
             for t in inputs]
    return record(name, out, tuple(inputs),
                  lambda g: tuple(None if m is None else zeros(*m) for m in metas), double=True)


def _piecewise_constant(kname, op):
    """floor, ceil, round, trunc: float results record a zero gradient (as PyTorch's, so a
    result of a tensor that requires grad requires grad too); an integer tensor gives a copy
    of itself; bool raises NotImplementedError (PyTorch's message)."""
    def f(x: Tensor) -> Tensor:
        if x._storage.dtype is _BF16:
            return via_float32(f, x)
        if not x.dtype.is_floating_point:
            if x.dtype.is_bool:
                kind = "cuda" if x._storage.device.kind == "gpu" else "cpu"
                raise NotImplementedError(f'"{op}_vml_{kind}" not implemented for \'Bool\'')
            return clone(x)  # integers are their own floor: a copy, never x itself (PyTorch's)
        return record_zero_grad(op, _launch_unary(kname, _float_in(op, x)), (x,))
    f.__name__ = op
    f.__doc__ = (f"Elementwise {op}. Grad: zero (piecewise constant; recorded, as PyTorch's, "
                 f"so a result of a tensor that requires grad requires grad too). An integer "
                 f"tensor gives a copy of itself; bool raises NotImplementedError (PyTorch's).")
    return f


floor = _piecewise_constant("floor_op", "floor")
ceil = _piecewise_constant("ceil_op", "ceil")
_round = _piecewise_constant("round_op", "round")


def round(x: Tensor, decimals: int = 0) -> Tensor:
    """Round half to even (PyTorch's torch.round); ``decimals``: to that many decimal
    places, ``round(x * 10**decimals) / 10**decimals`` (PyTorch's formula; negative decimals
    round to tens, hundreds ...). Grad: zero (recorded). An integer tensor gives a copy.
    Raises TypeError for a non-int decimals; RuntimeError for decimals with an integer
    tensor (PyTorch's round.decimals takes floating tensors)."""
    if type(decimals) is not int:
        raise TypeError(f"round(): argument 'decimals' must be int, not "
                        f"{type(decimals).__name__}")
    if decimals == 0:
        return _round(x)
    if isinstance(x, Tensor) and not x.dtype.is_floating_point:
        raise RuntimeError(f"round: decimals={decimals} needs a floating tensor, got {x.dtype}")
    scale = 10.0 ** decimals
    return div(_round(mul(x, scale)), scale)


def where(cond: Tensor, a, b) -> Tensor:
    """``a`` where ``cond`` else ``b``, with broadcasting of all three. Grad: a, b.

    Dtypes: ``dtypes.result_type(a, b)`` (PyTorch's: a 0-dim tensor or a number lifts only the
    kind; where(c, 1, 0) is int64, where(c, 1.0, 0) the default dtype, float32 unless set);
    cond bool (or uint8, nonzero meaning True: PyTorch's deprecated form).
    Raises TypeError for a cond that is not a Tensor or an a/b neither Tensor nor number;
    RuntimeError for a cond of another dtype (PyTorch's message), a number that does not
    fit the result dtype (int8 with 300), or tensors of two devices (a 0-dim one on a CPU
    device joins the others', as PyTorch).
    """
    if not isinstance(cond, Tensor):
        raise TypeError(f"where: expected condition to be a Tensor, got {type(cond).__name__}")
    if not cond.dtype.is_bool and cond.dtype is not dtypes.uint8:  # uint8: PyTorch's legacy
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {dtypes.torch_name(cond.dtype)}")
    a, b = numpy_operand(a), numpy_operand(b)
    for v in (a, b):
        if not isinstance(v, Tensor) and not _is_num(v):
            raise TypeError(f"where: expected a Tensor or a number, got {type(v).__name__}")
    dt = dtypes.result_type(a, b)
    if dt is _BF16:  # a and b as bfloat16 (numbers too: on cond's device), then in float32:
        a, b = (to(v, dt) if isinstance(v, Tensor) else  # (where of integers and numbers
                _scalar_tensor("where", v, dt, cond._storage.device)  # promotes to it again)
                for v in (a, b))
        return via_float32(where, cond, a, b)
    ts = [v for v in (a, b, cond) if isinstance(v, Tensor)]
    one_device("where", ts)  # before any launch; a 0-dim tensor on a CPU device joins (torch)
    dev = next((t._storage.device for t in ts if t._shape or t._storage.device.type != "cpu"),
               ts[0]._storage.device)
    a, b = (to_device(to(v, dt), dev) if isinstance(v, Tensor) else
            _scalar_tensor("where", v, dt, dev) for v in (a, b))
    cond = to(to_device(cond, dev), dtypes.bool_)
    shape = layout.broadcast_shapes(cond.shape, a.shape, b.shape, op="where")
    out = empty(shape, dt, a._storage.device)
    launch_1d(_FILE, "where_op", defines_for(dt), out,
              (_operand(cond, shape), _operand(a, shape), _operand(b, shape)))

    sa = tuple(a.shape) if a.requires_grad else None  # shapes, not the operands
    sb = tuple(b.shape) if b.requires_grad else None

    def backward(g):
        z = full((), 0, g.dtype, g._storage.device)
        return (None,) + _sum_back(sa, sb, where(cond, g, z) if sa is not None else None,
                                   where(cond, z, g) if sb is not None else None)
    return record("where", out, (None, a, b), backward, saved=[cond], double=True)


def _zeros_scalar(like: Tensor) -> Tensor:
    """A 0-d zero of ``like``'s dtype and device (a stride-0 source for where/expand)."""
    return zeros((), like.dtype, like._storage.device)


def _scalar_tensor(op, value, dt, device) -> Tensor:
    """The number ``value`` as a 0-d tensor of the result dtype ``dt``. Raises RuntimeError
    when it does not fit dt (dtypes.check_fits)."""
    dtypes.check_fits(op, dt, value)
    return full((), value, dt, device)


def clamp(x: Tensor, min=None, max=None) -> Tensor:
    """Clamp to [min, max] (either may be None; numbers or tensors). Grad passes inside.

    A NaN input, or a NaN bound, gives NaN (PyTorch); min > max gives max.
    Dtypes: ``dtypes.result_type(x, min, max)`` (PyTorch's): an integer x with a float bound
    gives the default dtype (so ``clamp_`` of it raises, as any in-place op whose result
    cannot be cast back); a 0-dim tensor bound lifts only the kind.
    Grad (PyTorch's clamp): x where min <= x <= max (so not at a NaN); a tensor min where
    x < min < max; a tensor max where x > max or max < min.
    Raises ValueError when both bounds are None; RuntimeError for a number bound that does not
    fit the result dtype (uint8 max=300, float16 max=70000.0: dtypes.check_fits); TypeError
    for a bool tensor with bool number bounds (PyTorch has no such kernel; tensor bounds
    work).
    """
    if min is None and max is None:
        raise ValueError("clamp: expected at least one of min and max, got neither")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensors(x, min, max)
    x = to(x, dtypes.result_type(x, min, max))
    if x.dtype.is_bool:
        raise TypeError("clamp: \"clamp\" not implemented for 'Bool' with number bounds "
                        f"(PyTorch's), got min={min!r}, max={max!r}; use tensor bounds")
    for v in (min, max):  # PyTorch: uint8 max=300 raises, float16 max=70000.0 too
        if v is not None:
            dtypes.check_fits("clamp", x.dtype, v)
    if x._storage.dtype is _BF16:  # (x as bfloat16: an integer given promotes to it again)
        return via_float32(clamp, x, min, max)
    lo = scalar(x.dtype, 0 if min is None else min)
    hi = scalar(x.dtype, 0 if max is None else max)
    flags = (lo, hi, _i32(min is not None), _i32(max is not None))
    out = empty(x.shape, x.dtype, x._storage.device)
    launch_1d(_FILE, "clamp_op", defines_for(x.dtype), out, (x,), flags)

    def backward(g):
        gi = empty(g.shape, g.dtype, g._storage.device)
        launch_1d(_FILE, "clamp_grad", defines_for(g.dtype), gi, (g, x), flags)
        return (gi,)

    def double(g, node):  # g where min <= x <= max (not at a NaN): recording ops
        inside = ge(x, min) if min is not None else None
        if max is not None:
            inside = le(x, max) if inside is None else logical_and(inside, le(x, max))
        return (where(inside, g, 0.0),)
    return record("clamp", out, (x,), backward, saved=[x], double=double)


def _clamp_tensors(x, lo, hi):
    """clamp with at least one tensor bound: maximum then minimum forward (NaN propagates),
    PyTorch's clamp_backward / clamp_backward_min_max for the gradients."""
    dt = dtypes.result_type(x, lo, hi)
    x, lo, hi = (to(v, dt) if isinstance(v, Tensor) else v for v in (x, lo, hi))
    if dt is _BF16:
        return via_float32(_clamp_tensors, x, lo, hi)
    with autograd.no_grad():
        out = x
        if lo is not None:
            out = maximum(out, lo)
        if hi is not None:
            out = minimum(out, hi)
    shapes = tuple(_shape_of(v) for v in (x, lo, hi))

    def backward(g):
        zero = zeros((), g.dtype, g._storage.device)
        inside = ge(x, lo) if lo is not None else None
        if hi is not None:
            inside = le(x, hi) if inside is None else logical_and(inside, le(x, hi))
        gx = sum_to(where(inside, g, zero), shapes[0])
        glo = ghi = None
        if isinstance(lo, Tensor) and lo.requires_grad:
            cond = lt(x, lo) if hi is None else logical_and(lt(x, lo), lt(lo, hi))
            glo = sum_to(where(cond, g, zero), shapes[1])
        if isinstance(hi, Tensor) and hi.requires_grad:
            cond = gt(x, hi) if lo is None else logical_or(gt(x, hi), lt(hi, lo))
            ghi = sum_to(where(cond, g, zero), shapes[2])
        return gx, glo, ghi
    saved = [v for v in (x, lo, hi) if isinstance(v, Tensor)]
    return record("clamp", out, tuple(v if isinstance(v, Tensor) else None
                                      for v in (x, lo, hi)), backward, saved=saved, double=True)


def _i32(v):
    import numpy as np
    return np.int32(1 if v else 0)


def axpby_(out: Tensor, a: Tensor, alpha, b: Tensor, beta):
    """out = alpha*a + beta*b in one launch, written into ``out`` (no autograd; optimizers).
    A bfloat16 ``out`` is computed in float32 and rounded once into it."""
    if out._storage.dtype is _BF16:
        tmp = empty(out.shape, _F32, out._storage.device)
        axpby_(tmp, to(a.detach(), _F32), alpha, to(b.detach(), _F32), beta)
        copy_raw(out, tmp)
        bump_version(out)
        return out
    d = defines_for(out.dtype)
    launch_1d(_FILE, "axpby", d, out, (expand_to(a, out.shape), scalar(out.dtype, alpha),
                                       expand_to(b, out.shape), scalar(out.dtype, beta)))
    bump_version(out)
    return out
