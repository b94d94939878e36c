"""Assorted ``pyree.numpy`` functions: diff, interp, polynomials, histogram, bincount, digitize,
vander, apply_along_axis.

Searches (``searchsorted``-like lookups) are composed of comparisons and sums, and lookups of
computed indices of one-hot selections, so that everything runs under jit, grad and vmap.
"""
from __future__ import annotations

__all__ = [
    "apply_along_axis", "bincount", "diff", "digitize", "ediff1d", "histogram",
    "histogram_bin_edges", "interp", "polyadd", "polyder", "polyint", "polymul", "polysub",
    "polyval", "vander",
    "apply_over_axes", "gradient", "packbits", "piecewise", "poly", "polydiv", "polyfit",
    "trapezoid", "trim_zeros", "unpackbits", "unwrap", "vectorize", "histogram2d",
    "histogramdd",
]

import operator
from typing import Any, Callable, Optional

import numpy as np

from pyree import dtypes, lax
from pyree.errors import ConcretizationTypeError
from pyree.runtime.array import Array
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import Tracer, get_aval

from ._creation import asarray, array, linspace, zeros
from ._shape import _slice_axis, concatenate, gather_onehot, ravel
from ._util import (broadcast_to_shape, canonical_axis, check_arraylike, convert, promote_dtypes,
                    promote_dtypes_inexact, typed_scalar)


def _int_dtype() -> np.dtype:
    return dtypes.canonicalize_dtype(int)


def _is_inexact(dtype: np.dtype) -> bool:
    return dtype.kind in "fc" or dtype == dtypes.bfloat16


# -- differences ----------------------------------------------------------------------------------

