"""Every primitive of ``pyree.lax`` against NumPy, eagerly and under ``jit``.

Each test runs the primitive two ways: eagerly on concrete arrays (one shape-polymorphic kernel
per primitive/dtype/rank; elementwise kernels are flattened to rank 1) and under ``pyree.jit``,
where all the cases of a test go into ONE jitted function returning a list, so that the test
costs one compile rather than one per case. IREE compiles cost ~0.3 s each: that, not
execution, is what this file's runtime is made of.

Tolerances: results that IEEE arithmetic defines exactly (add, mul, compare, convert, integer
ops, reductions of integers, max/min...) are compared exactly; float sums allow for another
summation order; transcendental functions allow the errors of IREE's polynomial approximations,
measured over the sampled domains (see ``TRANSCENDENTAL``).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyree
from pyree import lax

F32, F16 = np.dtype(np.float32), np.dtype(np.float16)
I32, I8, U8, U32 = np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.uint32)
BOOL = np.dtype(np.bool_)

INTS = [I32, U8, U32, I8]
ARITH = [F32, F16] + INTS
BITWISE = [BOOL] + INTS
ALL = ARITH + [BOOL]

# Shapes of elementwise tests: rank 0 to 3 and size-0 dimensions.
SHAPES = [(), (7,), (2, 3), (2, 3, 4), (0,), (3, 0, 2)]


# -- helpers -------------------------------------------------------------------------------------

def rand(rng, shape, dtype, lo=None, hi=None) -> np.ndarray:
    """Random values of ``dtype``: floats uniform in [lo, hi) (default [-10, 10)), integers
    uniform over [lo, hi] clipped to the dtype's range (default: the whole range)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo = info.min if lo is None else max(lo, info.min)
        hi = info.max if hi is None else min(hi, info.max)
        return np.asarray(rng.integers(lo, hi, size=shape, endpoint=True), dtype=dtype)
    lo = -10.0 if lo is None else lo
    hi = 10.0 if hi is None else hi
    return np.asarray(rng.uniform(lo, hi, size=shape), dtype=dtype)


def both(fn, cases, eager=lambda *case: True):
    """``fn(*case)`` for every case under jit (all cases in one jitted function, so one
    compile) and eagerly where ``eager(*case)`` (each new (primitive, dtype, rank) is an eager
    compile). Yields ``(case, [(mode, result), ...])``."""
    cases = [tuple(c) for c in cases]
    jitted = pyree.jit(lambda cs: [fn(*c) for c in cs])(cases)
    assert len(jitted) == len(cases)
    for case, j in zip(cases, jitted):
        runs = [("jit", j)]
        if eager(*case):
            runs.append(("eager", fn(*case)))
        yield case, runs


# Eager kernels are compiled per dtype: uint32 and int8 run under jit only where their code
# is the same as another dtype's.
EAGER_DTYPES = {F32, F16, I32, U8, BOOL}


def eager_subset(first_dtype):
    """Eager runs of elementwise cases: every rank-0/rank-N combination for ``first_dtype``,
    and same-rank operands (one rank-1 kernel, elementwise ops are flattened) for the others
    of EAGER_DTYPES."""
    def eager(*args):
        arrays = [a for a in args if isinstance(a, (np.ndarray, np.generic))]
        dtype = arrays[0].dtype
        return dtype == first_dtype or (dtype in EAGER_DTYPES and
                                        all(np.ndim(a) >= 1 for a in arrays))
    return eager


def _as_numpy(actual, expected: np.ndarray, what: str) -> np.ndarray:
    assert isinstance(actual, pyree.Array), f"{what}: got {type(actual).__name__}, not an Array"
    a = np.asarray(actual)
    assert a.shape == expected.shape, f"{what}: shape {a.shape}, expected {expected.shape}"
    assert a.dtype == expected.dtype, f"{what}: dtype {a.dtype}, expected {expected.dtype}"
    return a


def assert_exact(actual, expected, what: str = "") -> None:
    """Same shape, dtype and values (NaNs equal NaNs)."""
    expected = np.asarray(expected)
    a = _as_numpy(actual, expected, what)
    np.testing.assert_array_equal(a, expected, err_msg=what)


def assert_near(actual, expected, rtol: float, atol: float = 0.0, what: str = "") -> None:
    """Same shape and dtype; values within ``atol + rtol * |expected|``; NaN and inf where
    expected."""
    expected = np.asarray(expected)
    a = _as_numpy(actual, expected, what)
    np.testing.assert_allclose(a.astype(np.float64), expected.astype(np.float64), rtol=rtol,
                               atol=atol, equal_nan=True, err_msg=what)


def assert_signs(actual, expected, what: str = "") -> None:
    """The same sign bits (-0.0 vs 0.0), NaNs aside (their sign is arbitrary)."""
    a, expected = np.asarray(actual), np.asarray(expected)
    keep = ~np.isnan(expected)
    np.testing.assert_array_equal(np.signbit(a)[keep], np.signbit(expected)[keep],
                                  f"signs: {what}")


def desc(*arrays) -> str:
    return ", ".join(f"{np.asarray(a).dtype.name}{list(np.shape(a))}" for a in arrays)


# -- unary floating-point functions -------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _log_uniform(lo_exp, hi_exp):
    def sample(rng, n, dtype):
        return np.exp(rng.uniform(lo_exp, hi_exp, n)).astype(dtype)
    return sample


def _uniform(lo, hi):
    def sample(rng, n, dtype):
        return rng.uniform(lo, hi, n).astype(dtype)
    return sample


def _tiny(rng, n):
    """Values of both signs down to 1e-8, where relative accuracy is easy to lose."""
    return rng.uniform(-1, 1, n) * 10.0 ** rng.uniform(-8, 0, n)


# name: (float64 reference, float32 domain, float16 domain, special inputs, f32 (rtol, atol)).
# Subnormal float32 values are flushed to zero on CPU, in inputs and results (XLA does the
# same), so none is used: logistic(-100) = 3.8e-44 would come out as 0.
# The f32 tolerances are 4-10x the worst errors measured (200k points per domain, eager and
# jit alike) with IREE 3.13 on x86-64: in ulps, exp 1.0, log 0.8, log1p 1.9, expm1 2.4,
# sin 1.9, cos 2.2, tan 3.0, tanh 4.7, logistic 2.4, sqrt 0.5, rsqrt 1.5, cbrt 11.4, erf 5.5
# (relative: <= 3.3e-7 for all but cbrt, 1.1e-6; sin/cos absolute <= 1e-7 up to |x| = 1e5).
# float16 results are within 0.5 ulp (logistic, rsqrt: 2 ulps), so 2e-3 relative.
_INF, _NAN = np.inf, np.nan
TRANSCENDENTAL = {
    "exp": (np.exp, _uniform(-87, 88), _uniform(-10, 11),
            [0, -0.0, 1, -_INF, _INF, _NAN, -104, 89, 1e-7], (1e-6, 0)),
    "log": (np.log, _log_uniform(-80, 80), _log_uniform(-16, 11),
            [0, -0.0, -1, 1, 1 + 2 ** -23, 1 - 2 ** -24, _INF, -_INF, _NAN, 2e-38], (1e-6, 0)),
    "log1p": (np.log1p, _uniform(-0.999, 100), _uniform(-0.99, 100),
              [-1, -2, 0, 1e-10, -1e-10, 1e-30, _INF, _NAN], (1e-6, 0)),
    "expm1": (np.expm1, _uniform(-20, 88), _uniform(-10, 11),
              [0, 1e-10, -1e-10, 1e-30, -_INF, _INF, _NAN, -100], (1e-6, 0)),
    "sin": (np.sin, _uniform(-100, 100), _uniform(-10, 10),
            [0, 1e-10, -1e-10, -1e-30, np.pi, -np.pi / 2, _INF, -_INF, _NAN], (1e-6, 5e-7)),
    "cos": (np.cos, _uniform(-100, 100), _uniform(-10, 10),
            [0, 1e-10, -1e-10, np.pi, -np.pi / 2, _INF, _NAN], (1e-6, 5e-7)),
    "tan": (np.tan, _uniform(-100, 100), _uniform(-10, 10),
            [0, 1e-10, -1e-10, -1e-30, 1, _INF, _NAN], (2e-6, 0)),
    "tanh": (np.tanh, _uniform(-12, 12), _uniform(-6, 6),
             [0, 1e-10, -1e-10, 20, -20, _INF, -_INF, _NAN], (2e-6, 0)),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), _uniform(-30, 30), _uniform(-12, 12),
                 [0, 100, -80, -200, 1e-10, _INF, -_INF, _NAN], (1e-6, 0)),
    "sqrt": (np.sqrt, _log_uniform(-80, 80), _log_uniform(-16, 11),
             [0, -0.0, -1, 4, 2, _INF, -_INF, _NAN, 2e-38], (5e-7, 0)),
    "rsqrt": (lambda x: 1 / np.sqrt(x), _log_uniform(-80, 80), _log_uniform(-9, 11),
              [0, -1, 4, 0.25, _INF, _NAN], (1e-6, 0)),
    "cbrt": (np.cbrt, _uniform(-100, 100), _uniform(-100, 100),
             [0, -8, 27, -1e-30, 1e30, _INF, -_INF, _NAN], (5e-6, 0)),
    "erf": (_erf, _uniform(-5, 5), _uniform(-5, 5),
            [0, 1e-10, -1e-10, 5, -5, _INF, -_INF, _NAN], (2e-6, 0)),
}


