# d2l.ai's "from scratch" sections as readers copy them into scripts: softmax regression
# (softmax by exp / sum(1, keepdim=True), cross_entropy by -torch.log(y_hat[list(range(
# len(y_hat))), y]), accuracy with y_hat.type(y.dtype) == y, the sgd updater
# `param -= lr * param.grad / batch_size` under torch.no_grad()); dropout_layer from
# (torch.rand(X.shape) > dropout).float(); weight decay with l2_penalty and the concise
# version's per-parameter-group weight_decay; batch_norm/BatchNorm with moving statistics
# returned as .data and torch.is_grad_enabled() choosing the mode; the character RNN with
# get_params/init_rnn_state/rnn over F.one_hot(X.T, vocab_size), grad_clipping by the global
# norm (`param.grad[:] *= theta / norm`), state.detach_() and perplexity, predict_ch8.
# The datasets (Fashion-MNIST, The Time Machine) are replaced by generated data.
import math
import random

import torch
from torch import nn
from torch.nn import functional as F


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


def data_iter(batch_size, features, labels):
    num_examples = len(features)
    indices = list(range(num_examples))
    # The examples are read at random, in no particular order
    random.shuffle(indices)
    for i in range(0, num_examples, batch_size):
        batch_indices = torch.tensor(
            indices[i: min(i + batch_size, num_examples)])
        yield features[batch_indices], labels[batch_indices]


def clusters(n, num_inputs, num_outputs, seed=0):
    """n points of num_outputs Gaussian clusters in num_inputs dims (a stand-in dataset)."""
    g = torch.Generator().manual_seed(seed)
    centers = torch.randn(num_outputs, num_inputs, generator=g) * 2
    y = torch.randint(0, num_outputs, (n,), generator=g)
    X = centers[y] + torch.randn(n, num_inputs, generator=g)
    return X, y


# -- 4.4 softmax regression from scratch ------------------------------------------------------
def softmax(X):
    X_exp = torch.exp(X)
    partition = X_exp.sum(1, keepdim=True)
    return X_exp / partition  # The broadcasting mechanism is applied here


def cross_entropy(y_hat, y):
    return -torch.log(y_hat[list(range(len(y_hat))), y])


def accuracy(y_hat, y):
    """Compute the number of correct predictions."""
    if len(y_hat.shape) > 1 and y_hat.shape[1] > 1:
        y_hat = y_hat.argmax(axis=1)
    cmp = y_hat.type(y.dtype) == y
    return float(cmp.type(y.dtype).sum())


def sgd(params, lr, batch_size):
    """Minibatch stochastic gradient descent."""
    with torch.no_grad():
        for param in params:
            param -= lr * param.grad / batch_size
            param.grad.zero_()


def softmax_regression(num_epochs=5, lr=0.1, batch_size=32):
    num_inputs, num_outputs = 20, 4
    W = torch.normal(0, 0.01, size=(num_inputs, num_outputs), requires_grad=True)
    b = torch.zeros(num_outputs, requires_grad=True)

    def net(X):
        return softmax(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)

    features, labels = clusters(256, num_inputs, num_outputs)
    history = []
    for epoch in range(num_epochs):
        metric = Accumulator(3)
        for X, y in data_iter(batch_size, features, labels):
            y_hat = net(X)
            l = cross_entropy(y_hat, y)
            l.sum().backward()
            sgd([W, b], lr, X.shape[0])
            metric.add(float(l.sum()), accuracy(y_hat, y), y.numel())
        history.append((metric[0] / metric[2], metric[1] / metric[2]))
    return (W, b), history


# -- 5.6 dropout from scratch -----------------------------------------------------------------
def dropout_layer(X, dropout):
    assert 0 <= dropout <= 1
    # In this case, all elements are dropped out
    if dropout == 1:
        return torch.zeros_like(X)
    # In this case, all elements are kept
    if dropout == 0:
        return X
    mask = (torch.rand(X.shape) > dropout).float()
    return mask * X / (1.0 - dropout)


class Net(nn.Module):
    def __init__(self, num_inputs, num_outputs, num_hiddens1, num_hiddens2,
                 is_training=True, dropout1=0.2, dropout2=0.5):
        super(Net, self).__init__()
        self.num_inputs = num_inputs
        self.training = is_training
        self.dropout1, self.dropout2 = dropout1, dropout2
        self.lin1 = nn.Linear(num_inputs, num_hiddens1)
        self.lin2 = nn.Linear(num_hiddens1, num_hiddens2)
        self.lin3 = nn.Linear(num_hiddens2, num_outputs)
        self.relu = nn.ReLU()

    def forward(self, X):
        H1 = self.relu(self.lin1(X.reshape((-1, self.num_inputs))))
        # Use dropout only when training the model
        if self.training == True:
            # Add a dropout layer after the first fully connected layer
            H1 = dropout_layer(H1, self.dropout1)
        H2 = self.relu(self.lin2(H1))
        if self.training == True:
            # Add a dropout layer after the second fully connected layer
            H2 = dropout_layer(H2, self.dropout2)
        out = self.lin3(H2)
        return out


