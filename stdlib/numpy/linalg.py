"""``pyree.numpy.linalg``: inv, solve, det, slogdet, cholesky, qr, eigh, eigvalsh, svd, pinv,
lstsq, matrix_rank, cond, norm, matrix_power, multi_dot and NumPy 2's aliases. The
factorizations (LU with partial pivoting, Cholesky, Householder QR, parallel cyclic Jacobi for
eigh and svd) are composed from primitives, batched over leading dimensions, and carry custom
derivative rules so that gradients never differentiate through pivoting or iterations.

Real and complex matrices alike (complex64, complex128 under x64): for complex input the
transposes of the real case become conjugate transposes (Cholesky's ``a = L @ L^H``, eigh of
Hermitian matrices, unitary Q, U and V), slogdet's sign is a complex unit, eigenvalues and
singular values are real, and gradients of real-valued functions follow JAX's convention
(``grad(f) = df/dx - i df/dy``)::

    x = jnp.linalg.solve(a, b)
    pyree.grad(lambda a: jnp.linalg.slogdet(a).logabsdet)(a)     # = inv(a).T
    w, v = jnp.linalg.eigh(a @ a.T)                                # ascending eigenvalues
"""
from __future__ import annotations

__all__ = [
    "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond", "cross", "det",
    "diagonal", "eigh", "eigvalsh", "inv", "lstsq", "matmul", "matrix_norm", "matrix_power",
    "matrix_rank", "matrix_transpose", "multi_dot", "norm", "outer", "pinv", "qr", "slogdet",
    "solve", "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]

import operator
from typing import Any, Callable, NamedTuple, Optional, Sequence

import numpy as np

import pyree.numpy as jnp
from pyree import lax
from pyree._custom_derivatives import custom_jvp
from pyree.transpiler.programs.jit import jit
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import get_aval

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


# -- complex matrices ------------------------------------------------------------------------------

def _is_complex(x: Any) -> bool:
    return get_aval(x).dtype.kind == "c"


def _real_dtype(dtype: Any) -> np.dtype:
    """float32 for complex64, float64 for complex128; real dtypes as they are."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32 if dtype == np.complex64 else np.float64) \
        if dtype.kind == "c" else dtype


def _ct(x: Any) -> Any:
    """The conjugate transpose over the last two axes (the transpose of a real matrix)."""
    return jnp.conj(_swap(x)) if _is_complex(x) else _swap(x)


def _abs2(x: Any) -> Any:
    """``|x|^2``, real, without a square root (so its derivative is finite at zero)."""
    if _is_complex(x):
        re, im = jnp.real(x), jnp.imag(x)
        return re * re + im * im
    return x * x


def _magnitude(x: Any) -> Any:
    """The size pivoting compares: ``|x|``, and ``|re| + |im|`` for complex entries, LAPACK's
    (izamax), so that ``scipy.linalg.lu`` picks SciPy's pivots."""
    if _is_complex(x):
        return jnp.abs(jnp.real(x)) + jnp.abs(jnp.imag(x))
    return jnp.abs(x)


def _isfinite(x: Any) -> Any:
    # (jnp.isfinite takes no complex operand.)
    if _is_complex(x):
        return jnp.isfinite(jnp.real(x)) & jnp.isfinite(jnp.imag(x))
    return jnp.isfinite(x)


# Complex products of up to this many multiplications (batch included) are elementwise
# products summed (see _matmul): their temporary holds that many entries.
_ELEMENTWISE_PRODUCT_MAX = 1 << 20


def _matmul(x: Any, y: Any) -> Any:
    """``jnp.matmul``, for complex operands too. IREE 3.13's CPU data tiling fails to compile
    a complex64 matrix product without batch dimensions, and any product (real ones too, and
    matrix-vector products, which the data tiling of a module with another product reaches)
    whose result feeds a complex operation in the same dispatch ("'vector.transfer_read' op
    requires valid padding vector elemental type"): the complex op inherits the product's
    tiled layout. So a complex product with a vector operand, or a small one (the
    factorizations' matrices), is an elementwise product summed, no contraction at all; a
    larger one is formed from four real products (what one complex product costs), each
    computed transposed, ``(y^T x^T)^T``: the lowering puts a barrier between a data-tiled
    product and a transpose of its result (transpiler/backend/lower.py, ``_transpose_rule``), which
    keeps the complex consumer out of the product's dispatch."""
    if not (_is_complex(x) or _is_complex(y)):
        return jnp.matmul(x, y)
    part = _real_dtype(jnp.result_type(x, y))

    def parts(z):
        if _is_complex(z):
            return jnp.real(z).astype(part), jnp.imag(z).astype(part)
        return z.astype(part), None

    xs, ys = get_aval(x).shape, get_aval(y).shape
    batch = broadcast_shapes(xs[:-2], ys[:-2])
    if len(xs) == 1 or len(ys) == 1 or xs[-2] == 1 or ys[-1] == 1 or \
            int(np.prod(batch + (xs[-2], xs[-1], ys[-1]))) <= _ELEMENTWISE_PRODUCT_MAX:
        # (A vector operand is a row on the left, a column on the right, as in matmul.)
        if len(xs) == 1 and len(ys) == 1:
            def product(p, q):
                return jnp.sum(p * q, axis=-1)
        elif len(ys) == 1:
            def product(p, q):
                return jnp.sum(p * q[..., None, :], axis=-1)
        elif len(xs) == 1:
            def product(p, q):
                return jnp.sum(p[..., :, None] * q, axis=-2)
        else:
            def product(p, q):
                return jnp.sum(p[..., :, :, None] * q[..., None, :, :], axis=-2)
        # (Sums of real parts: a complex sum starts from a complex zero constant, which
        # IREE 3.13 can fail to place in complex128 programs: see _diagonal.)
    else:
        def product(p, q):
            return _swap(jnp.matmul(_swap(q), _swap(p)))

    (xr, xi), (yr, yi) = parts(x), parts(y)
    if yi is None:
        return lax.complex(product(xr, yr), product(xi, yr))
    if xi is None:
        return lax.complex(product(xr, yr), product(xr, yi))
    return lax.complex(product(xr, yr) - product(xi, yi), product(xr, yi) + product(xi, yr))


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
        col = jnp.where(free, _magnitude(_column(a, k)), -1)
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


def _back_sub(t: Any, b: Any, unit_diagonal: bool = False) -> Any:
    """Solve ``t @ x = b`` for upper-triangular ``t`` (..., n, n), ``b`` (..., n, m)."""
    n = t.shape[-1]
    idx = _index(n)
    rows = lax.broadcasted_iota(_INT, (n, 1), 0)

    def step(i, b):
        k = n - 1 - i
        tcol = _column(t, k)
        xk = _row(b, k)
        if not unit_diagonal:
            xk = xk / _entry(tcol, k)[..., None]
        rest = jnp.where(idx < k, tcol, 0)
        return jnp.where(rows == k, xk[..., None, :], b - rest[..., :, None] * xk[..., None, :])

    return _loop(n, step, b)


def _lu_solve(lu: Any, perm: Any, b: Any) -> Any:
    """Solve ``a @ x = b`` from ``a``'s LU factors; ``b`` is (..., n, m), batch as ``lu``'s."""
    n = lu.shape[-1]
    # A where, not a bool->float convert: IREE 3.13 miscompiles convert(i1) feeding a dot
    # (true becomes -1).
    # (Real for complex b too: half the products, see _matmul.)
    real = _real_dtype(b.dtype)
    one, zero = jnp.ones((), real), jnp.zeros((), real)
    permutation = jnp.where(jnp.expand_dims(perm, -1) == _index(n), one, zero)
    y = _forward_sub(lu, _matmul(permutation, b), unit_diagonal=True)
    return _back_sub(lu, y)


def _cholesky_factor(a: Any) -> Any:
    """The lower Cholesky factor of symmetric (complex: Hermitian) ``a`` (..., n, n),
    ``a = L @ L^H``; all NaN where ``a`` is not positive definite (as JAX). Step j writes
    column j of the factor over column j of the matrix in the same elementwise pass as its
    update (later steps leave column j alone), and the factor is the lower triangle at the
    end."""
    n = a.shape[-1]
    idx = _index(n)
    rows = lax.broadcasted_iota(_INT, (n, 1), 0)
    cols = lax.broadcasted_iota(_INT, (1, n), 1)

    def step(j, a):
        col = _column(a, j)
        # The pivot of a Hermitian matrix is real: its real part's root (a negative one, not
        # positive definite, gives NaN as a real root does; a complex root would not).
        root = jnp.sqrt(jnp.real(_entry(col, j))).astype(a.dtype)
        lcol = jnp.where(idx >= j, col / root[..., None], 0)
        return jnp.where(cols == j, lcol[..., :, None],
                         a - lcol[..., :, None] * jnp.conj(lcol)[..., None, :])

    a = _loop(n, step, a)
    low = jnp.where(rows >= cols, a, jnp.zeros((), a.dtype))
    ok = jnp.all(_isfinite(low), axis=(-2, -1), keepdims=True)
    return jnp.where(ok, low, jnp.full((), np.nan, a.dtype))


# -- helpers of the public functions -------------------------------------------------------------

def _diagonal(x: Any) -> Any:
    """The main diagonal of the last two axes of square ``x`` (..., n, n) -> (..., n)."""
    if _is_complex(x):
        # From the real parts: no complex zero constant. IREE 3.13 failed to compile some
        # complex128 programs with such constants before and after a loop ("'stream.async.
        # dispatch' op: streamable op expected to be in an execution region"), e.g. the
        # determinant of one matrix next to the eigenvalues of another.
        return lax.complex(_diagonal(jnp.real(x)), _diagonal(jnp.imag(x)))
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


def _eye(batch: tuple, n: int, dtype: Any) -> Any:
    """Identity matrices of shape batch + (n, n) (a select: see ``_identity_like``)."""
    on = lax.broadcasted_iota(_INT, (n, n), 0) == lax.broadcasted_iota(_INT, (n, n), 1)
    eye = jnp.where(on, jnp.ones((), dtype), jnp.zeros((), dtype))
    return lax.broadcast_in_dim(eye, tuple(batch) + (n, n), (len(batch), len(batch) + 1))


def _swap(x: Any) -> Any:
    return jnp.swapaxes(x, -1, -2)


def _square_matrices(name: str, a: Any, module: str = "jnp.linalg") -> Any:
    """``a`` as an inexact array of shape (..., n, n), or a clear error naming
    ``module.name`` (``pyree.scipy.linalg`` shares this)."""
    check_arraylike(f"{module}.{name}", a)
    (a,) = promote_dtypes_inexact(jnp.asarray(a))
    shape = get_aval(a).shape
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{module}.{name}: argument must be a square matrix or a stack of "
                         f"them, of shape (..., n, n); got shape {shape}{where(None)}")
    return a


