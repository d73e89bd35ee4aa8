"""Data-parallel training step of the main job's net (clgrad.train.digits_net) on K ranks.

    mpiexec -n 1 python bench/ddp_step.py      # one process, global batch 32
    mpiexec -n 2 python bench/ddp_step.py      # two processes, 16 samples each

A step is zero_grad, forward, backward, AdamW step, device synchronised, at the global batch
``--batch`` split evenly across the ranks (as ``mpiexec -n K python -m clgrad train``). With
K > 1 it times three variants on the same processes, alternating per repetition: ``ddp`` (the
DistributedDataParallel step), ``local`` (the same step inside ``no_sync()``: identical
compute, no communication) and reports, from rank 0: median step time (min-max), images/s,
bytes all-reduced per step, the seconds DDP spent staging/starting/waiting (``comm_stats``,
an upper bound: its device->host reads also wait for queued backward kernels) and the
communication share estimated as (ddp - local) / ddp, and the all-reduce of the bucket's
size alone (raw mpi4py Allreduce, and clgrad.distributed.all_reduce with its staging and
cross-rank check). Rows go to bench/results/ddp_step.jsonl.
"""
import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=40, help="timed steps per variant")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    args = p.parse_args()

    import clgrad
    import clgrad.distributed as dist
    from clgrad import nn, optim
    from clgrad.train import digits_net

    world = max(1, dist.launched_world_size())
    if world > 1:
        dist.init_process_group("mpi")
    rank = dist.get_rank() if world > 1 else 0
    device = clgrad.default_device()
    local = args.batch // world
    rng = np.random.default_rng(rank)
    x = clgrad.tensor(rng.standard_normal((local, 1, 8, 8)).astype(np.float32))
    y = clgrad.tensor(rng.integers(0, 10, local))
    clgrad.manual_seed(0)
    net = digits_net()
    model = nn.parallel.DistributedDataParallel(net) if world > 1 else net
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
        device.synchronize()

    def local_step():
        with model.no_sync():
            step()

    variants = {"ddp": step, "local": local_step} if world > 1 else {"single": step}
    times = {k: [] for k in variants}
    comm_s, wait_s, comm_bytes = [], [], 0
    for i in range(args.warmup + args.steps):
        for name, fn in variants.items():
            if world > 1:
                dist.barrier()
            t0 = time.perf_counter()
            fn()
            dt = time.perf_counter() - t0
            if i >= args.warmup:
                times[name].append(dt)
                if name == "ddp":
                    comm_s.append(model.comm_stats["seconds"])
                    wait_s.append(model.comm_stats["wait_seconds"])
                    comm_bytes = model.comm_stats["bytes"]
    wire = {}
    if world > 1:  # the all-reduce alone, at the bucket's size: raw MPI and clgrad's
        flat = clgrad.zeros(sum(p.numel() for p in net.parameters()))
        host = flat.numpy()
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        for name, fn in (("mpi_allreduce_us", lambda: comm.Allreduce(MPI.IN_PLACE, host)),
                         ("clgrad_all_reduce_us", lambda: dist.all_reduce(flat))):
            reps = []
            for _ in range(200):
                comm.Barrier()
                t0 = time.perf_counter()
                fn()
                reps.append(time.perf_counter() - t0)
            wire[name] = 1e6 * statistics.median(reps)
    if rank != 0:
        return
    med = {k: statistics.median(v) for k, v in times.items()}
    row = dict(bench="ddp_step", world_size=world, global_batch=args.batch, local_batch=local,
               device=device.name, host=platform.node(), date=time.strftime("%Y-%m-%d"),
               pocl_cu=os.environ.get("POCL_CPU_MAX_CU_NUM"),
               params=sum(p.numel() for p in net.parameters()),
               **{f"{k}_ms": 1e3 * m for k, m in med.items()},
               **{f"{k}_min_max_ms": [1e3 * min(v), 1e3 * max(v)] for k, v in times.items()})
    main_t = med.get("ddp", med.get("single"))
    row["images_per_s"] = args.batch / main_t
    if world > 1:
        row.update(bytes_allreduced_per_step=comm_bytes,
                   ddp_comm_stats_ms=1e3 * statistics.median(comm_s),
                   ddp_wait_ms=1e3 * statistics.median(wait_s),
                   comm_share_estimate=(med["ddp"] - med["local"]) / med["ddp"],
                   buckets=model.bucket_sizes, **wire)
    print(json.dumps(row))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    with open(Path(args.out) / "ddp_step.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
