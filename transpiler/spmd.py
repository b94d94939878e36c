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

Rules live in ``spmd_rules`` (the collectives' in transpiler/collectives.py, with their other
rules)::

    rule(axis, values_per_device, **params) -> outputs_per_device   (a list of outputs each)

where ``values_per_device[i]`` is device ``i``'s list of operands.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Optional, Sequence

import numpy as np

from .batching import BatchAxis, _names_axis, named_axis_params
from .ir import ClosedIR, Var
from .lower import device_promise, lowering_rules, op
from .source import where
from .trace import (Primitive, TypedScalar, abstract_eval_rules, bind, get_aval, located,
                    read_env)
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
        return read_env(envs[i], a)

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
                rule = control_flow_rules.get(eqn.primitive)
                if rule is None:
                    raise NotImplementedError(
                        f"pmap: a collective over axis {axis.name!r} inside {eqn.primitive} "
                        f"is not supported yet; compute it outside{where(eqn.loc)}")
                outs = rule(axis, per_device, **eqn.params)
            else:
                outs = [bind(eqn.primitive, ins, eqn.params) for ins in per_device]
        for i in range(n):
            envs[i].update(zip(eqn.outputs, outs[i]))
    return [[read(i, a) for a in ir.outs] for i in range(n)]


# -- control flow holding collectives ------------------------------------------------------------
# Control flow whose regions hold no collective over the pmap's axis is emitted per device like
# any other equation. One whose regions do cannot: its devices must meet inside it. A ``cond``
# then computes every branch on every device (the collectives in each branch meet in every
# branch) and each device selects the outputs of the branch its own index picks. A ``while``
# becomes one loop over every device's carry: it goes on while any device's condition holds,
# each step runs the body on every device (the collectives meet there) and a device whose
# condition no longer holds keeps its values, which the others' collectives go on seeing --
# vmap's semantics for a batched while loop. (JAX requires the devices to agree on the trip
# count; where they do not, a derivative's backward loop pairs the devices' steps counted
# from each one's end, as vmap's does, which is not the derivative of the lockstep loop.) A
# while loop's derivative (``while_count``, ``counted_loop`` over each device's own range)
# runs the same way. A ``scan`` (``lax.scan``, a ``fori_loop`` over Python ints) becomes such a
# loop over a step counter, each device reading its rows of the scanned arrays and writing its
# per-step outputs into its stacked ones (``dynamic_update_slice``). Workaround: unrolled steps whose
# per-step outputs were stacked by ``concatenate`` (or a chain of ``dynamic_update_slice``)
# made IREE 3.13 fail on the 2-device program when they came from a psum ("op affinity
# #hal.device.affinity<@device_1> is not compatible with the partition affinity
# #hal.device.affinity<@device_0>"); the loop form compiled.


def _closed(region) -> ClosedIR:
    return region if isinstance(region, ClosedIR) else ClosedIR(region, [])


def select_branch(index: Any, options: Sequence[Sequence[Any]]) -> list:
    """The values of ``options[index]`` (each option a list of values of the same types),
    ``index`` clamped into range as ``lax.switch`` does: computed with ``select``s when the
    index is traced, picked when it is a constant.
    Example: ``select_branch(i, [[a0, b0], [a1, b1]])`` -> ``[a_i, b_i]``"""
    if isinstance(index, TypedScalar):
        return list(options[min(max(int(index.value), 0), len(options) - 1)])
    dtype = get_aval(index).dtype
    index = P.min_p.bind(P.max_p.bind(index, TypedScalar(0, dtype, False)),
                         TypedScalar(len(options) - 1, dtype, False))
    chosen = list(options[0])
    for b in range(1, len(options)):
        picked = P.eq_p.bind(index, TypedScalar(b, dtype, False))
        chosen = [P.select_p.bind(picked, mine, other)
                  for mine, other in zip(options[b], chosen)]
    return chosen


