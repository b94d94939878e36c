"""Part of ``pyree.lax``: special functions, the inverse trigonometric and hyperbolic
functions, bit-level operations and complex parts.

The transcendental functions are composed from pyree's primitives (whose float64 lowerings are
accurate), with formulas chosen to keep float32 and float64 precision: ``log1p``/``expm1`` forms
near zero, ``exp(|x|/2)**2`` instead of ``exp(|x|)/2`` against overflow, exact range splits for
``exp2``. ``erf_inv``, ``lgamma``, ``digamma``, ``erfc``, ``population_count``, ``clz``, the
equal-width bit cast and the complex parts are primitives (transpiler/families/special.py); so are
the incomplete gamma functions ``igamma``, ``igammac``, ``igamma_grad_a`` and ``random_gamma_grad``
(transpiler/families/igamma.py, computed in float64 whatever the operands' dtype).

Like the rest of ``lax``, these functions do not promote: floating-point functions need
floating-point operands::

    from pyree import lax
    lax.lgamma(jnp.array([0.5, 3.0]))       # [0.5723649, 0.6931472]
"""
from __future__ import annotations

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitcast_convert_type", "clz",
    "complex", "conj", "cosh", "digamma", "erf_inv", "erfc", "exp2", "igamma",
    "igamma_grad_a", "igammac", "imag", "lgamma", "nextafter", "population_count",
    "random_gamma_grad", "real", "reciprocal", "sinh",
]

import builtins
import math
from typing import Any

import numpy as np

from pyree import dtypes
from pyree.transpiler.families import math_functions as M
from pyree.transpiler.core import primitives as P
from pyree.transpiler.families import igamma as IG
from pyree.transpiler.families import special as S
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import TypedScalar, get_aval

_PY_SCALARS = (bool, int, float, builtins.complex)


def _operand(name: str, x: Any, kinds: str = "f", what: str = "floating-point numbers") -> Any:
    """``x`` checked to have a dtype of ``kinds`` (a Python scalar becomes a weak float32/64)."""
    if isinstance(x, _PY_SCALARS):
        x = TypedScalar(x, dtypes.canonicalize_dtype(type(x)), True)
    aval = get_aval(x)
    if P.kind(aval.dtype) not in kinds:
        raise TypeError(f"lax.{name} does not accept dtype {aval.dtype.name}; it takes "
                        f"{what}{_where(None)}")
    return x


def _c(value: Any, like: Any) -> TypedScalar:
    """A constant of ``like``'s dtype."""
    return TypedScalar(value, get_aval(like).dtype, False)


def _eps(x: Any) -> float:
    return float(np.finfo(get_aval(x).dtype).eps)


def _select(pred, a, b):
    return P.select_p.bind(pred, a, b)


def _odd_magnitude(x: Any) -> Any:
    """``|x|`` for odd functions computed as ``sign * f(|x|)`` (``_negate_where_sign_bit``):
    equal to ``abs(x)`` but with derivative -1 or +1 at zero too, where abs's is 0 (which
    made grad of sinh and atanh 0 at zero, of asinh NaN, instead of 1)."""
    return _select(sign_bit(x), P.neg_p.bind(x), x)


def _negate_where_sign_bit(x: Any, magnitude: Any) -> Any:
    """``magnitude`` with the sign bit of ``x`` (so that -0.0 gives -0.0)."""
    return _select(sign_bit(x), P.neg_p.bind(magnitude), magnitude)


def sign_bit(x: Any) -> Any:
    """Whether the sign bit of float ``x`` is set (true for -0.0 and for negative NaNs)."""
    dtype = get_aval(x).dtype
    int_dtype = np.dtype(f"int{8 * dtype.itemsize}")
    return P.lt_p.bind(S.bitcast_p.bind(x, new_dtype=int_dtype), TypedScalar(0, int_dtype, False))


# -- primitives ------------------------------------------------------------------------------

