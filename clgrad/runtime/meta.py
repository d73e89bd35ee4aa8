"""The 'meta' device: tensors with a shape, strides and a dtype but no data (PyTorch's
device("meta")), for what programs do with them without computing: ``model.to('meta')`` to
make a stateless copy whose parameters ``torch.func.functional_call`` replaces (the model-
ensembling tutorial), ``torch.empty(..., device='meta')``, views and reshapes, ``copy.deepcopy``.

PyTorch computes every op on meta tensors for its output's shape alone; clgrad computes no op
there: anything that would run a kernel, copy data or read it (``+``, ``zeros``, ``fill_``, an
init function, ``.numpy()``, ``.to('cpu')``) raises NotImplementedError saying so. The device
holds no memory: its storages have no buffer and count no bytes.
"""
from __future__ import annotations

__all__ = ["MetaDevice", "META", "meta_error"]


def meta_error(what: str = "") -> NotImplementedError:
    """The NotImplementedError of computing on, or reading, a meta tensor."""
    return NotImplementedError(
        f"a tensor on the 'meta' device has a shape and a dtype but no data: clgrad neither "
        f"reads it nor runs an op on it{what} (PyTorch computes meta ops for their shapes; "
        f"clgrad's meta tensors serve views, .to('meta'), deepcopy and functional_call's "
        f"stateless modules); make real tensors on another device instead")


class MetaDevice:
    """The runtime face of device('meta'): what Storage and Tensor read (name, type, kind,
    fp64/fp16, max_alloc) and allocations without memory; every other attribute (a queue, a
    program, a copy) raises NotImplementedError (``meta_error``)."""

    name = platform = "meta"
    kind = type = "meta"
    index = None
    fp64 = fp16 = True
    max_alloc = 1 << 62
    total_memory = allocated = 0

    def alloc(self, nbytes: int):
        """No buffer: meta storages hold no data."""
        return None

    def free(self, nbytes: int):
        """Nothing to give back."""

    def synchronize(self):
        """Nothing is ever queued on the meta device."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise meta_error(f" (the op needed the device's {name!r})")

    def __repr__(self):
        return "<clgrad meta device>"


META = MetaDevice()
