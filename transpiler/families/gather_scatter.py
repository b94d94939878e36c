"""The ``gather`` and ``scatter`` primitives, in StableHLO's general form, with every rule.

* ``gather[dimension_numbers, slice_sizes, mode, fill_value, ...] operand indices`` reads, for
  each index vector (the last axis of ``indices``), a window of ``slice_sizes`` starting there.
* ``scatter[dimension_numbers, combiner, mode, ...] operand indices updates`` writes windows of
  ``updates`` at the index vectors, combining with what is there: ``replace``, ``add``,
  ``mul``, ``min`` or ``max``.

Dimension numbers are JAX's (``GatherDimensionNumbers``, ``ScatterDimensionNumbers``, batching
dims included); the index vector is always the last axis of the indices. ``mode`` says what an
index vector whose window does not fit in the operand means:

* ``CLIP`` (and ``PROMISE_IN_BOUNDS``, which pyree treats alike): the start is clamped so the
  window fits;
* ``FILL_OR_DROP``: a gather reads ``fill_value`` for the whole window, a scatter drops it.

Modes are implemented in the lowering, so the IR keeps one equation per gather/scatter and the
derivative and batching rules carry the mode along (a ``FILL`` gather transposes into a
``DROP`` scatter-add).

Before lowering, a gather that reads few elements of an elementwise expression is moved into
it (``sink_gathers``, the last section): the expression is computed on those elements only.
"""
from __future__ import annotations

import enum
from typing import Any, NamedTuple, Optional, Sequence

import numpy as np

from ..core.ir import IR, Eqn, ShapedArray, Var, inline, map_regions
from ..core import primitives as P
from ..core.trace import (Primitive, TypedScalar, abstract_eval_rules, get_aval, located, read_env,
                          trace_to_ir)
from ..interpreters.ad import Zero, instantiate, is_undefined, jvp_rules, transpose_rules, zeros
from ..interpreters.batching import (batching_rules, broadcast_batched, moveaxis, to_front,
                                     with_weak_type)
from ..backend.eager import STATIC_SHAPE_PRIMITIVES
from ..backend.lower import (BF16_KEPT_PRIMITIVES, BF16_KEPT_WHEN, _compare, _reduce, fresh_copy,
                             fusion_barrier, hlo, i64_array, i64_attr, lowering_rules, mlir, op,
                             rewrite_before_lowering, scalar_like, tensor_type)


# -- parameters ---------------------------------------------------------------------------------

class GatherScatterMode(enum.Enum):
    """What an out-of-bounds index means for gather/scatter (``jax.lax.GatherScatterMode``).

    Example: ``lax.gather(x, idx, dn, (1,), mode=lax.GatherScatterMode.FILL_OR_DROP)``
    """

    CLIP = 1
    FILL_OR_DROP = 2
    PROMISE_IN_BOUNDS = 3

    @staticmethod
    def from_any(mode: Any) -> "GatherScatterMode":
        """A mode from an enum member, a string ('clip', 'fill', 'drop', 'promise_in_bounds')
        or None (``FILL_OR_DROP``)."""
        if isinstance(mode, GatherScatterMode):
            return mode
        if mode is None:
            return GatherScatterMode.FILL_OR_DROP
        if isinstance(mode, str):
            named = {"clip": GatherScatterMode.CLIP, "fill": GatherScatterMode.FILL_OR_DROP,
                     "drop": GatherScatterMode.FILL_OR_DROP,
                     "promise_in_bounds": GatherScatterMode.PROMISE_IN_BOUNDS}.get(mode.lower())
            if named is not None:
                return named
        raise ValueError(f"Unknown gather mode {mode!r}: use 'clip', 'fill', 'drop', "
                         f"'promise_in_bounds' or a lax.GatherScatterMode")


