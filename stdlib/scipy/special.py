"""``pyree.scipy.special``: SciPy's special functions with ``jax.scipy.special``'s API, composed
from ``pyree.numpy`` and ``pyree.lax``, so that they run eagerly, under ``jit``, ``grad`` and
``vmap`` alike::

    import pyree
    import pyree.numpy as jnp
    from pyree.scipy.special import betaln, log_ndtr, ndtri

    log_ndtr(jnp.array([-40.0, 0.0]))     # [-804.6084, -0.6931472]
    ndtri(jnp.array([1e-30, 0.5]))        # [-11.464, 0.]
    pyree.grad(betaln)(2.0, 3.0)          # digamma(2) - digamma(5)

Arguments promote as in JAX (integers become floats; float32 by default, float64 with
``enable_x64``). Numerical choices, where the textbook formula would lose precision:

- ``log_ndtr`` switches to the asymptotic series of Mills' ratio in the far left tail (below
  -10 in float32, -20 in float64), where ``erfc`` underflows; ``log1p(-ndtr(-x))`` right of 0.
- ``ndtri`` is Acklam's rational approximation (relative error 1.2e-9) on the lower tail
  probability, refined by one Halley step against ``erfc``; it is accurate down to the
  smallest normal probabilities (IREE's CPU code flushes subnormals to zero, so they give
  -inf).
- ``betaln`` uses Stirling's series for ``lgamma(a + b) - lgamma(b)`` when an argument is
  large, instead of a difference of two large ``lgamma`` values.
- ``i0e``/``i1e`` sum their power series (nested, so no coefficient underflows) up to a
  switch point and the asymptotic expansion beyond.
- ``betainc`` is the continued fraction of the regularized incomplete beta function (modified
  Lentz iteration, run until it converges), differentiable in all three arguments.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Optional, Sequence, Union

import numpy as np

from pyree import lax
from pyree import nn as _nn
from pyree import numpy as jnp
from pyree._custom_derivatives import custom_jvp
from pyree._lax_special import fused_multiply_add
from pyree.numpy._util import check_arraylike, promote_dtypes_inexact
from pyree.transpiler.core.trace import get_aval

__all__ = [
    "beta", "betainc", "betaln", "digamma", "entr", "erf", "erfc", "erfinv", "expit",
    "factorial", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i0e", "i1",
    "i1e", "kl_div", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr",
    "ndtri", "poch", "polygamma", "rel_entr", "softmax", "xlog1py", "xlogy", "zeta",
]

Axis = Optional[Union[int, Sequence[int]]]

_LOG_2PI = math.log(2 * math.pi)
_LOG_SQRT_2PI = 0.5 * _LOG_2PI
_SQRT_2PI = math.sqrt(2 * math.pi)
_SQRT1_2 = math.sqrt(0.5)


def _promote(name: str, *args: Any) -> list:
    """The arguments as arrays of their common inexact dtype (JAX's promotion: integers become
    floats, Python scalars are weak)."""
    check_arraylike(name, *args)
    return [jnp.asarray(a) for a in promote_dtypes_inexact(*args)]


def _is_f64(x: Any) -> bool:
    return get_aval(x).dtype == np.float64


def _horner(coefficients: Sequence[float], z: Any) -> Any:
    """``c[0] + c[1] z + c[2] z**2 + ...`` (coefficients from the constant term up)."""
    acc = jnp.full_like(z, coefficients[-1])
    for c in reversed(coefficients[:-1]):
        acc = acc * z + c
    return acc


# -- log-sum-exp and softmax -------------------------------------------------------------------


def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """``log(sum(b * exp(a)))`` over ``axis`` (all axes by default), computed with the maximum
    taken out so that large ``a`` does not overflow. ``b`` weighs the terms; when the weighted
    sum may be negative, ``return_sign=True`` returns ``(log|sum|, sign)`` (otherwise a
    negative sum gives NaN). Its gradient in ``a`` is the (weighted) softmax.

    Example::

        logsumexp(jnp.array([1000.0, 1000.0]))                       # 1000.6931
        logsumexp(jnp.array([0.0, 0.0]), b=jnp.array([2.0, -3.0]), return_sign=True)
        # (0., -1.)
    """
    return _nn.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign,
                         where=where)


def softmax(x: Any, axis: Axis = None) -> Any:
    """``exp(x) / sum(exp(x))`` over ``axis`` (all axes by default, as in SciPy), stable for
    large ``x``.

    Example::

        softmax(jnp.array([1.0, 2.0, 3.0]))    # [0.09003057, 0.24472848, 0.66524094]
    """
    return _nn.softmax(x, axis=axis)


def log_softmax(x: Any, axis: Axis = None) -> Any:
    """``x - logsumexp(x)`` over ``axis`` (all axes by default, as in SciPy).

    Example::

        log_softmax(jnp.array([0.0, 0.0]))     # [-0.6931472, -0.6931472]
    """
    return _nn.log_softmax(x, axis=axis)


# -- logistic ----------------------------------------------------------------------------------


def expit(x: Any) -> Any:
    """The logistic sigmoid ``1 / (1 + exp(-x))``.

    Example::

        expit(jnp.array([0.0, 2.0]))           # [0.5, 0.880797]
    """
    (x,) = _promote("expit", x)
    return lax.logistic(x)


@custom_jvp
def _logit(x: Any) -> Any:
    # Near 1/2, log1p of (2x - 1) / (1 - x): 2x - 1 and 1 - x are exact there, so the small
    # result keeps its relative precision; log(x / (1 - x)) elsewhere (exact 1 - x near 1).
    middle = jnp.abs(x - 0.5) < 0.25
    safe = jnp.where(middle, x, 0.5)
    near_half = jnp.log1p((2.0 * safe - 1.0) / (1.0 - safe))
    return jnp.where(middle, near_half, jnp.log(x / (1.0 - x)))


_logit.defjvps(lambda g, ans, x: g / (x * (1.0 - x)))


def logit(x: Any) -> Any:
    """The inverse of ``expit``: ``log(x / (1 - x))``; -inf at 0, inf at 1, NaN outside
    [0, 1]. Its derivative is ``1 / (x (1 - x))``.

    Example::

        logit(jnp.array([0.5, 0.880797]))      # [0., 2.]
    """
    (x,) = _promote("logit", x)
    return _logit(x)


# -- error function and normal distribution ------------------------------------------------------


def erf(x: Any) -> Any:
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t**2) dt``.

    Example::

        erf(jnp.array([0.0, 1.0]))             # [0., 0.8427008]
    """
    (x,) = _promote("erf", x)
    return lax.erf(x)