def erf_inv(x: Any) -> Any:
    """The inverse of ``erf`` on (-1, 1) (``jax.lax.erf_inv``); +-inf at +-1, NaN outside.

    Example::

        lax.erf_inv(jnp.array([0.0, 0.5]))   # [0., 0.4769363]
    """
    return S.erf_inv_p.bind(_operand("erf_inv", x))


def fused_multiply_add(a: Any, b: Any, c: Any) -> Any:
    """``a * b + c`` rounded once, for arrays of one shape and float dtype (not a JAX API:
    pyree.random uses it to round as XLA's CPU code does).

    Example: ``fused_multiply_add(x, y, z)``.
    """
    return S.fma_p.bind(a, b, c)


def lgamma(x: Any) -> Any:
    """``log |Gamma(x)|`` (``jax.lax.lgamma``); +inf at the poles 0, -1, -2, ...

    Example::

        lax.lgamma(jnp.array([0.5, 3.0]))   # [0.5723649, 0.6931472]
    """
    return S.lgamma_p.bind(_operand("lgamma", x))


def digamma(x: Any) -> Any:
    """The logarithmic derivative of Gamma (``jax.lax.digamma``); NaN at 0, -1, -2, ...

    Example::

        lax.digamma(jnp.array([1.0]))   # [-0.5772157]
    """
    return S.digamma_p.bind(_operand("digamma", x))


def erfc(x: Any) -> Any:
    """``1 - erf(x)``, accurate where it is small (``jax.lax.erfc``).

    Example::

        lax.erfc(jnp.array([0.0, 5.0]))   # [1., 1.5375e-12]
    """
    return S.erfc_p.bind(_operand("erfc", x))


def population_count(x: Any) -> Any:
    """The number of set bits of each integer (``jax.lax.population_count``).

    Example::

        lax.population_count(jnp.array([7, -1], jnp.int8))   # [3, 8]
    """
    return S.population_count_p.bind(_operand("population_count", x, "iu", "integers"))


def clz(x: Any) -> Any:
    """The number of leading zero bits of each integer (``jax.lax.clz``).

    Example::

        lax.clz(jnp.array([1, 0], jnp.int32))   # [31, 32]
    """
    return S.clz_p.bind(_operand("clz", x, "iu", "integers"))


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """Reinterpret the bits of ``operand`` as ``new_dtype`` (``jax.lax.bitcast_convert_type``).

    Of equal widths the shape is kept. To a type ``r`` times narrower a last dimension of size
    ``r`` is added (least significant part first, as on a little-endian machine); to a type
    ``r`` times wider the last dimension must have size ``r`` and is removed.

    Example::

        lax.bitcast_convert_type(jnp.float32(1.0), jnp.int32)     # 1065353216
        lax.bitcast_convert_type(jnp.float32(1.0), jnp.uint8)     # [  0,   0, 128,  63]
    """
    if isinstance(operand, _PY_SCALARS):
        operand = TypedScalar(operand, dtypes.canonicalize_dtype(type(operand)), False)
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    aval = get_aval(operand)
    src, dst = aval.dtype, np.dtype(new_dtype)
    for d in (src, dst):
        if d == np.bool_ or d.kind == "c":
            raise TypeError(f"lax.bitcast_convert_type does not support {d.name} (only "
                            f"integer and real floating-point types){_where(None)}")
    if src.itemsize == dst.itemsize:
        return S.bitcast_p.bind(operand, new_dtype=dst)
    # Through unsigned integers of the two widths: shifts split or join the bits.
    from pyree import lax
    src_u = np.dtype(f"uint{8 * src.itemsize}")
    dst_u = np.dtype(f"uint{8 * dst.itemsize}")
    if src.itemsize > dst.itemsize:
        ratio = src.itemsize // dst.itemsize
        bits = S.bitcast_p.bind(operand, new_dtype=src_u)
        mask = TypedScalar((1 << (8 * dst.itemsize)) - 1, src_u, False)
        parts = []
        for i in range(ratio):
            part = P.and_p.bind(P.shift_right_logical_p.bind(
                bits, TypedScalar(8 * dst.itemsize * i, src_u, False)), mask)
            part = lax.convert_element_type(part, dst_u)
            parts.append(lax.reshape(part, aval.shape + (1,)))
        joined = lax.concatenate(parts, aval.ndim)
        return S.bitcast_p.bind(joined, new_dtype=dst)
    ratio = dst.itemsize // src.itemsize
    if aval.ndim == 0 or aval.shape[-1] != ratio:
        raise ValueError(f"lax.bitcast_convert_type from {src.name} to {dst.name} needs a last "
                         f"dimension of size {ratio}, got shape {aval.shape}{_where(None)}")
    bits = S.bitcast_p.bind(operand, new_dtype=src_u)
    out_shape = aval.shape[:-1]
    total = None
    for i in range(ratio):
        start = (0,) * (aval.ndim - 1) + (i,)
        part = lax.reshape(lax.slice(bits, start, out_shape + (i + 1,)), out_shape)
        part = P.shift_left_p.bind(lax.convert_element_type(part, dst_u),
                                   TypedScalar(8 * src.itemsize * i, dst_u, False))
        total = part if total is None else P.or_p.bind(total, part)
    return S.bitcast_p.bind(total, new_dtype=dst)


