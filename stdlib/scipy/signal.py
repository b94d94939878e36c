"""``pyree.scipy.signal``: SciPy's N-dimensional convolution and cross-correlation on pyree
arrays (``convolve``, ``correlate``, ``convolve2d``, ``correlate2d``, ``fftconvolve``), under
``jit``, ``grad`` and ``vmap``::

    from pyree.scipy import signal
    signal.convolve(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))    # [0., 1., 2.5, 4., 1.5]
    signal.convolve2d(image, kernel, mode="same", boundary="symm")

Semantics are SciPy's: both inputs have the same number of dimensions; mode 'full' keeps the
whole convolution (size n + m - 1 along each axis), 'same' its centred part of ``in1``'s
shape, 'valid' the part that does not depend on the edges (|n - m| + 1: the inputs are
swapped when ``in2`` is the larger one in every dimension; mixed sizes are an error).
``correlate(a, b)`` is ``convolve(a, flip(conj(b)))``; ``correlate2d`` keeps SciPy's own
conventions ('same' centred one element later along axes where the kernel size is even, and
conjugated 'valid' results when the inputs swap). Integers and booleans convolve in floating
point, as in JAX. Every function is one direct ``lax.conv_general_dilated`` (exact;
``fftconvolve`` computes the same values directly, not through ``jnp.fft``).
"""
from __future__ import annotations

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]

from math import prod
from typing import Any, Optional, Sequence, Union

import numpy as np

import pyree.numpy as jnp
from pyree import lax
from pyree.numpy._util import (broadcast_shapes, canonical_axis, check_arraylike,
                               promote_dtypes_inexact)
from pyree.transpiler.programs.jit import jit
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import get_aval

_MODES = ("full", "same", "valid")
# SciPy's boundary names (and aliases) -> jnp.pad's modes.
_BOUNDARIES = {"fill": "constant", "pad": "constant", "wrap": "wrap", "circular": "wrap",
               "symm": "symmetric", "symmetric": "symmetric"}


def _inputs(name: str, in1: Any, in2: Any, ndim: Optional[int] = None) -> tuple[Any, Any]:
    """Both inputs as arrays of one inexact dtype and rank, or a clear error."""
    check_arraylike(f"scipy.signal.{name}", in1, in2)
    in1, in2 = promote_dtypes_inexact(jnp.asarray(in1), jnp.asarray(in2))
    s1, s2 = get_aval(in1).shape, get_aval(in2).shape
    if ndim is not None and (len(s1) != ndim or len(s2) != ndim):
        raise ValueError(f"scipy.signal.{name}: inputs must be {ndim}-dimensional, got shapes "
                         f"{s1} and {s2}{where(None)}")
    if len(s1) != len(s2):
        raise ValueError(f"scipy.signal.{name}: in1 and in2 must have the same number of "
                         f"dimensions, got shapes {s1} and {s2}{where(None)}")
    if 0 in s1 or 0 in s2:
        raise ValueError(f"scipy.signal.{name}: empty arrays are not supported, got shapes "
                         f"{s1} and {s2}{where(None)}")
    return in1, in2


def _check_mode(name: str, mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"scipy.signal.{name}: mode must be one of {list(_MODES)}, got "
                         f"{mode!r}{where(None)}")


