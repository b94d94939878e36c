"""Array creation: array, asarray, zeros, ones, full, empty, arange, linspace, eye, *_like."""
from __future__ import annotations

__all__ = [
    "arange", "array", "asarray", "copy", "diag", "diagflat", "diagonal", "empty", "empty_like",
    "eye", "fromfunction", "full", "full_like", "geomspace", "identity", "indices", "linspace",
    "logspace", "meshgrid", "mgrid", "ogrid", "ones", "ones_like", "tri", "tril", "triu", "zeros",
    "zeros_like",
    "astype", "diag_indices", "diag_indices_from", "frombuffer", "fromiter", "fromstring", "ix_",
    "load", "mask_indices", "tril_indices", "tril_indices_from", "triu_indices",
    "triu_indices_from", "r_", "c_",
]

import math
import operator
from typing import Any, Optional, Sequence

import numpy as np

from pyree import dtypes, lax
from pyree.runtime.array import Array, device_put_numpy
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import Tracer, TypedScalar, canonicalize_array, get_aval

from ._util import PY_SCALARS, convert, default_float_dtype, requested_dtype, typed_scalar


def _shape_arg(shape: Any) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a sequence of ints, got {shape!r}"
                        f"{_where(None)}") from None


def _contains_traced(obj: Any) -> bool:
    if isinstance(obj, (Tracer, Array, TypedScalar)):
        return True
    if isinstance(obj, (list, tuple)):
        return builtin_any(_contains_traced(o) for o in obj)
    return False


builtin_any = any


def array(object: Any, dtype: Any = None, copy: bool = True, order: Optional[str] = None,
          ndmin: int = 0) -> Any:
    """An array from data: nested lists/tuples of scalars or arrays, NumPy arrays, scalars.

    Example::

        jnp.array([[1, 2], [3, 4]], dtype=jnp.float32)
    """
    want = requested_dtype(dtype)
    if isinstance(object, (Array, Tracer)):
        out = object if want is None else convert(object, want)
    elif isinstance(object, TypedScalar):
        out = _scalar_array(object.value, object.aval.dtype, object.aval.weak_type)
    elif isinstance(object, (list, tuple)) and _contains_traced(object):
        from ._shape import stack
        parts = [array(o) for o in object]
        if not parts:
            raise ValueError("cannot make an array from an empty sequence of arrays")
        out = stack(parts)
        # An array built from a list is strongly typed, whatever its elements (as in JAX).
        out = convert(out, want or get_aval(out).dtype)
    elif isinstance(object, PY_SCALARS) and not isinstance(object, np.generic):
        # A Python scalar keeps its weak type unless a dtype is asked for (as in JAX). With a
        # dtype, the value must fit that dtype (2**31 fits uint32), not the default int's.
        if want is not None and isinstance(object, int) and not isinstance(object, bool) \
                and want.kind in "iu":
            info = np.iinfo(want)
            if not info.min <= object <= info.max:
                raise OverflowError(f"Python int {object} is too large to convert to "
                                    f"{want}{_where(None)}")
            out = _scalar_array(object, want, False)
        else:
            aval = get_aval(object)
            out = _scalar_array(object, want or aval.dtype, want is None and aval.weak_type)
    else:
        if want is None and isinstance(object, (list, tuple)):
            # NumPy values in a list keep their dtypes under JAX's promotion: [int8(1), 2] is
            # int8, where NumPy would make int64.
            leaves = _leaves(object)
            if builtin_any(isinstance(v, (np.generic, np.ndarray)) for v in leaves):
                try:
                    want = dtypes.result_type(*leaves)
                except TypeError:
                    want = None
        try:
            host = np.asarray(object)
        except (ValueError, TypeError) as e:
            raise TypeError(f"cannot make an array from {type(object).__name__}: {e}"
                            f"{_where(None)}") from None
        if host.dtype == object_dtype:
            raise TypeError(f"cannot make an array from {object!r}: its elements are not "
                            f"numbers{_where(None)}")
        if isinstance(object, (list, tuple)) and host.dtype.kind in "iu":
            _check_python_ints_fit(host, want)
        if want is not None:
            host = host.astype(want)
        out = device_put_numpy(canonicalize_array(host))
    if ndmin and get_aval(out).ndim < ndmin:
        aval = get_aval(out)
        out = lax.reshape(out, (1,) * (ndmin - aval.ndim) + aval.shape)
    return out


object_dtype = np.dtype(object)


def _check_python_ints_fit(host: np.ndarray, want: Optional[np.dtype]) -> None:
    """Python integers in a list must fit the array's dtype (the default int, int32 without
    x64), as in JAX: jnp.asarray([1, 2**40]) raises instead of wrapping to [1, 0]."""
    target = np.dtype(want) if want is not None else dtypes.canonicalize_dtype(host.dtype)
    if target.kind not in "iu" or host.size == 0:
        return
    info = np.iinfo(target)
    low, high = host.min(), host.max()
    if low < info.min or high > info.max:
        bad = high if high > info.max else low
        raise OverflowError(f"Python int {int(bad)} is too large to convert to {target}"
                            f"{_where(None)}")


