"""Indexing (``x[i, 1:3, ::-1, None, ..., idx_array, mask]``), functional updates
(``x.at[index].set(v)`` and friends), ``take`` and ``take_along_axis``.

*Basic* indices (integers, slices, ``None``, ``...``, run-time integer scalars) select, along
each axis, an arithmetic progression of positions. Reading and updating first cut out the *box*
spanned by the progressions (a ``slice``, or a ``dynamic_slice`` when some index is traced),
then stride and reverse inside it.

*Advanced* indices (integer arrays — lists, NumPy arrays, pyree arrays, traced — and boolean
masks, which become integer arrays outside ``jit``) follow NumPy: they broadcast together, and
the broadcast dimensions replace the indexed axes in the result, in place when the advanced
indices are adjacent, at the front when a slice, ``None`` or ``...`` separates them. With an
advanced index present, integers count as advanced indices too. Reading cuts out the box of
the slices, then gathers from it; updating scatters into the box and writes the box back.

Out of bounds (as in JAX): reads clamp, updates drop, for static integers as for arrays of
indices and run-time scalars (``jnp.arange(10)[11]`` is 9; NumPy would raise IndexError);
``.at[...]`` methods take ``mode=`` ('clip', 'fill' / 'drop', 'promise_in_bounds') and
``fill_value=``.
"""
from __future__ import annotations

__all__ = [
    "choose", "compress", "extract", "fill_diagonal", "put", "put_along_axis", "ravel_multi_index",
    "take", "take_along_axis", "unravel_index", "place",
]

import operator
from typing import Any, Callable, Optional

import numpy as np

from pyree import dtypes, lax
from pyree.errors import ConcretizationTypeError, NonConcreteBooleanIndexError
from pyree.runtime.array import Array
from pyree.transpiler.families import gather_scatter as GS
from pyree.transpiler.families.gather_scatter import GatherScatterMode
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import Tracer, TypedScalar, get_aval

from ._util import broadcast_to_shape, convert, typed_scalar


class _Axis:
    """How one axis of the operand is indexed by a basic index."""

    __slots__ = ("start", "count", "step", "dynamic", "keep")

    def __init__(self, start: Any, count: int, step: int, dynamic: bool, keep: bool) -> None:
        self.start = start      # lowest position read (an int, or a traced scalar)
        self.count = count      # how many positions
        self.step = step        # distance between them; negative: reversed order
        self.dynamic = dynamic  # start is traced
        self.keep = keep        # the axis remains in the result (False for integer indices)

    @property
    def span(self) -> int:
        return (self.count - 1) * abs(self.step) + 1 if self.count else 0


# -- parsing ----------------------------------------------------------------------------------

class _Int:
    """A static integer index."""
    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value


class _Dyn:
    """An integer scalar known at run time (a traced or device 0-d array)."""
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Adv:
    """An array of integer indices (NumPy array, pyree Array or traced)."""
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class _Mask:
    """A concrete boolean mask (a NumPy array of rank >= 1)."""
    __slots__ = ("value",)

    def __init__(self, value: np.ndarray) -> None:
        self.value = value


class _Bool0:
    """A 0-d boolean index: a new axis of length 1 (True) or 0 (False)."""
    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value


def _is_int_scalar(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (int, np.integer))


def _non_integer_error(kind: str) -> IndexError:
    return IndexError(f"indices must be integers, slices, None, ..., or integer or boolean "
                      f"arrays; got an index of type {kind}{_where(None)}")


def _sequence_index(entry: Any) -> Any:
    """A list (or a tuple inside the index tuple) used as an index array."""
    from ._creation import _contains_traced, array
    if _contains_traced(entry):
        return array(entry)
    try:
        host = np.asarray(entry)
    except (ValueError, TypeError):
        host = None
    if host is None or host.dtype == object:
        raise IndexError(f"a list used as an index must hold integers or booleans of one "
                         f"rectangular shape, got {entry!r}{_where(None)}")
    if host.size == 0 and host.dtype.kind == "f":
        host = host.astype(np.int64)  # [] is an empty integer index, as in NumPy
    return host


def _classify(entry: Any) -> Any:
    """One entry of the index tuple as None, Ellipsis, a slice or one of the classes above."""
    if entry is None or entry is Ellipsis or isinstance(entry, slice):
        return entry
    if isinstance(entry, (bool, np.bool_)):
        return _Bool0(bool(entry))
    if _is_int_scalar(entry):
        return _Int(int(entry))
    if isinstance(entry, (list, tuple)):
        entry = _sequence_index(entry)
    if isinstance(entry, TypedScalar):
        entry = entry.value
    if isinstance(entry, (np.ndarray, np.generic)):
        entry = np.asarray(entry)
        if entry.dtype == np.bool_:
            return _Bool0(bool(entry)) if entry.ndim == 0 else _Mask(entry)
        if entry.dtype.kind not in "iu":
            raise _float_index_error(entry.dtype)
        return _Int(int(entry)) if entry.ndim == 0 else _Adv(entry)
    if isinstance(entry, (Tracer, Array)):
        dtype = entry.dtype
        if dtype == np.bool_:
            if isinstance(entry, Tracer):
                raise NonConcreteBooleanIndexError(
                    f"a boolean mask {entry.aval.str_short()} computed inside jit cannot be "
                    f"used as an index: the shape of the result would depend on the mask's "
                    f"values{_where(None)}\nUse jnp.where(mask, x, other) (three arguments) to "
                    f"keep the shape, or index outside jit.")
            host = np.asarray(entry)
            return _Bool0(bool(host)) if host.ndim == 0 else _Mask(host)
        if dtype.kind not in "iu":
            raise _float_index_error(dtype)
        return _Dyn(entry) if entry.ndim == 0 else _Adv(entry)
    if isinstance(entry, (float, complex, np.floating)):
        raise _float_index_error(np.dtype(type(entry)))
    raise _non_integer_error(type(entry).__name__)


def _float_index_error(dtype: Any) -> IndexError:
    return IndexError(f"indices must be integers or booleans, got an index of dtype "
                      f"{np.dtype(dtype).name}{_where(None)}")


