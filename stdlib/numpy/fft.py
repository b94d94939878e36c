"""``pyree.numpy.fft``: NumPy's discrete Fourier transforms with JAX's API and dtypes.

``fft``, ``ifft``, ``rfft``, ``irfft``, ``hfft``, ``ihfft`` and their 2-D and N-D forms take
``n``/``s`` (zero-padding or truncating the input), ``axis``/``axes`` and ``norm``
('backward', the default, 'ortho' or 'forward'). Results are complex64 for real and complex64
input (complex128 under x64 for float64/complex128), real float32/float64 for ``irfft*`` and
``hfft``. The transforms are composed from pyree's primitives (``pyree.lax.fft``: direct DFTs
as real matrix products, Cooley-Tukey splits, Bluestein for large primes; O(n log n)), so they
work eagerly, under ``jit``, ``grad`` and ``vmap`` alike::

    import pyree.numpy as jnp
    x = jnp.array([1.0, 2.0, 3.0, 4.0])
    jnp.fft.fft(x)                 # [10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j]
    jnp.fft.irfft(jnp.fft.rfft(x)) # [1., 2., 3., 4.]
"""
from __future__ import annotations

__all__ = [
    "fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
    "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn",
]

import math
import operator
from typing import Any, Optional, Sequence, Union

import numpy as np

from pyree import dtypes, lax
from pyree._lax_fft import FftType, transform
from pyree.runtime.array import Array
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import Tracer, get_aval

from ._creation import asarray
from ._shape import roll
from ._ufuncs import conjugate
from ._util import canonical_axis, check_arraylike, requested_dtype, to_inexact_dtype

_NORMS = ("backward", "ortho", "forward")


def _scale(norm: Optional[str], size: int, inverse: bool) -> float:
    """The factor a transform of ``size`` points is multiplied by under ``norm``."""
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         f'"forward".{where(None)}')
    if size == 0:
        return 1.0
    if norm == "ortho":
        return 1.0 / math.sqrt(size)
    return 1.0 / size if (norm == "backward") == inverse else 1.0


def _swapped(norm: Optional[str]) -> str:
    """The norm of the opposite direction (``hfft`` is ``irfft`` the other way around)."""
    return {None: "forward", "backward": "forward", "forward": "backward"}.get(norm, norm)


def _operand(name: str, a: Any) -> Any:
    """``a`` as an inexact array: integers and booleans become floats, as in JAX."""
    check_arraylike(f"jax.numpy.fft.{name}", a)
    a = asarray(a)
    dtype = get_aval(a).dtype
    if dtype.kind in "biu":
        a = lax.convert_element_type(a, to_inexact_dtype(dtype))
    return a


def _fft_core(name: str, fft_type: FftType, a: Any, s: Optional[Sequence[int]],
              axes: Optional[Sequence[int]], norm: Optional[str]) -> Any:
    """NumPy's N-D transform semantics: the ``axes`` (default: all, or the last ``len(s)``),
    the input cropped or zero-padded to ``s``, the result scaled for ``norm``."""
    full_name = f"jax.numpy.fft.{name}"
    a = _operand(name, a)
    ndim = get_aval(a).ndim
    if s is not None:
        s = tuple(operator.index(n) for n in s)
        if any(n <= 0 for n in s):
            raise ValueError(f"Shape should be positive.{where(None)}")
        if axes is not None and len(s) != len(axes):
            raise ValueError(f"Shape and axes have different lengths.{where(None)}")
    if axes is None:
        if s is not None and len(s) > ndim:
            raise ValueError(f"{full_name}: s has {len(s)} lengths, more than the {ndim} axes "
                             f"of the input{where(None)}")
        axes = tuple(range(ndim - len(s), ndim)) if s is not None else tuple(range(ndim))
    else:
        axes = tuple(canonical_axis(ax, ndim) for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}."
                         f"{where(None)}")
    shape = get_aval(a).shape
    if s is None:
        lengths = tuple(shape[ax] for ax in axes)
        if fft_type == FftType.IRFFT and axes:
            lengths = lengths[:-1] + (max(0, 2 * (lengths[-1] - 1)),)
    else:
        lengths = s
    # The input each axis needs: the transform's length, or n//2 + 1 for irfft's last axis.
    wanted = list(lengths)
    if fft_type == FftType.IRFFT and axes:
        wanted[-1] = lengths[-1] // 2 + 1
    for axis, size in zip(axes, wanted):
        a = _fit(a, axis, size)
    if fft_type == FftType.RFFT and get_aval(a).dtype.kind == "c":
        raise ValueError(f"{full_name}: only real valued inputs supported for rfft"
                         f"{where(None)}")
    inverse = fft_type in (FftType.IFFT, FftType.IRFFT)
    # (The axes are transformed where they are: no moves to the end, as JAX makes for XLA.)
    return transform(a, fft_type, lengths, axes, _scale(norm, math.prod(lengths), inverse))


