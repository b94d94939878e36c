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
    "bitwise_count", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift", "i0",
    "select",
    # elementwise math beyond the basics
    "acos", "acosh", "allclose", "angle", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctanh", "array_equal", "array_equiv", "asin", "asinh", "atan", "atan2", "atanh", "conj",
    "conjugate", "copysign", "cosh", "deg2rad", "degrees", "divmod", "exp2", "fabs",
    "float_power", "fmax", "fmin", "frexp", "gcd", "heaviside", "hypot", "imag", "iscomplex",
    "isclose", "isneginf", "isposinf", "isreal", "lcm", "ldexp", "log10", "log2", "logaddexp",
    "logaddexp2", "modf", "nan_to_num", "nextafter", "pow", "rad2deg", "radians", "real",
    "signbit", "sinc", "sinh", "spacing",
]

import functools
from typing import Any, Callable, Optional

import numpy as np

from pyree import dtypes, lax
from pyree.runtime.array import Array
from pyree.transpiler.programs.jit import compiled_when_hot
from pyree.transpiler.core.trace import get_aval

from ._util import (broadcast_operands, check_arraylike, convert,
                    promote_dtypes, promote_dtypes_inexact, promote_dtypes_numeric, typed_scalar)


def _doc(fn: Callable, summary: str, example: str) -> Callable:
    fn.__doc__ = f"{summary}\n\nExample::\n\n    {example}\n"
    return fn


def _unary(name: str, op: Callable, promote=promote_dtypes_inexact, summary: str = "",
           example: str = "") -> Callable:
    """The ufunc ``name``: its operand checked and promoted, then the lax function ``op``."""
    def fn(x: Any) -> Any:
        check_arraylike(name, x)
        (x,) = promote(x)
        return op(x)
    fn.__name__ = name
    return _doc(fn, summary or f"Elementwise {name}.", example or f"jnp.{name}(x)")


def _broadcasts_compiled_when_hot(fn: Callable) -> Callable:
    """``fn``, a binary ufunc, as one compiled program for eager Array operands of different
    shapes once their signature is hot (jit.compiled_when_hot): op by op, the broadcast runs
    as a kernel of its own, writing the whole broadcast operand out (``x - x.mean(0)`` of a
    10,000 x 10 array: two kernels of ~50 and ~70 us)."""
    hot = compiled_when_hot()(fn)

    @functools.wraps(fn)
    def ufunc(x: Any, y: Any) -> Any:
        if (type(x) is Array and type(y) is Array and x.aval.shape != y.aval.shape
                and x.aval.shape and y.aval.shape):
            return hot(x, y)
        return fn(x, y)
    return ufunc


def _binary(name: str, op: Callable, promote=promote_dtypes, summary: str = "") -> Callable:
    """The ufunc ``name``: its operands checked, promoted and broadcast, then the lax function
    ``op``."""
    def fn(x: Any, y: Any) -> Any:
        check_arraylike(name, x, y)
        x, y = promote(x, y)
        x, y = broadcast_operands(x, y, op=name)
        return op(x, y)
    fn.__name__ = name
    return _broadcasts_compiled_when_hot(
        _doc(fn, summary or f"Elementwise {name}, broadcasting.", f"jnp.{name}(x, y)"))


exp = _unary("exp", lax.exp)
log = _unary("log", lax.log)
log1p = _unary("log1p", lax.log1p)
expm1 = _unary("expm1", lax.expm1)
sin = _unary("sin", lax.sin)
cos = _unary("cos", lax.cos)
tan = _unary("tan", lax.tan)
tanh = _unary("tanh", lax.tanh)
sqrt = _unary("sqrt", lax.sqrt)
cbrt = _unary("cbrt", lax.cbrt)
floor_ = _unary("floor", lax.floor)
ceil_ = _unary("ceil", lax.ceil)

def _bool_binary(name: str, op: Callable, bool_op: Callable) -> Callable:
    # On booleans add is OR and multiply is AND, keeping dtype bool (as NumPy and JAX do).
    def fn(x: Any, y: Any) -> Any:
        check_arraylike(name, x, y)
        x, y = promote_dtypes(x, y)
        x, y = broadcast_operands(x, y, op=name)
        return (bool_op if get_aval(x).dtype == np.bool_ else op)(x, y)
    fn.__name__ = name
    return _broadcasts_compiled_when_hot(
        _doc(fn, f"Elementwise {name}, broadcasting.", f"jnp.{name}(x, y)"))


add = _bool_binary("add", lax.add, lax.bitwise_or)
# Booleans are not promoted: subtracting them is a TypeError (as in NumPy and JAX).
subtract = _binary("subtract", lax.sub)
multiply = _bool_binary("multiply", lax.mul, lax.bitwise_and)
true_divide = _binary("true_divide", lax.div, promote_dtypes_inexact)
divide = true_divide
arctan2 = _binary("arctan2", lax.atan2, promote_dtypes_inexact)
maximum = _binary("maximum", lax.max)
minimum = _binary("minimum", lax.min)
equal = _binary("equal", lax.eq)
not_equal = _binary("not_equal", lax.ne)
less = _binary("less", lax.lt)
less_equal = _binary("less_equal", lax.le)
greater = _binary("greater", lax.gt)
greater_equal = _binary("greater_equal", lax.ge)
bitwise_and = _binary("bitwise_and", lax.bitwise_and)
bitwise_or = _binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)
left_shift = _binary("left_shift", lax.shift_left)


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
    x, y = broadcast_operands(x, y, op="right_shift")
    shift = lax.shift_right_logical if get_aval(x).dtype.kind == "u" else lax.shift_right_arithmetic
    return shift(x, y)


