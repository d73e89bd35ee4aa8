"""``torch.backends.cuda``'s flags.

``matmul.allow_tf32`` (and ``matmul.fp32_precision``, and ``clgrad.set_float32_matmul_precision``:
one state, as in PyTorch, where ``allow_tf32`` is ``get_float32_matmul_precision() !=
'highest'``): float32 matmul, mm, bmm and linear may run on NVIDIA's tensor cores in TF32 (10-bit
mantissa, float32 sums; kernels/matmul_mma_nv.cl), where clgrad found the driver taking them
(clgrad/ops/matmul.py ``mma_precision``). Off by default, as PyTorch's; elsewhere (other devices,
convolutions) float32 GEMMs stay float32. A change counts as a change of the settings
(``clgrad.settings.changed()``): launch plans made under the old value are not used again.
``matmul.allow_fp16_reduced_precision_reduction`` /
``matmul.allow_bf16_reduced_precision_reduction`` are attributes programs set, stored with no
effect (clgrad's float16 GEMMs always sum in float32). The scaled-dot-product-attention
switches (``enable_math_sdp`` ...) are PyTorch's: clgrad's one backend is math, so with it off
F.scaled_dot_product_attention raises RuntimeError (clgrad/nn/attention). ``is_built()`` is
False (clgrad has no CUDA build; ``clgrad.cuda`` maps PyTorch's CUDA device names onto OpenCL
devices, see clgrad/cuda.py).
"""
import numpy as np

from clgrad import settings

__all__ = ["matmul", "is_built", "preferred_linalg_library", "enable_flash_sdp",
           "enable_math_sdp", "enable_mem_efficient_sdp", "flash_sdp_enabled",
           "math_sdp_enabled", "mem_efficient_sdp_enabled", "enable_cudnn_sdp",
           "cudnn_sdp_enabled"]

PRECISIONS = ("highest", "high", "medium")
# set_float32_matmul_precision's value, the one TF32 state (a list: hot paths read PRECISION[0]
# without a call, clgrad/ops/matmul.py). One list for the process: importlib.reload of this
# module sets it to the default again, as reloading clgrad.backends resets its settings, but
# never replaces it (clgrad/ops/matmul.py holds it), and counts that as a settings change.
PRECISION = globals().get("PRECISION") or [None]
PRECISION[0] = "highest"
settings.changed()


def set_float32_precision(precision: str) -> None:
    """Set the float32 matmul precision ('highest': float32; 'high' / 'medium': TF32 allowed;
    matched as given, then lower-cased, as PyTorch). Another value warns (UserWarning,
    PyTorch's text) and changes nothing, as PyTorch's. Raises TypeError for a non-str."""
    if not isinstance(precision, str):
        raise TypeError(f"set_float32_matmul_precision(): argument 'precision' must be str, "
                        f"not {type(precision).__name__}")
    p = precision if precision in PRECISIONS else precision.lower()
    if p not in PRECISIONS:
        import warnings
        # (PyTorch's message, aten/src/ATen/Context.cpp, its missing space included)
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=3)
        return
    if p != PRECISION[0]:
        PRECISION[0] = p
        settings.changed()


def float32_precision() -> str:
    """The float32 matmul precision ('highest' unless set)."""
    return PRECISION[0]


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: ``allow_tf32`` and ``fp32_precision`` ('none' until set,
    'ieee' / 'tf32') read and write the float32 matmul precision; the reduced-precision-
    reduction flags are stored with no effect. Another attribute name raises AttributeError,
    as PyTorch's (a typo is not stored silently)."""

    _NAMES = ("allow_tf32", "fp32_precision", "allow_fp16_reduced_precision_reduction",
              "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        object.__setattr__(self, "_fp32_set", "none")  # fp32_precision's last value
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __setattr__(self, name, value):
        if name not in self._NAMES:
            raise AttributeError(f"Unknown attribute {name}")
        object.__setattr__(self, name, value)

    @property
    def allow_tf32(self) -> bool:
        """Whether float32 matmuls may run in TF32: the precision is not 'highest'."""
        return PRECISION[0] != "highest"

    @allow_tf32.setter
    def allow_tf32(self, value):
        """True: precision 'high'; False: 'highest'. Raises RuntimeError for a non-bool."""
        if not isinstance(value, (bool, np.bool_)):
            raise RuntimeError(f"set_allow_tf32_cublas expects a bool, but got "
                               f"{type(value).__name__}")
        set_float32_precision("high" if value else "highest")

    @property
    def fp32_precision(self) -> str:
        """'tf32' while TF32 is allowed, else 'ieee' if set so, else 'none'."""
        if PRECISION[0] != "highest":
            return "tf32"
        return "ieee" if self._fp32_set == "ieee" else "none"

    @fp32_precision.setter
    def fp32_precision(self, value):
        """'tf32': precision 'high'; 'ieee' / 'none': 'highest'. Raises ValueError otherwise."""
        if value not in ("ieee", "tf32", "none"):
            raise ValueError(f"fp32_precision: expected 'ieee', 'tf32' or 'none', got "
                             f"{value!r}")
        object.__setattr__(self, "_fp32_set", value)
        set_float32_precision("high" if value == "tf32" else "highest")

    def __repr__(self):
        return (f"<clgrad.backends.cuda.matmul: allow_tf32={self.allow_tf32} (TF32 tensor "
                f"cores on NVIDIA where found)>")


matmul = _MatmulFlags()
# the scaled-dot-product-attention switches (torch.nn.attention.sdpa_kernel sets them too):
# clgrad's one backend is math, so F.scaled_dot_product_attention raises while it is off
_SDP = {"flash": True, "math": True, "mem_efficient": True, "cudnn": True,
        "overrideable": True}


def is_built() -> bool:
    """False: clgrad is not built with CUDA."""
    return False


def preferred_linalg_library(backend=None):
    """Accepted and ignored; returns 'default'."""
    return "default"


def enable_flash_sdp(enabled: bool):
    """Allow this backend or not (clgrad has none but math: stored, no effect alone)."""
    _SDP["flash"] = bool(enabled)


def enable_math_sdp(enabled: bool):
    """Allow the math backend or not: clgrad's only one, so while it is off
    F.scaled_dot_product_attention raises RuntimeError, as PyTorch's when no allowed backend
    can run."""
    _SDP["math"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool):
    """Allow this backend or not (clgrad has none but math: stored, no effect alone)."""
    _SDP["mem_efficient"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    """Whether this backend is allowed."""
    return _SDP["flash"]


def math_sdp_enabled() -> bool:
    """Whether the math backend is allowed."""
    return _SDP["math"]


def mem_efficient_sdp_enabled() -> bool:
    """Whether this backend is allowed."""
    return _SDP["mem_efficient"]


def enable_cudnn_sdp(enabled: bool):
    """Allow this backend or not (clgrad has none but math: stored, no effect alone)."""
    _SDP["cudnn"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    """Whether this backend is allowed."""
    return _SDP["cudnn"]
