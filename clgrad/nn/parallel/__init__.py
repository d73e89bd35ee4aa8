"""Data parallelism across processes (PyTorch's torch.nn.parallel names)."""
from clgrad.nn.parallel.distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
