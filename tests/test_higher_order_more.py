"""Second (and higher) derivatives (create_graph) of the ops made differentiable twice last:
prod (through zeros), interpolate and nn.Upsample, the pointwise losses (binary cross-entropy
with and without logits, smooth_l1/huber/l1, kl_div), F.pad's reflect/replicate and negative
amounts, linalg.det/inv/slogdet/logdet/cholesky/eigh/eigvalsh/pinv, as_strided and the views
of split/chunk/unbind, scatter_reduce, sinc/i0/i0e/i1/i1e, xlogy/xlog1py/entr, grid_sample,
and the elementwise ops whose backward was already of recording ops (hypot, copysign, frac,
logit, erfcx, log_ndtr, ndtri, nansum, igamma, diag_embed, nan_to_num); with those that
worked already (the composed losses, distances, pixel_shuffle) as regression rows.

Oracles: gradgradcheck (float64 central differences of the first-order gradients: those run
the ops' own first-order kernels, independent of the recorded create_graph path, and of the
gradients w.r.t. grad_outputs), hand Hessians (prod through zeros), the first-order values
without create_graph (the recorded path must give the kernels' numbers), and PyTorch
(/tmp/torchlib, skipped without it): Hessian-vector products, third derivatives through split
pieces, PyTorch's own errors, and a gradient-penalty program's parameter gradients."""
import numpy as np
import pytest

import clgrad
import clgrad.nn.functional as F
from test_higher_order import F64, _rand
from test_higher_order_ops import _hvp, _inputs, check_directional_fd



def _spd(n, seed):
    """A well-conditioned n x n matrix (3 I + noise)."""
    return 3.0 * np.eye(n) + _rand((n, n), seed)


def _c(T, a):
    """A float64 constant of the library T (clgrad or torch)."""
    return T.tensor(np.asarray(a, np.float64))


def _i(T, a):
    return T.tensor(np.asarray(a, np.int64))


def _pd(T, a):
    """A symmetric positive-definite matrix made of a: a a^T + 3 I (cholesky reads one
    triangle, so the input itself must stay symmetric under finite differences)."""
    return a @ a.mT + 3.0 * T.eye(a.shape[-1], dtype=T.float64)


def _sym(T, a):
    return a + a.mT


TGT = _rand((3, 4), 90, 0.1, 0.9)        # probabilities for the BCE targets
ZERO1 = [[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0]]  # zeros' masks
SIGNS = np.sign(_rand((3, 4), 91))
IDX = [0, 1, 0, 2]

