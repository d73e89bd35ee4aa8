"""clgrad.profiler (PyTorch's torch.profiler): op events counted against hand counts, the
nesting's self/total times, the schedule's actions against PyTorch's documented sequence
(written out by hand), the table's columns and order, the Chrome trace JSON, the faces
restored after a profile, and (where PyTorch 2.14 is importable) the same programs' op names
and counts against PyTorch's profiler. The recipe program (tests/programs/profiler_recipe.py)
runs under clgrad and, where torch is importable, under PyTorch for the same top-level ops."""
import contextlib
import functools
import gzip
import json
import time
import warnings
from collections import Counter

import numpy as np
import pytest
from test_programs import load_program

import clgrad
import clgrad.nn as nn
import clgrad.nn.functional as F
from clgrad.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                             schedule, tensorboard_trace_handler)


def _top_counts(events):
    return Counter(e.name for e in events if e.cpu_parent is None)


def _program(torch, x, w):
    """The hand-counted program: under a profile, 3 x (mm, relu, add, sum), then one each
    of mul, sub_ (x -= 1: the in-place operator), rsub (2 - x), and clamp's alias clip."""
    for _ in range(3):
        y = torch.mm(x, w)
        z = y.relu()
        (z + 1).sum()
    q = x * 2
    q -= 1
    r = 2 - x
    torch.clip(r, 0, 1)


HAND_COUNTS = {"aten::mm": 3, "aten::relu": 3, "aten::add": 3, "aten::sum": 3, "aten::mul": 1,
               "aten::sub_": 1, "aten::rsub": 1, "aten::clip": 1}


def _data(torch):
    x = torch.tensor(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    w = torch.tensor(np.ones((3, 2), np.float32))
    return x, w


def test_op_counts_equal_hand_counts():
    x, w = _data(clgrad)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _program(clgrad, x, w)
    assert dict(_top_counts(prof.events())) == HAND_COUNTS
    avg = {a.key: a for a in prof.key_averages()}
    for name, n in HAND_COUNTS.items():  # key_averages counts nested calls too: at least
        assert avg[name].count >= n
        assert avg[name].self_cpu_time_total <= avg[name].cpu_time_total + 1e-6


def test_counts_match_pytorch():
    torch = pytest.importorskip("torch")
    from torch.profiler import profile as tprofile
    x, w = _data(torch)
    with tprofile(activities=[torch.profiler.ProfilerActivity.CPU]) as tp:
        _program(torch, x, w)
    assert dict(_top_counts(tp.events())) == HAND_COUNTS


def _backward_program(torch):
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = torch.tensor([4.0, 5.0, 6.0])
    return a, b


def test_backward_events_named_as_pytorch():
    a, b = _backward_program(clgrad)
    with profile() as prof:
        (a * b).sum().backward()
    names = Counter(e.name for e in prof.events())
    assert names["autograd::engine::evaluate_function: SumBackward0"] == 1
    assert names["autograd::engine::evaluate_function: MulBackward0"] == 1
    np.testing.assert_allclose(a.grad.numpy(), [4, 5, 6])


def test_backward_events_match_pytorch():
    torch = pytest.importorskip("torch")
    a, b = _backward_program(clgrad)
    with profile() as prof:
        (a * b).sum().backward()
    names = Counter(e.name for e in prof.events())
    ta, tb = _backward_program(torch)
    with torch.profiler.profile() as tp:
        (ta * tb).sum().backward()
    tnames = Counter(e.name for e in tp.events())
    for n in ("autograd::engine::evaluate_function: SumBackward0",
              "autograd::engine::evaluate_function: MulBackward0", "aten::mul", "aten::sum"):
        assert tnames[n] >= 1 and names[n] >= 1, n
    assert _top_counts(prof.events())["aten::mul"] == _top_counts(tp.events())["aten::mul"] == 1


def test_nested_record_function_times():
    x, w = _data(clgrad)
    with profile() as prof:
        with record_function("outer"):
            clgrad.mm(x, w)
            with record_function("inner"):
                time.sleep(0.02)
                clgrad.relu(x)
            time.sleep(0.01)
    ev = {e.name: e for e in prof.events()}
    outer, inner = ev["outer"], ev["inner"]
    assert outer.time_range.start <= inner.time_range.start <= inner.time_range.end \
        <= outer.time_range.end
    assert inner.time_range.elapsed_us() == pytest.approx(inner.cpu_time_total)
    assert inner.cpu_parent is outer and ev["aten::relu"].cpu_parent is inner
    assert ev["aten::mm"].cpu_parent is outer
    assert inner.cpu_time_total >= 20000 and outer.cpu_time_total >= 30000  # us, the sleeps
    assert outer.self_cpu_time_total >= 10000 and inner.self_cpu_time_total >= 20000
    for e in prof.events():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        children = sum(c.cpu_time_total for c in e.cpu_children)
        assert e.cpu_time_total == pytest.approx(e.self_cpu_time_total + children, abs=1e-3)
    # the self times of all events add up to the top-level events' totals
    tops = sum(e.cpu_time_total for e in prof.events() if e.cpu_parent is None)
    assert sum(e.self_cpu_time_total for e in prof.events()) == pytest.approx(tops, abs=1e-2)
    assert prof.key_averages().self_cpu_time_total == pytest.approx(tops, abs=1e-2)


def test_record_function_decorator_and_outside_a_profile():
    @record_function("decorated")
    def f(t):
        return t * 3

    x = clgrad.ones(2)
    np.testing.assert_allclose(f(x).numpy(), [3, 3])  # no profile: records nothing
    with profile() as prof:
        f(x)
        f(x)
    counts = _top_counts(prof.events())
    assert counts["decorated"] == 2
    assert [c.name for e in prof.events() if e.name == "decorated" for c in e.cpu_children] \
        == ["aten::mul", "aten::mul"]


# PyTorch's documented schedule (torch.profiler.schedule's docstring): skip_first steps, then
# cycles of wait NONE, warmup WARMUP, active recorded steps (the last RECORD_AND_SAVE)
N, W, R, S = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
              ProfilerAction.RECORD_AND_SAVE)
