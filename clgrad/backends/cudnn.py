"""``torch.backends.cudnn``'s flags (``import clgrad.backends.cudnn as cudnn``): accepted and
stored, no effect.

clgrad has no cuDNN: its convolution algorithm is chosen by ``clgrad.backends.conv_algorithm``
(``benchmark`` does not autotune anything), and its results are the same run to run on one
device whatever ``deterministic`` says. ``enabled=False`` does not switch anything off.
As in a CPU build of PyTorch, ``is_available()`` is False and ``version()`` is None.
"""
import contextlib

__all__ = ["enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32",
           "is_available", "is_acceptable", "version", "flags"]

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: clgrad runs on OpenCL, without cuDNN."""
    return False


def is_acceptable(tensor) -> bool:
    """False: no tensor is ever handed to cuDNN."""
    return False


def version():
    """None, as PyTorch without cuDNN."""
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False,
          allow_tf32=True):
    """Set the flags inside a ``with`` block and restore them after (PyTorch's
    ``torch.backends.cudnn.flags``); no effect on clgrad's kernels."""
    g = globals()
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {k: g[k] for k in names}
    g.update(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)))
    try:
        yield
    finally:
        g.update(saved)
