"""The normal distribution with mean ``loc`` and standard deviation ``scale`` (SciPy's
``stats.norm``, JAX's ``jax.scipy.stats.norm``).

    from pyree.scipy.stats import norm
    norm.logpdf(jnp.array([0.0, 1.0]), loc=0.0, scale=2.0)
"""
from __future__ import annotations

import math
from typing import Any

from pyree import numpy as jnp
from pyree.scipy import special
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log density ``-((x - loc) / scale)**2 / 2 - log(scale) - log(sqrt(2 pi))``.

    Example::

        norm.logpdf(jnp.array([0.0, 1.0]))     # [-0.9189385, -1.4189385]
    """
    x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * z * z - jnp.log(scale) - _LOG_SQRT_2PI


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        norm.pdf(jnp.array([0.0]))             # [0.3989423]
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The distribution function ``ndtr((x - loc) / scale)``.

    Example::

        norm.cdf(jnp.array([0.0, 1.959964]))   # [0.5, 0.975]
    """
    x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
    return special.ndtr((x - loc) / scale)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf)``, accurate far in the left tail (``log_ndtr``).

    Example::

        norm.logcdf(jnp.array([-40.0]))        # [-804.6084]
    """
    x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
    return special.log_ndtr((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``1 - cdf``, accurate in the right tail.

    Example::

        norm.sf(jnp.array([10.0]))             # [7.619853e-24]
    """
    x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
    return special.ndtr((loc - x) / scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf)``, accurate far in the right tail.

    Example::

        norm.logsf(jnp.array([40.0]))          # [-804.6084]
    """
    x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
    return special.log_ndtr((loc - x) / scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function, the inverse of ``cdf``: ``loc + scale * ndtri(q)``.

    Example::

        norm.ppf(jnp.array([0.5, 0.975]))      # [0., 1.959964]
    """
    q, loc, scale = promote_args_inexact("norm.ppf", q, loc, scale)
    return loc + scale * special.ndtri(q)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of ``sf``: ``loc - scale * ndtri(q)``.

    Example::

        norm.isf(jnp.array([0.025]))           # [1.959964]
    """
    q, loc, scale = promote_args_inexact("norm.isf", q, loc, scale)
    return loc - scale * special.ndtri(q)
