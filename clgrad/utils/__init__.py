"""``torch.utils``'s names: ``clgrad.utils.data``, ``clgrad.utils.checkpoint``."""
from clgrad.utils import checkpoint, data

__all__ = ["data", "checkpoint"]
