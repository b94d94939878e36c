"""float64 and complex128 math against NumPy, under ``jit`` and eagerly.

IREE's llvm-cpu backend cannot compile float64 sin, cos, tan, atan2, cbrt and rem (fmod), nor
any complex128 transcendental function; pyree lowers them to its own formulas
(transpiler/backend/float64_math.py), and float64 pow too (IREE's loses ~500 ulps). Errors are
measured in ulps of NumPy's result, which is itself within an ulp (but for one input, below).

Subnormal float64 values are flushed to zero by the CPU in IREE's runtime (as in XLA), so the
inputs avoid them, but for cbrt and rem, which work on the bits, and sin and tan, which return
tiny arguments as they are.

Every test compiles a few modules (~1-2 s each, the Payne-Hanek reduction of sin/cos/tan is
the largest): cases are batched into one jitted function and one eager kernel per function.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import pyree
from pyree import lax

from conftest import ON_CPU

# NumPy's references warn about the infinities and NaNs among the inputs.
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")

F64, C128 = np.dtype(np.float64), np.dtype(np.complex128)
INF, NAN = np.inf, np.nan
HUGE = np.finfo(np.float64).max


@pytest.fixture(autouse=True)
def x64():
    saved = pyree.config.enable_x64
    pyree.config.update("enable_x64", True)
    yield
    pyree.config.update("enable_x64", saved)


def ulps(got, want) -> np.ndarray:
    """|got - want| in units of the last place of ``want``; 0 where they are equal (NaN equals
    NaN), inf where one is NaN or infinite and the other is not."""
    got, want = np.asarray(got, F64), np.asarray(want, F64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(all="ignore"):
        err = np.abs(got - want) / np.spacing(np.abs(want))
    return np.where(same, 0.0, np.where(np.isfinite(err), err, np.inf))


def jit_and_eager(fn, *args):
    """[("jit", result), ("eager", result)] of ``fn(*args)``, as NumPy arrays (a tuple of them
    where ``fn`` returns several)."""
    def as_numpy(out):
        if isinstance(out, (tuple, list)):
            return tuple(np.asarray(o) for o in out)
        return np.asarray(out)
    return [("jit", as_numpy(pyree.jit(fn)(*args))), ("eager", as_numpy(fn(*args)))]


def flushed(values) -> np.ndarray:
    """``values`` with subnormals flushed to (signed) zero, as the CPU does in IREE (GPUs keep
    them, as NumPy does)."""
    values = np.asarray(values)
    if not ON_CPU:
        return values
    return np.where(np.abs(values) < np.finfo(F64).tiny, np.copysign(0.0, values), values)


def assert_ulps(got, want, max_ulps: float, what: str, *inputs) -> None:
    assert got.dtype == F64, f"{what}: dtype {got.dtype}"
    err = ulps(got, want)
    worst = int(np.argmax(err))
    at = ", ".join(repr(np.ravel(a)[worst]) for a in inputs)
    assert err.max() <= max_ulps, (f"{what}: {err.max():.3g} ulps at ({at}): got "
                                   f"{np.ravel(got)[worst]!r}, NumPy {np.ravel(want)[worst]!r}")


def assert_same_signs(got, want, what: str) -> None:
    """The same sign bits where NumPy's result is not NaN (-0.0 vs 0.0 included)."""
    keep = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got)[keep], np.signbit(want)[keep], what)


# -- sin, cos, tan ----------------------------------------------------------------------------

def _trig_inputs(rng) -> np.ndarray:
    multiples = np.arange(-400, 401) * (np.pi / 2)
    return np.concatenate([
        rng.uniform(-10, 10, 2000),
        rng.uniform(-2.0 ** 21, 2.0 ** 21, 1000),  # across the switch to Payne-Hanek at 2**20
        np.exp(rng.uniform(-690, 709, 2000)) * rng.choice([-1, 1], 2000),
        multiples, np.nextafter(multiples, INF), np.nextafter(multiples, -INF),
        [0.0, -0.0, 5e-324, -1e-310, 2.0 ** -26, -(2.0 ** -26), 3e-9, 1e-300, 1e22, 2.0 ** 20,
         2.0 ** 20 + 0.5, 2.0 ** 52 + 1, 2.0 ** 1000, HUGE, -HUGE],
    ])


