"""Corpus: Gaussian process regression, in the manner of JAX's
examples/gaussian_process_regression.py: a squared-exponential kernel built by ``vmap`` of
``vmap`` over pairs of points, the log marginal likelihood from
``pyree.scipy.linalg.cho_factor``/``cho_solve`` and the Cholesky factor's diagonal, the
predictive mean and variance by ``solve_triangular``, and hyperparameters (log amplitude, log
lengthscale, log noise) fitted by ``jit(grad(...))`` with adam.

Checked: the marginal likelihood (float32 and, with x64, float64) and the predictive mean and
variance against NumPy/SciPy in float64; the float64 gradient against central differences of
the SciPy marginal likelihood; jitted against eager; fitting raises the marginal likelihood
and brings the predictive mean closer to the noiseless function."""
import numpy as np
import scipy.linalg

import pyree as jax
import pyree.numpy as jnp
from pyree import vmap
from pyree.example_libraries import optimizers
from pyree.scipy import linalg

N_TRAIN, N_TEST = 32, 8


def true_function(x):
    return np.sin(2.0 * x[:, 0]) + 0.5 * np.cos(3.0 * x[:, 1])


def make_data(dtype=np.float32):
    rs = np.random.RandomState(0)
    x = rs.uniform(-1.5, 1.5, (N_TRAIN, 2))
    y = true_function(x) + 0.1 * rs.randn(N_TRAIN)
    xtest = rs.uniform(-1.0, 1.0, (N_TEST, 2))
    return x.astype(dtype), y.astype(dtype), xtest.astype(dtype)


def cov_map(cov_func, xs, xs2=None):
    """The matrix of ``cov_func`` over all pairs of rows of ``xs`` (and ``xs2``)."""
    if xs2 is None:
        xs2 = xs
    return vmap(lambda x: vmap(lambda y: cov_func(x, y))(xs2))(xs)


def exp_quadratic(x1, x2):
    return jnp.exp(-0.5 * jnp.sum((x1 - x2) ** 2))


def train_cov(params, x):
    log_amp, log_ls, log_noise = params
    k = jnp.exp(log_amp) * cov_map(exp_quadratic, x / jnp.exp(log_ls))
    return k + (jnp.exp(log_noise) + 1e-6) * jnp.eye(x.shape[0])


def log_marginal_likelihood(params, x, y):
    cov = train_cov(params, x)
    c, lower = linalg.cho_factor(cov, lower=True)
    alpha = linalg.cho_solve((c, lower), y)
    return (-0.5 * jnp.dot(y, alpha) - jnp.sum(jnp.log(jnp.diag(c)))
            - 0.5 * x.shape[0] * jnp.log(2.0 * jnp.pi))


def predict(params, x, y, xtest):
    log_amp, log_ls, _ = params
    chol = linalg.cholesky(train_cov(params, x), lower=True)
    kinvy = linalg.solve_triangular(chol.T, linalg.solve_triangular(chol, y, lower=True))
    cross = jnp.exp(log_amp) * cov_map(exp_quadratic, xtest / jnp.exp(log_ls),
                                       x / jnp.exp(log_ls))
    mean = jnp.dot(cross, kinvy)
    v = linalg.solve_triangular(chol, cross.T, lower=True)
    var = jnp.exp(log_amp) - jnp.sum(v * v, axis=0)
    return mean, var


# ---- NumPy / SciPy reference (float64) -----------------------------------------------------

def np_kernel(params, a, b):
    log_amp, log_ls, _ = np.asarray(params, np.float64)
    d2 = ((a[:, None, :] - b[None, :, :]) / np.exp(log_ls)) ** 2
    return np.exp(log_amp) * np.exp(-0.5 * d2.sum(-1))


