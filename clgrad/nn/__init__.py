"""Neural-network layers and functions (PyTorch's torch.nn names), one module file per family
as in torch/nn/modules: linear, conv, pooling, normalization, activation, dropout, loss,
flatten, sparse, upsampling, containers, rnn."""
from clgrad.nn import functional  # noqa: F401
from clgrad.nn import init  # noqa: F401
from clgrad.nn.module import Module, Parameter  # noqa: F401
from clgrad.nn.containers import (Identity, ModuleDict, ModuleList,  # noqa: F401
                                  ParameterDict, ParameterList, Sequential)
from clgrad.nn.linear import Bilinear, Linear  # noqa: F401
from clgrad.nn.flatten import Flatten, Unflatten  # noqa: F401
from clgrad.nn.activation import (ELU, GELU, Hardsigmoid, Hardswish, Hardtanh,  # noqa: F401
                                  LeakyReLU, LogSoftmax, Mish, PReLU, ReLU, ReLU6, Sigmoid,
                                  SiLU, Softmax, Softplus, Tanh)
from clgrad.nn.normalization import (BatchNorm1d, BatchNorm2d, GroupNorm,  # noqa: F401
                                     InstanceNorm1d, InstanceNorm2d, LayerNorm,
                                     LocalResponseNorm, RMSNorm, SyncBatchNorm)
from clgrad.nn.loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss,  # noqa: F401
                            HuberLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, SmoothL1Loss)
from clgrad.nn.dropout import Dropout, Dropout1d, Dropout2d  # noqa: F401
from clgrad.nn.sparse import Embedding  # noqa: F401
from clgrad.nn.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d  # noqa: F401
from clgrad.nn.pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d,  # noqa: F401
                               AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d, AvgPool2d,
                               MaxPool1d, MaxPool2d)
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
from clgrad.nn.multihead import MultiheadAttention  # noqa: F401,E402
from clgrad.nn.transformer import (Transformer, TransformerDecoder,  # noqa: F401,E402
                                   TransformerDecoderLayer, TransformerEncoder,
                                   TransformerEncoderLayer)
from clgrad.nn.fold import Fold, Unfold  # noqa: F401,E402
from clgrad.nn import modules  # noqa: F401,E402  (torch.nn.modules.module hooks)

# -- issue 33: recurrent layers ----------------------------------------------------------------
from clgrad.nn.rnn import (GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase,  # noqa: F401,E402
                           RNNCell, RNNCellBase)

# -- more activations, distances, margin and likelihood losses ------------------------------
from clgrad.nn.activation import (CELU, GLU, RReLU, SELU, Hardshrink, Softmin,  # noqa: F401,E402
                                  Softshrink, Softsign, Tanhshrink, Threshold)
from clgrad.nn.distance import CosineSimilarity, PairwiseDistance  # noqa: F401,E402
from clgrad.nn.loss import (CosineEmbeddingLoss, GaussianNLLLoss,  # noqa: F401,E402
                            HingeEmbeddingLoss, MarginRankingLoss, MultiLabelSoftMarginLoss,
                            MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss,
                            TripletMarginLoss)

# -- nn gaps: RMSNorm, lazy modules, Buffer, unpooling, alpha dropout, lp pools, losses ------
from clgrad.nn import parameter  # noqa: F401,E402
from clgrad.nn.module import Buffer  # noqa: F401,E402
from clgrad.nn.linear import LazyLinear  # noqa: F401,E402
from clgrad.nn.conv import (LazyConv1d, LazyConv2d, LazyConvTranspose1d,  # noqa: F401,E402
                            LazyConvTranspose2d)
from clgrad.nn.normalization import (LazyBatchNorm1d, LazyBatchNorm2d,  # noqa: F401,E402
                                     LazyInstanceNorm1d, LazyInstanceNorm2d)
from clgrad.nn.pooling import MaxUnpool1d, MaxUnpool2d  # noqa: F401,E402
from clgrad.nn.activation import Softmax2d  # noqa: F401,E402
from clgrad.nn.loss import NLLLoss2d  # noqa: F401,E402
from clgrad.nn.dropout import AlphaDropout, FeatureAlphaDropout  # noqa: F401,E402
from clgrad.nn.pooling import LPPool1d, LPPool2d  # noqa: F401,E402
from clgrad.nn.loss import (MultiLabelMarginLoss,  # noqa: F401,E402
                            TripletMarginWithDistanceLoss)
from clgrad.nn.sparse import EmbeddingBag  # noqa: F401,E402
from clgrad.nn.three_d import (AdaptiveAvgPool3d, AdaptiveMaxPool3d, AvgPool3d,  # noqa: F401,E402
                               BatchNorm3d, CircularPad3d, ConstantPad3d, Conv3d,
                               ConvTranspose3d, Dropout3d, InstanceNorm3d, MaxPool3d,
                               ReflectionPad3d, ReplicationPad3d, ZeroPad3d)
from clgrad.nn.loss import CTCLoss  # noqa: F401,E402
