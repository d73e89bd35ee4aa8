"""The zoo: one training step of the models people train, clgrad against PyTorch (issue 23).

    python bench/zoo.py                                   # CPU: all models, PyTorch 1 and 2
                                                          # threads vs clgrad on Intel + PoCL
    python bench/zoo.py --models resnet18,vgg11 --batch 8 --threads 1 --device intel
    python bench/zoo.py --device gpu --batch 128 --models all      # the H200 (PyTorch 'cuda')
    python bench/zoo.py --quick                           # a smoke run (fewer steps, batch 8)

Models (``bench/zoo_models.py``, one definition for both frameworks, built with the framework
module passed in): ResNet-18, ResNeXt-29 32x4d, DenseNet-BC (121's blocks, growth 12),
MobileNetV2, EfficientNet-B0, ShuffleNetV2, VGG-11 on 3x32x32, and AlexNet (Caffe layout) on
3x227x227 (batches 1, 16, 128, and inference too).

A training step: ``zero_grad``, forward, cross-entropy, backward, SGD (momentum 0.9, weight
decay 5e-4, lr 0.01), then a device synchronise. The batch (a fixed set of 2 random batches,
cycled) is on the device before timing; both frameworks get the same initial weights
(PyTorch's ``state_dict`` loaded into clgrad) and the same batches. The first step runs with
Dropout in eval mode, and its losses must agree (asserted, both printed). Then 2 warm-up steps
each, then ``--steps`` steps alternating clgrad, PyTorch, clgrad, PyTorch, ...; rows give the
median and min-max. After timing, 2 more clgrad steps run with a queue finish after every
kernel launch (``bench/profile_step.py``'s method) to split the step into kernel time and host
time (Python between launches), with the top kernels.

Process layout: the parent loads no framework; each (thread count, clgrad device) config runs
in its own worker process whose environment is set before the first OpenCL call
(``CLGRAD_DEVICE``, ``POCL_MAX_PTHREAD_COUNT``, Intel's ``DPCPP_CPU_NUM_CUS`` /
``CL_CONFIG_CPU_TBB_NUM_WORKERS``, BLAS/OpenMP thread counts: ``common.worker_env``); PyTorch
runs in the same worker with ``torch.set_num_threads`` at that count. With ``--device gpu`` one
worker runs clgrad on the GPU and PyTorch on 'cuda' with TF32 off.

Output: one JSON line per (model, batch, mode, device, framework config) in
``--out`` (default ``bench/results/zoo_<host>_<date>.jsonl``), and a Markdown table printed at
the end (``python bench/zoo.py --table FILE.jsonl`` prints it again).

``--compile`` (issue 24) adds clgrad's step replayed: the same step function wrapped in
``clgrad.compile(fn, mode="reduce-overhead")`` (static input/target buffers, the SGD step
inside the captured kernels; the next batch is copied into the static inputs before each
replay). Before timing, a fresh eager model and a fresh replayed model (same initial weights,
Dropout in eval mode) run 4 steps on the same batches, and their losses must be bit-identical
(asserted). Then clgrad eager, clgrad replayed and PyTorch steps alternate. Every row has
``exec``: "eager" or "replayed" (PyTorch rows are eager); ``mode`` stays train/infer. AlexNet's
inference is replayed too (``clgrad.compile`` of the forward under ``no_grad``).

``--amp`` (issue 35, part 2) trains with PyTorch's mixed-precision recipe in both frameworks:
the forward and loss under ``autocast(device_type, dtype=float16)``, then ``GradScaler``'s
scale/backward/step/update (rows' ``mode`` is "train-amp"; no inference rows, no --compile).
Both lower the matmul family and the convolutions; their float16 kernels round differently,
so the first losses are compared at float16's tolerance (AMP_LOSS_RTOL).
``ZOO_HALF_DEPTHWISE=0`` (environment): float16 depthwise layers on GPUs take the float32
route (float32 copies and casts) instead of depthwise_gpu's float16 kernels (the route before
2026-12-05f); rows carry ``half_depthwise``. ``ZOO_ABSORB=0``: every autograd Node runs its
own backward (clgrad.autograd.graph.ABSORB off: relu's backward not taken by a preceding
batch norm's, the route before 2026-12-06); rows carry ``absorb``.
``--amp-dtype bfloat16``: autocast to bfloat16 without a GradScaler (PyTorch's bfloat16
recipe: its range is float32's), rows' ``mode`` "train-amp-bf16"; clgrad computes bfloat16
ops in float32 with conversions around them (README: dtypes), PyTorch on CPUs with oneDNN's
bfloat16 kernels.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402
import zoo_models  # noqa: E402

DEFAULT_BATCHES = {"alexnet": [1, 16, 128]}  # every other model: 8 and 128
LR, MOMENTUM, WEIGHT_DECAY = 0.01, 0.9, 5e-4
LOSS_RTOL = 2e-3
AMP_LOSS_RTOL = 2e-2  # float16 activations (PyTorch) against float32 ones (clgrad's convs)


def parse(argv=None):
    p = argparse.ArgumentParser(prog="bench/zoo.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="all", help="comma list of " +
                   ", ".join(zoo_models.MODELS) + ", or all")
    p.add_argument("--batch", default=None,
                   help="comma list of batch sizes for every model (default: 8,128; "
                        "AlexNet 1,16,128)")
    p.add_argument("--steps", type=int, default=7, help="timed steps per framework (>= 5)")
    p.add_argument("--warmup", type=int, default=2, help="warm-up steps per framework")
    p.add_argument("--threads", default="1,2", help="CPU thread counts, one worker each")
    p.add_argument("--device", default="intel,pocl",
                   help="CLGRAD_DEVICE values, one worker each (gpu: PyTorch on 'cuda')")
    p.add_argument("--no-infer", action="store_true", help="skip AlexNet's inference rows")
    p.add_argument("--no-profile", action="store_true",
                   help="skip the kernel/host split of clgrad's step")
    p.add_argument("--compile", action="store_true",
                   help="also time clgrad's step replayed (clgrad.compile(mode="
                        "'reduce-overhead')); rows get exec=eager|replayed")
    p.add_argument("--amp", action="store_true",
                   help="train under autocast(float16) + GradScaler in both frameworks "
                        "(mode 'train-amp'; issue 35 part 2)")
    p.add_argument("--amp-dtype", default="float16", choices=("float16", "bfloat16"),
                   help="--amp's autocast dtype (bfloat16: no GradScaler, mode "
                        "'train-amp-bf16')")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 5 steps, 1 warm-up, batch 8 (AlexNet 16) unless --batch")
    p.add_argument("--out", default=None, help="JSON-lines file to append rows to")
    p.add_argument("--table", nargs="*", default=None, help="print the table of FILEs, exit")
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.steps = max(5, args.steps)
    if args.quick:
        args.steps, args.warmup = 5, 1
    names = zoo_models.MODELS if args.models == "all" else \
        [m.strip() for m in args.models.split(",") if m.strip()]
    bad = [m for m in names if m not in zoo_models.MODELS]
    if bad:
        p.error(f"--models: unknown {bad}; expected some of {zoo_models.MODELS}")
    if args.amp and args.compile:
        p.error("--amp: not with --compile (GradScaler reads the host every step)")
    args.model_list = names
    return args


def batches_of(args, model):
    if args.batch:
        return [int(b) for b in args.batch.split(",")]
    if args.quick:
        return [16] if model == "alexnet" else [8]
    return DEFAULT_BATCHES.get(model, [8, 128])


# -- parent -----------------------------------------------------------------------------------
def configs(args):
    devs = [d.strip() for d in args.device.split(",") if d.strip()]
    if devs == ["gpu"] or devs == ["cuda"]:
        return [("gpu", "gpu")]
    threads = [t.strip() for t in args.threads.split(",") if t.strip()]
    return [(t, d) for t in threads for d in devs]


def run_parent(args):
    host = platform.node() or "host"
    out = Path(args.out) if args.out else \
        HERE / "results" / f"zoo_{host}_{datetime.date.today().isoformat()}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    argv = [a for a in sys.argv[1:]]
    for threads, dev in configs(args):
        env = common.worker_env(threads)
        env["CLGRAD_DEVICE"] = dev
        cmd = [sys.executable, str(HERE / "zoo.py"), *argv, "--worker", f"{threads}:{dev}"]
        print(f"# zoo: worker threads={threads} device={dev}", flush=True)
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        with open(out, "a") as f:
            for line in proc.stdout:
                if line.startswith("@@ROW "):
                    rows.append(json.loads(line[6:]))
                    f.write(line[6:])
                    f.flush()
                else:
                    print("  " + line.rstrip(), flush=True)
        if proc.wait() != 0:
            print(f"# worker {threads}:{dev} exited with status {proc.returncode}", flush=True)
    print(table([r for r in rows if "median_ms" in r]))  # (error rows have no times)
    print(f"# rows appended to {out}")


def table(rows) -> str:
    """Markdown: one line per (model, batch, mode, config); time ratio clgrad / PyTorch."""
    def key(r):
        return (r["model"], r["batch"], r["mode"], str(r["threads"]), r["clgrad_device"])
    groups = {}
    for r in rows:
        fw = r["framework"]
        if fw == "clgrad":
            fw = "clgrad:" + r.get("exec", "eager")
        groups.setdefault(key(r), {})[fw] = r
    lines = ["| model | batch | mode | exec | threads | clgrad device | clgrad ms | PyTorch ms | "
             "clgrad/PyTorch time | clgrad kernels ms | clgrad host ms | launches | "
             "first losses |", "|" + "---|" * 13]
    for k, g in groups.items():
        t = g.get("torch")
        for ex in ("eager", "replayed"):
            c = g.get("clgrad:" + ex)
            if c is not None or (ex == "eager" and t is not None):
                lines.append(_table_line(k, ex, c, t))
    return "\n".join(lines)


def _table_line(k, ex, c, t) -> str:
    def cell(r):
        return "—" if r is None else \
                f"{r['median_ms']:.4g} ({r['min_ms']:.4g}–{r['max_ms']:.4g})"
    ratio = f"{c['median_ms'] / t['median_ms']:.2f}×" if c and t else "—"

    def prof(f, fmt="{:.4g}"):
        return "—" if not c or c.get(f) is None else fmt.format(c[f])
    loss = "—" if not c or c.get("first_loss") is None else \
        f"{c['first_loss']:.5f} / {t['first_loss']:.5f}" if t and "first_loss" in t else \
        f"{c['first_loss']:.5f}"
    return (f"| {k[0]} | {k[1]} | {k[2]} | {ex} | {k[3]} | {k[4]} | {cell(c)} | {cell(t)} | "
            f"{ratio} | {prof('kernel_ms')} | {prof('host_ms')} | "
            f"{prof('launches', '{:.0f}')} | {loss} |")


def _mode(args) -> str:
    """A row's mode: train, train-amp (float16), train-amp-bf16."""
    if not args.amp:
        return "train"
    return "train-amp" if args.amp_dtype == "float16" else "train-amp-bf16"


