"""``jax.scipy``: SciPy's API on pyree arrays, differentiable, under jit, grad and vmap.

    from pyree.scipy.special import logsumexp
    from pyree.scipy import stats
"""
from __future__ import annotations

import importlib
from typing import Any

_SUBMODULES = {"linalg", "optimize", "signal", "special", "stats"}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"pyree.scipy.{name}")
    raise AttributeError(f"module 'pyree.scipy' has no attribute {name!r}")
