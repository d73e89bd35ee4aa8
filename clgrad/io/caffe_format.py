"""Caffe model files: ``.prototxt`` (protobuf text format) and ``.caffemodel`` (wire format).

Pure Python and NumPy: no protobuf package, no caffe.proto compilation.

    parse_prototxt(text) -> dict          the text-format tree; every field maps to a LIST
    describe_net(tree) -> [layer]         normalized layers with Caffe's defaults filled in
    decode_caffemodel(data) -> [layer]    name, type, bottoms, tops and float32 blobs per layer
    blobs_by_name(decoded) -> {name: [np.ndarray]}
    encode_caffemodel(layers) -> bytes    the inverse of decode_caffemodel (writes test files)

A normalized layer (``describe_net``) is a dict::

    {"name": str, "type": str, "bottoms": [str], "tops": [str],
     "in_place": bool,              # tops == bottoms, e.g. ReLU writing into its input
     "params": {...}}               # per type, see describe_net

A decoded layer (``decode_caffemodel``) is a dict::

    {"name": str, "type": str, "bottoms": [str], "tops": [str], "blobs": [np.ndarray float32]}
"""

from __future__ import annotations

import math
import os
import re
import struct

import numpy as np

__all__ = [
    "parse_prototxt", "read_prototxt", "describe_net", "decode_caffemodel", "read_caffemodel",
    "blobs_by_name", "encode_caffemodel", "SUPPORTED_LAYER_TYPES", "V1_LAYER_TYPES",
]

MAX_DEPTH = 64
"""Deepest message nesting parse_prototxt accepts (Caffe nets use 4)."""

# caffe.proto, V1LayerParameter.LayerType: enum number -> (enum name, LayerParameter type name).
V1_LAYER_TYPES = {
    0: ("NONE", "None"), 1: ("ACCURACY", "Accuracy"), 2: ("BNLL", "BNLL"),
    3: ("CONCAT", "Concat"), 4: ("CONVOLUTION", "Convolution"), 5: ("DATA", "Data"),
    6: ("DROPOUT", "Dropout"), 7: ("EUCLIDEAN_LOSS", "EuclideanLoss"), 8: ("FLATTEN", "Flatten"),
    9: ("HDF5_DATA", "HDF5Data"), 10: ("HDF5_OUTPUT", "HDF5Output"), 11: ("IM2COL", "Im2col"),
    12: ("IMAGE_DATA", "ImageData"), 13: ("INFOGAIN_LOSS", "InfogainLoss"),
    14: ("INNER_PRODUCT", "InnerProduct"), 15: ("LRN", "LRN"),
    16: ("MULTINOMIAL_LOGISTIC_LOSS", "MultinomialLogisticLoss"), 17: ("POOLING", "Pooling"),
    18: ("RELU", "ReLU"), 19: ("SIGMOID", "Sigmoid"), 20: ("SOFTMAX", "Softmax"),
    21: ("SOFTMAX_LOSS", "SoftmaxWithLoss"), 22: ("SPLIT", "Split"), 23: ("TANH", "TanH"),
    24: ("WINDOW_DATA", "WindowData"), 25: ("ELTWISE", "Eltwise"), 26: ("POWER", "Power"),
    27: ("SIGMOID_CROSS_ENTROPY_LOSS", "SigmoidCrossEntropyLoss"), 28: ("HINGE_LOSS", "HingeLoss"),
    29: ("MEMORY_DATA", "MemoryData"), 30: ("ARGMAX", "ArgMax"), 31: ("THRESHOLD", "Threshold"),
    32: ("DUMMY_DATA", "DummyData"), 33: ("SLICE", "Slice"), 34: ("MVN", "MVN"),
    35: ("ABSVAL", "AbsVal"), 36: ("SILENCE", "Silence"),
    37: ("CONTRASTIVE_LOSS", "ContrastiveLoss"), 38: ("EXP", "Exp"),
    39: ("DECONVOLUTION", "Deconvolution"),
}
_V1_BY_ENUM_NAME = {enum: name for enum, name in V1_LAYER_TYPES.values()}
_V1_NUMBER = {name: number for number, (_, name) in V1_LAYER_TYPES.items()}


