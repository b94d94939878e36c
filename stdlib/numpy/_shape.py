"""Shape manipulation: reshape, transpose, concatenate, stack, expand_dims, squeeze, ..."""
from __future__ import annotations

__all__ = [
    "append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "block",
    "broadcast_arrays", "broadcast_to", "column_stack", "concatenate", "delete", "dsplit",
    "dstack", "expand_dims", "flip", "fliplr", "flipud", "hsplit", "hstack", "insert",
    "matrix_transpose", "moveaxis", "pad", "permute_dims", "ravel", "repeat", "reshape", "resize",
    "roll", "rot90", "row_stack", "split", "squeeze", "stack", "swapaxes", "tile", "transpose",
    "unstack", "vsplit", "vstack",
    "concat", "rollaxis",
]

import math
import operator
from typing import Any, Optional, Sequence

import numpy as np

from pyree import lax
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import get_aval

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
        if len(set(axes)) != len(axes):
            raise ValueError(f"repeated axis in squeeze: {axis}{_where(None)}")
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


# -- shared helpers -------------------------------------------------------------------------------

def _asarray(a: Any) -> Any:
    from ._creation import asarray
    return asarray(a)


def _concrete(value: Any, fn: str, what: str) -> Any:
    """``value`` as a NumPy value; a traced value raises ConcretizationTypeError."""
    from pyree.errors import ConcretizationTypeError
    from pyree.transpiler.core.trace import Tracer
    if isinstance(value, Tracer) or (isinstance(value, (list, tuple)) and
                                     builtin_any(isinstance(v, Tracer) for v in value)):
        raise ConcretizationTypeError(
            f"{fn}: {what} must be concrete (static) values, got a traced array; they decide "
            f"the shape of the result. Pass them as Python/NumPy values or mark the argument "
            f"static (jit(..., static_argnums=...)){_where(None)}")
    return np.asarray(value)


builtin_any = any


def _zero(dtype: np.dtype, weak: bool = False) -> Any:
    from ._util import typed_scalar
    return typed_scalar(False if dtype == np.bool_ else 0, dtype, weak)


def _slice_axis(x: Any, axis: int, start: int, stop: int) -> Any:
    """``x[..., start:stop, ...]`` along ``axis`` (static bounds, 0 <= start <= stop <= dim)."""
    shape = get_aval(x).shape
    if start == 0 and stop == shape[axis]:
        return x
    starts = [0] * len(shape)
    limits = list(shape)
    starts[axis], limits[axis] = start, stop
    return lax.slice(x, starts, limits)


def _reversed_slice_axis(x: Any, axis: int, start: int, stop: int, rev_x: Any = None) -> Any:
    """``x[start:stop][::-1]`` along ``axis``, cut from the reversed array: under jit IREE fails
    to compile some reverses of slices (see _indexing.getitem)."""
    n = get_aval(x).shape[axis]
    if rev_x is None:
        rev_x = lax.rev(x, (axis,))
    return _slice_axis(rev_x, axis, n - stop, n - start)


def _broadcast_along(x: Any, axis: int, count: int) -> Any:
    """A size-1 ``axis`` of ``x`` repeated ``count`` times."""
    shape = list(get_aval(x).shape)
    shape[axis] = count
    return lax.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape))))


# Above this many pieces a static gather is done as a one-hot selection instead of by slices.
_MAX_PIECES = 16


def _take_static(x: Any, indices: Any, axis: int) -> Any:
    """``x`` indexed along ``axis`` by static, in-bounds ``indices``: cut into runs of
    consecutive (ascending, descending or repeated) indices, each one slice, then concatenated;
    exact and cheap to differentiate."""
    indices = [int(i) for i in np.asarray(indices).reshape(-1)]
    aval = get_aval(x)
    n = aval.shape[axis]
    if not indices:
        return _slice_axis(x, axis, 0, 0)
    runs = []  # (first index, length, step)
    i = 0
    while i < len(indices):
        j = i + 1
        step = indices[j] - indices[i] if j < len(indices) else 1
        if step not in (-1, 0, 1):
            step = 1
        else:
            while j < len(indices) and indices[j] - indices[j - 1] == step:
                j += 1
        runs.append((indices[i], j - i, step))
        i = j
    if len(runs) > _MAX_PIECES:
        return gather_onehot(x, _constant_indices(indices), axis)
    if len(runs) == 1 and runs[0] == (0, n, 1):
        return x
    rev_x = None
    pieces = []
    for first, length, step in runs:
        if step == 1:
            pieces.append(_slice_axis(x, axis, first, first + length))
        elif step == 0:
            pieces.append(_broadcast_along(_slice_axis(x, axis, first, first + 1), axis, length))
        else:
            if rev_x is None:
                rev_x = lax.rev(x, (axis,))
            pieces.append(_reversed_slice_axis(x, axis, first - length + 1, first + 1, rev_x))
    return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


def _constant_indices(indices: Sequence[int]) -> Any:
    from pyree import dtypes
    from ._creation import array
    return array(np.asarray(indices, dtype=dtypes.canonicalize_dtype(int)))