def _reference(ref, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(ref(np.asarray(x, np.float64))).astype(x.dtype)


@pytest.mark.parametrize("name", sorted(TRANSCENDENTAL))
def test_transcendental(name):
    ref, dom32, dom16, specials, (rtol, atol) = TRANSCENDENTAL[name]
    rng = np.random.default_rng(list(TRANSCENDENTAL).index(name))
    fn = getattr(lax, name)
    cases, tols = [], []
    for dtype, dom, tol in ((F32, dom32, (rtol, atol)), (F16, dom16, (2e-3, 1e-3))):
        x = dom(rng, 4000, dtype)
        if name not in ("log", "sqrt", "rsqrt"):
            x = np.concatenate([x, _tiny(rng, 500).astype(dtype)])
        cases += [(x,), (np.asarray(specials, dtype),), (x[:24].reshape(2, 3, 4),),
                  (np.asarray(specials[1], dtype),), (x[:0].reshape(3, 0),)]
        tols += [tol] * 5
    eager = eager_subset(F32)  # rank-0 kernels for float32 only
    for ((x,), runs), (rtol_, atol_) in zip(both(fn, cases, eager), tols):
        expected = _reference(ref, x)
        for mode, out in runs:
            assert_near(out, expected, rtol_, atol_, f"{name} {mode} {desc(x)} at {x.ravel()[:12]}")


def test_sin_cos_odd_even_symmetry():
    # IREE's own range reduction uses floor(x * 2/pi): for small negative x it computed
    # sin(x) = -cos(x + pi/2), an error of ~6e-8 absolute and the wrong sign.
    x = -np.logspace(-30, 1, 200).astype(np.float32)
    for _, runs in both(lambda v: (lax.sin(v), lax.sin(lax.neg(v)), lax.cos(v),
                                   lax.cos(lax.neg(v)), lax.tan(v), lax.tan(lax.neg(v))), [(x,)]):
        for mode, (sn, sp, cn, cp, tn, tp) in runs:
            np.testing.assert_array_equal(np.asarray(sn), -np.asarray(sp), mode)
            np.testing.assert_array_equal(np.asarray(cn), np.asarray(cp), mode)
            np.testing.assert_array_equal(np.asarray(tn), -np.asarray(tp), mode)
            assert (np.asarray(sn)[x > -np.pi] <= 0).all()


def test_sin_cos_large_arguments():
    # Sinusoidal position embeddings take sin/cos of arguments in the thousands.
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-1e4, 1e4, 2000), [8192, -4096.5, 1e4, 100 * np.pi]])
    x = x.astype(np.float32)
    for _, runs in both(lambda v: (lax.sin(v), lax.cos(v)), [(x,)]):
        for mode, (s, c) in runs:
            assert_near(s, np.sin(x.astype(np.float64)).astype(np.float32), 0, 1e-6, f"sin {mode}")
            assert_near(c, np.cos(x.astype(np.float64)).astype(np.float32), 0, 1e-6, f"cos {mode}")


# -- other unary functions -----------------------------------------------------------------------

def _unary_cases(rng, dtypes, specials=None):
    cases = []
    for dtype in dtypes:
        cases += [(rand(rng, shape, dtype),) for shape in SHAPES]
        if specials is not None and dtype.kind == "f":
            cases.append((np.asarray(specials, dtype),))
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            cases.append((np.asarray([info.min, info.min + 1, -1 if dtype.kind == "i" else 1, 0,
                                      1, info.max], dtype),))
    return cases


_FLOAT_SPECIALS = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.49999997, -0.49999997,
                   1.2e-38, 3.4e38, -3.4e38, 8388609.0, -8388609.0, np.inf, -np.inf, np.nan]


def _round_afz(x):
    return np.copysign(np.floor(np.abs(x.astype(np.float64)) + 0.5), x).astype(x.dtype)


def _sign(x):
    return np.where(x == 0, x, np.sign(x))  # sign(-0.0) is -0.0, as in XLA


EXACT_UNARY = {
    # name: (lax function, NumPy reference, dtypes)
    "neg": (lax.neg, np.negative, [F32, F16, I32, I8, U8]),
    "abs": (lax.abs, np.abs, [F32, F16, I32, I8, U8]),
    "sign": (lax.sign, _sign, [F32, F16, I32, I8, U8, U32]),
    "floor": (lax.floor, np.floor, [F32, F16]),
    "ceil": (lax.ceil, np.ceil, [F32, F16]),
    "round_afz": (lambda x: lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO), _round_afz,
                  [F32, F16]),
    "round_even": (lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN), np.rint,
                   [F32, F16]),
    "not": (lax.bitwise_not, np.invert, [BOOL, I32, U8, U32, I8]),
    "is_finite": (lax.is_finite, np.isfinite, [F32, F16]),
}


@pytest.mark.parametrize("name", sorted(EXACT_UNARY))
def test_exact_unary(name):
    fn, ref, dtypes = EXACT_UNARY[name]
    rng = np.random.default_rng(len(name))
    cases = _unary_cases(rng, dtypes, _FLOAT_SPECIALS)
    for (x,), runs in both(fn, cases, eager_subset(dtypes[0])):
        with np.errstate(all="ignore"):
            expected = np.asarray(ref(x))
        for mode, out in runs:
            assert_exact(out, expected, f"{name} {mode} {desc(x)}")
            if x.dtype.kind == "f" and name != "is_finite":
                # -0.0 stays -0.0 (sign(-0.0), round(-0.4), ceil(-0.5), ...); neg(0.0) is -0.0.
                assert_signs(out, expected, f"{name} {mode} {desc(x)}")


def test_integer_pow():
    rng = np.random.default_rng(2)
    exponents = [0, 1, 2, 3, 7, -1, -2, -3]
    cases = []
    xf = np.concatenate([rng.uniform(-3, 3, 50), [0.0, -0.0, 1.0, -1.0, np.inf, np.nan]])
    xi = rng.integers(-6, 7, 40)
    for y in exponents:
        cases.append((xf.astype(np.float32), y))
        cases.append((xf[:24].astype(np.float32).reshape(2, 3, 4), y))
        cases.append((xf[:12].astype(np.float16), y))
        if y >= 0:
            cases.append((xi.astype(np.int32), y))
            cases.append((xi.astype(np.uint8), y))
    cases.append((np.float32(1.5), 3))
    cases.append((np.int32(-7), 0))
    cases.append((np.zeros((3, 0), np.float32), 2))
    cases_arrays = [c[0] for c in cases]
    jitted = pyree.jit(lambda xs: [lax.integer_pow(x, y) for x, (_, y) in zip(xs, cases)])(
        cases_arrays)
    for (x, y), j in zip(cases, jitted):
        x = np.asarray(x)
        with np.errstate(all="ignore"):
            if x.dtype.kind == "f":
                expected = (x.astype(np.float64) ** float(y)).astype(x.dtype)
            else:
                expected = (x.astype(np.int64) ** y).astype(x.dtype)  # wraps like the ints do
            if y == 0:
                expected = np.ones_like(x)  # x**0 == 1 even for 0, inf and NaN
        runs = [("jit", j)]
        if x.dtype == F32 or (y == 3 and x.ndim == 1):  # each (y, dtype, rank) is a kernel
            runs.append(("eager", lax.integer_pow(x, y)))
        for mode, out in runs:
            if x.dtype.kind == "f":
                # Each multiplication rounds: about |y| roundings.
                rtol = 2e-3 if x.dtype == F16 else 4e-7 * max(abs(y), 1)
                assert_near(out, expected, rtol, 0, f"integer_pow y={y} {mode} {desc(x)}")
            else:
                assert_exact(out, expected, f"integer_pow y={y} {mode} {desc(x)}")


# -- binary functions ---------------------------------------------------------------------------

def _trunc_div_rem(x: np.ndarray, y: np.ndarray):
    """C-style integer division and remainder, with XLA's results where C has none:
    x / 0 = -1 (all ones), x % 0 = x, MIN / -1 = MIN, MIN % -1 = 0."""
    x64, y64 = x.astype(np.int64), y.astype(np.int64)
    safe = np.where(y64 == 0, 1, y64)
    q = np.abs(x64) // np.abs(safe) * np.sign(x64) * np.sign(safe)
    r = x64 - q * safe
    q = np.where(y64 == 0, -1, q)
    r = np.where(y64 == 0, x64, r)
    # int64 -> narrower casts wrap: MIN / -1 = -MIN wraps to MIN.
    return q.astype(x.dtype), r.astype(x.dtype)


