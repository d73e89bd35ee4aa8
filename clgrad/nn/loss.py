"""Loss layers with PyTorch's names, arguments and defaults: L1Loss, SmoothL1Loss, HuberLoss,
BCELoss, BCEWithLogitsLoss, KLDivLoss. The math and gradients live in clgrad/ops/loss.py."""
from __future__ import annotations

from clgrad._args import _check_reduction
from clgrad.nn import functional as F
from clgrad.nn.distance import PairwiseDistance
from clgrad.nn.module import Module
from clgrad.tensor import Tensor

__all__ = ["CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss"]


class CrossEntropyLoss(Module):
    """Softmax cross entropy of logits (N, C) against class indices (N,) int64."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__()
        _check_reduction("CrossEntropyLoss", reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        """Cross entropy of logits ``input`` against ``target`` (class indices or probabilities).

        Shapes:  input (N, C) or (N, C, d1, ...) or (C,); target (N,) / (N, d1, ...) / () int64,
                 or probabilities of input's shape -> () ('mean', 'sum') or the positions
                 (N,) / (N, d1, ...) / () ('none'); see clgrad.nn.functional.cross_entropy
        """
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(Module):
    """Negative log likelihood of log-probabilities (N, C) against class indices (N,)."""

    def __init__(self, weight: Tensor | None = None, ignore_index: int = -100,
                 reduction: str = "mean"):
        super().__init__()
        _check_reduction("NLLLoss", reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction = ignore_index, reduction

    def forward(self, input, target):
        """Negative log likelihood of log-probabilities ``input`` at class indices ``target``.

        Shapes:  as CrossEntropyLoss with class indices; see clgrad.nn.functional.nll_loss
        """
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(Module):
    """Mean (or sum, or none) of the squared differences."""

    def __init__(self, reduction: str = "mean"):
        super().__init__()
        _check_reduction("MSELoss", reduction)
        self.reduction = reduction

    def forward(self, input, target):
        """(input - target)^2 reduced by ``reduction``.

        Shapes:  input, target broadcast together -> () or the broadcast shape ('none');
                 see clgrad.nn.functional.mse_loss
        """
        return F.mse_loss(input, target, reduction=self.reduction)


class _Loss(Module):
    def __init__(self, reduction: str = "mean"):
        super().__init__()
        _check_reduction(type(self).__name__, reduction)
        self.reduction = reduction


class L1Loss(_Loss):
    """|input - target| reduced."""

    def forward(self, input, target):
        """|input - target| reduced; shapes broadcast. See clgrad.nn.functional.l1_loss."""
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """0.5 d^2 / beta where |d| < beta, else |d| - beta / 2."""

    def __init__(self, reduction: str = "mean", beta: float = 1.0):
        super().__init__(reduction)
        self.beta = beta

    def forward(self, input, target):
        """The smooth L1 loss reduced; shapes broadcast. See clgrad.nn.functional.smooth_l1_loss."""
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """0.5 d^2 where |d| < delta, else delta (|d| - delta / 2)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction)
        self.delta = delta

    def forward(self, input, target):
        """The Huber loss reduced; shapes broadcast. See clgrad.nn.functional.huber_loss."""
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_Loss):
    """Binary cross entropy of probabilities; ``weight`` rescales each element."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        """Binary cross entropy of probabilities ``input`` against ``target`` of the same shape.

        Shapes:  input (*), target (*) (same shape) -> () or (*) ('none'); see
                 clgrad.nn.functional.binary_cross_entropy
        Unlike PyTorch, which raises, input outside [0, 1] is not checked (that would need a
        device-to-host read): the log of a negative number makes such an element's loss NaN,
        as a NaN input does (never a plausible finite value).
        """
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Sigmoid + binary cross entropy in one stable step; ``pos_weight`` weighs positives."""

    def __init__(self, weight: Tensor | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        """Binary cross entropy of logits ``input`` against ``target`` of the same shape.

        See clgrad.nn.functional.binary_cross_entropy_with_logits.
        """
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


class KLDivLoss(Module):
    """KL divergence of log-probabilities from a target; reduction 'batchmean' is the true
    KL divergence per sample ('mean' averages over every element, as PyTorch)."""

    def __init__(self, reduction: str = "mean", log_target: bool = False):
        super().__init__()
        if reduction not in ("mean", "batchmean", "sum", "none"):
            raise ValueError(f"KLDivLoss: expected reduction 'mean', 'batchmean', 'sum' or "
                             f"'none', got {reduction!r}")
        self.reduction, self.log_target = reduction, log_target

    def forward(self, input, target):
        """KL divergence of log-probabilities ``input`` from ``target``. See F.kl_div."""
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


# -- margin, embedding, Poisson and Gaussian losses (PyTorch's names, arguments, defaults) ----
class _Legacy(_Loss):
    """A loss taking PyTorch's deprecated size_average / reduce before reduction."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(_legacy(type(self).__name__, size_average, reduce, reduction))


def _legacy(op, size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    return "none" if reduce is False else "sum" if size_average is False else "mean"


class MarginRankingLoss(_Legacy):
    """max(0, -y (x1 - x2) + margin), reduced."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1, input2, target):
        """See clgrad.nn.functional.margin_ranking_loss."""
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_Legacy):
    """x where y = 1, max(0, margin - x) where y = -1, reduced."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input, target):
        """See clgrad.nn.functional.hinge_embedding_loss."""
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SoftMarginLoss(_Legacy):
    """log(1 + exp(-y x)), reduced."""

    def forward(self, input, target):
        """See clgrad.nn.functional.soft_margin_loss."""
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_Legacy):
    """Per-class binary logistic losses averaged over the classes, reduced."""

    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        """See clgrad.nn.functional.multilabel_soft_margin_loss."""
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class CosineEmbeddingLoss(MarginRankingLoss):
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1."""

    def forward(self, input1, input2, target):
        """See clgrad.nn.functional.cosine_embedding_loss."""
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class TripletMarginLoss(_Legacy):
    """max(0, margin + d(a, p) - d(a, n)) with the p-norm distance, reduced."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor, positive, negative):
        """See clgrad.nn.functional.triplet_margin_loss."""
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class PoissonNLLLoss(_Legacy):
    """Poisson negative log likelihood of (log) rates against counts."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input, target):
        """See clgrad.nn.functional.poisson_nll_loss."""
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log likelihood of means ``input`` and variances ``var``."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"):
        super().__init__(reduction)
        self.full, self.eps = full, eps

    def forward(self, input, target, var):
        """See clgrad.nn.functional.gaussian_nll_loss."""
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class MultiMarginLoss(_Legacy):
    """Multi-class hinge loss: sum over i != y of max(0, margin - x[y] + x[i])^p / C."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                 size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p, self.margin = p, margin
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        """See clgrad.nn.functional.multi_margin_loss."""
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


__all__ += ["MarginRankingLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
            "MultiLabelSoftMarginLoss", "CosineEmbeddingLoss", "TripletMarginLoss",
            "PoissonNLLLoss", "GaussianNLLLoss", "MultiMarginLoss"]


class NLLLoss2d(NLLLoss):
    """PyTorch's deprecated name of NLLLoss for (N, C, H, W) inputs: NLLLoss itself."""


