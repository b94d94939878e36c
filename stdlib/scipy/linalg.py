"""``pyree.scipy.linalg``: SciPy's linear algebra on pyree arrays: cholesky, cho_factor,
cho_solve, solve_triangular, lu, lu_factor, lu_solve, qr, eigh, svd, inv, det, solve, expm and
block_diag. The factorizations are ``pyree.numpy.linalg``'s (batched over leading dimensions,
with custom derivative rules, real or complex); this module gives them SciPy's signatures and
conventions (upper Cholesky factors by default, one triangle read, LAPACK pivot indices, and
for complex matrices LAPACK's: Hermitian ``a = U^H @ U``, ``trans=2`` for the conjugate
transpose, pivots by ``|re| + |im|``). Where JAX departs from SciPy, JAX's: ``eigh``
symmetrizes its input rather than reading one triangle::

    from pyree.scipy import linalg
    c = linalg.cho_factor(a)
    x = linalg.cho_solve(c, b)
    pyree.grad(lambda a: linalg.expm(a).sum())(a)
"""
from __future__ import annotations

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "det", "eigh", "expm", "inv", "lu",
    "lu_factor", "lu_solve", "qr", "solve", "solve_triangular", "svd",
]

from fractions import Fraction
from math import factorial
from typing import Any

import numpy as np

import pyree.numpy as jnp
from pyree import lax
from pyree._custom_derivatives import custom_jvp
from pyree._vmap import vmap
from pyree.numpy import linalg as _la
from pyree.numpy._util import check_arraylike, promote_dtypes_inexact
from pyree.transpiler.programs.jit import jit
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import get_aval

_INT = np.dtype(np.int32)


def _square(name: str, a: Any) -> Any:
    """``a`` as an inexact array of shape (..., n, n), or a clear error."""
    return _la._square_matrices(name, a, module="scipy.linalg")


def _rhs(name: str, a: Any, b: Any) -> tuple[Any, Any, bool]:
    """``a`` (..., n, n) and ``b`` promoted together, ``b`` as a stack of matrices
    (..., n, k), and whether it was a vector: as JAX, ``b`` is a vector (..., n) exactly when it
    has one dimension fewer than ``a``."""
    check_arraylike(f"scipy.linalg.{name}", b)
    a, b = promote_dtypes_inexact(a, jnp.asarray(b))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    vector = len(b_shape) == len(a_shape) - 1
    if vector:
        b = lax.reshape(b, b_shape + (1,))
        b_shape = b_shape + (1,)
    if len(b_shape) < 2 or b_shape[-2] != a_shape[-1]:
        raise ValueError(f"scipy.linalg.{name}: shapes {a_shape} and "
                         f"{get_aval(b).shape if not vector else b_shape[:-1]} do not match: "
                         f"b needs {a_shape[-1]} rows{where(None)}")
    return a, b, vector


def _unvector(x: Any, vector: bool) -> Any:
    return lax.reshape(x, get_aval(x).shape[:-1]) if vector else x


# -- Cholesky --------------------------------------------------------------------------------------

def _cholesky_entry(a: Any, lower: bool) -> Any:
    # One triangle is read (the other mirrored onto it, conjugated), as in SciPy and JAX; as
    # JAX, the upper factor is the conjugate transpose of a^H's lower one, and the derivative
    # takes the whole tangent (a^H's: see _la._triangle_input).
    low = _la._cholesky(_la._hermitian_input(a if lower else _la._ct(a), True, False))
    return low if lower else _la._ct(low)


