"""Reductions of ``pyree.numpy``: sum, mean, var, std, max, min, prod, argmax, argmin, all, any."""
from __future__ import annotations

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "max", "mean", "min", "prod", "std", "sum",
    "var",
]

import builtins
import math
from typing import Any, Optional

import numpy as np

from pyree import dtypes, lax
from pyree.transpiler import primitives as P
from pyree.transpiler.trace import get_aval

from ._util import (broadcast_to_shape, canonical_axes, canonical_axis, check_arraylike,
                    convert, default_float_dtype, requested_dtype, typed_scalar)


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


def _reduce(name: str, prim, a: Any, axis: Any, dtype: Any, keepdims: bool, initial: Any,
            where: Any, identity: Any, upcast: bool) -> Any:
    check_arraylike(name, a)
    aval = get_aval(a)
    axes = canonical_axes(axis, aval.ndim)
    out_dtype = requested_dtype(dtype)
    if out_dtype is None:
        out_dtype = _upcast_integer(aval.dtype) if upcast else aval.dtype
    # The result is strongly typed even for a weakly typed operand (as in JAX).
    a = convert(a, out_dtype)
    if out_dtype == np.bool_ and prim in (P.reduce_sum_p, P.reduce_prod_p):
        # sum/prod with dtype=bool are any/all (JAX's bool_op).
        prim = P.reduce_or_p if prim is P.reduce_sum_p else P.reduce_and_p
    if where is not None:
        # Masked-out elements take the identity; max/min have none and take `initial`
        # (added to the result once more below, which is harmless for them).
        fill = identity if identity is not None else initial
        if fill is None:
            raise ValueError(f"reduction operation {name} with where= needs initial=")
        mask = broadcast_to_shape(convert(where, np.dtype(np.bool_)), aval.shape)
        a = P.select_p.bind(mask, a, typed_scalar(fill, out_dtype))
    if identity is None and initial is None and builtins.any(aval.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
    result = prim.bind(a, axes=axes)
    if initial is not None:
        combine = {P.reduce_sum_p: P.add_p, P.reduce_prod_p: P.mul_p, P.reduce_max_p: P.max_p,
                   P.reduce_min_p: P.min_p, P.reduce_or_p: P.or_p, P.reduce_and_p: P.and_p}[prim]
        result = combine.bind(result, typed_scalar(initial, out_dtype))
    if keepdims:
        result = _keepdims(result, aval.shape, axes)
    return result


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
    return _reduce("sum", P.reduce_sum_p, a, axis, dtype, keepdims, initial, where, 0, True)


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
    return _reduce("prod", P.reduce_prod_p, a, axis, dtype, keepdims, initial, where, 1, True)


def max(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, initial: Any = None,
        where: Any = None) -> Any:
    """Largest element over ``axis`` (NaN if any element is NaN).

    Example::

        jnp.max(jnp.array([[1, 5], [3, 2]]), axis=1)   # [5, 3]
    """
    _no_out(out)
    return _reduce("max", P.reduce_max_p, a, axis, None, keepdims, initial, where, None, False)


def min(a: Any, axis: Any = None, out: None = None, keepdims: bool = False, initial: Any = None,
        where: Any = None) -> Any:
    """Smallest element over ``axis`` (NaN if any element is NaN).

    Example::

        jnp.min(jnp.array([[1, 5], [3, 2]]), axis=0)   # [1, 2]
    """
    _no_out(out)
    return _reduce("min", P.reduce_min_p, a, axis, None, keepdims, initial, where, None, False)


amax, amin = max, min


def all(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
        where: Any = None) -> Any:
    """True if every element over ``axis`` is true.

    Example::

        jnp.all(jnp.array([True, False]))   # False
    """
    _no_out(out)
    check_arraylike("all", a)
    a = convert(a, np.dtype(np.bool_))
    return _reduce("all", P.reduce_and_p, a, axis, None, keepdims, None, where, True, False)


def any(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
        where: Any = None) -> Any:
    """True if some element over ``axis`` is true.

    Example::

        jnp.any(jnp.array([True, False]))   # True
    """
    _no_out(out)
    check_arraylike("any", a)
    a = convert(a, np.dtype(np.bool_))
    return _reduce("any", P.reduce_or_p, a, axis, None, keepdims, None, where, False, False)


def _count(shape: tuple, axes: tuple) -> int:
    return math.prod(shape[i] for i in axes)


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
    if compute is None:
        compute = aval.dtype if aval.dtype.kind in "fc" or aval.dtype == dtypes.bfloat16 \
            else default_float_dtype()
    a = convert(a, compute, aval.weak_type)
    total = sum(a, axis=axes, keepdims=keepdims, where=where)
    if where is None:
        count = typed_scalar(_count(aval.shape, axes), compute)
    else:
        mask = broadcast_to_shape(convert(where, np.dtype(np.bool_)), aval.shape)
        count = sum(convert(mask, compute), axis=axes, keepdims=keepdims)
    return P.div_p.bind(total, count)


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
    compute = requested_dtype(dtype)
    if compute is None:
        compute = aval.dtype if aval.dtype.kind in "fc" or aval.dtype == dtypes.bfloat16 \
            else default_float_dtype()
    a = convert(a, compute, aval.weak_type)
    from ._ufuncs import subtract
    centered = subtract(a, mean(a, axis=axes, keepdims=True, where=where))
    squared = P.integer_pow_p.bind(centered, y=2)
    total = sum(squared, axis=axes, keepdims=keepdims, where=where)
    if where is None:
        count = typed_scalar(_count(aval.shape, axes) - ddof, compute)
    else:
        mask = broadcast_to_shape(convert(where, np.dtype(np.bool_)), aval.shape)
        count = P.sub_p.bind(sum(convert(mask, compute), axis=axes, keepdims=keepdims),
                             typed_scalar(ddof, compute))
    return P.div_p.bind(total, count)


def std(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
        keepdims: bool = False, where: Any = None, correction: Any = None) -> Any:
    """Standard deviation over ``axis`` (the square root of ``var``).

    Example::

        jnp.std(jnp.array([1., 2., 3., 4.]))   # 1.118034
    """
    return P.sqrt_p.bind(var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
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
