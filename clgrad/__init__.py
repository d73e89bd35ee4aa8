"""clgrad: a small autograd framework whose tensors live on any OpenCL device.

The public names follow PyTorch, so ``import clgrad as torch`` runs code that uses them.
"""
import sys as _sys

from clgrad import dtypes as _dtypes
from clgrad.dtypes import DType as dtype
from clgrad.dtypes import float16, float32, float64, int32, int64
from clgrad.dtypes import bool_ as bool  # noqa: A001  (PyTorch's name)
from clgrad.runtime import Device, devices, default_device, set_default_device, synchronize
from clgrad.tensor import Tensor, Size, memory_allocated
from clgrad.creation import (tensor, as_tensor, from_numpy, empty, zeros, ones, full, arange,
                             linspace, eye, rand, randn, randint, randperm, zeros_like,
                             ones_like, full_like, empty_like, rand_like, randn_like,
                             manual_seed, initial_seed, seed)
from clgrad.autograd import no_grad, enable_grad, set_grad_enabled, is_grad_enabled
from clgrad import autograd
from clgrad.ops.elementwise import (add, sub, mul, div, pow, maximum, minimum, neg, abs, exp,
                                    log, sqrt, rsqrt, tanh, sigmoid, relu, sin, cos, square,
                                    reciprocal, sign, floor, ceil, round, eq, ne, lt, le, gt,
                                    ge, logical_not, logical_and, logical_or, where, clamp,
                                    clone)
from clgrad.ops.reduce import (sum, mean, prod, max, min, amax, amin, argmax, argmin, var, std,
                               softmax, log_softmax, logsumexp, norm)
from clgrad.ops.matmul import matmul, mm, bmm, dot
from clgrad.ops.index import cat, stack, index_select, gather, scatter_add
from clgrad.ops.views import (narrow, select, reshape, permute, transpose, t, unsqueeze,
                              squeeze, flatten, unflatten, split, chunk, unbind, as_strided,
                              diagonal, movedim, flip)
from clgrad.ops.elementwise import remainder, masked_fill
from clgrad.ops.reduce import any, all  # noqa: A004
from clgrad import _tensor_methods  # noqa: F401,E402  (binds Tensor's methods to the ops)
from clgrad.errors import DeviceError
from clgrad.io import save, load

clip = clamp
concat = cat
long = int64
float = float32  # noqa: A001
double = float64
half = float16
int = int32  # noqa: A001

__version__ = "0.1.0"

from clgrad.ops._util import check_tensor_args as _check_tensor_args  # noqa: E402
_check_tensor_args(globals(), __name__)  # non-Tensor arguments: TypeError naming them


def is_tensor(obj) -> bool:
    """True for clgrad Tensors."""
    return isinstance(obj, Tensor)


def numel(x: Tensor) -> int:
    """Number of elements of ``x``."""
    return x.numel()


# Subpackages, so that ``import clgrad as torch`` gives ``torch.nn``, ``torch.optim``...
from clgrad import nn, optim, data, io, linalg, distributed  # noqa: E402

# Sorting, scans, NaN tests, scatter, random (issue 13): PyTorch's torch.* names.
from clgrad.ops.sort import sort, argsort, topk, unique  # noqa: E402
from clgrad.ops.scan import cumsum, cumprod  # noqa: E402
from clgrad.ops.numeric import (isnan, isinf, isfinite, nan_to_num, isclose,  # noqa: E402
                                allclose, equal)
from clgrad.ops.index import scatter, roll, tril, triu, nonzero, argwhere  # noqa: E402
from clgrad.ops.reduce import count_nonzero  # noqa: E402
from clgrad.ops.random import bernoulli, normal  # noqa: E402

# -- small integer dtypes, index_put, einsum, inference_mode (issue 13) ----------------------
from clgrad.dtypes import uint8, int8, int16  # noqa: E402
from clgrad.ops.index import index_put  # noqa: E402
from clgrad.ops.einsum import einsum  # noqa: E402
from clgrad.autograd import inference_mode  # noqa: E402
short = int16

# PyTorch's device type and torch.cuda / torch.accelerator / torch.utils.data (issue 13).
from clgrad._device import device  # noqa: E402
from clgrad import cuda, accelerator, backends, utils  # noqa: E402
from clgrad._generator import Generator  # noqa: E402

# -- h4 (issue 22): torch.jit, torch.fx, torch.backends.* submodules --------------------------
from clgrad import fx, jit  # noqa: E402
from clgrad.ops.elementwise import arctan2, atan2, expm1, log1p  # noqa: E402
from clgrad.ops.index import index_add  # noqa: E402
from clgrad.ops.reduce import nanmean, nansum  # noqa: E402
from clgrad.ops.scan import cummax, cummin, diff  # noqa: E402
from clgrad.ops.sort import kthvalue, median  # noqa: E402

_h4 = {"log1p": log1p, "expm1": expm1, "atan2": atan2, "arctan2": arctan2,
       "index_add": index_add, "nansum": nansum, "nanmean": nanmean, "cummax": cummax,
       "cummin": cummin, "diff": diff, "kthvalue": kthvalue, "median": median}
_check_tensor_args(_h4, __name__)  # non-Tensor arguments: TypeError naming them
globals().update(_h4)
del _h4

# -- h4 (issue 22): legacy tensor types, torch.random, get/set_rng_state ---------------------
# (the file is _rng.py, not random.py: a script run from inside clgrad/, as the device probe
# is, would otherwise import it in place of the standard library's random)
from clgrad import _rng as random  # noqa: E402
from clgrad._legacy import cpu_types as _cpu_types  # noqa: E402
from clgrad._rng import get_rng_state, set_rng_state  # noqa: E402

_sys.modules[__name__ + ".random"] = random  # ``import clgrad.random`` (torch.random)

globals().update(_cpu_types)
del _cpu_types
from clgrad.ops import composite as _composite  # noqa: E402
from clgrad.ops.composite import (_assert, are_deterministic_algorithms_enabled,  # noqa: E402
                                  get_float32_matmul_precision, get_num_threads,
                                  set_float32_matmul_precision, set_num_threads,
                                  use_deterministic_algorithms)

_h4 = {n: getattr(_composite, n) for n in _composite.__all__}
_check_tensor_args(_h4, __name__)  # non-Tensor arguments: TypeError naming them
globals().update(_h4)
del _h4
from clgrad import amp  # noqa: E402
from clgrad.amp import autocast, compile, is_autocast_enabled  # noqa: E402,A004
from clgrad.dtypes import get_default_dtype  # noqa: E402
from clgrad import distributions  # noqa: E402
# -- helper h2 (issue 20): PyTorch's torch.OutOfMemoryError ----------------------------------
from clgrad.runtime import OutOfMemoryError  # noqa: F401,E402  (torch.OutOfMemoryError)

# h3: torch.serialization's names (save / load / add_safe_globals / safe_globals).
from clgrad import serialization  # noqa: E402