# ------------------------------------------------------------------------------------------------
# Protobuf text format
# ------------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"""
    (?P<space>[ \t\r\f\v]+) | (?P<newline>\n) | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\[^\n])*"|'(?:[^'\\\n]|\\[^\n])*')
  | (?P<number>-?(?:0[xX][0-9a-fA-F]+|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?[fF]?)
        (?![\w.]))
  | (?P<ident>-?[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>[{}<>\[\]:,;])
""", re.VERBOSE)
_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v",
            "\\": b"\\", "'": b"'", '"': b'"', "?": b"?"}
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9a-fA-F]{1,2})|u([0-9a-fA-F]{4})"
                     r"|U([0-9a-fA-F]{8})|(.))")


def parse_prototxt(text: str) -> dict:
    """Parse protobuf text format (as in Caffe ``.prototxt`` files) into nested dicts.

    Input:   text, str. Messages ``name { ... }`` (or ``name: { ... }``, ``name < ... >``),
             scalars ``name: value``, lists ``name: [v1, v2]``, ``#`` comments, optional
             ``,``/``;`` separators. Values: quoted strings with C escapes (adjacent strings
             concatenate), ints (decimal, 0x hex, 0-prefixed octal), floats (``1e-4``, ``.5``,
             ``2f``, ``inf``, ``nan``), ``true``/``false``, bare identifiers (enums).
    Returns: dict mapping each field name to a LIST of values in file order, whether the
             field is repeated or not (there is no schema). Messages are dicts; quoted strings
             and enum identifiers are both ``str``; ``true``/``false`` are ``bool``; numbers are
             ``int`` when written as integers, else ``float``.
    Raises:  ValueError ``prototxt: line L, column C: expected X, got Y`` on any syntax error,
             and on nesting deeper than MAX_DEPTH. Extension fields ``[ext.name]`` and lists of
             messages are not supported (Caffe uses neither).
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_prototxt: expected str, got {type(text).__name__}")
    tokens = _tokenize(text)
    root: dict = {}
    stack = [(root, None, None)]  # (message, closing punctuation, token that opened it)
    tok = next(tokens)
    while True:
        message, closer, opener = stack[-1]
        if tok[0] == "eof":
            if closer is not None:
                raise _syntax(tok, f"'{closer}' closing the message opened at line {opener[2]}, "
                              f"column {opener[3]}")
            return root
        if tok[0] == "punct" and tok[1] == closer:
            stack.pop()
            tok = _skip_separator(next(tokens), tokens)
            continue
        if tok[0] != "ident" or tok[1].startswith("-"):
            raise _syntax(tok, "a field name")
        name = tok[1]
        tok = next(tokens)
        colon = tok[:2] == ("punct", ":")
        if colon:
            tok = next(tokens)
        if tok[:2] in (("punct", "{"), ("punct", "<")):
            if len(stack) > MAX_DEPTH:
                raise _syntax(tok, f"at most {MAX_DEPTH} nested messages", got="a deeper one")
            child: dict = {}
            message.setdefault(name, []).append(child)
            stack.append((child, "}" if tok[1] == "{" else ">", tok))
            tok = next(tokens)
            continue
        if not colon:
            raise _syntax(tok, f"':' or '{{' after field name '{name}'")
        values = message.setdefault(name, [])
        if tok[:2] == ("punct", "["):
            tok = next(tokens)
            while tok[:2] != ("punct", "]"):
                value, tok = _scalar(tok, tokens)
                values.append(value)
                if tok[:2] == ("punct", ","):
                    tok = next(tokens)
                elif tok[:2] != ("punct", "]"):
                    raise _syntax(tok, "',' or ']' in a list")
            tok = next(tokens)
        else:
            value, tok = _scalar(tok, tokens)
            values.append(value)
        tok = _skip_separator(tok, tokens)


def read_prototxt(path: str | os.PathLike) -> dict:
    """Read a ``.prototxt`` file (UTF-8) and parse it with ``parse_prototxt``."""
    with open(path, encoding="utf-8") as f:
        return parse_prototxt(f.read())


def _tokenize(text):
    """Yield (kind, text, line, column) tokens, then one ("eof", "", line, column)."""
    pos, line, line_start = 0, 1, 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        col = pos - line_start + 1
        if m is None:
            ch = text[pos]
            what = ("an unterminated string" if ch in "\"'" else
                    "a malformed number" if ch.isdigit() or ch in "-." else repr(ch))
            raise ValueError(f"prototxt: line {line}, column {col}: expected a token, got {what}")
        kind = m.lastgroup
        if kind == "newline":
            line, line_start = line + 1, m.end()
        elif kind not in ("space", "comment"):
            yield kind, m.group(), line, col
        pos = m.end()
    yield "eof", "", line, pos - line_start + 1


def _scalar(tok, tokens):
    """Convert one value (several tokens for concatenated strings); return (value, next token)."""
    kind, text = tok[0], tok[1]
    if kind == "string":
        first, raw = tok, bytearray()
        while tok[0] == "string":
            raw += _unescape(tok)
            tok = next(tokens)
        try:
            return raw.decode("utf-8"), tok
        except UnicodeDecodeError:
            raise _syntax(first, "a UTF-8 string", got="invalid UTF-8 bytes") from None
    if kind == "number":
        body = text.lstrip("-")
        sign = -1 if text.startswith("-") else 1
        if body[:2] in ("0x", "0X"):
            value = sign * int(body, 16)
        elif re.fullmatch(r"0[0-7]+", body):
            value = sign * int(body, 8)
        elif body.isdigit():
            value = sign * int(body)
        else:
            value = sign * float(body.rstrip("fF"))
        return value, next(tokens)
    if kind == "ident":
        low = text.lower()
        if text in ("true", "True"):
            return True, next(tokens)
        if text in ("false", "False"):
            return False, next(tokens)
        if low.lstrip("-") in ("inf", "infinity", "nan"):
            return float(low), next(tokens)
        if text.startswith("-"):
            raise _syntax(tok, "a number after '-'")
        return text, next(tokens)
    raise _syntax(tok, "a value")


def _unescape(tok) -> bytes:
    body, out, pos = tok[1][1:-1], bytearray(), 0
    for m in _ESCAPE.finditer(body):
        out += body[pos:m.start()].encode("utf-8")
        octal, hexa, u4, u8, char = m.groups()
        if octal or hexa:
            code = int(octal, 8) if octal else int(hexa, 16)
            if code > 255:
                raise _syntax(tok, "an octal escape up to \\377", got=f"'\\{octal}'")
            out.append(code)
        elif u4 or u8:
            try:
                out += chr(int(u4 or u8, 16)).encode("utf-8")
            except (ValueError, UnicodeEncodeError):
                raise _syntax(tok, "a valid unicode escape", got=f"'{m.group()}'") from None
        elif char in _ESCAPES:
            out += _ESCAPES[char]
        else:
            raise _syntax(tok, "a known escape sequence", got=f"'\\{char}'")
        pos = m.end()
    out += body[pos:].encode("utf-8")
    return bytes(out)


def _skip_separator(tok, tokens):
    return next(tokens) if tok[:2] in (("punct", ","), ("punct", ";")) else tok


def _syntax(tok, expected, got=None):
    if got is None:
        got = "end of input" if tok[0] == "eof" else f"'{tok[1]}'"
    return ValueError(f"prototxt: line {tok[2]}, column {tok[3]}: expected {expected}, got {got}")


# ------------------------------------------------------------------------------------------------
# Net description: the parsed tree -> normalized layers
# ------------------------------------------------------------------------------------------------

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
        return bool(self.msg.get(field))

    def get(self, field, kind, default=None):
        values = self.msg.get(field)
        if not values:
            if default is None:
                raise ValueError(f"describe_net: {self.where}: expected {self.key}.{field}, "
                                 "got nothing")
            return default
        return self.check(values[-1], field, kind)

    def many(self, field, kind) -> list:
        return [self.check(v, field, kind) for v in self.msg.get(field, [])]

    def check(self, value, field, kind):
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


# ------------------------------------------------------------------------------------------------
# Protobuf wire format: NetParameter (.caffemodel)
# ------------------------------------------------------------------------------------------------

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5
# Nesting is bounded by the schema, not by the data: NetParameter > LayerParameter > BlobProto >
# BlobShape, each level a separate function; unknown fields are skipped, never descended into.
_FIELD_NAMES = {  # message -> {field number: field name}, for decoding and errors
    "LayerParameter": {1: "name", 2: "type", 3: "bottom", 4: "top", 7: "blobs"},
    "V1LayerParameter": {4: "name", 5: "type", 2: "bottom", 3: "top", 6: "blobs", 1: "layer"},
    "NetParameter": {100: "layer", 2: "layers"},
    "BlobProto": {1: "num", 2: "channels", 3: "height", 4: "width", 5: "data", 7: "shape",
                  8: "double_data"},
    "BlobShape": {1: "dim"},
}


def decode_caffemodel(data: bytes | bytearray | memoryview) -> list[dict]:
    """Decode a ``.caffemodel`` (a binary NetParameter) into layers with their blobs.

    Input:   data, the file's bytes. Reads NetParameter.layer (field 100, LayerParameter) and
             the legacy NetParameter.layers (field 2, V1LayerParameter, type an enum mapped by
             V1_LAYER_TYPES to the current type names). BlobProto: shape (7, dims packed or
             not), data (5, packed or not), double_data (8, converted to float32), legacy
             num/channels/height/width (1-4, giving a 4-D shape). Other fields are skipped
             without being looked into. V0 layers (inside V1's field 1) are refused.
    Returns: [{"name", "type", "bottoms", "tops", "blobs": [np.ndarray float32, C order, shaped]}]
             in file order (current and V1 layers as they come), including layers without blobs.
    Raises:  ValueError naming the byte offset and the field for truncated or corrupt data: a
             length, varint or fixed-size value running past its message, a wire type a field
             cannot have, group wire types, a blob whose value count differs from its shape,
             invalid UTF-8 in a name. Nothing is allocated from a declared length before it is
             checked against the bytes present, and nesting is bounded by the schema (4 levels).
    """
    buf = memoryview(bytes(data) if not isinstance(data, (bytes, memoryview)) else data)
    if buf.ndim != 1 or buf.itemsize != 1:
        buf = buf.cast("B")
    layers = []
    for field, wire, value, at in _fields(buf, 0, len(buf), "NetParameter", "NetParameter"):
        if field in (100, 2):
            kind = "LayerParameter" if field == 100 else "V1LayerParameter"
            path = f"NetParameter.{'layer' if field == 100 else 'layers'}[{len(layers)}]"
            _expect_wire(wire, (_LEN,), at, path)
            layers.append(_decode_layer(buf, value, kind, path))
    return layers


def read_caffemodel(path: str | os.PathLike) -> list[dict]:
    """Read a ``.caffemodel`` file and decode it with ``decode_caffemodel``."""
    with open(path, "rb") as f:
        return decode_caffemodel(f.read())


def blobs_by_name(layers: list[dict]) -> dict[str, list[np.ndarray]]:
    """Map each decoded layer's name to its blobs, for layers that have blobs.

    Raises: ValueError when two layers with blobs share a name.
    """
    out: dict[str, list[np.ndarray]] = {}
    for layer in layers:
        if layer["blobs"]:
            if layer["name"] in out:
                raise ValueError(f"blobs_by_name: expected unique layer names, got "
                                 f"'{layer['name']}' twice with blobs")
            out[layer["name"]] = layer["blobs"]
    return out


def _decode_layer(buf, span, kind, path):
    names = _FIELD_NAMES[kind]
    layer = {"name": "", "type": "", "bottoms": [], "tops": [], "blobs": []}
    for field, wire, value, at in _fields(buf, span[0], span[1], path, kind):
        what = names.get(field)
        if what is None:
            continue
        where = f"{path}.{what}"
        if what == "layer":
            raise ValueError(f"caffemodel: byte {at}: {where}: expected a V1 or current layer, "
                             "got a V0 layer (pre-2014 format); upgrade the file with Caffe's "
                             "upgrade_net_proto_binary")
        if what == "type" and kind == "V1LayerParameter":
            _expect_wire(wire, (_VARINT,), at, where)
            if value not in V1_LAYER_TYPES:
                raise ValueError(f"caffemodel: byte {at}: {where}: expected a "
                                 f"V1LayerParameter.LayerType number, got {value}")
            layer["type"] = V1_LAYER_TYPES[value][1]
            continue
        _expect_wire(wire, (_LEN,), at, where)
        if what == "blobs":
            layer["blobs"].append(_decode_blob(buf, value, f"{where}[{len(layer['blobs'])}]"))
            continue
        text = _utf8(buf, value, at, where)
        if what in ("name", "type"):
            layer[what] = text
        else:
            layer[what + "s"].append(text)
    return layer


def _decode_blob(buf, span, path):
    floats, doubles, dims, legacy = [], [], [], {}
    for field, wire, value, at in _fields(buf, span[0], span[1], path, "BlobProto"):
        if field == 5:
            floats.append(_fixed_array(buf, wire, value, at, f"{path}.data", "<f4", _I32))
        elif field == 8:
            doubles.append(_fixed_array(buf, wire, value, at, f"{path}.double_data", "<f8", _I64))
        elif field == 7:
            _expect_wire(wire, (_LEN,), at, f"{path}.shape")
            dims += _decode_shape(buf, value, f"{path}.shape")
        elif field in (1, 2, 3, 4):
            _expect_wire(wire, (_VARINT,), at, f"{path}.{_LEGACY_DIMS[field - 1]}")
            legacy[field] = _signed(value)
    if legacy:
        shape = tuple(legacy.get(f, 0) for f in (1, 2, 3, 4))
    else:
        shape = tuple(dims)
    if any(d < 0 for d in shape):
        raise ValueError(f"caffemodel: byte {span[0]}: {path}: expected dims >= 0, got {shape}")
    chunks = floats if any(len(c) for c in floats) or not doubles else doubles
    values = chunks[0] if len(chunks) == 1 else np.concatenate(chunks or [np.zeros(0, "<f4")])
    if values.size != math.prod(shape):
        raise ValueError(f"caffemodel: byte {span[0]}: {path}: expected {math.prod(shape)} "
                         f"values for shape {shape}, got {values.size}")
    return values.astype(np.float32).reshape(shape)


_LEGACY_DIMS = ("num", "channels", "height", "width")


def _decode_shape(buf, span, path):
    dims = []
    for field, wire, value, at in _fields(buf, span[0], span[1], path, "BlobShape"):
        if field != 1:
            continue
        _expect_wire(wire, (_VARINT, _LEN), at, f"{path}.dim")
        if wire == _VARINT:
            dims.append(_signed(value))
            continue
        pos = value[0]
        while pos < value[1]:
            dim, pos = _varint(buf, pos, value[1], f"{path}.dim")
            dims.append(_signed(dim))
    return dims


def _fields(buf, start, end, path, kind):
    """Yield (field number, wire type, value, byte offset of the tag) of a ``kind`` message
    lying in buf[start:end].

    value: an int for varints, (start, end) byte offsets for the other wire types, each
    checked to lie within [start, end) before it is yielded.
    """
    names, pos = _FIELD_NAMES[kind], start
    while pos < end:
        at = pos
        tag, pos = _varint(buf, pos, end, f"{path} (field tag)")
        field, wire = tag >> 3, tag & 7
        where = f"{path} field {field}" + (f" ({names[field]})" if field in names else "")
        if field == 0 or field >= 1 << 29:
            raise ValueError(f"caffemodel: byte {at}: {path}: expected a field number in "
                             f"[1, 2^29), got {field}")
        if wire == _VARINT:
            value, pos = _varint(buf, pos, end, where)
        elif wire in (_I64, _I32, _LEN):
            if wire == _LEN:
                size, pos = _varint(buf, pos, end, f"{where} length")
            else:
                size = 8 if wire == _I64 else 4
            if size > end - pos:
                raise ValueError(f"caffemodel: byte {at}: {where}: truncated: expected "
                                 f"{size} bytes, got {end - pos} left in the {kind}")
            value, pos = (pos, pos + size), pos + size
        else:
            raise ValueError(f"caffemodel: byte {at}: {where}: expected wire type 0, 1, 2 or 5, "
                             f"got {wire}")
        yield field, wire, value, at


def _varint(buf, pos, end, where):
    result, shift, start = 0, 0, pos
    while True:
        if pos >= end:
            raise ValueError(f"caffemodel: byte {pos}: {where}: truncated varint (started at "
                             f"byte {start})")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & 0xFFFF_FFFF_FFFF_FFFF, pos
        shift += 7
        if shift >= 70:
            raise ValueError(f"caffemodel: byte {start}: {where}: expected a varint of at most "
                             "10 bytes, got a longer one")


def _fixed_array(buf, wire, value, at, where, dtype, single_wire):
    _expect_wire(wire, (_LEN, single_wire), at, where)
    size = np.dtype(dtype).itemsize
    start, end = value
    if (end - start) % size:
        raise ValueError(f"caffemodel: byte {at}: {where}: expected a packed length divisible "
                         f"by {size}, got {end - start}")
    return np.frombuffer(buf[start:end], dtype=dtype)


def _expect_wire(wire, allowed, at, where):
    if wire not in allowed:
        raise ValueError(f"caffemodel: byte {at}: {where}: expected wire type "
                         f"{' or '.join(map(str, allowed))}, got {wire}")


def _utf8(buf, span, at, where):
    try:
        return bytes(buf[span[0]:span[1]]).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"caffemodel: byte {at}: {where}: expected UTF-8 text, got invalid "
                         "bytes") from None


