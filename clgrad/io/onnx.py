"""Load ONNX models as clgrad Modules.

    net = load_onnx("model.onnx")
    y = net(x)                          # the graph's inputs in order, or by name

The file is read, checked and flattened by ``clgrad.io.onnx_format`` (the ``onnx`` package);
each node becomes a step of a ``Graph`` (clgrad/io/graph.py). Conv is ONE nn.Conv2d with
groups=group and the weight initializer as is; the other initializers are the graph's
constants (Parameters when floating point), named after themselves. A Conv weight or bias,
BatchNormalization statistics or a Reshape shape that is not an initializer (a graph input,
or computed by another node) is read at run time instead (ConvInputs, BatchNormInputs,
ReshapeInput).

Dtypes are kept: float32 and float64 initializers and inputs stay what the model says (float64
needs a device with cl_khr_fp64, else load_onnx raises TypeError: nothing is narrowed to
float32 silently); float16 and bfloat16 (TensorProto.BFLOAT16) initializers are widened to
float32 (exact), as clgrad computes in float32 there; a NumPy array fed to a bfloat16 graph
input is converted to float32.
"""
from __future__ import annotations

import math
import os

import numpy as np

from clgrad import nn
from clgrad.creation import from_numpy
from clgrad.nn import functional as F
from clgrad.nn.module import Module, Parameter
from clgrad.ops import elementwise as ew
from clgrad.runtime import default_device
from clgrad.tensor import Tensor

from . import onnx_format
from .graph import Graph
from .layers import (BatchNorm, Concat, Eltwise, Gemm, MatMul, Pad2d, Pool2d, Reshape, Softmax,
                     auto_pads, skip_init)

__all__ = ["load_onnx", "build_onnx"]


def load_onnx(path: str | os.PathLike, *, check: bool = True) -> Graph:
    """An ONNX model as a ``Graph`` Module in eval mode.

    Ops:     Conv (group, pads, strides, dilations, auto_pad; 2-D), Relu, LeakyRelu, MaxPool,
             AveragePool (ceil_mode, count_include_pad, asymmetric pads, auto_pad),
             GlobalAveragePool, LRN, Gemm (alpha, beta, transA, transB), MatMul, Add, Mul,
             Flatten, Reshape, Softmax, BatchNormalization (inference), Dropout, Concat,
             Identity. Conv weights/bias, BatchNormalization statistics and the Reshape shape
             may be graph inputs (or computed). Dropout follows its training_mode input (a
             constant or a graph input): true applies dropout (mask from clgrad's generator,
             scaled by 1 / (1 - ratio)), false or absent is the identity (absent: dropout only
             after ``net.train()``, as nn.Dropout).
    Returns: a Graph whose positional inputs are the graph inputs that are not initializers
             and whose outputs are the graph outputs (one tensor, or a tuple).
    Raises:  FileNotFoundError; ValueError for a file that is not valid ONNX;
             NotImplementedError listing every unsupported op type at once, or naming a node
             whose form is not supported (a 3-D conv, ...); TypeError naming the float64
             initializers/inputs when the device lacks float64.
    """
    return build_onnx(onnx_format.load_onnx(path, check=check))


def build_onnx(model: dict) -> Graph:
    """The Graph of a model described by ``onnx_format.describe_model``."""
    inits = model["initializers"]
    _check_float64(model)
    graph = Graph([i["name"] for i in model["inputs"]], [o["name"] for o in model["outputs"]],
                  label="node", input_shapes={i["name"]: i["shape"] for i in model["inputs"]},
                  input_dtypes={i["name"]: i["dtype"] for i in model["inputs"]})
    used = {name for node in model["nodes"] for name in node["inputs"]}
    used.update(graph.output_names)
    for node in model["nodes"]:
        where = f"node '{node['name']}' ({node['op_type']})"
        extra = [o for o in node["outputs"][1:] if o and o in used]
        if extra:
            raise NotImplementedError(f"load_onnx: {where}: expected only its first output "
                                      f"to be used, got {extra} used too")
        steps = _BUILDERS[node["op_type"]](node, inits, where)
        for name, module, bottoms, top in steps:
            for b in bottoms:
                if b in inits and not graph.has_blob(b):
                    graph.add_constant(b, inits[b])
            graph.add_step(name, module, bottoms, [top], node["op_type"])
    for name in graph.output_names:
        if name in inits and not graph.has_blob(name):
            graph.add_constant(name, inits[name])
    return graph.eval()


