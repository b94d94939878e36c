"""Sorting: the ``sort`` primitive and all its rules.

``sort[dimension, is_stable, num_keys, descending, total_order] *operands`` sorts operands of
one shape together along ``dimension``, ordered lexicographically by the first ``num_keys``
of them. The order of floats is JAX's: NaNs after everything else, -0.0 equal to 0.0; with
``total_order`` it is IEEE's total order instead (-NaN < -inf < ... < -0.0 < 0.0 < ... < NaN),
which ``top_k`` uses. Complex keys compare by real part, then imaginary part. ``descending``
reverses the order of the keys, not of ties: equal keys always keep their original order.

Lowered to ``stablehlo.sort``. IREE's sort (3.13) ignores ``is_stable``, so the lowering adds
the position along ``dimension`` as a last, hidden key: every sort is stable, and two sorts by
the same keys always apply the same permutation (the JVP and transpose rules rely on that).

Derivatives: the tangents are sorted as payloads by the same keys (a second sort), which is
linear in them; its transpose applies the inverse permutation by sorting
``(permutation, cotangent)`` by the permutation.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import primitives as P
from .ad import Zero, instantiate, is_undefined, jvp_rules, transpose_rules
from .batching import batching_rules, to_front
from .eager import STATIC_SHAPE_WHEN
from .ir import ShapedArray
from .lower import (RuleContext, _compare, _splat, fresh_copy, hlo, i64_array, i64_attr,
                    lowering_rules, mlir, op, scalar_like, shape_of, tensor_type)
from .trace import Primitive, abstract_eval_rules, get_aval

sort_p = Primitive("sort", multiple_results=True)

_I32 = np.dtype(np.int32)


def _sort_abstract_eval(*operands: ShapedArray, dimension: int, is_stable: bool, num_keys: int,
                        descending: bool = False, total_order: bool = False) -> list:
    if not operands:
        raise TypeError("sort needs at least one operand")
    shape = operands[0].shape
    for x in operands[1:]:
        if x.shape != shape:
            shapes = ", ".join(str(o.shape) for o in operands)
            raise TypeError(f"sort operands must all have the same shape, got {shapes}")
    if not shape:
        raise TypeError("sort needs operands of rank 1 or more, got rank-0 operands")
    if not 0 <= dimension < len(shape):
        raise TypeError(f"sort dimension {dimension} is out of range for shape {shape}")
    if not 1 <= num_keys <= len(operands):
        raise TypeError(f"sort num_keys={num_keys} must be between 1 and the number of "
                        f"operands ({len(operands)})")
    for x in operands[:num_keys]:
        if P.kind(x.dtype) not in "biufc":
            raise TypeError(f"sort cannot order keys of dtype {x.dtype}")
    return list(operands)


abstract_eval_rules[sort_p] = _sort_abstract_eval


# -- lowering ---------------------------------------------------------------------------------------

def _scalar_type(dtype: np.dtype):
    return tensor_type(ShapedArray((), dtype))


def _cmp(a, b, direction: str, compare_type: str):
    ir = mlir()
    return op("stablehlo.compare", [_scalar_type(np.dtype(np.bool_))], [a, b], {
        "comparison_direction": ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        "compare_type": ir.Attribute.parse(f"#stablehlo<comparison_type {compare_type}>"),
    }).result


def _bool(name: str, *xs):
    return hlo(name, _scalar_type(np.dtype(np.bool_)), *xs)


def _less(a, b, dtype: np.dtype, total_order: bool):
    """``a < b`` (rank-0 values of ``dtype``) in the sort order."""
    kind = P.kind(dtype)
    if kind == "c":
        part = np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64)
        re_a, re_b = hlo("real", _scalar_type(part), a), hlo("real", _scalar_type(part), b)
        im_a, im_b = hlo("imag", _scalar_type(part), a), hlo("imag", _scalar_type(part), b)
        lt_re, gt_re = _less(re_a, re_b, part, total_order), _less(re_b, re_a, part, total_order)
        eq_re = _bool("not", _bool("or", lt_re, gt_re))
        return _bool("or", lt_re, _bool("and", eq_re, _less(im_a, im_b, part, total_order)))
    if kind == "f":
        if total_order:
            return _cmp(a, b, "LT", "TOTALORDER")
        # NaN after every number: a < b, or b is NaN and a is not.
        a_nan, b_nan = _cmp(a, a, "NE", "FLOAT"), _cmp(b, b, "NE", "FLOAT")
        return _bool("or", _cmp(a, b, "LT", "FLOAT"), _bool("and", _bool("not", a_nan), b_nan))
    return _cmp(a, b, "LT", "SIGNED" if kind == "i" else "UNSIGNED")


def _sort_lowering(ctx: RuleContext, *operands, dimension, is_stable, num_keys, descending=False,
                   total_order=False):
    avals = ctx.avals_in
    if not ctx.dynamic and 0 in avals[0].shape:
        return list(operands)
    if not ctx.dynamic and _use_network(avals[0].shape, dimension):
        return _network_sort(ctx, operands, dimension, num_keys, descending, total_order)
    return _stablehlo_sort(ctx, operands, dimension, num_keys, descending, total_order)


def _stablehlo_sort(ctx: RuleContext, operands, dimension, num_keys, descending, total_order):
    ir = mlir()
    avals = ctx.avals_in
    i64 = ir.IntegerType.get_signless(64)
    position_aval = avals[0].update(dtype=_I32, weak_type=False)
    if ctx.dynamic:
        positions = op("stablehlo.dynamic_iota", [tensor_type(position_aval, True)],
                       [shape_of(operands[0], avals[0].ndim)],
                       {"iota_dimension": ir.IntegerAttr.get(i64, dimension)}).result
    else:
        positions = hlo("iota", tensor_type(position_aval),
                        iota_dimension=ir.IntegerAttr.get(i64, dimension))
    # The same value given twice is sorted once (IREE 3.13 cannot sort one buffer as two
    # operands in place).
    distinct: list = []
    slot_of: list[int] = []
    for x in operands:
        slot = next((j for j, y in enumerate(distinct) if y == x), None)
        if slot is None:
            slot = len(distinct)
            distinct.append(x)
        slot_of.append(slot)
    distinct_avals = [avals[slot_of.index(j)] for j in range(len(distinct))]
    sorted_in = distinct
    if not ctx.dynamic:
        # IREE 3.13 sorts in place and mishandles sorts whose operands are not values of
        # their own: an iota equal to the positions (CSE merges them: argsort's payload), or
        # two sorts of one operand (each sorts the same buffer). Every operand is copied, with
        # a tag unique to this sort (flow.tensor.clone was not enough: CSE merged two clones of
        # one input, and two unique(x, size=...) in one jit gave wrong counts), and an offset
        # unique to this sort keeps its positions apart from other iotas (they only break
        # ties: any increasing sequence serves).
        offset = ctx.lowering.new_tag()
        positions = hlo("add", positions.type, positions,
                        _splat(ctx, offset, position_aval, positions))
        sorted_in = [fresh_copy(x, a, ctx.lowering.new_tag())
                     for x, a in zip(distinct, distinct_avals)]
    all_avals = distinct_avals + [position_aval]
    sort_op = op("stablehlo.sort", [ctx.type(a) for a in all_avals], sorted_in + [positions],
                 {"dimension": ir.IntegerAttr.get(i64, dimension),
                  "is_stable": ir.BoolAttr.get(True)}, regions=1)
    arg_types = []
    for a in all_avals:
        arg_types += [_scalar_type(a.dtype)] * 2
    block = ir.Block.create_at_start(sort_op.regions[0], arg_types)
    args = list(block.arguments)
    with ir.InsertionPoint(block):
        # Ties of all keys: the earlier position first (the hidden last key).
        result = _cmp(args[-2], args[-1], "LT", "SIGNED")
        for i in reversed(range(num_keys)):
            a, b = args[2 * slot_of[i]], args[2 * slot_of[i] + 1]
            if descending:
                a, b = b, a
            dtype = avals[i].dtype
            lt, gt = _less(a, b, dtype, total_order), _less(b, a, dtype, total_order)
            result = _bool("or", lt, _bool("and", _bool("not", gt), result))
        op("stablehlo.return", [], [result])
    results = list(sort_op.results)
    sorted_positions = results.pop()
    # Two IREE 3.13 problems, one cure. (1) An unused result of a sort (here the positions)
    # gets a stack buffer inside the dispatch, which fails to compile when the shape is
    # dynamic or the buffer exceeds 32 KiB. (2) IREE sorts in place, and an operand that is a
    # function input not used afterwards is sorted in the caller's buffer (IREE issue #16168;
    # pyree's Arrays are immutable). A select that never picks the operand (positions are
    # never negative) uses both the positions and the operand after the sort.
    never = _compare(ctx, sorted_positions, _splat(ctx, 0, position_aval, sorted_positions),
                     "LT", position_aval)
    for j, (x, aval) in enumerate(zip(distinct, distinct_avals)):
        if j == 0 or ctx.lowering.aliases_input(x):
            results[j] = hlo("select", ctx.type(aval), never, x, results[j])
    return [results[slot] for slot in slot_of]


lowering_rules[sort_p] = _sort_lowering


# -- the bitonic network ----------------------------------------------------------------------------
#
# IREE 3.13 lowers stablehlo.sort on CPU to a serial quadratic loop (10 000 floats: ~0.5 s).
# Longer static sorts run a bitonic sorting network instead: the sort dimension is moved last
# and padded to a power of two P, and one stablehlo.while runs the log2(P)(log2(P)+1)/2
# compare-exchange stages, each one elementwise pass (one dispatch) over all rows. The network
# orders integer keys only: every sort key becomes a signed integer whose order is the sort
# order (`_integer_keys`), followed by the position, so no two elements tie and the network's
# (unstable) result is the stable sort. The operands themselves then come back by a gather at
# the sorted positions, which keeps their exact bits (-0.0, NaN payloads).

# True: every static sort that fits runs the network (tests set it to reach short lengths).
ALWAYS_NETWORK = False


def _use_network(shape: tuple, dimension: int) -> bool:
    """Whether the network beats stablehlo.sort: a cost model from times measured on a CPU
    (IREE 3.13, jitted f32): stablehlo.sort takes ~6 ns per rows * length**2 (rows one after
    another), the network ~10 us per stage (~0.4 ms each for one row of 256; one row of 128:
    0.11 ms against 0.30 ms; 64 rows of 32: 0.37 ms against 0.20 ms)."""
    length = shape[dimension]
    rows = int(np.prod(shape)) // length
    log_padded = max(length - 1, 0).bit_length()
    if rows << log_padded >= 2 ** 31:  # positions must fit an int32
        return False
    stages = log_padded * (log_padded + 1) // 2
    return ALWAYS_NETWORK or 6e-6 * rows * length * length > 0.03 + 0.0105 * stages


def _t(shape, dtype) -> Any:
    return tensor_type(ShapedArray(tuple(shape), np.dtype(dtype)))


def _full(value, shape, dtype) -> Any:
    return hlo("broadcast_in_dim", _t(shape, dtype), scalar_like(value, np.dtype(dtype)),
               broadcast_dimensions=i64_array([]))


def _compare_int(a, b, direction: str, shape) -> Any:
    ir = mlir()
    return op("stablehlo.compare", [_t(shape, np.bool_)], [a, b], {
        "comparison_direction": ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        "compare_type": ir.Attribute.parse("#stablehlo<comparison_type SIGNED>"),
    }).result


def _compare_float(a, b, direction: str, shape) -> Any:
    ir = mlir()
    return op("stablehlo.compare", [_t(shape, np.bool_)], [a, b], {
        "comparison_direction": ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        "compare_type": ir.Attribute.parse("#stablehlo<comparison_type FLOAT>"),
    }).result


_INT_OF_WIDTH = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def _float_key(x, dtype: np.dtype, shape, total_order: bool) -> tuple:
    """A float tensor as signed integers in the same order (JAX's or IEEE's total order)."""
    int_dtype = np.dtype(_INT_OF_WIDTH[dtype.itemsize])
    if not total_order:
        # One NaN (the positive quiet one) and one zero: all NaNs tie, -0.0 ties 0.0.
        x = hlo("select", _t(shape, dtype), _compare_float(x, x, "NE", shape),
                _full(np.nan, shape, dtype), x)
        zero = _full(0, shape, dtype)
        x = hlo("select", _t(shape, dtype), _compare_float(x, zero, "EQ", shape), zero, x)
    bits = hlo("bitcast_convert", _t(shape, int_dtype), x)
    # Negative floats order backwards as integers: flipping all but the sign bit mends that
    # (and puts -0.0 just below 0.0, -NaN below -inf).
    flipped = hlo("xor", _t(shape, int_dtype), bits,
                  _full(np.iinfo(int_dtype).max, shape, int_dtype))
    negative = _compare_int(bits, _full(0, shape, int_dtype), "LT", shape)
    return hlo("select", _t(shape, int_dtype), negative, flipped, bits), int_dtype


def _integer_keys(x, dtype: np.dtype, shape, total_order: bool, descending: bool) -> list:
    """``(value, int dtype)`` pairs ordered lexicographically as the sort orders ``x``."""
    kind = P.kind(dtype)
    if kind == "c":
        part = np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64)
        keys = [_float_key(hlo(name, _t(shape, part), x), part, shape, total_order)
                for name in ("real", "imag")]
    elif kind == "f":
        keys = [_float_key(x, dtype, shape, total_order)]
    elif kind == "b":
        keys = [(hlo("convert", _t(shape, np.int8), x), np.dtype(np.int8))]
    elif kind == "u":
        int_dtype = np.dtype(_INT_OF_WIDTH[dtype.itemsize])
        bits = hlo("bitcast_convert", _t(shape, int_dtype), x)
        # Flipping the sign bit maps unsigned order onto signed order.
        keys = [(hlo("xor", _t(shape, int_dtype), bits,
                     _full(np.iinfo(int_dtype).min, shape, int_dtype)), int_dtype)]
    else:
        keys = [(x, dtype)]
    if descending:  # ~v = -v - 1 reverses the order of every integer type exactly
        keys = [(hlo("not", _t(shape, d), v), d) for v, d in keys]
    return keys


def _lex_less(a: list, b: list, shape) -> Any:
    """a < b lexicographically (lists of signed integer tensors)."""
    less = _compare_int(a[-1], b[-1], "LT", shape)
    bool_t = _t(shape, np.bool_)
    for x, y in zip(reversed(a[:-1]), reversed(b[:-1])):
        tie = hlo("and", bool_t, _compare_int(x, y, "EQ", shape), less)
        less = hlo("or", bool_t, _compare_int(x, y, "LT", shape), tie)
    return less


def _network_sort(ctx: RuleContext, operands, dimension, num_keys, descending, total_order):
    ir = mlir()
    avals = ctx.avals_in
    shape = avals[0].shape
    rank = len(shape)
    length = shape[dimension]
    rows = int(np.prod(shape)) // length
    padded = 1 << (length - 1).bit_length()
    to_last = [d for d in range(rank) if d != dimension] + [dimension]
    moved_shape = tuple(shape[d] for d in to_last)
    flat = (rows, length)
    table = (rows, padded)

    def as_rows(x, dtype):
        if dimension != rank - 1:
            x = hlo("transpose", _t(moved_shape, dtype), x, permutation=i64_array(to_last))
        return hlo("reshape", _t(flat, dtype), x)

    # The sort keys as integers, then the position of each element in the (rows, length)
    # layout: a tie-break, and the index the operands are gathered at in the end.
    components: list = []
    for x, aval in zip(operands[:num_keys], avals[:num_keys]):
        components += _integer_keys(as_rows(x, aval.dtype), aval.dtype, flat, total_order,
                                    descending)
    i64 = ir.IntegerType.get_signless(64)
    positions = hlo("iota", _t(flat, np.int32), iota_dimension=ir.IntegerAttr.get(i64, 0))
    positions = hlo("add", _t(flat, np.int32),
                    hlo("multiply", _t(flat, np.int32), positions, _full(length, flat, np.int32)),
                    hlo("iota", _t(flat, np.int32), iota_dimension=ir.IntegerAttr.get(i64, 1)))
    packed = len(components) == 1 and components[0][1].itemsize <= 4
    if packed:
        # One narrow key: (key << 32) + position is a single int64 in the same order.
        key, _ = components[0]
        wide = hlo("shift_left", _t(flat, np.int64), hlo("convert", _t(flat, np.int64), key),
                   _full(32, flat, np.int64))
        components = [(hlo("add", _t(flat, np.int64), wide,
                           hlo("convert", _t(flat, np.int64), positions)), np.dtype(np.int64))]
    else:
        components.append((positions, np.dtype(np.int32)))
    # Padding sorts after every element: the largest keys (and, unpacked, larger positions).
    pad_config = dict(edge_padding_low=i64_array([0, 0]),
                      edge_padding_high=i64_array([0, padded - length]),
                      interior_padding=i64_array([0, 0]))
    values = []
    for v, d in components:
        if padded != length:
            v = hlo("pad", _t(table, d), v, scalar_like(np.iinfo(d).max, d), **pad_config)
        values.append(v)
    dtypes = [d for _, d in components]
    scalar_i32 = _t((), np.int32)
    types = [scalar_i32, scalar_i32] + [_t(table, d) for d in dtypes]
    inits = [scalar_like(2, np.int32), scalar_like(1, np.int32)] + values
    loop = op("stablehlo.while", types, inits, regions=2)
    cond_block = ir.Block.create_at_start(loop.regions[0], types)
    with ir.InsertionPoint(cond_block):
        k = cond_block.arguments[0]
        op("stablehlo.return", [], [_compare_int(k, scalar_like(padded, np.int32), "LE", ())])
    body_block = ir.Block.create_at_start(loop.regions[1], types)
    with ir.InsertionPoint(body_block):
        k, j, *current = list(body_block.arguments)
        index = hlo("iota", _t(table, np.int32), iota_dimension=ir.IntegerAttr.get(i64, 1))
        zero = _full(0, table, np.int32)
        bcast = lambda s: hlo("broadcast_in_dim", _t(table, np.int32), s,
                              broadcast_dimensions=i64_array([]))
        lower = _compare_int(hlo("and", _t(table, np.int32), index, bcast(j)), zero, "EQ", table)
        ascending = _compare_int(hlo("and", _t(table, np.int32), index, bcast(k)), zero, "EQ",
                                 table)
        # The partner of i is i ^ j: x[i + j] for the lower element of a pair, else x[i - j],
        # both read as slices of (x, x) (no gather).
        row0 = scalar_like(0, np.int32)
        down_start = hlo("subtract", scalar_i32, scalar_like(padded, np.int32), j)
        partners = []
        for v, d in zip(current, dtypes):
            twice = op("stablehlo.concatenate", [_t((rows, 2 * padded), d)], [v, v],
                       {"dimension": i64_attr(1)}).result
            up = op("stablehlo.dynamic_slice", [_t(table, d)], [twice, row0, j],
                    {"slice_sizes": i64_array(table)}).result
            down = op("stablehlo.dynamic_slice", [_t(table, d)], [twice, row0, down_start],
                      {"slice_sizes": i64_array(table)}).result
            partners.append(hlo("select", _t(table, d), lower, up, down))
        bool_t = _t(table, np.bool_)
        partner_less = _lex_less(partners, current, table)
        keep_smaller = hlo("not", bool_t, hlo("xor", bool_t, lower, ascending))
        take = hlo("not", bool_t, hlo("xor", bool_t, partner_less, keep_smaller))
        updated = [hlo("select", _t(table, d), take, p, v)
                   for p, v, d in zip(partners, current, dtypes)]
        half = hlo("shift_right_logical", scalar_i32, j, scalar_like(1, np.int32))
        stage_done = _compare_int(half, scalar_like(0, np.int32), "EQ", ())
        next_k = hlo("select", scalar_i32, stage_done,
                     hlo("shift_left", scalar_i32, k, scalar_like(1, np.int32)), k)
        next_j = hlo("select", scalar_i32, stage_done, k, half)
        op("stablehlo.return", [], [next_k, next_j] + updated)
    last = list(loop.results)[-1]
    sorted_positions = hlo("slice", _t(flat, dtypes[-1]), last,
                           start_indices=i64_array([0, 0]), limit_indices=i64_array(flat),
                           strides=i64_array([1, 1]))
    if packed:
        sorted_positions = hlo("convert", _t(flat, np.int32), sorted_positions)
    numbers = ir.Attribute.parse("#stablehlo.gather<collapsed_slice_dims = [0], "
                                 "start_index_map = [0], index_vector_dim = 2>")
    inverse = [to_last.index(d) for d in range(rank)]
    results = []
    for x, aval in zip(operands, avals):
        line = hlo("reshape", _t((rows * length,), aval.dtype), as_rows(x, aval.dtype))
        gathered = op("stablehlo.gather", [_t(flat, aval.dtype)], [line, sorted_positions],
                      {"dimension_numbers": numbers, "slice_sizes": i64_array([1]),
                       "indices_are_sorted": ir.BoolAttr.get(False)}).result
        out = hlo("reshape", _t(moved_shape, aval.dtype), gathered)
        if dimension != rank - 1:
            out = hlo("transpose", ctx.type(aval), out, permutation=i64_array(inverse))
        results.append(out)
    return results


# -- differentiation ------------------------------------------------------------------------------

def _positions(like: Any, dimension: int) -> Any:
    shape = get_aval(like).shape
    return P.iota_p.bind(dtype=_I32, shape=shape, dimension=dimension)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys, descending=False,
              total_order=False):
    params = dict(dimension=dimension, is_stable=is_stable, num_keys=num_keys,
                  descending=descending, total_order=total_order)
    outs = sort(primals, **params)
    moving = [i for i, t in enumerate(tangents) if not isinstance(t, Zero)]
    out_tangents: list = [Zero(get_aval(o).update(weak_type=False)) for o in outs]
    if moving:
        # The tangents ride as payloads of a sort by the same keys: it is linear in them.
        sorted_tangents = sort(list(primals[:num_keys]) +
                               [instantiate(tangents[i]) for i in moving], **params)
        for i, t in zip(moving, sorted_tangents[num_keys:]):
            out_tangents[i] = t
    return outs, out_tangents


def _sort_transpose(cts, *operands, dimension, is_stable, num_keys, descending=False,
                    total_order=False):
    keys = operands[:num_keys]
    if any(is_undefined(k) for k in keys):
        raise NotImplementedError("sort is not linear in its keys: cannot transpose it")
    result: list = [None] * len(operands)
    flowing = [i for i in range(num_keys, len(operands))
               if is_undefined(operands[i]) and not isinstance(cts[i], Zero)]
    if not flowing:
        return result
    # permutation[j]: the input position of output j; sorting by it puts each cotangent back.
    permutation = sort(list(keys) + [_positions(keys[0], dimension)], dimension, True,
                       num_keys, descending, total_order)[-1]
    restored = sort([permutation] + [cts[i] for i in flowing], dimension)
    for i, ct in zip(flowing, restored[1:]):
        result[i] = ct
    return result


jvp_rules[sort_p] = _sort_jvp
transpose_rules[sort_p] = _sort_transpose


# -- batching ---------------------------------------------------------------------------------------

def _sort_batching(axis, values, dims, *, dimension, **params):
    moved = [to_front(x, d, axis.size) for x, d in zip(values, dims)]
    outs = sort(moved, dimension + 1, **params)
    return outs, [0] * len(outs)


batching_rules[sort_p] = _sort_batching


def sort(operands: Sequence[Any], dimension: int, is_stable: bool = True, num_keys: int = 1,
         descending: bool = False, total_order: bool = False) -> list:
    """Bind ``sort`` (``dimension`` non-negative); arrays of no elements come back as they
    are (IREE cannot compile an eager sort of them). Example: ``sort([keys, values], 0)``"""
    shape = get_aval(operands[0]).shape
    if shape and 0 in shape and all(get_aval(x).shape == shape for x in operands):
        return list(operands)
    return sort_p.bind(*operands, dimension=int(dimension), is_stable=bool(is_stable),
                       num_keys=int(num_keys), descending=bool(descending),
                       total_order=bool(total_order))


# Eagerly, sorts the network does faster are compiled per shape (a kernel of unknown shape can
# only be stablehlo.sort, quadratic in IREE 3.13: 0.5 s for 10 000 elements).
STATIC_SHAPE_WHEN[sort_p] = lambda avals, params: _use_network(avals[0].shape,
                                                               params["dimension"])
