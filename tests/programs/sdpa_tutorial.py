# PyTorch's tutorial "(Beta) Implementing High-Performance Transformers with Scaled Dot Product
# Attention (SDPA)" (scaled_dot_product_attention_tutorial.py): F.scaled_dot_product_attention
# on its own, timed with torch.utils.benchmark's Timer under each sdpa_kernel backend
# (SDPBackend.MATH, FLASH_ATTENTION, EFFICIENT_ATTENTION; a backend that cannot run raises
# RuntimeError, which the tutorial catches), the CausalSelfAttention module (nanoGPT's: one
# c_attn projection chunked into query, key and value, heads moved to the batch dim,
# is_causal in training only), the module compiled with torch.compile, and the attention bias
# subclasses causal_upper_left / causal_lower_right of torch.nn.attention.bias. The sizes
# and dtype are parameters (the tutorial: float16 on CUDA, sequences of 1024); the
# NestedTensor and profiler sections are left out.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.benchmark as benchmark
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right, causal_upper_left

device = "cuda" if torch.cuda.is_available() else "cpu"


# Lets define a helpful benchmarking function:
def benchmark_torch_function_in_microseconds(f, *args, **kwargs):
    t0 = benchmark.Timer(
        stmt="f(*args, **kwargs)", globals={"args": args, "kwargs": kwargs, "f": f}
    )
    return t0.blocked_autorange().mean * 1e6


def example_usage():
    # Example Usage:
    query, key, value = (torch.randn(2, 3, 8, device=device),
                         torch.randn(2, 3, 8, device=device),
                         torch.randn(2, 3, 8, device=device))
    return query, key, value, F.scaled_dot_product_attention(query, key, value)


def backends(batch_size=32, max_sequence_len=1024, num_heads=32, embed_dimension=32,
             dtype=torch.float16):
    # Lets define the hyper-parameters of our input
    query = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension,
                       device=device, dtype=dtype)
    key = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension,
                     device=device, dtype=dtype)
    value = torch.rand(batch_size, num_heads, max_sequence_len, embed_dimension,
                       device=device, dtype=dtype)

    print(f"The default implementation runs in "
          f"{benchmark_torch_function_in_microseconds(F.scaled_dot_product_attention, query, key, value):.3f} microseconds")

    # Lets explore the speed of each of the 3 implementations
    times = {}
    with sdpa_kernel(SDPBackend.MATH):
        math_time = benchmark_torch_function_in_microseconds(
            F.scaled_dot_product_attention, query, key, value)
        print(f"The math implementation runs in {math_time:.3f} microseconds")
        times["math"] = math_time

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        try:
            flash_time = benchmark_torch_function_in_microseconds(
                F.scaled_dot_product_attention, query, key, value)
            print(f"The flash attention implementation runs in {flash_time:.3f} "
                  f"microseconds")
            times["flash"] = flash_time
        except RuntimeError:
            print("FlashAttention is not supported. See warnings for reasons.")

    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
        try:
            efficient_time = benchmark_torch_function_in_microseconds(
                F.scaled_dot_product_attention, query, key, value)
            print(f"The memory efficient implementation runs in {efficient_time:.3f} "
                  f"microseconds")
            times["efficient"] = efficient_time
        except RuntimeError:
            print("EfficientAttention is not supported. See warnings for reasons.")
    return times


######################################################################
# Causal Self Attention
# ~~~~~~~~~~~~~~~~~~~~~
#
# Below is an example implementation of a multi-headed causal self
# attention block inspired by
# `Andrej Karpathy NanoGPT <https://github.com/karpathy/nanoGPT>`__ repository.

class CausalSelfAttention(nn.Module):

    def __init__(self, num_heads: int, embed_dimension: int, bias: bool = False,
                 is_causal: bool = False, dropout: float = 0.0):
        super().__init__()
        assert embed_dimension % num_heads == 0
        # key, query, value projections for all heads, but in a batch
        self.c_attn = nn.Linear(embed_dimension, 3 * embed_dimension, bias=bias)
        # output projection
        self.c_proj = nn.Linear(embed_dimension, embed_dimension, bias=bias)
        # regularization
        self.dropout = dropout
        self.resid_dropout = nn.Dropout(dropout)
        self.num_heads = num_heads
        self.embed_dimension = embed_dimension
        # Perform causal masking
        self.is_causal = is_causal

    def forward(self, x):
        # calculate query, key, values for all heads in batch and move head forward to be
        # the batch dim
        query_projected = self.c_attn(x)

        batch_size = query_projected.size(0)
        embed_dim = query_projected.size(2)
        head_dim = embed_dim // (self.num_heads * 3)

        query, key, value = query_projected.chunk(3, -1)
        query = query.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
        key = key.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)
        value = value.view(batch_size, -1, self.num_heads, head_dim).transpose(1, 2)

        if self.training:
            dropout = self.dropout
            is_causal = self.is_causal
        else:
            dropout = 0.0
            is_causal = False

        y = F.scaled_dot_product_attention(query, key, value, attn_mask=None,
                                           dropout_p=dropout, is_causal=is_causal)
        y = y.transpose(1, 2).view(batch_size, -1, self.num_heads * head_dim)

        y = self.resid_dropout(self.c_proj(y))
        return y