def _expand(x: Any, index: Any) -> tuple[Any, list]:
    """The index as one entry per operand axis (plus None entries), masks turned into integer
    arrays and 0-d booleans into new axes of ``x`` indexed by an array."""
    shape = get_aval(x).shape
    items = list(index) if isinstance(index, tuple) else [index]
    items = [_classify(i) for i in items]
    if sum(1 for i in items if i is Ellipsis) > 1:
        raise IndexError(f"an index can only have a single ellipsis ('...'){_where(None)}")
    consumed = sum(i.value.ndim if isinstance(i, _Mask) else 1 for i in items
                   if i is not None and i is not Ellipsis and not isinstance(i, _Bool0))
    if consumed > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but "
                         f"{consumed} were indexed{_where(None)}")
    fill = [slice(None)] * (len(shape) - consumed)
    expanded: list = []
    for i in items:
        expanded.extend(fill if i is Ellipsis else [i])
    if Ellipsis not in items:
        expanded.extend(fill)

    entries: list = []
    new_shape: list = []
    axis = 0
    for e in expanded:
        if e is None:
            entries.append(None)
        elif isinstance(e, _Bool0):
            new_shape.append(1)
            entries.append(_Adv(np.zeros(1 if e.value else 0, np.int32)))
        elif isinstance(e, _Mask):
            k = e.value.ndim
            dims = shape[axis:axis + k]
            if tuple(e.value.shape) != tuple(dims):
                raise IndexError(f"boolean index of shape {e.value.shape} does not match the "
                                 f"indexed axes {axis}..{axis + k - 1} of shape {dims}"
                                 f"{_where(None)}")
            for positions in np.nonzero(e.value):
                entries.append(_Adv(positions.astype(np.int32 if positions.size < 2**31
                                                     else np.int64)))
            new_shape.extend(dims)
            axis += k
        else:
            entries.append(e)
            new_shape.append(shape[axis])
            axis += 1
    if len(new_shape) != len(shape):
        x = lax.reshape(x, tuple(new_shape))
    return x, entries


def _static_slice_part(p: Any) -> Optional[int]:
    if p is None:
        return None
    if isinstance(p, Tracer):
        raise ConcretizationTypeError(
            f"slice bounds must be static: a traced value decides the shape of the result. "
            f"Use lax.dynamic_slice with a static size instead{_where(None)}")
    return operator.index(p)


def _slice_axis(entry: slice, dim: int) -> _Axis:
    start, stop, step = (_static_slice_part(p) for p in (entry.start, entry.stop, entry.step))
    start, stop, step = slice(start, stop, step).indices(dim)
    count = len(range(start, stop, step))
    low = start if step > 0 else (start + (count - 1) * step if count else 0)
    return _Axis(low, count, step, False, True)


def _check_static_int(i: int, axis: int, dim: int) -> None:
    if dim == 0:
        raise IndexError(f"index {i} is out of bounds for axis {axis} with size 0"
                         f"{_where(None)}")


class _OutOfBounds(Exception):
    """A static integer index outside its axis, in an update (which is then dropped)."""


def _basic_axes(shape: tuple, entries: list, update: bool = False) -> tuple[list[_Axis], list[int]]:
    """Per-axis selections of a basic index, and the result positions of new axes. A static
    integer out of bounds is clamped (JAX reads the nearest entry), or, in an ``update``,
    raises _OutOfBounds (JAX drops the update)."""
    axes: list[_Axis] = []
    new_axes: list[int] = []
    out_pos = 0
    for entry in entries:
        if entry is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        dim = shape[len(axes)]
        if isinstance(entry, _Int):
            _check_static_int(entry.value, len(axes), dim)
            i = entry.value + dim if entry.value < 0 else entry.value
            if not 0 <= i < dim:
                if update:
                    raise _OutOfBounds
                i = min(max(i, 0), dim - 1)
            axes.append(_Axis(i, 1, 1, False, False))
        elif isinstance(entry, _Dyn):
            axes.append(_Axis(_normalize_dynamic(entry.value, dim), 1, 1, True, False))
        else:
            axes.append(_slice_axis(entry, dim))
            out_pos += 1
    return axes, new_axes


def _normalize_dynamic(index: Any, dim: int) -> Any:
    """A run-time integer index in the index dtype, with negative values counted from the
    end."""
    int_t = dtypes.canonicalize_dtype(int)
    index = convert(index, int_t)
    if get_aval(index).dtype.kind == "u":
        return index
    negative = lax.lt(index, typed_scalar(0, int_t))
    return lax.select(negative, lax.add(index, typed_scalar(dim, int_t)), index)


def _box(x: Any, axes: list[_Axis]) -> Any:
    """Cut out the block spanned by the selections."""
    shape = get_aval(x).shape
    if all(not a.dynamic and a.start == 0 and a.span == d for a, d in zip(axes, shape)):
        return x
    if any(a.dynamic for a in axes):
        int_t = dtypes.canonicalize_dtype(int)
        starts = [a.start if a.dynamic else typed_scalar(a.start, int_t) for a in axes]
        return lax.dynamic_slice(x, starts, [a.span for a in axes])
    return lax.slice(x, [a.start for a in axes], [a.start + a.span for a in axes])


def _basic_getitem(x: Any, entries: list) -> Any:
    aval = get_aval(x)
    axes, new_axes = _basic_axes(aval.shape, entries)
    # Reverse the whole operand first, then cut the box out of it: under jit IREE fails to
    # compile some reverses of slices (LLVM translation of an unrealized_conversion_cast), e.g.
    # lax.rev(x[2:9:3], (0,)) or lax.rev(m[:, :, 1:2], (0,)).
    reversed_axes = tuple(i for i, a in enumerate(axes) if a.step < 0 and a.count > 1)
    if reversed_axes:
        x = lax.rev(x, reversed_axes)
        axes = [_Axis(aval.shape[i] - a.start - a.span, a.count, -a.step, a.dynamic, a.keep)
                if i in reversed_axes else a for i, a in enumerate(axes)]
    strided = any(abs(a.step) > 1 for a in axes)
    if strided and not any(a.dynamic for a in axes):
        # One strided slice (eagerly, one kernel: the block cut out first and then strided
        # took two, m[::2] of 1024 x 1024 floats 2.0-2.6 ms).
        y = lax.slice(x, [a.start for a in axes], [a.start + a.span for a in axes],
                      [abs(a.step) for a in axes])
    else:
        y = _box(x, axes)
        if strided:
            span = [a.span for a in axes]
            y = lax.slice(y, [0] * len(axes), span, [abs(a.step) for a in axes])
    shape = [a.count for a in axes if a.keep]
    for pos in new_axes:
        shape.insert(pos, 1)
    return lax.reshape(y, tuple(shape))


