# PyTorch's tutorial "Text classification with the torchtext library"
# (text_sentiment_ngrams_tutorial.py): the AG_NEWS model, an nn.EmbeddingBag (mean over each
# text, texts concatenated with offsets) followed by a Linear layer, trained with
# CrossEntropyLoss, SGD (lr 5), clip_grad_norm_(0.1) and StepLR(optimizer, 1.0, gamma=0.1)
# stepped when the validation accuracy drops; collate_batch builds labels, the token stream
# and offsets (cumsum of lengths); random_split makes the validation set; predict() labels one
# text. AG_NEWS (a download) is replaced by generated news-like lines of four topics, and
# torchtext's basic_english tokenizer and build_vocab_from_iterator are written out here with
# plain Python (what they do: lower-case, split off punctuation; a token -> index map with
# "<unk>" as the default index).
import random
import re
import time
from collections import Counter

import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data.dataset import random_split

######################################################################
# Access to the raw dataset iterators
# -----------------------------------
#
# AG_NEWS yields (label, text) pairs with labels 1..4 (World, Sports, Business, Sci/Tec).

TOPICS = {
    1: "government minister election war president country talks leaders united nations "
       "troops embassy treaty border parliament vote",
    2: "team game season coach players win match league championship score cup final "
       "victory olympic striker tournament",
    3: "company shares profit market stocks oil prices bank quarter investors sales "
       "economy billion deal earnings growth",
    4: "software computer internet microsoft google space research technology users "
       "online phone scientists nasa web data chip",
}
COMMON = "the a of to in and on for with said new after over its at by"


def AG_NEWS(split="train", n=None, seed=0):
    """Generated stand-in for torchtext.datasets.AG_NEWS(split=...): (label, text) pairs."""
    n = n or (1200 if split == "train" else 200)
    rng = random.Random(seed if split == "train" else seed + 1)
    common = COMMON.split()
    out = []
    for _ in range(n):
        label = rng.randint(1, 4)
        words = TOPICS[label].split()
        text = [rng.choice(words if rng.random() < 0.4 else common)
                for _ in range(rng.randint(6, 14))]
        text[0] = text[0].capitalize()
        out.append((label, " ".join(text) + rng.choice([".", "!", "?", ", reuters says."])))
    return out


######################################################################
# Prepare data processing pipelines
# ---------------------------------

_patterns = [r"\'", r"\"", r"\.", r"<br \/>", r",", r"\(", r"\)", r"\!", r"\?", r"\;", r"\:",
             r"\s+"]
_replacements = [" '  ", "", " . ", " ", " , ", " ( ", " ) ", " ! ", " ? ", " ", " ", " "]
_patterns_dict = list((re.compile(p), r) for p, r in zip(_patterns, _replacements))


def tokenizer(line):
    """torchtext's get_tokenizer("basic_english")."""
    line = line.lower()
    for pattern_re, replaced_str in _patterns_dict:
        line = pattern_re.sub(replaced_str, line)
    return line.split()


class Vocab:
    """torchtext's build_vocab_from_iterator(..., specials=["<unk>"]) with
    set_default_index(vocab["<unk>"]): tokens by decreasing frequency (ties: first seen)."""

    def __init__(self, iterator, specials=()):
        counter = Counter()
        for tokens in iterator:
            counter.update(tokens)
        ordered = sorted(counter.items(), key=lambda x: -x[1])
        self.itos = list(specials) + [t for t, _ in ordered if t not in specials]
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.default_index = None

    def set_default_index(self, index):
        self.default_index = index

    def __getitem__(self, token):
        return self.stoi.get(token, self.default_index)

    def __call__(self, tokens):
        return [self[t] for t in tokens]

    def __len__(self):
        return len(self.itos)


def yield_tokens(data_iter):
    for _, text in data_iter:
        yield tokenizer(text)


train_iter = AG_NEWS(split="train")
vocab = Vocab(yield_tokens(train_iter), specials=["<unk>"])
vocab.set_default_index(vocab["<unk>"])

text_pipeline = lambda x: vocab(tokenizer(x))
label_pipeline = lambda x: int(x) - 1


######################################################################
# Generate data batch and iterator
# --------------------------------

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list.to(device), text_list.to(device), offsets.to(device)


######################################################################
# Define the model
# ----------------

class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


######################################################################
# Define functions to train the model and evaluate results.
# ---------------------------------------------------------

def train(dataloader, model, criterion, optimizer, epoch, log_interval=500):
    model.train()
    total_acc, total_count = 0, 0
    start_time = time.time()
    losses = []

    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        losses.append(loss.item())
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        if idx % log_interval == 0 and idx > 0:
            elapsed = time.time() - start_time
            print(
                "| epoch {:3d} | {:5d}/{:5d} batches "
                "| accuracy {:8.3f} | {:5.2f}s".format(
                    epoch, idx, len(dataloader), total_acc / total_count, elapsed
                )
            )
            total_acc, total_count = 0, 0
            start_time = time.time()
    return losses


def evaluate(dataloader, model, criterion):
    model.eval()
    total_acc, total_count = 0, 0

    with torch.no_grad():
        for idx, (label, text, offsets) in enumerate(dataloader):
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count


ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}


def predict(model, text, text_pipeline):
    with torch.no_grad():
        text = torch.tensor(text_pipeline(text))
        output = model(text, torch.tensor([0]))
        return output.argmax(1).item() + 1


def main(EPOCHS=10, LR=5, BATCH_SIZE=64, emsize=64, log_interval=500):
    torch.manual_seed(0)
    train_iter = AG_NEWS(split="train")
    num_class = len(set([label for (label, text) in train_iter]))
    vocab_size = len(vocab)
    model = TextClassificationModel(vocab_size, emsize, num_class).to(device)

    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    total_accu = None
    train_iter, test_iter = AG_NEWS("train"), AG_NEWS("test")
    train_dataset = train_iter  # to_map_style_dataset: a list already is one
    test_dataset = test_iter
    num_train = int(len(train_dataset) * 0.95)
    split_train_, split_valid_ = random_split(
        train_dataset, [num_train, len(train_dataset) - num_train],
        generator=torch.Generator().manual_seed(42)
    )

    train_dataloader = DataLoader(
        split_train_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
    )
    valid_dataloader = DataLoader(
        split_valid_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
    )
    test_dataloader = DataLoader(
        test_dataset, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
    )

    history, lrs = [], []
    for epoch in range(1, EPOCHS + 1):
        epoch_start_time = time.time()
        history += train(train_dataloader, model, criterion, optimizer, epoch, log_interval)
        accu_val = evaluate(valid_dataloader, model, criterion)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        lrs.append(optimizer.param_groups[0]["lr"])
        print("-" * 59)
        print(
            "| end of epoch {:3d} | time: {:5.2f}s | "
            "valid accuracy {:8.3f} ".format(
                epoch, time.time() - epoch_start_time, accu_val
            )
        )
        print("-" * 59)

    ######################################################################
    # Evaluate the model with test dataset
    # ------------------------------------

    print("Checking the results of test dataset.")
    accu_test = evaluate(test_dataloader, model, criterion)
    print("test accuracy {:8.3f}".format(accu_test))

    ######################################################################
    # Test on a random news
    # ---------------------

    ex_text_str = "The team won the championship final after a late goal by the striker."

    model = model.to("cpu")

    print("This is a %s news" % ag_news_label[predict(model, ex_text_str, text_pipeline)])
    return model, history, lrs, accu_test


if __name__ == "__main__":
    main()
