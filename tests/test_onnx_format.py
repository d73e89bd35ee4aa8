"""ONNX model loading: graph flattening, attribute defaults, initializers, errors."""

import sys

import numpy as np
import pytest

from clgrad.io import onnx_format as of

onnx = pytest.importorskip("onnx", reason="ONNX loading needs the onnx package: pip install onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import caffe_reference as ref  # noqa: E402
from onnx_pins import ONNX_IR_VERSION  # noqa: E402


def save(tmp_path, nodes, inputs, outputs, inits=(), opset=13, name="m"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=ONNX_IR_VERSION)
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def tensor(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def arange_init(name, shape, scale=0.1):
    values = (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) - 3) * scale
    return values, numpy_helper.from_array(values, name)


def run_ort(path, feeds):
    ort = pytest.importorskip("onnxruntime", reason="pip install onnxruntime")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_grouped_conv(tmp_path):
    w, w_init = arange_init("w", (4, 2, 3, 3))
    b, b_init = arange_init("b", (4,), 1.0)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv_g2", group=2,
                            kernel_shape=[3, 3], pads=[1, 0, 1, 2], strides=[2, 1],
                            dilations=[1, 2])
    # IR < 4 style: the weights are listed as graph inputs too; they are not model inputs.
    path = save(tmp_path, [conv], [tensor("x", ["N", 4, 7, 8]), tensor("w", [4, 2, 3, 3])],
                [tensor("y", ["N", 4, 4, None])], [w_init, b_init])
    desc = of.load_onnx(path)
    assert desc["name"] == "m" and desc["opset"] == {"": 13}
    assert desc["inputs"] == [{"name": "x", "dtype": "float32", "shape": ("N", 4, 7, 8)}]
    assert desc["outputs"] == [{"name": "y", "dtype": "float32", "shape": ("N", 4, 4, None)}]
    (node,) = desc["nodes"]
    assert node["op_type"] == "Conv" and node["name"] == "conv_g2"
    assert node["inputs"] == ["x", "w", "b"] and node["outputs"] == ["y"]
    assert node["attrs"] == {"group": 2, "kernel_shape": [3, 3], "pads": [1, 0, 1, 2],
                             "strides": [2, 1], "dilations": [1, 2]}
    assert node["params"] == {"kernel_shape": [3, 3], "strides": [2, 1], "pads": [1, 0, 1, 2],
                              "auto_pad": "NOTSET", "dilations": [1, 2], "group": 2}
    assert set(desc["initializers"]) == {"w", "b"}
    assert desc["initializers"]["w"].dtype == np.float32
    assert desc["initializers"]["w"].tobytes() == w.tobytes()
    np.testing.assert_array_equal(desc["initializers"]["b"], b)

    # The parsed values drive the NumPy oracle to ONNX Runtime's answer (symmetric pads only).
    x = np.random.default_rng(0).standard_normal((2, 4, 7, 8)).astype(np.float32)
    conv_sym = helper.make_node("Conv", ["x", "w", "b"], ["y"], group=2, pads=[1, 2, 1, 2],
                                strides=[2, 1], dilations=[1, 2])
    path = save(tmp_path, [conv_sym], [tensor("x", [2, 4, 7, 8])], [tensor("y", [2, 4, 4, 8])],
                [w_init, b_init], name="sym")
    p = of.load_onnx(path)["nodes"][0]["params"]
    expected = ref.conv2d(x, w, b, p["strides"], p["pads"][:2], p["dilations"], p["group"])
    (got,) = run_ort(path, {"x": x})
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_depthwise_conv_kernel_from_weight(tmp_path):
    w, w_init = arange_init("dw", (3, 1, 3, 3))
    conv = helper.make_node("Conv", ["x", "dw"], ["y"], group=3)  # no kernel_shape attribute
    path = save(tmp_path, [conv], [tensor("x", [1, 3, 5, 5])], [tensor("y", [1, 3, 3, 3])],
                [w_init])
    (node,) = of.load_onnx(path)["nodes"]
    assert node["name"] == "Conv_0"  # unnamed nodes get op_type + index
    assert node["attrs"] == {"group": 3}
    assert node["params"] == {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [0, 0, 0, 0],
                              "auto_pad": "NOTSET", "dilations": [1, 1], "group": 3}
    x = np.random.default_rng(1).standard_normal((1, 3, 5, 5)).astype(np.float32)
    (got,) = run_ort(path, {"x": x})
    np.testing.assert_allclose(got, ref.conv2d(x, w, None, (1, 1), (0, 0), (1, 1), 3),
                               rtol=1e-5, atol=1e-5)


