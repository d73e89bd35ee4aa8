# d2l.ai chapter 8 (Modern Convolutional Neural Networks) as readers copy it into scripts:
# AlexNet-style nn.LazyConv2d stacks, vgg_block, nin_block with 1x1 LazyConv2d and the
# AdaptiveAvgPool2d((1, 1)) head, GoogLeNet's Inception block (four branches joined by
# torch.cat((b1, b2, b3, b4), dim=1)), the concise batch normalization with
# nn.LazyBatchNorm2d / LazyBatchNorm1d, ResNet's Residual with use_1x1conv and strides, and
# DenseNet's conv_block / DenseBlock (torch.cat((X, Y), dim=1)) / transition_block; then
# "Learning PyTorch with Examples"' DynamicNet, whose forward reuses a layer a random number
# of times (dynamic control flow and weight sharing). layer_summary prints each layer's
# output shape; a small NiN/Inception/ResNet/DenseNet net trains on generated images.
import math
import random

import torch
from torch import nn
from torch.nn import functional as F


def vgg_block(num_convs, out_channels):
    layers = []
    for _ in range(num_convs):
        layers.append(nn.LazyConv2d(out_channels, kernel_size=3, padding=1))
        layers.append(nn.ReLU())
    layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
    return nn.Sequential(*layers)


def nin_block(out_channels, kernel_size, strides, padding):
    return nn.Sequential(
        nn.LazyConv2d(out_channels, kernel_size, strides, padding), nn.ReLU(),
        nn.LazyConv2d(out_channels, kernel_size=1), nn.ReLU(),
        nn.LazyConv2d(out_channels, kernel_size=1), nn.ReLU())


class Inception(nn.Module):
    # c1--c4 are the number of output channels for each branch
    def __init__(self, c1, c2, c3, c4, **kwargs):
        super(Inception, self).__init__(**kwargs)
        # Branch 1
        self.b1_1 = nn.LazyConv2d(c1, kernel_size=1)
        # Branch 2
        self.b2_1 = nn.LazyConv2d(c2[0], kernel_size=1)
        self.b2_2 = nn.LazyConv2d(c2[1], kernel_size=3, padding=1)
        # Branch 3
        self.b3_1 = nn.LazyConv2d(c3[0], kernel_size=1)
        self.b3_2 = nn.LazyConv2d(c3[1], kernel_size=5, padding=2)
        # Branch 4
        self.b4_1 = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
        self.b4_2 = nn.LazyConv2d(c4, kernel_size=1)

    def forward(self, x):
        b1 = F.relu(self.b1_1(x))
        b2 = F.relu(self.b2_2(F.relu(self.b2_1(x))))
        b3 = F.relu(self.b3_2(F.relu(self.b3_1(x))))
        b4 = F.relu(self.b4_2(self.b4_1(x)))
        return torch.cat((b1, b2, b3, b4), dim=1)


