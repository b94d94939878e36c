"""Products: dot, matmul (the ``@`` operator), vdot, inner, outer."""
from __future__ import annotations

__all__ = [
    "dot", "inner", "matmul", "outer", "vdot",
]

from typing import Any

from pyree import lax
from pyree.transpiler.source import where
from pyree.transpiler.trace import get_aval

from ._util import broadcast_shapes, broadcast_to_shape, check_arraylike, promote_dtypes
from ._ufuncs import multiply


def dot(a: Any, b: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """NumPy's ``dot``: inner product of vectors, matrix product of matrices, and for N-d
    arrays a sum over the last axis of ``a`` and the second-to-last of ``b``.

    Example::

        jnp.dot(jnp.ones((2, 3)), jnp.ones(3))   # [3., 3.]
    """
    check_arraylike("dot", a, b)
    a, b = promote_dtypes(a, b)
    a_nd, b_nd = get_aval(a).ndim, get_aval(b).ndim
    if a_nd == 0 or b_nd == 0:
        return multiply(a, b)
    b_axis = 0 if b_nd == 1 else b_nd - 2
    return lax.dot_general(a, b, (((a_nd - 1,), (b_axis,)), ((), ())),
                           preferred_element_type=preferred_element_type)


def matmul(a: Any, b: Any, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Matrix product with NumPy's batching: leading dimensions broadcast, 1-d operands are
    treated as vectors.

    Example::

        (jnp.ones((5, 2, 3)) @ jnp.ones((3, 4))).shape   # (5, 2, 4)
    """
    check_arraylike("matmul", a, b)
    a, b = promote_dtypes(a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if not a_shape or not b_shape:
        raise ValueError("matmul: input operand does not have enough dimensions (0-d arrays "
                         "are not matrices; use * to scale)")
    a_vec, b_vec = len(a_shape) == 1, len(b_shape) == 1
    if a_vec:
        a = lax.reshape(a, (1,) + a_shape)
    if b_vec:
        b = lax.reshape(b, b_shape + (1,))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if a_shape[-1] != b_shape[-2]:
        raise TypeError(f"matmul: contracting dimensions differ: shapes {get_aval(a).shape} and "
                        f"{get_aval(b).shape} ({a_shape[-1]} != {b_shape[-2]}){where(None)}")
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    nb = len(batch)
    if batch:
        a = broadcast_to_shape(a, batch + a_shape[-2:])
        b = broadcast_to_shape(b, batch + b_shape[-2:])
    dims = (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb))))
    out = lax.dot_general(a, b, dims, preferred_element_type=preferred_element_type)
    out_shape = get_aval(out).shape
    if a_vec and b_vec:
        return lax.reshape(out, out_shape[:-2])
    if a_vec:
        return lax.reshape(out, out_shape[:-2] + out_shape[-1:])
    if b_vec:
        return lax.reshape(out, out_shape[:-1])
    return out


def vdot(a: Any, b: Any) -> Any:
    """Dot product of the flattened arrays.

    Example::

        jnp.vdot(jnp.ones((2, 2)), jnp.ones((2, 2)))   # 4.
    """
    from ._shape import ravel
    return dot(ravel(a), ravel(b))


def inner(a: Any, b: Any) -> Any:
    """Sum of products over the last axes.

    Example::

        jnp.inner(jnp.ones(3), jnp.ones(3))   # 3.
    """
    check_arraylike("inner", a, b)
    a, b = promote_dtypes(a, b)
    a_nd, b_nd = get_aval(a).ndim, get_aval(b).ndim
    if a_nd == 0 or b_nd == 0:
        return multiply(a, b)
    return lax.dot_general(a, b, (((a_nd - 1,), (b_nd - 1,)), ((), ())))


def outer(a: Any, b: Any) -> Any:
    """Outer product of the flattened arrays.

    Example::

        jnp.outer(jnp.arange(2), jnp.arange(3)).shape   # (2, 3)
    """
    from ._shape import ravel
    a, b = ravel(a), ravel(b)
    return multiply(lax.reshape(a, (get_aval(a).size, 1)), b)