def _leaves(obj: Any) -> list:
    if isinstance(obj, (list, tuple)):
        return [leaf for o in obj for leaf in _leaves(o)]
    return [obj]


def _scalar_array(value: Any, dtype: np.dtype, weak: bool) -> Any:
    return lax.broadcast_in_dim(typed_scalar(value, dtype, weak), (), ())


def asarray(a: Any, dtype: Any = None, order: Optional[str] = None, copy: Any = None) -> Any:
    """``a`` as an array, without copying when it already is one of the right dtype.

    Example::

        jnp.asarray(np.arange(3))
    """
    if isinstance(a, (Array, Tracer)):
        want = requested_dtype(dtype)
        return a if want is None else convert(a, want)  # a dtype given makes it strong
    return array(a, dtype=dtype)


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value``.

    Example::

        jnp.full((2, 3), 7)
    """
    shape = _shape_arg(shape)
    want = requested_dtype(dtype)
    if isinstance(fill_value, np.generic):  # NumPy scalars are strongly typed, unlike float
        fill_value = typed_scalar(fill_value, dtypes.canonicalize_dtype(fill_value.dtype))
    fill_aval = get_aval(fill_value) if not isinstance(fill_value, (list, tuple)) else None
    if fill_aval is None:
        fill_value = array(fill_value)
        fill_aval = get_aval(fill_value)
    if fill_aval.shape != ():
        from ._util import broadcast_to_shape
        value = fill_value if want is None else convert(fill_value, want)
        return broadcast_to_shape(value, shape)
    if isinstance(fill_value, PY_SCALARS + (np.generic, TypedScalar)):
        raw = fill_value.value if isinstance(fill_value, TypedScalar) else fill_value
        value = typed_scalar(raw, want or fill_aval.dtype, want is None and fill_aval.weak_type)
    else:
        value = fill_value if want is None else convert(fill_value, want)
    return lax.broadcast_in_dim(value, shape, ())


def zeros(shape: Any, dtype: Any = None) -> Any:
    """An array of zeros (float32 unless ``dtype`` says otherwise).

    Example::

        jnp.zeros((2, 3))
    """
    return full(shape, 0, requested_dtype(dtype) or default_float_dtype())


def ones(shape: Any, dtype: Any = None) -> Any:
    """An array of ones (float32 unless ``dtype`` says otherwise).

    Example::

        jnp.ones(3, dtype=jnp.int32)
    """
    return full(shape, 1, requested_dtype(dtype) or default_float_dtype())


def empty(shape: Any, dtype: Any = None) -> Any:
    """An array of zeros: pyree arrays are always initialised (as in JAX).

    Example::

        jnp.empty((2,))
    """
    return zeros(shape, dtype)


def _like(a: Any, fill_value: Any, dtype: Any, shape: Any) -> Any:
    aval = get_aval(a)
    shape = aval.shape if shape is None else _shape_arg(shape)
    want = requested_dtype(dtype) or aval.dtype
    out = full(shape, fill_value, want)
    # Without a dtype the result keeps the weak type of ``a`` (as in JAX).
    return convert(out, want, True) if dtype is None and aval.weak_type else out


def zeros_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    """Zeros with the shape and dtype of ``a``.

    Example::

        jnp.zeros_like(x)
    """
    return _like(a, 0, dtype, shape)


def ones_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    """Ones with the shape and dtype of ``a``.

    Example::

        jnp.ones_like(x)
    """
    return _like(a, 1, dtype, shape)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """``fill_value`` with the shape and dtype of ``a``.

    Example::

        jnp.full_like(x, 3.0)
    """
    return _like(a, fill_value, dtype, shape)


def empty_like(a: Any, dtype: Any = None, shape: Any = None) -> Any:
    """Zeros with the shape and dtype of ``a``.

    Example::

        jnp.empty_like(x)
    """
    return zeros_like(a, dtype, shape)


def _static_number(x: Any, name: str) -> Any:
    if isinstance(x, (Tracer,)):
        from pyree.errors import ConcretizationTypeError
        raise ConcretizationTypeError(
            f"arange's {name} must be a concrete value, got a traced array; it decides the "
            f"length of the result. Make it static (jit(..., static_argnums=...)){_where(None)}")
    if isinstance(x, Array):
        return x.item()
    return x


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None) -> Any:
    """Evenly spaced values in ``[start, stop)``; the bounds must be concrete.

    Example::

        jnp.arange(5)            # [0, 1, 2, 3, 4]
        jnp.arange(0.0, 1.0, 0.25)
    """
    start = _static_number(start, "start")
    stop = _static_number(stop, "stop")
    step = _static_number(step, "step")
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise ValueError("arange: step must not be zero")
    want = requested_dtype(dtype)
    if want is None:
        kinds = [np.asarray(v).dtype.kind for v in (start, stop, step)]
        want = default_float_dtype() if builtin_any(k in "fc" for k in kinds) \
            else dtypes.canonicalize_dtype(int)
    length = builtin_max(int(math.ceil((stop - start) / step)), 0)
    if want.kind in "iu":
        values = lax.broadcasted_iota(want, (length,), 0)
        if step != 1:
            values = lax.mul(values, typed_scalar(step, want))
        if start != 0:
            values = lax.add(values, typed_scalar(start, want))
        return values
    values = lax.broadcasted_iota(want, (length,), 0)
    return lax.add(lax.mul(values, typed_scalar(step, want)), typed_scalar(start, want))


builtin_max = max


def _space_dtype(*ends: Any) -> np.dtype:
    """What linspace/logspace/geomspace compute in: the default complex type when an end is
    complex (as in JAX), else the default float type."""
    for end in ends:
        kind = get_aval(end).dtype.kind if isinstance(end, (Array, Tracer, TypedScalar)) \
            else np.asarray(end).dtype.kind
        if kind == "c":
            return dtypes.canonicalize_dtype(complex)
    return default_float_dtype()


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, retstep: bool = False,
             dtype: Any = None, axis: int = 0) -> Any:
    """``num`` evenly spaced values from ``start`` to ``stop`` (inclusive by default).

    Example::

        jnp.linspace(0.0, 1.0, 5)   # [0., 0.25, 0.5, 0.75, 1.]
    """
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    want = requested_dtype(dtype)
    compute = _space_dtype(start, stop)
    from ._ufuncs import add, multiply, subtract, true_divide
    from ._shape import concatenate, expand_dims, moveaxis
    start_a = convert(start, compute)
    stop_a = convert(stop, compute)
    if compute.kind == "c":
        # Real and imaginary parts spaced separately: the same values, with exact ends, and
        # no complex division (IREE fails to compile one of two constant complex logarithms'
        # difference, as geomspace's, next to a function argument).
        from ._ufuncs import imag, real
        parts = [linspace(part(start_a), part(stop_a), num, endpoint, True, None, axis)
                 for part in (real, imag)]
        values, step = (lax.complex(r, i) for r, i in zip(*parts))
        if want is not None:
            values = convert(values, want)
        return (values, step) if retstep else values
    bshape = np.broadcast_shapes(get_aval(start_a).shape, get_aval(stop_a).shape)
    div = (num - 1) if endpoint else num
    step = true_divide(subtract(stop_a, start_a), typed_scalar(builtin_max(div, 1), compute))
    iota = lax.broadcasted_iota(compute, (num,) + tuple(bshape), 0)
    values = add(multiply(iota, expand_dims(step, 0) if bshape else step),
                 expand_dims(start_a, 0) if bshape else start_a)
    if endpoint and num > 1:
        # The last value is exactly `stop`, not start + (num-1) * step.
        from ._indexing import getitem
        from ._util import broadcast_to_shape
        # stop may be a scalar while start is not: broadcast it to the values' row shape.
        last = expand_dims(broadcast_to_shape(stop_a, tuple(bshape)), 0) if bshape else \
            lax.reshape(stop_a, (1,))
        values = concatenate([getitem(values, slice(0, num - 1)),
                              lax.convert_element_type(last, compute)], axis=0)
    if bshape and axis != 0:
        values = moveaxis(values, 0, axis)
    if want is not None:
        values = convert(values, want)
    if retstep:
        return values, step
    return values


def eye(N: int, M: Optional[int] = None, k: int = 0, dtype: Any = None) -> Any:
    """A 2-D array with ones on the ``k``-th diagonal.

    Example::

        jnp.eye(3)
    """
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    if N < 0 or M < 0:
        raise ValueError(f"negative dimensions are not allowed, got {N} and {M}{_where(None)}")
    want = requested_dtype(dtype) or default_float_dtype()
    int_t = dtypes.canonicalize_dtype(int)
    rows = lax.broadcasted_iota(int_t, (N, M), 0)
    cols = lax.broadcasted_iota(int_t, (N, M), 1)
    on_diagonal = lax.eq(lax.add(rows, typed_scalar(int(k), int_t)), cols)
    return convert(on_diagonal, want)


def identity(n: int, dtype: Any = None) -> Any:
    """The ``n`` by ``n`` identity matrix.

    Example::

        jnp.identity(2)
    """
    return eye(n, dtype=dtype)


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
             dtype: Any = None, axis: int = 0) -> Any:
    """``base ** linspace(start, stop, num)``: values spaced evenly on a log scale.

    Example::

        jnp.logspace(0.0, 2.0, 3)   # [1., 10., 100.]
    """
    from ._ufuncs import power
    exponents = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    result = get_aval(exponents).dtype
    # A complex base makes the powers complex; the result keeps the ends' type (as JAX).
    compute = _space_dtype(start, stop, base)
    values = convert(power(convert(base, compute), convert(exponents, compute)), result)
    want = requested_dtype(dtype)
    return values if want is None else convert(values, want)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True, dtype: Any = None,
              axis: int = 0) -> Any:
    """``num`` values from ``start`` to ``stop`` spaced evenly on a log scale (a geometric
    progression); both ends must be non-zero, of one sign.

    Example::

        jnp.geomspace(1.0, 1000.0, 4)   # [1., 10., 100., 1000.]
    """
    from ._ufuncs import absolute, exp, log, multiply, sign
    from ._shape import concatenate, expand_dims, moveaxis
    compute = _space_dtype(start, stop)
    for value in (start, stop):
        if not isinstance(value, (Array, Tracer)) and np.any(np.asarray(value) == 0):
            raise ValueError("Geometric sequence cannot include zero")
    start_a, stop_a = convert(start, compute), convert(stop, compute)
    if compute.kind == "c":
        # Complex ends: evenly spaced complex logarithms (the principal branch, as JAX).
        values = exp(linspace(log(start_a), log(stop_a), num, endpoint=endpoint))
        bshape = get_aval(values).shape[1:]
    else:
        # NumPy's rule: a sequence of negative numbers is the mirror of a positive one.
        direction = sign(start_a)
        values = exp(linspace(log(absolute(start_a)), log(absolute(stop_a)), num,
                              endpoint=endpoint))
        bshape = get_aval(values).shape[1:]
        values = multiply(values, expand_dims(direction, 0) if get_aval(direction).ndim else
                          direction)
    if num > 0:
        # The ends are exactly start and stop, not exp(log(.)).
        from ._indexing import getitem
        from ._util import broadcast_to_shape
        first = expand_dims(broadcast_to_shape(start_a, bshape), 0)
        parts = [first]
        if endpoint and num > 1:
            parts += [getitem(values, slice(1, num - 1)),
                      expand_dims(broadcast_to_shape(stop_a, bshape), 0)]
        elif num > 1:
            parts.append(getitem(values, slice(1, num)))
        values = concatenate(parts, 0) if len(parts) > 1 else first
    if bshape and axis != 0:
        values = moveaxis(values, 0, axis)
    want = requested_dtype(dtype)
    return values if want is None else convert(values, want)


def _diagonal_mask(rows: int, cols: int, k: int, upper: bool) -> Any:
    """``col - row >= k`` (upper) or ``col - row <= k`` (lower) for an ``rows x cols`` grid."""
    int_t = dtypes.canonicalize_dtype(int)
    r = lax.broadcasted_iota(int_t, (rows, cols), 0)
    c = lax.broadcasted_iota(int_t, (rows, cols), 1)
    shifted = lax.add(r, typed_scalar(int(k), int_t))
    return lax.ge(c, shifted) if upper else lax.le(c, shifted)


def tri(N: int, M: Optional[int] = None, k: int = 0, dtype: Any = None) -> Any:
    """An ``N x M`` array with ones at and below the ``k``-th diagonal (float32 by default).

    Example::

        jnp.tri(3, k=-1)   # ones strictly below the diagonal
    """
    N = operator.index(N)
    M = N if M is None else operator.index(M)
    if N < 0 or M < 0:
        raise ValueError(f"negative dimensions are not allowed, got {N} and {M}{_where(None)}")
    want = requested_dtype(dtype) or default_float_dtype()
    return convert(_diagonal_mask(N, M, operator.index(k), upper=False), want)


def _triangle(name: str, m: Any, k: int, upper: bool) -> Any:
    from ._util import check_arraylike
    check_arraylike(name, m)
    aval = get_aval(m)
    if aval.ndim < 2:
        raise ValueError(f"Argument to jax.numpy.{name} must be at least 2D, got shape "
                         f"{aval.shape}{_where(None)}")
    rows, cols = aval.shape[-2:]
    mask = lax.broadcast_in_dim(_diagonal_mask(rows, cols, operator.index(k), upper),
                                aval.shape, (aval.ndim - 2, aval.ndim - 1))
    zero = typed_scalar(False if aval.dtype == np.bool_ else 0, aval.dtype, aval.weak_type)
    return lax.select(mask, m, zero)


def tril(m: Any, k: int = 0) -> Any:
    """The lower triangle of (a stack of) matrices: entries above the ``k``-th diagonal zeroed.

    Example::

        jnp.tril(jnp.ones((3, 3)))
    """
    return _triangle("tril", m, k, upper=False)


def triu(m: Any, k: int = 0) -> Any:
    """The upper triangle of (a stack of) matrices: entries below the ``k``-th diagonal zeroed.

    Example::

        jnp.triu(jnp.ones((3, 3)), k=1)
    """
    return _triangle("triu", m, k, upper=True)


def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The ``offset``-th diagonal of the matrices spanned by ``axis1`` and ``axis2``; it becomes
    the last axis of the result.

    Example::

        jnp.diagonal(jnp.arange(9).reshape(3, 3), offset=1)   # [1, 5]
    """
    from ._shape import moveaxis
    from ._util import canonical_axis, check_arraylike
    check_arraylike("diagonal", a)
    aval = get_aval(a)
    if aval.ndim < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape "
                         f"{aval.shape}{_where(None)}")
    ax1, ax2 = canonical_axis(axis1, aval.ndim), canonical_axis(axis2, aval.ndim)
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    offset = operator.index(offset)
    a = moveaxis(a, (ax1, ax2), (-2, -1))
    shape = get_aval(a).shape
    lead, (rows, cols) = shape[:-2], shape[-2:]
    row0, col0 = (0, offset) if offset >= 0 else (-offset, 0)
    length = builtin_max(min(rows - row0, cols - col0), 0)
    nlead = len(lead)
    square = lax.slice(a, (0,) * nlead + (builtin_min(row0, rows), builtin_min(col0, cols)),
                       lead + (builtin_min(row0, rows) + length, builtin_min(col0, cols) + length))
    # In a square block flattened and padded to rows of length+1, the diagonal is column 0.
    flat = lax.reshape(square, lead + (length * length,))
    zero = typed_scalar(False if aval.dtype == np.bool_ else 0, aval.dtype, aval.weak_type)
    padded = lax.pad(flat, zero, [(0, 0, 0)] * nlead + [(0, length, 0)])
    rows_of = lax.reshape(padded, lead + (length, length + 1))
    column = lax.slice(rows_of, (0,) * (nlead + 2), lead + (length, 1))
    return lax.reshape(column, lead + (length,))