SCHEDULES = [
    (dict(wait=1, warmup=1, active=3, repeat=1), [N, W, R, R, S, N, N, N, N, N]),
    (dict(wait=1, warmup=1, active=2), [N, W, R, S, N, W, R, S, N, W]),
    (dict(wait=1, warmup=1, active=2, repeat=2, skip_first=2), [N, N, N, W, R, S, N, W, R, S,
                                                                 N, N]),
    (dict(wait=2, warmup=1, active=1, skip_first=1, skip_first_wait=1), [N, W, S, N, N, W, S]),
    (dict(wait=0, warmup=2, active=1), [W, W, S, W, W, S]),
]


@pytest.mark.parametrize("kwargs,expected", SCHEDULES)
def test_schedule_actions(kwargs, expected):
    fn = schedule(**kwargs)
    assert [fn(i) for i in range(len(expected))] == expected


@pytest.mark.parametrize("kwargs,expected", SCHEDULES)
def test_schedule_matches_pytorch(kwargs, expected):
    torch = pytest.importorskip("torch")
    fn = torch.profiler.schedule(**kwargs)
    assert [fn(i).name for i in range(len(expected))] == [a.name for a in expected]


def test_schedule_rejects_bad_arguments():
    with pytest.raises(AssertionError, match="active=0"):
        schedule(wait=1, warmup=1, active=0)
    with pytest.raises(AssertionError, match="Step must be non-negative"):
        schedule(wait=1, warmup=1, active=1)(-1)
    with pytest.warns(UserWarning, match="warmup"):
        schedule(wait=1, warmup=0, active=1)


def _torch_cpu_profile(torch):
    """PyTorch's profiler of host ops only: on a machine with CUDA its default also records
    CUDA runtime events (cudaDeviceSynchronize, CUPTI's buffer requests) at the top level."""
    return functools.partial(torch.profiler.profile,
                             activities=[torch.profiler.ProfilerActivity.CPU])


def _step_loop(torch, prof_cls, sched, steps=8):
    x = torch.ones(2, 2)
    seen = []

    def handler(p):
        seen.append((p.step_num, sorted(Counter(  # the steps and the ops directly in them
            e.name for e in p.events() if e.cpu_parent is None or
            e.cpu_parent.name == "ProfilerStep*").items())))

    with prof_cls(schedule=sched, on_trace_ready=handler) as p:
        for _ in range(steps):
            torch.relu(x)
            p.step()
    return seen


