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

import contextvars
from typing import Any, Callable, Sequence

import numpy as np

from ..core.ir import IR, ClosedIR, Eqn, ShapedArray, Var, regions
from ..core.trace import (Primitive, abstract_eval_rules, effectful_primitives, get_aval,
                          has_effects, trace_region)
from ..interpreters.nan_check import descend_rules, host_value
from ..interpreters.prune import needed_carries, pick, pruning_rules, reads
from ..backend import eager
from ..backend.lower import (Lowering, RuleContext, _compare, hlo, i64_array, index_constant,
                             kept_past_loop, lowering_rules, mlir, op, opaque_select, opaque_true,
                             own_buffers, scalar_like, tensor_type)

cond_p = Primitive("cond", multiple_results=True)
while_p = Primitive("while", multiple_results=True)
scan_p = Primitive("scan", multiple_results=True)

CONTROL_FLOW = frozenset({cond_p, while_p, scan_p})
# Eagerly: compiled per shape (their regions are arbitrary programs); cond's branch is chosen
# on the host.
eager.STATIC_SHAPE_PRIMITIVES.update(CONTROL_FLOW)
eager.BRANCH_PRIMITIVES[cond_p] = lambda params, index: taken_branch(params["branches"], index)


# -- tracing regions --------------------------------------------------------------------------

def bind_while(cond_fun: Callable[..., Sequence[Any]], body_fun: Callable[..., Sequence[Any]],
               init: Sequence[Any]) -> list:
    """A ``while`` equation iterating ``body_fun(*carry)`` (flat carry in, flat carry out)
    while ``cond_fun(*carry)`` (a list of one scalar predicate), from ``init``: both traced as
    regions on ``init``'s types. For rules that build loops of their own (scan and while under
    partitioning and SPMD evaluation).

    Example: ``bind_while(lambda i: [i < 10], lambda i: [i + 1], [zero])``
    """
    avals = [get_aval(x) for x in init]
    cond_region, cond_captured = trace_region(cond_fun, avals)
    body_region, body_captured = trace_region(body_fun, avals)
    return while_p.bind(*cond_captured, *body_captured, *init, cond_ir=cond_region,
                        body_ir=body_region, cond_nconsts=len(cond_captured),
                        body_nconsts=len(body_captured))


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


def taken_branch(branches: Sequence[IR], index: Any) -> IR:
    """The branch a concrete ``index`` picks, clamped into range as ``switch`` does (eager
    conds and their transposes outside jit run it alone)."""
    return branches[min(max(int(np.asarray(index)), 0), len(branches) - 1)]


def _lower_region_outputs(ctx: RuleContext, region: IR, args: Sequence,
                          loop_body: bool = False, effect_token: bool = False) -> list:
    """Emit ``region`` on ``args`` at the insertion point; ``loop_body``: it is (part of) the
    body or condition of a loop; ``effect_token``: the region has no outputs, and one int32
    scalar is appended to them that depends on the unused results of its effectful
    equations (see ``_cond_lowering``)."""
    sub = Lowering(ctx.dynamic)
    sub._input_views = ctx.lowering._input_views
    sub.hoisted = ctx.lowering.hoisted
    sub.in_loop = ctx.lowering.in_loop or loop_body
    sub.in_region = True
    outs = sub.lower_ir(region, list(args))
    if effect_token:
        token = scalar_like(0, np.int32)
        if sub.unused_effect_results:
            pending = [token] + sub.unused_effect_results
            token = op("stablehlo.optimization_barrier", [v.type for v in pending],
                       pending).results[0]
        outs = outs + [token]
    return outs


# Inside loops, branches this small, without effects or loops, run both and select. There a
# stablehlo.if makes IREE read the predicate back on the host and wait for it at every
# iteration, where a select is one fused elementwise op (Collatz steps: 6.9 -> 4.8 us per
# iteration); and IREE 3.13 miscompiles such ifs when their branches hand back values from
# outside them (see lower.own_buffers). Pure ops cannot trap, so running the branch not taken is
# harmless. Outside loops conds stay stablehlo.if/case, one host round trip per call.
SELECT_MAX_ELEMENTS = 1 << 14


