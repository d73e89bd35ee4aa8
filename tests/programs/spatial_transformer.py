# PyTorch's "Spatial Transformer Networks Tutorial" (Ghassen Hamrouni; Jaderberg et al. 2015):
# the MNIST classifier whose input first passes a spatial transformer (a localisation network
# regresses a 2x3 affine matrix, initialised to the identity; F.affine_grid and F.grid_sample
# resample the input), trained with SGD and nll_loss. The MNIST download is replaced by the
# local digits (local_data.mnist_like); the matplotlib visualisation is left out, and the
# tutorial's train()/test() take their sizes from arguments.
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

from local_data import mnist_like


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

        # Spatial transformer localization-network
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True)
        )

        # Regressor for the 3 * 2 affine matrix
        self.fc_loc = nn.Sequential(
            nn.Linear(10 * 3 * 3, 32),
            nn.ReLU(True),
            nn.Linear(32, 3 * 2)
        )

        # Initialize the weights/bias with identity transformation
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    # Spatial transformer network forward function
    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)

        grid = F.affine_grid(theta, x.size())
        x = F.grid_sample(x, grid)

        return x

    def forward(self, x):
        # transform the input
        x = self.stn(x)

        # Perform the usual forward pass
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def main(argv=None):
    parser = argparse.ArgumentParser(description='Spatial transformer tutorial')
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--train-size', type=int, default=None)
    parser.add_argument('--test-size', type=int, default=None)
    parser.add_argument('--batch-size', type=int, default=64)
    parser.add_argument('--lr', type=float, default=0.01)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    x, y = mnist_like(train=True, n=args.train_size)
    train_loader = DataLoader(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                              batch_size=args.batch_size, shuffle=True)
    x, y = mnist_like(train=False, n=args.test_size)
    test_loader = DataLoader(TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
                             batch_size=args.batch_size)

    model = Net().to(device)
    optimizer = optim.SGD(model.parameters(), lr=args.lr)

    def train(epoch):
        model.train()
        losses = []
        for batch_idx, (data, target) in enumerate(train_loader):
            data, target = data.to(device), target.to(device)

            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))
        return losses

    def test():
        with torch.no_grad():
            model.eval()
            test_loss = 0
            correct = 0
            for data, target in test_loader:
                data, target = data.to(device), target.to(device)
                output = model(data)

                # sum up batch loss
                test_loss += F.nll_loss(output, target, reduction='sum').item()
                # get the index of the max log-probability
                pred = output.max(1, keepdim=True)[1]
                correct += pred.eq(target.view_as(pred)).sum().item()

            test_loss /= len(test_loader.dataset)
            print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'
                  .format(test_loss, correct, len(test_loader.dataset),
                          100. * correct / len(test_loader.dataset)))
            return test_loss, correct / len(test_loader.dataset)

    history = []
    for epoch in range(1, args.epochs + 1):
        losses = train(epoch)
        history.append((losses, test()))

    # the tutorial's visualize_stn(): the transformed batch, here as an array
    with torch.no_grad():
        data = next(iter(test_loader))[0].to(device)
        transformed = np.asarray(model.stn(data).cpu().numpy())
    return model, history, transformed


if __name__ == '__main__':
    main()
