# torch.utils.data as the documentation and forum answers use it around a training loop:
# TensorDataset, random_split with fractions and a seeded generator, Subset of indices,
# ConcatDataset of two sources, a class-balanced WeightedRandomSampler (weights = 1 /
# class count per sample, replacement=True), SubsetRandomSampler for a validation split,
# BatchSampler over a SequentialSampler passed as batch_sampler=, an IterableDataset that
# splits its range with get_worker_info(), default_collate of dict samples, a collate_fn
# that pads, DataLoader(drop_last=True) and len() of loaders. A small imbalanced
# classification problem is trained on the balanced loader.
import math

import torch
import torch.nn as nn
from torch.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset,
                              IterableDataset, SequentialSampler, Subset,
                              SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                              default_collate, get_worker_info, random_split)


def make_imbalanced(n_major=90, n_minor=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.randn(n_major, 2, generator=g) + torch.tensor([1.0, 1.0])
    x1 = torch.randn(n_minor, 2, generator=g) - torch.tensor([1.0, 1.0])
    return TensorDataset(torch.cat([x0, x1]), torch.cat([torch.zeros(n_major, dtype=torch.long),
                                                         torch.ones(n_minor, dtype=torch.long)]))


class RangeStream(IterableDataset):
    """The documentation's MyIterableDataset: each worker takes a slice of [start, end)."""

    def __init__(self, start, end):
        super().__init__()
        assert end > start, "this example code only works with end >= start"
        self.start = start
        self.end = end

    def __iter__(self):
        worker_info = get_worker_info()
        if worker_info is None:  # single-process data loading, return the full iterator
            iter_start = self.start
            iter_end = self.end
        else:  # in a worker process
            # split workload
            per_worker = int(math.ceil((self.end - self.start) / float(worker_info.num_workers)))
            worker_id = worker_info.id
            iter_start = self.start + worker_id * per_worker
            iter_end = min(iter_start + per_worker, self.end)
        return iter(range(iter_start, iter_end))


class Words(Dataset):
    def __init__(self, words):
        self.words = words

    def __len__(self):
        return len(self.words)

    def __getitem__(self, i):
        w = self.words[i]
        return {"ids": torch.tensor([ord(c) - 96 for c in w]), "length": len(w)}


def pad_collate(batch):
    lengths = torch.tensor([b["length"] for b in batch])
    ids = torch.zeros(len(batch), int(lengths.max()), dtype=torch.long)
    for i, b in enumerate(batch):
        ids[i, :b["length"]] = b["ids"]
    return ids, lengths


def main(epochs=15):
    torch.manual_seed(0)
    out = {}
    dataset = make_imbalanced()

    # random_split with fractions and a generator (reproducible splits)
    train_set, val_set, test_set = random_split(dataset, [0.7, 0.2, 0.1],
                                                generator=torch.Generator().manual_seed(42))
    out["split_sizes"] = (len(train_set), len(val_set), len(test_set))
    out["split_indices"] = (list(train_set.indices), list(val_set.indices),
                            list(test_set.indices))

    # class-balanced sampling of the training subset
    targets = torch.stack([train_set[i][1] for i in range(len(train_set))])
    class_count = torch.bincount(targets)
    class_weights = 1.0 / class_count.float()
    sample_weights = class_weights[targets]
    sampler = WeightedRandomSampler(sample_weights, num_samples=len(sample_weights),
                                    replacement=True)
    train_loader = DataLoader(train_set, batch_size=10, sampler=sampler, drop_last=True)
    out["len_train_loader"] = len(train_loader)
    drawn = torch.cat([y for _, y in train_loader])
    out["balanced_fraction"] = drawn.float().mean().item()

    model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for epoch in range(epochs):
        total = 0.0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        losses.append(total / len(train_loader))
    out["losses"] = losses

    # per-class recall on the held-out part (val + test through ConcatDataset)
    held_out = ConcatDataset([val_set, test_set])
    out["len_held_out"] = len(held_out)
    eval_loader = DataLoader(held_out, batch_size=8)
    correct = torch.zeros(2)
    count = torch.zeros(2)
    with torch.no_grad():
        for x, y in eval_loader:
            pred = model(x).argmax(1)
            for c in range(2):
                count[c] += (y == c).sum()
                correct[c] += ((pred == c) & (y == c)).sum()
    out["recall"] = (correct / count).tolist()

    # SubsetRandomSampler: a validation split of indices, as the forums do
    indices = list(range(len(dataset)))
    split = int(0.2 * len(dataset))
    train_idx, valid_idx = indices[split:], indices[:split]
    valid_loader = DataLoader(dataset, batch_size=6, sampler=SubsetRandomSampler(valid_idx))
    out["valid_seen"] = sum(len(x) for x, _ in valid_loader)
    out["subset"] = Subset(dataset, train_idx[:5])[2][1].item(), len(Subset(dataset, train_idx))

    # batch_sampler=BatchSampler(SequentialSampler(...)): batches of indices
    bs = BatchSampler(SequentialSampler(range(10)), batch_size=4, drop_last=False)
    out["batch_sampler"] = list(bs)
    loader = DataLoader(dataset, batch_sampler=bs)
    out["batch_sampler_shapes"] = [tuple(x.shape) for x, _ in loader]

    # an IterableDataset in the main process, and default_collate of dict samples
    out["stream"] = [t.tolist() for t in DataLoader(RangeStream(3, 10), batch_size=3)]
    out["default_collate"] = default_collate([{"a": torch.tensor([1, 2]), "b": 1.5},
                                              {"a": torch.tensor([3, 4]), "b": 2.5}])
    words = Words(["ant", "bee", "wasp", "a"])
    out["padded"] = [(ids.tolist(), lengths.tolist()) for ids, lengths in
                     DataLoader(words, batch_size=2, collate_fn=pad_collate)]
    return model, out


if __name__ == "__main__":
    main()
