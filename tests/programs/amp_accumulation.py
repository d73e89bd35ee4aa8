# The mixed-precision and gradient-accumulation recipes as PyTorch's "Automatic Mixed
# Precision" recipe and the CPU AMP documentation write them: a network run under
# torch.autocast(device_type="cpu", dtype=torch.bfloat16) (Linear/matmul in bfloat16, the
# loss on float32 logits, outputs checked for their dtype), torch.amp.GradScaler("cpu",
# enabled=False) standing where CUDA's scaler goes (scale/step/update, unscale_ before
# clip_grad_norm_), gradient accumulation over accumulation_steps micro-batches with
# loss / accumulation_steps and optimizer.zero_grad(set_to_none=True) every
# accumulation_steps, and the equivalence the recipes promise: accumulating 4 micro-batches
# of 8 gives the gradient of one batch of 32.
import torch
import torch.nn as nn


def make_model(in_size=16, out_size=4, num_layers=3, hidden=32):
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, hidden))
        layers.append(torch.nn.ReLU())
        in_size = hidden
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers))


def make_data(n=64, in_size=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, in_size, generator=g)
    w = torch.randn(in_size, 4, generator=g)
    y = (x @ w).argmax(1)
    return x, y


def train_autocast(epochs=8, batch_size=16, use_amp=True):
    torch.manual_seed(0)
    net = make_model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    loss_fn = torch.nn.CrossEntropyLoss()
    x, y = make_data()
    losses, dtypes = [], set()
    for epoch in range(epochs):
        for i in range(0, len(x), batch_size):
            input, target = x[i:i + batch_size], y[i:i + batch_size]
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=use_amp):
                output = net(input)
                # output is bfloat16 because linear layers autocast to bfloat16.
                dtypes.add(output.dtype)
                loss = loss_fn(output, target)
                # loss is float32 because cross_entropy autocasts to float32.
                dtypes.add(loss.dtype)

            # Exits autocast before backward().
            # Backward passes under autocast are not recommended.
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad(set_to_none=True)  # set_to_none=True here can modestly improve performance
            losses.append(loss.item())
    return net, losses, dtypes


def accumulate(model, x, y, accumulation_steps=4, lr=0.05, max_norm=None):
    """One optimizer step from accumulation_steps micro-batches (the forums' loop)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    model.zero_grad()                                   # Reset gradients tensors
    micro = len(x) // accumulation_steps
    norms = []
    for i in range(accumulation_steps):
        inputs, labels = x[i * micro:(i + 1) * micro], y[i * micro:(i + 1) * micro]
        predictions = model(inputs)                     # Forward pass
        loss = criterion(predictions, labels)           # Compute loss function
        loss = loss / accumulation_steps                # Normalize our loss (if averaged)
        loss.backward()                                 # Backward pass
        if (i + 1) % accumulation_steps == 0:           # Wait for several backward steps
            if max_norm is not None:
                norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm))
            grads = [p.grad.clone() for p in model.parameters()]
            optimizer.step()                            # Now we can do an optimizer step
            model.zero_grad()                           # Reset gradients tensors
    return grads, norms


def main():
    results = {"amp": train_autocast(), "fp32": train_autocast(use_amp=False)}
    x, y = make_data(32)
    torch.manual_seed(1)
    model = make_model()
    results["accumulated"] = accumulate(model, x, y, 4, max_norm=0.5)
    torch.manual_seed(1)
    model = make_model()
    results["one_batch"] = accumulate(model, x, y, 1, max_norm=0.5)
    return results


if __name__ == "__main__":
    main()
