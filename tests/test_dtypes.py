"""Tests of pyree.dtypes: canonicalisation, short names and JAX's type promotion."""
import numpy as np
import pytest

from pyree import config, dtypes
from pyree.dtypes import bfloat16

# Generated once with jax 0.10.2: jax.dtypes.result_type(a, b, return_weak_type_flag=True)
# for every pair; rows are the first argument, columns the second. Strong dtypes are passed
# as np.dtype, "int"/"float"/"complex" as the Python scalars 1, 1.0, 1j. A trailing "*" marks
# a weakly typed result.
_JAX_PROMOTION_X64_OFF = {
    #        bool    u8   u16   u32   u64    i8   i16   i32   i64  bf16   f16   f32   f64   c64  c128   int float complex
    'bool'   : " bool    u8   u16   u32   u32    i8   i16   i32   i32  bf16   f16   f32   f32   c64   c64  i32*  f32*  c64*",
    'u8'     : "   u8    u8   u16   u32   u32   i16   i16   i32   i32  bf16   f16   f32   f32   c64   c64    u8  f32*  c64*",
    'u16'    : "  u16   u16   u16   u32   u32   i32   i32   i32   i32  bf16   f16   f32   f32   c64   c64   u16  f32*  c64*",
    'u32'    : "  u32   u32   u32   u32   u32   i32   i32   i32   i32  bf16   f16   f32   f32   c64   c64   u32  f32*  c64*",
    'u64'    : "  u32   u32   u32   u32   u32   i32   i32   i32   i32  bf16   f16   f32   f32   c64   c64   u32  f32*  c64*",
    'i8'     : "   i8   i16   i32   i32   i32    i8   i16   i32   i32  bf16   f16   f32   f32   c64   c64    i8  f32*  c64*",
    'i16'    : "  i16   i16   i32   i32   i32   i16   i16   i32   i32  bf16   f16   f32   f32   c64   c64   i16  f32*  c64*",
    'i32'    : "  i32   i32   i32   i32   i32   i32   i32   i32   i32  bf16   f16   f32   f32   c64   c64   i32  f32*  c64*",
    'i64'    : "  i32   i32   i32   i32   i32   i32   i32   i32   i32  bf16   f16   f32   f32   c64   c64   i32  f32*  c64*",
    'bf16'   : " bf16  bf16  bf16  bf16  bf16  bf16  bf16  bf16  bf16  bf16   f32   f32   f32   c64   c64  bf16  bf16   c64",
    'f16'    : "  f16   f16   f16   f16   f16   f16   f16   f16   f16   f32   f16   f32   f32   c64   c64   f16   f16   c64",
    'f32'    : "  f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   c64   c64   f32   f32   c64",
    'f64'    : "  f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   c64   c64   f32   f32   c64",
    'c64'    : "  c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64",
    'c128'   : "  c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64",
    'int'    : " i32*    u8   u16   u32   u32    i8   i16   i32   i32  bf16   f16   f32   f32   c64   c64  i32*  f32*  c64*",
    'float'  : " f32*  f32*  f32*  f32*  f32*  f32*  f32*  f32*  f32*  bf16   f16   f32   f32   c64   c64  f32*  f32*  c64*",
    'complex': " c64*  c64*  c64*  c64*  c64*  c64*  c64*  c64*  c64*   c64   c64   c64   c64   c64   c64  c64*  c64*  c64*",
}
_JAX_PROMOTION_X64_ON = {
    #        bool    u8   u16   u32   u64    i8   i16   i32   i64  bf16   f16   f32   f64   c64  c128   int float complex
    'bool'   : " bool    u8   u16   u32   u64    i8   i16   i32   i64  bf16   f16   f32   f64   c64  c128  i64*  f64* c128*",
    'u8'     : "   u8    u8   u16   u32   u64   i16   i16   i32   i64  bf16   f16   f32   f64   c64  c128    u8  f64* c128*",
    'u16'    : "  u16   u16   u16   u32   u64   i32   i32   i32   i64  bf16   f16   f32   f64   c64  c128   u16  f64* c128*",
    'u32'    : "  u32   u32   u32   u32   u64   i64   i64   i64   i64  bf16   f16   f32   f64   c64  c128   u32  f64* c128*",
    'u64'    : "  u64   u64   u64   u64   u64  f64*  f64*  f64*  f64*  bf16   f16   f32   f64   c64  c128   u64  f64* c128*",
    'i8'     : "   i8   i16   i32   i64  f64*    i8   i16   i32   i64  bf16   f16   f32   f64   c64  c128    i8  f64* c128*",
    'i16'    : "  i16   i16   i32   i64  f64*   i16   i16   i32   i64  bf16   f16   f32   f64   c64  c128   i16  f64* c128*",
    'i32'    : "  i32   i32   i32   i64  f64*   i32   i32   i32   i64  bf16   f16   f32   f64   c64  c128   i32  f64* c128*",
    'i64'    : "  i64   i64   i64   i64  f64*   i64   i64   i64   i64  bf16   f16   f32   f64   c64  c128   i64  f64* c128*",
    'bf16'   : " bf16  bf16  bf16  bf16  bf16  bf16  bf16  bf16  bf16  bf16   f32   f32   f64   c64  c128  bf16  bf16   c64",
    'f16'    : "  f16   f16   f16   f16   f16   f16   f16   f16   f16   f32   f16   f32   f64   c64  c128   f16   f16   c64",
    'f32'    : "  f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   f32   f64   c64  c128   f32   f32   c64",
    'f64'    : "  f64   f64   f64   f64   f64   f64   f64   f64   f64   f64   f64   f64   f64  c128  c128   f64   f64  c128",
    'c64'    : "  c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64   c64  c128   c64  c128   c64   c64   c64",
    'c128'   : " c128  c128  c128  c128  c128  c128  c128  c128  c128  c128  c128  c128  c128  c128  c128  c128  c128  c128",
    'int'    : " i64*    u8   u16   u32   u64    i8   i16   i32   i64  bf16   f16   f32   f64   c64  c128  i64*  f64* c128*",
    'float'  : " f64*  f64*  f64*  f64*  f64*  f64*  f64*  f64*  f64*  bf16   f16   f32   f64   c64  c128  f64*  f64* c128*",
    'complex': "c128* c128* c128* c128* c128* c128* c128* c128* c128*   c64   c64   c64  c128   c64  c128 c128* c128* c128*",
}

