"""Caffe prototxt parsing, net description, caffemodel wire decoding, and the NumPy oracle."""

import contextlib
import signal
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import caffe_reference as ref
from onnx_pins import ONNX_IR_VERSION
from clgrad.io.caffe_net import describe_net
from clgrad.io.caffemodel import (V1_LAYER_TYPES, blobs_by_name, decode_caffemodel,
                                  encode_caffemodel, read_caffemodel)
from clgrad.io.prototxt import MAX_DEPTH, parse_prototxt

# ------------------------------------------------------------------------------------------------
# An AlexNet-shaped deploy net (BVLC AlexNet layout: grouped conv2/4/5, LRN, ceil-mode pooling,
# in-place ReLU and Dropout). Channel counts and input size are parameters so the same text
# serves the real shapes (parsing) and a small variant (numerical forward).
# ------------------------------------------------------------------------------------------------

MODERN_INPUT = """
layer {
  name: "data"
  type: "Input"
  top: "data"
  input_param { shape: { dim: 10 dim: 3 dim: %(size)d dim: %(size)d } }
}
"""
LEGACY_INPUT_DIM = """
input: "data"
input_dim: 10
input_dim: 3
input_dim: %(size)d
input_dim: %(size)d
"""
LEGACY_INPUT_SHAPE = """
input: "data"
input_shape { dim: 10 dim: 3 dim: %(size)d dim: %(size)d }
"""

ALEXNET_LAYERS = """
layer {
  name: "conv1"  type: "Convolution"  bottom: "data"  top: "conv1"
  param { lr_mult: 1 decay_mult: 1 }  # training-only fields are ignored
  convolution_param {
    num_output: %(c1)d  kernel_size: 11  stride: 4
    weight_filler { type: "gaussian" std: 0.01 }
  }
}
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer {
  name: "norm1" type: "LRN" bottom: "conv1" top: "norm1"
  lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 }
}
layer {
  name: "pool1" type: "Pooling" bottom: "norm1" top: "pool1"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 }
}
layer {
  name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
  convolution_param { num_output: %(c2)d pad: 2 kernel_size: 5 group: 2 }
}
layer { name: "relu2" type: "ReLU" bottom: "conv2" top: "conv2" }
layer {
  name: "norm2" type: "LRN" bottom: "conv2" top: "norm2"
  lrn_param { local_size: 5 alpha: 1e-4 beta: 0.75 }
}
layer {
  name: "pool2" type: "Pooling" bottom: "norm2" top: "pool2"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 }
}
layer {
  name: "conv3" type: "Convolution" bottom: "pool2" top: "conv3"
  convolution_param { num_output: %(c3)d pad: 1 kernel_size: 3 }
}
layer { name: "relu3" type: "ReLU" bottom: "conv3" top: "conv3" }
layer {
  name: "conv4" type: "Convolution" bottom: "conv3" top: "conv4"
  convolution_param { num_output: %(c4)d pad: 1 kernel_size: 3 group: 2 }
}
layer { name: "relu4" type: "ReLU" bottom: "conv4" top: "conv4" }
layer {
  name: "conv5" type: "Convolution" bottom: "conv4" top: "conv5"
  convolution_param { num_output: %(c5)d pad: 1 kernel_size: 3 group: 2 }
}
layer { name: "relu5" type: "ReLU" bottom: "conv5" top: "conv5" }
layer {
  name: "pool5" type: "Pooling" bottom: "conv5" top: "pool5"
  pooling_param { pool: MAX kernel_size: 3 stride: 2 }
}
layer {
  name: "fc6" type: "InnerProduct" bottom: "pool5" top: "fc6"
  inner_product_param { num_output: %(f6)d }
}
layer { name: "relu6" type: "ReLU" bottom: "fc6" top: "fc6" }
layer {
  name: "drop6" type: "Dropout" bottom: "fc6" top: "fc6"
  dropout_param { dropout_ratio: 0.5 }
}
layer {
  name: "fc7" type: "InnerProduct" bottom: "fc6" top: "fc7"
  inner_product_param { num_output: %(f7)d }
}
layer { name: "relu7" type: "ReLU" bottom: "fc7" top: "fc7" }
layer {
  name: "drop7" type: "Dropout" bottom: "fc7" top: "fc7"
  dropout_param { dropout_ratio: 0.5 }
}
layer {
  name: "fc8" type: "InnerProduct" bottom: "fc7" top: "fc8"
  inner_product_param { num_output: %(f8)d }
}
layer { name: "prob" type: "Softmax" bottom: "fc8" top: "prob" }
"""

REAL = dict(size=227, c1=96, c2=256, c3=384, c4=384, c5=256, f6=4096, f7=4096, f8=1000)
SMALL = dict(size=71, c1=6, c2=8, c3=8, c4=6, c5=4, f6=10, f7=9, f8=5)


def alexnet(header=MODERN_INPUT, dims=REAL):
    return 'name: "AlexNet"\n' + (header + ALEXNET_LAYERS) % dims


@contextlib.contextmanager
def deadline(seconds):
    """Fail (rather than hang) when the block runs longer than ``seconds``."""
    def expire(signum, frame):
        raise TimeoutError(f"took longer than {seconds} s")
    old = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------------------------------------
# Text format
# ------------------------------------------------------------------------------------------------

def test_parse_alexnet_tree():
    tree = parse_prototxt(alexnet())
    assert tree["name"] == ["AlexNet"]
    layers = tree["layer"]
    assert [lay["name"][0] for lay in layers][:5] == ["data", "conv1", "relu1", "norm1", "pool1"]
    assert len(layers) == 24
    assert layers[0]["input_param"][0]["shape"][0]["dim"] == [10, 3, 227, 227]
    conv1 = layers[1]
    assert conv1["param"] == [{"lr_mult": [1], "decay_mult": [1]}]
    assert conv1["convolution_param"][0]["weight_filler"] == [{"type": ["gaussian"],
                                                               "std": [0.01]}]
    conv2 = layers[5]["convolution_param"][0]
    assert conv2 == {"num_output": [256], "pad": [2], "kernel_size": [5], "group": [2]}
    assert layers[3]["lrn_param"] == [{"local_size": [5], "alpha": [0.0001], "beta": [0.75]}]
    assert layers[7]["lrn_param"][0]["alpha"] == [1e-4]
    assert layers[4]["pooling_param"][0]["pool"] == ["MAX"]


