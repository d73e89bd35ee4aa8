"""Module state semantics against PyTorch (issue 22): a re-assigned submodule / Parameter /
buffer keeps its place, and load_state_dict / state_dict follow PyTorch's structure
(_load_from_state_dict per module, _metadata versions, hooks, strict, assign)."""
from collections import OrderedDict

import numpy as np
import pytest

import clgrad
from clgrad import nn

torch = pytest.importorskip("torch")


def _net(lib):
    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = lib.nn.Conv2d(3, 4, 3)
            self.bn = lib.nn.BatchNorm2d(4)
            self.fc = lib.nn.Linear(4, 2)
    return Net()


def test_reassigned_submodule_keeps_its_place_as_in_torch():
    ours, theirs = _net(clgrad), _net(torch)
    ours.conv1 = nn.Conv2d(1, 4, 3)
    theirs.conv1 = torch.nn.Conv2d(1, 4, 3)
    names = [n for n, _ in ours.named_children()]
    assert names == [n for n, _ in theirs.named_children()] == ["conv1", "bn", "fc"]
    # the siamese idiom: replace conv1, drop the classifier
    trunk = nn.Sequential(*list(ours.children())[:-1])
    assert trunk[0] is ours.conv1 and trunk[1] is ours.bn and len(trunk) == 2
    assert [k for k in ours.state_dict()] == [k for k in theirs.state_dict()]


def test_reassigned_parameter_and_buffer_keep_their_place_as_in_torch():
    for lib in (clgrad, torch):
        lin = lib.nn.Linear(3, 2)
        lin.weight = lib.nn.Parameter(lib.zeros(2, 3))
        lin.register_buffer("a", lib.zeros(1))
        lin.register_buffer("b", lib.zeros(1))
        lin.register_buffer("a", lib.ones(1), persistent=False)
        lin.b = lib.ones(2)
        lin.register_parameter("bias", lib.nn.Parameter(lib.ones(2)))
        assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"], lib
        assert [n for n, _ in lin.named_buffers()] == ["a", "b"], lib
        assert list(lin.state_dict()) == ["weight", "bias", "b"], lib  # a: non-persistent


def test_state_dict_metadata_versions_match_torch():
    ours, theirs = _net(clgrad), _net(torch)
    assert dict(ours.state_dict()._metadata) == dict(theirs.state_dict()._metadata) == {
        "": {"version": 1}, "conv1": {"version": 1}, "bn": {"version": 2},
        "fc": {"version": 1}}


class _Versioned(nn.Module):
    """A module whose version 1 called its weight "w" (as MNASNet converts old checkpoints)."""

    _version = 2

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(clgrad.zeros(3))
        self.seen = []

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        self.seen.append((prefix, dict(local_metadata)))
        if local_metadata.get("version", 1) < 2 and prefix + "w" in state_dict:
            state_dict[prefix + "weight"] = state_dict.pop(prefix + "w")
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)


def test_load_state_dict_calls_each_modules_load_from_state_dict():
    outer = nn.Sequential(nn.Linear(2, 2), _Versioned())
    old = OrderedDict([("0.weight", clgrad.ones(2, 2)), ("0.bias", clgrad.zeros(2)),
                       ("1.w", clgrad.tensor([1.0, 2.0, 3.0]))])
    old._metadata = {"1": {"version": 1}}
    result = outer.load_state_dict(old)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert outer[1].weight.detach().numpy().tolist() == [1.0, 2.0, 3.0]
    assert outer[1].seen == [("1.", {"version": 1})]
    assert "1.w" in old  # the caller's dict is not edited
    new = outer.state_dict()
    assert new._metadata["1"] == {"version": 2} and list(new) == ["0.weight", "0.bias",
                                                                  "1.weight"]
    outer[1].seen.clear()
    outer.load_state_dict(new)
    assert outer[1].seen == [("1.", {"version": 2})]


def test_batchnorm_checkpoint_of_version_1_without_num_batches_tracked_loads_as_torch():
    for lib in (clgrad, torch):
        bn = lib.nn.BatchNorm2d(2)
        sd = OrderedDict((k, v) for k, v in bn.state_dict().items()
                         if k != "num_batches_tracked")
        sd._metadata = {"": {"version": 1}}
        assert bn.load_state_dict(sd).missing_keys == [], lib
        sd._metadata = {"": {"version": 2}}
        with pytest.raises(RuntimeError, match="(?i)missing key.*num_batches_tracked"):
            bn.load_state_dict(sd)


