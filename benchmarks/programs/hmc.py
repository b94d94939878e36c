"""Hamiltonian Monte Carlo on a correlated Gaussian: leapfrog in fori_loop, accept with cond,
the chain in scan (the style of public HMC samplers)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import jit, grad, random, lax

precision = jnp.linalg.inv(jnp.array([[1.0, 0.8], [0.8, 1.0]]))


def log_prob(q):
    return -0.5 * q @ precision @ q


def leapfrog(q, p, step_size, n_steps):
    def body(i, state):
        q, p = state
        p = p + 0.5 * step_size * grad(log_prob)(q)
        q = q + step_size * p
        p = p + 0.5 * step_size * grad(log_prob)(q)
        return q, p
    return lax.fori_loop(0, n_steps, body, (q, p))


def hmc_step(q, key):
    k1, k2 = random.split(key)
    p0 = random.normal(k1, q.shape)
    q1, p1 = leapfrog(q, p0, 0.2, 10)
    log_accept = log_prob(q1) - 0.5 * p1 @ p1 - log_prob(q) + 0.5 * p0 @ p0
    accept = jnp.log(random.uniform(k2)) < log_accept
    q = lax.cond(accept, lambda: q1, lambda: q)
    return q, q


@jit
def sample(key, q0):
    return lax.scan(hmc_step, q0, random.split(key, 500))[1]


samples = sample(random.PRNGKey(0), jnp.zeros(2))
print("mean", np.asarray(samples.mean(0)), "cov", np.asarray(jnp.cov(samples.T)).ravel())
