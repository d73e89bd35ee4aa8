"""PyTorch's memory formats: ``torch.preserve_format`` and ``torch.contiguous_format``.

clgrad's new tensors are row-major contiguous, so both formats it knows give the same result:
``contiguous_format`` exactly PyTorch's; ``preserve_format`` (the default of ``*_like`` and
``clone``) PyTorch's result for a contiguous input, and for a non-contiguous one the same
values laid out contiguously (PyTorch would keep a dense input's strides). clgrad has no
``channels_last`` layout.
"""
from __future__ import annotations


class memory_format:
    """A memory format (PyTorch's ``torch.memory_format``); compare by identity."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    def __reduce__(self):
        return self.name  # pickles as the module attribute


preserve_format = memory_format("preserve_format")
contiguous_format = memory_format("contiguous_format")


def check(fmt, op: str) -> None:
    """Accept None and the formats clgrad has; TypeError for anything else (PyTorch's)."""
    if fmt is None or fmt is preserve_format or fmt is contiguous_format:
        return
    raise TypeError(f"{op}(): argument 'memory_format' must be torch.memory_format, not "
                    f"{type(fmt).__name__}")

