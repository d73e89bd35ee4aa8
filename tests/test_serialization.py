"""clgrad.save / clgrad.load (issues 20 and 22): tensor layouts read by real torch.load and back,
requires_grad, permissions, shared and deep objects, stride-0 storages, record sizes, every
malformed file a ValueError (fuzzed), whole modules / optimizers and the safe-globals list."""
import io
import os
import pickle
import stat
import zipfile

import numpy as np
import pytest

import clgrad
from clgrad import nn

torch = pytest.importorskip("torch")


def _layouts(lib, base):
    """Views of ``base`` (a 4x6 float64 tensor of lib): name -> tensor."""
    x = base
    out = {"x": x, "t": x.t(), "slice": x[1:3, ::2], "row": x[2], "tail": x.reshape(-1)[5:],
           "expand": x[0:1, 0:1].expand(3, 5), "col_expand": x[:, :1].expand(4, 3),
           "over": x.reshape(-1).as_strided((3, 4), (2, 1), 1), "scalar": x[1, 2],
           "empty": x[:0], "step": x[::2, 1::3]}
    if lib is clgrad:
        out["neg"] = x[::-1]
        out["neg2"] = x[:, ::-2]
    return out


def _flip(a, name):
    return {"neg": lambda v: v[::-1], "neg2": lambda v: v[:, ::-2]}[name](a)


def test_every_layout_is_read_by_torch_with_storage_sharing(tmp_path):
    base = clgrad.arange(24.0, dtype=clgrad.float64).reshape(4, 6)
    views = _layouts(clgrad, base)
    views["alone_expand"] = clgrad.ones(1).expand(2048, 2048)
    clgrad.save(views, tmp_path / "v.pt")
    got = torch.load(tmp_path / "v.pt", weights_only=True)
    ref = base.numpy()
    expect = {k: v.numpy() for k, v in views.items()}
    expect["neg"], expect["neg2"] = ref[::-1], ref[:, ::-2]
    for k, v in expect.items():
        np.testing.assert_array_equal(got[k].numpy(), v, err_msg=k)
    ptr = got["x"].untyped_storage().data_ptr()
    for k in ("t", "slice", "row", "tail", "expand", "col_expand", "over", "scalar", "step"):
        assert got[k].untyped_storage().data_ptr() == ptr, k  # one storage, as torch.save
        assert got[k].stride() == views[k].stride(), k
    for k in ("neg", "neg2"):  # torch has no negative strides: a compact copy
        assert got[k].is_contiguous() and got[k].untyped_storage().data_ptr() != ptr
    assert got["alone_expand"].stride() == (0, 0)
    assert got["alone_expand"].untyped_storage().nbytes() == 4  # not 16 MiB
    assert os.path.getsize(tmp_path / "v.pt") < 8192
    back = clgrad.load(tmp_path / "v.pt")
    for k, v in expect.items():
        np.testing.assert_array_equal(back[k].numpy(), v, err_msg=k)


def test_clgrad_reads_torch_files_of_every_layout(tmp_path):
    base = torch.arange(24.0, dtype=torch.float64).reshape(4, 6)
    views = _layouts(torch, base)
    views["alone_expand"] = torch.ones(1).expand(2048, 2048)
    torch.save(views, tmp_path / "t.pt")
    got = clgrad.load(tmp_path / "t.pt")
    for k, v in views.items():
        assert got[k].shape == tuple(v.shape), k
        np.testing.assert_array_equal(got[k].numpy(), v.numpy(), err_msg=k)
    assert got["alone_expand"].stride() == (0, 0)  # the 1-element storage, not 16 MiB
    assert got["alone_expand"]._storage.size == 1
    big = {"e": torch.ones(1).expand(16384, 16384)}
    torch.save(big, tmp_path / "big.pt")
    assert os.path.getsize(tmp_path / "big.pt") < 4096
    e = clgrad.load(tmp_path / "big.pt")["e"]
    assert e.shape == (16384, 16384) and e._storage.size == 1
    assert float(e[16383, 16383].item()) == 1.0


@pytest.mark.parametrize("name", ["g.pt", "g.safetensors"])
def test_requires_grad_is_kept(tmp_path, name):
    w = clgrad.ones(3).requires_grad_(True)
    plain = clgrad.zeros(2)
    clgrad.save({"w": w, "p": plain, "param": nn.Parameter(clgrad.ones(2), requires_grad=False)}
                if name.endswith(".pt") else {"w": w, "p": plain}, tmp_path / name)
    got = clgrad.load(tmp_path / name)
    assert got["w"].requires_grad and not got["p"].requires_grad
    assert got["w"].is_leaf
    np.testing.assert_array_equal(got["w"].detach().numpy(), np.ones(3, np.float32))
    if name.endswith(".pt"):
        assert not got["param"].requires_grad and isinstance(got["param"], nn.Parameter)
        t = torch.load(tmp_path / name, weights_only=True)
        assert t["w"].requires_grad and not t["p"].requires_grad  # what torch.load says


