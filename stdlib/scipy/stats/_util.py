"""Shared helpers of the ``pyree.scipy.stats`` distributions."""
from __future__ import annotations

from typing import Any

from pyree import numpy as jnp
from pyree.numpy._util import check_arraylike, promote_dtypes_inexact


def promote_args_inexact(name: str, *args: Any) -> list:
    """The arguments as arrays of their common inexact dtype, as JAX promotes them (integers
    become floats; float32 by default, float64 with x64; Python scalars are weak).

    Example: ``x, loc, scale = promote_args_inexact("norm.logpdf", x, 0, 1)``
    """
    check_arraylike(name, *args)
    return [jnp.asarray(a) for a in promote_dtypes_inexact(*args)]


def is_integer(x: Any) -> Any:
    """Whether each (float) value is a whole number (finite)."""
    return (jnp.floor(x) == x) & jnp.isfinite(x)
