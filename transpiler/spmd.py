"""SPMD over several devices (``pmap``) as an IR -> IR transformation.

``spmd_eval`` runs the IR of one device's share of the work (traced once, on one slice of the
mapped axis) for every device in lockstep, emitting into the active trace one copy of each
equation per device. The copies only read their own device's values, so IREE places each on
its device; collectives over the mapped axis (``psum``, ``pmax``, ``axis_index``...) are where
the copies meet: each device's result is computed on that device from the other devices'
values, moved there with ``transfer_p`` (``flow.tensor.transfer`` in the lowered module).

Why transfers and not IREE's collective ops: IREE 3.13's CPU drivers (local-sync, local-task)
do not implement channels; ``flow.collective.all_reduce`` compiles but fails when the module
runs ("UNIMPLEMENTED; collectives not implemented; while invoking native function
hal.channel.create"). And IREE's collectives are one rank per program (MPI style), whereas a
pmap over local devices is one program driving all of them.

Rules live in ``spmd_rules``::

    rule(values_per_device, **params) -> outputs_per_device   (one primitive output each)

where ``values_per_device[i]`` is device ``i``'s value of the operand.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Optional, Sequence

import numpy as np

from .batching import (BatchAxis, _names_axis, axis_index_p, batching_rules, named_axis_params,
                       pmax_p, pmin_p, psum_p)
from .ir import ClosedIR, Literal, ShapedArray, Var
from .lower import device_promise, lowering_rules, op
from .source import where
from .trace import Primitive, TypedScalar, abstract_eval_rules, bind, get_aval, located
from . import primitives as P

# -- moving a value to another device --------------------------------------------------------------

transfer_p = Primitive("device_transfer")
abstract_eval_rules[transfer_p] = lambda x, *, device: x


def _transfer_lowering(ctx, x, *, device: int):
    # IREE moves the value to the device (on the CPU, where all memory is the host's, the
    # producer writes into a buffer both devices can use: no copy was made in the module
    # compiled for tests, only a cache flush).
    return [op("flow.tensor.transfer", [x.type], [x], {"target": device_promise(device)}).result]


lowering_rules[transfer_p] = _transfer_lowering


def transfer(x: Any, device: int) -> Any:
    """``x`` moved to device ``device`` of the multi-device program being traced (Python and
    NumPy scalars stay as they are: they are constants of the program, on every device)."""
    if isinstance(x, (TypedScalar, bool, int, float, complex)):
        return x
    return transfer_p.bind(x, device=device)


# -- the interpreter -------------------------------------------------------------------------------

spmd_rules: dict[Primitive, Callable] = {}


class SpmdAxis:
    """The axis a pmap maps over its devices: its size (the device count) and name."""

    __slots__ = ("size", "name")

    def __init__(self, size: int, name: Optional[Hashable]) -> None:
        self.size = size
        self.name = name


def spmd_eval(closed: ClosedIR, inputs: Sequence[Sequence[Any]], axis: SpmdAxis) -> list[list]:
    """Evaluate ``closed`` once per device: ``inputs[i]`` are device ``i``'s inputs, already on
    device ``i`` (``transfer``). Returns each device's outputs, ``outputs[i]``."""
    ir = closed.ir
    n = axis.size
    envs: list[dict[Var, Any]] = [{} for _ in range(n)]
    for i, env in enumerate(envs):
        # A constant the function captured is an input of the whole program on the first
        # device: each device reads its own copy.
        for v, c in zip(ir.const_vars, closed.consts):
            env[v] = transfer(c, i)
        for v, x in zip(ir.in_vars, inputs[i]):
            env[v] = x

    def read(i: int, a) -> Any:
        if isinstance(a, Literal):
            return TypedScalar(a.value, a.aval.dtype, a.aval.weak_type)
        return envs[i][a]

    # (The vmap axis stand-in that _names_axis understands: only the name is read.)
    named = BatchAxis(n, axis.name)
    for eqn in ir.eqns:
        per_device = [[read(i, a) for a in eqn.inputs] for i in range(n)]
        with located(eqn.loc):
            key = named_axis_params.get(eqn.primitive)
            if key is not None and axis.name in eqn.params[key]:
                rule = spmd_rules.get(eqn.primitive)
                if rule is None:
                    raise NotImplementedError(f"pmap does not support {eqn.primitive} over its "
                                              f"axis yet{where(eqn.loc)}")
                outs = rule(axis, per_device, **eqn.params)
            elif axis.name is not None and _names_axis(eqn.primitive, eqn.params, named):
                raise NotImplementedError(
                    f"pmap: a collective over axis {axis.name!r} inside {eqn.primitive} "
                    f"(control flow) is not supported yet; compute it outside the "
                    f"loop or conditional{where(eqn.loc)}")
            else:
                outs = [bind(eqn.primitive, ins, eqn.params) for ins in per_device]
        for i in range(n):
            envs[i].update(zip(eqn.outputs, outs[i]))
    return [[read(i, a) for a in ir.outs] for i in range(n)]


