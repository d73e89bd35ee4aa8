# PyTorch's tutorial "Hooks for autograd saved tensors" (autograd_saved_tensors_hooks_tutorial.py):
# default pack/unpack hooks set with torch.autograd.graph.saved_tensors_hooks (printing what
# each operation saves, and when backward unpacks it), hooks that return something else than
# a tensor (a tuple holding a moved copy, a file name), torch.autograd.graph.save_on_cpu,
# saving to disk with SelfDeletingTempFile and torch.save/torch.load, only above a size
# threshold, and hooks set inside a module's forward, used in a training loop. The CUDA memory
# measurements and the per-node ``grad_fn._saved_*`` / ``_raw_saved_*`` attributes are left out;
# torchvision's resnet18 is replaced by a small convolutional model written out here.
import os
import tempfile
import uuid

import torch
import torch.nn as nn
import torch.nn.functional as F


######################################################################
# Registering default hooks for saved tensors
# --------------------------------------------
#
# Alternatively, you can use the context-manager
# ``saved_tensors_hooks`` to register a pair of
# hooks which will be applied to *all* saved tensors that are created in
# that context.

def pack_hook(x):
    print("Packing", x)
    return x


def unpack_hook(x):
    print("Unpacking", x)
    return x


def default_hooks():
    a = torch.ones(5, requires_grad=True)
    b = torch.ones(5, requires_grad=True) * 2
    with torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = a * b

    y.sum().backward()
    return a, b, y


######################################################################
# The hooks defined with this context manager are thread-local.
# Hence, the following code will not produce the desired effects because the hooks do not go
# through ``DataParallel``.
#
# Note that using those hooks disables all the optimization in place to
# reduce Tensor object creation. For example:

def unpack_once():
    """Unpack is called each time backward reads a saved tensor; a tensor saved by two
    operations is packed twice."""
    calls = {"pack": 0, "unpack": 0}

    def pack(x):
        calls["pack"] += 1
        return x

    def unpack(x):
        calls["unpack"] += 1
        return x

    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x * x
    y.sum().backward()
    assert x.grad.equal(2 * x)
    return calls


######################################################################
# Example: saving on CPU
# ^^^^^^^^^^^^^^^^^^^^^^^
#
# It is possible to pack the tensor into something else than a Tensor:
# here a tuple of its device and a copy on the CPU, moved back in unpack.

def pack_to_cpu(x):
    return (x.device, x.cpu())


def unpack_from_cpu(packed):
    device, tensor = packed
    return tensor.to(device)


def saving_on_cpu():
    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack_to_cpu, unpack_from_cpu):
        y = x * x
    y.sum().backward()

    assert (x.grad.equal(2 * x))

    # This is so common that PyTorch ships it: ``torch.autograd.graph.save_on_cpu``
    # (``pin_memory=True`` copies to pinned memory asynchronously on CUDA)
    x2 = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.save_on_cpu(pin_memory=True):
        y2 = x2.pow(2)
    y2.sum().backward()
    assert (x2.grad.equal(2 * x2))
    return x, x2


######################################################################
# Example: saving to disk
# ^^^^^^^^^^^^^^^^^^^^^^^^
#
# Similarly, we may want to save those tensors to disk. Again, this is achievable with those
# hooks.

tmp_dir_obj = tempfile.TemporaryDirectory()
tmp_dir = tmp_dir_obj.name


class SelfDeletingTempFile():
    def __init__(self):
        self.name = os.path.join(tmp_dir, str(uuid.uuid4()))

    def __del__(self):
        os.remove(self.name)


def pack_hook_disk(tensor):
    temp_file = SelfDeletingTempFile()
    torch.save(tensor, temp_file.name)
    return temp_file


def unpack_hook_disk(temp_file):
    return torch.load(temp_file.name)


######################################################################
# Notice that ``unpack_hook`` is only called once per saved tensor (here: once per backward).
# The temporary files are deleted as soon as the graph no longer needs them.

def saving_to_disk():
    x = torch.randn(5, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack_hook_disk, unpack_hook_disk):
        y = x.pow(2)
    files = os.listdir(tmp_dir)
    y.sum().backward()
    assert (x.grad.equal(2 * x))
    return files


######################################################################
# We might only want to save to disk tensors that are big enough (a file per small tensor
# costs more than it saves):

SAVE_ON_DISK_THRESHOLD = 1000


def pack_hook_threshold(x):
    if x.numel() < SAVE_ON_DISK_THRESHOLD:
        return x
    temp_file = SelfDeletingTempFile()
    torch.save(x, temp_file.name)
    return temp_file


def unpack_hook_threshold(tensor_or_sctf):
    if isinstance(tensor_or_sctf, torch.Tensor):
        return tensor_or_sctf
    return torch.load(tensor_or_sctf.name)


######################################################################
# The hooks can also wrap a model's forward, so that every tensor its layers save goes to
# disk: a small convolutional network (in place of torchvision's resnet18) trained for a few
# steps with its activations on disk.

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x)) + x
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class SaveToDisk(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, *args, **kwargs):
        with torch.autograd.graph.saved_tensors_hooks(pack_hook_threshold,
                                                      unpack_hook_threshold):
            return self.module(*args, **kwargs)


def train(model, steps=3, batch_size=8, lr=0.1):
    torch.manual_seed(0)
    x = torch.randn(batch_size, 3, 8, 8)
    y = torch.randint(0, 10, (batch_size,))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    torch.manual_seed(0)
    default_hooks()
    calls = unpack_once()
    saving_on_cpu()
    files = saving_to_disk()
    torch.manual_seed(0)
    net = Net()
    losses = train(SaveToDisk(net))
    return calls, files, losses


if __name__ == "__main__":
    main()
