"""Reductions: ``reduce_sum``, ``reduce_prod``, ``reduce_max``, ``reduce_min``,
``reduce_and``, ``reduce_or`` over a set of axes, and ``argmax`` / ``argmin`` along one, with
every rule for them. The core names them (primitives.py) because derivatives and batching build
with them (a cotangent broadcast in the forward pass is summed in the backward one).

* **Abstract evaluation**: the operand's shape without the reduced axes (distinct, in range);
  ``argmax``/``argmin`` reduce exactly one non-empty axis into ``index_dtype``.
* **Lowering**: ``stablehlo.reduce`` with the operation's identity, in the forms IREE runs
  fast (each measured at its code): long sums in blocks (float32 accuracy close to pairwise
  summation; ``lower.sum_block``, shared with eager mode), row reductions as 8-wide vectors
  (``ROW_VECTOR_WIDTH``), a reduction of middle axes split in two; signed integer max/min and
  ``and`` through unsigned and ``or`` forms IREE compiles; ``argmax``/``argmin`` as one
  two-operand reduction with NumPy's first-index tie rule and NaN handling.
* **Derivatives**: ``reduce_sum`` is linear (its transpose broadcasts); max/min share the
  tangent among the elements that attain it (as JAX); ``reduce_prod``'s JVP multiplies the
  others without dividing (zeros are fine); boolean reductions and arg reductions have zero
  derivatives.
* **Batching**: the reduced axes are renumbered around the batch axis, which stays.
* **Eager mode**: a long float sum runs in two kernels, blocks first, as under ``jit``.

Example::

    P.reduce_sum_p.bind(x, axes=(0,))     # what jnp.sum(x, axis=0) binds
"""
from __future__ import annotations

import math
from typing import Callable, Optional

import numpy as np

from pyree.dtypes import bfloat16
from pyree.runtime.array import Array

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import Primitive, abstract_eval_rules
from ..interpreters.ad import Zero, jvp_rules
from ..interpreters.ad_rules import (aval, convert, deflinear, defjvp_zero, div, full_like, mul,
                                     select)
from ..interpreters.batching import batching_rules, example_axes
from ..backend.eager import EAGER_RULES, apply_kernel, view
from ..backend.lower import (Lowering, RuleContext, _compare, _reduce, _splat, hlo, i64_attr,
                             lowering_rules, merged_reduction_axes, op, scalar_like, shape_of,
                             sum_block, tensor_type)


# -- abstract evaluation --------------------------------------------------------------------------

def _check_axes(name: str, x: ShapedArray, axes: tuple) -> tuple:
    if len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise TypeError(f"{name} axes {axes} are not distinct axes of shape {x.shape}")
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _reduction_rule(prim, kinds: tuple[str, str]) -> Callable:
    def rule(x: ShapedArray, *, axes: tuple) -> ShapedArray:
        P.check_kinds(prim.name, x, *kinds)
        return ShapedArray(_check_axes(prim.name, x, axes), x.dtype, x.weak_type)
    return rule


def _arg_reduction_rule(prim) -> Callable:
    name = prim.name

    def rule(x: ShapedArray, *, axes: tuple, index_dtype: np.dtype) -> ShapedArray:
        P.check_kinds(name, x, *P.ORDERED)
        if len(axes) != 1:
            raise TypeError(f"{name} reduces exactly one axis, got axes={axes}")
        shape = _check_axes(name, x, axes)
        if x.shape[axes[0]] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence (axis {axes[0]} of "
                             f"shape {x.shape} has size 0)")
        if np.dtype(index_dtype).kind not in "iu":
            raise TypeError(f"{name} index_dtype must be an integer type, got {index_dtype}")
        return ShapedArray(shape, index_dtype, False)
    return rule


for _prim, _kinds in ((P.reduce_sum_p, P.NUMERIC), (P.reduce_prod_p, P.NUMERIC),
                      (P.reduce_max_p, P.ORDERED), (P.reduce_min_p, P.ORDERED),
                      (P.reduce_and_p, P.INTEGER_OR_BOOL), (P.reduce_or_p, P.INTEGER_OR_BOOL)):
    abstract_eval_rules[_prim] = _reduction_rule(_prim, _kinds)
