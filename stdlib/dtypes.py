"""Dtypes, x64 canonicalisation and JAX's type promotion with weak types.

Values from Python scalars are *weakly typed*: they take the other operand's dtype where it
can hold them, so ``int8_array + 1`` stays int8 and ``bfloat16_array + 2.0`` stays bfloat16.
Promotion is the least upper bound in JAX's type lattice, where Python scalars sit at the
weak nodes ``i*``, ``f*`` and ``c*``::

    result_type(np.int8, 1)                               # int8
    result_type(np.int32, 5.0, return_weak_type_flag=True)  # (float32, True)
    promote_types(np.uint8, np.int8)                      # int16

Without ``config.enable_x64`` every 64-bit dtype becomes its 32-bit counterpart.
"""
from __future__ import annotations

import functools
from typing import Any

import ml_dtypes
import numpy as np

from . import config

__all__ = [
    "bfloat16", "canonicalize_dtype", "float0", "dtype_short_name", "finfo", "iinfo", "is_weakly_typed",
    "issubdtype", "promote_types", "python_scalar_dtype", "result_type",
]

bfloat16 = ml_dtypes.bfloat16  # scalar type; np.dtype(bfloat16) is the dtype

# JAX's dtype of the tangents of integer and boolean values (``jax.dtypes.float0``): a
# zero-size structured dtype, so that such tangents hold no data. grad(allow_int=True) and
# vjp give NumPy arrays of it (``float0_zeros``) for integer and boolean inputs, as JAX.
float0 = np.dtype([("float0", np.void, 0)])


def _float0_zeros(shape: tuple) -> np.ndarray:
    """The (co)tangent of an integer or boolean value of this shape, as JAX gives it: a NumPy
    array of dtype float0 (it holds no data).

    Example::

        dtypes._float0_zeros((3,)).dtype == dtypes.float0   # True
    """
    return np.zeros(tuple(shape), float0)


def _is_float0(x: Any) -> bool:
    """Whether ``x`` is a float0 array (an integer value's (co)tangent).

    Example::

        dtypes._is_float0(pyree.grad(lambda x, n: x * n, 1, allow_int=True)(1.0, 2))   # True
    """
    return isinstance(x, np.ndarray) and x.dtype == float0

_BOOL = np.dtype(np.bool_)
_U8, _U16, _U32, _U64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_I8, _I16, _I32, _I64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
_BF16 = np.dtype(bfloat16)
_F16, _F32, _F64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
_C64, _C128 = np.dtype(np.complex64), np.dtype(np.complex128)

_TO_32_BIT = {_F64: _F32, _I64: _I32, _U64: _U32, _C128: _C64}

# config.enable_x64 costs a module __getattr__ call (~0.4 us); keep a copy that
# config.update refreshes, since promotion runs for every traced operation.
_x64 = bool(config.enable_x64)


def _on_config_update(name: str, value: Any) -> None:
    global _x64
    if name == "enable_x64":
        _x64 = bool(value)


config.on_update(_on_config_update)
# Default dtype of each kind of number, as (without x64, with x64).
_DEFAULTS = {"b": (_BOOL, _BOOL), "i": (_I32, _I64), "u": (_U32, _U64),
             "f": (_F32, _F64), "c": (_C64, _C128)}
_PYTHON_KINDS = {bool: "b", int: "i", float: "f", complex: "c"}

# The weak nodes of the lattice: where Python scalars (and weakly typed arrays) enter.
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "i*", "f*", "c*"
_WEAK_NODE_KIND = {_WEAK_INT: "i", _WEAK_FLOAT: "f", _WEAK_COMPLEX: "c"}
_LATTICE_EDGES = {  # node -> the nodes directly above it
    _BOOL: [_WEAK_INT],
    _WEAK_INT: [_U8, _I8],
    _U8: [_U16, _I16], _U16: [_U32, _I32], _U32: [_U64, _I64], _U64: [_WEAK_FLOAT],
    _I8: [_I16], _I16: [_I32], _I32: [_I64], _I64: [_WEAK_FLOAT],
    _WEAK_FLOAT: [_BF16, _F16, _WEAK_COMPLEX],
    _BF16: [_F32], _F16: [_F32], _F32: [_F64, _C64], _F64: [_C128],
    _WEAK_COMPLEX: [_C64], _C64: [_C128], _C128: [],
}