def _speculatable(branches: Sequence[IR], out_avals: Sequence[ShapedArray]) -> bool:
    elements = len(branches) * sum(a.size for a in out_avals)  # the selects themselves
    for branch in branches:
        for eqn in branch.eqns:
            if eqn.primitive in effectful_primitives or regions(eqn):
                return False
            elements += sum(v.aval.size for v in eqn.outputs)
    return elements <= SELECT_MAX_ELEMENTS


def _cond_lowering(ctx: RuleContext, index, *operands, branches):
    ir = mlir()
    result_types = [tensor_type(a) for a in ctx.avals_out]
    # A branch without outputs whose loop prints and leaves its results unused fails in IREE
    # 3.13 as at the top level (see Lowering.lower_ir): such a cond yields one extra int32
    # token tied to those results, which the enclosing IR joins to its own outputs.
    effect_token = not result_types and any(has_effects(b.eqns) for b in branches)
    if effect_token:
        result_types.append(tensor_type(ShapedArray((), np.dtype(np.int32))))
    i32 = ShapedArray((), np.dtype(np.int32))
    if ctx.lowering.in_loop and _speculatable(branches, ctx.avals_out):
        results = _lower_region_outputs(ctx, branches[0], operands)
        for i, branch in enumerate(branches[1:], start=1):
            outs = _lower_region_outputs(ctx, branch, operands)
            # The index is in range (switch clamps it; cond's is 0 or 1).
            taken = _compare(ctx, index, scalar_like(i, np.int32), "EQ", i32)
            results = [v if v is r else hlo("select", t, taken, v, r)
                       for v, r, t in zip(outs, results, result_types)]
        return results
    if len(branches) == 2:
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
            outs = _lower_region_outputs(ctx, branch, operands, effect_token=effect_token)
            # Inside a loop or another branch, values from outside the branch get barriers too
            # (own_buffers): an eager cond of 17 operands nested in a cond (physical_optimization
            # under grad) ran into a null buffer without them.
            outs = own_buffers(outs, block, ctx.lowering.in_loop or ctx.lowering.in_region)
            op("stablehlo.return", [], outs)
    return list(if_op.results)


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
    init = own_buffers(init, None)
    while_op = op("stablehlo.while", types, init, regions=2)
    views = ctx.lowering._input_views
    carries_alias = any(v in views for v in init)
    cond_block = ir.Block.create_at_start(while_op.regions[0], types)
    with ir.InsertionPoint(cond_block):
        (pred,) = _lower_region_outputs(ctx, cond_ir, list(cond_consts) +
                                        list(cond_block.arguments), loop_body=True)
        op("stablehlo.return", [], [pred])
    body_block = ir.Block.create_at_start(while_op.regions[1], types)
    if carries_alias:  # a carry may start as an input's buffer: update it out of place
        views.update(body_block.arguments)
    with ir.InsertionPoint(body_block):
        outs = _lower_region_outputs(ctx, body_ir, list(body_consts) + list(body_block.arguments),
                                     loop_body=True)
        outs = _read_every_carry(while_op, list(body_block.arguments), outs)
        op("stablehlo.return", [], own_buffers(outs, body_block, False))
    results = kept_past_loop(while_op.results, init)
    if carries_alias:
        views.update(results)
    return results


lowering_rules[while_p] = _while_lowering


def _read_every_carry(loop, body_args: Sequence, outs: Sequence) -> list:
    """Work around two IREE 3.13 bugs about loop carries.

    * A carry that the body does not read (the body only overwrites it, as ``v = x[i]`` does,
      whether or not the condition reads it) can crash the compile, run it out of memory,
      leave a null result buffer, or fail to compile ("region branch point has 4 operands,
      but region successor needs 2 inputs": a cond reading ``max(x)`` carried beside ``x``).
    * A carry whose new value is another carry unchanged (``a, b = b, f(b)``, as a secant or
      Newton iteration keeping its previous iterate) fails to compile ("failed to legalize
      unresolved source materialization"; an optimization barrier on the value passed on is
      not enough for scalars).

    ``select(true, new, old)``, with the `true` hidden from the compiler (``opaque_true``),
    makes the old value read and the new one computed. The hidden `true` is a one-element
    vector made before ``loop``: IREE reads a rank-0 predicate back on the host, and the loop
    then waited for that read at every iteration (read in IREE's stream IR; made in the body,
    it also waited for the iteration's kernels: a whole-device synchronisation per iteration
    on a GPU)."""
    outs = list(outs)
    true = None
    others = set(body_args)
    for k, b_arg in enumerate(body_args):
        if outs[k] is not b_arg and (_unused(b_arg) or outs[k] in others):
            if true is None:
                with mlir().InsertionPoint(loop):
                    true = opaque_true(0)
            outs[k] = opaque_select(outs[k], b_arg, true)
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


