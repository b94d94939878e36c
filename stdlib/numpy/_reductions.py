"""Reductions of ``pyree.numpy``: sum, mean, var, std, max, min, prod, argmax, argmin, all, any,
their NaN-ignoring forms, average, ptp and count_nonzero."""
from __future__ import annotations

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "average", "count_nonzero", "max", "mean",
    "min", "nanargmax", "nanargmin", "nanmax", "nanmean", "nanmin", "nanprod", "nanstd",
    "nansum", "nanvar", "prod", "ptp", "std", "sum", "var",
    "corrcoef", "cov",
]

import builtins
import math
from typing import Any, Callable, Optional

import numpy as np

from pyree import dtypes, lax
from pyree.transpiler.programs.jit import compiled_when_hot
from pyree.transpiler.core.trace import get_aval

from ._util import (broadcast_to_shape, canonical_axes, canonical_axis, check_arraylike,
                    convert, requested_dtype, to_inexact_dtype,
                    typed_scalar)


def _upcast_integer(dtype: np.dtype) -> np.dtype:
    """Booleans and integers narrower than the default sum in the default int (as NumPy/JAX)."""
    default_int = dtypes.canonicalize_dtype(int)
    if dtype == np.bool_:
        return default_int
    if dtype.kind == "i" and dtype.itemsize < default_int.itemsize:
        return default_int
    if dtype.kind == "u" and dtype.itemsize < default_int.itemsize:
        return np.dtype(f"uint{8 * default_int.itemsize}")
    return dtype


def _keepdims(result: Any, shape: tuple, axes: tuple) -> Any:
    kept = tuple(1 if i in axes else d for i, d in enumerate(shape))
    return lax.reshape(result, kept)


