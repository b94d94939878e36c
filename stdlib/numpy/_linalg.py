"""Products: dot, matmul (the ``@`` operator), vdot, inner, outer, tensordot, einsum, kron,
trace, cross, vecdot, matvec, vecmat."""
from __future__ import annotations

__all__ = [
    "cross", "dot", "einsum", "einsum_path", "inner", "kron", "matmul", "matvec", "outer",
    "tensordot", "trace", "vdot", "vecdot", "vecmat",
]

import operator
from typing import Any, Optional

import numpy as np

from pyree import lax
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import get_aval

from ._creation import asarray
from ._util import (broadcast_operands, broadcast_shapes, broadcast_to_shape, canonical_axis,
                    check_arraylike, promote_dtypes)
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
    return lax.dot_general(a, b, (((a_nd - 1,), (b_axis,)), ((), ())), precision,
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
    out = lax.dot_general(a, b, dims, precision, preferred_element_type=preferred_element_type)
    out_shape = get_aval(out).shape
    if a_vec and b_vec:
        return lax.reshape(out, out_shape[:-2])
    if a_vec:
        return lax.reshape(out, out_shape[:-2] + out_shape[-1:])
    if b_vec:
        return lax.reshape(out, out_shape[:-1])
    return out


def vdot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Dot product of the flattened arrays, the first one complex-conjugated.

    Example::

        jnp.vdot(jnp.ones((2, 2)), jnp.ones((2, 2)))   # 4.
        jnp.vdot(jnp.array([1j]), jnp.array([1j]))      # 1+0j
    """
    from ._shape import ravel
    from ._ufuncs import conjugate
    check_arraylike("vdot", a, b)
    return dot(conjugate(ravel(a)), ravel(b), precision=precision,
               preferred_element_type=preferred_element_type)


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


# -- tensordot, kron, trace, cross, vecdot ---------------------------------------------------------

def _axis_list(axes: Any) -> list:
    if isinstance(axes, (list, tuple)):
        return [operator.index(x) for x in axes]
    return [operator.index(axes)]


def tensordot(a: Any, b: Any, axes: Any = 2, precision: Any = None,
              preferred_element_type: Any = None) -> Any:
    """Sum of products over the last ``axes`` axes of ``a`` and the first ``axes`` of ``b``, or
    over explicit axes given as a pair ``(a_axes, b_axes)``. The result has ``a``'s remaining
    axes, then ``b``'s.

    Example::

        jnp.tensordot(jnp.ones((2, 3, 4)), jnp.ones((3, 4, 5))).shape   # (2, 5)
    """
    check_arraylike("tensordot", a, b)
    a, b = promote_dtypes(a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if isinstance(axes, (list, tuple)):
        if len(axes) != 2:
            raise TypeError(f"tensordot: axes must be an int or a pair of sequences, got "
                            f"{axes!r}{where(None)}")
        a_axes, b_axes = _axis_list(axes[0]), _axis_list(axes[1])
        if len(a_axes) != len(b_axes):
            raise TypeError(f"tensordot: the two sequences of axes must have the same length, "
                            f"got {axes!r}{where(None)}")
    else:
        count = operator.index(axes)
        if count < 0 or count > min(len(a_shape), len(b_shape)):
            raise TypeError(f"tensordot: number of contracted axes must be between 0 and "
                            f"{min(len(a_shape), len(b_shape))} for shapes {a_shape} and "
                            f"{b_shape}, got {count}{where(None)}")
        a_axes = list(range(len(a_shape) - count, len(a_shape)))
        b_axes = list(range(count))
    a_axes = [canonical_axis(x, len(a_shape)) for x in a_axes]
    b_axes = [canonical_axis(x, len(b_shape)) for x in b_axes]
    for i, j in zip(a_axes, b_axes):
        if a_shape[i] != b_shape[j]:
            raise TypeError(f"tensordot: axis {i} of a (size {a_shape[i]}) and axis {j} of b "
                            f"(size {b_shape[j]}) do not match: shapes {a_shape} and "
                            f"{b_shape}{where(None)}")
    if not a_shape or not b_shape:
        return multiply(a, b)
    return lax.dot_general(a, b, ((tuple(a_axes), tuple(b_axes)), ((), ())), precision,
                           preferred_element_type=preferred_element_type)


def kron(a: Any, b: Any) -> Any:
    """Kronecker product: blocks ``a[i, j] * b``, for arrays of any rank (the smaller rank is
    padded with leading ones).

    Example::

        jnp.kron(jnp.eye(2), jnp.ones((2, 2))).shape   # (4, 4)
    """
    check_arraylike("kron", a, b)
    a, b = promote_dtypes(a, b)
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    nd = max(len(a_shape), len(b_shape))
    a_shape = (1,) * (nd - len(a_shape)) + a_shape
    b_shape = (1,) * (nd - len(b_shape)) + b_shape
    # Interleave: a as (a0, 1, a1, 1, ...), b as (1, b0, 1, b1, ...); their product reshaped.
    a = lax.reshape(a, tuple(d for s in a_shape for d in (s, 1)))
    b = lax.reshape(b, tuple(d for s in b_shape for d in (1, s)))
    return lax.reshape(multiply(a, b), tuple(x * y for x, y in zip(a_shape, b_shape)))


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: None = None) -> Any:
    """Sum along a diagonal (``offset`` above the main one) of the plane ``(axis1, axis2)``.

    Example::

        jnp.trace(jnp.arange(9).reshape(3, 3))   # 12
    """
    from ._reductions import sum as _sum
    from ._ufuncs import where as _where
    check_arraylike("trace", a)
    if out is not None:
        raise NotImplementedError("trace: the out argument is not supported (arrays are "
                                  "immutable)")
    a = asarray(a)
    shape = get_aval(a).shape
    if len(shape) < 2:
        raise ValueError(f"trace: array must be at least 2-d, got shape {shape}{where(None)}")
    axis1, axis2 = canonical_axis(axis1, len(shape)), canonical_axis(axis2, len(shape))
    if axis1 == axis2:
        raise ValueError(f"trace: axis1 and axis2 cannot be the same ({axis1}){where(None)}")
    offset = operator.index(offset)
    int_t = np.dtype(np.int32)
    plane = [1] * len(shape)
    plane[axis1], plane[axis2] = shape[axis1], shape[axis2]
    mask_shape = (shape[axis1], shape[axis2])
    on = lax.eq(lax.add(lax.broadcasted_iota(int_t, mask_shape, 0), offset),
                lax.broadcasted_iota(int_t, mask_shape, 1))
    if axis1 > axis2:
        on = lax.transpose(on, (1, 0))
    on = lax.reshape(on, tuple(plane))
    zero = lax.full((), 0, get_aval(a).dtype)
    return _sum(_where(on, a, zero), axis=(axis1, axis2), dtype=dtype)


def _component(x: Any, i: int) -> Any:
    """``x[..., i]``."""
    shape = get_aval(x).shape
    part = lax.slice(x, (0,) * (len(shape) - 1) + (i,), shape[:-1] + (i + 1,))
    return lax.reshape(part, shape[:-1])


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: Optional[int] = None) -> Any:
    """Cross product of 3-vectors (or 2-vectors, taken with a zero third component; two
    2-vectors give the scalar z component) along ``axisa`` of ``a`` and ``axisb`` of ``b``; the
    vectors' leading dimensions broadcast, the result's vector axis is ``axisc``.

    Example::

        jnp.cross(jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0]))   # [0., 0., 1.]
    """
    from ._shape import moveaxis, stack
    from ._ufuncs import subtract
    check_arraylike("cross", a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = promote_dtypes(asarray(a), asarray(b))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if not a_shape or not b_shape:
        raise ValueError(f"cross: inputs must be arrays of vectors, got shapes {a_shape} and "
                         f"{b_shape}{where(None)}")
    a = moveaxis(a, canonical_axis(axisa, len(a_shape), "axisa"), -1)
    b = moveaxis(b, canonical_axis(axisb, len(b_shape), "axisb"), -1)
    na, nb = get_aval(a).shape[-1], get_aval(b).shape[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError(f"cross: incompatible dimensions for cross product (dimension must be "
                         f"2 or 3), got {na} and {nb}{where(None)}")
    a0, a1 = _component(a, 0), _component(a, 1)
    b0, b1 = _component(b, 0), _component(b, 1)
    z = subtract(multiply(a0, b1), multiply(a1, b0))
    if na == 2 and nb == 2:
        return z
    # A 2-vector has a zero third component.
    zero = lax.full((), 0, get_aval(a).dtype)
    a2 = _component(a, 2) if na == 3 else multiply(a0, zero)
    b2 = _component(b, 2) if nb == 3 else multiply(b0, zero)
    x = subtract(multiply(a1, b2), multiply(a2, b1))
    y = subtract(multiply(a2, b0), multiply(a0, b2))
    out = stack(broadcast_operands(x, y, z), axis=-1)
    return moveaxis(out, -1, canonical_axis(axisc, get_aval(out).ndim, "axisc"))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Dot products of vectors along ``axis``, ``x1`` complex-conjugated, the other
    dimensions broadcast (NumPy 2's ``vecdot``).

    Example::

        jnp.vecdot(jnp.ones((4, 3)), jnp.arange(3.0))   # [3., 3., 3., 3.]
    """
    from ._reductions import sum as _sum
    from ._shape import moveaxis
    from ._ufuncs import conjugate
    check_arraylike("vecdot", x1, x2)
    x1, x2 = promote_dtypes(asarray(x1), asarray(x2))
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    if not s1 or not s2:
        raise ValueError(f"vecdot: inputs must be at least 1-d, got shapes {s1} and "
                         f"{s2}{where(None)}")
    a1, a2 = canonical_axis(axis, len(s1)), canonical_axis(axis, len(s2))
    if s1[a1] != s2[a2]:
        raise ValueError(f"vecdot: sizes of the vector axis differ: shapes {s1} and {s2} along "
                         f"axis {axis}{where(None)}")
    return _sum(multiply(conjugate(moveaxis(x1, a1, -1)), moveaxis(x2, a2, -1)), axis=-1)


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector products ``x1 @ x2`` for a stack of matrices (..., m, n) and of vectors
    (..., n), leading dimensions broadcast (NumPy 2's ``matvec``).

    Example::

        jnp.matvec(jnp.eye(3), jnp.arange(3.0))   # [0., 1., 2.]
    """
    check_arraylike("matvec", x1, x2)
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    if len(s1) < 2 or len(s2) < 1:
        raise ValueError(f"matvec: expected a matrix and a vector (or stacks of them), got "
                         f"shapes {s1} and {s2}{where(None)}")
    out = matmul(x1, lax.expand_dims(asarray(x2), (len(s2),)))
    return lax.squeeze(out, (get_aval(out).ndim - 1,))


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Vector-matrix products ``x1 @ x2`` for stacks of vectors (..., m) and matrices
    (..., m, n), leading dimensions broadcast (NumPy 2's ``vecmat``).

    Example::

        jnp.vecmat(jnp.arange(3.0), jnp.eye(3))   # [0., 1., 2.]
    """
    check_arraylike("vecmat", x1, x2)
    x1 = asarray(x1)
    s1, s2 = get_aval(x1).shape, get_aval(x2).shape
    if len(s1) < 1 or len(s2) < 2:
        raise ValueError(f"vecmat: expected a vector and a matrix (or stacks of them), got "
                         f"shapes {s1} and {s2}{where(None)}")
    out = matmul(lax.expand_dims(x1, (len(s1) - 1,)), x2)
    return lax.squeeze(out, (get_aval(out).ndim - 2,))


# -- einsum ----------------------------------------------------------------------------------------

_LABELS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _interleaved_to_subscripts(args: tuple) -> tuple[str, tuple]:
    """einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) as (subscripts, operands)."""
    args = list(args)
    out_list = args.pop() if len(args) % 2 == 1 else None
    operands, terms = args[0::2], args[1::2]

    def term(sublist):
        text = ""
        for s in sublist:
            if s is Ellipsis:
                text += "..."
            else:
                s = operator.index(s)
                if not 0 <= s < len(_LABELS):
                    raise ValueError(f"einsum: subscript {s} in a sublist is out of range "
                                     f"[0, {len(_LABELS)}){where(None)}")
                text += _LABELS[s]
        return text

    subscripts = ",".join(term(t) for t in terms)
    if out_list is not None:
        subscripts += "->" + term(out_list)
    return subscripts, tuple(operands)


def _parse_einsum(subscripts: str, shapes: list) -> tuple[list, str, dict]:
    """(each operand's labels, the output's labels, label -> size); ellipses replaced by
    labels of their own, right-aligned across operands as in broadcasting."""
    text = subscripts.replace(" ", "")
    explicit = "->" in text
    lhs, out = text.split("->", 1) if explicit else (text, None)
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} operand terms in {subscripts!r} but "
                         f"{len(shapes)} operands{where(None)}")
    for ch in text.replace("...", "").replace(",", "").replace("->", ""):
        if ch not in _LABELS:
            raise ValueError(f"einsum: invalid subscript character {ch!r} in {subscripts!r} "
                             f"(only letters, ',', '->' and '...'){where(None)}")
    used = set(text)
    spare = [c for c in _LABELS if c not in used]
    ellipsis_nd = 0
    for term, shape in zip(terms, shapes):
        named = len(term.replace("...", ""))
        if "..." in term:
            if term.count("...") > 1:
                raise ValueError(f"einsum: more than one ellipsis in the term {term!r}"
                                 f"{where(None)}")
            ellipsis_nd = max(ellipsis_nd, len(shape) - named)
            if named > len(shape):
                raise ValueError(f"einsum: term {term!r} has {named} subscripts but its "
                                 f"operand has rank {len(shape)}{where(None)}")
        elif named != len(shape):
            raise ValueError(f"einsum: term {term!r} has {named} subscripts but its operand has "
                             f"rank {len(shape)} (shape {tuple(shape)}){where(None)}")
    if ellipsis_nd > len(spare):
        raise ValueError(f"einsum: too many dimensions under the ellipsis{where(None)}")
    ellipsis = "".join(spare[:ellipsis_nd])
    labels = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            k = len(shape) - len(term.replace("...", ""))
            term = term.replace("...", ellipsis[ellipsis_nd - k:])
        labels.append(list(term))
    sizes: dict = {}
    for term, shape in zip(labels, shapes):
        for c, d in zip(term, shape):
            old = sizes.get(c, 1)
            if d != 1 and old != 1 and d != old:
                raise ValueError(f"einsum: subscript {c!r} has sizes {old} and {d} in "
                                 f"{subscripts!r}, for operands of shapes "
                                 f"{[tuple(s) for s in shapes]}{where(None)}")
            sizes[c] = max(old, d) if d != 1 else old if c in sizes else d
    if explicit:
        if out.count("...") > 1:
            raise ValueError(f"einsum: more than one ellipsis in the output{where(None)}")
        out = out.replace("...", ellipsis)
        for c in out:
            if out.count(c) > 1:
                raise ValueError(f"einsum: output subscript {c!r} appears more than once in "
                                 f"{subscripts!r}{where(None)}")
            if c not in sizes:
                raise ValueError(f"einsum: output subscript {c!r} does not appear in the "
                                 f"inputs of {subscripts!r}{where(None)}")
    else:
        counts: dict = {}
        for term in labels:
            for c in term:
                counts[c] = counts.get(c, 0) + 1
        named = sorted((c for c, k in counts.items() if k == 1 and c not in ellipsis),
                       key=lambda c: (ord(c)))
        out = ellipsis + "".join(named)
    return labels, out, sizes