# -- collectives -----------------------------------------------------------------------------------

def _others(axis_name: tuple, axis: SpmdAxis) -> tuple:
    return tuple(name for name in axis_name if name != axis.name)


def _reduction(combine: Primitive, times_size: bool) -> Callable:
    """A rule reducing over the devices with ``combine``: every device adds up (or takes the
    max of) all devices' values moved to it, in device order, so that every device computes
    the same operations on the same values and gets a bit-identical result."""
    def rule(axis: SpmdAxis, per_device, *, axis_name):
        prim = _REDUCTIONS[combine]
        values = [ins[0] for ins in per_device]
        if isinstance(values[0], TypedScalar):
            # A constant, the same on every device (pmean's count, psum(1)).
            x = values[0]
            out = (P.mul_p.bind(x, TypedScalar(axis.size, get_aval(x).dtype, get_aval(x).weak_type))
                   if times_size else x)
            outs = [out] * axis.size
        else:
            outs = []
            for i in range(axis.size):
                moved = [values[j] if j == i else transfer(values[j], i)
                         for j in range(axis.size)]
                total = moved[0]
                for value in moved[1:]:
                    total = combine.bind(total, value)
                outs.append(total)
        rest = _others(axis_name, axis)
        if rest:  # the other names are vmap axes outside the pmap: not supported yet
            outs = [prim.bind(o, axis_name=rest) for o in outs]
        return [[o] for o in outs]
    return rule


_REDUCTIONS = {P.add_p: psum_p, P.max_p: pmax_p, P.min_p: pmin_p}
spmd_rules[psum_p] = _reduction(P.add_p, times_size=True)
spmd_rules[pmax_p] = _reduction(P.max_p, times_size=False)
spmd_rules[pmin_p] = _reduction(P.min_p, times_size=False)


def _axis_index_rule(axis: SpmdAxis, per_device, *, axis_name):
    if _others(axis_name, axis):
        raise NotImplementedError("pmap: axis_index over several axes is not supported yet")
    return [[TypedScalar(i, np.dtype(np.int32), False)] for i in range(axis.size)]


spmd_rules[axis_index_p] = _axis_index_rule


# -- splitting and assembling the mapped axis ------------------------------------------------------

def take(x: Any, axis: int, index: int) -> Any:
    """``x``'s slice ``index`` along ``axis``, without that axis."""
    aval = get_aval(x)
    start = [0] * aval.ndim
    limit = list(aval.shape)
    start[axis], limit[axis] = index, index + 1
    piece = P.slice_p.bind(x, start_indices=tuple(start), limit_indices=tuple(limit),
                           strides=(1,) * aval.ndim)
    shape = aval.shape[:axis] + aval.shape[axis + 1:]
    return P.reshape_p.bind(piece, new_sizes=shape)


