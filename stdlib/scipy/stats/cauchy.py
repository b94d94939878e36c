"""The Cauchy distribution with location ``loc`` and scale ``scale`` (SciPy's
``stats.cauchy``, JAX's ``jax.scipy.stats.cauchy``).

    from pyree.scipy.stats import cauchy
    cauchy.cdf(jnp.array([1.0]), loc=0.0, scale=1.0)     # [0.75]
"""
from __future__ import annotations

import math
from typing import Any

from pyree import numpy as jnp
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log density ``-log(pi scale) - log1p(z**2)``, ``z = (x - loc) / scale``.

    Example::

        cauchy.logpdf(jnp.array([0.0, 1.0]))   # [-1.1447299, -1.8378770]
    """
    x, loc, scale = promote_args_inexact("cauchy.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return -math.log(math.pi) - jnp.log(scale) - jnp.log1p(z * z)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        cauchy.pdf(jnp.array([0.0]))           # [0.31830987]
    """
    return jnp.exp(logpdf(x, loc, scale))


def _tail(z: Any) -> Any:
    # P(Z <= z) = atan2(1, -z) / pi: no 1/2 + small cancellation in the left tail.
    return jnp.arctan2(jnp.ones_like(z), -z) / math.pi


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The distribution function ``1/2 + atan(z) / pi``, accurate in the left tail.

    Example::

        cauchy.cdf(jnp.array([1.0, -1e6]))     # [0.75, 3.1830988e-07]
    """
    x, loc, scale = promote_args_inexact("cauchy.cdf", x, loc, scale)
    return _tail((x - loc) / scale)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf)``.

    Example::

        cauchy.logcdf(jnp.array([1.0]))        # [-0.2876821]
    """
    return jnp.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``1 - cdf``, accurate in the right tail.

    Example::

        cauchy.sf(jnp.array([1.0]))            # [0.25]
    """
    x, loc, scale = promote_args_inexact("cauchy.sf", x, loc, scale)
    return _tail((loc - x) / scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf)``.

    Example::

        cauchy.logsf(jnp.array([1.0]))         # [-1.3862944]
    """
    return jnp.log(sf(x, loc, scale))


def _standard_quantile(q: Any) -> Any:
    # tan(pi (q - 1/2)) near the middle (q - 1/2 is exact there); in the tails -1/tan(pi q)
    # and 1/tan(pi (1 - q)), whose arguments keep tiny q's precision.
    middle = jnp.abs(q - 0.5) < 0.25
    qm = jnp.where(middle, q, 0.5)
    low = jnp.where(q < 0.5, jnp.where(middle, 0.25, q), 0.25)
    high = jnp.where(q >= 0.5, jnp.where(middle, 0.75, q), 0.75)
    tails = jnp.where(q < 0.5, -1.0 / jnp.tan(math.pi * low),
                      1.0 / jnp.tan(math.pi * (1.0 - high)))
    out = jnp.where(middle, jnp.tan(math.pi * (qm - 0.5)), tails)
    out = jnp.where(q == 0, -jnp.inf, jnp.where(q == 1, jnp.inf, out))
    return jnp.where((q < 0) | (q > 1), jnp.nan, out)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function ``loc + scale tan(pi (q - 1/2))``.

    Example::

        cauchy.ppf(jnp.array([0.75]))          # [1.]
    """
    q, loc, scale = promote_args_inexact("cauchy.ppf", q, loc, scale)
    return loc + scale * _standard_quantile(q)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of ``sf``: ``loc - scale tan(pi (q - 1/2))``.

    Example::

        cauchy.isf(jnp.array([0.25]))          # [1.]
    """
    q, loc, scale = promote_args_inexact("cauchy.isf", q, loc, scale)
    return loc - scale * _standard_quantile(q)
