"""Batching rules of the control-flow primitives (control_flow.py, control_flow_ad.py).

* ``cond``: a shared index batches each branch; a per-example index runs every branch on the
  whole batch and picks each example's result with ``select``.
* Loops (``while``, ``while_count``, ``scan``, ``counted_loop``): a carry is batched if its
  initial value is or if the body makes it so (a fixed point). A loop whose condition (or
  bounds) is the same for every example just has its regions batched; one whose condition
  differs per example runs while any example's holds, each step updating only the examples
  still running (a ``select`` of the new and old carries).

(The custom-derivative calls batch in custom_derivatives.py, ``print`` and ``check`` in
checks.py.)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ..core.ir import IR, ClosedIR, ShapedArray
from ..core import primitives as P
from ..core.source import where
from ..core.trace import TypedScalar, get_aval, has_effects, trace_region
from ..interpreters.batching import (BatchAxis, batch_eval, batch_region, batching_rules, move_to,
                                     moveaxis, region_out_batched, to_front)
from .control_flow import cond_p, scan_p, while_p
from .control_flow_ad import _take, counted_loop_p, while_count_p

_I32 = np.dtype(np.int32)


# -- helpers ---------------------------------------------------------------------------------------

def _is_batched(dims: Sequence) -> list[bool]:
    return [d is not None for d in dims]


def _front_dims(batched: Sequence[bool]) -> list:
    """Batch axes for values batched (at the front) or not."""
    return [0 if b else None for b in batched]


def _batched_carries(body: IR, before: Sequence[bool], carry: Sequence[bool],
                     after: Sequence[bool], axis: BatchAxis) -> tuple[list[bool], list[bool]]:
    """Which carries of a loop whose ``body`` takes (before..., carry..., after...) and returns
    (carry..., more...) are batched: those batched at the start and (a fixed point) those the
    body makes batched. Returns them and which of all the body's outputs are batched then."""
    carry = list(carry)
    n = len(carry)
    while True:
        out = region_out_batched(body, list(before) + carry + list(after), axis)
        new = [c or o for c, o in zip(carry, out[:n])]
        if new == carry:
            return carry, out
        carry = new


def _batched_at_front(values: Sequence, dims: Sequence, batched: Sequence[bool],
                      size: int) -> list:
    """``values`` with the ``batched`` ones batched at the front (moved there, or broadcast)
    and the others as they are (unbatched)."""
    return [move_to(x, d, 0, size) if b else x for x, d, b in zip(values, dims, batched)]


def _eval_batched(region: IR, values: Sequence, dims: Sequence, axis: BatchAxis) -> list:
    """``region`` evaluated on batched values, every output batched at the front."""
    outs, out_dims = batch_eval(ClosedIR(region, []), values, dims, axis)
    return [to_front(o, d, axis.size) for o, d in zip(outs, out_dims)]


def _per_example_select(pred: Any, on_true: Any, on_false: Any) -> Any:
    """``on_true`` where the example's ``pred`` (shape (B,)) holds, else ``on_false``; both
    batched at the front."""
    shape = get_aval(on_true).shape
    if len(shape) > 1:
        pred = P.broadcast_in_dim_p.bind(pred, shape=shape, broadcast_dimensions=(0,))
    return P.select_p.bind(pred, on_true, on_false)


def _trace_closed(fun: Callable, in_avals: Sequence[ShapedArray]) -> IR:
    """``fun`` traced as a region that captures nothing (its values all come in as inputs)."""
    region, captured = trace_region(fun, list(in_avals))
    assert not captured, "a batched region captured values"
    return region


def _refuse_effects(regions: Sequence[IR], what: str) -> None:
    """Effects (print, assert) cannot run for only some examples of a batch: like JAX, refuse
    them where the examples take different paths."""
    if any(has_effects(r.eqns) for r in regions):
        raise NotImplementedError(
            f"vmap of a {what} whose examples take different paths (a batched predicate) is "
            f"not supported when it prints or asserts (the effect would run for examples that "
            f"do not take that path){where(None)}")


# -- cond ------------------------------------------------------------------------------------------

def _cond_rule(axis, values, dims, *, branches):
    (index, *ops), (index_dim, *op_dims) = values, dims
    if index_dim is None:
        return _cond_shared_index(axis, index, ops, op_dims, branches)
    return _cond_per_example(axis, to_front(index, index_dim, axis.size), ops, op_dims,
                             branches)


def _cond_shared_index(axis, index, ops, op_dims, branches):
    """Every example takes the same branch: a cond of the batched branches, which all give an
    output batched (at the front) if any of them does."""
    found = [batch_region(b, op_dims, axis)[1] for b in branches]
    out_dims = _front_dims([any(ds[j] is not None for ds in found)
                            for j in range(len(branches[0].outs))])
    batched = tuple(batch_region(b, op_dims, axis, out_dims)[0] for b in branches)
    return cond_p.bind(index, *ops, branches=batched), out_dims