_NAMES = ["bool", "u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "bf16", "f16", "f32",
          "f64", "c64", "c128", "int", "float", "complex"]
_DTYPES = {
    "bool": np.dtype(np.bool_), "u8": np.dtype(np.uint8), "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32), "u64": np.dtype(np.uint64), "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "bf16": np.dtype(bfloat16), "f16": np.dtype(np.float16), "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64), "c64": np.dtype(np.complex64), "c128": np.dtype(np.complex128),
}
_PYTHON_SCALARS = {"int": 1, "float": 1.0, "complex": 1j}


def _value(name):
    return _PYTHON_SCALARS[name] if name in _PYTHON_SCALARS else _DTYPES[name]


def _expected(text):
    """'f32*' -> (float32, True)."""
    return _DTYPES[text.rstrip("*")], text.endswith("*")


@pytest.fixture(params=[False, True], ids=["x64_off", "x64_on"])
def x64(request):
    saved = config.enable_x64
    config.update("enable_x64", request.param)
    yield request.param
    config.update("enable_x64", saved)


class Typed:
    """An array-like with only a dtype and a weak_type, as pyree's arrays and tracers have."""

    def __init__(self, dtype, weak_type=False):
        self.dtype = np.dtype(dtype)
        self.weak_type = weak_type


def test_promotion_table_matches_jax(x64):
    table = _JAX_PROMOTION_X64_ON if x64 else _JAX_PROMOTION_X64_OFF
    mismatches = []
    for a in _NAMES:
        for b, want in zip(_NAMES, table[a].split()):
            got = dtypes.result_type(_value(a), _value(b), return_weak_type_flag=True)
            if got != _expected(want):
                mismatches.append(f"{a} + {b}: got {got}, want {want}")
    assert not mismatches, "\n".join(mismatches)


