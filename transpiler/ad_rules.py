"""JVP and transpose rules of the primitives in primitives.py.

JVP rules are written with the primitives themselves, so the tangent computation is IR like any
other. Transpose rules exist for the primitives that are linear in some input (the ones JVP
rules apply to tangents); non-linear primitives only ever run in the primal part.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import primitives as P
from .ad import (UndefinedPrimal, Zero, add_tangents, instantiate, is_undefined, jvp_rules,
                 transpose_rules, zeros)
from .ir import ShapedArray
from .trace import TypedScalar, get_aval


# -- helpers --------------------------------------------------------------------------------------

def aval(x: Any) -> ShapedArray:
    return x.aval if isinstance(x, (Zero, UndefinedPrimal)) else get_aval(x)


def const(value: Any, like: Any) -> TypedScalar:
    """A scalar constant of ``like``'s dtype."""
    return TypedScalar(value, aval(like).dtype, False)


def neg(x):
    return P.neg_p.bind(x)


def add(x, y):
    return P.add_p.bind(x, y)


def sub(x, y):
    return P.sub_p.bind(x, y)


def mul(x, y):
    return P.mul_p.bind(x, y)


def div(x, y):
    return P.div_p.bind(x, y)


def select(pred, x, y):
    return P.select_p.bind(pred, x, y)


def convert(x, dtype):
    return P.convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def broadcast_to(x: Any, shape: tuple) -> Any:
    """A rank-0 ``x`` (or one already of ``shape``) as an array of ``shape``."""
    a = aval(x)
    if a.shape == tuple(shape) and not isinstance(x, TypedScalar):
        return x
    if a.shape == ():
        return P.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=())
    raise ValueError(f"cannot broadcast {a.shape} to {shape}")


def sum_to(ct: Any, shape: tuple) -> Any:
    """Undo the implicit broadcast of a rank-0 operand: sum the cotangent to ``shape``."""
    a = aval(ct)
    if a.shape == tuple(shape):
        return ct
    if shape == ():
        return P.reduce_sum_p.bind(ct, axes=tuple(range(a.ndim)))
    raise ValueError(f"cannot sum shape {a.shape} to {shape}")


def zeros_like(x: Any) -> Any:
    return zeros(aval(x).update(weak_type=False))


# -- JVP rules ------------------------------------------------------------------------------------

def defjvp(prim, *fns: Optional[Callable], use_output: bool = False) -> None:
    """JVP from per-input tangent maps ``fn(g, *primals, **params)`` (or ``fn(g, ans,
    *primals, **params)`` with ``use_output``); their contributions add up."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out = Zero(aval(ans))
        for fn, g in zip(fns, tangents):
            if fn is None or isinstance(g, Zero):
                continue
            part = fn(g, ans, *primals, **params) if use_output else fn(g, *primals, **params)
            out = add_tangents(out, match_shape(part, aval(ans).shape))
        return [ans], [out]

    jvp_rules[prim] = rule


def match_shape(t: Any, shape: tuple) -> Any:
    # A rank-0 operand's tangent contributes to every element of a broadcast result.
    return broadcast_to(t, shape) if aval(t).shape != shape else t


def defjvp_zero(prim) -> None:
    """The primitive's outputs do not depend differentiably on its inputs."""

    def rule(primals, tangents, **params):
        outs = prim.bind(*primals, **params)
        outs = outs if prim.multiple_results else [outs]
        return list(outs), [Zero(aval(o)) for o in outs]

    jvp_rules[prim] = rule


