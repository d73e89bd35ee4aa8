"""``torch.Generator``: an explicit random-number generator for samplers and ``random_split``.

Backed by a NumPy PCG64 generator (as clgrad's global one, see clgrad/creation.py), so the same
seed gives the same order on every machine; the numbers differ from PyTorch's (Mersenne Twister).
"""
from __future__ import annotations

import os

import numpy as np

from clgrad import creation

__all__ = ["Generator", "default_rng_for"]

_DEFAULT_SEED = 67280421310721  # PyTorch's default initial seed


class Generator:
    """A seedable generator: ``Generator().manual_seed(s)`` as in PyTorch.

    Args:    device: accepted for PyTorch compatibility ("cpu" or a device); numbers are always
             drawn on the host
    Methods: manual_seed(seed) -> self; initial_seed(); seed() (a fresh OS-random seed);
             get_state() / set_state(state) (NumPy's bit-generator state dict, not a ByteTensor
             as in PyTorch)
    Raises:  TypeError for a seed that is not an int
    """

    def __init__(self, device="cpu"):
        from clgrad._device import device as _device
        self.device = _device(device)
        self.manual_seed(_DEFAULT_SEED)

    def manual_seed(self, seed) -> "Generator":
        """Reseed; negative seeds wrap modulo 2**64 as in PyTorch. Returns self."""
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"Generator.manual_seed: expected an int, got {type(seed).__name__}")
        self._seed = int(seed) % 2**64
        self._np = np.random.default_rng(self._seed)
        return self

    def initial_seed(self) -> int:
        """The seed last given to manual_seed (or seed)."""
        return self._seed

    def seed(self) -> int:
        """Reseed from the OS's randomness; returns the new seed."""
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def get_state(self) -> dict:
        """A copy of the NumPy bit-generator state (for ``set_state``)."""
        return self._np.bit_generator.state

    def set_state(self, state) -> "Generator":
        """Restore a state from ``get_state``. Returns self."""
        self._np.bit_generator.state = state
        return self

    def __repr__(self):
        return f"<clgrad.Generator seed={self._seed}>"


def default_rng_for(generator, op: str = "sampler") -> np.random.Generator:
    """The NumPy generator to draw from: ``generator``'s (checked as every random op checks
    it: ``creation.rng``, TypeError naming ``op``), or (None) a fresh one seeded from clgrad's
    global generator, so that ``clgrad.manual_seed(s)`` fixes the draws (as PyTorch's samplers
    seed themselves from the global generator when given none)."""
    if generator is None:
        return np.random.default_rng(int(creation.seed_generator().integers(0, 2**63)))
    return creation.rng(generator, op)
