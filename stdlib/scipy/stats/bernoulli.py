"""The Bernoulli distribution: 1 with probability ``p``, 0 otherwise, shifted by ``loc``
(SciPy's ``stats.bernoulli``, JAX's ``jax.scipy.stats.bernoulli``).

    from pyree.scipy.stats import bernoulli
    bernoulli.pmf(jnp.array([0, 1]), 0.3)      # [0.7, 0.3]
"""
from __future__ import annotations

from typing import Any

from pyree import numpy as jnp
from pyree.scipy import special
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logpmf", "pmf", "ppf", "sf"]


def logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """``log(p)`` at ``k - loc = 1``, ``log1p(-p)`` at 0, -inf elsewhere.

    Example::

        bernoulli.logpmf(jnp.array([0.0, 1.0, 2.0]), 0.25)   # [-0.2876821, -1.3862944, -inf]
    """
    k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
    n = k - loc
    valid = (n == 0) | (n == 1)
    ns = jnp.where(valid, n, 0.0)
    out = special.xlogy(ns, p) + special.xlog1py(1.0 - ns, -p)
    return jnp.where(valid, out, -jnp.inf)


def pmf(k: Any, p: Any, loc: Any = 0) -> Any:
    """The probability mass, ``exp(logpmf)``.

    Example::

        bernoulli.pmf(jnp.array([1.0]), 0.25)  # [0.25]
    """
    return jnp.exp(logpmf(k, p, loc))


def cdf(k: Any, p: Any, loc: Any = 0) -> Any:
    """``P(K <= k)``: 0 below 0, ``1 - p`` on [0, 1), 1 from 1 on.

    Example::

        bernoulli.cdf(jnp.array([-1.0, 0.5, 1.0]), 0.25)     # [0., 0.75, 1.]
    """
    k, p, loc = promote_args_inexact("bernoulli.cdf", k, p, loc)
    n = k - loc
    return jnp.where(n < 0, 0.0, jnp.where(n < 1, 1.0 - p, 1.0))


def sf(k: Any, p: Any, loc: Any = 0) -> Any:
    """``P(K > k)``: 1 below 0, ``p`` on [0, 1), 0 from 1 on.

    Example::

        bernoulli.sf(jnp.array([-1.0, 0.5, 1.0]), 0.25)      # [1., 0.25, 0.]
    """
    k, p, loc = promote_args_inexact("bernoulli.sf", k, p, loc)
    n = k - loc
    return jnp.where(n < 0, 1.0, jnp.where(n < 1, p, 0.0))


def ppf(q: Any, p: Any, loc: Any = 0) -> Any:
    """The smallest ``k`` with ``cdf(k) >= q``: 0 for ``0 < q <= 1 - p``, 1 above, and -1
    at ``q = 0`` (as SciPy); NaN outside [0, 1].

    Example::

        bernoulli.ppf(jnp.array([0.3, 0.9]), 0.25)           # [0., 1.]
    """
    q, p, loc = promote_args_inexact("bernoulli.ppf", q, p, loc)
    out = jnp.where(q == 0, -1.0, jnp.where(q <= 1.0 - p, 0.0, 1.0))
    bad = (q < 0) | (q > 1) | (p < 0) | (p > 1) | jnp.isnan(q) | jnp.isnan(p)
    return jnp.where(bad, jnp.nan, out + loc)
