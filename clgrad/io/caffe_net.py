"""Caffe net descriptions: a parsed ``.prototxt`` tree -> normalized layers.

    describe_net(tree) -> [layer]         normalized layers with Caffe's defaults filled in

A normalized layer is a dict::

    {"name": str, "type": str, "bottoms": [str], "tops": [str],
     "in_place": bool,              # tops == bottoms, e.g. ReLU writing into its input
     "params": {...}}               # per type, see describe_net

The tree comes from ``clgrad.io.prototxt.parse_prototxt``; the weights from
``clgrad.io.caffemodel``.
"""

from __future__ import annotations

from .caffemodel import V1_LAYER_TYPES

__all__ = ["describe_net", "SUPPORTED_LAYER_TYPES"]

_V1_BY_ENUM_NAME = {enum: name for enum, name in V1_LAYER_TYPES.values()}

SUPPORTED_LAYER_TYPES = (
    "Input", "Convolution", "ReLU", "Pooling", "LRN", "InnerProduct", "Dropout", "Softmax",
    "Concat", "Flatten", "BatchNorm", "Scale", "Eltwise",
)


def describe_net(net: dict, *, phase: str = "TEST") -> list[dict]:
    """Normalize a parsed prototxt (``parse_prototxt``) into layers with Caffe's defaults.

    Input:   net, the dict from parse_prototxt; ``layer`` (current) or ``layers`` (V1, enum
             types such as ``CONVOLUTION``) entries, and optionally the legacy header
             ``input: "data"`` with ``input_shape { dim: ... }`` or 4 ``input_dim`` per input.
             phase, "TEST" or "TRAIN": layers whose ``include``/``exclude`` phase rules do not
             admit it are dropped (stage and level rules are ignored).
    Returns: list of {"name", "type", "bottoms", "tops", "in_place", "params"} in net order;
             the legacy header becomes leading "Input" layers. ``params`` per type (pairs are
             (height, width)):
               Input:        shapes [tuple per top]
               Convolution:  num_output, kernel, stride (1,1), pad (0,0), dilation (1,1),
                             group 1, bias_term True
               ReLU:         negative_slope 0.0
               Pooling:      pool "MAX"|"AVE", kernel (None when global), stride (1,1),
                             pad (0,0), global_pooling False, ceil_mode True (round_mode CEIL)
               LRN:          local_size 5, alpha 1.0, beta 0.75, k 1.0,
                             norm_region "ACROSS_CHANNELS"|"WITHIN_CHANNEL"
               InnerProduct: num_output, bias_term True, axis 1, transpose False
               Dropout:      dropout_ratio 0.5          Softmax: axis 1
               Concat:       axis 1 (or concat_dim)    Flatten: axis 1, end_axis -1
               BatchNorm:    eps 1e-5, use_global_stats (default: phase == "TEST")
               Scale:        axis 1, num_axes 1, bias_term False
               Eltwise:      operation "SUM"|"PROD"|"MAX", coeff [float] (empty: all 1)
    Raises:  ValueError naming the layer for an unknown type, a missing or mistyped parameter,
             a layer without bottom or top (Input: without top), or an impossible combination
             (group not dividing num_output, pad >= kernel in pooling, even LRN local_size,
             3-D kernels, ...).
    """
    if phase not in ("TEST", "TRAIN"):
        raise ValueError(f"describe_net: expected phase 'TEST' or 'TRAIN', got {phase!r}")
    if net.get("layer") and net.get("layers"):
        raise ValueError("describe_net: expected either 'layer' or legacy 'layers' entries, "
                         "got both")
    out = _header_inputs(net)
    for index, msg in enumerate(net.get("layer", []) + net.get("layers", [])):
        if not isinstance(msg, dict):
            raise ValueError(f"describe_net: expected layer #{index} to be a message, got {msg!r}")
        if not _admitted(msg, phase):
            continue
        name = _string(msg, "name", f"layer #{index}", default=f"layer{index}")
        where = f"layer '{name}'"
        type_ = _string(msg, "type", where)
        if "layers" in net:
            if type_ not in _V1_BY_ENUM_NAME:
                raise ValueError(f"describe_net: {where}: expected a V1 layer type such as "
                                 f"CONVOLUTION, got {type_!r}")
            type_ = _V1_BY_ENUM_NAME[type_]
        where = f"layer '{name}' (type {type_})"
        builder = _PARAMS.get(type_)
        if builder is None:
            raise ValueError(f"describe_net: {where}: unsupported layer type {type_!r}; "
                             f"supported: {', '.join(SUPPORTED_LAYER_TYPES)}")
        bottoms = [_check_str(b, f"{where}: bottom") for b in msg.get("bottom", [])]
        tops = [_check_str(t, f"{where}: top") for t in msg.get("top", [])]
        if type_ != "Input" and not (bottoms and tops):
            raise ValueError(f"describe_net: {where}: expected at least one bottom and one top, "
                             f"got bottoms={bottoms}, tops={tops}")
        params = builder(msg, _Params(msg, where), phase)
        if type_ == "Input":
            params = _input_shapes(params, tops, where)
        out.append({"name": name, "type": type_, "bottoms": bottoms, "tops": tops,
                    "in_place": bool(tops) and tops == bottoms, "params": params})
    return out


