"""Collectives over a named axis, each primitive with every rule: abstract evaluation, the
lowering that reports an unbound axis, batching (``vmap``), SPMD (``pmap``) and derivatives.

* ``psum`` / ``pmax`` / ``pmin [axis_name] x``: the sum (max, min) over the axis; every
  example (device) gets it.
* ``axis_index [axis_name]``: the example's (device's) position along the axis.
* ``all_gather [axis_name, all_gather_dimension, tiled, axis_size] x``: every example's
  ``x``, stacked along a new axis (``tiled``: concatenated along an existing one).
* ``ppermute [axis_name, perm] x``: ``x`` sent from each ``perm`` source to its destination.

``axis_name`` is always a tuple of names. Under ``vmap`` (batching rules) a collective over the
vmap's axis becomes an ordinary computation along the batch axis; under ``pmap`` (spmd rules,
``spmd.spmd_eval``) each device's result is computed on that device from the other devices'
values moved there with ``spmd.transfer``. A collective whose axis no enclosing vmap or pmap
binds reaches the lowering, which says so.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import primitives as P
from .ad import Zero, instantiate, jvp_rules, transpose_rules
from .batching import BatchAxis, batching_rules, named_axis_params, to_front
from .ir import ShapedArray
from .lower import lowering_rules
from .spmd import SpmdAxis, spmd_rules, stack, take, transfer
from .trace import Primitive, TypedScalar, abstract_eval_rules, get_aval


# -- helpers ----------------------------------------------------------------------------------------

def _unbound_lowering(name: str) -> Callable:
    """A collective that reaches the lowering names an axis no vmap or pmap around it binds."""
    def lowering(ctx, *operands, **params):
        raise NameError(f"unbound axis name: {params['axis_name'][0]!r} ({name} outside the "
                        f"vmap or pmap that defines it)")
    return lowering


def _others(axis_name: tuple, name: Any) -> tuple:
    """The names of ``axis_name`` other than ``name``."""
    return tuple(n for n in axis_name if n != name)


def _one_axis(axis_name: tuple, what: str) -> None:
    if len(axis_name) != 1:
        raise NotImplementedError(f"{what} over several axes at once ({axis_name}) is not "
                                  f"supported yet")


def _times_size(x: Any, size: int) -> Any:
    aval = get_aval(x)
    return P.mul_p.bind(x, TypedScalar(size, aval.dtype, aval.weak_type))


def _zeros_like(x: Any) -> Any:
    aval = get_aval(x)
    zero = TypedScalar(0, aval.dtype, aval.weak_type)
    return P.broadcast_in_dim_p.bind(zero, shape=aval.shape, broadcast_dimensions=())


def _linear_jvp(prim: Primitive) -> Callable:
    """The JVP of a collective linear in its operand: the same collective of the tangent."""
    def rule(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        return [prim.bind(x, **params)], [prim.bind(instantiate(t), **params)]
    return rule


# -- psum, pmax, pmin -------------------------------------------------------------------------------

def _reduction_primitive(name: str, reduce: Primitive, combine: Primitive,
                         unbatched: Callable) -> Primitive:
    """A reduction over a named axis: under vmap ``reduce`` along the batch axis (``unbatched``
    for an operand every example shares), under pmap ``combine`` of the devices' values."""
    prim = Primitive(name)
    abstract_eval_rules[prim] = lambda x, *, axis_name: x
    named_axis_params[prim] = "axis_name"
    lowering_rules[prim] = _unbound_lowering(name)

    def batched(axis: BatchAxis, values, dims, *, axis_name):
        (x,), (d,) = values, dims
        if axis.name not in axis_name:  # another (outer) vmap's axis: elementwise here
            return [prim.bind(x, axis_name=axis_name)], [d]
        out = unbatched(x, axis.size) if d is None else reduce.bind(x, axes=(d,))
        rest = _others(axis_name, axis.name)
        if rest:
            out = prim.bind(out, axis_name=rest)
        return [out], [None]

    def spmd(axis: SpmdAxis, per_device, *, axis_name):
        # Every device reduces all devices' values moved to it, in device order, so that
        # every device computes the same operations on the same values: bit-identical results.
        values = [ins[0] for ins in per_device]
        if isinstance(values[0], TypedScalar):
            # A constant, the same on every device (pmean's count, psum(1)).
            outs = [unbatched(values[0], axis.size)] * axis.size
        else:
            outs = []
            for i in range(axis.size):
                moved = [values[j] if j == i else transfer(values[j], i)
                         for j in range(axis.size)]
                total = moved[0]
                for value in moved[1:]:
                    total = combine.bind(total, value)
                outs.append(total)
        rest = _others(axis_name, axis.name)
        if rest:  # the other names are vmap axes inside the pmap
            outs = [prim.bind(o, axis_name=rest) for o in outs]
        return [[o] for o in outs]

    batching_rules[prim] = batched
    spmd_rules[prim] = spmd
    return prim


psum_p = _reduction_primitive("psum", P.reduce_sum_p, P.add_p, _times_size)
pmax_p = _reduction_primitive("pmax", P.reduce_max_p, P.max_p, lambda x, size: x)
pmin_p = _reduction_primitive("pmin", P.reduce_min_p, P.min_p, lambda x, size: x)

# psum is linear, and its transpose is psum again: each example's input reaches every
# example's output, so each input's cotangent is the sum of all the outputs' cotangents.
jvp_rules[psum_p] = _linear_jvp(psum_p)
transpose_rules[psum_p] = lambda ct, x, *, axis_name: [
    None if isinstance(ct, Zero) else psum_p.bind(ct, axis_name=axis_name)]


