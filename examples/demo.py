"""A small demo on real numbers: least squares on the Iris-free Anscombe-style data, by GD.

Fits y = a x + b to Anscombe's first quartet (F. J. Anscombe, 1973) with gradient descent on
the default OpenCL device and compares with NumPy's closed-form least squares.
"""
import numpy as np

import clgrad

x_np = np.array([10, 8, 13, 9, 11, 14, 6, 4, 12, 7, 5], dtype=np.float32)
y_np = np.array([8.04, 6.95, 7.58, 8.81, 8.33, 9.96, 7.24, 4.26, 10.84, 4.82, 5.68],
                dtype=np.float32)
x, y = clgrad.from_numpy(x_np), clgrad.from_numpy(y_np)
a = clgrad.zeros((), requires_grad=True)
b = clgrad.zeros((), requires_grad=True)
for step in range(2000):
    loss = ((a * x + b - y) ** 2).mean()
    loss.backward()
    with clgrad.no_grad():
        a -= 0.01 * a.grad
        b -= 0.01 * b.grad
    a.grad = None
    b.grad = None
ref_a, ref_b = np.polyfit(x_np, y_np, 1)
print(f"device: {clgrad.default_device().name}")
print(f"gradient descent: a={a.item():.4f} b={b.item():.4f} loss={loss.item():.4f}")
print(f"numpy polyfit:    a={ref_a:.4f} b={ref_b:.4f}")
