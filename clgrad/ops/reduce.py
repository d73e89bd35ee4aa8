"""Reductions over any set of dims of any strided view, and the ops built on them.

Kernels: kernels/reduce.cl :: reduce (OP_SUM, OP_PROD, OP_MAX, OP_MIN; ARG for indices),
scatter_arg (the backward of max/min along a dim: the gradient goes to the index returned).
Sums are Kahan-compensated per work item and then summed as a tree, so a float32 sum of
62 500 copies of 1.23456 is 77160.0 to float32 precision. Forms (picked per layout and device
in _reduce_plan; ops/plan.py Plans in the device's plans): ``reduce`` (a work-group, or a work item,
per output), ``reduce_runs`` (CPU sums along rows of the innermost reduced dim) and
``reduce_cols`` (sums over dims strided wider than a run of neighbouring outputs, such as
``x.sum(0)`` or a Linear bias gradient: neighbouring work items read neighbouring outputs).
"""
from __future__ import annotations

import builtins
import math
from collections import namedtuple

import numpy as np

from clgrad import creation, dtypes, layout
from clgrad.autograd import record
from clgrad.errors import IndexRangeError
from clgrad.ops import elementwise as ew
from clgrad.ops import index as ix
from clgrad.ops import scan as sc
from clgrad.ops import views as vw
from clgrad.ops._util import MAXD, empty, shape_arg, view_arg, zeros
from clgrad.ops.plan import Plan, key as plan_key
from clgrad.tensor import Tensor

__all__ = ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var",
           "std", "logsumexp", "normalize", "any", "all"]

_FILE = "reduce.cl"
_BF16 = dtypes.bfloat16  # computed in float32 and rounded once (ew.via_float32), before any
#                          define or _CL_SCALAR is taken from its storage type (ushort)
MinMax = namedtuple("MinMax", ["values", "indices"])
# OpenCL C type -> the NumPy scalar type of its size, for by-value kernel arguments of type ACC
# (a half passed as a 4-byte float is refused: clSetKernelArg INVALID_ARG_SIZE).
_CL_SCALAR = {d.cl: d.np.type for d in (dtypes.float16, dtypes.float32, dtypes.float64,
                                         dtypes.int64, dtypes.int32, dtypes.int16, dtypes.int8,
                                         dtypes.uint8)}


def _dims(x: Tensor, dim, op: str):
    if dim is None:
        return tuple(range(x.ndim))
    dd = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)  # wrap_dim checks types
    if not dd:
        return tuple(range(x.ndim))
    if not x.ndim:  # a 0-dim x takes dim 0 and -1 (PyTorch's): a reduction over no dims
        if len(set(layout.wrap_dim(d, 1, op) for d in dd)) != len(dd):
            raise RuntimeError(f"{op}: dim {dd} appears multiple times in the list of dims")
        return ()
    return tuple(sorted(layout.wrap_dims(dd, x.ndim, op)))


def _check_keepdim(keepdim, op: str = "reduction"):
    """keepdim must be a bool (PyTorch's TypeError: ``x.sum(1, torch.float64)`` does not take
    the dtype, keyword-only, as keepdim)."""
    if not isinstance(keepdim, (bool, np.bool_)):
        raise TypeError(f"{op}: argument 'keepdim' must be bool, not {type(keepdim).__name__} "
                        f"(got {keepdim!r}; dtype is keyword-only)")


def _out_shapes(x, dims, keepdim):
    if keepdim is not False and keepdim is not True:  # (the common bools: no call)
        _check_keepdim(keepdim)
    kept = tuple(1 if i in dims else s for i, s in enumerate(x.shape))
    final = kept if keepdim else tuple(s for i, s in enumerate(x.shape) if i not in dims)
    return kept, final


def _split(x_shape, strides, dims):
    outer = [i for i in range(len(x_shape)) if i not in dims]
    return ([x_shape[i] for i in outer], [strides[i] for i in outer],
            [x_shape[i] for i in dims], [strides[i] for i in dims])


def _launch_reduce(x: Tensor, dims, keepdim, op_define, out_dtype, acc_cl, scale=1.0,
                   arg=False, out=None, divide=False):
    """The reduction of x over ``dims`` (times ``scale``, or divided by it with ``divide``)
    into a fresh tensor, or into the view ``out`` of the kept shape (the reduced dims as 1s)
    when given."""
    kept, final = _out_shapes(x, dims, keepdim)
    dev = x._storage.device
    given = out is not None
    if not given:
        out = empty(kept, out_dtype, dev)
    idx = empty(kept, dtypes.int64, dev) if arg else out
    if layout.numel(kept):
        # the launch (ops/plan.py), in the device's plans per everything it depends on
        key = plan_key(_FILE, (x, out), (dims, op_define, divide, out_dtype, acc_cl, arg, COLS,
                                         COLS_VW, COLS_NV, COLS_ITEMS, COLS_CB, COLS_GPU,
                                         SPLIT_FORCE, SPLIT_MIN))
        plan = dev.plans.get(key)
        if plan is None:
            plan = _reduce_plan(dev, x, dims, kept, op_define, out_dtype, acc_cl, arg, out, idx,
                                divide)
            if plan is not _CONTIGUOUS:
                plan = _split_plan(*plan) if len(plan) == 4 else _parts_plan(*plan)
            plan = dev.keep_plan(key, plan)
        if plan is _CONTIGUOUS:
            return _launch_reduce(ew.contiguous(x), dims, keepdim, op_define, out_dtype,
                                  acc_cl, scale, arg, out if given else None, divide)
        if plan.kernel is None:  # split: the parts into a workspace, then the parts reduced
            parts, combine, n_ws = plan.data
            ws = empty((n_ws,), _ACC_DTYPE[acc_cl], dev)
            parts.run(dev, x._storage.buffer, ws._storage.buffer, ws._storage.buffer)
            combine.run_with(dev, (ws._storage.buffer, out._storage.buffer,
                                   out._storage.buffer), (_CL_SCALAR[acc_cl](scale),))
        else:
        # x, out and idx (out itself without ARG, where the kernel takes one); ACC by value,
        # its exact size (half: 2)
            plan.run_with(dev, (x._storage.buffer, out._storage.buffer, idx._storage.buffer)
                          if len(plan.mem) == 6 else (x._storage.buffer, out._storage.buffer),
                          (_CL_SCALAR[acc_cl](scale),))
    if given:
        return out
    out = out.view(final) if final != kept else out
    if arg:
        return out, (idx.view(final) if final != kept else idx)
    return out


