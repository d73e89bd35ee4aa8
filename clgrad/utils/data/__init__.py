"""``torch.utils.data``: datasets, samplers and the DataLoader, with PyTorch's semantics.

``from clgrad.utils.data import DataLoader, TensorDataset, Dataset`` (or, after
``import clgrad as torch``, ``torch.utils.data.DataLoader``). The readers of the bundled digits,
MNIST/Fashion-MNIST and CIFAR-10 return TensorDatasets (``clgrad.utils.data.datasets``).
"""
from clgrad.utils.data.collate import default_collate, default_convert
from clgrad.utils.data.dataloader import DataLoader, WorkerInfo, get_worker_info
from clgrad.utils.data.dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset,
                                       StackDataset, Subset, TensorDataset,
                                       random_split)
from clgrad.utils.data.sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                                       SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "Subset",
           "ConcatDataset", "StackDataset", "ChainDataset", "random_split", "Sampler",
           "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler",
           "default_collate", "default_convert", "get_worker_info", "WorkerInfo"]

# torch.utils.data.distributed (DistributedSampler, from clgrad.distributed)
from clgrad.utils.data import distributed  # noqa: E402,F401
