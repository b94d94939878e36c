"""The Laplace (double exponential) distribution with location ``loc`` and scale ``scale``
(SciPy's ``stats.laplace``, JAX's ``jax.scipy.stats.laplace``).

    from pyree.scipy.stats import laplace
    laplace.logpdf(jnp.array([1.0]), loc=0.0, scale=2.0)
"""
from __future__ import annotations

import math
from typing import Any

from pyree import numpy as jnp
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

_LOG2 = math.log(2.0)


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log density ``-|x - loc| / scale - log(2 scale)``.

    Example::

        laplace.logpdf(jnp.array([0.0, 1.0]))  # [-0.6931472, -1.6931472]
    """
    x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
    return -jnp.abs(x - loc) / scale - jnp.log(scale) - _LOG2


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        laplace.pdf(jnp.array([0.0]))          # [0.5]
    """
    return jnp.exp(logpdf(x, loc, scale))


def _lower(z: Any) -> Any:
    """P(Z <= z) for the standard Laplace distribution, exact in the left tail."""
    return jnp.where(z <= 0, 0.5 * jnp.exp(jnp.minimum(z, 0.0)),
                     1.0 - 0.5 * jnp.exp(-jnp.maximum(z, 0.0)))


def _log_lower(z: Any) -> Any:
    return jnp.where(z <= 0, jnp.minimum(z, 0.0) - _LOG2,
                     jnp.log1p(-0.5 * jnp.exp(-jnp.maximum(z, 0.0))))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The distribution function: ``exp(z) / 2`` left of ``loc``, ``1 - exp(-z) / 2`` right.

    Example::

        laplace.cdf(jnp.array([0.0, 1.0]))     # [0.5, 0.8160603]
    """
    x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
    return _lower((x - loc) / scale)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf)``, exact in the left tail.

    Example::

        laplace.logcdf(jnp.array([-100.0]))    # [-100.6931472]
    """
    x, loc, scale = promote_args_inexact("laplace.logcdf", x, loc, scale)
    return _log_lower((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``1 - cdf``, accurate in the right tail.

    Example::

        laplace.sf(jnp.array([1.0]))           # [0.18393973]
    """
    x, loc, scale = promote_args_inexact("laplace.sf", x, loc, scale)
    return _lower((loc - x) / scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf)``, exact in the right tail.

    Example::

        laplace.logsf(jnp.array([100.0]))      # [-100.6931472]
    """
    x, loc, scale = promote_args_inexact("laplace.logsf", x, loc, scale)
    return _log_lower((loc - x) / scale)


def _standard_quantile(q: Any) -> Any:
    # z = log(2q) below 1/2, -log(2 (1 - q)) above: 1 - q is exact there.
    lower = q <= 0.5
    out = jnp.where(lower, jnp.log(2.0 * jnp.where(lower, q, 0.5)),
                    -jnp.log(2.0 * (1.0 - jnp.where(lower, 0.5, q))))
    return jnp.where((q < 0) | (q > 1), jnp.nan, out)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function, the inverse of ``cdf``.

    Example::

        laplace.ppf(jnp.array([0.5, 0.8160603]))   # [0., 1.]
    """
    q, loc, scale = promote_args_inexact("laplace.ppf", q, loc, scale)
    return loc + scale * _standard_quantile(q)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of ``sf``.

    Example::

        laplace.isf(jnp.array([0.18393973]))   # [1.]
    """
    q, loc, scale = promote_args_inexact("laplace.isf", q, loc, scale)
    return loc - scale * _standard_quantile(q)
