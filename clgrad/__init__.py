"""clgrad: PyTorch's API on OpenCL devices (tensors, autograd, nn, optim, data loading).

Code written for PyTorch runs with ``import clgrad as torch``::

    import clgrad as torch
    import clgrad.nn.functional as F

    model = torch.nn.Linear(3, 2)                     # on the default device
    x, y = torch.randn(8, 3), torch.randint(0, 2, (8,))
    loss = F.cross_entropy(model(x), y)
    loss.backward()                                   # model.weight.grad: (2, 3)

Devices: every device is an OpenCL device. Tensors go to ``clgrad.default_device()``: the first
GPU (NVIDIA, AMD or Intel, through the vendor's OpenCL driver) or else the CPU (Intel's OpenCL
CPU runtime or PoCL). ``python -m clgrad devices`` lists them, ``CLGRAD_DEVICE`` picks one,
``"cuda"`` means an OpenCL GPU and ``"cpu"`` the OpenCL CPU device.

Where to read more: the README's sections Devices, Settings, Captured steps and "Deliberately
different from PyTorch", and the API reference (``make docs``: site/index.html). A PyTorch name
clgrad lacks raises AttributeError saying it is not implemented; ``clgrad.__all__`` lists the
names it has.
"""
# For contributors: one import block per op family below (the op, its backward and its kernel
# live in clgrad/ops/<family>.py and kernels/<family>.cl), then the package's types and
# subpackages, then ``__all__``, and last the argument check (every public op raises PyTorch's
# TypeError for a non-Tensor where a Tensor is required). To add a name: import it in its
# family's block and list it in ``__all__`` (``tests/test_faces.py`` checks both).
import sys as _sys

# -- types, dtypes, devices -------------------------------------------------------------------
from clgrad.dtypes import DType as dtype
from clgrad.dtypes import float16, float32, float64, int32, int64, uint8, int8, int16
from clgrad.dtypes import bool_ as bool  # noqa: A001  (PyTorch's name)
from clgrad.dtypes import get_default_dtype, promote_types, can_cast
from clgrad.runtime import Device, devices, default_device, set_default_device, synchronize
from clgrad.runtime import OutOfMemoryError
from clgrad.tensor import Tensor, Size, memory_allocated
from clgrad._device import device, get_default_device
from clgrad._generator import Generator
from clgrad.errors import DeviceError
from clgrad._legacy import cpu_types as _cpu_types

# -- creation and random ----------------------------------------------------------------------
from clgrad.creation import (tensor, as_tensor, from_numpy, empty, zeros, ones, full, arange,
                             linspace, logspace, eye, rand, randn, randint, randperm, zeros_like,
                             ones_like, full_like, empty_like, rand_like, randn_like,
                             manual_seed, initial_seed, seed)
from clgrad.ops.random import bernoulli, normal
# torch.random is clgrad/_rng.py (not random.py: a script run from inside clgrad/, as the device
# probe is, would otherwise import it in place of the standard library's random)
from clgrad import _rng as random
from clgrad._rng import get_rng_state, set_rng_state

# -- autograd ---------------------------------------------------------------------------------
from clgrad import autograd
from clgrad.autograd import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled,
                             inference_mode)

# -- elementwise ------------------------------------------------------------------------------
from clgrad.ops.elementwise import (add, sub, mul, div, pow, maximum, minimum, neg, abs, exp,
                                    log, sqrt, rsqrt, tanh, sigmoid, relu, sin, cos, square,
                                    reciprocal, sign, floor, ceil, round, eq, ne, lt, le, gt,
                                    ge, logical_not, logical_and, logical_or, clamp,
                                    clone, remainder, masked_fill, divide, true_divide,
                                    floor_divide, fmod, bitwise_and, bitwise_or, bitwise_xor,
                                    bitwise_not, bitwise_left_shift, bitwise_right_shift,
                                    log1p, expm1, atan2, arctan2, result_type)
from clgrad.ops.numeric import isnan, isinf, isfinite, nan_to_num, isclose, allclose, equal
from clgrad.ops.composite import addcmul, addcdiv, lerp, logical_xor, erf

# -- reduce, scan, sort -----------------------------------------------------------------------
from clgrad.ops.reduce import (sum, mean, prod, max, min, amax, amin, argmax, argmin, var, std,
                               logsumexp, count_nonzero, nansum, nanmean)
from clgrad.ops.reduce import any, all  # noqa: A004
from clgrad.ops.composite import var_mean, std_mean, softmax, log_softmax, norm
from clgrad.ops.scan import cumsum, cumprod, cummax, cummin, diff
from clgrad.ops.sort import sort, argsort, topk, unique, kthvalue, median

# -- linalg -----------------------------------------------------------------------------------
from clgrad.ops.matmul import matmul, mm, bmm, dot
from clgrad.ops.einsum import einsum
from clgrad.ops.composite import addmm, baddbmm, addmv, mv, outer, ger

# -- views ------------------------------------------------------------------------------------
from clgrad.ops.views import (narrow, select, reshape, permute, transpose, t, unsqueeze,
                              squeeze, flatten, unflatten, split, chunk, unbind, as_strided,
                              diagonal, movedim, flip)
from clgrad.ops.composite import broadcast_tensors, meshgrid, tile, repeat_interleave

# -- index ------------------------------------------------------------------------------------
from clgrad.ops.index import (cat, stack, index_select, gather, scatter_add, scatter, roll,
                              tril, triu, nonzero, argwhere, index_add, where)
from clgrad.ops.indexing import index_put
from clgrad.ops.composite import masked_select

