"""``pyree.numpy``: NumPy's API on pyree arrays, with JAX's semantics (immutable arrays, JAX's
type promotion, float32 by default). Everything is composed from pyree's primitives, so it
works eagerly and under ``jit`` alike::

    import pyree.numpy as jnp
    x = jnp.linspace(0.0, 1.0, 5)
    jnp.sum(jnp.sin(x) ** 2 + jnp.cos(x) ** 2)     # 5.
"""
from __future__ import annotations

import abc as _abc

import numpy as _np

from pyree import dtypes as _dtypes
from pyree.runtime.array import Array as _Array
from pyree.transpiler.core.trace import Tracer as _Tracer

from . import _array_methods
# Each module lists its public functions in __all__.
from ._creation import *  # noqa: F401,F403
from ._indexing import *  # noqa: F401,F403
from ._indexing import getitem as _getitem
from ._linalg import *  # noqa: F401,F403
from ._reductions import *  # noqa: F401,F403
from ._shape import *  # noqa: F401,F403
from ._ufuncs import *  # noqa: F401,F403
from ._sorting import *  # noqa: F401,F403
from ._windows import *  # noqa: F401,F403
from ._misc import *  # noqa: F401,F403
from . import fft, linalg
from ._util import broadcast_shapes

_array_methods.install()


class ndarray(metaclass=_abc.ABCMeta):
    """The type of pyree arrays, for ``isinstance`` checks: both concrete Arrays and the traced
    values seen inside ``jit`` are instances.

    Example::

        isinstance(jnp.ones(3), jnp.ndarray)   # True
    """


ndarray.register(_Array)
ndarray.register(_Tracer)


class _ScalarMeta(type):
    def __call__(cls, value):
        return array(value, dtype=cls.dtype)

    def __instancecheck__(cls, instance):
        return isinstance(instance, _np.generic) and instance.dtype == cls.dtype

    def __repr__(cls):
        return f"<class 'pyree.numpy.{cls.__name__}'>"


def _scalar_type(name: str, dtype) -> type:
    """``jnp.float32``: a dtype usable anywhere NumPy takes one, and callable to make arrays
    (``jnp.float32(3)`` is an Array, as in JAX)."""
    return _ScalarMeta(name, (object,), {"dtype": _np.dtype(dtype), "__doc__":
                                         f"The {name} scalar type. Example: jnp.{name}(1)"})


bool_ = _scalar_type("bool_", _np.bool_)
bool = bool_  # noqa: A001 (jnp.bool, as in JAX and NumPy 2)
int8 = _scalar_type("int8", _np.int8)
int16 = _scalar_type("int16", _np.int16)
int32 = _scalar_type("int32", _np.int32)
int64 = _scalar_type("int64", _np.int64)
uint8 = _scalar_type("uint8", _np.uint8)
uint16 = _scalar_type("uint16", _np.uint16)
uint32 = _scalar_type("uint32", _np.uint32)
uint64 = _scalar_type("uint64", _np.uint64)
float16 = _scalar_type("float16", _np.float16)
bfloat16 = _scalar_type("bfloat16", _dtypes.bfloat16)
float32 = _scalar_type("float32", _np.float32)
float64 = _scalar_type("float64", _np.float64)
complex64 = _scalar_type("complex64", _np.complex64)
complex128 = _scalar_type("complex128", _np.complex128)
int_ = int32
float_ = float32
complex_ = complex64
single = float32
double = float64
csingle = complex64
cdouble = complex128
uint = uint64

dtype = _np.dtype
result_type = _dtypes.result_type
promote_types = _dtypes.promote_types
issubdtype = _dtypes.issubdtype
finfo = _dtypes.finfo
iinfo = _dtypes.iinfo
integer = _np.integer
signedinteger = _np.signedinteger
unsignedinteger = _np.unsignedinteger
floating = _np.floating
inexact = _np.inexact
complexfloating = _np.complexfloating
number = _np.number
generic = _np.generic
character = _np.character
flexible = _np.flexible
object_ = _np.object_

