"""AD rules of the structured control-flow primitives.

* JVP rules differentiate the regions (tangent carries reach a fixed point: a carry whose
  tangent the body makes nonzero is carried as nonzero from the start).
* Reverse mode needs the JVP'd equation split into its primal and its linear part: the
  partial-evaluation rules do that (``partial_eval_ir`` splits a region), passing residuals from
  one to the other: the union over branches for ``cond``, per-iteration values stacked as extra
  outputs for ``scan``. The linear parts then transpose region by region.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from pyree.runtime.array import Array, device_put_numpy

from ..core.ir import IR, ClosedIR, Eqn, Literal, ShapedArray, Var
from ..core.trace import (TypedScalar, bind, current_builder, get_aval, located, read_env,
                          trace_region)
from ..interpreters import ad
from ..interpreters.ad import (Zero, instantiate, is_undefined, jvp_eval, jvp_rules,
                               partial_eval_rules, tangent_aval, transpose_ir, transpose_rules)
from ..interpreters.nan_check import descend_rules, host_value
from ..backend import eager
from .control_flow import cond_p, nan_search_while, scan_p, taken_branch, while_p


# -- splitting a region ----------------------------------------------------------------------------

class Split:
    """A region split by ``partial_eval_ir``: the known part (known inputs -> known outputs +
    residuals) and the unknown part (residuals + unknown inputs -> unknown outputs)."""

    def __init__(self, known: IR, unknown: IR, residuals: list, out_unknown: list[bool]) -> None:
        self.known = known
        self.unknown = unknown
        self.residuals = residuals
        self.out_unknown = out_unknown


def partial_eval_ir(ir: IR, unknown_in: Sequence[bool],
                    force_unknown_out: Optional[Sequence[bool]] = None) -> Split:
    """Split ``ir`` by which inputs are unknown (linear); ``force_unknown_out`` makes outputs
    unknown even where they are known (their values become residuals)."""
    unknown = {id(v) for v, u in zip(ir.in_vars, unknown_in) if u}
    known_eqns, unknown_eqns = ad.split_eqns(ir.eqns, unknown)
    out_unknown = [isinstance(a, Var) and id(a) in unknown for a in ir.outs]
    if force_unknown_out is not None:
        out_unknown = [u or f for u, f in zip(out_unknown, force_unknown_out)]
    residuals: list[Var] = []
    seen: set[int] = set()

    def add_residual(a: Any) -> None:
        if isinstance(a, Var) and id(a) not in unknown and id(a) not in seen:
            seen.add(id(a))
            residuals.append(a)

    for eqn in unknown_eqns:
        for a in eqn.inputs:
            add_residual(a)
    for a, u in zip(ir.outs, out_unknown):
        if u:
            add_residual(a)
    known_in = [v for v, u in zip(ir.in_vars, unknown_in) if not u]
    unknown_vars = [v for v, u in zip(ir.in_vars, unknown_in) if u]
    known_outs = [a for a, u in zip(ir.outs, out_unknown) if not u]
    unknown_outs = [a for a, u in zip(ir.outs, out_unknown) if u]
    known = IR([], known_in, known_eqns, known_outs + residuals)
    unknown_ir = IR([], residuals + unknown_vars, unknown_eqns, unknown_outs)
    return Split(known, unknown_ir, residuals, out_unknown)


def _fresh(avals: Sequence[ShapedArray]) -> list[Var]:
    return [Var(a) for a in avals]


def _with_zero_outputs(ir: IR, before: Sequence[ShapedArray], after: Sequence[ShapedArray],
                       keep: int) -> IR:
    """``ir`` whose outputs after the first ``keep`` are padded with zero outputs of the avals
    ``before``/``after`` around its own (for branches that share one output list)."""
    eqns = list(ir.eqns)

    def zeros_of(aval: ShapedArray) -> Var:
        from ..core import primitives as P
        out = Var(aval)
        lit = Literal(np.zeros((), aval.dtype), ShapedArray((), aval.dtype))
        eqns.append(Eqn(P.broadcast_in_dim_p, [lit], {"shape": aval.shape,
                                                       "broadcast_dimensions": ()}, [out], None))
        return out

    head = [zeros_of(a) for a in before]
    tail = [zeros_of(a) for a in after]
    outs = list(ir.outs[:keep]) + head + list(ir.outs[keep:]) + tail
    return IR([], ir.in_vars, eqns, outs)


# -- cond ------------------------------------------------------------------------------------------

def _jvp_region(region: IR, nonzero: Sequence[bool]) -> tuple[IR, list[bool]]:
    closed, out_nonzero = ad.jvp_ir(ClosedIR(region, []), nonzero)
    assert not closed.consts
    return closed.ir, out_nonzero


def _cond_jvp(primals, tangents, *, branches):
    index, *ops = primals
    t_ops = tangents[1:]
    nonzero = [not isinstance(t, Zero) for t in t_ops]
    jvp_branches = [_jvp_region(b, nonzero)[0] for b in branches]
    n_out = len(branches[0].outs)
    outs = cond_p.bind(index, *ops, *[t for t in t_ops if not isinstance(t, Zero)],
                       branches=tuple(jvp_branches))
    primal_outs, tangent_outs = outs[:n_out], outs[n_out:]
    it = iter(tangent_outs)
    touts = [next(it) if ad.is_differentiable(a) else Zero(a)
             for a in branches[0].out_avals]
    return primal_outs, touts


def _cond_partial_eval(eqn: Eqn, unknown: Sequence[bool]) -> tuple[list, list]:
    index, *ops = eqn.inputs
    if unknown[0]:
        raise TypeError("a cond's branch index cannot depend on a tangent")
    ops_unknown = list(unknown[1:])
    branches = eqn.params["branches"]
    # An output is unknown if it is in any branch; every branch then produces it unknown.
    out_unknown = [False] * len(eqn.outputs)
    for b in branches:
        split = partial_eval_ir(b, ops_unknown)
        out_unknown = [u or s for u, s in zip(out_unknown, split.out_unknown)]
    splits = [partial_eval_ir(b, ops_unknown, out_unknown) for b in branches]
    res_avals = [[v.aval for v in s.residuals] for s in splits]
    n_known_out = sum(1 for u in out_unknown if not u)
    known_branches, unknown_branches = [], []
    for k, s in enumerate(splits):
        before = [a for avals in res_avals[:k] for a in avals]
        after = [a for avals in res_avals[k + 1:] for a in avals]
        known_branches.append(_with_zero_outputs(s.known, before, after, n_known_out))
        from .control_flow import region_with_extra_inputs
        unknown_branches.append(region_with_extra_inputs(s.unknown, before, after,
                                                         len(s.residuals)))
    all_res = _fresh([a for avals in res_avals for a in avals])
    known_ops = [a for a, u in zip(ops, ops_unknown) if not u]
    unknown_ops = [a for a, u in zip(ops, ops_unknown) if u]
    known_outs = [v for v, u in zip(eqn.outputs, out_unknown) if not u]
    unknown_outs = [v for v, u in zip(eqn.outputs, out_unknown) if u]
    known = Eqn(cond_p, [index] + known_ops, {"branches": tuple(known_branches)},
                known_outs + all_res, eqn.loc)
    unknown_eqn = Eqn(cond_p, [index] + all_res + unknown_ops,
                      {"branches": tuple(unknown_branches)}, unknown_outs, eqn.loc)
    return [known], [unknown_eqn]


def _cond_transpose(cts, index, *ops, branches):
    if is_undefined(index):
        raise TypeError("a cond's branch index cannot be linear")
    linear = [is_undefined(o) for o in ops]
    nonlinear = [o for o in ops if not is_undefined(o)]
    if isinstance(index, Array) and current_builder() is None:
        # grad outside jit: the branch taken is known, as when JAX runs a Python `if` on a
        # concrete value. Only it is transposed, eagerly, and an operand it does not use gets
        # a symbolic zero, so the operations that made that operand are not differentiated: a
        # NaN derivative of a value only the other branch reads (sqrt of a negative number)
        # does not turn the gradient into NaN (0 * NaN), where JAX gives 0.
        lin = ad.Linearized(ClosedIR(taken_branch(branches, index), []), linear)
        in_cts = ad.backward_pass(lin, ad.forward_pass(lin, nonlinear), list(cts))
        it = iter(in_cts)
        return [None] + [next(it) if lin_ else None for lin_ in linear]
    t_branches = tuple(transpose_ir(b, linear) for b in branches)
    ct_values = [instantiate(ct) for ct in cts]
    outs = cond_p.bind(index, *nonlinear, *ct_values, branches=t_branches)
    it = iter(outs)
    return [None] + [next(it) if lin else None for lin in linear]


jvp_rules[cond_p] = _cond_jvp
partial_eval_rules[cond_p] = _cond_partial_eval
transpose_rules[cond_p] = _cond_transpose


# -- scan ------------------------------------------------------------------------------------------

def _scan_jvp(primals, tangents, *, body, length, reverse, num_consts, num_carry):
    nc, ncar = num_consts, num_carry
    nx = len(primals) - nc - ncar
    consts, carry, xs = primals[:nc], primals[nc:nc + ncar], primals[nc + ncar:]
    t_consts, t_carry, t_xs = tangents[:nc], tangents[nc:nc + ncar], tangents[nc + ncar:]
    const_nz = [not isinstance(t, Zero) for t in t_consts]
    xs_nz = [not isinstance(t, Zero) for t in t_xs]
    carry_nz = [not isinstance(t, Zero) for t in t_carry]
    for _ in range(ncar + 1):  # fixed point of the carries' tangents being nonzero
        _, out_nz = _jvp_region(body, const_nz + carry_nz + xs_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz[:ncar])]
        if new == carry_nz:
            break
        carry_nz = new
    carry_nz = [nz and ad.is_differentiable(v.aval) for nz, v in
                zip(carry_nz, body.in_vars[nc:nc + ncar])]
    body_avals = [v.aval for v in body.in_vars]
    n_y = len(body.outs) - ncar

    def pick(items, mask):
        return [x for x, m in zip(items, mask) if m]

    t_const_avals = [tangent_aval(a) for a in pick(body_avals[:nc], const_nz)]
    t_carry_avals = [tangent_aval(a) for a in pick(body_avals[nc:nc + ncar], carry_nz)]
    t_x_avals = [tangent_aval(a) for a in pick(body_avals[nc + ncar:], xs_nz)]
    y_avals = [a.aval for a in body.outs[ncar:]]
    y_nz = [ad.is_differentiable(a) for a in y_avals]

    def jvp_body(*args):
        pos = 0

        def take(n):
            nonlocal pos
            part = list(args[pos:pos + n])
            pos += n
            return part

        c, tc = take(nc), take(len(t_const_avals))
        car, tcar = take(ncar), take(len(t_carry_avals))
        x, tx = take(nx), take(len(t_x_avals))

        def spread(values, mask, avals):
            it = iter(values)
            return [next(it) if m else Zero(tangent_aval(a)) for m, a in zip(mask, avals)]

        ts = spread(tc, const_nz, body_avals[:nc]) + \
            spread(tcar, carry_nz, body_avals[nc:nc + ncar]) + \
            spread(tx, xs_nz, body_avals[nc + ncar:])
        outs, touts = jvp_eval(ClosedIR(body, []), c + car + x, ts)
        carry_out, ys = outs[:ncar], outs[ncar:]
        t_carry_out = [instantiate(t) for t, m in zip(touts[:ncar], carry_nz) if m]
        t_ys = [instantiate(t) for t, m in zip(touts[ncar:], y_nz) if m]
        return carry_out + t_carry_out + ys + t_ys

    in_avals = (body_avals[:nc] + t_const_avals + body_avals[nc:nc + ncar] + t_carry_avals +
                body_avals[nc + ncar:] + t_x_avals)
    region, region_consts = trace_region(jvp_body, in_avals)
    assert not region_consts
    t_carry_init = [instantiate(t) if not isinstance(t, Zero) else ad.zeros(tangent_aval(a))
                    for t, a, m in zip(t_carry, body_avals[nc:nc + ncar], carry_nz) if m]
    operands = (list(consts) + [t for t in t_consts if not isinstance(t, Zero)] + list(carry) +
                t_carry_init + list(xs) + [t for t in t_xs if not isinstance(t, Zero)])
    outs = scan_p.bind(*operands, body=region, length=length, reverse=reverse,
                       num_consts=nc + len(t_const_avals), num_carry=ncar + len(t_carry_avals))
    n_tc = len(t_carry_avals)
    carry_out = outs[:ncar]
    t_carry_out = outs[ncar:ncar + n_tc]
    ys = outs[ncar + n_tc:ncar + n_tc + n_y]
    t_ys = outs[ncar + n_tc + n_y:]
    it_c, it_y = iter(t_carry_out), iter(t_ys)
    t_carry_full = [next(it_c) if m else Zero(v.aval) for m, v in
                    zip(carry_nz, body.in_vars[nc:nc + ncar])]
    t_ys_full = [next(it_y) if m else Zero(ShapedArray((length,) + a.shape, a.dtype))
                 for m, a in zip(y_nz, y_avals)]
    return list(carry_out) + list(ys), t_carry_full + t_ys_full


def _scan_partial_eval(eqn: Eqn, unknown: Sequence[bool]) -> tuple[list, list]:
    p = eqn.params
    body, nc, ncar, length = p["body"], p["num_consts"], p["num_carry"], p["length"]
    ins = eqn.inputs
    consts_u = list(unknown[:nc])
    carry_u = list(unknown[nc:nc + ncar])
    xs_u = list(unknown[nc + ncar:])
    for _ in range(ncar + 1):
        split = partial_eval_ir(body, consts_u + carry_u + xs_u)
        new = [a or b for a, b in zip(carry_u, split.out_unknown[:ncar])]
        if new == carry_u:
            break
        carry_u = new
    n_y = len(body.outs) - ncar
    split = partial_eval_ir(body, consts_u + carry_u + xs_u, carry_u + [False] * n_y)
    ys_u = split.out_unknown[ncar:]
    # Residuals that are the body's own known constants are passed as constants, those that
    # are its known xs' slices as those xs, and those it stacks already as known ys as those
    # ys (the unknown scan slices them again); the others change per iteration and are
    # stacked as extra outputs of the known scan. (Stacked twice, an RNN's inputs and states
    # cost copies, and a part of IREE's copy of the stacked outputs at every iteration: see
    # control_flow.SCAN_BLOCKING_MIN_CHUNKS. benchmarks/ad.py's RNN gradient without the xs
    # stacked again: 9.5 -> 8.6 ms, JAX 7.9, alternating in one process.)
    const_vars = {id(v): i for i, v in enumerate(body.in_vars[:nc])}
    x_vars = {id(v): ins[nc + ncar + i] for i, v in enumerate(body.in_vars[nc + ncar:])}
    y_vars: dict = {}
    for a, u, stacked in zip(body.outs[ncar:], ys_u, eqn.outputs[ncar:]):
        if not u and isinstance(a, Var):
            y_vars.setdefault(id(a), stacked)
    const_res = [r for r in split.residuals if id(r) in const_vars]
    x_res = [r for r in split.residuals if id(r) not in const_vars and id(r) in x_vars]
    y_res = [r for r in split.residuals
             if id(r) not in const_vars and id(r) not in x_vars and id(r) in y_vars]
    stacked_res = [r for r in split.residuals
                   if id(r) not in const_vars and id(r) not in x_vars and id(r) not in y_vars]

    known_in = [v for v, u in zip(body.in_vars, consts_u + carry_u + xs_u) if not u]
    known_consts_n = sum(1 for u in consts_u if not u)
    known_carry_n = sum(1 for u in carry_u if not u)
    known_y_outs = [a for a, u in zip(body.outs[ncar:], ys_u) if not u]
    known_carry_outs = [a for a, u in zip(body.outs[:ncar], carry_u) if not u]
    known_body = IR([], known_in, split.known.eqns,
                    known_carry_outs + known_y_outs + stacked_res)
    stacked_vars = _fresh([ShapedArray((length,) + r.aval.shape, r.aval.dtype)
                           for r in stacked_res])
    known_outs = [v for v, u in zip(eqn.outputs[:ncar], carry_u) if not u] + \
        [v for v, u in zip(eqn.outputs[ncar:], ys_u) if not u]
    known_eqn = Eqn(scan_p, [a for a, u in zip(ins, consts_u + carry_u + xs_u) if not u],
                    dict(p, body=known_body, num_consts=known_consts_n,
                         num_carry=known_carry_n), known_outs + stacked_vars, eqn.loc)

    # The unknown scan: constants (the constant residuals, then the unknown constants), the
    # unknown carries, and as xs the stacked residuals, the xs and ys residuals, then the
    # unknown xs.
    sliced_res = stacked_res + x_res + y_res
    slice_vars = _fresh([r.aval for r in sliced_res])
    remap = {id(r): s for r, s in zip(sliced_res, slice_vars)}
    unknown_consts = [v for v, u in zip(body.in_vars[:nc], consts_u) if u]
    unknown_carry = [v for v, u in zip(body.in_vars[nc:nc + ncar], carry_u) if u]
    unknown_xs = [v for v, u in zip(body.in_vars[nc + ncar:], xs_u) if u]
    unknown_eqns = _rename_inputs(split.unknown.eqns, remap)
    unknown_outs = [remap.get(id(a), a) if isinstance(a, Var) else a for a in split.unknown.outs]
    unknown_body = IR([], const_res + unknown_consts + unknown_carry + slice_vars + unknown_xs,
                      unknown_eqns, unknown_outs)
    outer_const_res = [ins[const_vars[id(r)]] for r in const_res]
    unknown_ins = (outer_const_res + [a for a, u in zip(ins[:nc], consts_u) if u] +
                   [a for a, u in zip(ins[nc:nc + ncar], carry_u) if u] + stacked_vars +
                   [x_vars[id(r)] for r in x_res] + [y_vars[id(r)] for r in y_res] +
                   [a for a, u in zip(ins[nc + ncar:], xs_u) if u])
    unknown_eqn_outs = [v for v, u in zip(eqn.outputs[:ncar], carry_u) if u] + \
        [v for v, u in zip(eqn.outputs[ncar:], ys_u) if u]
    unknown_eqn = Eqn(scan_p, unknown_ins,
                      dict(p, body=unknown_body, num_consts=len(const_res) + len(unknown_consts),
                           num_carry=len(unknown_carry)), unknown_eqn_outs, eqn.loc)
    return [known_eqn], [unknown_eqn]


def _rename_inputs(eqns: Sequence[Eqn], remap: dict) -> list[Eqn]:
    if not remap:
        return list(eqns)
    return [e.replace(inputs=[remap.get(id(a), a) if isinstance(a, Var) else a
                              for a in e.inputs]) for e in eqns]


def _scan_transpose(cts, *args, body, length, reverse, num_consts, num_carry):
    nc, ncar = num_consts, num_carry
    consts, carry, xs = args[:nc], args[nc:nc + ncar], args[nc + ncar:]
    # Every carry of a linear scan is linear, even one that starts as a known value (the
    # zeros a tangent carry starts from): its cotangent is just not returned.
    const_lin = [is_undefined(c) for c in consts]
    xs_lin = [is_undefined(x) for x in xs]
    linear_in = const_lin + [True] * ncar + xs_lin
    t_body = transpose_ir(body, linear_in)  # (nonlinear consts, nonlinear xs, cts) -> linear cts
    ct_carry_out = [instantiate(ct) for ct in cts[:ncar]]
    ct_ys = [instantiate(ct) for ct in cts[ncar:]]
    res_consts = [c for c, lin in zip(consts, const_lin) if not lin]
    res_xs = [x for x, lin in zip(xs, xs_lin) if not lin]
    lin_const_avals = [c.aval for c, lin in zip(consts, const_lin) if lin]
    n_rc, n_lc, n_rx = len(res_consts), len(lin_const_avals), len(res_xs)

    def t_step(*vals):
        rc = list(vals[:n_rc])
        ct_c = list(vals[n_rc:n_rc + ncar])
        acc = list(vals[n_rc + ncar:n_rc + ncar + n_lc])
        rx = list(vals[n_rc + ncar + n_lc:n_rc + ncar + n_lc + n_rx])
        ct_y = list(vals[n_rc + ncar + n_lc + n_rx:])
        outs = _eval_ir(t_body, rc + rx + ct_c + ct_y)
        ct_consts, ct_carry_in, ct_x = outs[:n_lc], outs[n_lc:n_lc + ncar], outs[n_lc + ncar:]
        acc = [ad.add_tangents(a, c) for a, c in zip(acc, ct_consts)]
        return ct_carry_in + acc + ct_x

    step_avals = ([get_aval(c) for c in res_consts] + [get_aval(c) for c in ct_carry_out] +
                  [tangent_aval(a) for a in lin_const_avals] +
                  [ShapedArray(get_aval(x).shape[1:], get_aval(x).dtype) for x in res_xs] +
                  [ShapedArray(get_aval(y).shape[1:], get_aval(y).dtype) for y in ct_ys])
    region, region_consts = trace_region(t_step, step_avals)
    assert not region_consts
    acc_init = [ad.zeros(tangent_aval(a)) for a in lin_const_avals]
    outs = scan_p.bind(*res_consts, *ct_carry_out, *acc_init, *res_xs, *ct_ys, body=region,
                       length=length, reverse=not reverse, num_consts=n_rc,
                       num_carry=ncar + n_lc)
    ct_init = outs[:ncar]
    ct_lin_consts = outs[ncar:ncar + n_lc]
    ct_lin_xs = outs[ncar + n_lc:]
    it_c, it_x = iter(ct_lin_consts), iter(ct_lin_xs)
    return ([next(it_c) if lin else None for lin in const_lin] +
            [ct if is_undefined(c) else None for ct, c in zip(ct_init, carry)] +
            [next(it_x) if lin else None for lin in xs_lin])


def _eval_ir(ir: IR, args: Sequence[Any]) -> list:
    env: dict = dict(zip(ir.in_vars, args))

    for eqn in ir.eqns:
        with located(eqn.loc):
            outs = bind(eqn.primitive, [read_env(env, a) for a in eqn.inputs], eqn.params)
        env.update(zip(eqn.outputs, outs))
    return [read_env(env, a) for a in ir.outs]


jvp_rules[scan_p] = _scan_jvp
partial_eval_rules[scan_p] = _scan_partial_eval
transpose_rules[scan_p] = _scan_transpose


# -- while and counted loops (forward mode) -----------------------------------------------------------

def _loop_body_jvp(body: IR, n_lead: int, t_consts: Sequence, t_carry: Sequence):
    """The JVP of a loop body taking (lead..., consts..., carry...) -> carry, where the ``n_lead``
    leading inputs (a step index) have no tangent. Returns the region taking (lead, consts, the
    nonzero consts' tangents, carry, the carried tangents) -> (carry, carried tangents); which
    carries have a tangent (a fixed point: a carry whose tangent the body makes nonzero is
    carried as nonzero from the start); and the tangent operands (the nonzero consts' tangents,
    the carried tangents' initial values)."""
    nc, ncar = len(t_consts), len(t_carry)
    lead_avals = [v.aval for v in body.in_vars[:n_lead]]
    const_avals = [v.aval for v in body.in_vars[n_lead:n_lead + nc]]
    carry_avals = [v.aval for v in body.in_vars[n_lead + nc:]]
    const_nz = [not isinstance(t, Zero) for t in t_consts]
    carry_nz = [not isinstance(t, Zero) for t in t_carry]
    for _ in range(ncar + 1):
        _, out_nz = _jvp_region(body, [False] * n_lead + const_nz + carry_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz[:ncar])]
        if new == carry_nz:
            break
        carry_nz = new
    carry_nz = [nz and ad.is_differentiable(a) for nz, a in zip(carry_nz, carry_avals)]
    t_const_avals = [tangent_aval(a) for a, m in zip(const_avals, const_nz) if m]
    t_carry_avals = [tangent_aval(a) for a, m in zip(carry_avals, carry_nz) if m]

    def jvp_body(*args):
        sizes = [n_lead, nc, len(t_const_avals), ncar, len(t_carry_avals)]
        lead, c, tc, car, tcar = _take(args, sizes)
        it_c, it_car = iter(tc), iter(tcar)
        ts = [Zero(tangent_aval(a)) for a in lead_avals]
        ts += [next(it_c) if m else Zero(tangent_aval(a)) for m, a in zip(const_nz, const_avals)]
        ts += [next(it_car) if m else Zero(tangent_aval(a)) for m, a in zip(carry_nz, carry_avals)]
        outs, touts = jvp_eval(ClosedIR(body, []), lead + c + car, ts)
        return list(outs) + [instantiate(t) for t, m in zip(touts, carry_nz) if m]

    region, captured = trace_region(jvp_body, lead_avals + const_avals + t_const_avals +
                                    carry_avals + t_carry_avals)
    assert not captured
    t_const_ops = [t for t in t_consts if not isinstance(t, Zero)]
    t_init = [instantiate(t) if not isinstance(t, Zero) else ad.zeros(tangent_aval(a))
              for t, a, m in zip(t_carry, carry_avals, carry_nz) if m]
    return region, carry_nz, t_const_ops, t_init


def _take(values: Sequence, sizes: Sequence[int]) -> list[list]:
    """``values`` cut into consecutive groups of ``sizes``."""
    groups, pos = [], 0
    for size in sizes:
        groups.append(list(values[pos:pos + size]))
        pos += size
    return groups


def _carried_tangents(outs: Sequence, carry_nz: Sequence[bool], carry_avals) -> list:
    it = iter(outs)
    return [next(it) if m else Zero(tangent_aval(a)) for m, a in zip(carry_nz, carry_avals)]


def _jvp_of_while(loop_p: Primitive, primals, tangents, *, cond_ir, body_ir, cond_nconsts,
                  body_nconsts):
    """The JVP of ``while`` (and of ``while_count``, whose extra output is its trip count)."""
    cn, bn = cond_nconsts, body_nconsts
    region, carry_nz, t_const_ops, t_init = _loop_body_jvp(
        body_ir, 0, tangents[cn:cn + bn], tangents[cn + bn:])
    from .control_flow import region_with_extra_inputs
    t_carry_avals = [get_aval(t) for t in t_init]
    cond = region_with_extra_inputs(cond_ir, [], t_carry_avals, len(cond_ir.in_vars))
    outs = loop_p.bind(*primals[:cn + bn], *t_const_ops, *primals[cn + bn:], *t_init,
                       cond_ir=cond, body_ir=region, cond_nconsts=cn,
                       body_nconsts=bn + len(t_const_ops))
    ncar = len(carry_nz)
    extra = list(outs[ncar + len(t_init):])  # while_count's trip count
    t_out = _carried_tangents(outs[ncar:ncar + len(t_init)], carry_nz,
                              [v.aval for v in body_ir.in_vars[bn:]])
    return list(outs[:ncar]) + extra, t_out + [Zero(tangent_aval(_I32))] * len(extra)


def _while_jvp(primals, tangents, **params):
    return _jvp_of_while(while_p, primals, tangents, **params)


jvp_rules[while_p] = _while_jvp


# -- while (reverse mode) ------------------------------------------------------------------------------
#
# A while loop's trip count depends on the data, so its linear part cannot be a loop of a
# length known when tracing. The primal loop runs as ``while_count``, which also counts its
# iterations N. The linear part is a ``counted_loop`` over i in range(0, N): step i is the
# body's JVP at the primal carry of step i, which the step recomputes from the loop's initial
# carry by a nested counted_loop over range(0, i). Its transpose runs i from N - 1 down to 0,
# recomputing the same way: O(N^2) body evaluations, memory of one carry, no bound on N.
#
# Recomputation rather than stacks of recorded carries, because in IREE 3.13 (a) a loop that
# updates a carried buffer copies it whole at every iteration, so stacks cost O(N^2) copying
# as well, and (b) loops carrying dynamically-shaped stacks miscompile when the body has a
# conditional (wrong values or out-of-range bindings), which every bisection has.
#
# counted_loop is closed under the three AD rules: its JVP is a counted_loop; partial
# evaluation splits it into the known loop and an unknown one whose step recomputes the known
# carries of that step by a nested counted_loop (over range(lo, i), or range(i + 1, hi) when
# it runs backwards); its transpose is a counted_loop in the other direction whose step runs
# the step's nonlinear part, nested loops included, forwards. So grad of grad is the same
# rules applied once more (O(N^3) body evaluations), and every order after it.

from ..core.trace import Primitive, abstract_eval_rules
from ..backend.lower import (RuleContext, _compare, hlo, kept_past_loop, lowering_rules, mlir, op,
                             own_buffers, scalar_like, tensor_type)

while_count_p = Primitive("while_count", multiple_results=True)
counted_loop_p = Primitive("counted_loop", multiple_results=True)
eager.STATIC_SHAPE_PRIMITIVES.update({while_count_p, counted_loop_p})   # (regions)

_I32 = ShapedArray((), np.dtype(np.int32))


def _lower_in(ctx: RuleContext, region: IR, args: Sequence) -> list:
    from .control_flow import _lower_region_outputs
    return _lower_region_outputs(ctx, region, args, loop_body=True)


def _counted_while(types: list, inits: list, cond_fn, body_fn) -> list:
    """A stablehlo.while whose regions ``cond_fn``/``body_fn`` build from the block args; the
    first carry is an int32 step counter, never negative inside the body, that the body advances.

    A carry the body does not read (a ``prev`` it overwrites, that only the condition reads)
    gets a read: ``select(counter < 0, old, new)``, always ``new``. Without one, IREE 3.13
    miscompiles the loop: it rotates it into an if around a do-while, where such a carry is
    dead, drops it from the loop's inputs but not from its results, and the stream conversion
    then crashes the compiler (or rejects the module)."""
    ir = mlir()
    inits = own_buffers(inits, None)
    loop = op("stablehlo.while", types, inits, regions=2)
    cond_block = ir.Block.create_at_start(loop.regions[0], types)
    with ir.InsertionPoint(cond_block):
        op("stablehlo.return", [], [cond_fn(list(cond_block.arguments))])
    body_block = ir.Block.create_at_start(loop.regions[1], types)
    with ir.InsertionPoint(body_block):
        args = list(body_block.arguments)
        outs = list(body_fn(args))
        unread = [i for i in range(1, len(args))
                  if not list(args[i].uses) and outs[i] != args[i]]
        if unread:
            never = op("stablehlo.compare", [tensor_type(ShapedArray((), np.dtype(np.bool_)))],
                       [args[0], scalar_like(0, np.int32)], {
                           "comparison_direction": ir.Attribute.parse(
                               "#stablehlo<comparison_direction LT>"),
                           "compare_type": ir.Attribute.parse(
                               "#stablehlo<comparison_type SIGNED>")}).result
            for i in unread:
                outs[i] = hlo("select", types[i], never, args[i], outs[i])
        op("stablehlo.return", [], own_buffers(outs, body_block, False))
    return kept_past_loop(loop.results, inits)


def _increment(k):
    return hlo("add", tensor_type(_I32), k, scalar_like(1, np.int32))


def _while_count_abstract_eval(*operands, cond_ir, body_ir, cond_nconsts, body_nconsts):
    return list(operands[cond_nconsts + body_nconsts:]) + [_I32]


def _while_count_lowering(ctx: RuleContext, *operands, cond_ir, body_ir, cond_nconsts,
                          body_nconsts):
    cn, bn = cond_nconsts, body_nconsts
    cond_consts, body_consts = operands[:cn], operands[cn:cn + bn]
    carry_types = [tensor_type(a) for a in ctx.avals_in[cn + bn:]]
    n = len(carry_types)
    results = _counted_while(
        [tensor_type(_I32)] + carry_types, [scalar_like(0, np.int32)] + list(operands[cn + bn:]),
        lambda args: _lower_in(ctx, cond_ir, list(cond_consts) + args[1:])[0],
        lambda args: [_increment(args[0])] + _lower_in(ctx, body_ir, list(body_consts) +
                                                          args[1:]))
    return results[1:1 + n] + [results[0]]


abstract_eval_rules[while_count_p] = _while_count_abstract_eval
lowering_rules[while_count_p] = _while_count_lowering


jvp_rules[while_count_p] = lambda primals, tangents, **params: _jvp_of_while(
    while_count_p, primals, tangents, **params)


# -- counted_loop: for i in range(lo, hi) (or reversed): carry = body(i, consts..., carry...) -------

def _counted_loop_abstract_eval(lo, hi, *operands, body, num_consts, reverse):
    for bound in (lo, hi):
        if bound.shape != () or bound.dtype != np.int32:
            raise TypeError(f"counted_loop's bounds must be int32 scalars, got {bound.str_short()}")
    return list(operands[num_consts:])


def _counted_loop_lowering(ctx: RuleContext, lo, hi, *operands, body, num_consts, reverse):
    consts, init = list(operands[:num_consts]), list(operands[num_consts:])
    i32_t = tensor_type(_I32)
    types = [i32_t] + [tensor_type(a) for a in ctx.avals_out]
    # Backwards, the counter k still counts up (from lo) and the step is i = lo + hi - 1 - k:
    # counting down from hi - 1 made IREE 3.13 drop a carry whose update is a constant (the
    # zero cotangent of a carry the step does not read) from the rotated loop's condition.
    if reverse:
        last = hlo("subtract", i32_t, hlo("add", i32_t, lo, hi), scalar_like(1, np.int32))
        index = lambda k: hlo("subtract", i32_t, last, k)
    else:
        index = lambda k: k
    results = _counted_while(
        types, [lo] + init, lambda a: _compare(ctx, a[0], hi, "LT", _I32),
        lambda a: [_increment(a[0])] + _lower_in(ctx, body, [index(a[0])] + consts + a[1:]))
    outs = results[1:]
    if ctx.lowering.in_loop and outs:
        # A loop nested in a loop (the recomputation of a step's carries): without a barrier
        # on its results, IREE 3.13's stream partitioning fails ("circular dependency: input
        # operation uses partition output") on some programs, e.g. the gradient of a bisection
        # followed by a Newton step.
        outs = list(op("stablehlo.optimization_barrier", types[1:], outs).results)
    return outs


abstract_eval_rules[counted_loop_p] = _counted_loop_abstract_eval
lowering_rules[counted_loop_p] = _counted_loop_lowering


def _nan_search_counted_loop(params: dict, ins: list, run_region) -> Any:
    """debug_nans' search inside a counted loop, step by step (nan_check.py)."""
    lo, hi, nc = int(host_value(ins[0])), int(host_value(ins[1])), params["num_consts"]
    consts, carry = ins[2:2 + nc], ins[2 + nc:]
    for i in range(hi - 1, lo - 1, -1) if params["reverse"] else range(lo, hi):
        step = device_put_numpy(np.asarray(i, np.int32))
        culprit, carry = run_region(params["body"], [step] + consts + carry)
        if culprit is not None:
            return culprit
    return None


descend_rules[counted_loop_p] = _nan_search_counted_loop
descend_rules[while_count_p] = nan_search_while   # (a while loop that also counts)


def _counted_loop_jvp(primals, tangents, *, body, num_consts, reverse):
    nc = num_consts
    region, carry_nz, t_const_ops, t_init = _loop_body_jvp(body, 1, tangents[2:2 + nc],
                                                           tangents[2 + nc:])
    outs = counted_loop_p.bind(*primals[:2 + nc], *t_const_ops, *primals[2 + nc:], *t_init,
                               body=region, num_consts=nc + len(t_const_ops), reverse=reverse)
    ncar = len(carry_nz)
    return list(outs[:ncar]), _carried_tangents(outs[ncar:], carry_nz,
                                                [v.aval for v in body.in_vars[1 + nc:]])


def _dce(ir: IR, keep_effects: bool = True) -> IR:
    """``ir`` without the equations its outputs do not need; effects (print, assert) are kept
    unless ``keep_effects`` is false (in recomputations of steps that have run once already)."""
    live = {id(a) for a in ir.outs if isinstance(a, Var)}
    kept = []
    from ..core.trace import has_effects
    for eqn in reversed(ir.eqns):
        if any(id(v) in live for v in eqn.outputs) or keep_effects and has_effects([eqn]):
            kept.append(eqn)
            live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    kept.reverse()
    return IR(ir.const_vars, ir.in_vars, kept, ir.outs)


def _inputs_read(ir: IR) -> set:
    """The input variables of ``ir`` that its equations or outputs read (as a set of Vars)."""
    read = {a for e in ir.eqns for a in e.inputs if isinstance(a, Var)}
    read |= {a for a in ir.outs if isinstance(a, Var)}
    return {v for v in ir.in_vars if v in read}


def _needed_carries(body: IR, n_lead: int, needed: Sequence[bool]) -> tuple[IR, list[bool]]:
    """A loop body (lead..., carry...) -> carry cut down to the carries that are ``needed``
    after the loop or that a needed carry's update reads (a fixed point): the body over those,
    and which they are. A carry nothing needs (a ``prev`` only a dropped condition read) would
    otherwise stay in the loop, unread, which IREE 3.13 miscompiles (see _counted_while)."""
    carry_vars = body.in_vars[n_lead:]
    needed = list(needed)
    while True:
        kept = _dce(IR([], body.in_vars, body.eqns, _pick(body.outs, needed)), keep_effects=False)
        reads = _inputs_read(kept)
        new = [n or v in reads for n, v in zip(needed, carry_vars)]
        if new == needed:
            break
        needed = new
    return IR([], body.in_vars[:n_lead] + _pick(carry_vars, needed), kept.eqns, kept.outs), needed


def _unknown_carries(body: IR, lead_u: Sequence[bool], carry_u: Sequence[bool]) -> list[bool]:
    """Which carries of a loop are unknown: those unknown at the start, and (a fixed point)
    those the body computes from unknown values. ``lead_u``: the inputs before the carries."""
    carry_u = list(carry_u)
    for _ in range(len(carry_u) + 1):
        split = partial_eval_ir(body, list(lead_u) + carry_u)
        new = [a or b for a, b in zip(carry_u, split.out_unknown)]
        if new == carry_u:
            break
        carry_u = new
    return carry_u


def _pick(items: Sequence, mask: Sequence[bool], want: bool = True) -> list:
    return [x for x, m in zip(items, mask) if bool(m) == want]


def _split_counted_loop(eqn: Eqn, consts_u: Sequence[bool],
                        carry_u: Sequence[bool]) -> tuple[Eqn, Eqn]:
    """A counted_loop split into the loop of its known carries and the loop of its unknown
    ones, whose step i recomputes the known carries of step i by a nested loop."""
    p = eqn.params
    body, nc, reverse = p["body"], p["num_consts"], p["reverse"]
    lo, hi = eqn.inputs[:2]
    consts, init = eqn.inputs[2:2 + nc], eqn.inputs[2 + nc:]
    const_vars, carry_vars = body.in_vars[1:1 + nc], body.in_vars[1 + nc:]
    split = partial_eval_ir(body, [False] + list(consts_u) + list(carry_u), carry_u)
    known_body = _dce(IR([], [body.in_vars[0]] + _pick(const_vars, consts_u, False) +
                         _pick(carry_vars, carry_u, False), split.known.eqns,
                         _pick(body.outs, carry_u, False)))
    known_consts, known_init = _pick(consts, consts_u, False), _pick(init, carry_u, False)
    known_eqn = Eqn(counted_loop_p, [lo, hi] + known_consts + known_init,
                    dict(p, body=known_body, num_consts=len(known_consts)),
                    _pick(eqn.outputs, carry_u, False), eqn.loc)

    step = _dce(IR([], body.in_vars, body.eqns, _pick(body.outs, carry_u)), keep_effects=False)
    replay_body, replayed = _needed_carries(_dce(known_body, keep_effects=False),
                                            1 + len(known_consts),
                                            [v in _inputs_read(step) for v in
                                             _pick(carry_vars, carry_u, False)])
    groups = [[v.aval for v in vs] for vs in (
        _pick(const_vars, consts_u, False), _pick(carry_vars, carry_u, False),
        _pick(const_vars, consts_u), _pick(carry_vars, carry_u))]

    def merge(mask, unknown_vals, known_vals):
        it_u, it_k = iter(unknown_vals), iter(known_vals)
        return [next(it_u) if m else next(it_k) for m in mask]

    def unknown_step(i, bound, *vals):
        kc, kinit, uc, ucarry = _take(vals, [len(g) for g in groups])
        known_carry = [None] * len(kinit)  # the step reads only the replayed ones
        if any(replayed):
            if reverse:
                from ..core import primitives as P
                start, stop = P.add_p.bind(i, TypedScalar(1, np.dtype(np.int32), False)), bound
            else:
                start, stop = bound, i
            known_carry = merge(replayed, counted_loop_p.bind(
                start, stop, *kc, *_pick(kinit, replayed), body=replay_body,
                num_consts=len(kc), reverse=reverse), known_carry)
        return _eval_ir(step, [i] + merge(consts_u, uc, kc) + merge(carry_u, ucarry, known_carry))

    region, captured = trace_region(unknown_step, [_I32, _I32] + [a for g in groups for a in g])
    assert not captured
    unknown_eqn = Eqn(counted_loop_p,
                      [lo, hi, hi if reverse else lo] + known_consts + known_init +
                      _pick(consts, consts_u) + _pick(init, carry_u),
                      dict(p, body=_dce(region),
                           num_consts=1 + len(known_consts) + len(known_init) + sum(consts_u)),
                      _pick(eqn.outputs, carry_u), eqn.loc)
    return known_eqn, unknown_eqn


def _counted_loop_partial_eval(eqn: Eqn, unknown: Sequence[bool]) -> tuple[list, list]:
    if unknown[0] or unknown[1]:
        raise TypeError("a loop's bounds cannot depend on a tangent")
    nc = eqn.params["num_consts"]
    consts_u = list(unknown[2:2 + nc])
    carry_u = _unknown_carries(eqn.params["body"], [False] + consts_u, unknown[2 + nc:])
    known_eqn, unknown_eqn = _split_counted_loop(eqn, consts_u, carry_u)
    return [known_eqn], [unknown_eqn]


def _while_partial_eval(eqn: Eqn, unknown: Sequence[bool]) -> tuple[list, list]:
    """``while`` (or ``while_count``) split into ``while_count`` running the known carries and
    counting the steps, and a counted_loop over that count for the unknown carries."""
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cond_ir, body_ir = p["cond_ir"], p["body_ir"]
    if any(unknown[:cn]):
        raise TypeError("a while loop's condition cannot depend on a tangent")
    bconst_u = list(unknown[cn:cn + bn])
    carry_u = _unknown_carries(body_ir, bconst_u, unknown[cn + bn:])
    if partial_eval_ir(cond_ir, [False] * cn + carry_u).out_unknown[0]:
        raise TypeError("a while loop's condition cannot depend on a tangent")
    counted = eqn.primitive is while_count_p
    outputs = eqn.outputs[:-1] if counted else eqn.outputs
    count = eqn.outputs[-1] if counted else Var(_I32)
    ins = eqn.inputs
    # The while body as the body of a counted loop (which ignores the step index).
    body_i = IR([], [Var(_I32)] + list(body_ir.in_vars), body_ir.eqns, body_ir.outs)
    zero = Literal(0, _I32)
    as_loop = Eqn(counted_loop_p, [zero, count] + list(ins[cn:]),
                  {"body": body_i, "num_consts": bn, "reverse": False}, outputs, eqn.loc)
    known_loop, unknown_eqn = _split_counted_loop(as_loop, bconst_u, carry_u)
    kb = known_loop.params["body"]
    primal_body = IR([], kb.in_vars[1:], kb.eqns, kb.outs)
    cond_known = _dce(IR([], list(cond_ir.in_vars[:cn]) + _pick(cond_ir.in_vars[cn:], carry_u,
                                                               False),
                         cond_ir.eqns, cond_ir.outs))
    known_eqn = Eqn(while_count_p, list(ins[:cn]) + known_loop.inputs[2:],
                    {"cond_ir": cond_known, "body_ir": primal_body, "cond_nconsts": cn,
                     "body_nconsts": known_loop.params["num_consts"]},
                    known_loop.outputs + [count], eqn.loc)
    return [known_eqn], [unknown_eqn]


def _counted_loop_transpose(cts, lo, hi, *args, body, num_consts, reverse):
    if is_undefined(lo) or is_undefined(hi):
        raise TypeError("a loop's bounds cannot be linear")
    consts, carry = args[:num_consts], args[num_consts:]
    ncar = len(carry)
    # Every carry is linear, even one that starts as a known value (the zeros a tangent carry
    # starts from): its cotangent is just not returned.
    const_lin = [is_undefined(c) for c in consts]
    t_body = transpose_ir(body, [False] + const_lin + [True] * ncar)
    res_consts = _pick(consts, const_lin, False)
    lin_const_avals = [c.aval for c in _pick(consts, const_lin)]
    n_rc, n_lc = len(res_consts), len(lin_const_avals)
    ct_carry = [instantiate(ct) for ct in cts]

    def t_step(i, *vals):
        rc, ct_c, acc = _take(vals, [n_rc, ncar, n_lc])
        outs = _eval_ir(t_body, [i] + rc + ct_c)
        return outs[n_lc:] + [ad.add_tangents(a, c) for a, c in zip(acc, outs[:n_lc])]

    region, captured = trace_region(t_step, [_I32] + [get_aval(c) for c in res_consts] +
                                    [get_aval(c) for c in ct_carry] +
                                    [tangent_aval(a) for a in lin_const_avals])
    assert not captured
    acc_init = [ad.zeros(tangent_aval(a)) for a in lin_const_avals]
    outs = counted_loop_p.bind(lo, hi, *res_consts, *ct_carry, *acc_init, body=region,
                               num_consts=n_rc, reverse=not reverse)
    ct_init, ct_lin = outs[:ncar], iter(outs[ncar:])
    return [None, None] + [next(ct_lin) if lin else None for lin in const_lin] + \
        [ct if is_undefined(c) else None for ct, c in zip(ct_init, carry)]


partial_eval_rules[while_p] = _while_partial_eval
partial_eval_rules[while_count_p] = _while_partial_eval
jvp_rules[counted_loop_p] = _counted_loop_jvp
partial_eval_rules[counted_loop_p] = _counted_loop_partial_eval
transpose_rules[counted_loop_p] = _counted_loop_transpose
