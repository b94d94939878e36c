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

from . import ad
from .ad import (UndefinedPrimal, Zero, instantiate, is_undefined, jvp_eval, jvp_rules,
                 partial_eval_rules, tangent_aval, transpose_ir, transpose_rules)
from .control_flow import cond_p, scan_p, trace_region, while_p
from .ir import IR, ClosedIR, Eqn, Literal, ShapedArray, Var
from .trace import TypedScalar, bind, get_aval


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
    known_eqns: list[Eqn] = []
    unknown_eqns: list[Eqn] = []
    for eqn in ir.eqns:
        mask = [isinstance(a, Var) and id(a) in unknown for a in eqn.inputs]
        if not any(mask):
            known_eqns.append(eqn)
            continue
        rule = partial_eval_rules.get(eqn.primitive)
        if rule is None:
            unknown_eqns.append(eqn)
            unknown.update(id(v) for v in eqn.outputs)
            continue
        known_part, unknown_part = rule(eqn, mask)
        known_eqns.extend(known_part)
        unknown_eqns.extend(unknown_part)
        for e in unknown_part:
            unknown.update(id(v) for v in e.outputs)
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
    zero_vars = {}

    def zeros_of(aval: ShapedArray) -> Var:
        from . import primitives as P
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
    t_branches = tuple(transpose_ir(b, linear) for b in branches)
    nonlinear = [o for o in ops if not is_undefined(o)]
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
    # Residuals that are the body's own known constants are passed as constants; the others
    # change per iteration and are stacked as extra outputs of the known scan.
    const_vars = {id(v): i for i, v in enumerate(body.in_vars[:nc])}
    const_res = [r for r in split.residuals if id(r) in const_vars]
    stacked_res = [r for r in split.residuals if id(r) not in const_vars]

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
    # unknown carries, and as xs the stacked residuals then the unknown xs.
    slice_vars = _fresh([r.aval for r in stacked_res])
    remap = {id(r): s for r, s in zip(stacked_res, slice_vars)}
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
    n_lx = sum(xs_lin)
    n_y = len(ct_ys)

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

    def read(a):
        if isinstance(a, Literal):
            return TypedScalar(a.value, a.aval.dtype, a.aval.weak_type)
        return env[a]

    for eqn in ir.eqns:
        outs = bind(eqn.primitive, [read(a) for a in eqn.inputs], eqn.params)
        env.update(zip(eqn.outputs, outs))
    return [read(a) for a in ir.outs]


jvp_rules[scan_p] = _scan_jvp
partial_eval_rules[scan_p] = _scan_partial_eval
transpose_rules[scan_p] = _scan_transpose


# -- while (forward mode) ------------------------------------------------------------------------------

def _while_jvp(primals, tangents, *, cond_ir, body_ir, cond_nconsts, body_nconsts):
    cn, bn = cond_nconsts, body_nconsts
    cond_consts = primals[:cn]
    body_consts = primals[cn:cn + bn]
    carry = primals[cn + bn:]
    t_body_consts = tangents[cn:cn + bn]
    t_carry = tangents[cn + bn:]
    ncar = len(carry)
    bconst_nz = [not isinstance(t, Zero) for t in t_body_consts]
    carry_nz = [not isinstance(t, Zero) for t in t_carry]
    for _ in range(ncar + 1):
        _, out_nz = _jvp_region(body_ir, bconst_nz + carry_nz)
        new = [a or b for a, b in zip(carry_nz, out_nz[:ncar])]
        if new == carry_nz:
            break
        carry_nz = new
    carry_avals = [v.aval for v in body_ir.in_vars[bn:]]
    carry_nz = [nz and ad.is_differentiable(a) for nz, a in zip(carry_nz, carry_avals)]
    bconst_avals = [v.aval for v in body_ir.in_vars[:bn]]
    t_bconst_avals = [tangent_aval(a) for a, m in zip(bconst_avals, bconst_nz) if m]
    t_carry_avals = [tangent_aval(a) for a, m in zip(carry_avals, carry_nz) if m]

    def jvp_body(*args):
        c = list(args[:bn])
        tc = list(args[bn:bn + len(t_bconst_avals)])
        car = list(args[bn + len(t_bconst_avals):bn + len(t_bconst_avals) + ncar])
        tcar = list(args[bn + len(t_bconst_avals) + ncar:])
        it_c, it_car = iter(tc), iter(tcar)
        ts = [next(it_c) if m else Zero(tangent_aval(a)) for m, a in zip(bconst_nz, bconst_avals)]
        ts += [next(it_car) if m else Zero(tangent_aval(a)) for m, a in zip(carry_nz, carry_avals)]
        outs, touts = jvp_eval(ClosedIR(body_ir, []), c + car, ts)
        return list(outs) + [instantiate(t) for t, m in zip(touts, carry_nz) if m]

    body, body_consts_r = trace_region(jvp_body, bconst_avals + t_bconst_avals + carry_avals +
                                       t_carry_avals)
    assert not body_consts_r
    from .control_flow import region_with_extra_inputs
    cond = region_with_extra_inputs(cond_ir, [], t_carry_avals, len(cond_ir.in_vars))
    t_init = [instantiate(t) if not isinstance(t, Zero) else ad.zeros(tangent_aval(a))
              for t, a, m in zip(t_carry, carry_avals, carry_nz) if m]
    outs = while_p.bind(*cond_consts, *body_consts,
                        *[t for t in t_body_consts if not isinstance(t, Zero)], *carry, *t_init,
                        cond_ir=cond, body_ir=body, cond_nconsts=cn,
                        body_nconsts=bn + len(t_bconst_avals))
    primal_out = outs[:ncar]
    it = iter(outs[ncar:])
    t_out = [next(it) if m else Zero(a) for m, a in zip(carry_nz, carry_avals)]
    return list(primal_out), t_out


jvp_rules[while_p] = _while_jvp