def _reduce(name: str, reduction: Callable, a: Any, axis: Any, dtype: Any, keepdims: bool, initial: Any,
            where: Any, identity: Any, upcast: bool) -> Any:
    check_arraylike(name, a)
    aval = get_aval(a)
    axes = canonical_axes(axis, aval.ndim)
    out_dtype = requested_dtype(dtype)
    if out_dtype is None:
        out_dtype = _upcast_integer(aval.dtype) if upcast else aval.dtype
    # The result is strongly typed even for a weakly typed operand (as in JAX).
    a = convert(a, out_dtype)
    if out_dtype == np.bool_ and reduction in (lax.reduce_sum, lax.reduce_prod):
        # sum/prod with dtype=bool are any/all (JAX's bool_op).
        reduction = lax.reduce_or if reduction is lax.reduce_sum else lax.reduce_and
    if where is not None:
        # Masked-out elements take the identity; max/min have none and take `initial`
        # (added to the result once more below, which is harmless for them).
        fill = identity if identity is not None else initial
        if fill is None:
            raise ValueError(f"reduction operation {name} with where= needs initial=")
        mask = broadcast_to_shape(convert(where, np.dtype(np.bool_)), aval.shape)
        a = lax.select(mask, a, typed_scalar(fill, out_dtype))
    if identity is None and initial is None and builtins.any(aval.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    result = reduction(a, axes)
    if initial is not None:
        combine = {lax.reduce_sum: lax.add, lax.reduce_prod: lax.mul, lax.reduce_max: lax.max,
                   lax.reduce_min: lax.min, lax.reduce_or: lax.bitwise_or,
                   lax.reduce_and: lax.bitwise_and}[reduction]
        result = combine(result, typed_scalar(initial, out_dtype))
    if keepdims:
        result = _keepdims(result, aval.shape, axes)
    return result


@compiled_when_hot("axis", "dtype", "keepdims", "initial")
def sum(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
        initial: Any = None, where: Any = None) -> Any:
    """Sum of elements over ``axis`` (all axes by default).

    Example::

        jnp.sum(jnp.ones((2, 3)), axis=0)   # [2., 2., 2.]
    """
    _no_out(out)
    aval = get_aval(a) if not isinstance(a, (list, tuple)) else None
    if aval is not None and aval.dtype == np.bool_ and dtype is None:
        a = convert(a, _upcast_integer(aval.dtype))
    return _reduce("sum", lax.reduce_sum, a, axis, dtype, keepdims, initial, where, 0, True)


def prod(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
         initial: Any = None, where: Any = None) -> Any:
    """Product of elements over ``axis``.

    Example::

        jnp.prod(jnp.array([1., 2., 3.]))   # 6.
    """
    _no_out(out)
    aval = get_aval(a) if not isinstance(a, (list, tuple)) else None
    if aval is not None and aval.dtype == np.bool_ and dtype is None:
        a = convert(a, _upcast_integer(aval.dtype))
    return _reduce("prod", lax.reduce_prod, a, axis, dtype, keepdims, initial, where, 1, True)


def max(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, initial: Any = None,
        where: Any = None) -> Any:
    """Largest element over ``axis`` (NaN if any element is NaN).

    Example::

        jnp.max(jnp.array([[1, 5], [3, 2]]), axis=1)   # [5, 3]
    """
    _no_out(out)
    if _is_complex(a):
        return _complex_extremum(max, a, axis, keepdims, initial, where)
    return _reduce("max", lax.reduce_max, a, axis, None, keepdims, initial, where, None, False)


def min(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, initial: Any = None,
        where: Any = None) -> Any:
    """Smallest element over ``axis`` (NaN if any element is NaN).

    Example::

        jnp.min(jnp.array([[1, 5], [3, 2]]), axis=0)   # [1, 2]
    """
    _no_out(out)
    if _is_complex(a):
        return _complex_extremum(min, a, axis, keepdims, initial, where)
    return _reduce("min", lax.reduce_min, a, axis, None, keepdims, initial, where, None, False)


amax, amin = max, min


def _is_complex(a: Any) -> bool:
    return not isinstance(a, (list, tuple)) and get_aval(a).dtype.kind == "c"


def _complex_extremum(reduce, a: Any, axis: Any, keepdims: bool, initial: Any,
                      where: Any) -> Any:
    """max/min of complex numbers in JAX's lexicographic order (real part, then imaginary):
    the extreme real part, then the extreme imaginary part among the elements that have it."""
    from ._ufuncs import (equal, imag, isnan, logical_and, logical_or, maximum, minimum, real,
                          select)
    aval = get_aval(a)
    axes = canonical_axes(axis, aval.ndim)
    re, im = real(a), imag(a)
    init = None if initial is None else np.complex128(initial)
    best_re = reduce(re, axis=axes, keepdims=True, where=where,
                     initial=None if init is None else init.real)
    # A NaN real part wins (NumPy's NaN propagation; JAX's pairwise order decides instead).
    ties = logical_or(equal(re, best_re), logical_and(isnan(re), isnan(best_re)))
    if where is not None:
        ties = logical_and(ties, where)
    worst = -np.inf if reduce is max else np.inf
    best_im = reduce(im, axis=axes, keepdims=True, where=ties, initial=worst)
    if init is not None:
        # `initial` takes part like one more element.
        with_init = (maximum if reduce is max else minimum)(best_im, init.imag)
        best_im = select([equal(best_re, init.real)], [with_init], best_im)
    result = lax.complex(best_re, best_im)
    return result if keepdims else lax.reshape(
        result, tuple(d for i, d in enumerate(aval.shape) if i not in axes))


def all(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
        where: Any = None) -> Any:
    """True if every element over ``axis`` is true.

    Example::

        jnp.all(jnp.array([True, False]))   # False
    """
    _no_out(out)
    check_arraylike("all", a)
    a = convert(a, np.dtype(np.bool_))
    return _reduce("all", lax.reduce_and, a, axis, None, keepdims, None, where, True, False)


def any(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
        where: Any = None) -> Any:
    """True if some element over ``axis`` is true.

    Example::

        jnp.any(jnp.array([True, False]))   # True
    """
    _no_out(out)
    check_arraylike("any", a)
    a = convert(a, np.dtype(np.bool_))
    return _reduce("any", lax.reduce_or, a, axis, None, keepdims, None, where, False, False)


_HALF = (np.dtype(np.float16), np.dtype(dtypes.bfloat16))


def _count(shape: tuple, axes: tuple) -> int:
    return math.prod(shape[i] for i in axes)


@compiled_when_hot("axis", "dtype", "keepdims")
def mean(a: Any, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False,
         where: Any = None) -> Any:
    """Arithmetic mean over ``axis`` (integers average in the default float type).

    Example::

        jnp.mean(jnp.array([[1., 2.], [3., 4.]]), axis=0)   # [2., 3.]
    """
    _no_out(out)
    check_arraylike("mean", a)
    aval = get_aval(a)
    axes = canonical_axes(axis, aval.ndim)
    compute = requested_dtype(dtype)
    result_dtype = None
    if compute is None:
        compute = aval.dtype if aval.dtype.kind in "fc" or aval.dtype == dtypes.bfloat16 \
            else to_inexact_dtype(aval.dtype, aval.weak_type)
        # As JAX: half-precision means divide a float32 sum by a float32 count, then round
        # once (in float16 the count alone overflows past 65504 elements). An explicit
        # dtype= computes in that dtype, as in JAX.
        if compute in _HALF:
            result_dtype, compute = compute, np.dtype(np.float32)
    a = convert(a, compute, aval.weak_type)
    total = sum(a, axis=axes, keepdims=keepdims, where=where)
    if where is None:
        count = typed_scalar(_count(aval.shape, axes), compute)
    else:
        mask = broadcast_to_shape(convert(where, np.dtype(np.bool_)), aval.shape)
        count = sum(convert(mask, compute), axis=axes, keepdims=keepdims)
    result = lax.div(total, count)
    return result if result_dtype is None else convert(result, result_dtype)


@compiled_when_hot("axis", "dtype", "ddof", "keepdims", "correction")
def var(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, where: Any = None, correction: Any = None) -> Any:
    """Variance over ``axis``: ``mean(|a - mean(a)|**2)`` divided by ``N - ddof``.

    Example::

        jnp.var(jnp.array([1., 2., 3., 4.]))   # 1.25
    """
    _no_out(out)
    check_arraylike("var", a)
    if correction is not None:
        ddof = correction
    aval = get_aval(a)
    axes = canonical_axes(axis, aval.ndim)
    result_dtype = requested_dtype(dtype)
    if result_dtype is None:
        result_dtype = aval.dtype if aval.dtype.kind in "fc" or aval.dtype == dtypes.bfloat16 \
            else to_inexact_dtype(aval.dtype, aval.weak_type)
        if result_dtype.kind == "c":
            # The variance of complex numbers is real: mean(|a - mean(a)|**2).
            result_dtype = np.finfo(result_dtype).dtype
    elif aval.dtype.kind == "c" and result_dtype.kind != "c":
        raise ValueError(f"var: a real dtype= ({result_dtype.name}) for complex input is not "
                         f"supported (as in JAX); leave dtype out for a real variance")
    # Half precision computes in float32 and rounds once at the end (as JAX).
    compute = np.dtype(np.float32) if result_dtype in _HALF else result_dtype
    if aval.dtype.kind == "c":
        compute = np.result_type(compute, aval.dtype)
    a = convert(a, compute, aval.weak_type)
    from ._ufuncs import subtract
    centered = subtract(a, mean(a, axis=axes, keepdims=True, where=where))
    if compute.kind == "c":
        squared = lax.add(lax.integer_pow(lax.real(centered), y=2),
                          lax.integer_pow(lax.imag(centered), y=2))
    else:
        squared = lax.integer_pow(centered, y=2)
    real = get_aval(squared).dtype
    total = sum(squared, axis=axes, keepdims=keepdims, where=where)
    if where is None:
        count = typed_scalar(_count(aval.shape, axes) - ddof, real)
    else:
        mask = broadcast_to_shape(convert(where, np.dtype(np.bool_)), aval.shape)
        count = lax.sub(sum(convert(mask, real), axis=axes, keepdims=keepdims),
                        typed_scalar(ddof, real))
    return convert(lax.div(total, count), result_dtype)


@compiled_when_hot("axis", "dtype", "ddof", "keepdims", "correction")
def std(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, where: Any = None, correction: Any = None) -> Any:
    """Standard deviation over ``axis`` (the square root of ``var``).

    Example::

        jnp.std(jnp.array([1., 2., 3., 4.]))   # 1.118034
    """
    return lax.sqrt(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                        where=where, correction=correction))