_cholesky_jit = jit(_cholesky_entry, static_argnums=(1,))


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
    """The Cholesky factor of a symmetric (complex: Hermitian) positive definite matrix (or
    stack): upper ``U`` with ``a = U^H @ U`` by default, lower ``L`` with ``a = L @ L^H`` when
    ``lower`` (``^H``: the conjugate transpose, the transpose of a real matrix). Only that
    triangle of ``a`` is read (the imaginary part of its diagonal ignored, as LAPACK). Not
    positive definite: a matrix of NaNs (as JAX).

    Example::

        linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]]))   # [[2., 1.], [0., 2.]]
    """
    return _cholesky_jit(_square("cholesky", a), bool(lower))


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
    """``(c, lower)`` for ``cho_solve``: ``c`` is ``cholesky(a, lower)`` (its other triangle
    zero, where SciPy leaves arbitrary values). Real or complex (Hermitian).

    Example::

        c = linalg.cho_factor(jnp.array([[4.0, 2.0], [2.0, 5.0]]))
    """
    return cholesky(a, lower=lower), bool(lower)


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """Solve ``a @ x = b`` from ``cho_factor(a)`` (``a = c^H c`` or ``c c^H``); ``b`` is
    (..., n) or (..., n, k).

    Example::

        a = jnp.array([[4.0, 2.0], [2.0, 5.0]])
        linalg.cho_solve(linalg.cho_factor(a), jnp.array([6.0, 7.0]))   # [1., 1.]
    """
    c, lower = c_and_lower
    c = _square("cho_solve", c)
    c, b, vector = _rhs("cho_solve", c, b)
    # lower: a = L L^H, x = L^-H L^-1 b; upper: a = U^H U, x = U^-1 U^-H b.
    y = _la._triangular_solve(c, b, lower, transpose=not lower, conjugate=True)
    x = _la._triangular_solve(c, y, lower, transpose=lower, conjugate=True)
    return _unvector(x, vector)


# -- triangular solves -----------------------------------------------------------------------------

# trans -> (transpose, conjugate): 2 or 'C' solves with the conjugate transpose.
_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
          2: (True, True), "C": (True, True)}


def solve_triangular(a: Any, b: Any, trans: Any = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug: Any = None,
                     check_finite: bool = True) -> Any:
    """Solve ``a @ x = b`` for triangular ``a`` (..., n, n) by substitution, reading only the
    triangle ``lower`` names (the diagonal taken as ones when ``unit_diagonal``). ``trans`` 1
    or 'T' solves ``a.T @ x = b``, 2 or 'C' ``a^H @ x = b`` (the conjugate transpose: the
    same for real matrices). Real or complex. ``b`` is (..., n) (one dimension fewer than
    ``a``) or (..., n, k). Differentiable in ``a`` and ``b``.

    Example::

        a = jnp.array([[2.0, 0.0], [1.0, 1.0]])
        linalg.solve_triangular(a, jnp.array([2.0, 3.0]), lower=True)   # [1., 2.]
    """
    if trans not in _TRANS:
        raise ValueError(f"scipy.linalg.solve_triangular: trans must be 0, 1, 2, 'N', 'T' "
                         f"or 'C', got {trans!r}{where(None)}")
    a = _square("solve_triangular", a)
    a, b, vector = _rhs("solve_triangular", a, b)
    transpose, conjugate = _TRANS[trans]
    x = _la._triangular_solve(a, b, bool(lower), transpose, bool(unit_diagonal), conjugate)
    return _unvector(x, vector)


# -- LU --------------------------------------------------------------------------------------------

def _lu_square_body(a: Any) -> tuple[Any, Any]:
    lu, perm, _ = _la._lu_factor(a)
    return lu, perm


_lu_square = custom_jvp(_lu_square_body)


@_lu_square.defjvp
def _lu_square_jvp(primals, tangents):
    # a[perm] = L U, so with X = L^-1 da[perm] U^-1: dL = L tril(X, -1), dU = triu(X) U.
    (a,), (da,) = primals, tangents
    lu, perm = _lu_square(a)
    n = a.shape[-1]
    zero = jnp.zeros((), a.dtype)
    strict = _la._triangle(n, True, strict=True)
    eye = _la._identity_like(lu)
    low = jnp.where(strict, lu, zero) + eye
    up = jnp.where(_la._triangle(n, False), lu, zero)
    rows = _permutation_rows(perm, _la._real_dtype(a.dtype))
    x = _la._matmul(_la._forward_sub(low, eye, unit_diagonal=True),
                    _la._matmul(_la._matmul(rows, da), _la._back_sub(up, eye)))
    dlu = (_la._matmul(low, jnp.where(strict, x, zero))
           + _la._matmul(jnp.where(_la._triangle(n, False), x, zero), up))
    return (lu, perm), (dlu, jnp.zeros_like(perm))


