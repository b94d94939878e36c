"""``pyree.numpy.linalg``: inv, solve, det, slogdet, cholesky, norm, matrix_power, multi_dot
and NumPy 2's aliases. The factorizations (LU with partial pivoting, Cholesky) are composed
from primitives, batched over leading dimensions, and carry custom derivative rules so that
gradients never differentiate through pivoting::

    x = jnp.linalg.solve(a, b)
    pyree.grad(lambda a: jnp.linalg.slogdet(a).logabsdet)(a)     # = inv(a).T
"""
from __future__ import annotations

__all__ = [
    "SlogdetResult", "cholesky", "cross", "det", "diagonal", "inv", "matmul", "matrix_norm",
    "matrix_power", "matrix_transpose", "multi_dot", "norm", "outer", "slogdet", "solve",
    "tensordot", "trace", "vecdot", "vector_norm",
]

import operator
from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np

import pyree.numpy as jnp
from pyree import lax
from pyree._custom_derivatives import custom_jvp
from pyree.transpiler.jit import jit
from pyree.transpiler.source import where
from pyree.transpiler.trace import get_aval

from ._util import (broadcast_shapes, broadcast_to_shape, canonical_axis, check_arraylike,
                    promote_dtypes_inexact)

_INT = np.dtype(np.int32)

# Factorizations loop over the matrix size n. Up to this size the loop is unrolled in Python;
# beyond it a while loop keeps the program small. Measured (LU + solve, IREE 3.13, 2 cores):
# unrolled, n = 3 compiled in 1.5 s, n = 8 in 4.2 s, n = 16 in 11.5 s; the while loop in about
# 1.2 s for any n from 3 to 64, at a few microseconds a step.
UNROLL_MAX = 2


def _loop(n: int, body: Callable, carry: Any) -> Any:
    """``for k in range(n): carry = body(k, carry)``; ``k`` is a Python int or a traced int32.

    Beyond ``UNROLL_MAX`` steps this is a plain ``while_loop``, not ``fori_loop``: the counted
    loop's lowering unrolls chunks of steps, which cost compile time here for nothing, and
    IREE 3.13 gave wrong values for an LU's loop followed by a substitution's loop in that form.
    (Unrolling a few steps per turn of the loop measured no faster, and slower for LU: see
    ``_lu_factor`` on fusion.)
    """
    if n <= UNROLL_MAX:
        for k in range(n):
            carry = body(k, carry)
        return carry

    def step(state):
        k, inner = state
        return k + 1, body(k, inner)

    start = lax.full((), 0, _INT)
    return lax.while_loop(lambda state: state[0] < n, step, (start, carry))[1]


def _index(n: int) -> Any:
    return lax.iota(_INT, n)


def _column(x: Any, k: Any) -> Any:
    """``x[..., :, k]`` for a static or traced ``k``: a dynamic slice, O(n) reads (a masked sum
    read the whole matrix, several times a step)."""
    return _entry(x, k)


def _row(x: Any, k: Any) -> Any:
    """``x[..., k, :]`` for a static or traced ``k``."""
    lead = x.ndim - 2
    sliced = lax.dynamic_slice(x, (0,) * lead + (k, 0), x.shape[:-2] + (1, x.shape[-1]))
    return lax.reshape(sliced, x.shape[:-2] + (x.shape[-1],))


def _entry(v: Any, k: Any) -> Any:
    """``v[..., k]``."""
    sliced = lax.dynamic_slice(v, (0,) * (v.ndim - 1) + (k,), v.shape[:-1] + (1,))
    return lax.reshape(sliced, v.shape[:-1])


def _rows_at(x: Any, index: Any) -> Any:
    """``x[..., index[..., i], :]`` for each i: rows picked per matrix (a gather, O(rows * m))."""
    picked = jnp.broadcast_to(index[..., :, None], index.shape + (x.shape[-1],))
    return jnp.take_along_axis(x, picked, axis=-2, mode="clip")


