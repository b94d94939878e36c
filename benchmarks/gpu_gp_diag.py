"""The Gaussian-process gradient in float64 (tests/corpus/test_corpus_gp.py), step by step on
the default device against NumPy: where a NaN or a wrong value first appears (issue 20)."""
import os
import sys

import numpy as np
import scipy.linalg

import pyree
pyree.config.update("enable_x64", True)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "corpus"))
import test_corpus_gp as gp   # noqa: E402
import pyree.numpy as jnp      # noqa: E402
from pyree.scipy import linalg  # noqa: E402

x, y, _ = gp.make_data(np.float64)
params = tuple(jnp.float64(p) for p in gp.PARAMS)


def report(name, got, want):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    err = np.nanmax(np.abs(got - want)) if got.shape == want.shape else "shape"
    print(f"{name:36s} nan={np.isnan(got).any()!s:5s} max|err|={err}", flush=True)


cov = np.asarray(gp.train_cov(gp.PARAMS, x))
want_c = scipy.linalg.cholesky(cov, lower=True)
for mode, wrap in (("eager", lambda f: f), ("jit", pyree.jit)):
    report(f"{mode} train_cov", wrap(gp.train_cov)(params, x), cov)
    report(f"{mode} cholesky", np.tril(np.asarray(
        wrap(lambda c: linalg.cho_factor(c, lower=True)[0])(cov))), want_c)
    report(f"{mode} cho_solve", wrap(lambda c, b: linalg.cho_solve((c, True), b))(want_c, y),
           scipy.linalg.cho_solve((want_c, True), y))
    report(f"{mode} value", wrap(gp.log_marginal_likelihood)(params, x, y),
           gp.np_log_marginal_likelihood(gp.PARAMS, x, y))
    grads = wrap(pyree.grad(gp.log_marginal_likelihood))(params, x, y)
    fd = []
    for i in range(3):
        plus, minus = list(gp.PARAMS), list(gp.PARAMS)
        plus[i] += 1e-6
        minus[i] -= 1e-6
        fd.append((gp.np_log_marginal_likelihood(plus, x, y)
                   - gp.np_log_marginal_likelihood(minus, x, y)) / 2e-6)
    report(f"{mode} grad", [float(g) for g in grads], fd)
    grad_cov = wrap(pyree.grad(lambda c: jnp.sum(jnp.log(jnp.diag(
        linalg.cho_factor(c, lower=True)[0])))))(cov)
    report(f"{mode} grad of log det / 2", np.tril(np.asarray(grad_cov)) + np.triu(
        np.asarray(grad_cov), 1).T, np.tril(0.5 * np.linalg.inv(cov) * (2 - np.eye(32))))