def _basic_update(x: Any, entries: list, values: Any, combine: Optional[Callable]) -> Any:
    """``x`` with ``x[index]`` replaced by ``combine(x[index], values)`` (or by ``values``)."""
    aval = get_aval(x)
    try:
        axes, new_axes = _basic_axes(aval.shape, entries, update=True)
    except _OutOfBounds:
        return x
    values = convert(values, aval.dtype, aval.weak_type)
    # Values broadcast to the shape x[index] has, then lose the new axes and regain the axes
    # integer indices removed, giving one entry per selected position.
    indexed = [a.count for a in axes if a.keep]
    for pos in new_axes:
        indexed.insert(pos, 1)
    values = _broadcast_values(values, tuple(indexed))
    values = lax.reshape(values, tuple(a.count for a in axes))
    reversed_axes = tuple(i for i, a in enumerate(axes) if a.step < 0 and a.count > 1)
    if reversed_axes:
        values = lax.rev(values, reversed_axes)

    old = _box(x, axes)
    strided = any(abs(a.step) > 1 and a.count > 1 for a in axes)
    if strided:
        # Spread the values over the box with interior padding; a mask marks their places.
        config = [(0, 0, abs(a.step) - 1 if a.count > 1 else 0) for a in axes]
        spread = lax.pad(values, typed_scalar(0, aval.dtype), config)
        mask = lax.pad(lax.full(tuple(a.count for a in axes), True, np.bool_),
                       typed_scalar(False, np.bool_), config)
        new = spread if combine is None else combine(old, spread)
        new = lax.select(mask, new, old)
    else:
        new = values if combine is None else combine(old, values)
    dynamic = [a for a in axes if a.dynamic]
    if dynamic:
        # Updates at run-time indices out of bounds are dropped (as in JAX).
        int_t = dtypes.canonicalize_dtype(int)
        inside = None
        for a, dim in zip(axes, aval.shape):
            if a.dynamic:
                ok = lax.bitwise_and(lax.ge(a.start, typed_scalar(0, int_t)),
                                     lax.lt(a.start, typed_scalar(dim, int_t)))
                inside = ok if inside is None else lax.bitwise_and(inside, ok)
        new = lax.select(inside, new, old)
    if old is x:  # the box is the whole array
        return convert(new, aval.dtype, aval.weak_type)
    int_t = dtypes.canonicalize_dtype(int)
    starts = [a.start if a.dynamic else typed_scalar(a.start, int_t) for a in axes]
    return lax.dynamic_update_slice(x, convert(new, aval.dtype, aval.weak_type), starts)


def _broadcast_values(values: Any, shape: tuple) -> Any:
    """Update values broadcast to the indexed shape; leading size-1 axes beyond its rank are
    dropped first (NumPy allows ``x[0:2] = [[1, 2]]``)."""
    vshape = get_aval(values).shape
    extra = len(vshape) - len(shape)
    if extra > 0 and all(d == 1 for d in vshape[:extra]):
        values = lax.reshape(values, vshape[extra:])
    return broadcast_to_shape(values, shape)


# -- advanced indexing ------------------------------------------------------------------------

class _Plan:
    """An index with advanced entries, resolved against a (boxed) operand."""

    __slots__ = ("basic", "adv_axes", "indices", "batch_shape", "block", "out_shape",
                 "gather_shape")


def _index_dtype() -> np.dtype:
    return dtypes.canonicalize_dtype(int)


def _index_array(value: Any, dim: int, normalize: bool = True) -> Any:
    """Integer indices in the index dtype, negative ones counted from the end of an axis of
    size ``dim`` (if ``normalize``)."""
    int_t = _index_dtype()
    if isinstance(value, np.ndarray):
        wide = value.astype(np.int64)
        if value.dtype.kind == "i" and normalize:
            wide = np.where(wide < 0, wide + dim, wide)
        info = np.iinfo(int_t)
        return np.clip(wide, info.min, info.max).astype(int_t)
    signed = get_aval(value).dtype.kind == "i"
    value = convert(value, int_t)
    if not signed or not normalize:
        return value
    negative = lax.lt(value, typed_scalar(0, int_t))
    return lax.select(negative, lax.add(value, typed_scalar(dim, int_t)), value)


def _plan(shape: tuple, entries: list, strict_ints: bool) -> _Plan:
    """Resolve an index with advanced entries: the basic index of its box (slices, with whole
    axes where advanced indices are), the advanced axes and their stacked index vectors, and
    where the broadcast dimensions go."""
    plan = _Plan()
    basic, adv_axes, arrays, kinds = [], [], [], []
    axis = 0
    for pos, e in enumerate(entries):
        if e is None:
            continue
        dim = shape[axis]
        if isinstance(e, slice):
            basic.append(e)
        else:
            basic.append(slice(None))
            if isinstance(e, _Int):
                _check_static_int(e.value, axis, dim)
                value = np.asarray(e.value, np.int64)
            else:
                value = e.value
            adv_axes.append(axis)
            arrays.append(_index_array(value, dim))
            kinds.append(pos)
        axis += 1
    shapes = [np.shape(a) if isinstance(a, np.ndarray) else get_aval(a).shape for a in arrays]
    try:
        batch_shape = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise IndexError(f"shape mismatch: index arrays of shapes "
                         f"{', '.join(str(tuple(s)) for s in shapes)} cannot be broadcast "
                         f"together{_where(None)}") from None
    contiguous = kinds == list(range(kinds[0], kinds[-1] + 1))
    # Where the broadcast dimensions go: in place of adjacent advanced indices, else first.
    out_shape: list = []
    block_out, block_gather, gather_pos = None, 0, 0
    axis = 0
    for pos, e in enumerate(entries):
        if pos == kinds[0]:
            block_out = len(out_shape) if contiguous else 0
            block_gather = gather_pos if contiguous else 0
        if e is None:
            out_shape.append(1)
            continue
        if isinstance(e, slice):
            out_shape.append(_slice_axis(e, shape[axis]).count)
            gather_pos += 1
        axis += 1
    plan.basic = basic
    plan.adv_axes = adv_axes
    plan.batch_shape = batch_shape
    plan.block = block_gather
    plan.out_shape = out_shape[:block_out] + list(batch_shape) + out_shape[block_out:]
    plan.indices = _stack_indices(arrays, batch_shape)
    return plan


def _stack_indices(arrays: list, batch_shape: tuple) -> Any:
    """Index arrays broadcast to ``batch_shape`` and stacked along a new last axis."""
    if all(isinstance(a, np.ndarray) for a in arrays):
        return np.stack([np.broadcast_to(a, batch_shape) for a in arrays], axis=-1)
    columns = []
    for a in arrays:
        if isinstance(a, np.ndarray):
            a = np.broadcast_to(a, batch_shape).reshape(batch_shape + (1,))
        else:
            a = lax.reshape(broadcast_to_shape(a, batch_shape), batch_shape + (1,))
        columns.append(a)
    if len(columns) == 1:
        return columns[0]
    return lax.concatenate([c if not isinstance(c, np.ndarray) else
                            _operand_of(c) for c in columns], len(batch_shape))


def _operand_of(value: np.ndarray) -> Any:
    """A NumPy array as an operand (a constant of the program inside jit)."""
    from ._creation import asarray
    return asarray(value)


def _gather_dims(box_shape: tuple, plan: _Plan) -> tuple[GS.GatherDimensionNumbers, tuple]:
    nb, rest = len(plan.batch_shape), len(box_shape) - len(plan.adv_axes)
    offset = tuple(p for p in range(nb + rest) if not plan.block <= p < plan.block + nb)
    collapsed = tuple(sorted(plan.adv_axes))
    dn = GS.GatherDimensionNumbers(offset, collapsed, tuple(plan.adv_axes))
    sizes = tuple(1 if d in plan.adv_axes else n for d, n in enumerate(box_shape))
    return dn, sizes


def _check_nonempty_axes(box_shape: tuple, plan: _Plan) -> None:
    if int(np.prod(plan.batch_shape, dtype=np.int64)) == 0:
        return
    for d in plan.adv_axes:
        if box_shape[d] == 0:
            raise IndexError(f"index is out of bounds for axis {d} with size 0{_where(None)}")


