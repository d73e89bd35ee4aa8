"""conv2d's algorithm choice and dispatch (see clgrad/ops/conv/op.py for the algorithms): per
pass ('forward', 'grad_input', 'grad_weight') and problem, ``_choose`` gives the algorithm
(clgrad.backends' setting, or ``_auto``'s, from measurements: clgrad/ops/conv/gpu.py's
``measured``, whose trials run through ``_trial``) and its plan, cached in the device's plans;
``_plan`` and ``_run`` dispatch over the KERNELS tables (clgrad/ops/conv/algorithms.py,
clgrad/ops/conv/gpu.py, clgrad/ops/conv/winograd.py); ``_grad_input`` runs the input-gradient
pass (as one problem or as stride phases).
"""
from __future__ import annotations

import logging
import sys

import numpy as np

from clgrad import _log, backends, dtypes
from clgrad import settings
from clgrad.ops import elementwise as ew
from clgrad.ops._util import empty
from clgrad.ops.conv import algorithms as alg
from clgrad.ops.conv import gpu as conv_gpu
from clgrad.ops.conv import mma
from clgrad.ops.conv import winograd
from clgrad.ops.conv.problem import (Plan, Problem, _forward_problem, _grad_input_problem,
                                     _phases, v5)
from clgrad.ops.plan import cached as plan_cached, key as plan_key
from clgrad.tensor import Tensor

FEW_PAIRS = 16          # C/G * O/G at most this: the stencil algorithms (see _auto)
BIG_OUTPUTS = 8 << 20   # N * O * oH * oW at least this: im2col on GPUs (see _auto)
_KERNELS = {**alg.KERNELS, **conv_gpu.KERNELS,  # algorithm: (forward, weight-gradient) kernels
            **winograd.KERNELS, **mma.KERNELS}


def _grad_input(geo: Problem, g4, w, gi4, algo=None) -> bool:
    """The input gradient, with ``algo`` (False when it cannot run the problem) or the one
    _choose picks. With stride s > 1 the transformed problem has s-1 zeros between
    output-gradient values; it runs as s_h * s_w phase problems instead, each a dense stride-1
    convolution of the output gradient with the taps that meet that phase (a strided view of
    the flipped weight) writing a strided view of gi: no multiply by an inserted zero."""
    p = _grad_input_problem(geo, g4, w, gi4)
    if algo is None:
        algo, plan = _choose("grad_input", p, w)
    elif (plan := _plan(algo, "grad_input", p, w)) is None:
        return False
    if algo == "im2col":  # runs on the forward problem: W^T g, then col2im into gi
        alg.im2col_dgrad(geo._replace(y=p.y), g4, w, gi4)
        return True
    if p.uh * p.uw == 1 or plan.inserts:
        _run(algo, plan, "grad_input", p, g4, w, gi4, None)
        return True
    phases = [q for q in _phases(p) if q is not None]
    if any(q.kh == 0 for q in phases):  # some phase no tap reaches: its gradient is 0
        isz = gi4.dtype.itemsize  # gi4 is fresh and contiguous: clear it, not a kernel
        gi4._storage.device.fill(gi4._storage.buffer, np.zeros(1, gi4.dtype.np),
                                 gi4._offset * isz, gi4.numel() * isz)
    if algo == "blocked" and alg.blocked_phases([q for q in phases if q.kh], g4, w, gi4):
        return True  # one padded copy of the output gradient for all phases
    for q in phases:
        if q.kh:
            a, qplan = algo, _plan(algo, "grad_input", q, w)
            if qplan is None:
                a, qplan = "direct", _plan("direct", "grad_input", q, w)
            _run(a, qplan, "grad_input", q, g4, w, gi4, None)
    return True