# Steps of a scan run in chunks, each chunk's steps unrolled in one loop iteration. IREE 3.13
# copies a loop-carried buffer whole at every iteration in which the loop updates part of it
# (the stacked ys), and each iteration costs some microseconds of control; chunks of k steps
# divide both by k (a 100-step RNN's gradient ran 2.5x faster with k = 10). The unrolled body
# is kept below a size budget, which bounds the growth of compile time.
SCAN_CHUNK_MAX = 16
SCAN_UNROLLED_EQNS = 256
# IREE fuses the unrolled steps of an elementwise body (a scalar Newton iteration) into one
# dispatch that writes each step's row of each stacked output through a buffer binding of its
# own: 30 steps of such a body under grad (7 stacked residuals, 14 steps left over) made a
# dispatch of 86 bindings, more than IREE's CPU runtime takes (32; CUDA's: 16). Rows per chunk
# are kept to a number that fits beside the dispatch's inputs. Since IREE binds the outputs
# of one buffer once (runtime/compile.py, GLOBAL_COMPILER_OPTIONS) that body compiles with 48
# rows on the CPU, and more rows per chunk copy the stacked ys fewer times (see
# SCAN_BLOCKING_MIN_CHUNKS): benchmarks/ad.py's RNN gradient (3 stacked residuals, k 8 -> 16)
# 12.1 -> 10.2 and 11.2 -> 9.6 ms, JAX 7.5 and 7.3 (Emerald Rapids, alternating in one process).
SCAN_ROWS_PER_CHUNK = {"cuda": 8, "vulkan": 24}
SCAN_ROWS_PER_CHUNK_DEFAULT = 48


def region_size(ir: IR) -> int:
    """Number of equations in ``ir``, those of nested regions included."""
    total = 0
    for eqn in ir.eqns:
        total += 1 + sum(region_size(region) for region in regions(eqn))
    return total


