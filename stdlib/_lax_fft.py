"""Part of ``pyree.lax``: ``fft`` and ``FftType``, with ``jax.lax.fft``'s signature.

IREE has no usable FFT op, so the transforms are composed from primitives: real matrix
products (``dot_general``), reshapes, transposes, elementwise products and slices. Every
program stays differentiable and batchable through those primitives' own rules.

Inside, a complex array is a pair (re, im) of real arrays, so every matrix product is a real
one (three per complex product, by Gauss's trick) and no complex matrix product reaches IREE
(IREE 3.13 fails to compile some of those; see ``linalg._matmul``); only the result is made
complex, by ``lax.complex``.

A length-n transform is, by the size of n:

* a direct DFT (one product with the DFT matrix) for n <= 64, and for prime n <= 256;
* Cooley-Tukey's four-step split n = n1 * n2 (n1 the largest divisor <= sqrt(n)): DFTs of
  length n1 over the columns of the (n1, n2) matrix, twiddle factors, DFTs of length n2 over
  its rows, a transpose; the shorter transforms recurse, so the work is O(n log n);
* Bluestein's chirp-z algorithm for larger primes: the transform as a convolution, computed by
  power-of-two transforms of length >= 2n - 1.

Real transforms of even length take the usual half-length complex transform of the
even/odd-interleaved samples and an O(n) post- (or pre-) processing step. All constants (DFT
matrices, twiddles, chirps) are computed in float64 by NumPy at trace time, with exact integer
phases (j * k mod n), and cast to the computation's dtype.

Example::

    from pyree import lax
    lax.fft(jnp.ones(4, jnp.complex64), lax.FftType.FFT, (4,))   # [4.+0.j, 0.+0.j, 0.+0.j, 0.+0.j]
"""
from __future__ import annotations

__all__ = ["FftType", "fft"]

import enum
import functools
import math
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from pyree import dtypes
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import get_aval


def _lax():
    from pyree import lax
    return lax


class FftType(enum.IntEnum):
    """Which transform ``lax.fft`` computes (``jax.lax.FftType``): FFT (complex to complex),
    IFFT (its inverse, scaled by 1/n), RFFT (real to the n//2 + 1 non-negative frequencies),
    IRFFT (its inverse, to a real array).

    Example: ``lax.fft(x, lax.FftType.RFFT, (8,))``
    """

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3


_FFT_TYPE_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT,
                   "irfft": FftType.IRFFT}

# A transform of a length up to this is one complex product with its DFT matrix: at most a few
# hundred multiplications per sample, which a matrix product does about as fast as the extra
# passes of a split (16, 32 and 64 timed alike at 64 x 4096 points here).
_DIRECT_MAX = 64
# A prime length up to this is a direct DFT too (its matrices hold 4 * 256^2 numbers); longer
# ones go through Bluestein: two power-of-two FFTs of at least twice the length.
_PRIME_DIRECT_MAX = 256


# -- plans and constants (NumPy, float64, at trace time) --------------------------------------

@functools.lru_cache(maxsize=None)
def _split(n: int) -> int:
    """The largest divisor of ``n`` that is at most sqrt(n) (1 for primes)."""
    for d in range(math.isqrt(n), 1, -1):
        if n % d == 0:
            return d
    return 1


def _plan(n: int) -> str:
    """How a length-``n`` complex transform is done: 'direct', 'split' or 'bluestein'."""
    if n <= _DIRECT_MAX:
        return "direct"
    if _split(n) > 1:
        return "split"
    return "direct" if n <= _PRIME_DIRECT_MAX else "bluestein"