class GatherDimensionNumbers(NamedTuple):
    """How a gather's operand, indices and output dimensions correspond
    (``jax.lax.GatherDimensionNumbers``).

    * ``offset_dims``: output dimensions holding the window (sorted);
    * ``collapsed_slice_dims``: operand dimensions of window size 1 left out of the output;
    * ``start_index_map``: the operand dimension each index-vector entry indexes;
    * ``operand_batching_dims`` / ``start_indices_batching_dims``: operand and indices
      dimensions paired element by element (a batch of independent gathers).

    Example: rows of a matrix, ``GatherDimensionNumbers(offset_dims=(1,),
    collapsed_slice_dims=(0,), start_index_map=(0,))`` with ``slice_sizes=(1, ncols)``.
    """

    offset_dims: tuple
    collapsed_slice_dims: tuple
    start_index_map: tuple
    operand_batching_dims: tuple = ()
    start_indices_batching_dims: tuple = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter's operand, indices and updates dimensions correspond
    (``jax.lax.ScatterDimensionNumbers``).

    * ``update_window_dims``: updates dimensions holding the window (sorted);
    * ``inserted_window_dims``: operand dimensions of window size 1 absent from the updates;
    * ``scatter_dims_to_operand_dims``: the operand dimension each index-vector entry indexes;
    * ``operand_batching_dims`` / ``scatter_indices_batching_dims``: paired batch dimensions.

    Example: adding rows, ``ScatterDimensionNumbers(update_window_dims=(1,),
    inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))``.
    """

    update_window_dims: tuple
    inserted_window_dims: tuple
    scatter_dims_to_operand_dims: tuple
    operand_batching_dims: tuple = ()
    scatter_indices_batching_dims: tuple = ()


def _ints(values: Sequence[Any]) -> tuple:
    return tuple(int(v) for v in values)


def gather_dimension_numbers(dn: Any) -> GatherDimensionNumbers:
    """``dn`` (any object with the fields, or a tuple) as hashable GatherDimensionNumbers."""
    if not isinstance(dn, GatherDimensionNumbers):
        fields = GatherDimensionNumbers._fields
        dn = GatherDimensionNumbers(*[getattr(dn, f) for f in fields]) if hasattr(
            dn, "offset_dims") else GatherDimensionNumbers(*dn)
    return GatherDimensionNumbers(*[_ints(v) for v in dn])


def scatter_dimension_numbers(dn: Any) -> ScatterDimensionNumbers:
    """``dn`` (any object with the fields, or a tuple) as hashable ScatterDimensionNumbers."""
    if not isinstance(dn, ScatterDimensionNumbers):
        fields = ScatterDimensionNumbers._fields
        dn = ScatterDimensionNumbers(*[getattr(dn, f) for f in fields]) if hasattr(
            dn, "update_window_dims") else ScatterDimensionNumbers(*dn)
    return ScatterDimensionNumbers(*[_ints(v) for v in dn])


COMBINERS = ("replace", "add", "mul", "min", "max")

gather_p = Primitive("gather")
scatter_p = Primitive("scatter")
# IREE cannot legalize stablehlo.dynamic_gather (nor scatter on unknown shapes): eagerly these
# are compiled per shape.
STATIC_SHAPE_PRIMITIVES.update({gather_p, scatter_p})
# bf16 operands stay bf16 (data movement; a replacing scatter moves data too).
BF16_KEPT_PRIMITIVES.add(gather_p)
BF16_KEPT_WHEN[scatter_p] = lambda params: params.get("combiner") == "replace"


# -- abstract evaluation -------------------------------------------------------------------------

def _check_dims(name: str, what: str, dims: tuple, rank: int, *, sorted_: bool = False) -> None:
    if len(set(dims)) != len(dims):
        raise TypeError(f"{name}: {what} {dims} repeats a dimension")
    if any(not 0 <= d < rank for d in dims):
        raise TypeError(f"{name}: {what} {dims} must be in [0, {rank})")
    if sorted_ and list(dims) != sorted(dims):
        raise TypeError(f"{name}: {what} {dims} must be sorted")


def _check_indices(name: str, indices: ShapedArray) -> None:
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{name} indices must have an integer dtype, got {indices.dtype.name}")
    if indices.ndim < 1:
        raise TypeError(f"{name} indices need at least one dimension (the last holds the index "
                        f"vectors), got shape {indices.shape}")


def _check_batching(name: str, operand: ShapedArray, indices: ShapedArray, obd: tuple,
                    ibd: tuple, ibd_name: str, other: tuple, other_name: str) -> None:
    _check_dims(name, "operand_batching_dims", obd, operand.ndim, sorted_=True)
    _check_dims(name, ibd_name, ibd, indices.ndim - 1)
    if set(obd) & set(other):
        raise TypeError(f"{name}: operand_batching_dims {obd} and {other_name} {other} share "
                        f"a dimension")
    if len(obd) != len(ibd):
        raise TypeError(f"{name}: operand_batching_dims {obd} and {ibd_name} {ibd} must have "
                        f"the same length")
    for o, i in zip(obd, ibd):
        if operand.shape[o] != indices.shape[i]:
            raise TypeError(f"{name}: operand batching dimension {o} (size {operand.shape[o]}) "
                            f"and indices batching dimension {i} (size {indices.shape[i]}) "
                            f"differ in size")


def _gather_rule(operand: ShapedArray, indices: ShapedArray, *, dimension_numbers,
                 slice_sizes, mode, fill_value=None, indices_are_sorted=False,
                 unique_indices=False) -> ShapedArray:
    name = "gather"
    dn = dimension_numbers
    _check_indices(name, indices)
    _check_dims(name, "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim,
                sorted_=True)
    _check_dims(name, "start_index_map", dn.start_index_map, operand.ndim)
    _check_batching(name, operand, indices, dn.operand_batching_dims,
                    dn.start_indices_batching_dims, "start_indices_batching_dims",
                    dn.collapsed_slice_dims, "collapsed_slice_dims")
    if set(dn.operand_batching_dims) & set(dn.start_index_map):
        raise TypeError(f"gather: operand_batching_dims {dn.operand_batching_dims} and "
                        f"start_index_map {dn.start_index_map} share a dimension")
    if len(dn.start_index_map) != indices.shape[-1]:
        raise TypeError(f"gather: start_index_map {dn.start_index_map} has "
                        f"{len(dn.start_index_map)} entries but the index vectors (last axis of "
                        f"indices of shape {indices.shape}) have {indices.shape[-1]}")
    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"gather: slice_sizes {slice_sizes} must have one entry per operand "
                        f"dimension (shape {operand.shape})")
    for d, (s, n) in enumerate(zip(slice_sizes, operand.shape)):
        if not 0 <= s <= n:
            raise TypeError(f"gather: slice size {s} of dimension {d} does not fit the operand "
                            f"shape {operand.shape}")
    for what, dims in (("collapsed_slice_dims", dn.collapsed_slice_dims),
                       ("operand_batching_dims", dn.operand_batching_dims)):
        for d in dims:
            if slice_sizes[d] > 1:
                raise TypeError(f"gather: {what} {dims} need slice size 1 (or 0), but dimension "
                                f"{d} has slice size {slice_sizes[d]}")
    window = [slice_sizes[d] for d in range(operand.ndim)
              if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    batch = list(indices.shape[:-1])
    out_rank = len(batch) + len(window)
    _check_dims(name, "offset_dims", dn.offset_dims, out_rank, sorted_=True)
    if len(dn.offset_dims) != len(window):
        raise TypeError(f"gather: offset_dims {dn.offset_dims} must name one output dimension "
                        f"per operand dimension that is neither collapsed nor batching "
                        f"({len(window)} of them)")
    shape = []
    w, b = iter(window), iter(batch)
    for pos in range(out_rank):
        shape.append(next(w) if pos in dn.offset_dims else next(b))
    if not isinstance(mode, GatherScatterMode):
        raise TypeError(f"gather mode must be a GatherScatterMode, got {mode!r}")
    return ShapedArray(tuple(shape), operand.dtype, operand.weak_type)


def scatter_window_operand_dims(operand_ndim: int, dn: ScatterDimensionNumbers) -> list:
    """The operand dimensions the update windows span, in order."""
    return [d for d in range(operand_ndim)
            if d not in dn.inserted_window_dims and d not in dn.operand_batching_dims]


def _scatter_rule(operand: ShapedArray, indices: ShapedArray, updates: ShapedArray, *,
                  dimension_numbers, combiner, mode, indices_are_sorted=False,
                  unique_indices=False) -> ShapedArray:
    name = f"scatter ({combiner})"
    dn = dimension_numbers
    if combiner not in COMBINERS:
        raise TypeError(f"scatter combiner must be one of {COMBINERS}, got {combiner!r}")
    if operand.dtype != updates.dtype:
        raise TypeError(f"{name} needs operand and updates of one dtype, got "
                        f"{operand.dtype.name} and {updates.dtype.name}")
    _check_indices(name, indices)
    _check_dims(name, "update_window_dims", dn.update_window_dims, updates.ndim, sorted_=True)
    _check_dims(name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim,
                sorted_=True)
    _check_dims(name, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims,
                operand.ndim)
    _check_batching(name, operand, indices, dn.operand_batching_dims,
                    dn.scatter_indices_batching_dims, "scatter_indices_batching_dims",
                    dn.inserted_window_dims, "inserted_window_dims")
    if set(dn.operand_batching_dims) & set(dn.scatter_dims_to_operand_dims):
        raise TypeError(f"{name}: operand_batching_dims {dn.operand_batching_dims} and "
                        f"scatter_dims_to_operand_dims {dn.scatter_dims_to_operand_dims} share a "
                        f"dimension")
    if len(dn.scatter_dims_to_operand_dims) != indices.shape[-1]:
        raise TypeError(f"{name}: scatter_dims_to_operand_dims {dn.scatter_dims_to_operand_dims}"
                        f" has {len(dn.scatter_dims_to_operand_dims)} entries but the index "
                        f"vectors (last axis of indices of shape {indices.shape}) have "
                        f"{indices.shape[-1]}")
    window_dims = scatter_window_operand_dims(operand.ndim, dn)
    if len(window_dims) != len(dn.update_window_dims):
        raise TypeError(f"{name}: update_window_dims {dn.update_window_dims} must name one "
                        f"updates dimension per operand dimension that is neither inserted nor "
                        f"batching ({len(window_dims)} of them)")
    batch = indices.shape[:-1]
    if updates.ndim != len(batch) + len(window_dims):
        raise TypeError(f"{name}: updates of shape {updates.shape} must have rank "
                        f"{len(batch) + len(window_dims)} (indices batch shape {batch} plus "
                        f"{len(window_dims)} window dimensions)")
    scatter_dims = [d for d in range(updates.ndim) if d not in dn.update_window_dims]
    if tuple(updates.shape[d] for d in scatter_dims) != tuple(batch):
        raise TypeError(f"{name}: the scatter dimensions of updates (shape {updates.shape}) "
                        f"must match the batch shape {batch} of the indices")
    for u, d in zip(dn.update_window_dims, window_dims):
        if updates.shape[u] > operand.shape[d]:
            raise TypeError(f"{name}: update window dimension {u} (size {updates.shape[u]}) is "
                            f"larger than operand dimension {d} (size {operand.shape[d]})")
    if not isinstance(mode, GatherScatterMode):
        raise TypeError(f"scatter mode must be a GatherScatterMode, got {mode!r}")
    return operand


abstract_eval_rules[gather_p] = _gather_rule
abstract_eval_rules[scatter_p] = _scatter_rule


# -- lowering -----------------------------------------------------------------------------------

def default_fill_value(dtype: np.dtype) -> Any:
    """What a FILL gather reads out of bounds when no fill_value is given (as in JAX): NaN for
    inexact types, the minimum of signed integers, the maximum of unsigned ones, True."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return True
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    if dtype.kind == "c":
        return complex(np.nan, np.nan)
    return float("nan")


