# Stochastic Weight Averaging and EMA as torch.optim's documentation ("Weight Averaging (SWA
# and EMA)") and the PyTorch blog post "PyTorch 1.6 now includes Stochastic Weight Averaging"
# write them: AveragedModel(model), CosineAnnealingLR until swa_start then SWALR(optimizer,
# swa_lr=0.05) with swa_model.update_parameters(model) each epoch, torch.optim.swa_utils
# .update_bn(loader, swa_model) to recompute BatchNorm statistics, predictions with the
# averaged model; and an EMA model made by AveragedModel(model,
# multi_avg_fn=get_ema_multi_avg_fn(0.999)) and use_buffers=True, updated after every
# optimizer step. Data: a generated classification problem.
import torch
import torch.nn as nn
from torch.optim.lr_scheduler import CosineAnnealingLR
from torch.optim.swa_utils import AveragedModel, SWALR, get_ema_multi_avg_fn
from torch.utils.data import DataLoader, TensorDataset


def make_loader(n=128, seed=0, batch_size=16, shuffle=True):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g) * 2 + 1
    y = (x[:, :5].sum(1) > x[:, 5:].sum(1)).long()
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=shuffle)


def make_model():
    return nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    loss = 0.0
    with torch.no_grad():
        for input, target in loader:
            output = model(input)
            loss += nn.functional.cross_entropy(output, target, reduction='sum').item()
            correct += (output.argmax(1) == target).sum().item()
            total += len(target)
    return loss / total, correct / total


def main(epochs=12, swa_start=6):
    torch.manual_seed(0)
    loader = make_loader()
    test_loader = make_loader(64, seed=1, shuffle=False)
    model = make_model()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    swa_model = AveragedModel(model)
    scheduler = CosineAnnealingLR(optimizer, T_max=100)
    swa_scheduler = SWALR(optimizer, swa_lr=0.05)
    ema_model = torch.optim.swa_utils.AveragedModel(
        model, multi_avg_fn=get_ema_multi_avg_fn(0.9), use_buffers=True)

    lrs, snapshots = [], []
    for epoch in range(epochs):
        model.train()
        for input, target in loader:
            optimizer.zero_grad()
            loss_fn(model(input), target).backward()
            optimizer.step()
            ema_model.update_parameters(model)
        if epoch > swa_start:
            swa_model.update_parameters(model)
            snapshots.append([p.detach().clone() for p in model.parameters()])
            swa_scheduler.step()
        else:
            scheduler.step()
        lrs.append(optimizer.param_groups[0]['lr'])

    # Update bn statistics for the swa_model at the end
    torch.optim.swa_utils.update_bn(loader, swa_model)
    # Use swa_model to make predictions on test data
    results = {"model": evaluate(model, test_loader), "swa": evaluate(swa_model, test_loader),
               "ema": evaluate(ema_model, test_loader)}
    return model, swa_model, ema_model, snapshots, lrs, results, loader


if __name__ == "__main__":
    main()
