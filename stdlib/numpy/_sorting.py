"""Sorting and searching in ``pyree.numpy``: sort, argsort, lexsort, searchsorted, unique,
nonzero, flatnonzero, argwhere, median, quantile, percentile and their NaN-ignoring forms.

Everything is composed from the ``sort`` primitive (transpiler/families/sorting.py) and the core
primitives, so it runs eagerly, under ``jit``, ``grad`` and ``vmap`` alike. Selections whose
length depends on the data (``unique``, ``nonzero``) are a stable sort of a key that puts the
wanted positions first, cut to the count (eagerly) or to ``size=`` (under ``jit``).
"""
from __future__ import annotations

__all__ = [
    "argsort", "argwhere", "flatnonzero", "lexsort", "median", "nanmedian", "nanpercentile",
    "nanquantile", "nonzero", "percentile", "quantile", "searchsorted", "sort", "unique",
    "argpartition", "intersect1d", "isin", "partition", "setdiff1d", "setxor1d", "sort_complex",
    "union1d", "unique_all", "unique_counts", "unique_inverse", "unique_values",
]

import builtins
import math
import operator
from typing import Any, Optional, Sequence

import numpy as np

from pyree import lax
from pyree.errors import ConcretizationTypeError
from pyree.runtime.array import Array
from pyree.transpiler.core import primitives as P
from pyree.transpiler.families import sorting
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import Tracer, get_aval

from ._util import (canonical_axes, canonical_axis, check_arraylike, convert,
                    promote_dtypes, promote_dtypes_inexact, typed_scalar)

_I32 = np.dtype(np.int32)
_BOOL = np.dtype(np.bool_)


# -- small compositions ---------------------------------------------------------------------------

def _array(name: str, a: Any) -> Any:
    check_arraylike(name, a)
    if isinstance(a, (bool, int, float, complex, np.generic)) or (
            isinstance(a, np.ndarray) and a.ndim == 0):
        from ._creation import asarray
        return asarray(a)
    return a


def _sort(operands: Sequence[Any], dimension: int, num_keys: int = 1,
          descending: bool = False) -> list:
    return sorting.sort(operands, dimension, True, num_keys, descending)


def _iota(shape: tuple, dimension: int, dtype: np.dtype = _I32) -> Any:
    return lax.broadcasted_iota(dtype, shape, dimension)


def _ravel(x: Any) -> Any:
    aval = get_aval(x)
    return lax.reshape(x, (aval.size,))


def _slice_last(x: Any, start: int, stop: int) -> Any:
    shape = get_aval(x).shape
    return lax.slice(x, (0,) * (len(shape) - 1) + (start,), shape[:-1] + (stop,))


def _resize_last(x: Any, size: int) -> Any:
    """``x`` (rank 1) cut or padded to ``size``; callers overwrite the padding."""
    n = get_aval(x).shape[-1]
    if size <= n:
        return _slice_last(x, 0, size)
    # Padded with x's own first element, not a constant: IREE 3.13 merges equal splats of two
    # pads and then writes both arrays into one buffer.
    fill = (lax.reshape(lax.slice(x, (0,), (1,)), ()) if n else
            typed_scalar(0, get_aval(x).dtype))
    return lax.pad(x, fill, padding_config=((0, size - n, 0),))


def _scatter_to(dest: Any, values: Any, n: int) -> Any:
    """A rank-1 array of length ``n`` holding ``values[i]`` at ``dest[i]`` (distinct
    destinations; those out of range are dropped; other entries 0): a permutation or a stable
    partition in O(n), where sorting by the destination compares every pair (rank sort) or
    makes a radix sort's passes (jnp.unique of 1000 integers: 4.1 ms with two sorts)."""
    dtype = get_aval(values).dtype
    zeros = lax.broadcast_in_dim(typed_scalar(0, dtype), shape=(n,), broadcast_dimensions=())
    numbers = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))
    return lax.scatter(zeros, lax.reshape(dest, (get_aval(dest).shape[0], 1)), values, numbers,
                       unique_indices=True, mode="drop")


def _first_of_runs(is_new: Any) -> tuple[Any, Any]:
    """(each element's run number, where each run's first element goes when the runs' first
    elements are moved to the front in order: its run number; elsewhere n, out of range)."""
    n = get_aval(is_new).shape[0]
    run_id = lax.sub(_cumsum_last(convert(is_new, _I32)), typed_scalar(1, _I32))
    dest = lax.select(is_new, run_id, lax.broadcast_in_dim(
        typed_scalar(n, _I32), shape=(n,), broadcast_dimensions=()))
    return run_id, dest


def _isnan(x: Any) -> Any:
    return lax.ne(x, x)


def _less(a: Any, b: Any) -> Any:
    """``a < b`` in the sort order (NaN after every number), elementwise with broadcasting."""
    lt = lax.lt(a, b)
    if P.kind(get_aval(a).dtype) == "f":
        lt = lax.bitwise_or(lt, lax.bitwise_and(lax.bitwise_not(_isnan(a)), _isnan(b)))
    return lt


def _not_equal_sorted(a: Any, b: Any, equal_nan: bool) -> Any:
    ne = lax.ne(a, b)
    if equal_nan and P.kind(get_aval(a).dtype) in "fc":
        ne = lax.bitwise_and(ne, lax.bitwise_not(lax.bitwise_and(_isnan(a), _isnan(b))))
    return ne


def _cumsum_last(x: Any) -> Any:
    """Inclusive prefix sum along the last axis in log2(n) shifted additions."""
    shape = get_aval(x).shape
    n = shape[-1]
    shift = 1
    zero = typed_scalar(0, get_aval(x).dtype)
    while shift < n:
        config = [(0, 0, 0)] * (len(shape) - 1) + [(shift, -shift, 0)]
        x = lax.add(x, lax.pad(x, zero, padding_config=tuple(config)))
        shift *= 2
    return x


def _count(mask: Any, axes: tuple) -> Any:
    return lax.reduce_sum(convert(mask, _I32), axes=axes)


