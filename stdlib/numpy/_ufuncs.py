"""Elementwise functions of ``pyree.numpy`` (NumPy names, JAX promotion)."""
from __future__ import annotations

__all__ = [
    "abs", "absolute", "add", "arctan2", "around", "bitwise_and", "bitwise_not", "bitwise_or",
    "bitwise_xor", "cbrt", "ceil", "clip", "cos", "divide", "equal", "erf", "exp", "expm1",
    "floor", "floor_divide", "fmod", "greater", "greater_equal", "invert", "isfinite", "isinf",
    "isnan", "left_shift", "less", "less_equal", "log", "log1p", "logical_and", "logical_not",
    "logical_or", "logical_xor", "logistic", "maximum", "minimum", "mod", "multiply", "negative",
    "not_equal", "positive", "power", "reciprocal", "remainder", "right_shift", "rint", "round",
    "rsqrt", "sign", "sin", "sqrt", "square", "subtract", "tan", "tanh", "true_divide", "trunc",
    "where",
]

from typing import Any, Callable

import numpy as np

from pyree import dtypes, lax
from pyree.transpiler import primitives as P
from pyree.transpiler.trace import get_aval

from ._util import (PY_SCALARS, broadcast_operands, check_arraylike, convert,
                    promote_dtypes, promote_dtypes_inexact, promote_dtypes_numeric, typed_scalar)


def _doc(fn: Callable, summary: str, example: str) -> Callable:
    fn.__doc__ = f"{summary}\n\nExample::\n\n    {example}\n"
    return fn


def _unary(name: str, prim, promote=promote_dtypes_inexact, summary: str = "") -> Callable:
    def fn(x: Any) -> Any:
        check_arraylike(name, x)
        (x,) = promote(x)
        return prim.bind(x)
    fn.__name__ = name
    return _doc(fn, summary or f"Elementwise {name}.", f"jnp.{name}(x)")


def _binary(name: str, prim, promote=promote_dtypes, summary: str = "") -> Callable:
    def fn(x: Any, y: Any) -> Any:
        check_arraylike(name, x, y)
        x, y = promote(x, y)
        x, y = broadcast_operands(x, y)
        return prim.bind(x, y)
    fn.__name__ = name
    return _doc(fn, summary or f"Elementwise {name}, broadcasting.", f"jnp.{name}(x, y)")


exp = _unary("exp", P.exp_p)
log = _unary("log", P.log_p)
log1p = _unary("log1p", P.log1p_p)
expm1 = _unary("expm1", P.expm1_p)
sin = _unary("sin", P.sin_p)
cos = _unary("cos", P.cos_p)
tan = _unary("tan", P.tan_p)
tanh = _unary("tanh", P.tanh_p)
sqrt = _unary("sqrt", P.sqrt_p)
cbrt = _unary("cbrt", P.cbrt_p)
floor_ = _unary("floor", P.floor_p)
ceil_ = _unary("ceil", P.ceil_p)

def _bool_binary(name: str, prim, bool_prim) -> Callable:
    # On booleans add is OR and multiply is AND, keeping dtype bool (as NumPy and JAX do).
    def fn(x: Any, y: Any) -> Any:
        check_arraylike(name, x, y)
        x, y = promote_dtypes(x, y)
        x, y = broadcast_operands(x, y)
        return (bool_prim if get_aval(x).dtype == np.bool_ else prim).bind(x, y)
    fn.__name__ = name
    return _doc(fn, f"Elementwise {name}, broadcasting.", f"jnp.{name}(x, y)")


