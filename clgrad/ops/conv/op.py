"""2-D convolution with PyTorch's semantics (groups, stride, padding, dilation), forward and
backward, as one shared op over a batch of groups.

The input is seen as (N, G, C/G, H, W), the weight as (G, O/G, C/G, kH, kW) and the output as
(N, G, O/G, oH, oW): 5-D views (offset + strides) of the caller's tensors, so group g is the
memory of ``input.narrow(1, g*C/G, C/G)``, ``weight.narrow(0, g*O/G, O/G)`` and
``out.narrow(1, g*O/G, O/G)``. Every kernel takes the group as a launch dimension, so a pass is
a fixed number of launches whatever ``groups`` is (implicit, depthwise, direct: one forward;
backward one for the input gradient and two for the weight and bias gradients: partial sums
over batch splits, then their sum written through the grouped view of the one weight
gradient; the CPU depthwise kernels write the sums themselves, one launch, where there are
groups enough to fill the device without batch splits). No parameter is copied; any strided
input is read through its strides. The input gradient is the forward problem again
(kernels/conv.h): the output gradient with stride-1 zeros inserted, padding (k-1)*d - p, and
the weight view transposed and flipped (negative strides, still a view).

Algorithms (``clgrad.backends.conv_algorithm`` or ``CLGRAD_CONV_ALGO``; the choice and the
dispatch: clgrad/ops/conv/choice.py, ``_auto``; their planners and launchers:
clgrad/ops/conv/algorithms.py):
  implicit   implicit GEMM, no workspace. CPUs: kernels/conv_igemm_cpu.cl, one work item per
             work-group staging an input window in local memory and running a 6 x 16
             register-blocked micro-kernel (6 x 32 on AVX-512 devices: conv.h's WIDE).
             GPUs: kernels/conv_gemm_gpu.cl, 16 x 16 work items sharing 64 x 64 tiles.
  depthwise  kernels/conv_dw_cpu.cl — direct stencils for few channels per group
             (C/G == 1, channel multiplier allowed): no GEMM. Pure depthwise maps up to
             40x40 windows: VW channels in the lanes of a vector (maps transposed in
             registers on the way in and out), a strided layer's input gradient in one
             launch; others: vectors along the flattened output rows of a window staged
             as stride phases.
  direct     kernels/conv_direct_any.cl — one work item per output; any device, no local
             memory.
  pointwise  1 x 1 convs without padding (CPUs' choice), x (N, G, C, H*W) and
             y (N, G, O, H*W) views: on CPUs kernels/conv_pw_cpu.cl, one GEMM per group
             whose columns (forward, input gradient) or depth (weight gradient) run over
             (sample, pixel), the bias added in the kernel; elsewhere one batched matmul.gemm
             (the weight broadcast over samples) and a weight-gradient reduction. A stride
             reads x subsampled; a strided layer's input gradient writes every s-th pixel of
             a zeroed gradient in one pass; views whose pixels do not merge into one stride
             are copied first (gathered, or written back).
  blocked    kernels/conv_blocked_cpu.cl — vectors along output channels (16 on AVX-512, 8
             on AVX2), the input broadcast, for small maps: a zero-padded copy of the input
             and the weight (or output gradient) packed in channel blocks first (layers with
             a large weight pack each block in the forward work-group that uses it; a strided
             layer's input-gradient phases share one padded copy). Any device runs it; 'auto'
             picks it on CPUs where it measured faster than implicit.
  depthwise_gpu, igemm_gpu  clgrad/ops/conv/gpu.py — GPU kernels (any device runs them):
             stencils for few channels per group; an implicit GEMM like matmul's GEMM_TILED.
  winograd   clgrad/ops/conv/winograd.py, kernels/conv_winograd.cl — F(2x2, 3x3) and
             F(4x4, 3x3) (Lavin & Gray 2016) for 3 x 3, stride-1, undilated convs: forward and
             input gradient, and F(3x3, 2x2) / F(3x3, 4x4) the weight gradient, F(5x5, 2x2)
             that of 5 x 5 kernels ('winograd:2' / 'winograd:4' pin the tile; GPUs' 'auto'
             measures both); transforms around one batched matmul.gemm.
  im2col     kernels/conv_im2col_any.cl + matmul.gemm — an im2col workspace chunked over the
             batch (at most ``backends.conv_workspace_limit`` bytes); groups and samples are GEMM
             batch dims, the weight broadcast over samples by a stride-0 view. The float16 route's
             algorithm (conv2d's Dtypes): small maps run one GEMM over the chunk's samples
             through a copy of the output (MERGE_PIXELS), and on tensor cores the weight
             gradient's depth splits into float32 partial sums (_wgrad_slices).
An algorithm that cannot run a problem (local memory too small; for im2col, a weight whose
(C/G, kH, kW) do not merge into one stride) gives way to implicit, then direct.
"""
from __future__ import annotations