# -- inv, solve ------------------------------------------------------------------------------------

@custom_jvp
def _inv(a: Any) -> Any:
    lu, perm, _ = _lu_factor(a)
    return _lu_solve(lu, perm, _identity_like(a))


@_inv.defjvp
def _inv_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    x = _inv(a)
    return x, -_matmul(x, _matmul(da, x))


def _inv_entry(a: Any) -> Any:
    return _inv(a)


# Outside a trace each function below runs as one compiled program per shape (a jit of its
# body); inside a trace (jit, grad, vmap) the jit inlines the body.
_inv_jit = jit(_inv_entry)


def inv(a: Any) -> Any:
    """The inverse of a square matrix, or of each matrix of a stack (..., n, n), real or
    complex, by LU factorization with partial pivoting. A singular matrix gives infinities or
    NaNs (no error, as in JAX). Its derivative is ``-inv(a) @ da @ inv(a)``.

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
    return x, _matmul(_inv(a), db - _matmul(da, x))


def _solve_entry(a: Any, b: Any) -> Any:
    return _solve(a, b)


_solve_jit = jit(_solve_entry)


def solve(a: Any, b: Any) -> Any:
    """Solve ``a @ x = b`` for ``x`` (real or complex; a and b promoted together). ``a`` is
    (..., n, n); ``b`` is a vector (n,) or a stack of matrices (..., n, k) whose leading
    dimensions broadcast against ``a``'s (JAX's rules: a ``b`` of more than one dimension is
    always a stack of matrices).

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
    """The determinant of a square matrix, or of each matrix of a stack (real or complex),
    from an LU factorization with partial pivoting.

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
    # (The sign of a complex number is z / |z|: the sign is a complex unit, logabsdet real.)
    sign = parity * jnp.prod(jnp.sign(diag), axis=-1)
    return sign, jnp.sum(jnp.log(jnp.abs(diag)), axis=-1)


@_slogdet.defjvp
def _slogdet_jvp(primals, tangents):
    # With t = tr(a^-1 da) = d log det: d logabsdet = Re t, and d sign = i Im(t) sign (zero for
    # a real matrix, whose sign is constant).
    (a,), (da,) = primals, tangents
    sign, logabsdet = _slogdet(a)
    t = _trace_of_product(_inv(a), da)
    if not _is_complex(a):
        return (sign, logabsdet), (jnp.zeros_like(sign), t)
    return (sign, logabsdet), (lax.complex(jnp.zeros_like(jnp.imag(t)), jnp.imag(t)) * sign,
                               jnp.real(t))


def _slogdet_entry(a: Any) -> Any:
    return _slogdet(a)


_slogdet_jit = jit(_slogdet_entry)


def slogdet(a: Any, *, method: Optional[str] = None) -> SlogdetResult:
    """Sign and natural logarithm of the absolute value of the determinant, stable where the
    determinant itself would overflow or underflow. A singular matrix gives (0, -inf). For a
    complex matrix the sign is a complex number of modulus 1 (``det / |det|``) and logabsdet
    is real, as in JAX.

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
    # dL = L Φ(L^-1 dA L^-H) for symmetric (Hermitian) dA (the input is symmetrized before
    # this function): L^-1 dL is lower triangular and L^-1 dL + (L^-1 dL)^H is the inner
    # matrix, whose diagonal is real as dL's is.
    (a,), (da,) = primals, tangents
    low = _cholesky(a)
    low_inv = _forward_sub(low, _identity_like(low), unit_diagonal=False)
    inner = _matmul(low_inv, _matmul(da, _ct(low_inv)))
    return low, _matmul(low, _lower_half(inner))


def _cholesky_entry(a: Any, symmetrize: bool) -> Any:
    # Symmetrized: only the Hermitian part counts, as in JAX (whose derivative is then
    # Hermitian too). Otherwise the lower triangle is read, as LAPACK's potrf reads it.
    return _cholesky(_hermitian_input(a, True, symmetrize))


_cholesky_jit = jit(_cholesky_entry, static_argnums=(1,))


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """The Cholesky factor ``L`` (lower triangular, ``a = L @ L^H``) of a symmetric (complex:
    Hermitian) positive definite matrix, or of each matrix of a stack; ``upper=True`` gives
    ``L^H`` (``^H``: the conjugate transpose, the transpose of a real matrix). As in JAX the
    input is symmetrized (``(a + a^H) / 2``) unless ``symmetrize_input=False``, when only its
    lower triangle is read (and, as in JAX, the derivative takes the whole tangent: the
    gradient of a non-symmetric input is JAX's). A matrix that is not positive definite gives
    a matrix of NaNs.

    Example::

        jnp.linalg.cholesky(jnp.array([[4.0, 2.0], [2.0, 5.0]]))   # [[2., 0.], [1., 2.]]
        jnp.linalg.cholesky(jnp.array([[4.0, 9.0], [2.0, 5.0]]), symmetrize_input=False)
        # [[2., 0.], [1., 2.]]: the 9 is not read
    """
    low = _cholesky_jit(_square_matrices("cholesky", a), bool(symmetrize_input))
    return _ct(low) if upper else low


# -- triangular matrices ---------------------------------------------------------------------------

def _triangle(n: int, lower: bool, strict: bool = False) -> Any:
    """(n, n) mask of the lower (or upper) triangle, with the diagonal unless ``strict``."""
    rows = lax.broadcasted_iota(_INT, (n, n), 0)
    cols = lax.broadcasted_iota(_INT, (n, n), 1)
    if lower:
        return rows > cols if strict else rows >= cols
    return rows < cols if strict else rows <= cols


