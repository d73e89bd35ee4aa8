"""The main job: train a grouped CNN on scikit-learn's 8x8 handwritten digits.

    python examples/train_digits.py [--epochs N] [--batch-size B] [--lr LR] [--device D]
                                    [--out DIR] [--resume CHECKPOINT] [--seed S] [--quiet]
                                    [--weight-decay W] [--val-fraction F] [--compile]
    python examples/train_digits.py --help      (each option with its default)

Same as ``python -m clgrad train --dataset digits``. The model, the loop, the checkpoints and
the plot live in clgrad/train.py (``digits_net``, ``train_epoch``, ``evaluate``, ``fit``), so
the command line and this script run the same code. Writes runs/digits/best.safetensors,
last.safetensors, metrics.csv and curves.png, and ends with ``test accuracy: 0.9xx | ... |
device: NAME [PLATFORM] (KIND)``.
"""
import sys

from clgrad.train import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], dataset="digits"))
