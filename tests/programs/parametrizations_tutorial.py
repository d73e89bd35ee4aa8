# PyTorch's "Parametrizations Tutorial" (Mario Lezcano): symmetric and skew-symmetric weights
# by register_parametrization, a Conv2d with skew kernels, caching with parametrize.cached(),
# chained parametrizations (Skew then a Cayley map: an orthogonal weight), right_inverse
# (initializing a parametrized weight by assignment), a pruning parametrization and
# remove_parametrizations with and without leave_parametrized. The tutorial's code, in
# functions returning what it prints. Left out: its two torch.matrix_exp examples
# (MatrixExponential): see tests/test_programs_parametrize.py's docstring.
# Added: a few steps training the orthogonal layer (the weight stays orthogonal).
import torch
import torch.nn as nn
import torch.nn.utils.parametrize as parametrize


def symmetric(X):
    return X.triu() + X.triu(1).transpose(-1, -2)


class LinearSymmetric(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n_features, n_features))

    def forward(self, x):
        A = symmetric(self.weight)
        return x @ A


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class Skew(nn.Module):
    def forward(self, X):
        A = X.triu(1)
        return A - A.transpose(-1, -2)

    def right_inverse(self, A):
        # We assume that A is skew-symmetric
        # We take the upper-triangular elements, as these are those used in the forward
        return A.triu(1)


class CayleyMap(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("Id", torch.eye(n))

    def forward(self, X):
        # (I + X)(I - X)^{-1}
        return torch.linalg.solve(self.Id - X, self.Id + X)

    def right_inverse(self, A):
        # Assume A orthogonal
        # See https://en.wikipedia.org/wiki/Cayley_transform#Matrix_map
        # (A - I)(A + I)^{-1}
        return torch.linalg.solve(A + self.Id, self.Id - A)


class NoisyParametrization(nn.Module):
    def forward(self, X):
        print("Computing the Parametrization")
        return X


class PruningParametrization(nn.Module):
    def __init__(self, X, p_drop=0.2):
        super().__init__()
        # sample zeros with probability p_drop
        mask = torch.full_like(X, 1.0 - p_drop)
        self.mask = torch.bernoulli(mask)

    def forward(self, X):
        return X * self.mask

    def right_inverse(self, A):
        return A


def implementing_by_hand():
    layer = LinearSymmetric(3)
    out = layer(torch.rand(8, 3))
    return out


def introduction():
    layer = nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    A = layer.weight
    assert torch.allclose(A, A.T)  # A is symmetric
    print(A)                       # Quick visual check

    cnn = nn.Conv2d(in_channels=5, out_channels=8, kernel_size=3)
    parametrize.register_parametrization(cnn, "weight", Skew())
    # Print a few kernels
    print(cnn.weight[0, 1])
    print(cnn.weight[2, 2])
    return layer, cnn


def inspecting():
    layer = nn.Linear(3, 3)
    print(f"Unparametrized:\n{layer}")
    parametrize.register_parametrization(layer, "weight", Symmetric())
    print(f"\nParametrized:\n{layer}")
    print(layer.parametrizations)
    print(layer.parametrizations.weight)
    print(layer.parametrizations.weight[0])
    print(dict(layer.named_parameters()))
    print(layer.parametrizations.weight.original)
    symmetric = Symmetric()
    weight_orig = layer.parametrizations.weight.original
    print(torch.dist(layer.weight, symmetric(weight_orig)))
    return layer


def caching():
    layer = nn.Linear(4, 4)
    parametrize.register_parametrization(layer, "weight", NoisyParametrization())
    print("Here, layer.weight is recomputed every time we call it")
    foo = layer.weight + layer.weight.T
    bar = layer.weight.sum()
    with parametrize.cached():
        print("Here, it is computed just the first time layer.weight is called")
        foo = layer.weight + layer.weight.T
        bar = layer.weight.sum()
    return foo, bar


def concatenating():
    layer = nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Skew())
    parametrize.register_parametrization(layer, "weight", CayleyMap(3))
    X = layer.weight
    print(torch.dist(X.T @ X, torch.eye(3)))  # X is orthogonal
    return layer


def initializing():
    layer = nn.Linear(3, 3)
    parametrize.register_parametrization(layer, "weight", Skew())
    X = torch.rand(3, 3)
    X = X - X.T                             # X is now skew-symmetric
    layer.weight = X                        # Initialize layer.weight to be X
    d1 = torch.dist(layer.weight, X)
    print(d1)                               # layer.weight == X

    layer_orthogonal = nn.Linear(3, 3)
    parametrize.register_parametrization(layer_orthogonal, "weight", Skew())
    parametrize.register_parametrization(layer_orthogonal, "weight", CayleyMap(3))
    # Sample an orthogonal matrix with positive determinant
    X = torch.empty(3, 3)
    nn.init.orthogonal_(X)
    if X.det() < 0.:
        X[0] *= -1.
    layer_orthogonal.weight = X
    d2 = torch.dist(layer_orthogonal.weight, X)
    print(d2)  # layer_orthogonal.weight == X

    layer = nn.Linear(3, 4)
    X = torch.rand_like(layer.weight)
    print(f"Initialization matrix:\n {X}")
    parametrize.register_parametrization(layer, "weight", PruningParametrization(layer.weight))
    layer.weight = X
    print(f"\nInitialized weight:\n {layer.weight}")
    return d1.item(), d2.item(), X, layer


def removing():
    layer = nn.Linear(3, 3)
    print("Before:")
    print(layer)
    print(layer.weight)
    parametrize.register_parametrization(layer, "weight", Skew())
    print("\nParametrized:")
    print(layer)
    print(layer.weight)
    parametrize.remove_parametrizations(layer, "weight")
    print("\nAfter. Weight has skew-symmetric values but it is unconstrained:")
    print(layer)
    print(layer.weight)
    left = layer

    layer = nn.Linear(3, 3)
    print("Before:")
    print(layer)
    print(layer.weight)
    parametrize.register_parametrization(layer, "weight", Skew())
    print("\nParametrized:")
    print(layer)
    print(layer.weight)
    parametrize.remove_parametrizations(layer, "weight", leave_parametrized=False)
    print("\nAfter. Same as Before:")
    print(layer)
    print(layer.weight)
    return left, layer


def train_orthogonal(layer, x, y, steps=10, lr=0.1):
    opt = torch.optim.SGD(layer.parameters(), lr=lr)

    def closure():
        opt.zero_grad()
        loss = ((layer(x) - y) ** 2).mean()
        loss.backward()
        return loss
    return [opt.step(closure).item() for _ in range(steps)]


def main():
    torch.manual_seed(0)
    implementing_by_hand()
    layer, cnn = introduction()
    inspecting()
    caching()
    orth = concatenating()
    d1, d2, _, _ = initializing()
    removing()
    x = torch.linspace(-1, 1, 24).reshape(8, 3)
    losses = train_orthogonal(orth, x, x.flip(-1))
    W = orth.weight
    print(torch.dist(W.T @ W, torch.eye(3)))
    return layer, cnn, orth, d1, d2, losses


if __name__ == "__main__":
    main()
