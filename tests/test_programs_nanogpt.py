"""A nanoGPT-style character model (tests/programs/nanogpt_char.py) run with only its imports
rewritten: Karpathy's nanoGPT idioms (device/dtype choice, np.memmap batches pinned and moved
non_blocking, SDPA or masked-softmax attention, weight tying, scaled init, AdamW groups with
fused= detection, cosine lr with warmup, gradient accumulation under a GradScaler, a
checkpoint resumed with the _orig_mod. prefix stripped, top-k sampling).

Oracles: ln(vocab) for the untrained loss, the lr formula and parameter counts by hand, the
checkpoint file for the resumed state, and PyTorch (where importable) from copied weights on
the same batch: logits, loss, every gradient, AdamW steps and greedy generation. The GPU path
(bfloat16 autocast, pin_memory, fused AdamW, cuda.synchronize) runs in a child process where
PoCL poses as a GPU (tests/subproc.py).

Gaps found and fixed on the way: Tensor.pin_memory / is_pinned did not exist
(tests/test_device_cross.py::test_pin_memory); Adam/AdamW kept foreach, capturable,
differentiable and fused out of defaults and the param groups (PyTorch keeps them:
tests/test_optim.py::test_adaptive_optimizers_take_pytorchs_execution_flags). Left alone:
torch.compile(model) returns the model itself (PyTorch: an OptimizedModule whose state_dict
keys carry the '_orig_mod.' prefix the resume loop strips)."""
import copy
import json
import math

import numpy as np
import pytest
from subproc import run_as_gpu
from test_programs import PROGRAMS, load_program, rewrite_imports
from test_programs import copy_state as _copy, load_both as _both

import clgrad

SMALL = dict(batch_size=4, block_size=16, eval_iters=2, sample_tokens=20)


@pytest.fixture(autouse=True)
def _restore_matmul_precision():
    """main() sets backends.cuda.matmul.allow_tf32 = True, as nanoGPT does: undone after."""
    prev = clgrad.get_float32_matmul_precision()
    prev_cudnn = clgrad.backends.cudnn.allow_tf32
    yield
    clgrad.set_float32_matmul_precision(prev)
    clgrad.backends.cudnn.allow_tf32 = prev_cudnn


def _np(t):
    return t.detach().float().numpy().astype(np.float64)


def test_nanogpt_differs_from_pytorch_only_in_imports():
    source = (PROGRAMS / "nanogpt_char.py").read_text()
    assert "clgrad" not in source
    rewrite_imports(source)


def _lr(it, lr=1e-2, min_lr=1e-3, warmup=5, decay=40):   # nanoGPT's schedule, by hand
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if it > decay:
        return min_lr
    return min_lr + 0.5 * (1 + math.cos(math.pi * (it - warmup) / (decay - warmup))) * (
        lr - min_lr)


