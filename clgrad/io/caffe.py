"""Load Caffe models (``deploy.prototxt`` + ``.caffemodel``) as clgrad Modules, no Caffe needed.

    net = load_caffe("deploy.prototxt", "bvlc_alexnet.caffemodel")
    prob = net(x)                       # x (N, 3, 227, 227) float32, BGR, mean subtracted
    net.conv2.weight.shape              # (256, 48, 5, 5): group=2 is Conv2d(groups=2)

The prototxt is read by ``clgrad.io.prototxt`` and normalized by ``clgrad.io.caffe_net``; the
caffemodel is decoded by ``clgrad.io.caffemodel``. Shapes are inferred from the Input layers
through the net, so every blob is checked against the shape its layer needs before any tensor
is made, and a prototxt alone gives a net with PyTorch's default initialization.
"""
from __future__ import annotations

import math
import os
from collections import namedtuple

import numpy as np

from clgrad import nn
from clgrad.creation import from_numpy
from clgrad.nn.module import Module, Parameter
from clgrad.ops import elementwise as ew

from .caffe_net import describe_net
from .caffemodel import blobs_by_name, read_caffemodel
from .graph import Graph
from .layers import BatchNorm, Concat, Eltwise, Pool2d, Softmax, pooled_length, skip_init
from .prototxt import read_prototxt

__all__ = ["load_caffe", "build_caffe"]


def load_caffe(prototxt_path: str | os.PathLike, caffemodel_path: str | os.PathLike | None = None,
               *, phase: str = "TEST") -> Graph:
    """Build the net of a Caffe ``.prototxt`` and, if given, load a ``.caffemodel``'s weights.

    Layers: Input (and the legacy input/input_dim header), Convolution (grouped natively: ONE
             nn.Conv2d with groups=group and the weight blob as is, (C_out, C_in/group, kH,
             kW)), InnerProduct (nn.Linear over the input flattened from ``axis``; legacy 4-D
             (1, 1, O, K) blobs accepted), Pooling MAX/AVE (Caffe's ceil rounding, global),
             LRN, ReLU (leaky with negative_slope), Dropout, Softmax, Concat, Flatten,
             BatchNorm (blobs mean, variance, scale factor: the statistics are divided by it),
             Scale, Eltwise. In-place layers (top == bottom) rebind the blob name.
    Returns: a ``Graph`` in eval mode; positional inputs are the Input tops in order, the
             output is every blob no later layer reads (e.g. 'prob'); children and
             ``state_dict`` keys are named after the layers ('conv1.weight').
    Raises:  ValueError naming the file and layer for syntax errors, unknown layer types,
             truncated or corrupt caffemodels, a parameterised layer without blobs in the
             caffemodel, or a blob whose shape differs from the one the prototxt implies.
    """
    layers = _read(prototxt_path, lambda p: describe_net(read_prototxt(p), phase=phase))
    blobs = None
    if caffemodel_path is not None:
        blobs = _read(caffemodel_path, lambda p: blobs_by_name(read_caffemodel(p)))
    try:
        return build_caffe(layers, blobs)
    except ValueError as e:
        files = os.fspath(prototxt_path) + (
            "" if caffemodel_path is None else " + " + os.fspath(caffemodel_path))
        raise ValueError(f"load_caffe: {files}: {e}") from e


def build_caffe(layers: list[dict], blobs: dict | None = None) -> Graph:
    """The Graph of normalized layers (``describe_net``) with blobs ({layer name: [arrays]},
    ``blobs_by_name``), or default-initialized parameters when ``blobs`` is None."""
    shapes = {top: shape for layer in layers if layer["type"] == "Input"
              for top, shape in zip(layer["tops"], layer["params"]["shapes"])}
    graph = Graph(list(shapes), label="layer", input_shapes=shapes)
    new = _construct if blobs is None else skip_init  # weights from a file: no default init
    for layer in layers:
        if layer["type"] == "Input":
            continue
        where = f"layer '{layer['name']}' ({layer['type']})"
        undefined = [b for b in layer["bottoms"] if b not in shapes]
        if undefined or len(layer["tops"]) != 1:
            raise ValueError(f"{where}: expected bottoms defined by earlier layers and one top, "
                             f"got undefined bottoms {undefined} and tops {layer['tops']}")
        module, out_shape, wanted = _BUILDERS[layer["type"]](
            layer["params"], [shapes[b] for b in layer["bottoms"]], where, new)
        if wanted is not None and blobs is not None:
            wanted.assign(module, _layer_blobs(layer["name"], blobs, wanted.specs, where))
        graph.add_step(layer["name"], module, layer["bottoms"], layer["tops"], layer["type"])
        shapes[layer["tops"][0]] = out_shape
    return graph.eval()


