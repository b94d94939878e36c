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
from .ir import ShapedArray
from .lower import (RuleContext, _compare, _splat, bitcast_to, hlo, lowering_rules, mlir, op,
                    shape_of, signless, tensor_type)
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
    ir = mlir()
    avals = ctx.avals_in
    if not ctx.dynamic and 0 in avals[0].shape:
        return list(operands)
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
        # two sorts of one operand (each sorts the same buffer). Every operand is cloned (IREE
        # drops the clones it proves unneeded), and an offset unique to this sort keeps its
        # positions apart from other iotas (they only break ties: any increasing sequence
        # serves).
        from iree.compiler.dialects import flow
        offset = ctx.lowering.new_tag()
        positions = hlo("add", positions.type, positions,
                        _splat(ctx, offset, position_aval, positions))
        sorted_in = [bitcast_to(flow.TensorCloneOp(signless(x), []).result, x.type)
                     for x in distinct]
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
