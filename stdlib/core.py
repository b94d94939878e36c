"""``jax.core``'s public names that programs use: the types of traced values and abstract
values (for ``isinstance`` checks), ``eval_jaxpr`` of what ``make_jaxpr`` returns,
``ensure_compile_time_eval``, and ``min_dim``/``max_dim`` (pyree's shapes are static, so
they are ``min``/``max``). Example::

    from pyree import core
    closed = pyree.make_jaxpr(lambda x: x * 2)(3.0)
    core.eval_jaxpr(closed.jaxpr, closed.consts, 4.0)     # [Array(8., dtype=float32)]
    isinstance(x, core.Tracer)                            # inside jit: True
"""
from __future__ import annotations

from typing import Any, Sequence

from pyree._api import ensure_compile_time_eval
from pyree.transpiler.core.ir import ClosedIR, IR, ShapedArray
from pyree.transpiler.core.trace import Tracer, eval_ir

__all__ = ["AbstractValue", "ShapedArray", "Tracer", "ensure_compile_time_eval", "eval_jaxpr",
           "max_dim", "min_dim"]

# pyree has one kind of abstract value.
AbstractValue = ShapedArray


def eval_jaxpr(jaxpr: IR, consts: Sequence[Any], *args: Any) -> list:
    """Runs ``jaxpr`` (``make_jaxpr(f)(...).jaxpr``) on ``args`` with its ``consts``: eagerly
    outside a trace, inlined inside one (``jax.core.eval_jaxpr``). Returns the outputs' list.

    Example: ``core.eval_jaxpr(closed.jaxpr, closed.consts, 4.0)``
    """
    if isinstance(jaxpr, ClosedIR):
        raise TypeError("eval_jaxpr takes the open IR (closed.jaxpr) and its consts, as JAX's")
    return eval_ir(ClosedIR(jaxpr, list(consts)), *args)


def max_dim(a: int, b: int) -> int:
    """The larger of two dimensions. Example: ``core.max_dim(3, 4)`` -> 4"""
    return max(a, b)


def min_dim(a: int, b: int) -> int:
    """The smaller of two dimensions. Example: ``core.min_dim(3, 4)`` -> 3"""
    return min(a, b)
