"""``torch.backends.mps`` (Apple's Metal backend): never available to clgrad.

Programs test ``torch.backends.mps.is_available()`` to choose a device; it is False here, so
they fall back to the device clgrad gives "cpu" (OpenCL's default device).
"""
__all__ = ["is_available", "is_built", "is_macos13_or_newer"]


def is_available() -> bool:
    """False: clgrad runs on OpenCL, not on Metal."""
    return False


def is_built() -> bool:
    """False: clgrad is not built with MPS."""
    return False


def is_macos13_or_newer(minor: int = 0) -> bool:
    """False (PyTorch answers for the MPS backend, which clgrad lacks)."""
    return False
