"""The op families: one module per family, forward and backward side by side (layer 8 of
docs/internals.md); the public faces (clgrad, clgrad.nn.functional) re-export them."""
