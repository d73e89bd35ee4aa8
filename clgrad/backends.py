"""Backend settings: which convolution algorithm runs, and how much workspace it may take.

``conv_algorithm``: 'auto' (the default, or the ``CLGRAD_CONV_ALGO`` environment variable)
picks per pass by shape and device; 'implicit', 'im2col', 'direct', 'depthwise',
'pointwise' (1 x 1 convs as one GEMM), 'depthwise_gpu' or 'igemm_gpu' (both
clgrad/ops/conv_gpu.py) asks for one
in every pass of every conv2d (see clgrad/ops/conv.py), which gives way to 'implicit', then
'direct', only where it cannot run a problem (local memory too small, say).
``conv_implicit_variant``: the kernels 'implicit' runs: 'auto' (by device kind), 'cpu'
(kernels/conv_igemm_cpu.cl: one work item per work-group, register-blocked vectors) or 'gpu'
(kernels/conv_gemm_gpu.cl: 16 x 16 work items sharing local-memory tiles).
``conv_workspace_limit``: bytes the im2col algorithm may hold at once (default 256 MiB); it
chunks over the batch to stay under it (one sample is the smallest chunk).
``last_conv_algorithm``: the algorithm the latest conv2d pass ran (set by every pass), and
``last_conv_algorithms``: the latest choice per pass ('forward', 'grad_input', 'grad_weight').
``CLGRAD_CONV_DEBUG=1`` prints each choice with the problem's shape to stderr.

``cudnn`` (``benchmark``, ``deterministic``, ``enabled``, ``allow_tf32``), ``cuda.matmul``
(``allow_tf32``) and ``mps``: PyTorch's backend flags, accepted and stored with no effect;
their ``is_available()`` is False (see ``_Flags``).
``flags(**settings)``: set these for a ``with`` block, restored on exit (clgrad.settings.flags).
"""
from clgrad import settings
from clgrad.settings import flags

__all__ = ["conv_algorithm", "conv_implicit_variant", "conv_workspace_limit",
           "last_conv_algorithm", "last_conv_algorithms", "CONV_ALGORITHMS",
           "CONV_IMPLICIT_VARIANTS", "cudnn", "cuda", "mps", "flags"]

CONV_ALGORITHMS = ("auto", "implicit", "im2col", "direct", "depthwise", "pointwise",
                   "depthwise_gpu", "igemm_gpu")
CONV_IMPLICIT_VARIANTS = ("auto", "cpu", "gpu")

conv_algorithm = settings.getenv("CLGRAD_CONV_ALGO")
conv_implicit_variant = "auto"
conv_workspace_limit = 256 << 20
last_conv_algorithm = None
last_conv_algorithms = {}


class _Flags:
    """Settings PyTorch programs set for cuDNN/CUDA/MPS: accepted and stored, no effect here.

    clgrad has no cuDNN: its conv algorithm choice is ``conv_algorithm`` above; results are
    deterministic run to run on one device whatever ``deterministic`` says.
    """

    def __init__(self, name, **flags):
        self._name = name
        self.__dict__.update(flags)

    def is_available(self) -> bool:
        """False: clgrad runs on OpenCL, without this backend."""
        return False

    def is_built(self) -> bool:
        """False: clgrad is not built with this backend."""
        return False

    def __repr__(self):
        return f"<clgrad.backends.{self._name}: accepted flags, no effect>"


cudnn = _Flags("cudnn", enabled=True, benchmark=False, deterministic=False, allow_tf32=True)
mps = _Flags("mps")
cuda = _Flags("cuda", matmul=_Flags("cuda.matmul", allow_tf32=False,
                                    allow_fp16_reduced_precision_reduction=True))
