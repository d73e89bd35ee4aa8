"""Classify an image with a Caffe model (BVLC AlexNet) on an OpenCL device.

    python examples/caffe_alexnet.py PROTOTXT CAFFEMODEL IMAGE [--labels synset_words.txt]

With the real BVLC AlexNet (no Caffe install needed):

    wget https://raw.githubusercontent.com/BVLC/caffe/master/models/bvlc_alexnet/deploy.prototxt
    wget http://dl.caffe.berkeleyvision.org/bvlc_alexnet.caffemodel          # 233 MB
    wget http://dl.caffe.berkeleyvision.org/caffe_ilsvrc12.tar.gz            # synset_words.txt
    tar xzf caffe_ilsvrc12.tar.gz synset_words.txt
    python examples/caffe_alexnet.py deploy.prototxt bvlc_alexnet.caffemodel cat.jpg \\
        --labels synset_words.txt

deploy.prototxt is models/bvlc_alexnet/deploy.prototxt of BVLC's caffe repository
(github.com/BVLC/caffe); the weights and the ILSVRC 2012 labels come from
dl.caffe.berkeleyvision.org (caffe_ilsvrc12.tar.gz is what Caffe's
data/ilsvrc12/get_ilsvrc_aux.sh downloads). The grouped layers conv2, conv4 and conv5
(group: 2) run as grouped convolutions, with their weights as stored.

IMAGE: a PNG or JPEG (read with matplotlib.image.imread) or a .npy array of shape (H, W, 3),
RGB, values 0..255 (or 0..1 floats). Preprocessing as BVLC's AlexNet was trained: resize to
256 x 256 (bilinear), centre crop to the net's input size, RGB -> BGR, 0..255, subtract the
ILSVRC 2012 mean pixel (B, G, R) = (104, 117, 123). Prints the top-5 classes with their
indices (and names with --labels) and the forward time.
"""
from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np

import clgrad
from clgrad.io import load_caffe

MEAN_BGR = (104.0, 117.0, 123.0)  # ILSVRC 2012 mean pixel, as in BVLC's examples


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prototxt")
    parser.add_argument("caffemodel")
    parser.add_argument("image")
    parser.add_argument("--labels", help="synset_words.txt: one class name per line")
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--resize", type=int, default=256,
                        help="resize to this square size before the centre crop (0: none)")
    parser.add_argument("--mean", type=float, nargs=3, default=MEAN_BGR, metavar=("B", "G", "R"))
    parser.add_argument("--repeat", type=int, default=1,
                        help="time this many forwards after the first (which compiles kernels)")
    args = parser.parse_args(argv)
    missing = [f"{name} {path}" for name, path in (
        ("PROTOTXT", args.prototxt), ("CAFFEMODEL", args.caffemodel), ("IMAGE", args.image),
        ("--labels", args.labels)) if path is not None and not Path(path).is_file()]
    if missing:  # before any device work: one line, and where to get BVLC AlexNet's files
        parser.error(f"no such file: {', '.join(missing)} (--help shows how to download BVLC "
                     f"AlexNet's deploy.prototxt, weights and labels)")

    t0 = time.perf_counter()
    net = load_caffe(args.prototxt, args.caffemodel)
    t_load = time.perf_counter() - t0
    shape = next(iter(net.input_shapes.values()))  # (N, 3, H, W) of the Input layer
    x = preprocess(read_image(args.image), shape[2:], args.resize, args.mean)

    with clgrad.no_grad():
        times = []
        for _ in range(1 + args.repeat):
            t0 = time.perf_counter()
            prob = net(x).numpy()  # .numpy() waits for the device
            times.append(time.perf_counter() - t0)
    prob = prob.reshape(-1)
    labels = read_labels(args.labels) if args.labels else None
    print(f"device: {clgrad.default_device()}")
    print(f"load: {t_load * 1e3:.0f} ms; forward: first {times[0] * 1e3:.1f} ms (compiles "
          f"kernels)" + (f", then median {np.median(times[1:]) * 1e3:.1f} ms over "
                          f"{len(times) - 1}" if len(times) > 1 else ""))
    for rank, index in enumerate(np.argsort(-prob)[:args.top], start=1):
        label = f"  {labels[index]}" if labels and index < len(labels) else ""
        print(f"{rank}. class {index:4d}  p={prob[index]:.4f}{label}")


def read_image(path) -> np.ndarray:
    """(H, W, 3) RGB float32 in 0..255 from a .npy array, PNG or JPEG."""
    if path.endswith(".npy"):
        img = np.load(path)
    else:
        try:
            import matplotlib.image
        except ImportError:
            raise SystemExit(f"caffe_alexnet: reading {path} needs matplotlib (pip install "
                             f"'clgrad[train]' or matplotlib), or pass a .npy array") from None
        img = matplotlib.image.imread(path)
    img = np.asarray(img)
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    if img.ndim != 3 or img.shape[2] not in (3, 4):
        raise ValueError(f"caffe_alexnet: expected an (H, W, 3) RGB image, got shape "
                         f"{img.shape} from {path}")
    img = img[:, :, :3].astype(np.float32)
    if img.max() <= 1.0:  # PNGs read as floats in 0..1
        img *= 255.0
    return img


def preprocess(img, crop_hw, resize, mean_bgr) -> np.ndarray:
    """Caffe's transform: resize, centre crop, RGB -> BGR, minus the mean: (1, 3, H, W)."""
    if resize:
        img = resize_bilinear(img, max(resize, crop_hw[0]), max(resize, crop_hw[1]))
    if img.shape[0] < crop_hw[0] or img.shape[1] < crop_hw[1]:
        img = resize_bilinear(img, *crop_hw)
    top = (img.shape[0] - crop_hw[0]) // 2
    left = (img.shape[1] - crop_hw[1]) // 2
    img = img[top:top + crop_hw[0], left:left + crop_hw[1], ::-1]  # RGB -> BGR
    chw = img.transpose(2, 0, 1) - np.asarray(mean_bgr, np.float32).reshape(3, 1, 1)
    return np.ascontiguousarray(chw[None], dtype=np.float32)


def resize_bilinear(img, height, width) -> np.ndarray:
    """Bilinear resize of (H, W, C), pixel centres aligned (as OpenCV and skimage)."""
    def axis(n_in, n_out):
        pos = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, (pos - lo).astype(np.float32)
    r0, r1, fr = axis(img.shape[0], height)
    c0, c1, fc = axis(img.shape[1], width)
    rows = img[r0] * (1 - fr)[:, None, None] + img[r1] * fr[:, None, None]
    return rows[:, c0] * (1 - fc)[None, :, None] + rows[:, c1] * fc[None, :, None]


def read_labels(path) -> list[str]:
    """Class names, one per line; 'n01440764 tench, Tinca tinca' gives 'tench, Tinca tinca'."""
    with open(path, encoding="utf-8") as f:
        lines = [line.strip() for line in f if line.strip()]
    return [re.sub(r"^n\d{8}\s+", "", line) for line in lines]


if __name__ == "__main__":
    main()