def gather_onehot(x: Any, indices: Any, axis: int) -> Any:
    """``x`` indexed along ``axis`` by the integer array ``indices`` (rank 1, possibly traced)
    as a masked sum over a one-hot comparison: composed of differentiable, batchable
    primitives. Out-of-range indices give zeros."""
    aval = get_aval(x)
    idx_aval = get_aval(indices)
    n = aval.shape[axis]
    m = idx_aval.shape[0]
    int_t = idx_aval.dtype
    onehot = lax.eq(lax.broadcast_in_dim(indices, (m, n), (0,)),
                    lax.broadcasted_iota(int_t, (m, n), 1))
    out_shape = aval.shape[:axis] + (m, n) + aval.shape[axis + 1:]
    keep = tuple(d if d < axis else d + 1 for d in range(aval.ndim))
    spread = lax.broadcast_in_dim(x, out_shape, keep)
    mask = lax.broadcast_in_dim(onehot, out_shape, (axis, axis + 1))
    picked = lax.select(mask, spread, _zero(aval.dtype, aval.weak_type))
    reduce = lax.reduce_or if aval.dtype == np.bool_ else lax.reduce_sum
    return reduce(picked, (axis + 1,))


def _axes_arg(axis: Any, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(canonical_axis(a, ndim) for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis: {axis}")
    return axes


# -- dimensions -----------------------------------------------------------------------------------

def _atleast(arys: tuple, ndim: int, place: Any) -> Any:
    out = []
    for a in arys:
        a = _asarray(a)
        shape = get_aval(a).shape
        if len(shape) < ndim:
            a = lax.reshape(a, place(shape))
        out.append(a)
    return out[0] if len(out) == 1 else out


def atleast_1d(*arys: Any) -> Any:
    """Inputs as arrays of at least one dimension (a list when several are given).

    Example::

        jnp.atleast_1d(3.0).shape   # (1,)
    """
    return _atleast(arys, 1, lambda s: (1,))


def atleast_2d(*arys: Any) -> Any:
    """Inputs as arrays of at least two dimensions: a vector becomes one row.

    Example::

        jnp.atleast_2d(jnp.arange(3)).shape   # (1, 3)
    """
    return _atleast(arys, 2, lambda s: (1,) * (2 - len(s)) + s)


def atleast_3d(*arys: Any) -> Any:
    """Inputs as arrays of at least three dimensions: ``(n,)`` becomes ``(1, n, 1)`` and
    ``(m, n)`` becomes ``(m, n, 1)``.

    Example::

        jnp.atleast_3d(jnp.ones((2, 3))).shape   # (2, 3, 1)
    """
    return _atleast(arys, 3, lambda s: {0: (1, 1, 1), 1: (1,) + s + (1,), 2: s + (1,)}[len(s)])


def permute_dims(a: Any, axes: Optional[Sequence[int]] = None) -> Any:
    """The array API's name for ``transpose``.

    Example::

        jnp.permute_dims(jnp.ones((2, 3, 4)), (2, 0, 1)).shape   # (4, 2, 3)
    """
    return transpose(a, axes)


def matrix_transpose(x: Any) -> Any:
    """Swap the last two axes (a stack of matrices, each transposed).

    Example::

        jnp.matrix_transpose(jnp.ones((5, 2, 3))).shape   # (5, 3, 2)
    """
    check_arraylike("matrix_transpose", x)
    ndim = get_aval(x).ndim
    if ndim < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions; got {ndim}"
                         f"{_where(None)}")
    return swapaxes(x, -1, -2)


def broadcast_arrays(*args: Any) -> list:
    """The arguments broadcast against each other (NumPy rules).

    Example::

        a, b = jnp.broadcast_arrays(jnp.ones((2, 1)), jnp.arange(3))   # both (2, 3)
    """
    arrays = [_asarray(a) for a in args]
    shape = broadcast_shapes(*[get_aval(a).shape for a in arrays])
    return [broadcast_to_shape(a, shape) for a in arrays]


# -- joining --------------------------------------------------------------------------------------

def _sequence(tup: Any, name: str) -> list:
    from pyree.runtime.array import Array
    from pyree.transpiler.core.trace import Tracer
    if isinstance(tup, (Array, Tracer)):
        return unstack(tup) if get_aval(tup).ndim else [tup]
    if isinstance(tup, (list, tuple, np.ndarray)):
        return list(tup)
    raise TypeError(f"{name} takes a sequence (list or tuple) of arrays, got "
                    f"{type(tup).__name__}{_where(None)}")


def hstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Join arrays column-wise: along axis 1, or axis 0 for vectors.

    Example::

        jnp.hstack([jnp.zeros(2), jnp.ones(3)]).shape   # (5,)
    """
    arrays = _sequence(tup, "hstack")
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    arrays = [atleast_1d(a) for a in arrays]
    return concatenate(arrays, 0 if get_aval(arrays[0]).ndim == 1 else 1, dtype)


def vstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Join arrays row-wise (along axis 0, vectors becoming rows).

    Example::

        jnp.vstack([jnp.zeros(3), jnp.ones(3)]).shape   # (2, 3)
    """
    arrays = _sequence(tup, "vstack")
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    return concatenate([atleast_2d(a) for a in arrays], 0, dtype)


row_stack = vstack


def dstack(tup: Sequence[Any], dtype: Any = None) -> Any:
    """Join arrays depth-wise (along axis 2, after ``atleast_3d``).

    Example::

        jnp.dstack([jnp.zeros((2, 3)), jnp.ones((2, 3))]).shape   # (2, 3, 2)
    """
    arrays = _sequence(tup, "dstack")
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    return concatenate([atleast_3d(a) for a in arrays], 2, dtype)


def column_stack(tup: Sequence[Any]) -> Any:
    """Join vectors as the columns of a matrix (2-D arrays are joined along axis 1).

    Example::

        jnp.column_stack([jnp.arange(3), jnp.arange(3)]).shape   # (3, 2)
    """
    arrays = []
    for a in _sequence(tup, "column_stack"):
        a = _asarray(a)
        shape = get_aval(a).shape
        arrays.append(lax.reshape(a, shape + (1,)) if len(shape) < 2 else a)
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    arrays = [atleast_2d(a) for a in arrays]
    return concatenate(arrays, 1)


def append(arr: Any, values: Any, axis: Optional[int] = None) -> Any:
    """``values`` joined to the end of ``arr`` (both flattened when ``axis`` is None).

    Example::

        jnp.append(jnp.arange(3), 7)   # [0, 1, 2, 7]
    """
    arr, values = _asarray(arr), _asarray(values)
    if axis is None:
        return concatenate([ravel(arr), ravel(values)], 0)
    return concatenate([arr, values], axis)


def block(arrays: Any) -> Any:
    """Assemble an array from nested lists of blocks: the innermost lists are joined along the
    last axis, the next along the second-to-last, and so on.

    Example::

        jnp.block([[jnp.eye(2), jnp.zeros((2, 1))], [jnp.ones((1, 2)), jnp.ones((1, 1))]])
    """
    def depth(obj: Any, path: str) -> int:
        if isinstance(obj, tuple):
            raise TypeError(f"jnp.block: {path} is a tuple; only lists can be used to arrange "
                            f"blocks{_where(None)}")
        if isinstance(obj, list):
            if not obj:
                raise ValueError(f"jnp.block: {path} is an empty list{_where(None)}")
            depths = {depth(o, f"{path}[{i}]") for i, o in enumerate(obj)}
            if len(depths) != 1:
                raise ValueError(f"jnp.block: list depths are mismatched at {path}"
                                 f"{_where(None)}")
            return depths.pop() + 1
        return 0

    levels = depth(arrays, "arrays")

    def max_ndim(obj: Any) -> int:
        if isinstance(obj, list):
            return max(max_ndim(o) for o in obj)
        return get_aval(_asarray(obj)).ndim

    ndim = max(levels, max_ndim(arrays))

    def assemble(obj: Any, level: int) -> Any:
        if level == levels:
            a = _asarray(obj)
            shape = get_aval(a).shape
            return lax.reshape(a, (1,) * (ndim - len(shape)) + shape)
        parts = [assemble(o, level + 1) for o in obj]
        return concatenate(parts, axis=level - levels)

    return assemble(arrays, 0)


# -- splitting ------------------------------------------------------------------------------------

def unstack(x: Any, /, *, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple.

    Example::

        a, b = jnp.unstack(jnp.ones((2, 3)))   # two arrays of shape (3,)
    """
    check_arraylike("unstack", x)
    aval = get_aval(x)
    if aval.ndim == 0:
        raise ValueError("Unstack requires arrays with rank > 0, however a scalar array was "
                         "passed.")
    axis = canonical_axis(axis, aval.ndim)
    shape = aval.shape[:axis] + aval.shape[axis + 1:]
    return tuple(lax.reshape(_slice_axis(x, axis, i, i + 1), shape)
                 for i in range(aval.shape[axis]))


def _split(name: str, ary: Any, indices_or_sections: Any, axis: int, equal: bool) -> list:
    check_arraylike(name, ary)
    aval = get_aval(ary)
    axis = canonical_axis(axis, aval.ndim)
    n = aval.shape[axis]
    spec = _concrete(indices_or_sections, name, "indices_or_sections")
    if spec.ndim == 0:
        if spec.dtype.kind not in "iu":
            raise TypeError(f"{name}: indices_or_sections must be an integer or a sequence of "
                            f"integers, got {indices_or_sections!r}")
        sections = int(spec)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        if equal and n % sections:
            raise ValueError(f"array split does not result in an equal division: an axis of "
                             f"size {n} into {sections} sections{_where(None)}")
        size, extra = divmod(n, sections)
        sizes = [size + 1] * extra + [size] * (sections - extra)
        bounds = np.cumsum([0] + sizes)
        cuts = list(zip(bounds[:-1], bounds[1:]))
    else:
        if spec.ndim != 1 or (spec.size and spec.dtype.kind not in "iu"):
            raise TypeError(f"{name}: indices_or_sections must be an integer or a 1-D sequence "
                            f"of integers, got {indices_or_sections!r}")
        points = [0] + [int(p) for p in spec] + [n]
        cuts = []
        for start, stop in zip(points[:-1], points[1:]):
            r = range(n)[start:stop]  # Python slicing: negative and out-of-range points
            cuts.append((r.start, max(r.stop, r.start)) if r.step == 1 else (0, 0))
    return [_slice_axis(ary, axis, int(a), int(b)) for a, b in cuts]


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Split into equal sections (an int) or at the given indices (a sequence).

    Example::

        a, b, c = jnp.split(jnp.arange(6), 3)
        a, b = jnp.split(jnp.arange(6), [2])      # [0, 1] and [2, 3, 4, 5]
    """
    return _split("split", ary, indices_or_sections, axis, True)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Like ``split``, but the sections may differ in size by one (the first ones larger).

    Example::

        [len(p) for p in jnp.array_split(jnp.arange(7), 3)]   # [3, 2, 2]
    """
    return _split("array_split", ary, indices_or_sections, axis, False)


def hsplit(ary: Any, indices_or_sections: Any) -> list:
    """Split column-wise (along axis 1, or axis 0 for vectors).

    Example::

        left, right = jnp.hsplit(jnp.ones((2, 4)), 2)
    """
    check_arraylike("hsplit", ary)
    ndim = get_aval(ary).ndim
    if ndim == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return _split("hsplit", ary, indices_or_sections, 1 if ndim > 1 else 0, True)


def vsplit(ary: Any, indices_or_sections: Any) -> list:
    """Split row-wise (along axis 0) an array of at least 2 dimensions.

    Example::

        top, bottom = jnp.vsplit(jnp.ones((4, 2)), 2)
    """
    check_arraylike("vsplit", ary)
    if get_aval(ary).ndim < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return _split("vsplit", ary, indices_or_sections, 0, True)


def dsplit(ary: Any, indices_or_sections: Any) -> list:
    """Split depth-wise (along axis 2) an array of at least 3 dimensions.

    Example::

        a, b = jnp.dsplit(jnp.ones((2, 2, 4)), 2)
    """
    check_arraylike("dsplit", ary)
    if get_aval(ary).ndim < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return _split("dsplit", ary, indices_or_sections, 2, True)


# -- repetition -----------------------------------------------------------------------------------

def tile(A: Any, reps: Any) -> Any:
    """``A`` repeated ``reps`` times along each axis.

    Example::

        jnp.tile(jnp.array([1, 2]), (2, 2))   # [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    A = _asarray(A)
    reps_arr = _concrete(reps, "tile", "reps")
    reps_t = (int(reps_arr),) if reps_arr.ndim == 0 else tuple(int(r) for r in reps_arr)
    if any(r < 0 for r in reps_t):
        raise ValueError(f"tile: negative repetitions {reps_t}")
    shape = get_aval(A).shape
    ndim = max(len(shape), len(reps_t))
    shape = (1,) * (ndim - len(shape)) + shape
    reps_t = (1,) * (ndim - len(reps_t)) + reps_t
    A = lax.reshape(A, shape)
    # (r0, d0, r1, d1, ...) then merged pairwise.
    spread = tuple(v for pair in zip(reps_t, shape) for v in pair)
    A = lax.broadcast_in_dim(A, spread, tuple(range(1, 2 * ndim, 2)))
    return lax.reshape(A, tuple(r * d for r, d in zip(reps_t, shape)))


def repeat(a: Any, repeats: Any, axis: Optional[int] = None, *,
           total_repeat_length: Optional[int] = None) -> Any:
    """Each element repeated ``repeats`` times (a scalar, or one count per element along
    ``axis``); ``axis=None`` flattens first. Under jit, array ``repeats`` need a static
    ``total_repeat_length`` (the result is cut or padded with the last element to it).

    Example::

        jnp.repeat(jnp.array([1, 2]), 2)          # [1, 1, 2, 2]
        jnp.repeat(jnp.array([1, 2]), jnp.array([1, 3]))   # [1, 2, 2, 2]
    """
    from pyree.errors import ConcretizationTypeError
    from pyree.transpiler.core.trace import Tracer
    check_arraylike("repeat", a)
    if axis is None:
        a = ravel(a)
        axis = 0
    aval = get_aval(a)
    axis = canonical_axis(axis, aval.ndim)
    if aval.ndim == 0:
        a = lax.reshape(a, (1,))
        aval = get_aval(a)
    n = aval.shape[axis]
    traced = isinstance(repeats, Tracer)
    if not traced:
        counts = np.asarray(repeats)
        if counts.dtype.kind not in "iub" and counts.size:
            raise TypeError(f"repeat: repeats must be integers, got {counts.dtype}")
        if counts.ndim > 1:
            raise ValueError(f"repeat: repeats must be a scalar or 1-D, got shape {counts.shape}")
        if counts.size == 1 and counts.ndim == 1:
            counts = counts.reshape(())
        if (counts < 0).any():
            raise ValueError("repeats may not contain negative values")
        if counts.ndim == 0 and (total_repeat_length is None
                                 or total_repeat_length == n * int(counts)):
            r = int(counts)
            shape = aval.shape[:axis] + (n, r) + aval.shape[axis + 1:]
            keep = tuple(d if d <= axis else d + 1 for d in range(aval.ndim))
            spread = lax.broadcast_in_dim(a, shape, keep)
            return lax.reshape(spread, aval.shape[:axis] + (n * r,) + aval.shape[axis + 1:])
        counts = np.broadcast_to(counts, (n,)) if counts.ndim == 0 else counts
        if counts.shape != (n,):
            raise ValueError(f"repeat: {counts.shape[0]} repeats for an axis of size {n}")
        total = int(counts.sum()) if total_repeat_length is None else int(total_repeat_length)
        # Output position i reads element #{k : cumsum(counts)[k] <= i}, the last one past
        # the end (JAX's rule for a total_repeat_length above the sum).
        bounds = np.cumsum(counts)
        source = np.minimum(np.searchsorted(bounds, np.arange(total), side="right"),
                            max(n - 1, 0))
        if n == 0:
            if total:
                raise ValueError("repeat: cannot fill a non-empty result from an empty axis")
            return a
        return _take_static(a, source, axis)
    if total_repeat_length is None:
        raise ConcretizationTypeError(
            f"jnp.repeat: when jit-compiling, the total number of repeats must be static. "
            f"Either pass static (non-traced) repeats, or a static total_repeat_length="
            f"{_where(None)}")
    from pyree import dtypes
    from ._util import convert, typed_scalar
    int_t = dtypes.canonicalize_dtype(int)
    counts = convert(repeats, int_t)
    if get_aval(counts).ndim == 0:
        counts = lax.broadcast_in_dim(counts, (n,), ())
    if get_aval(counts).shape != (n,):
        raise ValueError(f"repeat: {get_aval(counts).shape} repeats for an axis of size {n}")
    total = int(total_repeat_length)
    if n == 0:
        return a
    # cumsum(counts)[k] as a masked sum (a lower-triangular mask), then count the bounds <= i.
    tri_mask = lax.le(lax.broadcasted_iota(int_t, (n, n), 1),
                      lax.broadcasted_iota(int_t, (n, n), 0))
    bounds = lax.reduce_sum(
        lax.select(tri_mask, lax.broadcast_in_dim(counts, (n, n), (1,)),
                   typed_scalar(0, int_t)), axes=(1,))
    positions = lax.broadcasted_iota(int_t, (total, n), 0)
    passed = lax.le(lax.broadcast_in_dim(bounds, (total, n), (1,)), positions)
    source = lax.reduce_sum(convert(passed, int_t), axes=(1,))
    source = lax.min(source, typed_scalar(n - 1, int_t))
    return gather_onehot(a, source, axis)


def resize(a: Any, new_shape: Any) -> Any:
    """An array of ``new_shape`` filled with the elements of ``a`` in order, repeated as often
    as needed.

    Example::

        jnp.resize(jnp.array([1, 2, 3]), (2, 4))   # [[1, 2, 3, 1], [2, 3, 1, 2]]
    """
    a = _asarray(a)
    shape = (int(new_shape),) if isinstance(new_shape, (int, np.integer)) else \
        tuple(int(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise ValueError("all elements of `new_shape` must be non-negative")
    total = math.prod(shape)
    flat = ravel(a)
    size = get_aval(flat).shape[0]
    if size == 0 or total == 0:
        from ._creation import zeros
        return zeros(shape, get_aval(a).dtype)
    copies = -(-total // size)
    flat = tile(flat, copies) if copies > 1 else flat
    return lax.reshape(_slice_axis(flat, 0, 0, total), shape)


# -- reordering -----------------------------------------------------------------------------------

def flip(m: Any, axis: Any = None) -> Any:
    """Reverse the order of elements along ``axis`` (all axes by default).

    Example::

        jnp.flip(jnp.array([1, 2, 3]))   # [3, 2, 1]
    """
    check_arraylike("flip", m)
    axes = _axes_arg(axis, get_aval(m).ndim)
    return lax.rev(m, axes) if axes else m


def fliplr(m: Any) -> Any:
    """Reverse the columns (axis 1). Example: ``jnp.fliplr(jnp.eye(2))``"""
    check_arraylike("fliplr", m)
    if get_aval(m).ndim < 2:
        raise ValueError("fliplr: input must be >= 2-d.")
    return lax.rev(m, (1,))


def flipud(m: Any) -> Any:
    """Reverse the rows (axis 0). Example: ``jnp.flipud(jnp.eye(2))``"""
    check_arraylike("flipud", m)
    if get_aval(m).ndim < 1:
        raise ValueError("flipud: input must be >= 1-d.")
    return lax.rev(m, (0,))


def roll(a: Any, shift: Any, axis: Any = None) -> Any:
    """Shift elements cyclically by ``shift`` places along ``axis`` (the flattened array when
    None); ``shift`` may be traced.

    Example::

        jnp.roll(jnp.arange(5), 2)   # [3, 4, 0, 1, 2]
    """
    from pyree.transpiler.core.trace import Tracer
    check_arraylike("roll", a)
    a = _asarray(a)
    aval = get_aval(a)
    if axis is None:
        return lax.reshape(roll(ravel(a), shift, 0), aval.shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(canonical_axis(ax, aval.ndim) for ax in axes)
    if isinstance(shift, Tracer):
        shifts = _traced_shifts(shift, len(axes))
    else:
        s = np.asarray(shift)
        if s.dtype.kind not in "iub":
            raise TypeError(f"roll: shift must be integers, got {s.dtype}")
        if s.ndim > 1:
            raise ValueError("roll: shift must be a scalar or 1-D")
        shifts, axes = np.broadcast_arrays(s, np.asarray(axes))
        shifts = [int(v) for v in shifts.reshape(-1)]
        axes = tuple(int(v) for v in axes.reshape(-1))
    for ax, sh in zip(axes, shifts):
        a = _roll_axis(a, sh, ax)
    return a


def _traced_shifts(shift: Any, count: int) -> list:
    from pyree import dtypes
    from ._util import convert
    int_t = dtypes.canonicalize_dtype(int)
    s = convert(_asarray(shift), int_t)
    shape = get_aval(s).shape
    if len(shape) > 1:
        raise ValueError("roll: shift must be a scalar or 1-D")
    if not shape:
        return [s] * count
    if shape[0] != count and count != 1:
        raise ValueError(f"roll: {shape[0]} shifts for {count} axes")
    return [lax.reshape(_slice_axis(s, 0, i, i + 1), ()) for i in range(shape[0])]


def _roll_axis(a: Any, shift: Any, axis: int) -> Any:
    n = get_aval(a).shape[axis]
    if n == 0:
        return a
    if isinstance(shift, int):
        shift %= n
        if shift == 0:
            return a
        return lax.concatenate([_slice_axis(a, axis, n - shift, n),
                                _slice_axis(a, axis, 0, n - shift)], axis)
    # A traced shift: the window of [a, a] that starts at n - (shift mod n).
    from pyree import dtypes
    from ._util import typed_scalar
    int_t = dtypes.canonicalize_dtype(int)
    size = typed_scalar(n, int_t)
    rem = lax.rem(shift, size)
    rem = lax.select(lax.lt(rem, typed_scalar(0, int_t)), lax.add(rem, size), rem)
    start = lax.sub(size, rem)
    doubled = lax.concatenate([a, a], axis)
    zero = typed_scalar(0, int_t)
    starts = [zero] * get_aval(a).ndim
    starts[axis] = start
    return lax.dynamic_slice(doubled, starts, get_aval(a).shape)


def rot90(m: Any, k: int = 1, axes: tuple = (0, 1)) -> Any:
    """Rotate by 90 degrees ``k`` times, from the first axis of ``axes`` towards the second.

    Example::

        jnp.rot90(jnp.array([[1, 2], [3, 4]]))   # [[2, 4], [1, 3]]
    """
    check_arraylike("rot90", m)
    ndim = get_aval(m).ndim
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    if ndim < 2:
        raise ValueError(f"rot90 needs an array of at least 2 dimensions, got {ndim}")
    a0, a1 = canonical_axis(axes[0], ndim), canonical_axis(axes[1], ndim)
    if a0 == a1:
        raise ValueError("Axes must be different.")
    k = operator.index(k) % 4
    if k == 0:
        return m
    if k == 2:
        return lax.rev(m, (a0, a1))
    perm = list(range(ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return lax.transpose(lax.rev(m, (a1,)), perm)
    return lax.rev(lax.transpose(m, perm), (a1,))


# -- deleting and inserting -----------------------------------------------------------------------

def _static_positions(obj: Any, n: int, fn: str) -> np.ndarray:
    """``obj`` (an int, slice, sequence or boolean mask) as sorted-or-not static positions."""
    if isinstance(obj, slice):
        return np.arange(n)[obj]
    idx = _concrete(obj, fn, "the indices (obj)")
    if idx.dtype == np.bool_:
        if idx.shape != (n,):
            raise ValueError(f"{fn}: boolean mask of shape {idx.shape} for an axis of size {n}")
        return np.nonzero(idx)[0]
    if idx.size and idx.dtype.kind not in "iu":
        raise IndexError(f"{fn}: arrays used as indices must be of integer (or boolean) type, "
                         f"got {idx.dtype}")
    return idx.astype(np.int64)


def delete(arr: Any, obj: Any, axis: Optional[int] = None, *,
           assume_unique_indices: bool = False) -> Any:
    """``arr`` without the entries at ``obj`` (an int, a slice, static indices or a boolean
    mask) along ``axis`` (of the flattened array when None).

    Example::

        jnp.delete(jnp.arange(5), [0, 2])   # [1, 3, 4]
    """
    check_arraylike("delete", arr)
    if axis is None:
        arr = ravel(arr)
        axis = 0
    aval = get_aval(arr)
    axis = canonical_axis(axis, aval.ndim)
    n = aval.shape[axis]
    positions = _static_positions(obj, n, "delete").reshape(-1)
    if ((positions < -n) | (positions >= n)).any():
        bad = positions[(positions < -n) | (positions >= n)][0]
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}"
                         f"{_where(None)}")
    keep = np.ones(n, bool)
    keep[positions % n if n else positions] = False
    return _take_static(arr, np.nonzero(keep)[0], axis)


def insert(arr: Any, obj: Any, values: Any, axis: Optional[int] = None) -> Any:
    """``arr`` with ``values`` inserted before the positions ``obj`` (an int, a slice or static
    indices) along ``axis`` (of the flattened array when None).

    Example::

        jnp.insert(jnp.arange(3), 1, 9)   # [0, 9, 1, 2]
    """
    check_arraylike("insert", arr)
    from ._creation import array
    from ._util import convert
    if axis is None:
        arr = ravel(arr)
        axis = 0
    aval = get_aval(arr)
    axis = canonical_axis(axis, aval.ndim)
    n = aval.shape[axis]
    values = convert(array(values), aval.dtype, aval.weak_type)
    scalar_obj = not isinstance(obj, slice) and np.ndim(_concrete(obj, "insert", "the indices "
                                                                  "(obj)")) == 0
    positions = _static_positions(obj, n + 1, "insert").reshape(-1)
    if ((positions < -n) | (positions > n)).any():
        bad = positions[(positions < -n) | (positions > n)][0]
        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}"
                         f"{_where(None)}")
    positions = np.where(positions < 0, positions + n, positions)
    if scalar_obj:
        # NumPy: the values' first axis becomes the inserted run along `axis`.
        vshape = get_aval(values).shape
        values = lax.reshape(values, (1,) * (aval.ndim - len(vshape)) + vshape) \
            if len(vshape) < aval.ndim else values
        values = moveaxis(values, 0, axis) if aval.ndim else values
        count = get_aval(values).shape[axis] if aval.ndim else 1
        positions = np.full(count, positions[0])
    count = len(positions)
    target = aval.shape[:axis] + (count,) + aval.shape[axis + 1:]
    values = broadcast_to_shape(values, target)
    # Sorted (stably) insertion points; the old elements fill the remaining places in order.
    order = np.argsort(positions, kind="stable")
    new_places = positions[order] + np.arange(count)
    source = np.empty(n + count, np.int64)
    is_new = np.zeros(n + count, bool)
    is_new[new_places] = True
    source[new_places] = n + order
    source[~is_new] = np.arange(n)
    both = concatenate([arr, values], axis) if count else arr
    return _take_static(both, source, axis)


# -- padding --------------------------------------------------------------------------------------

_PAD_KWARGS = {
    "constant": {"constant_values"}, "edge": set(), "wrap": set(), "empty": set(),
    "reflect": {"reflect_type"}, "symmetric": {"reflect_type"}, "linear_ramp": {"end_values"},
    "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"},
}


def _pad_pairs(value: Any, ndim: int, what: str, integral: bool = True) -> np.ndarray:
    """A ``pad_width``-style argument (int, (n,), (before, after), or one pair per axis) as an
    ``(ndim, 2)`` NumPy array."""
    arr = _concrete(value, "pad", what)
    if integral and arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"`{what}` must be of integral type, got {value!r}{_where(None)}")
    try:
        return np.broadcast_to(arr, (ndim, 2))
    except ValueError:
        raise ValueError(f"pad: {what} {value!r} does not fit an array of {ndim} dimension"
                         f"{'' if ndim == 1 else 's'}: give an int, a (before, after) pair, or "
                         f"one pair per axis{_where(None)}") from None


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """Pad an array. ``pad_width`` is an int, a ``(before, after)`` pair, or one pair per
    axis; ``mode`` is 'constant' (``constant_values``), 'edge', 'reflect', 'symmetric'
    (``reflect_type`` 'even' or 'odd'), 'wrap', 'linear_ramp' (``end_values``), 'maximum',
    'minimum', 'mean' (``stat_length``) or 'empty' (zeros).

    Example::

        jnp.pad(jnp.array([1, 2, 3]), (1, 2))                  # [0, 1, 2, 3, 0, 0]
        jnp.pad(jnp.array([1, 2, 3]), 2, mode="reflect")       # [3, 2, 1, 2, 3, 2, 1]
    """
    check_arraylike("pad", array)
    array = _asarray(array)
    aval = get_aval(array)
    if callable(mode):
        raise NotImplementedError("pad with a callable mode is not supported")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported{_where(None)}")
    unexpected = set(kwargs) - _PAD_KWARGS[mode]
    if unexpected:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unexpected}")
    widths = _pad_pairs(pad_width, aval.ndim, "pad_width")
    if (widths < 0).any():
        raise ValueError(f"index can't contain negative values: pad_width={pad_width!r}"
                         f"{_where(None)}")
    widths = [(int(lo), int(hi)) for lo, hi in widths]
    if mode in ("constant", "empty"):
        return _pad_constant(array, widths, kwargs.get("constant_values", 0))
    for axis, (lo, hi) in enumerate(widths):
        if aval.shape[axis] == 0 and (lo or hi):
            raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' "
                             f"or 'empty'{_where(None)}")
    if mode == "linear_ramp":
        ends = kwargs.get("end_values", 0)
    elif mode in ("maximum", "minimum", "mean"):
        lengths = kwargs.get("stat_length")
        if lengths is not None:
            lengths = _pad_pairs(lengths, aval.ndim, "stat_length")
            if (lengths < 0).any():
                raise ValueError("index can't contain negative values")
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise ValueError(f"reflect_type must be 'even' or 'odd', got {reflect_type!r}")
    for axis, (lo, hi) in enumerate(widths):
        if not lo and not hi:
            continue
        n = aval.shape[axis]
        if mode == "edge" or (mode in ("reflect", "symmetric") and n == 1):
            array = _take_static(array, np.clip(np.arange(-lo, n + hi), 0, n - 1), axis)
        elif mode == "wrap":
            array = _take_static(array, np.arange(-lo, n + hi) % n, axis)
        elif mode in ("reflect", "symmetric"):
            array = _pad_reflect(array, axis, lo, hi, mode == "symmetric", reflect_type == "odd")
        elif mode == "linear_ramp":
            array = _pad_linear_ramp(array, axis, lo, hi, ends)
        else:
            pair = (None, None) if lengths is None else tuple(int(v) for v in lengths[axis])
            array = _pad_stat(array, axis, lo, hi, mode, pair)
    return array


