"""Corpus: a Hamiltonian Monte Carlo sampler in plain pyree, the way JAX users write one: a
leapfrog integrator in ``lax.fori_loop``, a Metropolis correction with ``random.uniform`` and
``lax.cond`` (or ``jnp.where``: both are checked), the chain as ``lax.scan`` over
``random.split`` keys, on a correlated 2-d Gaussian target whose log density's gradient comes
from ``jax.grad``.

Checked: the leapfrog trajectory against a float64 NumPy integrator; energy is conserved to
1e-3 with a small step and the integrator is time-reversible; a short chain against a NumPy
chain fed the same momenta and uniforms (drawn with the same keys); with one key the jitted and
the eager chain give the same samples; in float64, ``jit(grad(...))`` of the final position
through scan + fori_loop + cond against central differences of the NumPy chain; a long chain's
mean and covariance approximate the target's (fixed seed, loose tolerance), with the accept step
written as ``lax.cond`` and as ``jnp.where``."""
import numpy as np
import pytest

import pyree as jax
import pyree.numpy as jnp
from pyree import lax, random

MU = np.array([1.0, -1.0])
COV = np.array([[1.0, 0.8], [0.8, 1.0]])
PRECISION = np.linalg.inv(COV)
STEP_SIZE = 0.2
NUM_LEAPFROG = 8


def log_prob(x):
    d = x - jnp.asarray(MU, x.dtype)
    return -0.5 * jnp.dot(d, jnp.dot(jnp.asarray(PRECISION, x.dtype), d))


def leapfrog(x, p, step_size, num_steps):
    grad_log_prob = jax.grad(log_prob)

    def body(i, state):
        x, p = state
        p = p + 0.5 * step_size * grad_log_prob(x)
        x = x + step_size * p
        p = p + 0.5 * step_size * grad_log_prob(x)
        return x, p

    return lax.fori_loop(0, num_steps, body, (x, p))


def hamiltonian(x, p):
    return -log_prob(x) + 0.5 * jnp.dot(p, p)


def make_hmc_step(select):
    """One HMC transition; the Metropolis choice by ``lax.cond`` or by ``jnp.where``."""
    def hmc_step(x, key):
        momentum_key, accept_key = random.split(key)
        p0 = random.normal(momentum_key, x.shape, x.dtype)
        x1, p1 = leapfrog(x, p0, STEP_SIZE, NUM_LEAPFROG)
        log_accept_ratio = hamiltonian(x, p0) - hamiltonian(x1, p1)
        accept = jnp.log(random.uniform(accept_key, (), x.dtype)) < log_accept_ratio
        if select == "cond":
            x_next = lax.cond(accept, lambda _: x1, lambda _: x, None)
        else:
            x_next = jnp.where(accept, x1, x)
        return x_next, (x_next, accept)
    return hmc_step


def sample_chain(key, x0, num_samples, select="cond"):
    keys = random.split(key, num_samples)
    _, (samples, accepted) = lax.scan(make_hmc_step(select), x0, keys)
    return samples, accepted


# Both selects run: the lax.cond chain once failed at run time with IREE 3.13 ("indirect buffer
# reference slot 0 is out range", the scan passing one buffer twice to its loop's next
# iteration), now worked around by lower.own_buffers.
SELECTS = ["cond", "where"]


# ---- NumPy reference (float64) -----------------------------------------------------------------

def np_leapfrog(x, p, step_size, num_steps):
    grad = lambda x: -PRECISION @ (x - MU)
    x, p = np.array(x, np.float64), np.array(p, np.float64)
    for _ in range(num_steps):
        p = p + 0.5 * step_size * grad(x)
        x = x + step_size * p
        p = p + 0.5 * step_size * grad(x)
    return x, p


def np_hamiltonian(x, p):
    d = x - MU
    return 0.5 * d @ PRECISION @ d + 0.5 * p @ p


def draws(key, num_samples, dtype):
    """The momenta and uniforms hmc_step draws, key by key."""
    momenta, uniforms = [], []
    for k in random.split(key, num_samples):
        momentum_key, accept_key = random.split(k)
        momenta.append(np.asarray(random.normal(momentum_key, (2,), dtype), np.float64))
        uniforms.append(float(random.uniform(accept_key, (), dtype)))
    return momenta, uniforms


def np_chain(x0, momenta, uniforms):
    x = np.array(x0, np.float64)
    samples, accepted = [], []
    for p0, u in zip(momenta, uniforms):
        x1, p1 = np_leapfrog(x, p0, STEP_SIZE, NUM_LEAPFROG)
        accept = np.log(u) < np_hamiltonian(x, p0) - np_hamiltonian(x1, p1)
        x = x1 if accept else x
        samples.append(x)
        accepted.append(accept)
    return np.array(samples), np.array(accepted)