def test_load_state_dict_hooks_in_torchs_order():
    calls = []
    for lib in (clgrad, torch):
        m = lib.nn.Sequential(lib.nn.Linear(2, 2))
        log = []

        def pre(module, sd, prefix, meta, strict, missing, unexpected, errors, log=log):
            log.append(("pre", type(module).__name__, prefix))
            if prefix + "W" in sd:
                sd[prefix + "weight"] = sd.pop(prefix + "W")

        def post(module, keys, log=log):
            log.append(("post", type(module).__name__, list(keys.missing_keys)))
            if "0.bias" in keys.missing_keys:
                keys.missing_keys.remove("0.bias")

        h1 = m[0].register_load_state_dict_pre_hook(pre)
        m.register_load_state_dict_post_hook(post)
        m[0]._register_load_state_dict_pre_hook(
            lambda sd, prefix, *rest, log=log: log.append(("old-pre", prefix)))
        res = m.load_state_dict({"0.W": lib.full((2, 2), 3.0)})
        assert res.missing_keys == [] and m[0].weight.detach().numpy().tolist() == [[3.0] * 2] * 2
        h1.remove()
        with pytest.raises(RuntimeError, match="(?i)unexpected key.*0.W"):
            m.load_state_dict({"0.W": lib.full((2, 2), 3.0), "0.bias": lib.zeros(2)})
        calls.append(log)
    assert calls[0] == calls[1] == [("pre", "Linear", "0."), ("old-pre", "0."),
                                    ("post", "Sequential", ["0.bias"]), ("old-pre", "0."),
                                    ("post", "Sequential", ["0.weight"])]


def test_state_dict_hooks():
    for lib in (clgrad, torch):
        m = lib.nn.Linear(2, 1)
        seen = []
        m.register_state_dict_pre_hook(lambda mod, prefix, keep, seen=seen: seen.append(prefix))
        h = m._register_state_dict_hook(
            lambda mod, sd, prefix, meta, lib=lib: sd.__setitem__(prefix + "extra", lib.ones(1)))
        sd = m.state_dict(prefix="p.")
        assert list(sd) == ["p.weight", "p.bias", "p.extra"] and seen == ["p."], lib
        h.remove()
        assert list(m.state_dict()) == ["weight", "bias"]


def test_strict_false_and_assign():
    lin = nn.Linear(3, 2)
    res = lin.load_state_dict({"weight": clgrad.ones(2, 3), "extra.x": clgrad.ones(1)},
                              strict=False)
    assert res.missing_keys == ["bias"] and res.unexpected_keys == ["extra.x"]
    w = clgrad.full((2, 3), 5.0)
    lin.bias.requires_grad_(False)
    b = nn.Parameter(clgrad.ones(2))
    lin.load_state_dict({"weight": w, "bias": b}, assign=True)
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad
    assert lin.weight._storage is w._storage  # assigned, not copied (as torch)
    assert lin.bias is b and not b.requires_grad  # keeps the module's requires_grad
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    bn = nn.BatchNorm2d(2)
    rm = clgrad.full((2,), 4.0)
    bn.load_state_dict({**bn.state_dict(), "running_mean": rm}, assign=True)
    assert bn.running_mean is rm


def test_torch_state_dict_with_metadata_round_trips(tmp_path):
    theirs = _net(torch)
    torch.save(theirs.state_dict(), tmp_path / "t.pt")
    sd = clgrad.load(tmp_path / "t.pt")
    assert sd._metadata["bn"] == {"version": 2}
    ours = _net(clgrad)
    assert ours.load_state_dict(sd).missing_keys == []
    np.testing.assert_array_equal(ours.fc.weight.detach().numpy(),
                                  theirs.fc.weight.detach().numpy())
    clgrad.save(ours.state_dict(), tmp_path / "c.pt")
    back = torch.load(tmp_path / "c.pt", weights_only=True)
    assert dict(back._metadata) == dict(theirs.state_dict()._metadata)
    assert _net(torch).load_state_dict(back).missing_keys == []


def test_instance_norm_version_handling_as_torch():
    for lib in (clgrad, torch):
        m = lib.nn.InstanceNorm2d(2)
        assert m.state_dict()._metadata[""] == {"version": 2}
        old = OrderedDict([("running_mean", lib.zeros(2)), ("running_var", lib.ones(2))])
        old._metadata = {"": {}}  # no version: a pre-0.4 checkpoint
        with pytest.raises(RuntimeError, match="running stats buffer"):
            m.load_state_dict(old)
        tracked = lib.nn.InstanceNorm2d(2, track_running_stats=True)
        sd = OrderedDict([("running_mean", lib.full((2,), 3.0)),
                          ("running_var", lib.ones(2))])
        sd._metadata = {"": {"version": 1}}
        assert tracked.load_state_dict(sd).missing_keys == []
        assert tracked.running_mean.numpy().tolist() == [3.0, 3.0]
