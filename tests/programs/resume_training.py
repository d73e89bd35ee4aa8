# Checkpointing for an exact resume, as the "Saving and Loading a General Checkpoint" recipe
# and the forums extend it: torch.save of {'epoch', 'model_state_dict',
# 'optimizer_state_dict', 'scheduler_state_dict', 'rng_state': torch.get_rng_state(),
# 'loss'} with an AdamW optimizer (weight_decay, amsgrad), OneCycleLR stepped per batch,
# nn.CrossEntropyLoss(label_smoothing=0.1), dropout in the model (so the RNG state matters)
# and a shuffling DataLoader with its own torch.Generator whose state is saved too; the
# resumed run (a fresh model, optimizer and scheduler, load_state_dict of each,
# torch.set_rng_state, the generator's set_state) must end with the very weights of the
# uninterrupted run.
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(12, 32)
        self.dropout = nn.Dropout(0.2)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


def make_dataset(n=96, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=g)
    y = (x[:, :4].sum(1) > 0).long() + (x[:, 4:8].sum(1) > 1).long()
    return TensorDataset(x, y)


def build(epochs, steps_per_epoch):
    model = Net()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, amsgrad=True)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.05, epochs=epochs,
                                                    steps_per_epoch=steps_per_epoch)
    return model, optimizer, scheduler


def train_epochs(model, optimizer, scheduler, loader, criterion, start, stop):
    losses = []
    for epoch in range(start, stop):
        model.train()
        for inputs, labels in loader:
            optimizer.zero_grad()
            loss = criterion(model(inputs), labels)
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
    return losses


def main(path="checkpoint.tar", epochs=6, stop_at=3):
    dataset = make_dataset()
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    # the uninterrupted run
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    loader = DataLoader(dataset, batch_size=16, shuffle=True, generator=g)
    model, optimizer, scheduler = build(epochs, len(loader))
    full_losses = train_epochs(model, optimizer, scheduler, loader, criterion, 0, epochs)
    full_state = {k: v.clone() for k, v in model.state_dict().items()}
    lr_end = scheduler.get_last_lr()

    # the interrupted run: train, save, (the process ends)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    loader = DataLoader(dataset, batch_size=16, shuffle=True, generator=g)
    model, optimizer, scheduler = build(epochs, len(loader))
    first = train_epochs(model, optimizer, scheduler, loader, criterion, 0, stop_at)
    torch.save({
        'epoch': stop_at,
        'model_state_dict': model.state_dict(),
        'optimizer_state_dict': optimizer.state_dict(),
        'scheduler_state_dict': scheduler.state_dict(),
        'rng_state': torch.get_rng_state(),
        'loader_rng_state': g.get_state(),
        'loss': first[-1],
    }, path)
    del model, optimizer, scheduler

    # resume: fresh objects, state loaded
    torch.manual_seed(1234)  # whatever the new process seeds
    model, optimizer, scheduler = build(epochs, len(loader))
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint['model_state_dict'])
    optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
    scheduler.load_state_dict(checkpoint['scheduler_state_dict'])
    torch.set_rng_state(checkpoint['rng_state'])
    g = torch.Generator()
    g.set_state(checkpoint['loader_rng_state'])
    loader = DataLoader(dataset, batch_size=16, shuffle=True, generator=g)
    epoch = checkpoint['epoch']
    second = train_epochs(model, optimizer, scheduler, loader, criterion, epoch, epochs)
    return {"full_losses": full_losses, "resumed_losses": first + second,
            "full_state": full_state, "resumed_state": model.state_dict(),
            "lr_end": (lr_end, scheduler.get_last_lr()), "checkpoint": checkpoint,
            "model": model, "optimizer": optimizer}


if __name__ == "__main__":
    main()
