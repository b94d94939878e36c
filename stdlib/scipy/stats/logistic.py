"""The logistic distribution with location ``loc`` and scale ``scale`` (SciPy's
``stats.logistic``, JAX's ``jax.scipy.stats.logistic``).

    from pyree.scipy.stats import logistic
    logistic.cdf(jnp.array([0.0]))       # [0.5]
"""
from __future__ import annotations

from typing import Any

from pyree import nn
from pyree import numpy as jnp
from pyree.scipy import special
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log density ``-|z| - 2 log1p(exp(-|z|)) - log(scale)``, ``z = (x - loc) / scale``
    (the symmetric form, which neither overflows nor cancels).

    Example::

        logistic.logpdf(jnp.array([0.0, 1.0]))     # [-1.3862944, -1.6265235]
    """
    x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
    a = jnp.abs((x - loc) / scale)
    return -a - 2.0 * jnp.log1p(jnp.exp(-a)) - jnp.log(scale)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        logistic.pdf(jnp.array([0.0]))         # [0.25]
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The distribution function ``expit((x - loc) / scale)``.

    Example::

        logistic.cdf(jnp.array([0.0, 2.0]))    # [0.5, 0.880797]
    """
    x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
    return special.expit((x - loc) / scale)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf) = -softplus(-z)``.

    Example::

        logistic.logcdf(jnp.array([-100.0]))   # [-100.]
    """
    x, loc, scale = promote_args_inexact("logistic.logcdf", x, loc, scale)
    return nn.log_sigmoid((x - loc) / scale)


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``expit(-(x - loc) / scale)``.

    Example::

        logistic.sf(jnp.array([2.0]))          # [0.11920292]
    """
    x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
    return special.expit((loc - x) / scale)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf) = -softplus(z)``.

    Example::

        logistic.logsf(jnp.array([100.0]))     # [-100.]
    """
    x, loc, scale = promote_args_inexact("logistic.logsf", x, loc, scale)
    return nn.log_sigmoid((loc - x) / scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function ``loc + scale logit(q)``.

    Example::

        logistic.ppf(jnp.array([0.5, 0.880797]))   # [0., 2.]
    """
    q, loc, scale = promote_args_inexact("logistic.ppf", q, loc, scale)
    return loc + scale * special.logit(q)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of ``sf``: ``loc - scale logit(q)``.

    Example::

        logistic.isf(jnp.array([0.11920292]))  # [2.]
    """
    q, loc, scale = promote_args_inexact("logistic.isf", q, loc, scale)
    return loc - scale * special.logit(q)