def _permutation_rows(perm: Any, dtype: Any) -> Any:
    """The matrix P (..., k, m) with ``P @ x == x[..., perm, :]`` (a select, not a convert of
    bools: see ``pyree.numpy.linalg._lu_solve``)."""
    m = perm.shape[-1]
    return jnp.where(perm[..., :, None] == _la._index(m), jnp.ones((), dtype),
                     jnp.zeros((), dtype))


def _lu_full(a: Any) -> tuple[Any, Any]:
    """``(lu, perm)`` for ``a`` (..., m, n): ``a[perm] = L @ U`` with L (m, k) unit lower and U
    (k, n) upper, k = min(m, n), packed in ``lu`` (m, n); ``perm`` has m entries. A rectangular
    matrix is factorized as a square one padded with zero columns (m > n: the extra steps find
    nothing to eliminate) or zero rows (m < n: a zero row is never the first of the largest
    pivot candidates while real rows remain, so the first m pivots are a's rows)."""
    m, n = a.shape[-2:]
    if m == n:
        return _lu_square(a)
    lead = ((0, 0, 0),) * (a.ndim - 2)
    zero = jnp.zeros((), a.dtype)
    if m > n:
        lu, perm = _la._lu_factor(lax.pad(a, zero, lead + ((0, 0, 0), (0, m - n, 0))))[:2]
        return lu[..., :, :n], perm
    lu, perm = _la._lu_factor(lax.pad(a, zero, lead + ((0, n - m, 0), (0, 0, 0))))[:2]
    return lu[..., :m, :], perm[..., :m]


def _lu_entry(a: Any, permute_l: bool) -> Any:
    lu, perm = _lu_full(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    zero = jnp.zeros((), a.dtype)
    rows_l = lax.broadcasted_iota(_INT, (m, k), 0)
    cols_l = lax.broadcasted_iota(_INT, (m, k), 1)
    low = jnp.where(rows_l > cols_l, lu[..., :, :k],
                    jnp.where(rows_l == cols_l, jnp.ones((), a.dtype), zero))
    rows_u = lax.broadcasted_iota(_INT, (k, n), 0)
    cols_u = lax.broadcasted_iota(_INT, (k, n), 1)
    up = jnp.where(rows_u <= cols_u, lu[..., :k, :], zero)
    # a = P L U with P = (the row selection by perm)^T; real for complex a (as SciPy's and
    # JAX's).
    p = _la._swap(_permutation_rows(perm, _la._real_dtype(a.dtype)))
    if permute_l:
        return _la._matmul(p, low), up
    return p, low, up


_lu_jit = jit(_lu_entry, static_argnums=(1,))


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False,
       check_finite: bool = True) -> tuple:
    """LU decomposition with partial pivoting of a matrix (..., m, n): ``(p, l, u)`` with
    ``a = p @ l @ u``, p a permutation matrix, l (m, k) unit lower triangular and u (k, n)
    upper, k = min(m, n); ``permute_l=True`` gives ``(p @ l, u)``. Real or complex (pivots by
    ``|re| + |im|``, as LAPACK, so p is SciPy's). Differentiable (square matrices by a
    closed-form rule, rectangular ones through the factorization).

    Example::

        p, l, u = linalg.lu(jnp.array([[1.0, 2.0], [3.0, 4.0]]))   # l = [[1, 0], [1/3, 1]]
    """
    check_arraylike("scipy.linalg.lu", a)
    return _lu_jit(_la._matrices("lu", a), bool(permute_l))


def _pivots_from_perm(perm: Any, k: int) -> Any:
    """LAPACK's row interchanges (step i swapped rows i and piv[i]) that put the rows in the
    order ``perm``: replay them, tracking which row sits where."""
    m = perm.shape[-1]
    idx = _la._index(m)

    def step(i, carry):
        rows, piv = carry      # rows[position] = the original row there now
        target = _la._entry(perm, i)
        position = jnp.sum(jnp.where(rows == target[..., None], idx, 0), axis=-1).astype(_INT)
        here = _la._entry(rows, i)
        rows = jnp.where(idx == i, target[..., None],
                         jnp.where(idx == position[..., None], here[..., None], rows))
        piv = jnp.where(idx == i, position[..., None], piv)
        return rows.astype(_INT), piv.astype(_INT)

    start = lax.broadcast_in_dim(idx, perm.shape, (perm.ndim - 1,))
    _, piv = _la._loop(k, step, (start, start))
    return piv[..., :k]


