"""Printing tensors as PyTorch does: ``str``/``repr``, ``format`` and ``set_printoptions``.

A port of PyTorch's torch/_tensor_str.py (BSD licence) working on the host copy of the values:
4 decimals, fixed or scientific notation chosen per tensor (scientific when the largest
nonzero finite magnitude is over 1e8, the smallest under 1e-4, or their ratio over 1000),
integral floats printed as ``1.``, summaries with ``...`` past ``threshold`` elements
(``edgeitems`` each side), lines wrapped at ``linewidth``, then the suffixes: ``device=`` for
tensors off the CPU device, ``dtype=`` for dtypes other than the default dtype
(``get_default_dtype()``), int64 and bool (for empty tensors: other than the default dtype),
``size=`` for empty tensors that are not 1-d, ``grad_fn=<...Backward0>`` with
PyTorch's node names, else ``requires_grad=True``.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from clgrad import dtypes
from clgrad.autograd.graph import grad_fn_name

__all__ = ["set_printoptions", "get_printoptions", "printoptions", "tensor_repr",
           "tensor_format", "grad_fn_name"]


@dataclasses.dataclass
class _PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrinterOptions()


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Set options for printing tensors (PyTorch's ``torch.set_printoptions``).

    ``precision`` digits after the point (4); ``threshold`` element count past which tensors
    are summarised (1000); ``edgeitems`` items kept at each end of a summarised dim (3);
    ``linewidth`` characters per line (80); ``profile`` 'default' | 'short' | 'full' sets the
    four first (others then override); ``sci_mode`` True/False forces scientific/fixed
    notation, None (the default, reset by every call as in PyTorch) chooses per tensor.
    Raises ValueError for an unknown profile.
    """
    if profile is not None:
        presets = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80),
                   "full": (4, math.inf, 3, 80)}
        if profile not in presets:
            raise ValueError(f"set_printoptions: expected profile 'default', 'short' or "
                             f"'full', got {profile!r}")
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = presets[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current print options as a dict that ``set_printoptions(**d)`` takes."""
    return dataclasses.asdict(PRINT_OPTS)


class printoptions:  # noqa: N801  (PyTorch's name)
    """``with printoptions(precision=2):`` sets print options inside the block only."""

    def __init__(self, **kwargs):
        self._new, self._old = kwargs, None

    def __enter__(self):
        self._old = get_printoptions()
        set_printoptions(**self._new)
        return self

    def __exit__(self, *exc):
        set_printoptions(**self._old)
        return False


# -------------------------------------------------------------------------- the formatter
class _Formatter:
    """Width and notation for every element of one tensor (from its summarised values)."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating_dtype = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        p = PRINT_OPTS.precision
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        nz = flat[np.isfinite(flat) & (flat != 0)]
        if nz.size == 0:
            return
        nz_abs = np.abs(nz.astype(np.float64))
        lo, hi = float(nz_abs.min()), float(nz_abs.max())
        vals = nz.tolist()
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
                         if PRINT_OPTS.sci_mode is None else PRINT_OPTS.sci_mode)
        if self.sci_mode:
            widths = (len(f"{v:.{p}e}") for v in vals)
        elif self.int_mode:
            widths = (len(f"{v:.0f}") + 1 for v in vals)
        else:
            widths = (len(f"{v:.{p}f}") for v in vals)
        self.max_width = max(self.max_width, max(widths))

    def width(self) -> int:
        """Characters of the widest element seen (every element is padded to it)."""
        return self.max_width

    def format(self, value) -> str:
        """``value`` as PyTorch prints it (precision, sci or int mode), right-aligned."""
        if self.floating_dtype:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _edges_on_device(t) -> np.ndarray:
    """The host copy of only what a summarised print shows: along every dim longer than
    2 * edgeitems, its first and last edgeitems entries (cut on the device, so printing a
    large GPU tensor copies a few numbers, not all of them)."""
    from clgrad.ops.index import cat
    e = PRINT_OPTS.edgeitems
    x = t.detach()
    for d, n in enumerate(x.shape):
        if n > 2 * e:
            x = cat([x.narrow(d, 0, e), x.narrow(d, n - e, e)], d)
    return x._values()


