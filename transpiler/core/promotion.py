"""Operands brought to one dtype as JAX does it, and values converted to a dtype: what
``pyree.lax``, ``pyree.numpy`` and converted Python code (frontend/operators.py) share.

Python scalars are weakly typed: combined with an array they take its dtype (``x + 1`` of a
float16 ``x`` stays float16). Concrete scalars convert without an operation (a
``TypedScalar``, a literal once traced).

Example::

    a, b = promote_dtypes(x, 1.5)        # x float16: both float16, the 1.5 weakly typed
    bind_binary(add_p, i, 1)             # lax.add(i, 1): the 1 takes i's dtype
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyree import dtypes
from pyree.runtime.array import Array

from . import primitives as P
from .trace import Primitive, Tracer, TypedScalar, get_aval

PY_SCALARS = (bool, int, float, complex)


def convert(x: Any, dtype: np.dtype, weak_type: bool = False) -> Any:
    """``x`` as ``dtype`` with the given weak type; concrete scalars convert without an op.

    Example: ``convert(3, np.dtype(np.float32))`` is a float32 ``TypedScalar``"""
    if isinstance(x, PY_SCALARS + (np.generic, TypedScalar)):
        value = x.value if isinstance(x, TypedScalar) else x
        return TypedScalar(value, np.dtype(dtype), weak_type)
    if isinstance(x, np.ndarray):
        x = np.asarray(x)
        if x.ndim == 0:
            return TypedScalar(x[()], np.dtype(dtype), weak_type)
    aval = get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak_type:
        return x
    return P.convert_element_type_p.bind(x, new_dtype=dtypes.canonicalize_dtype(dtype),
                                         weak_type=bool(weak_type))


def promotion_operand(x: Any) -> Any:
    """What ``dtypes.result_type`` reads of ``x``: its aval, its canonical dtype, or the Python
    scalar itself (weak)."""
    if isinstance(x, (Tracer, Array, TypedScalar)):
        return x.aval
    if isinstance(x, (np.ndarray, np.generic)):
        return np.dtype(dtypes.canonicalize_dtype(x.dtype))
    return x


def promote_dtypes(*args: Any) -> list:
    """Convert arguments to their common dtype under JAX's promotion rules (weak types too).

    Example: ``promote_dtypes(int32_array, 2.5)`` gives two float32 values"""
    if len(args) < 2:
        return list(args)
    dtype, weak = dtypes.result_type(*[promotion_operand(a) for a in args],
                                     return_weak_type_flag=True)
    return [convert(a, dtype, weak) for a in args]


def scalar_as(x: Any, like: Any) -> TypedScalar:
    """The Python scalar ``x`` with the dtype of ``like``, weakly typed (as ``jax.lax`` takes a
    scalar operand). Example: ``scalar_as(0.0, x)`` for a pad value"""
    return TypedScalar(x, get_aval(like).dtype, True)


def bind_binary(prim: Primitive, x: Any, y: Any) -> Any:
    """``prim`` of ``x`` and ``y`` as ``jax.lax`` takes them: a Python scalar operand takes the
    dtype of the array it is combined with (weakly); otherwise the dtypes must agree.

    Example: ``bind_binary(P.lt_p, i, 10)``"""
    if isinstance(x, PY_SCALARS) and not isinstance(y, PY_SCALARS):
        x = scalar_as(x, y)
    elif isinstance(y, PY_SCALARS) and not isinstance(x, PY_SCALARS):
        y = scalar_as(y, x)
    return prim.bind(x, y)