@pytest.mark.parametrize("text, expected", [
    ('a: 1 a: 2 a: 3', {"a": [1, 2, 3]}),
    ('a: [1, 2, 3] a: 4', {"a": [1, 2, 3, 4]}),
    ('a: []', {"a": []}),
    ('m { x: 1 } m: { x: 2 } m < x: 3 >', {"m": [{"x": [1]}, {"x": [2]}, {"x": [3]}]}),
    ('m {}', {"m": [{}]}),
    ('a: 1, b: 2; c: 3', {"a": [1], "b": [2], "c": [3]}),
    ('a: -7 b: 0x1F c: 010 d: 0 e: -0x10', {"a": [-7], "b": [31], "c": [8], "d": [0],
                                             "e": [-16]}),
    ('a: 1.5 b: -2e-3 c: .25 d: 3. e: 2f f: 1E2', {"a": [1.5], "b": [-0.002], "c": [0.25],
                                                   "d": [3.0], "e": [2.0], "f": [100.0]}),
    ('a: true b: false c: True d: False', {"a": [True], "b": [False], "c": [True],
                                           "d": [False]}),
    ('pool: MAX round: CEIL', {"pool": ["MAX"], "round": ["CEIL"]}),
    ('s: "x" s: \'y\'', {"s": ["x", "y"]}),
    ('s: "a\\tb\\n\\\\\\"\\\'"', {"s": ['a\tb\n\\"\'']}),
    ('s: "\\101\\x42\\u00e9"', {"s": ["AB\u00e9"]}),
    ('s: "\\303\\251"', {"s": ["\u00e9"]}),  # octal escapes are UTF-8 bytes
    ('s: "ab" "cd"\n  \'ef\'', {"s": ["abcdef"]}),
    ('s: "caf\u00e9 # not a comment"', {"s": ["caf\u00e9 # not a comment"]}),
    ('# only a comment\n\n  # another\n', {}),
    ('a: 1 # trailing comment\nb: 2', {"a": [1], "b": [2]}),
    ('', {}),
])
def test_parse_values(text, expected):
    assert parse_prototxt(text) == expected


def test_parse_special_floats():
    tree = parse_prototxt("a: inf b: -inf c: nan d: -Infinity")
    assert tree["a"] == [float("inf")] and tree["b"] == [float("-inf")]
    assert np.isnan(tree["c"][0]) and tree["d"] == [float("-inf")]
    assert all(isinstance(v[0], float) for v in tree.values())
    assert isinstance(parse_prototxt("a: 3")["a"][0], int)


@pytest.mark.parametrize("text, where, fragment", [
    ("a: 1\nb {\n  c: 2\n", "line 4, column 1", "'}' closing the message opened at line 2"),
    ("a 1", "line 1, column 3", "expected ':' or '{' after field name 'a', got '1'"),
    ('a: "abc', "line 1, column 4", "an unterminated string"),
    ('a: "ab\nc"', "line 1, column 4", "an unterminated string"),
    ("a: 1abc", "line 1, column 4", "a malformed number"),
    ("a: 1.2.3", "line 1, column 4", "a malformed number"),
    ("x: 1\n  a: }", "line 2, column 6", "expected a value, got '}'"),
    ("}", "line 1, column 1", "expected a field name, got '}'"),
    ("m { a: 1 >", "line 1, column 10", "expected a field name, got '>'"),
    ("a: -foo", "line 1, column 4", "expected a number after '-'"),
    ("a: [1 2]", "line 1, column 7", "expected ',' or ']' in a list, got '2'"),
    ("a: [1,", "line 1, column 7", "got end of input"),
    ('a: "\\q"', "line 1, column 4", "expected a known escape sequence, got '\\q'"),
    ('a: "\\777"', "line 1, column 4", "octal escape up to"),
    ('a: "\\xff"', "line 1, column 4", "expected a UTF-8 string"),
    ("[ext.field]: 1", "line 1, column 1", "expected a field name, got '['"),
    ("a: @", "line 1, column 4", "got '@'"),
    ("a:", "line 1, column 3", "expected a value, got end of input"),
])
def test_parse_errors_name_line_and_column(text, where, fragment):
    with pytest.raises(ValueError) as info:
        parse_prototxt(text)
    message = str(info.value)
    assert message.startswith(f"prototxt: {where}: "), message
    assert fragment in message


def test_parse_depth_limit():
    ok = "a {" * MAX_DEPTH + "}" * MAX_DEPTH
    tree = parse_prototxt(ok)
    for _ in range(MAX_DEPTH):
        tree = tree["a"][0]
    assert tree == {}
    deep = "a {" * 10_000 + "}" * 10_000  # no RecursionError: the parser is iterative
    with pytest.raises(ValueError, match=f"at most {MAX_DEPTH} nested messages"):
        parse_prototxt(deep)


def test_parse_rejects_non_str():
    with pytest.raises(TypeError, match="expected str, got bytes"):
        parse_prototxt(b"a: 1")


@settings(deadline=None, max_examples=300)
@given(st.text(alphabet='ab_:{}<>[],;#"\'\\ \n0123456789.-xef', max_size=40))
def test_parse_fuzz_only_value_errors(text):
    try:
        tree = parse_prototxt(text)
    except ValueError as e:
        assert str(e).startswith("prototxt: line ")
    else:
        assert isinstance(tree, dict)


# ------------------------------------------------------------------------------------------------
# Net description
# ------------------------------------------------------------------------------------------------

def test_describe_alexnet():
    layers = describe_net(parse_prototxt(alexnet()))
    by = {lay["name"]: lay for lay in layers}
    assert [lay["type"] for lay in layers[:6]] == ["Input", "Convolution", "ReLU", "LRN",
                                                   "Pooling", "Convolution"]
    assert by["data"] == {"name": "data", "type": "Input", "bottoms": [], "tops": ["data"],
                          "in_place": False, "params": {"shapes": [(10, 3, 227, 227)]}}
    assert by["conv1"]["params"] == {"num_output": 96, "kernel": (11, 11), "stride": (4, 4),
                                     "pad": (0, 0), "dilation": (1, 1), "group": 1,
                                     "bias_term": True}
    assert by["conv2"]["params"] == {"num_output": 256, "kernel": (5, 5), "stride": (1, 1),
                                     "pad": (2, 2), "dilation": (1, 1), "group": 2,
                                     "bias_term": True}
    assert [by[n]["params"]["group"] for n in ("conv3", "conv4", "conv5")] == [1, 2, 2]
    assert by["norm1"]["params"] == {"local_size": 5, "alpha": 1e-4, "beta": 0.75, "k": 1.0,
                                     "norm_region": "ACROSS_CHANNELS"}
    assert by["pool1"]["params"] == {"pool": "MAX", "kernel": (3, 3), "stride": (2, 2),
                                     "pad": (0, 0), "global_pooling": False, "ceil_mode": True}
    assert by["relu1"] == {"name": "relu1", "type": "ReLU", "bottoms": ["conv1"],
                           "tops": ["conv1"], "in_place": True,
                           "params": {"negative_slope": 0.0}}
    assert by["drop6"]["in_place"] and by["drop6"]["params"] == {"dropout_ratio": 0.5}
    assert by["fc6"]["params"] == {"num_output": 4096, "bias_term": True, "axis": 1,
                                   "transpose": False}
    assert by["fc8"]["params"]["num_output"] == 1000
    assert by["prob"]["params"] == {"axis": 1} and not by["prob"]["in_place"]
    assert not by["norm1"]["in_place"] and by["norm1"]["bottoms"] == ["conv1"]


