"""Views against NumPy: random base shapes, random chains of view ops, then writes through them.

Each op is drawn as a pair (NumPy function, clgrad function). NumPy views are rebuilt as
writable ndarrays over the same host buffer (``_rebase``), so a write through the last NumPy
view lands in the NumPy "storage" exactly where a write through the clgrad view must land in
the clgrad storage. Reshapes are checked against a brute-force oracle that says whether ANY
strided view of the new shape addresses the same elements in the same order.
"""
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.lib.stride_tricks import as_strided as np_as_strided
from numpy.lib.stride_tricks import sliding_window_view

import clgrad
from clgrad.tensor import Tensor

DTYPES = {"int64": (np.int64, clgrad.int64), "float32": (np.float32, clgrad.float32)}
MAX_NDIM = 6


def examples(n: int) -> int:
    """``n`` hypothesis examples, or CLGRAD_HYPOTHESIS_EXAMPLES when set (for a long soak)."""
    return int(os.environ.get("CLGRAD_HYPOTHESIS_EXAMPLES", n))


# -- oracles ----------------------------------------------------------------------------------
def _addresses(shape, strides):
    """Element addresses (relative) of a strided layout in row-major order of ``shape``."""
    if not shape:
        return np.zeros(1, dtype=np.int64)
    idx = np.indices(shape, dtype=np.int64).reshape(len(shape), -1)
    return (np.asarray(strides, dtype=np.int64)[:, None] * idx).sum(0)


def view_oracle(shape, strides, new_shape):
    """Strides of a view of (shape, strides) as new_shape (None for size-1 dims), or False."""
    if math.prod(shape) == 0:
        return (None,) * len(new_shape)
    addrs = _addresses(shape, strides)
    out = []
    for j, m in enumerate(new_shape):
        out.append(None if m == 1 else int(addrs[math.prod(new_shape[j + 1:])] - addrs[0]))
    got = _addresses(new_shape, [s or 0 for s in out])
    return tuple(out) if np.array_equal(got, addrs - addrs[0]) else False


def overlaps(shape, strides) -> bool:
    a = _addresses(shape, strides) if math.prod(shape) else np.zeros(0)
    return len(np.unique(a)) < len(a)


def _np_offset(v: np.ndarray, storage: np.ndarray) -> int:
    return (v.__array_interface__["data"][0] - storage.__array_interface__["data"][0]) \
        // storage.itemsize


def _rebase(v: np.ndarray, storage: np.ndarray) -> np.ndarray:
    """A writable ndarray over ``storage``'s buffer with ``v``'s layout (v lies in storage)."""
    if v.size == 0:
        return np.ndarray(v.shape, storage.dtype)
    return np.ndarray(v.shape, storage.dtype, buffer=storage, offset=_np_offset(v, storage)
                      * storage.itemsize, strides=v.strides)


def _strided(storage: np.ndarray, shape, strides, offset) -> np.ndarray:
    """A writable ndarray over ``storage`` with an element layout."""
    if math.prod(shape) == 0:
        return np.ndarray(shape, storage.dtype)
    return np.ndarray(shape, storage.dtype, buffer=storage, offset=offset * storage.itemsize,
                      strides=[s * storage.itemsize for s in strides])