def erfc(x: Any) -> Any:
    """The complementary error function ``1 - erf(x)``, accurate where it is small.

    Example::

        erfc(jnp.array([0.0, 5.0]))            # [1., 1.5374597e-12]
    """
    (x,) = _promote("erfc", x)
    return lax.erfc(x)


def erfinv(x: Any) -> Any:
    """The inverse of ``erf`` on (-1, 1); +-inf at +-1, NaN outside.

    Example::

        erfinv(jnp.array([0.0, 0.5]))          # [0., 0.4769363]
    """
    (x,) = _promote("erfinv", x)
    return lax.erf_inv(x)


def _normal_upper_tail(t: Any) -> Any:
    """``1 - Phi(t) = erfc(t / sqrt 2) / 2``, with the rounding of ``t / sqrt 2`` corrected:
    erfc's relative sensitivity there is ``2 z**2``, so the product's half-ulp error alone
    would cost float32 4e-6 at t = 9. The product's exact residual (an fma, plus the
    constant's own rounding) enters through erfc's derivative."""
    dtype = get_aval(t).dtype
    c_hi = float(np.asarray(_SQRT1_2, dtype))
    c_lo = _SQRT1_2 - c_hi
    z = t * c_hi
    residual = fused_multiply_add(t, jnp.full_like(t, c_hi), -z) + t * c_lo
    return 0.5 * (lax.erfc(z) - (2 / math.sqrt(math.pi)) * jnp.exp(-z * z) * residual)


def ndtr(x: Any) -> Any:
    """The standard normal CDF ``(1 + erf(x / sqrt 2)) / 2``, accurate in both tails.

    Example::

        ndtr(jnp.array([0.0, -10.0]))          # [0.5, 7.619853e-24]
    """
    (x,) = _promote("ndtr", x)
    # erf near 0 (where erfc(-z) would round 0.5 + small); erfc in the tails, where the
    # lower one is tiny and must not come from 1 - something.
    middle = jnp.abs(x) < 1.0
    xm = jnp.where(middle, x, 0.0)
    tail = _normal_upper_tail(jnp.abs(jnp.where(middle, 1.0, x)))   # Phi(-|x|)
    return jnp.where(middle, 0.5 + 0.5 * lax.erf(xm * _SQRT1_2),
                     jnp.where(x > 0, 1.0 - tail, tail))


# log Phi(x) ~ -x**2/2 - log(-x) - log sqrt(2 pi) + log(1 + sum_n (-1)**n (2n-1)!! / x**(2n))
# (the asymptotic series of Mills' ratio) below these points; above, erfc has not underflowed.
_LOG_NDTR_LOWER = {np.dtype(np.float32): -10.0, np.dtype(np.float64): -20.0}
_LOG_NDTR_TERMS = 10  # the 11th term is below 1e-11 at -10 and 1e-17 at -20


def _mills_series(x: Any) -> tuple:
    """Where ``x`` is far left: the mask, ``x`` clamped into that region (so that the other
    branches' inputs, and so their derivatives, stay finite) and ``S - 1`` for the series
    ``S = 1 - 1/x**2 + 3/x**4 - 15/x**6 + ...`` with ``Phi(x) = phi(x) S / (-x)``."""
    lower = _LOG_NDTR_LOWER.get(get_aval(x).dtype, -10.0)
    far = x <= lower
    xf = jnp.where(far, x, lower)
    z = 1.0 / (xf * xf)
    acc = jnp.ones_like(xf)
    for n in range(_LOG_NDTR_TERMS, 1, -1):
        acc = 1.0 - (2 * n - 1) * z * acc
    return far, xf, -z * acc


def _log_ndtr_formula(x: Any) -> Any:
    far, xf, s_minus_1 = _mills_series(x)
    series = -0.5 * xf * xf - jnp.log(-xf) - _LOG_SQRT_2PI + jnp.log1p(s_minus_1)
    xm = jnp.where(far, 0.0, jnp.minimum(x, 0.0))
    middle = jnp.log(_normal_upper_tail(-xm))
    right = jnp.log1p(-_normal_upper_tail(jnp.maximum(x, 0.0)))
    return jnp.where(far, series, jnp.where(x <= 0, middle, right))


def _log_ndtr_derivative(g: Any, ans: Any, x: Any) -> Any:
    # d/dx log Phi = phi / Phi: -x / S far left (no cancellation), elsewhere
    # exp(log phi - log Phi).
    far, xf, s_minus_1 = _mills_series(x)
    xn = jnp.where(far, 0.0, x)
    near = jnp.exp(-0.5 * xn * xn - _LOG_SQRT_2PI - jnp.where(far, 0.0, ans))
    return g * jnp.where(far, -xf / (1.0 + s_minus_1), near)


_log_ndtr = custom_jvp(_log_ndtr_formula)
_log_ndtr.defjvps(_log_ndtr_derivative)


