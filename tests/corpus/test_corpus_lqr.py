"""Corpus: finite-horizon discrete-time LQR and trajectory optimisation, in the manner of the
control examples JAX tests (examples/control.py and examples_test's LQR checks), written as a
JAX user would: the backward Riccati recursion as ``lax.scan(..., reverse=True)`` with
``jnp.linalg.solve``, closed-loop rollouts as a forward ``lax.scan``, and open-loop
trajectory optimisation by gradient descent on the controls inside ``lax.fori_loop``.

System: x[t+1] = A x[t] + B u[t], cost sum_t x'Qx + u'Ru over t < T plus x[T]' Qf x[T].

Checked: gains and cost-to-go matrices (float32, jitted and eager) against a float64 NumPy
recursion; the closed-loop rollout's cost equals x0' P0 x0; in float64 the gradient of the
open-loop cost with respect to the controls against central differences and a NumPy adjoint
(backward) pass, and it vanishes at the LQR controls; the gradient of the optimal cost with
respect to A (through the reverse scan and the linear solves) against central differences;
gradient descent on the controls reaches the LQR cost."""
import numpy as np
import pytest

import pyree as jax
import pyree.numpy as jnp
from pyree import lax

N, M, T = 3, 2, 10


def make_problem(dtype=np.float32):
    rs = np.random.RandomState(0)
    A = np.eye(N) + 0.2 * rs.randn(N, N)
    A *= 0.95 / np.abs(np.linalg.eigvals(A)).max()   # stable: gradient descent on U converges
    B = 0.5 * rs.randn(N, M)
    L = rs.randn(N, N)
    Q = 0.5 * L @ L.T + 0.1 * np.eye(N)
    R = np.diag([0.5, 1.5])
    Qf = 2.0 * np.eye(N)
    x0 = np.array([1.0, -0.5, 0.3])
    return tuple(a.astype(dtype) for a in (A, B, Q, R, Qf, x0))


def riccati(A, B, Q, R, Qf, horizon, symmetrize=True):
    """Feedback gains K[t] (u = -K[t] x) and cost-to-go matrices P[t] for t = 0..T-1."""
    def backward(P, _):
        BtP = B.T @ P
        K = jnp.linalg.solve(R + BtP @ B, BtP @ A)
        P_prev = Q + A.T @ P @ (A - B @ K)
        if symmetrize:   # keep P symmetric against rounding, as LQR codes usually do
            P_prev = 0.5 * (P_prev + P_prev.T)
        return P_prev, (K, P_prev)

    _, (Ks, Ps) = lax.scan(backward, Qf, None, length=horizon, reverse=True)
    return Ks, Ps


def optimal_cost(A, B, Q, R, Qf, x0, symmetrize=True):
    _, Ps = riccati(A, B, Q, R, Qf, T, symmetrize)
    return x0 @ Ps[0] @ x0


def closed_loop(A, B, Q, R, Qf, x0, Ks):
    def forward(x, K):
        u = -K @ x
        return A @ x + B @ u, (x @ Q @ x + u @ R @ u, u)

    xT, (costs, us) = lax.scan(forward, x0, Ks)
    return jnp.sum(costs) + xT @ Qf @ xT, us


def trajectory_cost(U, A, B, Q, R, Qf, x0):
    def forward(x, u):
        return A @ x + B @ u, x @ Q @ x + u @ R @ u

    xT, costs = lax.scan(forward, x0, U)
    return jnp.sum(costs) + xT @ Qf @ xT


def trajectory_optimization(U, A, B, Q, R, Qf, x0, step_size, iterations):
    grad_cost = jax.grad(trajectory_cost)

    def body(i, U):
        return U - step_size * grad_cost(U, A, B, Q, R, Qf, x0)

    return lax.fori_loop(0, iterations, body, U)


# ---- NumPy reference (float64) -----------------------------------------------------------------

def np_riccati(A, B, Q, R, Qf):
    A, B, Q, R, Qf = (np.asarray(a, np.float64) for a in (A, B, Q, R, Qf))
    P = Qf
    Ks, Ps = [None] * T, [None] * T
    for t in range(T - 1, -1, -1):
        K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        P = Q + A.T @ P @ A - A.T @ P @ B @ K
        P = 0.5 * (P + P.T)
        Ks[t], Ps[t] = K, P
    return np.array(Ks), np.array(Ps)


def np_trajectory_cost_and_grad(U, A, B, Q, R, Qf, x0):
    """The open-loop cost and its gradient by the adjoint (costate) recursion."""
    xs = [np.asarray(x0, np.float64)]
    for u in U:
        xs.append(A @ xs[-1] + B @ u)
    cost = sum(x @ Q @ x + u @ R @ u for x, u in zip(xs[:-1], U)) + xs[-1] @ Qf @ xs[-1]
    lam = 2 * Qf @ xs[-1]                       # d cost / d x[T]
    grad = np.zeros_like(U)
    for t in range(T - 1, -1, -1):
        grad[t] = 2 * R @ U[t] + B.T @ lam
        lam = 2 * Q @ xs[t] + A.T @ lam
    return cost, grad