# -- node builders: (node, initializers, where) -> [(name, module, bottoms, top)] ------------

def _conv(node, inits, where):
    p, inputs = node["params"], [i for i in node["inputs"] if i]
    if len(inputs) < 2:
        raise ValueError(f"load_onnx: {where}: expected a weight input, got inputs "
                         f"{node['inputs']}")
    if any(i not in inits for i in inputs[1:]):  # weight or bias fed at run time
        if p["kernel_shape"] is not None:
            _two_d(p["kernel_shape"], where)
        return [(node["name"], ConvInputs(p), inputs, node["outputs"][0])]
    w = inits[inputs[1]]
    b = inits[inputs[2]] if len(inputs) > 2 else None
    _two_d(p["kernel_shape"], where)
    t, l, bottom, r = p["pads"]
    x, steps, padding = inputs[0], [], (t, l)
    if p["auto_pad"] not in ("NOTSET", "VALID", "") or t != bottom or l != r:
        # asymmetric or automatic padding: a Pad2d step first
        pad = Pad2d(p["pads"], p["auto_pad"], tuple(p["kernel_shape"]), p["strides"],
                    p["dilations"])
        x, padding = f"{inputs[0]}#padded_for_{node['name']}", 0
        steps = [(f"{node['name']}_pad", pad, [inputs[0]], x)]
    g = p["group"]
    conv = skip_init(nn.Conv2d, w.shape[1] * g, w.shape[0], tuple(w.shape[2:]),
                     tuple(p["strides"]), padding, tuple(p["dilations"]), g, b is not None)
    conv.weight = Parameter(_tensor(w))
    if b is not None:
        conv.bias = Parameter(_tensor(b))
    return steps + [(node["name"], conv, [x], node["outputs"][0])]


def _pool(node, inits, where):
    p = node["params"]
    _two_d(p["kernel_shape"], where)
    kind = "MAX" if node["op_type"] == "MaxPool" else "AVE"
    pool = Pool2d(kind, p["kernel_shape"], p["strides"], p["pads"], p["dilations"],
                  ceil_mode=p["ceil_mode"], count_include_pad=p.get("count_include_pad", 0),
                  auto_pad=p["auto_pad"])
    return [_one(node, pool)]


def _lrn(node, inits, where):
    p = node["params"]
    if p["size"] % 2:
        return [_one(node, nn.LocalResponseNorm(p["size"], p["alpha"], p["beta"], p["bias"]))]
    return [_one(node, EvenLRN(p["size"], p["alpha"], p["beta"], p["bias"]))]


def _gemm(node, inits, where):
    p = node["params"]
    gemm = Gemm(p["alpha"], p["beta"], p["transA"], p["transB"])
    return [(node["name"], gemm, [i for i in node["inputs"] if i], node["outputs"][0])]


def _batch_norm(node, inits, where):
    p, inputs = node["params"], node["inputs"]
    if p["training_mode"]:
        raise NotImplementedError(f"load_onnx: {where}: expected inference mode, got "
                                  "training_mode=1")
    if any(i not in inits for i in inputs[1:5]):  # statistics fed at run time
        return [(node["name"], BatchNormInputs(p["epsilon"]), inputs[:5], node["outputs"][0])]
    scale, bias, mean, var = (_tensor(inits[i]) for i in inputs[1:5])
    bn = BatchNorm(scale.shape[0], p["epsilon"], affine=True)
    bn.weight, bn.bias = Parameter(scale), Parameter(bias)
    bn.running_mean, bn.running_var = mean, var
    return [(node["name"], bn, inputs[:1], node["outputs"][0])]


def _reshape(node, inits, where):
    p = node["params"]
    if p["shape"] is None:  # the shape is a graph input or computed: read at run time
        return [(node["name"], ReshapeInput(p["allowzero"]), node["inputs"][:2],
                 node["outputs"][0])]
    return [(node["name"], Reshape(p["shape"], p["allowzero"]), node["inputs"][:1],
             node["outputs"][0])]


def _dropout(node, inits, where):
    """Dropout(data, ratio?, training_mode?): constants are baked into the step, inputs that
    are not initializers are read at run time."""
    inputs = node["inputs"] + ["", ""]
    ratio, mode, dynamic, bottoms = node["params"]["ratio"], None, [], inputs[:1]
    for name, blob in (("ratio", inputs[1]), ("training_mode", inputs[2])):
        if not blob:
            continue
        if blob in inits:
            if name == "training_mode":
                mode = bool(np.asarray(inits[blob]).reshape(-1)[0])
        else:
            dynamic.append(name)
            bottoms.append(blob)
    return [(node["name"], Dropout(ratio, mode, dynamic), bottoms, node["outputs"][0])]


