"""``pyree.scipy.stats`` against SciPy: every function of every distribution on arrays of
points that include the edges and the outside of the support (one jitted program per
distribution, float32, and a float64 subset under x64), derivatives against closed forms,
the multivariate normal and Dirichlet densities with batches, ``vmap`` and eager calls.

Reference values are SciPy's, computed in float64 at the float32-rounded inputs.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special as osp
from scipy import stats as ostats

import pyree
import pyree.numpy as jnp
import pyree.scipy
from pyree.scipy import stats

N = 48


def assert_close(actual, expected, rtol, atol=0.0, name=""):
    """Values within rtol/atol; infinities and NaNs where the reference has them."""
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected, np.float64),
                               rtol=rtol, atol=atol, equal_nan=True, err_msg=name)


def _points(dtype):
    """Named inputs (rounded to dtype), with support edges and points outside it."""
    rng = np.random.RandomState(1)
    x = np.concatenate([rng.uniform(-6, 6, N - 4), [0.0, -1e-3, 1.0, 7.5]])
    q = np.concatenate([rng.uniform(0, 1, N - 6), [0.0, 1.0, -0.1, 1.1, 1e-6, 0.999]])
    arrays = dict(
        x=x, loc=rng.uniform(-1, 1, N), scale=rng.uniform(0.5, 2, N), q=q,
        a=np.exp(rng.uniform(-1, 3, N)), b=np.exp(rng.uniform(-1, 3, N)),
        u=np.concatenate([rng.uniform(-0.2, 1.2, N - 2), [0.0, 1.0]]),
        k=np.concatenate([rng.randint(-1, 14, N - 3), [2.5, -0.5, 0.0]]),
        mu=rng.uniform(0.05, 9, N), n=rng.randint(1, 15, N), p=rng.uniform(0, 1, N),
        kb=np.concatenate([rng.randint(-1, 3, N - 2), [0.5, 1.0]]))
    return {name: np.asarray(v, dtype) for name, v in arrays.items()}


_LOC_SCALE = ("x", "loc", "scale")
_CONT = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]
_DISC = ["logpmf", "pmf", "cdf", "logcdf", "sf", "logsf"]
# name -> [(functions, argument names)]
DISTRIBUTIONS = {
    "norm": [(_CONT, _LOC_SCALE), (["ppf", "isf"], ("q", "loc", "scale"))],
    "cauchy": [(_CONT, _LOC_SCALE), (["ppf", "isf"], ("q", "loc", "scale"))],
    "laplace": [(_CONT, _LOC_SCALE), (["ppf", "isf"], ("q", "loc", "scale"))],
    "logistic": [(_CONT, _LOC_SCALE), (["ppf", "isf"], ("q", "loc", "scale"))],
    "expon": [(_CONT, _LOC_SCALE), (["ppf", "isf"], ("q", "loc", "scale"))],
    "uniform": [(_CONT, _LOC_SCALE), (["ppf", "isf"], ("q", "loc", "scale"))],
    "t": [(_CONT, ("x", "a", "loc", "scale"))],
    "gamma": [(_CONT, ("x", "a", "loc", "scale"))],
    "beta": [(_CONT, ("u", "a", "b"))],
    "poisson": [(_DISC, ("k", "mu"))],
    "binom": [(_DISC, ("k", "n", "p"))],
    "bernoulli": [(["logpmf", "pmf", "cdf", "sf"], ("kb", "p")), (["ppf"], ("q", "p"))],
}
# float32 tolerances (rtol, atol); the absolute part covers results near 0 (a quantile at
# loc, log of a probability near 1, where SciPy's own log(1 - tiny) is no better).
TOL32 = {"t": (3e-5, 1e-6), "beta": (1e-4, 2e-6), "binom": (3e-5, 1e-6),
         "poisson": (2e-5, 1e-6)}
TOL32_DEFAULT = (1e-5, 1e-6)


def _run(name, values, only=None):
    """pyree's results for the distribution's functions (one jitted program) and SciPy's."""
    module, reference = getattr(stats, name), getattr(ostats, name)
    calls = [(f, arg_names) for functions, arg_names in DISTRIBUTIONS[name]
             for f in functions if only is None or f in only]
    ours = pyree.jit(lambda v: {f: getattr(module, f)(*[v[a] for a in arg_names])
                                for f, arg_names in calls})(values)
    with np.errstate(all="ignore"):
        expected = {f: getattr(reference, f)(*[values[a].astype(np.float64) for a in arg_names])
                    for f, arg_names in calls}
    return ours, expected


