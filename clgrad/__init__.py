"""clgrad: a small autograd framework whose tensors live on any OpenCL device.

The public names follow PyTorch, so ``import clgrad as torch`` runs code that uses them.

Layout of this face: one import block per op family (the op, its backward and its kernel live
in clgrad/ops/<family>.py and kernels/<family>.cl), then the package's types and subpackages,
then ``__all__``, and last the argument check (every public op raises PyTorch's TypeError for
a non-Tensor where a Tensor is required). To add a name: import it in its family's block and
list it in ``__all__`` (``tests/test_faces.py`` checks both).
"""
# -- types, dtypes, devices -------------------------------------------------------------------
from clgrad.dtypes import DType as dtype
from clgrad.dtypes import float16, float32, float64, int32, int64, uint8, int8, int16
from clgrad.dtypes import bool_ as bool  # noqa: A001  (PyTorch's name)
from clgrad.runtime import Device, devices, default_device, set_default_device, synchronize
from clgrad.tensor import Tensor, Size, memory_allocated
from clgrad._device import device
from clgrad._generator import Generator
from clgrad.errors import DeviceError

# -- creation and random ----------------------------------------------------------------------
from clgrad.creation import (tensor, as_tensor, from_numpy, empty, zeros, ones, full, arange,
                             linspace, eye, rand, randn, randint, randperm, zeros_like,
                             ones_like, full_like, empty_like, rand_like, randn_like,
                             manual_seed, initial_seed, seed)
from clgrad.ops.random import bernoulli, normal

# -- autograd ---------------------------------------------------------------------------------
from clgrad import autograd
from clgrad.autograd import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled,
                             inference_mode)

# -- elementwise ------------------------------------------------------------------------------
from clgrad.ops.elementwise import (add, sub, mul, div, pow, maximum, minimum, neg, abs, exp,
                                    log, sqrt, rsqrt, tanh, sigmoid, relu, sin, cos, square,
                                    reciprocal, sign, floor, ceil, round, eq, ne, lt, le, gt,
                                    ge, logical_not, logical_and, logical_or, where, clamp,
                                    clone, remainder, masked_fill)
from clgrad.ops.numeric import isnan, isinf, isfinite, nan_to_num, isclose, allclose, equal

# -- reduce, scan, sort -----------------------------------------------------------------------
from clgrad.ops.reduce import (sum, mean, prod, max, min, amax, amin, argmax, argmin, var, std,
                               softmax, log_softmax, logsumexp, norm, count_nonzero)
from clgrad.ops.reduce import any, all  # noqa: A004
from clgrad.ops.scan import cumsum, cumprod
from clgrad.ops.sort import sort, argsort, topk, unique

# -- linalg -----------------------------------------------------------------------------------
from clgrad.ops.matmul import matmul, mm, bmm, dot
from clgrad.ops.einsum import einsum

# -- views ------------------------------------------------------------------------------------
from clgrad.ops.views import (narrow, select, reshape, permute, transpose, t, unsqueeze,
                              squeeze, flatten, unflatten, split, chunk, unbind, as_strided,
                              diagonal, movedim, flip)

# -- index ------------------------------------------------------------------------------------
from clgrad.ops.index import (cat, stack, index_select, gather, scatter_add, scatter, roll,
                              tril, triu, nonzero, argwhere)
from clgrad.ops.indexing import index_put

# -- Tensor's methods and operators (binds them to the ops above) -----------------------------
from clgrad import _tensor_methods  # noqa: F401

# -- serialization and subpackages (``import clgrad as torch`` gives torch.nn, torch.optim...) -
from clgrad.io import save, load
from clgrad import nn, optim, io, linalg, distributed, cuda, accelerator, backends, utils

# -- PyTorch's aliases ------------------------------------------------------------------------
clip = clamp
concat = cat
long = int64
float = float32  # noqa: A001
double = float64
half = float16
int = int32  # noqa: A001
short = int16

__version__ = "0.1.0"


def is_tensor(obj) -> bool:
    """True for clgrad Tensors."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """Number of elements of ``input``."""
    return input.numel()


__all__ = [
    # types, dtypes, devices
    "Tensor", "Size", "dtype", "device", "Device", "Generator", "DeviceError",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
    "half", "float", "double", "short", "int", "long",
    "devices", "default_device", "set_default_device", "synchronize", "memory_allocated",
    "is_tensor", "numel",
    # creation and random
    "tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "arange",
    "linspace", "eye", "rand", "randn", "randint", "randperm", "zeros_like", "ones_like",
    "full_like", "empty_like", "rand_like", "randn_like", "manual_seed", "initial_seed", "seed",
    "bernoulli", "normal",
    # autograd
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
    # elementwise
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "neg", "abs", "exp", "log", "sqrt",
    "rsqrt", "tanh", "sigmoid", "relu", "sin", "cos", "square", "reciprocal", "sign", "floor",
    "ceil", "round", "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and",
    "logical_or", "where", "clamp", "clip", "clone", "remainder", "masked_fill",
    "isnan", "isinf", "isfinite", "nan_to_num", "isclose", "allclose", "equal",
    # reduce, scan, sort
    "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std",
    "softmax", "log_softmax", "logsumexp", "norm", "count_nonzero", "any", "all",
    "cumsum", "cumprod", "sort", "argsort", "topk", "unique",
    # linalg
    "matmul", "mm", "bmm", "dot", "einsum",
    # views
    "narrow", "select", "reshape", "permute", "transpose", "t", "unsqueeze", "squeeze",
    "flatten", "unflatten", "split", "chunk", "unbind", "as_strided", "diagonal", "movedim",
    "flip",
    # index
    "cat", "concat", "stack", "index_select", "gather", "scatter_add", "scatter", "roll",
    "tril", "triu", "nonzero", "argwhere", "index_put",
    # serialization and subpackages
    "save", "load", "autograd", "nn", "optim", "io", "linalg", "distributed", "cuda",
    "accelerator", "backends", "utils",
]

# -- last: non-Tensor arguments of every public op raise PyTorch's TypeError naming them -------
from clgrad.ops._util import check_tensor_args as _check_tensor_args  # noqa: E402
_check_tensor_args(globals(), __name__)
