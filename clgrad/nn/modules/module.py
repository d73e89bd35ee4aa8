"""torch.nn.modules.module: Module, Parameter and the global module hooks
(``register_module_forward_hook`` ...; clgrad/nn/module_hooks.py)."""
from clgrad.nn.module import Module, Parameter  # noqa: F401
from clgrad.nn.module_hooks import (register_module_forward_hook,  # noqa: F401
                                    register_module_forward_pre_hook,
                                    register_module_full_backward_hook,
                                    register_module_full_backward_pre_hook)

__all__ = ["Module", "Parameter", "register_module_forward_pre_hook",
           "register_module_forward_hook", "register_module_full_backward_pre_hook",
           "register_module_full_backward_hook"]
