"""Basic indexing (``x[i, 1:3, ::-1, None, ...]``) and functional updates (``x.at[i].set(v)``).

An index selects, along each axis, an arithmetic progression of positions: one position for an
integer (static, or traced: then it is read at run time), ``count`` positions ``step`` apart for
a slice. Both reading and updating first cut out the *box* spanned by the progression (a
``slice``, or a ``dynamic_slice`` when some index is traced), then stride and reverse inside it.
"""
from __future__ import annotations

__all__: list[str] = []  # take, take_along_axis... join here

import operator
from typing import Any, Callable, Optional

import numpy as np

from pyree import dtypes, lax
from pyree.errors import ConcretizationTypeError
from pyree.runtime.array import Array
from pyree.transpiler import primitives as P
from pyree.transpiler.source import where as _where
from pyree.transpiler.trace import Tracer, get_aval

from ._util import broadcast_to_shape, convert, typed_scalar


class _Axis:
    """How one axis of the operand is indexed."""

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


def _is_int_scalar(x: Any) -> bool:
    if isinstance(x, (bool, np.bool_)):
        return False
    return isinstance(x, (int, np.integer))


def _parse(shape: tuple, index: Any) -> tuple[list[_Axis], list[int]]:
    """Per-axis selections, and the result positions of ``None`` (new) axes."""
    if not isinstance(index, tuple):
        index = (index,)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    if consumed > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but "
                         f"{consumed} were indexed{_where(None)}")
    expanded = []
    for i in index:
        if i is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - consumed))
        else:
            expanded.append(i)
    if Ellipsis not in index:
        expanded.extend([slice(None)] * (len(shape) - consumed))

    axes: list[_Axis] = []
    new_axes: list[int] = []
    out_pos = 0
    for entry in expanded:
        if entry is None:
            new_axes.append(out_pos)
            out_pos += 1
            continue
        dim = shape[len(axes)]
        if _is_int_scalar(entry):
            i = int(entry)
            if not -dim <= i < dim:
                raise IndexError(f"index {i} is out of bounds for axis {len(axes)} with size "
                                 f"{dim}{_where(None)}")
            axes.append(_Axis(i % dim, 1, 1, False, False))
        elif isinstance(entry, slice):
            start, stop, step = (_static_slice_part(p) for p in (entry.start, entry.stop,
                                                                   entry.step))
            start, stop, step = slice(start, stop, step).indices(dim)
            count = len(range(start, stop, step))
            low = start if step > 0 else (start + (count - 1) * step if count else 0)
            axes.append(_Axis(low, count, step, False, True))
            out_pos += 1
        elif isinstance(entry, (Tracer, Array)) and entry.ndim == 0 and \
                entry.dtype.kind in "iu":
            axes.append(_Axis(_normalize_dynamic(entry, dim), 1, 1, True, False))
        elif isinstance(entry, np.ndarray) and entry.ndim == 0 and entry.dtype.kind in "iu":
            i = int(entry)
            if not -dim <= i < dim:
                raise IndexError(f"index {i} is out of bounds for axis {len(axes)} with size "
                                 f"{dim}{_where(None)}")
            axes.append(_Axis(i % dim, 1, 1, False, False))
        else:
            kind = type(entry).__name__
            raise IndexError(
                f"pyree supports basic indexing (integers, slices, None, ...) and integer "
                f"scalars computed at run time; got an index of type {kind}"
                f"{'' if not hasattr(entry, 'shape') else f' with shape {entry.shape}'}. "
                f"Array (advanced) and boolean-mask indexing are not available yet; use "
                f"jnp.where for masks{_where(None)}")
    return axes, new_axes


def _static_slice_part(p: Any) -> Optional[int]:
    if p is None:
        return None
    if isinstance(p, Tracer):
        raise ConcretizationTypeError(
            f"slice bounds must be static: a traced value decides the shape of the result. "
            f"Use lax.dynamic_slice with a static size instead{_where(None)}")
    return operator.index(p)


def _normalize_dynamic(index: Any, dim: int) -> Any:
    """A traced integer index as int32, with negative values counted from the end."""
    int_t = dtypes.canonicalize_dtype(int)
    index = convert(index, int_t)
    if get_aval(index).dtype.kind == "u":
        return index
    negative = P.lt_p.bind(index, typed_scalar(0, int_t))
    return P.select_p.bind(negative, P.add_p.bind(index, typed_scalar(dim, int_t)), index)


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


