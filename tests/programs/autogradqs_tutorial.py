# PyTorch's "Learn the Basics" tutorial "Automatic Differentiation with torch.autograd"
# (autogradqs_tutorial.py): a one-layer network's binary cross-entropy loss, grad_fn,
# backward into w.grad and b.grad, requires_grad under torch.no_grad() and after detach(),
# and the optional part on tensor gradients and Jacobian products (backward with a gradient
# argument, retain_graph, accumulation and zeroing). The module-level code in one function
# that returns what it printed.
import torch


def main():
    seen = {}
    x = torch.ones(5)  # input tensor
    y = torch.zeros(3)  # expected output
    w = torch.randn(5, 3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    z = torch.matmul(x, w)+b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    seen.update(x=x, y=y, w=w, b=b, z=z, loss=loss)

    ######################################################################
    # Tensors, Functions and Computational graph
    # ------------------------------------------

    print(f"Gradient function for z = {z.grad_fn}")
    print(f"Gradient function for loss = {loss.grad_fn}")

    ######################################################################
    # Computing Gradients
    # -------------------

    loss.backward()
    print(w.grad)
    print(b.grad)

    ######################################################################
    # Disabling Gradient Tracking
    # ---------------------------

    z = torch.matmul(x, w)+b
    print(z.requires_grad)
    seen["tracked"] = z.requires_grad

    with torch.no_grad():
        z = torch.matmul(x, w)+b
    print(z.requires_grad)
    seen["no_grad"] = z.requires_grad

    ######################################################################
    # Another way to achieve the same result is to use the ``detach()`` method on the tensor:
    #

    z = torch.matmul(x, w)+b
    z_det = z.detach()
    print(z_det.requires_grad)
    seen["detached"] = z_det.requires_grad

    ######################################################################
    # Optional Reading: Tensor Gradients and Jacobian Products
    # --------------------------------------------------------

    inp = torch.eye(4, 5, requires_grad=True)
    out = (inp+1).pow(2).t()
    out.backward(torch.ones_like(out), retain_graph=True)
    print(f"First call\n{inp.grad}")
    seen["first_call"] = inp.grad.clone()
    out.backward(torch.ones_like(out), retain_graph=True)
    print(f"\nSecond call\n{inp.grad}")
    seen["second_call"] = inp.grad.clone()
    inp.grad.zero_()
    out.backward(torch.ones_like(out), retain_graph=True)
    print(f"\nCall after zeroing gradients\n{inp.grad}")
    seen["after_zeroing"] = inp.grad.clone()
    return seen


if __name__ == "__main__":
    main()