def _lu_factor(a: Any) -> tuple[Any, Any, Any]:
    """LU with partial pivoting of ``a`` (..., n, n): (lu, perm, sign) with
    ``a[..., perm, :] == L @ U``, L unit lower (below lu's diagonal), U upper (lu's upper
    triangle) and sign the permutation's parity (+1/-1). A zero pivot column is left as is
    (as LAPACK's getrf does), so singular matrices give a zero on U's diagonal.

    Rows are not moved while factorizing: each step eliminates column k from the rows not yet
    used as pivots, in one elementwise pass over the matrix, and records its pivot row; the
    rows are put in pivot order once, at the end. ``order`` follows the row exchanges LAPACK
    would make (for the sign). The next step's pivot row is read at the end of a step and
    carried: read where it is used, the gather would be fused into the elementwise pass, which
    IREE 3.13 then compiles to scalar code (several times slower)."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    idx = _index(n)
    cols = lax.broadcasted_iota(_INT, (1, n), 1)

    def pivot_row(a, k, free):
        """The pivot of column k among the free rows, and its row."""
        col = jnp.where(free, jnp.abs(_column(a, k)), -1)
        p = jnp.argmax(col, axis=-1).astype(_INT)
        return p, _rows_at(a, p[..., None])[..., 0, :]

    def step(k, carry):
        a, p, row, order, free, sign = carry
        col = _column(a, k)
        pivot = _entry(row, k)
        free = free & (idx != p[..., None])
        safe = jnp.where(pivot == 0, jnp.ones_like(pivot), pivot)
        lower = jnp.where(free, col / safe[..., None], 0)
        upper = jnp.where(idx > k, row, 0)
        a = jnp.where((cols == k) & free[..., :, None], lower[..., :, None],
                      a - lower[..., :, None] * upper[..., None, :])
        # The exchange LAPACK would make: position k with p's position in ``order``.
        displaced = _entry(order, k)
        p_position = jnp.sum(jnp.where(order == p[..., None], idx, 0), axis=-1)
        order = jnp.where(idx == k, p[..., None],
                          jnp.where(idx == p_position[..., None], displaced[..., None], order))
        order = order.astype(_INT)
        sign = jnp.where(displaced != p, -sign, sign)
        # (After the last step this reads column n - 1 again, unused.)
        p, row = pivot_row(a, k + 1, free)
        return a, p, row, order, free, sign

    order = lax.broadcast_in_dim(idx, batch + (n,), (len(batch),))
    free = jnp.ones(batch + (n,), bool)
    sign = jnp.ones(batch, a.dtype)
    p, row = pivot_row(a, 0, free)
    a, _, _, order, _, sign = _loop(n, step, (a, p, row, order, free, sign))
    return _rows_at(a, order), order, sign


def _forward_sub(t: Any, b: Any, unit_diagonal: bool) -> Any:
    """Solve ``t @ x = b`` for lower-triangular ``t`` (..., n, n), ``b`` (..., n, m)."""
    n = t.shape[-1]
    idx = _index(n)
    rows = lax.broadcasted_iota(_INT, (n, 1), 0)

    def step(k, b):
        tcol = _column(t, k)
        xk = _row(b, k)
        if not unit_diagonal:
            xk = xk / _entry(tcol, k)[..., None]
        rest = jnp.where(idx > k, tcol, 0)
        return jnp.where(rows == k, xk[..., None, :], b - rest[..., :, None] * xk[..., None, :])

    return _loop(n, step, b)


def _back_sub(t: Any, b: Any) -> Any:
    """Solve ``t @ x = b`` for upper-triangular ``t`` (..., n, n), ``b`` (..., n, m)."""
    n = t.shape[-1]
    idx = _index(n)
    rows = lax.broadcasted_iota(_INT, (n, 1), 0)

    def step(i, b):
        k = n - 1 - i
        tcol = _column(t, k)
        xk = _row(b, k) / _entry(tcol, k)[..., None]
        rest = jnp.where(idx < k, tcol, 0)
        return jnp.where(rows == k, xk[..., None, :], b - rest[..., :, None] * xk[..., None, :])

    return _loop(n, step, b)


def _lu_solve(lu: Any, perm: Any, b: Any) -> Any:
    """Solve ``a @ x = b`` from ``a``'s LU factors; ``b`` is (..., n, m), batch as ``lu``'s."""
    n = lu.shape[-1]
    # A where, not a bool->float convert: IREE 3.13 miscompiles convert(i1) feeding a dot
    # (true becomes -1).
    one, zero = jnp.ones((), b.dtype), jnp.zeros((), b.dtype)
    permutation = jnp.where(jnp.expand_dims(perm, -1) == _index(n), one, zero)
    y = _forward_sub(lu, jnp.matmul(permutation, b), unit_diagonal=True)
    return _back_sub(lu, y)


def _cholesky_factor(a: Any) -> Any:
    """The lower Cholesky factor of symmetric ``a`` (..., n, n); all NaN where ``a`` is not
    positive definite (as JAX). Step j writes column j of the factor over column j of the
    matrix in the same elementwise pass as its update (later steps leave column j alone), and
    the factor is the lower triangle at the end."""
    n = a.shape[-1]
    idx = _index(n)
    rows = lax.broadcasted_iota(_INT, (n, 1), 0)
    cols = lax.broadcasted_iota(_INT, (1, n), 1)

    def step(j, a):
        col = _column(a, j)
        root = jnp.sqrt(_entry(col, j))
        lcol = jnp.where(idx >= j, col / root[..., None], 0)
        return jnp.where(cols == j, lcol[..., :, None],
                         a - lcol[..., :, None] * lcol[..., None, :])

    a = _loop(n, step, a)
    low = jnp.where(rows >= cols, a, jnp.zeros((), a.dtype))
    ok = jnp.all(jnp.isfinite(low), axis=(-2, -1), keepdims=True)
    return jnp.where(ok, low, jnp.nan)


# -- helpers of the public functions -------------------------------------------------------------

def _diagonal(x: Any) -> Any:
    """The main diagonal of the last two axes of square ``x`` (..., n, n) -> (..., n)."""
    n = x.shape[-1]
    on = lax.broadcasted_iota(_INT, (n, n), 0) == lax.broadcasted_iota(_INT, (n, n), 1)
    return jnp.sum(jnp.where(on, x, jnp.zeros((), x.dtype)), axis=-1)


def _identity_like(a: Any) -> Any:
    # A select, not jnp.eye: eye converts a bool mask to floats, and IREE 3.13 turns
    # convert(i1 -> float) into -1 for true when it feeds a dot (see _lu_solve).
    n = a.shape[-1]
    on = lax.broadcasted_iota(_INT, (n, n), 0) == lax.broadcasted_iota(_INT, (n, n), 1)
    eye = jnp.where(on, jnp.ones((), a.dtype), jnp.zeros((), a.dtype))
    return lax.broadcast_in_dim(eye, a.shape, (a.ndim - 2, a.ndim - 1))


def _swap(x: Any) -> Any:
    return jnp.swapaxes(x, -1, -2)


def _square_matrices(name: str, a: Any) -> Any:
    """``a`` as an inexact array of shape (..., n, n), or a clear error."""
    check_arraylike(f"jnp.linalg.{name}", a)
    (a,) = promote_dtypes_inexact(jnp.asarray(a))
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"jnp.linalg.{name}: argument must be a square matrix or a stack of "
                         f"them, of shape (..., n, n); got shape {shape}{where(None)}")
    _no_complex(name, a)
    return a


def _no_complex(name: str, *xs: Any) -> None:
    for x in xs:
        if get_aval(x).dtype.kind == "c":
            raise NotImplementedError(f"jnp.linalg.{name}: complex matrices are not supported "
                                      f"yet{where(None)}")


# -- inv, solve ------------------------------------------------------------------------------------

@custom_jvp
def _inv(a: Any) -> Any:
    lu, perm, _ = _lu_factor(a)
    return _lu_solve(lu, perm, _identity_like(a))


@_inv.defjvp
def _inv_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    x = _inv(a)
    return x, -jnp.matmul(x, jnp.matmul(da, x))


def _inv_entry(a: Any) -> Any:
    return _inv(a)


# Outside a trace each function below runs as one compiled program per shape (a jit of its
# body); inside a trace (jit, grad, vmap) the jit inlines the body.
_inv_jit = jit(_inv_entry)


def inv(a: Any) -> Any:
    """The inverse of a square matrix, or of each matrix of a stack (..., n, n), by LU
    factorization with partial pivoting. A singular matrix gives infinities or NaNs (no error,
    as in JAX). Its derivative is ``-inv(a) @ da @ inv(a)``.

    Example::

        jnp.linalg.inv(jnp.array([[2.0, 0.0], [0.0, 4.0]]))   # [[0.5, 0.], [0., 0.25]]
    """
    return _inv_jit(_square_matrices("inv", a))


@custom_jvp
def _solve(a: Any, b: Any) -> Any:
    lu, perm, _ = _lu_factor(a)
    return _lu_solve(lu, perm, b)


@_solve.defjvp
def _solve_jvp(primals, tangents):
    # dx = a^-1 (db - da x), through inv's own rule: only products act on the tangents, so
    # reverse mode transposes no loop.
    (a, b), (da, db) = primals, tangents
    x = _solve(a, b)
    return x, jnp.matmul(_inv(a), db - jnp.matmul(da, x))


def _solve_entry(a: Any, b: Any) -> Any:
    return _solve(a, b)


_solve_jit = jit(_solve_entry)


def solve(a: Any, b: Any) -> Any:
    """Solve ``a @ x = b`` for ``x``. ``a`` is (..., n, n); ``b`` is a vector (n,) or a stack of
    matrices (..., n, k) whose leading dimensions broadcast against ``a``'s (JAX's rules: a
    ``b`` of more than one dimension is always a stack of matrices).

    Example::

        a = jnp.array([[3.0, 1.0], [1.0, 2.0]])
        jnp.linalg.solve(a, jnp.array([9.0, 8.0]))   # [2., 3.]
    """
    check_arraylike("jnp.linalg.solve", a, b)
    a, b = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(b))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if len(a_shape) < 2:
        raise ValueError(f"jnp.linalg.solve: left hand array must be at least two dimensional; "
                         f"got shape {a_shape}{where(None)}")
    a = _square_matrices("solve", a)
    n = a_shape[-1]
    if len(b_shape) == 0:
        raise ValueError(f"jnp.linalg.solve: right hand side must be at least one dimensional; "
                         f"got shape {b_shape}{where(None)}")
    _no_complex("solve", b)
    vector = len(b_shape) == 1
    if vector:
        b = lax.reshape(b, b_shape + (1,))
        b_shape = b_shape + (1,)
    if b_shape[-2] != n:
        shown = b_shape[:-1] if vector else b_shape
        raise ValueError(f"jnp.linalg.solve: shapes {a_shape} and {shown} do not match: a is "
                         f"{n}x{n}, but b has {b_shape[-2]} rows{where(None)}")
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    a = broadcast_to_shape(a, batch + a_shape[-2:])
    b = broadcast_to_shape(b, batch + b_shape[-2:])
    x = _solve_jit(a, b)
    return lax.reshape(x, batch + (n,)) if vector else x


# -- det, slogdet ----------------------------------------------------------------------------------

def _trace_of_product(x: Any, y: Any) -> Any:
    """``trace(x @ y)`` over the last two axes, without forming the product."""
    return jnp.sum(_swap(x) * y, axis=(-2, -1))


@custom_jvp
def _det(a: Any) -> Any:
    lu, _, sign = _lu_factor(a)
    return sign * jnp.prod(_diagonal(lu), axis=-1)


@_det.defjvp
def _det_jvp(primals, tangents):
    # d det = det * tr(a^-1 da). (At a singular a, inv has no finite value and neither has
    # this rule; JAX's cofactor-based rule stays finite there.)
    (a,), (da,) = primals, tangents
    y = _det(a)
    return y, y * _trace_of_product(_inv(a), da)


def _det_entry(a: Any) -> Any:
    return _det(a)


_det_jit = jit(_det_entry)


def det(a: Any) -> Any:
    """The determinant of a square matrix, or of each matrix of a stack, from an LU
    factorization with partial pivoting.

    Example::

        jnp.linalg.det(jnp.array([[1.0, 2.0], [3.0, 4.0]]))   # -2.
    """
    return _det_jit(_square_matrices("det", a))


class SlogdetResult(NamedTuple):
    """``(sign, logabsdet)``: the determinant is ``sign * exp(logabsdet)``."""
    sign: Any
    logabsdet: Any


@custom_jvp
def _slogdet(a: Any) -> Any:
    lu, _, parity = _lu_factor(a)
    diag = _diagonal(lu)
    sign = parity * jnp.prod(jnp.sign(diag), axis=-1)
    return sign, jnp.sum(jnp.log(jnp.abs(diag)), axis=-1)


@_slogdet.defjvp
def _slogdet_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    sign, logabsdet = _slogdet(a)
    return (sign, logabsdet), (jnp.zeros_like(sign), _trace_of_product(_inv(a), da))


def _slogdet_entry(a: Any) -> Any:
    return _slogdet(a)


_slogdet_jit = jit(_slogdet_entry)


def slogdet(a: Any, *, method: Optional[str] = None) -> SlogdetResult:
    """Sign and natural logarithm of the absolute value of the determinant, stable where the
    determinant itself would overflow or underflow. A singular matrix gives (0, -inf).

    Example::

        sign, logabsdet = jnp.linalg.slogdet(jnp.array([[-2.0, 0.0], [0.0, 3.0]]))
        # sign = -1., logabsdet = log(6.)
    """
    if method not in (None, "lu"):
        raise ValueError(f"jnp.linalg.slogdet: unknown method {method!r} (only 'lu' is "
                         f"implemented){where(None)}")
    sign, logabsdet = _slogdet_jit(_square_matrices("slogdet", a))
    return SlogdetResult(sign, logabsdet)


# -- cholesky --------------------------------------------------------------------------------------

@custom_jvp
def _cholesky(a: Any) -> Any:
    return _cholesky_factor(a)


def _lower_half(x: Any) -> Any:
    """Φ(x): the strictly lower triangle of x plus half its diagonal."""
    n = x.shape[-1]
    rows = lax.broadcasted_iota(_INT, (n, n), 0)
    cols = lax.broadcasted_iota(_INT, (n, n), 1)
    zero = jnp.zeros((), x.dtype)
    return jnp.where(rows > cols, x, jnp.where(rows == cols, x * 0.5, zero))


@_cholesky.defjvp
def _cholesky_jvp(primals, tangents):
    # dL = L Φ(L^-1 dA L^-T) for symmetric dA (the input is symmetrized before this function).
    (a,), (da,) = primals, tangents
    low = _cholesky(a)
    low_inv = _forward_sub(low, _identity_like(low), unit_diagonal=False)
    inner = jnp.matmul(low_inv, jnp.matmul(da, _swap(low_inv)))
    return low, jnp.matmul(low, _lower_half(inner))


def _cholesky_entry(a: Any) -> Any:
    # Only the symmetric part counts, as in JAX (whose derivative is then symmetric too).
    return _cholesky((a + _swap(a)) * 0.5)


_cholesky_jit = jit(_cholesky_entry)


def cholesky(a: Any, *, upper: bool = False) -> Any:
    """The Cholesky factor ``L`` (lower triangular, ``a = L @ L.T``) of a symmetric positive
    definite matrix, or of each matrix of a stack; ``upper=True`` gives ``L.T``. As in JAX the
    input is symmetrized, and a matrix that is not positive definite gives a matrix of NaNs.

    Example::

        jnp.linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]]))   # [[2., 0.], [1., 2.]]
    """
    low = _cholesky_jit(_square_matrices("cholesky", a))
    return _swap(low) if upper else low


# -- norms -----------------------------------------------------------------------------------------

def _vector_norm(x: Any, ord: Any, axis: tuple, keepdims: bool) -> Any:
    ax = jnp.abs(x)
    if ord is None or ord == 2:
        return jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"jnp.linalg.norm: invalid order {ord!r} for vectors{where(None)}")
    if ord == np.inf:
        return jnp.max(ax, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return jnp.min(ax, axis=axis, keepdims=keepdims)
    if ord == 0:
        return jnp.sum(x != 0, axis=axis, keepdims=keepdims).astype(ax.dtype)
    if ord == 1:
        return jnp.sum(ax, axis=axis, keepdims=keepdims)
    p = float(ord)
    return jnp.sum(ax ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _matrix_norm(x: Any, ord: Any, axes: tuple, keepdims: bool) -> Any:
    row, col = axes
    if ord is None or ord == "fro":
        return jnp.sqrt(jnp.sum(x * x, axis=axes, keepdims=keepdims))
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(f"jnp.linalg.norm: ord={ord!r} for matrices needs singular "
                                  f"values (svd), which pyree does not implement yet"
                                  f"{where(None)}")
    if isinstance(ord, str) or ord not in (1, -1, np.inf, -np.inf):
        raise ValueError(f"jnp.linalg.norm: invalid order {ord!r} for matrices{where(None)}")
    ax = jnp.abs(x)
    # ord 1: largest column sum (summing over rows); inf: largest row sum.
    summed, other = (row, col) if ord in (1, -1) else (col, row)
    sums = jnp.sum(ax, axis=summed, keepdims=True)
    out = (jnp.max if ord > 0 else jnp.min)(sums, axis=other, keepdims=True)
    return out if keepdims else jnp.squeeze(out, axis=axes)


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Vector or matrix norm. With ``axis`` None: the 2-norm of the flattened array when
    ``ord`` is None, else a vector norm (1-d) or matrix norm (2-d). An int ``axis`` gives
    vector norms (``ord``: None/2, 1, inf, -inf, 0 = count of non-zeros, any p); a pair gives
    matrix norms (``ord``: None/'fro', 1, -1, inf, -inf; 'nuc', 2, -2 need an SVD and raise
    NotImplementedError).

    Example::

        jnp.linalg.norm(jnp.array([3.0, 4.0]))   # 5.
    """
    check_arraylike("jnp.linalg.norm", x)
    (x,) = promote_dtypes_inexact(jnp.asarray(x))
    _no_complex("norm", x)
    nd = get_aval(x).ndim
    if axis is None:
        if ord is None:
            out = jnp.sqrt(jnp.sum(x * x))
            return jnp.reshape(out, (1,) * nd) if keepdims else out
        if nd == 1:
            axes: tuple = (0,)
        elif nd == 2:
            axes = (0, 1)
        else:
            raise ValueError(f"jnp.linalg.norm: improper number of dimensions to norm: a "
                             f"{nd}-d array with ord={ord!r} needs axis{where(None)}")
    elif isinstance(axis, (tuple, list)):
        axes = tuple(canonical_axis(a, nd) for a in axis)
    else:
        axes = (canonical_axis(axis, nd),)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        if axes[0] == axes[1]:
            raise ValueError(f"jnp.linalg.norm: duplicate axes {axis}{where(None)}")
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError(f"jnp.linalg.norm: improper number of dimensions to norm: axis={axis!r}"
                     f"{where(None)}")


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """The vector norm of ``x`` along ``axis`` (all axes, flattened, when None) (NumPy 2).

    Example::

        jnp.linalg.vector_norm(jnp.ones((2, 2)), ord=1)   # 4.
    """
    check_arraylike("jnp.linalg.vector_norm", x)
    (x,) = promote_dtypes_inexact(jnp.asarray(x))
    nd = get_aval(x).ndim
    if axis is None:
        out = _vector_norm(jnp.ravel(x), ord, (0,), False)
        return jnp.reshape(out, (1,) * nd) if keepdims else out
    axes = tuple(canonical_axis(a, nd) for a in axis) if isinstance(axis, (tuple, list)) \
        else (canonical_axis(axis, nd),)
    return _vector_norm(x, ord, axes, keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """The matrix norm of each matrix over the last two axes (NumPy 2).

    Example::

        jnp.linalg.matrix_norm(jnp.ones((2, 2)), ord=1)   # 2.
    """
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


# -- products --------------------------------------------------------------------------------------

def matrix_power(a: Any, n: int) -> Any:
    """``a`` multiplied by itself ``n`` times (``n`` an int; 0 gives the identity, negative
    powers invert), for a square matrix or a stack of them, by repeated squaring.

    Example::

        jnp.linalg.matrix_power(jnp.array([[1, 1], [0, 1]]), 3)   # [[1, 3], [0, 1]]
    """
    check_arraylike("jnp.linalg.matrix_power", a)
    a = jnp.asarray(a)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"jnp.linalg.matrix_power: exponent must be an integer, got "
                        f"{n!r}{where(None)}") from None
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"jnp.linalg.matrix_power: argument must be a square matrix or a stack "
                         f"of them, of shape (..., n, n); got shape {shape}{where(None)}")
    if n == 0:
        return _identity_like(a)
    if n < 0:
        a = inv(a)
        n = -n
    result = None
    power = a
    while True:
        if n & 1:
            result = power if result is None else jnp.matmul(result, power)
        n >>= 1
        if not n:
            return result
        power = jnp.matmul(power, power)


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """The product of a chain of matrices, in the cheapest order (by dynamic programming on
    the shapes). The first array may be a vector (a row), the last a vector (a column).

    Example::

        jnp.linalg.multi_dot([jnp.ones(3), jnp.ones((3, 4)), jnp.ones(4)])   # 12.
    """
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"jnp.linalg.multi_dot: expected at least two arrays, got "
                         f"{len(arrays)}{where(None)}")
    check_arraylike("jnp.linalg.multi_dot", *arrays)
    arrays = [jnp.asarray(x) for x in arrays]
    first_vec = get_aval(arrays[0]).ndim == 1
    last_vec = get_aval(arrays[-1]).ndim == 1
    if first_vec:
        arrays[0] = jnp.reshape(arrays[0], (1, -1))
    if last_vec:
        arrays[-1] = jnp.reshape(arrays[-1], (-1, 1))
    for i, x in enumerate(arrays):
        if get_aval(x).ndim != 2:
            raise ValueError(f"jnp.linalg.multi_dot: array {i} has shape {get_aval(x).shape}; "
                             f"all but the first and last must be 2-d{where(None)}")
    dims = [get_aval(arrays[0]).shape[0]] + [get_aval(x).shape[1] for x in arrays]
    k = len(arrays)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = None
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def product(i: int, j: int) -> Any:
        if i == j:
            return arrays[i]
        s = split[i][j]
        return jnp.matmul(product(i, s), product(s + 1, j))

    out = product(0, k - 1)
    if first_vec and last_vec:
        return jnp.reshape(out, ())
    if first_vec:
        return jnp.reshape(out, (-1,))
    if last_vec:
        return jnp.reshape(out, (-1,))
    return out


