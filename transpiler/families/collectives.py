"""Collectives over a named axis, each primitive with every rule: abstract evaluation, the
lowering that reports an unbound axis, batching (``vmap``), SPMD (``pmap``) and derivatives.

* ``psum`` / ``pmax`` / ``pmin [axis_name] x``: the sum (max, min) over the axis; every
  example (device) gets it.
* ``axis_index [axis_name]``: the example's (device's) position along the axis.
* ``all_gather [axis_name, all_gather_dimension, tiled, axis_size] x``: every example's
  ``x``, stacked along a new axis (``tiled``: concatenated along an existing one).
* ``ppermute [axis_name, perm] x``: ``x`` sent from each ``perm`` source to its destination.
* ``psum_scatter [axis_name, scatter_dimension, tiled, axis_size] x``: the sum over the axis,
  of which example ``i`` keeps piece ``i`` along ``scatter_dimension`` (a reduce-scatter).
* ``all_to_all [axis_name, split_axis, concat_axis, tiled, axis_size] x``: example ``i`` gets
  piece ``i`` (along ``split_axis``) of every example's ``x``, joined along ``concat_axis``.

``axis_name`` is always a tuple of names. Under ``vmap`` (batching rules) a collective over the
vmap's axis becomes an ordinary computation along the batch axis; under ``pmap`` (spmd rules,
``spmd.spmd_eval``) each device's result is computed on that device from the other devices'
values moved there with ``spmd.transfer``. A collective whose axis no enclosing vmap or pmap
binds reaches the lowering, which says so.

Derivatives (for ``grad`` inside the vmap or pmap; ``grad`` of a ``vmap`` differentiates the
batched computation instead) are JAX's: every collective but ``pmax``/``pmin`` is linear,
and the transposes pair them up: psum with psum (each example's input reaches every
example's output, so its cotangent sums theirs), all_gather with psum_scatter, ppermute with
the inverse ppermute, all_to_all with the all_to_all that splits where it concatenated.
Differentiating through any of them under ``vmap(grad(f), axis_name=...)`` gives, for each
example, the derivative of the sum of every example's ``f`` with respect to its input.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import Primitive, TypedScalar, abstract_eval_rules, get_aval
from ..interpreters.ad import Zero, instantiate, jvp_rules, transpose_rules
from ..interpreters.batching import BatchAxis, batching_rules, named_axis_params, to_front
from ..backend.lower import lowering_rules
from ..backend.spmd import SpmdAxis, spmd_rules, stack, take, transfer


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


def _extremum_jvp(prim: Primitive) -> Callable:
    """pmax's (pmin's) JVP: the tangent of the examples whose value is the result, averaged
    over ties. JAX 0.10.2 defines no derivative for pmax/pmin (it raises); this is its rule
    for reduce_max/reduce_min, so ``vmap(grad(f))`` agrees with ``grad`` of the batched
    computation, where pmax is a reduce_max along the batch axis."""
    def rule(primals, tangents, *, axis_name):
        (x,), (t,) = primals, tangents
        result = prim.bind(x, axis_name=axis_name)
        dtype = get_aval(t).dtype
        at_extremum = P.convert_element_type_p.bind(P.eq_p.bind(x, result), new_dtype=dtype,
                                                    weak_type=False)
        count = psum_p.bind(at_extremum, axis_name=axis_name)
        total = psum_p.bind(P.mul_p.bind(t, at_extremum), axis_name=axis_name)
        return [result], [P.div_p.bind(total, count)]
    return rule


jvp_rules[pmax_p] = _extremum_jvp(pmax_p)
jvp_rules[pmin_p] = _extremum_jvp(pmin_p)


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


def _all_gather_transpose(ct, x, *, axis_name, all_gather_dimension, tiled, axis_size):
    # Example k's input went to piece k of every example's output: its cotangent is the sum
    # of those pieces' cotangents, a reduce-scatter.
    if isinstance(ct, Zero):
        return [None]
    return [psum_scatter_p.bind(ct, axis_name=axis_name, scatter_dimension=all_gather_dimension,
                                tiled=tiled, axis_size=axis_size)]


abstract_eval_rules[all_gather_p] = _all_gather_abstract
batching_rules[all_gather_p] = _all_gather_batched
spmd_rules[all_gather_p] = _all_gather_spmd
jvp_rules[all_gather_p] = _linear_jvp(all_gather_p)
transpose_rules[all_gather_p] = _all_gather_transpose


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


def _ppermute_transpose(ct, x, *, axis_name, perm):
    # Each destination's cotangent goes back to its source; a source nothing was sent from
    # gets none (zeros, as ppermute gives a destination nothing is sent to).
    if isinstance(ct, Zero):
        return [None]
    return [ppermute_p.bind(ct, axis_name=axis_name, perm=tuple((d, s) for s, d in perm))]


batching_rules[ppermute_p] = _ppermute_batched
spmd_rules[ppermute_p] = _ppermute_spmd
jvp_rules[ppermute_p] = _linear_jvp(ppermute_p)
transpose_rules[ppermute_p] = _ppermute_transpose


# -- pieces along an axis (psum_scatter, all_to_all) -------------------------------------------------

def _piece(x: Any, dimension: int, index: int, count: int, tiled: bool) -> Any:
    """Piece ``index`` of ``count`` along ``dimension``: the slice ``index`` without that axis,
    or (``tiled``) the ``index``-th of ``count`` equal blocks."""
    if not tiled:
        return take(x, dimension, index)
    aval = get_aval(x)
    width = aval.shape[dimension] // count
    start = [0] * aval.ndim
    limit = list(aval.shape)
    start[dimension], limit[dimension] = index * width, (index + 1) * width
    return P.slice_p.bind(x, start_indices=tuple(start), limit_indices=tuple(limit),
                          strides=(1,) * aval.ndim)


def _split(x: Any, dimension: int, count: int) -> Any:
    """``x`` with axis ``dimension`` (of size count * m) split into two, (count, m)."""
    shape = get_aval(x).shape
    new = shape[:dimension] + (count, shape[dimension] // count) + shape[dimension + 1:]
    return P.reshape_p.bind(x, new_sizes=new)


def _check_pieces(what: str, size: int, count: int, tiled: bool) -> None:
    if tiled and size % count:
        raise TypeError(f"{what} (tiled=True): the dimension's size {size} is not divisible "
                        f"by the axis size {count}")
    if not tiled and size != count:
        raise TypeError(f"{what} (tiled=False): the dimension's size {size} must equal the "
                        f"axis size {count}")


# -- psum_scatter -----------------------------------------------------------------------------------

psum_scatter_p = Primitive("psum_scatter")
named_axis_params[psum_scatter_p] = "axis_name"
lowering_rules[psum_scatter_p] = _unbound_lowering("psum_scatter")


def _psum_scatter_abstract(x: ShapedArray, *, axis_name, scatter_dimension: int, tiled: bool,
                           axis_size: int) -> ShapedArray:
    if x.ndim == 0:
        raise TypeError("psum_scatter needs an operand of rank at least 1")
    shape = list(x.shape)
    _check_pieces("psum_scatter", shape[scatter_dimension], axis_size, tiled)
    if tiled:
        shape[scatter_dimension] //= axis_size
    else:
        del shape[scatter_dimension]
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _psum_scatter_batched(axis: BatchAxis, values, dims, *, axis_name, scatter_dimension, tiled,
                          axis_size):
    (x,), (d,) = values, dims
    if axis.name not in axis_name:   # another (outer) axis: per example, batch axis in front
        x = to_front(x, d, axis.size)
        return [psum_scatter_p.bind(x, axis_name=axis_name, scatter_dimension=scatter_dimension
                                    + 1, tiled=tiled, axis_size=axis_size)], [0]
    _one_axis(axis_name, "psum_scatter")
    # The sum over the examples, whose pieces along scatter_dimension are the examples'
    # results: that axis (split in two when tiled) is the batch axis.
    total = _times_size(x, axis.size) if d is None else P.reduce_sum_p.bind(x, axes=(d,))
    if tiled:
        total = _split(total, scatter_dimension, axis.size)
    return [total], [scatter_dimension]


def _psum_scatter_spmd(axis: SpmdAxis, per_device, *, axis_name, scatter_dimension, tiled,
                       axis_size):
    _one_axis(axis_name, "psum_scatter")
    values = [ins[0] for ins in per_device]
    outs = []
    for i in range(axis.size):
        # Each device cuts out piece i where its value lives, so only that piece moves to
        # device i, which adds them up in device order.
        pieces = [_piece(v, scatter_dimension, i, axis.size, tiled) for v in values]
        total = None
        for j, p in enumerate(pieces):
            p = p if j == i else transfer(p, i)
            total = p if total is None else P.add_p.bind(total, p)
        outs.append([total])
    return outs


def _psum_scatter_transpose(ct, x, *, axis_name, scatter_dimension, tiled, axis_size):
    # Piece i of example k's input reached only example i's output: example k's cotangent is
    # every example's output cotangent, gathered.
    if isinstance(ct, Zero):
        return [None]
    return [all_gather_p.bind(ct, axis_name=axis_name, all_gather_dimension=scatter_dimension,
                              tiled=tiled, axis_size=axis_size)]


abstract_eval_rules[psum_scatter_p] = _psum_scatter_abstract
batching_rules[psum_scatter_p] = _psum_scatter_batched
spmd_rules[psum_scatter_p] = _psum_scatter_spmd
jvp_rules[psum_scatter_p] = _linear_jvp(psum_scatter_p)
transpose_rules[psum_scatter_p] = _psum_scatter_transpose


# -- all_to_all -------------------------------------------------------------------------------------

all_to_all_p = Primitive("all_to_all")
named_axis_params[all_to_all_p] = "axis_name"
lowering_rules[all_to_all_p] = _unbound_lowering("all_to_all")


def _all_to_all_abstract(x: ShapedArray, *, axis_name, split_axis: int, concat_axis: int,
                         tiled: bool, axis_size: int) -> ShapedArray:
    if x.ndim == 0:
        raise TypeError("all_to_all needs an operand of rank at least 1")
    shape = list(x.shape)
    _check_pieces("all_to_all's split_axis", shape[split_axis], axis_size, tiled)
    if tiled:
        shape[split_axis] //= axis_size
        shape[concat_axis] *= axis_size
    else:
        del shape[split_axis]
        shape.insert(concat_axis, axis_size)
    return ShapedArray(tuple(shape), x.dtype, x.weak_type)


def _all_to_all_batched(axis: BatchAxis, values, dims, *, axis_name, split_axis, concat_axis,
                        tiled, axis_size):
    (x,), (d,) = values, dims
    if axis.name not in axis_name:   # another (outer) axis: per example, batch axis in front
        x = to_front(x, d, axis.size)
        return [all_to_all_p.bind(x, axis_name=axis_name, split_axis=split_axis + 1,
                                  concat_axis=concat_axis + 1, tiled=tiled,
                                  axis_size=axis_size)], [0]
    _one_axis(axis_name, "all_to_all")
    # With the examples in front, axis 0 is the source example j; piece i along split_axis
    # goes to example i. One transpose makes i the batch axis and puts j where it is
    # concatenated (a new axis, or merged with concat_axis when tiled).
    n = axis.size
    x = to_front(x, d, n)
    rank = get_aval(x).ndim - 1
    if not tiled:
        kept = [k + 1 for k in range(rank) if k != split_axis]
        kept.insert(concat_axis, 0)
        return [P.transpose_p.bind(x, permutation=(split_axis + 1,) + tuple(kept))], [0]
    x = _split(x, split_axis + 1, n)   # split_axis + 1 is now i, split_axis + 2 the piece
    position = [k + 1 if k < split_axis else k + 2 for k in range(rank)]
    position.insert(concat_axis, 0)
    moved = P.transpose_p.bind(x, permutation=(split_axis + 1,) + tuple(position))
    shape = get_aval(moved).shape
    merged = (shape[:concat_axis + 1] + (shape[concat_axis + 1] * shape[concat_axis + 2],)
              + shape[concat_axis + 3:])
    return [P.reshape_p.bind(moved, new_sizes=merged)], [0]


def _all_to_all_spmd(axis: SpmdAxis, per_device, *, axis_name, split_axis, concat_axis, tiled,
                     axis_size):
    _one_axis(axis_name, "all_to_all")
    values = [ins[0] for ins in per_device]
    outs = []
    for i in range(axis.size):
        # Each device cuts out piece i where its value lives; device i joins what it gets.
        pieces = [_piece(v, split_axis, i, axis.size, tiled) for v in values]
        moved = [p if j == i else transfer(p, i) for j, p in enumerate(pieces)]
        outs.append([_gathered(moved, concat_axis, tiled)])
    return outs


def _all_to_all_transpose(ct, x, *, axis_name, split_axis, concat_axis, tiled, axis_size):
    # Piece i of example j's input became piece j of example i's output: sending the output
    # cotangents back is the all_to_all that splits along concat_axis and joins along
    # split_axis.
    if isinstance(ct, Zero):
        return [None]
    return [all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                              concat_axis=split_axis, tiled=tiled, axis_size=axis_size)]


abstract_eval_rules[all_to_all_p] = _all_to_all_abstract
batching_rules[all_to_all_p] = _all_to_all_batched
spmd_rules[all_to_all_p] = _all_to_all_spmd
jvp_rules[all_to_all_p] = _linear_jvp(all_to_all_p)
transpose_rules[all_to_all_p] = _all_to_all_transpose
