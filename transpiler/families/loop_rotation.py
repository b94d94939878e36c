"""Rotating ``while`` loops so the condition is tested at the end of the body.

``while cond(s): s = body(s)`` becomes ``p = cond(s); while p: s = body(s); p = cond(s)``:
the first test runs before the loop, each later one at the end of the body on the values it
just computed, and the loop carries the predicate; its own condition only reads it. The
condition runs as many times as before, in the same order, on the same values.

Why: IREE runs a loop's condition and its body as separate submissions, each iteration
waiting on the host for the predicate between them; rotated, an iteration is one submission
(the body and the next test) and one read. And a carry that only the condition read (a Newton
iteration's previous iterate, ``(x, prev) -> (f(x), x)``, tested on ``|x - prev|``) is read by
nothing once the test moves into the body, where it reads the new values (``prev``'s new value
is ``x``): pruning (prune.py) then drops it, and with it the copy that IREE's carry workaround
makes of it every iteration (control_flow._read_every_carry). benchmarks/run.py's Newton loop
(8 iterations, 2 cores, 2026-11-28, by hand in pyree): 10,000 floats 0.17 -> 0.13 ms, 1M
floats 11.6-18.6 -> 7.2-7.8 ms (JAX 0.12-0.16 and 3.5-4.7 ms).

Only loops with such a carry are rotated. Rotating every loop also gained (Newton on 10,000
floats 0.17 -> 0.14 ms without the dropped carry), but a rotated loop of the complex64
scipy.linalg tests failed in IREE 3.13's runtime ("indirect buffer reference slot 0 is out of
range"), so the rest keep their form. Loops whose condition has effects keep it too.

Example::

    ir = rotate_loops(closed.ir)     # then prune_ir(ir), then lowering
"""
from __future__ import annotations

from ..core.ir import IR, Eqn, Var, inline, map_regions
from ..core.trace import has_effects
from ..interpreters.prune import reads
from ..backend.lower import rewrite_before_lowering
from .control_flow import while_p


def rotate_loops(ir: IR) -> IR:
    """``ir`` with every ``while`` in it, nested ones too, rotated (see the module docstring)."""
    eqns: list[Eqn] = []
    for eqn in ir.eqns:
        eqn = map_regions(eqn, rotate_loops)
        if eqn.primitive is while_p and _rotation_pays(eqn):
            eqns.extend(_rotated(eqn))
        else:
            eqns.append(eqn)
    return IR(ir.const_vars, ir.in_vars, eqns, ir.outs)


def _rotation_pays(eqn: Eqn) -> bool:
    """Whether a carry is read by the condition alone (rotated, nothing reads it: see the
    module docstring), and the condition has no effects."""
    p = eqn.params
    cond_ir, body_ir = p["cond_ir"], p["body_ir"]
    if has_effects(cond_ir.eqns):
        return False
    read_by_cond = reads(cond_ir)
    read_by_body = reads(body_ir)
    return any(id(c) in read_by_cond and id(b) not in read_by_body
               for c, b in zip(cond_ir.in_vars[p["cond_nconsts"]:],
                               body_ir.in_vars[p["body_nconsts"]:]))


def _rotated(eqn: Eqn) -> list[Eqn]:
    """The equations computing the first test, then the rotated loop."""
    p = eqn.params
    cond_ir, body_ir = p["cond_ir"], p["body_ir"]
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts = eqn.inputs[:cn], eqn.inputs[cn:cn + bn]
    init = eqn.inputs[cn + bn:]
    first_eqns, (first,) = inline(cond_ir, list(cond_consts) + list(init))

    # The body takes the condition's constants, its own, the carries and the predicate, and
    # ends with the test of what it computed.
    cond_const_vars = [Var(v.aval) for v in cond_ir.in_vars[:cn]]
    body_vars = [Var(v.aval) for v in body_ir.in_vars]
    carried_test = Var(first.aval)
    body_eqns, outs = inline(body_ir, body_vars)
    test_eqns, (test,) = inline(cond_ir, cond_const_vars + outs)
    body = IR([], cond_const_vars + body_vars + [carried_test], body_eqns + test_eqns,
              outs + [test])
    carry_vars = [Var(v.aval) for v in body_ir.in_vars[bn:]]
    tested = Var(first.aval)
    cond = IR([], carry_vars + [tested], [], [tested])
    results = list(eqn.outputs) + [Var(first.aval)]
    loop = Eqn(while_p, list(cond_consts) + list(body_consts) + list(init) + [first],
               dict(p, cond_ir=cond, body_ir=body, cond_nconsts=0, body_nconsts=cn + bn),
               results, eqn.loc)
    return first_eqns + [loop]


rewrite_before_lowering(10, rotate_loops)