def log_ndtr(x: Any, series_order: int = 3) -> Any:
    """``log(ndtr(x))``, accurate in both tails: the asymptotic series of Mills' ratio far
    left (so that ``log_ndtr(-1e3)`` is ``-500006.9`` rather than ``-inf``), ``log1p`` right of
    0. ``series_order`` is accepted for JAX's signature; the number of terms is chosen for the
    dtype's precision.

    Example::

        log_ndtr(jnp.array([-40.0, 0.0, 10.0]))    # [-804.6084, -0.6931472, -7.619853e-24]
    """
    del series_order
    (x,) = _promote("log_ndtr", x)
    return _log_ndtr(x)


# Acklam's rational approximations of the normal quantile (relative error below 1.15e-9):
# central region |p - 1/2| <= 1/2 - _ACKLAM_LOW in r = p - 1/2, tails in t = sqrt(-2 log p).
_ACKLAM_A = [-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00]
_ACKLAM_B = [-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
             6.680131188771972e+01, -1.328068155288572e+01, 1.0]
_ACKLAM_C = [-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00]
_ACKLAM_D = [7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
             3.754408661907416e+00, 1.0]
_ACKLAM_LOW = 0.02425


def _ndtri_formula(p: Any) -> Any:
    # Work on the lower tail probability q <= 1/2: 1 - p is exact for p >= 1/2, and the
    # quantile is odd about 1/2.
    upper = p > 0.5
    q = jnp.where(upper, 1.0 - p, p)
    tail = q < _ACKLAM_LOW
    qc = jnp.where(tail, 0.5, q)
    r = qc - 0.5
    s = r * r
    central = r * _horner(_ACKLAM_A[::-1], s) / _horner(_ACKLAM_B[::-1], s)
    qt = jnp.where(tail & (q > 0), q, _ACKLAM_LOW)
    t = jnp.sqrt(-2.0 * jnp.log(qt))
    tails = _horner(_ACKLAM_C[::-1], t) / _horner(_ACKLAM_D[::-1], t)
    x = jnp.where(tail, tails, central)
    # One Halley step on Phi(x) = q: Acklam's 1e-9 becomes full float64 precision, and it
    # repairs float32's rounding in the central rational (whose terms cancel: 4e-5 at
    # q = 0.03 unrefined). With e the residual, u = e / phi(x) = (e / q) exp(log q + x**2/2 +
    # log sqrt(2 pi)): written through log q it neither overflows nor underflows, down to the
    # smallest q.
    qs = jnp.where(q > 0, q, 0.5)
    e = _normal_upper_tail(-x) - qs
    u = (e / qs) * jnp.exp(jnp.log(qs) + 0.5 * x * x + _LOG_SQRT_2PI)
    x = x - u / (1.0 + 0.5 * x * u)
    x = jnp.where(upper, -x, x)
    x = jnp.where(p == 0, -jnp.inf, jnp.where(p == 1, jnp.inf, x))
    return jnp.where((p < 0) | (p > 1), jnp.nan, x)


_ndtri = custom_jvp(_ndtri_formula)
# d ndtri/dp = 1 / phi(ndtri(p)).
_ndtri.defjvps(lambda g, ans, p: g * (_SQRT_2PI * jnp.exp(0.5 * ans * ans)))


def ndtri(p: Any) -> Any:
    """The standard normal quantile, the inverse of ``ndtr``: -inf at 0, inf at 1, NaN
    outside [0, 1]. Accurate in both tails (to full precision in float64, down to the smallest
    normal ``p``); its derivative is ``1 / phi(ndtri(p))``.

    Example::

        ndtri(jnp.array([0.975, 1e-30]))       # [1.959964, -11.464]
    """
    (p,) = _promote("ndtri", p)
    return _ndtri(p)


# -- gamma function and friends ----------------------------------------------------------------


def gammaln(x: Any) -> Any:
    """``log |Gamma(x)|``; inf at the poles 0, -1, -2, ...

    Example::

        gammaln(jnp.array([0.5, 10.0]))        # [0.5723649, 12.801827]
    """
    (x,) = _promote("gammaln", x)
    return lax.lgamma(x)


def gammasgn(x: Any) -> Any:
    """The sign of ``Gamma(x)``: 1 for ``x > 0``; for negative ``x``, -1 on the intervals
    (-1, 0), (-3, -2), ... and 1 on the others; NaN at the poles -1, -2, ..., and the sign of
    zero at 0 (as SciPy).

    Example::

        gammasgn(jnp.array([2.5, -0.5, -1.5]))     # [1., -1., 1.]
    """
    (x,) = _promote("gammasgn", x)
    floor = jnp.floor(x)
    # floor(x) odd (-1 on (-1, 0), -3 on (-3, -2)) means an odd number of negative factors.
    half = 0.5 * floor
    negative = jnp.where(jnp.floor(half) == half, 1.0, -1.0)
    sign = jnp.where(x > 0, 1.0, negative)
    # 1 / -0.0 = -inf tells the sign of zero.
    sign = jnp.where(x == 0, jnp.where(1.0 / x < 0, -1.0, 1.0), sign)
    return jnp.where(((x < 0) & (floor == x)) | jnp.isnan(x), jnp.nan, sign)


def gamma(x: Any) -> Any:
    """The gamma function, ``gammasgn(x) * exp(gammaln(x))``; inf at 0 (with the sign of
    zero), NaN at the negative integers, as SciPy.

    Example::

        gamma(jnp.array([5.0, 0.5, -0.5]))     # [24., 1.7724539, -3.5449078]
    """
    (x,) = _promote("gamma", x)
    return gammasgn(x) * jnp.exp(lax.lgamma(x))


