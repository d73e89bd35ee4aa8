# PyTorch's tutorial "Language Modeling with nn.Transformer" (PositionalEncoding with a
# registered buffer, nn.TransformerEncoder of TransformerEncoderLayer, nn.Embedding scaled by
# sqrt(d_model), generate_square_subsequent_mask, batchify/get_batch, clip_grad_norm_, StepLR,
# copy.deepcopy of the best model), on a tiny built-in text instead of WikiText-2, and the
# text classifier variant people derive from it (batch_first, a boolean causal mask from
# torch.triu(torch.ones(...), diagonal=1).bool(), src_key_padding_mask, masked mean pooling).
import copy
import math
import time

import torch
from torch import nn, Tensor
from torch.nn import TransformerEncoder, TransformerEncoderLayer

device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')

TEXT = ("the quick brown fox jumps over the lazy dog . the dog sleeps and the fox runs . "
        "a lazy fox and a quick dog meet over the hill . the hill is green and the sky is "
        "blue . ") * 4


class PositionalEncoding(nn.Module):

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x: Tensor) -> Tensor:
        """
        Arguments:
            x: Tensor, shape ``[seq_len, batch_size, embedding_dim]``
        """
        x = x + self.pe[:x.size(0)]
        return self.dropout(x)


class TransformerModel(nn.Module):

    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int,
                 nlayers: int, dropout: float = 0.5):
        super().__init__()
        self.model_type = 'Transformer'
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        encoder_layers = TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = TransformerEncoder(encoder_layers, nlayers)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)

        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src: Tensor, src_mask: Tensor = None) -> Tensor:
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src)).to(device)
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


def generate_square_subsequent_mask(sz: int) -> Tensor:
    """Generates an upper-triangular matrix of ``-inf``, with zeros on ``diag``."""
    return torch.triu(torch.ones(sz, sz) * float('-inf'), diagonal=1)


class Vocab:
    def __init__(self, tokens):
        self.itos = ['<pad>', '<unk>'] + sorted(set(tokens))
        self.stoi = {s: i for i, s in enumerate(self.itos)}

    def __len__(self):
        return len(self.itos)

    def __call__(self, tokens):
        return [self.stoi.get(t, 1) for t in tokens]


def data_process(vocab, text):
    return torch.tensor(vocab(text.split()), dtype=torch.long)


def batchify(data: Tensor, bsz: int) -> Tensor:
    seq_len = data.size(0) // bsz
    data = data[:seq_len * bsz]
    data = data.view(bsz, seq_len).t().contiguous()
    return data.to(device)


bptt = 8


def get_batch(source: Tensor, i: int):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i+seq_len]
    target = source[i+1:i+1+seq_len].reshape(-1)
    return data, target


def train(model, train_data, criterion, optimizer, scheduler, ntokens, epoch):
    model.train()  # turn on train mode
    total_loss = 0.
    log_interval = 2
    start_time = time.time()
    losses = []
    num_batches = len(train_data) // bptt
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        output = model(data)
        output_flat = output.view(-1, ntokens)
        loss = criterion(output_flat, targets)

        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()

        total_loss += loss.item()
        losses.append(loss.item())
        if batch % log_interval == 0 and batch > 0:
            lr = scheduler.get_last_lr()[0]
            ms_per_batch = (time.time() - start_time) * 1000 / log_interval
            cur_loss = total_loss / log_interval
            ppl = math.exp(cur_loss)
            print(f'| epoch {epoch:3d} | {batch:5d}/{num_batches:5d} batches | '
                  f'lr {lr:02.2f} | ms/batch {ms_per_batch:5.2f} | '
                  f'loss {cur_loss:5.2f} | ppl {ppl:8.2f}')
            total_loss = 0
            start_time = time.time()
    return losses


def evaluate(model: nn.Module, eval_data: Tensor, criterion, ntokens) -> float:
    model.eval()  # turn on evaluation mode
    total_loss = 0.
    with torch.no_grad():
        for i in range(0, eval_data.size(0) - 1, bptt):
            data, targets = get_batch(eval_data, i)
            seq_len = data.size(0)
            output = model(data, generate_square_subsequent_mask(seq_len))
            output_flat = output.view(-1, ntokens)
            total_loss += seq_len * criterion(output_flat, targets).item()
    return total_loss / (len(eval_data) - 1)


class TextClassifier(nn.Module):
    def __init__(self, vocab_size, d_model=32, nhead=4, num_layers=1, num_classes=2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.pos = PositionalEncoding(d_model, dropout=0.0)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=num_layers)
        self.fc = nn.Linear(d_model, num_classes)

    def forward(self, x, causal=False):
        pad_mask = x == 0                                   # (B, T) True where padding
        h = self.embedding(x)
        h = self.pos(h.transpose(0, 1)).transpose(0, 1)     # pe is (max_len, 1, d)
        mask = None
        if causal:
            T = x.size(1)
            mask = torch.triu(torch.ones(T, T), diagonal=1).bool().to(x.device)
        h = self.encoder(h, mask=mask, src_key_padding_mask=pad_mask)
        h = h.masked_fill(pad_mask.unsqueeze(-1), 0.0)
        h = h.sum(dim=1) / (~pad_mask).sum(dim=1, keepdim=True)
        return self.fc(h)


def classifier_data(vocab):
    sents = [("the quick fox runs", 1), ("the lazy dog sleeps", 0),
             ("a quick dog runs over the hill", 1), ("the dog sleeps", 0),
             ("quick quick fox", 1), ("lazy lazy dog sleeps and sleeps", 0)]
    seqs = [torch.tensor(vocab(s.split())) for s, _ in sents]
    x = nn.utils.rnn.pad_sequence(seqs, batch_first=True, padding_value=0)
    y = torch.tensor([label for _, label in sents])
    return x, y


def main(epochs=2):
    words = TEXT.split()
    vocab = Vocab(words)
    data = data_process(vocab, TEXT)
    n = int(len(data) * 0.8)
    train_data = batchify(data[:n], 4)
    val_data = batchify(data[n:], 2)
    ntokens = len(vocab)
    model = TransformerModel(ntokens, 32, 2, 64, 2, 0.2).to(device)
    criterion = nn.CrossEntropyLoss()
    lr = 5.0
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.95)
    best_val_loss = float('inf')
    best_model = None
    history = []
    for epoch in range(1, epochs + 1):
        history += train(model, train_data, criterion, optimizer, scheduler, ntokens, epoch)
        val_loss = evaluate(model, val_data, criterion, ntokens)
        val_ppl = math.exp(val_loss)
        print('-' * 89)
        print(f'| end of epoch {epoch:3d} | valid loss {val_loss:5.2f} | valid ppl {val_ppl:8.2f}')
        if val_loss < best_val_loss:
            best_val_loss = val_loss
            best_model = copy.deepcopy(model)
        scheduler.step()
    assert best_model is not None

    clf = TextClassifier(ntokens)
    x, y = classifier_data(vocab)
    opt = torch.optim.Adam(clf.parameters(), lr=1e-2)
    clf_losses = []
    for step in range(20):
        logits = clf(x, causal=step % 2 == 1)
        loss = nn.functional.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        clf_losses.append(loss.item())
    acc = (clf(x).argmax(dim=1) == y).float().mean().item()
    print('classifier', clf_losses[0], clf_losses[-1], acc)
    return history, best_val_loss, clf_losses, acc


if __name__ == '__main__':
    main()