def test_promotion_table_with_arrays_and_weak_objects(x64):
    """Strong dtypes as numpy arrays, weak scalars as weakly typed array-likes of the
    default dtype: the same table."""
    table = _JAX_PROMOTION_X64_ON if x64 else _JAX_PROMOTION_X64_OFF

    def as_array(name):
        if name in _PYTHON_SCALARS:
            return Typed(dtypes.python_scalar_dtype(_PYTHON_SCALARS[name]), weak_type=True)
        return np.zeros((2,), _DTYPES[name])

    for a in _NAMES:
        for b, want in zip(_NAMES, table[a].split()):
            got = dtypes.result_type(as_array(a), as_array(b), return_weak_type_flag=True)
            assert got == _expected(want), (a, b)


def test_result_type_is_symmetric_and_associative(x64):
    values = [_value(n) for n in _NAMES]
    for a in values:
        for b in values:
            ab = dtypes.result_type(a, b, return_weak_type_flag=True)
            assert ab == dtypes.result_type(b, a, return_weak_type_flag=True)
    # Joining in steps gives the same result when the weak flag is carried along
    # (uint64 + int8 is a *weak* float under x64, so adding bfloat16 then gives bfloat16).
    for a in values:
        for b in values:
            ab = Typed(*dtypes.result_type(a, b, return_weak_type_flag=True))
            for c in values:
                want = dtypes.result_type(ab, c, return_weak_type_flag=True)
                assert dtypes.result_type(a, b, c, return_weak_type_flag=True) == want


# (arguments, result without x64, result with x64), checked with jax 0.10.2. "w:f16" is a
# weakly typed float16 array; types such as int stand for themselves.
_MORE_CASES = [
    (["w:f16"], "f32*", "f64*"),
    (["w:i8"], "i32*", "i64*"),
    (["w:u8"], "u32*", "u64*"),
    (["w:bf16"], "f32*", "f64*"),
    (["w:c64"], "c64*", "c128*"),
    (["w:bool"], "bool", "bool"),
    (["w:f16", "w:f16"], "f32*", "f64*"),
    (["w:f16", "w:i8"], "f32*", "f64*"),
    (["w:i8", "w:i8"], "i32*", "i64*"),
    (["w:u8", 1], "i32*", "i64*"),
    (["w:bf16", 1.0], "f32*", "f64*"),
    (["w:f16", "w:bf16"], "f32*", "f64*"),
    (["w:f16", np.int8], "f32*", "f64*"),
    (["w:i8", np.uint8], "u8", "u8"),
    (["w:i8", 2.0], "f32*", "f64*"),
    (["w:bool", 1], "i32*", "i64*"),
    (["w:i64", "w:u64"], "f32*", "f64*"),  # weak dtypes are joined before canonicalisation
    ([1, "w:u64"], "f32*", "f64*"),
    (["w:u64"], "u32*", "u64*"),
    ([True], "bool", "bool"),
    ([True, 1], "i32*", "i64*"),
    ([np.float32(1), 1], "f32", "f32"),
    ([np.float64(1.0)], "f32", "f64"),
    ([np.array(1.0)], "f32", "f64"),
    ([np.array([1], np.uint64), np.int8], "i32", "f64*"),
    ([int], "i32*", "i64*"),
    ([float], "f32*", "f64*"),
    ([complex], "c64*", "c128*"),
    ([bool], "bool", "bool"),
    ([int, np.int8], "i8", "i8"),
    ([float, np.float16], "f16", "f16"),
    (["float32"], "f32", "f32"),
    ([np.int8, np.uint8], "i16", "i16"),
    ([np.dtype(np.int8), np.dtype(np.int8)], "i8", "i8"),
    ([np.int64], "i32", "i64"),
    ([1], "i32*", "i64*"),
    ([1.0], "f32*", "f64*"),
    ([1, 2], "i32*", "i64*"),
    ([1, 2.0, 3j], "c64*", "c128*"),
    ([np.int8, 1, 2.0], "f32*", "f64*"),
    ([np.int8, np.uint8, bfloat16], "bf16", "bf16"),
    ([np.float16, bfloat16, 1j], "c64", "c64"),
]


@pytest.mark.parametrize("args, want_x32, want_x64", _MORE_CASES)
def test_result_type_more_cases(x64, args, want_x32, want_x64):
    values = [Typed(_DTYPES[a[2:]], weak_type=True) if isinstance(a, str) and a.startswith("w:")
              else a for a in args]
    got = dtypes.result_type(*values, return_weak_type_flag=True)
    assert got == _expected(want_x64 if x64 else want_x32)
    assert dtypes.result_type(*values) == got[0]