# name -> (fn(T, F, *inputs), input arrays); T is clgrad or torch (the same spelling). A
# product with an input gives piecewise-linear ops a second derivative that is not 0.
CASES = {
    # prod: exact through zeros (a zero kept by a constant mask stays zero when perturbed)
    "prod_dim": (lambda T, F, x: x.prod(1), [_rand((3, 4), 1)]),
    "prod_all": (lambda T, F, x: x.prod(), [_rand((2, 3), 2)]),
    "prod_keepdim": (lambda T, F, x: x.prod(0, keepdim=True), [_rand((3, 4), 3)]),
    "prod_zeros": (lambda T, F, x: (x * _c(T, ZERO1)).prod(1), [_rand((3, 4), 4)]),
    "prod_zeros_all": (lambda T, F, x: (x * _c(T, [1.0, 0.0, 1.0])).prod(), [_rand(3, 5)]),
    # interpolate / Upsample
    "nearest": (lambda T, F, x: F.interpolate(x * x, scale_factor=2), [_rand((1, 2, 3, 3), 6)]),
    "nearest_size": (lambda T, F, x: F.interpolate(x * x, size=(5, 4)),
                     [_rand((2, 1, 3, 3), 7)]),
    "nearest_exact": (lambda T, F, x: F.interpolate(x * x, size=(5, 2), mode="nearest-exact"),
                      [_rand((1, 2, 3, 3), 8)]),
    "nearest_1d": (lambda T, F, x: F.interpolate(x * x, size=7), [_rand((2, 2, 3), 9)]),
    "bilinear": (lambda T, F, x: F.interpolate(x * x, size=(5, 4), mode="bilinear"),
                 [_rand((1, 2, 3, 3), 10)]),
    "bilinear_align": (lambda T, F, x: F.interpolate(x * x, size=(5, 4), mode="bilinear",
                                                     align_corners=True),
                       [_rand((1, 2, 3, 3), 11)]),
    "bilinear_down": (lambda T, F, x: F.interpolate(x * x, scale_factor=0.5, mode="bilinear"),
                      [_rand((1, 1, 5, 4), 12)]),
    "linear": (lambda T, F, x: F.interpolate(x * x, size=5, mode="linear"),
               [_rand((1, 2, 3), 13)]),
    "linear_align": (lambda T, F, x: F.interpolate(x * x, size=5, mode="linear",
                                                   align_corners=True), [_rand((1, 2, 3), 14)]),
    "trilinear": (lambda T, F, x: F.interpolate(x * x, size=(3, 3, 2), mode="trilinear"),
                  [_rand((1, 1, 2, 2, 3), 15)]),
    "nearest_3d": (lambda T, F, x: F.interpolate(x * x, scale_factor=2), [_rand((1, 1, 2, 2, 2),
                                                                                 16)]),
    "upsample_module": (lambda T, F, x: T.nn.Upsample(scale_factor=2, mode="bilinear",
                                                      align_corners=False)(x).sin(),
                        [_rand((1, 2, 2, 3), 17)]),
    # pointwise losses
    "bce": (lambda T, F, x: F.binary_cross_entropy(T.sigmoid(x), _c(T, TGT)),
            [_rand((3, 4), 18)]),
    "bce_weight_sum": (lambda T, F, x: F.binary_cross_entropy(
        T.sigmoid(x), _c(T, TGT), weight=_c(T, [0.5, 1.0, 2.0, 1.5]), reduction="sum"),
        [_rand((3, 4), 19)]),
    "bce_target": (lambda T, F, x, t: F.binary_cross_entropy(T.sigmoid(x), t,
                                                            reduction="none") * x,
                   [_rand((3, 4), 20), TGT]),
    "bce_logits": (lambda T, F, x: F.binary_cross_entropy_with_logits(x, _c(T, TGT)),
                   [_rand((3, 4), 21) * 3]),
    "bce_logits_weights": (lambda T, F, x: F.binary_cross_entropy_with_logits(
        x, _c(T, TGT), weight=_c(T, [0.5, 1.0, 2.0, 1.5]), pos_weight=_c(T, [2.0, 0.5, 1, 3])),
        [_rand((3, 4), 22)]),
    "bce_logits_target": (lambda T, F, x, t: F.binary_cross_entropy_with_logits(
        x, t, reduction="none", pos_weight=_c(T, [2.0, 0.5, 1.0, 3.0])) * t,
        [_rand((3, 4), 24), TGT]),
    "smooth_l1": (lambda T, F, x, y: F.smooth_l1_loss(x * x, y, beta=0.5),
                  [_rand((3, 4), 25), _rand((3, 4), 26)]),
    "smooth_l1_beta0": (lambda T, F, x, y: F.smooth_l1_loss(x * x, y, beta=0.0,
                                                            reduction="none") * x,
                        [_rand((3, 4), 27), _rand((3, 4), 28)]),
    "huber": (lambda T, F, x, y: F.huber_loss(x * x, y, delta=0.7, reduction="sum"),
              [_rand((3, 4), 29), _rand((3, 4), 30)]),
    "l1": (lambda T, F, x, y: F.l1_loss(x * x, y, reduction="none") * y,
           [_rand((3, 4), 31), _rand((3, 4), 32)]),
    "kl_div_batchmean": (lambda T, F, x, t: F.kl_div(x, t, reduction="batchmean") * (x * t).sum(),
                         [_rand((3, 4), 33), _rand((3, 4), 34, 0.1, 1.0)]),
    "kl_div_log_target": (lambda T, F, x, t: F.kl_div(x, t, reduction="none", log_target=True),
                          [_rand((3, 4), 35), _rand((3, 4), 36)]),
    # losses and distances that were differentiable twice already (regression rows)
    "soft_margin": (lambda T, F, x: F.soft_margin_loss(x * x, _c(T, SIGNS)),
                    [_rand((3, 4), 37)]),
    "margin_ranking": (lambda T, F, a, b: F.margin_ranking_loss(a * a, b, _c(T, SIGNS[0]),
                                                                margin=0.1),
                       [_rand(4, 38), _rand(4, 39)]),
    "hinge_embedding": (lambda T, F, x: F.hinge_embedding_loss(x * x, _c(T, SIGNS)),
                        [_rand((3, 4), 40)]),
    "cosine_embedding": (lambda T, F, a, b: F.cosine_embedding_loss(a, b, _c(T, SIGNS[:, 0]),
                                                                    margin=0.1),
                         [_rand((3, 4), 41), _rand((3, 4), 42)]),
    "triplet_margin": (lambda T, F, a, p, n: F.triplet_margin_loss(a, p, n, margin=2.0),
                       [_rand((3, 4), 43), _rand((3, 4), 44), _rand((3, 4), 45)]),
    "cosine_similarity": (lambda T, F, a, b: F.cosine_similarity(a, b),
                          [_rand((3, 4), 46), _rand((3, 4), 47)]),
    "pairwise_distance": (lambda T, F, a, b: F.pairwise_distance(a, b, p=3),
                          [_rand((3, 4), 48), _rand((3, 4), 49)]),
    "cdist": (lambda T, F, a, b: T.cdist(a, b), [_rand((3, 4), 50), _rand((2, 4), 51)]),
    "pixel_shuffle": (lambda T, F, x: F.pixel_shuffle(x * x, 2), [_rand((1, 4, 2, 3), 52)]),
    "pixel_unshuffle": (lambda T, F, x: F.pixel_unshuffle(x * x, 2), [_rand((1, 1, 4, 2), 53)]),
    # padding
    "pad_crop": (lambda T, F, x: F.pad(x * x, (-1, 2, 1, -1)), [_rand((1, 2, 4, 4), 54)]),
    "pad_crop_value": (lambda T, F, x: F.pad(x * x, (-1, -1, 0, 1), value=0.5),
                       [_rand((2, 3, 4), 55)]),
    "pad_reflect": (lambda T, F, x: F.pad(x * x, (2, 1, 1, 2), mode="reflect"),
                    [_rand((1, 2, 4, 4), 56)]),
    "pad_reflect_1d": (lambda T, F, x: F.pad(x * x, (3, 1), mode="reflect"),
                       [_rand((2, 2, 4), 57)]),
    "pad_reflect_crop": (lambda T, F, x: F.pad(x * x, (2, -1), mode="reflect"),
                         [_rand((1, 2, 4), 58)]),
    "pad_replicate": (lambda T, F, x: F.pad(x * x, (2, 1, 0, 3), mode="replicate"),
                      [_rand((1, 2, 3, 4), 59)]),
    "pad_replicate_3d": (lambda T, F, x: F.pad(x * x, (1, 1, 1, 0, 0, 2), mode="replicate"),
                         [_rand((1, 1, 2, 3, 3), 60)]),
    "pad_circular": (lambda T, F, x: F.pad(x * x, (2, 1, 1, 1), mode="circular"),
                     [_rand((1, 2, 3, 4), 61)]),
    "reflection_pad_module": (lambda T, F, x: T.nn.ReflectionPad2d((1, 2, 2, 0))(x).sin(),
                              [_rand((1, 1, 3, 3), 62)]),
    # linalg
    "det": (lambda T, F, a: T.linalg.det(a), [_spd(3, 63)]),
    "det_batched": (lambda T, F, a: T.linalg.det(a) ** 2, [_rand((2, 3, 3), 64)]),
    "torch_det": (lambda T, F, a: T.det(a), [_rand((3, 3), 65)]),
    "inv": (lambda T, F, a: T.linalg.inv(a), [_spd(3, 66)]),
    "inverse_batched": (lambda T, F, a: T.inverse(a), [np.stack([_spd(3, 67), _spd(3, 68)])]),
    "slogdet": (lambda T, F, a: T.linalg.slogdet(a)[1], [_rand((3, 3), 69)]),
    "logdet": (lambda T, F, a: T.logdet(_pd(T, a)), [_rand((3, 3), 70)]),
    "cholesky": (lambda T, F, a: T.linalg.cholesky(_pd(T, a)), [_rand((3, 3), 71)]),
    "cholesky_upper": (lambda T, F, a: T.linalg.cholesky(_pd(T, a), upper=True),
                       [_rand((2, 3, 3), 72)]),
    "eigh_values": (lambda T, F, a: T.linalg.eigh(_sym(T, a)).eigenvalues ** 2,
                    [_rand((3, 3), 73)]),
    "eigh_vectors": (lambda T, F, a: T.linalg.eigh(_sym(T, a)).eigenvectors ** 2,
                     [_rand((3, 3), 74)]),
    "eigh_upper": (lambda T, F, a: (T.linalg.eigh(_sym(T, a), UPLO="U").eigenvectors[..., 0] ** 2
                                    * T.linalg.eigh(_sym(T, a), UPLO="U").eigenvalues),
                   [_rand((2, 3, 3), 75)]),
    "eigvalsh": (lambda T, F, a: T.linalg.eigvalsh(_sym(T, a)), [_rand((3, 3), 76)]),
    "pinv": (lambda T, F, a: T.linalg.pinv(a), [_rand((4, 3), 77)]),
    "pinv_wide": (lambda T, F, a: T.linalg.pinv(a), [_rand((2, 3), 78)]),
    "lstsq": (lambda T, F, a, b: T.linalg.lstsq(a, b).solution, [_rand((4, 3), 79),
                                                                 _rand((4, 2), 80)]),
    # views
    "as_strided": (lambda T, F, x: (x * x).as_strided((2, 3), (1, 2), 1), [_rand(8, 81)]),
    "as_strided_overlap": (lambda T, F, x: (x * x).as_strided((3, 3), (1, 1), 1),
                           [_rand(6, 82)]),
    "split": (lambda T, F, x: (x * x).split([1, 3], 1)[1] ** 2, [_rand((3, 4), 83)]),
    "chunk": (lambda T, F, x: (x * x).chunk(2, 0)[1] ** 2, [_rand((4, 3), 84)]),
    "unbind": (lambda T, F, x: (x * x).unbind(1)[2] ** 2, [_rand((3, 4), 85)]),
    # scatter_reduce
    "scatter_sum": (lambda T, F, x, s: x.scatter_reduce(0, _i(T, IDX), s * s, "sum"),
                    [_rand(3, 86), _rand(4, 87)]),
    "scatter_mean": (lambda T, F, x, s: (x * x).scatter_reduce(0, _i(T, IDX), s * s, "mean"),
                     [_rand(3, 88), _rand(4, 89)]),
    "scatter_mean_exclude": (lambda T, F, x, s: (x * x).scatter_reduce(
        0, _i(T, [0, 1, 0, 0]), s * s, "mean", include_self=False), [_rand(3, 90), _rand(4, 91)]),
    "scatter_amax": (lambda T, F, x, s: (x * x).scatter_reduce(0, _i(T, IDX), s * s, "amax"),
                     [_rand(3, 92), _rand(4, 93)]),
    "scatter_amin_exclude": (lambda T, F, x, s: (x * x).scatter_reduce(
        0, _i(T, IDX), s * s, "amin", include_self=False), [_rand(3, 94), _rand(4, 95)]),
    "scatter_prod": (lambda T, F, x, s: x.scatter_reduce(0, _i(T, IDX), s, "prod"),
                     [_rand(3, 96), _rand(4, 97)]),
    "scatter_prod_exclude": (lambda T, F, x, s: x.scatter_reduce(
        0, _i(T, [0, 1, 0, 0]), s, "prod", include_self=False), [_rand(3, 98), _rand(4, 99)]),
    "scatter_prod_zero_src": (lambda T, F, x, s: x.scatter_reduce(
        0, _i(T, IDX), s * _c(T, [0.0, 1.0, 1.0, 1.0]), "prod"), [_rand(3, 100), _rand(4, 101)]),
    "scatter_prod_zero_self": (lambda T, F, x, s: (x * _c(T, [0.0, 1.0, 1.0])).scatter_reduce(
        0, _i(T, IDX), s * _c(T, [0.0, 1.0, 1.0, 1.0]), "prod"), [_rand(3, 102), _rand(4, 103)]),
    "scatter_2d_mean": (lambda T, F, x, s: x.scatter_reduce(1, _i(T, [[0, 1], [2, 0]]), s * s,
                                                            "mean"),
                        [_rand((2, 3), 104), _rand((2, 2), 105)]),
    "scatter_2d_prod": (lambda T, F, x, s: x.scatter_reduce(1, _i(T, [[0, 0], [2, 0]]), s,
                                                            "prod", include_self=False),
                        [_rand((2, 3), 106), _rand((2, 2), 107)]),
    # elementwise
    "sinc": (lambda T, F, x: T.sinc(x), [_rand(5, 108)]),
    "i0": (lambda T, F, x: T.i0(x), [_rand(5, 109)]),
    "i0e": (lambda T, F, x: T.special.i0e(x), [_rand(5, 110)]),
    "i1": (lambda T, F, x: T.special.i1(x), [_rand(5, 111)]),
    "i1e": (lambda T, F, x: T.special.i1e(x), [_rand(5, 112)]),
    "xlogy": (lambda T, F, x, y: T.xlogy(x, y), [_rand((2, 5), 113), _rand(5, 114, 0.2, 2.0)]),
    "xlogy_numbers": (lambda T, F, x: T.xlogy(x, 2.5) + T.xlogy(1.5, x * x), [_rand(5, 115)]),
    "xlogy_zero": (lambda T, F, x, y: T.xlogy(x * _c(T, [0.0, 1, 1, 1]), y),
                   [_rand(4, 116), _rand(4, 117, 0.2, 2.0)]),
    "xlog1py": (lambda T, F, x, y: T.special.xlog1py(x, y), [_rand(5, 118),
                                                             _rand(5, 119, -0.5, 2.0)]),
    "entr": (lambda T, F, x: T.special.entr(x), [_rand(5, 120, 0.2, 2.0)]),
    "hypot": (lambda T, F, a, b: T.hypot(a, b), [_rand(4, 121), _rand(4, 122)]),
    "copysign": (lambda T, F, a, b: T.copysign(a, b) * a, [_rand(4, 123), _rand(4, 124)]),
    "frac": (lambda T, F, x: T.frac(x) * x, [_rand(4, 125) * 3]),
    "logit": (lambda T, F, x: T.logit(x), [_rand(4, 126, 0.2, 0.8)]),
    "logit_eps": (lambda T, F, x: T.logit(x, eps=0.1) * x, [_rand(4, 127, 0.2, 0.8)]),
    "erfcx": (lambda T, F, x: T.special.erfcx(x), [_rand(4, 128)]),
    "log_ndtr": (lambda T, F, x: T.special.log_ndtr(x), [_rand(4, 129) * 2]),
    "ndtri": (lambda T, F, x: T.special.ndtri(x), [_rand(4, 130, 0.1, 0.9)]),
    "nansum": (lambda T, F, x: T.nansum(x * x, 1), [_rand((3, 4), 131)]),
    "nanmean": (lambda T, F, x: T.nanmean(x * x, 0), [_rand((3, 4), 132)]),
    "gammainc": (lambda T, F, x: T.special.gammainc(_c(T, [2.0, 0.5, 3.0]), x),
                 [_rand(3, 133, 0.5, 3.0)]),
    "diag_embed": (lambda T, F, x: T.diag_embed(x * x, 1), [_rand((2, 3), 134)]),
    "nan_to_num": (lambda T, F, x: T.nan_to_num(x * x), [_rand((2, 3), 135)]),
}

