"""Convolution: the ``conv_general_dilated`` primitive and its rules.

``conv_general_dilated[window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
feature_group_count, batch_group_count, precision, preferred_element_type] lhs rhs`` is XLA's
convolution (a cross-correlation: the kernel is not flipped), lowered to
``stablehlo.convolution``. ``dimension_numbers`` is a ``ConvDimensionNumbers`` of three
tuples of axes: ``lhs_spec = (batch, feature, *spatial)``, ``rhs_spec = (out feature,
in feature, *spatial)``, ``out_spec = (batch, feature, *spatial)``.

Along one spatial axis, with the input of size n dilated by ``ld`` (``ld - 1`` zeros between
elements) and padded by ``(lo, hi)``, and a kernel of size k dilated by ``rd``::

    out[o] = sum_j in_dilated_padded[o * stride + j * rd] * w[j]

Both transposes are convolutions again (derived in ``_transpose_lhs``/``_transpose_rhs``);
batching folds the vmapped axis into the batch or feature dimensions (``_batch``).
"""
from __future__ import annotations

import itertools
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from pyree.dtypes import bfloat16

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import Primitive, abstract_eval_rules, get_aval
from ..interpreters.ad import Zero, add_tangents, is_undefined, jvp_rules, transpose_rules, zeros
from ..interpreters.batching import batching_rules
from ..backend import cuda_gemm, eager
from ..backend.lower import (BF16_CONTRACTIONS, WORK_ESTIMATES, Lowering, RuleContext,
                             _bf16_split_product, _splits_float32, contraction_operand,
                             fusion_barrier, hlo, lowering_rules, mlir, op, scalar_like,
                             tensor_type)


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of a convolution's operands and result
    are: ``lhs_spec = (batch, feature, *spatial)``, ``rhs_spec = (out feature, in feature,
    *spatial)``, ``out_spec = (batch, feature, *spatial)`` (as in ``jax.lax``).

    Example::

        ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))   # NHWC, HWIO, NHWC
    """

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


conv_general_dilated_p = Primitive("conv_general_dilated")
# The lowering needs static shapes (the padding depends on them in the transposes, and IREE
# wants a static window): eager mode compiles it per shape.
eager.STATIC_SHAPE_PRIMITIVES.add(conv_general_dilated_p)
BF16_CONTRACTIONS.add(conv_general_dilated_p)


def canonical_numbers(ndim: int) -> ConvDimensionNumbers:
    """The dimension numbers of NC..., OI..., NC... layouts of rank ``ndim``."""
    spec = tuple(range(ndim))
    return ConvDimensionNumbers(spec, spec, spec)


def dilate_dim(size: int, dilation: int) -> int:
    """Size of an axis of ``size`` with ``dilation - 1`` holes between its elements."""
    return 0 if size == 0 else (size - 1) * dilation + 1


def conv_output_size(size: int, kernel: int, stride: int, lo: int, hi: int,
                     lhs_dilation: int, rhs_dilation: int) -> int:
    """Length of a convolution's output along one spatial axis."""
    padded = dilate_dim(size, lhs_dilation) + lo + hi
    window = dilate_dim(kernel, rhs_dilation)
    if padded < window:
        return 0
    return (padded - window) // stride + 1


# -- abstract evaluation ---------------------------------------------------------------------------

_NUMERIC = "iufc"