class Residual(nn.Module):
    """The Residual block of ResNet models."""
    def __init__(self, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1,
                                   stride=strides)
        self.conv2 = nn.LazyConv2d(num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.LazyConv2d(num_channels, kernel_size=1,
                                       stride=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.LazyBatchNorm2d()
        self.bn2 = nn.LazyBatchNorm2d()

    def forward(self, X):
        Y = F.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return F.relu(Y)


def conv_block(num_channels):
    return nn.Sequential(
        nn.LazyBatchNorm2d(), nn.ReLU(),
        nn.LazyConv2d(num_channels, kernel_size=3, padding=1))


class DenseBlock(nn.Module):
    def __init__(self, num_convs, num_channels):
        super(DenseBlock, self).__init__()
        layer = []
        for i in range(num_convs):
            layer.append(conv_block(num_channels))
        self.net = nn.Sequential(*layer)

    def forward(self, X):
        for blk in self.net:
            Y = blk(X)
            # Concatenate input and output of each block along the channels
            X = torch.cat((X, Y), dim=1)
        return X


def transition_block(num_channels):
    return nn.Sequential(
        nn.LazyBatchNorm2d(), nn.ReLU(),
        nn.LazyConv2d(num_channels, kernel_size=1),
        nn.AvgPool2d(kernel_size=2, stride=2))


def layer_summary(net, X_shape):
    X = torch.randn(*X_shape)
    shapes = []
    for layer in net:
        X = layer(X)
        print(layer.__class__.__name__, 'output shape:\t', X.shape)
        shapes.append((layer.__class__.__name__, tuple(X.shape)))
    return shapes


def small_net(num_classes=4):
    return nn.Sequential(
        nin_block(8, kernel_size=3, strides=1, padding=1),
        nn.MaxPool2d(3, stride=2, padding=1),
        Inception(4, (4, 8), (2, 4), 4),
        Residual(16, use_1x1conv=True, strides=2),
        DenseBlock(2, 4),
        transition_block(12),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
        nn.LazyLinear(16), nn.LazyBatchNorm1d(), nn.ReLU(),
        nn.LazyLinear(num_classes))


def stripes(n, num_classes=4, size=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, num_classes, (n,), generator=g)
    i = torch.arange(size, dtype=torch.float32)
    angle = (y.float() * math.pi / num_classes).reshape(-1, 1, 1)
    wave = torch.sin(0.8 * (torch.cos(angle) * i.reshape(1, -1, 1)
                            + torch.sin(angle) * i.reshape(1, 1, -1)))
    X = wave.unsqueeze(1) + 0.3 * torch.randn(n, 1, size, size, generator=g)
    return X, y


# -- "Learning PyTorch with Examples": PyTorch: Control Flow + Weight Sharing -----------------
class DynamicNet(torch.nn.Module):
    def __init__(self):
        """
        In the constructor we instantiate five parameters and assign them as members.
        """
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))
        self.e = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        """
        For the forward pass of the model, we randomly choose either 4, 5
        and reuse the e parameter to compute the contribution of these orders.

        Since each forward pass builds a dynamic computation graph, we can use normal
        Python control-flow operators like loops or conditional statements when
        defining the forward pass of the model.

        Here we also see that it is perfectly safe to reuse the same parameter many
        times when defining a computational graph.
        """
        y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
        for exp in range(4, random.randint(4, 6)):
            y = y + self.e * x ** exp
        return y

    def string(self):
        """
        Just like any class in Python, you can also define custom method on PyTorch modules
        """
        return f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3 + {self.e.item()} x^4 ? + {self.e.item()} x^5 ?'


def dynamic_net(steps=3000):
    # Create Tensors to hold input and outputs.
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)

    # Construct our model by instantiating the class defined above
    model = DynamicNet()

    # Construct our loss function and an Optimizer. Training this strange model with
    # vanilla stochastic gradient descent is tough, so we use momentum
    criterion = torch.nn.MSELoss(reduction='sum')
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    losses = []
    for t in range(steps):
        # Forward pass: Compute predicted y by passing x to the model
        y_pred = model(x)

        # Compute and print loss
        loss = criterion(y_pred, y)
        if t % 2000 == 1999:
            print(t, loss.item())
        losses.append(loss.item())

        # Zero gradients, perform a backward pass, and update the weights.
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print(f'Result: {model.string()}')
    return model, losses


def main(epochs=6):
    random.seed(0)
    torch.manual_seed(0)
    shapes = {
        "vgg": layer_summary(nn.Sequential(vgg_block(1, 8), vgg_block(2, 16)), (1, 1, 16, 16)),
        "nin": layer_summary(nn.Sequential(
            nin_block(8, kernel_size=5, strides=2, padding=2),
            nn.MaxPool2d(3, stride=2), nn.Dropout(0.5),
            nin_block(4, kernel_size=3, strides=1, padding=1),
            nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten()), (1, 1, 32, 32)),
    }
    net = small_net()
    X, y = stripes(128)
    net(X[:2])  # initialise the lazy layers
    optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
    losses = []
    for epoch in range(epochs):
        net.train()
        for i in range(0, len(X), 32):
            optimizer.zero_grad()
            loss = F.cross_entropy(net(X[i:i + 32]), y[i:i + 32])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    net.eval()
    Xt, yt = stripes(64, seed=1)
    with torch.no_grad():
        accuracy = (net(Xt).argmax(1) == yt).float().mean().item()
    return net, shapes, losses, accuracy


if __name__ == "__main__":
    main()
    dynamic_net()