def _shift(kind: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """XLA's shifts: the amount is read as unsigned; amounts >= the bit width give 0
    (arithmetic right shifts fill with the sign bit)."""
    bits = 8 * x.dtype.itemsize
    unsigned = np.dtype(f"u{x.dtype.itemsize}")
    signed = np.dtype(f"i{x.dtype.itemsize}")
    amount = y.view(unsigned).astype(np.uint64)
    in_range = amount < bits
    amount = np.where(in_range, amount, 0).astype(np.uint64)
    if kind == "left":
        r = (x.view(unsigned).astype(np.uint64) << amount).astype(unsigned)
        r = np.where(in_range, r, 0).astype(unsigned)
    elif kind == "logical":
        r = (x.view(unsigned).astype(np.uint64) >> amount).astype(unsigned)
        r = np.where(in_range, r, 0).astype(unsigned)
    else:
        s = x.view(signed).astype(np.int64)
        r = np.where(in_range, s >> amount.astype(np.int64), s >> (bits - 1)).astype(signed)
    return r.view(x.dtype)


BINARY = {
    # name: (lax function, NumPy reference, dtypes)
    "add": (lax.add, np.add, ARITH),
    "sub": (lax.sub, np.subtract, ARITH),
    "mul": (lax.mul, np.multiply, ARITH),
    "max": (lax.max, np.maximum, ALL),
    "min": (lax.min, np.minimum, ALL),
    "and": (lax.bitwise_and, np.bitwise_and, BITWISE),
    "or": (lax.bitwise_or, np.bitwise_or, BITWISE),
    "xor": (lax.bitwise_xor, np.bitwise_xor, BITWISE),
    "eq": (lax.eq, np.equal, ALL),
    "ne": (lax.ne, np.not_equal, ALL),
    "lt": (lax.lt, np.less, ALL),
    "le": (lax.le, np.less_equal, ALL),
    "gt": (lax.gt, np.greater, ALL),
    "ge": (lax.ge, np.greater_equal, ALL),
    "shift_left": (lax.shift_left, lambda x, y: _shift("left", x, y), INTS),
    "shift_right_arithmetic": (lax.shift_right_arithmetic,
                               lambda x, y: _shift("arithmetic", x, y), INTS),
    "shift_right_logical": (lax.shift_right_logical, lambda x, y: _shift("logical", x, y), INTS),
}

_SPECIAL_PAIRS = [(0.0, -0.0), (-0.0, 0.0), (1.0, np.nan), (np.nan, 1.0), (np.nan, np.nan),
                  (np.inf, -np.inf), (-np.inf, np.inf), (np.inf, np.inf), (3.0, 3.0),
                  (-2.5, 1.2e-38), (65504.0, 65504.0), (-65504.0, 65504.0)]


def _binary_cases(rng, name, dtypes):
    """Every dtype: same-shape operands of ranks 1 to 3 and size 0, rank-0 pairs, rank-0 with
    rank-2 either side, and (floats) IEEE special values."""
    cases = []
    for dtype in dtypes:
        def y_of(shape):
            if name.startswith("shift"):
                bits = 8 * dtype.itemsize
                return rand(rng, shape, dtype, -2 if dtype.kind == "i" else 0, bits + 2)
            return rand(rng, shape, dtype)
        for shape in [(33,), (2, 3), (2, 3, 4), (0,), (2, 0, 3)]:
            cases.append((rand(rng, shape, dtype), y_of(shape)))
        cases.append((rand(rng, (), dtype), y_of(())))
        cases.append((rand(rng, (), dtype), y_of((3, 4))))
        cases.append((rand(rng, (3, 4), dtype), y_of(())))
        if dtype.kind == "f":
            a, b = zip(*_SPECIAL_PAIRS)
            cases.append((np.asarray(a, dtype), np.asarray(b, dtype)))
        if dtype.kind in "iu" and not name.startswith("shift"):
            info = np.iinfo(dtype)
            edge = np.asarray([info.min, info.max, 0, 1], dtype)
            cases.append((np.repeat(edge, 4), np.tile(edge, 4)))
    # Values that tie (compare, max/min) in every dtype.
    x = rand(rng, (20,), dtypes[0], 0, 3)
    cases.append((x, x[::-1].copy()))
    return cases


@pytest.mark.parametrize("name", list(BINARY))
def test_binary(name):
    fn, ref, dtypes = BINARY[name]
    rng = np.random.default_rng(len(name) * 7)
    cases = _binary_cases(rng, name, dtypes)
    # Rank-0 operands take one code path (broadcast_to_result): eagerly, a few rules try them.
    first = dtypes[0] if name in ("add", "max", "eq", "lt", "and", "shift_left") else None
    for (x, y), runs in both(fn, cases, eager_subset(first)):
        with np.errstate(all="ignore"):
            expected = np.asarray(ref(x, y))
        # NumPy rounds float16 arithmetic like IEEE float16 does: exact comparisons.
        for mode, out in runs:
            assert_exact(out, expected, f"{name} {mode} {desc(x, y)}\n x={x}\n y={y}")


def test_div_rem_float():
    rng = np.random.default_rng(3)
    cases = []
    for dtype in (F32, F16):
        x = rand(rng, (200,), dtype, -100, 100)
        y = rand(rng, (200,), dtype, -10, 10)
        cases += [(x, y), (x[:24].reshape(2, 3, 4), y[:24].reshape(2, 3, 4)), (x[0], y[:6]),
                  (x[:6], y[0]), (x[0], y[0]), (x[:0], y[:0])]
        sx = np.asarray([1, -1, 0, 0, np.inf, np.inf, 5.5, -5.5, 5.5, np.nan, 2e-38], dtype)
        sy = np.asarray([0, 0, 0, -0.0, 2, np.inf, 2, 2, -2, 1, 0.25], dtype)
        cases.append((sx, sy))
    for (x, y), runs in both(lambda a, b: (lax.div(a, b), lax.rem(a, b)), cases,
                             eager_subset(F32)):
        with np.errstate(all="ignore"):
            q = (x.astype(np.float64) / y.astype(np.float64)).astype(x.dtype)
            r = np.fmod(x, y)  # C's fmod: the sign of the dividend, exact
        for mode, (d, m) in runs:
            assert_near(d, q, 1e-6 if x.dtype == F32 else 1e-3, 0, f"div {mode} {desc(x, y)}")
            assert_exact(m, r, f"rem {mode} {desc(x, y)}")


def test_div_rem_integer():
    rng = np.random.default_rng(4)
    cases = []
    for dtype in INTS:
        info = np.iinfo(dtype)
        x = rand(rng, (300,), dtype)
        y = rand(rng, (300,), dtype, -20, 20)
        y[::7] = 0
        cases += [(x, y), (x[:24].reshape(2, 3, 4), y[:24].reshape(2, 3, 4)), (x[0], y[:8]),
                  (x[:8], y[0]), (x[:0], y[:0]), (x[1], np.asarray(0, dtype))]
        # Division by zero and MIN / -1 must neither trap nor crash the process.
        special_x = [7, 0, info.max, info.min, info.min, info.min, info.max, 5]
        special_y = [0, 0, 0, 0, -1 if dtype.kind == "i" else 1, 1, -1 if dtype.kind == "i" else
                     info.max, 3]
        cases.append((np.asarray(special_x, dtype), np.asarray(special_y, dtype)))
    for (x, y), runs in both(lambda a, b: (lax.div(a, b), lax.rem(a, b)), cases,
                             eager_subset(I32)):
        q, r = _trunc_div_rem(np.asarray(x), np.asarray(y))
        for mode, (d, m) in runs:
            assert_exact(d, q, f"div {mode} {desc(x, y)}")
            assert_exact(m, r, f"rem {mode} {desc(x, y)}")
    # The documented values, spelled out.
    i32 = np.iinfo(np.int32)
    x = np.asarray([5, -5, i32.min, i32.min, 9], np.int32)
    y = np.asarray([0, 0, -1, 0, -1], np.int32)
    assert np.asarray(lax.div(x, y)).tolist() == [-1, -1, i32.min, -1, -9]
    assert np.asarray(lax.rem(x, y)).tolist() == [5, -5, 0, i32.min, 0]
    u = np.asarray([5, 0], np.uint32)
    assert np.asarray(lax.div(u, np.zeros(2, np.uint32))).tolist() == [2 ** 32 - 1] * 2
    assert np.asarray(lax.rem(u, np.zeros(2, np.uint32))).tolist() == [5, 0]


def test_pow_atan2():
    rng = np.random.default_rng(5)
    cases = []
    for dtype in (F32, F16):
        x = rand(rng, (300,), dtype, 0.01, 10)
        y = rand(rng, (300,), dtype, -4, 4)
        cases.append((x, y))
        cases.append((x[:24].reshape(2, 3, 4), y[:24].reshape(2, 3, 4)))
        cases.append((x[0], y[:5]))
        cases.append((x[:0], y[:0]))
        # pow, as C defines it: x**0 = 1 for every x, 1**y = 1 for every y; 0**negative = inf;
        # a negative base with an integer exponent is real, with a non-integer one NaN;
        # signed zeros and infinities.
        px = [0, 0, 2, -2, -2, -2, np.nan, 1, np.inf, -1, 0.5, -0.0, -0.0, -0.0, -np.inf,
              -np.inf, -np.inf, -np.inf, -2, -0.5, -1, 3]
        py = [0, -1, 0, 3, 2, 0.5, 0, np.nan, -1, np.inf, np.inf, 3, -3, 0.5, 0.5, 3, -3, 2,
              np.inf, np.inf, -np.inf, -np.inf]
        cases.append((np.asarray(px, dtype), np.asarray(py, dtype)))
    for (x, y), runs in both(lambda a, b: (lax.pow(a, b), lax.atan2(a, b)), cases,
                             eager_subset(F32)):
        with np.errstate(all="ignore"):
            p = np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)
            a = np.arctan2(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)
        # float32 errors measured over 2e5 points: pow 1.7e-6 relative (22 ulps: the rounding
        # of y * log(x), amplified by exp), atan2 4.2e-6 (35 ulps, IREE's approximation).
        f32 = x.dtype == F32
        for mode, (po, ao) in runs:
            assert_near(po, p, 1e-5 if f32 else 2e-3, 0, f"pow {mode} {desc(x, y)}")
            assert_signs(po, p, f"pow {mode} {desc(x, y)}")
            assert_near(ao, a, 2e-5 if f32 else 2e-3, 0, f"atan2 {mode} {desc(x, y)}")
            assert_signs(ao, a, f"atan2 {mode} {desc(x, y)}")
    # atan2 in all four quadrants, on the axes and at signed zeros.
    qy = np.asarray([0.0, -0.0, 0.0, -0.0, 1, -1, 1, -1, 1, -1, 0, np.inf, -np.inf], np.float32)
    qx = np.asarray([1.0, 1.0, -1.0, -1.0, 1, 1, -1, -1, 0, 0, 0, np.inf, -np.inf], np.float32)
    for mode, out in (("eager", lax.atan2(qy, qx)), ("jit", pyree.jit(lax.atan2)(qy, qx))):
        assert_near(out, np.arctan2(qy, qx), 1e-6, 0, f"atan2 quadrants {mode}")
        assert_signs(out, np.arctan2(qy, qx), f"atan2 quadrants {mode}")