def test_riccati_gains_against_numpy():
    A, B, Q, R, Qf, x0 = make_problem()
    want_K, want_P = np_riccati(A, B, Q, R, Qf)
    for run in (jax.jit(riccati, static_argnums=5), riccati):
        Ks, Ps = run(A, B, Q, R, Qf, T)
        assert Ks.shape == (T, M, N) and Ps.shape == (T, N, N)
        np.testing.assert_allclose(np.asarray(Ks), want_K, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.asarray(Ps), want_P, rtol=1e-4, atol=1e-5)
    want_cost = x0.astype(np.float64) @ want_P[0] @ x0.astype(np.float64)
    np.testing.assert_allclose(float(jax.jit(optimal_cost)(A, B, Q, R, Qf, x0)), want_cost,
                               rtol=1e-5)
    # the closed loop under the gains achieves the optimal cost
    cost, us = jax.jit(closed_loop)(A, B, Q, R, Qf, x0, Ks)
    np.testing.assert_allclose(float(cost), want_cost, rtol=1e-5)
    np_cost, _ = np_trajectory_cost_and_grad(np.asarray(us, np.float64), *(
        np.asarray(a, np.float64) for a in (A, B, Q, R, Qf, x0)))
    np.testing.assert_allclose(float(cost), np_cost, rtol=1e-5)


def test_trajectory_gradients_float64(x64):
    A, B, Q, R, Qf, x0 = make_problem(np.float64)
    U = np.random.RandomState(1).randn(T, M)
    value, g = jax.jit(jax.value_and_grad(trajectory_cost))(U, A, B, Q, R, Qf, x0)
    assert g.dtype == jnp.float64 and g.shape == (T, M)
    want_value, want_grad = np_trajectory_cost_and_grad(U, A, B, Q, R, Qf, x0)
    np.testing.assert_allclose(float(value), want_value, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g), want_grad, rtol=1e-10, atol=1e-10)
    h = 1e-6
    for t, j in [(0, 0), (4, 1), (T - 1, 0)]:
        E = np.zeros_like(U)
        E[t, j] = h
        fd = (np_trajectory_cost_and_grad(U + E, A, B, Q, R, Qf, x0)[0]
              - np_trajectory_cost_and_grad(U - E, A, B, Q, R, Qf, x0)[0]) / (2 * h)
        np.testing.assert_allclose(float(g[t, j]), fd, rtol=1e-6)

    # at the LQR controls the open-loop cost is stationary
    Ks, _ = riccati(A, B, Q, R, Qf, T)
    _, us = closed_loop(A, B, Q, R, Qf, x0, Ks)
    g_star = jax.jit(jax.grad(trajectory_cost))(us, A, B, Q, R, Qf, x0)
    assert np.abs(np.asarray(g_star)).max() < 1e-10 * max(1.0, np.abs(want_grad).max())


# The symmetrised recursion (0.5 * (P + P.T) after the solve) once failed at run time with IREE
# 3.13 ("indirect buffer reference slot 0 is out range"), worked around by lower.own_buffers.
@pytest.mark.parametrize("symmetrize", [True, False])
def test_optimal_cost_gradient_wrt_dynamics_float64(x64, symmetrize):
    A, B, Q, R, Qf, x0 = make_problem(np.float64)
    h = 1e-6
    # d J* / d A through the reverse scan and jnp.linalg.solve
    dA = jax.jit(jax.grad(optimal_cost), static_argnums=6)(A, B, Q, R, Qf, x0, symmetrize)
    np_opt = lambda A_: x0 @ np_riccati(A_, B, Q, R, Qf)[1][0] @ x0
    for i, j in [(0, 0), (1, 2), (2, 1)]:
        E = np.zeros_like(A)
        E[i, j] = h
        fd = (np_opt(A + E) - np_opt(A - E)) / (2 * h)
        np.testing.assert_allclose(float(dA[i, j]), fd, rtol=1e-6, atol=1e-9)


def test_trajectory_optimization_reaches_lqr_cost():
    A, B, Q, R, Qf, x0 = make_problem()
    want_cost = float(x0.astype(np.float64) @ np_riccati(A, B, Q, R, Qf)[1][0]
                      @ x0.astype(np.float64))
    U0 = jnp.zeros((T, M))
    start = float(jax.jit(trajectory_cost)(U0, A, B, Q, R, Qf, x0))
    U = jax.jit(trajectory_optimization, static_argnums=(8,))(U0, A, B, Q, R, Qf, x0,
                                                              0.008, 500)
    cost = float(jax.jit(trajectory_cost)(U, A, B, Q, R, Qf, x0))
    assert start > 1.5 * want_cost
    np.testing.assert_allclose(cost, want_cost, rtol=1e-3)