# (max ulps) measured over 10**6 random points per range: sin 1, cos 1, tan 2.
TRIG = {"sin": (lax.sin, np.sin, 2), "cos": (lax.cos, np.cos, 2), "tan": (lax.tan, np.tan, 3)}


@pytest.mark.parametrize("name", sorted(TRIG))
def test_trig(name):
    fn, ref, max_ulps = TRIG[name]
    x = _trig_inputs(np.random.default_rng(0))
    # Without large arguments, eager mode's kernel takes its branch without Payne-Hanek.
    small = np.random.default_rng(1).uniform(-1e3, 1e3, x.shape)
    for args in ((x,), (small,)):
        for mode, out in jit_and_eager(fn, *args):
            assert_ulps(out, ref(args[0]), max_ulps, f"{name} {mode}", args[0])
            assert_same_signs(out, ref(args[0]), f"{name} {mode}")


def test_trig_special_values_and_shapes():
    x = np.array([INF, -INF, NAN, -0.0, 0.0])
    for mode, (s, c, t) in jit_and_eager(lambda v: (lax.sin(v), lax.cos(v), lax.tan(v)), x):
        np.testing.assert_array_equal(s, [NAN, NAN, NAN, -0.0, 0.0], mode)
        np.testing.assert_array_equal(c, [NAN, NAN, NAN, 1.0, 1.0], mode)
        np.testing.assert_array_equal(t, [NAN, NAN, NAN, -0.0, 0.0], mode)
        assert_same_signs(s, np.sin(x), mode)
        assert_same_signs(t, np.tan(x), mode)
    # Rank 0 and rank 2 (eagerly, elementwise kernels are flattened).
    for x in (np.float64(1e300), np.arange(6.0).reshape(2, 3) * 1e5):
        for mode, out in jit_and_eager(lax.sin, np.asarray(x)):
            assert out.shape == np.shape(x)
            assert_ulps(out, np.sin(x), 2, f"sin {mode}", x)


def test_trig_hardest_reduction():
    # The float64 closest to a multiple of pi/2 (the fraction left is ~2**-61): Payne-Hanek
    # with its 190-bit fraction gets cos right. The values are mpmath's at 3000 bits
    # (NumPy's cos is 8 ulps off here).
    x = np.array([6381956970095103 * 2.0 ** 797, 1e22, HUGE])
    expected = {
        "sin": [1.0, -0.8522008497671888, 0.004961954789184062],
        "cos": [-4.687165924254628e-19, 0.523214785395139, -0.9999876894265599],
        "tan": [-2.133485385753704e+18, -1.6287782256068988, -0.004962015874444895],
    }
    for mode, outs in jit_and_eager(lambda v: (lax.sin(v), lax.cos(v), lax.tan(v)), x):
        for name, out in zip(("sin", "cos", "tan"), outs):
            assert_ulps(out, expected[name], 1, f"{name} {mode}", x)


# -- atan2 ------------------------------------------------------------------------------------

def test_atan2():
    rng = np.random.default_rng(2)
    n = 3000
    y = np.concatenate([rng.uniform(-10, 10, n), np.exp(rng.uniform(-700, 700, n)) *
                        rng.choice([-1, 1], n), rng.uniform(0, 1, n)])
    x = np.concatenate([rng.uniform(-10, 10, n), np.exp(rng.uniform(-700, 700, n)) *
                        rng.choice([-1, 1], n), np.ones(n)])
    # Every pair of special values: C99's (and NumPy's) zeros, infinities and NaN.
    specials = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -1e300, 1e-300, INF, -INF, NAN])
    sy, sx = (a.ravel() for a in np.meshgrid(specials, specials))
    y, x = np.concatenate([y, sy]), np.concatenate([x, sx])
    for mode, out in jit_and_eager(lax.atan2, y, x):
        want = flushed(np.arctan2(y, x))
        assert_ulps(out, want, 2, f"atan2 {mode}", y, x)  # measured: 1
        assert_same_signs(out, want, f"atan2 {mode}")


# -- cbrt -------------------------------------------------------------------------------------