# the operands' places in a _reduce_plan's arguments, filled at each launch
_X, _OUT, _IDX, _SCALE = "x", "out", "idx", "scale"
_CONTIGUOUS = "contiguous"  # the plan of a view with too many dims: made contiguous first


def _split_plan(kernel, gsize, lsize, args) -> Plan:
    """A _reduce_plan as a Plan: the by-value arguments fixed, x, out (and idx with ARG)
    bound per call, and the scale given per call."""
    val, at = [], {}
    for i, a in enumerate(args):
        if type(a) is str:
            at[a] = i
        else:
            val += (i, a)
    mem_at = (at[_X], at[_OUT]) + ((at[_IDX],) if _IDX in at else ())
    return Plan(kernel, gsize, lsize, val, mem_at, (at[_SCALE],))


# GPUs: a reduction of few outputs over many elements (x.sum() of a large tensor: one
# work-group per output left one compute unit busy, 20 GB/s on an H200) runs over S
# work-groups per output (S chosen by _parts), partial results (ACC) in a workspace of
# no * S, then `reduce` over the parts (two launches, a fixed order: deterministic). From
# SPLIT_MIN reduced elements, for fewer than 2 work-groups per compute unit.
SPLIT_MIN = 1 << 16
SPLIT_MAX = 1024
SPLIT_FORCE = None  # tests: S on any device, for every reduction _parts may split
_ACC_DTYPE = {"float": dtypes.float32, "double": dtypes.float64, "long": dtypes.int64}


