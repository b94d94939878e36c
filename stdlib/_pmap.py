"""``pmap`` with JAX's signature: one function run on several devices at once, each on its
slice of the mapped axis, compiled as ONE IREE multi-device program.

The function is traced once, on one slice's abstract values (converted by the transpiler, so Python
control flow works as under ``jit``). The program around it (transpiler/backend/spmd.py) takes each
argument where it lives, cuts the mapped axis into slices and moves slice ``i`` to device ``i``,
runs a copy of the function's IR per device, with collectives (``lax.psum``...) as transfers
between devices and reductions, and returns each device's results on that device and IREE places
every operation on the device of its operands and runs the devices concurrently. A second small
multi-device program then stacks each result's pieces into the whole on the first device
(``_assembler``, queued behind the first, not waited for).
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Hashable, Optional, Sequence

import numpy as np

from pyree import tree_util
from pyree.runtime import compile as rcompile
from pyree.runtime.array import Array, PmapSharding, ShardedArray, device_put_numpy
from pyree.runtime.device import Device, devices as all_devices, multi_device_compile_flags
from pyree.runtime.executable import MultiDeviceExecutable
from pyree.transpiler.interpreters import batching
from pyree.transpiler.backend import spmd
from pyree.transpiler.frontend.convert import converted
from pyree.transpiler.backend.lower import lower_closed_ir
from pyree.transpiler.core.source import where
from pyree.transpiler.core.ir import ShapedArray
from pyree.transpiler.core.trace import Tracer, _state, canonicalize_array, get_aval, trace_to_ir

from ._vmap import _axes_for_leaves, _check_axes, _leaf_names

_SCALARS = (bool, int, float, complex)


def consts_on(device: Device, values: Sequence[Any]) -> list:
    """A multi-device program's captured values as arguments on ``device`` (its first).

    Example: ``consts_on(devs[0], closed.consts)``
    """
    consts = []
    for value in values:
        if isinstance(value, Array):
            consts.append(value if value.device == device else
                          device_put_numpy(value._value(), device, value.weak_type))
        else:
            consts.append(device_put_numpy(canonicalize_array(np.asarray(value)), device))
    return consts


class _Input:
    """How one argument leaf enters the program: as its pieces already on the devices
    (``pieces``: a pmap result split the same way), or whole, on device ``device`` of the
    pmap, split there (``axis`` not None) or copied to every device (``axis`` None)."""

    __slots__ = ("pieces", "axis", "device", "aval")

    def __init__(self, pieces: bool, axis: Optional[int], device: int, aval) -> None:
        self.pieces, self.axis, self.device, self.aval = pieces, axis, device, aval

    def key(self) -> tuple:
        return (self.pieces, self.axis, self.device, self.aval)


class _Program:
    """One compiled signature of a pmapped function."""

    __slots__ = ("executable", "consts", "out_tree", "out_axes", "devices")

    def __init__(self, executable: MultiDeviceExecutable, consts: list, out_tree,
                 out_axes: list, devices: tuple) -> None:
        self.executable = executable
        self.consts = consts
        self.out_tree = out_tree
        self.out_axes = out_axes
        self.devices = devices

    def run(self, arrays: list) -> Any:
        outs = self.executable(self.consts + arrays)
        n = len(self.devices)
        results, k = [], 0
        for axis in self.out_axes:
            if axis is None:
                results.append(outs[k])
                k += 1
            else:
                pieces = outs[k:k + n]
                (whole,) = _assembler(pieces[0].aval, axis, self.devices)(pieces)
                results.append(ShardedArray(whole, pieces, PmapSharding(self.devices, axis)))
                k += n
        return tree_util.tree_unflatten(self.out_tree, results)


class PmapFunction:
    """A function mapped over devices; made by ``pyree.pmap``.

    Example::

        f = pyree.pmap(lambda x: x / lax.psum(x, "i"), axis_name="i")
        f(np.arange(2.0))          # on 2 devices (PYREE_NUM_CPU_DEVICES=2)
    """

    def __init__(self, fun: Callable, axis_name: Optional[Hashable], in_axes: Any, out_axes: Any,
                 static_broadcasted_argnums: Sequence[int], devices: Optional[Sequence[Device]],
                 axis_size: Optional[int], backend: Optional[str] = None) -> None:
        functools.update_wrapper(self, fun)
        self._backend = backend
        self._fun = fun
        self._axis_name = axis_name
        self._in_axes = tuple(in_axes) if isinstance(in_axes, list) else in_axes
        self._out_axes = out_axes
        self._static = tuple(sorted(static_broadcasted_argnums))
        self._devices = None if devices is None else tuple(devices)
        self._axis_size = axis_size
        self._cache: dict[tuple, _Program] = {}
        if self._devices is not None:
            if not self._devices:
                raise ValueError(f"pmap got an empty list of devices{where(None)}")
            platforms = sorted({d.platform for d in self._devices})
            if len(platforms) > 1:
                raise ValueError(f"pmap devices must all be of one platform, got "
                                 f"{platforms}{where(None)}")
            if len(set(self._devices)) != len(self._devices):
                raise ValueError(f"pmap got the same device twice in devices="
                                 f"{list(self._devices)}{where(None)}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        static = []
        for i in self._static:
            if not -len(args) <= i < len(args):
                raise ValueError(f"pmap static_broadcasted_argnums={self._static} but the "
                                 f"function got {len(args)} positional arguments{where(None)}")
            try:
                hash(args[i])
            except TypeError:
                raise ValueError(f"pmap static argument {i} of type {type(args[i]).__name__} "
                                 f"is not hashable{where(None)}") from None
            static.append((i % len(args), args[i]))
        static_positions = {i for i, _ in static}
        dyn_positions = [i for i in range(len(args)) if i not in static_positions]
        dyn_args = tuple(args[i] for i in dyn_positions)
        in_axes = self._in_axes
        if isinstance(in_axes, tuple):
            if len(in_axes) != len(args):
                raise ValueError(
                    f"pmap in_axes must be an int, None, or a tuple of entries corresponding to "
                    f"the positional arguments passed to the function, but got len(in_axes)="
                    f"{len(in_axes)}, len(args)={len(args)}{where(None)}")
            per_arg = [in_axes[i] for i in dyn_positions]
        else:
            per_arg = [in_axes] * len(dyn_args)
        dims = []
        for ax, arg in zip(per_arg, dyn_args):
            dims.extend(_axes_for_leaves(ax, arg, "in_axes"))
        dims.extend([0] * len(tree_util.tree_leaves(kwargs)))   # (as JAX: keywords map axis 0)
        leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
        names = _leaf_names(self._fun, dyn_args, kwargs)
        if _state.builders:
            return self._traced(static, per_arg, dyn_args, kwargs, leaves, dims, names)
        dims, size = self._mapped_size(leaves, dims, names)
        devs = self._devices_for(size)
        inputs, arrays = self._inputs(leaves, dims, devs)
        from pyree.transpiler.programs import jit as jit_module
        key = (tuple(static), in_tree, tuple(i.key() for i in inputs), devs,
               jit_module._trace_options)
        program = self._cache.get(key)
        if program is None:
            program = self._cache[key] = self._compile(tuple(static), in_tree, inputs, devs)
        return program.run(arrays)

    def _traced(self, static: list, per_arg: list, dyn_args: tuple, kwargs: dict,
                leaves: list, dims: list, names: list) -> Any:
        """A pmap called while tracing (inside ``jit``, ``grad``, ``vmap``): a ``vmap`` over
        the same axis with the same name -- the same values and derivatives (collectives are
        batched computations along the axis) -- whose mapped inputs and outputs are
        constrained (``with_sharding_constraint``) to be split over the pmap's devices along
        the mapped axis. A ``jit`` around it then follows that placement, each device
        computing its slice in one multi-device program (stdlib/_sharded_jit.py); elsewhere
        (``grad`` or ``vmap`` outside any ``jit``) the constraints do nothing. The mapped
        axis is checked against the device count, as a direct call checks it."""
        from ._vmap import vmap
        dims, size = _check_axes(leaves, dims, names, self._axis_size, "pmap")
        devs = self._devices_for(size)

        def with_static(*dyn, **kw):
            args = list(dyn)
            for i, value in static:
                args.insert(i, value)
            return converted(self._fun)(*args, **kw)

        mapped = vmap(with_static, in_axes=tuple(per_arg), out_axes=self._out_axes,
                      axis_name=self._axis_name, axis_size=size)
        if size == 1:
            return mapped(*dyn_args, **kwargs)
        # The mapped axes placed over the pmap's devices: a jit around it follows them
        # (transpiler/programs/partition.py), each device computing its slice.
        place = _mapped_axis_placer(devs, self._axis_name)
        dyn_args, kwargs = tree_util.tree_unflatten(tree_util.tree_structure((dyn_args, kwargs)), [
            place(leaf, d) for leaf, d in zip(leaves, dims)])
        out = mapped(*dyn_args, **kwargs)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        out_dims = _axes_for_leaves(self._out_axes, out, "out_axes")
        return tree_util.tree_unflatten(out_tree, [place(leaf, d % (get_aval(leaf).ndim or 1)
                                                         if d is not None else None)
                                                   for leaf, d in zip(out_leaves, out_dims)])

    # -- checking the arguments ----------------------------------------------------------------
    def _mapped_size(self, leaves: list, dims: list, names: list) -> tuple[list, int]:
        for leaf, name in zip(leaves, names):
            if isinstance(leaf, Tracer):
                raise TypeError(f"pmap got a traced value ({name}) outside of tracing"
                                f"{where(None)}")
        return _check_axes(leaves, dims, names, self._axis_size, "pmap")

    def _devices_for(self, size: int) -> tuple:
        """The devices a call with mapped axis ``size`` runs on: ``devices`` if given (then
        exactly ``size`` of them), else the first ``size`` devices of the default platform."""
        if self._devices is not None:
            if len(self._devices) != size:
                raise ValueError(
                    f"pmap's mapped axis has size {size} but it was given {len(self._devices)} "
                    f"devices: the mapped axis must have one entry per device{where(None)}")
            return self._devices
        available = all_devices(self._backend)
        if size < 1 or size > len(available):
            raise ValueError(
                f"pmap's mapped axis has size {size} but there are {len(available)} "
                f"{available[0].platform} devices: the mapped axis needs one entry per device "
                f"(set PYREE_NUM_CPU_DEVICES, or pyree.config.update('num_cpu_devices', n) "
                f"before the first computation, for more CPU devices){where(None)}")
        return tuple(available[:size])

    def _inputs(self, leaves: list, dims: list, devs: tuple) -> tuple[list, list]:
        """For each leaf, how it enters the program (``_Input``), and the program's argument
        arrays in order."""
        inputs, arrays = [], []
        for leaf, d in zip(leaves, dims):
            if (isinstance(leaf, ShardedArray) and d is not None
                    and leaf.sharding == PmapSharding(devs, d)):
                pieces = [s.data for s in leaf.addressable_shards]
                inputs.append(_Input(True, d, 0, pieces[0].aval))
                arrays.extend(pieces)
                continue
            if isinstance(leaf, Array):
                array = leaf
                if leaf.device not in devs:   # (pmap moves its arguments, as JAX's does)
                    array = device_put_numpy(leaf._value(), devs[0], weak_type=leaf.weak_type)
            elif isinstance(leaf, (np.ndarray, np.generic)):
                array = device_put_numpy(canonicalize_array(np.asarray(leaf)), devs[0])
            elif type(leaf) in _SCALARS:
                host = canonicalize_array(np.asarray(leaf))
                array = device_put_numpy(host, devs[0], weak_type=type(leaf) is not bool)
            else:
                raise TypeError(f"argument of type {type(leaf).__name__} is not a valid pyree "
                                f"type: pmapped functions take arrays, scalars and pytrees of "
                                f"them; pass other values with static_broadcasted_argnums"
                                f"{where(None)}")
            inputs.append(_Input(False, d, devs.index(array.device), array.aval))
            arrays.append(array)
        return inputs, arrays

    # -- compiling -----------------------------------------------------------------------------
    def _compile(self, static: tuple, in_tree, inputs: list, devs: tuple) -> _Program:
        n = len(devs)
        fn = converted(self._fun)
        box: dict = {}

        def one_device(*xs):
            dyn_args, kwargs = tree_util.tree_unflatten(in_tree, list(xs))
            args = list(dyn_args)
            for i, value in static:
                args.insert(i, value)
            out_leaves, box["tree"] = tree_util.tree_flatten(fn(*args, **kwargs))
            for leaf in out_leaves:
                if not isinstance(leaf, (Tracer, Array, np.ndarray, np.generic) + _SCALARS):
                    raise TypeError(f"pmapped function {getattr(self._fun, '__name__', '?')} "
                                    f"returned a value of type {type(leaf).__name__}; results "
                                    f"must be arrays, scalars or pytrees of them")
            return out_leaves

        slice_avals = [batching.example_aval(i.aval, i.axis) if not i.pieces else i.aval
                       for i in inputs]
        with batching.named_axis(self._axis_name, n):
            closed = trace_to_ir(one_device, slice_avals, top_level=False)
        out_tree = box["tree"]
        out_axes = []
        for axis, aval in zip(_axes_for_leaves(self._out_axes, tree_util.tree_unflatten(
                out_tree, list(closed.out_avals)), "out_axes"), closed.out_avals):
            if axis is not None:
                if not -(aval.ndim + 1) <= axis <= aval.ndim:
                    raise ValueError(f"pmap out_axes {axis} is out of range for an output of "
                                     f"rank {aval.ndim + 1}{where(None)}")
                axis %= aval.ndim + 1
            out_axes.append(axis)
        out_devices: list[int] = []

        def program(*xs):
            it = iter(xs)
            per_device: list[list] = [[] for _ in range(n)]
            for spec in inputs:
                if spec.pieces:
                    for i in range(n):
                        per_device[i].append(next(it))
                    continue
                x = next(it)
                for i in range(n):
                    value = x if spec.axis is None else spmd.take(x, spec.axis, i)
                    per_device[i].append(value if i == spec.device else spmd.transfer(value, i))
            outs = spmd.spmd_eval(closed, per_device, spmd.SpmdAxis(n, self._axis_name))
            results = []
            out_devices.clear()
            for k, axis in enumerate(out_axes):
                if axis is None:   # (JAX's out_axes=None: the first device's value)
                    results.append(outs[0][k])
                    out_devices.append(0)
                    continue
                results.extend(outs[i][k] for i in range(n))
                out_devices.extend(range(n))
            return results

        program_avals = []
        in_devices = []
        for spec in inputs:
            if spec.pieces:
                program_avals.extend([spec.aval] * n)
                in_devices.extend(range(n))
            else:
                program_avals.append(spec.aval)
                in_devices.append(spec.device)
        whole = trace_to_ir(program, program_avals, top_level=False)
        consts = consts_on(devs[0], whole.consts)
        lowered = lower_closed_ir(whole, platform=devs[0].platform,
                                  affinities=([0] * len(consts) + in_devices, out_devices))
        vmfb = rcompile.compile_mlir(lowered.text, multi_device_compile_flags(devs),
                                     cache_text=lowered.text_without_locations)
        executable = MultiDeviceExecutable(vmfb, lowered.function, devs,
                                           [0] * len(consts) + in_devices, whole.out_avals,
                                           out_devices)
        self._lowered = lowered   # (the last program's MLIR, for inspection and tests)
        return _Program(executable, consts, out_tree, out_axes, devs)

    def lower_text(self) -> str:
        """The MLIR of the program compiled last (without locations): the multi-device module
        IREE got, with its ``#hal.device.promise`` placements and ``flow.tensor.transfer``s."""
        return self._lowered.text_without_locations

    def __repr__(self) -> str:
        return f"<pyree.pmap of {getattr(self._fun, '__qualname__', self._fun)!r}>"