def _cond_rule(axis: SpmdAxis, per_device, *, branches: tuple) -> list[list]:
    branch_outs = [spmd_eval(_closed(branch), [ins[1:] for ins in per_device], axis)
                   for branch in branches]
    return [select_branch(per_device[i][0], [outs[i] for outs in branch_outs])
            for i in range(axis.size)]


def _scan_rule(axis: SpmdAxis, per_device, *, body, length: int, reverse: bool,
               num_consts: int, num_carry: int) -> list[list]:
    from .control_flow import bind_while
    n = axis.size
    body = _closed(body)
    consts = [ins[:num_consts] for ins in per_device]
    xs = [ins[num_consts + num_carry:] for ins in per_device]
    y_avals = [a.aval for a in body.ir.outs[num_carry:]]
    int32 = np.dtype(np.int32)
    index = lambda v: TypedScalar(v, int32, False)
    # The loop's carry: the step number, then per device its carry and its stacked ys.
    init = [array_on(index(0), 0)]
    for i in range(n):
        init += [array_on(v, i) for v in per_device[i][num_consts:num_consts + num_carry]]
        init += [transfer_p.bind(P.broadcast_in_dim_p.bind(
            TypedScalar(0, a.dtype, a.weak_type), shape=(length,) + a.shape,
            broadcast_dimensions=()), device=i) for a in y_avals]
    k = num_carry + len(y_avals)

    def not_done(t, *rest):
        return [P.lt_p.bind(t, index(length))]

    def step(t, *rest):
        position = P.sub_p.bind(index(length - 1), t) if reverse else t
        step_in, ys = [], []
        for i in range(n):
            mine = rest[i * k:(i + 1) * k]
            here = transfer_p.bind(position, device=i) if i else position
            rows = [P.reshape_p.bind(P.dynamic_slice_p.bind(
                x, here, *[index(0)] * (get_aval(x).ndim - 1),
                slice_sizes=(1,) + get_aval(x).shape[1:]), new_sizes=get_aval(x).shape[1:])
                for x in xs[i]]
            step_in.append(consts[i] + list(mine[:num_carry]) + rows)
            ys.append((here, mine[num_carry:]))
        step_out = spmd_eval(body, step_in, axis)
        out = [P.add_p.bind(t, index(1))]
        for i in range(n):
            here, stacked = ys[i]
            out += step_out[i][:num_carry]
            for buffer, y in zip(stacked, step_out[i][num_carry:]):
                aval = get_aval(y)
                row = P.broadcast_in_dim_p.bind(y, shape=(1,) + aval.shape,
                                                broadcast_dimensions=tuple(range(1, aval.ndim + 1)))
                out.append(P.dynamic_update_slice_p.bind(buffer, row, here,
                                                         *[index(0)] * aval.ndim))
        return out

    outs = bind_while(not_done, step, init)
    return [list(outs[1 + i * k:1 + (i + 1) * k]) for i in range(n)]


def _lockstep_loop(init: list[list], predicates: Callable, step: Callable) -> list[list]:
    """One while loop over every device's carry (``init[i]``: device ``i``'s): it goes on
    while ``predicates(carries)`` (a boolean per device) holds for any device; each step
    computes ``step(carries)`` (new carries per device) and a device whose predicate does not
    hold keeps its carry."""
    from .control_flow import bind_while
    n, k = len(init), len(init[0])
    flat = [array_on(v, i) for i in range(n) for v in init[i]]

    def per_device_carry(xs) -> list[list]:
        return [list(xs[i * k:(i + 1) * k]) for i in range(n)]

    def any_device(*xs):
        preds = predicates(per_device_carry(xs))
        total = preds[0]
        for i in range(1, n):
            total = P.or_p.bind(total, transfer(preds[i], 0))
        return [total]

    def one_step(*xs):
        carries = per_device_carry(xs)
        preds = predicates(carries)
        new = step(carries)
        return [P.select_p.bind(preds[i], mine, old)
                for i in range(n) for mine, old in zip(new[i], carries[i])]

    outs = bind_while(any_device, one_step, flat)
    return per_device_carry(outs)


