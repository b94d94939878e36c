"""``jit`` over arguments placed with ``NamedSharding``: the computation follows the sharding
(JAX's SPMD data parallelism), compiled as ONE IREE multi-device program.

When some arguments of a jitted call are split over the devices of a mesh axis (``device_put(x,
NamedSharding(mesh, P("batch")))``), the function is traced once on the whole arrays, as always,
and ``transpiler/programs/partition.py`` emits that program again over the axis's devices: each
device computes on its block of the split arguments and on its copy of the others, reductions over
a split dimension (a mean loss, the weight gradients) are combined across the devices, and what has
no partitioned form is gathered (see that module's rules).

Arguments enter where they live: a split argument as its blocks, one per device; a replicated
one (``P()``) as its copies; any other array whole, on its device (moved to the mesh's first
device if it is elsewhere), and copied to every device by the program. Results come back as
JAX's do: a split result as a ``ShardedArray`` with ``NamedSharding(mesh, P(..., axis))``
(whose whole is assembled on the first device by a second small multi-device program queued
behind the first, as pmap's results are), a replicated one with ``NamedSharding(mesh, P())``,
each device holding its copy. Passing those results back in (a training loop) moves nothing.

When this applies: every NamedSharding argument is on one mesh, the mesh has exactly one axis
with more than one device, and each argument's spec either splits one dimension over that axis
(mesh axes of size 1 may be named too) or splits nothing. Otherwise -- a 2-D mesh split along
both axes, two meshes, a program with effects (``debug.print``, runtime checks) -- the call
computes on the whole arrays on the mesh's first device and returns single-device arrays, as
before this module existed: correct values, no parallelism.
"""
from __future__ import annotations

import sys
from typing import Any, Optional, Sequence

import numpy as np

from pyree import tree_util
from pyree.runtime import compile as rcompile
from pyree.runtime.array import Array, ShardedArray, device_put_numpy
from pyree.runtime.device import multi_device_compile_flags
from pyree.runtime.executable import MultiDeviceExecutable
from pyree.transpiler.programs import jit as _jit_module, partition
from pyree.transpiler.backend import spmd
from pyree.transpiler.core.ir import ClosedIR, ShapedArray
from pyree.transpiler.backend.lower import lower_closed_ir
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import Tracer, canonicalize_array, has_effects, trace_to_ir

from ._pmap import consts_on
from .sharding import Mesh, NamedSharding, PartitionSpec

SPLIT, COPIES, WHOLE = "split", "copies", "whole"


class Plan:
    """How a call's arguments sit on a mesh axis: the mesh, the axis's name, its devices in
    order, and per argument leaf ``(SPLIT, dim)``, ``(COPIES,)`` or ``(WHOLE, device)`` (the
    position among the devices of the one it enters on)."""

    __slots__ = ("mesh", "axis", "devices", "entries")

    def __init__(self, mesh: Mesh, axis: str, devices: tuple, entries: tuple) -> None:
        self.mesh, self.axis, self.devices, self.entries = mesh, axis, devices, entries

    def key(self) -> tuple:
        return (self.mesh, self.axis, self.entries)


def plan_for(leaves: Sequence[Any]) -> Optional[Plan]:
    """The plan of a call whose argument leaves are ``leaves``, or None when the computation
    cannot follow their shardings (see the module's docstring): then jit computes on the whole
    arrays on one device.

    Example::

        plan_for([device_put(x, NamedSharding(mesh, P("batch"))), w]).entries
        # (('split', 0), ('whole', 0))
    """
    mesh = None
    for leaf in leaves:
        if type(leaf) is ShardedArray and isinstance(leaf.sharding, NamedSharding):
            if mesh is None:
                mesh = leaf.sharding.mesh
            elif leaf.sharding.mesh != mesh:
                return None
    if mesh is None:
        return None
    wide = [name for name, size in mesh.shape.items() if size > 1]
    if len(wide) != 1:
        return None
    (axis,) = wide
    devices = tuple(mesh.devices.flat)
    entries, any_split = [], False
    for leaf in leaves:
        if not (type(leaf) is ShardedArray and isinstance(leaf.sharding, NamedSharding)):
            on_mesh = isinstance(leaf, Array) and leaf.device in devices
            entries.append((WHOLE, devices.index(leaf.device) if on_mesh else 0))
            continue
        spec = leaf.sharding.spec
        split = [d for d in range(len(spec)) if any(mesh.shape[name] > 1
                                                    for name in spec.axes_of(d))]
        if not split:
            entries.append((COPIES,))
        elif len(split) == 1:
            entries.append((SPLIT, split[0]))
            any_split = True
        else:
            return None
    if not any_split:
        return None   # (nothing to divide: the whole, on one device)
    return Plan(mesh, axis, devices, tuple(entries))