def _mapped_axis_placer(devs: tuple, axis_name: Optional[Hashable]) -> Callable:
    """``place(x, d)``: ``x`` constrained to be split along dimension ``d`` over ``devs``
    (a mesh of one axis named like the pmap's), or ``x`` itself when ``d`` is None."""
    from .sharding import Mesh, NamedSharding, PartitionSpec, with_sharding_constraint
    name = axis_name if isinstance(axis_name, str) else "pmap"
    mesh = Mesh(np.array(devs, dtype=object), (name,))

    def place(x: Any, d: Optional[int]) -> Any:
        if d is None or not isinstance(x, Tracer):
            return x
        return with_sharding_constraint(x, NamedSharding(mesh, PartitionSpec(*[None] * d, name)))
    return place


_assemblers: dict[tuple, MultiDeviceExecutable] = {}


def _assembler(piece: ShapedArray, axis: int, devs: tuple) -> MultiDeviceExecutable:
    """A multi-device program taking one piece of ``piece``'s type per device and returning
    them stacked along ``axis`` on the first device (a ShardedArray's whole).

    A program of its own, not the end of the pmap's: IREE 3.13 failed to compile programs
    whose results were also moved to the first device and stacked there when a device's
    result was made of copies alone (an all_gather's concatenation over 3 or more devices:
    "op affinity #hal.device.affinity<@device_2> is not compatible with the partition affinity
    #hal.device.affinity<@device_0>", iree-compile alone too; the same program without the
    stacking compiled). Here the pieces are arguments, which compile."""
    key = (piece, axis, devs)
    assembler = _assemblers.get(key)
    if assembler is None:
        n = len(devs)

        def stacked(*pieces):
            return [spmd.stack([p if i == 0 else spmd.transfer(p, 0)
                                for i, p in enumerate(pieces)], axis)]

        closed = trace_to_ir(stacked, [piece] * n, top_level=False)
        lowered = lower_closed_ir(closed, platform=devs[0].platform,
                                  affinities=(list(range(n)), [0]))
        vmfb = rcompile.compile_mlir(lowered.text, multi_device_compile_flags(devs),
                                     cache_text=lowered.text_without_locations)
        assembler = _assemblers.setdefault(key, MultiDeviceExecutable(
            vmfb, lowered.function, devs, list(range(n)), closed.out_avals, [0]))
    return assembler