# NumPy 2's linalg namespace repeats these from the main one, some restricted to its last axes.
matmul = jnp.matmul
tensordot = jnp.tensordot
vecdot = jnp.vecdot


def outer(x1: Any, x2: Any, /) -> Any:
    """Outer product of two 1-d arrays (NumPy 2's ``linalg.outer``: no flattening).

    Example::

        jnp.linalg.outer(jnp.arange(2.0), jnp.arange(3.0)).shape   # (2, 3)
    """
    check_arraylike("jnp.linalg.outer", x1, x2)
    s1, s2 = jnp.shape(x1), jnp.shape(x2)
    if len(s1) != 1 or len(s2) != 1:
        raise ValueError(f"jnp.linalg.outer: inputs must be 1-d, got shapes {s1} and "
                         f"{s2}{where(None)}")
    return jnp.outer(x1, x2)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """Cross product of 3-vectors along ``axis`` (NumPy 2's ``linalg.cross``).

    Example::

        jnp.linalg.cross(jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0]))  # [0, 0, 1]
    """
    check_arraylike("jnp.linalg.cross", x1, x2)
    s1, s2 = jnp.shape(x1), jnp.shape(x2)
    if not s1 or not s2 or s1[axis] != 3 or s2[axis] != 3:
        raise ValueError(f"jnp.linalg.cross: both inputs must have size 3 along axis {axis}, "
                         f"got shapes {s1} and {s2}{where(None)}")
    return jnp.cross(x1, x2, axis=axis)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """Sum along a diagonal of each matrix over the last two axes (NumPy 2).

    Example::

        jnp.linalg.trace(jnp.ones((4, 3, 3)))   # [3., 3., 3., 3.]
    """
    return jnp.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """A diagonal of each matrix over the last two axes (NumPy 2).

    Example::

        jnp.linalg.diagonal(jnp.eye(3))   # [1., 1., 1.]
    """
    check_arraylike("jnp.linalg.diagonal", x)
    x = jnp.asarray(x)
    shape = get_aval(x).shape
    if len(shape) < 2:
        raise ValueError(f"jnp.linalg.diagonal: array must be at least 2-d, got shape "
                         f"{shape}{where(None)}")
    rows, cols = shape[-2:]
    offset = operator.index(offset)
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    if length == 0:
        return jnp.zeros(shape[:-2] + (0,), get_aval(x).dtype)
    # Entry i of the diagonal is x[..., r0 + i, c0 + i]: a masked sum over the rows of the
    # window that holds the diagonal.
    r0, c0 = max(0, -offset), max(0, offset)
    window = lax.slice(x, (0,) * (len(shape) - 2) + (r0, c0),
                       shape[:-2] + (r0 + length, c0 + length))
    on = lax.broadcasted_iota(_INT, (length, length), 0) == \
        lax.broadcasted_iota(_INT, (length, length), 1)
    return jnp.sum(jnp.where(on, window, jnp.zeros((), get_aval(x).dtype)), axis=-2)


def matrix_transpose(x: Any, /) -> Any:
    """Swap the last two axes (NumPy 2).

    Example::

        jnp.linalg.matrix_transpose(jnp.ones((2, 3, 4))).shape   # (2, 4, 3)
    """
    check_arraylike("jnp.linalg.matrix_transpose", x)
    x = jnp.asarray(x)
    if get_aval(x).ndim < 2:
        raise ValueError(f"jnp.linalg.matrix_transpose: array must be at least 2-d, got shape "
                         f"{get_aval(x).shape}{where(None)}")
    return _swap(x)