def digamma(x: Any) -> Any:
    """The logarithmic derivative of the gamma function, ``psi(x)``; NaN at 0, -1, -2, ...

    Example::

        digamma(jnp.array([1.0, 0.5]))         # [-0.5772157, -1.9635100]
    """
    (x,) = _promote("digamma", x)
    return lax.digamma(x)


# Stirling's series: lgamma(z) = (z - 1/2) log z - z + log sqrt(2 pi) + corr(z) with
# corr(z) = sum_k B_2k / (2k (2k - 1) z**(2k - 1)); 8 terms are below 1e-16 for z >= 8.
_STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156,
             -3617 / 122400]
_STIRLING_FROM = 8.0


def _stirling_correction(z: Any) -> Any:
    """``lgamma(z) - ((z - 1/2) log z - z + log sqrt(2 pi))`` for ``z >= 8``."""
    inv = 1.0 / z
    return inv * _horner(_STIRLING, inv * inv)


def _betaln(a: Any, b: Any) -> Any:
    x, y = jnp.minimum(a, b), jnp.maximum(a, b)
    direct = lax.lgamma(x) + lax.lgamma(y) - lax.lgamma(x + y)
    big_y = (y >= _STIRLING_FROM) & (x > 0)
    big_x = x >= _STIRLING_FROM
    # x small, y large: lgamma(x) - (lgamma(x + y) - lgamma(y)), the difference from
    # Stirling's series (y - 1/2) log1p(x/y) + x log(x + y) - x + corr(x + y) - corr(y).
    xs = jnp.where(big_y & ~big_x, x, 1.0)
    ys = jnp.where(big_y & ~big_x, y, _STIRLING_FROM)
    gap = ((ys - 0.5) * jnp.log1p(xs / ys) + xs * jnp.log(xs + ys) - xs
           + _stirling_correction(xs + ys) - _stirling_correction(ys))
    one_big = lax.lgamma(xs) - gap
    # Both large: log sqrt(2 pi) - log(y)/2 + (x - 1/2) log(x / (x + y)) - y log1p(x / y)
    # + corr(x) + corr(y) - corr(x + y): no large terms cancel.
    xb = jnp.where(big_x, x, _STIRLING_FROM)
    yb = jnp.where(big_x, y, _STIRLING_FROM)
    both_big = (_LOG_SQRT_2PI - 0.5 * jnp.log(yb) + (xb - 0.5) * jnp.log(xb / (xb + yb))
                - yb * jnp.log1p(xb / yb) + _stirling_correction(xb)
                + _stirling_correction(yb) - _stirling_correction(xb + yb))
    return jnp.where(big_x, both_big, jnp.where(big_y, one_big, direct))


def betaln(a: Any, b: Any) -> Any:
    """``log |B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)``, accurate when an argument
    is large (Stirling's series instead of cancelling large ``gammaln`` values).

    Example::

        betaln(jnp.array([1.0, 0.5]), jnp.array([1e4, 0.5]))   # [-9.2103404, 1.1447299]
    """
    a, b = _promote("betaln", a, b)
    return _betaln(a, b)


def beta(a: Any, b: Any) -> Any:
    """The beta function ``Gamma(a) Gamma(b) / Gamma(a + b)``.

    Example::

        beta(jnp.array([2.0]), jnp.array([3.0]))    # [0.08333334]
    """
    a, b = _promote("beta", a, b)
    sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
    return sign * jnp.exp(_betaln(a, b))


def multigammaln(a: Any, d: int) -> Any:
    """The log of the multivariate gamma function of dimension ``d`` (a Python int):
    ``d (d - 1) / 4 log(pi) + sum_{j < d} gammaln(a - j / 2)``; needs ``a > (d - 1) / 2``.

    Example::

        multigammaln(jnp.array([2.0, 3.0]), 3)     # [1.5963126, 2.6949249]
    """
    d = int(d)
    if d < 1:
        raise ValueError(f"multigammaln: d must be a positive integer, got {d}")
    (a,) = _promote("multigammaln", a)
    total = lax.lgamma(a)
    for j in range(1, d):
        total = total + lax.lgamma(a - 0.5 * j)
    return total + d * (d - 1) / 4 * math.log(math.pi)


def factorial(n: Any, exact: bool = False) -> Any:
    """``n! = Gamma(n + 1)`` (for non-integer ``n`` too); 0 for ``n < 0``, as SciPy.

    Example::

        factorial(jnp.array([0.0, 5.0, -1.0]))     # [1., 120., 0.]
    """
    if exact:
        raise ValueError("factorial with exact=True is not supported (as in JAX)")
    (n,) = _promote("factorial", n)
    return jnp.where(n < 0, 0.0, jnp.exp(lax.lgamma(jnp.where(n < 0, 0.0, n) + 1.0)))


def poch(z: Any, m: Any) -> Any:
    """The rising factorial ``Gamma(z + m) / Gamma(z)``.

    Example::

        poch(jnp.array([3.0]), jnp.array([2.0]))   # [12.]
    """
    z, m = _promote("poch", z, m)
    sign = gammasgn(z + m) * gammasgn(z)
    value = sign * jnp.exp(lax.lgamma(z + m) - lax.lgamma(z))
    # Gamma(z) has a pole at a non-positive integer z: 1/Gamma(z) = 0 there (unless z + m is a
    # pole too, where the ratio is the finite limit, not computed here).
    pole = (z <= 0) & (jnp.floor(z) == z)
    return jnp.where(m == 0, 1.0, jnp.where(pole, 0.0, value))


def _broadcast(*args: Any) -> list:
    shape = jnp.broadcast_shapes(*[jnp.shape(a) for a in args])
    return [jnp.broadcast_to(a, shape) for a in args]


