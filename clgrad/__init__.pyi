# The stub of clgrad for static readers (type checkers, editors),
# generated from the running module by tools/gen_stubs.py: do not edit. After a
# change of the op table (clgrad/ops/registry.py) or of the face, run
# `python tools/gen_stubs.py`.
import builtins
from clgrad._legacy import _LegacyType

from clgrad.tensor import Tensor as Tensor
from clgrad.tensor import Size as Size
from clgrad.dtypes import DType as dtype
from clgrad._device import device as device
from clgrad.runtime.device import Device as Device
from clgrad._generator import Generator as Generator
from clgrad.errors import DeviceError as DeviceError
from clgrad.runtime.device import OutOfMemoryError as OutOfMemoryError
from clgrad.dtypes import finfo as finfo
from clgrad.dtypes import iinfo as iinfo
from clgrad.dtypes import get_default_dtype as get_default_dtype
from clgrad.dtypes import set_default_dtype as set_default_dtype
from clgrad.dtypes import promote_types as promote_types
from clgrad.dtypes import can_cast as can_cast
from clgrad.ops.elementwise import result_type as result_type
from clgrad._legacy import set_default_tensor_type as set_default_tensor_type
from clgrad.runtime.discovery import devices as devices
from clgrad.runtime.discovery import default_device as default_device
from clgrad.runtime.discovery import set_default_device as set_default_device
from clgrad._device import get_default_device as get_default_device
from clgrad.runtime.discovery import synchronize as synchronize
from clgrad.tensor import memory_allocated as memory_allocated
from clgrad._memory_format import memory_format as memory_format
from clgrad.creation import manual_seed as manual_seed
from clgrad.creation import initial_seed as initial_seed
from clgrad.creation import seed as seed
from clgrad import _rng as random
from clgrad._rng import get_rng_state as get_rng_state
from clgrad._rng import set_rng_state as set_rng_state
from clgrad.autograd.grad_mode import no_grad as no_grad
from clgrad.autograd.grad_mode import enable_grad as enable_grad
from clgrad.autograd.grad_mode import set_grad_enabled as set_grad_enabled
from clgrad.autograd.grad_mode import is_grad_enabled as is_grad_enabled
from clgrad.autograd.grad_mode import inference_mode as inference_mode
from clgrad.autograd.anomaly_mode import is_anomaly_enabled as is_anomaly_enabled
from clgrad.autograd.anomaly_mode import (
    is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled,
)
from clgrad.ops.composite import (
    are_deterministic_algorithms_enabled as are_deterministic_algorithms_enabled,
)
from clgrad.ops.composite import get_float32_matmul_precision as get_float32_matmul_precision
from clgrad.ops.composite import get_num_threads as get_num_threads
from clgrad.ops.composite import set_float32_matmul_precision as set_float32_matmul_precision
from clgrad.ops.composite import set_num_threads as set_num_threads
from clgrad.ops.composite import use_deterministic_algorithms as use_deterministic_algorithms
from clgrad._tensor_str import set_printoptions as set_printoptions
from clgrad._tensor_str import get_printoptions as get_printoptions
from clgrad._tensor_str import printoptions as printoptions
from clgrad.io.serialization import save as save
from clgrad.io.serialization import load as load
from clgrad import autograd as autograd
from clgrad import nn as nn
from clgrad import optim as optim
from clgrad import io as io
from clgrad import linalg as linalg
from clgrad import special as special
from clgrad import distributed as distributed
from clgrad import cuda as cuda
from clgrad import accelerator as accelerator
from clgrad import backends as backends
from clgrad import utils as utils
from clgrad import serialization as serialization
from clgrad import distributions as distributions
from clgrad import fx as fx
from clgrad import jit as jit
from clgrad import amp as amp
from clgrad import capture as capture
from clgrad import multiprocessing as multiprocessing
from clgrad.amp import autocast as autocast
from clgrad._compile import compile as compile
from clgrad.amp import is_autocast_enabled as is_autocast_enabled
from clgrad.amp import get_autocast_dtype as get_autocast_dtype
from clgrad import func as func
from clgrad.func._vmap import vmap as vmap
from clgrad.creation import tensor as tensor
from clgrad.creation import as_tensor as as_tensor
from clgrad.creation import from_numpy as from_numpy
from clgrad.creation import empty as empty
from clgrad.creation import zeros as zeros
from clgrad.creation import ones as ones
from clgrad.creation import full as full
from clgrad.creation import arange as arange
from clgrad.creation import linspace as linspace
from clgrad.creation import logspace as logspace
from clgrad.creation import eye as eye
from clgrad.creation import rand as rand
from clgrad.creation import randn as randn
from clgrad.creation import randint as randint
from clgrad.creation import randperm as randperm
from clgrad.creation import zeros_like as zeros_like
from clgrad.creation import ones_like as ones_like
from clgrad.creation import full_like as full_like
from clgrad.creation import empty_like as empty_like
from clgrad.creation import rand_like as rand_like
from clgrad.creation import randn_like as randn_like
from clgrad.ops.shaping import tril_indices as tril_indices
from clgrad.ops.shaping import triu_indices as triu_indices
from clgrad.ops.random import normal as normal
from clgrad.ops.random import bernoulli as bernoulli
from clgrad.ops.random import multinomial as multinomial
from clgrad.ops.elementwise import add as add
from clgrad.ops.elementwise import sub as sub
from clgrad.ops.elementwise import mul as mul
from clgrad.ops.elementwise import div as div
from clgrad.ops.elementwise import divide as divide
from clgrad.ops.elementwise import true_divide as true_divide
from clgrad.ops.elementwise import floor_divide as floor_divide
from clgrad.ops.elementwise import remainder as remainder
from clgrad.ops.elementwise import fmod as fmod
from clgrad.ops.elementwise import pow as pow
from clgrad.ops.elementwise import maximum as maximum
from clgrad.ops.elementwise import minimum as minimum
from clgrad.ops.elementwise import atan2 as atan2
from clgrad.ops.elementwise import atan2 as arctan2
from clgrad.ops.composite import addcmul as addcmul
from clgrad.ops.composite import addcdiv as addcdiv
from clgrad.ops.composite import lerp as lerp
from clgrad.ops.special import hypot as hypot
from clgrad.ops.special import logaddexp as logaddexp
from clgrad.ops.special import logaddexp2 as logaddexp2
from clgrad.ops.special import xlogy as xlogy
from clgrad.ops.special import copysign as copysign
from clgrad.ops.special import float_power as float_power
from clgrad.ops.elementwise import neg as neg
from clgrad.ops.elementwise import abs as abs
from clgrad.ops.elementwise import exp as exp
from clgrad.ops.elementwise import log as log
from clgrad.ops.elementwise import sqrt as sqrt
from clgrad.ops.elementwise import rsqrt as rsqrt
from clgrad.ops.elementwise import tanh as tanh
from clgrad.ops.elementwise import sigmoid as sigmoid
from clgrad.ops.elementwise import relu as relu
from clgrad.ops.elementwise import sin as sin
from clgrad.ops.elementwise import cos as cos
from clgrad.ops.elementwise import square as square
from clgrad.ops.elementwise import reciprocal as reciprocal
from clgrad.ops.elementwise import sign as sign
from clgrad.ops.elementwise import floor as floor
from clgrad.ops.elementwise import ceil as ceil
from clgrad.ops.elementwise import round as round
from clgrad.ops.elementwise import log1p as log1p
from clgrad.ops.elementwise import expm1 as expm1
from clgrad.ops.composite import erf as erf
from clgrad.ops.elementwise import clamp as clamp
from clgrad.ops.elementwise import clamp as clip
from clgrad.ops.special import clamp_min as clamp_min
from clgrad.ops.special import clamp_max as clamp_max
from clgrad.ops.erf import erfinv as erfinv
from clgrad.ops.erf import erfc as erfc
from clgrad.ops.gamma import lgamma as lgamma
from clgrad.ops.gamma import digamma as digamma
from clgrad.ops.special import trunc as trunc
from clgrad.ops.special import trunc as fix
from clgrad.ops.special import frac as frac
from clgrad.ops.special import deg2rad as deg2rad
from clgrad.ops.special import rad2deg as rad2deg
from clgrad.ops.gamma import polygamma as polygamma
from clgrad.ops.gamma import mvlgamma as mvlgamma
from clgrad.ops.gamma import igamma as igamma
from clgrad.ops.gamma import igammac as igammac
from clgrad.ops.numeric import nan_to_num as nan_to_num
from clgrad.ops.math_ops import tan as tan
from clgrad.ops.math_ops import asin as asin
from clgrad.ops.math_ops import asin as arcsin
from clgrad.ops.math_ops import acos as acos
from clgrad.ops.math_ops import acos as arccos
from clgrad.ops.math_ops import atan as atan
from clgrad.ops.math_ops import atan as arctan
from clgrad.ops.math_ops import sinh as sinh
from clgrad.ops.math_ops import cosh as cosh
from clgrad.ops.math_ops import asinh as asinh
from clgrad.ops.math_ops import asinh as arcsinh
from clgrad.ops.math_ops import acosh as acosh
from clgrad.ops.math_ops import acosh as arccosh
from clgrad.ops.math_ops import atanh as atanh
from clgrad.ops.math_ops import atanh as arctanh
from clgrad.ops.math_ops import log2 as log2
from clgrad.ops.math_ops import log10 as log10
from clgrad.ops.math_ops import exp2 as exp2
from clgrad.ops.math_ops import sinc as sinc
from clgrad.ops.math_ops import logit as logit
from clgrad.ops.math_ops import i0 as i0
from clgrad.ops.math_ops import positive as positive
from clgrad.ops.math_ops import fmax as fmax
from clgrad.ops.math_ops import fmin as fmin
from clgrad.ops.math_ops import heaviside as heaviside
from clgrad.ops.math_ops import ldexp as ldexp
from clgrad.ops.math_ops import gcd as gcd
from clgrad.ops.math_ops import lcm as lcm
from clgrad.ops.math_ops import nextafter as nextafter
from clgrad.ops.elementwise import sign as sgn
from clgrad.ops.elementwise import neg as negative
from clgrad.ops.elementwise import abs as absolute
from clgrad.ops.elementwise import mul as multiply
from clgrad.ops.elementwise import sub as subtract
from clgrad.ops.elementwise import gt as greater
from clgrad.ops.elementwise import ge as greater_equal
from clgrad.ops.elementwise import lt as less
from clgrad.ops.elementwise import le as less_equal
from clgrad.ops.elementwise import ne as not_equal
from clgrad.ops.elementwise import eq as eq
from clgrad.ops.elementwise import ne as ne
from clgrad.ops.elementwise import lt as lt
from clgrad.ops.elementwise import le as le
from clgrad.ops.elementwise import gt as gt
from clgrad.ops.elementwise import ge as ge
from clgrad.ops.elementwise import logical_not as logical_not
from clgrad.ops.elementwise import logical_and as logical_and
from clgrad.ops.elementwise import logical_or as logical_or
from clgrad.ops.composite import logical_xor as logical_xor
from clgrad.ops.elementwise import bitwise_and as bitwise_and
from clgrad.ops.elementwise import bitwise_or as bitwise_or
from clgrad.ops.elementwise import bitwise_xor as bitwise_xor
from clgrad.ops.elementwise import bitwise_not as bitwise_not
from clgrad.ops.elementwise import bitwise_left_shift as bitwise_left_shift
from clgrad.ops.elementwise import bitwise_right_shift as bitwise_right_shift
from clgrad.ops.predicates import signbit as signbit
from clgrad.ops.predicates import is_floating_point as is_floating_point
from clgrad.ops.predicates import is_nonzero as is_nonzero
from clgrad.ops.numeric import isnan as isnan
from clgrad.ops.numeric import isinf as isinf
from clgrad.ops.numeric import isfinite as isfinite
from clgrad.ops.numeric import isclose as isclose
from clgrad.ops.numeric import allclose as allclose
from clgrad.ops.numeric import equal as equal
from clgrad.ops.elementwise import clone as clone
from clgrad.ops.inplace import fill_ as fill_
from clgrad.ops.inplace import zero_ as zero_
from clgrad.ops.elementwise import masked_fill as masked_fill
from clgrad.ops.reduce import sum as sum
from clgrad.ops.reduce import mean as mean
from clgrad.ops.reduce import prod as prod
from clgrad.ops.reduce import max as max
from clgrad.ops.reduce import min as min
from clgrad.ops.reduce import amax as amax
from clgrad.ops.reduce import amin as amin
from clgrad.ops.reduce import argmax as argmax
from clgrad.ops.reduce import argmin as argmin
from clgrad.ops.reduce import var as var
from clgrad.ops.reduce import std as std
from clgrad.ops.composite import var_mean as var_mean
from clgrad.ops.composite import std_mean as std_mean
from clgrad.ops.reduce import logsumexp as logsumexp
from clgrad.ops.composite import norm as norm
from clgrad.ops.reduce import count_nonzero as count_nonzero
from clgrad.ops.reduce import any as any
from clgrad.ops.reduce import all as all
from clgrad.ops.reduce import nansum as nansum
from clgrad.ops.reduce import nanmean as nanmean
from clgrad.ops.composite import softmax as softmax
from clgrad.ops.composite import log_softmax as log_softmax
from clgrad.ops.scan import cumsum as cumsum
from clgrad.ops.scan import cumprod as cumprod
from clgrad.ops.scan import cummax as cummax
from clgrad.ops.scan import cummin as cummin
from clgrad.ops.scan import diff as diff
from clgrad.ops.sort import sort as sort
from clgrad.ops.sort import argsort as argsort
from clgrad.ops.sort import topk as topk
from clgrad.ops.sort import unique as unique
from clgrad.ops.sort import searchsorted as searchsorted
from clgrad.ops.sort import bucketize as bucketize
from clgrad.ops.sort import isin as isin
from clgrad.ops.sort import kthvalue as kthvalue
from clgrad.ops.sort import median as median
from clgrad.ops.matmul import matmul as matmul
from clgrad.ops.matmul import mm as mm
from clgrad.ops.matmul import bmm as bmm
from clgrad.ops.matmul import dot as dot
from clgrad.ops.einsum import einsum as einsum
from clgrad.ops.composite import addmm as addmm
from clgrad.ops.composite import baddbmm as baddbmm
from clgrad.ops.composite import addmv as addmv
from clgrad.ops.composite import mv as mv
from clgrad.ops.composite import outer as outer
from clgrad.ops.composite import outer as ger
from clgrad.ops.composite import bilinear as bilinear
from clgrad.ops.products import trace as trace
from clgrad.ops.products import kron as kron
from clgrad.ops.products import tensordot as tensordot
from clgrad.ops.products import cdist as cdist
from clgrad.ops.products import dist as dist
from clgrad.ops.products import renorm as renorm
from clgrad.ops.products import addr as addr
from clgrad.ops.products import addbmm as addbmm
from clgrad.ops.products import addmv_ as addmv_
from clgrad.ops.products import chain_matmul as chain_matmul
from clgrad.ops.products import matrix_power as matrix_power
from clgrad.ops.linalg import matrix_exp as matrix_exp
from clgrad.ops.linalg import householder_product as orgqr
from clgrad.ops.decomp import inv as inverse
from clgrad.ops.decomp import det as det
from clgrad.ops.decomp import slogdet as slogdet
from clgrad.ops.decomp import logdet as logdet
from clgrad.ops.decomp import cholesky_solve as cholesky_solve
from clgrad.ops.decomp import cholesky_inverse as cholesky_inverse
from clgrad.ops.decomp import svd_legacy as svd
from clgrad.ops.decomp import pinverse as pinverse
from clgrad.ops.views import narrow as narrow
from clgrad.ops.views import select as select
from clgrad.ops.views import reshape as reshape
from clgrad.ops.views import permute as permute
from clgrad.ops.views import transpose as transpose
from clgrad.ops.shaping import swapaxes as swapaxes
from clgrad.ops.shaping import swapdims as swapdims
from clgrad.ops.shaping import broadcast_to as broadcast_to
from clgrad.ops.views import t as t
from clgrad.ops.views import unsqueeze as unsqueeze
from clgrad.ops.views import squeeze as squeeze
from clgrad.ops.views import flatten as flatten
from clgrad.ops.views import unflatten as unflatten
from clgrad.ops.views import split as split
from clgrad.ops.views import chunk as chunk
from clgrad.ops.views import unbind as unbind
from clgrad.ops.views import as_strided as as_strided
from clgrad.ops.views import diagonal as diagonal
from clgrad.ops.views import movedim as movedim
from clgrad.ops.views import movedim as moveaxis
from clgrad.ops.views import flip as flip
from clgrad.ops.shaping import fliplr as fliplr
from clgrad.ops.shaping import flipud as flipud
from clgrad.ops.shaping import rot90 as rot90
from clgrad.ops.shaping import atleast_1d as atleast_1d
from clgrad.ops.shaping import atleast_2d as atleast_2d
from clgrad.ops.shaping import atleast_3d as atleast_3d
from clgrad.ops.shaping import tensor_split as tensor_split
from clgrad.ops.shaping import hsplit as hsplit
from clgrad.ops.shaping import vsplit as vsplit
from clgrad.ops.shaping import dsplit as dsplit
from clgrad.ops.shaping import diag_embed as diag_embed
from clgrad.ops.composite import tile as tile
from clgrad.ops.composite import repeat_interleave as repeat_interleave
from clgrad.ops.composite import broadcast_tensors as broadcast_tensors
from clgrad.ops.composite import meshgrid as meshgrid
from clgrad.ops.index import cat as cat
from clgrad.ops.index import cat as concat
from clgrad.ops.index import cat as concatenate
from clgrad.ops.index import stack as stack
from clgrad.ops.shaping import hstack as hstack
from clgrad.ops.shaping import vstack as vstack
from clgrad.ops.shaping import row_stack as row_stack
from clgrad.ops.shaping import dstack as dstack
from clgrad.ops.shaping import column_stack as column_stack
from clgrad.ops.shaping import block_diag as block_diag
from clgrad.ops.shaping import cartesian_prod as cartesian_prod
from clgrad.ops.shaping import combinations as combinations
from clgrad.ops.index import index_select as index_select
from clgrad.ops.index import gather as gather
from clgrad.ops.index import scatter_add as scatter_add
from clgrad.ops.index import scatter as scatter
from clgrad.ops.index import roll as roll
from clgrad.ops.index import tril as tril
from clgrad.ops.index import triu as triu
from clgrad.ops.index import nonzero as nonzero
from clgrad.ops.index import argwhere as argwhere
from clgrad.ops.index import index_add as index_add
from clgrad.ops.shaping import index_fill as index_fill
from clgrad.ops.shaping import take as take
from clgrad.ops.shaping import take_along_dim as take_along_dim
from clgrad.ops.index import where as where
from clgrad.ops.composite import masked_select as masked_select
from clgrad.ops.indexing import index_put as index_put
from clgrad.ops.indexing import index_put_ as index_put_
from clgrad.ops.toplevel import embedding as embedding
from clgrad.ops.scatters import embedding_renorm_ as embedding_renorm_
from clgrad.ops.conv.transpose import conv1d as conv1d
from clgrad.ops.conv.op import conv2d as conv2d
from clgrad.ops.conv.transpose import conv_transpose1d as conv_transpose1d
from clgrad.ops.conv.transpose import conv_transpose2d as conv_transpose2d
from clgrad.ops.toplevel import max_pool1d as max_pool1d
from clgrad.ops.toplevel import max_pool2d as max_pool2d
from clgrad.ops.pool import avg_pool1d as avg_pool1d
from clgrad.ops.pool import adaptive_avg_pool1d as adaptive_avg_pool1d
from clgrad.ops.toplevel import adaptive_max_pool1d as adaptive_max_pool1d
from clgrad.ops.toplevel import max_pool1d_with_indices as max_pool1d_with_indices
from clgrad.ops.three_d import conv3d as conv3d
from clgrad.ops.three_d import conv_transpose3d as conv_transpose3d
from clgrad.ops.three_d import torch_max_pool3d as max_pool3d
from clgrad.ops.toplevel import batch_norm as batch_norm
from clgrad.ops.toplevel import layer_norm as layer_norm
from clgrad.ops.norm import rms_norm as rms_norm
from clgrad.ops.toplevel import group_norm as group_norm
from clgrad.ops.toplevel import instance_norm as instance_norm
from clgrad.ops.activation import prelu as prelu
from clgrad.ops.activation import selu as selu
from clgrad.ops.activation import selu_ as selu_
from clgrad.ops.activation import celu as celu
from clgrad.ops.activation import celu_ as celu_
from clgrad.ops.activation import hardshrink as hardshrink
from clgrad.ops.activation import threshold as threshold
from clgrad.ops.activation import threshold_ as threshold_
from clgrad.ops.activation import rrelu as rrelu
from clgrad.ops.activation import rrelu_ as rrelu_
from clgrad.ops.toplevel import dropout as dropout
from clgrad.ops.shuffle import pixel_shuffle as pixel_shuffle
from clgrad.ops.shuffle import pixel_unshuffle as pixel_unshuffle
from clgrad.ops.shuffle import channel_shuffle as channel_shuffle
from clgrad.ops.shuffle import channel_shuffle as native_channel_shuffle
from clgrad.ops.toplevel import binary_cross_entropy_with_logits as binary_cross_entropy_with_logits
from clgrad.ops.toplevel import kl_div as kl_div
from clgrad.ops.loss import margin_ranking_loss as margin_ranking_loss
from clgrad.ops.loss import hinge_embedding_loss as hinge_embedding_loss
from clgrad.ops.loss import cosine_embedding_loss as cosine_embedding_loss
from clgrad.ops.loss import triplet_margin_loss as triplet_margin_loss
from clgrad.ops.loss import poisson_nll_loss as poisson_nll_loss
from clgrad.ops.loss import cosine_similarity as cosine_similarity
from clgrad.ops.loss import pairwise_distance as pairwise_distance
from clgrad.ops.stats import quantile as quantile
from clgrad.ops.stats import nanquantile as nanquantile
from clgrad.ops.stats import nanmedian as nanmedian
from clgrad.ops.stats import mode as mode
from clgrad.ops.stats import aminmax as aminmax
from clgrad.ops.stats import bincount as bincount
from clgrad.ops.stats import histc as histc
from clgrad.ops.stats import cov as cov
from clgrad.ops.stats import corrcoef as corrcoef
from clgrad.ops.stats import trapezoid as trapezoid
from clgrad.ops.stats import trapezoid as trapz
from clgrad.ops.stats import cumulative_trapezoid as cumulative_trapezoid
from clgrad.ops.scan import logcumsumexp as logcumsumexp
from clgrad.ops.sort import unique_consecutive as unique_consecutive
from clgrad.ops.scatters import scatter_reduce as scatter_reduce
from clgrad.ops.scatters import index_copy as index_copy
from clgrad.ops.scatters import masked_scatter as masked_scatter
from clgrad.ops.scatters import diagonal_scatter as diagonal_scatter
from clgrad.ops.scatters import select_scatter as select_scatter
from clgrad.ops.scatters import slice_scatter as slice_scatter
from clgrad.ops.scatters import put as put
from clgrad.ops.products import cross as cross
from clgrad.ops.products import inner as inner
from clgrad.ops.products import vdot as vdot
from clgrad.ops.products import vander as vander
from clgrad.ops.shaping import diag as diag
from clgrad.ops.shaping import diagflat as diagflat
from clgrad.ops.shaping import split_with_sizes as split_with_sizes
from clgrad.ops.shaping import ravel as ravel
from clgrad.ops.shaping import broadcast_shapes as broadcast_shapes
from clgrad.ops.shaping import fill as fill
from clgrad.ops.special import frexp as frexp
from clgrad.ops.predicates import is_complex as is_complex
from clgrad.ops.predicates import is_signed as is_signed
from clgrad.ops.predicates import is_same_size as is_same_size
from clgrad.ops.predicates import is_inference as is_inference
from clgrad.creation import range as range
from clgrad.creation import scalar_tensor as scalar_tensor
from clgrad.creation import empty_strided as empty_strided
from clgrad.creation import randint_like as randint_like
from clgrad.creation import asarray as asarray
from clgrad.ops.windows import hann_window as hann_window
from clgrad.ops.windows import hamming_window as hamming_window
from clgrad.ops.windows import blackman_window as blackman_window
from clgrad.ops.windows import bartlett_window as bartlett_window
from clgrad.ops.windows import kaiser_window as kaiser_window
from clgrad.ops.toplevel import alpha_dropout as alpha_dropout
from clgrad.ops.toplevel import alpha_dropout_ as alpha_dropout_
from clgrad.ops.toplevel import feature_alpha_dropout as feature_alpha_dropout
from clgrad.ops.toplevel import feature_alpha_dropout_ as feature_alpha_dropout_
from clgrad.ops.products import pdist as pdist
from clgrad.ops.toplevel import embedding_bag as embedding_bag
from clgrad.ops.toplevel import convolution as convolution
from clgrad.ops.toplevel import dropout_ as dropout_
from clgrad.ops.dropout import feature_dropout as feature_dropout
from clgrad.ops.dropout import feature_dropout_ as feature_dropout_
from clgrad.ops.toplevel import constant_pad_nd as constant_pad_nd
from clgrad.ops.toplevel import rsub as rsub
from clgrad.ops.toplevel import detach_ as detach_
from clgrad import dtypes as dtypes
from clgrad import errors as errors
from clgrad import settings as settings
from clgrad import runtime as runtime
from clgrad import layout as layout
from clgrad import ops as ops
from clgrad import kernel_structs as kernel_structs
from clgrad import creation as creation
from clgrad.ops.composite import _assert as _assert
from clgrad import profiler as profiler
from clgrad import version as version

