"""Special functions (lax.erf_inv, lgamma, digamma, ...), the rest of NumPy's elementwise math
and the NaN-ignoring reductions, against NumPy and SciPy.

Expected result dtypes were computed once with JAX 0.10.2 (x64 off) and pasted here.
"""
import warnings

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree.test_util import check_grads

from conftest import ON_CPU


@pytest.fixture(params=["eager", "jit"])
def run(request):
    """``run(f, *args)``: ``f(*args)`` as is, or through ``pyree.jit``."""
    if request.param == "eager":
        return lambda f, *args: f(*args)
    return lambda f, *args: pyree.jit(f)(*args)


@pytest.fixture
def jit():
    """``jit(f, *args)``: ``pyree.jit(f)(*args)`` (for tests whose eager run would compile
    a kernel per primitive, dtype and rank: the eager paths are covered by smaller tests)."""
    return lambda f, *args: pyree.jit(f)(*args)


def close(got, want, rtol, atol=0.0, signed_zeros=True):
    """Values (NaN where NaN) and, for zeros and infinities, signs."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    with np.errstate(all="ignore"):
        ok = np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                        equal_nan=True)
        if signed_zeros:
            ok &= (np.signbit(got) == np.signbit(want)) | np.isnan(want) | (want != 0)
    assert ok.all(), f"at {np.argwhere(~ok)[:5].tolist()}: got {got[~ok][:5]}, want {want[~ok][:5]}"


# -- lax special functions ----------------------------------------------------------------------

POINTS = np.array([-3.5, -1.0, -0.999, -0.5, -1e-6, -0.0, 0.0, 1e-6, 0.3, 0.5, 0.999, 1.0, 1.5,
                   3.0, 20.0, 88.0, 89.5, 200.0, 1e20, np.inf, -np.inf, np.nan])
GAMMA_POINTS = np.array([-2.5, -0.5, 1e-6, 0.1, 0.5, 0.9, 1.5, 2.5, 3.0, 10.0, 14.9, 15.1,
                         100.0, 1e5, 1e17, -10.5, np.inf, np.nan, 0.0, -1.0, -3.0])

LAX_UNARY = {  # name: (reference, float32 rtol, atol)
    "asin": (np.arcsin, 1e-5, 0), "acos": (np.arccos, 1e-5, 0), "atan": (np.arctan, 1e-5, 0),
    "sinh": (np.sinh, 3e-7, 0), "cosh": (np.cosh, 3e-7, 0), "asinh": (np.arcsinh, 3e-7, 0),
    "acosh": (np.arccosh, 3e-7, 0), "atanh": (np.arctanh, 3e-7, 0),
    "exp2": (np.exp2, 3e-7, 0), "erfc": (sp.erfc, 1e-6, 1e-38),
    "erf_inv": (sp.erfinv, 1e-6, 0),
}


def _lax_all(x):
    return {name: getattr(lax, name)(x) for name in LAX_UNARY}


def test_lax_unary_float32(jit):
    x = POINTS.astype(np.float32)
    got = jit(_lax_all, jnp.asarray(x))
    for name, (ref, rtol, atol) in LAX_UNARY.items():
        with np.errstate(all="ignore"):
            want = ref(x.astype(np.float64)).astype(np.float32)
        assert got[name].dtype == np.float32, name
        # SciPy's erfinv(-0.0) is +0.0; pyree's keeps the sign (as JAX's).
        close(got[name], want, rtol, atol, signed_zeros=name != "erf_inv")


def test_lax_unary_float64(x64, jit):
    got = jit(_lax_all, jnp.asarray(POINTS))
    for name, (ref, _, atol) in LAX_UNARY.items():
        with np.errstate(all="ignore"):
            want = ref(POINTS)
        assert got[name].dtype == np.float64, name
        close(got[name], want, 4e-16 * 10 if name != "erfc" else 1e-14, atol and 1e-300,
              signed_zeros=name != "erf_inv")


# jax.lax.erf_inv / jax.lax.erf of these float32s in JAX 0.10.2 on CPU
ERF_INV_IN = [-0.9990000128746033, -0.5, -0.0010000000474974513, 0.30000001192092896, 0.699999988079071, 0.9999999403953552]
ERF_INV = [-2.3267576694488525, -0.4769362807273865, -0.0008862271206453443, 0.27246275544166565, 0.7328690886497498, 3.8325066566467285]
ERF_IN = [-4.0, -2.5, -0.10000000149011612, 0.20000000298023224, 1.2999999523162842, 3.9000000953674316]
ERF = [-1.0, -0.9995930194854736, -0.11246291548013687, 0.22270257771015167, 0.934008002281189, 1.0]


def test_erf_and_erf_inv_float32_bit_for_bit_with_jax(run):
    got_inv, got_erf = run(lambda a, b: (lax.erf_inv(a), lax.erf(b)),
                           np.float32(ERF_INV_IN), np.float32(ERF_IN))
    np.testing.assert_array_equal(np.asarray(got_inv), np.float32(ERF_INV))
    np.testing.assert_array_equal(np.asarray(got_erf), np.float32(ERF))


def test_fused_multiply_add_rounds_once(run):
    from pyree._lax_special import fused_multiply_add
    a = np.float32([1 + 2 ** -12, 3.0, -0.1])
    b = np.float32([1 - 2 ** -12, 1 / 3, 7.0])
    c = np.float32([-1.0, -1.0, 0.7])
    want = (a.astype(np.float64) * b + c).astype(np.float32)  # exact product, one rounding
    got = run(fused_multiply_add, a, b, c)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert np.asarray(got)[0] == np.float32(-2.0 ** -24)  # a*b rounded first would give 0
    check_grads(fused_multiply_add, (jnp.asarray(a), jnp.asarray(b), jnp.asarray(c)), order=2)
    v = pyree.vmap(fused_multiply_add, in_axes=(0, 0, 0))(a[:, None], b[:, None], c[:, None])
    np.testing.assert_array_equal(np.asarray(v)[:, 0], want)


def _gammas(x):
    return lax.lgamma(x), lax.digamma(x)


def test_lgamma_digamma_float32(run):
    x = GAMMA_POINTS.astype(np.float32)
    lg, dg = run(_gammas, jnp.asarray(x))
    xd = x.astype(np.float64)
    want_lg = sp.gammaln(xd)
    want_lg[np.isneginf(xd)] = np.inf
    close(lg, want_lg.astype(np.float32), 1e-5, 2e-6)
    want_dg = sp.psi(xd)
    want_dg[(xd <= 0) & (xd == np.floor(xd))] = np.nan  # poles: NaN (as XLA)
    close(dg, want_dg.astype(np.float32), 1e-5, 2e-6, signed_zeros=False)


def test_lgamma_digamma_float64(x64, jit):
    lg, dg = jit(_gammas, jnp.asarray(GAMMA_POINTS))
    want_lg = sp.gammaln(GAMMA_POINTS)
    close(lg, want_lg, 2e-15, 1e-14)
    want_dg = sp.psi(GAMMA_POINTS)
    want_dg[(GAMMA_POINTS <= 0) & (GAMMA_POINTS == np.floor(GAMMA_POINTS))] = np.nan
    close(dg, want_dg, 2e-15, 1e-14, signed_zeros=False)
    # Away from the roots (where only the absolute error is small), relative precision.
    x = np.linspace(-7.7, 60.3, 301)
    lg, dg = _gammas(jnp.asarray(x))
    close(lg, sp.gammaln(x), 1e-13, 1e-14)
    close(dg, sp.psi(x), 1e-13, 1e-14)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.uint32])
def test_population_count_and_clz(dtype):
    info = np.iinfo(dtype)
    x = np.array([0, 1, 5, 127, info.max, info.min, info.max // 3], dtype)
    bits = 8 * np.dtype(dtype).itemsize
    unsigned = x.view(f"u{np.dtype(dtype).itemsize}").astype(np.uint64)
    want_pop = np.array([bin(int(v)).count("1") for v in unsigned])
    want_clz = np.array([bits - int(v).bit_length() for v in unsigned])
    pop, lz = lax.population_count(jnp.asarray(x)), lax.clz(jnp.asarray(x))
    assert pop.dtype == x.dtype and lz.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(pop), want_pop)
    np.testing.assert_array_equal(np.asarray(pyree.jit(lax.clz)(jnp.asarray(x))), want_clz)


def test_bitcast_convert_type(jit):
    x = np.array([1.0, -2.5, np.inf], np.float32)
    same, narrow, wide, back = jit(lambda v: (
        lax.bitcast_convert_type(v, jnp.int32), lax.bitcast_convert_type(v, jnp.uint8),
        lax.bitcast_convert_type(lax.bitcast_convert_type(v, jnp.uint16), jnp.float32),
        lax.bitcast_convert_type(lax.bitcast_convert_type(v, jnp.int32), jnp.float32)),
        jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(same), x.view(np.int32))
    np.testing.assert_array_equal(np.asarray(narrow), x.view(np.uint8).reshape(3, 4))
    np.testing.assert_array_equal(np.asarray(wide), x)
    np.testing.assert_array_equal(np.asarray(back), x)
    assert narrow.shape == (3, 4) and narrow.dtype == np.uint8
    scalar = lax.bitcast_convert_type(jnp.float32(1.0), jnp.int16)
    np.testing.assert_array_equal(np.asarray(scalar), np.float32([1.0]).view(np.int16))
    with pytest.raises(ValueError, match="last dimension of size 4"):
        lax.bitcast_convert_type(jnp.zeros(3, jnp.uint8), jnp.float32)
    with pytest.raises(TypeError, match="bool"):
        lax.bitcast_convert_type(jnp.zeros(3, jnp.int8), jnp.bool_)


def test_bitcast_float64(x64, jit):
    x = np.array([1.0, -2.5e300])
    got, back = jit(lambda v: (lax.bitcast_convert_type(v, jnp.float32), lax.bitcast_convert_type(
        lax.bitcast_convert_type(v, jnp.float32), jnp.float64)), jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(got), x.view(np.float32).reshape(2, 2))
    np.testing.assert_array_equal(np.asarray(back), x)


def test_nextafter_and_complex_parts(jit):
    x = np.array([1.0, -1.0, 0.0, 0.0, np.inf, np.nan, 3.0], np.float32)
    y = np.array([2.0, 0.0, -1.0, 1.0, 0.0, 1.0, 3.0], np.float32)
    got = jit(lax.nextafter, jnp.asarray(x), jnp.asarray(y))
    want = np.nextafter(x, y)
    np.testing.assert_array_equal(np.asarray(got).view(np.int32)[want == want],
                                  want.view(np.int32)[want == want])
    z = np.array([1 + 2j, -3.5 - 0.5j], np.complex64)
    re, im, cj, made = jit(lambda v: (lax.real(v), lax.imag(v), lax.conj(v),
                                      lax.complex(lax.imag(v), lax.real(v))), jnp.asarray(z))
    np.testing.assert_array_equal(np.asarray(re), z.real)
    np.testing.assert_array_equal(np.asarray(im), z.imag)
    np.testing.assert_array_equal(np.asarray(cj), z.conj())
    np.testing.assert_array_equal(np.asarray(made), z.imag + 1j * z.real)
    assert re.dtype == np.float32 and made.dtype == np.complex64


def test_lax_type_errors():
    with pytest.raises(TypeError, match="lgamma does not accept dtype int32"):
        lax.lgamma(jnp.arange(3))
    with pytest.raises(TypeError, match="clz does not accept dtype float32"):
        lax.clz(jnp.ones(3))
    with pytest.raises(TypeError, match="real does not accept dtype float32"):
        lax.real(jnp.ones(3))
    with pytest.raises(TypeError, match="gcd takes integer"):
        jnp.gcd(jnp.ones(3), 2)
    with pytest.raises(TypeError, match="complex"):
        jnp.hypot(jnp.array([1j]), 1.0)


def test_lax_vmap():
    x = np.linspace(0.2, 3.0, 6, dtype=np.float32).reshape(2, 3)
    got = pyree.vmap(lambda v: (lax.lgamma(v), lax.digamma(v), lax.erf_inv(v / 4),
                                lax.population_count(lax.bitcast_convert_type(v, jnp.int32))),
                     in_axes=1)(jnp.asarray(x))
    close(got[0], sp.gammaln(x).T, 1e-5, 1e-6)
    close(got[1], sp.psi(x).T, 1e-5, 1e-6)
    close(got[2], sp.erfinv(x / 4).T, 1e-5, 1e-7)
    np.testing.assert_array_equal(
        np.asarray(got[3]), np.vectorize(lambda v: bin(int(v)).count("1"))(
            x.view(np.uint32)).T)


# -- pyree.numpy elementwise ------------------------------------------------------------------

X = np.array([-3.5, -1, -0.5, -0.0, 0.0, 0.5, 1, 1.5, 3, 20, 1e30, np.inf, -np.inf, np.nan],
             np.float32)
Y = np.array([2, -1, 0.5, 3, -0.0, np.nan, 1, -1.5, 3, 0, 1e30, np.inf, 5, 1], np.float32)
UNARY = ("exp2 log2 log10 arcsin arccos arctan sinh cosh arcsinh arccosh arctanh deg2rad "
         "rad2deg signbit fabs isneginf isposinf spacing nan_to_num isreal iscomplex real imag "
         "conj angle").split()
BINARY = "hypot logaddexp logaddexp2 copysign heaviside fmax fmin nextafter".split()
LOOSE = {"arcsin", "arccos", "arctan", "angle"}  # IREE's float32 atan2 is good to ~4e-6


def _all_unary(x):
    return {n: getattr(jnp, n)(x) for n in UNARY}


def _all_binary(x, y):
    out = {n: getattr(jnp, n)(x, y) for n in BINARY}
    out["isclose"] = jnp.isclose(x, y)
    out["isclose_nan"] = jnp.isclose(x, y, equal_nan=True)
    out["frexp"] = jnp.frexp(x)
    out["modf"] = jnp.modf(x)
    out["sinc"] = jnp.sinc(y[:-5])
    return out


def test_unary_values(jit):
    got = jit(_all_unary, jnp.asarray(X))
    for n in UNARY:
        with np.errstate(all="ignore"):
            want = getattr(np, n)(X)
        assert got[n].dtype == want.dtype, n
        if n == "spacing" and ON_CPU:  # the CPU flushes subnormal results (spacing(0)) to
            want = np.where(X == 0, 0.0, want).astype(np.float32)  # zero; GPUs keep them
        close(got[n], want, 1e-5 if n in LOOSE else 3e-7, signed_zeros=n != "spacing")


def test_binary_values(jit):
    got = jit(_all_binary, jnp.asarray(X), jnp.asarray(Y))
    with np.errstate(all="ignore"):
        for n in BINARY:
            want = getattr(np, n)(X, Y)
            close(got[n], want, 3e-7, signed_zeros=n not in ("fmax", "fmin"))
        np.testing.assert_array_equal(np.asarray(got["isclose"]), np.isclose(X, Y))
        np.testing.assert_array_equal(np.asarray(got["isclose_nan"]),
                                      np.isclose(X, Y, equal_nan=True))
        for g, w in zip(got["frexp"], np.frexp(X)):
            close(g, w, 0)
        for g, w in zip(got["modf"], np.modf(X)):
            close(g, w, 0)
        close(got["sinc"], np.sinc(Y[:-5]), 3e-7)
    assert got["frexp"][1].dtype == np.int32


def test_hypot_no_overflow():
    got = jnp.hypot(jnp.array([3e30, 3e-30, 0.0, np.inf, np.nan]),
                    jnp.array([4e30, 4e-30, 0.0, np.nan, 2.0]))
    close(got, np.array([5e30, 5e-30, 0.0, np.inf, np.nan], np.float32), 3e-7)


def test_integer_functions(jit):
    a = np.array([12, 7, 0, -4, 2 ** 31 - 1, 100, 832040], np.int32)
    b = np.array([18, 0, 0, 6, 2 ** 30, -75, 514229], np.int32)  # Fibonacci: Euclid's worst
    g, l, dm, ld = jit(lambda u, v: (jnp.gcd(u, v), jnp.lcm(u[:4], v[:4]), jnp.divmod(u, 7),
                                     jnp.ldexp(jnp.array([1.5, 1.0, 3.0, 0.0, -np.inf]),
                                               jnp.array([3, -120, 200, 1000, 2]))),
                       jnp.asarray(a), jnp.asarray(b))
    np.testing.assert_array_equal(np.asarray(g), np.gcd(a, b))
    np.testing.assert_array_equal(np.asarray(l), np.lcm(a[:4], b[:4]))
    np.testing.assert_array_equal(np.asarray(dm[0]), a // 7)
    np.testing.assert_array_equal(np.asarray(dm[1]), a % 7)
    np.testing.assert_array_equal(np.asarray(ld), np.ldexp(
        np.float32([1.5, 1.0, 3.0, 0.0, -np.inf]), [3, -120, 200, 1000, 2]))
    assert g.dtype == np.int32
    assert jnp.gcd(jnp.int8(6), jnp.uint8(4)).dtype == np.int16


def test_whole_array_comparisons():
    x = jnp.asarray(X)
    assert not bool(jnp.allclose(x, x))
    assert bool(jnp.allclose(x, x, equal_nan=True))
    assert bool(jnp.array_equal(x, x, equal_nan=True))
    assert not bool(jnp.array_equal(x, x))
    assert not bool(jnp.array_equal(jnp.ones(3), jnp.ones(2)))
    assert bool(jnp.array_equiv(jnp.ones((2, 3)), 1))
    assert not bool(jnp.array_equiv(jnp.ones(3), jnp.ones(2)))
    assert bool(jnp.isclose(jnp.int32(3), 3)) and jnp.isclose(1, 2).dtype == np.bool_


def test_complex_ufuncs():
    z = np.array([1 + 2j, -1 - 0.5j, 3 + 0j], np.complex64)
    v = jnp.asarray(z)
    close(jnp.real(v), z.real, 0)
    close(jnp.imag(v), z.imag, 0)
    np.testing.assert_array_equal(np.asarray(jnp.conj(v)), z.conj())
    close(jnp.angle(v), np.angle(z), 1e-5)
    close(jnp.angle(v, deg=True), np.angle(z, deg=True), 1e-5)
    np.testing.assert_array_equal(np.asarray(jnp.isreal(v)), np.isreal(z))
    np.testing.assert_array_equal(np.asarray(jnp.iscomplex(v)), np.iscomplex(z))
    np.testing.assert_array_equal(
        np.asarray(jnp.nan_to_num(jnp.array([complex(np.nan, np.inf)], jnp.complex64))),
        np.nan_to_num(np.array([complex(np.nan, np.inf)], np.complex64)))


def test_complex_round_and_lexicographic_max_min(run):
    """JAX 0.10.2's values: round rounds both parts; maximum/minimum and max/min order complex
    numbers by real part, then imaginary part."""
    c = np.array([1.26 + 2.75j, -1.5 + 0.5j, 2.5 - 3.5j], np.complex64)
    x = np.array([1 + 5j, 3 - 1j, 3 + 2j, -4 + 9j, complex(np.nan, 0), 2 + 1j], np.complex64)
    y = np.array([1 + 6j, 3 + 2j, 3 - 1j, -4 + 9j, 1 + 0j, 2 + 1j], np.complex64)
    m = np.array([[1 + 5j, 3 - 1j, 3 + 2j], [-4 + 9j, -4 + 1j, 0j]], np.complex64)
    mask = np.array([True, False, True])

    def f(c, x, y, m):
        return (jnp.round(c), jnp.round(c, 1), jnp.around(c), jnp.maximum(x, y),
                jnp.minimum(x, y), lax.max(x, y), jnp.max(m), jnp.min(m), jnp.max(m, axis=1),
                jnp.min(m, axis=1), jnp.max(m, axis=0, keepdims=True),
                jnp.max(m, axis=1, initial=3 + 3j), jnp.min(m, axis=1, initial=-4 + 5j),
                jnp.max(m, axis=1, where=mask, initial=-10 + 0j), m.max(), m.min(axis=0))
    got = run(f, c, x, y, m)
    want = ([1 + 3j, -2, 2 - 4j], [1.3 + 2.8j, -1.5 + .5j, 2.5 - 3.5j], [1 + 3j, -2, 2 - 4j],
            [1 + 6j, 3 + 2j, 3 + 2j, -4 + 9j, 1, 2 + 1j],
            [1 + 5j, 3 - 1j, 3 - 1j, -4 + 9j, 1, 2 + 1j],
            [1 + 6j, 3 + 2j, 3 + 2j, -4 + 9j, 1, 2 + 1j], 3 + 2j, -4 + 1j, [3 + 2j, 0j],
            [1 + 5j, -4 + 1j], [[1 + 5j, 3 - 1j, 3 + 2j]], [3 + 3j, 3 + 3j], [-4 + 5j, -4 + 1j],
            [3 + 2j, 0j], 3 + 2j, [-4 + 9j, -4 + 1j, 0j])
    for g, w in zip(got, want):
        assert g.dtype == np.complex64
        np.testing.assert_allclose(np.asarray(g), np.asarray(w, np.complex64), rtol=1e-6)
    # NaN real parts win (NumPy's propagation; JAX's result depends on the order).
    assert np.isnan(complex(jnp.max(x)).real)
    with pytest.raises(TypeError):
        jnp.argmax(m)                                   # JAX refuses complex too
    with pytest.raises(TypeError):
        jnp.argmin(m)


# Result dtypes of JAX 0.10.2 (x64 off) for inputs of these dtypes.
UNARY_DTYPES = {  # bool, int8, int32, uint8, float16, float32
    "float": ("float32", "float32", "float32", "float32", "float16", "float32"),
    "keep": ("bool", "int8", "int32", "uint8", "float16", "float32"),
    "bool": ("bool",) * 6,
}
UNARY_KIND = {"exp2": "float", "log2": "float", "log10": "float", "arcsin": "float",
              "arccos": "float", "arctan": "float", "sinh": "float", "cosh": "float",
              "arcsinh": "float", "arccosh": "float", "arctanh": "float", "deg2rad": "float",
              "rad2deg": "float", "sinc": "float", "fabs": "float", "spacing": "float",
              "angle": "float", "signbit": "bool", "isneginf": "bool", "isposinf": "bool",
              "isreal": "bool", "iscomplex": "bool", "nan_to_num": "keep", "real": "keep",
              "imag": "keep", "conj": "keep"}
BINARY_DTYPES = {  # (int32, int32), (int8, uint8), (bool, bool), (float32, int32), (int32, 1.0)
    "hypot": ("float32", "float32", "float32", "float32", "float32"),
    "logaddexp": ("float32", "float32", "float32", "float32", "float32"),
    "copysign": ("float32", "float32", "float32", "float32", "float32"),
    "heaviside": ("float32", "float32", "float32", "float32", "float32"),
    "float_power": ("float32", "float32", "float32", "float32", "float32"),
    "nextafter": ("float32", "float32", "float32", "float32", "float32"),
    "fmax": ("int32", "int16", "bool", "float32", "float32"),
    "isclose": ("bool",) * 5,
    "arctan2": ("float32",) * 5,
    "pow": ("int32", "int16", "int32", "float32", "float32"),
}


def test_result_dtypes():
    for name, kind in UNARY_KIND.items():
        for dtype, want in zip(("bool", "int8", "int32", "uint8", "float16", "float32"),
                               UNARY_DTYPES[kind]):
            got = pyree.eval_shape(getattr(jnp, name), jnp.zeros(2, dtype))
            assert got.dtype == np.dtype(want), (name, dtype, got.dtype)
    pairs = (("int32", "int32"), ("int8", "uint8"), ("bool", "bool"), ("float32", "int32"),
             ("int32", None))
    for name, wants in BINARY_DTYPES.items():
        for (d1, d2), want in zip(pairs, wants):
            b = 1.0 if d2 is None else jnp.ones(2, d2)
            got = pyree.eval_shape(getattr(jnp, name), jnp.ones(2, d1), b)
            assert got.dtype == np.dtype(want), (name, d1, d2, got.dtype)
    i32 = jnp.ones(2, jnp.int32)
    assert pyree.eval_shape(jnp.ldexp, i32, i32).dtype == np.float32
    assert [a.dtype for a in pyree.eval_shape(jnp.modf, i32)] == [np.float32] * 2
    assert [a.dtype for a in pyree.eval_shape(jnp.frexp, i32)] == [np.float32, np.int32]


@st.composite
def broadcast_pair(draw):
    shape = draw(st.lists(st.integers(0, 3), min_size=0, max_size=2).map(tuple))
    other = tuple(d if draw(st.booleans()) else 1 for d in shape)
    other = other[draw(st.integers(0, len(other))):]
    return (shape, other) if draw(st.booleans()) else (other, shape)


@settings(max_examples=8, deadline=None)
@given(shapes=broadcast_pair(), seed=st.integers(0, 2 ** 16))
def test_broadcasting_eager(shapes, seed):
    """Eager mode (shape-polymorphic kernels) over drawn shapes: 0-d, size 0, broadcasting."""
    dtype = "float32"
    rng = np.random.RandomState(seed)
    a = np.asarray(rng.randn(*shapes[0]) * 3).astype(dtype)
    b = np.asarray(rng.randn(*shapes[1]) * 3).astype(dtype)
    with np.errstate(all="ignore"):
        for name in ("hypot", "logaddexp", "fmax", "heaviside"):
            got, want = getattr(jnp, name)(a, b), getattr(np, name)(a, b)
            close(got, want.astype(got.dtype), 3e-6, 1e-6, signed_zeros=False)
        close(jnp.isclose(a, b), np.isclose(a, b), 0)
        for name in ("sinh", "exp2", "signbit", "arcsin"):
            got = getattr(jnp, name)(a)
            close(got, np.asarray(getattr(np, name)(a)), 1e-5, 1e-6, signed_zeros=False)
        close(lax.lgamma(jnp.abs(a) + 0.5), sp.gammaln(np.abs(a) + 0.5), 1e-5, 1e-5)


# -- reductions ---------------------------------------------------------------------------------

A = np.array([[1.0, np.nan, 3.0, -2.0], [np.nan, np.nan, np.nan, np.nan],
              [2.0, -1.0, 0.5, 4.0]], np.float32)
NAN_REDUCTIONS = "nansum nanprod nanmean nanvar nanstd nanmax nanmin".split()


@pytest.mark.parametrize("axis", [None, -1, (0, 1)])
def test_nan_reductions(jit, axis):
    got = jit(lambda a: {n: getattr(jnp, n)(a, axis=axis) for n in NAN_REDUCTIONS}, A)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in NAN_REDUCTIONS:
            want = getattr(np, n)(A, axis=axis)
            assert got[n].dtype == want.dtype, n
            close(got[n], want, 1e-6, 1e-6)


def test_nan_reductions_keywords(jit):
    b = np.nan_to_num(A, nan=1.5)
    mask = np.array([True, False, True, True])
    got = jit(lambda a, bb: (
        jnp.nansum(a, axis=1, keepdims=True), jnp.nanvar(a, axis=0, ddof=1, keepdims=True),
        jnp.nanargmax(a, axis=1), jnp.nanargmin(a, axis=0), jnp.nanargmax(bb),
        jnp.nanmax(a, axis=0, keepdims=True), jnp.nanmean(a, axis=1, where=mask),
        jnp.nansum(jnp.arange(4), dtype=jnp.float32), jnp.sum(bb, axis=(0, -1), where=mask,
                                                              initial=1.0)), A, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        close(got[0], np.nansum(A, axis=1, keepdims=True), 1e-6)
        close(got[1], np.nanvar(A, axis=0, ddof=1, keepdims=True), 1e-6)
        np.testing.assert_array_equal(np.asarray(got[2]), [2, -1, 3])  # -1: all NaN (JAX)
        np.testing.assert_array_equal(np.asarray(got[3]), [0, 2, 2, 0])
        assert int(got[4]) == np.argmax(b)
        close(got[5], np.nanmax(A, axis=0, keepdims=True), 0)
        close(got[6], np.nanmean(np.where(mask, A, np.nan), axis=1), 1e-6)
        assert got[7].dtype == np.float32 and float(got[7]) == 6.0
        close(got[8], np.sum(b, axis=(0, 1), where=mask, initial=1.0), 1e-6)


def test_average_ptp_count_nonzero(jit):
    b = np.nan_to_num(A, nan=0.0)
    w = np.array([1.0, 2.0, 3.0, 0.5], np.float32)
    got = jit(lambda a, ww: (
        jnp.average(a), jnp.average(a, axis=1, weights=ww),
        jnp.average(a, axis=0, weights=a * 0 + 2, returned=True),
        jnp.average(a, axis=1, keepdims=True), jnp.ptp(a, axis=0), jnp.ptp(a),
        jnp.count_nonzero(a, axis=1), jnp.count_nonzero(a), jnp.count_nonzero(a, axis=0,
                                                                              keepdims=True)),
        b, w)
    close(got[0], np.average(b), 1e-6)
    close(got[1], np.average(b, axis=1, weights=w), 1e-6)
    close(got[2][0], np.average(b, axis=0, weights=b * 0 + 2), 1e-6)
    close(got[2][1], np.full(4, 6.0), 0)
    close(got[3], np.average(b, axis=1, keepdims=True), 1e-6)
    close(got[4], np.ptp(b, axis=0), 0)
    close(got[5], np.ptp(b), 0)
    np.testing.assert_array_equal(np.asarray(got[6]), np.count_nonzero(b, axis=1))
    assert int(got[7]) == np.count_nonzero(b) and got[7].dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got[8]), np.count_nonzero(b, axis=0, keepdims=True))
    ints = jnp.array([[3, 1], [0, 7]])
    assert jnp.ptp(ints).dtype == np.int32 and int(jnp.ptp(ints)) == 7
    assert jnp.average(ints).dtype == np.float32
    with pytest.raises(ValueError, match="do not match"):
        jnp.average(b, axis=1, weights=jnp.ones(3))


@settings(max_examples=6, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=0, max_size=2).map(tuple),
       seed=st.integers(0, 2 ** 16), data=st.data())
def test_nan_reductions_shapes_eager(shape, seed, data):
    rng = np.random.RandomState(seed)
    a = np.asarray(rng.randn(*shape)).astype(np.float32)
    a[np.asarray(rng.rand(*shape)) < 0.3] = np.nan
    axis = None
    if len(shape):
        axis = data.draw(st.sampled_from([None, -1, tuple(range(len(shape)))]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in ("nansum", "nanmean", "nanstd"):
            close(getattr(jnp, n)(a, axis=axis), getattr(np, n)(a, axis=axis), 1e-5, 1e-6)
        size = a.size if axis is None else int(np.prod([shape[i] for i in np.atleast_1d(
            axis)]))
        if size:
            close(jnp.nanmax(a, axis=axis), np.nanmax(a, axis=axis), 0)
        close(jnp.count_nonzero(a, axis=axis), np.count_nonzero(a, axis=axis), 0)


# -- gradients --------------------------------------------------------------------------------

def test_grads_special():
    x = jnp.array([0.3, 1.7, 4.2])
    check_grads(lax.lgamma, (x,), order=2)
    check_grads(lax.digamma, (x,), order=1)
    check_grads(lax.digamma, (jnp.array([-0.4, -2.7]),), order=1)
    check_grads(lax.erf_inv, (jnp.array([-0.6, 0.1, 0.8]),), order=2)
    check_grads(lax.erfc, (jnp.array([-0.6, 0.1, 2.0]),), order=1)


def test_grads_elementwise():
    x = jnp.array([-0.7, 0.2, 0.6])
    for fn in (jnp.arcsin, jnp.arccos, jnp.arctan, jnp.sinh, jnp.cosh, jnp.arcsinh,
               jnp.arctanh, jnp.exp2, jnp.sinc):
        check_grads(fn, (x,), order=1)
    check_grads(jnp.log2, (jnp.array([0.3, 2.5]),), order=1)
    check_grads(jnp.arccosh, (jnp.array([1.5, 3.0]),), order=1)
    y = jnp.array([0.4, -1.3, 2.0])
    for fn in (jnp.hypot, jnp.logaddexp, jnp.logaddexp2, jnp.copysign, jnp.float_power):
        check_grads(fn, (jnp.abs(x) + 0.1, y), order=1)


def test_grads_at_awkward_points():
    # hypot at (0, 0): JAX's 0.5 (abs has slope 1 at 0, max and min split a tie evenly; the
    # derivative does not exist there).
    assert np.asarray(pyree.grad(lambda a: jnp.hypot(a, 0.0))(0.0)) == 0.5
    assert np.asarray(pyree.grad(lambda a: jnp.hypot(a, 1.0))(0.0)) == 0.0
    np.testing.assert_allclose(
        np.asarray(pyree.grad(lambda a, b: jnp.hypot(a, b), argnums=(0, 1))(3.0, 4.0)),
        [0.6, 0.8], rtol=1e-6)
    # sinc at 0: sinc'(0) = 0, sinc''(0) = -pi**2 / 3.
    d1 = pyree.grad(jnp.sinc)
    assert float(d1(0.0)) == 0.0
    np.testing.assert_allclose(float(pyree.grad(d1)(0.0)), -np.pi ** 2 / 3, rtol=1e-5)
    check_grads(jnp.sinc, (jnp.array([0.0, 1e-3, 0.5]),), order=2, atol=2e-2)
    # logaddexp with -inf: derivatives 0 and 1.
    g = pyree.grad(lambda a, b: jnp.logaddexp(a, b), argnums=(0, 1))(-np.inf, 0.5)
    np.testing.assert_array_equal(np.asarray(g), [0.0, 1.0])
    g = pyree.grad(lambda a, b: jnp.logaddexp(a, b), argnums=(0, 1))(1.0, 1.0)
    np.testing.assert_allclose(np.asarray(g), [0.5, 0.5], rtol=1e-6)
    g = pyree.grad(lambda a, b: jnp.logaddexp2(a, b), argnums=(0, 1))(0.0, 0.0)
    np.testing.assert_allclose(np.asarray(g), [0.5, 0.5], rtol=1e-6)
    # i0e(x) = exp(-|x|) I0(x) at 0: JAX's slope 0 (its one-sided slopes are -1 and 1).
    from pyree.scipy import special
    assert float(pyree.grad(special.i0e)(0.0)) == 0.0


def test_grads_complex_parts():
    x = jnp.array([0.5, -1.5])
    np.testing.assert_allclose(np.asarray(pyree.grad(lambda v: jnp.sum(
        lax.real(lax.complex(v, 2 * v)) + lax.imag(lax.complex(v, 3 * v))))(x)), [4.0, 4.0])
    np.testing.assert_allclose(np.asarray(pyree.grad(lambda v: jnp.sum(
        lax.imag(lax.conj(lax.complex(v, v)))))(x)), [-1.0, -1.0])


def test_grads_reductions():
    a = jnp.array([[1.0, np.nan, 3.0], [2.0, -1.0, 0.5]])
    # NaNs get no gradient from the sum (as in JAX).
    g = pyree.grad(lambda v: jnp.nansum(v))(a)
    np.testing.assert_array_equal(np.asarray(g), [[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
    b = jnp.array([[1.0, 2.5, 3.0], [2.0, -1.0, 0.5]])
    for fn in (lambda v: jnp.nanmean(v, axis=0), lambda v: jnp.nanstd(v, axis=1),
               lambda v: jnp.average(v, axis=1, weights=jnp.array([1.0, 2.0, 3.0])),
               lambda v: jnp.ptp(v, axis=1)):
        check_grads(fn, (b,), order=1)


def test_float64_functions(x64, jit):
    x = np.array([-0.9, -1e-10, 0.3, 0.999999, 2.5, 700.0, 1e300])
    got = jit(lambda v: (jnp.sinh(v), jnp.cosh(v), jnp.arcsinh(v), jnp.arctanh(v[:4]),
                         jnp.exp2(v[:6]), jnp.log2(jnp.abs(v)), jnp.hypot(v, v[::-1])),
              jnp.asarray(x))
    with np.errstate(all="ignore"):
        wants = np.sinh(x), np.cosh(x), np.arcsinh(x), np.arctanh(x[:4]), np.exp2(x[:6]), \
            np.log2(np.abs(x)), np.hypot(x, x[::-1])
    for g, w in zip(got, wants):
        assert g.dtype == np.float64
        close(g, w, 4e-15)
    close(jit(jnp.arccosh, np.array([1.0 + 1e-12, 2.0, 1e10])),
          np.arccosh(np.array([1.0 + 1e-12, 2.0, 1e10])), 4e-15)


def test_complex_constants_under_jit():
    x = np.array([1 + 1j, -2.0], np.complex64)
    got = pyree.jit(lambda v: v * 2.0 + (1 + 2j) + v * np.array([1j, 2], np.complex64))(x)
    want = x * 2 + (1 + 2j) + x * np.array([1j, 2], np.complex64)
    assert np.asarray(got).dtype == np.complex64
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
