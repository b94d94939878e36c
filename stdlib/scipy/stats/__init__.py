"""``pyree.scipy.stats``: probability distributions with ``jax.scipy.stats``'s API and
SciPy's values, as modules of functions::

    import pyree.numpy as jnp
    from pyree.scipy.stats import norm, poisson
    norm.logpdf(jnp.array([0.0, 1.0]), loc=0.0, scale=2.0)
    poisson.logpmf(jnp.array([0, 1, 2]), 1.5)

Each distribution has the functions SciPy has for it that have closed forms or go through
``pyree.scipy.special``: ``logpdf``/``pdf`` (``logpmf``/``pmf`` for discrete ones), ``cdf``,
``logcdf``, ``sf``, ``logsf``, and ``ppf``/``isf`` where the quantile has a closed form.
Out-of-support points get ``-inf`` log densities, as in SciPy. All of them work eagerly and
under ``jit``, ``grad`` and ``vmap``.
"""
from pyree.scipy.stats import (bernoulli, beta, binom, cauchy, dirichlet, expon, gamma,
                               laplace, logistic, multivariate_normal, norm, poisson, t,
                               uniform)

__all__ = ["bernoulli", "beta", "binom", "cauchy", "dirichlet", "expon", "gamma", "laplace",
           "logistic", "multivariate_normal", "norm", "poisson", "t", "uniform"]
