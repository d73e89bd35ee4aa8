"""Bad input: the right exception class, a message naming the argument and the numbers, no
kernel launched, and the inputs left intact."""
import numpy as np
import pytest

import clgrad
from clgrad.runtime import Device, launch_count

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.fixture
def x():
    return clgrad.tensor(X)


# (id, call on x, exception class, regex the message must match)
CASES = [
    # dim out of range
    ("sum-dim", lambda x: x.sum(3), IndexError, r"sum: .*range of \[-3, 2\].*got 3"),
    ("sum-dims", lambda x: x.sum((0, -4)), IndexError, r"sum: .*\[-3, 2\].*got -4"),
    ("sum-dup", lambda x: x.sum((0, -3)), RuntimeError, r"sum: dim \(0, 0\) appears multiple"),
    ("narrow-dim", lambda x: x.narrow(3, 0, 1), IndexError, r"narrow: .*got 3"),
    ("select-dim", lambda x: x.select(-4, 0), IndexError, r"select: .*got -4"),
    ("transpose-dim", lambda x: x.transpose(0, 5), IndexError, r"transpose: .*got 5"),
    ("unsqueeze-dim", lambda x: x.unsqueeze(4), IndexError, r"unsqueeze: .*\[-4, 3\].*got 4"),
    ("softmax-dim", lambda x: x.softmax(3), IndexError, r"softmax: .*got 3"),
    ("max-dim", lambda x: x.max(-5), IndexError, r"max: .*got -5"),
    ("argmax-dim", lambda x: x.argmax(7), IndexError, r"argmax: .*got 7"),
    ("size-dim", lambda x: x.size(3), IndexError, r"size: .*got 3"),
    ("flatten-dim", lambda x: x.flatten(0, 3), IndexError, r"flatten: .*got 3"),
    ("movedim-dim", lambda x: x.movedim(0, 3), IndexError, r"movedim: .*got 3"),
    ("cat-dim", lambda x: clgrad.cat([x, x], 3), IndexError, r"cat: .*got 3"),
    ("stack-dim", lambda x: clgrad.stack([x, x], 4), IndexError, r"stack: .*\[-4, 3\].*got 4"),
    ("dim-type", lambda x: x.sum(1.5), TypeError, r"sum: expected dim to be an int, got float"),
    # narrow / index past the end
    ("narrow-end", lambda x: x.narrow(2, 3, 2), IndexError,
     r"narrow: start \(3\) \+ length \(2\) exceeds dimension size \(4\) of dim 2"),
    ("narrow-neg-length", lambda x: x.narrow(1, 0, -1), RuntimeError,
     r"narrow: expected length >= 0, got -1"),
    ("select-end", lambda x: x.select(1, 3), IndexError,
     r"select: index 3 is out of bounds for dimension 1 with size 3"),
    ("getitem-end", lambda x: x[2], IndexError,
     r"getitem: index 2 is out of bounds for dimension 0 with size 2"),
    ("getitem-neg", lambda x: x[:, -4], IndexError,
     r"getitem: index -4 is out of bounds for dimension 1 with size 3"),
    ("getitem-many", lambda x: x[0, 0, 0, 0], IndexError,
     r"getitem: too many indices for tensor of dimension 3 \(got 4\)"),
    ("getitem-float", lambda x: x[1.0], TypeError, r"getitem: expected int.*got float"),
    ("getitem-step0", lambda x: x[::0], ValueError, r"getitem: slice step cannot be zero"),
    ("index_select-end", lambda x: x.index_select(2, clgrad.tensor([0, 4])), IndexError,
     r"index_select: index 4 is out of bounds for dimension 2 with size 4"),
    ("gather-end", lambda x: x.gather(0, clgrad.zeros(2, 3, 4, dtype=clgrad.int64) + 2),
     IndexError, r"gather: index 2 is out of bounds for dimension 0 with size 2"),
    ("setitem-end", lambda x: x.__setitem__(clgrad.tensor([5]), 1.0), IndexError,
     r"setitem: index 5 is out of bounds for dimension 0 with size 2"),
    ("unfold-size", lambda x: x.unfold(2, 5, 1), RuntimeError,
     r"unfold: maximum size for tensor at dimension 2 is 4 but size is 5"),
    ("split-sizes", lambda x: x.split([1, 1], 1), RuntimeError,
     r"split: .*sum exactly to 3 .*split_sizes=\[1, 1\]"),
    ("chunk-zero", lambda x: x.chunk(0), RuntimeError, r"chunk: .*got: 0"),
    # views of another size, views that need a copy
    ("view-size", lambda x: x.view(5, 5), RuntimeError,
     r"view: shape \(5, 5\) is invalid for input of size 24"),
    ("reshape-size", lambda x: x.reshape(-1, 5), RuntimeError,
     r"reshape: shape \(-1, 5\) is invalid for input of size 24"),
    ("view-two-infer", lambda x: x.view(-1, -1), RuntimeError,
     r"view: only one dimension can be inferred"),
    ("view-copy", lambda x: x.transpose(1, 2).view(24), RuntimeError,
     r"view: cannot view shape \(2, 4, 3\) with strides \(12, 1, 4\) as \(24,\) without a "
     r"copy; use \.reshape\(\)"),
    ("unflatten-size", lambda x: x.unflatten(2, (3, 2)), RuntimeError,
     r"unflatten: shape \(3, 2\) is invalid for input of size 4"),
    # permute / expand
    ("permute-dup", lambda x: x.permute(0, 2, 0), RuntimeError, r"permute: repeated dim"),
    ("permute-count", lambda x: x.permute(1, 0), RuntimeError,
     r"permute: number of dims don't match: input has 3 dims, got 2"),
    ("expand-size", lambda x: x.expand(2, 5, 4), RuntimeError,
     r"expand: the expanded size of the tensor \(5\) must match the existing size \(3\) at "
     r"non-singleton dimension 1"),
    ("expand-fewer", lambda x: x.expand(3, 4), RuntimeError,
     r"expand: the number of sizes provided \(2\).*\(3\)"),
    ("expand-lead-neg", lambda x: x.expand(-1, 2, 3, 4), RuntimeError,
     r"expand: -1 is not allowed in a leading, non-existing dimension \(0\)"),
    ("movedim-dup", lambda x: x.movedim((0, 0), (1, 2)), RuntimeError, r"movedim: repeated"),
    ("diagonal-same", lambda x: x.diagonal(0, 1, 1), RuntimeError,
     r"diagonal: dimensions cannot be identical 1, 1"),
    # broadcasting, matmul
    ("add-shapes", lambda x: x + clgrad.ones(3), ValueError,
     r"add: shapes \(2, 3, 4\) and \(3,\) are not broadcastable \(size 3 vs 4 at dim 2\)"),
    ("mul-shapes", lambda x: x * clgrad.ones(5, 1, 1), ValueError,
     r"mul: shapes \(2, 3, 4\) and \(5, 1, 1\) are not broadcastable"),
    ("where-shapes", lambda x: clgrad.where(x > 0, x, clgrad.ones(2, 2, 1)), ValueError,
     r"where: shapes .*\(2, 2, 1\) are not broadcastable"),
    ("copy-shapes", lambda x: x.copy_(clgrad.ones(4, 1)), ValueError,
     r"copy_: shapes \(4, 1\) and \(2, 3, 4\) are not broadcastable"),
    ("copy-grow", lambda x: x[0, 0].copy_(clgrad.ones(2, 4)), RuntimeError,
     r"copy_: expected a source broadcastable to \(4,\), got \(2, 4\)"),
    ("matmul-k", lambda x: x @ clgrad.ones(3, 5), RuntimeError,
     r"matmul: mat1 and mat2 shapes cannot be multiplied \(3x4 and 3x5\)"),
    ("matmul-batch", lambda x: x @ clgrad.ones(3, 4, 2), ValueError,
     r"matmul: shapes \(2,\) and \(3,\) are not broadcastable"),
    ("matmul-0d", lambda x: x @ clgrad.tensor(2.0), RuntimeError,
     r"matmul: both arguments need to be at least 1D, but they are 3D and 0D"),
    ("matmul-dtype", lambda x: x @ clgrad.ones(4, 2, dtype=clgrad.float64), RuntimeError,
     r"matmul: expected m1 and m2 to have the same dtype.*float32 != .*float64"),
    ("mm-rank", lambda x: clgrad.mm(x, x), RuntimeError, r"mm: expected 2-D tensors, got 3-D"),
    ("cat-shapes", lambda x: clgrad.cat([x, clgrad.ones(2, 2, 4)], 2), RuntimeError,
     r"cat: Sizes of tensors must match except in dimension 2.*\(2, 2, 4\)"),
    ("stack-shapes", lambda x: clgrad.stack([x, x[:1]]), RuntimeError,
     r"stack: expects each tensor to be equal size, but got \(2, 3, 4\) and \(1, 3, 4\)"),
    # as_strided outside the storage
    ("as_strided-end", lambda x: x.as_strided((5, 5), (5, 1)), RuntimeError,
     r"as_strided: .*sizes \[5, 5\], strides \[5, 1\], storage offset 0 require a storage of "
     r"at least 25 elements, but the storage has 24"),
    ("as_strided-offset", lambda x: x.as_strided((2,), (1,), 23), RuntimeError,
     r"as_strided: .*storage offset 23 require a storage of at least 25 elements"),
    ("as_strided-neg", lambda x: x.as_strided((2,), (-1,), 5), RuntimeError,
     r"as_strided: negative sizes or strides are not supported, got size \(2,\) stride "
     r"\(-1,\)"),
    ("as_strided-rank", lambda x: x.as_strided((2, 2), (1,)), RuntimeError,
     r"as_strided: mismatch in length of strides and shape \(1 vs 2\)"),
    # writes the layout cannot take
    ("write-expanded", lambda x: x[:, :1].expand(2, 3, 4).add_(1), RuntimeError,
     r"add_: .*more than one element of the written-to tensor refers to a single memory "
     r"location \(shape \(2, 3, 4\), strides \(12, 0, 1\)\)"),
    ("write-overlap", lambda x: x.as_strided((3, 3), (1, 1)).add_(1), RuntimeError,
     r"add_: .*single memory location \(shape \(3, 3\), strides \(1, 1\)\)"),
    ("int-to-float-inplace", lambda x: x.long().div_(2.5) and None, RuntimeError,
     r"div_: result type Float can't be cast to the desired output type Long"),
    # other bad values
    ("item", lambda x: x.item(), RuntimeError,
     r"item: a Tensor with 24 elements cannot be converted to Scalar"),
    ("bool", lambda x: bool(x), RuntimeError, r"Boolean value of Tensor with 24 elements"),
    ("mean-int", lambda x: x.long().mean(), RuntimeError, r"mean: .*Got: .*int64"),
    ("clamp-none", lambda x: x.clamp(), ValueError, r"clamp: expected at least one of min"),
    ("add-str", lambda x: clgrad.add(x, "a"), TypeError,
     r"add\(\): argument 'other' \(position 2\) must be Tensor, not str"),
    ("add-str-operator", lambda x: x + "a", TypeError,
     r"add: expected a Tensor or a number, got str"),
    ("dtype-numpy", lambda x: x.to(np.complex64), TypeError,
     r"dtype: expected a clgrad dtype, got .*complex64"),
    ("device-name", lambda x: x.to("complex64"), RuntimeError,
     r"device: expected 'cpu', 'gpu', 'cuda\[:N\]', 'P:D' or a platform or name substring "
     r".*got 'complex64'"),
]