def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The ``n``-th discrete difference ``a[i+1] - a[i]`` along ``axis`` (booleans: ``!=``),
    after joining ``prepend``/``append`` (scalars are broadcast) to the ends.

    Example::

        jnp.diff(jnp.array([1, 4, 9, 16]))   # [3, 5, 7]
    """
    check_arraylike("diff", a)
    a = asarray(a)
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    if n == 0:
        return a
    aval = get_aval(a)
    if aval.ndim == 0:
        raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
    axis = canonical_axis(axis, aval.ndim)
    parts = []
    for extra in (prepend, append):
        if extra is None:
            parts.append(None)
            continue
        extra = asarray(extra)
        if get_aval(extra).ndim == 0:
            shape = list(aval.shape)
            shape[axis] = 1
            extra = broadcast_to_shape(extra, tuple(shape))
        parts.append(extra)
    if parts[0] is not None or parts[1] is not None:
        a = concatenate([p for p in (parts[0], a, parts[1]) if p is not None], axis)
    for _ in range(n):
        length = get_aval(a).shape[axis]
        if length == 0:
            break
        upper = _slice_axis(a, axis, 1, length)
        lower = _slice_axis(a, axis, 0, length - 1)
        a = lax.ne(upper, lower) if get_aval(a).dtype == np.bool_ else \
            lax.sub(upper, lower)
    return a


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """Differences of consecutive elements of the flattened array, with ``to_begin`` and
    ``to_end`` (cast to its dtype) joined to the ends.

    Example::

        jnp.ediff1d(jnp.array([1, 2, 4]), to_begin=0)   # [0, 1, 2]
    """
    check_arraylike("ediff1d", ary)
    flat = ravel(asarray(ary))
    aval = get_aval(flat)
    length = aval.shape[0]
    result = lax.sub(_slice_axis(flat, 0, 1, length), _slice_axis(flat, 0, 0, length - 1)) \
        if length else flat
    parts = [result]
    if to_begin is not None:
        parts.insert(0, ravel(convert(asarray(to_begin), aval.dtype, aval.weak_type)))
    if to_end is not None:
        parts.append(ravel(convert(asarray(to_end), aval.dtype, aval.weak_type)))
    return concatenate(parts, 0) if len(parts) > 1 else result


# -- searching ------------------------------------------------------------------------------------

def _isnan(x: Any) -> Any:
    return lax.ne(x, x)


def _count_sorted(table: Any, values: Any, right: bool) -> Any:
    """For each of ``values``, how many entries of the 1-D ``table`` sort before it
    (``searchsorted``: side 'right' counts ``<=``, 'left' counts ``<``), NaN sorting last."""
    table, values = promote_dtypes(table, values)
    t_aval, v_aval = get_aval(table), get_aval(values)
    m = t_aval.shape[0]
    shape = v_aval.shape + (m,)
    t = lax.broadcast_in_dim(table, shape, (len(shape) - 1,))
    v = lax.broadcast_in_dim(values, shape, tuple(range(v_aval.ndim)))
    if right:
        before = lax.le(t, v)
        if _is_inexact(t_aval.dtype):
            before = lax.bitwise_or(before, _isnan(v))
    else:
        before = lax.lt(t, v)
        if _is_inexact(t_aval.dtype):
            before = lax.bitwise_or(before, lax.bitwise_and(_isnan(v), lax.bitwise_not(_isnan(t))))
    return lax.reduce_sum(convert(before, _int_dtype()), axes=(len(shape) - 1,))


def _lookup(table: Any, index: Any) -> Any:
    """``table[index]`` for a 1-D ``table`` and an integer array ``index`` of any shape."""
    shape = get_aval(index).shape
    flat = lax.reshape(index, (int(np.prod(shape)),))
    return lax.reshape(gather_onehot(table, flat, 0), shape)


def digitize(x: Any, bins: Any, right: bool = False) -> Any:
    """The index of the bin of ``bins`` (monotonic, increasing or decreasing) that each ``x``
    falls in: ``bins[i-1] <= x < bins[i]`` (``right=True``: ``bins[i-1] < x <= bins[i]``).

    Example::

        jnp.digitize(jnp.array([0.5, 1.5, 3.0]), jnp.array([1.0, 2.0, 3.0]))   # [0, 1, 3]
    """
    check_arraylike("digitize", x, bins)
    x, bins = asarray(x), asarray(bins)
    b_aval = get_aval(bins)
    if b_aval.ndim != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array; got shape "
                         f"{b_aval.shape}{_where(None)}")
    n = b_aval.shape[0]
    if n == 0:
        return zeros(get_aval(x).shape, _int_dtype())
    # Increasing bins: searchsorted(bins, x); decreasing: n - searchsorted(bins[::-1], x).
    rising = _count_sorted(bins, x, not right)
    falling = lax.sub(typed_scalar(n, _int_dtype()),
                      _count_sorted(lax.rev(bins, (0,)), x, not right))
    first, last = _slice_axis(bins, 0, 0, 1), _slice_axis(bins, 0, n - 1, n)
    increasing = lax.reshape(lax.ge(last, first), ())
    return lax.select(increasing, rising, falling)


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """Piecewise-linear interpolation of the points ``(xp, fp)`` (``xp`` increasing) at ``x``;
    ``left``/``right`` are the values below/above the range (``fp[0]``/``fp[-1]`` by default).
    With ``period``, ``xp`` may be unsorted and ``x`` wraps around.

    Example::

        jnp.interp(jnp.array([0.5, 2.5]), jnp.array([0.0, 1.0, 3.0]), jnp.array([0.0, 2.0, 3.0]))
        # [1., 2.75]
    """
    check_arraylike("interp", x, xp, fp)
    x, xp, fp = asarray(x), asarray(xp), asarray(fp)
    if get_aval(xp).ndim != 1 or get_aval(fp).ndim != 1:
        raise ValueError(f"xp and fp must be one-dimensional arrays, got shapes "
                         f"{get_aval(xp).shape} and {get_aval(fp).shape}{_where(None)}")
    if get_aval(xp).shape != get_aval(fp).shape:
        raise ValueError(f"fp and xp are not of the same length: {get_aval(fp).shape[0]} and "
                         f"{get_aval(xp).shape[0]}{_where(None)}")
    if get_aval(xp).shape[0] == 0:
        raise ValueError(f"array of sample points is empty{_where(None)}")
    x, xp = promote_dtypes_inexact(x, xp)
    (fp,) = promote_dtypes_inexact(fp)
    if period is not None:
        if left is not None or right is not None:
            raise ValueError("interp: left and right have no effect with period")
        x, xp, fp = _periodic(x, xp, fp, period)
    m = get_aval(xp).shape[0]
    if m == 1:
        # One point: NumPy returns fp[0] inside (and at) it, left/right outside.
        f = lax.broadcast_in_dim(lax.reshape(fp, ()), get_aval(x).shape, ())
    else:
        int_t = _int_dtype()
        # The segment [xp[i-1], xp[i]] holding x, with i in [1, m-1].
        i = _count_sorted(xp, x, right=True)
        i = lax.max(lax.min(i, typed_scalar(m - 1, int_t)), typed_scalar(1, int_t))
        below = lax.sub(i, typed_scalar(1, int_t))
        x0, x1 = _lookup(xp, below), _lookup(xp, i)
        f0, f1 = _lookup(fp, below), _lookup(fp, i)
        dx = lax.sub(x1, x0)
        eps = typed_scalar(np.finfo(get_aval(dx).dtype).eps, get_aval(dx).dtype)
        flat = lax.le(lax.abs(dx), eps)  # repeated points: no slope
        safe_dx = lax.select(flat, typed_scalar(1, get_aval(dx).dtype), dx)
        from ._ufuncs import add, multiply, subtract, true_divide, where
        slope_part = multiply(true_divide(subtract(x, x0), safe_dx), subtract(f1, f0))
        f = where(flat, f0, add(f0, slope_part))
    if period is None:
        from ._ufuncs import greater, less, where
        first, last = lax.reshape(_slice_axis(xp, 0, 0, 1), ()), \
            lax.reshape(_slice_axis(xp, 0, m - 1, m), ())
        low = lax.reshape(_slice_axis(fp, 0, 0, 1), ()) if left is None else left
        high = lax.reshape(_slice_axis(fp, 0, m - 1, m), ()) if right is None else right
        f = where(less(x, first), low, f)
        f = where(greater(x, last), high, f)
    return f


def _periodic(x: Any, xp: Any, fp: Any, period: Any) -> tuple:
    """Periodic ``interp``'s points: ``x`` and ``xp`` reduced modulo ``period``, ``xp`` sorted
    (by ranking: a comparison matrix) and extended by one point each side."""
    from ._ufuncs import absolute, add, remainder, subtract
    period = absolute(convert(period, get_aval(x).dtype) if not isinstance(period, (Array, Tracer))
                      else period)
    if not isinstance(period, Tracer) and np.asarray(period) == 0:
        raise ValueError("period must be a non-zero value")
    x = remainder(x, period)
    xp = remainder(xp, period)
    m = get_aval(xp).shape[0]
    int_t = _int_dtype()
    # rank[j] = #{k : xp[k] < xp[j] or (xp[k] == xp[j] and k < j)}: a stable sort's position.
    row = lax.broadcast_in_dim(xp, (m, m), (0,))   # xp[j] along rows
    col = lax.broadcast_in_dim(xp, (m, m), (1,))   # xp[k] along columns
    earlier = lax.lt(lax.broadcasted_iota(int_t, (m, m), 1),
                     lax.broadcasted_iota(int_t, (m, m), 0))
    before = lax.bitwise_or(lax.lt(col, row), lax.bitwise_and(lax.eq(col, row), earlier))
    rank = lax.reduce_sum(convert(before, int_t), axes=(1,))
    # order[r] = the j whose rank is r.
    order = lax.reduce_sum(
        lax.select(lax.eq(lax.broadcast_in_dim(rank, (m, m), (1,)),
                          lax.broadcasted_iota(int_t, (m, m), 0)),
                   lax.broadcasted_iota(int_t, (m, m), 1), typed_scalar(0, int_t)),
        axes=(1,))
    xp = gather_onehot(xp, order, 0)
    fp = gather_onehot(fp, order, 0)
    xp = concatenate([subtract(_slice_axis(xp, 0, m - 1, m), period), xp,
                      add(_slice_axis(xp, 0, 0, 1), period)], 0)
    fp = concatenate([_slice_axis(fp, 0, m - 1, m), fp, _slice_axis(fp, 0, 0, 1)], 0)
    return x, xp, fp


# -- polynomials ----------------------------------------------------------------------------------

def _poly_arg(name: str, p: Any) -> Any:
    p = asarray(p)
    if get_aval(p).ndim != 1:
        raise ValueError(f"{name}: polynomial coefficients must be 1-D, got shape "
                         f"{get_aval(p).shape}{_where(None)}")
    return p


def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """The polynomial with coefficients ``p`` (highest power first) at ``x``, by Horner's rule.

    Example::

        jnp.polyval(jnp.array([1.0, 0.0, -2.0]), 3.0)   # 7.
    """
    check_arraylike("polyval", p, x)
    p = _poly_arg("polyval", p)
    p, x = promote_dtypes(p, x)
    x = asarray(x)
    count = get_aval(p).shape[0]
    result = zeros(get_aval(x).shape, get_aval(x).dtype)
    for i in range(count):
        coefficient = lax.reshape(_slice_axis(p, 0, i, i + 1), ())
        result = lax.add(lax.mul(result, x), coefficient) if i else \
            lax.broadcast_in_dim(coefficient, get_aval(x).shape, ())
    return convert(result, get_aval(x).dtype)  # strongly typed, as JAX's


def _aligned(a1: Any, a2: Any) -> tuple:
    """Two coefficient vectors padded at the front to one length."""
    n1, n2 = get_aval(a1).shape[0], get_aval(a2).shape[0]
    n = max(n1, n2)
    zero = typed_scalar(0, get_aval(a1).dtype, get_aval(a1).weak_type)
    zero2 = typed_scalar(0, get_aval(a2).dtype, get_aval(a2).weak_type)
    return lax.pad(a1, zero, [(n - n1, 0, 0)]), lax.pad(a2, zero2, [(n - n2, 0, 0)])


def polyadd(a1: Any, a2: Any) -> Any:
    """The sum of two polynomials (coefficients highest power first).

    Example::

        jnp.polyadd(jnp.array([1, 2]), jnp.array([1, 0, 0]))   # [1, 1, 2]
    """
    check_arraylike("polyadd", a1, a2)
    a1, a2 = promote_dtypes(_poly_arg("polyadd", a1), _poly_arg("polyadd", a2))
    return lax.add(*_aligned(a1, a2))


def polysub(a1: Any, a2: Any) -> Any:
    """The difference of two polynomials.

    Example::

        jnp.polysub(jnp.array([1, 2]), jnp.array([1, 0, 0]))   # [-1, 1, 2]
    """
    check_arraylike("polysub", a1, a2)
    a1, a2 = promote_dtypes(_poly_arg("polysub", a1), _poly_arg("polysub", a2))
    return lax.sub(*_aligned(a1, a2))


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """The product of two polynomials (the full convolution of their coefficients).

    Example::

        jnp.polymul(jnp.array([1.0, 1.0]), jnp.array([1.0, -1.0]))   # [1., 0., -1.]
    """
    check_arraylike("polymul", a1, a2)
    a1, a2 = _poly_arg("polymul", a1), _poly_arg("polymul", a2)
    if trim_leading_zeros:
        a1, a2 = _trim_leading(a1), _trim_leading(a2)
    a1, a2 = promote_dtypes_inexact(a1, a2)
    dtype, weak = get_aval(a1).dtype, get_aval(a1).weak_type
    zero = typed_scalar(0, dtype, weak)
    if get_aval(a1).shape[0] == 0:
        a1 = lax.pad(a1, zero, [(1, 0, 0)])
    if get_aval(a2).shape[0] == 0:
        a2 = lax.pad(a2, zero, [(1, 0, 0)])
    n, m = get_aval(a1).shape[0], get_aval(a2).shape[0]
    outer = lax.mul(lax.broadcast_in_dim(a1, (n, m), (0,)),
                    lax.broadcast_in_dim(a2, (n, m), (1,)))
    # Shift row i right by i (pad rows to n + m, flatten, drop the last n zeros, re-cut into rows
    # of n + m - 1): column k then holds the products a1[i] * a2[k - i]; summing rows convolves.
    padded = lax.pad(outer, zero, [(0, 0, 0), (0, n, 0)])
    flat = lax.reshape(padded, (n * (n + m),))
    skewed = lax.reshape(_slice_axis(flat, 0, 0, n * (n + m - 1)), (n, n + m - 1))
    return lax.reduce_sum(skewed, axes=(0,))


def _trim_leading(p: Any) -> Any:
    values = np.asarray(_concrete_value(p, "polymul", "coefficients (trim_leading_zeros=True)"))
    nonzero = np.nonzero(values)[0]
    start = int(nonzero[0]) if nonzero.size else max(values.shape[0] - 1, 0)
    return _slice_axis(p, 0, start, values.shape[0])


def _concrete_value(x: Any, fn: str, what: str) -> Any:
    if isinstance(x, Tracer):
        raise ConcretizationTypeError(
            f"{fn}: {what} must be concrete, got a traced array{_where(None)}")
    return np.asarray(x)


def polyder(p: Any, m: int = 1) -> Any:
    """The ``m``-th derivative of a polynomial.

    Example::

        jnp.polyder(jnp.array([1.0, 1.0, 1.0]))   # [2., 1.]
    """
    check_arraylike("polyder", p)
    (p,) = promote_dtypes_inexact(_poly_arg("polyder", p))
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    if m == 0:
        return p
    length = get_aval(p).shape[0]
    count = max(length - m, 0)
    powers = np.arange(length - 1, length - 1 - count, -1)
    factors = np.ones(count)
    for j in range(m):
        factors = factors * (powers - j)
    dtype = get_aval(p).dtype
    return lax.mul(_slice_axis(p, 0, 0, count), array(factors.astype(dtype)))


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k`` (a scalar
    or ``m`` values, the first for the first integration).

    Example::

        jnp.polyint(jnp.array([3.0, 2.0, 1.0]))   # [1., 1., 1., 0.]
    """
    check_arraylike("polyint", p)
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    (p,) = promote_dtypes_inexact(_poly_arg("polyint", p))
    if m == 0:
        return p
    dtype, weak = get_aval(p).dtype, get_aval(p).weak_type
    constants = convert(asarray(0 if k is None else k), dtype, weak)
    shape = get_aval(constants).shape
    if shape == ():
        constants = lax.broadcast_in_dim(constants, (m,), ())
    elif shape == (1,):
        constants = lax.broadcast_in_dim(constants, (m,), (0,))
    elif shape != (m,):
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
    length = get_aval(p).shape[0]
    # Entry i of [p, k] ends up divided by prod_j max(1, length + m - i - 1 - j).
    top = np.arange(length + m, 0, -1)[None, :] - 1 - np.arange(m)[:, None]
    divisors = np.maximum(1, top).prod(axis=0)
    return lax.div(lax.concatenate([p, constants], 0), array(divisors.astype(dtype)))


