"""Pins for the ONNX models the tests build.

Every test model is written with IR version 8 (opset <= 17): onnx >= 1.10 writes it and every
onnxruntime the dev extra allows (>= 1.16) reads it. Left to its default, onnx 1.23 writes IR 14,
which onnxruntime 1.30 refuses before any clgrad value is compared.
"""
ONNX_IR_VERSION = 8