def _frozen(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    out = np.ascontiguousarray(array, dtype=dtype)
    out.flags.writeable = False  # cached and shared between traces
    return out


def _parts(c: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """A complex128 constant as its real and imaginary parts in ``dtype``."""
    return _frozen(c.real, dtype), _frozen(c.imag, dtype)


def _roots(exponents: np.ndarray, n: int, inverse: bool) -> np.ndarray:
    """exp(-+2 pi i e / n) in complex128 for integer exponents ``e``. The phase is reduced
    exactly, in integers, to a quarter turn q and an angle in [0, pi/4] (by the symmetry
    cos(pi/2 - t) = sin(t)), so that roots at multiples of pi/2 are exact (the transform of
    [1, 2, 3, 4] has exactly real bin 2, as NumPy's) and the others are correctly rounded."""
    quarter, rest = np.divmod(4 * np.mod(np.asarray(exponents, np.int64), n), n)
    reflect = 2 * rest > n
    angle = (0.5 * np.pi / n) * np.where(reflect, n - rest, rest)
    cos, sin = np.cos(angle), np.sin(angle)
    re, im = np.where(reflect, sin, cos), np.where(reflect, cos, sin)
    # Rotate by i^quarter: (re, im) -> (-im, re) per quarter turn.
    re, im = (np.choose(quarter, [re, -im, -re, im]), np.choose(quarter, [im, re, -im, -re]))
    return re - 1j * im if not inverse else re + 1j * im


@functools.lru_cache(maxsize=None)
def _dft_matrices(n: int, inverse: bool, dtype: np.dtype) -> tuple:
    """The length-n DFT matrix W = C + iS (W[j, k] = w^(jk)) as the real matrices
    (C, S, S - C, C + S) that ``_complex_product`` takes."""
    j = np.arange(n)
    w = _roots(np.outer(j, j), n, inverse)
    c, s = w.real, w.imag
    return tuple(_frozen(m, dtype) for m in (c, s, s - c, c + s))


@functools.lru_cache(maxsize=None)
def _twiddles(n1: int, n2: int, inverse: bool, dtype: np.dtype) -> tuple:
    """The four-step twiddle factors w_n^(j2 * k1) as an (n2, n1) array: (re, im)."""
    return _parts(_roots(np.outer(np.arange(n2), np.arange(n1)), n1 * n2, inverse), dtype)


@functools.lru_cache(maxsize=None)
def _bluestein_constants(n: int, inverse: bool, dtype: np.dtype) -> tuple:
    """Bluestein's length m, the chirp c_j = exp(-+ pi i j^2 / n) and the transform of the
    conjugate chirp wrapped around length m, divided by m (both as (re, im)).

    With jk = (j^2 + k^2 - (k - j)^2) / 2, X_k = c_k * sum_j (x_j c_j) * conj(c)_(k - j): a
    convolution, circular of length m >= 2n - 1 with conj(c) wrapped around."""
    m = 1 << (2 * n - 2).bit_length()
    j = np.arange(n)
    chirp = _roots(j * j, 2 * n, inverse)  # exp(-+2 pi i j^2 / 2n), j^2 reduced mod 2n
    kernel = np.zeros(m, np.complex128)
    kernel[:n] = np.conj(chirp)
    kernel[m - n + 1:] = np.conj(chirp[1:])[::-1]
    kernel_hat = np.fft.fft(kernel) / m  # (NumPy's own FFT, in float64, for the constant)
    return m, _parts(chirp, dtype), _parts(kernel_hat, dtype)


@functools.lru_cache(maxsize=None)
def _rfft_matrices(n: int, dtype: np.dtype) -> tuple:
    """The (n, n//2 + 1) real and imaginary parts of the length-n real-input DFT matrix."""
    w = _roots(np.outer(np.arange(n), np.arange(n // 2 + 1)), n, False)
    return _parts(w, dtype)


@functools.lru_cache(maxsize=None)
def _irfft_matrices(n: int, dtype: np.dtype) -> tuple:
    """The (n//2 + 1, n) matrices (R, I) of the unnormalized length-n inverse real DFT from
    the non-negative frequencies X: x = Re(X) R + Im(X) I. The other frequencies are their
    conjugates, so bins 1 .. ceil(n/2) - 1 count twice; the imaginary parts of bin 0 (and of
    bin n/2 for even n) do not count, as in NumPy."""
    h = n // 2
    w = _roots(np.outer(np.arange(h + 1), np.arange(n)), n, True)
    weight = np.full((h + 1, 1), 2.0)
    weight[0] = 1.0
    if n % 2 == 0:
        weight[h] = 1.0
    real, imag = weight * w.real, -weight * w.imag
    imag[0] = 0.0
    if n % 2 == 0:
        imag[h] = 0.0
    return _frozen(real, dtype), _frozen(imag, dtype)


@functools.lru_cache(maxsize=None)
def _real_pass_factors(n: int, inverse: bool, dtype: np.dtype) -> tuple:
    """The factors (a, b) of the even-length real transforms' O(n) step, h = n / 2, w_k =
    exp(-2 pi i k / n):

    forward, k = 0..h:      X_k = a_k Z_k + b_k conj(Z_(h-k)),  a = (1 - i w) / 2,
                            b = (1 + i w) / 2, Z the length-h DFT of x_2j + i x_2j+1;
    inverse, k = 0..h-1:    Z_k = a_k X_k + b_k conj(X_(h-k)),  a = 1 + i conj(w),
                            b = 1 - i conj(w), whose unnormalized length-h inverse DFT is
                            n * (x_2j + i x_2j+1)."""
    h = n // 2
    if inverse:
        w = np.conj(_roots(np.arange(h), n, False))
        a, b = 1 + 1j * w, 1 - 1j * w
    else:
        w = _roots(np.arange(h + 1), n, False)
        a, b = (1 - 1j * w) / 2, (1 + 1j * w) / 2
    return _parts(a, dtype), _parts(b, dtype)


# -- complex values as (real part, imaginary part) -------------------------------------------
# A complex array is a pair (re, im) of real arrays: complex products become real products,
# elementwise operations stay on contiguous real arrays, and no complex matrix product reaches
# IREE. ``im`` is None where the imaginary part is known to be zero (real input), which saves
# half the products of the first pass.

_HIGHEST = "highest"  # full float32 products on every platform (a GPU's default is coarser)

_Pair = tuple  # (re, im): real arrays of one shape, im possibly None


def _shape(x: Any) -> tuple:
    return get_aval(x).shape


def _dtype(x: Any) -> np.dtype:
    return get_aval(x).dtype


def _const(c: np.ndarray, shape: tuple) -> Any:
    """A constant laid along the trailing axes of ``shape``."""
    nd = len(shape)
    return _lax().broadcast_in_dim(c, shape, tuple(range(nd - c.ndim, nd)))


def _times_constant(z: _Pair, c: tuple[np.ndarray, np.ndarray]) -> _Pair:
    """``z`` times the complex constant ``c`` = (re, im), broadcast over leading axes."""
    lax = _lax()
    re, im = z
    shape = _shape(re)
    cr, ci = _const(c[0], shape), _const(c[1], shape)
    if im is None:
        return lax.mul(re, cr), lax.mul(re, ci)
    return (lax.sub(lax.mul(re, cr), lax.mul(im, ci)),
            lax.add(lax.mul(re, ci), lax.mul(im, cr)))


def _add(z: _Pair, w: _Pair) -> _Pair:
    lax = _lax()
    return lax.add(z[0], w[0]), lax.add(z[1], w[1])


def _conj(z: _Pair) -> _Pair:
    return z[0], (None if z[1] is None else _lax().neg(z[1]))


def _each(z: _Pair, fn: Callable[[Any], Any]) -> _Pair:
    """``fn`` applied to both parts (a zero imaginary part stays None)."""
    return fn(z[0]), (None if z[1] is None else fn(z[1]))


def _product(x: Any, matrix: np.ndarray, axis: int) -> Any:
    """``x`` contracted along ``axis`` with the rows of ``matrix``: the result has the other
    axes of ``x`` in order, then the matrix's columns."""
    return _lax().dot_general(x, matrix, (((axis,), (0,)), ((), ())), precision=_HIGHEST)


def _product_of_rows(x: Any, matrix: np.ndarray) -> Any:
    """The rows of ``x`` (batch, n) times ``matrix`` (n, k), computed transposed, (k, batch):
    see ``_rows_back``."""
    return _lax().dot_general(matrix, x, (((0,), (1,)), ((), ())), precision=_HIGHEST)


def _rows_back(z: _Pair) -> _Pair:
    """Transposed products (k, batch) back to (batch, k). IREE 3.13 fails to compile a
    product whose result reaches a complex op (``lax.complex``) in the same dispatch
    ("'vector.transfer_read' op requires valid padding vector elemental type"); pyree's
    lowering puts a barrier between a product and a transpose of its result, so a transform
    that ends in one keeps the complex op out of the product's dispatch (as linalg._matmul
    does)."""
    return _each(z, lambda p: _lax().transpose(p, (1, 0)))


def _complex_product(z: _Pair, matrices: tuple, product: Callable[[Any, np.ndarray], Any]) -> _Pair:
    """``z`` times the complex matrix W = C + iS, given as (C, S, S - C, C + S), each real
    product made by ``product(part, matrix)``: three of them, not four (Gauss): with
    k1 = C (re + im), Re = k1 - (C + S) im, Im = k1 + (S - C) re."""
    lax = _lax()
    c, s, s_minus_c, c_plus_s = matrices
    re, im = z
    if im is None:
        return product(re, c), product(re, s)
    k1 = product(lax.add(re, im), c)
    return lax.sub(k1, product(im, c_plus_s)), lax.add(k1, product(re, s_minus_c))


# -- complex transforms ------------------------------------------------------------------------
# Parts have fixed ranks: (batch, n) for the rows of a batch, (batch, n, c) for the columns of a
# batch of matrices. Callers fold all other axes into the batch axis (a free reshape), so that
# eagerly each primitive compiles for few ranks and dimension numbers.

def _dft_rows(z: _Pair, n: int, inverse: bool) -> _Pair:
    """The unnormalized length-``n`` DFT (inverse: with conjugate roots) of each row of
    ``z``'s (batch, n) parts."""
    if n == 1:
        return z
    plan = _plan(n)
    if plan == "direct":
        return _rows_back(_complex_product(z, _dft_matrices(n, inverse, _dtype(z[0])),
                                           _product_of_rows))
    if plan == "bluestein":
        return _bluestein(z, n, inverse)
    return _four_step(z, n, inverse)


def _dft_columns(z: _Pair, n: int, inverse: bool) -> _Pair:
    """The DFT along axis 1 of ``z``'s (batch, n, c) parts, returned as (batch, c, n): the
    order a product contracting axis 1 leaves, so that a direct DFT needs no transpose."""
    lax = _lax()
    batch, _, columns = _shape(z[0])
    if _plan(n) == "direct" and n > 1:
        return _complex_product(z, _dft_matrices(n, inverse, _dtype(z[0])),
                                functools.partial(_product, axis=1))
    z = _each(z, lambda p: lax.reshape(lax.transpose(p, (0, 2, 1)), (batch * columns, n)))
    return _each(_dft_rows(z, n, inverse), lambda p: lax.reshape(p, (batch, columns, n)))


def _four_step(z: _Pair, n: int, inverse: bool) -> _Pair:
    """Cooley-Tukey on the rows of ``z``'s (batch, n) parts, n = n1 * n2: with j = n2 j1 + j2
    and k = k1 + n1 k2, X_k = sum_j2 w_n2^(j2 k2) w_n^(j2 k1) sum_j1 w_n1^(j1 k1) x_j."""
    lax = _lax()
    batch = _shape(z[0])[0]
    n1 = _split(n)
    n2 = n // n1
    z = _each(z, lambda p: lax.reshape(p, (batch, n1, n2)))   # [j1, j2]
    z = _dft_columns(z, n1, inverse)                           # [j2, k1]
    z = _times_constant(z, _twiddles(n1, n2, inverse, _dtype(z[0])))
    z = _dft_columns(z, n2, inverse)                           # [k1, k2]
    # [k2, k1], k = k1 + n1 k2:
    return _each(z, lambda p: lax.reshape(lax.transpose(p, (0, 2, 1)), (batch, n)))


def _bluestein(z: _Pair, n: int, inverse: bool) -> _Pair:
    """The length-``n`` DFT of the rows of ``z`` as a circular convolution of length m, a
    power of two (see ``_bluestein_constants``)."""
    lax = _lax()
    m, chirp, kernel_hat = _bluestein_constants(n, inverse, _dtype(z[0]))
    a = _times_constant(z, chirp)
    a = _each(a, lambda p: lax.pad(p, 0.0, [(0, 0, 0), (0, m - n, 0)]))
    a = _dft_rows(a, m, False)
    a = _times_constant(a, kernel_hat)
    a = _dft_rows(a, m, True)
    return _times_constant(_each(a, lambda p: lax.slice_in_dim(p, 0, n, axis=1)), chirp)


# -- real transforms ---------------------------------------------------------------------------

def _rfft_rows(x: Any, n: int) -> _Pair:
    """The non-negative frequencies (n//2 + 1) of the DFT of each row of real ``x``
    (batch, n)."""
    lax = _lax()
    batch = _shape(x)[0]
    dtype = _dtype(x)
    if _plan(n) == "direct":
        c, s = _rfft_matrices(n, dtype)
        return _rows_back((_product_of_rows(x, c), _product_of_rows(x, s)))
    h = n // 2
    if n % 2:
        z = _dft_rows((x, None), n, False)
        return _each(z, lambda p: lax.slice_in_dim(p, 0, h + 1, axis=1))
    # Even n: the samples as h complex numbers x_2j + i x_2j+1, one half-length transform,
    # then X_k from Z_k and conj(Z_(h-k)).
    z = (lax.slice(x, (0, 0), (batch, n), (1, 2)), lax.slice(x, (0, 1), (batch, n), (1, 2)))
    z = _dft_rows(z, h, False)                                                # Z_0 .. Z_(h-1)
    z = _each(z, lambda p: lax.concatenate([p, lax.slice_in_dim(p, 0, 1, axis=1)], 1))
    mirrored = _conj(_each(z, lambda p: lax.rev(p, (1,))))                    # conj(Z_(h-k))
    a, b = _real_pass_factors(n, False, dtype)
    return _add(_times_constant(z, a), _times_constant(mirrored, b))


def _irfft_rows(z: _Pair, n: int) -> Any:
    """The unnormalized inverse real DFT (n times NumPy's ``irfft``) of the n//2 + 1
    non-negative frequencies in each row of ``z`` (batch, n//2 + 1): a real (batch, n)
    array. The imaginary parts of bin 0 and (even n) bin n/2 are ignored, as NumPy does."""
    lax = _lax()
    re, im = z
    batch = _shape(re)[0]
    dtype = _dtype(re)
    h = n // 2
    if _plan(n) == "direct":
        real, imag = _irfft_matrices(n, dtype)
        out = _product(re, real, 1)
        return out if im is None else lax.add(out, _product(im, imag, 1))
    if n % 2:
        # The full spectrum (X_(n-k) = conj(X_k)), one complex transform, its real part (to
        # which the imaginary part of X_0 contributes nothing).
        tail = _conj(_each(z, lambda p: lax.rev(lax.slice_in_dim(p, 1, h + 1, axis=1), (1,))))
        full = (lax.concatenate([re, tail[0]], 1),
                None if im is None else lax.concatenate([im, tail[1]], 1))
        return _dft_rows(full, n, True)[0]
    if im is not None:
        mask = np.ones(h + 1)
        mask[0] = mask[h] = 0.0            # Im X_0, Im X_h do not count
        im = lax.mul(im, _const(_frozen(mask, dtype), _shape(im)))
    z = (re, im)
    low = _each(z, lambda p: lax.slice_in_dim(p, 0, h, axis=1))                # X_0 .. X_(h-1)
    mirrored = _conj(_each(z, lambda p: lax.rev(lax.slice_in_dim(p, 1, h + 1, axis=1), (1,))))
    a, b = _real_pass_factors(n, True, dtype)
    packed = _add(_times_constant(low, a), _times_constant(mirrored, b))
    out_re, out_im = _dft_rows(packed, h, True)
    # n (x_2j + i x_2j+1) for j < h: interleaved back into the samples.
    return lax.reshape(lax.concatenate([lax.reshape(out_re, (batch, h, 1)),
                                        lax.reshape(out_im, (batch, h, 1))], 2), (batch, n))


# -- the transform over any axes -------------------------------------------------------------

def _along(z: tuple, axis: int, rows: Callable[[tuple], tuple]) -> tuple:
    """``rows`` (a function of tuples of (batch, n) arrays, returning tuples of (batch, m)
    arrays; None entries pass through) applied along ``axis`` of the arrays in ``z``, in
    place. The axes before ``axis`` fold into a, those after into c, and the (a, n, c) array
    is transposed to (a * c, n): the one transpose there is, whatever the rank and axis, so
    that eagerly few kernels compile."""
    lax = _lax()
    shape = _shape(next(p for p in z if p is not None))
    before, n, after = math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])

    def to_rows(p):
        if after == 1:
            return lax.reshape(p, (before, n))
        return lax.reshape(lax.transpose(lax.reshape(p, (before, n, after)), (0, 2, 1)),
                           (before * after, n))

    def from_rows(p):
        m = _shape(p)[1]
        if after != 1:
            p = lax.transpose(lax.reshape(p, (before, after, m)), (0, 2, 1))
        return lax.reshape(p, shape[:axis] + (m,) + shape[axis + 1:])

    out = rows(tuple(None if p is None else to_rows(p) for p in z))
    return tuple(None if p is None else from_rows(p) for p in out)


def _real_dtype_of(dtype: np.dtype) -> np.dtype:
    if dtype.kind == "c":
        return np.dtype(np.float64 if dtype == np.complex128 else np.float32)
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


def _complex_dtype_of(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.complex128 if _real_dtype_of(dtype) == np.float64 else np.complex64)


def transform(x: Any, fft_type: FftType, lengths: Sequence[int],
              axes: Optional[Sequence[int]] = None, scale: float = 1.0) -> Any:
    """The multidimensional transform of ``x`` over ``axes`` (non-negative; default: the last
    ``len(lengths)``), unnormalized (inverse ones too), times ``scale``; for RFFT and IRFFT the
    real axis is the last of ``axes``. The input's shape must already fit ``lengths`` (as
    ``lax.fft`` checks); its dtype is float32/float64 or complex64/complex128 (real input of
    FFT, IFFT and IRFFT counts as complex with zero imaginary part). Results: complex for FFT,
    IFFT and RFFT, real for IRFFT, of the input's precision."""
    lax = _lax()
    lengths = tuple(int(n) for n in lengths)
    shape = _shape(x)
    nd = len(shape)
    axes = tuple(range(nd - len(lengths), nd)) if axes is None else tuple(axes)
    real_dtype = _real_dtype_of(_dtype(x))
    out_shape = list(shape)
    for axis, n in zip(axes, lengths):
        out_shape[axis] = n
    if fft_type == FftType.RFFT:
        out_shape[axes[-1]] = lengths[-1] // 2 + 1
    out_shape = tuple(out_shape)
    out_dtype = real_dtype if fft_type == FftType.IRFFT else _complex_dtype_of(real_dtype)
    if not axes:
        return lax.convert_element_type(x, out_dtype)
    if 0 in shape or 0 in out_shape:
        zeros = lax.full(out_shape, 0.0, real_dtype)
        return zeros if fft_type == FftType.IRFFT else lax.complex(zeros, zeros)
    if _dtype(x).kind == "c":
        z = (lax.real(x), lax.imag(x))
    else:
        z = (x if _dtype(x) == real_dtype else lax.convert_element_type(x, real_dtype), None)
    inverse = fft_type in (FftType.IFFT, FftType.IRFFT)
    complex_axes = list(zip(axes, lengths))
    if fft_type == FftType.RFFT:
        n = complex_axes.pop()[1]
        z = _along(z[:1], axes[-1], lambda rows: _rfft_rows(rows[0], n))
    elif fft_type == FftType.IRFFT:
        complex_axes.pop()
    for axis, n in complex_axes:
        z = _along(z, axis, functools.partial(_dft_rows, n=n, inverse=inverse))
    if fft_type == FftType.IRFFT:
        out = _along(z, axes[-1], lambda rows: (_irfft_rows(rows, lengths[-1]),))[0]
        return out if scale == 1.0 else lax.mul(out, scale)
    re, im = z
    if im is None:  # (only length-1 transforms of real input leave it zero)
        im = lax.full(_shape(re), 0.0, real_dtype)
    if scale != 1.0:
        re, im = lax.mul(re, scale), lax.mul(im, scale)
    return lax.complex(re, im)


# -- lax.fft ---------------------------------------------------------------------------------

def fft(x: Any, fft_type: Union[FftType, str], fft_lengths: Sequence[int]) -> Any:
    """``jax.lax.fft``: the FFT of ``x`` over its last ``len(fft_lengths)`` axes.

    ``fft_type`` is a ``FftType`` or its name ('fft', 'ifft', 'rfft', 'irfft'). FFT and IFFT
    take complex input (real input is made complex) whose trailing axes are ``fft_lengths``;
    IFFT divides by their product. RFFT takes real input of those lengths and keeps the
    ``fft_lengths[-1] // 2 + 1`` non-negative frequencies of the last axis. IRFFT takes such
    a half spectrum and returns the real array of shape ``fft_lengths`` (divided by their
    product). Results are complex64 (complex128 under x64) or, for IRFFT, float32 (float64).

    Example::

        lax.fft(jnp.array([1.0, 2.0, 3.0, 4.0]), "rfft", (4,))   # [10.+0.j, -2.+2.j, -2.+0.j]
    """
    if isinstance(fft_type, str):
        if fft_type.lower() not in _FFT_TYPE_NAMES:
            raise ValueError(f"Unknown FFT type '{fft_type}'{_where(None)}")
        typ = _FFT_TYPE_NAMES[fft_type.lower()]
    elif isinstance(fft_type, (FftType, int)) and not isinstance(fft_type, bool) \
            and int(fft_type) in range(4):
        typ = FftType(int(fft_type))
    else:
        raise TypeError(f"Unknown FFT type value '{fft_type}'{_where(None)}")
    lengths = tuple(int(n) for n in fft_lengths)
    aval = get_aval(x)
    dtype = dtypes.canonicalize_dtype(aval.dtype)
    if typ == FftType.RFFT and dtype.kind == "c":
        raise ValueError(f"only real valued inputs supported for rfft{_where(None)}")
    if typ == FftType.IRFFT and dtype.kind != "c":
        raise ValueError(f"IRFFT input must be complex64 or complex128, got {dtype}"
                         f"{_where(None)}")
    if len(lengths) > aval.ndim:
        raise ValueError(f"FFT input shape {aval.shape} must have at least as many input "
                         f"dimensions as fft_lengths {lengths}.{_where(None)}")
    trailing = aval.shape[aval.ndim - len(lengths):]
    if typ == FftType.IRFFT:
        if lengths and (trailing[:-1] != lengths[:-1]
                        or trailing[-1] != lengths[-1] // 2 + 1):
            raise ValueError(f"IRFFT input shape {aval.shape} minor dimensions must be "
                             f"{lengths[:-1] + (lengths[-1] // 2 + 1,)} for fft_lengths "
                             f"{lengths}{_where(None)}")
    elif trailing != lengths:
        raise ValueError(f"{typ.name} input shape {aval.shape} minor dimensions must be equal "
                         f"to fft_lengths {lengths}{_where(None)}")
    if any(n < 0 for n in lengths):
        raise ValueError(f"fft_lengths must not be negative, got {lengths}{_where(None)}")
    size = math.prod(lengths)
    scale = 1.0 / size if typ in (FftType.IFFT, FftType.IRFFT) and size else 1.0
    return transform(x, typ, lengths, scale=scale)