def test_python_scalar_operands():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    i = np.arange(6, dtype=np.uint8)
    for mode, run in (("eager", lambda f, *a: f(*a)), ("jit", lambda f, *a: pyree.jit(f)(*a))):
        assert_exact(run(lambda v: lax.add(v, 1.5), x), x + np.float32(1.5), mode)
        assert_exact(run(lambda v: lax.sub(2.0, v), x), np.float32(2) - x, mode)
        assert_exact(run(lambda v: lax.mul(v, 3), i), i * np.uint8(3), mode)
        assert_exact(run(lambda v: lax.lt(v, 2), i), i < 2, mode)


def test_select():
    rng = np.random.default_rng(6)
    cases = []
    for dtype in (F32, I32, BOOL, U8, F16):
        for shape in [(9,), (2, 3), (2, 3, 4), (0, 3)]:
            cases.append((rand(rng, shape, BOOL), rand(rng, shape, dtype), rand(rng, shape, dtype)))
        cases.append((np.asarray(True), rand(rng, (), dtype), rand(rng, (), dtype)))
    # Rank-0 operands broadcast, the predicate included.
    cases.append((np.asarray(False), rand(rng, (2, 3), F32), rand(rng, (2, 3), F32)))
    cases.append((np.asarray(True), rand(rng, (2, 3), F32), rand(rng, (2, 3), F32)))
    cases.append((rand(rng, (2, 3), BOOL), np.asarray(7, I32), rand(rng, (2, 3), I32)))
    cases.append((rand(rng, (2, 3), BOOL), rand(rng, (2, 3), I32), np.asarray(-1, I32)))
    cases.append((rand(rng, (5,), BOOL), np.float32(1), np.float32(2)))
    for (p, t, f), runs in both(lax.select, cases, lambda p, t, f: np.asarray(t).dtype == F32 or (
            np.ndim(p) == np.ndim(t) == np.ndim(f) == 1)):
        expected = np.where(p, t, f).astype(np.asarray(t).dtype)
        for mode, out in runs:
            assert_exact(out, expected, f"select {mode} {desc(p, t, f)}")


# -- convert_element_type -----------------------------------------------------------------------

CONVERT_DTYPES = [F32, F16, I32, U8, U32, I8, BOOL]


def _convert_input(src: np.dtype, dst: np.dtype) -> np.ndarray:
    """Values of ``src`` to convert to ``dst`` (float -> int: NaN and values out of range
    included; they saturate, as XLA's CPU conversion does)."""
    if src == BOOL:
        return np.asarray([True, False, True], BOOL)
    if src.kind == "f":
        values = [0.0, -0.0, 1.0, 1.5, 2.5, -0.5, -1.75, 3.99, 100.25, -100.9, 127.0, -128.0,
                  255.9, 1e4 + 0.5, 65504.0, -65504.0, 1e-8, np.inf, -np.inf, np.nan, 2 ** 24 + 1.0,
                  123456.789, 3.0e9, 4294967040.0]
        with np.errstate(all="ignore"):
            return np.asarray(values + [-3.0e9, -1e30], np.float64).astype(src)
    info = np.iinfo(src)
    values = [0, 1, -1, 2, -2, 100, -100, 127, -128, 128, 255, 256, -129, 65504, 70000, 2 ** 24 + 1,
              info.min, info.max, info.max - 1]
    return np.asarray([v for v in values if info.min <= v <= info.max], np.int64).astype(src)


def _convert_reference(x: np.ndarray, dst: np.dtype) -> np.ndarray:
    if dst == BOOL:
        return x != 0  # NaN != 0
    if x.dtype.kind == "f" and dst.kind in "iu":
        info = np.iinfo(dst)  # toward zero, saturating; NaN -> 0
        wide = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0)
        return np.clip(wide, info.min, info.max).astype(dst)
    with np.errstate(all="ignore"):
        return x.astype(dst)  # integers wrap; floats round to nearest even


_EAGER_CONVERSIONS = {(I32, BOOL), (U8, I32), (I8, U32)}


def test_convert_element_type():
    cases = [(_convert_input(s, d), d) for s in CONVERT_DTYPES for d in CONVERT_DTYPES]
    cases.append((np.asarray(2.75, np.float32), I32))
    cases.append((np.zeros((2, 0), np.int32), F32))
    cases.append((np.arange(24, dtype=np.int8).reshape(2, 3, 4) - 12, F16))
    xs = [x for x, _ in cases]
    jitted = pyree.jit(lambda xs: [lax.convert_element_type(x, d) for x, (_, d) in
                                   zip(xs, cases)])(xs)
    for (x, dst), j in zip(cases, jitted):
        expected = _convert_reference(x, dst)
        what = f"convert {desc(x)} -> {dst.name}"
        assert_exact(j, expected, "jit " + what)
        # Eagerly, each (source, target) pair is a kernel: the pairs with float32 and a few.
        if F32 in (x.dtype, dst) or (x.dtype, dst) in _EAGER_CONVERSIONS:
            assert_exact(lax.convert_element_type(x, dst), expected, "eager " + what)


# -- shapes -------------------------------------------------------------------------------------

_EAGER_BROADCASTS = [((), (3, 4)), ((3,), (2, 3)), ((3,), (3, 2)), ((1, 3), (4, 3)),
                     ((2, 3), (4, 2, 5, 3)), ((1, 1), (2, 3))]


def test_broadcast_in_dim():
    rng = np.random.default_rng(7)
    specs = [  # (operand shape, target shape, broadcast_dimensions)
        ((), (3, 4), ()), ((3,), (2, 3), (1,)), ((3,), (3, 2), (0,)), ((1, 3), (4, 3), (0, 1)),
        ((2, 1, 3), (2, 5, 3), (0, 1, 2)), ((2, 3), (4, 2, 5, 3), (1, 3)), ((0,), (2, 0), (1,)),
        ((3,), (3,), (0,)), ((1,), (0, 2), (1,)), ((), (), ()), ((1, 1), (2, 3), (0, 1)),
        ((4,), (2, 4, 0), (1,)),
    ]
    cases = []
    for dtype in (F32, I8, BOOL, F16):
        for shape, target, dims in specs:
            cases.append((rand(rng, shape, dtype), target, dims))
    xs = [c[0] for c in cases]
    jitted = pyree.jit(lambda xs: [lax.broadcast_in_dim(x, t, d) for x, (_, t, d) in
                                   zip(xs, cases)])(xs)
    for (x, target, dims), j in zip(cases, jitted):
        # NumPy: put the operand's axes where dims say, then broadcast.
        shape = [1] * len(target)
        for i, d in enumerate(dims):
            shape[d] = x.shape[i]
        expected = np.broadcast_to(x.reshape(shape), target)
        what = f"broadcast_in_dim {desc(x)} -> {target} dims={dims}"
        # Each (dtype, rank, dims) is an eager kernel (size-1 dimensions are squeezed first).
        if (x.shape, target) == ((3,), (2, 3)) or (
                x.dtype == F32 and (x.shape, target) in _EAGER_BROADCASTS):
            assert_exact(lax.broadcast_in_dim(x, target, dims), expected, "eager " + what)
        assert_exact(j, expected, "jit " + what)


def test_reshape():
    rng = np.random.default_rng(8)
    specs = [((2, 3), (3, 2)), ((6,), (1, 2, 3)), ((), (1, 1)), ((1, 1), ()), ((0, 3), (3, 0)),
             ((2, 3, 4), (24,)), ((2, 3, 4), (4, 6)), ((5,), (5,)), ((4, 0), (0,))]
    cases = [(rand(rng, s, d), t) for d in (F32, U8, BOOL) for s, t in specs]
    xs = [c[0] for c in cases]
    jitted = pyree.jit(lambda xs: [lax.reshape(x, t) for x, (_, t) in zip(xs, cases)])(xs)
    for (x, t), j in zip(cases, jitted):
        assert_exact(lax.reshape(x, t), x.reshape(t), f"eager reshape {desc(x)} -> {t}")
        assert_exact(j, x.reshape(t), f"jit reshape {desc(x)} -> {t}")
    # `dimensions` transposes first.
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert_exact(lax.reshape(x, (6,), (1, 0)), x.T.reshape(6))