def _index_dtype(dtype: np.dtype) -> np.dtype:
    """The signed type the indices are computed in (unsigned ones would compare wrongly)."""
    if dtype.itemsize < 4 or (dtype.kind == "i" and dtype.itemsize == 4):
        return np.dtype(np.int32)
    return np.dtype(np.int64)


def _bounded_indices(indices, idx_aval: ShapedArray, upper: Sequence[int], need_mask: bool):
    """Indices converted to a signed type and clamped to ``[0, upper[k]]`` per index-vector
    entry; with ``need_mask`` also whether each index vector was within those bounds (a
    boolean tensor of the batch shape)."""
    itype = _index_dtype(idx_aval.dtype)
    conv_aval = idx_aval.update(dtype=itype)
    if idx_aval.dtype != itype:
        indices = hlo("convert", tensor_type(conv_aval), indices)
    k = idx_aval.shape[-1]
    batch_shape = idx_aval.shape[:-1]
    bool_batch = ShapedArray(batch_shape, np.dtype(np.bool_))
    if k == 0:
        ok = None
        if need_mask:
            ok = hlo("broadcast_in_dim", tensor_type(bool_batch), scalar_like(True, np.bool_),
                     broadcast_dimensions=i64_array([]))
        return indices, ok
    last = idx_aval.ndim - 1
    hi_vec = op("stablehlo.constant", [tensor_type(ShapedArray((k,), itype))], [],
                {"value": mlir().DenseElementsAttr.get(np.asarray(upper, itype))}).result
    hi = hlo("broadcast_in_dim", tensor_type(conv_aval), hi_vec,
             broadcast_dimensions=i64_array([last]))
    lo = hlo("broadcast_in_dim", tensor_type(conv_aval), scalar_like(0, itype),
             broadcast_dimensions=i64_array([]))
    ok = None
    if need_mask:
        ge = _cmp(indices, lo, "GE", conv_aval)
        le = _cmp(indices, hi, "LE", conv_aval)
        both = hlo("and", tensor_type(conv_aval.update(dtype=np.bool_)), ge, le)
        bool_t = tensor_type(ShapedArray((), np.bool_))
        ok = _reduce(_StaticCtx, [both], [scalar_like(True, np.bool_)], [np.dtype(np.bool_)],
                     [last], [bool_batch], lambda a, b: [hlo("and", bool_t, a, b)])[0]
    clamped = hlo("clamp", tensor_type(conv_aval), lo, indices, hi)
    return clamped, ok


class _StaticCtx:
    """What ``_reduce`` and ``_compare`` read of a rule context: static shapes."""
    dynamic = False


def _cmp(x, y, direction: str, aval: ShapedArray):
    return _compare(_StaticCtx, x, y, direction, aval)


def _dims_attr(kind: str, fields: Sequence[tuple]) -> Any:
    """A ``#stablehlo.gather<...>``/``#stablehlo.scatter<...>`` attribute (empty lists left
    out, as StableHLO prints them)."""
    parts = [f"{name} = [{', '.join(str(d) for d in dims)}]" for name, dims in fields[:-1] if dims]
    parts.append(f"{fields[-1][0]} = {fields[-1][1]}")
    return mlir().Attribute.parse(f"#stablehlo.{kind}<{', '.join(parts)}>")


def _bool_attr(value: bool) -> Any:
    return mlir().BoolAttr.get(bool(value))


def _apart_from_strided_slice(value):
    """``value`` behind an optimization barrier if a strided slice made it. IREE 3.13 fuses
    the slice into the gather's dispatch and then fails in LLVM translation (an
    unrealized_conversion_cast of the vector.gather's indices), e.g. for jnp.arange(9.)[::2]
    [jnp.array([1, 2])] under jit; the barrier keeps the slice in a dispatch of its own."""
    owner = getattr(value, "owner", None)
    operation = getattr(owner, "operation", owner)
    if operation is None or getattr(operation, "name", None) != "stablehlo.slice":
        return value
    strides = mlir().DenseI64ArrayAttr(operation.attributes["strides"])
    if all(s == 1 for s in strides):
        return value
    return fusion_barrier(value)


def _barrier_if_computed(value):
    """``value`` behind a fusion barrier unless it is a block argument."""
    if isinstance(value, mlir().OpResult):
        return fusion_barrier(value)
    return value


def _gather_lowering(ctx, operand, indices, *, dimension_numbers, slice_sizes, mode,
                     fill_value=None, indices_are_sorted=False, unique_indices=False):
    dn = dimension_numbers
    x_aval, idx_aval = ctx.avals_in
    out_aval = ctx.avals_out[0]
    upper = [x_aval.shape[d] - slice_sizes[d] for d in dn.start_index_map]
    if out_aval.size == 0:  # (IREE 3.13 dies of a division by zero compiling empty gathers)
        return hlo("broadcast_in_dim", ctx.out_type(), scalar_like(
            combiner_identity("add", out_aval.dtype), out_aval.dtype),
            broadcast_dimensions=i64_array([]))
    fill = mode is GatherScatterMode.FILL_OR_DROP
    # StableHLO clamps out-of-bounds starts itself; clamping here too keeps pyree from relying
    # on each backend's reading of that rule.
    indices, ok = _bounded_indices(indices, idx_aval, upper, fill)
    operand = _apart_from_strided_slice(operand)
    attr = _dims_attr("gather", [
        ("offset_dims", dn.offset_dims), ("collapsed_slice_dims", dn.collapsed_slice_dims),
        ("operand_batching_dims", dn.operand_batching_dims),
        ("start_indices_batching_dims", dn.start_indices_batching_dims),
        ("start_index_map", dn.start_index_map), ("index_vector_dim", idx_aval.ndim - 1)])
    out = op("stablehlo.gather", [ctx.out_type()], [operand, indices],
             {"dimension_numbers": attr, "slice_sizes": i64_array(slice_sizes),
              "indices_are_sorted": _bool_attr(indices_are_sorted)}).result
    if fill and out_aval.size:
        value = default_fill_value(out_aval.dtype) if fill_value is None else fill_value
        batch_pos = [d for d in range(out_aval.ndim) if d not in dn.offset_dims]
        mask = hlo("broadcast_in_dim", tensor_type(out_aval.update(dtype=np.bool_)), ok,
                   broadcast_dimensions=i64_array(batch_pos))
        filler = hlo("broadcast_in_dim", ctx.out_type(), scalar_like(value, out_aval.dtype),
                     broadcast_dimensions=i64_array([]))
        out = hlo("select", ctx.out_type(), mask, out, filler)
    return out


def combiner_identity(combiner: str, dtype: np.dtype) -> Any:
    """The update that leaves an element unchanged under ``combiner``."""
    dtype = np.dtype(dtype)
    if combiner == "add":
        return False if dtype == np.bool_ else 0
    if combiner == "mul":
        return True if dtype == np.bool_ else 1
    if dtype == np.bool_:
        return combiner == "min"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.max if combiner == "min" else info.min)
    return float("inf") if combiner == "min" else float("-inf")


_REGION_OPS = {"add": "add", "mul": "multiply", "min": "minimum", "max": "maximum"}
_BOOL_REGION_OPS = {"add": "or", "mul": "and", "min": "and", "max": "or"}


