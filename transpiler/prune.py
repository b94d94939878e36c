"""Dead-code removal before lowering, including the carries of loops that nothing needs.

A loop carry whose result is unused, and which no needed carry reads, is removed from the loop
along with its update. Besides saving work, this keeps away an IREE 3.13 miscompile: with the
async execution model, a while loop whose body computes an unused carry (an LU factorization's
row permutation, when only the factors are returned) returned its input unchanged.
"""
from __future__ import annotations

from typing import Sequence

from .control_flow import scan_p, while_p
from .ir import IR, Eqn, Var
from .trace import has_effects


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
        pruner = _pruners.get(eqn.primitive)
        if pruner is not None:
            eqn = pruner(eqn, used)
        kept.append(eqn)
        live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    kept.reverse()
    return IR(ir.const_vars, ir.in_vars, kept, ir.outs)


def _reads(ir: IR) -> set:
    """ids of the variables the equations and outputs of ``ir`` read."""
    read = {id(a) for e in ir.eqns for a in e.inputs if isinstance(a, Var)}
    read |= {id(a) for a in ir.outs if isinstance(a, Var)}
    return read


def _pick(items: Sequence, mask: Sequence[bool]) -> list:
    return [x for x, m in zip(items, mask) if m]


def _needed_carries(body: IR, carry_vars: Sequence[Var], needed: list[bool],
                    n_extra_outs: int = 0, extra_needed: Sequence[bool] = (),
                    also_read: set = frozenset()) -> tuple[IR, list[bool]]:
    """Which carries are needed (a fixed point: needed after the loop, read by ``also_read``
    (the condition), or read by the update of a needed carry or a needed extra output), and the
    body pruned to them. Body outputs are the carries then ``n_extra_outs`` extra outputs."""
    needed = [n or id(v) in also_read for n, v in zip(needed, carry_vars)]
    while True:
        pruned = _prune(body, needed + list(extra_needed))
        reads = _reads(pruned)
        new = [n or id(v) in reads for n, v in zip(needed, carry_vars)]
        if new == needed:
            return pruned, needed
        needed = new


def _prune_while(eqn: Eqn, used: list[bool]) -> Eqn:
    p = eqn.params
    cond_ir, body_ir = p["cond_ir"], p["body_ir"]
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    carry_body = body_ir.in_vars[bn:]
    cond_reads = _reads(cond_ir)
    cond_carry = cond_ir.in_vars[cn:]
    read_by_cond = {id(b) for b, c in zip(carry_body, cond_carry) if id(c) in cond_reads}
    body, needed = _needed_carries(body_ir, carry_body, list(used), also_read=read_by_cond)
    if all(needed):
        return eqn.replace(params=dict(p, body_ir=body))
    body = IR(body.const_vars, body.in_vars[:bn] + _pick(carry_body, needed), body.eqns,
              _pick(body.outs, needed))
    cond = IR(cond_ir.const_vars, cond_ir.in_vars[:cn] + _pick(cond_carry, needed),
              cond_ir.eqns, cond_ir.outs)
    inputs = eqn.inputs[:cn + bn] + _pick(eqn.inputs[cn + bn:], needed)
    return Eqn(while_p, inputs, dict(p, cond_ir=cond, body_ir=body), _pick(eqn.outputs, needed),
               eqn.loc)


def _prune_scan(eqn: Eqn, used: list[bool]) -> Eqn:
    p = eqn.params
    body_ir, nc, ncar = p["body"], p["num_consts"], p["num_carry"]
    carry_vars = body_ir.in_vars[nc:nc + ncar]
    ys_used = used[ncar:]
    body, needed = _needed_carries(body_ir, carry_vars, list(used[:ncar]),
                                   n_extra_outs=len(ys_used), extra_needed=ys_used)
    if all(needed) and all(ys_used):
        return eqn.replace(params=dict(p, body=body))
    in_vars = body.in_vars[:nc] + _pick(carry_vars, needed) + body.in_vars[nc + ncar:]
    body = IR(body.const_vars, in_vars, body.eqns,
              _pick(body.outs[:ncar], needed) + _pick(body.outs[ncar:], ys_used))
    inputs = (eqn.inputs[:nc] + _pick(eqn.inputs[nc:nc + ncar], needed) +
              eqn.inputs[nc + ncar:])
    outputs = _pick(eqn.outputs[:ncar], needed) + _pick(eqn.outputs[ncar:], ys_used)
    return Eqn(scan_p, inputs, dict(p, body=body, num_carry=sum(needed)), outputs, eqn.loc)


_pruners = {while_p: _prune_while, scan_p: _prune_scan}
