"""PyTorch's ``torch.linalg`` names: vector and matrix norms (clgrad/ops/linalg.py)."""
from clgrad.ops.linalg import matrix_norm, norm, vector_norm

__all__ = ["vector_norm", "matrix_norm", "norm"]
