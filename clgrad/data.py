"""The former home of clgrad's data API, kept importable: everything lives in clgrad.utils.data.

``clgrad.data.DataLoader`` is ``clgrad.utils.data.DataLoader`` (PyTorch's semantics), and the
dataset readers are ``clgrad.utils.data.datasets``'s.
"""
from clgrad.utils.data import DataLoader, Dataset, TensorDataset  # noqa: F401
from clgrad.utils.data.datasets import (CIFAR10, MNIST, FashionMNIST, digits_split,  # noqa: F401
                                        load_digits, read_idx)

__all__ = ["Dataset", "TensorDataset", "DataLoader", "load_digits", "digits_split",
           "MNIST", "FashionMNIST", "CIFAR10", "read_idx"]