def _concrete_count(count: Any, name: str) -> int:
    """The number of selected elements as a Python int; under jit ``size=`` must say it."""
    if isinstance(count, Tracer):
        raise ConcretizationTypeError(
            f"jnp.{name}: the size of the result depends on the values of a traced array, "
            f"which are only known when the compiled program runs.{_where(None)}\n"
            f"Pass a static size=... argument (the result is cut or filled to that length) "
            f"to use jnp.{name} inside jit, vmap or other transformations.")
    return int(count)


def _static_size(size: Any, name: str) -> Optional[int]:
    if size is None:
        return None
    if isinstance(size, Tracer):
        raise ConcretizationTypeError(f"jnp.{name}: size= must be a static integer, got a "
                                      f"traced value{_where(None)}")
    size = operator.index(size)
    if size < 0:
        raise ValueError(f"jnp.{name}: size= must be non-negative, got {size}{_where(None)}")
    return size


# -- sort, argsort, lexsort -----------------------------------------------------------------------

def _sort_axis(a: Any, axis: Any, name: str) -> tuple[Any, int]:
    if axis is None:
        a = _ravel(a)
        return a, 0
    ndim = get_aval(a).ndim
    if ndim == 0:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 0")
    return a, canonical_axis(operator.index(axis), ndim)


def _check_order(order: Any, name: str) -> None:
    if order is not None:
        raise ValueError(f"jnp.{name}: the order argument (sorting structured arrays by field) "
                         f"is not supported{_where(None)}")


def sort(a: Any, axis: Optional[int] = -1, *, kind: Any = None, order: Any = None,
         stable: bool = True, descending: bool = False) -> Any:
    """A sorted copy of ``a`` along ``axis`` (flattened first if ``axis`` is None). NaNs sort
    last (first with ``descending=True``); ``kind`` is accepted and ignored.

    Example::

        jnp.sort(jnp.array([3., jnp.nan, 1.]))      # [1., 3., nan]
    """
    _check_order(order, "sort")
    a, axis = _sort_axis(_array("sort", a), axis, "sort")
    return _sort([a], axis, descending=descending)[0]


def argsort(a: Any, axis: Optional[int] = -1, *, kind: Any = None, order: Any = None,
            stable: bool = True, descending: bool = False) -> Any:
    """The int32 indices that sort ``a`` along ``axis`` (flattened first if ``axis`` is None).
    The sort is stable: equal elements keep their order, also with ``descending=True``.

    Example::

        jnp.argsort(jnp.array([3, 1, 2]))     # [1, 2, 0]
    """
    _check_order(order, "argsort")
    a, axis = _sort_axis(_array("argsort", a), axis, "argsort")
    positions = _iota(get_aval(a).shape, axis)
    return _sort([a, positions], axis, descending=descending)[1]


def lexsort(keys: Any, axis: int = -1) -> Any:
    """The int32 indices that sort by several keys: the last key is the primary one.

    Example::

        jnp.lexsort([jnp.array([1, 1, 0]), jnp.array([2, 1, 1])])     # [2, 1, 0]
    """
    if isinstance(keys, (Array, Tracer, np.ndarray)):
        if get_aval(keys).ndim == 0:
            raise TypeError(f"jnp.lexsort: need a sequence of keys with len > 0{_where(None)}")
        keys = [keys[i] for i in range(get_aval(keys).shape[0])]
    keys = list(keys)
    if not keys:
        raise TypeError(f"jnp.lexsort: need a sequence of keys with len > 0{_where(None)}")
    check_arraylike("lexsort", *keys)
    keys = [_array("lexsort", k) for k in keys]
    from ._util import broadcast_shapes, broadcast_to_shape
    shape = broadcast_shapes(*[get_aval(k).shape for k in keys])
    if not shape:
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 0")
    axis = canonical_axis(operator.index(axis), len(shape))
    keys = [broadcast_to_shape(k, shape) for k in reversed(keys)]
    return _sort(keys + [_iota(shape, axis)], axis, num_keys=len(keys))[-1]


# -- searchsorted -----------------------------------------------------------------------------------