def test_profile_steps_follow_the_schedule():
    seen = _step_loop(clgrad, profile, schedule(wait=1, warmup=1, active=3, repeat=1))
    # steps 2, 3, 4 recorded (one relu each, under ProfilerStep#2..#4); saved at step() 5
    assert seen == [(5, [("ProfilerStep*", 3), ("aten::relu", 3)])]
    seen = _step_loop(clgrad, profile, schedule(wait=1, warmup=1, active=2, repeat=2))
    assert seen == [(4, [("ProfilerStep*", 2), ("aten::relu", 2)]),
                    (8, [("ProfilerStep*", 2), ("aten::relu", 2)])]


def test_profile_steps_match_pytorch():
    torch = pytest.importorskip("torch")
    for kw in (dict(wait=1, warmup=1, active=3, repeat=1), dict(wait=1, warmup=1, active=2,
                                                                repeat=2)):
        ours = _step_loop(clgrad, profile, schedule(**kw))
        theirs = _step_loop(torch, _torch_cpu_profile(torch), torch.profiler.schedule(**kw))
        assert ours == theirs, kw


def test_trace_names_keep_the_step_number(tmp_path):
    x = clgrad.ones(2)
    with profile(schedule=schedule(wait=0, warmup=1, active=2, repeat=1)) as p:
        for _ in range(4):
            x + 1
            p.step()
    path = tmp_path / "t.json"
    p.export_chrome_trace(str(path))
    names = [e["name"] for e in json.loads(path.read_text())["traceEvents"]]
    assert names.count("ProfilerStep#1") == 1 and names.count("ProfilerStep#2") == 1
    assert names.count("aten::add") == 2


def _table_rows(text, headers):
    lines = text.splitlines()
    assert lines[0].startswith("-") and lines[2].startswith("-") and lines[-2].startswith("-")
    for h in headers:
        assert h in lines[1], h
    assert lines[-1].startswith("Self CPU time total: ")
    return lines[3:-2]


def test_table_columns_and_order():
    x, w = _data(clgrad)
    with profile(record_shapes=True) as prof:
        with record_function("model_inference"):
            _program(clgrad, x, w)
    avg = prof.key_averages()
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
               "# of Calls"]
    rows = _table_rows(avg.table(sort_by="cpu_time_total", row_limit=5), headers)
    assert len(rows) == 5
    by_total = sorted(avg, key=lambda a: a.cpu_time_total, reverse=True)
    assert [r.split()[0] for r in rows] == [a.key for a in by_total[:5]]
    assert rows[0].split()[0] == "model_inference"
    assert rows[0].split()[3] == "100.00%"  # its total is all the self time of the profile
    rows = _table_rows(avg.table(sort_by="count"), headers)
    counts = [int(r.split()[-1]) for r in rows]
    assert counts == sorted(counts, reverse=True) and len(rows) == len(avg)
    mm_row = next(r for r in rows if r.split()[0] == "aten::mm")
    assert mm_row.split()[-1] == "3"
    shaped = prof.key_averages(group_by_input_shape=True)
    text = shaped.table(sort_by="self_cpu_time_total", row_limit=100)
    rows = _table_rows(text, headers + ["Input Shapes"])
    mm = [a for a in shaped if a.key == "aten::mm"]
    assert len(mm) == 1 and mm[0].input_shapes == [[4, 3], [3, 2]] and mm[0].count == 3
    clip = next(a for a in shaped if a.key == "aten::clip")
    assert clip.input_shapes == [[4, 3], [], []]
    with pytest.raises(ValueError, match="sort_by='cpu_memory_usage'"):
        avg.table(sort_by="cpu_memory_usage")


def test_chrome_trace(tmp_path):
    x, w = _data(clgrad)
    with profile(record_shapes=True) as prof:
        with record_function("model_inference"):
            _program(clgrad, x, w)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())["traceEvents"]
    assert len(trace) == len(prof.events())
    assert Counter(e["name"] for e in trace) == Counter(e.name for e in prof.events())
    for e in trace:
        assert e["ph"] == "X" and e["dur"] >= 0 and e["ts"] >= 0
        assert e["cat"] == ("user_annotation" if e["name"] == "model_inference" else "cpu_op")
    outer = next(e for e in trace if e["name"] == "model_inference")
    for e in trace:  # every op lies inside the annotation's span
        assert outer["ts"] <= e["ts"] and e["ts"] + e["dur"] <= outer["ts"] + outer["dur"] + 1e-3
    mm = [e for e in trace if e["name"] == "aten::mm"]
    assert all(e["args"]["Input Dims"] == [[4, 3], [3, 2]] for e in mm)
    gz = tmp_path / "trace.json.gz"
    prof.export_chrome_trace(str(gz))
    assert json.loads(gzip.decompress(gz.read_bytes()))["traceEvents"] == trace
    with pytest.raises(TypeError, match="FunctionEventAvg"):
        prof.key_averages().export_chrome_trace(str(path))