def _triangular_part(t: Any, lower: bool, unit_diagonal: bool) -> Any:
    """The triangle of ``t`` a triangular solve reads (the rest zero, the diagonal one when
    ``unit_diagonal``), so that derivatives flow to exactly those entries."""
    n = t.shape[-1]
    zero = jnp.zeros((), t.dtype)
    if unit_diagonal:
        on = _triangle(n, True) & _triangle(n, False)
        return jnp.where(_triangle(n, lower, strict=True), t,
                         jnp.where(on, jnp.ones((), t.dtype), zero))
    return jnp.where(_triangle(n, lower), t, zero)


def _substitute(t: Any, b: Any, lower: bool) -> Any:
    return _forward_sub(t, b, unit_diagonal=False) if lower else _back_sub(t, b)


_solve_triangular = custom_jvp(_substitute, nondiff_argnums=(2,))


@_solve_triangular.defjvp
def _solve_triangular_jvp(lower, primals, tangents):
    # dx = t^-1 (db - dt x); t^-1 is computed from the primal, so only products act on the
    # tangents (reverse mode transposes no loop).
    (t, b), (dt, db) = primals, tangents
    x = _solve_triangular(t, b, lower)
    t_inv = _substitute(t, _identity_like(t), lower)
    return x, _matmul(t_inv, db - _matmul(dt, x))


def _solve_triangular_entry(t: Any, b: Any, lower: bool, transpose: bool,
                            unit_diagonal: bool, conjugate: bool = False) -> Any:
    t = _triangular_part(t, lower, unit_diagonal)
    if transpose:   # t^T (t^H) is triangular the other way
        t, lower = (_ct(t) if conjugate else _swap(t)), not lower
    return _solve_triangular(t, b, lower)


_solve_triangular_jit = jit(_solve_triangular_entry, static_argnums=(2, 3, 4, 5))


def _triangular_solve(a: Any, b: Any, lower: bool, transpose: bool = False,
                      unit_diagonal: bool = False, conjugate: bool = False) -> Any:
    """Solve ``a x = b`` (``a.T x = b`` when ``transpose``, ``a^H x = b`` when also
    ``conjugate``) for triangular ``a`` (..., n, n) and ``b`` (..., n, k), with leading
    dimensions broadcast (shared with ``pyree.scipy.linalg``)."""
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    batch = broadcast_shapes(a_shape[:-2], b_shape[:-2])
    a = broadcast_to_shape(a, batch + a_shape[-2:])
    b = broadcast_to_shape(b, batch + b_shape[-2:])
    return _solve_triangular_jit(a, b, bool(lower), bool(transpose), bool(unit_diagonal),
                                 bool(transpose and conjugate))


# -- Householder QR --------------------------------------------------------------------------------

def _householder(a: Any) -> tuple[Any, Any]:
    """``a`` (..., m, n) = Q R with Q (..., m, m) orthogonal (unitary), as a product of
    Householder reflections, and R (..., m, n) upper triangular. Step j reflects column j's
    entries from row j down onto row j; R's diagonal has LAPACK's signs (``-sign(a_jj) *
    norm``), and a column with nothing below the diagonal is left alone, so ``jnp.linalg.qr``
    agrees with NumPy's, signs included (complex: see ``_complex_reflection``). Q accumulates
    the reflections from the right (m x m: fine for the small matrices this serves)."""
    m, n = a.shape[-2:]
    rows = _index(m)
    zero = jnp.zeros((), a.dtype)
    q = _eye(a.shape[:-2], m, a.dtype)
    if _is_complex(a):
        # (Also a last 1 x 1 reflection when m <= n: it makes that diagonal entry real.)
        r, q = _loop(min(m, n), lambda j, carry: _complex_reflection(j, rows, *carry), (a, q))
        upper = lax.broadcasted_iota(_INT, (m, n), 0) <= lax.broadcasted_iota(_INT, (m, n), 1)
        return q, jnp.where(upper, r, zero)

    def step(j, carry):
        r, q = carry
        x = jnp.where(rows >= j, _column(r, j), zero)
        # Scaled by its largest entry: squares of tiny or huge columns stay representable.
        scale = jnp.max(jnp.abs(x), axis=-1)
        x = x / jnp.where(scale == 0, jnp.ones((), a.dtype), scale)[..., None]
        alpha = _entry(x, j)
        below = jnp.where(rows > j, x, zero)
        below2 = jnp.sum(below * below, axis=-1)
        norm = jnp.sqrt(alpha * alpha + below2)
        head = jnp.where(alpha >= 0, alpha + norm, alpha - norm)   # alpha - beta, no cancelling
        v = jnp.where(rows == j, head[..., None], below)
        skip = below2 == 0
        vv = jnp.where(skip, jnp.ones((), a.dtype), head * head + below2)
        # H = I - v v^T with v scaled to norm sqrt(2); v = 0 (H = I) when skipped.
        v = v * jnp.where(skip, zero, jnp.sqrt(2 / vv))[..., None]
        r = r - v[..., :, None] * _matmul(v[..., None, :], r)
        q = q - _matmul(q, v[..., :, None]) * v[..., None, :]
        return r, q

    r, q = _loop(min(m - 1, n), step, (a, q))
    upper = lax.broadcasted_iota(_INT, (m, n), 0) <= lax.broadcasted_iota(_INT, (m, n), 1)
    return q, jnp.where(upper, r, zero)


def _reflector(x: Any, j: Any, rows: Any) -> tuple[Any, Any, Any]:
    """LAPACK's elementary reflector (dlarfg, zlarfg) for the entries of column ``x`` (..., m)
    from row j down: ``(v, tau, beta)`` with ``H = I - tau v v^H``, v_j = 1 and v zero above
    row j, such that ``H^H x = beta e_j`` below row j - 1. beta is real,
    ``-sign(re(x_j)) * norm``; H = I (tau = 0, beta = x_j) when x has nothing below x_j and
    x_j is real. For real x, tau is real and H symmetric."""
    zero = jnp.zeros((), x.dtype)
    part = _real_dtype(x.dtype)
    x = jnp.where(rows >= j, x, zero)
    # Scaled by its largest entry: squares of tiny or huge columns stay representable (v and
    # tau do not change; beta is scaled back).
    scale = jnp.max(jnp.abs(x), axis=-1)
    scale = jnp.where(scale == 0, jnp.ones((), part), scale)
    x = x / scale.astype(x.dtype)[..., None]
    alpha = _entry(x, j)
    re = jnp.real(alpha)
    below = jnp.where(rows > j, x, zero)
    below2 = jnp.sum(_abs2(below), axis=-1)
    if _is_complex(x):
        im = jnp.imag(alpha)
        norm = jnp.sqrt(re * re + im * im + below2)
        skip = (below2 == 0) & (im == 0)
    else:
        norm = jnp.sqrt(re * re + below2)
        skip = below2 == 0
    beta = jnp.where(re >= 0, -norm, norm)
    safe_beta = jnp.where(skip, jnp.ones((), part), beta)
    if _is_complex(x):
        tau = lax.complex((beta - re) / safe_beta, -im / safe_beta)
    else:
        tau = (beta - re) / safe_beta
    tau = jnp.where(skip, zero, tau)
    head = jnp.where(skip, jnp.ones((), x.dtype), alpha - beta.astype(x.dtype))
    v = jnp.where(rows == j, jnp.ones((), x.dtype), below / head[..., None])
    return v, tau, jnp.where(skip, re, beta) * scale


def _complex_reflection(j: Any, rows: Any, r: Any, q: Any) -> tuple[Any, Any]:
    """Step j of a complex Householder QR, LAPACK's reflector (``_reflector``): H is not
    Hermitian (tau is complex): R takes H^H from the left, Q takes H from the right. Written
    with elementwise sums: no complex matrix product (see ``_matmul``)."""
    v, tau, _ = _reflector(_column(r, j), j, rows)
    # r <- r - conj(tau) v (v^H r);  q <- q - tau (q v) v^H
    vr = jnp.sum(jnp.conj(v)[..., :, None] * r, axis=-2)
    r = r - (jnp.conj(tau)[..., None] * v)[..., :, None] * vr[..., None, :]
    qv = jnp.sum(q * v[..., None, :], axis=-1)
    q = q - (tau[..., None] * qv)[..., :, None] * jnp.conj(v)[..., None, :]
    return r, q