def deflinear(prim, transpose: Callable) -> None:
    """A primitive linear in all its inputs: its JVP applies it to the tangents."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        ts = [instantiate(t) for t in tangents]
        return [ans], [prim.bind(*ts, **params)]

    jvp_rules[prim] = rule
    transpose_rules[prim] = transpose


# elementwise, one input
defjvp(P.neg_p, lambda g, x: neg(g))
# (not's derivative is zero; exp, sin, ... are math_functions.py's.)
defjvp_zero(P.not_p)

# elementwise, two inputs
defjvp(P.add_p, lambda g, x, y: g, lambda g, x, y: g)
defjvp(P.sub_p, lambda g, x, y: g, lambda g, x, y: neg(g))
defjvp(P.mul_p, lambda g, x, y: mul(g, y), lambda g, x, y: mul(x, g))
defjvp(P.div_p, lambda g, x, y: div(g, y),
       lambda g, x, y: neg(div(mul(g, x), mul(y, y))))


def full_like(x: Any, value: Any) -> Any:
    a = aval(x)
    return broadcast_to(const(value, x), a.shape) if a.shape else const(value, x)


def _minmax_jvp(prim, pick_x_cmp):
    # The tangent of the input that is chosen; on ties, half of each (as in JAX).
    def rule(primals, tangents):
        x, y = primals
        ans = prim.bind(x, y)
        shape = aval(ans).shape
        gx, gy = (match_shape(instantiate(t), shape) for t in tangents)
        half = const(0.5, ans)
        x_wins = pick_x_cmp.bind(x, y)
        tie = P.eq_p.bind(x, y)
        out = select(x_wins, gx, gy)
        out = select(tie, mul(add(gx, gy), half), out)
        return [ans], [out]
    return rule


jvp_rules[P.max_p] = _minmax_jvp(P.max_p, P.gt_p)
jvp_rules[P.min_p] = _minmax_jvp(P.min_p, P.lt_p)
for _p in (P.and_p, P.or_p, P.xor_p, P.shift_left_p, P.shift_right_arithmetic_p,
           P.shift_right_logical_p, P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p, P.ge_p,
           P.iota_p, P.argmax_p, P.argmin_p, P.reduce_and_p, P.reduce_or_p):
    defjvp_zero(_p)


def _select_jvp(primals, tangents):
    pred, on_true, on_false = primals
    ans = P.select_p.bind(pred, on_true, on_false)
    _, t_true, t_false = tangents
    if isinstance(t_true, Zero) and isinstance(t_false, Zero):
        return [ans], [Zero(aval(ans))]
    shape = aval(ans).shape
    t = select(pred, match_shape(instantiate(t_true), shape),
               match_shape(instantiate(t_false), shape))
    return [ans], [t]


jvp_rules[P.select_p] = _select_jvp


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    ans = P.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if isinstance(t, Zero) or np.dtype(new_dtype).kind not in "fc" and \
            np.dtype(new_dtype) != P._BF16:
        return [ans], [Zero(aval(ans))]
    return [ans], [P.convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=False)]


jvp_rules[P.convert_element_type_p] = _convert_jvp

# -- transposes of the elementwise linear operations ---------------------------------------------


def _t_add(ct, x, y):
    cts = []
    for v in (x, y):
        cts.append(sum_to(instantiate(ct), aval(v).shape) if is_undefined(v) else None)
    return cts


def _t_sub(ct, x, y):
    ct = instantiate(ct)
    return [sum_to(ct, aval(x).shape) if is_undefined(x) else None,
            sum_to(neg(ct), aval(y).shape) if is_undefined(y) else None]


def _t_mul(ct, x, y):
    if isinstance(ct, Zero):
        return [None, None]
    if is_undefined(x) and is_undefined(y):
        raise TypeError("transpose of mul with both operands linear (the program is not linear)")
    if is_undefined(x):
        return [sum_to(mul(ct, y), aval(x).shape), None]
    return [None, sum_to(mul(x, ct), aval(y).shape)]


def _t_div(ct, x, y):
    if is_undefined(y):
        raise TypeError("transpose of div with a linear divisor (the program is not linear)")
    if isinstance(ct, Zero):
        return [None, None]
    return [sum_to(div(ct, y), aval(x).shape), None]


def _t_neg(ct, x):
    return [neg(instantiate(ct))]


def _t_select(ct, pred, on_true, on_false):
    if is_undefined(pred):
        raise TypeError("select's predicate cannot be linear")
    if isinstance(ct, Zero):
        return [None, None, None]
    z = full_like(ct, 0)
    t_true = sum_to(select(pred, ct, z), aval(on_true).shape) if is_undefined(on_true) else None
    t_false = sum_to(select(pred, z, ct), aval(on_false).shape) if is_undefined(on_false) \
        else None
    return [None, t_true, t_false]


def _t_convert(ct, x, *, new_dtype, weak_type):
    if isinstance(ct, Zero):
        return [None]
    return [convert(ct, aval(x).dtype)]


transpose_rules[P.add_p] = _t_add
transpose_rules[P.sub_p] = _t_sub
transpose_rules[P.mul_p] = _t_mul
transpose_rules[P.div_p] = _t_div
transpose_rules[P.neg_p] = _t_neg
transpose_rules[P.select_p] = _t_select
transpose_rules[P.convert_element_type_p] = _t_convert


# -- structural (linear) primitives -----------------------------------------------------------------


def _t_broadcast_in_dim(ct, x, *, shape, broadcast_dimensions):
    if isinstance(ct, Zero):
        return [None]
    in_shape = aval(x).shape
    summed = tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)
    expanded = tuple(d for i, d in enumerate(broadcast_dimensions)
                     if in_shape[i] == 1 and shape[d] != 1)
    axes = tuple(sorted(summed + expanded))
    out = P.reduce_sum_p.bind(ct, axes=axes) if axes else ct
    return [P.reshape_p.bind(out, new_sizes=in_shape) if aval(out).shape != in_shape else out]


def _t_reshape(ct, x, *, new_sizes):
    if isinstance(ct, Zero):
        return [None]
    return [P.reshape_p.bind(ct, new_sizes=aval(x).shape)]


def _t_transpose(ct, x, *, permutation):
    if isinstance(ct, Zero):
        return [None]
    inverse = tuple(int(i) for i in np.argsort(permutation))
    return [P.transpose_p.bind(ct, permutation=inverse)]


def _t_rev(ct, x, *, dimensions):
    if isinstance(ct, Zero):
        return [None]
    return [P.rev_p.bind(ct, dimensions=dimensions)]


def _t_reduce_sum(ct, x, *, axes):
    if isinstance(ct, Zero):
        return [None]
    shape = aval(x).shape
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    return [P.broadcast_in_dim_p.bind(ct, shape=shape, broadcast_dimensions=kept)]


def _t_slice(ct, x, *, start_indices, limit_indices, strides):
    if isinstance(ct, Zero):
        return [None]
    shape = aval(x).shape
    out_shape = aval(ct).shape
    config = []
    for dim, start, stride, n in zip(shape, start_indices, strides, out_shape):
        last = start + (n - 1) * stride + 1 if n else start
        config.append((start, dim - last, stride - 1 if n > 1 else 0))
    return [P.pad_p.bind(ct, const(0, ct), padding_config=tuple(config))]


def _t_pad(ct, x, padding_value, *, padding_config):
    if isinstance(ct, Zero):
        return [None, None]
    # Undo the edges (negative padding crops), then take every (interior + 1)-th element.
    unpadded = P.pad_p.bind(ct, const(0, ct), padding_config=tuple(
        (-lo, -hi, 0) for lo, hi, _ in padding_config))
    starts = [0] * len(padding_config)
    limits = list(aval(unpadded).shape)
    strides = [interior + 1 for _, _, interior in padding_config]
    t_x = P.slice_p.bind(unpadded, start_indices=tuple(starts), limit_indices=tuple(limits),
                         strides=tuple(strides)) if is_undefined(x) else None
    t_pv = None
    if is_undefined(padding_value):
        total = P.reduce_sum_p.bind(ct, axes=tuple(range(aval(ct).ndim)))
        inner = P.reduce_sum_p.bind(t_x, axes=tuple(range(aval(t_x).ndim))) if t_x is not None \
            else const(0, ct)
        t_pv = sub(total, inner)
    return [t_x, t_pv]


def _t_concatenate(ct, *operands, dimension):
    if isinstance(ct, Zero):
        return [None] * len(operands)
    cts, offset = [], 0
    shape = aval(ct).shape
    for op in operands:
        size = aval(op).shape[dimension]
        if is_undefined(op):
            start = [0] * len(shape)
            limit = list(shape)
            start[dimension], limit[dimension] = offset, offset + size
            cts.append(P.slice_p.bind(ct, start_indices=tuple(start), limit_indices=tuple(limit),
                                      strides=(1,) * len(shape)))
        else:
            cts.append(None)
        offset += size
    return cts


def _t_dynamic_slice(ct, x, *starts, slice_sizes):
    if isinstance(ct, Zero):
        return [None] * (1 + len(starts))
    return [P.dynamic_update_slice_p.bind(zeros(aval(x).update(weak_type=False)), ct, *starts)] + \
        [None] * len(starts)


def _t_dynamic_update_slice(ct, x, update, *starts):
    if isinstance(ct, Zero):
        return [None] * (2 + len(starts))
    u_aval = aval(update)
    t_x = P.dynamic_update_slice_p.bind(ct, zeros(u_aval.update(weak_type=False)), *starts) \
        if is_undefined(x) else None
    t_u = P.dynamic_slice_p.bind(ct, *starts, slice_sizes=u_aval.shape) \
        if is_undefined(update) else None
    return [t_x, t_u] + [None] * len(starts)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *starts = primals
    ans = P.dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes)
    t = tangents[0]
    if isinstance(t, Zero):
        return [ans], [Zero(aval(ans))]
    return [ans], [P.dynamic_slice_p.bind(t, *starts, slice_sizes=slice_sizes)]


def _dynamic_update_slice_jvp(primals, tangents):
    x, update, *starts = primals
    ans = P.dynamic_update_slice_p.bind(x, update, *starts)
    tx, tu = tangents[0], tangents[1]
    if isinstance(tx, Zero) and isinstance(tu, Zero):
        return [ans], [Zero(aval(ans))]
    return [ans], [P.dynamic_update_slice_p.bind(instantiate(tx), instantiate(tu), *starts)]


def _pad_jvp(primals, tangents, *, padding_config):
    x, pv = primals
    ans = P.pad_p.bind(x, pv, padding_config=padding_config)
    tx, tpv = tangents
    if isinstance(tx, Zero) and isinstance(tpv, Zero):
        return [ans], [Zero(aval(ans))]
    return [ans], [P.pad_p.bind(instantiate(tx), instantiate(tpv), padding_config=padding_config)]


def _concatenate_jvp(primals, tangents, *, dimension):
    ans = P.concatenate_p.bind(*primals, dimension=dimension)
    if all(isinstance(t, Zero) for t in tangents):
        return [ans], [Zero(aval(ans))]
    return [ans], [P.concatenate_p.bind(*[instantiate(t) for t in tangents],
                                        dimension=dimension)]


deflinear(P.broadcast_in_dim_p, _t_broadcast_in_dim)
deflinear(P.reshape_p, _t_reshape)
deflinear(P.transpose_p, _t_transpose)
deflinear(P.rev_p, _t_rev)
deflinear(P.reduce_sum_p, _t_reduce_sum)
deflinear(P.slice_p, _t_slice)
jvp_rules[P.pad_p] = _pad_jvp
transpose_rules[P.pad_p] = _t_pad
jvp_rules[P.concatenate_p] = _concatenate_jvp
transpose_rules[P.concatenate_p] = _t_concatenate
jvp_rules[P.dynamic_slice_p] = _dynamic_slice_jvp
transpose_rules[P.dynamic_slice_p] = _t_dynamic_slice
jvp_rules[P.dynamic_update_slice_p] = _dynamic_update_slice_jvp
transpose_rules[P.dynamic_update_slice_p] = _t_dynamic_update_slice

# -- reductions ------------------------------------------------------------------------------------


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

# -- dot_general -----------------------------------------------------------------------------------


def _dot_jvp(primals, tangents, *, dimension_numbers, precision=None,
             preferred_element_type=None):
    x, y = primals
    tx, ty = tangents
    kw = dict(dimension_numbers=dimension_numbers, precision=precision,
              preferred_element_type=preferred_element_type)
    ans = P.dot_general_p.bind(x, y, **kw)
    out = Zero(aval(ans))
    if not isinstance(tx, Zero):
        out = add_tangents(out, P.dot_general_p.bind(tx, y, **kw))
    if not isinstance(ty, Zero):
        out = add_tangents(out, P.dot_general_p.bind(x, ty, **kw))
    return [ans], [out]


def _ranges_like(*xs: Sequence[int]) -> list[tuple]:
    start = 0
    out = []
    for x in xs:
        out.append(tuple(range(start, start + len(x))))
        start += len(x)
    return out


def _remaining(original: Sequence[int], *removed: Sequence[int]) -> tuple:
    gone = set(d for r in removed for d in r)
    return tuple(d for d in original if d not in gone)


def _dot_transpose_lhs(ct, x_aval, y, dimension_numbers, preferred_element_type, swap=False,
                       precision=None):
    """The cotangent of the left operand of dot_general (of the right one when ``swap``)."""
    x_ndim = x_aval.ndim
    y_ndim = aval(y).ndim
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _remaining(range(x_ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    if swap:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_sorted_by_y = [c for _, c in sorted(zip(y_contract, x_contract))]
    out_axes = np.argsort(list(x_batch) + list(x_kept) + x_contract_sorted_by_y)
    # The same product with the operands swapped gives (batch, y's free dims, ct's free dims):
    # where that is already x's order, no transpose follows. A weight gradient x.T @ ct is
    # one (the other order wrote a 784x512 MLP weight's gradient transposed, 175 us of the
    # SGD step's 1.5 ms in IREE's profile here).
    swapped_axes = np.argsort(list(x_batch) + x_contract_sorted_by_y + list(x_kept))
    if (any(out_axes != np.arange(x_ndim))
            and all(swapped_axes == np.arange(x_ndim))):
        t = P.dot_general_p.bind(y, ct, dimension_numbers=((y_kept, ans_y), (y_batch, ans_batch)),
                                 precision=precision, preferred_element_type=None)
    else:
        t = P.dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision,
                                 preferred_element_type=None)
        if any(out_axes != np.arange(x_ndim)):
            t = P.transpose_p.bind(t, permutation=tuple(int(a) for a in out_axes))
    if aval(t).dtype != x_aval.dtype:
        t = convert(t, x_aval.dtype)
    return t


def _t_dot_general(ct, x, y, *, dimension_numbers, precision=None, preferred_element_type=None):
    if isinstance(ct, Zero):
        return [None, None]
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    t_x = t_y = None
    if is_undefined(x):
        t_x = _dot_transpose_lhs(ct, aval(x), y, dimension_numbers, preferred_element_type,
                                 precision=precision)
    if is_undefined(y):
        swapped = ((y_contract, x_contract), (y_batch, x_batch))
        t_y = _dot_transpose_lhs(ct, aval(y), x, swapped, preferred_element_type, swap=True,
                                 precision=precision)
    return [t_x, t_y]


jvp_rules[P.dot_general_p] = _dot_jvp
transpose_rules[P.dot_general_p] = _t_dot_general