def scan_chunk(body: IR, length: int, num_ys: int = 0, platform: str = "cpu") -> int:
    """Steps per loop iteration for a scan of ``length`` steps of ``body`` stacking ``num_ys``
    outputs, compiled for ``platform``."""
    rows = SCAN_ROWS_PER_CHUNK.get(platform, SCAN_ROWS_PER_CHUNK_DEFAULT)
    k = min(SCAN_CHUNK_MAX, SCAN_UNROLLED_EQNS // max(1, region_size(body)),
            rows // max(1, num_ys))
    return min(max(1, k), max(length, 1))


# Rewrites of a scan's body tried before it is lowered, each ``(body, num_consts, num_carry,
# length) -> None or (before, new_body, n_invariant)``: ``before`` maps (consts, xs) to values
# computed ahead of the loop (``n_invariant`` new consts, then new xs), which ``new_body`` takes
# after the consts and after the x slices. loop_hoisting.py registers one.
scan_body_rewrites: list[Callable] = []


def _scan_lowering(ctx: RuleContext, *operands, body, length, reverse, num_consts, num_carry):
    """A counted loop (scf.for) over chunks of k steps (``scan_chunk``), the steps of a chunk
    unrolled: the chunk's xs are sliced once, its ys written once; the steps left over after
    the last whole chunk run unrolled after the loop (a scan of at most k steps has no loop)."""
    if not ctx.dynamic:
        for rewrite in scan_body_rewrites:
            split = rewrite(body, num_consts, num_carry, length)
            if split is None:
                continue
            before, body, n_invariant = split
            consts = list(operands[:num_consts])
            xs = list(operands[num_consts + num_carry:])
            made = _lower_region_outputs(ctx, before, consts + xs)
            made_avals = before.out_avals
            avals_in = (list(ctx.avals_in[:num_consts]) + made_avals[:n_invariant]
                        + list(ctx.avals_in[num_consts:]) + made_avals[n_invariant:])
            operands = (consts + made[:n_invariant] + list(operands[num_consts:])
                        + made[n_invariant:])
            return _scan_lowering(RuleContext(ctx.lowering, avals_in, ctx.avals_out, ctx.dyn),
                                  *operands, body=body, length=length, reverse=reverse,
                                  num_consts=num_consts + n_invariant, num_carry=num_carry)
    consts = list(operands[:num_consts])
    init = list(operands[num_consts:num_consts + num_carry])
    xs = list(operands[num_consts + num_carry:])
    x_avals = ctx.avals_in[num_consts + num_carry:]
    carry_avals = ctx.avals_out[:num_carry]
    y_avals = ctx.avals_out[num_carry:]
    i32 = ShapedArray((), np.dtype(np.int32))
    i32_t = tensor_type(i32)
    if length == 0:  # no step runs (and a step's size-1 slice of an empty xs would not verify)
        return init + [hlo("broadcast_in_dim", tensor_type(a), scalar_like(0, a.dtype),
                           broadcast_dimensions=i64_array([])) for a in y_avals]
    k = scan_chunk(body, length, len(y_avals), ctx.lowering.platform)
    blocking_chunks = SCAN_BLOCKING_MIN_CHUNKS.get(ctx.lowering.platform,
                                                   SCAN_BLOCKING_MIN_CHUNKS_DEFAULT)
    if (y_avals and length // k >= blocking_chunks and not ctx.dynamic
            and not _in_blocked_scan.get()):
        token = _in_blocked_scan.set(True)
        try:
            return _blocked_scan(ctx, operands, body, length, reverse, num_consts, num_carry, k)
        finally:
            _in_blocked_scan.reset(token)
    n_chunks, n_left = divmod(length, k)
    views = ctx.lowering._input_views
    carries_alias = any(v in views for v in init)

    def block_start(first_step, n_steps):
        """Index of the lowest row that steps first_step .. first_step + n_steps - 1 touch
        (an i32 tensor; first_step may be one)."""
        if not reverse:
            return first_step
        return _i32_sub(scalar_like(length - n_steps, np.int32), first_step)

    def run_steps(carry, first_step, n_steps):
        """Steps first_step .. + n_steps, unrolled: the new carry and the block of ys rows (in
        index order) they produce."""
        start = block_start(first_step, n_steps)
        x_blocks = [_rows(x, a, start, n_steps) for x, a in zip(xs, x_avals)]
        y_rows = [[] for _ in y_avals]
        for j in range(n_steps):
            row = n_steps - 1 - j if reverse else j
            x_slices = [_row(block, a, row, n_steps) for block, a in zip(x_blocks, x_avals)]
            outs = _lower_region_outputs(ctx, body, consts + list(carry) + x_slices,
                                         loop_body=True)
            carry = outs[:num_carry]
            for rows, y in zip(y_rows, outs[num_carry:]):
                rows.append(y)
        blocks = [_stack_rows(rows[::-1] if reverse else rows, a, n_steps)
                  for rows, a in zip(y_rows, y_avals)]
        return list(carry), blocks, start

    if length <= k:  # at most one chunk: no loop
        carry, blocks, _ = run_steps(init, scalar_like(0, np.int32), length)
        return carry + blocks

    ir = mlir()
    ys_init = [hlo("broadcast_in_dim", tensor_type(a), scalar_like(0, a.dtype),
                   broadcast_dimensions=i64_array([])) for a in y_avals]
    types = [tensor_type(a) for a in carry_avals] + [tensor_type(a) for a in y_avals]
    # An scf.for whose counter lives on the host: with a stablehlo.while counting in a tensor,
    # IREE read the counter (for the slices) and the condition back from the device at every
    # iteration, two waits for the whole device per iteration on a GPU (read in IREE's stream
    # IR); an scf.for's iterations are queued without waiting.
    index = ir.IndexType.get()
    inits = own_buffers(init + ys_init, None)
    loop = op("scf.for", types, [index_constant(0), index_constant(n_chunks * k),
                                 index_constant(k)] + inits, regions=1)
    body_block = ir.Block.create_at_start(loop.regions[0], [index] + types)
    args = list(body_block.arguments)
    if carries_alias:
        views.update(args[1:1 + num_carry])
    with ir.InsertionPoint(body_block):
        step_i32 = op("arith.index_cast", [ir.IntegerType.get_signless(32)], [args[0]]).result
        step = op("tensor.from_elements", [i32_t], [step_i32]).result
        carry, ys = args[1:1 + num_carry], args[1 + num_carry:]
        new_carry, blocks, start = run_steps(carry, step, k)
        new_ys = [_write_rows(y, block, a, start) for y, block, a in zip(ys, blocks, y_avals)]
        new_carry = _read_every_carry(loop, carry, new_carry)
        op("scf.yield", [], own_buffers(list(new_carry) + new_ys, body_block, False))
    results = kept_past_loop(loop.results, inits)
    carry, ys = results[:num_carry], results[num_carry:]
    if carries_alias:
        views.update(carry)
    if n_left:
        carry, blocks, start = run_steps(carry, scalar_like(n_chunks * k, np.int32), n_left)
        ys = [_write_rows(y, block, a, start) for y, block, a in zip(ys, blocks, y_avals)]
    return list(carry) + list(ys)


# IREE 3.13 copies a loop-carried tensor whole at every iteration that updates part of it (its
# stream scheduler clones the loop's buffer before the update: a scan stacking 200 floats a
# step took 41 ms for 2000 steps and 686 ms for 8000; JAX is linear), so stacking L rows in
# chunks of k steps copies L * L / k rows. A long scan runs instead as a scan of blocks of q
# steps whose body is a scan of one block: L * (L / q + q / k) rows, least at q = sqrt(L k)
# (8000 steps of k = 16: 0.36 M rows instead of 4 M). One level only: blocks of blocks (the
# gradient of a 4000-step scan of 8 stacked rows a step) crashed IREE's compiler (SIGSEGV).
# With c = L / k chunks the blocked form copies 2 L sqrt(c) rows against L c: fewer from c > 4.
# It pays from a few chunks on: the RNN gradient of benchmarks/ad.py (100 steps of k = 16, 6
# chunks, 3.7 MB of stacked residuals) 10.2 -> 9.5 and 9.6 -> 9.0 ms blocked (JAX 7.5, 7.3;
# alternating in one process, Emerald Rapids); the unbatched RNN of benchmarks/run.py within
# noise (0.61 / 0.64 ms, JAX 0.70). It was 32 chunks before (2026-11-28), and stays so on
# GPUs, where a copy costs microseconds and each loop's control more (not measured there).
SCAN_BLOCKING_MIN_CHUNKS = {"cpu": 6}
SCAN_BLOCKING_MIN_CHUNKS_DEFAULT = 32
_in_blocked_scan = contextvars.ContextVar("pyree_in_blocked_scan", default=False)


def _blocked_scan(ctx: RuleContext, operands: Sequence, body: IR, length: int, reverse: bool,
                  num_consts: int, num_carry: int, k: int) -> list:
    """The scan as an outer scan over blocks of q steps (an inner scan each), then the steps
    left over: built as equations and lowered like any region."""
    from ..core import primitives as P
    q = k * max(1, round(float(np.sqrt(length / k))))
    blocks, left = divmod(length, q)
    avals_in = list(ctx.avals_in)
    const_avals = avals_in[:num_consts]
    carry_avals = list(ctx.avals_out[:num_carry])
    x_avals = avals_in[num_consts + num_carry:]
    y_avals = list(ctx.avals_out[num_carry:])

    def rows(aval: ShapedArray, n: int, *lead: int) -> ShapedArray:
        return aval.update(shape=lead + (n,) + aval.shape[1:])

    def emit(eqns: list, primitive, inputs, params, out_avals) -> list:
        outs = [Var(a) for a in out_avals]
        eqns.append(Eqn(primitive, inputs, params, outs, None))
        return outs

    def scan_eqn(eqns, consts, carry, xs, n, scan_body, y_out):
        params = dict(body=scan_body, length=n, reverse=reverse, num_consts=num_consts,
                      num_carry=num_carry)
        outs = emit(eqns, scan_p, list(consts) + list(carry) + list(xs), params,
                    carry_avals + y_out)
        return outs[:num_carry], outs[num_carry:]

    # The outer scan's body: one block of q steps.
    block_consts = [Var(a) for a in const_avals]
    block_carry = [Var(a) for a in carry_avals]
    block_xs = [Var(rows(a, q)) for a in x_avals]
    block_eqns: list = []
    carry_out, ys_out = scan_eqn(block_eqns, block_consts, block_carry, block_xs, q, body,
                                 [rows(a, q) for a in y_avals])
    block_body = IR([], block_consts + block_carry + block_xs, block_eqns, carry_out + ys_out)

    eqns: list = []

    def part(x, aval, start, stop):
        if start == 0 and stop == aval.shape[0]:
            return x
        return emit(eqns, P.slice_p, [x], dict(
            start_indices=(start,) + (0,) * (aval.ndim - 1),
            limit_indices=(stop,) + aval.shape[1:], strides=(1,) * aval.ndim),
            [rows(aval, stop - start)])[0]

    consts = [Var(a) for a in const_avals]
    init = [Var(a) for a in carry_avals]
    xs = [Var(a) for a in x_avals]
    main_xs = [emit(eqns, P.reshape_p, [part(x, a, 0, blocks * q)],
                    dict(new_sizes=(blocks, q) + a.shape[1:]), [rows(a, q, blocks)])[0]
               for x, a in zip(xs, x_avals)]
    tail_xs = [part(x, a, blocks * q, length) for x, a in zip(xs, x_avals)]
    tail_y_avals = [rows(a, left) for a in y_avals]
    carry = init
    if left and reverse:  # the last steps run first
        carry, tail_ys = scan_eqn(eqns, consts, carry, tail_xs, left, body, tail_y_avals)
    carry, block_ys = scan_eqn(eqns, consts, carry, main_xs, blocks, block_body,
                               [rows(a, q, blocks) for a in y_avals])
    if left and not reverse:
        carry, tail_ys = scan_eqn(eqns, consts, carry, tail_xs, left, body, tail_y_avals)
    ys = [emit(eqns, P.reshape_p, [y], dict(new_sizes=(blocks * q,) + a.shape[1:]),
               [rows(a, blocks * q)])[0] for y, a in zip(block_ys, y_avals)]
    if left:
        ys = [emit(eqns, P.concatenate_p, [y, t], dict(dimension=0), [a])[0]
              for y, t, a in zip(ys, tail_ys, y_avals)]
    region = IR([], consts + init + xs, eqns, list(carry) + ys)
    return _lower_region_outputs(ctx, region, operands)


def _i32_sub(a, b):
    return hlo("subtract", tensor_type(ShapedArray((), np.dtype(np.int32))), a, b)


def _rows(x, aval: ShapedArray, start, n: int):
    """Rows start .. start + n of ``x`` (leading axis)."""
    if n == aval.shape[0]:
        return x
    zero = scalar_like(0, np.int32)
    return op("stablehlo.dynamic_slice", [tensor_type(aval.update(shape=(n,) + aval.shape[1:]))],
              [x, start] + [zero] * (aval.ndim - 1),
              {"slice_sizes": i64_array((n,) + aval.shape[1:])}).result


def _row(block, aval: ShapedArray, row: int, n: int):
    """Row ``row`` of a block of ``n`` rows of ``aval``'s rows, without its leading axis."""
    inner = aval.shape[1:]
    if n > 1:
        block = hlo("slice", tensor_type(aval.update(shape=(1,) + inner)), block,
                    start_indices=i64_array((row,) + (0,) * len(inner)),
                    limit_indices=i64_array((row + 1,) + inner),
                    strides=i64_array((1,) * (len(inner) + 1)))
    return hlo("reshape", tensor_type(aval.update(shape=inner)), block)


def _stack_rows(rows: list, aval: ShapedArray, n: int):
    """The ``rows`` (each of the shape of ``aval`` without its leading axis) as a block."""
    inner = aval.shape[1:]
    pieces = [hlo("reshape", tensor_type(aval.update(shape=(1,) + inner)), r) for r in rows]
    if n == 1:
        return pieces[0]
    ir = mlir()
    return op("stablehlo.concatenate", [tensor_type(aval.update(shape=(n,) + inner))], pieces,
              {"dimension": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 0)}).result