@pytest.mark.parametrize("call, exc, pattern", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_bad_input_raises_and_leaves_inputs_intact(x, call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call(x)
    np.testing.assert_array_equal(x.numpy(), X)
    assert x._version == 0
    assert tuple(x.shape) == (2, 3, 4) and x.stride() == (12, 4, 1)


@pytest.mark.parametrize("call", [
    lambda x, o: x.narrow(2, 3, 2), lambda x, o: x.view(5, 5), lambda x, o: x.permute(0, 0, 1),
    lambda x, o: x.expand(2, 5, 4), lambda x, o: x + o[0], lambda x, o: x @ o[1],
    lambda x, o: x.as_strided((5, 5), (5, 1)), lambda x, o: x.sum(3),
    lambda x, o: x[:, :1].expand(2, 3, 4).add_(1), lambda x, o: x.copy_(o[2]),
    lambda x, o: x[:, :1].expand(2, 3, 4).mul_(o[0]), lambda x, o: clgrad.cat([x, o[1]]),
    lambda x, o: x.index_select(0, o[3]), lambda x, o: x.max(3),
])
def test_checks_come_before_any_launch(call):
    x = clgrad.tensor(X)
    others = (clgrad.ones(3), clgrad.ones(3, 5), clgrad.ones(4, 1), clgrad.tensor([0, 2]))
    before = launch_count()
    with pytest.raises((IndexError, ValueError, RuntimeError, TypeError)):
        call(x, others)
    assert launch_count() == before


@pytest.mark.parametrize("data, pattern", [
    ([[1, 2], [3]], r"tensor: expected a rectangular nested sequence of numbers, got a "
                    r"ragged one"),
    ([[1.0, 2.0], [3.0, 4.0, 5.0]], r"ragged"),
    ([[[1], [2]], [[3], [4, 5]]], r"ragged"),
])
def test_ragged_nested_lists(data, pattern):
    with pytest.raises(ValueError, match=pattern):
        clgrad.tensor(data)


def test_non_numeric_data():
    with pytest.raises(TypeError, match="tensor: expected numbers.*got data of numpy dtype <U"):
        clgrad.tensor([["a", 1]])
    with pytest.raises(TypeError, match="complex"):
        clgrad.tensor(np.ones(2, np.complex64))


@pytest.fixture(scope="module")
def second_device():
    """Another Device object (its own context) on the default OpenCL device."""
    d = clgrad.default_device()
    return Device(d.cl_device, d.platform_index, d.device_index)


def test_float64_on_a_device_without_fp64(second_device, monkeypatch):
    dev = second_device
    monkeypatch.setattr(dev, "fp64", False)
    built = dict(dev._programs)
    launches = launch_count()
    with pytest.raises(TypeError, match="float64: the device .* lacks cl_khr_fp64; use float32"):
        clgrad.zeros(3, dtype=clgrad.float64, device=dev)
    with pytest.raises(TypeError, match="cl_khr_fp64"):
        clgrad.tensor(np.ones(3), device=dev)                  # float64 NumPy data
    x = clgrad.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), device=dev)
    with pytest.raises(TypeError, match="cl_khr_fp64"):
        x.double()
    with pytest.raises(TypeError, match="cl_khr_fp64"):
        x.to(clgrad.float64)
    assert dev._programs == built and launch_count() == launches   # nothing built or run
    # float32 kernels never need fp64: they build and run on such a device
    y = (x.T * 2 + 1).sum(0)
    np.testing.assert_array_equal(y.numpy(), (np.arange(6.0).reshape(2, 3).T * 2 + 1).sum(0))
    np.testing.assert_array_equal((x @ x.T).numpy(), np.arange(6.0).reshape(2, 3) @
                                  np.arange(6.0).reshape(2, 3).T)
    np.testing.assert_array_equal(x.long().numpy(), np.arange(6).reshape(2, 3))
    assert all("CLGRAD_HAS_FP64" not in str(k) for k in dev._programs)


