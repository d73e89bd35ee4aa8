# PyTorch's "Pruning Tutorial" (Michela Paganini): LeNet, pruning one module
# (random_unstructured, l1_unstructured on a bias, ln_structured on top: a PruningContainer),
# the state_dict of a pruned model, prune.remove, pruning many modules (l1 per layer type),
# global pruning (global_unstructured with L1Unstructured) and a custom pruning method
# (FooBarPruningMethod). The tutorial's code, in functions returning what it prints; a short
# training of the globally pruned LeNet is added (the tutorial stops at the masks).
import torch
from torch import nn
import torch.nn.utils.prune as prune
import torch.nn.functional as F

device = torch.device("cpu")


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        # 1 input image channel, 6 output channels, 5x5 square conv kernel
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)  # 5x5 image dimension
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def prune_one_module(model):
    module = model.conv1
    print(list(module.named_parameters()))
    print(list(module.named_buffers()))
    prune.random_unstructured(module, name="weight", amount=0.3)
    print(list(module.named_parameters()))
    print(list(module.named_buffers()))
    print(module.weight)
    print(module._forward_pre_hooks)
    prune.l1_unstructured(module, name="bias", amount=3)
    print(list(module.named_parameters()))
    print(list(module.named_buffers()))
    print(module.bias)
    print(module._forward_pre_hooks)
    # Iterative pruning
    prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
    # As we can verify, this will zero out all the connections corresponding to
    # 50% (3 out of 6) of the channels, while preserving the action of the
    # previous mask.
    print(module.weight)
    for hook in module._forward_pre_hooks.values():
        if hook._tensor_name == "weight":  # select out the correct hook
            break
    print(list(hook))  # pruning history in the container
    history = [type(h).__name__ for h in hook]
    # Serializing a pruned model
    keys = list(model.state_dict().keys())
    print(model.state_dict().keys())
    # Remove pruning re-parametrization
    print(list(module.named_parameters()))
    print(list(module.named_buffers()))
    print(module.weight)
    prune.remove(module, 'weight')
    print(list(module.named_parameters()))
    print(list(module.named_buffers()))
    print(module.weight)
    return history, keys


def prune_many(new_model):
    for name, module in new_model.named_modules():
        # prune 20% of connections in all 2D-conv layers
        if isinstance(module, torch.nn.Conv2d):
            prune.l1_unstructured(module, name='weight', amount=0.2)
        # prune 40% of connections in all linear layers
        elif isinstance(module, torch.nn.Linear):
            prune.l1_unstructured(module, name='weight', amount=0.4)
    print(dict(new_model.named_buffers()).keys())  # to verify that all masks exist
    return list(dict(new_model.named_buffers()).keys())


def global_pruning(model):
    parameters_to_prune = (
        (model.conv1, 'weight'),
        (model.conv2, 'weight'),
        (model.fc1, 'weight'),
        (model.fc2, 'weight'),
        (model.fc3, 'weight'),
    )
    prune.global_unstructured(
        parameters_to_prune,
        pruning_method=prune.L1Unstructured,
        amount=0.2,
    )
    sparsity = []
    for name in ("conv1", "conv2", "fc1", "fc2", "fc3"):
        w = getattr(model, name).weight
        sparsity.append(100. * float(torch.sum(w == 0)) / float(w.nelement()))
        print("Sparsity in {}.weight: {:.2f}%".format(name, sparsity[-1]))
    total = sum(float(torch.sum(getattr(model, n).weight == 0)) for n in
                ("conv1", "conv2", "fc1", "fc2", "fc3"))
    nel = sum(float(getattr(model, n).weight.nelement()) for n in
              ("conv1", "conv2", "fc1", "fc2", "fc3"))
    print("Global sparsity: {:.2f}%".format(100. * total / nel))
    return sparsity, 100. * total / nel


class FooBarPruningMethod(prune.BasePruningMethod):
    """Prune every other entry in a tensor
    """
    PRUNING_TYPE = 'unstructured'

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


def foobar_unstructured(module, name):
    """Prunes tensor corresponding to parameter called `name` in `module`
    by removing every other entry in the tensors.
    """
    FooBarPruningMethod.apply(module, name)
    return module


def digits(n=64):
    # a deterministic 32x32 "dataset": the class is the position of a bright square
    g = torch.Generator().manual_seed(0)
    y = torch.arange(n) % 10
    x = 0.1 * torch.randn(n, 1, 32, 32, generator=g)
    for i in range(n):
        r, c = divmod(int(y[i]), 5)
        x[i, 0, 4 + 12 * r:12 + 12 * r, 2 + 6 * c:6 + 6 * c] += 1.0
    return x, y


def train_pruned(model, x, y, steps=20, lr=0.05):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(0)
    model = LeNet().to(device=device)
    history, keys = prune_one_module(model)
    buffers = prune_many(LeNet())
    model = LeNet()
    sparsity, global_sparsity = global_pruning(model)
    x, y = digits()
    losses = train_pruned(model, x, y)
    print("loss before / after training the pruned LeNet: {:.4f} / {:.4f}".format(
        losses[0], losses[-1]))
    still_zero = float(torch.sum(model.fc1.weight == 0))
    model = LeNet()
    foobar_unstructured(model.fc3, name='bias')
    print(model.fc3.bias_mask)
    return history, keys, buffers, sparsity, global_sparsity, losses, still_zero, \
        model.fc3.bias_mask


if __name__ == "__main__":
    main()
