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

Rules live in ``spmd_rules`` (the collectives' in transpiler/families/collectives.py, with their
other rules) and, for control flow whose regions hold a collective, ``control_flow_rules``
(control_flow_spmd.py); this module imports no family::

    rule(axis, values_per_device, **params) -> outputs_per_device   (a list of outputs each)

where ``values_per_device[i]`` is device ``i``'s list of operands.
"""
from __future__ import annotations

from typing import Any, Callable, Hashable, Optional, Sequence

from ..core.ir import ClosedIR, Var
from ..core import primitives as P
from ..core.source import where
from ..core.trace import (Primitive, TypedScalar, abstract_eval_rules, bind, get_aval, located,
                          read_env)
from ..interpreters.batching import BatchAxis, _names_axis, named_axis_params
from .lower import device_promise, lowering_rules, op

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


# -- control flow holding collectives (control_flow_spmd.py's rules) ---------------------------

def as_closed(region) -> ClosedIR:
    """``region`` (an IR or a ClosedIR) as a ClosedIR. Example: ``as_closed(params["body"])``"""
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


def array_on(x: Any, device: int) -> Any:
    """``x``, a constant scalar made an array on ``device`` (a loop's carry must be arrays);
    anything else as it is. Example: ``array_on(TypedScalar(0, int32, False), 1)``"""
    if isinstance(x, TypedScalar):
        x = P.broadcast_in_dim_p.bind(x, shape=(), broadcast_dimensions=())
        return transfer_p.bind(x, device=device)
    return x


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


# The rules of primitives whose regions hold a collective over the pmap's axis (control flow's:
# control_flow_spmd.py).
control_flow_rules: dict[Primitive, Callable] = {}


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
