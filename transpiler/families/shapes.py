"""Shapes: ``broadcast_in_dim``, ``reshape``, ``transpose``, ``rev``, ``slice``,
``dynamic_slice``, ``dynamic_update_slice``, ``concatenate``, ``pad`` and ``iota``, with every
rule for them. The core names them (primitives.py) because derivatives and batching build with
them; their rules are here.

* **Abstract evaluation**: XLA's semantics, checked: a bad shape, permutation, slice, start
  count or padding raises a TypeError naming the user's line.
* **Lowering**: StableHLO's op of the same name; with unknown shapes (eager mode's kernels
  compiled once per rank) their dynamic forms, or tensor ops where IREE cannot legalize the
  dynamic one (``dynamic_update_slice``, ``pad``). Workarounds for IREE 3.13, each measured
  and described at its rule: strided slices computed apart on GPUs, concatenations of many
  operands joined in groups, a complex128 pad as two float64 pads, a transpose of a data-tiled
  product behind a barrier, an in-place update kept from writing into an input.
* **Derivatives**: all of them are linear in their array operands; each has its transpose
  (``broadcast_in_dim`` sums, ``slice`` pads, ``pad`` slices, ...); ``iota`` has none.
* **Batching**: the batch axis is moved in front (or kept where the rule allows) and the
  parameters shifted by one; a padding value per example pads with zeros and selects. (The
  batching of ``dynamic_slice``/``dynamic_update_slice`` with per-example starts is a gather
  or a scatter: gather_scatter.py.)
* **Eager mode**: one kernel per rank serves every shape (the shape-valued params are its
  arguments); a reshape is a view, a broadcast drops its size-1 operand dimensions first,
  writing an empty update returns the operand, a concatenation skips empty operands and joins
  many operands a group at a time.

Example::

    P.reshape_p.bind(x, new_sizes=(2, 3))     # what lax.reshape binds
"""
from __future__ import annotations

import math
import os
from typing import Any, Optional, Sequence

import numpy as np

from pyree.runtime.array import Array

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import TypedScalar, abstract_eval_rules, get_aval
from ..interpreters.ad import Zero, instantiate, is_undefined, jvp_rules, transpose_rules, zeros
from ..interpreters.ad_rules import aval, const, deflinear, defjvp_zero, sub
from ..interpreters.batching import (batching_rules, example_axes, moveaxis, to_front,
                                     with_weak_type)
from ..backend.eager import (DYNAMIC_PARAMS, EAGER_RULES, EMPTY_OPERANDS_HANDLED, apply_kernel,
                             apply_unchecked, view)
from ..backend.lower import (BF16_KEPT_PRIMITIVES, FUSED_SHAPE_PRIMITIVES, VIEW_PRIMITIVES,
                             RuleContext, _concatenate, _from_data_tiled_product, _splat, arith,
                             bitcast_to, dim_i64, fusion_barrier, hlo, i64_array, i64_attr,
                             i64_constant, index_constant, lowering_rules, mlir, op, shape_tensor,
                             signless)
from .gather_scatter import batched_start_slice, batched_start_update

_F64 = np.dtype(np.float64)


# -- abstract evaluation --------------------------------------------------------------------------

def _broadcast_in_dim_rule(x: ShapedArray, *, shape: tuple,
                           broadcast_dimensions: tuple) -> ShapedArray:
    if any(d < 0 for d in shape):
        raise TypeError(f"broadcast_in_dim got a negative dimension in shape {shape}")
    if len(broadcast_dimensions) != x.ndim:
        raise TypeError(f"broadcast_in_dim: operand of rank {x.ndim} needs {x.ndim} "
                        f"broadcast_dimensions, got {broadcast_dimensions}")
    if any(b >= a for a, b in zip(broadcast_dimensions[1:], broadcast_dimensions)) or any(
            not 0 <= d < len(shape) for d in broadcast_dimensions):
        raise TypeError(f"broadcast_in_dim: broadcast_dimensions {broadcast_dimensions} must be "
                        f"strictly increasing and within the result rank {len(shape)}")
    for i, d in enumerate(broadcast_dimensions):
        if x.shape[i] != 1 and x.shape[i] != shape[d]:
            raise TypeError(f"broadcast_in_dim cannot broadcast shape {x.shape} to {shape} "
                            f"(dimension {i} of size {x.shape[i]} goes to dimension {d} of size "
                            f"{shape[d]})")
    return ShapedArray(shape, x.dtype, x.weak_type)


abstract_eval_rules[P.broadcast_in_dim_p] = _broadcast_in_dim_rule


