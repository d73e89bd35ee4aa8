"""nn.Unfold and nn.Fold (PyTorch's torch.nn.Unfold, torch.nn.Fold): modules over
F.unfold and F.fold (clgrad/ops/conv/fold.py: im2col and col2im)."""
from __future__ import annotations

from clgrad.nn import functional as F
from clgrad.nn.module import Module
from clgrad.tensor import Tensor

__all__ = ["Unfold", "Fold"]


class Unfold(Module):
    """Extract sliding local blocks: (N, C, H, W) -> (N, C kh kw, L) (or unbatched
    (C, H, W) -> (C kh kw, L)); see clgrad.nn.functional.unfold for L, dtypes and errors."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """F.unfold(input, kernel_size, dilation, padding, stride)."""
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        """PyTorch's repr fields."""
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding="
                f"{self.padding}, stride={self.stride}")


class Fold(Module):
    """Combine sliding local blocks, summing overlaps: (N, C kh kw, L) -> (N, C, H, W) with
    (H, W) = output_size (or unbatched (C kh kw, L) -> (C, H, W)); see
    clgrad.nn.functional.fold."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        """F.fold(input, output_size, kernel_size, dilation, padding, stride)."""
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                      self.stride)

    def extra_repr(self):
        """PyTorch's repr fields."""
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
