# PyTorch's examples mnist_forward_forward/main.py (Hinton's Forward-Forward algorithm):
# overlay_y_on_x writing the label into the first 10 pixels with x_[range(n), y] = x.max(),
# Layer(nn.Linear) with its own Adam and an overridden train(x_pos, x_neg), goodness
# h.pow(2).mean(1), loss log(1 + exp(cat([-g_pos + threshold, g_neg - threshold]))).mean(),
# predict by argmax of the summed goodness per label, negatives by torch.randperm.
# MNIST is replaced by synthetic flattened 10x10 images of 10 classes.
import argparse
import time

import torch
import torch.nn as nn
from torch.optim import Adam


def get_y_neg(y):
    y_neg = y.clone()
    for idx, y_samp in enumerate(y):
        allowed_indices = list(range(10))
        allowed_indices.remove(y_samp.item())
        y_neg[idx] = torch.tensor(allowed_indices)[
            torch.randint(len(allowed_indices), size=(1,))
        ].item()
    return y_neg.to(device)


def overlay_y_on_x(x, y, classes=10):
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Net(torch.nn.Module):
    def __init__(self, dims):

        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1]).to(device)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        losses = []
        for i, layer in enumerate(self.layers):
            print("training layer: ", i)
            h_pos, h_neg, layer_losses = layer.train(h_pos, h_neg)
            losses.append(layer_losses)
        return losses


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=args.lr)
        self.threshold = args.threshold
        self.num_epochs = args.epochs

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        losses = []
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            # The following loss pushes pos (neg) samples to
            # values larger (smaller) than the self.threshold.
            loss = torch.log(
                1
                + torch.exp(
                    torch.cat([-g_pos + self.threshold, g_neg - self.threshold])
                )
            ).mean()
            self.opt.zero_grad()
            # this backward just compute the derivative and hence
            # is not considered backpropagation.
            loss.backward()
            self.opt.step()
            losses.append(loss.item())
            if i % args.log_interval == 0:
                print("Loss: ", loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach(), losses


def synthetic_mnist(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 10
    protos = torch.rand(10, 100, generator=torch.Generator().manual_seed(123))
    x = protos[y] + 0.2 * torch.randn(n, 100, generator=g)
    return (x - 0.1307) / 0.3081, y


def main(argv=None):
    global args, device
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=200,
                        help="number of epochs to train (default: 200)")
    parser.add_argument("--lr", type=float, default=0.03,
                        help="learning rate (default: 0.03)")
    parser.add_argument("--no_cuda", action="store_true", default=False,
                        help="disables CUDA training")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default: 1)")
    parser.add_argument("--train_size", type=int, default=200, help="size of training set")
    parser.add_argument("--threshold", type=float, default=2,
                        help="threshold for training")
    parser.add_argument("--test_size", type=int, default=100, help="size of test set")
    parser.add_argument("--log_interval", type=int, default=50,
                        help="logging interval")
    args = parser.parse_args(argv)
    use_cuda = not args.no_cuda and torch.cuda.is_available()
    if use_cuda:
        device = torch.device("cuda")
    else:
        device = torch.device("cpu")
    torch.manual_seed(args.seed)

    x, y = synthetic_mnist(args.train_size, 0)
    x, y = x.to(device), y.to(device)
    x_te, y_te = synthetic_mnist(args.test_size, 1)
    x_te, y_te = x_te.to(device), y_te.to(device)
    net = Net([100, 50, 50])
    x_pos = overlay_y_on_x(x, y)
    y_neg = get_y_neg(y)
    x_neg = overlay_y_on_x(x, y_neg)
    start = time.time()
    losses = net.train(x_pos, x_neg)
    print("time: ", time.time() - start)
    train_error = 1.0 - net.predict(x).eq(y).float().mean().item()
    print("train error:", train_error)
    test_error = 1.0 - net.predict(x_te).eq(y_te).float().mean().item()
    print("test error:", test_error)
    return net, losses, train_error, test_error


if __name__ == "__main__":
    main()