def _signed(value):
    return value - (1 << 64) if value >= 1 << 63 else value


# ------------------------------------------------------------------------------------------------
# Encoder (writes the files the tests decode)
# ------------------------------------------------------------------------------------------------

def encode_caffemodel(layers, *, v1: bool = False, blob_format: str = "packed") -> bytes:
    """Encode layers as a binary NetParameter, the inverse of ``decode_caffemodel``.

    Input:   layers, [{"name", "type", "bottoms", "tops", "blobs": [array-like]}] ("bottoms",
             "tops", "blobs" optional). v1: write legacy V1 ``layers`` (type as the V1 enum;
             the type must be one of V1_LAYER_TYPES' names). blob_format: "packed" (shape +
             packed float data, what Caffe writes), "unpacked" (one field per dim and value),
             "double" (double_data), "legacy4d" (num/channels/height/width, at most 4 dims,
             left-padded with 1).
    Returns: bytes.
    Raises:  ValueError for an unknown blob_format, a type with no V1 number, or a blob of more
             than 4 dims with "legacy4d".
    """
    if blob_format not in ("packed", "unpacked", "double", "legacy4d"):
        raise ValueError(f"encode_caffemodel: expected blob_format packed, unpacked, double or "
                         f"legacy4d, got {blob_format!r}")
    fields = (4, 5, 2, 3, 6) if v1 else (1, 2, 3, 4, 7)  # name, type, bottom, top, blobs
    out = bytearray()
    for layer in layers:
        body = bytearray(_len_field(fields[0], layer["name"].encode()))
        if v1:
            if layer["type"] not in _V1_NUMBER:
                raise ValueError(f"encode_caffemodel: expected a V1 layer type, got "
                                 f"{layer['type']!r}")
            body += _varint_field(fields[1], _V1_NUMBER[layer["type"]])
        else:
            body += _len_field(fields[1], layer["type"].encode())
        for number, key in ((fields[2], "bottoms"), (fields[3], "tops")):
            for name in layer.get(key, []):
                body += _len_field(number, name.encode())
        for blob in layer.get("blobs", []):
            body += _len_field(fields[4], _encode_blob(np.asarray(blob), blob_format))
        out += _len_field(2 if v1 else 100, body)
    return bytes(out)