def test_tensors_on_two_devices(second_device):
    a = clgrad.ones(3)
    b = clgrad.ones(3, device=second_device)
    for call in (lambda: a + b, lambda: clgrad.cat([a, b]),
                 lambda: clgrad.where(a > 0, a, b), lambda: a @ b,
                 lambda: a.unsqueeze(0) @ b.unsqueeze(1)):
        with pytest.raises(RuntimeError, match="expected all tensors on the same device"):
            call()
    np.testing.assert_array_equal(a.numpy(), np.ones(3))
    assert a._version == 0
    a.copy_(b * 2)  # copy_ copies across devices, as PyTorch's (tests/test_device_cross.py)
    np.testing.assert_array_equal(a.numpy(), np.full(3, 2.0))
    assert a._version == 1


def test_too_large_allocation_names_the_bytes_and_the_limit():
    limit = clgrad.default_device().cl_device.max_mem_alloc_size
    n = limit // 4 + 1
    with pytest.raises(RuntimeError, match=rf"{n * 4} bytes.*largest buffer"):
        clgrad.zeros(n)


def test_ints_beyond_int64_raise_overflow():
    with pytest.raises(OverflowError, match="does not fit in int64"):
        clgrad.tensor([1, 2**70])
    with pytest.raises(OverflowError, match="does not fit in int64"):
        clgrad.tensor(np.array([2**64 - 1], dtype=np.uint64))


