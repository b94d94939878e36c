"""``pyree.scipy.optimize.minimize`` (BFGS) and its strong-Wolfe ``line_search``: known minima
(Rosenbrock in 2 and 5 dimensions, a quadratic with extra ``args``) and SciPy's minimum values
in float64; float32 eagerly, under ``jit`` (the objective traced with it) and ``vmap``; the
options (maxiter, gtol, norm, tol); errors.

Each new objective or shape is a new compiled program, so the checks are grouped.
"""
import numpy as np
import pytest
import scipy.optimize as so

import pyree
import pyree.numpy as jnp
from pyree.scipy.optimize import OptimizeResults, line_search, minimize


def rosen(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosen_np(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def quadratic(x, a, b):
    return 0.5 * x @ a @ x - b @ x


A = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
B = np.array([1.0, 2.0, 3.0])


def converged(res, x, fun=None, gtol=1e-5, atol=1e-6):
    assert isinstance(res, OptimizeResults)
    assert bool(res.success) and int(res.status) == 0, (res.success, res.status)
    np.testing.assert_allclose(np.asarray(res.x), x, atol=atol)
    if fun is not None:
        np.testing.assert_allclose(float(res.fun), fun, atol=atol)
    assert np.abs(np.asarray(res.jac)).max() < gtol
    assert int(res.nit) > 0 and int(res.nfev) == int(res.njev) >= int(res.nit)


def near(res, x, atol=1e-4):
    """float32: at the minimum, converged or stopped by the line search at float32's
    resolution (status 3, as JAX often does on Rosenbrock)."""
    assert int(res.status) in (0, 3), res.status
    assert bool(res.success) == (int(res.status) == 0)
    np.testing.assert_allclose(np.asarray(res.x), x, atol=atol)


def test_float64_against_known_minima(x64):
    for x0 in (np.array([-1.2, 1.0]), np.zeros(5), np.array([1.3, 0.7, 0.8, 1.9, 1.2])):
        res = minimize(rosen, x0, method="BFGS")
        assert res.x.dtype == np.float64 and res.hess_inv.shape == (x0.size, x0.size)
        want = so.minimize(rosen_np, x0, method="BFGS")
        converged(res, np.ones(x0.size), fun=want.fun)
    # A quadratic with args: the solution of A x = b, and hess_inv ~ inv(A) (BFGS recovers
    # the inverse Hessian of a quadratic along the directions it searched: all of them here).
    res = minimize(quadratic, np.zeros(3), args=(A, B), method="bfgs")
    converged(res, np.linalg.solve(A, B), fun=-0.5 * B @ np.linalg.solve(A, B))
    np.testing.assert_allclose(np.asarray(res.hess_inv), np.linalg.inv(A), atol=1e-3)
    # tol sets gtol, as in SciPy; norm=2 measures the gradient's 2-norm.
    loose = minimize(rosen, np.array([-1.2, 1.0]), method="BFGS", tol=1e-2,
                     options=dict(norm=2))
    assert bool(loose.success) and np.linalg.norm(np.asarray(loose.jac)) < 1e-2
    assert int(loose.nit) < 34


def test_float32_jit_and_vmap():
    x0 = np.array([-1.2, 1.0], np.float32)

    def solve(x0, a, b):
        return (minimize(rosen, x0, method="BFGS"),
                minimize(quadratic, jnp.zeros(3), (a, b), method="BFGS"),
                minimize(rosen, x0, method="BFGS", options=dict(maxiter=3)),
                minimize(rosen, x0, method="BFGS", options=dict(gtol=1e3)))

    full, quad, capped, loose = pyree.jit(solve)(x0, A.astype(np.float32), B.astype(np.float32))
    near(full, np.ones(2))
    assert full.x.dtype == full.hess_inv.dtype == np.float32 and full.nit.dtype == np.int32
    converged(quad, np.linalg.solve(A, B), gtol=1e-4, atol=1e-5)
    # maxiter reached: status 1, not a success; x is the third iterate's.
    assert int(capped.status) == 1 and not bool(capped.success) and int(capped.nit) == 3
    assert float(capped.fun) < rosen_np(x0.astype(np.float64))
    # Converged at x0 already: no iteration.
    assert bool(loose.success) and int(loose.nit) == 0 and int(loose.nfev) == 1
    np.testing.assert_array_equal(np.asarray(loose.x), x0)
    # Eagerly (one compiled program), and batched over starting points and args.
    near(minimize(rosen, np.zeros(5, np.float32), method="BFGS"), np.ones(5))
    starts = np.array([[0.0, 0.0], [-1.2, 1.0], [2.0, 2.0]], np.float32)
    batch = pyree.vmap(lambda x: minimize(rosen, x, method="BFGS"))(starts)
    assert batch.x.shape == (3, 2) and batch.nit.shape == (3,)
    for i in range(3):
        near(OptimizeResults(*[leaf[i] for leaf in batch]), np.ones(2))
    centres = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    got = pyree.vmap(lambda c: minimize(lambda x, c: jnp.sum((x - c) ** 2 * jnp.arange(1.0, 4.0)),
                                        jnp.zeros(3), args=(c,), method="BFGS").x)(centres)
    np.testing.assert_allclose(np.asarray(got), centres, atol=1e-5)


def test_line_search(x64):
    """Strong Wolfe conditions at the step found, from a steep and a shallow start."""
    c1, c2 = 1e-4, 0.9
    for x, p in [(np.array([-1.2, 1.0]), np.array([1.0, 0.0])),
                 (np.zeros(3), np.array([2.0, 0.0, 0.0]))]:
        res = line_search(rosen, x, p, c1=c1, c2=c2)
        a = float(res.a_k)
        f0, g0 = rosen_np(x), np.asarray(pyree.grad(rosen)(x))
        assert not bool(res.failed) and int(res.status) == 0 and a > 0
        assert rosen_np(x + a * p) <= f0 + c1 * a * (g0 @ p)
        assert abs(np.asarray(res.g_k) @ p) <= c2 * abs(g0 @ p)
        np.testing.assert_allclose(float(res.f_k), rosen_np(x + a * p), rtol=1e-12)
        assert int(res.nfev) == int(res.nit) + 1      # f at x computed once
    # An ascent direction has no step with sufficient decrease: failed, step 0.
    res = line_search(rosen, np.zeros(2), np.array([-1.0, 0.0]))
    assert bool(res.failed) and float(res.a_k) == 0.0 and int(res.status) != 0


def test_errors():
    x0 = np.zeros(2, np.float32)
    with pytest.raises(ValueError, match=r"minimize: method 'Nelder-Mead' is not supported"):
        minimize(rosen, x0, method="Nelder-Mead")
    with pytest.raises(TypeError, match=r"minimize: args must be a tuple"):
        minimize(quadratic, x0, args=[A, B], method="BFGS")
    with pytest.raises(ValueError, match=r"minimize: x0 must be one-dimensional"):
        minimize(rosen, np.zeros((2, 2)), method="BFGS")
    with pytest.raises(ValueError, match=r"minimize: x0 must be real"):
        minimize(rosen, np.zeros(2, np.complex64), method="BFGS")
    with pytest.raises(TypeError, match=r"minimize: unknown options \['disp'\]"):
        minimize(rosen, x0, method="BFGS", options=dict(disp=True))
    with pytest.raises(TypeError, match=r"method"):
        minimize(rosen, x0)


def test_line_search_takes_a_first_step_the_objective_cannot_resolve():
    # f(0) = 1000 + 1e-6 and f(1) = 1000 are one float32 value: the sufficient-decrease test
    # alone decides the first trial step, as in SciPy's and JAX's searches, and the slope at
    # 1 is zero, so the step is taken at once (it used to be rejected as "no lower than
    # f(0)", and the search zoomed without end near float32 minima: BFGS status 3).
    def f(x):
        return jnp.sum(1000.0 + 1e-6 * (x - 1.0) ** 2)

    res = line_search(f, np.zeros(1, np.float32), np.ones(1, np.float32))
    assert not bool(res.failed) and float(res.a_k) == 1.0 and int(res.nit) == 1
    np.testing.assert_array_equal(np.asarray(res.g_k), [0.0])