def np_log_marginal_likelihood(params, x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    noise = np.exp(np.float64(params[2]))
    k = np_kernel(params, x, x) + (noise + 1e-6) * np.eye(len(x))
    c = scipy.linalg.cho_factor(k, lower=True)
    alpha = scipy.linalg.cho_solve(c, y)
    return (-0.5 * y @ alpha - np.log(np.diag(c[0])).sum() - 0.5 * len(x) * np.log(2 * np.pi))


def np_predict(params, x, y, xtest):
    x, y, xtest = (np.asarray(a, np.float64) for a in (x, y, xtest))
    k = np_kernel(params, x, x) + (np.exp(np.float64(params[2])) + 1e-6) * np.eye(len(x))
    ks = np_kernel(params, xtest, x)
    mean = ks @ np.linalg.solve(k, y)
    var = np.exp(np.float64(params[0])) - np.einsum("ij,ji->i", ks, np.linalg.solve(k, ks.T))
    return mean, var


PARAMS = (0.2, -0.3, np.log(0.05))


def test_gp_marginal_likelihood_and_prediction_float32():
    x, y, xtest = make_data()
    params = tuple(jnp.float32(p) for p in PARAMS)
    want = np_log_marginal_likelihood(PARAMS, x, y)
    np.testing.assert_allclose(float(jax.jit(log_marginal_likelihood)(params, x, y)), want,
                               rtol=1e-4)
    np.testing.assert_allclose(float(log_marginal_likelihood(params, x, y)), want, rtol=1e-4)
    mean, var = jax.jit(predict)(params, x, y, xtest)
    want_mean, want_var = np_predict(PARAMS, x, y, xtest)
    np.testing.assert_allclose(np.asarray(mean), want_mean, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.asarray(var), want_var, rtol=1e-2, atol=1e-3)


def test_gp_gradient_float64(x64):
    x, y, xtest = make_data(np.float64)
    params = tuple(jnp.float64(p) for p in PARAMS)
    value, grads = jax.jit(jax.value_and_grad(log_marginal_likelihood))(params, x, y)
    np.testing.assert_allclose(float(value), np_log_marginal_likelihood(PARAMS, x, y),
                               rtol=1e-10)
    eager = jax.grad(log_marginal_likelihood)(params, x, y)
    h = 1e-6
    for i in range(3):
        plus = list(PARAMS)
        minus = list(PARAMS)
        plus[i] += h
        minus[i] -= h
        fd = (np_log_marginal_likelihood(plus, x, y)
              - np_log_marginal_likelihood(minus, x, y)) / (2 * h)
        np.testing.assert_allclose(float(grads[i]), fd, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(float(eager[i]), float(grads[i]), rtol=1e-10)
    mean, var = predict(params, x, y, xtest)
    want_mean, want_var = np_predict(PARAMS, x, y, xtest)
    np.testing.assert_allclose(np.asarray(mean), want_mean, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.asarray(var), want_var, rtol=1e-8, atol=1e-10)


def test_gp_fit_hyperparameters():
    x, y, xtest = make_data()
    objective = lambda params: -log_marginal_likelihood(params, x, y)
    grad_fun = jax.jit(jax.grad(objective))
    opt_init, opt_update, get_params = optimizers.adam(0.05)

    @jax.jit
    def update(i, opt_state):
        return opt_update(i, grad_fun(get_params(opt_state)), opt_state)

    init = (jnp.float32(0.0), jnp.float32(0.0), jnp.float32(0.0))
    opt_state = opt_init(init)
    for i in range(150):
        opt_state = update(i, opt_state)
    fitted = tuple(float(p) for p in get_params(opt_state))
    before = np_log_marginal_likelihood((0.0, 0.0, 0.0), x, y)
    after = np_log_marginal_likelihood(fitted, x, y)
    assert after > before + 5.0, (before, after, fitted)
    # near a stationary point: every partial derivative shrank
    assert np.all(np.abs(np.asarray(grad_fun(get_params(opt_state)))) < 0.5 * np.abs(
        np.asarray(grad_fun(init)))), fitted
    mean, _ = jax.jit(predict)(get_params(opt_state), x, y, xtest)
    np.testing.assert_allclose(np.asarray(mean), np_predict(fitted, x, y, xtest)[0],
                               rtol=1e-3, atol=1e-3)
    truth = true_function(xtest.astype(np.float64))
    rms = lambda p: np.sqrt(np.mean((np_predict(p, x, y, xtest)[0] - truth) ** 2))
    assert rms(fitted) < 0.2 and rms(fitted) < 0.5 * rms((0.0, 0.0, 0.0)), (
        rms(fitted), rms((0.0, 0.0, 0.0)))