# -- inverse trigonometric functions --------------------------------------------------------

def atan(x: Any) -> Any:
    """The inverse tangent (``jax.lax.atan``).

    Example::

        lax.atan(jnp.array([1.0]))   # [0.7853982]
    """
    x = _operand("atan", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "c":
        return _complex_atan(x)
    return M.atan2_p.bind(x, _c(1.0, x))


def _one_minus_square(x: Any) -> Any:
    # (1 - x)(1 + x) keeps the precision of 1 - x**2 near |x| = 1.
    one = _c(1.0, x)
    return P.mul_p.bind(P.sub_p.bind(one, x), P.add_p.bind(one, x))


def asin(x: Any) -> Any:
    """The inverse sine; NaN outside [-1, 1] (``jax.lax.asin``).

    Example::

        lax.asin(jnp.array([1.0]))   # [1.5707964]
    """
    x = _operand("asin", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "c":
        return _complex_asin(x)
    # asin x = 2 atan(x / (1 + sqrt(1 - x**2))), well conditioned on all of [-1, 1].
    root = M.sqrt_p.bind(_one_minus_square(x))
    half = M.atan2_p.bind(x, P.add_p.bind(_c(1.0, x), root))
    return P.add_p.bind(half, half)


def acos(x: Any) -> Any:
    """The inverse cosine; NaN outside [-1, 1] (``jax.lax.acos``).

    Example::

        lax.acos(jnp.array([-1.0, 1.0]))   # [3.1415927, 0.]
    """
    x = _operand("acos", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "c":
        return _complex_acos(x)
    # acos x = 2 atan(sqrt(1 - x**2) / (1 + x)); at x = -1 that is atan2(0, 0).
    root = M.sqrt_p.bind(_one_minus_square(x))
    half = M.atan2_p.bind(root, P.add_p.bind(_c(1.0, x), x))
    return _select(P.eq_p.bind(x, _c(-1.0, x)), _c(math.pi, x), P.add_p.bind(half, half))


# -- hyperbolic functions ---------------------------------------------------------------------

def _exp_halves(a: Any) -> Any:
    """``exp(a/2)``: its square is exp(a) without overflowing before exp(a)/2 does."""
    return M.exp_p.bind(P.mul_p.bind(a, _c(0.5, a)))


def sinh(x: Any) -> Any:
    """The hyperbolic sine (``jax.lax.sinh``).

    Example::

        lax.sinh(jnp.array([1.0]))   # [1.1752012]
    """
    x = _operand("sinh", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "c":
        return _complex_sinh(x)
    a = _odd_magnitude(x)
    half = _c(0.5, x)
    # |x| < 1: (e + e / (e + 1)) / 2 with e = expm1|x| has no cancellation.
    e = M.expm1_p.bind(a)
    small = P.mul_p.bind(half, P.add_p.bind(e, P.div_p.bind(e, P.add_p.bind(e, _c(1.0, x)))))
    # Otherwise exp|x| / 2 - exp(-|x|) / 2, with exp|x| = h**2.
    h = _exp_halves(a)
    large = P.sub_p.bind(P.mul_p.bind(P.mul_p.bind(half, h), h),
                         P.div_p.bind(half, P.mul_p.bind(h, h)))
    magnitude = _select(P.lt_p.bind(a, _c(1.0, x)), small, large)
    return _negate_where_sign_bit(x, magnitude)


def cosh(x: Any) -> Any:
    """The hyperbolic cosine (``jax.lax.cosh``).

    Example::

        lax.cosh(jnp.array([0.0]))   # [1.]
    """
    x = _operand("cosh", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "c":
        return _complex_cosh(x)
    h = _exp_halves(S.abs_p.bind(x))
    half = _c(0.5, x)
    return P.add_p.bind(P.mul_p.bind(P.mul_p.bind(half, h), h),
                        P.div_p.bind(half, P.mul_p.bind(h, h)))


def asinh(x: Any) -> Any:
    """The inverse hyperbolic sine (``jax.lax.asinh``).

    Example::

        lax.asinh(jnp.array([1.0]))   # [0.8813736]
    """
    x = _operand("asinh", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "c":
        return _complex_asinh(x)
    a = _odd_magnitude(x)
    one = _c(1.0, x)
    # asinh a = log1p(a + a**2 / (1 + sqrt(1 + a**2))); past 1/sqrt(eps), log(2a).
    a2 = P.mul_p.bind(a, a)
    moderate = M.log1p_p.bind(P.add_p.bind(a, P.div_p.bind(
        a2, P.add_p.bind(one, M.sqrt_p.bind(P.add_p.bind(one, a2))))))
    is_large = P.gt_p.bind(a, _c(1 / math.sqrt(_eps(x)), x))
    # (log of 1 where the branch is not taken: log's slope at 0 times select's zero cotangent
    # would make the gradient NaN at 0.)
    large = P.add_p.bind(M.log_p.bind(_select(is_large, a, one)), _c(math.log(2), x))
    magnitude = _select(is_large, large, moderate)
    return _negate_where_sign_bit(x, magnitude)


def acosh(x: Any) -> Any:
    """The inverse hyperbolic cosine; NaN below 1 (``jax.lax.acosh``).

    Example::

        lax.acosh(jnp.array([1.0, 2.0]))   # [0., 1.316958]
    """
    x = _operand("acosh", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "c":
        return _complex_acosh(x)
    one = _c(1.0, x)
    # With t = x - 1 (exact near 1): log1p(t + sqrt(2t + t**2)); past 1/sqrt(eps), log(2x).
    t = P.sub_p.bind(x, one)
    moderate = M.log1p_p.bind(P.add_p.bind(t, M.sqrt_p.bind(
        P.add_p.bind(P.add_p.bind(t, t), P.mul_p.bind(t, t)))))
    large = P.add_p.bind(M.log_p.bind(x), _c(math.log(2), x))
    return _select(P.gt_p.bind(x, _c(1 / math.sqrt(_eps(x)), x)), large, moderate)


def atanh(x: Any) -> Any:
    """The inverse hyperbolic tangent; +-inf at +-1, NaN outside [-1, 1] (``jax.lax.atanh``).

    Example::

        lax.atanh(jnp.array([0.5]))   # [0.5493061]
    """
    x = _operand("atanh", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "c":
        return _complex_atanh(x)
    a = _odd_magnitude(x)
    one = _c(1.0, x)
    # atanh a = log1p(2a / (1 - a)) / 2.
    magnitude = P.mul_p.bind(_c(0.5, x), M.log1p_p.bind(
        P.div_p.bind(P.add_p.bind(a, a), P.sub_p.bind(one, a))))
    return _negate_where_sign_bit(x, magnitude)


# -- complex inverse trigonometric and hyperbolic functions ------------------------------------
# Principal branches as NumPy's and JAX's. Composed from complex log1p, sqrt and the real
# functions of the parts, so grad and vmap follow from those primitives' rules.

def _parts(z: Any) -> tuple:
    return S.real_p.bind(z), S.imag_p.bind(z)


def _times_i(z: Any, sign: float = 1.0) -> Any:
    """``sign * i * z``, exactly (a swap of the parts and a negation)."""
    a, b = _parts(z)
    if sign > 0:
        return S.complex_p.bind(P.neg_p.bind(b), a)
    return S.complex_p.bind(b, P.neg_p.bind(a))


def _complex_sinh(z: Any) -> Any:
    # sinh(a + ib) = sinh a cos b + i cosh a sin b
    a, b = _parts(z)
    return S.complex_p.bind(P.mul_p.bind(sinh(a), M.cos_p.bind(b)),
                            P.mul_p.bind(cosh(a), M.sin_p.bind(b)))


def _complex_cosh(z: Any) -> Any:
    # cosh(a + ib) = cosh a cos b + i sinh a sin b
    a, b = _parts(z)
    return S.complex_p.bind(P.mul_p.bind(cosh(a), M.cos_p.bind(b)),
                            P.mul_p.bind(sinh(a), M.sin_p.bind(b)))


def _large(z: Any) -> Any:
    """Where |z| is past 1/sqrt(eps): there z**2 + 1 is z**2 (and may overflow)."""
    a, b = _parts(z)
    limit = TypedScalar(1 / math.sqrt(_eps(a)), get_aval(a).dtype, False)
    return P.gt_p.bind(P.max_p.bind(S.abs_p.bind(a), S.abs_p.bind(b)), limit)


def _log_2z(z: Any) -> Any:
    return P.add_p.bind(M.log_p.bind(z), _c(math.log(2), z))


def _complex_asinh(z: Any) -> Any:
    # In the right half plane asinh w = log1p(w + w**2 / (1 + sqrt(1 + w**2))) (no cancellation
    # near 0); asinh(-w) = -asinh w covers the left one.
    a, _ = _parts(z)
    left = sign_bit(a)
    w = _select(left, P.neg_p.bind(z), z)
    one = _c(1.0, z)
    w2 = P.mul_p.bind(w, w)
    moderate = M.log1p_p.bind(P.add_p.bind(w, P.div_p.bind(
        w2, P.add_p.bind(one, M.sqrt_p.bind(P.add_p.bind(one, w2))))))
    result = _select(_large(w), _log_2z(w), moderate)
    return _select(left, P.neg_p.bind(result), result)


def _complex_asin(z: Any) -> Any:
    # asin z = -i asinh(i z)
    return _times_i(_complex_asinh(_times_i(z)), -1.0)


def _complex_acos(z: Any) -> Any:
    # acos z = pi/2 - asin z
    return P.sub_p.bind(_c(math.pi / 2, z), _complex_asin(z))


def _complex_atanh(z: Any) -> Any:
    # atanh z = (log1p z - log1p(-z)) / 2
    return P.mul_p.bind(_c(0.5, z), P.sub_p.bind(M.log1p_p.bind(z),
                                                 M.log1p_p.bind(P.neg_p.bind(z))))


def _complex_atan(z: Any) -> Any:
    # atan z = -i atanh(i z)
    return _times_i(_complex_atanh(_times_i(z)), -1.0)


def _complex_acosh(z: Any) -> Any:
    # With t = z - 1: log1p(t + sqrt(t) sqrt(t + 2)); the product of two roots (not the root of
    # the product) puts the branch cut where NumPy has it, on (-inf, 1).
    t = P.sub_p.bind(z, _c(1.0, z))
    moderate = M.log1p_p.bind(P.add_p.bind(t, P.mul_p.bind(
        M.sqrt_p.bind(t), M.sqrt_p.bind(P.add_p.bind(t, _c(2.0, z))))))
    return _select(_large(z), _log_2z(z), moderate)


def _complex_exp2(z: Any) -> Any:
    return M.exp_p.bind(P.mul_p.bind(z, _c(math.log(2), z)))


# -- exponentials and friends -------------------------------------------------------------------

def scale_by_power_of_two(y: Any, n: Any) -> Any:
    """``y * 2**n`` for float ``y`` and integer-valued float ``n`` of y's dtype, exactly (two
    factors built from their bits, so that every representable result is reached)."""
    dtype = get_aval(y).dtype
    info = np.finfo(dtype)
    max_exp, mant = int(info.maxexp) - 1, int(info.nmant)  # 127, 23 for float32
    bias = max_exp
    # Past these bounds the result has over- or underflowed already.
    n = P.max_p.bind(P.min_p.bind(n, _c(2 * max_exp, y)), _c(-2 * (max_exp - 1), y))
    first = M.floor_p.bind(P.mul_p.bind(n, _c(0.5, y)))
    second = P.sub_p.bind(n, first)
    int_dtype = np.dtype(f"int{8 * dtype.itemsize}")

    def power(k):
        k = P.convert_element_type_p.bind(k, new_dtype=int_dtype, weak_type=False)
        bits = P.shift_left_p.bind(P.add_p.bind(k, TypedScalar(bias, int_dtype, False)),
                                   TypedScalar(mant, int_dtype, False))
        return S.bitcast_p.bind(bits, new_dtype=dtype)

    return P.mul_p.bind(P.mul_p.bind(y, power(first)), power(second))


def exp2(x: Any) -> Any:
    """``2 ** x`` (``jax.lax.exp2``); exact for integer ``x``.

    Example::

        lax.exp2(jnp.array([3.0, 0.5]))   # [8., 1.4142135]
    """
    x = _operand("exp2", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "c":
        return _complex_exp2(x)
    # 2**x = 2**n * exp(f log 2), n = round(x), |f| <= 1/2: no error from rounding x log 2.
    finite = M.is_finite_p.bind(x)
    safe = _select(finite, x, _c(0.0, x))
    n = M.round_p.bind(safe, rounding_method=1)
    f = P.sub_p.bind(safe, n)
    y = M.exp_p.bind(P.mul_p.bind(f, _c(math.log(2), x)))
    # +-inf and NaN: exp gives inf, 0 and NaN.
    return _select(finite, scale_by_power_of_two(y, n), M.exp_p.bind(x))


def reciprocal(x: Any) -> Any:
    """``1 / x`` (``jax.lax.reciprocal``).

    Example::

        lax.reciprocal(jnp.array([4.0]))   # [0.25]
    """
    x = _operand("reciprocal", x, "fc", "floating-point or complex numbers")
    return M.integer_pow_p.bind(x, y=-1)


def nextafter(x1: Any, x2: Any) -> Any:
    """The next representable float after ``x1`` in the direction of ``x2``
    (``jax.lax.nextafter``).

    Example::

        lax.nextafter(jnp.float32(1.0), jnp.float32(2.0))   # 1.0000001
    """
    x1, x2 = _operand("nextafter", x1), _operand("nextafter", x2)
    a1, a2 = get_aval(x1), get_aval(x2)
    if a1.dtype != a2.dtype:
        raise TypeError(f"lax.nextafter requires arguments to have the same dtypes, got "
                        f"{a1.dtype.name} and {a2.dtype.name}{_where(None)}")
    dtype = a1.dtype
    int_dtype = np.dtype(f"int{8 * dtype.itemsize}")
    if a1.shape != a2.shape and a1.shape and a2.shape:
        raise TypeError(f"lax.nextafter got incompatible shapes {a1.shape} and {a2.shape}"
                        f"{_where(None)}")
    if a1.shape == () and a2.shape != ():
        from pyree import lax
        x1 = lax.broadcast_in_dim(x1, a2.shape, ())
    bits = S.bitcast_p.bind(x1, new_dtype=int_dtype)
    one = TypedScalar(1, int_dtype, False)
    # Away from zero in magnitude when x2 lies beyond x1 on x1's side of zero.
    away = P.eq_p.bind(P.gt_p.bind(x2, x1), P.gt_p.bind(x1, _c(0.0, x1)))
    stepped = _select(away, P.add_p.bind(bits, one), P.sub_p.bind(bits, one))
    result = S.bitcast_p.bind(stepped, new_dtype=dtype)
    # From zero: the smallest subnormal with x2's sign.
    tiny = S.bitcast_p.bind(TypedScalar(1, int_dtype, False), new_dtype=dtype)
    from_zero = _select(P.lt_p.bind(x2, _c(0.0, x2)), P.neg_p.bind(tiny), tiny)
    result = _select(P.eq_p.bind(x1, _c(0.0, x1)), from_zero, result)
    result = _select(P.eq_p.bind(x1, x2), x2, result)
    nan = P.or_p.bind(P.ne_p.bind(x1, x1), P.ne_p.bind(x2, x2))
    return _select(nan, _c(math.nan, x1), result)


# -- complex parts ----------------------------------------------------------------------------

def real(x: Any) -> Any:
    """The real part of a complex array (``jax.lax.real``).

    Example::

        lax.real(jnp.array([1 + 2j]))   # [1.]
    """
    return S.real_p.bind(_operand("real", x, "c", "complex numbers"))


def imag(x: Any) -> Any:
    """The imaginary part of a complex array (``jax.lax.imag``).

    Example::

        lax.imag(jnp.array([1 + 2j]))   # [2.]
    """
    return S.imag_p.bind(_operand("imag", x, "c", "complex numbers"))


def conj(x: Any) -> Any:
    """The complex conjugate (``jax.lax.conj``); real operands become complex.

    Example::

        lax.conj(jnp.array([1 + 2j]))   # [1.-2.j]
    """
    x = _operand("conj", x, "fc", "floating-point or complex numbers")
    if P.kind(get_aval(x).dtype) == "f":
        x = complex(x, _c(0.0, x))
    return S.conj_p.bind(x)


def complex(x: Any, y: Any) -> Any:
    """``x + 1j * y`` from two real arrays of one dtype (``jax.lax.complex``).

    Example::

        lax.complex(jnp.array([1.0]), jnp.array([2.0]))   # [1.+2.j]
    """
    x, y = _operand("complex", x), _operand("complex", y)
    if isinstance(x, TypedScalar) and x.weak_type and not isinstance(y, TypedScalar):
        x = TypedScalar(x.value.item(), get_aval(y).dtype, True)
    if isinstance(y, TypedScalar) and y.weak_type and not isinstance(x, TypedScalar):
        y = TypedScalar(y.value.item(), get_aval(x).dtype, True)
    return S.complex_p.bind(x, y)


# -- incomplete gamma functions (primitives of transpiler/families/igamma.py) ---------------

def _igamma_operands(name: str, a: Any, x: Any) -> tuple[Any, Any]:
    """``a`` and ``x`` as float arrays of one dtype and shape, under lax's rules: equal dtypes
    (a Python scalar takes the other operand's), equal shapes or a rank-0 operand."""
    from pyree import lax
    a, x = _operand(name, a), _operand(name, x)
    if isinstance(a, TypedScalar) and a.aval.weak_type and not isinstance(x, TypedScalar):
        a = TypedScalar(a.value.item(), get_aval(x).dtype, True)
    if isinstance(x, TypedScalar) and x.aval.weak_type and not isinstance(a, TypedScalar):
        x = TypedScalar(x.value.item(), get_aval(a).dtype, True)
    aa, xa = get_aval(a), get_aval(x)
    if aa.dtype != xa.dtype:
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                        f"{aa.dtype.name}, {xa.dtype.name}{_where(None)}")
    if aa.shape != xa.shape and aa.shape and xa.shape:
        raise TypeError(f"{name} got incompatible shapes for broadcasting: {aa.shape}, "
                        f"{xa.shape}{_where(None)}")
    shape = aa.shape or xa.shape
    return tuple(v if get_aval(v).shape == shape and not isinstance(v, TypedScalar)
                 else lax.broadcast_in_dim(v, shape, ()) for v in (a, x))


def igamma(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function ``P(a, x) = gamma(a, x) / Gamma(a)``
    (``jax.lax.igamma``, SciPy's ``gammainc``), for float ``a >= 0``, ``x >= 0`` of one dtype
    and shape (or rank 0). NaN outside the domain and at ``a = x = 0``; 0 at ``x = 0``, 1 at
    ``x = inf`` and at ``a = 0 < x`` (where JAX's own gives NaN below x = 1).

    Differentiable in both arguments: ``d/dx`` is the Gamma(a, 1) density, ``d/da`` is
    ``igamma_grad_a``. Computed in float64 internally (a series for ``x < max(1, a)``, Legendre's
    continued fraction otherwise), so float32 results are accurate to a few ulps.

    Example::

        lax.igamma(jnp.array([1.0, 3.0]), jnp.array([1.0, 2.0]))   # [0.6321206, 0.3233236]
    """
    a, x = _igamma_operands("igamma", a, x)
    return IG.igamma_p.bind(a, x)


def igammac(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``
    (``jax.lax.igammac``, SciPy's ``gammaincc``), accurate where it is small. Same domain
    rules as ``igamma`` (1 at ``x = 0``, 0 at ``x = inf`` and at ``a = 0 < x``).

    Example::

        lax.igammac(jnp.array([1.0, 3.0]), jnp.array([1.0, 2.0]))   # [0.36787945, 0.6766764]
    """
    a, x = _igamma_operands("igammac", a, x)
    return IG.igammac_p.bind(a, x)


def igamma_grad_a(a: Any, x: Any) -> Any:
    """``dP(a, x)/da``, the derivative of ``igamma`` in its first argument
    (``jax.lax.igamma_grad_a``). NaN for ``a <= 0``, ``x < 0``, ``a = inf`` or NaN operands;
    0 at ``x = 0`` and ``x = inf``.

    Example::

        lax.igamma_grad_a(jnp.array([1.0]), jnp.array([2.0]))   # [-0.2208252]
    """
    a, x = _igamma_operands("igamma_grad_a", a, x)
    return IG.igamma_grad_a_p.bind(a, x)


def random_gamma_grad(a: Any, x: Any) -> Any:
    """The derivative of a Gamma(a, 1) draw ``x`` with respect to ``a`` at fixed quantile
    (implicit reparameterisation: ``-(dP/da)(a, x) / p(a, x)``), as ``jax.lax.random_gamma_grad``.
    ``a`` and ``x`` broadcast together; the result has ``a``'s dtype. NaN for ``a <= 0``,
    ``x < 0``, ``x = inf`` or NaN operands; 0 at ``x = 0``.

    Example::

        lax.random_gamma_grad(jnp.array([1.0]), jnp.array([2.0]))   # [1.6316909]
    """
    from pyree import lax
    a = _operand("random_gamma_grad", a)
    x = _operand("random_gamma_grad", x)
    if isinstance(a, TypedScalar) and not isinstance(x, TypedScalar):
        a = TypedScalar(a.value.item(), get_aval(x).dtype, a.aval.weak_type)
    try:
        shape = tuple(np.broadcast_shapes(get_aval(a).shape, get_aval(x).shape))
    except ValueError:
        raise ValueError(f"random_gamma_grad: incompatible shapes for broadcasting: "
                         f"{get_aval(a).shape}, {get_aval(x).shape}{_where(None)}") from None

    def full(v):
        aval = get_aval(v)
        if aval.shape == shape and not isinstance(v, TypedScalar):
            return v
        dims = tuple(range(len(shape) - aval.ndim, len(shape)))
        return lax.broadcast_in_dim(v, shape, dims)

    # Mixed dtypes (JAX accepts them here) meet in the float64 work; the result has a's.
    return IG.random_gamma_grad_p.bind(full(a), full(x))