def test_result_type_returns_numpy_dtypes():
    assert type(dtypes.result_type(np.int8, 1)) is type(np.dtype(np.int8))
    assert dtypes.result_type(1.0) == np.dtype(np.float32) or config.enable_x64


def test_result_type_without_arguments():
    with pytest.raises(TypeError):
        dtypes.result_type()


def test_result_type_of_unrelated_dtypes():
    assert dtypes.result_type(np.dtype("S3"), np.dtype("S3")) == np.dtype("S3")
    with pytest.raises(TypeError):
        dtypes.result_type(np.dtype("S3"), np.float32)


def test_promote_types(x64):
    assert dtypes.promote_types(np.uint8, np.int8) == np.int16
    assert dtypes.promote_types(bfloat16, np.float16) == np.float32
    assert dtypes.promote_types(np.int8, np.int8) == np.int8
    assert dtypes.promote_types(np.bool_, np.uint16) == np.uint16
    assert dtypes.promote_types(np.int32, np.uint32) == (np.int64 if x64 else np.int32)
    assert dtypes.promote_types(np.float64, np.complex64) == (np.complex128 if x64
                                                              else np.complex64)
    assert dtypes.promote_types(np.uint64, np.int64) == (np.float64 if x64 else np.int32)
    assert dtypes.promote_types(int, np.int8) == (np.int64 if x64 else np.int32)
    for a in _DTYPES.values():
        for b in _DTYPES.values():
            assert dtypes.promote_types(a, b) == dtypes.result_type(a, b)


def test_canonicalize_dtype(x64):
    wide = {np.float64: np.float32, np.int64: np.int32, np.uint64: np.uint32,
            np.complex128: np.complex64}
    for dtype, narrow in wide.items():
        assert dtypes.canonicalize_dtype(dtype) == (dtype if x64 else narrow)
        assert dtypes.canonicalize_dtype(np.dtype(dtype).name) == (dtype if x64 else narrow)
    for dtype in [np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32,
                  np.float16, np.float32, np.complex64, bfloat16]:
        assert dtypes.canonicalize_dtype(dtype) == np.dtype(dtype)
    assert dtypes.canonicalize_dtype(int) == (np.int64 if x64 else np.int32)
    assert dtypes.canonicalize_dtype(float) == (np.float64 if x64 else np.float32)
    assert dtypes.canonicalize_dtype(complex) == (np.complex128 if x64 else np.complex64)
    assert dtypes.canonicalize_dtype(bool) == np.bool_
    assert dtypes.canonicalize_dtype("bfloat16") == np.dtype(bfloat16)
    assert isinstance(dtypes.canonicalize_dtype("float32"), np.dtype)


def test_canonicalize_reads_config_at_call_time():
    saved = config.enable_x64
    try:
        config.update("enable_x64", False)
        assert dtypes.canonicalize_dtype(np.float64) == np.float32
        assert dtypes.result_type(1.0) == np.float32
        config.update("enable_x64", True)
        assert dtypes.canonicalize_dtype(np.float64) == np.float64
        assert dtypes.result_type(1.0) == np.float64
    finally:
        config.update("enable_x64", saved)


def test_python_scalar_dtype(x64):
    assert dtypes.python_scalar_dtype(True) == np.bool_
    assert dtypes.python_scalar_dtype(3) == (np.int64 if x64 else np.int32)
    assert dtypes.python_scalar_dtype(3.0) == (np.float64 if x64 else np.float32)
    assert dtypes.python_scalar_dtype(3j) == (np.complex128 if x64 else np.complex64)
    assert dtypes.python_scalar_dtype(np.float64(3.0)) == (np.float64 if x64 else np.float32)
    with pytest.raises(TypeError):
        dtypes.python_scalar_dtype("3")