# clgrad differentiates these where PyTorch 2.13 cannot (its first-order backward raises:
# binary_cross_entropy_with_logits w.r.t. weight and pos_weight; scatter_reduce with an index
# smaller than src, whose src gradient it returns in the index's shape): gradgradcheck only
CLGRAD_ONLY = {
    "bce_logits_weight_inputs": (lambda T, F, x, w, p: F.binary_cross_entropy_with_logits(
        x, _c(T, TGT), weight=w, pos_weight=p), [_rand((3, 4), 22), _rand(4, 23),
                                                  _rand(4, 24, 0.5, 2.0)]),
    "bce_weight_input": (lambda T, F, x, w: F.binary_cross_entropy(
        T.sigmoid(x), _c(T, TGT), weight=w * w), [_rand((3, 4), 25), _rand(4, 26)]),
    "scatter_small_index_mean": (lambda T, F, x, s: x.scatter_reduce(
        1, _i(T, [[0, 1], [2, 0]]), s * s, "mean"), [_rand((2, 3), 27), _rand((2, 3), 28)]),
    "scatter_small_index_prod": (lambda T, F, x, s: x.scatter_reduce(
        1, _i(T, [[0, 0], [2, 0]]), s, "prod", include_self=False),
        [_rand((2, 3), 29), _rand((3, 3), 30)]),
}