# -- dispatch ---------------------------------------------------------------------------------
def _choose(pass_name: str, p: Problem, w: Tensor):
    """(algorithm, plan) for one pass ('forward', 'grad_input', 'grad_weight') of problem p:
    the algorithm set in clgrad.backends (or 'auto'), else the first of implicit, direct that
    can run p; float16 im2col (its GEMMs sum in float32: tensor cores on NVIDIA), or under
    'auto' on GPUs depthwise_gpu for few pairs (its kernels sum in float32): the algorithms
    whose kernels move half values without summing them in half. Records it in
    backends.last_conv_algorithm(s)."""
    want = backends.conv_algorithm
    dev = w._storage.device
    key = plan_key(_CHOICE, (), (pass_name, p, w._storage.dtype, want,
                                 backends.conv_implicit_variant, *conv_gpu.choice_epoch()))
    hit = dev.plans.get(key)
    if hit is not None:
        algo = hit[0]
        backends.last_conv_algorithm = algo
        backends.last_conv_algorithms[pass_name] = algo
        if settings.getenv("CLGRAD_CONV_DEBUG"):
            _debug_choice(pass_name, p, algo)
        return hit
    if want not in backends.CONV_ALGORITHMS:
        raise ValueError(f"conv2d: expected clgrad.backends.conv_algorithm in "
                         f"{backends.CONV_ALGORITHMS}, got {want!r}")
    if backends.conv_implicit_variant not in backends.CONV_IMPLICIT_VARIANTS:
        raise ValueError(f"conv2d: expected clgrad.backends.conv_implicit_variant in "
                         f"{backends.CONV_IMPLICIT_VARIANTS}, got "
                         f"{backends.conv_implicit_variant!r}")
    if w._storage.dtype is dtypes.float16:  # kernels that sum half values in float32
        algo = first = "im2col"
        if want == "auto" and dev.kind == "gpu" and p.c * p.o <= FEW_PAIRS and \
                conv_gpu.few_channels_algorithm(pass_name, p, dev) == "depthwise_gpu":
            algo = first = "depthwise_gpu"  # (its planners take what that function says)
        elif want.startswith("igemm_mma") or want == "auto" and mma.available(dev):
            algo = first = _half_tensor_cores(pass_name, p, w, want)
        plan = _plan(algo, pass_name, p, w)
        if plan is None and algo.startswith("igemm_mma"):
            algo = "im2col"
            plan = _plan(algo, pass_name, p, w)
        if plan is None:  # (conv2d and conv_transpose2d pass a mergeable weight)
            raise RuntimeError("conv2d: float16 runs im2col, which needs a weight whose "
                               "(C/groups, kH, kW) merge into one stride; pass a contiguous "
                               "weight")
    else:
        first = _auto(pass_name, p, dev, w.dtype) if want == "auto" else want
        for algo in (first, "implicit", "direct"):
            plan = _plan(algo, pass_name, p, w)
            if plan is not None:
                break
    backends.last_conv_algorithm = algo
    backends.last_conv_algorithms[pass_name] = algo
    if want == "auto" and _log.logger.isEnabledFor(logging.DEBUG):
        _log_choice(pass_name, p, w, first, algo)
    if settings.getenv("CLGRAD_CONV_DEBUG"):
        _debug_choice(pass_name, p, algo)
    return dev.keep_plan(key, (algo, plan))


def _half_tensor_cores(pass_name: str, p: Problem, w: Tensor, want: str) -> str:
    """A float16 pass's algorithm where igemm_mma may run (mma.py):
    clgrad.backends' 'igemm_mma' (or one of its pinned tiles, 'igemm_mma:small'...), or under
    'auto' the fastest of HALF_CANDIDATES on this problem (igemm_mma:small only where
    igemm_mma's own tiles are not already the small ones), measured once per device, driver
    and problem (conv_gpu.measured, any stride; from conv_gpu._TUNE_MIN_MACS multiply-adds,
    igemm_mma below that: one launch, no workspace); CLGRAD_CONV_TUNE=off: igemm_mma."""
    if want.startswith("igemm_mma"):
        return want
    dev = w._storage.device
    candidates = tuple(a for a in HALF_CANDIDATES if not mma.repeats(a, p, dev))
    return conv_gpu.measured(pass_name, p, dev, dtypes.float16, _trial,
                             candidates, None, f" v{mma.VERSION}") or "igemm_mma"


