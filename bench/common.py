"""Shared machinery of the benchmarks: one worker process per thread count, peers, alternating
timing, JSON lines and markdown tables with ratios.

Every script runs the same way (see bench/README.md):

    python bench/<name>.py [--threads 1,2] [--gpu] [--reps N] [--out DIR] [--quick]

The parent process loads no OpenCL, BLAS or PyTorch library. It starts one worker process per
thread count, because PoCL, OpenBLAS and PyTorch read their thread counts when they load, and
sets, in the worker only: POCL_MAX_PTHREAD_COUNT, OPENBLAS/OMP/MKL_NUM_THREADS, glibc's
MALLOC_MMAP_THRESHOLD_/MALLOC_TRIM_THRESHOLD_ (freed memory is kept) and OMP_WAIT_POLICY=
PASSIVE (no spinning threads; see worker_env for the measurements behind both), and unsets
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (they slow NumPy here; never in tests).
Workers print rows as ``@@ROW {json}``; the parent writes ``DIR/<name>.jsonl`` (one JSON
object per measurement, with device, driver, date and min-max) and ``DIR/<name>.md`` (the
tables, also printed). ``--gpu``: one worker on ``CLGRAD_DEVICE=gpu`` (default) with the GPU
shapes and the GPU peers (PyTorch CUDA with TF32 off, tinygrad on the GPU's OpenCL).

Timing (``measure``): every peer's callable runs its own synchronisation; after warm-up, the
peers alternate within each repetition (A B C A B C ...) so drift hits all alike; the median
of >= 5 repetitions is reported with the min-max.
"""
from __future__ import annotations

import argparse
import datetime
import glob
import importlib.util
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PEER_ORDER = ["clgrad", "numpy", "torch", "torch-cuda", "tinygrad"]
PEER_NAMES = {"clgrad": "clgrad", "numpy": "NumPy", "torch": "PyTorch CPU",
              "torch-cuda": "PyTorch CUDA", "tinygrad": "tinygrad CL"}


# -- parent side ------------------------------------------------------------------------------
def parse_args(name: str, doc: str, extra=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=f"bench/{name}.py", description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", default="1,2",
                   help="CPU thread counts, one worker each (default 1,2; ignored with --gpu)")
    p.add_argument("--gpu", action="store_true", help="GPU shapes and peers, one worker")
    p.add_argument("--reps", type=int, default=7, help="timed repetitions (>= 5)")
    p.add_argument("--budget", type=float, default=20.0,
                   help="seconds of timed runs per case and worker, at most (min 5 reps)")
    p.add_argument("--peers", default="clgrad,numpy,torch,torch-cuda,tinygrad",
                   help="peers to try (missing ones are skipped with a note)")
    p.add_argument("--out", default=str(RESULTS), help="folder for <name>.jsonl and <name>.md")
    p.add_argument("--quick", action="store_true", help="fewer cases (a smoke run)")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    if extra:
        extra(p)
    return p.parse_args()


def main(name: str, doc: str, worker, extra_args=None):
    """Entry point of a bench script: a worker when --worker is given, else the parent."""
    args = parse_args(name, doc, extra_args)
    if args.worker is not None:
        worker(args, Worker(name, args))
        return
    configs = ["gpu"] if args.gpu else [t.strip() for t in args.threads.split(",") if t.strip()]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.jsonl").write_text("")  # rows are appended as they come (a killed run
    rows, notes = [], []                      # keeps what it measured)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so run_worker's finally runs
    for cfg in configs:
        rows_cfg, notes_cfg = run_worker(name, cfg, sys.argv[1:], out / f"{name}.jsonl")
        rows += rows_cfg
        notes += [n for n in notes_cfg if n not in notes]
    md = render(name, rows, notes)
    (out / f"{name}.md").write_text(md)
    print(md)
    print(f"# wrote {out / (name + '.jsonl')} and {out / (name + '.md')}")