def test_narrow_negative_length_is_named():
    with pytest.raises(IndexError, match="length >= 0, got -1"):
        clgrad.zeros(3).narrow(0, 0, -1)


# -- a non-Tensor where a Tensor is required: TypeError naming the argument (PyTorch's form) ---
@pytest.mark.parametrize("call, op, arg", [
    (lambda a: clgrad.nn.functional.relu(a), "relu", "input"),
    (lambda a: clgrad.relu(a), "relu", "input"),
    (lambda a: clgrad.nn.ReLU()(a), "relu", "input"),
    (lambda a: clgrad.sum(a), "sum", "input"),
    (lambda a: clgrad.mean(a, 0), "mean", "input"),
    (lambda a: clgrad.softmax(a, 0), "softmax", "input"),
    (lambda a: clgrad.nn.functional.softmax(a, 0), "softmax", "input"),
    (lambda a: clgrad.nn.functional.conv2d(clgrad.ones(1, 1, 3, 3), a), "conv2d", "weight"),
    (lambda a: clgrad.nn.functional.conv2d(a, clgrad.ones(1, 1, 1, 1)), "conv2d", "input"),
    (lambda a: clgrad.nn.functional.max_pool2d(a, 2), "max_pool2d", "input"),
    (lambda a: clgrad.nn.functional.cross_entropy(clgrad.ones(2, 3), a), "cross_entropy",
     "target"),
    (lambda a: clgrad.matmul(clgrad.ones(3, 3), a), "matmul", "other"),
    (lambda a: clgrad.index_select(clgrad.ones(3), 0, a), "index_select", "index"),
    (lambda a: clgrad.linalg.vector_norm(a), "vector_norm", "x"),
    (lambda a: clgrad.reshape(a, (3,)), "reshape", "input"),
])
def test_non_tensor_argument_raises_type_error(call, op, arg):
    for bad, name in [(np.ones(3), "numpy.ndarray"), ([1.0, 2.0], "list")]:
        with pytest.raises(TypeError, match=rf"^{op}\(\): argument '{arg}' .*must be Tensor, "
                                            rf"not {name}$"):
            call(bad)