def _simple(make, bottoms=slice(0, 1)):
    """A builder of one step: make(params) reading node inputs[bottoms]."""
    def build(node, inits, where):
        return [(node["name"], make(node["params"]), node["inputs"][bottoms],
                 node["outputs"][0])]
    return build


_BUILDERS = {
    "Conv": _conv, "MaxPool": _pool, "AveragePool": _pool, "LRN": _lrn, "Gemm": _gemm,
    "BatchNormalization": _batch_norm, "Reshape": _reshape,
    "Relu": _simple(lambda p: nn.ReLU()),
    "LeakyRelu": _simple(lambda p: nn.LeakyReLU(p["alpha"])),
    "GlobalAveragePool": _simple(lambda p: nn.AdaptiveAvgPool2d(1)),
    "Softmax": _simple(lambda p: Softmax(p["axis"], p["coerce_2d"])),
    "Dropout": _dropout,
    "Identity": _simple(lambda p: nn.Identity()),
    "Flatten": _simple(lambda p: Flatten2d(p["axis"])),
    "Concat": _simple(lambda p: Concat(p["axis"]), slice(None)),
    "Add": _simple(lambda p: Eltwise("SUM"), slice(0, 2)),
    "Mul": _simple(lambda p: Eltwise("PROD"), slice(0, 2)),
    "MatMul": _simple(lambda p: MatMul(), slice(0, 2)),
}


# -- ONNX-specific layers -------------------------------------------------------------------

class Flatten2d(Module):
    """ONNX Flatten: (prod(shape[:axis]), prod(shape[axis:]))."""

    def __init__(self, axis=1):
        super().__init__()
        self.axis = axis

    def forward(self, x):
        """``x.reshape(prod(shape[:axis]), prod(shape[axis:]))`` (axis may be negative or ndim).

        Shapes:  (d0, ..., dn-1) -> (d0 ... d(axis-1), d(axis) ... dn-1): always 2-D, unlike
                 nn.Flatten
        """
        axis = self.axis + x.ndim if self.axis < 0 else self.axis  # ONNX allows axis == ndim
        return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))

    def extra_repr(self):
        """'axis=A'."""
        return f"axis={self.axis}"


