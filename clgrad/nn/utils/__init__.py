"""torch.nn.utils' names: gradient clipping and parameter <-> vector conversion."""
from clgrad.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: F401
from clgrad.nn.utils.convert_parameters import (parameters_to_vector,  # noqa: F401
                                                vector_to_parameters)

__all__ = ["clip_grad_norm_", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]