@pytest.mark.parametrize("name", sorted(DISTRIBUTIONS))
def test_values_float32(name):
    ours, expected = _run(name, _points(np.float32))
    rtol, atol = TOL32.get(name, TOL32_DEFAULT)
    for f, ref in expected.items():
        assert ours[f].dtype == np.float32, f
        assert_close(ours[f], ref, rtol, atol, f"{name}.{f}")


# A float64 subset: the distributions built on special functions.
# (norm's float64 tails have their own test.)
FLOAT64 = {"t": ["logpdf", "cdf", "sf"], "gamma": ["logpdf", "cdf", "logsf"],
           "beta": ["logpdf", "cdf"], "binom": ["logpmf", "cdf"]}


@pytest.mark.parametrize("name", sorted(FLOAT64))
def test_values_float64(name, x64):
    ours, expected = _run(name, _points(np.float64), FLOAT64[name])
    for f, ref in expected.items():
        assert ours[f].dtype == np.float64, f
        assert_close(ours[f], ref, 1e-11, 1e-300, f"{name}.{f}")


def test_norm_tails_float64(x64):
    x = np.array([-1e4, -40.0, -10.0, 0.0, 10.0, 40.0])
    q = np.array([1e-300, 1e-20, 0.5, 1 - 1e-12])
    out = pyree.jit(lambda x, q, loc, scale: (stats.norm.logcdf(x), stats.norm.logsf(x),
                                              stats.norm.ppf(q, loc, scale)))(x, q, 1.0, 2.0)
    assert_close(out[0], ostats.norm.logcdf(x), 1e-13)
    assert_close(out[1], ostats.norm.logsf(x), 1e-13)
    assert_close(out[2], ostats.norm.ppf(q, 1.0, 2.0), 1e-13)


def test_out_of_support():
    # -inf log densities and zero densities outside the support, as SciPy.
    # (Parameters are arguments: IREE would fold gammaln of constants at compile time, slowly.)
    @pyree.jit
    def outside(one, two, three, half):
        return dict(
            expon=stats.expon.logpdf(jnp.array([-0.5, -1e-6]) * one),
            gamma=stats.gamma.logpdf(-one, two),
            gamma0=stats.gamma.logpdf(0.0 * one, jnp.array([0.5, 1.0, 2.0]) * one),
            beta=stats.beta.pdf(jnp.array([-0.1, 1.1]) * one, two, three),
            uniform=stats.uniform.logpdf(jnp.array([-0.1, 1.1]) * one),
            poisson=stats.poisson.logpmf(jnp.array([-1.0, 1.5, 0.0]) * one, two),
            binom=stats.binom.pmf(jnp.array([-1.0, 4.0, 0.5, 3.0]) * one, three, half),
            bernoulli=stats.bernoulli.logpmf(jnp.array([0.0, 1.0, 2.0]) * one, 0.0 * one))

    out = outside(1.0, 2.0, 3.0, 0.5)
    assert np.all(np.asarray(out["expon"]) == -np.inf)
    assert np.asarray(out["gamma"]) == -np.inf
    # (atol: pyree's float32 lax.lgamma(1.0) is 4.8e-7, not 0.)
    assert_close(out["gamma0"], ostats.gamma.logpdf(0.0, [0.5, 1.0, 2.0]), 1e-6, 1e-6)
    assert np.all(np.asarray(out["beta"]) == 0.0)
    assert np.all(np.asarray(out["uniform"]) == -np.inf)
    assert_close(out["poisson"], [-np.inf, -np.inf, -2.0], 1e-6)
    assert_close(out["binom"], [0.0, 0.0, 0.0, 0.125], 1e-6)
    assert_close(out["bernoulli"], [0.0, -np.inf, -np.inf], 0)


