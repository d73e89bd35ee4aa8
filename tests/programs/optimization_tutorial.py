# PyTorch's "Learn the Basics" tutorial "Optimizing Model Parameters" (optimization_tutorial.py):
# the NeuralNetwork of "Build the Neural Network" (Flatten, Linear-ReLU-Linear-ReLU-Linear),
# hyperparameters, CrossEntropyLoss, SGD, and the full implementation's train_loop and
# test_loop over DataLoaders. FashionMNIST (a torchvision download, ToTensor) is replaced by
# local 28x28 images in [0, 1] (local_data.mnist_like) behind the same Dataset interface;
# main()'s arguments keep the run small (the tutorial: 10 epochs over 60000 images).
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from local_data import mnist_like


class LocalFashionMNIST(Dataset):
    """What datasets.FashionMNIST(root, train, transform=ToTensor()) gives: (1, 28, 28)
    float images in [0, 1] and int labels."""

    def __init__(self, train=True, n=None):
        images, labels = mnist_like(train=train, n=n, normalize=False)
        self.images, self.labels = images, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        return torch.from_numpy(self.images[idx]), int(self.labels[idx])


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28*28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


##############################################
# Hyperparameters
# -----------------

learning_rate = 1e-3
batch_size = 64
epochs = 5


########################################
# Full Implementation
# -----------------------

def train_loop(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    # Set the model to training mode - important for batch normalization and dropout layers
    # Unnecessary in this situation but added for best practices
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        # Compute prediction and loss
        pred = model(X)
        loss = loss_fn(pred, y)

        # Backpropagation
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

        if batch % 100 == 0:
            loss, current = loss.item(), batch * batch_size + len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")


def test_loop(dataloader, model, loss_fn):
    # Set the model to evaluation mode - important for batch normalization and dropout layers
    # Unnecessary in this situation but added for best practices
    model.eval()
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    test_loss, correct = 0, 0

    # Evaluating the model with torch.no_grad() ensures that no gradients are computed during
    # test mode; also serves to reduce unnecessary gradient computations and memory usage
    # for tensors with requires_grad=True
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()

    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return test_loss, correct


def main(epochs=epochs, train_size=None, test_size=None, lr=learning_rate, model=None):
    torch.manual_seed(0)
    training_data = LocalFashionMNIST(train=True, n=train_size)
    test_data = LocalFashionMNIST(train=False, n=test_size)
    train_dataloader = DataLoader(training_data, batch_size=batch_size)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)
    if model is None:
        model = NeuralNetwork()

    # We initialize the loss function, and pass it to ``train_loop`` and ``test_loop``.
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    results = []
    for t in range(epochs):
        print(f"Epoch {t+1}\n-------------------------------")
        train_loop(train_dataloader, model, loss_fn, optimizer)
        results.append(test_loop(test_dataloader, model, loss_fn))
    print("Done!")
    return model, results


if __name__ == "__main__":
    main()
