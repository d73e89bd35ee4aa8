"""Data-parallel training across processes: torch.distributed's names on MPI.

    mpiexec -n 2 python train.py          # each process: init_process_group("mpi")

``clgrad.distributed``: the process group (process_group.py) and the collectives
(collectives.py), host-staged through mpi4py; ``DistributedSampler`` (sampler.py);
``clgrad.nn.parallel.DistributedDataParallel`` averages gradients during backward. Needs
``pip install 'clgrad[distributed]'`` (mpi4py and the mpich wheel, which provides
``mpiexec``); importing this package does not import MPI.

Launching: use the ``mpiexec`` of the MPI library mpi4py was built against (another MPI's
launcher starts K unrelated one-process jobs):

- the ``mpich`` wheel (``clgrad[distributed]``): ``VENV/bin/mpiexec -n 2 VENV/bin/python
  train.py``; Hydra needs no flags, as root too.
- Open MPI: ``mpiexec -n 2 python train.py``; as root (most containers) it refuses to start
  unless given ``--allow-run-as-root`` (or ``OMPI_ALLOW_RUN_AS_ROOT=1
  OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`` in the environment), with more ranks than cores it
  needs ``--oversubscribe``, and in a container without ssh/rsh Open MPI 4 stops with
  "plm_rsh_agent: ssh : rsh ... could not be found" even for local ranks unless its rsh
  launcher is left out (``OMPI_MCA_plm=^rsh``).
- Intel MPI, MVAPICH: their ``mpiexec``/``mpirun`` as documented; rank and size come from
  the launcher's environment (``launched_world_size``).

tests/test_distributed.py launches with the environment's own ``mpiexec`` (next to
``sys.executable``) when there is one, else the one on PATH, adding Open MPI's flags.
"""
from clgrad.distributed.process_group import *  # noqa: F401,F403
from clgrad.distributed.collectives import *  # noqa: F401,F403
from clgrad.distributed import collectives as _collectives, process_group as _process_group
from clgrad.distributed.sampler import DistributedSampler  # noqa: F401

__all__ = _process_group.__all__ + _collectives.__all__ + ["DistributedSampler"]