def _gather_shape(box_shape: tuple, plan: _Plan) -> tuple:
    rest = [n for d, n in enumerate(box_shape) if d not in plan.adv_axes]
    return tuple(rest[:plan.block]) + tuple(plan.batch_shape) + tuple(rest[plan.block:])


def _advanced_getitem(x: Any, entries: list, mode: GatherScatterMode, fill_value: Any,
                      strict_ints: bool, indices_are_sorted: bool, unique_indices: bool) -> Any:
    aval = get_aval(x)
    plan = _plan(aval.shape, entries, strict_ints)
    box = _basic_getitem(x, plan.basic) if any(s != slice(None) for s in plan.basic) else x
    box_aval = get_aval(box)
    out_shape = tuple(plan.out_shape)
    if int(np.prod(out_shape, dtype=np.int64)) == 0:
        return convert(lax.full(out_shape, 0, box_aval.dtype), box_aval.dtype,
                       box_aval.weak_type)
    _check_nonempty_axes(box_aval.shape, plan)
    dn, sizes = _gather_dims(box_aval.shape, plan)
    indices = plan.indices
    if isinstance(indices, np.ndarray):
        indices = _operand_of(indices)
    out = GS.gather(box, indices, dn, sizes, mode, fill_value, indices_are_sorted,
                    unique_indices)
    return lax.reshape(out, out_shape)


def _advanced_update(x: Any, entries: list, values: Any, combiner: str,
                     mode: GatherScatterMode, strict_ints: bool, indices_are_sorted: bool,
                     unique_indices: bool) -> Any:
    aval = get_aval(x)
    plan = _plan(aval.shape, entries, strict_ints)
    boxed = any(s != slice(None) for s in plan.basic)
    box = _basic_getitem(x, plan.basic) if boxed else x
    box_aval = get_aval(box)
    values = convert(values, aval.dtype, aval.weak_type)
    values = _broadcast_values(values, tuple(plan.out_shape))
    gather_shape = _gather_shape(box_aval.shape, plan)
    if int(np.prod(gather_shape, dtype=np.int64)) == 0:
        return x
    _check_nonempty_axes(box_aval.shape, plan)
    values = lax.reshape(values, gather_shape)
    gdn, _ = _gather_dims(box_aval.shape, plan)
    dn = GS.gather_to_scatter(gdn)
    indices = plan.indices
    if isinstance(indices, np.ndarray):
        indices = _operand_of(indices)
    new_box = GS.scatter(box, indices, values, dn, combiner, mode, indices_are_sorted,
                         unique_indices)
    if not boxed:
        return new_box
    return _basic_update(x, plan.basic, new_box, None)


# -- entry points -----------------------------------------------------------------------------

def _has_advanced(entries: list) -> bool:
    return any(isinstance(e, _Adv) for e in entries)


def getitem(x: Any, index: Any) -> Any:
    """``x[index]``: NumPy's basic and advanced indexing (indices out of bounds clamp, as in
    JAX).

    Example::

        jnp.arange(10)[2:8:2]                    # [2, 4, 6]
        jnp.arange(12).reshape(3, 4)[[0, 2], 1]  # [1, 9]
    """
    x, entries = _expand(x, index)
    if not _has_advanced(entries):
        return _basic_getitem(x, entries)
    return _advanced_getitem(x, entries, GatherScatterMode.CLIP, None, True, False, False)


def _parse_mode(mode: Any, default: GatherScatterMode) -> GatherScatterMode:
    return default if mode is None else GatherScatterMode.from_any(mode)


def _update(x: Any, index: Any, values: Any, combiner: str, mode: Any = None,
            indices_are_sorted: bool = False, unique_indices: bool = False) -> Any:
    """``x`` with ``x[index]`` combined with ``values`` ('replace', 'add', 'mul', 'min',
    'max')."""
    x_expanded, entries = _expand(x, index)
    if x_expanded is not x:
        # A 0-d boolean added an axis: update the reshaped array, then drop the axis again.
        new = _update_entries(x_expanded, entries, values, combiner, mode, indices_are_sorted,
                              unique_indices)
        return lax.reshape(new, get_aval(x).shape)
    return _update_entries(x, entries, values, combiner, mode, indices_are_sorted,
                           unique_indices)


_BASIC_COMBINE = {"replace": None, "add": lax.add, "mul": lax.mul, "min": lax.min,
                  "max": lax.max}


def _update_entries(x: Any, entries: list, values: Any, combiner: str, mode: Any,
                    indices_are_sorted: bool, unique_indices: bool) -> Any:
    # Without a mode, static integers out of bounds drop the update (as in JAX); with one,
    # they are index arrays like the others: dropped or clipped.
    strict = mode is None
    if not _has_advanced(entries) and (strict or not any(
            isinstance(e, (_Int, _Dyn)) for e in entries)):
        return _basic_update(x, entries, values, _BASIC_COMBINE[combiner])
    if not strict:
        entries = [_Adv(e.value) if isinstance(e, _Dyn) else e for e in entries]
    return _advanced_update(x, entries, values, combiner,
                            _parse_mode(mode, GatherScatterMode.FILL_OR_DROP), strict,
                            indices_are_sorted, unique_indices)


def _get(x: Any, index: Any, mode: Any, fill_value: Any, indices_are_sorted: bool,
         unique_indices: bool) -> Any:
    x, entries = _expand(x, index)
    strict = mode is None and fill_value is None
    if not _has_advanced(entries) and (strict or not any(
            isinstance(e, (_Int, _Dyn)) for e in entries)):
        return _basic_getitem(x, entries)
    if not strict:
        entries = [_Adv(e.value) if isinstance(e, _Dyn) else e for e in entries]
    from pyree._lax_gather import static_fill_value
    return _advanced_getitem(x, entries, _parse_mode(mode, GatherScatterMode.CLIP),
                             static_fill_value(fill_value), strict, indices_are_sorted,
                             unique_indices)


