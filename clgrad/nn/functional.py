"""PyTorch's ``torch.nn.functional`` names over clgrad's ops (signatures and semantics as
PyTorch's). Each name is the op itself, or a thin wrapper where PyTorch's signature differs
(``inplace=``); the ops live in clgrad/ops/<family>.py beside their backward.

Layout: the names and ``__all__`` come from the op table, clgrad/ops/registry.py (the rows
with the FUNCTIONAL face; ``functional=OWN``: defined here, where PyTorch's signature differs
from the op's); last the argument check (a non-Tensor where a Tensor is required raises
PyTorch's TypeError). To add a name: add its row (or the FUNCTIONAL face to its row) there.
"""
from __future__ import annotations

from clgrad.ops import elementwise as _ew
from clgrad.ops import inplace as _ip
from clgrad.ops import registry as _registry
from clgrad.ops.conv.op import conv2d as _conv2d  # (an import per call cost ~0.6 us)
from clgrad.tensor import Tensor

# -- the argument check, applied last (after __all__, below) ----------------------------------
from clgrad.ops._util import check_tensor_args as _check_tensor_args
from clgrad.errors import missing_attribute as _missing_attribute


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups=1):
    """2-D convolution (see clgrad.ops.conv.conv2d)."""
    return _conv2d(input, weight, bias, stride, padding, dilation, groups)


def relu(input: Tensor, inplace: bool = False):
    """max(x, 0) elementwise; the gradient at 0 is 0."""
    if inplace:
        out = _ip.output_inplace("relu_", input, _ew.relu)  # one launch into input
        return out if out is not None else _ip.inplace("relu_", input, _ew.relu)
    return _ew.relu(input)


# -- the ops (clgrad/ops/registry.py): every name but those defined above --------------------
globals().update(_registry.face(_registry.FUNCTIONAL))
__all__ = _registry.names(_registry.FUNCTIONAL)


def __getattr__(name):
    """A name not in this module: PyTorch's AttributeError, naming it as not implemented."""
    raise _missing_attribute(__name__, name)


# -- last: non-Tensor arguments of every public op raise PyTorch's TypeError naming them -------
_check_tensor_args(globals(), __name__, torch_names=_registry.torch_names())
