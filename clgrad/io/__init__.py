"""Reading and writing model files: clgrad checkpoints (safetensors, never pickle), and
importers of Caffe (``load_caffe``) and ONNX (``load_onnx``) models."""

from .caffe import load_caffe
from .checkpoint import load, save
from .onnx import load_onnx

__all__ = ["save", "load", "load_caffe", "load_onnx"]