def worker_env(cfg: str) -> dict:
    """The environment of a worker: thread counts, no OpenBLAS overrides, tinygrad's loader."""
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(k, None)
    # glibc keeps freed memory: without this, a framework that allocates fresh multi-MB host
    # buffers every step page-faults them in again, which this VM makes very slow (PyTorch's
    # 2-thread S4 step took 290 ms instead of 18 ms right after a tinygrad step).
    env.setdefault("MALLOC_MMAP_THRESHOLD_", str(32 << 20))
    env.setdefault("MALLOC_TRIM_THRESHOLD_", str(4 << 30))
    # OpenMP threads that spin after a parallel region take the cores from whatever runs
    # next (PoCL's threads, the next peer): PyTorch's own 2-thread step varied 35-170 ms
    # with the default policy and held 25-29 ms with PASSIVE, as did the other peers.
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if cfg != "gpu":
        # Intel's OpenCL CPU runtime reads CL_CONFIG_CPU_TBB_NUM_WORKERS (TBB worker threads)
        # and DPCPP_CPU_NUM_CUS / SYCL_CPU_NUM_CUS (threads executing kernels).
        for k in ("POCL_MAX_PTHREAD_COUNT", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                  "MKL_NUM_THREADS", "CL_CONFIG_CPU_TBB_NUM_WORKERS", "DPCPP_CPU_NUM_CUS",
                  "SYCL_CPU_NUM_CUS"):
            env[k] = cfg
    else:
        env.setdefault("CLGRAD_DEVICE", "gpu")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p])
    env.update(tinygrad_env(cfg == "gpu"))
    return env


def tinygrad_env(gpu: bool) -> dict:
    """tinygrad's CL backend loads an OpenCL ICD loader through ctypes and takes the first
    platform: point it at pyopencl's bundled loader, and the loader at PoCL from the same wheel
    (CPU) or at NVIDIA's ICD alone (GPU), so both frameworks run on the same device."""
    spec = importlib.util.find_spec("pyopencl")
    if spec is None or not spec.submodule_search_locations:
        return {}
    libs = Path(list(spec.submodule_search_locations)[0]) / ".libs"
    loader = sorted(glob.glob(str(libs / "libOpenCL*.so*")))
    env = {"DEV": "CL"}
    if loader:
        env["OPENCL_PATH"] = loader[0]
    if gpu:
        nv = Path("/etc/OpenCL/vendors/nvidia.icd")
        lib = nv.read_text().strip() if nv.is_file() else None
    else:
        lib = next(iter(sorted(glob.glob(str(libs / "libpocl*.so*")))), None)
    if lib:  # a vendors folder holding this one ICD
        d = Path(tempfile.gettempdir()) / f"clgrad-bench-icd-{'gpu' if gpu else 'cpu'}"
        d.mkdir(exist_ok=True)
        (d / "only.icd").write_text(lib + "\n")
        env["OCL_ICD_VENDORS"] = str(d)
    return env


def run_worker(name: str, cfg: str, argv, jsonl: Path) -> tuple[list, list]:
    """Run this script as a worker for one thread config; return its rows and notes (rows
    and notes are also appended to ``jsonl`` as they arrive)."""
    cmd = [sys.executable, str(ROOT / "bench" / f"{name}.py"), *argv, "--worker", cfg]
    print(f"# {name}: worker {'gpu' if cfg == 'gpu' else cfg + ' thread(s)'}", flush=True)
    proc = subprocess.Popen(cmd, env=worker_env(cfg), stdout=subprocess.PIPE, text=True)
    rows, notes = [], []
    try:
        with open(jsonl, "a") as f:
            for line in proc.stdout:
                if line.startswith("@@ROW "):
                    rows.append(json.loads(line[6:]))
                    f.write(line[6:])
                elif line.startswith("@@NOTE "):
                    notes.append(line[7:].strip())
                    f.write(json.dumps({"bench": name, "threads": cfg, "note": notes[-1]})
                            + "\n")
                    print("  note:", notes[-1], flush=True)
                else:
                    print("  " + line.rstrip(), flush=True)
                f.flush()
        if proc.wait() != 0:
            notes.append(f"worker {cfg} exited with status {proc.returncode}")
            print("  note:", notes[-1], flush=True)
    finally:
        if proc.poll() is None:
            proc.kill()
    return rows, notes