def _write_rows(ys, block, aval: ShapedArray, start):
    zero = scalar_like(0, np.int32)
    return op("stablehlo.dynamic_update_slice", [ys.type],
              [ys, block, start] + [zero] * (aval.ndim - 1)).result


lowering_rules[scan_p] = _scan_lowering


# -- pruning (prune.py): loops cut down to the carries and outputs needed ----------------------

def _prune_while(eqn: Eqn, used: list[bool]) -> Eqn:
    p = eqn.params
    cond_ir, body_ir = p["cond_ir"], p["body_ir"]
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    carry_body = body_ir.in_vars[bn:]
    cond_reads = reads(cond_ir)
    cond_carry = cond_ir.in_vars[cn:]
    read_by_cond = {id(b) for b, c in zip(carry_body, cond_carry) if id(c) in cond_reads}
    body, needed = needed_carries(body_ir, carry_body, list(used), also_read=read_by_cond)
    if all(needed):
        return eqn.replace(params=dict(p, body_ir=body))
    body = IR(body.const_vars, body.in_vars[:bn] + pick(carry_body, needed), body.eqns,
              pick(body.outs, needed))
    cond = IR(cond_ir.const_vars, cond_ir.in_vars[:cn] + pick(cond_carry, needed),
              cond_ir.eqns, cond_ir.outs)
    inputs = eqn.inputs[:cn + bn] + pick(eqn.inputs[cn + bn:], needed)
    return Eqn(while_p, inputs, dict(p, cond_ir=cond, body_ir=body), pick(eqn.outputs, needed),
               eqn.loc)