# _half_tensor_cores's measured candidates: igemm_mma's small tiles win where its own leave
# compute units idle or nearly so (H100, batch 128: ResNet-18's 1 x 1 stride-2 shortcut
# 64 -> 128, forward + backward 0.21 ms on large, 0.17 on small)
HALF_CANDIDATES = ("igemm_mma", "igemm_mma:small", "im2col")


# _choose's answers, (algorithm, plan), in the device's plans under plan.key(_CHOICE, (),
# (pass, problem, dtype, clgrad.backends' algorithm and implicit variant,
# conv_gpu.choice_epoch())). Everything the choice reads is in the key: the problem with its
# views, the settings (the epoch: clgrad.backends, CLGRAD_CONV_TUNE, the vector width), and
# the state of the measured choices (a new measurement, a cleared or replaced table). A cached
# answer saves ~40 µs of Python per conv pass on GPUs.
_CHOICE = "conv_choice"


def _debug_choice(pass_name: str, p: Problem, algo: str):
    """CLGRAD_CONV_DEBUG's line on stderr for one pass."""
    print(f"conv2d {pass_name}: {algo} (N={p.n} G={p.g} C/G={p.c} O/G={p.o} "
          f"{p.h}x{p.w} -> {p.oh}x{p.ow} k={p.kh}x{p.kw} "
          f"s={p.sh},{p.sw} u={p.uh},{p.uw})", file=sys.stderr)


_LOGGED: set = set()  # (pass, problem shape, device, dtype) whose 'auto' choice was logged


def _log_choice(pass_name: str, p: Problem, w: Tensor, first: str, algo: str):
    """Log 'auto''s choice for this pass and shape at DEBUG on the clgrad logger, once."""
    shape = (p.n, p.g, p.c, p.o, p.h, p.w, p.oh, p.ow, p.kh, p.kw, p.sh, p.sw, p.ph, p.pw,
             p.dh, p.dw, p.uh, p.uw)
    key = (pass_name, shape, id(w._storage.device), w.dtype)
    if key in _LOGGED:
        return
    _LOGGED.add(key)
    fell = "" if algo == first else f" ({first} cannot run it)"
    _log.logger.debug("conv2d %s auto: %s%s for N=%d G=%d C/G=%d O/G=%d %dx%d -> %dx%d "
                      "k=%dx%d stride=%d,%d pad=%d,%d dilation=%d,%d zero-insertion=%d,%d "
                      "on %s", pass_name, algo, fell, *shape, w._storage.device.name)


def _kernels(algo: str, pass_name: str, dev):
    if algo == "implicit" and alg.gpu_variant(dev):
        algo = "implicit:gpu"
    return _KERNELS[algo][pass_name == "grad_weight"]


def _plan(algo: str, pass_name: str, p: Problem, w: Tensor):
    """The plan for running the pass with algo, or None when algo cannot run p."""
    if algo == "im2col":
        return None if alg.kview(w) is None else Plan()
    dev = w._storage.device
    planner, _ = _kernels(algo, pass_name, dev)
    if algo not in _PLANNED:
        return planner(p, w.dtype, dev)
    # conv_algorithms' planners read only p, the dtype and the device (its compute units,
    # vector width, local memory and its kernels' own use of it): their plans are cached in
    # the device's plans (a failed plan, None, too) under plan.key of the planner itself (the
    # pass and the implicit variant pick it), the local memory size and the settings epoch
    # (CLGRAD_CPU_VECTOR_WIDTH changes the vector width).
    key = plan_key("conv", (), (planner, p, w._storage.dtype, dev.local_mem_size))
    return plan_cached(dev, key, lambda: planner(p, w._storage.dtype, dev))


