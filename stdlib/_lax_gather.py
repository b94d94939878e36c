"""Part of ``pyree.lax``: ``gather`` and the ``scatter`` family (``jax.lax``'s names and forms).

Example::

    from pyree import lax
    dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    rows = lax.gather(matrix, jnp.array([[2], [0]]), dn, slice_sizes=(1, matrix.shape[1]))
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from pyree.transpiler.families import gather_scatter as _gs
from pyree.transpiler.families.gather_scatter import (GatherDimensionNumbers, GatherScatterMode,
                                                      ScatterDimensionNumbers)
from pyree.transpiler.core.trace import Tracer as _Tracer

__all__ = ["gather", "scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max",
           "scatter_apply", "GatherDimensionNumbers", "ScatterDimensionNumbers",
           "GatherScatterMode"]


def static_fill_value(fill_value: Any) -> Any:
    """A fill value as a Python scalar (it is compiled into the program)."""
    if fill_value is None:
        return None
    if isinstance(fill_value, _Tracer):
        raise TypeError("fill_value must be a concrete scalar, not a traced value")
    value = np.asarray(fill_value)
    if value.shape != ():
        raise TypeError(f"fill_value must be a scalar, got shape {value.shape}")
    return value.item()


def gather(operand: Any, start_indices: Any, dimension_numbers: Any,
           slice_sizes: Sequence[int], *, unique_indices: bool = False,
           indices_are_sorted: bool = False, mode: Any = None,
           fill_value: Any = None) -> Any:
    """Windows of ``operand`` starting at the index vectors of ``start_indices`` (its last
    axis), as ``jax.lax.gather``. ``mode``: None or 'clip' clamp the starts so every window
    fits (JAX's default here); 'fill' reads ``fill_value`` (NaN, INT_MIN, ... by default) for
    windows that do not fit.

    Example::

        dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                        start_index_map=(0,))
        lax.gather(jnp.arange(5.0), jnp.array([[3], [1]]), dn, (1,))   # [3., 1.]
    """
    parsed = GatherScatterMode.CLIP if mode is None else GatherScatterMode.from_any(mode)
    return _gs.gather(operand, start_indices, _gs.gather_dimension_numbers(dimension_numbers),
                      tuple(int(s) for s in slice_sizes), parsed, static_fill_value(fill_value),
                      bool(indices_are_sorted), bool(unique_indices))


def _scatter(combiner: str, operand: Any, scatter_indices: Any, updates: Any,
             dimension_numbers: Any, indices_are_sorted: bool, unique_indices: bool,
             mode: Any) -> Any:
    return _gs.scatter(operand, scatter_indices, updates,
                       _gs.scatter_dimension_numbers(dimension_numbers), combiner,
                       GatherScatterMode.from_any(mode), bool(indices_are_sorted),
                       bool(unique_indices))


def scatter(operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: Any, *,
            indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None) -> Any:
    """``operand`` with the windows of ``updates`` written at the index vectors of
    ``scatter_indices`` (``jax.lax.scatter``). Out-of-bounds windows are dropped unless
    ``mode='clip'``; with repeated indices one of the updates wins.

    Example::

        dn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,))
        lax.scatter(jnp.zeros(4), jnp.array([[1], [3]]), jnp.array([5.0, 6.0]), dn)
        # [0., 5., 0., 6.]
    """
    return _scatter("replace", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_add(operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: Any, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: Any = None) -> Any:
    """Like ``scatter``, but adding the updates (repeated indices accumulate).

    Example: ``lax.scatter_add(jnp.zeros(3), jnp.array([[1], [1]]), jnp.ones(2), dn)`` is
    ``[0., 2., 0.]`` with ``dn`` as in ``scatter``'s example."""
    return _scatter("add", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_mul(operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: Any, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: Any = None) -> Any:
    """Like ``scatter``, but multiplying by the updates.

    Example: ``lax.scatter_mul(jnp.ones(3), jnp.array([[1]]), jnp.array([4.0]), dn)`` is
    ``[1., 4., 1.]`` with ``dn`` as in ``scatter``'s example."""
    return _scatter("mul", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_min(operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: Any, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: Any = None) -> Any:
    """Like ``scatter``, but keeping the minimum of the element and the updates.

    Example: ``lax.scatter_min(jnp.ones(3), jnp.array([[1]]), jnp.array([0.5]), dn)`` is
    ``[1., 0.5, 1.]`` with ``dn`` as in ``scatter``'s example."""
    return _scatter("min", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_max(operand: Any, scatter_indices: Any, updates: Any, dimension_numbers: Any, *,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                mode: Any = None) -> Any:
    """Like ``scatter``, but keeping the maximum of the element and the updates.

    Example: ``lax.scatter_max(jnp.zeros(3), jnp.array([[1]]), jnp.array([2.0]), dn)`` is
    ``[0., 2., 0.]`` with ``dn`` as in ``scatter``'s example."""
    return _scatter("max", operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode)


def scatter_apply(operand: Any, scatter_indices: Any, func: Any, dimension_numbers: Any, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode: Any = None) -> Any:
    """``operand`` with ``func`` applied to the elements the scatter windows cover (each once,
    however often it is indexed), as ``jax.lax.scatter_apply``.

    Example: ``lax.scatter_apply(jnp.ones(3), jnp.array([[1]]), jnp.negative, dn)`` is
    ``[1., -1., 1.]`` with ``dn`` as in ``scatter``'s example."""
    from pyree.transpiler.core import primitives as P
    from pyree.transpiler.core.trace import TypedScalar, get_aval
    aval = get_aval(operand)
    dn = _gs.scatter_dimension_numbers(dimension_numbers)
    flags = np.dtype(np.bool_)
    marks = P.broadcast_in_dim_p.bind(TypedScalar(False, flags, False), shape=aval.shape,
                                      broadcast_dimensions=())
    hits = P.broadcast_in_dim_p.bind(TypedScalar(True, flags, False), shape=tuple(update_shape),
                                     broadcast_dimensions=())
    touched = _gs.scatter(marks, scatter_indices, hits, dn, "replace",
                          GatherScatterMode.from_any(mode), bool(indices_are_sorted),
                          bool(unique_indices))
    return P.select_p.bind(touched, func(operand), operand)