def test_transpose_and_rev():
    rng = np.random.default_rng(9)
    cases = []
    for dtype in (F32, I8, BOOL):
        x3 = rand(rng, (2, 3, 4), dtype)
        cases += [(x3, "t", (2, 0, 1)), (x3, "t", (1, 2, 0)), (x3, "t", (0, 2, 1)),
                  (x3, "r", (0,)), (x3, "r", (0, 2)), (x3, "r", ()), (x3, "r", (0, 1, 2))]
        x2 = rand(rng, (3, 5), dtype)
        cases += [(x2, "t", (1, 0)), (x2, "r", (1,)), (rand(rng, (0, 4), dtype), "t", (1, 0)),
                  (rand(rng, (6,), dtype), "r", (0,)), (rand(rng, (3, 0, 2), dtype), "r", (1,))]
    cases.append((rand(rng, (), F32), "r", ()))

    def f(x, kind, p):
        return lax.transpose(x, p) if kind == "t" else lax.rev(x, p)
    xs = [c[0] for c in cases]
    jitted = pyree.jit(lambda xs: [f(x, k, p) for x, (_, k, p) in zip(xs, cases)])(xs)
    for (x, kind, p), j in zip(cases, jitted):
        expected = np.transpose(x, p) if kind == "t" else np.flip(x, p) if p else x
        what = f"{'transpose' if kind == 't' else 'rev'} {desc(x)} {p}"
        # Each (dtype, rank, p) is an eager kernel: some float32 ones, and one more dtype.
        if (x.dtype == F32 and p in ((2, 0, 1), (1, 0), (0, 2), (1,), ())) or (
                x.dtype == I8 and p == (1, 0)):
            assert_exact(f(x, kind, p), expected, "eager " + what)
        assert_exact(j, expected, "jit " + what)


def test_slice():
    rng = np.random.default_rng(10)
    specs = [  # (shape, start, limit, strides)
        ((10,), (2,), (7,), None), ((10,), (0,), (10,), (3,)), ((10,), (9,), (10,), (5,)),
        ((10,), (4,), (4,), None), ((5, 6), (1, 0), (4, 6), (2, 1)),
        ((5, 6), (0, 1), (5, 6), (1, 2)),
        ((2, 3, 4), (0, 1, 1), (2, 3, 4), (1, 1, 2)), ((2, 3, 4), (1, 0, 0), (2, 3, 4), None),
        ((3, 0), (1, 0), (3, 0), None), ((), (), (), None),
    ]
    cases = [(rand(rng, s, d), st_, li, sr) for d in (F32, I32, BOOL) for s, st_, li, sr in specs]
    xs = [c[0] for c in cases]
    jitted = pyree.jit(lambda xs: [lax.slice(x, s, l, r) for x, (_, s, l, r) in
                                   zip(xs, cases)])(xs)
    for (x, s, l, r), j in zip(cases, jitted):
        r_ = r or (1,) * x.ndim
        expected = x[tuple(slice(a, b, c) for a, b, c in zip(s, l, r_))]
        what = f"slice {desc(x)} {s}:{l}:{r}"
        if x.dtype == F32 or x.ndim == 1:  # each (dtype, rank) is an eager kernel
            assert_exact(lax.slice(x, s, l, r), expected, "eager " + what)
        assert_exact(j, expected, "jit " + what)


@settings(deadline=None, max_examples=25, derandomize=True)
@given(st.data())
def test_slice_random_eager(data):
    shape = data.draw(st.tuples(st.integers(0, 6), st.integers(0, 6)))
    start, limit, stride = [], [], []
    for d in shape:
        a = data.draw(st.integers(0, d))
        b = data.draw(st.integers(a, d))
        start.append(a)
        limit.append(b)
        stride.append(data.draw(st.integers(1, 4)))
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    expected = x[tuple(slice(a, b, c) for a, b, c in zip(start, limit, stride))]
    assert_exact(lax.slice(x, start, limit, stride), expected)


def _clamp_starts(shape, starts, sizes):
    return [min(max(int(s), 0), d - z) for s, d, z in zip(starts, shape, sizes)]


def _dynamic_slice_ref(x, starts, sizes):
    starts = _clamp_starts(x.shape, starts, sizes)
    return x[tuple(slice(s, s + z) for s, z in zip(starts, sizes))]


def _dynamic_update_slice_ref(x, update, starts):
    starts = _clamp_starts(x.shape, starts, update.shape)
    out = x.copy()
    out[tuple(slice(s, s + z) for s, z in zip(starts, update.shape))] = update
    return out


def test_dynamic_slice():
    rng = np.random.default_rng(11)
    specs = [  # (shape, starts, slice sizes); out-of-range starts clamp so that the slice fits
        ((10,), (3,), (4,)), ((10,), (8,), (4,)), ((10,), (-3,), (4,)), ((10,), (100,), (10,)),
        ((10,), (5,), (0,)), ((5, 6), (1, 2), (3, 3)), ((5, 6), (-1, 9), (2, 2)),
        ((2, 3, 4), (1, 1, 1), (1, 2, 3)), ((2, 3, 4), (5, -5, 2), (2, 3, 2)),
        ((0, 3), (0, 1), (0, 2)), ((), (), ()),
    ]
    cases = []
    for dtype in (F32, I8, BOOL):
        for shape, starts, sizes in specs:
            cases.append((rand(rng, shape, dtype), [np.int32(s) for s in starts], sizes))
    # Start indices of other integer types, mixed.
    cases.append((rand(rng, (5, 6), F32), [np.uint8(3), np.int8(-2)], (2, 4)))
    cases.append((rand(rng, (5, 6), F32), [np.uint32(4), np.int32(2)], (2, 4)))
    args = [(x, s) for x, s, _ in cases]
    jitted = pyree.jit(lambda args: [lax.dynamic_slice(x, s, z) for (x, s), (_, _, z) in
                                     zip(args, cases)])(args)
    for (x, starts, sizes), j in zip(cases, jitted):
        expected = _dynamic_slice_ref(x, starts, sizes)
        what = f"dynamic_slice {desc(x)} at {[int(s) for s in starts]} size {sizes}"
        if x.dtype == F32 or x.ndim == 1:  # each (dtype, rank) is an eager kernel
            assert_exact(lax.dynamic_slice(x, starts, sizes), expected, "eager " + what)
        assert_exact(j, expected, "jit " + what)
    # Python ints as start indices.
    x = np.arange(10, dtype=np.float32)
    assert_exact(lax.dynamic_slice(x, (8,), (3,)), x[7:10])


def test_dynamic_update_slice():
    rng = np.random.default_rng(12)
    specs = [  # (operand shape, update shape, starts)
        ((10,), (4,), (3,)), ((10,), (4,), (8,)), ((10,), (4,), (-3,)), ((10,), (10,), (4,)),
        ((10,), (0,), (5,)), ((5, 6), (2, 3), (1, 2)), ((5, 6), (2, 2), (-1, 9)),
        ((2, 3, 4), (1, 2, 3), (1, 5, -1)), ((0, 3), (0, 2), (0, 1)), ((), (), ()),
    ]
    cases = []
    for dtype in (F32, I8, BOOL):
        for shape, ushape, starts in specs:
            cases.append((rand(rng, shape, dtype), rand(rng, ushape, dtype),
                          [np.int32(s) for s in starts]))
    cases.append((rand(rng, (5, 6), I32), rand(rng, (2, 4), I32), [np.uint8(200), np.int8(-2)]))
    for (x, u, starts), runs in both(lax.dynamic_update_slice, cases,
                                     lambda x, u, starts: x.dtype == F32 or x.ndim == 1):
        expected = _dynamic_update_slice_ref(x, u, starts)
        for mode, out in runs:
            assert_exact(out, expected, f"{mode} dynamic_update_slice {desc(x, u)} at "
                                        f"{[int(s) for s in starts]}")


@settings(deadline=None, max_examples=25, derandomize=True)
@given(st.data())
def test_dynamic_slices_random_eager(data):
    shape = data.draw(st.tuples(st.integers(0, 6), st.integers(0, 6)))
    sizes = tuple(data.draw(st.integers(0, d)) for d in shape)
    starts = [np.int32(data.draw(st.integers(-8, 8))) for _ in shape]
    x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    assert_exact(lax.dynamic_slice(x, starts, sizes), _dynamic_slice_ref(x, starts, sizes))
    u = -1 - np.arange(math.prod(sizes), dtype=np.float32).reshape(sizes)
    assert_exact(lax.dynamic_update_slice(x, u, starts), _dynamic_update_slice_ref(x, u, starts))


def test_concatenate():
    rng = np.random.default_rng(13)
    specs = [  # (shapes, dimension)
        ([(3,), (4,)], 0), ([(2, 3), (2, 1), (2, 2)], 1), ([(2, 3), (1, 3)], 0),
        ([(2, 3, 4), (2, 3, 1)], 2), ([(2, 3, 4), (2, 0, 4), (2, 1, 4)], 1), ([(5,)], 0),
        ([(0, 2), (0, 2)], 0),
    ]
    cases = []
    for dtype in (F32, U8, BOOL):
        for shapes, dim in specs:
            cases.append(([rand(rng, s, dtype) for s in shapes], dim))
    xs = [c[0] for c in cases]
    jitted = pyree.jit(lambda xs: [lax.concatenate(x, d) for x, (_, d) in zip(xs, cases)])(xs)
    for (ops, dim), j in zip(cases, jitted):
        expected = np.concatenate(ops, dim)
        what = f"concatenate {desc(*ops)} dim {dim}"
        if ops[0].dtype == F32 or len(ops) == 2 and ops[0].ndim == 1:
            assert_exact(lax.concatenate(ops, dim), expected, "eager " + what)
        assert_exact(j, expected, "jit " + what)


def _pad_ref(x: np.ndarray, value, config) -> np.ndarray:
    """lax.pad: interior padding first, then low/high edges (negative ones crop)."""
    for axis, (lo, hi, interior) in enumerate(config):
        n = x.shape[axis]
        size = n + max(n - 1, 0) * interior
        shape = list(x.shape)
        shape[axis] = size
        out = np.full(shape, value, x.dtype)
        index = [slice(None)] * x.ndim
        index[axis] = slice(0, size, interior + 1)
        out[tuple(index)] = x
        x = out
        for amount, at_end in ((lo, False), (hi, True)):
            if amount >= 0:
                shape = list(x.shape)
                shape[axis] = amount
                edge = np.full(shape, value, x.dtype)
                x = np.concatenate([x, edge] if at_end else [edge, x], axis)
            else:
                index = [slice(None)] * x.ndim
                index[axis] = slice(0, x.shape[axis] + amount) if at_end else slice(-amount, None)
                x = x[tuple(index)]
    return x


