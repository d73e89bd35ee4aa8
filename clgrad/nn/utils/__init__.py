"""torch.nn.utils' names: gradient clipping, parameter <-> vector conversion, and the
sequence packing of torch.nn.utils.rnn (``rnn``), and ``stateless.functional_call``."""
from clgrad.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from clgrad.nn.utils.convert_parameters import (parameters_to_vector,  # noqa: F401
                                                vector_to_parameters)
from clgrad.nn.utils import rnn  # noqa: F401
from clgrad.nn.utils import stateless  # noqa: F401

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters", "rnn", "stateless"]