builtin_min = min


def diag(v: Any, k: int = 0) -> Any:
    """The ``k``-th diagonal of a matrix, or a square matrix with the vector ``v`` on its
    ``k``-th diagonal.

    Example::

        jnp.diag(jnp.array([1, 2]))   # [[1, 0], [0, 2]]
    """
    from ._util import check_arraylike
    check_arraylike("diag", v)
    aval = get_aval(v)
    k = operator.index(k)
    if aval.ndim == 2:
        return diagonal(v, k)
    if aval.ndim != 1:
        raise ValueError(f"diag input must be 1d or 2d, got shape {aval.shape}{_where(None)}")
    n = aval.shape[0] + abs(k)
    zero = typed_scalar(False if aval.dtype == np.bool_ else 0, aval.dtype, aval.weak_type)
    values = lax.pad(v, zero, [(0, abs(k), 0)])
    # Row i holds v[i] at column i + k (k >= 0); column j holds v[j] at row j - k (k < 0).
    spread = lax.broadcast_in_dim(values, (n, n), (0,) if k >= 0 else (1,))
    return lax.select(_on_diagonal(n, k), spread, zero)


def _on_diagonal(n: int, k: int) -> Any:
    int_t = dtypes.canonicalize_dtype(int)
    r = lax.broadcasted_iota(int_t, (n, n), 0)
    c = lax.broadcasted_iota(int_t, (n, n), 1)
    return lax.eq(c, lax.add(r, typed_scalar(k, int_t)))


