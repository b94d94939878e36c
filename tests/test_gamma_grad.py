"""lax.igamma / igammac / igamma_grad_a / random_gamma_grad, and gradients of random.gamma
(and the samplers built on it) with respect to their shape parameters.

References: SciPy's gammainc/gammaincc, finite differences of them in float64, the implicit
derivative -(dP/da)/p, SciPy's gammaincinv differentiated at a fixed quantile, closed-form
means, and known answers computed once with JAX 0.10.2 (jax.lax in float64). Compiles are kept
few: one eager program per function over one array of every test point, one jitted and one
vmapped program over the same points.
"""
import numpy as np
import pytest
import scipy.special as sc

import pyree
import pyree.numpy as jnp
from pyree import lax, random

FUNCTIONS = ("igamma", "igammac", "igamma_grad_a", "random_gamma_grad")

# -- test points -----------------------------------------------------------------------------

_A_GRID = np.concatenate([np.logspace(-3, 3, 31), [0.5, 1.0, 2.0, 10.0, 100.0]])
_X_GRID = np.concatenate([[0.0], np.logspace(-4, 3, 36), [0.5, 1.0, 1.5, 9.5, 10.5, 99.0]])
GRID_A, GRID_X = (v.ravel() for v in np.meshgrid(_A_GRID, _X_GRID))

# Edge cases with JAX 0.10.2's float32 answers, except where noted.
EDGE_A = np.array([0., 0., 0., 1., -1., np.inf, np.inf, np.nan, 1., 1., 1., 1., 1e-3, 2.0,
                   0.5, 3.0, np.inf, 1e-30, 5.0], np.float32)
EDGE_X = np.array([0., 0.5, 2., 0., 1., 1., np.inf, 1., -1., np.inf, np.nan, 1e-30, 1e-30,
                   1e-45, 0.0, 1e4, 0.0, 1.0, np.inf], np.float32)
nan, inf = np.nan, np.inf
EDGE_EXPECTED = {
    # a = 0 < x < 1 (index 1): 1 = 1 - igammac(0, x), where JAX's series gives 0/0 = NaN.
    "igamma": [nan, 1.0, 1.0, 0.0, nan, nan, 1.0, nan, nan, 1.0, nan, 1e-30, 0.93379235, 0.0,
               0.0, 1.0, 0.0, 1.0, 1.0],
    "igammac": [nan, 0.0, 0.0, 1.0, nan, nan, 0.0, nan, nan, 0.0, nan, 1.0, 0.06620762, 1.0,
                1.0, 0.0, 1.0, 2.1938394e-31, 0.0],
    # x = inf (indices 9 and 18): 0, the derivative of the constant P = 1, where JAX gives NaN.
    "igamma_grad_a": [nan, nan, nan, 0.0, nan, nan, nan, nan, nan, 0.0, nan, -6.950034e-29,
                      -63.966629, 0.0, 0.0, 0.0, nan, -0.21938393, 0.0],
    "random_gamma_grad": [nan, nan, nan, 0.0, nan, nan, nan, nan, nan, nan, nan, 6.950034e-29,
                          6.850198e-26, 0.0, 0.0, 8.2893137, nan, 5.9634736e+29, nan],
}

# jax.lax.igamma_grad_a / random_gamma_grad in float64 (JAX 0.10.2) at these points.
KNOWN_A = np.array([0.3, 1.0, 2.5, 7.0, 40.0, 250.0, 0.01, 900.0])
KNOWN_X = np.array([0.2, 1.7, 2.0, 9.0, 38.0, 260.0, 3.0, 870.0])
KNOWN = {
    "igamma_grad_a": [-1.0233803072203953, -0.27703947506988336, -0.27455132194588133,
                      -0.10549943367004846, -0.06157565466210051, -0.020367153351256516,
                      -0.013547187572805158, -0.008110977026791378],
    "random_gamma_grad": [1.2120372612897223, 1.5164995119642601, 0.9534627029186161,
                          1.1581849180715331, 0.9786426956404422, 1.0204186094228764,
                          80.28073918093463, 0.9833270753793848],
}

ALL_A = np.concatenate([GRID_A, KNOWN_A, EDGE_A]).astype(np.float32)
ALL_X = np.concatenate([GRID_X, KNOWN_X, EDGE_X]).astype(np.float32)
N_GRID, N_KNOWN = GRID_A.size, KNOWN_A.size


def _all_four(a, x):
    return tuple(getattr(lax, name)(a, x) for name in FUNCTIONS)


