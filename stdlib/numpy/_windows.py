"""Windowed and cumulative functions of ``pyree.numpy``: convolve, correlate, cumsum, cumprod,
nancumsum, nancumprod, cumulative_sum, cumulative_prod.

The cumulative functions are ``lax.cumsum``/``lax.cumprod`` (a parallel prefix scan) with
JAX's dtype rules; convolve and correlate are one-dimensional ``conv_general_dilated``s.
"""
from __future__ import annotations

__all__ = [
    "convolve", "correlate", "cumprod", "cumsum", "cumulative_prod", "cumulative_sum",
    "nancumprod", "nancumsum",
    "bartlett", "blackman", "hamming", "hanning", "kaiser",
]

from typing import Any, Callable, Optional

import numpy as np

from pyree import dtypes, lax
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import get_aval

from ._util import (canonical_axis, check_arraylike, convert, promote_dtypes,
                    promote_dtypes_inexact, requested_dtype, typed_scalar)


# -- cumulative reductions -------------------------------------------------------------------------

def _promoted_integer(dtype: np.dtype) -> np.dtype:
    """Booleans and integers narrower than the default accumulate in the default (u)int."""
    default_int = dtypes.canonicalize_dtype(int)
    if dtype == np.bool_:
        return default_int
    if dtype.kind in "iu" and dtype.itemsize < default_int.itemsize:
        return np.dtype(f"{'u' if dtype.kind == 'u' else ''}int{8 * default_int.itemsize}")
    return dtype


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(f"the 'out' argument to jnp.{name} is not supported: pyree "
                                  f"arrays are immutable{where(None)}")


def _cumulative(name: str, scan: Callable, a: Any, axis: Any, dtype: Any,
                fill_nan: Optional[float] = None, promote_integers: bool = False) -> Any:
    check_arraylike(name, a)
    aval = get_aval(a)
    if axis is None or aval.ndim == 0:
        a = lax.reshape(a, (aval.size,))
        axis = 0 if axis is None else axis
    ndim = get_aval(a).ndim
    axis = canonical_axis(axis, ndim)
    in_dtype = get_aval(a).dtype
    if fill_nan is not None and (in_dtype.kind in "fc" or in_dtype == dtypes.bfloat16):
        a = lax.select(lax.ne(a, a), lax.full(get_aval(a).shape, fill_nan, in_dtype), a)
    wanted = requested_dtype(dtype)
    if wanted is None:
        result = _promoted_integer(in_dtype) if promote_integers or in_dtype == np.bool_ \
            else in_dtype
        compute = result
    elif wanted == np.bool_:
        # Accumulate truth values as integers (so that -1 and 1 do not cancel), then back.
        result = wanted
        if in_dtype != np.bool_:
            a = lax.ne(a, typed_scalar(0, in_dtype))
        compute = _promoted_integer(wanted)
    else:
        result = compute = wanted
    # The result is strongly typed, even for a weakly typed operand (as in JAX).
    a = convert(a, compute)
    out = scan(a, axis)
    return convert(out, result)