class _IndexUpdateRef:
    """``x.at[index]``: functional updates of the selected elements.

    Every method takes ``mode`` ('clip', 'fill'/'drop', 'promise_in_bounds'),
    ``indices_are_sorted`` and ``unique_indices``; ``get`` also ``fill_value``."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array = array
        self.index = index

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None, fill_value: Any = None) -> Any:
        """``x[index]``; out of bounds clamped, or ``fill_value`` with ``mode='fill'``.
        Example: ``jnp.arange(10.).at[11].get(mode='fill', fill_value=jnp.nan)`` is nan."""
        return _get(self.array, self.index, mode, fill_value, indices_are_sorted,
                    unique_indices)

    def _apply(self, values: Any, combiner: str, mode: Any, indices_are_sorted: bool,
               unique_indices: bool) -> Any:
        return _update(self.array, self.index, values, combiner, mode, indices_are_sorted,
                       unique_indices)

    def set(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None) -> Any:
        """A copy of x with ``x[index] = values``. Example: ``x.at[0].set(5.0)``"""
        return self._apply(values, "replace", mode, indices_are_sorted, unique_indices)

    def add(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None) -> Any:
        """A copy of x with ``x[index] += values`` (repeated indices accumulate).
        Example: ``x.at[jnp.array([0, 0])].add(1.0)`` adds 2 to ``x[0]``"""
        return self._apply(values, "add", mode, indices_are_sorted, unique_indices)

    def subtract(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: Any = None) -> Any:
        """A copy of x with ``x[index] -= values``. Example: ``x.at[1:].subtract(1.0)``"""
        from ._ufuncs import negative
        return self._apply(negative(values), "add", mode, indices_are_sorted, unique_indices)

    def multiply(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False, mode: Any = None) -> Any:
        """A copy of x with ``x[index] *= values``. Example: ``x.at[::2].multiply(2.0)``"""
        return self._apply(values, "mul", mode, indices_are_sorted, unique_indices)

    mul = multiply

    def divide(self, values: Any, *, indices_are_sorted: bool = False,
               unique_indices: bool = False, mode: Any = None) -> Any:
        """A copy of x with ``x[index] /= values`` (repeated indices divide repeatedly).
        Example: ``x.at[0].divide(2.0)``"""
        from ._ufuncs import true_divide
        return self._combine_whole(values, true_divide, mode, indices_are_sorted,
                                   unique_indices)

    def power(self, values: Any, *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: Any = None) -> Any:
        """A copy of x with ``x[index] **= values`` (repeated indices multiply the exponents).
        Example: ``x.at[0].power(2.0)``"""
        from ._ufuncs import power
        return self._combine_whole(values, power, mode, indices_are_sorted, unique_indices)

    def _combine_whole(self, values: Any, fn: Callable, mode: Any, indices_are_sorted: bool,
                       unique_indices: bool) -> Any:
        # x op (product of the values landing on each element), as JAX computes it.
        x = self.array
        aval = get_aval(x)
        ones = lax.full(aval.shape, 1, aval.dtype)
        factors = _update(ones, self.index, values, "mul", mode, indices_are_sorted,
                          unique_indices)
        return convert(fn(x, factors), aval.dtype, aval.weak_type)

    def min(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None) -> Any:
        """A copy of x with ``x[index] = minimum(x[index], values)``.
        Example: ``x.at[:2].min(0.0)``"""
        return self._apply(values, "min", mode, indices_are_sorted, unique_indices)

    def max(self, values: Any, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: Any = None) -> Any:
        """A copy of x with ``x[index] = maximum(x[index], values)``.
        Example: ``x.at[:2].max(0.0)``"""
        return self._apply(values, "max", mode, indices_are_sorted, unique_indices)

    def apply(self, func: Callable, *, indices_are_sorted: bool = False,
              unique_indices: bool = False, mode: Any = None) -> Any:
        """A copy of x with ``x[index] = func(x[index])`` (each selected element once).
        Example: ``x.at[0].apply(jnp.sin)``"""
        x = self.array
        aval = get_aval(x)
        marks = lax.full(aval.shape, False, np.bool_)
        touched = _update(marks, self.index, True, "replace", mode, indices_are_sorted,
                          unique_indices)
        return lax.select(touched, convert(func(x), aval.dtype, aval.weak_type), x)


class _IndexUpdateHelper:
    """The ``.at`` property: ``x.at[index].set(values)`` and friends."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


# -- take -------------------------------------------------------------------------------------

def _as_index_operand(indices: Any, name: str) -> Any:
    if isinstance(indices, (list, tuple)):
        indices = _sequence_index(indices)
    if _is_int_scalar(indices):
        indices = np.asarray(indices, np.int64)
    if isinstance(indices, (np.ndarray, np.generic)):
        indices = np.asarray(indices)
    dtype = indices.dtype if hasattr(indices, "dtype") else np.dtype(type(indices))
    if np.dtype(dtype).kind not in "iu":
        raise TypeError(f"{name}: indices must be integers, got dtype {np.dtype(dtype).name}"
                        f"{_where(None)}")
    return indices


def _take_mode(mode: Optional[str], name: str) -> tuple[str, GatherScatterMode]:
    if mode is None or mode == "fill":
        return "fill", GatherScatterMode.FILL_OR_DROP
    if mode == "clip":
        return "clip", GatherScatterMode.CLIP
    if mode == "wrap":
        return "wrap", GatherScatterMode.CLIP
    if mode == "promise_in_bounds":
        return "clip", GatherScatterMode.PROMISE_IN_BOUNDS
    if mode == "raise":
        raise NotImplementedError(f"{name}: mode='raise' would need the indices' values while "
                                  f"tracing; use 'fill', 'clip' or 'wrap'{_where(None)}")
    raise ValueError(f"{name}: invalid mode {mode!r}: use 'fill', 'clip', 'wrap' or "
                     f"'promise_in_bounds'{_where(None)}")


def _prepared_indices(indices: Any, dim: int, kind: str) -> Any:
    """Indices normalized: negative ones from the end ('fill'), modulo the axis size ('wrap')
    or as they are ('clip' clamps them to the ends, as NumPy's and JAX's ``take``)."""
    if kind == "wrap":
        from ._ufuncs import remainder
        if dim == 0:
            raise IndexError(f"cannot wrap indices into an axis of size 0{_where(None)}")
        int_t = _index_dtype()
        if isinstance(indices, np.ndarray):
            return np.mod(indices.astype(np.int64), dim).astype(int_t)
        return remainder(convert(indices, int_t), typed_scalar(dim, int_t))
    return _index_array(indices, dim, normalize=kind != "clip")


def take(a: Any, indices: Any, axis: Optional[int] = None, out: None = None,
         mode: Optional[str] = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value: Any = None) -> Any:
    """Elements of ``a`` at ``indices`` along ``axis`` (of the flattened ``a`` if None), as
    ``jnp.take``: out-of-bounds indices read ``fill_value`` (NaN for floats) unless
    ``mode='clip'`` or ``'wrap'``; negative indices count from the end.

    Example::

        jnp.take(jnp.array([10., 20., 30.]), jnp.array([2, 0, 5]))   # [30., 10., nan]
    """
    from ._util import canonical_axis
    if out is not None:
        raise NotImplementedError("take: the out argument is not supported (arrays are "
                                  "immutable)")
    from ._creation import asarray
    a = asarray(a)
    indices = _as_index_operand(indices, "take")
    kind, gmode = _take_mode(mode, "take")
    if axis is None:
        a = lax.reshape(a, (get_aval(a).size,))
        axis = 0
    aval = get_aval(a)
    axis = canonical_axis(axis, aval.ndim)
    dim = aval.shape[axis]
    idx = _prepared_indices(indices, dim, kind)
    ishape = np.shape(idx) if isinstance(idx, np.ndarray) else get_aval(idx).shape
    out_shape = aval.shape[:axis] + tuple(ishape) + aval.shape[axis + 1:]
    if int(np.prod(out_shape, dtype=np.int64)) == 0:
        return lax.full(out_shape, 0, aval.dtype)
    if dim == 0:
        raise IndexError(f"take: cannot take from an axis of size 0{_where(None)}")
    if isinstance(idx, np.ndarray):
        idx = _operand_of(idx.reshape(ishape + (1,)))
    else:
        idx = lax.reshape(idx, tuple(ishape) + (1,))
    n = len(ishape)
    offset = tuple(range(axis)) + tuple(range(axis + n, aval.ndim - 1 + n))
    dn = GS.GatherDimensionNumbers(offset, (axis,), (axis,))
    sizes = tuple(1 if d == axis else s for d, s in enumerate(aval.shape))
    from pyree._lax_gather import static_fill_value
    return GS.gather(a, idx, dn, sizes, gmode, static_fill_value(fill_value),
                     bool(indices_are_sorted), bool(unique_indices))


