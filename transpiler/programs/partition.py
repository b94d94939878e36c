"""Partitioning a whole-array program over the devices of a mesh axis: how ``jit`` follows
arguments placed with ``NamedSharding`` (data parallelism), as an IR -> IR transformation.

The function is traced once, on the whole arrays (the program one device would run).
``partition_eval`` then emits it again as one SPMD program over the ``n`` devices of a mesh
axis, equation by equation, knowing for every value its *layout*:

* ``REPLICATED`` (``None``): every device holds the whole value;
* ``d`` (an int): the value is cut along dimension ``d`` into ``n`` equal blocks, device ``i``
  holding block ``i`` (``NamedSharding(mesh, P(None, ..., axis))``, the axis at ``d``).

Each equation becomes one copy per device, computed on that device's values; the rule of its
primitive (``partition_rules``) says what each copy computes and the layouts of the results:

* every operand replicated: the equation as it is, on every device; the result is replicated.
* elementwise operations (``primitives.ELEMENTWISE``, ``stop_gradient``): operands split along
  the same dimension combine block by block; a replicated operand of rank >= 1 is first cut to
  the device's block; the result is split like the operands.
* ``broadcast_in_dim``, ``transpose``: the split dimension moves to where the operation puts it.
  ``reshape`` keeps the split when the dimensions before it multiply to the same count in the
  new shape and the new dimension there is divisible by ``n`` (then each block is a contiguous
  run of the same elements before and after); otherwise it has no partitioned form.
* ``reduce_sum`` / ``reduce_max`` / ``reduce_min`` / ``reduce_prod`` / ``reduce_and`` /
  ``reduce_or`` over the split dimension: each device reduces its block, then the devices'
  partial results are combined (sum, max, min, product, and, or: an all-reduce, each device
  folding all partial results in device order, so every device gets the same bits); the result
  is replicated. Over other dimensions (and ``argmax``/``argmin`` likewise), the result stays
  split, its dimension renumbered. (A mean over the batch is such a sum, divided by the whole
  batch's size, which the traced program already holds.)
* ``dot_general``: contracting the split dimension of both operands (a replicated operand cut
  to blocks along its paired dimension) is the local product followed by an all-reduce sum --
  the weight gradient ``x.T @ g`` of a batch-split ``x``; split along a batch dimension of both
  operands, or a free dimension of one (the other replicated), the product stays split. Two
  operands split along unpaired dimensions: the right one is gathered first.
* ``conv_general_dilated`` (no feature or batch groups) likewise: split along the batch of
  the input (the kernel replicated), or the output features of the kernel, the result stays
  split; contracting split input features (a weight gradient, where the batch is the
  contracted feature dimension) is the local convolution and an all-reduce sum.
* ``gather`` / ``scatter`` split along a batching dimension (``take_along_axis`` of
  batch-split values and indices -- a cross-entropy with integer labels -- and its
  transpose): each device indexes its own rows.
* ``slice`` (whole along the split dimension), ``pad`` (none along it), ``rev`` (not
  reversing it), ``concatenate`` (along another dimension): the split stays.
* ``cond``, ``while``, ``scan`` (``lax.cond``, ``while_loop``, ``fori_loop``, ``scan``):
  every branch partitioned, each device selecting the branch's outputs; loops as one loop
  over every device's values whose body is the partitioned body (see "control flow" below):
  a training loop over a split batch runs split, its all-reduces inside the loop.
* ``custom_jvp_call`` / ``custom_vjp_call``: their region, partitioned by these same rules
  (the program is no longer differentiated, so the custom rules are not needed).
* ``sharding_constraint`` (``lax.with_sharding_constraint``) with a NamedSharding of the mesh
  partitioned over: the value takes the layout it names, cut into blocks (no communication)
  or gathered; on another mesh the layout stays.

Any other equation with a split operand -- other gathers and scatters, sorting, cumulative
and windowed operations, grouped convolutions, a scan along the split dimension, a reshape
mixing the split dimension with others, elementwise operands split along different
dimensions -- *gathers*: each split operand is all-gathered (every device receives every
block, ``flow.tensor.transfer``, and concatenates them in order), and the equation runs on
every device on the whole values, its result replicated. Gathering is always correct, only
slower: no rule guesses.

Why transfers and not IREE's collective ops: as for pmap (transpiler/backend/spmd.py), IREE 3.13's
CPU drivers implement no collective channels, and one program drives all the devices.

A rule is ``rule(mesh, values, layouts, eqn) -> (outputs, out_layouts)`` or ``None`` (no
partitioned form: gather), where ``values[k]`` holds operand ``k``'s value on each device,
``layouts[k]`` its layout, and ``outputs[j]`` result ``j``'s value on each device.

Example (the program ``jit`` compiles for an SGD step whose batch ``x`` is split in two)::

    g:f32[8,3] = dot_general[contracting (0,), (0,)] x h     # x, h split along dimension 0
    # becomes, on device i:  g_i = dot_general x_i h_i ;  g = g_0 + g_1 on every device
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..core.ir import IR, ClosedIR, Literal, Var, regions
from ..core import primitives as P
from ..core.trace import (Primitive, TypedScalar, abstract_eval_rules, bind, get_aval,
                          literal_value, located, trace_region)
from ..interpreters.ad import Zero, jvp_rules, transpose_rules
from ..interpreters.batching import batching_rules
from ..backend import eager
from ..backend.lower import lowering_rules
from ..backend.spmd import array_on, select_branch, transfer
from ..families.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p, stop_gradient_p
from ..families.gather_scatter import gather_p, scatter_p
from ..families.windows import conv_general_dilated_p

REPLICATED = None


class MeshAxis:
    """The mesh axis a program is partitioned over: ``size`` devices, in order; ``mesh`` and
    ``name`` (the ``pyree.sharding.Mesh`` and the axis's name) when known, for the sharding
    constraints that name them."""

    __slots__ = ("size", "mesh", "name")

    def __init__(self, size: int, mesh: Any = None, name: Any = None) -> None:
        self.size = size
        self.mesh = mesh
        self.name = name

    def block(self, x: Any, dim: int, i: int) -> Any:
        """Device ``i``'s block along ``dim`` of ``x``, a whole (replicated) value there."""
        if isinstance(x, TypedScalar):
            return x
        aval = get_aval(x)
        width = aval.shape[dim] // self.size
        start = [0] * aval.ndim
        limit = list(aval.shape)
        start[dim], limit[dim] = i * width, (i + 1) * width
        return P.slice_p.bind(x, start_indices=tuple(start), limit_indices=tuple(limit),
                              strides=(1,) * aval.ndim)

    def blocks(self, values: Sequence[Any], dim: int) -> list:
        """Each device's block along ``dim`` of a replicated value (``values[i]`` on device
        ``i``)."""
        return [self.block(v, dim, i) for i, v in enumerate(values)]

    def gather(self, values: Sequence[Any], dim: int) -> list:
        """The whole of a value split along ``dim``, on every device: each device receives
        the others' blocks and concatenates all of them in device order."""
        n = self.size
        if n == 1:
            return list(values)
        return [P.concatenate_p.bind(*[v if j == i else transfer(v, i)
                                       for j, v in enumerate(values)], dimension=dim)
                for i in range(n)]

    def all_reduce(self, values: Sequence[Any], combine: Primitive) -> list:
        """Every device's partial results combined with ``combine`` (a binary elementwise
        primitive), on every device. Each device folds all values in device order, so every
        device computes the same operations on the same values: bit-identical copies."""
        n = self.size
        outs = []
        for i in range(n):
            total = None
            for j, v in enumerate(values):
                moved = v if j == i else transfer(v, i)
                total = moved if total is None else combine.bind(total, moved)
            outs.append(total)
        return outs


def _same_params(eqn, values: Sequence[Sequence[Any]], n: int, params: Optional[dict] = None
                 ) -> list[list]:
    """The equation's primitive applied on each device to that device's operands, with
    ``params`` (default: the equation's); returns ``outputs[j][i]``."""
    params = eqn.params if params is None else params
    per_device = [bind(eqn.primitive, [v[i] for v in values], params) for i in range(n)]
    return [[outs[j] for outs in per_device] for j in range(len(eqn.outputs))]


# -- the rules ---------------------------------------------------------------------------------

partition_rules: dict[Primitive, Callable] = {}


def _elementwise(mesh: MeshAxis, values, layouts, eqn):
    split = {d for d in layouts if d is not REPLICATED}
    if len(split) != 1:
        return None
    (d,) = split
    operands = [mesh.blocks(v, d) if layout is REPLICATED and a.aval.ndim else v
                for v, layout, a in zip(values, layouts, eqn.inputs)]
    return _same_params(eqn, operands, mesh.size), [d] * len(eqn.outputs)


partition_rules[stop_gradient_p] = _elementwise   # (and every member of P.ELEMENTWISE)


def _local_shape(shape: Sequence[int], dim: int, n: int) -> tuple:
    local = list(shape)
    local[dim] //= n
    return tuple(local)


def _broadcast_in_dim(mesh, values, layouts, eqn):
    (d,) = layouts
    shape, dims = eqn.params["shape"], eqn.params["broadcast_dimensions"]
    out = dims[d]
    if eqn.inputs[0].aval.shape[d] != shape[out]:
        return None
    params = dict(eqn.params, shape=_local_shape(shape, out, mesh.size))
    return _same_params(eqn, values, mesh.size, params), [out]


def _transpose(mesh, values, layouts, eqn):
    (d,) = layouts
    return _same_params(eqn, values, mesh.size), [eqn.params["permutation"].index(d)]


def _reshape(mesh, values, layouts, eqn):
    (d,) = layouts
    old, new = eqn.inputs[0].aval.shape, tuple(eqn.params["new_sizes"])
    before = 1
    for size in old[:d]:
        before *= size
    count = 1
    for out, size in enumerate(new):
        if count == before and size and size % mesh.size == 0:
            params = dict(eqn.params, new_sizes=_local_shape(new, out, mesh.size))
            return _same_params(eqn, values, mesh.size, params), [out]
        count *= size
    return None


def _reduction(combine: Optional[Primitive]) -> Callable:
    def rule(mesh, values, layouts, eqn):
        (d,) = layouts
        axes = eqn.params["axes"]
        if d in axes and combine is None:
            return None
        (partial,) = _same_params(eqn, values, mesh.size)
        if d not in axes:
            return [partial], [d - sum(a < d for a in axes)]
        return [mesh.all_reduce(partial, combine)], [REPLICATED]
    return rule


partition_rules[P.reduce_sum_p] = _reduction(P.add_p)
partition_rules[P.reduce_max_p] = _reduction(P.max_p)
partition_rules[P.reduce_min_p] = _reduction(P.min_p)
partition_rules[P.reduce_prod_p] = _reduction(P.mul_p)
partition_rules[P.reduce_and_p] = _reduction(P.and_p)
partition_rules[P.reduce_or_p] = _reduction(P.or_p)
partition_rules[P.argmax_p] = _reduction(None)   # (the index of a maximum: not a fold of blocks)
partition_rules[P.argmin_p] = _reduction(None)


def _dot_general(mesh, values, layouts, eqn):
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = values
    dl, dr = layouts
    lhs_rank, rhs_rank = eqn.inputs[0].aval.ndim, eqn.inputs[1].aval.ndim
    lhs_free = [a for a in range(lhs_rank) if a not in lc and a not in lb]
    rhs_free = [a for a in range(rhs_rank) if a not in rc and a not in rb]
    n = mesh.size
    if dl is not REPLICATED and dr is not REPLICATED:
        paired = ((dl in lc and rc[lc.index(dl)] == dr) or (dl in lb and rb[lb.index(dl)] == dr))
        if not paired:   # (split along dimensions the product does not pair: gather one)
            rhs, dr = mesh.gather(rhs, dr), REPLICATED
    if dl is not REPLICATED:
        if dl in lc:
            if dr is REPLICATED:
                rhs = mesh.blocks(rhs, rc[lc.index(dl)])
            (partial,) = _same_params(eqn, [lhs, rhs], n)
            return [mesh.all_reduce(partial, P.add_p)], [REPLICATED]
        if dl in lb:
            if dr is REPLICATED:
                rhs = mesh.blocks(rhs, rb[lb.index(dl)])
            return _same_params(eqn, [lhs, rhs], n), [lb.index(dl)]
        return _same_params(eqn, [lhs, rhs], n), [len(lb) + lhs_free.index(dl)]
    if dr in rc:
        (partial,) = _same_params(eqn, [mesh.blocks(lhs, lc[rc.index(dr)]), rhs], n)
        return [mesh.all_reduce(partial, P.add_p)], [REPLICATED]
    if dr in rb:
        return _same_params(eqn, [mesh.blocks(lhs, lb[rb.index(dr)]), rhs], n), [rb.index(dr)]
    return _same_params(eqn, [lhs, rhs], n), [len(lb) + len(lhs_free) + rhs_free.index(dr)]


partition_rules[P.dot_general_p] = _dot_general


def _conv(mesh, values, layouts, eqn):
    params = eqn.params
    if params["feature_group_count"] != 1 or params["batch_group_count"] != 1:
        return None
    lhs_spec, rhs_spec, out_spec = params["dimension_numbers"]
    lhs, rhs = values
    dl, dr = layouts
    n = mesh.size
    if dl == lhs_spec[1] or dr == rhs_spec[1]:
        # Contracting the input features (in a weight gradient, the batch): local
        # convolutions over each device's block of features, summed across the devices.
        if dl is REPLICATED:
            lhs = mesh.blocks(lhs, lhs_spec[1])
        elif dr is REPLICATED:
            rhs = mesh.blocks(rhs, rhs_spec[1])
        elif (dl, dr) != (lhs_spec[1], rhs_spec[1]):
            return None
        (partial,) = _same_params(eqn, [lhs, rhs], n)
        return [mesh.all_reduce(partial, P.add_p)], [REPLICATED]
    if dl == lhs_spec[0] and dr is REPLICATED:   # (each device's block of the batch)
        return _same_params(eqn, values, n), [out_spec[0]]
    if dr == rhs_spec[0] and dl is REPLICATED:   # (each device's block of output features)
        return _same_params(eqn, values, n), [out_spec[1]]
    return None


partition_rules[conv_general_dilated_p] = _conv


def _batched_indexing(mesh, values, layouts, paired: list, out_dim: Callable):
    """gather/scatter split along a batching dimension: ``paired[k]`` gives, for batching
    dimension ``k``, the dimension of each operand that goes with it. Every split operand must
    be split along the dimensions of one ``k``; the replicated ones are cut to the same
    blocks, and each device indexes its own rows. Returns (operands, the result's split
    dimension ``out_dim(k)``), or None."""
    for k, dims in enumerate(paired):
        if all(d is REPLICATED or d == dim for d, dim in zip(layouts, dims)):
            operands = [mesh.blocks(v, dim) if d is REPLICATED else v
                        for v, d, dim in zip(values, layouts, dims)]
            return operands, out_dim(k)
    return None


def _gather(mesh, values, layouts, eqn):
    numbers = eqn.params["dimension_numbers"]
    operand, indices = eqn.inputs
    # The result's dimensions that are not offset dimensions are the indices' batch
    # dimensions (all but the last, the index vector), in order.
    batch_out = [d for d in range(eqn.outputs[0].aval.ndim) if d not in numbers.offset_dims]
    paired = [[o, i] for o, i in zip(numbers.operand_batching_dims,
                                     numbers.start_indices_batching_dims)]
    found = _batched_indexing(mesh, values, layouts, paired,
                              lambda k: batch_out[numbers.start_indices_batching_dims[k]])
    if found is None:
        return None
    operands, out = found
    return _same_params(eqn, operands, mesh.size), [out]


def _scatter(mesh, values, layouts, eqn):
    numbers = eqn.params["dimension_numbers"]
    updates = eqn.inputs[2].aval
    update_scatter = [d for d in range(updates.ndim) if d not in numbers.update_window_dims]
    paired = [[o, i, update_scatter[i]] for o, i in zip(numbers.operand_batching_dims,
                                                         numbers.scatter_indices_batching_dims)]
    found = _batched_indexing(mesh, values, layouts, paired,
                              lambda k: numbers.operand_batching_dims[k])
    if found is None:
        return None
    operands, out = found
    return _same_params(eqn, operands, mesh.size), [out]


partition_rules[gather_p] = _gather
partition_rules[scatter_p] = _scatter


def _slice(mesh, values, layouts, eqn):
    (d,) = layouts
    size = eqn.inputs[0].aval.shape[d]
    start, limit = eqn.params["start_indices"], eqn.params["limit_indices"]
    strides = eqn.params["strides"] or (1,) * len(start)
    if start[d] != 0 or limit[d] != size or strides[d] != 1:
        return None
    params = dict(eqn.params, limit_indices=_local_shape(limit, d, mesh.size))
    return _same_params(eqn, values, mesh.size, params), [d]


def _pad(mesh, values, layouts, eqn):
    d, value_layout = layouts
    if value_layout is not REPLICATED or tuple(eqn.params["padding_config"][d]) != (0, 0, 0):
        return None
    return _same_params(eqn, values, mesh.size), [d]


def _rev(mesh, values, layouts, eqn):
    (d,) = layouts
    if d in eqn.params["dimensions"]:
        return None
    return _same_params(eqn, values, mesh.size), [d]


def _concatenate(mesh, values, layouts, eqn):
    split = {d for d in layouts if d is not REPLICATED}
    (d,) = split if len(split) == 1 else (None,)
    if d is None or d == eqn.params["dimension"]:
        return None
    operands = [mesh.blocks(v, d) if layout is REPLICATED else v
                for v, layout in zip(values, layouts)]
    return _same_params(eqn, operands, mesh.size), [d]


partition_rules[P.broadcast_in_dim_p] = _broadcast_in_dim
partition_rules[P.transpose_p] = _transpose
partition_rules[P.reshape_p] = _reshape
partition_rules[P.slice_p] = _slice
partition_rules[P.pad_p] = _pad
partition_rules[P.rev_p] = _rev
partition_rules[P.concatenate_p] = _concatenate


def _region_call(mesh, values, layouts, eqn):
    region = eqn.params["fun"]
    if isinstance(region, ClosedIR) or region.const_vars:
        return None
    return _partition_ir(region, [], list(zip(layouts, values)), mesh)


partition_rules[custom_jvp_call_p] = _region_call
partition_rules[custom_vjp_call_p] = _region_call


# -- sharding constraints ----------------------------------------------------------------------
# ``sharding_constraint[sharding] x`` is ``x``, with the request that it be placed by
# ``sharding`` (a NamedSharding; ``lax.with_sharding_constraint`` inside jit). Partitioned over
# the axis of that sharding's mesh, the value takes the layout the sharding names: blocks cut
# from a replicated value (no communication), a split value gathered, or gathered and cut
# along another dimension. Anywhere else (one device, another mesh, under vmap) it is the
# identity. Its derivatives constrain the tangents and cotangents alike.

sharding_constraint_p = Primitive("sharding_constraint")
abstract_eval_rules[sharding_constraint_p] = lambda x, *, sharding: x
lowering_rules[sharding_constraint_p] = lambda ctx, x, *, sharding: x
eager.PASS_THROUGH_PRIMITIVES.add(sharding_constraint_p)
batching_rules[sharding_constraint_p] = lambda axis, values, dims, *, sharding: (values, dims)


def _sharding_constraint_jvp(primals, tangents, *, sharding):
    (x,), (t,) = primals, tangents
    out = sharding_constraint_p.bind(x, sharding=sharding)
    return [out], [t if isinstance(t, Zero) else sharding_constraint_p.bind(t, sharding=sharding)]


jvp_rules[sharding_constraint_p] = _sharding_constraint_jvp
transpose_rules[sharding_constraint_p] = lambda ct, x, *, sharding: [
    None if isinstance(ct, Zero) else sharding_constraint_p.bind(ct, sharding=sharding)]


def _constrained_layout(mesh: MeshAxis, sharding: Any) -> Any:
    """The layout ``sharding`` names on ``mesh``'s axis, or ``mesh`` itself when the sharding
    is on another mesh (then the constraint keeps the value's layout)."""
    if mesh.mesh is None or getattr(sharding, "mesh", None) != mesh.mesh:
        return mesh
    spec = sharding.spec
    split = [d for d in range(len(spec)) if mesh.name in spec.axes_of(d)]
    return split[0] if split else REPLICATED


def _sharding_constraint(mesh, values, layouts, eqn):
    (x,), (d,) = values, layouts
    target = _constrained_layout(mesh, eqn.params["sharding"])
    if target is mesh or target == d:
        return [x], [d]
    if d is not REPLICATED:
        x = mesh.gather(x, d)
    if target is not REPLICATED:
        x = mesh.blocks(x, target)
    return [x], [target]


partition_rules[sharding_constraint_p] = _sharding_constraint


def sharding_constraints(ir: IR) -> list:
    """The shardings of the sharding constraints in ``ir`` and its regions.

    Example::

        sharding_constraints(pyree.make_ir(lambda x: with_sharding_constraint(x, rows))(x).ir)
        # [NamedSharding(mesh=Mesh('batch': 2), spec=P('batch',))]
    """
    found = []
    for eqn in ir.eqns:
        if eqn.primitive is sharding_constraint_p:
            found.append(eqn.params["sharding"])
        for region in regions(eqn):
            found += sharding_constraints(region)
    return found


def has_sharding_constraints(ir: IR) -> bool:
    """Whether ``ir`` (or a region in it) constrains a value's sharding.
    Example: ``has_sharding_constraints(pyree.make_ir(lambda x: x * 2)(x).ir)`` -> False"""
    return bool(sharding_constraints(ir))
# Rules that apply even when every operand is replicated (they may split a value).
_LAYOUT_CHANGING = {sharding_constraint_p}


# -- control flow --------------------------------------------------------------------------------
# A conditional or loop whose operands are split cannot run as one copy per device: its
# regions hold all-reduces and gathers where the devices meet. ``cond`` computes every branch
# partitioned (inline, on every device) and each device selects the outputs of the branch the
# index picks (the index, a scalar, is replicated: every device picks the same); an output
# whose layout differs between branches is gathered. ``while`` and ``scan`` become ONE loop
# whose carry holds every device's values and whose body is the partitioned body: a carry
# keeps its layout if the body gives it back in that layout, and is replicated otherwise (the
# layouts are found by partitioning the body until they no longer change). The loop's
# condition is the first device's copy of the (replicated, scalar) predicate. A scan's rows
# are each device's rows of its blocks (scanned arrays split along their first dimension, the
# scanned one, gather); its per-step outputs are stacked per device, split like the step's.


def _converted(mesh: MeshAxis, values: list, have: Any, want: Any) -> list:
    """A value (per device) in layout ``have`` brought to layout ``want``, as arrays on their
    devices (a loop carries arrays)."""
    if have != want:
        if have is not REPLICATED:
            values = mesh.gather(values, have)
        if want is not REPLICATED:
            values = mesh.blocks(values, want)
    return [array_on(v, i) for i, v in enumerate(values)]


def _local_aval(aval, layout: Any, n: int):
    if layout is REPLICATED:
        return aval
    return aval.update(shape=_local_shape(aval.shape, layout, n))


def _unflattened(xs: Sequence[Any], layouts: Sequence[Any], n: int) -> list:
    """Flat loop carries (each value's copies, device by device) as (layout, values)."""
    return [(d, list(xs[j * n:(j + 1) * n])) for j, d in enumerate(layouts)]


def _body_layouts(body: IR, fixed: list, carry_avals: list, carry: list, rows: list,
                  mesh: MeshAxis) -> list:
    """The layouts of ``body``'s outputs when it takes ``fixed`` (layout, values) inputs, then
    carries of ``carry_avals`` in layouts ``carry`` and per-step rows ``rows`` (layout,
    aval), found by partitioning it in a region traced for that alone."""
    n = mesh.size
    box: list = []
    avals = [_local_aval(a, d, n) for a, d in zip(carry_avals, carry) for _ in range(n)]
    avals += [_local_aval(a, d, n) for d, a in rows for _ in range(n)]

    def probe(*xs):
        inputs = _unflattened(xs, list(carry) + [d for d, _ in rows], n)
        outs, layouts = _partition_ir(body, [], list(fixed) + inputs, mesh)
        box.append(layouts)
        return []

    trace_region(probe, avals)
    return box[0]


def _carry_layouts(body: IR, fixed: list, carry_avals: list, carry: list, rows: list,
                   mesh: MeshAxis) -> tuple[list, list]:
    """Layouts for a loop's carries that its body gives back (a split carry the body returns
    otherwise becomes replicated), and the body's outputs' layouts for them."""
    carry = list(carry)
    while True:
        out = _body_layouts(body, fixed, carry_avals, carry, rows, mesh)
        changed = [j for j, d in enumerate(carry) if d is not REPLICATED and out[j] != d]
        if not changed:
            return carry, out
        for j in changed:
            carry[j] = REPLICATED


def _region_ir(region: Any) -> Optional[IR]:
    if isinstance(region, ClosedIR):
        return None if region.consts else region.ir
    return None if region.const_vars else region


def _cond(mesh, values, layouts, eqn):
    branches = [_region_ir(b) for b in eqn.params["branches"]]
    if any(b is None for b in branches) or layouts[0] is not REPLICATED:
        return None
    n = mesh.size
    operands = list(zip(layouts[1:], values[1:]))
    results = [_partition_ir(b, [], operands, mesh) for b in branches]
    outs, out_layouts = [], []
    for j in range(len(eqn.outputs)):
        found = {r[1][j] for r in results}
        want = found.pop() if len(found) == 1 else REPLICATED
        per_branch = [_converted(mesh, r[0][j], r[1][j], want) for r in results]
        chosen = [select_branch(values[0][i], [[branch[i]] for branch in per_branch])[0]
                  for i in range(n)]
        outs.append(chosen)
        out_layouts.append(want)
    return outs, out_layouts


def _while(mesh, values, layouts, eqn):
    from ..families.control_flow import bind_while
    params = eqn.params
    cond_ir, body_ir = _region_ir(params["cond_ir"]), _region_ir(params["body_ir"])
    if cond_ir is None or body_ir is None:
        return None
    n = mesh.size
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    cond_in = list(zip(layouts[:cn], values[:cn]))
    body_in = list(zip(layouts[cn:cn + bn], values[cn:cn + bn]))
    carry_avals = [a.aval for a in eqn.inputs[cn + bn:]]
    carry, _ = _carry_layouts(body_ir, body_in, carry_avals, layouts[cn + bn:], [], mesh)
    init = [v for have, want, values_j in zip(layouts[cn + bn:], carry, values[cn + bn:])
            for v in _converted(mesh, values_j, have, want)]

    def cond_fn(*xs):
        outs, _ = _partition_ir(cond_ir, [], cond_in + _unflattened(xs, carry, n), mesh)
        return [outs[0][0]]   # (the predicate is a scalar: replicated, the same everywhere)

    def body_fn(*xs):
        outs, got = _partition_ir(body_ir, [], body_in + _unflattened(xs, carry, n), mesh)
        return [v for o, have, want in zip(outs, got, carry)
                for v in _converted(mesh, o, have, want)]

    outs = bind_while(cond_fn, body_fn, init)
    return [values for _, values in _unflattened(outs, carry, n)], carry


def _scan(mesh, values, layouts, eqn):
    from ..families.control_flow import bind_while
    params = eqn.params
    body = _region_ir(params["body"])
    nc, ncar, length = params["num_consts"], params["num_carry"], params["length"]
    xs_layouts = layouts[nc + ncar:]
    if body is None or 0 in xs_layouts:   # (split along the scanned dimension: gather)
        return None
    n = mesh.size
    consts = list(zip(layouts[:nc], values[:nc]))
    carry_avals = [a.aval for a in eqn.inputs[nc:nc + ncar]]
    rows = [(REPLICATED if d is REPLICATED else d - 1, a.aval.update(shape=a.aval.shape[1:]))
            for d, a in zip(xs_layouts, eqn.inputs[nc + ncar:])]
    carry, out = _carry_layouts(body, consts, carry_avals, layouts[nc:nc + ncar], rows, mesh)
    ys = [REPLICATED if d is REPLICATED else d + 1 for d in out[ncar:]]
    y_avals = [v.aval for v in body.outs[ncar:]]
    int32 = np.dtype(np.int32)
    index = lambda v: TypedScalar(v, int32, False)
    init = [array_on(index(0), 0)]
    for have, want, values_j in zip(layouts[nc:nc + ncar], carry, values[nc:nc + ncar]):
        init += _converted(mesh, values_j, have, want)
    for d, aval in zip(ys, y_avals):
        stacked = _local_aval(aval.update(shape=(length,) + aval.shape), d, n)
        zeros = P.broadcast_in_dim_p.bind(TypedScalar(0, aval.dtype, aval.weak_type),
                                          shape=stacked.shape, broadcast_dimensions=())
        init += [transfer(zeros, i) for i in range(n)]
    xs = values[nc + ncar:]
    state = list(carry) + ys

    def not_done(t, *rest):
        return [P.lt_p.bind(t, index(length))]

    def step(t, *rest):
        position = P.sub_p.bind(index(length - 1), t) if params["reverse"] else t
        here = [position] + [transfer(position, i) for i in range(1, n)]
        inputs = _unflattened(rest, state, n)
        step_rows = []
        for x, (d, _) in zip(xs, rows):
            per_device = []
            for i in range(n):
                aval = get_aval(x[i])
                row = P.dynamic_slice_p.bind(x[i], here[i], *[index(0)] * (aval.ndim - 1),
                                             slice_sizes=(1,) + aval.shape[1:])
                per_device.append(P.reshape_p.bind(row, new_sizes=aval.shape[1:]))
            step_rows.append((d, per_device))
        outs, got = _partition_ir(body, [], consts + inputs[:ncar] + step_rows, mesh)
        new = [P.add_p.bind(t, index(1))]
        for o, have, want in zip(outs[:ncar], got[:ncar], carry):
            new += _converted(mesh, o, have, want)
        for (d, buffers), y, have in zip(inputs[ncar:], outs[ncar:], got[ncar:]):
            y = _converted(mesh, y, have, REPLICATED if d is REPLICATED else d - 1)
            for i in range(n):
                aval = get_aval(y[i])
                row = P.broadcast_in_dim_p.bind(y[i], shape=(1,) + aval.shape,
                                                broadcast_dimensions=tuple(range(1, aval.ndim + 1)))
                new.append(P.dynamic_update_slice_p.bind(buffers[i], row, here[i],
                                                         *[index(0)] * aval.ndim))
        return new

    outs = bind_while(not_done, step, init)
    return [values for _, values in _unflattened(outs[1:], state, n)], state


def _register_control_flow_rules() -> None:
    from ..families.control_flow import cond_p, scan_p, while_p
    partition_rules[cond_p] = _cond
    partition_rules[while_p] = _while
    partition_rules[scan_p] = _scan


_register_control_flow_rules()


# -- the interpreter ---------------------------------------------------------------------------

def _partition_ir(ir: IR, consts: Sequence[tuple], inputs: Sequence[tuple], mesh: MeshAxis
                  ) -> tuple[list, list]:
    """Emit ``ir`` per device; ``consts`` / ``inputs``: ``(layout, values per device)`` of its
    const_vars / in_vars. Returns (outputs' values per device, their layouts)."""
    n = mesh.size
    env: dict[Var, tuple] = dict(zip(ir.const_vars, consts))
    env.update(zip(ir.in_vars, inputs))

    def read(a) -> tuple:
        if isinstance(a, Literal):
            return REPLICATED, [literal_value(a)] * n
        return env[a]

    wholes: dict[Var, list] = {}

    def gathered(var: Var, values: list, dim: int) -> list:
        """A split value gathered on every device, once for all the equations that need it."""
        if var not in wholes:
            wholes[var] = mesh.gather(values, dim)
        return wholes[var]

    for eqn in ir.eqns:
        layouts, values = zip(*[read(a) for a in eqn.inputs]) if eqn.inputs else ((), ())
        layouts, values = list(layouts), list(values)
        with located(eqn.loc):
            result = None
            if (all(d is REPLICATED for d in layouts)
                    and eqn.primitive not in _LAYOUT_CHANGING):
                result = _same_params(eqn, values, n), [REPLICATED] * len(eqn.outputs)
            else:
                rule = partition_rules.get(eqn.primitive)
                if rule is None and eqn.primitive in P.ELEMENTWISE:
                    rule = _elementwise
                if rule is not None:
                    result = rule(mesh, values, layouts, eqn)
                if result is None:   # no partitioned form: gather the split operands
                    values = [v if d is REPLICATED else gathered(a, v, d)
                              for a, v, d in zip(eqn.inputs, values, layouts)]
                    result = _same_params(eqn, values, n), [REPLICATED] * len(eqn.outputs)
        outputs, out_layouts = result
        for var, layout, per_device in zip(eqn.outputs, out_layouts, outputs):
            env[var] = (layout, per_device)
    outs = [read(a) for a in ir.outs]
    return [values for _, values in outs], [layout for layout, _ in outs]


def partition_eval(closed: ClosedIR, inputs: Sequence[Sequence[Any]],
                   layouts: Sequence[Optional[int]], size: int, mesh: Any = None,
                   axis_name: Any = None) -> tuple[list, list]:
    """Emit ``closed`` (traced on whole arrays) into the active trace as an SPMD program over
    ``size`` devices. ``inputs[k][i]`` is input ``k`` on device ``i`` (already there): its
    block if ``layouts[k]`` is a dimension, the whole if it is ``REPLICATED``. Captured
    constants are inputs of the program on the first device, moved to every device.
    ``mesh`` / ``axis_name``: the ``pyree.sharding.Mesh`` and its axis partitioned over, which
    sharding constraints in the program may name.

    Returns ``(outputs, out_layouts)``: ``outputs[j][i]`` is result ``j`` on device ``i``.

    Example::

        outs, out_layouts = partition_eval(closed, [[x0, x1], [w0, w1]], [0, None], 2)
    """
    mesh = MeshAxis(size, mesh, axis_name)
    consts = [(REPLICATED, [transfer(c, i) for i in range(size)]) for c in closed.consts]
    return _partition_ir(closed.ir, consts, list(zip(layouts, inputs)), mesh)