def _cut(shape, summarize) -> bool:
    return summarize and shape[0] > 2 * PRINT_OPTS.edgeitems


def _vector_str(a, n, indent, summarize, fmt):
    """``a``: the values shown of a vector of ``n`` elements (its edges when summarised)."""
    element_length = fmt.width() + 2
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif _cut((n,), summarize):
        data = ([fmt.format(v) for v in a[:e].tolist()] + [" ..."]
                + [fmt.format(v) for v in a[e:].tolist()])
    else:
        data = [fmt.format(v) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with(a, shape, indent, summarize, fmt):
    """``a``: the values shown of a tensor of ``shape`` (each cut dim holds its 2 * edgeitems
    edge entries only)."""
    if not shape:
        return fmt.format(a.item())
    if len(shape) == 1:
        return _vector_str(a, shape[0], indent, summarize, fmt)
    e, inner = PRINT_OPTS.edgeitems, shape[1:]
    if _cut(shape, summarize):
        slices = ([_str_with(a[i], inner, indent + 1, summarize, fmt) for i in range(e)]
                  + ["..."] + [_str_with(a[i], inner, indent + 1, summarize, fmt)
                               for i in range(e, 2 * e)])
    else:
        slices = [_str_with(a[i], inner, indent + 1, summarize, fmt)
                  for i in range(shape[0])]
    return "[" + ("," + "\n" * (len(shape) - 1) + " " * (indent + 1)).join(slices) + "]"


def _values_str(t, indent: int) -> str:
    shape = tuple(t.shape)
    if t.numel() == 0:
        return "[]"
    summarize = t.numel() > PRINT_OPTS.threshold
    a = _edges_on_device(t) if summarize else t.detach()._values()
    fmt = _Formatter(a, t.dtype.is_floating_point)
    return _str_with(a, shape, indent, summarize, fmt)


def _add_suffixes(body, suffixes, indent):
    out = [body]
    last = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > PRINT_OPTS.linewidth:
            out.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            out.append(", " + s)
            last += len(s) + 2
    out.append(")")
    return "".join(out)


# --------------------------------------------------------------------------- entry points
def tensor_repr(t) -> str:
    """``repr(t)`` / ``str(t)`` as PyTorch prints them (see the module docstring)."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    dev = str(t.device)
    if dev != "cpu":
        suffixes.append(f"device='{dev}'")
    dflt = dtypes.get_default_dtype()  # (PyTorch's rule: relative to the current default)
    default_dtype = t.dtype is dflt or t.dtype is dtypes.int64 or t.dtype is dtypes.bool_
    if dev == "meta":  # no data to print (clgrad/runtime/meta.py): PyTorch's form
        suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not dflt:
            suffixes.append(f"dtype={t.dtype!r}")
        body = "..."
    elif t.numel() == 0:
        if t.ndim != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if t.dtype is not dflt:
            suffixes.append(f"dtype={t.dtype!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t.shape)}")
        if not default_dtype:
            suffixes.append(f"dtype={t.dtype!r}")
        body = _values_str(t, indent)
    fn = t.grad_fn
    if fn is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name(fn, t.ndim)}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


def tensor_format(t, spec: str) -> str:
    """``format(t, spec)`` / f-strings: a 0-dim tensor formats its value (``f"{loss:.4f}"``),
    any other tensor gives its ``str`` for an empty spec and raises TypeError otherwise
    (PyTorch's Tensor.__format__)."""
    if t.ndim == 0:
        return t.item().__format__(spec)
    if spec:
        raise TypeError(f"unsupported format string passed to Tensor.__format__: {spec!r} "
                        f"(only 0-dim tensors format their value; shape {tuple(t.shape)})")
    return str(t)