_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")
# Above this many comparisons, searchsorted counts over blocks of `a` in a loop.
_SEARCH_BLOCK_ELEMENTS = 1 << 22
# Longer searches are binary searches (1000 into 1000 floats under jit: counting 1.26 ms with
# the sort before it, JAX 0.26 ms).
_SEARCH_COUNT_ELEMENTS = 1 << 12


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
    """Where to insert ``v`` into the sorted 1-D ``a`` to keep it sorted: int32 indices of
    ``v``'s shape. ``side='left'`` gives the first suitable position, ``'right'`` the last.
    NaNs are ordered last, as ``sort`` places them.

    When ``len(a) * v.size`` is small, each index is a count of the elements of ``a`` before
    ``v`` (one vectorized comparison of all pairs; the count does not depend on the order of
    ``a``, so ``sorter`` needs no gather); otherwise, and for ``method='compare_all'`` in
    blocks, a binary search of ``a`` (which must then be sorted, as NumPy requires).

    Example::

        jnp.searchsorted(jnp.array([1., 2., 3.]), jnp.array([2., 2.5]))    # [1, 2]
    """
    check_arraylike("searchsorted", a, v)
    if side not in ("left", "right"):
        raise ValueError(f"jnp.searchsorted: side must be 'left' or 'right', got {side!r}"
                         f"{_where(None)}")
    if method not in _SEARCH_METHODS:
        raise ValueError(f"jnp.searchsorted: method must be one of {_SEARCH_METHODS}, got "
                         f"{method!r}{_where(None)}")
    a, v = _array("searchsorted", a), _array("searchsorted", v)
    if get_aval(a).ndim != 1:
        raise ValueError(f"jnp.searchsorted: a should be 1-dimensional, got shape "
                         f"{get_aval(a).shape}{_where(None)}")
    if sorter is not None:
        check_arraylike("searchsorted", sorter)
        if get_aval(sorter).shape != get_aval(a).shape:
            raise ValueError(f"jnp.searchsorted: sorter must have the shape of a "
                             f"{get_aval(a).shape}, got {get_aval(sorter).shape}{_where(None)}")
    a, v = promote_dtypes(a, v)
    if P.kind(get_aval(a).dtype) == "c":
        raise TypeError(f"jnp.searchsorted does not support complex arrays{_where(None)}")
    v_shape = get_aval(v).shape
    n = get_aval(a).shape[0]
    flat_v = lax.reshape(v, (math.prod(v_shape),))
    m = get_aval(flat_v).shape[0]
    if n == 0 or m == 0:
        return lax.broadcast_in_dim(typed_scalar(0, _I32), shape=v_shape,
                                    broadcast_dimensions=())

    def count_before(block: Any, valid: Any = None) -> Any:
        k = get_aval(block).shape[0]
        rows = lax.broadcast_in_dim(block, shape=(k, m), broadcast_dimensions=(0,))
        cols = lax.broadcast_in_dim(flat_v, shape=(k, m), broadcast_dimensions=(1,))
        before = _less(rows, cols) if side == "left" else lax.bitwise_not(_less(cols, rows))
        if valid is not None:
            before = lax.bitwise_and(before, lax.broadcast_in_dim(
                valid, shape=(k, m), broadcast_dimensions=(0,)))
        return _count(before, (0,))

    if n * m > _SEARCH_COUNT_ELEMENTS and method != "compare_all":
        # A binary search of the sorted `a` (as NumPy requires): ceil(log2(n + 1)) halvings,
        # each a gather of m elements. Counting all n * m pairs took 4.5 s for 100k into 100k
        # floats (JAX 35 ms).
        from ._indexing import take
        if sorter is not None:
            a = take(a, sorter)
        lo = lax.broadcast_in_dim(typed_scalar(0, _I32), shape=(m,), broadcast_dimensions=())
        hi = lax.broadcast_in_dim(typed_scalar(n, _I32), shape=(m,), broadcast_dimensions=())
        one = typed_scalar(1, _I32)
        for _ in range(n.bit_length()):
            mid = lax.shift_right_logical(lax.add(lo, hi), one)
            at = take(a, lax.min(mid, typed_scalar(n - 1, _I32)), mode="clip")
            right = _less(at, flat_v) if side == "left" else lax.bitwise_not(_less(flat_v, at))
            right = lax.bitwise_and(right, lax.lt(lo, hi))
            lo = lax.select(right, lax.add(mid, one), lo)
            hi = lax.select(right, hi, lax.min(mid, hi))
        return lax.reshape(lo, v_shape)
    if n * m <= _SEARCH_BLOCK_ELEMENTS:
        counts = count_before(a)
    else:
        # Bounded memory: add up the counts of blocks of `a` (the last block is masked).
        block = builtins.max(1, _SEARCH_BLOCK_ELEMENTS // m)
        blocks = -(-n // block)
        padded = _resize_last(a, blocks * block)

        def body(i: Any, total: Any) -> Any:
            start = lax.mul(i, typed_scalar(block, _I32))
            part = lax.dynamic_slice(padded, (start,), (block,))
            valid = lax.lt(lax.add(_iota((block,), 0), start),
                           typed_scalar(n, _I32))
            return lax.add(total, count_before(part, valid))

        zero = lax.broadcast_in_dim(typed_scalar(0, _I32), shape=(m,),
                                    broadcast_dimensions=())
        counts = lax.fori_loop(0, blocks, body, zero)
    return lax.reshape(counts, v_shape)


# -- unique -----------------------------------------------------------------------------------------

def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: Optional[int] = None, *, equal_nan: bool = True,
           size: Optional[int] = None, fill_value: Any = None, sorted: bool = True) -> Any:
    """The sorted distinct elements of ``ar`` (of its slices along ``axis`` if given), and
    optionally the index of each one's first occurrence, the inverse map and the counts.

    The number of distinct elements depends on the data: under ``jit`` pass ``size=``; the
    result is then cut or filled to ``size`` (values with ``fill_value``, by default the
    smallest element; indices with the first one's; counts with 0).

    Example::

        jnp.unique(jnp.array([3, 1, 3, 2]))                 # [1, 2, 3]
        jnp.unique(jnp.array([3, 1, 3, 2]), size=5)         # [1, 2, 3, 1, 1]
    """
    a = _array("unique", ar)
    size = _static_size(size, "unique")
    aval = get_aval(a)
    if axis is None:
        keys = [_ravel(a)]
        n = aval.size
        row_shape: tuple = ()
        axis_ = None
    else:
        if aval.ndim == 0:
            raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of "
                                          f"dimension 0")
        axis_ = canonical_axis(operator.index(axis), aval.ndim)
        moved = lax.transpose(a, (axis_,) + tuple(d for d in range(aval.ndim) if d != axis_))
        n = aval.shape[axis_]
        row_shape = get_aval(moved).shape[1:]
        rows = lax.reshape(moved, (n, math.prod(row_shape)))
        keys = [lax.reshape(lax.slice(rows, (0, j), (n, j + 1)), (n,))
                for j in range(math.prod(row_shape))]
        if not keys:  # rows of no elements are all equal
            keys = [lax.broadcast_in_dim(typed_scalar(0, _I32), shape=(n,),
                                         broadcast_dimensions=())]
    if n == 0 and size and fill_value is None:
        raise ValueError(f"jnp.unique: for zero-sized input with nonzero size argument, "
                         f"fill_value must be specified{_where(None)}")
    num_keys = len(keys)
    positions = _iota((n,), 0)
    *sorted_keys, permutation = _sort(keys + [positions], 0, num_keys=num_keys)
    if n > 0:
        differs = [_not_equal_sorted(lax.slice(k, (1,), (n,)), lax.slice(k, (0,), (n - 1,)),
                                     equal_nan) for k in sorted_keys]
        changed = differs[0]
        for d in differs[1:]:
            changed = lax.bitwise_or(changed, d)
        is_new = lax.concatenate([lax.broadcast_in_dim(True, shape=(1,),
                                                       broadcast_dimensions=()), changed], 0)
    else:
        is_new = lax.broadcast_in_dim(True, shape=(0,), broadcast_dimensions=())
    count = _count(is_new, (0,))
    # The first element of each run, in order, moved to the front.
    run_id, dest = _first_of_runs(is_new)
    unique_keys = [_scatter_to(dest, k, n) for k in sorted_keys]
    first_index, starts = _scatter_to(dest, permutation, n), _scatter_to(dest, positions, n)

    counts = None
    if return_counts and n:
        # Each run's length: the next run's start (n after the last run) less its start.
        following = lax.pad(starts, typed_scalar(n, _I32), padding_config=((-1, 1, 0),))
        last = lax.ge(_iota((n,), 0), lax.sub(count, typed_scalar(1, _I32)))
        following = lax.select(last, lax.broadcast_in_dim(
            typed_scalar(n, _I32), shape=(n,), broadcast_dimensions=()), following)
        counts = lax.sub(following, starts)

    length = _concrete_count(count, "unique") if size is None else size
    unique_keys = [_resize_last(k, length) for k in unique_keys]
    first_index = _resize_last(first_index, length)
    slot = _iota((length,), 0)
    valid = lax.lt(slot, count)

    def fill(values: Any, filler: Any) -> Any:
        return lax.select(valid, values, filler) if size is not None else values

    if fill_value is None:
        values = [fill(k, lax.broadcast_in_dim(lax.slice(k, (0,), (1,)), (length,), (0,)))
                  if length else k for k in unique_keys]
    else:
        filler = convert(_array("unique", fill_value), get_aval(unique_keys[0]).dtype)
        if get_aval(filler).shape not in ((), row_shape):
            raise ValueError(f"jnp.unique: fill_value must be a scalar or a row of shape "
                             f"{row_shape}{_where(None)}")
        if row_shape:
            filler = _ravel(lax.broadcast_in_dim(filler, row_shape, tuple(range(
                len(row_shape) - get_aval(filler).ndim, len(row_shape)))))
        values = []
        for j, k in enumerate(unique_keys):
            f = lax.reshape(lax.slice(filler, (j,), (j + 1,)), ()) if row_shape else filler
            values.append(fill(k, lax.broadcast_in_dim(f, shape=(length,),
                                                       broadcast_dimensions=())))
    if axis_ is None:
        result = values[0]
    else:
        table = lax.concatenate([lax.reshape(v, (length, 1)) for v in values], 1)
        table = lax.reshape(table, (length,) + row_shape)
        perm = list(range(1, aval.ndim))
        perm.insert(axis_, 0)
        result = lax.transpose(table, tuple(perm))
    outputs = [result]
    if return_index:
        if length:
            first = lax.broadcast_in_dim(lax.slice(first_index, (0,), (1,)), (length,), (0,))
            first_index = fill(first_index, first)
        outputs.append(first_index)
    if return_inverse:
        inverse = _scatter_to(permutation, run_id, n)
        if axis_ is None:
            inverse = lax.reshape(inverse, aval.shape)
        outputs.append(inverse)
    if return_counts:
        zeros = lax.broadcast_in_dim(typed_scalar(0, _I32), shape=(length,),
                                     broadcast_dimensions=())
        outputs.append(zeros if counts is None else fill(_resize_last(counts, length), zeros))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