import threading

from clgrad import backends, dtypes
from clgrad import settings
from clgrad.autograd import grad_mode, record
from clgrad.autograd.graph import recomputed
from clgrad.ops import elementwise as ew
from clgrad.ops import reduce as rd
from clgrad.ops._util import empty
from clgrad.ops import matmul as mm
from clgrad.ops import padding
from clgrad.ops.conv import algorithms as alg
from clgrad.ops.conv import gpu as conv_gpu
from clgrad.ops.conv import mma
from clgrad.ops.conv.choice import FEW_PAIRS, _choose, _debug_choice, _grad_input, _run
from clgrad.ops.conv.problem import (Problem, _as4, _check, _check_key, _forward_problem,
                                     _grad_input_problem, v5)
from clgrad.ops.matmul import mma_precision
from clgrad.ops.plan import key as plan_key, record_launches, replay
from clgrad.tensor import Tensor

__all__ = ["conv2d"]

# clgrad.backends' namespace: last_conv_algorithm is no setting (its module's __setattr__, a
# Python call, bumps the settings epoch only for settings), so it is written here directly
_BACKENDS = vars(backends)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-D cross-correlation of ``input`` with ``weight`` (PyTorch's ``conv2d``).

    Shapes:  input (N, C, H, W) or unbatched (C, H, W); weight (O, C/groups, kH, kW);
             bias (O,) -> (N, O, oH, oW) (or (O, oH, oW)) with
             oH = (H + 2*pad_h - dil_h*(kH-1) - 1) // stride_h + 1, likewise oW.
    Args:    stride, dilation: int or pair; padding: int, pair, 'valid' or 'same' (stride 1).
    Dtypes:  float16, float32, float64; all tensors alike. float16 takes one of two routes
             (half_via_float32). Float16: the im2col algorithm whatever
             ``clgrad.backends.conv_algorithm`` says (few channels per group on GPUs under
             'auto': depthwise_gpu's kernels, which sum in float32 and round once); its
             GEMMs sum the products in float32 and round once, as cuDNN's float16
             convolutions; the input gradient's column sums (col2im) add at most kH * kW
             float16 values in float32, a second rounding PyTorch's does not have.
             Float32: float32's kernels on float32 copies, rounded to float16 once. On
             tensor cores (NVIDIA) a layer of at least 2^20 multiply-adds runs the route
             measured faster for its shape (once, then cached with the algorithm choices),
             smaller ones float16; few channels per group (C/G * O/G <= 16: depthwise)
             float16 on GPUs under 'auto' (conv_gpu.half_depthwise), float32 on CPUs;
             elsewhere float32. Under ``autocast``
             (clgrad.amp) input, weight and bias are cast to float16 first, as PyTorch's.
             bfloat16 runs in float32 on float32 copies, rounded once.
    Views:   any strided input, weight and bias (read through their strides); out is new.
    Grad:    input, weight, bias.
    Raises:  RuntimeError for inconsistent shapes, channels not divisible by groups, fewer
             output channels than groups (none), a kernel larger than the padded input,
             non-positive stride/dilation/groups, negative padding, dtype or device mismatch;
             TypeError for non-tensors.
    Kernels: kernels/conv_<algorithm>_<cpu|gpu|any>.cl: conv_igemm_cpu.cl, conv_gemm_gpu.cl,
             conv_dw_cpu.cl, conv_direct_any.cl, conv_im2col_any.cl, conv_dw_gpu.cl,
             conv_igemm_gpu.cl, conv_blocked_cpu.cl, conv_winograd.cl.
    """
    if _AUTOCAST_STATE.autocast:  # (the common case, autocast off: one attribute read)
        input, weight, bias = ew.autocast("conv2d", input, weight, bias)
    if isinstance(input, Tensor) and input._storage.dtype is _BF16 and \
            isinstance(weight, Tensor) and weight._storage.dtype is _BF16 and \
            (bias is None or isinstance(bias, Tensor) and bias._storage.dtype is _BF16):
        # bfloat16: the float32 convolution of float32 copies, rounded once (cuDNN's and
        # PyTorch's CPU bfloat16 convolutions sum in float); other mixes: _check raises
        return ew.via_float32(conv2d, input, weight, bias, stride, padding, dilation, groups)
    ck = _check_key(input, weight, bias, stride, padding, dilation, groups)
    if isinstance(input, Tensor) and input._storage.dtype is _HALF:
        half = _half(input, weight, bias, stride, padding, dilation, groups, ck)
        if half is not None:
            return half
        if isinstance(weight, Tensor) and weight.ndim == 4 and alg.kview(weight) is None:
            weight = ew.contiguous(weight)  # (im2col's weight view; ck holds no layout)
    if ck is not None:  # the fast path of a cached signature: see _FAST
        dev = input._storage.device
        key = plan_key(_FAST, (input, weight, bias),
                       (ck, id(conv_gpu._TUNED), len(conv_gpu._TUNED)))
        fast = dev.plans.get(key)
        if fast is not None:
            plans, geo, shape, algo, debug, _ = fast
            out = Tensor._empty(shape, input._storage.dtype, dev)
            bufs = (input._storage.buffer, weight._storage.buffer, out._storage.buffer,
                    None if bias is None else bias._storage.buffer)
            if plans.scratch:  # workspaces: allocated per call
                replay(dev, plans, bufs)
            else:  # (replay's loop, without its call)
                for plan, roles in plans:
                    plan.run(dev, *map(bufs.__getitem__, roles))
            _BACKENDS["last_conv_algorithm"] = algo  # (no setting: its __setattr__ skipped)
            backends.last_conv_algorithms["forward"] = algo
            if debug:
                _debug_choice("forward", fast[5], algo)
            return record("conv2d", out, (input, weight, bias),
                          _backward(geo, False, input, weight, bias), saved=[input, weight],
                          double=(lambda g, node: recomputed(  # (made when needed)
                              _composed(geo), (input, weight, bias))(g, node), _LINK, False))
    geo = _check(input, weight, bias, stride, padding, dilation, groups)
    n, o, oh, ow = geo.n, geo.o * geo.g, geo.oh, geo.ow
    x4 = _as4(input)
    out = empty((n, o, oh, ow) if input.ndim == 4 else (o, oh, ow), input.dtype,
                input._storage.device)
    empty_sum = out.numel() == 0 or geo.c == 0  # nothing to convolve
    if not empty_sum:
        p = _forward_problem(geo, x4, weight, _as4(out), bias)
        algo, plan = _choose("forward", p, weight)
        o4 = _as4(out)

        def run():
            _run(algo, plan, "forward", p, x4, weight, o4, bias)
        if ck is None:
            run()
        else:  # the launches as Plans, for the next call with this signature
            bufs = (input._storage.buffer, weight._storage.buffer, out._storage.buffer,
                    None if bias is None else bias._storage.buffer)
            plans = record_launches(dev, run, bufs, scratch=True)
            # kept unless _choose measured meanwhile (a new table: its trials were recorded)
            if plans is not None and key == plan_key(_FAST, (input, weight, bias), (
                    ck, id(conv_gpu._TUNED), len(conv_gpu._TUNED))):
                dev.keep_plan(key, (plans, geo, out._shape, algo,
                                    bool(settings.getenv("CLGRAD_CONV_DEBUG")), p))
    elif out.numel():
        alg.fill_bias(_as4(out), bias)
    return record("conv2d", out, (input, weight, bias),
                  _backward(geo, empty_sum, input, weight, bias), saved=[input, weight],
                  double=(lambda g, node: recomputed(  # (made when needed)
                      _composed(geo), (input, weight, bias))(g, node), _LINK, False))


# Node.double links (autograd.graph._linked): PyTorch's convolution_backward reads input and
# weight, so a create_graph gradient requires grad (a constant weight's too) and, where its
# values do not depend on them, differentiates to no gradient (None, PyTorch's undefined one)
_LINK = (0, 1)


# fold.unfold (im2col as an op) and fold.fold (col2im), registered by clgrad/ops/conv/fold.py
# when it is imported (the conv package's __init__ imports it): the conv package's layers put
# fold above op (and beside transpose), so neither imports it. conv2d's create_graph path
# (_composed) reads _UNFOLD, conv_transpose2d's _FOLD.
_UNFOLD: list = []
_FOLD: list = []


def _composed(geo: Problem):
    """conv2d of the checked geometry ``geo`` as ops whose backward is differentiable: the
    input padded (constant pad), unfolded (im2col, whose backward is fold and fold's unfold)
    and multiplied by the weights per group (a batched matmul). What create_graph
    differentiates (Node.double through autograd.graph.recomputed); the first-order
    gradients stay the kernels'."""
    def forward(x, w, b):
        x4 = x if x.ndim == 4 else x.unsqueeze(0)
        n, g, o = x4.shape[0], geo.g, geo.o * geo.g
        # the right and bottom padding the taps reach (padding='same' with an even kernel
        # pads one more there, as PyTorch's)
        rh = max(geo.dh * (geo.kh - 1) + geo.sh * (geo.oh - 1) + 1 - geo.h - geo.ph, 0)
        rw = max(geo.dw * (geo.kw - 1) + geo.sw * (geo.ow - 1) + 1 - geo.w - geo.pw, 0)
        xp = padding.pad(x4, (geo.pw, rw, geo.ph, rh)) if geo.ph or geo.pw or rh or rw else x4
        cols = _UNFOLD[0](xp, (geo.kh, geo.kw), (geo.dh, geo.dw), 0, (geo.sh, geo.sw))
        cols = cols.reshape(n, g, -1, geo.oh * geo.ow)  # (N, G, C/G kh kw, L)
        out = mm.matmul(w.reshape(g, geo.o, -1).unsqueeze(0), cols)  # (N, G, O/G, L)
        out = out.reshape(n, o, geo.oh, geo.ow)
        if b is not None:
            out = ew.add(out, b.reshape(1, o, 1, 1))
        return out if x.ndim == 4 else out.squeeze(0)
    return forward


def _half(input, weight, bias, stride, padding, dilation, groups, ck):
    """conv2d of float16 tensors as the float32 conv2d of float32 copies, rounded to float16
    once (the casts are recorded, so the gradients come back in float16), where im2col's
    float16 GEMMs do not pay (``half_via_float32``; ck: conv2d's _check_key); None for every
    other problem (and for arguments the checks will refuse)."""
    if not (isinstance(weight, Tensor) and weight.ndim == 4 and type(groups) is int and
            groups > 0 and weight.shape[0] % groups == 0 and
            weight._storage.dtype is _HALF and
            (bias is None or isinstance(bias, Tensor) and bias._storage.dtype is _HALF) and
            half_via_float32(input, weight.shape[1] * (weight.shape[0] // groups),
                             (weight, bias, stride, padding, dilation, groups, ck))):
        return None
    return as_float32(conv2d, input, weight, bias, stride, padding, dilation, groups)


def half_via_float32(input: Tensor, pairs: int, layer: tuple | None = None) -> bool:
    """Whether a float16 convolution of ``pairs`` channel pairs per group (C/G * O/G) on
    input's device runs in float32 on float32 copies (the "float32" route) rather than
    im2col's float16 GEMMs (the "float16" route), in this order:
    - few pairs (at most FEW_PAIRS: depthwise and the like, where im2col's GEMMs would be
      K x 1 products): float16 for a conv2d ``layer`` on a GPU under conv_algorithm 'auto'
      whose depthwise_gpu kernels take every pass (conv_gpu.half_depthwise: they read and
      write float16 and sum in float32, so the values are the float32 route's, without its
      casts: 6 launches and two float32 copies of the layer's input and output a step),
      else float32 (CPUs: float32's stencils are the vectorised ones);
    - HALF_IM2COL True (tests) or False: float16 or float32;
    - inside a route trial of this thread (_route_trial): the route it times;
    - a device whose float16 GEMMs are not tensor cores (the CPUs' and other GPUs' float16
      GEMMs sum float32 copies or FMA tiles, and float32's convolution kernels are the
      measured ones; the main job's --amp on Intel's CPU runtime: 5 100-6 300 images/s
      through im2col, 8 200-9 400 through float32's kernels): float32;
    - tensor cores: float16, but a conv2d ``layer`` (its weight, bias, stride, padding,
      dilation, groups and _check_key) of at least conv_gpu._TUNE_MIN_MACS multiply-adds has
      its route measured, once per device, driver and layer (conv_gpu.measured, pass
      'route' or 'route+bias', candidates ROUTES: conv2d's forward and backward through each;
      kept in conv_algos.json; CLGRAD_CONV_TUNE=off: float16), the answer then kept per
      argument signature in the device's plans (a dict lookup per call). On an H200 at
      batch 128 (forward + backward ms, float32 against float16): ResNet-18's 64-channel
      3 x 3 on 32 x 32 maps 0.567 / 1.976, 128 on 16 x 16 0.464 / 0.758, 256 on 8 x 8 0.488 /
      0.404, AlexNet's 5 x 5 groups 2 1.884 / 0.956: neither route wins everywhere.
    conv_transpose2d passes no layer: the rule (float16 on tensor cores), unmeasured."""
    if pairs <= FEW_PAIRS:
        return layer is None or not conv_gpu.half_depthwise(input._storage.device, layer[0])
    if HALF_IM2COL is not None:
        return not HALF_IM2COL
    forced = _TRIAL.route
    if forced is not None:
        return forced == "float32"
    if mma_precision(input._storage.device, _HALF, False) != "f16":
        return True
    if layer is None:
        return False
    ck = layer[6]
    if ck is not None:  # (_measured_route's kept answer, looked up inline: every call)
        hit = input._storage.device.plans.get(plan_key(_ROUTE, (), (
            ck, id(conv_gpu._TUNED), len(conv_gpu._TUNED))))
        if hit is not None:
            return hit
    return _measured_route(input, *layer)


HALF_IM2COL = None  # see half_via_float32
ROUTES = ("float16", "float32")  # half_via_float32's measured routes (their names in the table)


class _Trial(threading.local):
    """The route a _route_trial runs in this thread (None: no trial)."""
    route = None


_TRIAL = _Trial()


def _measured_route(input, weight, bias, stride, padding, dilation, groups, ck) -> bool:
    """half_via_float32 of a conv2d layer on tensor cores: whether its measured route is
    float32 (False below conv_gpu._TUNE_MIN_MACS or with CLGRAD_CONV_TUNE=off: float16). Kept
    in the device's plans under plan.key(_ROUTE, (), (ck, *conv_gpu.choice_epoch())) where ck
    (conv2d's _check_key: the operands' types, devices, dtypes and shapes, the arguments with
    their exact types) is not None; the key's settings epoch and the measured table's identity
    and size make a changed setting, a new measurement or a replaced table look again."""
    dev = input._storage.device
    geo = _check(input, weight, bias, stride, padding, dilation, groups)
    via = conv_gpu.measured("route" if bias is None else "route+bias", geo, dev, _HALF,
                            _route_trial, ROUTES, conv_gpu._TUNE_MIN_MACS,
                            f" mma{mma.VERSION}" if mma.available(dev) else "") == "float32"
    if ck is not None:  # (under the table's state after measuring)
        dev.keep_plan(plan_key(_ROUTE, (), (ck, id(conv_gpu._TUNED), len(conv_gpu._TUNED))),
                      via)
    return via


_ROUTE = "conv2d_half_route"  # the tag of _measured_route's answers in the device's plans


def _route_trial(pass_name: str, geo: Problem, dtype, dev):
    """run(route) -> True for conv_gpu.measured: conv2d's forward and backward of the layer
    ``geo`` through ``route`` (half_via_float32 answers it in this thread meanwhile), with
    grad mode on and autocast off, on fresh float16 operands of its shapes filled with 0.5
    (not zeros): input (N, C, H, W), weight and, for pass_name 'route+bias', a bias, each
    requiring grad (their gradients cleared first in every run, as after zero_grad), and an
    output gradient. Nested measurements (the float32 route's algorithms, conv_gpu._LOCK)
    happen in the first, warm-up run."""
    n, g, c, o = geo.n, geo.g, geo.c, geo.o
    x = empty((n, g * c, geo.h, geo.w), dtype, dev)
    w = empty((g * o, c, geo.kh, geo.kw), dtype, dev)
    b = empty((g * o,), dtype, dev) if pass_name == "route+bias" else None
    gy = empty((n, g * o, geo.oh, geo.ow), dtype, dev)
    leaves = [t for t in (x, w, b) if t is not None]
    for t in (*leaves, gy):
        ew.fill_raw(t, 0.5)
    for t in leaves:
        t.requires_grad_()
    args = (x, w, b, (geo.sh, geo.sw), (geo.ph, geo.pw), (geo.dh, geo.dw), g)

    def run(route):
        prev, _TRIAL.route = _TRIAL.route, route
        try:
            with grad_mode.enable_grad(), grad_mode._autocast_off():
                for t in leaves:
                    t.grad = None
                conv2d(*args).backward(gy)
        finally:
            _TRIAL.route = prev
        return True
    return run


def as_float32(op, input, weight, bias, *args):
    """op(float32 copies of input, weight and bias, *args) rounded to float16 once, with
    autocast off inside (float32 stays float32); the casts are recorded."""
    return ew.low_via_float32(_HALF, op, input, weight, bias, *args)


_HALF, _BF16 = dtypes.float16, dtypes.bfloat16
_AUTOCAST_STATE = grad_mode._state  # .autocast: the autocast stack (clgrad.amp), or None


# conv2d's fast path: dev.plans[plan.key(_FAST, (input, weight, bias), (_check_key, the
# measured table's identity and size))] -> (the forward's launches as (Plan, roles) from
# plan.record_launches, the checked geometry, the output shape, the algorithm, whether
# CLGRAD_CONV_DEBUG is set, the problem). Everything the checks, the problem and _choose read
# is in the key (layouts and dtypes of every operand, the arguments with their exact types,
# the settings epoch: clgrad.backends and CLGRAD_*), so a hit skips them and only binds the
# buffers and enqueues (plan.replay: workspaces the launches allocated, such as the blocked
# algorithm's padded input and packed weight, are allocated afresh per call). Algorithms
# that copy or fill (a bias fill, a gathered view) are never recorded and keep the general
# path; nor is a call that measured algorithms (the trials would have been recorded).
_FAST = "conv2d"


def _backward(geo, empty_sum, input, weight, bias):
    """conv2d's backward closure over its inputs and checked geometry."""
    def backward(grad):
        gi = gw = gb = None
        # (requires_grad read from the slot where no view's root may have been rebased)
        want_b = bias is not None and (bias._requires_grad if bias._base is None else
                                       bias.requires_grad)
        if input._requires_grad if input._base is None else input.requires_grad:
            st = input._storage  # (the slots: no property calls)
            gi = Tensor._empty(input._shape, st.dtype, st.device)
            if empty_sum:
                ew.fill_raw(gi, 0)
            else:
                _grad_input_replayed(geo, grad, weight, gi)
        want_w = weight._requires_grad if weight._base is None else weight.requires_grad
        if want_w or want_b:
            st = weight._storage
            gw = Tensor._empty(weight._shape, st.dtype, st.device)
            gb = (Tensor._empty(bias._shape, bias._storage.dtype, bias._storage.device)
                  if want_b else None)
            if empty_sum:
                ew.fill_raw(gw, 0)
                if gb is not None:
                    rd.sum_into(gb, _as4(grad), (0, 2, 3))
            else:
                _grad_weight_replayed(geo, input, grad, weight, gw, gb)
            gw = gw if want_w else None
        return gi, gw, gb
    return backward


def _grad_input_replayed(geo: Problem, grad, w, gi):
    """_grad_input into the fresh ``gi``, replayed from its recorded launches (as conv2d's
    forward, see _FAST) when this geometry, gradient and weight layout, measured table and
    settings epoch ran before without allocating, copying or filling."""
    dev = gi._storage.device
    key = plan_key(_FAST_GI, (grad, w), (geo, id(conv_gpu._TUNED), len(conv_gpu._TUNED)))
    bufs = (grad._storage.buffer, w._storage.buffer, gi._storage.buffer)
    if _replayed(dev, key, bufs, "grad_input"):
        return
    plans = record_launches(dev, lambda: _grad_input(geo, _as4(grad), w, _as4(gi)), bufs,
                            scratch=True)
    if plans is not None:
        debug = (_grad_input_problem(geo, _as4(grad), w, _as4(gi))
                 if settings.getenv("CLGRAD_CONV_DEBUG") else None)
        _keep_replay(dev, key, (grad, w), geo, plans, "grad_input", debug)


def _grad_weight_replayed(geo: Problem, input, grad, w, gw, gb):
    """The weight (and bias) gradient into the fresh ``gw`` (and ``gb`` or None), replayed
    from its recorded launches as _grad_input_replayed, keyed by the layouts of the input,
    gradient, weight and both results, the geometry, measured table and settings epoch."""
    dev = gw._storage.device
    parts = (input, grad, w, gw, gb)
    key = plan_key(_FAST_GW, parts, (geo, id(conv_gpu._TUNED), len(conv_gpu._TUNED)))
    bufs = (input._storage.buffer, grad._storage.buffer, gw._storage.buffer,
            None if gb is None else gb._storage.buffer)
    if _replayed(dev, key, bufs, "grad_weight"):
        return
    x4, g4 = _as4(input), _as4(grad)
    p = geo._replace(x=v5(x4, geo.g))
    plans = record_launches(
        dev, lambda: _run(*_choose("grad_weight", p, w), "grad_weight", p, x4, g4, gw, gb),
        bufs, scratch=True)
    if plans is not None:
        _keep_replay(dev, key, parts, geo, plans, "grad_weight",
                     p if settings.getenv("CLGRAD_CONV_DEBUG") else None)


def _replayed(dev, key, bufs, pass_name) -> bool:
    """Replay the pass kept under ``key`` (by _keep_replay) on ``bufs``, set
    backends.last_conv_algorithm(s) and print CLGRAD_CONV_DEBUG's line as _choose does; False
    when nothing is kept."""
    hit = dev.plans.get(key)
    if hit is None:
        return False
    plans, algo, debug = hit
    replay(dev, plans, bufs)
    _BACKENDS["last_conv_algorithm"] = algo  # (no setting: its __setattr__ skipped)
    backends.last_conv_algorithms[pass_name] = algo
    if debug is not None:  # CLGRAD_CONV_DEBUG's line, as _choose prints it
        _debug_choice(pass_name, debug, algo)
    return True


def _keep_replay(dev, key, parts, geo, plans, pass_name, debug):
    """Keep a backward pass's recorded launches under ``key``, unless _choose measured while
    they were recorded (a new table: its trial launches were recorded too)."""
    if key == plan_key(key[0], parts, (geo, id(conv_gpu._TUNED), len(conv_gpu._TUNED))):
        dev.keep_plan(key, (plans, backends.last_conv_algorithms[pass_name], debug))


_FAST_GI = "conv2d_grad_input"  # the tag of _grad_input_replayed's plans
_FAST_GW = "conv2d_grad_weight"  # the tag of _grad_weight_replayed's plans