def test_lrn_pools_gemm_softmax(tmp_path):
    w, w_init = arange_init("fc_w", (5, 48))  # p2 is (1, 3, 4, 4)
    nodes = [
        helper.make_node("LRN", ["x"], ["n1"], name="lrn_default", size=5),
        helper.make_node("LRN", ["n1"], ["n2"], name="lrn", size=3, alpha=2e-4, beta=0.5,
                         bias=2.0),
        helper.make_node("MaxPool", ["n2"], ["p1"], name="max", kernel_shape=[3, 3],
                         strides=[2, 2], ceil_mode=1),
        helper.make_node("AveragePool", ["p1"], ["p2"], name="ave", kernel_shape=[2, 2],
                         pads=[1, 1, 1, 1], count_include_pad=1),
        helper.make_node("GlobalAveragePool", ["p2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["p2"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "fc_w"], ["fc"], name="fc", transB=1, alpha=0.5),
        helper.make_node("LeakyRelu", ["fc"], ["lr"], name="leaky"),
        helper.make_node("Softmax", ["lr"], ["prob"], name="softmax"),
    ]
    path = save(tmp_path, nodes, [tensor("x", [1, 3, 6, 6])],
                [tensor("prob", [1, 5]), tensor("g", [1, 3, 1, 1])], [w_init])
    params = {n["name"]: n["params"] for n in of.load_onnx(path)["nodes"]}
    assert params["lrn_default"] == {"size": 5, "alpha": 1e-4, "beta": 0.75, "bias": 1.0}
    assert params["lrn"] == {"size": 3, "alpha": pytest.approx(2e-4), "beta": 0.5, "bias": 2.0}
    assert params["max"] == {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 0, 0],
                             "auto_pad": "NOTSET", "dilations": [1, 1], "ceil_mode": 1,
                             "storage_order": 0}
    assert params["ave"] == {"kernel_shape": [2, 2], "strides": [1, 1], "pads": [1, 1, 1, 1],
                             "auto_pad": "NOTSET", "dilations": [1, 1], "ceil_mode": 0,
                             "count_include_pad": 1}
    assert params["gap"] == {} and params["flat"] == {"axis": 1}
    assert params["fc"] == {"alpha": 0.5, "beta": 1.0, "transA": 0, "transB": 1}
    assert params["leaky"] == {"alpha": 0.01}
    assert params["softmax"] == {"axis": -1, "coerce_2d": False}
    prob, gap = run_ort(path, {"x": np.ones((1, 3, 6, 6), np.float32)})
    assert prob.shape == (1, 5) and gap.shape == (1, 3, 1, 1)  # the attrs make a valid model


@pytest.mark.parametrize("opset, axis, coerce", [(11, 1, True), (13, -1, False)])
def test_softmax_default_axis_depends_on_opset(tmp_path, opset, axis, coerce):
    node = helper.make_node("Softmax", ["x"], ["y"])
    path = save(tmp_path, [node], [tensor("x", [2, 3])], [tensor("y", [2, 3])], opset=opset)
    desc = of.load_onnx(path)
    assert desc["opset"] == {"": opset}
    assert desc["nodes"][0]["params"] == {"axis": axis, "coerce_2d": coerce}


def test_reshape_dropout_batchnorm_concat(tmp_path):
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    ratio = numpy_helper.from_array(np.array(0.25, np.float32), "ratio")
    inits = [shape, ratio] + [numpy_helper.from_array(np.full(3, v, np.float32), n)
                              for n, v in (("s", 1.0), ("b", 0.0), ("m", 0.5), ("v", 2.0))]
    nodes = [
        helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["bn"], name="bn",
                         epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("Dropout", ["r", "ratio"], ["d"], name="drop"),
        helper.make_node("Identity", ["d"], ["i"], name="id"),
        helper.make_node("Concat", ["i", "bn"], ["c"], name="cat", axis=1),
        helper.make_node("Add", ["c", "c"], ["a"], name="add"),
        helper.make_node("Mul", ["a", "c"], ["mu"], name="mul"),
        helper.make_node("Reshape", ["mu", "shape"], ["y"], name="reshape"),
        helper.make_node("MatMul", ["y", "y2"], ["z"], name="mm"),
    ]
    path = save(tmp_path, nodes, [tensor("x", [1, 3, 2, 2]), tensor("y2", [24, 2])],
                [tensor("z", [1, 2])], inits)
    desc = of.load_onnx(path)
    params = {n["name"]: n["params"] for n in desc["nodes"]}
    assert params["bn"] == {"epsilon": pytest.approx(1e-3), "momentum": pytest.approx(0.9),
                            "training_mode": 0}
    assert params["drop"] == {"ratio": 0.25}
    assert params["cat"] == {"axis": 1}
    assert params["reshape"] == {"allowzero": 0, "shape": (1, -1)}
    assert params["relu"] == params["add"] == params["mul"] == params["mm"] == params["id"] == {}
    assert [i["name"] for i in desc["inputs"]] == ["x", "y2"]
    np.testing.assert_array_equal(desc["initializers"]["shape"], [1, -1])
    assert desc["initializers"]["shape"].dtype == np.int64


def test_unsupported_ops_are_listed_in_one_error(tmp_path):
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["a"], name="sig1"),
        helper.make_node("Tanh", ["a"], ["b"], name="tanh1"),
        helper.make_node("Relu", ["b"], ["c"], name="ok"),
        helper.make_node("Sigmoid", ["c"], ["d"]),
        helper.make_node("FancyOp", ["d"], ["y"], name="custom", domain="com.example"),
    ]
    graph = helper.make_graph(nodes, "g", [tensor("x", [2])], [tensor("y", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.example", 1)],
                              ir_version=ONNX_IR_VERSION)
    path = tmp_path / "unsupported.onnx"
    onnx.save(model, str(path))
    with pytest.raises(NotImplementedError) as info:
        of.load_onnx(path)
    message = str(info.value)
    assert message.startswith("load_onnx: expected only supported ops, got 3 unsupported op "
                              "type(s): Sigmoid (nodes: sig1, #3); Tanh (nodes: tanh1); "
                              "com.example::FancyOp (nodes: custom). ")
    assert "Supported: Add, AveragePool, BatchNormalization" in message
    desc = of.load_onnx(path, allow_unsupported=True)
    assert [n["op_type"] for n in desc["nodes"]] == ["Sigmoid", "Tanh", "Relu", "Sigmoid",
                                                     "FancyOp"]
    assert desc["opset"] == {"": 13, "com.example": 1}


def test_unsupported_list_is_capped_per_op(tmp_path):
    nodes = [helper.make_node("Sigmoid", [f"t{i}"], [f"t{i + 1}"], name=f"s{i}")
             for i in range(8)]
    path = save(tmp_path, nodes, [tensor("t0", [1])], [tensor("t8", [1])])
    with pytest.raises(NotImplementedError, match=r"Sigmoid \(nodes: s0, s1, s2, s3, s4, "
                                                  r"and 3 more\)"):
        of.load_onnx(path)


def test_attribute_values_become_python_values(tmp_path):
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    nodes = [helper.make_node("Constant", [], ["c"], name="const",
                              value=numpy_helper.from_array(value)),
             helper.make_node("Cast", ["c"], ["y"], name="cast", to=TensorProto.DOUBLE),
             helper.make_node("Pad", ["y", "pads"], ["z"], name="pad", mode="reflect")]
    pads = numpy_helper.from_array(np.zeros(4, np.int64), "pads")
    path = save(tmp_path, nodes, [], [tensor("z", [2, 3], TensorProto.DOUBLE)], [pads])
    desc = of.load_onnx(path, allow_unsupported=True)
    attrs = {n["name"]: n["attrs"] for n in desc["nodes"]}
    np.testing.assert_array_equal(attrs["const"]["value"], value)
    assert attrs["cast"] == {"to": TensorProto.DOUBLE}
    assert attrs["pad"] == {"mode": "reflect"} and isinstance(attrs["pad"]["mode"], str)
    assert desc["outputs"] == [{"name": "z", "dtype": "float64", "shape": (2, 3)}]
    assert desc["inputs"] == []


@pytest.mark.parametrize("mode, size, kernel, stride, expected", [
    ("SAME_UPPER", [7, 8], [3, 3], [2, 2], [1, 0, 1, 1]),
    ("SAME_LOWER", [7, 8], [3, 3], [2, 2], [1, 1, 1, 0]),
    ("VALID", [7, 8], [3, 3], [2, 2], [0, 0, 0, 0]),
    ("SAME_UPPER", [5], [1], [3], [0, 0]),
])
def test_resolve_auto_pad(tmp_path, mode, size, kernel, stride, expected):
    pads = of.resolve_auto_pad(mode, size, kernel, stride)
    assert pads == expected
    if len(size) != 2:
        return
    w, w_init = arange_init("w", (2, 1) + tuple(kernel))
    auto = helper.make_node("Conv", ["x", "w"], ["y"], auto_pad=mode, strides=stride)
    explicit = helper.make_node("Conv", ["x", "w"], ["y"], pads=pads, strides=stride)
    x = np.random.default_rng(2).standard_normal([1, 1] + size).astype(np.float32)
    outs = [run_ort(save(tmp_path, [n], [tensor("x", [1, 1] + size)], [tensor("y", None)],
                         [w_init], name=f"conv{i}"), {"x": x})[0]
            for i, n in enumerate((auto, explicit))]
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)


def test_resolve_auto_pad_rejects_notset():
    with pytest.raises(ValueError, match="expected SAME_UPPER, SAME_LOWER or VALID, got "
                                         "'NOTSET'"):
        of.resolve_auto_pad("NOTSET", [4], [3], [1])


def test_attribute_errors_name_the_node(tmp_path):
    w, w_init = arange_init("w", (3, 2, 3, 3))
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="bad_group", group=2)
    path = save(tmp_path, [conv], [tensor("x", [1, 4, 5, 5])], [tensor("y", None)], [w_init])
    with pytest.raises(ValueError, match="node 'bad_group' \\(Conv\\): expected group dividing "
                                         "the weight's 3 output channels, got group=2"):
        of.load_onnx(path, check=False)
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="bad_pads", pads=[1, 1])
    path = save(tmp_path, [conv], [tensor("x", [1, 2, 5, 5])], [tensor("y", None)], [w_init],
                name="pads")
    with pytest.raises(ValueError, match="node 'bad_pads' \\(Conv\\): expected 4 values in pads "
                                         "for a 2-D kernel, got \\[1, 1\\]"):
        of.load_onnx(path, check=False)


def test_invalid_files(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff\xff\xff\xff not a model")
    with pytest.raises(ValueError, match="does not decode"):
        of.load_onnx(garbage)
    with pytest.raises(FileNotFoundError, match="expected an existing file"):
        of.load_onnx(tmp_path / "missing.onnx")
    node = helper.make_node("Relu", ["nowhere"], ["y"])  # reads a tensor nothing defines
    path = save(tmp_path, [node], [tensor("x", [1])], [tensor("y", [1])])
    with pytest.raises(ValueError, match="fails onnx.checker"):
        of.load_onnx(path)
    assert of.load_onnx(path, check=False)["nodes"][0]["inputs"] == ["nowhere"]


def test_missing_onnx_package_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnx", None)  # makes `import onnx` raise ImportError
    with pytest.raises(ImportError,
                       match=r"needs the onnx package: pip install onnx \(or 'clgrad\[onnx\]'"):
        of.load_onnx(tmp_path / "any.onnx")
