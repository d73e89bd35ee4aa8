"""``torch.random`` (``clgrad.random``): the global generator's seed and state
(``get_rng_state`` / ``set_rng_state``, ``fork_rng``), on clgrad's one NumPy PCG64 generator
(clgrad/creation.py). The file is _rng.py, not random.py, so that it never shadows the standard
library's random for a script run from inside clgrad/ (as the device probe is).

The state is a uint8 tensor, as PyTorch's, but of clgrad's own layout (45 bytes: the 128-bit
PCG64 state and increment, the buffered 32-bit half, the initial seed), so it restores only
in clgrad, and the numbers drawn differ from PyTorch's Mersenne Twister.
"""
from __future__ import annotations

import contextlib

import numpy as np

from clgrad import creation
from clgrad.creation import initial_seed, manual_seed, seed

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "fork_rng"]

_STATE_BYTES = 45


def get_rng_state():
    """The global generator's state as a uint8 tensor of 45 bytes (for set_rng_state)."""
    st = creation.seed_generator().bit_generator.state
    raw = (st["state"]["state"].to_bytes(16, "little") + st["state"]["inc"].to_bytes(16, "little")
           + bytes([st["has_uint32"]]) + int(st["uinteger"]).to_bytes(4, "little")
           + creation._SEED[0].to_bytes(8, "little"))
    return creation.tensor(np.frombuffer(raw, dtype=np.uint8).copy(), dtype="uint8")


def set_rng_state(new_state) -> None:
    """Restore the global generator from a get_rng_state() tensor.

    Raises: TypeError for a non-Tensor or a non-uint8 tensor (PyTorch's messages);
            RuntimeError for one of another size
    """
    from clgrad.ops._util import _type_name
    from clgrad.tensor import Tensor
    if not isinstance(new_state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {_type_name(new_state)}")
    if new_state.dtype.name != "uint8":
        raise TypeError("RNG state must be a torch.ByteTensor")
    raw = bytes(new_state.numpy().reshape(-1))
    if len(raw) != _STATE_BYTES:
        raise RuntimeError(f"set_rng_state: expected a state of {_STATE_BYTES} bytes (clgrad's "
                           f"layout, from clgrad.get_rng_state()), got {len(raw)}")
    state = {"bit_generator": "PCG64",
             "state": {"state": int.from_bytes(raw[:16], "little"),
                       "inc": int.from_bytes(raw[16:32], "little")},
             "has_uint32": raw[32], "uinteger": int.from_bytes(raw[33:37], "little")}
    gen = np.random.default_rng()
    gen.bit_generator.state = state
    creation._RNG[0] = gen
    creation._SEED[0] = int.from_bytes(raw[37:45], "little")


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller="fork_rng", _devices_kw="devices",
             device_type="cuda"):
    """Run the block with the global generator's state saved, and put it back afterwards
    (PyTorch's torch.random.fork_rng); ``devices``/``device_type`` are accepted (clgrad has
    one generator for every device)."""
    if not enabled:
        yield
        return
    saved = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(saved)
