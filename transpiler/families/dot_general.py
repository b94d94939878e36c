"""``dot_general``, the contraction of two arrays (``jnp.dot``, ``matmul``, ``einsum`` and
``tensordot`` bind it), with every rule for it. The core names it (primitives.py) because the
transposes of other contractions build with it.

* **Abstract evaluation**: XLA's dimension numbers ``((lhs_contracting, rhs_contracting),
  (lhs_batch, rhs_batch))``, checked; the result is batch, then lhs free, then rhs free
  dimensions, of ``preferred_element_type`` when given.
* **Lowering**: ``stablehlo.dot_general``, in the form IREE compiles fastest for the product's
  shape and platform (each choice measured, at its code): complex products from real parts;
  matrix-vector products in loops as vector-matrix; float32 products on GPUs as bf16 parts
  (``precision``); the data-tiling mark for products where IREE's data tiling pays
  (``lower._data_tiling_pays``, shared with convolutions); batched matrix-vector products with
  their row-by-row configuration on the CPU (``runtime/compile.py``'s MATVEC_MARK).
* **Derivatives**: bilinear: the JVP is two products; the transpose with respect to either
  operand is a product of the cotangent with the other, its dimensions put back in order.
* **Batching**: a batched operand's axis becomes a batch dimension (both batched) or a free
  dimension (one batched); a batched matrix-vector product is bound as vector-matrix.
* **Eager mode**: every product runs as one batched-matmul kernel on views of its operands
  (transposed first where their dimensions are out of order).

Example::

    P.dot_general_p.bind(a, b, dimension_numbers=(((1,), (0,)), ((), ())))   # a @ b
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

from pyree.dtypes import bfloat16
from pyree.runtime.array import Array

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import abstract_eval_rules, get_aval
from ..interpreters.ad import Zero, add_tangents, is_undefined, jvp_rules, transpose_rules
from ..interpreters.ad_rules import aval, convert
from ..interpreters.batching import batching_rules, example_axes
from ..backend import cuda_gemm
from ..backend.eager import EAGER_RULES, apply_unchecked, view
from ..backend.lower import (_LOOP_OPS, BF16_CONTRACTIONS, GPU_PLAIN_FLOAT32_MACS, RuleContext,
                             _bf16_split_product, _broadcasts_computed, _data_tiling_pays,
                             _free_size, _splat, _splits_float32, contraction_operand,
                             fusion_barrier, hlo, i64_array, i64_attr, lowered_products,
                             lowering_rules, mlir, op, scalar_like, tensor_type)


# -- abstract evaluation --------------------------------------------------------------------------

def _dot_general_rule(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers: tuple,
                      precision=None, preferred_element_type=None) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    P.check_kinds("dot_general", lhs, *P.NUMERIC_OR_BOOL)
    dtype = P.same_dtypes("dot_general", [lhs, rhs])
    for name, dims, operand in (("lhs contracting", lc, lhs), ("rhs contracting", rc, rhs),
                                ("lhs batch", lb, lhs), ("rhs batch", rb, rhs)):
        if any(not 0 <= d < operand.ndim for d in dims):
            raise TypeError(f"dot_general {name} dimensions {dims} are out of range for shape "
                            f"{operand.shape}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general dimension_numbers {dimension_numbers} pair up unequal "
                        f"numbers of dimensions")
    if len(set(lc) | set(lb)) != len(lc) + len(lb) or len(set(rc) | set(rb)) != len(rc) + len(rb):
        raise TypeError(f"dot_general dimension_numbers {dimension_numbers} repeat a dimension")
    for a, b in zip(lc, rc):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"dot_general contracts dimensions of different sizes: lhs shape "
                            f"{lhs.shape} dimension {a} vs rhs shape {rhs.shape} dimension {b}")
    for a, b in zip(lb, rb):
        if lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"dot_general batch dimensions differ in size: lhs shape {lhs.shape} "
                            f"dimension {a} vs rhs shape {rhs.shape} dimension {b}")
    batch = tuple(lhs.shape[d] for d in lb)
    lhs_free = tuple(d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb)
    rhs_free = tuple(d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb)
    out_dtype = np.dtype(preferred_element_type) if preferred_element_type is not None else dtype
    return ShapedArray(batch + lhs_free + rhs_free, out_dtype, lhs.weak_type and rhs.weak_type)


abstract_eval_rules[P.dot_general_p] = _dot_general_rule


# -- lowering -------------------------------------------------------------------------------------

def _dot_general_lowering(ctx: RuleContext, lhs, rhs, *, dimension_numbers, precision=None,
                          preferred_element_type=None):
    (lc, rc), (lb, rb) = dimension_numbers
    lhs, rhs = contraction_operand(ctx, lhs), contraction_operand(ctx, rhs)
    fields = []
    for name, dims in (("lhs_batching_dimensions", lb), ("rhs_batching_dimensions", rb),
                       ("lhs_contracting_dimensions", lc), ("rhs_contracting_dimensions", rc)):
        if dims:
            fields.append(f"{name} = [{', '.join(str(int(d)) for d in dims)}]")
    attr = mlir().Attribute.parse(f"#stablehlo.dot<{', '.join(fields)}>")
    lhs_aval, rhs_aval = ctx.avals_in
    out_aval = ctx.avals_out[0]
    if not ctx.dynamic and (lhs_aval.size == 0 or rhs_aval.size == 0):
        # A product over nothing is zeros (or empty). IREE 3.13's compiler died of a floating
        # point exception (SIGFPE) data-tiling a (3, 0) @ (0, 4) matmul on AMD znver3.
        return hlo("broadcast_in_dim", ctx.out_type(), scalar_like(0, out_aval.dtype),
                   broadcast_dimensions=i64_array([]))
    if out_aval.dtype.kind == "c" and ctx.lowering.platform != "cpu":
        return _complex_product_from_real_parts(ctx, lhs, rhs, attr)
    if (ctx.lowering.device_platform == "cuda" or cuda_gemm.EMULATE_ON_CPU) and not ctx.dynamic:
        from pyree.runtime.device import cuda_target
        target = "sm_80" if cuda_gemm.EMULATE_ON_CPU else cuda_target()
        gemm = cuda_gemm.plan(lhs_aval, rhs_aval, out_aval, dimension_numbers, precision, target)
        if gemm is not None:
            return cuda_gemm.emit(gemm, lhs, rhs, ctx.out_type(), target)
    narrow = _is_narrow_contraction(ctx, lc, lb, rc, rb)
    if narrow and ctx.lowering.device_platform == "cpu" and not ctx.dynamic:
        product = _loop_matvec_as_vecmat(ctx, lhs, rhs, lc, lb, rc)
        if product is not None:
            return product
    if narrow and lhs_aval.size * rhs_aval.size > 1 and ctx.lowering.device_platform != "cpu":
        # A matrix-vector product gets no elementwise producer fused in: IREE 3.13's CPU code
        # once failed to compile tanh(a) @ w for a of 1000 x 32 ("large vector sizes"); it
        # compiles now (tests/test_jit.py), and on the CPU the barrier went (in a loop body
        # each barrier ends IREE's execution region: a scan step of h @ w became its own
        # submission, and the unbatched RNN of benchmarks/run.py ran ~15% slower). Kept on
        # GPUs, where it was never measured without. Only values computed here: a barrier on
        # an argument costs a copy (~20% of a batched matvec).
        lhs, rhs = [fusion_barrier(v)
                    if isinstance(v, mlir().OpResult) else v for v in (lhs, rhs)]
    attributes = {"dot_dimension_numbers": attr}
    macs = out_aval.size * math.prod(lhs_aval.shape[d] for d in lc)
    if not narrow and _splits_float32(ctx, precision) and macs > GPU_PLAIN_FLOAT32_MACS:
        return _bf16_split_product(ctx, lhs, rhs, lambda a, b: op(
            "stablehlo.dot_general", [ctx.out_type()], [a, b], attributes).result)
    products = lowered_products.get()
    if narrow and ctx.lowering.in_loop and products is not None:
        products.narrow_in_loop = True
    marked = False
    if not narrow and out_aval.dtype.kind != "c" and _data_tiling_pays(ctx, lc, lb, rc, rb):
        from pyree.runtime.compile import DATA_TILING_MARK
        # A module without a marked product compiles without data tiling (see
        # runtime/compile.py, prepare_module).
        attributes[DATA_TILING_MARK] = mlir().UnitAttr.get()
        marked = True
        if lb and not ctx.dynamic:
            # IREE 3.13 data-tiles a batched product wrongly when it fuses in a producer that
            # scales rows by a reduction (softmax(a) @ v, (a * a.sum(-1, keepdims=True)) @ v
            # with a of 2x3x4: the second batch came out a row off; 10 of 60 such products of
            # small random shapes were wrong). A barrier keeps the producer apart (one on the
            # reduction alone did not help); only there: it costs a pass over the operand.
            lhs, rhs = [fusion_barrier(v)
                        if _broadcasts_computed(v) else v for v in (lhs, rhs)]
    else:
        row = _batched_matvec_row(ctx, lc, lb, rc, rb)
        if row is not None:
            from pyree.runtime.compile import MATVEC_MARK
            # A CPU compile configures this product row by row (runtime/compile.py).
            attributes[MATVEC_MARK] = i64_attr(row)
    product = op("stablehlo.dot_general", [ctx.out_type()], [lhs, rhs], attributes)
    if marked and products is not None:
        products.marked.append(product)
        products.marked_macs += macs
    return product.result


def _complex_product_from_real_parts(ctx: RuleContext, lhs, rhs, dimension_numbers):
    """A complex dot_general on a GPU as real products of the parts: (ar br - ai bi) +
    i (ar bi + ai br). IREE 3.13's compiler died (SIGSEGV) on a complex64 dot_general of
    unknown shape for CUDA (eager jnp.vdot; H200 run, 2026-11-28, reproduced here)."""
    out_aval = ctx.avals_out[0]
    real_dtype = np.dtype(np.float64 if out_aval.dtype == np.complex128 else np.float32)

    def parts(value, aval):
        real_t = tensor_type(aval.update(dtype=real_dtype), ctx.dynamic)
        if aval.dtype.kind != "c":
            return hlo("convert", real_t, value), None
        return hlo("real", real_t, value), hlo("imag", real_t, value)

    (ar, ai), (br, bi) = parts(lhs, ctx.avals_in[0]), parts(rhs, ctx.avals_in[1])
    real_out = tensor_type(out_aval.update(dtype=real_dtype), ctx.dynamic)
    attributes = {"dot_dimension_numbers": dimension_numbers}
    dot = lambda a, b: op("stablehlo.dot_general", [real_out], [a, b], attributes).result
    real, imag = dot(ar, br), None
    if ai is not None and bi is not None:
        real = hlo("subtract", real_out, real, dot(ai, bi))
    for a, b in ((ar, bi), (ai, br)):
        if a is not None and b is not None:
            term = dot(a, b)
            imag = term if imag is None else hlo("add", real_out, imag, term)
    if imag is None:
        imag = _splat(ctx, 0, out_aval.update(dtype=real_dtype), real)
    return hlo("complex", ctx.out_type(), real, imag)


# A matrix-vector product W @ v (W's rows contiguous) inside a loop whose W is loop-invariant
# runs as the vector-matrix product v @ W.T, with W.T made once before the loop. IREE 3.13's
# CPU code for an unbatched matvec reduces across each row with shuffles (compile.py's
# MATVEC_MARK notes; that configuration is lost on an unbatched product, and as a batch of
# one it gained nothing), while a vecmat accumulates along contiguous rows: a 100-step scan
# of tanh(x + W @ h), W 256 x 256, took 2.0 ms, and 0.53 ms with W.T hoisted (JAX: 0.5 ms;
# this machine, measured on hand-edited modules).
LOOP_MATVEC_MIN_ROWS = 16


def _loop_matvec_as_vecmat(ctx: RuleContext, lhs, rhs, lc, lb, rc):
    """``lhs @ rhs`` as a vector-matrix product against ``lhs`` transposed before the
    outermost enclosing loop that ``lhs`` is defined outside of, when ``lhs`` is such a
    matrix (2-D, contracted along its rows) and ``rhs`` a vector ((K,) or (K, 1)); else None.
    One transpose per matrix and loop (``Lowering.hoisted``)."""
    lhs_aval, rhs_aval = ctx.avals_in
    if (lb or lhs_aval.ndim != 2 or tuple(lc) != (1,) or tuple(rc) != (0,)
            or rhs_aval.shape not in ((lhs_aval.shape[1],), (lhs_aval.shape[1], 1))
            or lhs_aval.shape[0] < LOOP_MATVEC_MIN_ROWS
            or lhs_aval.dtype not in (np.float32, np.float64)
            or rhs_aval.dtype != lhs_aval.dtype or ctx.avals_out[0].dtype != lhs_aval.dtype):
        return None
    loop = _outermost_loop_outside(lhs)
    if loop is None:
        return None
    key = (loop, lhs)
    transposed = ctx.lowering.hoisted.get(key)
    if transposed is None:
        m, k = lhs_aval.shape
        with mlir().InsertionPoint(loop):
            transposed = hlo("transpose", ctx.type(lhs_aval.update(shape=(k, m))), lhs,
                             permutation=i64_array([1, 0]))
        ctx.lowering.hoisted[key] = transposed
    vector = hlo("reshape", ctx.type(rhs_aval.update(shape=(rhs_aval.shape[0],))), rhs)
    attr = mlir().Attribute.parse("#stablehlo.dot<lhs_contracting_dimensions = [0], "
                                  "rhs_contracting_dimensions = [0]>")
    out = op("stablehlo.dot_general", [ctx.type(ctx.avals_out[0].update(
        shape=(lhs_aval.shape[0],)))], [vector, transposed], {"dot_dimension_numbers": attr})
    return hlo("reshape", ctx.out_type(), out.result)


def _outermost_loop_outside(value):
    """The outermost loop around the insertion point that ``value`` is defined outside of
    (its operation), or None when the insertion point is in no such loop."""
    ir = mlir()

    def ancestors(block):  # the operations around a block, innermost first
        operation = block.owner
        while operation is not None:
            operation = operation.operation
            yield operation
            operation = operation.parent

    owner = value.owner
    around_definition = set(ancestors(owner if isinstance(owner, ir.Block)
                                      else owner.operation.block))
    found = None
    for operation in ancestors(ir.InsertionPoint.current.block):
        if operation in around_definition:
            break
        if operation.name in _LOOP_OPS:
            found = operation
    return found


def _batched_matvec_row(ctx: RuleContext, lc, lb, rc, rb) -> Optional[int]:
    """The row length of a batched matrix-vector product that IREE's CPU code runs faster row
    by row: one batch dimension, a matrix with one free dimension whose contracted dimension is
    its innermost (rows contiguous in memory), f32 or f64 throughout, rows of MATVEC_ROW_BYTES.
    Else None. (IREE turns such a product into a generic op, which keeps the mark; an unbatched
    one becomes a named op, which drops it.)"""
    from pyree.runtime.compile import MATVEC_ROW_BYTES
    lhs_aval, rhs_aval = ctx.avals_in
    dtype = lhs_aval.dtype
    if (len(lb) != 1 or len(lc) != 1 or dtype not in (np.float32, np.float64)
            or rhs_aval.dtype != dtype or ctx.avals_out[0].dtype != dtype
            or sorted((lhs_aval.ndim, rhs_aval.ndim)) != [2, 3]):
        return None
    matrix, contracted = (lhs_aval, lc[0]) if lhs_aval.ndim == 3 else (rhs_aval, rc[0])
    if contracted != matrix.ndim - 1:
        return None  # a vector-matrix product: IREE's own tiling is fine there
    row = matrix.shape[-1]
    low, high = MATVEC_ROW_BYTES
    return row if low <= row * dtype.itemsize <= high else None


def _is_narrow_contraction(ctx: RuleContext, lc, lb, rc, rb) -> bool:
    """Whether a static dot_general has one side without free dims: a matrix-vector,
    vector-matrix or dot product, batched or not. Such a product is memory-bound: it reads
    the larger operand once, so re-laying it out into tiles only adds traffic."""
    lhs_aval, rhs_aval = ctx.avals_in
    return not ctx.dynamic and (_free_size(lhs_aval, lc, lb) == 1
                                or _free_size(rhs_aval, rc, rb) == 1)


lowering_rules[P.dot_general_p] = _dot_general_lowering
BF16_CONTRACTIONS.add(P.dot_general_p)


# -- derivatives ----------------------------------------------------------------------------------

def _dot_jvp(primals, tangents, *, dimension_numbers, precision=None,
             preferred_element_type=None):
    x, y = primals
    tx, ty = tangents
    kw = dict(dimension_numbers=dimension_numbers, precision=precision,
              preferred_element_type=preferred_element_type)
    ans = P.dot_general_p.bind(x, y, **kw)
    out = Zero(aval(ans))
    if not isinstance(tx, Zero):
        out = add_tangents(out, P.dot_general_p.bind(tx, y, **kw))
    if not isinstance(ty, Zero):
        out = add_tangents(out, P.dot_general_p.bind(x, ty, **kw))
    return [ans], [out]


def _ranges_like(*xs: Sequence[int]) -> list[tuple]:
    start = 0
    out = []
    for x in xs:
        out.append(tuple(range(start, start + len(x))))
        start += len(x)
    return out


def _remaining(original: Sequence[int], *removed: Sequence[int]) -> tuple:
    gone = set(d for r in removed for d in r)
    return tuple(d for d in original if d not in gone)


def _dot_transpose_lhs(ct, x_aval, y, dimension_numbers, preferred_element_type, swap=False,
                       precision=None):
    """The cotangent of the left operand of dot_general (of the right one when ``swap``)."""
    x_ndim = x_aval.ndim
    y_ndim = aval(y).ndim
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    x_kept = _remaining(range(x_ndim), x_contract, x_batch)
    y_kept = _remaining(range(y_ndim), y_contract, y_batch)
    if swap:
        ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
    else:
        ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
    dims = ((ans_y, y_kept), (ans_batch, y_batch))
    x_contract_sorted_by_y = [c for _, c in sorted(zip(y_contract, x_contract))]
    out_axes = np.argsort(list(x_batch) + list(x_kept) + x_contract_sorted_by_y)
    # The same product with the operands swapped gives (batch, y's free dims, ct's free dims):
    # where that is already x's order, no transpose follows. A weight gradient x.T @ ct is
    # one (the other order wrote a 784x512 MLP weight's gradient transposed, 175 us of the
    # SGD step's 1.5 ms in IREE's profile here).
    swapped_axes = np.argsort(list(x_batch) + x_contract_sorted_by_y + list(x_kept))
    if (any(out_axes != np.arange(x_ndim))
            and all(swapped_axes == np.arange(x_ndim))):
        t = P.dot_general_p.bind(y, ct, dimension_numbers=((y_kept, ans_y), (y_batch, ans_batch)),
                                 precision=precision, preferred_element_type=None)
    else:
        t = P.dot_general_p.bind(ct, y, dimension_numbers=dims, precision=precision,
                                 preferred_element_type=None)
        if any(out_axes != np.arange(x_ndim)):
            t = P.transpose_p.bind(t, permutation=tuple(int(a) for a in out_axes))
    if aval(t).dtype != x_aval.dtype:
        t = convert(t, x_aval.dtype)
    return t


def _t_dot_general(ct, x, y, *, dimension_numbers, precision=None, preferred_element_type=None):
    if isinstance(ct, Zero):
        return [None, None]
    (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
    t_x = t_y = None
    if is_undefined(x):
        t_x = _dot_transpose_lhs(ct, aval(x), y, dimension_numbers, preferred_element_type,
                                 precision=precision)
    if is_undefined(y):
        swapped = ((y_contract, x_contract), (y_batch, x_batch))
        t_y = _dot_transpose_lhs(ct, aval(y), x, swapped, preferred_element_type, swap=True,
                                 precision=precision)
    return [t_x, t_y]


jvp_rules[P.dot_general_p] = _dot_jvp
transpose_rules[P.dot_general_p] = _t_dot_general


# -- batching -------------------------------------------------------------------------------------

def _dot_general_batching(axis, values, dims, *, dimension_numbers, **params):
    (lhs, rhs), (ld, rd) = values, dims
    (lc, rc), (lb, rb) = dimension_numbers
    if ld is not None and rd is not None:
        # Both batched: the batch axis becomes a dot_general batch dimension (the first).
        lc, lb = example_axes(lc, ld), example_axes(lb, ld)
        rc, rb = example_axes(rc, rd), example_axes(rb, rd)
        dn = ((lc, rc), ((ld,) + lb, (rd,) + rb))
        return [_dot(lhs, rhs, dn, **params)], [0]
    if ld is not None:
        # Batched lhs: its batch axis is a free dimension; the output's free lhs dims follow
        # the batch dims in lhs order.
        lc2, lb2 = example_axes(lc, ld), example_axes(lb, ld)
        free_before = sum(1 for a in range(ld) if a not in lc2 and a not in lb2)
        out = _dot(lhs, rhs, ((lc2, rc), (lb2, rb)), **params)
        return [out], [len(lb) + free_before]
    rc2, rb2 = example_axes(rc, rd), example_axes(rb, rd)
    free_before = sum(1 for a in range(rd) if a not in rc2 and a not in rb2)
    lhs_free = get_aval(lhs).ndim - len(lc) - len(lb)
    out = _dot(lhs, rhs, ((lc, rc2), (lb, rb2)), **params)
    return [out], [len(lb) + lhs_free + free_before]


def _dot(lhs, rhs, dimension_numbers, **params):
    (lc, rc), (lb, rb) = dimension_numbers
    if get_aval(rhs).ndim == len(rc) + len(rb):
        # A batched matrix-vector product: as vector-matrix (same output layout, since the
        # vector has no free dimensions), which IREE 3.13 runs ~20% faster.
        return P.dot_general_p.bind(rhs, lhs, dimension_numbers=((rc, lc), (rb, lb)), **params)
    return P.dot_general_p.bind(lhs, rhs, dimension_numbers=dimension_numbers, **params)


batching_rules[P.dot_general_p] = _dot_general_batching


# -- eager mode -----------------------------------------------------------------------------------

_BATCHED_MATMUL = (((2,), (1,)), ((0,), (0,)))


def _as_batched_matmul(arrays: list, out_aval: ShapedArray, params: dict) -> Array:
    """dot_general as a batched matmul (B, M, K) x (B, K, N) on views of the operands.

    On unknown shapes IREE cannot compile most other forms (vector operands, several or no
    contracting dimensions: it would reshape them with stablehlo.dynamic_reshape); here every
    form becomes one kernel per dtype, plus transposes when dimensions are out of order."""
    lhs, rhs = arrays
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    lf = tuple(i for i in range(lhs.ndim) if i not in lc and i not in lb)
    rf = tuple(i for i in range(rhs.ndim) if i not in rc and i not in rb)
    lhs = _transposed(lhs, tuple(lb) + lf + tuple(lc))
    rhs = _transposed(rhs, tuple(rb) + tuple(rc) + rf)

    def size(shape, start, stop):
        return math.prod(shape[start:stop])
    nb, nlf, nc = len(lb), len(lf), len(lc)
    b, m, k = size(lhs.shape, 0, nb), size(lhs.shape, nb, nb + nlf), size(lhs.shape, nb + nlf, None)
    n = size(rhs.shape, nb + nc, None)
    lhs = view(lhs, lhs.aval.update(shape=(b, m, k)))
    rhs = view(rhs, rhs.aval.update(shape=(b, k, n)))
    if lhs._device.platform == "cpu" and bfloat16 in (lhs.dtype, rhs.dtype):
        # bf16 operands widened by kernels of their own: fused into the matmul, the widening
        # made a 512x512 bf16 product take 357 ms on this CPU (lower.apply_rule's note).
        lhs, rhs = [apply_unchecked(P.convert_element_type_p, [x], dict(
            new_dtype=np.dtype(np.float32), weak_type=False))[0] if x.dtype == bfloat16 else x
            for x in (lhs, rhs)]
    out = apply_unchecked(P.dot_general_p, [lhs, rhs],
                          dict(params, dimension_numbers=_BATCHED_MATMUL))[0]
    if out.dtype != out_aval.dtype:   # (widened above: round to the result's dtype once)
        out = apply_unchecked(P.convert_element_type_p, [out], dict(
            new_dtype=out_aval.dtype, weak_type=out_aval.weak_type))[0]
    return view(out, out_aval)


def _transposed(x: Array, permutation: tuple) -> Array:
    if permutation == tuple(range(len(permutation))):
        return x
    return apply_unchecked(P.transpose_p, [x], {"permutation": permutation})[0]


def _dot_general_eager(arrays, avals_in, avals_out, params):
    if params["dimension_numbers"] == _BATCHED_MATMUL:
        return None   # (the kernel's own form)
    return [_as_batched_matmul(arrays, avals_out[0], params)]


EAGER_RULES[P.dot_general_p] = _dot_general_eager