# -- nonzero, flatnonzero, argwhere -------------------------------------------------------------------

def _nonzero_flat(a: Any, size: Optional[int], name: str) -> tuple[Any, Any, int]:
    """(flat indices of the nonzero elements cut/padded to the length, the count, length)."""
    flat = _ravel(a)
    aval = get_aval(flat)
    n = aval.shape[0]
    if aval.dtype == _BOOL:
        mask = flat
    else:
        mask = lax.ne(flat, typed_scalar(0, aval.dtype))
    count = _count(mask, (0,))
    positions = _sort([lax.bitwise_not(mask), _iota((n,), 0)], 0)[1]
    length = _concrete_count(count, name) if size is None else size
    return _resize_last(positions, length), count, length


def _fill_values(fill_value: Any, ndim: int, name: str) -> list:
    if fill_value is None:
        return [0] * ndim
    if isinstance(fill_value, (tuple, list)):
        if len(fill_value) != ndim:
            raise ValueError(f"jnp.{name}: fill_value must be a scalar or a tuple of length "
                             f"{ndim}; got a sequence of length {len(fill_value)}{_where(None)}")
        return list(fill_value)
    if get_aval(fill_value).shape != ():
        raise ValueError(f"jnp.{name}: fill_value must be a scalar or a tuple of length {ndim}; "
                         f"got an array of shape {get_aval(fill_value).shape}{_where(None)}")
    return [fill_value] * ndim


def _unravel(flat_indices: Any, shape: tuple, count: Any, size: Optional[int], fills: list
             ) -> list:
    length = get_aval(flat_indices).shape[0]
    valid = lax.lt(_iota((length,), 0), count)
    out = []
    for d, dim in enumerate(shape):
        stride = math.prod(shape[d + 1:])
        index = flat_indices
        if stride > 1:
            index = lax.div(index, typed_scalar(stride, _I32))
        if d > 0 and dim > 1:
            index = lax.rem(index, typed_scalar(dim, _I32))
        elif d > 0 and dim <= 1:
            index = lax.mul(index, typed_scalar(0, _I32))
        if size is not None:
            filler = lax.broadcast_in_dim(convert(_array("nonzero", fills[d]), _I32),
                                          shape=(length,), broadcast_dimensions=())
            index = lax.select(valid, index, filler)
        out.append(index)
    return out