@pytest.fixture(scope="module")
def eager():
    """Each function applied eagerly to every float32 test point."""
    a, x = jnp.asarray(ALL_A), jnp.asarray(ALL_X)
    return {name: np.asarray(out) for name, out in zip(FUNCTIONS, _all_four(a, x))}


def _scipy_grad_a(a, x):
    """dP/da by central differences of SciPy in float64 (of Q where P is near 1)."""
    h = 1e-6 * a
    from_p = (sc.gammainc(a + h, x) - sc.gammainc(a - h, x)) / (2 * h)
    from_q = -(sc.gammaincc(a + h, x) - sc.gammaincc(a - h, x)) / (2 * h)
    return np.where(sc.gammainc(a, x) < 0.5, from_p, from_q)


def _density(a, x):
    return np.exp((a - 1) * np.log(x) - x - sc.gammaln(a))


# -- values ----------------------------------------------------------------------------------

def test_igamma_igammac_match_scipy(eager):
    a, x = ALL_A[:N_GRID].astype(float), ALL_X[:N_GRID].astype(float)
    for name, reference in (("igamma", sc.gammainc), ("igammac", sc.gammaincc)):
        got, want = eager[name][:N_GRID], reference(a, x)
        assert eager[name].dtype == np.float32
        # Relative 1e-6 (a few float32 ulps) down to float32's smallest normal numbers.
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-37, err_msg=name)


def test_igamma_grad_a_matches_finite_differences(eager):
    a, x = ALL_A[:N_GRID].astype(float), ALL_X[:N_GRID].astype(float)
    np.testing.assert_allclose(eager["igamma_grad_a"][:N_GRID], _scipy_grad_a(a, x),
                               rtol=2e-5, atol=1e-9)


def test_random_gamma_grad_matches_implicit_formula(eager):
    a, x = ALL_A[:N_GRID].astype(float), ALL_X[:N_GRID].astype(float)
    # Where the density is representable and P, Q are not both tiny the quotient is meaningful.
    ok = (x > 0) & (_density(a, np.where(x > 0, x, 1.0)) > 1e-250)
    want = -_scipy_grad_a(a[ok], x[ok]) / _density(a[ok], x[ok])
    np.testing.assert_allclose(eager["random_gamma_grad"][:N_GRID][ok], want, rtol=2e-5,
                               atol=1e-7)


def test_known_answers_from_jax(eager):
    part = slice(N_GRID, N_GRID + N_KNOWN)
    for name, values in KNOWN.items():
        # float32 results are as accurate as JAX's float64 ones, to float32's precision.
        np.testing.assert_allclose(eager[name][part], values, rtol=2e-6, err_msg=name)


def test_edge_cases(eager):
    part = slice(N_GRID + N_KNOWN, None)
    for name, values in EDGE_EXPECTED.items():
        np.testing.assert_allclose(eager[name][part], np.array(values, np.float32),
                                   rtol=1e-6, atol=0, err_msg=name)