class EvenLRN(Module):
    """ONNX LRN for an even ``size``: the window runs from c - (size/2 - 1) to c + size/2
    (nn.LocalResponseNorm, PyTorch's window, starts one channel earlier)."""

    def __init__(self, size, alpha=1e-4, beta=0.75, bias=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.bias = size, alpha, beta, bias

    def forward(self, x):
        """x / (bias + alpha / size * window sum of x^2) ** beta over ONNX's even-size window.

        Shapes:  (N, C, *) -> same
        """
        sq = ew.mul(x, x).reshape(x.shape[0], 1, x.shape[1], -1)  # channels as rows
        padded = F.pad(sq, (0, 0, self.size // 2 - 1, self.size // 2))
        total = F.avg_pool2d(padded, (self.size, 1), 1, divisor_override=1).reshape(x.shape)
        return ew.mul(x, ew.pow(ew.add(ew.mul(total, self.alpha / self.size), self.bias),
                                -self.beta))

    def extra_repr(self):
        """'size, alpha=A, beta=B, bias=K'."""
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, bias={self.bias}"


class ConvInputs(Module):
    """ONNX Conv (2-D) on a weight and bias that are blobs of the graph, read at run time."""

    def __init__(self, params):
        super().__init__()
        self.strides = tuple(params["strides"] or (1, 1))
        self.dilations = tuple(params["dilations"] or (1, 1))
        self.pads = tuple(params["pads"] or (0, 0, 0, 0))
        self.auto_pad, self.group = params["auto_pad"], params["group"]

    def forward(self, x, w, b=None):
        """conv2d of ``x`` with the run-time weight ``w`` and bias ``b``; asymmetric pads go
        through F.pad first.

        Shapes:  x (N, C, H, W), w (O, C/group, kH, kW), b (O,) -> (N, O, H', W');
                 see clgrad.nn.functional.conv2d
        Raises:  NotImplementedError for a weight that is not a 4-D Tensor (1-D and 3-D ONNX
                 convolutions are not supported)
        """
        if not isinstance(w, Tensor) or w.ndim != 4:
            got = tuple(w.shape) if isinstance(w, Tensor) else type(w).__name__
            raise NotImplementedError(f"Conv: expected a 2-D convolution weight of shape "
                                      f"(O, C/group, kH, kW), got {got}")
        t, l, bo, r = self.pads if self.auto_pad in ("NOTSET", "") else auto_pads(
            self.auto_pad, x.shape[-2:], w.shape[2:], self.strides, self.dilations)
        padding = (t, l)
        if t != bo or l != r:
            x, padding = F.pad(x, (l, r, t, bo)), 0
        return F.conv2d(x, w, b, self.strides, padding, self.dilations, self.group)

    def extra_repr(self):
        """'stride=S, pads=P, dilation=D, group=G, auto_pad=A'."""
        return (f"stride={self.strides}, pads={self.pads}, dilation={self.dilations}, "
                f"group={self.group}, auto_pad={self.auto_pad}")


class BatchNormInputs(Module):
    """ONNX BatchNormalization (inference) on scale, B, mean and var read at run time."""

    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x, scale, bias, mean, var):
        """Inference batch norm with run-time scale, bias, mean and var (C,); always the given
        statistics, also after ``train()`` (training_mode=1 nodes are refused by load_onnx).

        Shapes:  x (N, C, *) -> same; see clgrad.nn.functional.batch_norm
        """
        return F.batch_norm(x, mean, var, scale, bias, False, 0.0, self.eps)

    def extra_repr(self):
        """'eps=E'."""
        return f"eps={self.eps}"


class ReshapeInput(Module):
    """ONNX Reshape to a shape read at run time (an int64 tensor); rules as Reshape."""

    def __init__(self, allowzero=0):
        super().__init__()
        self.allowzero = bool(allowzero)

    def forward(self, x, shape):
        """``x`` reshaped to the run-time ``shape`` (read on the host), with Reshape's 0 / -1 rules.

        Raises:  ValueError when ``shape`` is not a 1-D integer Tensor
        """
        if not isinstance(shape, Tensor) or shape.ndim != 1 or shape.dtype.is_floating_point:
            got = f"{shape.dtype} of shape {tuple(shape.shape)}" if isinstance(
                shape, Tensor) else type(shape).__name__
            raise ValueError(f"Reshape: expected a 1-D integer shape tensor, got {got}")
        return Reshape([int(d) for d in shape.tolist()], self.allowzero)(x)


class Dropout(Module):
    """ONNX Dropout: F.dropout(x, ratio, training) where training is the node's training_mode
    (a constant, or a run-time input), or, with none given, the module's training flag."""

    def __init__(self, ratio=0.5, training_mode=None, dynamic=()):
        super().__init__()
        self.ratio, self.training_mode, self.dynamic = float(ratio), training_mode, dynamic

    def forward(self, x, *values):
        """F.dropout(x, ratio, training) with ratio and training_mode taken from the run-time inputs
        named in ``dynamic`` (read on the host) when present; x (*) -> same.

        Only the output is returned (ONNX's optional mask output is not produced).
        """
        ratio, mode = self.ratio, self.training_mode
        for name, v in zip(self.dynamic, values):
            v = v.item() if isinstance(v, Tensor) else v
            if name == "ratio":
                ratio = float(v)
            else:
                mode = bool(v)
        return F.dropout(x, ratio, self.training if mode is None else mode)

    def extra_repr(self):
        """'ratio=R, training_mode=M'."""
        return f"ratio={self.ratio}, training_mode={self.training_mode}"


def _tensor(a):
    """An initializer as a clgrad tensor of its own dtype (float16 widened to float32)."""
    return from_numpy(np.ascontiguousarray(a, np.float32 if a.dtype == np.float16 else None))


def _check_float64(model):
    names = [n for n, a in model["initializers"].items() if a.dtype == np.float64] + \
        [i["name"] for i in model["inputs"] if i["dtype"] == "float64"]
    if names and not default_device().fp64:
        dev = default_device().name
        raise TypeError(f"load_onnx: the model computes in float64 ({', '.join(names[:5])}"
                        f"{', ...' if len(names) > 5 else ''}), but the device {dev!r} lacks "
                        f"cl_khr_fp64; clgrad does not narrow it to float32 silently")


def _one(node, module):
    return node["name"], module, node["inputs"][:1], node["outputs"][0]


def _two_d(kernel, where):
    if kernel is None or len(kernel) != 2:
        raise NotImplementedError(f"load_onnx: {where}: expected a 2-D kernel, got "
                                  f"kernel_shape {kernel}")
