# The character-level name classifier people write after PyTorch's "NLP From Scratch:
# Classifying Names with a Character-Level RNN" tutorial, batched: a custom Dataset of
# (name, language) pairs, a collate_fn that pads with pad_sequence and keeps the lengths,
# nn.LSTM(batch_first=True) over pack_padded_sequence(enforce_sorted=False), the last hidden
# state h_n[-1] into a Linear, clip_grad_norm_; then a char-level generator (the tutorial's
# "Generating Names") sampling with torch.multinomial from softmax(logits / temperature).
import string

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence, pad_sequence
from torch.utils.data import Dataset, DataLoader

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters) + 1   # index 0 is padding

NAMES = {
    'English': ['Smith', 'Jones', 'Taylor', 'Brown', 'Wilson', 'Johnson', 'Walker', 'Wright'],
    'Italian': ['Rossi', 'Russo', 'Ferrari', 'Esposito', 'Bianchi', 'Romano', 'Colombo',
                'Ricci'],
    'Japanese': ['Sato', 'Suzuki', 'Takahashi', 'Tanaka', 'Watanabe', 'Ito', 'Yamamoto',
                 'Nakamura'],
}
all_categories = list(NAMES)


def letterToIndex(letter):
    return all_letters.find(letter) + 1


def lineToTensor(line):
    return torch.tensor([letterToIndex(c) for c in line], dtype=torch.long)


class NamesDataset(Dataset):
    def __init__(self):
        self.items = [(name, all_categories.index(lang)) for lang, names in NAMES.items()
                      for name in names]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, idx):
        name, label = self.items[idx]
        return lineToTensor(name), label


def collate_batch(batch):
    seqs, labels = zip(*batch)
    lengths = torch.tensor([len(s) for s in seqs])
    padded = pad_sequence(seqs, batch_first=True, padding_value=0)
    return padded, lengths, torch.tensor(labels)


class CharLSTM(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_size, output_size, num_layers=1):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x, lengths):
        embedded = self.embedding(x)
        packed = pack_padded_sequence(embedded, lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        packed_out, (h_n, c_n) = self.lstm(packed)
        out, out_lengths = pad_packed_sequence(packed_out, batch_first=True)
        assert out.shape[:2] == x.shape[:2] and torch.equal(out_lengths, lengths.cpu())
        return F.log_softmax(self.fc(h_n[-1]), dim=1)


def categoryFromOutput(output):
    top_n, top_i = output.topk(1)
    category_i = top_i[0].item()
    return all_categories[category_i], category_i


def train_classifier(model, loader, epochs, lr=0.01):
    criterion = nn.NLLLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for epoch in range(epochs):
        for x, lengths, y in loader:
            optimizer.zero_grad()
            output = model(x, lengths)
            loss = criterion(output, y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            losses.append(loss.item())
        print(f'epoch {epoch} loss {losses[-1]:.4f}')
    return losses


class CharGenerator(nn.Module):
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.lstm = nn.LSTM(hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, vocab_size)

    def forward(self, x, hidden=None):
        output, hidden = self.lstm(self.embedding(x), hidden)
        return self.out(output), hidden


def sample(model, start_letter='S', max_length=8, temperature=0.8):
    model.eval()
    with torch.no_grad():
        x = lineToTensor(start_letter).unsqueeze(0)
        hidden = None
        output_name = start_letter
        for i in range(max_length):
            logits, hidden = model(x, hidden)
            probs = F.softmax(logits[:, -1, :] / temperature, dim=-1)
            idx = torch.multinomial(probs, 1)
            topi = idx.item()
            if topi == 0:
                break
            output_name += all_letters[topi - 1]
            x = idx
    return output_name


def train_generator(model, names, steps, lr=0.005):
    seqs = [lineToTensor(n) for n in names]
    x = pad_sequence([s[:-1] for s in seqs], batch_first=True)
    target = pad_sequence([s[1:] for s in seqs], batch_first=True)   # 0 (pad) is ignored
    optimizer = torch.optim.RMSprop(model.parameters(), lr=lr)
    losses = []
    for step in range(steps):
        logits, _ = model(x)
        loss = F.cross_entropy(logits.reshape(-1, n_letters), target.reshape(-1), ignore_index=0)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


def main(epochs=6):
    torch.manual_seed(0)
    loader = DataLoader(NamesDataset(), batch_size=8, shuffle=True, collate_fn=collate_batch)
    model = CharLSTM(n_letters, 16, 32, len(all_categories))
    losses = train_classifier(model, loader, epochs)
    model.eval()
    with torch.no_grad():
        x, lengths, y = collate_batch([NamesDataset()[i] for i in range(len(NamesDataset()))])
        out = model(x, lengths)
        acc = (out.argmax(dim=1) == y).float().mean().item()
        guess, _ = categoryFromOutput(model(lineToTensor('Tanaka').unsqueeze(0),
                                            torch.tensor([6])))
    print(f'train accuracy {acc:.2f}, Tanaka -> {guess}')
    gen = CharGenerator(n_letters, 32)
    gen_losses = train_generator(gen, [n for ns in NAMES.values() for n in ns], 15)
    names = [sample(gen, c) for c in 'SRT']
    print('samples', names)
    return losses, acc, gen_losses, names


if __name__ == '__main__':
    main()