def dropout_mlp(num_epochs=5, lr=0.5, batch_size=32):
    net = Net(20, 4, 64, 32)
    loss = nn.CrossEntropyLoss(reduction='none')
    trainer = torch.optim.SGD(net.parameters(), lr=lr)
    features, labels = clusters(256, 20, 4, seed=1)
    history = []
    for epoch in range(num_epochs):
        metric = Accumulator(3)
        for X, y in data_iter(batch_size, features, labels):
            y_hat = net(X)
            l = loss(y_hat, y)
            trainer.zero_grad()
            l.mean().backward()
            trainer.step()
            metric.add(float(l.sum()), accuracy(y_hat, y), y.numel())
        history.append((metric[0] / metric[2], metric[1] / metric[2]))
    net.training = False
    return net, history, (net(features).argmax(1) == labels).float().mean().item()


# -- 3.7 weight decay -------------------------------------------------------------------------
def init_params(num_inputs):
    w = torch.normal(0, 1, size=(num_inputs, 1), requires_grad=True)
    b = torch.zeros(1, requires_grad=True)
    return [w, b]


def l2_penalty(w):
    return torch.sum(w.pow(2)) / 2


def linreg(X, w, b):
    """The linear regression model."""
    return torch.matmul(X, w) + b


def squared_loss(y_hat, y):
    """Squared loss."""
    return (y_hat - y.reshape(y_hat.shape)) ** 2 / 2


def high_dim_data(n_train=20, num_inputs=200):
    true_w, true_b = torch.ones((num_inputs, 1)) * 0.01, 0.05
    X = torch.normal(0, 1, (n_train, num_inputs))
    y = torch.matmul(X, true_w) + true_b
    y += torch.normal(0, 0.01, y.shape)
    return X, y


def train_scratch(lambd, num_epochs=20, lr=0.003, batch_size=5, data=None):
    features, labels = data
    w, b = init_params(features.shape[1])
    net, loss = lambda X: linreg(X, w, b), squared_loss
    for epoch in range(num_epochs):
        for X, y in data_iter(batch_size, features, labels):
            # The L2 norm penalty term has been added, and broadcasting
            # makes `l2_penalty(w)` a vector whose length is `batch_size`
            l = loss(net(X), y) + lambd * l2_penalty(w)
            l.sum().backward()
            sgd([w, b], lr, batch_size)
    return w, b, float(torch.norm(w).item())


def train_concise(wd, num_epochs=20, lr=0.003, batch_size=5, data=None):
    features, labels = data
    net = nn.Sequential(nn.Linear(features.shape[1], 1))
    for param in net.parameters():
        param.data.normal_()
    loss = nn.MSELoss(reduction='none')
    # The bias parameter has not decayed
    trainer = torch.optim.SGD([
        {"params": net[0].weight, 'weight_decay': wd},
        {"params": net[0].bias}], lr=lr)
    for epoch in range(num_epochs):
        for X, y in data_iter(batch_size, features, labels):
            trainer.zero_grad()
            l = loss(net(X), y)
            l.mean().backward()
            trainer.step()
    return net, trainer, net[0].weight.norm().item()