add = _bool_binary("add", P.add_p, P.or_p)
# Booleans are not promoted: subtracting them is a TypeError (as in NumPy and JAX).
subtract = _binary("subtract", P.sub_p)
multiply = _bool_binary("multiply", P.mul_p, P.and_p)
true_divide = _binary("true_divide", P.div_p, promote_dtypes_inexact)
divide = true_divide
arctan2 = _binary("arctan2", P.atan2_p, promote_dtypes_inexact)
maximum = _binary("maximum", P.max_p)
minimum = _binary("minimum", P.min_p)
equal = _binary("equal", P.eq_p)
not_equal = _binary("not_equal", P.ne_p)
less = _binary("less", P.lt_p)
less_equal = _binary("less_equal", P.le_p)
greater = _binary("greater", P.gt_p)
greater_equal = _binary("greater_equal", P.ge_p)
bitwise_and = _binary("bitwise_and", P.and_p)
bitwise_or = _binary("bitwise_or", P.or_p)
bitwise_xor = _binary("bitwise_xor", P.xor_p)
left_shift = _binary("left_shift", P.shift_left_p)


def floor(x: Any) -> Any:
    """Largest integer value <= x, elementwise (integers are returned unchanged).

    Example::

        jnp.floor(jnp.array([1.5, -1.5]))   # [ 1., -2.]
    """
    check_arraylike("floor", x)
    if get_aval(x).dtype.kind in "biu":
        return x
    return floor_(x)


def ceil(x: Any) -> Any:
    """Smallest integer value >= x, elementwise.

    Example::

        jnp.ceil(jnp.array([1.5, -1.5]))    # [ 2., -1.]
    """
    check_arraylike("ceil", x)
    if get_aval(x).dtype.kind in "biu":
        return x
    return ceil_(x)


def right_shift(x: Any, y: Any) -> Any:
    """``x >> y``: arithmetic for signed integers, logical for unsigned.

    Example::

        jnp.right_shift(jnp.array([8, -8]), 1)   # [ 4, -4]
    """
    check_arraylike("right_shift", x, y)
    x, y = promote_dtypes(x, y)
    x, y = broadcast_operands(x, y)
    prim = P.shift_right_logical_p if get_aval(x).dtype.kind == "u" else P.shift_right_arithmetic_p
    return prim.bind(x, y)


def _logical(name: str, prim) -> Callable:
    def fn(x: Any, y: Any) -> Any:
        check_arraylike(name, x, y)
        x, y = (convert(a, np.dtype(np.bool_)) for a in (x, y))
        x, y = broadcast_operands(x, y)
        return prim.bind(x, y)
    fn.__name__ = name
    return _doc(fn, f"Elementwise {name} of the truth values.", f"jnp.{name}(x > 0, y > 0)")


logical_and = _logical("logical_and", P.and_p)
logical_or = _logical("logical_or", P.or_p)
logical_xor = _logical("logical_xor", P.xor_p)


def logical_not(x: Any) -> Any:
    """Elementwise NOT of the truth values.

    Example::

        jnp.logical_not(x > 0)
    """
    check_arraylike("logical_not", x)
    return P.not_p.bind(convert(x, np.dtype(np.bool_)))


def invert(x: Any) -> Any:
    """Bitwise NOT (logical NOT for booleans).

    Example::

        jnp.invert(jnp.array([0, 1], jnp.int8))   # [-1, -2]
    """
    check_arraylike("invert", x)
    return P.not_p.bind(x)


bitwise_not = invert


def negative(x: Any) -> Any:
    """``-x`` elementwise.

    Example::

        jnp.negative(x)
    """
    check_arraylike("negative", x)
    if get_aval(x).dtype == np.bool_:
        raise TypeError("negative (unary -) is not supported for booleans; use logical_not")
    return P.neg_p.bind(x)


def positive(x: Any) -> Any:
    """``+x`` elementwise (a copy of ``x``).

    Example::

        jnp.positive(x)
    """
    check_arraylike("positive", x)
    return x


def absolute(x: Any) -> Any:
    """``|x|`` elementwise (booleans and unsigned integers are returned unchanged).

    Example::

        jnp.abs(jnp.array([-1.0, 2.0]))   # [1., 2.]
    """
    check_arraylike("absolute", x)
    if get_aval(x).dtype.kind in "bu":
        return x
    return P.abs_p.bind(x)