GRID_CASES = {}
for _mode in ("bilinear", "nearest"):
    for _pad in ("zeros", "border", "reflection"):
        for _align in (False, True):
            GRID_CASES[f"grid_sample_{_mode}_{_pad}_{int(_align)}"] = (
                lambda T, F, x, g, m=_mode, p=_pad, a=_align: F.grid_sample(
                    x * x, g * 1.3, mode=m, padding_mode=p, align_corners=a),
                [_rand((2, 2, 3, 4), 136), _rand((2, 2, 3, 2), 137, -0.95, 0.95)])
GRID_CASES["affine_grid_sample"] = (
    lambda T, F, x, th: F.grid_sample(x, F.affine_grid(th, (1, 2, 3, 3), align_corners=False),
                                      align_corners=False),
    [_rand((1, 2, 4, 4), 138), np.array([[[0.9, 0.2, 0.1], [-0.3, 1.1, -0.2]]])])
CASES.update(GRID_CASES)
ALL = {**CASES, **CLGRAD_ONLY}


@pytest.mark.parametrize("name", list(ALL))
def test_gradgradcheck(name):
    fn, arrays = ALL[name]
    assert clgrad.autograd.gradgradcheck(lambda *xs: fn(clgrad, F, *xs),
                                         _inputs(clgrad, arrays))


