"""Transposed 2-D convolution and the 1-D convolutions, built on conv2d's passes.

conv_transpose2d IS the input gradient of a conv2d: its forward runs conv2d's input-gradient
pass (the inserted-zero / phase decomposition and every conv algorithm), its input gradient
is conv2d's forward pass and its weight gradient conv2d's weight-gradient pass with the two
activations swapped. No kernel of its own, no copy of the weight.
conv1d / conv_transpose1d view (N, C, L) as (N, C, 1, L) and the weight (O, C/G, k) as
(O, C/G, 1, k): zero-copy views through the 2-D ops.
"""
from __future__ import annotations

import numpy as np

from clgrad import dtypes
from clgrad.autograd import record
from clgrad.autograd.graph import recomputed
from clgrad.ops import elementwise as ew
from clgrad.ops import matmul as mm
from clgrad.ops import padding
from clgrad.ops import reduce as rd
from clgrad.ops._util import empty, same_device
from clgrad.ops.conv.algorithms import kview
from clgrad.ops.conv.choice import _choose, _grad_input, _run
from clgrad.ops.conv.op import _FOLD, as_float32, conv2d, half_via_float32
from clgrad.ops.conv.problem import (Problem, _as4, _check, _conv_pair, _forward_problem, raw,
                                     v5)
from clgrad.tensor import Tensor

