"""Hoisting a scan step's work that does not read the carry out of the loop.

A scan body ``(carry, x) -> (carry', y)`` often computes part of its step from ``x`` and the
loop's constants alone: an RNN's input projection ``x @ w_in``, an embedding lookup, a
per-step scale. That part can run for every step at once before the loop, vectorized over the
steps: ``xs @ w_in`` is one matrix-matrix product where the loop did ``length``
matrix-vector products, each a kernel launch of its own (and on a GPU each split into bf16
parts, three products and the splits' kernels). The loop then reads the precomputed rows as
extra ``xs``.

Semantics are unchanged: the hoisted equations are pure (no effects, no regions), read no
carry, and each step reads exactly the row its equations would have computed, in either
direction (``reverse`` indexes the new ``xs`` as the old).

It is a rewrite of the scan's lowering (registered in ``control_flow.scan_body_rewrites``),
after differentiation: scans that AD makes (a backward pass's products of stacked residuals
with the weights) are hoisted as well, and no derivative is taken of the rewritten form.
(Rewritten before AD, a scan's gradient also stacked the cotangents of the hoisted rows: an
RNN gradient took 41 ms instead of 17.)

When: only where it gains, for products (``dot_general``) of at least ``HOIST_MIN_MACS``
multiply-adds per step that read a step's ``x``; those products and the carry-free work they
read move, nothing else; and only while the precomputed rows stay within ``HOIST_MAX_BYTES``.

Example: in ``lax.scan(lambda h, x: (jnp.tanh(x @ w_x + h @ w_h),) * 2, h0, xs)`` the
product ``x @ w_x`` is hoisted to ``xs @ w_x`` (measured in benchmarks/run.py's RNN rows).
"""
from __future__ import annotations

from typing import Optional

from ..core.ir import IR, Var, regions
from ..core import primitives as P
from ..core.trace import effectful_primitives
from ..interpreters.batching import BatchAxis, batch_region
from .control_flow import scan_body_rewrites

# The precomputed rows of all steps together, at most (bytes).
HOIST_MAX_BYTES = 1 << 28
# A product is worth hoisting from this many multiply-adds per step (a 64 x 64 matrix-vector
# product has 4096). Smaller ones (a dot of two short vectors in an HMC step) would drag the
# work they read out of the loop for nothing: an HMC chain's per-step random draws, vectorized
# over 3000 steps, took IREE minutes to compile.
HOIST_MIN_MACS = 4096


def _has_region(eqn) -> bool:
    return bool(regions(eqn))


def _multiply_adds(eqn) -> int:
    (lhs_contracting, _), _ = eqn.params["dimension_numbers"]
    size = 1
    for d in lhs_contracting:
        size *= eqn.inputs[0].aval.shape[d]
    return eqn.outputs[0].aval.size * size


def hoist_per_step_work(body: IR, num_consts: int, num_carry: int, length: int
                        ) -> Optional[tuple[IR, IR, int]]:
    """Split a scan ``body`` (inputs: consts, carry, x slices): its products of at least
    ``HOIST_MIN_MACS`` multiply-adds that read a step's x and no carry, with the work they read,
    vectorized over the ``length`` steps, and the rest. Returns None when there is no such
    product, else ``(before, new_body, n_invariant)``:

    * ``before`` takes (consts, the whole xs) and returns (``n_invariant`` values the same at
      every step, then one stacked array per precomputed per-step value);
    * ``new_body`` takes (consts, the invariant values, carry, x slices, the per-step values'
      slices) and returns what ``body`` returns.
    """
    consts = body.in_vars[:num_consts]
    carry = body.in_vars[num_consts:num_consts + num_carry]
    xs = body.in_vars[num_consts + num_carry:]
    if length < 2 or not xs:
        return None
    reads_carry = {id(v) for v in carry}
    per_step = {id(v) for v in xs}
    carry_free = set()
    made_by = {}
    for eqn in body.eqns:
        reads = [id(a) for a in eqn.inputs if isinstance(a, Var)]
        if (any(r in reads_carry for r in reads) or eqn.primitive in effectful_primitives
                or _has_region(eqn)):
            reads_carry.update(id(v) for v in eqn.outputs)
            continue
        carry_free.add(id(eqn))
        made_by.update((id(v), eqn) for v in eqn.outputs)
        if any(r in per_step for r in reads):
            per_step.update(id(v) for v in eqn.outputs)
    worthy = [eqn for eqn in body.eqns
              if id(eqn) in carry_free and eqn.primitive is P.dot_general_p
              and any(isinstance(a, Var) and id(a) in per_step for a in eqn.inputs)
              and _multiply_adds(eqn) >= HOIST_MIN_MACS]
    if not worthy:
        return None
    # Those products and the carry-free work they read; everything else stays in the loop.
    chosen, stack = set(), list(worthy)
    while stack:
        eqn = stack.pop()
        if id(eqn) in chosen:
            continue
        chosen.add(id(eqn))
        stack.extend(made_by[id(a)] for a in eqn.inputs
                     if isinstance(a, Var) and id(a) in made_by)
    hoisted = [eqn for eqn in body.eqns if id(eqn) in chosen]
    kept = [eqn for eqn in body.eqns if id(eqn) not in chosen]

    # The hoisted values the rest of the body (or its outputs) reads.
    made = {id(v) for eqn in hoisted for v in eqn.outputs}
    needed: dict[int, Var] = {}
    for atom in [a for eqn in kept for a in eqn.inputs] + list(body.outs):
        if isinstance(atom, Var) and id(atom) in made:
            needed.setdefault(id(atom), atom)
    rows = [v for v in needed.values() if id(v) in per_step]
    invariant = [v for v in needed.values() if id(v) not in per_step]
    if length * sum(v.aval.size * v.aval.dtype.itemsize for v in rows) > HOIST_MAX_BYTES:
        return None

    part = IR([], consts + xs, hoisted, invariant + rows)
    before, _ = batch_region(part, [None] * len(consts) + [0] * len(xs), BatchAxis(length),
                             out_dims=[None] * len(invariant) + [0] * len(rows))
    new_body = IR([], consts + invariant + carry + xs + rows, kept, body.outs)
    return before, new_body, len(invariant)

scan_body_rewrites.append(hoist_per_step_work)