def test_nanogpt_trains_samples_and_resumes(programs, capsys):
    prog = load_program("nanogpt_char")
    r = prog.main(max_iters=40, eval_interval=20, device="cpu")  # (the GPU path: posed, below)
    out = capsys.readouterr().out
    h, V = r["history"], r["vocab_size"]
    assert r["device"] == "cpu" and r["dtype"] == "float32" and not r["used_fused"]
    assert V == len(set(prog.CORPUS)) == 28
    assert h["iters"] == list(range(41))     # iterations 0..max_iters, each logged
    assert abs(h["losses"][0] - math.log(V)) < 0.15       # untrained: uniform over 28
    assert np.mean(h["losses"][-5:]) < math.log(V) - 1.2  # clgrad 1.59 (ln 28 = 3.33)
    assert [e[0] for e in h["evals"]] == [0, 20, 40] and h["evals"][-1][2] < 2.0
    np.testing.assert_allclose(h["lrs"], [_lr(i) for i in range(41)], rtol=1e-12)
    assert [g["lr"] for g in r["optimizer"].param_groups] == [_lr(40)] * 2
    assert "using fused AdamW: False" in out and "saving checkpoint to out" in out
    # sampling: the prompt, then sample_tokens ids of the vocabulary
    stoi = {c: i for i, c in enumerate(sorted(set(prog.CORPUS)))}
    assert len(r["tokens"]) == 4 + 24 and r["tokens"][:4] == [stoi[c] for c in "the "]
    assert all(0 <= t < V for t in r["tokens"]) and len(r["text"]) == 28
    # the token file: uint16 ids of the first 90% of the corpus
    data = np.memmap(programs / "data" / "train.bin", dtype=np.uint16, mode="r")
    np.testing.assert_array_equal(data, [stoi[c] for c in prog.CORPUS[:len(data)]])
    assert len(data) == int(len(prog.CORPUS) * 0.9)
    # the checkpoint of iteration 40 (saved before that iteration's step)
    assert h["saved"] == [20, 40]
    ckpt = clgrad.load(str(programs / "out" / "ckpt.pt"))
    assert ckpt["iter_num"] == 40 and ckpt["model_args"]["vocab_size"] == V
    assert ckpt["config"]["max_iters"] == 40
    assert float(ckpt["best_val_loss"]) == pytest.approx(h["evals"][-1][2])
    saved = ckpt["optimizer"]
    assert [g["weight_decay"] for g in saved["param_groups"]] == [0.1, 0.0]
    # resumed: the same iteration, and the optimizer state of the file on the same params
    r2 = prog.main(init_from="resume", max_iters=44, eval_interval=1000, device="cpu")
    res = r2["resumed"]
    assert res["iter_num"] == 40 and float(res["best_val_loss"]) == float(ckpt["best_val_loss"])
    assert len(res["state"]) == len(saved["state"]) == 28
    for i, st in enumerate(res["state"]):
        assert float(st["step"]) == 40.0
        for k in ("exp_avg", "exp_avg_sq"):
            np.testing.assert_array_equal(st[k].numpy(), saved["state"][i][k].numpy())
    params = [p for g in r2["optimizer"].param_groups for p in g["params"]]
    assert [tuple(p.shape) for p in params] == [tuple(s["exp_avg"].shape) for s in res["state"]]
    assert r2["history"]["iters"] == [40, 41, 42, 43, 44]
    assert max(r2["history"]["losses"]) < math.log(V) - 1.0   # it continues, not restarts
    assert float(r2["optimizer"].state[params[0]]["step"]) == 45.0


def test_nanogpt_resume_strips_the_compile_prefix(programs, capsys):
    """A checkpoint saved from a torch.compile'd model has keys '_orig_mod.<name>' (PyTorch's
    OptimizedModule); the resume loop strips them. clgrad's compile(model) returns the model
    itself, so the prefixed file is made here as PyTorch would write it."""
    prog = load_program("nanogpt_char")
    r = prog.main(max_iters=2, eval_interval=2, compile=True, **SMALL)
    assert "compiling the model" in capsys.readouterr().out
    path = str(programs / "out" / "ckpt.pt")
    ckpt = clgrad.load(path)
    ckpt["model"] = {"_orig_mod." + k: v for k, v in ckpt["model"].items()}
    clgrad.save(ckpt, path)
    r2 = prog.main(init_from="resume", max_iters=2, eval_interval=2, **SMALL)
    assert r2["resumed"]["iter_num"] == 2
    # one more step from the same state on the first batch of seed 1337: the first run's own
    # first loss differs, but the resumed model loaded every saved weight
    for k, v in r2["model"].state_dict().items():
        assert v.shape == ckpt["model"]["_orig_mod." + k].shape, k
    assert r["iter_num"] == 3 and r2["iter_num"] == 3