def _upper_bounds() -> dict[Any, frozenset]:
    """Every node -> the set of nodes at or above it."""
    above: dict[Any, frozenset] = {}

    def visit(node: Any) -> frozenset:
        if node not in above:
            above[node] = frozenset({node}).union(*(visit(n) for n in _LATTICE_EDGES[node]))
        return above[node]

    for node in _LATTICE_EDGES:
        visit(node)
    return above


def _join_table() -> dict[tuple, Any]:
    """(a, b) -> least upper bound, for every pair of lattice nodes."""
    above = _upper_bounds()
    table = {}
    for a in above:
        for b in above:
            common = above[a] & above[b]
            # The least common bound is the one every other common bound lies above.
            least = [n for n in common if common <= above[n]]
            assert len(least) == 1, (a, b, least)
            table[a, b] = least[0]
    return table


_JOIN = _join_table()
_LATTICE_DTYPES = frozenset(node for node in _LATTICE_EDGES if isinstance(node, np.dtype))


_ML_FLOAT_TYPES = frozenset(
    getattr(ml_dtypes, name) for name in (
        "bfloat16", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4",
        "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
        "float8_e5m2fnuz", "float8_e8m0fnu")
    if hasattr(ml_dtypes, name))
_ML_SIGNED_INT_TYPES = frozenset(
    getattr(ml_dtypes, n) for n in ("int1", "int2", "int4") if hasattr(ml_dtypes, n))
_ML_UNSIGNED_INT_TYPES = frozenset(
    getattr(ml_dtypes, n) for n in ("uint1", "uint2", "uint4") if hasattr(ml_dtypes, n))


def _kind(dtype: np.dtype) -> str:
    """numpy's kind letter, with ml_dtypes' types (kind 'V') counted as 'f', 'i' or 'u'."""
    if dtype.kind != "V":
        return dtype.kind
    scalar_type = dtype.type
    if scalar_type in _ML_FLOAT_TYPES:
        return "f"
    if scalar_type in _ML_SIGNED_INT_TYPES:
        return "i"
    return "u" if scalar_type in _ML_UNSIGNED_INT_TYPES else "V"


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """The dtype pyree uses for ``dtype``: without x64, 64-bit types become 32-bit ones.

    Python's ``int``, ``float`` and ``complex`` mean the default types. Example::

        canonicalize_dtype(np.float64)   # float32 (float64 with config.enable_x64)
        canonicalize_dtype(int)          # int32 (int64 with config.enable_x64)
    """
    x64 = _x64
    if isinstance(dtype, type) and dtype in _PYTHON_KINDS:
        return _DEFAULTS[_PYTHON_KINDS[dtype]][x64]
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc" and dtype != bfloat16:
        raise TypeError(f"pyree supports number and bool dtypes, got dtype {dtype}")
    return dtype if x64 else _TO_32_BIT.get(dtype, dtype)


def python_scalar_dtype(x: Any) -> np.dtype:
    """The dtype of a Python scalar: bool, or the default int/float/complex type.

    Example: ``python_scalar_dtype(1.0)`` is float32 (float64 with x64).
    """
    for python_type, kind in _PYTHON_KINDS.items():  # bool first: bool is an int subclass
        if isinstance(x, python_type) and not isinstance(x, np.generic):
            return _DEFAULTS[kind][_x64]
    if isinstance(x, np.generic):
        return canonicalize_dtype(x.dtype)
    raise TypeError(f"python_scalar_dtype: {type(x).__name__} is not a Python scalar")


def is_weakly_typed(x: Any) -> bool:
    """True for Python int/float/complex values and objects whose ``weak_type`` is True.

    Example: ``is_weakly_typed(1.0) is True``; ``is_weakly_typed(True) is False``.
    """
    if type(x) in _WEAK_PYTHON_TYPES:
        return True
    weak = getattr(x, "weak_type", False)
    return weak is True or weak is np.True_  # not a truthy property object of a class


_WEAK_PYTHON_TYPES = (int, float, complex)


