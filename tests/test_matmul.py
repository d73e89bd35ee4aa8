"""matmul / @ / mm / bmm / dot on strided operands with broadcast batch dims, against NumPy."""
import os

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import clgrad
from clgrad.ops import matmul as mm_mod
from strided import broadcastable_shapes, strided_pair, values

F32, F64, I64 = clgrad.float32, clgrad.float64, clgrad.int64


def examples(n: int) -> int:
    return int(os.environ.get("CLGRAD_HYPOTHESIS_EXAMPLES", n))


def check_product(out, a_np, b_np, dtype, what=""):
    ref = np.matmul(a_np.astype(np.float64), b_np.astype(np.float64))
    scale = np.matmul(np.abs(a_np.astype(np.float64)), np.abs(b_np.astype(np.float64)))
    assert tuple(out.shape) == ref.shape, what
    assert out.dtype is dtype
    if dtype is F32:
        np.testing.assert_allclose(out.numpy(), ref, rtol=0, atol=1e-6 + 2e-6 * scale.max(
            initial=0), err_msg=what)
    elif dtype is F64:
        np.testing.assert_allclose(out.numpy(), ref, rtol=0, atol=1e-14 * (1 + scale.max(
            initial=0)), err_msg=what)
    else:
        np.testing.assert_array_equal(out.numpy(), ref.astype(np.int64), err_msg=what)


SIDES = [1, 2, 3, 5, 17, 31, 32, 33]


@pytest.mark.parametrize("dtype", [F32, F64, I64])
@settings(max_examples=examples(30))
@given(data=st.data())
def test_matmul_broadcast_batch_on_strided_operands(dtype, data):
    m, k, n = (data.draw(st.sampled_from(SIDES), label=x) for x in "mkn")
    batch = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2), label="batch"))
    ba = data.draw(broadcastable_shapes(batch), label="batch_a")
    bb = data.draw(broadcastable_shapes(batch), label="batch_b")
    a_shape, b_shape = ba + (m, k), bb + (k, n)
    # 1-D operands sometimes (PyTorch's vector rules)
    if data.draw(st.integers(0, 4), label="a_vec") == 0:
        a_shape = (k,)
    if data.draw(st.integers(0, 4), label="b_vec") == 0:
        b_shape = (k,)
    a_np, a = data.draw(strided_pair(a_shape, dtype))
    b_np, b = data.draw(strided_pair(b_shape, dtype))
    what = f"{a_shape} {a.stride()} @ {b_shape} {b.stride()}"
    check_product(a @ b, a_np, b_np, dtype, what)
    np.testing.assert_array_equal(a.numpy(), a_np)
    np.testing.assert_array_equal(b.numpy(), b_np)


@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (64, 64, 64), (65, 33, 31), (257, 17, 129),
                                     (3, 1025, 5), (130, 70, 1)])
@pytest.mark.parametrize("dtype", [F32, F64])
def test_sizes_around_tiles(m, k, n, dtype):
    rng = np.random.default_rng(m * k * n)
    a_np = values(rng, (k, m), dtype)            # stored transposed: A is read by its strides
    b_full = values(rng, (n, 2 * k), dtype)      # B: every other column, transposed
    a, b = clgrad.tensor(a_np).T, clgrad.tensor(b_full)[:, ::2].T
    b_np = b_full[:, ::2]
    check_product(a @ b, a_np.T, b_np.T, dtype, f"{m}x{k}x{n}")


