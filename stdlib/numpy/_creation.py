"""Array creation: array, asarray, zeros, ones, full, empty, arange, linspace, eye, *_like."""
from __future__ import annotations

__all__ = [
    "arange", "array", "asarray", "empty", "empty_like", "eye", "full", "full_like", "identity",
    "linspace", "ones", "ones_like", "zeros", "zeros_like",
]

import math
import operator
from typing import Any, Optional, Sequence

import numpy as np

from pyree import dtypes, lax
from pyree.runtime.array import Array, device_put_numpy
from pyree.transpiler import primitives as P
from pyree.transpiler.source import where as _where
from pyree.transpiler.trace import Tracer, TypedScalar, canonicalize_array, get_aval

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
        # A Python scalar keeps its weak type unless a dtype is asked for (as in JAX).
        aval = get_aval(object)
        out = _scalar_array(object, want or aval.dtype, want is None and aval.weak_type)
    else:
        try:
            host = np.asarray(object)
        except (ValueError, TypeError) as e:
            raise TypeError(f"cannot make an array from {type(object).__name__}: {e}"
                            f"{_where(None)}") from None
        if host.dtype == object_dtype:
            raise TypeError(f"cannot make an array from {object!r}: its elements are not "
                            f"numbers{_where(None)}")
        if want is not None:
            host = host.astype(want)
        out = device_put_numpy(canonicalize_array(host))
    if ndmin and get_aval(out).ndim < ndmin:
        aval = get_aval(out)
        out = lax.reshape(out, (1,) * (ndmin - aval.ndim) + aval.shape)
    return out


object_dtype = np.dtype(object)


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
            values = P.mul_p.bind(values, typed_scalar(step, want))
        if start != 0:
            values = P.add_p.bind(values, typed_scalar(start, want))
        return values
    values = lax.broadcasted_iota(want, (length,), 0)
    return P.add_p.bind(P.mul_p.bind(values, typed_scalar(step, want)), typed_scalar(start, want))


builtin_max = max


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
    compute = default_float_dtype()
    from ._ufuncs import add, multiply, subtract, true_divide
    from ._shape import concatenate, expand_dims, moveaxis
    start_a = convert(start, compute) if not isinstance(start, (Array, Tracer)) else \
        convert(start, compute)
    stop_a = convert(stop, compute)
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
    want = requested_dtype(dtype) or default_float_dtype()
    int_t = dtypes.canonicalize_dtype(int)
    rows = lax.broadcasted_iota(int_t, (N, M), 0)
    cols = lax.broadcasted_iota(int_t, (N, M), 1)
    on_diagonal = P.eq_p.bind(P.add_p.bind(rows, typed_scalar(int(k), int_t)), cols)
    return convert(on_diagonal, want)


def identity(n: int, dtype: Any = None) -> Any:
    """The ``n`` by ``n`` identity matrix.

    Example::

        jnp.identity(2)
    """
    return eye(n, dtype=dtype)
