"""Part of ``pyree.lax``: convolutions, windowed reductions and cumulative reductions.

* ``conv_general_dilated`` (and ``conv``, ``conv_with_general_padding``, ``conv_transpose``)
  bind the ``conv_general_dilated`` primitive (transpiler/families/windows.py).
* ``reduce_window`` is composed from primitives: the operand is padded with the initial value
  (interior padding for base dilation), and each offset of the window is a strided ``slice``
  combined with the computation. Gradients and vmap come from those primitives' rules, and
  IREE fuses the slices into one pass for pooling-sized windows.
* ``cumsum``, ``cumprod``, ``cummax``, ``cummin``, ``cumlogsumexp`` are a parallel prefix scan
  (Hillis-Steele): log2(n) steps, each combining the array with itself shifted by 1, 2, 4, ...
  (slices and a concatenate), so O(n log n) work and differentiable and batchable for free.
"""
from __future__ import annotations

__all__ = [
    "ConvDimensionNumbers", "conv", "conv_dimension_numbers", "conv_general_dilated",
    "conv_general_dilated_patches", "conv_general_shape_tuple", "conv_shape_tuple",
    "conv_transpose", "conv_transpose_shape_tuple", "conv_with_general_padding", "cumlogsumexp",
    "cummax", "cummin", "cumprod", "cumsum", "padtype_to_pads", "reduce_window",
    "reduce_window_shape_tuple",
]

import itertools
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from pyree import dtypes
from pyree.runtime.array import Array as _Array
from pyree.transpiler.core import primitives as P
from pyree.transpiler.families import windows as _w
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import Tracer as _Tracer


def _precision_name(precision: Any) -> str:
    from pyree.lax import precision_name   # (lax imports this module at its end)
    return precision_name(precision)
from pyree.transpiler.core.trace import TypedScalar as _TypedScalar
from pyree.transpiler.core.trace import get_aval
from pyree.transpiler.families.windows import ConvDimensionNumbers

PaddingLike = Union[str, Sequence[tuple[int, int]]]


# -- padding and dimension numbers -----------------------------------------------------------------

