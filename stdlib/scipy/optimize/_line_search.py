"""A line search for steps satisfying the strong Wolfe conditions (Nocedal & Wright,
*Numerical Optimization*, Algorithms 3.5 and 3.6), as one ``lax.while_loop`` that evaluates
the objective and its gradient once per iteration: first bracketing (the trial step doubles
until the bracket holds a Wolfe point), then zooming into the bracket by cubic or quadratic
interpolation, safeguarded by bisection.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import numpy as np

import pyree.numpy as jnp
from pyree import lax
from pyree._autodiff import value_and_grad
from pyree.transpiler.programs.jit import jit

_ZOOM_MAXITER = 30


class LineSearchResults(NamedTuple):
    """What ``line_search`` found: ``failed`` when no step satisfies the strong Wolfe
    conditions (then ``a_k`` is the best step with sufficient decrease seen, possibly 0);
    ``status`` 0 (found), 1 (the zoom did not converge), 3 (no bracket within maxiter);
    ``nit`` and ``k`` count the trial steps, ``nfev``/``ngev`` the evaluations."""
    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


class _Point(NamedTuple):
    a: Any        # step
    phi: Any      # f(xk + a pk)
    dphi: Any     # its derivative in a: grad . pk


class _State(NamedTuple):
    i: Any        # trial steps evaluated
    zooming: Any
    nzoom: Any
    lo: _Point    # bracketing: the last step; zooming: the bracket's end with the lower value
    g_lo: Any
    hi: _Point    # zooming: the bracket's other end
    rec: _Point   # zooming: the end last dropped (a third point for cubic interpolation)
    has_rec: Any
    done: Any
    status: Any


def _where(cond: Any, x: _Point, y: _Point) -> _Point:
    return _Point(*(jnp.where(cond, u, v) for u, v in zip(x, y)))


def _cubic_min(p: _Point, q: _Point, r: _Point) -> Any:
    """Minimizer of the cubic through (p.a, p.phi) with slope p.dphi, (q.a, q.phi) and
    (r.a, r.phi); NaN or infinite where there is none."""
    db, dc = q.a - p.a, r.a - p.a
    fb, fc = q.phi - p.phi - p.dphi * db, r.phi - p.phi - p.dphi * dc
    det = db * db * dc * dc * (db - dc)
    a = (fb * dc * dc - fc * db * db) / det
    b = (fc * db * db * db - fb * dc * dc * dc) / det
    return p.a + (-b + jnp.sqrt(b * b - 3 * a * p.dphi)) / (3 * a)


def _quad_min(p: _Point, q: _Point) -> Any:
    """Minimizer of the parabola through (p.a, p.phi) with slope p.dphi and (q.a, q.phi)."""
    d = q.a - p.a
    curvature = (q.phi - p.phi - p.dphi * d) / (d * d)
    return p.a - p.dphi / (2 * curvature)


def _zoom_step(lo: _Point, hi: _Point, rec: _Point, has_rec: Any) -> Any:
    """The next trial step inside the bracket: the cubic's minimizer when it lies well
    inside, else the parabola's, else the midpoint."""
    width = jnp.abs(hi.a - lo.a)
    left, right = jnp.minimum(lo.a, hi.a), jnp.maximum(lo.a, hi.a)
    cubic, quad = _cubic_min(lo, hi, rec), _quad_min(lo, hi)
    cubic_ok = has_rec & (cubic > left + 0.2 * width) & (cubic < right - 0.2 * width)
    quad_ok = (quad > left + 0.1 * width) & (quad < right - 0.1 * width)
    return jnp.where(cubic_ok, cubic, jnp.where(quad_ok, quad, (lo.a + hi.a) / 2))


def line_search(f: Callable, xk: Any, pk: Any, old_fval: Optional[Any] = None,
                old_old_fval: Optional[Any] = None, gfk: Optional[Any] = None,
                c1: float = 1e-4, c2: float = 0.9, maxiter: int = 20) -> LineSearchResults:
    """A step ``a_k`` along ``pk`` from ``xk`` with sufficient decrease,
    ``f(xk + a pk) <= f(xk) + c1 a grad.pk``, and curvature ``|grad(xk + a pk).pk| <= c2
    |grad.pk|``. ``old_fval``/``gfk`` (f and its gradient at ``xk``) are computed when not
    given; ``old_old_fval`` (f at the previous iterate) picks the first trial step, as in
    SciPy, else it is 1. ``maxiter`` bounds the bracketing steps.

    Example::

        f = lambda x: jnp.sum(x ** 2)
        line_search(f, jnp.array([1.0, 1.0]), jnp.array([-1.0, -1.0])).a_k   # 1.0
    """
    def search(xk: Any, pk: Any) -> LineSearchResults:
        return _line_search(f, xk, pk, old_fval, old_old_fval, gfk, c1, c2, maxiter)

    # One compiled program when called eagerly (inlined under a trace). This also keeps it
    # off IREE 3.13's failure on the eager one-op while program ("ref is null ... in
    # hal.buffer_view.create").
    return jit(search)(jnp.asarray(xk), jnp.asarray(pk))