def test_is_weakly_typed():
    assert dtypes.is_weakly_typed(1)
    assert dtypes.is_weakly_typed(1.0)
    assert dtypes.is_weakly_typed(1j)
    assert not dtypes.is_weakly_typed(True)
    assert not dtypes.is_weakly_typed(np.float32(1))
    assert not dtypes.is_weakly_typed(np.float64(1))  # a float subclass, but strong
    assert not dtypes.is_weakly_typed(np.ones(3))
    assert dtypes.is_weakly_typed(Typed(np.float32, weak_type=True))
    assert not dtypes.is_weakly_typed(Typed(np.float32, weak_type=False))

    class WithWeakTypeProperty:
        weak_type = property(lambda self: True)

    assert dtypes.is_weakly_typed(WithWeakTypeProperty())
    assert not dtypes.is_weakly_typed(WithWeakTypeProperty)  # the class: a property object


def test_dtype_short_name():
    want = {np.float32: "f32", np.float16: "f16", bfloat16: "bf16", np.float64: "f64",
            np.int8: "i8", np.int16: "i16", np.int32: "i32", np.int64: "i64", np.uint8: "u8",
            np.uint16: "u16", np.uint32: "u32", np.uint64: "u64", np.bool_: "bool",
            np.complex64: "c64", np.complex128: "c128"}
    for dtype, name in want.items():
        assert dtypes.dtype_short_name(dtype) == name
        assert dtypes.dtype_short_name(np.dtype(dtype)) == name
    assert dtypes.dtype_short_name("float32") == "f32"


def test_bfloat16():
    assert np.dtype(bfloat16).itemsize == 2
    assert np.dtype(dtypes.bfloat16).name == "bfloat16"


def test_issubdtype():
    assert dtypes.issubdtype(bfloat16, np.floating)
    assert dtypes.issubdtype(np.dtype(bfloat16), np.inexact)
    assert dtypes.issubdtype(bfloat16, np.number)
    assert dtypes.issubdtype(bfloat16, bfloat16)
    assert not dtypes.issubdtype(bfloat16, np.integer)
    assert not dtypes.issubdtype(bfloat16, np.complexfloating)
    assert not dtypes.issubdtype(bfloat16, np.float16)
    assert not dtypes.issubdtype(np.float32, bfloat16)
    assert dtypes.issubdtype(np.float32, np.floating)
    assert dtypes.issubdtype(np.int8, np.signedinteger)
    assert not dtypes.issubdtype(np.uint8, np.signedinteger)
    assert dtypes.issubdtype(np.complex64, np.complexfloating)
    assert dtypes.issubdtype(np.bool_, np.bool_)
    assert dtypes.issubdtype(float, np.floating)


def test_finfo_and_iinfo():
    assert dtypes.finfo(bfloat16).eps == 2.0 ** -7
    assert dtypes.finfo(bfloat16).bits == 16
    assert float(dtypes.finfo(np.float32).max) == float(np.finfo(np.float32).max)
    assert dtypes.finfo(np.float16).eps == np.finfo(np.float16).eps
    assert dtypes.finfo(np.ones(2, np.float32)).bits == 32
    assert dtypes.iinfo(np.int8).max == 127
    assert dtypes.iinfo(np.uint16).max == 65535
    assert dtypes.iinfo(np.int32).min == -2 ** 31


def test_integers_become_float32_in_float_functions_unless_64_bit(x64):
    # JAX 0.10's rule: integers and booleans of up to 32 bits compute in float32 even with x64
    # on; 64-bit and Python integers in the default float type.
    import pyree.numpy as jnp
    wide = "float64" if x64 else "float32"
    for name, want in [("bool", "float32"), ("int8", "float32"), ("int32", "float32"),
                       ("uint32", "float32"), ("int64", wide), ("uint64", wide)]:
        a = jnp.zeros(2, name)
        got = [jnp.sin(a).dtype, (a / a).dtype, jnp.mean(a).dtype, jnp.var(a).dtype]
        assert [str(d) for d in got] == [want] * 4, name
    assert str(jnp.sin(3).dtype) == wide and str(jnp.mean(3).dtype) == wide


def test_float0_is_jaxs_tangent_dtype():
    import pyree
    assert dtypes.float0 == np.dtype([("float0", np.void, 0)]) and pyree.float0 is dtypes.float0
    assert dtypes.float0.itemsize == 0 and np.zeros(3, dtypes.float0).nbytes == 0
