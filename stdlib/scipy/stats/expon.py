"""The exponential distribution starting at ``loc`` with scale ``scale`` (mean
``loc + scale``) (SciPy's ``stats.expon``, JAX's ``jax.scipy.stats.expon``).

    from pyree.scipy.stats import expon
    expon.logpdf(jnp.array([1.0]), scale=2.0)
"""
from __future__ import annotations

import math
from typing import Any

from pyree import numpy as jnp
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]

_LOG2 = math.log(2.0)


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log density ``-(x - loc) / scale - log(scale)`` for ``x >= loc``, -inf below.

    Example::

        expon.logpdf(jnp.array([-1.0, 2.0]))   # [-inf, -2.]
    """
    x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(z < 0, -jnp.inf, -z - jnp.log(scale))


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        expon.pdf(jnp.array([0.0]))            # [1.]
    """
    return jnp.exp(logpdf(x, loc, scale))


def _z(name: str, x: Any, loc: Any, scale: Any) -> Any:
    x, loc, scale = promote_args_inexact(name, x, loc, scale)
    return jnp.maximum((x - loc) / scale, 0.0)


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The distribution function ``-expm1(-z)`` (0 left of ``loc``), accurate near ``loc``.

    Example::

        expon.cdf(jnp.array([1e-10, 1.0]))     # [1e-10, 0.63212055]
    """
    return -jnp.expm1(-_z("expon.cdf", x, loc, scale))


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf)``; -inf at and left of ``loc``.

    Example::

        expon.logcdf(jnp.array([1.0]))         # [-0.4586751]
    """
    z = _z("expon.logcdf", x, loc, scale)
    # log1p(-exp(-z)) once the cdf is above 1/2, where -expm1(-z) has rounded towards 1.
    return jnp.where(z < _LOG2, jnp.log(-jnp.expm1(-z)), jnp.log1p(-jnp.exp(-z)))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``exp(-z)`` (1 left of ``loc``).

    Example::

        expon.sf(jnp.array([1.0]))             # [0.36787945]
    """
    return jnp.exp(-_z("expon.sf", x, loc, scale))


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf) = -z`` (0 left of ``loc``).

    Example::

        expon.logsf(jnp.array([100.0]))        # [-100.]
    """
    return -_z("expon.logsf", x, loc, scale)


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The quantile function ``loc - scale log1p(-q)``; NaN outside [0, 1].

    Example::

        expon.ppf(jnp.array([0.63212055]))     # [1.]
    """
    q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
    out = loc - scale * jnp.log1p(-q)
    return jnp.where((q < 0) | (q > 1), jnp.nan, out)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The inverse of ``sf``: ``loc - scale log(q)``; NaN outside [0, 1].

    Example::

        expon.isf(jnp.array([0.36787945]))     # [1.]
    """
    q, loc, scale = promote_args_inexact("expon.isf", q, loc, scale)
    out = loc - scale * jnp.log(q)
    return jnp.where((q < 0) | (q > 1), jnp.nan, out)