def _line_search(f: Callable, xk: Any, pk: Any, old_fval: Optional[Any],
                 old_old_fval: Optional[Any], gfk: Optional[Any], c1: float, c2: float,
                 maxiter: int) -> LineSearchResults:
    xk, pk = jnp.asarray(xk), jnp.asarray(pk)
    dtype = xk.dtype
    grad_f = value_and_grad(f)
    if old_fval is None or gfk is None:
        old_fval, gfk = grad_f(xk)
        evals = 1
    else:
        evals = 0
    phi0 = jnp.asarray(old_fval)
    dphi0 = jnp.dot(gfk, pk)
    a_init = jnp.ones((), dtype)
    if old_old_fval is not None:
        guess = jnp.minimum(1.0, 2.02 * (phi0 - old_old_fval) / dphi0).astype(dtype)
        a_init = jnp.where(guess > 0, guess, a_init)      # (also where NaN)
    zero = jnp.zeros((), dtype)
    start = _Point(zero, phi0, dphi0)
    int32 = np.dtype(np.int32)
    state = _State(i=jnp.zeros((), int32), zooming=jnp.array(False), nzoom=jnp.zeros((), int32),
                   lo=start, g_lo=jnp.asarray(gfk), hi=start, rec=start,
                   has_rec=jnp.array(False), done=jnp.array(False),
                   status=jnp.zeros((), int32))

    def body(s: _State) -> _State:
        bracket_step = jnp.where(s.i == 0, a_init, 2 * s.lo.a)
        a = jnp.where(s.zooming, _zoom_step(s.lo, s.hi, s.rec, s.has_rec), bracket_step)
        phi, g = grad_f(xk + a * pk)
        new = _Point(a, phi, jnp.dot(g, pk))
        # The new point becomes the bracket's high end (no sufficient decrease, or no lower
        # than lo), the Wolfe point, the low end with the old low end as the high one (the
        # slope points back to lo), or just the low end. "No lower than lo" does not apply to
        # the first trial step (as in SciPy's and JAX's searches): near a float32 minimum the
        # objective cannot resolve the decrease, f(xk + pk) rounds to f(xk), and the
        # sufficient-decrease test alone accepts the step (BFGS on a quadratic: one evaluation
        # to the minimum instead of a failed search, status 3, at |grad| 5e-5).
        not_lower = (phi >= s.lo.phi) & (s.zooming | (s.i > 0))
        above = (phi > phi0 + c1 * a * dphi0) | not_lower | jnp.isnan(phi)
        done = ~above & (jnp.abs(new.dphi) <= -c2 * dphi0)
        flip = ~above & ~done & jnp.where(s.zooming, new.dphi * (s.hi.a - s.lo.a) >= 0,
                                          new.dphi >= 0)
        lo = _where(above, s.lo, new)   # done included: lo is where the result is read
        hi = _where(above, new, _where(flip, s.lo, s.hi))
        rec = _where(above | flip, s.hi, s.lo)
        zooming = s.zooming | above | flip
        nzoom = s.nzoom + s.zooming.astype(int32)
        collapsed = jnp.abs(hi.a - lo.a) <= 4 * jnp.finfo(dtype).eps * jnp.maximum(
            jnp.abs(lo.a), jnp.abs(hi.a))
        zoom_failed = zooming & ~done & ((nzoom >= _ZOOM_MAXITER) | collapsed)
        bracket_failed = ~zooming & ~done & (s.i + 1 >= maxiter)
        status = jnp.where(zoom_failed, 1, jnp.where(bracket_failed, 3, 0)).astype(int32)
        return _State(i=s.i + 1, zooming=zooming, nzoom=nzoom, lo=lo,
                      g_lo=jnp.where(above, s.g_lo, g), hi=hi, rec=rec,
                      has_rec=s.zooming, done=done, status=status)

    s = lax.while_loop(lambda s: ~s.done & (s.status == 0), body, state)
    return LineSearchResults(failed=~s.done, nit=s.i, nfev=s.i + evals, ngev=s.i + evals,
                             k=s.i, a_k=s.lo.a, f_k=s.lo.phi, g_k=s.g_lo, status=s.status)