def take_along_axis(arr: Any, indices: Any, axis: Optional[int], mode: Optional[str] = None,
                    fill_value: Any = None) -> Any:
    """``arr`` read at ``indices`` along ``axis``, the other axes matched element by element
    (broadcast between ``arr`` and ``indices``), as ``jnp.take_along_axis``: out-of-bounds
    indices read ``fill_value`` unless ``mode='clip'``.

    Example::

        x = jnp.array([[10., 30., 20.], [60., 40., 50.]])
        jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1)   # each row sorted
    """
    from ._creation import asarray
    from ._util import canonical_axis
    arr = asarray(arr)
    indices = _as_index_operand(indices, "take_along_axis")
    kind, gmode = _take_mode(mode, "take_along_axis")
    if axis is None:
        arr = lax.reshape(arr, (get_aval(arr).size,))
        if isinstance(indices, np.ndarray):
            indices = indices.reshape(-1)
        else:
            indices = lax.reshape(indices, (get_aval(indices).size,))
        axis = 0
    aval = get_aval(arr)
    ishape = tuple(np.shape(indices)) if isinstance(indices, np.ndarray) else \
        get_aval(indices).shape
    if len(ishape) != aval.ndim:
        raise ValueError(f"take_along_axis: indices of rank {len(ishape)} must have the rank "
                         f"of the array ({aval.ndim}){_where(None)}")
    axis = canonical_axis(axis, aval.ndim)
    dim = aval.shape[axis]
    others = [d for d in range(aval.ndim) if d != axis]
    try:
        common = np.broadcast_shapes(tuple(aval.shape[d] for d in others),
                                     tuple(ishape[d] for d in others))
    except ValueError:
        raise ValueError(f"take_along_axis: shapes {aval.shape} and {ishape} do not broadcast "
                         f"outside axis {axis}{_where(None)}") from None
    arr_shape, idx_shape = list(aval.shape), list(ishape)
    for d, n in zip(others, common):
        arr_shape[d] = n
        idx_shape[d] = n
    arr = broadcast_to_shape(arr, tuple(arr_shape))
    # (Negative indices count from the end in every mode here, as in JAX.)
    idx = _prepared_indices(indices, dim, "fill" if kind == "clip" else kind)
    if isinstance(idx, np.ndarray):
        idx = _operand_of(np.broadcast_to(idx, idx_shape).reshape(tuple(idx_shape) + (1,)))
    else:
        idx = lax.reshape(broadcast_to_shape(idx, tuple(idx_shape)), tuple(idx_shape) + (1,))
    if int(np.prod(idx_shape, dtype=np.int64)) == 0:
        return lax.full(tuple(idx_shape), 0, aval.dtype)
    if dim == 0:
        raise IndexError(f"take_along_axis: cannot take from an axis of size 0{_where(None)}")
    dn = GS.GatherDimensionNumbers((), (axis,), (axis,), tuple(others), tuple(others))
    from pyree._lax_gather import static_fill_value
    return GS.gather(arr, idx, dn, (1,) * aval.ndim, gmode, static_fill_value(fill_value))


# -- index arithmetic ---------------------------------------------------------------------------

def _static_dims(dims: Any, name: str) -> tuple:
    try:
        return tuple(operator.index(d) for d in (dims if isinstance(dims, (tuple, list)) else
                                                 (dims,)))
    except TypeError:
        raise TypeError(f"jnp.{name}: the shape must be a sequence of static integers, got "
                        f"{dims!r}{_where(None)}") from None


def unravel_index(indices: Any, shape: Any) -> tuple:
    """The coordinates in an array of ``shape`` of the flat (row-major) ``indices``, one int32
    array per dimension. As in JAX, negative indices count from the end and out-of-bounds
    indices are clipped (NumPy raises).

    Example::

        jnp.unravel_index(jnp.array([1, 5]), (2, 3))   # ([0, 1], [1, 2])
    """
    from ._creation import asarray
    from ._ufuncs import clip, floor_divide, remainder, where
    from ._util import check_arraylike
    check_arraylike("unravel_index", indices)
    dims = _static_dims(shape, "unravel_index")
    idx = asarray(indices)
    if get_aval(idx).dtype.kind not in "iu":
        raise TypeError(f"jnp.unravel_index: indices must be integers, got "
                        f"{get_aval(idx).dtype}{_where(None)}")
    idx = convert(idx, _index_dtype())
    total = int(np.prod(dims, dtype=np.int64))
    if total == 0:
        raise ValueError(f"jnp.unravel_index: cannot unravel into the empty shape {dims}"
                         f"{_where(None)}")
    idx = clip(where(idx < 0, idx + total, idx), 0, total - 1)
    out = []
    for d in reversed(dims):
        out.append(remainder(idx, d))
        idx = floor_divide(idx, d)
    return tuple(reversed(out))


def ravel_multi_index(multi_index: Any, dims: Any, mode: str = "raise", order: str = "C", *,
                      dtype: Any = None) -> Any:
    """The flat indices into an array of shape ``dims`` of the coordinates ``multi_index``
    (a sequence of integer arrays, one per dimension). ``mode``: 'raise' (checked outside
    ``jit`` only; under ``jit`` use another mode), 'wrap' or 'clip'; ``order``: 'C' or 'F'.

    Example::

        jnp.ravel_multi_index((jnp.array([0, 1]), jnp.array([1, 2])), (2, 3))   # [1, 5]
    """
    from ._creation import asarray
    from ._ufuncs import clip, remainder
    from ._util import check_arraylike, promote_dtypes, requested_dtype
    dims = _static_dims(dims, "ravel_multi_index")
    if len(multi_index) != len(dims):
        raise ValueError(f"jnp.ravel_multi_index: {len(multi_index)} indices for a shape of "
                         f"{len(dims)} dimensions{_where(None)}")
    if order not in ("C", "F"):
        raise ValueError(f"jnp.ravel_multi_index: order must be 'C' or 'F', got {order!r}"
                         f"{_where(None)}")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"jnp.ravel_multi_index: invalid mode={mode!r}; expected 'raise', "
                         f"'wrap' or 'clip'{_where(None)}")
    check_arraylike("ravel_multi_index", *multi_index)
    index = [asarray(i) for i in multi_index]
    for i in index:
        if get_aval(i).dtype.kind not in "iu":
            raise TypeError(f"jnp.ravel_multi_index: only integer indices are allowed, got "
                            f"{get_aval(i).dtype}{_where(None)}")
    want = requested_dtype(dtype) if dtype is not None else _index_dtype()
    if mode == "raise":
        if builtin_any(isinstance(i, Tracer) for i in index):
            raise ConcretizationTypeError(
                f"jnp.ravel_multi_index was traced (under jit) with mode='raise', which needs "
                f"the values of the indices. Use mode='wrap' or mode='clip'.{_where(None)}")
        for i, d in zip(index, dims):
            host = np.asarray(i)
            if host.size and (host.min() < 0 or host.max() >= d):
                raise ValueError(f"jnp.ravel_multi_index: invalid entry in coordinates array"
                                 f"{_where(None)}")
    elif mode == "wrap":
        index = [remainder(i, d) for i, d in zip(index, dims)]
    else:
        index = [clip(i, 0, d - 1) for i, d in zip(index, dims)]
    index = promote_dtypes(*[convert(i, want) for i in index])
    strides = []
    step = 1
    for d in (reversed(dims) if order == "C" else dims):
        strides.append(step)
        step *= d
    if order == "C":
        strides.reverse()
    total = None
    for i, s in zip(index, strides):
        term = i * s
        total = term if total is None else total + term
    if total is None:
        return asarray(0, dtype=want)
    return asarray(total)


