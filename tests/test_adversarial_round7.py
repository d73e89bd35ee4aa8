"""Differential findings of round 7's adversarial pass: places where clgrad returned a
plausible but wrong value (or did not raise) where PyTorch 2.14 is right. Each test's
oracle is a hand-computed or float64 NumPy value; where torch is importable, the value is
also checked against it (skipped without torch)."""
import numpy as np
import pytest

import clgrad

try:
    import torch
except ImportError:  # CI has no torch: the NumPy/hand oracles still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not importable")


@pytest.fixture
def fp16():
    """The default device, skipped without float16."""
    dev = clgrad.empty(0)._storage.device
    if not dev.fp16:
        pytest.skip(f"the device {dev.name!r} lacks cl_khr_fp16 (float16)")
    return dev


def test_half_divided_by_0dim_int_tensor_takes_it_as_a_number(fp16):
    # tensor(100000) was rounded to half (inf) first: x / inf gave 0 instead of x * 1e-5
    x = clgrad.tensor([1.5, -2.25, 60000.0], dtype=clgrad.float16)
    for dt in (clgrad.int32, clgrad.int64):
        got = x / clgrad.tensor(100000, dtype=dt)
        assert got.dtype is clgrad.float16
        want = (np.array([1.5, -2.25, 60000.0]) / 100000).astype(np.float16)
        np.testing.assert_array_equal(got.numpy(), want)
        # the same rule as a Python number and a 0-dim float32 tensor: 60000 - 100000
        got = x - clgrad.tensor(100000, dtype=dt)
        assert got.numpy()[2] == -40000.0
        assert got.numpy()[0] == -np.inf  # (-99998.5 overflows half)
        np.testing.assert_array_equal((x * clgrad.tensor(-1, dtype=dt)).numpy(),
                                      -x.numpy())


@needs_torch
def test_half_divided_by_0dim_int_tensor_as_torch(fp16):
    x = [1.5, -2.25, 60000.0]
    got = clgrad.tensor(x, dtype=clgrad.float16) / clgrad.tensor(100000)
    want = torch.tensor(x, dtype=torch.float16) / torch.tensor(100000)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