def _scatter_op(operand, indices, updates, x_aval: ShapedArray, idx_aval: ShapedArray,
                dn: ScatterDimensionNumbers, combiner: str, indices_are_sorted: bool,
                unique_indices: bool):
    ir = mlir()
    attr = _dims_attr("scatter", [
        ("update_window_dims", dn.update_window_dims),
        ("inserted_window_dims", dn.inserted_window_dims),
        ("input_batching_dims", dn.operand_batching_dims),
        ("scatter_indices_batching_dims", dn.scatter_indices_batching_dims),
        ("scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims),
        ("index_vector_dim", idx_aval.ndim - 1)])
    # IREE 3.13 fuses computed indices and updates into the scatter's dispatch and keeps them
    # on its stack, whose 32 KiB limit then fails the compile (10 000 updates of f32 already):
    # a barrier keeps them in dispatches of their own.
    indices, updates = (_barrier_if_computed(v) for v in (indices, updates))
    scatter = op("stablehlo.scatter", [tensor_type(x_aval)], [operand, indices, updates],
                 {"scatter_dimension_numbers": attr,
                  "indices_are_sorted": _bool_attr(indices_are_sorted),
                  "unique_indices": _bool_attr(unique_indices)}, regions=1)
    scalar_t = tensor_type(ShapedArray((), x_aval.dtype))
    block = ir.Block.create_at_start(scatter.regions[0], [scalar_t, scalar_t])
    with ir.InsertionPoint(block):
        old, new = block.arguments
        if combiner == "replace":
            result = new
        else:
            name = (_BOOL_REGION_OPS if x_aval.dtype == np.bool_ else _REGION_OPS)[combiner]
            result = hlo(name, scalar_t, old, new)
        op("stablehlo.return", [], [result])
    return scatter.result


def _scatter_leading(operand, indices, updates, x_aval: ShapedArray, idx_aval: ShapedArray,
                     dn: ScatterDimensionNumbers, combiner: str, indices_are_sorted: bool,
                     unique_indices: bool):
    """A canonical scatter (see ``_canonical_scatter``) with several inserted dimensions moved
    first: IREE 3.13 rejects two or more inserted dimensions that are not the leading ones
    ('expected indices to be equal to batch rank or batch rank + 1', e.g. an operand of
    3x4x5 indexed along axes 0 and 2), so the operand is transposed there and back."""
    inserted = list(dn.inserted_window_dims)
    if len(inserted) < 2 or inserted == list(range(len(inserted))):
        return _scatter_op(operand, indices, updates, x_aval, idx_aval, dn, combiner,
                           indices_are_sorted, unique_indices)
    perm = inserted + [d for d in range(x_aval.ndim) if d not in inserted]
    t_aval = x_aval.update(shape=tuple(x_aval.shape[p] for p in perm))
    operand = hlo("transpose", tensor_type(t_aval), operand, permutation=i64_array(perm))
    tdn = ScatterDimensionNumbers(dn.update_window_dims, tuple(range(len(inserted))),
                                  tuple(perm.index(d) for d in dn.scatter_dims_to_operand_dims))
    out = _scatter_op(operand, indices, updates, t_aval, idx_aval, tdn, combiner,
                      indices_are_sorted, unique_indices)
    inverse = [perm.index(d) for d in range(x_aval.ndim)]
    return hlo("transpose", tensor_type(x_aval), out, permutation=i64_array(inverse))


def _canonical_scatter(operand, indices, updates, x_aval: ShapedArray, idx_aval: ShapedArray,
                       u_aval: ShapedArray, dn: ScatterDimensionNumbers, combiner: str,
                       indices_are_sorted: bool, unique_indices: bool):
    """A scatter in the one form IREE 3.13 compiles: every operand dimension either indexed
    with window size 1 (inserted) or a whole-dimension window that is not indexed, with at
    least one index-vector entry. (IREE rejects windows along indexed dimensions and partial
    windows — 'shape of update value dim#1 must match original value' —, inserted dimensions
    nothing indexes — 'expected indices to be equal to batch rank or batch rank + 1' — and
    empty index vectors.) Other windows become more index vectors, one per window position:
    the start plus an iota; batching dimensions become index entries that are iotas too, and
    unindexed inserted dimensions entries of 0."""
    itype = idx_aval.dtype
    window_dims = scatter_window_operand_dims(x_aval.ndim, dn)
    window_size = {d: u_aval.shape[u] for d, u in zip(window_dims, dn.update_window_dims)}
    indexed = set(dn.scatter_dims_to_operand_dims)
    converted = [d for d in window_dims if d in indexed or window_size[d] < x_aval.shape[d]]
    kept = [d for d in window_dims if d not in converted]
    unindexed = [d for d in dn.inserted_window_dims if d not in indexed]
    if not converted and not unindexed and not dn.operand_batching_dims and indexed:
        return _scatter_leading(operand, indices, updates, x_aval, idx_aval, dn, combiner,
                           indices_are_sorted, unique_indices)
    # Updates as [index batch dims..., converted windows..., kept windows...].
    scatter_pos = [d for d in range(u_aval.ndim) if d not in dn.update_window_dims]
    pos_of = dict(zip(window_dims, dn.update_window_dims))
    perm = scatter_pos + [pos_of[d] for d in converted] + [pos_of[d] for d in kept]
    new_u_shape = tuple(u_aval.shape[p] for p in perm)
    if perm != list(range(u_aval.ndim)):
        updates = hlo("transpose", tensor_type(u_aval.update(shape=new_u_shape)), updates,
                      permutation=i64_array(perm))
    batch_shape = idx_aval.shape[:-1]
    nb = len(batch_shape)
    grid = batch_shape + tuple(window_size[d] for d in converted)
    entry_aval = ShapedArray(grid + (1,), itype)
    entry_t = tensor_type(entry_aval)

    def iota(axis: int):
        return hlo("iota", entry_t, iota_dimension=mlir().IntegerAttr.get(
            mlir().IntegerType.get_signless(64), axis))

    entries, targets = [], []
    for k, d in enumerate(dn.scatter_dims_to_operand_dims):
        column = hlo("slice", tensor_type(ShapedArray(batch_shape + (1,), itype)), indices,
                     start_indices=i64_array([0] * nb + [k]),
                     limit_indices=i64_array(list(batch_shape) + [k + 1]),
                     strides=i64_array([1] * (nb + 1)))
        column = hlo("broadcast_in_dim", entry_t, column,
                     broadcast_dimensions=i64_array(list(range(nb)) + [len(grid)]))
        if d in converted:
            column = hlo("add", entry_t, column, iota(nb + converted.index(d)))
        entries.append(column)
        targets.append(d)
    for d in converted:
        if d not in indexed:  # a partial window starting at 0
            entries.append(iota(nb + converted.index(d)))
            targets.append(d)
    for od, sd in zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims):
        entries.append(iota(sd))
        targets.append(od)
    for d in unindexed:  # an inserted dimension nothing indexes: position 0
        entries.append(hlo("broadcast_in_dim", entry_t, scalar_like(0, itype),
                           broadcast_dimensions=i64_array([])))
        targets.append(d)
    inserted = sorted(set(dn.inserted_window_dims) | set(converted) |
                      set(dn.operand_batching_dims))
    n_kept_start = len(grid)
    new_uwd = tuple(range(n_kept_start, n_kept_start + len(kept)))
    if not entries:
        # Nothing indexed: every window is the whole operand. Index a new unit dimension.
        unit_aval = x_aval.update(shape=(1,) + x_aval.shape)
        operand = hlo("reshape", tensor_type(unit_aval), operand)
        zeros_idx = hlo("broadcast_in_dim", entry_t, scalar_like(0, itype),
                        broadcast_dimensions=i64_array([]))
        cdn = ScatterDimensionNumbers(new_uwd, (0,), (0,))
        out = _scatter_leading(operand, zeros_idx, updates, unit_aval, entry_aval, cdn, combiner,
                          indices_are_sorted, unique_indices)
        return hlo("reshape", tensor_type(x_aval), out)
    new_idx_aval = ShapedArray(grid + (len(entries),), itype)
    new_indices = entries[0] if len(entries) == 1 else hlo(
        "concatenate", tensor_type(new_idx_aval), *entries, dimension=i64_attr(len(grid)))
    cdn = ScatterDimensionNumbers(new_uwd, tuple(inserted), tuple(targets))
    return _scatter_leading(operand, new_indices, updates, x_aval, new_idx_aval, cdn, combiner,
                       indices_are_sorted, unique_indices)


