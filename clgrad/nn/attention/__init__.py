"""``torch.nn.attention``: the scaled-dot-product-attention backends (SDPBackend) and the
``sdpa_kernel`` context manager that picks among them; ``bias`` holds the causal attention
biases. (``MultiheadAttention`` is clgrad.nn's, in clgrad/nn/multihead.py; this name is kept
here for what clgrad pickled before.)

clgrad has one implementation of F.scaled_dot_product_attention, PyTorch's math backend
(matmul, softmax, dropout: clgrad/ops/attention.py). ``sdpa_kernel`` sets the same switches
as PyTorch's (``torch.backends.cuda.enable_*_sdp``): while SDPBackend.MATH is not among the
allowed backends, F.scaled_dot_product_attention warns why and raises RuntimeError("No
available kernel. Aborting execution."), as PyTorch does where none of the allowed fused
kernels can run.
"""
from __future__ import annotations

import contextlib
from enum import IntEnum

from clgrad.backends import cuda as _cuda
from clgrad.errors import missing_attribute as _missing_attribute
from clgrad.nn.multihead import MultiheadAttention  # noqa: F401  (see the docstring)

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(IntEnum):
    """The scaled-dot-product-attention backends, PyTorch's names and values; clgrad
    implements MATH."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_SWITCHES = {SDPBackend.MATH: "math", SDPBackend.FLASH_ATTENTION: "flash",
             SDPBackend.EFFICIENT_ATTENTION: "mem_efficient",
             SDPBackend.CUDNN_ATTENTION: "cudnn", SDPBackend.OVERRIDEABLE: "overrideable"}


def _cur_sdpa_kernel_backends() -> list:
    """The backends allowed now (PyTorch's private helper of the same name)."""
    return [b for b, name in _SWITCHES.items() if _cuda._SDP[name]]


def _sdpa_kernel(backends) -> None:
    for b, name in _SWITCHES.items():
        _cuda._SDP[name] = b in backends


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Allow only ``backends`` (an SDPBackend or a list of them) for
    F.scaled_dot_product_attention inside the block; the previous switches come back after
    (PyTorch's). ``set_priority`` (the list's order as a preference) is accepted: clgrad has
    one backend, MATH, so there is nothing to order.

    Raises: TypeError for anything but SDPBackend values"""
    if isinstance(backends, SDPBackend):
        backends = [backends]
    if not isinstance(backends, (list, tuple, set)) or \
            not all(isinstance(b, SDPBackend) for b in backends):
        raise TypeError(f"sdpa_kernel: expected an SDPBackend or a list of them, got "
                        f"{backends!r}")
    previous = _cur_sdpa_kernel_backends()
    try:
        _sdpa_kernel(set(backends))
        yield {}
    finally:
        _sdpa_kernel(set(previous))


def __getattr__(name):
    """A torch.nn.attention name clgrad lacks (flex_attention ...): AttributeError naming
    it."""
    raise _missing_attribute(__name__, name)