def diagflat(v: Any, k: int = 0) -> Any:
    """A square matrix with the flattened ``v`` on its ``k``-th diagonal.

    Example::

        jnp.diagflat(jnp.array([[1, 2], [3, 4]]))   # 4 x 4, diagonal 1, 2, 3, 4
    """
    from ._shape import ravel
    from ._util import check_arraylike
    check_arraylike("diagflat", v)
    return diag(ravel(v), k)


def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> list:
    """Coordinate grids from 1-D coordinate vectors. ``indexing='xy'`` (Cartesian) swaps the
    first two output axes; ``'ij'`` (matrix) keeps them in order. ``sparse=True`` leaves the
    broadcasting to the user.

    Example::

        X, Y = jnp.meshgrid(jnp.arange(3), jnp.arange(2))   # both of shape (2, 3)
    """
    from ._util import check_arraylike
    check_arraylike("meshgrid", *xi)
    if indexing not in ("xy", "ij"):
        raise ValueError(f"Valid values for `indexing` are 'xy' and 'ij', got {indexing!r}")
    arrays = [asarray(x) for x in xi]
    for i, x in enumerate(arrays):
        if get_aval(x).ndim != 1:
            raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shape "
                             f"{get_aval(x).shape} at position {i}{_where(None)}")
    sizes = [get_aval(x).shape[0] for x in arrays]
    dims = list(range(len(arrays)))
    if indexing == "xy" and len(arrays) >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
        dims[0], dims[1] = 1, 0
    out = []
    for x, d in zip(arrays, dims):
        if sparse:
            shape = [1] * len(arrays)
            shape[d] = get_aval(x).shape[0]
            out.append(lax.reshape(x, tuple(shape)))
        else:
            out.append(lax.broadcast_in_dim(x, tuple(sizes), (d,)))
    return out