def _logical(name: str, op: Callable) -> Callable:
    def fn(x: Any, y: Any) -> Any:
        check_arraylike(name, x, y)
        x, y = (convert(a, np.dtype(np.bool_)) for a in (x, y))
        x, y = broadcast_operands(x, y, op=name)
        return op(x, y)
    fn.__name__ = name
    return _doc(fn, f"Elementwise {name} of the truth values.", f"jnp.{name}(x > 0, y > 0)")


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


def logical_not(x: Any) -> Any:
    """Elementwise NOT of the truth values.

    Example::

        jnp.logical_not(x > 0)
    """
    check_arraylike("logical_not", x)
    return lax.bitwise_not(convert(x, np.dtype(np.bool_)))


def invert(x: Any) -> Any:
    """Bitwise NOT (logical NOT for booleans).

    Example::

        jnp.invert(jnp.array([0, 1], jnp.int8))   # [-1, -2]
    """
    check_arraylike("invert", x)
    return lax.bitwise_not(x)


bitwise_not = invert


def negative(x: Any) -> Any:
    """``-x`` elementwise.

    Example::

        jnp.negative(x)
    """
    check_arraylike("negative", x)
    if get_aval(x).dtype == np.bool_:
        raise TypeError("negative (unary -) is not supported for booleans; use logical_not")
    return lax.neg(x)


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
    return lax.abs(x)


abs = absolute


def sign(x: Any) -> Any:
    """-1, 0 or 1 by the sign of each element.

    Example::

        jnp.sign(jnp.array([-2.0, 0.0, 3.0]))   # [-1., 0., 1.]
    """
    check_arraylike("sign", x)
    if get_aval(x).dtype == np.bool_:
        return x
    return lax.sign(x)


def square(x: Any) -> Any:
    """``x * x`` elementwise.

    Example::

        jnp.square(jnp.arange(3))   # [0, 1, 4]
    """
    check_arraylike("square", x)
    (x,) = promote_dtypes_numeric(x)
    return lax.integer_pow(x, y=2)


def reciprocal(x: Any) -> Any:
    """``1 / x`` elementwise.

    Example::

        jnp.reciprocal(jnp.array([2.0, 4.0]))   # [0.5, 0.25]
    """
    check_arraylike("reciprocal", x)
    (x,) = promote_dtypes_inexact(x)
    return lax.integer_pow(x, y=-1)


def rsqrt(x: Any) -> Any:
    """``1 / sqrt(x)`` elementwise (``jax.lax.rsqrt``).

    Example::

        jnp.rsqrt(jnp.array([4.0]))   # [0.5]
    """
    check_arraylike("rsqrt", x)
    (x,) = promote_dtypes_inexact(x)
    return lax.rsqrt(x)


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
        return lax.integer_pow(x, y=y)
    x, y = promote_dtypes_numeric(x, y)
    x, y = broadcast_operands(x, y, op="power")
    dtype = get_aval(x).dtype
    if dtype.kind in "iu":
        return _integer_power(x, y, dtype)
    return lax.pow(x, y)


def _integer_power(x: Any, y: Any, dtype: np.dtype) -> Any:
    # Square-and-multiply over the exponent's bits (negative exponents give 0, except for base
    # 1 and -1, as integer division would).
    bits = 8 * dtype.itemsize
    one = typed_scalar(1, dtype)
    acc, base = one, x  # rank-0 operands broadcast inside the primitives
    for bit in range(bits - (1 if dtype.kind == "i" else 0)):
        mask = typed_scalar(1 << bit, dtype)
        on = lax.ne(lax.bitwise_and(y, mask), typed_scalar(0, dtype))
        acc = lax.select(on, lax.mul(acc, base), acc)
        base = lax.mul(base, base)
    if dtype.kind == "i":
        negative_exp = lax.lt(y, typed_scalar(0, dtype))
        abs_x_is_one = lax.eq(lax.abs(x), one)
        inverse = lax.select(abs_x_is_one, lax.select(
            lax.eq(lax.bitwise_and(y, one), one), x, one), typed_scalar(0, dtype))
        acc = lax.select(negative_exp, inverse, acc)
    return acc


def floor_divide(x: Any, y: Any) -> Any:
    """``x // y``: the quotient rounded towards minus infinity (NumPy semantics).

    Example::

        jnp.floor_divide(jnp.array([7, -7]), 2)   # [ 3, -4]
    """
    check_arraylike("floor_divide", x, y)
    x, y = promote_dtypes_numeric(x, y)
    x, y = broadcast_operands(x, y, op="floor_divide")
    dtype = get_aval(x).dtype
    if dtype.kind == "u":
        return lax.div(x, y)
    if dtype.kind == "i":
        q = lax.div(x, y)
        r = lax.rem(x, y)
        zero = typed_scalar(0, dtype)
        signs_differ = lax.ne(lax.lt(x, zero), lax.lt(y, zero))
        adjust = lax.bitwise_and(signs_differ, lax.ne(r, zero))
        return lax.select(adjust, lax.sub(q, typed_scalar(1, dtype)), q)
    # Dividing by zero gives what x / 0 gives (inf, -inf, nan), as NumPy and JAX do; the
    # remainder-based quotient would be nan.
    by_zero = lax.eq(y, typed_scalar(0, dtype))
    return lax.select(by_zero, lax.div(x, y), _float_divmod(x, y)[0])


def _float_divmod(x: Any, y: Any) -> tuple:
    dtype = get_aval(x).dtype
    zero = typed_scalar(0, dtype)
    mod = lax.rem(x, y)
    div = lax.div(lax.sub(x, mod), y)
    fix = lax.bitwise_and(lax.ne(mod, zero),
                          lax.ne(lax.lt(y, zero), lax.lt(mod, zero)))
    mod = lax.select(fix, lax.add(mod, y), mod)
    div = lax.select(fix, lax.sub(div, typed_scalar(1, dtype)), div)
    return lax.round(div, rounding_method=1), mod