def _perm_from_pivots(piv: Any, m: int) -> Any:
    """The row order ``perm`` that LAPACK's interchanges ``piv`` (k entries) make of m rows."""
    k = piv.shape[-1]
    idx = _la._index(m)

    def step(i, rows):
        target = _la._entry(piv, i)
        here, there = _la._entry(rows, i), jnp.sum(
            jnp.where(idx == target[..., None], rows, 0), axis=-1).astype(_INT)
        rows = jnp.where(idx == i, there[..., None],
                         jnp.where(idx == target[..., None], here[..., None], rows))
        return rows.astype(_INT)

    start = lax.broadcast_in_dim(idx, piv.shape[:-1] + (m,), (piv.ndim - 1,))
    return _la._loop(k, step, start)


def _lu_factor_entry(a: Any) -> tuple[Any, Any]:
    lu, perm = _lu_full(a)
    m, n = a.shape[-2:]
    return lu, _pivots_from_perm(perm, min(m, n))


_lu_factor_jit = jit(_lu_factor_entry)


def lu_factor(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> tuple[Any, Any]:
    """``(lu, piv)``: L (unit lower, below the diagonal) and U packed in one matrix, and
    LAPACK's 0-based pivot indices (row i was interchanged with row ``piv[i]``), int32.

    Example::

        lu, piv = linalg.lu_factor(jnp.array([[1.0, 2.0], [3.0, 4.0]]))   # piv = [1, 1]
    """
    check_arraylike("scipy.linalg.lu_factor", a)
    return _lu_factor_jit(_la._matrices("lu_factor", a))


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: Any = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
    """Solve ``a @ x = b`` (``a.T @ x = b`` for ``trans`` 1 or 'T', ``a^H @ x = b`` for 2 or
    'C') from ``lu_factor(a)``; ``b`` is (..., n) or (..., n, k).

    Example::

        a = jnp.array([[1.0, 2.0], [3.0, 4.0]])
        linalg.lu_solve(linalg.lu_factor(a), jnp.array([5.0, 11.0]))   # [1., 2.]
    """
    if trans not in _TRANS:
        raise ValueError(f"scipy.linalg.lu_solve: trans must be 0, 1, 2, 'N', 'T' or 'C', "
                         f"got {trans!r}{where(None)}")
    factors, piv = lu_and_piv
    factors = _square("lu_solve", factors)
    factors, b, vector = _rhs("lu_solve", factors, b)
    perm = _perm_from_pivots(jnp.asarray(piv).astype(_INT), get_aval(factors).shape[-1])
    rows = _permutation_rows(perm, _la._real_dtype(get_aval(factors).dtype))
    transpose, conjugate = _TRANS[trans]
    if not transpose:   # a = P^T L U: x = U^-1 L^-1 P b
        y = _la._triangular_solve(factors, _la._matmul(rows, b), True, unit_diagonal=True)
        x = _la._triangular_solve(factors, y, False)
    else:               # a^T = U^T L^T P: x = P^T L^-T U^-T b (^H for a^H)
        y = _la._triangular_solve(factors, b, False, transpose=True, conjugate=conjugate)
        z = _la._triangular_solve(factors, y, True, transpose=True, unit_diagonal=True,
                                  conjugate=conjugate)
        x = _la._matmul(_la._swap(rows), z)
    return _unvector(x, vector)


# -- QR, eigh, SVD ---------------------------------------------------------------------------------

def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> tuple:
    """QR decomposition by Householder reflections, with SciPy's modes: 'full' gives Q (m, m)
    and R (m, n); 'economic' Q (m, k) and R (k, n), k = min(m, n); 'r' the tuple ``(R,)``
    with R (m, n). Real or complex (Q unitary, R's diagonal real, as LAPACK's).
    ``pivoting=True`` adds P, LAPACK's (geqp3) column order (int32, (..., n)), with
    ``a[..., :, P] = Q @ R`` and R's diagonal non-increasing in magnitude: ``(Q, R, P)``, or
    ``(R, P)`` for mode 'r'. Differentiable as JAX's: for m >= n and mode 'economic' (or
    square a), P held fixed.

    Example::

        q, r = linalg.qr(jnp.array([[3.0, 1.0], [4.0, 2.0]]))
        q, r, p = linalg.qr(jnp.array([[1.0, 3.0], [0.0, 4.0]]), pivoting=True)   # p = [1, 0]
    """
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"scipy.linalg.qr: unsupported mode {mode!r} (use 'full', "
                         f"'economic' or 'r'){where(None)}")
    a = _la._matrices("qr", a)
    if pivoting:
        q, r, p = _la._qr_pivoted_jit(a, mode != "economic")
        return (r, p) if mode == "r" else (q, r, p)
    q, r = _la._qr_jit(a, mode != "economic")
    return (r,) if mode == "r" else (q, r)


