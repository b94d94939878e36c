"""``pyree.extend.core``: pyree's IR classes under JAX's ``jax.extend.core`` names. An IR
(``Jaxpr``) has ``invars``, ``constvars``, ``outvars`` and ``eqns``; an equation
(``JaxprEqn``) has ``primitive``, ``params``, ``invars`` and ``outvars``; a ``Literal``'s
value is ``val``; ``Primitive.bind(*args, **params)`` applies a primitive.

Example::

    from pyree.extend import core

    def eval_ir(jaxpr, consts, *args):
        env = dict(zip(jaxpr.constvars + jaxpr.invars, list(consts) + list(args)))
        read = lambda v: v.val if type(v) is core.Literal else env[v]
        for eqn in jaxpr.eqns:
            outs = eqn.primitive.bind(*map(read, eqn.invars), **eqn.params)
            env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
        return [read(v) for v in jaxpr.outvars]
"""
from pyree.transpiler.core.ir import IR as Jaxpr
from pyree.transpiler.core.ir import ClosedIR as ClosedJaxpr
from pyree.transpiler.core.ir import Eqn as JaxprEqn
from pyree.transpiler.core.ir import Literal, ShapedArray, Var
from pyree.transpiler.core.trace import Primitive

__all__ = ["ClosedJaxpr", "Jaxpr", "JaxprEqn", "Literal", "Primitive", "ShapedArray", "Var"]
