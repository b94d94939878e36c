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


# -- while (reverse mode) ------------------------------------------------------------------------------
#
# A while loop's trip count depends on the data, so its linear part cannot be a loop of a
# length known when tracing. The primal loop runs as ``while_count``, which also counts its
# iterations N. The linear part is ``replay_scan``: N steps, each the body's JVP at that step's
# primal carry. Going forwards, the primal carry advances alongside (O(N) body evaluations);
# the transpose goes backwards and recomputes the carry of step k from the loop's initial
# carry (O(N^2) body evaluations, memory of one carry, no bound on N).
#
# Recomputation rather than stacks of recorded carries, because in IREE 3.13 (a) a loop that
# updates a carried buffer copies it whole at every iteration, so stacks cost O(N^2) copying
# as well, and (b) loops carrying dynamically-shaped stacks miscompile when the body has a
# conditional (wrong values or out-of-range bindings), which every bisection has.

from .lower import RuleContext, _compare, hlo, lowering_rules, mlir, op, scalar_like, tensor_type
from .trace import Primitive, abstract_eval_rules

while_count_p = Primitive("while_count", multiple_results=True)
replay_scan_p = Primitive("replay_scan", multiple_results=True)

_I32 = ShapedArray((), np.dtype(np.int32))


def _lower_in(ctx: RuleContext, region: IR, args: Sequence) -> list:
    from .control_flow import _lower_region_outputs
    return _lower_region_outputs(ctx, region, args, loop_body=True)


def _counted_while(types: list, inits: list, cond_fn, body_fn) -> list:
    """A stablehlo.while whose regions ``cond_fn``/``body_fn`` build from the block args; the
    first carry is an int32 step counter that starts at 0 and that the body increments.

    A carry the body does not read (a ``prev`` it overwrites, that only the condition reads)
    gets a read: ``select(counter < 0, old, new)``, always ``new``. Without one, IREE 3.13
    miscompiles the loop: it rotates it into an if around a do-while, where such a carry is
    dead, drops it from the loop's inputs but not from its results, and the stream conversion
    then crashes the compiler (or rejects the module)."""
    ir = mlir()
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
        op("stablehlo.return", [], outs)
    return list(loop.results)


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


def _replay_scan_abstract_eval(n, *operands, body, primal_body, stacked, reverse, num_consts,
                               num_carry, num_primal_consts):
    return list(operands[num_consts:num_consts + num_carry])


def _replay_scan_lowering(ctx: RuleContext, n, *operands, body, primal_body, stacked, reverse,
                          num_consts, num_carry, num_primal_consts):
    """Step k of N runs ``body(consts, carry, primal carry k)``; the primal carry k comes from
    advancing the primal carry alongside (forwards) or from replaying k primal steps from the
    initial primal carry (backwards)."""
    consts = list(operands[:num_consts])
    init = list(operands[num_consts:num_consts + num_carry])
    primal_consts = list(operands[num_consts + num_carry:
                                  num_consts + num_carry + num_primal_consts])
    primal_init = list(operands[num_consts + num_carry + num_primal_consts:])
    primal_types = [tensor_type(a) for a in
                    ctx.avals_in[1 + num_consts + num_carry + num_primal_consts:]]
    carry_types = [tensor_type(a) for a in ctx.avals_out]
    i32_t = tensor_type(_I32)
    n_p = len(primal_init)

    def step(carry, primal):
        slices = [p for p, s in zip(primal, stacked) if s]
        return _lower_in(ctx, body, consts + list(carry) + slices)

    def primal_step(primal):
        return _lower_in(ctx, primal_body, primal_consts + list(primal))

    def less_than(bound):
        return lambda args: _compare(ctx, args[0], bound, "LT", _I32)

    if not reverse:
        results = _counted_while(
            [i32_t] + carry_types + primal_types, [scalar_like(0, np.int32)] + init + primal_init,
            less_than(n),
            lambda args: ([_increment(args[0])] +
                          step(args[1:1 + num_carry], args[1 + num_carry:]) +
                          primal_step(args[1 + num_carry:])))
        return results[1:1 + num_carry]

    def backward_step(args):
        k, carry = args[0], args[1:]
        index = hlo("subtract", i32_t, hlo("subtract", i32_t, n, scalar_like(1, np.int32)), k)
        replayed = _counted_while(
            [i32_t] + primal_types, [scalar_like(0, np.int32)] + primal_init, less_than(index),
            lambda a: [_increment(a[0])] + primal_step(a[1:1 + n_p]))
        # Without a barrier on the replayed carry, IREE 3.13's stream partitioning fails
        # ("circular dependency: input operation uses partition output") on some programs,
        # e.g. the gradient of a bisection followed by a Newton step.
        replayed = list(op("stablehlo.optimization_barrier", primal_types,
                           replayed[1:]).results) if n_p else []
        return [_increment(k)] + step(carry, replayed)

    results = _counted_while([i32_t] + carry_types, [scalar_like(0, np.int32)] + init,
                             less_than(n), backward_step)
    return results[1:]