def _cond_per_example(axis, index, ops, op_dims, branches):
    """Each example chooses its branch: every branch runs on the whole batch, and each
    example's outputs are picked from the branch its (clamped) index names."""
    _refuse_effects(branches, "cond/switch")
    last = len(branches) - 1
    index = P.min_p.bind(P.max_p.bind(index, TypedScalar(0, _I32, False)),
                         TypedScalar(last, _I32, False))
    results = _eval_batched(branches[0], ops, op_dims, axis)
    for k, branch in enumerate(branches[1:], start=1):
        taken = P.eq_p.bind(index, TypedScalar(k, _I32, False))
        outs = _eval_batched(branch, ops, op_dims, axis)
        results = [_per_example_select(taken, o, r) for o, r in zip(outs, results)]
    return results, [0] * len(results)


batching_rules[cond_p] = _cond_rule


# -- while and while_count -------------------------------------------------------------------------

def _while_rule(axis, values, dims, *, cond_ir, body_ir, cond_nconsts, body_nconsts):
    return _batch_while(axis, values, dims, cond_ir, body_ir, cond_nconsts, body_nconsts,
                        counted=False)


def _while_count_rule(axis, values, dims, *, cond_ir, body_ir, cond_nconsts, body_nconsts):
    return _batch_while(axis, values, dims, cond_ir, body_ir, cond_nconsts, body_nconsts,
                        counted=True)


def _batch_while(axis, values, dims, cond_ir, body_ir, cn, bn, counted):
    """``while`` (``counted``: ``while_count``, whose last output is its trip count)."""
    cconsts, bconsts, init = _take(values, [cn, bn, len(values) - cn - bn])
    cdims, bdims, idims = _take(dims, [cn, bn, len(values) - cn - bn])
    carry_b, _ = _batched_carries(body_ir, _is_batched(bdims), _is_batched(idims), [], axis)
    pred_batched = region_out_batched(cond_ir, _is_batched(cdims) + carry_b, axis)[0]
    if pred_batched:
        return _while_per_example(axis, cconsts, cdims, bconsts, bdims, init, idims, cond_ir,
                                  body_ir, counted)
    # The same trip count for every example: the loop of the batched regions.
    carry_dims = _front_dims(carry_b)
    init = _batched_at_front(init, idims, carry_b, axis.size)
    cond_b, _ = batch_region(cond_ir, cdims + carry_dims, axis, [None])
    body_b, _ = batch_region(body_ir, bdims + carry_dims, axis, carry_dims)
    prim = while_count_p if counted else while_p
    outs = prim.bind(*cconsts, *bconsts, *init, cond_ir=cond_b, body_ir=body_b,
                     cond_nconsts=cn, body_nconsts=bn)
    return outs, carry_dims + ([None] if counted else [])  # the trip count is shared


def _while_per_example(axis, cconsts, cdims, bconsts, bdims, init, idims, cond_ir, body_ir,
                       counted):
    """A loop whose condition differs per example: it runs while any example's holds; a step
    updates only the examples whose condition holds (their own trip count, when ``counted``,
    is carried along). Every carry comes out batched."""
    _refuse_effects([cond_ir, body_ir], "while loop")
    size = axis.size
    cn, bn, n = len(cconsts), len(bconsts), len(init)
    carry = [to_front(x, d, size) for x, d in zip(init, idims)]
    if counted:
        carry.append(P.broadcast_in_dim_p.bind(TypedScalar(0, _I32, False), shape=(size,),
                                               broadcast_dimensions=()))
    carry_dims = [0] * n

    def running(cc, car):
        (pred,) = _eval_batched(cond_ir, list(cc) + list(car[:n]), cdims + carry_dims, axis)
        return pred

    def cond_fun(*args):
        cc, car = _take(args, [cn, len(carry)])
        return [P.reduce_or_p.bind(running(cc, car), axes=(0,))]

    def body_fun(*args):
        cc, bc, car = _take(args, [cn, bn, len(carry)])
        pred = running(cc, car)
        new = _eval_batched(body_ir, bc + car[:n], bdims + carry_dims, axis)
        if counted:
            new.append(P.add_p.bind(car[n], TypedScalar(1, _I32, False)))
        return [_per_example_select(pred, a, b) for a, b in zip(new, car)]

    const_avals = [get_aval(c) for c in cconsts]
    carry_avals = [get_aval(c) for c in carry]
    cond_region = _trace_closed(cond_fun, const_avals + carry_avals)
    body_region = _trace_closed(body_fun, const_avals + [get_aval(c) for c in bconsts] +
                                carry_avals)
    outs = while_p.bind(*cconsts, *cconsts, *bconsts, *carry, cond_ir=cond_region,
                        body_ir=body_region, cond_nconsts=cn, body_nconsts=cn + bn)
    return outs, [0] * len(outs)