def _prune_scan(eqn: Eqn, used: list[bool]) -> Eqn:
    p = eqn.params
    body_ir, nc, ncar = p["body"], p["num_consts"], p["num_carry"]
    carry_vars = body_ir.in_vars[nc:nc + ncar]
    ys_used = used[ncar:]
    body, needed = needed_carries(body_ir, carry_vars, list(used[:ncar]),
                                  n_extra_outs=len(ys_used), extra_needed=ys_used)
    if all(needed) and all(ys_used):
        return eqn.replace(params=dict(p, body=body))
    in_vars = body.in_vars[:nc] + pick(carry_vars, needed) + body.in_vars[nc + ncar:]
    body = IR(body.const_vars, in_vars, body.eqns,
              pick(body.outs[:ncar], needed) + pick(body.outs[ncar:], ys_used))
    inputs = (eqn.inputs[:nc] + pick(eqn.inputs[nc:nc + ncar], needed) +
              eqn.inputs[nc + ncar:])
    outputs = pick(eqn.outputs[:ncar], needed) + pick(eqn.outputs[ncar:], ys_used)
    return Eqn(scan_p, inputs, dict(p, body=body, num_carry=sum(needed)), outputs, eqn.loc)


pruning_rules[while_p] = _prune_while
pruning_rules[scan_p] = _prune_scan


