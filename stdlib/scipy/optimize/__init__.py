"""``pyree.scipy.optimize``: ``minimize`` with JAX's API (BFGS with a strong-Wolfe line
search), one ``lax.while_loop`` that compiles with the objective into one program, eagerly or
under ``jit``::

    from pyree.scipy.optimize import minimize
    res = minimize(lambda x: jnp.sum((x - 3.0) ** 2), jnp.zeros(4), method="BFGS")
    res.x, res.success               # ~[3., 3., 3., 3.], True

``x0`` must be a real 1-D array (as in JAX). ``status`` is JAX's: 0 converged, 1 maxiter
reached, 3 or 5 the line search failed (2 + its status: 1 its zoom did not converge, 3 no
bracket). Unlike JAX, ``tol`` is used (as SciPy's gtol, unless options give one), and a
failed line search still moves to the lowest point it found with sufficient decrease.
``line_search`` (the strong-Wolfe search BFGS uses) is exported too.
"""
from pyree.scipy.optimize._line_search import LineSearchResults, line_search
from pyree.scipy.optimize._minimize import OptimizeResults, minimize

__all__ = ["LineSearchResults", "OptimizeResults", "line_search", "minimize"]
