# PyTorch's examples vae/main.py (fc1 -> fc21/fc22 encoder, reparameterize with
# torch.randn_like, a sigmoid decoder, F.binary_cross_entropy(reduction='sum') plus the KL
# divergence -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()), Adam(lr=1e-3), the
# train/test loops with their prints, sampling from torch.randn(64, 20) under no_grad and the
# torch.cat comparison of inputs and reconstructions), on synthetic 28x28 "digits": blobs at
# positions that depend on the index (MNIST download replaced).
import argparse

import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F


def blobs(n):
    """n 1x28x28 images in [0, 1]: a Gaussian blob whose centre depends on the index."""
    i = torch.arange(n, dtype=torch.float32)
    cy = 7 + (i * 3) % 14
    cx = 7 + (i * 5) % 14
    g = torch.arange(28, dtype=torch.float32)
    img = torch.exp(-((g.view(1, 28, 1) - cy.view(-1, 1, 1)) ** 2 +
                      (g.view(1, 1, 28) - cx.view(-1, 1, 1)) ** 2) / 18.0)
    return img.unsqueeze(1).clamp(0, 1), (i % 10).long()


class VAE(nn.Module):
    def __init__(self):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5*logvar)
        eps = torch.randn_like(std)
        return mu + eps*std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')

    # see Appendix B from VAE paper:
    # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # https://arxiv.org/abs/1312.6114
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def train(model, optimizer, train_loader, device, epoch, log_interval):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        if batch_idx % log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader),
                loss.item() / len(data)))

    avg = train_loss / len(train_loader.dataset)
    print('====> Epoch: {} Average loss: {:.4f}'.format(epoch, avg))
    return avg


def test(model, test_loader, device, batch_size):
    model.eval()
    test_loss = 0
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 8)
                comparison = torch.cat([data[:n],
                                      recon_batch.view(batch_size, 1, 28, 28)[:n]])
                assert comparison.shape == (2 * n, 1, 28, 28)

    test_loss /= len(test_loader.dataset)
    print('====> Test set loss: {:.4f}'.format(test_loss))
    return test_loss


def main(argv=None):
    parser = argparse.ArgumentParser(description='VAE MNIST Example')
    parser.add_argument('--batch-size', type=int, default=32, metavar='N')
    parser.add_argument('--epochs', type=int, default=2, metavar='N')
    parser.add_argument('--no-accel', action='store_true')
    parser.add_argument('--seed', type=int, default=1, metavar='S')
    parser.add_argument('--log-interval', type=int, default=2, metavar='N')
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.no_accel else "cpu")
    kwargs = {'num_workers': 1, 'pin_memory': True} if device.type == "cuda" else {}
    train_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(*blobs(128)),
        batch_size=args.batch_size, shuffle=True, **kwargs)
    test_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(*blobs(64)),
        batch_size=args.batch_size, shuffle=False, **kwargs)

    model = VAE().to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    history = []
    for epoch in range(1, args.epochs + 1):
        history.append((train(model, optimizer, train_loader, device, epoch, args.log_interval),
                        test(model, test_loader, device, args.batch_size)))
        with torch.no_grad():
            sample = torch.randn(64, 20).to(device)
            sample = model.decode(sample).cpu()
            assert sample.view(64, 1, 28, 28).shape == (64, 1, 28, 28)
    return model, history


if __name__ == "__main__":
    main()
