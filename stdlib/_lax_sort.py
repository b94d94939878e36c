"""Part of ``pyree.lax``: ``sort``, ``sort_key_val`` and ``top_k`` on the ``sort`` primitive."""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from pyree.transpiler import primitives as P
from pyree.transpiler import sorting
from pyree.transpiler.source import where
from pyree.transpiler.trace import TypedScalar, get_aval

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
    if 0 < k <= TOP_K_LOOPED_ROUNDS and n >= TOP_K_ROUNDS_FROM and aval.dtype.itemsize <= 4:
        return _top_k_by_rounds(operand, k, d)
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


# A few of the largest entries of a long axis, without sorting it (a rank sort's O(n^2)
# comparisons, a radix sort's ~16 passes with scatters): the axis in blocks of b entries, each
# block's largest key (one pass over the data); the k blocks of largest maxima hold the k
# largest entries (with ties, the lower block first: each entry outside them has k entries
# ahead of it, those blocks' maxima); then k rounds over those k * b candidates, each taking
# the largest key (the lower position among equal ones) and masking it. Up to TOP_K_ROUNDS
# rounds are written out, up to TOP_K_LOOPED_ROUNDS run in a loop; more, or short axes, sort.
# Measured here (jit, float32, 2 cores, a test suite running beside), pyree / JAX, before ->
# after: 1k k=8 0.18 ms -> 0.018 ms (JAX 0.016); 100k k=8 22.2 -> 0.148 ms (JAX 0.200);
# 10M k=4 3.24 s -> 42.7 ms (JAX 111.7 ms); 100k k=100 17-27 -> 6.5 ms (JAX 0.26 ms: the
# loop's ~30 us per round is the cost there).
TOP_K_ROUNDS = 8
TOP_K_LOOPED_ROUNDS = 256
TOP_K_ROUNDS_FROM = 64
TOP_K_BLOCKS_FROM = 2048


def _total_order_keys(x: Any, dtype: np.dtype) -> tuple[Any, Any]:
    """Signed integer keys ordered as ``x`` is in IEEE's total order (-NaN < -inf < ... <
    -0.0 < 0.0 < ... < inf < NaN; integers and booleans as they are), all above the key type's
    minimum (the mark of a taken entry), and that minimum."""
    from pyree import lax
    if P.kind(dtype) == "f":
        bits_t = np.dtype(f"int{8 * dtype.itemsize}")
        bits = lax.bitcast_convert_type(x, bits_t)
        # Negative floats: flip the magnitude bits, so that larger magnitudes order lower.
        sign = P.shift_right_arithmetic_p.bind(
            bits, TypedScalar(8 * dtype.itemsize - 1, bits_t, False))
        key = P.xor_p.bind(bits, P.and_p.bind(sign, TypedScalar(np.iinfo(bits_t).max, bits_t,
                                                                False)))
        key_t = np.dtype(np.int32)
        key = P.convert_element_type_p.bind(key, new_dtype=key_t, weak_type=False)
        # (only the -NaN of all-ones bits maps to the minimum: it joins the next -NaN)
        key = P.max_p.bind(key, TypedScalar(np.iinfo(key_t).min + 1, key_t, False))
    else:
        key_t = np.dtype(np.int64) if dtype.itemsize == 4 else np.dtype(np.int32)
        key = P.convert_element_type_p.bind(x, new_dtype=key_t, weak_type=False)
    return key, TypedScalar(np.iinfo(key_t).min, key_t, False)


def _largest_rounds(keys: Any, positions: Any, k: int, taken: Any) -> Any:
    """k rounds over the last axis of ``keys``: the position (from ``positions``, ties to the
    lower one) of the largest key not yet taken, then that key marked ``taken``. Returns the k
    positions along a last axis. Up to TOP_K_ROUNDS rounds are written out, more run in a loop."""
    from pyree import lax
    import pyree.numpy as jnp
    shape = get_aval(keys).shape
    last = len(shape) - 1
    # (primitives, not jnp: the keys may be int64 whatever enable_x64 says)
    full = lambda value: P.broadcast_in_dim_p.bind(value, shape=shape, broadcast_dimensions=())
    along = lambda reduced: P.broadcast_in_dim_p.bind(reduced, shape=shape,
                                                      broadcast_dimensions=tuple(range(last)))
    unreachable, marks = full(TypedScalar(np.iinfo(np.int32).max, np.int32, False)), full(taken)

    def round_(keys):
        top = along(P.reduce_max_p.bind(keys, axes=(last,)))
        pick = P.reduce_min_p.bind(P.select_p.bind(P.eq_p.bind(keys, top), positions,
                                                   unreachable), axes=(last,))
        keys = P.select_p.bind(P.eq_p.bind(positions, along(pick)), marks, keys)
        return lax.expand_dims(pick, (last,)), keys

    if k <= TOP_K_ROUNDS:
        picks = []
        for _ in range(k):
            pick, keys = round_(keys)
            picks.append(pick)
        return jnp.concatenate(picks, axis=-1) if k > 1 else picks[0]

    def step(r, carry):
        keys, picks = carry
        pick, keys = round_(keys)
        return keys, lax.dynamic_update_slice_in_dim(picks, pick, r, axis=picks.ndim - 1)

    picks = jnp.zeros(shape[:-1] + (k,), np.int32)
    return lax.fori_loop(0, k, step, (keys, picks))[1]


def _top_k_by_rounds(operand: Any, k: int, d: int) -> tuple[Any, Any]:
    from pyree import lax
    import pyree.numpy as jnp
    aval = get_aval(operand)
    last = aval.ndim - 1
    order = [i for i in range(aval.ndim) if i != d] + [d]
    x = operand if d == last else lax.transpose(operand, order)
    lead, n = get_aval(x).shape[:-1], get_aval(x).shape[-1]
    keys, taken = _total_order_keys(x, aval.dtype)
    # Blocks of b ~ sqrt(n / k): the two rounds' shares, n / b and k * b, about equal.
    b = max(16, int(np.sqrt(n / k)))
    blocks = -(-n // b)
    if n >= TOP_K_BLOCKS_FROM and blocks >= k and k * b < n:
        if blocks * b != n:
            padding = P.broadcast_in_dim_p.bind(taken, shape=lead + (blocks * b - n,),
                                                broadcast_dimensions=())
            keys = P.concatenate_p.bind(keys, padding, dimension=len(lead))
        keys = keys.reshape(lead + (blocks, b))
        block_ids = lax.broadcasted_iota(np.int32, lead + (blocks,), len(lead))
        maxima = P.reduce_max_p.bind(keys, axes=(len(lead) + 1,))
        chosen = _largest_rounds(maxima, block_ids, k, taken)                   # lead + (k,)
        candidates = jnp.take_along_axis(keys, chosen[..., None], axis=-2)      # (k, b)
        offsets = lax.broadcasted_iota(np.int32, lead + (k, b), len(lead) + 1)
        positions = (chosen[..., None] * np.int32(b) + offsets).reshape(lead + (k * b,))
        keys = candidates.reshape(lead + (k * b,))
    else:
        positions = lax.broadcasted_iota(np.int32, lead + (n,), len(lead))
    indices = _largest_rounds(keys, positions, k, taken)
    values = jnp.take_along_axis(x, indices, axis=-1)
    if d != last:
        back = [int(i) for i in np.argsort(order)]
        values, indices = lax.transpose(values, back), lax.transpose(indices, back)
    return values, indices
