"""Arithmetic, comparisons, ``select`` and conversions: the elementwise primitives the
interpreters build on, with every rule for them (the mathematical functions, exp ... atan2,
are math_functions.py's).

The core names these primitives (core/primitives.py: ``neg``, ``not``, ``add``, ``sub``,
``mul``, ``div``, ``max``, ``min``, the bitwise operations and shifts, ``eq`` ... ``ge``,
``select``, ``convert_element_type``), because derivatives and batching build expressions
from them; everything else about them is here.

* **Abstract evaluation**: like ``jax.lax``, operands have one dtype and equal shapes, except
  that rank-0 operands broadcast; ``select`` takes a boolean predicate; a conversion gives its
  ``new_dtype``.
* **Lowering**: StableHLO's op of the same meaning, with XLA's results where the hardware would
  trap or differ: integer division by zero and ``INT_MIN / -1``, complex ``max``/``min``
  ordered lexicographically, float -> integer conversions saturating (NaN gives 0), booleans
  converted by ``select`` (see each rule).
* **Derivatives**: JVPs written with the primitives themselves; ``add``, ``sub``, ``neg``,
  ``mul`` and ``div`` by a constant, ``select`` and conversions are linear and have transposes;
  bitwise operations and comparisons have zero derivatives; ``max``/``min`` split a tie's
  tangent in halves, as JAX does.
* **Batching, partitioning and eager mode**: as for every member of ``primitives.ELEMENTWISE``
  (one rule each, in batching.py and partition.py; eager mode runs them on flat views); a
  conversion that changes only the weak type is a view.

Example::

    P.add_p.bind(x, y)     # what jnp.add / lax.add bind once dtypes and shapes agree
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import abstract_eval_rules
from ..interpreters.ad import Zero, instantiate, is_undefined, jvp_rules, transpose_rules
from ..interpreters.ad_rules import (add, aval, const, convert, defjvp, defjvp_zero, div,
                                     full_like, match_shape, mul, neg, select, sum_to)
from ..backend.eager import EAGER_RULES, view
from ..backend.lower import (BF16_KEPT_PRIMITIVES, VIEW_PRIMITIVES, RuleContext, _compare, _splat,
                             broadcast_to_result, division_rule, hlo, lowering_rules, tensor_type,
                             unary_op_rule)


# -- abstract evaluation --------------------------------------------------------------------------

P.elementwise_unary(P.neg_p, P.NUMERIC)
P.elementwise_unary(P.not_p, P.INTEGER_OR_BOOL)
for _prim, _kinds in ((P.add_p, P.NUMERIC), (P.sub_p, P.NUMERIC), (P.mul_p, P.NUMERIC),
                      (P.div_p, P.NUMERIC), (P.max_p, P.NUMERIC_OR_BOOL),
                      (P.min_p, P.NUMERIC_OR_BOOL), (P.and_p, P.INTEGER_OR_BOOL),
                      (P.or_p, P.INTEGER_OR_BOOL), (P.xor_p, P.INTEGER_OR_BOOL),
                      (P.shift_left_p, P.INTEGER), (P.shift_right_arithmetic_p, P.INTEGER),
                      (P.shift_right_logical_p, P.INTEGER)):
    P.elementwise_binary(_prim, _kinds)
for _prim, _kinds in ((P.eq_p, P.NUMERIC_OR_BOOL), (P.ne_p, P.NUMERIC_OR_BOOL),
                      (P.lt_p, P.ORDERED), (P.le_p, P.ORDERED), (P.gt_p, P.ORDERED),
                      (P.ge_p, P.ORDERED)):
    P.elementwise_binary(_prim, _kinds, compare=True)


def _select_rule(pred: ShapedArray, on_true: ShapedArray, on_false: ShapedArray) -> ShapedArray:
    if pred.dtype != np.bool_:
        raise TypeError(f"select requires a boolean predicate, got {pred.dtype.name}")
    dtype = P.same_dtypes("select", [on_true, on_false])
    shape = P.broadcast_shapes("select", [pred, on_true, on_false])
    return ShapedArray(shape, dtype, on_true.weak_type and on_false.weak_type)


abstract_eval_rules[P.select_p] = _select_rule


def _convert_rule(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


abstract_eval_rules[P.convert_element_type_p] = _convert_rule
# (elementwise too: batched, partitioned and run eagerly as the others are)
P.ELEMENTWISE.update({P.select_p, P.convert_element_type_p})


# -- lowering ------------------------------------------------------------------------------------

_UNARY = {P.neg_p: "negate", P.not_p: "not"}
for _prim, _name in _UNARY.items():
    lowering_rules[_prim] = unary_op_rule(_name)


_BINARY = {
    P.add_p: "add", P.sub_p: "subtract", P.mul_p: "multiply",
    P.and_p: "and", P.or_p: "or", P.xor_p: "xor",
    P.shift_left_p: "shift_left", P.shift_right_arithmetic_p: "shift_right_arithmetic",
    P.shift_right_logical_p: "shift_right_logical",
}


def _binary_lowering(name: str) -> Callable:
    def rule(ctx: RuleContext, x, y):
        x, y = broadcast_to_result(ctx, [x, y], ctx.avals_in, ctx.avals_out[0])
        return hlo(name, ctx.out_type(), x, y)
    return rule


for _prim, _name in _BINARY.items():
    lowering_rules[_prim] = _binary_lowering(_name)


def _max_min_lowering(name: str, bool_name: str) -> Callable:
    def rule(ctx: RuleContext, x, y):
        out = ctx.avals_out[0]
        x, y = broadcast_to_result(ctx, [x, y], ctx.avals_in, out)
        if out.dtype.kind == "c":
            # Complex numbers order lexicographically (real part, then imaginary), as in
            # StableHLO and JAX; IREE's complex maximum compares the real parts only.
            part = tensor_type(out.update(dtype=np.finfo(out.dtype).dtype), ctx.dynamic)
            real = out.update(dtype=np.finfo(out.dtype).dtype)
            direction = "GT" if name == "maximum" else "LT"
            rx, ry = hlo("real", part, x), hlo("real", part, y)
            ix, iy = hlo("imag", part, x), hlo("imag", part, y)
            bool_t = tensor_type(out.update(dtype=np.bool_), ctx.dynamic)
            ties = hlo("and", bool_t, _compare(ctx, rx, ry, "EQ", real),
                       _compare(ctx, ix, iy, direction, real))
            x_wins = hlo("or", bool_t, _compare(ctx, rx, ry, direction, real), ties)
            return hlo("select", ctx.out_type(), x_wins, x, y)
        # On booleans max is `or` and min is `and`.
        return hlo(bool_name if ctx.avals_in[0].dtype == np.bool_ else name, ctx.out_type(), x, y)
    return rule


lowering_rules[P.max_p] = _max_min_lowering("maximum", "or")
lowering_rules[P.min_p] = _max_min_lowering("minimum", "and")


lowering_rules[P.div_p] = division_rule("divide")


def _compare_lowering(direction: str) -> Callable:
    def rule(ctx: RuleContext, x, y):
        out = ctx.avals_out[0]
        x, y = broadcast_to_result(ctx, [x, y], ctx.avals_in, out)
        return _compare(ctx, x, y, direction, out.update(dtype=ctx.avals_in[0].dtype))
    return rule


for _prim, _dir in ((P.eq_p, "EQ"), (P.ne_p, "NE"), (P.lt_p, "LT"), (P.le_p, "LE"),
                    (P.gt_p, "GT"), (P.ge_p, "GE")):
    lowering_rules[_prim] = _compare_lowering(_dir)


def _select_lowering(ctx: RuleContext, pred, on_true, on_false):
    pred, on_true, on_false = broadcast_to_result(ctx, [pred, on_true, on_false], ctx.avals_in,
                                                  ctx.avals_out[0], keep_scalar=(True,))
    return hlo("select", ctx.out_type(), pred, on_true, on_false)


lowering_rules[P.select_p] = _select_lowering
BF16_KEPT_PRIMITIVES.add(P.select_p)   # (it moves data)


def _convert_lowering(ctx: RuleContext, x, *, new_dtype, weak_type):
    src = ctx.avals_in[0]
    new_dtype = np.dtype(new_dtype)
    if src.dtype == new_dtype:
        return x
    if new_dtype == np.bool_:
        zero = _splat(ctx, 0, src, x)
        return _compare(ctx, x, zero, "NE", src)
    if src.dtype.kind == "c" and new_dtype.kind != "c":
        # The real part, then converted as a float is (saturating into integers, as JAX).
        src = src.update(dtype=np.float32 if src.dtype == np.complex64 else np.float64)
        x = hlo("real", tensor_type(src, ctx.dynamic), x)
        if src.dtype == new_dtype:
            return x
    if src.dtype == np.bool_:
        # IREE 3.13's data tiling sign-extends a converted i1 feeding a matmul (true -> -1,
        # e.g. jit(lambda x: jnp.eye(3) @ x)), or fails to compile it: select instead.
        out = ctx.avals_out[0]
        return hlo("select", ctx.out_type(), x, _splat(ctx, 1, out, x), _splat(ctx, 0, out, x))
    if src.dtype.kind == "f" and new_dtype.kind in "iu":
        return _saturating_convert(ctx, x, src, new_dtype)
    if src.dtype.kind in "iu" and new_dtype.kind in "iu" and \
            src.dtype.itemsize == new_dtype.itemsize:
        # Same bits. IREE 3.13 drops a signed<->unsigned convert of scalars in a while body
        # and then fails ("'arith.addi' op operand must be signless ... got 'ui32'"): fold_in
        # with a loop index hit it. The bit cast compiles.
        return hlo("bitcast_convert", ctx.out_type(), x)
    return hlo("convert", ctx.out_type(), x)


lowering_rules[P.convert_element_type_p] = _convert_lowering
VIEW_PRIMITIVES.add(P.convert_element_type_p)   # (of equal widths IREE may view the bits)


def _saturating_convert(ctx: RuleContext, x, aval: ShapedArray, int_dtype: np.dtype):
    """Float ``x`` converted to ``int_dtype`` as XLA's CPU code converts: NaN gives 0, values
    past the integer range its ends (jnp.array([300.0, -5.0]).astype(uint8) is [255, 0]),
    where the bare instruction wrapped or gave an arbitrary value."""
    info = np.iinfo(int_dtype)
    low, high = (_float_inside(info.min, aval.dtype, info), _float_inside(info.max, aval.dtype, info))
    t = ctx.type(aval)
    clamped = hlo("clamp", t, _splat(ctx, low, aval, x), x, _splat(ctx, high, aval, x))
    is_nan = _compare(ctx, x, x, "NE", aval)
    clamped = hlo("select", t, is_nan, _splat(ctx, 0, aval, x), clamped)
    out = ctx.avals_out[0]
    result = hlo("convert", ctx.out_type(), clamped)
    # Past the floats that convert exactly (2**31 - 1 is no float32; float16 ends at 65504):
    # the integer type's own ends.
    for direction, bound, end in (("GT", high, info.max), ("LT", low, info.min)):
        past = _compare(ctx, x, _splat(ctx, bound, aval, x), direction, aval)
        result = hlo("select", ctx.out_type(), past, _splat(ctx, end, out, result), result)
    return result


def _float_inside(value: int, dtype: np.dtype, info: np.iinfo):
    """The float of ``dtype`` nearest ``value`` on the side of zero that converts to an
    integer within ``info``'s range."""
    ftype = np.dtype(dtype).type
    with np.errstate(over="ignore"):
        f = ftype(value)
    if not np.isfinite(f):
        return ftype(np.sign(value) * np.finfo(dtype).max)
    if not info.min <= int(f) <= info.max:
        f = np.nextafter(f, ftype(0))
    return f


# -- derivatives ---------------------------------------------------------------------------------

defjvp(P.neg_p, lambda g, x: neg(g))


# (not's derivative is zero; exp, sin, ... are math_functions.py's.)
defjvp_zero(P.not_p)


defjvp(P.add_p, lambda g, x, y: g, lambda g, x, y: g)
defjvp(P.sub_p, lambda g, x, y: g, lambda g, x, y: neg(g))
defjvp(P.mul_p, lambda g, x, y: mul(g, y), lambda g, x, y: mul(x, g))
defjvp(P.div_p, lambda g, x, y: div(g, y),
       lambda g, x, y: neg(div(mul(g, x), mul(y, y))))


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
           P.shift_right_logical_p, P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p, P.ge_p):
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


# -- eager mode -----------------------------------------------------------------------------------

def _convert_eager(arrays, avals_in, avals_out, params):
    if avals_in[0].dtype != avals_out[0].dtype:
        return None   # (run flat, as every elementwise primitive)
    return [view(arrays[0], avals_out[0])]   # (a change of weak type only)


EAGER_RULES[P.convert_element_type_p] = _convert_eager