def test_pad():
    rng = np.random.default_rng(14)
    specs = [  # (shape, config)
        ((5,), [(1, 2, 0)]), ((5,), [(0, 0, 2)]), ((5,), [(-1, -2, 0)]), ((5,), [(-2, 3, 1)]),
        ((5,), [(-9, 0, 1)]), ((2, 3), [(1, 0, 1), (-1, 2, 0)]), ((2, 3), [(0, 0, 0), (0, 0, 0)]),
        ((2, 3, 4), [(1, 1, 0), (0, -1, 1), (-2, 2, 2)]), ((0, 3), [(1, 1, 3), (0, 0, 0)]),
        ((), []), ((1,), [(0, 0, 5)]),
    ]
    cases = []
    for dtype in (F32, I32, BOOL, F16):
        for shape, config in specs:
            cases.append((rand(rng, shape, dtype), rand(rng, (), dtype), config))
    args = [(x, v) for x, v, _ in cases]
    jitted = pyree.jit(lambda args: [lax.pad(x, v, c) for (x, v), (_, _, c) in
                                     zip(args, cases)])(args)
    for (x, v, config), j in zip(cases, jitted):
        expected = _pad_ref(x, v, config)
        what = f"pad {desc(x)} {config}"
        if x.dtype == F32 or x.ndim == 1:  # each (dtype, rank) is an eager kernel
            assert_exact(lax.pad(x, v, config), expected, "eager " + what)
        assert_exact(j, expected, "jit " + what)
    # A Python scalar padding value takes the operand's dtype.
    x = np.arange(3, dtype=np.int8)
    assert_exact(lax.pad(x, 9, [(1, 1, 1)]), np.asarray([9, 0, 9, 1, 9, 2, 9], np.int8))


@settings(deadline=None, max_examples=30, derandomize=True)
@given(st.data())
def test_pad_random_eager(data):
    shape = data.draw(st.tuples(st.integers(0, 4), st.integers(0, 4)))
    config = []
    for d in shape:
        interior = data.draw(st.integers(0, 3))
        full = d + max(d - 1, 0) * interior
        lo = data.draw(st.integers(-full, 4))
        hi = data.draw(st.integers(-(full + lo), 4))  # the result's size is >= 0
        config.append((lo, hi, interior))
    x = 1 + np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
    assert_exact(lax.pad(x, np.float32(-1), config), _pad_ref(x, np.float32(-1), config),
                 f"pad {shape} {config}")


def test_iota():
    specs = [((5,), 0), ((2, 3), 0), ((2, 3), 1), ((0,), 0), ((3, 4, 2), 2), ((3, 0, 2), 0),
             ((300,), 0)]
    cases = [(dtype, shape, dim) for dtype in (I32, F32, U8, F16) for shape, dim in specs]
    jitted = pyree.jit(lambda: [lax.broadcasted_iota(d, s, i) for d, s, i in cases])()
    for (dtype, shape, dim), j in zip(cases, jitted):
        idx = np.arange(shape[dim]).reshape([-1 if a == dim else 1 for a in range(len(shape))])
        expected = np.broadcast_to(idx, shape).astype(dtype)  # u8 wraps, f16 rounds (300 ok)
        what = f"iota {dtype.name} {shape} dim {dim}"
        if dtype == I32 or len(shape) == 1:  # each (dtype, rank, dim) is an eager kernel
            assert_exact(lax.broadcasted_iota(dtype, shape, dim), expected, "eager " + what)
        assert_exact(j, expected, "jit " + what)
    assert_exact(lax.iota(np.int32, 4), np.arange(4, dtype=np.int32))


# -- reductions ---------------------------------------------------------------------------------

REDUCTIONS = {
    # name: (lax function, dtypes, identity of an empty reduction)
    "reduce_sum": (lax.reduce_sum, ARITH, lambda d: 0),
    "reduce_prod": (lax.reduce_prod, ARITH, lambda d: 1),
    "reduce_max": (lax.reduce_max, ALL, lambda d: -np.inf if d.kind == "f" else
                   False if d == BOOL else np.iinfo(d).min),
    "reduce_min": (lax.reduce_min, ALL, lambda d: np.inf if d.kind == "f" else
                   True if d == BOOL else np.iinfo(d).max),
    "reduce_and": (lax.reduce_and, BITWISE, lambda d: True if d == BOOL else
                   np.asarray(-1).astype(d)),
    "reduce_or": (lax.reduce_or, BITWISE, lambda d: 0),
}
_NP_REDUCE = {"reduce_sum": np.add, "reduce_prod": np.multiply, "reduce_max": np.maximum,
              "reduce_min": np.minimum, "reduce_and": np.bitwise_and, "reduce_or": np.bitwise_or}


def _reduce_ref(name: str, x: np.ndarray, axes: tuple) -> np.ndarray:
    dtype = x.dtype
    if not axes:
        return x.copy()
    if name == "reduce_sum" and dtype == F16:
        # float16 sums accumulate in float32 and round once.
        return _reduce_ref(name, x.astype(np.float32), axes).astype(F16)
    if name in ("reduce_sum", "reduce_prod") and dtype.kind == "f":
        out = _NP_REDUCE[name].reduce(x.astype(np.float64), axis=axes)
        return np.asarray(out).astype(dtype)
    identity = REDUCTIONS[name][2](dtype)
    with np.errstate(all="ignore"):
        out = _NP_REDUCE[name].reduce(x, axis=axes, dtype=dtype, initial=identity)
    if name in ("reduce_max", "reduce_min") and dtype.kind == "f":
        # NaN propagates (NumPy's maximum does the same, but `initial` must not hide it).
        nan = np.isnan(x).any(axis=axes)
        out = np.where(nan, np.nan, out)
    return np.asarray(out).astype(dtype)


def _reduction_values(rng, name, shape, dtype):
    if name == "reduce_prod":
        if dtype.kind == "f":
            return rand(rng, shape, dtype, 0.7, 1.4)
        return rand(rng, shape, dtype, -3, 3)  # wraps around: exact modulo 2**bits
    if name == "reduce_sum" and dtype == F16:
        return rand(rng, shape, dtype, -2, 2)
    return rand(rng, shape, dtype)


def _reduction_tolerance(name, x, axes):
    """(rtol, atol) of float sums and products, which may be computed in any order; None
    (exact) for everything else."""
    if x.dtype.kind != "f" or name not in ("reduce_sum", "reduce_prod"):
        return None
    n = max(math.prod(x.shape[a] for a in axes), 1)  # elements per result
    if name == "reduce_prod":
        # One rounding per multiplication (float16 products are not widened).
        return (2.4e-7 if x.dtype == F32 else 1e-3) * n, 0
    # n additions, each rounding by at most half an ulp of a partial sum <= n * max|x|; the
    # float16 sums accumulate in float32 and round once at the end.
    scale = float(np.abs(x.astype(np.float64)).max(initial=0))
    return (1e-6, 1.2e-7 * n * scale) if x.dtype == F32 else (1e-3, 1.2e-7 * n * scale)


