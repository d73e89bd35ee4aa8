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
# For contributors: the ops (the names of clgrad that are ops: add, sum, zeros ...) come from the
# op table, clgrad/ops/registry.py (the op, its backward and its kernel live in
# clgrad/ops/<family>.py and kernels/<family>.cl): to add one, add its row there. Here: the
# package's types, settings functions and subpackages, one import block each; then the ops
# (module attributes and ``__all__``'s op part, generated from the table); last out= and the
# argument check (every public op raises PyTorch's TypeError for a non-Tensor where a Tensor is
# required). To add a name that is not an op: import it in its block and list it in ``__all__``
# (``tests/test_faces.py`` checks both). After either: ``python tools/gen_stubs.py`` (the stub
# clgrad/__init__.pyi, what type checkers read; ``tests/test_stubs.py`` checks it).
import builtins as _builtins  # bool, int: the names below rebind them (dtypes)
import sys as _sys

# -- types, dtypes, devices -------------------------------------------------------------------
from clgrad.dtypes import DType as dtype
from clgrad.dtypes import float16, float32, float64, int32, int64, uint8, int8, int16
from clgrad.dtypes import bfloat16, finfo, iinfo
from clgrad.dtypes import bool_ as bool  # noqa: A001  (PyTorch's name)
from clgrad.dtypes import get_default_dtype, set_default_dtype, promote_types, can_cast
from clgrad.runtime import Device, devices, default_device, set_default_device, synchronize
from clgrad.runtime import OutOfMemoryError
from clgrad.tensor import Tensor, Size, memory_allocated
from clgrad._device import device, get_default_device
from clgrad._generator import Generator
from clgrad.errors import DeviceError
from clgrad._legacy import cpu_types as _cpu_types
from clgrad._legacy import set_default_tensor_type

# -- random state -----------------------------------------------------------------------------
from clgrad.creation import manual_seed, initial_seed, seed
# torch.random is clgrad/_rng.py (not random.py: a script run from inside clgrad/, as the device
# probe is, would otherwise import it in place of the standard library's random)
from clgrad import _rng as random
from clgrad._rng import get_rng_state, set_rng_state

# -- autograd ---------------------------------------------------------------------------------
from clgrad import autograd
from clgrad.autograd import is_anomaly_enabled, is_anomaly_check_nan_enabled
from clgrad.autograd import (no_grad, enable_grad, set_grad_enabled, is_grad_enabled,
                             inference_mode)

# -- the ops: the table (a row each in clgrad/ops/registry.py; the attributes are set below) ---
from clgrad.ops import registry as _registry
from clgrad.ops.elementwise import result_type

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
from clgrad import special
from clgrad import profiler  # noqa: F401  (torch.profiler: clgrad/profiler/)
from clgrad import version  # noqa: F401  (torch.version: cuda and hip None)
from clgrad.version import __version__  # noqa: F401
from clgrad import serialization, distributions, fx, jit, amp, capture, multiprocessing
# torch.func's transforms (vmap is a loop: clgrad/func/_vmap.py)
from clgrad import func
from clgrad.func import vmap
from clgrad.amp import autocast, get_autocast_dtype, is_autocast_enabled
# compile(mode="reduce-overhead") replays captured kernels (clgrad/capture/)
from clgrad._compile import compile  # noqa: A004

# -- the argument check, applied last (after __all__, below) ----------------------------------
from clgrad.ops._util import check_tensor_args as _check_tensor_args
from clgrad.ops.inplace import with_out as _with_out
from clgrad.errors import missing_attribute as _missing_attribute

# -- the ops: their module attributes, from the table (out= and the check: last, below) -------
globals().update(_registry.face(_registry.TORCH))

# -- memory formats (the *_like factories and clone take memory_format=) ----------------------
from clgrad._memory_format import memory_format, preserve_format, contiguous_format  # noqa

# -- PyTorch's aliases of the dtypes ----------------------------------------------------------
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



def is_tensor(obj) -> _builtins.bool:
    """True for clgrad Tensors."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> _builtins.int:
    """Number of elements of ``input``."""
    return input.numel()


__all__ = [
    # types, dtypes, devices
    "Tensor", "Size", "dtype", "device", "Device", "Generator", "DeviceError",
    "OutOfMemoryError",
    "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool",
    "bfloat16", "finfo", "iinfo", "half", "float", "double", "short", "int", "long",
    "get_default_dtype", "set_default_dtype", "promote_types", "can_cast", "result_type",
    "set_default_tensor_type",
    "devices", "default_device", "set_default_device", "get_default_device", "synchronize",
    "memory_allocated",
    "is_tensor", "numel", "memory_format", "preserve_format", "contiguous_format",
    "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
    "CharTensor", "ByteTensor", "BoolTensor",
    # random state, autograd
    "manual_seed", "initial_seed", "seed", "random", "get_rng_state", "set_rng_state",
    "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "inference_mode",
    "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
    # runtime flags
    "are_deterministic_algorithms_enabled", "get_float32_matmul_precision", "get_num_threads",
    "set_float32_matmul_precision", "set_num_threads", "use_deterministic_algorithms",
    # printing
    "set_printoptions", "get_printoptions", "printoptions",
    # serialization and subpackages
    "save", "load", "autograd", "nn", "optim", "io", "linalg", "special", "distributed", "cuda",
    "accelerator", "backends", "utils", "serialization", "distributions", "fx", "jit", "amp",
    "capture", "multiprocessing", "autocast", "compile", "is_autocast_enabled",
    "get_autocast_dtype", "func", "vmap",
]
__all__ += _registry.names(_registry.TORCH)  # the ops (tools/griffe_registry.py: the API pages)


def __getattr__(name):
    """A name not in this module: PyTorch's AttributeError, naming it as not implemented."""
    raise _missing_attribute(__name__, name)


# -- last: out= where PyTorch has it (clgrad/ops/inplace.py), then the non-Tensor arguments of
# every public op raise PyTorch's TypeError naming them
_with_out(globals(), _registry.outs())
_check_tensor_args(globals(), __name__, torch_names=_registry.torch_names())