def _generalized_eigh(a: Any, b: Any, lower: bool) -> tuple[Any, Any]:
    """``a x = w b x`` for symmetric (Hermitian) a and positive definite b: with b = L L^H,
    the eigenvectors y of L^-1 a L^-H give x = L^-H y, normalized so that x^H b x = I (as
    SciPy's)."""
    low = _la._cholesky(_la._symmetric_input(b, lower, False))
    a = _la._symmetric_input(a, lower, False)
    half = _la._solve_triangular(low, a, True)                      # L^-1 a
    c = _la._solve_triangular(low, _la._ct(half), True)              # L^-1 a L^-H
    w, y = _la._eigh((c + _la._ct(c)) * 0.5)
    return w, _la._solve_triangular(_la._ct(low), y, False)


def _eigh_entry(a: Any, b: Any, lower: bool) -> tuple[Any, Any]:
    if b is None:   # symmetrized, as JAX's (lower is then moot)
        return _la._eigh(_la._hermitian_input(a, lower, True))
    return _generalized_eigh(a, b, lower)


_eigh_jit = jit(_eigh_entry, static_argnums=(2,))


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: Any = None, type: int = 1, check_finite: bool = True) -> Any:
    """Eigenvalues (ascending, real) and eigenvectors (columns) of a symmetric (complex:
    Hermitian) matrix or stack, by Jacobi rotations (see ``jnp.linalg.eigh``). As JAX's
    (unlike SciPy, which reads one triangle) the input is symmetrized, ``(a + a^H) / 2``, and
    ``lower`` does not matter; gradients of non-symmetric inputs are JAX's. With ``b``
    (positive definite; JAX has no such case) it solves ``a x = w b x`` (type 1) from the
    ``lower`` (default) or upper triangles of a and b, eigenvectors normalized to
    ``x^H @ b @ x = I``. ``eigvals_only=True`` gives w alone.

    Example::

        w, v = linalg.eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))   # w = [1., 3.]
    """
    if eigvals is not None:
        raise NotImplementedError(f"scipy.linalg.eigh: eigvals (a subset) is not "
                                  f"supported{where(None)}")
    if type != 1:
        raise NotImplementedError(f"scipy.linalg.eigh: only type=1 (a x = w b x) is "
                                  f"supported, got type={type}{where(None)}")
    a = _square("eigh", a)
    if b is None and eigvals_only:
        return _la._eigvalsh_jit(a, bool(lower), True)
    if b is not None:
        b = _square("eigh", b)
        a, b = promote_dtypes_inexact(a, b)
        if get_aval(b).shape[-2:] != get_aval(a).shape[-2:]:
            raise ValueError(f"scipy.linalg.eigh: a and b must have the same shape, got "
                             f"{get_aval(a).shape} and {get_aval(b).shape}{where(None)}")
    w, v = _eigh_jit(a, b, bool(lower))
    return w if eigvals_only else (w, v)


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> Any:
    """Singular value decomposition ``a = u @ diag(s) @ vh`` (see ``jnp.linalg.svd``):
    ``(u, s, vh)``, or s alone when ``compute_uv`` is False.

    Example::

        u, s, vh = linalg.svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]))   # s = [4., 3.]
    """
    out = _la.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return tuple(out) if compute_uv else out