# (shape, axes) of every test; the rank-3 shape is reduced over every subset of its axes.
_REDUCE_SPECS = [((), ()), ((7,), (0,)), ((7,), ()), ((4, 5), (0,)), ((4, 5), (1,)),
                 ((4, 5), (0, 1)), ((0, 3), (0,)), ((0, 3), (1,)), ((3, 0, 2), (1,)),
                 ((3, 0, 2), (0, 2))] + [
    ((3, 4, 5), axes) for axes in [(), (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]]
# (rank, axes) run eagerly for the first dtype of each reduction.
_EAGER_REDUCTIONS = [(0, ()), (1, (0,)), (2, (0,)), (2, (1,)), (3, (0,)), (3, (1,)), (3, (0, 1)),
                     (3, (0, 1, 2))]
# Long strided reductions, which the jit lowering splits into two stages; (10007, 3) cannot be.
_LONG_SPECS = [((10000, 10), (0,)), ((4096, 3, 2), (0,)), ((4096, 3, 2), (0, 1)),
               ((10007, 3), (0,)), ((2048, 4), (1,))]


def _check_reduction(name, cases, eager_filter):
    fn = REDUCTIONS[name][0]
    jitted = pyree.jit(lambda xs: [fn(x, a) for x, (_, a) in zip(xs, cases)])(
        [x for x, _ in cases])
    for (x, axes), j in zip(cases, jitted):
        expected = _reduce_ref(name, x, axes)
        tol = _reduction_tolerance(name, x, axes)
        runs = [("jit", j)]
        if eager_filter(x, axes):
            runs.append(("eager", fn(x, axes)))
        for mode, out in runs:
            what = f"{name} {mode} {desc(x)} axes={axes}"
            if tol is None:
                assert_exact(out, expected, what)
            else:
                assert_near(out, expected, *tol, what)


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reduction(name):
    _, dtypes, _ = REDUCTIONS[name]
    rng = np.random.default_rng(len(name) * 3)
    cases = []
    for dtype in dtypes:
        for shape, axes in _REDUCE_SPECS:
            cases.append((_reduction_values(rng, name, shape, dtype), axes))
    if "max" in name or "min" in name:
        x = rand(rng, (4, 5), F32)
        x[1, 2] = np.nan
        x[3, 0] = np.inf
        x[0, 4] = -np.inf
        cases += [(x, (0,)), (x, (1,)), (x, (0, 1))]
    # Eagerly, every (dtype, rank, axes) is a kernel: most of them for the first dtype, two
    # for the others.
    first = dtypes[0]
    _check_reduction(name, cases, lambda x, axes: (
        x.dtype == first and (x.ndim, axes) in _EAGER_REDUCTIONS) or
        (x.dtype in EAGER_DTYPES and x.ndim == 2 and axes == (1,)))


def test_long_reductions_are_split():
    # What test_long_reduction is about: under jit these become two stablehlo.reduce ops.
    for shape, axes in _LONG_SPECS:
        text = pyree.jit(lambda x: lax.reduce_max(x, axes)).lower(
            np.zeros(shape, np.float32)).as_text()
        split = shape not in ((10007, 3), (2048, 4))
        assert text.count("stablehlo.reduce") == (2 if split else 1), (shape, axes)


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_long_reduction(name):
    _, dtypes, _ = REDUCTIONS[name]
    rng = np.random.default_rng(len(name) * 5)
    cases = []
    for dtype in dtypes:
        if dtype == U32 or (dtype == F16 and name != "reduce_sum"):
            continue
        for shape, axes in _LONG_SPECS:
            x = _reduction_values(rng, name, shape, dtype)
            if name == "reduce_prod":
                # Mostly ones, so that a long product neither over- nor underflows, with some
                # -1s (and, in floats, a few other factors) to be sure every element counts.
                x = np.where(rng.random(shape) < 0.995, 1, x).astype(dtype)
            if name in ("reduce_and", "reduce_or") and dtype == BOOL:
                # All-true / all-false but for one element, at different places per column.
                base = name == "reduce_and"
                x = np.full(shape, base)
                flat = x.reshape(shape[0], -1)
                columns = np.arange(flat.shape[1] // 2)
                flat[rng.integers(0, shape[0], len(columns)), columns] = not base
            cases.append((x, axes))
    # The split is jit's (eager kernels do not know the shape): eagerly, the first dtype only.
    _check_reduction(name, cases, lambda x, axes: x.dtype == dtypes[0])


def test_argmax_argmin():
    rng = np.random.default_rng(15)
    cases = []
    for dtype in (F32, F16, I32, U8, BOOL, I8):
        x3 = rand(rng, (3, 4, 5), dtype, 0, 3)  # few distinct values: many ties
        cases += [(x3, 0, I32), (x3, 1, I32), (x3, 2, I32), (rand(rng, (9,), dtype), 0, I32),
                  (rand(rng, (4, 0), dtype), 0, I32)]
    x = rand(rng, (5, 6), F32)
    x[2, 1] = x[4, 1] = np.nan  # NaN counts as the extreme, the first one wins
    x[3, 2] = np.nan
    x[:, 3] = -np.inf
    x[:, 4] = np.inf
    x[0, 5] = x[3, 5] = x[1, 5] = 20.0
    cases += [(x, 0, I32), (x, 1, I32), (x.T.copy(), 1, U8), (x, 0, U8), (x, 0, I8)]
    cases.append((np.asarray([np.nan] * 4, np.float32), 0, I32))
    cases.append((np.asarray([-np.inf, -np.inf], np.float32), 0, I32))
    cases.append((np.asarray([np.iinfo(np.int32).min] * 3, np.int32), 0, I32))
    cases.append((np.asarray([np.iinfo(np.int32).max] * 3 + [5], np.int32), 0, I32))

    xs = [c[0] for c in cases]
    jitted = pyree.jit(lambda xs: [(lax.argmax(x, a, d), lax.argmin(x, a, d))
                                   for x, (_, a, d) in zip(xs, cases)])(xs)
    for (x, axis, index_dtype), (jmax, jmin) in zip(cases, jitted):
        ex_max = np.argmax(x, axis).astype(index_dtype)  # NumPy: first index, NaN wins
        ex_min = np.argmin(x, axis).astype(index_dtype)
        what = f"{desc(x)} axis {axis} -> {index_dtype.name}"
        assert_exact(jmax, ex_max, "jit argmax " + what)
        assert_exact(jmin, ex_min, "jit argmin " + what)
        # Eager kernels per dtype, rank, axis and index dtype: a few float32 ones, rank 1 in
        # int32 and bool.
        if (x.dtype == F32 and index_dtype == I32 and (x.ndim, axis) != (3, 0)) or (
                x.ndim == 1 and x.dtype in (I32, BOOL)):
            assert_exact(lax.argmax(x, axis, index_dtype), ex_max, "eager argmax " + what)
            assert_exact(lax.argmin(x, axis, index_dtype), ex_min, "eager argmin " + what)


# -- dot_general --------------------------------------------------------------------------------

DOT_SPECS = [  # (lhs shape, rhs shape, ((lhs contract, rhs contract), (lhs batch, rhs batch)))
    ((3, 4), (4, 5), (((1,), (0,)), ((), ()))),                   # matmul
    ((4,), (4,), (((0,), (0,)), ((), ()))),                       # inner product
    ((3, 4), (4,), (((1,), (0,)), ((), ()))),                     # matrix-vector
    ((4, 3), (4, 5), (((0,), (0,)), ((), ()))),                   # transposed lhs
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),         # batched matmul
    ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,)))),         # batch dims not leading
    ((2, 3, 4), (3, 4, 5), (((1, 2), (0, 1)), ((), ()))),         # two contracting dims
    ((2, 6, 3, 4), (4, 2, 3), (((2, 3), (2, 0)), ((0,), (1,)))),  # batch + two contracting
    ((3,), (4,), (((), ()), ((), ()))),                           # outer product
    ((3, 0), (0, 4), (((1,), (0,)), ((), ()))),                   # empty contraction: zeros
    ((0, 4), (4, 2), (((1,), (0,)), ((), ()))),                   # empty result
    ((), (), (((), ()), ((), ()))),                               # scalars
]


def _dot_ref(lhs, rhs, dims, out_dtype):
    (lc, rc), (lb, rb) = dims
    letters = iter("abcdefghijklmnop")
    lsub = [next(letters) for _ in range(lhs.ndim)]
    rsub = [next(letters) for _ in range(rhs.ndim)]
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        rsub[b] = lsub[a]
    out = ([lsub[d] for d in lb] + [s for i, s in enumerate(lsub) if i not in lc + lb] +
           [s for i, s in enumerate(rsub) if i not in rc + rb])
    wide = np.float64 if out_dtype.kind == "f" else np.int64
    result = np.einsum(f"{''.join(lsub)},{''.join(rsub)}->{''.join(out)}", lhs.astype(wide),
                       rhs.astype(wide))
    return np.asarray(result).astype(out_dtype)


def test_dot_general():
    rng = np.random.default_rng(16)
    cases = []
    for lshape, rshape, dims in DOT_SPECS:
        cases.append((rand(rng, lshape, F32, -1, 1), rand(rng, rshape, F32, -1, 1), dims, None))
    for lshape, rshape, dims in DOT_SPECS[:6]:
        cases.append((rand(rng, lshape, I32, -50, 50), rand(rng, rshape, I32, -50, 50), dims, None))
        # int8 products accumulated in int32 (an int8 accumulator would overflow here).
        cases.append((rand(rng, lshape, I8), rand(rng, rshape, I8), dims, I32))
        cases.append((rand(rng, lshape, F16, -1, 1), rand(rng, rshape, F16, -1, 1), dims, F32))
    cases.append((rand(rng, (3, 4), F16, -1, 1), rand(rng, (4, 5), F16, -1, 1), DOT_SPECS[0][2],
                  None))
    cases.append((rand(rng, (3, 4), U8, 0, 20), rand(rng, (4, 5), U8, 0, 20), DOT_SPECS[0][2],
                  None))
    cases.append((rand(rng, (3, 4), BOOL), rand(rng, (4, 5), BOOL), DOT_SPECS[0][2], None))
    cases.append((rand(rng, (64, 96), F32, -1, 1), rand(rng, (96, 80), F32, -1, 1),
                  DOT_SPECS[0][2], None))

    def f(lhs, rhs, dims, pref):
        return lax.dot_general(lhs, rhs, dims, preferred_element_type=pref)
    args = [(l, r) for l, r, _, _ in cases]
    jitted = pyree.jit(lambda args: [f(l, r, d, p) for (l, r), (_, _, d, p) in
                                     zip(args, cases)])(args)
    for (lhs, rhs, dims, pref), j in zip(cases, jitted):
        out_dtype = np.dtype(pref) if pref is not None else lhs.dtype
        if out_dtype == BOOL:
            expected = _dot_ref(lhs, rhs, dims, np.dtype(np.int32)) != 0
        else:
            expected = _dot_ref(lhs, rhs, dims, out_dtype)
        k = math.prod(lhs.shape[d] for d in dims[0][0])
        what = f"dot_general {desc(lhs, rhs)} {dims} -> {out_dtype.name}"
        runs = [("jit", j)]
        if lhs.dtype == F32 or dims == DOT_SPECS[0][2]:  # eager kernels per dtype (+ transposes)
            runs.append(("eager", f(lhs, rhs, dims, pref)))
        for mode, out in runs:
            if out_dtype.kind == "f":
                # Inputs in [-1, 1]: each partial sum is within k, one rounding per term.
                eps = 1e-3 if (out_dtype == F16 or lhs.dtype == F16 and pref is None) else 2e-7
                assert_near(out, expected, 0, eps * (k + 1), f"{mode} {what}")
            else:
                assert_exact(out, expected, f"{mode} {what}")


