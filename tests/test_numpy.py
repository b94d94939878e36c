"""pyree.numpy checked against NumPy, eagerly and under ``pyree.jit``.

Expected values come from NumPy; expected dtypes and weak types are JAX's (x64 off), learnt
from jax 0.10.2. Several checks share one jitted function, since each jit signature and each
new eager primitive costs one IREE compile.
"""
import math

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp


def check(got, want, dtype=None, weak=False, rtol=1e-6, atol=0.0):
    """``got`` is a pyree Array equal to ``want`` (NumPy), of ``dtype`` and weak type ``weak``."""
    assert isinstance(got, pyree.Array), type(got)
    want = np.asarray(want)
    dtype = np.dtype(dtype) if dtype is not None else want.dtype
    assert got.dtype == dtype, (got.dtype, dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.weak_type == weak, f"weak_type is {got.weak_type}, expected {weak}"
    value = np.asarray(got)
    assert value.dtype == dtype and value.shape == want.shape
    if dtype.kind in "fc":
        np.testing.assert_allclose(value.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(value, want)


@pytest.fixture(params=["eager", "jit"])
def run(request):
    """``run(f, *args)``: ``f(*args)`` as is, or through ``pyree.jit``."""
    if request.param == "eager":
        return lambda f, *args: f(*args)
    return lambda f, *args: pyree.jit(f)(*args)


def _line_of(text):
    """The line number of the first line in this file that contains ``text``."""
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if text in line and "_line_of" not in line:
                return i
    raise AssertionError(text)


# -- creation -------------------------------------------------------------------------------------

def test_array_and_asarray():
    check(jnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32))
    check(jnp.array([1, 2.5]), np.array([1, 2.5], np.float32))
    check(jnp.array([True, False]), np.array([True, False]))
    check(jnp.array(np.arange(4.0)), np.arange(4, dtype=np.float32))  # float64 -> float32
    check(jnp.array([1, 2], dtype=jnp.int8), np.array([1, 2], np.int8))
    check(jnp.array([1.7, -1.2], dtype=jnp.float16), np.array([1.7, -1.2], np.float16),
          rtol=1e-3)
    # Python scalars give weakly typed arrays; NumPy scalars and dtype= give strong ones.
    check(jnp.array(2.0), np.float32(2.0), weak=True)
    check(jnp.array(2), np.int32(2), weak=True)
    check(jnp.array(True), np.bool_(True))
    check(jnp.array(np.float64(2.0)), np.float32(2.0))
    check(jnp.array(np.int8(2)), np.int8(2))
    check(jnp.array(2.0, dtype=jnp.float32), np.float32(2.0))
    check(jnp.array(jnp.array(2.0)), np.float32(2.0), weak=True)
    check(jnp.array(3, ndmin=2), np.array([[3]], np.int32), weak=True)
    # A list holding arrays is stacked, and strongly typed.
    check(jnp.array([jnp.array(1.0), 2.0]), np.array([1.0, 2.0], np.float32))
    check(jnp.array([jnp.arange(2), jnp.arange(2, 4)]), np.array([[0, 1], [2, 3]], np.int32))

    x = jnp.arange(3.0)
    assert jnp.asarray(x) is x
    check(jnp.asarray(x, dtype=jnp.int32), np.arange(3, dtype=np.int32))
    check(jnp.asarray(np.arange(3, dtype=np.int64)), np.arange(3, dtype=np.int32))
    check(jnp.asarray([[1.0], [2.0]]), np.array([[1.0], [2.0]], np.float32))
    check(jnp.asarray(jnp.array(2.0), dtype=jnp.float32), np.float32(2.0))  # dtype: strong
    check(jnp.asarray(3.0), np.float32(3.0), weak=True)


def test_array_of_traced_values():
    out = pyree.jit(lambda a, b: (jnp.array([a, 2 * a, b]), jnp.asarray(a), jnp.array(a)))(
        3.0, jnp.float32(1.5))
    check(out[0], np.array([3.0, 6.0, 1.5], np.float32))
    check(out[1], np.float32(3.0), weak=True)
    check(out[2], np.float32(3.0), weak=True)


def test_array_errors():
    with pytest.raises(TypeError):
        jnp.array(["a", "b"])
    with pytest.raises(TypeError):
        jnp.array([[1, 2], [3]])


def test_zeros_ones_full_empty(run):
    def f():
        return {
            "zeros": jnp.zeros(3), "zeros2": jnp.zeros((2, 3), jnp.int32),
            "ones": jnp.ones((2,)), "ones_b": jnp.ones(2, dtype=bool),
            "ones_int": jnp.ones(3, dtype=int), "empty": jnp.empty((2, 2)),
            "full_f": jnp.full(3, 2.0), "full_i": jnp.full((2,), 7),
            "full_d": jnp.full((2,), 3.0, dtype=jnp.float16),
            "full_np": jnp.full(2, np.float64(1.5)),
            "full_row": jnp.full((2, 3), jnp.array([1, 2, 3])),
            "zero_size": jnp.zeros((2, 0)),
        }
    out = run(f)
    check(out["zeros"], np.zeros(3, np.float32))
    check(out["zeros2"], np.zeros((2, 3), np.int32))
    check(out["ones"], np.ones(2, np.float32))
    check(out["ones_b"], np.ones(2, bool))
    check(out["ones_int"], np.ones(3, np.int32))
    check(out["empty"], np.zeros((2, 2), np.float32))
    check(out["full_f"], np.full(3, 2.0, np.float32), weak=True)
    check(out["full_i"], np.full(2, 7, np.int32), weak=True)
    check(out["full_d"], np.full(2, 3.0, np.float16))
    check(out["full_np"], np.full(2, 1.5, np.float32))
    check(out["full_row"], np.array([[1, 2, 3]] * 2, np.int32))
    check(out["zero_size"], np.zeros((2, 0), np.float32))


def test_full_with_traced_fill():
    out = pyree.jit(lambda v: (jnp.full((2, 2), v), jnp.full(3, v, dtype=jnp.int32)))(2.5)
    check(out[0], np.full((2, 2), 2.5, np.float32), weak=True)
    check(out[1], np.full(3, 2, np.int32))


def test_like_functions(run):
    x = jnp.arange(6.0).reshape(2, 3)
    i = jnp.arange(3)

    def f(x, i, w):
        return (jnp.zeros_like(x), jnp.ones_like(i), jnp.full_like(x, 7),
                jnp.full_like(i, 2.9), jnp.zeros_like(x, dtype=jnp.int8),
                jnp.ones_like(i, shape=(2, 2)), jnp.zeros_like(w), jnp.full_like(w, 3),
                jnp.ones_like(w, dtype=jnp.float32), jnp.empty_like(i))
    out = run(f, x, i, 2.0)
    check(out[0], np.zeros((2, 3), np.float32))
    check(out[1], np.ones(3, np.int32))
    check(out[2], np.full((2, 3), 7, np.float32))
    check(out[3], np.full(3, 2, np.int32))
    check(out[4], np.zeros((2, 3), np.int8))
    check(out[5], np.ones((2, 2), np.int32))
    # Without dtype=, the result is as weakly typed as the argument (as in JAX).
    check(out[6], np.float32(0), weak=True)
    check(out[7], np.float32(3), weak=True)
    check(out[8], np.float32(1))
    check(out[9], np.zeros(3, np.int32))


def test_arange(run):
    def f():
        return (jnp.arange(5), jnp.arange(2, 7), jnp.arange(1, 10, 3), jnp.arange(5, 0, -2),
                jnp.arange(0.0, 1.0, 0.25), jnp.arange(3, dtype=jnp.float32),
                jnp.arange(4.0), jnp.arange(5, 2), jnp.arange(-1.5, 1.0), jnp.arange(np.int64(3)))
    out = run(f)
    check(out[0], np.arange(5, dtype=np.int32))
    check(out[1], np.arange(2, 7, dtype=np.int32))
    check(out[2], np.arange(1, 10, 3, dtype=np.int32))
    check(out[3], np.arange(5, 0, -2, dtype=np.int32))
    check(out[4], np.arange(0.0, 1.0, 0.25, dtype=np.float32))
    check(out[5], np.arange(3, dtype=np.float32))
    check(out[6], np.arange(4, dtype=np.float32))
    check(out[7], np.arange(5, 2, dtype=np.int32))
    check(out[8], np.arange(-1.5, 1.0, dtype=np.float32))
    check(out[9], np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError):
        jnp.arange(0, 5, 0)


def test_arange_needs_concrete_bounds():
    with pytest.raises(pyree.errors.ConcretizationTypeError):
        pyree.jit(lambda n: jnp.arange(n))(3)


def test_linspace(run):
    def f():
        return {
            "basic": jnp.linspace(0.0, 1.0, 5), "default": jnp.linspace(-1, 1),
            "open": jnp.linspace(0, 1, 4, endpoint=False), "step": jnp.linspace(2, 3, 5,
                                                                                  retstep=True),
            "open_step": jnp.linspace(0, 2, 4, endpoint=False, retstep=True),
            "one": jnp.linspace(3.0, 7.0, 1), "zero": jnp.linspace(0, 1, 0),
            "int": jnp.linspace(0, 10, 5, dtype=jnp.int32), "down": jnp.linspace(5, -5, 11),
            "vec": jnp.linspace(jnp.array([0.0, 1.0]), jnp.array([1.0, 3.0]), 3),
            "vec_axis": jnp.linspace(jnp.array([0.0, 1.0]), 2.0, 3, axis=1),
        }
    out = run(f)
    check(out["basic"], np.linspace(0.0, 1.0, 5, dtype=np.float32))
    check(out["default"], np.linspace(-1, 1, dtype=np.float32), atol=1e-7)
    assert float(out["default"][-1]) == 1.0  # exactly the endpoint
    check(out["open"], np.linspace(0, 1, 4, endpoint=False, dtype=np.float32))
    values, step = out["step"]
    check(values, np.linspace(2, 3, 5, dtype=np.float32))
    check(step, np.float32(0.25))
    values, step = out["open_step"]
    check(values, np.array([0, 0.5, 1, 1.5], np.float32))
    check(step, np.float32(0.5))
    check(out["one"], np.array([3.0], np.float32))
    check(out["zero"], np.zeros(0, np.float32))
    check(out["int"], np.linspace(0, 10, 5).astype(np.int32))
    check(out["down"], np.linspace(5, -5, 11, dtype=np.float32), atol=1e-6)
    check(out["vec"], np.linspace([0.0, 1.0], [1.0, 3.0], 3, dtype=np.float32))
    check(out["vec_axis"], np.linspace([0.0, 1.0], 2.0, 3, axis=1, dtype=np.float32))
    with pytest.raises(ValueError):
        jnp.linspace(0, 1, -1)


def test_complex_linspace_logspace_geomspace(run):
    """Complex ends give complex64 values (JAX 0.10.2's results in the comments)."""
    def f(a, b):
        return (jnp.linspace(0j, 1 + 1j, 3), jnp.linspace(0, 1 + 1j, 3, retstep=True),
                jnp.linspace(a, b, 3), jnp.logspace(0j, 1 + 1j, 3),
                jnp.geomspace(1 + 0j, 1j, 3), jnp.geomspace(-1 + 0j, 1j, 4),
                jnp.logspace(0, 1, 3, base=2j))
    out = run(f, np.complex64(1j), np.array([2, 3 + 1j], np.complex64))

    def same(got, want, dtype=np.complex64):
        assert got.dtype == dtype and not got.weak_type, got.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=2e-7)
    same(out[0], [0, .5 + .5j, 1 + 1j])
    same(out[1][0], [0, .5 + .5j, 1 + 1j])
    same(out[1][1], .5 + .5j)
    same(out[2], [[1j, 1j], [1 + .5j, 1.5 + 1j], [2, 3 + 1j]])
    same(out[3], np.logspace(0j, 1 + 1j, 3))        # [1, 1.288+2.888j, -6.682+7.440j]
    same(out[4], np.exp(np.linspace(0, 1j * np.pi / 2, 3)))   # [1, .707+.707j, 1j]
    same(out[5], np.exp(1j * np.pi * np.array([1, 5 / 6, 2 / 3, 1 / 2])))
    # A complex base with real ends: the powers' real parts, float32 (as JAX).
    same(out[6], [1, 1, 0], np.float32)