class _Params:
    """Typed access to the ``*_param`` messages of one layer, with errors naming the layer."""

    def __init__(self, layer: dict, where: str):
        self.layer, self.where = layer, where
        self.msg: dict = {}

    def use(self, key: str) -> "_Params":
        """Select the message ``key`` (repeated occurrences merged, as protobuf does). Returns self.

        Raises:  ValueError naming the layer when an occurrence is not a message
        """
        merged: dict = {}  # protobuf merge semantics for a repeated occurrence of a message
        for part in self.layer.get(key, []):
            if not isinstance(part, dict):
                raise ValueError(f"describe_net: {self.where}: expected {key} to be a message, "
                                 f"got {part!r}")
            for field, values in part.items():
                merged.setdefault(field, []).extend(values)
        self.msg, self.key = merged, key
        return self

    def has(self, field: str) -> bool:
        """Whether the selected message sets ``field`` (non-empty)."""
        return bool(self.msg.get(field))

    def get(self, field, kind, default=None):
        """The last value of ``field`` checked as ``kind`` ('int', 'float', 'bool' or a tuple of
        enum names), or ``default`` when unset.

        Raises:  ValueError naming the layer when unset without a default, or of the wrong kind
        """
        values = self.msg.get(field)
        if not values:
            if default is None:
                raise ValueError(f"describe_net: {self.where}: expected {self.key}.{field}, "
                                 "got nothing")
            return default
        return self.check(values[-1], field, kind)

    def many(self, field, kind) -> list:
        """The values of the repeated ``field``, each checked as ``kind`` (see get); [] if unset."""
        return [self.check(v, field, kind) for v in self.msg.get(field, [])]

    def check(self, value, field, kind):
        """``value`` converted to ``kind`` (an enum number becomes its name).

        Raises:  ValueError naming the layer and field for a value of another kind
        """
        ok = {"int": isinstance(value, int) and not isinstance(value, bool),
              "float": isinstance(value, (int, float)) and not isinstance(value, bool),
              "bool": isinstance(value, bool) or value in (0, 1)}
        if isinstance(kind, tuple):  # an enum: a name, or its number
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(kind):
                return kind[value]
            if value in kind:
                return value
            expected = "one of " + ", ".join(kind)
        elif ok[kind]:
            return {"int": int, "float": float, "bool": bool}[kind](value)
        else:
            expected = {"int": "an integer", "float": "a number", "bool": "true or false"}[kind]
        raise ValueError(f"describe_net: {self.where}: expected {self.key}.{field} to be "
                         f"{expected}, got {value!r}")

    def pair(self, base, default=None, *, hw=None, repeated=True):
        """(h, w) from ``base`` (1 or 2 values when repeated) or ``{hw}_h`` + ``{hw}_w``.

        As in Caffe, a lone pad_h or pad_w leaves the other 0; kernel and stride need both.
        """
        hw = hw or base
        if self.has(hw + "_h") or self.has(hw + "_w"):
            if self.has(base):
                raise ValueError(f"describe_net: {self.where}: expected either {base} or "
                                 f"{hw}_h/{hw}_w, got both")
            other = 0 if base == "pad" else None
            return self.get(hw + "_h", "int", other), self.get(hw + "_w", "int", other)
        values = self.many(base, "int") if repeated else self.many(base, "int")[-1:]
        if len(values) > 2:
            raise ValueError(f"describe_net: {self.where}: expected 1 or 2 values of "
                             f"{self.key}.{base} (2-D only), got {values}")
        if not values:
            if default is None:
                raise ValueError(f"describe_net: {self.where}: expected {self.key}.{base} or "
                                 f"{hw}_h/{hw}_w, got nothing")
            return default
        return (values[0], values[-1])

    def fail(self, message):
        """Raise ValueError('describe_net: <layer>: ``message``')."""
        raise ValueError(f"describe_net: {self.where}: {message}")