def correctly_rounded_cbrt(x):
    """cbrt(x) to within 0.5 ulp (but for values within ~1e-19 of a tie): NumPy's (glibc's),
    which is 2 ulps off on some CPUs (AMD znver3), refined by a Newton step in long double."""
    root = np.cbrt(x).astype(np.longdouble)
    with np.errstate(all="ignore"):
        refined = root - (root ** 3 - x) / (3 * root ** 2)
    ok = np.isfinite(refined)
    return np.where(ok, refined.astype(F64), np.cbrt(x))


def test_cbrt():
    rng = np.random.default_rng(3)
    n = 3000
    x = np.concatenate([
        rng.uniform(-100, 100, n),
        np.exp(rng.uniform(-744, 709, n)) * rng.choice([-1, 1], n),  # subnormals included
        [0.0, -0.0, 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308, HUGE, -HUGE, 8.0,
         -27.0, INF, -INF, NAN],
    ])
    roots = np.concatenate([np.arange(-3000, 3001) * 7.0,
                            rng.integers(1, 2 ** 17, 500) * 2.0 ** rng.integers(-300, 300, 500)])
    cubes = roots ** 3  # exact: the roots have at most 17 significant bits
    for mode, (out, cube_roots) in jit_and_eager(lambda a, b: (lax.cbrt(a), lax.cbrt(b)),
                                                 x, cubes):
        assert_ulps(out, correctly_rounded_cbrt(x), 0.5, f"cbrt {mode}", x)
        assert_same_signs(out, np.cbrt(x), f"cbrt {mode}")
        np.testing.assert_array_equal(cube_roots, roots, f"cbrt of perfect cubes, {mode}")


# -- rem (fmod) -------------------------------------------------------------------------------

def test_rem_is_exact():
    rng = np.random.default_rng(4)
    n = 3000
    x = np.concatenate([rng.uniform(-100, 100, n), np.exp(rng.uniform(-744, 709, n)) *
                        rng.choice([-1, 1], n), [1e300, -1e300, HUGE, 7.0, -7.0, -4.0, 3e-310]])
    y = np.concatenate([rng.uniform(-10, 10, n), np.exp(rng.uniform(-744, 709, n)) *
                        rng.choice([-1, 1], n), [1e-300, 3.0, 5e-324, 2.0, -2.0, 2.0, 2e-310]])
    specials = np.array([0.0, -0.0, 1.5, -1.5, 1e-300, INF, -INF, NAN])
    sx, sy = (a.ravel() for a in np.meshgrid(specials, specials))
    x, y = np.concatenate([x, sx]), np.concatenate([y, sy])
    for mode, out in jit_and_eager(lax.rem, x, y):
        np.testing.assert_array_equal(out, np.fmod(x, y), f"rem {mode}")
        assert_same_signs(out, np.fmod(x, y), f"rem {mode}")
    # Small quotients only: eager mode's kernel takes its branch without the long division.
    for mode, out in jit_and_eager(lax.rem, x, np.full_like(x, 0.75)):
        np.testing.assert_array_equal(out, np.fmod(x, 0.75), f"rem {mode}")


def test_remainder_and_floor_divide_use_rem():
    import pyree.numpy as jnp
    x = np.array([7.5, -7.5, 1e20, -0.0, 5.0])
    y = np.array([2.0, 2.0, 3.0, 1.0, -3.0])
    np.testing.assert_array_equal(np.asarray(jnp.remainder(x, y)), np.remainder(x, y))
    np.testing.assert_array_equal(np.asarray(jnp.floor_divide(x, y)), np.floor_divide(x, y))
    np.testing.assert_array_equal(np.asarray(jnp.fmod(x, y)), np.fmod(x, y))


# -- pow --------------------------------------------------------------------------------------

