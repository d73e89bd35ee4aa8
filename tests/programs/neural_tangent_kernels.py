# PyTorch's tutorial "Neural Tangent Kernels" (torch.func): the empirical NTK of a small CNN
# computed two ways, by Jacobian contraction (vmap(jacrev(fnet_single)) and einsum, 'full',
# 'trace' and 'diagonal') and by NTK-vector products (vjp, jvp and a vmap over the identity's
# rows, nested vmaps over the data points), and the two compared under
# torch.backends.cudnn.flags(allow_tf32=False). The tutorial's 32x32 images are a parameter
# (the Linear layer's width follows them) and the data sizes are parameters, so a test can run
# it small.
import torch
import torch.nn as nn
from torch.func import functional_call, vmap, vjp, jvp, jacrev


class CNN(nn.Module):
    def __init__(self, image_size=32):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, (3, 3))
        self.conv2 = nn.Conv2d(32, 32, (3, 3))
        self.conv3 = nn.Conv2d(32, 32, (3, 3))
        self.fc = nn.Linear(32 * (image_size - 6) ** 2, 10)  # 21632 for 32x32 images

    def forward(self, x):
        x = self.conv1(x)
        x = x.relu()
        x = self.conv2(x)
        x = x.relu()
        x = self.conv3(x)
        x = x.flatten(1)
        x = self.fc(x)
        return x


def empirical_ntk_jacobian_contraction(fnet_single, params, x1, x2, compute='full'):
    # Compute J(x1)
    jac1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    jac1 = jac1.values()
    jac1 = [j.flatten(2) for j in jac1]

    # Compute J(x2)
    jac2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    jac2 = jac2.values()
    jac2 = [j.flatten(2) for j in jac2]

    # Compute J(x1) @ J(x2).T
    einsum_expr = None
    if compute == 'full':
        einsum_expr = 'Naf,Mbf->NMab'
    elif compute == 'trace':
        einsum_expr = 'Naf,Maf->NM'
    elif compute == 'diagonal':
        einsum_expr = 'Naf,Maf->NMa'
    else:
        assert False

    result = torch.stack([torch.einsum(einsum_expr, j1, j2) for j1, j2 in zip(jac1, jac2)])
    result = result.sum(0)
    return result


def empirical_ntk_ntk_vps(func, params, x1, x2, compute='full'):
    def get_ntk(x1, x2):
        def func_x1(params):
            return func(params, x1)

        def func_x2(params):
            return func(params, x2)

        output, vjp_fn = vjp(func_x1, params)

        def get_ntk_slice(vec):
            # This computes ``vec @ J(x2).T``
            # `vec` is some unit vector (a single slice of the Identity matrix)
            vjps = vjp_fn(vec)
            # This computes ``J(X1) @ vjps``
            _, jvps = jvp(func_x2, (params,), vjps)
            return jvps

        # Here's our identity matrix
        basis = torch.eye(output.numel(), dtype=output.dtype,
                          device=output.device).view(output.numel(), -1)
        return vmap(get_ntk_slice)(basis)

    # ``get_ntk(x1, x2)`` computes the NTK for a single data point x1, x2
    # Since the x1, x2 inputs to ``empirical_ntk_ntk_vps`` are batched,
    # we actually wish to compute the NTK between every pair of data points
    # between {x1} and {x2}. That's what the ``vmaps`` here do.
    result = vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)

    if compute == 'full':
        return result
    if compute == 'trace':
        return torch.einsum('NMKK->NM', result)
    if compute == 'diagonal':
        return torch.einsum('NMKK->NMK', result)


def main(device='cpu', n_train=20, n_test=5, image_size=32):
    torch.manual_seed(0)
    ######################################################################
    # Let's generate some random data

    x_train = torch.randn(n_train, 3, image_size, image_size, device=device)
    x_test = torch.randn(n_test, 3, image_size, image_size, device=device)

    ######################################################################
    # Create a function version of the model
    # --------------------------------------

    net = CNN(image_size).to(device)

    # Detaching the parameters because we won't be calling Tensor.backward().
    params = {k: v.detach() for k, v in net.named_parameters()}

    def fnet_single(params, x):
        return functional_call(net, params, (x.unsqueeze(0),)).squeeze(0)

    ######################################################################
    # Compute the NTK: method 1 (Jacobian Contraction)
    # ------------------------------------------------

    result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test)
    print(result.shape)
    results = {"full": result}

    result = empirical_ntk_jacobian_contraction(fnet_single, params, x_train, x_test,
                                                'trace')
    print(result.shape)
    results["trace"] = result
    results["diagonal"] = empirical_ntk_jacobian_contraction(fnet_single, params, x_train,
                                                             x_test, 'diagonal')

    ######################################################################
    # Compute the NTK: method 2 (NTK-vector products)
    # -----------------------------------------------

    # Disable TensorFloat-32 for convolutions on Ampere+ GPUs to sacrifice performance in
    # favor of accuracy
    with torch.backends.cudnn.flags(allow_tf32=False):
        result_from_jacobian_contraction = empirical_ntk_jacobian_contraction(
            fnet_single, params, x_test, x_test)
        result_from_ntk_vps = empirical_ntk_ntk_vps(fnet_single, params, x_test, x_test)

    assert torch.allclose(result_from_jacobian_contraction, result_from_ntk_vps, atol=1e-5)
    results["vps"] = result_from_ntk_vps
    results["vps_trace"] = empirical_ntk_ntk_vps(fnet_single, params, x_test, x_test,
                                                 'trace')
    return net, x_train, x_test, results


if __name__ == "__main__":
    main()