def stack(pieces: Sequence[Any], axis: int) -> Any:
    """``pieces`` (of one shape) stacked along a new axis ``axis``."""
    aval = get_aval(pieces[0])
    shape = aval.shape[:axis] + (1,) + aval.shape[axis:]
    kept = tuple(d for d in range(len(shape)) if d != axis)
    expanded = [P.broadcast_in_dim_p.bind(p, shape=shape, broadcast_dimensions=kept)
                for p in pieces]
    if len(expanded) == 1:
        return expanded[0]
    return P.concatenate_p.bind(*expanded, dimension=axis)


# -- all_gather and ppermute (vmap and pmap) -------------------------------------------------------

all_gather_p = Primitive("all_gather")
ppermute_p = Primitive("ppermute")


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


abstract_eval_rules[all_gather_p] = _all_gather_abstract
abstract_eval_rules[ppermute_p] = lambda x, *, axis_name, perm: x
named_axis_params[all_gather_p] = "axis_name"
named_axis_params[ppermute_p] = "axis_name"


def _unbound_lowering(name: str) -> Callable:
    def lowering(ctx, x, **params):
        raise NameError(f"unbound axis name: {params['axis_name'][0]!r} ({name} outside the "
                        f"vmap or pmap that defines it)")
    return lowering


lowering_rules[all_gather_p] = _unbound_lowering("all_gather")
lowering_rules[ppermute_p] = _unbound_lowering("ppermute")


def _one_axis(axis_name: tuple, what: str) -> None:
    if len(axis_name) != 1:
        raise NotImplementedError(f"{what} over several axes at once ({axis_name}) is not "
                                  f"supported yet")


def _gathered(pieces: Sequence[Any], dimension: int, tiled: bool) -> Any:
    """All examples' (devices') values joined along ``dimension``: a new axis, or (``tiled``)
    the existing one."""
    if not tiled:
        return stack(pieces, dimension)
    if len(pieces) == 1:
        return pieces[0]
    return P.concatenate_p.bind(*pieces, dimension=dimension)


def _zeros_like(x: Any) -> Any:
    aval = get_aval(x)
    zero = TypedScalar(0, aval.dtype, aval.weak_type)
    return P.broadcast_in_dim_p.bind(zero, shape=aval.shape, broadcast_dimensions=())


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


def _all_gather_spmd(axis: SpmdAxis, per_device, *, axis_name, all_gather_dimension, tiled,
                     axis_size):
    _one_axis(axis_name, "all_gather")
    values = [ins[0] for ins in per_device]
    return [[_gathered([v if j == i else transfer(v, i) for j, v in enumerate(values)],
                       all_gather_dimension, tiled)] for i in range(axis.size)]


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


spmd_rules[all_gather_p] = _all_gather_spmd
spmd_rules[ppermute_p] = _ppermute_spmd


def _all_gather_batched(axis: BatchAxis, values, dims, *, axis_name, all_gather_dimension,
                        tiled, axis_size):
    from .batching import to_front
    (x,), (d,) = values, dims
    if axis.name not in axis_name:   # another (outer) axis: per example, batch axis in front
        x = to_front(x, d, axis.size)
        return [all_gather_p.bind(x, axis_name=axis_name, axis_size=axis_size, tiled=tiled,
                                  all_gather_dimension=all_gather_dimension + 1)], [0]
    _one_axis(axis_name, "all_gather")
    x = to_front(x, d, axis.size)
    pieces = [take(x, 0, k) for k in range(axis.size)]
    return [_gathered(pieces, all_gather_dimension, tiled)], [None]


def _ppermute_batched(axis: BatchAxis, values, dims, *, axis_name, perm):
    from .batching import to_front
    (x,), (d,) = values, dims
    if axis.name not in axis_name:
        return [ppermute_p.bind(x, axis_name=axis_name, perm=perm)], [d]
    _one_axis(axis_name, "ppermute")
    x = to_front(x, d, axis.size)
    sources = _sources(perm, axis.size)
    rows = [take(x, 0, k) for k in range(axis.size)]
    out = [rows[sources[k]] if k in sources else _zeros_like(rows[k]) for k in range(axis.size)]
    return [stack(out, 0)], [0]


batching_rules[all_gather_p] = _all_gather_batched
batching_rules[ppermute_p] = _ppermute_batched