def _parts(dev, no, ni, wg, arg, acc_cl) -> int:
    """S, the work-groups per output of a split reduction (1: none). At least wg elements
    and (S - 1)^2 < ni per chunk's count, so no chunk is empty (max/min start from an element
    seen); about 4 work-groups per compute unit in all."""
    if arg or acc_cl not in _ACC_DTYPE:
        return 1
    if SPLIT_FORCE is not None:
        return builtins.max(1, builtins.min(SPLIT_FORCE, ni // wg, math.isqrt(ni)))
    if dev.kind != "gpu" or ni < SPLIT_MIN or no >= 2 * dev.compute_units:
        return 1
    s = builtins.min(SPLIT_MAX, -(-4 * dev.compute_units // no), ni // (4 * wg),
                     math.isqrt(ni))  # (the module's own min is the op)
    return s if s > 1 else 1


def _parts_plan(parts_args, combine_args, n_ws) -> Plan:
    """The Plan of a split reduction (no kernel of its own): ``data`` = (the parts' Plan,
    binding x and the workspace (twice: out and the unused idx_out); the combining Plan,
    binding the workspace and out (twice, likewise), the scale per call; the workspace's
    element count)."""
    k1, g1, l1, a1 = parts_args
    at = {a: i for i, a in enumerate(a1) if type(a) is str}
    parts = Plan(k1, g1, l1, [v for i, a in enumerate(a1) if type(a) is not str
                              for v in (i, a)], (at[_X], at[_OUT], at[_IDX]))
    return Plan(None, (), None, data=(parts, _split_plan(*combine_args), n_ws))


def _reduce_plan(dev, x, dims, kept, op_define, out_dtype, acc_cl, arg, out, idx,
                 divide=False):
    """(kernel, global size, local size, arguments with _X/_OUT/_IDX/_SCALE in the operands'
    places) of a reduction of x over dims into out (and idx: ARG), or _CONTIGUOUS."""
    no, ni = layout.numel(kept), layout.numel([x.shape[d] for d in dims])
    o_shape, xo_st, i_shape, xi_st = _split(x.shape, x._strides, dims)
    out_o = _split(kept, out._strides, dims)[1]
    idx_o = _split(kept, idx._strides, dims)[1]
    o_shape, (xo_st, out_o, idx_o) = layout.collapse(o_shape, xo_st, out_o, idx_o)
    i_shape, (xi_st,) = layout.collapse(i_shape or [1], xi_st or [0])
    if len(o_shape) > MAXD or len(i_shape) > MAXD:
        return _CONTIGUOUS
    # a work-group per output, or (few reduced elements) a work item per output
    wg = 1 if ni <= 8 else 32 if ni <= 2048 else 256
    d = {"T": x.dtype.cl, "ACC": acc_cl, "OUT": out_dtype.cl, op_define: 1, "WG": wg}
    if arg:
        d["ARG"] = 1
    if divide:
        d["DIV_SCALE"] = 1
    if acc_cl in ("float", "double", "half"):
        d["ACC_FLOAT"] = 1
    vx_outer = view_arg(x, xo_st)
    vx_inner = np.zeros(MAXD + 1, dtype=np.int64)
    vx_inner[1:1 + len(xi_st)] = xi_st
    vout = np.zeros(MAXD + 1, dtype=np.int64)
    vout[0], vout[1:1 + len(out_o)] = out._offset, out_o  # (a given out: any offset)
    vidx = np.zeros(MAXD + 1, dtype=np.int64)
    vidx[0], vidx[1:1 + len(idx_o)] = idx._offset, idx_o
    cols = (_cols_defines(dev, x.dtype, o_shape, xo_st, i_shape, xi_st, ni)
            if op_define == "OP_SUM" and not arg else None)
    if cols is not None:
        d.update(cols)
        return _cols_plan(dev, d, o_shape, xo_st, x._offset, vout, out_o, ni, i_shape, xi_st)
    if (dev.kind == "cpu" and op_define == "OP_SUM" and not arg and ni > 8 and
            x.dtype.cl == acc_cl and acc_cl in ("float", "double")):
        # a CPU device sums a work item per output along rows (kernels/reduce.cl
        # reduce_runs): the work-group tree cost more than the sum there
        d.update(WG=1, RUNS=1)
        if acc_cl == "double":
            d["IS_DOUBLE_ACC"] = 1
        if xi_st[-1] == 1:
            d["IUNIT"] = 1
        return (dev.kernel(_FILE, "reduce_runs", d), (no,), (1,),
                (np.int64(no), np.int32(len(o_shape)), shape_arg(o_shape), _OUT, vout,
                 np.int64(ni), np.int32(len(i_shape)), shape_arg(i_shape), _X, vx_outer,
                 vx_inner, _SCALE))
    nsplit = _parts(dev, no, ni, wg, arg, acc_cl) if wg > 1 else 1
    if nsplit > 1:
        # the parts: out = the workspace (ACC), idx_out unused (the workspace again), scale 1
        d1 = dict(d, OUT=acc_cl, SPLIT=nsplit)
        zero = np.zeros(MAXD + 1, dtype=np.int64)
        parts = (dev.kernel(_FILE, "reduce", d1), (no * nsplit * wg,), (wg,),
                 (np.int64(no), np.int32(len(o_shape)), shape_arg(o_shape), _OUT, zero,
                  np.int64(ni), np.int32(len(i_shape)), shape_arg(i_shape), _X, vx_outer,
                  vx_inner, _CL_SCALAR[acc_cl](1), _IDX, zero))
        # the combination: the workspace (no outputs of nsplit parts, row-major over o_shape)
        # reduced along its parts into out, scaled
        d2 = dict(d, T=acc_cl, WG=32)
        vws = np.zeros(MAXD + 1, dtype=np.int64)
        vws[1:1 + len(o_shape)] = [st * nsplit for st in layout.contiguous_strides(o_shape)]
        vws_inner = np.zeros(MAXD + 1, dtype=np.int64)
        vws_inner[1] = 1
        combine = (dev.kernel(_FILE, "reduce", d2), (no * 32,), (32,),
                   (np.int64(no), np.int32(len(o_shape)), shape_arg(o_shape), _OUT, vout,
                    np.int64(nsplit), np.int32(1), shape_arg((nsplit,)), _X, vws, vws_inner,
                    _SCALE, _IDX, vidx))
        return parts, combine, no * nsplit
    return (dev.kernel(_FILE, "reduce", d), (no * wg,) if wg > 1 else (no,),
            (wg if wg > 1 else SERIAL_WG,),
            (np.int64(no), np.int32(len(o_shape)), shape_arg(o_shape), _OUT, vout,
             np.int64(ni), np.int32(len(i_shape)), shape_arg(i_shape), _X, vx_outer, vx_inner,
             _SCALE, _IDX, vidx))


# reduce_cols (kernels/reduce.cl): sums whose reduced dims are strided wider than the run of
# outputs along the innermost kept dim. CPUs: a work item sums NV vectors of COLS_VW outputs
# (runs shorter than COLS_VW: NV scalars), NV halved (from 4) until the NV vectors fit in the
# run and there are COLS_ITEMS items per compute unit. GPUs (and other
# devices): work-groups of COLS_GPU = (WO outputs, WR items splitting the reduced elements),
# one output per item, used from more than 8 reduced elements and 2 work-groups per compute
# unit (fewer outputs keep `reduce`'s work-group per output, which has more items in flight;
# at most 8 reduced elements, `reduce`'s item per output reads neighbouring outputs already).
COLS = True  # False: those sums take the forms used before reduce_cols (benchmarks' "before")
COLS_VW = 8
COLS_ITEMS = 8
COLS_NV = 4
COLS_CB = 8  # reduced elements summed pairwise per compensated add (kernels/reduce.cl)
COLS_GPU = (32, 8)


def _cols_defines(dev, dt, o_shape, xo_st, i_shape, xi_st, ni):
    """reduce_cols' defines for a sum of x (collapsed: kept dims o_shape with x strides xo_st,
    reduced dims i_shape / xi_st, ni reduced elements), or None where another form serves:
    the kept run is a single output, or some reduced dim is strided as narrow as the run."""
    xs, run = xo_st[-1], o_shape[-1]
    if not COLS or run < 2 or xs <= 0 or dt.cl == "half":
        return None
    for n, s in zip(i_shape, xi_st):  # (this module's any() is the tensor op)
        if n > 1 and s != 0 and abs(s) <= xs:
            return None
    rows = layout.numel(o_shape) // run
    if dev.kind != "cpu":
        wo, wr = COLS_GPU
        if ni <= 8 or -(-run // wo) * rows < 2 * dev.compute_units:
            return None
        return {"COLS": 1, "VW": 1, "NV": 1, "WO": wo, "WR": wr}
    vw = COLS_VW if run >= COLS_VW else 1  # (shorter runs: scalars, gathered)
    nv = COLS_NV
    while nv > 1 and (nv * vw > run or
                      -(-run // (nv * vw)) * rows < COLS_ITEMS * dev.compute_units):
        nv //= 2
    return {"COLS": 1, "VW": vw, "NV": nv, "WO": 1, "WR": 1}


def _cols_plan(dev, d, o_shape, xo_st, x_off, vout, out_o, ni, i_shape, xi_st):
    """_reduce_plan's reduce_cols launch (defines d from _cols_defines and _reduce_plan)."""
    d = dict(d, WG=1)  # (the program's `reduce` is built too: its serial form)
    if d["ACC"] == "double":
        d["IS_DOUBLE_ACC"] = 1
    if xo_st[-1] == 1:
        d["XUNIT"] = 1
    if d["T"] != d["ACC"]:
        d["CONVERT"] = 1
    d["CB"] = COLS_CB
    if out_o[-1] == 1 and d["OUT"] == d["ACC"]:
        d["OVEC"] = 1
    run, nb, wo, wr = o_shape[-1], d["NV"] * d["VW"], d["WO"], d["WR"]
    rows = layout.numel(o_shape) // run
    outer = list(o_shape[:-1]) or [1]
    vx = np.zeros(MAXD + 1, dtype=np.int64)
    vx[0], vx[1:len(xo_st)] = x_off, xo_st[:-1]
    vo = vout.copy()
    vo[1:] = 0
    vo[1:len(out_o)] = out_o[:-1]
    vx_inner = np.zeros(MAXD + 1, dtype=np.int64)
    vx_inner[1:1 + len(xi_st)] = xi_st
    blocks = -(-run // nb)
    nblk = 1
    if wr == 1:  # blocks per item: COLS_ITEMS items per compute unit where there are more
        nblk = blocks // -(-COLS_ITEMS * dev.compute_units // rows) or 1
    items = -(-blocks // nblk)
    return (dev.kernel(_FILE, "reduce_cols", d), (-(-items // wo) * wo, rows * wr), (wo, wr),
            (np.int64(run), np.int64(nblk), np.int32(len(outer)), shape_arg(outer), _X, vx,
             np.int64(xo_st[-1]), _OUT, vo, np.int64(out_o[-1]), np.int64(ni),
             np.int32(len(i_shape)), shape_arg(i_shape), vx_inner, _SCALE))


def sum_into(out: Tensor, x: Tensor, dim, scale=1.0) -> Tensor:
    """``out = scale * x.sum(dim)`` written into the view ``out`` (x's shape without
    ``dim``, an int or a tuple of non-negative ints; x's floating dtype, or float32 for a
    float16 x: its sum kept in float, as cross entropy's sum of weights), in one launch; no
    autograd (internal: the split-K GEMM sums its slices straight into its result,
    clgrad/ops/matmul.py; a conv's bias gradient is g.sum((0, 2, 3)) into the bias's view)."""
    dims = (dim,) if isinstance(dim, int) else tuple(sorted(dim))
    kept, _ = _out_shapes(x, dims, False)
    st = list(out._strides)
    for d in dims:
        st.insert(d, 0)
    _launch_reduce(x, dims, False, "OP_SUM", out.dtype, _acc_for(out.dtype), scale,
                   out=Tensor(out._storage, kept, tuple(st), out._offset))
    return out


SERIAL_WG = 64  # work-group size of the WG=1 form (a work item per output: kernels/reduce.cl)


def _acc_for(dt: dtypes.DType):
    if dt.is_floating_point:
        return "double" if dt is dtypes.float64 else "float"
    return "long"


def _expand_back(g: Tensor, x_shape, dims, keepdim):
    if not keepdim:
        for d in dims:
            g = g.unsqueeze(d)
    return g.expand(x_shape)


def sum(x: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Sum over ``dim`` (int, tuple, or None for all). Integers and bool sum to int64, floats
    to their dtype; ``dtype`` casts x to it first and gives that dtype (PyTorch's), integers
    wrapping in it (int8 [100, 100].sum(dtype=int8) is -56).

    Shapes: (*S) -> S without the reduced dims (kept as 1 with ``keepdim``).
    Raises TypeError for an unknown dtype.
    """
    if dtype is not None:
        x = ew.to(x, dtype)
    out_dt = _reduced_dtype(x, dtype)
    if out_dt is _BF16:
        return ew.via_float32(sum, x, dim, keepdim)
    dims = _dims(x, dim, "sum")
    out = _launch_reduce(x, dims, keepdim, "OP_SUM", out_dt, _acc_for(x.dtype))
    x_shape = tuple(x.shape)
    return record("sum", out, (x,), lambda g: (_expand_back(g, x_shape, dims, keepdim),),
                  double=True)


def mean(x: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Mean over ``dim``; floating dtypes only (as PyTorch). An empty reduction gives nan."""
    if dtype is not None:
        x = ew.to(x, dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"mean: could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {x.dtype}")
    if x._storage.dtype is _BF16:
        return ew.via_float32(mean, x, dim, keepdim)
    dims = _dims(x, dim, "mean")
    n = layout.numel([x.shape[d] for d in dims])
    # the sum divided by n in the kernel (PyTorch's CPU mean; n = 0: 0 / 0, nan)
    out = _launch_reduce(x, dims, keepdim, "OP_SUM", x.dtype, _acc_for(x.dtype), n,
                         divide=True)
    x_shape = tuple(x.shape)
    return record("mean", out, (x,),  # (backward g / n, as the forward and PyTorch's)
                  lambda g: (_expand_back(ew.div(g, n), x_shape, dims, keepdim),),
                  double=True)


def _reduced_dtype(x: Tensor, dtype) -> dtypes.DType:
    """sum/prod's result dtype: ``dtype`` when given (x was cast to it), else x's for floats,
    int64 for integers and bool (PyTorch's)."""
    if dtype is not None or x.dtype.is_floating_point:
        return x.dtype
    return dtypes.int64


def prod(x: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Product over ``dim`` (int, tuple, or None for all). Integers and bool give int64;
    ``dtype``: x cast to it first, the result of it (int8 [100, 100].prod(dtype=int8) is 16).

    Shapes:  (*S) -> S without the reduced dims (kept as 1 with ``keepdim``).
    Grad:    per reduced group, without dividing by zero (PyTorch's values): no zero in the
             group: out / x; exactly one zero: the product of the others at the zero and 0
             elsewhere; two or more zeros: 0 everywhere. Differentiable again (create_graph:
             _prod_others, the products of the others by exclusive cumprods from both ends,
             exact through zeros, as PyTorch's prod_safe_zeros_backward).
    """
    if dtype is not None:
        x = ew.to(x, dtype)
    out_dt = _reduced_dtype(x, dtype)
    if out_dt is _BF16:
        return ew.via_float32(prod, x, dim, keepdim)
    dims = _dims(x, dim, "prod")
    out = _launch_reduce(x, dims, keepdim, "OP_PROD", out_dt, _acc_for(x.dtype))
    x_shape = tuple(x.shape)

    def backward(g):
        zero = ew.eq(x, 0)
        safe = ew.where(zero, 1.0, x)
        others = prod(safe, dims, keepdim=True)  # the product of the group's nonzero elements
        zeros = sum(zero, dims, keepdim=True)
        at_one_zero = ew.where(ew.logical_and(zero, ew.eq(zeros, 1)), others, 0.0)
        local = ew.where(ew.eq(zeros, 0), ew.div(others, safe), at_one_zero)
        return (ew.mul(_expand_back(g, x_shape, dims, keepdim), local),)

    def double(g, node):  # create_graph: of recorded ops, exact through zeros
        return (ew.mul(_expand_back(g, x_shape, dims, keepdim), _prod_others(x, dims)),)
    return record("prod", out, (x,), backward, saved=[x], double=double)


def _prod_others(x: Tensor, dims) -> Tensor:
    """Per element of ``x``, the product of the other elements of its group (the ``dims``
    reduced by prod), of recorded ops without a division: the exclusive cumprod from the
    front times the one from the back of the group flattened (PyTorch's
    prod_safe_zeros_backward), so exact and differentiable again through zeros."""
    if x.numel() == 0:
        return ew.mul(x, 0.0)
    keep = [d for d in range(x.ndim) if d not in dims]
    order = keep + list(dims)
    xt = x.permute(order) if order != list(range(x.ndim)) else x
    lead = tuple(xt.shape[:len(keep)])
    n = layout.numel([x.shape[d] for d in dims])
    flat = xt.reshape(lead + (n,))
    ones = creation.ones(lead + (1,), dtype=x.dtype, device=x._storage.device)

    def exclusive(v):  # [1, v0, v0 v1, ...]: the product of the elements before each
        return sc.cumprod(ix.cat([ones, v.narrow(-1, 0, n - 1)], -1), -1)
    others = ew.mul(exclusive(flat), vw.flip(exclusive(vw.flip(flat, -1)), -1))
    others = others.reshape(tuple(xt.shape))
    return others.permute(tuple(order.index(d) for d in range(x.ndim))) if xt is not x \
        else others


def _minmax(x: Tensor, dim, keepdim, op_define, name):
    if dim is None:
        _check_numel(name, x, RuntimeError)
        dims = tuple(range(x.ndim))
        vals = _launch_reduce(x, dims, False, op_define, x.dtype, x.dtype.cl)
        return _record_even(name, x, vals, dims, False, nan_hits=True)
    if not x.ndim and not isinstance(dim, (tuple, list)):  # dim 0 or -1 of a 0-dim x
        layout.wrap_dim(dim, 0, name)
        _check_keepdim(keepdim, name)
        vals, idx = _minmax(x.reshape(1), 0, False, op_define, name)
        return MinMax(vals, idx)
    dims = _dims(x, dim, name)
    if len(dims) != 1:
        raise TypeError(f"{name}: expected dim to be an int, got {dim!r}")
    _check_nonempty(name, x, dims)
    vals, idx = _launch_reduce(x, dims, keepdim, op_define, x.dtype, x.dtype.cl, arg=True)
    x_shape = tuple(x.shape)

    def backward(g):
        z = zeros(x_shape, g.dtype, g._storage.device)
        _scatter_arg(z, dims, keepdim, g, idx)
        return (z,)

    def double(g, node):  # create_graph: the scatter as a mask of recording ops
        return (_at_index(g, idx, x_shape, dims[0], keepdim),)
    vals = record(name, vals, (x,), backward, saved=[idx],  # idx is returned to the caller
                  double=double)
    return MinMax(vals, idx)


def _at_index(g: Tensor, idx: Tensor, x_shape, d: int, keepdim: bool) -> Tensor:
    """g (the reduced shape) placed at ``idx`` along dim ``d`` of zeros of ``x_shape``, by
    recording ops: where(arange == idx, g, 0) (max(dim)'s backward, differentiable in g)."""
    if not x_shape:  # a 0-dim x: its one element is the maximum
        return g.reshape(())
    if not keepdim:
        g, idx = g.unsqueeze(d), idx.unsqueeze(d)
    pos = creation.arange(x_shape[d], device=g._storage.device)
    pos = pos.reshape((x_shape[d],) + (1,) * (len(x_shape) - 1 - d))
    return ew.where(ew.eq(pos, idx), g.expand(x_shape), 0.0)


def _check_numel(name, x, error):
    """A reduction over every element needs one (PyTorch's message)."""
    if x.numel() == 0:
        raise error(f"{name}: Expected reduction dim to be specified for input.numel() == 0. "
                    f"Specify the reduction dim with the 'dim' argument.")


def _check_nonempty(name, x, dims):
    for d in dims:
        if x.shape[d] == 0:
            raise IndexError(f"{name}: Expected reduction dim {d} to have non-zero size.")


def _record_even(name, x, vals, dims, keepdim, nan_hits):
    """Record a max/min-valued reduction whose gradient is split evenly among the elements
    equal to the result (PyTorch's evenly_distribute_backward / scale_grad_by_count).

    ``nan_hits``: a NaN result counts the NaN elements as equal to it (PyTorch's max()/min());
    otherwise NaN == NaN is false, so a NaN result has no hit and a NaN gradient (amax/amin).
    """
    y = vals.detach()  # not vals: the closure must not hold its own output
    x_shape = tuple(x.shape)

    def backward(g):
        ye = _expand_back(y, x_shape, dims, keepdim)
        hit = ew.eq(x, ye)
        if nan_hits:
            hit = ew.logical_or(hit, ew.logical_and(ew.ne(x, x), ew.ne(ye, ye)))
        hit = ew.to(hit, g.dtype)
        share = ew.div(g, sum(hit, dims, keepdim=keepdim))
        return (ew.mul(_expand_back(share, x_shape, dims, keepdim), hit),)
    # (create_graph: backward is recording ops; the mask is constant, so the second
    # derivative in x is 0 and the gradient's own gradient in g is the same split)
    return record(name, vals, (x,), backward, saved=[x, y], double=True)


def _scatter_arg(z: Tensor, dims, keepdim, g: Tensor, idx: Tensor):
    """z[position of idx] = g, for the reduction geometry of ``dims`` (z contiguous)."""
    kept, _ = _out_shapes(z, dims, keepdim)
    g = g.reshape(kept) if tuple(g.shape) != kept else g
    idx = idx.reshape(kept) if tuple(idx.shape) != kept else idx
    no = layout.numel(kept)
    if not no:
        return
    o_shape, zo_st, i_shape, zi_st = _split(z.shape, z._strides, dims)
    g_o = _split(kept, g._strides, dims)[1]
    i_o = _split(kept, idx._strides, dims)[1]
    o_shape, (zo_st, g_o, i_o) = layout.collapse(o_shape, zo_st, g_o, i_o)
    i_shape = [z.shape[d] for d in dims] or [1]
    zi_st = zi_st or [0]
    vz_inner = np.zeros(MAXD + 1, dtype=np.int64)
    vz_inner[1:1 + len(zi_st)] = zi_st
    dev = z._storage.device
    k = dev.kernel(_FILE, "scatter_arg", {"T": z.dtype.cl, "ACC": z.dtype.cl, "OUT": z.dtype.cl,
                                          "OP_MAX": 1, "WG": 1})
    dev.launch(k, (no,), (64,), np.int64(no), np.int32(len(o_shape)), shape_arg(o_shape),
               z._storage.buffer, view_arg(z, zo_st), np.int32(len(i_shape)),
               shape_arg(i_shape), vz_inner, g._storage.buffer, view_arg(g, g_o),
               idx._storage.buffer, view_arg(idx, i_o))


def max(x: Tensor, dim=None, keepdim: bool = False):
    """Maximum: of all elements (a 0-dim tensor), or along ``dim`` -> (values, indices).

    NaN propagates: a NaN is the maximum, and its index the one reported (the first NaN).
    Indices: the first maximum on ties. Grad (PyTorch's): ``max(x)`` splits the gradient
    evenly among the tied maxima (among the NaNs when the result is NaN); ``max(x, dim)``
    sends it to the returned index only.
    ``max(x, other_tensor)`` is the elementwise maximum (PyTorch's overload).
    Raises:  RuntimeError for ``max()`` of an empty tensor; IndexError for an empty ``dim``.
    """
    if isinstance(dim, Tensor):
        return ew.maximum(x, dim)
    if x._storage.dtype is _BF16:
        return ew.via_float32(max, x, dim, keepdim)
    return _minmax(x, dim, keepdim, "OP_MAX", "max")


def min(x: Tensor, dim=None, keepdim: bool = False):
    """Minimum; see max."""
    if isinstance(dim, Tensor):
        return ew.minimum(x, dim)
    if x._storage.dtype is _BF16:
        return ew.via_float32(min, x, dim, keepdim)
    return _minmax(x, dim, keepdim, "OP_MIN", "min")


def amax(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Maximum values over ``dim`` (int, tuple, or None for all); NaN propagates.

    Grad (PyTorch's amax): split evenly among the elements equal to the maximum; a NaN
    maximum equals nothing, so its gradient is NaN.
    Raises:  RuntimeError for all dims of an empty tensor; IndexError for an empty ``dim``.
    """
    if x._storage.dtype is _BF16:
        return ew.via_float32(amax, x, dim, keepdim)
    return _amaxmin(x, dim, keepdim, "OP_MAX", "amax")


def amin(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Minimum values over ``dim``; see amax."""
    if x._storage.dtype is _BF16:
        return ew.via_float32(amin, x, dim, keepdim)
    return _amaxmin(x, dim, keepdim, "OP_MIN", "amin")


def _amaxmin(x, dim, keepdim, op_define, name):
    dims = _dims(x, dim, name)
    if dim is None or dim == () or dim == []:
        _check_numel(name, x, RuntimeError)
    _check_nonempty(name, x, dims)
    vals = _launch_reduce(x, dims, keepdim, op_define, x.dtype, x.dtype.cl)
    return _record_even(name, x, vals, dims, keepdim, nan_hits=False)


def _arg(x, dim, keepdim, op_define, name):
    if x._storage.dtype is _BF16:  # (the order is float32's: bfloat16 widens exactly)
        x = ew.to(x, dtypes.float32)
    if dim is None:
        flat = x.reshape(-1)
        idx = _launch_reduce(flat, (0,), False, op_define, x.dtype, x.dtype.cl, arg=True)[1]
        return idx.reshape((1,) * x.ndim) if keepdim else idx
    d = layout.wrap_dim(dim, x.ndim, name)
    if not x.ndim:  # dim 0 or -1 of a 0-dim x: the index 0, 0-dim (PyTorch's)
        _check_keepdim(keepdim, name)
        x, d, keepdim = x.reshape(1), 0, False
    return _launch_reduce(x, (d,), keepdim, op_define, x.dtype, x.dtype.cl, arg=True)[1]


def argmax(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the first maximum (over the flattened tensor when ``dim`` is None); int64.

    A NaN counts as the maximum (the first NaN's index, as PyTorch).
    Raises:  IndexError for an empty ``dim`` or, with ``dim`` None, an empty tensor (PyTorch);
             an empty tensor reduced over a non-empty dim gives an empty result;
             RuntimeError for a bool tensor (PyTorch's "argmax(): does not support bool input")
    """
    _check_arg(x, dim, "argmax")
    return _arg(x, dim, keepdim, "OP_MAX", "argmax")


def argmin(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Index of the first minimum; see argmax."""
    _check_arg(x, dim, "argmin")
    return _arg(x, dim, keepdim, "OP_MIN", "argmin")


def _check_arg(x, dim, name):
    if x.dtype.is_bool:
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        _check_numel(name, x, IndexRangeError)  # PyTorch 2: IndexError (was RuntimeError)
    elif x.ndim:
        _check_nonempty(name, x, (layout.wrap_dim(dim, x.ndim, name),))


def _bool_dim(dim, unbiased, correction, op: str):
    """(dim, unbiased) of var/std/var_mean/std_mean: a bool first argument is ``unbiased``
    (PyTorch's ``var(bool unbiased)`` overload: ``x.var(False)`` divides by n), over all dims.
    Raises TypeError for a bool dim with ``unbiased`` or ``correction`` also given."""
    if isinstance(dim, (bool, np.bool_)):
        if unbiased is not None or correction is not None:
            raise TypeError(f"{op}: a bool first argument is unbiased; unbiased or correction "
                            f"given too (dim={dim!r}, unbiased={unbiased!r}, "
                            f"correction={correction!r})")
        return None, bool(dim)
    return dim, unbiased


def var(x: Tensor, dim=None, unbiased=None, keepdim: bool = False, correction=None) -> Tensor:
    """Variance: sum((x - mean)^2) / (n - correction); correction 1 by default (Bessel).
    Where n <= correction the divisor is 0 (PyTorch's max(0, n - correction)): inf, or nan
    where the sum is 0 (a single element with correction 1).

    Two passes (mean first), so large offsets do not cancel. float16 and bfloat16 are computed
    in float32 and rounded once at the end (PyTorch's): var([0, 200, 400]) is 40000, not inf
    from a float16 sum of squares. A bool ``dim`` is ``unbiased`` (``x.var(False)``, PyTorch's
    overload): over all dims.
    """
    dim, unbiased = _bool_dim(dim, unbiased, correction, "var")
    if x._storage.dtype is dtypes.float16 or x._storage.dtype is _BF16:
        return ew.to(var(ew.to(x, dtypes.float32), dim, unbiased, keepdim, correction), x.dtype)
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = _dims(x, dim, "var")
    n = layout.numel([x.shape[d] for d in dims])
    centered = ew.sub(x, mean(x, dims, keepdim=True))
    ss = sum(ew.mul(centered, centered), dims, keepdim=keepdim)
    denom = n - correction
    # no degrees of freedom left (n <= correction): ss / 0 as PyTorch's max(0, n - correction),
    # inf where the values spread, nan where they do not (one element)
    return ew.mul(ss, 1.0 / denom) if denom > 0 else ew.div(ss, 0.0)


def std(x: Tensor, dim=None, unbiased=None, keepdim: bool = False, correction=None) -> Tensor:
    """Standard deviation: sqrt(var); float16 and bfloat16 in float32, rounded once (as var).
    A bool ``dim`` is ``unbiased`` (``x.std(True)``), as var."""
    dim, unbiased = _bool_dim(dim, unbiased, correction, "std")
    if x._storage.dtype is dtypes.float16 or x._storage.dtype is _BF16:
        return ew.to(std(ew.to(x, dtypes.float32), dim, unbiased, keepdim, correction), x.dtype)
    return ew.sqrt(var(x, dim, unbiased, keepdim, correction))


def logsumexp(x: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over ``dim``, stable for large logits (the max is taken out first).
    bfloat16: in float32, rounded once. An empty ``dim`` gives log(0) = -inf (PyTorch's)."""
    if x._storage.dtype is _BF16:
        return ew.via_float32(logsumexp, x, dim, keepdim)
    _check_keepdim(keepdim, "logsumexp")
    dims = _dims(x, dim, "logsumexp")
    if not layout.numel([x.shape[d] for d in dims]):  # (amax of nothing raises)
        out = ew.log(sum(ew.exp(x), dim, keepdim=True))
    else:
        m = amax(x, dim, keepdim=True).detach()
        m = ew.where(ew.eq(ew.abs(m), float("inf")), 0.0, m)
        out = ew.add(ew.log(sum(ew.exp(ew.sub(x, m)), dim, keepdim=True)), m)
    return out if keepdim else out.squeeze(dims)


def any(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """True where any element over ``dim`` (None: all) is nonzero; bool.

    A uint8 ``x`` gives uint8 (1/0), as PyTorch's."""
    if x._storage.dtype is _BF16:  # (bfloat16 -> float32 is exact: the same zeros)
        x = ew.to(x, dtypes.float32)
    return _bool_as(x, ew.gt(sum(ew.ne(x, 0), dim, keepdim), 0))


def all(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """True where every element over ``dim`` (None: all) is nonzero; bool.

    A uint8 ``x`` gives uint8 (1/0), as PyTorch's."""
    if x._storage.dtype is _BF16:
        x = ew.to(x, dtypes.float32)
    return _bool_as(x, ew.eq(sum(ew.eq(x, 0), dim, keepdim), 0))


def _bool_as(x, out):
    """all/any's bool result, as uint8 for a uint8 ``x`` (PyTorch keeps that legacy dtype)."""
    return ew.to(out, dtypes.uint8) if x._storage.dtype is dtypes.uint8 else out


__all__ += ["count_nonzero"]


def count_nonzero(x: Tensor, dim=None) -> Tensor:
    """Number of nonzero elements over ``dim`` (int, tuple or None: all); int64."""
    if x._storage.dtype is _BF16:
        x = ew.to(x, dtypes.float32)
    return sum(ew.ne(x, 0), dim)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """input / max(||input||_p along dim, eps) (PyTorch's F.normalize); p may be inf.
    The clamp is taken on sum |x|^p (against eps^p), which is the same forward and keeps a
    zero vector's gradient finite (g / eps, as PyTorch's) instead of 0 * inf.
    float16: the norm is computed in float32 and rounded once (PyTorch's), so a row whose sum
    of squares overflows float16 is still normalised.
    bfloat16: in float32, rounded once.
    Grad: input."""
    if input._storage.dtype is _BF16:
        return ew.via_float32(normalize, input, p, dim, eps)
    if p == float("inf"):
        return ew.div(input, ew.clamp(amax(ew.abs(input), dim, keepdim=True), min=eps))
    x = ew.to(input, dtypes.float32) if input.dtype is dtypes.float16 else input
    s = sum(ew.mul(x, x) if p == 2 else ew.pow(ew.abs(x), p), dim, keepdim=True)
    den = ew.pow(ew.clamp(s, min=float(eps) ** p), 1.0 / p)
    return ew.div(input, ew.to(den, input.dtype) if den.dtype is not input.dtype else den)


# -- h4 (issue 22): nansum, nanmean -----------------------------------------------------------
def nansum(x: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Sum treating NaN as zero (PyTorch's torch.nansum); integers and bool as sum (int64, or
    ``dtype`` when given).

    Shapes:  as sum
    Grad:    g * (x is not NaN): 0 at the NaN elements (NaN there if g is infinite);
             differentiable again (recording ops)
    Raises:  IndexError for a dim out of range; TypeError for a non-tensor
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"nansum: expected a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = ew.to(x, dtype)
    if not x.dtype.is_floating_point:
        return sum(x, dim, keepdim, dtype)  # dtype given: the result is of it (int8 wraps)
    if x.dtype is _BF16:
        return ew.via_float32(nansum, x, dim, keepdim)
    from clgrad.autograd import no_grad
    keep = ew.eq(x, x)  # not NaN
    with no_grad():
        out = sum(ew.where(keep, x, ew._zeros_scalar(x)), dim, keepdim)
    dims, x_shape = _dims(x, dim, "nansum"), tuple(x.shape)

    def backward(g):  # g * (x is not NaN), as PyTorch: an infinite g gives NaN at a NaN x
        return (ew.mul(_expand_back(g, x_shape, dims, keepdim), ew.to(keep, g.dtype)),)
    return record("nansum", out, (x,), backward, saved=[keep], double=True)


def nanmean(x: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    """Mean of the elements that are not NaN (PyTorch's torch.nanmean): NaN where every
    element is NaN (or there are none).

    Shapes:  as mean
    Grad:    g / count(not NaN) at the non-NaN elements, 0 at the NaN ones (NaN everywhere
             in a slice that is all NaN, as PyTorch)
    Raises:  RuntimeError for an integer or bool input (as PyTorch); IndexError for a dim out
             of range
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"nanmean: expected a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = ew.to(x, dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"nanmean: expected input to have floating point dtype but got "
                           f"{x.dtype}")
    if x.dtype is _BF16:
        return ew.via_float32(nanmean, x, dim, keepdim)
    count = sum(ew.to(ew.eq(x, x), x.dtype), dim, keepdim)
    return ew.div(nansum(x, dim, keepdim), count)


__all__ += ["nansum", "nanmean"]