# -- bfloat16 ----------------------------------------------------------------------------------

BF16 = np.dtype(pyree.dtypes.bfloat16)

BF16_OPS = {  # name: (function, NumPy reference on float64 values, run eagerly too)
    "add": (lambda x, y: lax.add(x, y), lambda x, y: x + y, True),
    "mul": (lambda x, y: lax.mul(x, y), lambda x, y: x * y, False),
    "div": (lambda x, y: lax.div(x, y), lambda x, y: x / y, False),
    "max": (lambda x, y: lax.max(x, y), np.maximum, False),
    "lt": (lambda x, y: lax.lt(x, y), np.less, True),
    "exp": (lambda x, y: lax.exp(x), lambda x, y: np.exp(x), True),
    "sin": (lambda x, y: lax.sin(x), lambda x, y: np.sin(x), False),
    "tanh": (lambda x, y: lax.tanh(x), lambda x, y: np.tanh(x), False),
    "pow": (lambda x, y: lax.pow(y, x), lambda x, y: y ** x, False),
    "floor": (lambda x, y: lax.floor(x), lambda x, y: np.floor(x), False),
    "reduce_sum": (lambda x, y: lax.reduce_sum(x, (0,)), lambda x, y: np.sum(x, 0), True),
    "reduce_max": (lambda x, y: lax.reduce_max(x, (0,)), lambda x, y: np.max(x, 0), False),
    "argmax": (lambda x, y: lax.argmax(x, 0, np.int32), lambda x, y: np.argmax(x, 0), False),
    "dot": (lambda x, y: lax.dot_general(x, y, (((0,), (0,)), ((), ()))), np.dot, False),
    "to_f32": (lambda x, y: lax.convert_element_type(x, np.float32), lambda x, y: x, True),
}


def test_bfloat16():
    # bfloat16 (kind "V" in ml_dtypes) goes through the same rules as the other floats.
    rng = np.random.default_rng(17)
    x = rng.uniform(-3, 3, 64).astype(BF16)
    y = rng.uniform(0.5, 2, 64).astype(BF16)
    names = list(BF16_OPS)
    jitted = pyree.jit(lambda x, y: [BF16_OPS[n][0](x, y) for n in names])(x, y)
    for name, j in zip(names, jitted):
        fn, ref, eager = BF16_OPS[name]
        expected = np.asarray(ref(x.astype(np.float64), y.astype(np.float64)))
        if expected.dtype == np.float64:
            expected = expected.astype(np.float32 if name == "to_f32" else BF16)
        elif expected.dtype.kind == "i":
            expected = expected.astype(np.int32)
        runs = [("jit", j)] + ([("eager", fn(x, y))] if eager else [])
        for mode, out in runs:
            if expected.dtype == BF16:
                # One rounding to bfloat16 (8 bits: 2**-8 relative) after float32 arithmetic;
                # sums and dots of 64 terms of size <= 6: a float32 accumulation, rounded once.
                assert_near(out, expected, 2 ** -7, 1e-2 if name in ("reduce_sum", "dot") else 0,
                            f"{name} {mode}")
            else:
                assert_exact(out, expected, f"{name} {mode}")


# -- abstract evaluation errors -----------------------------------------------------------------

_f23 = np.zeros((2, 3), np.float32)
_f32_ = np.zeros((3, 2), np.float32)
_i23 = np.zeros((2, 3), np.int32)
_f3 = np.zeros((3,), np.float32)

ERRORS = [  # (description, function of (x f32[2,3], i i32[2,3], y f32[3,2], v f32[3]),
    #          exception, fragments of the message)
    ("add dtypes", lambda x, i, y, v: lax.add(x, i), TypeError, ["float32", "int32"]),
    ("add shapes", lambda x, i, y, v: lax.add(x, y), TypeError, ["(2, 3)", "(3, 2)"]),
    ("select shapes", lambda x, i, y, v: lax.select(lax.ne(x, x), x, y), TypeError,
     ["(2, 3)", "(3, 2)"]),
    ("select pred", lambda x, i, y, v: lax.select(i, x, x), TypeError, ["boolean", "int32"]),
    ("sin of int", lambda x, i, y, v: lax.sin(i), TypeError, ["sin", "int32"]),
    ("and of float", lambda x, i, y, v: lax.bitwise_and(x, x), TypeError, ["and", "float32"]),
    ("shift of float", lambda x, i, y, v: lax.shift_left(x, x), TypeError, ["float32"]),
    ("integer_pow negative int", lambda x, i, y, v: lax.integer_pow(i, -1), TypeError,
     ["negative", "int32"]),
    ("reduce axes", lambda x, i, y, v: lax.reduce_sum(x, (2,)), TypeError, ["(2,)", "(2, 3)"]),
    ("reduce repeated axes", lambda x, i, y, v: lax.reduce_max(x, (0, 0)), TypeError, ["(2, 3)"]),
    ("argmax two axes", lambda x, i, y, v: P_argmax(x, (0, 1)), TypeError, ["one axis"]),
    ("argmax empty", lambda x, i, y, v: lax.argmax(lax.slice(x, (0, 0), (2, 0)), 1, np.int32),
     ValueError, ["(2, 0)"]),
    ("slice bounds", lambda x, i, y, v: lax.slice(v, (1,), (4,)), TypeError, ["(3,)", "(4,)"]),
    ("slice rank", lambda x, i, y, v: lax.slice(x, (0,), (1,)), TypeError, ["rank 2"]),
    ("slice stride", lambda x, i, y, v: lax.slice(v, (0,), (3,), (0,)), TypeError, ["(3,)"]),
    ("reshape size", lambda x, i, y, v: lax.reshape(x, (4,)), TypeError, ["(2, 3)", "(4,)"]),
    ("transpose perm", lambda x, i, y, v: lax.transpose(x, (0, 0)), TypeError,
     ["(0, 0)", "(2, 3)"]),
    ("rev dims", lambda x, i, y, v: lax.rev(x, (2,)), TypeError, ["(2,)", "(2, 3)"]),
    ("broadcast shape", lambda x, i, y, v: lax.broadcast_in_dim(v, (2, 4), (1,)), TypeError,
     ["(3,)", "(2, 4)"]),
    ("broadcast dims", lambda x, i, y, v: lax.broadcast_in_dim(x, (3, 2), (1, 0)), TypeError,
     ["(1, 0)"]),
    ("concatenate shapes", lambda x, i, y, v: lax.concatenate([x, y], 0), TypeError,
     ["(2, 3)", "(3, 2)"]),
    ("concatenate dtypes", lambda x, i, y, v: lax.concatenate([x, i], 0), TypeError,
     ["float32", "int32"]),
    ("concatenate dimension", lambda x, i, y, v: lax.concatenate([x, x], 2), TypeError,
     ["dimension 2"]),
    ("pad negative size", lambda x, i, y, v: lax.pad(v, 0.0, [(-2, -2, 0)]), TypeError,
     ["(3,)", "negative"]),
    ("pad config rank", lambda x, i, y, v: lax.pad(x, 0.0, [(0, 0, 0)]), TypeError, ["rank-2"]),
    ("pad interior", lambda x, i, y, v: lax.pad(v, 0.0, [(0, 0, -1)]), TypeError, ["interior"]),
    ("dynamic_slice sizes", lambda x, i, y, v: lax.dynamic_slice(x, (0, 0), (3, 1)), TypeError,
     ["(3, 1)", "(2, 3)"]),
    ("dynamic_slice indices", lambda x, i, y, v: lax.dynamic_slice(x, (0,), (1,)), TypeError,
     ["rank 2"]),
    ("dynamic_slice float index", lambda x, i, y, v: lax.dynamic_slice(v, (np.float32(1),), (1,)),
     TypeError, ["integer scalars"]),
    ("dynamic_update_slice", lambda x, i, y, v: lax.dynamic_update_slice(x, y, (0, 0)),
     TypeError, ["(3, 2)", "(2, 3)"]),
    ("dot contracting sizes", lambda x, i, y, v: lax.dot_general(x, x, (((1,), (0,)), ((), ()))),
     TypeError, ["(2, 3)", "dimension"]),
    ("dot dtypes", lambda x, i, y, v: lax.dot_general(x, i, (((1,), (1,)), ((), ()))), TypeError,
     ["float32", "int32"]),
    ("dot out of range", lambda x, i, y, v: lax.dot_general(x, y, (((2,), (0,)), ((), ()))),
     TypeError, ["(2,)", "(2, 3)"]),
    ("iota dimension", lambda x, i, y, v: lax.broadcasted_iota(np.int32, (2, 3), 2), TypeError,
     ["(2, 3)"]),
]


def P_argmax(x, axes):
    from pyree.transpiler.core import primitives as P
    return P.argmax_p.bind(x, axes=axes, index_dtype=np.dtype(np.int32))


@pytest.mark.parametrize("name,fn,exc,fragments", ERRORS, ids=[e[0] for e in ERRORS])
def test_abstract_eval_errors(name, fn, exc, fragments):
    args = (_f23, _i23, _f32_, _f3)
    with pytest.raises(exc) as info:
        fn(*args)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    # The same error while tracing, before anything is compiled.
    with pytest.raises(exc) as info:
        pyree.jit(fn)(*args)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_rev_of_unsigned_eagerly():
    # Eager kernels have unknown dimensions; IREE's reverse of those needed signless elements.
    from pyree import lax
    x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(lax.rev(x, (1,))), x[:, ::-1])
    np.testing.assert_array_equal(np.asarray(lax.rev(x.astype(np.uint32), (0, 1))), x[::-1, ::-1])
