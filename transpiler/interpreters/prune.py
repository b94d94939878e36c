"""Dead-code removal before lowering, including the carries of loops that nothing needs.

A loop carry whose result is unused, and which no needed carry reads, is removed from the loop
along with its update. Besides saving work, this keeps away an IREE 3.13 miscompile: with the
async execution model, a while loop whose body computes an unused carry (an LU factorization's
row permutation, when only the factors are returned) returned its input unchanged.
"""
from __future__ import annotations

from typing import Callable, Sequence

from ..core.ir import IR, Eqn, Var
from ..core.trace import Primitive, has_effects

# How a primitive with sub-IRs (a loop) drops what is not needed: ``rule(eqn, used) -> eqn``,
# ``used[i]`` whether the equation's output ``i`` is needed. Families register theirs
# (control_flow.py: while and scan).
pruning_rules: dict[Primitive, Callable[[Eqn, list], Eqn]] = {}


def prune_ir(ir: IR) -> IR:
    """``ir`` without equations its outputs do not need (effects are kept), and with loops cut
    down to the carries and outputs that are needed."""
    return _prune(ir, [True] * len(ir.outs))


def _prune(ir: IR, needed_outs: Sequence[bool]) -> IR:
    live = {id(a) for a, n in zip(ir.outs, needed_outs) if n and isinstance(a, Var)}
    kept = []
    for eqn in reversed(ir.eqns):
        used = [id(v) in live for v in eqn.outputs]
        effects = has_effects([eqn])
        if not any(used) and not effects:
            continue
        pruner = pruning_rules.get(eqn.primitive)
        if pruner is not None:
            eqn = pruner(eqn, used)
        kept.append(eqn)
        live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    kept.reverse()
    return IR(ir.const_vars, ir.in_vars, kept, ir.outs)


def reads(ir: IR) -> set:
    """ids of the variables the equations and outputs of ``ir`` read."""
    read = {id(a) for e in ir.eqns for a in e.inputs if isinstance(a, Var)}
    read |= {id(a) for a in ir.outs if isinstance(a, Var)}
    return read


def pick(items: Sequence, mask: Sequence[bool]) -> list:
    return [x for x, m in zip(items, mask) if m]


def needed_carries(body: IR, carry_vars: Sequence[Var], needed: list[bool],
                   n_extra_outs: int = 0, extra_needed: Sequence[bool] = (),
                   also_read: set = frozenset()) -> tuple[IR, list[bool]]:
    """Which carries are needed (a fixed point: needed after the loop, read by ``also_read``
    (the condition), or read by the update of a needed carry or a needed extra output), and the
    body pruned to them. Body outputs are the carries then ``n_extra_outs`` extra outputs."""
    needed = [n or id(v) in also_read for n, v in zip(needed, carry_vars)]
    while True:
        pruned = _prune(body, needed + list(extra_needed))
        read = reads(pruned)
        new = [n or id(v) in read for n, v in zip(needed, carry_vars)]
        if new == needed:
            return pruned, needed
        needed = new