def remainder(x: Any, y: Any) -> Any:
    """``x % y`` with the sign of ``y`` (NumPy's ``mod``).

    Example::

        jnp.remainder(jnp.array([7, -7]), 3)   # [1, 2]
    """
    check_arraylike("remainder", x, y)
    x, y = promote_dtypes_numeric(x, y)
    x, y = broadcast_operands(x, y, op="remainder")
    dtype = get_aval(x).dtype
    if dtype.kind == "f" or dtype == dtypes.bfloat16:
        return _float_divmod(x, y)[1]
    r = lax.rem(x, y)
    if dtype.kind == "u":
        return r
    zero = typed_scalar(0, dtype)
    fix = lax.bitwise_and(lax.ne(r, zero), lax.ne(lax.lt(r, zero),
                                                  lax.lt(y, zero)))
    return lax.select(fix, lax.add(r, y), r)


mod = remainder


def fmod(x: Any, y: Any) -> Any:
    """``x % y`` with the sign of ``x`` (C's fmod, ``jax.lax.rem``).

    Example::

        jnp.fmod(jnp.array([7, -7]), 3)   # [ 1, -1]
    """
    check_arraylike("fmod", x, y)
    x, y = promote_dtypes_numeric(x, y)
    x, y = broadcast_operands(x, y, op="fmod")
    return lax.rem(x, y)


def round(x: Any, decimals: int = 0) -> Any:
    """Round half to even, to ``decimals`` places (NumPy's ``round``; complex numbers round
    their real and imaginary parts).

    Example::

        jnp.round(jnp.array([0.5, 1.5, 2.25]), 1)   # [0.5, 1.5, 2.2]
    """
    check_arraylike("round", x)
    dtype = get_aval(x).dtype
    if dtype.kind == "c":
        # Real and imaginary parts round separately (as NumPy and JAX).
        return lax.complex(round(real(x), decimals), round(imag(x), decimals))
    if dtype.kind in "biu":
        if decimals >= 0:
            return x
        # Weakly typed factors: the result keeps the weak type of x.
        factor = typed_scalar(10 ** (-decimals), dtype, weak_type=True)
        return multiply(convert(round(true_divide(x, factor)), dtype), factor)
    if decimals == 0:
        return lax.round(x, rounding_method=1)
    factor = typed_scalar(10.0 ** decimals, dtype, weak_type=True)
    scaled = lax.round(lax.mul(x, factor), rounding_method=1)
    return lax.div(scaled, factor)


around = round


def rint(x: Any) -> Any:
    """Round to the nearest integer value, ties to even.

    Example::

        jnp.rint(jnp.array([0.5, 1.5]))   # [0., 2.]
    """
    check_arraylike("rint", x)
    (x,) = promote_dtypes_inexact(x)
    return lax.round(x, rounding_method=1)


def trunc(x: Any) -> Any:
    """Round towards zero.

    Example::

        jnp.trunc(jnp.array([-1.7, 1.7]))   # [-1., 1.]
    """
    check_arraylike("trunc", x)
    if get_aval(x).dtype.kind in "biu":
        return x
    zero = typed_scalar(0, get_aval(x).dtype)
    return lax.select(lax.lt(x, zero), lax.ceil(x), lax.floor(x))


def isfinite(x: Any) -> Any:
    """True where ``x`` is neither infinite nor NaN.

    Example::

        jnp.isfinite(jnp.array([1.0, jnp.inf, jnp.nan]))   # [ True, False, False]
    """
    check_arraylike("isfinite", x)
    aval = get_aval(x)
    if aval.dtype.kind in "biu":
        return lax.full(aval.shape, True, np.bool_)
    return lax.is_finite(x)


def isnan(x: Any) -> Any:
    """True where ``x`` is NaN.

    Example::

        jnp.isnan(jnp.array([1.0, jnp.nan]))   # [False,  True]
    """
    check_arraylike("isnan", x)
    aval = get_aval(x)
    if aval.dtype.kind in "biu":
        return lax.full(aval.shape, False, np.bool_)
    return lax.ne(x, x)


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
    return lax.eq(lax.abs(x), inf)


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
    condition, x, y = broadcast_operands(condition, x, y, error=ValueError)
    return lax.select(condition, x, y)


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
    return lax.logistic(x)


def erf(x: Any) -> Any:
    """The error function (``jax.scipy.special.erf``, ``jax.lax.erf``).

    Example::

        jnp.erf(jnp.array([0.0, 1.0]))   # [0., 0.8427]
    """
    check_arraylike("erf", x)
    (x,) = promote_dtypes_inexact(x)
    return lax.erf(x)


# -- more elementwise math (inverse trigonometric, hyperbolic, exponentials, float bits) -------

def _real_inexact(name: str, *args: Any) -> list:
    """Arguments promoted to their common inexact dtype, which must be real: these
    compositions do not cover complex numbers yet."""
    check_arraylike(name, *args)
    args = promote_dtypes_inexact(*args)
    dtype = get_aval(args[0]).dtype
    if dtype.kind == "c":
        raise TypeError(f"jnp.{name} does not support complex inputs in pyree yet (got "
                        f"{dtype.name}){_where_loc()}")
    return list(broadcast_operands(*args)) if len(args) > 1 else args


def _where_loc() -> str:
    from pyree.transpiler.core.source import where as _where
    return _where(None)


def _inexact_unary(name: str, lax_fn: Callable, summary: str, example: str) -> Callable:
    return _unary(name, lax_fn, summary=summary, example=example)


exp2 = _inexact_unary("exp2", lax.exp2, "``2 ** x`` elementwise (exact for integer x).",
                      "jnp.exp2(jnp.array([3.0, 0.5]))   # [8., 1.4142135]")
arcsin = _inexact_unary("arcsin", lax.asin, "Inverse sine, elementwise; NaN outside [-1, 1].",
                        "jnp.arcsin(jnp.array([1.0]))   # [1.5707964]")