def _grad_closed_forms():
    def each(f, argnums, *xs):
        return pyree.vmap(pyree.grad(f, argnums=argnums))(*xs)

    @pyree.jit
    def grads(x, loc, scale, a, u, b, k, mu, n, p):
        return dict(
            norm=each(stats.norm.logpdf, (0, 1, 2), x, loc, scale),
            logistic=each(stats.logistic.logpdf, 0, x, loc, scale),
            cauchy=each(stats.cauchy.logpdf, 0, x, loc, scale),
            expon_scale=each(lambda s, v: stats.expon.logpdf(v, 0.0, s), 0, scale, jnp.abs(x)),
            t_cdf=each(stats.t.cdf, 0, x, a, loc, scale),
            gamma_cdf=each(stats.gamma.cdf, 0, jnp.abs(x), a),
            gamma_a=each(stats.gamma.logpdf, 1, jnp.abs(x), a),
            beta_cdf=each(stats.beta.cdf, 0, u, a, b),
            poisson_mu=each(stats.poisson.logpmf, 1, k, mu),
            binom_p=each(stats.binom.logpmf, 2, k, n, p),
        )
    return grads


def test_gradients():
    rng = np.random.RandomState(2)
    m = 16
    f32 = lambda v: np.asarray(v, np.float32)
    x = f32(rng.uniform(-4, 4, m))
    loc, scale = f32(rng.uniform(-1, 1, m)), f32(rng.uniform(0.5, 2, m))
    a, b = f32(np.exp(rng.uniform(0, 2.5, m))), f32(np.exp(rng.uniform(0, 2.5, m)))
    u = f32(rng.uniform(0.05, 0.95, m))
    n = f32(rng.randint(5, 20, m))
    k = f32(np.floor(u * n))
    mu, p = f32(rng.uniform(0.5, 6, m)), f32(rng.uniform(0.05, 0.95, m))
    g = _grad_closed_forms()(x, loc, scale, a, u, b, k, mu, n, p)
    X, L, S, A, B, U, K, MU, NN, P = (v.astype(np.float64) for v in
                                       (x, loc, scale, a, b, u, k, mu, n, p))
    z = (X - L) / S
    tol = dict(rtol=5e-5, atol=1e-6)
    assert_close(g["norm"][0], -z / S, **tol)
    assert_close(g["norm"][1], z / S, **tol)
    assert_close(g["norm"][2], (z * z - 1) / S, **tol)
    assert_close(g["logistic"], -np.tanh(z / 2) / S, **tol)
    assert_close(g["cauchy"], -2 * z / (1 + z * z) / S, **tol)
    assert_close(g["expon_scale"], (np.abs(X) / S - 1) / S, **tol)
    assert_close(g["t_cdf"], ostats.t.pdf(X, A, L, S), **tol)
    assert_close(g["gamma_cdf"], ostats.gamma.pdf(np.abs(X), A), **tol)
    assert_close(g["gamma_a"], np.log(np.abs(X)) - osp.digamma(A), **tol)
    assert_close(g["beta_cdf"], ostats.beta.pdf(U, A, B), 1e-4, 1e-5)
    assert_close(g["poisson_mu"], K / MU - 1, **tol)
    assert_close(g["binom_p"], K / P - (NN - K) / (1 - P), **tol)


def _spd(rng, n, batch=()):
    m = rng.normal(size=batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) + n * np.eye(n)


