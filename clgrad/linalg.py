"""PyTorch's ``torch.linalg`` names: vector and matrix norms, matrix_exp and
householder_product (clgrad/ops/linalg.py); inverses,
determinants, solvers and decompositions (clgrad/ops/decomp.py: computed on the host with
NumPy's LAPACK); matrix_power and cross (clgrad/ops/products.py)."""
from clgrad.errors import LinAlgError
from clgrad.ops._util import check_tensor_args as _check_tensor_args
from clgrad.ops.decomp import (cholesky, det, eigh, eigvalsh, inv, inv_ex, lstsq, matrix_rank,
                               pinv, qr, slogdet, solve, solve_triangular, svd, svdvals)
from clgrad.ops.linalg import householder_product, matrix_exp, matrix_norm, norm, vector_norm
from clgrad.ops.products import linalg_cross as cross
from clgrad.ops.products import matrix_power, multi_dot

__all__ = ["vector_norm", "matrix_norm", "norm", "inv", "det", "slogdet", "solve", "cholesky",
           "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "matrix_rank", "lstsq",
           "matrix_power", "solve_triangular", "cross", "matrix_exp", "householder_product",
           "LinAlgError", "inv_ex", "multi_dot"]

_check_tensor_args(globals(), __name__)  # non-Tensor arguments: TypeError naming them