def nonzero(a: Any, *, size: Optional[int] = None, fill_value: Any = None) -> tuple:
    """The int32 indices of the nonzero elements of ``a``, one array per dimension. Under
    ``jit`` pass ``size=``: the result is cut or filled (with ``fill_value``, default 0) to it.

    Example::

        jnp.nonzero(jnp.array([0, 3, 0, 4]))                # (Array([1, 3]),)
        jnp.nonzero(jnp.array([0, 3, 0, 4]), size=3)        # (Array([1, 3, 0]),)
    """
    a = _array("nonzero", a)
    size = _static_size(size, "nonzero")
    shape = get_aval(a).shape
    if not shape:
        raise ValueError(f"Calling nonzero on 0d arrays is not allowed. Use "
                         f"jnp.atleast_1d(scalar).nonzero() instead.{_where(None)}")
    fills = _fill_values(fill_value, len(shape), "nonzero")
    flat, count, _ = _nonzero_flat(a, size, "nonzero")
    return tuple(_unravel(flat, shape, count, size, fills))


def flatnonzero(a: Any, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """The int32 indices of the nonzero elements of ``a`` flattened (``size=`` as in
    ``nonzero``).

    Example::

        jnp.flatnonzero(jnp.array([[0, 1], [2, 0]]))     # [1, 2]
    """
    a = _array("flatnonzero", a)
    return nonzero(_ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """The int32 indices of the nonzero elements of ``a`` as rows of an array of shape
    ``(count, a.ndim)`` (``size=`` as in ``nonzero``).

    Example::

        jnp.argwhere(jnp.array([[0, 1], [2, 0]]))     # [[0, 1], [1, 0]]
    """
    a = _array("argwhere", a)
    size = _static_size(size, "argwhere")
    shape = get_aval(a).shape
    fills = _fill_values(fill_value, builtins.max(len(shape), 1), "argwhere")
    flat, count, length = _nonzero_flat(a, size, "argwhere")
    if not shape:
        return lax.broadcast_in_dim(typed_scalar(0, _I32), shape=(length, 0),
                                    broadcast_dimensions=())
    columns = _unravel(flat, shape, count, size, fills)
    return lax.concatenate([lax.reshape(c, (length, 1)) for c in columns], 1)


# -- quantiles --------------------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _take_last(x: Any, index: Any) -> Any:
    """``x[..., index]`` per element, ``index`` (int32) of ``x``'s shape less the last axis, by
    a one-hot selection (no gather): ``select`` keeps gradients exact and NaN-safe."""
    shape = get_aval(x).shape
    hit = lax.eq(_iota(shape, len(shape) - 1),
                 lax.broadcast_in_dim(index, shape=shape,
                                      broadcast_dimensions=tuple(range(len(shape) - 1))))
    zero = typed_scalar(0, get_aval(x).dtype)
    return lax.reduce_sum(lax.select(hit, x, zero), axes=(len(shape) - 1,))


def _quantile(name: str, a: Any, q: Any, axis: Any, method: str, keepdims: bool,
              ignore_nan: bool, out: Any = None, overwrite_input: bool = False,
              weights: Any = None, scale: float = 1.0) -> Any:
    check_arraylike(name, a, q)
    if out is not None:
        raise NotImplementedError(f"jnp.{name}: the out argument is not supported (pyree "
                                  f"arrays are immutable){_where(None)}")
    if weights is not None:
        raise NotImplementedError(f"jnp.{name}: weights= is not supported{_where(None)}")
    if method not in _METHODS:
        raise ValueError(f"jnp.{name}: method must be one of {_METHODS}, got {method!r}"
                         f"{_where(None)}")
    if isinstance(q, (int, float, np.ndarray, np.generic, list, tuple)) and not isinstance(q, bool):
        q_np = np.asarray(q, dtype=np.float64) / scale
        if q_np.size and not (np.all(q_np >= 0) and np.all(q_np <= 1)):
            bounds = "[0, 100]" if scale != 1.0 else "[0, 1]"
            raise ValueError(f"jnp.{name}: q must be in the range {bounds}{_where(None)}")
    a = _array(name, a)
    (a,) = promote_dtypes_inexact(a)
    dtype = get_aval(a).dtype
    if P.kind(dtype) == "c":
        raise TypeError(f"jnp.{name} does not support complex arrays{_where(None)}")
    a = convert(a, dtype)  # strongly typed, as in JAX
    q = convert(_array(name, q), dtype)
    if scale != 1.0:
        q = lax.div(q, typed_scalar(scale, dtype))
    aval = get_aval(a)
    axes = canonical_axes(axis, aval.ndim)
    kept = tuple(d for d in range(aval.ndim) if d not in axes)
    kept_shape = tuple(aval.shape[d] for d in kept)
    n = math.prod(aval.shape[d] for d in axes)
    x = lax.reshape(lax.transpose(a, kept + axes), kept_shape + (n,))
    q_shape = get_aval(q).shape
    out_shape = q_shape + kept_shape
    if n == 0:
        result = lax.broadcast_in_dim(typed_scalar(np.nan, dtype), shape=out_shape,
                                      broadcast_dimensions=())
    else:
        result = _quantile_rows(x, q, n, method, ignore_nan, dtype)
    if keepdims:
        full = q_shape + tuple(1 if d in axes else aval.shape[d] for d in range(aval.ndim))
        result = lax.reshape(result, full)
    return result


def _quantile_rows(x: Any, q: Any, n: int, method: str, ignore_nan: bool, dtype: np.dtype
                   ) -> Any:
    """Quantiles ``q`` (any shape) of the rows (last axis, length ``n > 0``) of ``x``: the
    result has shape ``q.shape + x.shape[:-1]``."""
    rows_shape = get_aval(x).shape[:-1]
    q_shape = get_aval(q).shape
    out_shape = q_shape + rows_shape
    nq, nr = len(q_shape), len(rows_shape)
    sorted_x = _sort([x], len(rows_shape))[0]
    nan_rows = lax.reduce_or(_isnan(x), axes=(nr,))
    if ignore_nan:
        valid = lax.convert_element_type(_count(lax.bitwise_not(_isnan(x)), (nr,)), dtype)
        last = lax.broadcast_in_dim(lax.sub(valid, typed_scalar(1, dtype)),
                                    shape=out_shape,
                                    broadcast_dimensions=tuple(range(nq, nq + nr)))
    else:
        last = lax.broadcast_in_dim(typed_scalar(n - 1, dtype), shape=out_shape,
                                    broadcast_dimensions=())
    q_full = lax.broadcast_in_dim(q, shape=out_shape, broadcast_dimensions=tuple(range(nq)))
    position = lax.max(lax.mul(q_full, last), typed_scalar(0, dtype))
    table = lax.broadcast_in_dim(sorted_x, shape=out_shape + (n,),
                                 broadcast_dimensions=tuple(range(nq, nq + nr + 1)))

    def at(pos: Any) -> Any:
        index = lax.convert_element_type(pos, _I32)
        index = lax.min(lax.max(index, typed_scalar(0, _I32)), typed_scalar(n - 1, _I32))
        return _take_last(table, index)

    below = lax.floor(position)
    above = lax.ceil(position)
    if method == "lower":
        result = at(below)
    elif method == "higher":
        result = at(above)
    elif method == "nearest":
        result = at(lax.round(position, rounding_method=1))  # ties to even, as NumPy
    else:
        low, high = at(below), at(above)
        if method == "midpoint":
            result = lax.mul(lax.add(low, high), typed_scalar(0.5, dtype))
        else:
            # NumPy's interpolation: from the nearer end, so that t = 0 and t = 1 are exact.
            t = lax.sub(position, below)
            step = lax.sub(high, low)
            from_low = lax.add(low, lax.mul(step, t))
            from_high = lax.sub(high, lax.mul(step, lax.sub(
                typed_scalar(1, dtype), t)))
            result = lax.select(lax.ge(t, typed_scalar(0.5, dtype)), from_high,
                                from_low)
    nan = typed_scalar(np.nan, dtype)
    if ignore_nan:
        empty = lax.broadcast_in_dim(lax.eq(valid, typed_scalar(0, dtype)),
                                     shape=out_shape,
                                     broadcast_dimensions=tuple(range(nq, nq + nr)))
        return lax.select(empty, lax.broadcast_in_dim(
            nan, shape=out_shape, broadcast_dimensions=()), result)
    poisoned = lax.broadcast_in_dim(nan_rows, shape=out_shape,
                                    broadcast_dimensions=tuple(range(nq, nq + nr)))
    return lax.select(poisoned, lax.broadcast_in_dim(
        nan, shape=out_shape, broadcast_dimensions=()), result)


def quantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    """The ``q``-th quantiles (``q`` in [0, 1], a scalar or an array) of ``a`` over ``axis``
    (an int, a tuple, or None for all). ``method``: 'linear', 'lower', 'higher', 'midpoint'
    or 'nearest'. The result's leading axes are ``q``'s. NaN anywhere in a slice gives NaN.

    Example::

        jnp.quantile(jnp.array([1., 2., 3., 4.]), 0.25)            # 1.75
        jnp.quantile(jnp.array([1., 2., 3., 4.]), jnp.array([0., 1.]))   # [1., 4.]
    """
    return _quantile("quantile", a, q, axis, method, keepdims, False, out, overwrite_input,
                     weights)


def percentile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights: Any = None) -> Any:
    """The ``q``-th percentiles (``q`` in [0, 100]) of ``a`` over ``axis``: ``quantile`` of
    ``q / 100``.

    Example::

        jnp.percentile(jnp.array([1., 2., 3., 4.]), 50)     # 2.5
    """
    return _quantile("percentile", a, q, axis, method, keepdims, False, out, overwrite_input,
                     weights, scale=100.0)


def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """The median of ``a`` over ``axis`` (the mean of the two middle elements for an even
    count).

    Example::

        jnp.median(jnp.array([3., 1., 2., 5.]))     # 2.5
    """
    return _quantile("median", a, 0.5, axis, "midpoint", keepdims, False, out, overwrite_input)


def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False) -> Any:
    """``quantile`` ignoring NaNs (NaN only where a slice is all NaN).

    Example::

        jnp.nanquantile(jnp.array([1., jnp.nan, 3.]), 0.5)    # 2.
    """
    return _quantile("nanquantile", a, q, axis, method, keepdims, True, out, overwrite_input)