def _input(msg, p, phase):
    shapes = []
    for shape in p.use("input_param").msg.get("shape", []):
        if not isinstance(shape, dict):
            p.fail(f"expected input_param.shape to be a message, got {shape!r}")
        shapes.append(tuple(p.check(d, "shape.dim", "int") for d in shape.get("dim", [])))
    return {"shapes": shapes}


def _convolution(msg, p, phase):
    p.use("convolution_param")
    params = {"num_output": p.get("num_output", "int"),
              "kernel": p.pair("kernel_size", hw="kernel"),
              "stride": p.pair("stride", (1, 1)), "pad": p.pair("pad", (0, 0)),
              "dilation": p.pair("dilation", (1, 1)), "group": p.get("group", "int", 1),
              "bias_term": p.get("bias_term", "bool", True)}
    if p.get("axis", "int", 1) != 1:
        p.fail(f"expected convolution_param.axis 1, got {p.get('axis', 'int')}")
    _positive(p, params, "num_output", "group")
    _positive_pairs(p, params, "kernel", "stride", "dilation")
    _nonnegative_pairs(p, params, "pad")
    if params["num_output"] % params["group"]:
        p.fail(f"expected num_output divisible by group, got num_output="
               f"{params['num_output']}, group={params['group']}")
    return params


def _relu(msg, p, phase):
    return {"negative_slope": p.use("relu_param").get("negative_slope", "float", 0.0)}


def _pooling(msg, p, phase):
    p.use("pooling_param")
    pool = p.get("pool", ("MAX", "AVE", "STOCHASTIC"), "MAX")
    if pool == "STOCHASTIC":
        p.fail("expected pool MAX or AVE, got STOCHASTIC (not supported)")
    global_pooling = p.get("global_pooling", "bool", False)
    kernel = None if global_pooling else p.pair("kernel_size", hw="kernel", repeated=False)
    params = {"pool": pool, "kernel": kernel, "stride": p.pair("stride", (1, 1), repeated=False),
              "pad": p.pair("pad", (0, 0), repeated=False), "global_pooling": global_pooling,
              "ceil_mode": p.get("round_mode", ("CEIL", "FLOOR"), "CEIL") == "CEIL"}
    _positive_pairs(p, params, "stride")
    _nonnegative_pairs(p, params, "pad")
    if global_pooling:
        if p.has("kernel_size") or p.has("kernel_h") or p.has("kernel_w"):
            p.fail("expected no kernel size with global_pooling, got one")
        if params["pad"] != (0, 0) or params["stride"] != (1, 1):
            p.fail(f"expected pad 0 and stride 1 with global_pooling, got pad={params['pad']}, "
                   f"stride={params['stride']}")
    else:
        _positive_pairs(p, params, "kernel")
        if any(pd >= k for pd, k in zip(params["pad"], kernel)):
            p.fail(f"expected pad < kernel, got pad={params['pad']}, kernel={kernel}")
    return params


def _lrn(msg, p, phase):
    p.use("lrn_param")
    params = {"local_size": p.get("local_size", "int", 5), "alpha": p.get("alpha", "float", 1.0),
              "beta": p.get("beta", "float", 0.75), "k": p.get("k", "float", 1.0),
              "norm_region": p.get("norm_region", ("ACROSS_CHANNELS", "WITHIN_CHANNEL"),
                                   "ACROSS_CHANNELS")}
    if params["local_size"] < 1 or params["local_size"] % 2 == 0:
        p.fail(f"expected an odd positive lrn_param.local_size, got {params['local_size']}")
    return params


def _inner_product(msg, p, phase):
    p.use("inner_product_param")
    params = {"num_output": p.get("num_output", "int"),
              "bias_term": p.get("bias_term", "bool", True), "axis": p.get("axis", "int", 1),
              "transpose": p.get("transpose", "bool", False)}
    _positive(p, params, "num_output")
    return params


def _dropout(msg, p, phase):
    ratio = p.use("dropout_param").get("dropout_ratio", "float", 0.5)
    if not 0.0 <= ratio < 1.0:
        p.fail(f"expected dropout_ratio in [0, 1), got {ratio}")
    return {"dropout_ratio": ratio}


def _softmax(msg, p, phase):
    return {"axis": p.use("softmax_param").get("axis", "int", 1)}


def _concat(msg, p, phase):
    p.use("concat_param")
    if p.has("axis") and p.has("concat_dim"):
        p.fail("expected either concat_param.axis or concat_dim, got both")
    return {"axis": p.get("axis", "int", p.get("concat_dim", "int", 1))}