def getitem(x: Any, index: Any) -> Any:
    """``x[index]`` for basic indices.

    Example::

        jnp.arange(10)[2:8:2]   # [2, 4, 6]
    """
    aval = get_aval(x)
    axes, new_axes = _parse(aval.shape, index)
    # Reverse the whole operand first, then cut the box out of it: under jit IREE fails to
    # compile some reverses of slices (LLVM translation of an unrealized_conversion_cast), e.g.
    # lax.rev(x[2:9:3], (0,)) or lax.rev(m[:, :, 1:2], (0,)).
    reversed_axes = tuple(i for i, a in enumerate(axes) if a.step < 0 and a.count > 1)
    if reversed_axes:
        x = lax.rev(x, reversed_axes)
        axes = [_Axis(aval.shape[i] - a.start - a.span, a.count, -a.step, a.dynamic, a.keep)
                if i in reversed_axes else a for i, a in enumerate(axes)]
    y = _box(x, axes)
    if any(abs(a.step) > 1 for a in axes):
        span = [a.span for a in axes]
        y = lax.slice(y, [0] * len(axes), span, [abs(a.step) for a in axes])
    shape = [a.count for a in axes if a.keep]
    for pos in new_axes:
        shape.insert(pos, 1)
    return lax.reshape(y, tuple(shape))


def _update(x: Any, index: Any, values: Any, combine: Optional[Callable]) -> Any:
    """``x`` with ``x[index]`` replaced by ``combine(x[index], values)`` (or by ``values``)."""
    aval = get_aval(x)
    axes, new_axes = _parse(aval.shape, index)
    values = convert(values, aval.dtype, aval.weak_type)
    # Values broadcast to the shape x[index] has, then lose the new axes and regain the axes
    # integer indices removed, giving one entry per selected position.
    indexed = [a.count for a in axes if a.keep]
    for pos in new_axes:
        indexed.insert(pos, 1)
    values = broadcast_to_shape(values, tuple(indexed))
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
        new = P.select_p.bind(mask, new, old)
    else:
        new = values if combine is None else combine(old, values)
    dynamic = [a for a in axes if a.dynamic]
    if dynamic:
        # Updates at run-time indices out of bounds are dropped (as in JAX).
        int_t = dtypes.canonicalize_dtype(int)
        inside = None
        for a, dim in zip(axes, aval.shape):
            if a.dynamic:
                ok = P.and_p.bind(P.ge_p.bind(a.start, typed_scalar(0, int_t)),
                                  P.lt_p.bind(a.start, typed_scalar(dim, int_t)))
                inside = ok if inside is None else P.and_p.bind(inside, ok)
        new = P.select_p.bind(inside, new, old)
    if old is x:  # the box is the whole array
        return new
    int_t = dtypes.canonicalize_dtype(int)
    starts = [a.start if a.dynamic else typed_scalar(a.start, int_t) for a in axes]
    return lax.dynamic_update_slice(x, new, starts)


class _IndexUpdateRef:
    """``x.at[index]``: functional updates of the selected elements."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any) -> None:
        self.array = array
        self.index = index

    def get(self, **kwargs: Any) -> Any:
        """``x[index]``. Example: ``x.at[0].get()``"""
        return getitem(self.array, self.index)

    def set(self, values: Any, **kwargs: Any) -> Any:
        """A copy of x with ``x[index] = values``. Example: ``x.at[0].set(5.0)``"""
        return _update(self.array, self.index, values, None)

    def add(self, values: Any, **kwargs: Any) -> Any:
        """A copy of x with ``x[index] += values``. Example: ``x.at[1:].add(1.0)``"""
        return _update(self.array, self.index, values, P.add_p.bind)

    def subtract(self, values: Any, **kwargs: Any) -> Any:
        """A copy of x with ``x[index] -= values``. Example: ``x.at[1:].subtract(1.0)``"""
        return _update(self.array, self.index, values, P.sub_p.bind)

    def multiply(self, values: Any, **kwargs: Any) -> Any:
        """A copy of x with ``x[index] *= values``. Example: ``x.at[::2].multiply(2.0)``"""
        return _update(self.array, self.index, values, P.mul_p.bind)

    mul = multiply

    def divide(self, values: Any, **kwargs: Any) -> Any:
        """A copy of x with ``x[index] /= values``. Example: ``x.at[0].divide(2.0)``"""
        return _update(self.array, self.index, values, P.div_p.bind)

    def power(self, values: Any, **kwargs: Any) -> Any:
        """A copy of x with ``x[index] **= values``. Example: ``x.at[0].power(2.0)``"""
        return _update(self.array, self.index, values, P.pow_p.bind)

    def min(self, values: Any, **kwargs: Any) -> Any:
        """A copy of x with ``x[index] = minimum(x[index], values)``.
        Example: ``x.at[:2].min(0.0)``"""
        return _update(self.array, self.index, values, P.min_p.bind)

    def max(self, values: Any, **kwargs: Any) -> Any:
        """A copy of x with ``x[index] = maximum(x[index], values)``.
        Example: ``x.at[:2].max(0.0)``"""
        return _update(self.array, self.index, values, P.max_p.bind)

    def apply(self, func: Callable, **kwargs: Any) -> Any:
        """A copy of x with ``x[index] = func(x[index])``. Example: ``x.at[0].apply(jnp.sin)``"""
        return _update(self.array, self.index, 0, lambda old, _: func(old))


class _IndexUpdateHelper:
    """The ``.at`` property: ``x.at[index].set(values)`` and friends."""

    __slots__ = ("array",)

    def __init__(self, array: Any) -> None:
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"
