"""PyTorch's ``torch.nn.functional`` names over clgrad's ops (signatures and semantics as
PyTorch's). Each name is the op itself, or a thin wrapper where PyTorch's signature differs
(``inplace=``); the ops live in clgrad/ops/<family>.py beside their backward.

Layout: one import block per op family, then ``__all__``, and last the argument check (a
non-Tensor where a Tensor is required raises PyTorch's TypeError). To add a name: import it in
its family's block and list it in ``__all__`` (``tests/test_faces.py`` checks both).
"""
from __future__ import annotations

from clgrad.ops import elementwise as _ew
from clgrad.ops import inplace as _ip
from clgrad.tensor import Tensor

# -- conv -------------------------------------------------------------------------------------
from clgrad.ops.conv_transpose import conv1d, conv_transpose1d, conv_transpose2d
from clgrad.ops.matmul import linear

# -- pool and resampling ----------------------------------------------------------------------
from clgrad.ops.pool import (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_max_pool1d,
                             adaptive_max_pool2d, avg_pool1d, avg_pool2d, max_pool1d,
                             max_pool2d)
from clgrad.ops.upsample import interpolate
from clgrad.ops.grid_sample import affine_grid, grid_sample

# -- norm -------------------------------------------------------------------------------------
from clgrad.ops.norm import (batch_norm, group_norm, instance_norm, layer_norm,
                             local_response_norm)
from clgrad.ops.reduce import normalize

# -- activation -------------------------------------------------------------------------------
from clgrad.ops.activation import (elu, gelu, hardsigmoid, hardswish, hardtanh, leaky_relu,
                                   logsigmoid, mish, prelu, relu6, silu, softplus)
from clgrad.ops.elementwise import sigmoid, tanh
from clgrad.ops.loss import log_softmax, softmax

# -- attention --------------------------------------------------------------------------------
from clgrad.ops.attention import scaled_dot_product_attention

# -- dropout, padding, shuffles, views --------------------------------------------------------
from clgrad.ops.dropout import dropout, dropout1d, dropout2d
from clgrad.ops.padding import pad
from clgrad.ops.views import flatten
from clgrad.ops.shuffle import channel_shuffle, pixel_shuffle, pixel_unshuffle

# -- loss -------------------------------------------------------------------------------------
from clgrad.ops.loss import (binary_cross_entropy, binary_cross_entropy_with_logits,
                             cross_entropy, huber_loss, kl_div, l1_loss, mse_loss, nll_loss,
                             smooth_l1_loss)

# -- index ------------------------------------------------------------------------------------
from clgrad.ops.index import embedding, one_hot

# -- the argument check, applied last (after __all__, below) ----------------------------------
from clgrad.ops._util import check_tensor_args as _check_tensor_args
from clgrad.errors import missing_attribute as _missing_attribute


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups=1):
    """2-D convolution (see clgrad.ops.conv.conv2d)."""
    from clgrad.ops.conv import conv2d as _conv2d
    return _conv2d(input, weight, bias, stride, padding, dilation, groups)


def relu(input: Tensor, inplace: bool = False):
    """max(x, 0) elementwise; the gradient at 0 is 0."""
    if inplace:
        out = _ip.output_inplace("relu_", input, _ew.relu)  # one launch into input
        return out if out is not None else _ip.inplace("relu_", input, _ew.relu)
    return _ew.relu(input)


upsample = interpolate  # PyTorch's deprecated alias
native_channel_shuffle = channel_shuffle

__all__ = [
    # conv
    "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "linear",
    # pool and resampling
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "interpolate",
    "upsample", "grid_sample", "affine_grid",
    # norm
    "batch_norm", "layer_norm", "group_norm", "instance_norm", "local_response_norm",
    "normalize",
    # activation
    "relu", "relu6", "leaky_relu", "hardtanh", "gelu", "silu", "elu", "hardswish",
    "hardsigmoid", "softplus", "mish", "prelu", "sigmoid", "tanh", "softmax", "log_softmax",
    "logsigmoid",
    # attention
    "scaled_dot_product_attention",
    # dropout, padding, shuffles, views
    "dropout", "dropout1d", "dropout2d", "pad", "flatten", "pixel_shuffle", "pixel_unshuffle",
    "channel_shuffle", "native_channel_shuffle",
    # loss
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    # index
    "embedding", "one_hot",
]


def __getattr__(name):
    """A name not in this module: PyTorch's AttributeError, naming it as not implemented."""
    raise _missing_attribute(__name__, name)


# -- last: non-Tensor arguments of every public op raise PyTorch's TypeError naming them -------
_check_tensor_args(globals(), __name__)
