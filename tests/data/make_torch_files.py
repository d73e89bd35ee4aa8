"""Write the small PyTorch checkpoints tests/test_torch_format.py reads without torch.

Run with real PyTorch (made with torch 2.13.0): `python tests/data/make_torch_files.py`.
Writes torch_state_dict.pt (a model's state_dict), torch_optimizer.pt (an Adam state dict
after one step), torch_views.pt (views sharing one storage, non-contiguous tensors, narrow
integer and bool dtypes), and torch_expected.npz: every tensor's values as NumPy arrays
(key "<file stem>/<key path>"), the oracle the tests compare with.
"""
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent


def tensors(prefix, obj, out):
    if isinstance(obj, torch.Tensor):
        out[prefix] = obj.detach().numpy().copy()
    elif isinstance(obj, dict):
        for k, v in obj.items():
            tensors(f"{prefix}/{k}", v, out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            tensors(f"{prefix}/{i}", v, out)


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2),
                                torch.nn.Flatten(), torch.nn.Linear(8, 3))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.randn(2, 1, 4, 4)).sum().backward()
    opt.step()
    base = torch.arange(24, dtype=torch.float64).reshape(4, 6)
    files = {
        "torch_state_dict": model.state_dict(),
        "torch_optimizer": opt.state_dict(),
        "torch_views": {"base": base, "view": base[1:3, ::2], "t": base.t(),
                        "row": base[2], "i64": torch.tensor([2**40 + 3, -7]),
                        "i32": torch.arange(5, dtype=torch.int32)[::2],
                        "u8": torch.tensor([0, 200, 255], dtype=torch.uint8),
                        "mask": torch.tensor([True, False, True]), "scalar": torch.tensor(2.5),
                        "meta": {"epoch": 3, "name": "run", "none": None, "pair": (1, 2.5)}},
    }
    expected = {}
    for stem, obj in files.items():
        torch.save(obj, HERE / f"{stem}.pt")
        tensors(stem, obj, expected)
    np.savez(HERE / "torch_expected.npz", **expected)


if __name__ == "__main__":
    main()