def test_pow():
    rng = np.random.default_rng(5)
    n = 3000
    x = np.concatenate([np.exp(rng.uniform(-20, 20, n)), rng.uniform(0.99, 1.01, n),
                        np.exp(rng.uniform(-700, 700, n)), rng.uniform(-10, 10, n)])
    y = np.concatenate([rng.uniform(-30, 30, n), rng.uniform(-5e4, 5e4, n),
                        rng.uniform(-1, 1, n), rng.integers(-30, 30, n).astype(F64)])
    keep = np.abs(np.log(np.abs(x)) * y) < 700  # no overflow, no subnormal (flushed) result
    x, y = x[keep], y[keep]
    specials = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 1e-300, INF, -INF, NAN])
    sx, sy = (a.ravel() for a in np.meshgrid(specials, specials))
    x, y = np.concatenate([x, sx]), np.concatenate([y, sy])
    for mode, out in jit_and_eager(lax.pow, x, y):
        want = np.power(x, y)
        assert_ulps(out, want, 2, f"pow {mode}", x, y)  # measured: 1 (IREE's own: ~500)
        assert_same_signs(out, want, f"pow {mode}")


# -- complex128 -------------------------------------------------------------------------------

def _complex_inputs(rng, n, scale):
    return (rng.uniform(-scale, scale, n) + 1j * rng.uniform(-scale, scale, n)).astype(C128)


def relative_error(got, want) -> np.ndarray:
    """|got - want| / |want|, 0 where they are equal."""
    with np.errstate(all="ignore"):
        return np.where(got == want, 0.0, np.abs(got - want) / np.abs(want))


def _series(coefficients):
    """z -> sum c[k] z**(k + 1): a reference for tiny z, where NumPy's log1p loses digits."""
    return lambda z: sum(c * z ** (k + 1) for k, c in enumerate(coefficients))


COMPLEX = {
    # name: (lax function, NumPy reference)
    "exp": (lax.exp, np.exp), "log": (lax.log, np.log), "expm1": (lax.expm1, np.expm1),
    "log1p": (lax.log1p, np.log1p), "sin": (lax.sin, np.sin), "cos": (lax.cos, np.cos),
    "tan": (lax.tan, np.tan), "tanh": (lax.tanh, np.tanh), "sqrt": (lax.sqrt, np.sqrt),
    "rsqrt": (lax.rsqrt, lambda z: 1 / np.sqrt(z)),
    "logistic": (lax.logistic, lambda z: 1 / (1 + np.exp(-z))),
}


def test_complex128_functions():
    rng = np.random.default_rng(6)
    z = np.concatenate([_complex_inputs(rng, 1000, 5.0), _complex_inputs(rng, 200, 40.0),
                        np.array([1.0, -1.0, 1j, -1j, 2.0, 0.5 - 0.5j, 3j - 4], C128)])
    tiny = _complex_inputs(rng, 200, 1e-9)
    names = sorted(COMPLEX)
    fns = [COMPLEX[name][0] for name in names]
    jitted = pyree.jit(lambda a, b: [f(a) for f in fns] + [lax.log1p(b), lax.expm1(b)])(z, tiny)
    tiny_refs = {"log1p": _series([1, -1 / 2, 1 / 3]), "expm1": _series([1, 1 / 2, 1 / 6])}
    for i, name in enumerate(names):
        fn, ref = COMPLEX[name]
        with np.errstate(all="ignore"):
            want = ref(z)
        for mode, out in (("jit", jitted[i]), ("eager", fn(z))):
            out = np.asarray(out)
            assert out.dtype == C128
            # Relative to |want|: componentwise errors of complex functions are unbounded
            # where a component cancels.
            err = relative_error(out, want)
            worst = int(np.argmax(err))
            assert err.max() <= 8 * 2.0 ** -52, (
                f"{name} {mode}: relative error {err.max():.3g} at {z[worst]!r}: got "
                f"{out[worst]!r}, NumPy {want[worst]!r}")
    for j, name in enumerate(("log1p", "expm1")):
        out, want = np.asarray(jitted[len(names) + j]), tiny_refs[name](tiny)
        eager = np.asarray(COMPLEX[name][0](tiny))
        for mode, o in (("jit", out), ("eager", eager)):
            assert relative_error(o, want).max() <= 4 * 2.0 ** -52, f"{name} {mode}"