abstract_eval_rules[replay_scan_p] = _replay_scan_abstract_eval
lowering_rules[replay_scan_p] = _replay_scan_lowering


def _dce(ir: IR, keep_effects: bool = True) -> IR:
    """``ir`` without the equations its outputs do not need; effects (print, assert) are kept
    unless ``keep_effects`` is false (in replays of steps that have run once already)."""
    live = {id(a) for a in ir.outs if isinstance(a, Var)}
    kept = []
    from .trace import has_effects
    for eqn in reversed(ir.eqns):
        if any(id(v) in live for v in eqn.outputs) or keep_effects and has_effects([eqn]):
            kept.append(eqn)
            live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    kept.reverse()
    return IR(ir.const_vars, ir.in_vars, kept, ir.outs)


def _while_partial_eval(eqn: Eqn, unknown: Sequence[bool]) -> tuple[list, list]:
    p = eqn.params
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cond_ir, body_ir = p["cond_ir"], p["body_ir"]
    if any(unknown[:cn]):
        raise TypeError("a while loop's condition cannot depend on a tangent")
    bconst_u = list(unknown[cn:cn + bn])
    carry_u = list(unknown[cn + bn:])
    ncar = len(carry_u)
    for _ in range(ncar + 1):
        split = partial_eval_ir(body_ir, bconst_u + carry_u)
        new = [a or b for a, b in zip(carry_u, split.out_unknown)]
        if new == carry_u:
            break
        carry_u = new
    if partial_eval_ir(cond_ir, [False] * cn + carry_u).out_unknown[0]:
        raise TypeError("a while loop's condition cannot depend on a tangent")
    ins = eqn.inputs
    cond_consts = ins[:cn]
    bconsts, carry_in = ins[cn:cn + bn], ins[cn + bn:]
    body_bconst_vars, body_carry_vars = body_ir.in_vars[:bn], body_ir.in_vars[bn:]
    known_bconst_vars = [v for v, u in zip(body_bconst_vars, bconst_u) if not u]
    known_carry_vars = [v for v, u in zip(body_carry_vars, carry_u) if not u]
    unknown_bconst_vars = [v for v, u in zip(body_bconst_vars, bconst_u) if u]
    unknown_carry_vars = [v for v, u in zip(body_carry_vars, carry_u) if u]
    known_bconsts = [a for a, u in zip(bconsts, bconst_u) if not u]
    known_init = [a for a, u in zip(carry_in, carry_u) if not u]
    # The primal loop: the body's known equations, producing the known carries.
    split = partial_eval_ir(body_ir, bconst_u + carry_u, carry_u)
    known_outs = [a for a, u in zip(body_ir.outs, carry_u) if not u]
    primal_body = _dce(IR([], known_bconst_vars + known_carry_vars, split.known.eqns, known_outs))
    cond_known = _dce(IR([], list(cond_ir.in_vars[:cn]) +
                         [v for v, u in zip(cond_ir.in_vars[cn:], carry_u) if not u],
                         cond_ir.eqns, cond_ir.outs))
    # The linear step: the JVP body at the step's primal carry (only the carries it reads).
    # The primal loop (while_count) runs the body's prints and asserts; the replays do not.
    replay_body = _dce(primal_body, keep_effects=False)
    step = _dce(IR([], known_bconst_vars + unknown_bconst_vars + unknown_carry_vars +
                   known_carry_vars, body_ir.eqns,
                   [a for a, u in zip(body_ir.outs, carry_u) if u]), keep_effects=False)
    used = {id(a) for e in step.eqns for a in e.inputs} | {id(a) for a in step.outs}
    stacked = tuple(id(v) in used for v in known_carry_vars)
    step = IR([], step.in_vars[:len(step.in_vars) - len(known_carry_vars)] +
              [v for v, s in zip(known_carry_vars, stacked) if s], step.eqns, step.outs)
    count = Var(_I32)
    known_eqn = Eqn(while_count_p, list(cond_consts) + known_bconsts + known_init,
                    {"cond_ir": cond_known, "body_ir": primal_body, "cond_nconsts": cn,
                     "body_nconsts": len(known_bconst_vars)},
                    [v for v, u in zip(eqn.outputs, carry_u) if not u] + [count], eqn.loc)
    unknown_eqn = Eqn(replay_scan_p,
                      [count] + known_bconsts + [a for a, u in zip(bconsts, bconst_u) if u] +
                      [a for a, u in zip(carry_in, carry_u) if u] + known_bconsts + known_init,
                      {"body": step, "primal_body": replay_body, "stacked": stacked,
                       "reverse": False,
                       "num_consts": len(known_bconst_vars) + len(unknown_bconst_vars),
                       "num_carry": len(unknown_carry_vars),
                       "num_primal_consts": len(known_bconst_vars)},
                      [v for v, u in zip(eqn.outputs, carry_u) if u], eqn.loc)
    return [known_eqn], [unknown_eqn]