def _encode_blob(blob, blob_format):
    out = bytearray()
    flat = blob.reshape(-1)
    if blob_format == "legacy4d":
        if blob.ndim > 4:
            raise ValueError(f"encode_caffemodel: expected at most 4 dims for legacy4d, got "
                             f"shape {blob.shape}")
        for number, dim in enumerate((1,) * (4 - blob.ndim) + blob.shape, start=1):
            out += _varint_field(number, dim)
    elif blob_format == "unpacked":
        out += _len_field(7, b"".join(_varint_field(1, d) for d in blob.shape))
    else:
        out += _len_field(7, _len_field(1, b"".join(_encode_varint(d) for d in blob.shape)))
    if blob_format == "double":
        out += _len_field(8, flat.astype("<f8").tobytes())
    elif blob_format == "unpacked":
        out += b"".join(_encode_varint(5 << 3 | _I32) + struct.pack("<f", v) for v in flat)
    else:
        out += _len_field(5, flat.astype("<f4").tobytes())
    return bytes(out)


def _encode_varint(value):
    value &= 0xFFFF_FFFF_FFFF_FFFF
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _varint_field(number, value):
    return _encode_varint(number << 3 | _VARINT) + _encode_varint(int(value))


def _len_field(number, payload):
    return _encode_varint(number << 3 | _LEN) + _encode_varint(len(payload)) + bytes(payload)