def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
    """The (low, high) padding pairs that a padding name means for windows of
    ``window_shape`` (already dilated) moved by ``window_strides`` over ``in_shape``:
    'VALID' pads nothing; 'SAME' pads so that the output has ceil(n / stride) elements, the
    odd element going high; 'SAME_LOWER' puts it low.

    Example::

        lax.padtype_to_pads((5,), (3,), (2,), "SAME")   # [(1, 1)]
    """
    if not isinstance(padding, str):
        raise TypeError(f"padding must be a string, got {padding!r}")
    kind = padding.upper()
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"unknown padding {padding!r}: use 'SAME', 'SAME_LOWER', 'VALID' or "
                         f"a sequence of (low, high) pairs{_where(None)}")
    pads = []
    for n, k, s in zip(in_shape, window_shape, window_strides):
        out = -(-int(n) // int(s))
        total = max((out - 1) * int(s) + int(k) - int(n), 0)
        small = total // 2
        pads.append((small, total - small) if kind == "SAME" else (total - small, small))
    return pads


def _letters_to_spec(layout: str, first: str, second: str, spatial_order: str,
                     what: str) -> tuple:
    if first not in layout or second not in layout:
        raise TypeError(f"conv {what} layout {layout!r} needs the letters {first!r} and "
                        f"{second!r}{_where(None)}")
    spatial = [c for c in layout if c not in (first, second)]
    if sorted(spatial) != sorted(spatial_order):
        raise TypeError(f"conv {what} layout {layout!r}: its spatial letters must be those of "
                        f"the kernel layout ({spatial_order!r}){_where(None)}")
    ordered = sorted(spatial, key=spatial_order.index)
    return (layout.index(first), layout.index(second)) + tuple(layout.index(c) for c in ordered)


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: Any) -> ConvDimensionNumbers:
    """``dimension_numbers`` (None, a ``ConvDimensionNumbers``, or three layout strings such
    as ``('NHWC', 'HWIO', 'NHWC')``) as a ``ConvDimensionNumbers`` of axis tuples. Spatial axes
    are paired in the order the kernel layout names them.

    Example::

        lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
        # ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    ndim = len(lhs_shape)
    if len(rhs_shape) != ndim:
        raise TypeError(f"convolution needs arrays of equal rank, got shapes {tuple(lhs_shape)} "
                        f"and {tuple(rhs_shape)}{_where(None)}")
    if ndim < 2:
        raise TypeError(f"convolution needs arrays of rank >= 2, got shapes {tuple(lhs_shape)} "
                        f"and {tuple(rhs_shape)}{_where(None)}")
    if dimension_numbers is None:
        return _w.canonical_numbers(ndim)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        specs = dimension_numbers
    elif (isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3
          and all(isinstance(s, str) for s in dimension_numbers)):
        lhs, rhs, out = dimension_numbers
        for what, s in (("lhs", lhs), ("rhs", rhs), ("out", out)):
            if len(s) != ndim or len(set(s)) != ndim:
                raise TypeError(f"conv {what} layout {s!r} must name each of the {ndim} axes "
                                f"once{_where(None)}")
        kernel_spatial = "".join(c for c in rhs if c not in "OI")
        specs = ConvDimensionNumbers(
            _letters_to_spec(lhs, "N", "C", kernel_spatial, "lhs"),
            _letters_to_spec(rhs, "O", "I", kernel_spatial, "rhs"),
            _letters_to_spec(out, "N", "C", kernel_spatial, "out"))
    elif isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3:
        specs = ConvDimensionNumbers(*dimension_numbers)
    else:
        raise TypeError(f"conv dimension_numbers must be None, a ConvDimensionNumbers or three "
                        f"layout strings, got {dimension_numbers!r}{_where(None)}")
    specs = ConvDimensionNumbers(*(tuple(int(a) for a in s) for s in specs))
    for s in specs:
        if sorted(s) != list(range(ndim)):
            raise TypeError(f"conv dimension numbers {tuple(specs)} must each be a permutation "
                            f"of the {ndim} axes{_where(None)}")
    return specs


def _ints(value: Optional[Sequence[int]], n: int, what: str, default: int = 1) -> tuple:
    if value is None:
        return (default,) * n
    if isinstance(value, (int, np.integer)):
        value = (value,)
    value = tuple(int(v) for v in value)
    if len(value) != n:
        raise ValueError(f"conv {what} {value} needs one entry per spatial dimension ({n})"
                         f"{_where(None)}")
    return value


def _pairs(padding: Any, n: int) -> tuple:
    try:
        pairs = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise ValueError(f"padding must be 'SAME', 'SAME_LOWER', 'VALID' or a sequence of "
                         f"(low, high) integer pairs, got {padding!r}{_where(None)}") from None
    if len(pairs) != n:
        raise ValueError(f"padding {padding!r} needs one (low, high) pair per spatial dimension "
                         f"({n}){_where(None)}")
    return pairs


def _check_array(name: str, *xs: Any) -> None:
    for x in xs:
        if not isinstance(x, (_Array, _Tracer, np.ndarray, np.generic, _TypedScalar)):
            raise TypeError(f"{name} requires arrays, got {type(x).__name__}{_where(None)}")


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int],
                         padding: PaddingLike, lhs_dilation: Optional[Sequence[int]] = None,
                         rhs_dilation: Optional[Sequence[int]] = None,
                         dimension_numbers: Any = None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision: Any = None,
                         preferred_element_type: Any = None) -> Any:
    """General n-dimensional convolution (a cross-correlation, as in ``jax.lax``): strides,
    'SAME'/'VALID'/'SAME_LOWER' or explicit padding, input (``lhs``) and kernel (``rhs``)
    dilation, grouped convolutions, and any layout through ``dimension_numbers``.

    Example::

        x = jnp.ones((1, 5, 5, 3))                     # NHWC
        w = jnp.ones((3, 3, 3, 8))                     # HWIO
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        y.shape                                        # (1, 5, 5, 8)
    """
    _check_array("conv_general_dilated", lhs, rhs)
    l_aval, r_aval = get_aval(lhs), get_aval(rhs)
    numbers = conv_dimension_numbers(l_aval.shape, r_aval.shape, dimension_numbers)
    nsp = l_aval.ndim - 2
    strides = _ints(window_strides, nsp, "window_strides")
    lhs_dil = _ints(lhs_dilation, nsp, "lhs_dilation")
    rhs_dil = _ints(rhs_dilation, nsp, "rhs_dilation")
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dil):
            raise ValueError("string padding is not supported with lhs_dilation (a transposed "
                             "convolution): give explicit (low, high) pairs or use "
                             f"lax.conv_transpose{_where(None)}")
        kernel = [_w.dilate_dim(r_aval.shape[a], d) for a, d in zip(numbers.rhs_spec[2:], rhs_dil)]
        in_shape = [l_aval.shape[a] for a in numbers.lhs_spec[2:]]
        pads = tuple(padtype_to_pads(in_shape, kernel, strides, padding))
    else:
        pads = _pairs(padding, nsp)
    pref = None if preferred_element_type is None else \
        dtypes.canonicalize_dtype(preferred_element_type)
    return _w.conv(lhs, rhs, window_strides=strides, padding=pads, lhs_dilation=lhs_dil,
                   rhs_dilation=rhs_dil, dimension_numbers=numbers,
                   feature_group_count=int(feature_group_count),
                   batch_group_count=int(batch_group_count),
                   precision=_precision_name(precision),
                   preferred_element_type=pref)


def _windowed_sizes(in_sizes: Sequence[int], window: Sequence[int], strides: Sequence[int],
                    pads: Sequence[tuple[int, int]]) -> tuple:
    """How many windows of (dilated) size ``window`` fit along each padded input axis."""
    sizes = []
    for n, k, s, (lo, hi) in zip(in_sizes, window, strides, pads):
        sizes.append(max(0, (int(n) + int(lo) + int(hi) - int(k)) // int(s) + 1))
    return tuple(sizes)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: PaddingLike,
                             dimension_numbers: Any) -> tuple:
    """The output shape of ``conv_general_dilated`` (no dilation) for these input shapes,
    in the output layout of ``dimension_numbers``.

    Example::

        lax.conv_general_shape_tuple((1, 5, 5, 3), (3, 3, 3, 8), (1, 1), "SAME",
                                     ("NHWC", "HWIO", "NHWC"))   # (1, 5, 5, 8)
    """
    numbers, strides, in_sizes, kernel = _conv_shape_parts(lhs_shape, rhs_shape, window_strides,
                                                          dimension_numbers)
    pads = padtype_to_pads(in_sizes, kernel, strides, padding) if isinstance(padding, str) \
        else _pairs(padding, len(strides))
    return _in_out_layout(lhs_shape, rhs_shape, numbers,
                          _windowed_sizes(in_sizes, kernel, strides, pads))


def _conv_shape_parts(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                      window_strides: Sequence[int], dimension_numbers: Any) -> tuple:
    """(dimension numbers, strides, input spatial sizes, kernel spatial sizes) of a
    convolution's shapes, for the shape functions."""
    numbers = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    strides = _ints(window_strides, len(lhs_shape) - 2, "window_strides")
    in_sizes = [int(lhs_shape[a]) for a in numbers.lhs_spec[2:]]
    kernel = [int(rhs_shape[a]) for a in numbers.rhs_spec[2:]]
    return numbers, strides, in_sizes, kernel