__all__ = ["conv_transpose2d", "conv1d", "conv_transpose1d"]


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-D transposed convolution (PyTorch's ``conv_transpose2d``; argument order as there).

    Shapes:  input (N, C_in, H, W) or (C_in, H, W); weight (C_in, C_out / groups, kH, kW);
             bias (C_out,) -> (N, C_out, H', W'),
             H' = (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1
    Dtypes:  as conv2d's, but float16's route is never measured: im2col on tensor cores,
             else float32's kernels on float32 copies (half_via_float32's rule); under
             ``autocast`` the operands are cast to float16 first, as PyTorch's.
    Grad:    input (a conv2d of the output gradient), weight, bias; differentiable again
             (create_graph: a matmul and fold composition, recomputed).
    Raises:  RuntimeError for inconsistent shapes or groups, output_padding not smaller than
             stride or dilation, a non-positive output size, or tensors of two devices;
             TypeError for non-tensors.
    """
    for name, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"conv_transpose2d: expected {name} to be a Tensor, got "
                            f"{type(t).__name__}")
    if input.ndim not in (3, 4) or weight.ndim != 4:
        raise RuntimeError(f"conv_transpose2d: expected a 3-D or 4-D input and a 4-D weight, "
                           f"got input {list(input.shape)} and weight {list(weight.shape)}")
    input, weight, bias = ew.autocast("conv_transpose2d", input, weight, bias)
    bf16 = dtypes.bfloat16
    if input.dtype is bf16 and weight.dtype is bf16 and (
            bias is None or isinstance(bias, Tensor) and bias.dtype is bf16):
        # in float32 on float32 copies, rounded once (as conv2d's bfloat16)
        return ew.via_float32(conv_transpose2d, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)
    if input.dtype is dtypes.float16 and weight.dtype is dtypes.float16 and (
            bias is None or isinstance(bias, Tensor) and bias.dtype is dtypes.float16):
        g0 = groups if isinstance(groups, int) and groups > 0 else 1
        if half_via_float32(input, weight.shape[0] // g0 * weight.shape[1]):
            return as_float32(conv_transpose2d, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)
        if kview(weight) is None:
            weight = ew.contiguous(weight)  # (float16 runs im2col: conv2d's docstring)
    g = int(groups) if isinstance(groups, (int, np.integer)) else groups
    cin = input.shape[-3]
    if weight.shape[0] != cin:
        raise RuntimeError(f"conv_transpose2d: expected weight with {cin} input channels "
                           f"(dim 0) for input {list(input.shape)}, got {list(weight.shape)}")
    if not isinstance(g, int) or g < 1 or cin % g:
        raise RuntimeError(f"conv_transpose2d: expected groups >= 1 dividing the {cin} input "
                           f"channels, got groups={groups!r}")
    s, p = _conv_pair(stride, "stride"), _conv_pair(padding, "padding")
    d = _conv_pair(dilation, "dilation")
    op = _conv_pair(output_padding, "output_padding")
    if min(s) < 1 or min(d) < 1 or min(p) < 0 or min(op) < 0:
        raise RuntimeError(f"conv_transpose2d: expected stride, dilation >= 1 and padding, "
                           f"output_padding >= 0, got stride={s}, dilation={d}, padding={p}, "
                           f"output_padding={op}")
    if any(o >= max(si, di) for o, si, di in zip(op, s, d)):
        raise RuntimeError(f"conv_transpose2d: output padding must be smaller than either "
                           f"stride or dilation, got output_padding={op}, stride={s}, "
                           f"dilation={d}")
    x4 = _as4(input)
    h, w = x4.shape[2:]
    kh, kw = weight.shape[2:]
    oh = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op[0] + 1
    ow = (w - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op[1] + 1
    if oh < 1 or ow < 1:
        raise RuntimeError(f"conv_transpose2d: the output size ({oh} x {ow}) is too small for "
                           f"input {list(input.shape)}, weight {list(weight.shape)}, "
                           f"stride={s}, padding={p}, dilation={d}")
    # the geometry of the conv2d that maps the output (N, C_out, oh, ow) to the input
    cout = weight.shape[1] * g
    geo = Problem(n=x4.shape[0], g=g, c=cout // g, h=oh, w=ow, o=cin // g, oh=h, ow=w, kh=kh,
                  kw=kw, sh=s[0], sw=s[1], dh=d[0], dw=d[1], ph=p[0], pw=p[1])
    # dtypes, devices and shapes, as checked for the conv2d this transposes
    _check(raw(x4, (x4.shape[0], cout, oh, ow), (0,) * 4), weight, None, s, p, d, g)
    if bias is not None and (not isinstance(bias, Tensor) or tuple(bias.shape) != (cout,) or
                             bias.dtype is not input.dtype):
        raise RuntimeError(f"conv_transpose2d: expected bias of shape ({cout},) and dtype "
                           f"{input.dtype}, got {getattr(bias, 'shape', bias)!r} "
                           f"{getattr(bias, 'dtype', '')}")
    same_device("conv_transpose2d", input, weight, bias)  # _check's conv2d has no bias
    out = empty((x4.shape[0], cout, oh, ow), input.dtype, input._storage.device)
    empty_sum = out.numel() == 0 or x4.numel() == 0
    if not empty_sum:
        _grad_input(geo, x4, weight, out)
    elif out.numel():
        ew.fill_raw(out, 0)
    if bias is not None and out.numel():
        ew.axpby_(out, out, 1.0, bias.view(1, cout, 1, 1), 1.0)

    def backward(gy):
        g4 = _as4(gy)
        gi = gw = gb = None
        if input.requires_grad:
            gi = empty(input.shape, input.dtype, input._storage.device)
            if empty_sum:
                ew.fill_raw(gi, 0)
            else:
                q = _forward_problem(geo, g4, weight, _as4(gi), None)
                _run(*_choose("forward", q, weight), "forward", q, g4, weight, _as4(gi), None)
        if weight.requires_grad:
            gw = empty(weight.shape, weight.dtype, weight._storage.device)
            if empty_sum:
                ew.fill_raw(gw, 0)
            else:
                q = geo._replace(x=v5(g4, g))
                _run(*_choose("grad_weight", q, weight), "grad_weight", q, g4, x4, gw, None)
        if bias is not None and bias.requires_grad:
            gb = rd.sum(g4, dim=(0, 2, 3))
        return gi, gw, gb

    out = record("conv_transpose2d", out, (input, weight, bias), backward,
                 saved=[input, weight], double=(lambda gy, node: recomputed(  # (made when
                     _composed(g, s, p, d, op, oh, ow), (input, weight, bias))(gy, node),  # needed)
                                                  (0, 1), False))  # linked as conv2d's
    return out if input.ndim == 4 else out.view(out.shape[1:])


def _composed(groups, s, p, d, op, oh, ow):
    """conv_transpose2d of the checked geometry as ops whose backward is differentiable: per
    group the weight's transpose times the input (a batched matmul) gives the columns
    (N, C_out kh kw, H W), summed into the (H - 1) s + d (k - 1) + 1 frame by fold (col2im,
    whose backward is unfold and unfold's fold), then cropped by the padding and extended by
    output_padding (narrow, constant pad). What create_graph differentiates (Node.double
    through autograd.graph.recomputed); the first-order gradients stay conv2d's passes.
    Gives the 4-D output (the recorded one, before an unbatched input's view)."""
    def forward(x, w, b):
        x4 = x if x.ndim == 4 else x.unsqueeze(0)
        n, cin, h, wd = x4.shape
        kh, kw = w.shape[2:]
        cout = w.shape[1] * groups
        wt = w.reshape(groups, cin // groups, -1).transpose(-1, -2).unsqueeze(0)
        cols = mm.matmul(wt, x4.reshape(n, groups, cin // groups, h * wd))
        full = ((h - 1) * s[0] + d[0] * (kh - 1) + 1, (wd - 1) * s[1] + d[1] * (kw - 1) + 1)
        y = _FOLD[0](cols.reshape(n, cout * kh * kw, h * wd), full, (kh, kw), d, 0, s)
        keep = [max(0, min(o, f - pi)) for o, f, pi in zip((oh, ow), full, p)]
        y = y.narrow(2, min(p[0], full[0]), keep[0]).narrow(3, min(p[1], full[1]), keep[1])
        if keep != [oh, ow]:  # output_padding beyond the frame: zeros
            y = padding.pad(y, (0, ow - keep[1], 0, oh - keep[0]))
        return y if b is None else ew.add(y, b.reshape(1, cout, 1, 1))
    return forward


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-D cross-correlation: input (N, C, L) or (C, L), weight (O, C / groups, k), bias (O,)
    -> (N, O, L'), L' = (L + 2 padding - dilation (k - 1) - 1) // stride + 1; padding may be
    'same' or 'valid'. conv2d over the unit-height views. Grad: input, weight, bias."""
    _check_1d("conv1d", input, weight)
    pad = padding if isinstance(padding, str) else (0, _one(padding, "padding"))
    out = conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias,
                       (1, _one(stride, "stride")), pad, (1, _one(dilation, "dilation")), groups)
    return out.squeeze(-2)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-D transposed convolution: input (N, C_in, L) or (C_in, L), weight
    (C_in, C_out / groups, k) -> (N, C_out, L'),
    L' = (L - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1."""
    _check_1d("conv_transpose1d", input, weight)
    out = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias,
                           (1, _one(stride, "stride")), (0, _one(padding, "padding")),
                           (0, _one(output_padding, "output_padding")), groups,
                           (1, _one(dilation, "dilation")))
    return out.squeeze(-2)


def _one(v, name):
    """An int or a 1-sequence of one."""
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise RuntimeError(f"conv1d: expected {name} to be an int or a list of 1 value, got "
                               f"{name}={list(v)}")
        v = v[0]
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        raise TypeError(f"conv1d: expected {name} to be an int, got {v!r}")
    return int(v)


def _check_1d(op, x, w):
    for name, t in (("input", x), ("weight", w)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected {name} to be a Tensor, got {type(t).__name__}")
    if x.ndim not in (2, 3) or w.ndim != 3:
        raise RuntimeError(f"{op}: expected a 2-D or 3-D input and a 3-D weight, got input "
                           f"{list(x.shape)} and weight {list(w.shape)}")