arccos = _inexact_unary("arccos", lax.acos, "Inverse cosine, elementwise; NaN outside [-1, 1].",
                        "jnp.arccos(jnp.array([-1.0]))   # [3.1415927]")
arctan = _inexact_unary("arctan", lax.atan, "Inverse tangent, elementwise.",
                        "jnp.arctan(jnp.array([1.0]))   # [0.7853982]")
sinh = _inexact_unary("sinh", lax.sinh, "Hyperbolic sine, elementwise.",
                      "jnp.sinh(jnp.array([1.0]))   # [1.1752012]")
cosh = _inexact_unary("cosh", lax.cosh, "Hyperbolic cosine, elementwise.",
                      "jnp.cosh(jnp.array([1.0]))   # [1.5430806]")
arcsinh = _inexact_unary("arcsinh", lax.asinh, "Inverse hyperbolic sine, elementwise.",
                         "jnp.arcsinh(jnp.array([1.0]))   # [0.8813736]")
arccosh = _inexact_unary("arccosh", lax.acosh,
                         "Inverse hyperbolic cosine, elementwise; NaN below 1.",
                         "jnp.arccosh(jnp.array([2.0]))   # [1.316958]")
arctanh = _inexact_unary("arctanh", lax.atanh,
                         "Inverse hyperbolic tangent, elementwise; +-inf at +-1.",
                         "jnp.arctanh(jnp.array([0.5]))   # [0.5493061]")
# NumPy 2's names.
asin, acos, atan = arcsin, arccos, arctan
asinh, acosh, atanh = arcsinh, arccosh, arctanh
atan2 = arctan2
pow = power


def _scaled_log(name: str, log_base: float, example: str) -> Callable:
    def fn(x: Any) -> Any:
        check_arraylike(name, x)
        (x,) = promote_dtypes_inexact(x)
        # Dividing by the rounded log(base) makes exact powers of the base come out exact.
        return lax.div(lax.log(x), typed_scalar(log_base, get_aval(x).dtype))
    fn.__name__ = name
    return _doc(fn, f"Base-{name[3:]} logarithm, elementwise.", example)


log2 = _scaled_log("log2", np.log(2), "jnp.log2(jnp.array([8.0]))   # [3.]")
log10 = _scaled_log("log10", np.log(10), "jnp.log10(jnp.array([100.0]))   # [2.]")


def _scaled(name: str, factor: float, summary: str, example: str) -> Callable:
    def fn(x: Any) -> Any:
        check_arraylike(name, x)
        (x,) = promote_dtypes_inexact(x)
        return lax.mul(x, typed_scalar(factor, get_aval(x).dtype))
    fn.__name__ = name
    return _doc(fn, summary, example)


deg2rad = _scaled("deg2rad", np.pi / 180, "Degrees to radians.",
                  "jnp.deg2rad(jnp.array([180.0]))   # [3.1415927]")
rad2deg = _scaled("rad2deg", 180 / np.pi, "Radians to degrees.",
                  "jnp.rad2deg(jnp.array([jnp.pi]))   # [180.]")
radians, degrees = deg2rad, rad2deg


def _full_bool(x: Any, value: bool) -> Any:
    return lax.full(get_aval(x).shape, value, np.bool_)


def signbit(x: Any) -> Any:
    """True where the sign bit is set (including -0.0); for integers, ``x < 0``.

    Example::

        jnp.signbit(jnp.array([-1.0, -0.0, 0.0]))   # [ True,  True, False]
    """
    check_arraylike("signbit", x)
    dtype = get_aval(x).dtype
    if dtype == np.bool_ or dtype.kind == "u":
        return _full_bool(x, False)
    if dtype.kind == "i":
        return lax.lt(x, typed_scalar(0, dtype))
    if dtype.kind == "c":
        raise TypeError(f"jnp.signbit does not support complex inputs{_where_loc()}")
    from pyree._lax_special import sign_bit
    return sign_bit(x)


def copysign(x1: Any, x2: Any) -> Any:
    """``|x1|`` with the sign of ``x2`` (its sign bit: -0.0 counts as negative).

    Example::

        jnp.copysign(jnp.array([1.0, 2.0]), jnp.array([-0.0, 3.0]))   # [-1.,  2.]
    """
    x1, x2 = _real_inexact("copysign", x1, x2)
    from pyree._lax_special import sign_bit
    magnitude = lax.abs(x1)
    return lax.select(sign_bit(x2), lax.neg(magnitude), magnitude)


def fabs(x: Any) -> Any:
    """``|x|`` as a float (integers are promoted).

    Example::

        jnp.fabs(jnp.array([-2, 3]))   # [2., 3.]
    """
    (x,) = _real_inexact("fabs", x)
    return lax.abs(x)


def float_power(x: Any, y: Any) -> Any:
    """``x ** y`` in the inexact type of the operands (float32 for integers unless x64 is on).

    Example::

        jnp.float_power(jnp.array([2, 4]), -1)   # [0.5 , 0.25]
    """
    check_arraylike("float_power", x, y)
    x, y = promote_dtypes_inexact(x, y)
    x, y = broadcast_operands(x, y, op="float_power")
    return lax.pow(x, y)


def hypot(x1: Any, x2: Any) -> Any:
    """``sqrt(x1**2 + x2**2)`` without intermediate overflow or underflow.

    Example::

        jnp.hypot(jnp.array([3.0, 3e30]), jnp.array([4.0, 4e30]))   # [5., 5e30]
    """
    x1, x2 = _real_inexact("hypot", x1, x2)
    a, b = lax.abs(x1), lax.abs(x2)
    big, small = lax.max(a, b), lax.min(a, b)
    dtype = get_aval(big).dtype
    zero, one = typed_scalar(0, dtype), typed_scalar(1, dtype)
    # big * sqrt(1 + (small/big)**2); big == 0 gives 0 (a safe divisor keeps gradients finite).
    safe_big = lax.select(lax.eq(big, zero), _ones_like(big), big)
    ratio = lax.div(small, safe_big)
    result = lax.mul(big, lax.sqrt(lax.add(one, lax.mul(ratio, ratio))))
    inf = typed_scalar(np.inf, dtype)
    # An infinite operand gives inf, even with a NaN one (C99).
    return lax.select(lax.bitwise_or(lax.eq(a, inf), lax.eq(b, inf)),
                      _full_like(result, np.inf), result)


