# A GRU classifier of variable-length sequences as the forums and blog posts write it
# around torch.nn.utils.rnn: sequences of different lengths padded by pad_sequence(
# batch_first=True, padding_value=0) in a collate_fn, pack_padded_sequence(lengths on the
# CPU, batch_first=True, enforce_sorted=False), a 2-layer bidirectional nn.GRU over the
# PackedSequence, the final hidden states joined by torch.cat((hidden[-2, :, :],
# hidden[-1, :, :]), dim=1), pad_packed_sequence back to (output, lengths) for a masked
# mean-pool, pack_sequence of a list of tensors, PackedSequence fields (data, batch_sizes,
# sorted_indices, unsorted_indices). The task: are there more 1s than 2s in a sequence of
# 1s and 2s of length 2..9?
import torch
import torch.nn as nn
from torch.nn.utils.rnn import (pack_padded_sequence, pack_sequence, pad_packed_sequence,
                                pad_sequence)
from torch.utils.data import DataLoader, Dataset


class MajorityDataset(Dataset):
    def __init__(self, n, seed=0):
        g = torch.Generator().manual_seed(seed)
        lengths = torch.randint(2, 10, (n,), generator=g)
        self.seqs = [torch.randint(1, 3, (int(l),), generator=g) for l in lengths]
        self.labels = [int((s == 1).sum() > (s == 2).sum()) for s in self.seqs]

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, idx):
        return self.seqs[idx], self.labels[idx]


def collate_fn(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=0)
    return padded, lengths, torch.tensor(labels)


class GRUClassifier(nn.Module):
    def __init__(self, vocab_size=3, embedding_dim=8, hidden_dim=16, n_layers=2,
                 output_dim=2, dropout=0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.rnn = nn.GRU(embedding_dim, hidden_dim, num_layers=n_layers, bidirectional=True,
                          dropout=dropout, batch_first=True)
        self.fc = nn.Linear(hidden_dim * 4, output_dim)

    def forward(self, text, text_lengths):
        embedded = self.embedding(text)
        # pack sequence
        # lengths need to be on CPU!
        packed_embedded = pack_padded_sequence(embedded, text_lengths.to('cpu'),
                                               batch_first=True, enforce_sorted=False)
        packed_output, hidden = self.rnn(packed_embedded)
        # unpack sequence
        output, output_lengths = pad_packed_sequence(packed_output, batch_first=True)
        # output = [batch size, sent len, hid dim * num directions]
        # hidden = [n layers * n directions, batch size, hid dim]
        mask = (torch.arange(output.size(1))[None, :] < output_lengths[:, None]).unsqueeze(-1)
        mean_pooled = (output * mask).sum(1) / output_lengths.unsqueeze(1).float()
        # concat the final forward (hidden[-2,:,:]) and backward (hidden[-1,:,:]) hidden layers
        hidden = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
        return self.fc(torch.cat((hidden, mean_pooled), dim=1))


def main(epochs=25, batch_size=16, n_train=192, n_test=96):
    torch.manual_seed(0)
    train_loader = DataLoader(MajorityDataset(n_train), batch_size=batch_size, shuffle=True,
                              collate_fn=collate_fn)
    test_loader = DataLoader(MajorityDataset(n_test, seed=1), batch_size=32, collate_fn=collate_fn)
    model = GRUClassifier()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(epochs):
        model.train()
        epoch_loss = 0.0
        for text, lengths, labels in train_loader:
            optimizer.zero_grad()
            predictions = model(text, lengths)
            loss = criterion(predictions, labels)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        losses.append(epoch_loss / len(train_loader))
    model.eval()
    correct = 0
    with torch.no_grad():
        for text, lengths, labels in test_loader:
            correct += (model(text, lengths).argmax(1) == labels).sum().item()
    accuracy = correct / len(test_loader.dataset)

    # pack_sequence of a list, and the PackedSequence's fields
    a, b, c = torch.tensor([1, 2, 3]), torch.tensor([4, 5]), torch.tensor([6])
    packed = pack_sequence([b, a, c], enforce_sorted=False)
    fields = {"data": packed.data.tolist(), "batch_sizes": packed.batch_sizes.tolist(),
              "sorted_indices": packed.sorted_indices.tolist(),
              "unsorted_indices": packed.unsorted_indices.tolist()}
    padded, lens = pad_packed_sequence(packed, batch_first=True, padding_value=-1)
    fields["unpacked"] = (padded.tolist(), lens.tolist())
    return model, losses, accuracy, fields


if __name__ == "__main__":
    main()
