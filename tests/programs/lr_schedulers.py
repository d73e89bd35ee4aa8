# Learning-rate schedules as PyTorch's documentation ("How to adjust learning rate",
# torch.optim) and the tutorials and reference scripts that copy it use them: a model trained
# with two schedulers chained by stepping both (ExponentialLR and MultiStepLR), OneCycleLR
# stepped per batch (the super-convergence recipe), CosineAnnealingWarmRestarts stepped with a
# fractional epoch (epoch + i / iters, as its docstring shows), ReduceLROnPlateau on the
# validation loss, SequentialLR of a LinearLR warm-up and CosineAnnealingLR (torchvision's
# classification reference), a LambdaLR with the Transformer's inverse-square-root warm-up,
# ChainedScheduler, and a scheduler's state_dict saved and resumed. Data: a generated linear
# regression problem; each run returns the learning rates it used and its losses.
import math

import torch
import torch.nn as nn
from torch.optim.lr_scheduler import (ChainedScheduler, ConstantLR,
                                      CosineAnnealingLR, CosineAnnealingWarmRestarts,
                                      ExponentialLR, LambdaLR, LinearLR, MultiStepLR,
                                      OneCycleLR, ReduceLROnPlateau, SequentialLR)
from torch.utils.data import DataLoader, TensorDataset


def make_data(n=64, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, 1, generator=g)
    y = x @ w + 0.1 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


def model_and_loader(batch_size=16):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    loader = DataLoader(make_data(), batch_size=batch_size)
    return model, loader, nn.MSELoss()


def train_epoch(model, loader, loss_fn, optimizer, scheduler=None):
    """One epoch; ``scheduler`` (when given) is stepped after every batch."""
    total = 0.0
    for input, target in loader:
        optimizer.zero_grad()
        output = model(input)
        loss = loss_fn(output, target)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        total += loss.item()
    return total / len(loader)


def chained_by_stepping(epochs=20):
    # torch.optim's documentation: "Most learning rate schedulers can be called
    # back-to-back (also referred to as chaining schedulers)."
    model, dataset, loss_fn = model_and_loader()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scheduler1 = ExponentialLR(optimizer, gamma=0.9)
    scheduler2 = MultiStepLR(optimizer, milestones=[5, 12], gamma=0.1)

    lrs, losses = [], []
    for epoch in range(epochs):
        lrs.append(optimizer.param_groups[0]["lr"])
        losses.append(train_epoch(model, dataset, loss_fn, optimizer))
        scheduler1.step()
        scheduler2.step()
    return lrs, losses


def one_cycle(epochs=5):
    model, data_loader, loss_fn = model_and_loader()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = OneCycleLR(optimizer, max_lr=0.1, steps_per_epoch=len(data_loader),
                           epochs=epochs)
    lrs, momenta, losses = [], [], []
    for epoch in range(epochs):
        for batch in data_loader:
            lrs.append(optimizer.param_groups[0]["lr"])
            momenta.append(optimizer.param_groups[0]["momentum"])
            optimizer.zero_grad()
            loss = loss_fn(model(batch[0]), batch[1])
            loss.backward()
            optimizer.step()
            scheduler.step()
            losses.append(loss.item())
    return lrs, momenta, losses


def warm_restarts(epochs=6):
    model, dataloader, loss_fn = model_and_loader()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scheduler = CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2, eta_min=0.001)
    iters = len(dataloader)
    lrs, losses = [], []
    for epoch in range(epochs):
        for i, sample in enumerate(dataloader):
            inputs, labels = sample
            lrs.append(optimizer.param_groups[0]["lr"])
            optimizer.zero_grad()
            outputs = model(inputs)
            loss = loss_fn(outputs, labels)
            loss.backward()
            optimizer.step()
            scheduler.step(epoch + i / iters)
            losses.append(loss.item())
    return lrs, losses


def validate(model, loss_fn):
    x, y = make_data(n=32, seed=1).tensors
    with torch.no_grad():
        return loss_fn(model(x), y).item()