def _in_out_layout(lhs_shape: Sequence[int], rhs_shape: Sequence[int], numbers: Any,
                   spatial: Sequence[int]) -> tuple:
    """The output shape (batch, output features, ``spatial``) placed in the output layout."""
    canonical = [int(lhs_shape[numbers.lhs_spec[0]]), int(rhs_shape[numbers.rhs_spec[0]]),
                 *spatial]
    out = [0] * len(lhs_shape)
    for axis, size in zip(numbers.out_spec, canonical):
        out[axis] = size
    return tuple(out)


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                     strides: Sequence[int], pads: PaddingLike, batch_group_count: int = 1) -> tuple:
    """The output shape (NC...) of a convolution of an NC... input with an OI... kernel:
    ``(N // batch_group_count, O, *spatial)``; ``pads`` is a padding name or (low, high)
    pairs (``jax.lax.conv_shape_tuple``).

    Example::

        lax.conv_shape_tuple((2, 3, 10, 9), (4, 3, 3, 2), (1, 2), "SAME")   # (2, 4, 10, 5)
    """
    nsp = len(lhs_shape) - 2
    strides = _ints(strides, nsp, "strides")
    kernel = [int(k) for k in rhs_shape[2:]]
    pads = padtype_to_pads(lhs_shape[2:], kernel, strides, pads) if isinstance(pads, str) \
        else _pairs(pads, nsp)
    if int(lhs_shape[0]) % int(batch_group_count):
        raise ValueError(f"the batch size {lhs_shape[0]} must be a multiple of "
                         f"batch_group_count={batch_group_count}{_where(None)}")
    return (int(lhs_shape[0]) // int(batch_group_count), int(rhs_shape[0])) + \
        _windowed_sizes(lhs_shape[2:], kernel, strides, pads)


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: PaddingLike,
                               dimension_numbers: Any) -> tuple:
    """The output shape of ``conv_transpose`` (no kernel dilation) for these input shapes,
    in the output layout of ``dimension_numbers`` (``jax.lax.conv_transpose_shape_tuple``).

    Example::

        lax.conv_transpose_shape_tuple((2, 10, 9, 3), (3, 2, 3, 4), (1, 2), "SAME",
                                       ("NHWC", "HWIO", "NHWC"))   # (2, 10, 18, 4)
    """
    numbers, strides, in_sizes, kernel = _conv_shape_parts(lhs_shape, rhs_shape, window_strides,
                                                          dimension_numbers)
    if isinstance(padding, str):
        pads = [_transpose_padding(k, s, padding) for k, s in zip(kernel, strides)]
    else:
        pads = _pairs(padding, len(strides))
    # The input dilated by the strides ((n - 1) * s + 1), padded, then a stride-1 window.
    spatial = [(n - 1) * s + 1 + lo + hi - k + 1
               for n, k, s, (lo, hi) in zip(in_sizes, kernel, strides, pads)]
    return _in_out_layout(lhs_shape, rhs_shape, numbers, spatial)


