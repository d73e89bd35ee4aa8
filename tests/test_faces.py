"""The package faces (clgrad, clgrad.nn.functional, Tensor's methods): every public name is in
``__all__`` (Tensor's methods: ``_tensor_methods.METHODS``), and every public function given a
NumPy array where PyTorch requires a Tensor raises PyTorch's TypeError, naming the argument as
PyTorch does
(``relu(): argument 'input' (position 1) must be Tensor, not numpy.ndarray``)."""
import inspect
import re

import numpy as np
import pytest

import clgrad
import clgrad._tensor_methods as methods
import clgrad.nn.functional as F

FACES = {"clgrad": clgrad, "clgrad.nn.functional": F}

# Public functions that take no Tensor (creation, seeds, devices, serialization, grad mode):
# PyTorch raises no "must be Tensor" for them either.
NO_TENSOR = {"tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "arange",
             "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm",
             "manual_seed",
             "initial_seed", "seed", "normal", "is_tensor", "devices", "default_device",
             "set_default_device", "get_default_device", "synchronize", "memory_allocated",
             "save", "load", "einsum",
             "is_grad_enabled", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
             "are_deterministic_algorithms_enabled", "compile",
             "get_default_dtype", "set_default_dtype", "get_float32_matmul_precision",
             "get_num_threads",
             "get_rng_state", "is_autocast_enabled", "get_autocast_dtype",
             "set_float32_matmul_precision", "set_num_threads", "use_deterministic_algorithms",
             "set_printoptions",
             "get_printoptions", "printoptions", "promote_types", "can_cast", "tril_indices",
             "triu_indices", "set_default_tensor_type", "broadcast_shapes", "range",
             "scalar_tensor", "empty_strided", "asarray", "hann_window", "hamming_window",
             "blackman_window", "bartlett_window", "kaiser_window",
             "vmap"}  # vmap takes a function (torch.vmap too)
# torch's docstring names other arguments than its argument parser (whose TypeError a user sees:
# true_divide(dividend, divisor) in the docs, 'input'/'other' in the error): the error wins.
# repeat_interleave(input, repeats...) in the docs; its one-argument form names 'repeats'.
# result_type(tensor1, tensor2) in the docs, (tensor, other) in the parser.
# documented (B, L; matrix_exp's A) but parsed as input: checked by their messages instead
DOC_DIFFERS = {"true_divide", "repeat_interleave", "result_type",
               "cholesky_solve", "cholesky_inverse", "matrix_exp"}
# Ops whose TypeError for a NumPy array as first argument is not the "argument ... must be"
# form: PyTorch's own message (torch 2.x, checked against the installed torch below).
OWN_MESSAGE = {
    "broadcast_tensors": r"^expected Tensor as element 0 in argument 0, but got numpy\.ndarray$",
    "meshgrid": r"^expected Tensor as element 0 in argument 0, but got numpy\.ndarray$",
    "set_rng_state": r"^expected a torch\.ByteTensor, but got numpy\.ndarray$",
    **{n: rf"^{n}\(\) received an invalid combination of arguments - got \(numpy\.ndarray\)"
       for n in ("atleast_1d", "atleast_2d", "atleast_3d")},
    **{n: r"^expected Tensor as element 0 in argument 0, but got numpy\.ndarray$"
       for n in ("block_diag", "cartesian_prod", "chain_matmul")},
    "polygamma": r"^polygamma\(\): argument 'n' \(position 1\) must be int, not numpy\.ndarray$"}
# The arguments after the array where the op needs more to reach its check (PyTorch's torch
# checks polygamma's n before it misses input).
AFTER_ARRAY = {"polygamma": (clgrad.ones(2),)}
# PyTorch's name of the first Tensor argument where it is not 'input'.
FIRST = {"where": "condition", "split": "tensor", "cat": "tensors", "concat": "tensors",
         "stack": "tensors", "one_hot": "tensor", "numel": "input", "repeat_interleave": "repeats",
         "scaled_dot_product_attention": "query", "broadcast_tensors": "tensors",
         "meshgrid": "tensors", "set_rng_state": "new_state", "affine_grid": "theta",
         "result_type": "tensor", "bilinear": "input1", "margin_ranking_loss": "input1",
         "cosine_embedding_loss": "input1", "triplet_margin_loss": "anchor",
         "triplet_margin_with_distance_loss": "anchor",
         "cosine_similarity": "x1", "pairwise_distance": "x1", "gumbel_softmax": "logits",
         "tensordot": "a", "cdist": "x1", "chain_matmul": "matrices", "ctc_loss": "log_probs",
         **{n: "tensors" for n in ("hstack", "vstack", "row_stack", "dstack", "column_stack",
                                   "atleast_1d", "atleast_2d", "atleast_3d", "block_diag",
                                   "cartesian_prod")},
         "searchsorted": "sorted_sequence", "isin": "elements", "concatenate": "tensors",
         "trapezoid": "y", "trapz": "y", "cumulative_trapezoid": "y", "vander": "x",
         "polygamma": "n"}