# -- axis_index -------------------------------------------------------------------------------------
# The position along a named axis: in a vmap, each example's index (an iota along the batch
# axis); in a pmap, the device's.

axis_index_p = Primitive("axis_index")
abstract_eval_rules[axis_index_p] = lambda *, axis_name: ShapedArray((), np.dtype(np.int32))
named_axis_params[axis_index_p] = "axis_name"
lowering_rules[axis_index_p] = _unbound_lowering("axis_index")


def _axis_index_batched(axis: BatchAxis, values, dims, *, axis_name):
    if axis.name not in axis_name:
        return [axis_index_p.bind(axis_name=axis_name)], [None]
    return [P.iota_p.bind(dtype=np.dtype(np.int32), shape=(axis.size,), dimension=0)], [0]


def _axis_index_spmd(axis: SpmdAxis, per_device, *, axis_name):
    if _others(axis_name, axis.name):
        raise NotImplementedError("pmap: axis_index over several axes is not supported yet")
    return [[TypedScalar(i, np.dtype(np.int32), False)] for i in range(axis.size)]


batching_rules[axis_index_p] = _axis_index_batched
spmd_rules[axis_index_p] = _axis_index_spmd


# -- all_gather -------------------------------------------------------------------------------------

all_gather_p = Primitive("all_gather")
named_axis_params[all_gather_p] = "axis_name"
lowering_rules[all_gather_p] = _unbound_lowering("all_gather")


def _all_gather_abstract(x: ShapedArray, *, axis_name, all_gather_dimension: int, tiled: bool,
                         axis_size: int) -> ShapedArray:
    shape = list(x.shape)
    if tiled:
        if not shape:
            raise TypeError("all_gather(tiled=True) needs an operand of rank at least 1")
        shape[all_gather_dimension] *= axis_size
    else:
        shape.insert(all_gather_dimension, axis_size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _gathered(pieces: Sequence[Any], dimension: int, tiled: bool) -> Any:
    """All examples' (devices') values joined along ``dimension``: a new axis, or (``tiled``)
    the existing one."""
    if not tiled:
        return stack(pieces, dimension)
    if len(pieces) == 1:
        return pieces[0]
    return P.concatenate_p.bind(*pieces, dimension=dimension)


def _all_gather_batched(axis: BatchAxis, values, dims, *, axis_name, all_gather_dimension,
                        tiled, axis_size):
    (x,), (d,) = values, dims
    if axis.name not in axis_name:   # another (outer) axis: per example, batch axis in front
        x = to_front(x, d, axis.size)
        return [all_gather_p.bind(x, axis_name=axis_name, axis_size=axis_size, tiled=tiled,
                                  all_gather_dimension=all_gather_dimension + 1)], [0]
    _one_axis(axis_name, "all_gather")
    x = to_front(x, d, axis.size)
    pieces = [take(x, 0, k) for k in range(axis.size)]
    return [_gathered(pieces, all_gather_dimension, tiled)], [None]


def _all_gather_spmd(axis: SpmdAxis, per_device, *, axis_name, all_gather_dimension, tiled,
                     axis_size):
    _one_axis(axis_name, "all_gather")
    values = [ins[0] for ins in per_device]
    return [[_gathered([v if j == i else transfer(v, i) for j, v in enumerate(values)],
                       all_gather_dimension, tiled)] for i in range(axis.size)]


abstract_eval_rules[all_gather_p] = _all_gather_abstract
batching_rules[all_gather_p] = _all_gather_batched
spmd_rules[all_gather_p] = _all_gather_spmd


# -- ppermute ---------------------------------------------------------------------------------------

ppermute_p = Primitive("ppermute")
abstract_eval_rules[ppermute_p] = lambda x, *, axis_name, perm: x
named_axis_params[ppermute_p] = "axis_name"
lowering_rules[ppermute_p] = _unbound_lowering("ppermute")


def _sources(perm: tuple, size: int) -> dict:
    """For each destination of a ``ppermute``, its source."""
    sources = {}
    for src, dst in perm:
        if not (0 <= src < size and 0 <= dst < size) or dst in sources:
            raise ValueError(f"ppermute perm {perm} must be (source, destination) pairs of "
                             f"distinct destinations within an axis of size {size}")
        sources[dst] = src
    if len(set(sources.values())) != len(sources):
        raise ValueError(f"ppermute perm {perm} sends from one source twice")
    return sources


def _ppermute_batched(axis: BatchAxis, values, dims, *, axis_name, perm):
    (x,), (d,) = values, dims
    if axis.name not in axis_name:
        return [ppermute_p.bind(x, axis_name=axis_name, perm=perm)], [d]
    _one_axis(axis_name, "ppermute")
    x = to_front(x, d, axis.size)
    sources = _sources(perm, axis.size)
    rows = [take(x, 0, k) for k in range(axis.size)]
    out = [rows[sources[k]] if k in sources else _zeros_like(rows[k]) for k in range(axis.size)]
    return [stack(out, 0)], [0]


def _ppermute_spmd(axis: SpmdAxis, per_device, *, axis_name, perm):
    _one_axis(axis_name, "ppermute")
    values = [ins[0] for ins in per_device]
    sources = _sources(perm, axis.size)
    outs = []
    for i in range(axis.size):
        src = sources.get(i)
        outs.append([_zeros_like(values[i]) if src is None else
                     values[i] if src == i else transfer(values[src], i)])
    return outs


batching_rules[ppermute_p] = _ppermute_batched
spmd_rules[ppermute_p] = _ppermute_spmd
