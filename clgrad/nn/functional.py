"""PyTorch's ``torch.nn.functional`` names over clgrad's ops (signatures and semantics as
PyTorch's). Each name is the op itself, or a thin wrapper where PyTorch's signature differs
(``inplace=``); the ops live in clgrad/ops/<family>.py beside their backward.
"""
from __future__ import annotations

from clgrad.ops import elementwise as _ew
from clgrad.ops import inplace as _ip
from clgrad.ops._util import check_tensor_args as _check_tensor_args
from clgrad.ops.activation import dropout, leaky_relu, pad
from clgrad.ops.loss import cross_entropy, log_softmax, mse_loss, nll_loss, softmax
from clgrad.ops.matmul import linear
from clgrad.ops.norm import batch_norm, local_response_norm
from clgrad.ops.pool import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from clgrad.ops.views import flatten
from clgrad.tensor import Tensor

__all__ = ["conv2d", "linear", "relu", "leaky_relu", "max_pool2d", "avg_pool2d",
           "adaptive_avg_pool2d", "batch_norm", "local_response_norm", "dropout", "softmax",
           "log_softmax", "cross_entropy", "nll_loss", "mse_loss", "pad", "flatten"]


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups=1):
    """2-D convolution (see clgrad.ops.conv.conv2d)."""
    from clgrad.ops.conv import conv2d as _conv2d
    return _conv2d(input, weight, bias, stride, padding, dilation, groups)


def relu(input: Tensor, inplace: bool = False):
    """max(x, 0) elementwise; the gradient at 0 is 0."""
    if inplace:
        return _ip.inplace("relu_", input, _ew.relu)
    return _ew.relu(input)


# -- CNN layer set (issue 13): activations --------------------------------------------------
from clgrad.ops.activation import (elu, gelu, hardsigmoid, hardswish, hardtanh,  # noqa: E402
                                   mish, prelu, relu6, silu, softplus)
from clgrad.ops.elementwise import sigmoid, tanh  # noqa: E402

__all__ += ["relu6", "hardtanh", "gelu", "silu", "elu", "hardswish", "hardsigmoid", "softplus",
            "mish", "prelu", "sigmoid", "tanh"]

# -- CNN layer set (issue 13): normalisation ------------------------------------------------
from clgrad.ops.norm import group_norm, instance_norm, layer_norm  # noqa: E402

__all__ += ["layer_norm", "group_norm", "instance_norm"]

# -- CNN layer set (issue 13): losses, one_hot, normalize, embedding ------------------------
from clgrad.ops.index import embedding, one_hot  # noqa: E402
from clgrad.ops.loss import (binary_cross_entropy,  # noqa: E402
                             binary_cross_entropy_with_logits, huber_loss, kl_div, l1_loss,
                             smooth_l1_loss)
from clgrad.ops.reduce import normalize  # noqa: E402

__all__ += ["l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
            "binary_cross_entropy_with_logits", "kl_div", "one_hot", "normalize", "embedding"]

# -- CNN layer set (issue 13): channel dropout ----------------------------------------------
from clgrad.ops.activation import dropout1d, dropout2d  # noqa: E402

__all__ += ["dropout1d", "dropout2d"]

# -- CNN layer set (issue 13): 1-D and transposed convolutions ------------------------------
from clgrad.ops.conv_transpose import conv1d, conv_transpose1d, conv_transpose2d  # noqa: E402

__all__ += ["conv1d", "conv_transpose1d", "conv_transpose2d"]

# -- CNN layer set (issue 13): 1-D and adaptive max pooling ---------------------------------
from clgrad.ops.pool import (adaptive_avg_pool1d, adaptive_max_pool1d,  # noqa: E402
                             adaptive_max_pool2d, avg_pool1d, max_pool1d)

__all__ += ["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
            "adaptive_max_pool2d"]

# -- CNN layer set (issue 13): resampling ----------------------------------------------------
from clgrad.ops.upsample import interpolate  # noqa: E402

upsample = interpolate  # PyTorch's deprecated alias
__all__ += ["interpolate", "upsample"]

_check_tensor_args(globals(), __name__)  # non-Tensor arguments: TypeError naming them

# -- h4 (issue 22): logsigmoid, pixel/channel shuffle ----------------------------------------
from clgrad.ops.activation import logsigmoid  # noqa: E402
from clgrad.ops.shuffle import channel_shuffle, pixel_shuffle, pixel_unshuffle  # noqa: E402

from clgrad.ops.attention import scaled_dot_product_attention  # noqa: E402

_h4 = {"logsigmoid": logsigmoid, "pixel_shuffle": pixel_shuffle,
       "pixel_unshuffle": pixel_unshuffle, "channel_shuffle": channel_shuffle,
       "scaled_dot_product_attention": scaled_dot_product_attention}
_check_tensor_args(_h4, __name__)  # non-Tensor arguments: TypeError naming them
globals().update(_h4)
native_channel_shuffle = channel_shuffle
__all__ += ["logsigmoid", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
            "native_channel_shuffle", "scaled_dot_product_attention"]
