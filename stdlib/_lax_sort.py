"""Part of ``pyree.lax``: ``sort``, ``sort_key_val`` and ``top_k`` on the ``sort`` primitive."""
from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

from pyree.transpiler.core import primitives as P
from pyree.transpiler.families import sorting
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import TypedScalar, get_aval

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
    if 0 < k <= TOP_K_WITHOUT_SORT and n >= TOP_K_ROUNDS_FROM and aval.dtype.itemsize <= 4:
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
# rounds are written out; more entries, up to TOP_K_WITHOUT_SORT, are found by a radix
# selection (below); more, or short axes, sort.
# Measured here (jit, float32, 2 cores, a test suite running beside), pyree / JAX, before ->
# after: 1k k=8 0.18 ms -> 0.018 ms (JAX 0.016); 100k k=8 22.2 -> 0.148 ms (JAX 0.200);
# 10M k=4 3.24 s -> 42.7 ms (JAX 111.7 ms); 100k k=100 17-27 -> 6.5 ms (JAX 0.26 ms: the
# loop's ~30 us per round is the cost there), and with the radix selection 1.45 ms (JAX 0.37
# ms, a quiet run, 2026-11-27).
TOP_K_ROUNDS = 8
TOP_K_WITHOUT_SORT = 256
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
    """k (at most TOP_K_ROUNDS) rounds over the last axis of ``keys``, written out: the position
    (from ``positions``, ties to the lower one) of the largest key not yet taken, then that key
    marked ``taken``. Returns the k positions along a last axis."""
    from pyree import lax
    import pyree.numpy as jnp
    shape = get_aval(keys).shape
    last = len(shape) - 1
    # (primitives, not jnp: the keys may be int64 whatever enable_x64 says)
    full = lambda value: P.broadcast_in_dim_p.bind(value, shape=shape, broadcast_dimensions=())
    along = lambda reduced: P.broadcast_in_dim_p.bind(reduced, shape=shape,
                                                      broadcast_dimensions=tuple(range(last)))
    unreachable, marks = full(TypedScalar(np.iinfo(np.int32).max, np.int32, False)), full(taken)
    picks = []
    for _ in range(k):
        top = along(P.reduce_max_p.bind(keys, axes=(last,)))
        pick = P.reduce_min_p.bind(P.select_p.bind(P.eq_p.bind(keys, top), positions,
                                                   unreachable), axes=(last,))
        keys = P.select_p.bind(P.eq_p.bind(positions, along(pick)), marks, keys)
        picks.append(lax.expand_dims(pick, (last,)))
    return jnp.concatenate(picks, axis=-1) if k > 1 else picks[0]


# More than TOP_K_ROUNDS of the largest entries are found by a radix selection instead of one
# round each (a round costs a few kernels: the loop of 100 rounds over a 100k axis took 3.7 ms
# against JAX's 0.4 ms): a histogram of the keys' top RADIX_BITS among the entries still in
# play (one comparison with the RADIX digit values and a sum, all entries at once) says in
# which digit the k-th largest key lies; a digit at a time give that key exactly, and how many
# entries equal to it are taken (the lowest indices). The k taken entries are then ordered
# among themselves by comparing all k x k pairs. (8-bit digits, 256 comparisons per entry and
# pass, ran no faster than the rounds.)
RADIX_BITS = 4
RADIX = 1 << RADIX_BITS


def _int32(x: Any) -> Any:
    """``x`` (booleans, to be counted) as int32."""
    return P.convert_element_type_p.bind(x, new_dtype=np.dtype(np.int32), weak_type=False)


