"""Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale
``scale`` (SciPy's ``stats.t``, JAX's ``jax.scipy.stats.t``).

    from pyree.scipy.stats import t
    t.logpdf(jnp.array([0.5]), df=3.0)
"""
from __future__ import annotations

from typing import Any

from pyree import numpy as jnp
from pyree.scipy import special
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def logpdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The log density ``-betaln(df/2, 1/2) - log(sqrt(df) scale) - (df + 1)/2 log1p(z**2 / df)``
    with ``z = (x - loc) / scale`` (the normalizer through ``betaln``, which stays accurate for
    large ``df``).

    Example::

        t.logpdf(jnp.array([0.0, 1.0]), 3.0)   # [-1.0008891, -1.5762532]
    """
    x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
    z = (x - loc) / scale
    return (-special.betaln(0.5 * df, 0.5) - 0.5 * jnp.log(df) - jnp.log(scale)
            - 0.5 * (df + 1.0) * jnp.log1p(z * z / df))


def pdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        t.pdf(jnp.array([0.0]), 1.0)           # [0.31830987]
    """
    return jnp.exp(logpdf(x, df, loc, scale))


def _lower_tail(z: Any, df: Any) -> Any:
    """``P(T <= -|z|) = I_v(df/2, 1/2) / 2`` with ``v = df / (df + z**2)``, from whichever of
    ``v`` and ``w = 1 - v = z**2 / (df + z**2)`` is smaller (computed without ``1 - ...``):
    ``I_v(df/2, 1/2) = 1 - I_w(1/2, df/2)``."""
    z2 = z * z
    far = z2 > df
    ratio = jnp.where(far, df / z2, z2 / df)   # <= 1, and no inf / inf for huge |z|
    small = ratio / (1.0 + ratio)               # v when far, else w
    half = jnp.full_like(df, 0.5)
    a = jnp.where(far, 0.5 * df, half)
    b = jnp.where(far, half, 0.5 * df)
    tail = special.betainc(a, b, small)
    return 0.5 * jnp.where(far, tail, 1.0 - tail)


def _standardized(name: str, x: Any, df: Any, loc: Any, scale: Any) -> tuple:
    x, df, loc, scale = promote_args_inexact(name, x, df, loc, scale)
    z = (x - loc) / scale
    shape = jnp.broadcast_shapes(z.shape, df.shape)
    return jnp.broadcast_to(z, shape), jnp.broadcast_to(df, shape)


def cdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The distribution function, through the regularized incomplete beta function.

    Example::

        t.cdf(jnp.array([0.0, 2.0]), 3.0)      # [0.5, 0.930337]
    """
    z, df = _standardized("t.cdf", x, df, loc, scale)
    tail = _lower_tail(z, df)
    return jnp.where(z < 0, tail, 1.0 - tail)


def sf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """The survival function ``1 - cdf``, accurate in the right tail.

    Example::

        t.sf(jnp.array([2.0]), 3.0)            # [0.06966298]
    """
    z, df = _standardized("t.sf", x, df, loc, scale)
    tail = _lower_tail(z, df)
    return jnp.where(z > 0, tail, 1.0 - tail)


def logcdf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(cdf)``.

    Example::

        t.logcdf(jnp.array([-2.0]), 3.0)       # [-2.6642]
    """
    z, df = _standardized("t.logcdf", x, df, loc, scale)
    tail = _lower_tail(z, df)
    return jnp.where(z < 0, jnp.log(tail), jnp.log1p(-tail))


def logsf(x: Any, df: Any, loc: Any = 0, scale: Any = 1) -> Any:
    """``log(sf)``.

    Example::

        t.logsf(jnp.array([2.0]), 3.0)         # [-2.6642]
    """
    z, df = _standardized("t.logsf", x, df, loc, scale)
    tail = _lower_tail(z, df)
    return jnp.where(z > 0, jnp.log(tail), jnp.log1p(-tail))