for _prim in (P.argmax_p, P.argmin_p):
    abstract_eval_rules[_prim] = _arg_reduction_rule(_prim)


# -- lowering -------------------------------------------------------------------------------------

def _identity(prim, dtype: np.dtype):
    if prim is P.reduce_sum_p or prim is P.reduce_or_p:
        return 0 if dtype != np.bool_ else False
    if prim is P.reduce_prod_p:
        return 1
    if prim is P.reduce_and_p:
        return True if dtype == np.bool_ else -1 if dtype.kind == "i" else np.iinfo(dtype).max
    if prim is P.reduce_max_p:
        if dtype.kind == "f" or dtype == bfloat16:
            return -np.inf
        return False if dtype == np.bool_ else np.iinfo(dtype).min
    if prim is P.reduce_min_p:
        if dtype.kind == "f" or dtype == bfloat16:
            return np.inf
        return True if dtype == np.bool_ else np.iinfo(dtype).max
    raise KeyError(prim)


_REDUCERS = {P.reduce_sum_p: "add", P.reduce_prod_p: "multiply", P.reduce_max_p: "maximum",
             P.reduce_min_p: "minimum", P.reduce_and_p: "and", P.reduce_or_p: "or"}


# IREE 3.13's CPU code for a reduction along rows whose length is not a whole number of
# vectors (16 float32 with AVX-512) finishes each row's tail separately: the max over rows of
# 1000 of a 4096 x 1000 array took 0.72-0.97 ms, of 1024 0.38 ms (JAX 0.22 either way). Rows
# of 8k are reduced as (k, 8) instead, the 8 columns first: 0.47-0.50 ms; the sum 0.47-0.54 ->
# 0.35-0.37 ms; the sum of exponentials unchanged (1.1-1.3 ms).
ROW_VECTOR_WIDTH = 8


ROW_VECTOR_MIN = 256


def _row_vector_width(ctx: RuleContext, aval: ShapedArray, axes: tuple) -> Optional[int]:
    """The width to reduce rows of ``aval`` in (see ROW_VECTOR_WIDTH), or None: float32 rows
    (the last axis alone) of at least ROW_VECTOR_MIN, a multiple of 8 but not of 16, on the
    CPU, shapes known."""
    if (ctx.dynamic or ctx.lowering.platform != "cpu" or aval.dtype != np.float32
            or tuple(axes) != (aval.ndim - 1,)):
        return None
    n = aval.shape[-1]
    if n < ROW_VECTOR_MIN or n % ROW_VECTOR_WIDTH or n % (2 * ROW_VECTOR_WIDTH) == 0:
        return None
    return ROW_VECTOR_WIDTH


