"""Test helper: the same values as a NumPy array and as a non-contiguous clgrad view.

``strided_pair(draw, shape, dtype)`` draws a layout recipe with hypothesis (a storage offset,
a permuted storage order, steps, negative steps, stride-0 broadcast dims) and returns
``(array, tensor)`` holding equal values of ``shape``. The tensor is a view into a larger
storage, so every kernel must honour offset and strides to read it right.

Also fixed layouts for op tests: ``strided(a)`` (a non-contiguous view of ``a``),
``leaf_and_view(a)``, and ``numeric_vjp`` (central differences of a NumPy reference).
"""
import math

import numpy as np
from hypothesis import strategies as st

import clgrad

NP = {clgrad.float32: np.float32, clgrad.float64: np.float64, clgrad.int64: np.int64,
      clgrad.int32: np.int32, clgrad.bool: np.bool_, clgrad.float16: np.float16,
      clgrad.uint8: np.uint8, clgrad.int16: np.int16}


def values(rng, shape, dtype, kind="normal"):
    """Host values: 'normal' (floats in [-2, 2], ints in [-9, 9]), 'positive' (floats in
    [0.5, 2.5], ints in [1, 9]) or 'distinct' (a shuffled arange: no ties)."""
    n = math.prod(shape)
    np_dt = NP[dtype]
    if kind == "distinct":
        v = rng.permutation(n).astype(np.float64)
        if np.issubdtype(np_dt, np.floating):
            v = v * 0.37 - n * 0.1
        return v.astype(np_dt).reshape(shape)
    if np_dt is np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(np_dt, np.integer):
        lo, hi = (1, 10) if kind == "positive" else (-9, 10)
        return rng.integers(lo, hi, size=shape).astype(np_dt)
    lo, hi = (0.5, 2.5) if kind == "positive" else (-2.0, 2.0)
    return rng.uniform(lo, hi, size=shape).astype(np_dt)


def layout_from(draw, ndim, broadcast=True):
    """A recipe: storage offset, storage order, per-dim (step, start, broadcast)."""
    offset = draw(st.integers(0, 3), label="offset")
    order = draw(st.permutations(range(ndim)), label="order")
    dims = []
    for _ in range(ndim):
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2]), label="step")
        start = draw(st.integers(0, 1), label="start")
        bc = broadcast and draw(st.integers(0, 5), label="bcast") == 0
        dims.append((step, start, bc))
    return offset, order, dims


def make_strided(host: np.ndarray, recipe, dtype):
    """A clgrad view with ``host``'s values laid out as ``recipe`` says."""
    offset, order, dims = recipe
    shape = host.shape
    dims = [(step, start, bc and n > 0) for n, (step, start, bc) in zip(shape, dims)]
    # the storage, in logical dim order, with room for steps, starts and broadcasts
    big = [1 if bc else n * abs(step) + start for n, (step, start, bc) in zip(shape, dims)]
    key, src = [], []
    for n, (step, start, bc) in zip(shape, dims):
        if bc:
            key.append(slice(0, 1))
            src.append(slice(0, 1))
        elif n == 0:
            key.append(slice(0, 0))
            src.append(slice(None))
        elif step > 0:
            key.append(slice(start, start + n * step, step))
            src.append(slice(None))
        else:
            first = start + (n - 1) * abs(step)
            key.append(slice(first, first - n * abs(step) if first - n * abs(step) >= 0
                             else None, step))
            src.append(slice(None))
    filler = np.zeros(big, dtype=host.dtype)
    filler[tuple(key)] = host[tuple(src)]
    stored = filler.transpose(order).copy(order="C")     # storage in a permuted order
    flat = np.concatenate([np.zeros(offset, host.dtype), stored.reshape(-1)])
    t = clgrad.tensor(flat, dtype=dtype)[offset:].view(stored.shape)
    inv = list(np.argsort(order))
    t = t.permute(*inv)[tuple(key)]
    return t.expand(*shape) if any(bc for *_, bc in dims) else t


@st.composite
def strided_pair(draw, shape, dtype, kind="normal", broadcast=True):
    """(array, tensor) of ``shape``; the tensor a non-contiguous view with equal values."""
    recipe = layout_from(draw, len(shape), broadcast)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed"))
    host = values(rng, shape, dtype, kind)
    # broadcast dims hold one value along that dim
    for d, (_, _, bc) in enumerate(recipe[2]):
        if bc and host.size:
            host = np.repeat(np.take(host, [0], axis=d), shape[d], axis=d)
    t = make_strided(host, recipe, dtype)
    assert tuple(t.shape) == tuple(shape)
    return host, t


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5):
    return st.lists(st.integers(min_side, max_side), min_size=min_dims, max_size=max_dims) \
        .map(tuple)


@st.composite
def broadcastable_shapes(draw, shape):
    """A shape that broadcasts against ``shape``: some leading dims dropped, some set to 1."""
    k = draw(st.integers(0, len(shape)))
    out = [1 if draw(st.integers(0, 3)) == 0 else n for n in shape[k:]]
    return tuple(out)


def strided(a, dtype=clgrad.float64):
    """A non-contiguous view holding ``a``: offset 1, dims stored in reverse order, last dim
    stepped by 2 (a 0-dim ``a`` gives a 0-dim view at offset 1)."""
    a = np.asarray(a, dtype=np.float64)
    if a.ndim == 0:
        return clgrad.tensor([0.0, float(a)], dtype=dtype)[1]
    big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],))
    big[..., ::2] = a
    flat = np.concatenate([[0.0], big.transpose().reshape(-1)])
    t = clgrad.tensor(flat, dtype=dtype)[1:].view(big.shape[::-1])
    return t.permute(*reversed(range(a.ndim)))[..., ::2]


def leaf_and_view(a):
    """A float64 leaf that requires grad and a function giving its non-contiguous view."""
    rev = tuple(reversed(range(a.ndim)))
    leaf = clgrad.tensor(np.ascontiguousarray(np.transpose(a, rev)), dtype=clgrad.float64,
                         requires_grad=True)
    return leaf, lambda t: t.permute(*rev)


def numeric_vjp(f, x, g, h=1e-6, points=2):
    """sum(g * df/dx) by central differences of the NumPy reference ``f``: ``points`` 2 (error
    about eps * |f| / h from rounding: 1e-9 for |f| ~ 5 at h = 1e-6) or 4 (the five-point
    stencil (-f(x+2h) + 8 f(x+h) - 8 f(x-h) + f(x-2h)) / 12h, truncation O(h^4): with h = 1e-4
    about 1e-11 from rounding, for smooth ``f`` only: it reads f within 2h of x)."""
    out = np.zeros_like(x)
    for i in np.ndindex(*x.shape):
        def at(d):
            xd = x.copy()
            xd[i] += d
            return f(xd)
        if points == 4:
            out[i] = ((8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) * g).sum() / (12 * h)
        else:
            out[i] = ((at(h) - at(-h)) * g).sum() / (2 * h)
    return out
