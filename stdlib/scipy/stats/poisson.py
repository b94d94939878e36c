"""The Poisson distribution with mean ``mu``, shifted by ``loc`` (SciPy's ``stats.poisson``,
JAX's ``jax.scipy.stats.poisson``).

    from pyree.scipy.stats import poisson
    poisson.logpmf(jnp.array([0, 1, 2]), 1.5)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyree import numpy as jnp
from pyree.scipy import special
from pyree.scipy.stats._util import is_integer, promote_args_inexact

__all__ = ["cdf", "entropy", "logcdf", "logpmf", "logsf", "pmf", "sf"]


def logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """The log probability ``k log(mu) - mu - gammaln(k + 1)`` of ``k - loc`` events; -inf
    where ``k - loc`` is negative or not a whole number.

    Example::

        poisson.logpmf(jnp.array([0.0, 2.0]), 1.5)     # [-1.5, -1.3822172]
    """
    k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
    n = k - loc
    valid = (n >= 0) & is_integer(n)
    ns = jnp.where(valid, n, 0.0)
    out = special.xlogy(ns, mu) - mu - special.gammaln(ns + 1.0)
    return jnp.where(valid, out, -jnp.inf)


def pmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """The probability mass, ``exp(logpmf)``.

    Example::

        poisson.pmf(jnp.array([0.0]), 1.0)     # [0.36787945]
    """
    return jnp.exp(logpmf(k, mu, loc))


def _counts(name: str, k: Any, mu: Any, loc: Any) -> tuple:
    k, mu, loc = promote_args_inexact(name, k, mu, loc)
    n = jnp.floor(k - loc)
    return n, jnp.broadcast_to(mu, jnp.broadcast_shapes(n.shape, mu.shape))


def cdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """``P(K <= k) = Q(floor(k) + 1, mu)`` (the upper incomplete gamma); 0 for ``k < 0``.

    Example::

        poisson.cdf(jnp.array([0.0, 2.0]), 1.5)    # [0.22313016, 0.8088468]
    """
    n, mu = _counts("poisson.cdf", k, mu, loc)
    out = special.gammaincc(jnp.maximum(n, 0.0) + 1.0, mu)
    return jnp.where(n < 0, 0.0, out)


def _log_of(small: Any, other: Any) -> Any:
    """``log(small)``, or ``log1p(-other)`` where ``small`` is near 1 (``other = 1 - small``
    keeps the precision that ``small`` has lost there)."""
    return jnp.where(small < 0.5, jnp.log(small), jnp.log1p(-other))


def logcdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """``log(cdf)``, from ``log1p(-sf)`` where the cdf is near 1.

    Example::

        poisson.logcdf(jnp.array([0.0]), 1.5)  # [-1.5]
    """
    return _log_of(cdf(k, mu, loc), sf(k, mu, loc))


def sf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """``P(K > k) = P(floor(k) + 1, mu)`` (the lower incomplete gamma); 1 for ``k < 0``.

    Example::

        poisson.sf(jnp.array([2.0]), 1.5)      # [0.19115317]
    """
    n, mu = _counts("poisson.sf", k, mu, loc)
    out = special.gammainc(jnp.maximum(n, 0.0) + 1.0, mu)
    return jnp.where(n < 0, 1.0, out)


def logsf(k: Any, mu: Any, loc: Any = 0) -> Any:
    """``log(sf)``, from ``log1p(-cdf)`` where the sf is near 1.

    Example::

        poisson.logsf(jnp.array([2.0]), 1.5)   # [-1.6546]
    """
    return _log_of(sf(k, mu, loc), cdf(k, mu, loc))


# Below this mean the entropy is summed over k = 0.._ENTROPY_TERMS-1 (the mass beyond is
# under 1e-40 for mu < 50); above it, the asymptotic series in 1/mu is exact to float32.
_ENTROPY_SERIES_FROM = 50.0
_ENTROPY_TERMS = 200


def entropy(mu: Any, loc: Any = 0) -> Any:
    """The entropy ``-sum_k pmf(k) log pmf(k)`` of the distribution (independent of ``loc``,
    which only broadcasts); NaN for negative ``mu``, 0 for ``mu == 0``.

    Example::

        poisson.entropy(jnp.array([1.0, 10.0]))     # [1.3048419, 2.561407]
    """
    mu, loc = promote_args_inexact("poisson.entropy", mu, loc)
    mu = jnp.broadcast_to(mu, jnp.broadcast_shapes(mu.shape, loc.shape))
    small = jnp.where(mu < _ENTROPY_SERIES_FROM, mu, 1.0)[..., None]
    k = jnp.arange(_ENTROPY_TERMS, dtype=mu.dtype)
    # log k! from a float64 table: gammaln(1) in float32 is off by 5e-7, which for small mu
    # (k = 0 carries nearly all the mass) is the whole error.
    log_factorial = jnp.asarray(np.cumsum(np.log(np.maximum(np.arange(_ENTROPY_TERMS), 1.0)))
                                .astype(mu.dtype))
    log_p = special.xlogy(k, small) - small - log_factorial
    summed = -jnp.sum(jnp.where(log_p > -jnp.inf, jnp.exp(log_p) * log_p, 0.0), axis=-1)
    big = jnp.maximum(mu, _ENTROPY_SERIES_FROM)
    series = (0.5 * jnp.log(2.0 * jnp.pi * jnp.e * big) - 1.0 / (12.0 * big)
              - 1.0 / (24.0 * big ** 2) - 19.0 / (360.0 * big ** 3))
    out = jnp.where(mu < _ENTROPY_SERIES_FROM, summed, series)
    return jnp.where(mu < 0, jnp.nan, out + 0.0)   # (+ 0.0: mu = 0 gives 0, not -0)
