"""Exception classes. Each subclasses the builtin a PyTorch user would catch."""

__all__ = ["DeviceError", "IndexRangeError", "ShapeError", "IntegerZeroDivisionError"]


class DeviceError(RuntimeError):
    """No usable OpenCL device, or a kernel build failed (the message carries the build log)."""


class IndexRangeError(IndexError, RuntimeError):
    """An index, start or length past the end of a dim.

    PyTorch raises IndexError for some of these and RuntimeError for others (``narrow``);
    this class is both, so either ``except`` works as it would with PyTorch.
    """


class ShapeError(ValueError, RuntimeError):
    """Shapes that do not broadcast (or otherwise do not fit together).

    PyTorch raises RuntimeError here and NumPy ValueError; this class is both.
    """


class IntegerZeroDivisionError(RuntimeError, ZeroDivisionError):
    """An integer division or remainder by zero (``//``, ``%``, div with a rounding mode,
    fmod). PyTorch raises RuntimeError("ZeroDivisionError"); this class is both, and its
    message starts with "ZeroDivisionError"."""
