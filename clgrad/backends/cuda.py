"""``torch.backends.cuda``'s flags: accepted and stored, no effect on clgrad.

``matmul.allow_tf32`` / ``matmul.allow_fp16_reduced_precision_reduction`` /
``matmul.allow_bf16_reduced_precision_reduction`` and the scaled-dot-product-attention switches
are attributes programs set; clgrad's GEMMs always accumulate in the tensors' own precision.
``is_built()`` is False (clgrad has no CUDA build; ``clgrad.cuda`` maps PyTorch's CUDA device
names onto OpenCL devices, see clgrad/cuda.py).
"""
__all__ = ["matmul", "is_built", "preferred_linalg_library", "enable_flash_sdp",
           "enable_math_sdp", "enable_mem_efficient_sdp", "flash_sdp_enabled",
           "math_sdp_enabled", "mem_efficient_sdp_enabled"]


class _MatmulFlags:
    """``torch.backends.cuda.matmul``: flags stored with no effect."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True
        self.fp32_precision = "ieee"

    def __repr__(self):
        return "<clgrad.backends.cuda.matmul: accepted flags, no effect>"


matmul = _MatmulFlags()
_SDP = {"flash": True, "math": True, "mem_efficient": True}


def is_built() -> bool:
    """False: clgrad is not built with CUDA."""
    return False


def preferred_linalg_library(backend=None):
    """Accepted and ignored; returns 'default'."""
    return "default"


def enable_flash_sdp(enabled: bool):
    """Stored with no effect."""
    _SDP["flash"] = bool(enabled)


def enable_math_sdp(enabled: bool):
    """Stored with no effect."""
    _SDP["math"] = bool(enabled)


def enable_mem_efficient_sdp(enabled: bool):
    """Stored with no effect."""
    _SDP["mem_efficient"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    """The stored flag (no effect)."""
    return _SDP["flash"]


def math_sdp_enabled() -> bool:
    """The stored flag (no effect)."""
    return _SDP["math"]


def mem_efficient_sdp_enabled() -> bool:
    """The stored flag (no effect)."""
    return _SDP["mem_efficient"]