__all__ += ["NLLLoss2d"]


class MultiLabelMarginLoss(_Legacy):
    """Multi-label hinge loss: target classes (listed up to the first -1) against the others,
    sum of max(0, 1 - (x[j] - x[i])) / C per sample, reduced."""

    def forward(self, input, target):
        """See clgrad.nn.functional.multilabel_margin_loss."""
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """max(0, margin + d(a, p) - d(a, n)) with any distance ``distance_function`` (a
    PairwiseDistance() child module when none is given, as PyTorch's), reduced."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean"):
        super().__init__(reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function if distance_function is not None \
            else PairwiseDistance()
        self.margin, self.swap = margin, swap

    def forward(self, anchor, positive, negative):
        """See clgrad.nn.functional.triplet_margin_with_distance_loss."""
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


__all__ += ["MultiLabelMarginLoss", "TripletMarginWithDistanceLoss"]


class CTCLoss(_Loss):
    """The Connectionist Temporal Classification loss (Graves et al. 2006) of log-probabilities
    (T, N, C) against unaligned targets; see clgrad.nn.functional.ctc_loss."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False):
        super().__init__(reduction)
        self.blank, self.zero_infinity = blank, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        """See clgrad.nn.functional.ctc_loss (shapes, reductions, the gradient)."""
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)


__all__ += ["CTCLoss"]