@pytest.mark.parametrize("header", [LEGACY_INPUT_DIM, LEGACY_INPUT_SHAPE])
def test_describe_legacy_input_header(header):
    modern = describe_net(parse_prototxt(alexnet(MODERN_INPUT)))
    legacy = describe_net(parse_prototxt(alexnet(header)))
    assert legacy == modern  # the header becomes an Input layer named after its blob


V1_NET = """
name: "v1"
input: "data"
input_dim: 1 input_dim: 4 input_dim: 9 input_dim: 9
layers { name: "conv" type: CONVOLUTION bottom: "data" top: "conv"
         blobs_lr: 1 blobs_lr: 2
         convolution_param { num_output: 6 kernel_size: 3 group: 2 bias_term: false } }
layers { name: "relu" type: RELU bottom: "conv" top: "conv" relu_param { negative_slope: 0.1 } }
layers { name: "pool" type: POOLING bottom: "conv" top: "pool"
         pooling_param { pool: AVE kernel_h: 2 kernel_w: 3 stride_h: 1 stride_w: 2 pad_h: 1 } }
layers { name: "norm" type: LRN bottom: "pool" top: "norm"
         lrn_param { local_size: 3 alpha: 2 beta: 0.5 k: 2 norm_region: WITHIN_CHANNEL } }
layers { name: "ip" type: INNER_PRODUCT bottom: "norm" top: "ip"
         inner_product_param { num_output: 3 bias_term: false } }
layers { name: "cat" type: CONCAT bottom: "ip" bottom: "ip" top: "cat"
         concat_param { concat_dim: 1 } }
layers { name: "loss" type: SOFTMAX_LOSS bottom: "cat" top: "loss" include { phase: TRAIN } }
layers { name: "sm" type: SOFTMAX bottom: "cat" top: "sm" exclude { phase: TRAIN } }
"""


def test_describe_v1_layers():
    layers = describe_net(parse_prototxt(V1_NET))
    assert [lay["type"] for lay in layers] == ["Input", "Convolution", "ReLU", "Pooling", "LRN",
                                               "InnerProduct", "Concat", "Softmax"]
    by = {lay["name"]: lay["params"] for lay in layers}
    assert by["conv"]["group"] == 2 and by["conv"]["bias_term"] is False
    assert by["relu"] == {"negative_slope": 0.1}
    assert by["pool"] == {"pool": "AVE", "kernel": (2, 3), "stride": (1, 2), "pad": (1, 0),
                          "global_pooling": False, "ceil_mode": True}
    assert by["norm"] == {"local_size": 3, "alpha": 2.0, "beta": 0.5, "k": 2.0,
                          "norm_region": "WITHIN_CHANNEL"}
    assert by["cat"] == {"axis": 1}
    with pytest.raises(ValueError, match="layer 'loss' .* unsupported layer type "
                                         "'SoftmaxWithLoss'"):
        describe_net(parse_prototxt(V1_NET), phase="TRAIN")


def test_describe_other_layer_types():
    text = """
    layer { name: "in" type: "Input" top: "a" top: "b"
            input_param { shape { dim: 2 dim: 3 dim: 4 dim: 4 } } }
    layer { name: "bn" type: "BatchNorm" bottom: "a" top: "a" batch_norm_param { eps: 1e-3 } }
    layer { name: "sc" type: "Scale" bottom: "a" top: "a" scale_param { bias_term: true } }
    layer { name: "sum" type: "Eltwise" bottom: "a" bottom: "b" top: "s"
            eltwise_param { operation: SUM coeff: 1 coeff: -0.5 } }
    layer { name: "gp" type: "Pooling" bottom: "s" top: "g"
            pooling_param { pool: AVE global_pooling: true } }
    layer { name: "fl" type: "Flatten" bottom: "g" top: "f" }
    layer { name: "dil" type: "Convolution" bottom: "a" top: "d"
            convolution_param { num_output: 2 kernel_size: 3 kernel_size: 1 stride: 1
                                stride: 2 dilation: 2 pad: 2 pad: 0 } }
    layer { name: "fp" type: "Pooling" bottom: "a" top: "fp"
            pooling_param { pool: 1 kernel_size: 2 stride: 2 round_mode: FLOOR } }
    """
    by = {lay["name"]: lay for lay in describe_net(parse_prototxt(text))}
    assert by["in"]["params"] == {"shapes": [(2, 3, 4, 4), (2, 3, 4, 4)]}
    assert by["bn"]["params"] == {"eps": 1e-3, "use_global_stats": True}
    assert by["bn"]["in_place"]
    assert by["sc"]["params"] == {"axis": 1, "num_axes": 1, "bias_term": True}
    assert by["sum"]["params"] == {"operation": "SUM", "coeff": [1.0, -0.5]}
    assert by["gp"]["params"] == {"pool": "AVE", "kernel": None, "stride": (1, 1),
                                  "pad": (0, 0), "global_pooling": True, "ceil_mode": True}
    assert by["fl"]["params"] == {"axis": 1, "end_axis": -1}
    assert by["dil"]["params"] == {"num_output": 2, "kernel": (3, 1), "stride": (1, 2),
                                   "pad": (2, 0), "dilation": (2, 2), "group": 1,
                                   "bias_term": True}
    assert by["fp"]["params"]["pool"] == "AVE" and by["fp"]["params"]["ceil_mode"] is False


def _layer(type_, param="", name="L"):
    return f'layer {{ name: "{name}" type: "{type_}" bottom: "x" top: "y" {param} }}'


