"""Normalisation: batch_norm (per-channel statistics), layer_norm and group_norm (per-row
statistics), instance_norm (batch_norm of the (1, N*C, *) view), local_response_norm.

Inputs are (N, C, *) and may be any strided view; dim 1 is split from the others, which are
collapsed (see ``split_dim``). Outputs and gradients are new and contiguous.
Kernels: kernels/norm.cl :: bn_fwd, bn_bwd (one work-group per channel: the statistics and the
normalisation in one launch each direction), rn_fwd, rn_bwd (one work-group per row; the
weight and bias gradients are then two reductions), lrn_fwd, lrn_bwd.
"""
from __future__ import annotations

import math
import numbers
import weakref

import numpy as np

from clgrad import dtypes, layout
from clgrad.autograd import record
from clgrad.autograd.graph import recomputed
from clgrad.ops import activation as act_ops
from clgrad.ops import elementwise as ew
from clgrad.ops import padding as pd
from clgrad.ops import pool
from clgrad.ops import reduce as rd
from clgrad.ops.plan import Plan, key as plan_key
from clgrad.ops._util import (_VIEW_T, _ZEROS, LOCAL, MAXD, bump_version, copy_raw,
                              defines_for, empty, fill_raw, same_device, scalar, shape_arg,
                              view_arg, zeros)
from clgrad.tensor import Tensor

__all__ = ["batch_norm", "layer_norm", "rms_norm", "group_norm", "instance_norm",
           "local_response_norm", "split_dim"]

_FILE = "norm.cl"
_BN_TRAIN, _BN_W, _BN_B, _BN_UPDATE, _BN_GX, _BN_GW, _BN_GB = 1, 2, 4, 8, 16, 32, 64
_RN_W, _RN_B, _RN_GX, _RN_GXH = 1, 2, 4, 8
_BN_RELU = 128
_BN_COUNT = 256
_BN_ACTS = {"relu": 128, "relu6": 512, "silu": 1024}  # norm.cl's BN_RELU, BN_RELU6, BN_SILU
_F16 = dtypes.float16
_LINK_X = (0,)  # Node.double links (autograd.graph._linked): input 0
_BF16 = dtypes.bfloat16  # computed in float32 and rounded once (_bf16_stats, ew.via_float32)