def pmap(fun: Optional[Callable] = None, axis_name: Optional[Hashable] = None, *,
         in_axes: Any = 0, out_axes: Any = 0, static_broadcasted_argnums: Any = (),
         devices: Optional[Sequence[Device]] = None, backend: Optional[str] = None,
         axis_size: Optional[int] = None, donate_argnums: Any = ()) -> Any:
    """Run ``fun`` on several devices at once, each on its slice of the mapped axis of the
    arguments (JAX's ``pmap``): the mapped axis has one entry per device, and the result's
    mapped axis one per device too, each piece computed on and kept on its device.

    Collectives over ``axis_name`` combine the devices' values: ``lax.psum``, ``pmean``,
    ``pmax``, ``pmin``, ``axis_index``, ``all_gather``, ``ppermute``, ``psum_scatter``,
    ``all_to_all``, also inside ``lax.cond``/``switch`` (every branch computed on every
    device, each selecting its own), ``scan``s, ``fori_loop``s and ``while_loop``s (one loop
    over all devices, going on while any device's condition holds, a device whose condition
    no longer holds keeping its values, as under ``vmap``);
    ``grad`` inside ``fun``
    differentiates through them. The whole is one IREE multi-device program (not one
    call per device). ``devices`` defaults to the first devices of the default platform (CPU
    devices: ``PYREE_NUM_CPU_DEVICES``); ``in_axes`` / ``out_axes`` as in ``vmap``;
    ``static_broadcasted_argnums`` are passed to ``fun`` as Python values, the same on every
    device. Results are ``ShardedArray``s: ``.sharding``, ``.addressable_shards`` and
    ``.devices()`` say where each piece lives; ``np.asarray`` gives the whole. Called while
    tracing (inside ``jit``, ``grad`` or ``vmap``), a pmap is a ``vmap`` over the same axis
    whose mapped axes are placed over the devices: inside ``jit`` each device computes its
    slice (one multi-device program, results split as ``NamedSharding``s); the values and
    derivatives are the same.

    Example::

        # PYREE_NUM_CPU_DEVICES=2
        normalize = pyree.pmap(lambda x: x / lax.psum(x, "i"), axis_name="i")
        normalize(np.array([1.0, 3.0]))          # [0.25, 0.75], one entry per device
    """
    if fun is None:
        return functools.partial(pmap, axis_name=axis_name, in_axes=in_axes, out_axes=out_axes,
                                 static_broadcasted_argnums=static_broadcasted_argnums,
                                 devices=devices, backend=backend, axis_size=axis_size,
                                 donate_argnums=donate_argnums)
    if not callable(fun):
        raise TypeError(f"pmap expects a callable, got {fun!r}")
    if backend is not None and devices is not None:
        raise ValueError("pmap takes devices or backend, not both")
    if isinstance(static_broadcasted_argnums, int):
        static_broadcasted_argnums = (static_broadcasted_argnums,)
    # donate_argnums is accepted and ignored: pyree copies nothing it could save by donating.
    return PmapFunction(fun, axis_name, in_axes, out_axes, tuple(static_broadcasted_argnums),
                        devices, axis_size, backend)


# jit plans programs over meshes through _sharded_jit, which installs itself when imported.
from . import _sharded_jit  # noqa: E402,F401
