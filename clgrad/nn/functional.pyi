# The stub of clgrad.nn.functional for static readers (type checkers, editors),
# generated from the running module by tools/gen_stubs.py: do not edit. After a
# change of the op table (clgrad/ops/registry.py) or of the face, run
# `python tools/gen_stubs.py`.
from clgrad.ops.elementwise import tanh as tanh
from clgrad.ops.elementwise import sigmoid as sigmoid
from clgrad.ops.reduce import normalize as normalize
from clgrad.ops.loss import softmax as softmax
from clgrad.ops.loss import log_softmax as log_softmax
from clgrad.ops.matmul import linear as linear
from clgrad.ops.composite import bilinear as bilinear
from clgrad.ops.views import flatten as flatten
from clgrad.ops.conv.fold import unfold as unfold
from clgrad.ops.scatters import embedding as embedding
from clgrad.ops.index import one_hot as one_hot
from clgrad.ops.conv.transpose import conv1d as conv1d
from clgrad.ops.conv.transpose import conv_transpose1d as conv_transpose1d
from clgrad.ops.conv.transpose import conv_transpose2d as conv_transpose2d
from clgrad.ops.conv.fold import fold as fold
from clgrad.ops.pool import max_pool1d as max_pool1d
from clgrad.ops.pool import max_pool2d as max_pool2d
from clgrad.ops.pool import avg_pool1d as avg_pool1d
from clgrad.ops.pool import avg_pool2d as avg_pool2d
from clgrad.ops.pool import adaptive_avg_pool1d as adaptive_avg_pool1d
from clgrad.ops.pool import adaptive_avg_pool2d as adaptive_avg_pool2d
from clgrad.ops.pool import adaptive_max_pool1d as adaptive_max_pool1d
from clgrad.ops.pool import adaptive_max_pool2d as adaptive_max_pool2d
from clgrad.ops.pool import max_pool1d_with_indices as max_pool1d_with_indices
from clgrad.ops.pool import max_pool2d_with_indices as max_pool2d_with_indices
from clgrad.ops.pool import adaptive_max_pool1d_with_indices as adaptive_max_pool1d_with_indices
from clgrad.ops.pool import adaptive_max_pool2d_with_indices as adaptive_max_pool2d_with_indices
from clgrad.ops.pool import max_unpool1d as max_unpool1d
from clgrad.ops.pool import max_unpool2d as max_unpool2d
from clgrad.ops.upsample import interpolate as interpolate
from clgrad.ops.upsample import interpolate as upsample
from clgrad.ops.upsample import upsample_nearest as upsample_nearest
from clgrad.ops.upsample import upsample_bilinear as upsample_bilinear
from clgrad.ops.three_d import conv3d as conv3d
from clgrad.ops.three_d import conv_transpose3d as conv_transpose3d
from clgrad.ops.three_d import max_pool3d as max_pool3d
from clgrad.ops.three_d import max_pool3d_with_indices as max_pool3d_with_indices
from clgrad.ops.three_d import avg_pool3d as avg_pool3d
from clgrad.ops.three_d import adaptive_avg_pool3d as adaptive_avg_pool3d
from clgrad.ops.three_d import adaptive_max_pool3d as adaptive_max_pool3d
from clgrad.ops.three_d import adaptive_max_pool3d_with_indices as adaptive_max_pool3d_with_indices
from clgrad.ops.three_d import dropout3d as dropout3d
from clgrad.ops.grid_sample import grid_sample as grid_sample
from clgrad.ops.grid_sample import affine_grid as affine_grid
from clgrad.ops.norm import batch_norm as batch_norm
from clgrad.ops.norm import layer_norm as layer_norm
from clgrad.ops.norm import rms_norm as rms_norm
from clgrad.ops.norm import group_norm as group_norm
from clgrad.ops.norm import instance_norm as instance_norm
from clgrad.ops.norm import local_response_norm as local_response_norm
from clgrad.ops.activation import relu6 as relu6
from clgrad.ops.activation import leaky_relu as leaky_relu
from clgrad.ops.activation import hardtanh as hardtanh
from clgrad.ops.activation import gelu as gelu
from clgrad.ops.activation import silu as silu
from clgrad.ops.activation import elu as elu
from clgrad.ops.activation import elu_ as elu_
from clgrad.ops.activation import leaky_relu_ as leaky_relu_
from clgrad.ops.activation import hardtanh_ as hardtanh_
from clgrad.ops.activation import hardswish as hardswish
from clgrad.ops.activation import hardsigmoid as hardsigmoid
from clgrad.ops.activation import softplus as softplus
from clgrad.ops.activation import mish as mish
from clgrad.ops.activation import prelu as prelu
from clgrad.ops.activation import logsigmoid as logsigmoid
from clgrad.ops.activation import selu as selu
from clgrad.ops.activation import selu_ as selu_
from clgrad.ops.activation import celu as celu
from clgrad.ops.activation import celu_ as celu_
from clgrad.ops.activation import softsign as softsign
from clgrad.ops.activation import tanhshrink as tanhshrink
from clgrad.ops.activation import softshrink as softshrink
from clgrad.ops.activation import hardshrink as hardshrink
from clgrad.ops.activation import threshold as threshold
from clgrad.ops.activation import threshold_ as threshold_
from clgrad.ops.activation import rrelu as rrelu
from clgrad.ops.activation import rrelu_ as rrelu_
from clgrad.ops.activation import glu as glu
from clgrad.ops.activation import softmin as softmin
from clgrad.ops.activation import gumbel_softmax as gumbel_softmax
from clgrad.ops.attention import scaled_dot_product_attention as scaled_dot_product_attention
from clgrad.ops.dropout import dropout as dropout
from clgrad.ops.dropout import dropout1d as dropout1d
from clgrad.ops.dropout import dropout2d as dropout2d
from clgrad.ops.padding import pad as pad
from clgrad.ops.shuffle import pixel_shuffle as pixel_shuffle
from clgrad.ops.shuffle import pixel_unshuffle as pixel_unshuffle
from clgrad.ops.shuffle import channel_shuffle as channel_shuffle
from clgrad.ops.shuffle import channel_shuffle as native_channel_shuffle
from clgrad.ops.loss import cross_entropy as cross_entropy
from clgrad.ops.loss import nll_loss as nll_loss
from clgrad.ops.loss import mse_loss as mse_loss
from clgrad.ops.loss import l1_loss as l1_loss
from clgrad.ops.loss import smooth_l1_loss as smooth_l1_loss
from clgrad.ops.loss import huber_loss as huber_loss
from clgrad.ops.loss import binary_cross_entropy as binary_cross_entropy
from clgrad.ops.loss import binary_cross_entropy_with_logits as binary_cross_entropy_with_logits
from clgrad.ops.loss import kl_div as kl_div
from clgrad.ops.loss import margin_ranking_loss as margin_ranking_loss
from clgrad.ops.loss import hinge_embedding_loss as hinge_embedding_loss
from clgrad.ops.loss import soft_margin_loss as soft_margin_loss
from clgrad.ops.loss import multilabel_soft_margin_loss as multilabel_soft_margin_loss
from clgrad.ops.loss import cosine_embedding_loss as cosine_embedding_loss
from clgrad.ops.loss import triplet_margin_loss as triplet_margin_loss
from clgrad.ops.loss import poisson_nll_loss as poisson_nll_loss
from clgrad.ops.loss import gaussian_nll_loss as gaussian_nll_loss
from clgrad.ops.loss import multi_margin_loss as multi_margin_loss
from clgrad.ops.ctc_loss import ctc_loss as ctc_loss
from clgrad.ops.loss import cosine_similarity as cosine_similarity
from clgrad.ops.loss import pairwise_distance as pairwise_distance
from clgrad.ops.dropout import alpha_dropout as alpha_dropout
from clgrad.ops.dropout import feature_alpha_dropout as feature_alpha_dropout
from clgrad.ops.pool import lp_pool1d as lp_pool1d
from clgrad.ops.pool import lp_pool2d as lp_pool2d
from clgrad.ops.products import pdist as pdist
from clgrad.ops.loss import multilabel_margin_loss as multilabel_margin_loss
from clgrad.ops.loss import triplet_margin_with_distance_loss as triplet_margin_with_distance_loss
from clgrad.ops.scatters import embedding_bag as embedding_bag
from clgrad.tensor import Tensor as Tensor