def render_files(paths) -> str:
    """Markdown of the JSON-lines files ``paths`` (rows and notes), one section per bench."""
    out = []
    for path in paths:
        rows, notes = [], []
        if not Path(path).is_file():
            continue
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            if "note" in r:
                notes.append(r["note"])
            else:
                rows.append(r)
        if rows or notes:
            out.append(render(Path(path).stem, rows, list(dict.fromkeys(notes))))
    return "\n".join(out)


def _fmt(v: float) -> str:
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def render(name: str, rows: list, notes: list) -> str:
    """Markdown: one table per (thread config, metric); cells 'median (min–max)'; ratio
    columns 'clgrad vs X' = clgrad's speed / X's speed from the medians (> 1: clgrad faster;
    for times that is X's time / clgrad's time)."""
    lines = []
    metas = [r for r in rows if r.get("case") == "_meta"]
    data = [r for r in rows if r.get("case") != "_meta"]
    for m in metas:
        lines.append(f"<!-- {json.dumps(m)} -->")
    cfgs = list(dict.fromkeys(r["threads"] for r in data))
    for cfg in cfgs:
        meta = next((m for m in metas if m["threads"] == cfg), {})
        sub = [r for r in data if r["threads"] == cfg]
        for metric in dict.fromkeys(r["metric"] for r in sub):
            rs = [r for r in sub if r["metric"] == metric]
            peers = [p for p in PEER_ORDER if any(r["peer"] == p for r in rs)]
            unit = rs[0]["unit"]
            higher = rs[0].get("higher_is_better", False)
            title = (f"### {name}: {metric} ({unit}, {'higher' if higher else 'lower'} is "
                     f"better) — {'GPU' if cfg == 'gpu' else str(cfg) + ' thread(s)'}")
            lines += ["", title, "", f"Device: {meta.get('device', '?')} — driver "
                      f"{meta.get('driver', '?')} — {meta.get('date', '?')}. Cells: median "
                      f"(min–max); 'clgrad vs X': clgrad's speed / X's (> 1: clgrad faster).",
                      ""]
            others = [p for p in peers if p != "clgrad"]
            head = ["case"] + [PEER_NAMES[p] for p in peers] + \
                [f"clgrad vs {PEER_NAMES[p]}" for p in others]
            lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            for case in dict.fromkeys(r["case"] for r in rs):
                by = {r["peer"]: r for r in rs if r["case"] == case}
                cells = [case]
                for p in peers:
                    r = by.get(p)
                    cells.append("—" if r is None else
                                 f"{_fmt(r['median'])} ({_fmt(r['min'])}–{_fmt(r['max'])})")
                c = by.get("clgrad")
                for p in others:
                    r = by.get(p)
                    if r is None or c is None or not c["median"] or not r["median"]:
                        cells.append("—")
                    else:
                        ratio = c["median"] / r["median"] if higher else \
                            r["median"] / c["median"]
                        cells.append(f"{ratio:.2f}×")
                lines.append("| " + " | ".join(cells) + " |")
            errs = [f"{r['case']} {r['max_rel_err']:.1e}" for r in rs
                    if r["peer"] == "clgrad" and r.get("max_rel_err") is not None]
            if errs:
                lines += ["", "clgrad's max relative error against NumPy (float64): " +
                          ", ".join(errs)]
    if notes:
        lines += ["", "Notes:"] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