@pytest.mark.parametrize("name", list(ALL))
def test_create_graph_gradient_is_the_first_order_one(name):
    # under create_graph the gradient comes of the recorded formulas: the same numbers as the
    # first-order kernels' (clamps, masks and boundaries included)
    fn, arrays = ALL[name]
    xs = _inputs(clgrad, arrays)
    out = fn(clgrad, F, *xs)
    w = clgrad.tensor(_rand(tuple(out.shape), 7))
    plain = clgrad.autograd.grad((out * w).sum(), xs, retain_graph=True, allow_unused=True)
    again = clgrad.autograd.grad((out * w).sum(), xs, create_graph=True, allow_unused=True)
    for i, (a, b) in enumerate(zip(plain, again)):
        if a is None:
            assert b is None
            continue
        np.testing.assert_allclose(b.detach().numpy(), a.numpy(), rtol=1e-12, atol=1e-13,
                                   err_msg=f"{name} input {i}")


NAN = float("nan")
EDGES = {  # inputs on the kinks, bounds and poles: the recorded formulas pick the kernels' side
    "grid_sample_border_at_bounds": (lambda x, g: F.grid_sample(
        x, g, padding_mode="border", align_corners=True),
        [_rand((1, 1, 3, 3), 160), [[[[-1.0, 1.0], [1.0, -1.0]], [[1.5, -2.0], [0.0, 0.25]]]]]),
    "grid_sample_reflection_at_bounds": (lambda x, g: F.grid_sample(
        x, g, padding_mode="reflection", align_corners=False),
        [_rand((1, 1, 3, 3), 161), [[[[-1.0, 1.0], [2.0, -3.0]], [[1.5, -2.0], [1 / 3, 0.25]]]]]),
    "grid_sample_nan_border": (lambda x, g: F.grid_sample(x, g, padding_mode="border",
                                                          align_corners=False),
                               [_rand((1, 2, 3, 3), 162), [[[[NAN, 0.5], [0.2, NAN]]]]]),
    "grid_sample_nan_zeros": (lambda x, g: F.grid_sample(x, g, align_corners=False),
                              [_rand((1, 2, 3, 3), 163), [[[[NAN, 0.5], [0.2, 0.1]]]]]),
    "grid_sample_one_pixel_reflection": (lambda x, g: F.grid_sample(
        x, g, padding_mode="reflection", align_corners=True),
        [_rand((1, 1, 1, 3), 164), [[[[0.3, 0.5], [0.9, -1.7]]]]]),
    "huber_at_delta": (lambda x, t: F.huber_loss(x, t, delta=0.5, reduction="none"),
                       [[0.5, -0.5, 0.0, 1.25], [0.0, 0.0, 0.0, 0.25]]),
    "smooth_l1_at_beta": (lambda x, t: F.smooth_l1_loss(x, t, beta=0.5, reduction="none"),
                          [[0.5, -0.5, 0.0, 1.25], [0.0, 0.0, 0.0, 0.25]]),
    "l1_at_zero": (lambda x, t: F.l1_loss(x, t, reduction="none"), [[0.5, 0.0], [0.5, 1.0]]),
    "bce_at_edges": (lambda x, t: F.binary_cross_entropy(x, t, reduction="none"),
                     [[0.0, 1.0, 1e-13, 0.5], [0.3, 0.7, 0.2, 0.5]]),
    "kl_div_zero_target": (lambda x, t: F.kl_div(x, t, reduction="none"),
                           [[-0.5, -1.0], [0.0, 0.5]]),
    "xlogy_at_zero": (lambda x, y: clgrad.xlogy(x, y), [[0.0, 0.0, 1.5], [0.0, -1.0, 2.0]]),
    "sinc_at_zero": (lambda x: clgrad.sinc(x), [[0.0, 1.0, -2.0]]),
    "i1_at_zero": (lambda x: clgrad.special.i1(x) + clgrad.special.i1e(x), [[0.0, 1e-20]]),
}