builtin_any = any


# -- functional updates -------------------------------------------------------------------------

def _require_not_inplace(name: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"jnp.{name} cannot modify arrays in-place, because pyree arrays are "
                         f"immutable. Pass inplace=False to instead return an updated array."
                         f"{_where(None)}")


def put_along_axis(arr: Any, indices: Any, values: Any, axis: Optional[int],
                   inplace: bool = True, *, mode: Optional[str] = None) -> Any:
    """``arr`` with ``values`` written at ``indices`` along ``axis`` (the other axes matched
    element by element, as ``take_along_axis`` reads). Arrays are immutable: pass
    ``inplace=False``. ``mode`` as in ``x.at[...].set``.

    Example::

        jnp.put_along_axis(jnp.zeros((2, 3)), jnp.array([[1], [2]]), 5.0, axis=1,
                           inplace=False)   # [[0, 5, 0], [0, 0, 5]]
    """
    from ._creation import arange, asarray
    from ._util import canonical_axis, check_arraylike
    _require_not_inplace("put_along_axis", inplace)
    check_arraylike("put_along_axis", arr, indices, values)
    arr = asarray(arr)
    shape = get_aval(arr).shape
    idx = asarray(indices)
    if axis is None:
        flat = lax.reshape(arr, (get_aval(arr).size,))
        idx = lax.reshape(idx, (get_aval(idx).size,))
        return lax.reshape(put_along_axis(flat, idx, values, 0, inplace=False, mode=mode), shape)
    ndim = len(shape)
    if get_aval(idx).ndim != ndim:
        raise ValueError(f"jnp.put_along_axis: indices of rank {get_aval(idx).ndim} must have "
                         f"the rank of the array ({ndim}){_where(None)}")
    axis = canonical_axis(axis, ndim)
    index = []
    for d in range(ndim):
        if d == axis:
            index.append(idx)
        else:
            index.append(lax.reshape(arange(shape[d]), tuple(shape[d] if e == d else 1
                                                             for e in range(ndim))))
    return _IndexUpdateHelper(arr)[tuple(index)].set(values, mode=mode)


def put(a: Any, ind: Any, v: Any, mode: Optional[str] = None, *, inplace: bool = True) -> Any:
    """``a`` with the values ``v`` (repeated as needed) written at the flat indices ``ind``.
    Arrays are immutable: pass ``inplace=False``. ``mode``: None or 'fill' (out-of-bounds
    indices are dropped), 'clip' or 'wrap'.

    Example::

        jnp.put(jnp.zeros(4), jnp.array([0, 2]), 1.0, inplace=False)   # [1, 0, 1, 0]
    """
    from ._creation import asarray
    from ._shape import ravel, resize
    from ._ufuncs import clip, remainder
    from ._util import check_arraylike
    _require_not_inplace("put", inplace)
    check_arraylike("put", a, ind, v)
    a = asarray(a)
    flat = ravel(a)
    n = get_aval(flat).shape[0]
    ind = ravel(asarray(ind))
    vals = ravel(asarray(v))
    count = get_aval(ind).shape[0]
    if count == 0 or get_aval(vals).shape[0] == 0:
        return a
    vals = resize(vals, (count,))
    if mode == "clip":
        ind, mode = clip(ind, 0, n - 1), None
    elif mode == "wrap":
        ind, mode = remainder(ind, n), None
    elif mode not in (None, "fill", "drop", "raise"):
        raise ValueError(f"jnp.put: mode must be None, 'fill', 'clip' or 'wrap', got "
                         f"{mode!r}{_where(None)}")
    if mode == "raise":
        raise NotImplementedError(f"jnp.put: mode='raise' is not supported{_where(None)}")
    out = _IndexUpdateHelper(flat)[ind].set(vals, mode=mode)
    return lax.reshape(out, get_aval(a).shape)


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """``a`` (at least 2-D; all dimensions equal beyond 2-D) with its main diagonal set to
    ``val`` (repeated as needed). ``wrap`` continues a tall matrix's diagonal after every
    ``ncols + 1`` rows, as NumPy does. Arrays are immutable: pass ``inplace=False``.

    Example::

        jnp.fill_diagonal(jnp.zeros((3, 3)), 1.0, inplace=False)   # the identity
    """
    from ._creation import asarray
    from ._shape import ravel, resize
    from ._util import check_arraylike
    _require_not_inplace("fill_diagonal", inplace)
    check_arraylike("fill_diagonal", a, val)
    a = asarray(a)
    shape = get_aval(a).shape
    if len(shape) < 2:
        raise ValueError(f"jnp.fill_diagonal: array must be at least 2-d, got shape {shape}"
                         f"{_where(None)}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"jnp.fill_diagonal: all dimensions of input must be of equal length, "
                         f"got shape {shape}{_where(None)}")
    total = int(np.prod(shape))
    if len(shape) == 2:
        step = shape[1] + 1
        end = total if wrap else builtins_min(total, shape[1] * shape[1])
    else:
        step = int(sum(np.cumprod((1,) + shape[:-1])))
        end = total
    positions = np.arange(0, end, step, dtype=np.int32)
    if positions.size == 0:
        return a
    vals = ravel(convert(asarray(val), get_aval(a).dtype))
    if get_aval(vals).shape[0] == 0:
        return a
    vals = resize(vals, (positions.size,))
    flat = _IndexUpdateHelper(ravel(a))[positions].set(vals)
    return lax.reshape(flat, shape)


