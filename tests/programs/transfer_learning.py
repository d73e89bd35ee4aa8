# PyTorch's "Transfer Learning for Computer Vision Tutorial" (Sasank Chilamkurthy) with the
# patterns it teaches and the forums copy: a "pretrained" backbone (here trained first on a
# source task and saved with torch.save), train_model with phases {'train', 'val'},
# torch.set_grad_enabled(phase == 'train'), torch.max(outputs, 1), running_corrects.double()
# / dataset_sizes[phase], the best weights kept with copy.deepcopy(model.state_dict()) and
# restored by load_state_dict; finetuning (a new fc, SGD(momentum=0.9) over every parameter,
# lr_scheduler.StepLR(step_size=7, gamma=0.1)) and the "ConvNet as fixed feature extractor"
# (param.requires_grad = False for the backbone, the optimizer over model_conv.fc
# .parameters()); discriminative learning rates with parameter groups and requires_grad_(False)
# on a submodule. Data: two-class 3x16x16 images (ants / bees as local_data's 0s and 1s).
import copy
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, TensorDataset

import local_data


class SmallResNet(nn.Module):
    """A resnet18-shaped stand-in: conv stem, two residual stages, avgpool, fc."""

    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1, bias=False),
                                    nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.layer2 = nn.Sequential(nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False),
                                    nn.BatchNorm2d(16), nn.ReLU(inplace=True))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = x + self.layer1(x)
        x = self.layer2(x)
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def images(train, classes=None, n=None):
    x, y = local_data.digits16(train)
    x = np.repeat(x, 3, axis=1)
    if classes is not None:
        keep = np.isin(y, classes)
        x, y = x[keep], np.searchsorted(classes, y[keep])
    return torch.tensor(x[:n]), torch.tensor(y[:n])


def pretrain(path, epochs=2):
    """The 'ImageNet' weights: the backbone trained on the ten digits, saved."""
    torch.manual_seed(0)
    model = SmallResNet(10)
    x, y = images(True, n=320)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    opt = optim.Adam(model.parameters(), lr=0.01)
    for _ in range(epochs):
        for inputs, labels in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(inputs), labels).backward()
            opt.step()
    torch.save(model.state_dict(), path)


def train_model(model, criterion, optimizer, scheduler, dataloaders, dataset_sizes,
                num_epochs=25):
    since = time.time()

    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    history = []

    for epoch in range(num_epochs):
        print(f'Epoch {epoch}/{num_epochs - 1}')
        print('-' * 10)

        # Each epoch has a training and validation phase
        for phase in ['train', 'val']:
            if phase == 'train':
                model.train()  # Set model to training mode
            else:
                model.eval()   # Set model to evaluate mode

            running_loss = 0.0
            running_corrects = 0

            # Iterate over data.
            for inputs, labels in dataloaders[phase]:
                # zero the parameter gradients
                optimizer.zero_grad()

                # forward
                # track history if only in train
                with torch.set_grad_enabled(phase == 'train'):
                    outputs = model(inputs)
                    _, preds = torch.max(outputs, 1)
                    loss = criterion(outputs, labels)

                    # backward + optimize only if in training phase
                    if phase == 'train':
                        loss.backward()
                        optimizer.step()

                # statistics
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            if phase == 'train':
                scheduler.step()

            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]

            print(f'{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}')
            history.append((phase, epoch_loss, epoch_acc.item()))

            # deep copy the model
            if phase == 'val' and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())

        print()

    time_elapsed = time.time() - since
    print(f'Training complete in {time_elapsed // 60:.0f}m {time_elapsed % 60:.0f}s')
    print(f'Best val Acc: {best_acc:4f}')

    # load best model weights
    model.load_state_dict(best_model_wts)
    return model, best_acc, history


def main(path="pretrained.pth", num_epochs=3):
    pretrain(path)
    classes = [0, 1]  # 'ants', 'bees'
    data = {'train': images(True, classes, n=96), 'val': images(False, classes, n=48)}
    dataloaders = {x: DataLoader(TensorDataset(*data[x]), batch_size=16, shuffle=x == 'train')
                   for x in ['train', 'val']}
    dataset_sizes = {x: len(data[x][0]) for x in ['train', 'val']}
    results = {}

    # Finetuning the ConvNet
    torch.manual_seed(1)
    model_ft = SmallResNet()
    model_ft.load_state_dict(torch.load(path, weights_only=True))
    num_ftrs = model_ft.fc.in_features
    # Here the size of each output sample is set to 2.
    model_ft.fc = nn.Linear(num_ftrs, 2)
    criterion = nn.CrossEntropyLoss()
    # Observe that all parameters are being optimized
    optimizer_ft = optim.SGD(model_ft.parameters(), lr=0.001 * 10, momentum=0.9)
    # Decay LR by a factor of 0.1 every 7 epochs
    exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=7, gamma=0.1)
    results['finetune'] = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler,
                                      dataloaders, dataset_sizes, num_epochs=num_epochs)

    # ConvNet as fixed feature extractor
    model_conv = SmallResNet()
    model_conv.load_state_dict(torch.load(path, weights_only=True))
    for param in model_conv.parameters():
        param.requires_grad = False
    frozen_before = copy.deepcopy(model_conv.state_dict())

    # Parameters of newly constructed modules have requires_grad=True by default
    num_ftrs = model_conv.fc.in_features
    model_conv.fc = nn.Linear(num_ftrs, 2)

    # Observe that only parameters of final layer are being optimized as
    # opposed to before.
    optimizer_conv = optim.SGD(model_conv.fc.parameters(), lr=0.001 * 10, momentum=0.9)
    exp_lr_scheduler = lr_scheduler.StepLR(optimizer_conv, step_size=7, gamma=0.1)
    results['fixed'] = train_model(model_conv, criterion, optimizer_conv, exp_lr_scheduler,
                                   dataloaders, dataset_sizes, num_epochs=num_epochs)
    results['frozen_before'] = frozen_before

    # Discriminative learning rates: a small lr for the backbone, a larger one for the head,
    # the stem frozen with requires_grad_(False) and left out of the optimizer
    model_dl = SmallResNet()
    model_dl.load_state_dict(torch.load(path, weights_only=True))
    model_dl.fc = nn.Linear(model_dl.fc.in_features, 2)
    model_dl.conv1.requires_grad_(False)
    model_dl.bn1.requires_grad_(False)
    backbone = [p for n, p in model_dl.named_parameters()
                if p.requires_grad and not n.startswith('fc.')]
    optimizer_dl = optim.SGD([
        {'params': backbone, 'lr': 1e-3},
        {'params': model_dl.fc.parameters()},
    ], lr=1e-2, momentum=0.9)
    scheduler_dl = lr_scheduler.StepLR(optimizer_dl, step_size=1, gamma=0.5)
    results['discriminative'] = train_model(model_dl, criterion, optimizer_dl, scheduler_dl,
                                            dataloaders, dataset_sizes, num_epochs=num_epochs)
    results['discriminative_lrs'] = [g['lr'] for g in optimizer_dl.param_groups]
    return results


if __name__ == "__main__":
    main()