def plan_from_constraints(ir, device, count: int) -> Optional[Plan]:
    """The plan of a jitted function none of whose ``count`` arguments is split (each on
    ``device``, entering whole) but whose sharding constraints all name one mesh with one
    axis of several devices; None otherwise.
    Example: ``plan_from_constraints(closed.ir, devices()[0], 1).entries`` -> ``(('whole', 0),)``
    """
    meshes = {s.mesh for s in partition.sharding_constraints(ir) if isinstance(s, NamedSharding)}
    if len(meshes) != 1:
        return None
    (mesh,) = meshes
    wide = [name for name, size in mesh.shape.items() if size > 1]
    if len(wide) != 1:
        return None
    devices = tuple(mesh.devices.flat)
    entry = (WHOLE, devices.index(device) if device in devices else 0)
    return Plan(mesh, wide[0], devices, (entry,) * count)


class PartitionedProgram:
    """One compiled signature of a jitted function over a mesh axis: the multi-device
    executable, its captured constants (on the first device), the results' structure and
    layouts."""

    __slots__ = ("executable", "consts", "out_tree", "out_layouts", "plan", "lowered",
                 "device", "direct")

    def __init__(self, executable: MultiDeviceExecutable, consts: list, out_tree,
                 out_layouts: list, plan: Plan, lowered, device=None) -> None:
        self.executable = executable
        self.consts = consts
        self.out_tree = out_tree
        self.out_layouts = out_layouts
        self.plan = plan
        self.lowered = lowered   # (the MLIR IREE compiled, for inspection and tests)
        # (What jit's fast path reads of a compiled signature: the device its arguments are
        # on, and that its call takes more than them.)
        self.device = device
        self.direct = False

    def run(self, leaves: Sequence[Any]) -> Any:
        plan = self.plan
        devs, n = plan.devices, len(plan.devices)
        arrays = list(self.consts)
        for leaf, entry in zip(leaves, plan.entries):
            if entry[0] == WHOLE:
                arrays.append(_whole_on_mesh(leaf, devs))
            elif type(leaf) is ShardedArray:
                arrays.extend(leaf._pieces)
            else:   # (a Compiled program called with other arguments than it was made for)
                raise TypeError(f"this program was compiled for an argument placed by "
                                f"NamedSharding over {plan.mesh!r}, but got "
                                f"{type(leaf).__name__}{where(None)}")
        outs = self.executable(arrays)
        pieces = [outs[k * n:(k + 1) * n] for k in range(len(self.out_layouts))]
        split = [(p, d) for p, d in zip(pieces, self.out_layouts) if d is not None]
        wholes = iter(_assembler(tuple((p[0].aval, d) for p, d in split), devs)(
            [a for p, _ in split for a in p]) if split else ())
        results = []
        for p, d in zip(pieces, self.out_layouts):
            entries = [None] * p[0].ndim   # (one entry per dimension, as JAX's results have)
            if d is not None:
                entries[d] = plan.axis
            whole = p[0] if d is None else next(wholes)
            spec = PartitionSpec(*entries)
            results.append(ShardedArray(whole, p, NamedSharding(plan.mesh, spec)))
        return tree_util.tree_unflatten(self.out_tree, results)


def _whole_on_mesh(leaf: Any, devs: tuple) -> Array:
    """An argument that enters whole: an Array on one of the mesh's devices (moved to the first
    if it is elsewhere), a NumPy array or Python scalar put on the first (as ``plan_for``
    recorded)."""
    if isinstance(leaf, Array):
        if leaf.device in devs:
            return leaf
        return device_put_numpy(leaf._value(), devs[0], weak_type=leaf.weak_type)
    weak = type(leaf) in (int, float, complex)
    return device_put_numpy(canonicalize_array(np.asarray(leaf)), devs[0], weak_type=weak)


def lower_partitioned(closed: ClosedIR, out_tree, plan: Plan, device=None
                      ) -> Optional["LoweredPartition"]:
    """``closed`` (the function traced on the whole arrays) partitioned over ``plan``'s mesh
    axis and lowered to one multi-device MLIR module, or None for a program this does not
    partition (one with effects or runtime checks: jit then runs it whole on one device).
    ``device``: where the arguments are, when they all enter whole (a plan from sharding
    constraints).

    Example::

        lowered = lower_partitioned(closed, out_tree, plan_for(leaves))
        print(lowered.module.text_without_locations)    # its #hal.device.promise placements
        params, loss = lowered.compile().run(leaves)
    """
    if closed.has_token or has_effects(closed.ir.eqns):
        return None
    devs, n = plan.devices, len(plan.devices)
    program_avals, in_devices = [], []
    for entry, aval in zip(plan.entries, closed.in_avals):
        if entry[0] == WHOLE:
            program_avals.append(aval)
            in_devices.append(entry[1])
        else:
            local = aval
            if entry[0] == SPLIT:
                shape = list(aval.shape)
                shape[entry[1]] //= n
                local = ShapedArray(tuple(shape), aval.dtype, aval.weak_type)
            program_avals.extend([local] * n)
            in_devices.extend(range(n))
    box: dict = {}

    def program(*xs):
        it = iter(xs)
        inputs, layouts = [], []
        for entry in plan.entries:
            if entry[0] == WHOLE:
                x = next(it)
                inputs.append([x if i == entry[1] else spmd.transfer(x, i) for i in range(n)])
                layouts.append(partition.REPLICATED)
            else:
                inputs.append([next(it) for _ in range(n)])
                layouts.append(entry[1] if entry[0] == SPLIT else partition.REPLICATED)
        outs, box["layouts"] = partition.partition_eval(closed, inputs, layouts, n, plan.mesh,
                                                        plan.axis)
        flat = []
        for per_device in outs:
            for i, value in enumerate(per_device):
                if not isinstance(value, Tracer):   # (a constant result)
                    value = spmd.transfer_p.bind(_materialized(value), device=i)
                flat.append(value)
        return flat

    whole = trace_to_ir(program, program_avals, top_level=False)
    consts = consts_on(devs[0], whole.consts)
    out_devices = [i for _ in box["layouts"] for i in range(n)]
    arg_devices = [0] * len(consts) + in_devices
    module = lower_closed_ir(whole, platform=devs[0].platform,
                             affinities=(arg_devices, out_devices))
    return LoweredPartition(closed, whole, module, consts, box["layouts"], arg_devices,
                            out_devices, plan, out_tree, device)