@pytest.mark.parametrize("name", list(EDGES))
def test_create_graph_gradient_is_the_first_order_one_at_the_edges(name):
    fn, arrays = EDGES[name]
    xs = _inputs(clgrad, arrays)
    out = fn(*xs)
    w = clgrad.tensor(_rand(tuple(out.shape), 8))
    plain = clgrad.autograd.grad((out * w).sum(), xs, retain_graph=True)
    again = clgrad.autograd.grad((out * w).sum(), xs, create_graph=True)
    for i, (a, b) in enumerate(zip(plain, again)):
        np.testing.assert_allclose(b.detach().numpy(), a.numpy(), rtol=1e-12, atol=1e-13,
                                   err_msg=f"{name} input {i}")


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


# PyTorch 2.13 has no second derivative of these (its error); clgrad's is gradgradcheck's above
TORCH_RAISES = {"cdist": "_cdist_backward"}


@pytest.mark.parametrize("name", list(CASES))
def test_hessian_vector_products_match_pytorch(name, torch):
    fn, arrays = CASES[name]
    ours = _hvp(clgrad, F, fn, arrays)
    if name in TORCH_RAISES:
        with pytest.raises((RuntimeError, NotImplementedError), match=TORCH_RAISES[name]):
            _hvp(torch, torch.nn.functional, fn, arrays)
        return
    try:
        theirs = _hvp(torch, torch.nn.functional, fn, arrays)
    except RuntimeError as e:  # PyTorch 2.11 (the GPU machine's); 2.13 has it
        if "grid_sampler_2d_backward is not implemented" not in str(e):
            raise
        pytest.skip(f"PyTorch {torch.__version__} has no double backward of grid_sample")
    for i, (a, b) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10, err_msg=f"{name} input {i}")


# -- prod through zeros: Hessians by hand --------------------------------------------------------
@pytest.mark.parametrize("x, want", [
    # f = x0 x1 x2: H_ij = the product of the third element (0 on the diagonal)
    ([0.0, 2.0, 3.0], [[0, 3, 2], [3, 0, 0], [2, 0, 0]]),
    ([0.0, 0.0, 3.0], [[0, 3, 0], [3, 0, 0], [0, 0, 0]]),
    ([0.0, 0.0, 0.0], [[0, 0, 0], [0, 0, 0], [0, 0, 0]]),
    ([1.5, 2.0, 3.0], [[0, 3, 2], [3, 0, 1.5], [2, 1.5, 0]]),
])
def test_prod_hessian_through_zeros_by_hand(x, want):
    h = clgrad.autograd.functional.hessian(lambda t: t.prod(), clgrad.tensor(x, dtype=F64))
    np.testing.assert_array_equal(h.numpy(), np.array(want, np.float64))


def test_prod_third_derivative_through_zeros():
    # d^3 (x0 x1 x2 x3) / dx0 dx1 dx2 = x3, also where x0..x2 are zero
    x = clgrad.tensor([0.0, 0.0, 0.0, 5.0], dtype=F64, requires_grad=True)
    g, = clgrad.autograd.grad(x.prod(), x, create_graph=True)
    h, = clgrad.autograd.grad(g[0], x, create_graph=True)
    t, = clgrad.autograd.grad(h[1], x)
    np.testing.assert_array_equal(t.numpy(), [0.0, 0.0, 5.0, 0.0])


# -- higher orders through views and linear ops --------------------------------------------------
def _nth(lib, fn, x, k, c):
    """The k-th nested create_graph gradient of sum(fn(x)), each step through sum(g^2 c), so
    every order's incoming gradient depends on x (the views' adjoints then carry a graph)."""
    y = fn(lib, x).sum()
    for _ in range(k):
        g, = lib.autograd.grad(y, x, create_graph=True)
        y = (g * g * lib.tensor(c)).sum()
    return y


NTH = {  # orders past the second reach the backward of the recorded backward
    "split": lambda T, x: T.exp(x.split([1, 3], 1)[1]),
    "unbind": lambda T, x: T.exp(x.unbind(1)[2]),
    "chunk": lambda T, x: T.exp(x.chunk(2, 1)[0]),
    "as_strided": lambda T, x: T.exp(x.as_strided((2, 2), (1, 2), 1)),
    "interpolate": lambda T, x: T.exp(T.nn.functional.interpolate(
        x.reshape(1, 1, 2, 4), size=(3, 5), mode="bilinear")),
    "pad_reflect": lambda T, x: T.exp(T.nn.functional.pad(x.reshape(1, 2, 4), (2, 1),
                                                          mode="reflect")),
}
X4 = np.array([[0.3, -0.7, 1.1, 0.4], [0.9, -0.2, 0.5, 1.3]]) * 0.5
C4 = np.linspace(0.5, 1.5, 8).reshape(2, 4)


