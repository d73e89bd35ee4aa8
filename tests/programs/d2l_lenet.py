# d2l.ai, chapters 3-7 as readers copy them into scripts: synthetic_data + load_array +
# linreg with nn.Sequential(nn.LazyLinear(1)) and `net[0].weight.data.normal_(0, 0.01)`; the
# MLP nn.Sequential(nn.Flatten(), nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10)) with
# init_weights applied by net.apply, CrossEntropyLoss(reduction='none'), an Accumulator and
# train_epoch_ch3; LeNet of LazyConv2d / AvgPool2d / Sigmoid with init_cnn
# (nn.init.xavier_uniform_) applied after a first forward pass, layer_summary, SGD.
# Fashion-MNIST is replaced by deterministic 28x28 "images" built from the label.
import math

import torch
from torch import nn
from torch.utils import data


def synthetic_data(w, b, num_examples):
    """Generate y = Xw + b + noise."""
    X = torch.normal(0, 1, (num_examples, len(w)))
    y = torch.matmul(X, w) + b
    y += torch.normal(0, 0.01, y.shape)
    return X, y.reshape((-1, 1))


def load_array(data_arrays, batch_size, is_train=True):
    """Construct a PyTorch data iterator."""
    dataset = data.TensorDataset(*data_arrays)
    return data.DataLoader(dataset, batch_size, shuffle=is_train)


def fashion_like(n, num_classes=10):
    """n 1x28x28 images: class k is a blurred stripe pattern of frequency k+1, deterministic."""
    y = torch.arange(n) % num_classes
    i = torch.arange(28, dtype=torch.float32)
    phase = torch.arange(n, dtype=torch.float32).reshape(-1, 1, 1, 1) * 0.37
    freq = (y.float() + 1).reshape(-1, 1, 1, 1) * (math.pi / 28)
    X = torch.sin(freq * i.reshape(1, 1, 28, 1) + phase) * torch.cos(i.reshape(1, 1, 1, 28) / 9)
    return (X + 1) / 2, y


class Accumulator:
    """For accumulating sums over `n` variables."""
    def __init__(self, n):
        self.data = [0.0] * n

    def add(self, *args):
        self.data = [a + float(b) for a, b in zip(self.data, args)]

    def reset(self):
        self.data = [0.0] * len(self.data)

    def __getitem__(self, idx):
        return self.data[idx]


def accuracy(y_hat, y):
    """Compute the number of correct predictions."""
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def evaluate_accuracy(net, data_iter):
    """Compute the accuracy for a model on a dataset."""
    if isinstance(net, torch.nn.Module):
        net.eval()  # Set the model to evaluation mode
    metric = Accumulator(2)  # No. of correct predictions, no. of predictions
    with torch.no_grad():
        for X, y in data_iter:
            metric.add(accuracy(net(X), y), y.numel())
    return metric[0] / metric[1]


def train_epoch_ch3(net, train_iter, loss, updater):
    """The training loop defined in Chapter 3."""
    if isinstance(net, torch.nn.Module):
        net.train()
    metric = Accumulator(3)
    for X, y in train_iter:
        y_hat = net(X)
        l = loss(y_hat, y)
        if isinstance(updater, torch.optim.Optimizer):
            updater.zero_grad()
            l.mean().backward()
            updater.step()
        else:
            l.sum().backward()
            updater(X.shape[0])
        metric.add(float(l.sum()), accuracy(y_hat, y), y.numel())
    return metric[0] / metric[2], metric[1] / metric[2]


def init_weights(m):
    if type(m) == nn.Linear:
        nn.init.normal_(m.weight, std=0.01)


def init_cnn(module):
    """Initialize weights for CNNs."""
    if type(module) == nn.Linear or type(module) == nn.Conv2d:
        nn.init.xavier_uniform_(module.weight)


class LeNet(nn.Module):
    """The LeNet-5 model."""
    def __init__(self, lr=0.1, num_classes=10):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5, padding=2), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.LazyConv2d(16, kernel_size=5), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.Flatten(),
            nn.LazyLinear(120), nn.Sigmoid(),
            nn.LazyLinear(84), nn.Sigmoid(),
            nn.LazyLinear(num_classes))

    def forward(self, X):
        return self.net(X)

    def apply_init(self, inputs, init=None):
        self.forward(*inputs)
        if init is not None:
            self.net.apply(init)

    def layer_summary(self, X_shape):
        X = torch.randn(*X_shape)
        for layer in self.net:
            X = layer(X)
            print(layer.__class__.__name__, 'output shape:\t', X.shape)


def linreg():
    true_w = torch.tensor([2, -3.4])
    true_b = 4.2
    features, labels = synthetic_data(true_w, true_b, 1000)
    data_iter = load_array((features, labels), 10)
    print(next(iter(data_iter))[0].shape)
    net = nn.Sequential(nn.LazyLinear(1))
    net(features[:1])
    net[0].weight.data.normal_(0, 0.01)
    net[0].bias.data.fill_(0)
    loss = nn.MSELoss()
    trainer = torch.optim.SGD(net.parameters(), lr=0.03)
    num_epochs = 3
    for epoch in range(num_epochs):
        for X, y in data_iter:
            l = loss(net(X), y)
            trainer.zero_grad()
            l.backward()
            trainer.step()
        l = loss(net(features), labels)
        print(f'epoch {epoch + 1}, loss {l:f}')
    w = net[0].weight.data
    print('error in estimating w:', true_w - w.reshape(true_w.shape))
    b = net[0].bias.data
    print('error in estimating b:', true_b - b)
    return w, b


def main(num_epochs=2, n=200, batch_size=50):
    w, b = linreg()
    train_iter = load_array(fashion_like(n), batch_size)
    test_iter = load_array(fashion_like(100), batch_size, is_train=False)

    net = nn.Sequential(nn.Flatten(), nn.LazyLinear(256), nn.ReLU(), nn.LazyLinear(10))
    net(next(iter(train_iter))[0])
    net.apply(init_weights)
    loss = nn.CrossEntropyLoss(reduction='none')
    trainer = torch.optim.SGD(net.parameters(), lr=0.1)
    mlp_metrics = [train_epoch_ch3(net, train_iter, loss, trainer) for _ in range(num_epochs)]
    print('mlp', mlp_metrics, evaluate_accuracy(net, test_iter))

    model = LeNet(lr=0.9)
    model.apply_init([next(iter(train_iter))[0]], init_cnn)
    model.layer_summary((1, 1, 28, 28))
    trainer = torch.optim.SGD(model.parameters(), lr=model.lr)
    lenet_metrics = [train_epoch_ch3(model, train_iter, nn.CrossEntropyLoss(reduction='none'),
                                     trainer) for _ in range(num_epochs)]
    test_acc = evaluate_accuracy(model, test_iter)
    print('lenet', lenet_metrics, test_acc)
    return (w, b), mlp_metrics, lenet_metrics, test_acc


if __name__ == '__main__':
    main()