def conv_general_dilated_patches(lhs: Any, filter_shape: Sequence[int],
                                 window_strides: Sequence[int], padding: PaddingLike,
                                 lhs_dilation: Optional[Sequence[int]] = None,
                                 rhs_dilation: Optional[Sequence[int]] = None,
                                 dimension_numbers: Any = None, precision: Any = None,
                                 preferred_element_type: Any = None) -> Any:
    """The patches a ``conv_general_dilated`` with a kernel of spatial shape ``filter_shape``
    would see: the output has ``C * prod(filter_shape)`` features, channel-major (feature
    ``c * prod(filter_shape) + j`` is input channel c at the j-th window position, row-major),
    laid out as ``dimension_numbers``' output (``jax.lax.conv_general_dilated_patches``). It
    is that convolution with a one-hot kernel, grouped by channel.

    Example::

        x = jnp.arange(16.0).reshape(1, 1, 4, 4)
        lax.conv_general_dilated_patches(x, (2, 2), (2, 2), "VALID")[0, :, 0, 0]   # [0, 1, 4, 5]
    """
    _check_array("conv_general_dilated_patches", lhs)
    aval = get_aval(lhs)
    ndim = aval.ndim
    numbers = conv_dimension_numbers(aval.shape, (1,) * ndim, dimension_numbers)
    numbers = numbers._replace(rhs_spec=tuple(range(ndim)))   # our kernel is OI...
    channels = int(aval.shape[numbers.lhs_spec[1]])
    window = int(np.prod(filter_shape, dtype=np.int64))
    # Output feature c * window + j (group c) picks window position j of channel c.
    one_hot = np.eye(window, dtype=aval.dtype).reshape((window, 1) + tuple(filter_shape))
    kernel = np.tile(one_hot, (channels,) + (1,) * (ndim - 1))
    from pyree.lax import Precision
    return conv_general_dilated(lhs, kernel, window_strides, padding,
                                lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                                dimension_numbers=numbers, feature_group_count=channels,
                                precision=Precision.HIGHEST if precision is None else precision,
                                preferred_element_type=preferred_element_type)


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Sequence[tuple[int, int]],
                              base_dilation: Optional[Sequence[int]] = None,
                              window_dilation: Optional[Sequence[int]] = None) -> tuple:
    """The output shape of ``reduce_window`` for an operand of ``operand_shape`` and explicit
    (low, high) ``padding`` pairs.

    Example::

        lax.reduce_window_shape_tuple((1, 4, 4, 1), (1, 2, 2, 1), (1, 2, 2, 1),
                                      ((0, 0),) * 4)   # (1, 2, 2, 1)
    """
    n = len(operand_shape)
    base = _ints(base_dilation, n, "base_dilation")
    win_dil = _ints(window_dilation, n, "window_dilation")
    in_sizes = [_w.dilate_dim(d, b) for d, b in zip(operand_shape, base)]
    window = [_w.dilate_dim(k, d) for k, d in zip(window_dimensions, win_dil)]
    return _windowed_sizes(in_sizes, window, _ints(window_strides, n, "window_strides"),
                           _pairs(padding, n))


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: PaddingLike,
         precision: Any = None, preferred_element_type: Any = None) -> Any:
    """Convolution of an NC... input with an OI... kernel (``conv_general_dilated`` without
    dilation or groups).

    Example::

        lax.conv(jnp.ones((1, 1, 5)), jnp.ones((1, 1, 3)), (1,), "VALID")   # [[[3., 3., 3.]]]
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int],
                              padding: PaddingLike, lhs_dilation: Optional[Sequence[int]],
                              rhs_dilation: Optional[Sequence[int]], precision: Any = None,
                              preferred_element_type: Any = None) -> Any:
    """Convolution of NC... and OI... arrays with padding and dilations.

    Example::

        lax.conv_with_general_padding(x, w, (1, 1), [(1, 1), (1, 1)], None, (2, 2))
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_padding(k: int, stride: int, padding: str) -> tuple[int, int]:
    """Padding of the stride-dilated input that makes conv_transpose the gradient of a
    'SAME' (output n * stride) or 'VALID' (output (n - 1) * stride + k) convolution."""
    kind = padding.upper()
    if kind == "SAME":
        total = k + stride - 2
        low = k - 1 if stride > k - 1 else -(-total // 2)
    elif kind == "VALID":
        total = k + stride - 2 + max(k - stride, 0)
        low = k - 1
    else:
        raise ValueError(f"conv_transpose padding must be 'SAME', 'VALID' or (low, high) pairs, "
                         f"got {padding!r}{_where(None)}")
    return low, total - low


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: PaddingLike,
                   rhs_dilation: Optional[Sequence[int]] = None, dimension_numbers: Any = None,
                   transpose_kernel: bool = False, precision: Any = None,
                   preferred_element_type: Any = None) -> Any:
    """Transposed convolution ("deconvolution"): the input dilated by ``strides``, then
    convolved. Layouts default to NHC/HIO, NHWC/HWIO, NHWDC/HWDIO. ``transpose_kernel=True``
    flips the kernel and swaps its I/O axes (the exact gradient of ``conv_general_dilated``).

    Example::

        x = jnp.ones((1, 4, 4, 2))                       # NHWC
        w = jnp.ones((3, 3, 2, 5))                       # HWIO
        lax.conv_transpose(x, w, (2, 2), "SAME").shape   # (1, 8, 8, 5)
    """
    _check_array("conv_transpose", lhs, rhs)
    l_aval, r_aval = get_aval(lhs), get_aval(rhs)
    nsp = l_aval.ndim - 2
    if dimension_numbers is None:
        defaults = {1: ("NHC", "HIO", "NHC"), 2: ("NHWC", "HWIO", "NHWC"),
                    3: ("NHWDC", "HWDIO", "NHWDC")}
        if nsp not in defaults:
            raise ValueError(f"conv_transpose without dimension_numbers supports 1, 2 or 3 "
                             f"spatial dimensions, got rank {l_aval.ndim}{_where(None)}")
        dimension_numbers = defaults[nsp]
    numbers = conv_dimension_numbers(l_aval.shape, r_aval.shape, dimension_numbers)
    strides = _ints(strides, nsp, "strides")
    rhs_dil = _ints(rhs_dilation, nsp, "rhs_dilation")
    kernel = [_w.dilate_dim(r_aval.shape[a], d) for a, d in zip(numbers.rhs_spec[2:], rhs_dil)]
    if isinstance(padding, str):
        pads = tuple(_transpose_padding(k, s, padding) for k, s in zip(kernel, strides))
    else:
        pads = _pairs(padding, nsp)
    if transpose_kernel:
        spatial = numbers.rhs_spec[2:]
        if spatial:
            rhs = P.rev_p.bind(rhs, dimensions=tuple(sorted(spatial)))
        numbers = numbers._replace(rhs_spec=(numbers.rhs_spec[1], numbers.rhs_spec[0])
                                   + tuple(numbers.rhs_spec[2:]))
    return conv_general_dilated(lhs, rhs, (1,) * nsp, pads, lhs_dilation=strides,
                                rhs_dilation=rhs_dil, dimension_numbers=numbers,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


# -- reduce_window ---------------------------------------------------------------------------------

def _monoid_identity(computation: Callable, dtype: np.dtype) -> Any:
    """The identity of a known reduction (None if ``computation`` is not one)."""
    from pyree import lax
    from pyree.numpy import _ufuncs as ufuncs
    floating = dtype.kind in "fc" or dtype == dtypes.bfloat16
    if computation in (lax.add, ufuncs.add):
        return False if dtype == np.bool_ else 0
    if computation in (lax.mul, ufuncs.multiply):
        return True if dtype == np.bool_ else 1
    if computation in (lax.max, ufuncs.maximum):
        if dtype == np.bool_:
            return False
        return -np.inf if floating else np.iinfo(dtype).min
    if computation in (lax.min, ufuncs.minimum):
        if dtype == np.bool_:
            return True
        return np.inf if floating else np.iinfo(dtype).max
    return None


def _is_identity(init: Any, identity: Any) -> bool:
    """Whether a concrete init value equals the reduction's identity (so it can be skipped)."""
    if identity is None or isinstance(init, _Tracer):
        return False
    try:
        value = np.asarray(init)
    except Exception:
        return False
    return value.shape == () and bool(value == identity)


def reduce_window(operand: Any, init_value: Any, computation: Callable,
                  window_dimensions: Sequence[int], window_strides: Optional[Sequence[int]] = None,
                  padding: PaddingLike = "VALID", base_dilation: Optional[Sequence[int]] = None,
                  window_dilation: Optional[Sequence[int]] = None) -> Any:
    """Reduce each window of ``operand`` with ``computation`` starting from ``init_value``
    (``jax.lax.reduce_window``). ``computation`` is applied elementwise to whole arrays:
    ``lax.add``/``max``/``min``/``mul`` or any function of elementwise operations; ``operand``
    and ``init_value`` may be matching pytrees (the computation then takes and returns tuples).

    Example (2x2 max pooling with stride 2 of an NHWC batch)::

        lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    """
    from pyree import lax, tree_util
    flat, tree = tree_util.tree_flatten(operand)
    inits, init_tree = tree_util.tree_flatten(init_value)
    if tree != init_tree or len(flat) != len(inits):
        raise ValueError(f"reduce_window: operand and init_value must have the same tree "
                         f"structure, got {tree} and {init_tree}{_where(None)}")
    if not flat:
        raise ValueError("reduce_window needs at least one operand")
    if not callable(computation):
        raise TypeError(f"reduce_window computation must be callable, got "
                        f"{type(computation).__name__}{_where(None)}")
    _check_array("reduce_window", *flat)
    avals = [get_aval(x) for x in flat]
    shape = avals[0].shape
    if any(a.shape != shape for a in avals):
        raise ValueError(f"reduce_window operands must have equal shapes, got "
                         f"{[a.shape for a in avals]}{_where(None)}")
    ndim = len(shape)
    window = tuple(int(d) for d in window_dimensions)
    if len(window) != ndim:
        raise TypeError(f"reduce_window: window_dimensions {window} needs one entry per axis of "
                        f"the operand of shape {shape}{_where(None)}")
    strides = _ints(window_strides, ndim, "window_strides")
    base = _ints(base_dilation, ndim, "base_dilation")
    wdil = _ints(window_dilation, ndim, "window_dilation")
    for what, value in (("window_dimensions", window), ("window_strides", strides),
                        ("base_dilation", base), ("window_dilation", wdil)):
        if any(v < (0 if what == "window_dimensions" else 1) for v in value):
            raise TypeError(f"reduce_window {what} must be positive, got {value}{_where(None)}")
    dilated_window = [_w.dilate_dim(k, d) for k, d in zip(window, wdil)]
    if isinstance(padding, str):
        pads = tuple(padtype_to_pads(shape, dilated_window, strides, padding))
    else:
        pads = _pairs(padding, ndim)

    # Initial values as scalars of each operand's dtype.
    init_scalars = []
    for x, a, init in zip(flat, avals, inits):
        if isinstance(init, (bool, int, float, complex, np.generic)) or (
                isinstance(init, np.ndarray) and init.ndim == 0):
            init_scalars.append(_TypedScalar(np.asarray(init).item(), a.dtype, False))
        else:
            ia = get_aval(init)
            if ia.shape != ():
                raise TypeError(f"reduce_window init_value must be a scalar, got shape "
                                f"{ia.shape}{_where(None)}")
            if ia.dtype != a.dtype:
                init = lax.convert_element_type(init, a.dtype)
            init_scalars.append(init)

    padded = [lax.pad(x, init, [(lo, hi, b - 1) for (lo, hi), b in zip(pads, base)])
              for x, init in zip(flat, init_scalars)]
    padded_shape = get_aval(padded[0]).shape
    out_shape = tuple(max((p - k) // s + 1, 0) if p >= k else 0
                      for p, k, s in zip(padded_shape, dilated_window, strides))

    def combine(acc: list, item: list) -> list:
        if len(flat) == 1:
            result = computation(acc[0], item[0])
            return [result]
        result = computation(tree_util.tree_unflatten(tree, acc),
                             tree_util.tree_unflatten(tree, item))
        return tree_util.tree_leaves(result)

    identities = [_monoid_identity(computation, a.dtype) for a in avals]
    skip_init = len(flat) == 1 and _is_identity(inits[0], identities[0])
    acc = None if skip_init else [lax.broadcast_in_dim(i, out_shape, ()) for i in init_scalars]
    if 0 not in out_shape:
        for offset in itertools.product(*[range(k) for k in window]):
            starts = [o * d for o, d in zip(offset, wdil)]
            limits = [st + (n - 1) * s + 1 for st, n, s in zip(starts, out_shape, strides)]
            item = [lax.slice(p, starts, limits, strides) for p in padded]
            acc = item if acc is None else combine(acc, item)
    if acc is None:  # an empty window: every output is the initial value
        acc = [lax.broadcast_in_dim(i, out_shape, ()) for i in init_scalars]
    acc = [lax.convert_element_type(r, a.dtype) if get_aval(r).dtype != a.dtype else r
           for r, a in zip(acc, avals)]
    return tree_util.tree_unflatten(tree, acc)


# -- cumulative reductions -------------------------------------------------------------------------

def _logaddexp(a: Any, b: Any) -> Any:
    """log(exp(a) + exp(b)), stable, with equal arguments (both infinite too) giving
    a + log 2 without a NaN in the value or in the gradient."""
    from pyree import lax
    big, small = lax.max(a, b), lax.min(a, b)
    # (On equal arguments small - big may be inf - inf: select 0 before exp, so that neither
    # the value nor the gradient sees the NaN.)
    diff = lax.select(lax.eq(big, small), _zeros_like(big), lax.sub(small, big))
    return lax.add(big, lax.log1p(lax.exp(diff)))


def _zeros_like(x: Any) -> Any:
    from pyree import lax
    a = get_aval(x)
    return lax.broadcast_in_dim(_TypedScalar(0, a.dtype, False), a.shape, ())


def _prefix_scan(combine: Callable, x: Any, axis: int, reverse: bool) -> Any:
    """Inclusive scan of ``x`` along ``axis`` by doubling: after the step with shift k, each
    element holds the combination of the (up to) 2k elements ending at it."""
    from pyree import lax
    aval = get_aval(x)
    n = aval.shape[axis]
    if reverse:
        x = lax.rev(x, (axis,))
    ndim = aval.ndim
    shift = 1
    while shift < n:
        def cut(start: int, stop: int) -> Any:
            starts = [0] * ndim
            limits = list(aval.shape)
            starts[axis], limits[axis] = start, stop
            return lax.slice(x, starts, limits)
        combined = combine(cut(0, n - shift), cut(shift, n))
        x = lax.concatenate([cut(0, shift), combined], axis)
        shift *= 2
    if reverse:
        x = lax.rev(x, (axis,))
    return x


def _cumulative(name: str, combine_name: str, kinds: str) -> Callable:
    def fn(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        from pyree import lax
        from pyree.numpy._util import canonical_axis
        _check_array(f"lax.{name}", operand)
        aval = get_aval(operand)
        if aval.ndim == 0:
            raise ValueError(f"lax.{name} needs an array of rank >= 1, got a 0-d array"
                             f"{_where(None)}")
        kind = "f" if aval.dtype == dtypes.bfloat16 else aval.dtype.kind
        if kind not in kinds:
            raise TypeError(f"lax.{name} does not accept dtype {aval.dtype.name}"
                            f"{_where(None)}")
        axis = canonical_axis(axis, aval.ndim)
        combine = _logaddexp if combine_name == "logaddexp" else getattr(lax, combine_name)
        return _prefix_scan(combine, operand, axis, bool(reverse))
    fn.__name__ = name
    return fn


cumsum = _cumulative("cumsum", "add", "iufc")
cumsum.__doc__ = """Cumulative sum along ``axis`` (from the end if ``reverse``).

    Example::

        lax.cumsum(jnp.array([1., 2., 3.]))                  # [1., 3., 6.]
        lax.cumsum(jnp.array([1., 2., 3.]), reverse=True)    # [6., 5., 3.]
    """
cumprod = _cumulative("cumprod", "mul", "iufc")
cumprod.__doc__ = """Cumulative product along ``axis``.

    Example::

        lax.cumprod(jnp.array([1., 2., 3.]))   # [1., 2., 6.]
    """
cummax = _cumulative("cummax", "max", "iuf")
cummax.__doc__ = """Running maximum along ``axis``.

    Example::

        lax.cummax(jnp.array([1., 3., 2.]))   # [1., 3., 3.]
    """
cummin = _cumulative("cummin", "min", "iuf")
cummin.__doc__ = """Running minimum along ``axis``.

    Example::

        lax.cummin(jnp.array([3., 1., 2.]))   # [3., 1., 1.]
    """
cumlogsumexp = _cumulative("cumlogsumexp", "logaddexp", "f")
cumlogsumexp.__doc__ = """Running ``log(sum(exp(x)))`` along ``axis``, computed stably.

    Example::

        lax.cumlogsumexp(jnp.log(jnp.array([1., 2., 3.])))   # log([1., 3., 6.])
    """
