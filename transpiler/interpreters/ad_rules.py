"""What JVP and transpose rules are written with: the core primitives bound as functions
(``add``, ``mul``, ``select``, ...), cotangents summed to an operand's shape (``sum_to``), and
the declarations of derivative rules (``defjvp``, ``defjvp_zero``, ``deflinear``). The rules
themselves are the families' (arithmetic.py, shapes.py, reductions.py, dot_general.py,
math_functions.py, ...).

JVP rules are written with the primitives themselves, so the tangent computation is IR like any
other. Transpose rules exist for the primitives that are linear in some input (the ones JVP
rules apply to tangents); non-linear primitives only ever run in the primal part.

Example (arithmetic.py)::

    defjvp(P.mul_p, lambda g, x, y: mul(g, y), lambda g, x, y: mul(x, g))
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import TypedScalar, get_aval
from .ad import (UndefinedPrimal, Zero, add_tangents, instantiate, jvp_rules, transpose_rules,
                 zeros)


# -- helpers --------------------------------------------------------------------------------------

def aval(x: Any) -> ShapedArray:
    return x.aval if isinstance(x, (Zero, UndefinedPrimal)) else get_aval(x)


def const(value: Any, like: Any) -> TypedScalar:
    """A scalar constant of ``like``'s dtype."""
    return TypedScalar(value, aval(like).dtype, False)


def neg(x):
    return P.neg_p.bind(x)


def add(x, y):
    return P.add_p.bind(x, y)


def sub(x, y):
    return P.sub_p.bind(x, y)


def mul(x, y):
    return P.mul_p.bind(x, y)


def div(x, y):
    return P.div_p.bind(x, y)


def select(pred, x, y):
    return P.select_p.bind(pred, x, y)


def convert(x, dtype):
    return P.convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def broadcast_to(x: Any, shape: tuple) -> Any:
    """A rank-0 ``x`` (or one already of ``shape``) as an array of ``shape``."""
    a = aval(x)
    if a.shape == tuple(shape) and not isinstance(x, TypedScalar):
        return x
    if a.shape == ():
        return P.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=())
    raise ValueError(f"cannot broadcast {a.shape} to {shape}")


def sum_to(ct: Any, shape: tuple) -> Any:
    """Undo the implicit broadcast of a rank-0 operand: sum the cotangent to ``shape``."""
    a = aval(ct)
    if a.shape == tuple(shape):
        return ct
    if shape == ():
        return P.reduce_sum_p.bind(ct, axes=tuple(range(a.ndim)))
    raise ValueError(f"cannot sum shape {a.shape} to {shape}")


def zeros_like(x: Any) -> Any:
    return zeros(aval(x).update(weak_type=False))


# -- JVP rules ------------------------------------------------------------------------------------

def defjvp(prim, *fns: Optional[Callable], use_output: bool = False) -> None:
    """JVP from per-input tangent maps ``fn(g, *primals, **params)`` (or ``fn(g, ans,
    *primals, **params)`` with ``use_output``); their contributions add up."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        out = Zero(aval(ans))
        for fn, g in zip(fns, tangents):
            if fn is None or isinstance(g, Zero):
                continue
            part = fn(g, ans, *primals, **params) if use_output else fn(g, *primals, **params)
            out = add_tangents(out, match_shape(part, aval(ans).shape))
        return [ans], [out]

    jvp_rules[prim] = rule


def match_shape(t: Any, shape: tuple) -> Any:
    # A rank-0 operand's tangent contributes to every element of a broadcast result.
    return broadcast_to(t, shape) if aval(t).shape != shape else t


def defjvp_zero(prim) -> None:
    """The primitive's outputs do not depend differentiably on its inputs."""

    def rule(primals, tangents, **params):
        outs = prim.bind(*primals, **params)
        outs = outs if prim.multiple_results else [outs]
        return list(outs), [Zero(aval(o)) for o in outs]

    jvp_rules[prim] = rule


def deflinear(prim, transpose: Callable) -> None:
    """A primitive linear in all its inputs: its JVP applies it to the tangents."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        ts = [instantiate(t) for t in tangents]
        return [ans], [prim.bind(*ts, **params)]

    jvp_rules[prim] = rule
    transpose_rules[prim] = transpose


def full_like(x: Any, value: Any) -> Any:
    a = aval(x)
    return broadcast_to(const(value, x), a.shape) if a.shape else const(value, x)