def _greedy_path(labels: list, out: str, sizes: dict) -> list[tuple[int, int]]:
    """Pairs of operand positions to contract in turn (the result goes last): at each step
    the pair whose result is smallest."""
    terms = [set(t) for t in labels]
    path = []
    while len(terms) > 1:
        best = None
        for i in range(len(terms)):
            for j in range(i + 1, len(terms)):
                others = set(out).union(*[t for k, t in enumerate(terms) if k not in (i, j)])
                kept = (terms[i] | terms[j]) & others
                size = int(np.prod([sizes[c] for c in kept])) if kept else 1
                if best is None or size < best[0]:
                    best = (size, i, j, kept)
        _, i, j, kept = best
        path.append((i, j))
        terms = [t for k, t in enumerate(terms) if k not in (i, j)] + [kept]
    return path


def _sum_labels(x: Any, term: list, keep: set) -> tuple[Any, list]:
    """Sum away the axes of ``x`` whose labels are not in ``keep``."""
    from ._reductions import sum as _sum
    drop = tuple(i for i, c in enumerate(term) if c not in keep)
    if not drop:
        return x, term
    return _sum(x, axis=drop), [c for c in term if c in keep]


def _take_diagonals(x: Any, term: list) -> tuple[Any, list]:
    """A label repeated within one operand selects that operand's diagonal."""
    from ._reductions import sum as _sum
    from ._ufuncs import where as _where
    term = list(term)
    while len(set(term)) < len(term):
        seen: dict = {}
        for j, c in enumerate(term):
            if c in seen:
                i = seen[c]
                break
            seen[c] = j
        shape = get_aval(x).shape
        if shape[i] != shape[j]:
            raise ValueError(f"einsum: repeated subscript {c!r} on axes of different sizes "
                             f"{shape[i]} and {shape[j]}{where(None)}")
        n = shape[i]
        mask_shape = [1] * len(shape)
        mask_shape[i] = mask_shape[j] = n
        int_t = np.dtype(np.int32)
        on = lax.eq(lax.broadcasted_iota(int_t, (n, n), 0), lax.broadcasted_iota(int_t, (n, n), 1))
        on = lax.reshape(on, tuple(mask_shape))
        x = _sum(_where(on, x, lax.full((), 0, get_aval(x).dtype)), axis=j)
        del term[j]
    return x, term