def vander(x: Any, N: Optional[int] = None, increasing: bool = False) -> Any:
    """The Vandermonde matrix: column j holds ``x ** (N - 1 - j)`` (``x ** j`` when
    ``increasing``).

    Example::

        jnp.vander(jnp.array([1, 2, 3]), 3)   # [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    check_arraylike("vander", x)
    x = asarray(x)
    aval = get_aval(x)
    if aval.ndim != 1:
        raise ValueError(f"x must be a one-dimensional array, got shape {aval.shape}"
                         f"{_where(None)}")
    n = aval.shape[0]
    N = n if N is None else operator.index(N)
    if N < 0:
        raise ValueError("N must be nonnegative")
    one = typed_scalar(True if aval.dtype == np.bool_ else 1, aval.dtype, aval.weak_type)
    powers = lax.broadcast_in_dim(one, (n, 1), ())
    if N == 0:
        powers = _slice_axis(powers, 1, 0, 0)
    # Double the columns each round: [x^0..x^(c-1)] and [x^c..x^(2c-1)] = the same times x^c.
    column = lax.reshape(x, (n, 1))  # x^c for the current count c
    count = 1
    while count < N:
        take = min(count, N - count)
        block = lax.mul(_slice_axis(powers, 1, 0, take),
                        lax.broadcast_in_dim(lax.reshape(column, (n,)), (n, take), (0,)))
        powers = lax.concatenate([powers, block], 1)
        count += take
        if count < N:
            column = _slice_axis(powers, 1, count - 1, count)
            column = lax.mul(column, lax.reshape(x, (n, 1)))
    return powers if increasing else lax.rev(powers, (1,))


# -- counting -------------------------------------------------------------------------------------

def bincount(x: Any, weights: Any = None, minlength: int = 0, *,
             length: Optional[int] = None) -> Any:
    """How often each value ``0, 1, ..., length - 1`` occurs in the non-negative integers
    ``x`` (summing ``weights`` instead of ones if given). Under jit ``length`` must be given;
    negative values count as 0 and values past the end are dropped (as in JAX).

    Example::

        jnp.bincount(jnp.array([0, 1, 1, 3]))   # [1, 2, 0, 1]
    """
    check_arraylike("bincount", x)
    x = asarray(x)
    aval = get_aval(x)
    if aval.dtype.kind not in "iu":
        raise TypeError(f"x argument to bincount must have an integer type; got "
                        f"{aval.dtype}{_where(None)}")
    if aval.ndim != 1:
        raise ValueError(f"only 1-dimensional input supported, got shape {aval.shape}"
                         f"{_where(None)}")
    if length is None:
        if isinstance(x, Tracer):
            raise ConcretizationTypeError(
                f"jnp.bincount: the length of the result depends on the values of x. Pass a "
                f"static length= when jit-compiling{_where(None)}")
        values = np.asarray(x)
        length = max(operator.index(minlength), int(values.max()) + 1 if values.size else 0)
    length = operator.index(length)
    int_t = _int_dtype()
    n = aval.shape[0]
    idx = convert(x, int_t) if aval.dtype != int_t else x
    idx = lax.max(idx, typed_scalar(0, int_t))
    hits = lax.eq(lax.broadcast_in_dim(idx, (n, length), (0,)),
                  lax.broadcasted_iota(int_t, (n, length), 1))
    if weights is None:
        return lax.reduce_sum(convert(hits, int_t), axes=(0,))
    weights = asarray(weights)
    w_aval = get_aval(weights)
    if w_aval.shape != aval.shape:
        weights = broadcast_to_shape(weights, aval.shape)
        w_aval = get_aval(weights)
    spread = lax.broadcast_in_dim(weights, (n, length), (0,))
    zero = typed_scalar(False if w_aval.dtype == np.bool_ else 0, w_aval.dtype, w_aval.weak_type)
    picked = lax.select(hits, spread, zero)
    reduce = lax.reduce_or if w_aval.dtype == np.bool_ else lax.reduce_sum
    return reduce(picked, (0,))


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None, weights: Any = None) -> Any:
    """The edges of the bins ``histogram`` would use.

    Example::

        jnp.histogram_bin_edges(jnp.array([0.0, 1.0]), bins=2)   # [0., 0.5, 1.]
    """
    check_arraylike("histogram_bin_edges", a)
    a = asarray(a)
    (a,) = promote_dtypes_inexact(a)
    dtype = get_aval(a).dtype
    if isinstance(bins, str):
        raise NotImplementedError("string values for `bins` are not implemented.")
    if not isinstance(bins, (int, np.integer)):
        edges = asarray(bins)
        if get_aval(edges).ndim != 1:
            raise ValueError(f"`bins` must be 1d, when an array; got shape "
                             f"{get_aval(edges).shape}{_where(None)}")
        return edges
    bins = operator.index(bins)
    if bins < 1:
        raise ValueError("`bins` must be positive, when an integer")
    if range is None:
        if get_aval(a).size == 0:
            first, last = typed_scalar(0.0, dtype), typed_scalar(1.0, dtype)
        else:
            first, last = lax.reduce_min(ravel(a), axes=(0,)), \
                lax.reduce_max(ravel(a), axes=(0,))
    else:
        if len(range) != 2:
            raise ValueError("range must be a (min, max) pair")
        first, last = range
        if not isinstance(first, Tracer) and not isinstance(last, Tracer):
            if np.asarray(first) > np.asarray(last):
                raise ValueError("max must be larger than min in range parameter.")
        first, last = convert(first, dtype), convert(last, dtype)
    # An empty range widens to one unit around its value (as NumPy).
    from ._ufuncs import add, equal, subtract, where
    same = equal(first, last)
    first = where(same, subtract(first, typed_scalar(0.5, dtype)), first)
    last = where(same, add(last, typed_scalar(0.5, dtype)), last)
    return linspace(first, last, bins + 1, dtype=dtype)


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,
              density: Optional[bool] = None) -> tuple:
    """Counts of ``a`` (flattened) in ``bins`` equal-width bins over ``range`` (the data's
    extent by default), or in the bins between given edges; the last bin includes its right
    edge. Returns ``(counts, edges)``; ``density`` normalises the counts to a density.

    Example::

        counts, edges = jnp.histogram(jnp.array([0.0, 0.2, 0.9]), bins=2)   # [2., 1.]
    """
    check_arraylike("histogram", a)
    a = ravel(asarray(a))
    if weights is not None:
        weights = ravel(asarray(weights))
        if get_aval(weights).shape != get_aval(a).shape:
            raise ValueError(f"weights should have the same shape as a, got "
                             f"{get_aval(weights).shape} and {get_aval(a).shape}"
                             f"{_where(None)}")
        a, weights = promote_dtypes_inexact(a, weights)
    else:
        (a,) = promote_dtypes_inexact(a)
    edges = histogram_bin_edges(a, bins, range)
    edges = convert(edges, get_aval(a).dtype)
    count_dtype = get_aval(a).dtype if weights is None else get_aval(weights).dtype
    nbins = get_aval(edges).shape[0] - 1
    if nbins < 1:
        raise ValueError("histogram needs at least two bin edges")
    int_t = _int_dtype()
    # Bin i holds edges[i] <= v < edges[i + 1]; the last one also holds v == edges[-1].
    index = lax.sub(_count_sorted(edges, a, right=True), typed_scalar(1, int_t))
    last_edge = lax.reshape(_slice_axis(edges, 0, nbins, nbins + 1), ())
    index = lax.select(lax.eq(a, last_edge), typed_scalar(nbins - 1, int_t), index)
    n = get_aval(a).shape[0]
    hits = lax.eq(lax.broadcast_in_dim(index, (n, nbins), (0,)),
                  lax.broadcasted_iota(int_t, (n, nbins), 1))
    if weights is None:
        counts = lax.reduce_sum(convert(hits, count_dtype), axes=(0,))
    else:
        picked = lax.select(hits, lax.broadcast_in_dim(weights, (n, nbins), (0,)),
                            typed_scalar(0, count_dtype))
        counts = lax.reduce_sum(picked, axes=(0,))
    if density:
        widths = diff(edges)
        total = lax.reduce_sum(counts, axes=(0,))
        counts = lax.div(counts, lax.mul(convert(widths, count_dtype), total))
    return counts, edges


def histogramdd(sample: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: Optional[bool] = None) -> tuple:
    """The D-dimensional histogram of ``sample`` (N points, shape ``(N, D)``): ``bins`` is an
    int for every dimension or one entry (an int or an array of edges) per dimension;
    ``range`` is None or one ``(min, max)`` or None per dimension. Each bin holds
    ``edges[i] <= v < edges[i + 1]`` in every dimension (the last bin also its right edge);
    points outside are not counted. Returns ``(counts, [edges per dimension])``; ``density``
    divides by the total and the bins' volumes.

    Example::

        h, (xe, ye) = jnp.histogramdd(points, bins=(2, 3))     # h.shape == (2, 3)
    """
    from ._shape import reshape
    from ._ufuncs import logical_and
    check_arraylike("histogramdd", sample)
    sample = asarray(sample)
    s_aval = get_aval(sample)
    if s_aval.ndim == 1:
        sample = reshape(sample, (s_aval.shape[0], 1))
        s_aval = get_aval(sample)
    if s_aval.ndim != 2:
        raise ValueError(f"histogramdd: sample must have shape (N, D), got {s_aval.shape}"
                         f"{_where(None)}")
    n, d = s_aval.shape
    if weights is not None:
        weights = ravel(asarray(weights))
        if get_aval(weights).shape != (n,):
            raise ValueError(f"histogramdd: weights should have shape ({n},), got "
                             f"{get_aval(weights).shape}{_where(None)}")
        sample, weights = promote_dtypes_inexact(sample, weights)
    else:
        (sample,) = promote_dtypes_inexact(sample)
    dtype = get_aval(sample).dtype
    if isinstance(bins, (int, np.integer)):
        bins = [bins] * d
    if len(bins) != d:
        raise ValueError(f"histogramdd: need {d} entries in bins, got {len(bins)}{_where(None)}")
    ranges = [None] * d if range is None else list(range)
    if len(ranges) != d:
        raise ValueError(f"histogramdd: need {d} entries in range, got {len(ranges)}"
                         f"{_where(None)}")
    int_t = _int_dtype()
    edges_list, index, inside, sizes = [], None, None, []
    for j in _range(d):
        column = reshape(_slice_axis(sample, 1, j, j + 1), (n,))
        edges = convert(histogram_bin_edges(column, bins[j], ranges[j]), dtype)
        nbins = get_aval(edges).shape[0] - 1
        if nbins < 1:
            raise ValueError("histogramdd needs at least two bin edges per dimension")
        # As histogram: bin i holds edges[i] <= v < edges[i + 1], the last one its right edge.
        idx = lax.sub(_count_sorted(edges, column, right=True), typed_scalar(1, int_t))
        last_edge = lax.reshape(_slice_axis(edges, 0, nbins, nbins + 1), ())
        idx = lax.select(lax.eq(column, last_edge), typed_scalar(nbins - 1, int_t),
                         idx)
        ok = logical_and(lax.ge(idx, typed_scalar(0, int_t)),
                         lax.lt(idx, typed_scalar(nbins, int_t)))
        inside = ok if inside is None else logical_and(inside, ok)
        index = idx if index is None else lax.add(
            lax.mul(index, typed_scalar(nbins, int_t)), idx)
        edges_list.append(edges)
        sizes.append(nbins)
    total_bins = int(np.prod(sizes))
    index = lax.select(inside, index, typed_scalar(-1, int_t))   # -1 matches no bin
    hits = lax.eq(lax.broadcast_in_dim(index, (n, total_bins), (0,)),
                  lax.broadcasted_iota(int_t, (n, total_bins), 1))
    count_dtype = dtype if weights is None else get_aval(weights).dtype
    if weights is None:
        counts = lax.reduce_sum(convert(hits, count_dtype), axes=(0,))
    else:
        picked = lax.select(hits, lax.broadcast_in_dim(weights, (n, total_bins), (0,)),
                            typed_scalar(0, count_dtype))
        counts = lax.reduce_sum(picked, axes=(0,))
    counts = reshape(counts, tuple(sizes))
    if density:
        from ._ufuncs import multiply
        volume = None   # the bins' volumes: the product of their widths
        for j, edges in enumerate(edges_list):
            shape = [1] * d
            shape[j] = sizes[j]
            width = reshape(convert(diff(edges), count_dtype), tuple(shape))
            volume = width if volume is None else multiply(volume, width)
        total = lax.reduce_sum(counts, axes=tuple(_range(d)))
        counts = lax.div(counts, multiply(volume, total))
    return counts, edges_list


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Any = None, weights: Any = None,
                density: Optional[bool] = None) -> tuple:
    """The 2-D histogram of the points ``(x[i], y[i])``: ``histogramdd`` of the stacked
    coordinates. ``bins``: an int or an array of edges for both axes, or a pair of them.
    Returns ``(counts, x_edges, y_edges)``.

    Example::

        h, xe, ye = jnp.histogram2d(x, y, bins=2)      # h[i, j]: x in bin i, y in bin j
    """
    from ._shape import stack
    check_arraylike("histogram2d", x, y)
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n != 1 and n != 2:
        bins = [bins, bins]   # one array of edges for both axes (as NumPy)
    counts, edges = histogramdd(stack([ravel(asarray(x)), ravel(asarray(y))], 1), bins, range,
                                weights, density)
    return counts, edges[0], edges[1]


_range = range


# -- functional -----------------------------------------------------------------------------------

def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """``func1d`` applied to every 1-D slice of ``arr`` along ``axis`` (vmapped over the other
    axes); the axes ``func1d``'s result has replace ``axis``.

    Example::

        jnp.apply_along_axis(jnp.sum, 1, jnp.ones((2, 3)))   # [3., 3.]
    """
    from pyree import vmap
    check_arraylike("apply_along_axis", arr)
    arr = asarray(arr)
    ndim = get_aval(arr).ndim
    axis = canonical_axis(axis, ndim)

    def apply(row: Any) -> Any:
        return func1d(row, *args, **kwargs)

    fn = apply
    # Axes after `axis` are mapped innermost and put back after the result's axes...
    for i in range(1, ndim - axis):
        fn = vmap(fn, in_axes=i, out_axes=-1)
    # ...and the axes before it outermost, at the front.
    for _ in range(axis):
        fn = vmap(fn, in_axes=0, out_axes=0)
    return fn(arr)


# -- vectorize ------------------------------------------------------------------------------------

def _parse_signature(signature: str) -> tuple:
    """'(n),(n,m)->(m)' -> ([('n',), ('n', 'm')], [('m',)])."""
    import re
    text = signature.replace(" ", "")
    match = re.fullmatch(r"((?:\([\w,]*\),?)*)->((?:\([\w,]*\),?)*)", text)
    if not match:
        raise ValueError(f"jnp.vectorize: not a valid gufunc signature: {signature!r}"
                         f"{_where(None)}")

    def groups(part: str) -> list:
        return [tuple(d for d in g.split(",") if d) for g in re.findall(r"\(([\w,]*)\)", part)]

    return groups(match.group(1)), groups(match.group(2))


def vectorize(pyfunc: Callable, *, excluded: Any = frozenset(), signature: Optional[str] = None
              ) -> Callable:
    """``pyfunc``, written for single elements (or, with a gufunc ``signature`` such as
    ``'(n),(n)->()'``, for arrays of the core shapes), mapped with ``vmap`` over the broadcast
    leading dimensions of its arguments. Positional indices and keyword names in ``excluded``
    are passed through unmapped.

    Example::

        dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
        dot(jnp.ones((4, 3)), jnp.ones(3))   # shape (4,)
    """
    import functools
    from pyree import vmap
    from ._util import broadcast_shapes
    ins, _outs = _parse_signature(signature) if signature is not None else (None, None)

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        positions = [i for i in range(len(args)) if i not in excluded]
        names = [k for k in kwargs if k not in excluded]
        values = [asarray(args[i]) for i in positions] + [asarray(kwargs[k]) for k in names]
        if ins is not None and len(ins) != len(values):
            raise TypeError(f"jnp.vectorize: wrong number of positional arguments: expected "
                            f"{len(ins)}, got {len(values)}{_where(None)}")
        cores = ins if ins is not None else [()] * len(values)
        sizes: dict = {}
        loops = []
        for v, core in zip(values, cores):
            shape = get_aval(v).shape
            if len(shape) < len(core):
                raise ValueError(f"jnp.vectorize: input with shape {shape} has fewer "
                                 f"dimensions than its core dimensions {core}{_where(None)}")
            lead = len(shape) - len(core)
            for name, d in zip(core, shape[lead:]):
                if sizes.setdefault(name, d) != d:
                    raise ValueError(f"jnp.vectorize: inconsistent size for core dimension "
                                     f"{name!r}: {sizes[name]} vs {d}{_where(None)}")
            loops.append(shape[:lead])
        loop_shape = broadcast_shapes(*loops) if loops else ()
        values = [broadcast_to_shape(v, loop_shape + get_aval(v).shape[len(lp):])
                  for v, lp in zip(values, loops)]

        def call(*vals: Any) -> Any:
            full = list(args)
            for i, v in zip(positions, vals):
                full[i] = v
            kw = dict(kwargs)
            kw.update(zip(names, vals[len(positions):]))
            return pyfunc(*full, **kw)

        fn = call
        for _ in loop_shape:
            fn = vmap(fn)
        return fn(*values)

    return wrapped


# -- piecewise ------------------------------------------------------------------------------------

def piecewise(x: Any, condlist: Any, funclist: list, *args: Any, **kw: Any) -> Any:
    """Elementwise, ``funclist[i](x)`` (or the constant ``funclist[i]``) where ``condlist[i]``
    holds (the last true condition wins); one extra entry of ``funclist`` is the value where
    none holds (default 0). The result has ``x``'s dtype.

    Example::

        x = jnp.linspace(-2.0, 2.0, 5)
        jnp.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2])   # [2, 1, 0, 1, 4]
    """
    from ._ufuncs import where
    check_arraylike("piecewise", x)
    x = asarray(x)
    aval = get_aval(x)
    if isinstance(condlist, (list, tuple)):
        if aval.ndim and condlist and not isinstance(condlist[0], (list, tuple)) and \
                np.ndim(condlist[0]) == 0 and not isinstance(condlist[0], (Array, Tracer)):
            conds = [asarray(condlist)]
        else:
            conds = [asarray(c) for c in condlist]
    else:
        c = asarray(condlist)
        conds = [c] if get_aval(c).ndim == aval.ndim else \
            [c[i] for i in range(get_aval(c).shape[0])]
    n = len(conds)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"jnp.piecewise: with {n} condition(s), either {n} or {n + 1} "
                         f"functions are needed, got {len(funclist)}{_where(None)}")

    def value(f: Any) -> Any:
        out = f(x, *args, **kw) if callable(f) else f
        return broadcast_to_shape(convert(asarray(out), aval.dtype), aval.shape)

    result = value(funclist[n]) if len(funclist) == n + 1 else value(0)
    for cond, f in zip(conds, funclist):
        result = where(convert(cond, np.dtype(np.bool_)), value(f), result)
    return result


# -- calculus -------------------------------------------------------------------------------------

def _along(v: Any, axis: int, ndim: int) -> Any:
    """The 1-D ``v`` shaped to broadcast along ``axis`` of a rank-``ndim`` array."""
    n = get_aval(v).shape[0]
    return lax.reshape(v, tuple(n if d == axis else 1 for d in range(ndim)))


def gradient(f: Any, *varargs: Any, axis: Any = None, edge_order: Optional[int] = None) -> Any:
    """The gradient of the sampled ``f`` along each axis: central differences inside, one-sided
    at the ends; spacings in ``varargs`` are scalars or coordinate arrays (one per axis). A list
    of arrays for several axes.

    Example::

        jnp.gradient(jnp.array([1.0, 4.0, 9.0, 16.0]))   # [3, 4, 6, 7]
    """
    from ._util import canonical_axis as _canon
    if edge_order is not None and edge_order != 1:
        raise NotImplementedError(f"jnp.gradient: only edge_order=1 is implemented, got "
                                  f"{edge_order}{_where(None)}")
    check_arraylike("gradient", f)
    (f,) = promote_dtypes_inexact(asarray(f))
    ndim = get_aval(f).ndim
    if ndim == 0:
        raise ValueError(f"jnp.gradient: f must be at least 1-dimensional{_where(None)}")
    if axis is None:
        axes = list(range(ndim))
    elif isinstance(axis, (tuple, list)):
        axes = [_canon(a, ndim) for a in axis]
    else:
        axes = [_canon(axis, ndim)]
    if len(varargs) == 0:
        spacings: list = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacings = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacings = list(varargs)
    else:
        raise TypeError(f"jnp.gradient: expected 0, 1 or {len(axes)} spacings, got "
                        f"{len(varargs)}{_where(None)}")
    out = []
    for ax, h in zip(axes, spacings):
        n = get_aval(f).shape[ax]
        if n < 2:
            raise ValueError(f"jnp.gradient: the size of axis {ax} must be at least 2 (edge "
                             f"order 1), got {n}{_where(None)}")
        dtype = get_aval(f).dtype
        first = _slice_axis(f, ax, 1, 2) - _slice_axis(f, ax, 0, 1)
        last = _slice_axis(f, ax, n - 1, n) - _slice_axis(f, ax, n - 2, n - 1)
        if np.ndim(h) == 0:
            h = convert(asarray(h), dtype)
            parts = [first / h]
            if n > 2:
                parts.append((_slice_axis(f, ax, 2, n) - _slice_axis(f, ax, 0, n - 2)) /
                             (2.0 * h))
            parts.append(last / h)
        else:
            coords = convert(asarray(h), dtype)
            if get_aval(coords).shape != (n,):
                raise ValueError(f"jnp.gradient: coordinates for axis {ax} must have shape "
                                 f"({n},), got {get_aval(coords).shape}{_where(None)}")
            dx = diff(coords)
            parts = [first / _along(dx[:1], ax, ndim)]
            if n > 2:
                d1, d2 = _along(dx[:-1], ax, ndim), _along(dx[1:], ax, ndim)
                parts.append(-d2 / (d1 * (d1 + d2)) * _slice_axis(f, ax, 0, n - 2) +
                             (d2 - d1) / (d1 * d2) * _slice_axis(f, ax, 1, n - 1) +
                             d1 / (d2 * (d1 + d2)) * _slice_axis(f, ax, 2, n))
            parts.append(last / _along(dx[-1:], ax, ndim))
        out.append(concatenate(parts, ax))
    return out[0] if len(axes) == 1 else out


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of the samples ``y`` along ``axis`` by the trapezoidal rule, at the
    coordinates ``x`` (1-D, or of ``y``'s shape) or with the constant spacing ``dx``.

    Example::

        jnp.trapezoid(jnp.array([1.0, 2.0, 3.0]))   # 4.0
    """
    from ._reductions import sum as _sum
    check_arraylike("trapezoid", y)
    y = asarray(y)
    ndim = get_aval(y).ndim
    axis = canonical_axis(axis, ndim)
    if x is None:
        check_arraylike("trapezoid", dx)
        y, d = promote_dtypes_inexact(y, asarray(dx))
    else:
        check_arraylike("trapezoid", x)
        x = asarray(x)
        if get_aval(x).ndim == 1:
            y, x = promote_dtypes_inexact(y, x)
            d = _along(diff(x), axis, ndim)
        else:
            y, x = promote_dtypes_inexact(y, x)
            d = diff(x, axis=axis)
    n = get_aval(y).shape[axis]
    if n == 0:
        return _sum(y, axis=axis)
    mid = _slice_axis(y, axis, 1, n) + _slice_axis(y, axis, 0, n - 1)
    return _sum(d * mid, axis=axis) * 0.5


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    """``p`` with jumps between neighbours along ``axis`` larger than ``discont`` (default
    ``period / 2``) removed by adding multiples of ``period``.

    Example::

        jnp.unwrap(jnp.array([0.0, 3.0, 6.5]))   # [0, 3, 0.217]
    """
    from ._ufuncs import abs as _abs, maximum, remainder, where
    from ._windows import cumsum
    check_arraylike("unwrap", p)
    p, period_ = promote_dtypes_inexact(asarray(p), asarray(period))
    ndim = get_aval(p).ndim
    axis = canonical_axis(axis, ndim)
    n = get_aval(p).shape[axis]
    if n < 2:
        return p
    half = period_ / 2
    discont_ = half if discont is None else maximum(convert(asarray(discont),
                                                            get_aval(p).dtype), half)
    dd = diff(p, axis=axis)
    wrapped = remainder(dd + half, period_) - half
    wrapped = where((wrapped == -half) & (dd > 0), half, wrapped)
    correction = where(_abs(dd) < discont_, 0, wrapped - dd)
    zero = zeros(tuple(1 if d == axis else s for d, s in enumerate(get_aval(p).shape)),
                 get_aval(p).dtype)
    return p + concatenate([zero, cumsum(correction, axis=axis)], axis)