def _arg_reduce(name: str, fn, a: Any, axis: Optional[int], keepdims: bool) -> Any:
    check_arraylike(name, a)
    aval = get_aval(a)
    index_dtype = dtypes.canonicalize_dtype(int)
    if axis is None:
        flat = lax.reshape(a, (aval.size,))
        result = fn(flat, 0, index_dtype)
        return lax.reshape(result, (1,) * aval.ndim) if keepdims else result
    axis = canonical_axis(axis, aval.ndim)
    if aval.ndim == 0:
        raise ValueError(f"{name} of a 0-d array needs axis=None")
    result = fn(a, axis, index_dtype)
    return _keepdims(result, aval.shape, (axis,)) if keepdims else result


def argmax(a: Any, axis: Optional[int] = None, out: None = None, keepdims: bool = False) -> Any:
    """Index of the largest element (first on ties; NaN counts as largest), flattened when
    ``axis`` is None.

    Example::

        jnp.argmax(jnp.array([1, 7, 7]))   # 1
    """
    _no_out(out)
    return _arg_reduce("argmax", lax.argmax, a, axis, keepdims)


def argmin(a: Any, axis: Optional[int] = None, out: None = None, keepdims: bool = False) -> Any:
    """Index of the smallest element (first on ties; NaN counts as smallest).

    Example::

        jnp.argmin(jnp.array([3, 1, 1]))   # 1
    """
    _no_out(out)
    return _arg_reduce("argmin", lax.argmin, a, axis, keepdims)