def _columns_at(x: Any, index: Any) -> Any:
    """``x[..., :, index[..., i]]`` for each i: columns picked per matrix (a gather)."""
    picked = jnp.broadcast_to(index[..., None, :], x.shape[:-1] + index.shape[-1:])
    return jnp.take_along_axis(x, picked, axis=-1, mode="clip")


def _householder_packed(a: Any, pivoting: bool) -> tuple[Any, Any, Any]:
    """LAPACK's geqrf (geqp3 with ``pivoting``) of ``a`` (..., m, n): ``(packed, tau, order)``
    with R in ``packed``'s upper triangle, reflector j's v below the diagonal of column j (its
    leading 1 implied), ``tau`` (..., k), k = min(m, n), and ``a[..., :, order] = Q R``,
    ``Q = H_0 H_1 ... H_{k-1}``, ``H_j = I - tau_j v_j v_j^H``. With pivoting, step j first
    swaps into column j the remaining column of largest norm (over rows j and below; the
    first of equal ones), as geqp3: its norms are recomputed each step where LAPACK
    downdates them, so only near ties may be broken differently. Without, ``order`` is
    0..n-1. Each step is elementwise passes over the matrix (no matrix product: see
    ``_matmul``); reflections touch only the columns right of j."""
    m, n = a.shape[-2:]
    k = min(m, n)
    rows, cols, steps = _index(m), _index(n), _index(k)
    row_ids = lax.broadcasted_iota(_INT, (m, 1), 0)
    col_ids = lax.broadcasted_iota(_INT, (1, n), 1)

    def step(j, carry):
        r, tau, order = carry
        if pivoting:
            norms = jnp.sum(jnp.where(row_ids >= j, _abs2(r), jnp.zeros((), _real_dtype(
                r.dtype))), axis=-2)
            norms = jnp.where(cols >= j, norms, -jnp.ones((), norms.dtype))
            p = jnp.argmax(norms, axis=-1).astype(_INT)
            col_j, col_p = _column(r, j), _columns_at(r, p[..., None])[..., 0]
            r = jnp.where(col_ids == j, col_p[..., :, None],
                          jnp.where(col_ids == p[..., None, None], col_j[..., :, None], r))
            at_j, at_p = _entry(order, j), jnp.take_along_axis(order, p[..., None], axis=-1)
            order = jnp.where(cols == j, at_p,
                              jnp.where(cols == p[..., None], at_j[..., None], order))
        x = _column(r, j)
        v, tau_j, beta = _reflector(x, j, rows)
        # r <- H^H r on the columns right of j; column j becomes beta over v.
        vr = jnp.sum(jnp.conj(v)[..., :, None] * r, axis=-2)
        reflected = r - (jnp.conj(tau_j)[..., None] * v)[..., :, None] * vr[..., None, :]
        packed_j = jnp.where(rows == j, beta.astype(r.dtype)[..., None],
                             jnp.where(rows > j, v, x))
        r = jnp.where(col_ids > j, reflected,
                      jnp.where(col_ids == j, packed_j[..., :, None], r))
        tau = jnp.where(steps == j, tau_j[..., None], tau)
        return r, tau, order

    tau = jnp.zeros(a.shape[:-2] + (k,), a.dtype)
    order = lax.broadcast_in_dim(cols, a.shape[:-2] + (n,), (a.ndim - 2,))
    return _loop(k, step, (a, tau, order))


def _qr_body(a: Any, complete: bool) -> tuple[Any, Any]:
    q, r = _householder(a)
    m, n = a.shape[-2:]
    if complete or m <= n:
        return q, r
    return q[..., :, :n], r[..., :n, :]


_qr = custom_jvp(_qr_body, nondiff_argnums=(1,))


@_qr.defjvp
def _qr_jvp(complete, primals, tangents):
    # For m >= n and full rank: with X = Q^H dA R^-1 and Ω its skew (skew-Hermitian) part
    # built from the strict lower triangle, dQ = Q (Ω - X) + dA R^-1 and dR = (X - Ω) R. For
    # complex matrices Ω's diagonal is i Im(X_jj): R's diagonal stays real.
    (a,), (da,) = primals, tangents
    q, r = _qr(a, complete)
    m, n = a.shape[-2:]
    if m < n or (complete and m != n):
        raise NotImplementedError(f"the derivative of the QR decomposition is implemented for "
                                  f"m >= n with reduced factors only (as in JAX); got a {m}x{n} "
                                  f"matrix{' with complete factors' if complete else ''}"
                                  f"{where(None)}")
    r_inv = _back_sub(r, _identity_like(r))
    da_rinv = _matmul(da, r_inv)
    x = _matmul(_ct(q), da_rinv)
    low = jnp.where(_triangle(n, True, strict=True), x, jnp.zeros((), x.dtype))
    omega = low - _ct(low)
    if _is_complex(x):
        on = _triangle(n, True) & _triangle(n, False)
        omega = omega + jnp.where(on, x - jnp.real(x).astype(x.dtype), jnp.zeros((), x.dtype))
    dq = _matmul(q, omega - x) + da_rinv
    dr = _matmul(x - omega, r)
    return (q, r), (dq, dr)


def _qr_entry(a: Any, complete: bool) -> tuple[Any, Any]:
    return _qr(a, complete)


_qr_jit = jit(_qr_entry, static_argnums=(1,))


def _qr_raw_body(a: Any) -> tuple[Any, Any]:
    packed, tau, _ = _householder_packed(a, pivoting=False)
    # NumPy returns LAPACK's column-major array as it lies in memory: transposed.
    return _swap(packed), tau


_qr_raw = custom_jvp(_qr_raw_body)


@_qr_raw.defjvp
def _qr_raw_jvp(primals, tangents):
    raise NotImplementedError(f"the derivative of the QR decomposition with mode='raw' (the "
                              f"Householder reflectors) is not implemented (as in JAX, whose "
                              f"geqrf has no differentiation rule){where(None)}")


def _qr_raw_entry(a: Any) -> tuple[Any, Any]:
    return _qr_raw(a)


_qr_raw_jit = jit(_qr_raw_entry)


def _qr_pivoted_entry(a: Any, complete: bool) -> tuple[Any, Any, Any]:
    # The column order is geqp3's; the factors are then the QR of the reordered columns, with
    # the order held fixed, as JAX differentiates it (the same Householder steps a pivoted
    # factorization takes, so the same factors up to rounding).
    _, _, order = _householder_packed(lax.stop_gradient(a), pivoting=True)
    q, r = _qr(_columns_at(a, order), complete)
    return q, r, order


_qr_pivoted_jit = jit(_qr_pivoted_entry, static_argnums=(1,))


class QRResult(NamedTuple):
    """``(Q, R)`` of a QR decomposition."""
    Q: Any
    R: Any


