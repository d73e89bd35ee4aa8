# The training-script skeleton copied from countless tutorials and Stack Overflow answers:
# torch.device('cuda' if torch.cuda.is_available() else 'cpu'), torch.manual_seed, a custom
# Dataset and a DataLoader with a collate_fn, train/evaluate functions with model.train() /
# model.eval() + torch.inference_mode(), accuracy by (pred == y).float().mean(), a checkpoint
# dict {'epoch', 'model_state_dict', 'optimizer_state_dict', 'scheduler', 'loss'} written by
# torch.save and resumed with torch.load + load_state_dict, StepLR per epoch and OneCycleLR per
# batch.
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, Dataset

device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')


class SpiralDataset(Dataset):
    """Three interleaved spirals, 2-D points, deterministic."""
    def __init__(self, n_per_class=40, noise_phase=0.0):
        xs, ys = [], []
        for c in range(3):
            t = torch.linspace(0.1, 1.0, n_per_class)
            angle = t * 4.0 + c * 2.094 + noise_phase
            xs.append(torch.stack([t * torch.cos(angle), t * torch.sin(angle)], dim=1))
            ys.append(torch.full((n_per_class,), c, dtype=torch.long))
        self.x = torch.cat(xs)
        self.y = torch.cat(ys)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, idx):
        return {'features': self.x[idx], 'label': self.y[idx]}


def collate_fn(batch):
    features = torch.stack([item['features'] for item in batch])
    labels = torch.tensor([item['label'] for item in batch])
    return features, labels


class MLP(nn.Module):
    def __init__(self, in_dim=2, hidden=64, n_classes=3, p=0.1):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(p),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, n_classes))

    def forward(self, x):
        return self.layers(x)


def train_one_epoch(model, loader, optimizer, criterion, scheduler=None):
    model.train()
    running_loss, correct, total = 0.0, 0, 0
    for inputs, targets in loader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        running_loss += loss.item() * inputs.size(0)
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()
    return running_loss / total, correct / total


def evaluate(model, loader, criterion):
    model.eval()
    losses, accs = [], []
    with torch.inference_mode():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            losses.append(criterion(logits, y).item())
            pred = logits.argmax(dim=1)
            accs.append((pred == y).float().mean().item())
    return sum(losses) / len(losses), sum(accs) / len(accs)


def save_checkpoint(path, model, optimizer, scheduler, epoch, loss):
    torch.save({
        'epoch': epoch,
        'model_state_dict': model.state_dict(),
        'optimizer_state_dict': optimizer.state_dict(),
        'scheduler': scheduler.state_dict(),
        'loss': loss,
    }, path)


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument('--epochs', type=int, default=4)
    parser.add_argument('--resume-at', type=int, default=2)
    parser.add_argument('--lr', type=float, default=0.05)
    parser.add_argument('--checkpoint', default='checkpoint.pth')
    args = parser.parse_args(argv)

    torch.manual_seed(42)
    train_ds, val_ds = SpiralDataset(), SpiralDataset(noise_phase=0.05)
    train_loader = DataLoader(train_ds, batch_size=30, shuffle=True, collate_fn=collate_fn)
    val_loader = DataLoader(val_ds, batch_size=60, shuffle=False, collate_fn=collate_fn)

    model = MLP().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    history = []
    for epoch in range(args.resume_at):
        train_loss, train_acc = train_one_epoch(model, train_loader, optimizer, criterion)
        val_loss, val_acc = evaluate(model, val_loader, criterion)
        scheduler.step()
        history.append((train_loss, train_acc, val_loss, val_acc))
        print(f'Epoch {epoch}: train loss {train_loss:.4f} acc {train_acc:.3f} | '
              f'val loss {val_loss:.4f} acc {val_acc:.3f} | lr {scheduler.get_last_lr()[0]:.4f}')
    save_checkpoint(args.checkpoint, model, optimizer, scheduler, args.resume_at - 1, val_loss)

    # ... later, in a new process: rebuild everything and resume
    model = MLP().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    checkpoint = torch.load(args.checkpoint, map_location=device)
    model.load_state_dict(checkpoint['model_state_dict'])
    optimizer.load_state_dict(checkpoint['optimizer_state_dict'])
    scheduler.load_state_dict(checkpoint['scheduler'])
    start_epoch = checkpoint['epoch'] + 1
    print(f"Resumed from epoch {checkpoint['epoch']} (val loss {checkpoint['loss']:.4f})")
    for epoch in range(start_epoch, args.epochs):
        train_loss, train_acc = train_one_epoch(model, train_loader, optimizer, criterion)
        val_loss, val_acc = evaluate(model, val_loader, criterion)
        scheduler.step()
        history.append((train_loss, train_acc, val_loss, val_acc))
        print(f'Epoch {epoch}: train loss {train_loss:.4f} acc {train_acc:.3f} | '
              f'val loss {val_loss:.4f} acc {val_acc:.3f} | lr {scheduler.get_last_lr()[0]:.4f}')

    # fine-tune with a one-cycle policy, stepped per batch
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    onecycle = lr_scheduler.OneCycleLR(optimizer, max_lr=0.01, epochs=2,
                                       steps_per_epoch=len(train_loader))
    lrs = []
    for epoch in range(2):
        train_one_epoch(model, train_loader, optimizer, criterion, onecycle)
        lrs.append(onecycle.get_last_lr()[0])
    final = evaluate(model, val_loader, criterion)
    print(f'final val loss {final[0]:.4f} acc {final[1]:.3f}')
    if os.path.exists(args.checkpoint):
        os.remove(args.checkpoint)
    return model, history, lrs, final


if __name__ == '__main__':
    main()
