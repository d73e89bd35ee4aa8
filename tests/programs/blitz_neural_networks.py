# PyTorch's "Deep Learning with PyTorch: A 60 Minute Blitz", part "Neural Networks"
# (blitz/neural_networks_tutorial.py): the LeNet-like Net with conv1/conv2/fc1-fc3,
# F.max_pool2d(F.relu(self.conv1(x)), (2, 2)) and the square-size shortcut `2`,
# torch.flatten(x, 1), list(net.parameters()) and params[0].size(), net.zero_grad() then
# out.backward(torch.randn(1, 10)), MSELoss against a dummy target viewed to (1, -1), the
# loss.grad_fn.next_functions walk, conv1.bias.grad before and after backward, the manual
# update `f.data.sub_(f.grad.data * learning_rate)` and the optim.SGD loop. The tutorial's
# random input and target stay random (as it has them); main() returns what it printed.
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class Net(nn.Module):

    def __init__(self):
        super(Net, self).__init__()
        # 1 input image channel, 6 output channels, 5x5 square convolution
        # kernel
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        # an affine operation: y = Wx + b
        self.fc1 = nn.Linear(16 * 5 * 5, 120)  # 5*5 from image dimension
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, input):
        # Convolution layer C1: 1 input image channel, 6 output channels,
        # 5x5 square convolution, it uses RELU activation function, and
        # outputs a Tensor with size (N, 6, 28, 28), where N is the size of the batch
        c1 = F.relu(self.conv1(input))
        # Subsampling layer S2: 2x2 grid, purely functional,
        # this layer does not have any parameter, and outputs a (N, 6, 14, 14) Tensor
        s2 = F.max_pool2d(c1, (2, 2))
        # Convolution layer C3: 6 input channels, 16 output channels,
        # 5x5 square convolution, it uses RELU activation function, and
        # outputs a (N, 16, 10, 10) Tensor
        c3 = F.relu(self.conv2(s2))
        # Subsampling layer S4: 2x2 grid, purely functional,
        # this layer does not have any parameter, and outputs a (N, 16, 5, 5) Tensor
        s4 = F.max_pool2d(c3, 2)
        # Flatten operation: purely functional, outputs a (N, 400) Tensor
        s4 = torch.flatten(s4, 1)
        # Fully connected layer F5: (N, 400) Tensor input,
        # and outputs a (N, 120) Tensor, it uses RELU activation function
        f5 = F.relu(self.fc1(s4))
        # Fully connected layer F6: (N, 120) Tensor input,
        # and outputs a (N, 84) Tensor, it uses RELU activation function
        f6 = F.relu(self.fc2(f5))
        # Gaussian layer OUTPUT: (N, 84) Tensor input, and
        # outputs a (N, 10) Tensor
        output = self.fc3(f6)
        return output


def main(steps=5):
    seen = {}
    net = Net()
    print(net)

    params = list(net.parameters())
    print(len(params))
    print(params[0].size())  # conv1's .weight
    seen["n_params"], seen["conv1_size"] = len(params), params[0].size()

    input = torch.randn(1, 1, 32, 32)
    out = net(input)
    print(out)
    seen["input"], seen["out"] = input, out

    net.zero_grad()
    upstream = torch.randn(1, 10)
    out.backward(upstream)
    seen["upstream"] = upstream
    seen["grads_from_backward"] = [p.grad.clone() for p in net.parameters()]

    # Loss Function
    output = net(input)
    target = torch.randn(10)  # a dummy target, for example
    target = target.view(1, -1)  # make it the same shape as output
    criterion = nn.MSELoss()

    loss = criterion(output, target)
    print(loss)
    seen["target"], seen["loss"] = target, loss.item()

    print(loss.grad_fn)  # MSELoss
    print(loss.grad_fn.next_functions[0][0])  # Linear
    print(loss.grad_fn.next_functions[0][0].next_functions[0][0])  # ReLU
    seen["grad_fns"] = [loss.grad_fn, loss.grad_fn.next_functions[0][0],
                        loss.grad_fn.next_functions[0][0].next_functions[0][0]]

    # Backprop
    net.zero_grad()     # zeroes the gradient buffers of all parameters

    print('conv1.bias.grad before backward')
    print(net.conv1.bias.grad)
    seen["bias_grad_before"] = net.conv1.bias.grad

    loss.backward()

    print('conv1.bias.grad after backward')
    print(net.conv1.bias.grad)
    seen["bias_grad_after"] = net.conv1.bias.grad.clone()

    # Update the weights: weight = weight - learning_rate * gradient
    before = [f.detach().clone() for f in net.parameters()]
    learning_rate = 0.01
    for f in net.parameters():
        f.data.sub_(f.grad.data * learning_rate)
    seen["manual_step"] = (before, [f.grad.clone() for f in net.parameters()],
                           [f.detach().clone() for f in net.parameters()])

    # create your optimizer
    optimizer = optim.SGD(net.parameters(), lr=0.01)

    # in your training loop:
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()   # zero the gradient buffers
        output = net(input)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()    # Does the update
        losses.append(loss.item())
    seen["losses"] = losses
    seen["net"] = net
    return seen


if __name__ == "__main__":
    main()
