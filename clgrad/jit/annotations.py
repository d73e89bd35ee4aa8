"""``torch.jit.annotations``: the typing names old TorchScript code imports from here
(``from torch.jit.annotations import List, Optional, Tuple``)."""
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple, Union  # noqa: F401

from clgrad.tensor import Tensor  # noqa: F401

BroadcastingList1 = BroadcastingList2 = BroadcastingList3 = List  # noqa: F401

__all__ = ["Any", "Callable", "Dict", "List", "NamedTuple", "Optional", "Tuple", "Union",
           "Tensor", "BroadcastingList1", "BroadcastingList2", "BroadcastingList3"]