def test_tensorboard_trace_handler_writes_traces(tmp_path):
    x = clgrad.ones(3)
    with profile(schedule=schedule(wait=0, warmup=1, active=1, repeat=2),
                 on_trace_ready=tensorboard_trace_handler(str(tmp_path / "log"), "w0")) as p:
        for _ in range(5):
            clgrad.exp(x)
            p.step()
    files = sorted((tmp_path / "log").iterdir())
    assert len(files) == 2 and all(f.name.startswith("w0.") and
                                   f.name.endswith(".pt.trace.json") for f in files)
    for f in files:
        names = [e["name"] for e in json.loads(f.read_text())["traceEvents"]]
        assert names.count("aten::exp") == 1


def test_faces_restored_and_nothing_recorded_after():
    before = (clgrad.relu, F.relu, F.batch_norm, clgrad.Tensor.__add__, clgrad.Tensor.add,
              nn.ReLU6._fn)
    x = clgrad.ones(2)
    with pytest.raises(ZeroDivisionError):
        with profile() as prof:
            assert clgrad.relu is not before[0]  # wrapped while entered
            x + 1
            1 / 0
    assert (clgrad.relu, F.relu, F.batch_norm, clgrad.Tensor.__add__, clgrad.Tensor.add,
            nn.ReLU6._fn) == before
    assert [e.name for e in prof.events()] == ["aten::add"]
    x + 1
    assert [e.name for e in prof.events()] == ["aten::add"]


def test_module_calls_recorded():
    """nn modules call F.* (ReLU(inplace=True): aten::relu_), ops modules (BatchNorm2d:
    aten::batch_norm) or a class attribute (ReLU6._fn = F.relu6): all recorded. A
    Sequential's BatchNorm2d + ReLU6 pair runs as one fused op: one aten::batch_norm event
    (README "Deliberately different")."""
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(inplace=True), nn.BatchNorm2d(2),
                      nn.ReLU6(), nn.Flatten(), nn.Linear(8, 3))
    x = clgrad.randn(2, 1, 4, 4)
    with profile() as prof:
        m(x)
        nn.ReLU6()(x)
    assert dict(_top_counts(prof.events())) == {
        "aten::conv2d": 1, "aten::relu_": 1, "aten::batch_norm": 1, "aten::relu6": 1,
        "aten::flatten": 1, "aten::linear": 1}


def test_device_activity_times():
    x, w = _data(clgrad)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        _program(clgrad, x, w)
    ops = [e for e in prof.events()]
    assert all(e.device_time_total >= e.cpu_time_total - 1e-3 for e in ops)
    assert all(e.self_device_time_total >= -1e-3 for e in ops)
    a, b = _backward_program(clgrad)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as bprof:
        (a * b).sum().backward()
    node = next(e for e in bprof.events() if e.name.endswith("MulBackward0"))
    assert node.device_time_total >= node.cpu_time_total - 1e-3
    np.testing.assert_allclose(a.grad.numpy(), [4, 5, 6])
    text = prof.key_averages().table(sort_by="cuda_time_total")
    assert "Self CUDA" in text and "CUDA total" in text and "Self CUDA time total" in text
    with profile() as prof:
        _program(clgrad, x, w)
    assert all(e.device_time_total == 0 for e in prof.events())
    assert "CUDA" not in prof.key_averages().table()


def test_refusals():
    with pytest.raises(NotImplementedError, match="profile_memory"):
        profile(profile_memory=True)
    with pytest.raises(NotImplementedError, match="with_flops"):
        profile(with_flops=True)
    with pytest.raises(ValueError, match="activities"):
        profile(activities=["XPU"])
    with pytest.raises(RuntimeError, match="no trace yet"):
        profile().key_averages()
    with profile():
        with pytest.raises(RuntimeError, match="already"):
            with profile():
                pass
    with pytest.raises(NotImplementedError, match="group_by_stack_n"):
        with profile() as p:
            pass
        p.key_averages(group_by_stack_n=5)


