"""An independent NumPy float64 forward pass for Caffe nets: the oracle for loaded models.

Consumes the normalized layers of ``clgrad.io.caffe_net.describe_net`` and the blobs of
``clgrad.io.caffemodel.blobs_by_name(decode_caffemodel(...))``. Written for clarity, not
speed: loops over groups and pooling windows, einsum over ``sliding_window_view`` windows.
Follows Caffe's own (test-phase) semantics where they differ from other frameworks:

- Pooling: output size rounds UP by default (``ceil_mode``), then a last window that would start
  inside the bottom/right padding is dropped; AVE divides by the window clipped to the padded
  input (so border windows count padding, windows hanging past it do not); MAX ignores padding.
- LRN ACROSS_CHANNELS: ``x / (k + alpha/n * sum_{n channels around c} x^2) ** beta``, zero
  padding at the channel ends. WITHIN_CHANNEL: ``x / (1 + alpha/n^2 * sum_{n x n} x^2) ** beta``
  (Caffe builds it from AVE pooling with pad (n-1)/2, and ignores k).
- BatchNorm: blobs (mean * s, var * s, [s]); stats are divided by s (0 when s == 0).
- Dropout is the identity (Caffe scales during training, not at test time).

Usage::

    out = forward(describe_net(tree), {"data": x}, blobs_by_name(decoded))
    out["prob"]   # every top, float64
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

__all__ = ["forward", "conv2d", "pool2d", "pooled_size", "lrn", "inner_product", "softmax"]


def forward(layers, inputs, blobs=None):
    """Run the layers in order; return {blob name: float64 array} for inputs and every top.

    layers: describe_net output. inputs: {Input top name: array}. blobs: {layer name: [arrays]}
    for layers with parameters. Raises KeyError for a missing input or parameter blob,
    ValueError for shapes that do not fit.
    """
    blobs = blobs or {}
    values = {}
    for layer in layers:
        kind, p, name = layer["type"], layer["params"], layer["name"]
        if kind == "Input":
            for top in layer["tops"]:
                values[top] = np.asarray(inputs[top], dtype=np.float64)
            continue
        xs = [values[b] for b in layer["bottoms"]]
        w = [np.asarray(b, dtype=np.float64) for b in blobs.get(name, [])]
        x = xs[0] if xs else None
        if kind == "Convolution":
            bias = w[1] if p["bias_term"] else None
            y = conv2d(x, w[0], bias, p["stride"], p["pad"], p["dilation"], p["group"])
        elif kind == "ReLU":
            y = np.where(x > 0, x, p["negative_slope"] * x)
        elif kind == "Pooling":
            y = pool2d(x, p["pool"], p["kernel"], p["stride"], p["pad"], p["global_pooling"],
                       p["ceil_mode"])
        elif kind == "LRN":
            y = lrn(x, p["local_size"], p["alpha"], p["beta"], p["k"], p["norm_region"])
        elif kind == "InnerProduct":
            y = inner_product(x, w[0], w[1] if p["bias_term"] else None, p["axis"],
                              p["transpose"])
        elif kind == "Dropout":
            y = x.copy()
        elif kind == "Softmax":
            y = softmax(x, p["axis"])
        elif kind == "Concat":
            y = np.concatenate(xs, axis=p["axis"])
        elif kind == "Flatten":
            axis, end = p["axis"] % x.ndim, p["end_axis"] % x.ndim
            y = x.reshape(x.shape[:axis] + (-1,) + x.shape[end + 1:])
        elif kind == "BatchNorm":
            y = _batch_norm(x, w, p["eps"], p["use_global_stats"])
        elif kind == "Scale":
            y = _scale(xs, w, p)
        elif kind == "Eltwise":
            y = _eltwise(xs, p["operation"], p["coeff"])
        else:
            raise ValueError(f"forward: layer '{name}': unsupported type {kind!r}")
        values[layer["tops"][0]] = y
    return values


def conv2d(x, w, b, stride, pad, dilation, group):
    """Grouped 2-D cross-correlation. x (N, C, H, W), w (O, C/group, kh, kw), b (O,) or None."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if c != cg * group or o % group:
        raise ValueError(f"conv2d: expected C = {cg} * group {group} and O divisible by group, "
                         f"got x {x.shape}, w {w.shape}")
    (sh, sw), (ph, pw), (dh, dw) = stride, pad, dilation
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    extent = (dh * (kh - 1) + 1, dw * (kw - 1) + 1)
    if xp.shape[2] < extent[0] or xp.shape[3] < extent[1]:
        raise ValueError(f"conv2d: kernel extent {extent} larger than padded input {xp.shape}")
    # (N, C, OH, OW, extent_h, extent_w) -> take every dilation-th tap: (N, C, OH, OW, kh, kw)
    windows = sliding_window_view(xp, extent, axis=(2, 3))[:, :, ::sh, ::sw, ::dh, ::dw]
    og = o // group
    outs = [np.einsum("nchwij,ocij->nohw", windows[:, g * cg:(g + 1) * cg],
                      w[g * og:(g + 1) * og], optimize=True) for g in range(group)]
    out = np.concatenate(outs, axis=1)
    return out if b is None else out + b.reshape(1, -1, 1, 1)


