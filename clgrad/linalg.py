"""PyTorch's ``torch.linalg`` names: vector and matrix norms (clgrad/ops/linalg.py)."""
from clgrad.ops._util import check_tensor_args as _check_tensor_args
from clgrad.ops.linalg import matrix_norm, norm, vector_norm

__all__ = ["vector_norm", "matrix_norm", "norm"]

_check_tensor_args(globals(), __name__)  # non-Tensor arguments: TypeError naming them
