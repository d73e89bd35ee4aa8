"""torch.nn.modules' paths: ``nn.modules.module`` (Module, Parameter and the global module
hooks) and the family files of clgrad/nn under their PyTorch names."""
from clgrad.nn.modules import module  # noqa: F401
from clgrad.nn import (activation, conv, dropout, flatten, fold, linear,  # noqa: F401
                       loss, normalization, pooling, sparse, transformer, upsampling)
from clgrad.nn import containers as container  # noqa: F401