def _ones_like(x: Any) -> Any:
    return _full_like(x, 1)


def _full_like(x: Any, value: Any) -> Any:
    aval = get_aval(x)
    return lax.full(aval.shape, typed_scalar(value, aval.dtype, aval.weak_type))


def logaddexp(x1: Any, x2: Any) -> Any:
    """``log(exp(x1) + exp(x2))`` without overflow.

    Example::

        jnp.logaddexp(jnp.array([0.0]), jnp.array([0.0]))   # [0.6931472]
    """
    x1, x2 = _real_inexact("logaddexp", x1, x2)
    return _logaddexp_base(x1, x2, lax.exp, None)


def logaddexp2(x1: Any, x2: Any) -> Any:
    """``log2(2**x1 + 2**x2)`` without overflow.

    Example::

        jnp.logaddexp2(jnp.array([1.0]), jnp.array([1.0]))   # [2.]
    """
    x1, x2 = _real_inexact("logaddexp2", x1, x2)
    return _logaddexp_base(x1, x2, lax.exp2, np.log(2))


def _logaddexp_base(x1: Any, x2: Any, exp_fn: Callable, log_base: Optional[float]) -> Any:
    dtype = get_aval(x1).dtype
    biggest = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    # delta is NaN for two infinities of one sign (and for NaNs): then x1 + x2 is right.
    nan_delta = lax.ne(delta, delta)
    safe_delta = lax.select(nan_delta, _full_like(delta, 0), delta)
    # |delta| as delta * sign(delta): its slope at a tie is 0, so that with max's even split
    # both slopes are 1/2 there, as JAX's (abs's slope at 0 is 1).
    magnitude = lax.mul(safe_delta, lax.sign(safe_delta))
    correction = lax.log1p(exp_fn(lax.neg(magnitude)))
    if log_base is not None:  # divided, so that logaddexp2(x, x) is exactly x + 1
        correction = lax.div(correction, typed_scalar(log_base, dtype))
    return lax.select(nan_delta, lax.add(x1, x2), lax.add(biggest, correction))


# Maclaurin series of sinc to degree 8: used at x == 0 so that derivatives of every order up
# to 8 are right there (sin(pi x) / (pi x) has none at 0).
_SINC_SERIES = tuple((-1) ** k * np.pi ** (2 * k) / float(np.prod(np.arange(1, 2 * k + 2)))
                     for k in range(5))


def sinc(x: Any) -> Any:
    """``sin(pi x) / (pi x)``, 1 at 0 (NumPy's normalized sinc).

    Example::

        jnp.sinc(jnp.array([0.0, 0.5]))   # [1., 0.63661975]
    """
    (x,) = _real_inexact("sinc", x)
    dtype = get_aval(x).dtype
    is_zero = lax.eq(x, typed_scalar(0, dtype))
    safe = lax.select(is_zero, _ones_like(x), x)
    pi_x = lax.mul(safe, typed_scalar(np.pi, dtype))
    ratio = lax.div(lax.sin(pi_x), pi_x)
    x2 = lax.mul(x, x)
    series = typed_scalar(_SINC_SERIES[-1], dtype)
    for c in reversed(_SINC_SERIES[:-1]):
        series = lax.add(lax.mul(series, x2), typed_scalar(c, dtype))
    return lax.select(is_zero, series, ratio)


def heaviside(x1: Any, x2: Any) -> Any:
    """The Heaviside step: 0 where ``x1 < 0``, ``x2`` where ``x1 == 0``, 1 where ``x1 > 0``.

    Example::

        jnp.heaviside(jnp.array([-1.0, 0.0, 2.0]), 0.5)   # [0. , 0.5, 1. ]
    """
    x1, x2 = _real_inexact("heaviside", x1, x2)
    dtype = get_aval(x1).dtype
    zero = typed_scalar(0, dtype)
    step = lax.select(lax.gt(x1, zero), _ones_like(x1), _full_like(x1, 0))
    # Operands are of one shape or rank 0 (which select broadcasts).
    step = lax.select(lax.eq(x1, zero), x2, step)
    return lax.select(lax.ne(x1, x1), x1, step)