@pytest.mark.parametrize("name", ["c.pt", "c.safetensors"])
def test_overwrite_keeps_the_targets_permissions(tmp_path, name):
    path = tmp_path / name
    clgrad.save({"a": clgrad.ones(2)}, path)
    os.chmod(path, 0o600)
    clgrad.save({"a": clgrad.zeros(2)}, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    np.testing.assert_array_equal(clgrad.load(path)["a"].numpy(), np.zeros(2, np.float32))
    os.chmod(path, 0o640)
    clgrad.save({"a": clgrad.ones(1)}, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(os.listdir(tmp_path)) == [name]


def test_pt_writes_are_atomic_fsynced_and_keep_the_mode(tmp_path, monkeypatch):
    from clgrad.io import checkpoint
    path = tmp_path / "a.pt"
    clgrad.save({"v": clgrad.ones(2)}, path)
    os.chmod(path, 0o600)
    synced, replaced = [], []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        synced.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return real_fsync(fd)

    def replace(src, dst):
        replaced.append((os.path.basename(src), len(synced)))
        return real_replace(src, dst)

    monkeypatch.setattr(checkpoint.os, "fsync", fsync)
    monkeypatch.setattr(checkpoint.os, "replace", replace)
    clgrad.save({"v": clgrad.zeros(2)}, path)
    # the data was fsynced (with the old mode already set) before the rename of a temp file
    assert synced[0] == 0o600 and replaced[0][1] >= 1
    assert replaced[0][0].startswith(".a.pt.") and replaced[0][0].endswith(".tmp")

    def failing_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(checkpoint.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="Input/output"):
        clgrad.save({"v": clgrad.full((2,), 7.0)}, path)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["a.pt"]  # the old file is kept, no temp file left
    np.testing.assert_array_equal(clgrad.load(path)["v"].numpy(), np.zeros(2, np.float32))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _nested_pickle(levels):
    a = []
    for _ in range(levels):
        a = [a, a]
    return a


def test_shared_references_are_memoised_not_walked_as_a_tree(tmp_path):
    path = tmp_path / "shared.pt"
    a = _nested_pickle(40)  # a tree walk would visit 2**40 nodes
    clgrad.save(a, path)
    assert os.path.getsize(path) < 2048
    got = clgrad.load(path)
    node = got
    for _ in range(40):
        assert node[0] is node[1]  # shared refs come back shared, as pickle
        node = node[0]
    assert node == []
    t = clgrad.ones(2)
    got = clgrad.load(_roundtrip(tmp_path, {"a": t, "b": t, "l": [t]}))
    assert got["a"] is got["b"] is got["l"][0]


def _roundtrip(tmp_path, obj):
    clgrad.save(obj, tmp_path / "r.pt")
    return tmp_path / "r.pt"


def test_deep_and_self_containing_lists_load(tmp_path):
    a = []
    a.append(a)
    got = clgrad.load(_roundtrip(tmp_path, {"self": a}))
    assert got["self"][0] is got["self"]
    # 5000 nested lists (too deep for a recursive pickler, so written by hand: EMPTY_LIST
    # 5000 times, APPEND 4999 times); torch.load reads it, and so does clgrad.load
    _storage_zip(tmp_path / "deep.pt", b"\x80\x02" + b"]" * 5000 + b"a" * 4999 + b".", {})
    for got in (torch.load(tmp_path / "deep.pt", weights_only=True),
                clgrad.load(tmp_path / "deep.pt")):
        for _ in range(4999):
            assert len(got) == 1
            got = got[0]
        assert got == []


def _storage_zip(path, pickled, records, compress=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compress) as zf:
        zf.writestr("a/data.pkl", pickled)
        zf.writestr("a/byteorder", b"little")
        zf.writestr("a/version", b"3\n")
        for k, v in records.items():
            zf.writestr(f"a/data/{k}", v)


def test_record_that_inflates_beyond_its_declared_storage_is_refused(tmp_path):
    buf = io.BytesIO()
    torch.save({"w": torch.ones(4)}, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        pkl = next(zf.read(n) for n in zf.namelist() if n.endswith("data.pkl"))
    _storage_zip(tmp_path / "ok.pt", pkl, {"0": np.ones(4, np.float32).tobytes()},
                 zipfile.ZIP_DEFLATED)
    np.testing.assert_array_equal(clgrad.load(tmp_path / "ok.pt")["w"].numpy(), np.ones(4))
    _storage_zip(tmp_path / "bomb.pt", pkl, {"0": bytes(64 << 20)}, zipfile.ZIP_DEFLATED)
    assert os.path.getsize(tmp_path / "bomb.pt") < 1 << 20
    with pytest.raises(ValueError, match=r"bomb\.pt.*storage 0 holds .*expected 4"):
        clgrad.load(tmp_path / "bomb.pt")


def _fuzz(path, data, positions, tmp_path):
    """Flip one byte at each position: loading must succeed or raise ValueError naming path."""
    bad = path.with_name("bad" + path.suffix)
    outcomes = {"ok": 0, "ValueError": 0}
    for i in positions:
        b = bytearray(data)
        b[i] ^= 0xFF if i % 2 else 0x01
        bad.write_bytes(bytes(b))
        try:
            clgrad.load(bad, weights_only=True)
            outcomes["ok"] += 1
        except ValueError as e:
            assert str(bad) in str(e), (i, e)
            outcomes["ValueError"] += 1
        except Exception as e:  # anything else is the bug under test
            raise AssertionError(f"byte {i}: {type(e).__name__}: {e}") from e
    return outcomes


def test_fuzz_pt_every_byte(tmp_path):
    path = tmp_path / "f.pt"
    clgrad.save({"w": clgrad.arange(3.0), "n": [1, "s"], "p": nn.Parameter(clgrad.ones(2))},
                path)
    data = path.read_bytes()
    got = _fuzz(path, data, range(len(data)), tmp_path)
    assert got["ValueError"] > len(data) // 4  # most flips are caught


def test_fuzz_torch_written_pt_sample(tmp_path):
    path = tmp_path / "t.pt"
    torch.save({"w": torch.arange(5.0).reshape(5, 1).expand(5, 3), "m": {"k": (1, 2.5)}},
               path)
    data = path.read_bytes()
    rng = np.random.default_rng(0)
    _fuzz(path, data, rng.choice(len(data), 300, replace=False), tmp_path)


def test_fuzz_safetensors_every_byte(tmp_path):
    path = tmp_path / "f.safetensors"
    clgrad.save({"w": clgrad.arange(3.0), "n": [1, "s"]}, path)
    data = path.read_bytes()
    got = _fuzz(path, data, range(len(data)), tmp_path)
    assert got["ValueError"] > len(data) // 2


class UserNet(nn.Module):
    """A user's model class (module-level, so pickle can name it)."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.BatchNorm1d(4))
        self.head = nn.Linear(4, 2)
        self.note = {"epochs": 3}

    def forward(self, x):
        return self.head(self.body(x))


def test_whole_module_and_optimizer_save_and_load(tmp_path):
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(),
                      nn.Linear(8, 3))
    opt = clgrad.optim.Adam(m.parameters(), lr=1e-3)
    sched = clgrad.optim.lr_scheduler.StepLR(opt, 2)
    x = clgrad.randn(2, 1, 4, 4)
    m(x).sum().backward()
    opt.step()
    sched.step()
    clgrad.save({"model": m, "opt": opt, "sched": sched}, tmp_path / "all.pt")
    with pytest.raises(pickle.UnpicklingError, match="Sequential.*weights_only=False"):
        clgrad.load(tmp_path / "all.pt")  # weights_only defaults to True, as PyTorch >= 2.6
    got = clgrad.load(tmp_path / "all.pt", weights_only=False)
    m2, opt2 = got["model"], got["opt"]
    assert type(m2) is nn.Sequential and type(opt2) is clgrad.optim.Adam
    assert opt2.param_groups[0]["params"][0] is m2[0].weight  # shared as pickled
    assert got["sched"].optimizer is opt2
    assert isinstance(m2[0].weight, nn.Parameter) and m2[0].weight.requires_grad
    m.eval(), m2.eval()
    np.testing.assert_array_equal(m2(x).detach().numpy(), m(x).detach().numpy())
    for p, p2 in zip(m.parameters(), m2.parameters()):
        st, st2 = opt.state[p], opt2.state[p2]
        assert sorted(st) == sorted(st2) == ["exp_avg", "exp_avg_sq", "step"]
        for k in st:
            np.testing.assert_array_equal(np.asarray(st2[k].numpy() if k != "step" else st2[k]),
                                          np.asarray(st[k].numpy() if k != "step" else st[k]))
    # a further step matches on both
    for model, o in ((m, opt), (m2, opt2)):
        model.train()
        o.zero_grad()
        model(x).sum().backward()
        o.step()
    np.testing.assert_array_equal(m2[4].weight.detach().numpy(), m[4].weight.detach().numpy())


def test_users_classes_need_to_be_allowed(tmp_path):
    net = UserNet()
    clgrad.save(net, tmp_path / "u.pt")
    with pytest.raises(pickle.UnpicklingError, match=r"test_serialization.UserNet.*"
                                                     r"add_safe_globals\(\[UserNet\]\)"):
        clgrad.load(tmp_path / "u.pt", weights_only=False)
    with pytest.raises(ValueError, match="UserNet"):  # also a ValueError
        clgrad.load(tmp_path / "u.pt", weights_only=False)
    with clgrad.serialization.safe_globals([UserNet]):
        got = clgrad.load(tmp_path / "u.pt", weights_only=False)
    assert UserNet not in clgrad.serialization.get_safe_globals()
    assert type(got) is UserNet and got.note == {"epochs": 3}
    x = clgrad.randn(5, 3)
    net.eval(), got.eval()
    np.testing.assert_array_equal(got(x).detach().numpy(), net(x).detach().numpy())
    assert [n for n, _ in got.named_parameters()] == [n for n, _ in net.named_parameters()]
    try:
        clgrad.serialization.add_safe_globals([UserNet])
        # an allowed class loads with weights_only=True too (as PyTorch), but clgrad's
        # own nn classes inside it still need weights_only=False
        with pytest.raises(pickle.UnpicklingError, match="Sequential"):
            clgrad.load(tmp_path / "u.pt")
        assert type(clgrad.load(tmp_path / "u.pt", weights_only=False)) is UserNet
    finally:
        clgrad.serialization.clear_safe_globals()


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo PWNED > /dev/null",))


def test_arbitrary_code_is_never_run(tmp_path, capsys, monkeypatch):
    clgrad.save({"x": _Evil()}, tmp_path / "evil.pt")  # pickles by name, as torch.save
    calls = []
    monkeypatch.setattr(os, "system", lambda cmd: calls.append(cmd))
    for weights_only in (True, False):
        with pytest.raises(pickle.UnpicklingError, match="refusing to load the global "
                                                         "(posix|os).system"):
            clgrad.load(tmp_path / "evil.pt", weights_only=weights_only)
    assert calls == []


def test_torch_reads_a_clgrad_state_dict_and_optimizer_state(tmp_path):
    m = nn.Linear(3, 2)
    opt = clgrad.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    m(clgrad.randn(4, 3)).sum().backward()
    opt.step()
    clgrad.save({"model": m.state_dict(), "opt": opt.state_dict()}, tmp_path / "s.pt")
    got = torch.load(tmp_path / "s.pt", weights_only=True)
    tm = torch.nn.Linear(3, 2)
    tm.load_state_dict(got["model"])
    np.testing.assert_array_equal(tm.weight.detach().numpy(), m.weight.detach().numpy())
    assert got["opt"]["param_groups"][0]["params"] == [0, 1]
    assert got["opt"]["param_groups"][0]["momentum"] == 0.9
    assert list(got["opt"]["state"]) == [0, 1]  # int keys, as PyTorch's
    np.testing.assert_array_equal(got["opt"]["state"][0]["momentum_buffer"].numpy(),
                                  opt.state[m.weight]["momentum_buffer"].numpy())


def test_a_whole_torch_module_is_refused_with_a_hint(tmp_path):
    torch.save(torch.nn.Linear(2, 2), tmp_path / "tm.pt")
    for weights_only in (True, False):
        with pytest.raises(pickle.UnpicklingError, match=r"torch.nn.modules.linear.Linear.*"
                                                         r"model.state_dict\(\)"):
            clgrad.load(tmp_path / "tm.pt", weights_only=weights_only)


def test_whole_schedulers_and_layers_round_trip():
    lin = nn.Linear(2, 2)
    opt = clgrad.optim.SGD(lin.parameters(), lr=0.1)
    ls = clgrad.optim.lr_scheduler
    objs = [ls.MultiStepLR(opt, [1, 2]), ls.OneCycleLR(opt, 1.0, total_steps=10),
            ls.ReduceLROnPlateau(opt), nn.Embedding(4, 2), nn.ModuleDict({"a": nn.ReLU()}),
            nn.GroupNorm(1, 2), nn.MaxPool2d(2), nn.CrossEntropyLoss()]
    for obj in objs:
        buf = io.BytesIO()
        clgrad.save(obj, buf)
        buf.seek(0)
        got = clgrad.load(buf, weights_only=False)
        assert type(got) is type(obj)
        if isinstance(obj, nn.Module):
            assert list(got.state_dict()) == list(obj.state_dict())
        else:
            assert got.state_dict().keys() == obj.state_dict().keys()
            assert got.optimizer.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
