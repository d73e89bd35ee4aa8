"""PyTorch's torch.nn.parameter names: Parameter, Buffer, and the uninitialised parameter and
buffer of the lazy modules (defined in clgrad/nn/module.py beside Module, which registers
them)."""
from clgrad.nn.module import (Buffer, Parameter, UninitializedBuffer,  # noqa: F401
                              UninitializedParameter, is_lazy)

__all__ = ["Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer", "is_lazy"]
