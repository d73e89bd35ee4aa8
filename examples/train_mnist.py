"""Train the grouped CNN on MNIST from the four IDX files in a local folder.

    python examples/train_mnist.py --data DIR [--epochs N] [--batch-size B] [--lr LR] ...

DIR holds train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and
t10k-labels-idx1-ubyte (raw or .gz; also found in DIR/MNIST/raw). Same as
``python -m clgrad train --dataset mnist --data DIR``; writes runs/mnist/ (see train_digits.py).
"""
import sys

from clgrad.train import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], dataset="mnist"))