def indices(dimensions: Sequence[int], dtype: Any = None, sparse: bool = False) -> Any:
    """The index of every position of a grid of shape ``dimensions``: an array of shape
    ``(len(dimensions), *dimensions)`` (a tuple of broadcastable arrays when ``sparse``).

    Example::

        rows, cols = jnp.indices((2, 3))   # rows[i, j] == i, cols[i, j] == j
    """
    dims = _shape_arg(dimensions)
    want = requested_dtype(dtype) or dtypes.canonicalize_dtype(int)
    if sparse:
        out = []
        for i, d in enumerate(dims):
            shape = tuple(d if j == i else 1 for j in range(len(dims)))
            out.append(lax.broadcasted_iota(want, shape, i))
        return tuple(out)
    if not dims:
        return lax.broadcast_in_dim(typed_scalar(0, want), (0,), ())
    grids = [lax.broadcasted_iota(want, (1,) + dims, i + 1) for i in range(len(dims))]
    return grids[0] if len(grids) == 1 else lax.concatenate(grids, 0)


class _Grid:
    """``mgrid``/``ogrid``: index with slices to get coordinate grids; a complex step ``Nj``
    asks for N points including the stop (as ``linspace``)."""

    def __init__(self, sparse: bool, name: str) -> None:
        self.sparse = sparse
        self.name = name

    def __getitem__(self, key: Any) -> Any:
        single = isinstance(key, slice)
        keys = (key,) if single else tuple(key)
        axes = []
        for s in keys:
            if not isinstance(s, slice):
                raise IndexError(f"{self.name} takes slices, got {s!r}")
            axes.append(self._axis(s))
        if single:
            return axes[0]
        kinds = [get_aval(a).dtype for a in axes]
        common = default_float_dtype() if builtin_any(d.kind == "f" for d in kinds) else \
            dtypes.canonicalize_dtype(int)
        axes = [convert(a, common) for a in axes]
        grids = meshgrid(*axes, indexing="ij", sparse=self.sparse)
        if self.sparse:
            return grids
        from ._shape import stack
        return stack(grids, 0)

    @staticmethod
    def _axis(s: slice) -> Any:
        start = 0 if s.start is None else s.start
        step = 1 if s.step is None else s.step
        if isinstance(step, complex):
            count = int(abs(step))
            return linspace(start, s.stop, count, endpoint=True)
        return arange(start, s.stop, step)

    def __repr__(self) -> str:
        return f"pyree.numpy.{self.name}"