# -- worker side ------------------------------------------------------------------------------
class Worker:
    """Emits rows for one worker process; knows the thread config and the clgrad device."""

    def __init__(self, name: str, args):
        self.name, self.args = name, args
        self.cfg = args.worker
        self.gpu = self.cfg == "gpu"
        self.threads = "gpu" if self.gpu else int(self.cfg)
        self.wanted = {p.strip() for p in args.peers.split(",")}
        self.date = datetime.datetime.now().isoformat(timespec="seconds")
        self._device = None
        self.versions = {"python": platform.python_version(), "host": platform.node()}

    # peers ---------------------------------------------------------------------------------
    def want(self, peer: str) -> bool:
        """True if ``peer`` was asked for and is importable (else a note says why not)."""
        if peer not in self.wanted:
            return False
        if self.gpu and peer == "torch":
            return False
        if not self.gpu and peer == "torch-cuda":
            return False
        mod = {"torch-cuda": "torch"}.get(peer, peer)
        if importlib.util.find_spec(mod) is None:
            self.note(f"{PEER_NAMES[peer]}: not installed, skipped")
            return False
        if peer == "torch-cuda":
            import torch
            if not torch.cuda.is_available():
                self.note("PyTorch CUDA: no CUDA device, skipped")
                return False
        return True

    def setup_torch(self):
        import torch
        if self.gpu:
            torch.backends.cudnn.allow_tf32 = False
            torch.backends.cuda.matmul.allow_tf32 = False
            self.versions["torch"] = f"{torch.__version__} cuDNN " \
                f"{torch.backends.cudnn.version()} {torch.cuda.get_device_name(0)}"
        else:
            torch.set_num_threads(self.threads)
            self.versions["torch"] = torch.__version__
        return torch

    def setup_tinygrad(self):
        """tinygrad on its CL device (same OpenCL device as clgrad); None if unusable."""
        try:
            import tinygrad
            from tinygrad import Device
            Device["CL"]  # opens the device (DEV=CL is set by the parent)
            from importlib.metadata import version
            self.versions["tinygrad"] = f"{version('tinygrad')} on {Device['CL'].device_name}"
            return tinygrad
        except Exception as e:  # noqa: BLE001  (any failure to start: skip the peer)
            self.note(f"tinygrad CL: could not start ({type(e).__name__}: {e}), skipped")
            return None

    def device(self):
        """The clgrad device (imported lazily, after the environment is set)."""
        if self._device is None:
            import clgrad
            import numpy as np
            self._device = clgrad.default_device()
            d = self._device.cl_device
            self.versions.update(numpy=np.__version__, clgrad=clgrad.__version__,
                                 pyopencl=__import__("pyopencl").VERSION_TEXT)
            self.meta = {"device": f"{self._device.name} ({d.platform.name.strip()}, "
                                   f"{d.max_compute_units} CUs)",
                         "driver": f"{d.driver_version.strip()} / {d.version.strip()}"}
        return self._device

    # output --------------------------------------------------------------------------------
    def note(self, text: str):
        print("@@NOTE " + text, flush=True)

    def emit_meta(self):
        self.device()
        self._emit({"case": "_meta", **self.meta, "versions": self.versions})

    def emit(self, case: str, peer: str, metric: str, unit: str, times, scale=1.0,
             higher_is_better=False, **extra):
        """One row: ``times`` in seconds are turned into ``scale / t`` when higher is better
        (a rate) or ``t * scale`` otherwise; median, min, max of the transformed values."""
        vals = [scale / t for t in times] if higher_is_better else [t * scale for t in times]
        self._emit({"case": case, "peer": peer, "metric": metric, "unit": unit,
                    "median": statistics.median(vals), "min": min(vals), "max": max(vals),
                    "n": len(vals), "higher_is_better": higher_is_better, **extra})

    def _emit(self, row: dict):
        self.device()
        row = {"bench": self.name, "threads": self.threads, "date": self.date, **self.meta,
               **row}
        print("@@ROW " + json.dumps(row), flush=True)


def measure(fns: dict, reps: int = 7, warmup: int = 2, budget: float = 20.0) -> dict:
    """Time each callable of ``fns`` (name -> fn; each fn synchronises its device).

    Warm-up calls first (compiles, caches), then repetitions in which the peers alternate.
    The number of repetitions is ``reps``, cut to what fits in ``budget`` seconds but never
    below 5. Returns name -> list of seconds.
    """
    last = {}
    for name, fn in list(fns.items()):
        try:
            for _ in range(warmup):
                t = time.perf_counter()
                fn()
                last[name] = time.perf_counter() - t
        except Exception as e:  # noqa: BLE001  (a peer that fails is dropped with a note)
            print(f"@@NOTE {PEER_NAMES.get(name, name)} failed ({type(e).__name__}: "
                  f"{str(e)[:300]}); dropped from this case", flush=True)
            fns = {k: v for k, v in fns.items() if k != name}
            last.pop(name, None)
    per_rep = sum(last.values()) or 1e-9
    n = max(5, min(reps, int(budget / per_rep)))
    times = {name: [] for name in fns}
    for _ in range(n):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return times


