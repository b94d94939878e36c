"""The primitives of pyree's IR and their abstract-evaluation (shape and dtype) rules.

Each primitive is one ``Primitive`` object; every rule about it lives in a table keyed by it:
``abstract_eval_rules`` (here), ``lowering_rules`` (lower.py), and later the JVP, transpose and
batching tables. Primitives are strict like ``jax.lax``: operands of elementwise operations
have equal dtypes and equal shapes, except that rank-0 operands broadcast.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from pyree.dtypes import bfloat16

from .ir import ShapedArray
from .trace import Primitive, abstract_eval_rules

_BOOL = np.dtype(np.bool_)
_BF16 = np.dtype(bfloat16)


def kind(dtype: np.dtype) -> str:
    """NumPy's kind letter of ``dtype``, with bfloat16 (kind "V" in ml_dtypes) a float."""
    return "f" if dtype == _BF16 else dtype.kind


def _kind_name(dtype: np.dtype) -> str:
    return dtype.name


def _check_kinds(name: str, aval: ShapedArray, kinds: str, what: str) -> None:
    if kind(aval.dtype) not in kinds:
        raise TypeError(f"{name} does not accept dtype {_kind_name(aval.dtype)}; it takes {what}")


NUMERIC = ("iufc", "numbers")
NUMERIC_OR_BOOL = ("biufc", "numbers or booleans")
SIGNED_OR_FLOAT = ("iufc", "signed numbers")
FLOATING = ("fc", "floating-point or complex numbers")
REAL_FLOATING = ("f", "floating-point numbers")
INTEGER_OR_BOOL = ("biu", "integers or booleans")
INTEGER = ("iu", "integers")
ORDERED = ("biuf", "real numbers or booleans")

# -- elementwise -------------------------------------------------------------------------------

def _broadcast_shapes(name: str, avals: Sequence[ShapedArray]) -> tuple:
    shape = ()
    for aval in avals:
        if aval.shape == ():
            continue
        if shape == ():
            shape = aval.shape
        elif aval.shape != shape:
            shapes = ", ".join(str(a.shape) for a in avals)
            raise TypeError(f"{name} got incompatible shapes for broadcasting: {shapes}")
    return shape


def _same_dtypes(name: str, avals: Sequence[ShapedArray]) -> np.dtype:
    dtype = avals[0].dtype
    for aval in avals[1:]:
        if aval.dtype != dtype:
            names = ", ".join(a.dtype.name for a in avals)
            raise TypeError(f"{name} requires arguments to have the same dtypes, got {names}")
    return dtype


# The elementwise primitives (the families that define more add theirs): eager mode runs them
# on flat views, and batching and partitioning have one rule for all of them.
ELEMENTWISE: set = set()


def unary_primitive(name: str, kinds: tuple[str, str], out_dtype=None) -> Primitive:
    """A new elementwise primitive of one operand of the dtype ``kinds`` (NUMERIC, ...), with
    its abstract evaluation: the operand's aval (``out_dtype(dtype)`` gives another dtype).

    Example: ``sin_p = unary_primitive("sin", FLOATING)``"""
    prim = Primitive(name)
    ELEMENTWISE.add(prim)

    def rule(x: ShapedArray, **params) -> ShapedArray:
        _check_kinds(name, x, *kinds)
        if out_dtype is None:
            return x
        dtype = out_dtype(x.dtype)
        return ShapedArray(x.shape, dtype, x.weak_type and dtype == x.dtype)

    abstract_eval_rules[prim] = rule
    return prim


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else (
        np.dtype(np.float64) if dtype == np.complex128 else dtype)


# (The mathematical functions, exp ... atan2, are math_functions.py's.)
neg_p = unary_primitive("neg", NUMERIC)
abs_p = unary_primitive("abs", NUMERIC, _real_dtype)
not_p = unary_primitive("not", INTEGER_OR_BOOL)


def binary_primitive(name: str, kinds: tuple[str, str], compare: bool = False) -> Primitive:
    """A new elementwise primitive of two operands of one dtype (a rank-0 one broadcasts), with
    its abstract evaluation; ``compare``: its result is boolean.

    Example: ``atan2_p = binary_primitive("atan2", REAL_FLOATING)``"""
    prim = Primitive(name)
    ELEMENTWISE.add(prim)

    def rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        _check_kinds(name, x, *kinds)
        dtype = _same_dtypes(name, [x, y])
        shape = _broadcast_shapes(name, [x, y])
        if compare:
            return ShapedArray(shape, _BOOL, False)
        return ShapedArray(shape, dtype, x.weak_type and y.weak_type)

    abstract_eval_rules[prim] = rule
    return prim


add_p = binary_primitive("add", NUMERIC)
sub_p = binary_primitive("sub", NUMERIC)
mul_p = binary_primitive("mul", NUMERIC)
div_p = binary_primitive("div", NUMERIC)
max_p = binary_primitive("max", NUMERIC_OR_BOOL)
min_p = binary_primitive("min", NUMERIC_OR_BOOL)
and_p = binary_primitive("and", INTEGER_OR_BOOL)
or_p = binary_primitive("or", INTEGER_OR_BOOL)
xor_p = binary_primitive("xor", INTEGER_OR_BOOL)
shift_left_p = binary_primitive("shift_left", INTEGER)
shift_right_arithmetic_p = binary_primitive("shift_right_arithmetic", INTEGER)
shift_right_logical_p = binary_primitive("shift_right_logical", INTEGER)

