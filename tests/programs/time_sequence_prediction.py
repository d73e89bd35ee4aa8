# PyTorch's examples time_sequence_prediction (generate_sine_wave.py + train.py): two stacked
# nn.LSTMCell of 51 units in double precision learn sine waves; optim.LBFGS(lr=0.8) with a
# closure that zeroes grads, runs the model, prints and returns the loss; prediction of
# `future` steps by feeding the output back. The sizes are cut down (T=100, N=20) for speed.
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


def generate_sine_wave(T=100, L=200, N=20):
    np.random.seed(2)
    x = np.empty((N, L), 'int64')
    x[:] = np.array(range(L)) + np.random.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype('float64')
    return data


class Sequence(nn.Module):
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 51)
        self.lstm2 = nn.LSTMCell(51, 51)
        self.linear = nn.Linear(51, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t = torch.zeros(input.size(0), 51, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # if we should predict the future
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def train(seq, data, steps=2, future=50, max_iter=20):
    input = torch.from_numpy(data[3:, :-1])
    target = torch.from_numpy(data[3:, 1:])
    test_input = torch.from_numpy(data[:3, :-1])
    test_target = torch.from_numpy(data[:3, 1:])
    criterion = nn.MSELoss()
    # use LBFGS as optimizer since we can load the whole data to train
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=max_iter)
    losses, test_losses = [], []
    # begin to train
    for i in range(steps):
        print('STEP: ', i)

        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            print('loss:', loss.item())
            losses.append(loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
        # begin to predict, no need to track gradient here
        with torch.no_grad():
            pred = seq(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            print('test loss:', loss.item())
            test_losses.append(loss.item())
            y = pred.detach().numpy()
    return losses, test_losses, y


def main(steps=2, max_iter=20, L=200):
    np.random.seed(0)
    torch.manual_seed(0)
    data = generate_sine_wave(L=L)
    seq = Sequence()
    seq.double()
    losses, test_losses, y = train(seq, data, steps, max_iter=max_iter)
    return seq, losses, test_losses, y


if __name__ == '__main__':
    main()