def _conv_abstract_eval(lhs: ShapedArray, rhs: ShapedArray, *, window_strides, padding,
                        lhs_dilation, rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision=None,
                        preferred_element_type=None) -> ShapedArray:
    name = "conv_general_dilated"
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"{name} requires arguments of the same dtype, got {lhs.dtype.name} "
                        f"and {rhs.dtype.name}")
    if lhs.dtype.kind not in _NUMERIC and lhs.dtype.name != "bfloat16":
        raise TypeError(f"{name} needs numeric arguments, got {lhs.dtype.name}")
    if lhs.ndim != rhs.ndim or lhs.ndim < 2:
        raise TypeError(f"{name} needs arrays of equal rank >= 2, got shapes {lhs.shape} and "
                        f"{rhs.shape}")
    nsp = lhs.ndim - 2
    for what, value in (("window_strides", window_strides), ("padding", padding),
                        ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(value) != nsp:
            raise TypeError(f"{name}: {what} {value} needs one entry per spatial dimension "
                            f"({nsp})")
    for what, value in (("window_strides", window_strides), ("lhs_dilation", lhs_dilation),
                        ("rhs_dilation", rhs_dilation)):
        if any(v < 1 for v in value):
            raise TypeError(f"{name}: {what} must be positive, got {value}")
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    for what, spec in (("lhs", lhs_spec), ("rhs", rhs_spec), ("out", out_spec)):
        if sorted(spec) != list(range(lhs.ndim)):
            raise TypeError(f"{name}: {what} dimension numbers {spec} are not a permutation "
                            f"of the {lhs.ndim} axes")
    g, b = feature_group_count, batch_group_count
    if g < 1 or b < 1:
        raise TypeError(f"{name}: feature_group_count and batch_group_count must be >= 1, got "
                        f"{g} and {b}")
    if g > 1 and b > 1:
        raise TypeError(f"{name}: at most one of feature_group_count ({g}) and "
                        f"batch_group_count ({b}) may exceed 1")
    batch, in_features = lhs.shape[lhs_spec[0]], lhs.shape[lhs_spec[1]]
    out_features, kernel_in = rhs.shape[rhs_spec[0]], rhs.shape[rhs_spec[1]]
    if in_features % g or in_features // g != kernel_in:
        raise TypeError(f"{name}: the lhs feature dimension ({in_features}) divided by "
                        f"feature_group_count ({g}) must equal the rhs input feature dimension "
                        f"({kernel_in}); shapes {lhs.shape} and {rhs.shape}")
    if out_features % g:
        raise TypeError(f"{name}: the rhs output feature dimension ({out_features}) must be a "
                        f"multiple of feature_group_count ({g})")
    if batch % b:
        raise TypeError(f"{name}: the lhs batch dimension ({batch}) must be a multiple of "
                        f"batch_group_count ({b})")
    if out_features % b:
        raise TypeError(f"{name}: the rhs output feature dimension ({out_features}) must be a "
                        f"multiple of batch_group_count ({b})")
    spatial = []
    for i in range(nsp):
        n, k = lhs.shape[lhs_spec[2 + i]], rhs.shape[rhs_spec[2 + i]]
        lo, hi = padding[i]
        spatial.append(max(0, conv_output_size(n, k, window_strides[i], lo, hi, lhs_dilation[i],
                                               rhs_dilation[i])))
    canonical = (batch // b, out_features) + tuple(spatial)
    shape = [0] * lhs.ndim
    for j, axis in enumerate(out_spec):
        shape[axis] = canonical[j]
    dtype = lhs.dtype if preferred_element_type is None else np.dtype(preferred_element_type)
    return ShapedArray(tuple(shape), dtype, lhs.weak_type and rhs.weak_type)


abstract_eval_rules[conv_general_dilated_p] = _conv_abstract_eval


# -- lowering --------------------------------------------------------------------------------------

def _layout(spec: Sequence[int], batch: str, feature: str) -> str:
    letters = [""] * len(spec)
    letters[spec[0]], letters[spec[1]] = batch, feature
    for i, axis in enumerate(spec[2:]):
        letters[axis] = str(i)
    return "[" + ", ".join(letters) + "]"


def _conv_lowering(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision=None,
                   preferred_element_type=None):
    ir = mlir()
    lhs, rhs = contraction_operand(ctx, lhs), contraction_operand(ctx, rhs)
    lhs_aval, rhs_aval = ctx.avals_in
    out_aval = ctx.avals_out[0]
    params = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                  rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                  feature_group_count=feature_group_count, batch_group_count=batch_group_count)
    empty = out_aval.size == 0 or lhs_aval.size == 0 or rhs_aval.size == 0
    half = {lhs_aval.dtype, rhs_aval.dtype} <= {np.dtype(bfloat16), np.dtype(np.float16)}
    # IREE 3.13 fails to compile a depthwise convolution (one input channel per group) of
    # half-precision operands with a float32 result for CUDA ("'tensor.collapse_shape' op
    # expected collapsed type to be 'tensor<3x3x3xbf16>', but got 'tensor<3x3x3xf32>'"). It
    # reads each input once per output: memory-bound, tensor cores gain nothing. Float32 then.
    depthwise = (feature_group_count > 1 and rhs_aval.shape[dimension_numbers.rhs_spec[1]] == 1
                 and out_aval.dtype in (np.dtype(np.float32), np.dtype(np.float16),
                                        np.dtype(bfloat16)))
    if ctx.lowering.device_platform == "cuda" and not empty:
        implicit = _conv_as_implicit_gemm(ctx, lhs, rhs, precision=precision, **params)
        if implicit is not None:
            return implicit
    if ctx.lowering.platform == "cuda" and depthwise and not empty:
        # (behind a barrier: a widening fused into the convolution fails the same way)
        lhs, rhs = (v if a.dtype == np.float32 else fusion_barrier(
                    hlo("convert", tensor_type(a.update(dtype=np.float32)), v))
                    for v, a in ((lhs, lhs_aval), (rhs, rhs_aval)))
        wide = _real_conv(lhs, rhs, lhs_aval.update(dtype=np.float32),
                          rhs_aval.update(dtype=np.float32),
                          out_aval.update(dtype=np.float32), **params)
        return wide if out_aval.dtype == np.float32 else hlo("convert", ctx.out_type(), wide)
    if ctx.lowering.platform == "cuda" and half and not empty:
        # Tensor cores: IREE 3.13 puts a convolution of f16/bf16 operands with a float32
        # result on mma.sync (bf16 3.3 ms against 158 ms for float32 on an H200); with a
        # half-precision result it failed to compile ("failed to distribute"). Accumulate in
        # float32, then round once.
        wide = _real_conv(lhs, rhs, lhs_aval, rhs_aval, out_aval.update(dtype=np.float32),
                          **params)
        return wide if out_aval.dtype == np.float32 else hlo("convert", ctx.out_type(), wide)
    if not empty and _splits_float32(ctx, precision):
        half_lhs, half_rhs = (a.update(dtype=bfloat16) for a in (lhs_aval, rhs_aval))
        return _bf16_split_product(ctx, lhs, rhs, lambda x, y: _real_conv(
            x, y, half_lhs, half_rhs, out_aval, **params))
    if out_aval.dtype != lhs_aval.dtype:
        # A wider result type: compute in it (StableHLO's convolution wants one element type).
        lhs = hlo("convert", tensor_type(lhs_aval.update(dtype=out_aval.dtype)), lhs)
        rhs = hlo("convert", tensor_type(rhs_aval.update(dtype=out_aval.dtype)), rhs)
        lhs_aval = lhs_aval.update(dtype=out_aval.dtype)
        rhs_aval = rhs_aval.update(dtype=out_aval.dtype)
    if empty:
        return hlo("broadcast_in_dim", ctx.out_type(), scalar_like(0, out_aval.dtype),
                   broadcast_dimensions=ir.DenseI64ArrayAttr.get([]))
    params["cpu"] = ctx.lowering.platform == "cpu"
    if out_aval.dtype.kind != "c":
        return _real_conv(lhs, rhs, lhs_aval, rhs_aval, out_aval, **params)
    # IREE 3.13 crashes (segfault in the compiler) on a complex stablehlo.convolution: four
    # real ones, (a + ib)(c + id) = (ac - bd) + i(ad + bc).
    # A complex elementwise producer fused into the real/imag split fails to compile in IREE
    # 3.13 ("write affecting operations on global resources..." for conv(-x, w) on complex
    # x): a barrier keeps computed operands apart.
    lhs, rhs = [fusion_barrier(v) if isinstance(v, ir.OpResult) else v for v in (lhs, rhs)]
    part = np.dtype(np.float32 if out_aval.dtype == np.complex64 else np.float64)
    lhs_part, rhs_part, out_part = (a.update(dtype=part) for a in (lhs_aval, rhs_aval, out_aval))
    a, b = (hlo(f, tensor_type(lhs_part), lhs) for f in ("real", "imag"))
    c, d = (hlo(f, tensor_type(rhs_part), rhs) for f in ("real", "imag"))

    def product(x, y):
        return _real_conv(x, y, lhs_part, rhs_part, out_part, **params)
    out_t = tensor_type(out_part)
    real = hlo("subtract", out_t, product(a, c), product(b, d))
    imag = hlo("add", out_t, product(a, d), product(b, c))
    return hlo("complex", tensor_type(out_aval), real, imag)


def _conv_as_implicit_gemm(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation,
                           rhs_dilation, dimension_numbers, feature_group_count,
                           batch_group_count, precision=None):
    """A float32 2-D convolution on CUDA through pyree's implicit-GEMM kernel (its taps read
    from the image, cuda_gemm.Conv2dPlan), or None when it stays IREE's. IREE 3.13 ran the
    NCHW 32x64x128x128 convolution with 128 3x3 filters in 6.4 ms as three bf16
    convolutions, and in 7.2 ms as pyree's GEMM kernel on 1.2 GB of im2col columns (JAX 0.70
    ms, H200). Other layouts are transposed to NCHW / OIHW and back."""
    from pyree.runtime.device import cuda_target
    lhs_aval, rhs_aval = ctx.avals_in
    out_aval = ctx.avals_out[0]
    f32 = np.dtype(np.float32)
    if (len(window_strides) != 2 or feature_group_count != 1 or batch_group_count != 1
            or any(d != 1 for d in lhs_dilation) or ctx.dynamic
            or not lhs_aval.dtype == rhs_aval.dtype == out_aval.dtype == f32):
        return None
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    target = cuda_target()
    plan = cuda_gemm.conv2d_plan(
        tuple(lhs_aval.shape[a] for a in lhs_spec), tuple(rhs_aval.shape[a] for a in rhs_spec),
        tuple(out_aval.shape[a] for a in out_spec[2:]), window_strides, padding, rhs_dilation,
        precision, target)
    if plan is None:
        return None
    ir = mlir()

    def transposed(x, aval, spec):
        if list(spec) == list(range(aval.ndim)):
            return x
        shape = tuple(aval.shape[a] for a in spec)
        return hlo("transpose", tensor_type(aval.update(shape=shape)), x,
                   permutation=ir.DenseI64ArrayAttr.get([int(a) for a in spec]))

    canonical = out_aval.update(shape=(plan.batch, plan.filters, *plan.out))
    out = cuda_gemm.emit_conv2d(plan, transposed(lhs, lhs_aval, lhs_spec),
                                transposed(rhs, rhs_aval, rhs_spec), tensor_type(canonical),
                                target)
    if list(out_spec) == list(range(out_aval.ndim)):
        return out
    return hlo("transpose", tensor_type(out_aval), out,
               permutation=ir.DenseI64ArrayAttr.get([int(a) for a in np.argsort(out_spec)]))


def _real_conv(lhs, rhs, lhs_aval: ShapedArray, rhs_aval: ShapedArray, out_aval: ShapedArray, *,
               window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
               feature_group_count, batch_group_count, cpu=False):
    ir = mlir()
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    params = dict(window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
                  rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers,
                  feature_group_count=feature_group_count, batch_group_count=batch_group_count)
    if cpu and _window_products_pay(rhs_aval, out_aval, **params):
        return _conv_as_window_products(lhs, rhs, lhs_aval, rhs_aval, out_aval, **params)
    chunk = _im2col_batch_chunk(lhs_aval, rhs_aval, out_aval, dimension_numbers,
                                batch_group_count) if cpu else None
    if chunk is not None:
        return _conv_in_batch_chunks(lhs, rhs, lhs_aval, rhs_aval, out_aval, chunk, params)
    if cpu and _channels_last_pays(lhs_aval, lhs_spec, out_spec, feature_group_count,
                                   batch_group_count):
        return _channels_last_conv(
            lhs, rhs, lhs_aval, rhs_aval, out_aval, window_strides=window_strides,
            padding=padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
            dimension_numbers=dimension_numbers, feature_group_count=feature_group_count,
            batch_group_count=batch_group_count)
    if any(lo < 0 or hi < 0 for lo, hi in padding) or any(d > 1 for d in lhs_dilation):
        # Negative padding (from transposes) and lhs dilation become an explicit stablehlo.pad
        # (negative edges crop), so IREE sees a plain convolution: the form its convolution
        # paths are built for (llvm-cpu compiles the other forms too, but they are rare).
        lhs, lhs_aval = _padded_lhs(lhs, lhs_aval, lhs_spec, padding, lhs_dilation)
        padding = ((0, 0),) * len(padding)
        lhs_dilation = (1,) * len(lhs_dilation)
    nsp = len(window_strides)
    numbers = ir.Attribute.parse(
        f"#stablehlo.conv<{_layout(lhs_spec, 'b', 'f')}x{_layout(rhs_spec, 'o', 'i')}->"
        f"{_layout(out_spec, 'b', 'f')}>")
    pad_text = ", ".join(f"[{lo}, {hi}]" for lo, hi in padding)
    i64 = ir.IntegerType.get_signless(64)
    attributes = {
        "window_strides": ir.DenseI64ArrayAttr.get(list(window_strides)),
        "lhs_dilation": ir.DenseI64ArrayAttr.get(list(lhs_dilation)),
        "rhs_dilation": ir.DenseI64ArrayAttr.get(list(rhs_dilation)),
        "dimension_numbers": numbers,
        "feature_group_count": ir.IntegerAttr.get(i64, feature_group_count),
        "batch_group_count": ir.IntegerAttr.get(i64, batch_group_count),
    }
    if nsp:
        attributes["padding"] = ir.Attribute.parse(
            f"dense<[{pad_text}]> : tensor<{nsp}x2xi64>")
    if cpu and _data_tiling_pays(lhs_aval, rhs_aval, out_aval, dimension_numbers):
        from pyree.runtime.compile import DATA_TILING_MARK
        attributes[DATA_TILING_MARK] = ir.UnitAttr.get()
    return op("stablehlo.convolution", [tensor_type(out_aval)], [lhs, rhs], attributes).result


def _padded_lhs(lhs, lhs_aval: ShapedArray, lhs_spec, padding, lhs_dilation):
    """(lhs with the convolution's padding and dilation applied by a stablehlo.pad, its
    aval): negative edges crop."""
    ir = mlir()
    config = [(0, 0, 0)] * lhs_aval.ndim
    for i, axis in enumerate(lhs_spec[2:]):
        config[axis] = (padding[i][0], padding[i][1], lhs_dilation[i] - 1)
    lhs_aval = lhs_aval.update(shape=tuple(lo + hi + dilate_dim(n, interior + 1)
                                           for n, (lo, hi, interior) in zip(lhs_aval.shape,
                                                                             config)))
    lo, hi, interior = zip(*config)
    return hlo("pad", tensor_type(lhs_aval), lhs, scalar_like(0, lhs_aval.dtype),
               edge_padding_low=ir.DenseI64ArrayAttr.get(list(lo)),
               edge_padding_high=ir.DenseI64ArrayAttr.get(list(hi)),
               interior_padding=ir.DenseI64ArrayAttr.get(list(interior))), lhs_aval


# On the CPU IREE runs a convolution as im2col + matmul, and the im2col columns are a
# transient of (output pixels) x (input channels x window) floats. IREE's local-task driver
# took the 75 MB one of NHWC 8x64x64 with 64 channels from malloc, and glibc maps a block over
# 32 MB fresh each time and unmaps it on free: ~20,600 page faults a call (0.2 with
# MALLOC_MMAP_MAX_=0, which made other rows slower; pyree's caching allocator never sees these),
# and such columns fall out of cache anyway. Such a convolution runs image by image (or a few
# images at a time), each with columns under IM2COL_CHUNK_BYTES, the results concatenated:
# NHWC 8x64x64x64 with 64 3x3 filters 63 -> 31 ms, 128 -> 128 channels 168 -> 74 ms (JAX 27
# and 51 ms; this machine, measured at the jit level). Smaller chunks keep the columns in
# cache: with 8 MB rather than 16, NHWC 8x64x64, 32 -> 64 channels 12.7 -> 10.4 ms, 32 -> 32
# 15.2 -> 10.6 ms (JAX 14 and 7.4), and every conv row of benchmarks/run.py went down; 4 MB
# was no better. Kernel gradients (data-tiled, their "batch" is the input channels) stay whole.
IM2COL_CHUNK_BYTES = 8 << 20


def _im2col_batch_chunk(lhs_aval: ShapedArray, rhs_aval: ShapedArray, out_aval: ShapedArray,
                        dimension_numbers, batch_group_count: int) -> Optional[int]:
    """How many images of the batch to convolve at a time (see IM2COL_CHUNK_BYTES), or None
    to convolve the batch whole."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    batch = lhs_aval.shape[lhs_spec[0]]
    if (batch_group_count != 1 or batch < 2 or out_aval.dtype.kind != "f"
            or _data_tiling_pays(lhs_aval, rhs_aval, out_aval, dimension_numbers)):
        return None
    pixels = int(np.prod([out_aval.shape[a] for a in out_spec[2:]]))
    columns = rhs_aval.shape[rhs_spec[1]] * int(np.prod([rhs_aval.shape[a] for a in rhs_spec[2:]]))
    per_image = pixels * columns * out_aval.dtype.itemsize
    if per_image * batch <= IM2COL_CHUNK_BYTES:
        return None
    fits = max(1, IM2COL_CHUNK_BYTES // per_image)
    return max(c for c in range(1, min(fits, batch) + 1) if batch % c == 0)


def _conv_in_batch_chunks(lhs, rhs, lhs_aval: ShapedArray, rhs_aval: ShapedArray,
                          out_aval: ShapedArray, chunk: int, params: dict):
    """The convolution ``chunk`` images at a time, joined along the result's batch axis."""
    ir = mlir()
    lhs_spec, _, out_spec = params["dimension_numbers"]
    b_in, b_out = lhs_spec[0], out_spec[0]
    part_in = lhs_aval.update(shape=tuple(chunk if i == b_in else d
                                          for i, d in enumerate(lhs_aval.shape)))
    part_out = out_aval.update(shape=tuple(chunk if i == b_out else d
                                           for i, d in enumerate(out_aval.shape)))
    parts = []
    for start in range(0, lhs_aval.shape[b_in], chunk):
        lo = [start if i == b_in else 0 for i in range(lhs_aval.ndim)]
        hi = [start + chunk if i == b_in else d for i, d in enumerate(lhs_aval.shape)]
        piece = hlo("slice", tensor_type(part_in), lhs,
                    start_indices=ir.DenseI64ArrayAttr.get(lo),
                    limit_indices=ir.DenseI64ArrayAttr.get(hi),
                    strides=ir.DenseI64ArrayAttr.get([1] * lhs_aval.ndim))
        parts.append(_real_conv(piece, rhs, part_in, rhs_aval, part_out, cpu=True, **params))
    # (lower's concatenation: it joins many parts in groups, under IREE's binding limit)
    join = RuleContext(Lowering(dynamic=False), [part_out] * len(parts), [out_aval])
    return lowering_rules[P.concatenate_p](join, *parts, dimension=b_out)


# A convolution with few output positions and a large window -- a kernel gradient, whose
# "window" is the image and whose output positions are the kernel's taps -- runs on the CPU
# as one product per output position: out[:, :, o] = rhs . lhs[window at o], contracted over
# the input features and the window. IREE's im2col for it gathered every column from a
# transposed image (NHWC 8x64x64x32 with 64 3x3 filters, IREE's host-execution profile of
# the gradient alone: 7.5-8.7 ms for the 37.7 MB of columns, a 7.5-10 ms product and a
# 1.4-2.1 ms transpose of the cotangent; the products from slices of the image: 11 ms in all).
WINDOW_PRODUCTS_MAX_POSITIONS = 64
WINDOW_PRODUCTS_MIN_WINDOW_RATIO = 4


def _window_products_pay(rhs_aval: ShapedArray, out_aval: ShapedArray, *, window_strides,
                         padding, lhs_dilation, rhs_dilation, dimension_numbers,
                         feature_group_count, batch_group_count) -> bool:
    """Whether a CPU convolution runs as products per output position (see above)."""
    _, rhs_spec, out_spec = dimension_numbers
    positions = int(np.prod([out_aval.shape[a] for a in out_spec[2:]]))
    window = int(np.prod([rhs_aval.shape[a] for a in rhs_spec[2:]]))
    return (len(out_spec) > 2 and feature_group_count == batch_group_count == 1
            and out_aval.dtype.kind == "f" and 0 < positions <= WINDOW_PRODUCTS_MAX_POSITIONS
            and window >= WINDOW_PRODUCTS_MIN_WINDOW_RATIO * positions)


def _conv_as_window_products(lhs, rhs, lhs_aval: ShapedArray, rhs_aval: ShapedArray,
                             out_aval: ShapedArray, *, window_strides, padding, lhs_dilation,
                             rhs_dilation, dimension_numbers, feature_group_count,
                             batch_group_count):
    """The convolution as one dot_general per output position o: rhs contracted with the
    window of the (padded, dilated) lhs that o reads, over input features and window, giving
    (out features, batch); the products stacked and laid out as the result."""
    ir = mlir()
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    nsp = len(lhs_spec) - 2
    if any(p != (0, 0) for p in padding) or any(d > 1 for d in lhs_dilation):
        lhs, lhs_aval = _padded_lhs(lhs, lhs_aval, lhs_spec, padding, lhs_dilation)
    window = [rhs_aval.shape[a] for a in rhs_spec[2:]]
    positions = [out_aval.shape[a] for a in out_spec[2:]]
    features, batch = rhs_aval.shape[rhs_spec[0]], lhs_aval.shape[lhs_spec[0]]
    piece_aval = lhs_aval.update(shape=tuple(
        window[lhs_spec.index(a) - 2] if a in lhs_spec[2:] else d
        for a, d in enumerate(lhs_aval.shape)))
    product_aval = out_aval.update(shape=(1, features, batch))
    numbers = ir.Attribute.parse(
        "#stablehlo.dot<lhs_contracting_dimensions = [%s], rhs_contracting_dimensions = [%s]>"
        % (", ".join(str(a) for a in rhs_spec[1:]), ", ".join(str(a) for a in lhs_spec[1:])))
    products = []
    for o in itertools.product(*(range(n) for n in positions)):
        start, limit, step = [0] * lhs_aval.ndim, list(lhs_aval.shape), [1] * lhs_aval.ndim
        for i, axis in enumerate(lhs_spec[2:]):
            start[axis] = o[i] * window_strides[i]
            limit[axis] = start[axis] + (window[i] - 1) * rhs_dilation[i] + 1
            step[axis] = rhs_dilation[i]
        piece = hlo("slice", tensor_type(piece_aval), lhs,
                    start_indices=ir.DenseI64ArrayAttr.get(start),
                    limit_indices=ir.DenseI64ArrayAttr.get(limit),
                    strides=ir.DenseI64ArrayAttr.get(step))
        product = op("stablehlo.dot_general",
                     [tensor_type(product_aval.update(shape=(features, batch)))],
                     [rhs, piece], {"dot_dimension_numbers": numbers}).result
        products.append(hlo("reshape", tensor_type(product_aval), product))
    stacked_aval = out_aval.update(shape=(len(products), features, batch))
    join = RuleContext(Lowering(dynamic=False), [product_aval] * len(products), [stacked_aval])
    stacked = lowering_rules[P.concatenate_p](join, *products, dimension=0) if len(products) > 1 \
        else products[0]
    grid_aval = out_aval.update(shape=tuple(positions) + (features, batch))
    grid = hlo("reshape", tensor_type(grid_aval), stacked)
    # grid's axes: the positions, then features, then batch; the result's, by out_spec
    perm = [0] * out_aval.ndim
    perm[out_spec[0]], perm[out_spec[1]] = nsp + 1, nsp
    for i, axis in enumerate(out_spec[2:]):
        perm[axis] = i
    return hlo("transpose", tensor_type(out_aval), grid,
               permutation=ir.DenseI64ArrayAttr.get(perm))


# On the CPU IREE rewrites a convolution into im2col + matmul (runtime/compile.py,
# IM2COL_FLAG). With the result's feature axis before its spatial axes (NCHW) that matmul
# writes its result transposed: IREE neither data-tiles it nor vectorizes it well (NCHW
# 8x32x64x64 with 64 3x3 filters: 60 ms of its 70 ms on one thread, where the same product
# in NHWC took 22 ms). A channels-last convolution between transposes runs the fast form;
# the barrier keeps IREE from folding the result's transpose back into the matmul (it does:
# without it the dispatches came out the same as before). Measured here, 2 threads, JAX in
# the same run, one core busy with other work: NCHW 8x32x64x64 78 -> 46 ms (JAX 34),
# 32x64x8x8 with 128 filters 16.8 -> 9.3 ms (JAX 7.7), its gradient 384 -> 288 ms (JAX 231).
# Convolutions already channels-last gain nothing from the transposes (the small CNN's step
# got slower with them: 91 -> 104 ms), so they keep their form. Nor does a feature-first
# convolution of one image (a batch of one, or one of the batch chunks above): its product
# is weights (features x columns) @ columns (columns x pixels), a plain matmul writing the
# result in order. Measured on an Intel Emerald Rapids (AVX-512), 2 threads, JAX alternating
# in one process: NCHW 8x32x64x64, run image by image, 19.1-22.2 ms with the transposes,
# 12.5-14.5 without (JAX 19.0-19.3); its gradient 69 -> 53 ms (JAX 74).
def _channels_last_pays(lhs_aval: ShapedArray, lhs_spec, out_spec, feature_group_count: int,
                        batch_group_count: int) -> bool:
    """Whether a CPU convolution runs as a channels-last one between transposes."""
    return (lhs_aval.ndim >= 3 and feature_group_count == 1 and batch_group_count == 1
            and out_spec[1] != lhs_aval.ndim - 1 and lhs_aval.shape[lhs_spec[0]] > 1)


def _channels_last_conv(lhs, rhs, lhs_aval: ShapedArray, rhs_aval: ShapedArray,
                        out_aval: ShapedArray, *, dimension_numbers, **params):
    """The convolution computed in the (batch, *spatial, feature) x (*spatial, in, out) ->
    (batch, *spatial, feature) layouts, transposed to and from the given ones."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    nd = lhs_aval.ndim

    def permuted(x, aval, perm):
        aval = aval.update(shape=tuple(aval.shape[a] for a in perm))
        return hlo("transpose", tensor_type(aval), x,
                   permutation=mlir().DenseI64ArrayAttr.get([int(a) for a in perm])), aval

    lhs_perm = (lhs_spec[0],) + tuple(lhs_spec[2:]) + (lhs_spec[1],)
    rhs_perm = tuple(rhs_spec[2:]) + (rhs_spec[1], rhs_spec[0])
    out_perm = (out_spec[0],) + tuple(out_spec[2:]) + (out_spec[1],)
    lhs, lhs_aval = permuted(lhs, lhs_aval, lhs_perm)
    rhs, rhs_aval = permuted(rhs, rhs_aval, rhs_perm)
    last = out_aval.update(shape=tuple(out_aval.shape[a] for a in out_perm))
    channels_last = ConvDimensionNumbers((0, nd - 1) + tuple(range(1, nd - 1)),
                                         (nd - 1, nd - 2) + tuple(range(nd - 2)),
                                         (0, nd - 1) + tuple(range(1, nd - 1)))
    out = _real_conv(lhs, rhs, lhs_aval, rhs_aval, last, dimension_numbers=channels_last,
                     cpu=True, **params)
    # An optimization barrier, though IREE waits for it on the host (see lower.fusion_barrier):
    # behind a compute barrier the gradient of the NHWC benchmark convolution ran 70-82 ms
    # against 50-69 ms (its module alone in iree-benchmark-module, alternating), as if the
    # transpose were folded into the product again.
    out = op("stablehlo.optimization_barrier", [out.type], [out]).result
    return hlo("transpose", tensor_type(out_aval), out,
               permutation=mlir().DenseI64ArrayAttr.get([int(a) for a in np.argsort(out_perm)]))


# IREE's data tiling (the module-wide flag a mark turns on, runtime/compile.py) pays for the
# im2col matmul of a convolution whose reduction is longer than its result has rows: the
# kernel gradient, where the reduction runs over batch and image (NCHW 8x32x64x64, 64 3x3
# filters: its 288x64x32768 product took 64 ms on one thread tiled, 169 ms untiled). The
# forward and input-gradient products (32768 rows, reduction 288 or 576) gained nothing or
# lost (NHWC forward 22 -> 27 ms tiled, JAX 19). Where the kernel gradient comes out of IREE
# as a batched product (an NHWC/HWIO convolution's) nothing is tiled and the mark changed
# nothing (one thread, alternating: 252, 264 ms marked; 255, 256 ms not). Float32 only: the
# form measured. (Kernel gradients of kernels up to WINDOW_PRODUCTS_MAX_POSITIONS taps now run
# as products per tap instead, which took less again; larger kernels still come here.)
def _data_tiling_pays(lhs_aval: ShapedArray, rhs_aval: ShapedArray, out_aval: ShapedArray,
                      dimension_numbers) -> bool:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    if out_aval.dtype != np.float32 or lhs_aval.ndim < 3:
        return False
    reduction = rhs_aval.shape[rhs_spec[1]] * int(np.prod([rhs_aval.shape[a]
                                                           for a in rhs_spec[2:]]))
    rows = out_aval.shape[out_spec[0]] * int(np.prod([out_aval.shape[a] for a in out_spec[2:]]))
    return reduction > rows


lowering_rules[conv_general_dilated_p] = _conv_lowering


def _conv_work(eqn) -> int:
    # Each output element reads one output feature's slice of the kernel.
    rhs = eqn.inputs[1].aval
    out_features = rhs.shape[eqn.params["dimension_numbers"].rhs_spec[0]]
    return eqn.outputs[0].aval.size * max(rhs.size // max(out_features, 1), 1)


WORK_ESTIMATES[conv_general_dilated_p] = _conv_work


# -- helpers on traced values ----------------------------------------------------------------------

def _transpose(x: Any, perm: Sequence[int]) -> Any:
    perm = tuple(int(p) for p in perm)
    if perm == tuple(range(len(perm))):
        return x
    return P.transpose_p.bind(x, permutation=perm)


def _reshape(x: Any, shape: Sequence[int]) -> Any:
    shape = tuple(int(d) for d in shape)
    if get_aval(x).shape == shape:
        return x
    return P.reshape_p.bind(x, new_sizes=shape)


def _to_canonical(x: Any, spec: Sequence[int]) -> Any:
    """``x`` with its axes in ``spec`` order (batch/out feature, feature/in feature, spatial)."""
    return _transpose(x, spec)


def _from_canonical(x: Any, spec: Sequence[int]) -> Any:
    """Undo ``_to_canonical``."""
    return _transpose(x, np.argsort(spec))


def _convert(x: Any, dtype: np.dtype) -> Any:
    if get_aval(x).dtype == dtype:
        return x
    return P.convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def conv(lhs: Any, rhs: Any, *, window_strides, padding, lhs_dilation, rhs_dilation,
         dimension_numbers, feature_group_count=1, batch_group_count=1, precision=None,
         preferred_element_type=None) -> Any:
    """Bind ``conv_general_dilated`` with its parameters normalised to tuples of ints."""
    return conv_general_dilated_p.bind(
        lhs, rhs, window_strides=tuple(int(s) for s in window_strides),
        padding=tuple((int(lo), int(hi)) for lo, hi in padding),
        lhs_dilation=tuple(int(d) for d in lhs_dilation),
        rhs_dilation=tuple(int(d) for d in rhs_dilation),
        dimension_numbers=ConvDimensionNumbers(*(tuple(int(a) for a in s)
                                                 for s in dimension_numbers)),
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        precision=precision, preferred_element_type=preferred_element_type)


# -- JVP and transposes ----------------------------------------------------------------------------

def _conv_jvp(primals, tangents, **params):
    lhs, rhs = primals
    t_lhs, t_rhs = tangents
    ans = conv_general_dilated_p.bind(lhs, rhs, **params)
    out = Zero(get_aval(ans).update(weak_type=False))
    if not isinstance(t_lhs, Zero):
        out = add_tangents(out, conv_general_dilated_p.bind(t_lhs, rhs, **params))
    if not isinstance(t_rhs, Zero):
        out = add_tangents(out, conv_general_dilated_p.bind(lhs, t_rhs, **params))
    return [ans], [out]


def _grouped_kernel_transpose(w: Any, groups: int) -> Any:
    """A canonical (O, I, *K) kernel as the (groups * I, O / groups, *K) kernel of the
    transposed convolution, spatially flipped: group g's block has its in and out features
    swapped."""
    shape = get_aval(w).shape
    o, i, ks = shape[0], shape[1], shape[2:]
    nsp = len(ks)
    if nsp:
        w = P.rev_p.bind(w, dimensions=tuple(range(2, 2 + nsp)))
    w = _reshape(w, (groups, o // groups, i) + ks)
    w = _transpose(w, (0, 2, 1) + tuple(range(3, 3 + nsp)))
    return _reshape(w, (groups * i, o // groups) + ks)


def _transpose_lhs(ct, rhs, lhs_aval: ShapedArray, *, window_strides, padding, lhs_dilation,
                   rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
                   precision=None, preferred_element_type=None):
    """The cotangent of lhs. Along a spatial axis, with ct dilated by the stride s,
    lhs_dilated_ct[p] = sum_j ct_dilated[p + lo - j * rd] w[j]: a convolution of ct (dilated
    by s) with the flipped kernel, padded low by (k_dilated - 1 - lo), whose output is taken
    every ld positions (stride ld); the high padding makes the output exactly n long."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    n_sp = tuple(lhs_aval.shape[a] for a in lhs_spec[2:])
    m_sp = tuple(get_aval(ct).shape[a] for a in out_spec[2:])
    k_sp = tuple(get_aval(rhs).shape[a] for a in rhs_spec[2:])
    if lhs_aval.size == 0 or get_aval(ct).size == 0:
        return zeros(lhs_aval)
    groups = max(feature_group_count, batch_group_count)
    pads = []
    for n, m, k, s, (lo, hi), ld, rd in zip(n_sp, m_sp, k_sp, window_strides, padding,
                                           lhs_dilation, rhs_dilation):
        kd = dilate_dim(k, rd)
        pads.append((kd - 1 - lo, (n - 1) * ld - (m - 1) * s + lo))
    if groups == 1:
        # Without groups the transposed kernel is the flipped one with its in and out roles
        # swapped in the dimension numbers, and the result comes out in lhs's layout: no
        # transposes for the backend to undo (an NHWC input gradient went through NCHW and
        # back, behind the CPU path's barrier).
        if k_sp:
            rhs = P.rev_p.bind(rhs, dimensions=tuple(rhs_spec[2:]))
        # (the in and out axes swapped in memory too: IREE's CPU im2col product wants its
        # kernel's axes in the order the forward one had)
        swap = list(range(get_aval(rhs).ndim))
        swap[rhs_spec[0]], swap[rhs_spec[1]] = rhs_spec[1], rhs_spec[0]
        rhs = _transpose(rhs, swap)
        numbers = (out_spec, rhs_spec, lhs_spec)
        out = conv(ct, rhs, window_strides=lhs_dilation, padding=pads,
                   lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
                   dimension_numbers=numbers, precision=precision)
        return _convert(out, lhs_aval.dtype)
    kernel = _grouped_kernel_transpose(_to_canonical(rhs, rhs_spec), groups)
    nd = lhs_aval.ndim
    out = conv(_to_canonical(ct, out_spec), kernel, window_strides=lhs_dilation, padding=pads,
               lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
               dimension_numbers=canonical_numbers(nd), feature_group_count=groups,
               precision=precision)
    if batch_group_count > 1:
        # (N_b, B * C, ...) holds example b * N_b + n at [n, b * C + c]: move b into batch.
        shape = get_aval(out).shape
        nb, c = shape[0], shape[1] // batch_group_count
        out = _reshape(out, (nb, batch_group_count, c) + shape[2:])
        out = _transpose(out, (1, 0) + tuple(range(2, nd + 1)))
        out = _reshape(out, (batch_group_count * nb, c) + shape[2:])
    return _convert(_from_canonical(out, lhs_spec), lhs_aval.dtype)


def _transpose_rhs(ct, lhs, rhs_aval: ShapedArray, *, window_strides, padding, lhs_dilation,
                   rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
                   precision=None, preferred_element_type=None):
    """The cotangent of rhs: w_ct[o, i, j] = sum_{batch, q} lhs_dp[., i, q * s + j * rd]
    ct[., o, q], a convolution of lhs (batch and feature roles swapped) with ct as the kernel:
    stride rd, kernel dilation s, the same low padding, and the high padding that makes the
    output exactly k long. Feature groups become batch groups and vice versa."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs_aval = get_aval(lhs)
    n_sp = tuple(lhs_aval.shape[a] for a in lhs_spec[2:])
    m_sp = tuple(get_aval(ct).shape[a] for a in out_spec[2:])
    k_sp = tuple(rhs_aval.shape[a] for a in rhs_spec[2:])
    if rhs_aval.size == 0 or get_aval(ct).size == 0 or lhs_aval.size == 0:
        return zeros(rhs_aval)
    pads = []
    for n, m, k, s, (lo, hi), ld, rd in zip(n_sp, m_sp, k_sp, window_strides, padding,
                                           lhs_dilation, rhs_dilation):
        pads.append((lo, (m - 1) * s + (k - 1) * rd - (n - 1) * ld - lo))
    swapped = lambda spec: (spec[1], spec[0]) + tuple(spec[2:])  # noqa: E731
    # Result: batch = rhs's in features, feature = rhs's out features, spatial = the window.
    numbers = ConvDimensionNumbers(swapped(lhs_spec), swapped(out_spec), swapped(rhs_spec))
    out = conv(lhs, ct, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation,
               rhs_dilation=window_strides, dimension_numbers=numbers,
               feature_group_count=batch_group_count, batch_group_count=feature_group_count,
               precision=precision)
    return _convert(out, rhs_aval.dtype)


def _conv_transpose_rule(ct, lhs, rhs, **params):
    if isinstance(ct, Zero):
        return [None, None]
    if is_undefined(lhs) and is_undefined(rhs):
        raise TypeError("transpose of conv_general_dilated with both operands linear (the "
                        "program is not linear)")
    if is_undefined(lhs):
        ct = _convert(ct, get_aval(rhs).dtype)
        return [_transpose_lhs(ct, rhs, lhs.aval, **params), None]
    ct = _convert(ct, get_aval(lhs).dtype)
    return [None, _transpose_rhs(ct, lhs, rhs.aval, **params)]


jvp_rules[conv_general_dilated_p] = _conv_jvp
transpose_rules[conv_general_dilated_p] = _conv_transpose_rule


# -- batching --------------------------------------------------------------------------------------

def _batch_rule(axis, values, dims, *, dimension_numbers, feature_group_count,
                batch_group_count, **params):
    (lhs, rhs), (ld, rd) = values, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    v = axis.size
    nd = get_aval(lhs).ndim - (ld is not None)
    nsp = nd - 2
    canonical = tuple(range(nd))
    g, b = feature_group_count, batch_group_count
    kw = dict(params, feature_group_count=g, batch_group_count=b)

    def batched_canonical(x, d, spec):
        # (V, *canonical example axes)
        real = tuple(a + (a >= d) for a in spec)
        return _transpose(x, (d,) + real)

    def finish(out_c):
        # out_c: (V, N, O, *spatial) canonical; back to the example's out layout, V first.
        return _transpose(out_c, (0,) + tuple(1 + int(a) for a in np.argsort(out_spec)))

    if ld is not None and rd is None:
        x = batched_canonical(lhs, ld, lhs_spec)
        shape = get_aval(x).shape  # (V, N, C, *sp)
        n = shape[1]
        if b == 1:
            x = _reshape(x, (v * n,) + shape[2:])
        else:
            # Batch groups are contiguous blocks of N: keep V inside each block.
            x = _reshape(x, (v, b, n // b) + shape[2:])
            x = _transpose(x, (1, 0) + tuple(range(2, nd + 2)))
            x = _reshape(x, (v * n,) + shape[2:])
        out = conv_general_dilated_p.bind(
            x, rhs, dimension_numbers=ConvDimensionNumbers(canonical, rhs_spec, canonical), **kw)
        oshape = get_aval(out).shape
        out = _reshape(out, (v, oshape[0] // v) + oshape[1:])
        return [finish(out)], [0]

    if ld is None and rd is not None:
        w = batched_canonical(rhs, rd, rhs_spec)
        shape = get_aval(w).shape  # (V, O, I, *K)
        o = shape[1]
        groups = max(g, b)
        # Feature groups are contiguous blocks of O: V goes inside each block.
        w = _reshape(w, (v, groups, o // groups) + shape[2:])
        w = _transpose(w, (1, 0) + tuple(range(2, nd + 2)))
        w = _reshape(w, (groups * v * (o // groups),) + shape[2:])
        out = conv_general_dilated_p.bind(
            lhs, w, dimension_numbers=ConvDimensionNumbers(lhs_spec, canonical, canonical), **kw)
        oshape = get_aval(out).shape  # (N, groups * V * O_g, *sp)
        out = _reshape(out, (oshape[0], groups, v, o // groups) + oshape[2:])
        out = _transpose(out, (2, 0, 1, 3) + tuple(range(4, 4 + nsp)))
        out = _reshape(out, (v, oshape[0], o) + oshape[2:])
        return [finish(out)], [0]

    x = batched_canonical(lhs, ld, lhs_spec)   # (V, N, C, *sp)
    w = batched_canonical(rhs, rd, rhs_spec)   # (V, O, I, *K)
    if b > 1:
        # Both batched with batch groups: one convolution per example (feature groups cannot
        # hold V as well).
        outs = []
        for i in range(v):
            xi = _reshape(P.slice_p.bind(x, start_indices=(i,) + (0,) * nd,
                                         limit_indices=(i + 1,) + get_aval(x).shape[1:],
                                         strides=(1,) * (nd + 1)), get_aval(x).shape[1:])
            wi = _reshape(P.slice_p.bind(w, start_indices=(i,) + (0,) * nd,
                                         limit_indices=(i + 1,) + get_aval(w).shape[1:],
                                         strides=(1,) * (nd + 1)), get_aval(w).shape[1:])
            oi = conv_general_dilated_p.bind(xi, wi, dimension_numbers=canonical_numbers(nd),
                                             **kw)
            outs.append(_reshape(oi, (1,) + get_aval(oi).shape))
        return [finish(P.concatenate_p.bind(*outs, dimension=0))], [0]
    # Both batched: V becomes more feature groups (example v's channels are group block v).
    xshape, wshape = get_aval(x).shape, get_aval(w).shape
    x = _transpose(x, (1, 0) + tuple(range(2, nd + 1)))
    x = _reshape(x, (xshape[1], v * xshape[2]) + xshape[3:])
    w = _reshape(w, (v * wshape[1],) + wshape[2:])
    kw["feature_group_count"] = v * g
    out = conv_general_dilated_p.bind(x, w, dimension_numbers=canonical_numbers(nd), **kw)
    oshape = get_aval(out).shape  # (N, V * O, *sp)
    out = _reshape(out, (oshape[0], v, wshape[1]) + oshape[2:])
    out = _transpose(out, (1, 0) + tuple(range(2, nd + 1)))
    return [finish(out)], [0]


batching_rules[conv_general_dilated_p] = _batch_rule
