"""``torch.utils``'s names: ``clgrad.utils.data``."""
from clgrad.utils import data

__all__ = ["data"]
