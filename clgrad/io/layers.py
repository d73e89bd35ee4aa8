"""Layers that imported nets need and ``clgrad.nn`` does not have, shared by the Caffe and ONNX
importers: pooling with Caffe's and ONNX's window rules, padding (ONNX pads and auto_pad),
batch norm of any rank, concat, softmax, elementwise sum/product/max, reshape, Gemm, MatMul.

Each forward is built from ``clgrad.nn.functional`` and clgrad ops, so autograd works through
every layer.
"""
from __future__ import annotations

import math

import numpy as np

from clgrad import dtypes
from clgrad.creation import from_numpy
from clgrad.layout import cdiv
from clgrad.nn import functional as F
from clgrad.nn.module import Module, Parameter
from clgrad.ops import elementwise as ew
from clgrad.ops.index import cat
from clgrad.ops.matmul import matmul

__all__ = ["Pool2d", "Pad2d", "BatchNorm", "Concat", "Softmax", "Eltwise", "Reshape", "Gemm",
           "MatMul", "auto_pads", "pooled_length", "skip_init"]


def skip_init(cls, *args, **kwargs):
    """``cls(*args, **kwargs)`` without its ``reset_parameters()`` (PyTorch's
    ``nn.utils.skip_init``): the parameters are allocated but left unset, for weights that
    come from a file. Initializing AlexNet's 61M parameters only to overwrite them would cost
    seconds. A class whose __init__ does not call ``self.reset_parameters()`` is simply
    initialized as usual.
    """
    module = cls.__new__(cls)
    object.__setattr__(module, "reset_parameters", lambda: None)  # shadows the method
    cls.__init__(module, *args, **kwargs)
    del module.__dict__["reset_parameters"]
    return module