def _reshape_rule(x: ShapedArray, *, new_sizes: tuple) -> ShapedArray:
    if any(d < 0 for d in new_sizes) or math.prod(new_sizes) != x.size:
        raise TypeError(f"cannot reshape an array of shape {x.shape} (size {x.size}) into shape "
                        f"{new_sizes}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


abstract_eval_rules[P.reshape_p] = _reshape_rule


def _transpose_rule(x: ShapedArray, *, permutation: tuple) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation {permutation} is not a permutation of the "
                        f"{x.ndim} axes of shape {x.shape}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


abstract_eval_rules[P.transpose_p] = _transpose_rule


def _rev_rule(x: ShapedArray, *, dimensions: tuple) -> ShapedArray:
    if len(set(dimensions)) != len(dimensions) or any(not 0 <= d < x.ndim for d in dimensions):
        raise TypeError(f"rev dimensions {dimensions} are not distinct axes of shape {x.shape}")
    return x


abstract_eval_rules[P.rev_p] = _rev_rule


def _slice_rule(x: ShapedArray, *, start_indices: tuple, limit_indices: tuple,
                strides: tuple) -> ShapedArray:
    if not len(start_indices) == len(limit_indices) == len(strides) == x.ndim:
        raise TypeError(f"slice of an array of rank {x.ndim} needs {x.ndim} start indices, "
                        f"limits and strides; got {start_indices}, {limit_indices}, {strides}")
    shape = []
    for dim, start, limit, stride in zip(x.shape, start_indices, limit_indices, strides):
        if not 0 <= start <= limit <= dim or stride < 1:
            raise TypeError(f"slice start_indices={start_indices}, limit_indices={limit_indices},"
                            f" strides={strides} do not fit shape {x.shape}")
        shape.append(-(-(limit - start) // stride))
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


abstract_eval_rules[P.slice_p] = _slice_rule


def _check_start_indices(name: str, operand: ShapedArray, starts: Sequence[ShapedArray]) -> None:
    if len(starts) != operand.ndim:
        raise TypeError(f"{name} of an array of rank {operand.ndim} needs {operand.ndim} start "
                        f"indices, got {len(starts)}")
    for s in starts:
        if s.shape != () or s.dtype.kind not in "iu":
            raise TypeError(f"{name} start indices must be integer scalars, got {s.str_short()}")


def _dynamic_slice_rule(operand: ShapedArray, *starts: ShapedArray,
                        slice_sizes: tuple) -> ShapedArray:
    _check_start_indices("dynamic_slice", operand, starts)
    if len(slice_sizes) != operand.ndim or any(
            not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
        raise TypeError(f"dynamic_slice slice_sizes {slice_sizes} do not fit shape "
                        f"{operand.shape}")
    return ShapedArray(tuple(slice_sizes), operand.dtype, operand.weak_type)


abstract_eval_rules[P.dynamic_slice_p] = _dynamic_slice_rule


def _dynamic_update_slice_rule(operand: ShapedArray, update: ShapedArray,
                               *starts: ShapedArray) -> ShapedArray:
    _check_start_indices("dynamic_update_slice", operand, starts)
    P.same_dtypes("dynamic_update_slice", [operand, update])
    if update.ndim != operand.ndim or any(u > d for u, d in zip(update.shape, operand.shape)):
        raise TypeError(f"dynamic_update_slice update of shape {update.shape} does not fit in "
                        f"operand of shape {operand.shape}")
    return operand


abstract_eval_rules[P.dynamic_update_slice_p] = _dynamic_update_slice_rule


def _concatenate_rule(*operands: ShapedArray, dimension: int) -> ShapedArray:
    if not operands:
        raise TypeError("concatenate needs at least one array")
    first = operands[0]
    P.same_dtypes("concatenate", operands)
    if not 0 <= dimension < first.ndim:
        raise TypeError(f"concatenate dimension {dimension} is out of range for rank {first.ndim}")
    for other in operands[1:]:
        if other.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(
                zip(other.shape, first.shape)) if i != dimension):
            shapes = ", ".join(str(o.shape) for o in operands)
            raise TypeError(f"concatenate along dimension {dimension} needs equal shapes in the "
                            f"other dimensions, got {shapes}")
    shape = list(first.shape)
    shape[dimension] = sum(o.shape[dimension] for o in operands)
    return ShapedArray(tuple(shape), first.dtype, all(o.weak_type for o in operands))


abstract_eval_rules[P.concatenate_p] = _concatenate_rule


def _pad_rule(operand: ShapedArray, padding_value: ShapedArray, *,
              padding_config: tuple) -> ShapedArray:
    P.same_dtypes("pad", [operand, padding_value])
    if padding_value.shape != ():
        raise TypeError(f"pad needs a scalar padding value, got shape {padding_value.shape}")
    if len(padding_config) != operand.ndim:
        raise TypeError(f"pad of rank-{operand.ndim} array needs {operand.ndim} (low, high, "
                        f"interior) triples, got {padding_config}")
    shape = []
    for dim, (lo, hi, interior) in zip(operand.shape, padding_config):
        if interior < 0:
            raise TypeError(f"pad interior padding must be >= 0, got {padding_config}")
        size = lo + hi + dim + max(dim - 1, 0) * interior
        if size < 0:
            raise TypeError(f"pad config {padding_config} gives a negative dimension for shape "
                            f"{operand.shape}")
        shape.append(size)
    return ShapedArray(tuple(shape), operand.dtype, operand.weak_type)


abstract_eval_rules[P.pad_p] = _pad_rule


def _iota_rule(*, dtype: np.dtype, shape: tuple, dimension: int) -> ShapedArray:
    if not 0 <= dimension < len(shape):
        raise TypeError(f"iota dimension {dimension} is out of range for shape {shape}")
    if P.kind(np.dtype(dtype)) not in "iuf":
        raise TypeError(f"iota needs an integer or floating-point dtype, got {dtype}")
    return ShapedArray(shape, dtype, False)


abstract_eval_rules[P.iota_p] = _iota_rule


# -- lowering -------------------------------------------------------------------------------------

def _broadcast_in_dim_lowering(ctx: RuleContext, x, *, shape, broadcast_dimensions):
    if "shape" in ctx.dyn:
        # Eager mode squeezes size-1 input dimensions first, so none of these expand.
        return op("stablehlo.dynamic_broadcast_in_dim", [ctx.out_type()],
                  [x, shape_tensor(ctx.dyn["shape"])],
                  {"broadcast_dimensions": i64_array(broadcast_dimensions),
                   "known_nonexpanding_dimensions": i64_array(range(len(broadcast_dimensions)))}
                  ).result
    return hlo("broadcast_in_dim", ctx.out_type(), x,
               broadcast_dimensions=i64_array(broadcast_dimensions))


# (Moving data: bf16 stays bf16; IREE fuses these into elementwise consumers; their results may
# be views of their operands' storage.)
BF16_KEPT_PRIMITIVES.update({P.reshape_p, P.transpose_p, P.broadcast_in_dim_p, P.slice_p,
                             P.dynamic_slice_p, P.dynamic_update_slice_p, P.concatenate_p,
                             P.pad_p, P.rev_p})
FUSED_SHAPE_PRIMITIVES.update({P.broadcast_in_dim_p, P.reshape_p, P.transpose_p})
VIEW_PRIMITIVES.update({P.reshape_p, P.slice_p, P.dynamic_slice_p, P.broadcast_in_dim_p,
                        P.transpose_p})
lowering_rules[P.broadcast_in_dim_p] = _broadcast_in_dim_lowering


def _reshape_lowering(ctx: RuleContext, x, *, new_sizes):
    return hlo("reshape", ctx.out_type(), x)


def _transpose_lowering(ctx: RuleContext, x, *, permutation):
    if _from_data_tiled_product(x):
        # IREE 3.13 fuses a transpose of a data-tiled matmul's result into the matmul's
        # dispatch and then segfaults materializing the encodings (the gradient of a Cholesky
        # log-determinant, as in Gaussian process regression): a barrier keeps them apart.
        x = fusion_barrier(x)
    return hlo("transpose", ctx.out_type(), x, permutation=i64_array(permutation))


def _rev_lowering(ctx: RuleContext, x, *, dimensions):
    if not dimensions:  # IREE rejects a stablehlo.reverse of no dimensions
        return x
    if ctx.dynamic or ctx.avals_in[0].dtype.kind == "u":
        # IREE's reverse of unknown size reads tensor.dim, which needs signless integers; of
        # unsigned ones it fails to legalize under jit too (x[::-1] of a uint8 array).
        y = signless(x)
        return bitcast_to(hlo("reverse", y.type, y, dimensions=i64_array(dimensions)),
                          ctx.out_type())
    return hlo("reverse", ctx.out_type(), x, dimensions=i64_array(dimensions))


lowering_rules[P.reshape_p] = _reshape_lowering
lowering_rules[P.transpose_p] = _transpose_lowering
lowering_rules[P.rev_p] = _rev_lowering


# IREE 3.13's CUDA code generator mis-addresses a slice that is not one contiguous block of its
# operand when it fuses the slice into a consumer that indexes it: on an H200 (2026-11-27)
# jit(lambda x: x[i, 1:4]) of a 4x5 matrix read row 2 of the slice at the slice's row stride (3)
# in the operand (stride 5), giving x[1, 2:5] for x[2, 1:4]; eager (the slice in a dispatch of
# its own) and the CPU were right. On GPUs such a slice is computed into a buffer of its own
# (a barrier keeps consumers from fusing it). PYREE_GPU_SLICE_BARRIERS=0 turns this off, to
# check whether a newer IREE still needs it.
GPU_SLICE_BARRIERS = os.environ.get("PYREE_GPU_SLICE_BARRIERS", "1") != "0"


def is_contiguous_slice(shape: Sequence[int], start_indices: Sequence[int],
                        limit_indices: Sequence[int], strides: Sequence[int]) -> bool:
    """Whether a slice's elements are one contiguous run of its (row-major) operand's: unit
    strides, leading dimensions of extent 1, then one partial dimension, then whole ones.

    Example: ``is_contiguous_slice((4, 5), (1, 0), (3, 5), (1, 1))`` is True (rows 1-2);
    ``is_contiguous_slice((4, 5), (0, 1), (4, 4), (1, 1))`` is False (columns 1-3)."""
    if any(s != 1 for s in strides):
        return False
    extents = [hi - lo for lo, hi in zip(start_indices, limit_indices)]
    first = 0
    while first < len(extents) and extents[first] == 1:
        first += 1
    return all(extents[d] == shape[d] for d in range(first + 1, len(shape)))


def _slice_lowering(ctx: RuleContext, x, *, start_indices, limit_indices, strides):
    if ctx.dynamic:
        return op("stablehlo.real_dynamic_slice", [ctx.out_type()],
                  [x, shape_tensor(ctx.dyn["start_indices"]),
                   shape_tensor(ctx.dyn["limit_indices"]),
                   shape_tensor(ctx.dyn.get("strides", strides))]).result
    out = hlo("slice", ctx.out_type(), x, start_indices=i64_array(start_indices),
              limit_indices=i64_array(limit_indices), strides=i64_array(strides))
    if (ctx.lowering.platform != "cpu" and GPU_SLICE_BARRIERS and ctx.avals_out[0].size
            and not is_contiguous_slice(ctx.avals_in[0].shape, start_indices, limit_indices,
                                        strides)):
        out = fusion_barrier(out)
    return out


lowering_rules[P.slice_p] = _slice_lowering


def _index_scalars(starts: Sequence, avals: Sequence[ShapedArray]) -> list:
    """Start indices as ``tensor<i64>`` (StableHLO wants one index type for all of them)."""
    ir = mlir()
    t = ir.RankedTensorType.get([], ir.IntegerType.get_signless(64))
    out = []
    for s, a in zip(starts, avals):
        out.append(s if a.dtype == np.int64 else hlo("convert", t, s))
    return out


def _dynamic_slice_lowering(ctx: RuleContext, x, *starts, slice_sizes):
    if not starts:  # rank 0 (MLIR cannot even parse a stablehlo.dynamic_slice of no indices)
        return x
    starts = _index_scalars(starts, ctx.avals_in[1:])
    if ctx.dynamic:
        ir = mlir()
        i64 = ir.IntegerType.get_signless(64)
        lo, hi = [], []
        zero = i64_constant(0)
        for axis, (start, size) in enumerate(zip(starts, ctx.dyn["slice_sizes"])):
            s = op("tensor.extract", [i64], [start]).result
            top = arith("subi", dim_i64(x, axis), size)
            s = arith("maxsi", arith("minsi", s, top), zero)  # clamp like dynamic_slice does
            lo.append(s)
            hi.append(arith("addi", s, size))
        ones = [i64_constant(1)] * len(starts)
        return op("stablehlo.real_dynamic_slice", [ctx.out_type()],
                  [x, shape_tensor(lo), shape_tensor(hi), shape_tensor(ones)]).result
    return op("stablehlo.dynamic_slice", [ctx.out_type()], [x, *starts],
              {"slice_sizes": i64_array(slice_sizes)}).result


lowering_rules[P.dynamic_slice_p] = _dynamic_slice_lowering


def _dynamic_update_slice_lowering(ctx: RuleContext, x, update, *starts):
    if not starts:  # rank 0: the update is the result
        return update
    if not ctx.dynamic and ctx.avals_in[1].size == 0:  # nothing to write
        return x
    starts = _index_scalars(starts, ctx.avals_in[2:])
    if not ctx.lowering.aliases_input(x):
        return _update_slice(ctx, x, update, starts)
    # Written out of place: place the update in a fresh tensor, mark where, and select.
    x_aval, u_aval = ctx.avals_in[0], ctx.avals_in[1]
    # The fill of `placed` must differ from the mask's False: IREE merges two equal dynamic
    # splats and then performs both insertions into one buffer (wrong bool results eagerly).
    placed = _update_slice(ctx, _splat(ctx, 1, x_aval, x), update, starts)
    bool_x, bool_u = x_aval.update(dtype=np.bool_), u_aval.update(dtype=np.bool_)
    where = _update_slice(ctx, _splat(ctx, False, bool_x, x), _splat(ctx, True, bool_u, update),
                          starts)
    return hlo("select", ctx.out_type(), where, placed, x)


def _update_slice(ctx: RuleContext, x, update, starts):
    """``x`` with ``update`` written at the (clamped) ``starts``, possibly in place."""
    if ctx.dynamic:
        # IREE cannot legalize stablehlo.dynamic_update_slice on unknown shapes; tensor's
        # insert_slice with clamped offsets does the same.
        ir = mlir()
        from iree.compiler.dialects import tensor
        i64, index = ir.IntegerType.get_signless(64), ir.IndexType.get()
        zero = i64_constant(0)
        x_type = x.type
        x, update = signless(x), signless(update)
        offsets, sizes = [], []
        for axis, start in enumerate(starts):
            s = op("tensor.extract", [i64], [start]).result
            top = arith("subi", dim_i64(x, axis), dim_i64(update, axis))
            s = arith("maxsi", arith("minsi", s, top), zero)
            offsets.append(op("arith.index_cast", [index], [s]).result)
            sizes.append(op("tensor.dim", [index], [update, index_constant(axis)]).result)
        rank = len(starts)
        dyn_offset = ir.ShapedType.get_dynamic_stride_or_offset()
        dyn_size = ir.ShapedType.get_dynamic_size()
        return bitcast_to(tensor.insert_slice(update, x, offsets, sizes, [], [dyn_offset] * rank,
                                              [dyn_size] * rank, [1] * rank), x_type)
    return op("stablehlo.dynamic_update_slice", [x.type], [x, update, *starts]).result


lowering_rules[P.dynamic_update_slice_p] = _dynamic_update_slice_lowering


# IREE 3.13 copies a concatenation's operands in one dispatch, which binds every operand: past
# 31 of them its CPU runtime refuses the dispatch ("binding count 46 > 32"), and larger counts
# exceed the dispatch's 64 push constants at compile time (jnp.vstack of 45 rows, eagerly
# and under jit). Operands are joined in groups, each group's result behind a barrier so
# IREE cannot fuse the groups back into one dispatch.
_CONCAT_GROUP = 8


def _concatenate_lowering(ctx: RuleContext, *xs, dimension):
    avals = list(ctx.avals_in)
    # Eager mode joins groups in separate calls (eager.apply_unchecked); a barrier on unknown
    # shapes fails to compile.
    while len(xs) > _CONCAT_GROUP and not ctx.dynamic:
        joined, joined_avals = [], []
        for start in range(0, len(xs), _CONCAT_GROUP):
            group, group_avals = xs[start:start + _CONCAT_GROUP], avals[start:start + _CONCAT_GROUP]
            if len(group) == 1:
                joined += group
                joined_avals += group_avals
                continue
            shape = list(group_avals[0].shape)
            shape[dimension] = sum(a.shape[dimension] for a in group_avals)
            aval = group_avals[0].update(shape=tuple(shape))
            value = _concatenate(ctx.type(aval), group, dimension)
            joined.append(fusion_barrier(value))
            joined_avals.append(aval)
        xs, avals = joined, joined_avals
    return _concatenate(ctx.out_type(), xs, dimension)


lowering_rules[P.concatenate_p] = _concatenate_lowering


def _pad_lowering(ctx: RuleContext, x, padding_value, *, padding_config):
    if ctx.dynamic:
        return _dynamic_pad(ctx, x, padding_value, ctx.dyn["padding_config"])
    lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
    config = dict(edge_padding_low=i64_array(lo), edge_padding_high=i64_array(hi),
                  interior_padding=i64_array(interior))
    if ctx.avals_out[0].dtype == np.complex128:
        # IREE 3.13 fills a complex128 pad with a 128-bit integer splat, which it cannot
        # compile ("'stream.async.splat' op operand #0 must be ... integer, but got 'i128'"):
        # pad the two float64 parts.
        out_part, x_part, value_part = (ctx.type(a.update(dtype=_F64))
                                        for a in [ctx.avals_out[0], *ctx.avals_in])
        parts = [hlo("pad", out_part, hlo(name, x_part, x), hlo(name, value_part, padding_value),
                     **config) for name in ("real", "imag")]
        return hlo("complex", ctx.out_type(), *parts)
    return hlo("pad", ctx.out_type(), x, padding_value, **config)


lowering_rules[P.pad_p] = _pad_lowering


def _dynamic_pad(ctx: RuleContext, x, padding_value, flat_config: Sequence):
    """pad on unknown shapes (IREE cannot legalize stablehlo.dynamic_pad): fill a tensor of
    the padded size, insert ``x`` with stride ``interior + 1``, then crop negative padding."""
    ir = mlir()
    from iree.compiler.dialects import tensor
    index = ir.IndexType.get()
    zero, one = i64_constant(0), i64_constant(1)
    rank = len(flat_config) // 3
    x, padding_value = signless(x), signless(padding_value)
    full, offsets, sizes, strides, crop_lo, out_sizes = [], [], [], [], [], []
    for axis in range(rank):
        lo, hi, interior = flat_config[3 * axis: 3 * axis + 3]
        d = dim_i64(x, axis)
        lo_pos, hi_pos = arith("maxsi", lo, zero), arith("maxsi", hi, zero)
        gaps = arith("muli", arith("maxsi", arith("subi", d, one), zero), interior)
        size = arith("addi", arith("addi", lo_pos, hi_pos), arith("addi", d, gaps))
        full.append(size)
        offsets.append(lo_pos)
        sizes.append(d)
        strides.append(arith("addi", interior, one))
        c_lo, c_hi = arith("subi", lo_pos, lo), arith("subi", hi_pos, hi)
        crop_lo.append(c_lo)
        out_sizes.append(arith("subi", arith("subi", size, c_lo), c_hi))

    def as_index(values):
        return [op("arith.index_cast", [index], [v]).result for v in values]

    filled_type = ir.RankedTensorType.get([ir.ShapedType.get_dynamic_size()] * rank,
                                          ir.RankedTensorType(x.type).element_type)
    filled = op("stablehlo.dynamic_broadcast_in_dim", [filled_type],
                [padding_value, shape_tensor(full)], {"broadcast_dimensions": i64_array([])}).result
    dyn_offset = ir.ShapedType.get_dynamic_stride_or_offset()
    dyn_size = ir.ShapedType.get_dynamic_size()
    inserted = tensor.insert_slice(x, filled, as_index(offsets), as_index(sizes),
                                   as_index(strides), [dyn_offset] * rank, [dyn_size] * rank,
                                   [dyn_offset] * rank)
    cropped = tensor.extract_slice(filled_type, inserted, as_index(crop_lo), as_index(out_sizes),
                                   [], [dyn_offset] * rank, [dyn_size] * rank, [1] * rank)
    return bitcast_to(cropped, ctx.out_type())


def _iota_lowering(ctx: RuleContext, *, dtype, shape, dimension):
    if ctx.dynamic:
        return op("stablehlo.dynamic_iota", [ctx.out_type()], [shape_tensor(ctx.dyn["shape"])],
                  {"iota_dimension": i64_attr(dimension)}).result
    return hlo("iota", ctx.out_type(), iota_dimension=i64_attr(dimension))


lowering_rules[P.iota_p] = _iota_lowering


# -- derivatives ----------------------------------------------------------------------------------

def _t_broadcast_in_dim(ct, x, *, shape, broadcast_dimensions):
    if isinstance(ct, Zero):
        return [None]
    in_shape = aval(x).shape
    summed = tuple(d for d in range(len(shape)) if d not in broadcast_dimensions)
    expanded = tuple(d for i, d in enumerate(broadcast_dimensions)
                     if in_shape[i] == 1 and shape[d] != 1)
    axes = tuple(sorted(summed + expanded))
    out = P.reduce_sum_p.bind(ct, axes=axes) if axes else ct
    return [P.reshape_p.bind(out, new_sizes=in_shape) if aval(out).shape != in_shape else out]


def _t_reshape(ct, x, *, new_sizes):
    if isinstance(ct, Zero):
        return [None]
    return [P.reshape_p.bind(ct, new_sizes=aval(x).shape)]


def _t_transpose(ct, x, *, permutation):
    if isinstance(ct, Zero):
        return [None]
    inverse = tuple(int(i) for i in np.argsort(permutation))
    return [P.transpose_p.bind(ct, permutation=inverse)]


def _t_rev(ct, x, *, dimensions):
    if isinstance(ct, Zero):
        return [None]
    return [P.rev_p.bind(ct, dimensions=dimensions)]


def _t_slice(ct, x, *, start_indices, limit_indices, strides):
    if isinstance(ct, Zero):
        return [None]
    shape = aval(x).shape
    out_shape = aval(ct).shape
    config = []
    for dim, start, stride, n in zip(shape, start_indices, strides, out_shape):
        last = start + (n - 1) * stride + 1 if n else start
        config.append((start, dim - last, stride - 1 if n > 1 else 0))
    return [P.pad_p.bind(ct, const(0, ct), padding_config=tuple(config))]


def _t_pad(ct, x, padding_value, *, padding_config):
    if isinstance(ct, Zero):
        return [None, None]
    # Undo the edges (negative padding crops), then take every (interior + 1)-th element.
    unpadded = P.pad_p.bind(ct, const(0, ct), padding_config=tuple(
        (-lo, -hi, 0) for lo, hi, _ in padding_config))
    starts = [0] * len(padding_config)
    limits = list(aval(unpadded).shape)
    strides = [interior + 1 for _, _, interior in padding_config]
    t_x = P.slice_p.bind(unpadded, start_indices=tuple(starts), limit_indices=tuple(limits),
                         strides=tuple(strides)) if is_undefined(x) else None
    t_pv = None
    if is_undefined(padding_value):
        total = P.reduce_sum_p.bind(ct, axes=tuple(range(aval(ct).ndim)))
        inner = P.reduce_sum_p.bind(t_x, axes=tuple(range(aval(t_x).ndim))) if t_x is not None \
            else const(0, ct)
        t_pv = sub(total, inner)
    return [t_x, t_pv]


def _t_concatenate(ct, *operands, dimension):
    if isinstance(ct, Zero):
        return [None] * len(operands)
    cts, offset = [], 0
    shape = aval(ct).shape
    for operand in operands:
        size = aval(operand).shape[dimension]
        if is_undefined(operand):
            start = [0] * len(shape)
            limit = list(shape)
            start[dimension], limit[dimension] = offset, offset + size
            cts.append(P.slice_p.bind(ct, start_indices=tuple(start), limit_indices=tuple(limit),
                                      strides=(1,) * len(shape)))
        else:
            cts.append(None)
        offset += size
    return cts


def _t_dynamic_slice(ct, x, *starts, slice_sizes):
    if isinstance(ct, Zero):
        return [None] * (1 + len(starts))
    return [P.dynamic_update_slice_p.bind(zeros(aval(x).update(weak_type=False)), ct, *starts)] + \
        [None] * len(starts)


def _t_dynamic_update_slice(ct, x, update, *starts):
    if isinstance(ct, Zero):
        return [None] * (2 + len(starts))
    u_aval = aval(update)
    t_x = P.dynamic_update_slice_p.bind(ct, zeros(u_aval.update(weak_type=False)), *starts) \
        if is_undefined(x) else None
    t_u = P.dynamic_slice_p.bind(ct, *starts, slice_sizes=u_aval.shape) \
        if is_undefined(update) else None
    return [t_x, t_u] + [None] * len(starts)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *starts = primals
    ans = P.dynamic_slice_p.bind(x, *starts, slice_sizes=slice_sizes)
    t = tangents[0]
    if isinstance(t, Zero):
        return [ans], [Zero(aval(ans))]
    return [ans], [P.dynamic_slice_p.bind(t, *starts, slice_sizes=slice_sizes)]


def _dynamic_update_slice_jvp(primals, tangents):
    x, update, *starts = primals
    ans = P.dynamic_update_slice_p.bind(x, update, *starts)
    tx, tu = tangents[0], tangents[1]
    if isinstance(tx, Zero) and isinstance(tu, Zero):
        return [ans], [Zero(aval(ans))]
    return [ans], [P.dynamic_update_slice_p.bind(instantiate(tx), instantiate(tu), *starts)]


def _pad_jvp(primals, tangents, *, padding_config):
    x, pv = primals
    ans = P.pad_p.bind(x, pv, padding_config=padding_config)
    tx, tpv = tangents
    if isinstance(tx, Zero) and isinstance(tpv, Zero):
        return [ans], [Zero(aval(ans))]
    return [ans], [P.pad_p.bind(instantiate(tx), instantiate(tpv), padding_config=padding_config)]


def _concatenate_jvp(primals, tangents, *, dimension):
    ans = P.concatenate_p.bind(*primals, dimension=dimension)
    if all(isinstance(t, Zero) for t in tangents):
        return [ans], [Zero(aval(ans))]
    return [ans], [P.concatenate_p.bind(*[instantiate(t) for t in tangents],
                                        dimension=dimension)]


deflinear(P.broadcast_in_dim_p, _t_broadcast_in_dim)
deflinear(P.reshape_p, _t_reshape)
deflinear(P.transpose_p, _t_transpose)
deflinear(P.rev_p, _t_rev)
deflinear(P.slice_p, _t_slice)
jvp_rules[P.pad_p] = _pad_jvp
transpose_rules[P.pad_p] = _t_pad
jvp_rules[P.concatenate_p] = _concatenate_jvp
transpose_rules[P.concatenate_p] = _t_concatenate
jvp_rules[P.dynamic_slice_p] = _dynamic_slice_jvp
transpose_rules[P.dynamic_slice_p] = _t_dynamic_slice
jvp_rules[P.dynamic_update_slice_p] = _dynamic_update_slice_jvp
transpose_rules[P.dynamic_update_slice_p] = _t_dynamic_update_slice
defjvp_zero(P.iota_p)


# -- batching -------------------------------------------------------------------------------------

def _broadcast_in_dim_batching(axis, values, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = values, dims
    x = moveaxis(x, d, 0)
    out = P.broadcast_in_dim_p.bind(
        x, shape=(axis.size,) + tuple(shape),
        broadcast_dimensions=(0,) + tuple(b + 1 for b in broadcast_dimensions))
    return [out], [0]


def _reshape_batching(axis, values, dims, *, new_sizes, **params):
    (x,), (d,) = values, dims
    x = moveaxis(x, d, 0)
    return [P.reshape_p.bind(x, new_sizes=(axis.size,) + tuple(new_sizes), **params)], [0]


def _transpose_batching(axis, values, dims, *, permutation):
    (x,), (d,) = values, dims
    x = moveaxis(x, d, 0)
    perm = (0,) + tuple(p + 1 for p in permutation)
    return [P.transpose_p.bind(x, permutation=perm)], [0]


def _rev_batching(axis, values, dims, *, dimensions):
    (x,), (d,) = values, dims
    return [P.rev_p.bind(x, dimensions=example_axes(dimensions, d))], [d]


def _insert(t: Optional[tuple], d: int, value: Any) -> Optional[tuple]:
    if t is None:
        return None
    t = list(t)
    t.insert(d, value)
    return tuple(t)


def _slice_batching(axis, values, dims, *, start_indices, limit_indices, strides=None):
    (x,), (d,) = values, dims
    out = P.slice_p.bind(x, start_indices=_insert(start_indices, d, 0),
                         limit_indices=_insert(limit_indices, d, axis.size),
                         strides=_insert(strides, d, 1))
    return [out], [d]


def _pad_batching(axis, values, dims, *, padding_config):
    (x, pad_value), (d, pd) = values, dims
    if pd is None:
        out = P.pad_p.bind(x, pad_value, padding_config=_insert(padding_config, d, (0, 0, 0)))
        return [out], [d]
    # A padding value per example: pad with zeros, then choose the padding value where the
    # mask of original elements (padded with False) says so.
    x = to_front(x, d, axis.size)
    config = ((0, 0, 0),) + tuple(padding_config)
    zero = TypedScalar(0, get_aval(x).dtype, False)
    padded = P.pad_p.bind(x, zero, padding_config=config)
    ones = P.broadcast_in_dim_p.bind(TypedScalar(True, np.dtype(np.bool_), False),
                                     shape=get_aval(x).shape, broadcast_dimensions=())
    mask = P.pad_p.bind(ones, TypedScalar(False, np.dtype(np.bool_), False),
                        padding_config=config)
    fill = P.broadcast_in_dim_p.bind(moveaxis(pad_value, pd, 0), shape=get_aval(padded).shape,
                                     broadcast_dimensions=(0,))
    fill = with_weak_type(fill, get_aval(x).weak_type)  # pad's result: the operand's weak type
    return [P.select_p.bind(mask, padded, fill)], [0]


def _concatenate_batching(axis, values, dims, *, dimension):
    args = [to_front(v, d, axis.size) for v, d in zip(values, dims)]
    return [P.concatenate_p.bind(*args, dimension=dimension + 1)], [0]


# With one start for the whole batch they stay themselves; with a start per example they are a
# gather and a scatter of one window per example (gather_scatter.py builds them).

def _dynamic_slice_batching(axis, values, dims, *, slice_sizes):
    x, *starts = values
    xd, *sds = dims
    if all(d is None for d in sds):
        x = moveaxis(x, xd, 0)
        zero = TypedScalar(0, get_aval(starts[0]).dtype if starts else np.dtype(np.int32), False)
        out = P.dynamic_slice_p.bind(x, zero, *starts,
                                     slice_sizes=(axis.size,) + tuple(slice_sizes))
        return [out], [0]
    return batched_start_slice(axis, x, xd, starts, sds, slice_sizes)


def _dynamic_update_slice_batching(axis, values, dims):
    x, update, *starts = values
    xd, ud, *sds = dims
    if all(d is None for d in sds):
        x = to_front(x, xd, axis.size)
        update = to_front(update, ud, axis.size)
        zero = TypedScalar(0, get_aval(starts[0]).dtype if starts else np.dtype(np.int32), False)
        return [P.dynamic_update_slice_p.bind(x, update, zero, *starts)], [0]
    return batched_start_update(axis, x, xd, update, ud, starts, sds)


batching_rules[P.dynamic_slice_p] = _dynamic_slice_batching
batching_rules[P.dynamic_update_slice_p] = _dynamic_update_slice_batching


batching_rules.update({
    P.broadcast_in_dim_p: _broadcast_in_dim_batching,
    P.reshape_p: _reshape_batching,
    P.transpose_p: _transpose_batching,
    P.rev_p: _rev_batching,
    P.slice_p: _slice_batching,
    P.pad_p: _pad_batching,
    P.concatenate_p: _concatenate_batching,
})


# -- eager mode -----------------------------------------------------------------------------------

# Shape-valued params reach eager kernels as arguments (one kernel serves every shape).
DYNAMIC_PARAMS.update({
    P.broadcast_in_dim_p: ("shape",),
    P.iota_p: ("shape",),
    P.slice_p: ("start_indices", "limit_indices"),
    P.pad_p: ("padding_config",),
    P.dynamic_slice_p: ("slice_sizes",),
})


def _reshape_eager(arrays, avals_in, avals_out, params):
    return [view(arrays[0], avals_out[0])]   # (the same buffer: Arrays are immutable)


def _squeeze_expanding(x: Array, params: dict) -> tuple[list[Array], dict]:
    """Drop the size-1 input dimensions of a broadcast, so that every remaining dimension keeps
    its size (IREE needs to know, for unknown dimensions, which ones expand)."""
    shape, dims = params["shape"], params["broadcast_dimensions"]
    keep = [i for i, d in enumerate(dims) if not (x.aval.shape[i] == 1 and shape[d] != 1)]
    if len(keep) == x.aval.ndim:
        return [x], params
    squeezed = view(x, x.aval.update(shape=tuple(x.aval.shape[i] for i in keep)))
    return [squeezed], dict(params, broadcast_dimensions=tuple(dims[i] for i in keep))


def _broadcast_in_dim_eager(arrays, avals_in, avals_out, params):
    if avals_in[0].shape == avals_out[0].shape:
        return [view(arrays[0], avals_out[0])]
    arrays, params = _squeeze_expanding(arrays[0], params)
    return apply_kernel(P.broadcast_in_dim_p, arrays, [a.aval for a in arrays], avals_out,
                        params)


def _dynamic_update_slice_eager(arrays, avals_in, avals_out, params):
    if avals_in[1].size:
        return None
    # Writing nothing leaves the operand (Arrays are immutable); the kernel would run with
    # no workgroups (CUDA_ERROR_INVALID_VALUE, and IREE's CUDA device is lost after it).
    return [view(arrays[0], avals_out[0])]


CONCAT_GROUP = 8  # operands one eager concatenation kernel joins at most


# On Vulkan, two: IREE 3.13's eager (unknown-shape) concatenation of three or more operands
# read the third and later operands from the second's buffer (concatenate([x, y, z], 1) gave
# x, y, then y's rows shifted by one and zeros, on Mesa's lavapipe; two operands were right,
# and so were the jitted, static-shape forms, and eager selects and clamps of three operands).
VULKAN_CONCAT_GROUP = 2


def _concatenate_eager(arrays, avals_in, avals_out, params):
    if any(a.size == 0 for a in arrays):
        # Empty operands add nothing, and their copies would be launched with no workgroups.
        kept = [a for a in arrays if a.size]
        if len(kept) == 1:
            return [view(kept[0], avals_out[0])]
        return apply_unchecked(P.concatenate_p, kept, params)
    group = (VULKAN_CONCAT_GROUP if arrays and arrays[0]._device.platform == "vulkan"
             else CONCAT_GROUP)
    if len(arrays) <= group:
        return None
    # One kernel binds every operand, and IREE's runtime refuses dispatches of more than 32
    # buffers (see the concatenate lowering above): join the operands a group at a time.
    groups = [arrays[i:i + group] for i in range(0, len(arrays), group)]
    joined = [g[0] if len(g) == 1 else apply_unchecked(P.concatenate_p, g, params)[0]
              for g in groups]
    return apply_unchecked(P.concatenate_p, joined, params)


EAGER_RULES.update({
    P.reshape_p: _reshape_eager,
    P.broadcast_in_dim_p: _broadcast_in_dim_eager,
    P.dynamic_update_slice_p: _dynamic_update_slice_eager,
    P.concatenate_p: _concatenate_eager,
})
EMPTY_OPERANDS_HANDLED.update({P.concatenate_p, P.dynamic_update_slice_p})