def _dtype_and_weak(x: Any, x64: bool) -> tuple[np.dtype, bool]:
    """Canonical dtype of a result_type argument, and whether it is weakly typed."""
    python_kind = _PYTHON_KINDS.get(type(x))
    if python_kind is not None:  # exact types: numpy's float64 scalar subclasses float
        return _DEFAULTS[python_kind][x64], python_kind != "b"
    dtype = getattr(x, "dtype", None)
    if dtype in _LATTICE_DTYPES and not isinstance(x, type):  # fast path: arrays, tracers
        weak = getattr(x, "weak_type", False)
        if weak is True or weak is np.True_:
            return dtype, True
        return (dtype if x64 else _TO_32_BIT.get(dtype, dtype)), False
    if isinstance(x, np.dtype):
        dtype, weak = x, False
    elif isinstance(x, type):  # int, np.float32, bfloat16, ...; Python's types are weak
        python_kind = _PYTHON_KINDS.get(x)
        if python_kind is not None:
            return _DEFAULTS[python_kind][x64], python_kind != "b"
        dtype, weak = np.dtype(x), False
    else:
        dtype = getattr(x, "dtype", None)
        if dtype is None:
            dtype, weak = np.dtype(x), False
        else:
            dtype, weak = np.dtype(dtype), is_weakly_typed(x)
    if not x64 and not weak:  # like JAX, weak dtypes are joined as they are
        dtype = _TO_32_BIT.get(dtype, dtype)
    return dtype, weak


def _weak_node(dtype: np.dtype) -> Any:
    """The lattice node of a weakly typed value of ``dtype``."""
    kind = _kind(dtype)
    if kind in "iu":
        return _WEAK_INT
    if kind == "f":
        return _WEAK_FLOAT
    if kind == "c":
        return _WEAK_COMPLEX
    return dtype  # weak bool promotes like bool


def _join(nodes: list) -> Any:
    try:
        return functools.reduce(lambda a, b: _JOIN[a, b], nodes)
    except KeyError:
        names = ", ".join(str(n) for n in dict.fromkeys(nodes))
        raise TypeError(f"no type promotion rule for dtypes {names}") from None


@functools.lru_cache(maxsize=4096)
def _promote(typed: tuple[tuple[np.dtype, bool], ...], x64: bool) -> tuple[np.dtype, bool]:
    """result_type of canonical (dtype, weak) pairs -> (dtype, weak)."""
    dtypes = [dtype for dtype, _ in typed]
    if len(typed) == 1:
        dtype, weak = typed[0]
    elif len(set(dtypes)) == 1 and not all(w for _, w in typed):
        dtype, weak = dtypes[0], False  # also covers dtypes outside the lattice
    else:
        # All weak: join the dtypes themselves and stay weak (weak int8 + weak float16 ->
        # weak float). Otherwise weak values enter at their weak node.
        all_weak = all(w for _, w in typed)
        node = _join(dtypes if all_weak else [_weak_node(d) if w else d for d, w in typed])
        if node in _WEAK_NODE_KIND:
            return _DEFAULTS[_WEAK_NODE_KIND[node]][x64], True
        dtype, weak = node, all_weak
    if dtype == _BOOL:
        return _BOOL, False
    if weak and _kind(dtype) in _DEFAULTS:
        # A weak result has the default dtype of its kind (weak uint8 -> weak uint32).
        return _DEFAULTS[_kind(dtype)][x64], True
    if weak:  # outside the lattice, e.g. a weak float8: keep it
        return dtype, True
    return (dtype if x64 else _TO_32_BIT.get(dtype, dtype)), False


def result_type(*args: Any, return_weak_type_flag: bool = False
                ) -> np.dtype | tuple[np.dtype, bool]:
    """The dtype of an operation on ``args``, by JAX's promotion rules.

    Arguments may be dtypes or dtype-likes, Python scalars or Python's ``int``/``float``/
    ``complex`` (weak), numpy arrays and scalars (strong), or objects with a ``dtype`` and
    optionally a ``weak_type``. Example::

        result_type(np.int8, 1)                            # int8
        result_type(np.uint8, np.int8)                     # int16
        result_type(np.float16, bfloat16)                  # float32
        result_type(2, 3.0, return_weak_type_flag=True)    # (float32, True)
    """
    if not args:
        raise TypeError("result_type needs at least one argument")
    x64 = _x64
    dtype, weak = _promote(tuple([_dtype_and_weak(x, x64) for x in args]), x64)
    return (dtype, weak) if return_weak_type_flag else dtype


