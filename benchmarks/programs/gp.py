"""Gaussian process regression: marginal likelihood by Cholesky, hyperparameters by gradient
descent (the style of JAX's gaussian_process_regression)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import jit, grad
from jax.scipy import linalg


def cov(log_amp, log_len, x, y):
    d = (x[:, None, :] - y[None, :, :]) / jnp.exp(log_len)
    return jnp.exp(log_amp) * jnp.exp(-0.5 * jnp.sum(d ** 2, -1))


def marginal_likelihood(params, x, y):
    log_amp, log_len, log_noise = params
    k = cov(log_amp, log_len, x, x) + (jnp.exp(log_noise) + 1e-6) * jnp.eye(x.shape[0])
    chol = linalg.cholesky(k, lower=True)
    alpha = linalg.cho_solve((chol, True), y)
    return (0.5 * jnp.dot(y, alpha) + jnp.sum(jnp.log(jnp.diag(chol)))
            + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi))


def predict(params, x, y, xtest):
    log_amp, log_len, log_noise = params
    k = cov(log_amp, log_len, x, x) + (jnp.exp(log_noise) + 1e-6) * jnp.eye(x.shape[0])
    chol = linalg.cholesky(k, lower=True)
    return cov(log_amp, log_len, xtest, x) @ linalg.cho_solve((chol, True), y)


rng = np.random.default_rng(0)
x = rng.uniform(-3, 3, size=(40, 1)).astype(np.float32)
y = (np.sin(x[:, 0]) + 0.1 * rng.normal(size=40)).astype(np.float32)
params = jnp.zeros(3)
step = jit(lambda p: p - 0.01 * grad(marginal_likelihood)(p, x, y))
for i in range(50):
    params = step(params)
print("nll", float(marginal_likelihood(params, x, y)))
print("pred", np.asarray(predict(params, x, y, jnp.linspace(-3, 3, 5)[:, None])))
