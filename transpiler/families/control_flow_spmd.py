"""The control-flow primitives under ``pmap`` when their regions hold a collective over the
mapped axis (spmd.py runs the others per device, like any equation).

Control flow whose regions hold no collective over the pmap's axis is emitted per device like
any other equation. One whose regions do cannot: its devices must meet inside it. A ``cond``
then computes every branch on every device (the collectives in each branch meet in every
branch) and each device selects the outputs of the branch its own index picks. A ``while``
becomes one loop over every device's carry: it goes on while any device's condition holds, each
step runs the body on every device (the collectives meet there) and a device whose condition no
longer holds keeps its values, which the others' collectives go on seeing -- vmap's semantics
for a batched while loop. (JAX requires the devices to agree on the trip count; where they do
not, a derivative's backward loop pairs the devices' steps counted from each one's end, as
vmap's does, which is not the derivative of the lockstep loop.) A while loop's derivative
(``while_count``, ``counted_loop`` over each device's own range) runs the same way. A ``scan``
(``lax.scan``, a ``fori_loop`` over Python ints) becomes such a loop over a step counter, each
device reading its rows of the scanned arrays and writing its per-step outputs into its stacked
ones (``dynamic_update_slice``). Workaround: unrolled steps whose per-step outputs were stacked
by ``concatenate`` (or a chain of ``dynamic_update_slice``) made IREE 3.13 fail on the 2-device
program when they came from a psum ("op affinity #hal.device.affinity<@device_1> is not
compatible with the partition affinity #hal.device.affinity<@device_0>"); the loop form
compiled.

Example: ``pmap(lambda x: lax.fori_loop(0, 3, lambda i, c: lax.psum(c, "i"), x), "i")`` runs
one loop over both devices' carries, their psums meeting in every step.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ..core import primitives as P
from ..core.trace import TypedScalar, get_aval
from ..backend.spmd import (SpmdAxis, as_closed, array_on, control_flow_rules, select_branch,
                            spmd_eval, transfer, transfer_p)
from .control_flow import bind_while, cond_p, scan_p, while_p
from .control_flow_ad import counted_loop_p, while_count_p


def _cond_spmd(axis: SpmdAxis, per_device, *, branches: tuple) -> list[list]:
    branch_outs = [spmd_eval(as_closed(branch), [ins[1:] for ins in per_device], axis)
                   for branch in branches]
    return [select_branch(per_device[i][0], [outs[i] for outs in branch_outs])
            for i in range(axis.size)]


def _scan_spmd(axis: SpmdAxis, per_device, *, body, length: int, reverse: bool,
               num_consts: int, num_carry: int) -> list[list]:
    n = axis.size
    body = as_closed(body)
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


def _while_spmd(axis: SpmdAxis, per_device, *, cond_ir, body_ir, cond_nconsts: int,
                body_nconsts: int, counted: bool = False) -> list[list]:
    n = axis.size
    cond_consts = [ins[:cond_nconsts] for ins in per_device]
    body_consts = [ins[cond_nconsts:cond_nconsts + body_nconsts] for ins in per_device]
    init = [list(ins[cond_nconsts + body_nconsts:]) for ins in per_device]
    if counted:   # (while_count: each device also counts its own steps)
        init = [carry + [TypedScalar(0, np.dtype(np.int32), False)] for carry in init]
    size = len(init[0]) - counted

    def predicates(carries):
        outs = spmd_eval(as_closed(cond_ir), [cond_consts[i] + carries[i][:size]
                                              for i in range(n)], axis)
        return [outs[i][0] for i in range(n)]

    def step(carries):
        new = spmd_eval(as_closed(body_ir), [body_consts[i] + carries[i][:size]
                                             for i in range(n)], axis)
        if counted:
            one = TypedScalar(1, np.dtype(np.int32), False)
            new = [new[i] + [P.add_p.bind(carries[i][size], one)] for i in range(n)]
        return new

    return _lockstep_loop(init, predicates, step)


def _counted_loop_spmd(axis: SpmdAxis, per_device, *, body, num_consts: int,
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
        new = spmd_eval(as_closed(body), [[index[i]] + consts[i] + carries[i][1:]
                                          for i in range(n)], axis)
        return [[P.add_p.bind(carries[i][0], one)] + new[i] for i in range(n)]

    return [carry[1:] for carry in _lockstep_loop(init, predicates, step)]


control_flow_rules.update({
    cond_p: _cond_spmd, scan_p: _scan_spmd, while_p: _while_spmd,
    while_count_p: functools.partial(_while_spmd, counted=True),
    counted_loop_p: _counted_loop_spmd,
})