def pooled_size(size, kernel, stride, pad, ceil_mode):
    """Caffe's pooled output length along one axis."""
    rounding = math.ceil if ceil_mode else math.floor
    out = int(rounding((size + 2 * pad - kernel) / stride)) + 1
    if pad and (out - 1) * stride >= size + pad:
        out -= 1  # the last window would start inside the padding: Caffe drops it
    return out


def pool2d(x, pool, kernel, stride, pad, global_pooling=False, ceil_mode=True):
    """Caffe MAX/AVE pooling of x (N, C, H, W), window by window."""
    n, c, h, w = x.shape
    if global_pooling:
        kernel, stride, pad = (h, w), (1, 1), (0, 0)
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, pad
    oh = pooled_size(h, kh, sh, ph, ceil_mode)
    ow = pooled_size(w, kw, sw, pw, ceil_mode)
    out = np.empty((n, c, oh, ow))
    for i in range(oh):
        hs = i * sh - ph
        he = min(hs + kh, h + ph)
        for j in range(ow):
            ws = j * sw - pw
            we = min(ws + kw, w + pw)
            window = x[:, :, max(hs, 0):min(he, h), max(ws, 0):min(we, w)]
            if window.size == 0:
                raise ValueError(f"pool2d: output ({i}, {j}) has an empty window")
            if pool == "MAX":
                out[:, :, i, j] = window.max(axis=(2, 3))
            else:
                out[:, :, i, j] = window.sum(axis=(2, 3)) / ((he - hs) * (we - ws))
    return out


def lrn(x, size, alpha, beta, k, norm_region="ACROSS_CHANNELS"):
    """Caffe local response normalization of x (N, C, H, W)."""
    half = (size - 1) // 2
    sq = x * x
    if norm_region == "WITHIN_CHANNEL":
        mean = pool2d(sq, "AVE", (size, size), (1, 1), (half, half))
        return x * (1.0 + alpha * mean) ** -beta
    padded = np.pad(sq, ((0, 0), (half, half), (0, 0), (0, 0)))
    total = sum(padded[:, i:i + x.shape[1]] for i in range(size))
    return x * (k + alpha / size * total) ** -beta


def inner_product(x, w, b, axis=1, transpose=False):
    """Caffe InnerProduct: flatten x from ``axis`` on, multiply by w (O, K) (or (K, O))."""
    lead = x.shape[:axis]
    flat = x.reshape(math.prod(lead), -1)
    k = flat.shape[1]
    w = w.reshape(k, -1) if transpose else w.reshape(-1, k)  # legacy 4-D blobs (1, 1, O, K)
    y = flat @ (w if transpose else w.T)
    if b is not None:
        y = y + b.reshape(-1)
    return y.reshape(lead + (y.shape[1],))


def softmax(x, axis=1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _channel(v, ndim):
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def _batch_norm(x, w, eps, use_global_stats):
    if use_global_stats:
        s = w[2].reshape(-1)[0]
        factor = 0.0 if s == 0 else 1.0 / s
        mean, var = w[0] * factor, w[1] * factor
    else:
        axes = (0,) + tuple(range(2, x.ndim))
        mean, var = x.mean(axis=axes), x.var(axis=axes)
    return (x - _channel(mean, x.ndim)) / np.sqrt(_channel(var, x.ndim) + eps)


def _scale(xs, w, p):
    x = xs[0]
    gamma = xs[1] if len(xs) > 1 else w[0]
    axis = p["axis"] % x.ndim
    shape = (1,) * axis + gamma.shape + (1,) * (x.ndim - axis - gamma.ndim)
    y = x * gamma.reshape(shape)
    if p["bias_term"]:
        y = y + w[-1].reshape(shape)
    return y


def _eltwise(xs, operation, coeff):
    if operation == "PROD":
        return np.prod(xs, axis=0)
    if operation == "MAX":
        return np.max(xs, axis=0)
    coeff = coeff or [1.0] * len(xs)
    return sum(c * x for c, x in zip(coeff, xs))