class LoweredPartition:
    """A partitioned signature lowered, not yet compiled: the traced function (``closed``),
    the multi-device program around it (``program``) and its MLIR ``module``."""

    __slots__ = ("closed", "program", "module", "consts", "out_layouts", "arg_devices",
                 "out_devices", "plan", "out_tree", "device")

    def __init__(self, closed: ClosedIR, program: ClosedIR, module, consts: list,
                 out_layouts: list, arg_devices: list, out_devices: list, plan: Plan, out_tree,
                 device) -> None:
        self.closed, self.program, self.module, self.consts = closed, program, module, consts
        self.out_layouts, self.arg_devices, self.out_devices = out_layouts, arg_devices, \
            out_devices
        self.plan, self.out_tree, self.device = plan, out_tree, device

    def compile(self) -> PartitionedProgram:
        """Compile the module with IREE (cached like every module) and load it."""
        devs = self.plan.devices
        vmfb = rcompile.compile_mlir(self.module.text, multi_device_compile_flags(devs),
                                     cache_text=self.module.text_without_locations)
        executable = MultiDeviceExecutable(vmfb, self.module.function, devs, self.arg_devices,
                                           self.program.out_avals, self.out_devices)
        return PartitionedProgram(executable, self.consts, self.out_tree, self.out_layouts,
                                  self.plan, self.module, self.device or devs[0])


def compile_partitioned(closed: ClosedIR, out_tree, plan: Plan, device=None
                        ) -> Optional[PartitionedProgram]:
    """``lower_partitioned``, compiled (None where that gives None).
    Example: ``compile_partitioned(closed, out_tree, plan_for(leaves)).run(leaves)``"""
    lowered = lower_partitioned(closed, out_tree, plan, device)
    return None if lowered is None else lowered.compile()




def _materialized(value: Any) -> Any:
    """A result that is a constant of the program (a scalar) as an array in it."""
    from pyree.transpiler.core import primitives as P
    return P.broadcast_in_dim_p.bind(value, shape=(), broadcast_dimensions=())


_assemblers: dict[tuple, MultiDeviceExecutable] = {}


def _assembler(outputs: tuple, devs: tuple) -> MultiDeviceExecutable:
    """A multi-device program taking, for each ``(piece aval, dim)`` of ``outputs``, one
    piece per device, and returning each output's pieces concatenated along ``dim`` on the
    first device (the ShardedArray's whole). A program of its own, as pmap's (see
    ``_pmap._assembler`` for the IREE 3.13 failure that keeps it out of the main program)."""
    key = (outputs, devs)
    assembler = _assemblers.get(key)
    if assembler is None:
        n = len(devs)

        def concatenated(*pieces):
            wholes = []
            for k, (_, dim) in enumerate(outputs):
                mine = pieces[k * n:(k + 1) * n]
                moved = [p if i == 0 else spmd.transfer(p, 0) for i, p in enumerate(mine)]
                from pyree.transpiler.core import primitives as P
                wholes.append(P.concatenate_p.bind(*moved, dimension=dim))
            return wholes

        closed = trace_to_ir(concatenated, [aval for aval, _ in outputs for _ in range(n)],
                             top_level=False)
        in_devices = [i for _ in outputs for i in range(n)]
        lowered = lower_closed_ir(closed, platform=devs[0].platform,
                                  affinities=(in_devices, [0] * len(outputs)))
        vmfb = rcompile.compile_mlir(lowered.text, multi_device_compile_flags(devs),
                                     cache_text=lowered.text_without_locations)
        assembler = _assemblers.setdefault(key, MultiDeviceExecutable(
            vmfb, lowered.function, devs, in_devices, closed.out_avals, [0] * len(outputs)))
    return assembler


_jit_module.mesh_partitioner = sys.modules[__name__]   # (jit plans mesh programs through it)