# -- worker -----------------------------------------------------------------------------------
def run_worker(args):
    threads, dev = args.worker.split(":", 1)
    gpu = threads == "gpu"
    import numpy as np
    import torch
    import clgrad
    if gpu:
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        tdev = "cuda"
        tsync = torch.cuda.synchronize
    else:
        torch.set_num_threads(int(threads))
        tdev = "cpu"
        tsync = lambda: None  # noqa: E731
    cdev = clgrad.default_device()
    if os.environ.get("ZOO_HALF_DEPTHWISE") == "0":  # the float32 route's casts (before/after)
        from clgrad.ops.conv import gpu as conv_gpu
        conv_gpu.HALF_DEPTHWISE = False
    if os.environ.get("ZOO_ABSORB") == "0":  # relu's backward apart from batch norm's
        from clgrad.autograd import graph
        graph.ABSORB = False
    date = datetime.datetime.now().isoformat(timespec="seconds")
    meta = dict(bench="zoo", threads=threads if gpu else int(threads), clgrad_device=dev,
                half_depthwise=os.environ.get("ZOO_HALF_DEPTHWISE") != "0",
                absorb=os.environ.get("ZOO_ABSORB") != "0",
                device=cdev.name, platform=cdev.platform,
                driver=cdev.cl_device.driver_version, date=date, host=platform.node(),
                torch=torch.__version__, torch_device=(torch.cuda.get_device_name(0)
                                                       if gpu else "cpu"),
                steps=args.steps, warmup=args.warmup)
    print(f"clgrad on {cdev.name} [{cdev.platform}], PyTorch {torch.__version__} on {tdev}, "
          f"threads {threads}", flush=True)
    for name in args.model_list:
        for batch in batches_of(args, name):
            try:
                one(args, name, batch, np, torch, clgrad, tdev, tsync, meta)
            except Exception as e:  # noqa: BLE001  (report and go on with the next case)
                print(f"!! {name} batch {batch}: {type(e).__name__}: {str(e)[:400]}",
                      flush=True)
                row = dict(meta, model=name, batch=batch,
                           mode=_mode(args), framework="clgrad",
                           exec="eager", error=f"{type(e).__name__}: {str(e)[:400]}")
                print("@@ROW " + json.dumps(row), flush=True)