def nan_to_num(x: Any, copy: bool = True, nan: float = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
    """NaN replaced by ``nan``, +inf by ``posinf`` (default: the largest float), -inf by
    ``neginf`` (default: the most negative float). Integers are returned unchanged.

    Example::

        jnp.nan_to_num(jnp.array([jnp.nan, jnp.inf, 1.0]))   # [0., 3.4028235e+38, 1.]
    """
    del copy
    check_arraylike("nan_to_num", x)
    aval = get_aval(x)
    dtype = aval.dtype
    if dtype.kind in "biu":
        return x
    if dtype.kind == "c":
        re = nan_to_num(real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return lax.complex(re, im)
    info = dtypes.finfo(dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    out = lax.select(lax.ne(x, x), _full_like(x, nan), x)
    out = lax.select(lax.eq(x, typed_scalar(np.inf, dtype)), _full_like(x, posinf), out)
    return lax.select(lax.eq(x, typed_scalar(-np.inf, dtype)), _full_like(x, neginf),
                      out)


def fmax(x1: Any, x2: Any) -> Any:
    """Elementwise maximum that ignores NaN (NaN only where both are NaN).

    Example::

        jnp.fmax(jnp.array([1.0, jnp.nan]), jnp.array([jnp.nan, 2.0]))   # [1., 2.]
    """
    return _nan_ignoring("fmax", lax.max, x1, x2)


def fmin(x1: Any, x2: Any) -> Any:
    """Elementwise minimum that ignores NaN.

    Example::

        jnp.fmin(jnp.array([1.0, jnp.nan]), jnp.array([jnp.nan, 2.0]))   # [1., 2.]
    """
    return _nan_ignoring("fmin", lax.min, x1, x2)


def _nan_ignoring(name: str, op: Callable, x1: Any, x2: Any) -> Any:
    check_arraylike(name, x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    x1, x2 = broadcast_operands(x1, x2, op=name)
    result = op(x1, x2)
    if get_aval(x1).dtype.kind in "biu":
        return result
    result = lax.select(lax.ne(x1, x1), _as_shape(x2, result), result)
    return lax.select(lax.ne(x2, x2), _as_shape(x1, result), result)


def _as_shape(x: Any, like: Any) -> Any:
    shape = get_aval(like).shape
    return x if get_aval(x).shape == shape else lax.broadcast_in_dim(x, shape, ())


def ldexp(x1: Any, x2: Any) -> Any:
    """``x1 * 2**x2`` for integer ``x2``, exactly.

    Example::

        jnp.ldexp(jnp.array([1.5]), jnp.array([3]))   # [12.]
    """
    check_arraylike("ldexp", x1, x2)
    if get_aval(x2).dtype.kind not in "iu" and not isinstance(x2, int):
        raise TypeError(f"jnp.ldexp needs an integer exponent, got {get_aval(x2).dtype.name}"
                        f"{_where_loc()}")
    (x1,) = _real_inexact("ldexp", x1)
    dtype = get_aval(x1).dtype
    # Exponents beyond +-2**16 are as good as infinite (and convert exactly).
    n = clip(x2, -(1 << 16), 1 << 16)
    n = convert(n, dtype)
    x1, n = broadcast_operands(x1, n, op="ldexp")
    from pyree._lax_special import scale_by_power_of_two
    result = scale_by_power_of_two(x1, n)
    # 0, inf and NaN keep their value (inf * 2**-k would still be inf, 0 * 2**k 0: these just
    # avoid inf * 0 when a factor underflows).
    special = lax.bitwise_or(lax.eq(x1, typed_scalar(0, dtype)),
                             lax.bitwise_not(lax.is_finite(x1)))
    return lax.select(special, _as_shape(x1, result), result)


def frexp(x: Any) -> tuple:
    """``(mantissa, exponent)`` with ``x = mantissa * 2**exponent`` and ``0.5 <= |mantissa| <
    1`` (``(x, 0)`` for 0, inf and NaN; subnormal inputs count as 0, as the CPU flushes them).

    Example::

        jnp.frexp(jnp.array([8.0, 0.75]))   # ([0.5, 0.75], [4, 0])
    """
    (x,) = _real_inexact("frexp", x)
    dtype = get_aval(x).dtype
    info = np.finfo(dtype)
    mant_bits, bias = int(info.nmant), int(info.maxexp) - 1
    int_dtype = np.dtype(f"int{8 * dtype.itemsize}")
    from pyree._lax_special import bitcast_convert_type
    bits = bitcast_convert_type(x, int_dtype)
    exp_mask = typed_scalar(((1 << (8 * dtype.itemsize - 1 - mant_bits)) - 1) << mant_bits,
                            int_dtype)
    biased = lax.shift_right_logical(lax.bitwise_and(bits, exp_mask),
                                     typed_scalar(mant_bits, int_dtype))
    exponent = lax.sub(biased, typed_scalar(bias - 1, int_dtype))
    mantissa_bits = lax.bitwise_or(lax.bitwise_and(bits, lax.bitwise_not(exp_mask)),
                                   typed_scalar((bias - 1) << mant_bits, int_dtype))
    mantissa = bitcast_convert_type(mantissa_bits, dtype)
    special = lax.bitwise_or(lax.eq(biased, typed_scalar(0, int_dtype)),
                             lax.bitwise_not(lax.is_finite(x)))
    mantissa = lax.select(special, x, mantissa)
    exponent = lax.select(special, _full_like(exponent, 0), exponent)
    return mantissa, convert(exponent, np.dtype(np.int32))


def modf(x: Any) -> tuple:
    """``(fractional part, integral part)``, both with the sign of ``x``.

    Example::

        jnp.modf(jnp.array([2.5, -0.5]))   # ([0.5, -0.5], [2., -0.])
    """
    (x,) = _real_inexact("modf", x)
    whole = trunc(x)
    # The fraction has x's sign (-1.0 gives -0.0); for +-inf it is a zero (inf - inf is NaN).
    infinite = lax.eq(lax.abs(x), typed_scalar(np.inf, get_aval(x).dtype))
    frac = lax.select(infinite, _full_like(x, 0), lax.sub(x, whole))
    return copysign(frac, x), whole


def divmod(x1: Any, x2: Any) -> tuple:
    """``(x1 // x2, x1 % x2)`` (floor division and the remainder with the sign of x2).

    Example::

        jnp.divmod(jnp.array([7, -7]), 2)   # ([ 3, -4], [1, 1])
    """
    return floor_divide(x1, x2), remainder(x1, x2)


def spacing(x: Any) -> Any:
    """The distance from ``x`` to the next float away from zero, with x's sign.

    Example::

        jnp.spacing(jnp.array([1.0]))   # [1.1920929e-07]
    """
    (x,) = _real_inexact("spacing", x)
    # (x < 0, not x's sign bit: NumPy's spacing(-0.0) is the smallest positive subnormal)
    away = lax.select(lax.lt(x, _full_like(x, 0)), _full_like(x, -np.inf),
                      _full_like(x, np.inf))
    return lax.sub(lax.nextafter(x, away), x)


def nextafter(x1: Any, x2: Any) -> Any:
    """The next float after ``x1`` towards ``x2``.

    Example::

        jnp.nextafter(jnp.array([1.0]), 2.0)   # [1.0000001]
    """
    x1, x2 = _real_inexact("nextafter", x1, x2)
    return lax.nextafter(x1, x2)


def isneginf(x: Any) -> Any:
    """True where ``x`` is -inf.

    Example::

        jnp.isneginf(jnp.array([-jnp.inf, jnp.inf]))   # [ True, False]
    """
    return _is_inf_of_sign("isneginf", x, -np.inf)


def isposinf(x: Any) -> Any:
    """True where ``x`` is +inf.

    Example::

        jnp.isposinf(jnp.array([-jnp.inf, jnp.inf]))   # [False,  True]
    """
    return _is_inf_of_sign("isposinf", x, np.inf)


def _is_inf_of_sign(name: str, x: Any, inf: float) -> Any:
    check_arraylike(name, x)
    dtype = get_aval(x).dtype
    if dtype.kind in "biu":
        return _full_bool(x, False)
    if dtype.kind == "c":
        raise TypeError(f"jnp.{name} does not support complex inputs{_where_loc()}")
    return lax.eq(x, typed_scalar(inf, dtype))


# -- integers ------------------------------------------------------------------------------------

def gcd(x1: Any, x2: Any) -> Any:
    """Greatest common divisor of integers (non-negative; gcd(0, 0) = 0).

    Example::

        jnp.gcd(jnp.array([12, 7]), jnp.array([18, 0]))   # [6, 7]
    """
    x1, x2 = _integer_operands("gcd", x1, x2)
    return _gcd(x1, x2)


def _integer_operands(name: str, x1: Any, x2: Any) -> list:
    check_arraylike(name, x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    dtype = get_aval(x1).dtype
    if dtype.kind not in "iu":
        raise TypeError(f"jnp.{name} takes integer arguments, got {dtype.name}{_where_loc()}")
    return broadcast_operands(x1, x2, op=name)


def _gcd(x1: Any, x2: Any) -> Any:
    dtype = get_aval(x1).dtype
    zero = typed_scalar(0, dtype)
    a, b = absolute(x1), absolute(x2)
    a, b = _as_shape(a, lax.add(a, b)), _as_shape(b, lax.add(a, b))
    # Euclid's algorithm takes at most ~1.44 log2(max) + 2 steps (consecutive Fibonacci
    # numbers are the worst case): unrolled, each step is a remainder and two selects.
    steps = int(1.45 * 8 * dtype.itemsize) + 2
    for _ in range(steps):
        nonzero = lax.ne(b, zero)
        a, b = (lax.select(nonzero, b, a),
                lax.select(nonzero, lax.rem(a, b), b))
    return a


def lcm(x1: Any, x2: Any) -> Any:
    """Least common multiple of integers (non-negative; 0 if either is 0).

    Example::

        jnp.lcm(jnp.array([4, 0]), jnp.array([6, 5]))   # [12, 0]
    """
    x1, x2 = _integer_operands("lcm", x1, x2)
    dtype = get_aval(x1).dtype
    g = _gcd(x1, x2)
    zero = typed_scalar(0, dtype)
    is_zero = lax.eq(g, zero)
    safe_g = lax.select(is_zero, _ones_like(g), g)
    result = absolute(lax.mul(lax.div(absolute(x1), safe_g), absolute(x2)))
    return lax.select(is_zero, _full_like(result, 0), result)


# -- comparisons of whole arrays -----------------------------------------------------------------

def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Any:
    """``|a - b| <= atol + rtol * |b|`` elementwise (equal infinities are close; NaNs are
    close to each other only with ``equal_nan``). Integers compare exactly; complex numbers by
    the modulus of their difference.

    Example::

        jnp.isclose(jnp.array([1.0, 1.1]), 1.0)   # [ True, False]
    """
    check_arraylike("isclose", a, b)
    a, b = promote_dtypes(a, b)
    a, b = broadcast_operands(a, b)
    dtype = get_aval(a).dtype
    if dtype.kind in "biu":
        return lax.eq(a, b)
    diff = lax.abs(lax.sub(a, b))  # real for complex operands
    real_dtype = get_aval(diff).dtype
    rtol_s, atol_s = typed_scalar(rtol, real_dtype), typed_scalar(atol, real_dtype)
    bound = lax.add(atol_s, lax.mul(rtol_s, lax.abs(b)))
    close = lax.le(diff, bound)

    def finite(z):
        if dtype.kind != "c":
            return lax.is_finite(z)
        return lax.bitwise_and(lax.is_finite(lax.real(z)), lax.is_finite(lax.imag(z)))

    # Non-finite values are close only when equal (inf - inf would be NaN).
    close = lax.select(lax.bitwise_and(finite(a), finite(b)), close, lax.eq(a, b))
    if equal_nan:
        both_nan = lax.bitwise_and(lax.ne(a, a), lax.ne(b, b))
        close = lax.bitwise_or(close, both_nan)
    return close


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> Any:
    """Whether ``isclose`` holds everywhere (a boolean scalar array).

    Example::

        jnp.allclose(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.0 + 1e-7]))   # True
    """
    from ._reductions import all as all_
    return all_(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """Whether the arrays have one shape and equal elements (a boolean scalar array).

    Example::

        jnp.array_equal(jnp.array([1, 2]), jnp.array([1, 2]))   # True
    """
    check_arraylike("array_equal", a1, a2)
    if get_aval(a1).shape != get_aval(a2).shape:
        return lax.full((), False, np.bool_)
    return _all_equal(a1, a2, equal_nan)


def _all_equal(a1: Any, a2: Any, equal_nan: bool) -> Any:
    from ._reductions import all as all_
    a1, a2 = promote_dtypes(a1, a2)
    a1, a2 = broadcast_operands(a1, a2)
    eq = lax.eq(a1, a2)
    if equal_nan and get_aval(a1).dtype.kind not in "biu":
        eq = lax.bitwise_or(eq, lax.bitwise_and(lax.ne(a1, a1), lax.ne(a2, a2)))
    return all_(eq)


def array_equiv(a1: Any, a2: Any) -> Any:
    """Whether the arrays broadcast together and are equal everywhere.

    Example::

        jnp.array_equiv(jnp.array([1, 1]), 1)   # True
    """
    check_arraylike("array_equiv", a1, a2)
    try:
        np.broadcast_shapes(get_aval(a1).shape, get_aval(a2).shape)
    except ValueError:
        return lax.full((), False, np.bool_)
    return _all_equal(a1, a2, False)


# -- complex parts -------------------------------------------------------------------------------

def real(val: Any) -> Any:
    """The real part (real inputs are returned as they are).

    Example::

        jnp.real(jnp.array([1 + 2j]))   # [1.]
    """
    check_arraylike("real", val)
    return lax.real(val) if get_aval(val).dtype.kind == "c" else val


def imag(val: Any) -> Any:
    """The imaginary part (zeros for real inputs).

    Example::

        jnp.imag(jnp.array([1 + 2j]))   # [2.]
    """
    check_arraylike("imag", val)
    if get_aval(val).dtype.kind == "c":
        return lax.imag(val)
    return _full_like(val, 0)


def conjugate(x: Any) -> Any:
    """The complex conjugate (real inputs are returned as they are).

    Example::

        jnp.conj(jnp.array([1 + 2j]))   # [1.-2.j]
    """
    check_arraylike("conjugate", x)
    return lax.conj(x) if get_aval(x).dtype.kind == "c" else x


conj = conjugate


def angle(z: Any, deg: bool = False) -> Any:
    """The argument of complex numbers, ``atan2(imag, real)`` (in degrees with ``deg``).

    Example::

        jnp.angle(jnp.array([1j, -1.0]))   # [1.5707964, 3.1415927]
    """
    check_arraylike("angle", z)
    if get_aval(z).dtype.kind == "c":
        re, im = lax.real(z), lax.imag(z)
    else:
        (re,) = promote_dtypes_inexact(z)
        im = _full_like(re, 0)
    result = lax.atan2(im, re)
    return rad2deg(result) if deg else result


def isreal(x: Any) -> Any:
    """True where the imaginary part is 0 (everywhere for real inputs).

    Example::

        jnp.isreal(jnp.array([1 + 0j, 1j]))   # [ True, False]
    """
    check_arraylike("isreal", x)
    if get_aval(x).dtype.kind != "c":
        return _full_bool(x, True)
    im = lax.imag(x)
    return lax.eq(im, typed_scalar(0, get_aval(im).dtype))


def iscomplex(x: Any) -> Any:
    """True where the imaginary part is not 0 (nowhere for real inputs).

    Example::

        jnp.iscomplex(jnp.array([1 + 0j, 1j]))   # [False,  True]
    """
    check_arraylike("iscomplex", x)
    if get_aval(x).dtype.kind != "c":
        return _full_bool(x, False)
    im = lax.imag(x)
    return lax.ne(im, typed_scalar(0, get_aval(im).dtype))


bitwise_invert = invert
bitwise_left_shift = left_shift
bitwise_right_shift = right_shift


def bitwise_count(x: Any, /) -> Any:
    """The number of 1 bits in the absolute value of each integer of ``x``, as uint8.

    Example::

        jnp.bitwise_count(jnp.array([7, -1]))   # [3, 1]
    """
    check_arraylike("bitwise_count", x)
    from ._creation import asarray
    x = asarray(x)
    kind = get_aval(x).dtype.kind
    if kind not in "iub":
        raise TypeError(f"jnp.bitwise_count requires integer or boolean input, got "
                        f"{get_aval(x).dtype}")
    if kind == "b":
        return convert(x, np.dtype(np.uint8))
    if kind == "i":
        x = lax.abs(x)
    return convert(lax.population_count(x), np.dtype(np.uint8))


def select(condlist: Any, choicelist: Any, default: Any = 0) -> Any:
    """Elementwise, the entry of the first ``choicelist[i]`` whose ``condlist[i]`` is true,
    ``default`` where none is (everything broadcast together).

    Example::

        x = jnp.arange(5)
        jnp.select([x < 2, x > 3], [x, x ** 2], default=-1)   # [0, 1, -1, -1, 16]
    """
    from pyree.transpiler.core.source import where as _loc
    if len(condlist) != len(choicelist):
        raise ValueError(f"jnp.select: condlist must have length equal to choicelist "
                         f"({len(condlist)} vs {len(choicelist)}){_loc(None)}")
    if len(condlist) == 0:
        raise ValueError(f"jnp.select: condlist must be non-empty{_loc(None)}")
    check_arraylike("select", *condlist, *choicelist, default)
    from ._creation import asarray
    choices = promote_dtypes(*[asarray(c) for c in choicelist], asarray(default))
    result = choices[-1]
    # The first true condition wins: fold from the last one back.
    for cond, choice in zip(reversed(list(condlist)), reversed(choices[:-1])):
        result = where(convert(asarray(cond), np.dtype(np.bool_)), choice, result)
    return result


def i0(x: Any) -> Any:
    """The modified Bessel function of the first kind of order 0, elementwise (integers
    compute in float32); differentiable.

    Example::

        jnp.i0(jnp.array([0.0, 1.0]))   # [1.0, 1.2660658]
    """
    check_arraylike("i0", x)
    from pyree.scipy import special
    from ._creation import asarray
    x = asarray(x)
    if get_aval(x).dtype.kind == "c":
        raise ValueError("jnp.i0: complex input is not supported")
    (x,) = promote_dtypes_inexact(x)
    return special.i0(x)