def causal_self_attention(num_heads=8, heads_per_dim=64, batch_size=32,
                          max_sequence_len=256, dtype=torch.float16):
    embed_dimension = num_heads * heads_per_dim
    model = CausalSelfAttention(num_heads=num_heads, embed_dimension=embed_dimension,
                                bias=False, is_causal=True, dropout=0.1).to(device).to(
                                    dtype).eval()
    print(model)

    ######################################################################
    # Using SDPA with ``torch.compile``
    # =================================

    x = torch.rand(batch_size, max_sequence_len, embed_dimension, device=device,
                   dtype=dtype)
    print(f"The non compiled module runs in  "
          f"{benchmark_torch_function_in_microseconds(model, x):.3f} microseconds")

    compiled_model = torch.compile(model)
    # Let's compile it
    compiled_model(x)
    print(f"The compiled module runs in  "
          f"{benchmark_torch_function_in_microseconds(compiled_model, x):.3f} microseconds")
    return model, x, compiled_model(x)


######################################################################
# Using SDPA with attn_bias subclasses
# ==========================================

def attn_bias(batch_size=32, sequence_length_q=2, sequence_length_kv=10, num_heads=16,
              embed_dimension=32, dtype=torch.float16):
    query = torch.rand(batch_size, num_heads, sequence_length_q, embed_dimension,
                       device=device, dtype=dtype)
    key = torch.rand(batch_size, num_heads, sequence_length_kv, embed_dimension,
                     device=device, dtype=dtype)
    value = torch.rand(batch_size, num_heads, sequence_length_kv, embed_dimension,
                       device=device, dtype=dtype)
    upper_left_bias = causal_upper_left(sequence_length_q, sequence_length_kv)
    lower_right_bias = causal_lower_right(sequence_length_q, sequence_length_kv)

    print(type(upper_left_bias))
    print(type(lower_right_bias))

    assert type(upper_left_bias) == type(lower_right_bias)
    assert issubclass(type(upper_left_bias), torch.Tensor)

    # As you can see from the previous output, are the same type
    # ``torch.nn.attention.bias.CausalBias`` and subclass ``torch.Tensor``

    # Lets see what these tensors look like
    print(upper_left_bias)
    print(lower_right_bias)

    # Upper Left Bias aligns the causal attention mask to the upper left corner of the
    # attention scores matrix. This only has an impact when the attention scores matrix is
    # not square, which is common for decoding use cases. Another way of thinking about
    # this concept is that when you use upper left bias, the 0th token in the query is
    # aligned to the 0th token in the key, while for lower right bias, Assuming the
    # attention score matrix is two dimensional, ``attn_score[0][0]`` is the attention score
    # between the 0th token in the query and the 0th token in the key. For lower right bias,
    # the sequence of q is aligned so that the last token in q is aligned to the last token
    # in k (for example, ``attn_score[-1][-1])`` is all True since the last token in q is at
    # the same position as the last token in k even if the sequence length of q and k are
    # different.

    # These objects are intended to be used with sdpa
    out_upper_left = F.scaled_dot_product_attention(query, key, value, upper_left_bias)
    out_lower_right = F.scaled_dot_product_attention(query, key, value, lower_right_bias)
    out_is_causal = F.scaled_dot_product_attention(query, key, value, is_causal=True)

    assert torch.allclose(out_upper_left, out_is_causal)
    assert not torch.allclose(out_upper_left, out_lower_right)

    # These attention biases should also be compatible with torch.compile
    compiled_sdpa = torch.compile(F.scaled_dot_product_attention, fullgraph=True)
    out_upper_left_compiled = compiled_sdpa(query, key, value, upper_left_bias)
    return (query, key, value, upper_left_bias, lower_right_bias, out_upper_left,
            out_lower_right, out_is_causal, out_upper_left_compiled)


def main(dtype=torch.float16, small=False):
    torch.manual_seed(0)
    sizes = dict(batch_size=2, max_sequence_len=16, num_heads=2, embed_dimension=8) \
        if small else {}
    example_usage()
    backends(dtype=dtype, **sizes)
    sizes = dict(num_heads=2, heads_per_dim=4, batch_size=2, max_sequence_len=8) \
        if small else {}
    causal_self_attention(dtype=dtype, **sizes)
    attn_bias(dtype=dtype, **(dict(batch_size=2, num_heads=2, embed_dimension=8)
                              if small else {}))


if __name__ == "__main__":
    main()
