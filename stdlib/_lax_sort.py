"""Part of ``pyree.lax``: ``sort``, ``sort_key_val`` and ``top_k`` on the ``sort`` primitive."""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from pyree.transpiler import primitives as P
from pyree.transpiler import sorting
from pyree.transpiler.source import where
from pyree.transpiler.trace import get_aval

__all__ = ["sort", "sort_key_val", "top_k"]


def _dimension(dimension: Any, ndim: int, what: str) -> int:
    dimension = operator.index(dimension)
    if not -ndim <= dimension < ndim:
        raise ValueError(f"{what}: dimension {dimension} is out of bounds for operands of rank "
                         f"{ndim}{where(None)}")
    return dimension % ndim


def _bind(operands: Sequence[Any], dimension: int, is_stable: bool, num_keys: int,
          descending: bool = False, total_order: bool = False) -> list:
    return sorting.sort(operands, dimension, is_stable, num_keys, descending, total_order)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sort one array, or several of one shape together, along ``dimension``.

    With a sequence of operands, the first ``num_keys`` of them are the keys (compared
    lexicographically) and all are permuted alike; a tuple of the sorted operands comes back.
    NaNs sort last; -0.0 and 0.0 are equal (as in JAX). The sort is always stable.

    Example::

        lax.sort(jnp.array([3., 1., 2.]))                  # [1., 2., 3.]
        keys, vals = lax.sort((k, v), num_keys=1)         # v reordered by k
    """
    if isinstance(operand, (list, tuple)):
        operands = list(operand)
        if not operands:
            raise TypeError(f"lax.sort needs at least one operand{where(None)}")
        ndim = get_aval(operands[0]).ndim
        if ndim == 0:
            raise ValueError(f"lax.sort: dimension {dimension} is out of bounds for rank-0 "
                             f"operands{where(None)}")
        d = _dimension(dimension, ndim, "lax.sort")
        return tuple(_bind(operands, d, is_stable, num_keys))
    ndim = get_aval(operand).ndim
    if ndim == 0:
        raise ValueError(f"lax.sort: dimension {dimension} is out of bounds for a rank-0 "
                         f"operand{where(None)}")
    if num_keys != 1:
        raise ValueError(f"lax.sort of a single operand takes num_keys=1, got {num_keys}"
                         f"{where(None)}")
    return _bind([operand], _dimension(dimension, ndim, "lax.sort"), is_stable, 1)[0]


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True
                 ) -> tuple[Any, Any]:
    """Sort ``keys`` along ``dimension`` and permute ``values`` alike.

    Example::

        lax.sort_key_val(jnp.array([3, 1, 2]), jnp.array([30., 10., 20.]))
        # ([1, 2, 3], [10., 20., 30.])
    """
    k, v = sort((keys, values), dimension, is_stable, num_keys=1)
    return k, v


def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """The ``k`` largest entries along ``axis`` (the last by default), largest first, and their
    int32 indices. Ties go to the lower index; NaN counts as larger than everything (IEEE's
    total order, as in JAX: -NaN as smaller than everything, and 0.0 larger than -0.0).

    Example::

        values, indices = lax.top_k(jnp.array([1., 3., 2.]), 2)   # [3., 2.], [1, 2]
    """
    aval = get_aval(operand)
    if aval.ndim == 0:
        raise TypeError(f"top_k needs an operand of rank 1 or more, got a rank-0 one{where(None)}")
    if P.kind(aval.dtype) not in "biuf":
        raise TypeError(f"top_k needs real numbers or booleans, got {aval.dtype}{where(None)}")
    d = _dimension(axis, aval.ndim, "lax.top_k")
    k = operator.index(k)
    n = aval.shape[d]
    if not 0 <= k <= n:
        raise ValueError(f"top_k: k={k} must be between 0 and the size of axis {d} ({n})"
                         f"{where(None)}")
    positions = P.iota_p.bind(dtype=np.dtype(np.int32), shape=aval.shape, dimension=d)
    values, indices = _bind([operand, positions], d, True, 1, descending=True,
                            total_order=True)
    if k != n:
        start = (0,) * aval.ndim
        limit = aval.shape[:d] + (k,) + aval.shape[d + 1:]
        strides = (1,) * aval.ndim
        values = P.slice_p.bind(values, start_indices=start, limit_indices=limit,
                                strides=strides)
        indices = P.slice_p.bind(indices, start_indices=start, limit_indices=limit,
                                 strides=strides)
    return values, indices
