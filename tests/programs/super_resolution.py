# PyTorch's examples super_resolution (model.py: the efficient sub-pixel network of conv layers
# and nn.PixelShuffle(upscale_factor), init.orthogonal_ with init.calculate_gain('relu');
# main.py: MSELoss, Adam, PSNR as 10 * log10(1 / mse.item())), written again for clgrad's
# tests. The BSDS300 download is replaced by local digits: the target is the 28x28 image in
# [0, 1], the input its average over upscale_factor x upscale_factor blocks. The channel counts
# are arguments (the example's 64, 64, 32 by default).
import argparse
from math import log10

import torch
import torch.nn as nn
import torch.nn.init as init
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

from local_data import mnist_like


class Net(nn.Module):
    def __init__(self, upscale_factor, channels=(64, 64, 32)):
        super(Net, self).__init__()
        c1, c2, c3 = channels

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, c1, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(c1, c2, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(c2, c3, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(c3, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


def get_set(train, upscale_factor, n=None):
    target, _ = mnist_like(train=train, n=n, normalize=False)
    target = torch.from_numpy(target)
    input = nn.functional.avg_pool2d(target, upscale_factor)
    return TensorDataset(input, target)


def main(argv=None):
    parser = argparse.ArgumentParser(description='PyTorch Super Res Example')
    parser.add_argument('--upscale_factor', type=int, default=2, help="super resolution upscale factor")
    parser.add_argument('--batchSize', type=int, default=16, help='training batch size')
    parser.add_argument('--testBatchSize', type=int, default=50, help='testing batch size')
    parser.add_argument('--nEpochs', type=int, default=2, help='number of epochs to train for')
    parser.add_argument('--lr', type=float, default=0.01, help='Learning Rate. Default=0.01')
    parser.add_argument('--channels', type=int, nargs=3, default=[64, 64, 32])
    parser.add_argument('--train-size', type=int, default=None)
    parser.add_argument('--test-size', type=int, default=None)
    parser.add_argument('--save-model', action='store_true', help='torch.save the model')
    parser.add_argument('--seed', type=int, default=123, help='random seed to use. Default=123')
    opt = parser.parse_args(argv)

    print(opt)

    torch.manual_seed(opt.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    print('===> Loading datasets')
    train_set = get_set(True, opt.upscale_factor, opt.train_size)
    test_set = get_set(False, opt.upscale_factor, opt.test_size)
    training_data_loader = DataLoader(dataset=train_set, batch_size=opt.batchSize, shuffle=True)
    testing_data_loader = DataLoader(dataset=test_set, batch_size=opt.testBatchSize, shuffle=False)

    print('===> Building model')
    model = Net(upscale_factor=opt.upscale_factor, channels=opt.channels).to(device)
    criterion = nn.MSELoss()

    optimizer = optim.Adam(model.parameters(), lr=opt.lr)

    def train(epoch):
        epoch_loss = 0
        losses = []
        for iteration, batch in enumerate(training_data_loader, 1):
            input, target = batch[0].to(device), batch[1].to(device)

            optimizer.zero_grad()
            loss = criterion(model(input), target)
            epoch_loss += loss.item()
            losses.append(loss.item())
            loss.backward()
            optimizer.step()

            print("===> Epoch[{}]({}/{}): Loss: {:.4f}".format(epoch, iteration, len(training_data_loader), loss.item()))

        print("===> Epoch {} Complete: Avg. Loss: {:.4f}".format(epoch, epoch_loss / len(training_data_loader)))
        return losses

    def test():
        avg_psnr = 0
        with torch.no_grad():
            for batch in testing_data_loader:
                input, target = batch[0].to(device), batch[1].to(device)

                prediction = model(input)
                mse = criterion(prediction, target)
                psnr = 10 * log10(1 / mse.item())
                avg_psnr += psnr
        print("===> Avg. PSNR: {:.4f} dB".format(avg_psnr / len(testing_data_loader)))
        return avg_psnr / len(testing_data_loader)

    def checkpoint(epoch):
        model_out_path = "model_epoch_{}.pth".format(epoch)
        torch.save(model, model_out_path)
        print("Checkpoint saved to {}".format(model_out_path))

    history = [(None, test())]
    for epoch in range(1, opt.nEpochs + 1):
        losses = train(epoch)
        history.append((losses, test()))
        if opt.save_model:
            checkpoint(epoch)
    return model, history


if __name__ == '__main__':
    main()