def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False) -> Any:
    """``percentile`` ignoring NaNs.

    Example::

        jnp.nanpercentile(jnp.array([1., jnp.nan, 3.]), 50)    # 2.
    """
    return _quantile("nanpercentile", a, q, axis, method, keepdims, True, out, overwrite_input,
                     scale=100.0)


def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    """``median`` ignoring NaNs.

    Example::

        jnp.nanmedian(jnp.array([1., jnp.nan, 3.]))    # 2.
    """
    return _quantile("nanmedian", a, 0.5, axis, "midpoint", keepdims, True, out,
                     overwrite_input)


# -- the Array API's unique_* ---------------------------------------------------------------------

from collections import namedtuple as _namedtuple  # noqa: E402

UniqueAllResult = _namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices",
                                                  "counts"])
UniqueCountsResult = _namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = _namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def unique_all(x: Any, /, *, size: Optional[int] = None, fill_value: Any = None
               ) -> UniqueAllResult:
    """The sorted distinct values of ``x`` (NaNs each distinct), the index of each one's first
    occurrence in the flattened ``x``, the inverse map (of ``x``'s shape) and the counts
    (``size=``/``fill_value=`` as in ``unique``).

    Example::

        jnp.unique_all(jnp.array([3, 1, 3])).counts   # [1, 2]
    """
    values, indices, inverse, counts = unique(
        x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False,
        size=size, fill_value=fill_value)
    return UniqueAllResult(values, indices, lax.reshape(inverse, get_aval(x).shape
                                                        if hasattr(x, "shape") else ()), counts)


