"""Caffe ``.caffemodel`` files: a binary NetParameter in protobuf wire format.

Pure Python and NumPy: no protobuf package, no caffe.proto compilation.

    decode_caffemodel(data) -> [layer]    name, type, bottoms, tops and float32 blobs per layer
    read_caffemodel(path) -> [layer]
    blobs_by_name(decoded) -> {name: [np.ndarray]}
    encode_caffemodel(layers) -> bytes    the inverse of decode_caffemodel (writes test files)

A decoded layer is a dict::

    {"name": str, "type": str, "bottoms": [str], "tops": [str], "blobs": [np.ndarray float32]}
"""

from __future__ import annotations

import math
import os
import struct

import numpy as np

__all__ = ["decode_caffemodel", "read_caffemodel", "blobs_by_name", "encode_caffemodel",
           "V1_LAYER_TYPES"]

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
_V1_NUMBER = {name: number for number, (_, name) in V1_LAYER_TYPES.items()}

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
