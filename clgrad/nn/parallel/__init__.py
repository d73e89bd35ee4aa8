"""Data parallelism across processes (PyTorch's torch.nn.parallel names)."""
from clgrad.nn.parallel.distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]

# -- h4 (issue 22) ------------------------------------------------------------------------------
from clgrad.nn.parallel.data_parallel import DataParallel, data_parallel  # noqa: F401,E402

__all__ += ["DataParallel", "data_parallel"]