def cumsum(a: Any, axis: Optional[int] = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative sum along ``axis`` (of the flattened array when ``axis`` is None). Booleans
    accumulate in the default integer type; other dtypes keep theirs unless ``dtype`` is given.

    Example::

        jnp.cumsum(jnp.array([[1, 2], [3, 4]]), axis=1)   # [[1, 3], [3, 7]]
    """
    _no_out("cumsum", out)
    return _cumulative("cumsum", lambda x, ax: lax.cumsum(x, ax), a, axis, dtype)


def cumprod(a: Any, axis: Optional[int] = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative product along ``axis`` (of the flattened array when ``axis`` is None).

    Example::

        jnp.cumprod(jnp.array([1., 2., 3.]))   # [1., 2., 6.]
    """
    _no_out("cumprod", out)
    return _cumulative("cumprod", lambda x, ax: lax.cumprod(x, ax), a, axis, dtype)


def nancumsum(a: Any, axis: Optional[int] = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative sum treating NaNs as zero.

    Example::

        jnp.nancumsum(jnp.array([1., jnp.nan, 2.]))   # [1., 1., 3.]
    """
    _no_out("nancumsum", out)
    return _cumulative("nancumsum", lambda x, ax: lax.cumsum(x, ax), a, axis, dtype,
                       fill_nan=0)


def nancumprod(a: Any, axis: Optional[int] = None, dtype: Any = None, out: None = None) -> Any:
    """Cumulative product treating NaNs as one.

    Example::

        jnp.nancumprod(jnp.array([2., jnp.nan, 3.]))   # [2., 2., 6.]
    """
    _no_out("nancumprod", out)
    return _cumulative("nancumprod", lambda x, ax: lax.cumprod(x, ax), a, axis, dtype,
                       fill_nan=1)


def _cumulative_api(name: str, scan: Callable, identity: int, x: Any, axis: Optional[int],
                    dtype: Any, include_initial: bool) -> Any:
    check_arraylike(name, x)
    aval = get_aval(x)
    if aval.ndim == 0:
        raise ValueError(f"{name} needs an array of rank >= 1, got a 0-d array{where(None)}")
    if axis is None:
        if aval.ndim > 1:
            raise ValueError(f"{name}: the input has rank {aval.ndim}, so axis must be given "
                             f"(it is optional only for one-dimensional arrays){where(None)}")
        axis = 0
    axis = canonical_axis(axis, aval.ndim)
    out = _cumulative(name, scan, x, axis, dtype, promote_integers=True)
    if include_initial:
        shape = list(aval.shape)
        shape[axis] = 1
        out_dtype = get_aval(out).dtype
        out = lax.concatenate([lax.full(shape, identity, out_dtype), out], axis)
    return out


def cumulative_sum(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    """Cumulative sum (array API): small integers accumulate in the default integer type;
    ``include_initial`` prepends the zero.

    Example::

        jnp.cumulative_sum(jnp.array([1, 2, 3]), include_initial=True)   # [0, 1, 3, 6]
    """
    return _cumulative_api("cumulative_sum", lambda a, ax: lax.cumsum(a, ax), 0, x, axis,
                           dtype, include_initial)


def cumulative_prod(x: Any, /, *, axis: Optional[int] = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """Cumulative product (array API); ``include_initial`` prepends the one.

    Example::

        jnp.cumulative_prod(jnp.array([1, 2, 3]))   # [1, 2, 6]
    """
    return _cumulative_api("cumulative_prod", lambda a, ax: lax.cumprod(a, ax), 1, x, axis,
                           dtype, include_initial)


# -- convolve / correlate --------------------------------------------------------------------------

_MODES = ("full", "same", "valid")


def _conv1d(name: str, a: Any, v: Any, mode: str, precision: Any,
            preferred_element_type: Any) -> Any:
    check_arraylike(name, a, v)
    if get_aval(a).ndim != 1 or get_aval(v).ndim != 1:
        raise ValueError(f"{name}() only supports 1-dimensional inputs, got shapes "
                         f"{get_aval(a).shape} and {get_aval(v).shape}{where(None)}")
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {list(_MODES)}, got {mode!r}"
                         f"{where(None)}")
    if preferred_element_type is None:
        # NumPy convolves in floating point.
        a, v = promote_dtypes_inexact(a, v)
    else:
        a, v = promote_dtypes(a, v)
    n, m = get_aval(a).shape[0], get_aval(v).shape[0]
    if n == 0 or m == 0:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {get_aval(a).shape} and "
                         f"{get_aval(v).shape}{where(None)}")
    # The results have the arrays' dtype, strongly typed.
    dtype = get_aval(a).dtype
    a, v = convert(a, dtype), convert(v, dtype)
    reverse_out = False
    if name == "correlate":
        if dtype.kind == "c":
            from ._ufuncs import conj
            v = conj(v)
        if n < m:
            # c[k] = sum_j a[j + k] conj(v[j]) equals the reversed correlation of conj(v)
            # with a: the longer array slides over the shorter one, as in NumPy.
            a, v = v, a
            n, m = m, n
            reverse_out = True
    else:
        if n < m:
            a, v = v, a
            n, m = m, n
        v = lax.rev(v, (0,))
    pads = {"valid": (0, 0), "same": (m // 2, m - 1 - m // 2), "full": (m - 1, m - 1)}[mode]
    pref = None if preferred_element_type is None else requested_dtype(preferred_element_type)
    out = lax.conv_general_dilated(lax.reshape(a, (1, 1, n)), lax.reshape(v, (1, 1, m)), (1,),
                                   [pads], precision=precision, preferred_element_type=pref)
    out = lax.reshape(out, (get_aval(out).shape[2],))
    return lax.rev(out, (0,)) if reverse_out else out


def convolve(a: Any, v: Any, mode: str = "full", *, precision: Any = None,
             preferred_element_type: Any = None) -> Any:
    """Discrete linear convolution of two 1-D arrays (NumPy's ``convolve``): ``mode`` 'full'
    (length n + m - 1), 'same' (length max(n, m)) or 'valid' (max - min + 1). Integers
    convolve in floating point unless ``preferred_element_type`` is given.

    Example::

        jnp.convolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))
        # [0., 1., 2.5, 4., 1.5]
    """
    return _conv1d("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """Cross-correlation of two 1-D arrays (NumPy's ``correlate``):
    ``c[k] = sum_j a[j + k] * conj(v[j])``, with the modes of ``convolve`` ('valid' by
    default).

    Example::

        jnp.correlate(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]), "full")
        # [0.5, 2., 3.5, 3., 0.]
    """
    return _conv1d("correlate", a, v, mode, precision, preferred_element_type)


# -- window functions ----------------------------------------------------------------------------

def _window_positions(name: str, M: Any) -> tuple:
    """(n = 0..M-1 in the default float type, M as an int); None when M < 2 (the window is
    M ones, or empty)."""
    import operator
    try:
        M = operator.index(M)
    except TypeError:
        raise TypeError(f"jnp.{name}: M must be a static integer, got {M!r}{where(None)}") \
            from None
    from ._creation import arange
    return arange(M, dtype=dtypes.canonicalize_dtype(float)), M


def _short_window(M: int) -> Any:
    from ._creation import ones
    return ones((builtins_max(M, 0),), dtype=dtypes.canonicalize_dtype(float))


builtins_max = max


def _cosine_window(name: str, M: Any, coefficients: tuple) -> Any:
    from ._ufuncs import cos
    n, M = _window_positions(name, M)
    if M < 2:
        return _short_window(M)
    out = None
    for k, a in enumerate(coefficients):
        term = a * cos(n * (2.0 * np.pi * k / (M - 1))) if k else a + 0.0 * n
        out = term if out is None else out + term
    return out


def hanning(M: int) -> Any:
    """The Hann window of ``M`` points, ``0.5 - 0.5 cos(2 pi n / (M - 1))``.

    Example::

        jnp.hanning(5)   # [0, 0.5, 1, 0.5, 0]
    """
    return _cosine_window("hanning", M, (0.5, -0.5))


def hamming(M: int) -> Any:
    """The Hamming window of ``M`` points, ``0.54 - 0.46 cos(2 pi n / (M - 1))``.

    Example::

        jnp.hamming(3)   # [0.08, 1, 0.08]
    """
    return _cosine_window("hamming", M, (0.54, -0.46))


def blackman(M: int) -> Any:
    """The Blackman window of ``M`` points,
    ``0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1))``.

    Example::

        jnp.blackman(3)   # [0, 1, 0] (up to rounding)
    """
    return _cosine_window("blackman", M, (0.42, -0.5, 0.08))


def bartlett(M: int) -> Any:
    """The Bartlett (triangular) window of ``M`` points, zero at both ends.

    Example::

        jnp.bartlett(5)   # [0, 0.5, 1, 0.5, 0]
    """
    from ._ufuncs import abs as _abs
    n, M = _window_positions("bartlett", M)
    if M < 2:
        return _short_window(M)
    half = (M - 1) / 2.0
    return 1.0 - _abs(n - half) / half


def kaiser(M: int, beta: Any) -> Any:
    """The Kaiser window of ``M`` points with shape parameter ``beta`` (which may be traced):
    ``i0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / i0(beta)``.

    Example::

        jnp.kaiser(5, 3.0)   # [0.205, 0.727, 1, 0.727, 0.205]
    """
    from ._creation import asarray
    from ._ufuncs import i0, sqrt
    check_arraylike("kaiser", beta)
    n, M = _window_positions("kaiser", M)
    if M < 2:
        return _short_window(M)
    (beta,) = promote_dtypes_inexact(asarray(beta))
    ratio = n * (2.0 / (M - 1)) - 1.0
    return i0(beta * sqrt(1.0 - ratio * ratio)) / i0(beta)