abs = absolute


def sign(x: Any) -> Any:
    """-1, 0 or 1 by the sign of each element.

    Example::

        jnp.sign(jnp.array([-2.0, 0.0, 3.0]))   # [-1., 0., 1.]
    """
    check_arraylike("sign", x)
    if get_aval(x).dtype == np.bool_:
        return x
    return P.sign_p.bind(x)


def square(x: Any) -> Any:
    """``x * x`` elementwise.

    Example::

        jnp.square(jnp.arange(3))   # [0, 1, 4]
    """
    check_arraylike("square", x)
    (x,) = promote_dtypes_numeric(x)
    return P.integer_pow_p.bind(x, y=2)


def reciprocal(x: Any) -> Any:
    """``1 / x`` elementwise.

    Example::

        jnp.reciprocal(jnp.array([2.0, 4.0]))   # [0.5, 0.25]
    """
    check_arraylike("reciprocal", x)
    (x,) = promote_dtypes_inexact(x)
    return P.integer_pow_p.bind(x, y=-1)


def rsqrt(x: Any) -> Any:
    """``1 / sqrt(x)`` elementwise (``jax.lax.rsqrt``).

    Example::

        jnp.rsqrt(jnp.array([4.0]))   # [0.5]
    """
    check_arraylike("rsqrt", x)
    (x,) = promote_dtypes_inexact(x)
    return P.rsqrt_p.bind(x)


def power(x: Any, y: Any) -> Any:
    """``x ** y`` elementwise. A static integer exponent uses repeated multiplication, so it is
    exact for integers and fast for floats.

    Example::

        jnp.power(jnp.arange(4), 2)    # [0, 1, 4, 9]
    """
    check_arraylike("power", x, y)
    if isinstance(y, int) and not isinstance(y, bool):
        (x,) = promote_dtypes_numeric(x) if get_aval(x).dtype == np.bool_ else (x,)
        if y < 0 and get_aval(x).dtype.kind in "iu":
            raise ValueError("Integers to negative integer powers are not allowed.")
        return P.integer_pow_p.bind(x, y=y)
    x, y = promote_dtypes_numeric(x, y)
    x, y = broadcast_operands(x, y)
    dtype = get_aval(x).dtype
    if dtype.kind in "iu":
        return _integer_power(x, y, dtype)
    return P.pow_p.bind(x, y)


def _integer_power(x: Any, y: Any, dtype: np.dtype) -> Any:
    # Square-and-multiply over the exponent's bits (negative exponents give 0, except for base
    # 1 and -1, as integer division would).
    bits = 8 * dtype.itemsize
    one = typed_scalar(1, dtype)
    acc, base = one, x  # rank-0 operands broadcast inside the primitives
    for bit in range(bits - (1 if dtype.kind == "i" else 0)):
        mask = typed_scalar(1 << bit, dtype)
        on = P.ne_p.bind(P.and_p.bind(y, mask), typed_scalar(0, dtype))
        acc = P.select_p.bind(on, P.mul_p.bind(acc, base), acc)
        base = P.mul_p.bind(base, base)
    if dtype.kind == "i":
        negative_exp = P.lt_p.bind(y, typed_scalar(0, dtype))
        abs_x_is_one = P.eq_p.bind(P.abs_p.bind(x), one)
        inverse = P.select_p.bind(abs_x_is_one, P.select_p.bind(
            P.eq_p.bind(P.and_p.bind(y, one), one), x, one), typed_scalar(0, dtype))
        acc = P.select_p.bind(negative_exp, inverse, acc)
    return acc