@pytest.mark.parametrize("name", list(NTH))
def test_third_and_fourth_derivatives_match_pytorch(name, torch):
    for k in (2, 3):
        ours = _nth(clgrad, NTH[name], clgrad.tensor(X4, requires_grad=True), k, C4)
        theirs = _nth(torch, NTH[name], torch.tensor(X4, requires_grad=True), k, C4)
        np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-11, err_msg=f"k={k}")


@pytest.mark.parametrize("name", list(NTH))
def test_third_derivatives_match_finite_differences(name):
    # d/dx of the second-order quantity along a direction, against its central difference
    fn = NTH[name]
    x = clgrad.tensor(X4, requires_grad=True)
    g, = clgrad.autograd.grad(_nth(clgrad, fn, x, 2, C4), x)
    u, eps = _rand((2, 4), 5), 1e-6
    plus = _nth(clgrad, fn, clgrad.tensor(X4 + eps * u, requires_grad=True), 2, C4).item()
    minus = _nth(clgrad, fn, clgrad.tensor(X4 - eps * u, requires_grad=True), 2, C4).item()
    np.testing.assert_allclose(float((g.numpy() * u).sum()), (plus - minus) / (2 * eps),
                               rtol=1e-6)


# -- a program: a gradient penalty through Upsample, reflection padding and BCE ------------------
def _critic(lib):
    nn = lib.nn
    return nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(1, 3, 3), nn.Softplus(),
                         nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
                         nn.ReplicationPad2d((1, 0, 0, 1)), nn.Conv2d(3, 2, 3, stride=2),
                         nn.Tanh(), nn.Flatten(), nn.Linear(18, 1)).double()


def _program_loss(lib, critic, real, fake, alpha):
    """A DRAGAN/WGAN-GP style critic loss: binary cross-entropy with logits on real and fake
    images, plus the penalty on the critic's input gradient at interpolates (create_graph
    through every layer), and a smooth_l1 pull of the interpolates' scores."""
    F_ = lib.nn.functional
    interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    d = critic(interp)
    g, = lib.autograd.grad(d.sum(), interp, create_graph=True)
    gp = ((g.reshape(g.shape[0], -1).norm(2, dim=1) - 1) ** 2).mean()
    ones, zeros = lib.ones_like(d), lib.zeros_like(d)
    bce = F_.binary_cross_entropy_with_logits(critic(real), ones) + \
        F_.binary_cross_entropy_with_logits(critic(fake), zeros)
    return bce + 10.0 * gp + F_.smooth_l1_loss(d, zeros + 0.25, beta=0.5)


def _program_data():
    rng = np.random.default_rng(17)
    return (rng.standard_normal((2, 1, 3, 3)), rng.standard_normal((2, 1, 3, 3)),
            rng.uniform(size=(2, 1, 1, 1)))


def _run_program(lib, critic):
    real, fake, alpha = (lib.tensor(a) for a in _program_data())
    return _program_loss(lib, critic, real, fake, alpha)


def test_gradient_penalty_program_matches_finite_differences():
    clgrad.manual_seed(4)
    critic = _critic(clgrad)
    check_directional_fd(list(critic.parameters()), lambda: _run_program(clgrad, critic))


