"""NumPy-style operators and methods, attached to both ``Array`` and ``Tracer`` so that code
reads the same inside and outside ``jit``."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from pyree.runtime.array import Array
from pyree.transpiler.core.trace import Tracer, get_aval

from . import (_creation, _indexing, _linalg, _reductions, _shape, _sorting, _ufuncs,
               _windows)
from ._util import ARRAY_TYPES, PY_SCALARS, convert, requested_dtype


def _operand_ok(other: Any) -> bool:
    return isinstance(other, ARRAY_TYPES + PY_SCALARS)


def _binary(fn: Callable, reflected: bool = False) -> Callable:
    if reflected:
        def method(self: Any, other: Any) -> Any:
            if not _operand_ok(other):
                return NotImplemented
            return fn(other, self)
    else:
        def method(self: Any, other: Any) -> Any:
            if not _operand_ok(other):
                return NotImplemented
            return fn(self, other)
    method.__name__ = fn.__name__
    return method


def _reshape(self: Any, *shape: Any, order: str = "C") -> Any:
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``."""
    if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
        shape = shape[0]
    return _shape.reshape(self, shape, order)


def _transpose(self: Any, *axes: Any) -> Any:
    """``x.transpose()``, ``x.transpose(1, 0)`` or ``x.transpose((1, 0))``."""
    if not axes:
        return _shape.transpose(self)
    if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
        axes = axes[0]
    return _shape.transpose(self, axes)


def _astype(self: Any, dtype: Any, copy: bool = False) -> Any:
    """``x`` converted to ``dtype``."""
    return convert(self, requested_dtype(dtype))


def _iter(self: Any):
    shape = get_aval(self).shape
    if not shape:
        raise TypeError("iteration over a 0-d array")
    for i in range(shape[0]):
        yield _indexing.getitem(self, i)


def _operator_round(self: Any, ndigits: Any = None) -> Any:
    """``round(x)`` gives integers, like Python's ``round`` of a float (and JAX's)."""
    out = _ufuncs.round(self, ndigits or 0)
    return out if ndigits is not None else convert(out, requested_dtype(int))


def _divmod(self: Any, other: Any) -> Any:
    return _ufuncs.floor_divide(self, other), _ufuncs.remainder(self, other)


def _rdivmod(self: Any, other: Any) -> Any:
    return _ufuncs.floor_divide(other, self), _ufuncs.remainder(other, self)


def _method_searchsorted(self: Any, v: Any, side: str = "left", sorter: Any = None) -> Any:
    """``x.searchsorted(v)``: where ``v`` would go in the sorted ``x``."""
    return _sorting.searchsorted(self, v, side=side, sorter=sorter)


_METHODS: dict[str, Any] = {
    "__add__": _binary(_ufuncs.add), "__radd__": _binary(_ufuncs.add, True),
    "__sub__": _binary(_ufuncs.subtract), "__rsub__": _binary(_ufuncs.subtract, True),
    "__mul__": _binary(_ufuncs.multiply), "__rmul__": _binary(_ufuncs.multiply, True),
    "__truediv__": _binary(_ufuncs.true_divide),
    "__rtruediv__": _binary(_ufuncs.true_divide, True),
    "__floordiv__": _binary(_ufuncs.floor_divide),
    "__rfloordiv__": _binary(_ufuncs.floor_divide, True),
    "__mod__": _binary(_ufuncs.remainder), "__rmod__": _binary(_ufuncs.remainder, True),
    "__divmod__": _divmod, "__rdivmod__": _rdivmod,
    "__pow__": _binary(_ufuncs.power), "__rpow__": _binary(_ufuncs.power, True),
    "__matmul__": _binary(_linalg.matmul), "__rmatmul__": _binary(_linalg.matmul, True),
    "__and__": _binary(_ufuncs.bitwise_and), "__rand__": _binary(_ufuncs.bitwise_and, True),
    "__or__": _binary(_ufuncs.bitwise_or), "__ror__": _binary(_ufuncs.bitwise_or, True),
    "__xor__": _binary(_ufuncs.bitwise_xor), "__rxor__": _binary(_ufuncs.bitwise_xor, True),
    "__lshift__": _binary(_ufuncs.left_shift), "__rlshift__": _binary(_ufuncs.left_shift, True),
    "__rshift__": _binary(_ufuncs.right_shift),
    "__rrshift__": _binary(_ufuncs.right_shift, True),
    "__eq__": _binary(_ufuncs.equal), "__ne__": _binary(_ufuncs.not_equal),
    "__lt__": _binary(_ufuncs.less), "__le__": _binary(_ufuncs.less_equal),
    "__gt__": _binary(_ufuncs.greater), "__ge__": _binary(_ufuncs.greater_equal),
    "__neg__": _ufuncs.negative, "__pos__": _ufuncs.positive, "__abs__": _ufuncs.absolute,
    "__invert__": _ufuncs.invert, "__round__": _operator_round,
    "__getitem__": _indexing.getitem,
    "at": property(_indexing._IndexUpdateHelper, doc="Functional updates: x.at[i].set(v)."),
    "T": property(lambda self: _shape.transpose(self), doc="The transpose."),
    "mT": property(lambda self: _shape.swapaxes(self, -1, -2), doc="Matrix transpose."),
    "reshape": _reshape, "transpose": _transpose, "astype": _astype,
    "ravel": _shape.ravel, "flatten": _shape.ravel, "squeeze": _shape.squeeze,
    "swapaxes": _shape.swapaxes,
    "sum": _reductions.sum, "prod": _reductions.prod, "mean": _reductions.mean,
    "var": _reductions.var, "std": _reductions.std, "max": _reductions.max,
    "min": _reductions.min, "argmax": _reductions.argmax, "argmin": _reductions.argmin,
    "all": _reductions.all, "any": _reductions.any,
    "clip": _ufuncs.clip, "round": _ufuncs.round, "dot": _linalg.dot,
    "take": _indexing.take,
    "cumsum": _windows.cumsum, "cumprod": _windows.cumprod,
    "sort": _sorting.sort, "argsort": _sorting.argsort, "searchsorted": _method_searchsorted,
    "nonzero": _sorting.nonzero, "diagonal": _creation.diagonal, "trace": _linalg.trace,
    "repeat": _shape.repeat, "ptp": _reductions.ptp,
    "conj": _ufuncs.conj, "conjugate": _ufuncs.conjugate,
    "real": property(_ufuncs.real, doc="The real part."),
    "imag": property(_ufuncs.imag, doc="The imaginary part."),
}


def install() -> None:
    """Attach the methods to Array and Tracer (done once, when pyree.numpy is imported)."""
    for cls in (Array, Tracer):
        for name, method in _METHODS.items():
            setattr(cls, name, method)
        cls.__hash__ = None
    Tracer.__iter__ = _iter
    Array.__iter__ = _iter
