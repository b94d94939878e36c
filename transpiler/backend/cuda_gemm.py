"""Matrix products and 2-D convolutions on NVIDIA GPUs through pyree's own CUDA kernels.

IREE 3.13's CUDA code generator puts only f16/bf16 contractions on tensor cores, with
``mma.sync`` but without asynchronous copies or pipelining, and has no TF32: on an H200 an
8192² float32 matmul ran at 4 TFLOP/s plain, ~48 as three bf16 products, where JAX (TF32)
reaches ~330. pyree therefore dispatches its own kernels from the module (IREE's
``hal.dispatch.extern``, PTX embedded in the module; measured there: ~78 TFLOP/s TF32,
~215 bf16, ~36 exact float32), for products that are:

* on CUDA, for a target of ``sm_80`` or newer (the PTX is ``sm_80``: the driver compiles it
  for newer GPUs);
* of static shape, with two free sides (a matrix-vector product stays IREE's: memory-bound);
* float32 below ``HIGHEST`` precision — TF32 products with float32 accumulation, the
  arithmetic of JAX's ``DEFAULT`` and ``HIGH`` ("tensorfloat32") on GPUs —, float32 at
  ``HIGHEST`` (exact float32 fused multiply-adds on the CUDA cores), or bfloat16 / float16
  operands (results float32 or the operands' type, accumulation float32);
* large enough to gain: more than ``MIN_MACS`` multiply-adds.

With the kernels off (or below ``sm_80``) float32 below ``HIGHEST`` runs as three bf16
products through IREE (lower._bf16_split_product), at ``HIGHEST`` as IREE's float32 code.
Float32 2-D convolutions take an implicit-GEMM kernel (``conv2d_plan``).

A product ``dot_general(lhs, rhs)`` becomes ``C[b] = A[b] @ B[b]`` over one batch axis: the
operands are transposed only when their batch, free and contracted axes are not already
grouped (each group contiguous, the batch first), then reshaped to rank 3. A stored K x M or
N x K operand needs no transpose: the kernel reads it column-major. The contiguous extent of
each operand is padded with zeros to a multiple of 16 bytes, so that the kernel's 16-byte copies
never straddle the matrix's edge; the kernel is told the true extents.

``config.cuda_gemm_kernels`` (``PYREE_CUDA_GEMM_KERNELS``) turns the kernels off; the choice is
part of the module's text, so of every cache key.

The PTX (``cuda_gemm_ptx.json.gz``) is built from ``cuda_gemm.cu`` with NVIDIA's NVRTC:
``pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12 nvidia-cuda-nvcc-cu12`` (the
``cuda-kernels`` extra; nvcc's package has the headers WMMA needs, and ptxas),
then ``python -m pyree.transpiler.backend.build_cuda_kernels``. The file records the source's hash;
a test checks that it matches.

Example (compiles for CUDA without a GPU)::

    pyree.config.update("cuda_target", "sm_80")
    f = pyree.jit(lambda a, b: a @ b, device=pyree.runtime.device.Device("cuda"))
    "pyree_gemm_f32_f32_rr" in f.lower(np.ones((256, 256), np.float32),
                                       np.ones((256, 256), np.float32)).as_text()   # True
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import json
import math
import os
from typing import NamedTuple, Optional, Sequence

import numpy as np

from pyree.dtypes import bfloat16

SOURCE = os.path.join(os.path.dirname(__file__), "cuda_gemm.cu")
PTX_FILE = os.path.join(os.path.dirname(__file__), "cuda_gemm_ptx.json.gz")

# Products of at most this many multiply-adds stay IREE's: a kernel launch and its 128 x 128
# tiles are not worth it there (and float32 ones are then exact; see
# lower.GPU_PLAIN_FLOAT32_MACS, the same bound).
MIN_MACS = 1 << 20

TILE = 128          # rows and columns of C per workgroup (cuda_gemm.cu: BM, BN)
THREADS = 128       # threads per workgroup
MAX_GRID = 65535    # CUDA's limit on the y and z workgroup counts

_NAMES = {np.dtype(np.float32): "f32", np.dtype(bfloat16): "bf16", np.dtype(np.float16): "f16"}
_DTYPES = {name: dtype for dtype, name in _NAMES.items()}

# (input, output) type pairs with a kernel; layouts: A row/column-major x B row/column-major.
TYPE_PAIRS = (("f32", "f32"), ("bf16", "f32"), ("bf16", "bf16"), ("f16", "f32"), ("f16", "f16"))
LAYOUTS = ("rr", "rc", "cr", "cc")
KERNELS = tuple(f"pyree_gemm_{i}_{o}_{lay}" for i, o in TYPE_PAIRS for lay in LAYOUTS) + tuple(
    f"pyree_sgemm_f32_f32_{lay}" for lay in LAYOUTS) + ("pyree_conv2d_f32_f32",)
SIMT_THREADS = 256   # threads of the exact float32 kernels (cuda_gemm.cu: sgemm)


class GemmPlan(NamedTuple):
    """How one dot_general runs as a kernel: ``lhs_order`` / ``rhs_order`` transpose the
    operands (None: as they are) so that ``lhs_shape3`` / ``rhs_shape3`` are their rank-3
    reshapes; ``a_col`` / ``b_col`` say whether A is stored K x M and B N x K; ``pad_a`` /
    ``pad_b`` are the zeros appended to each one's last axis; ``split`` > 1: the kernel computes
    the product of each of that many slices of k as a batch of float32 results, summed after
    it (``split_count``)."""
    kernel: str
    batch: int
    m: int
    n: int
    k: int
    lhs_order: Optional[tuple]
    rhs_order: Optional[tuple]
    lhs_shape3: tuple
    rhs_shape3: tuple
    a_col: bool
    b_col: bool
    pad_a: int
    pad_b: int
    split: int = 1      # k cut into this many slices, their products summed (split_count)


def kernel_family(in_dtype, out_dtype, precision: Optional[str], target: str) -> Optional[str]:
    """The kernels' name up to the layout ("pyree_gemm_f32_f32", ...) for these operand and
    result types at ``precision`` on ``target``, or None when products of them stay IREE's:
    float32 at HIGHEST takes the exact float32 kernels ("pyree_sgemm_f32_f32")."""
    from pyree import config
    if not config.cuda_gemm_kernels or _arch(target) < 80:
        return None
    in_name, out_name = _NAMES.get(np.dtype(in_dtype)), _NAMES.get(np.dtype(out_dtype))
    if in_name is None or (in_name, out_name) not in TYPE_PAIRS:
        return None
    if in_name == "f32" and precision == "HIGHEST":
        return "pyree_sgemm_f32_f32"
    return f"pyree_gemm_{in_name}_{out_name}"


def plan(lhs_aval, rhs_aval, out_aval, dimension_numbers, precision: Optional[str],
         target: str) -> Optional[GemmPlan]:
    """The kernel plan of a static dot_general on CUDA ``target`` ("sm_80", ...), or None when
    it stays IREE's (see the module docstring)."""
    family = kernel_family(lhs_aval.dtype, out_aval.dtype, precision, target)
    if family is None or rhs_aval.dtype != lhs_aval.dtype:
        return None
    (lc, rc), (lb, rb) = dimension_numbers
    lf = [d for d in range(lhs_aval.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs_aval.ndim) if d not in rc and d not in rb]
    size = lambda aval, dims: math.prod(aval.shape[d] for d in dims)
    batch, m, n, k = size(lhs_aval, lb), size(lhs_aval, lf), size(rhs_aval, rf), size(lhs_aval, lc)
    if m <= 1 or n <= 1 or batch * m * n * k <= MIN_MACS:
        return None
    # A is M x K unless stored contracted-first (K x M: column-major); B is K x N when
    # stored contracted-first, else N x K (column-major).
    lhs_order, a_col = _layout(lhs_aval.ndim, list(lb), lf, list(lc))
    rhs_order, rhs_contracted_first = _layout(rhs_aval.ndim, list(rb), rf, list(rc))
    b_col = not rhs_contracted_first
    lhs_shape3 = (batch, k, m) if a_col else (batch, m, k)
    rhs_shape3 = (batch, n, k) if b_col else (batch, k, n)
    return product_plan(family, lhs_shape3, rhs_shape3, a_col, b_col, lhs_order, rhs_order)