# -- polynomials (more) ---------------------------------------------------------------------------

def poly(seq_of_zeros: Any) -> Any:
    """The coefficients (highest power first, leading 1) of the monic polynomial with the given
    roots.

    Example::

        jnp.poly(jnp.array([1.0, 2.0]))   # [1, -3, 2]
    """
    check_arraylike("poly", seq_of_zeros)
    z = asarray(seq_of_zeros)
    aval = get_aval(z)
    if aval.ndim == 2 and aval.shape[0] == aval.shape[1] and aval.shape[0] > 0:
        raise NotImplementedError(f"jnp.poly of a matrix needs its eigenvalues, and "
                                  f"jnp.linalg.eigvals is not implemented{_where(None)}")
    if aval.ndim != 1:
        raise ValueError(f"jnp.poly: input must be 1-D or a square 2-D array, got shape "
                         f"{aval.shape}{_where(None)}")
    (z,) = promote_dtypes_inexact(z)
    dtype = get_aval(z).dtype
    coeffs = asarray(np.ones(1, dtype))
    for k in range(aval.shape[0]):
        root = z[k]
        zero = zeros((1,), dtype)
        coeffs = concatenate([coeffs, zero]) - root * concatenate([zero, coeffs])
    return coeffs


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple:
    """The quotient and remainder of dividing the polynomial ``u`` by ``v`` (coefficients
    highest power first). The remainder keeps ``u``'s length (leading zeros) unless
    ``trim_leading_zeros`` (which needs concrete values).

    Example::

        jnp.polydiv(jnp.array([1.0, 3.0, 2.0]), jnp.array([1.0, 1.0]))   # ([1, 2], [0, 0, 0])
    """
    check_arraylike("polydiv", u, v)
    u, v = promote_dtypes_inexact(asarray(u), asarray(v))
    m, n = get_aval(u).shape[0] - 1, get_aval(v).shape[0] - 1
    if n < 0:
        raise ValueError(f"jnp.polydiv: the divisor must not be empty{_where(None)}")
    scale = 1.0 / v[0]
    r = u
    quotient = []
    for k in range(builtins_max(m - n + 1, 0)):
        d = scale * r[k]
        quotient.append(d)
        r = r.at[k:k + n + 1].add(-d * v)
    q = lax.concatenate([lax.reshape(d, (1,)) for d in quotient], 0) if quotient else \
        zeros((1,), get_aval(u).dtype)
    if trim_leading_zeros:
        if isinstance(r, Tracer):
            raise ConcretizationTypeError(f"jnp.polydiv: trim_leading_zeros=True needs "
                                          f"concrete values; it cannot be used under jit"
                                          f"{_where(None)}")
        host = np.abs(np.asarray(r))
        tol = 8 * float(dtypes.finfo(get_aval(r).dtype).eps) * builtins_max(
            float(np.abs(np.asarray(u)).max(initial=0.0)), 1.0)
        keep = np.flatnonzero(host > tol)
        start = int(keep[0]) if keep.size else get_aval(r).shape[0] - 1
        r = r[start:]
    return q, r