def _scatter_lowering(ctx, operand, indices, updates, *, dimension_numbers, combiner, mode,
                      indices_are_sorted=False, unique_indices=False):
    dn = dimension_numbers
    x_aval, idx_aval, u_aval = ctx.avals_in
    window = {d: u_aval.shape[u] for d, u in
              zip(scatter_window_operand_dims(x_aval.ndim, dn), dn.update_window_dims)}
    sizes = [window.get(d, 1) for d in dn.scatter_dims_to_operand_dims]
    upper = [x_aval.shape[d] - s for d, s in zip(dn.scatter_dims_to_operand_dims, sizes)]
    drop = mode is GatherScatterMode.FILL_OR_DROP
    if u_aval.size == 0 or x_aval.size == 0:
        return operand  # nothing to write (and IREE 3.13 dies compiling empty scatters)
    if ctx.lowering.aliases_input(operand):
        # IREE may scatter in place into the storage of a function input, which pyree's
        # immutable Arrays share with the caller (IREE issue #16168): scatter into a copy.
        operand = fresh_copy(operand, x_aval, ctx.lowering.new_tag())
    if not drop:
        indices, _ = _bounded_indices(indices, idx_aval, upper, False)
        return _canonical_scatter(operand, indices, updates, x_aval, idx_aval.update(
            dtype=_index_dtype(idx_aval.dtype)), u_aval, dn, combiner, indices_are_sorted,
            unique_indices)
    clamped, ok = _bounded_indices(indices, idx_aval, upper, True)
    itype = _index_dtype(idx_aval.dtype)
    conv_aval = idx_aval.update(dtype=itype)
    scatter_pos = [d for d in range(u_aval.ndim) if d not in dn.update_window_dims]
    if combiner != "replace":
        # Dropped windows combine with the combiner's identity (at a clamped place).
        mask = hlo("broadcast_in_dim", tensor_type(u_aval.update(dtype=np.bool_)), ok,
                   broadcast_dimensions=i64_array(scatter_pos))
        identity = hlo("broadcast_in_dim", tensor_type(u_aval),
                       scalar_like(combiner_identity(combiner, u_aval.dtype), u_aval.dtype),
                       broadcast_dimensions=i64_array([]))
        updates = hlo("select", tensor_type(u_aval), mask, updates, identity)
        return _canonical_scatter(operand, clamped, updates, x_aval, conv_aval, u_aval, dn,
                                  combiner, indices_are_sorted, unique_indices)
    # Replacing: dropped windows are sent into padding past the end of every indexed
    # dimension, which is cut off afterwards.
    padded_shape = list(x_aval.shape)
    high = [0] * x_aval.ndim
    for d, s in zip(dn.scatter_dims_to_operand_dims, sizes):
        high[d] = s
        padded_shape[d] += s
    padded_aval = x_aval.update(shape=tuple(padded_shape))
    padded = hlo("pad", tensor_type(padded_aval), operand,
                 scalar_like(combiner_identity("add", x_aval.dtype), x_aval.dtype),
                 edge_padding_low=i64_array([0] * x_aval.ndim), edge_padding_high=i64_array(high),
                 interior_padding=i64_array([0] * x_aval.ndim))
    ends = [x_aval.shape[d] for d in dn.scatter_dims_to_operand_dims]
    end_vec = op("stablehlo.constant", [tensor_type(ShapedArray((len(ends),), itype))], [],
                 {"value": mlir().DenseElementsAttr.get(np.asarray(ends, itype))}).result
    ends_b = hlo("broadcast_in_dim", tensor_type(conv_aval), end_vec,
                 broadcast_dimensions=i64_array([idx_aval.ndim - 1]))
    ok_b = hlo("broadcast_in_dim", tensor_type(conv_aval.update(dtype=np.bool_)), ok,
               broadcast_dimensions=i64_array(range(idx_aval.ndim - 1)))
    routed = hlo("select", tensor_type(conv_aval), ok_b, clamped, ends_b)
    scattered = _canonical_scatter(padded, routed, updates, padded_aval, conv_aval, u_aval, dn,
                                   combiner, indices_are_sorted, unique_indices)
    return hlo("slice", tensor_type(x_aval), scattered,
               start_indices=i64_array([0] * x_aval.ndim), limit_indices=i64_array(x_aval.shape),
               strides=i64_array([1] * x_aval.ndim))


lowering_rules[gather_p] = _gather_lowering
lowering_rules[scatter_p] = _scatter_lowering


# -- helpers that bind ----------------------------------------------------------------------------

def gather(operand: Any, indices: Any, dn: GatherDimensionNumbers, slice_sizes: Sequence[int],
           mode: GatherScatterMode, fill_value: Any = None, indices_are_sorted: bool = False,
           unique_indices: bool = False) -> Any:
    return gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=tuple(slice_sizes),
                         mode=mode, fill_value=fill_value, indices_are_sorted=indices_are_sorted,
                         unique_indices=unique_indices)


def scatter(operand: Any, indices: Any, updates: Any, dn: ScatterDimensionNumbers,
            combiner: str, mode: GatherScatterMode, indices_are_sorted: bool = False,
            unique_indices: bool = False) -> Any:
    return scatter_p.bind(operand, indices, updates, dimension_numbers=dn, combiner=combiner,
                          mode=mode, indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices)


def scatter_to_gather(dn: ScatterDimensionNumbers, operand_shape: tuple, updates_shape: tuple
                      ) -> tuple[GatherDimensionNumbers, tuple]:
    """The gather that reads back, window by window, what a scatter writes."""
    window = dict(zip(scatter_window_operand_dims(len(operand_shape), dn),
                      (updates_shape[u] for u in dn.update_window_dims)))
    slice_sizes = tuple(window.get(d, 1) for d in range(len(operand_shape)))
    gdn = GatherDimensionNumbers(dn.update_window_dims, dn.inserted_window_dims,
                                 dn.scatter_dims_to_operand_dims, dn.operand_batching_dims,
                                 dn.scatter_indices_batching_dims)
    return gdn, slice_sizes


