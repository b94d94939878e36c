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
]

import operator
from typing import Any, Callable, Optional

import numpy as np

from pyree import dtypes, lax
from pyree.errors import ConcretizationTypeError
from pyree.runtime.array import Array
from pyree.transpiler import primitives as P
from pyree.transpiler.source import where as _where
from pyree.transpiler.trace import Tracer, get_aval

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
        a = P.ne_p.bind(upper, lower) if get_aval(a).dtype == np.bool_ else \
            P.sub_p.bind(upper, lower)
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
    result = P.sub_p.bind(_slice_axis(flat, 0, 1, length), _slice_axis(flat, 0, 0, length - 1)) \
        if length else flat
    parts = [result]
    if to_begin is not None:
        parts.insert(0, ravel(convert(asarray(to_begin), aval.dtype, aval.weak_type)))
    if to_end is not None:
        parts.append(ravel(convert(asarray(to_end), aval.dtype, aval.weak_type)))
    return concatenate(parts, 0) if len(parts) > 1 else result


# -- searching ------------------------------------------------------------------------------------

def _isnan(x: Any) -> Any:
    return P.ne_p.bind(x, x)


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
        before = P.le_p.bind(t, v)
        if _is_inexact(t_aval.dtype):
            before = P.or_p.bind(before, _isnan(v))
    else:
        before = P.lt_p.bind(t, v)
        if _is_inexact(t_aval.dtype):
            before = P.or_p.bind(before, P.and_p.bind(_isnan(v), P.not_p.bind(_isnan(t))))
    return P.reduce_sum_p.bind(convert(before, _int_dtype()), axes=(len(shape) - 1,))


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
    falling = P.sub_p.bind(typed_scalar(n, _int_dtype()),
                           _count_sorted(lax.rev(bins, (0,)), x, not right))
    first, last = _slice_axis(bins, 0, 0, 1), _slice_axis(bins, 0, n - 1, n)
    increasing = lax.reshape(P.ge_p.bind(last, first), ())
    return P.select_p.bind(increasing, rising, falling)


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
        i = P.max_p.bind(P.min_p.bind(i, typed_scalar(m - 1, int_t)), typed_scalar(1, int_t))
        below = P.sub_p.bind(i, typed_scalar(1, int_t))
        x0, x1 = _lookup(xp, below), _lookup(xp, i)
        f0, f1 = _lookup(fp, below), _lookup(fp, i)
        dx = P.sub_p.bind(x1, x0)
        eps = typed_scalar(np.finfo(get_aval(dx).dtype).eps, get_aval(dx).dtype)
        flat = P.le_p.bind(P.abs_p.bind(dx), eps)  # repeated points: no slope
        safe_dx = P.select_p.bind(flat, typed_scalar(1, get_aval(dx).dtype), dx)
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
    earlier = P.lt_p.bind(lax.broadcasted_iota(int_t, (m, m), 1),
                          lax.broadcasted_iota(int_t, (m, m), 0))
    before = P.or_p.bind(P.lt_p.bind(col, row), P.and_p.bind(P.eq_p.bind(col, row), earlier))
    rank = P.reduce_sum_p.bind(convert(before, int_t), axes=(1,))
    # order[r] = the j whose rank is r.
    order = P.reduce_sum_p.bind(
        P.select_p.bind(P.eq_p.bind(lax.broadcast_in_dim(rank, (m, m), (1,)),
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
        result = P.add_p.bind(P.mul_p.bind(result, x), coefficient) if i else \
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
    return P.add_p.bind(*_aligned(a1, a2))


def polysub(a1: Any, a2: Any) -> Any:
    """The difference of two polynomials.

    Example::

        jnp.polysub(jnp.array([1, 2]), jnp.array([1, 0, 0]))   # [-1, 1, 2]
    """
    check_arraylike("polysub", a1, a2)
    a1, a2 = promote_dtypes(_poly_arg("polysub", a1), _poly_arg("polysub", a2))
    return P.sub_p.bind(*_aligned(a1, a2))


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
    outer = P.mul_p.bind(lax.broadcast_in_dim(a1, (n, m), (0,)),
                         lax.broadcast_in_dim(a2, (n, m), (1,)))
    # Shift row i right by i (pad rows to n + m, flatten, drop the last n zeros, re-cut into rows
    # of n + m - 1): column k then holds the products a1[i] * a2[k - i]; summing rows convolves.
    padded = lax.pad(outer, zero, [(0, 0, 0), (0, n, 0)])
    flat = lax.reshape(padded, (n * (n + m),))
    skewed = lax.reshape(_slice_axis(flat, 0, 0, n * (n + m - 1)), (n, n + m - 1))
    return P.reduce_sum_p.bind(skewed, axes=(0,))


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
    return P.mul_p.bind(_slice_axis(p, 0, 0, count), array(factors.astype(dtype)))


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
    return P.div_p.bind(lax.concatenate([p, constants], 0), array(divisors.astype(dtype)))


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
        block = P.mul_p.bind(_slice_axis(powers, 1, 0, take),
                             lax.broadcast_in_dim(lax.reshape(column, (n,)), (n, take), (0,)))
        powers = lax.concatenate([powers, block], 1)
        count += take
        if count < N:
            column = _slice_axis(powers, 1, count - 1, count)
            column = P.mul_p.bind(column, lax.reshape(x, (n, 1)))
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
    idx = P.max_p.bind(idx, typed_scalar(0, int_t))
    hits = P.eq_p.bind(lax.broadcast_in_dim(idx, (n, length), (0,)),
                       lax.broadcasted_iota(int_t, (n, length), 1))
    if weights is None:
        return P.reduce_sum_p.bind(convert(hits, int_t), axes=(0,))
    weights = asarray(weights)
    w_aval = get_aval(weights)
    if w_aval.shape != aval.shape:
        weights = broadcast_to_shape(weights, aval.shape)
        w_aval = get_aval(weights)
    spread = lax.broadcast_in_dim(weights, (n, length), (0,))
    zero = typed_scalar(False if w_aval.dtype == np.bool_ else 0, w_aval.dtype, w_aval.weak_type)
    picked = P.select_p.bind(hits, spread, zero)
    reduce = P.reduce_or_p if w_aval.dtype == np.bool_ else P.reduce_sum_p
    return reduce.bind(picked, axes=(0,))


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
            first, last = P.reduce_min_p.bind(ravel(a), axes=(0,)), \
                P.reduce_max_p.bind(ravel(a), axes=(0,))
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
    index = P.sub_p.bind(_count_sorted(edges, a, right=True), typed_scalar(1, int_t))
    last_edge = lax.reshape(_slice_axis(edges, 0, nbins, nbins + 1), ())
    index = P.select_p.bind(P.eq_p.bind(a, last_edge), typed_scalar(nbins - 1, int_t), index)
    n = get_aval(a).shape[0]
    hits = P.eq_p.bind(lax.broadcast_in_dim(index, (n, nbins), (0,)),
                       lax.broadcasted_iota(int_t, (n, nbins), 1))
    if weights is None:
        counts = P.reduce_sum_p.bind(convert(hits, count_dtype), axes=(0,))
    else:
        picked = P.select_p.bind(hits, lax.broadcast_in_dim(weights, (n, nbins), (0,)),
                                 typed_scalar(0, count_dtype))
        counts = P.reduce_sum_p.bind(picked, axes=(0,))
    if density:
        widths = diff(edges)
        total = P.reduce_sum_p.bind(counts, axes=(0,))
        counts = P.div_p.bind(counts, P.mul_p.bind(convert(widths, count_dtype), total))
    return counts, edges


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
