"""The Dirichlet distribution with concentration ``alpha`` (SciPy's ``stats.dirichlet``,
JAX's ``jax.scipy.stats.dirichlet``).

    from pyree.scipy.stats import dirichlet
    dirichlet.logpdf(jnp.array([0.2, 0.3, 0.5]), jnp.array([1.0, 2.0, 3.0]))

As in SciPy, the K components of ``x`` lie along its *first* axis (further axes are a batch);
the last component may be left out (it is ``1 - sum`` of the others). A point off the
simplex (a negative component, or components not summing to 1) gets ``-inf``, as in JAX.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from pyree import numpy as jnp
from pyree.scipy import special
from pyree.scipy.stats._util import promote_args_inexact

__all__ = ["logpdf", "pdf"]


def logpdf(x: Any, alpha: Any) -> Any:
    """``sum((alpha - 1) log x) - (sum(gammaln(alpha)) - gammaln(sum(alpha)))`` over the first
    axis; -inf off the simplex.

    Example::

        dirichlet.logpdf(jnp.array([0.2, 0.3, 0.5]), jnp.array([1.0, 2.0, 3.0]))  # 1.5040774
    """
    x, alpha = promote_args_inexact("dirichlet.logpdf", x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet.logpdf: alpha must be one-dimensional, got shape "
                         f"{alpha.shape}")
    k = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (k, k - 1):
        raise ValueError(f"dirichlet.logpdf: x must have {k} or {k - 1} components along its "
                         f"first axis to match alpha {alpha.shape}, got shape {x.shape}")
    if x.shape[0] == k - 1:
        x = jnp.concatenate([x, 1.0 - jnp.sum(x, axis=0, keepdims=True)], axis=0)
    alpha_b = alpha.reshape((k,) + (1,) * (x.ndim - 1))
    normalizer = jnp.sum(special.gammaln(alpha)) - special.gammaln(jnp.sum(alpha))
    log_probs = jnp.sum(special.xlogy(alpha_b - 1.0, x), axis=0) - normalizer
    # Rounding of a normalized x: a few ulps per component.
    tolerance = max(1e-6, 4 * k * float(np.finfo(x.dtype).eps))
    on_simplex = (jnp.all(x >= 0, axis=0)
                  & (jnp.abs(jnp.sum(x, axis=0) - 1.0) <= tolerance))
    return jnp.where(on_simplex, log_probs, -jnp.inf)


def pdf(x: Any, alpha: Any) -> Any:
    """The density, ``exp(logpdf)``.

    Example::

        dirichlet.pdf(jnp.array([0.2, 0.3, 0.5]), jnp.array([1.0, 2.0, 3.0]))     # 4.5
    """
    return jnp.exp(logpdf(x, alpha))