def test_nanogpt_parts(programs, capsys):
    prog = load_program("nanogpt_char")
    clgrad.manual_seed(0)
    cfg = prog.GPTConfig(block_size=16, vocab_size=27, n_layer=2, n_head=2, n_embd=32,
                         use_sdpa=False)
    m = prog.GPT(cfg)
    assert m.transformer.wte.weight is m.lm_head.weight
    per_block = 2 * 64 + (32 * 96 + 96) + (32 * 32 + 32) + (32 * 128 + 128) + (128 * 32 + 32)
    total = 27 * 32 + 16 * 32 + 2 * per_block + 64
    assert m.get_num_params(non_embedding=False) == total
    assert m.get_num_params() == total - 16 * 32
    assert "number of parameters: %.2fK" % ((total - 512) / 1e3) in capsys.readouterr().out
    # scaled init: c_proj weights std 0.02/sqrt(2 n_layer), others 0.02, biases 0
    cp = np.concatenate([_np(p).ravel() for n, p in m.named_parameters()
                         if n.endswith("c_proj.weight")])
    fc = np.concatenate([_np(p).ravel() for n, p in m.named_parameters()
                         if n.endswith("c_fc.weight") or n.endswith("c_attn.weight")])
    assert cp.std() == pytest.approx(0.02 / 2, rel=0.1)
    assert fc.std() == pytest.approx(0.02, rel=0.1)
    assert all(not _np(p).any() for n, p in m.named_parameters() if n.endswith(".bias"))
    np.testing.assert_array_equal(_np(m.transformer.h[0].attn.bias)[0, 0],
                                  np.tril(np.ones((16, 16))))
    # MFU by hand
    N = m.get_num_params()
    want = (6 * N + 12 * 2 * 2 * 16 * 16) * 16 * 8 / 0.25 / 312e12
    assert m.estimate_mfu(8, 0.25) == pytest.approx(want, rel=1e-12)
    # sampling-time forward: logits of the last position only; crop_block_size
    idx = clgrad.randint(27, (2, 16))
    logits, loss = m(idx)
    assert logits.shape == (2, 1, 27) and loss is None
    full, _ = m(idx, idx)
    np.testing.assert_allclose(_np(logits)[:, 0], _np(m.lm_head(m.transformer.ln_f(
        _hidden(m, idx)))[:, -1]), rtol=1e-5, atol=1e-6)
    m.crop_block_size(8)
    assert m.transformer.wpe.weight.shape == (8, 32)
    assert m.transformer.h[1].attn.bias.shape == (1, 1, 8, 8)
    cropped, _ = m(idx[:, :8])
    assert cropped.shape == (2, 1, 27)
    with pytest.raises(AssertionError):
        m(idx)
    out = m.generate(idx[:, :3], 12, top_k=3)       # longer than the block: cropped context
    assert out.shape == (2, 15) and out[:, :3].tolist() == idx[:, :3].tolist()
    assert 0 <= int(out.min()) and int(out.max()) < 27


def _hidden(m, idx):
    x = m.transformer.wte(idx) + m.transformer.wpe(clgrad.arange(idx.shape[1]))
    for block in m.transformer.h:
        x = block(x)
    return x