def test_transposed_operand_is_read_through_strides():
    a_np = np.arange(6.0).reshape(2, 3)
    a = clgrad.tensor(a_np)
    np.testing.assert_array_equal((a.T @ a).numpy(), a_np.T @ a_np)
    np.testing.assert_array_equal((a @ a.T).numpy(), a_np @ a_np.T)
    np.testing.assert_array_equal((a.mT @ a.T.mT).numpy(), a_np.T @ a_np)
    # a stride-0 (expanded) batch of one matrix against a batch of three
    bb_np = np.arange(36.0).reshape(3, 3, 4)
    bb = clgrad.tensor(bb_np)
    np.testing.assert_array_equal((a.expand(3, 2, 3) @ bb).numpy(), a_np @ bb_np)
    np.testing.assert_array_equal((a @ bb).numpy(), a_np @ bb_np)
    np.testing.assert_array_equal(clgrad.bmm(a.expand(3, 2, 3), bb).numpy(), a_np @ bb_np)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_mm_dot_and_vectors(dtype):
    rng = np.random.default_rng(7)
    x_np, y_np = values(rng, (5, 4), dtype), values(rng, (4, 3), dtype)
    v_np, w_np = values(rng, (4,), dtype), values(rng, (4,), dtype)
    x, y, v, w = (clgrad.tensor(t) for t in (x_np, y_np, v_np, w_np))
    tol = 1e-6 if dtype is F32 else 1e-14
    np.testing.assert_allclose(clgrad.mm(x, y).numpy(), x_np.astype(np.float64) @ y_np, atol=tol)
    d = clgrad.dot(v, w)
    assert d.shape == () and d.dtype is dtype
    np.testing.assert_allclose(d.item(), np.dot(v_np.astype(np.float64), w_np), atol=tol)
    np.testing.assert_allclose((x @ v).numpy(), x_np.astype(np.float64) @ v_np, atol=tol)
    np.testing.assert_allclose((v @ y).numpy(), v_np.astype(np.float64) @ y_np, atol=tol)
    assert (x @ v).shape == (5,) and (v @ y).shape == (3,)


def test_empty_and_k_zero_products():
    a = clgrad.ones(0, 3)
    assert (a @ clgrad.ones(3, 4)).shape == (0, 4)
    z = clgrad.ones(2, 0) @ clgrad.ones(0, 5)
    np.testing.assert_array_equal(z.numpy(), np.zeros((2, 5)))
    zb = clgrad.ones(3, 2, 0) @ clgrad.ones(0, 4)
    np.testing.assert_array_equal(zb.numpy(), np.zeros((3, 2, 4)))
    assert (clgrad.ones(0, 2, 3) @ clgrad.ones(3, 4)).shape == (0, 2, 4)


# -- linear's own backward (issue 23, helper h8) ----------------------------------------------
@pytest.mark.parametrize("xshape", [(5,), (4, 5), (2, 3, 5)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_grads_match_torch_float64(xshape, with_bias):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    xn = rng.standard_normal(xshape)
    wn, bn = rng.standard_normal((3, 5)), rng.standard_normal(3)
    gn = rng.standard_normal(xshape[:-1] + (3,))
    x = clgrad.tensor(xn, dtype=F64, requires_grad=True)
    w = clgrad.tensor(wn, dtype=F64, requires_grad=True)
    b = clgrad.tensor(bn, dtype=F64, requires_grad=True) if with_bias else None
    out = clgrad.nn.functional.linear(x, w, b)
    out.backward(clgrad.tensor(gn, dtype=F64))
    tx = torch.tensor(xn, requires_grad=True)
    tw = torch.tensor(wn, requires_grad=True)
    tb = torch.tensor(bn, requires_grad=True) if with_bias else None
    tout = torch.nn.functional.linear(tx, tw, tb)
    tout.backward(torch.tensor(gn))
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12)
    assert w.grad.is_contiguous()
    if with_bias:
        np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-12)


def test_linear_weight_grad_is_written_in_place_without_a_transposed_copy(monkeypatch):
    from clgrad import runtime
    x = clgrad.randn(4, 30)
    w = clgrad.randn(20, 30).requires_grad_()
    out = clgrad.nn.functional.linear(x, w)
    names = []
    for entry in ("launch", "launch_split"):  # launch_1d's launches take launch_split
        def spy(self, kernel, *a, orig=getattr(runtime.Device, entry)):
            names.append(kernel.function_name)
            return orig(self, kernel, *a)
        monkeypatch.setattr(runtime.Device, entry, spy)
    out.backward(clgrad.ones(4, 20))
    assert "copy" not in names, names
    np.testing.assert_allclose(w.grad.numpy(), np.ones((20, 4)) @ x.numpy().astype(np.float64),
                               rtol=1e-5, atol=1e-5)


# -- float16 (helper h2): products summed in float32, rounded once -----------------------------
_FP16 = pytest.mark.skipif(not clgrad.runtime.default_device().fp16,
                           reason="the default device lacks cl_khr_fp16")


