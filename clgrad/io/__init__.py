"""Reading and writing model files: checkpoints (``save``/``load``: PyTorch's zip format or
safetensors, never running pickle code; see serialization.py), and importers of Caffe
(``load_caffe``) and ONNX (``load_onnx``) models."""

from .caffe import load_caffe
from .serialization import load, save
from .onnx import load_onnx

__all__ = ["save", "load", "load_caffe", "load_onnx"]