def _fit(a: Any, axis: int, size: int) -> Any:
    """``a`` cropped or zero-padded at the end of ``axis`` to ``size``."""
    have = get_aval(a).shape[axis]
    if have > size:
        return lax.slice_in_dim(a, 0, size, axis=axis)
    if have == size:
        return a
    config = [(0, 0, 0)] * get_aval(a).ndim
    config[axis] = (0, size - have, 0)
    if get_aval(a).dtype.kind == "c":
        # Parts padded apart: IREE 3.13 cannot compile a complex128 zero padding value
        # ('stream.async.splat' of an i128) under jit.
        return lax.complex(lax.pad(lax.real(a), 0.0, config), lax.pad(lax.imag(a), 0.0, config))
    return lax.pad(a, 0.0, config)


def _one_axis(name: str, axis: Any) -> Optional[list]:
    if isinstance(axis, (list, tuple)):
        raise ValueError(f"jax.numpy.fft.{name} does not support multiple axes. Please use "
                         f"jax.numpy.fft.{name}n. Got axis = {axis!r}.{where(None)}")
    return None if axis is None else [axis]


def _two_axes(name: str, axes: Sequence[int]) -> Sequence[int]:
    if len(axes) != 2:
        raise ValueError(f"jax.numpy.fft.{name} only supports 2 axes. Got axes = {axes!r}."
                         f"{where(None)}")
    return axes


# -- 1-D -------------------------------------------------------------------------------------

def fft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    """The discrete Fourier transform along ``axis``, of ``n`` points (the input cropped or
    zero-padded to ``n``): ``X_k = sum_j a_j exp(-2 pi i j k / n)``.

    Example::

        jnp.fft.fft(jnp.array([1.0, 2.0, 3.0, 4.0]))   # [10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j]
    """
    return _fft_core("fft", FftType.FFT, a, None if n is None else [n], _one_axis("fft", axis),
                     norm)


def ifft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    """The inverse discrete Fourier transform along ``axis`` (divided by ``n`` by default).

    Example::

        jnp.fft.ifft(jnp.array([10.0, -2 + 2j, -2.0, -2 - 2j]))   # [1.+0.j, 2.+0.j, 3.+0.j, 4.+0.j]
    """
    return _fft_core("ifft", FftType.IFFT, a, None if n is None else [n],
                     _one_axis("ifft", axis), norm)


def rfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    """The transform of real input: its ``n // 2 + 1`` non-negative frequencies.

    Example::

        jnp.fft.rfft(jnp.array([1.0, 2.0, 3.0, 4.0]))   # [10.+0.j, -2.+2.j, -2.+0.j]
    """
    return _fft_core("rfft", FftType.RFFT, a, None if n is None else [n],
                     _one_axis("rfft", axis), norm)


def irfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    """The inverse of ``rfft``: ``n`` real samples (default ``2 * (m - 1)`` for ``m`` input
    frequencies) from the non-negative frequencies, the input cropped or zero-padded to
    ``n // 2 + 1`` of them. The imaginary parts of the zero (and, for even ``n``, the Nyquist)
    frequency are ignored, as in NumPy.

    Example::

        jnp.fft.irfft(jnp.array([10.0, -2 + 2j, -2.0]))   # [1., 2., 3., 4.]
    """
    return _fft_core("irfft", FftType.IRFFT, a, None if n is None else [n],
                     _one_axis("irfft", axis), norm)


def hfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    """The transform of a Hermitian-symmetric signal given by its first half: ``n`` real
    values (default ``2 * (m - 1)``); ``irfft(conj(a), n)`` scaled the other way around.

    Example::

        jnp.fft.hfft(jnp.array([1.0, 2.0, 3.0]))   # [8., -2., 0., -2.]
    """
    return _fft_core("hfft", FftType.IRFFT, conjugate(_operand("hfft", a)),
                     None if n is None else [n], _one_axis("hfft", axis), _swapped(norm))


def ihfft(a: Any, n: Optional[int] = None, axis: int = -1, norm: Optional[str] = None) -> Any:
    """The inverse of ``hfft``: the first ``n // 2 + 1`` values of the Hermitian-symmetric
    spectrum of real input; ``conj(rfft(a, n)) / n`` by default.

    Example::

        jnp.fft.ihfft(jnp.array([8.0, -2.0, 0.0, -2.0]))   # [1.+0.j, 2.+0.j, 3.+0.j]
    """
    out = _fft_core("ihfft", FftType.RFFT, a, None if n is None else [n],
                    _one_axis("ihfft", axis), _swapped(norm))
    return conjugate(out)


# -- N-D -------------------------------------------------------------------------------------

def fftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
         norm: Optional[str] = None) -> Any:
    """The N-D transform over ``axes`` (all axes by default, the last ``len(s)`` when only
    ``s`` is given), each cropped or zero-padded to its length in ``s``.

    Example::

        jnp.fft.fftn(jnp.ones((2, 3)))   # [[6.+0.j, 0.+0.j, 0.+0.j], [0.+0.j, 0.+0.j, 0.+0.j]]
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
          norm: Optional[str] = None) -> Any:
    """The inverse N-D transform (divided by the number of points by default).

    Example::

        jnp.fft.ifftn(jnp.fft.fftn(x))   # x, as complex
    """
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
          norm: Optional[str] = None) -> Any:
    """The N-D transform of real input: ``rfft`` over the last of ``axes``, then ``fft`` over
    the others.

    Example::

        jnp.fft.rfftn(jnp.ones((2, 4))).shape   # (2, 3)
    """
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a: Any, s: Optional[Sequence[int]] = None, axes: Optional[Sequence[int]] = None,
           norm: Optional[str] = None) -> Any:
    """The inverse of ``rfftn``: ``ifft`` over all of ``axes`` but the last, then ``irfft``
    over it (of ``s[-1]`` points, default ``2 * (m - 1)``).

    Example::

        jnp.fft.irfftn(jnp.fft.rfftn(x), x.shape)   # x
    """
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1),
         norm: Optional[str] = None) -> Any:
    """The 2-D transform over ``axes`` (the last two by default).

    Example::

        jnp.fft.fft2(jnp.eye(2))   # [[2.+0.j, 0.+0.j], [0.+0.j, 2.+0.j]]
    """
    return _fft_core("fft2", FftType.FFT, a, s, _two_axes("fft2", axes), norm)


def ifft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1),
          norm: Optional[str] = None) -> Any:
    """The inverse 2-D transform over ``axes``.

    Example::

        jnp.fft.ifft2(jnp.fft.fft2(x))   # x, as complex
    """
    return _fft_core("ifft2", FftType.IFFT, a, s, _two_axes("ifft2", axes), norm)


def rfft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1),
          norm: Optional[str] = None) -> Any:
    """The 2-D transform of real input over ``axes``.

    Example::

        jnp.fft.rfft2(jnp.ones((4, 4))).shape   # (4, 3)
    """
    return _fft_core("rfft2", FftType.RFFT, a, s, _two_axes("rfft2", axes), norm)


def irfft2(a: Any, s: Optional[Sequence[int]] = None, axes: Sequence[int] = (-2, -1),
           norm: Optional[str] = None) -> Any:
    """The inverse of ``rfft2``.

    Example::

        jnp.fft.irfft2(jnp.fft.rfft2(x), x.shape[-2:])   # x
    """
    return _fft_core("irfft2", FftType.IRFFT, a, s, _two_axes("irfft2", axes), norm)


# -- frequencies and shifts ------------------------------------------------------------------

def _frequencies(name: str, k: np.ndarray, n: int, d: Any, dtype: Any, device: Any) -> Any:
    if isinstance(n, (list, tuple)):
        raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. Got "
                         f"n = {list(n)}.{where(None)}")
    if isinstance(d, (list, tuple)):
        raise ValueError(f"The d argument of jax.numpy.fft.{name} only takes a single value. "
                         f"Got d = {list(d)}.{where(None)}")
    out_dtype = requested_dtype(dtype) if dtype is not None else dtypes.canonicalize_dtype(float)
    compute = out_dtype if out_dtype.kind in "fc" else dtypes.canonicalize_dtype(float)
    if isinstance(d, (Tracer, Array)):
        # A traced (or device) spacing: divide on the device.
        from ._ufuncs import divide, multiply
        result = divide(asarray(k.astype(compute)), multiply(asarray(d).astype(compute), n))
    else:
        # (In float64, rounded once to the result's dtype.)
        result = asarray((k / (n * float(np.asarray(d)))).astype(compute))
    if result.dtype != out_dtype:
        result = result.astype(out_dtype)
    if device is not None:
        from pyree import device_put
        result = device_put(result, device)
    return result


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The frequencies of ``fft``'s bins for ``n`` samples ``d`` apart: ``[0, 1, ...,
    (n - 1) // 2, -(n // 2), ..., -1] / (d * n)``.

    Example::

        jnp.fft.fftfreq(4, d=0.5)   # [0., 0.5, -1., -0.5]
    """
    n = operator.index(n) if not isinstance(n, (list, tuple)) else n
    k = np.concatenate([np.arange((n - 1) // 2 + 1), np.arange(-(n // 2), 0)]) \
        if isinstance(n, int) else np.zeros(0)
    return _frequencies("fftfreq", k.astype(np.float64), n, d, dtype, device)


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The frequencies of ``rfft``'s bins for ``n`` samples ``d`` apart: ``[0, 1, ...,
    n // 2] / (d * n)``.

    Example::

        jnp.fft.rfftfreq(4)   # [0., 0.25, 0.5]
    """
    n = operator.index(n) if not isinstance(n, (list, tuple)) else n
    k = np.arange(n // 2 + 1, dtype=np.float64) if isinstance(n, int) else np.zeros(0)
    return _frequencies("rfftfreq", k, n, d, dtype, device)


def _shift_axes(x: Any, axes: Union[None, int, Sequence[int]]) -> tuple:
    ndim = get_aval(x).ndim
    if axes is None:
        return tuple(range(ndim))
    if isinstance(axes, (int, np.integer)):
        return (canonical_axis(axes, ndim),)
    return tuple(canonical_axis(ax, ndim) for ax in axes)


def fftshift(x: Any, axes: Union[None, int, Sequence[int]] = None) -> Any:
    """The zero frequency moved to the middle of ``axes`` (all by default): a roll by
    ``n // 2``.

    Example::

        jnp.fft.fftshift(jnp.fft.fftfreq(5))   # [-0.4, -0.2, 0., 0.2, 0.4]
    """
    return _half_roll("fftshift", x, axes, 1)


def ifftshift(x: Any, axes: Union[None, int, Sequence[int]] = None) -> Any:
    """The inverse of ``fftshift``: a roll by ``-(n // 2)``.

    Example::

        jnp.fft.ifftshift(jnp.fft.fftshift(jnp.fft.fftfreq(5)))   # fftfreq(5)
    """
    return _half_roll("ifftshift", x, axes, -1)


def _half_roll(name: str, x: Any, axes: Union[None, int, Sequence[int]], sign: int) -> Any:
    """``x`` rolled by ``sign * (n // 2)`` along each of ``axes``."""
    check_arraylike(f"jax.numpy.fft.{name}", x)
    x = asarray(x)
    axes = _shift_axes(x, axes)
    if not axes:
        return x
    shape = get_aval(x).shape
    return roll(x, [sign * (shape[ax] // 2) for ax in axes], axes)