float16: dtype
float32: dtype
float64: dtype
int8: dtype
int16: dtype
int32: dtype
int64: dtype
uint8: dtype
bool: dtype
bfloat16: dtype
half: dtype
float: dtype
double: dtype
short: dtype
int: dtype
long: dtype
def is_tensor(obj) -> builtins.bool: ...
def numel(input: Tensor) -> builtins.int: ...
preserve_format: memory_format
contiguous_format: memory_format
FloatTensor: _LegacyType
DoubleTensor: _LegacyType
HalfTensor: _LegacyType
LongTensor: _LegacyType
IntTensor: _LegacyType
ShortTensor: _LegacyType
CharTensor: _LegacyType
ByteTensor: _LegacyType
BoolTensor: _LegacyType
def xlogy_(input: Tensor, other: Tensor | builtins.float, *args, **kwargs) -> Tensor: ...
def neg_(input: Tensor, *args, **kwargs) -> Tensor: ...
def abs_(input: Tensor, *args, **kwargs) -> Tensor: ...
def exp_(input: Tensor, *args, **kwargs) -> Tensor: ...
def log_(input: Tensor, *args, **kwargs) -> Tensor: ...
def sqrt_(input: Tensor, *args, **kwargs) -> Tensor: ...
def rsqrt_(input: Tensor, *args, **kwargs) -> Tensor: ...
def tanh_(input: Tensor, *args, **kwargs) -> Tensor: ...
def sigmoid_(input: Tensor, *args, **kwargs) -> Tensor: ...
def relu_(input: Tensor, *args, **kwargs) -> Tensor: ...
def sin_(input: Tensor, *args, **kwargs) -> Tensor: ...
def cos_(input: Tensor, *args, **kwargs) -> Tensor: ...
def square_(input: Tensor, *args, **kwargs) -> Tensor: ...
def reciprocal_(input: Tensor, *args, **kwargs) -> Tensor: ...
def floor_(input: Tensor, *args, **kwargs) -> Tensor: ...
def ceil_(input: Tensor, *args, **kwargs) -> Tensor: ...
def round_(input: Tensor, *args, **kwargs) -> Tensor: ...
def log1p_(input: Tensor, *args, **kwargs) -> Tensor: ...
def expm1_(input: Tensor, *args, **kwargs) -> Tensor: ...
def erf_(input: Tensor, *args, **kwargs) -> Tensor: ...
def clamp_(input: Tensor, *args, **kwargs) -> Tensor: ...
def clip_(input: Tensor, *args, **kwargs) -> Tensor: ...
def clamp_min_(input: Tensor, *args, **kwargs) -> Tensor: ...
def clamp_max_(input: Tensor, *args, **kwargs) -> Tensor: ...
def erfc_(input: Tensor, *args, **kwargs) -> Tensor: ...
def trunc_(input: Tensor, *args, **kwargs) -> Tensor: ...
def fix_(input: Tensor, *args, **kwargs) -> Tensor: ...
def frac_(input: Tensor, *args, **kwargs) -> Tensor: ...
def deg2rad_(input: Tensor, *args, **kwargs) -> Tensor: ...
def rad2deg_(input: Tensor, *args, **kwargs) -> Tensor: ...
def nan_to_num_(input: Tensor, *args, **kwargs) -> Tensor: ...
def tan_(input: Tensor, *args, **kwargs) -> Tensor: ...
def asin_(input: Tensor, *args, **kwargs) -> Tensor: ...
def arcsin_(input: Tensor, *args, **kwargs) -> Tensor: ...
def acos_(input: Tensor, *args, **kwargs) -> Tensor: ...
def arccos_(input: Tensor, *args, **kwargs) -> Tensor: ...
def atan_(input: Tensor, *args, **kwargs) -> Tensor: ...
def arctan_(input: Tensor, *args, **kwargs) -> Tensor: ...
def sinh_(input: Tensor, *args, **kwargs) -> Tensor: ...
def cosh_(input: Tensor, *args, **kwargs) -> Tensor: ...
def asinh_(input: Tensor, *args, **kwargs) -> Tensor: ...
def arcsinh_(input: Tensor, *args, **kwargs) -> Tensor: ...
def acosh_(input: Tensor, *args, **kwargs) -> Tensor: ...
def arccosh_(input: Tensor, *args, **kwargs) -> Tensor: ...
def atanh_(input: Tensor, *args, **kwargs) -> Tensor: ...
def arctanh_(input: Tensor, *args, **kwargs) -> Tensor: ...
def log2_(input: Tensor, *args, **kwargs) -> Tensor: ...
def log10_(input: Tensor, *args, **kwargs) -> Tensor: ...
def exp2_(input: Tensor, *args, **kwargs) -> Tensor: ...
def sinc_(input: Tensor, *args, **kwargs) -> Tensor: ...
def logit_(input: Tensor, *args, **kwargs) -> Tensor: ...
def i0_(input: Tensor, *args, **kwargs) -> Tensor: ...
def ldexp_(input: Tensor, other: Tensor | builtins.float, *args, **kwargs) -> Tensor: ...
def gcd_(input: Tensor, other: Tensor | builtins.float, *args, **kwargs) -> Tensor: ...
def lcm_(input: Tensor, other: Tensor | builtins.float, *args, **kwargs) -> Tensor: ...
def negative_(input: Tensor, *args, **kwargs) -> Tensor: ...
__version__: str