def floor_divide(x: Any, y: Any) -> Any:
    """``x // y``: the quotient rounded towards minus infinity (NumPy semantics).

    Example::

        jnp.floor_divide(jnp.array([7, -7]), 2)   # [ 3, -4]
    """
    check_arraylike("floor_divide", x, y)
    x, y = promote_dtypes_numeric(x, y)
    x, y = broadcast_operands(x, y)
    dtype = get_aval(x).dtype
    if dtype.kind == "u":
        return P.div_p.bind(x, y)
    if dtype.kind == "i":
        q = P.div_p.bind(x, y)
        r = P.rem_p.bind(x, y)
        zero = typed_scalar(0, dtype)
        signs_differ = P.ne_p.bind(P.lt_p.bind(x, zero), P.lt_p.bind(y, zero))
        adjust = P.and_p.bind(signs_differ, P.ne_p.bind(r, zero))
        return P.select_p.bind(adjust, P.sub_p.bind(q, typed_scalar(1, dtype)), q)
    return _float_divmod(x, y)[0]


def _float_divmod(x: Any, y: Any) -> tuple:
    dtype = get_aval(x).dtype
    zero = typed_scalar(0, dtype)
    mod = P.rem_p.bind(x, y)
    div = P.div_p.bind(P.sub_p.bind(x, mod), y)
    fix = P.and_p.bind(P.ne_p.bind(mod, zero),
                       P.ne_p.bind(P.lt_p.bind(y, zero), P.lt_p.bind(mod, zero)))
    mod = P.select_p.bind(fix, P.add_p.bind(mod, y), mod)
    div = P.select_p.bind(fix, P.sub_p.bind(div, typed_scalar(1, dtype)), div)
    return P.round_p.bind(div, rounding_method=1), mod


def remainder(x: Any, y: Any) -> Any:
    """``x % y`` with the sign of ``y`` (NumPy's ``mod``).

    Example::

        jnp.remainder(jnp.array([7, -7]), 3)   # [1, 2]
    """
    check_arraylike("remainder", x, y)
    x, y = promote_dtypes_numeric(x, y)
    x, y = broadcast_operands(x, y)
    dtype = get_aval(x).dtype
    if dtype.kind == "f" or dtype == dtypes.bfloat16:
        return _float_divmod(x, y)[1]
    r = P.rem_p.bind(x, y)
    if dtype.kind == "u":
        return r
    zero = typed_scalar(0, dtype)
    fix = P.and_p.bind(P.ne_p.bind(r, zero), P.ne_p.bind(P.lt_p.bind(r, zero),
                                                         P.lt_p.bind(y, zero)))
    return P.select_p.bind(fix, P.add_p.bind(r, y), r)


mod = remainder


def fmod(x: Any, y: Any) -> Any:
    """``x % y`` with the sign of ``x`` (C's fmod, ``jax.lax.rem``).

    Example::

        jnp.fmod(jnp.array([7, -7]), 3)   # [ 1, -1]
    """
    check_arraylike("fmod", x, y)
    x, y = promote_dtypes_numeric(x, y)
    x, y = broadcast_operands(x, y)
    return P.rem_p.bind(x, y)


def round(x: Any, decimals: int = 0) -> Any:
    """Round half to even, to ``decimals`` places (NumPy's ``round``).

    Example::

        jnp.round(jnp.array([0.5, 1.5, 2.25]), 1)   # [0.5, 1.5, 2.2]
    """
    check_arraylike("round", x)
    dtype = get_aval(x).dtype
    if dtype.kind in "biu":
        if decimals >= 0:
            return x
        # Weakly typed factors: the result keeps the weak type of x.
        factor = typed_scalar(10 ** (-decimals), dtype, weak_type=True)
        return multiply(convert(round(true_divide(x, factor)), dtype), factor)
    if decimals == 0:
        return P.round_p.bind(x, rounding_method=1)
    factor = typed_scalar(10.0 ** decimals, dtype, weak_type=True)
    scaled = P.round_p.bind(P.mul_p.bind(x, factor), rounding_method=1)
    return P.div_p.bind(scaled, factor)


around = round