def _no_out(out: Any) -> None:
    if out is not None:
        raise NotImplementedError("The 'out' argument is not supported: pyree arrays are "
                                  "immutable; use the returned array")


# -- NaN-ignoring reductions, average, ptp, count_nonzero ----------------------------------------

def _is_inexact(a: Any) -> bool:
    dtype = get_aval(a).dtype
    return dtype.kind in "fc" or dtype == dtypes.bfloat16


def _replace_nan(a: Any, value: Any) -> Any:
    """``a`` with NaNs replaced by ``value`` (integers and booleans unchanged)."""
    if not _is_inexact(a):
        return a
    aval = get_aval(a)
    fill = lax.full(aval.shape, typed_scalar(value, aval.dtype, aval.weak_type))
    return lax.select(lax.ne(a, a), fill, a)


def _isnan(a: Any) -> Any:
    aval = get_aval(a)
    if not _is_inexact(a):
        return lax.full(aval.shape, False, np.bool_)
    return lax.ne(a, a)


def nansum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
           keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """Sum over ``axis`` with NaNs counted as zero.

    Example::

        jnp.nansum(jnp.array([1.0, jnp.nan, 2.0]))   # 3.
    """
    check_arraylike("nansum", a)
    return sum(_replace_nan(a, 0), axis=axis, dtype=dtype, out=out, keepdims=keepdims,
               initial=initial, where=where)


def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """Product over ``axis`` with NaNs counted as one.

    Example::

        jnp.nanprod(jnp.array([2.0, jnp.nan, 3.0]))   # 6.
    """
    check_arraylike("nanprod", a)
    return prod(_replace_nan(a, 1), axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                initial=initial, where=where)


