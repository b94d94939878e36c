"""Corpus: automatic differentiation variational inference, written as JAX's examples/advi.py
writes it: a mean-field Gaussian ``q`` sampled by reparameterisation, the ELBO
``log p(z) - log q(z)`` with densities from ``scipy.stats.norm.logpdf``, averaged over samples
by ``vmap`` over ``random.split`` keys, maximised with ``optimizers.adam`` in a jitted step.

The model is conjugate (Bayesian linear regression with two weights, a standard normal prior and
known noise), so the exact posterior is Gaussian and the optimal mean-field ``q`` is known in
closed form: its mean is the posterior mean, its variances the inverse diagonal of the
posterior precision.

Checked: ``vmap`` of ``random.normal`` over split keys equals the per-key draws; the ELBO
against NumPy/SciPy in float64 with the same draws; in float64 (x64) the ELBO gradient against
central differences; adam moves the variational mean onto the posterior mean and the log
standard deviations onto their mean-field optimum."""
from functools import partial

import numpy as np
import scipy.stats

import pyree as jax
import pyree.numpy as jnp
from pyree import random, vmap
from pyree.example_libraries import optimizers
from pyree.scipy.stats import norm

NOISE = 0.5
NUM_SAMPLES = 16


def make_data():
    rs = np.random.RandomState(0)
    X = rs.randn(20, 2).astype(np.float32)
    y = (X @ np.array([1.5, -0.7]) + NOISE * rs.randn(20)).astype(np.float32)
    return X, y


def exact_posterior(X, y):
    X, y = X.astype(np.float64), y.astype(np.float64)
    precision = np.eye(2) + X.T @ X / NOISE ** 2
    mean = np.linalg.solve(precision, X.T @ y / NOISE ** 2)
    return mean, precision


def make_logprob(X, y):
    def logprob(w):
        prior = jnp.sum(norm.logpdf(w, 0.0, 1.0))
        likelihood = jnp.sum(norm.logpdf(y, jnp.dot(X, w), NOISE))
        return prior + likelihood
    return logprob


def diag_gaussian_sample(rng, mean, log_std):
    return mean + jnp.exp(log_std) * random.normal(rng, mean.shape)


def diag_gaussian_logpdf(x, mean, log_std):
    return jnp.sum(vmap(norm.logpdf)(x, mean, jnp.exp(log_std)))


def elbo(logprob, rng, mean, log_std):
    sample = diag_gaussian_sample(rng, mean, log_std)
    return logprob(sample) - diag_gaussian_logpdf(sample, mean, log_std)


def batch_elbo(logprob, rng, params, num_samples):
    rngs = random.split(rng, num_samples)
    vectorized_elbo = vmap(partial(elbo, logprob), in_axes=(0, None, None))
    return jnp.mean(vectorized_elbo(rngs, *params))


# ---- NumPy / SciPy reference -------------------------------------------------------------------

def np_batch_elbo(X, y, mean, log_std, eps):
    X, y = X.astype(np.float64), y.astype(np.float64)
    values = []
    for e in eps:
        w = mean + np.exp(log_std) * e
        logp = (scipy.stats.norm.logpdf(w, 0.0, 1.0).sum()
                + scipy.stats.norm.logpdf(y, X @ w, NOISE).sum())
        logq = scipy.stats.norm.logpdf(w, mean, np.exp(log_std)).sum()
        values.append(logp - logq)
    return np.mean(values)


def draws(rng, num_samples):
    """The noise batch_elbo uses, drawn key by key outside vmap."""
    return np.stack([np.asarray(random.normal(k, (2,)), np.float64)
                     for k in random.split(rng, num_samples)])


def test_advi_elbo_against_scipy():
    X, y = make_data()
    logprob = make_logprob(X, y)
    rng = random.PRNGKey(3)
    params = (jnp.array([0.3, -0.2]), jnp.array([-0.5, -1.0]))
    eps = draws(rng, NUM_SAMPLES)
    # vmap of random.normal over split keys draws what each key draws alone
    batched = vmap(lambda k: random.normal(k, (2,)))(random.split(rng, NUM_SAMPLES))
    np.testing.assert_array_equal(np.asarray(batched, np.float64), eps)
    want = np_batch_elbo(X, y, np.asarray(params[0], np.float64),
                         np.asarray(params[1], np.float64), eps)
    got_jit = jax.jit(batch_elbo, static_argnums=(0, 3))(logprob, rng, params, NUM_SAMPLES)
    got_eager = batch_elbo(logprob, rng, params, NUM_SAMPLES)
    np.testing.assert_allclose(float(got_jit), want, rtol=1e-5)
    np.testing.assert_allclose(float(got_eager), want, rtol=1e-5)


def test_advi_gradient_float64(x64):
    X, y = make_data()
    X, y = X.astype(np.float64), y.astype(np.float64)
    logprob = make_logprob(X, y)
    rng = random.PRNGKey(4)
    mean = np.array([0.3, -0.2])
    log_std = np.array([-0.5, -1.0])
    eps = draws(rng, NUM_SAMPLES)
    assert eps.dtype == np.float64

    objective = jax.jit(jax.value_and_grad(
        lambda params: -batch_elbo(logprob, rng, params, NUM_SAMPLES)))
    value, (g_mean, g_log_std) = objective((jnp.asarray(mean), jnp.asarray(log_std)))
    assert g_mean.dtype == jnp.float64
    np.testing.assert_allclose(float(value), -np_batch_elbo(X, y, mean, log_std, eps),
                               rtol=1e-12)
    h = 1e-6
    for which, g in ((0, g_mean), (1, g_log_std)):
        for i in range(2):
            e = np.zeros(2)
            e[i] = h
            shifted = [mean, log_std]
            plus = [p + e if k == which else p for k, p in enumerate(shifted)]
            minus = [p - e if k == which else p for k, p in enumerate(shifted)]
            fd = -(np_batch_elbo(X, y, *plus, eps) - np_batch_elbo(X, y, *minus, eps)) / (2 * h)
            np.testing.assert_allclose(float(g[i]), fd, rtol=1e-6, atol=1e-8)


def test_advi_finds_posterior_mean():
    X, y = make_data()
    logprob = make_logprob(X, y)
    post_mean, post_precision = exact_posterior(X, y)
    mf_log_std = -0.5 * np.log(np.diag(post_precision))   # KL(q||p)'s mean-field optimum

    def objective(params, t):
        rng = random.PRNGKey(t)
        return -batch_elbo(logprob, rng, params, NUM_SAMPLES)

    opt_init, opt_update, get_params = optimizers.adam(step_size=0.05)

    @jax.jit
    def update(i, opt_state):
        params = get_params(opt_state)
        gradient = jax.grad(objective)(params, i)
        return opt_update(i, gradient, opt_state)

    init_mean = jnp.array([-2.0, 2.0])
    opt_state = opt_init((init_mean, jnp.zeros(2)))
    start = np.linalg.norm(np.asarray(init_mean) - post_mean)
    for t in range(600):
        opt_state = update(t, opt_state)
    mean, log_std = (np.asarray(p, np.float64) for p in get_params(opt_state))
    assert np.linalg.norm(mean - post_mean) < 0.02 * start, (mean, post_mean)
    np.testing.assert_allclose(mean, post_mean, atol=0.05)
    np.testing.assert_allclose(log_std, mf_log_std, atol=0.15)