def _replay_scan_transpose(cts, n, *args, body, primal_body, stacked, reverse, num_consts,
                           num_carry, num_primal_consts):
    consts = args[:num_consts]
    carry = args[num_consts:num_consts + num_carry]
    primal = args[num_consts + num_carry:]
    if is_undefined(n) or any(is_undefined(a) for a in primal):
        raise _higher_order_error()
    const_lin = [is_undefined(c) for c in consts]
    n_slices = sum(stacked)
    t_body = transpose_ir(body, const_lin + [True] * num_carry + [False] * n_slices)
    res_consts = [c for c, lin in zip(consts, const_lin) if not lin]
    lin_const_avals = [c.aval for c, lin in zip(consts, const_lin) if lin]
    n_rc, n_lc = len(res_consts), len(lin_const_avals)
    ct_carry = [instantiate(ct) for ct in cts]

    def t_step(*vals):
        rc = list(vals[:n_rc])
        ct_c = list(vals[n_rc:n_rc + num_carry])
        acc = list(vals[n_rc + num_carry:n_rc + num_carry + n_lc])
        slices = list(vals[n_rc + num_carry + n_lc:])
        outs = _eval_ir(t_body, rc + slices + ct_c)
        ct_consts, ct_carry_in = outs[:n_lc], outs[n_lc:]
        acc = [ad.add_tangents(a, c) for a, c in zip(acc, ct_consts)]
        return ct_carry_in + acc

    primal_avals = [get_aval(a) for a in primal[num_primal_consts:]]
    slice_avals = [a for a, s in zip(primal_avals, stacked) if s]
    step_avals = ([get_aval(c) for c in res_consts] + [get_aval(c) for c in ct_carry] +
                  [tangent_aval(a) for a in lin_const_avals] + slice_avals)
    region, region_consts = trace_region(t_step, step_avals)
    assert not region_consts
    # The transposed step takes (consts, carry..., primal carry); accumulators ride as carry.
    acc_init = [ad.zeros(tangent_aval(a)) for a in lin_const_avals]
    outs = replay_scan_p.bind(n, *res_consts, *ct_carry, *acc_init, *primal, body=region,
                              primal_body=primal_body, stacked=stacked, reverse=not reverse,
                              num_consts=n_rc, num_carry=num_carry + n_lc,
                              num_primal_consts=num_primal_consts)
    ct_init, ct_lin = outs[:num_carry], outs[num_carry:]
    it = iter(ct_lin)
    return [None] + [next(it) if lin else None for lin in const_lin] + \
        [ct if is_undefined(c) else None for ct, c in zip(ct_init, carry)] + [None] * len(primal)


def _higher_order_error() -> NotImplementedError:
    return NotImplementedError(
        "reverse mode through the derivative of a while loop whose trip count depends on the "
        "data is not supported (grad of grad); forward mode over it is (jvp of grad, "
        "jacfwd(jacrev(f)), hessian), and loops of a fixed trip count, fori_loop and scan "
        "support any order")


# -- forward mode over the reverse pass (jacfwd(jacrev(f)), hessian) -----------------------------

def _while_count_jvp(primals, tangents, **params):
    """The loop's JVP (while's rule) and, from a primal loop beside it, its trip count."""
    count = while_count_p.bind(*primals, **params)[-1]
    outs, touts = _while_jvp(primals, tangents, **params)
    return list(outs) + [count], list(touts) + [Zero(tangent_aval(_I32))]