def test_linspace_traced_bounds():
    out = pyree.jit(lambda a, b: jnp.linspace(a, b, 3))(1.0, 2.0)
    check(out, np.array([1.0, 1.5, 2.0], np.float32))


def test_eye_identity(run):
    def f():
        return (jnp.eye(3), jnp.eye(2, 4), jnp.eye(3, k=1), jnp.eye(4, 3, k=-2),
                jnp.eye(2, 3, k=1, dtype=jnp.int32), jnp.eye(3, k=5), jnp.identity(2),
                jnp.identity(3, dtype=bool), jnp.eye(0))
    out = run(f)
    check(out[0], np.eye(3, dtype=np.float32))
    check(out[1], np.eye(2, 4, dtype=np.float32))
    check(out[2], np.eye(3, k=1, dtype=np.float32))
    check(out[3], np.eye(4, 3, k=-2, dtype=np.float32))
    check(out[4], np.eye(2, 3, k=1, dtype=np.int32))
    check(out[5], np.zeros((3, 3), np.float32))
    check(out[6], np.identity(2, np.float32))
    check(out[7], np.identity(3, bool))
    check(out[8], np.zeros((0, 0), np.float32))


# -- elementwise ----------------------------------------------------------------------------------

_POSITIVE = np.array([0.1, 0.5, 1.0, 2.5, 7.0], np.float32)
_SIGNED = np.array([-3.0, -0.5, 0.0, 0.25, 2.0], np.float32)


def _erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64))


def test_unary_float_functions(run):
    positive = {"log": (jnp.log, np.log), "log1p": (jnp.log1p, np.log1p),
                "sqrt": (jnp.sqrt, np.sqrt), "rsqrt": (jnp.rsqrt, lambda v: 1 / np.sqrt(v))}
    signed = {"exp": (jnp.exp, np.exp), "expm1": (jnp.expm1, np.expm1),
              "sin": (jnp.sin, np.sin), "cos": (jnp.cos, np.cos), "tan": (jnp.tan, np.tan),
              "tanh": (jnp.tanh, np.tanh), "cbrt": (jnp.cbrt, np.cbrt),
              "logistic": (jnp.logistic, lambda v: 1 / (1 + np.exp(-v.astype(np.float64)))),
              "erf": (jnp.erf, _erf)}

    def f(p, s):
        return ({k: fn(p) for k, (fn, _) in positive.items()},
                {k: fn(s) for k, (fn, _) in signed.items()})
    out_p, out_s = run(f, jnp.asarray(_POSITIVE), jnp.asarray(_SIGNED))
    for name, (_, ref) in positive.items():
        check(out_p[name], ref(_POSITIVE).astype(np.float32), rtol=2e-6, atol=1e-7)
    for name, (_, ref) in signed.items():
        check(out_s[name], ref(_SIGNED).astype(np.float32), rtol=2e-6, atol=1e-7)


def test_unary_special_values():
    x = jnp.array([0.0, -1.0, np.inf, -np.inf, np.nan])
    with np.errstate(all="ignore"):
        check(jnp.log(x), np.log(np.asarray(x)))
        check(jnp.sqrt(x), np.sqrt(np.asarray(x)))
        check(jnp.exp(x), np.exp(np.asarray(x)))


def test_unary_dtypes(run):
    def f(i, h, w):
        return (jnp.exp(i), jnp.sqrt(h), jnp.sin(w), jnp.tanh(2), jnp.log(jnp.array([1, 4])))
    out = run(f, jnp.arange(3), jnp.ones(2, jnp.float16), 0.5)
    check(out[0], np.exp(np.arange(3)).astype(np.float32))   # integers become float32
    check(out[1], np.ones(2, np.float16))                     # float16 stays float16
    check(out[2], np.sin(np.float32(0.5)), weak=True)          # weak stays weak
    check(out[3], np.tanh(np.float32(2)), weak=True)
    check(out[4], np.log([1, 4]).astype(np.float32))


