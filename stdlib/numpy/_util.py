"""Shared machinery of ``pyree.numpy``: argument checks, dtype promotion, broadcasting."""
from __future__ import annotations

import operator

from typing import Any, Optional, Sequence

import numpy as np

from pyree import dtypes, lax
from pyree.runtime.array import Array
from pyree.transpiler.core.promotion import convert, promote_dtypes  # noqa: F401 (shared)
from pyree.transpiler.core.promotion import promotion_operand as _promotion_operand
from pyree.transpiler.core.source import user_loc, where
from pyree.transpiler.core.trace import Tracer, TypedScalar, get_aval

PY_SCALARS = (bool, int, float, complex)
ARRAY_TYPES = (Array, Tracer, np.ndarray, np.generic, TypedScalar)


def typed_scalar(x: Any, dtype: Any, weak_type: bool = False) -> TypedScalar:
    """A concrete scalar of ``dtype`` (a literal when traced). Example: ``typed_scalar(2.0, f16)``"""
    return TypedScalar(x, np.dtype(dtype), weak_type)


def is_arraylike(x: Any) -> bool:
    return isinstance(x, ARRAY_TYPES + PY_SCALARS)


def check_arraylike(name: str, *args: Any) -> None:
    """Lists and tuples are not arrays (as in JAX): ``sum([1, 2])`` is a TypeError."""
    for i, a in enumerate(args):
        if not is_arraylike(a):
            raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                            f"{type(a).__name__} at position {i}. Use "
                            f"pyree.numpy.asarray(...) to make an array from a list."
                            f"{where(None)}")


def ndim(x: Any) -> int:
    return get_aval(x).ndim


def shape(x: Any) -> tuple:
    return get_aval(x).shape








def default_float_dtype() -> np.dtype:
    return dtypes.canonicalize_dtype(float)


def to_inexact_dtype(dtype: np.dtype, weak: bool = False) -> np.dtype:
    """The float type integers and booleans of ``dtype`` compute in: float32 up to 32 bits
    (even with x64 on, as in JAX), the default float for 64-bit and weak (Python) integers."""
    if dtype.kind not in "biu":
        return dtype
    return default_float_dtype() if weak or dtype.itemsize > 4 else np.dtype(np.float32)


def promote_dtypes_inexact(*args: Any) -> list:
    """Like ``promote_dtypes``, then integers and booleans become floats: float32 up to 32
    bits (even with x64 on, as in JAX), float64 for 64-bit and weak (Python) integers under x64.
    """
    dtype, weak = dtypes.result_type(*[_promotion_operand(a) for a in args],
                                     return_weak_type_flag=True)
    dtype = to_inexact_dtype(dtype, weak)
    return [convert(a, dtype, weak) for a in args]


def promote_dtypes_numeric(*args: Any) -> list:
    """Like ``promote_dtypes``, then booleans become the default int type."""
    dtype, weak = dtypes.result_type(*[_promotion_operand(a) for a in args],
                                     return_weak_type_flag=True)
    if dtype == np.bool_:
        dtype = dtypes.canonicalize_dtype(int)
    return [convert(a, dtype, weak) for a in args]


def broadcast_shapes(*shapes: Sequence[int], error: type = ValueError) -> tuple:
    """NumPy's broadcasting of shapes; the error (ValueError, as jnp.broadcast_shapes,
    broadcast_to and where raise) names all shapes and the user's line.
    Example: ``broadcast_shapes((3, 1), (4,))`` -> (3, 4)"""
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        text = ", ".join(str(tuple(s)) for s in shapes)
        raise error(f"shapes {text} cannot be broadcast together{where(None)}") from None


def broadcast_to_shape(x: Any, target: Sequence[int]) -> Any:
    """Broadcast ``x`` to ``target`` (NumPy rules: align trailing dimensions)."""
    target = tuple(target)
    aval = get_aval(x)
    if aval.shape == target:
        return x
    if len(aval.shape) > len(target):
        raise ValueError(f"cannot broadcast shape {aval.shape} to {target}{where(None)}")
    lead = len(target) - len(aval.shape)
    for i, d in enumerate(aval.shape):
        if d != 1 and d != target[lead + i]:
            raise ValueError(f"cannot broadcast shape {aval.shape} to {target}{where(None)}")
    return lax.broadcast_in_dim(x, target, tuple(range(lead, len(target))))


