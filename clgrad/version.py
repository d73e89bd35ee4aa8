"""``torch.version``: the package's version, and the CUDA / ROCm toolkits it was built with.

clgrad is built with neither: it compiles its OpenCL kernels at run time for whatever driver
each device has, so ``cuda`` and ``hip`` are None (as in a CPU-only PyTorch) even where
``torch.cuda.is_available()`` is True (an OpenCL GPU). ``__version__``: clgrad's (the
package's, ``clgrad.__version__``), not a PyTorch version.
"""
__version__ = "0.2.0"
cuda = None
hip = None
debug = False
git_version = None