def test_type_check_keeps_the_ops_usable():
    """The checked public names still take optional None, keywords, and pickle by name."""
    import pickle
    x = clgrad.ones(2, 2)
    assert clgrad.nn.functional.linear(x, x, bias=None).numpy().tolist() == [[2, 2], [2, 2]]
    assert clgrad.sum(x=x).item() == 4
    with pytest.raises(TypeError, match=r"^linear\(\): argument 'bias' must be Tensor, not "
                                        r"tuple$"):
        clgrad.nn.functional.linear(x, x, bias=(1, 2))
    assert pickle.loads(pickle.dumps(clgrad.relu)) is clgrad.relu
    assert clgrad.relu.__doc__ and clgrad.clip is clgrad.clamp


# -- writes into an expanded tensor: a fill is allowed (PyTorch), other writes are not ---------
@pytest.mark.parametrize("write", [
    lambda b: b.fill_(2.0), lambda b: b.fill_(clgrad.tensor(2.0)),
    lambda b: b.zero_().fill_(2), lambda b: b.__setitem__(slice(None), 2.0)])
def test_fill_of_an_expanded_tensor_writes_its_base(write):
    a = clgrad.zeros(3, 1)
    write(a.expand(3, 4))
    np.testing.assert_array_equal(a.numpy(), np.full((3, 1), 2.0, np.float32))


def test_zero_and_scalar_setitem_of_an_expanded_tensor():
    a = clgrad.ones(3, 1)
    b = a.expand(3, 4)
    assert b.zero_() is b
    np.testing.assert_array_equal(a.numpy(), np.zeros((3, 1), np.float32))
    b[0] = 5
    np.testing.assert_array_equal(a.numpy(), [[5.0], [0.0], [0.0]])
    np.testing.assert_array_equal(b.numpy(), [[5.0] * 4, [0.0] * 4, [0.0] * 4])


@pytest.mark.parametrize("write", [
    lambda b: b.add_(1), lambda b: b.mul_(2), lambda b: b.copy_(clgrad.ones(3, 4)),
    lambda b: b.__setitem__(0, clgrad.tensor(5.0))])
def test_other_writes_into_an_expanded_tensor_still_raise(write):
    a = clgrad.ones(3, 1)
    with pytest.raises(RuntimeError, match="single memory location"):
        write(a.expand(3, 4))
    np.testing.assert_array_equal(a.numpy(), np.ones((3, 1), np.float32))
