"""The gamma distribution with shape ``a``, location ``loc`` and scale ``scale`` (SciPy's
``stats.gamma``, JAX's ``jax.scipy.stats.gamma``).

    from pyree.scipy.stats import gamma
    gamma.logpdf(jnp.array([1.0]), a=2.0, scale=0.5)
"""
from __future__ import annotations

from typing import Any

from pyree import numpy as jnp
from pyree.scipy import special
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log density ``(a - 1) log y - y - gammaln(a) - log(scale)``, ``y = (x - loc) /
    scale``; -inf for ``y < 0`` (at ``y = 0``: inf for ``a < 1``, ``-log(scale)`` for
    ``a = 1``, -inf for ``a > 1``).

    Example::

        gamma.logpdf(jnp.array([1.0, 2.0]), 2.0)   # [-1., -1.3068528]
    """
    x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
    y = (x - loc) / scale
    inside = y >= 0
    ys = jnp.where(inside, y, 1.0)
    out = special.xlogy(a - 1.0, ys) - ys - special.gammaln(a) - jnp.log(scale)
    return jnp.where(inside, out, -jnp.inf)


def pdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        gamma.pdf(jnp.array([1.0]), 1.0)       # [0.36787945]
    """
    return jnp.exp(logpdf(x, a, loc, scale))


def _y(name: str, x: Any, a: Any, loc: Any, scale: Any) -> tuple:
    x, a, loc, scale = promote_args_inexact(name, x, a, loc, scale)
    return a, jnp.maximum((x - loc) / scale, 0.0)


def cdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The distribution function, the regularized lower incomplete gamma ``P(a, y)``.

    Example::

        gamma.cdf(jnp.array([1.0]), 1.0)       # [0.63212055]
    """
    return special.gammainc(*_y("gamma.cdf", x, a, loc, scale))


def _log_of(small: Any, other: Any) -> Any:
    """``log(small)``, or ``log1p(-other)`` where ``small`` is near 1 (``other = 1 - small``
    keeps the precision that ``small`` has lost there)."""
    return jnp.where(small < 0.5, jnp.log(small), jnp.log1p(-other))


def logcdf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf)``, from ``log1p(-sf)`` where the cdf is near 1.

    Example::

        gamma.logcdf(jnp.array([1.0]), 1.0)    # [-0.4586751]
    """
    a, y = _y("gamma.logcdf", x, a, loc, scale)
    return _log_of(special.gammainc(a, y), special.gammaincc(a, y))


def sf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function, the regularized upper incomplete gamma ``Q(a, y)``.

    Example::

        gamma.sf(jnp.array([1.0]), 1.0)        # [0.36787945]
    """
    return special.gammaincc(*_y("gamma.sf", x, a, loc, scale))


def logsf(x: Any, a: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf)``, from ``log1p(-cdf)`` where the sf is near 1.

    Example::

        gamma.logsf(jnp.array([1.0]), 1.0)     # [-1.]
    """
    a, y = _y("gamma.logsf", x, a, loc, scale)
    return _log_of(special.gammaincc(a, y), special.gammainc(a, y))