# -- runtime flags (threads, determinism, matmul precision, torch._assert) --------------------
from clgrad.ops.composite import _assert as _assert  # torch._assert (private, not in __all__)
from clgrad.ops.composite import (are_deterministic_algorithms_enabled,
                                  get_float32_matmul_precision, get_num_threads,
                                  set_float32_matmul_precision, set_num_threads,
                                  use_deterministic_algorithms)

# -- Tensor's methods and operators (binds them to the ops above) -----------------------------
from clgrad import _tensor_methods  # noqa: F401

# -- printing (PyTorch's print options) -------------------------------------------------------
from clgrad._tensor_str import set_printoptions, get_printoptions, printoptions

# -- serialization and subpackages (``import clgrad as torch`` gives torch.nn, torch.optim...) -
from clgrad.io import save, load
from clgrad import nn, optim, io, linalg, distributed, cuda, accelerator, backends, utils
from clgrad import serialization, distributions, fx, jit, amp, capture, multiprocessing
from clgrad.amp import autocast, is_autocast_enabled
# compile(mode="reduce-overhead") replays captured kernels (clgrad/capture.py)
from clgrad._compile import compile  # noqa: A004

# -- the argument check, applied last (after __all__, below) ----------------------------------
from clgrad.ops._util import check_tensor_args as _check_tensor_args
from clgrad.ops.inplace import with_out as _with_out
from clgrad.errors import missing_attribute as _missing_attribute

# -- PyTorch's aliases ------------------------------------------------------------------------
clip = clamp
concat = cat
long = int64
float = float32  # noqa: A001
double = float64
half = float16
int = int32  # noqa: A001
short = int16

_sys.modules[__name__ + ".random"] = random  # ``import clgrad.random`` (torch.random)

# PyTorch's legacy tensor types (torch.FloatTensor...; clgrad/_legacy.py)
FloatTensor = _cpu_types["FloatTensor"]
DoubleTensor = _cpu_types["DoubleTensor"]
HalfTensor = _cpu_types["HalfTensor"]
LongTensor = _cpu_types["LongTensor"]
IntTensor = _cpu_types["IntTensor"]
ShortTensor = _cpu_types["ShortTensor"]
CharTensor = _cpu_types["CharTensor"]
ByteTensor = _cpu_types["ByteTensor"]
BoolTensor = _cpu_types["BoolTensor"]

__version__ = "0.2.0"


def is_tensor(obj) -> bool:
    """True for clgrad Tensors."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """Number of elements of ``input``."""
    return input.numel()


__all__ = [
    # types, dtypes, devices
    "Tensor", "Size", "dtype", "device", "Device", "Generator", "DeviceError",
    "OutOfMemoryError",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
    "half", "float", "double", "short", "int", "long", "get_default_dtype", "promote_types",
    "can_cast", "result_type",
    "devices", "default_device", "set_default_device", "get_default_device", "synchronize",
    "memory_allocated",
    "is_tensor", "numel",
    "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
    "CharTensor", "ByteTensor", "BoolTensor",
    # creation and random
    "tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "arange",
    "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm", "zeros_like",
    "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "manual_seed",
    "initial_seed", "seed",
    "bernoulli", "normal", "random", "get_rng_state", "set_rng_state",
    # autograd
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
    # elementwise
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "neg", "abs", "exp", "log", "sqrt",
    "rsqrt", "tanh", "sigmoid", "relu", "sin", "cos", "square", "reciprocal", "sign", "floor",
    "ceil", "round", "eq", "ne", "lt", "le", "gt", "ge", "logical_not", "logical_and",
    "logical_or", "where", "clamp", "clip", "clone", "remainder", "masked_fill",
    "divide", "true_divide", "floor_divide", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "log1p", "expm1", "atan2",
    "arctan2",
    "isnan", "isinf", "isfinite", "nan_to_num", "isclose", "allclose", "equal",
    "addcmul", "addcdiv", "lerp", "logical_xor", "erf",
    # reduce, scan, sort
    "sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "var", "std",
    "softmax", "log_softmax", "logsumexp", "norm", "count_nonzero", "any", "all", "nansum",
    "nanmean", "var_mean", "std_mean",
    "cumsum", "cumprod", "cummax", "cummin", "diff",
    "sort", "argsort", "topk", "unique", "kthvalue", "median",
    # linalg
    "matmul", "mm", "bmm", "dot", "einsum", "addmm", "baddbmm", "addmv", "mv", "outer", "ger",
    # views
    "narrow", "select", "reshape", "permute", "transpose", "t", "unsqueeze", "squeeze",
    "flatten", "unflatten", "split", "chunk", "unbind", "as_strided", "diagonal", "movedim",
    "flip", "broadcast_tensors", "meshgrid", "tile", "repeat_interleave",
    # index
    "cat", "concat", "stack", "index_select", "gather", "scatter_add", "scatter", "roll",
    "tril", "triu", "nonzero", "argwhere", "index_put", "index_add", "masked_select",
    # runtime flags
    "are_deterministic_algorithms_enabled", "get_float32_matmul_precision", "get_num_threads",
    "set_float32_matmul_precision", "set_num_threads", "use_deterministic_algorithms",
    # printing
    "set_printoptions", "get_printoptions", "printoptions",
    # serialization and subpackages
    "save", "load", "autograd", "nn", "optim", "io", "linalg", "distributed", "cuda",
    "accelerator", "backends", "utils", "serialization", "distributions", "fx", "jit", "amp",
    "capture", "multiprocessing", "autocast", "compile", "is_autocast_enabled",
]


def __getattr__(name):
    """A name not in this module: PyTorch's AttributeError, naming it as not implemented."""
    raise _missing_attribute(__name__, name)


# -- last: out= where PyTorch has it (clgrad/ops/inplace.py), then the non-Tensor arguments of
# every public op raise PyTorch's TypeError naming them
_with_out(globals())
_check_tensor_args(globals(), __name__)