def test_multivariate_normal_values():
    rng = np.random.RandomState(3)
    cov = _spd(rng, 4).astype(np.float32)
    mean = rng.normal(size=4).astype(np.float32)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    diag = np.array([0.5, 1.0, 2.0, 4.0], np.float32)
    mvn = stats.multivariate_normal

    @pyree.jit
    def densities(x, mean, cov, diag):
        return dict(full=mvn.logpdf(x, mean, cov), pdf=mvn.pdf(x, mean, cov),
                    one=mvn.logpdf(x[0], mean, cov),
                    # Scalar mean: the univariate normal with variance cov.
                    univariate=mvn.logpdf(x[:, 0], 0.5, 2.0),
                    isotropic=mvn.logpdf(x, mean, 2.5), diagonal=mvn.logpdf(x, mean, diag))

    out = densities(x, mean, cov, diag)
    ref = ostats.multivariate_normal.logpdf(x, mean, cov)
    assert_close(out["full"], ref, 2e-5)
    assert_close(out["pdf"], np.exp(ref), 5e-5)
    assert_close(out["one"], ref[0], 2e-5)
    assert_close(out["univariate"], ostats.norm.logpdf(x[:, 0], 0.5, np.sqrt(2.0)), 2e-6)
    assert_close(out["isotropic"], ostats.multivariate_normal.logpdf(x, mean, 2.5), 2e-6)
    assert_close(out["diagonal"], ostats.multivariate_normal.logpdf(x, mean, diag), 2e-6)
    with pytest.raises(ValueError):
        mvn.logpdf(x, mean, np.eye(3, dtype=np.float32))
    with pytest.raises(NotImplementedError):
        mvn.logpdf(x, mean, cov, allow_singular=True)


def test_multivariate_normal_batches_jit_vmap():
    rng = np.random.RandomState(4)
    covs = _spd(rng, 3, (2,)).astype(np.float32)
    means = rng.normal(size=(5, 3)).astype(np.float32)
    x = rng.normal(size=(5, 3)).astype(np.float32)
    logpdf = pyree.jit(stats.multivariate_normal.logpdf)
    # cov (2, 1, 3, 3) with x and mean (5, 3): a (2, 5) batch.
    out = logpdf(x, means, covs[:, None])
    ref = np.stack([[ostats.multivariate_normal.logpdf(x[j], means[j], covs[i])
                     for j in range(5)] for i in range(2)])
    assert_close(out, ref, 2e-5)
    out = pyree.vmap(stats.multivariate_normal.logpdf, in_axes=(None, None, 0))(x, means[0],
                                                                               covs)
    ref = np.stack([ostats.multivariate_normal.logpdf(x, means[0], c) for c in covs])
    assert_close(out, ref, 2e-5)


def test_multivariate_normal_gradients():
    rng = np.random.RandomState(5)
    cov, mean, x = _spd(rng, 3), rng.normal(size=3), rng.normal(size=3)
    cov, mean, x = (v.astype(np.float32) for v in (cov, mean, x))
    g_mean, g_cov = pyree.jit(pyree.grad(
        lambda m, c: stats.multivariate_normal.logpdf(x, m, c), argnums=(0, 1)))(mean, cov)
    inv = np.linalg.inv(cov.astype(np.float64))
    d = (x - mean).astype(np.float64)
    assert_close(g_mean, inv @ d, 1e-5, 1e-7)
    assert_close(g_cov, 0.5 * (inv @ np.outer(d, d) @ inv - inv), 1e-5, 1e-7)


def test_dirichlet():
    rng = np.random.RandomState(6)
    alpha = np.array([0.7, 2.0, 3.5], np.float32)
    x = rng.dirichlet([1.0, 1.0, 1.0], size=6).T.astype(np.float32)  # (K, batch)
    x64 = x.astype(np.float64)
    # SciPy wants the simplex to 1e-9: renormalize the float32-rounded points for it.
    ref = ostats.dirichlet.logpdf(x64 / x64.sum(0), alpha.astype(np.float64))
    off = np.array([[0.5, -0.1], [0.4, 0.6], [0.2, 0.5]], np.float32)

    @pyree.jit
    def densities(x, alpha, off):
        return dict(full=stats.dirichlet.logpdf(x, alpha), pdf=stats.dirichlet.pdf(x, alpha),
                    # The last component may be left out; points off the simplex get -inf.
                    short=stats.dirichlet.logpdf(x[:2], alpha),
                    off=stats.dirichlet.logpdf(off, alpha),
                    # d/d alpha_i = log x_i - digamma(alpha_i) + digamma(sum alpha).
                    grad=pyree.grad(lambda a: stats.dirichlet.logpdf(x[:, 0], a))(alpha))

    out = densities(x, alpha, off)
    assert_close(out["full"], ref, 2e-5)
    assert_close(out["pdf"], np.exp(ref), 5e-5)
    assert_close(out["short"], ref, 2e-5)
    assert np.all(np.asarray(out["off"]) == -np.inf)
    a64 = alpha.astype(np.float64)
    expected = np.log(x64[:, 0]) - osp.digamma(a64) + osp.digamma(a64.sum())
    assert_close(out["grad"], expected, 5e-5, 1e-5)
    with pytest.raises(ValueError):
        stats.dirichlet.logpdf(x, alpha[None])
    with pytest.raises(ValueError):
        stats.dirichlet.logpdf(x[:1], alpha)


