"""parameters_to_vector / vector_to_parameters (torch.nn.utils' names)."""
from __future__ import annotations

from clgrad.ops import elementwise as ew
from clgrad.ops._util import bump_version
from clgrad.ops.index import cat
from clgrad.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters) -> Tensor:
    """All parameters flattened and concatenated into one 1-D tensor (differentiable).

    Raises TypeError for parameters on two devices (PyTorch's message)."""
    ps = list(parameters)
    if not ps:
        raise RuntimeError("parameters_to_vector: expected at least one parameter, got none")
    _one_device("parameters_to_vector", ps)
    return cat([p.reshape(-1) for p in ps])


def _one_device(op: str, ps):
    """PyTorch's _check_param_device: every parameter on one device."""
    if any(p._storage.device is not ps[0]._storage.device for p in ps):
        raise TypeError(f"{op}: Found two parameters on different devices, this is currently "
                        f"not supported.")


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters`` (their shapes).

    Differs from PyTorch, which rebinds each ``param.data`` to a view of ``vec``: clgrad
    copies the values into each parameter's own storage (parameters stay roots, on their
    device: a vec of another device is copied over), outside autograd. Raises TypeError for
    a non-1-D vec or parameters on two devices (PyTorch's message); ValueError when the
    sizes disagree.
    """
    if not isinstance(vec, Tensor) or vec.ndim != 1:
        raise TypeError(f"vector_to_parameters: expected a 1-D Tensor, got "
                        f"{getattr(vec, 'shape', type(vec).__name__)}")
    ps = list(parameters)
    need = sum(p.numel() for p in ps)
    if need != vec.numel():
        raise ValueError(f"vector_to_parameters: expected a vector of {need} elements (the "
                         f"parameters'), got {vec.numel()}")
    if not ps:
        return
    _one_device("vector_to_parameters", ps)
    vec = ew.to_device(vec.detach(), ps[0]._storage.device)
    at = 0
    for p in ps:
        n = p.numel()
        ew.copy_raw(p, vec[at:at + n].view(p.shape).to(p.dtype))
        bump_version(p)
        at += n
