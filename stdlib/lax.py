"""``pyree.lax``: the primitives as functions, with ``jax.lax``'s names and strictness.

Operands of elementwise functions must have equal dtypes; Python scalars take the dtype of the
array operand. Shapes must match exactly, except that rank-0 operands broadcast::

    from pyree import lax
    lax.add(x, 1.0)
    lax.dot_general(a, b, (((1,), (0,)), ((), ())))
"""
from __future__ import annotations

import builtins
import enum
from typing import Any, Optional, Sequence

import numpy as np

from pyree import dtypes
from pyree.transpiler.families import math_functions as M
from pyree.transpiler.core import primitives as P
from pyree.transpiler.core.promotion import bind_binary, scalar_as
from pyree.transpiler.families import special as S
from pyree.runtime.array import Array as _Array
from pyree.transpiler.core.trace import Tracer as _Tracer
from pyree.transpiler.core.trace import get_aval

_PY_SCALARS = (bool, int, float, complex)
builtins_slice = builtins.slice  # this module defines its own `slice`


class Precision(enum.Enum):
    """How precisely a contraction's float32 operands are multiplied (``jax.lax.Precision``):
    DEFAULT (the device's fastest), HIGH, HIGHEST (full float32). Strings such as 'highest',
    'float32', 'tensorfloat32', 'bfloat16' name them as in JAX.

    Example: ``jnp.dot(a, b, precision=lax.Precision.HIGHEST)``
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def from_any(cls, value: Any) -> "Precision":
        """``value`` (None, a member, or one of JAX's names) as a Precision."""
        if value is None:
            return cls.DEFAULT
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            named = {"default": cls.DEFAULT, "fastest": cls.DEFAULT, "bfloat16": cls.DEFAULT,
                     "high": cls.HIGH, "tensorfloat32": cls.HIGH, "bfloat16_3x": cls.HIGH,
                     "highest": cls.HIGHEST, "float32": cls.HIGHEST}.get(value.lower())
            if named is not None:
                return named
        raise ValueError(f"unknown precision {value!r}: use None, a lax.Precision or one of "
                         "'default', 'high', 'highest', 'bfloat16', 'tensorfloat32', 'float32'")

    @classmethod
    def _missing_(cls, value: Any) -> "Precision":
        # Precision('highest') constructs from JAX's names, as jax.lax.Precision does.
        return cls.from_any(value) if isinstance(value, str) else None

    def __str__(self) -> str:
        return self.name


def precision_name(precision: Any) -> str:
    """The name ("DEFAULT", "HIGH" or "HIGHEST") of the precision a contraction runs at: the
    one given (JAX takes one Precision or a (lhs, rhs) pair of them: the higher counts), else
    ``config.default_matmul_precision``. It is a parameter of the traced equation, so a jitted
    function keeps the default in force when it was traced."""
    from pyree import config
    given = precision if isinstance(precision, (tuple, list)) else (precision,)
    chosen = [Precision.from_any(p) for p in given if p is not None]
    if not chosen:
        chosen = [Precision.from_any(config.default_matmul_precision)]
    return sorted(chosen, key=lambda p: p.value)[-1].name  # (lax defines its own max)




def _binary(prim):
    def fn(x: Any, y: Any) -> Any:
        return bind_binary(prim, x, y)   # (a Python scalar takes the other's dtype, weakly)
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise ``{prim.name}`` (``jax.lax.{prim.name}``). Example: ``lax.{prim.name}(x, y)``"
    return fn


def _unary(prim):
    def fn(x: Any) -> Any:
        return prim.bind(x)
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise ``{prim.name}`` (``jax.lax.{prim.name}``). Example: ``lax.{prim.name}(x)``"
    return fn


add = _binary(P.add_p)
sub = _binary(P.sub_p)
mul = _binary(P.mul_p)
div = _binary(P.div_p)
rem = _binary(M.rem_p)
pow = _binary(M.pow_p)
max = _binary(P.max_p)
min = _binary(P.min_p)
atan2 = _binary(M.atan2_p)
bitwise_and = _binary(P.and_p)
bitwise_or = _binary(P.or_p)
bitwise_xor = _binary(P.xor_p)
shift_left = _binary(P.shift_left_p)
shift_right_arithmetic = _binary(P.shift_right_arithmetic_p)
shift_right_logical = _binary(P.shift_right_logical_p)
eq = _binary(P.eq_p)
ne = _binary(P.ne_p)
lt = _binary(P.lt_p)
le = _binary(P.le_p)
gt = _binary(P.gt_p)
ge = _binary(P.ge_p)

neg = _unary(P.neg_p)
exp = _unary(M.exp_p)
log = _unary(M.log_p)
log1p = _unary(M.log1p_p)
expm1 = _unary(M.expm1_p)
sin = _unary(M.sin_p)
cos = _unary(M.cos_p)
tan = _unary(M.tan_p)
tanh = _unary(M.tanh_p)
logistic = _unary(M.logistic_p)
sqrt = _unary(M.sqrt_p)
rsqrt = _unary(M.rsqrt_p)
cbrt = _unary(M.cbrt_p)
abs = _unary(S.abs_p)
sign = _unary(M.sign_p)
floor = _unary(M.floor_p)
ceil = _unary(M.ceil_p)
erf = _unary(M.erf_p)
bitwise_not = _unary(P.not_p)
is_finite = _unary(M.is_finite_p)


class RoundingMethod:
    """How ``round`` breaks ties: ``AWAY_FROM_ZERO`` (0, the default) or ``TO_NEAREST_EVEN`` (1)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x: Any, rounding_method: int = RoundingMethod.AWAY_FROM_ZERO) -> Any:
    """Round to the nearest integer value. Example: ``lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)``"""
    return M.round_p.bind(x, rounding_method=int(rounding_method))


def integer_pow(x: Any, y: int) -> Any:
    """``x ** y`` for a static integer ``y``, by repeated multiplication. Example: ``lax.integer_pow(x, 3)``"""
    return M.integer_pow_p.bind(x, y=int(y))


def square(x: Any) -> Any:
    """``x * x``. Example: ``lax.square(x)``"""
    return integer_pow(x, 2)


def select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """Elementwise ``on_true if pred else on_false``. Example: ``lax.select(x > 0, x, -x)``"""
    return P.select_p.bind(pred, on_true, on_false)


def clamp(min: Any, x: Any, max: Any) -> Any:
    """``min(max(x, min), max)`` elementwise. Example: ``lax.clamp(0.0, x, 1.0)``"""
    return globals()["min"](globals()["max"](x, min), max)


def convert_element_type(x: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    """Cast to ``new_dtype``. Example: ``lax.convert_element_type(x, jnp.int32)``"""
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    return P.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=bool(weak_type))


def broadcast_in_dim(x: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> Any:
    """Broadcast ``x`` to ``shape``; operand dimension i becomes result dimension
    ``broadcast_dimensions[i]``. Example: ``lax.broadcast_in_dim(v, (3, 4), (1,))``"""
    shape = tuple(int(d) for d in shape)
    dims = tuple(int(d) for d in broadcast_dimensions)
    if isinstance(x, (_Array, _Tracer)) and x.shape == shape and dims == tuple(range(len(shape))):
        return x
    return P.broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def broadcast(x: Any, sizes: Sequence[int]) -> Any:
    """Add leading dimensions of ``sizes``. Example: ``lax.broadcast(x, (2,))``"""
    aval = get_aval(x)
    sizes = tuple(int(s) for s in sizes)
    return broadcast_in_dim(x, sizes + aval.shape,
                            tuple(range(len(sizes), len(sizes) + aval.ndim)))


def reshape(x: Any, new_sizes: Sequence[int], dimensions: Optional[Sequence[int]] = None) -> Any:
    """Reshape (row-major); ``dimensions`` transposes first. Example: ``lax.reshape(x, (2, 3))``"""
    if dimensions is not None:
        x = transpose(x, dimensions)
    new_sizes = tuple(int(d) for d in new_sizes)
    if isinstance(x, (_Array, _Tracer)) and x.shape == new_sizes:
        return x
    return P.reshape_p.bind(x, new_sizes=new_sizes)


def transpose(x: Any, permutation: Sequence[int]) -> Any:
    """Permute axes. Example: ``lax.transpose(x, (1, 0))``"""
    permutation = tuple(int(p) for p in permutation)
    if isinstance(x, (_Array, _Tracer)) and permutation == tuple(range(len(permutation))):
        return x
    return P.transpose_p.bind(x, permutation=permutation)


def rev(x: Any, dimensions: Sequence[int]) -> Any:
    """Reverse along ``dimensions``. Example: ``lax.rev(x, (0,))``"""
    return P.rev_p.bind(x, dimensions=tuple(int(d) for d in dimensions))


def slice(x: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Optional[Sequence[int]] = None) -> Any:
    """Static slice. Example: ``lax.slice(x, (1,), (3,))``"""
    start = tuple(int(i) for i in start_indices)
    limit = tuple(int(i) for i in limit_indices)
    strides = tuple(int(s) for s in strides) if strides is not None else (1,) * len(start)
    return P.slice_p.bind(x, start_indices=start, limit_indices=limit, strides=strides)


def dynamic_slice(x: Any, start_indices: Sequence[Any], slice_sizes: Sequence[int]) -> Any:
    """Slice at run-time start indices (clamped so the slice fits).
    Example: ``lax.dynamic_slice(x, (i,), (2,))``"""
    return P.dynamic_slice_p.bind(x, *_indices(start_indices),
                                  slice_sizes=tuple(int(s) for s in slice_sizes))


def dynamic_update_slice(x: Any, update: Any, start_indices: Sequence[Any]) -> Any:
    """``x`` with ``update`` written at run-time start indices (clamped).
    Example: ``lax.dynamic_update_slice(x, u, (i, 0))``"""
    return P.dynamic_update_slice_p.bind(x, update, *_indices(start_indices))


def _axis_of(x: Any, axis: int) -> tuple:
    shape = get_aval(x).shape
    if not -len(shape) <= int(axis) < builtins.max(len(shape), 1):  # lax.max is this module's
        raise ValueError(f"axis {axis} is out of range for an array of shape {shape}")
    return shape, int(axis) % len(shape)


def slice_in_dim(x: Any, start_index: Optional[int], limit_index: Optional[int],
                 stride: int = 1, axis: int = 0) -> Any:
    """Static slice along one ``axis`` (None bounds mean the ends; negative ones count from
    the end). Example: ``lax.slice_in_dim(x, 1, 3, axis=1)``"""
    shape, axis = _axis_of(x, axis)
    start, limit, _ = builtins_slice(start_index, limit_index).indices(shape[axis])
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, builtins.max(start, limit), int(stride)
    return slice(x, starts, limits, strides)


def index_in_dim(x: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """The ``index``-th entry along ``axis`` (static), kept as a size-1 axis unless
    ``keepdims`` is False. Example: ``lax.index_in_dim(x, 2, axis=0, keepdims=False)``"""
    shape, axis = _axis_of(x, axis)
    index = int(index)
    if not -shape[axis] <= index < shape[axis]:
        raise IndexError(f"index {index} is out of bounds for axis {axis} of size {shape[axis]}")
    index %= shape[axis]
    out = slice_in_dim(x, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_slice_in_dim(x: Any, start_index: Any, slice_size: int, axis: int = 0) -> Any:
    """``dynamic_slice`` along one ``axis``: ``slice_size`` entries from a run-time start
    (clamped so they fit). Example: ``lax.dynamic_slice_in_dim(x, i, 2, axis=0)``"""
    shape, axis = _axis_of(x, axis)
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = int(slice_size)
    return dynamic_slice(x, starts, sizes)


def dynamic_index_in_dim(x: Any, index: Any, axis: int = 0, keepdims: bool = True) -> Any:
    """The entry at a run-time ``index`` along ``axis`` (clamped).
    Example: ``lax.dynamic_index_in_dim(x, i, keepdims=False)``"""
    _, axis = _axis_of(x, axis)
    out = dynamic_slice_in_dim(x, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice_in_dim(x: Any, update: Any, start_index: Any, axis: int) -> Any:
    """``x`` with ``update`` written from a run-time ``start_index`` along ``axis``.
    Example: ``lax.dynamic_update_slice_in_dim(x, u, i, axis=0)``"""
    shape, axis = _axis_of(x, axis)
    starts = [0] * len(shape)
    starts[axis] = start_index
    return dynamic_update_slice(x, update, starts)


def dynamic_update_index_in_dim(x: Any, update: Any, index: Any, axis: int) -> Any:
    """``x`` with the entry at a run-time ``index`` along ``axis`` replaced by ``update``
    (which may lack that axis). Example: ``lax.dynamic_update_index_in_dim(x, row, i, 0)``"""
    shape, axis = _axis_of(x, axis)
    if get_aval(update).ndim == len(shape) - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(x, update, index, axis)


def _indices(indices: Sequence[Any]) -> list:
    from pyree.numpy._util import typed_scalar
    out = []
    for i in indices:
        if isinstance(i, (int, np.integer)):
            i = typed_scalar(int(i), dtypes.canonicalize_dtype(int), weak_type=False)
        out.append(i)
    return out


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """Join arrays along ``dimension``. Example: ``lax.concatenate([x, y], 0)``"""
    return P.concatenate_p.bind(*operands, dimension=int(dimension))


def pad(x: Any, padding_value: Any, padding_config: Sequence[tuple[int, int, int]]) -> Any:
    """Pad with (low, high, interior) per dimension; negative low/high crop.
    Example: ``lax.pad(x, 0.0, [(1, 1, 0)])``"""
    config = tuple((int(lo), int(hi), int(i)) for lo, hi, i in padding_config)
    if isinstance(padding_value, _PY_SCALARS):
        padding_value = scalar_as(padding_value, x)
    return P.pad_p.bind(x, padding_value, padding_config=config)


def iota(dtype: Any, size: int) -> Any:
    """``[0, 1, ..., size-1]``. Example: ``lax.iota(jnp.int32, 5)``"""
    return broadcasted_iota(dtype, (int(size),), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int) -> Any:
    """Indices along ``dimension`` of an array of ``shape``.
    Example: ``lax.broadcasted_iota(jnp.int32, (2, 3), 1)``"""
    return P.iota_p.bind(dtype=dtypes.canonicalize_dtype(dtype),
                         shape=tuple(int(d) for d in shape), dimension=int(dimension))


def _reduction(prim):
    def fn(x: Any, axes: Sequence[int]) -> Any:
        return prim.bind(x, axes=tuple(int(a) for a in axes))
    fn.__name__ = prim.name
    fn.__doc__ = f"``{prim.name}`` over ``axes``. Example: ``lax.{prim.name}(x, (0,))``"
    return fn


reduce_sum = _reduction(P.reduce_sum_p)
reduce_prod = _reduction(P.reduce_prod_p)
reduce_max = _reduction(P.reduce_max_p)
reduce_min = _reduction(P.reduce_min_p)
reduce_and = _reduction(P.reduce_and_p)
reduce_or = _reduction(P.reduce_or_p)


def argmax(x: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the largest element along ``axis`` (first one on ties; NaN counts as largest).
    Example: ``lax.argmax(x, 0, jnp.int32)``"""
    return P.argmax_p.bind(x, axes=(int(axis),), index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(x: Any, axis: int, index_dtype: Any) -> Any:
    """Index of the smallest element along ``axis``. Example: ``lax.argmin(x, 0, jnp.int32)``"""
    return P.argmin_p.bind(x, axes=(int(axis),), index_dtype=dtypes.canonicalize_dtype(index_dtype))


def dot_general(lhs: Any, rhs: Any, dimension_numbers: Any, precision: Any = None,
                preferred_element_type: Any = None) -> Any:
    """Contract ``lhs`` and ``rhs``: ``dimension_numbers = ((lhs_contract, rhs_contract),
    (lhs_batch, rhs_batch))``; result dims are batch, lhs free, rhs free.
    Example: ``lax.dot_general(a, b, (((1,), (0,)), ((), ())))``"""
    name = precision_name(precision)
    (lc, rc), (lb, rb) = dimension_numbers
    dims = ((tuple(int(d) for d in lc), tuple(int(d) for d in rc)),
            (tuple(int(d) for d in lb), tuple(int(d) for d in rb)))
    pref = None if preferred_element_type is None else dtypes.canonicalize_dtype(preferred_element_type)
    return P.dot_general_p.bind(lhs, rhs, dimension_numbers=dims, precision=name,
                                preferred_element_type=pref)


def dot(lhs: Any, rhs: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Vector/matrix product of rank-1 or rank-2 arrays. Example: ``lax.dot(a, b)``"""
    l_aval, r_aval = get_aval(lhs), get_aval(rhs)
    if not 1 <= l_aval.ndim <= 2 or not 1 <= r_aval.ndim <= 2:
        raise TypeError(f"lax.dot takes rank-1 or rank-2 arrays, got shapes {l_aval.shape} and "
                        f"{r_aval.shape}")
    return dot_general(lhs, rhs, (((l_aval.ndim - 1,), (0,)), ((), ())), precision,
                       preferred_element_type=preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: Any = None) -> Any:
    """Matrix products over matching leading batch axes: ``(..., m, k) @ (..., k, n)``.
    Example: ``lax.batch_matmul(a, b)`` with shapes (8, 2, 3) and (8, 3, 4) -> (8, 2, 4)"""
    l_aval, r_aval = get_aval(lhs), get_aval(rhs)
    if l_aval.ndim < 2 or l_aval.ndim != r_aval.ndim:
        raise ValueError(f"batch_matmul needs arrays of equal rank >= 2, got shapes "
                         f"{l_aval.shape} and {r_aval.shape}")
    batch = tuple(range(l_aval.ndim - 2))
    return dot_general(lhs, rhs, (((l_aval.ndim - 1,), (r_aval.ndim - 2,)), (batch, batch)),
                       precision)


def squeeze(x: Any, dimensions: Sequence[int]) -> Any:
    """Remove size-1 ``dimensions``. Example: ``lax.squeeze(x, (0,))``"""
    aval = get_aval(x)
    dims = {int(d) % aval.ndim for d in dimensions} if aval.ndim else set()
    for d in dims:
        if aval.shape[d] != 1:
            raise ValueError(f"cannot squeeze dimension {d} of size {aval.shape[d]} "
                             f"(shape {aval.shape})")
    return reshape(x, tuple(s for i, s in enumerate(aval.shape) if i not in dims))


def expand_dims(x: Any, dimensions: Sequence[int]) -> Any:
    """Insert size-1 dimensions at ``dimensions``. Example: ``lax.expand_dims(x, (0,))``"""
    aval = get_aval(x)
    ndim = aval.ndim + len(dimensions)
    dims = sorted(int(d) % ndim for d in dimensions)
    shape = list(aval.shape)
    for d in dims:
        shape.insert(d, 1)
    return reshape(x, tuple(shape))


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
    """An array of ``shape`` filled with ``fill_value``. Example: ``lax.full((2, 3), 0.0)``"""
    from pyree.numpy._util import typed_scalar
    shape = tuple(int(d) for d in shape)
    if dtype is None:
        aval = get_aval(fill_value)
        dtype, weak = aval.dtype, aval.weak_type
    else:
        dtype, weak = dtypes.canonicalize_dtype(dtype), False
    if isinstance(fill_value, _PY_SCALARS + (np.generic,)):
        value = typed_scalar(fill_value, dtype, weak_type=weak)
    else:
        value = convert_element_type(fill_value, dtype, weak)
    return broadcast_in_dim(value, shape, ())


# Before anything that imports pyree.numpy, whose functions use these.
from ._lax_special import *  # noqa: E402,F401,F403
from ._lax_control_flow import cond, fori_loop, map, scan, switch, while_loop  # noqa: E402
from ._lax_gather import *  # noqa: E402,F401,F403
from ._lax_collectives import *  # noqa: E402,F401,F403
from ._lax_sort import *  # noqa: E402,F401,F403
from ._lax_windows import *  # noqa: E402,F401,F403
from ._lax_extra import *  # noqa: E402,F401,F403
from ._lax_fft import *  # noqa: E402,F401,F403
from .sharding import with_sharding_constraint  # noqa: E402,F401
from ._custom_derivatives import stop_gradient  # noqa: E402


# Last, as pyree.numpy imports this module: it installs the array operators (x + 1 on a traced
# x) that functions given to cond, scan, while_loop... use.
import pyree.numpy  # noqa: E402,F401

# jax.lax.linalg is a module; registered under pyree.lax.linalg so that `import
# pyree.lax.linalg` works although pyree.lax is a module, not a package.
import sys as _sys  # noqa: E402

from . import _lax_linalg as linalg  # noqa: E402

_sys.modules[__name__ + ".linalg"] = linalg


def __getattr__(name: str) -> Any:
    """The primitives as attributes (``lax.exp_p``, ``lax.tanh_p``...), as JAX's lax has them,
    for interpreters that walk an IR and dispatch on its equations' primitives.

    Example::

        {lax.exp_p: jnp.log, lax.tanh_p: jnp.arctanh}[eqn.primitive]
    """
    from pyree.transpiler.core.trace import Primitive
    if name.endswith("_p"):
        for module_name, module in list(_sys.modules.items()):
            if module_name.startswith("pyree.transpiler.") and module is not None:
                found = getattr(module, name, None)
                if isinstance(found, Primitive):
                    return found
    raise AttributeError(f"module 'pyree.lax' has no attribute {name!r}")