def unique_counts(x: Any, /, *, size: Optional[int] = None, fill_value: Any = None
                  ) -> UniqueCountsResult:
    """The sorted distinct values of ``x`` and how often each occurs.

    Example::

        jnp.unique_counts(jnp.array([3, 1, 3]))   # values [1, 3], counts [1, 2]
    """
    values, counts = unique(x, return_counts=True, equal_nan=False, size=size,
                            fill_value=fill_value)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: Any, /, *, size: Optional[int] = None, fill_value: Any = None
                   ) -> UniqueInverseResult:
    """The sorted distinct values of ``x`` and, for each element of ``x`` (same shape), the
    index of its value among them.

    Example::

        jnp.unique_inverse(jnp.array([3, 1, 3])).inverse_indices   # [1, 0, 1]
    """
    values, inverse = unique(x, return_inverse=True, equal_nan=False, size=size,
                             fill_value=fill_value)
    shape = get_aval(_array("unique_inverse", x)).shape
    return UniqueInverseResult(values, lax.reshape(inverse, shape))


def unique_values(x: Any, /, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """The sorted distinct values of ``x`` (NaNs each distinct).

    Example::

        jnp.unique_values(jnp.array([3, 1, 3]))   # [1, 3]
    """
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# -- membership and set operations ----------------------------------------------------------------

_ISIN_DENSE_ELEMENTS = 1 << 22


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
    """Elementwise, whether each element of ``element`` occurs in ``test_elements`` (the
    negation with ``invert``); the result has ``element``'s shape. NaN is in nothing.

    Example::

        jnp.isin(jnp.array([1, 2, 3]), jnp.array([2, 4]))   # [False, True, False]
    """
    from ._creation import asarray
    from ._util import promote_dtypes
    check_arraylike("isin", element, test_elements)
    e, t = promote_dtypes(asarray(element), asarray(test_elements))
    shape = get_aval(e).shape
    e, t = _ravel(e), _ravel(t)
    n, m = get_aval(e).shape[0], get_aval(t).shape[0]
    if m == 0 or n == 0:
        found = lax.broadcast_in_dim(False, shape=(n,), broadcast_dimensions=())
    elif n * m <= _ISIN_DENSE_ELEMENTS:
        rows = lax.broadcast_in_dim(e, shape=(n, m), broadcast_dimensions=(0,))
        cols = lax.broadcast_in_dim(t, shape=(n, m), broadcast_dimensions=(1,))
        found = lax.reduce_or(lax.eq(rows, cols), axes=(1,))
    else:
        table = sort(t)
        pos = searchsorted(table, e)
        pos = lax.min(pos, typed_scalar(m - 1, _I32))
        from ._indexing import take
        found = lax.eq(take(table, pos, mode="clip"), e)
    if invert:
        found = lax.bitwise_not(found)
    return lax.reshape(found, shape)


def _compact_unique(name: str, values: Any, keep: Any, size: Optional[int], fill_value: Any,
                    default_fill: str = "first") -> tuple:
    """The sorted distinct ``values[keep]`` (1-D): (result, first positions in ``values``,
    count, length). Cut to the count eagerly, to ``size=`` (filled) under jit."""
    from ._creation import asarray
    n = get_aval(values).shape[0]
    positions = _iota((n,), 0)
    if n == 0:
        length = size or 0
        if length and fill_value is None and default_fill == "first":
            raise ValueError(f"jnp.{name}: for zero-sized input with nonzero size argument, "
                             f"fill_value must be specified{_where(None)}")
        filler = 0 if fill_value is None else fill_value
        out = lax.broadcast_in_dim(convert(asarray(filler), get_aval(values).dtype),
                                   shape=(length,), broadcast_dimensions=())
        zero = lax.broadcast_in_dim(typed_scalar(0, _I32), shape=(length,),
                                    broadcast_dimensions=())
        return out, zero, typed_scalar(0, _I32), length
    drop, sorted_values, sorted_positions = _sort([lax.bitwise_not(keep), values, positions], 0,
                                                  num_keys=2)
    kept = lax.bitwise_not(drop)
    if n > 1:
        differs = _not_equal_sorted(lax.slice(sorted_values, (1,), (n,)),
                                    lax.slice(sorted_values, (0,), (n - 1,)), True)
        first = lax.broadcast_in_dim(True, shape=(1,), broadcast_dimensions=())
        differs = lax.concatenate([first, differs], 0)
        is_new = lax.bitwise_and(kept, differs)
    else:
        is_new = kept
    count = _count(is_new, (0,))
    dest = _first_of_runs(is_new)[1]
    result, first_pos = _scatter_to(dest, sorted_values, n), _scatter_to(dest, sorted_positions, n)
    length = _concrete_count(count, name) if size is None else size
    result, first_pos = _resize_last(result, length), _resize_last(first_pos, length)
    if size is not None and length:
        valid = lax.lt(_iota((length,), 0), count)
        if fill_value is None:
            filler = (lax.broadcast_in_dim(lax.slice(result, (0,), (1,)), (length,), (0,))
                      if default_fill == "first" else
                      lax.broadcast_in_dim(typed_scalar(0, get_aval(result).dtype),
                                           shape=(length,), broadcast_dimensions=()))
        else:
            filler = lax.broadcast_in_dim(
                convert(asarray(fill_value), get_aval(result).dtype), shape=(length,),
                broadcast_dimensions=())
        result = lax.select(valid, result, filler)
    return result, first_pos, count, length


def _flat_pair(name: str, ar1: Any, ar2: Any) -> tuple:
    from ._creation import asarray
    from ._util import promote_dtypes
    check_arraylike(name, ar1, ar2)
    a, b = promote_dtypes(asarray(ar1), asarray(ar2))
    return _ravel(a), _ravel(b)


def union1d(ar1: Any, ar2: Any, *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """The sorted distinct values found in either array. Under ``jit`` pass ``size=``: the
    result is cut or filled (``fill_value``, by default the smallest value) to it.

    Example::

        jnp.union1d(jnp.array([3, 1]), jnp.array([2, 1]))   # [1, 2, 3]
    """
    a, b = _flat_pair("union1d", ar1, ar2)
    both = lax.concatenate([a, b], 0)
    keep = lax.broadcast_in_dim(True, shape=get_aval(both).shape, broadcast_dimensions=())
    return _compact_unique("union1d", both, keep, _static_size(size, "union1d"), fill_value)[0]


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: Optional[int] = None,
              fill_value: Any = None) -> Any:
    """The sorted distinct values of ``ar1`` not in ``ar2``. Under ``jit`` pass ``size=``: the
    result is cut or filled (``fill_value``, by default 0) to it.

    Example::

        jnp.setdiff1d(jnp.array([1, 2, 3, 2]), jnp.array([2]))   # [1, 3]
    """
    a, b = _flat_pair("setdiff1d", ar1, ar2)
    keep = isin(a, b, invert=True)
    return _compact_unique("setdiff1d", a, keep, _static_size(size, "setdiff1d"), fill_value,
                           default_fill="zero")[0]


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: Optional[int] = None,
             fill_value: Any = None) -> Any:
    """The sorted distinct values in exactly one of the arrays. Under ``jit`` pass ``size=``:
    the result is cut or filled (``fill_value``, by default the smallest value) to it.

    Example::

        jnp.setxor1d(jnp.array([1, 2, 3]), jnp.array([2, 4]))   # [1, 3, 4]
    """
    a, b = _flat_pair("setxor1d", ar1, ar2)
    both = lax.concatenate([a, b], 0)
    keep = lax.concatenate([isin(a, b, invert=True), isin(b, a, invert=True)], 0)
    return _compact_unique("setxor1d", both, keep, _static_size(size, "setxor1d"),
                           fill_value)[0]


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: Optional[int] = None, fill_value: Any = None) -> Any:
    """The sorted distinct values found in both arrays, and with ``return_indices`` the index
    of each one's first occurrence in the flattened ``ar1`` and ``ar2``. Under ``jit`` pass
    ``size=``: the result is cut or filled (``fill_value``, by default the smallest value;
    indices with the arrays' lengths) to it.

    Example::

        jnp.intersect1d(jnp.array([3, 1, 2]), jnp.array([1, 3, 7]))   # [1, 3]
    """
    a, b = _flat_pair("intersect1d", ar1, ar2)
    size = _static_size(size, "intersect1d")
    keep = isin(a, b)
    values, first_a, count, length = _compact_unique("intersect1d", a, keep, size, fill_value)
    if not return_indices:
        return values
    n1, n2 = get_aval(a).shape[0], get_aval(b).shape[0]
    if length == 0 or n2 == 0:
        empty = lax.broadcast_in_dim(typed_scalar(0, _I32), shape=(length,),
                                     broadcast_dimensions=())
        return values, empty, empty
    # First occurrence in ar2: the smallest position whose value matches.
    rows = lax.broadcast_in_dim(values, shape=(length, n2), broadcast_dimensions=(0,))
    cols = lax.broadcast_in_dim(b, shape=(length, n2), broadcast_dimensions=(1,))
    pos = lax.broadcast_in_dim(_iota((n2,), 0), shape=(length, n2),
                               broadcast_dimensions=(1,))
    big = lax.broadcast_in_dim(typed_scalar(n2, _I32), shape=(length, n2),
                               broadcast_dimensions=())
    first_b = lax.reduce_min(lax.select(lax.eq(rows, cols), pos, big), axes=(1,))
    if size is not None:
        valid = lax.lt(_iota((length,), 0), count)
        first_a = lax.select(valid, first_a, lax.broadcast_in_dim(
            typed_scalar(n1, _I32), shape=(length,), broadcast_dimensions=()))
        first_b = lax.select(valid, first_b, lax.broadcast_in_dim(
            typed_scalar(n2, _I32), shape=(length,), broadcast_dimensions=()))
    return values, first_a, first_b