def require_clgrad_nn(w: Worker, what: str, training: bool = False):
    """clgrad.nn.functional.conv2d (and, for ``training``, the nn modules and optim.SGD) come
    from other work: exit with a clear note while they are missing."""
    try:
        from clgrad.nn import functional
        if not hasattr(functional, "conv2d"):
            raise ImportError("clgrad.nn.functional has no conv2d")
        if training:
            import clgrad.nn as nn
            import clgrad.optim as optim
            missing = [m for m in ("Sequential", "Conv2d", "ReLU", "MaxPool2d", "Flatten",
                                   "Linear", "CrossEntropyLoss") if not hasattr(nn, m)]
            missing += [] if hasattr(optim, "SGD") else ["optim.SGD"]
            if missing:
                raise ImportError(f"missing {', '.join(missing)}")
    except ImportError as e:
        w.note(f"{what}: clgrad.nn is not available yet ({e}); nothing measured")
        sys.exit(2)


if __name__ == "__main__":
    # python bench/common.py FILE.jsonl ...: print the tables of stored results
    print(render_files(sys.argv[1:]))


def conv_passes(x, w, g, stride, padding, groups) -> dict:
    """clgrad's three passes of one conv layer on device tensors x (N, C, H, W), w and the
    output gradient g, through clgrad.ops.conv's own steps (no autograd): {"forward": fn,
    "grad_input": fn, "grad_weight": fn} (each runs its pass once, then synchronises),
    "got": {pass: its result tensor}, "algos": {pass: the algorithm it ran} (filled as the
    passes run). Shared by bench/conv_layers.py, depthwise.py and pointwise.py."""
    from clgrad import backends
    from clgrad.ops._util import empty
    from clgrad.ops.conv.choice import _choose, _grad_input, _run
    from clgrad.ops.conv.problem import _check, _forward_problem, v5
    dev = x._storage.device
    y, gi, gw = (empty(tuple(t.shape), x.dtype, dev) for t in (g, x, w))
    geo = _check(x, w, None, stride, padding, 1, groups)
    pf = _forward_problem(geo, x, w, y, None)
    pw = geo._replace(x=v5(x, groups))
    algos = {}

    def fwd():
        a, plan = _choose("forward", pf, w)
        algos["forward"] = a
        _run(a, plan, "forward", pf, x, w, y, None)
        dev.synchronize()

    def dgrad():
        _grad_input(geo, g, w, gi)
        algos["grad_input"] = backends.last_conv_algorithms["grad_input"]
        dev.synchronize()

    def wgrad():
        a, plan = _choose("grad_weight", pw, w)
        algos["grad_weight"] = a
        _run(a, plan, "grad_weight", pw, x, g, gw, None)
        dev.synchronize()
    return {"forward": fwd, "grad_input": dgrad, "grad_weight": wgrad,
            "got": {"forward": y, "grad_input": gi, "grad_weight": gw}, "algos": algos}


def spawn_worker(args, script: str):
    """Run ``script --worker`` with this process's arguments in a worker process whose
    environment (worker_env) sets ``args.threads`` threads and ``CLGRAD_DEVICE=args.device``
    before the first OpenCL call."""
    env = worker_env(str(args.threads))
    env["CLGRAD_DEVICE"] = args.device
    subprocess.run([sys.executable, script, "--worker"] + sys.argv[1:], env=env, check=True)


def run_layer_bench(ap: argparse.ArgumentParser, worker, script: str):
    """Parse ``ap`` (from layer_parser); in the worker process run ``worker(args)``, else start
    that process (spawn_worker on ``script``)."""
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    spawn_worker(args, script)


