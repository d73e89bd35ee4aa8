"""View geometry of clgrad/layout.py against NumPy, without a device: each function maps
(shape, strides, offset, args) to the layout of the view; NumPy's view of the same host array
is the oracle (values, shape, and strides/offset where NumPy defines them), and both raise or
both succeed. Bases are non-contiguous: a transposed, stepped, offset view of an arange."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.lib.stride_tricks import as_strided as np_as_strided
from numpy.lib.stride_tricks import sliding_window_view

from clgrad import layout

STORE = np.arange(4096, dtype=np.int64)  # the "storage": every element is its own address
ISZ = STORE.itemsize


def base(shape):
    """A non-contiguous view of STORE with ``shape``: dims reversed, every dim stepped by 2 at
    the innermost, an offset of 3; returned with its (shape, strides, offset) in elements."""
    full = [2 * s if i == 0 else s for i, s in enumerate(reversed(shape))]
    a = STORE[3:3 + int(np.prod(full))].reshape(full)[::2].transpose() if shape else STORE[3]
    a = np.asarray(a)
    return a, geometry(a)


def geometry(a: np.ndarray):
    off = (a.__array_interface__["data"][0] - STORE.__array_interface__["data"][0]) // ISZ
    return tuple(a.shape), tuple(s // ISZ for s in a.strides), off


def values(geom):
    """The elements of STORE that (shape, strides, offset) addresses."""
    shape, strides, off = geom
    return np_as_strided(STORE[off:], shape, [s * ISZ for s in strides]) if \
        np.prod(shape) else np.zeros(shape, dtype=np.int64)


def check(geom, ref: np.ndarray):
    """Same values and shape as ref; same strides where a dim has more than one element, and
    the same offset when there are elements (NumPy leaves the others free)."""
    shape, strides, off = geom
    assert shape == tuple(np.shape(ref))
    if not isinstance(ref, np.ndarray):  # NumPy gives a scalar: its value is its address
        assert shape == () and off == int(ref)
        return
    np.testing.assert_array_equal(values(geom), ref)
    if ref.size:
        want = geometry(ref)
        assert [s for s, n in zip(strides, shape) if n > 1] == \
            [s for s, n in zip(want[1], shape) if n > 1]
        assert off == want[2]


def both(clgrad_fn, numpy_fn):
    """Run both; both raise or both succeed. Returns (geometry, ndarray) or None."""
    try:
        ref = numpy_fn()
    except (IndexError, ValueError, TypeError):
        with pytest.raises((IndexError, ValueError, TypeError, RuntimeError)):
            clgrad_fn()
        return None
    return clgrad_fn(), ref


SHAPES = [(5,), (3, 4), (2, 3, 4), (1, 5, 1), (0, 3)]


@pytest.mark.parametrize("shape", SHAPES)
def test_narrow_select_permute(shape):
    a, g = base(shape)
    nd = len(shape)
    for d in range(-nd, nd):
        n = shape[d]
        for start in range(-n, n + 1):
            for length in (0, 1, n - start if start >= 0 else -start):
                if start >= 0 and start + length > n or length < 0:
                    with pytest.raises(IndexError):
                        layout.narrow(*g, d, start, length)
                    continue
                s = start + n if start < 0 else start
                key = (slice(None),) * (d % nd) + (slice(s, s + length),)
                check(layout.narrow(*g, d, start, length), a[key])
        for i in range(-n - 1, n + 1):
            got = both(lambda: layout.select(*g, d, i),
                       lambda: a[(slice(None),) * (d % nd) + (i,)])
            if got:
                check(*got)
    perm = tuple(reversed(range(nd)))
    check(layout.permute(*g, perm), a.transpose(perm))
    with pytest.raises(RuntimeError):
        layout.permute(*g, (0,) * nd if nd > 1 else (0, 0))


_KEY = st.one_of(st.integers(-6, 6), st.none(), st.just(Ellipsis),
                 st.builds(slice, st.none() | st.integers(-7, 7), st.none() | st.integers(-7, 7),
                           st.none() | st.integers(-3, 3).filter(bool)))


@settings(max_examples=60)
@given(st.sampled_from(SHAPES), st.lists(_KEY, max_size=4))
def test_basic_index_matches_numpy(shape, key):
    a, g = base(shape)
    key = tuple(key)
    got = both(lambda: layout.basic_index(*g, key), lambda: a[key])
    if got:
        check(*got)


def test_basic_index_errors():
    g = base((3, 4))[1]
    with pytest.raises(ValueError, match="step cannot be zero"):
        layout.basic_index(*g, slice(None, None, 0))
    with pytest.raises(TypeError, match="slice indices must be integers"):
        layout.basic_index(*g, slice(1.5, None))
    with pytest.raises(IndexError, match="too many indices"):
        layout.basic_index(*g, (0, 0, 0))
    with pytest.raises(IndexError, match="single ellipsis"):
        layout.basic_index(*g, (Ellipsis, Ellipsis))


@pytest.mark.parametrize("shape,sizes", [((1, 3), (4, 3)), ((3,), (2, 3)), ((1, 1), (-1, 5)),
                                         ((2, 1), (2, 0)), ((3,), (4,)), ((3,), (-1, 3))])
def test_expand_matches_broadcast_to(shape, sizes):
    a, g = base(shape)
    target = tuple(n if s == -1 else s for s, n in
                   zip(sizes, (None,) * (len(sizes) - len(shape)) + shape))
    if -1 in sizes[:len(sizes) - len(shape)]:
        with pytest.raises(RuntimeError, match="not allowed in a leading"):
            layout.expand(*g, sizes)
        return
    got = both(lambda: layout.expand(*g, sizes), lambda: np.broadcast_to(a, target))
    if got:
        check(*got)


@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 6, 1)])
@pytest.mark.parametrize("size,step", [(1, 1), (2, 1), (3, 2), (2, 3)])
def test_unfold_matches_sliding_windows(shape, size, step):
    a, g = base(shape)
    for d in range(len(shape)):
        if size > shape[d]:
            with pytest.raises(RuntimeError, match="maximum size"):
                layout.unfold(*g, d, size, step)
            continue
        ref = sliding_window_view(a, size, axis=d)[(slice(None),) * d +
                                                   (slice(None, None, step),)]
        check(layout.unfold(*g, d, size, step), ref)


@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 4), (0, 2)])
def test_diagonal_matches_numpy(shape):
    a, g = base(shape)
    for off in range(-4, 5):
        for d1, d2 in ((0, 1), (1, 0), (-1, 0)):
            check(layout.diagonal(*g, off, d1, d2), np.diagonal(a, off, d1, d2))
    with pytest.raises(RuntimeError, match="cannot be identical"):
        layout.diagonal(*g, 0, 1, 1)


def test_unsqueeze_squeeze_strides_by_hand():
    g = ((2, 3), (1, 4), 5)  # a transposed (3, 2) view at offset 5
    assert layout.unsqueeze(*g, 0) == ((1, 2, 3), (2, 1, 4), 5)
    assert layout.unsqueeze(*g, 1) == ((2, 1, 3), (1, 12, 4), 5)
    assert layout.unsqueeze(*g, -1) == ((2, 3, 1), (1, 4, 1), 5)
    assert layout.squeeze((1, 3, 1), (7, 2, 9), 4) == ((3,), (2,), 4)
    assert layout.squeeze((1, 3, 1), (7, 2, 9), 4, dim=(0, 1)) == ((3, 1), (2, 9), 4)


def test_as_strided_geometry_and_bounds():
    geom = layout.as_strided(20, 3, (2, 3), (1, 2))
    assert geom == ((2, 3), (1, 2), 3)
    check(geom, np_as_strided(STORE[3:], (2, 3), (ISZ, 2 * ISZ)))
    assert layout.as_strided(20, 3, (2, 2), (5, 1), 12) == ((2, 2), (5, 1), 12)
    with pytest.raises(RuntimeError, match="require a storage of at least 21 elements"):
        layout.as_strided(20, 0, (3,), (10,))
    with pytest.raises(RuntimeError, match="mismatch in length"):
        layout.as_strided(20, 0, (3,), (1, 1))
