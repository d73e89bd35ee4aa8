# The "Upgraded Sentiment Analysis" model of bentrevett's pytorch-sentiment-analysis tutorials:
# an embedding with a padding index, a multi-layer bidirectional nn.LSTM over packed padded
# sequences (nn.utils.rnn.pack_padded_sequence / pad_packed_sequence, lengths unsorted), the
# last forward and backward hidden states concatenated into a linear layer; BCEWithLogitsLoss,
# Adam and binary_accuracy. The IMDb download is replaced by generated reviews: sequences of
# word ids of random lengths, positive when they hold more "good" words than "bad" ones.
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

PAD_IDX = 0
GOOD = (2, 3, 4)
BAD = (5, 6, 7)


def make_reviews(n, vocab_size, max_len, seed):
    rng = np.random.default_rng(seed)
    reviews, labels = [], []
    for _ in range(n):
        length = int(rng.integers(3, max_len + 1))
        words = rng.integers(8, vocab_size, size=length)
        k = int(rng.integers(1, min(length, 4) + 1))
        polarity = GOOD if rng.random() < 0.5 else BAD
        pos = rng.choice(length, size=k, replace=False)
        words[pos] = rng.choice(polarity, size=k)
        reviews.append(words)
        labels.append(1.0 if polarity is GOOD else 0.0)
    return reviews, np.array(labels, dtype=np.float32)


def batches(reviews, labels, batch_size, device):
    """(text (max_len, batch) padded with PAD_IDX, lengths, labels) per batch, as torchtext's
    BucketIterator with include_lengths=True gives them (here without sorting)."""
    for i in range(0, len(reviews), batch_size):
        chunk = reviews[i:i + batch_size]
        lengths = [len(r) for r in chunk]
        text = np.full((max(lengths), len(chunk)), PAD_IDX, dtype=np.int64)
        for j, r in enumerate(chunk):
            text[:len(r), j] = r
        yield (torch.from_numpy(text).to(device), torch.tensor(lengths),
               torch.from_numpy(labels[i:i + batch_size]).to(device))


class RNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, n_layers,
                 bidirectional, dropout, pad_idx):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)
        self.rnn = nn.LSTM(embedding_dim,
                           hidden_dim,
                           num_layers=n_layers,
                           bidirectional=bidirectional,
                           dropout=dropout)
        self.fc = nn.Linear(hidden_dim * 2, output_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, text, text_lengths):
        # text = [sent len, batch size]
        embedded = self.dropout(self.embedding(text))
        # embedded = [sent len, batch size, emb dim]

        # pack sequence
        # lengths need to be on CPU!
        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, text_lengths.to('cpu'),
                                                            enforce_sorted=False)
        packed_output, (hidden, cell) = self.rnn(packed_embedded)

        # unpack sequence
        output, output_lengths = nn.utils.rnn.pad_packed_sequence(packed_output)
        # output = [sent len, batch size, hid dim * num directions]
        # output over padding tokens are zero tensors

        # hidden = [num layers * num directions, batch size, hid dim]
        # concat the final forward (hidden[-2,:,:]) and backward (hidden[-1,:,:]) hidden layers
        # and apply dropout
        hidden = self.dropout(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))
        # hidden = [batch size, hid dim * num directions]
        return self.fc(hidden)


def binary_accuracy(preds, y):
    """Returns accuracy per batch, i.e. if you get 8/10 right, this returns 0.8, NOT 8"""
    # round predictions to the closest integer
    rounded_preds = torch.round(torch.sigmoid(preds))
    correct = (rounded_preds == y).float()  # convert into float for division
    acc = correct.sum() / len(correct)
    return acc


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def main(argv=None):
    parser = argparse.ArgumentParser(description='Packed padded sequences sentiment analysis')
    parser.add_argument('--epochs', type=int, default=5)
    parser.add_argument('--train-size', type=int, default=256)
    parser.add_argument('--valid-size', type=int, default=128)
    parser.add_argument('--batch-size', type=int, default=32)
    parser.add_argument('--vocab-size', type=int, default=50)
    parser.add_argument('--max-len', type=int, default=12)
    parser.add_argument('--embedding-dim', type=int, default=16)
    parser.add_argument('--hidden-dim', type=int, default=16)
    parser.add_argument('--n-layers', type=int, default=2)
    parser.add_argument('--dropout', type=float, default=0.5)
    parser.add_argument('--seed', type=int, default=1234)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

    train_data = make_reviews(args.train_size, args.vocab_size, args.max_len, args.seed)
    valid_data = make_reviews(args.valid_size, args.vocab_size, args.max_len, args.seed + 1)

    model = RNN(args.vocab_size, args.embedding_dim, args.hidden_dim, 1, args.n_layers, True,
                args.dropout, PAD_IDX)
    print(f'The model has {count_parameters(model):,} trainable parameters')
    model.embedding.weight.data[PAD_IDX] = torch.zeros(args.embedding_dim)

    optimizer = optim.Adam(model.parameters())
    criterion = nn.BCEWithLogitsLoss()
    model = model.to(device)
    criterion = criterion.to(device)

    def train():
        epoch_loss = 0
        epoch_acc = 0
        n = 0
        model.train()
        for text, text_lengths, label in batches(*train_data, args.batch_size, device):
            optimizer.zero_grad()
            predictions = model(text, text_lengths).squeeze(1)
            loss = criterion(predictions, label)
            acc = binary_accuracy(predictions, label)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
            epoch_acc += acc.item()
            n += 1
        return epoch_loss / n, epoch_acc / n

    def evaluate():
        epoch_loss = 0
        epoch_acc = 0
        n = 0
        model.eval()
        with torch.no_grad():
            for text, text_lengths, label in batches(*valid_data, args.batch_size, device):
                predictions = model(text, text_lengths).squeeze(1)
                loss = criterion(predictions, label)
                acc = binary_accuracy(predictions, label)
                epoch_loss += loss.item()
                epoch_acc += acc.item()
                n += 1
        return epoch_loss / n, epoch_acc / n

    history = []
    for epoch in range(args.epochs):
        start_time = time.time()
        train_loss, train_acc = train()
        valid_loss, valid_acc = evaluate()
        secs = time.time() - start_time
        print(f'Epoch: {epoch+1:02} | Epoch Time: {secs:.2f}s')
        print(f'\tTrain Loss: {train_loss:.3f} | Train Acc: {train_acc*100:.2f}%')
        print(f'\t Val. Loss: {valid_loss:.3f} |  Val. Acc: {valid_acc*100:.2f}%')
        history.append((train_loss, train_acc, valid_loss, valid_acc))
    return model, history


if __name__ == '__main__':
    main()