def test_module_access_and_promotion():
    # Both spellings reach the same modules.
    assert pyree.scipy.stats.norm is stats.norm
    from pyree.scipy.stats import norm
    for name in stats.__all__:
        module = getattr(stats, name)
        assert all(callable(getattr(module, f)) for f in module.__all__), name

    # Python scalars and integers promote as in JAX: float32 by default.
    @pyree.jit
    def promoted(one, ints):
        return dict(norm=norm.logpdf(one, 0, 2), poisson=stats.poisson.logpmf(ints, 2),
                    binom=stats.binom.pmf(ints, 2, 0.5))

    out = promoted(1.0, jnp.array([0, 1, 2]))
    assert all(v.dtype == np.float32 for v in out.values())
    assert_close(out["norm"], ostats.norm.logpdf(1.0, 0, 2), 1e-6)
    assert_close(out["poisson"], ostats.poisson.logpmf([0, 1, 2], 2), 2e-6)
    assert_close(out["binom"], [0.25, 0.5, 0.25], 1e-6)


def test_eager_and_vmap():
    df = np.array([1.0, 2.5, 10.0, 200.0], np.float32)
    x = np.array([-3.0, 0.5, 2.0], np.float32)
    out = pyree.jit(pyree.vmap(lambda d: stats.t.cdf(x, d)))(df)
    ref = ostats.t.cdf(x[None, :].astype(np.float64), df[:, None].astype(np.float64))
    assert_close(out, ref, 3e-5, 1e-7)
    out = pyree.jit(pyree.vmap(stats.beta.logpdf, in_axes=(0, None, None)))(
        np.array([[0.2, 0.5], [0.9, 1.5]], np.float32), np.float32(2.0), np.float32(3.0))
    assert_close(out, ostats.beta.logpdf([[0.2, 0.5], [0.9, 1.5]], 2.0, 3.0), 2e-6)
    # Eagerly, without jit.
    assert_close(stats.laplace.cdf(x, 0.5, 2.0), ostats.laplace.cdf(x, 0.5, 2.0), 2e-6)
    assert_close(stats.logistic.ppf(np.float32(0.25)), ostats.logistic.ppf(0.25), 2e-6)


def test_poisson_entropy_matches_jax_and_scipy():
    import scipy.stats
    from pyree.scipy.stats import poisson
    mu = np.array([0.0, 1e-3, 0.1, 0.5, 1, 5, 10, 49.9, 50, 99, 101, 300, 1e3], np.float32)
    ref = scipy.stats.poisson.entropy(mu.astype(np.float64))
    np.testing.assert_allclose(poisson.entropy(mu), ref, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(pyree.jit(poisson.entropy)(mu, 2), ref, rtol=2e-6, atol=1e-7)
    # JAX 0.10.2's values where SciPy's sum loses accuracy, and for invalid mu.
    out = np.asarray(poisson.entropy(np.array([1e5, -1.0], np.float32)))
    np.testing.assert_allclose(out[0], 7.1754003, rtol=1e-6)
    assert np.isnan(out[1])
    assert poisson.entropy(np.ones((2, 1)), np.zeros(3)).shape == (2, 3)
