"""DataParallel (PyTorch's torch.nn.DataParallel) on one device: a wrapper that forwards.

PyTorch's DataParallel scatters each batch over several GPUs of one process, runs a replica on
each and gathers the outputs. clgrad runs a process's work on one OpenCL device, so this
wrapper calls the module directly -- which is what PyTorch's does when it has no GPU or one
device id. It keeps what programs rely on: the wrapped model is ``.module``, ``state_dict()``
keys start with ``module.`` (so checkpoints saved from a DataParallel model load into one),
and ``device_ids`` / ``output_device`` / ``dim`` are accepted. For several devices use
DistributedDataParallel (one process per device).
"""
from __future__ import annotations

from clgrad.nn.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps ``module`` (registered as ``self.module``) and forwards every call to it.

    Args:    module: the Module; device_ids, output_device, dim: accepted and stored (no
             scatter happens: the batch runs whole on the module's device)
    Raises:  TypeError when module is not a clgrad Module
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: expected a Module, got {type(module).__name__}")
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        """``self.module(*inputs, **kwargs)``."""
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """The functional form: ``module(*inputs, **module_kwargs)`` on its one device."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return module(*inputs, **(module_kwargs or {}))
