"""Sorting: the ``sort`` primitive and all its rules.

``sort[dimension, is_stable, num_keys, descending, total_order] *operands`` sorts operands of
one shape together along ``dimension``, ordered lexicographically by the first ``num_keys``
of them. The order of floats is JAX's: NaNs after everything else, -0.0 equal to 0.0; with
``total_order`` it is IEEE's total order instead (-NaN < -inf < ... < -0.0 < 0.0 < ... < NaN),
which ``top_k`` uses. Complex keys compare by real part, then imaginary part. ``descending``
reverses the order of the keys, not of ties: equal keys always keep their original order.

Static shapes lower to a rank sort (short rows) or an LSD radix sort (long rows), built here
from elementwise ops, reductions and scatters (see "rank sort and radix sort" below); shapes
only known when the program runs (eager kernels shared by every shape) to ``stablehlo.sort``.
IREE's sort (3.13) ignores ``is_stable``, so that lowering adds the position along
``dimension`` as a last, hidden key. Every sort is stable, and two sorts by the same keys
always apply the same permutation (the JVP and transpose rules rely on that).

Derivatives: the tangents are sorted as payloads by the same keys (a second sort), which is
linear in them; its transpose applies the inverse permutation by sorting
``(permutation, cotangent)`` by the permutation.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import Primitive, abstract_eval_rules, get_aval
from ..interpreters.ad import Zero, instantiate, is_undefined, jvp_rules, transpose_rules
from ..interpreters.batching import batching_rules, to_front
from ..backend.eager import STATIC_SHAPE_WHEN
from ..backend.lower import (BF16_KEPT_PRIMITIVES, RuleContext, _compare, _splat, fresh_copy, hlo,
                             i64_array, kept_past_loop, own_buffers, lowering_rules, mlir, op,
                             scalar_like, shape_of, tensor_type)

sort_p = Primitive("sort", multiple_results=True)
BF16_KEPT_PRIMITIVES.add(sort_p)   # (bf16 keys compare as they are)

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
    if any(_sorted_as_parts(ctx, a) for a in avals):
        return _sort_complex_as_parts(ctx, operands, dimension, is_stable, num_keys,
                                      descending, total_order)
    if not ctx.dynamic and sum(a.dtype.itemsize == 8 for a in avals[:num_keys]) > 1:
        # IREE 3.13 fails to compile the radix and rank sorts of two 64-bit keys ("'stream.yield'
        # op used resource not listed in explicit captures"; one 64-bit key, or one with 32-bit
        # ones, compiles). The sorts are stable: sorting by each key in turn, the last key
        # first, orders by all of them.
        values = list(operands)
        for k in reversed(range(num_keys)):
            order = [k] + [i for i in range(len(values)) if i != k]
            sub = RuleContext(ctx.lowering, [avals[i] for i in order],
                              [avals[i] for i in order], ctx.dyn)
            moved = _sort_lowering(sub, *[values[i] for i in order], dimension=dimension,
                                   is_stable=True, num_keys=1, descending=descending,
                                   total_order=total_order)
            for position, i in enumerate(order):
                values[i] = moved[position]
        return values
    if not ctx.dynamic and _fits(avals[0].shape, dimension):
        return _custom_sort(ctx, operands, dimension, num_keys, descending, total_order)
    return _stablehlo_sort(ctx, operands, dimension, num_keys, descending, total_order)


def _sorted_as_parts(ctx: RuleContext, aval) -> bool:
    """Whether a sort operand is sorted as its real and imaginary parts (see
    _sort_complex_as_parts): complex128 everywhere, complex64 on GPUs."""
    return aval.dtype == np.complex128 or (aval.dtype == np.complex64
                                           and ctx.lowering.platform != "cpu")


def _sort_complex_as_parts(ctx: RuleContext, operands, dimension, is_stable, num_keys,
                           descending, total_order):
    """Complex operands sorted as their real and imaginary parts: a complex key is two keys
    (real, then imaginary: the lexicographic order of complex numbers). IREE 3.13 fails to compile
    complex128 fills and loop carries ("'stream.async.splat' op operand #0 must be ...
    integer, but got 'i128'", "'stream.yield' op used resource not listed in explicit
    captures"), and its compiler died (SIGSEGV) on the radix sort of complex64 keys for CUDA
    (lax.sort_key_val of 1000 complex64 keys; H200 suite run, reproduced here)."""
    parts, part_avals, keys = [], [], 0
    for i, (x, aval) in enumerate(zip(operands, ctx.avals_in)):
        part = aval.update(dtype=np.float64 if aval.dtype == np.complex128 else np.float32)
        pieces = ([(hlo(f, ctx.type(part), x), part) for f in ("real", "imag")]
                  if _sorted_as_parts(ctx, aval) else [(x, aval)])
        parts += [p for p, _ in pieces]
        part_avals += [a for _, a in pieces]
        keys += len(pieces) if i < num_keys else 0
    sub = RuleContext(ctx.lowering, part_avals, part_avals, ctx.dyn)
    sorted_parts = iter(_sort_lowering(sub, *parts, dimension=dimension, is_stable=is_stable,
                                       num_keys=keys, descending=descending,
                                       total_order=total_order))
    out = []
    for aval in ctx.avals_in:
        if _sorted_as_parts(ctx, aval):
            out.append(hlo("complex", ctx.type(aval), next(sorted_parts), next(sorted_parts)))
        else:
            out.append(next(sorted_parts))
    return out


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


# -- rank sort and radix sort ----------------------------------------------------------------------
#
# What IREE 3.13 runs for stablehlo.sort on the CPU (dispatches dumped with
# --iree-hal-dump-executable-sources-to): one iree_linalg_ext.sort per sort, lowered to its
# generic scalar loop nest, a quadratic exchange sort of each row (rows spread over workgroups):
# ~6 ns per rows * length**2, 10 000 floats ~0.5 s, 1000 ~6 ms. It is only used where the shape
# is unknown (eager kernels shared by every shape, see STATIC_SHAPE_WHEN below).
#
# Static sorts run one of two sorts built here from elementwise ops, reductions and scatters,
# which IREE vectorizes and spreads over threads. Both are stable by construction.
# - Rows up to RANK_SORT_MAX: a rank sort. Element i goes to the number of elements before it
#   in the order (length**2 comparisons, one vectorized reduction), one scatter an operand.
#   Rows padded to a multiple of 32: one row of 1000 floats 0.54 ms, padded to 1024 0.16-0.23 ms.
# - Longer rows: an LSD radix sort of the keys' order-preserving integer words, 4 bits a pass
#   (8 passes for 32-bit keys, one stablehlo.while per word). A pass: the digit of each element;
#   its rank among the same digits in its tile of 32 (32 int8 comparisons); each tile's digit
#   histogram (int8 counts); exclusive prefix sums over (digit, tile) (_inclusive_cumsum); a
#   gather of each element's start; one scatter an operand (distinct indices). Every operand is
#   moved as it is (exact bits: -0.0, NaN payloads), no positions, no final gather.
# Measured (jit, f32, 2 busy cores: load 3; JAX 0.10.2 in the same run):
#   jnp.sort 100k 10.3 ms (JAX 27.9), 1M 143 ms (JAX 386); the bitonic network this replaced
#   (log2(P)(log2(P)+1)/2 elementwise passes in a while loop): 100k 35 ms, 1k 1.4 ms.
#   Per pass at 100k: rank 0.43 ms, histogram 0.18 ms, prefix sums ~0.6 ms, scatter 0.18 ms.
#   Counting in int32 instead of int8: rank 0.84 ms; a one-hot select-sum instead of the gather
#   of starts (and the one-hot shared with the histogram): the histogram 15 ms (IREE wrote the
#   shared iota out).

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



RADIX_BITS = 4           # bits of the key sorted by one radix pass (16 buckets)
TILE = 32                # elements a radix pass ranks together (its histograms are per tile)
RANK_SORT_MAX = 1024     # rows up to this length sort by counting (length**2 comparisons)
_INT32_MIN = -2 ** 31


def _i32t(shape) -> Any:
    return _t(shape, np.int32)


def _bcast(x, shape, dims, dtype=np.int32) -> Any:
    return hlo("broadcast_in_dim", _t(shape, dtype), x, broadcast_dimensions=i64_array(dims))


def _iota(shape, dimension: int) -> Any:
    ir = mlir()
    return hlo("iota", _i32t(shape),
               iota_dimension=ir.IntegerAttr.get(ir.IntegerType.get_signless(64), dimension))


def _key_words(x, dtype: np.dtype, shape, total_order: bool, descending: bool) -> list:
    """``x`` as int32 words whose signed order, most significant word first, is the sort
    order: ``[(word, significant bits)]``."""
    words = []
    for v, d in _integer_keys(x, dtype, shape, total_order, descending):
        if d.itemsize == 8:
            high = hlo("convert", _i32t(shape),
                       hlo("shift_right_arithmetic", _t(shape, d), v, _full(32, shape, d)))
            low = hlo("convert", _i32t(shape), v)  # the low 32 bits, unsigned: made signed
            words += [(high, 32), (hlo("xor", _i32t(shape), low, _full(_INT32_MIN, shape, _I32)),
                                   32)]
        else:
            words.append((v if d.itemsize == 4 else hlo("convert", _i32t(shape), v),
                          8 * d.itemsize))
    return words


def _unsigned(word, bits: int, shape) -> Any:
    """A signed word of ``bits`` as the non-negative (or, 32 bits, unsigned) int32 in the same
    order, whose digits the radix passes take."""
    if bits == 32:
        return hlo("xor", _i32t(shape), word, _full(_INT32_MIN, shape, _I32))
    return hlo("add", _i32t(shape), word, _full(2 ** (bits - 1), shape, _I32))


def _last_value(dtype: np.dtype, descending: bool, total_order: bool) -> Any:
    """A rank-0 value of ``dtype`` that no key of that dtype sorts after (padding)."""
    kind = P.kind(dtype)
    if kind == "c":
        part = np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64)
        last = _last_value(part, descending, total_order)
        return hlo("complex", _scalar_type(dtype), last, last)
    if kind == "f":
        if total_order:  # the NaN of largest payload, positive (or negative: descending)
            int_dtype = np.dtype(_INT_OF_WIDTH[dtype.itemsize])
            bits = -1 if descending else np.iinfo(int_dtype).max
            return hlo("bitcast_convert", _scalar_type(dtype), scalar_like(bits, int_dtype))
        return scalar_like(-np.inf if descending else np.nan, dtype)
    if kind == "b":
        return scalar_like(not descending, dtype)
    info = np.iinfo(dtype)
    return scalar_like(info.min if descending else info.max, dtype)


def _scatter_flat(init, dest, updates, dtype, n: int) -> Any:
    """``init`` (rank 1, ``n`` elements) with ``updates[i]`` written at ``dest[i]`` (distinct)."""
    ir = mlir()
    indices = hlo("reshape", _t((n, 1), np.int32), dest)
    # Barriers keep computed indices and updates out of the scatter's dispatch (IREE 3.13
    # keeps fused operands on its 32 KiB stack: see gather_scatter._scatter_op).
    indices = op("stablehlo.optimization_barrier", [indices.type], [indices]).result
    updates = op("stablehlo.optimization_barrier", [updates.type], [updates]).result
    attr = ir.Attribute.parse("#stablehlo.scatter<inserted_window_dims = [0], "
                              "scatter_dims_to_operand_dims = [0], index_vector_dim = 1>")
    scatter = op("stablehlo.scatter", [_t((n,), dtype)], [init, indices, updates],
                 {"scatter_dimension_numbers": attr, "indices_are_sorted": ir.BoolAttr.get(False),
                  "unique_indices": ir.BoolAttr.get(True)}, regions=1)
    scalar = _scalar_type(dtype)
    block = ir.Block.create_at_start(scatter.regions[0], [scalar, scalar])
    with ir.InsertionPoint(block):
        op("stablehlo.return", [], [block.arguments[1]])
    return scatter.result


def _permute(ctx: RuleContext, values: list, dtypes: list, dest, n: int) -> list:
    """Each of ``values`` (rank 1, ``n`` elements) with element i moved to ``dest[i]``."""
    out = []
    for v, d in zip(values, dtypes):
        if np.dtype(d) == np.complex128:
            # IREE 3.13 fills a complex128 tensor with a 128-bit integer splat it cannot
            # compile ("'stream.async.splat' op operand #0 must be ... integer, but got
            # 'i128'"): the parts move as float64.
            parts = [hlo(f, _t((n,), np.float64), v) for f in ("real", "imag")]
            re, im = _permute(ctx, parts, [np.float64, np.float64], dest, n)
            out.append(hlo("complex", _t((n,), d), re, im))
            continue
        # A fresh tagged init per scatter: IREE 3.13 merges equal splats, and two scatters
        # into one merged init then share (and overwrite) one buffer.
        init = fresh_copy(_full(0, (n,), d), ShapedArray((n,), np.dtype(d)),
                          ctx.lowering.new_tag())
        out.append(_scatter_flat(init, dest, v, d, n))
    return out


def _inclusive_cumsum(x, rows: int, m: int) -> Any:
    """Inclusive prefix sums of ``x`` (int32, ``(rows, m)``) along its rows: blocks of 32
    summed by a triangular reduction (32 additions an element, vectorized), the blocks'
    totals by the same recursively."""
    if m <= 32:
        shape = (rows, m, m)
        upto = _compare_int(_iota(shape, 2), _iota(shape, 1), "LE", shape)
        terms = hlo("select", _i32t(shape), upto, _bcast(x, shape, [0, 2]), _full(0, shape, _I32))
        return _sum(terms, shape, 2)
    block = 32
    count = -(-m // block)
    if count * block != m:
        x = hlo("pad", _i32t((rows, count * block)), x, scalar_like(0, _I32),
                edge_padding_low=i64_array([0, 0]),
                edge_padding_high=i64_array([0, count * block - m]),
                interior_padding=i64_array([0, 0]))
    blocks = hlo("reshape", _i32t((rows * count, block)), x)
    within = hlo("reshape", _i32t((rows, count, block)), _inclusive_cumsum(blocks, rows * count, block))
    totals = hlo("reshape", _i32t((rows, count)),
                 hlo("slice", _i32t((rows, count, 1)), within,
                     start_indices=i64_array([0, 0, block - 1]),
                     limit_indices=i64_array([rows, count, block]), strides=i64_array([1, 1, 1])))
    before = hlo("subtract", _i32t((rows, count)), _inclusive_cumsum(totals, rows, count), totals)
    out = hlo("add", _i32t((rows, count, block)), within,
              _bcast(before, (rows, count, block), [0, 1]))
    out = hlo("reshape", _i32t((rows, count * block)), out)
    if count * block != m:
        out = hlo("slice", _i32t((rows, m)), out, start_indices=i64_array([0, 0]),
                  limit_indices=i64_array([rows, m]), strides=i64_array([1, 1]))
    return out


def _pad_last(x, dtype, rows: int, length: int, padded: int, fill) -> Any:
    """``x`` (``(rows, length)``) padded with ``fill`` to ``(rows, padded)``."""
    if np.dtype(dtype) == np.complex128:   # (a complex128 fill is an i128 splat: see _permute)
        f64 = np.dtype(np.float64)
        parts = [_pad_last(hlo(f, _t((rows, length), f64), x), f64, rows, length, padded,
                           hlo(f, _t((), f64), fill)) for f in ("real", "imag")]
        return hlo("complex", _t((rows, padded), dtype), *parts)
    return hlo("pad", _t((rows, padded), dtype), x, fill, edge_padding_low=i64_array([0, 0]),
               edge_padding_high=i64_array([0, padded - length]),
               interior_padding=i64_array([0, 0]))


def _as_rows(x, dtype, shape, dimension) -> Any:
    rank = len(shape)
    to_last = [d for d in range(rank) if d != dimension] + [dimension]
    if dimension != rank - 1:
        x = hlo("transpose", _t(tuple(shape[d] for d in to_last), dtype), x,
                permutation=i64_array(to_last))
    length = shape[dimension]
    return hlo("reshape", _t((int(np.prod(shape)) // length, length), dtype), x)


def _from_rows(x, aval, dimension) -> Any:
    shape = aval.shape
    rank = len(shape)
    to_last = [d for d in range(rank) if d != dimension] + [dimension]
    moved = tuple(shape[d] for d in to_last)
    x = hlo("reshape", _t(moved, aval.dtype), x)
    if dimension != rank - 1:
        x = hlo("transpose", _t(shape, aval.dtype), x,
                permutation=i64_array([to_last.index(d) for d in range(rank)]))
    return x


def _hidden_zero(value) -> Any:
    """An int32 scalar zero IREE cannot fold or hoist past ``value``: ``value`` behind a
    barrier, less ``value`` (a tagged constant makes it an op of its own; a loop-carried value
    keeps it in the loop)."""
    hidden = op("stablehlo.optimization_barrier", [value.type], [value]).result
    return hlo("subtract", _t((), _I32), hidden, value)


def _rank_sort(ctx, rows_in: list, dtypes: list, rows: int, length: int, num_keys: int,
               descending: bool, total_order: bool) -> list:
    """Each element's place is the number of elements before it in the order (its rank):
    length**2 comparisons a row, all in one vectorized reduction, then one scatter an
    operand."""
    flat = (rows, length)
    # [row, j, i]: is element j before element i? Summed over j, the outer loop: IREE then
    # vectorizes along i, comparing a broadcast element j with 8 elements i at a time.
    square = (rows, length, length)
    words = []
    for x, d in zip(rows_in[:num_keys], dtypes[:num_keys]):
        words += [w for w, _ in _key_words(x, d, flat, total_order, descending)]
    # The tie-break "j before i" made an op of its own per sort (a zero hidden behind a
    # tagged barrier): CSE merged it across the sorts of one module, and IREE then fused the
    # shared comparison badly (two 1000-element sorts in one module: 12 ms, alone 0.2 ms each).
    offset = _bcast(_hidden_zero(scalar_like(ctx.lowering.new_tag(), _I32)), square, [])
    before = _compare_int(hlo("add", _i32t(square), _iota(square, 1), offset), _iota(square, 2),
                          "LT", square)
    bool_t = _t(square, np.bool_)
    for w in reversed(words):
        # Computed once, not in each comparison (IREE fuses the key computation into the
        # reduction otherwise).
        w = op("stablehlo.optimization_barrier", [w.type], [w]).result
        wi, wj = _bcast(w, square, [0, 2]), _bcast(w, square, [0, 1])
        less = _compare_int(wj, wi, "LT", square)
        same = _compare_int(wj, wi, "EQ", square)
        before = hlo("or", bool_t, less, hlo("and", bool_t, same, before))
    rank = _count(before, square, 1)
    dest = hlo("add", _i32t(flat), rank,
               hlo("multiply", _i32t(flat), _iota(flat, 0), _full(length, flat, _I32)))
    n = rows * length
    dest = hlo("reshape", _i32t((n,)), dest)
    lines = [hlo("reshape", _t((n,), d), x) for x, d in zip(rows_in, dtypes)]
    return [hlo("reshape", _t(flat, d), v)
            for v, d in zip(_permute(ctx, lines, dtypes, dest, n), dtypes)]


def _sum(x, shape, axis: int, dtype=_I32) -> Any:
    """The sum of ``x`` (``dtype``, of ``shape``) along ``axis``."""
    ir = mlir()
    out_shape = tuple(s for i, s in enumerate(shape) if i != axis)
    reduce_op = op("stablehlo.reduce", [_t(out_shape, dtype)], [x, scalar_like(0, dtype)],
                   {"dimensions": i64_array([axis])}, regions=1)
    scalar = _t((), dtype)
    block = ir.Block.create_at_start(reduce_op.regions[0], [scalar, scalar])
    with ir.InsertionPoint(block):
        op("stablehlo.return", [], [hlo("add", scalar, *block.arguments)])
    return reduce_op.result


def _count(mask, shape, axis: int) -> Any:
    """How many of ``mask`` are true along ``axis``, as int32."""
    return _sum(hlo("convert", _i32t(shape), mask), shape, axis)


def _count8(mask, shape, axis: int) -> Any:
    """How many of ``mask`` are true along ``axis`` (at most 127), counted in int8 (32 lanes
    of a vector against 8 of int32) and returned as int32."""
    ones = hlo("select", _t(shape, np.int8), mask, _full(1, shape, np.int8),
               _full(0, shape, np.int8))
    out_shape = tuple(s for i, s in enumerate(shape) if i != axis)
    return hlo("convert", _i32t(out_shape), _sum(ones, shape, axis, np.dtype(np.int8)))


def _radix_pass(ctx, carried: list, dtypes: list, word_of, shift, rows: int, tiles: int) -> list:
    """One stable counting pass by the ``RADIX_BITS`` digit of a key word at ``shift``."""
    c, r = TILE, 1 << RADIX_BITS
    n = rows * tiles * c
    s3 = (rows, tiles, c)
    word = word_of([hlo("reshape", _t(s3, d), v) for v, d in zip(carried, dtypes)], s3)
    digit = hlo("and", _i32t(s3),
                hlo("shift_right_logical", _i32t(s3), word, _bcast(shift, s3, [])),
                _full(r - 1, s3, _I32))
    digit8 = hlo("convert", _t(s3, np.int8), digit)
    # Rank among the tile's earlier elements of the same digit.
    s4 = (rows, tiles, c, c)
    same = _compare_int(_bcast(digit8, s4, [0, 1, 3], np.int8),
                        _bcast(digit8, s4, [0, 1, 2], np.int8), "EQ", s4)
    # A zero that depends on the pass (the shift behind a barrier, less the shift): the mask
    # "j earlier than i" is then computed in the rank's dispatch, not hoisted out of the loop
    # as a constant tensor that each pass reads and the sorts of one module share (two 100k
    # sorts in one module: 33 ms, one alone 10.5 ms).
    zero = _bcast(_hidden_zero(shift), s4, [])
    earlier = _compare_int(hlo("add", _i32t(s4), _iota(s4, 3), zero), _iota(s4, 2), "LT", s4)
    rank = _count8(hlo("and", _t(s4, np.bool_), same, earlier), s4, 3)
    # Each tile's histogram, digit-major: its exclusive prefix sums over (digit, tile) are
    # the places where each tile's elements of each digit start.
    sh = (rows, r, tiles, c)
    one_hot = _compare_int(_bcast(digit8, sh, [0, 2, 3], np.int8),
                           hlo("convert", _t(sh, np.int8), _iota(sh, 1)), "EQ", sh)
    hist = hlo("reshape", _i32t((rows, r * tiles)), _count8(one_hot, sh, 3))
    start = hlo("subtract", _i32t((rows, r * tiles)), _inclusive_cumsum(hist, rows, r * tiles),
                hist)
    # dest = start[row, digit, tile] + rank, gathered from the flat table.
    where = hlo("add", _i32t(s3), hlo("multiply", _i32t(s3), digit, _full(tiles, s3, _I32)),
                _iota(s3, 1))
    where = hlo("add", _i32t(s3), where,
                hlo("multiply", _i32t(s3), _iota(s3, 0), _full(r * tiles, s3, _I32)))
    ir = mlir()
    numbers = ir.Attribute.parse("#stablehlo.gather<collapsed_slice_dims = [0], "
                                 "start_index_map = [0], index_vector_dim = 3>")
    table = hlo("reshape", _i32t((rows * r * tiles,)), start)
    picked = op("stablehlo.gather", [_i32t(s3)], [table, where],
                {"dimension_numbers": numbers, "slice_sizes": i64_array([1]),
                 "indices_are_sorted": ir.BoolAttr.get(False)}).result
    dest = hlo("add", _i32t(s3), picked, rank)
    dest = hlo("add", _i32t(s3), dest,
               hlo("multiply", _i32t(s3), _iota(s3, 0), _full(tiles * c, s3, _I32)))
    return _permute(ctx, carried, dtypes, hlo("reshape", _i32t((n,)), dest), n)


def _radix_sort(ctx, rows_in: list, dtypes: list, rows: int, length: int, num_keys: int,
                descending: bool, total_order: bool) -> list:
    """LSD radix sort: stable counting passes by ``RADIX_BITS`` of a key word at a time, least
    significant first; each pass ranks elements within tiles of ``TILE`` (comparisons),
    counts them per tile and digit, and scatters every operand to its place."""
    ir = mlir()
    c = TILE
    tiles = -(-length // c)
    padded = tiles * c
    n = rows * padded
    carried = []
    for i, (x, d) in enumerate(zip(rows_in, dtypes)):
        if padded != length:
            fill = (_last_value(d, descending, total_order) if i < num_keys
                    else scalar_like(0, d))
            x = hlo("pad", _t((rows, padded), d), x, fill, edge_padding_low=i64_array([0, 0]),
                    edge_padding_high=i64_array([0, padded - length]),
                    interior_padding=i64_array([0, 0]))
        carried.append(hlo("reshape", _t((n,), d), x))
    # Which words, least significant first: (key operand, word index, bits).
    plan = []
    for k in reversed(range(num_keys)):
        bits = _word_bits(dtypes[k])
        for w in reversed(range(len(bits))):
            plan.append((k, w, bits[w]))
    scalar_i32 = _i32t(())
    for k, w, bits in plan:
        passes = -(-bits // RADIX_BITS)

        def word_of(values, shape, k=k, w=w):
            word, bits = _key_words(values[k], dtypes[k], shape, total_order, descending)[w]
            return _unsigned(word, bits, shape)

        types = [scalar_i32] + [_t((n,), d) for d in dtypes]
        # own_buffers: IREE 3.13's VM may hand one loop-carried buffer to two block arguments
        # and leave one null (lower.own_buffers; "ref is null" sorting three operands).
        inits = own_buffers([scalar_like(0, _I32)] + carried, None)
        loop = op("stablehlo.while", types, inits, regions=2)
        cond = ir.Block.create_at_start(loop.regions[0], types)
        with ir.InsertionPoint(cond):
            op("stablehlo.return", [], [_compare_int(cond.arguments[0],
                                                     scalar_like(passes, np.int32), "LT", ())])
        body = ir.Block.create_at_start(loop.regions[1], types)
        with ir.InsertionPoint(body):
            i, *values = list(body.arguments)
            shift = hlo("multiply", scalar_i32, i, scalar_like(RADIX_BITS, np.int32))
            moved = _radix_pass(ctx, values, dtypes, word_of, shift, rows, tiles)
            op("stablehlo.return", [],
               own_buffers([hlo("add", scalar_i32, i, scalar_like(1, np.int32))] + moved,
                           body, False))
        carried = kept_past_loop(loop.results, inits)[1:]
    out = []
    for v, d in zip(carried, dtypes):
        v = hlo("reshape", _t((rows, padded), d), v)
        if padded != length:
            v = hlo("slice", _t((rows, length), d), v, start_indices=i64_array([0, 0]),
                    limit_indices=i64_array([rows, length]), strides=i64_array([1, 1]))
        out.append(v)
    return out


def _word_bits(dtype: np.dtype) -> list:
    """The significant bits of each word ``_key_words`` makes of a key of ``dtype``."""
    kind = P.kind(dtype)
    if kind == "c":
        return [32] * (2 if dtype == np.complex64 else 4)
    size = 1 if kind == "b" else dtype.itemsize
    return [32, 32] if size == 8 else [8 * size]


def _fits(shape: tuple, dimension: int) -> bool:
    """Whether the scatter indices of the rank and radix sorts fit an int32."""
    length = shape[dimension]
    rows = int(np.prod(shape)) // length
    return rows * (-(-length // TILE) * TILE) < 2 ** 31


def _eager_static(shape: tuple, dimension: int) -> bool:
    """Whether an eager sort is compiled for its shape (rank or radix sort) rather than run by
    the kernel every shape shares (stablehlo.sort, ~6 ns per rows * length**2 here): when that
    would take more than ~0.1 ms."""
    length = shape[dimension]
    rows = int(np.prod(shape)) // length
    return _fits(shape, dimension) and 6e-9 * rows * length * length > 1e-4


def _custom_sort(ctx: RuleContext, operands, dimension, num_keys, descending, total_order):
    avals = ctx.avals_in
    shape = avals[0].shape
    length = shape[dimension]
    rows = int(np.prod(shape)) // length
    dtypes = [a.dtype for a in avals]
    rows_in = [_as_rows(x, a.dtype, shape, dimension) for x, a in zip(operands, avals)]
    sort_fn = _rank_sort if length <= RANK_SORT_MAX else _radix_sort
    if sort_fn is _rank_sort and length % 32:
        # Rows padded to a multiple of 32 (IREE's vector tiles): one row of 1000 floats took
        # 0.54 ms, of 1024 0.16 ms. The padding sorts last (ties go to the earlier position).
        padded = -(-length // 32) * 32
        rows_in = [_pad_last(x, d, rows, length, padded,
                             _last_value(d, descending, total_order) if i < num_keys
                             else scalar_like(0, d))
                   for i, (x, d) in enumerate(zip(rows_in, dtypes))]
        outs = sort_fn(ctx, rows_in, dtypes, rows, padded, num_keys, descending, total_order)
        outs = [hlo("slice", _t((rows, length), d), v, start_indices=i64_array([0, 0]),
                    limit_indices=i64_array([rows, length]), strides=i64_array([1, 1]))
                for v, d in zip(outs, dtypes)]
    else:
        outs = sort_fn(ctx, rows_in, dtypes, rows, length, num_keys, descending, total_order)
    return [_from_rows(x, a, dimension) for x, a in zip(outs, avals)]


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


# Eagerly, longer sorts are compiled per shape (a kernel of unknown shape can only be
# stablehlo.sort, quadratic in IREE 3.13: 0.5 s for 10 000 elements).
STATIC_SHAPE_WHEN[sort_p] = lambda avals, params: _eager_static(avals[0].shape,
                                                                params["dimension"])