def batch_norm(input: Tensor, running_mean, running_var, weight=None, bias=None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5,
               relu: bool = False, count=None, activation=None) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias per channel (dim 1), PyTorch's F.batch_norm.

    Training: mean and biased variance over N and the spatial dims; running_mean and
    running_var (when given) are updated in place, with the unbiased variance:
    r = (1 - momentum) r + momentum * stat. Eval: the running statistics are used.
    Shapes:  input (N, C, *), running_mean/running_var/weight/bias (C,) -> (N, C, *)
    Dtypes:  float32, float64, float16 (device permitting), with every given parameter and
             running statistic of the input's dtype; or, PyTorch's mixed batch norm (what
             autocast gives: a float16 convolution output into a float32 BatchNorm2d), a
             float16 input with float32 ones (all of those given: PyTorch's test is the
             first given in the order weight, bias, running_mean, running_var). The mixed
             case computes in float32: the statistics, the normalisation and a fused
             activation from the float16 values read as float32, the running statistics
             updated in float32, the output rounded once to float16 (nearest even); in
             backward grad_input is float16 (rounded once), grad_weight and grad_bias float32.
             Its kernels are the same variants as float32's (GPUs: work-groups per channel,
             BN_VEC, the split kernels; CPUs: the *_rows ones), reading and writing the
             half storage with OpenCL's core vload_half / vstore_half (kernels/norm.cl's
             BN_HALF). A float16 input with no parameters computes the same way, and with
             float16 ones on float32 copies of them (their gradients float16, the running
             statistics written back rounded once): float16 sums of a channel overflow, as
             PyTorch's float accumulation avoids. bfloat16 likewise, with bfloat16 or (mixed)
             float32 parameters and running statistics, on the input converted to float32
             (_bf16_stats; the output rounded once). Any other mix raises TypeError
             (PyTorch: RuntimeError).
    Grad:    input, weight, bias (exact through the batch statistics in training)
    Raises:  RuntimeError for a bad rank or parameter shape, or missing running statistics in
             eval; ValueError for one value per channel in training, eps < 0, or eps <= 0 in
             training; TypeError for a dtype mismatch, a non-floating input, or a momentum or
             eps that is not a real number (PyTorch's).
    activation: (clgrad's own, not PyTorch's) None, "relu", "relu6" or "silu": act(batch_norm(
             ...)) in the same launches (nn.Sequential fuses BatchNorm2d + ReLU / ReLU6 / SiLU
             with it): the backward multiplies the gradient by act' at the pre-activation,
             recomputed from x, with relu's / hardtanh(0, 6)'s / silu's choices at the kinks
             (relu's in the mixed float16 case: where the pre-activation rounds to +0 in
             float16, as relu of the float16 output). ``relu=True`` is activation="relu".
             Raises ValueError for another name. Without it, ``relu(batch_norm(...))``
             written apart (F.relu, nn.ReLU, in place or not) has its backward run inside
             this one's launch by the engine where relu's gradient is all this output gets
             (clgrad.autograd.graph._absorb): the same values, one launch less.
    count:   (clgrad's own) a one-element int64 tensor on the input's device (BatchNorm's
             num_batches_tracked) that the forward launch adds 1 to, in training: the module
             counts without a launch of its own. Anything else is refused (TypeError).
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"batch_norm: expected a Tensor input, got {type(input).__name__}")
    x = input
    shape = x._shape  # (the slots, not the properties: host time per call)
    if len(shape) < 2:
        raise RuntimeError(f"batch_norm: expected an input of 2 or more dims (N, C, *), got "
                           f"shape {tuple(shape)}")
    c = shape[1]
    m = math.prod(shape) // c if c else 0
    xs, want = x._storage, (c,)
    xdev, xdt = xs.device, xs.dtype
    if xdt is _BF16:
        return _bf16_stats("batch_norm", batch_norm, x, running_mean, running_var, weight,
                           bias, training, momentum, eps, relu, count, activation)
    pdt = xdt if xdt is not _F16 else _bn_param_dtype(xdt, weight, bias, running_mean,
                                                      running_var)  # (the compute dtype)
    if pdt is _F16 and all(p is None or isinstance(p, Tensor) and p._storage.dtype is _F16
                           for p in (running_mean, running_var, weight, bias)):
        # float16 parameters: float32 copies (float16 statistics overflow)
        return _bn_half_params(x, running_mean, running_var, weight, bias, training,
                               momentum, eps, relu, count, activation)
    for p in (running_mean, running_var, weight, bias):  # (what _check_param checks, read
        if p is not None and not (isinstance(p, Tensor) and  # directly: the common case)
                                  p._storage.device is xdev and p._storage.dtype is pdt and
                                  p._shape == want):
            for name, p in (("running_mean", running_mean), ("running_var", running_var),
                            ("weight", weight), ("bias", bias)):
                _check_param("batch_norm", name, p, x, pdt)  # (the first that fails raises)
    if type(momentum) is not float or type(eps) is not float or not eps > 0.0 or \
            not xs.dtype.is_floating_point:  # (the common case read directly, as above)
        momentum, eps = _bn_scalars(x, training, momentum, eps)
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("batch_norm: expected running_mean and running_var in eval mode "
                           "(training=False), got None")
    if training and m == 1:
        raise ValueError(f"batch_norm: expected more than 1 value per channel when training, "
                         f"got input size {tuple(x.shape)}")
    if relu:
        activation = activation or "relu"
    act = _BN_ACTS.get(activation, 0) if activation is not None else 0
    if activation is not None and not act:
        raise ValueError(f"batch_norm: expected activation None, 'relu', 'relu6' or 'silu', "
                         f"got {activation!r}")
    update = training and running_mean is not None and running_var is not None
    flags = ((_BN_TRAIN if training else 0) | (_BN_W if weight is not None else 0) |
             (_BN_B if bias is not None else 0) | (_BN_UPDATE if update else 0) |
             act)
    if count is not None:
        if not (isinstance(count, Tensor) and count._storage.dtype is dtypes.int64 and
                math.prod(count._shape) == 1 and count._storage.device is xs.device and
                training):
            got = (f"{count.dtype} tensor of shape {tuple(count.shape)} on "
                   f"{count._storage.device.name}" if isinstance(count, Tensor)
                   else type(count).__name__)
            raise TypeError(f"batch_norm: expected count to be a one-element int64 tensor on "
                            f"the input's device, in training, got a {got} with "
                            f"training={training}")
        flags |= _BN_COUNT
        cbuf, coff = count._storage.buffer, np.int64(count._offset)
    else:
        cbuf, coff = x._storage.buffer, np.int64(0)
    dev = xs.device
    y = Tensor._empty(shape, xs.dtype, dev)
    # The statistics (mean, invstd) are saved for backward; where no Node can read them (no
    # operand requires grad, none is a view whose grad_fn may change) they go to the plan's
    # scratch pair instead of two fresh allocations.
    need = (x._requires_grad or x._base is not None or
            (weight is not None and (weight._requires_grad or weight._base is not None)) or
            (bias is not None and (bias._requires_grad or bias._base is not None)))
    if c and m:
        params = (weight, bias, running_mean, running_var)
        # (pdt in the key although the parameters' dtypes are: the kernel's compute type)
        key = plan_key("bn_fwd", (x, *params), (momentum, eps, flags, coff, BN_SPLIT_FORCE,
                                                  BN_SPLIT_FILL, BN_SPLIT_WG, pdt))
        plan = dev.plans.get(key)
        if plan is None:
            plan = dev.keep_plan(key, _bn_fwd_plan(x, y, m, params, momentum, eps, flags,
                                                   coff, pdt))
        part, stats = plan.data
        if need:
            mean = Tensor._empty(want, pdt, dev)  # saved: the statistics used
            invstd = Tensor._empty(want, pdt, dev)
        else:
            mean, invstd = stats
        xb = xs.buffer
        bufs = (y._storage.buffer, xb, xb if weight is None else weight._storage.buffer,
                xb if bias is None else bias._storage.buffer,
                xb if running_mean is None else running_mean._storage.buffer,
                xb if running_var is None else running_var._storage.buffer,
                mean._storage.buffer, invstd._storage.buffer, cbuf)
        if part is not None:  # S work-groups per channel: partial statistics first
            ws = empty((c * part.data * 3,), pdt, dev)
            part.run(dev, xb, ws._storage.buffer)
            bufs += (ws._storage.buffer,)
        plan.run(dev, *bufs)
        if update:  # written in place by the kernel: no graph, a new version (inline bumps)
            running_mean._storage.version += 1
            running_var._storage.version += 1
    else:
        mean, invstd = Tensor._empty(want, pdt, dev), Tensor._empty(want, pdt, dev)
    if count is not None:
        if c and m:  # counted by the launch above
            count._storage.version += 1
        else:
            count.add_(1)

    def backward(gy, fused=0):
        # (requires_grad read from the slot where no view's root may have been rebased)
        # fused: an activation's flag (_BN_ACTS) applied here, see fuse below
        want = ((_BN_GX if (x._requires_grad if x._base is None else x.requires_grad)
                 else 0) |
                (_BN_GW if weight is not None and (weight._requires_grad if weight._base is None
                                                   else weight.requires_grad) else 0) |
                (_BN_GB if bias is not None and (bias._requires_grad if bias._base is None
                                                 else bias.requires_grad) else 0))
        keep = _BN_TRAIN | _BN_W | _BN_B | act
        return _bn_backward(x, gy, weight, mean, invstd, m, (flags & keep) | want | fused,
                            bias)
    saved = [x]
    if weight is not None:
        saved.append(weight)
    if act and bias is not None:
        saved.append(bias)
    def double(gy, node):  # create_graph: the batch norm recomputed of recording ops
        stats = None if training else (mean, invstd)
        return recomputed(_batch_norm_composed(stats, eps, activation if act else None),
                          (x, weight, bias))(gy, node)
    # eval: PyTorch's native_batch_norm_backward reads the input, so the gradient is linked
    # to it (autograd.graph._linked), its second derivative there undefined (None), as
    # PyTorch's batchnorm_double_backward gives in eval (zeros with a fused activation: the
    # activation's own link in PyTorch's unfused pair); training's depends on x anyway
    record(f"batch_norm_{activation}" if act else "batch_norm", y, (x, weight, bias),
           backward, saved=saved, double=double if training else (double, _LINK_X, act != 0))
    node = y._grad_fn
    if node is not None and not act:
        # relu(batch_norm(x)) written apart (F.relu(self.bn(x)), torchvision's in-place ReLU):
        # the engine may run relu's backward inside this one (autograd.graph._absorb), where
        # relu's gradient is all this output gets. The kernel masks gy where the pre-activation
        # it recomputes from x (saved) and the bias (checked unchanged here) is <= 0 (mixed
        # float16: <= 2^-25, what rounds to +0), as relu_grad does at relu's output: the same
        # values.
        # The storages themselves: .data = swaps in one (at version 0, maybe the same), and
        # x's and weight's versions are checked as saved tensors, bias's here.
        xst, wst = xs, weight._storage if weight is not None else None
        bst = bias._storage if bias is not None else None
        bver = bst.version if bst is not None else 0

        def fuse(gy, name):
            if (name != "relu" or x._storage is not xst or
                    (wst is not None and weight._storage is not wst) or
                    (bst is not None and (bias._storage is not bst or bst.version != bver)) or
                    gy._offset or not gy.is_contiguous()):
                return None  # (gy: relu_grad's output is a fresh contiguous one; the kernel's
            return backward(gy, _BN_RELU)  # sums follow the layout, so the same one only)
        # graph.absorbable: relu's input is y unchanged (a weak reference: y's storage is
        # freed when y is, as without it)
        fuse.out = (weakref.ref(y._storage), y._storage.version)
        node.fuse = fuse
    return y


def _batch_norm_composed(stats, eps, activation):
    """batch_norm as ops whose backward is differentiable, for create_graph (Node.double
    through autograd.graph.recomputed; the first-order gradients stay bn_bwd's): training
    (``stats`` None) normalizes by the batch's mean and biased variance over every dim but
    1, eval by the saved (mean, invstd) of the running statistics (constants); then weight,
    bias and the fused activation (relu, relu6, silu)."""
    def forward(x, w, b):
        bshape = (1, x.shape[1]) + (1,) * (x.ndim - 2)
        if stats is None:
            dims = (0,) + tuple(range(2, x.ndim))
            xc = ew.sub(x, rd.mean(x, dims, keepdim=True))
            y = ew.div(xc, ew.sqrt(ew.add(rd.mean(ew.mul(xc, xc), dims, keepdim=True), eps)))
        else:
            mean, invstd = (ew.to(t.detach(), x.dtype).reshape(bshape) for t in stats)
            y = ew.mul(ew.sub(x, mean), invstd)
        if w is not None:
            y = ew.mul(y, w.reshape(bshape))
        if b is not None:
            y = ew.add(y, b.reshape(bshape))
        if activation == "relu":
            return ew.relu(y)
        if activation == "relu6":
            return act_ops.hardtanh(y, 0.0, 6.0)
        return act_ops.silu(y) if activation == "silu" else y
    return forward


def _low_in(input):
    """The 16-bit float dtype of a layer/group norm input (bfloat16 or float16), else None:
    such an input computes in float32 on float32 copies, the output rounded once, as PyTorch's
    CPU kernels (rn_fwd in half would sum and keep mean and rstd in half); float32 parameters
    are PyTorch's mixed type (their gradients float32)."""
    dt = input._storage.dtype if isinstance(input, Tensor) else None
    return dt if dt is _BF16 or dt is _F16 else None


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None,
               eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims
    (Ba, Kiros & Hinton 2016; PyTorch's F.layer_norm: biased variance).

    Shapes:  input (*, *normalized_shape); weight, bias normalized_shape -> input's shape
    Dtypes:  floating, all alike; a bfloat16 input computes in float32 (the output rounded
             once), its parameters bfloat16 or float32 (PyTorch's mixed case), and so does a
             float16 input, its parameters float16 or float32 (its output float16, as
             PyTorch's CPU layer_norm); under ``autocast('cuda')`` (clgrad.amp) float16 and bfloat16
             operands are cast to float32 first (PyTorch's CUDA float32 list): the result is
             float32.
    Grad:    input, weight, bias
    Raises:  RuntimeError when the trailing dims or the parameter shapes differ from
             normalized_shape; TypeError for a non-float input or a dtype mismatch.
    """
    input, weight, bias = ew.autocast("layer_norm", input, weight, bias, lower=False,
                                      cuda_only=True)  # (PyTorch's CUDA float32 list)
    low = _low_in(input)
    if low is not None:  # 16-bit input, 16-bit or float32 parameters (PyTorch's CPU mixed
        # type: what autocast('cpu') gives): in float32, the output rounded once
        return ew.low_via_float32(low, layer_norm, input, normalized_shape, weight, bias, eps)
    ns = (normalized_shape,) if isinstance(normalized_shape, (int, np.integer)) else \
        tuple(normalized_shape)
    _check_float_tensor("layer_norm", input)
    k = len(ns)
    if k == 0 or k > input.ndim or tuple(input.shape[input.ndim - k:]) != ns:
        raise RuntimeError(f"layer_norm: expected an input with shape [*, "
                           f"{', '.join(map(str, ns))}], got {list(input.shape)}")
    for name, p in (("weight", weight), ("bias", bias)):
        _check_affine("layer_norm", name, p, input, ns)
    nr = input.ndim - k
    m = layout.numel(ns)

    def split(t):
        return t._strides[:nr], t._strides[nr:]
    return _row_norm("layer_norm", input, input.shape[:nr], ns, split, weight, bias, eps,
                     (1, 0, 1), (layout.numel(input.shape[:nr]), m, 1))


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) * weight over the last len(normalized_shape) dims (Zhang &
    Sennrich 2019; PyTorch's F.rms_norm, composed as its decomposition).

    Shapes:  input (*, *normalized_shape); weight normalized_shape -> input's shape
    Dtypes:  floating; 16-bit inputs compute in float32 (the weight multiplied there too),
             the result cast to the input's dtype. eps None: the float32 machine epsilon
             (float64's for a float64 input), as PyTorch's.
    Grad:    input, weight
    Raises:  RuntimeError when the trailing dims or the weight's shape differ from
             normalized_shape; TypeError for a non-float input.
    """
    ns = (int(normalized_shape),) if isinstance(normalized_shape, (int, np.integer)) else \
        tuple(int(n) for n in normalized_shape)
    _check_float_tensor("rms_norm", input)
    k = len(ns)
    if k > input.ndim or tuple(input.shape[input.ndim - k:]) != ns:
        raise RuntimeError(f"rms_norm: given normalized_shape={list(ns)}, expected input "
                           f"with shape [*, {', '.join(map(str, ns))}], got input of size "
                           f"{list(input.shape)}")
    if weight is not None and tuple(weight.shape) != ns:
        raise RuntimeError(f"rms_norm: expected weight of shape normalized_shape={list(ns)}, "
                           f"got weight of shape {list(weight.shape)}")
    dt = input.dtype
    comp = dtypes.float64 if dt is dtypes.float64 else dtypes.float32
    if eps is None:
        eps = float(np.finfo(np.float64 if comp is dtypes.float64 else np.float32).eps)
    x = input if dt is comp else ew.to(input, comp)
    dims = tuple(range(input.ndim - k, input.ndim))
    y = ew.mul(x, ew.rsqrt(ew.add(rd.mean(ew.mul(x, x), dims, keepdim=True), eps))) if k \
        else ew.mul(x, ew.rsqrt(ew.add(ew.mul(x, x), eps)))
    if weight is not None:
        y = ew.mul(y, weight)
    return y if y.dtype is dt else ew.to(y, dt)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None,
               eps: float = 1e-5) -> Tensor:
    """Normalise each of ``num_groups`` channel groups of each sample over its channels and
    spatial dims, then scale and shift per channel (Wu & He, ECCV 2018; biased variance).

    Shapes:  input (N, C, *) with C divisible by num_groups; weight, bias (C,) -> same
    Dtypes:  as layer_norm's (float32 under ``autocast('cuda')``, PyTorch's CUDA float32
             list).
    Grad:    input, weight, bias
    Raises:  RuntimeError for C not divisible by num_groups, bad parameter shapes or fewer than
             2 dims; TypeError for a non-float input or a dtype mismatch.
    """
    input, weight, bias = ew.autocast("group_norm", input, weight, bias, lower=False,
                                      cuda_only=True)  # (PyTorch's CUDA float32 list)
    low = _low_in(input)
    if low is not None:  # (as layer_norm's)
        return ew.low_via_float32(low, group_norm, input, num_groups, weight, bias, eps)
    _check_float_tensor("group_norm", input)
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: expected an input of 2 or more dims (N, C, *), got "
                           f"shape {tuple(input.shape)}")
    n, c = input.shape[:2]
    if not isinstance(num_groups, (int, np.integer)) or num_groups < 1 or c % num_groups:
        raise RuntimeError(f"group_norm: expected the number of channels {c} to be divisible "
                           f"by num_groups, got num_groups={num_groups!r}")
    for name, p in (("weight", weight), ("bias", bias)):
        _check_affine("group_norm", name, p, input, (c,))
    g, cg, sp = int(num_groups), c // int(num_groups), layout.numel(input.shape[2:])

    def split(t):
        sn, sc, *ss = t._strides
        return (sn, sc * cg), (sc, *ss)
    return _row_norm("group_norm", input, (n, g), (cg,) + tuple(input.shape[2:]), split, weight,
                     bias, eps, (g, cg, sp), (n, c, sp))


def instance_norm(input: Tensor, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1,
                  eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) plane over its spatial dims (Ulyanov et al. 2016),
    PyTorch's construction: batch_norm of the (1, N*C, *) view with the per-channel
    parameters and running statistics repeated N times; the running statistics (C,) are
    updated with the mean over the batch of the per-instance updates.

    Shapes:  input (N, C, *) with at least one spatial dim; (C,) parameters -> same
    Grad:    input, weight, bias
    Raises:  as batch_norm (ValueError for one value per plane when using input statistics).
    """
    _check_float_tensor("instance_norm", input)
    if input.ndim < 3:
        raise RuntimeError(f"instance_norm: expected an input (N, C, *) with spatial dims, got "
                           f"shape {tuple(input.shape)}")
    if input._storage.dtype is _BF16:
        return _bf16_stats("instance_norm", instance_norm, input, running_mean, running_var,
                           weight, bias, use_input_stats, momentum, eps)
    n, c = input.shape[:2]
    for name, p in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_param("instance_norm", name, p, input)
    from clgrad.autograd import no_grad
    from clgrad.ops._util import copy_raw
    rep = [None if p is None else p.repeat(n) for p in (running_mean, running_var)]
    wb = [None if p is None else p.repeat(n) for p in (weight, bias)]
    y = batch_norm(input.reshape((1, n * c) + tuple(input.shape[2:])), rep[0], rep[1], wb[0],
                   wb[1], use_input_stats, momentum, eps)
    if use_input_stats:
        with no_grad():
            for run, r in zip((running_mean, running_var), rep):
                if run is not None:
                    copy_raw(run, rd.mean(r.view(n, c), 0))
                    bump_version(run)
    return y.view(input.shape)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Local response normalisation across channels (PyTorch's, i.e. Caffe/AlexNet's).

    b_c = a_c / (k + alpha / size * sum_{c' = c - size//2}^{c + (size-1)//2} a_{c'}^2) ** beta,
    the window zero-padded at the channel edges.
    Shapes:  (N, C, *) with at least 3 dims -> same
    Grad:    input
    Raises:  RuntimeError for fewer than 3 dims; ValueError for size < 1.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"local_response_norm: expected a Tensor, got {type(input).__name__}")
    if input.ndim < 3:
        raise RuntimeError(f"local_response_norm: expected 3D or higher dimensionality input, "
                           f"got shape {tuple(input.shape)}")
    if not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"local_response_norm: expected size >= 1, got {size!r}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"local_response_norm: expected a floating point input, got "
                        f"{input.dtype}")
    if input._storage.dtype is _BF16:
        return ew.via_float32(local_response_norm, input, size, alpha, beta, k)
    x = input
    nc = x.shape[1]
    ns = layout.numel(x.shape[2:])
    y = empty(x.shape, x.dtype, x._storage.device)
    scale = empty(x.shape, x.dtype, x._storage.device)
    dt = x.dtype
    consts = (np.int64(size), scalar(dt, alpha), scalar(dt, beta))
    nd, sh, (vx,), (sxc,), _ = _channel_args(x.shape, x)
    _launch_lrn(x, "lrn_fwd", y.numel(), np.int64(nc), np.int64(ns), nd, sh,
                y._storage.buffer, scale._storage.buffer, x._storage.buffer, vx, sxc, *consts,
                scalar(dt, k))

    yd = y.detach()  # the closure must not hold its own output (a reference cycle)

    def backward(gy):
        gx = empty(x.shape, x.dtype, x._storage.device)
        nd2, sh2, (vg, vx2), (sgc, sxc2), _ = _channel_args(x.shape, gy, x)
        _launch_lrn(x, "lrn_bwd", gx.numel(), np.int64(nc), np.int64(ns), nd2, sh2,
                    gx._storage.buffer, gy._storage.buffer, vg, sgc, x._storage.buffer, vx2,
                    sxc2, yd._storage.buffer, scale._storage.buffer, *consts)
        return (gx,)

    def double(gy, node):  # create_graph: the norm recomputed of recording ops
        return recomputed(_lrn_composed(int(size), alpha, beta, k), (x,))(gy, node)
    return record("local_response_norm", y, (x,), backward, saved=[x, yd], double=double)


def split_dim(shape, dim: int, *stride_sets):
    """Split ``dim`` from the other dims of ``shape``, which are collapsed across every stride
    set (one per tensor, in elements). Returns (rest_shape, [rest strides], [strides of dim]).
    A tensor lacking ``dim`` (a target of class indices) passes stride 0 there.
    """
    rest = tuple(n for i, n in enumerate(shape) if i != dim)
    rest_sets = [tuple(s for i, s in enumerate(st) if i != dim) for st in stride_sets]
    rest_shape, rest_strides = layout.collapse(rest, *rest_sets)
    if len(rest_shape) > MAXD:
        raise RuntimeError(f"{shape}: more than {MAXD} non-mergeable dims besides dim {dim}")
    return rest_shape, rest_strides, [st[dim] for st in stride_sets]


# -- helpers ----------------------------------------------------------------------------------
def _bn_backward(x, gy, weight, mean, invstd, m, flags, bias=None):
    """(gx, gw, gb), each None unless its _BN_G* flag is set; one launch. The kernels take the
    bias too (a fused activation's derivative recomputes the forward's pre-activation). gx is
    x's dtype; gw, gb and the kernels' compute type are the saved statistics' (float32 for a
    float16 x with float32 parameters: batch_norm's mixed case)."""
    shape, dt, dev = x._shape, x._storage.dtype, x._storage.device  # (slots: host time)
    pdt = mean._storage.dtype
    c = shape[1]
    new = Tensor._empty if c and m else zeros   # no elements: zero gradients
    gx = new(shape, dt, dev) if flags & _BN_GX else None
    gw = new((c,), pdt, dev) if flags & _BN_GW else None
    gb = new((c,), pdt, dev) if flags & _BN_GB else None
    if c and m:
        gx_or = gx if gx is not None else x     # never written without _BN_GX
        # (pdt: without weight and bias nothing else in the key tells the mixed case from
        # float16's)
        key = plan_key("bn_bwd", (x, gy, gx_or, weight, bias),
                       (flags, BN_SPLIT_FORCE, BN_SPLIT_FILL, BN_SPLIT_WG, pdt))
        plan = dev.plans.get(key)
        if plan is None:
            plan = dev.keep_plan(key, _bn_bwd_plan(x, gy, gx_or, m, weight, bias, flags, pdt))
        xb, mb, gyb = x._storage.buffer, mean._storage.buffer, gy._storage.buffer
        wb = xb if weight is None else weight._storage.buffer
        bb = xb if bias is None else bias._storage.buffer
        bufs = (gx_or._storage.buffer, gyb, xb, wb, mb, invstd._storage.buffer,
                mb if gw is None else gw._storage.buffer,
                mb if gb is None else gb._storage.buffer, bb)
        part = plan.data
        if part is not None:  # S work-groups per channel: partial sums first
            ws = empty((c * part.data * 2,), pdt, dev)
            part.run(dev, gyb, xb, wb, mb, invstd._storage.buffer, bb, ws._storage.buffer)
            bufs += (ws._storage.buffer,)
        plan.run(dev, *bufs)
    return gx, gw, gb


# Launch plans (ops/plan.py) of bn_fwd / bn_bwd, kept in the device's plans under plan.key of
# every view, flags, momentum, eps and BN_SPLIT_FORCE: the kernel, its global and local sizes
# and the by-value arguments; a launch then binds only the buffers. A forward plan's ``data``
# is (the plan of a split's partial-statistics launch (whose ``data`` is S) or None, a
# scratch (mean, invstd) pair for calls whose statistics no Node saves); a backward plan's is
# that partial plan or None. Building the arguments took
# half of batch_norm's host time (~25 of ~55 µs per call on a Xeon), and the GPU's training
# steps are host-bound.
def _bn_fwd_plan(x, y, m, params, momentum, eps, flags, coff, pdt):
    nd, sh, (vy, vx), (syc, sxc), geom = _channel_args(x.shape, y, x)
    val = [0, np.int64(m), 1, nd, 2, sh, 4, vy, 5, syc, 7, vx, 8, sxc]
    for i, p in zip((10, 12, 14, 16), params):
        val += (i, _vec(p, x))
    val += (19, scalar(pdt, momentum), 20, scalar(pdt, eps), 21, np.int32(flags), 23, coff)
    nsplit = _bn_nsplit(x, m, flags)
    mem_at = (3, 6, 9, 11, 13, 15, 17, 18, 22)
    c, dev = x._shape[1], x._storage.device
    stats = (empty((c,), pdt, dev), empty((c,), pdt, dev))  # scratch: see batch_norm
    if nsplit == 1:
        kernel, gsize, lsize = _bn_kernel(x, m, "bn_fwd", geom, pdt)
        return Plan(kernel, gsize, lsize, val, mem_at, data=(None, stats))
    kernel, gsize, lsize = _bn_kernel(x, m, "bn_fwd_split", geom, pdt, nsplit)
    pkernel = _bn_kernel(x, m, "bn_fwd_part", geom, pdt, nsplit)[0]
    pval = (0, np.int64(m), 1, nd, 2, sh, 4, vx, 5, sxc, 6, np.int64(nsplit))
    part = Plan(pkernel, gsize, lsize, pval, (3, 7), data=nsplit)
    return Plan(kernel, gsize, lsize, (*val, 24, np.int64(nsplit)), (*mem_at, 25),
                data=(part, stats))


def _bn_bwd_plan(x, gy, gx_or, m, weight, bias, flags, pdt):
    nd, sh, (vgx, vgy, vx), (sgxc, sgyc, sxc), geom = _channel_args(x.shape, gx_or, gy, x)
    vw, vb, fl = _vec(weight, x), _vec(bias, x), np.int32(flags)
    val = (0, np.int64(m), 1, nd, 2, sh, 4, vgx, 5, sgxc, 7, vgy, 8, sgyc, 10, vx, 11, sxc,
           13, vw, 18, fl, 20, vb)
    nsplit = _bn_nsplit(x, m, flags)
    mem_at = (3, 6, 9, 12, 14, 15, 16, 17, 19)
    if nsplit == 1:
        kernel, gsize, lsize = _bn_kernel(x, m, "bn_bwd", geom, pdt)
        return Plan(kernel, gsize, lsize, val, mem_at)
    kernel, gsize, lsize = _bn_kernel(x, m, "bn_bwd_split", geom, pdt, nsplit)
    pkernel = _bn_kernel(x, m, "bn_bwd_part", geom, pdt, nsplit)[0]
    pval = (0, np.int64(m), 1, nd, 2, sh, 4, vgy, 5, sgyc, 7, vx, 8, sxc, 10, vw, 13, fl,
            15, vb, 16, np.int64(nsplit))
    part = Plan(pkernel, gsize, lsize, pval, (3, 6, 9, 11, 12, 14, 17), data=nsplit)
    return Plan(kernel, gsize, lsize, val + (21, np.int64(nsplit)), (*mem_at, 22), data=part)


# GPU training batch norms of at least BN_SPLIT_MIN elements per channel run over S work-groups
# per channel (two launches each direction, kernels/norm.cl's *_part and *_split) where C
# work-groups would fill fewer than half the compute units twice over: S = ceil(2 CUs / C), at
# most BN_SPLIT_MAX, and at least 4 WG elements per group. BN_SPLIT_FORCE (tests): S on any
# device, for every training batch norm (1: never split).
BN_SPLIT_MIN = 1 << 16
BN_SPLIT_MAX = 32
BN_SPLIT_FORCE = None
# GPUs, split batch norms: S = ceil(BN_SPLIT_FILL x compute units / C) groups per channel of
# BN_SPLIT_WG work items (0: the wide groups of 1024, as unsplit ones). Both are in the plans'
# keys; bench/gpu/bn_split.py measures the choices. H200, fwd + bwd device time at batch 128,
# 32 x 32 maps, C = 24..256 (bench/results/gpu/bn_split_h200_2026-12-04b.txt): (4, 256)
# fastest on every shape, 0.052-0.322 ms against 0.065-0.329 for the former (2, 1024).
BN_SPLIT_FILL = 4
BN_SPLIT_WG = 256


def _bn_nsplit(x, m, flags) -> int:
    """S, the work-groups per channel of a batch norm (1: one launch, bn_fwd / bn_bwd)."""
    dev = x._storage.device
    if not flags & _BN_TRAIN:
        return 1
    if BN_SPLIT_FORCE is not None:
        return max(1, min(int(BN_SPLIT_FORCE), m))
    c = x.shape[1]
    if dev.kind != "gpu" or m < BN_SPLIT_MIN:
        return 1
    return max(1, min(BN_SPLIT_MAX, -(-BN_SPLIT_FILL * dev.compute_units // c),
                      m // (4 * 1024)))


def _row_norm(op, x, rshape, eshape, split, weight, bias, eps, affine, red_shape):
    """rn_fwd/rn_bwd over rows ``rshape`` of elements ``eshape`` (``split(t)`` gives a tensor's
    (row strides, element strides)). affine = (ng, cg, sp) (see kernels/norm.cl); the weight
    and bias gradients sum g * xhat and g viewed as ``red_shape`` over its dims 0 and 2."""
    rows, m = layout.numel(rshape), layout.numel(eshape)
    w1, b1 = (p if p is None or p.ndim == 1 else p.reshape(-1) for p in (weight, bias))
    y = empty(x.shape, x.dtype, x._storage.device)
    mean = empty((rows,), x.dtype, x._storage.device)
    rstd = empty((rows,), x.dtype, x._storage.device)
    consts = tuple(np.int64(v) for v in affine)
    flags = (_RN_W if w1 is not None else 0) | (_RN_B if b1 is not None else 0)
    if rows and m:
        geo, (vr, vm) = _row_args(x, rshape, eshape, split)
        _launch_rows(x, rows, m, "rn_fwd", *geo, y._storage.buffer, x._storage.buffer, vr, vm,
                     (w1 if w1 is not None else x)._storage.buffer, _vec(w1, x),
                     (b1 if b1 is not None else x)._storage.buffer, _vec(b1, x),
                     mean._storage.buffer, rstd._storage.buffer, scalar(x.dtype, eps), *consts,
                     np.int32(flags))
    else:
        fill_raw(mean, 0)
        fill_raw(rstd, 0)

    def backward(gy):
        want_w = w1 is not None and w1.requires_grad
        want_b = b1 is not None and b1.requires_grad
        f = (flags & _RN_W) | (_RN_GX if x.requires_grad else 0) | (_RN_GXH if want_w else 0)
        gx = empty(x.shape, x.dtype, x._storage.device) if x.requires_grad else None
        gxh = empty(x.shape, x.dtype, x._storage.device) if want_w else None
        if rows and m and f & (_RN_GX | _RN_GXH):
            geo, (vgr, vgm, vxr, vxm) = _row_args(x, rshape, eshape, split, gy)
            _launch_rows(x, rows, m, "rn_bwd", *geo,
                         (gx if gx is not None else y)._storage.buffer,
                         (gxh if gxh is not None else y)._storage.buffer, gy._storage.buffer,
                         vgr, vgm, x._storage.buffer, vxr, vxm,
                         (w1 if w1 is not None else x)._storage.buffer, _vec(w1, x),
                         mean._storage.buffer, rstd._storage.buffer, *consts, np.int32(f))
        elif not (rows and m):
            for t in (gx, gxh):
                if t is not None:
                    fill_raw(t, 0)
        gw = rd.sum(gxh.view(red_shape), (0, 2)) if want_w else None
        gb = rd.sum(gy.reshape(red_shape), (0, 2)) if want_b else None
        return gx, gw, gb
    saved = [x] + ([w1] if w1 is not None else [])

    def double(g, node):  # create_graph: the norm recomputed of recording ops
        composed = _layer_norm_composed(tuple(eshape), eps) if op == "layer_norm" else \
            _group_norm_composed(affine[0], eps)
        return recomputed(composed, (x, w1, b1))(g, node)
    return record(op, y, (x, w1, b1), backward, saved=saved, double=double)


def _layer_norm_composed(ns, eps):
    """layer_norm over the trailing dims ``ns`` as ops whose backward is differentiable:
    (x - mean) / sqrt(var + eps) * weight + bias (biased variance), for create_graph
    (Node.double through autograd.graph.recomputed; the first-order gradients stay rn_bwd's).
    """
    def forward(x, w, b):
        dims = tuple(range(x.ndim - len(ns), x.ndim))
        xc = ew.sub(x, rd.mean(x, dims, keepdim=True))
        y = ew.div(xc, ew.sqrt(ew.add(rd.mean(ew.mul(xc, xc), dims, keepdim=True), eps)))
        if w is not None:
            y = ew.mul(y, w.reshape(ns))
        return y if b is None else ew.add(y, b.reshape(ns))
    return forward


def _group_norm_composed(ng, eps):
    """group_norm of ``ng`` groups as ops whose backward is differentiable: each sample's
    group of channels (N, ng, C/ng * spatial) normalized by its mean and biased variance, then
    the per-channel weight and bias, for create_graph (Node.double through
    autograd.graph.recomputed; the first-order gradients stay rn_bwd's)."""
    def forward(x, w, b):
        n, c = x.shape[:2]
        bshape = (1, c) + (1,) * (x.ndim - 2)
        xg = x.reshape(n, ng, c // ng * layout.numel(x.shape[2:]))
        xc = ew.sub(xg, rd.mean(xg, 2, keepdim=True))
        y = ew.div(xc, ew.sqrt(ew.add(rd.mean(ew.mul(xc, xc), 2, keepdim=True), eps)))
        y = y.reshape(x.shape)
        if w is not None:
            y = ew.mul(y, w.reshape(bshape))
        return y if b is None else ew.add(y, b.reshape(bshape))
    return forward


def _lrn_composed(size, alpha, beta, k):
    """local_response_norm as ops whose backward is differentiable (PyTorch's own
    composition): the squares' channel windows averaged by avg_pool2d over the (N, 1, C, S)
    view zero-padded along C, then x / (k + alpha avg)^beta; for create_graph (Node.double
    through autograd.graph.recomputed; the first-order gradient stays lrn_bwd's)."""
    def forward(x):
        n, c = x.shape[:2]
        sq = ew.mul(x, x).reshape(n, 1, c, layout.numel(x.shape[2:]))
        sq = pd.pad(sq, (0, 0, size // 2, (size - 1) // 2))
        avg = pool.avg_pool2d(sq, (size, 1), 1).reshape(x.shape)
        return ew.div(x, ew.pow(ew.add(ew.mul(avg, alpha), k), beta))
    return forward


def _row_args(x, rshape, eshape, split, *others):
    """((ndr, shr, ndm, shm), [row view, element view] per tensor (others first, then x))."""
    ts = others + (x,)
    sp = [split(t) for t in ts]
    rs, rst = layout.collapse(tuple(rshape), *[s[0] for s in sp])
    es, est = layout.collapse(tuple(eshape), *[s[1] for s in sp])
    if len(rs) > 8 or len(es) > 8:
        raise RuntimeError(f"norm: more than 8 non-mergeable dims in {tuple(x.shape)}")
    views = []
    for t, r, e in zip(ts, rst, est):
        views += [view_arg(t, r), _strides_arg(e)]
    return (np.int32(len(rs)), shape_arg(rs), np.int32(len(es)), shape_arg(es)), views


def _strides_arg(strides):
    """A view_t at offset 0 with these strides."""
    return _VIEW_T.pack(0, *strides, *_ZEROS[len(strides):])


def _launch_rows(x, rows, m, name, *args):
    dev = x._storage.device
    d = defines_for(x.dtype)
    d["WG"] = 64 if m < 4096 else 256
    dev.launch(dev.kernel(_FILE, name, d), (rows * d["WG"],), (d["WG"],), np.int64(m), *args)


def _check_float_tensor(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor input, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point input, got {x.dtype}")


def _check_affine(op, name, p, x, shape, context="", dtype=None):
    if p is None:
        return
    if not isinstance(p, Tensor):
        raise TypeError(f"{op}: expected {name} to be a Tensor or None, got "
                        f"{type(p).__name__}")
    same_device(op, x, p)
    if tuple(p.shape) != tuple(shape):
        raise RuntimeError(f"{op}: expected {name} of shape {tuple(shape)}{context}, got "
                           f"{tuple(p.shape)}")
    if dtype is not None and dtype is not x.dtype:  # batch_norm's mixed case
        if p.dtype is not dtype:
            raise TypeError(f"{op}: expected {name} of dtype {dtype}, got {p.dtype} (a "
                            f"{x.dtype} input with {dtype} parameters, PyTorch's mixed "
                            f"batch norm, takes {dtype} for every parameter and running "
                            f"statistic)")
    elif p.dtype is not x.dtype:
        raise TypeError(f"{op}: expected {name} of dtype {x.dtype} (the input's), got "
                        f"{p.dtype}")


def _channel_args(shape, *tensors):
    """(nd, shape_t, [view_t per tensor], [channel stride per tensor], (rest shape, [rest
    strides], [offset per tensor], [channel stride per tensor])) for dim 1 of ``shape``; the
    rest dims collapsed across the tensors."""
    key = (tuple(shape), *[(t._strides, t._offset) for t in tensors])
    got = _CHANNEL_ARGS.get(key)
    if got is None:
        rest, rest_st, ch = split_dim(key[0], 1, *[t._strides for t in tensors])
        views = tuple(view_arg(t, st) for t, st in zip(tensors, rest_st))
        got = (np.int32(len(rest)), shape_arg(rest), views, tuple(np.int64(s) for s in ch),
               (rest, tuple(rest_st), tuple(t._offset for t in tensors), tuple(ch)))
        if len(_CHANNEL_ARGS) >= 4096:
            _CHANNEL_ARGS.clear()
        _CHANNEL_ARGS[key] = got
    return got


_CHANNEL_ARGS: dict = {}  # _channel_args per (shape, (strides, offset) of each tensor)


def _bn_scalars(x, training, momentum, eps):
    """batch_norm's momentum and eps as floats, checked as PyTorch checks them (a None or a
    negative eps would otherwise reach the launch plan as NaN), and its input's dtype.

    Raises TypeError for a non-floating input, or a momentum or eps that is not a real number
    (int, float, bool, NumPy scalar); ValueError for eps < 0, or eps <= 0 in training."""
    _check_float_tensor("batch_norm", x)
    for name, v in (("momentum", momentum), ("eps", eps)):
        if not isinstance(v, numbers.Real):
            raise TypeError(f"batch_norm(): argument '{name}' must be float, not "
                            f"{type(v).__name__}")
    if training and eps <= 0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    return float(momentum), float(eps)


def _check_param(op, name, p, x, dtype=None):
    _check_affine(op, name, p, x, (x.shape[1],), f" for an input with {x.shape[1]} channels",
                  dtype)


def _bn_param_dtype(xdt, *params):
    """The dtype of batch_norm's parameters and running statistics and of its computation:
    float32 for a float16 input whose first given one (PyTorch's order: weight, bias,
    running_mean, running_var) is float32 (PyTorch's mixed batch norm: then every given one
    must be float32) or that has none, else the input's dtype (every given one must have
    it; a float16 input with float16 ones runs through _bn_half_params)."""
    for p in params:
        if p is not None:
            if xdt is _F16 and isinstance(p, Tensor) and p._storage.dtype is dtypes.float32:
                return dtypes.float32
            return xdt
    return dtypes.float32 if xdt is _F16 else xdt  # (none given: float16 computes in float32)


def _bn_half_params(x, running_mean, running_var, weight, bias, training, momentum, eps,
                    relu, count, activation):
    """batch_norm of a float16 input with float16 parameters and running statistics, as
    PyTorch computes it: in float32 (float16 sums of a channel's values overflow past 65504
    and lose the mean: a channel of mean 3 over 32768 values gave NaN): the mixed batch norm
    (float16 input, float32 parameters) through _on_float32_params. Parameters of another
    dtype are refused by the mixed case's checks."""
    return _on_float32_params(batch_norm, x, _F16, running_mean, running_var, weight, bias,
                              training, momentum, eps, relu, count, activation)


def _bf16_stats(op, fn, x, running_mean, running_var, weight, bias, training, *rest):
    """batch_norm / instance_norm (``fn``) of a bfloat16 input, as PyTorch computes it: in
    float32, the output rounded once to bfloat16. The parameters and running statistics are
    all bfloat16 or all float32 (PyTorch's mixed case), as the first given one in the order
    weight, bias, running_mean, running_var (bfloat16 ones through _on_float32_params).

    Raises:  TypeError for a parameter of another dtype (see _check_affine)."""
    f32 = dtypes.float32
    given = [p for p in (weight, bias, running_mean, running_var) if p is not None]
    pdt = f32 if given and isinstance(given[0], Tensor) and given[0].dtype is f32 else _BF16
    for name, p in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                    ("running_var", running_var)):
        _check_param(op, name, p, x, pdt)
    y = _on_float32_params(fn, ew.to(x, f32), _BF16, running_mean, running_var, weight, bias,
                           training, *rest)
    return ew.to(y, _BF16)


def _on_float32_params(fn, x, low, running_mean, running_var, weight, bias, training, *rest):
    """``fn(x, running_mean, running_var, weight, bias, training, *rest)`` with the parameters
    and running statistics of dtype ``low`` (float16, bfloat16) as float32 copies: recorded
    casts (their gradients come back in ``low``), the running statistics written back,
    rounded once, after a training update. Others are used (and updated) as they are."""
    def as32(p):
        return ew.to(p, dtypes.float32) if isinstance(p, Tensor) and p._storage.dtype is low \
            else p
    rm, rv = as32(running_mean), as32(running_var)
    y = fn(x, rm, rv, as32(weight), as32(bias), training, *rest)
    if training:
        for buf, b32 in ((running_mean, rm), (running_var, rv)):
            if b32 is not buf:
                copy_raw(buf, b32)
                bump_version(buf)
    return y


def _vec(p, like):
    """view_t of a 1-D tensor (offset, stride); a zero view for a missing one."""
    return view_arg(p) if p is not None else view_arg(like, (0,) * like.ndim)


def _bn_kernel(x, m, name, geom, pdt, nsplit=1):
    """(kernel, global size, local size) of bn_fwd / bn_bwd: one work-group per channel on GPUs
    (wide groups: C groups alone do not fill them; BN_FAST where every view has at most 2 dims
    besides the channel and unit inner stride; BN_VEC besides where every view's offset, batch
    stride and channel stride and the inner length are multiples of 4: float4/double4 loads and
    stores (half4 ones read and written as float4 in the mixed case), kernels/norm.cl); on CPUs
    the ``*_rows`` variants, one work item per channel streaming its rows (UNIT when every view
    has an inner stride of 1; ``geom``: rest shape, strides, offsets and channel strides from
    _channel_args). ``pdt``: the compute dtype (the parameters'): x's, or float32 for a float16
    x (batch_norm's mixed case: T float with BN_HALF, half storage; the same variants)."""
    dev = x._storage.device
    d = defines_for(pdt)
    if pdt is not x._storage.dtype:
        d["BN_HALF"] = 1
    c = x.shape[1]
    rest, rest_st, offs, chans = geom
    unit = 1 <= len(rest) <= 2 and all(st[-1] == 1 for st in rest_st)
    if dev.kind == "cpu" and nsplit == 1:
        if unit:
            d["UNIT"] = 1
        return dev.kernel(_FILE, name + "_rows", d), (c,), (1,)
    wide = 1024 if dev.kind == "gpu" and dev.max_work_group_size >= 1024 else 256
    wg = 64 if m < 4096 * nsplit else BN_SPLIT_WG if nsplit > 1 and BN_SPLIT_WG else wide
    d["WG"] = wg
    if unit and m < 1 << 31:
        d["BN_FAST"] = 1  # 32-bit offsets, no division per dim (kernels/norm.cl)
        if (pdt.cl in ("float", "double") and rest[-1] % 4 == 0
                and all(v % 4 == 0 for v in (*offs, *chans))
                and all(len(st) == 1 or st[0] % 4 == 0 for st in rest_st)):
            d["BN_VEC"] = 1
    return dev.kernel(_FILE, name, d), (c * nsplit * wg,), (wg,)


def _launch_lrn(x, name, total, *args):
    if total == 0:
        return
    d = defines_for(x.dtype)
    d["WG"] = 64
    dev = x._storage.device
    dev.launch(dev.kernel(_FILE, name, d), (total,), (LOCAL,), np.int64(total), *args)