@pytest.mark.parametrize("text, fragment", [
    (_layer("Deconvolution", name="up1"),
     "layer 'up1' (type Deconvolution): unsupported layer type 'Deconvolution'"),
    (_layer("Convolution", "convolution_param { kernel_size: 3 }"),
     "expected convolution_param.num_output, got nothing"),
    (_layer("Convolution", "convolution_param { num_output: 2 }"),
     "expected convolution_param.kernel_size or kernel_h/kernel_w, got nothing"),
    (_layer("Convolution", "convolution_param { num_output: 6 kernel_size: 3 group: 4 }"),
     "expected num_output divisible by group, got num_output=6, group=4"),
    (_layer("Convolution", 'convolution_param { num_output: "six" kernel_size: 3 }'),
     "expected convolution_param.num_output to be an integer, got 'six'"),
    (_layer("Convolution", "convolution_param { num_output: 2 kernel_size: 3 kernel_h: 3 }"),
     "expected either kernel_size or kernel_h/kernel_w, got both"),
    (_layer("Convolution", "convolution_param { num_output: 2 kernel_h: 3 }"),
     "expected convolution_param.kernel_w, got nothing"),
    (_layer("Convolution", "convolution_param { num_output: 2 kernel_size: [3, 3, 3] }"),
     "(2-D only)"),
    (_layer("Convolution", "convolution_param { num_output: 2 kernel_size: 3 stride: 0 }"),
     "expected stride >= 1, got (0, 0)"),
    (_layer("Pooling", "pooling_param { kernel_size: 3 pad: 3 }"),
     "expected pad < kernel, got pad=(3, 3), kernel=(3, 3)"),
    (_layer("Pooling", "pooling_param { pool: STOCHASTIC kernel_size: 3 }"),
     "expected pool MAX or AVE, got STOCHASTIC"),
    (_layer("Pooling", "pooling_param { pool: MIN kernel_size: 3 }"),
     "expected pooling_param.pool to be one of MAX, AVE, STOCHASTIC, got 'MIN'"),
    (_layer("Pooling", "pooling_param { global_pooling: true kernel_size: 2 }"),
     "expected no kernel size with global_pooling"),
    (_layer("LRN", "lrn_param { local_size: 4 }"),
     "expected an odd positive lrn_param.local_size, got 4"),
    (_layer("ReLU", "relu_param { negative_slope: true }"),
     "expected relu_param.negative_slope to be a number, got True"),
    (_layer("Dropout", "dropout_param { dropout_ratio: 1.5 }"),
     "expected dropout_ratio in [0, 1), got 1.5"),
    (_layer("InnerProduct", "inner_product_param { num_output: 0 }"),
     "expected num_output >= 1, got 0"),
    ('layer { name: "in" type: "Input" top: "a" }',
     "expected one input_param.shape per top"),
    ('layer { name: "in" type: "Input" top: "a" input_param { shape: 3 } }',
     "layer 'in' (type Input): expected input_param.shape to be a message, got 3"),
    ('layer { name: "in" type: "Input" top: "a" input_param { shape { dim: 2 dim: -1 } } }',
     "expected a non-empty shape of sizes >= 0, got (2, -1)"),
    ('layer { name: "r" type: "ReLU" top: "a" }',
     "layer 'r' (type ReLU): expected at least one bottom and one top, got bottoms=[], "
     "tops=['a']"),
    ('layer { name: "c" type: "Convolution" bottom: "a" top: "b" convolution_param: 3 }',
     "expected convolution_param to be a message, got 3"),
    ('layer { type: "ReLU" name: 3 }', "layer #0: name: expected a string, got 3"),
    ('layer { name: "a" }', "layer 'a': expected a 'type', got nothing"),
    ('layers { name: "a" type: "Convolution" }',
     "expected a V1 layer type such as CONVOLUTION, got 'Convolution'"),
    ('layer { name: "a" type: "ReLU" } layers { name: "b" type: RELU }',
     "expected either 'layer' or legacy 'layers' entries, got both"),
    ('input: "data" input_dim: 1 input_dim: 3', "expected 4 input_dim per input, got 2"),
    ('input_dim: 1 input_dim: 3 input_dim: 2 input_dim: 2', "got shapes without names"),
])
def test_describe_errors_name_the_layer(text, fragment):
    with pytest.raises(ValueError) as info:
        describe_net(parse_prototxt(text))
    assert str(info.value).startswith("describe_net: ")
    assert fragment in str(info.value)


# ------------------------------------------------------------------------------------------------
# Wire format
# ------------------------------------------------------------------------------------------------

def sample_layers():
    """A few layers whose blob values are not round in binary (exact float32 bits matter)."""
    rng = np.random.default_rng(7)
    return [
        {"name": "conv1", "type": "Convolution", "bottoms": ["data"], "tops": ["conv1"],
         "blobs": [(np.arange(2 * 3 * 2 * 2).reshape(2, 3, 2, 2) * 0.1 - 1).astype(np.float32),
                   np.array([0.1, -1e-30], np.float32)]},
        {"name": "relu1", "type": "ReLU", "bottoms": ["conv1"], "tops": ["conv1"], "blobs": []},
        {"name": "fc", "type": "InnerProduct", "bottoms": ["conv1"], "tops": ["fc"],
         "blobs": [rng.standard_normal((3, 5)).astype(np.float32),
                   np.array([np.pi, -0.0, 3.4e38], np.float32)]},
        {"name": "empty", "type": "Silence", "bottoms": ["fc"], "tops": ["s"],
         "blobs": [np.zeros((0,), np.float32)]},
    ]