@pytest.mark.parametrize("use_sdpa,bias", [(True, True), (False, False)])
def test_nanogpt_matches_pytorch(programs, capsys, use_sdpa, bias):
    torch, tp, cp = _both("nanogpt_char")
    cfg = dict(block_size=16, vocab_size=27, n_layer=2, n_head=2, n_embd=32, bias=bias,
               use_sdpa=use_sdpa)
    tm, cm = tp.GPT(tp.GPTConfig(**cfg)), cp.GPT(cp.GPTConfig(**cfg))
    _copy(tm, cm)
    assert cm.transformer.wte.weight is cm.lm_head.weight
    tnames = [n for n, _ in tm.named_parameters()]
    assert tnames == [n for n, _ in cm.named_parameters()] and len(tnames) == (
        28 if bias else 15)
    dm = copy.deepcopy(tm).double()                     # the float64 oracle
    rng = np.random.default_rng(0)
    topt, copt, dopt = (m.configure_optimizers(0.1, 1e-2, (0.9, 0.99), "cpu")
                        for m in (tm, cm, dm))
    # AdamW divides each gradient by its own root mean square, so an element whose gradient
    # is near roundoff (c_attn's key rows: ~2e-9, and the key bias, whose gradient is exactly
    # zero since softmax ignores a shift common to all keys) moves by lr * g / (|g| + eps),
    # amplifying float32 roundoff to ~1e-6..1e-5 in either framework; after that the float32
    # models drift from the float64 one. Step 0 compares the copied models directly; the
    # parameters after the steps are compared with the float64 run, clgrad's error against
    # PyTorch float32's own (measured: clgrad's 1.2-5x PyTorch's, at most 1.4e-4).
    for step in range(3):
        x = rng.integers(0, 27, (4, 16))
        y = rng.integers(0, 27, (4, 16))
        y[0, :3] = -1                                   # ignore_index=-1
        tl, tloss = tm(torch.tensor(x), torch.tensor(y))
        cl, closs = cm(clgrad.tensor(x), clgrad.tensor(y))
        dl, dloss = dm(torch.tensor(x), torch.tensor(y))
        if step == 0:
            np.testing.assert_allclose(_np(cl), tl.detach().numpy(), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(_np(cl), dl.detach().numpy(), rtol=1e-4, atol=1e-5)
        assert closs.item() == pytest.approx(tloss.item(), rel=1e-5)
        assert closs.item() == pytest.approx(dloss.item(), rel=1e-5)
        for loss in (tloss, closs, dloss):
            (loss / 2).backward()                       # gradient accumulation's scaling
        for (k, a), (_, b) in zip(dm.named_parameters(), cm.named_parameters()):
            g = a.grad.numpy()
            if step == 0:
                np.testing.assert_allclose(_np(b.grad), g, rtol=1e-3, atol=2e-6, err_msg=k)
            if k.endswith("c_attn.bias"):               # d loss / d key bias = 0 exactly
                assert np.abs(_np(b.grad)[32:64]).max() < 1e-9 > np.abs(g[32:64]).max()
        norms = [lib.nn.utils.clip_grad_norm_(m.parameters(), 1.0).item()
                 for lib, m in ((torch, tm), (clgrad, cm), (torch, dm))]
        assert norms[1] == pytest.approx(norms[2], rel=1e-5 if step == 0 else 1e-3)
        for opt in (topt, copt, dopt):
            opt.step()
            opt.zero_grad(set_to_none=True)
        assert all(p.grad is None for p in cm.parameters())
    for (k, t), (_, c), (_, d) in zip(tm.named_parameters(), cm.named_parameters(),
                                      dm.named_parameters()):
        want = d.detach().numpy()
        err_torch = np.abs(t.detach().numpy() - want).max()
        err_clgrad = np.abs(_np(c) - want).max()
        assert err_clgrad <= 10 * err_torch + 1e-6, (k, err_clgrad, err_torch)
        assert err_clgrad < 5e-4, k                     # weights ~0.02; lr 1e-2, 3 steps
    # greedy sampling (top_k=1): the same tokens, past block_size (the context cropped)
    start = rng.integers(0, 27, (2, 4))
    with torch.no_grad():
        tt = dm.generate(torch.tensor(start), 16, top_k=1).tolist()
    ct = cm.generate(clgrad.tensor(start), 16, top_k=1).tolist()
    assert ct == tt


def test_nanogpt_on_a_posed_gpu(programs):
    """On 'cuda' (PoCL posing as a GPU): bfloat16 autocast (is_bf16_supported), batches
    pinned and moved non_blocking, fused AdamW, cuda.synchronize; it learns, and a resume
    loads the checkpoint with map_location='cuda'."""
    code = (
        "import json, os\n"
        "import clgrad as torch\n"
        "from test_programs import load_program\n"
        f"os.chdir({str(programs)!r})\n"
        "prog = load_program('nanogpt_char')\n"
        "kw = dict(batch_size=4, block_size=16, eval_iters=1, gradient_accumulation_steps=2,\n"
        "          learning_rate=2e-2, warmup_iters=1, lr_decay_iters=12, sample_tokens=4)\n"
        "r = prog.main(max_iters=12, eval_interval=12, **kw)\n"
        "m = r['model']\n"
        "x = torch.randint(r['vocab_size'], (2, 8)).pin_memory().to('cuda', non_blocking=True)\n"
        "with torch.amp.autocast(device_type='cuda', dtype=r['ptdtype']):\n"
        "    logits, _ = m(x)\n"
        "r2 = prog.main(init_from='resume', max_iters=13, eval_interval=100, **kw)\n"
        "print('RESULT', json.dumps(dict(device=r['device'], dtype=r['dtype'],\n"
        "    fused=r['used_fused'], fused2=r2['optimizer'].defaults['fused'],\n"
        "    losses=r['history']['losses'], evals=r['history']['evals'],\n"
        "    param=str(m.lm_head.weight.device), pdtype=str(m.lm_head.weight.dtype),\n"
        "    logits=str(logits.dtype), tokens=r['tokens'],\n"
        "    resumed=r2['resumed']['iter_num'], iters2=r2['history']['iters'],\n"
        "    losses2=r2['history']['losses'], param2=str(r2['model'].lm_head.weight.device))))\n")
    out = run_as_gpu(code).stdout
    r = json.loads(out.split("RESULT ", 1)[1])
    assert r["device"] == "cuda" and r["dtype"] == "bfloat16" and r["fused"] is True
    assert r["fused2"] is True and "using fused AdamW: True" in out
    assert r["param"] == r["param2"] == "cuda:0" and r["pdtype"] == "clgrad.float32"
    assert r["logits"] == "clgrad.bfloat16"
    losses = r["losses"]
    assert len(losses) == 13 and abs(losses[0] - math.log(28)) < 0.15
    assert np.mean(losses[-4:]) < losses[0] - 0.2        # clgrad 2.94 from 3.33
    assert r["evals"][-1][2] < r["evals"][0][2] - 0.3     # val loss: 2.66 from 3.34
    assert len(r["tokens"]) == 8 and all(0 <= t < 28 for t in r["tokens"])
    assert r["resumed"] == 12 and r["iters2"] == [12, 13]
    assert max(r["losses2"]) < losses[0] - 0.2