builtins_min = min


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    """For each element of the integer array ``a``, the element of ``choices[a]`` at that
    position (``a`` and all choices broadcast together). ``mode``: 'raise' (checked outside
    ``jit`` only), 'wrap' or 'clip'.

    Example::

        jnp.choose(jnp.array([0, 1, 0]), [jnp.array([1, 2, 3]), jnp.array([10, 20, 30])])
        # [1, 20, 3]
    """
    from ._creation import asarray
    from ._shape import stack
    from ._ufuncs import clip, remainder
    from ._util import broadcast_shapes, check_arraylike, promote_dtypes
    if out is not None:
        raise NotImplementedError(f"jnp.choose: the 'out' argument is not supported"
                                  f"{_where(None)}")
    check_arraylike("choose", a, *choices)
    a = asarray(a)
    if get_aval(a).dtype.kind not in "iu":
        raise TypeError(f"jnp.choose: a must be an integer array, got {get_aval(a).dtype}"
                        f"{_where(None)}")
    n = len(choices)
    if n == 0:
        raise ValueError(f"jnp.choose: choices must not be empty{_where(None)}")
    if mode == "raise":
        if isinstance(a, Tracer):
            raise ConcretizationTypeError(
                f"jnp.choose was traced (under jit) with mode='raise', which needs the values "
                f"of a. Use mode='wrap' or mode='clip'.{_where(None)}")
        host = np.asarray(a)
        if host.size and (host.min() < 0 or host.max() >= n):
            raise ValueError(f"jnp.choose: invalid entry in choice array{_where(None)}")
    elif mode == "wrap":
        a = remainder(a, n)
    elif mode == "clip":
        a = clip(a, 0, n - 1)
    else:
        raise ValueError(f"jnp.choose: invalid mode={mode!r}; expected 'raise', 'wrap' or "
                         f"'clip'{_where(None)}")
    choices = promote_dtypes(*[asarray(c) for c in choices])
    shape = broadcast_shapes(get_aval(a).shape, *[get_aval(c).shape for c in choices])
    choices = [broadcast_to_shape(c, shape) for c in choices]
    a = broadcast_to_shape(a, shape)
    table = stack(choices, axis=0)
    return take_along_axis(table, lax.reshape(a, (1,) + shape), axis=0,
                           mode="clip")[0] if shape else table[a]


def compress(condition: Any, a: Any, axis: Optional[int] = None, *, size: Optional[int] = None,
             fill_value: Any = 0, out: None = None) -> Any:
    """The slices of ``a`` along ``axis`` (the flattened ``a`` if None) where the 1-D
    ``condition`` is true. The length depends on the data: under ``jit`` pass ``size=``; the
    result is cut or filled (with ``fill_value``) to it.

    Example::

        jnp.compress(jnp.array([True, False, True]), jnp.array([1, 2, 3]))   # [1, 3]
    """
    from ._creation import asarray
    from ._shape import concatenate, moveaxis, ravel
    from ._sorting import nonzero
    from ._ufuncs import where
    from ._util import canonical_axis, check_arraylike
    if out is not None:
        raise NotImplementedError(f"jnp.compress: the 'out' argument is not supported"
                                  f"{_where(None)}")
    check_arraylike("compress", condition, a)
    cond = asarray(condition)
    if get_aval(cond).ndim != 1:
        raise ValueError(f"jnp.compress: condition must be a 1-D array, got shape "
                         f"{get_aval(cond).shape}{_where(None)}")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = canonical_axis(axis, get_aval(a).ndim)
    a = moveaxis(a, axis, 0)
    length = get_aval(a).shape[0]
    m = get_aval(cond).shape[0]
    if get_aval(cond).dtype != np.bool_:
        cond = cond != 0
    if m > length:
        if isinstance(cond, Tracer):
            cond = lax.slice(cond, (0,), (length,))
        elif bool(np.asarray(cond)[length:].any()):
            raise ValueError(f"jnp.compress: condition has a True entry past the array's "
                             f"length {length}{_where(None)}")
        else:
            cond = lax.slice(cond, (0,), (length,))
    elif m < length:
        cond = concatenate([cond, lax.full((length - m,), False, np.dtype(np.bool_))])
    (idx,) = nonzero(cond, size=size, fill_value=0)
    picked = take(a, idx, axis=0, mode="clip") if length else a[:get_aval(idx).shape[0]]
    if size is not None:
        count = get_aval(idx).shape[0]
        valid = lax.broadcasted_iota(np.dtype(np.int32), (count,), 0) < \
            convert(lax.reduce_sum(convert(cond, np.dtype(np.int32)), (0,)), np.dtype(np.int32))
        valid = lax.reshape(valid, (count,) + (1,) * (get_aval(picked).ndim - 1))
        picked = where(valid, picked, convert(asarray(fill_value), get_aval(picked).dtype))
    return moveaxis(picked, 0, axis)


def extract(condition: Any, arr: Any, *, size: Optional[int] = None, fill_value: Any = 0) -> Any:
    """The elements of ``arr`` (flattened) where ``condition`` (flattened) is nonzero; under
    ``jit`` pass ``size=`` (the result is cut or filled with ``fill_value`` to it).

    Example::

        jnp.extract(jnp.array([[1, 0], [0, 1]]), jnp.arange(4).reshape(2, 2))   # [0, 3]
    """
    from ._creation import asarray
    from ._shape import ravel
    from ._util import check_arraylike
    check_arraylike("extract", condition, arr)
    return compress(ravel(asarray(condition)), ravel(asarray(arr)), size=size,
                    fill_value=fill_value)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """``arr`` with its entries where ``mask`` is True (in row-major order) replaced by
    ``vals``, repeated as often as needed, as ``numpy.place``; arrays are immutable, so pass
    ``inplace=False``. Works under jit (the positions are a running count of ``mask``).

    Example::

        jnp.place(jnp.arange(6), jnp.arange(6) % 2 == 0, jnp.array([9, 8]), inplace=False)
        # [9, 1, 8, 3, 9, 5]
    """
    from ._creation import asarray
    from ._shape import ravel, reshape
    from ._ufuncs import remainder, where
    from ._util import check_arraylike
    from ._windows import cumsum
    _require_not_inplace("place", inplace)
    check_arraylike("place", arr, mask, vals)
    arr = asarray(arr)
    shape = get_aval(arr).shape
    flat_mask = ravel(asarray(mask))
    if get_aval(flat_mask).shape[0] != get_aval(ravel(arr)).shape[0]:
        raise ValueError(f"place: mask and data must be the same size, got {_shape_of(mask)} "
                         f"and {shape}{_where(None)}")
    flat_vals = ravel(asarray(vals))
    n_vals = get_aval(flat_vals).shape[0]
    if n_vals == 0:
        raise ValueError("Cannot place values from an empty array")
    flat_mask = flat_mask.astype(bool)
    # The k-th True position takes vals[k % len(vals)].
    k = cumsum(flat_mask.astype(dtypes.canonicalize_dtype(int))) - 1
    picked = flat_vals[remainder(k, n_vals)]
    out = where(flat_mask, picked.astype(get_aval(arr).dtype), ravel(arr))
    return reshape(out, shape)


def _shape_of(x: Any) -> tuple:
    return tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)