# The clgrad face's (torch.<name>'s) first and second Tensor arguments where they are not
# nn.functional's (ATen's signature: torch.embedding(weight, indices)).
TORCH_FACE = {"embedding": ("weight", "indices"), "embedding_bag": ("weight", "indices")}
# A second Tensor argument: (name in PyTorch, position) for ops that take two.
SECOND = {"add": "other", "sub": "other", "mul": "other", "div": "other", "pow": "exponent",
          "maximum": "other", "minimum": "other", "eq": "other", "ne": "other", "lt": "other",
          "le": "other", "gt": "other", "ge": "other", "logical_and": "other",
          "logical_or": "other", "remainder": "other", "matmul": "other", "mm": "mat2",
          "bmm": "mat2", "dot": "tensor", "isclose": "other", "allclose": "other",
          "equal": "other", "masked_fill": "mask", "linear": "weight", "conv1d": "weight",
          "conv2d": "weight", "conv_transpose1d": "weight", "conv_transpose2d": "weight",
          "prelu": "weight", "embedding": "weight", "cross_entropy": "target",
          "nll_loss": "target", "mse_loss": "target", "l1_loss": "target",
          "smooth_l1_loss": "target", "huber_loss": "target", "binary_cross_entropy": "target",
          "binary_cross_entropy_with_logits": "target", "kl_div": "target", "atan2": "other",
          "arctan2": "other", "scaled_dot_product_attention": "key", "grid_sample": "grid",
          "bilinear": "input2"}
# Tensor methods taking a Tensor argument: (PyTorch's name, position after self).
METHOD_ARGS = {"add": ("other", 1), "sub": ("other", 1), "mul": ("other", 1),
               "div": ("other", 1), "maximum": ("other", 1), "minimum": ("other", 1),
               "eq": ("other", 1), "lt": ("other", 1), "logical_and": ("other", 1),
               "matmul": ("other", 1), "mm": ("mat2", 1), "dot": ("tensor", 1),
               "isclose": ("other", 1), "equal": ("other", 1), "masked_fill": ("mask", 1),
               "index_select": ("index", 2), "gather": ("index", 2),
               "scatter_add": ("index", 2), "atan2": ("other", 1), "arctan2": ("other", 1)}


def _public_functions():
    for face, mod in FACES.items():
        for name in mod.__all__:
            if inspect.isfunction(getattr(mod, name)) and name not in NO_TENSOR:
                yield pytest.param(mod, name, id=f"{face}.{name}")


def _first(mod, name):
    return TORCH_FACE[name][0] if mod is clgrad and name in TORCH_FACE else \
        FIRST.get(name, "input")


def _second(mod, name):
    return TORCH_FACE[name][1] if mod is clgrad and name in TORCH_FACE else SECOND[name]


def _message(fn, arg, pos, what="Tensor"):
    return rf"^{re.escape(fn.__name__)}\(\): argument '{arg}' \(position {pos}\) must be " \
           rf"{what}, not numpy\.ndarray$"


@pytest.mark.parametrize("face", [clgrad, F, methods], ids=lambda m: m.__name__)
def test_all_lists_exactly_the_public_names(face):
    listed = face.METHODS if face is methods else face.__all__
    names = set(listed)
    assert len(names) == len(listed), "a name twice in __all__"
    if face is methods:
        assert all(hasattr(clgrad.Tensor, n) for n in names)
        return
    assert all(hasattr(face, n) for n in names)
    public = {k for k, v in vars(face).items() if not k.startswith("_") and (
        callable(v) or inspect.ismodule(v)) and k not in ("annotations", "Tensor")}
    if face is clgrad:  # the submodules every package has (clgrad.ops, clgrad.creation...)
        public = {k for k in public if not (inspect.ismodule(getattr(face, k)) and
                                            getattr(face, k).__name__.startswith("clgrad."))}
        public |= {n for n in names if inspect.ismodule(getattr(face, n))}
    assert public <= names, f"public but not in __all__: {sorted(public - names)}"


@pytest.mark.parametrize("mod, name", list(_public_functions()))
def test_a_numpy_array_for_the_first_tensor_raises_pytorchs_type_error(mod, name):
    fn = getattr(mod, name)
    arg = _first(mod, name)
    what = "tuple of Tensors" if arg == "tensors" else "Tensor"
    with pytest.raises(TypeError, match=OWN_MESSAGE.get(name) or _message(fn, arg, 1, what)):
        fn(np.ones((2, 3)), *AFTER_ARRAY.get(name, ()))