builtins_max = max


def polyfit(x: Any, y: Any, deg: int, rcond: Optional[float] = None, full: bool = False,
            w: Any = None, cov: Any = False) -> Any:
    """The least-squares polynomial of degree ``deg`` through the points (``x``, ``y``)
    (``y`` may hold several data sets as columns), highest power first; ``w`` weights the
    residuals. ``full`` also returns (residuals, rank, singular values, rcond); ``cov`` also
    returns the coefficients' covariance matrix (``cov='unscaled'``: without the residual
    scale factor).

    Example::

        jnp.polyfit(jnp.arange(4.0), jnp.array([1.0, 3.0, 5.0, 7.0]), 1)   # [2, 1]
    """
    from ._linalg import matmul
    from ._reductions import sum as _sum
    from ._ufuncs import sqrt
    from .linalg import inv, lstsq
    check_arraylike("polyfit", x, y)
    x, y = promote_dtypes_inexact(asarray(x), asarray(y))
    deg = operator.index(deg)
    if deg < 0:
        raise ValueError(f"jnp.polyfit: expected deg >= 0, got {deg}{_where(None)}")
    if get_aval(x).ndim != 1:
        raise TypeError(f"jnp.polyfit: expected 1-D vector for x{_where(None)}")
    if get_aval(x).shape[0] == 0:
        raise TypeError(f"jnp.polyfit: expected non-empty vector for x{_where(None)}")
    if get_aval(y).ndim not in (1, 2):
        raise TypeError(f"jnp.polyfit: expected 1-D or 2-D array for y{_where(None)}")
    n = get_aval(x).shape[0]
    if get_aval(y).shape[0] != n:
        raise TypeError(f"jnp.polyfit: expected x and y to have same length{_where(None)}")
    order = deg + 1
    dtype = get_aval(x).dtype
    if rcond is None:
        rcond = n * float(dtypes.finfo(dtype).eps)
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        check_arraylike("polyfit", w)
        (w,) = promote_dtypes_inexact(asarray(w))
        if get_aval(w).shape != (n,):
            raise TypeError(f"jnp.polyfit: expected a 1-D w of length {n}{_where(None)}")
        lhs = lhs * lax.reshape(w, (n, 1))
        rhs = rhs * (w if get_aval(y).ndim == 1 else lax.reshape(w, (n, 1)))
    scale = sqrt(_sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = lstsq(lhs, rhs, rcond, numpy_resid=True)
    c = c / (scale if get_aval(c).ndim == 1 else lax.reshape(scale, (order, 1)))
    if full:
        return c, resids, rank, s, asarray(rcond, dtype=dtype)
    if cov:
        base = inv(matmul(lax.transpose(lhs, (1, 0)), lhs))
        base = base / (lax.reshape(scale, (order, 1)) * lax.reshape(scale, (1, order)))
        if cov == "unscaled":
            factor = asarray(1.0, dtype=dtype)
        else:
            if n <= order:
                raise ValueError(f"jnp.polyfit: the number of data points must exceed order "
                                 f"to scale the covariance matrix{_where(None)}")
            factor = resids / (n - order)
        if get_aval(y).ndim == 1:
            return c, base * (lax.reshape(factor, ()) if get_aval(asarray(factor)).ndim
                              else factor)
        return c, lax.reshape(base, (order, order, 1)) * factor
    return c


# -- odds and ends --------------------------------------------------------------------------------

def trim_zeros(filt: Any, trim: str = "fb", axis: Any = None) -> Any:
    """``filt`` without its leading ('f') and/or trailing ('b') zeros (along each of ``axis``,
    default all: the slices that are zero throughout). The result's shape depends on the
    values, so ``filt`` must be concrete (not usable under ``jit``).

    Example::

        jnp.trim_zeros(jnp.array([0, 1, 0, 2, 0]))   # [1, 0, 2]
    """
    check_arraylike("trim_zeros", filt)
    if isinstance(filt, Tracer):
        raise ConcretizationTypeError(f"jnp.trim_zeros: the result's shape depends on the "
                                      f"values of a traced array; it cannot be used under jit"
                                      f"{_where(None)}")
    trim = trim.lower()
    if not set(trim) <= {"f", "b"}:
        raise ValueError(f"jnp.trim_zeros: unexpected character(s) in trim: {trim!r}"
                         f"{_where(None)}")
    a = asarray(filt)
    ndim = get_aval(a).ndim
    if ndim == 0:
        raise ValueError(f"jnp.trim_zeros: filt must be at least 1-D{_where(None)}")
    axes = range(ndim) if axis is None else [canonical_axis(ax, ndim) for ax in
                                             (axis if isinstance(axis, (tuple, list))
                                              else (axis,))]
    nonzero = np.asarray(a) != 0  # concrete: only the slice bounds are read on the host
    index = [slice(None)] * ndim
    for ax in axes:
        other = tuple(d for d in range(ndim) if d != ax)
        hits = np.flatnonzero(nonzero.any(axis=other) if other else nonzero)
        if hits.size == 0:
            index[ax] = slice(0, 0)
            continue
        start = int(hits[0]) if "f" in trim else 0
        stop = int(hits[-1]) + 1 if "b" in trim else get_aval(a).shape[ax]
        index[ax] = slice(start, stop)
    return a[tuple(index)]


def apply_over_axes(func: Callable, a: Any, axes: Any) -> Any:
    """``func(a, axis)`` applied for each of ``axes`` in turn, each result keeping the rank
    (a reduced axis is restored with length 1).

    Example::

        jnp.apply_over_axes(jnp.sum, jnp.ones((2, 3, 4)), [0, 2]).shape   # (1, 3, 1)
    """
    check_arraylike("apply_over_axes", a)
    a = asarray(a)
    for ax in (axes if isinstance(axes, (tuple, list)) else [axes]):
        ndim = get_aval(a).ndim
        ax = canonical_axis(ax, ndim)
        b = asarray(func(a, ax))
        if get_aval(b).ndim == ndim - 1:
            shape = list(get_aval(b).shape)
            shape.insert(ax, 1)
            b = lax.reshape(b, tuple(shape))
        elif get_aval(b).ndim != ndim:
            raise ValueError(f"jnp.apply_over_axes: function is not returning an array of the "
                             f"correct shape{_where(None)}")
        a = b
    return a


def _bit_axis(name: str, a: Any, axis: Any) -> tuple:
    from ._shape import moveaxis
    a = asarray(a)
    if axis is None:
        return ravel(a), 0, None
    axis = canonical_axis(axis, get_aval(a).ndim)
    return moveaxis(a, axis, -1), axis, moveaxis


def packbits(a: Any, axis: Optional[int] = None, bitorder: str = "big") -> Any:
    """The booleans ``a != 0`` packed eight to a uint8 along ``axis`` (flattened if None),
    the last byte padded with zeros; ``bitorder`` 'big' puts the first element in the high bit.

    Example::

        jnp.packbits(jnp.array([1, 0, 1, 1, 1, 0, 0, 1, 1]))   # [185, 128]
    """
    check_arraylike("packbits", a)
    a = asarray(a)
    if get_aval(a).dtype.kind not in "biu":
        raise TypeError(f"jnp.packbits: expected an input array of integer or boolean data "
                        f"type, got {get_aval(a).dtype}{_where(None)}")
    if bitorder not in ("big", "little"):
        raise ValueError(f"jnp.packbits: bitorder must be 'big' or 'little', got "
                         f"{bitorder!r}{_where(None)}")
    u8 = np.dtype(np.uint8)
    moved, axis_, move = _bit_axis("packbits", a, axis)
    bits = convert(moved != 0, u8)
    shape = get_aval(bits).shape
    n = shape[-1]
    pad = -n % 8
    if pad:
        bits = concatenate([bits, zeros(shape[:-1] + (pad,), u8)], -1)
    bits = lax.reshape(bits, shape[:-1] + ((n + pad) // 8, 8))
    weights = np.array([128, 64, 32, 16, 8, 4, 2, 1], np.uint8)
    if bitorder == "little":
        weights = weights[::-1]
    from ._reductions import sum as _sum
    packed = _sum(bits * asarray(weights.copy()), axis=-1, dtype=u8)
    return packed if move is None else move(packed, -1, axis_)


def unpackbits(a: Any, axis: Optional[int] = None, count: Optional[int] = None,
               bitorder: str = "big") -> Any:
    """The bits of the uint8 array ``a`` as uint8 zeros and ones along ``axis`` (flattened if
    None), eight per byte, cut or zero-padded to ``count`` (negative: that many dropped).

    Example::

        jnp.unpackbits(jnp.array([3], jnp.uint8))   # [0, 0, 0, 0, 0, 0, 1, 1]
    """
    check_arraylike("unpackbits", a)
    a = asarray(a)
    if get_aval(a).dtype != np.uint8:
        raise TypeError(f"jnp.unpackbits: expected an input array of unsigned byte data type, "
                        f"got {get_aval(a).dtype}{_where(None)}")
    if bitorder not in ("big", "little"):
        raise ValueError(f"jnp.unpackbits: bitorder must be 'big' or 'little', got "
                         f"{bitorder!r}{_where(None)}")
    u8 = np.dtype(np.uint8)
    moved, axis_, move = _bit_axis("unpackbits", a, axis)
    shape = get_aval(moved).shape
    shifts = np.arange(7, -1, -1, dtype=np.uint8) if bitorder == "big" else \
        np.arange(8, dtype=np.uint8)
    expanded = lax.broadcast_in_dim(moved, shape + (8,), tuple(range(len(shape))))
    bits = lax.shift_right_logical(expanded, lax.broadcast_in_dim(
        asarray(shifts), shape + (8,), (len(shape),))) & asarray(np.uint8(1))
    total = shape[-1] * 8
    bits = lax.reshape(bits, shape[:-1] + (total,))
    if count is not None:
        count = operator.index(count)
        want = count if count >= 0 else builtins_max(total + count, 0)
        if want <= total:
            bits = _slice_axis(bits, len(shape) - 1, 0, want)
        else:
            bits = concatenate([bits, zeros(shape[:-1] + (want - total,), u8)], -1)
    return bits if move is None else move(bits, -1, axis_)