def test_warmup_followed_by_none_warns_as_pytorch():
    def bad(step):
        return [ProfilerAction.WARMUP, ProfilerAction.NONE, ProfilerAction.NONE][min(step, 2)]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with profile(schedule=bad) as p:
            p.step()
    assert any("WARMUP followed by NONE" in str(x.message) for x in w)


# -- the recipe program ----------------------------------------------------------------------

def _inference_tops(prof):
    return Counter(e.name for e in prof.events()
                   if e.cpu_parent is not None and e.cpu_parent.name == "model_inference")


def test_recipe_program_differs_from_pytorch_only_in_imports():
    from test_programs import PROGRAMS, rewrite_imports
    source = (PROGRAMS / "profiler_recipe.py").read_text()
    assert "clgrad" not in source
    rewrite_imports(source)


def test_recipe_program_runs(programs, capsys):
    prog = load_program("profiler_recipe")
    prof, traces = prog.main(str(programs / "trace.json"))
    out = capsys.readouterr().out
    assert "model_inference" in out and "Input Shapes" in out and "# of Calls" in out
    assert dict(_inference_tops(prof)) == {
        "aten::conv2d": 2, "aten::batch_norm": 1, "aten::relu_": 2, "aten::max_pool2d": 1,
        "aten::adaptive_avg_pool2d": 1, "aten::flatten": 1, "aten::linear": 1}
    trace = json.loads((programs / "trace.json").read_text())["traceEvents"]
    assert sum(e["name"] == "aten::conv2d" for e in trace) == 2
    assert [(s, {a.key: a.count for a in k}["ProfilerStep*"]) for s, k in traces] == [(4, 2)]
    step_trace = json.loads((programs / "test_trace_4.json").read_text())["traceEvents"]
    assert sorted(e["name"] for e in step_trace if e["name"].startswith("ProfilerStep")) == \
        ["ProfilerStep#2", "ProfilerStep#3"]
    assert sum(e["name"] == "aten::conv2d" for e in step_trace) == 4


def test_recipe_program_matches_pytorch(programs, capsys):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tprog = load_program("profiler_recipe", "torch")
    tprof, ttraces = tprog.main(str(programs / "ttrace.json"))
    prof, traces = load_program("profiler_recipe").main(str(programs / "trace.json"))
    assert _inference_tops(prof) == _inference_tops(tprof)
    assert [(s, {a.key: a.count for a in k}["ProfilerStep*"]) for s, k in traces] == \
        [(s, {a.key: a.count for a in k}["ProfilerStep*"]) for s, k in ttraces]


def test_autograd_profiler_face():
    import clgrad.autograd.profiler as ap
    assert ap.record_function is record_function and clgrad.autograd.profiler is ap
    x = clgrad.ones(3)
    with ap.profile() as prof:
        with ap.record_function("block"):
            clgrad.exp(x)
    assert [e.name for e in prof.function_events] == ["block", "aten::exp"]
    assert prof.function_events[1].cpu_parent is prof.function_events[0]
    assert "aten::exp" in prof.table(sort_by="self_cpu_time_total")
    assert prof.self_cpu_time_total == pytest.approx(prof.function_events[0].cpu_time_total,
                                                     abs=1e-2)
    with ap.profile(enabled=False) as off:
        clgrad.exp(x)
    with pytest.raises(RuntimeError, match="no trace yet"):
        off.key_averages()
    with ap.profile(use_cuda=True) as dev:
        clgrad.exp(x)
    assert dev.function_events[0].device_time_total >= dev.function_events[0].cpu_time_total


def _names_data(torch):
    a = torch.tensor(np.arange(9, dtype=np.float32).reshape(3, 3) / 9)
    i = torch.tensor(np.array([1, 2, 3], np.int64))
    return a, a + 1, i, i + 1


