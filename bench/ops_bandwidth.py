"""The ops the zoo's per-launch profile blamed besides the convs, one by one (branch h17):
strided copies (channel shuffle, cat, chunk, expand), SiLU/sigmoid, SGD, BatchNorm, sums, the
SE block's broadcast multiply. Per op: ms per call (calls queued back to back, one synchronise,
best of 3; CPU time of the process, which a shared machine disturbs less than wall time) and
GB/s of the bytes it moves.

    CLGRAD_DEVICE=pocl POCL_MAX_PTHREAD_COUNT=1 python bench/ops_bandwidth.py [copy act mul red]

Intel's runtime: set DPCPP_CPU_NUM_CUS=1 CL_CONFIG_CPU_TBB_NUM_WORKERS=1 for one thread (its
waiting host thread counts in the CPU time too).
"""
import sys
import time
import numpy as np
import clgrad as torch
import clgrad.nn.functional as F

def sync():
    from clgrad.runtime.discovery import synchronize
    synchronize()

def bench(name, fn, nbytes, reps=None):
    """Print ms per call of ``fn`` and GB/s of ``nbytes`` per call."""
    fn()
    sync()
    t = time.process_time()
    fn()
    sync()
    one = time.process_time() - t
    reps = reps or max(3, min(200, int(0.3 / max(one, 1e-5))))
    best = 1e9
    for _ in range(3):
        t = time.process_time()
        for _ in range(reps):
            fn()
        sync()
        best = min(best, (time.process_time() - t) / reps)
    print(f"{name:40s} {best*1e3:8.3f} ms {nbytes/best/1e9:7.2f} GB/s", flush=True)
    return best


which = sys.argv[1:] or ["copy", "act", "sgd", "bn", "red", "mul"]
r = np.random.default_rng(0)
def T(*s):
    return torch.tensor(r.standard_normal(s).astype(np.float32))

if "copy" in which:
    for (n, c, h, w) in [(8, 116, 16, 16), (8, 232, 8, 8), (8, 464, 4, 4)]:
        x = T(n, c, h, w)
        v = x.view(n, 2, c // 2, h, w).transpose(1, 2)
        bench(f"shuffle {n}x{c}x{h}x{w}", lambda: v.contiguous(), 2 * x.numel() * 4)
        a, b = x.chunk(2, 1)
        bench(f"cat halves {n}x{c}x{h}x{w}", lambda: torch.cat([a, b], 1), 2 * x.numel() * 4)
        bench(f"chunk.contig {n}x{c}x{h}x{w}", lambda: b.contiguous(), x.numel() * 4)
    for c in (64, 160, 256):
        x, y = T(8, c, 32, 32), T(8, 12, 32, 32)
        bench(f"cat dense 8x{c}+12x32x32", lambda: torch.cat([x, y], 1),
              2 * (x.numel() + y.numel()) * 4)
    x = T(8, 64, 1, 1)
    bench("expand 8x64x1x1->16x16", lambda: x.expand(8, 64, 16, 16).contiguous(),
          8 * 64 * 256 * 4)
    xn = np.random.rand(8, 116, 16, 16).astype(np.float32)
    vn = xn.reshape(8, 2, 58, 16, 16).transpose(0, 2, 1, 3, 4)
    t = time.process_time()
    for _ in range(100):
        np.ascontiguousarray(vn)
    print(f"{'numpy shuffle 8x116x16x16':40s} {(time.process_time()-t)*10:8.3f} ms")
if "act" in which:
    x = T(8, 96, 16, 16)
    bench("silu 8x96x16x16", lambda: F.silu(x), 2 * x.numel() * 4)
    bench("sigmoid 8x96x16x16", lambda: torch.sigmoid(x), 2 * x.numel() * 4)
    bench("relu 8x96x16x16", lambda: F.relu(x), 2 * x.numel() * 4)
    xg = x.clone().requires_grad_()
    y = F.silu(xg)
    g = torch.ones_like(y)
    bench("silu fwd+bwd", lambda: torch.autograd.grad(F.silu(xg), xg, g), 5 * x.numel() * 4)
if "sgd" in which:
    ps = [T(1000, 100).requires_grad_() for _ in range(4)]
    for p in ps:
        p.grad = T(1000, 100)
    opt = torch.optim.SGD(ps, lr=0.01, momentum=0.9, weight_decay=5e-4)
    opt.step()
    bench("sgd momentum 4x100k", lambda: opt.step(), 4 * 100000 * 4 * 4)
    ps = [T(96).requires_grad_() for _ in range(100)]
    for p in ps:
        p.grad = T(96)
    opt = torch.optim.SGD(ps, lr=0.01, momentum=0.9, weight_decay=5e-4)
    opt.step()
    bench("sgd momentum 100x96 (launch bound)", lambda: opt.step(), 100 * 96 * 16)
if "bn" in which:
    bn = torch.nn.BatchNorm2d(96)
    x = T(8, 96, 16, 16)
    bench("bn train fwd 8x96x16x16", lambda: bn(x), 3 * x.numel() * 4)
    xg = x.clone().requires_grad_()
    g = torch.ones_like(x)
    bench("bn fwd+bwd", lambda: torch.autograd.grad(bn(xg), xg, g), 7 * x.numel() * 4)
if "red" in which:
    x = T(8, 96, 16, 16)
    bench("mean(2,3) 8x96x16x16", lambda: x.mean((2, 3)), x.numel() * 4)
    bench("sum(0,2,3) 8x96x16x16", lambda: x.sum((0, 2, 3)), x.numel() * 4)
    bench("sum all", lambda: x.sum(), x.numel() * 4)
if "mul" in which:
    x, s = T(8, 96, 16, 16), T(8, 96, 1, 1)
    bench("mul bcast SE 8x96x16x16*8x96x1x1", lambda: x * s, 2 * x.numel() * 4)
    y = T(8, 96, 16, 16)
    bench("add 8x96x16x16", lambda: x + y, 3 * x.numel() * 4)
