"""Helpers shared by the ops modules: argument packing, output allocation, 1-D launches."""
from __future__ import annotations

import operator
import struct

import numpy as np
import pyopencl as cl

from clgrad.kernel_structs import MAXD, SHAPE_T, VIEW_T, longs
from clgrad import dtypes, layout
from clgrad._device import of_runtime
from clgrad.ops import plan as _plan
from clgrad.ops.plan import Plan, key as plan_key
from clgrad.runtime.device import arg_kind as _arg_kind
from clgrad.tensor import _CONTIG, Tensor

_plan._TENSOR = Tensor  # (plan.key's common case, bound from above: plan imports no Tensor)
LOCAL = 256  # one work-group size for 1-D launches: PoCL compiles once per size
_VIEW_T = struct.Struct(f"<{longs(VIEW_T)}q")    # view_t: offset, strides[MAXD]
_SHAPE_T = struct.Struct(f"<{longs(SHAPE_T)}q")  # shape_t: n[MAXD]
_ZEROS = (0,) * MAXD
_LONG = struct.Struct("<q").pack
_INT = struct.Struct("<i").pack
_DEFINES: dict = {}
_ONE_DIM = _INT(1)
_FLAT_VIEW_0 = _VIEW_T.pack(0, 1, *_ZEROS[1:])
_LOCAL = (LOCAL,)
_BUFFER = operator.attrgetter("_storage.buffer")  # a tensor's buffer (a C call)
_BF16 = dtypes.bfloat16


def empty(shape, dtype, device) -> Tensor:
    """A fresh contiguous root tensor (uninitialised) of ``shape`` (a tuple or an int)."""
    return Tensor._empty((shape,) if isinstance(shape, int) else shape, dtype, device)


def full(shape, value, dtype, device) -> Tensor:
    """A fresh contiguous root tensor filled with ``value``; no autograd."""
    t = empty(shape, dtype, device)
    fill_raw(t, value)
    return t


def zeros(shape, dtype, device) -> Tensor:
    """A fresh contiguous root tensor of zeros; no autograd."""
    return full(shape, 0, dtype, device)


def copy_raw(dst: Tensor, src: Tensor):
    """Copy ``src`` (same shape, any dtype, any view) into the view ``dst``; no autograd.

    On a CPU device a strided copy (a transposed or narrowed view made contiguous, cat's
    writes into a slice, an expand) runs kernels/copy.cl's copy_runs (see ``_copy_runs``);
    otherwise, and for dense copies, the one-element-per-work-item copy through launch_1d."""
    same_device("copy_", dst, src)
    dst._storage.host = None  # written: a host copy (Storage.keep_host) is stale
    sdt, ddt = src._storage.dtype, dst._storage.dtype
    d = {"S": sdt.cl, "D": ddt.cl}
    if ddt.is_bool:
        d["D_IS_BOOL"] = 1
    elif ddt.cl == "uchar" and sdt.is_floating_point:  # uint8 through int64 (copy.cl)
        d["D_VIA_LONG"] = 1
    if sdt is _BF16 or ddt is _BF16:  # (kernels/bf16.h)
        d["BF16"] = 1
        if sdt is _BF16:
            d["S_BF16"] = 1
        if ddt is _BF16:
            d["D_BF16"] = 1
    dev = dst._storage.device
    if dev.kind == "cpu" and (dst._strides != src._strides or
                              not layout.is_contiguous(dst._shape, dst._strides)):
        if layout.numel(dst._shape):
            _copy_runs(dev, d, dst, src)
        return
    launch_1d("copy.cl", "copy", d, dst, (src,))


COPY_RUN = 2048  # elements per work item of copy_runs (a row is split or rows are grouped)