# -- layer builders: (params, bottom shapes, where, new) -> (module, top shape, Blobs or None) --
# new(cls, *args) constructs a layer with parameters: cls(*args), or skip_init when they are
# about to be loaded. Blobs (None for layers without parameters) says which blobs the layer
# takes: specs [(label, expected shape, what the shape comes from)], and assign(module, arrays)
# stores the checked arrays in the module.

Blobs = namedtuple("Blobs", ["specs", "assign"])


def _convolution(p, shapes, where, new):
    n, c, h, w = _rank4(shapes[0], where)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = p["kernel"], p["stride"], p["pad"], p["dilation"]
    o, g = p["num_output"], p["group"]
    if c % g:
        raise ValueError(f"{where}: expected input channels divisible by group, got {c} "
                         f"channels (bottom shape {shapes[0]}) and group={g}")
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    if oh < 1 or ow < 1:
        raise ValueError(f"{where}: kernel {kh}x{kw} (dilation {dh}x{dw}) does not fit the "
                         f"{h}x{w} input padded by {ph}x{pw}")
    conv = new(nn.Conv2d, c, o, (kh, kw), (sh, sw), (ph, pw), (dh, dw), g, p["bias_term"])
    why = f"num_output {o}, {c} input channels / group {g}, kernel {kh}x{kw}"
    specs = [("weight", (o, c // g, kh, kw), why)]
    if p["bias_term"]:
        specs.append(("bias", (o,), f"num_output {o}"))
    return conv, (n, o, oh, ow), Blobs(specs, _assign("weight", "bias"))


def _inner_product(p, shapes, where, new):
    shape = shapes[0]
    axis = _axis(p["axis"], len(shape), where)
    k, o = math.prod(shape[axis:]), p["num_output"]
    layer = new(InnerProduct, k, o, axis, p["bias_term"])
    why = f"num_output {o}, {k} inputs (bottom shape {shape} flattened from axis {axis})"
    specs = [("weight", (k, o) if p["transpose"] else (o, k), why)]
    if p["bias_term"]:
        specs.append(("bias", (o,), f"num_output {o}"))
    assign = _assign_transposed if p["transpose"] else _assign("weight", "bias")
    return layer, tuple(shape[:axis]) + (o,), Blobs(specs, assign)


def _pooling(p, shapes, where, new):
    n, c, h, w = _rank4(shapes[0], where)
    if p["global_pooling"]:
        return Pool2d(p["pool"]), (n, c, 1, 1), None
    (kh, kw), (sh, sw), (ph, pw) = p["kernel"], p["stride"], p["pad"]
    drop = bool(ph or pw)
    oh = pooled_length(h, kh, sh, ph, ph, 1, p["ceil_mode"], drop)
    ow = pooled_length(w, kw, sw, pw, pw, 1, p["ceil_mode"], drop)
    if oh < 1 or ow < 1:
        raise ValueError(f"{where}: kernel {kh}x{kw} does not fit the {h}x{w} input padded by "
                         f"{ph}x{pw}")
    pool = Pool2d(p["pool"], (kh, kw), (sh, sw), (ph, pw, ph, pw), ceil_mode=p["ceil_mode"],
                  count_include_pad=True, caffe_rounding=True)
    return pool, (n, c, oh, ow), None


def _lrn(p, shapes, where, new):
    if len(shapes[0]) < 3:
        raise ValueError(f"{where}: expected a bottom of 3 or more dims, got {shapes[0]}")
    if p["norm_region"] == "WITHIN_CHANNEL":
        _rank4(shapes[0], where)
        return WithinChannelLRN(p["local_size"], p["alpha"], p["beta"]), shapes[0], None
    lrn = nn.LocalResponseNorm(p["local_size"], p["alpha"], p["beta"], p["k"])
    return lrn, shapes[0], None


def _relu(p, shapes, where, new):
    slope = p["negative_slope"]
    return (nn.LeakyReLU(slope) if slope else nn.ReLU()), shapes[0], None


def _dropout(p, shapes, where, new):
    return nn.Dropout(p["dropout_ratio"]), shapes[0], None


def _softmax(p, shapes, where, new):
    return Softmax(_axis(p["axis"], len(shapes[0]), where)), shapes[0], None


def _concat(p, shapes, where, new):
    axis = _axis(p["axis"], len(shapes[0]), where)
    rest = [s[:axis] + s[axis + 1:] for s in shapes]
    if any(len(s) != len(shapes[0]) for s in shapes) or any(r != rest[0] for r in rest):
        raise ValueError(f"{where}: expected bottoms equal except along axis {axis}, got "
                         f"shapes {shapes}")
    out = shapes[0][:axis] + (sum(s[axis] for s in shapes),) + shapes[0][axis + 1:]
    return Concat(axis), out, None


def _flatten(p, shapes, where, new):
    shape = shapes[0]
    start, end = _axis(p["axis"], len(shape), where), _axis(p["end_axis"], len(shape), where)
    if end < start:
        raise ValueError(f"{where}: expected end_axis >= axis, got axis {p['axis']}, end_axis "
                         f"{p['end_axis']} for a bottom of shape {shape}")
    out = shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:]
    return nn.Flatten(start, end), out, None


def _batch_norm(p, shapes, where, new):
    if len(shapes[0]) < 2:
        raise ValueError(f"{where}: expected a bottom of 2 or more dims, got {shapes[0]}")
    c = shapes[0][1]
    bn = BatchNorm(c, p["eps"], affine=False, use_batch_stats=not p["use_global_stats"])
    why = f"{c} channels (bottom shape {shapes[0]})"
    specs = [("mean", (c,), why), ("variance", (c,), why), ("scale factor", (1,), "one value")]
    return bn, shapes[0], Blobs(specs, _assign_batch_norm)


def _scale(p, shapes, where, new):
    shape = shapes[0]
    axis = _axis(p["axis"], len(shape), where)
    if len(shapes) > 1:
        param_shape, has_weight = shapes[1], False
    else:
        end = len(shape) if p["num_axes"] == -1 else axis + p["num_axes"]
        if not axis <= end <= len(shape):
            raise ValueError(f"{where}: expected num_axes -1 or 0..{len(shape) - axis}, got "
                             f"{p['num_axes']} for a bottom of shape {shape}")
        param_shape, has_weight = shape[axis:end], True
    if tuple(shape[axis:axis + len(param_shape)]) != tuple(param_shape):
        raise ValueError(f"{where}: expected a scale of shape {shape[axis:]} or a prefix of "
                         f"it, got {param_shape}")
    layer = Scale(param_shape, axis, has_weight, p["bias_term"])
    why = f"bottom shape {shape} from axis {axis}"
    names = (["weight"] if has_weight else []) + (["bias"] if p["bias_term"] else [])
    specs = [("scale" if name == "weight" else name, param_shape, why) for name in names]
    return layer, shape, Blobs(specs, _assign(*names)) if names else None


def _eltwise(p, shapes, where, new):
    if any(s != shapes[0] for s in shapes):
        raise ValueError(f"{where}: expected bottoms of one shape, got {shapes}")
    if p["coeff"] and (p["operation"] != "SUM" or len(p["coeff"]) != len(shapes)):
        raise ValueError(f"{where}: expected one coeff per bottom with operation SUM, got "
                         f"{len(p['coeff'])} coeffs, {len(shapes)} bottoms, {p['operation']}")
    return Eltwise(p["operation"], p["coeff"]), shapes[0], None


_BUILDERS = {"Convolution": _convolution, "InnerProduct": _inner_product, "Pooling": _pooling,
             "LRN": _lrn, "ReLU": _relu, "Dropout": _dropout, "Softmax": _softmax,
             "Concat": _concat, "Flatten": _flatten, "BatchNorm": _batch_norm,
             "Scale": _scale, "Eltwise": _eltwise}


# -- Caffe-specific layers ----------------------------------------------------------------------

class InnerProduct(nn.Linear):
    """nn.Linear applied to the input flattened from ``axis`` on (Caffe's InnerProduct)."""

    def __init__(self, in_features, out_features, axis=1, bias=True):
        super().__init__(in_features, out_features, bias)
        self.axis = axis

    def forward(self, x):
        """nn.Linear of ``x`` flattened from ``axis`` on (when x has more than axis + 1 dims).

        Shapes:  (N, d1, ..., dk) -> (N, out_features) for axis 1 (in_features = d1 ... dk)
        """
        return super().forward(x.flatten(self.axis) if x.ndim > self.axis + 1 else x)

    def extra_repr(self):
        """nn.Linear's repr (and ', axis=A' when not 1)."""
        return super().extra_repr() + (f", axis={self.axis}" if self.axis != 1 else "")


class Scale(Module):
    """x * weight (+ bias), the parameters broadcast from ``axis`` on; with a second input,
    that input is the scale (Caffe's Scale layer)."""

    def __init__(self, shape, axis=1, has_weight=True, bias=False):
        super().__init__()
        self.axis = axis
        ones, zeros = np.ones(shape, np.float32), np.zeros(shape, np.float32)
        self.weight = Parameter(from_numpy(ones)) if has_weight else None
        self.bias = Parameter(from_numpy(zeros)) if bias else None

    def forward(self, x, scale=None):
        """x * scale (+ bias), scale (this layer's weight, or the second input) broadcast from
        ``axis`` on.

        Shapes:  x (N, C, *), scale and bias of shape x.shape[axis:axis + scale.ndim] -> x's shape
        """
        scale = self.weight if scale is None else scale
        shape = (1,) * self.axis + tuple(scale.shape)
        shape += (1,) * (x.ndim - len(shape))
        y = ew.mul(x, scale.reshape(shape))
        return y if self.bias is None else ew.add(y, self.bias.reshape(shape))

    def extra_repr(self):
        """'axis=A, bias=B'."""
        return f"axis={self.axis}, bias={self.bias is not None}"


class WithinChannelLRN(Module):
    """x / (1 + alpha * mean of x^2 over a size x size window) ** beta (Caffe's LRN with
    norm_region WITHIN_CHANNEL: AVE pooling of the squares, padded by (size - 1) / 2)."""

    def __init__(self, size, alpha=1.0, beta=0.75):
        super().__init__()
        self.size, self.alpha, self.beta = size, alpha, beta
        half = (size - 1) // 2
        self.pool = Pool2d("AVE", (size, size), (1, 1), (half,) * 4, ceil_mode=True,
                           caffe_rounding=True)

    def forward(self, x):
        """x / (1 + alpha * local mean of x^2) ** beta over size x size windows of each channel.

        Shapes:  (N, C, H, W) -> same
        """
        mean = self.pool(ew.mul(x, x))
        return ew.mul(x, ew.pow(ew.add(ew.mul(mean, self.alpha), 1.0), -self.beta))

    def extra_repr(self):
        """'size, alpha=A, beta=B'."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}"


# -- helpers ------------------------------------------------------------------------------------

def _read(path, reader):
    try:
        return reader(path)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"load_caffe: {os.fspath(path)}: {e}") from e


def _layer_blobs(name, blobs, specs, where):
    """The layer's blobs from the caffemodel, checked against specs and reshaped to them."""
    labels = ", ".join(s[0] for s in specs)
    got = blobs.get(name)
    if got is None:
        raise ValueError(f"{where}: expected {len(specs)} blobs ({labels}) in the caffemodel, "
                         f"got no layer named '{name}' with blobs (layers with blobs: "
                         f"{', '.join(blobs) or 'none'})")
    if len(got) != len(specs):
        raise ValueError(f"{where}: expected {len(specs)} blobs ({labels}), got {len(got)} "
                         f"with shapes {[tuple(b.shape) for b in got]}")
    return [_fit(b, shape, label, why, where) for b, (label, shape, why) in zip(got, specs)]


def _fit(blob, shape, label, why, where):
    """``blob`` as ``shape``: equal shapes, or legacy 4-D blobs equal once ``shape`` is
    left-padded with 1s (Caffe's num/channels/height/width)."""
    shape = tuple(shape)
    if blob.shape == shape:
        return blob
    if blob.ndim == 4 and len(shape) <= 4 and blob.shape == (1,) * (4 - len(shape)) + shape:
        return blob.reshape(shape)
    raise ValueError(f"{where}: expected the {label} blob of shape {shape} ({why}), got "
                     f"shape {tuple(blob.shape)}")


def _assign(*names):
    def assign(module, arrays):
        for name, array in zip(names, arrays):
            array = np.ascontiguousarray(array, np.float32)
            setattr(module, name, Parameter(from_numpy(array)))
    return assign


def _assign_transposed(module, arrays):
    """InnerProduct with transpose: true keeps its weight as (K, O); nn.Linear's is (O, K)."""
    _assign("weight", "bias")(module, [arrays[0].T] + arrays[1:])


def _assign_batch_norm(module, arrays):
    """Caffe stores mean * s, var * s and s; the statistics are the first two divided by s
    (0 when s is 0, as Caffe does)."""
    mean, var, factor = arrays
    s = float(factor.reshape(-1)[0])
    scale = 0.0 if s == 0 else 1.0 / s
    for name, stat in (("running_mean", mean), ("running_var", var)):
        module.register_buffer(name, from_numpy((stat * scale).astype(np.float32)))


def _construct(cls, *args):
    return cls(*args)


def _rank4(shape, where):
    if len(shape) != 4:
        raise ValueError(f"{where}: expected a 4-D bottom (N, C, H, W), got shape {shape}")
    return shape


def _axis(axis, ndim, where):
    if not -ndim <= axis < ndim:
        raise ValueError(f"{where}: expected an axis in [-{ndim}, {ndim}), got {axis}")
    return axis % ndim