def test_leapfrog_against_numpy_energy_and_reversibility():
    x0 = jnp.array([0.3, 0.7])
    p0 = jnp.array([-1.1, 0.4])
    run = jax.jit(leapfrog, static_argnums=3)
    x1, p1 = run(x0, p0, STEP_SIZE, NUM_LEAPFROG)
    want_x, want_p = np_leapfrog(x0, p0, STEP_SIZE, NUM_LEAPFROG)
    np.testing.assert_allclose(np.asarray(x1), want_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(p1), want_p, rtol=1e-5, atol=1e-6)
    eager_x, eager_p = leapfrog(x0, p0, STEP_SIZE, NUM_LEAPFROG)
    np.testing.assert_allclose(np.asarray(eager_x), want_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(eager_p), want_p, rtol=1e-5, atol=1e-6)

    # a small step conserves the energy over many steps (the error is O(step_size ** 2))
    xs, ps = run(x0, p0, 0.01, 200)
    h0 = np_hamiltonian(np.asarray(x0, np.float64), np.asarray(p0, np.float64))
    h1 = np_hamiltonian(np.asarray(xs, np.float64), np.asarray(ps, np.float64))
    assert abs(h1 - h0) < 1e-3, (h0, h1)
    np.testing.assert_allclose(float(hamiltonian(xs, ps)), h1, rtol=1e-5)
    # and it is reversible: flipping the momentum retraces the trajectory
    xb, pb = run(xs, -ps, 0.01, 200)
    np.testing.assert_allclose(np.asarray(xb), np.asarray(x0), atol=1e-4)
    np.testing.assert_allclose(-np.asarray(pb), np.asarray(p0), atol=1e-4)


@pytest.mark.parametrize("select", SELECTS)
def test_chain_against_numpy_and_jit_equals_eager(select):
    key = random.PRNGKey(7)
    x0 = jnp.array([3.0, 2.0])
    num = 12
    samples, accepted = jax.jit(sample_chain, static_argnums=(2, 3))(key, x0, num, select)
    eager_samples, eager_accepted = sample_chain(key, x0, num, select)
    np.testing.assert_array_equal(np.asarray(eager_accepted), np.asarray(accepted))
    np.testing.assert_array_equal(np.asarray(eager_samples), np.asarray(samples))

    momenta, uniforms = draws(key, num, jnp.float32)
    want, want_accepted = np_chain(x0, momenta, uniforms)
    np.testing.assert_array_equal(np.asarray(accepted), want_accepted)
    assert 0 < want_accepted.sum() < num   # both branches of the cond are taken
    np.testing.assert_allclose(np.asarray(samples), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("select", SELECTS)
def test_grad_through_chain_float64(x64, select):
    # Three steps, one rejected: short chains are unrolled, and under grad a longer one made a
    # module that took a minute to compile.
    key = random.PRNGKey(37)
    num = 3
    x0 = np.array([0.5, -0.2])

    def final_position_sum(x0):
        samples, _ = sample_chain(key, x0, num, select)
        return jnp.sum(samples[-1])

    momenta, uniforms = draws(key, num, jnp.float64)
    _, accepted = np_chain(x0, momenta, uniforms)
    assert 0 < accepted.sum() < num, accepted   # the gradient crosses rejected steps too

    g = jax.jit(jax.grad(final_position_sum))(jnp.asarray(x0))
    assert g.dtype == jnp.float64
    h = 1e-6
    fd = []
    for i in range(2):
        e = np.zeros(2)
        e[i] = h
        fd.append((np_chain(x0 + e, momenta, uniforms)[0][-1].sum()
                   - np_chain(x0 - e, momenta, uniforms)[0][-1].sum()) / (2 * h))
    np.testing.assert_allclose(np.asarray(g), fd, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(np.asarray(jax.grad(final_position_sum)(jnp.asarray(x0))),
                               np.asarray(g), rtol=1e-12)


def test_long_chain_moments():
    # jnp.where for the Metropolis choice: the lax.cond chain hits the IREE bug above
    samples, accepted = jax.jit(sample_chain, static_argnums=(2, 3))(
        random.PRNGKey(0), jnp.zeros(2), 3000, "where")
    samples = np.asarray(samples, np.float64)[300:]
    rate = float(np.mean(np.asarray(accepted)))
    assert 0.6 < rate <= 1.0, rate
    np.testing.assert_allclose(samples.mean(0), MU, atol=0.15)
    np.testing.assert_allclose(np.cov(samples.T), COV, atol=0.15)
