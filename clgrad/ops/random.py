"""In-place random fills (PyTorch's Tensor.normal_/uniform_/exponential_/bernoulli_) and
torch.bernoulli / torch.normal / torch.multinomial.

Samples come from clgrad's generator (``clgrad.manual_seed``; clgrad.creation) or the
``generator=`` given (a ``clgrad.Generator``), drawn on the
host in float64 and uploaded, so a seed gives the same numbers on every device. The streams
are NumPy's (PCG64), not PyTorch's: the same seed gives other numbers than in PyTorch.
The fills write through ``copy_``: any view works, the version counter moves, and the autograd
rules of in-place writes apply (a leaf that requires grad needs ``no_grad()``; the filled
region's old value gets no gradient).
"""
from __future__ import annotations

import numpy as np

from clgrad import dtypes, layout
from clgrad.creation import _float_dtype, rng, tensor
from clgrad.ops import elementwise as ew
from clgrad.ops import inplace as ip
from clgrad.tensor import Tensor

__all__ = ["normal_", "uniform_", "exponential_", "bernoulli_", "random_", "bernoulli", "normal",
           "multinomial"]


def _float_target(op, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{op}: expected a floating point tensor, got {x.dtype}")


def _fill(x: Tensor, host) -> Tensor:
    return ip.copy_(x, tensor(host, dtype=x.dtype, device=x._storage.device))


def bf16_unit(u):
    """bfloat16's uniform [0, 1) samples from float64 ones ``u``: the multiples of 2^-8 below
    1 (PyTorch's uniform of bfloat16: its 8 significant bits; rounding u itself to nearest
    would give 1.0 for u >= 1 - 2^-9)."""
    return np.floor(u * 256.0) / 256.0


def normal_(x: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill ``x`` with samples of N(mean, std^2). Raises RuntimeError for std < 0."""
    _float_target("normal_", x)
    if std < 0:
        raise RuntimeError(f"normal_: expected std >= 0.0, got {std}")
    return _fill(x, rng(generator, "normal_").normal(mean, std, tuple(x.shape)))


def uniform_(x: Tensor, a: float = 0.0, b: float = 1.0, generator=None, **kw) -> Tensor:
    """Fill ``x`` with samples of U[a, b) (PyTorch's names ``from``/``to`` work as keywords).
    Raises RuntimeError for a > b."""
    _float_target("uniform_", x)
    a, b = kw.pop("from", a), kw.pop("to", b)
    if kw:
        raise TypeError(f"uniform_: unexpected keyword arguments {sorted(kw)}")
    if a > b:
        raise RuntimeError(f"uniform_: expected from <= to, got from={a} > to={b}")
    if x.dtype is dtypes.bfloat16:  # PyTorch's: a + (b - a) u, u a bfloat16 unit sample
        u = bf16_unit(rng(generator, "uniform_").random(tuple(x.shape)))
        return _fill(x, (u * (b - a) + a).astype(np.float32))
    return _fill(x, rng(generator, "uniform_").uniform(a, b, tuple(x.shape)))


def exponential_(x: Tensor, lambd: float = 1.0, generator=None) -> Tensor:
    """Fill ``x`` with samples of the exponential distribution of rate ``lambd``
    (density lambd * exp(-lambd * v)). Raises RuntimeError for lambd <= 0."""
    _float_target("exponential_", x)
    if not lambd > 0:
        raise RuntimeError(f"exponential_: expected lambd > 0.0, got {lambd}")
    return _fill(x, rng(generator, "exponential_").exponential(1.0 / lambd, tuple(x.shape)))


_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}  # significand bits


def random_(x: Tensor, *args, generator=None, **kw) -> Tensor:
    """Fill ``x`` (any dtype) with integers drawn uniformly, PyTorch's three forms:

    ``random_()``           [0, 2^d] for a floating dtype with d significand bits (2^24 for
                            float32, 2^53 float64, 2^11 float16, 2^8 bfloat16), [0, max] for an
                            integer dtype (bool: 0 or 1)
    ``random_(to)``         [0, to - 1]
    ``random_(from, to)``   [from, to - 1]; ``to=None``: [from, the bound of random_()]

    ``from``/``to`` also work as keywords (``**{'from': 1}``, ``to=5``).
    Raises:  RuntimeError unless from < to, or (integer dtypes) for bounds outside the dtype's
             range; TypeError for non-int bounds or more than two of them
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"random_: expected a Tensor, got {type(x).__name__}")
    if len(args) > 2:
        raise TypeError(f"random_: expected at most 2 bounds (from, to), got {len(args)}")
    lo, hi = (0, args[0]) if len(args) == 1 else (tuple(args) + (0, None)[len(args):])
    if "from" in kw or "from_" in kw:
        if len(args) == 1:  # random_(to, from=...)
            raise TypeError("random_: got 'from' as a keyword with a positional 'to'")
        lo = kw.pop("from", None) if "from" in kw else kw.pop("from_")
    if "to" in kw:
        if len(args) == 1 or len(args) == 2:
            raise TypeError("random_: got 'to' both positionally and as a keyword")
        hi = kw.pop("to")
    if kw:
        raise TypeError(f"random_: unexpected keyword arguments {sorted(kw)}")
    for name, v in (("from", lo), ("to", hi)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
            raise TypeError(f"random_: expected an int '{name}', got {type(v).__name__}")
    lo = int(lo)
    if x.dtype.is_floating_point:
        top, bottom = 2 ** _DIGITS[x.dtype.name], -2 ** _DIGITS[x.dtype.name]
    elif x.dtype is dtypes.bool_:
        top, bottom = 1, 0
    else:
        info = np.iinfo(x.dtype.np)
        top, bottom = int(info.max), int(info.min)
    if hi is None:
        hi_inc = top
        if lo >= hi_inc:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or "
                               f"equal to 'to_inc' casted to dtype, but got from={lo} > "
                               f"to_inc={hi_inc}")
    else:
        hi_inc = int(hi) - 1
        if lo > hi_inc:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got "
                               f"from={lo} >= to={int(hi)}")
    if not x.dtype.is_floating_point and not (bottom <= lo and hi_inc <= top):
        raise RuntimeError(f"random_: [from, to - 1] = [{lo}, {hi_inc}] is out of bounds for "
                           f"{x.dtype.name} [{bottom}, {top}]")
    draws = rng(generator, "random_").integers(lo, hi_inc, tuple(x.shape), dtype=np.int64,
                                               endpoint=True)
    return _fill(x, draws.astype(np.float64) if x.dtype.is_floating_point else draws)


def bernoulli_(x: Tensor, p=0.5, generator=None) -> Tensor:
    """Fill ``x`` (any dtype) with 1 with probability ``p`` (a number, or a tensor broadcast
    to x), else 0. Raises RuntimeError for a number p outside [0, 1]."""
    if not isinstance(x, Tensor):
        raise TypeError(f"bernoulli_: expected a Tensor, got {type(x).__name__}")
    if not isinstance(p, Tensor) and not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_: expected 0 <= p <= 1, got {p}")
    u = tensor(rng(generator, "bernoulli_").random(tuple(x.shape)), dtype=_prob_dtype(p, x),
               device=x._storage.device)
    if isinstance(p, Tensor) and p.dtype is dtypes.bfloat16:
        p = ew.to(p, dtypes.float32)  # (exact)
    return ip.copy_(x, ew.to(ew.lt(u, p), x.dtype))


def bernoulli(probs: Tensor, p=None, generator=None) -> Tensor:
    """A new tensor of probs' shape and dtype: 1 with probability ``probs`` (elementwise;
    or the number ``p`` when given), else 0. No gradient (as PyTorch)."""
    _float_target("bernoulli", probs)
    out = ew.clone(probs.detach())
    return bernoulli_(out, probs.detach() if p is None else p, generator)


def normal(mean, std=1.0, size=None, generator=None, dtype=None, device=None,
           requires_grad=False) -> Tensor:
    """Samples of N(mean, std^2): ``normal(mean: float, std: float, size)`` (a leaf that
    requires grad with ``requires_grad=True``, as d2l's ``init_params`` makes its weights),
    or elementwise with a tensor mean and/or std (broadcast). No gradient flows to mean or
    std. Raises TypeError for requires_grad with a tensor mean or std (PyTorch's overloads
    take it only with a size)."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        if requires_grad:
            raise TypeError("normal: requires_grad is an argument of normal(mean: float, "
                            "std: float, size) only, not of a tensor mean or std")
        ref = mean if isinstance(mean, Tensor) else std
        if ref.dtype is dtypes.bfloat16:  # in float32, rounded once
            return ew.via_float32(normal, mean, std, size, generator, dtype, device)
        shape = layout.broadcast_shapes(*[tuple(v.shape) for v in (mean, std)
                                          if isinstance(v, Tensor)], op="normal")
        z = tensor(rng(generator, "normal").standard_normal(shape), dtype=ref.dtype,
                   device=ref._storage.device)
        m = mean.detach() if isinstance(mean, Tensor) else mean
        s = std.detach() if isinstance(std, Tensor) else std
        return ew.add(ew.mul(z, s), m)
    if size is None:
        raise TypeError("normal: expected a size when mean and std are numbers")
    dt = _float_dtype(dtype, "normal")  # (an integer dtype raises, as PyTorch)
    return tensor(rng(generator, "normal").normal(mean, std, tuple(size)), dtype=dt,
                  device=device, requires_grad=requires_grad)


def _prob_dtype(p, x):
    """The dtype bernoulli_ draws and compares in: p's or x's floating one, float32 for
    bfloat16 (and for integer ones)."""
    if isinstance(p, Tensor) and p.dtype.is_floating_point:
        return p.dtype if p.dtype is not dtypes.bfloat16 else dtypes.float32
    return x.dtype if x.dtype.is_floating_point and x.dtype is not dtypes.bfloat16 else \
        dtypes.float32


def multinomial(input: Tensor, num_samples: int, replacement: bool = False,
                generator=None) -> Tensor:
    """Indices of categories drawn from each row of ``input``, a row of non-negative weights
    (PyTorch's torch.multinomial; the weights need not sum to 1): with ``replacement`` each
    draw is independent, with probability weight / row sum; without it each category is drawn
    at most once, each draw from the categories not yet drawn, in proportion to their weights
    (categories of weight 0 come only once the others are exhausted, as PyTorch's).

    Sampled on the host: the weights are read back and the draws made in float64 from
    clgrad's generator (``clgrad.manual_seed`` or ``generator=``), so a seed gives the same
    indices on every device (not PyTorch's numbers). With replacement: the inverse of each
    row's cumulative sums at uniform draws; without: the ``num_samples`` largest of
    weight / E, E ~ Exp(1) (the exponential-clocks race, PyTorch's own algorithm).

    Shapes:  input (C,) -> (num_samples,); (R, C) -> (R, num_samples). Result int64, on
             input's device. No gradient.
    Raises:  RuntimeError (PyTorch's messages) for an input not 1- or 2-dim, not floating,
             a weight that is negative, inf or NaN, a row summing to 0, num_samples <= 0, or
             num_samples > C without replacement; TypeError for a num_samples that is not an
             int.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial: expected a Tensor, got {type(input).__name__}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise TypeError(f"multinomial(): argument 'num_samples' (position 2) must be int, not "
                        f"{type(num_samples).__name__}")
    num_samples = int(num_samples)
    if input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{dtypes.torch_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    cats = input.shape[-1]
    if cats == 0:
        raise RuntimeError(f"multinomial: expected input with at least one category, got "
                           f"shape {list(input.shape)}")
    if not replacement and num_samples > cats:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    if cats > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    w = input.detach().to(dtypes.float32 if input.dtype is dtypes.bfloat16 else
                          input.dtype).numpy().astype(np.float64).reshape(-1, cats)
    dev = input._storage.device
    if w.shape[0] == 0:
        return tensor(np.zeros((0, num_samples), np.int64), device=dev)
    if not np.isfinite(w).all() or (w < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = w.sum(axis=1)
    if not (total > 0).all():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    g = rng(generator, "multinomial")
    rows = w.shape[0]
    if replacement:
        cdf = np.cumsum(w, axis=1)
        u = g.random((rows, num_samples)) * cdf[:, -1:]
        idx = np.empty((rows, num_samples), np.int64)
        for r in range(rows):  # first category whose cumulative sum exceeds u: never a zero one
            idx[r] = np.searchsorted(cdf[r], u[r], side="right")
        last = cats - 1 - np.argmax(w[:, ::-1] > 0, axis=1)  # (u rounding up to the total)
        idx = np.minimum(idx, last[:, None])
    else:
        e = g.exponential(1.0, (rows, cats))
        keys = np.where(w > 0, w / e, -e)  # zero weights: after every positive one, at random
        idx = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples].astype(np.int64)
    if input.ndim == 1:
        idx = idx.reshape(num_samples)
    return tensor(idx, dtype=dtypes.int64, device=dev)