def assert_same_layers(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert (g["name"], g["type"], g["bottoms"], g["tops"]) == (
            e["name"], e["type"], e["bottoms"], e["tops"])
        assert len(g["blobs"]) == len(e["blobs"])
        for gb, eb in zip(g["blobs"], e["blobs"]):
            assert gb.dtype == np.float32 and gb.shape == eb.shape
            assert gb.tobytes() == eb.tobytes()  # bit-exact, -0.0 included


@pytest.mark.parametrize("v1", [False, True])
@pytest.mark.parametrize("blob_format", ["packed", "unpacked", "double"])
def test_wire_round_trip_exact(v1, blob_format):
    layers = sample_layers()
    data = encode_caffemodel(layers, v1=v1, blob_format=blob_format)
    assert_same_layers(decode_caffemodel(data), layers)


def test_wire_legacy_4d_shapes_and_file(tmp_path):
    layers = sample_layers()[:3]
    path = tmp_path / "net.caffemodel"
    path.write_bytes(encode_caffemodel(layers, v1=True, blob_format="legacy4d"))
    decoded = read_caffemodel(path)
    assert [b.shape for b in decoded[2]["blobs"]] == [(1, 1, 3, 5), (1, 1, 1, 3)]
    np.testing.assert_array_equal(decoded[2]["blobs"][0][0, 0], layers[2]["blobs"][0])
    assert decoded[0]["blobs"][0].shape == (2, 3, 2, 2)
    blobs = blobs_by_name(decoded)
    assert list(blobs) == ["conv1", "fc"]
    assert blobs["fc"] is decoded[2]["blobs"]


def test_wire_v1_type_names_follow_caffe_enum():
    for number, (enum, name) in V1_LAYER_TYPES.items():
        data = encode_caffemodel([{"name": enum, "type": name}], v1=True)
        assert data[-1] == number  # the type varint is the last field written
        assert decode_caffemodel(data)[0]["type"] == name
    assert V1_LAYER_TYPES[4] == ("CONVOLUTION", "Convolution")
    assert V1_LAYER_TYPES[14] == ("INNER_PRODUCT", "InnerProduct")
    assert V1_LAYER_TYPES[21] == ("SOFTMAX_LOSS", "SoftmaxWithLoss")


# A hand-written, independent encoder for crafting odd files.
def varint(v):
    v &= (1 << 64) - 1
    out = b""
    while v >= 0x80:
        out += bytes([v & 0x7F | 0x80])
        v >>= 7
    return out + bytes([v])


def field(number, wire, payload):
    if wire == 2:
        return varint(number << 3 | 2) + varint(len(payload)) + payload
    return varint(number << 3 | wire) + payload


def test_wire_skips_unknown_fields_and_merges_chunks():
    shape = field(1, 0, varint(2)) + field(1, 2, varint(3))  # one dim unpacked, one packed
    data_a = field(5, 2, struct.pack("<2f", 1.5, -2.5))
    data_b = field(5, 5, struct.pack("<f", 7.0)) + field(5, 2, struct.pack("<3f", 8, 9, 10))
    blob = (field(6, 2, struct.pack("<f", 99.0))  # diff: skipped
            + data_a + field(7, 2, shape) + field(15, 1, b"\0" * 8) + data_b)
    layer = (field(1, 2, b"ip") + field(2, 2, b"InnerProduct") + field(10, 0, varint(1))
             + field(6, 2, field(1, 2, b"w")) + field(3, 2, b"x") + field(4, 2, b"y")
             + field(7, 2, blob) + field(20, 5, b"\0\0\0\0") + field(106, 2, b"\x08\x02"))
    net = field(1, 2, b"net") + field(3, 2, b"data") + field(100, 2, layer) + field(5, 0, b"\1")
    (got,) = decode_caffemodel(net)
    assert (got["name"], got["type"], got["bottoms"], got["tops"]) == (
        "ip", "InnerProduct", ["x"], ["y"])
    np.testing.assert_array_equal(got["blobs"][0], [[1.5, -2.5, 7.0], [8, 9, 10]])


def test_wire_matches_protobuf_runtime():
    pytest.importorskip("google.protobuf", reason="cross-check needs protobuf (comes with onnx)")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    f = descriptor_pb2.FileDescriptorProto(name="caffe_subset.proto", package="cs",
                                           syntax="proto2")
    t = descriptor_pb2.FieldDescriptorProto

    def message(name, *fields):
        m = f.message_type.add(name=name)
        for fname, number, label, type_, type_name, packed in fields:
            fd = m.field.add(name=fname, number=number, label=label, type=type_)
            if type_name:
                fd.type_name = ".cs." + type_name
            if packed:
                fd.options.packed = True

    rep, opt = t.LABEL_REPEATED, t.LABEL_OPTIONAL
    message("BlobShape", ("dim", 1, rep, t.TYPE_INT64, None, True))
    message("BlobProto", ("shape", 7, opt, t.TYPE_MESSAGE, "BlobShape", False),
            ("data", 5, rep, t.TYPE_FLOAT, None, True),
            ("double_data", 8, rep, t.TYPE_DOUBLE, None, True),
            ("num", 1, opt, t.TYPE_INT64, None, False))
    message("LayerParameter", ("name", 1, opt, t.TYPE_STRING, None, False),
            ("type", 2, opt, t.TYPE_STRING, None, False),
            ("bottom", 3, rep, t.TYPE_STRING, None, False),
            ("top", 4, rep, t.TYPE_STRING, None, False),
            ("blobs", 7, rep, t.TYPE_MESSAGE, "BlobProto", False))
    message("V1LayerParameter", ("name", 4, opt, t.TYPE_STRING, None, False),
            ("type", 5, opt, t.TYPE_INT32, None, False),
            ("blobs", 6, rep, t.TYPE_MESSAGE, "BlobProto", False))
    message("NetParameter", ("name", 1, opt, t.TYPE_STRING, None, False),
            ("layers", 2, rep, t.TYPE_MESSAGE, "V1LayerParameter", False),
            ("layer", 100, rep, t.TYPE_MESSAGE, "LayerParameter", False))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    Net = message_factory.GetMessageClass(pool.FindMessageTypeByName("cs.NetParameter"))

    # protobuf writes, we read
    net = Net(name="n")
    w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    lay = net.layer.add(name="fc", type="InnerProduct", bottom=["x"], top=["y"])
    lay.blobs.add(data=w.ravel().tolist()).shape.dim.extend([3, 4])
    lay.blobs.add(double_data=[0.5, 0.25]).shape.dim.append(2)
    old = net.layers.add(name="old", type=14)
    old.blobs.add(data=[1.0, 2.0]).shape.dim.append(2)
    got = decode_caffemodel(net.SerializeToString())
    assert [g["name"] for g in got] == ["old", "fc"]  # V1 field 2 is written before field 100
    assert got[0]["type"] == "InnerProduct"
    np.testing.assert_array_equal(got[0]["blobs"][0], [1.0, 2.0])
    assert got[1]["blobs"][0].tobytes() == w.tobytes()
    np.testing.assert_array_equal(got[1]["blobs"][1], np.array([0.5, 0.25], np.float32))
    no_shape = Net()
    no_shape.layer.add(name="bad").blobs.add(data=[1.0, 2.0])  # Caffe: shape () holds 1 value
    with pytest.raises(ValueError, match=r"expected 1 values for shape \(\), got 2"):
        decode_caffemodel(no_shape.SerializeToString())
    legacy = Net()
    legacy.layers.add(name="l", type=4).blobs.add(data=[3.0] * 6, num=6)  # as Caffe: (6, 0, 0, 0)
    with pytest.raises(ValueError, match=r"expected 0 values for shape \(6, 0, 0, 0\), got 6"):
        decode_caffemodel(legacy.SerializeToString())

    # we write, protobuf reads
    for v1 in (False, True):
        parsed = Net.FromString(encode_caffemodel(sample_layers()[:3], v1=v1))
        layers = parsed.layers if v1 else parsed.layer
        assert [x.name for x in layers] == ["conv1", "relu1", "fc"]
        blob = layers[2].blobs[0]
        assert list(blob.shape.dim) == [3, 5]
        assert np.array(blob.data, np.float32).tobytes() == sample_layers()[2]["blobs"][0].tobytes()
        if v1:
            assert [x.type for x in layers] == [4, 18, 14]
        else:
            assert list(layers[0].top) == ["conv1"] and layers[0].type == "Convolution"


def small_file():
    return encode_caffemodel(sample_layers()[:3])


def test_wire_every_truncation_is_a_value_error_or_a_layer_prefix():
    data = small_file()
    full = decode_caffemodel(data)
    ends = set()
    with deadline(20):
        for n in range(len(data)):
            try:
                got = decode_caffemodel(data[:n])
            except ValueError as e:
                assert str(e).startswith("caffemodel: byte "), e
            else:
                assert_same_layers(got, full[:len(got)])
                ends.add(n)
    layer_ends = {0}
    pos = 0
    for layer in sample_layers()[:3]:
        pos += len(encode_caffemodel([layer]))
        layer_ends.add(pos)
    assert ends == layer_ends - {len(data)}  # only cuts between layers decode


def test_wire_truncation_error_names_offset_and_field():
    shape = field(7, 2, field(1, 2, varint(2) + varint(3)))
    blob = shape + field(5, 2, np.arange(6, dtype="<f4").tobytes())
    layer = field(1, 2, b"conv") + field(7, 2, blob)
    (ok,) = decode_caffemodel(field(100, 2, layer))
    np.testing.assert_array_equal(ok["blobs"][0], [[0, 1, 2], [3, 4, 5]])
    cut = layer[:-5]  # the layer now ends inside its blob's data
    with pytest.raises(ValueError) as info:
        decode_caffemodel(field(100, 2, cut))
    assert str(info.value) == (
        f"caffemodel: byte 9: NetParameter.layer[0] field 7 (blobs): truncated: expected "
        f"{len(blob)} bytes, got {len(blob) - 5} left in the LayerParameter")
    with pytest.raises(ValueError) as info:  # the outer length still claims the whole layer
        decode_caffemodel(field(100, 2, layer)[:-5])
    assert str(info.value) == (
        f"caffemodel: byte 0: NetParameter field 100 (layer): truncated: expected {len(layer)} "
        f"bytes, got {len(layer) - 5} left in the NetParameter")


def test_wire_corrupted_bytes_raise_only_value_errors():
    data = bytearray(small_file())
    outcomes = {"ok": 0, "error": 0}
    with deadline(20):
        for i in range(len(data)):
            for value in (0x00, 0xFF, data[i] ^ 0x80, data[i] ^ 0x07):
                bad = bytearray(data)
                bad[i] = value
                try:
                    decode_caffemodel(bytes(bad))
                    outcomes["ok"] += 1
                except ValueError as e:
                    assert str(e).startswith("caffemodel: byte ")
                    outcomes["error"] += 1
    assert outcomes["error"] > 0 and outcomes["ok"] > 0


@settings(deadline=None, max_examples=300)
@given(st.binary(max_size=120))
def test_wire_random_bytes_raise_only_value_errors(data):
    try:
        layers = decode_caffemodel(data)
    except ValueError:
        return
    assert isinstance(layers, list)


def peak_bytes(fn):
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("name, data, fragment", [
    ("layer length", varint(100 << 3 | 2) + varint(1 << 62) + b"\x0a\x01a",
     "byte 0: NetParameter field 100 (layer): truncated: expected 4611686018427387904 bytes"),
    ("max varint length", varint(100 << 3 | 2) + varint((1 << 64) - 1) + b"x",
     "expected 18446744073709551615 bytes, got 1 left"),
    ("packed data length", field(100, 2, field(7, 2, varint(5 << 3 | 2) + varint(1 << 40))),
     "blobs[0] field 5 (data): truncated"),
    ("huge dims", field(100, 2, field(7, 2, field(7, 2, field(1, 2, varint(1 << 40)
                                                              + varint(1 << 40)))
                                         + field(5, 2, b"\0\0\0\0"))),
     "expected 1208925819614629174706176 values for shape (1099511627776, 1099511627776), got 1"),
])
def test_wire_huge_declared_sizes_raise_without_allocating(name, data, fragment):
    def decode():
        with pytest.raises(ValueError) as info:
            decode_caffemodel(data)
        assert fragment in str(info.value), str(info.value)
    assert peak_bytes(decode) < 1 << 20


@pytest.mark.parametrize("data, fragment", [
    (b"\x80" * 11, "expected a varint of at most 10 bytes"),
    (b"\x80\x80", "truncated varint (started at byte 0)"),
    (field(100, 3, b""), "expected wire type 0, 1, 2 or 5, got 3"),
    (field(0, 0, b"\x01"), "expected a field number in [1, 2^29), got 0"),
    (field(100, 0, b"\x01"), "NetParameter.layer[0]: expected wire type 2, got 0"),
    (field(100, 2, field(1, 0, b"\x01")), "NetParameter.layer[0].name: expected wire type 2"),
    (field(100, 2, field(1, 2, b"\xff\xfe")), "expected UTF-8 text"),
    (field(100, 2, field(7, 2, field(5, 2, b"\0\0\0"))),
     "blobs[0].data: expected a packed length divisible by 4, got 3"),
    (field(100, 2, field(7, 2, field(8, 2, b"\0" * 12))),
     "blobs[0].double_data: expected a packed length divisible by 8, got 12"),
    (field(100, 2, field(7, 2, field(7, 2, field(1, 0, varint(-2))))),
     "expected dims >= 0, got (-2,)"),
    (field(100, 2, field(7, 2, field(1, 0, varint(2)) + field(5, 2, b"\0" * 4))),
     "expected 0 values for shape (2, 0, 0, 0), got 1"),
    (field(2, 2, field(5, 0, varint(99))), "expected a V1LayerParameter.LayerType number, got 99"),
    (field(2, 2, field(1, 2, field(1, 2, b"conv"))), "got a V0 layer (pre-2014 format)"),
])
def test_wire_corrupt_structures_raise_clear_errors(data, fragment):
    with pytest.raises(ValueError) as info:
        decode_caffemodel(data)
    assert fragment in str(info.value)


def test_blobs_by_name_rejects_duplicates():
    layers = sample_layers()[:1] * 2
    with pytest.raises(ValueError, match="expected unique layer names, got 'conv1' twice"):
        blobs_by_name(layers)


def test_encode_rejects_bad_arguments():
    with pytest.raises(ValueError, match="expected blob_format"):
        encode_caffemodel([], blob_format="bf16")
    with pytest.raises(ValueError, match="expected a V1 layer type, got 'BatchNorm'"):
        encode_caffemodel([{"name": "bn", "type": "BatchNorm"}], v1=True)
    with pytest.raises(ValueError, match="at most 4 dims"):
        encode_caffemodel([{"name": "x", "type": "Scale", "blobs": [np.zeros((1,) * 5)]}],
                             blob_format="legacy4d")


# ------------------------------------------------------------------------------------------------
# The NumPy oracle (tests/caffe_reference.py) against direct formulas
# ------------------------------------------------------------------------------------------------

def naive_conv(x, w, b, stride, pad, dilation, group):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0],) * 2, (pad[1],) * 2))
    oh = (h + 2 * pad[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // group
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                for ci in range(cg):
                    for a in range(kh):
                        for d in range(kw):
                            out[:, oc, i, j] += w[oc, ci, a, d] * xp[
                                :, g * cg + ci, i * stride[0] + a * dilation[0],
                                j * stride[1] + d * dilation[1]]
    return out + b.reshape(1, -1, 1, 1)


@pytest.mark.parametrize("group, stride, pad, dilation", [
    (1, (1, 1), (0, 0), (1, 1)), (2, (2, 1), (1, 2), (1, 1)), (3, (1, 2), (2, 1), (2, 1)),
    (6, (2, 2), (1, 1), (1, 2)),
])
def test_reference_conv_matches_direct_loops(group, stride, pad, dilation):
    rng = np.random.default_rng(group)
    x = rng.standard_normal((2, 6, 7, 8))
    w = rng.standard_normal((6, 6 // group, 3, 2))
    b = rng.standard_normal(6)
    got = ref.conv2d(x, w, b, stride, pad, dilation, group)
    np.testing.assert_allclose(got, naive_conv(x, w, b, stride, pad, dilation, group),
                               rtol=1e-12, atol=1e-12)


def test_reference_grouped_conv_equals_block_diagonal_dense_conv():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 6, 6))
    w = rng.standard_normal((6, 2, 3, 3))  # group 2: 3 outputs per group, 2 inputs each
    dense = np.zeros((6, 4, 3, 3))
    dense[:3, :2], dense[3:, 2:] = w[:3], w[3:]
    args = ((1, 1), (1, 1), (1, 1))
    np.testing.assert_allclose(ref.conv2d(x, w, None, *args, 2),
                               ref.conv2d(x, dense, None, *args, 1), rtol=1e-12)


@pytest.mark.parametrize("size, kernel, stride, pad, ceil_mode, expected", [
    (227 // 4 - 1, 3, 2, 0, True, 27), (27, 3, 2, 0, True, 13), (13, 3, 2, 0, True, 6),
    (16, 3, 2, 0, True, 8), (16, 3, 2, 0, False, 7), (8, 3, 2, 0, True, 4),
    (6, 3, 2, 1, True, 4), (4, 2, 3, 1, True, 2), (4, 2, 3, 1, False, 2), (7, 2, 2, 0, True, 4),
])
def test_reference_pooled_size(size, kernel, stride, pad, ceil_mode, expected):
    assert ref.pooled_size(size, kernel, stride, pad, ceil_mode) == expected


def test_reference_pooling_clips_the_last_window_like_caffe():
    x = np.arange(36.0).reshape(1, 1, 6, 6)
    np.testing.assert_array_equal(ref.pool2d(x, "MAX", (3, 3), (2, 2), (0, 0))[0, 0],
                                  [[14, 16, 17], [26, 28, 29], [32, 34, 35]])
    # AVE with pad 1: border windows count the padding in the divisor, but the last window,
    # which hangs past the padded input, divides by its clipped size.
    got = ref.pool2d(np.ones((1, 1, 6, 6)), "AVE", (3, 3), (2, 2), (1, 1))[0, 0]
    edge = [4 / 9, 6 / 9, 6 / 9, 2 / 6]
    mid = [6 / 9, 1, 1, 3 / 6]
    last = [2 / 6, 3 / 6, 3 / 6, 1 / 4]
    np.testing.assert_allclose(got, [edge, mid, mid, last], rtol=1e-15)
    glob = ref.pool2d(x, "AVE", None, (1, 1), (0, 0), global_pooling=True)
    np.testing.assert_allclose(glob, [[[[17.5]]]])


def test_reference_lrn_matches_the_formula():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 7, 3, 4))
    n, alpha, beta, k = 5, 0.3, 0.75, 2.0
    expected = np.empty_like(x)
    for c in range(7):
        lo, hi = max(0, c - 2), min(7, c + 3)
        s = (x[:, lo:hi] ** 2).sum(axis=1)
        expected[:, c] = x[:, c] / (k + alpha / n * s) ** beta
    np.testing.assert_allclose(ref.lrn(x, n, alpha, beta, k), expected, rtol=1e-13)
    within = np.empty_like(x)
    padded = np.pad(x ** 2, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(3):
        for j in range(4):
            s = padded[:, :, i:i + 3, j:j + 3].sum(axis=(2, 3))
            within[:, :, i, j] = x[:, :, i, j] / (1 + alpha / 9 * s) ** beta
    np.testing.assert_allclose(ref.lrn(x, 3, alpha, beta, k, "WITHIN_CHANNEL"), within,
                               rtol=1e-13)


def test_reference_small_layers():
    x = np.arange(24.0).reshape(2, 3, 2, 2) - 10
    w = np.arange(12.0 * 2).reshape(2, 12)
    b = np.array([1.0, -1.0])
    expected = x.reshape(2, 12) @ w.T + b
    np.testing.assert_allclose(ref.inner_product(x, w, b), expected)
    np.testing.assert_allclose(ref.inner_product(x, w.reshape(1, 1, 2, 12), b), expected)
    np.testing.assert_allclose(ref.inner_product(x, w.T.copy(), b, transpose=True), expected)
    s = ref.softmax(np.array([[1.0, 2.0, 3.0]]), axis=1)
    np.testing.assert_allclose(s, np.exp([[1, 2, 3]]) / np.exp([1, 2, 3]).sum())
    mean, var, factor = np.array([1.0, 2, 3]), np.array([4.0, 1, 0.25]), 2.0
    gamma, beta = np.array([1.0, -1, 2]), np.array([0.5, 0, 1])
    layers = [
        {"name": "in", "type": "Input", "tops": ["x"], "bottoms": [], "params": {}},
        {"name": "bn", "type": "BatchNorm", "bottoms": ["x"], "tops": ["x"],
         "params": {"eps": 0.0, "use_global_stats": True}},
        {"name": "sc", "type": "Scale", "bottoms": ["x"], "tops": ["x"],
         "params": {"axis": 1, "num_axes": 1, "bias_term": True}},
        {"name": "d", "type": "Dropout", "bottoms": ["x"], "tops": ["d"],
         "params": {"dropout_ratio": 0.5}},
        {"name": "cat", "type": "Concat", "bottoms": ["x", "d"], "tops": ["c"],
         "params": {"axis": 1}},
        {"name": "e", "type": "Eltwise", "bottoms": ["x", "d"], "tops": ["e"],
         "params": {"operation": "SUM", "coeff": [1.0, -2.0]}},
        {"name": "fl", "type": "Flatten", "bottoms": ["c"], "tops": ["f"],
         "params": {"axis": 1, "end_axis": -1}},
        {"name": "r", "type": "ReLU", "bottoms": ["f"], "tops": ["r"],
         "params": {"negative_slope": 0.5}},
    ]
    blobs = {"bn": [mean * factor, var * factor, np.array([factor])], "sc": [gamma, beta]}
    out = ref.forward(layers, {"x": x}, blobs)
    norm = (x - mean.reshape(1, 3, 1, 1)) / np.sqrt(var.reshape(1, 3, 1, 1))
    y = norm * gamma.reshape(1, 3, 1, 1) + beta.reshape(1, 3, 1, 1)
    np.testing.assert_allclose(out["x"], y, rtol=1e-14)
    np.testing.assert_allclose(out["c"], np.concatenate([y, y], axis=1))
    np.testing.assert_allclose(out["e"], -y)
    flat = out["c"].reshape(2, 24)
    np.testing.assert_allclose(out["r"], np.where(flat > 0, flat, 0.5 * flat))


def small_alexnet_blobs(layers, rng):
    """Random float32 blobs, shaped as Caffe stores them, for the SMALL AlexNet."""
    fan_in = {"fc6": SMALL["c5"] * 2 * 2, "fc7": SMALL["f6"], "fc8": SMALL["f7"]}
    channels, blobs = {"data": 3}, {}
    for lay in layers[1:]:
        p, name = lay["params"], lay["name"]
        if lay["type"] == "Convolution":
            cin = channels[lay["bottoms"][0]]
            w = rng.standard_normal((p["num_output"], cin // p["group"]) + p["kernel"]) * 0.2
        elif lay["type"] == "InnerProduct":
            w = rng.standard_normal((p["num_output"], fan_in[name])) / np.sqrt(fan_in[name])
        else:
            channels[lay["tops"][0]] = channels[lay["bottoms"][0]]
            continue
        channels[lay["tops"][0]] = p["num_output"]
        b = rng.standard_normal(p["num_output"]) * 0.1
        blobs[name] = [w.astype(np.float32), b.astype(np.float32)]
    return blobs


def onnx_graph_of(layers, blobs, input_shape):
    """The same net as ONNX nodes (Caffe's in-place tops become fresh SSA names)."""
    from onnx import TensorProto, helper, numpy_helper
    nodes, inits, latest = [], [], {"data": "data"}
    for lay in layers[1:]:
        p, name, t = lay["params"], lay["name"], lay["type"]
        src = latest[lay["bottoms"][0]]
        if t in ("Convolution", "InnerProduct"):
            inits += [numpy_helper.from_array(blobs[name][0], name + "_w"),
                      numpy_helper.from_array(blobs[name][1], name + "_b")]
        if t == "Convolution":
            node = helper.make_node("Conv", [src, name + "_w", name + "_b"], [name],
                                    group=p["group"], strides=list(p["stride"]),
                                    pads=list(p["pad"] * 2), kernel_shape=list(p["kernel"]))
        elif t == "ReLU":
            node = helper.make_node("Relu", [src], [name])
        elif t == "LRN":
            node = helper.make_node("LRN", [src], [name], size=p["local_size"],
                                    alpha=p["alpha"], beta=p["beta"], bias=p["k"])
        elif t == "Pooling":
            node = helper.make_node("MaxPool", [src], [name], ceil_mode=1,
                                    kernel_shape=list(p["kernel"]), strides=list(p["stride"]))
        elif t == "InnerProduct":
            nodes.append(helper.make_node("Flatten", [src], [name + "_flat"]))
            node = helper.make_node("Gemm", [name + "_flat", name + "_w", name + "_b"], [name],
                                    transB=1)
        elif t == "Dropout":
            node = helper.make_node("Identity", [src], [name])
        else:
            node = helper.make_node("Softmax", [src], [name], axis=1)
        nodes.append(node)
        latest[lay["tops"][0]] = name
    return helper.make_graph(
        nodes, "alexnet_small",
        [helper.make_tensor_value_info("data", TensorProto.FLOAT, list(input_shape))],
        [helper.make_tensor_value_info(latest[top], TensorProto.FLOAT, [1, SMALL["f8"]])
         for top in ("fc8", "prob")], inits)


def test_reference_small_alexnet_through_caffemodel_against_onnxruntime():
    """The oracle on a small AlexNet whose weights went through a caffemodel, against ORT."""
    onnx = pytest.importorskip("onnx", reason="cross-check needs onnx (pip install onnx)")
    ort = pytest.importorskip("onnxruntime",
                              reason="cross-check needs onnxruntime (pip install onnxruntime)")
    layers = describe_net(parse_prototxt(alexnet(LEGACY_INPUT_SHAPE, SMALL)))
    rng = np.random.default_rng(3)
    sent = small_alexnet_blobs(layers, rng)
    data = encode_caffemodel([{"name": n, "type": "X", "blobs": b} for n, b in sent.items()])
    blobs = blobs_by_name(decode_caffemodel(data))
    assert {n: [b.tobytes() for b in v] for n, v in blobs.items()} == {
        n: [b.tobytes() for b in v] for n, v in sent.items()}

    x = rng.standard_normal((1, 3, SMALL["size"], SMALL["size"])).astype(np.float32)
    out = ref.forward(layers, {"data": x}, blobs)
    assert out["conv1"].shape == (1, 6, 16, 16)
    assert out["pool1"].shape == (1, 6, 8, 8)   # ceil((16 - 3) / 2) + 1 = 8 (floor: 7)
    assert out["pool2"].shape == (1, 8, 4, 4)   # 8 -> 4 (floor: 3)
    assert out["pool5"].shape == (1, 4, 2, 2)   # 4 -> 2 (floor: 1)
    assert out["prob"].shape == (1, 5)
    np.testing.assert_allclose(out["prob"].sum(), 1.0, rtol=1e-12)

    model = onnx.helper.make_model(onnx_graph_of(layers, blobs, x.shape),
                                   opset_imports=[onnx.helper.make_opsetid("", 13)],
                                   ir_version=ONNX_IR_VERSION)
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    got = dict(zip(["fc8", "prob"], session.run(["fc8", "prob"], {"data": x})))
    np.testing.assert_allclose(got["fc8"], out["fc8"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got["prob"], out["prob"], rtol=1e-4, atol=1e-6)