def _dropout_eval(model, on: bool, nn):
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.train(not on)


def one(args, name, batch, np, torch, clgrad, tdev, tsync, meta):
    (c, h, w), classes = zoo_models.input_shape(name)
    rng = np.random.default_rng(batch)
    data = [(rng.standard_normal((batch, c, h, w), dtype=np.float32),
             rng.integers(0, classes, batch).astype(np.int64)) for _ in range(2)]
    torch.manual_seed(0)
    tm = zoo_models.build(name, torch).to(tdev)
    init = {k: v.detach().cpu().numpy() for k, v in tm.state_dict().items()}
    cm = zoo_models.build(name, clgrad)
    cm.load_state_dict(init)
    topt = torch.optim.SGD(tm.parameters(), lr=LR, momentum=MOMENTUM,
                           weight_decay=WEIGHT_DECAY)
    copt = clgrad.optim.SGD(cm.parameters(), lr=LR, momentum=MOMENTUM,
                            weight_decay=WEIGHT_DECAY)
    tdata = [(torch.from_numpy(x).to(tdev), torch.from_numpy(y).to(tdev)) for x, y in data]
    cdata = [(clgrad.from_numpy(x), clgrad.from_numpy(y)) for x, y in data]
    tF, cF = torch.nn.functional, clgrad.nn.functional

    def stepper(model, opt, F, batches, sync, fw):
        i = [0]
        # each framework's own device type (clgrad's OpenCL GPU is 'cuda' whatever PyTorch's)
        dev_type = (clgrad.default_device().type if fw is clgrad else
                    "cuda" if tdev == "cuda" else "cpu")
        bf16 = args.amp and args.amp_dtype == "bfloat16"
        scaler = fw.amp.GradScaler(dev_type) if args.amp and not bf16 else None

        def step():
            x, y = batches[i[0] % len(batches)]
            i[0] += 1
            opt.zero_grad()
            if bf16:
                with fw.autocast(dev_type, dtype=fw.bfloat16):
                    loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
            elif scaler is None:
                loss = F.cross_entropy(model(x), y)
                loss.backward()
                opt.step()
            else:
                with fw.autocast(dev_type, dtype=fw.float16):
                    loss = F.cross_entropy(model(x), y)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            sync()
            return loss
        return step

    tstep = stepper(tm, topt, tF, tdata, tsync, torch)
    cstep = stepper(cm, copt, cF, cdata, clgrad.synchronize, clgrad)
    mode, rtol = _mode(args), (AMP_LOSS_RTOL if args.amp else LOSS_RTOL)
    if args.amp and args.amp_dtype == "bfloat16":
        rtol = 8 * AMP_LOSS_RTOL  # bfloat16 keeps 8 bits where float16 keeps 11
    tm.train()
    cm.train()
    _dropout_eval(tm, True, torch.nn)
    _dropout_eval(cm, True, clgrad.nn)
    tl, cl_ = float(tstep().item()), float(cstep().item())
    _dropout_eval(tm, False, torch.nn)
    _dropout_eval(cm, False, clgrad.nn)
    print(f"{name} batch {batch}: first loss clgrad {cl_:.6f} PyTorch {tl:.6f}", flush=True)
    assert abs(cl_ - tl) <= rtol * max(1.0, abs(tl)), \
        f"{name} batch {batch}: first losses differ: clgrad {cl_} PyTorch {tl}"
    fns = {"clgrad": cstep, "torch": tstep}
    if args.compile:
        rstep, launches = replayed_step(name, init, cdata, clgrad)
        fns["replayed"] = rstep
    times = alternate(fns, args.warmup, args.steps)
    prof = {}
    if not args.no_profile:
        import profile_step
        host_s, krows = profile_step.per_launch(cstep, 2)
        kms = sum(r["ms"] for r in krows)
        prof = dict(kernel_ms=kms, host_ms=host_s * 1e3,
                    launches=sum(r["launches"] for r in krows),
                    top_kernels=[dict(kernel=r["kernel"], launches=r["launches"],
                                      ms=round(r["ms"], 3)) for r in krows[:8]])
    emit(meta, name, batch, mode, "clgrad", times["clgrad"], first_loss=cl_, **prof)
    emit(meta, name, batch, mode, "torch", times["torch"], first_loss=tl)
    c, t = statistics.median(times["clgrad"]), statistics.median(times["torch"])
    extra = f"; kernels {prof['kernel_ms']:.1f} ms, host {prof['host_ms']:.1f} ms, " \
        f"{prof['launches']:.0f} launches" if prof else ""
    print(f"  {mode}: clgrad {c * 1e3:.2f} ms, PyTorch {t * 1e3:.2f} ms, ratio {c / t:.2f}"
          + extra, flush=True)
    if args.compile:
        emit(meta, name, batch, "train", "clgrad", times["replayed"], exec="replayed",
             first_loss=cl_, launches=launches)
        r = statistics.median(times["replayed"])
        print(f"  train replayed: clgrad {r * 1e3:.2f} ms ({launches} kernels), PyTorch "
              f"{t * 1e3:.2f} ms, ratio {r / t:.2f}; eager/replayed {c / r:.2f}", flush=True)
    if name == "alexnet" and not args.no_infer and not args.amp:
        tm.eval()
        cm.eval()
        tx, cx = tdata[0][0], cdata[0][0]

        def tinf():
            with torch.no_grad():
                tm(tx)
            tsync()

        def cinf():
            with clgrad.no_grad():
                cm(cx)
            clgrad.synchronize()
        fns = {"clgrad": cinf, "torch": tinf}
        if args.compile:
            fwd = clgrad.compile(lambda x: cm(x), mode="reduce-overhead")
            with clgrad.no_grad():
                want = cm(cx).numpy()
                for _ in range(3):  # eager warm-up, capture + replay, replay
                    got = fwd(cx).numpy()
                    assert np.array_equal(got, want), \
                        f"{name} batch {batch}: replayed inference differs from eager"

            def rinf():
                with clgrad.no_grad():
                    fwd(cx)
                clgrad.synchronize()
            fns["replayed"] = rinf
        times = alternate(fns, args.warmup, args.steps)
        emit(meta, name, batch, "infer", "clgrad", times["clgrad"])
        emit(meta, name, batch, "infer", "torch", times["torch"])
        c, t = statistics.median(times["clgrad"]), statistics.median(times["torch"])
        print(f"  infer: clgrad {c * 1e3:.2f} ms, PyTorch {t * 1e3:.2f} ms, ratio {c / t:.2f}",
              flush=True)
        if args.compile:
            emit(meta, name, batch, "infer", "clgrad", times["replayed"], exec="replayed")
            r = statistics.median(times["replayed"])
            print(f"  infer replayed: clgrad {r * 1e3:.2f} ms, ratio {r / t:.2f}", flush=True)


