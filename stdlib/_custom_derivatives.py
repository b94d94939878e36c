"""``custom_jvp`` and ``custom_vjp`` with JAX's interfaces.

Example::

    @pyree.custom_jvp
    def log1pexp(x):
        return jnp.log1p(jnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return log1pexp(x), t * jax.nn.sigmoid(x)
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Sequence

from pyree import tree_util
from pyree.transpiler.core.trace import trace_region
from pyree.transpiler.families.custom_derivatives import (CallInfo, custom_jvp_call_p,
                                                          custom_vjp_call_p)
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import current_builder, get_aval


def _split_args(args: tuple, nondiff_argnums: tuple) -> tuple[tuple, tuple]:
    """(differentiated arguments, ((position, value), ...) of the others)."""
    nondiff = tuple((i, args[i]) for i in nondiff_argnums)
    diff = tuple(a for i, a in enumerate(args) if i not in nondiff_argnums)
    return diff, nondiff


def _bind_custom(prim, fun: Callable, args: tuple, nondiff_argnums: tuple, rule: Any) -> Any:
    from pyree.transpiler.frontend.convert import converted
    diff, nondiff = _split_args(args, nondiff_argnums)
    leaves, in_tree = tree_util.tree_flatten(diff)
    avals = [get_aval(x) for x in leaves]
    out_box: dict = {}
    fn = converted(fun)

    def flat(*xs):
        d = tree_util.tree_unflatten(in_tree, list(xs))
        full = list(d)
        for i, v in nondiff:
            full.insert(i, v)
        out = fn(*full)
        out_leaves, out_box["tree"] = tree_util.tree_flatten(out)
        return out_leaves

    region, consts = trace_region(flat, avals)
    info = CallInfo(rule, in_tree, out_box["tree"], len(consts), nondiff)
    outs = prim.bind(*consts, *leaves, fun=region, info=info)
    return tree_util.tree_unflatten(out_box["tree"], outs)


class custom_jvp:
    """A function whose JVP (and so gradient) is given by a rule instead of differentiating its
    body. Register the rule with ``defjvp`` (``rule(primals, tangents) -> (out, tangent_out)``)
    or ``defjvps`` (one ``jvp(tangent, ans, *primals)`` per argument).

    Example::

        @pyree.custom_jvp
        def f(x):
            return jnp.sin(x)

        @f.defjvp
        def f_jvp(primals, tangents):
            (x,), (t,) = primals, tangents
            return f(x), 2.0 * t          # any rule you like
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.jvp: Optional[Callable] = None

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        self.jvp = jvp
        return jvp

    def defjvps(self, *jvps: Optional[Callable]) -> None:
        def rule(primals, tangents):
            ans = self(*primals)
            out = None
            for jvp, t in zip(jvps, tangents):
                if jvp is None:
                    continue
                part = jvp(t, ans, *primals)
                out = part if out is None else tree_util.tree_map(lambda a, b: a + b, out, part)
            if out is None:
                out = tree_util.tree_map(lambda a: a * 0, ans)
            return ans, out
        self.jvp = rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError("custom_jvp functions take positional arguments only")
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {self.__name__} using "
                                 f"defjvp{where(None)}")
        if current_builder() is None:  # nothing to differentiate: just run it
            return self.fun(*args)
        return _bind_custom(custom_jvp_call_p, self.fun, args, self.nondiff_argnums, self.jvp)


class custom_vjp:
    """A function whose VJP (and so gradient) is given by ``fwd`` and ``bwd`` functions:
    ``fwd(*args) -> (out, residuals)``, ``bwd(residuals, out_cotangent) -> input cotangents``
    (a tuple, one per argument). As in JAX it supports reverse mode only.

    Example::

        @pyree.custom_vjp
        def clip_gradient(x):
            return x

        def fwd(x):
            return x, None

        def bwd(_, g):
            return (jnp.clip(g, -1.0, 1.0),)

        clip_gradient.defvjp(fwd, bwd)
    """

    def __init__(self, fun: Callable, nondiff_argnums: Sequence[int] = ()) -> None:
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = tuple(nondiff_argnums)
        self.fwd: Optional[Callable] = None
        self.bwd: Optional[Callable] = None

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False) -> None:
        self.fwd = fwd
        self.bwd = bwd

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError("custom_vjp functions take positional arguments only")
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {self.__name__} using "
                                 f"defvjp{where(None)}")
        if current_builder() is None:
            return self.fun(*args)
        return _bind_custom(custom_vjp_call_p, self.fun, args, self.nondiff_argnums,
                            (self.fwd, self.bwd))


def custom_gradient(fun: Callable) -> Callable:
    """A function whose gradient ``fun`` gives itself: ``fun(*args)`` returns
    ``(value, vjp)`` where ``vjp(cotangent)`` returns the cotangents of the positional
    arguments, a tuple (or one value for one argument), as in ``jax.custom_gradient``.

    Example::

        @pyree.custom_gradient
        def log1pexp(x):
            e = jnp.exp(x)
            return jnp.log1p(e), lambda g: (g * (1 - 1 / (1 + e)),)

        pyree.grad(log1pexp)(100.0)   # 1.0, where the plain formula gives nan
    """
    def primal(*args: Any) -> Any:
        return fun(*args)[0]

    def fwd(*args: Any) -> Any:
        return fun(*args)[0], args

    def bwd(args: tuple, cotangent: Any) -> tuple:
        # The vjp closure cannot be a residual (residuals are arrays): the forward function
        # runs again to make it, so the values it closes over are recomputed.
        cotangents = fun(*args)[1](cotangent)
        return tuple(cotangents) if isinstance(cotangents, (tuple, list)) else (cotangents,)

    wrapped = custom_vjp(primal)
    wrapped.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, fun)
    return wrapped


def stop_gradient(x: Any) -> Any:
    """``x``, with a zero derivative (over a pytree).

    Example::

        y = x * lax.stop_gradient(x)      # dy/dx == x
    """
    from pyree.transpiler.families.custom_derivatives import stop_gradient_p

    def stop(leaf: Any) -> Any:
        aval = get_aval(leaf)
        if aval.dtype.kind not in "fc" and aval.dtype.name != "bfloat16":
            return leaf
        return stop_gradient_p.bind(leaf)

    return tree_util.tree_map(stop, x)


# Last (pyree.numpy.linalg uses custom_jvp): installs the array operators traced functions use.
import pyree.numpy  # noqa: E402,F401
