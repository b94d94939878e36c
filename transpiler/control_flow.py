"""Structured control flow: the ``cond``, ``while`` and ``scan`` primitives.

Their bodies are sub-IRs (regions) traced from Python functions. A region's captured values
(tracers of an enclosing trace, constants) are closure-converted into explicit operands of the
equation, so every region is a closed function of its inputs, as AD and batching want.

* ``cond[branches] index *operands`` runs ``branches[index]`` (clamped) on the operands.
* ``while[cond_ir, body_ir, cond_nconsts, body_nconsts] *cond_consts *body_consts *carry``
  iterates ``carry = body(carry)`` while ``cond(carry)``.
* ``scan[body, length, reverse, num_consts, num_carry] *consts *carry *xs`` runs
  ``carry, y = body(carry, x)`` over the leading axis of ``xs`` and stacks the ``y``s.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from .ir import IR, ClosedIR, Literal, ShapedArray, Var
from .lower import (Lowering, RuleContext, _compare, hlo, i64_array, lowering_rules, mlir, op,
                    scalar_like, tensor_type)
from .trace import IRBuilder, Primitive, abstract_eval_rules, tracing

cond_p = Primitive("cond", multiple_results=True)
while_p = Primitive("while", multiple_results=True)
scan_p = Primitive("scan", multiple_results=True)

CONTROL_FLOW = frozenset({cond_p, while_p, scan_p})


# -- tracing regions --------------------------------------------------------------------------

def trace_region(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray]
                 ) -> tuple[IR, list]:
    """Trace ``fun(*tracers) -> flat outputs`` as a region of the current trace.

    Returns the region as an IR whose inputs are (captured values..., ``in_avals``...) and the
    captured values themselves (outer tracers or constants), which become operands.
    """
    builder = IRBuilder()
    with tracing(builder):
        args = [builder.new_input(a) for a in in_avals]
        outs = fun(*args)
        closed = builder.finish(list(outs))
    return closed_to_region(closed)


def closed_to_region(closed: ClosedIR) -> tuple[IR, list]:
    """A ClosedIR as (IR taking its consts as leading inputs, the const values)."""
    ir = closed.ir
    return IR([], list(ir.const_vars) + list(ir.in_vars), ir.eqns, ir.outs), list(closed.consts)


def region_with_extra_inputs(region: IR, before: Sequence[ShapedArray],
                             after: Sequence[ShapedArray] = (), skip: int = 0) -> IR:
    """``region`` taking unused inputs of ``before`` avals first (and ``after`` ones inserted
    after its first ``skip`` inputs): lets branches share one operand list."""
    head = [Var(a) for a in before]
    ins = list(region.in_vars)
    middle = [Var(a) for a in after]
    return IR([], head + ins[:skip] + middle + ins[skip:], region.eqns, region.outs)


def _avals_text(avals: Sequence[ShapedArray]) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _same_types(a: Sequence[ShapedArray], b: Sequence[ShapedArray]) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and x.dtype == y.dtype
                                    for x, y in zip(a, b))


# -- cond -------------------------------------------------------------------------------------

def _cond_abstract_eval(index: ShapedArray, *operands: ShapedArray, branches: tuple) -> list:
    if index.shape != () or index.dtype != np.int32:
        raise TypeError(f"cond's branch index must be an int32 scalar, got {index.str_short()}")
    outs = branches[0].out_avals
    for b in branches[1:]:
        if not _same_types(b.out_avals, outs):
            raise TypeError(f"cond branches return different types: {_avals_text(outs)} and "
                            f"{_avals_text(b.out_avals)}")
    for b in branches:
        if not _same_types(b.in_avals, operands):
            raise TypeError(f"cond branch takes {_avals_text(b.in_avals)} but the operands are "
                            f"{_avals_text(operands)}")
    # Weak only where every branch is weak.
    return [ShapedArray(a.shape, a.dtype, all(b.out_avals[i].weak_type for b in branches))
            for i, a in enumerate(outs)]


abstract_eval_rules[cond_p] = _cond_abstract_eval


def _lower_region_outputs(ctx: RuleContext, region: IR, args: Sequence) -> list:
    sub = Lowering(ctx.dynamic)
    sub._input_views = ctx.lowering._input_views
    return sub.lower_ir(region, list(args))


def _cond_lowering(ctx: RuleContext, index, *operands, branches):
    ir = mlir()
    result_types = [tensor_type(a) for a in ctx.avals_out]
    if len(branches) == 2:
        i32 = ShapedArray((), np.dtype(np.int32))
        pred = _compare(ctx, index, scalar_like(0, np.int32), "NE", i32)
        if_op = op("stablehlo.if", result_types, [pred], regions=2)
        # Region 0 runs when the predicate is true: branch 1.
        order = (branches[1], branches[0])
    else:
        if_op = op("stablehlo.case", result_types, [index], regions=len(branches))
        order = branches
    for region, branch in zip(if_op.regions, order):
        block = ir.Block.create_at_start(region, [])
        with ir.InsertionPoint(block):
            outs = _lower_region_outputs(ctx, branch, operands)
            op("stablehlo.return", [], [_made_here(v, block) for v in outs])
    return list(if_op.results)


def _made_here(value, block):
    """``value`` as a result of an op in ``block``. Works around an IREE 3.13 bug: a branch of a
    stablehlo.if/case that hands back a value from outside it (the `else` of ``if p: x = ...``
    keeps the old x), with loops around, fails at run time (invalid command buffer bindings,
    null buffers). A one-value optimization barrier in the branch is a no-op that avoids it."""
    owner = getattr(value, "owner", None)
    if isinstance(value, mlir().OpResult) and getattr(owner, "operation", owner).block == block:
        return value
    return op("stablehlo.optimization_barrier", [value.type], [value]).results[0]


lowering_rules[cond_p] = _cond_lowering


# -- while ------------------------------------------------------------------------------------

def _while_abstract_eval(*operands: ShapedArray, cond_ir: IR, body_ir: IR, cond_nconsts: int,
                         body_nconsts: int) -> list:
    carry = operands[cond_nconsts + body_nconsts:]
    if len(cond_ir.outs) != 1 or cond_ir.out_avals[0].shape != () or \
            cond_ir.out_avals[0].dtype != np.bool_:
        raise TypeError(f"while's condition must return a boolean scalar, got "
                        f"{_avals_text(cond_ir.out_avals)}")
    if not _same_types(body_ir.out_avals, carry):
        raise TypeError(f"while's body must return the types it takes: carry "
                        f"{_avals_text(carry)}, body returns {_avals_text(body_ir.out_avals)}")
    return [a.update(weak_type=b.weak_type and a.weak_type)
            for a, b in zip(carry, body_ir.out_avals)]


abstract_eval_rules[while_p] = _while_abstract_eval


def _while_lowering(ctx: RuleContext, *operands, cond_ir, body_ir, cond_nconsts, body_nconsts):
    ir = mlir()
    cond_consts = operands[:cond_nconsts]
    body_consts = operands[cond_nconsts:cond_nconsts + body_nconsts]
    init = operands[cond_nconsts + body_nconsts:]
    types = [tensor_type(a) for a in ctx.avals_out]
    while_op = op("stablehlo.while", types, init, regions=2)
    views = ctx.lowering._input_views
    carries_alias = any(v in views for v in init)
    cond_block = ir.Block.create_at_start(while_op.regions[0], types)
    with ir.InsertionPoint(cond_block):
        (pred,) = _lower_region_outputs(ctx, cond_ir, list(cond_consts) + list(cond_block.arguments))
        op("stablehlo.return", [], [pred])
    body_block = ir.Block.create_at_start(while_op.regions[1], types)
    if carries_alias:  # a carry may start as an input's buffer: update it out of place
        views.update(body_block.arguments)
    with ir.InsertionPoint(body_block):
        outs = _lower_region_outputs(ctx, body_ir, list(body_consts) + list(body_block.arguments))
        outs = _read_every_carry(list(cond_block.arguments), list(body_block.arguments), outs)
        op("stablehlo.return", [], outs)
    results = list(while_op.results)
    if carries_alias:
        views.update(results)
    return results


lowering_rules[while_p] = _while_lowering


def _read_every_carry(cond_args: Sequence, body_args: Sequence, outs: Sequence) -> list:
    """Work around an IREE 3.13 bug: a loop carry that neither region reads (the body only
    overwrites it, as ``v = x[i]`` does) can crash the compile, run it out of memory, or leave
    a null result buffer. ``select(true, new, old)``, with the `true` hidden from the compiler
    behind an optimization barrier, makes the old value read."""
    outs = list(outs)
    hidden_true = None
    for k, (c_arg, b_arg) in enumerate(zip(cond_args, body_args)):
        if outs[k] is not b_arg and _unused(c_arg) and _unused(b_arg):
            if hidden_true is None:
                true = scalar_like(True, np.bool_)
                hidden_true = op("stablehlo.optimization_barrier", [true.type], [true]).result
            outs[k] = hlo("select", outs[k].type, hidden_true, outs[k], b_arg)
    return outs


def _unused(value) -> bool:
    return next(iter(value.uses), None) is None


# -- scan -------------------------------------------------------------------------------------

def _scan_abstract_eval(*operands: ShapedArray, body: IR, length: int, reverse: bool,
                        num_consts: int, num_carry: int) -> list:
    carry = operands[num_consts:num_consts + num_carry]
    xs = operands[num_consts + num_carry:]
    for x in xs:
        if x.ndim == 0 or x.shape[0] != length:
            raise TypeError(f"scan: every xs must have leading dimension {length}, got "
                            f"{x.str_short()}")
    body_carry = body.out_avals[:num_carry]
    if not _same_types(body_carry, carry):
        raise TypeError(f"scan body must return the carry types it takes: carry "
                        f"{_avals_text(carry)}, body returns {_avals_text(body_carry)}")
    ys = [ShapedArray((length,) + y.shape, y.dtype, y.weak_type)
          for y in body.out_avals[num_carry:]]
    return [a.update(weak_type=a.weak_type and b.weak_type)
            for a, b in zip(carry, body_carry)] + ys


abstract_eval_rules[scan_p] = _scan_abstract_eval


def _scan_lowering(ctx: RuleContext, *operands, body, length, reverse, num_consts, num_carry):
    """A counted stablehlo.while: slice each x at the step's index, write each y there."""
    ir = mlir()
    consts = operands[:num_consts]
    init = operands[num_consts:num_consts + num_carry]
    xs = operands[num_consts + num_carry:]
    x_avals = ctx.avals_in[num_consts + num_carry:]
    carry_avals = ctx.avals_out[:num_carry]
    y_avals = ctx.avals_out[num_carry:]
    i32 = ShapedArray((), np.dtype(np.int32))
    i32_t = tensor_type(i32)
    ys_init = [hlo("broadcast_in_dim", tensor_type(a), scalar_like(0, a.dtype),
                   broadcast_dimensions=i64_array([])) for a in y_avals]
    if length == 0:  # no step runs (and a step's size-1 slice of an empty xs would not verify)
        return list(init) + ys_init
    types = [i32_t] + [tensor_type(a) for a in carry_avals] + [tensor_type(a) for a in y_avals]
    while_op = op("stablehlo.while", types, [scalar_like(0, np.int32)] + list(init) + ys_init,
                  regions=2)
    views = ctx.lowering._input_views
    carries_alias = any(v in views for v in init)
    cond_block = ir.Block.create_at_start(while_op.regions[0], types)
    with ir.InsertionPoint(cond_block):
        pred = _compare(ctx, cond_block.arguments[0], scalar_like(length, np.int32), "LT", i32)
        op("stablehlo.return", [], [pred])
    body_block = ir.Block.create_at_start(while_op.regions[1], types)
    args = list(body_block.arguments)
    if carries_alias:
        views.update(args[1:1 + num_carry])
    with ir.InsertionPoint(body_block):
        step = args[0]
        index = hlo("subtract", i32_t, scalar_like(length - 1, np.int32), step) if reverse \
            else step
        zero = scalar_like(0, np.int32)
        x_slices = []
        for x, a in zip(xs, x_avals):
            piece = op("stablehlo.dynamic_slice", [tensor_type(a.update(shape=(1,) + a.shape[1:]))],
                       [x, index] + [zero] * (a.ndim - 1),
                       {"slice_sizes": i64_array((1,) + a.shape[1:])}).result
            x_slices.append(hlo("reshape", tensor_type(a.update(shape=a.shape[1:])), piece))
        carry = args[1:1 + num_carry]
        outs = _lower_region_outputs(ctx, body, list(consts) + list(carry) + x_slices)
        new_carry, y_slices = outs[:num_carry], outs[num_carry:]
        new_ys = []
        for ys, y, a in zip(args[1 + num_carry:], y_slices, y_avals):
            y1 = hlo("reshape", tensor_type(a.update(shape=(1,) + a.shape[1:])), y)
            new_ys.append(op("stablehlo.dynamic_update_slice", [ys.type],
                             [ys, y1, index] + [zero] * (a.ndim - 1)).result)
        next_step = hlo("add", i32_t, step, scalar_like(1, np.int32))
        new_carry = _read_every_carry(cond_block.arguments[1:1 + num_carry],
                                      args[1:1 + num_carry], new_carry)
        op("stablehlo.return", [], [next_step] + list(new_carry) + new_ys)
    results = list(while_op.results)[1:]
    if carries_alias:
        views.update(results[:num_carry])
    return results


lowering_rules[scan_p] = _scan_lowering
