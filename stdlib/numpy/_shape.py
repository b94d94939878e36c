"""Shape manipulation: reshape, transpose, concatenate, stack, expand_dims, squeeze, ..."""
from __future__ import annotations

__all__ = [
    "broadcast_to", "concatenate", "expand_dims", "moveaxis", "ravel", "reshape", "squeeze",
    "stack", "swapaxes", "transpose",
]

import math
import operator
from typing import Any, Optional, Sequence

import numpy as np

from pyree import lax
from pyree.transpiler.source import where as _where
from pyree.transpiler.trace import get_aval

from ._util import (broadcast_shapes, broadcast_to_shape, canonical_axis, check_arraylike,
                    promote_dtypes)


def _resolve_shape(size: int, newshape: Sequence[int], old: tuple) -> tuple:
    newshape = tuple(operator.index(d) for d in newshape)
    unknown = [i for i, d in enumerate(newshape) if d == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension (-1) in reshape")
    if unknown:
        known = math.prod(d for d in newshape if d != -1)
        if known == 0 or size % known:
            raise TypeError(f"cannot reshape array of shape {old} (size {size}) into shape "
                            f"{newshape}{_where(None)}")
        newshape = tuple(size // known if d == -1 else d for d in newshape)
    if math.prod(newshape) != size or any(d < 0 for d in newshape):
        raise TypeError(f"cannot reshape array of shape {old} (size {size}) into shape "
                        f"{newshape}{_where(None)}")
    return newshape


def reshape(a: Any, shape: Any = None, order: str = "C", *, newshape: Any = None) -> Any:
    """``a`` with a new shape of the same size; one dimension may be -1.

    Example::

        jnp.reshape(jnp.arange(6), (2, -1))
    """
    check_arraylike("reshape", a)
    if shape is None:
        shape = newshape
    if order != "C":
        raise ValueError(f"reshape supports order='C' only, got {order!r}")
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    aval = get_aval(a)
    return lax.reshape(a, _resolve_shape(aval.size, shape, aval.shape))


def ravel(a: Any, order: str = "C") -> Any:
    """``a`` flattened to one dimension.

    Example::

        jnp.ravel(jnp.ones((2, 3))).shape   # (6,)
    """
    return reshape(a, (-1,), order)


def transpose(a: Any, axes: Optional[Sequence[int]] = None) -> Any:
    """Permute the axes (reverse them by default).

    Example::

        jnp.transpose(jnp.ones((2, 3))).shape   # (3, 2)
    """
    check_arraylike("transpose", a)
    ndim = get_aval(a).ndim
    if axes is None:
        axes = tuple(reversed(range(ndim)))
    else:
        axes = tuple(canonical_axis(ax, ndim) for ax in axes)
        if sorted(axes) != list(range(ndim)):
            raise ValueError(f"axes {axes} don't match array of dimension {ndim}")
    return lax.transpose(a, axes)


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """Exchange two axes.

    Example::

        jnp.swapaxes(jnp.ones((2, 3, 4)), 0, 2).shape   # (4, 3, 2)
    """
    ndim = get_aval(a).ndim
    perm = list(range(ndim))
    i, j = canonical_axis(axis1, ndim), canonical_axis(axis2, ndim)
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def moveaxis(a: Any, source: Any, destination: Any) -> Any:
    """Move axes to new positions, keeping the order of the others.

    Example::

        jnp.moveaxis(jnp.ones((2, 3, 4)), 0, -1).shape   # (3, 4, 2)
    """
    ndim = get_aval(a).ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    src = [canonical_axis(s, ndim) for s in src]
    dst = [canonical_axis(d, ndim) for d in dst]
    if len(src) != len(dst):
        raise ValueError("moveaxis: source and destination must have the same number of axes")
    order = [i for i in range(ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return lax.transpose(a, order)


def expand_dims(a: Any, axis: Any) -> Any:
    """Insert size-1 axes at ``axis`` (an int or a tuple).

    Example::

        jnp.expand_dims(jnp.ones(3), 0).shape   # (1, 3)
    """
    check_arraylike("expand_dims", a)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    ndim = get_aval(a).ndim + len(axes)
    axes = tuple(canonical_axis(ax, ndim) for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in expand_dims: {axis}")
    return lax.expand_dims(a, axes)


def squeeze(a: Any, axis: Any = None) -> Any:
    """Remove size-1 axes (all of them, or those in ``axis``).

    Example::

        jnp.squeeze(jnp.ones((1, 3, 1))).shape   # (3,)
    """
    check_arraylike("squeeze", a)
    aval = get_aval(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(aval.shape) if d == 1)
    else:
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        axes = tuple(canonical_axis(ax, aval.ndim) for ax in axes)
    return lax.squeeze(a, axes)


def broadcast_to(a: Any, shape: Any) -> Any:
    """``a`` broadcast to ``shape`` (NumPy rules).

    Example::

        jnp.broadcast_to(jnp.arange(3), (2, 3))
    """
    check_arraylike("broadcast_to", a)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    broadcast_shapes(get_aval(a).shape, shape)  # clear error when impossible
    return broadcast_to_shape(a, shape)


def concatenate(arrays: Sequence[Any], axis: Optional[int] = 0, dtype: Any = None) -> Any:
    """Join arrays along an existing axis (``axis=None`` flattens them first).

    Example::

        jnp.concatenate([jnp.zeros(2), jnp.ones(3)])   # 5 elements
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    check_arraylike("concatenate", *arrays)
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    arrays = promote_dtypes(*arrays)
    if dtype is not None:
        from ._util import convert, requested_dtype
        arrays = [convert(a, requested_dtype(dtype)) for a in arrays]
    ndim = get_aval(arrays[0]).ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    for a in arrays:
        if get_aval(a).ndim != ndim:
            shapes = ", ".join(str(get_aval(x).shape) for x in arrays)
            raise ValueError(f"all the input arrays must have the same number of dimensions, "
                             f"got shapes {shapes}")
    axis = canonical_axis(axis, ndim)
    if len(arrays) == 1:
        return arrays[0]
    return lax.concatenate(arrays, axis)


def stack(arrays: Sequence[Any], axis: int = 0, dtype: Any = None) -> Any:
    """Join arrays of one shape along a new axis.

    Example::

        jnp.stack([jnp.zeros(2), jnp.ones(2)]).shape   # (2, 2)
    """
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")
    check_arraylike("stack", *arrays)
    shapes = {get_aval(a).shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"all input arrays must have the same shape, got "
                         f"{sorted(shapes)}")
    ndim = get_aval(arrays[0]).ndim + 1
    axis = canonical_axis(axis, ndim)
    expanded = [lax.expand_dims(a, (axis,)) for a in promote_dtypes(*arrays)]
    return concatenate(expanded, axis, dtype)
