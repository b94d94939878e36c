"""``pyree.extend``: the parts of pyree's core that code walking its IR uses, under JAX's
``jax.extend`` names (``core.Literal``, ``core.Var``, ``core.Primitive``...).

Example::

    from pyree.extend import core
    closed = pyree.make_jaxpr(f)(x)
    [type(a) is core.Literal for eqn in closed.jaxpr.eqns for a in eqn.invars]
"""
from . import core

__all__ = ["core"]