batching_rules[while_p] = _while_rule
batching_rules[while_count_p] = _while_count_rule


# -- counted_loop ----------------------------------------------------------------------------------

def _counted_loop_rule(axis, values, dims, *, body, num_consts, reverse):
    lo, hi, *rest = values
    lo_dim, hi_dim, *rest_dims = dims
    consts, init = rest[:num_consts], rest[num_consts:]
    cdims, idims = rest_dims[:num_consts], rest_dims[num_consts:]
    if lo_dim is None and hi_dim is None:
        carry_b, _ = _batched_carries(body, [False] + _is_batched(cdims), _is_batched(idims),
                                      [], axis)
        carry_dims = _front_dims(carry_b)
        init = _batched_at_front(init, idims, carry_b, axis.size)
        body_b, _ = batch_region(body, [None] + cdims + carry_dims, axis, carry_dims)
        outs = counted_loop_p.bind(lo, hi, *consts, *init, body=body_b, num_consts=num_consts,
                                   reverse=reverse)
        return outs, carry_dims
    return _counted_loop_per_example(axis, to_front(lo, lo_dim, axis.size),
                                     to_front(hi, hi_dim, axis.size), consts, cdims, init, idims,
                                     body, reverse)


def _counted_loop_per_example(axis, lo, hi, consts, cdims, init, idims, body, reverse):
    """A counted loop whose bounds differ per example: k runs over the longest trip count, each
    example stepping at its own index (lo + k, or hi - 1 - k backwards) while k is below its
    own trip count, and keeping its carries after."""
    _refuse_effects([body], "counted loop")
    size = axis.size
    zero = TypedScalar(0, _I32, False)
    one = TypedScalar(1, _I32, False)
    trips = P.max_p.bind(P.sub_p.bind(hi, lo), zero)
    longest = P.reduce_max_p.bind(trips, axes=(0,))
    first = P.sub_p.bind(hi, one) if reverse else lo
    carry = [to_front(x, d, size) for x, d in zip(init, idims)]
    nc, n = len(consts), len(carry)
    # k is carried as a (B,) vector too: broadcasting the loop's own counter to the batch
    # inside nested loops makes IREE 3.13 fail ("'stream.async.splat' op : streamable op
    # expected to be in an execution region"), e.g. for vmap(grad(grad(f))) of a while loop.
    k0 = P.broadcast_in_dim_p.bind(zero, shape=(size,), broadcast_dimensions=())

    def step(_, first_b, trips_b, *vals):
        cs, car, (k,) = _take(vals, [nc, n, 1])
        i = (P.sub_p if reverse else P.add_p).bind(first_b, k)
        new = _eval_batched(body, [i] + cs + car, [0] + cdims + [0] * n, axis)
        active = P.lt_p.bind(k, trips_b)
        return [_per_example_select(active, a, b) for a, b in zip(new, car)] + \
            [P.add_p.bind(k, one)]

    region = _trace_closed(step, [ShapedArray((), _I32), get_aval(first), get_aval(trips)] +
                           [get_aval(c) for c in consts] + [get_aval(c) for c in carry] +
                           [get_aval(k0)])
    outs = counted_loop_p.bind(zero, longest, first, trips, *consts, *carry, k0, body=region,
                               num_consts=2 + nc, reverse=False)
    return outs[:n], [0] * n


batching_rules[counted_loop_p] = _counted_loop_rule


# -- scan ------------------------------------------------------------------------------------------

def _scan_rule(axis, values, dims, *, body, length, reverse, num_consts, num_carry):
    nc, ncar = num_consts, num_carry
    consts, init, xs = _take(values, [nc, ncar, len(values) - nc - ncar])
    cdims, idims, xdims = _take(dims, [nc, ncar, len(values) - nc - ncar])
    # The scan runs over axis 0 of xs: a batch axis there moves to 1. A step's slice then has
    # its batch axis one lower.
    xs = [moveaxis(x, 0, 1) if d == 0 else x for x, d in zip(xs, xdims)]
    slice_dims = [None if d is None else max(d, 1) - 1 for d in xdims]
    carry_b, out_b = _batched_carries(body, _is_batched(cdims), _is_batched(idims),
                                      _is_batched(slice_dims), axis)
    carry_dims = _front_dims(carry_b)
    y_dims = _front_dims(out_b[ncar:])
    init = _batched_at_front(init, idims, carry_b, axis.size)
    body_b, _ = batch_region(body, cdims + carry_dims + slice_dims, axis, carry_dims + y_dims)
    outs = scan_p.bind(*consts, *init, *xs, body=body_b, length=length, reverse=reverse,
                       num_consts=nc, num_carry=ncar)
    # Stacking adds the scan axis in front of each y's batch axis.
    return outs, carry_dims + [None if d is None else 1 for d in y_dims]


batching_rules[scan_p] = _scan_rule