def promote_types(a: Any, b: Any) -> np.dtype:
    """The dtype two strongly typed operands of dtypes ``a`` and ``b`` promote to.

    Python types mean their default dtypes here (no weak typing). Example::

        promote_types(np.uint8, np.int8)      # int16
        promote_types(bfloat16, np.float16)   # float32
    """
    return _promote(((canonicalize_dtype(a), False), (canonicalize_dtype(b), False)), _x64)[0]


def _as_dtype(x: Any) -> np.dtype:
    """np.dtype of a dtype-like or array; Python types give the default dtypes."""
    if isinstance(x, type) and x in _PYTHON_KINDS:
        return canonicalize_dtype(x)
    dtype = getattr(x, "dtype", None)
    return np.dtype(x if dtype is None or isinstance(x, type) else dtype)


_ABSTRACT_FLOAT_PARENTS = (np.floating, np.inexact, np.number, np.generic)
_ABSTRACT_SIGNED_PARENTS = (np.signedinteger, np.integer, np.number, np.generic)
_ABSTRACT_UNSIGNED_PARENTS = (np.unsignedinteger, np.integer, np.number, np.generic)


def issubdtype(a: Any, b: Any) -> bool:
    """``np.issubdtype`` that also places ml_dtypes' types (bfloat16, float8s, int4) under
    ``np.floating`` / ``np.signedinteger`` / ``np.unsignedinteger``.

    Example: ``issubdtype(bfloat16, np.floating) is True``.
    """
    if isinstance(a, type) and a in _PYTHON_KINDS:
        return np.issubdtype(a, b)
    scalar_type = _as_dtype(a).type
    for ml_types, parents in ((_ML_FLOAT_TYPES, _ABSTRACT_FLOAT_PARENTS),
                              (_ML_SIGNED_INT_TYPES, _ABSTRACT_SIGNED_PARENTS),
                              (_ML_UNSIGNED_INT_TYPES, _ABSTRACT_UNSIGNED_PARENTS)):
        if scalar_type in ml_types:
            if isinstance(b, type) and b in _ABSTRACT_TYPES:
                return b in parents
            return _as_dtype(b).type is scalar_type
    return np.issubdtype(a, b)


_ABSTRACT_TYPES = frozenset((np.generic, np.number, np.integer, np.signedinteger,
                             np.unsignedinteger, np.inexact, np.floating, np.complexfloating,
                             np.character, np.flexible))


def finfo(dtype: Any) -> ml_dtypes.finfo:
    """Machine limits of a floating dtype, bfloat16 and the other ml_dtypes floats included.

    Example: ``finfo(bfloat16).eps == 2 ** -7``.
    """
    return ml_dtypes.finfo(_as_dtype(dtype))


def iinfo(dtype: Any) -> ml_dtypes.iinfo:
    """Machine limits of an integer dtype, int4 and the other ml_dtypes ints included.

    Example: ``iinfo(np.int8).max == 127``.
    """
    return ml_dtypes.iinfo(_as_dtype(dtype))


_SHORT_NAMES = {
    _BOOL: "bool", _U8: "u8", _U16: "u16", _U32: "u32", _U64: "u64",
    _I8: "i8", _I16: "i16", _I32: "i32", _I64: "i64",
    _BF16: "bf16", _F16: "f16", _F32: "f32", _F64: "f64", _C64: "c64", _C128: "c128",
}


def dtype_short_name(dtype: Any) -> str:
    """Short name used when printing IR: ``f32``, ``bf16``, ``i8``, ``u32``, ``bool``, ``c64``.

    Example: ``dtype_short_name(np.float32) == "f32"``. Other dtypes give numpy's name.
    """
    dtype = np.dtype(dtype)
    return _SHORT_NAMES.get(dtype) or dtype.name