def test_gradient_penalty_program_matches_pytorch(torch):
    torch.manual_seed(4)
    theirs = _critic(torch)
    ours = _critic(clgrad)
    ours.load_state_dict({k: clgrad.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    _run_program(clgrad, ours).backward()
    _run_program(torch, theirs).backward()
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg=name)


# -- what still raises --------------------------------------------------------------------------
def test_ops_still_without_a_second_derivative_raise_naming_them():
    a = clgrad.tensor(_rand((3, 2), 140), requires_grad=True)
    cases = (("linalg_svdvals", lambda: clgrad.linalg.svdvals(a)),
             ("linalg_svd", lambda: clgrad.linalg.svd(a, full_matrices=False).S),
             ("linalg_svdvals", lambda: clgrad.linalg.matrix_norm(a, "nuc")))
    for name, fn in cases:
        with pytest.raises(RuntimeError, match=f"backward of '{name}'.*not differentiable"):
            clgrad.autograd.grad((fn() ** 2).sum(), a, create_graph=True)
        g, = clgrad.autograd.grad((fn() ** 2).sum(), a)  # first order: unchanged
        assert g.shape == a.shape


@pytest.mark.parametrize("op", ["det", "slogdet"])
def test_second_derivative_at_a_singular_matrix_raises_naming_the_op(op):
    a = clgrad.tensor([[1.0, 2.0], [2.0, 4.0]], dtype=F64, requires_grad=True)
    f = (lambda: clgrad.linalg.det(a)) if op == "det" else \
        (lambda: clgrad.linalg.slogdet(a + clgrad.eye(2, dtype=F64) * 0.0)[1])
    with pytest.raises(RuntimeError, match=f"linalg.{op}: the second derivative"):
        clgrad.autograd.grad(f(), a, create_graph=True)
    if op == "det":  # first order still works there (the adjugate through the SVD)
        g, = clgrad.autograd.grad(f(), a)
        np.testing.assert_allclose(g.numpy(), [[4.0, -2.0], [-2.0, 1.0]], atol=1e-12)


def _scatter_prod_two_zeros(lib):
    x = lib.tensor([1.5, 2.0, 0.5], dtype=lib.float64, requires_grad=True)
    s = lib.tensor([0.0, 3.0, 0.0, 2.0], dtype=lib.float64, requires_grad=True)
    out = x.scatter_reduce(0, lib.tensor([0, 1, 0, 2]), s, "prod")
    gx, gs = lib.autograd.grad(out.sum(), (x, s), create_graph=True)
    return x, s, gx, gs


def test_scatter_reduce_prod_two_zeros_raises_when_differentiated_again():
    # PyTorch's rule: src's gradient where two zeros of src meet at one target has no
    # derivative (its DelayedError); the gradient itself, and self's second derivative, work
    x, s, gx, gs = _scatter_prod_two_zeros(clgrad)
    np.testing.assert_array_equal(gs.detach().numpy(), [0.0, 2.0, 0.0, 0.5])
    np.testing.assert_array_equal(gx.detach().numpy(), [0.0, 3.0, 2.0])
    with pytest.raises(RuntimeError, match="Double backward is unsupported for src when >1 "
                                           "zeros in src"):
        clgrad.autograd.grad(gs.sum(), s)
    h, = clgrad.autograd.grad(gx.sum(), s, allow_unused=True)
    np.testing.assert_array_equal(h.numpy(), [0.0, 1.0, 0.0, 1.0])  # d(s1 + x2 s3) / ds


def test_scatter_reduce_prod_two_zeros_as_pytorch(torch):
    for lib in (clgrad, torch):
        _, s, _, gs = _scatter_prod_two_zeros(lib)
        with pytest.raises(RuntimeError, match="Double backward is unsupported for src when >1"):
            lib.autograd.grad(gs.sum(), s)


# -- the first order never takes the create_graph path ---------------------------------------
def test_first_order_gradients_do_not_take_the_create_graph_path(monkeypatch):
    from clgrad.ops import (decomp, grid_sample, loss, padding, reduce, scatters, upsample,
                            views)
    calls = []

    def spy(mod, name):
        orig = getattr(mod, name)

        def wrapped(*a, **k):
            calls.append(name)
            return orig(*a, **k)
        monkeypatch.setattr(mod, name, wrapped)
    for mod, name in ((reduce, "_prod_others"), (loss, "_loss_derivatives"),
                      (padding, "_pad_bwd_rec"), (upsample, "_backward_rec"),
                      (views, "_restrided"), (scatters, "_grads_recorded"),
                      (grid_sample, "_sample_recorded"), (decomp, "_inv_for_double")):
        spy(mod, name)
    x = clgrad.tensor(_rand((1, 1, 3, 3), 150), requires_grad=True)
    grid = clgrad.tensor(_rand((1, 2, 2, 2), 151, -0.9, 0.9), requires_grad=True)

    def program():
        y = F.interpolate(F.pad(x, (1, 1, 1, 1), mode="reflect"), size=(4, 4), mode="bilinear")
        y = F.grid_sample(y, grid, align_corners=False)
        z = y.reshape(-1).as_strided((2, 2), (1, 2)).prod(1)
        m = clgrad.linalg.det(y.reshape(2, 2) + 3 * clgrad.eye(2, dtype=F64))
        s = clgrad.zeros(2, dtype=F64).scatter_reduce(0, clgrad.tensor([0, 1, 1, 0]),
                                                      y.reshape(-1), "amax")
        return F.binary_cross_entropy_with_logits(z, clgrad.ones(2, dtype=F64)) + m + s.sum()
    program().backward()
    assert calls == [] and x.grad is not None and grid.grad is not None
    g = clgrad.autograd.grad(program(), (x, grid), create_graph=True)
    assert sorted(set(calls)) == ["_backward_rec", "_grads_recorded", "_inv_for_double",
                                  "_loss_derivatives", "_pad_bwd_rec", "_prod_others",
                                  "_restrided", "_sample_recorded"]
    assert all(t.requires_grad for t in g)


def test_an_output_read_by_the_create_graph_path_is_checked_for_writes():
    # det's, cholesky's and scatter_reduce's create_graph gradients read their outputs (as
    # PyTorch's saved results): written in place since, they raise as a saved input would
    a = clgrad.tensor(_spd(3, 170), requires_grad=True)
    d = clgrad.linalg.det(a)
    d.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        clgrad.autograd.grad(d, a, create_graph=True)
    g, = clgrad.autograd.grad(clgrad.linalg.det(a) * 2.0, a)  # first order: the adjugate
    np.testing.assert_allclose(g.numpy(), 2 * np.linalg.det(_spd(3, 170)) *
                               np.linalg.inv(_spd(3, 170)).T, rtol=1e-12)
    s = clgrad.tensor([1.5, 2.0], dtype=F64, requires_grad=True)
    r = clgrad.ones(2, dtype=F64).scatter_reduce(0, clgrad.tensor([0, 0]), s, "prod")
    r.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        clgrad.autograd.grad(r.sum(), s, create_graph=True)