def rint(x: Any) -> Any:
    """Round to the nearest integer value, ties to even.

    Example::

        jnp.rint(jnp.array([0.5, 1.5]))   # [0., 2.]
    """
    check_arraylike("rint", x)
    (x,) = promote_dtypes_inexact(x)
    return P.round_p.bind(x, rounding_method=1)


def trunc(x: Any) -> Any:
    """Round towards zero.

    Example::

        jnp.trunc(jnp.array([-1.7, 1.7]))   # [-1., 1.]
    """
    check_arraylike("trunc", x)
    if get_aval(x).dtype.kind in "biu":
        return x
    zero = typed_scalar(0, get_aval(x).dtype)
    return P.select_p.bind(P.lt_p.bind(x, zero), P.ceil_p.bind(x), P.floor_p.bind(x))


def isfinite(x: Any) -> Any:
    """True where ``x`` is neither infinite nor NaN.

    Example::

        jnp.isfinite(jnp.array([1.0, jnp.inf, jnp.nan]))   # [ True, False, False]
    """
    check_arraylike("isfinite", x)
    aval = get_aval(x)
    if aval.dtype.kind in "biu":
        return lax.full(aval.shape, True, np.bool_)
    return P.is_finite_p.bind(x)


def isnan(x: Any) -> Any:
    """True where ``x`` is NaN.

    Example::

        jnp.isnan(jnp.array([1.0, jnp.nan]))   # [False,  True]
    """
    check_arraylike("isnan", x)
    aval = get_aval(x)
    if aval.dtype.kind in "biu":
        return lax.full(aval.shape, False, np.bool_)
    return P.ne_p.bind(x, x)


def isinf(x: Any) -> Any:
    """True where ``x`` is +inf or -inf.

    Example::

        jnp.isinf(jnp.array([1.0, -jnp.inf]))   # [False,  True]
    """
    check_arraylike("isinf", x)
    aval = get_aval(x)
    if aval.dtype.kind in "biu":
        return lax.full(aval.shape, False, np.bool_)
    inf = typed_scalar(np.inf, aval.dtype)
    return P.eq_p.bind(P.abs_p.bind(x), inf)


def where(condition: Any, x: Any = None, y: Any = None) -> Any:
    """Elementwise ``x if condition else y``, broadcasting all three.

    Example::

        jnp.where(x > 0, x, 0.0)
    """
    if x is None or y is None:
        raise TypeError("pyree.numpy.where needs three arguments (condition, x, y); the "
                        "one-argument form is jnp.nonzero")
    check_arraylike("where", condition, x, y)
    condition = convert(condition, np.dtype(np.bool_))
    x, y = promote_dtypes(x, y)
    condition, x, y = broadcast_operands(condition, x, y)
    return P.select_p.bind(condition, x, y)


def clip(a: Any, min: Any = None, max: Any = None, **legacy: Any) -> Any:
    """Limit values to ``[min, max]`` (either may be None).

    Example::

        jnp.clip(x, 0.0, 1.0)
    """
    min = legacy.pop("a_min", min)
    max = legacy.pop("a_max", max)
    if legacy:
        raise TypeError(f"clip got unexpected arguments {sorted(legacy)}")
    check_arraylike("clip", a)
    if min is not None:
        a = maximum(a, min)
    if max is not None:
        a = minimum(a, max)
    return a


def logistic(x: Any) -> Any:
    """``1 / (1 + exp(-x))`` (``jax.nn.sigmoid``, ``jax.lax.logistic``).

    Example::

        jnp.logistic(jnp.array([0.0]))   # [0.5]
    """
    check_arraylike("logistic", x)
    (x,) = promote_dtypes_inexact(x)
    return P.logistic_p.bind(x)


def erf(x: Any) -> Any:
    """The error function (``jax.scipy.special.erf``, ``jax.lax.erf``).

    Example::

        jnp.erf(jnp.array([0.0, 1.0]))   # [0., 0.8427]
    """
    check_arraylike("erf", x)
    (x,) = promote_dtypes_inexact(x)
    return P.erf_p.bind(x)