def _reduction_lowering(prim) -> Callable:
    name = _REDUCERS[prim]

    def rule(ctx: RuleContext, x, *, axes):
        in_aval = ctx.avals_in[0]
        dtype = in_aval.dtype
        if dtype == np.bool_ and name in ("maximum", "minimum"):
            body_name = "or" if name == "maximum" else "and"
        else:
            body_name = name
        if (name in ("minimum", "maximum") and dtype.kind == "i" and ctx.dynamic
                and ctx.lowering.platform != "cpu"):
            return _signed_extremum_as_unsigned(ctx, x, prim, axes)
        if name == "and" and dtype.kind in "iu" and ctx.dynamic and ctx.lowering.platform != "cpu":
            return _and_as_or(ctx, x, axes)
        acc_dtype = dtype
        # Half-precision sums accumulate in float32, then round once.
        if prim is P.reduce_sum_p and dtype in (np.dtype(np.float16), np.dtype(bfloat16)):
            acc_dtype = np.dtype(np.float32)
            x = hlo("convert", tensor_type(in_aval.update(dtype=acc_dtype), ctx.dynamic), x)
        init = scalar_like(_identity(prim, acc_dtype), acc_dtype)
        scalar_t = tensor_type(ShapedArray((), acc_dtype))

        def reduce_now(value, value_aval, reduce_axes):
            out_shape = tuple(d for i, d in enumerate(value_aval.shape) if i not in reduce_axes)
            return _reduce(ctx, [value], [init], [acc_dtype], reduce_axes,
                           [ShapedArray(out_shape, acc_dtype)],
                           lambda a, b: [hlo(body_name, scalar_t, a, b)])[0]

        def reduce(value, value_aval, reduce_axes):
            width = _row_vector_width(ctx, value_aval, reduce_axes)
            if width is None:
                return reduce_now(value, value_aval, reduce_axes)
            # A row of n = k * width: its width-wide columns reduced first (partial results
            # in vector lanes), then those lanes.
            *lead, n = value_aval.shape
            split_aval = value_aval.update(shape=(*lead, n // width, width))
            split = hlo("reshape", tensor_type(split_aval), value)
            lanes = reduce_now(split, split_aval, (len(lead),))
            return reduce_now(lanes, split_aval.update(shape=(*lead, width)), (len(lead),))

        in_acc = in_aval.update(dtype=acc_dtype)
        plan = None if ctx.dynamic else _split_reduction_plan(in_aval.shape, tuple(axes))
        accurate = prim is P.reduce_sum_p and acc_dtype.kind in "fc"
        # On a GPU one workgroup reduces everything that ends in one output: a long reduction
        # runs in two stages there, blocks first, whatever it computes (a max over 16M floats
        # with an elementwise pass took 1.30 ms in one stage and 0.32 ms in two on an H100,
        # where IREE split it by --iree-dispatch-creation-enable-split-reduction; that flag
        # fails to compile 2-D full reductions and argmax, "failed to distribute"). Rows of
        # 1000 gain too: a cross-entropy over 65536x1000 logits took 1.06 ms staged and
        # 1.64 ms in one stage (H200, 2026-11-27).
        staged = accurate or ctx.lowering.platform != "cpu"
        if plan is None and staged and not ctx.dynamic:
            result = _blocked_reduction(x, in_acc, tuple(axes), reduce)
        elif plan is None:
            result = reduce(x, in_acc, axes)
        else:
            # Reduce a long strided axis in two stages over a (rows, block, rest) view: the first
            # stage streams contiguous memory, the second is small.
            split_shape, first_axis = plan
            split = hlo("reshape", tensor_type(in_acc.update(shape=split_shape)), x)
            partial_shape = split_shape[:first_axis] + split_shape[first_axis + 1:]
            partial = reduce(split, in_acc.update(shape=split_shape), (first_axis,))
            result = reduce(partial, in_acc.update(shape=partial_shape), (first_axis,))
        if acc_dtype != dtype:
            result = hlo("convert", ctx.out_type(), result)
        return result
    return rule


for _prim in _REDUCERS:
    lowering_rules[_prim] = _reduction_lowering(_prim)


def _signed_extremum_as_unsigned(ctx: RuleContext, x, prim, axes):
    """The min or max of signed integers as that of unsigned ones: flipping the sign bit maps
    the signed order onto the unsigned one. IREE 3.13's CUDA code for a signed min/max
    reduction of unknown shape (eager kernels) combines the threads' partial results with the
    *unsigned* operation's neutral element (`min.s32 %r, %r, -1`, `max.s32 %r, %r, 0` in the
    PTX), so jnp.min of [3, 1, 0, 7] was -1 on an H200 (2026-11-27). Its unsigned reductions,
    and the signed ones of known shape, have no such constant in their PTX."""
    in_aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
    unsigned = np.dtype(f"uint{8 * in_aval.dtype.itemsize}")
    sign = np.iinfo(in_aval.dtype).min
    flipped = hlo("xor", ctx.type(in_aval), x, _splat(ctx, sign, in_aval, x))
    ux = hlo("bitcast_convert", ctx.type(in_aval.update(dtype=unsigned)), flipped)
    body = "minimum" if prim is P.reduce_min_p else "maximum"
    scalar_t = tensor_type(ShapedArray((), unsigned))
    reduced = _reduce(ctx, [ux], [scalar_like(_identity(prim, unsigned), unsigned)], [unsigned],
                      tuple(axes), [out_aval.update(dtype=unsigned)],
                      lambda a, b: [hlo(body, scalar_t, a, b)])[0]
    back = hlo("bitcast_convert", ctx.out_type(), reduced)
    return hlo("xor", ctx.out_type(), back, _splat(ctx, sign, out_aval, back))


def _and_as_or(ctx: RuleContext, x, axes):
    """The bitwise and of integers over ``axes`` as ~(or of ~x). IREE 3.13's CUDA code for an
    and-reduction of unknown shape returned 0 for rows whose and was not (eager
    lax.reduce_and over int32[4, 5] rows on an H200, 2026-11-28), as if padded with the or's
    neutral element (0) instead of the and's (all ones); see _signed_extremum_as_unsigned."""
    in_aval, out_aval = ctx.avals_in[0], ctx.avals_out[0]
    scalar_t = tensor_type(ShapedArray((), in_aval.dtype))
    reduced = _reduce(ctx, [hlo("not", ctx.type(in_aval), x)], [scalar_like(0, in_aval.dtype)],
                      [in_aval.dtype], tuple(axes), [out_aval],
                      lambda a, b: [hlo("or", scalar_t, a, b)])[0]
    return hlo("not", ctx.out_type(), reduced)


def _blocked_reduction(x, aval: ShapedArray, axes: tuple, reduce: Callable):
    """``reduce(x, aval, axes)``, each long reduced axis reduced in blocks first (see
    sum_block)."""
    merged_shape, merged_axes = merged_reduction_axes(aval.shape, axes)
    if merged_shape != aval.shape:
        aval = aval.update(shape=merged_shape)
        x, axes = hlo("reshape", tensor_type(aval), x), merged_axes
    for axis in axes:
        block = sum_block(aval.shape[axis], axis == aval.ndim - 1)
        if block is None:
            continue
        split_shape = aval.shape[:axis] + (aval.shape[axis] // block, block) + aval.shape[axis + 1:]
        split_aval = aval.update(shape=split_shape)
        split = hlo("reshape", tensor_type(split_aval), x)
        partial_aval = aval.update(shape=split_shape[:axis + 1] + split_shape[axis + 2:])
        partial = reduce(split, split_aval, (axis + 1,))
        return _blocked_reduction(partial, partial_aval, axes, reduce)
    return reduce(x, aval, axes)


def _split_reduction_plan(shape: tuple, axes: tuple) -> Optional[tuple]:
    """How to split a reduction over leading axes whose inner stride is small.

    Reducing a (10000, 10) array over axis 0 walks memory 10 floats at a time; IREE vectorises
    it poorly (0.29 ms here, against 0.11 ms when split). For leading reduced axes of total size
    N over an inner size T < 64, view the array as (N / b, b, ...) and reduce twice. Returns
    (split shape, axis reduced in both stages) or None.
    """
    if not axes or axes != tuple(range(len(axes))) or len(axes) == len(shape):
        return None
    n = 1
    for d in shape[:len(axes)]:
        n *= d
    inner = 1
    for d in shape[len(axes):]:
        inner *= d
    if inner >= 64 or n < 1024:
        return None
    target = max(8, 1024 // max(inner, 1))
    block = next((b for b in range(min(target, n // 8), 7, -1) if n % b == 0), None)
    if block is None:
        return None
    return (n // block, block) + tuple(shape[len(axes):]), 0


def _arg_reduction_lowering(is_max: bool) -> Callable:
    def rule(ctx: RuleContext, x, *, axes, index_dtype):
        in_aval = ctx.avals_in[0]
        dtype, index_dtype = in_aval.dtype, np.dtype(index_dtype)
        axis = axes[0]
        index_aval = in_aval.update(dtype=index_dtype)
        if ctx.dynamic:
            indices = op("stablehlo.dynamic_iota", [tensor_type(index_aval, True)],
                         [shape_of(x, in_aval.ndim)], {"iota_dimension": i64_attr(axis)}).result
        else:
            indices = hlo("iota", tensor_type(index_aval), iota_dimension=i64_attr(axis))
        prim = P.reduce_max_p if is_max else P.reduce_min_p
        init_value = scalar_like(_identity(prim, dtype), dtype)
        init_index = scalar_like(0, index_dtype)
        scalar = ShapedArray((), dtype)
        bool_t = tensor_type(ShapedArray((), np.bool_))
        val_t, idx_t = tensor_type(scalar), tensor_type(ShapedArray((), index_dtype))
        plain = RuleContext(Lowering(False), [], [])

        def body(a_val, a_idx, b_val, b_idx):
            better = _compare(plain, a_val, b_val, "GT" if is_max else "LT", scalar)
            equal = _compare(plain, a_val, b_val, "EQ", scalar)
            a_first = _compare(plain, a_idx, b_idx, "LT", ShapedArray((), index_dtype))
            pick_a = hlo("or", bool_t, better, hlo("and", bool_t, equal, a_first))
            if dtype.kind == "f" or dtype == bfloat16:
                # NaN wins (as in NumPy and JAX); among NaNs the first index wins.
                a_nan = _compare(plain, a_val, a_val, "NE", scalar)
                b_nan = _compare(plain, b_val, b_val, "NE", scalar)
                any_nan = hlo("or", bool_t, a_nan, b_nan)
                b_not_nan = hlo("not", bool_t, b_nan)
                nan_pick = hlo("and", bool_t, a_nan, hlo("or", bool_t, b_not_nan, a_first))
                pick_a = hlo("select", bool_t, any_nan, nan_pick, pick_a)
            return [hlo("select", val_t, pick_a, a_val, b_val),
                    hlo("select", idx_t, pick_a, a_idx, b_idx)]

        out = ctx.avals_out[0]
        _, result = _reduce(ctx, [x, indices], [init_value, init_index], [dtype, index_dtype],
                            axes, [out.update(dtype=dtype), out], body)
        return result
    return rule


lowering_rules[P.argmax_p] = _arg_reduction_lowering(True)
lowering_rules[P.argmin_p] = _arg_reduction_lowering(False)


# -- derivatives ----------------------------------------------------------------------------------

def _t_reduce_sum(ct, x, *, axes):
    if isinstance(ct, Zero):
        return [None]
    shape = aval(x).shape
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return [P.broadcast_in_dim_p.bind(ct, shape=shape, broadcast_dimensions=kept)]


deflinear(P.reduce_sum_p, _t_reduce_sum)


def _reduce_chooser_jvp(prim):
    # The tangent of the elements that attain the max (min), averaged over ties (as in JAX).
    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        if isinstance(t, Zero):
            return [ans], [Zero(aval(ans))]
        shape = aval(x).shape
        kept = tuple(d for d in range(len(shape)) if d not in axes)
        location = P.eq_p.bind(x, P.broadcast_in_dim_p.bind(ans, shape=shape,
                                                             broadcast_dimensions=kept))
        mask = convert(location, aval(t).dtype)
        counts = P.reduce_sum_p.bind(mask, axes=axes)
        total = P.reduce_sum_p.bind(mul(t, mask), axes=axes)
        return [ans], [div(total, counts)]
    return rule


jvp_rules[P.reduce_max_p] = _reduce_chooser_jvp(P.reduce_max_p)
jvp_rules[P.reduce_min_p] = _reduce_chooser_jvp(P.reduce_min_p)


def _reduce_prod_jvp(primals, tangents, *, axes):
    # d prod = sum_i t_i * prod_{j != i} x_j, computed without dividing (zeros are fine): the
    # reduced axes are flattened to one of size n, and an (n, n) array with x on every row but
    # 1 on the diagonal gives each product of the others.
    (x,), (t,) = primals, tangents
    ans = P.reduce_prod_p.bind(x, axes=axes)
    if isinstance(t, Zero):
        return [ans], [Zero(aval(ans))]
    shape = aval(x).shape
    kept = [d for d in range(len(shape)) if d not in axes]
    perm = tuple(kept) + tuple(axes)
    kept_shape = tuple(shape[d] for d in kept)
    n = math.prod(shape[d] for d in axes)
    xs = P.reshape_p.bind(P.transpose_p.bind(x, permutation=perm), new_sizes=kept_shape + (n,))
    ts = P.reshape_p.bind(P.transpose_p.bind(t, permutation=perm), new_sizes=kept_shape + (n,))
    k = len(kept_shape)
    rows = P.broadcast_in_dim_p.bind(xs, shape=kept_shape + (n, n),
                                     broadcast_dimensions=tuple(range(k)) + (k + 1,))
    eye = P.eq_p.bind(P.iota_p.bind(dtype=np.dtype(np.int32), shape=(n, n), dimension=0),
                      P.iota_p.bind(dtype=np.dtype(np.int32), shape=(n, n), dimension=1))
    eye = P.broadcast_in_dim_p.bind(eye, shape=kept_shape + (n, n),
                                    broadcast_dimensions=(k, k + 1))
    others = P.reduce_prod_p.bind(select(eye, full_like(rows, 1), rows), axes=(k + 1,))
    return [ans], [P.reduce_sum_p.bind(mul(ts, others), axes=(k,))]


jvp_rules[P.reduce_prod_p] = _reduce_prod_jvp
for _p in (P.argmax_p, P.argmin_p, P.reduce_and_p, P.reduce_or_p):
    defjvp_zero(_p)


# -- batching -------------------------------------------------------------------------------------

def _reduction_batching(prim: Primitive) -> Callable:
    def rule(axis, values, dims, *, axes, **params):
        (x,), (d,) = values, dims
        real_axes = example_axes(axes, d)
        out_dim = d - sum(1 for a in real_axes if a < d)
        return [prim.bind(x, axes=real_axes, **params)], [out_dim]
    return rule


for _prim in (P.reduce_sum_p, P.reduce_prod_p, P.reduce_max_p, P.reduce_min_p, P.reduce_and_p,
              P.reduce_or_p, P.argmax_p, P.argmin_p):
    batching_rules[_prim] = _reduction_batching(_prim)


# -- eager mode -----------------------------------------------------------------------------------

_BLOCK_SUMMED = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                                np.complex128))


def _blocked_sum(x: Array, axes: tuple) -> Optional[Array]:
    """A float sum over a long axis in two kernels, blocks first, as jitted sums are summed
    (lower.sum_block): one kernel of unknown shapes accumulates the axis serially, and a mean
    over 10,000 rows was 10x less accurate eagerly than under jit. None if no axis is long."""
    merged_shape, merged_axes = merged_reduction_axes(x.shape, tuple(axes))
    if merged_shape != x.shape:
        x, axes = view(x, x.aval.update(shape=merged_shape)), merged_axes
    for axis in axes:
        block = sum_block(x.shape[axis], axis == x.ndim - 1)
        if block is not None:
            split = view(x, x.aval.update(
                shape=x.shape[:axis] + (x.shape[axis] // block, block) + x.shape[axis + 1:]))
            # Each block summed by one kernel, not blocked again, as under jit: a sum over
            # 10,000 rows took 5 kernels instead of 2 (alternating, 300 calls each: 247-320 us
            # against 199-237 us); the accuracy stayed at 1-2e-7 relative.
            # Either stage may come first: both sum about sqrt(n) terms per output.
            partial = _plain_sum(split, (axis,) if _strided_first(split.aval, axis) else
                                 (axis + 1,))
            total = _blocked_sum(partial, axes)
            return total if total is not None else _plain_sum(partial, axes)
    return None


def _strided_first(split: ShapedArray, axis: int) -> bool:
    """Whether a blocked sum over ``split``'s axes (axis, axis + 1) should sum the strided
    stage (``axis``, every block's i-th value) first rather than each contiguous block.

    IREE's kernel of unknown shapes sums a middle axis slowly when the rows after it are short
    and not a whole number of 64-byte vectors (each (m, n) over axis 0, 10 x 200 x 3 runs, us,
    contiguous blocks first -> strided first): (10000, 10) 100 -> 18, (100000, 3) 661 -> 121,
    (16384, 4) 154 -> 23, (10000, 17) 123 -> 32, (10000, 100) 281 -> 221; but (16384, 16) 101
    -> 158, (4096, 64) 117 -> 177, (1000, 1000) 168 -> 212, and along the last axis neither
    order won throughout."""
    if axis + 2 == split.ndim:
        return False
    inner = math.prod(split.shape[axis + 2:])
    per_vector = max(1, 64 // split.dtype.itemsize)
    return inner < 128 and inner % per_vector != 0


def _plain_sum(x: Array, axes: tuple) -> Array:
    """A float sum over ``axes`` in one kernel."""
    out = x.aval.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in axes))
    return apply_kernel(P.reduce_sum_p, [x], [x.aval], [out], {"axes": tuple(axes)})[0]


def _reduce_sum_eager(arrays, avals_in, avals_out, params):
    if avals_in[0].dtype not in _BLOCK_SUMMED:
        return None
    blocked = _blocked_sum(arrays[0], params["axes"])
    return None if blocked is None else [blocked]


EAGER_RULES[P.reduce_sum_p] = _reduce_sum_eager