def layer_parser(doc: str, reps: int) -> argparse.ArgumentParser:
    """The options the per-layer conv benchmarks share (conv_layers.py, depthwise.py,
    pointwise.py): --batch, --threads, --device, --only, --reps, --tag, --out, --worker."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="intel")
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--tag", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--worker", action="store_true")
    return ap


def append_row(path: str, row: dict):
    """Append ``row`` as one JSON line to ``path`` (nothing when path is empty)."""
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def time_conv_layer(args, name: str, c: int, o: int, h: int, k: int, stride: int, pad: int,
                    groups: int, extra=None) -> list:
    """Time one conv layer's three passes alone (forward, input gradient, weight gradient),
    clgrad (conv_passes) against PyTorch CPU (F.conv2d / aten.convolution_backward),
    alternated (measure); batch args.batch, float32, square H x H maps. ``extra``: pass ->
    {peer name: fn} timed in the same alternation (A/B variants). Prints one line per pass
    and appends its row to args.out; returns the rows (ms medians with min-max, GFLOP/s,
    the error relative to PyTorch's largest magnitude)."""
    import numpy as np
    import torch
    import clgrad
    n, cg = args.batch, c // groups
    oh = (h + 2 * pad - k) // stride + 1
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((n, c, h, h), dtype=np.float32)
    wn = (rng.standard_normal((o, cg, k, k)) / np.sqrt(k * k * cg)).astype(np.float32)
    gn = rng.standard_normal((n, o, oh, oh), dtype=np.float32)
    x, w, g = (clgrad.from_numpy(v) for v in (xn, wn, gn))
    passes = conv_passes(x, w, g, stride, pad, groups)
    tx, tw, tg = (torch.from_numpy(v) for v in (xn, wn, gn))
    bw = torch.ops.aten.convolution_backward
    sp, pp = [stride, stride], [pad, pad]
    peers = {
        "forward": lambda: torch.nn.functional.conv2d(tx, tw, None, stride, pad, 1, groups),
        "grad_input": lambda: bw(tg, tx, tw, None, sp, pp, [1, 1], False, [0, 0], groups,
                                 [True, False, False])[0],
        "grad_weight": lambda: bw(tg, tx, tw, None, sp, pp, [1, 1], False, [0, 0], groups,
                                  [False, True, False])[1],
    }
    flop = 2.0 * n * o * oh * oh * cg * k * k
    dev = x._storage.device
    rows = []
    for pas, tf in peers.items():
        passes[pas]()
        ref = tf().numpy()
        err = float(np.abs(passes["got"][pas].numpy() - ref).max() /
                    max(float(np.abs(ref).max()), 1e-30))
        fns = {"clgrad": passes[pas], "torch": tf, **((extra or {}).get(pas, {}))}
        t = measure(fns, reps=args.reps, budget=getattr(args, "budget", 4.0))
        med = {k: statistics.median(v) for k, v in t.items()}
        row = dict(layer=name, c=c, o=o, h=h, k=k, stride=stride, groups=groups, n=n,
                   pass_=pas, algo=passes["algos"][pas], relerr=err, device=dev.name,
                   vw=dev.vector_width, threads=args.threads, tag=args.tag,
                   ratio=med["clgrad"] / med["torch"])
        for peer, v in t.items():
            row[f"{peer}_ms"] = med[peer] * 1e3
            row[f"{peer}_minmax"] = [min(v) * 1e3, max(v) * 1e3]
            row[f"{peer}_gflops"] = flop / med[peer] / 1e9
        others = " ".join(f"{peer} {med[peer] * 1e3:7.3f}" for peer in t
                          if peer not in ("clgrad", "torch"))
        print(f"{name:22s} {pas:11s} {row['algo']:9s} clgrad {row['clgrad_ms']:7.3f} ms "
              f"({row['clgrad_gflops']:5.1f} GF/s) torch {row['torch_ms']:7.3f} ms "
              f"({row['torch_gflops']:5.1f}) ratio {row['ratio']:5.2f} err {err:.1e} {others}",
              flush=True)
        append_row(args.out, row)
        rows.append(row)
    return rows