def test_complex128_special_values():
    z = np.array([0j, -0.0 + 0j, complex(INF, 0), complex(-INF, 0), complex(0, INF),
                  complex(NAN, 0), complex(710, 1.4), complex(0.5, 710), complex(1e22, 0.5)],
                 C128)
    fns = (lax.exp, lax.log, lax.sqrt, lax.sin, lax.tanh)
    for mode, outs in jit_and_eager(lambda v: tuple(f(v) for f in fns), z):
        exp, log, sqrt, sin, tanh = outs
        np.testing.assert_array_equal(exp[:2], [1, 1], mode)
        assert exp[2] == INF and exp[3] == 0 and np.isnan(exp[5])
        # e**710 overflows, e**710 cos(1.4) does not (NumPy's is inf).
        e355 = np.exp(355.0)
        np.testing.assert_allclose(exp[6].real, (e355 * np.cos(1.4)) * e355, rtol=1e-15)
        assert exp[6].imag == INF
        assert log[0] == -INF and log[2] == INF and log[3] == complex(INF, np.pi)
        # C99's csqrt(-inf + 0i) is 0 + i inf (NumPy's real part is NaN).
        np.testing.assert_array_equal(sqrt[:4], [0, 0, INF, complex(0, INF)], mode)
        assert sqrt[4] == complex(INF, INF)
        np.testing.assert_allclose(sin[7], (e355 * 0.5 * (np.sin(0.5) + 1j * np.cos(0.5))) * e355,
                                   rtol=1e-15)
        assert tanh[2] == 1 and tanh[3] == -1
        np.testing.assert_allclose(sin[8], np.sin(z[8]), rtol=1e-15)  # Payne-Hanek reduction


def test_complex128_pow():
    rng = np.random.default_rng(7)
    z, w = _complex_inputs(rng, 500, 3.0), _complex_inputs(rng, 500, 2.0)
    z = np.concatenate([z, [0j, 0j, 0j, 2 + 0j]])
    w = np.concatenate([w, [0j, 2 + 0j, -1 + 0j, 0.5 + 0j]])
    for mode, out in jit_and_eager(lax.pow, z, w):
        with np.errstate(all="ignore"):
            want = np.power(z, w)
        # exp magnifies the rounding of w log z by |w log z| (as in NumPy's own).
        magnitude = np.abs(w * np.log(np.where(z == 0, 1, z)))
        err = relative_error(out, want)
        finite = np.isfinite(want)
        assert (err[finite] <= 16 * 2.0 ** -52 * (1 + magnitude[finite])).all(), mode
        np.testing.assert_array_equal(out[-4:-1], want[-4:-1], mode)  # 0**w


# -- what is left to IREE ------------------------------------------------------------------------

def test_float64_functions_iree_computes():
    # Left to IREE, within a few ulps (measured: exp 1, expm1 2, tanh 3, logistic 2, erf 3,
    # log 1, log1p 2, sqrt 0, rsqrt 0; erf's reference is math.erf).
    rng = np.random.default_rng(8)
    real = np.concatenate([rng.uniform(-20, 20, 2000), [0.0, -0.0, 1e-20, -1e-20, 700.0, INF,
                                                        -INF, NAN]])
    positive = np.concatenate([np.exp(rng.uniform(-700, 700, 2000)), rng.uniform(0, 2, 500),
                               [0.0, 1.0, INF, NAN]])
    cases = [("exp", lax.exp, np.exp, real, 1), ("expm1", lax.expm1, np.expm1, real, 2),
             ("tanh", lax.tanh, np.tanh, real, 3),
             ("logistic", lax.logistic, lambda v: 1 / (1 + np.exp(-v)), real, 2),
             ("erf", lax.erf, np.vectorize(math.erf, otypes=[F64]), real / 4, 3),
             ("log", lax.log, np.log, positive, 1), ("log1p", lax.log1p, np.log1p, positive, 2),
             ("sqrt", lax.sqrt, np.sqrt, positive, 0),
             ("rsqrt", lax.rsqrt, lambda v: 1 / np.sqrt(v), positive, 1)]
    inputs = [case[3] for case in cases]
    jitted = pyree.jit(lambda args: [case[1](a) for case, a in zip(cases, args)])(inputs)
    for (name, fn, ref, arg, max_ulps), j in zip(cases, jitted):
        with np.errstate(all="ignore"):
            want = ref(arg)
        for mode, out in (("jit", j), ("eager", fn(arg))):
            assert_ulps(np.asarray(out), want, max_ulps, f"{name} {mode}", arg)