def _elem_strides(v: np.ndarray):
    return tuple(s // v.itemsize for s in v.strides)


def assert_same_layout(n: np.ndarray, t: Tensor, storage: np.ndarray, what=""):
    assert tuple(t.shape) == n.shape, what
    if n.size == 0:
        return
    for d, (size, sn, sc) in enumerate(zip(n.shape, _elem_strides(n), t.stride())):
        if size > 1:
            assert sn == sc, f"{what}: stride of dim {d}: numpy {_elem_strides(n)}, " \
                             f"clgrad {t.stride()}, shape {n.shape}"
    assert t.storage_offset() == _np_offset(n, storage), what


def storage_values(t: Tensor) -> np.ndarray:
    st_ = t.untyped_storage()
    return Tensor(st_, (st_.size,), (1,), 0).numpy()


# -- drawing one op for the current shape -----------------------------------------------------
def _dim(data, nd):
    return data.draw(st.integers(-nd, nd - 1), label="dim")


def _index_key(data, shape):
    nd = len(shape)
    k = data.draw(st.integers(0, nd), label="n_indexed")
    ell = data.draw(st.one_of(st.none(), st.integers(0, k)), label="ellipsis_at")
    dims = list(range(k)) if ell is None else list(range(ell)) + list(range(nd - (k - ell), nd))
    parts = []
    for d in dims:
        n = shape[d]
        if n > 0 and data.draw(st.booleans(), label="int?"):
            i = data.draw(st.integers(-n, n - 1), label="int")
            parts.append(np.int64(i) if data.draw(st.booleans(), label="np_int") else i)
        else:
            b = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            parts.append(slice(data.draw(b, label="start"), data.draw(b, label="stop"),
                               data.draw(st.sampled_from([None, 1, 2, 3, -1, -2]), label="step")))
    if ell is not None:
        parts.insert(ell, Ellipsis)
    for _ in range(data.draw(st.integers(0, 2 if nd < MAX_NDIM - 1 else 0), label="n_none")):
        parts.insert(data.draw(st.integers(0, len(parts)), label="none_at"), None)
    return tuple(parts) if len(parts) != 1 or data.draw(st.booleans()) else parts[0]


def _new_shape(data, n):
    """A shape with n elements, sometimes with one -1."""
    k = data.draw(st.integers(0 if n == 1 else 1, 4), label="new_ndim")
    if n == 0:
        shape = [data.draw(st.integers(0, 3)) for _ in range(k)]
        shape[data.draw(st.integers(0, k - 1))] = 0
        return tuple(shape)
    shape, rest = [], n
    for _ in range(k - 1):
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        shape.append(data.draw(st.sampled_from(divs)))
        rest //= shape[-1]
    shape.append(rest)
    shape = data.draw(st.permutations(shape))
    if shape and data.draw(st.booleans(), label="infer"):
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    return tuple(shape)


def _resolve(shape, n):
    if -1 in shape:
        rest = math.prod(s for s in shape if s != -1)
        return tuple(n // rest if s == -1 else s for s in shape)
    return tuple(shape)


def _np_index(a, key):
    """a[key] as an array view (NumPy returns a scalar copy when every dim gets an int)."""
    key = key if isinstance(key, tuple) else (key,)
    return a[key if Ellipsis in key else key + (Ellipsis,)]


def _piece_bounds(n, step):
    return [(i, min(step, n - i)) for i in range(0, n, step)] or [(0, 0)]


def draw_op(data, shape, storage_size):
    """(description, kind, numpy_fn, clgrad_fn).

    kind: 'view' (NumPy's op is a view too), 'view_op' (view/unflatten: a view or
    RuntimeError), 'reshape' (a view exactly when one exists, else a copy), 'as_strided'.
    """
    nd = len(shape)
    names = ["getitem", "permute", "T", "unsqueeze", "squeeze", "expand", "as_strided",
             "reshape", "view", "flatten"]
    if nd >= 1:
        names += ["narrow", "select", "transpose", "split", "chunk", "unbind", "unfold",
                  "movedim", "unflatten"]
    if nd <= 2:
        names.append("t")
    if nd >= 2:
        names += ["mT", "diagonal"]
    if nd >= MAX_NDIM:
        names = [n for n in names if n not in ("unsqueeze", "unfold", "expand", "as_strided",
                                              "unflatten", "getitem", "diagonal")]
    name = data.draw(st.sampled_from(names), label="op")
    every = (slice(None),)

    if name == "getitem":
        key = _index_key(data, shape)
        return f"[{key!r}]", "view", lambda a: _np_index(a, key), lambda t: t[key]
    if name == "narrow":
        d = _dim(data, nd)
        n = shape[d]
        start = data.draw(st.integers(-n, n) if n else st.just(0))
        s0 = start + n if start < 0 else start
        length = data.draw(st.integers(0, n - s0))
        return (f"narrow({d}, {start}, {length})", "view",
                lambda a: a[every * (d % nd) + (slice(s0, s0 + length),)],
                lambda t: t.narrow(d, start, length))
    if name == "select":
        d = _dim(data, nd)
        if shape[d] == 0:
            return "noop", "view", lambda a: a, lambda t: t
        i = data.draw(st.integers(-shape[d], shape[d] - 1))
        return (f"select({d}, {i})", "view", lambda a: a[every * (d % nd) + (i, ...)],
                lambda t: t.select(d, i))
    if name in ("view", "reshape"):
        new = _new_shape(data, math.prod(shape))
        return (f"{name}{new}", "view_op" if name == "view" else "reshape",
                lambda a: a.reshape(new), lambda t: getattr(t, name)(*new))
    if name == "flatten":
        if nd == 0:
            return "flatten()", "reshape", lambda a: a.reshape(1), lambda t: t.flatten()
        s = _dim(data, nd)
        e = data.draw(st.integers(s % nd, nd - 1))
        new = shape[:s % nd] + (math.prod(shape[s % nd:e + 1]),) + shape[e + 1:]
        return (f"flatten({s}, {e})", "reshape", lambda a: a.reshape(new),
                lambda t: t.flatten(s, e))
    if name == "unflatten":
        d = _dim(data, nd)
        sizes = _new_shape(data, shape[d])
        if not sizes:
            sizes = (1,)
        full = shape[:d % nd] + _resolve(sizes, shape[d]) + shape[d % nd + 1:]
        return (f"unflatten({d}, {sizes})", "view_op", lambda a: a.reshape(full),
                lambda t: t.unflatten(d, sizes))
    if name == "permute":
        perm = tuple(data.draw(st.permutations(range(nd))))
        neg = tuple(p - nd if data.draw(st.booleans()) else p for p in perm)
        return f"permute{neg}", "view", lambda a: a.transpose(perm), lambda t: t.permute(*neg)
    if name == "transpose":
        d0, d1 = _dim(data, nd), _dim(data, nd)
        return (f"transpose({d0}, {d1})", "view", lambda a: np.swapaxes(a, d0, d1),
                lambda t: t.transpose(d0, d1))
    if name == "t":
        return ".t()", "view", lambda a: a.T, lambda t: t.t()
    if name == "T":
        return ".T", "view", lambda a: a.T, lambda t: t.T
    if name == "mT":
        return ".mT", "view", lambda a: np.swapaxes(a, -2, -1), lambda t: t.mT
    if name == "movedim":
        k = data.draw(st.integers(1, nd))
        src = data.draw(st.permutations(range(nd)))[:k]
        dst = data.draw(st.permutations(range(nd)))[:k]
        if k == 1 and data.draw(st.booleans()):
            src, dst = src[0], dst[0]
        return (f"movedim({src}, {dst})", "view", lambda a: np.moveaxis(a, src, dst),
                lambda t: t.movedim(src, dst))
    if name == "unsqueeze":
        d = data.draw(st.integers(-nd - 1, nd))
        return f"unsqueeze({d})", "view", lambda a: np.expand_dims(a, d), lambda t: t.unsqueeze(d)
    if name == "squeeze":
        if nd == 0 or data.draw(st.booleans()):
            return ("squeeze()", "view", lambda a: a.reshape([n for n in a.shape if n != 1]),
                    lambda t: t.squeeze())
        dims = tuple(sorted(set(data.draw(st.lists(st.integers(0, nd - 1), min_size=1,
                                                   max_size=nd)))))
        ones = tuple(d for d in dims if shape[d] == 1)
        arg = dims[0] if len(dims) == 1 else dims
        return (f"squeeze({arg})", "view", lambda a: np.squeeze(a, ones),
                lambda t: t.squeeze(arg))
    if name == "expand":
        lead = [data.draw(st.integers(0, 3)) for _ in range(data.draw(st.integers(0, 2)))]
        sizes = [data.draw(st.sampled_from([-1, 0, 1, 2, 3])) if n == 1 else
                 data.draw(st.sampled_from([-1, n])) for n in shape]
        target = tuple(lead) + tuple(n if s == -1 else s for s, n in zip(sizes, shape))
        args = tuple(lead + sizes)
        return (f"expand{args}", "view", lambda a: np.broadcast_to(a, target),
                lambda t: t.expand(*args))
    if name in ("split", "chunk", "unbind"):
        d = _dim(data, nd)
        n = shape[d]
        if name == "unbind":
            if n == 0:
                return "noop", "view", lambda a: a, lambda t: t
            i = data.draw(st.integers(0, n - 1))
            return (f"unbind({d})[{i}]", "view", lambda a: a[every * (d % nd) + (i, ...)],
                    lambda t: t.unbind(d)[i])
        if name == "chunk":
            chunks = data.draw(st.integers(1, 4))
            # (an empty dim: `chunks` empty pieces, as ATen's chunk)
            bounds = _piece_bounds(n, max(-(-n // chunks), 1)) if n else [(0, 0)] * chunks
            i = data.draw(st.integers(0, len(bounds) - 1))
            s0, ln = bounds[i]

            def cl_chunk(t):
                pieces = t.chunk(chunks, d)
                assert len(pieces) == len(bounds)
                return pieces[i]
            return (f"chunk({chunks}, {d})[{i}]", "view",
                    lambda a: a[every * (d % nd) + (slice(s0, s0 + ln),)], cl_chunk)
        if data.draw(st.booleans()) or n == 0:
            arg = data.draw(st.integers(1, 4))
            bounds = _piece_bounds(n, arg)
        else:
            cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=3)))
            arg = [b - a for a, b in zip([0] + cuts, cuts + [n])]
            bounds = list(zip(np.cumsum([0] + arg[:-1]).tolist(), arg))
        i = data.draw(st.integers(0, len(bounds) - 1))
        s0, ln = bounds[i]

        def cl_split(t):
            pieces = t.split(arg, d)
            assert [p.shape[d] for p in pieces] == [b[1] for b in bounds]
            return pieces[i]
        return (f"split({arg}, {d})[{i}]", "view",
                lambda a: a[every * (d % nd) + (slice(s0, s0 + ln),)], cl_split)
    if name == "unfold":
        d = _dim(data, nd)
        size = data.draw(st.integers(0, shape[d]))
        step = data.draw(st.integers(1, 3))
        return (f"unfold({d}, {size}, {step})", "view",
                lambda a: sliding_window_view(a, size, axis=d % nd)[every * (d % nd) +
                                                                   (slice(None, None, step),)],
                lambda t: t.unfold(d, size, step))
    if name == "diagonal":
        d1 = _dim(data, nd)
        d2 = data.draw(st.sampled_from([x for x in range(nd) if x != d1 % nd]))
        off = data.draw(st.integers(-3, 3))
        return (f"diagonal({off}, {d1}, {d2})", "view",
                lambda a: np.diagonal(a, off, d1, d2), lambda t: t.diagonal(off, d1, d2))
    if name == "as_strided":
        k = data.draw(st.integers(0, 3))
        size = tuple(data.draw(st.integers(0, 3)) for _ in range(k))
        stride = tuple(data.draw(st.integers(0, 4)) for _ in range(k))
        reach = sum((n - 1) * s for n, s in zip(size, stride)) if math.prod(size) else 0
        if math.prod(size) and reach >= storage_size:
            size, stride, reach = ((), (), 0) if storage_size else ((0,), (1,), 0)
        hi = storage_size - 1 - reach if math.prod(size) else storage_size
        off = data.draw(st.integers(0, max(hi, 0)))
        return (f"as_strided({size}, {stride}, {off})", "as_strided", (size, stride, off),
                lambda t: t.as_strided(size, stride, off))
    raise AssertionError(name)


# -- the chain property -----------------------------------------------------------------------
@st.composite
def base_shapes(draw):
    """0 to 4 dims; size 0 and size 1 included, but rarely enough that most chains see data."""
    return tuple(draw(st.lists(st.sampled_from([0] + [1] * 3 + [2, 3, 4, 5] * 3),
                               max_size=4)))


def run_chain(data, shape, dtype_name):
    """Apply a random chain to NumPy and clgrad; check layout at each step. Returns state."""
    np_dt, cl_dt = DTYPES[dtype_name]
    storage = np.arange(math.prod(shape), dtype=np_dt).reshape(shape)
    n_view = storage
    t = clgrad.tensor(storage)
    assert t.dtype is cl_dt
    log = [f"base {shape}"]
    for _ in range(data.draw(st.integers(0, 5), label="chain_length")):
        desc, kind, np_fn, cl_fn = draw_op(data, n_view.shape, storage.size)
        log.append(desc)
        what = " -> ".join(log)
        if kind == "as_strided":
            size, stride, off = np_fn
            flat = storage.reshape(-1)
            n_view = np_as_strided(flat[off:], size, [s * flat.itemsize for s in stride])
            n_view = _rebase(n_view, storage) if n_view.size else np.ndarray(size, np_dt)
            t = cl_fn(t)
        elif kind == "view":
            before = t
            t = cl_fn(t)
            assert t.untyped_storage() is before.untyped_storage(), what
            n_view = _rebase(np_fn(n_view), storage)
        else:
            new = _resolve(np_fn(np.empty(n_view.shape, np.int8)).shape, n_view.size)
            oracle = view_oracle(n_view.shape, _elem_strides(n_view), new)
            before = t
            if oracle is False and kind == "view_op":
                with pytest.raises(RuntimeError, match="view"):
                    cl_fn(t)
                log.append("(raised, as PyTorch)")
                continue
            t = cl_fn(t)
            if oracle is False:  # reshape copies, exactly when no view exists
                assert t.untyped_storage() is not before.untyped_storage(), what
                storage = np.array(np_fn(n_view), order="C")  # (keeps 0-dim shapes)
                n_view = storage
                log.append("(copied)")
            else:
                assert t.untyped_storage() is before.untyped_storage(), what
                n_view = _strided(storage, new, [s or 0 for s in oracle],
                                  _np_offset(n_view, storage) if n_view.size else 0)
        assert_same_layout(n_view, t, storage, " -> ".join(log))
    return storage, n_view, t, " -> ".join(log)


@settings(max_examples=examples(60))
@given(shape=base_shapes(), dtype_name=st.sampled_from(sorted(DTYPES)), data=st.data())
def test_view_chain_matches_numpy(shape, dtype_name, data):
    storage, n_view, t, what = run_chain(data, shape, dtype_name)
    np.testing.assert_array_equal(t.numpy(), n_view, err_msg=what)
    np.testing.assert_array_equal(storage_values(t), storage.reshape(-1), err_msg=what)


WRITES = ["copy_", "copy_broadcast", "fill_", "zero_", "setitem_all", "setitem_numpy",
          "setitem_scalar", "add_", "mul_"]


@settings(max_examples=examples(50))
@given(shape=base_shapes(), dtype_name=st.sampled_from(sorted(DTYPES)),
       how=st.sampled_from(WRITES), data=st.data())
def test_write_through_view_lands_where_numpy_does(shape, dtype_name, how, data):
    storage, n_view, t, what = run_chain(data, shape, dtype_name)
    np_dt, cl_dt = DTYPES[dtype_name]
    before = storage.reshape(-1).copy()
    version = t._version
    vals = (-1000 - np.arange(n_view.size, dtype=np_dt)).reshape(n_view.shape)
    src_row = vals[(0,) * (n_view.ndim - 1)] if n_view.ndim and n_view.size else vals

    def do_write():
        if how == "copy_":
            t.copy_(clgrad.tensor(vals))
        elif how == "copy_broadcast":
            t.copy_(clgrad.tensor(np.array(src_row)))
        elif how == "fill_":
            t.fill_(7)
        elif how == "zero_":
            t.zero_()
        elif how == "setitem_all":
            t[...] = clgrad.tensor(vals)
        elif how == "setitem_numpy":
            t[...] = vals
        elif how == "setitem_scalar":
            t[...] = -5
        elif how == "add_":
            t.add_(clgrad.tensor(vals))
        elif how == "mul_":
            t.mul_(3)

    def np_write():
        if how in ("copy_", "setitem_all", "setitem_numpy"):
            n_view[...] = vals
        elif how == "copy_broadcast":
            n_view[...] = src_row
        elif how == "fill_":
            n_view[...] = 7
        elif how == "zero_":
            n_view[...] = 0
        elif how == "setitem_scalar":
            n_view[...] = -5
        elif how == "add_":
            n_view[...] = n_view + vals
        elif how == "mul_":
            n_view[...] = n_view * 3

    strides = _elem_strides(n_view)
    fill = how in ("fill_", "zero_", "setitem_scalar")  # fills take overlaps (PyTorch's)
    if n_view.size > 1 and overlaps(n_view.shape, strides) and not fill:
        with pytest.raises(RuntimeError, match="memory location"):
            do_write()
        np.testing.assert_array_equal(storage_values(t), before, err_msg=what)
        return
    from clgrad import layout
    if layout.has_overlap(tuple(t.shape), t.stride()) and n_view.size > 1:
        # has_overlap is documented as conservative for exotic as_strided layouts: it may
        # refuse a write that would have been fine, but must then leave the storage intact.
        try:
            do_write()
        except RuntimeError:
            np.testing.assert_array_equal(storage_values(t), before, err_msg=what)
            return
    else:
        do_write()
    np_write()
    np.testing.assert_array_equal(storage_values(t), storage.reshape(-1), err_msg=what)
    np.testing.assert_array_equal(t.numpy(), n_view, err_msg=what)
    if n_view.size:
        assert t._version > version, what


# -- reshape: a view exactly when one exists ---------------------------------------------------
@settings(max_examples=examples(50))
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_reshape_is_a_view_exactly_when_one_exists(shape, data):
    """Strided inputs (permuted, stepped, offset) reshaped to a random shape of the same size."""
    big = [2 * n for n in shape]
    a = np.arange(math.prod(big), dtype=np.float32).reshape(big)
    t = clgrad.tensor(a)
    perm = data.draw(st.permutations(range(len(shape))))
    key = tuple(slice(data.draw(st.integers(0, 1)), None, 2) if data.draw(st.booleans())
                else slice(0, n) for n in shape)
    n_x, x = a[key].transpose(perm), t[key].permute(*perm)
    new = _resolve(_new_shape(data, n_x.size), n_x.size)
    oracle = view_oracle(n_x.shape, _elem_strides(n_x), new)
    r = x.reshape(new)
    np.testing.assert_array_equal(r.numpy(), n_x.reshape(new))
    assert (r.untyped_storage() is t.untyped_storage()) == (oracle is not False)
    if oracle is False:
        with pytest.raises(RuntimeError, match="without a copy"):
            x.view(new)
    else:
        assert_same_layout(_strided(a, new, [s or 0 for s in oracle], _np_offset(n_x, a)),
                           x.view(new), a, f"{n_x.shape} {_elem_strides(n_x)} -> {new}")


# -- as_strided against numpy.lib.stride_tricks.as_strided ------------------------------------
@settings(max_examples=examples(50))
@given(n=st.integers(0, 30), data=st.data())
def test_as_strided_matches_numpy(n, data):
    k = data.draw(st.integers(0, 4))
    size = tuple(data.draw(st.integers(0, 4)) for _ in range(k))
    stride = tuple(data.draw(st.integers(0, 6)) for _ in range(k))
    off = data.draw(st.integers(0, n + 2))
    base = np.arange(n, dtype=np.float32) * 1.5
    t = clgrad.tensor(base)
    if math.prod(size) == 0:
        inside = off >= 0
    else:
        inside = off + sum((a - 1) * b for a, b in zip(size, stride)) < n
    if not inside:
        with pytest.raises(RuntimeError, match="as_strided"):
            t.as_strided(size, stride, off)
        np.testing.assert_array_equal(t.numpy(), base)
        return
    v = t.as_strided(size, stride, off)
    assert tuple(v.shape) == size and v.stride() == stride
    if math.prod(size):
        assert v.storage_offset() == off
        ref = np_as_strided(base[off:], size, [s * base.itemsize for s in stride])
        np.testing.assert_array_equal(v.numpy(), ref)
    # as_strided of a view is still in storage coordinates (PyTorch)
    if n >= 2 and math.prod(size):
        w = t[1:].as_strided(size, stride, off)
        np.testing.assert_array_equal(w.numpy(), v.numpy())


# -- targeted cases ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def grid():
    a = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    return a, clgrad.tensor(a)


@pytest.mark.parametrize("key", [
    (slice(None, None, -1),), (Ellipsis, slice(None, None, -2)), (1, slice(3, 0, -1), None),
    (slice(5, -5, -1),), (None, Ellipsis, None), (-1, -1, -1), (slice(-100, 100, 3), 0),
    (Ellipsis,), (slice(2, 1),), (0, Ellipsis, slice(None, None, -3), None),
])
def test_getitem_table(grid, key):
    a, t = grid
    v = t[key]
    ref = _np_index(a, key)
    np.testing.assert_array_equal(v.numpy(), ref)
    assert_same_layout(_rebase(ref, a), v, a, repr(key))


@pytest.mark.parametrize("shape, strides, new, is_view", [
    ((4, 6), (6, 1), (24,), True),
    ((4, 6), (1, 4), (24,), False),        # a transpose cannot be flattened
    ((4, 6), (1, 4), (4, 2, 3), True),     # ... but its dims can be split
    ((2, 3, 4), (12, 1, 3), (6, 4), False),
    ((2, 3, 4), (12, 1, 3), (2, 12), False),
    ((2, 3, 4), (24, 8, 1), (6, 4), True),  # x[:, :, :4] of (2, 3, 8): rows merge
    ((2, 3, 4), (24, 8, 1), (24,), False),
    ((2, 1, 3), (3, 99, 1), (6,), True),   # a size-1 dim's stride never matters
    ((3, 2), (0, 1), (6,), False),          # expanded rows cannot be flattened
    ((3, 2), (0, 0), (6,), True),           # ... unless everything is one element
    ((2, 0, 3), (1, 5, 7), (3, 0, 2), True),
])
def test_reshape_view_or_copy_table(shape, strides, new, is_view):
    base = clgrad.arange(200, dtype=clgrad.float32)
    x = base.as_strided(shape, strides, 0)
    assert (view_oracle(shape, strides, new) is not False) == is_view
    r = x.reshape(new)
    assert (r.untyped_storage() is base.untyped_storage()) == is_view
    np.testing.assert_array_equal(r.numpy(), x.numpy().reshape(new))
    if is_view:
        np.testing.assert_array_equal(x.view(new).numpy(), x.numpy().reshape(new))
    else:
        with pytest.raises(RuntimeError, match=r"view: .*use \.reshape\(\)"):
            x.view(new)


def test_views_share_storage_and_base():
    a = clgrad.arange(24, dtype=clgrad.float32).reshape(2, 3, 4)
    for v in (a[1], a.T, a.narrow(2, 1, 2), a.unsqueeze(0), a.diagonal(0, 1, 2),
              a.unfold(2, 2, 1), a.expand(5, 2, 3, 4), a.movedim(0, -1), a.mT,
              a.expand_as(clgrad.zeros(3, 2, 3, 4))):
        assert v.untyped_storage() is a.untyped_storage()
        assert v._base is a._base and a._base is not None


def test_inplace_on_view_lands_in_base_and_bumps_version():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    t = clgrad.tensor(a)
    steps = [
        (lambda: t.__setitem__((slice(1, 3), slice(None, None, 2)),
                               t[1:3, ::2].__iadd__(10)),
         lambda: a.__setitem__((slice(1, 3), slice(None, None, 2)), a[1:3, ::2] + 10)),
        (lambda: t.T[::-1, 0].mul_(2), lambda: a.T[::-1, 0].__imul__(2)),
        (lambda: t[:, 4].clamp_(0, 30), lambda: a.__setitem__((slice(None), 4),
                                                              np.clip(a[:, 4], 0, 30))),
        (lambda: t[0].sub_(clgrad.tensor([1.0, 2, 3, 4, 5])),
         lambda: a[0].__isub__([1, 2, 3, 4, 5])),
        (lambda: t[3].div_(4), lambda: a[3].__itruediv__(4)),
        (lambda: t[2, 1:].add_(clgrad.tensor([[1.0], [2.0]])[0]),
         lambda: a[2, 1:].__iadd__(1.0)),
    ]
    for cl_step, np_step in steps:
        v = t._version
        cl_step()
        np_step()
        assert t._version > v
        np.testing.assert_array_equal(t.numpy(), a)


def test_flip_copies_and_repeat_tiles_like_numpy():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = clgrad.tensor(a)
    for dims in (0, (1,), (0, 2), (-1, 1)):
        f = t.flip(dims)
        np.testing.assert_array_equal(f.numpy(), np.flip(a, dims))
        assert f.untyped_storage() is not t.untyped_storage()  # a copy, as PyTorch
    for reps in ((2, 1, 1), (1, 2, 3), (2, 2, 1, 2)):
        np.testing.assert_array_equal(t.repeat(*reps).numpy(), np.tile(a, reps))
    with pytest.raises(RuntimeError, match="repeat"):
        t.repeat(2, 2)
    x = clgrad.tensor([1.0, 2.0, 3.0], dtype=clgrad.float64, requires_grad=True)
    (x.flip(0) * clgrad.tensor([1.0, 10.0, 100.0], dtype=clgrad.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [100.0, 10.0, 1.0])


@pytest.mark.parametrize("use", ["all", "first", "last", "twice", "inplace"])
def test_split_pieces_share_one_backward(use):
    """chunk/split pieces have one SplitBackward0 (PyTorch's name): their gradients land in one
    buffer of the input's shape, zero-filled only where a piece got none (all pieces used: one
    copy launch per piece, no fill, no add); values against NumPy, the input a transposed
    view; a piece written in place still rebases the input's graph."""
    from clgrad.runtime import launch_count
    xn = np.random.default_rng(4).standard_normal((5, 9))
    leaf = clgrad.tensor(xn.T.copy(), requires_grad=True)
    x = leaf.t() * 2.0  # (5, 9), a fresh root
    a, b, c = x.split([2, 4, 3], 1)
    assert "grad_fn=<SplitBackward0>" in repr(a) and a._base is x
    w = [np.full((5, 2), 1.0), np.full((5, 4), 2.0), np.full((5, 3), 3.0)]
    want = np.zeros((5, 9))
    if use == "all":
        loss = (a * clgrad.tensor(w[0])).sum() + (b * 2.0).sum() + (c * 3.0).sum()
        want[:] = np.concatenate(w, 1)
    elif use == "first":
        loss = (a * 1.0).sum()
        want[:, :2] = 1
    elif use == "last":
        loss = (c * 3.0).sum()
        want[:, 6:] = 3
    elif use == "twice":
        loss = (b * 2.0).sum() + (b * b).sum()
        want[:, 2:6] = 2 + 2 * 2 * xn[:, 2:6]
    else:
        b.mul_(5.0)  # in place through a piece: x's graph is rebased
        loss = (x * 1.0).sum()
        want[:] = 1
        want[:, 2:6] = 5
    n0 = launch_count()
    loss.backward()
    np.testing.assert_allclose(leaf.grad.numpy().T, 2 * want, rtol=1e-12)
    if use == "all":  # the split's share: 3 copies (one narrow per piece took 3 zero-filled
        assert launch_count() - n0 == 9  # buffers, 3 copies and 2 adds: 14 launches in all)


def test_split_without_grad_or_of_one_piece():
    """Without autograd the pieces are plain views; one piece is a narrow."""
    x = clgrad.arange(12.0).view(3, 4)
    a, b = x.split(2, 1)
    assert a.grad_fn is None and not a.requires_grad and a._storage is x._storage
    np.testing.assert_array_equal(b.numpy(), np.arange(12.0).reshape(3, 4)[:, 2:])
    (only,) = x.requires_grad_().split(4, 1)
    assert "grad_fn=<SliceBackward0>" in repr(only)
    with clgrad.no_grad():
        p, q = x.chunk(2, 0)
    assert not p.requires_grad and q.shape == (1, 4)


def test_unbind_pieces_share_one_backward():
    """unbind's pieces have one UnbindBackward0 (PyTorch's name): gradients of the used rows
    land in one buffer (zeros elsewhere), values against NumPy; all rows used: no fill."""
    from clgrad.runtime import launch_count
    xn = np.random.default_rng(5).standard_normal((4, 3))
    leaf = clgrad.tensor(xn, requires_grad=True)
    x = leaf * 1.0
    rows = x.unbind(0)
    assert "grad_fn=<UnbindBackward0>" in repr(rows[2])
    (rows[0] * 2.0 + rows[3] * rows[3]).sum().backward()
    want = np.zeros((4, 3))
    want[0], want[3] = 2.0, 2 * xn[3]
    np.testing.assert_allclose(leaf.grad.numpy(), want, rtol=1e-12)
    leaf.grad = None
    cols = (leaf * 1.0).unbind(1)
    loss = cols[0].sum() + cols[1].sum() + cols[2].sum()
    n0 = launch_count()
    loss.backward()
    np.testing.assert_allclose(leaf.grad.numpy(), np.ones((4, 3)))
    assert launch_count() - n0 == 5  # one select per piece took 10 (3 fills, 2 more adds)


def test_contiguous_copies_replayed_per_layout_match_numpy():
    """contiguous() records a layout's copy launches once and replays them (one allocation,
    one enqueue): the second and third calls, on other data of the same layout, and a layout
    that differs only in its offset or strides, all match NumPy; the result owns its storage."""
    rng = np.random.default_rng(3)
    for _ in range(3):
        base = rng.standard_normal((6, 7, 5)).astype(np.float32)
        t = clgrad.tensor(base)
        cases = ((t.transpose(0, 2), np.swapaxes(base, 0, 2)), (t[1:5, ::2], base[1:5, ::2]),
                 (t[2:, 3:].permute(2, 0, 1), base[2:, 3:].transpose(2, 0, 1)),
                 (t[:1].expand(4, 7, 5), np.broadcast_to(base[:1], (4, 7, 5))),
                 (t, base))
        for view, want in cases:
            got = view.contiguous() if not view.is_contiguous() else view.clone()
            assert got.is_contiguous() and got.storage_offset() == 0
            assert got._storage is not t._storage
            np.testing.assert_array_equal(got.numpy(), want)
    x = clgrad.tensor(rng.standard_normal((3, 4)).astype(np.float32), requires_grad=True)
    (x.t().contiguous() * clgrad.arange(3.0)).sum().backward()  # its Node still records
    np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to(np.arange(3.0)[:, None],
                                                                  (3, 4)))


def test_flip_and_tile_take_dims_as_separate_ints():
    x = clgrad.arange(6.0).reshape(2, 3)
    X = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    for out in (x.flip(0, 1), x.flip((0, 1)), x.flip([0, 1]), x.flip(dims=(0, 1)),
                clgrad.flip(x, (0, 1))):
        np.testing.assert_array_equal(out.numpy(), X[::-1, ::-1])
    np.testing.assert_array_equal(x.flip(1).numpy(), X[:, ::-1])
    for out in (x.tile(2, 2), x.tile((2, 2)), x.tile([2, 2]), x.tile(dims=(2, 2)),
                clgrad.tile(x, (2, 2))):
        np.testing.assert_array_equal(out.numpy(), np.tile(X, (2, 2)))
    np.testing.assert_array_equal(x.tile(2).numpy(), np.tile(X, 2))
    np.testing.assert_array_equal(x.tile(2, 1, 1).numpy(), np.tile(X, (2, 1, 1)))


def test_data_ptr_identity_of_views():
    a = clgrad.arange(12.0)
    base = a.data_ptr()
    assert isinstance(base, int)
    assert a.view(3, 4).data_ptr() == base and a[:5].data_ptr() == base
    assert a[3:].data_ptr() == base + 3 * 4  # offset * itemsize
    assert a.view(3, 4)[1].data_ptr() == base + 4 * 4
    assert a.data_ptr() == base  # stable
    b = clgrad.arange(12.0)
    assert b.data_ptr() != base and a.clone().data_ptr() != base
    d = clgrad.zeros(4, dtype=clgrad.float64)
    assert d[1:].data_ptr() - d.data_ptr() == 8