mgrid = _Grid(False, "mgrid")
ogrid = _Grid(True, "ogrid")
mgrid.__doc__ = """Dense coordinate grids by slicing. Example: ``jnp.mgrid[0:2, 0:3].shape`` ->
(2, 2, 3)"""
ogrid.__doc__ = """Open (broadcastable) coordinate grids by slicing. Example: ``jnp.ogrid[0:2,
0:3]`` -> arrays of shapes (2, 1) and (1, 3)"""


def fromfunction(function: Any, shape: Any, *, dtype: Any = float, **kwargs: Any) -> Any:
    """``function`` evaluated at every index of a grid of ``shape``: it is vmapped over each
    axis and receives scalar coordinates of ``dtype``.

    Example::

        jnp.fromfunction(lambda i, j: i + j, (2, 3), dtype=jnp.int32)
    """
    import functools
    from pyree import vmap
    dims = _shape_arg(shape)
    want = requested_dtype(dtype)
    fn = functools.partial(function, **kwargs) if kwargs else function
    # Map the innermost axis first, so that the outermost vmap runs over axis 0.
    for i in reversed(range(len(dims))):
        fn = vmap(fn, in_axes=tuple(0 if j == i else None for j in range(len(dims))))
    # The coordinates must be traced along every axis, so each function sees them mapped.
    coords = [arange(d, dtype=want) for d in dims]
    return fn(*coords)


def copy(a: Any, order: Optional[str] = None) -> Any:
    """A copy of ``a`` (pyree arrays are immutable, so the copy may share its buffer).

    Example::

        jnp.copy(x)
    """
    return array(a, copy=True, order=order)


def astype(x: Any, dtype: Any, /, *, copy: bool = False, device: Any = None) -> Any:
    """``x`` converted to ``dtype`` (``None``: the default float type), as ``x.astype(dtype)``.

    Example::

        jnp.astype(jnp.array([1.5, -2.5]), jnp.int32)   # [1, -2]
    """
    from ._util import check_arraylike
    check_arraylike("astype", x)
    want = requested_dtype(float if dtype is None else dtype)
    return convert(asarray(x), want)


# -- index arrays of static shapes --------------------------------------------------------------

def _static_int(value: Any, name: str, what: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"jnp.{name}: {what} must be a static integer, got {value!r}"
                        f"{_where(None)}") from None


def _host_indices(name: str, positions: tuple) -> tuple:
    """Index arrays computed from static sizes (no traced input), as int32 pyree arrays."""
    return tuple(asarray(np.asarray(p, dtype=np.int32)) for p in positions)


def _triangle_indices(name: str, n: Any, k: Any, m: Any, upper: bool) -> tuple:
    n = _static_int(n, name, "n")
    k = _static_int(k, name, "k")
    m = n if m is None else _static_int(m, name, "m")
    rows, cols = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    keep = (cols - rows >= k) if upper else (cols - rows <= k)
    return _host_indices(name, (rows[keep], cols[keep]))