# -- debug_nans (nan_check.py): the branch taken, or the loop run step by step ------------------

def _nan_search_cond(params: dict, ins: list, run_region) -> Any:
    return run_region(taken_branch(params["branches"], host_value(ins[0])), ins[1:])[0]


def nan_search_while(params: dict, ins: list, run_region) -> Any:
    """debug_nans' search inside a while loop (and the counting while of reverse mode)."""
    nc, nb = params["cond_nconsts"], params["body_nconsts"]
    cond_consts, body_consts, carry = ins[:nc], ins[nc:nc + nb], ins[nc + nb:]
    while True:
        culprit, (keep_going,) = run_region(params["cond_ir"], cond_consts + carry)
        if culprit is not None:
            return culprit
        if not bool(host_value(keep_going)):
            return None
        culprit, carry = run_region(params["body_ir"], body_consts + carry)
        if culprit is not None:
            return culprit


def _nan_search_scan(params: dict, ins: list, run_region) -> Any:
    from pyree.runtime.array import device_put_numpy
    nc, ncarry, length = params["num_consts"], params["num_carry"], params["length"]
    body = params["body"]
    body_ir = body.ir if isinstance(body, ClosedIR) else body
    consts, carry, xs = ins[:nc], ins[nc:nc + ncarry], ins[nc + ncarry:]
    xs_host = [host_value(x) for x in xs]
    x_vars = body_ir.in_vars[nc + ncarry:]
    steps = range(length - 1, -1, -1) if params["reverse"] else range(length)
    for i in steps:
        x_i = [device_put_numpy(np.array(x[i]), weak_type=v.aval.weak_type)
               for x, v in zip(xs_host, x_vars)]
        culprit, outs = run_region(body, consts + carry + x_i)
        if culprit is not None:
            return culprit
        carry = outs[:ncarry]
    return None


descend_rules[cond_p] = _nan_search_cond
descend_rules[while_p] = nan_search_while
descend_rules[scan_p] = _nan_search_scan