def _pad_constant(array: Any, widths: list, values: Any) -> Any:
    from pyree.runtime.array import Array
    from pyree.transpiler.core.trace import Tracer
    from ._util import convert
    aval = get_aval(array)
    if isinstance(values, (Array, Tracer)) and get_aval(values).ndim == 0:
        fill = convert(values, aval.dtype, aval.weak_type)
        return lax.pad(array, fill, [(lo, hi, 0) for lo, hi in widths])
    if isinstance(values, (Array, Tracer)):
        table = broadcast_to_shape(convert(values, aval.dtype, aval.weak_type), (aval.ndim, 2))
        pairs = [[lax.reshape(lax.slice(table, (i, j), (i + 1, j + 1)), ()) for j in (0, 1)]
                 for i in range(aval.ndim)]
    else:
        table = _pad_pairs(values, aval.ndim, "constant_values", integral=False)
        if not aval.ndim:
            return array
        if (table == table.flat[0]).all():
            fill = _scalar_value(convert(table.flat[0], aval.dtype, aval.weak_type))
            return lax.pad(array, fill, [(lo, hi, 0) for lo, hi in widths])
        pairs = [[_scalar_value(convert(table[i, j], aval.dtype, aval.weak_type))
                  for j in (0, 1)] for i in range(aval.ndim)]
    zero = [(0, 0, 0)] * aval.ndim
    for axis, (lo, hi) in enumerate(widths):
        for side, width in ((0, lo), (1, hi)):
            if width:
                config = list(zero)
                config[axis] = (width, 0, 0) if side == 0 else (0, width, 0)
                array = lax.pad(array, pairs[axis][side], config)
    return array


