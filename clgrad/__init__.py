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
                                    clone, remainder, masked_fill, divide, true_divide,
                                    floor_divide, fmod, bitwise_and, bitwise_or, bitwise_xor,
                                    bitwise_not,
                                    bitwise_left_shift, bitwise_right_shift)
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
    "divide", "true_divide", "floor_divide", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
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

# -- h4 (issue 22), merged as it came: names real programs stop at ------------------------
import sys as _sys  # noqa: E402,F401

_before = set(globals())
# -- h4 (issue 22): torch.jit, torch.fx, torch.backends.* submodules --------------------------
from clgrad import fx, jit  # noqa: E402,F401
from clgrad.ops.elementwise import arctan2, atan2, expm1, log1p  # noqa: E402,F401
from clgrad.ops.index import index_add  # noqa: E402,F401
from clgrad.ops.reduce import nanmean, nansum  # noqa: E402,F401
from clgrad.ops.scan import cummax, cummin, diff  # noqa: E402,F401
from clgrad.ops.sort import kthvalue, median  # noqa: E402,F401

_h4 = {"log1p": log1p, "expm1": expm1, "atan2": atan2, "arctan2": arctan2,
       "index_add": index_add, "nansum": nansum, "nanmean": nanmean, "cummax": cummax,
       "cummin": cummin, "diff": diff, "kthvalue": kthvalue, "median": median}
globals().update(_h4)
del _h4

# -- h4 (issue 22): legacy tensor types, torch.random, get/set_rng_state ---------------------
# (the file is _rng.py, not random.py: a script run from inside clgrad/, as the device probe
# is, would otherwise import it in place of the standard library's random)
from clgrad import _rng as random  # noqa: E402,F401
from clgrad._legacy import cpu_types as _cpu_types  # noqa: E402,F401
from clgrad._rng import get_rng_state, set_rng_state  # noqa: E402,F401

_sys.modules[__name__ + ".random"] = random  # ``import clgrad.random`` (torch.random)

globals().update(_cpu_types)
del _cpu_types
from clgrad.ops import composite as _composite  # noqa: E402,F401
from clgrad.ops.composite import (_assert, are_deterministic_algorithms_enabled,  # noqa: E402,F401
                                  get_float32_matmul_precision, get_num_threads,
                                  set_float32_matmul_precision, set_num_threads,
                                  use_deterministic_algorithms)

_h4 = {n: getattr(_composite, n) for n in _composite.__all__}
globals().update(_h4)
del _h4
from clgrad import amp  # noqa: E402,F401
from clgrad.amp import autocast, compile, is_autocast_enabled  # noqa: E402,F401,A004
from clgrad.dtypes import get_default_dtype  # noqa: E402,F401
from clgrad import distributions  # noqa: E402,F401
# -- helper h2 (issue 20): PyTorch's torch.OutOfMemoryError ----------------------------------
from clgrad.runtime import OutOfMemoryError  # noqa: F401,E402  (torch.OutOfMemoryError)

# h3: torch.serialization's names (save / load / add_safe_globals / safe_globals).
from clgrad import serialization  # noqa: E402,F401
__all__ += sorted(k for k in set(globals()) - _before if not k.startswith("_"))
del _before

# -- last: non-Tensor arguments of every public op raise PyTorch's TypeError naming them -------
from clgrad.ops._util import check_tensor_args as _check_tensor_args  # noqa: E402
_check_tensor_args(globals(), __name__)
