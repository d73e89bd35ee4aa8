"""Feature extraction, Grad-CAM and activation statistics with module hooks.

The patterns of the PyTorch forums and tutorials: a dict filled by forward hooks
(``get_activation(name)``), Grad-CAM from a forward hook (the layer's output) and a full
backward hook (the gradient of the class score with respect to it), and per-layer statistics
from the global forward hook. The digits at 16x16 stand in for a downloaded dataset.
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from local_data import digits16


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


activation = {}


def get_activation(name):
    def hook(model, input, output):
        activation[name] = output.detach()
    return hook


class GradCAM:
    def __init__(self, model, layer):
        self.model = model
        self.activations = None
        self.gradients = None
        self.handles = [layer.register_forward_hook(self.save_activation),
                        layer.register_full_backward_hook(self.save_gradient)]

    def save_activation(self, module, input, output):
        self.activations = output.detach()

    def save_gradient(self, module, grad_input, grad_output):
        self.gradients = grad_output[0].detach()

    def __call__(self, x, class_idx=None):
        self.model.zero_grad()
        out = self.model(x)
        if class_idx is None:
            class_idx = out.argmax(dim=1)
        score = out.gather(1, class_idx.view(-1, 1)).sum()
        score.backward()
        weights = self.gradients.mean(dim=(2, 3), keepdim=True)
        cam = F.relu((weights * self.activations).sum(dim=1))
        cam = cam / (cam.amax(dim=(1, 2), keepdim=True) + 1e-8)
        return cam, class_idx

    def remove(self):
        for h in self.handles:
            h.remove()


def activation_stats(model, x):
    names = {m: n for n, m in model.named_modules() if isinstance(m, (nn.Conv2d, nn.Linear))}
    stats = {}

    def hook(module, input, output):
        if module in names:
            stats[names[module]] = (output.mean().item(), output.std().item(),
                                    (output > 0).float().mean().item())

    handle = nn.modules.module.register_module_forward_hook(hook)
    with torch.no_grad():
        model(x)
    handle.remove()
    return stats


def train(model, loader, optimizer, steps):
    model.train()
    losses = []
    for step, (data, target) in enumerate(loader):
        if step == steps:
            break
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(argv=None):
    parser = argparse.ArgumentParser(description="feature extraction with hooks")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    images, labels = digits16(train=True, n=args.steps * args.batch_size)
    loader = DataLoader(TensorDataset(torch.from_numpy(images), torch.from_numpy(labels)),
                        batch_size=args.batch_size, shuffle=True)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = train(model, loader, optimizer, args.steps)
    print(f"loss: first {losses[0]:.4f} last {losses[-1]:.4f}")

    model.eval()
    x = torch.from_numpy(digits16(train=False, n=8)[0])
    handles = [model.conv1.register_forward_hook(get_activation("conv1")),
               model.conv2.register_forward_hook(get_activation("conv2")),
               model.fc.register_forward_hook(get_activation("fc"))]
    with torch.no_grad():
        logits = model(x)
    for h in handles:
        h.remove()
    for name, feat in activation.items():
        print(f"{name}: {tuple(feat.shape)}")

    cam = GradCAM(model, model.conv2)
    heatmap, predicted = cam(x)
    cam.remove()
    print(f"grad-cam: {tuple(heatmap.shape)}, predicted {predicted.tolist()}")

    stats = activation_stats(model, x)
    for name, (mean, std, active) in stats.items():
        print(f"{name}: mean {mean:.3f} std {std:.3f} active {active:.2f}")
    return model, dict(activation), logits, heatmap, stats, losses


if __name__ == "__main__":
    main()