def gather_to_scatter(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    """The scatter that writes back, window by window, what a gather reads."""
    return ScatterDimensionNumbers(dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                   dn.operand_batching_dims, dn.start_indices_batching_dims)


# -- derivatives ----------------------------------------------------------------------------------

def _gather_jvp(primals, tangents, *, fill_value=None, **params):
    x, idx = primals
    out = gather_p.bind(x, idx, fill_value=fill_value, **params)
    t = tangents[0]
    if isinstance(t, Zero):
        return [out], [Zero(get_aval(out))]
    # Out-of-bounds windows read a constant: their tangent is zero.
    return [out], [gather_p.bind(t, idx, fill_value=0, **params)]


def _gather_transpose(ct, x, idx, *, dimension_numbers, slice_sizes, mode, fill_value=None,
                      indices_are_sorted=False, unique_indices=False):
    if isinstance(ct, Zero) or not is_undefined(x):
        return [None, None]
    ct = instantiate(ct)
    out = scatter(zeros(x.aval), idx, ct, gather_to_scatter(dimension_numbers), "add",
                  mode, indices_are_sorted, unique_indices)
    return [out, None]


def _window_values(values, idx, updates_aval: ShapedArray, dn: ScatterDimensionNumbers, mode,
                   indices_are_sorted, unique_indices, fill_value=0):
    """``values`` (operand-shaped) read back at each update position of a scatter."""
    gdn, slice_sizes = scatter_to_gather(dn, get_aval(values).shape, updates_aval.shape)
    return gather(values, idx, gdn, slice_sizes, mode, fill_value, indices_are_sorted,
                  unique_indices)


def _scatter_jvp(primals, tangents, *, dimension_numbers, combiner, mode,
                 indices_are_sorted=False, unique_indices=False):
    x, idx, u = primals
    tx, _, tu = tangents
    dn = dimension_numbers
    flags = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    x_aval, u_aval = get_aval(x), get_aval(u)

    def bind(operand, updates, comb):
        return scatter(operand, idx, updates, dn, comb, mode, **flags)

    if combiner == "add":
        out = bind(x, u, "add")
        return [out], [bind(instantiate(tx), instantiate(tu), "add")]
    if combiner == "replace":
        if unique_indices:
            out = bind(x, u, "replace")
            return [out], [bind(instantiate(tx), instantiate(tu), "replace")]
        return _scatter_replace_jvp(x, idx, u, tx, tu, dn, mode, flags)
    if combiner == "mul":
        out = bind(x, u, "mul")
        t_out = bind(instantiate(tx), u, "mul")
        if not isinstance(tu, Zero):
            if not unique_indices:
                raise NotImplementedError(
                    "the derivative of scatter_mul (x.at[idx].multiply(v)) with respect to the "
                    "updates is only implemented for unique_indices=True (as in JAX)")
            x_at = _window_values(x, idx, u_aval, dn, mode, **flags)
            t_out = bind(t_out, P.mul_p.bind(tu, x_at), "add")
        return [out], [t_out]
    # min / max: the tangent of the elements that attain the result, averaged over ties.
    out = bind(x, u, combiner)
    out_at = _window_values(out, idx, u_aval, dn, mode, fill_value=None, **flags)
    x_wins = P.eq_p.bind(x, out)
    u_wins = P.eq_p.bind(u, out_at)
    dtype = x_aval.dtype
    one = lambda mask: P.convert_element_type_p.bind(mask, new_dtype=dtype, weak_type=False)
    count = P.add_p.bind(one(x_wins), bind(zeros(x_aval), one(u_wins), "add"))
    total = P.select_p.bind(x_wins, instantiate(tx), zeros(x_aval))
    if not isinstance(tu, Zero):
        total = bind(total, P.select_p.bind(u_wins, tu, zeros(u_aval)), "add")
    return [out], [P.div_p.bind(total, count)]


def _scatter_replace_jvp(x, idx, u, tx, tu, dn, mode, flags):
    """Replacing with possibly repeated indices: which update lands where is settled once, by
    scattering each update position's number, and the primal and tangent both follow it."""
    x_aval, u_aval = get_aval(x), get_aval(u)
    scatter_pos = [d for d in range(u_aval.ndim) if d not in dn.update_window_dims]
    batch_shape = tuple(u_aval.shape[d] for d in scatter_pos)
    count = int(np.prod(batch_shape, dtype=np.int64))
    id_dtype = np.dtype(np.int32)
    ids = P.iota_p.bind(dtype=id_dtype, shape=(max(count, 1),), dimension=0)
    ids = P.add_p.bind(ids, TypedScalar(1, id_dtype, False))  # 0 marks "no update"
    if count == 0:
        ids = P.slice_p.bind(ids, start_indices=(0,), limit_indices=(0,), strides=(1,))
    ids = P.reshape_p.bind(ids, new_sizes=batch_shape)
    ids = P.broadcast_in_dim_p.bind(ids, shape=u_aval.shape,
                                    broadcast_dimensions=tuple(scatter_pos))
    id_aval = x_aval.update(dtype=id_dtype, weak_type=False)
    landed = scatter(zeros(id_aval), idx, ids, dn, "replace", mode, **flags)
    landed_at = _window_values(landed, idx, u_aval.update(dtype=id_dtype), dn, mode,
                               fill_value=0, **flags)
    u_lands = P.eq_p.bind(landed_at, ids)
    x_stays = P.eq_p.bind(landed, TypedScalar(0, id_dtype, False))

    def combine(operand, updates):
        kept = P.select_p.bind(x_stays, operand, zeros(get_aval(operand)))
        placed = P.select_p.bind(u_lands, updates, zeros(get_aval(updates)))
        return scatter(kept, idx, placed, dn, "add", mode, **flags)

    out = combine(x, u)
    if get_aval(out).weak_type != x_aval.weak_type:
        out = P.convert_element_type_p.bind(out, new_dtype=x_aval.dtype,
                                            weak_type=x_aval.weak_type)
    return [out], [combine(instantiate(tx), instantiate(tu))]


def _scatter_transpose(ct, x, idx, u, *, dimension_numbers, combiner, mode,
                       indices_are_sorted=False, unique_indices=False):
    dn = dimension_numbers
    flags = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    if isinstance(ct, Zero):
        return [None, None, None]
    ct = instantiate(ct)
    u_aval = u.aval if is_undefined(u) else get_aval(u)
    if combiner == "mul":
        if is_undefined(u):
            raise NotImplementedError("scatter_mul is not linear in its updates")
        return [scatter(ct, idx, u, dn, "mul", mode, **flags) if is_undefined(x) else None,
                None, None]
    if combiner not in ("add", "replace"):
        raise NotImplementedError(f"scatter ({combiner}) is not linear")
    if combiner == "replace" and not unique_indices:
        raise NotImplementedError("the transpose of a replacing scatter needs unique indices")
    ct_x = None
    if is_undefined(x):
        ct_x = ct if combiner == "add" else scatter(ct, idx, zeros(u_aval), dn, "replace",
                                                    mode, **flags)
    ct_u = None
    if is_undefined(u):
        ct_u = _window_values(ct, idx, u_aval, dn, mode, **flags)
    return [ct_x, None, ct_u]


jvp_rules[gather_p] = _gather_jvp
transpose_rules[gather_p] = _gather_transpose
jvp_rules[scatter_p] = _scatter_jvp
transpose_rules[scatter_p] = _scatter_transpose


# -- batching -------------------------------------------------------------------------------------

def _shift(dims: Sequence[int], by: int = 1) -> tuple:
    return tuple(d + by for d in dims)


def _gather_batch(axis, values, dims, *, dimension_numbers, slice_sizes, **params):
    (x, idx), (xd, idd) = values, dims
    dn = dimension_numbers
    if idd is None:
        # A window of the whole batch axis, placed first in the output.
        x = moveaxis(x, xd, 0)
        bdn = GatherDimensionNumbers((0,) + _shift(dn.offset_dims), _shift(dn.collapsed_slice_dims),
                                     _shift(dn.start_index_map), _shift(dn.operand_batching_dims),
                                     dn.start_indices_batching_dims)
        return [gather_p.bind(x, idx, dimension_numbers=bdn,
                              slice_sizes=(axis.size,) + tuple(slice_sizes), **params)], [0]
    idx = moveaxis(idx, idd, 0)
    params = dict(params, indices_are_sorted=False)  # (sorted per example, not across)
    if xd is None:
        # One more batch dimension of the indices, first among the output's.
        bdn = GatherDimensionNumbers(_shift(dn.offset_dims), dn.collapsed_slice_dims,
                                     dn.start_index_map, dn.operand_batching_dims,
                                     _shift(dn.start_indices_batching_dims))
        return [gather_p.bind(x, idx, dimension_numbers=bdn, slice_sizes=slice_sizes,
                              **params)], [0]
    x = moveaxis(x, xd, 0)
    bdn = GatherDimensionNumbers(_shift(dn.offset_dims), _shift(dn.collapsed_slice_dims),
                                 _shift(dn.start_index_map),
                                 (0,) + _shift(dn.operand_batching_dims),
                                 (0,) + _shift(dn.start_indices_batching_dims))
    return [gather_p.bind(x, idx, dimension_numbers=bdn, slice_sizes=(1,) + tuple(slice_sizes),
                          **params)], [0]


def _scatter_batch(axis, values, dims, *, dimension_numbers, **params):
    (x, idx, u), (xd, idd, ud) = values, dims
    dn = dimension_numbers
    x = broadcast_batched(x, axis.size, 0) if xd is None else moveaxis(x, xd, 0)
    u = broadcast_batched(u, axis.size, 0) if ud is None else moveaxis(u, ud, 0)
    if idd is None:
        # The batch axis is one more window dimension (the first) of every update.
        bdn = ScatterDimensionNumbers((0,) + _shift(dn.update_window_dims),
                                      _shift(dn.inserted_window_dims),
                                      _shift(dn.scatter_dims_to_operand_dims),
                                      _shift(dn.operand_batching_dims),
                                      dn.scatter_indices_batching_dims)
    else:
        idx = moveaxis(idx, idd, 0)
        params = dict(params, indices_are_sorted=False)  # (sorted per example, not across)
        bdn = ScatterDimensionNumbers(_shift(dn.update_window_dims),
                                      _shift(dn.inserted_window_dims),
                                      _shift(dn.scatter_dims_to_operand_dims),
                                      (0,) + _shift(dn.operand_batching_dims),
                                      (0,) + _shift(dn.scatter_indices_batching_dims))
    return [scatter_p.bind(x, idx, u, dimension_numbers=bdn, **params)], [0]


batching_rules[gather_p] = _gather_batch
batching_rules[scatter_p] = _scatter_batch


# dynamic_slice and dynamic_update_slice with a start per example are a gather and a scatter of
# one window per example (with one start for the whole batch, they stay themselves).


def _clamped_starts(axis, starts, sds, dims_sizes, slice_sizes):
    """Per-example start positions (B,) per axis, clamped into range as dynamic_slice does."""
    out = []
    for s, d, n, k in zip(starts, sds, dims_sizes, slice_sizes):
        dtype = get_aval(s).dtype
        s = to_front(s, d, axis.size) if d is not None else P.broadcast_in_dim_p.bind(
            s, shape=(axis.size,), broadcast_dimensions=())
        s = P.max_p.bind(s, TypedScalar(0, dtype, False))
        s = P.min_p.bind(s, TypedScalar(n - k, dtype, False))
        out.append(P.convert_element_type_p.bind(s, new_dtype=np.dtype(np.int32),
                                                 weak_type=False))
    return out


def _start_vectors(axis, starts, sds, dims_sizes, slice_sizes):
    """Per-example start vectors (B, rank), clamped so each window fits."""
    columns = _clamped_starts(axis, starts, sds, dims_sizes, slice_sizes)
    columns = [P.reshape_p.bind(c, new_sizes=(axis.size, 1)) for c in columns]
    return columns[0] if len(columns) == 1 else P.concatenate_p.bind(*columns, dimension=1)


def batched_start_slice(axis, x, xd, starts, sds, slice_sizes):
    """dynamic_slice with a start per example: one gather of a window per example, the batch
    axis a batching dimension of both operand and start vectors."""
    x = to_front(x, xd, axis.size)
    shape = get_aval(x).shape
    rank = len(shape) - 1
    if rank == 0:
        return [x], [0]
    if axis.size == 0:  # no example: any window of the empty batch (a gather needs one row)
        return [P.slice_p.bind(x, start_indices=(0,) * (rank + 1),
                               limit_indices=(0,) + tuple(slice_sizes),
                               strides=(1,) * (rank + 1))], [0]
    index = _start_vectors(axis, starts, sds, shape[1:], slice_sizes)
    dims = tuple(range(1, rank + 1))
    dn = GatherDimensionNumbers(offset_dims=dims, collapsed_slice_dims=(), start_index_map=dims,
                                operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    out = gather(x, index, dn, (1,) + tuple(slice_sizes), GatherScatterMode.CLIP,
                 indices_are_sorted=False, unique_indices=True)
    return [out], [0]


def batched_start_update(axis, x, xd, update, ud, starts, sds):
    """dynamic_update_slice with a start per example: one scatter of a window per example,
    the batch axis a batching dimension of operand and start vectors."""
    x = to_front(x, xd, axis.size)
    update = to_front(update, ud, axis.size)
    shape = get_aval(x).shape
    ushape = get_aval(update).shape
    rank = len(shape) - 1
    if rank == 0:
        return [with_weak_type(update, get_aval(x).weak_type)], [0]
    if axis.size == 0:  # no example, nothing to update
        return [x], [0]
    index = _start_vectors(axis, starts, sds, shape[1:], ushape[1:])
    dims = tuple(range(1, rank + 1))
    dn = ScatterDimensionNumbers(update_window_dims=dims, inserted_window_dims=(),
                                 scatter_dims_to_operand_dims=dims, operand_batching_dims=(0,),
                                 scatter_indices_batching_dims=(0,))
    out = scatter(x, index, update, dn, "replace", GatherScatterMode.CLIP,
                  indices_are_sorted=False, unique_indices=True)
    return [out], [0]


# -- sinking into elementwise producers (a rewrite of the IR before lowering) --------------------
#
# IREE 3.13 does not fuse an elementwise producer into the gather that reads it: the producer's
# whole result is written out and the gather reads a few elements back. The mean cross-entropy
# of 4096 x 1000 log-softmax rows, take_along_axis(x - max - log(sum(exp)), labels), wrote and
# read the 4096 x 1000 log-probabilities to pick 4096 of them: 3.1 ms, against 1.4 ms computing
# x[label] - max - log(sum(exp)) directly (2 cores, 2026-11-28; JAX 2.2 ms). So before lowering,
# a gather that reads at most half of an elementwise expression's elements is moved into the
# expression: the leaves are gathered, the expression is computed on the gathered elements.
# An expression other operations read too (a log-softmax written by hand: shifted = x - max
# feeds both the sum of exponentials and the result) is computed again on the gathered
# elements when they are at most an eighth of it: it is then read only by the reduction,
# which IREE fuses it into, instead of being written out whole for the gather (the mean
# cross-entropy of 4096 x 1000 logits so written: 5.09 -> 2.12 ms on 2 cores, JAX 2.7-2.8 ms;
# for CUDA the module no longer writes the 65536 x 1000 shifted logits of benchmarks/gpu.py).

def sink_gathers(ir: IR) -> IR:
    """``ir`` with each gather of a smaller result than its operand, whose operand is an
    elementwise expression read by nothing else, computing the expression on the gathered
    elements instead (see the comment above); regions are rewritten too.

    Example: ``take_along_axis(x - m[:, None], i[:, None], 1)`` reads ``x[r, i[r]]`` and
    ``m[r]`` and subtracts; the difference of the whole arrays is no longer computed.
    """
    consumers: dict[int, int] = {}   # (how many equations or outputs read each variable)
    for eqn in ir.eqns:
        for var in {id(a): a for a in eqn.inputs if isinstance(a, Var)}:
            consumers[var] = consumers.get(var, 0) + 1
    for atom in ir.outs:
        consumers[id(atom)] = consumers.get(id(atom), 0) + 1
    producers = {id(v): eqn for eqn in ir.eqns for v in eqn.outputs}
    eqns: list[Eqn] = []
    renamed: dict[int, Any] = {}
    for eqn in ir.eqns:
        eqn = map_regions(eqn, sink_gathers)
        if any(id(a) in renamed for a in eqn.inputs):
            eqn = eqn.replace(inputs=[renamed.get(id(a), a) for a in eqn.inputs])
        counts = _reader_counts(eqn, consumers) if eqn.primitive is gather_p else None
        if eqn.primitive is gather_p and _sinking_pays(eqn, producers, counts):
            sunk_eqns, result = _sunk_gather(eqn, producers, counts)
            eqns.extend(sunk_eqns)
            renamed[id(eqn.outputs[0])] = result
        else:
            eqns.append(eqn)
    if not renamed:
        return IR(ir.const_vars, ir.in_vars, eqns, ir.outs)
    return IR(ir.const_vars, ir.in_vars, eqns, [renamed.get(id(a), a) for a in ir.outs])


# A gather moves into an expression other operations read too when it reads at most this
# fraction (1 / SHARED_SINK_RATIO) of its elements: the expression is then computed twice,
# whole for its other readers and on the gathered elements.
SHARED_SINK_RATIO = 8


def _sunk_through(var: Any, producers: dict, consumers: Optional[dict]) -> Optional[Eqn]:
    """The elementwise equation computing ``var`` if the gather may move into it: read by one
    equation only (any number when ``consumers`` is None), of the same shape as its array
    operands."""
    eqn = producers.get(id(var)) if isinstance(var, Var) else None
    if (eqn is None or eqn.primitive not in P.ELEMENTWISE
            or (consumers is not None and consumers.get(id(var)) != 1)):
        return None
    return eqn


def _reader_counts(g: Eqn, consumers: dict) -> Optional[dict]:
    """What limits the expressions gather ``g`` may move into: ``consumers`` (each read by
    one equation only), or None (any) when it reads at most 1 / SHARED_SINK_RATIO of them."""
    small = SHARED_SINK_RATIO * g.outputs[0].aval.size <= g.inputs[0].aval.size
    return None if small else consumers


def _sinking_pays(g: Eqn, producers: dict, consumers: Optional[dict]) -> bool:
    operand = g.inputs[0]
    return (2 * g.outputs[0].aval.size <= operand.aval.size
            and _sunk_through(operand, producers, consumers) is not None)


def _indexes_only_broadcast_dims(b: Eqn, dn: GatherDimensionNumbers) -> bool:
    """Whether ``b`` (a broadcast_in_dim) repeats its operand along every dimension the
    gather's index vectors select in: then the gather needs no indices from it."""
    v_shape, shape = b.inputs[0].aval.shape, b.params["shape"]
    real = {d for k, d in enumerate(b.params["broadcast_dimensions"])
            if v_shape[k] == shape[d] != 1}
    return not real.intersection(dn.start_index_map)


def _sunk_gather(g: Eqn, producers: dict, consumers: Optional[dict]
                 ) -> tuple[list[Eqn], Any]:
    """The equations computing ``g``'s result from its operand expression's leaves, and the
    atom holding it (``consumers`` None: through equations other operations read too)."""
    operand, indices = g.inputs
    dn = g.params["dimension_numbers"]
    replayed: list[Eqn] = []   # the expression's equations, each after those it reads
    leaves: list[Var] = []     # arrays gathered as they are (or, broadcasts, read whole)
    seen: set[int] = set()

    def visit(var: Any) -> None:
        if not isinstance(var, Var) or id(var) in seen:
            return
        seen.add(id(var))
        eqn = _sunk_through(var, producers, consumers)
        if eqn is None or var.aval.shape != operand.aval.shape:
            leaves.append(var)
            return
        for a in eqn.inputs:
            visit(a)
        replayed.append(eqn)
    visit(operand)

    # A broadcast along the selected dimensions is read through its operand, whole
    # (_gathered_broadcast); a rank-0 leaf as it is; the others are gathered.
    read_whole = {}
    for var in leaves:
        b = producers.get(id(var))
        if (var.aval.ndim and b is not None and b.primitive is P.broadcast_in_dim_p
                and _indexes_only_broadcast_dims(b, dn)):
            read_whole[id(var)] = b
    inputs = [read_whole[id(v)].inputs[0] if id(v) in read_whole else v for v in leaves]
    fill = g.params["mode"] is GatherScatterMode.FILL_OR_DROP
    leaf_params = dict(g.params, mode=GatherScatterMode.CLIP, fill_value=None) if fill \
        else g.params
    out_aval = g.outputs[0].aval

    def gathered(*args):
        *leaf_values, idx = args
        env: dict[Var, Any] = {}
        for var, value in zip(leaves, leaf_values):
            if var.aval.ndim == 0:
                env[var] = value
            elif id(var) in read_whole:
                env[var] = _gathered_broadcast(value, read_whole[id(var)], g.params,
                                               out_aval.shape)
            else:
                env[var] = gather_p.bind(value, idx, **leaf_params)
        for eqn in replayed:
            env[eqn.outputs[0]] = eqn.primitive.bind(*[read_env(env, a) for a in eqn.inputs],
                                                     **eqn.params)
        result = env[operand]
        mask = _in_bounds(idx, operand.aval.shape, g.params, out_aval.shape) if fill else None
        if mask is not None:
            value = g.params["fill_value"]
            value = default_fill_value(out_aval.dtype) if value is None else value
            result = P.select_p.bind(mask, result, TypedScalar(value, out_aval.dtype, False))
        return [result]

    with located(g.loc):
        closed = trace_to_ir(gathered, [a.aval for a in inputs] + [indices.aval],
                             top_level=False)
    assert not closed.ir.const_vars, "sink_gathers: the rewrite captured an array"
    eqns, (result,) = inline(closed.ir, inputs + [indices])
    return eqns, result


def _output_dims(dn: GatherDimensionNumbers, operand_rank: int, out_rank: int
                 ) -> tuple[list[int], dict[int, int]]:
    """Where a gather's output dimensions come from: the position of each batch dimension (one
    per index-array dimension but the last), and the position of each windowed operand
    dimension."""
    batch = [p for p in range(out_rank) if p not in dn.offset_dims]
    windowed = [d for d in range(operand_rank)
                if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims]
    return batch, dict(zip(windowed, dn.offset_dims))


def _gathered_broadcast(v: Any, b: Eqn, params: dict, out_shape: tuple) -> Any:
    """The gather of ``broadcast_in_dim(v)`` (``b``) where the gather selects only along
    dimensions the broadcast repeats: a slice of ``v`` broadcast to the gather's result.
    ``v``'s dimensions that are paired with index dimensions land on those batch positions;
    windowed ones are cut to the window, which starts at 0; repeated ones are dropped."""
    dn, slice_sizes = params["dimension_numbers"], params["slice_sizes"]
    v_shape, shape = b.inputs[0].aval.shape, b.params["shape"]
    batch, windowed = _output_dims(dn, len(shape), len(out_shape))
    limits, kept = [], []      # kept: (output position, size) of each dimension of v kept
    for k, d in enumerate(b.params["broadcast_dimensions"]):
        if v_shape[k] != shape[d]:             # repeated: all its entries are the same
            limits.append(1)
        elif d in dn.operand_batching_dims:
            limits.append(v_shape[k])
            t = dn.start_indices_batching_dims[dn.operand_batching_dims.index(d)]
            kept.append((batch[t], v_shape[k]))
        else:                                  # not selected in: the window starts at 0
            limits.append(slice_sizes[d])
            if d in windowed:
                kept.append((windowed[d], slice_sizes[d]))
    if tuple(limits) != v_shape:
        v = P.slice_p.bind(v, start_indices=(0,) * len(v_shape), limit_indices=tuple(limits),
                           strides=(1,) * len(v_shape))
    sizes = tuple(size for _, size in kept)
    if sizes != tuple(limits):
        v = P.reshape_p.bind(v, new_sizes=sizes)
    order = sorted(range(len(kept)), key=lambda i: kept[i][0])
    if order != list(range(len(kept))):
        v = P.transpose_p.bind(v, permutation=tuple(order))
    return P.broadcast_in_dim_p.bind(v, shape=tuple(out_shape), broadcast_dimensions=tuple(
        kept[i][0] for i in order))


def _in_bounds(idx: Any, operand_shape: tuple, params: dict, out_shape: tuple
               ) -> Optional[Any]:
    """Whether each index vector's window fits in the operand (what FILL_OR_DROP tests),
    broadcast to the gather's result; None for index vectors of length 0."""
    dn, slice_sizes = params["dimension_numbers"], params["slice_sizes"]
    idx_shape = idx.aval.shape
    dtype = idx.aval.dtype
    mask = None
    for j, d in enumerate(dn.start_index_map):
        start = P.slice_p.bind(idx, start_indices=(0,) * (len(idx_shape) - 1) + (j,),
                               limit_indices=idx_shape[:-1] + (j + 1,),
                               strides=(1,) * len(idx_shape))
        start = P.reshape_p.bind(start, new_sizes=idx_shape[:-1])
        fits = P.and_p.bind(
            P.ge_p.bind(start, TypedScalar(0, dtype, False)),
            P.le_p.bind(start, TypedScalar(operand_shape[d] - slice_sizes[d], dtype, False)))
        mask = fits if mask is None else P.and_p.bind(mask, fits)
    if mask is None:
        return None
    batch, _ = _output_dims(dn, len(operand_shape), len(out_shape))
    return P.broadcast_in_dim_p.bind(mask, shape=tuple(out_shape),
                                     broadcast_dimensions=tuple(batch))


rewrite_before_lowering(20, sink_gathers)
