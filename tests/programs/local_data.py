"""Local stand-ins for the datasets the programs in this folder would download.

Only NumPy: the same arrays feed the program under clgrad and under PyTorch.

    mnist_like(train)   the 8x8 digits clgrad ships (scikit-learn's, in
                        clgrad/utils/data/_digits/digits.csv.gz, read here without clgrad)
                        as MNIST-shaped images: (N, 1, 28, 28)
                        float32, each pixel repeated 3x3 (24x24) and padded by 2 zeros, scaled
                        to [0, 1] and (normalize=True) normalised with MNIST's (0.1307, 0.3081);
                        int64 labels
    cifar_like(train)   3x32x32 float32 images from the digits (a 4x4 repeat, one colour tint
                        per class, plus seeded noise), normalised to [-1, 1]; int64 labels
    digits16(train)     the digits at 16x16 (a 2x2 repeat) in [-1, 1], one channel
All use a fixed stratified split (every 5th sample of the digits is test), and `n` keeps the
first n samples (the programs stay small).
"""
import gzip
from pathlib import Path

import numpy as np

CIFAR_CLASSES = ("plane", "car", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")


DIGITS = (Path(__file__).resolve().parents[2] / "clgrad" / "utils" / "data" / "_digits" /
          "digits.csv.gz")


def _digits(train):
    with gzip.open(DIGITS, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2)
    images = table[:, :64].reshape(-1, 8, 8).astype(np.float32) / np.float32(16.0)
    keep = (np.arange(len(images)) % 5 != 0) if train else (np.arange(len(images)) % 5 == 0)
    return images[keep], table[keep, 64]


def mnist_like(train=True, n=None, normalize=True):
    images, labels = _digits(train)
    big = np.kron(images, np.ones((3, 3), np.float32))
    big = np.pad(big, ((0, 0), (2, 2), (2, 2)))[:, None]
    if normalize:
        big = (big - np.float32(0.1307)) / np.float32(0.3081)
    return big.astype(np.float32)[:n], labels[:n]


def cifar_like(train=True, n=None):
    images, labels = _digits(train)
    big = np.kron(images, np.ones((4, 4), np.float32))
    tint = np.random.default_rng(10).uniform(0.3, 1.0, size=(10, 3)).astype(np.float32)
    x = big[:, None] * tint[labels][:, :, None, None]
    noise = np.random.default_rng(11 if train else 12).normal(0, 0.1, x.shape)
    x = np.clip(x + noise.astype(np.float32), 0, 1)
    x = ((x - np.float32(0.5)) / np.float32(0.5)).astype(np.float32)
    return x[:n], labels[:n]


def digits16(train=True, n=None):
    """(N, 1, 16, 16) float32 digits (each 8x8 pixel repeated 2x2) in [-1, 1], the range a
    Tanh generator produces (DCGAN's transforms.Normalize((0.5,), (0.5,))); int64 labels."""
    images, labels = _digits(train)
    big = np.kron(images, np.ones((2, 2), np.float32))[:, None]
    return ((big - np.float32(0.5)) / np.float32(0.5)).astype(np.float32)[:n], labels[:n]
