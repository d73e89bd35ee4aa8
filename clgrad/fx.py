"""``torch.fx``'s ``wrap``: the one name eager model code uses at import time.

clgrad has no symbolic tracer, so there is nothing to keep a function out of: ``wrap`` returns
its argument unchanged, used as a decorator (``@torch.fx.wrap``) or called with a function's
name at module level (``torch.fx.wrap("name")``).
"""
__all__ = ["wrap"]


def wrap(fn_or_name):
    """Returns ``fn_or_name`` unchanged (a function, or the name of one).

    Raises: RuntimeError for anything else, as PyTorch
    """
    if not (callable(fn_or_name) or isinstance(fn_or_name, str)):
        raise RuntimeError(f"fx.wrap: expected a function or the name of one, got "
                        f"{type(fn_or_name).__name__}")
    return fn_or_name