def test_abs_sign_negative(run):
    f_val = np.array([-2.5, -0.0, 0.0, 3.0, -np.inf], np.float32)
    i_val = np.array([-3, 0, 4, -128], np.int8)

    def f(x, i):
        return (jnp.abs(x), jnp.absolute(i), abs(x), jnp.sign(x), jnp.sign(i), -x, -i,
                jnp.negative(i), jnp.positive(x), jnp.abs(jnp.array([True, False])))
    out = run(f, jnp.asarray(f_val), jnp.asarray(i_val))
    check(out[0], np.abs(f_val))
    check(out[1], np.abs(i_val))                 # int8: -128 wraps, as in NumPy and JAX
    check(out[2], np.abs(f_val))
    check(out[3], np.sign(f_val))
    check(out[4], np.sign(i_val))
    check(out[5], -f_val)
    check(out[6], -i_val)
    check(out[7], -i_val)
    check(out[8], f_val)
    check(out[9], np.array([True, False]))
    assert np.signbit(np.asarray(out[3])[1])    # sign(-0.0) is -0.0
    with pytest.raises(TypeError):
        -jnp.array([True])


def test_rounding(run):
    v = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.25, 2.675, -1.7, 1.7, 12.34], np.float32)
    i = np.array([15, 25, -15, 4, -36], np.int32)

    def f(x, i):
        return {"floor": jnp.floor(x), "ceil": jnp.ceil(x), "round": jnp.round(x),
                "round1": jnp.round(x, 1), "round2": jnp.around(x, 2),
                "round_neg": jnp.round(x, -1), "rint": jnp.rint(x), "trunc": jnp.trunc(x),
                "ifloor": jnp.floor(i), "iceil": jnp.ceil(i), "itrunc": jnp.trunc(i),
                "iround": jnp.round(i), "iround_neg": jnp.round(i, -1), "irint": jnp.rint(i),
                "method": x.round(1)}
    out = run(f, jnp.asarray(v), jnp.asarray(i))
    check(out["floor"], np.floor(v))
    check(out["ceil"], np.ceil(v))
    check(out["round"], np.round(v))        # halves to even
    check(out["round1"], np.round(v, 1))
    check(out["round2"], np.round(v, 2))
    check(out["round_neg"], np.round(v, -1))
    check(out["rint"], np.rint(v))
    check(out["trunc"], np.trunc(v))
    check(out["ifloor"], i)                 # integers are returned unchanged
    check(out["iceil"], i)
    check(out["itrunc"], i)
    check(out["iround"], i)
    # NumPy's rounding of integers to tens (JAX 0.10.2 raises NotImplementedError here).
    check(out["iround_neg"], np.round(i, -1))
    check(out["irint"], i.astype(np.float32))
    check(out["method"], np.round(v, 1))


def test_power(run):
    f_val = np.array([-2.0, -0.5, 0.0, 1.5, 3.0], np.float32)
    i_val = np.array([-3, -1, 0, 2, 5], np.int32)
    nonzero = np.array([-2.0, -0.5, 1.5, 3.0], np.float32)

    def f(x, i, nz):
        return {"f0": jnp.power(x, 0), "f1": x ** 1, "f2": x ** 2, "f3": jnp.power(x, 3),
                "f_neg": nz ** -1, "f_neg2": jnp.power(nz, -2), "i2": i ** 2,
                "i3": jnp.power(i, 3), "i0": i ** 0, "half": jnp.power(jnp.abs(x), 0.5),
                "ff": jnp.power(jnp.abs(x) + 0.5, x), "if": jnp.power(i[2:], 2.0),
                "rpow": 2 ** i[3:], "rpow_f": 2.0 ** x, "b2": jnp.power(jnp.array([True]), 2)}
    out = run(f, jnp.asarray(f_val), jnp.asarray(i_val), jnp.asarray(nonzero))
    check(out["f0"], np.ones(5, np.float32))
    check(out["f1"], f_val)
    check(out["f2"], f_val ** 2)
    check(out["f3"], f_val ** 3)
    check(out["f_neg"], 1 / nonzero)
    check(out["f_neg2"], nonzero ** -2.0, rtol=2e-6)
    check(out["i2"], i_val ** 2)
    check(out["i3"], i_val ** 3)
    check(out["i0"], np.ones(5, np.int32))
    check(out["half"], np.abs(f_val) ** 0.5)
    check(out["ff"], (np.abs(f_val) + 0.5) ** f_val, rtol=2e-6)
    check(out["if"], (i_val[2:] ** 2).astype(np.float32), weak=True)   # as in JAX
    check(out["rpow"], 2 ** i_val[3:])
    check(out["rpow_f"], 2.0 ** f_val, rtol=2e-6)
    check(out["b2"], np.array([1], np.int32))


def test_float_power_negative_base_and_zero(run):
    # C's pow: negative bases with integral exponents and 0 ** 0 are not NaN.
    x = np.array([-2.0, -2.0, 0.0, 0.0, -0.5, 3.0], np.float32)
    y = np.array([2.0, 3.0, 0.0, 2.0, -2.0, 0.0], np.float32)
    out = run(lambda x, y: (x ** y, x ** 2.0), jnp.asarray(x), jnp.asarray(y))
    check(out[0], x ** y)
    check(out[1], x ** 2.0)


def test_integer_power_with_array_exponents(run):
    base = np.array([2, -2, 1, -1, 0, 3, -3, 7], np.int32)
    exp = np.array([-1, -1, -2, -3, 2, 4, 3, 0], np.int32)
    # Negative exponents give 0 except for bases 1 and -1 (JAX's integer_pow semantics).
    want = np.array([0, 0, 1, -1, 0, 81, -27, 1], np.int32)
    out = run(lambda a, b: (a ** b, jnp.power(a, b[5])), jnp.asarray(base), jnp.asarray(exp))
    check(out[0], want)
    check(out[1], base ** 4)


def test_integer_to_negative_static_power_is_an_error():
    # JAX raises TypeError ("Integers cannot be raised to negative powers"); pyree raises
    # NumPy's ValueError.
    with pytest.raises(ValueError, match="negative"):
        jnp.power(jnp.arange(3), -1)


def test_maximum_minimum(run):
    a = np.array([[1.0, np.nan, -3.0, 4.0]], np.float32)
    b = np.array([[2.0], [0.0], [-5.0]], np.float32)

    def f(a, b, i):
        return (jnp.maximum(a, b), jnp.minimum(a, b), jnp.maximum(i, 2), jnp.minimum(i, 2.5),
                jnp.maximum(True, jnp.array([False, True])))
    out = run(f, jnp.asarray(a), jnp.asarray(b), jnp.arange(5))
    check(out[0], np.maximum(a, b))    # NaN propagates
    check(out[1], np.minimum(a, b))
    check(out[2], np.maximum(np.arange(5), 2).astype(np.int32))
    check(out[3], np.minimum(np.arange(5), 2.5).astype(np.float32), weak=True)
    check(out[4], np.array([True, True]))