def _flatten(msg, p, phase):
    p.use("flatten_param")
    return {"axis": p.get("axis", "int", 1), "end_axis": p.get("end_axis", "int", -1)}


def _batch_norm(msg, p, phase):
    p.use("batch_norm_param")
    return {"eps": p.get("eps", "float", 1e-5),
            "use_global_stats": p.get("use_global_stats", "bool", phase == "TEST")}


def _scale(msg, p, phase):
    p.use("scale_param")
    return {"axis": p.get("axis", "int", 1), "num_axes": p.get("num_axes", "int", 1),
            "bias_term": p.get("bias_term", "bool", False)}


def _eltwise(msg, p, phase):
    p.use("eltwise_param")
    return {"operation": p.get("operation", ("PROD", "SUM", "MAX"), "SUM"),
            "coeff": p.many("coeff", "float")}


_PARAMS = {"Input": _input, "Convolution": _convolution, "ReLU": _relu, "Pooling": _pooling,
           "LRN": _lrn, "InnerProduct": _inner_product, "Dropout": _dropout,
           "Softmax": _softmax, "Concat": _concat, "Flatten": _flatten,
           "BatchNorm": _batch_norm, "Scale": _scale, "Eltwise": _eltwise}


def _positive(p, params, *keys):
    for key in keys:
        if params[key] < 1:
            p.fail(f"expected {key} >= 1, got {params[key]}")


def _positive_pairs(p, params, *keys):
    for key in keys:
        if min(params[key]) < 1:
            p.fail(f"expected {key} >= 1, got {params[key]}")


def _nonnegative_pairs(p, params, *keys):
    for key in keys:
        if min(params[key]) < 0:
            p.fail(f"expected {key} >= 0, got {params[key]}")


def _input_shapes(params, tops, where):
    shapes = params["shapes"]
    if len(shapes) == 1 and len(tops) > 1:
        shapes = shapes * len(tops)
    if not tops or len(shapes) != len(tops):
        raise ValueError(f"describe_net: {where}: expected one input_param.shape per top "
                         f"(or one for all), got {len(shapes)} shapes for {len(tops)} tops")
    for shape in shapes:
        if not shape or min(shape) < 0:
            raise ValueError(f"describe_net: {where}: expected a non-empty shape of sizes >= 0, "
                             f"got {shape}")
    return {"shapes": shapes}


def _header_inputs(net):
    """The legacy NetParameter header (input + input_shape / input_dim) as Input layers."""
    names = [_check_str(n, "net header: input") for n in net.get("input", [])]
    dims = net.get("input_dim", [])
    shape_msgs = net.get("input_shape", [])
    if not names:
        if dims or shape_msgs:
            raise ValueError("describe_net: expected 'input' names with input_dim/input_shape, "
                             "got shapes without names")
        return []
    if shape_msgs:
        if dims or len(shape_msgs) != len(names):
            raise ValueError(f"describe_net: expected one input_shape per input (and no "
                             f"input_dim), got {len(shape_msgs)} input_shape and {len(dims)} "
                             f"input_dim for {len(names)} inputs")
        shapes = [tuple(s.get("dim", [])) if isinstance(s, dict) else () for s in shape_msgs]
    else:
        if len(dims) != 4 * len(names):
            raise ValueError(f"describe_net: expected 4 input_dim per input, got {len(dims)} "
                             f"for {len(names)} inputs")
        shapes = [tuple(dims[4 * i:4 * i + 4]) for i in range(len(names))]
    layers = []
    for name, shape in zip(names, shapes):
        if not shape or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                for d in shape):
            raise ValueError(f"describe_net: input '{name}': expected a non-empty shape of "
                             f"integer sizes >= 0, got {shape}")
        layers.append({"name": name, "type": "Input", "bottoms": [], "tops": [name],
                       "in_place": False, "params": {"shapes": [shape]}})
    return layers


def _admitted(msg, phase):
    def matches(rule):
        return not isinstance(rule, dict) or not rule.get("phase") or rule["phase"][-1] in (
            phase, {"TRAIN": 0, "TEST": 1}[phase])
    include, exclude = msg.get("include", []), msg.get("exclude", [])
    return (not include or any(map(matches, include))) and not any(map(matches, exclude))


def _string(msg, field, where, default=None):
    values = msg.get(field)
    if not values:
        if default is None:
            raise ValueError(f"describe_net: {where}: expected a '{field}', got nothing")
        return default
    return _check_str(values[-1], f"{where}: {field}")


def _check_str(value, where):
    if not isinstance(value, str):
        raise ValueError(f"describe_net: {where}: expected a string, got {value!r}")
    return value