def _nan_extreme(name: str, fn, fill: float, a: Any, axis: Any, out: None, keepdims: bool,
                 initial: Any, where: Any) -> Any:
    check_arraylike(name, a)
    if not _is_inexact(a):
        return fn(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
    result = fn(_replace_nan(a, fill), axis=axis, out=out, keepdims=keepdims, initial=initial,
                where=where)
    # A slice of NaNs only gives NaN (as NumPy, which also warns).
    all_nan = all(_isnan(a), axis=axis, keepdims=keepdims, where=where)
    aval = get_aval(result)
    return lax.select(all_nan, lax.full(aval.shape, typed_scalar(np.nan, aval.dtype)),
                      result)


def nanmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Largest element over ``axis``, ignoring NaNs (NaN where all are NaN).

    Example::

        jnp.nanmax(jnp.array([1.0, jnp.nan, 3.0]))   # 3.
    """
    return _nan_extreme("nanmax", max, -np.inf, a, axis, out, keepdims, initial, where)


def nanmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """Smallest element over ``axis``, ignoring NaNs (NaN where all are NaN).

    Example::

        jnp.nanmin(jnp.array([1.0, jnp.nan, 3.0]))   # 1.
    """
    return _nan_extreme("nanmin", min, np.inf, a, axis, out, keepdims, initial, where)


def _nan_count(a: Any, axis: Any, keepdims: bool, where: Any, dtype: np.dtype) -> Any:
    present = lax.bitwise_not(_isnan(a))
    return sum(convert(present, dtype), axis=axis, keepdims=keepdims, where=where)


def _inexact_compute_dtype(a: Any, dtype: Any) -> np.dtype:
    compute = requested_dtype(dtype)
    if compute is None:
        aval = get_aval(a)
        compute = aval.dtype if _is_inexact(a) else to_inexact_dtype(aval.dtype, aval.weak_type)
    return compute


def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, where: Any = None) -> Any:
    """Mean over ``axis`` of the elements that are not NaN.

    Example::

        jnp.nanmean(jnp.array([1.0, jnp.nan, 3.0]))   # 2.
    """
    _no_out(out)
    check_arraylike("nanmean", a)
    if not _is_inexact(a):
        return mean(a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    compute = _inexact_compute_dtype(a, dtype)
    a = convert(a, compute, get_aval(a).weak_type)
    total = sum(_replace_nan(a, 0), axis=axis, keepdims=keepdims, where=where)
    return lax.div(total, _nan_count(a, axis, keepdims, where, compute))


def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None) -> Any:
    """Variance over ``axis`` of the elements that are not NaN, divided by ``N - ddof``.

    Example::

        jnp.nanvar(jnp.array([1.0, jnp.nan, 3.0]))   # 1.
    """
    _no_out(out)
    check_arraylike("nanvar", a)
    if not _is_inexact(a):
        return var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where)
    compute = _inexact_compute_dtype(a, dtype)
    a = convert(a, compute, get_aval(a).weak_type)
    center = nanmean(a, axis=axis, keepdims=True, where=where)
    from ._ufuncs import subtract
    centered = _replace_nan(subtract(a, center), 0)
    squared = lax.integer_pow(centered, y=2)
    if get_aval(squared).dtype.kind == "c":
        squared = lax.abs(centered)
        squared = lax.mul(squared, squared)
    total = sum(squared, axis=axis, keepdims=keepdims, where=where)
    count = _nan_count(a, axis, keepdims, where, get_aval(total).dtype)
    return lax.div(total, lax.sub(count, typed_scalar(ddof, get_aval(total).dtype)))


def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
           keepdims: bool = False, where: Any = None) -> Any:
    """Standard deviation over ``axis`` of the elements that are not NaN.

    Example::

        jnp.nanstd(jnp.array([1.0, jnp.nan, 3.0]))   # 1.
    """
    return lax.sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof,
                           keepdims=keepdims, where=where))


def _nan_arg(name: str, fn, fill: float, a: Any, axis: Optional[int], keepdims: bool) -> Any:
    check_arraylike(name, a)
    if not _is_inexact(a):
        return fn(a, axis=axis, keepdims=keepdims)
    result = fn(_replace_nan(a, fill), axis=axis, keepdims=keepdims)
    # A slice of NaNs only gives -1 (as JAX; NumPy raises).
    all_nan = all(_isnan(a), axis=axis, keepdims=keepdims)
    aval = get_aval(result)
    return lax.select(all_nan, lax.full(aval.shape, typed_scalar(-1, aval.dtype)), result)


def nanargmax(a: Any, axis: Optional[int] = None, out: None = None,
              keepdims: bool = False) -> Any:
    """Index of the largest element that is not NaN (-1 where all are NaN).

    Example::

        jnp.nanargmax(jnp.array([1.0, jnp.nan, 3.0]))   # 2
    """
    _no_out(out)
    return _nan_arg("nanargmax", argmax, -np.inf, a, axis, keepdims)


def nanargmin(a: Any, axis: Optional[int] = None, out: None = None,
              keepdims: bool = False) -> Any:
    """Index of the smallest element that is not NaN (-1 where all are NaN).

    Example::

        jnp.nanargmin(jnp.array([jnp.nan, 3.0, 1.0]))   # 2
    """
    _no_out(out)
    return _nan_arg("nanargmin", argmin, np.inf, a, axis, keepdims)


def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """Weighted mean over ``axis``; with ``returned``, also the sum of the weights.

    ``weights`` has ``a``'s shape, or is 1-D with the length of ``a`` along an integer
    ``axis``.

    Example::

        jnp.average(jnp.array([1.0, 2.0, 4.0]), weights=jnp.array([1.0, 1.0, 2.0]))   # 2.75
    """
    check_arraylike("average", a)
    from ._ufuncs import multiply
    from ._util import promote_dtypes_inexact
    aval = get_aval(a)
    axes = canonical_axes(axis, aval.ndim)
    if weights is None:
        avg = mean(a, axis=axes, keepdims=keepdims)
        out_dtype = get_aval(avg).dtype
        count = _count(aval.shape, axes)
        weight_sum = lax.full(get_aval(avg).shape, typed_scalar(count, out_dtype))
    else:
        check_arraylike("average", weights)
        a, weights = promote_dtypes_inexact(a, weights)
        w_aval = get_aval(weights)
        if w_aval.shape != aval.shape:
            if axis is None or isinstance(axis, (tuple, list)):
                raise TypeError(f"jnp.average: weights of shape {w_aval.shape} differ from the "
                                f"array's shape {aval.shape}; that needs an integer axis")
            if w_aval.ndim != 1:
                raise TypeError("jnp.average: 1-D weights expected when the shapes differ")
            if w_aval.shape[0] != aval.shape[axes[0]]:
                raise ValueError(f"jnp.average: weights of length {w_aval.shape[0]} do not match "
                                 f"axis {axis} of shape {aval.shape}")
            weights = lax.broadcast_in_dim(weights, aval.shape, (axes[0],))
        weight_sum = sum(weights, axis=axes, keepdims=keepdims)
        avg = lax.div(sum(multiply(a, weights), axis=axes, keepdims=keepdims), weight_sum)
    if returned:
        return avg, weight_sum
    return avg


def ptp(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Peak to peak: ``max - min`` over ``axis``.

    Example::

        jnp.ptp(jnp.array([[1, 5], [3, 2]]), axis=1)   # [4, 1]
    """
    _no_out(out)
    check_arraylike("ptp", a)
    return lax.sub(max(a, axis=axis, keepdims=keepdims), min(a, axis=axis,
                                                             keepdims=keepdims))


def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The number of non-zero elements over ``axis`` (in the default integer type).

    Example::

        jnp.count_nonzero(jnp.array([[0, 1], [2, 3]]), axis=0)   # [1, 2]
    """
    check_arraylike("count_nonzero", a)
    nonzero = convert(a, np.dtype(np.bool_))
    return sum(convert(nonzero, dtypes.canonicalize_dtype(int)), axis=axis, keepdims=keepdims)


# -- covariance ---------------------------------------------------------------------------------

def _variables(name: str, x: Any, rowvar: bool) -> Any:
    """``x`` as a 2-D (variables, observations) array."""
    from ._creation import asarray
    x = asarray(x)
    aval = get_aval(x)
    if aval.ndim > 2:
        raise ValueError(f"jnp.{name}: m has more than 2 dimensions (shape {aval.shape})")
    if aval.ndim < 2:
        x = lax.reshape(x, (1, aval.size))
    elif not rowvar and aval.shape[0] != 1:
        x = lax.transpose(x, (1, 0))
    return x


def _weights(name: str, w: Any, n: int, integer: bool) -> Any:
    from ._creation import asarray
    w = asarray(w)
    aval = get_aval(w)
    if aval.ndim > 1:
        raise RuntimeError(f"jnp.{name}: cannot handle multidimensional weights")
    if aval.shape[0] != n:
        raise RuntimeError(f"jnp.{name}: incompatible numbers of samples and weights "
                           f"({n} vs {aval.shape[0]})")
    if integer and aval.dtype.kind not in "iub":
        raise TypeError(f"jnp.{name}: fweights must be integer, got {aval.dtype}")
    return w


def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False,
        ddof: Optional[int] = None, fweights: Any = None, aweights: Any = None,
        dtype: Any = None) -> Any:
    """The covariance matrix of the variables in the rows of ``m`` (columns if not ``rowvar``),
    ``y`` adding more variables; normalised by ``N - ddof`` (``ddof`` defaults to 1, 0 with
    ``bias``), with optional integer frequency weights and observation weights. A single
    variable gives a scalar.

    Example::

        jnp.cov(jnp.array([[0., 1., 2.], [2., 1., 0.]]))   # [[1, -1], [-1, 1]]
    """
    from ._creation import asarray
    from ._linalg import matmul
    from ._ufuncs import conj, maximum
    from ._util import promote_dtypes_inexact
    check_arraylike("cov", m)
    x = _variables("cov", m, rowvar)
    if y is not None:
        check_arraylike("cov", y)
        y = _variables("cov", y, rowvar)
        x, y = _promote_pair(x, y)
        x = lax.concatenate([x, y], 0)
    want = requested_dtype(dtype)
    if want is not None:
        x = convert(x, want)
    (x,) = promote_dtypes_inexact(x)
    n = get_aval(x).shape[1]
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    if fweights is not None:
        check_arraylike("cov", fweights)
        w = _weights("cov", fweights, n, integer=True)
    if aweights is not None:
        check_arraylike("cov", aweights)
        aw = _weights("cov", aweights, n, integer=False)
        w = aw if w is None else w * aw
    if w is None:
        avg = mean(x, axis=1)
        fact = asarray(n - ddof, dtype=get_aval(x).dtype)
    else:
        (w,) = promote_dtypes_inexact(w)
        w = convert(w, np.dtype(dtypes.finfo(get_aval(x).dtype).dtype))
        w_sum = sum(w)
        avg = sum(x * w, axis=1) / w_sum
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * sum(w * convert(asarray(aweights), get_aval(w).dtype)) / w_sum
    fact = maximum(fact, 0)
    x = x - lax.reshape(avg, (get_aval(avg).shape[0], 1))
    xw = x if w is None else x * w
    c = matmul(xw, lax.transpose(conj(x), (1, 0))) / fact
    return c[0, 0] if get_aval(c).shape == (1, 1) else c


def _promote_pair(x: Any, y: Any) -> tuple:
    from ._util import promote_dtypes
    return tuple(promote_dtypes(x, y))


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """Pearson correlation coefficients of the variables in the rows of ``x`` (columns if not
    ``rowvar``): ``cov`` normalised by the standard deviations, clipped to [-1, 1].

    Example::

        jnp.corrcoef(jnp.array([[0., 1., 2.], [2., 1.5, 0.]]))   # [[1, -0.99], [-0.99, 1]]
    """
    from ._creation import diagonal
    from ._ufuncs import clip, real, imag, sqrt
    check_arraylike("corrcoef", x)
    c = cov(x, y, rowvar, dtype=dtype)
    aval = get_aval(c)
    if aval.ndim == 0:
        return c / c
    std = sqrt(real(diagonal(c)))
    k = aval.shape[0]
    c = c / lax.reshape(std, (k, 1)) / lax.reshape(std, (1, k))
    if aval.dtype.kind == "c":
        return lax.complex(clip(real(c), -1, 1), clip(imag(c), -1, 1))
    return clip(c, -1, 1)