def copy_run_geometry(shape) -> tuple:
    """(rows, inner, rpw, run, nrun, work items) of kernels/copy.cl's run_span over a collapsed
    shape: rows of ``inner`` elements (its last dim); a row longer than COPY_RUN is split into
    nrun runs of ``run`` elements, shorter rows are grouped rpw to a work item."""
    inner = shape[-1]
    rows = layout.numel(shape) // inner
    run = min(inner, COPY_RUN)
    nrun = -(-inner // run)
    rpw = max(1, COPY_RUN // inner) if nrun == 1 else 1
    return rows, inner, rpw, run, nrun, -(-rows // rpw) * nrun


def _copy_runs(dev, defines, dst, src):
    """The strided copy of a CPU device: kernels/copy.cl's copy_runs over the collapsed
    geometry, each work item (a work-group of one) copying about COPY_RUN elements as runs
    along the last dim, offsets computed once per run. On the CPU runtimes the one-element
    copy spent its time in per-element index arithmetic and per-work-group costs: the
    8x116x16x16 channel shuffle (a transposed view made contiguous) took 0.74 ms on Intel's
    runtime and 2.8 ms on PoCL, 0.06-0.15 ms this way. Not for GPUs: a work item walking its
    own run would not coalesce there."""
    shape, (so, sa) = layout.collapse(dst._shape, dst._strides, src._strides)
    if len(shape) > MAXD:
        raise RuntimeError(f"copy_: tensors of more than {MAXD} non-mergeable dims are "
                           f"not supported, got shape {tuple(dst.shape)}")
    rows, inner, rpw, run, nrun, total = copy_run_geometry(shape)
    d = dict(defines, RUNS=len(shape))
    if so[-1] == 1 and sa[-1] == 1:
        d["UNIT"] = 1
    dev.launch(dev.kernel("copy.cl", "copy_runs", d), (total,), (1,), _LONG(total),
               _LONG(rows), _LONG(inner), _LONG(rpw), _LONG(run), _LONG(nrun),
               shape_arg(shape), dst._storage.buffer, view_arg(dst, so), src._storage.buffer,
               view_arg(src, sa))


def fill_raw(dst: Tensor, value):
    """Write ``value`` into every element of the view ``dst``; no autograd, no version bump."""
    dst._storage.host = None  # written: a host copy (Storage.keep_host) is stale
    if dst._storage.dtype is _BF16:  # the value's bits, filled as ushort
        launch_1d("elementwise.cl", "fill", _BF16_FILL, dst, (),
                  (dtypes.to_bf16_bits(float(value))[()],))
        return
    launch_1d("elementwise.cl", "fill", defines_for(dst.dtype), dst, (),
              (scalar(dst.dtype, value),))


_BF16_FILL = {"T": "ushort", "BF16": 1}  # fill_raw's bfloat16 build: a pure store of bits


def bump_version(*tensors: Tensor):
    """Count one in-place write into each tensor's storage (autograd compares the counter with
    what it saw when a Node saved the tensor). Every writer that changes what a tensor holds
    calls this once per write: copy_raw and fill_raw do not. A tensor with a counter of its
    own (``_vc``: ``.data`` and its views) counts the write there and in ``Storage.hidden``,
    so tensors on the storage's counter do not see it (PyTorch's ``.data``)."""
    for t in tensors:
        s = t._storage
        s.version += 1
        vc = t._vc
        if vc is not None:
            vc[0] += 1
            s.hidden += 1


def view_arg(t: Tensor, strides=None) -> bytes:
    """The by-value ``view_t`` of ``t`` (offset, strides padded to MAXD), packed as bytes."""
    st = t._strides if strides is None else strides
    return _VIEW_T.pack(t._offset, *st, *_ZEROS[len(st):])


def shape_arg(shape) -> bytes:
    """The by-value ``shape_t``, packed as bytes."""
    return _SHAPE_T.pack(*shape, *_ZEROS[len(shape):])


def scalar(dtype: dtypes.DType, value, opmath: bool = False):
    """A Python number as the NumPy scalar a kernel argument of ``dtype`` needs. ``opmath``:
    the number of a kernels/elementwise.cl tensor-number kernel (``*_sa``, ``*_sb``: its
    SCALAR_T), float32 for float16, where add, sub, mul and div compute with it in float
    (PyTorch's opmath: a float16 x / 70000. is 1.43e-05, where a float16 divisor would be
    inf) and the other ops round it to float16 in the kernel."""
    if opmath and dtype is dtypes.float16:
        return np.float32(value)
    if dtype.is_bool:
        return np.uint8(bool(value))
    if dtype.itemsize < 8 and not dtype.is_floating_point and isinstance(value, (int, np.integer)):
        return np.int64(value).astype(dtype.np)  # wraps around, as PyTorch's x + 300 on uint8
    return dtype.np.type(value)


def same_device(op: str, *tensors):
    """Raise RuntimeError when tensors live on different devices."""
    dev = None
    for t in tensors:
        if isinstance(t, Tensor):
            if dev is None:
                dev = t._storage.device
            elif t._storage.device is not dev:
                devs = {id(x._storage.device): x._storage.device
                        for x in tensors if isinstance(x, Tensor)}
                names = " and ".join(f"{of_runtime(d)} ({d.name})" for d in devs.values())
                raise RuntimeError(f"{op}: expected all tensors on the same device, but found "
                                   f"at least two devices, {names}; move them with .to()")


def one_device(op: str, args, kwargs=None):
    """Raise ``same_device``'s RuntimeError, before anything runs, when the tensors of a call
    (``args`` and the values of ``kwargs``) live on different devices. As PyTorch, a 0-dim
    tensor on a CPU device may join tensors of another device (``gpu_x * cpu_two``: the
    elementwise ops copy it over; ops that cannot take it check it themselves); ``out`` (or
    each of a tuple of outs) is never exempt. The faces' argument check
    (``check_tensor_args``) and ``inplace`` call it at every entry."""
    dev = None
    for v in args:  # a plain loop: no Python call per argument (the hot path of every op)
        if isinstance(v, Tensor):
            d = v._storage.device
            if d is not dev and (v._shape or d.type != "cpu"):
                if dev is not None:
                    same_device(op, *_joined(args, kwargs))
                dev = d
    if kwargs:
        for k, v in kwargs.items():
            if isinstance(v, Tensor):
                d = v._storage.device
                if d is not dev and (v._shape or d.type != "cpu" or k == "out"):
                    if dev is not None:
                        same_device(op, *_joined(args, kwargs))
                    dev = d
            elif k == "out" and isinstance(v, (list, tuple)):
                for o in v:
                    if isinstance(o, Tensor):
                        if dev is None:
                            dev = o._storage.device
                        elif o._storage.device is not dev:
                            same_device(op, *_joined(args, kwargs))


def _joined(args, kwargs):
    """The tensors of a call that must share one device (see ``one_device``)."""
    for v in args:
        if isinstance(v, Tensor) and (v._shape or v._storage.device.type != "cpu"):
            yield v
    if kwargs:
        for k, v in kwargs.items():
            if k == "out":
                yield from (o for o in (v if isinstance(v, (list, tuple)) else (v,))
                            if isinstance(o, Tensor))
            elif isinstance(v, Tensor) and (v._shape or v._storage.device.type != "cpu"):
                yield v


def launch_items(file: str, name: str, x, total: int, *args):
    """Launch kernel ``name`` of ``kernels/<file>`` (built for x's dtype, on x's device) over
    ``total`` work items in groups of LOCAL, passing ``np.int64(total)`` then ``args``;
    nothing for total 0 (a kernel per output element: upsample, grid_sample)."""
    if total == 0:
        return
    dev = x._storage.device
    dev.launch(dev.kernel(file, name, defines_for(x.dtype)), (total,), (LOCAL,),
               np.int64(total), *args)


def defines_for(dtype: dtypes.DType) -> dict:
    """Defines selecting a kernel file's element type (a new dict: callers may add to it)."""
    return dict(defines_of(dtype))


def defines_of(dtype: dtypes.DType) -> dict:
    """defines_for's dict itself, shared: for callers that pass it on unchanged (launch_1d
    copies before adding). Never modify it."""
    d = _DEFINES.get(dtype)
    if d is None:
        d = {"T": dtype.cl}
        if dtype.is_floating_point:
            d["IS_FLOAT"] = 1
        if dtype is dtypes.float16:  # float16 sums in float (ACC: matmul.cl's GEMM_TILED,
            d["ACC"] = "float"      # pool.cl, conv_im2col_any.cl's col2im), and computes with
            d["SCALAR_T"] = "float"  # a number in float (elementwise.cl: scalar's opmath)
            d["OPM"] = "float"  # elementwise/activation.cl compute in float, round once
        flag = {"double": "IS_DOUBLE", "long": "IS_LONG", "int": "IS_INT"}.get(dtype.cl)
        if flag:
            d[flag] = 1
        if dtype.is_bool:  # (uchar like uint8: kernels that must keep 0/1 read it)
            d["IS_BOOL"] = 1
        _DEFINES[dtype] = d
    return d


# Kernel files whose launch_1d kernels index every operand by the element index alone: they
# get a CONTIG build (unit-stride indexing, see kernels/common.h) when all operands are dense.
_CONTIG_FILES = frozenset({"elementwise.cl", "copy.cl", "index.cl", "optim.cl",
                           "activation.cl"})
_ROWS_FILES = frozenset({"elementwise.cl", "copy.cl"})  # kernels common.h's ROWS2D serves
ROWS_WG = 256  # work items of a ROWS2D work-group, at most


def rows_group(inner: int, rows: int) -> tuple:
    """The work-group (w0, w1) of a ROWS2D launch over ``rows`` rows of ``inner`` elements
    (kernels/common.h): w0 the power of two covering ``inner`` (at most ROWS_WG; the last
    group of a row is padded, the kernels check ``i < n``), w1 the largest power of two that
    divides ``rows`` with w0 * w1 <= ROWS_WG (dim 1 is not padded: the kernels do not check
    it). Groups of one 16-float row took most of a strided copy's time on the CPU runtimes
    (per-group cost: 8x116x16x16 channel shuffle 0.74 ms on Intel's, 2.8 ms on PoCL)."""
    w0 = min(ROWS_WG, 1 << (inner - 1).bit_length())
    w1 = min(ROWS_WG // w0, rows & -rows)
    return w0, w1


def launch_1d(file: str, name: str, defines: dict, out: Tensor, operands, extra=()):
    """Launch an elementwise-style kernel over ``out.shape``.

    ``operands``: tensors already broadcast to ``out.shape`` (stride-0 views allowed), or
    ``(raw_scalar,)`` entries passed through in place. Dims are collapsed first, so contiguous
    operands are indexed as 1-D.
    """
    shape, ost = out._shape, out._strides
    geo = _CONTIG.get(shape)
    if geo is not None and geo[1] == ost:  # contiguous (the geometry of a fresh result)
        n, flat = geo[2], True
    else:
        n, flat = layout.numel(shape), layout.is_contiguous(shape, ost)
    if n == 0:
        return
    for o in operands:
        if flat and isinstance(o, Tensor) and o._strides != ost:
            flat = False
    dev = out._storage.device
    if flat:  # the common case: every operand contiguous like the output, indexed as 1-D
        # The plan (ops/plan.py: kernel, global size, the by-value arguments of the layout)
        # per the operands' layouts (a raw operand: its type), kernel and defines; buffers and
        # raw values are bound per call.
        k = plan_key(file, (out, *operands, *extra), (name, *defines.items()))
        plan = dev.plans.get(k)
        if plan is None:
            plan = dev.keep_plan(k, flat_plan(dev, file, name, defines, n, out, operands,
                                               extra))
        kinds = plan.data
        if kinds is None:  # tensors only
            plan.run(dev, out._storage.buffer, *map(_BUFFER, operands))
            return
        mem, val = [out._storage.buffer], []
        for o, kind in zip((*operands, *extra), kinds):
            if kind is None:
                mem.append(o._storage.buffer)
            elif kind == 0:
                mem.append(o)
            elif kind == 1:
                val.append(o)
            else:
                return _launch_args(dev, plan.kernel, n, out, operands, extra)
        plan.run_with(dev, mem, val)
        return
    tens = []  # (a loop, not a comprehension: no Python frame)
    for o in operands:
        if isinstance(o, Tensor):
            tens.append(o)
    # Tensors only (no raw operand or extra argument, whose values a plan would fix): the
    # strided launch is a Plan too, keyed as the flat one (the layouts decide flat or not)
    planned = not extra and len(tens) == len(operands)
    if planned:
        k = plan_key(file, (out, *operands), (name, _STRIDED, *defines.items()))
        plan = dev.plans.get(k)
        if plan is not None:
            plan.run(dev, out._storage.buffer, *map(_BUFFER, operands))
            return
    shape, strides = layout.collapse(out._shape, ost, *[t._strides for t in tens])
    if len(shape) > MAXD:
        raise RuntimeError(f"{name}: tensors of more than {MAXD} non-mergeable dims are "
                           f"not supported, got shape {tuple(out.shape)}")
    rows = len(shape) >= 2 and file in _ROWS_FILES  # see common.h's ROWS2D
    args = [_LONG(shape[-1] if rows else n), _INT(len(shape)), shape_arg(shape),
            out._storage.buffer, view_arg(out, strides[0])]
    k_ = 1
    for o in operands:
        if isinstance(o, Tensor):
            args += (o._storage.buffer, view_arg(o, strides[k_]))
            k_ += 1
        else:
            args.append(o)
    args += extra
    if rows:
        inner = shape[-1]
        kernel = dev.kernel(file, name, dict(defines, ROWS2D=len(shape)))
        gsize, lsize = (inner, n // inner), rows_group(inner, n // inner)
    else:
        kernel, gsize, lsize = dev.kernel(file, name, defines), (n,), (LOCAL,)
    if not planned:
        dev.launch(kernel, gsize, lsize, *args)
        return
    val, mem_at = [], []
    for i, a in enumerate(args):  # the buffers bound per call, the layout's arguments fixed
        if _arg_kind(a) == 0:
            mem_at.append(i)
        else:
            val += (i, a)
    plan = dev.keep_plan(k, Plan(kernel, gsize, lsize, val, mem_at))
    plan.run(dev, out._storage.buffer, *map(_BUFFER, operands))


_STRIDED = "strided"  # launch_1d's plan key of a strided launch (params: after the kernel)


def launch_1d_kept(k, file: str, name: str, defines: dict, out: Tensor, operands, extra=()):
    """``launch_1d(file, name, defines, out, operands, extra)`` for a caller that keys the
    launch itself (the optimizers, once per parameter and step): ``k`` is its plan.key of
    ``out`` and the tensor ``operands``, with whatever else fixes the launch (the kernel, the
    defines and the types of the by-value ``extra`` arguments, e.g. through the dtype). A hit
    binds the buffers and ``extra`` and enqueues; the first call runs launch_1d and keeps its
    flat plan under ``k`` (False where launch_1d made none: a strided layout, or raw
    arguments not all by value; launch_1d then runs each time)."""
    dev = out._storage.device
    plan = dev.plans.get(k)
    if plan:
        plan.run_with(dev, (out._storage.buffer, *map(_BUFFER, operands)), extra)
        return
    launch_1d(file, name, defines, out, operands, extra)
    if plan is None:
        flat = dev.plans.get(plan_key(file, (out, *operands, *extra), (name, *defines.items())))
        n = len(operands)
        ok = (flat is not None and flat.data is not None and
              flat.data[:n] == (None,) * n and flat.data[n:] == (1,) * len(extra))
        dev.keep_plan(k, flat if ok else False)


def flat_plan(dev, file, name, defines, n, out, operands, extra) -> Plan:
    """The Plan of a flat launch_1d (see there): the layout's by-value arguments fixed, the
    buffers (out, the tensor operands, raw buffers) and raw by-value operands bound per call;
    ``data``: None for tensors only, else per operand None (a tensor) or its ``arg_kind``."""
    if file in _CONTIG_FILES:
        defines = dict(defines, CONTIG=1)
    gsize = n
    if (dev.kind == "gpu" and n >= X4_MIN and file in _CONTIG_FILES
            and name + "_x4" in _kernel_names(dev, file, defines)):
        name, gsize = name + "_x4", -(-n // 4)  # (elementwise.cl: four elements per item)
    val = [0, _LONG(n), 1, _ONE_DIM, 2, _SHAPE_T.pack(n, *_ZEROS[1:]), 4, _flat_view(out)]
    mem_at, val_at, kinds = [3], [], []
    i = 5
    for o in (*operands, *extra):
        if isinstance(o, Tensor):
            mem_at.append(i)
            val += (i + 1, _flat_view(o))
            kinds.append(None)
            i += 2
        else:
            kind = _arg_kind(o)
            (mem_at if kind == 0 else val_at).append(i)
            kinds.append(kind)
            i += 1
    return Plan(dev.kernel(file, name, defines), (gsize,), _LOCAL, val, mem_at, val_at,
                None if all(k is None for k in kinds) else tuple(kinds))


# GPUs: flat launches of at least X4_MIN elements take the kernel's <name>_x4 form where its
# file has one (kernels/elementwise.cl's UNARY / BINARY ops in CONTIG builds).
X4_MIN = 1 << 16
_NAMES: dict = {}  # (device, file, defines) -> the names of the kernels its program holds


def _kernel_names(dev, file, defines) -> frozenset:
    key = (dev, file, *defines.items())
    got = _NAMES.get(key)
    if got is None:
        prg = dev.program(file, defines)
        got = _NAMES[key] = frozenset(
            n for n in prg.get_info(cl.program_info.KERNEL_NAMES).split(";") if n)
    return got


def _launch_args(dev, kernel, n, out, operands, extra):
    """A flat launch_1d through Device.launch: for raw arguments launch_split does not take."""
    args = [_LONG(n), _ONE_DIM, _SHAPE_T.pack(n, *_ZEROS[1:]), out._storage.buffer,
            _flat_view(out)]
    for o in operands:
        if isinstance(o, Tensor):
            args += (o._storage.buffer, _flat_view(o))
        else:
            args.append(o)
    dev.launch(kernel, (n,), (LOCAL,), *args, *extra)


def _flat_view(t: Tensor) -> bytes:
    """view_t of a tensor indexed as 1-D with stride 1 (packed once for offset 0)."""
    return _FLAT_VIEW_0 if t._offset == 0 else _VIEW_T.pack(t._offset, 1, *_ZEROS[1:])


# -- argument types at the public entry points ------------------------------------------------
_ABSENT = object()
_OPTIONAL = frozenset({"Tensor | None", "None | Tensor", "Optional[Tensor]"})
_NUMBER_OK = frozenset({"Tensor | float", "float | Tensor"})  # a Tensor or a Python number
# PyTorch's names for clgrad's parameter names: the default rule (x, a -> input; b -> other;
# cond -> condition; probs -> input) and, per face and op, where PyTorch names a parameter
# otherwise (the ops of the op table: their rows' ``torch_names``, passed in by the faces).
_TORCH_NAME = {"x": "input", "a": "input", "b": "other", "cond": "condition", "probs": "input"}
_TORCH_NAME_OF = {("clgrad.linalg", "vector_norm", "x"): "x",
                  ("clgrad.linalg", "matrix_norm", "x"): "A", ("clgrad.linalg", "norm", "x"): "A"}
# Public ops whose tensors may live on different devices: they compute nothing from them, or
# (ctc_loss's targets and lengths, which PyTorch takes on the CPU for CUDA log_probs) read
# all but one of them on the host.
# (index_put and index_put_ check their own: ATen's masked-fill dispatch lets a one-element CPU
# value join a GPU x, indexing._masked_fill_value)
_ANY_DEVICES = frozenset({"result_type", "ctc_loss", "index_put", "index_put_"})
# Unannotated parameters of these names take a Tensor or a number (add(a, b), where(cond, a, b)).
_TENSOR_OR_NUMBER = frozenset({"a", "b"})


def tensor_params(fn, module: str = "", torch_names=None) -> list:
    """The checked parameters of a public op: ``[(position, PyTorch's name, kind)]``, kind
    'tensor' (a Tensor), 'optional' (a Tensor or None), 'number' (a Tensor or a number) or
    'tensors' (a sequence of Tensors). Read from the signature: parameters annotated ``Tensor``
    (``| None``, or a None default: optional), unannotated ``a``/``b`` or annotated
    ``Tensor | float`` (number), ``tensors``. ``torch_names``: ``{(op, parameter): PyTorch's
    name}`` where it is not the default rule's."""
    import inspect
    op = fn.__name__
    out = []
    for i, (name, p) in enumerate(inspect.signature(fn).parameters.items()):
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            continue
        ann = p.annotation if isinstance(p.annotation, str) else getattr(
            p.annotation, "__name__", "")
        if ann == "Tensor" or ann in _OPTIONAL:
            kind = "optional" if ann in _OPTIONAL or p.default is None else "tensor"
        elif (p.annotation is p.empty and name in _TENSOR_OR_NUMBER) or ann in _NUMBER_OK:
            kind = "number"
        elif name == "tensors":
            kind = "tensors"
        else:
            continue
        pos = i if p.kind != p.KEYWORD_ONLY else 1 << 30
        torch_name = _TORCH_NAME_OF.get((module, op, name)) or (torch_names or {}).get(
            (op, name)) or _TORCH_NAME.get(name, name)
        out.append((pos, name, torch_name, kind))
    return out


def check_tensor_args(namespace: dict, module: str, method_of=None, torch_names=None):
    """Make every op in a public namespace raise PyTorch's TypeError for a non-Tensor argument.

    ``namespace`` is the globals() of a public module (clgrad, clgrad.nn.functional,
    clgrad.linalg); each function defined in clgrad.ops.*, clgrad.creation or ``module`` with
    checked parameters (see ``tensor_params``) is replaced there by a wrapper that checks
    them before the op runs and raises PyTorch's message with PyTorch's parameter name,
    ``relu(): argument 'input' (position 1) must be Tensor, not numpy.ndarray``, and
    PyTorch's RuntimeError for tensors of two devices (``one_device``). With
    ``method_of`` (a class), ``namespace`` is that class's method table: the first parameter
    is self, not checked, and positions count from the one after it (``x.add(arr)``: argument
    'other' (position 1)). ``torch_names``: PyTorch's parameter names where they differ from
    the rule, ``{(op, parameter): name}`` (``registry.torch_names()``). Internal calls go to
    the ops modules directly, so only the public entry pays the check. Call it last in a face
    module, after every import.
    """
    done = {}
    for key, fn in list(namespace.items()):
        if not callable(fn) or not hasattr(fn, "__code__") or key.startswith("_"):
            continue
        if getattr(fn, "__wrapped_checks__", None) is not None:
            continue  # already a checked wrapper
        if not (fn.__module__.startswith(("clgrad.ops.", "clgrad.creation")) or
                fn.__module__ == module):
            continue
        if id(fn) not in done:
            done[id(fn)] = _checked(fn, module, method_of is not None, torch_names)
        if method_of is not None:
            setattr(method_of, key, done[id(fn)])
        else:
            namespace[key] = done[id(fn)]


def _type_name(v) -> str:
    t = type(v)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _numpy_names(op, numpy_names, kwargs):
    for a, b in numpy_names:
        if a in kwargs:
            if b in kwargs:
                raise TypeError(f"{op}(): got both '{b}' and its alias '{a}'")
            kwargs[b] = kwargs.pop(a)


# the reductions whose Tensor methods take NumPy's axis=/keepdims= (see _checked)
_NUMPY_STYLE = frozenset((
    "sum", "mean", "prod", "max", "min", "argmax", "argmin", "amax", "amin", "aminmax",
    "std", "var", "all", "any", "logsumexp", "norm", "median", "nanmedian", "nansum",
    "nanmean", "cumsum", "cumprod", "count_nonzero", "softmax", "log_softmax", "mode",
    "quantile", "nanquantile", "std_mean", "var_mean"))


# PyTorch 2.x's deprecated overloads taking the scalar first, still accepted with a
# UserWarning: add(Number alpha, Tensor other), sub(...), addcmul(Number value, Tensor tensor1,
# Tensor tensor2), addcdiv(...) (old optimizers: p.data.add_(-lr, grad))
_SCALAR_FIRST = {"add": ("other", "alpha"), "sub": ("other", "alpha"),
                 "addcmul": ("tensor1", "tensor2", "value"),
                 "addcdiv": ("tensor1", "tensor2", "value")}


def scalar_first(op: str, args: tuple) -> tuple:
    """``args`` (the operands after input/self) of ``op`` (``add``, ``add_``, ``addcmul`` ...)
    in the current order: a number first followed by the tensor operand(s) is PyTorch's
    deprecated overload, moved to the end (alpha / value) with PyTorch's UserWarning; any
    other ``args`` unchanged."""
    names = _SCALAR_FIRST.get(op.rstrip("_"))
    if names is None or len(args) != len(names) or isinstance(args[0], Tensor) or \
            isinstance(args[0], bool) or not _number(args[0]) or \
            not all(isinstance(a, Tensor) for a in args[1:]):
        return args
    import warnings
    *ts, num = names
    warnings.warn(f"This overload of {op} is deprecated:\n\t{op}(Number {num}, "
                  + ", ".join(f"Tensor {t}" for t in ts) + ")\nConsider using one of the "
                  f"following signatures instead:\n\t{op}("
                  + ", ".join(f"Tensor {t}" for t in ts) + f", *, Number {num} = 1)",
                  UserWarning, stacklevel=3)
    return (*args[1:], args[0])


def _number(v) -> bool:
    import numbers
    return isinstance(v, (numbers.Number, np.generic))


def _checked(fn, module, method=False, torch_names=None):
    import functools
    import numbers
    shift = 1 if method else 0
    checks = [(pos - shift, name, torch_name, kind) for pos, name, torch_name, kind
              in tensor_params(fn, module, torch_names) if not (method and pos == 0)]
    import inspect
    params = inspect.signature(fn).parameters
    # PyTorch's argument parser takes NumPy's names for dim and keepdim (x.sum(axis=1,
    # keepdims=True), d2l.ai's style) in every op that has them
    numpy_names = tuple((a, b) for a, b in (("axis", "dim"), ("keepdims", "keepdim"))
                        if b in params and a not in params)
    if not checks:
        if not (method and numpy_names and fn.__name__ in _NUMPY_STYLE):
            return fn
        # a reduction's Tensor method checking nothing (x.argmax(axis=1), x.sum(axis=0,
        # keepdims=True): NumPy's spelling, d2l.ai's): renames only. Not every method with a
        # dim (x.unsqueeze): internal code calls those, and each wrapper is a Python call more
        # per op (tests/test_op_calls)

        @functools.wraps(fn)
        def renaming(*args, **kwargs):
            if kwargs:
                _numpy_names(fn.__name__, numpy_names, kwargs)
            return fn(*args, **kwargs)
        renaming.__module__ = module
        return renaming
    op = fn.__name__
    any_device = op in _ANY_DEVICES
    scalar_first_op = op in _SCALAR_FIRST

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if scalar_first_op and not kwargs:
            args = (*args[:1], *scalar_first(op, args[1:]))
        if kwargs and numpy_names:
            _numpy_names(op, numpy_names, kwargs)
        n = len(args) - shift
        for pos, name, torch_name, kind in checks:
            v = args[pos + shift] if pos < n else kwargs.get(name, _ABSENT)
            if v is _ABSENT or isinstance(v, Tensor):
                continue
            where = f" (position {pos + 1})" if pos < n else ""
            if kind == "tensors":
                if isinstance(v, (list, tuple)):
                    continue  # element checks: the op's own
                raise TypeError(f"{op}(): argument '{torch_name}'{where} must be tuple of "
                                f"Tensors, not {_type_name(v)}")
            if (kind == "optional" and v is None) or (
                    kind == "number" and isinstance(v, numbers.Number)):
                continue
            raise TypeError(f"{op}(): argument '{torch_name}'{where} must be Tensor, not "
                            f"{_type_name(v)}")
        if not any_device:
            one_device(op, args, kwargs)  # tensors of two devices: before anything runs
        return fn(*args, **kwargs)
    wrapper.__module__ = module  # pickle finds the wrapper under its public name
    wrapper.__wrapped_checks__ = checks
    return wrapper


def row_geometry(op: str, d: int, shape, *tensors):
    """The kept ("outer") dims of a per-row op along ``d``, collapsed over ``tensors`` (each
    of ``shape`` except along d): ``(outer shape, [outer strides of each tensor])``, at most
    MAXD dims. Raises RuntimeError beyond that."""
    outer = [i for i in range(len(shape)) if i != d]
    o_shape, strides = layout.collapse([shape[i] for i in outer] or [1],
                                       *[[t._strides[i] for i in outer] or [0]
                                         for t in tensors])
    if len(o_shape) > MAXD:
        raise RuntimeError(f"{op}: tensors of more than {MAXD} non-mergeable dims are not "
                           f"supported, got shape {tuple(shape)}")
    return o_shape, strides