@_FP16
def test_float16_products_accumulate_in_float32():
    """ones(1, 3000) @ ones(3000, 1) is 3000 (PyTorch), not 2048 (a float16 sum stops there:
    2048 + 1 rounds back to 2048), through matmul, mm, bmm, dot and linear."""
    x, y = clgrad.ones(1, 3000, dtype=clgrad.float16), clgrad.ones(3000, 1, dtype=clgrad.float16)
    assert (x @ y).item() == 3000.0
    assert clgrad.mm(x, y).item() == 3000.0
    assert clgrad.bmm(x.unsqueeze(0), y.unsqueeze(0)).item() == 3000.0
    assert clgrad.dot(x[0], y[:, 0]).item() == 3000.0
    assert clgrad.nn.functional.linear(x, y.t()).item() == 3000.0
    assert (x @ y).dtype == clgrad.float16


@_FP16
@pytest.mark.parametrize("tiles", [None] + [pytest.param(c, id=f"tiled{c['TSM']}x{c['TSK']}")
                                            for c in mm_mod.GPU_CANDIDATES])
def test_float16_gemm_rounds_once_on_every_kernel(tiles):
    """Random float16 operands, K = 700: every entry within half a float16 ulp of the float64
    product (plus float32 summation error), on the default kernel and on GEMM_TILED (the GPU
    kernel, ACC=float), with a transposed operand, beta != 0 and a broadcast batch."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 37, 700)).astype(np.float16)
    b = rng.standard_normal((3, 700, 29)).astype(np.float16)
    c0 = rng.standard_normal((3, 37, 29)).astype(np.float16)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    bt = clgrad.tensor(b.transpose(0, 2, 1).copy()).transpose(1, 2)
    for bb in (clgrad.tensor(b), bt):
        c = clgrad.tensor(c0)
        mm_mod.gemm(c, clgrad.tensor(a), bb, 0.5, 1.0, tiles_override=tiles)
        want = 0.5 * exact + c0
        np.testing.assert_allclose(c.numpy().astype(np.float64), want, rtol=2 ** -11, atol=1e-3)
    c = clgrad.empty((3, 37, 29), dtype=clgrad.float16)
    mm_mod.gemm(c, clgrad.tensor(a[0]).expand(3, 37, 700), clgrad.tensor(b), tiles_override=tiles)
    np.testing.assert_allclose(c.numpy().astype(np.float64), a[0].astype(np.float64) @ b,
                               rtol=2 ** -11, atol=1e-3)


# -- linear's recorded launches (issue 34: its fast path on a cached signature) ---------------
def _linear_operands(rng, xshape, dtype, strided):
    """x of ``xshape`` (a transposed view at an offset when ``strided``), weight (3, 5) (a
    transposed view when strided), bias (3,) (every other element of a longer one)."""
    def t(a, view):
        if not view:
            return clgrad.tensor(a, dtype=dtype)
        if a.ndim == 1:
            return clgrad.tensor(np.stack([a, a]).T.reshape(-1), dtype=dtype)[::2]
        big = np.zeros(a.shape[:-2] + (a.shape[-1] + 1, a.shape[-2]))
        big[..., 1:, :] = np.swapaxes(a, -1, -2)
        return clgrad.tensor(big, dtype=dtype)[..., 1:, :].transpose(-1, -2)
    xn = rng.standard_normal(xshape)
    wn, bn = rng.standard_normal((3, 5)), rng.standard_normal(3)
    return (xn, wn, bn), (t(xn, strided and len(xshape) > 1), t(wn, strided), t(bn, strided))


@pytest.mark.parametrize("xshape", [(5,), (4, 5), (2, 3, 5), (0, 5)])
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("strided", [False, True])
def test_linear_replayed_gives_matmul_then_add_bits(xshape, dtype, strided):
    """linear's second and third calls on one signature (its recorded launches, on new
    tensors of the same layouts) give the bits of matmul(x, w.t()) + b, and NumPy's values;
    without bias the bits of the matmul; a gradient flows as before."""
    rng = np.random.default_rng(2)
    F = clgrad.nn.functional
    for rep in range(3):
        (xn, wn, bn), (x, w, b) = _linear_operands(rng, xshape, dtype, strided)
        want = np.matmul(xn, wn.T) + bn
        got = F.linear(x, w, b)
        ref = clgrad.matmul(x, w.t()) + b
        assert got.shape == ref.shape == want.shape and got.dtype is dtype
        np.testing.assert_array_equal(got.numpy(), ref.numpy(), err_msg=f"call {rep}")
        tol = 1e-5 if dtype is F32 else 1e-13
        np.testing.assert_allclose(got.numpy(), want, rtol=tol, atol=tol)
        np.testing.assert_array_equal(F.linear(x, w).numpy(), clgrad.matmul(x, w.t()).numpy())
    x = x.detach().requires_grad_()
    F.linear(x, w, b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(wn.sum(0), xshape), rtol=tol,
                               atol=tol)


def test_linear_replay_follows_the_layouts_and_keeps_the_general_paths_rules():
    """A new layout of any operand takes a new recording (the values follow); a bias that
    promotes (float64 to float32 operands) or broadcasts ((1,)) keeps matmul + add's result
    (dtype and values); the recorded launches are the GEMM and the bias add."""
    from clgrad.runtime import launch_count
    rng = np.random.default_rng(3)
    F = clgrad.nn.functional
    xn, wn, bn = rng.standard_normal((4, 5)), rng.standard_normal((3, 5)), rng.standard_normal(3)
    x, w, b = (clgrad.tensor(v, dtype=F32) for v in (xn, wn, bn))
    F.linear(x, w, b)
    before = launch_count()
    F.linear(x, w, b)
    n_replayed = launch_count() - before
    before = launch_count()
    clgrad.matmul(x, w.t()) + b
    assert n_replayed == launch_count() - before
    for xv, wv, bv in ((x, w, b), (x.t().contiguous().t(), w, b),
                       (x, w.t().contiguous().t(), b), (x[1:], w, b), (x, w[1:], b[1:]),
                       (x, w[:2], b[1:]), (x, w, clgrad.tensor(np.repeat(bn, 2))[::2])):
        want = np.matmul(xv.numpy().astype(np.float64), wv.numpy().astype(np.float64).T)
        want += bv.numpy()
        for _ in range(2):
            np.testing.assert_allclose(F.linear(xv, wv, bv).numpy(), want, rtol=1e-5,
                                       atol=1e-5)
    b64 = clgrad.tensor(bn, dtype=F64)
    for _ in range(2):
        got = F.linear(x, w, b64)
        assert got.dtype is F64
        np.testing.assert_array_equal(got.numpy(), (clgrad.matmul(x, w.t()) + b64).numpy())
    b1 = clgrad.tensor(bn[:1], dtype=F32)
    for _ in range(2):
        np.testing.assert_array_equal(F.linear(x, w, b1).numpy(),
                                      (clgrad.matmul(x, w.t()) + b1).numpy())


@pytest.mark.parametrize("call", [
    lambda a, b: a @ b, lambda a, b: clgrad.matmul(a, b), lambda a, b: clgrad.mm(a, b),
    lambda a, b: clgrad.bmm(a[None], b[None]), lambda a, b: clgrad.dot(a[0], b[0]),
    lambda a, b: a.float() @ b])
def test_matmul_of_bool_tensors_raises(call):
    b = clgrad.ones(2, 2, dtype=clgrad.bool)
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        call(b, b)
    np.testing.assert_array_equal((b.float() @ b.float()).numpy(), [[2.0, 2.0], [2.0, 2.0]])


@pytest.mark.skipif(clgrad.runtime.default_device().kind != "cpu",
                    reason="GEMM_CPU's summation (CPU devices)")
def test_cpu_gemm_error_grows_with_the_depth_blocks_not_with_k():
    """GEMM_CPU sums each depth block of KC products from zero, then adds it to C: error
    ~(KC + K / KC) roundings, not K (one running sum: 1 % off for K = 2^20 below)."""
    k = 1 << 20
    kc = min(c["KC"] for c in mm_mod.CPU_CANDIDATES)  # the bound of the worst tile
    bound = (kc + k // kc) * 2.0 ** -24
    got = (clgrad.full((1, k), 0.1) @ clgrad.ones(k, 1)).item()
    want = float(np.float32(0.1)) * k
    assert abs(got - want) / want < bound, (got, want, bound)
    rng = np.random.default_rng(0)
    x = rng.random((k, 8), dtype=np.float32)  # X^T X over a long K (a covariance)
    t = clgrad.from_numpy(x)
    exact = x.T.astype(np.float64) @ x.astype(np.float64)
    err = np.abs((t.T @ t).numpy() - exact).max() / np.abs(exact).max()
    assert err < bound, (err, bound)
