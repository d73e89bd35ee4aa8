"""``torch.autograd.forward_ad``: not implemented, each name raises NotImplementedError.

PyTorch's forward-mode AD carries a tangent with every dual tensor through each op's own
forward derivative formula. clgrad's autograd is a reverse-mode tape (clgrad/autograd/graph.py)
with no forward derivatives, so it has no dual tensors; a program reaching ``dual_level``,
``make_dual`` or ``unpack_dual`` gets a NotImplementedError naming the alternative: the same
Jacobian-vector products from ``clgrad.func.jvp`` / ``jacfwd`` or
``clgrad.autograd.functional.jvp``, computed in reverse mode (the double-vjp trick; README
"Deliberately different from PyTorch"). ``UnpackedDualTensor`` exists (a namedtuple) so that
programs importing it load.
"""
from __future__ import annotations

from collections import namedtuple

__all__ = ["dual_level", "make_dual", "unpack_dual", "enter_dual_level", "exit_dual_level",
           "UnpackedDualTensor"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def _unsupported(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"torch.autograd.forward_ad.{name}: clgrad has no forward-mode AD (no dual tensors: "
        f"its autograd is a reverse-mode tape); compute Jacobian-vector products with "
        f"clgrad.func.jvp(f, primals, tangents) or clgrad.autograd.functional.jvp (the same "
        f"values, by reverse mode)")


class dual_level:
    """PyTorch's context of a forward-AD level. Raises NotImplementedError on entry (see
    the module docstring)."""

    def __enter__(self):
        raise _unsupported("dual_level")

    def __exit__(self, *args):
        return False


def enter_dual_level():
    """Not implemented: raises NotImplementedError (see the module docstring)."""
    raise _unsupported("enter_dual_level")


def exit_dual_level(*, level=None):
    """Not implemented: raises NotImplementedError (see the module docstring)."""
    raise _unsupported("exit_dual_level")


def make_dual(tensor, tangent, *, level=None):
    """Not implemented: raises NotImplementedError (see the module docstring)."""
    raise _unsupported("make_dual")


def unpack_dual(tensor, *, level=None):
    """Not implemented: raises NotImplementedError (see the module docstring)."""
    raise _unsupported("unpack_dual")