def relu(input: Tensor, inplace: bool = ...): ...
def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = ...,
    stride=...,
    padding=...,
    dilation=...,
    groups=...,
): ...
def relu_(input: Tensor, *args, **kwargs) -> Tensor: ...

__all__ = [
    "tanh", "sigmoid", "relu", "normalize", "softmax", "log_softmax", "linear", "bilinear",
    "flatten", "unfold", "embedding", "one_hot", "conv1d", "conv2d", "conv_transpose1d",
    "conv_transpose2d", "fold", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "max_pool1d_with_indices", "max_pool2d_with_indices", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "max_unpool1d", "max_unpool2d", "interpolate", "upsample",
    "upsample_nearest", "upsample_bilinear", "conv3d", "conv_transpose3d", "max_pool3d",
    "max_pool3d_with_indices", "avg_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices", "dropout3d", "grid_sample", "affine_grid", "batch_norm",
    "layer_norm", "rms_norm", "group_norm", "instance_norm", "local_response_norm", "relu6",
    "leaky_relu", "hardtanh", "gelu", "silu", "elu", "elu_", "leaky_relu_", "hardtanh_",
    "hardswish", "hardsigmoid", "softplus", "mish", "prelu", "logsigmoid", "selu", "selu_", "celu",
    "celu_", "softsign", "tanhshrink", "softshrink", "hardshrink", "threshold", "threshold_",
    "rrelu", "rrelu_", "glu", "softmin", "gumbel_softmax", "scaled_dot_product_attention",
    "dropout", "dropout1d", "dropout2d", "pad", "pixel_shuffle", "pixel_unshuffle",
    "channel_shuffle", "native_channel_shuffle", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "kl_div", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
    "multilabel_soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss",
    "poisson_nll_loss", "gaussian_nll_loss", "multi_margin_loss", "ctc_loss", "cosine_similarity",
    "pairwise_distance", "alpha_dropout", "feature_alpha_dropout", "lp_pool1d", "lp_pool2d",
    "pdist", "multilabel_margin_loss", "triplet_margin_with_distance_loss", "embedding_bag",
    "relu_",
]
