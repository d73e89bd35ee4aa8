# PyTorch's "Adversarial Example Generation" tutorial (FGSM): the LeNet of the tutorial
# (conv1/conv2 + dropout, F.log_softmax), model.eval(), data.requires_grad = True,
# F.nll_loss, model.zero_grad(), data_grad = data.grad.data, fgsm_attack with
# data_grad.sign() and torch.clamp, denorm with the MNIST mean/std, transforms.Normalize
# redone by hand, init_pred.item() checks, adversarial examples kept with
# .squeeze().detach().cpu().numpy(). The pretrained lenet_mnist_model.pth is replaced by
# a few epochs of training on synthetic digit-like blobs; the epsilons are the tutorial's.
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

epsilons = [0, .05, .1, .15, .2, .25, .3]
device = torch.device("cpu")


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(64 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def digits(n, seed):
    """12x12 images with one bright 3x3 blob at a class-dependent place, in [0, 1],
    normalized as transforms.Normalize((0.1307,), (0.3081,)) would."""
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 10
    img = 0.1 * torch.rand(n, 1, 12, 12, generator=g)
    for i in range(n):
        r, c = 1 + 3 * (int(y[i]) // 4), 1 + 3 * (int(y[i]) % 4)
        img[i, 0, r:r + 3, c:c + 3] = 0.9
    return TensorDataset((img - 0.1307) / 0.3081, y)


# FGSM attack code
def fgsm_attack(image, epsilon, data_grad):
    # Collect the element-wise sign of the data gradient
    sign_data_grad = data_grad.sign()
    # Create the perturbed image by adjusting each pixel of the input image
    perturbed_image = image + epsilon*sign_data_grad
    # Adding clipping to maintain [0,1] range
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    # Return the perturbed image
    return perturbed_image


# restores the tensors to their original scale
def denorm(batch, mean=[0.1307], std=[0.3081]):
    """
    Convert a batch of tensors to their original scale.

    Args:
        batch (torch.Tensor): Batch of normalized tensors.
        mean (torch.Tensor or list): Mean used for normalization.
        std (torch.Tensor or list): Standard deviation used for normalization.

    Returns:
        torch.Tensor: batch of tensors without normalization applied to them.
    """
    if isinstance(mean, list):
        mean = torch.tensor(mean).to(device)
    if isinstance(std, list):
        std = torch.tensor(std).to(device)

    return batch * std.view(1, -1, 1, 1) + mean.view(1, -1, 1, 1)


def test(model, device, test_loader, epsilon):

    # Accuracy counter
    correct = 0
    adv_examples = []

    # Loop over all examples in test set
    for data, target in test_loader:

        # Send the data and label to the device
        data, target = data.to(device), target.to(device)

        # Set requires_grad attribute of tensor. Important for Attack
        data.requires_grad = True

        # Forward pass the data through the model
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1] # get the index of the max log-probability

        # If the initial prediction is wrong, don't bother attacking, just move on
        if init_pred.item() != target.item():
            continue

        # Calculate the loss
        loss = F.nll_loss(output, target)

        # Zero all existing gradients
        model.zero_grad()

        # Calculate gradients of model in backward pass
        loss.backward()

        # Collect ``datagrad``
        data_grad = data.grad.data

        # Restore the data to its original scale
        data_denorm = denorm(data)

        # Call FGSM Attack
        perturbed_data = fgsm_attack(data_denorm, epsilon, data_grad)

        # Reapply normalization
        perturbed_data_normalized = (perturbed_data - 0.1307) / 0.3081

        # Re-classify the perturbed image
        output = model(perturbed_data_normalized)

        # Check for success
        final_pred = output.max(1, keepdim=True)[1] # get the index of the max log-probability
        if final_pred.item() == target.item():
            correct += 1
            # Special case for saving 0 epsilon examples
            if epsilon == 0 and len(adv_examples) < 5:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append( (init_pred.item(), final_pred.item(), adv_ex) )
        else:
            # Save some adv examples for visualization later
            if len(adv_examples) < 5:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append( (init_pred.item(), final_pred.item(), adv_ex) )

    # Calculate final accuracy for this epsilon
    final_acc = correct/float(len(test_loader))
    print(f"Epsilon: {epsilon}\tTest Accuracy = {correct} / {len(test_loader)} = {final_acc}")

    # Return the accuracy and an adversarial example
    return final_acc, adv_examples


def pretrain(model, loader, epochs):
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    model.train()
    for epoch in range(epochs):
        for data, target in loader:
            optimizer.zero_grad()
            loss = F.nll_loss(model(data), target)
            loss.backward()
            optimizer.step()
    return loss.item()


def main(epochs=3, n_test=30):
    torch.manual_seed(42)
    model = Net().to(device)
    last_loss = pretrain(model, DataLoader(digits(100, 0), batch_size=20, shuffle=True), epochs)
    # Set the model in evaluation mode. In this case this is for the Dropout layers
    model.eval()
    test_loader = DataLoader(digits(n_test, 1), batch_size=1, shuffle=True)
    accuracies = []
    examples = []

    # Run test for each epsilon
    for eps in epsilons:
        acc, ex = test(model, device, test_loader, eps)
        accuracies.append(acc)
        examples.append(ex)
    return model, last_loss, accuracies, examples


if __name__ == '__main__':
    main()
