"""clgrad: a small autograd framework whose tensors live on any OpenCL device.

The public names follow PyTorch, so ``import clgrad as torch`` runs code that uses them.
"""
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

# -- h5 (issue 22): PyTorch's print options ---------------------------------------------------
from clgrad._tensor_str import set_printoptions, get_printoptions, printoptions  # noqa: E402