# -- inv, det, solve -------------------------------------------------------------------------------

def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The inverse of a square matrix or stack, real or complex (LU with partial pivoting).

    Example::

        linalg.inv(jnp.array([[2.0, 0.0], [0.0, 4.0]]))   # [[0.5, 0.], [0., 0.25]]
    """
    return _la.inv(a)


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The determinant of a square matrix or stack, real or complex.

    Example::

        linalg.det(jnp.array([[1.0, 2.0], [3.0, 4.0]]))   # -2.
    """
    return _la.det(a)


_ASSUME = ("gen", "general", "sym", "symmetric", "her", "hermitian", "pos", "positive definite")


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: Any = None, check_finite: bool = True,
          assume_a: str = "gen") -> Any:
    """Solve ``a @ x = b``, real or complex. ``assume_a='gen'`` (default): LU with partial
    pivoting, b as ``jnp.linalg.solve`` takes it; 'sym': the symmetric matrix (``a.T == a``)
    of a's ``lower`` or upper triangle, by LU; 'her': the Hermitian one (``a^H == a``; the
    same for real a); 'pos': a symmetric (Hermitian) positive definite matrix, by Cholesky of
    that triangle, with b (..., n) (one dimension fewer than a) or (..., n, k).

    Example::

        a = jnp.array([[4.0, 2.0], [2.0, 5.0]])
        linalg.solve(a, jnp.array([6.0, 7.0]), assume_a="pos")   # [1., 1.]
    """
    if assume_a not in _ASSUME:
        raise ValueError(f"scipy.linalg.solve: unsupported assume_a {assume_a!r} (use "
                         f"'gen', 'sym', 'her' or 'pos'){where(None)}")
    a = _square("solve", a)
    if assume_a in ("gen", "general"):
        return _la.solve(a, b)
    if assume_a in ("sym", "symmetric", "her", "hermitian"):
        # (For complex a, 'sym' means a.T == a, 'her' a^H == a.)
        hermitian = assume_a in ("her", "hermitian")
        return _la.solve(_la._symmetric_input(a, bool(lower), False, hermitian), b)
    return cho_solve(cho_factor(a, lower=lower), b)


# -- expm ------------------------------------------------------------------------------------------

def _pade_coefficients(m: int) -> list[float]:
    """b_j of the [m/m] Padé approximant of exp: p(x) = sum b_j x^j, q(x) = p(-x), b_0 = 1."""
    return [float(Fraction(factorial(2 * m - j) * factorial(m),
                           factorial(2 * m) * factorial(j) * factorial(m - j)))
            for j in range(m + 1)]


# Higham (2005), "The scaling and squaring method for the matrix exponential revisited": the
# largest 1-norm for which the [m/m] approximant is accurate to the unit roundoff.
_THETAS = {
    np.dtype(np.float64): ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1),
                           (7, 9.504178996162932e-1), (9, 2.097847961257068e0),
                           (13, 5.371920351148152e0)),
    np.dtype(np.float32): ((3, 4.258730016922831e-1), (5, 1.880152677804762e0),
                           (7, 3.925724783138660e0)),
}


def _pade_parts(m: int, a: Any, powers: dict) -> tuple[Any, Any]:
    """(U, V), the odd and even parts of the [m/m] numerator: p(a) = V + U, q(a) = V - U."""
    b = _pade_coefficients(m)
    eye = powers[0]
    if m == 13:   # Higham's evaluation: degree 13 from a^2, a^4, a^6 in 6 products.
        a2, a4, a6 = powers[2], powers[4], powers[6]
        u = _la._matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2) \
            + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye
        v = _la._matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2) \
            + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
        return _la._matmul(a, u), v
    u = sum(b[j] * powers[j - 1] for j in range(1, m + 1, 2))
    v = sum(b[j] * powers[j] for j in range(0, m + 1, 2))
    return _la._matmul(a, u), v


