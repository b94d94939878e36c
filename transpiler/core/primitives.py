"""The core primitives: the ones the interpreters build expressions from (derivatives sum
cotangents, batching moves axes), named here so that the core and the interpreters can bind them
without importing the families above them.

Each primitive is one ``Primitive`` object; every rule about it lives in a table keyed by it
(``abstract_eval_rules``, ``lowering_rules``, the JVP, transpose and batching tables), filled by
the file of its family (families/): arithmetic, comparisons, ``select`` and conversions in
arithmetic.py, shapes in shapes.py, reductions in reductions.py, ``dot_general`` in
dot_general.py. This module holds what those files share: the dtype kinds, the checks of
elementwise operands, and ``elementwise_unary`` / ``elementwise_binary`` (a primitive's shape
rule, and membership of ``ELEMENTWISE``), with ``unary_primitive`` / ``binary_primitive`` to
declare a new one. Primitives are strict like ``jax.lax``: operands of elementwise operations
have equal dtypes and equal shapes, except that rank-0 operands broadcast.

Example: ``add_p.bind(x, y)``; a new elementwise function is declared in its family's file,
``cosh_p = unary_primitive("cosh", FLOATING)``.
"""
from __future__ import annotations

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


def check_kinds(name: str, aval: ShapedArray, kinds: str, what: str) -> None:
    """Raise a TypeError unless ``aval``'s dtype is of one of ``kinds`` (NUMERIC, ...).

    Example: ``check_kinds("sin", aval, *FLOATING)``"""
    if kind(aval.dtype) not in kinds:
        raise TypeError(f"{name} does not accept dtype {aval.dtype.name}; it takes {what}")


NUMERIC = ("iufc", "numbers")
NUMERIC_OR_BOOL = ("biufc", "numbers or booleans")
FLOATING = ("fc", "floating-point or complex numbers")
REAL_FLOATING = ("f", "floating-point numbers")
INTEGER_OR_BOOL = ("biu", "integers or booleans")
INTEGER = ("iu", "integers")
ORDERED = ("biuf", "real numbers or booleans")

# -- elementwise -------------------------------------------------------------------------------

def broadcast_shapes(name: str, avals: Sequence[ShapedArray]) -> tuple:
    """The shape of an elementwise result: the operands' common shape (rank-0 ones broadcast).

    Example: ``broadcast_shapes("add", [x, y])`` is ``x.shape`` when ``y`` is a scalar"""
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


def same_dtypes(name: str, avals: Sequence[ShapedArray]) -> np.dtype:
    """The operands' one dtype, or a TypeError naming ``name`` if they differ.

    Example: ``same_dtypes("select", [on_true, on_false])``"""
    dtype = avals[0].dtype
    for aval in avals[1:]:
        if aval.dtype != dtype:
            names = ", ".join(a.dtype.name for a in avals)
            raise TypeError(f"{name} requires arguments to have the same dtypes, got {names}")
    return dtype


# The elementwise primitives (the families that define more add theirs): eager mode runs them
# on flat views, and batching and partitioning have one rule for all of them.
ELEMENTWISE: set = set()


def elementwise_unary(prim: Primitive, kinds: tuple[str, str], out_dtype=None) -> Primitive:
    """``prim`` made an elementwise primitive of one operand of the dtype ``kinds`` (NUMERIC,
    ...), with its abstract evaluation: the operand's aval (``out_dtype(dtype)`` gives another
    dtype).

    Example: ``elementwise_unary(neg_p, NUMERIC)``"""
    name = prim.name
    ELEMENTWISE.add(prim)

    def rule(x: ShapedArray, **params) -> ShapedArray:
        check_kinds(name, x, *kinds)
        if out_dtype is None:
            return x
        dtype = out_dtype(x.dtype)
        return ShapedArray(x.shape, dtype, x.weak_type and dtype == x.dtype)

    abstract_eval_rules[prim] = rule
    return prim


def unary_primitive(name: str, kinds: tuple[str, str], out_dtype=None) -> Primitive:
    """A new elementwise primitive of one operand (``elementwise_unary``).

    Example: ``sin_p = unary_primitive("sin", FLOATING)``"""
    return elementwise_unary(Primitive(name), kinds, out_dtype)


def elementwise_binary(prim: Primitive, kinds: tuple[str, str],
                       compare: bool = False) -> Primitive:
    """``prim`` made an elementwise primitive of two operands of one dtype (a rank-0 one
    broadcasts), with its abstract evaluation; ``compare``: its result is boolean.

    Example: ``elementwise_binary(add_p, NUMERIC)``"""
    name = prim.name
    ELEMENTWISE.add(prim)

    def rule(x: ShapedArray, y: ShapedArray) -> ShapedArray:
        check_kinds(name, x, *kinds)
        dtype = same_dtypes(name, [x, y])
        shape = broadcast_shapes(name, [x, y])
        if compare:
            return ShapedArray(shape, _BOOL, False)
        return ShapedArray(shape, dtype, x.weak_type and y.weak_type)

    abstract_eval_rules[prim] = rule
    return prim


def binary_primitive(name: str, kinds: tuple[str, str], compare: bool = False) -> Primitive:
    """A new elementwise primitive of two operands (``elementwise_binary``).

    Example: ``atan2_p = binary_primitive("atan2", REAL_FLOATING)``"""
    return elementwise_binary(Primitive(name), kinds, compare)


# -- the core primitives ---------------------------------------------------------------------------
# Their names only: every rule of theirs, the shape rule too, is their family's.

# arithmetic.py (the mathematical functions, exp ... atan2, are math_functions.py's)
neg_p = Primitive("neg")
not_p = Primitive("not")
add_p = Primitive("add")
sub_p = Primitive("sub")
mul_p = Primitive("mul")
div_p = Primitive("div")
max_p = Primitive("max")
min_p = Primitive("min")
and_p = Primitive("and")
or_p = Primitive("or")
xor_p = Primitive("xor")
shift_left_p = Primitive("shift_left")
shift_right_arithmetic_p = Primitive("shift_right_arithmetic")
shift_right_logical_p = Primitive("shift_right_logical")
eq_p = Primitive("eq")
ne_p = Primitive("ne")
lt_p = Primitive("lt")
le_p = Primitive("le")
gt_p = Primitive("gt")
ge_p = Primitive("ge")
select_p = Primitive("select")
convert_element_type_p = Primitive("convert_element_type")

# shapes.py
broadcast_in_dim_p = Primitive("broadcast_in_dim")
reshape_p = Primitive("reshape")
transpose_p = Primitive("transpose")
rev_p = Primitive("rev")
slice_p = Primitive("slice")
dynamic_slice_p = Primitive("dynamic_slice")
dynamic_update_slice_p = Primitive("dynamic_update_slice")
concatenate_p = Primitive("concatenate")
pad_p = Primitive("pad")
iota_p = Primitive("iota")

# reductions.py
reduce_sum_p = Primitive("reduce_sum")
reduce_prod_p = Primitive("reduce_prod")
reduce_max_p = Primitive("reduce_max")
reduce_min_p = Primitive("reduce_min")
reduce_and_p = Primitive("reduce_and")
reduce_or_p = Primitive("reduce_or")
argmax_p = Primitive("argmax")
argmin_p = Primitive("argmin")

# dot_general.py
dot_general_p = Primitive("dot_general")
