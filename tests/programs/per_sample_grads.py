# PyTorch's tutorial "Per-sample-gradients" (torch.func): a SimpleCNN on MNIST-shaped data,
# per-sample gradients first by a loop of autograd.grad over the examples, then with
# functional_call, grad and vmap(in_dims=(None, None, 0, 0)), and the two compared. The
# tutorial's module-level code, in functions (device a parameter) so a test can run it small.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, vmap, grad

torch.manual_seed(0)


# Here's a simple CNN and loss function:

class SimpleCNN(nn.Module):
    def __init__(self):
        super(SimpleCNN, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


def make_data(batch_size=64, device='cpu'):
    # Let's generate a batch of dummy data and pretend that we're working with an MNIST
    # dataset. The dummy images are 28 by 28 and we use a minibatch of size 64.
    data = torch.randn(batch_size, 1, 28, 28, device=device)
    targets = torch.randint(10, (batch_size,), device=device)
    return data, targets


def compute_grad(model, sample, target):
    sample = sample.unsqueeze(0)  # prepend batch dimension for processing
    target = target.unsqueeze(0)

    prediction = model(sample)
    loss = loss_fn(prediction, target)

    return torch.autograd.grad(loss, list(model.parameters()))


def compute_sample_grads(model, data, targets, batch_size):
    """ manually process each sample with per sample gradient """
    sample_grads = [compute_grad(model, data[i], targets[i]) for i in range(batch_size)]
    sample_grads = zip(*sample_grads)
    sample_grads = [torch.stack(shards) for shards in sample_grads]
    return sample_grads


def ft_per_sample_grads_of(model, data, targets):
    # torch.func.functional_call needs the parameters and buffers as dictionaries; detach
    # them, since gradient tracking is left to the transforms
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)

        predictions = functional_call(model, (params, buffers), (batch,))
        loss = loss_fn(predictions, targets)
        return loss

    ft_compute_grad = grad(compute_loss)
    ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
    ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
    return ft_per_sample_grads


def main(batch_size=64, device='cpu'):
    data, targets = make_data(batch_size, device)
    model = SimpleCNN().to(device=device)

    predictions = model(data)  # move the entire mini-batch through the model

    loss = loss_fn(predictions, targets)
    loss.backward()  # back propagate the 'average' gradient of this mini-batch

    per_sample_grads = compute_sample_grads(model, data, targets, batch_size)
    print(per_sample_grads[0].shape)

    ft_per_sample_grads = ft_per_sample_grads_of(model, data, targets)

    # we can double check that the results using grad and vmap match the results of
    # hand processing each one individually:
    for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads,
                                                   ft_per_sample_grads.values()):
        assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
    return model, data, targets, per_sample_grads, ft_per_sample_grads


if __name__ == "__main__":
    main()