# Host-side helpers that JAX re-exports from NumPy.
can_cast = _np.can_cast
iterable = _np.iterable
printoptions = _np.printoptions
get_printoptions = _np.get_printoptions
set_printoptions = _np.set_printoptions
save = _np.save
savez = _np.savez
s_ = _np.s_
index_exp = _np.index_exp
euler_gamma = _np.euler_gamma

pi = _np.pi
e = _np.e
inf = _np.inf
nan = _np.nan
newaxis = None


def shape(a) -> tuple:
    """The shape of an array or scalar. Example: ``jnp.shape(jnp.ones((2, 3)))`` -> (2, 3)"""
    from pyree.transpiler.core.trace import get_aval
    return get_aval(a).shape if not isinstance(a, (list, tuple)) else _np.shape(a)


def isscalar(element) -> bool:
    """Whether ``element`` is a scalar as JAX counts them: a Python or NumPy scalar (strings
    included), or a pyree or NumPy array of rank 0 (of any dtype).
    Example: ``jnp.isscalar(np.array(1.0))`` -> True"""
    if isinstance(element, (_Array, _Tracer)):
        return len(shape(element)) == 0
    if isinstance(element, _np.ndarray):
        return element.ndim == 0
    return _np.isscalar(element)


def iscomplexobj(x) -> bool:
    """Whether ``x`` has a complex dtype (whatever its values).
    Example: ``jnp.iscomplexobj(jnp.ones(2, jnp.complex64))`` -> True"""
    if isinstance(x, (_Array, _Tracer)):
        from pyree.transpiler.core.trace import get_aval
        return get_aval(x).dtype.kind == "c"
    return _np.iscomplexobj(x)


def isrealobj(x) -> bool:
    """Whether ``x`` does not have a complex dtype. Example: ``jnp.isrealobj(jnp.ones(2))``"""
    return not iscomplexobj(x)


def ndim(a) -> int:
    """The number of dimensions. Example: ``jnp.ndim(jnp.ones((2, 3)))`` -> 2"""
    return len(shape(a))


def size(a) -> int:
    """The number of elements. Example: ``jnp.size(jnp.ones((2, 3)))`` -> 6"""
    return int(_np.prod(shape(a)))


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None) -> str:
    """NumPy's ``array_repr`` of the values of ``arr`` (concrete arrays only).
    Example: ``jnp.array_repr(jnp.ones(2))`` -> 'array([1., 1.], dtype=float32)'"""
    return _np.array_repr(_np.asarray(arr), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None) -> str:
    """NumPy's ``array_str`` of the values of ``a`` (concrete arrays only).
    Example: ``jnp.array_str(jnp.ones(2))`` -> '[1. 1.]'"""
    return _np.array_str(_np.asarray(a), max_line_width, precision, suppress_small)


_ISDTYPE_KINDS = {
    "bool": lambda d: d == _np.bool_,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": lambda d: d.kind == "f" or _dtypes.issubdtype(d, _np.floating),
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iufc" or _dtypes.issubdtype(d, _np.floating),
}


def isdtype(dtype, kind) -> bool:
    """Whether ``dtype`` is of ``kind``: a dtype, one of 'bool', 'signed integer',
    'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric', or a tuple
    of these (the Array API). Example: ``jnp.isdtype(jnp.float32, 'real floating')`` -> True"""
    d = _np.dtype(getattr(dtype, "dtype", dtype))
    for k in (kind if isinstance(kind, tuple) else (kind,)):
        if isinstance(k, str):
            if k not in _ISDTYPE_KINDS:
                raise ValueError(f"jnp.isdtype: unrecognized kind {k!r}; expected one of "
                                 f"{sorted(_ISDTYPE_KINDS)}")
            if _ISDTYPE_KINDS[k](d):
                return True
        elif d == _np.dtype(getattr(k, "dtype", k)):
            return True
    return False