def test_jit_and_vmap_agree_with_eager(eager):
    a, x = jnp.asarray(ALL_A), jnp.asarray(ALL_X)
    jitted = pyree.jit(_all_four)(a, x)
    cols = next(c for c in (5, 7, 3, 2, 1) if ALL_A.size % c == 0)
    rows = (ALL_A.size // cols, cols)
    mapped = pyree.vmap(_all_four)(jnp.reshape(a, rows), jnp.reshape(x, rows))
    for name, j, v in zip(FUNCTIONS, jitted, mapped):
        want = eager[name]
        np.testing.assert_allclose(np.asarray(j), want, rtol=1e-6, atol=1e-37, err_msg=name)
        np.testing.assert_allclose(np.asarray(v).ravel(), want, rtol=1e-6, atol=1e-37,
                                   err_msg=name)


def test_float64(x64):
    a = np.concatenate([GRID_A, KNOWN_A])
    x = np.concatenate([GRID_X, KNOWN_X])
    outs = pyree.jit(_all_four)(jnp.asarray(a), jnp.asarray(x))
    p, q, grad_a, sample_grad = (np.asarray(o) for o in outs)
    assert p.dtype == np.float64
    g = slice(0, N_GRID)
    np.testing.assert_allclose(p[g], sc.gammainc(a[g], x[g]), rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(q[g], sc.gammaincc(a[g], x[g]), rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(grad_a[g], _scipy_grad_a(a[g], x[g]), rtol=2e-5, atol=1e-9)
    k = slice(N_GRID, None)
    np.testing.assert_allclose(grad_a[k], KNOWN["igamma_grad_a"], rtol=1e-11)
    np.testing.assert_allclose(sample_grad[k], KNOWN["random_gamma_grad"], rtol=1e-11)


def test_half_precision_and_random_gamma_grad_broadcasting():
    a = np.array([0.5, 2.0, 7.0], np.float32)
    x = np.array([0.3, 2.5, 5.0], np.float32)

    def f(a16, x16, ab, xb, a_col, x_row):
        return (lax.igamma(a16, x16), lax.igammac(ab, xb), lax.random_gamma_grad(a_col, x_row),
                lax.random_gamma_grad(a16, jnp.asarray(x)))

    p16, qb, grid, mixed = pyree.jit(f)(
        jnp.asarray(a, jnp.float16), jnp.asarray(x, jnp.float16),
        jnp.asarray(a, jnp.bfloat16), jnp.asarray(x, jnp.bfloat16),
        jnp.asarray(a[:, None]), jnp.asarray(x[None, :]))
    assert p16.dtype == jnp.float16 and qb.dtype == jnp.bfloat16
    a16, x16 = a.astype(np.float16).astype(float), x.astype(np.float16).astype(float)
    np.testing.assert_allclose(np.asarray(p16, np.float32), sc.gammainc(a16, x16), rtol=1e-3)
    ab = np.asarray(jnp.asarray(a, jnp.bfloat16), np.float32).astype(float)
    xb = np.asarray(jnp.asarray(x, jnp.bfloat16), np.float32).astype(float)
    np.testing.assert_allclose(np.asarray(qb, np.float32), sc.gammaincc(ab, xb), rtol=8e-3)
    # random_gamma_grad broadcasts (as JAX's) and keeps a's dtype.
    assert grid.shape == (3, 3) and grid.dtype == np.float32
    want = -_scipy_grad_a(a[:, None].astype(float), x[None, :].astype(float)) / _density(
        a[:, None].astype(float), x[None, :].astype(float))
    np.testing.assert_allclose(np.asarray(grid), want, rtol=1e-4)
    assert mixed.dtype == jnp.float16
    np.testing.assert_allclose(np.asarray(mixed, np.float32), np.diag(want), rtol=2e-3)


def test_python_scalars_and_rank0_broadcast():
    # One rank-0 operand (or a Python scalar, which takes the array's dtype) broadcasts.
    out = lax.igamma(jnp.asarray(np.array([0.5, 1.0, 4.0], np.float32)), 2.0)
    assert out.shape == (3,) and out.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), sc.gammainc([0.5, 1.0, 4.0], 2.0), rtol=1e-6)
    np.testing.assert_allclose(float(lax.igammac(3.0, 2.0)), sc.gammaincc(3.0, 2.0), rtol=1e-6)


@pytest.mark.parametrize("call, error", [
    (lambda: lax.igamma(jnp.ones(3, jnp.int32), jnp.ones(3, jnp.int32)), TypeError),
    (lambda: lax.igamma(1, 2), TypeError),
    (lambda: lax.igammac(jnp.ones(3, jnp.float16), jnp.ones(3)), TypeError),
    (lambda: lax.igamma_grad_a(jnp.ones(3), jnp.ones(2)), TypeError),
    (lambda: lax.random_gamma_grad(jnp.ones(3), jnp.ones(2)), ValueError),
])
def test_bad_operands(call, error):
    with pytest.raises(error):
        call()


def test_igamma_igammac_derivatives():
    a = np.array([0.3, 1.0, 2.5, 7.0, 40.0, 0.01], np.float32)
    x = np.array([0.2, 1.7, 2.0, 9.0, 38.0, 3.0], np.float32)

    def grads(a, x):
        dp = pyree.vmap(pyree.grad(lax.igamma, argnums=(0, 1)))(a, x)
        dq = pyree.vmap(pyree.grad(lax.igammac, argnums=(0, 1)))(a, x)
        return dp + dq

    dp_da, dp_dx, dq_da, dq_dx = (np.asarray(g) for g in pyree.jit(grads)(jnp.asarray(a),
                                                                           jnp.asarray(x)))
    af, xf = a.astype(float), x.astype(float)
    np.testing.assert_allclose(dp_da, _scipy_grad_a(af, xf), rtol=1e-5)
    np.testing.assert_allclose(dp_dx, _density(af, xf), rtol=1e-5)
    np.testing.assert_allclose(dq_da, -dp_da, rtol=1e-6)
    np.testing.assert_allclose(dq_dx, -dp_dx, rtol=1e-6)


def test_igamma_first_derivatives_against_finite_differences(x64):
    from pyree.test_util import check_grads
    a = jnp.asarray(np.array([0.6, 2.5, 9.0]))
    x = jnp.asarray(np.array([0.4, 3.1, 7.5]))
    check_grads(lambda a, x: lax.igamma(a, x) + 2.0 * lax.igammac(a, x), (a, x), order=1,
                modes=("fwd", "rev"))


# -- gradients of the samplers ------------------------------------------------------------------

KEY = random.PRNGKey(0)
N = 100_000


def test_gamma_mean_gradient_is_one():
    # E[x] = a, so d mean / da -> 1; standard errors (this key): 0.0033, 0.0017, 0.0007.
    grad_mean = pyree.jit(pyree.grad(lambda a: jnp.mean(random.gamma(KEY, a, (N,)))))
    for a, tol in ((0.3, 0.015), (1.0, 0.008), (5.0, 0.004)):
        assert abs(float(grad_mean(jnp.float32(a))) - 1.0) < tol


def _quantile_derivative(a, x):
    """d x / d a at the fixed quantile of x: SciPy's inverse CDF differentiated centrally."""
    h = 1e-5 * a
    p, q = sc.gammainc(a, x), sc.gammaincc(a, x)
    from_p = (sc.gammaincinv(a + h, p) - sc.gammaincinv(a - h, p)) / (2 * h)
    from_q = (sc.gammainccinv(a + h, q) - sc.gammainccinv(a - h, q)) / (2 * h)
    return np.where(p < 0.5, from_p, from_q)


def test_per_draw_gradients_gamma_and_loggamma():
    a = jnp.asarray(np.repeat(np.array([0.05, 0.3, 1.0, 5.0, 50.0], np.float32), 40))

    def tangents(a):
        ones = jnp.ones_like(a)
        x, dx = pyree.jvp(lambda a: random.gamma(KEY, a), (a,), (ones,))
        log_x, dlog_x = pyree.jvp(lambda a: random.loggamma(KEY, a), (a,), (ones,))
        return x, dx, log_x, dlog_x

    x, dx, log_x, dlog_x = (np.asarray(v).astype(float) for v in pyree.jit(tangents)(a))
    af = np.asarray(a).astype(float)
    ok = x > 1e-30  # tiny draws of a = 0.05 are too small for SciPy's inverse
    want = _quantile_derivative(af[ok], x[ok])
    np.testing.assert_allclose(dx[ok], want, rtol=1e-4)
    # Log space: d log x / da of the loggamma draw, at its own quantile.
    x_log = np.exp(log_x)
    ok = x_log > 1e-30
    want = _quantile_derivative(af[ok], x_log[ok]) / x_log[ok]
    np.testing.assert_allclose(dlog_x[ok], want, rtol=1e-4)


def test_beta_mean_gradients():
    # E = a / (a + b). Each parameter in its own backward pass: IREE 3.13 fails to compile
    # the two-parameter gradient of this program (see the report on the lowering).
    def mean(a, b):
        return jnp.mean(random.beta(KEY, a, b, (N,)))

    def both(a, b):
        return pyree.grad(mean, argnums=0)(a, b), pyree.grad(mean, argnums=1)(a, b)

    grads = pyree.jit(both)
    for a, b in ((2.0, 3.0), (0.3, 0.5)):
        da, db = grads(jnp.float32(a), jnp.float32(b))
        s = a + b
        np.testing.assert_allclose([float(da), float(db)], [b / s**2, -a / s**2], rtol=0.02)


def test_dirichlet_mean_jacobian():
    alpha = np.array([0.5, 1.0, 2.5])
    s = alpha.sum()
    jac = pyree.jit(pyree.jacrev(lambda al: jnp.mean(random.dirichlet(KEY, al, (N,)),
                                                     axis=0)))(jnp.asarray(alpha, jnp.float32))
    want = (np.eye(3) * s - alpha[:, None]) / s**2  # d (alpha_i / s) / d alpha_j
    np.testing.assert_allclose(np.asarray(jac), want, atol=0.006)


def test_chisquare_t_f_gradients():
    def grads(df, dfden):
        chi = pyree.grad(lambda d: jnp.mean(random.chisquare(KEY, d, (N,))))(df)
        t2 = pyree.grad(lambda d: jnp.mean(random.t(KEY, d, (N,)) ** 2))(dfden)
        f_den = pyree.grad(lambda d: jnp.mean(random.f(KEY, df, d, (N,))))(dfden)
        return chi, t2, f_den

    chi, t2, f_den = (float(g) for g in pyree.jit(grads)(jnp.float32(3.0), jnp.float32(10.0)))
    assert abs(chi - 1.0) < 0.006           # E = df
    assert abs(t2 - (-2 / 8**2)) < 0.002    # E[t^2] = df / (df - 2)
    assert abs(f_den - (-2 / 8**2)) < 0.0015  # E = dfden / (dfden - 2)