# (the call, the top-level event names PyTorch 2.14's profiler gives it: written out by hand
# from its output)
NAME_CASES = [
    (lambda t, F, a, b, i, j: a + b, ["aten::add"]),
    (lambda t, F, a, b, i, j: 2 + a, ["aten::add"]),
    (lambda t, F, a, b, i, j: 2 - a, ["aten::rsub"]),
    (lambda t, F, a, b, i, j: i & j, ["aten::__and__"]),
    (lambda t, F, a, b, i, j: 2 & i, ["aten::bitwise_and"]),
    (lambda t, F, a, b, i, j: i.__iand__(j), ["aten::__iand__"]),
    (lambda t, F, a, b, i, j: i << j, ["aten::__lshift__"]),
    (lambda t, F, a, b, i, j: a.__iadd__(b), ["aten::add_"]),
    (lambda t, F, a, b, i, j: a @ b, ["aten::matmul"]),
    (lambda t, F, a, b, i, j: -a, ["aten::neg"]),
    (lambda t, F, a, b, i, j: abs(a), ["aten::abs"]),
    (lambda t, F, a, b, i, j: a ** 2, ["aten::pow"]),
    (lambda t, F, a, b, i, j: a // b, ["aten::floor_divide"]),
    (lambda t, F, a, b, i, j: a % b, ["aten::remainder"]),
    (lambda t, F, a, b, i, j: a == b, ["aten::eq"]),
    (lambda t, F, a, b, i, j: ~i, ["aten::bitwise_not"]),
    (lambda t, F, a, b, i, j: a.mul_(1), ["aten::mul_"]),
    (lambda t, F, a, b, i, j: t.multiply(a, b), ["aten::multiply"]),
    (lambda t, F, a, b, i, j: t.clip(a, 0, 1), ["aten::clip"]),
    (lambda t, F, a, b, i, j: a.sum(), ["aten::sum"]),
    (lambda t, F, a, b, i, j: a.view(9), ["aten::view"]),
    (lambda t, F, a, b, i, j: a.t(), ["aten::t"]),
    (lambda t, F, a, b, i, j: F.linear(a, b), ["aten::linear"]),
    (lambda t, F, a, b, i, j: F.relu(a), ["aten::relu"]),
    (lambda t, F, a, b, i, j: F.relu(a, inplace=True), ["aten::relu_"]),
    (lambda t, F, a, b, i, j: F.softmax(a, 1), ["aten::softmax"]),
    (lambda t, F, a, b, i, j: F.log_softmax(a, 1), ["aten::log_softmax"]),
    (lambda t, F, a, b, i, j: F.gelu(a), ["aten::gelu"]),
    (lambda t, F, a, b, i, j: F.layer_norm(a, (3,)), ["aten::layer_norm"]),
    (lambda t, F, a, b, i, j: F.cross_entropy(a, i - 1),
     ["aten::sub", "aten::cross_entropy_loss"]),
    (lambda t, F, a, b, i, j: F.nll_loss(a, i - 1), ["aten::sub", "aten::nll_loss_nd"]),
    (lambda t, F, a, b, i, j: t.flatten(a), ["aten::flatten"]),
    (lambda t, F, a, b, i, j: F.embedding(i - 1, a), ["aten::sub", "aten::embedding"]),
]


def _top_names(prof_cls, torch, F, fn):
    args = _names_data(torch)
    with prof_cls() as prof:
        fn(torch, F, *args)
    return [e.name for e in prof.events() if e.cpu_parent is None]


@pytest.mark.parametrize("case", range(len(NAME_CASES)))
def test_event_names(case):
    fn, expected = NAME_CASES[case]
    assert _top_names(profile, clgrad, F, fn) == expected


@pytest.mark.parametrize("case", range(len(NAME_CASES)))
def test_event_names_match_pytorch(case):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as tF
    fn, expected = NAME_CASES[case]
    assert _top_names(_torch_cpu_profile(torch), torch, tF, fn) == expected


def _train(recorded: bool) -> list:
    clgrad.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                      nn.Linear(64, 3))
    opt = clgrad.optim.Adam(m.parameters(), lr=1e-2)
    x = clgrad.tensor(np.random.RandomState(0).randn(8, 1, 6, 6).astype(np.float32))
    y = clgrad.tensor(np.arange(8) % 3)
    losses = []
    with profile(schedule=schedule(wait=1, warmup=1, active=2)) if recorded else \
            contextlib.nullcontext() as p:
        for _ in range(5):
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            if p is not None:
                p.step()
    return losses


def test_a_profiled_training_loop_computes_the_same_numbers():
    plain, recorded = _train(False), _train(True)
    assert plain == recorded  # bit-equal: the wrappers only time the same calls
    assert plain[-1] < plain[0]
