"""The binomial distribution: successes in ``n`` trials of probability ``p``, shifted by
``loc`` (SciPy's ``stats.binom``, JAX's ``jax.scipy.stats.binom``).

    from pyree.scipy.stats import binom
    binom.pmf(jnp.array([0, 1, 2]), 2, 0.5)    # [0.25, 0.5, 0.25]
"""
from __future__ import annotations

from typing import Any

from pyree import numpy as jnp
from pyree.scipy import special
from pyree.scipy.stats._util import is_integer, promote_args_inexact

__all__ = ["cdf", "logcdf", "logpmf", "logsf", "pmf", "sf"]


def logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """``log C(n, k) + k log p + (n - k) log1p(-p)`` with ``log C(n, k) = -log(n + 1) -
    betaln(n - k + 1, k + 1)`` (accurate for large ``n``); -inf unless ``k - loc`` is a whole
    number in [0, n].

    Example::

        binom.logpmf(jnp.array([1.0]), 2.0, 0.5)   # [-0.6931472]
    """
    k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
    x = k - loc
    valid = (x >= 0) & (x <= n) & is_integer(x)
    xs = jnp.where(valid, x, 0.0)
    log_choose = -jnp.log1p(n) - special.betaln(n - xs + 1.0, xs + 1.0)
    out = log_choose + special.xlogy(xs, p) + special.xlog1py(n - xs, -p)
    return jnp.where(valid, out, -jnp.inf)


def pmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """The probability mass, ``exp(logpmf)``.

    Example::

        binom.pmf(jnp.array([0.0, 1.0]), 2.0, 0.5)     # [0.25, 0.5]
    """
    return jnp.exp(logpmf(k, n, p, loc))


def _parts(name: str, k: Any, n: Any, p: Any, loc: Any) -> tuple:
    k, n, p, loc = promote_args_inexact(name, k, n, p, loc)
    x = jnp.floor(k - loc)
    shape = jnp.broadcast_shapes(x.shape, n.shape, p.shape)
    x, n, p = (jnp.broadcast_to(v, shape) for v in (x, n, p))
    # Inside [0, n): the incomplete beta function's arguments; outside, placeholders.
    inside = (x >= 0) & (x < n)
    xs = jnp.where(inside, x, 0.0)
    ns = jnp.where(inside, n, 1.0)
    return x, n, inside, xs, ns, p


def cdf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """``P(K <= k) = I_{1-p}(n - k, k + 1)`` for ``0 <= k < n`` (0 below, 1 from ``n`` on).

    Example::

        binom.cdf(jnp.array([0.0, 1.0]), 2.0, 0.5)     # [0.25, 0.75]
    """
    x, n, inside, xs, ns, p = _parts("binom.cdf", k, n, p, loc)
    out = special.betainc(ns - xs, xs + 1.0, 1.0 - p)
    return jnp.where(inside, out, jnp.where(x < 0, 0.0, 1.0))


def sf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """``P(K > k) = I_p(k + 1, n - k)`` for ``0 <= k < n`` (1 below, 0 from ``n`` on),
    accurate in the right tail.

    Example::

        binom.sf(jnp.array([1.0]), 2.0, 0.5)   # [0.25]
    """
    x, n, inside, xs, ns, p = _parts("binom.sf", k, n, p, loc)
    out = special.betainc(xs + 1.0, ns - xs, p)
    return jnp.where(inside, out, jnp.where(x < 0, 1.0, 0.0))


def _log_of(small: Any, other: Any) -> Any:
    """``log(small)``, or ``log1p(-other)`` where ``small`` is near 1 (``other = 1 - small``
    keeps the precision that ``small`` has lost there)."""
    return jnp.where(small < 0.5, jnp.log(small), jnp.log1p(-other))


def logcdf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """``log(cdf)``, from ``log1p(-sf)`` where the cdf is near 1.

    Example::

        binom.logcdf(jnp.array([0.0]), 2.0, 0.5)   # [-1.3862944]
    """
    return _log_of(cdf(k, n, p, loc), sf(k, n, p, loc))


def logsf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    """``log(sf)``, from ``log1p(-cdf)`` where the sf is near 1.

    Example::

        binom.logsf(jnp.array([1.0]), 2.0, 0.5)    # [-1.3862944]
    """
    return _log_of(sf(k, n, p, loc), cdf(k, n, p, loc))
