"""The uniform distribution on ``[loc, loc + scale]`` (SciPy's ``stats.uniform``, JAX's
``jax.scipy.stats.uniform``).

    from pyree.scipy.stats import uniform
    uniform.pdf(jnp.array([0.5, 2.0]))       # [1., 0.]
"""
from __future__ import annotations

from typing import Any

from pyree import numpy as jnp
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def logpdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``-log(scale)`` on ``[loc, loc + scale]``, -inf outside.

    Example::

        uniform.logpdf(jnp.array([0.5, 2.0]), 0.0, 2.0)    # [-0.6931472, -0.6931472]
    """
    x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return jnp.where(inside, -jnp.log(scale), -jnp.inf)


def pdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        uniform.pdf(jnp.array([0.5, 2.0]))     # [1., 0.]
    """
    return jnp.exp(logpdf(x, loc, scale))


def cdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``(x - loc) / scale`` clipped to [0, 1].

    Example::

        uniform.cdf(jnp.array([-1.0, 0.25, 3.0]))  # [0., 0.25, 1.]
    """
    x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
    return jnp.clip((x - loc) / scale, 0.0, 1.0)


def logcdf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf)``.

    Example::

        uniform.logcdf(jnp.array([0.5]))       # [-0.6931472]
    """
    return jnp.log(cdf(x, loc, scale))


def sf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``(loc + scale - x) / scale`` clipped to [0, 1].

    Example::

        uniform.sf(jnp.array([0.25]))          # [0.75]
    """
    x, loc, scale = promote_args_inexact("uniform.sf", x, loc, scale)
    return jnp.clip((loc + scale - x) / scale, 0.0, 1.0)


def logsf(x: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf)``.

    Example::

        uniform.logsf(jnp.array([0.5]))        # [-0.6931472]
    """
    return jnp.log(sf(x, loc, scale))


def ppf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``loc + q scale`` for ``q`` in [0, 1], NaN outside.

    Example::

        uniform.ppf(jnp.array([0.25]), 1.0, 2.0)   # [1.5]
    """
    q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
    return jnp.where((q < 0) | (q > 1), jnp.nan, loc + q * scale)


def isf(q: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``loc + (1 - q) scale`` for ``q`` in [0, 1], NaN outside.

    Example::

        uniform.isf(jnp.array([0.25]))         # [0.75]
    """
    q, loc, scale = promote_args_inexact("uniform.isf", q, loc, scale)
    return jnp.where((q < 0) | (q > 1), jnp.nan, loc + (1.0 - q) * scale)
