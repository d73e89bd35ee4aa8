"""torch.nn.utils' names: gradient clipping, parameter <-> vector conversion, the sequence
packing of torch.nn.utils.rnn (``rnn``), parametrizations (``parametrize``,
``parametrizations``), the legacy hook-based weight_norm and spectral_norm, and
``stateless.functional_call``; pruning is ``clgrad.nn.utils.prune`` (imported on its own,
as PyTorch's)."""
from clgrad.nn.utils.clip_grad import (clip_grad_norm_, clip_grad_value_,  # noqa: F401
                                       clip_grads_with_norm_, get_total_norm)
from clgrad.nn.utils.convert_parameters import (parameters_to_vector,  # noqa: F401
                                                vector_to_parameters)
from clgrad.nn.utils import rnn  # noqa: F401
from clgrad.nn.utils import parametrize  # noqa: F401
from clgrad.nn.utils import parametrizations  # noqa: F401
from clgrad.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from clgrad.nn.utils.weight_norm import remove_weight_norm, weight_norm  # noqa: F401
from clgrad.nn.utils import stateless  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
           "parameters_to_vector",
           "vector_to_parameters", "rnn", "parametrize", "parametrizations", "spectral_norm",
           "remove_spectral_norm", "weight_norm", "remove_weight_norm", "stateless"]