def gammainc(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function ``P(a, x)`` (SciPy's ``gammainc``),
    differentiable in both arguments.

    Example::

        gammainc(jnp.array([1.0, 3.0]), jnp.array([1.0, 2.0]))   # [0.6321206, 0.3233236]
    """
    a, x = _broadcast(*_promote("gammainc", a, x))
    return lax.igamma(a, x)


def gammaincc(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function ``Q(a, x) = 1 - P(a, x)``, accurate
    where it is small.

    Example::

        gammaincc(jnp.array([1.0, 3.0]), jnp.array([1.0, 2.0]))  # [0.36787945, 0.6766764]
    """
    a, x = _broadcast(*_promote("gammaincc", a, x))
    return lax.igammac(a, x)


# -- Hurwitz zeta and polygamma ------------------------------------------------------------------

# B_2j / (2j)! for the Euler-Maclaurin tail of the zeta sum.
_BERNOULLI_2J = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
                 Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
                 Fraction(43867, 798), Fraction(-174611, 330), Fraction(854513, 138),
                 Fraction(-236364091, 2730)]
_ZETA_EM = [float(b / math.factorial(2 * j + 2)) for j, b in enumerate(_BERNOULLI_2J)]
_ZETA_DIRECT = 9  # terms summed directly before Euler-Maclaurin takes over at q + 9


def zeta(x: Any, q: Any = None) -> Any:
    """The Hurwitz zeta function ``sum_k (k + q) ** -x`` (the Riemann zeta function when ``q``
    is None), for ``x > 1``, ``q > 0``: inf at ``x = 1``, NaN for ``x < 1`` or ``q <= 0``
    (inf at the non-positive integers ``q``). Computed by the Euler-Maclaurin formula, so it
    is differentiable in both arguments.

    Example::

        zeta(jnp.array([2.0, 3.0]), 1.0)       # [1.644934, 1.2020569]
    """
    s, q = _promote("zeta", x, 1.0 if q is None else q)
    ok = (s > 1) & (q > 0)
    ss = jnp.where(ok, s, 2.0)
    qq = jnp.where(ok, q, 1.0)
    total = jnp.zeros_like(ss + qq)
    for k in range(_ZETA_DIRECT):
        total = total + jnp.exp(-ss * jnp.log(qq + k))
    w = qq + _ZETA_DIRECT
    log_w = jnp.log(w)
    w_s = jnp.exp(-ss * log_w)
    total = total + w * w_s / (ss - 1.0) + 0.5 * w_s
    # Tail terms B_2j/(2j)! s (s+1) ... (s+2j-2) w**(-s-2j+1), each from the last.
    inv_w2 = 1.0 / (w * w)
    term = ss * w_s / w
    for j, coefficient in enumerate(_ZETA_EM):
        if j:
            term = term * (ss + 2 * j - 1) * (ss + 2 * j) * inv_w2
        total = total + coefficient * term
    pole_q = (q <= 0) & (jnp.floor(q) == q)
    bad = jnp.where((s == 1) | pole_q, jnp.inf, jnp.nan)
    return jnp.where(ok, total, bad)


def polygamma(n: Any, x: Any) -> Any:
    """The ``n``-th derivative of ``digamma`` (``n`` a non-negative integer, or an array of
    them): ``digamma`` for ``n = 0``, else ``(-1)**(n + 1) n! zeta(n + 1, x)`` (so ``x > 0``
    for ``n >= 1``).

    Example::

        polygamma(jnp.array([0, 1, 2]), 1.0)   # [-0.5772157, 1.644934, -2.4041138]
    """
    check_arraylike("polygamma", n, x)
    if isinstance(n, (int, np.integer)) and not isinstance(n, bool):
        # A static order: n! and the sign in Python (gammaln of a constant would be folded
        # by IREE's constant evaluation, which costs seconds of compile time).
        (x,) = _promote("polygamma", x)
        order = int(n)
        if order < 0:
            raise ValueError(f"polygamma: n must be non-negative, got {order}")
        if order == 0:
            return lax.digamma(x)
        return (-1) ** (order + 1) * float(math.factorial(order)) * zeta(order + 1.0, x)
    n_arr = jnp.asarray(n)
    if n_arr.dtype.kind not in "iub":
        raise ValueError(f"polygamma: n must be integer-valued, got dtype {n_arr.dtype}")
    (x,) = _promote("polygamma", x)
    nf = n_arr.astype(x.dtype)
    order = jnp.maximum(nf, 1.0)
    sign = jnp.where(jnp.floor(0.5 * order) == 0.5 * order, -1.0, 1.0)   # (-1)**(n + 1)
    higher = sign * jnp.exp(lax.lgamma(order + 1.0)) * zeta(order + 1.0, x)
    return jnp.where(nf == 0, lax.digamma(x + jnp.zeros_like(nf)), higher)


# -- x log y and entropies ---------------------------------------------------------------------


@custom_jvp
def _xlogy(x: Any, y: Any) -> Any:
    return jnp.where(x == 0, 0.0, x * jnp.log(jnp.where(x == 0, 1.0, y)))


@_xlogy.defjvp
def _xlogy_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    # d/dy is x / y unguarded, as in JAX: NaN at x == y == 0.
    return _xlogy(x, y), tx * jnp.log(y) + ty * (x / y)


def xlogy(x: Any, y: Any) -> Any:
    """``x * log(y)``, and 0 where ``x == 0`` (even for ``y == 0``).

    Example::

        xlogy(jnp.array([0.0, 2.0]), jnp.array([0.0, 3.0]))   # [0., 2.1972246]
    """
    x, y = _broadcast(*_promote("xlogy", x, y))
    return _xlogy(x, y)


@custom_jvp
def _xlog1py(x: Any, y: Any) -> Any:
    return jnp.where(x == 0, 0.0, x * jnp.log1p(jnp.where(x == 0, 0.0, y)))


@_xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    # d/dy is x / (1 + y) unguarded, as in JAX: NaN at x == 0, y == -1.
    return _xlog1py(x, y), tx * jnp.log1p(y) + ty * (x / (1.0 + y))


def xlog1py(x: Any, y: Any) -> Any:
    """``x * log1p(y)``, and 0 where ``x == 0`` (even for ``y == -1``).

    Example::

        xlog1py(jnp.array([0.0, 2.0]), jnp.array([-1.0, 1e-8]))   # [0., 2e-08]
    """
    x, y = _broadcast(*_promote("xlog1py", x, y))
    return _xlog1py(x, y)


def entr(x: Any) -> Any:
    """The elementwise entropy ``-x log x``: 0 at 0, -inf for ``x < 0``.

    Example::

        entr(jnp.array([0.0, 0.5, -1.0]))      # [0., 0.34657359, -inf]
    """
    (x,) = _promote("entr", x)
    return _entr(x)


@custom_jvp
def _entr(x: Any) -> Any:
    positive = x > 0
    safe = jnp.where(positive, x, 1.0)
    return jnp.where(positive, -safe * jnp.log(safe), jnp.where(x == 0, 0.0, -jnp.inf))


@_entr.defjvp
def _entr_jvp(primals, tangents):
    # -(log x + 1) everywhere, as JAX's: inf at 0 (the one-sided slope), NaN below.
    (x,), (t,) = primals, tangents
    return _entr(x), -(jnp.log(x) + 1.0) * t


def rel_entr(p: Any, q: Any) -> Any:
    """The elementwise relative entropy: ``p log(p / q)`` for ``p, q > 0``, 0 for ``p == 0``
    and ``q >= 0``, inf otherwise.

    Example::

        rel_entr(jnp.array([1.0, 0.0]), jnp.array([2.0, 1.0]))  # [-0.6931472, 0.]
    """
    p, q = _promote("rel_entr", p, q)
    both = (p > 0) & (q > 0)
    ps, qs = jnp.where(both, p, 1.0), jnp.where(both, q, 1.0)
    return jnp.where(both, ps * jnp.log(ps / qs),
                     jnp.where((p == 0) & (q >= 0), 0.0, jnp.inf))


def kl_div(p: Any, q: Any) -> Any:
    """The elementwise Kullback-Leibler term ``p log(p / q) - p + q`` (``q`` for ``p == 0``,
    ``q >= 0``; inf where ``p < 0`` or ``q <= 0 < p``).

    Example::

        kl_div(jnp.array([1.0, 0.0]), jnp.array([2.0, 1.0]))    # [0.30685282, 1.]
    """
    p, q = _promote("kl_div", p, q)
    return rel_entr(p, q) - p + q


# -- modified Bessel functions of order 0 and 1 ----------------------------------------------------

# Switch point, power series terms and asymptotic terms per dtype: the neglected terms are
# below the dtype's rounding at the switch point.
_BESSEL_PLAN = {np.dtype(np.float32): (12.0, 22, 12), np.dtype(np.float64): (20.0, 40, 26)}


def _bessel_i_scaled(x: Any, nu: int) -> Any:
    """``exp(-|x|) I_nu(x)`` for ``nu`` in (0, 1)."""
    switch, n_series, n_asymptotic = _BESSEL_PLAN.get(get_aval(x).dtype,
                                                      _BESSEL_PLAN[np.dtype(np.float32)])
    small = jnp.abs(x) <= switch
    # I_nu(x) = (x/2)**nu sum_k (x**2/4)**k / (k! (k + nu)!), nested as
    # 1 + t/(1 (1+nu)) (1 + t/(2 (2+nu)) (1 + ...)) so that no coefficient underflows.
    xs = jnp.where(small, x, 0.0)
    t = 0.25 * xs * xs
    acc = jnp.ones_like(xs)
    for k in range(n_series, 0, -1):
        acc = 1.0 + acc * t / (k * (k + nu))
    # (|xs| as xs * sign(xs): slope 0 at 0, JAX's derivative of i0e there; abs's slope is 1.)
    series = acc * jnp.exp(-(xs * jnp.sign(xs)))
    if nu == 1:
        series = series * (0.5 * xs)  # odd in x, with slope 1/2 at 0 (no sign() kink)
    # Large |x|: exp(-x) I_nu(x) ~ (2 pi x)**-1/2 sum_k (-1)**k a_k / x**k with
    # a_k / a_{k-1} = (4 nu**2 - (2k - 1)**2) / (8k), nested the same way.
    xl = jnp.where(small, switch + 1.0, jnp.abs(x))
    z = 1.0 / xl
    acc = jnp.ones_like(xl)
    for k in range(n_asymptotic, 0, -1):
        acc = 1.0 + acc * z * (((2 * k - 1) ** 2 - 4 * nu * nu) / (8 * k))
    asymptotic = acc / jnp.sqrt(2 * math.pi * xl)
    if nu == 1:
        asymptotic = jnp.where(x < 0, -asymptotic, asymptotic)
    return jnp.where(small, series, asymptotic)


def i0e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 0, ``exp(-|x|) I0(x)``.

    Example::

        i0e(jnp.array([0.0, 1.0, 100.0]))      # [1., 0.4657596, 0.03994437]
    """
    (x,) = _promote("i0e", x)
    return _bessel_i_scaled(x, 0)


def i1e(x: Any) -> Any:
    """The exponentially scaled modified Bessel function of order 1, ``exp(-|x|) I1(x)``.

    Example::

        i1e(jnp.array([0.0, 1.0, -100.0]))     # [0., 0.2079104, -0.03974415]
    """
    (x,) = _promote("i1e", x)
    return _bessel_i_scaled(x, 1)


def i0(x: Any) -> Any:
    """The modified Bessel function of order 0, ``I0(x)`` (inf once it overflows).

    Example::

        i0(jnp.array([0.0, 1.0]))              # [1., 1.2660659]
    """
    (x,) = _promote("i0", x)
    return jnp.exp(jnp.abs(x)) * _bessel_i_scaled(x, 0)


def i1(x: Any) -> Any:
    """The modified Bessel function of order 1, ``I1(x)``.

    Example::

        i1(jnp.array([0.0, 1.0]))              # [0., 0.5651591]
    """
    (x,) = _promote("i1", x)
    return jnp.exp(jnp.abs(x)) * _bessel_i_scaled(x, 1)


# -- regularized incomplete beta function ----------------------------------------------------------

_BETAINC_MAX_ITERATIONS = {np.dtype(np.float32): 1000, np.dtype(np.float64): 3000}


class _Dual:
    """A value with its partial derivatives in (p, q), as a tuple of arrays: forward-mode
    arithmetic for the few operations of the continued fraction, written out so that the
    loop below can return the derivatives without autodiff through the loop."""

    def __init__(self, parts: tuple) -> None:
        self.parts = tuple(parts)

    def __add__(self, other: Any) -> "_Dual":
        if isinstance(other, _Dual):
            return _Dual(a + b for a, b in zip(self.parts, other.parts))
        return _Dual((self.parts[0] + other,) + self.parts[1:])

    def __mul__(self, other: Any) -> "_Dual":
        if isinstance(other, _Dual):
            v, w = self.parts[0], other.parts[0]
            return _Dual((v * w,) + tuple(d * w + v * e for d, e in
                                          zip(self.parts[1:], other.parts[1:])))
        return _Dual(a * other for a in self.parts)

    def reciprocal(self) -> "_Dual":
        inv = 1.0 / self.parts[0]
        return _Dual((inv,) + tuple(-d * inv * inv for d in self.parts[1:]))

    def __truediv__(self, other: "_Dual") -> "_Dual":
        return self * other.reciprocal()

    def floor_magnitude(self, tiny: float) -> "_Dual":
        """Lentz's guard: a value below ``tiny`` in magnitude becomes ``tiny`` (a constant)."""
        small = jnp.abs(self.parts[0]) < tiny
        return _Dual((jnp.where(small, tiny, self.parts[0]),)
                     + tuple(jnp.where(small, 0.0, d) for d in self.parts[1:]))


def _betainc_continued_fraction(p: Any, q: Any, x: Any, partials: bool) -> tuple:
    """The continued fraction of ``I_x(p, q) / front`` (for ``x < (p + 1) / (p + q + 2)``,
    where it converges quickly) by the modified Lentz method, with its derivatives in ``p``
    and ``q`` when ``partials``; returns the tuple of parts."""
    dtype = get_aval(x).dtype
    eps = float(np.finfo(dtype).eps)
    tiny = float(np.finfo(dtype).tiny) * 1e3
    max_iterations = _BETAINC_MAX_ITERATIONS.get(dtype, 1000)
    zero, one = jnp.zeros_like(x), jnp.ones_like(x)
    P = _Dual((p, one, zero) if partials else (p,))
    Q = _Dual((q, zero, one) if partials else (q,))
    width = len(P.parts)

    def const(v):
        return _Dual((v,) + (zero,) * (width - 1))

    c = const(one)
    d = (const(one) + (P + Q) * (P + 1.0).reciprocal() * (-x)).floor_magnitude(tiny)
    d = d.reciprocal()
    h = d

    def step(d, c, coefficient):
        d = (const(one) + coefficient * d).floor_magnitude(tiny).reciprocal()
        c = (const(one) + coefficient / c).floor_magnitude(tiny)
        return d, c, d * c

    # Each turn multiplies h by the factor the previous turn computed (``pending``), so that
    # the body reads every value it carries: IREE 3.13 crashes or rejects a while loop one of
    # whose carried values only the condition reads (here, the convergence test's factor).
    def body(state):
        m, d, c, h, pending = state
        d, c, h = _Dual(d), _Dual(c), _Dual(h) * _Dual(pending)
        m2 = 2.0 * m
        # Even step: m (q - m) x / ((p + 2m - 1) (p + 2m)).
        even = (Q + (-m)) * (m * x) / ((P + (m2 - 1.0)) * (P + m2))
        d, c, even_factor = step(d, c, even)
        # Odd step: -(p + m) (p + q + m) x / ((p + 2m) (p + 2m + 1)).
        odd = (P + m) * (P + Q + m) * (-x) / ((P + m2) * (P + (m2 + 1.0)))
        d, c, odd_factor = step(d, c, odd)
        return m + 1.0, d.parts, c.parts, h.parts, (even_factor * odd_factor).parts

    def cond(state):
        # Iterate until the factors are 1 to working precision everywhere.
        # The derivatives need their own test: for integer q the value's fraction ends
        # (its coefficient q - m reaches 0) while the q-derivative's goes on.
        m, _, _, _, pending = state
        converged = jnp.all(jnp.abs(pending[0] - 1.0) <= eps)
        for part in pending[1:]:
            converged = converged & jnp.all(jnp.abs(part) <= eps)
        return jnp.logical_and(jnp.logical_not(converged), m <= max_iterations)

    # The first turn's pending factor is h's start value (and not 1, which would stop the
    # loop before it starts).
    start = (jnp.ones((), dtype), d.parts, c.parts, const(one).parts, h.parts)
    _, _, _, h_parts, pending = lax.while_loop(cond, body, start)
    return (_Dual(h_parts) * _Dual(pending)).parts


def _log1pmx(d: Any) -> Any:
    """``log1p(d) - d`` without cancellation for small ``d``: with ``s = d / (2 + d)``,
    ``log1p(d) = 2 atanh(s)``, and the difference is ``-d s + 2 s**3 (1/3 + s**2/5 + ...)``."""
    small = jnp.abs(d) < 0.5
    ds = jnp.where(small, d, 0.0)
    s = ds / (2.0 + ds)
    s2 = s * s
    terms = 16 if _is_f64(d) else 8  # s**2 <= 1/9
    series = -ds * s + 2.0 * s * s2 * _horner([1.0 / (2 * k + 3) for k in range(terms)], s2)
    dl = jnp.where(small, 1.0, d)
    return jnp.where(small, series, jnp.log1p(dl) - dl)


def _log_beta_kernel(a: Any, b: Any, x: Any) -> tuple:
    """``log(x**a (1 - x)**b / B(a, b))`` and its derivatives in ``a`` and ``b``.

    For ``a, b >= 8`` the direct sum cancels large terms; with ``x0 = a / (a + b)``,
    ``da = x / x0 - 1`` and ``db = -da a / b`` it is ``a log1pmx(da) + b log1pmx(db)
    + log(a b / (a + b)) / 2 - log sqrt(2 pi) - (corr(a) + corr(b) - corr(a + b))``, since
    ``a da + b db = 0``: two non-positive terms of the size of the result."""
    log_x, log_y = jnp.log(x), jnp.log1p(-x)
    direct = a * log_x + b * log_y - _betaln(a, b)
    big = (a >= _STIRLING_FROM) & (b >= _STIRLING_FROM)
    ab = jnp.where(big, a, _STIRLING_FROM)
    bb = jnp.where(big, b, _STIRLING_FROM)
    da = (x * (ab + bb) - ab) / ab
    db = -da * ab / bb
    stirling = (ab * _log1pmx(da) + bb * _log1pmx(db) + 0.5 * jnp.log(ab * bb / (ab + bb))
                - _LOG_SQRT_2PI - _stirling_correction(ab) - _stirling_correction(bb)
                + _stirling_correction(ab + bb))
    psi_ab = lax.digamma(a + b)
    return (jnp.where(big, stirling, direct), log_x - lax.digamma(a) + psi_ab,
            log_y - lax.digamma(b) + psi_ab)


def _betainc_parts(a: Any, b: Any, x: Any, partials: bool) -> tuple:
    """``I_x(a, b)`` and, when ``partials``, its derivatives in ``a`` and ``b``."""
    inside = (x > 0) & (x < 1) & (a > 0) & (b > 0)
    xs = jnp.where(inside, x, 0.5)
    a_s = jnp.where(inside, a, 1.0)
    b_s = jnp.where(inside, b, 1.0)
    # The fraction converges fast below the mean (a + 1) / (a + b + 2); above it, use
    # I_x(a, b) = 1 - I_{1-x}(b, a). The front factor x**a (1-x)**b / B(a, b) is the same in
    # both orientations, so it is computed in the caller's, from the exact x.
    swap = xs > (a_s + 1.0) / (a_s + b_s + 2.0)
    p = jnp.where(swap, b_s, a_s)
    q = jnp.where(swap, a_s, b_s)
    u = jnp.where(swap, 1.0 - xs, xs)
    h = _betainc_continued_fraction(p, q, u, partials)
    kernel, kernel_a, kernel_b = _log_beta_kernel(a_s, b_s, xs)
    front = jnp.exp(kernel) / p
    part = front * h[0]
    value = jnp.where(swap, 1.0 - part, part)
    # Outside (0, 1): 0 at x = 0, 1 at x = 1, NaN beyond or for non-positive a, b.
    edge = jnp.where(x == 0, 0.0, jnp.where(x == 1, 1.0, jnp.nan))
    edge = jnp.where((a > 0) & (b > 0), edge, jnp.nan)
    value = jnp.where(inside, value, edge)
    if not partials:
        return (value,)
    kernel_p = jnp.where(swap, kernel_b, kernel_a)
    kernel_q = jnp.where(swap, kernel_a, kernel_b)
    dp = front * (h[1] + h[0] * (kernel_p - 1.0 / p))
    dq = front * (h[2] + h[0] * kernel_q)
    da = jnp.where(swap, -dq, dp)
    db = jnp.where(swap, -dp, dq)
    return value, jnp.where(inside, da, 0.0), jnp.where(inside, db, 0.0)


@custom_jvp
def _betainc(a: Any, b: Any, x: Any) -> Any:
    return _betainc_parts(a, b, x, False)[0]


@_betainc.defjvp
def _betainc_jvp(primals, tangents):
    (a, b, x), (ta, tb, tx) = primals, tangents
    value, da, db = _betainc_parts(a, b, x, True)
    # d/dx is the Beta(a, b) density.
    inside = (x > 0) & (x < 1)
    xs = jnp.where(inside, x, 0.5)
    a_s, b_s = jnp.where(inside, a, 1.0), jnp.where(inside, b, 1.0)
    density = jnp.exp(_log_beta_kernel(a_s, b_s, xs)[0]) / (xs * (1.0 - xs))
    return value, da * ta + db * tb + jnp.where(inside, density, 0.0) * tx


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function ``I_x(a, b)``, the CDF of Beta(a, b) at ``x``,
    for ``a, b > 0`` and ``0 <= x <= 1`` (NaN otherwise). Evaluated by its continued fraction
    until it converges (it needs about ``sqrt(max(a, b))`` steps; at most 1000 in float32,
    3000 in float64); differentiable in ``x`` (the Beta density) and, beyond JAX, in ``a`` and
    ``b`` (the fraction's derivatives are carried along in the same loop).

    Example::

        betainc(jnp.array([2.0]), jnp.array([3.0]), jnp.array([0.4]))   # [0.5248]
    """
    a, b, x = _broadcast(*_promote("betainc", a, b, x))
    return _betainc(a, b, x)
