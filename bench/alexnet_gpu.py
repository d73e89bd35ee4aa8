"""Time a full-size AlexNet (BVLC deploy layout: 227 x 227 input, grouped conv2/4/5, LRN, ceil
pooling, fc6-fc8) loaded through clgrad.io.load_caffe, on the default OpenCL device.

    python bench/alexnet_gpu.py [--batch 1 10] [--warmup 3] [--iters 20] [--keep DIR]
                                [--device SPEC]

Self-contained: writes deploy.prototxt and a caffemodel of random weights (clgrad's own
wire-format encoder) into a temp dir (or DIR with --keep, e.g. for examples/caffe_alexnet.py),
loads them, runs ``--warmup`` forwards (kernel builds, memory pool), then times ``--iters``
forwards per batch size, each waited for with clgrad.synchronize(). Prints one line per batch
size: median / min / max milliseconds and images/s, then the device.

Device: CLGRAD_DEVICE or --device (``gpu``, ``cpu``, ``P:D``, a name substring); default the
first GPU. On an NVIDIA machine whose OpenCL driver is installed but not registered:
    mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
(and pyopencl must be importable: pip install pyopencl, or bring its wheels).
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import numpy as np

import clgrad
from clgrad.io import load_caffe
from clgrad.io.caffemodel import encode_caffemodel

DEPLOY = """name: "AlexNet"
layer { name: "data" type: "Input" top: "data"
        input_param { shape: { dim: 10 dim: 3 dim: 227 dim: 227 } } }
layer { name: "conv1" type: "Convolution" bottom: "data" top: "conv1"
        convolution_param { num_output: 96 kernel_size: 11 stride: 4 } }
layer { name: "relu1" type: "ReLU" bottom: "conv1" top: "conv1" }
layer { name: "norm1" type: "LRN" bottom: "conv1" top: "norm1"
        lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }
layer { name: "pool1" type: "Pooling" bottom: "norm1" top: "pool1"
        pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "conv2" type: "Convolution" bottom: "pool1" top: "conv2"
        convolution_param { num_output: 256 pad: 2 kernel_size: 5 group: 2 } }
layer { name: "relu2" type: "ReLU" bottom: "conv2" top: "conv2" }
layer { name: "norm2" type: "LRN" bottom: "conv2" top: "norm2"
        lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 } }
layer { name: "pool2" type: "Pooling" bottom: "norm2" top: "pool2"
        pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "conv3" type: "Convolution" bottom: "pool2" top: "conv3"
        convolution_param { num_output: 384 pad: 1 kernel_size: 3 } }
layer { name: "relu3" type: "ReLU" bottom: "conv3" top: "conv3" }
layer { name: "conv4" type: "Convolution" bottom: "conv3" top: "conv4"
        convolution_param { num_output: 384 pad: 1 kernel_size: 3 group: 2 } }
layer { name: "relu4" type: "ReLU" bottom: "conv4" top: "conv4" }
layer { name: "conv5" type: "Convolution" bottom: "conv4" top: "conv5"
        convolution_param { num_output: 256 pad: 1 kernel_size: 3 group: 2 } }
layer { name: "relu5" type: "ReLU" bottom: "conv5" top: "conv5" }
layer { name: "pool5" type: "Pooling" bottom: "conv5" top: "pool5"
        pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "fc6" type: "InnerProduct" bottom: "pool5" top: "fc6"
        inner_product_param { num_output: 4096 } }
layer { name: "relu6" type: "ReLU" bottom: "fc6" top: "fc6" }
layer { name: "drop6" type: "Dropout" bottom: "fc6" top: "fc6"
        dropout_param { dropout_ratio: 0.5 } }
layer { name: "fc7" type: "InnerProduct" bottom: "fc6" top: "fc7"
        inner_product_param { num_output: 4096 } }
layer { name: "relu7" type: "ReLU" bottom: "fc7" top: "fc7" }
layer { name: "drop7" type: "Dropout" bottom: "fc7" top: "fc7"
        dropout_param { dropout_ratio: 0.5 } }
layer { name: "fc8" type: "InnerProduct" bottom: "fc7" top: "fc8"
        inner_product_param { num_output: 1000 } }
layer { name: "prob" type: "Softmax" bottom: "fc8" top: "prob" }
"""

WEIGHTS = {  # BVLC AlexNet's blob shapes: grouped layers hold (C_out, C_in / 2, k, k)
    "conv1": ("Convolution", (96, 3, 11, 11)), "conv2": ("Convolution", (256, 48, 5, 5)),
    "conv3": ("Convolution", (384, 256, 3, 3)), "conv4": ("Convolution", (384, 192, 3, 3)),
    "conv5": ("Convolution", (256, 192, 3, 3)), "fc6": ("InnerProduct", (4096, 9216)),
    "fc7": ("InnerProduct", (4096, 4096)), "fc8": ("InnerProduct", (1000, 4096)),
}


def write_alexnet(directory, seed=0):
    """Write deploy.prototxt and alexnet_random.caffemodel (He-scaled Gaussian weights) into
    ``directory``; return their paths."""
    rng = np.random.default_rng(seed)
    layers = []
    for name, (type_, shape) in WEIGHTS.items():
        std = (2.0 / np.prod(shape[1:])) ** 0.5
        weight = (rng.standard_normal(shape, np.float32) * std).astype(np.float32)
        bias = np.full(shape[0], 0.01, np.float32)
        layers.append({"name": name, "type": type_, "blobs": [weight, bias]})
    proto = os.path.join(directory, "deploy.prototxt")
    model = os.path.join(directory, "alexnet_random.caffemodel")
    with open(proto, "w") as f:
        f.write(DEPLOY)
    with open(model, "wb") as f:
        f.write(encode_caffemodel(layers))
    return proto, model


def time_forward(net, batch, warmup, iters, rng):
    x = clgrad.from_numpy(rng.standard_normal((batch, 3, 227, 227)).astype(np.float32) * 50)
    with clgrad.no_grad():
        for _ in range(warmup):
            net(x)
        clgrad.synchronize()
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            net(x)
            clgrad.synchronize()
            times.append(time.perf_counter() - t0)
    return [t * 1e3 for t in times]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--keep", metavar="DIR", help="write the files here and keep them")
    parser.add_argument("--device", help="device spec (default: CLGRAD_DEVICE, else a GPU)")
    args = parser.parse_args(argv)
    # the library's default is PyTorch's "cpu": this benchmark takes the fastest (GPU first)
    clgrad.set_default_device(args.device or clgrad.runtime.fastest_device())

    with tempfile.TemporaryDirectory() as tmp:
        directory = args.keep or tmp
        os.makedirs(directory, exist_ok=True)
        t0 = time.perf_counter()
        proto, model = write_alexnet(directory)
        t1 = time.perf_counter()
        net = load_caffe(proto, model)
        t2 = time.perf_counter()
    print(f"write {t1 - t0:.2f} s, load_caffe {t2 - t1:.2f} s"
          + (f"; files kept in {directory}" if args.keep else ""))
    rng = np.random.default_rng(1)
    for batch in args.batch:
        ms = time_forward(net, batch, args.warmup, args.iters, rng)
        med = statistics.median(ms)
        print(f"alexnet forward batch {batch:3d}: median {med:8.2f} ms  min {min(ms):8.2f}  "
              f"max {max(ms):8.2f}  ({batch / med * 1e3:8.1f} images/s, {args.iters} iters, "
              f"{args.warmup} warm-up)")
    print(f"device: {clgrad.default_device()}")


if __name__ == "__main__":
    main()
