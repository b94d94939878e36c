"""``pyree.scipy.special`` against SciPy: values in float32 and float64 (many points per
compiled call, functions grouped into a few jitted programs), the far tails of ``log_ndtr``
and ``ndtri``, ``logsumexp``'s options, derivatives against closed forms and finite
differences, ``vmap`` and eager calls.

Reference values are SciPy's, computed in float64 at the float32-rounded inputs (so that the
tolerances measure pyree's error, not the inputs' rounding).
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as osp
from scipy import stats as ostats

import pyree
import pyree.numpy as jnp
from pyree.scipy import special

RNG = np.random.RandomState(0)  # for tests that draw their own inputs


def assert_close(actual, expected, rtol, atol=0.0, name=""):
    """Values within rtol/atol; infinities and NaNs where the reference has them."""
    actual = np.asarray(actual, np.float64)
    expected = np.asarray(expected, np.float64)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                               err_msg=name)


def _inputs(dtype):
    """Named input arrays, rounded to ``dtype``; the groups below apply no arithmetic to
    them, so that pyree and SciPy see the same numbers."""
    rng = np.random.RandomState(0)
    tiny = np.finfo(dtype).tiny
    low = -300 if dtype == np.float64 else -37
    p = np.concatenate([np.logspace(low, -2, 60), np.linspace(0.01, 0.99, 60),
                        1 - np.logspace(-2, -6, 10), [0.0, 1.0]])
    small = np.exp(rng.uniform(-2, 2.5, 150))
    unit = rng.uniform(0.0, 1.0, 150)
    arrays = dict(
        x=np.linspace(-9.0, 9.0, 145), x4=np.linspace(-36.0, 36.0, 145),
        x5=np.linspace(-45.0, 45.0, 145), p=np.maximum(p, tiny * (p > 0)),
        pos=np.exp(rng.uniform(np.log(1e-3), np.log(1e4), 150)),
        pos2=np.exp(rng.uniform(np.log(1e-3), np.log(1e4), 150)),
        neg=rng.uniform(-6.0, 6.0, 150), wide=rng.uniform(-18.0, 18.0, 150), small=small,
        small_r=small[::-1], unit=unit, sym=2.0 * unit - 1.0, half=unit - 0.5,
        shape_a=3.0 * small, shape_b=3.0 * small[::-1], gx=4.0 * small[::-1],
        order=small + 1.0, poch_m=3.0 * unit, mg=small + 1.5, beta_b=unit + 0.5)
    return {k: np.asarray(v, dtype) for k, v in arrays.items()}


# Each group: the pyree computation (one jitted program) and SciPy's, on float64 arrays.
def _normal_group(s, v):
    return dict(ndtr=s.ndtr(v["x"]), log_ndtr=s.log_ndtr(v["x4"]), ndtri=s.ndtri(v["p"]),
                erf=s.erf(v["x"]), erfc=s.erfc(v["x"]), erfinv=s.erfinv(v["sym"]),
                expit=s.expit(v["x5"]), logit=s.logit(v["p"]))


def _gamma_group(s, v):
    return dict(gammaln=s.gammaln(v["pos"]), gammaln_neg=s.gammaln(v["neg"]),
                digamma=s.digamma(v["small"]), gamma=s.gamma(v["neg"]),
                gammasgn=s.gammasgn(v["neg"]), betaln=s.betaln(v["pos"], v["pos2"]),
                beta=s.beta(v["small"], v["beta_b"]), multigammaln=s.multigammaln(v["mg"], 4),
                factorial=s.factorial(v["neg"]), poch=s.poch(v["small"], v["poch_m"]))


def _misc_group(s, v):
    return dict(xlogy=s.xlogy(v["neg"], v["small"]), xlog1py=s.xlog1py(v["neg"], v["half"]),
                entr=s.entr(v["neg"]), rel_entr=s.rel_entr(v["neg"], v["small"]),
                kl_div=s.kl_div(v["small"], v["unit"]),
                i0e=s.i0e(v["x4"]), i1e=s.i1e(v["x4"]), i0=s.i0(v["wide"]), i1=s.i1(v["wide"]),
                zeta=s.zeta(v["order"], v["small_r"]),
                polygamma1=s.polygamma(1, v["small"]), polygamma3=s.polygamma(3, v["small"]))


def _incomplete_group(s, v):
    return dict(gammainc=s.gammainc(v["shape_a"], v["gx"]),
                gammaincc=s.gammaincc(v["shape_a"], v["gx"]),
                betainc=s.betainc(v["shape_a"], v["shape_b"], v["unit"]))


GROUPS = {"normal": _normal_group, "gamma": _gamma_group, "misc": _misc_group,
          "incomplete": _incomplete_group}

# (rtol, atol) per function in float32; float64 uses TOL64 unless listed.
TOL32 = {
    "ndtr": (2e-6, 0), "log_ndtr": (2e-6, 1e-30), "ndtri": (2e-6, 1e-6), "erf": (2e-6, 1e-7),
    "erfc": (2e-6, 0), "erfinv": (2e-6, 1e-7), "expit": (2e-6, 0), "logit": (2e-6, 1e-7),
    # lgamma's own error near its zeros at 1 and 2 is absolute.
    "gammaln": (2e-6, 2e-6), "gammaln_neg": (1e-5, 2e-6), "digamma": (2e-6, 2e-6),
    "gamma": (2e-5, 0), "gammasgn": (0, 0), "betaln": (5e-6, 2e-6), "beta": (1e-5, 0),
    "multigammaln": (2e-6, 2e-6), "factorial": (2e-5, 0), "poch": (2e-5, 0),
    "xlogy": (2e-6, 0), "xlog1py": (2e-6, 0), "entr": (2e-6, 0), "rel_entr": (2e-6, 1e-7),
    "kl_div": (2e-6, 1e-7), "i0e": (2e-6, 0), "i1e": (2e-6, 0), "i0": (2e-6, 0),
    "i1": (2e-6, 0), "zeta": (1e-5, 0), "polygamma1": (1e-5, 0), "polygamma3": (1e-5, 0),
    "gammainc": (2e-6, 1e-7), "gammaincc": (2e-6, 1e-7), "betainc": (1e-4, 2e-6),
}
TOL64 = (1e-12, 0)
TOL64_SPECIAL = {"gammaln": (1e-13, 1e-13), "gammaln_neg": (1e-11, 1e-13),
                 "digamma": (1e-13, 1e-13),
                 # SciPy's own betaln is off by up to 1.3e-10 (against mpmath); ours by 6e-13.
                 "betaln": (2e-10, 1e-13), "gamma": (1e-12, 0),
                 "betainc": (1e-11, 1e-14), "beta": (1e-12, 0), "poch": (1e-11, 0),
                 "factorial": (1e-12, 0), "zeta": (1e-12, 0), "gammainc": (1e-12, 1e-300),
                 "gammaincc": (1e-12, 1e-300), "multigammaln": (1e-13, 1e-13)}


# Left out of the float64 runs (their float64 parts are the float32 ones' or are tested
# elsewhere), to keep float64 compiles short.
FLOAT64_SKIP = ("beta", "poch", "factorial", "gammasgn", "i0", "i1", "kl_div", "polygamma3")


class _SciPyReference:
    """SciPy's functions under pyree.scipy.special's names (float64 arrays in, out)."""

    def __getattr__(self, name):
        return getattr(osp, name)

    @staticmethod
    def multigammaln(a, d):
        return np.array([osp.multigammaln(v, d) for v in np.ravel(a)]).reshape(np.shape(a))

    @staticmethod
    def gammasgn(x):
        return osp.gammasgn(x)


def _check_group(group, dtype, tolerance, skip=()):
    values = _inputs(dtype)

    def compute(s, v):
        return {k: r for k, r in GROUPS[group](s, v).items() if k not in skip}

    out = pyree.jit(lambda v: compute(special, v))(values)
    expected = compute(_SciPyReference(), {k: v.astype(np.float64) for k, v in values.items()})
    for name, ref in expected.items():
        result = out[name]
        assert result.dtype == dtype, name
        rtol, atol = tolerance(name)
        assert_close(result, ref, rtol, atol, name)


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_values_float32(group):
    _check_group(group, np.float32, lambda name: TOL32[name])


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_values_float64(group, x64):
    _check_group(group, np.float64, lambda name: TOL64_SPECIAL.get(name, TOL64),
                 FLOAT64_SKIP)


def test_log_ndtr_tails_eager():
    # Far left: the asymptotic series (log_ndtr(-1e3) is about -5e5, not -inf); far right:
    # log1p of the tiny upper tail.
    x = np.array([-1e5, -1e3, -100.0, -40.0, -20.5, -19.5, -10.5, -9.5, -3.0, 0.0, 3.0, 8.0,
                  12.0], np.float32)
    assert_close(special.log_ndtr(x), osp.log_ndtr(x.astype(np.float64)), 2e-6, 1e-37)
    assert_close(special.ndtr(x), osp.ndtr(x.astype(np.float64)), 2e-6, 1e-37)


@pyree.jit
def _tails(x, p, ints):
    return dict(log_ndtr=special.log_ndtr(x), ndtri=special.ndtri(p),
                round_trip=special.ndtr(special.ndtri(p)), gammaln_int=special.gammaln(ints))


def test_log_ndtr_ndtri_tails_float64(x64):
    x = np.array([-1e8, -1e3, -100.0, -38.0, -20.5, -19.5, -10.5, -3.0, 0.0, 3.0, 8.0, 30.0])
    p = np.array([1e-300, 1e-200, 1e-100, 1e-30, 1e-10, 0.02, 0.3, 0.5, 0.7, 0.98,
                  1 - 1e-10, 1 - 1e-15])
    out = _tails(x, p, np.array([1, 2], np.int32))
    assert out["ndtri"].dtype == np.float64
    # 32-bit integers compute in float32 even with x64 on, as in JAX.
    assert out["gammaln_int"].dtype == np.float32
    # 1e-13: lax.erfc's float64 values carry up to 2.4e-14 relative error near z = 21 (and
    # SciPy's log_ndtr(30) is off by 5.7e-14 itself).
    assert_close(out["log_ndtr"], osp.log_ndtr(x), 1e-13, 1e-300)
    assert_close(out["ndtri"], osp.ndtri(p), 1e-14, 1e-15)
    # ndtri inverts ndtr to full precision in the lower tail.
    assert_close(out["round_trip"][:6], p[:6], 3e-13)


def test_ndtri_edges():
    p = np.array([-0.5, 0.0, 1e-37, 0.5, 1.0, 1.5, np.nan], np.float32)
    out = np.asarray(special.ndtri(p))
    assert np.isnan(out[0]) and np.isnan(out[5]) and np.isnan(out[6])
    assert out[1] == -np.inf and out[4] == np.inf and out[3] == 0.0
    assert_close(out[2], osp.ndtri(1e-37), 2e-6)


def test_logsumexp_options():
    a = RNG.normal(size=(3, 4)).astype(np.float32) * 10
    b = RNG.uniform(-1.0, 1.0, size=(3, 4)).astype(np.float32)

    @pyree.jit
    def variants(a, b):
        return dict(
            all=special.logsumexp(a),
            rows=special.logsumexp(a, axis=1, keepdims=True),
            signed=special.logsumexp(a, axis=0, b=b, return_sign=True),
            # A negative weighted sum without return_sign is NaN, as in SciPy and JAX.
            negative=special.logsumexp(a[0, :2] * 0.0 + jnp.array([0.0, 1.0]),
                                       b=jnp.array([1.0, -2.0])),
            large=special.logsumexp(a[0, :2] * 0.0 + 1000.0),
            softmax=special.softmax(a), softmax0=special.softmax(a, axis=0),
            log_softmax=special.log_softmax(a))

    out = variants(a, b)
    assert_close(out["all"], osp.logsumexp(a), 2e-6)
    assert_close(out["rows"], osp.logsumexp(a, axis=1, keepdims=True), 2e-6)
    ref, ref_sign = osp.logsumexp(a, axis=0, b=b, return_sign=True)
    assert_close(out["signed"][0], ref, 1e-5)
    np.testing.assert_array_equal(np.asarray(out["signed"][1]), ref_sign)
    assert np.isnan(float(out["negative"]))
    assert_close(out["large"], 1000.0 + np.log(2.0), 1e-7)
    assert_close(out["softmax"], osp.softmax(a), 2e-6, 1e-12)
    assert_close(out["softmax0"], osp.softmax(a, axis=0), 2e-6, 1e-12)
    assert_close(out["log_softmax"], osp.log_softmax(a), 2e-6, 2e-6)


def test_promotion_and_edge_values():
    @pyree.jit
    def edges(three, ints, zero, one):
        return dict(
            # Integers and Python scalars promote as in JAX: float32 by default.
            gammaln=special.gammaln(three), betaln=special.betaln(ints[0], three),
            xlogy_int=special.xlogy(ints, three),
            xlogy=special.xlogy(jnp.zeros(2), jnp.array([0.0, -1.0])),
            xlog1py=special.xlog1py(zero, -one),
            entr=special.entr(jnp.array([0.0, -1.0]) * one),
            zeta=special.zeta(jnp.array([1.0, 0.5, 2.0]) * one, jnp.array([1.0, 1.0, 0.0])),
            betainc=special.betainc(2.0 * one, 3.0, jnp.array([0.0, 1.0, -0.1, 1.1])),
            gammasgn=special.gammasgn(jnp.array([0.0, -0.0, -1.0, 2.5]) * one),
            logit=special.logit(jnp.array([0.0, 1.0, 2.0]) * one))

    out = edges(3, jnp.array([2, 5]), 0.0, 1.0)
    assert out["gammaln"].dtype == np.float32 and out["xlogy_int"].dtype == np.float32
    # (pyree's float32 lax.lgamma is good to about 12 ulps: lgamma(3) = 0.693148.)
    assert_close(out["gammaln"], np.log(2.0), 3e-6)
    assert_close(out["betaln"], np.log(1 / 12), 3e-6)
    assert_close(out["xlogy_int"], [2 * np.log(3.0), 5 * np.log(3.0)], 1e-6)
    assert_close(out["xlogy"], [0.0, 0.0], 0)
    assert_close(out["xlog1py"], 0.0, 0)
    assert_close(out["entr"], [0.0, -np.inf], 0)
    assert_close(out["zeta"], [np.inf, np.nan, np.inf], 0)
    assert_close(out["betainc"], [0.0, 1.0, np.nan, np.nan], 0)
    assert_close(out["gammasgn"], [1.0, -1.0, np.nan, 1.0], 0)
    assert_close(out["logit"], [-np.inf, np.inf, np.nan], 0)


def test_argument_errors():
    with pytest.raises(ValueError):
        special.polygamma(1.0, 2.0)
    with pytest.raises(ValueError):
        special.multigammaln(2.0, 0)
    with pytest.raises(ValueError):
        special.factorial(3.0, exact=True)
    with pytest.raises(TypeError):
        special.gammaln([1.0, 2.0])


def _elementwise_grad(f, *xs):
    return pyree.vmap(pyree.grad(f, argnums=tuple(range(len(xs)))))(*xs)


# First derivatives by vmap(grad) in two jitted programs (IREE's compile time grows faster
# than the program), for comparison with closed forms.
@pyree.jit
def _grads_normal(x, p, u):
    g = _elementwise_grad
    return dict(ndtr=g(special.ndtr, x)[0], log_ndtr=g(special.log_ndtr, x * 5.0)[0],
                ndtri=g(special.ndtri, p)[0], logit=g(special.logit, p)[0],
                i0e=g(special.i0e, x * 3.0)[0], i1e=g(special.i1e, x * 3.0)[0],
                xlogy=g(special.xlogy, x, u + 1.0))


# Shape parameters are arguments, not Python constants: IREE folds constant subexpressions at
# compile time by compiling and running them (lgamma of a constant costs seconds).
@pyree.jit
def _grads_gamma(a, b, s):
    g = _elementwise_grad
    return dict(betaln=g(special.betaln, a, b), entr=g(special.entr, a)[0],
                zeta_q=g(lambda q, s: special.zeta(s, q), a, s)[0],
                polygamma=g(lambda v: special.polygamma(2, v), a)[0],
                gammainc_x=g(lambda v, s: special.gammainc(s, v), a, s - 0.5)[0])


def test_gradients_closed_forms():
    x = np.linspace(-6.0, 6.0, 25).astype(np.float32)
    x[12] = 0.25  # i0e has a kink at 0
    p = np.linspace(0.01, 0.99, 25).astype(np.float32)
    a = np.exp(np.linspace(-2.0, 3.0, 25)).astype(np.float32)
    b = a[::-1].copy()
    u = np.linspace(0.05, 0.95, 25).astype(np.float32)
    g = dict(_grads_normal(x, p, u), **_grads_gamma(a, b, np.full(25, 3.0, np.float32)))
    X, P, A, B, U = (v.astype(np.float64) for v in (x, p, a, b, u))
    five_x, three_x = 5.0 * X, 3.0 * X
    expected = dict(
        ndtr=ostats.norm.pdf(X),
        log_ndtr=np.exp(ostats.norm.logpdf(five_x) - ostats.norm.logcdf(five_x)),
        ndtri=1.0 / ostats.norm.pdf(osp.ndtri(P)),
        logit=1.0 / (P * (1.0 - P)),
        entr=-(np.log(A) + 1.0),
        i0e=osp.i1e(three_x) - np.sign(three_x) * osp.i0e(three_x),
        i1e=osp.i0e(three_x) - osp.i1e(three_x) * (np.sign(three_x) + 1.0 / three_x),
        zeta_q=-3.0 * osp.zeta(4.0, A),
        polygamma=osp.polygamma(3, A),
        gammainc_x=ostats.gamma.pdf(A, 2.5),
    )
    for name, ref in expected.items():
        assert_close(g[name], ref, 2e-5, 1e-6, name)
    assert_close(g["betaln"][0], osp.digamma(A) - osp.digamma(A + B), 2e-5, 1e-5, "betaln a")
    assert_close(g["betaln"][1], osp.digamma(B) - osp.digamma(A + B), 2e-5, 1e-5, "betaln b")
    assert_close(g["xlogy"][0], np.log(U + 1.0), 2e-5, 1e-6, "xlogy x")
    assert_close(g["xlogy"][1], X / (U + 1.0), 2e-5, 1e-6, "xlogy y")


def test_betainc_gradients(x64):
    # d/dx is the Beta density; d/da and d/db (beyond JAX) against central differences.
    a = np.array([0.5, 2.0, 3.0, 40.0, 150.0])
    b = np.array([2.0, 0.7, 9.0, 30.0, 120.0])
    x = np.array([0.3, 0.9, 0.2, 0.6, 0.52])
    grads = pyree.jit(pyree.vmap(pyree.grad(special.betainc, argnums=(0, 1, 2))))(a, b, x)
    h = 1e-6
    fd_a = (osp.betainc(a + h, b, x) - osp.betainc(a - h, b, x)) / (2 * h)
    fd_b = (osp.betainc(a, b + h, x) - osp.betainc(a, b - h, x)) / (2 * h)
    assert_close(grads[0], fd_a, 1e-6, 1e-9)
    assert_close(grads[1], fd_b, 1e-6, 1e-9)
    assert_close(grads[2], ostats.beta.pdf(x, a, b), 1e-10)


@pyree.jit
def _second_derivatives(x, p, a, b):
    def g2(f, v):
        return pyree.vmap(pyree.grad(pyree.grad(f)))(v)
    return dict(log_ndtr=g2(special.log_ndtr, x), ndtri=g2(special.ndtri, p),
                logit=g2(special.logit, p),
                betaln=pyree.vmap(pyree.grad(pyree.grad(special.betaln)))(a, b))


def test_second_derivatives(x64):
    x = np.array([-12.0, -25.0, -3.0, 0.5, 4.0])  # (the reference cancels further left)
    p = np.array([1e-20, 0.01, 0.3, 0.6, 0.99])
    a, b = np.array([0.5, 3.0, 20.0, 0.1, 50.0]), np.array([2.0, 9.0, 30.0, 40.0, 0.3])
    out = _second_derivatives(x, p, a, b)
    ratio = np.exp(ostats.norm.logpdf(x) - ostats.norm.logcdf(x))
    assert_close(out["log_ndtr"], -ratio * (x + ratio), 1e-10)
    q = osp.ndtri(p)
    assert_close(out["ndtri"], q / ostats.norm.pdf(q) ** 2, 1e-10)
    assert_close(out["logit"], (2 * p - 1) / (p * (1 - p)) ** 2, 1e-10)
    assert_close(out["betaln"], osp.polygamma(1, a) - osp.polygamma(1, a + b), 1e-10)


def test_vmap():
    a = RNG.normal(size=(5, 7)).astype(np.float32)
    w = RNG.uniform(0.1, 1.0, size=7).astype(np.float32)
    out = pyree.jit(pyree.vmap(lambda row: special.logsumexp(row, b=w)))(a)
    assert_close(out, osp.logsumexp(a, axis=1, b=w), 2e-6)
    x = np.linspace(0.05, 0.95, 5).astype(np.float32)
    av = np.array([0.5, 1.0, 2.0, 5.0, 30.0], np.float32)
    out = pyree.jit(pyree.vmap(special.betainc, in_axes=(0, None, 0)))(av, np.float32(3.0), x)
    assert_close(out, osp.betainc(av.astype(np.float64), 3.0, x.astype(np.float64)), 1e-5,
                 1e-6)


def test_edge_gradients_as_jax():
    """JAX 0.10.2's values where the derivative is infinite or undefined."""
    grad = pyree.grad
    assert float(grad(special.entr)(0.0)) == np.inf
    assert np.isnan(float(grad(special.entr)(-1.0)))
    assert float(grad(special.entr)(0.5)) == pytest.approx(-(np.log(0.5) + 1), rel=1e-6)
    assert np.isnan(float(grad(special.xlogy, 1)(0.0, 0.0)))
    assert float(grad(special.xlogy, 1)(0.0, 1.0)) == 0.0
    assert float(grad(special.xlogy, 0)(0.0, 0.0)) == -np.inf
    assert np.isnan(float(grad(special.xlog1py, 1)(0.0, -1.0)))
    assert float(grad(special.xlog1py, 1)(2.0, 3.0)) == pytest.approx(0.5)