__all__ = [
    "Tensor", "Size", "dtype", "device", "Device", "Generator", "DeviceError", "OutOfMemoryError",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool", "bfloat16",
    "finfo", "iinfo", "half", "float", "double", "short", "int", "long", "get_default_dtype",
    "set_default_dtype", "promote_types", "can_cast", "result_type", "set_default_tensor_type",
    "devices", "default_device", "set_default_device", "get_default_device", "synchronize",
    "memory_allocated", "is_tensor", "numel", "memory_format", "preserve_format",
    "contiguous_format", "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor",
    "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor", "manual_seed", "initial_seed", "seed",
    "random", "get_rng_state", "set_rng_state", "no_grad", "enable_grad", "set_grad_enabled",
    "is_grad_enabled", "inference_mode", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    "are_deterministic_algorithms_enabled", "get_float32_matmul_precision", "get_num_threads",
    "set_float32_matmul_precision", "set_num_threads", "use_deterministic_algorithms",
    "set_printoptions", "get_printoptions", "printoptions", "save", "load", "autograd", "nn",
    "optim", "io", "linalg", "special", "distributed", "cuda", "accelerator", "backends", "utils",
    "serialization", "distributions", "fx", "jit", "amp", "capture", "multiprocessing", "autocast",
    "compile", "is_autocast_enabled", "get_autocast_dtype", "func", "vmap", "tensor", "as_tensor",
    "from_numpy", "empty", "zeros", "ones", "full", "arange", "linspace", "logspace", "eye", "rand",
    "randn", "randint", "randperm", "zeros_like", "ones_like", "full_like", "empty_like",
    "rand_like", "randn_like", "tril_indices", "triu_indices", "normal", "bernoulli", "multinomial",
    "add", "sub", "mul", "div", "divide", "true_divide", "floor_divide", "remainder", "fmod", "pow",
    "maximum", "minimum", "atan2", "arctan2", "addcmul", "addcdiv", "lerp", "hypot", "logaddexp",
    "logaddexp2", "xlogy", "copysign", "float_power", "neg", "abs", "exp", "log", "sqrt", "rsqrt",
    "tanh", "sigmoid", "relu", "sin", "cos", "square", "reciprocal", "sign", "floor", "ceil",
    "round", "log1p", "expm1", "erf", "clamp", "clip", "clamp_min", "clamp_max", "erfinv", "erfc",
    "lgamma", "digamma", "trunc", "fix", "frac", "deg2rad", "rad2deg", "polygamma", "mvlgamma",
    "igamma", "igammac", "nan_to_num", "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan",
    "sinh", "cosh", "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "log2", "log10",
    "exp2", "sinc", "logit", "i0", "positive", "fmax", "fmin", "heaviside", "ldexp", "gcd", "lcm",
    "nextafter", "sgn", "negative", "absolute", "multiply", "subtract", "greater", "greater_equal",
    "less", "less_equal", "not_equal", "eq", "ne", "lt", "le", "gt", "ge", "logical_not",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "signbit", "is_floating_point",
    "is_nonzero", "isnan", "isinf", "isfinite", "isclose", "allclose", "equal", "clone", "fill_",
    "zero_", "masked_fill", "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin",
    "var", "std", "var_mean", "std_mean", "logsumexp", "norm", "count_nonzero", "any", "all",
    "nansum", "nanmean", "softmax", "log_softmax", "cumsum", "cumprod", "cummax", "cummin", "diff",
    "sort", "argsort", "topk", "unique", "searchsorted", "bucketize", "isin", "kthvalue", "median",
    "matmul", "mm", "bmm", "dot", "einsum", "addmm", "baddbmm", "addmv", "mv", "outer", "ger",
    "bilinear", "trace", "kron", "tensordot", "cdist", "dist", "renorm", "addr", "addbmm", "addmv_",
    "chain_matmul", "matrix_power", "matrix_exp", "orgqr", "inverse", "det", "slogdet", "logdet",
    "cholesky_solve", "cholesky_inverse", "svd", "pinverse", "narrow", "select", "reshape",
    "permute", "transpose", "swapaxes", "swapdims", "broadcast_to", "t", "unsqueeze", "squeeze",
    "flatten", "unflatten", "split", "chunk", "unbind", "as_strided", "diagonal", "movedim",
    "moveaxis", "flip", "fliplr", "flipud", "rot90", "atleast_1d", "atleast_2d", "atleast_3d",
    "tensor_split", "hsplit", "vsplit", "dsplit", "diag_embed", "tile", "repeat_interleave",
    "broadcast_tensors", "meshgrid", "cat", "concat", "concatenate", "stack", "hstack", "vstack",
    "row_stack", "dstack", "column_stack", "block_diag", "cartesian_prod", "combinations",
    "index_select", "gather", "scatter_add", "scatter", "roll", "tril", "triu", "nonzero",
    "argwhere", "index_add", "index_fill", "take", "take_along_dim", "where", "masked_select",
    "index_put", "index_put_", "embedding", "embedding_renorm_", "conv1d", "conv2d",
    "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d",
    "adaptive_avg_pool1d", "adaptive_max_pool1d", "max_pool1d_with_indices", "conv3d",
    "conv_transpose3d", "max_pool3d", "batch_norm", "layer_norm", "rms_norm", "group_norm",
    "instance_norm", "prelu", "selu", "selu_", "celu", "celu_", "hardshrink", "threshold",
    "threshold_", "rrelu", "rrelu_", "dropout", "pixel_shuffle", "pixel_unshuffle",
    "channel_shuffle", "native_channel_shuffle", "binary_cross_entropy_with_logits", "kl_div",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss",
    "poisson_nll_loss", "cosine_similarity", "pairwise_distance", "quantile", "nanquantile",
    "nanmedian", "mode", "aminmax", "bincount", "histc", "cov", "corrcoef", "trapezoid", "trapz",
    "cumulative_trapezoid", "logcumsumexp", "unique_consecutive", "scatter_reduce", "index_copy",
    "masked_scatter", "diagonal_scatter", "select_scatter", "slice_scatter", "put", "cross",
    "inner", "vdot", "vander", "diag", "diagflat", "split_with_sizes", "ravel", "broadcast_shapes",
    "fill", "frexp", "is_complex", "is_signed", "is_same_size", "is_inference", "range",
    "scalar_tensor", "empty_strided", "randint_like", "asarray", "hann_window", "hamming_window",
    "blackman_window", "bartlett_window", "kaiser_window", "alpha_dropout", "alpha_dropout_",
    "feature_alpha_dropout", "feature_alpha_dropout_", "pdist", "embedding_bag", "convolution",
    "dropout_", "feature_dropout", "feature_dropout_", "constant_pad_nd", "rsub", "detach_",
    "xlogy_", "neg_", "abs_", "exp_", "log_", "sqrt_", "rsqrt_", "tanh_", "sigmoid_", "relu_",
    "sin_", "cos_", "square_", "reciprocal_", "floor_", "ceil_", "round_", "log1p_", "expm1_",
    "erf_", "clamp_", "clip_", "clamp_min_", "clamp_max_", "erfc_", "trunc_", "fix_", "frac_",
    "deg2rad_", "rad2deg_", "nan_to_num_", "tan_", "asin_", "arcsin_", "acos_", "arccos_", "atan_",
    "arctan_", "sinh_", "cosh_", "asinh_", "arcsinh_", "acosh_", "arccosh_", "atanh_", "arctanh_",
    "log2_", "log10_", "exp2_", "sinc_", "logit_", "i0_", "ldexp_", "gcd_", "lcm_", "negative_",
]