def _while_rule(axis: SpmdAxis, per_device, *, cond_ir, body_ir, cond_nconsts: int,
                body_nconsts: int, counted: bool = False) -> list[list]:
    n = axis.size
    cond_consts = [ins[:cond_nconsts] for ins in per_device]
    body_consts = [ins[cond_nconsts:cond_nconsts + body_nconsts] for ins in per_device]
    init = [list(ins[cond_nconsts + body_nconsts:]) for ins in per_device]
    if counted:   # (while_count: each device also counts its own steps)
        init = [carry + [TypedScalar(0, np.dtype(np.int32), False)] for carry in init]
    size = len(init[0]) - counted

    def predicates(carries):
        outs = spmd_eval(_closed(cond_ir), [cond_consts[i] + carries[i][:size]
                                            for i in range(n)], axis)
        return [outs[i][0] for i in range(n)]

    def step(carries):
        new = spmd_eval(_closed(body_ir), [body_consts[i] + carries[i][:size]
                                           for i in range(n)], axis)
        if counted:
            one = TypedScalar(1, np.dtype(np.int32), False)
            new = [new[i] + [P.add_p.bind(carries[i][size], one)] for i in range(n)]
        return new

    return _lockstep_loop(init, predicates, step)


def _counted_loop_rule(axis: SpmdAxis, per_device, *, body, num_consts: int,
                       reverse: bool) -> list[list]:
    """``for i in range(lo, hi)`` (reversed: from hi - 1 down), the bounds possibly different
    per device (a while loop's trip counts, in its derivative): each device steps through its
    own range, keeping its carry once done."""
    n = axis.size
    int32 = np.dtype(np.int32)
    zero, one = TypedScalar(0, int32, False), TypedScalar(1, int32, False)
    lo = [ins[0] for ins in per_device]
    hi = [ins[1] for ins in per_device]
    consts = [ins[2:2 + num_consts] for ins in per_device]
    trips = [P.max_p.bind(P.sub_p.bind(hi[i], lo[i]), zero) for i in range(n)]
    init = [[zero] + list(ins[2 + num_consts:]) for ins in per_device]

    def predicates(carries):
        return [P.lt_p.bind(carries[i][0], trips[i]) for i in range(n)]

    def step(carries):
        index = [P.sub_p.bind(P.sub_p.bind(hi[i], one), carries[i][0]) if reverse
                 else P.add_p.bind(lo[i], carries[i][0]) for i in range(n)]
        new = spmd_eval(_closed(body), [[index[i]] + consts[i] + carries[i][1:]
                                        for i in range(n)], axis)
        return [[P.add_p.bind(carries[i][0], one)] + new[i] for i in range(n)]

    return [carry[1:] for carry in _lockstep_loop(init, predicates, step)]


def array_on(x: Any, device: int) -> Any:
    """``x``, a constant scalar made an array on ``device`` (a loop's carry must be arrays);
    anything else as it is. Example: ``array_on(TypedScalar(0, int32, False), 1)``"""
    if isinstance(x, TypedScalar):
        x = P.broadcast_in_dim_p.bind(x, shape=(), broadcast_dimensions=())
        return transfer_p.bind(x, device=device)
    return x


def _register_control_flow_rules() -> dict:
    import functools
    from .control_flow import cond_p, scan_p, while_p
    from .control_flow_ad import counted_loop_p, while_count_p
    return {cond_p: _cond_rule, scan_p: _scan_rule, while_p: _while_rule,
            while_count_p: functools.partial(_while_rule, counted=True),
            counted_loop_p: _counted_loop_rule}


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


control_flow_rules: dict[Primitive, Callable] = _register_control_flow_rules()


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
