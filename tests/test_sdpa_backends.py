"""torch.nn.attention (clgrad/nn/attention): sdpa_kernel and SDPBackend (clgrad has the math
backend only), the causal biases of torch.nn.attention.bias, and F.scaled_dot_product_
attention's output layout (the query's dim order, as PyTorch's fused kernels). Oracles:
NumPy attention in float64, hand-made masks, PyTorch's strides and masks when importable."""
import warnings

import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from clgrad.nn.attention import SDPBackend, sdpa_kernel
from clgrad.nn.attention.bias import (CausalBias, CausalVariant, causal_lower_right,
                                      causal_upper_left)


def _np_attention(q, k, v, mask=None):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    return w @ v


def _heads(x, B, L, H, E):
    """nanoGPT's split of (B, L, 3*H*E) into q, k, v of (B, H, L, E), non-contiguous."""
    q, k, v = x.chunk(3, -1)
    return [t.view(B, -1, H, E).transpose(1, 2) for t in (q, k, v)]


def test_output_follows_the_query_layout_and_views_back():
    B, L, H, E = 2, 5, 3, 4
    x0 = np.random.default_rng(0).standard_normal((B, L, 3 * H * E))
    x = clgrad.tensor(x0, requires_grad=True)
    q, k, v = _heads(x, B, L, H, E)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert y.shape == (B, H, L, E) and y.stride() == (L * H * E, E, H * E, 1)  # BLHE, dense
    flat = y.transpose(1, 2).view(B, -1, H * E)  # the tutorial's view, no copy needed
    qn, kn, vn = (np.swapaxes(a.reshape(B, L, H, E), 1, 2) for a in np.split(x0, 3, -1))
    want = _np_attention(qn, kn, vn, np.tril(np.ones((L, L), bool)))
    np.testing.assert_allclose(flat.detach().numpy(),
                               np.swapaxes(want, 1, 2).reshape(B, L, H * E), rtol=1e-12)
    # the gradient through the layout copy is that of the same attention on copies
    r = np.random.default_rng(1).standard_normal(flat.shape)
    (flat * clgrad.tensor(r)).sum().backward()
    x2 = clgrad.tensor(x0, requires_grad=True)
    q2, k2, v2 = (t.contiguous() for t in _heads(x2, B, L, H, E))
    y2 = F.scaled_dot_product_attention(q2, k2, v2, is_causal=True)
    assert y2.is_contiguous()  # a contiguous query: a contiguous output
    (y2.transpose(1, 2).reshape(B, L, H * E) * clgrad.tensor(r)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-12, atol=1e-14)
    # with dropout (PyTorch's CPU math path) the output is contiguous
    assert F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).is_contiguous()


def test_output_strides_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    for shape, perm in (((2, 5, 3, 4), (0, 2, 1, 3)), ((2, 3, 5, 4), (0, 1, 2, 3)),
                        ((5, 2, 3, 4), (1, 2, 0, 3)), ((3, 6, 4), (1, 0, 2))):
        a = rng.standard_normal(shape)
        qc = clgrad.tensor(a).permute(*perm)
        qt = torch.tensor(a).permute(*perm)
        oc = F.scaled_dot_product_attention(qc, qc, qc)
        ot = torch.nn.functional.scaled_dot_product_attention(qt, qt, qt)
        assert oc.stride() == ot.stride(), (shape, perm)
        np.testing.assert_allclose(oc.numpy(), ot.numpy(), rtol=1e-12, atol=1e-14)


def test_sdpa_kernel_allows_math_only():
    q = clgrad.ones(1, 2, 3)
    want = F.scaled_dot_product_attention(q, q, q).numpy()
    with sdpa_kernel(SDPBackend.MATH):
        np.testing.assert_array_equal(F.scaled_dot_product_attention(q, q, q).numpy(), want)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        F.scaled_dot_product_attention(q, q, q)
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                    SDPBackend.CUDNN_ATTENTION):
        with sdpa_kernel(backend):
            assert not clgrad.backends.cuda.math_sdp_enabled()
            with pytest.warns(UserWarning, match="only the math backend"):
                with pytest.raises(RuntimeError, match="No available kernel"):
                    F.scaled_dot_product_attention(q, q, q)
        assert clgrad.backends.cuda.math_sdp_enabled()  # restored after the block
    with pytest.raises(ValueError):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            raise ValueError("inside")
    assert clgrad.backends.cuda.math_sdp_enabled() and \
        clgrad.backends.cuda.flash_sdp_enabled()  # restored after an exception too
    clgrad.backends.cuda.enable_math_sdp(False)
    try:
        with warnings.catch_warnings(), pytest.raises(RuntimeError, match="No available"):
            warnings.simplefilter("ignore")
            F.scaled_dot_product_attention(q, q, q)
    finally:
        clgrad.backends.cuda.enable_math_sdp(True)
    with pytest.raises(TypeError, match="SDPBackend"):
        with sdpa_kernel("math"):
            pass
    assert [b.value for b in SDPBackend] == [-1, 0, 1, 2, 3, 4]


def test_causal_biases():
    up, low = causal_upper_left(2, 4), causal_lower_right(2, 4)
    assert type(up) is CausalBias and isinstance(low, clgrad.Tensor)
    assert up.variant is CausalVariant.UPPER_LEFT and (up.seq_len_q, up.seq_len_kv) == (2, 4)
    assert up.tolist() == [[True, False, False, False], [True, True, False, False]]
    assert low.tolist() == [[True, True, True, False], [True, True, True, True]]
    assert low._materialize().tolist() == low.tolist() and type(low._materialize()) is \
        clgrad.Tensor
    rng = np.random.default_rng(3)
    q0, k0, v0 = (rng.standard_normal(s) for s in ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4)))
    q, k, v = (clgrad.tensor(a) for a in (q0, k0, v0))
    out_up = F.scaled_dot_product_attention(q, k, v, causal_upper_left(3, 5))
    np.testing.assert_allclose(out_up.numpy(), F.scaled_dot_product_attention(
        q, k, v, is_causal=True).numpy(), rtol=1e-14)
    lr = np.arange(5)[None, :] <= np.arange(3)[:, None] + 2   # j <= i + S - L
    np.testing.assert_allclose(F.scaled_dot_product_attention(
        q, k, v, causal_lower_right(3, 5)).numpy(), _np_attention(q0, k0, v0, lr), rtol=1e-12)
    with pytest.raises(ValueError, match="seq_len_q, seq_len_kv"):
        causal_upper_left(3)
    with pytest.raises(ValueError, match="CausalVariant"):
        CausalBias(1, 2, 3)


@pytest.mark.filterwarnings("ignore:Lower right causal bias")  # PyTorch's, for q > kv
def test_causal_biases_match_pytorch():
    tb = pytest.importorskip("torch.nn.attention.bias")
    for q, kv in ((2, 10), (4, 4), (5, 3)):
        for name in ("causal_upper_left", "causal_lower_right"):
            c = getattr(clgrad.nn.attention.bias, name)(q, kv)
            t = getattr(tb, name)(q, kv)
            assert c.tolist() == t._materialize().tolist(), (name, q, kv)
