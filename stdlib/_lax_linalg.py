"""``pyree.lax.linalg``: JAX's lower-level matrix factorizations (``jax.lax.linalg``), with its
signatures and output conventions, built on ``pyree.numpy.linalg`` and ``pyree.scipy.linalg``::

    from pyree.lax import linalg
    v, w = linalg.eigh(a)              # eigenvectors first, as in JAX
    lu, pivots, permutation = linalg.lu(a)
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np


# Imported on first use: pyree.lax imports this module before pyree.numpy exists.


def _modules() -> tuple[Any, Any, Any]:
    import pyree.numpy as jnp
    from pyree.numpy import linalg as la
    from pyree.scipy import linalg as sla
    return jnp, la, sla


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """The lower Cholesky factor ``L`` (``x = L @ L^H``) of a positive definite matrix or
    stack (``jax.lax.linalg.cholesky``). The input is symmetrized (``(x + x^H) / 2``) unless
    ``symmetrize_input=False``, when only its lower triangle is read. A matrix that is not
    positive definite gives NaNs.

    Example::

        linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]]))   # [[2., 0.], [1., 2.]]
    """
    jnp, la, _ = _modules()
    x = la._square_matrices("cholesky", x, "lax.linalg")
    return jnp.linalg.cholesky(x, symmetrize_input=bool(symmetrize_input))


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Solve ``op(a) @ x = b`` (``left_side=True``) or ``x @ op(a) = b`` (the default) for
    triangular ``a`` (..., n, n), reading only its ``lower`` (or upper) triangle, the
    diagonal taken as ones when ``unit_diagonal``. ``op(a)`` is ``a``, ``a.T`` with
    ``transpose_a``, ``conj(a)`` with ``conjugate_a`` and ``a^H`` with both
    (``jax.lax.linalg.triangular_solve``). ``b`` is (..., m, n) or, left-sided, (..., n, k);
    a vector ``b`` is one right-hand side.

    Example::

        a = jnp.array([[2.0, 0.0], [1.0, 1.0]])
        linalg.triangular_solve(a, jnp.array([[2.0], [3.0]]), left_side=True, lower=True)
        # [[1.], [2.]]
    """
    jnp, la, _ = _modules()
    a = la._square_matrices("triangular_solve", a, "lax.linalg")
    a, b = jnp.asarray(a), jnp.asarray(b)
    if b.dtype != a.dtype:
        b = b.astype(a.dtype)
    vector = b.ndim == 1
    if vector:  # one right-hand side: a column (left) or a row (right)
        b = b[:, None] if left_side else b[None, :]
    if conjugate_a and jnp.iscomplexobj(a):
        a = jnp.conj(a)
    if left_side:    # op(a) x = b
        x = la._triangular_solve(a, b, bool(lower), bool(transpose_a), bool(unit_diagonal))
    else:            # x op(a) = b  <=>  op(a)^T x^T = b^T
        x = la._swap(la._triangular_solve(a, la._swap(b), bool(lower), not transpose_a,
                                          bool(unit_diagonal)))
    if vector:
        x = x[:, 0] if left_side else x[0, :]
    return x


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: Optional[bool] = None) -> tuple:
    """QR decomposition ``(q, r)`` of a matrix or stack (..., m, n) by Householder
    reflections: q (m, m) and r (m, n), or with ``full_matrices=False`` q (m, k) and r
    (k, n), k = min(m, n) (``jax.lax.linalg.qr``). ``pivoting=True`` gives ``(q, r, p)``
    with LAPACK's column order p (int32): ``x[..., :, p] = q @ r``.

    Example::

        q, r = linalg.qr(jnp.array([[3.0, 1.0], [4.0, 2.0]]))
    """
    _, la, _ = _modules()
    x = la._matrices("qr", x)
    if pivoting:
        return la._qr_pivoted_jit(x, bool(full_matrices))
    return la._qr_jit(x, bool(full_matrices))


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: Optional[tuple[int, int]] = None,
         implementation: Any = None) -> tuple[Any, Any]:
    """Eigenvectors and eigenvalues ``(v, w)`` — in that order, unlike ``jnp.linalg.eigh`` —
    of a symmetric (Hermitian) matrix or stack: ``x = v @ diag(w) @ v^H``, w ascending
    (``jax.lax.linalg.eigh``). The input is symmetrized unless ``symmetrize_input=False``,
    when only its ``lower`` (or upper) triangle is read. ``subset_by_index=(lo, hi)`` keeps
    eigenpairs lo..hi-1 (JAX supports it on TPU only). Eigenvalues always come sorted.

    Example::

        v, w = linalg.eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))   # w = [1., 3.]
    """
    jnp, la, _ = _modules()
    x = la._square_matrices("eigh", x, "lax.linalg")
    w, v = jnp.linalg.eigh(x, "L" if lower else "U", symmetrize_input=bool(symmetrize_input))
    if subset_by_index is not None:
        lo, hi = subset_by_index
        w, v = w[..., lo:hi], v[..., lo:hi]
    return v, w


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: Optional[tuple[int, int]] = None, algorithm: Any = None) -> Any:
    """Singular value decomposition of a matrix or stack (..., m, n): ``(u, s, vh)`` with
    ``x = u @ diag(s) @ vh``, s descending, or s alone when ``compute_uv`` is False
    (``jax.lax.linalg.svd``; see ``jnp.linalg.svd``).

    Example::

        linalg.svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)   # [4., 3.]
    """
    jnp, _, _ = _modules()
    out = jnp.linalg.svd(x, full_matrices=full_matrices, compute_uv=compute_uv,
                         subset_by_index=subset_by_index)
    return tuple(out) if compute_uv else out


def _lu_entry(a: Any) -> tuple[Any, Any, Any]:
    _, _, sla = _modules()
    lu, perm = sla._lu_full(a)
    return lu, sla._pivots_from_perm(perm, min(a.shape[-2:])), perm


_lu_jit = None


def lu(x: Any) -> tuple[Any, Any, Any]:
    """LU decomposition with partial pivoting of a matrix or stack (..., m, n):
    ``(lu, pivots, permutation)`` (``jax.lax.linalg.lu``): L (unit lower, below the
    diagonal) and U packed in ``lu``; ``pivots`` (k = min(m, n) entries, int32) are LAPACK's
    0-based row interchanges; ``permutation`` (m entries, int32) orders the rows so that
    ``x[permutation] = L @ U``.

    Example::

        lu, pivots, perm = linalg.lu(jnp.array([[1.0, 2.0], [3.0, 4.0]]))   # perm = [1, 0]
    """
    global _lu_jit
    _, la, _ = _modules()
    if _lu_jit is None:
        from pyree.transpiler.programs.jit import jit
        _lu_jit = jit(_lu_entry)
    return _lu_jit(la._matrices("lu", x))


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The row order (``permutation_size`` entries, int32) that LAPACK's row interchanges
    ``pivots`` (step i swaps rows i and ``pivots[i]``) make of the rows
    (``jax.lax.linalg.lu_pivots_to_permutation``).

    Example::

        linalg.lu_pivots_to_permutation(jnp.array([2, 2, 2]), 4)   # [2, 0, 1, 3]
    """
    jnp, _, sla = _modules()
    pivots = jnp.asarray(pivots).astype(np.int32)
    return sla._perm_from_pivots(pivots, int(permutation_size))


__all__ = ["cholesky", "eigh", "lu", "lu_pivots_to_permutation", "qr", "svd",
           "triangular_solve"]
