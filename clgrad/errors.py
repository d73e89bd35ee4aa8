"""Exception classes (each subclasses the builtin a PyTorch user would catch), the faces'
AttributeError for a name clgrad lacks, and the text that says how to get a CPU device."""

__all__ = ["DeviceError", "IndexRangeError", "ShapeError", "IntegerZeroDivisionError",
           "LinAlgError", "missing_attribute", "CPU_RUNTIME_HINT"]

# What to install when no OpenCL CPU device exists: the `cpu` extra (pyproject.toml), which a
# lean `pip install clgrad` (for GPU machines) leaves out. Every message that suggests a CPU
# runtime uses this text.
CPU_RUNTIME_HINT = ("pip install 'clgrad[cpu]' (Intel's OpenCL CPU runtime and PoCL from PyPI: "
                    "intel-opencl-rt, intel-cmplr-lib-rt, pocl-binary-distribution)")


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


class LinAlgError(RuntimeError):
    """A matrix a linear-algebra op cannot handle: singular (linalg.inv, linalg.solve), not
    positive-definite (linalg.cholesky). PyTorch's torch.linalg.LinAlgError, a RuntimeError
    subclass as there (clgrad.linalg.LinAlgError)."""


def missing_attribute(module: str, name: str) -> AttributeError:
    """The AttributeError of a face's module ``__getattr__`` (clgrad, clgrad.nn,
    clgrad.nn.functional): a name PyTorch has and clgrad does not is named as not implemented,
    with where to look; dunder lookups (``__path__``, ``__wrapped__``...) get Python's plain
    message, since tools probe for those."""
    plain = f"module {module!r} has no attribute {name!r}"
    if name.startswith("__"):
        return AttributeError(plain)
    torch_name = "torch" + module[len("clgrad"):]
    return AttributeError(f"{plain}: {torch_name}.{name} is not implemented in clgrad (the "
                          f"names it has: {module}.__all__; what it does differently or not: "
                          f"README \"Deliberately different from PyTorch\")")
