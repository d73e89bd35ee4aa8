"""``clgrad.save`` / ``clgrad.load``: PyTorch's format or safetensors, by name and by content.

Writing: a path ending in ``.safetensors`` gets a clgrad safetensors checkpoint
(clgrad/io/checkpoint.py: exact NumPy round trips, str or int keys); any other path or a binary
file object gets PyTorch's zip format (clgrad/io/torch_format.py), which real ``torch.load`` reads.
Reading: by content, whatever the name: a zip (or legacy torch pickle) is read as PyTorch's
format with the restricted unpickler, anything else as a clgrad safetensors checkpoint.
bfloat16 tensors round-trip bit-exact in both (torch.BFloat16Storage records; safetensors
dtype "BF16").
"""
from __future__ import annotations

import os
import warnings
from pathlib import Path

from clgrad._device import device as torch_device
from clgrad.tensor import Tensor
from clgrad.io import checkpoint, torch_format

__all__ = ["save", "load"]


def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Write ``obj`` to ``f`` (a path or a binary file object) as the module doc says.

    PyTorch's other arguments: ``pickle_protocol`` (2 to 5) is accepted, and the pickle is
    written at protocol 2, torch.save's default, which every torch.load reads;
    ``_disable_byteorder_record`` is accepted (the byte order is recorded either way).
    Raises:  as clgrad.io.checkpoint.save (.safetensors) or clgrad.io.torch_format.save;
             TypeError for a ``pickle_module`` (clgrad writes with its own pickler) or a
             ``pickle_protocol`` outside 2..5; NotImplementedError for
             ``_use_new_zipfile_serialization=False`` (PyTorch's pre-1.6 format)
    """
    if pickle_module is not None:
        raise TypeError("save: pickle_module is not supported: clgrad writes checkpoints with "
                        "its own pickler (PyTorch's format, which torch.load reads)")
    if type(pickle_protocol) is not int or not 2 <= pickle_protocol <= 5:
        raise TypeError(f"save: expected pickle_protocol to be an int in 2..5, got "
                        f"{pickle_protocol!r}")
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("save: _use_new_zipfile_serialization=False (PyTorch's "
                                  "legacy pre-1.6 format) is not written by clgrad: it writes "
                                  "the zip format, which PyTorch >= 1.6 reads")
    if hasattr(f, "write"):
        f.write(torch_format.to_bytes(obj))
        return
    path = Path(os.fspath(f))
    if path.suffix.lower() == ".safetensors":
        checkpoint.save(obj, path)
    else:
        torch_format.save(obj, path)


def load(f, map_location=None, weights_only=None, mmap=None, pickle_module=None):
    """Read what ``save`` (or real ``torch.save``) wrote; see the module doc.

    Args:    map_location: where tensors go: None (clgrad's default device), "cpu", "cuda",
                 "cuda:N", a clgrad.device or runtime Device, a dict {saved location: device}
                 or a callable (storage, location) -> device (see torch_format.load)
             weights_only: None (the default) or True: only tensors, storages, dtypes,
                 devices, containers and the globals allowed with
                 clgrad.serialization.add_safe_globals (PyTorch >= 2.6's default); False:
                 clgrad's own nn.Module / Optimizer / LR scheduler classes too (a whole saved
                 model). Never Python's default unpickler: any other global raises
                 clgrad.io.torch_format.UnpicklingError (a pickle.UnpicklingError and a
                 ValueError) naming it and how to allow it (unlike PyTorch, whose
                 weights_only=False runs any code in the file)
             PyTorch's environment variables apply as in torch.load:
                 TORCH_FORCE_WEIGHTS_ONLY_LOAD=1 makes every load weights_only=True, and
                 TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 makes a load that does not pass
                 weights_only a weights_only=False one (with PyTorch's UserWarning); values
                 1, y, yes, true (any case) count as set
             mmap: accepted, no effect (the file is read into memory)
    Returns: the saved object; tensors as clgrad Tensors on the map_location device
    Raises:  FileNotFoundError; ValueError naming the path for a malformed file (every kind
             of damage); pickle.UnpicklingError (also a ValueError) for a disallowed global;
             TypeError for bad arguments or a dtype clgrad has no counterpart of;
             RuntimeError when both TORCH_FORCE_* variables are set (as torch.load)
    """
    if weights_only not in (None, True, False):
        raise TypeError(f"load: expected weights_only to be True, False or None, got "
                        f"{weights_only!r}")
    weights_only = _forced_weights_only(weights_only)
    if pickle_module is not None:
        raise TypeError("load: pickle_module is not supported: clgrad reads checkpoints with "
                        "its own restricted unpickler only")
    if hasattr(f, "read"):
        data, path = f.read(), getattr(f, "name", "<file object>")
        if not torch_format.is_torch_file(data[:4]):
            raise ValueError(f"load: {path}: expected a PyTorch checkpoint in the file object; "
                             f"pass a path to read a safetensors checkpoint")
        return torch_format.load(path, data, map_location, weights_only is not False)
    path = Path(os.fspath(f))
    if not path.exists():
        raise FileNotFoundError(f"load: expected a checkpoint file at {path}, got no such file")
    with open(path, "rb") as fh:
        head = fh.read(4)
    if torch_format.is_torch_file(head):
        return torch_format.load(path, path.read_bytes(), map_location,
                                 weights_only is not False)
    out = checkpoint.load(path)
    if map_location is None:
        return out
    from clgrad._device import resolve
    dev = resolve(map_location.get("cpu") if isinstance(map_location, dict) else
                  map_location if not callable(map_location) or isinstance(
                      map_location, (str, torch_device)) else "cpu")
    return _move(out, dev)


_TRUE = ("1", "y", "yes", "true")  # what torch.load counts as a set TORCH_FORCE_* variable


def _forced_weights_only(weights_only):
    """``weights_only`` after PyTorch's TORCH_FORCE_WEIGHTS_ONLY_LOAD /
    TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD (torch.serialization.load's rules: the first overrides
    any argument, the second only an argument not given)."""
    force = os.environ.get("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    force_no = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in _TRUE
    if force and force_no:
        raise RuntimeError("load: only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set")
    if force:
        return True
    if force_no and weights_only is None:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the "
                      "`weights_only` argument was not explicitly passed to `torch.load`, "
                      "forcing weights_only=False.", UserWarning, stacklevel=3)
        return False
    return weights_only


def _move(node, dev):
    if isinstance(node, Tensor):
        return node.to(dev)
    if isinstance(node, dict):
        return type(node)((k, _move(v, dev)) for k, v in node.items())
    if isinstance(node, (list, tuple)):
        return type(node)(_move(v, dev) for v in node)
    return node
