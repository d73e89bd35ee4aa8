"""ONNX model files: load, check and flatten a graph into plain Python and NumPy values.

Uses the ``onnx`` package, imported only when a function here is called
(``pip install onnx``). A model builder consumes the dict of ``load_onnx``::

    {"name": str,                          # graph name
     "opset": {domain: version},           # "" is the default ONNX domain
     "nodes": [{"op_type", "name", "inputs", "outputs",
                "attrs",                   # the attributes as given, as Python values
                "params"}],                # attrs with ONNX defaults filled in, per op type
     "initializers": {name: np.ndarray},  # bfloat16 (TensorProto.BFLOAT16): float32, exact
     "inputs":  [{"name", "dtype", "shape"}],   # graph inputs that are not initializers
     "outputs": [{"name", "dtype", "shape"}]}   # shape: tuple of int, str (symbolic) or None
"""

from __future__ import annotations

import os

import numpy as np

from clgrad.layout import cdiv

__all__ = ["SUPPORTED_OPS", "load_onnx", "describe_model", "resolve_auto_pad"]

SUPPORTED_OPS = frozenset({
    "Conv", "Relu", "LeakyRelu", "MaxPool", "AveragePool", "GlobalAveragePool", "LRN", "Gemm",
    "MatMul", "Add", "Mul", "Flatten", "Reshape", "Softmax", "BatchNormalization", "Dropout",
    "Concat", "Identity",
})


def load_onnx(path: str | os.PathLike, *, check: bool = True,
              allow_unsupported: bool = False) -> dict:
    """Load an ``.onnx`` file, check it, and describe its graph (see ``describe_model``).

    Input:   path to the model (external data files are looked up beside it). check: run
             ``onnx.checker.check_model`` first. allow_unsupported: describe every node even if
             its op is not in SUPPORTED_OPS (for inspection tools).
    Returns: the dict described in the module docstring.
    Raises:  ImportError when the onnx package is missing; FileNotFoundError; ValueError when
             the file is not a valid ONNX model (undecodable, or rejected by the checker);
             NotImplementedError listing ALL unsupported ops at once (see describe_model).
    """
    onnx = _import_onnx()
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"load_onnx: expected an existing file, got {path!r}")
    try:
        model = onnx.load(path)
    except Exception as e:  # protobuf's DecodeError and friends carry no common base class
        raise ValueError(f"load_onnx: expected a valid ONNX model in {path!r}, got a file that "
                         f"does not decode: {e}") from e
    if check:
        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError as e:
            raise ValueError(f"load_onnx: {path!r} fails onnx.checker: {e}") from e
    return describe_model(model, allow_unsupported=allow_unsupported)


def describe_model(model, *, allow_unsupported: bool = False) -> dict:
    """Flatten an ``onnx.ModelProto`` (already loaded and checked) into plain values.

    Returns: the dict described in the module docstring. ``params`` per op type (defaults from
             the ONNX operator specs; k = number of spatial axes):
               Conv:         kernel_shape (attr, else the weight initializer's shape[2:], else
                             None), strides [1]*k, dilations [1]*k, pads [0]*2k (all begins,
                             then all ends), group 1, auto_pad "NOTSET"
               MaxPool:      kernel_shape, strides, dilations, pads, auto_pad, ceil_mode 0,
                             storage_order 0
               AveragePool:  kernel_shape, strides, dilations, pads, auto_pad, ceil_mode 0,
                             count_include_pad 0
               LRN:          size, alpha 1e-4, beta 0.75, bias 1.0
               Gemm:         alpha 1.0, beta 1.0, transA 0, transB 0
               LeakyRelu:    alpha 0.01
               Softmax:      axis (1 before opset 13, -1 from 13), coerce_2d (True before 13:
                             the input is flattened to 2-D at axis, as the old spec says)
               Flatten:      axis 1           Concat: axis
               BatchNormalization: epsilon 1e-5, momentum 0.9, training_mode 0
               Dropout:      ratio (attr, else a constant ratio input, else 0.5)
               Reshape:      allowzero 0, shape (tuple from a constant shape input, else None)
               others:       {}
    Raises:  NotImplementedError naming every unsupported op type (with its node names and
             domain) in one message. NotImplementedError rather than ValueError because the
             model is valid ONNX: the limitation is clgrad's, and callers catching ValueError for
             corrupt files should not mistake the one for the other.
             ValueError for a node whose attributes contradict the spec (e.g. pads of the wrong
             length, a group not dividing the weight's output channels).
    """
    onnx = _import_onnx()
    graph = model.graph
    opset = {imp.domain: imp.version for imp in model.opset_import}
    if not allow_unsupported:
        _check_supported(graph.node)
    inits = {t.name: _to_array(onnx, t) for t in graph.initializer}
    nodes = []
    for index, node in enumerate(graph.node):
        attrs = {a.name: _attr_value(onnx, a) for a in node.attribute}
        entry = {"op_type": node.op_type, "name": node.name or f"{node.op_type}_{index}",
                 "inputs": list(node.input), "outputs": list(node.output), "attrs": attrs}
        entry["params"] = _params(entry, inits, opset.get("", opset.get("ai.onnx", 1)))
        nodes.append(entry)
    return {"name": graph.name, "opset": opset, "nodes": nodes, "initializers": inits,
            "inputs": [_value_info(onnx, v) for v in graph.input if v.name not in inits],
            "outputs": [_value_info(onnx, v) for v in graph.output]}