eq_p = binary_primitive("eq", NUMERIC_OR_BOOL, compare=True)
ne_p = binary_primitive("ne", NUMERIC_OR_BOOL, compare=True)
lt_p = binary_primitive("lt", ORDERED, compare=True)
le_p = binary_primitive("le", ORDERED, compare=True)
gt_p = binary_primitive("gt", ORDERED, compare=True)
ge_p = binary_primitive("ge", ORDERED, compare=True)

select_p = Primitive("select")


def _select_rule(pred: ShapedArray, on_true: ShapedArray, on_false: ShapedArray) -> ShapedArray:
    if pred.dtype != _BOOL:
        raise TypeError(f"select requires a boolean predicate, got {pred.dtype.name}")
    dtype = _same_dtypes("select", [on_true, on_false])
    shape = _broadcast_shapes("select", [pred, on_true, on_false])
    return ShapedArray(shape, dtype, on_true.weak_type and on_false.weak_type)


abstract_eval_rules[select_p] = _select_rule

convert_element_type_p = Primitive("convert_element_type")


def _convert_rule(x: ShapedArray, *, new_dtype: np.dtype, weak_type: bool) -> ShapedArray:
    return ShapedArray(x.shape, new_dtype, weak_type)


abstract_eval_rules[convert_element_type_p] = _convert_rule

# -- shapes ------------------------------------------------------------------------------------

broadcast_in_dim_p = Primitive("broadcast_in_dim")


def _broadcast_in_dim_rule(x: ShapedArray, *, shape: tuple, broadcast_dimensions: tuple) -> ShapedArray:
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


abstract_eval_rules[broadcast_in_dim_p] = _broadcast_in_dim_rule

reshape_p = Primitive("reshape")


def _reshape_rule(x: ShapedArray, *, new_sizes: tuple) -> ShapedArray:
    if any(d < 0 for d in new_sizes) or math.prod(new_sizes) != x.size:
        raise TypeError(f"cannot reshape an array of shape {x.shape} (size {x.size}) into shape "
                        f"{new_sizes}")
    return ShapedArray(new_sizes, x.dtype, x.weak_type)


abstract_eval_rules[reshape_p] = _reshape_rule

transpose_p = Primitive("transpose")


def _transpose_rule(x: ShapedArray, *, permutation: tuple) -> ShapedArray:
    if sorted(permutation) != list(range(x.ndim)):
        raise TypeError(f"transpose permutation {permutation} is not a permutation of the "
                        f"{x.ndim} axes of shape {x.shape}")
    return ShapedArray(tuple(x.shape[p] for p in permutation), x.dtype, x.weak_type)


abstract_eval_rules[transpose_p] = _transpose_rule

rev_p = Primitive("rev")


def _rev_rule(x: ShapedArray, *, dimensions: tuple) -> ShapedArray:
    if len(set(dimensions)) != len(dimensions) or any(not 0 <= d < x.ndim for d in dimensions):
        raise TypeError(f"rev dimensions {dimensions} are not distinct axes of shape {x.shape}")
    return x


abstract_eval_rules[rev_p] = _rev_rule

slice_p = Primitive("slice")


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


abstract_eval_rules[slice_p] = _slice_rule

dynamic_slice_p = Primitive("dynamic_slice")


def _check_start_indices(name: str, operand: ShapedArray, starts: Sequence[ShapedArray]) -> None:
    if len(starts) != operand.ndim:
        raise TypeError(f"{name} of an array of rank {operand.ndim} needs {operand.ndim} start "
                        f"indices, got {len(starts)}")
    for s in starts:
        if s.shape != () or s.dtype.kind not in "iu":
            raise TypeError(f"{name} start indices must be integer scalars, got {s.str_short()}")