def tril_indices(n: int, k: int = 0, m: Optional[int] = None) -> tuple:
    """The (row, column) int32 indices of the lower triangle (on and below diagonal ``k``) of
    an ``(n, m)`` array, in row-major order.

    Example::

        jnp.tril_indices(3)   # ([0, 1, 1, 2, 2, 2], [0, 0, 1, 0, 1, 2])
    """
    return _triangle_indices("tril_indices", n, k, m, upper=False)


def triu_indices(n: int, k: int = 0, m: Optional[int] = None) -> tuple:
    """The (row, column) int32 indices of the upper triangle (on and above diagonal ``k``) of
    an ``(n, m)`` array, in row-major order.

    Example::

        jnp.triu_indices(3, k=1)   # ([0, 0, 1], [1, 2, 2])
    """
    return _triangle_indices("triu_indices", n, k, m, upper=True)


def _shape_of_2d(name: str, arr: Any) -> tuple:
    shape = tuple(arr.shape) if hasattr(arr, "shape") else np.shape(arr)
    if len(shape) != 2:
        raise ValueError(f"jnp.{name} requires a 2-dimensional array, got shape {shape}"
                         f"{_where(None)}")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple:
    """``tril_indices`` for the shape of the 2-D array ``arr``.

    Example::

        jnp.tril_indices_from(jnp.ones((2, 3)))   # ([0, 1, 1], [0, 0, 1])
    """
    n, m = _shape_of_2d("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple:
    """``triu_indices`` for the shape of the 2-D array ``arr``.

    Example::

        jnp.triu_indices_from(jnp.ones((2, 3)))   # ([0, 0, 0, 1, 1], [0, 1, 2, 1, 2])
    """
    n, m = _shape_of_2d("triu_indices_from", arr)
    return triu_indices(n, k, m)


def diag_indices(n: int, ndim: int = 2) -> tuple:
    """``ndim`` copies of ``arange(n)`` (int32): the indices of the main diagonal of an
    ``(n,) * ndim`` array.

    Example::

        x.at[jnp.diag_indices(3)].set(0.0)   # zero the diagonal of a 3x3 x
    """
    n = _static_int(n, "diag_indices", "n")
    ndim = _static_int(ndim, "diag_indices", "ndim")
    if n < 0 or ndim < 0:
        raise ValueError(f"jnp.diag_indices: n and ndim must be non-negative, got n={n}, "
                         f"ndim={ndim}{_where(None)}")
    return _host_indices("diag_indices", (np.arange(n),) * ndim)


def diag_indices_from(arr: Any) -> tuple:
    """``diag_indices`` for the array ``arr``, whose dimensions (at least 2) must be equal.

    Example::

        jnp.diag_indices_from(jnp.ones((2, 2)))   # ([0, 1], [0, 1])
    """
    shape = tuple(arr.shape) if hasattr(arr, "shape") else np.shape(arr)
    if len(shape) < 2:
        raise ValueError(f"jnp.diag_indices_from: input array must be at least 2-d, got "
                         f"shape {shape}{_where(None)}")
    if len(set(shape)) != 1:
        raise ValueError(f"jnp.diag_indices_from: all dimensions of input must be of equal "
                         f"length, got shape {shape}{_where(None)}")
    return diag_indices(shape[0], len(shape))


def mask_indices(n: int, mask_func: Any, k: int = 0, *, size: Optional[int] = None) -> tuple:
    """The (row, column) indices where ``mask_func(ones((n, n)), k)`` is nonzero (``size=``
    as in ``nonzero``, for a ``mask_func`` whose result is traced).

    Example::

        jnp.mask_indices(3, jnp.triu, 1)   # ([0, 0, 1], [1, 2, 2])
    """
    from ._sorting import nonzero
    n = _static_int(n, "mask_indices", "n")
    mask = mask_func(ones((n, n), dtype=np.int32), k)
    if get_aval(mask).shape != (n, n):
        raise ValueError(f"jnp.mask_indices: mask_func must return an ({n}, {n}) array, got "
                         f"shape {get_aval(mask).shape}{_where(None)}")
    return nonzero(mask, size=size)


def ix_(*args: Any) -> tuple:
    """Open-mesh index arrays: the i-th of the 1-D sequences gets shape ``(1, .., n_i, .., 1)``,
    so that ``x[jnp.ix_(rows, cols)]`` is the cross product selection. Boolean masks become
    their nonzero positions (outside ``jit`` only).

    Example::

        x[jnp.ix_(jnp.array([0, 2]), jnp.array([1, 3]))]   # a 2x2 sub-block of x
    """
    from ._sorting import nonzero
    from ._util import check_arraylike
    check_arraylike("ix_", *args)
    out = []
    for i, a in enumerate(args):
        a = asarray(a)
        aval = get_aval(a)
        if aval.ndim != 1:
            raise ValueError(f"jnp.ix_: arguments must be 1-dimensional, got argument {i} "
                             f"with shape {aval.shape}{_where(None)}")
        if aval.dtype == np.bool_:
            a = nonzero(a)[0]
        length = get_aval(a).shape[0]
        shape = (1,) * i + (length,) + (1,) * (len(args) - i - 1)
        out.append(lax.reshape(a, shape))
    return tuple(out)


# -- arrays from host data ------------------------------------------------------------------------

def frombuffer(buffer: Any, dtype: Any = float, count: int = -1, offset: int = 0) -> Any:
    """An array of the data in a bytes-like ``buffer``, interpreted as ``dtype``.

    Example::

        jnp.frombuffer(b"\\x01\\x02", dtype=jnp.uint8)   # [1, 2]
    """
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """An array of the numbers in the text ``string``, separated by ``sep``.

    Example::

        jnp.fromstring("1 2 3", dtype=jnp.int32, sep=" ")   # [1, 2, 3]
    """
    return asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(*args: Any, **kwargs: Any) -> Any:
    """Not implemented, as in JAX: consuming an iterator is a side effect that ``jit`` would
    run once. Use ``jnp.asarray(np.fromiter(...))``.

    Example::

        jnp.asarray(np.fromiter(range(3), dtype=np.int32))
    """
    raise NotImplementedError(
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe under "
        "jit and other pyree transformations. Use jnp.asarray(np.fromiter(...)) instead."
        f"{_where(None)}")


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """``numpy.load``, with arrays made pyree arrays (archives, ``.npz``, stay NumPy's).

    Example::

        jnp.load("weights.npy")
    """
    out = np.load(file, *args, **kwargs)
    if isinstance(out, np.ndarray) and out.dtype != object:
        return asarray(out)
    return out


class _Concatenator:
    """``r_``/``c_``: index with slices, scalars and arrays to concatenate them (NumPy's index
    tricks). A slice is an ``arange`` (a complex step ``Nj``: N points of ``linspace``,
    stop included); scalars and arrays are given at least ``ndmin`` dimensions (arrays of
    lower rank are placed in the new shape as ``trans1d`` says) and joined along ``axis``. A
    leading string sets ``"axis[,ndmin[,trans1d]]"``, or ``"r"``/``"c"`` for a row/column
    2-D result."""

    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int) -> None:
        self.name, self.axis, self.ndmin, self.trans1d = name, axis, ndmin, trans1d

    def __getitem__(self, key: Any) -> Any:
        from ._shape import concatenate, reshape, transpose
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, None
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                matrix = directive
            else:
                try:
                    numbers = [int(x) for x in directive.split(",")]
                except ValueError:
                    raise ValueError(f"{self.name}: unknown special directive {directive!r}"
                                     f"{_where(None)}") from None
                if not 1 <= len(numbers) <= 3:
                    raise ValueError(f"{self.name}: unknown special directive {directive!r}"
                                     f"{_where(None)}")
                axis = numbers[0]
                ndmin = numbers[1] if len(numbers) > 1 else ndmin
                trans1d = numbers[2] if len(numbers) > 2 else trans1d
        parts = []
        for item in items:
            if isinstance(item, str):
                raise ValueError(f"{self.name}: a string directive must come first"
                                 f"{_where(None)}")
            if isinstance(item, slice):
                part = _Grid._axis(item)
                if ndmin > 1:
                    part = reshape(part, (1,) * (ndmin - 1) + get_aval(part).shape)
                    if trans1d != -1:
                        perm = list(range(ndmin))
                        perm[-1], perm[trans1d] = perm[trans1d], perm[-1]
                        part = transpose(part, perm)
                parts.append(part)
                continue
            part = asarray(item)
            rank = get_aval(part).ndim
            if rank < ndmin:
                part = reshape(part, (1,) * (ndmin - rank) + get_aval(part).shape)
                if trans1d != -1:
                    # NumPy's placement of the old axes: they move to start at trans1d.
                    extra = ndmin - rank
                    start = trans1d + extra + 1 if trans1d < 0 else trans1d
                    order = list(range(ndmin))
                    perm = order[:start] + order[extra:] + order[start:extra]
                    part = transpose(part, perm)
            parts.append(part)
        if not parts:
            return asarray(np.zeros((0,), dtypes.canonicalize_dtype(float)))
        out = concatenate(parts, axis=axis)
        if matrix is not None and get_aval(out).ndim == 1:
            out = reshape(out, (1, -1) if matrix == "r" else (-1, 1))
        return out

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"pyree.numpy.{self.name}"


r_ = _Concatenator("r_", axis=0, ndmin=1, trans1d=-1)
r_.__doc__ = """Concatenate along the first axis by indexing. Example: ``jnp.r_[1:4, 0,
jnp.array([7, 8])]`` -> ``[1, 2, 3, 0, 7, 8]``; ``jnp.r_[0:1:5j]`` -> 5 points of linspace"""
c_ = _Concatenator("c_", axis=-1, ndmin=2, trans1d=0)
c_.__doc__ = """Stack 1-D arrays as columns (concatenate along the last axis, at least 2-D) by
indexing. Example: ``jnp.c_[jnp.array([1, 2]), jnp.array([3, 4])]`` -> ``[[1, 3], [2, 4]]``"""