# -- partition ------------------------------------------------------------------------------------

def _kth(name: str, a: Any, kth: Any, axis: int) -> tuple:
    a = _array(name, a)
    a, axis = _sort_axis(a, axis, name)
    try:
        kth = operator.index(kth)
    except TypeError:
        raise TypeError(f"jnp.{name}: kth must be a static integer, got {kth!r}"
                        f"{_where(None)}") from None
    n = get_aval(a).shape[axis]
    if not -n <= kth < n:
        raise ValueError(f"jnp.{name}: kth {kth} is out of bounds for an axis of length {n}"
                         f"{_where(None)}")
    return a, axis


def partition(a: Any, kth: int, axis: int = -1) -> Any:
    """``a`` rearranged along ``axis`` so that position ``kth`` holds the value it would have
    sorted, smaller values before it and larger after (here: fully sorted, which satisfies
    that contract).

    Example::

        jnp.partition(jnp.array([3, 4, 2, 1]), 2)[2]   # 3
    """
    a, axis = _kth("partition", a, kth, axis)
    return sort(a, axis=axis)


def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    """The indices that ``partition`` ``a`` along ``axis`` around position ``kth`` (here: a
    stable argsort, which satisfies the contract).

    Example::

        jnp.argpartition(jnp.array([3, 4, 2, 1]), 2)[2]   # 0 (a[0] == 3 is third smallest)
    """
    a, axis = _kth("argpartition", a, kth, axis)
    return argsort(a, axis=axis)


def sort_complex(a: Any) -> Any:
    """``a`` sorted along its last axis by real part, then imaginary part, as a complex array.

    Example::

        jnp.sort_complex(jnp.array([3, 1, 2]))   # [1+0j, 2+0j, 3+0j]
    """
    from ._util import promote_dtypes_inexact
    a = _array("sort_complex", a)
    (a,) = promote_dtypes_inexact(a)
    dtype = get_aval(a).dtype
    if dtype.kind != "c":
        a = convert(a, np.dtype(np.complex128 if dtype.itemsize == 8 else np.complex64))
    return sort(a, axis=-1)