def _matrices(name: str, a: Any) -> Any:
    """``a`` as an inexact array of shape (..., m, n), or a clear error."""
    check_arraylike(f"jnp.linalg.{name}", a)
    (a,) = promote_dtypes_inexact(jnp.asarray(a))
    if get_aval(a).ndim < 2:
        raise ValueError(f"jnp.linalg.{name}: argument must be a matrix or a stack of them, of "
                         f"shape (..., m, n); got shape {get_aval(a).shape}{where(None)}")
    return a


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition ``a = Q @ R`` of a matrix (..., m, n) by Householder reflections:
    ``mode='reduced'`` gives Q (..., m, k), R (..., k, n) with k = min(m, n); ``'complete'``
    gives Q (..., m, m), R (..., m, n); ``'r'`` gives R alone (reduced). R's diagonal has
    LAPACK's signs (for complex a: LAPACK's reflectors, Q unitary and R's diagonal real), so
    the factors equal NumPy's. Differentiable for m >= n (reduced factors), as in JAX.
    ``mode='raw'`` gives ``(h, tau)`` as NumPy and JAX: LAPACK's geqrf output transposed,
    h (..., n, m) with R in its lower triangle (``h.T``'s upper) and the reflectors' vectors
    ``v_j`` (leading 1 implied) below ``h.T``'s diagonal, ``Q = prod_j (I - tau_j v_j v_j^H)``,
    tau (..., k); not differentiable (as in JAX).

    Example::

        q, r = jnp.linalg.qr(jnp.array([[3.0, 1.0], [4.0, 2.0]]))
        # q @ r == a, q orthogonal, r = [[-5., -2.2], [0., 0.4]]
        h, tau = jnp.linalg.qr(jnp.array([[3.0, 1.0], [4.0, 2.0]]), mode="raw")
        # h = [[-5., 0.5], [-2.2, 0.4]], tau = [1.6, 0.]
    """
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"jnp.linalg.qr: unsupported mode {mode!r} (use 'reduced', 'complete', "
                         f"'r' or 'raw'){where(None)}")
    a = _matrices("qr", a)
    if mode == "raw":
        return QRResult(*_qr_raw_jit(a))
    q, r = _qr_jit(a, mode == "complete")
    return r if mode == "r" else QRResult(q, r)


# -- symmetric eigenproblem and singular values: parallel cyclic Jacobi ----------------------------
#
# Each round rotates n/2 disjoint pairs of rows and columns at once, as one matrix J (a product
# of commuting plane rotations), so a round is a few n x n matrix products; the pairs follow a
# round-robin tournament, so n - 1 rounds (n + 1 - 1 for odd n) rotate every pair once (a
# sweep). A while loop runs rounds until the off-diagonal part is negligible: Jacobi converges
# quadratically, in about 3 to 7 sweeps for the sizes measured (3 to 32), float32 or float64.

_MAX_SWEEPS = 20


def _round_robin(n: int) -> np.ndarray:
    """The pairings of a round-robin tournament of n players: (rounds, n) int32, row r giving
    each player's partner in round r (itself when it sits the round out: odd n)."""
    players = n + n % 2
    rounds = max(players - 1, 1)
    table = np.tile(np.arange(players), (rounds, 1))
    for r in range(players - 1):
        # The circle method: player players-1 stays put, the others rotate around it.
        pairs = [(r, players - 1)] + [((r + i) % (players - 1), (r - i) % (players - 1))
                                      for i in range(1, players // 2)]
        for p, q in pairs:
            table[r, p], table[r, q] = q, p
    table = table[:, :n]
    return np.where(table >= n, np.arange(n), table).astype(np.int32)


def _jacobi_rotation(g: Any, partner: Any) -> tuple[Any, Any]:
    """The rotation J (..., n, n) for which ``J^T g J`` (``J^H g J``) zeroes ``g[i, partner[i]]``
    for every pair of symmetric (Hermitian) ``g`` (..., n, n), and the (n, n) mask of those
    entries. For a Hermitian g, J = D R: D scales row q of each pair (p, q) by the phase
    ``g_qp / |g_qp|``, which makes ``(D^H g D)_pq = |g_pq|`` real, and R is the real rotation
    for that entry."""
    n = g.shape[-1]
    idx = _index(n)
    rows = lax.broadcasted_iota(_INT, (n, n), 0)
    cols = lax.broadcasted_iota(_INT, (n, n), 1)
    pair = cols == partner[:, None]
    part = _real_dtype(g.dtype)
    zero, one = jnp.zeros((), part), jnp.ones((), part)
    d = jnp.real(_diagonal(g))
    entry = jnp.sum(jnp.where(pair, g, jnp.zeros((), g.dtype)), axis=-1)   # g[i, partner[i]]
    off = jnp.abs(entry) if _is_complex(g) else entry
    d_partner = jnp.sum(jnp.where(pair, d[..., None, :], zero), axis=-1)
    first = idx < partner                                             # i is p of pair (p, q)
    skip = (off == 0) | (idx == partner)
    # theta = (g_qq - g_pp) / (2 g_pq), the same for both members of a pair; t = tan of the
    # smaller angle (a huge theta overflows theta^2 to inf, and gives t = 0 as it should).
    theta = jnp.where(first, d_partner - d, d - d_partner) / (2 * jnp.where(skip, one, off))
    t = jnp.where(theta >= 0, one, -one) / (jnp.abs(theta) + jnp.sqrt(1 + theta * theta))
    t = jnp.where(skip, zero, t)
    c = 1 / jnp.sqrt(1 + t * t)
    s = jnp.where(first, t * c, -t * c)
    rot = jnp.where(rows == cols, c[..., :, None], jnp.where(pair, s[..., :, None], zero))
    if _is_complex(g):
        safe = jnp.where(skip, one, off).astype(g.dtype)
        phase = jnp.where(first | skip, jnp.ones((), g.dtype), entry / safe)
        rot = rot.astype(g.dtype) * phase[..., :, None]
    return rot, pair & (rows != cols)


def _off_diagonal_norm(g: Any) -> Any:
    n = g.shape[-1]
    on = lax.broadcasted_iota(_INT, (n, n), 0) == lax.broadcasted_iota(_INT, (n, n), 1)
    g2 = _abs2(g)
    return jnp.sqrt(jnp.sum(jnp.where(on, jnp.zeros((), g2.dtype), g2), axis=(-2, -1)))


def _jacobi_loop(n: int, converged: Callable, rotate: Callable, carry: Any) -> Any:
    """Run ``rotate(partner, carry)`` round after round until ``converged(carry)`` holds for
    every matrix of the batch (or _MAX_SWEEPS sweeps have run)."""
    table = _round_robin(n)
    rounds = table.shape[0]

    def cond(state):
        k, inner = state
        return (k < _MAX_SWEEPS * rounds) & ~jnp.all(converged(inner))

    def body(state):
        k, inner = state
        partner = _row(jnp.asarray(table), lax.rem(k, np.int32(rounds)))
        return k + 1, rotate(partner, inner)

    return lax.while_loop(cond, body, (lax.full((), 0, _INT), carry))[1]


def _sort_columns(keys: Any, *mats: Any, descending: bool = False) -> tuple:
    """``keys`` (..., n) sorted, and each matrix's columns (..., m, n) (or each vector's entries,
    (..., n)) in the same order. Each matrix is sorted row by row with the keys alongside (a
    stable sort moves every row alike): a gather of the columns here made IREE 3.13 fail to
    compile float64 programs ("failed to legalize unresolved source materialization from
    tensor<1x3xi32> to tensor<1x3xi64>")."""
    keys = -keys if descending else keys
    out = [lax.sort(keys, dimension=-1)]
    for x in mats:   # (a matrix, or a vector like the keys)
        row_keys = keys if x.ndim == keys.ndim else lax.broadcast_in_dim(
            keys, x.shape, tuple(range(keys.ndim - 1)) + (x.ndim - 1,))
        out.append(lax.sort((row_keys, x), dimension=-1, num_keys=1)[1])
    if descending:
        out[0] = -out[0]
    return tuple(out)


def _eigh_body(a: Any) -> tuple[Any, Any]:
    """Eigenvalues (ascending, real) and eigenvectors (columns) of symmetric (Hermitian) ``a``
    (..., n, n)."""
    n = a.shape[-1]
    eps = np.finfo(a.dtype).eps
    tol = eps * jnp.sqrt(jnp.sum(_abs2(a), axis=(-2, -1)))

    def rotate(partner, carry):
        a, v = carry
        rot, pair = _jacobi_rotation(a, partner)
        a = _matmul(_ct(rot), _matmul(a, rot))
        # The rotated entries are zero in exact arithmetic: make them so, and keep a symmetric.
        a = jnp.where(pair, jnp.zeros((), a.dtype), a)
        return (a + _ct(a)) * 0.5, _matmul(v, rot)

    a, v = _jacobi_loop(n, lambda c: ~(_off_diagonal_norm(c[0]) > tol), rotate,
                        (a, _identity_like(a)))
    return _sort_columns(jnp.real(_diagonal(a)), v)


_eigh = custom_jvp(_eigh_body)


def _eigh_tangents(w: Any, v: Any, da: Any) -> tuple[Any, Any]:
    """dw = diag(V^H dA V) (real); dV = V (F ∘ V^H dA V) with F_ij = 1 / (w_j - w_i) off the
    diagonal (infinite for repeated eigenvalues, whose eigenvectors are not determined)."""
    inner = _matmul(_ct(v), _matmul(da, v))
    n = w.shape[-1]
    on = lax.broadcasted_iota(_INT, (n, n), 0) == lax.broadcasted_iota(_INT, (n, n), 1)
    gaps = w[..., None, :] - w[..., :, None]
    one, zero = jnp.ones((), w.dtype), jnp.zeros((), w.dtype)
    f = jnp.where(on, zero, 1 / jnp.where(on, one, gaps))
    return jnp.real(_diagonal(inner)), _matmul(v, f * inner)


@_eigh.defjvp
def _eigh_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    w, v = _eigh(a)
    return (w, v), _eigh_tangents(w, v, da)


def _eigvalsh_body(a: Any) -> Any:
    return _eigh_body(a)[0]


# A function of its own: its rule never forms F, infinite where eigenvalues repeat.
_eigvalsh = custom_jvp(_eigvalsh_body)


@_eigvalsh.defjvp
def _eigvalsh_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    w, v = _eigh(a)
    return w, jnp.real(_diagonal(_matmul(_ct(v), _matmul(da, v))))


def _symmetric_input(a: Any, lower: bool, symmetrize: bool, hermitian: bool = True) -> Any:
    """The symmetric (complex: Hermitian) matrix eigh works on: ``(a + a^H) / 2``, or one
    triangle of ``a`` mirrored, conjugated, with the diagonal's real part (LAPACK reads a
    Hermitian matrix so). ``hermitian=False``: a complex symmetric matrix (mirrored as is)."""
    mirror = _ct if hermitian else _swap
    if symmetrize:
        return (a + mirror(a)) * 0.5
    n = a.shape[-1]
    zero = jnp.zeros((), a.dtype)
    tri = jnp.where(_triangle(n, lower), a, zero)
    if hermitian and _is_complex(a):
        on = _triangle(n, True) & _triangle(n, False)
        tri = jnp.where(on, jnp.real(tri).astype(a.dtype), tri)
    return tri + mirror(jnp.where(_triangle(n, lower, strict=True), a, zero))


def _one_triangle(a: Any, lower: bool) -> Any:
    return _symmetric_input(a, lower, False)


# The Hermitian matrix of one triangle, whose tangent is the input's tangent whole: LAPACK
# reads one triangle for the value, and JAX's derivative rules (cholesky, eigh) take the whole
# tangent as it comes, so a non-symmetric input gets JAX's gradient (the mirroring's own
# derivative would put twice the cotangent on one triangle and none on the other).
_triangle_input = custom_jvp(_one_triangle, nondiff_argnums=(1,))


@_triangle_input.defjvp
def _triangle_input_jvp(lower, primals, tangents):
    (a,), (da,) = primals, tangents
    return _triangle_input(a, lower), da


def _hermitian_input(a: Any, lower: bool, symmetrize: bool) -> Any:
    """The Hermitian matrix a factorization works on, as JAX's: ``(a + a^H) / 2`` when
    ``symmetrize``, else the ``lower`` (or upper) triangle mirrored, the tangent taken whole
    (``_triangle_input``)."""
    return (a + _ct(a)) * 0.5 if symmetrize else _triangle_input(a, lower)


def _eigh_entry(a: Any, lower: bool, symmetrize: bool) -> Any:
    return _eigh(_hermitian_input(a, lower, symmetrize))


def _eigvalsh_entry(a: Any, lower: bool, symmetrize: bool) -> Any:
    return _eigvalsh(_hermitian_input(a, lower, symmetrize))


_eigh_jit = jit(_eigh_entry, static_argnums=(1, 2))
_eigvalsh_jit = jit(_eigvalsh_entry, static_argnums=(1, 2))


class EighResult(NamedTuple):
    """``(eigenvalues, eigenvectors)``: ascending eigenvalues and eigenvectors as columns."""
    eigenvalues: Any
    eigenvectors: Any


def _uplo(name: str, UPLO: Optional[str]) -> bool:
    if UPLO is None or UPLO == "L":
        return True
    if UPLO == "U":
        return False
    raise ValueError(f"jnp.linalg.{name}: UPLO must be 'L' or 'U', got {UPLO!r}{where(None)}")


def eigh(a: Any, UPLO: Optional[str] = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric (complex:
    Hermitian) matrix or a stack of them, by parallel cyclic Jacobi rotations (complex ones
    for a Hermitian matrix): ``a = V @ diag(w) @ V^H``, w real. As in JAX the input is
    symmetrized (``(a + a^H) / 2``); with ``symmetrize_input=False`` only the triangle
    ``UPLO`` ('L', the default, or 'U') is read, and the derivative takes the whole tangent,
    as JAX's. Differentiable (eigenvectors for distinct eigenvalues); eigenvectors' signs
    (phases) are arbitrary, as in LAPACK.

    Example::

        w, v = jnp.linalg.eigh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))   # w = [1., 3.]
    """
    lower = _uplo("eigh", UPLO)
    w, v = _eigh_jit(_square_matrices("eigh", a), lower, bool(symmetrize_input))
    return EighResult(w, v)


def eigvalsh(a: Any, UPLO: Optional[str] = "L", *, symmetrize_input: bool = True) -> Any:
    """The eigenvalues (ascending, real) of a symmetric (Hermitian) matrix or a stack of them,
    as ``eigh``'s. Their derivative ``diag(V^H dA V)`` stays finite where eigenvalues repeat.

    Example::

        jnp.linalg.eigvalsh(jnp.array([[2.0, 1.0], [1.0, 2.0]]))   # [1., 3.]
    """
    lower = _uplo("eigvalsh", UPLO)
    return _eigvalsh_jit(_square_matrices("eigvalsh", a), lower, bool(symmetrize_input))


# -- SVD: one-sided Jacobi -------------------------------------------------------------------------

def _jacobi_columns(a: Any) -> tuple[Any, Any]:
    """(b, v): ``b = a @ v`` (..., m, n) with mutually orthogonal columns and v orthogonal
    (unitary), by one-sided Jacobi: the rotations that diagonalize ``a^H a``, applied to
    ``a``'s columns (the Gram matrix is recomputed from the columns each round, so a's
    condition number is never squared). Converged when the columns' cosines are at rounding
    level."""
    n = a.shape[-1]
    tol = n * np.finfo(a.dtype).eps
    one = jnp.ones((), _real_dtype(a.dtype))

    def gram(b):
        return _matmul(_ct(b), b)

    def converged(carry):
        g = carry[2]
        # (The real part first: no complex zero constant in a loop's condition, see
        # _diagonal.)
        d = jnp.sqrt(_diagonal(jnp.real(g)))
        d = jnp.where(d == 0, one, d)
        # (Written as "not above" so that NaNs count as converged and end the loop.)
        scale = (d[..., :, None] * d[..., None, :]).astype(g.dtype)
        return ~(_off_diagonal_norm(g / scale) > tol)

    def rotate(partner, carry):
        b, v, g = carry
        rot, _ = _jacobi_rotation(g, partner)
        b = _matmul(b, rot)
        return b, _matmul(v, rot), gram(b)

    b, v, _ = _jacobi_loop(n, converged, rotate, (a, _eye(a.shape[:-2], n, a.dtype), gram(a)))
    return b, v


def _svd_body(a: Any, full: bool) -> tuple[Any, Any, Any]:
    """(u, s, vt) with s descending; u is (..., m, m) when ``full``, else (..., m, k)."""
    m, n = a.shape[-2:]
    if m < n:   # a^H = u s vt  =>  a = vt^H s u^H
        u, s, vt = _svd_body(_ct(a), full)
        return _ct(vt), s, _ct(u)
    b, v = _jacobi_columns(a)
    s, b, v = _sort_columns(jnp.sqrt(jnp.sum(_abs2(b), axis=-2)), b, v, descending=True)
    # U from a QR of b (orthogonal columns, so R is diagonal up to rounding, and real): its
    # columns are b's normalized, also where a singular value is zero, and Q completes them
    # for full U.
    q, r = _householder(b)
    signs = jnp.where(jnp.real(_diagonal(r[..., :n, :])) < 0, -jnp.ones((), a.dtype),
                      jnp.ones((), a.dtype))
    if full:
        signs = jnp.concatenate([signs, jnp.ones(signs.shape[:-1] + (m - n,), a.dtype)], -1)
    else:
        q = q[..., :, :n]
    return q * signs[..., None, :], s, _ct(v)


def _svd_tangents(u: Any, s: Any, vt: Any, da: Any) -> tuple[Any, Any, Any]:
    """The derivative of the thin SVD: with P = U^H dA V, ds = Re diag(P), and, with
    F_ij = 1 / (s_j^2 - s_i^2) off the diagonal, dU = U (F ∘ (P S + S P^H)) (+ the part of
    dA V S^-1 outside U's span when m > n) and dV likewise. For complex matrices dU also gets
    i Im(P_jj) / s_j on its diagonal (U^H dU's diagonal; the phase shared by u_j and v_j is
    free, and this puts its change on U, as JAX does)."""
    v = _ct(vt)
    p = _matmul(_ct(u), _matmul(da, v))
    k = s.shape[-1]
    on = lax.broadcasted_iota(_INT, (k, k), 0) == lax.broadcasted_iota(_INT, (k, k), 1)
    one, zero = jnp.ones((), s.dtype), jnp.zeros((), s.dtype)
    row, col = s[..., :, None], s[..., None, :]
    f = jnp.where(on, zero, 1 / jnp.where(on, one, (col + row) * (col - row)))
    ps = p * col
    sp = row * p
    inner = f * (ps + _ct(ps))
    s_inv = jnp.where(s == 0, zero, 1 / jnp.where(s == 0, one, s))[..., None, :]
    if _is_complex(p):
        inner = inner + jnp.where(on, (p - jnp.real(p).astype(p.dtype)) * s_inv,
                                  jnp.zeros((), p.dtype))
    du = _matmul(u, inner)
    dv = _matmul(v, f * (sp + _ct(sp)))
    m, n = da.shape[-2:]
    if m > n:
        dav = _matmul(da, v)
        du = du + (dav - _matmul(u, _matmul(_ct(u), dav))) * s_inv
    if n > m:
        datu = _matmul(_ct(da), u)
        dv = dv + (datu - _matmul(v, _matmul(vt, datu))) * s_inv
    return du, jnp.real(_diagonal(p)), _ct(dv)


def _svd_thin_body(a: Any) -> tuple[Any, Any, Any]:
    return _svd_body(a, False)


_svd_thin = custom_jvp(_svd_thin_body)


@_svd_thin.defjvp
def _svd_thin_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    u, s, vt = _svd_thin(a)
    return (u, s, vt), _svd_tangents(u, s, vt, da)


def _svd_full_body(a: Any) -> tuple[Any, Any, Any]:
    return _svd_body(a, True)


_svd_full = custom_jvp(_svd_full_body)


@_svd_full.defjvp
def _svd_full_jvp(primals, tangents):
    raise NotImplementedError(f"the derivative of the SVD with full_matrices=True is not "
                              f"implemented for non-square matrices (as in JAX): use "
                              f"full_matrices=False{where(None)}")


def _svdvals_body(a: Any) -> Any:
    m, n = a.shape[-2:]
    b, _ = _jacobi_columns(_ct(a) if m < n else a)
    return _sort_columns(jnp.sqrt(jnp.sum(_abs2(b), axis=-2)), descending=True)[0]


_svdvals = custom_jvp(_svdvals_body)


@_svdvals.defjvp
def _svdvals_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    u, s, vt = _svd_thin(a)
    return s, jnp.real(_diagonal(_matmul(_ct(u), _matmul(da, _ct(vt)))))


def _svd_entry(a: Any, full: bool, compute_uv: bool) -> Any:
    m, n = a.shape[-2:]
    if not compute_uv:
        return _svdvals(a)
    return _svd_full(a) if full and m != n else _svd_thin(a)


_svd_jit = jit(_svd_entry, static_argnums=(1, 2))


class SVDResult(NamedTuple):
    """``(U, S, Vh)``: ``a = U @ diag(S) @ Vh``, S descending."""
    U: Any
    S: Any
    Vh: Any


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False,
        subset_by_index: Any = None) -> Any:
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` of a matrix (..., m, n), S
    descending, by one-sided Jacobi rotations (U from a QR of the rotated columns). With
    ``full_matrices`` U is (..., m, m) and Vh (..., n, n), else (..., m, k) and (..., k, n),
    k = min(m, n); ``compute_uv=False`` gives S alone. ``hermitian=True`` uses ``eigh`` of the
    (symmetric) input. Real or complex (U and Vh unitary, S real). Differentiable as JAX's: S
    always, U and Vh for distinct nonzero singular values and ``full_matrices=False`` (or
    square a). Signs (phases) of singular vectors are arbitrary, as in LAPACK.

    Example::

        jnp.linalg.svd(jnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)   # [4., 3.]
    """
    if subset_by_index is not None:
        raise NotImplementedError(f"jnp.linalg.svd: subset_by_index is not supported"
                                  f"{where(None)}")
    a = _matrices("svd", a)
    if hermitian:
        w, v = eigh(a)
        s, w_sorted, v = _sort_columns(jnp.abs(w), w, v, descending=True)
        if not compute_uv:
            return s
        signs = jnp.where(w_sorted < 0, -jnp.ones((), s.dtype), jnp.ones((), s.dtype))
        return SVDResult(v, s, _ct(v * signs[..., None, :]))
    out = _svd_jit(a, bool(full_matrices), bool(compute_uv))
    return out if not compute_uv else SVDResult(*out)


def svdvals(x: Any, /) -> Any:
    """The singular values of a matrix or a stack of them, descending (NumPy 2).

    Example::

        jnp.linalg.svdvals(jnp.array([[3.0, 0.0], [0.0, -4.0]]))   # [4., 3.]
    """
    return svd(x, compute_uv=False)


# -- pinv, lstsq, matrix_rank, cond ----------------------------------------------------------------

def _inverse_above(s: Any, cutoff: Any) -> Any:
    """1 / s where ``s > cutoff``, else 0."""
    big = s > cutoff
    return jnp.where(big, 1 / jnp.where(big, s, jnp.ones((), s.dtype)), jnp.zeros((), s.dtype))


def _pinv_tangent(a: Any, p: Any, da: Any) -> Any:
    """The closed form for a matrix of constant rank:
    dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P."""
    pt, dat = _ct(p), _ct(da)
    ap, pa = _matmul(a, p), _matmul(p, a)
    ap, pa = _identity_like(ap) - ap, _identity_like(pa) - pa
    return (-_matmul(p, _matmul(da, p)) + _matmul(_matmul(p, pt), _matmul(dat, ap))
            + _matmul(pa, _matmul(dat, _matmul(pt, p))))


def _pinv_body(a: Any, rtol: Any) -> tuple[Any, Any]:
    """(pinv(a), singular values), singular values at most ``rtol * largest`` dropped."""
    u, s, vt = _svd_body(a, False)
    inv_s = _inverse_above(s, rtol[..., None] * s[..., :1])
    return _matmul(_ct(vt) * inv_s[..., None, :], _ct(u)), s


_pinv = custom_jvp(_pinv_body)


@_pinv.defjvp
def _pinv_jvp(primals, tangents):
    (a, rtol), (da, _) = primals, tangents
    p, s = _pinv(a, rtol)
    u, _, vt = _svd_thin(a)
    ds = jnp.real(_diagonal(_matmul(_ct(u), _matmul(da, _ct(vt)))))
    return (p, s), (_pinv_tangent(a, p, da), ds)


def _pinv_hermitian_body(a: Any, rtol: Any) -> Any:
    w, v = _eigh_body(a)   # (a symmetrized by the caller)
    s = jnp.abs(w)
    inv_w = _inverse_above(s, rtol[..., None] * jnp.max(s, axis=-1, keepdims=True))
    signs = jnp.where(w < 0, -jnp.ones((), w.dtype), jnp.ones((), w.dtype))
    return _matmul(v * (inv_w * signs)[..., None, :], _ct(v))


_pinv_hermitian = custom_jvp(_pinv_hermitian_body)


@_pinv_hermitian.defjvp
def _pinv_hermitian_jvp(primals, tangents):
    (a, rtol), (da, _) = primals, tangents
    p = _pinv_hermitian(a, rtol)
    return p, _pinv_tangent(a, p, da)


def _pinv_entry(a: Any, rtol: Any, hermitian: bool) -> Any:
    if hermitian:   # symmetrized, as eigh's input (and so is the tangent)
        return _pinv_hermitian((a + _ct(a)) * 0.5, rtol)
    return _pinv(a, rtol)[0]


def _lstsq_entry(a: Any, b: Any, rcond: Any) -> tuple[Any, Any]:
    p, s = _pinv(a, rcond)
    return _matmul(p, b), s


_pinv_jit = jit(_pinv_entry, static_argnums=(2,))
_lstsq_jit = jit(_lstsq_entry)


def _default_rtol(a: Any) -> float:
    m, n = get_aval(a).shape[-2:]
    return max(m, n) * float(np.finfo(get_aval(a).dtype).eps)


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse of a matrix (..., m, n), from its SVD (``eigh`` when
    ``hermitian``): singular values at most ``rtol`` times the largest count as zero (default
    ``10 * max(m, n) * eps``, as JAX; ``rcond`` is the older name). Real or complex. Its
    derivative is the closed form for matrices of constant rank, as JAX's.

    Example::

        jnp.linalg.pinv(jnp.array([[1.0, 0.0], [0.0, 0.0]]))   # [[1., 0.], [0., 0.]]
    """
    a = _matrices("pinv", a)
    if rtol is None:
        rtol = rcond
    if rtol is None:
        rtol = 10.0 * _default_rtol(a)
    rtol = jnp.broadcast_to(jnp.asarray(rtol, _real_dtype(get_aval(a).dtype)),
                            get_aval(a).shape[:-2])
    return _pinv_jit(a, rtol, bool(hermitian))


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:
    """The rank of ``M`` (..., m, n): the number of its singular values above a threshold
    (``hermitian=True``: of its eigenvalues' magnitudes, from ``eigh`` of the symmetrized
    input). The default threshold is ``max(m, n) * eps`` times the largest singular value. As
    in JAX (unlike NumPy, where rtol is relative), a given ``rtol`` (an array of shape (...)
    or a scalar) is compared with the singular values as it is; ``tol`` is its older name,
    and only one of them may be given. The rank has the default integer dtype (int64 under
    x64, as JAX); a vector's is 1 unless it is all zero (int32).

    Example::

        jnp.linalg.matrix_rank(jnp.array([[1.0, 2.0], [2.0, 4.0]]))              # 1
        jnp.linalg.matrix_rank(jnp.array([[2.0, 0.0], [0.0, -1e-9]]), hermitian=True)   # 1
    """
    check_arraylike("jnp.linalg.matrix_rank", M)
    if tol is not None:
        if rtol is not None:
            raise ValueError(f"jnp.linalg.matrix_rank: only one of tol or rtol may be "
                             f"specified{where(None)}")
        rtol = tol
    (M,) = promote_dtypes_inexact(jnp.asarray(M))
    if get_aval(M).ndim < 2:
        return jnp.any(M != 0).astype(_INT)
    s = svd(M, compute_uv=False, hermitian=hermitian)
    if rtol is None:
        threshold = jnp.max(s, axis=-1, keepdims=True) * jnp.asarray(_default_rtol(M), s.dtype)
    else:
        threshold = jnp.asarray(rtol, s.dtype)[..., None]
    return jnp.sum(s > threshold, axis=-1)


def lstsq(a: Any, b: Any, rcond: Any = None, *, numpy_resid: bool = False) -> tuple:
    """Least-squares solution of ``a @ x = b`` for a matrix ``a`` (m, n) and ``b`` (m,) or
    (m, k), as NumPy's: ``(x, residuals, rank, s)`` with x the minimum-norm solution (from the
    pseudo-inverse; singular values at most ``rcond`` times the largest count as zero, default
    ``max(m, n) * eps``), the squared residual norms per column of b (always, as JAX;
    ``numpy_resid=True`` gives NumPy's empty array when rank < n or m <= n, which needs a
    concrete rank), the rank (int32) and the singular values. Real or complex (residuals and
    singular values real).

    Example::

        a = jnp.array([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
        x, resid, rank, s = jnp.linalg.lstsq(a, jnp.array([1.0, 2.0, 2.0]))   # x = [7/6, 1/2]
    """
    check_arraylike("jnp.linalg.lstsq", a, b)
    a, b = promote_dtypes_inexact(jnp.asarray(a), jnp.asarray(b))
    a_shape, b_shape = get_aval(a).shape, get_aval(b).shape
    if len(a_shape) != 2:
        raise ValueError(f"jnp.linalg.lstsq: a must be a 2-d matrix, got shape {a_shape}"
                         f"{where(None)}")
    if len(b_shape) not in (1, 2) or b_shape[0] != a_shape[0]:
        raise ValueError(f"jnp.linalg.lstsq: b must have shape ({a_shape[0]},) or "
                         f"({a_shape[0]}, k) to match a's {a_shape}; got {b_shape}{where(None)}")
    m, n = a_shape
    real = _real_dtype(get_aval(a).dtype)
    eps = float(np.finfo(real).eps)
    if rcond is None:
        rcond = eps * max(m, n)
    rcond = jnp.asarray(rcond, real)
    rcond = jnp.where(rcond < 0, jnp.asarray(eps, real), rcond)
    vector = len(b_shape) == 1
    if vector:
        b = lax.reshape(b, b_shape + (1,))
    x, s = _lstsq_jit(a, b, rcond)
    rank = jnp.sum(s > rcond * s[..., :1], axis=-1).astype(_INT)
    resid = jnp.sum(_abs2(b - _matmul(a, x)), axis=0)
    if numpy_resid and (m <= n or int(rank) < n):
        resid = jnp.zeros((0,), real)
    if vector:
        x = lax.reshape(x, (n,))
    return x, resid, rank, s


def cond(x: Any, p: Any = None) -> Any:
    """The condition number of a matrix or a stack of them: the ratio of the largest to the
    smallest singular value for ``p`` None or 2 (-2: its inverse), else
    ``norm(x, p) * norm(inv(x), p)`` for p in 1, -1, inf, -inf, 'fro'.

    Example::

        jnp.linalg.cond(jnp.array([[2.0, 0.0], [0.0, 0.5]]))   # 4.
    """
    x = _matrices("cond", x)
    if p is None or p == 2 or p == -2:
        s = svd(x, compute_uv=False)
        big, small = s[..., 0], s[..., -1]
        return small / big if p == -2 else big / small
    x = _square_matrices("cond", x)
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


# -- norms -----------------------------------------------------------------------------------------

def _vector_norm(x: Any, ord: Any, axis: tuple, keepdims: bool) -> Any:
    ax = jnp.abs(x)
    if ord is None or ord == 2:
        return jnp.sqrt(jnp.sum(_abs2(x), axis=axis, keepdims=keepdims))
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
        return jnp.sqrt(jnp.sum(_abs2(x), axis=axes, keepdims=keepdims))
    if ord in ("nuc", 2, -2):
        # Singular values of the matrices the two axes span (moved last).
        s = svdvals(jnp.moveaxis(x, axes, (-2, -1)))
        out = jnp.sum(s, axis=-1) if ord == "nuc" else (jnp.max if ord == 2 else jnp.min)(
            s, axis=-1)
        if keepdims:
            out = jnp.expand_dims(out, tuple(sorted(a % x.ndim for a in axes)))
        return out
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
    matrix norms (``ord``: None/'fro', 1, -1, inf, -inf; 'nuc', 2, -2 from the singular
    values). Complex entries count by their modulus; the norm is real.

    Example::

        jnp.linalg.norm(jnp.array([3.0, 4.0]))   # 5.
    """
    check_arraylike("jnp.linalg.norm", x)
    (x,) = promote_dtypes_inexact(jnp.asarray(x))
    nd = get_aval(x).ndim
    if axis is None:
        if ord is None:
            out = jnp.sqrt(jnp.sum(_abs2(x)))
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
    powers invert), for a square matrix or a stack of them (real or complex), by repeated
    squaring.

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
            result = power if result is None else _matmul(result, power)
        n >>= 1
        if not n:
            return result
        power = _matmul(power, power)


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """The product of a chain of matrices (real or complex), in the cheapest order (by dynamic
    programming on the shapes). The first array may be a vector (a row), the last a vector (a
    column).

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
        return _matmul(product(i, s), product(s + 1, j))

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
