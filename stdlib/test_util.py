"""``check_grads``: derivatives against finite differences, as in ``jax.test_util``.

Example::

    from pyree.test_util import check_grads
    check_grads(jnp.sin, (jnp.arange(3.0),), order=2)
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from pyree import tree_util

_DEFAULT_EPS = {np.dtype(np.float32): 3e-3, np.dtype(np.float64): 1e-5,
                np.dtype(np.float16): 1e-1}
_DEFAULT_TOL = {np.dtype(np.float32): 2e-2, np.dtype(np.float64): 1e-5,
                np.dtype(np.float16): 1e-1}


def _leaves(tree: Any) -> list:
    return [np.asarray(x) for x in tree_util.tree_leaves(tree)]


def _dtype_of(args: Sequence[Any]) -> np.dtype:
    """The widest float dtype the arguments are computed in: canonicalized, so that float64
    inputs with x64 disabled (computed in float32) get float32's step and tolerances."""
    from pyree.dtypes import canonicalize_dtype
    dtypes = [canonicalize_dtype(np.asarray(x).dtype) for x in tree_util.tree_leaves(args)]
    floats = [d for d in dtypes if d.kind == "f"]
    return max(floats, key=lambda d: d.itemsize) if floats else np.dtype(np.float32)


def _random_like(tree: Any, rng: np.random.RandomState) -> Any:
    def draw(x: Any) -> Any:
        a = np.asarray(x)
        if a.dtype.kind == "V":   # float0: an integer value's cotangent, no data
            return a
        return (rng.standard_normal(a.shape)).astype(a.dtype) if a.dtype.kind == "f" else a * 0
    return tree_util.tree_map(draw, tree)


def _add(tree: Any, direction: Any, scale: float) -> Any:
    return tree_util.tree_map(lambda x, d: (np.asarray(x) + scale * np.asarray(d)).astype(
        np.asarray(x).dtype) if np.asarray(x).dtype.kind == "f" else x, tree, direction)


def _inner(a: Any, b: Any) -> float:
    # (An integer argument's cotangent is float0, no data: it adds nothing, and its direction
    # is zero anyway.)
    from pyree.dtypes import float0
    return float(sum(np.vdot(np.asarray(x, np.float64), np.asarray(y, np.float64))
                     for x, y in zip(tree_util.tree_leaves(a), tree_util.tree_leaves(b))
                     if np.asarray(x).dtype != float0 and np.asarray(y).dtype != float0))


def _assert_close(what: str, got: Any, want: Any, atol: float, rtol: float) -> None:
    for g, w in zip(_leaves(got), _leaves(want)):
        if g.dtype.kind == "V" or w.dtype.kind == "V":   # float0: no data to compare
            assert g.shape == w.shape, (what, g.shape, w.shape)
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        if not np.allclose(g64, w64, atol=atol, rtol=rtol, equal_nan=True):
            err = np.max(np.abs(g64 - w64)) if g64.size else 0.0
            raise AssertionError(f"{what}: derivative does not match finite differences "
                                 f"(max abs error {err:.3g}, atol={atol}, rtol={rtol})\n"
                                 f"got:  {g}\nwant: {w}")


def _tolerances(args: tuple, atol: Optional[float], rtol: Optional[float],
                eps: Optional[float]) -> tuple[float, float, float]:
    """(atol, rtol, eps): those given, else the defaults for the arguments' float dtype."""
    dtype = _dtype_of(args)
    return (atol or _DEFAULT_TOL.get(dtype, 1e-2), rtol or _DEFAULT_TOL.get(dtype, 1e-2),
            eps or _DEFAULT_EPS.get(dtype, 1e-3))


def _central_difference(f: Callable, args: tuple, v: Any, eps: float) -> Any:
    """(f(args + eps v) - f(args - eps v)) / 2 eps, in float64."""
    plus, minus = f(*_add(args, v, eps)), f(*_add(args, v, -eps))

    def difference(p: Any, m: Any) -> Any:
        if np.asarray(p).dtype.kind == "V":   # float0 (an integer value's cotangent)
            return p
        return (np.asarray(p, np.float64) - np.asarray(m, np.float64)) / (2 * eps)
    return tree_util.tree_map(difference, plus, minus)


def check_jvp(f: Callable, args: tuple, atol: Optional[float] = None,
              rtol: Optional[float] = None, eps: Optional[float] = None, seed: int = 0) -> None:
    """``jvp(f, args, v)`` against central differences along a random direction ``v``."""
    from pyree import jvp
    atol, rtol, eps = _tolerances(args, atol, rtol, eps)
    v = _random_like(args, np.random.RandomState(seed))
    _, tangent = jvp(f, tuple(args), tuple(v))
    numeric = _central_difference(f, args, v, eps)
    _assert_close("jvp", tangent, numeric, atol, rtol)


def check_vjp(f: Callable, args: tuple, atol: Optional[float] = None,
              rtol: Optional[float] = None, eps: Optional[float] = None, seed: int = 0) -> None:
    """``<vjp(u), v>`` against ``<u, (f(x + eps v) - f(x - eps v)) / 2eps>``."""
    from pyree import vjp
    atol, rtol, eps = _tolerances(args, atol, rtol, eps)
    rng = np.random.RandomState(seed)
    out, f_vjp = vjp(f, *args)
    u = _random_like(out, rng)
    v = _random_like(args, rng)
    ct = f_vjp(tree_util.tree_map(lambda x, t: np.asarray(t).astype(np.asarray(x).dtype), out, u))
    numeric = _central_difference(f, args, v, eps)
    got = _inner(ct, v)
    want = _inner(u, numeric)
    if not np.isclose(got, want, atol=atol * max(1.0, abs(want)), rtol=rtol):
        raise AssertionError(f"vjp: <vjp(u), v> = {got:.6g} but the finite-difference "
                             f"<u, J v> = {want:.6g} (atol={atol}, rtol={rtol})")


def check_grads(f: Callable, args: Sequence[Any], order: int, modes: Sequence[str] = ("fwd", "rev"),
                atol: Optional[float] = None, rtol: Optional[float] = None,
                eps: Optional[float] = None) -> None:
    """Check ``f``'s derivatives up to ``order`` in the given modes against finite differences.

    Example::

        check_grads(lambda x: jnp.sum(x ** 3), (jnp.arange(3.0),), order=2)
    """
    args = tuple(args)

    def check(fun: Callable, args: tuple, order: int) -> None:
        if "fwd" in modes:
            check_jvp(fun, args, atol, rtol, eps)
        if "rev" in modes:
            check_vjp(fun, args, atol, rtol, eps)
        if order > 1:
            from pyree import jvp, vjp
            v = _random_like(args, np.random.RandomState(1))
            if "fwd" in modes:
                check(lambda *a: jvp(fun, a, tuple(v))[1], args, order - 1)
            if "rev" in modes:
                out = fun(*args)
                u = _random_like(out, np.random.RandomState(2))
                u = tree_util.tree_map(lambda x, t: np.asarray(t).astype(np.asarray(x).dtype),
                                       out, u)
                check(lambda *a: vjp(fun, *a)[1](u), args, order - 1)

    check(f, args, order)