_PLANNED = frozenset({"implicit", "depthwise", "pointwise", "direct"})  # conv_algorithms'


def _run(algo: str, plan, pass_name: str, p: Problem, a, b, c, d):
    """Launch the pass: (x, w, y, bias) forward and grad_input, (x, g, gw, gb) grad_weight."""
    if algo == "im2col":
        return alg.IM2COL[pass_name](p, a, b, c, d)
    _, launch = _kernels(algo, pass_name, a._storage.device)
    launch(p, plan, a, b, c, d)


def _auto(pass_name, p: Problem, dev, dtype) -> str:
    """The algorithm 'auto' runs, from measurements (PoCL on 2 Zen 4 cores; an H200 through
    NVIDIA's OpenCL). grad_weight's p is the forward problem. Few channel pairs per group
    (C/G * O/G <= FEW_PAIRS: depthwise with a channel multiplier up to 16 and the like; the
    crossover measured on PoCL lies between 16 and 32): the direct stencils on CPUs,
    conv_gpu's kernels on GPUs. Otherwise the implicit GEMM (its CPU or GPU kernels), except for
    big problems on GPUs (at least BIG_OUTPUTS outputs): there im2col + the tuned GEMM wins
    (H200, AlexNet conv2 groups=2 at N=128: fwd+bwd 24 ms against 33 ms;
    bench/results/gpu/conv_algos.txt), while on small ones (S1, N=64: 3.1 ms against 0.9 ms)
    it loses. im2col's launch count follows its workspace chunks, whose size
    (N * C * kH * kW * H_out * W_out) does not depend on groups. On GPUs a big problem's
    algorithm is measured once and cached (conv_gpu.measured) instead. On CPUs the other
    convs (at least conv_gpu.CPU_TUNE_MIN_MACS multiply-adds) run the faster of implicit and
    blocked, measured once per problem and cached the same way (CLGRAD_CONV_TUNE=off:
    implicit)."""
    few = p.c * p.o <= FEW_PAIRS
    if dev.kind == "cpu":
        if p.kh == p.kw == 1:
            return "pointwise"  # gives way to implicit where it cannot run p
        if few:
            return "depthwise"
        return conv_gpu.measured(pass_name, p, dev, dtype, _trial, conv_gpu.CPU_CANDIDATES,
                                 conv_gpu.CPU_TUNE_MIN_MACS,
                                 f" v{conv_gpu.CPU_TUNE_VERSION}") or "implicit"
    if few:
        return conv_gpu.few_channels_algorithm(pass_name, p, dev)
    big = p.n * p.g * p.o * p.oh * p.ow >= BIG_OUTPUTS
    return conv_gpu.measured(pass_name, p, dev, dtype, _trial) or (
        "im2col" if big else "implicit")


def _trial(pass_name: str, geo: Problem, dtype, dev):
    """run(algo) -> bool for conv_gpu.measured: the pass of the forward geometry geo with algo
    on fresh operands of its shapes (filled with 0.5, not zeros); False when algo cannot run
    it."""
    n, g, c, o = geo.n, geo.g, geo.c, geo.o
    x = empty((n, g * c, geo.h, geo.w), dtype, dev)
    w = empty((g * o, c, geo.kh, geo.kw), dtype, dev)
    y = empty((n, g * o, geo.oh, geo.ow), dtype, dev)
    for t in (x, w, y):
        ew.fill_raw(t, 0.5)
    if pass_name == "grad_input":
        return lambda algo: _grad_input(geo, y, w, x, algo)
    if pass_name == "forward":
        p, args = _forward_problem(geo, x, w, y, None), (x, w, y, None)
    else:
        p, args = geo._replace(x=v5(x, g)), (x, y, w, empty((g * o,), dtype, dev))

    def run(algo):
        plan = _plan(algo, pass_name, p, w)
        if plan is not None:
            _run(algo, plan, pass_name, p, *args)
        return plan is not None
    return run
