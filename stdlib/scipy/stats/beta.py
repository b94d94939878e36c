"""The beta distribution with shapes ``a``, ``b`` on ``[loc, loc + scale]`` (SciPy's
``stats.beta``, JAX's ``jax.scipy.stats.beta``).

    from pyree.scipy.stats import beta
    beta.logpdf(jnp.array([0.3]), 2.0, 5.0)
"""
from __future__ import annotations

from typing import Any

from pyree import numpy as jnp
from pyree.scipy import special
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log density ``(a - 1) log y + (b - 1) log1p(-y) - betaln(a, b) - log(scale)``,
    ``y = (x - loc) / scale``; -inf outside [0, 1].

    Example::

        beta.logpdf(jnp.array([0.5, 2.0]), 2.0, 2.0)   # [0.4054651, -inf]
    """
    x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
    y = (x - loc) / scale
    inside = (y >= 0) & (y <= 1)
    ys = jnp.where(inside, y, 0.5)
    out = (special.xlogy(a - 1.0, ys) + special.xlog1py(b - 1.0, -ys)
           - special.betaln(a, b) - jnp.log(scale))
    return jnp.where(inside, out, -jnp.inf)


def pdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        beta.pdf(jnp.array([0.5]), 2.0, 2.0)   # [1.5]
    """
    return jnp.exp(logpdf(x, a, b, loc, scale))


def _y(name: str, x: Any, a: Any, b: Any, loc: Any, scale: Any) -> tuple:
    x, a, b, loc, scale = promote_args_inexact(name, x, a, b, loc, scale)
    return a, b, jnp.clip((x - loc) / scale, 0.0, 1.0)


def cdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The distribution function, the regularized incomplete beta function ``I_y(a, b)``.

    Example::

        beta.cdf(jnp.array([0.4]), 2.0, 3.0)   # [0.5248]
    """
    a, b, y = _y("beta.cdf", x, a, b, loc, scale)
    return special.betainc(a, b, y)


def _log_of(small: Any, other: Any) -> Any:
    """``log(small)``, or ``log1p(-other)`` where ``small`` is near 1 (``other = 1 - small``
    keeps the precision that ``small`` has lost there)."""
    return jnp.where(small < 0.5, jnp.log(small), jnp.log1p(-other))


def logcdf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf)``, from ``log1p(-sf)`` where the cdf is near 1.

    Example::

        beta.logcdf(jnp.array([0.4]), 2.0, 3.0)    # [-0.6447374]
    """
    a, b, y = _y("beta.logcdf", x, a, b, loc, scale)
    return _log_of(special.betainc(a, b, y), special.betainc(b, a, 1.0 - y))


def sf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``I_{1-y}(b, a)``, accurate in the right tail.

    Example::

        beta.sf(jnp.array([0.4]), 2.0, 3.0)    # [0.4752]
    """
    a, b, y = _y("beta.sf", x, a, b, loc, scale)
    return special.betainc(b, a, 1.0 - y)


def logsf(x: Any, a: Any, b: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf)``, from ``log1p(-cdf)`` where the sf is near 1.

    Example::

        beta.logsf(jnp.array([0.4]), 2.0, 3.0)     # [-0.7440]
    """
    a, b, y = _y("beta.logsf", x, a, b, loc, scale)
    return _log_of(special.betainc(b, a, 1.0 - y), special.betainc(a, b, y))