def product_plan(family: str, lhs_shape3: tuple, rhs_shape3: tuple, a_col: bool, b_col: bool,
                 lhs_order: Optional[tuple] = None,
                 rhs_order: Optional[tuple] = None) -> Optional[GemmPlan]:
    """The plan of a batched product of rank-3 operands stored as ``lhs_shape3`` (batch, M x K
    or K x M) and ``rhs_shape3`` (batch, K x N or N x K), with the kernels of ``family`` (see
    ``kernel_family``); None when a size is past what the kernels index (32-bit offsets,
    CUDA's grid)."""
    batch = rhs_shape3[0]
    m, k = (lhs_shape3[2], lhs_shape3[1]) if a_col else (lhs_shape3[1], lhs_shape3[2])
    n = rhs_shape3[1] if b_col else rhs_shape3[2]
    chunk = 16 // np.dtype(_DTYPES[family.split("_")[2]]).itemsize
    pad_a, pad_b = (-lhs_shape3[2]) % chunk, (-rhs_shape3[2]) % chunk
    padded = lambda s, p: s[1] * (s[2] + p)
    if (-(-m // TILE) > MAX_GRID or batch > MAX_GRID
            or max(padded(lhs_shape3, pad_a), padded(rhs_shape3, pad_b), m * n) >= 2 ** 31):
        return None
    layout = ("c" if a_col else "r") + ("c" if b_col else "r")
    split = split_count(batch, m, n, k, chunk)
    if split > 1 and family.startswith("pyree_gemm_"):   # float32 partial products
        family = "_".join(family.split("_")[:3] + ["f32"])
    return GemmPlan(f"{family}_{layout}", batch, m, n, k, lhs_order, rhs_order,
                    tuple(lhs_shape3), tuple(rhs_shape3), a_col, b_col, pad_a, pad_b, split)


# Split-k: a product of few 128 x 128 tiles over a long k leaves most of the GPU idle while
# each workgroup steps through k one tile after another (64 x 1024 @ 1024 x 1024, an RNN step's
# product: 8 workgroups of 64 steps each on 132 SMs; 4096 x 4096 @ 4096 x 10 in an MLP: 32 of
# 256). Such a product is computed as the sum of the products of slices of k, one workgroup
# per tile and slice, up to about two per SM of an H100/H200, each slice at least
# MIN_SPLIT_K long.
# (PYREE_CUDA_MAX_SPLIT: an experiment knob for timing on a GPU; 1 splits nothing.)
SPLIT_WORKGROUPS = 264
MIN_SPLIT_K = 128
MAX_SPLIT = int(os.environ.get("PYREE_CUDA_MAX_SPLIT") or 16)


def split_count(batch: int, m: int, n: int, k: int, chunk: int) -> int:
    """How many slices of k a product of these sizes runs as (1: none). Only unbatched
    products split; each slice's length divides k exactly and is a whole number of the
    kernel's 16-byte copies (``chunk`` elements), so slices start aligned."""
    if batch != 1:
        return 1
    tiles = -(-m // TILE) * -(-n // TILE)
    split = 1
    while (split * 2 <= MAX_SPLIT and tiles * split * 2 <= SPLIT_WORKGROUPS
           and k % (split * 2) == 0 and (k // (split * 2)) % chunk == 0
           and k // (split * 2) >= MIN_SPLIT_K):
        split *= 2
    return split


def kernel_constants(p: GemmPlan) -> list:
    """The kernel's 32-bit arguments for plan ``p`` (cuda_gemm.cu: M, N, K, lda, ldb, ldc and
    the batch strides of A, B and C, in elements). With a split, the batch is the slices of
    k: the next slice of A starts ``K / split`` elements on along k (a column for A stored
    M x K, rows for K x M), of B likewise."""
    lda, ldb = p.lhs_shape3[2] + p.pad_a, p.rhs_shape3[2] + p.pad_b
    if p.split == 1:
        return [p.m, p.n, p.k, lda, ldb, p.n, p.lhs_shape3[1] * lda, p.rhs_shape3[1] * ldb,
                p.m * p.n]
    k = p.k // p.split
    return [p.m, p.n, k, lda, ldb, p.n, k * lda if p.a_col else k, k if p.b_col else k * ldb,
            p.m * p.n]


def _arch(target: str) -> int:
    return int(target[3:]) if target.startswith("sm_") and target[3:].isdigit() else 0


def _layout(ndim: int, batch: list, free: list, contracted: list):
    """(transpose order or None, contracted-first): an operand whose axes are already
    (batch, free, contracted) or (batch, contracted, free) is used as it is; any other is
    transposed to (batch, free, contracted)."""
    order = list(range(ndim))
    if order == batch + free + contracted:
        return None, False
    if order == batch + contracted + free:
        return None, True
    return tuple(batch + free + contracted), False


def emit(p: GemmPlan, lhs, rhs, out_type, target: str):
    """The ops of plan ``p`` at the current insertion point: operands prepared, the kernel
    dispatched, its (batch, M, N) result reshaped to ``out_type``; returns the result."""
    from iree.compiler import ir
    a = _prepare(ir, lhs, p.lhs_order, p.lhs_shape3, p.pad_a)
    b = _prepare(ir, rhs, p.rhs_order, p.rhs_shape3, p.pad_b)
    out_element = ir.RankedTensorType(out_type).element_type
    kernel_element = ir.F32Type.get() if p.split > 1 else out_element
    c_type = ir.RankedTensorType.get([p.batch * p.split, p.m, p.n], kernel_element)
    if EMULATE_ON_CPU:
        c = _emulated_kernel(ir, p, a, b, c_type)
    else:
        c = _dispatch(ir, p.kernel, target, [a, b], c_type, kernel_constants(p),
                      grid=(-(-p.n // TILE), -(-p.m // TILE), p.batch * p.split))
    if p.split > 1:
        c = _sum_slices(ir, c, out_element)
    return ir.Operation.create("stablehlo.reshape", results=[out_type], operands=[c]).result


def _sum_slices(ir, partial, out_element):
    """The float32 (split, M, N) products of the slices of k summed to (1, M, N), in
    ``out_element``."""
    shape = ir.RankedTensorType(partial.type).shape
    f32 = ir.F32Type.get()
    scalar = ir.RankedTensorType.get([], f32)
    zero = ir.Operation.create("stablehlo.constant", results=[scalar], attributes={
        "value": ir.DenseElementsAttr.get_splat(scalar, ir.FloatAttr.get(f32, 0.0))}).result
    total = ir.Operation.create(
        "stablehlo.reduce", results=[ir.RankedTensorType.get(shape[1:], f32)],
        operands=[partial, zero], attributes={"dimensions": ir.DenseI64ArrayAttr.get([0])},
        regions=1)
    block = total.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        added = ir.Operation.create("stablehlo.add", results=[scalar],
                                    operands=list(block.arguments)).result
        ir.Operation.create("stablehlo.return", results=[], operands=[added])
    value = ir.Operation.create("stablehlo.reshape",
                                results=[ir.RankedTensorType.get([1] + shape[1:], f32)],
                                operands=[total.result]).result
    if out_element == f32:
        return value
    return ir.Operation.create("stablehlo.convert",
                               results=[ir.RankedTensorType.get([1] + shape[1:], out_element)],
                               operands=[value]).result


# True: products take their kernel form on the CPU too, with the kernel's arithmetic done by a
# stablehlo.dot_general on the padded rank-3 operands it would read (tests check the plans'
# transposes, padding and layouts this way in CI, which has no GPU: tests/test_cuda_gemm.py).
EMULATE_ON_CPU = False


def _emulated_kernel(ir, p: GemmPlan, a, b, c_type):
    """What kernel ``p.kernel`` computes from its operands ``a`` and ``b`` (padded rank-3),
    as StableHLO: the padding sliced off, one batched dot_general in float32 (exact float32
    products, where the kernel's float32 ones are TF32), the result in the kernel's type."""
    def unpadded(value, shape3, pad):
        if not pad:
            return value
        element = ir.RankedTensorType(value.type).element_type
        return ir.Operation.create(
            "stablehlo.slice", results=[ir.RankedTensorType.get(list(shape3), element)],
            operands=[value], attributes={
                "start_indices": ir.DenseI64ArrayAttr.get([0, 0, 0]),
                "limit_indices": ir.DenseI64ArrayAttr.get(list(shape3)),
                "strides": ir.DenseI64ArrayAttr.get([1, 1, 1])}).result
    f32 = ir.F32Type.get()

    def widened(value):   # (exact; the CPU backend compiles no bf16 arithmetic)
        shape = ir.RankedTensorType(value.type).shape
        if ir.RankedTensorType(value.type).element_type == f32:
            return value
        return ir.Operation.create("stablehlo.convert",
                                   results=[ir.RankedTensorType.get(shape, f32)],
                                   operands=[value]).result
    a = widened(unpadded(a, p.lhs_shape3, p.pad_a))
    b = widened(unpadded(b, p.rhs_shape3, p.pad_b))
    if p.split > 1:   # the slices of k as the batch (unbatched products split)
        a = _slices_of_k(ir, a, p.k, p.split, k_first=p.a_col)
        b = _slices_of_k(ir, b, p.k, p.split, k_first=not p.b_col)
    wide = ir.RankedTensorType.get([p.batch * p.split, p.m, p.n], f32)
    numbers = ir.Attribute.parse(
        f"#stablehlo.dot<lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
        f"lhs_contracting_dimensions = [{1 if p.a_col else 2}], "
        f"rhs_contracting_dimensions = [{2 if p.b_col else 1}]>")
    c = ir.Operation.create("stablehlo.dot_general", results=[wide], operands=[a, b],
                            attributes={"dot_dimension_numbers": numbers}).result
    if ir.RankedTensorType(c_type).element_type == f32:
        return c
    return ir.Operation.create("stablehlo.convert", results=[c_type], operands=[c]).result


def _slices_of_k(ir, value, k: int, split: int, k_first: bool):
    """A (1, K, X) operand (``k_first``) or a (1, X, K) one as (split, K / split, X) or
    (split, X, K / split): its slices of k as a batch."""
    element = ir.RankedTensorType(value.type).element_type
    x = ir.RankedTensorType(value.type).shape[2 if k_first else 1]
    reshape = lambda v, shape: ir.Operation.create(
        "stablehlo.reshape", results=[ir.RankedTensorType.get(shape, element)],
        operands=[v]).result
    if k_first:
        return reshape(value, [split, k // split, x])
    return ir.Operation.create(
        "stablehlo.transpose", results=[ir.RankedTensorType.get([split, x, k // split], element)],
        operands=[reshape(value, [x, split, k // split])],
        attributes={"permutation": ir.DenseI64ArrayAttr.get([1, 0, 2])}).result


class Conv2dPlan(NamedTuple):
    """A float32 2-D convolution of NCHW images with OIHW filters as pyree's implicit-GEMM
    kernel: out[n] (filters x pixels) = w (filters x K) @ taps[n] (K x pixels), K = channels x
    kh x kw, the taps read from the image by the kernel (``cuda_gemm.cu``: Image)."""
    batch: int
    channels: int
    height: int
    width: int
    filters: int
    kernel: tuple
    out: tuple
    strides: tuple
    dilation: tuple
    pad: tuple      # top, left (the bottom and right follow from the sizes)
    pad_k: int      # zeros appended to the filter matrix's rows (16-byte rows)


def conv2d_plan(lhs_shape, rhs_shape, out_spatial, strides, padding, rhs_dilation,
                precision: Optional[str], target: str) -> Optional[Conv2dPlan]:
    """The plan of a float32 NCHW x OIHW convolution (no input dilation, one group) on
    ``target``, or None when it stays IREE's."""
    if kernel_family(np.float32, np.float32, precision, target) != "pyree_gemm_f32_f32":
        return None
    n, c, h, w = lhs_shape
    o, _, kh, kw = rhs_shape
    k = c * kh * kw
    pixels = out_spatial[0] * out_spatial[1]
    # Few output pixels (a kernel gradient's result is the filter's taps, its window the
    # image) would leave most of each 128-wide tile idle over a long k: IREE's then.
    if (n * o * pixels * k <= MIN_MACS or o <= 1 or pixels < TILE // 2 or n > MAX_GRID
            or -(-o // TILE) > MAX_GRID or max(c * h * w, o * pixels, o * (k + 3)) >= 2 ** 31):
        return None
    return Conv2dPlan(n, c, h, w, o, (kh, kw), tuple(out_spatial), tuple(strides),
                      tuple(rhs_dilation), (padding[0][0], padding[1][0]), (-k) % 4)


def emit_conv2d(p: Conv2dPlan, images, filters, out_type, target: str):
    """The ops of plan ``p``: ``images`` (N, C, H, W) and ``filters`` (O, C, KH, KW) to the
    (N, O, OH, OW) result ``out_type``."""
    from iree.compiler import ir
    k = p.channels * p.kernel[0] * p.kernel[1]
    matrix = _prepare(ir, filters, None, (1, p.filters, k), p.pad_k)
    pixels = p.out[0] * p.out[1]
    element = ir.RankedTensorType(out_type).element_type
    c_type = ir.RankedTensorType.get([p.batch, p.filters, pixels], element)
    constants = [p.filters, pixels, k, k + p.pad_k, 0, pixels, 0,
                 p.channels * p.height * p.width, p.filters * pixels,
                 p.channels, p.height, p.width, p.kernel[0], p.kernel[1], p.out[1],
                 p.strides[0], p.strides[1], p.dilation[0], p.dilation[1], p.pad[0], p.pad[1]]
    c = _dispatch(ir, "pyree_conv2d_f32_f32", target, [matrix, images], c_type, constants,
                  grid=(-(-pixels // TILE), -(-p.filters // TILE), p.batch))
    return ir.Operation.create("stablehlo.reshape", results=[out_type], operands=[c]).result


def _prepare(ir, value, order, shape3, pad):
    element = ir.RankedTensorType(value.type).element_type
    if order is not None:
        shape = [ir.RankedTensorType(value.type).shape[d] for d in order]
        value = ir.Operation.create(
            "stablehlo.transpose", results=[ir.RankedTensorType.get(shape, element)],
            operands=[value], attributes={"permutation": ir.DenseI64ArrayAttr.get(list(order))}
        ).result
    value = ir.Operation.create("stablehlo.reshape",
                                results=[ir.RankedTensorType.get(list(shape3), element)],
                                operands=[value]).result
    if pad:
        zero = ir.Operation.create(
            "stablehlo.constant", results=[ir.RankedTensorType.get([], element)],
            attributes={"value": ir.DenseElementsAttr.get_splat(
                ir.RankedTensorType.get([], element), _zero(ir, element))}).result
        value = ir.Operation.create(
            "stablehlo.pad",
            results=[ir.RankedTensorType.get([shape3[0], shape3[1], shape3[2] + pad], element)],
            operands=[value, zero],
            attributes={"edge_padding_low": ir.DenseI64ArrayAttr.get([0, 0, 0]),
                        "edge_padding_high": ir.DenseI64ArrayAttr.get([0, 0, pad]),
                        "interior_padding": ir.DenseI64ArrayAttr.get([0, 0, 0])}).result
    return value


def _zero(ir, element):
    return ir.FloatAttr.get(element, 0.0)


def _dispatch(ir, kernel: str, target: str, operands: Sequence, result_type, constants,
              grid: tuple):
    """A ``hal.dispatch.extern`` of ``kernel`` (PTX embedded) on ``operands`` (read-only
    bindings), one written binding (``result_type``), 32-bit ``constants`` and a static
    ``grid`` of workgroups."""
    i32, index = ir.IntegerType.get_signless(32), ir.IndexType.get()
    values = [ir.Operation.create("arith.constant", results=[i32],
                                  attributes={"value": ir.IntegerAttr.get(i32, int(v))}).result
              for v in constants]
    bindings = ", ".join(["#hal.pipeline.binding<storage_buffer, ReadOnly>"] * len(operands)
                         + ["#hal.pipeline.binding<storage_buffer>"])
    ptx = kernel_ptx(kernel).encode()
    attributes = {
        "export_name": ir.StringAttr.get(kernel),
        "layout": ir.Attribute.parse(
            f"#hal.pipeline.layout<constants = {len(constants)}, bindings = [{bindings}]>"),
        "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, len(values) + len(operands), 0, 0]),
        "targets": ir.ArrayAttr.get([ir.Attribute.parse(
            f'#hal.executable.target<"cuda", "cuda-nvptx-fb", {{target_arch = "{target}"}}>')]),
        "target_ordinals": ir.ArrayAttr.get([ir.IntegerAttr.get(index, 0)]),
        "target_objects": ir.ArrayAttr.get([ir.ArrayAttr.get([ir.Attribute.parse(
            # (IREE 3.13 prints an object without a path as "{, data = ...}", which it then
            # cannot parse: the path names the kernel; the data is what is used.)
            f'#hal.executable.object<{{path = "{kernel}.ptx", '
            f'data = dense<"0x{ptx.hex().upper()}"> : '
            f'vector<{len(ptx)}xi8>}}>')])]),
        "tied_operands": ir.ArrayAttr.get([ir.IntegerAttr.get(index, -1)]),
        "workgroup_size": ir.ArrayAttr.get([ir.IntegerAttr.get(index, v)
                                            for v in (threads(kernel), 1, 1)]),
    }
    if shared_bytes(kernel):
        # Launched as dynamic shared memory, past CUDA's 48 KB of static: IREE raises the
        # kernel's limit to it.
        attributes["workgroup_local_memory"] = ir.IntegerAttr.get(index, shared_bytes(kernel))
    dispatch = ir.Operation.create("hal.dispatch.extern", results=[result_type],
                                   operands=values + list(operands), attributes=attributes,
                                   regions=2)
    block = dispatch.regions[0].blocks.append(ir.Type.parse("!hal.device"))
    with ir.InsertionPoint(block):
        counts = [ir.Operation.create("arith.constant", results=[index],
                                      attributes={"value": ir.IntegerAttr.get(index, v)}).result
                  for v in grid]
        ir.Operation.create("hal.return", results=[], operands=counts)
    return dispatch.result


# -- the PTX ------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _ptx_file() -> dict:
    # PYREE_CUDA_GEMM_PTX: another build of the kernels (``build(variant=...)``), an
    # experiment knob for timing tuning variants on a GPU; the file is part of each module.
    path = os.environ.get("PYREE_CUDA_GEMM_PTX") or PTX_FILE
    try:
        with gzip.open(path, "rt") as f:
            record = json.load(f)
        if not all(isinstance(record["kernels"][name], str) for name in KERNELS):
            raise ValueError("a kernel's PTX is not text")
    except (OSError, EOFError, ValueError, KeyError, TypeError) as e:
        raise RuntimeError(
            f"pyree's CUDA kernels could not be read from {path} ({type(e).__name__}: {e}): "
            f"reinstall pyree, rebuild them (python -m "
            f"pyree.transpiler.backend.build_cuda_kernels), or set PYREE_CUDA_GEMM_KERNELS=0 to "
            f"leave products to IREE") from None
    return record


def kernel_ptx(kernel: str) -> str:
    """The PTX module of one kernel of ``KERNELS``."""
    return _ptx_file()["kernels"][kernel]


def shared_bytes(kernel: str) -> int:
    """Dynamic shared memory the kernel's build takes (0: static, within CUDA's 48 KB)."""
    return _ptx_file().get("shared_bytes", {}).get(kernel, 0)


def threads(kernel: str) -> int:
    """Threads per workgroup of one kernel of the kernels' build."""
    if kernel.startswith("pyree_sgemm_"):
        return SIMT_THREADS
    return _ptx_file().get("threads", THREADS)


# Tuning variants of cuda_gemm.cu's knobs (its PYREE_* macros), built with ``build(variant=)``
# for timing on a GPU (benchmarks/gpu_gemm.sh, gpu_gemm_variants.py); "default" is what ships.
# Measured on an H200 (2026-11-27), TFLOP/s on 4096^3 / 8192^3 products, f32 (TF32) and bf16,
# and the 32x64x128x128 convolution: default 78.6 / 79.6, 204 / 217, conv 32.6; pad the same
# (78.2 / 79.7, 204 / 217, 32.7); stages4 69.8 / 71.3, 177 / 191, 33.3; warps8 62.2 / 63.8,
# 156 / 168, 35.1; warps8_group 60.8 / 62.5, 156 / 166, 36.0. An earlier 3-stage build with
# 128-byte k rows in 110 KB (no unrolled steps) ran f32 8192^3 at 68 and bf16 at 179.
VARIANTS = {
    "default": {},
    "pad": {"PYREE_F32_MN_PAD_BYTES": 32},
    "stages4": {"PYREE_STAGES": 4, "PYREE_COPY_UNROLL": 2},
    "warps8": {"PYREE_WARPS": 8, "PYREE_MIN_BLOCKS": 2, "PYREE_STAGES": 3,
               "PYREE_F32_MN_PAD_BYTES": 32, "PYREE_COPY_UNROLL": 1},
    "warps8_group": {"PYREE_WARPS": 8, "PYREE_MIN_BLOCKS": 2, "PYREE_STAGES": 3,
                     "PYREE_F32_MN_PAD_BYTES": 32, "PYREE_COPY_UNROLL": 1, "PYREE_GROUP_M": 8},
}


def _shared_bytes(itemsize: int, knobs: dict) -> int:
    """cuda_gemm.cu's STAGES * Stage<T>::BYTES for these knobs (kept in step with it)."""
    stages, k_bytes = knobs.get("PYREE_STAGES", 2), knobs.get("PYREE_K_BYTES", 64)
    bk, pad = k_bytes // itemsize, 16 // itemsize
    mn_pad = knobs.get("PYREE_F32_MN_PAD_BYTES", 16) // 4 if itemsize == 4 else 8
    half = max(TILE * (bk + pad), bk * (TILE + mn_pad)) * itemsize
    return stages * 2 * ((half + 127) & ~127)


def source_hash() -> str:
    with open(SOURCE, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# PTX ISA version written into the modules: NVRTC 12.9 writes 8.8, which drivers older than
# CUDA 12.9's refuse; the kernels use nothing newer than sm_80's PTX 7.0 (cp.async, wmma with
# bf16 and tf32), and ptxas accepts them so.
PTX_VERSION = "7.0"


def build(nvrtc_path: Optional[str] = None, variant: str = "default",
          out: Optional[str] = None) -> dict:
    """Compiles every kernel of ``KERNELS`` from ``cuda_gemm.cu`` with NVRTC into
    ``cuda_gemm_ptx.json.gz`` (a development step; needs the ``cuda-kernels`` extra), or a
    tuning ``variant`` (``VARIANTS``) into ``out``."""
    import ctypes
    import re
    nvidia = _nvidia_root()
    lib = ctypes.CDLL(nvrtc_path or os.path.join(nvidia, "cuda_nvrtc", "lib", "libnvrtc.so.12"))
    source = open(SOURCE).read()
    includes = [f"-I{os.path.join(nvidia, package, 'include')}"
                for package in ("cuda_runtime", "cuda_nvcc")]   # mma.h and its crt/mma.h
    knobs = VARIANTS[variant]
    kernels, shared = {}, {}
    for name in KERNELS:
        _, family, in_name, out_name, *layout = name.split("_")
        cols = [str(side == "c").lower() for side in "".join(layout)]
        instance = {"conv2d": f"PYREE_CONV2D({name})",
                    "sgemm": f"PYREE_SGEMM({name}, {', '.join(cols)})",
                    "gemm": f"PYREE_GEMM({name}, {in_name}, {out_name}, {', '.join(cols)})"}
        text = f"{source}\n{instance[family]}\n"
        program = ctypes.c_void_p()
        _check(lib, lib.nvrtcCreateProgram(ctypes.byref(program), text.encode(),
                                           b"cuda_gemm.cu", 0, None, None))
        size_bytes = np.dtype(_DTYPES[in_name]).itemsize
        dynamic = _shared_bytes(size_bytes, knobs) > 48 * 1024
        defines = [f"-D{k}={v}" for k, v in knobs.items()] + (
            ["-DPYREE_DYNAMIC_SHARED=1"] if dynamic else [])
        if dynamic:
            shared[name] = _shared_bytes(size_bytes, knobs)
        options = [b"--gpu-architecture=compute_80", b"-std=c++17", b"-default-device",
                   b"--diag-suppress=177"] + [i.encode() for i in includes + defines]
        status = lib.nvrtcCompileProgram(program, len(options),
                                         (ctypes.c_char_p * len(options))(*options))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(program, log)
        if status != 0:
            raise RuntimeError(f"NVRTC failed on {name}:\n{log.value.decode()}")
        lib.nvrtcGetPTXSize(program, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(program, ptx)
        lib.nvrtcDestroyProgram(ctypes.byref(program))
        kernels[name] = re.sub(r"^\.version \d+\.\d+", f".version {PTX_VERSION}",
                               ptx.value.decode(), count=1, flags=re.M)
    record = {"source_sha256": source_hash(), "kernels": kernels}
    if shared:
        record["shared_bytes"] = shared
    if knobs.get("PYREE_WARPS", 4) != 4:
        record["threads"] = 32 * knobs["PYREE_WARPS"]
    if variant != "default":
        record["variant"] = variant
    with open(out or PTX_FILE, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
        f.write(json.dumps(record, sort_keys=True).encode())   # (the same bytes for the same PTX)
    _ptx_file.cache_clear()
    return record


def _nvidia_root() -> str:
    import importlib.util
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("building the CUDA kernels needs NVRTC: pip install "
                           "'pyree[cuda-kernels]'")
    return list(spec.submodule_search_locations)[0]


def _check(lib, status: int) -> None:
    if status != 0:
        raise RuntimeError(f"NVRTC error {status}")