def _window(name: str, mode: str, n: Sequence[int], m: Sequence[int],
            late_same: bool = False) -> tuple[tuple, tuple, bool]:
    """Which part of the full convolution ``mode`` keeps along each convolved axis (sizes
    ``n`` of in1, ``m`` of in2): (starts, lengths, whether 'valid' swapped the inputs).
    ``late_same`` rounds the 'same' centre up instead of down (SciPy's correlate2d)."""
    _check_mode(name, mode)
    full = tuple(a + b - 1 for a, b in zip(n, m))
    swapped = False
    if mode == "full":
        return (0,) * len(full), full, False
    if mode == "same":
        lengths = tuple(n)
    elif all(a >= b for a, b in zip(n, m)):
        lengths = tuple(a - b + 1 for a, b in zip(n, m))
    elif all(a <= b for a, b in zip(n, m)):
        lengths, swapped = tuple(b - a + 1 for a, b in zip(n, m)), True
    else:
        raise ValueError(f"scipy.signal.{name}: in 'valid' mode one input must be at least as "
                         f"large as the other in every dimension, got sizes {tuple(n)} and "
                         f"{tuple(m)}{where(None)}")
    starts = tuple((f - s + (late_same and mode == "same")) // 2 for f, s in zip(full, lengths))
    return starts, lengths, swapped


def _direct(x: Any, k: Any, fill: Any, axes: tuple, starts: tuple, lengths: tuple,
            boundary: str, precision: Any) -> Any:
    """The window ``[starts, starts + lengths)`` of the full convolution of ``x`` with ``k``
    along ``axes`` (elementwise, broadcast, along the other axes), as one grouped
    ``conv_general_dilated``: the other axes become its feature groups. ``boundary`` (a
    ``jnp.pad`` mode, or None for zeros) extends ``x`` past its edges."""
    nd = get_aval(x).ndim
    m = tuple(get_aval(k).shape[a] for a in axes)
    if boundary is not None:
        # Extend x by m - 1 along each convolved axis; the window moves with it.
        widths = [(0, 0)] * nd
        for a, size in zip(axes, m):
            widths[a] = (size - 1, size - 1)
        extra = {"constant_values": fill} if boundary == "constant" else {}
        x = jnp.pad(x, widths, mode=boundary, **extra)
        starts = tuple(s + size - 1 for s, size in zip(starts, m))
    others = tuple(a for a in range(nd) if a not in axes)
    batch = broadcast_shapes(*[[get_aval(v).shape[a] for a in others] for v in (x, k)])
    perm = others + axes
    ops = []
    for v in (x, k):
        shape = list(get_aval(v).shape)
        for a, size in zip(others, batch):
            shape[a] = size
        ops.append(lax.transpose(jnp.broadcast_to(v, shape), perm))
    x, k = ops
    n = get_aval(x).shape[len(others):]
    if prod(m) > prod(n):         # convolution commutes: slide the smaller array
        x, k, n, m = k, x, m, n
    groups = prod(batch)
    lhs = lax.reshape(x, (1, groups) + n)
    rhs = lax.reshape(lax.rev(k, tuple(range(len(others), nd))), (groups, 1) + m)
    # conv_general_dilated correlates: output o of the padded x is full index o + m - 1 - low.
    # Negative pads (windows inside the full result) become a crop after the convolution.
    pads = [(size - 1 - s, length - a + s) for size, s, length, a in zip(m, starts, lengths, n)]
    out = lax.conv_general_dilated(lhs, rhs, (1,) * len(m), [(max(lo, 0), max(hi, 0))
                                                              for lo, hi in pads],
                                   feature_group_count=groups, precision=precision)
    crop = [max(-lo, 0) for lo, _ in pads]
    out = lax.slice(out, [0, 0] + crop, [1, groups] + [c + s for c, s in zip(crop, lengths)])
    out = lax.reshape(out, tuple(batch) + tuple(lengths))
    return lax.transpose(out, tuple(np.argsort(perm)))


_direct_jit = jit(_direct, static_argnums=(3, 4, 5, 6, 7))


def _convolve(name: str, in1: Any, in2: Any, mode: str, precision: Any, *,
              correlate: bool = False, axes: Any = None, ndim: Optional[int] = None,
              boundary: str = "fill", fillvalue: Any = 0) -> Any:
    in1, in2 = _inputs(name, in1, in2, ndim)
    aval1, aval2 = get_aval(in1), get_aval(in2)
    if aval1.ndim == 0:
        _check_mode(name, mode)
        return in1 * (jnp.conj(in2) if correlate else in2)
    if axes is None:
        axes = tuple(range(aval1.ndim))
    else:
        axes = tuple(axes) if isinstance(axes, (tuple, list)) else (axes,)
        axes = tuple(sorted({canonical_axis(a, aval1.ndim, "axes") for a in axes}))
        if not axes:
            raise ValueError(f"scipy.signal.{name}: axes must name at least one axis"
                             f"{where(None)}")
        others = [a for a in range(aval1.ndim) if a not in axes]
        if any(aval1.shape[a] != aval2.shape[a] and 1 not in (aval1.shape[a], aval2.shape[a])
               for a in others):
            raise ValueError(f"scipy.signal.{name}: the axes not convolved must have equal "
                             f"sizes (or size 1), got shapes {aval1.shape} and {aval2.shape} "
                             f"convolved along axes {axes}{where(None)}")
    n = tuple(aval1.shape[a] for a in axes)
    m = tuple(aval2.shape[a] for a in axes)
    starts, lengths, swapped = _window(name, mode, n, m, late_same=name == "correlate2d")
    if boundary not in _BOUNDARIES:
        raise ValueError(f"scipy.signal.{name}: boundary must be one of {list(_BOUNDARIES)}, "
                         f"got {boundary!r}{where(None)}")
    pad_mode = _BOUNDARIES[boundary]
    zero_fill = pad_mode == "constant" and isinstance(fillvalue, (int, float)) and fillvalue == 0
    if mode == "valid" or zero_fill:
        pad_mode = None           # 'valid' never reads past the edges
    elif pad_mode == "constant":
        check_arraylike(f"scipy.signal.{name}", fillvalue)
        if get_aval(fillvalue).ndim != 0:
            raise ValueError(f"scipy.signal.{name}: fillvalue must be a scalar, got shape "
                             f"{get_aval(fillvalue).shape}{where(None)}")
        fillvalue = jnp.asarray(fillvalue, aval1.dtype)
    fill = fillvalue if pad_mode == "constant" else jnp.zeros((), aval1.dtype)
    if correlate:
        in2 = lax.rev(jnp.conj(in2), axes)
    out = _direct_jit(in1, in2, fill, axes, starts, lengths, pad_mode, precision)
    if mode == "same" and get_aval(out).shape != aval1.shape:
        # SciPy centres 'same' on in1's shape along the broadcast axes too.
        shape = get_aval(out).shape
        out = lax.slice(out, [(s - t) // 2 for s, t in zip(shape, aval1.shape)],
                        [(s - t) // 2 + t for s, t in zip(shape, aval1.shape)])
    if name == "correlate2d" and swapped and aval1.shape != aval2.shape:
        out = jnp.conj(out)       # SciPy's correlate2d conjugates when 'valid' swaps inputs
    return out


def _method(name: str, method: str) -> None:
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"scipy.signal.{name}: method must be 'auto', 'direct' or 'fft', got "
                         f"{method!r}{where(None)}")


def convolve(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
             precision: Any = None) -> Any:
    """N-dimensional convolution of ``in1`` with ``in2`` (same number of dimensions);
    ``mode`` 'full', 'same' (in1's shape, centred) or 'valid'. Every ``method`` ('auto',
    'direct', 'fft') computes it directly.

    Example::

        signal.convolve(jnp.array([1, 2, 3, 2, 1]), jnp.array([1, 1, 1]), mode="same")
        # [3., 6., 7., 6., 3.]
    """
    _method("convolve", method)
    return _convolve("convolve", in1, in2, mode, precision)


def correlate(in1: Any, in2: Any, mode: str = "full", method: str = "auto",
              precision: Any = None) -> Any:
    """N-dimensional cross-correlation: ``z[k] = sum_l in1[l] * conj(in2[l - k])`` over the
    lags ``mode`` keeps, that is ``convolve(in1, flip(conj(in2)), mode)``.

    Example::

        signal.correlate(jnp.array([1., 2., 3.]), jnp.array([0., 1., 0.5]))
        # [0.5, 2., 3.5, 3., 0.]
    """
    _method("correlate", method)
    return _convolve("correlate", in1, in2, mode, precision, correlate=True)


def convolve2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
               fillvalue: Any = 0, precision: Any = None) -> Any:
    """Two-dimensional convolution; ``boundary`` extends ``in1`` past its edges for 'full'
    and 'same': 'fill' with ``fillvalue``, 'wrap' periodically, 'symm' mirrored (SciPy's
    aliases 'pad', 'circular' and 'symmetric' too).

    Example::

        signal.convolve2d(jnp.array([[1., 2.], [3., 4.]]), jnp.ones((2, 2)), mode="valid")
        # [[10.]]
    """
    return _convolve("convolve2d", in1, in2, mode, precision, ndim=2, boundary=boundary,
                     fillvalue=fillvalue)


def correlate2d(in1: Any, in2: Any, mode: str = "full", boundary: str = "fill",
                fillvalue: Any = 0, precision: Any = None) -> Any:
    """Two-dimensional cross-correlation with ``convolve2d``'s boundaries and SciPy's
    conventions for it ('same' centred one element later along axes of even kernel size,
    'valid' results conjugated when in2 is the larger input).

    Example::

        signal.correlate2d(jnp.array([[1., 2.], [3., 4.]]), jnp.array([[1., 0.], [0., 1.]]))
        # [[1., 2., 0.], [3., 5., 2.], [0., 3., 4.]]
    """
    return _convolve("correlate2d", in1, in2, mode, precision, correlate=True, ndim=2,
                     boundary=boundary, fillvalue=fillvalue)


def fftconvolve(in1: Any, in2: Any, mode: str = "full",
                axes: Union[None, int, Sequence[int]] = None) -> Any:
    """``convolve`` along ``axes`` (all by default), elementwise along the others (whose
    sizes must match or be 1; 'same' keeps in1's size along them too, as SciPy). pyree has
    no FFT: this is the same exact direct convolution as ``convolve``, without the FFT's
    rounding error.

    Example::

        signal.fftconvolve(jnp.ones((2, 4)), jnp.ones((2, 2)), axes=1)
        # [[1., 2., 2., 2., 1.], [1., 2., 2., 2., 1.]]
    """
    return _convolve("fftconvolve", in1, in2, mode, None, axes=axes)
