"""Neural-network layers and functions (PyTorch's torch.nn names)."""
from clgrad.nn import functional  # noqa: F401
from clgrad.nn import init  # noqa: F401
from clgrad.nn.module import Module, Parameter  # noqa: F401
from clgrad.nn.containers import Identity, ModuleList, Sequential  # noqa: F401
from clgrad.nn.layers import (AdaptiveAvgPool2d, AvgPool2d, BatchNorm2d,  # noqa: F401
                              Conv2d, CrossEntropyLoss, Dropout, Flatten, LeakyReLU, Linear,
                              LocalResponseNorm, MaxPool2d, MSELoss, NLLLoss, ReLU)
from clgrad.nn.activation import (ELU, GELU, Hardsigmoid, Hardswish, Hardtanh,  # noqa: F401
                                  LogSoftmax, Mish, PReLU, ReLU6, Sigmoid, SiLU, Softmax,
                                  Softplus, Tanh)
from clgrad.nn.normalization import (BatchNorm1d, GroupNorm, InstanceNorm1d,  # noqa: F401
                                     InstanceNorm2d, LayerNorm)
from clgrad.nn.loss import (BCELoss, BCEWithLogitsLoss, HuberLoss, KLDivLoss,  # noqa: F401
                            L1Loss, SmoothL1Loss)
from clgrad.nn.containers import (ModuleDict, ParameterDict, ParameterList,  # noqa: F401
                                  Unflatten)
from clgrad.nn.dropout import Dropout1d, Dropout2d  # noqa: F401
from clgrad.nn.sparse import Embedding  # noqa: F401
from clgrad.nn.conv import Conv1d, ConvTranspose1d, ConvTranspose2d  # noqa: F401
from clgrad.nn.pooling import (AdaptiveAvgPool1d, AdaptiveMaxPool1d,  # noqa: F401
                               AdaptiveMaxPool2d, AvgPool1d, MaxPool1d)
from clgrad.nn.upsampling import (Upsample, UpsamplingBilinear2d,  # noqa: F401
                                  UpsamplingNearest2d)
from clgrad.nn import utils  # noqa: F401,E402
from clgrad.nn import parallel  # noqa: F401,E402

# -- h4 (issue 22): LogSigmoid, pixel/channel shuffle, padding layers, DataParallel ---------
from clgrad.nn.activation import LogSigmoid  # noqa: F401,E402
from clgrad.nn.pixelshuffle import ChannelShuffle, PixelShuffle, PixelUnshuffle  # noqa: F401,E402
from clgrad.nn.padding import (CircularPad1d, CircularPad2d, ConstantPad1d,  # noqa: F401,E402
                               ConstantPad2d, ReflectionPad1d, ReflectionPad2d,
                               ReplicationPad1d, ReplicationPad2d, ZeroPad1d, ZeroPad2d)
from clgrad.nn.parallel import DataParallel  # noqa: F401,E402
from clgrad.nn.attention import MultiheadAttention  # noqa: F401,E402
from clgrad.nn.transformer import (Transformer, TransformerEncoder,  # noqa: F401,E402
                                   TransformerEncoderLayer)
