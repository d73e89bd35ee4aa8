"""Linear and Bilinear (PyTorch's torch.nn.Linear, torch.nn.Bilinear); the math lives in
clgrad/ops/matmul.py (linear) and clgrad/ops/composite.py (bilinear)."""
from __future__ import annotations

import math

from clgrad._args import _check_positive
from clgrad.creation import empty
from clgrad.nn import functional as F
from clgrad.nn import init
from clgrad.nn.init import _default_init
from clgrad.autograd import no_grad
from clgrad.nn.lazy import LazyModuleMixin
from clgrad.nn.module import Module, Parameter, UninitializedParameter, is_lazy
from clgrad.tensor import Tensor

__all__ = ["Linear", "Bilinear", "LazyLinear"]


class Linear(Module):
    """y = x W^T + b.

    Shapes:  x (*, in_features) -> (*, out_features); weight (out, in), bias (out,)
    Init:    weight kaiming_uniform_(a=sqrt(5)), i.e. U(+-1/sqrt(in)); bias U(+-1/sqrt(in))
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        _check_positive("Linear", in_features=in_features, out_features=out_features)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(empty(out_features, in_features, dtype=dtype, device=device))
        self.bias = Parameter(empty(out_features, dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's default initialisation (see the class docstring)."""
        _default_init(self.weight, self.bias)

    def forward(self, x: Tensor) -> Tensor:
        """x @ weight.T + bias.

        Shapes:  x (*, in_features) -> (*, out_features); see clgrad.nn.functional.linear
        Dtypes:  x.dtype == weight.dtype (RuntimeError otherwise)
        Raises:  RuntimeError when x.shape[-1] != in_features
        """
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        """'in_features=I, out_features=O, bias=B', as PyTorch's repr."""
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """y = x1^T A x2 + b (PyTorch's nn.Bilinear).

    Shapes:  x1 (*, in1_features), x2 (*, in2_features) with the same leading dims ->
             (*, out_features); weight (out, in1, in2), bias (out,)
    Init:    weight and bias U(+-1/sqrt(in1_features)) (PyTorch's reset_parameters)
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        _check_positive("Bilinear", in1_features=in1_features, in2_features=in2_features,
                        out_features=out_features)
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in1_features, in2_features, dtype=dtype,
                                      device=device))
        self.bias = Parameter(empty(out_features, dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's initialisation (see the class docstring)."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """x1^T A x2 + b; see clgrad.nn.functional.bilinear (shapes, errors)."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        """PyTorch's repr fields."""
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is inferred from the first input's last dim (PyTorch's
    nn.LazyLinear; clgrad/nn/lazy.py): it then becomes a Linear, initialised as Linear."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(1, out_features, bias, device, dtype)  # (1: a placeholder)
        self.in_features = 0
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        """Linear's, once materialised (nothing before)."""
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """in_features = input.shape[-1]; materialise weight and bias; Linear's init."""
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()

    def _sizes_from_params(self):
        if not is_lazy(self.weight):
            self.in_features = self.weight.shape[1]