def plateau(epochs=25):
    model, loader, loss_fn = model_and_loader()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = ReduceLROnPlateau(optimizer, 'min', factor=0.5, patience=1, threshold=1e-2)
    lrs, val_losses = [], []
    for epoch in range(epochs):
        lrs.append(optimizer.param_groups[0]["lr"])
        train_epoch(model, loader, loss_fn, optimizer)
        val_loss = validate(model, loss_fn)
        # Note that step should be called after validate()
        scheduler.step(val_loss)
        val_losses.append(val_loss)
    return lrs, val_losses, scheduler.get_last_lr()


def warmup_then_cosine(epochs=12, lr_warmup_epochs=3, lr_warmup_decay=0.01):
    # torchvision's references/classification/train.py
    model, loader, loss_fn = model_and_loader()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    main_lr_scheduler = CosineAnnealingLR(optimizer, T_max=epochs - lr_warmup_epochs,
                                          eta_min=0.0)
    warmup_lr_scheduler = LinearLR(optimizer, start_factor=lr_warmup_decay,
                                   total_iters=lr_warmup_epochs)
    lr_scheduler = SequentialLR(optimizer, schedulers=[warmup_lr_scheduler, main_lr_scheduler],
                                milestones=[lr_warmup_epochs])
    lrs, losses = [], []
    for epoch in range(epochs):
        lrs.append(optimizer.param_groups[0]["lr"])
        losses.append(train_epoch(model, loader, loss_fn, optimizer))
        lr_scheduler.step()
    return lrs, losses


def inverse_sqrt_warmup(steps=30, d_model=16, warmup=8):
    # "Attention is all you need": lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
    model, loader, loss_fn = model_and_loader()
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)

    def rate(step):
        step = step + 1
        return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)

    scheduler = LambdaLR(optimizer, lr_lambda=rate)
    lrs, losses = [], []
    batches = iter(())
    for _ in range(steps):
        try:
            x, y = next(batches)
        except StopIteration:
            batches = iter(loader)
            x, y = next(batches)
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return lrs, losses


def chained_scheduler(epochs=10):
    model, loader, loss_fn = model_and_loader()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler1 = ConstantLR(optimizer, factor=0.1, total_iters=2)
    scheduler2 = ExponentialLR(optimizer, gamma=0.9)
    scheduler = ChainedScheduler([scheduler1, scheduler2], optimizer=optimizer)
    lrs = []
    for epoch in range(epochs):
        lrs.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return lrs


def resume(path="scheduler.pt", epochs=8, stop=3):
    """Train, save the optimizer and scheduler state at epoch ``stop``, then resume from it
    in a fresh optimizer and scheduler: the learning rates continue as without the break."""
    model, loader, loss_fn = model_and_loader()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = CosineAnnealingLR(optimizer, T_max=epochs)
    lrs = []
    for epoch in range(stop):
        lrs.append(optimizer.param_groups[0]["lr"])
        train_epoch(model, loader, loss_fn, optimizer)
        scheduler.step()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "lr_scheduler": scheduler.state_dict(), "epoch": stop}, path)

    checkpoint = torch.load(path, weights_only=True)
    model, loader, loss_fn = model_and_loader()
    model.load_state_dict(checkpoint["model"])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = CosineAnnealingLR(optimizer, T_max=epochs)
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["lr_scheduler"])
    for epoch in range(checkpoint["epoch"], epochs):
        lrs.append(optimizer.param_groups[0]["lr"])
        train_epoch(model, loader, loss_fn, optimizer)
        scheduler.step()
    return lrs


def main():
    return {
        "chained_by_stepping": chained_by_stepping(),
        "one_cycle": one_cycle(),
        "warm_restarts": warm_restarts(),
        "plateau": plateau(),
        "warmup_then_cosine": warmup_then_cosine(),
        "inverse_sqrt_warmup": inverse_sqrt_warmup(),
        "chained_scheduler": chained_scheduler(),
        "resume": resume(),
    }


if __name__ == "__main__":
    for name, result in main().items():
        print(name, [round(v, 6) for v in result[0]])
    print(math.pi)
