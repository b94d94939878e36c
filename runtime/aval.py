"""The abstract value of an array: what is known without looking at its contents."""
from __future__ import annotations

import math

import numpy as np

from pyree.dtypes import dtype_short_name


class ShapedArray:
    """Shape, dtype and weak type of an array (JAX's ``ShapedArray``).

    ``weak_type`` marks values that came from Python scalars: they take the other operand's
    dtype in promotion (``int8_array + 1`` stays int8). Instances are immutable and hashable,
    so signatures of jitted calls are tuples of them::

        ShapedArray((3, 4), np.dtype("float32"))   # prints as f32[3,4]
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape: tuple, dtype, weak_type: bool = False) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
        """A copy with some fields replaced."""
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak_type(self) -> "ShapedArray":
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def __eq__(self, other) -> bool:
        return self is other or (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return self._hash

    def str_short(self) -> str:
        """``f32[3,4]`` (unknown dimensions print as ``?``)."""
        dims = ",".join("?" if d is None else str(d) for d in self.shape)
        return f"{dtype_short_name(self.dtype)}[{dims}]"

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"

    __str__ = str_short


_interned: dict[ShapedArray, ShapedArray] = {}


def interned(aval: ShapedArray) -> ShapedArray:
    """The one shared instance equal to ``aval``: Arrays made by executables and by
    ``device_put`` carry these, so that looking up a jitted call's signature compares avals by
    identity instead of calling ``__eq__`` (a third of a microsecond per argument)."""
    return _interned.setdefault(aval, aval)