# -- 8.5 batch normalization from scratch -----------------------------------------------------
def batch_norm(X, gamma, beta, moving_mean, moving_var, eps, momentum):
    # Use is_grad_enabled to determine whether we are in training mode
    if not torch.is_grad_enabled():
        # In prediction mode, use mean and variance obtained by moving average
        X_hat = (X - moving_mean) / torch.sqrt(moving_var + eps)
    else:
        assert len(X.shape) in (2, 4)
        if len(X.shape) == 2:
            # When using a fully connected layer, calculate the mean and
            # variance on the feature dimension
            mean = X.mean(dim=0)
            var = ((X - mean) ** 2).mean(dim=0)
        else:
            # When using a two-dimensional convolutional layer, calculate the
            # mean and variance on the channel dimension (axis=1). Here we
            # need to maintain the shape of `X`, so that the broadcasting
            # operation can be carried out later
            mean = X.mean(dim=(0, 2, 3), keepdim=True)
            var = ((X - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        # In training mode, the current mean and variance are used
        X_hat = (X - mean) / torch.sqrt(var + eps)
        # Update the mean and variance using moving average
        moving_mean = (1.0 - momentum) * moving_mean + momentum * mean
        moving_var = (1.0 - momentum) * moving_var + momentum * var
    Y = gamma * X_hat + beta  # Scale and shift
    return Y, moving_mean.data, moving_var.data


class BatchNorm(nn.Module):
    # num_features: the number of outputs for a fully connected layer or the
    # number of output channels for a convolutional layer. num_dims: 2 for a
    # fully connected layer and 4 for a convolutional layer
    def __init__(self, num_features, num_dims):
        super().__init__()
        if num_dims == 2:
            shape = (1, num_features)
        else:
            shape = (1, num_features, 1, 1)
        # The scale parameter and the shift parameter (model parameters) are
        # initialized to 1 and 0, respectively
        self.gamma = nn.Parameter(torch.ones(shape))
        self.beta = nn.Parameter(torch.zeros(shape))
        # The variables that are not model parameters are initialized to 0 and
        # 1
        self.moving_mean = torch.zeros(shape)
        self.moving_var = torch.ones(shape)

    def forward(self, X):
        # If `X` is not on the main memory, copy `moving_mean` and
        # `moving_var` to the device where `X` is located
        if self.moving_mean.device != X.device:
            self.moving_mean = self.moving_mean.to(X.device)
            self.moving_var = self.moving_var.to(X.device)
        # Save the updated `moving_mean` and `moving_var`
        Y, self.moving_mean, self.moving_var = batch_norm(
            X, self.gamma, self.beta, self.moving_mean,
            self.moving_var, eps=1e-5, momentum=0.1)
        return Y


# -- 9.5 RNN from scratch ---------------------------------------------------------------------
def get_params(vocab_size, num_hiddens, device):
    num_inputs = num_outputs = vocab_size

    def normal(shape):
        return torch.randn(size=shape, device=device) * 0.01

    # Hidden layer parameters
    W_xh = normal((num_inputs, num_hiddens))
    W_hh = normal((num_hiddens, num_hiddens))
    b_h = torch.zeros(num_hiddens, device=device)
    # Output layer parameters
    W_hq = normal((num_hiddens, num_outputs))
    b_q = torch.zeros(num_outputs, device=device)
    # Attach gradients
    params = [W_xh, W_hh, b_h, W_hq, b_q]
    for param in params:
        param.requires_grad_(True)
    return params


def init_rnn_state(batch_size, num_hiddens, device):
    return (torch.zeros((batch_size, num_hiddens), device=device), )


def rnn(inputs, state, params):
    # Here `inputs` shape: (`num_steps`, `batch_size`, `vocab_size`)
    W_xh, W_hh, b_h, W_hq, b_q = params
    H, = state
    outputs = []
    # Shape of `X`: (`batch_size`, `vocab_size`)
    for X in inputs:
        H = torch.tanh(torch.mm(X, W_xh) + torch.mm(H, W_hh) + b_h)
        Y = torch.mm(H, W_hq) + b_q
        outputs.append(Y)
    return torch.cat(outputs, dim=0), (H,)


class RNNModelScratch:
    """A RNN Model implemented from scratch."""
    def __init__(self, vocab_size, num_hiddens, device,
                 get_params, init_state, forward_fn):
        self.vocab_size, self.num_hiddens = vocab_size, num_hiddens
        self.params = get_params(vocab_size, num_hiddens, device)
        self.init_state, self.forward_fn = init_state, forward_fn

    def __call__(self, X, state):
        X = F.one_hot(X.T, self.vocab_size).type(torch.float32)
        return self.forward_fn(X, state, self.params)

    def begin_state(self, batch_size, device):
        return self.init_state(batch_size, self.num_hiddens, device)


def predict_ch8(prefix, num_preds, net, vocab, device):
    """Generate new characters following the `prefix`."""
    state = net.begin_state(batch_size=1, device=device)
    outputs = [vocab[prefix[0]]]
    get_input = lambda: torch.tensor([outputs[-1]], device=device).reshape((1, 1))
    for y in prefix[1:]:  # Warm-up period
        _, state = net(get_input(), state)
        outputs.append(vocab[y])
    for _ in range(num_preds):  # Predict `num_preds` steps
        y, state = net(get_input(), state)
        outputs.append(int(y.argmax(dim=1).reshape(1)))
    return ''.join([vocab.idx_to_token[i] for i in outputs])


def grad_clipping(net, theta):
    """Clip the gradient."""
    if isinstance(net, nn.Module):
        params = [p for p in net.parameters() if p.requires_grad]
    else:
        params = net.params
    norm = torch.sqrt(sum(torch.sum((p.grad ** 2)) for p in params))
    if norm > theta:
        for param in params:
            param.grad[:] *= theta / norm


class Vocab:
    def __init__(self, text):
        self.idx_to_token = sorted(set(text))
        self.token_to_idx = {t: i for i, t in enumerate(self.idx_to_token)}

    def __len__(self):
        return len(self.idx_to_token)

    def __getitem__(self, token):
        return self.token_to_idx[token]


def seq_data_iter_sequential(corpus, batch_size, num_steps):
    """Generate a minibatch of subsequences using sequential partitioning."""
    # Start with a random offset to partition a sequence
    offset = random.randint(0, num_steps)
    num_tokens = ((len(corpus) - offset - 1) // batch_size) * batch_size
    Xs = torch.tensor(corpus[offset: offset + num_tokens])
    Ys = torch.tensor(corpus[offset + 1: offset + 1 + num_tokens])
    Xs, Ys = Xs.reshape(batch_size, -1), Ys.reshape(batch_size, -1)
    num_batches = Xs.shape[1] // num_steps
    for i in range(0, num_steps * num_batches, num_steps):
        X = Xs[:, i: i + num_steps]
        Y = Ys[:, i: i + num_steps]
        yield X, Y


def train_epoch_ch8(net, train_iter, loss, updater, device, use_random_iter):
    """Train a net within one epoch (defined in Chapter 8)."""
    state = None
    metric = Accumulator(2)  # Sum of training loss, no. of tokens
    for X, Y in train_iter:
        if state is None or use_random_iter:
            # Initialize `state` when either it is the first iteration or
            # using random sampling
            state = net.begin_state(batch_size=X.shape[0], device=device)
        else:
            if isinstance(net, nn.Module) and not isinstance(state, tuple):
                # `state` is a tensor for `nn.GRU`
                state.detach_()
            else:
                # `state` is a tuple of tensors for `nn.LSTM` and
                # for our custom scratch implementation
                for s in state:
                    s.detach_()
        y = Y.T.reshape(-1)
        X, y = X.to(device), y.to(device)
        y_hat, state = net(X, state)
        l = loss(y_hat, y.long()).mean()
        if isinstance(updater, torch.optim.Optimizer):
            updater.zero_grad()
            l.backward()
            grad_clipping(net, 1)
            updater.step()
        else:
            l.backward()
            grad_clipping(net, 1)
            # Since the `mean` function has been invoked
            updater(batch_size=1)
        metric.add(l * y.numel(), y.numel())
    return math.exp(metric[0] / metric[1])


def char_rnn(num_epochs=30, lr=1.0, num_hiddens=64, batch_size=4, num_steps=8):
    text = "the time machine by h g wells " * 12
    vocab = Vocab(text)
    corpus = [vocab[c] for c in text]
    device = torch.device('cpu')
    net = RNNModelScratch(len(vocab), num_hiddens, device, get_params,
                          init_rnn_state, rnn)
    loss = nn.CrossEntropyLoss()
    updater = lambda batch_size: sgd(net.params, lr, batch_size)
    perplexities = []
    for epoch in range(num_epochs):
        ppl = train_epoch_ch8(net, seq_data_iter_sequential(corpus, batch_size, num_steps),
                              loss, updater, device, False)
        perplexities.append(ppl)
    return net, vocab, perplexities, predict_ch8('time ', 10, net, vocab, device)


def main():
    random.seed(0)
    torch.manual_seed(0)
    results = {"softmax": softmax_regression(), "dropout": dropout_mlp()}
    data = high_dim_data()
    results["wd_scratch"] = [train_scratch(lambd, data=data) for lambd in (0, 3)]
    results["wd_concise"] = [train_concise(wd, data=data) for wd in (0, 3)]
    bn = BatchNorm(6, num_dims=4)
    net = nn.Sequential(nn.Conv2d(1, 6, kernel_size=5), bn, nn.Sigmoid(),
                        nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(),
                        nn.Linear(6 * 4 * 4, 4))
    X, y = clusters(64, 144, 4, seed=2)
    X = X.reshape(-1, 1, 12, 12)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    bn_losses = []
    for _ in range(8):
        opt.zero_grad()
        l = F.cross_entropy(net(X), y)
        l.backward()
        opt.step()
        bn_losses.append(l.item())
    with torch.no_grad():
        eval_out = net(X)
    results["batch_norm"] = (net, bn, bn_losses, eval_out, X)
    results["char_rnn"] = char_rnn()
    return results


if __name__ == "__main__":
    main()