def _scalar_value(x: Any) -> Any:
    """A host scalar converted for ``lax.pad``'s padding value (NumPy casting: truncation)."""
    from pyree.transpiler.core.trace import TypedScalar
    from ._util import typed_scalar
    if isinstance(x, TypedScalar):
        value = np.asarray(x.value)
        if x.aval.dtype.kind in "iub" and value.dtype.kind in "fc":
            value = np.trunc(value.real)
        return typed_scalar(value.astype(x.aval.dtype)[()], x.aval.dtype, x.aval.weak_type)
    return x


def _pad_reflect(x: Any, axis: int, lo: int, hi: int, symmetric: bool, odd: bool) -> Any:
    """Mirror the values at both ends, as NumPy does: in rounds, each adding at most one
    period of the original values, so that 'odd' reflections build on the previous round."""
    period = get_aval(x).shape[axis]
    while lo or hi:
        length = get_aval(x).shape[axis]
        if symmetric:
            chunk_max = length // period * period
        else:
            chunk_max = (length - 1) // (period - 1) * (period - 1)
        offset = 0 if symmetric else 1
        rev_x = lax.rev(x, (axis,))
        pieces = []
        left = min(chunk_max, lo)
        if left:
            chunk = _reversed_slice_axis(x, axis, offset, offset + left, rev_x)
            if odd:
                chunk = _odd(chunk, _slice_axis(x, axis, 0, 1), axis, left)
            pieces.append(chunk)
        pieces.append(x)
        right = min(chunk_max, hi)
        if right:
            stop = length - offset
            chunk = _reversed_slice_axis(x, axis, stop - right, stop, rev_x)
            if odd:
                chunk = _odd(chunk, _slice_axis(x, axis, length - 1, length), axis, right)
            pieces.append(chunk)
        x = lax.concatenate(pieces, axis) if len(pieces) > 1 else x
        lo -= left
        hi -= right
    return x