def einsum(subscripts: Any, *operands: Any, out: None = None, optimize: Any = "auto",
           precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` is ``a @ b``. Supports explicit
    (``->``) and implicit output, ``...`` broadcasting, repeated subscripts within an operand
    (diagonals), subscripts summed away, any number of operands (contracted in pairs, the
    smallest intermediate first) and NumPy's interleaved form ``einsum(a, [0, 1], b, [1, 2])``.

    Example::

        jnp.einsum("bij,bjk->bik", jnp.ones((2, 3, 4)), jnp.ones((2, 4, 5))).shape  # (2, 3, 5)
    """
    if out is not None:
        raise NotImplementedError("einsum: the out argument is not supported (arrays are "
                                  "immutable)")
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved_to_subscripts((subscripts,) + operands)
    if not operands:
        raise ValueError(f"einsum: no operands given{where(None)}")
    check_arraylike("einsum", *operands)
    operands = promote_dtypes(*[asarray(x) for x in operands])
    labels, out_labels, sizes = _parse_einsum(subscripts, [get_aval(x).shape for x in operands])
    ops = []
    for x, term in zip(operands, labels):
        x, term = _take_diagonals(x, term)
        # A size-1 axis against a larger size elsewhere broadcasts: drop it here.
        shape = get_aval(x).shape
        ones = tuple(i for i, c in enumerate(term) if shape[i] == 1 and sizes[c] != 1)
        if ones:
            x = lax.squeeze(x, ones)
            term = [c for i, c in enumerate(term) if i not in ones]
        ops.append((x, term))
    path = _greedy_path([t for _, t in ops], out_labels, sizes)
    for i, j in path:
        (x, tx), (y, ty) = ops[i], ops[j]
        rest = [t for k, (_, t) in enumerate(ops) if k not in (i, j)]
        needed = set(out_labels).union(*[set(t) for t in rest])
        x, tx = _sum_labels(x, tx, needed | set(ty))
        y, ty = _sum_labels(y, ty, needed | set(tx))
        shared = [c for c in tx if c in ty]
        batch = [c for c in shared if c in needed]
        contract = [c for c in shared if c not in needed]
        dims = ((tuple(tx.index(c) for c in contract), tuple(ty.index(c) for c in contract)),
                (tuple(tx.index(c) for c in batch), tuple(ty.index(c) for c in batch)))
        z = lax.dot_general(x, y, dims, precision,
                            preferred_element_type=preferred_element_type)
        tz = batch + [c for c in tx if c not in shared] + [c for c in ty if c not in shared]
        ops = [op for k, op in enumerate(ops) if k not in (i, j)] + [(z, tz)]
    (x, term), = ops
    x, term = _sum_labels(x, term, set(out_labels))
    present = [c for c in out_labels if c in term]
    perm = tuple(term.index(c) for c in present)
    if perm != tuple(range(len(perm))):
        x = lax.transpose(x, perm)
    out_shape = tuple(sizes[c] for c in out_labels)
    if len(present) != len(out_labels):
        x = lax.broadcast_in_dim(x, out_shape, tuple(out_labels.index(c) for c in present))
    if preferred_element_type is not None and not path:
        x = lax.convert_element_type(x, preferred_element_type)
    return x


def einsum_path(subscripts: Any, *operands: Any, optimize: Any = "greedy") -> tuple[list, str]:
    """The order in which ``einsum`` contracts its operands: ``(["einsum_path", (i, j), ...],
    description)``, each pair naming positions in the list of operands left at that step (the
    result goes last).

    Example::

        path, text = jnp.einsum_path("ij,jk,kl->il", a, b, c)   # ['einsum_path', (0, 1), (0, 1)]
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved_to_subscripts((subscripts,) + operands)
    shapes = [tuple(np.shape(x)) if not hasattr(x, "shape") else tuple(x.shape)
              for x in operands]
    labels, out_labels, sizes = _parse_einsum(subscripts, shapes)
    path = _greedy_path(labels, out_labels, sizes)
    lines = [f"  Complete contraction:  {subscripts.replace(' ', '')}",
             f"  Contraction order (greedy, smallest intermediate first): {path}"]
    return ["einsum_path"] + path, "\n".join(lines)