def broadcast_operands(*args: Any, error: Optional[type] = None, op: Optional[str] = None
                       ) -> list:
    """Broadcast to a common shape; rank-0 operands stay rank 0 (primitives broadcast them).
    Shapes that do not broadcast raise ``error``; by default the error JAX's ufuncs raise:
    ValueError when the ranks differ (``ones(100) * ones((100, 10))``), TypeError when they
    are equal (``ones((2, 3)) + ones((3, 2))``). ``op`` names a ufunc, whose implicit rank
    promotion the jax_numpy_rank_promotion option may forbid ("raise") or report ("warn")."""
    shapes = [get_aval(a).shape for a in args]
    nonscalar = [s for s in shapes if s != ()]
    if not nonscalar or all(s == nonscalar[0] for s in nonscalar):
        return list(args)
    if op is not None and len({len(s) for s in nonscalar}) > 1:
        _check_rank_promotion(op, shapes)
    if error is None:
        error = TypeError if len({len(s) for s in nonscalar}) == 1 else ValueError
    target = broadcast_shapes(*shapes, error=error)
    return [a if s == () else broadcast_to_shape(a, target) for a, s in zip(args, shapes)]


def _check_rank_promotion(op: str, shapes: list) -> None:
    from pyree import config
    mode = config.jax_numpy_rank_promotion
    if mode == "allow":
        return
    listed = " ".join(str(s) for s in shapes)
    if mode == "raise":
        raise ValueError(f"Operands could not be broadcast together for {op} on shapes {listed} "
                         f"and with the config option jax_numpy_rank_promotion='raise'"
                         f"{where(None)}")
    import warnings
    loc = user_loc()   # reported at the user's line, as pyree's errors are
    message = (f"Following NumPy automatic rank promotion for {op} on shapes {listed}. Set the "
               f"jax_numpy_rank_promotion config option to 'allow' to disable this warning")
    if loc is None:
        warnings.warn(message, UserWarning, stacklevel=4)
    else:
        warnings.warn_explicit(message, UserWarning, loc.filename, loc.line)


def canonical_axis(axis: int, ndim_: int, name: str = "axis") -> int:
    try:
        axis = operator.index(axis)  # 1.5 or "1" is an error, as in NumPy and JAX
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {axis!r} of type "
                        f"{type(axis).__name__}{where(None)}") from None
    if not -ndim_ <= axis < max(ndim_, 1) or (ndim_ == 0 and axis not in (0, -1)):
        raise np.exceptions.AxisError(f"{name} {axis} is out of bounds for array of dimension "
                                      f"{ndim_}")
    return axis % ndim_ if ndim_ else 0


def canonical_axes(axis: Any, ndim_: int) -> tuple:
    """``axis`` (None, an int or a tuple) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim_))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonical_axis(a, ndim_) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis in {axis}")
        return tuple(sorted(axes))
    return (canonical_axis(axis, ndim_),)


def requested_dtype(dtype: Any) -> Optional[np.dtype]:
    """A user's ``dtype=`` argument, canonicalised (float64 -> float32 without x64, with a
    warning as in JAX)."""
    if dtype is None:
        return None
    wanted = np.dtype(dtype) if not isinstance(dtype, type) or dtype not in PY_SCALARS else None
    canonical = dtypes.canonicalize_dtype(dtype)
    if wanted is not None and wanted != canonical and wanted.itemsize == 8:
        import warnings
        warnings.warn(f"Explicitly requested dtype {wanted.name} requested in a pyree function "
                      f"is not available, and will be truncated to dtype {canonical.name}. To "
                      f"enable more dtypes, set pyree.config.update('enable_x64', True) or the "
                      f"PYREE_ENABLE_X64=1 environment variable.", UserWarning, stacklevel=3)
    return canonical