def _dynamic_slice_rule(operand: ShapedArray, *starts: ShapedArray, slice_sizes: tuple) -> ShapedArray:
    _check_start_indices("dynamic_slice", operand, starts)
    if len(slice_sizes) != operand.ndim or any(
            not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
        raise TypeError(f"dynamic_slice slice_sizes {slice_sizes} do not fit shape "
                        f"{operand.shape}")
    return ShapedArray(tuple(slice_sizes), operand.dtype, operand.weak_type)


abstract_eval_rules[dynamic_slice_p] = _dynamic_slice_rule

dynamic_update_slice_p = Primitive("dynamic_update_slice")


def _dynamic_update_slice_rule(operand: ShapedArray, update: ShapedArray,
                               *starts: ShapedArray) -> ShapedArray:
    _check_start_indices("dynamic_update_slice", operand, starts)
    _same_dtypes("dynamic_update_slice", [operand, update])
    if update.ndim != operand.ndim or any(u > d for u, d in zip(update.shape, operand.shape)):
        raise TypeError(f"dynamic_update_slice update of shape {update.shape} does not fit in "
                        f"operand of shape {operand.shape}")
    return operand


abstract_eval_rules[dynamic_update_slice_p] = _dynamic_update_slice_rule

concatenate_p = Primitive("concatenate")


def _concatenate_rule(*operands: ShapedArray, dimension: int) -> ShapedArray:
    if not operands:
        raise TypeError("concatenate needs at least one array")
    first = operands[0]
    _same_dtypes("concatenate", operands)
    if not 0 <= dimension < first.ndim:
        raise TypeError(f"concatenate dimension {dimension} is out of range for rank {first.ndim}")
    for op in operands[1:]:
        if op.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(
                zip(op.shape, first.shape)) if i != dimension):
            shapes = ", ".join(str(o.shape) for o in operands)
            raise TypeError(f"concatenate along dimension {dimension} needs equal shapes in the "
                            f"other dimensions, got {shapes}")
    shape = list(first.shape)
    shape[dimension] = sum(o.shape[dimension] for o in operands)
    return ShapedArray(tuple(shape), first.dtype, all(o.weak_type for o in operands))


abstract_eval_rules[concatenate_p] = _concatenate_rule

pad_p = Primitive("pad")


def _pad_rule(operand: ShapedArray, padding_value: ShapedArray, *, padding_config: tuple) -> ShapedArray:
    _same_dtypes("pad", [operand, padding_value])
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


abstract_eval_rules[pad_p] = _pad_rule

iota_p = Primitive("iota")


def _iota_rule(*, dtype: np.dtype, shape: tuple, dimension: int) -> ShapedArray:
    if not 0 <= dimension < len(shape):
        raise TypeError(f"iota dimension {dimension} is out of range for shape {shape}")
    if kind(np.dtype(dtype)) not in "iuf":
        raise TypeError(f"iota needs an integer or floating-point dtype, got {dtype}")
    return ShapedArray(shape, dtype, False)


abstract_eval_rules[iota_p] = _iota_rule

# -- reductions --------------------------------------------------------------------------------

def _check_axes(name: str, x: ShapedArray, axes: tuple) -> tuple:
    if len(set(axes)) != len(axes) or any(not 0 <= a < x.ndim for a in axes):
        raise TypeError(f"{name} axes {axes} are not distinct axes of shape {x.shape}")
    return tuple(d for i, d in enumerate(x.shape) if i not in axes)


def _reduction(name: str, kinds: tuple[str, str]) -> Primitive:
    prim = Primitive(name)

    def rule(x: ShapedArray, *, axes: tuple) -> ShapedArray:
        _check_kinds(name, x, *kinds)
        return ShapedArray(_check_axes(name, x, axes), x.dtype, x.weak_type)

    abstract_eval_rules[prim] = rule
    return prim


reduce_sum_p = _reduction("reduce_sum", NUMERIC)
reduce_prod_p = _reduction("reduce_prod", NUMERIC)
reduce_max_p = _reduction("reduce_max", ORDERED)
reduce_min_p = _reduction("reduce_min", ORDERED)
reduce_and_p = _reduction("reduce_and", INTEGER_OR_BOOL)
reduce_or_p = _reduction("reduce_or", INTEGER_OR_BOOL)


def _arg_reduction(name: str) -> Primitive:
    prim = Primitive(name)

    def rule(x: ShapedArray, *, axes: tuple, index_dtype: np.dtype) -> ShapedArray:
        _check_kinds(name, x, *ORDERED)
        if len(axes) != 1:
            raise TypeError(f"{name} reduces exactly one axis, got axes={axes}")
        shape = _check_axes(name, x, axes)
        if x.shape[axes[0]] == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence (axis {axes[0]} of "
                             f"shape {x.shape} has size 0)")
        if np.dtype(index_dtype).kind not in "iu":
            raise TypeError(f"{name} index_dtype must be an integer type, got {index_dtype}")
        return ShapedArray(shape, index_dtype, False)

    abstract_eval_rules[prim] = rule
    return prim


argmax_p = _arg_reduction("argmax")
argmin_p = _arg_reduction("argmin")

# -- contraction -------------------------------------------------------------------------------

dot_general_p = Primitive("dot_general")


def _dot_general_rule(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers: tuple,
                      precision=None, preferred_element_type=None) -> ShapedArray:
    (lc, rc), (lb, rb) = dimension_numbers
    _check_kinds("dot_general", lhs, *NUMERIC_OR_BOOL)
    dtype = _same_dtypes("dot_general", [lhs, rhs])
    for name, dims, aval in (("lhs contracting", lc, lhs), ("rhs contracting", rc, rhs),
                             ("lhs batch", lb, lhs), ("rhs batch", rb, rhs)):
        if any(not 0 <= d < aval.ndim for d in dims):
            raise TypeError(f"dot_general {name} dimensions {dims} are out of range for shape "
                            f"{aval.shape}")
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


abstract_eval_rules[dot_general_p] = _dot_general_rule

ELEMENTWISE.update({select_p, convert_element_type_p})
