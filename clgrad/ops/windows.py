"""Window functions for signal processing (PyTorch's torch.hann_window, hamming_window,
blackman_window, bartlett_window, kaiser_window): 1-D factories computed on the host in
float64 (NumPy's formulas) and uploaded in the requested float dtype.

``periodic=True`` (the default, as PyTorch) gives the first ``window_length`` values of the
symmetric window of ``window_length + 1`` points (for spectral analysis: the window repeats);
``periodic=False`` the symmetric window. Length 0 gives an empty tensor, length 1 ``[1.]``.
"""
from __future__ import annotations

import numpy as np

from clgrad import creation, dtypes

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                requires_grad: bool = False):
    """0.5 - 0.5 cos(2 pi n / (N - 1)) (PyTorch's torch.hann_window)."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, m: 0.5 - 0.5 * np.cos(2 * np.pi * n / (m - 1)))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, device=None,
                   requires_grad: bool = False):
    """alpha - beta cos(2 pi n / (N - 1)) (PyTorch's torch.hamming_window)."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, m: alpha - beta * np.cos(2 * np.pi * n / (m - 1)))


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                    requires_grad: bool = False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1)) (PyTorch's
    torch.blackman_window)."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, m: 0.42 - 0.5 * np.cos(2 * np.pi * n / (m - 1))
                   + 0.08 * np.cos(4 * np.pi * n / (m - 1)))


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                    requires_grad: bool = False):
    """1 - |2 n / (N - 1) - 1| (PyTorch's torch.bartlett_window)."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, m: 1 - np.abs(2 * n / (m - 1) - 1))


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype=None, device=None, requires_grad: bool = False):
    """I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta) (PyTorch's torch.kaiser_window,
    NumPy's np.kaiser)."""
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, m: np.i0(beta * np.sqrt(np.clip(
                       1 - (2 * n / (m - 1) - 1) ** 2, 0, None))) / np.i0(beta))


def _window(op, length, periodic, dtype, device, requires_grad, formula):
    if not isinstance(length, (int, np.integer)) or isinstance(length, bool) or length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got "
                           f"window_length={length}")
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.to_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dt}")
    if length <= 1:
        values = np.ones(length)
    else:
        m = length + 1 if periodic else length
        values = formula(np.arange(length, dtype=np.float64), m)
    return creation.tensor(values, dtype=dt, device=device, requires_grad=requires_grad)