def _dense_jvp_region(region: IR, n_in_groups: Sequence[int]) -> tuple[IR, list[bool]]:
    """``region`` as a function of its inputs and the tangents of its differentiable inputs,
    returning its outputs and the tangents of its differentiable outputs. The inputs come in
    groups (sizes ``n_in_groups``); each group's tangents follow the group. Returns the region
    and, per input, whether it has a tangent."""
    in_avals = [v.aval for v in region.in_vars]
    has_t = [ad.is_differentiable(a) for a in in_avals]
    out_has_t = [ad.is_differentiable(a) for a in region.out_avals]
    groups, start = [], 0
    for size in n_in_groups:
        groups.append(list(range(start, start + size)))
        start += size
    layout_avals, layout = [], []  # (input index, is tangent) per region input, in order
    for g in groups:
        for i in g:
            layout.append((i, False))
            layout_avals.append(in_avals[i])
        for i in g:
            if has_t[i]:
                layout.append((i, True))
                layout_avals.append(tangent_aval(in_avals[i]))

    def fn(*vals):
        primal = [None] * len(in_avals)
        tangent = [Zero(tangent_aval(a)) for a in in_avals]
        for (i, is_t), v in zip(layout, vals):
            if is_t:
                tangent[i] = v
            else:
                primal[i] = v
        outs, touts = jvp_eval(ClosedIR(region, []), primal, tangent)
        return list(outs) + [instantiate(t) for t, h in zip(touts, out_has_t) if h]

    traced, consts = trace_region(fn, layout_avals)
    assert not consts
    return traced, has_t


def _replay_scan_jvp(primals, tangents, *, body, primal_body, stacked, reverse, num_consts,
                     num_carry, num_primal_consts):
    """A replay_scan of the JVPs: its carry holds the tangents beside the carry, and its primal
    carry the primal carry's tangents beside the primal carry (replayed alike)."""
    n, ops, t_ops = primals[0], list(primals[1:]), list(tangents[1:])
    n_c, n_car, n_pc = num_consts, num_carry, num_primal_consts
    bounds = [0, n_c, n_c + n_car, n_c + n_car + n_pc, len(ops)]
    parts = [ops[a:b] for a, b in zip(bounds, bounds[1:])]
    t_parts = [t_ops[a:b] for a, b in zip(bounds, bounds[1:])]
    n_slices = sum(stacked)
    new_body, body_t = _dense_jvp_region(body, [n_c, n_car, n_slices])
    new_primal_body, primal_t = _dense_jvp_region(primal_body, [n_pc, len(parts[3])])
    slice_t = body_t[n_c + n_car:]
    new_stacked = tuple(stacked) + tuple(
        s for s, h in zip(stacked, primal_t[n_pc:]) if h)
    # The body's slices come as (primal slices, their tangents); the primal carry as (primal
    # carry, its tangents): the stacked tangents are in the same order as the slices with one.
    assert [h for s, h in zip(stacked, primal_t[n_pc:]) if s] == slice_t

    def with_tangents(values, t_values):
        dense = [instantiate(t) if not isinstance(t, Zero) else ad.zeros(tangent_aval(get_aval(v)))
                 for v, t in zip(values, t_values)]
        return list(values) + [d for d, v in zip(dense, values)
                               if ad.is_differentiable(get_aval(v))]

    groups = [with_tangents(p, t) for p, t in zip(parts, t_parts)]
    outs = replay_scan_p.bind(n, *groups[0], *groups[1], *groups[2], *groups[3],
                              body=new_body, primal_body=new_primal_body, stacked=new_stacked,
                              reverse=reverse, num_consts=len(groups[0]),
                              num_carry=len(groups[1]), num_primal_consts=len(groups[2]))
    primal_out = outs[:n_car]
    it = iter(outs[n_car:])
    t_out = [next(it) if ad.is_differentiable(get_aval(v)) else Zero(tangent_aval(get_aval(v)))
             for v in primal_out]
    return list(primal_out), t_out


def _replay_scan_partial_eval(eqn: Eqn, unknown: Sequence[bool]) -> tuple[list, list]:
    # Linearizing a replay_scan (reverse mode over the derivative of a while loop) would split
    # it into a primal and a linear replay: not done.
    raise _higher_order_error()


partial_eval_rules[while_p] = _while_partial_eval
partial_eval_rules[replay_scan_p] = _replay_scan_partial_eval
transpose_rules[replay_scan_p] = _replay_scan_transpose
jvp_rules[while_count_p] = _while_count_jvp
jvp_rules[replay_scan_p] = _replay_scan_jvp