def replayed_step(name, init, cdata, clgrad, check_steps=4):
    """clgrad's training step under ``clgrad.compile(mode="reduce-overhead")``: checks that a
    fresh replayed model's losses over ``check_steps`` steps equal a fresh eager model's bit for
    bit (Dropout in eval mode for the check), then returns (a timed step function on the
    replayed model with Dropout back in train mode, kernels per replay)."""
    def fresh():
        m = zoo_models.build(name, clgrad)
        m.load_state_dict(init)
        m.train()
        _dropout_eval(m, True, clgrad.nn)
        opt = clgrad.optim.SGD(m.parameters(), lr=LR, momentum=MOMENTUM,
                               weight_decay=WEIGHT_DECAY)

        def step(x, y):
            opt.zero_grad()
            loss = clgrad.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss
        return m, step
    _, eager = fresh()
    want = [float(eager(*cdata[i % len(cdata)]).item()) for i in range(check_steps)]
    model, step = fresh()
    fast = clgrad.compile(step, mode="reduce-overhead")
    got = [float(fast(*cdata[i % len(cdata)]).item()) for i in range(check_steps)]
    print(f"{name}: eager losses {want}, replayed {got}", flush=True)
    assert got == want, f"{name}: replayed losses {got} differ from eager {want}"
    _dropout_eval(model, False, clgrad.nn)
    fast = clgrad.compile(step, mode="reduce-overhead")  # captures anew (Dropout on)
    fast(*cdata[0])
    fast(*cdata[1])
    clgrad.synchronize()
    n0 = clgrad.runtime.launch_count()
    fast(*cdata[0])
    clgrad.synchronize()
    launches = clgrad.runtime.launch_count() - n0
    i = [0]

    def rstep():
        x, y = cdata[i[0] % len(cdata)]
        i[0] += 1
        loss = fast(x, y)
        clgrad.synchronize()
        return loss
    return rstep, launches


def alternate(fns, warmup, steps):
    """Times ``fns`` ({name: step}) with their steps interleaved: {name: [seconds]}."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    times = {k: [] for k in fns}
    for _ in range(steps):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return times


def emit(meta, model, batch, mode, framework, times, exec="eager", **extra):  # noqa: A002
    ms = [t * 1e3 for t in times]
    row = dict(meta, model=model, batch=batch, mode=mode, framework=framework, exec=exec,
               median_ms=statistics.median(ms), min_ms=min(ms), max_ms=max(ms), n=len(ms),
               **extra)
    print("@@ROW " + json.dumps(row), flush=True)


def main(argv=None):
    args = parse(argv)
    if args.table is not None:
        rows = [json.loads(line) for f in args.table for line in Path(f).read_text().splitlines()
                if line.strip()]
        print(table([r for r in rows if "median_ms" in r]))
    elif args.worker:
        run_worker(args)
    else:
        run_parent(args)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