def test_division_family_negative_operands(run):
    a = np.array([7, -7, 7, -7, 0, 6, -6, 1], np.int32)
    b = np.array([3, 3, -3, -3, 5, -4, 4, 2], np.int32)
    fa = np.array([7.5, -7.5, 7.5, -7.5, 0.0, 6.0, -6.0, 1.0], np.float32)
    fb = np.array([2.0, 2.0, -2.0, -2.0, 3.0, -4.0, 4.0, 0.5], np.float32)

    def f(a, b, fa, fb):
        return {"fd": jnp.floor_divide(a, b), "op_fd": a // b, "rem": jnp.remainder(a, b),
                "mod": jnp.mod(a, b), "op_mod": a % b, "fmod": jnp.fmod(a, b),
                "f_fd": fa // fb, "f_rem": fa % fb, "f_fmod": jnp.fmod(fa, fb),
                "div": jnp.true_divide(a, b), "op_div": a / b, "fdiv": jnp.divide(fa, fb),
                "divmod": divmod(a, 3), "rdivmod": divmod(-7, b), "scalar_fd": a // -2,
                "rscalar_mod": 7 % b, "i8_div": jnp.asarray(a).astype(jnp.int8) / 2}
    out = run(f, jnp.asarray(a), jnp.asarray(b), jnp.asarray(fa), jnp.asarray(fb))
    check(out["fd"], np.floor_divide(a, b))
    check(out["op_fd"], a // b)
    check(out["rem"], np.remainder(a, b))
    check(out["mod"], np.mod(a, b))
    check(out["op_mod"], a % b)
    check(out["fmod"], np.fmod(a, b))
    check(out["f_fd"], fa // fb)
    check(out["f_rem"], fa % fb)
    check(out["f_fmod"], np.fmod(fa, fb))
    check(out["div"], (a / b).astype(np.float32))       # int / int is float32
    check(out["op_div"], (a / b).astype(np.float32))
    check(out["fdiv"], fa / fb)
    check(out["divmod"][0], a // 3)
    check(out["divmod"][1], a % 3)
    check(out["rdivmod"][0], -7 // b)
    check(out["rdivmod"][1], -7 % b)
    check(out["scalar_fd"], a // -2)
    check(out["rscalar_mod"], 7 % b)
    check(out["i8_div"], (a / 2).astype(np.float32))


def test_arctan2(run):
    y = np.array([1.0, -1.0, 0.0, 2.0, -0.5], np.float32)
    x = np.array([1.0, 1.0, -1.0, 0.0, -3.0], np.float32)
    out = run(lambda y, x: (jnp.arctan2(y, x), jnp.arctan2(1, jnp.arange(3))),
              jnp.asarray(y), jnp.asarray(x))
    check(out[0], np.arctan2(y, x), rtol=2e-6)
    check(out[1], np.arctan2(1, np.arange(3)).astype(np.float32), rtol=2e-6)


def test_comparisons(run):
    a = np.array([[1, 2, 3]], np.int32)
    b = np.array([[2.0], [2.5]], np.float32)

    def f(a, b):
        return (jnp.equal(a, b), jnp.not_equal(a, 2), jnp.less(a, b), jnp.less_equal(a, 2),
                jnp.greater(a, b), jnp.greater_equal(a, 2.0), a == 2, a != b, a < b, a <= 2,
                a > 1.5, a >= b, 2 < a, 2.5 >= a)
    out = run(f, jnp.asarray(a), jnp.asarray(b))
    want = (a == b, a != 2, a < b, a <= 2, a > b, a >= 2.0, a == 2, a != b, a < b, a <= 2,
            a > 1.5, a >= b, 2 < a, 2.5 >= a)
    for got, w in zip(out, want):
        check(got, w)


def test_logical_functions(run):
    a = np.array([0, 1, 2, 0], np.int32)
    b = np.array([True, True, False, False])

    def f(a, b):
        return (jnp.logical_and(a, b), jnp.logical_or(a, b), jnp.logical_xor(a, b),
                jnp.logical_not(a), jnp.logical_and(b, True), jnp.logical_or(0.0, a))
    out = run(f, jnp.asarray(a), jnp.asarray(b))
    for got, w in zip(out, (np.logical_and(a, b), np.logical_or(a, b), np.logical_xor(a, b),
                            np.logical_not(a), b, a != 0)):
        check(got, w)


def test_bitwise_and_shifts(run):
    a = np.array([5, -6, 12, 0, -1], np.int32)
    b = np.array([3, 3, 10, 7, 255], np.int32)
    p = np.array([True, True, False, False])
    q = np.array([True, False, True, False])
    s = np.array([-128, -8, 7, 64], np.int8)
    u = np.array([200, 7, 255, 1], np.uint8)
    u_amount = np.array([2, 1, 7, 0], np.uint8)

    def f(a, b, p, q, s, u, ua):
        return {"and": a & b, "or": jnp.bitwise_or(a, b), "xor": a ^ b, "not": ~a,
                "bnot": jnp.bitwise_not(a), "inv": jnp.invert(a), "band": p & q,
                "bor": jnp.bitwise_or(p, q), "bxor": p ^ q, "binv": ~p, "rand": 6 & a,
                "shl": jnp.left_shift(a, 2), "shr": a >> 1, "rshl": 1 << b[:3],
                "s_shr": s >> 1, "s_shl": jnp.left_shift(s, 1), "u_shr": u >> ua,
                "u_shl": jnp.left_shift(u, ua), "u_not": ~u}
    out = run(f, *(jnp.asarray(v) for v in (a, b, p, q, s, u, u_amount)))
    check(out["and"], a & b)
    check(out["or"], a | b)
    check(out["xor"], a ^ b)
    check(out["not"], ~a)
    check(out["bnot"], ~a)
    check(out["inv"], ~a)
    check(out["band"], p & q)
    check(out["bor"], p | q)
    check(out["bxor"], p ^ q)
    check(out["binv"], ~p)
    check(out["rand"], 6 & a)
    check(out["shl"], a << 2)
    check(out["shr"], a >> 1)            # arithmetic for signed integers
    check(out["rshl"], 1 << b[:3])
    check(out["s_shr"], s >> 1)
    check(out["s_shl"], (s.astype(np.int32) << 1).astype(np.int8))
    check(out["u_shr"], u >> u_amount)   # logical for unsigned integers
    check(out["u_shl"], (u.astype(np.int32) << u_amount).astype(np.uint8))
    check(out["u_not"], ~u)


def test_unsigned_with_scalar_operand(run):
    u = jnp.array([200, 7], jnp.uint8)
    out = run(lambda u: (u + 1, u >> 2, u & 3, u < 100, u // 3, u * 2, u - 8,
                         jnp.array([9], jnp.uint32) >> 1), u)
    un = np.array([200, 7], np.uint8)
    for got, want in zip(out, (un + 1, un >> 2, un & 3, un < 100, un // 3, un * 2, un - 8,
                               np.array([4], np.uint32))):
        check(got, want)


def test_isnan_isinf_isfinite(run):
    v = np.array([1.0, np.nan, np.inf, -np.inf, -0.0], np.float32)

    def f(x, i):
        return (jnp.isnan(x), jnp.isinf(x), jnp.isfinite(x), jnp.isnan(i), jnp.isinf(i),
                jnp.isfinite(i))
    out = run(f, jnp.asarray(v), jnp.arange(3))
    for got, w in zip(out, (np.isnan(v), np.isinf(v), np.isfinite(v), np.zeros(3, bool),
                            np.zeros(3, bool), np.ones(3, bool))):
        check(got, w)


def test_clip(run):
    v = np.array([-2.0, 0.3, 0.7, 5.0], np.float32)

    def f(x, i):
        return (jnp.clip(x, 0.0, 1.0), jnp.clip(x, max=0.5), jnp.clip(x, min=0.5),
                jnp.clip(i, 2, 7), jnp.clip(i, 0.5, 1.5), x.clip(-1, 1),
                jnp.clip(x, jnp.array([0.0, 0.0, 0.8, 0.0]), 1.0), jnp.clip(x, a_min=0, a_max=1))
    out = run(f, jnp.asarray(v), jnp.array([1, 5, 9]))
    check(out[0], np.clip(v, 0, 1))
    check(out[1], np.minimum(v, 0.5))
    check(out[2], np.maximum(v, 0.5))
    check(out[3], np.array([2, 5, 7], np.int32))
    check(out[4], np.array([1.0, 1.5, 1.5], np.float32), weak=True)   # as in JAX
    check(out[5], np.clip(v, -1, 1))
    check(out[6], np.clip(v, np.array([0.0, 0.0, 0.8, 0.0], np.float32), 1.0))
    check(out[7], np.clip(v, 0, 1))


def test_where(run):
    cond = np.array([[True], [False], [True]])
    x = np.arange(4, dtype=np.float32)

    def f(c, x, i):
        return (jnp.where(c, x, -x), jnp.where(c, x, 0), jnp.where(x > 1, 1, 2.0),
                jnp.where(i, i, 10), jnp.where(c, i, x), jnp.where(True, i, 0))
    out = run(f, jnp.asarray(cond), jnp.asarray(x), jnp.array([0, 1, 2, 0]))
    i = np.array([0, 1, 2, 0], np.int32)
    check(out[0], np.where(cond, x, -x))
    check(out[1], np.where(cond, x, 0).astype(np.float32))
    check(out[2], np.where(x > 1, 1, 2).astype(np.float32), weak=True)   # as in JAX
    check(out[3], np.where(i, i, 10).astype(np.int32))
    check(out[4], np.where(cond, i, x).astype(np.float32))
    check(out[5], i)
    with pytest.raises(TypeError):
        jnp.where(jnp.ones(3) > 0)


# -- promotion and broadcasting -------------------------------------------------------------------

def test_weak_type_promotion(run):
    i8 = jnp.array([1, 2], jnp.int8)
    i32 = jnp.array([1, 2], jnp.int32)
    u8 = jnp.array([1, 2], jnp.uint8)
    f16 = jnp.array([1, 2], jnp.float16)

    def f(i8, i32, u8, f16, w):
        return {"i8+4": i8 + 4, "i32+5.0": i32 + 5.0, "u8+i8": u8 + i8, "f16*2.0": f16 * 2.0,
                "i8+i32": i8 + i32, "f16+f32": f16 + jnp.ones(2), "weak+weak": w + 1,
                "weak*i8": w * i8, "bool+1": jnp.array([True, False]) + 1,
                "bool+bool": jnp.array([True, False]) + jnp.array([True, True]),
                "bool*bool": jnp.multiply(jnp.array([True, False]), True),
                "i8+np_f64": i8 + np.float64(1.5), "i8+np_i64": i8 + np.int64(1),
                "i8+np_i32arr": i8 + np.ones(2, np.int32), "i32*2.5": i32 * 2.5,
                "f32+i": jnp.zeros(2) + 3}
    out = run(f, i8, i32, u8, f16, jnp.array(2.0))
    check(out["i8+4"], np.array([5, 6], np.int8))
    check(out["i32+5.0"], np.array([6.0, 7.0], np.float32), weak=True)
    check(out["u8+i8"], np.array([2, 4], np.int16))
    check(out["f16*2.0"], np.array([2, 4], np.float16))
    check(out["i8+i32"], np.array([2, 4], np.int32))
    check(out["f16+f32"], np.array([2, 3], np.float32))
    check(out["weak+weak"], np.float32(3.0), weak=True)
    check(out["weak*i8"], np.array([2.0, 4.0], np.float32), weak=True)
    check(out["bool+1"], np.array([2, 1], np.int32), weak=True)
    check(out["bool+bool"], np.array([True, True]))     # add of booleans is OR
    check(out["bool*bool"], np.array([True, False]))    # multiply of booleans is AND
    check(out["i8+np_f64"], np.array([2.5, 3.5], np.float32))   # NumPy scalars are strong
    check(out["i8+np_i64"], np.array([2, 3], np.int32))
    check(out["i8+np_i32arr"], np.array([2, 3], np.int32))
    check(out["i32*2.5"], np.array([2.5, 5.0], np.float32), weak=True)
    check(out["f32+i"], np.array([3, 3], np.float32))


def test_weak_scalar_results():
    check(jnp.array(2.0) * 3, np.float32(6.0), weak=True)
    check(jnp.array(2.0) + jnp.array(2), np.float32(4.0), weak=True)
    check(jnp.exp(2), np.exp(np.float32(2)), weak=True)
    check(pyree.jit(lambda a: a * 2)(2.0), np.float32(4.0), weak=True)
    check(pyree.jit(lambda a: a * 2)(3), np.int32(6), weak=True)
    check(pyree.jit(lambda a: a * 2)(np.float32(2.0)), np.float32(4.0))


def test_subtract_booleans_is_an_error():
    with pytest.raises(TypeError):
        jnp.subtract(jnp.array([True]), jnp.array([False]))


def test_broadcasting(run):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    r = np.array([10.0, 20.0, 30.0], np.float32)
    c = np.array([[1.0], [2.0]], np.float32)
    t = np.arange(4, dtype=np.float32).reshape(2, 1, 2, 1)

    def f(a, r, c, t):
        return (a + r, a * c, r - c, c / r, jnp.maximum(t, r), t + a[:, None, :1],
                jnp.where(c > 1, r, a), jnp.arctan2(c, r), a + 1)
    out = run(f, jnp.asarray(a), jnp.asarray(r), jnp.asarray(c), jnp.asarray(t))
    want = (a + r, a * c, r - c, c / r, np.maximum(t, r), t + a[:, None, :1],
            np.where(c > 1, r, a), np.arctan2(c, r), a + 1)
    for got, w in zip(out, want):
        check(got, w.astype(np.float32), rtol=2e-6)


# -- reductions ------------------------------------------------------------------------------------

_R = np.array([[[3.0, -1.0, 4.0, 1.5], [5.0, 9.0, -2.0, 6.0], [5.0, 3.0, 5.0, 8.0]],
               [[9.0, 7.0, -9.0, 3.0], [2.0, 3.0, 8.0, 4.0], [6.0, 2.0, 6.0, 4.0]]], np.float32)
_AXES = [None, 0, 1, -1, (0, 2), (-1, 1), ()]


def _reductions(x, b, axis, keepdims):
    return {"sum": jnp.sum(x, axis=axis, keepdims=keepdims),
            "mean": jnp.mean(x, axis=axis, keepdims=keepdims),
            "var": jnp.var(x, axis=axis, keepdims=keepdims),
            "std": jnp.std(x, axis=axis, keepdims=keepdims),
            "max": jnp.max(x, axis=axis, keepdims=keepdims),
            "min": jnp.min(x, axis=axis, keepdims=keepdims),
            "prod": jnp.prod(x, axis=axis, keepdims=keepdims),
            "all": jnp.all(b, axis=axis, keepdims=keepdims),
            "any": jnp.any(b, axis=axis, keepdims=keepdims)}


def _check_reductions(out, x, b, axis, keepdims):
    kw = dict(axis=axis, keepdims=keepdims)
    check(out["sum"], np.sum(x, **kw), rtol=1e-6)
    check(out["mean"], np.mean(x, **kw), rtol=1e-6)
    check(out["var"], np.var(x, **kw), rtol=1e-5)
    check(out["std"], np.std(x, **kw), rtol=1e-5)
    check(out["max"], np.max(x, **kw))
    check(out["min"], np.min(x, **kw))
    check(out["prod"], np.prod(x, **kw), rtol=1e-6)
    check(out["all"], np.all(b, **kw))
    check(out["any"], np.any(b, **kw))


def test_reductions_over_axes_jit():
    b = _R > 4.5

    @pyree.jit
    def f(x, b):
        return {f"{axis}/{keepdims}": _reductions(x, b, axis, keepdims)
                for axis in _AXES for keepdims in (False, True)}
    out = f(_R, b)
    for axis in _AXES:
        for keepdims in (False, True):
            _check_reductions(out[f"{axis}/{keepdims}"], _R, b, axis, keepdims)


@pytest.mark.parametrize("axis,keepdims", [(None, False), (-1, True), ((0, 2), False)])
def test_reductions_over_axes_eager(axis, keepdims):
    b = jnp.asarray(_R > 4.5)
    out = _reductions(jnp.asarray(_R), b, axis, keepdims)
    _check_reductions(out, _R, _R > 4.5, axis, keepdims)


def test_argmax_argmin(run):
    x = np.array([[3.0, 9.0, 9.0, 1.0], [7.0, 7.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]], np.float32)
    nan = np.array([3.0, np.nan, 1.0, np.nan], np.float32)

    def f(x, nan, i):
        return (jnp.argmax(x), jnp.argmin(x), jnp.argmax(x, axis=0), jnp.argmin(x, axis=1),
                jnp.argmax(x, axis=-1, keepdims=True), jnp.argmin(x, keepdims=True),
                jnp.argmax(nan), jnp.argmin(nan), x.argmax(axis=1), jnp.argmax(i),
                jnp.argmin(jnp.array(2.0)))
    out = run(f, jnp.asarray(x), jnp.asarray(nan), jnp.array([2, 8, 8, -1], jnp.int8))
    check(out[0], np.int32(np.argmax(x)))
    check(out[1], np.int32(np.argmin(x)))
    check(out[2], np.argmax(x, axis=0).astype(np.int32))     # first index on ties
    check(out[3], np.argmin(x, axis=1).astype(np.int32))
    check(out[4], np.argmax(x, axis=-1, keepdims=True).astype(np.int32))
    check(out[5], np.argmin(x, keepdims=True).astype(np.int32))
    check(out[6], np.int32(1))                                 # NaN wins, as in NumPy/JAX
    check(out[7], np.int32(1))
    check(out[8], np.argmax(x, axis=1).astype(np.int32))
    check(out[9], np.int32(1))
    check(out[10], np.int32(0))


def test_reduction_dtypes(run):
    def f(b, i8, u8, h, i, w):
        return {"sum_bool": jnp.sum(b), "sum_i8": jnp.sum(i8), "sum_u8": jnp.sum(u8),
                "sum_f16": jnp.sum(h), "mean_int": jnp.mean(i), "mean_bool": jnp.mean(b),
                "max_i8": jnp.max(i8), "min_u8": jnp.min(u8), "prod_i8": jnp.prod(i8),
                "prod_bool": jnp.prod(b), "var_int": jnp.var(i), "std_int": jnp.std(i),
                "mean_f16": jnp.mean(h), "sum_weak": jnp.sum(w), "max_weak": jnp.max(w),
                "mean_weak": jnp.mean(w), "sum_as_f32": jnp.sum(i, dtype=jnp.float32),
                "sum_as_i8": jnp.sum(i8, dtype=jnp.int8), "sum_as_bool": jnp.sum(b, dtype=bool),
                "mean_as_f16": jnp.mean(i, dtype=jnp.float16), "all_int": jnp.all(i),
                "any_float": jnp.any(h), "argmax": jnp.argmax(i8)}
    b = jnp.array([True, False, True])
    i8 = jnp.array([100, 100, -3], jnp.int8)
    u8 = jnp.array([200, 100, 3], jnp.uint8)
    h = jnp.array([1.5, 2.0, 0.0], jnp.float16)
    i = jnp.array([1, 2, 4])
    out = run(f, b, i8, u8, h, i, 2.0)
    check(out["sum_bool"], np.int32(2))
    check(out["sum_i8"], np.int32(197))       # accumulates in int32 (no int8 overflow)
    check(out["sum_u8"], np.uint32(303))
    check(out["sum_f16"], np.float16(3.5))
    check(out["mean_int"], np.float32(7 / 3))
    check(out["mean_bool"], np.float32(2 / 3))
    check(out["max_i8"], np.int8(100))
    check(out["min_u8"], np.uint8(3))
    check(out["prod_i8"], np.int32(-30000))
    check(out["prod_bool"], np.int32(0))
    check(out["var_int"], np.float32(np.var([1, 2, 4])), rtol=1e-6)
    check(out["std_int"], np.float32(np.std([1, 2, 4])), rtol=1e-6)
    check(out["mean_f16"], np.float16(3.5 / 3), rtol=1e-3)
    # Reductions of weakly typed values are strongly typed (as in JAX).
    check(out["sum_weak"], np.float32(2.0))
    check(out["max_weak"], np.float32(2.0))
    check(out["mean_weak"], np.float32(2.0))
    check(out["sum_as_f32"], np.float32(7.0))
    check(out["sum_as_i8"], np.int8(-59))     # wraps, as asked for
    check(out["sum_as_bool"], np.bool_(True))
    check(out["mean_as_f16"], np.float16(7 / 3), rtol=1e-3)
    check(out["all_int"], np.bool_(True))
    check(out["any_float"], np.bool_(True))
    check(out["argmax"], np.int32(0))


def test_reductions_where_initial(run):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    fx = np.array([[1.0, 5.0, 2.0], [4.0, -1.0, 3.0]], np.float32)
    mask = np.array([True, False, True])

    def f(x, fx, m):
        return {"sum_where": jnp.sum(x, axis=1, where=m),
                "sum_where_init": jnp.sum(x, axis=1, where=m, initial=10),
                "sum_init": jnp.sum(x, initial=5), "prod_where": jnp.prod(x + 1, where=m),
                "max_init": jnp.max(x, initial=9), "max_init_low": jnp.max(x, axis=0,
                                                                            initial=-1),
                "min_where_init": jnp.min(fx, axis=1, where=m, initial=10.0),
                "max_where_init": jnp.max(fx, where=m, initial=-100.0),
                "mean_where": jnp.mean(fx, axis=1, where=m),
                "var_where": jnp.var(fx, axis=1, where=m),
                "all_where": jnp.all(fx > 0, axis=1, where=m),
                "any_where": jnp.any(fx < 0, where=m),
                "sum_where_keep": jnp.sum(fx, axis=0, keepdims=True, where=fx > 1)}
    out = run(f, jnp.asarray(x), jnp.asarray(fx), jnp.asarray(mask))
    check(out["sum_where"], np.sum(x, axis=1, where=mask, dtype=np.int32))
    check(out["sum_where_init"], np.sum(x, axis=1, where=mask, initial=10, dtype=np.int32))
    check(out["sum_init"], np.int32(20))
    check(out["prod_where"], np.prod(x + 1, where=mask, dtype=np.int32))
    check(out["max_init"], np.int32(9))
    check(out["max_init_low"], np.max(x, axis=0, initial=-1))
    check(out["min_where_init"], np.min(fx, axis=1, where=mask, initial=10.0))
    check(out["max_where_init"], np.max(fx, where=mask, initial=-100.0))
    check(out["mean_where"], np.mean(fx, axis=1, where=mask))
    check(out["var_where"], np.var(fx, axis=1, where=mask), rtol=1e-6)
    check(out["all_where"], np.all(fx > 0, axis=1, where=mask))
    check(out["any_where"], np.any(fx < 0, where=mask))
    check(out["sum_where_keep"], np.sum(fx, axis=0, keepdims=True, where=fx > 1))


def test_var_std_ddof(run):
    out = run(lambda x: (jnp.var(x, axis=0, ddof=1), jnp.std(x, ddof=1), x.var(correction=1),
                         x.std(axis=1)), jnp.asarray(_R[0]))
    check(out[0], np.var(_R[0], axis=0, ddof=1), rtol=1e-6)
    check(out[1], np.std(_R[0], ddof=1), rtol=1e-6)
    check(out[2], np.var(_R[0], ddof=1), rtol=1e-6)
    check(out[3], np.std(_R[0], axis=1), rtol=1e-6)


def test_var_std_of_complex_are_real(run):
    """mean(|a - mean(a)|**2), real (float32 for complex64), as NumPy and JAX."""
    a = np.array([1 + 2j, 3 - 1j, -.5 + .5j], np.complex64)
    m = np.array([True, True, False])
    out = run(lambda a, m: (jnp.var(a), jnp.std(a), jnp.var(a, ddof=1), jnp.var(a, where=m),
                            jnp.var(a, dtype=jnp.complex64)), a, m)
    check(out[0], np.var(a), rtol=1e-6)
    assert np.var(a).dtype == np.float32 and abs(np.var(a) - 3.5555553) < 1e-6
    check(out[1], np.std(a), rtol=1e-6)
    check(out[2], np.var(a, ddof=1), rtol=1e-6)
    check(out[3], np.float32(3.25), rtol=1e-6)
    assert out[4].dtype == np.complex64 and out[4].shape == ()
    np.testing.assert_allclose(complex(out[4]), complex(np.var(a)), rtol=1e-6)
    with pytest.raises(ValueError, match="complex"):
        jnp.var(a, dtype=jnp.float32)          # JAX refuses it too


def test_half_precision_mean_var_std_compute_in_float32(run):
    """As JAX: float16 and bfloat16 mean/var/std accumulate in float32 and round once (the
    count of 100000 elements overflows float16); an explicit dtype= of mean computes in it."""
    h = np.full(100000, 3, np.float16)
    r = (np.arange(4096) % 7).astype(np.float16) + np.float16(1000)

    def f(h, r):
        b = r.astype(jnp.bfloat16)
        return (jnp.mean(h), jnp.var(h), jnp.std(h), jnp.mean(r), jnp.var(r), jnp.std(r),
                jnp.var(r, dtype=jnp.float16), jnp.mean(r, dtype=jnp.float32), jnp.mean(b),
                jnp.var(b), jnp.sum(h), jnp.sum(h, dtype=jnp.float32), jnp.mean(r, axis=0),
                jnp.mean(r, dtype=jnp.float16))
    out = run(f, h, r)
    r64 = r.astype(np.float64)
    check(out[0], np.float16(3))
    check(out[1], np.float16(0))
    check(out[2], np.float16(0))
    check(out[3], np.float16(r64.mean()))          # JAX: 1003.
    check(out[4], np.float16(r64.var()))           # JAX: 4.
    check(out[5], np.float16(r64.std()))           # JAX: 2.
    check(out[6], np.float16(r64.var()))
    check(out[7], np.float32(r64.mean()), rtol=1e-6)
    assert out[8].dtype == jnp.bfloat16 and float(out[8]) == 1004.0   # JAX: 1004
    b64 = r.astype(jnp.bfloat16).astype(np.float64)   # 1000..1006 round to multiples of 4
    assert out[9].dtype == jnp.bfloat16 and float(out[9]) == 7.84375   # JAX too
    assert float(np.asarray(b64.var(), jnp.bfloat16)) == 7.84375
    check(out[10], np.float16(np.inf))             # the sum itself overflows, as in JAX
    check(out[11], np.float32(300000))
    check(out[12], np.float16(r64.mean()))
    check(out[13], np.float16(np.inf))             # a float16 sum of 4108285, as in JAX


def test_reduction_errors():
    with pytest.raises(ValueError):
        jnp.max(jnp.zeros((0, 3)))
    with pytest.raises(ValueError):
        jnp.argmax(jnp.zeros(0))
    with pytest.raises(ValueError):
        jnp.max(jnp.ones(3), where=jnp.array([True, False, True]))   # needs initial=
    check(jnp.sum(jnp.zeros((0, 3)), axis=0), np.zeros(3, np.float32))
    check(jnp.max(jnp.zeros((0, 3)), axis=1), np.zeros(0, np.float32))
    with pytest.raises(np.exceptions.AxisError):
        jnp.sum(jnp.ones((2, 3)), axis=2)
    with pytest.raises(ValueError):
        jnp.sum(jnp.ones((2, 3)), axis=(0, -2))
    with pytest.raises(NotImplementedError):
        jnp.sum(jnp.ones(3), out=jnp.ones(()))


def test_max_min_nan(run):
    v = np.array([[3.0, np.nan, 1.0], [0.0, 2.0, 1.0]], np.float32)
    out = run(lambda x: (jnp.max(x), jnp.min(x, axis=1), jnp.max(x, axis=0)), jnp.asarray(v))
    check(out[0], np.float32(np.nan))
    check(out[1], np.min(v, axis=1))
    check(out[2], np.max(v, axis=0))


# -- products ------------------------------------------------------------------------------------

_A23 = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
_B34 = np.arange(12, dtype=np.float32).reshape(3, 4) / 4
_V3 = np.array([1.0, -2.0, 0.5], np.float32)
_V4 = np.array([2.0, 1.0, 0.0, -1.0], np.float32)


def _products(a, b, v3, v4):
    return {"dot11": jnp.dot(v3, v3), "dot21": jnp.dot(a, v3), "dot12": jnp.dot(v3, b),
            "dot22": jnp.dot(a, b), "dot0": jnp.dot(2.0, a), "dotNd": jnp.dot(
                jnp.reshape(jnp.arange(24.0), (2, 3, 4)), jnp.reshape(jnp.arange(40.0), (5, 4, 2))),
            "mm11": jnp.matmul(v3, v3), "mm21": a @ v3, "mm12": v3 @ b, "mm22": a @ b,
            "mm_batch": jnp.matmul(jnp.reshape(jnp.arange(24.0), (2, 1, 3, 4)),
                                   jnp.reshape(jnp.arange(40.0), (5, 4, 2))),
            "mm_batch_vec": jnp.reshape(jnp.arange(24.0), (2, 3, 4)) @ v4,
            "mm_vec_batch": v3 @ jnp.reshape(jnp.arange(24.0), (2, 3, 4)),
            "mm_int": jnp.arange(6).reshape(2, 3) @ jnp.arange(3),
            "mm_mixed": jnp.arange(6).reshape(2, 3) @ b,
            "vdot": jnp.vdot(a, a), "vdot_mixed": jnp.vdot(jnp.arange(3), v3),
            "inner11": jnp.inner(v3, v3), "inner22": jnp.inner(a, a),
            "inner_scalar": jnp.inner(a, 2.0),
            "outer": jnp.outer(v3, v4), "outer2d": jnp.outer(a, v3),
            "method": a.dot(v3)}


def _check_products(out):
    a3 = np.arange(24.0, dtype=np.float32)
    rtol = 1e-6
    check(out["dot11"], np.dot(_V3, _V3), rtol=rtol)
    check(out["dot21"], np.dot(_A23, _V3), rtol=rtol)
    check(out["dot12"], np.dot(_V3, _B34), rtol=rtol)
    check(out["dot22"], np.dot(_A23, _B34), rtol=rtol)
    check(out["dot0"], 2 * _A23)
    check(out["dotNd"], np.dot(a3.reshape(2, 3, 4), np.arange(40.0, dtype=np.float32).reshape(
        5, 4, 2)), rtol=rtol)
    check(out["mm11"], np.matmul(_V3, _V3), rtol=rtol)
    check(out["mm21"], _A23 @ _V3, rtol=rtol)
    check(out["mm12"], _V3 @ _B34, rtol=rtol)
    check(out["mm22"], _A23 @ _B34, rtol=rtol)
    check(out["mm_batch"], a3.reshape(2, 1, 3, 4) @ np.arange(40.0, dtype=np.float32).reshape(
        5, 4, 2), rtol=rtol)
    check(out["mm_batch_vec"], a3.reshape(2, 3, 4) @ _V4, rtol=rtol)
    check(out["mm_vec_batch"], _V3 @ a3.reshape(2, 3, 4), rtol=rtol)
    check(out["mm_int"], np.arange(6).reshape(2, 3) @ np.arange(3), dtype=np.int32)
    check(out["mm_mixed"], np.arange(6).reshape(2, 3) @ _B34, dtype=np.float32, rtol=rtol)
    check(out["vdot"], np.vdot(_A23, _A23), rtol=rtol)
    check(out["vdot_mixed"], np.vdot(np.arange(3), _V3), dtype=np.float32, rtol=rtol)
    check(out["inner11"], np.inner(_V3, _V3), rtol=rtol)
    check(out["inner22"], np.inner(_A23, _A23), rtol=rtol)
    check(out["inner_scalar"], 2 * _A23)
    check(out["outer"], np.outer(_V3, _V4))
    check(out["outer2d"], np.outer(_A23, _V3))
    check(out["method"], _A23.dot(_V3), rtol=rtol)


def test_products_jit():
    out = pyree.jit(_products)(_A23, _B34, _V3, _V4)
    _check_products(out)


def test_products_eager_2d_and_batched():
    a, b = jnp.asarray(_A23), jnp.asarray(_B34)
    check(jnp.dot(a, b), _A23 @ _B34, rtol=1e-6)
    check(a @ b, _A23 @ _B34, rtol=1e-6)
    check(jnp.inner(a, a), np.inner(_A23, _A23), rtol=1e-6)
    check(jnp.outer(jnp.asarray(_V3), jnp.asarray(_V4)), np.outer(_V3, _V4))
    check(jnp.asarray(_V3) @ jnp.asarray(_V3), _V3 @ _V3, rtol=1e-6)
    check(jnp.asarray(_V3) @ b, _V3 @ _B34, rtol=1e-6)
    batched = jnp.reshape(jnp.arange(24.0), (2, 1, 3, 4)) @ jnp.reshape(jnp.arange(40.0),
                                                                          (5, 4, 2))
    check(batched, np.arange(24.0, dtype=np.float32).reshape(2, 1, 3, 4)
          @ np.arange(40.0, dtype=np.float32).reshape(5, 4, 2), rtol=1e-6)


def test_products_eager():
    out = _products(*(jnp.asarray(v) for v in (_A23, _B34, _V3, _V4)))
    _check_products(out)


def test_matmul_errors():
    with pytest.raises(TypeError, match=r"\(2, 3\).*\(2, 3\)"):
        jnp.ones((2, 3)) @ jnp.ones((2, 3))
    with pytest.raises(ValueError):
        jnp.matmul(jnp.ones(()), jnp.ones(3))
    with pytest.raises(ValueError, match=r"\(5,\), \(2,\)"):  # batch dims: ValueError, as in JAX
        jnp.ones((5, 2, 3)) @ jnp.ones((2, 3, 4))


# -- shapes ---------------------------------------------------------------------------------------

def test_shape_functions(run):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    def f(x):
        return {"reshape": jnp.reshape(x, (6, -1)), "reshape_m": x.reshape(4, 6),
                "reshape_t": x.reshape((-1, 2)), "reshape_int": jnp.reshape(x, 24),
                "ravel": jnp.ravel(x), "flatten": x.flatten(), "T": x.T,
                "transpose": jnp.transpose(x), "transpose_axes": jnp.transpose(x, (1, -1, 0)),
                "transpose_m": x.transpose(2, 0, 1), "swap": jnp.swapaxes(x, 0, -1),
                "swap_m": x.swapaxes(1, 2), "move": jnp.moveaxis(x, 0, -1),
                "move2": jnp.moveaxis(x, (0, 1), (-1, 0)), "expand0": jnp.expand_dims(x, 0),
                "expand_neg": jnp.expand_dims(x, -1), "expand_t": jnp.expand_dims(x, (0, 3)),
                "squeeze": jnp.squeeze(jnp.expand_dims(x, (0, 2))),
                "squeeze_ax": jnp.squeeze(jnp.expand_dims(x, (0, 2)), axis=2),
                "squeeze_t": jnp.squeeze(jnp.expand_dims(x, (0, 2)), axis=(0, -3)),
                "broadcast": jnp.broadcast_to(x[0, 0], (2, 3, 4)),
                "broadcast_s": jnp.broadcast_to(2.0, (3,)),
                "broadcast_col": jnp.broadcast_to(x[:, :1, :1], (2, 5, 4)),
                "mT": x.mT, "newaxis": x[:, jnp.newaxis]}
    out = run(f, jnp.asarray(a))
    check(out["reshape"], a.reshape(6, -1))
    check(out["reshape_m"], a.reshape(4, 6))
    check(out["reshape_t"], a.reshape(-1, 2))
    check(out["reshape_int"], a.reshape(24))
    check(out["ravel"], a.ravel())
    check(out["flatten"], a.ravel())
    check(out["T"], a.T)
    check(out["transpose"], np.transpose(a))
    check(out["transpose_axes"], np.transpose(a, (1, 2, 0)))
    check(out["transpose_m"], a.transpose(2, 0, 1))
    check(out["swap"], np.swapaxes(a, 0, -1))
    check(out["swap_m"], a.swapaxes(1, 2))
    check(out["move"], np.moveaxis(a, 0, -1))
    check(out["move2"], np.moveaxis(a, (0, 1), (-1, 0)))
    check(out["expand0"], np.expand_dims(a, 0))
    check(out["expand_neg"], np.expand_dims(a, -1))
    check(out["expand_t"], np.expand_dims(a, (0, 3)))
    check(out["squeeze"], a)
    check(out["squeeze_ax"], np.expand_dims(a, 0))
    check(out["squeeze_t"], a)
    check(out["broadcast"], np.broadcast_to(a[0, 0], (2, 3, 4)))
    check(out["broadcast_s"], np.full(3, 2.0, np.float32), weak=True)
    check(out["broadcast_col"], np.broadcast_to(a[:, :1, :1], (2, 5, 4)))
    check(out["mT"], np.swapaxes(a, -1, -2))
    check(out["newaxis"], a[:, None])


def test_concatenate_stack(run):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(4, dtype=np.int8).reshape(2, 2)

    def f(a, b, i8):
        return {"axis0": jnp.concatenate([a, a + 1]), "axis1": jnp.concatenate([a, b], axis=1),
                "axis_neg": jnp.concatenate((a, b, a), axis=-1),
                "none": jnp.concatenate([a, b], axis=None),
                "int_promote": jnp.concatenate([b, jnp.arange(2).reshape(1, 2)]),
                "i8_only": jnp.concatenate([i8, i8]),
                "i8_weak": jnp.concatenate([i8, jnp.array([7])]),
                "dtype": jnp.concatenate([a, a], dtype=jnp.int32),
                "one": jnp.concatenate([a]), "stack": jnp.stack([a, a * 2]),
                "stack1": jnp.stack([a, a * 2], axis=1), "stack_neg": jnp.stack([a, a], -1),
                "stack_promote": jnp.stack([i8, jnp.ones(2)]),
                "stack_scalars": jnp.stack([jnp.array(1.0), jnp.array(2.0)])}
    out = run(f, jnp.asarray(a), jnp.asarray(b), jnp.array([1, 2], jnp.int8))
    check(out["axis0"], np.concatenate([a, a + 1]))
    check(out["axis1"], np.concatenate([a, b.astype(np.float32)], axis=1))
    check(out["axis_neg"], np.concatenate([a, b.astype(np.float32), a], axis=-1))
    check(out["none"], np.concatenate([a.ravel(), b.ravel().astype(np.float32)]))
    check(out["int_promote"], np.concatenate([b, np.arange(2).reshape(1, 2)]).astype(np.int32))
    check(out["i8_only"], np.array([1, 2, 1, 2], np.int8))
    check(out["i8_weak"], np.array([1, 2, 7], np.int32))   # jnp.array([7]) is strong int32
    check(out["dtype"], np.concatenate([a, a]).astype(np.int32))
    check(out["one"], a)
    check(out["stack"], np.stack([a, a * 2]))
    check(out["stack1"], np.stack([a, a * 2], axis=1))
    check(out["stack_neg"], np.stack([a, a], -1))
    check(out["stack_promote"], np.array([[1, 2], [1, 1]], np.float32))
    check(out["stack_scalars"], np.array([1.0, 2.0], np.float32), weak=True)


def test_shape_errors():
    x = jnp.arange(6)
    with pytest.raises(TypeError, match="cannot reshape"):
        x.reshape(4, 2)
    with pytest.raises(TypeError):
        x.reshape(-1, 4)
    with pytest.raises(ValueError):
        x.reshape(-1, -1)
    with pytest.raises(ValueError):
        jnp.concatenate([jnp.ones((2, 2)), jnp.ones(2)])
    with pytest.raises(ValueError):
        jnp.concatenate([])
    with pytest.raises(ValueError):
        jnp.stack([jnp.ones(2), jnp.ones(3)])
    with pytest.raises(ValueError):
        jnp.broadcast_to(jnp.ones(3), (2, 4))
    with pytest.raises(np.exceptions.AxisError):
        jnp.swapaxes(jnp.ones((2, 3)), 0, 2)
    with pytest.raises(ValueError):
        jnp.transpose(jnp.ones((2, 3)), (0, 0))


def test_shape_ndim_size_functions():
    x = jnp.ones((2, 3))
    assert jnp.shape(x) == (2, 3) and jnp.ndim(x) == 2 and jnp.size(x) == 6
    assert jnp.shape(2.0) == () and jnp.ndim(np.ones((1, 2, 3))) == 3
    assert jnp.broadcast_shapes((2, 1), (3,)) == (2, 3)


# -- errors ---------------------------------------------------------------------------------------

def test_lists_are_not_arrays():
    with pytest.raises(TypeError, match="list"):
        jnp.sum([1, 2, 3])
    with pytest.raises(TypeError):
        jnp.exp([1.0, 2.0])
    with pytest.raises(TypeError):
        jnp.add([1], 2)
    with pytest.raises(TypeError):
        jnp.reshape([1, 2], (2, 1))
    with pytest.raises(TypeError):
        jnp.ones(2) + [1, 2]


def test_broadcast_error_names_shapes_and_line():
    with pytest.raises(ValueError) as info:
        jnp.ones((2, 3)) + jnp.ones((4,))  # the line the error names
    message = str(info.value)
    assert "(2, 3)" in message and "(4,)" in message
    assert f"{__file__}:{_line_of('# the line the error names')}:" in message


def test_broadcast_error_under_jit_names_line():
    def f(a, b):
        return jnp.where(a > 0, a, b)  # the jitted line the error names
    with pytest.raises(ValueError) as info:
        pyree.jit(f)(jnp.ones((2, 3)), jnp.ones((3, 2)))
    message = str(info.value)
    assert "(2, 3)" in message and "(3, 2)" in message
    assert f"{__file__}:{_line_of('# the jitted line the error names')}:" in message


def test_other_errors_name_the_line():
    with pytest.raises(TypeError) as info:
        jnp.sum([1, 2])  # sum of a list
    assert f"{__file__}:{_line_of('# sum of a list')}:" in str(info.value)
    with pytest.raises(TypeError) as info:
        jnp.ones((2, 3)) @ jnp.ones((2, 3))  # matmul mismatch
    assert f"{__file__}:{_line_of('# matmul mismatch')}:" in str(info.value)


def test_array_of_a_python_int_checks_the_requested_dtype():
    assert int(jnp.array(2**31 + 3, dtype=jnp.uint32)) == 2**31 + 3
    assert jnp.array(2**31 + 3, dtype=jnp.uint32).dtype == jnp.uint32
    assert int(jnp.array(-1, dtype=jnp.int8)) == -1
    with pytest.raises(OverflowError, match="uint8"):
        jnp.array(300, dtype=jnp.uint8)