def _largest_mask(keys: Any, k: int) -> Any:
    """Boolean mask of the ``k`` largest ``keys`` (signed integers) along the last axis, ties
    to the lower index: exactly ``k`` True per row."""
    from pyree import lax
    aval = get_aval(keys)
    shape, key_t = aval.shape, aval.dtype
    last = len(shape) - 1
    lead = shape[:-1]
    i32 = np.dtype(np.int32)
    scalar = lambda v, t=key_t: TypedScalar(v, t, False)  # noqa: E731
    # With the sign bit flipped, the keys' bits order as unsigned numbers do: their digits,
    # taken from the top, rank them. (Kept in the signed type: 64-bit keys stay 64-bit
    # whatever enable_x64 says, as primitives.)
    u = P.xor_p.bind(keys, scalar(np.iinfo(key_t).min))
    per_row = lambda v: P.broadcast_in_dim_p.bind(v, shape=shape,  # noqa: E731
                                                  broadcast_dimensions=tuple(range(last)))
    fill = lambda v, t, at: P.broadcast_in_dim_p.bind(scalar(v, t), shape=at,  # noqa: E731
                                                      broadcast_dimensions=())
    prefix, taken_bits = fill(0, key_t, lead), fill(0, key_t, lead)
    need = fill(k, i32, lead)
    grid = lead + (RADIX, shape[-1])                                    # (digit value, entry)
    values = P.iota_p.bind(dtype=key_t, shape=grid, dimension=last)
    spread = lambda v: P.broadcast_in_dim_p.bind(  # noqa: E731
        v, shape=grid, broadcast_dimensions=tuple(range(last)) + (last + 1,))
    digit_values = lax.broadcasted_iota(i32, lead + (RADIX,), last)
    for shift in range(8 * key_t.itemsize - RADIX_BITS, -1, -RADIX_BITS):
        digit = P.and_p.bind(P.shift_right_logical_p.bind(u, scalar(shift)), scalar(RADIX - 1))
        in_play = P.eq_p.bind(P.and_p.bind(u, per_row(taken_bits)), per_row(prefix))
        hits = P.and_p.bind(P.eq_p.bind(spread(digit), values), spread(in_play))
        counts = P.reduce_sum_p.bind(_int32(hits), axes=(last + 1,))   # lead + (RADIX,)
        # at_least[v]: entries in play whose digit is v or more; the k-th largest key's digit
        # is the largest v with at_least[v] >= need.
        at_least = lax.cumsum(counts, axis=last, reverse=True)
        row = lambda v: P.broadcast_in_dim_p.bind(  # noqa: E731
            v, shape=lead + (RADIX,), broadcast_dimensions=tuple(range(last)))
        enough = P.ge_p.bind(at_least, row(need))
        chosen = P.sub_p.bind(P.reduce_sum_p.bind(_int32(enough), axes=(last,)),
                              scalar(1, i32))
        above = P.gt_p.bind(digit_values, row(chosen))
        need = P.sub_p.bind(need, P.reduce_sum_p.bind(
            P.select_p.bind(above, counts, fill(0, i32, lead + (RADIX,))), axes=(last,)))
        chosen = P.convert_element_type_p.bind(chosen, new_dtype=key_t, weak_type=False)
        prefix = P.or_p.bind(prefix, P.shift_left_p.bind(chosen, scalar(shift)))
        taken_bits = P.or_p.bind(taken_bits, P.shift_left_p.bind(fill(RADIX - 1, key_t, lead),
                                                                 scalar(shift)))
    # The k-th largest key: take every larger key and the first `need` equal ones.
    kth = per_row(P.xor_p.bind(prefix, scalar(np.iinfo(key_t).min)))
    equal = P.eq_p.bind(keys, kth)
    rank = lax.cumsum(_int32(equal), axis=last)
    first_equal = P.and_p.bind(equal, P.le_p.bind(rank, per_row(need)))
    return P.or_p.bind(P.gt_p.bind(keys, kth), first_equal)


