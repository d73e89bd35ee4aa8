"""Reading and writing model files: clgrad checkpoints (safetensors, never pickle)."""

from .checkpoint import load, save

__all__ = ["save", "load"]
