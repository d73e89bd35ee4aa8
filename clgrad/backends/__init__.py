"""Backend settings: which convolution algorithm runs, and how much workspace it may take.

``conv_algorithm``: 'auto' (the default, or the ``CLGRAD_CONV_ALGO`` environment variable)
picks per pass by shape and device; 'implicit', 'im2col', 'direct', 'depthwise',
'pointwise' (1 x 1 convs as one GEMM), 'depthwise_gpu' or 'igemm_gpu' (both
clgrad/ops/conv/gpu.py), 'blocked', 'winograd' (clgrad/ops/conv/winograd.py: 3 x 3 kernels,
stride 1, dilation 1, every pass, and the weight gradient of 5 x 5 ones; 'winograd:2' /
'winograd:4' pin the output tile of F(2x2, 3x3) / F(4x4, 3x3), 'winograd' takes 4 where the
output allows), 'igemm_mma' (clgrad/ops/conv/mma.py: the float16 forward and input gradient
on NVIDIA's tensor cores; float16 weight gradients stay im2col's) asks for one
in every pass of every conv2d (see clgrad/ops/conv/), which gives way to 'implicit', then
'direct', only where it cannot run a problem (local memory too small, say).
``conv_implicit_variant``: the kernels 'implicit' runs: 'auto' (by device kind), 'cpu'
(kernels/conv_igemm_cpu.cl: one work item per work-group, register-blocked vectors) or 'gpu'
(kernels/conv_gemm_gpu.cl: 16 x 16 work items sharing local-memory tiles).
``conv_workspace_limit``: bytes the im2col algorithm may hold at once (default 256 MiB); it
chunks over the batch to stay under it (one sample is the smallest chunk).
``last_conv_algorithm``: the algorithm the latest conv2d pass ran (set by every pass), and
``last_conv_algorithms``: the latest choice per pass ('forward', 'grad_input', 'grad_weight').
``CLGRAD_CONV_DEBUG=1`` prints each choice with the problem's shape to stderr.

``cudnn``, ``cuda`` and ``mps`` are submodules (``import clgrad.backends.cudnn as cudnn``
works, as ``import torch.backends.cudnn``): PyTorch's backend flags, accepted and stored with
no effect on clgrad; their ``is_available()`` is False.
``flags(**settings)``: set these for a ``with`` block, restored on exit.
Every assignment of a setting here (``clgrad.backends.conv_algorithm = 'im2col'``) and every
``flags`` block counts as a change of the settings (``clgrad.settings.changed()``): the launch
plans keyed by ``settings.epoch()`` are then made again.
"""
import contextlib
import sys
import types

from clgrad import settings

__all__ = ["conv_algorithm", "conv_implicit_variant", "conv_workspace_limit",
           "last_conv_algorithm", "last_conv_algorithms", "CONV_ALGORITHMS",
           "CONV_IMPLICIT_VARIANTS", "cudnn", "cuda", "mps", "flags"]

CONV_ALGORITHMS = ("auto", "implicit", "im2col", "direct", "depthwise", "pointwise",
                   "depthwise_gpu", "igemm_gpu", "blocked", "winograd", "winograd:2",
                   "winograd:4", "igemm_mma", "igemm_mma:large", "igemm_mma:mid",
                   "igemm_mma:small")
CONV_IMPLICIT_VARIANTS = ("auto", "cpu", "gpu")

conv_algorithm = settings.getenv("CLGRAD_CONV_ALGO")
conv_implicit_variant = "auto"
conv_workspace_limit = 256 << 20
last_conv_algorithm = None
last_conv_algorithms = {}
# torch.use_deterministic_algorithms(mode, warn_only=...)'s flags (set by clgrad.ops.composite,
# read by the ops that sum with atomics: kernels/index.cl's scatter-adds, grid_sample)
determinism = {"deterministic": False, "warn_only": False}


@contextlib.contextmanager
def flags(**settings):
    """Set clgrad.backends settings (``conv_algorithm``, ``conv_implicit_variant``,
    ``conv_workspace_limit``) for a ``with`` block; the previous values come back on exit.

    Raises:  AttributeError for a name clgrad.backends does not have."""
    here = globals()  # this module's settings
    for name in settings:
        if name.startswith("_") or name not in here:
            raise AttributeError(f"flags: clgrad.backends has no setting {name!r}")
    saved = {name: here[name] for name in settings}
    try:
        here.update(settings)
        _settings.changed()
        yield
    finally:
        here.update(saved)
        _settings.changed()


class _Backends(types.ModuleType):
    """This module's class: an assignment of one of its settings bumps the settings epoch."""

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name in _SETTINGS:
            _settings.changed()


_settings = settings
_SETTINGS = frozenset({"conv_algorithm", "conv_implicit_variant", "conv_workspace_limit"})
sys.modules[__name__].__class__ = _Backends
_settings.changed()  # (importlib.reload sets every setting again, not through __setattr__)


from clgrad.backends import cuda, cudnn, mps  # noqa: E402  (PyTorch's submodules)