def pooled_length(size, kernel, stride, lo, hi, dilation=1, ceil_mode=False, drop=True) -> int:
    """Output length of a pooling window sweep along one axis.

    floor or ceil of (size + lo + hi - dilated kernel) / stride, plus 1; then, under ceil_mode
    and when ``drop``, a last window that starts in the end padding (at or past size + lo in
    padded coordinates) is dropped (PyTorch's and onnxruntime's rule; Caffe applies it only to
    layers with padding).
    """
    span = size + lo + hi - dilation * (kernel - 1) - 1
    out = (cdiv(span, stride) if ceil_mode else span // stride) + 1
    if ceil_mode and drop and (out - 1) * stride >= size + lo:
        out -= 1
    return out


def auto_pads(auto_pad, size_hw, kernel, stride, dilation=(1, 1)):
    """(top, left, bottom, right) for ONNX auto_pad: SAME_UPPER/SAME_LOWER give
    ceil(size / stride) outputs with the odd pad at the end (UPPER) or start (LOWER);
    VALID gives none."""
    if auto_pad == "VALID":
        return (0, 0, 0, 0)
    begins, ends = [], []
    for size, k, s, d in zip(size_hw, kernel, stride, dilation):
        total = max(0, (cdiv(size, s) - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return (begins[0], begins[1], ends[0], ends[1])


class Pool2d(Module):
    """MAX or AVE pooling of (N, C, H, W) with Caffe's or ONNX's window rules.

    Calls F.max_pool2d / F.avg_pool2d directly when PyTorch's rules give the same windows (the
    common case: symmetric padding up to half the kernel). Otherwise pads explicitly (-inf for
    MAX, zeros for AVE), pools without padding and crops to the expected size; AVE then divides
    window sums by counts computed on the host. That covers asymmetric padding (ONNX pads,
    auto_pad SAME_*), padding over half the kernel and Caffe's rounding.

    kind:      "MAX" or "AVE"; kernel (kh, kw), or None for global pooling over each H x W
    pads:      (top, left, bottom, right); auto_pad: ONNX's mode (pads then follow the input)
    ceil_mode: round the output size up; ``caffe_rounding``: drop a last window starting in
               the padding only when some pad is non-zero (Caffe), else always (PyTorch, ONNX)
    count_include_pad: AVE divides by the window clipped to the padded input (True, Caffe)
               or to the input (False)
    """

    def __init__(self, kind, kernel=None, stride=(1, 1), pads=(0, 0, 0, 0), dilation=(1, 1),
                 ceil_mode=False, count_include_pad=True, auto_pad="NOTSET",
                 caffe_rounding=False):
        super().__init__()
        if kind not in ("MAX", "AVE"):
            raise ValueError(f"Pool2d: expected kind 'MAX' or 'AVE', got {kind!r}")
        if kind == "AVE" and tuple(dilation) != (1, 1):
            raise NotImplementedError(f"Pool2d: average pooling with dilation {dilation} is "
                                      "not supported")
        self.kind, self.kernel = kind, None if kernel is None else tuple(kernel)
        self.stride, self.pads, self.dilation = tuple(stride), tuple(pads), tuple(dilation)
        self.ceil_mode, self.count_include_pad = bool(ceil_mode), bool(count_include_pad)
        self.auto_pad, self.caffe_rounding = auto_pad, caffe_rounding
        self._counts = {}  # (H, W, pads, dtype, device) -> divisor tensor (oH, oW)

    def forward(self, x):
        """Pool ``x`` with this layer's window rules (see the class docstring).

        Shapes:  (N, C, H, W) -> (N, C, OH, OW), OH and OW from pooled_length (global pooling:
                 (N, C, 1, 1))
        Raises:  ValueError for an input that is not 4-D, an empty output, or (AVE) a window
                 wholly in the padding; as F.max_pool2d / F.avg_pool2d otherwise
        """
        if x.ndim != 4:
            raise ValueError(f"Pool2d: expected a 4-D input (N, C, H, W), got shape "
                             f"{tuple(x.shape)}")
        h, w = x.shape[2:]
        if self.kernel is None:
            pool = F.max_pool2d if self.kind == "MAX" else F.avg_pool2d
            return pool(x, (h, w))
        k, s, d = self.kernel, self.stride, self.dilation
        pads = self.pads if self.auto_pad in ("NOTSET", "") else auto_pads(
            self.auto_pad, (h, w), k, s, d)
        t, l, b, r = pads
        drop = not self.caffe_rounding or any(pads)
        oh = pooled_length(h, k[0], s[0], t, b, d[0], self.ceil_mode, drop)
        ow = pooled_length(w, k[1], s[1], l, r, d[1], self.ceil_mode, drop)
        if oh < 1 or ow < 1:
            raise ValueError(f"Pool2d: input {h}x{w} with kernel {k}, stride {s}, pads {pads} "
                             f"gives an empty output {oh}x{ow}")
        native = (t == b and l == r and t <= k[0] // 2 and l <= k[1] // 2 and
                  pooled_length(h, k[0], s[0], t, t, d[0], self.ceil_mode) == oh and
                  pooled_length(w, k[1], s[1], l, l, d[1], self.ceil_mode) == ow)
        if native and self.kind == "MAX":
            return F.max_pool2d(x, k, s, (t, l), d, ceil_mode=self.ceil_mode)
        if native:
            return F.avg_pool2d(x, k, s, (t, l), self.ceil_mode, self.count_include_pad)
        eh = max(0, (oh - 1) * s[0] + d[0] * (k[0] - 1) + 1 - (h + t + b))
        ew_ = max(0, (ow - 1) * s[1] + d[1] * (k[1] - 1) + 1 - (w + l + r))
        if self.kind == "MAX":
            xp = F.pad(x, (l, r + ew_, t, b + eh), value=float("-inf"))
            return F.max_pool2d(xp, k, s, 0, d)[:, :, :oh, :ow]
        sums = F.avg_pool2d(F.pad(x, (l, r + ew_, t, b + eh)), k, s, 0, divisor_override=1)
        return ew.div(sums[:, :, :oh, :ow], self._divisor(x, (h, w), pads, (oh, ow)))

    def _divisor(self, x, hw, pads, out):
        key = (hw, pads, x.dtype.name, x._storage.device)
        if key not in self._counts:
            counts = [_window_counts(hw[i], self.kernel[i], self.stride[i], pads[i],
                                     pads[i + 2], out[i], self.count_include_pad)
                      for i in (0, 1)]
            grid = np.outer(*counts).astype(dtypes.host_np(x.dtype))  # (bfloat16: float32)
            self._counts[key] = ew.to(from_numpy(grid, device=x._storage.device), x.dtype)
        return self._counts[key]

    def extra_repr(self):
        """'KIND, kernel=K (or global), stride=S, pads=P, ceil_mode=B'."""
        return (f"{self.kind}, kernel={self.kernel or 'global'}, stride={self.stride}, "
                f"pads={self.pads}, ceil_mode={self.ceil_mode}")


class Pad2d(Module):
    """Zero padding of the last two dims by (top, left, bottom, right), or by ONNX auto_pad
    SAME_UPPER/SAME_LOWER computed from each input's size (for a following convolution)."""

    def __init__(self, pads=(0, 0, 0, 0), auto_pad="NOTSET", kernel=None, stride=(1, 1),
                 dilation=(1, 1)):
        super().__init__()
        self.pads, self.auto_pad = tuple(pads), auto_pad
        self.kernel, self.stride, self.dilation = kernel, tuple(stride), tuple(dilation)

    def forward(self, x):
        """Zero-pad the last two dims; ``x`` itself when every pad is 0.

        Shapes:  (*, H, W) -> (*, H + top + bottom, W + left + right); see F.pad
        """
        t, l, b, r = self.pads if self.auto_pad in ("NOTSET", "") else auto_pads(
            self.auto_pad, x.shape[-2:], self.kernel, self.stride, self.dilation)
        return x if not (t or l or b or r) else F.pad(x, (l, r, t, b))

    def extra_repr(self):
        """'pads=(t, l, b, r)', or the auto_pad mode."""
        return f"pads={self.pads}" if self.auto_pad in ("NOTSET", "") else self.auto_pad


class BatchNorm(Module):
    """(x - mean) / sqrt(var + eps) [* weight + bias] per channel (dim 1), inputs of any rank
    >= 2 (Caffe BatchNorm follows InnerProduct layers too). Buffers running_mean/running_var;
    parameters weight/bias when ``affine``. Batch statistics when ``use_batch_stats`` (Caffe's
    use_global_stats false) or in training mode; the running statistics are never updated."""

    def __init__(self, num_features, eps=1e-5, affine=False, use_batch_stats=False):
        super().__init__()
        self.num_features, self.eps, self.use_batch_stats = num_features, eps, use_batch_stats
        self.register_buffer("running_mean", from_numpy(np.zeros(num_features, np.float32)))
        self.register_buffer("running_var", from_numpy(np.ones(num_features, np.float32)))
        self.weight = self.bias = None
        if affine:
            self.weight = Parameter(from_numpy(np.ones(num_features, np.float32)))
            self.bias = Parameter(from_numpy(np.zeros(num_features, np.float32)))

    def forward(self, x):
        """Normalise per channel: batch statistics when ``use_batch_stats`` or training, else the
        running statistics (never updated here, unlike nn.BatchNorm2d).

        Shapes:  (N, C, *) -> same; see clgrad.nn.functional.batch_norm
        Dtypes:  x's dtype must match the buffers' and parameters' where they are used (float32
                 as constructed; the ONNX importer may set others); TypeError otherwise
        """
        if self.use_batch_stats or self.training:
            return F.batch_norm(x, None, None, self.weight, self.bias, True, 0.0, self.eps)
        return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            False, 0.0, self.eps)

    def extra_repr(self):
        """'num_features, eps=E, affine=B'."""
        return f"{self.num_features}, eps={self.eps}, affine={self.weight is not None}"


class Concat(Module):
    """Concatenate its inputs along ``dim``."""

    def __init__(self, dim=1):
        super().__init__()
        self.dim = dim

    def forward(self, *xs):
        """cat(xs, dim): shapes equal except along ``dim``; see clgrad.ops.index.cat."""
        return cat(list(xs), self.dim)

    def extra_repr(self):
        """'dim=D'."""
        return f"dim={self.dim}"


class Softmax(Module):
    """Softmax along ``dim``; with ``coerce_2d`` (ONNX before opset 13) the input is seen as
    2-D, (prod(shape[:dim]), prod(shape[dim:])), and normalized over its second axis."""

    def __init__(self, dim=1, coerce_2d=False):
        super().__init__()
        self.dim, self.coerce_2d = dim, coerce_2d

    def forward(self, x):
        """Softmax along dim (or over the coerced 2-D view's second axis); x (*) -> same."""
        if not self.coerce_2d:
            return F.softmax(x, dim=self.dim)
        dim = self.dim % x.ndim if x.ndim else 0
        flat = x.reshape(math.prod(x.shape[:dim]), math.prod(x.shape[dim:]))
        return F.softmax(flat, dim=1).reshape(tuple(x.shape))

    def extra_repr(self):
        """'dim=D' (and ', coerce_2d=True')."""
        return f"dim={self.dim}" + (", coerce_2d=True" if self.coerce_2d else "")


class Eltwise(Module):
    """Elementwise over its inputs (NumPy broadcasting): "SUM" (weighted by ``coeff`` when
    given), "PROD" or "MAX"."""

    def __init__(self, operation="SUM", coeff=()):
        super().__init__()
        if operation not in ("SUM", "PROD", "MAX"):
            raise ValueError(f"Eltwise: expected SUM, PROD or MAX, got {operation!r}")
        self.operation, self.coeff = operation, tuple(coeff)

    def forward(self, *xs):
        """SUM (with coeff weights), PROD or MAX of the inputs, folded left to right; the inputs
        broadcast together -> their broadcast shape.

        Raises:  ValueError when coeff is given and its length differs from the number of inputs
        """
        if self.coeff and len(self.coeff) != len(xs):
            raise ValueError(f"Eltwise: expected one coeff per input, got {len(self.coeff)} "
                             f"coeffs for {len(xs)} inputs")
        terms = [x if not self.coeff or c == 1 else ew.mul(x, c)
                 for x, c in zip(xs, self.coeff or [1] * len(xs))]
        op = {"SUM": ew.add, "PROD": ew.mul, "MAX": ew.maximum}[self.operation]
        y = terms[0]
        for t in terms[1:]:
            y = op(y, t)
        return y

    def extra_repr(self):
        """'SUM' / 'PROD' / 'MAX' (and ', coeff=[...]')."""
        return self.operation + (f", coeff={list(self.coeff)}" if self.coeff else "")


class Reshape(Module):
    """ONNX Reshape to a fixed ``shape``: 0 copies the input's dim (unless ``allowzero``), -1
    is inferred."""

    def __init__(self, shape, allowzero=False):
        super().__init__()
        self.shape, self.allowzero = tuple(int(d) for d in shape), bool(allowzero)

    def forward(self, x):
        """``x.reshape(shape)`` with 0 entries taken from x (unless allowzero) and -1 inferred:
        a view when the strides allow, else a copy.
        """
        shape = [x.shape[i] if d == 0 and not self.allowzero else d
                 for i, d in enumerate(self.shape)]
        return x.reshape(tuple(shape))

    def extra_repr(self):
        """'shape=S'."""
        return f"shape={self.shape}"


class Gemm(Module):
    """ONNX Gemm: alpha * A' @ B' + beta * C, A' = A.T if trans_a, B' = B.T if trans_b."""

    def __init__(self, alpha=1.0, beta=1.0, trans_a=False, trans_b=False):
        super().__init__()
        self.alpha, self.beta = float(alpha), float(beta)
        self.trans_a, self.trans_b = bool(trans_a), bool(trans_b)

    def forward(self, a, b, c=None):
        """alpha * A' @ B' + beta * C (F.linear when that is the same computation).

        Shapes:  a (M, K) (or (K, M) with trans_a), b (K, N) (or (N, K) with trans_b), c
                 broadcast to (M, N) -> (M, N)
        """
        a = a.t() if self.trans_a else a
        if self.trans_b and self.alpha == 1.0 and self.beta == 1.0 and (c is None or
                                                                       c.ndim == 1):
            return F.linear(a, b, c)
        y = matmul(a, b.t() if self.trans_b else b)
        if self.alpha != 1.0:
            y = ew.mul(y, self.alpha)
        if c is not None:
            y = ew.add(y, c if self.beta == 1.0 else ew.mul(c, self.beta))
        return y

    def extra_repr(self):
        """'alpha=A, beta=B, trans_a=T, trans_b=T'."""
        return (f"alpha={self.alpha}, beta={self.beta}, trans_a={self.trans_a}, "
                f"trans_b={self.trans_b}")


class MatMul(Module):
    """a @ b with NumPy's matmul rules."""

    def forward(self, a, b):
        """a @ b; shapes as clgrad.ops.matmul.matmul (batch dims broadcast, 1-D are vectors)."""
        return matmul(a, b)


def _window_counts(size, kernel, stride, lo, hi, n, include_pad):
    start = np.arange(n) * stride - lo
    clip_lo, clip_hi = (-lo, size + hi) if include_pad else (0, size)
    counts = np.minimum(start + kernel, clip_hi) - np.maximum(start, clip_lo)
    if counts.min() < 1:
        raise ValueError(f"Pool2d: an average window lies wholly in the padding (size {size}, "
                         f"kernel {kernel}, stride {stride}, pads ({lo}, {hi}))")
    return counts
