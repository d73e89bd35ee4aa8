# PyTorch's tutorial "Jacobians, Hessians, hvp, vhp, and more: composing function transforms"
# (torch.func): the Jacobian of predict(weight, bias, x) = tanh(linear(x)) row by row with
# autograd.grad, with vmap(vjp_fn) and with jacrev (argnums=2 and (0, 1)); jacfwd against
# jacrev; Hessians (hessian, jacfwd(jacfwd), jacrev(jacrev)); batch Jacobians and Hessians
# with vmap; hvp by jvp(grad(f)) and by vjp(grad(f)). The tutorial's code in functions (the
# sizes parameters, its Timer benchmarks left out) so a test can run each part.
import torch
import torch.nn.functional as F
from functools import partial
from torch.func import vmap, vjp, jvp, grad, jacrev, jacfwd, hessian

_ = torch.manual_seed(0)


# Let's start with a function that we'd like to compute the jacobian of. This is a simple
# linear function with non-linear activation.

def predict(weight, bias, x):
    return F.linear(x, weight, bias).tanh()


def jacobians(D=16):
    # Let's add some dummy data: a weight, a bias, and a feature vector x.
    weight = torch.randn(D, D)
    bias = torch.randn(D)
    x = torch.randn(D)  # feature vector

    # Let's think of predict as a function that maps the input x from R^D -> R^D. PyTorch
    # Autograd computes vector-Jacobian products. In order to compute the full Jacobian of
    # this R^D -> R^D function, we would have to compute it row-by-row by using a different
    # unit vector each time.
    def compute_jac(xp):
        jacobian_rows = [torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0]
                         for vec in unit_vectors]
        return torch.stack(jacobian_rows)

    xp = x.clone().requires_grad_()
    unit_vectors = torch.eye(D)

    jacobian = compute_jac(xp)

    print(jacobian.shape)
    print(jacobian[0])  # show first row

    # Instead of computing the jacobian row-by-row, we can use PyTorch's torch.vmap function
    # transform to get rid of the for-loop and vectorize the computation.
    _, vjp_fn = vjp(partial(predict, weight, bias), x)

    ft_jacobian, = vmap(vjp_fn)(unit_vectors)

    # let's confirm both methods compute the same result
    assert torch.allclose(ft_jacobian, jacobian)

    # torch.func.jacrev is a convenience function that performs the vmap-vjp trick for us
    ft_jacobian = jacrev(predict, argnums=2)(weight, bias, x)

    # Confirm by running the following:
    assert torch.allclose(ft_jacobian, jacobian)

    # we can compute jacobians with respect to the parameters as well
    ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)

    # Note that zipping together the rows is not necessary
    return jacobian, ft_jacobian, ft_jac_weight, ft_jac_bias, (weight, bias, x)


def reverse_vs_forward(Din=32, Dout=16):
    weight = torch.randn(Dout, Din)
    bias = torch.randn(Dout)
    x = torch.randn(Din)

    # jacfwd uses forward-mode AD, jacrev reverse-mode: the same jacobian
    jac_fwd = jacfwd(predict, argnums=2)(weight, bias, x)
    jac_rev = jacrev(predict, argnums=2)(weight, bias, x)
    assert torch.allclose(jac_fwd, jac_rev, atol=1e-6)
    return jac_fwd, jac_rev


def hessians(Din=16, Dout=8):
    # Computing the hessian is equivalent to computing the jacobian of the jacobian
    weight = torch.randn(Dout, Din)
    bias = torch.randn(Dout)
    x = torch.randn(Din)

    hess_api = hessian(predict, argnums=2)(weight, bias, x)
    hess_fwdfwd = jacfwd(jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
    hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)

    # Let's verify we have the same result regardless of using hessian API or using jacfwd(jacfwd())
    assert torch.allclose(hess_api, hess_fwdfwd, atol=1e-6)
    assert torch.allclose(hess_api, hess_revrev, atol=1e-6)
    return hess_api, (weight, bias, x)


def batch_jacobian(batch_size=64, Din=31, Dout=33):
    weight = torch.randn(Dout, Din)
    print(f"weight shape = {weight.shape}")

    bias = torch.randn(Dout)

    x = torch.randn(batch_size, Din)

    compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
    batch_jacobian0 = compute_batch_jacobian(weight, bias, x)

    # If you have a function that goes from (B, N) -> (B, M) instead and are certain that
    # each input produces an independent output, then it's also sometimes possible to do
    # this without using vmap by summing the outputs and then computing the Jacobian of
    # that function:
    def predict_with_output_summed(weight, bias, x):
        return predict(weight, bias, x).sum(0)

    batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, x).movedim(1, 0)
    assert torch.allclose(batch_jacobian0, batch_jacobian1)
    return batch_jacobian0, (weight, bias, x)


def batch_hessian(batch_size=4, Din=6, Dout=5):
    weight = torch.randn(Dout, Din)
    bias = torch.randn(Dout)
    x = torch.randn(batch_size, Din)

    # If you instead have a function that goes from (B, N) -> (B, M), you can compose vmap
    # with hessian:
    compute_batch_hessian = vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))

    batch_hess = compute_batch_hessian(weight, bias, x)
    print(batch_hess.shape)
    return batch_hess, (weight, bias, x)


# Computing Hessian-vector products: the naive way is to materialize the full Hessian and
# perform a dot-product with a vector. We can do better: combine reverse-mode AD with
# forward-mode AD (rather than reverse-mode with reverse-mode) to compute an hvp.

def hvp(f, primals, tangents):
    return jvp(grad(f), primals, tangents)[1]


def f(x):
    return x.sin().sum()


def hvp_revrev(f, primals, tangents):
    _, vjp_fn = vjp(grad(f), *primals)
    return vjp_fn(*tangents)


def hvps(n=2048):
    x = torch.randn(n)
    tangent = torch.randn(n)

    result = hvp(f, (x,), (tangent,))

    # If PyTorch forward-AD does not have coverage for your operations, then we can instead
    # compose reverse-mode AD with reverse-mode AD:
    result_hvp_revrev = hvp_revrev(f, (x,), (tangent,))
    assert torch.allclose(result, result_hvp_revrev[0])
    return result, x, tangent