def _odd(chunk: Any, edge: Any, axis: int, count: int) -> Any:
    """``2 * edge - chunk``: the reflection through the edge value."""
    edge = _broadcast_along(edge, axis, count)
    return lax.sub(lax.add(edge, edge), chunk)


def _pad_linear_ramp(x: Any, axis: int, lo: int, hi: int, end_values: Any) -> Any:
    from pyree import dtypes
    from ._util import convert, default_float_dtype, typed_scalar
    aval = get_aval(x)
    n = aval.shape[axis]
    inexact = aval.dtype.kind in "fc" or aval.dtype == dtypes.bfloat16
    compute = aval.dtype if inexact else default_float_dtype()
    ends = _pad_pairs(end_values, aval.ndim, "end_values", integral=False)
    pieces = []
    for side, width in ((0, lo), (1, hi)):
        if not width:
            continue
        edge = convert(_slice_axis(x, axis, 0, 1) if side == 0 else
                       _slice_axis(x, axis, n - 1, n), compute)
        end = typed_scalar(ends[axis, side], compute)
        shape = list(aval.shape)
        shape[axis] = width
        # NumPy: linspace(end, edge, width, endpoint=False), reversed on the right.
        steps = lax.broadcasted_iota(compute, tuple(shape), axis)
        if side == 1:
            steps = lax.rev(steps, (axis,))
        delta = lax.div(lax.sub(edge, end), typed_scalar(width, compute))
        ramp = lax.add(lax.mul(steps, _broadcast_along(delta, axis, width)), end)
        if not inexact:
            ramp = lax.floor(ramp)  # NumPy's integer linspace rounds down
        pieces.append(convert(ramp, aval.dtype, aval.weak_type))
    if lo:
        pieces.insert(1, x) if hi else pieces.append(x)
    else:
        pieces.insert(0, x)
    return lax.concatenate(pieces, axis)


