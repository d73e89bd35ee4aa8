# PyTorch's tutorial "Learning PyTorch with Examples": y = sin(x) on [-pi, pi] fitted with a
# third order polynomial, five ways: tensors with a hand-written backward pass, autograd with
# an update under torch.no_grad(), a custom autograd.Function (LegendrePolynomial3), the nn
# package (x.unsqueeze(-1).pow(p), nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1)),
# MSELoss(reduction='sum')) and optim.RMSprop, then a custom nn.Module with SGD(momentum=0.9).
import math

import torch


dtype = torch.float
device = torch.device("cpu")


def data(n=2000):
    x = torch.linspace(-math.pi, math.pi, n, device=device, dtype=dtype)
    y = torch.sin(x)
    return x, y


def tensors_manual(x, y, a, b, c, d, steps, learning_rate=1e-6):
    for t in range(steps):
        # Forward pass: compute predicted y
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum().item()
        if t % 100 == 99:
            print(t, loss)
        # Backprop to compute gradients of a, b, c, d with respect to loss
        grad_y_pred = 2.0 * (y_pred - y)
        grad_a = grad_y_pred.sum()
        grad_b = (grad_y_pred * x).sum()
        grad_c = (grad_y_pred * x ** 2).sum()
        grad_d = (grad_y_pred * x ** 3).sum()
        # Update weights using gradient descent
        a -= learning_rate * grad_a
        b -= learning_rate * grad_b
        c -= learning_rate * grad_c
        d -= learning_rate * grad_d
    print(f'Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3')
    return loss


def autograd_fit(x, y, a, b, c, d, steps, learning_rate=1e-6):
    for t in range(steps):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        if t % 100 == 99:
            print(t, loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            # Manually zero the gradients after updating weights
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    print(f'Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3')
    return loss.item()


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


def legendre_fit(x, y, a, b, c, d, steps, learning_rate=5e-6):
    for t in range(steps):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        if t % 100 == 99:
            print(t, loss.item())
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    print(f'Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)')
    return loss.item()


def make_nn_model():
    return torch.nn.Sequential(
        torch.nn.Linear(3, 1),
        torch.nn.Flatten(0, 1)
    )


def features(x):
    p = torch.tensor([1, 2, 3])
    return x.unsqueeze(-1).pow(p)


def nn_fit(xx, y, model, steps, learning_rate=1e-6):
    loss_fn = torch.nn.MSELoss(reduction='sum')
    for t in range(steps):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        if t % 100 == 99:
            print(t, loss.item())
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    linear_layer = model[0]
    print(f'Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + '
          f'{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3')
    return loss.item()


def optim_fit(xx, y, model, steps, learning_rate=1e-3):
    loss_fn = torch.nn.MSELoss(reduction='sum')
    optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)
    for t in range(steps):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        if t % 100 == 99:
            print(t, loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


class Polynomial3(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.randn(()))
        self.b = torch.nn.Parameter(torch.randn(()))
        self.c = torch.nn.Parameter(torch.randn(()))
        self.d = torch.nn.Parameter(torch.randn(()))

    def forward(self, x):
        return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

    def string(self):
        return f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3'


def module_fit(x, y, model, steps):
    criterion = torch.nn.MSELoss(reduction='sum')
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9)
    for t in range(steps):
        y_pred = model(x)
        loss = criterion(y_pred, y)
        if t % 100 == 99:
            print(t, loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f'Result: {model.string()}')
    return loss.item()


def main(steps=300):
    x, y = data()
    a, b, c, d = (torch.randn((), device=device, dtype=dtype) for _ in range(4))
    losses = [tensors_manual(x, y, a, b, c, d, steps)]
    a, b, c, d = (torch.randn((), device=device, dtype=dtype, requires_grad=True)
                  for _ in range(4))
    losses.append(autograd_fit(x, y, a, b, c, d, steps))
    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
    losses.append(legendre_fit(x, y, a, b, c, d, steps))
    xx = features(x)
    losses.append(nn_fit(xx, y, make_nn_model(), steps))
    losses.append(optim_fit(xx, y, make_nn_model(), steps))
    losses.append(module_fit(x, y, Polynomial3(), steps))
    return losses


if __name__ == '__main__':
    main()