def resolve_auto_pad(auto_pad, in_shape, kernel_shape, strides, dilations=None):
    """Explicit ONNX pads [begins..., ends...] for an auto_pad mode, given spatial in_shape.

    SAME_UPPER/SAME_LOWER: output = ceil(in / stride), the odd padding element at the end
    (UPPER) or at the beginning (LOWER). VALID: no padding. NOTSET: raises ValueError (use the
    node's own pads).
    """
    k = len(in_shape)
    dilations = dilations or [1] * k
    if auto_pad == "VALID":
        return [0] * (2 * k)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise ValueError(f"resolve_auto_pad: expected SAME_UPPER, SAME_LOWER or VALID, got "
                         f"{auto_pad!r}")
    begins, ends = [], []
    for size, kern, stride, dil in zip(in_shape, kernel_shape, strides, dilations):
        out = cdiv(size, stride)
        total = max(0, (out - 1) * stride + (kern - 1) * dil + 1 - size)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return begins + ends


def _import_onnx():
    try:
        import onnx
        import onnx.checker
        import onnx.numpy_helper
    except ImportError as e:
        raise ImportError("clgrad.io.onnx_format needs the onnx package: pip install onnx "
                          f"(or 'clgrad[onnx]'; import failed: {e})") from e
    return onnx


def _check_supported(nodes):
    unsupported: dict[str, list[str]] = {}
    for index, node in enumerate(nodes):
        if node.domain not in ("", "ai.onnx") or node.op_type not in SUPPORTED_OPS:
            key = node.op_type if node.domain in ("", "ai.onnx") else (
                f"{node.domain}::{node.op_type}")
            unsupported.setdefault(key, []).append(node.name or f"#{index}")
    if unsupported:
        listed = "; ".join(f"{op} (nodes: {', '.join(names[:5])}"
                           f"{f', and {len(names) - 5} more' if len(names) > 5 else ''})"
                           for op, names in sorted(unsupported.items()))
        raise NotImplementedError(
            f"load_onnx: expected only supported ops, got {len(unsupported)} unsupported op "
            f"type(s): {listed}. Supported: {', '.join(sorted(SUPPORTED_OPS))}")


def _attr_value(onnx, attr):
    value = onnx.helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return _to_array(onnx, value)
    if isinstance(value, (list, tuple)):
        return [_plain(onnx, v) for v in value]
    return value


def _plain(onnx, value):
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return _to_array(onnx, value)
    return value


def _to_array(onnx, tensor):
    """A TensorProto's values as a NumPy array; BFLOAT16 ones widened to float32 (exact: NumPy
    has no bfloat16, and onnx gives ml_dtypes' or, in older versions, float32 values)."""
    a = onnx.numpy_helper.to_array(tensor)
    if tensor.data_type == onnx.TensorProto.BFLOAT16:
        a = np.asarray(a).astype(np.float32)
    return a