@pytest.mark.parametrize("mod, name", [p for p in _public_functions()
                                       if p.values[1] in SECOND])
def test_a_numpy_array_for_the_second_tensor_raises_pytorchs_type_error(mod, name):
    fn = getattr(mod, name)
    with pytest.raises(TypeError, match=_message(fn, _second(mod, name), 2)):
        fn(clgrad.ones(2, 3), np.ones((2, 3)))


@pytest.mark.parametrize("name", sorted(METHOD_ARGS))
def test_tensor_methods_name_the_argument_as_pytorch(name):
    arg, pos = METHOD_ARGS[name]
    assert name in methods.METHODS
    args = (0,) * (pos - 1) + (np.ones((2, 3)),)
    with pytest.raises(TypeError, match=_message(getattr(clgrad.Tensor, name), arg, pos)):
        getattr(clgrad.ones(2, 3), name)(*args)


def test_numbers_stay_accepted_where_pytorch_takes_a_scalar():
    t = clgrad.tensor([1.0, 2.0])
    np.testing.assert_array_equal(clgrad.add(t, 2).numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(clgrad.where(t > 1, t, 0.0).numpy(), [0.0, 2.0])
    np.testing.assert_array_equal(t.mul(3).numpy(), [3.0, 6.0])
    assert clgrad.roll(t, 1).numpy().tolist() == [2.0, 1.0]


def test_the_names_agree_with_torchs_signatures():
    """FIRST/SECOND/METHOD_ARGS and the 'input' default are PyTorch's own parameter names."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF

    def names(tfn, name):
        try:
            return list(inspect.signature(tfn).parameters)
        except (TypeError, ValueError):
            m = re.search(rf"^\s*{name}\((.*?)\)", tfn.__doc__ or "", re.M)
            return [a.strip().split("=")[0].split(":")[0].strip(" *")
                    for a in m.group(1).split(",")] if m else None
    checked = 0
    for face, tmod in ((clgrad, torch), (F, TF)):
        for name in face.__all__:
            fn = getattr(face, name)
            tfn = getattr(tmod, name, None)
            if not inspect.isfunction(fn) or name in NO_TENSOR | DOC_DIFFERS or \
                    tfn is None:
                continue
            got = names(tfn, name)
            if not got or got[0] in ("args", "self"):
                continue
            assert got[0] == _first(face, name), name
            if name in SECOND:
                assert got[1] == _second(face, name), name
            checked += 1
    assert checked > 100


def test_own_messages_are_torchs():
    """OWN_MESSAGE is what the installed torch raises for the same call."""
    torch = pytest.importorskip("torch")
    for name, pattern in OWN_MESSAGE.items():
        with pytest.raises(TypeError, match=pattern):
            getattr(torch, name)(np.ones((2, 3)))
    t, c = torch.ones(2), clgrad.ones(2)
    for name in ("broadcast_tensors", "meshgrid"):
        with pytest.raises(TypeError) as want:
            getattr(torch, name)(t, np.ones(2))
        with pytest.raises(TypeError, match=f"^{re.escape(str(want.value))}$"):
            getattr(clgrad, name)(c, np.ones(2))
    with pytest.raises(TypeError) as want:
        torch.set_rng_state(torch.ones(3))
    with pytest.raises(TypeError, match=f"^{re.escape(str(want.value))}$"):
        clgrad.set_rng_state(clgrad.ones(3))


def test_h4_ops_keep_their_values_behind_the_checks():
    """The checked ops of issue 22 still compute: atan2 with a number (clgrad's extension; PyTorch
    requires Tensors), Tensor.arctan2 (bound under its own name), repeat_interleave's forms."""
    y, x = np.array([1.0, -2.0, 0.5]), np.array([3.0, 4.0, -1.0])
    np.testing.assert_allclose(clgrad.atan2(clgrad.tensor(y), 0.5).numpy(),
                               np.arctan2(y, 0.5), rtol=1e-6)
    np.testing.assert_allclose(clgrad.tensor(y).arctan2(clgrad.tensor(x)).numpy(),
                               np.arctan2(y, x), rtol=1e-6)
    assert clgrad.repeat_interleave(clgrad.tensor([1, 2])).numpy().tolist() == [0, 1, 1]
    assert clgrad.repeat_interleave(clgrad.tensor([5, 6]), 2).numpy().tolist() == [5, 5, 6, 6]
    with pytest.raises(TypeError, match=r"^repeat_interleave\(\): argument 'input' \(position 1\)"
                       r" must be Tensor, not numpy\.ndarray$"):
        clgrad.repeat_interleave(np.ones(2), 2)