def _expm_one(a: Any, max_squarings: int) -> Any:
    """exp(a) of one matrix: scale a by 2^-s to within the largest degree's reach, pick the
    lowest-degree Padé approximant accurate there, and square s times. Written with ordinary
    differentiable operations (``solve``'s own rule, a ``while`` loop for the squarings), so
    its derivative is the Fréchet derivative of the same approximation."""
    real = _la._real_dtype(a.dtype)   # (complex64 takes float32's degrees)
    thetas = _THETAS[real]
    norm = lax.stop_gradient(jnp.max(jnp.sum(jnp.abs(a), axis=-2), axis=-1))
    top = thetas[-1][1]
    squarings = jnp.maximum(jnp.ceil(jnp.log2(norm / top)), 0)
    squarings = jnp.where(jnp.isfinite(squarings), squarings, 0).astype(_INT)
    a = a * lax.stop_gradient(jnp.exp2(-squarings.astype(real))).astype(a.dtype)
    degree = jnp.sum(norm > jnp.asarray([t for _, t in thetas[:-1]], real)).astype(_INT)

    def approximant(m):
        def branch(a):
            # Only even powers appear: U = a (b_1 + b_3 a^2 + ...), V = b_0 + b_2 a^2 + ...
            powers = {0: _la._identity_like(a), 2: _la._matmul(a, a)}
            for j in range(4, 7 if m == 13 else m, 2):
                powers[j] = _la._matmul(powers[j - 2], powers[2])
            return _pade_parts(m, a, powers)
        return branch

    # The branches give p and q's parts; one solve after them keeps one LU in the program.
    u, v = lax.switch(degree, [approximant(m) for m, _ in thetas], a)
    r = _la._solve(v - u, v + u)

    def square(state):
        k, r = state
        return k + 1, _la._matmul(r, r)

    _, r = lax.while_loop(lambda state: state[0] < squarings, square,
                          (lax.full((), 0, _INT), r))
    # More squarings than allowed: NaN, as JAX.
    return jnp.where(squarings > max_squarings, jnp.full_like(r, jnp.nan), r)


def _expm_entry(a: Any, max_squarings: int) -> Any:
    batch = a.shape[:-2]
    fn = lambda x: _expm_one(x, max_squarings)  # noqa: E731
    for _ in batch:
        fn = vmap(fn)
    return fn(a)


_expm_jit = jit(_expm_entry, static_argnums=(1,))


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """The matrix exponential of a square matrix or stack, by scaling and squaring with a
    Padé approximant (Higham 2005: degrees 3 to 13 in float64 and complex128, 3 to 7 in
    float32 and complex64). More than ``max_squarings`` squarings needed (a huge norm): NaN,
    as JAX. Differentiable.

    Example::

        linalg.expm(jnp.array([[0.0, 1.0], [0.0, 0.0]]))   # [[1., 1.], [0., 1.]]
    """
    return _expm_jit(_square("expm", A), int(max_squarings))


# -- block_diag ------------------------------------------------------------------------------------

def block_diag(*arrs: Any) -> Any:
    """The block diagonal matrix of the given arrays (scalars and 1-d arrays count as one
    row), the blocks' dtypes promoted; no arrays give an empty (1, 0) matrix, as SciPy.

    Example::

        linalg.block_diag(jnp.ones((2, 2)), 3.0).shape   # (3, 3)
    """
    if not arrs:
        return jnp.zeros((1, 0))
    check_arraylike("scipy.linalg.block_diag", *arrs)
    blocks = [jnp.atleast_2d(jnp.asarray(x)) for x in arrs]
    for i, x in enumerate(blocks):
        if get_aval(x).ndim != 2:
            raise ValueError(f"scipy.linalg.block_diag: arguments must have at most 2 "
                             f"dimensions; argument {i} has shape {get_aval(x).shape}"
                             f"{where(None)}")
    dtype = jnp.result_type(*blocks)
    width = sum(get_aval(x).shape[1] for x in blocks)
    rows, left = [], 0
    for x in blocks:
        r, c = get_aval(x).shape
        rows.append(jnp.concatenate([jnp.zeros((r, left), dtype), x.astype(dtype),
                                     jnp.zeros((r, width - left - c), dtype)], axis=1))
        left += c
    return jnp.concatenate(rows, axis=0)