def _value_info(onnx, info):
    t = info.type
    if not t.HasField("tensor_type"):
        return {"name": info.name, "dtype": None, "shape": None}
    tensor = t.tensor_type
    dtype = ("float32" if tensor.elem_type == onnx.TensorProto.BFLOAT16 else  # (widened)
             np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)).name
             if tensor.elem_type else None)
    shape = None
    if tensor.HasField("shape"):
        shape = tuple(d.dim_value if d.HasField("dim_value") else
                      d.dim_param if d.HasField("dim_param") else None
                      for d in tensor.shape.dim)
    return {"name": info.name, "dtype": dtype, "shape": shape}


def _params(node, inits, opset):
    op, a, where = node["op_type"], node["attrs"], f"node '{node['name']}' ({node['op_type']})"
    if op in ("Conv", "MaxPool", "AveragePool"):
        return _window_params(node, inits, where)
    if op == "LRN":
        if "size" not in a:
            raise ValueError(f"load_onnx: {where}: expected attribute size, got none")
        return {"size": a["size"], "alpha": a.get("alpha", 1e-4), "beta": a.get("beta", 0.75),
                "bias": a.get("bias", 1.0)}
    if op == "Gemm":
        return {"alpha": a.get("alpha", 1.0), "beta": a.get("beta", 1.0),
                "transA": a.get("transA", 0), "transB": a.get("transB", 0)}
    if op == "LeakyRelu":
        return {"alpha": a.get("alpha", 0.01)}
    if op == "Softmax":
        return {"axis": a.get("axis", 1 if opset < 13 else -1), "coerce_2d": opset < 13}
    if op == "Flatten":
        return {"axis": a.get("axis", 1)}
    if op == "Concat":
        return {"axis": a["axis"]}
    if op == "BatchNormalization":
        return {"epsilon": a.get("epsilon", 1e-5), "momentum": a.get("momentum", 0.9),
                "training_mode": a.get("training_mode", 0)}
    if op == "Dropout":
        ratio = a.get("ratio")
        if ratio is None and len(node["inputs"]) > 1 and node["inputs"][1] in inits:
            ratio = float(inits[node["inputs"][1]])
        return {"ratio": 0.5 if ratio is None else ratio}
    if op == "Reshape":
        shape = inits.get(node["inputs"][1]) if len(node["inputs"]) > 1 else None
        return {"allowzero": a.get("allowzero", 0),
                "shape": None if shape is None else tuple(int(d) for d in shape)}
    return {}


def _window_params(node, inits, where):
    op, a = node["op_type"], node["attrs"]
    kernel = a.get("kernel_shape")
    weight = inits.get(node["inputs"][1]) if op == "Conv" and len(node["inputs"]) > 1 else None
    if kernel is None and weight is not None:
        kernel = list(weight.shape[2:])
    if kernel is None and op != "Conv":
        raise ValueError(f"load_onnx: {where}: expected attribute kernel_shape, got none")
    k = len(kernel) if kernel is not None else len(a.get("strides", a.get("dilations", [])))
    params = {"kernel_shape": kernel, "strides": a.get("strides", [1] * k),
              "pads": a.get("pads", [0] * (2 * k)), "auto_pad": a.get("auto_pad", "NOTSET")}
    params["dilations"] = a.get("dilations", [1] * k)
    if op == "Conv":
        params["group"] = a.get("group", 1)
        if weight is not None and (params["group"] < 1 or weight.shape[0] % params["group"]):
            raise ValueError(f"load_onnx: {where}: expected group dividing the weight's "
                             f"{weight.shape[0]} output channels, got group={params['group']}")
    else:
        params["ceil_mode"] = a.get("ceil_mode", 0)
        params["count_include_pad" if op == "AveragePool" else "storage_order"] = a.get(
            "count_include_pad" if op == "AveragePool" else "storage_order", 0)
    for key, length in (("strides", k), ("dilations", k), ("pads", 2 * k)):
        if key in params and kernel is not None and len(params[key]) != length:
            raise ValueError(f"load_onnx: {where}: expected {length} values in {key} for a "
                             f"{k}-D kernel, got {params[key]}")
    return params
