"""``torch.utils.data.distributed``: DistributedSampler (implemented in clgrad.distributed)."""
from clgrad.distributed.sampler import DistributedSampler

__all__ = ["DistributedSampler"]
