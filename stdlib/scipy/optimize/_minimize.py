"""``minimize`` with JAX's API: BFGS (Nocedal & Wright, Algorithm 6.1) with a strong-Wolfe
line search, all in one ``lax.while_loop``; the gradient comes from ``value_and_grad``."""
from __future__ import annotations

import operator
from typing import Any, Callable, Mapping, NamedTuple, Optional

import numpy as np

import pyree.numpy as jnp
from pyree import lax
from pyree._autodiff import value_and_grad
from pyree.numpy._util import check_arraylike, promote_dtypes_inexact
from pyree.scipy.optimize._line_search import _line_search
from pyree.transpiler.programs.jit import jit
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import get_aval

_BFGS_OPTIONS = ("maxiter", "gtol", "norm", "line_search_maxiter")


class OptimizeResults(NamedTuple):
    """``minimize``'s result: the solution ``x``, ``success`` (converged without a line
    search failure), ``status`` (0 converged, 1 maxiter reached, 3 or 5 the line search
    failed), the objective ``fun`` and gradient ``jac`` at ``x``, the inverse Hessian
    estimate ``hess_inv``, and the counts of objective (``nfev``) and gradient (``njev``)
    evaluations and of iterations (``nit``)."""
    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


class _BFGSState(NamedTuple):
    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x: Any
    f: Any
    g: Any
    h: Any            # inverse Hessian estimate
    old_f: Any        # f at the previous iterate: picks the line search's first step
    ls_status: Any


def _bfgs(f: Callable, x0: Any, maxiter: Optional[int] = None, norm: Any = np.inf,
          gtol: Any = 1e-5, line_search_maxiter: int = 10) -> OptimizeResults:
    n = get_aval(x0).shape[0]
    maxiter = 200 * n if maxiter is None else operator.index(maxiter)
    int32 = np.dtype(np.int32)
    f0, g0 = value_and_grad(f)(x0)
    state = _BFGSState(converged=jnp.linalg.norm(g0, ord=norm) < gtol,
                       failed=jnp.array(False), k=jnp.zeros((), int32),
                       nfev=jnp.ones((), int32), ngev=jnp.ones((), int32), x=x0, f=f0, g=g0,
                       h=jnp.eye(n, dtype=x0.dtype), old_f=f0 + jnp.linalg.norm(g0) / 2,
                       ls_status=jnp.zeros((), int32))

    def body(s: _BFGSState) -> _BFGSState:
        p = -(s.h @ s.g)
        ls = _line_search(f, s.x, p, s.f, s.old_f, s.g, 1e-4, 0.9, line_search_maxiter)
        step = ls.a_k * p
        y = ls.g_k - s.g
        rho = 1 / jnp.dot(y, step)
        hy = s.h @ y
        # H+ = (I - rho s y^T) H (I - rho y s^T) + rho s s^T, expanded: O(n^2).
        h = (s.h + (rho * rho * jnp.dot(y, hy) + rho) * jnp.outer(step, step)
             - rho * (jnp.outer(hy, step) + jnp.outer(step, hy)))
        return _BFGSState(converged=jnp.linalg.norm(ls.g_k, ord=norm) < gtol,
                          failed=ls.failed, k=s.k + 1, nfev=s.nfev + ls.nfev,
                          ngev=s.ngev + ls.ngev, x=s.x + step, f=ls.f_k, g=ls.g_k,
                          h=jnp.where(jnp.isfinite(rho), h, s.h), old_f=s.f,
                          ls_status=ls.status)

    s = lax.while_loop(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body, state)
    status = jnp.where(s.converged, 0, jnp.where(s.k >= maxiter, 1, jnp.where(
        s.failed, 2 + s.ls_status, -1))).astype(int32)
    return OptimizeResults(x=s.x, success=s.converged & ~s.failed, status=status, fun=s.f,
                           jac=s.g, hess_inv=s.h, nfev=s.nfev, njev=s.ngev, nit=s.k)


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str,
             tol: Optional[float] = None,
             options: Optional[Mapping[str, Any]] = None) -> OptimizeResults:
    """Minimize ``fun(x, *args)`` (a real scalar) over a 1-D ``x`` from ``x0``, as
    ``jax.scipy.optimize.minimize``. ``method`` must be 'BFGS' (any case); ``options``:
    ``maxiter`` (default 200 * x0.size), ``gtol`` (stop when the gradient's ``norm`` falls
    below it; default 1e-5, or ``tol`` when given, as in SciPy), ``norm`` (default inf) and
    ``line_search_maxiter`` (default 10). Works eagerly (one compiled program) and under
    ``jit``; results are not differentiable.

    Example::

        rosen = lambda x: jnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
        minimize(rosen, jnp.zeros(3), method="BFGS").x     # ~[1., 1., 1.]
    """
    name = "scipy.optimize.minimize"
    if not isinstance(args, tuple):
        raise TypeError(f"{name}: args must be a tuple, got {type(args).__name__}"
                        f"{where(None)}")
    if not isinstance(method, str):
        raise TypeError(f"{name}: method must be a string, got {type(method).__name__}"
                        f"{where(None)}")
    if method.lower() != "bfgs":
        raise ValueError(f"{name}: method {method!r} is not supported; the methods are "
                         f"['BFGS']{where(None)}")
    options = dict(options or {})
    unknown = sorted(set(options) - set(_BFGS_OPTIONS))
    if unknown:
        raise TypeError(f"{name}: unknown options {unknown} for method BFGS; the options are "
                        f"{list(_BFGS_OPTIONS)}{where(None)}")
    if tol is not None:
        options.setdefault("gtol", tol)
    check_arraylike(name, x0)
    (x0,) = promote_dtypes_inexact(jnp.asarray(x0))
    aval = get_aval(x0)
    if aval.ndim != 1:
        raise ValueError(f"{name}: x0 must be one-dimensional, got shape {aval.shape} "
                         f"(ravel it, and reshape inside fun){where(None)}")
    if aval.dtype.kind == "c":
        raise ValueError(f"{name}: x0 must be real, got {aval.dtype}{where(None)}")

    def solve(x0: Any) -> OptimizeResults:
        return _bfgs(lambda x: fun(x, *args), x0, **options)

    return jit(solve)(x0)
