"""The multivariate normal distribution with mean vector ``mean`` and covariance matrix
``cov`` (SciPy's ``stats.multivariate_normal``, JAX's ``jax.scipy.stats.multivariate_normal``).

    from pyree.scipy.stats import multivariate_normal
    multivariate_normal.logpdf(x, mean, cov)   # x: (..., n), mean: (..., n), cov: (..., n, n)

``cov`` may also be a scalar (isotropic) or, as in SciPy, a vector (the diagonal). The
density is computed from the Cholesky factor ``L`` of ``cov``: with ``y = L^-1 (x - mean)``
(forward substitution), ``logpdf = -|y|**2 / 2 - n/2 log(2 pi) - sum(log diag L)``.
Differentiable in ``x``, ``mean`` and ``cov``; batched over leading dimensions.
"""
from __future__ import annotations

import math
from typing import Any, Optional

from pyree import lax
from pyree import numpy as jnp
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]

_LOG_2PI = math.log(2 * math.pi)


def _solve_lower_triangular(low: Any, r: Any) -> Any:
    """``y`` with ``low @ y = r`` for lower-triangular ``low`` (..., n, n) and ``r`` (..., n),
    by forward substitution: step k fixes ``y[k] = (r[k] - low[k, :k] @ y[:k]) / low[k, k]``."""
    n = r.shape[-1]
    batch = jnp.broadcast_shapes(low.shape[:-2], r.shape[:-1])
    low = jnp.broadcast_to(low, batch + (n, n))
    r = jnp.broadcast_to(r, batch + (n,))
    lead = len(batch)
    index = jnp.arange(n)

    def step(k: Any, y: Any) -> Any:
        row = lax.dynamic_slice(low, (0,) * lead + (k, 0), batch + (1, n)).reshape(batch + (n,))
        done = jnp.sum(jnp.where(index < k, row * y, 0.0), axis=-1)
        pick = index == k
        diagonal = jnp.sum(jnp.where(pick, row, 0.0), axis=-1)
        rk = jnp.sum(jnp.where(pick, r, 0.0), axis=-1)
        return jnp.where(pick, ((rk - done) / diagonal)[..., None], y)

    return lax.fori_loop(0, n, step, jnp.zeros_like(r))


def logpdf(x: Any, mean: Any, cov: Any, allow_singular: Optional[bool] = None) -> Any:
    """The log density at ``x`` (..., n), batched over the leading dimensions of ``x``,
    ``mean`` and ``cov``. A scalar ``mean`` makes it the univariate normal with variance
    ``cov``.

    Example::

        multivariate_normal.logpdf(jnp.array([1.0, 0.0]), jnp.zeros(2), jnp.eye(2))
        # -2.3378770
    """
    if allow_singular:
        raise NotImplementedError("multivariate_normal.logpdf with allow_singular=True is "
                                  "not supported (as in JAX)")
    x, mean, cov = promote_args_inexact("multivariate_normal.logpdf", x, mean, cov)
    if mean.ndim == 0:
        d = x - mean
        return -0.5 * d * d / cov - 0.5 * (_LOG_2PI + jnp.log(cov))
    n = mean.shape[-1]
    if x.ndim == 0 or x.shape[-1] != n:
        raise ValueError(f"multivariate_normal.logpdf got incompatible shapes: x {x.shape}, "
                         f"mean {mean.shape}")
    d = x - mean
    if cov.ndim == 0:
        return -0.5 * jnp.sum(d * d, axis=-1) / cov - 0.5 * n * (_LOG_2PI + jnp.log(cov))
    if cov.ndim == 1:
        if cov.shape[0] != n:
            raise ValueError(f"multivariate_normal.logpdf got incompatible shapes: mean "
                             f"{mean.shape}, diagonal cov {cov.shape}")
        return (-0.5 * jnp.sum(d * d / cov, axis=-1) - 0.5 * n * _LOG_2PI
                - 0.5 * jnp.sum(jnp.log(cov), axis=-1))
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf got incompatible shapes: mean "
                         f"{mean.shape}, cov {cov.shape}")
    low = jnp.linalg.cholesky(cov)
    y = _solve_lower_triangular(low, d)
    log_diagonal = jnp.log(jnp.diagonal(low, axis1=-2, axis2=-1))
    return (-0.5 * jnp.sum(y * y, axis=-1) - 0.5 * n * _LOG_2PI
            - jnp.sum(log_diagonal, axis=-1))


def pdf(x: Any, mean: Any, cov: Any) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        multivariate_normal.pdf(jnp.zeros(2), jnp.zeros(2), jnp.eye(2))   # 0.15915494
    """
    return jnp.exp(logpdf(x, mean, cov))