def _true_indices(mask: Any, k: int) -> Any:
    """The indices of the ``k`` True entries of each row of ``mask`` (last axis), ascending."""
    from pyree import lax
    shape = get_aval(mask).shape
    last = len(shape) - 1
    i32 = np.dtype(np.int32)
    before = lax.cumsum(_int32(mask), axis=last)
    # The s-th True entry's index is the number of entries with fewer than s + 1 Trues up to
    # and including them.
    grid = shape[:-1] + (k, shape[-1])
    slots = lax.broadcasted_iota(i32, grid, last)
    below = P.le_p.bind(P.broadcast_in_dim_p.bind(
        before, shape=grid, broadcast_dimensions=tuple(range(last)) + (last + 1,)), slots)
    return P.reduce_sum_p.bind(_int32(below), axes=(last + 1,))


def _in_order(keys: Any, positions: Any) -> Any:
    """``positions`` reordered by ``keys`` (last axis), largest key first; equal keys keep
    their order. All pairs compared: for the few entries top_k returns."""
    from pyree import lax
    shape = get_aval(keys).shape
    last = len(shape) - 1
    k = shape[-1]
    i32 = np.dtype(np.int32)
    pairs = shape + (k,)                                                # (entry, other)
    lead_dims = tuple(range(last))
    mine = P.broadcast_in_dim_p.bind(keys, shape=pairs, broadcast_dimensions=lead_dims + (last,))
    theirs = P.broadcast_in_dim_p.bind(keys, shape=pairs,
                                       broadcast_dimensions=lead_dims + (last + 1,))
    index = lax.broadcasted_iota(i32, shape + (k,), last)
    other = lax.broadcasted_iota(i32, shape + (k,), last + 1)
    ahead = P.or_p.bind(P.gt_p.bind(theirs, mine),
                        P.and_p.bind(P.eq_p.bind(theirs, mine), P.lt_p.bind(other, index)))
    rank = P.reduce_sum_p.bind(_int32(ahead), axes=(last + 1,))
    # out[r] = the position whose rank is r
    at = P.eq_p.bind(P.broadcast_in_dim_p.bind(rank, shape=pairs,
                                               broadcast_dimensions=lead_dims + (last + 1,)),
                     lax.broadcasted_iota(i32, pairs, last))                # (slot, entry)
    zero = P.broadcast_in_dim_p.bind(TypedScalar(0, i32, False), shape=shape + (k,),
                                     broadcast_dimensions=())
    spread = P.broadcast_in_dim_p.bind(positions, shape=shape + (k,),
                                       broadcast_dimensions=tuple(range(last)) + (last + 1,))
    return P.reduce_sum_p.bind(P.select_p.bind(at, spread, zero), axes=(last + 1,))


def _largest(keys: Any, positions: Any, k: int, taken: Any) -> Any:
    """The positions of the ``k`` largest ``keys`` along the last axis, largest first, ties to
    the lower position (``positions`` ascending along the axis)."""
    if k <= TOP_K_ROUNDS:
        return _largest_rounds(keys, positions, k, taken)
    import pyree.numpy as jnp
    chosen = _true_indices(_largest_mask(keys, k), k)
    return _in_order(jnp.take_along_axis(keys, chosen, axis=-1),
                     jnp.take_along_axis(positions, chosen, axis=-1))


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
        if k > TOP_K_ROUNDS:   # ascending block ids: the candidates' positions ascend too
            chosen = _true_indices(_largest_mask(maxima, k), k)                # lead + (k,)
        else:
            chosen = _largest_rounds(maxima, block_ids, k, taken)
        candidates = jnp.take_along_axis(keys, chosen[..., None], axis=-2)      # (k, b)
        offsets = lax.broadcasted_iota(np.int32, lead + (k, b), len(lead) + 1)
        positions = (chosen[..., None] * np.int32(b) + offsets).reshape(lead + (k * b,))
        keys = candidates.reshape(lead + (k * b,))
    else:
        positions = lax.broadcasted_iota(np.int32, lead + (n,), len(lead))
    indices = _largest(keys, positions, k, taken)
    values = jnp.take_along_axis(x, indices, axis=-1)
    if d != last:
        back = [int(i) for i in np.argsort(order)]
        values, indices = lax.transpose(values, back), lax.transpose(indices, back)
    return values, indices