def _pad_stat(x: Any, axis: int, lo: int, hi: int, mode: str, lengths: tuple) -> Any:
    from pyree import dtypes
    from ._util import convert, default_float_dtype, typed_scalar
    aval = get_aval(x)
    n = aval.shape[axis]
    pieces = []
    for side, width in ((0, lo), (1, hi)):
        if not width:
            continue
        length = n if lengths[side] is None else min(lengths[side], n)
        if length == 0 and mode != "mean":
            raise ValueError("stat_length of 0 yields no value for padding")
        chunk = _slice_axis(x, axis, 0, length) if side == 0 else \
            _slice_axis(x, axis, n - length, n)
        if mode == "maximum":
            stat = lax.reduce_max(chunk, axes=(axis,))
        elif mode == "minimum":
            stat = lax.reduce_min(chunk, axes=(axis,))
        else:
            inexact = aval.dtype.kind in "fc" or aval.dtype == dtypes.bfloat16
            compute = aval.dtype if inexact else default_float_dtype()
            total = lax.reduce_sum(convert(chunk, compute), axes=(axis,))
            stat = lax.div(total, typed_scalar(length, compute))
            if not inexact:  # NumPy rounds the mean of integers (half to even)
                stat = lax.round(stat, lax.RoundingMethod.TO_NEAREST_EVEN)
            stat = convert(stat, aval.dtype, aval.weak_type)
        shape = list(aval.shape)
        shape[axis] = width
        keep = tuple(d for d in range(aval.ndim) if d != axis)
        pieces.append(lax.broadcast_in_dim(stat, tuple(shape), keep))
    if lo:
        pieces.insert(1, x) if hi else pieces.append(x)
    else:
        pieces.insert(0, x)
    return lax.concatenate(pieces, axis)


def concat(arrays: Any, /, *, axis: Optional[int] = 0) -> Any:
    """The Array API's name for ``concatenate``: join ``arrays`` along ``axis`` (None:
    flattened first).

    Example::

        jnp.concat([jnp.ones(2), jnp.zeros(3)])   # [1, 1, 0, 0, 0]
    """
    return concatenate(arrays, axis=axis)


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """``a`` with ``axis`` moved to lie before position ``start`` (NumPy's older spelling of
    ``moveaxis``).

    Example::

        jnp.rollaxis(jnp.ones((2, 3, 4)), 2).shape      # (4, 2, 3)
        jnp.rollaxis(jnp.ones((2, 3, 4)), 0, 3).shape   # (3, 4, 2)
    """
    check_arraylike("rollaxis", a)
    from ._creation import asarray
    a = asarray(a)
    ndim = get_aval(a).ndim
    axis = canonical_axis(axis, ndim)
    start = operator.index(start)
    if not -ndim <= start <= ndim:
        raise np.exceptions.AxisError(f"rollaxis: start {start} is out of bounds for array of "
                                      f"dimension {ndim}")
    if start < 0:
        start += ndim
    if start > axis:
        start -= 1
    return moveaxis(a, axis, start)
