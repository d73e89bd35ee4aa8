"""Anomaly detection (PyTorch's torch.autograd.detect_anomaly / set_detect_anomaly).

With the mode on and ``check_nan`` set, the engine (``graph._apply``) checks every gradient a
Node's backward returns and raises ``RuntimeError("Function 'MulBackward0' returned nan
values in its 0th output.")`` at the first Node that produced a NaN, as PyTorch does. Each
check reads the gradient back to the host (a synchronisation per Node): a debugging mode.
Not done: PyTorch also records each op's forward traceback and prints it with the error;
clgrad keeps no forward tracebacks. Fused activation backwards (``graph._absorb``) are not
fused while the mode is on, so every Node's own gradients are checked.
"""
from __future__ import annotations

import functools

# [enabled, check_nan]: read by clgrad/autograd/graph.py's _apply and _run
STATE = [False, True]


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on (``set_detect_anomaly``/``detect_anomaly``)."""
    return STATE[0]


def is_anomaly_check_nan_enabled() -> bool:
    """True while anomaly detection also checks backward results for NaN."""
    return STATE[0] and STATE[1]


class set_detect_anomaly:
    """Turn anomaly detection on or off (``mode``): at once, and, used as a context manager,
    until the block ends (the previous setting is restored on exit), as PyTorch's.
    ``check_nan``: raise RuntimeError naming the backward Node that returned a NaN gradient."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = tuple(STATE)
        STATE[0], STATE[1] = bool(mode), bool(check_nan)

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        STATE[0], STATE[1] = self.prev
        return False


class detect_anomaly:
    """Context manager and decorator enabling anomaly detection inside it (PyTorch's):
    a backward run within it raises RuntimeError at the first Node whose backward returns a
    NaN gradient (``check_nan=True``), naming the Node and the output index."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)
        self.prev = None

    def __enter__(self):
        self.prev = tuple(STATE)
        STATE[0], STATE[1] = True, self.check_nan
        return None

    def __exit__(self, *exc):
        STATE[0], STATE[1] = self.prev
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


def check_nan(node, grads) -> None:
    """RuntimeError (PyTorch's message) when one of ``grads`` (a Node's backward results, per
    input; None where none) holds a NaN."""
    for i, ig in enumerate(grads):
        if ig is None or not ig.dtype.is_floating_point or not ig.numel():
            continue
        if bool(ig.isnan().any()):
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               f"output.")
