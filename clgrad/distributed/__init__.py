"""Data-parallel training across processes: torch.distributed's names on MPI.

    mpiexec -n 2 python train.py          # each process: init_process_group("mpi")

``clgrad.distributed``: the process group (process_group.py) and the collectives
(collectives.py), host-staged through mpi4py; ``DistributedSampler`` (sampler.py);
``clgrad.nn.parallel.DistributedDataParallel`` averages gradients during backward. Needs
``pip install 'clgrad[distributed]'`` (mpi4py and the mpich wheel, which provides
``mpiexec``); importing this package does not import MPI.
"""
from clgrad.distributed.process_group import *  # noqa: F401,F403
from clgrad.distributed.collectives import *  # noqa: F401,F403
from clgrad.distributed import collectives as _collectives, process_group as _process_group
from clgrad.distributed.sampler import DistributedSampler  # noqa: F401

__all__ = _process_group.__all__ + _collectives.__all__ + ["DistributedSampler"]
