"""``jax.sharding``: how arrays are placed on devices. Most arrays are whole on one device
(``SingleDeviceSharding``); ``pmap`` results are split along one axis over several devices
(``PmapSharding``); ``device_put(x, NamedSharding(mesh, spec))`` splits ``x`` into blocks over a
``Mesh`` of devices, as ``spec`` (a ``PartitionSpec``) says, and copies it along the mesh axes
the spec does not name.

    mesh = pyree.make_mesh((2,), ("batch",))                 # PYREE_NUM_CPU_DEVICES=2
    x = pyree.device_put(np.zeros((8, 3)), NamedSharding(mesh, P("batch")))
    [s.index for s in x.addressable_shards]    # [(slice(0, 4), slice(None)), (slice(4, 8), ...)]
    jnp.ones(3).sharding                       # SingleDeviceSharding(device=CpuDevice(id=0))

``set_mesh(mesh)`` makes a mesh current, so that a bare ``PartitionSpec`` given to ``reshard``
or ``with_sharding_constraint`` names its axes (JAX's explicit-sharding spelling; the axis types
of ``make_mesh(..., axis_types=...)`` are accepted and do not change what pyree does).

``jit`` follows the sharding when its arguments are split along one mesh axis (each device computes
on its block, reductions over the split dimension are combined across the devices, results come
back split or replicated, as NamedSharding arrays; stdlib/_sharded_jit.py and
transpiler/programs/partition.py). What is not done yet: arguments split along two mesh axes at
once (or on two meshes), and eager ops on sharded arrays, compute on the whole array, which a
NamedSharding-placed array also keeps on its mesh's first device, and return ordinary single-device
arrays. ``with_sharding_constraint`` places values inside a ``jit`` whose arguments are split over
its mesh, or whose constraints all name one mesh with one axis of several devices.
"""
from __future__ import annotations

import collections
import enum
import math
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

from pyree.runtime.array import (Array, PmapSharding, Shard, ShardedArray, Sharding,
                                 SingleDeviceSharding, device_put_numpy)
from pyree.runtime.device import Device, devices as _platform_devices
from pyree.transpiler.core.source import where

__all__ = ["AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec", "PmapSharding", "Shard",
           "ShardedArray", "Sharding", "SingleDeviceSharding", "get_mesh", "make_mesh",
           "reshard", "set_mesh", "with_sharding_constraint"]


class AxisType(enum.Enum):
    """How a mesh axis is sharded (``jax.sharding.AxisType``), accepted by ``Mesh`` and
    ``make_mesh``. pyree treats the three alike: a computation follows its arguments'
    shardings (``Explicit``'s behaviour) and ``with_sharding_constraint`` / ``reshard`` place
    values where asked.

    Example::

        mesh = pyree.make_mesh((2,), ("batch",), axis_types=(AxisType.Explicit,))
    """
    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()


class PartitionSpec:
    """How each dimension of an array is split over a mesh's axes (``jax.sharding.
    PartitionSpec``, also ``P``): one entry per leading dimension, each ``None`` (not split),
    a mesh axis name (split into that axis's size blocks) or a tuple of names (split over
    their product, the first name the outermost). Dimensions past the entries are not split.

    Example::

        P("batch")            # dimension 0 split over mesh axis "batch", the rest whole
        P(None, "model")      # dimension 1 split over "model"
        P()                   # every device holds all of the array
    """

    __slots__ = ("_entries",)

    def __init__(self, *entries: Union[None, str, tuple]) -> None:
        normalized = []
        for entry in entries:
            if isinstance(entry, list):
                entry = tuple(entry)
            if isinstance(entry, tuple) and len(entry) == 1:
                entry = entry[0]   # (JAX's P(("x",)) is P("x"))
            normalized.append(entry)
        self._entries = tuple(normalized)

    def __iter__(self) -> Iterator:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, i: Any) -> Any:
        return self._entries[i]

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, PartitionSpec) and other._entries == self._entries

    def __hash__(self) -> int:
        return hash(("PartitionSpec", self._entries))

    def __repr__(self) -> str:
        return "P(" + ", ".join(repr(e) for e in self._entries) + ("," if len(self) == 1 else "") + ")"

    def axes_of(self, dim: int) -> tuple:
        """The mesh axis names dimension ``dim`` is split over (empty: not split).
        Example: ``P(("x", "y"), None).axes_of(0)`` -> ``('x', 'y')``"""
        entry = self._entries[dim] if dim < len(self._entries) else None
        if entry is None:
            return ()
        return tuple(entry) if isinstance(entry, tuple) else (entry,)


P = PartitionSpec


class Mesh:
    """Devices laid out in an N-dimensional grid whose axes have names (``jax.sharding.Mesh``):
    ``devices`` an array-like of devices with one dimension per name in ``axis_names``.

    Example::

        mesh = Mesh(np.array(pyree.devices()[:4]).reshape(2, 2), ("data", "model"))
        mesh.shape            # OrderedDict([('data', 2), ('model', 2)])
        mesh.size             # 4
    """

    def __init__(self, devices: Any, axis_names: Union[str, Sequence[str]], *,
                 axis_types: Any = None) -> None:
        if isinstance(axis_names, str):
            axis_names = (axis_names,)
        axis_names = tuple(axis_names)
        grid = np.empty(np.shape(np.asarray(devices, dtype=object)), dtype=object)
        grid[...] = np.asarray(devices, dtype=object)   # (a grid of Devices, never unpacked)
        if grid.ndim != len(axis_names):
            raise ValueError(
                f"Mesh requires the ndim of its first argument (devices) to equal the length of "
                f"its second argument (axis_names), but got devices.ndim == {grid.ndim} and "
                f"len(axis_names) == {len(axis_names)}{where(None)}")
        if len(set(axis_names)) != len(axis_names):
            raise ValueError(f"Mesh axis names must be distinct, got {axis_names}{where(None)}")
        flat = list(grid.flat)
        for device in flat:
            if not isinstance(device, Device):
                raise TypeError(f"Mesh devices must be pyree devices (pyree.devices()), got "
                                f"{device!r}{where(None)}")
        if len(set(flat)) != len(flat):
            raise ValueError(f"a Mesh holds each device once, but got {flat}{where(None)}")
        for device in flat:
            existing = _platform_devices(device.platform)
            if device not in existing:
                raise ValueError(
                    f"Mesh device {device!r} does not exist: there are {len(existing)} "
                    f"{device.platform} devices{_more_devices_hint(device.platform)}"
                    f"{where(None)}")
        self.devices = grid
        self.axis_names = axis_names
        self.axis_types = axis_types

    @property
    def shape(self) -> "collections.OrderedDict[str, int]":
        """Each axis name's size, in order."""
        return collections.OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple:
        return tuple(self.devices.shape)

    @property
    def shape_tuple(self) -> tuple:
        return tuple(zip(self.axis_names, self.devices.shape))

    @property
    def size(self) -> int:
        return int(self.devices.size)

    @property
    def empty(self) -> bool:
        return self.devices.size == 0

    @property
    def device_ids(self) -> np.ndarray:
        return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

    @property
    def local_devices(self) -> list:
        return list(self.devices.flat)

    @property
    def is_multi_process(self) -> bool:
        return False

    def __enter__(self) -> "Mesh":
        return self   # (JAX's ``with mesh:``; nothing reads an ambient mesh in pyree yet)

    def __exit__(self, *exc: Any) -> None:
        return None

    def _key(self) -> tuple:
        return (tuple(self.devices.flat), self.devices.shape, self.axis_names)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Mesh) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        axes = ", ".join(f"{name!r}: {size}" for name, size in self.shape.items())
        return f"Mesh({axes})"


def _more_devices_hint(platform: str) -> str:
    if platform != "cpu":
        return ""
    return (" (set PYREE_NUM_CPU_DEVICES, or pyree.config.update('num_cpu_devices', n) before "
            "the first computation, for more CPU devices)")


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str], *,
              devices: Optional[Sequence[Device]] = None, axis_types: Any = None) -> Mesh:
    """A ``Mesh`` of shape ``axis_shapes`` over the first ``prod(axis_shapes)`` of ``devices``
    (default: the default platform's devices), as ``jax.make_mesh``.

    Example::

        mesh = pyree.make_mesh((2,), ("batch",))      # PYREE_NUM_CPU_DEVICES=2
        mesh.devices                                  # [CpuDevice(id=0) CpuDevice(id=1)]
    """
    axis_shapes = tuple(int(n) for n in axis_shapes)
    if isinstance(axis_names, str):
        axis_names = (axis_names,)
    if len(axis_shapes) != len(axis_names):
        raise ValueError(f"make_mesh got {len(axis_shapes)} axis shapes {axis_shapes} but "
                         f"{len(axis_names)} axis names {tuple(axis_names)}{where(None)}")
    available = list(devices) if devices is not None else _platform_devices()
    needed = math.prod(axis_shapes)
    if needed > len(available):
        platform = available[0].platform if available else "cpu"
        raise ValueError(
            f"make_mesh of shape {axis_shapes} needs {needed} devices, but there are "
            f"{len(available)}{_more_devices_hint(platform) if devices is None else ''}"
            f"{where(None)}")
    grid = np.empty(needed, dtype=object)
    grid[:] = available[:needed]
    return Mesh(grid.reshape(axis_shapes), axis_names, axis_types=axis_types)


class NamedSharding(Sharding):
    """An array split into blocks over a ``Mesh``: dimension ``d`` of the array is cut into
    as many blocks as the mesh axes named by ``spec[d]`` have devices together, and the
    blocks are copied along the mesh axes the spec does not name
    (``jax.sharding.NamedSharding``).

    Example::

        mesh = pyree.make_mesh((2,), ("batch",))      # PYREE_NUM_CPU_DEVICES=2
        sharding = NamedSharding(mesh, P("batch"))
        sharding.shard_shape((8, 3))                  # (4, 3)
        x = pyree.device_put(np.zeros((8, 3)), sharding)
    """

    def __init__(self, mesh: Mesh, spec: Optional[PartitionSpec] = None, *,
                 memory_kind: Optional[str] = None) -> None:
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding expects a Mesh, got {type(mesh).__name__}"
                            f"{where(None)}")
        if spec is None:
            spec = PartitionSpec()
        elif not isinstance(spec, PartitionSpec):
            spec = PartitionSpec(*spec)   # (a tuple of entries, as older JAX allowed)
        used: list[str] = []
        for dim in range(len(spec)):
            for name in spec.axes_of(dim):
                if name not in mesh.axis_names:
                    raise ValueError(f"Resource axis: {name} of {spec!r} is not found in mesh: "
                                     f"{mesh.axis_names}{where(None)}")
                if name in used:
                    raise ValueError(f"a PartitionSpec can split along each mesh axis at most "
                                     f"once, but {spec!r} names {name!r} twice{where(None)}")
                used.append(name)
        self.mesh = mesh
        self.spec = spec

    @property
    def device_set(self) -> set:
        return set(self.mesh.devices.flat)

    @property
    def _device_assignment(self) -> tuple:
        return tuple(self.mesh.devices.flat)

    @property
    def is_fully_replicated(self) -> bool:
        sizes = self.mesh.shape
        return all(sizes[name] == 1 for dim in range(len(self.spec))
                   for name in self.spec.axes_of(dim))

    def _blocks(self, dim: int) -> int:
        """How many blocks dimension ``dim`` is cut into."""
        sizes = self.mesh.shape
        return math.prod(sizes[name] for name in self.spec.axes_of(dim))

    def check_shape(self, global_shape: tuple) -> None:
        """Raise ValueError naming the user's line unless arrays of ``global_shape`` can be
        placed by this sharding (rank at least the spec's length, split dimensions divisible)."""
        if len(global_shape) < len(self.spec):
            raise ValueError(
                f"{self!r} is only valid for values of rank at least {len(self.spec)}, but was "
                f"applied to a value of rank {len(global_shape)} (shape {tuple(global_shape)})"
                f"{where(None)}")
        for dim, size in enumerate(global_shape):
            blocks = self._blocks(dim)
            if size % blocks:
                axes = self.spec.axes_of(dim)
                raise ValueError(
                    f"{self!r} splits dimension {dim} of an array of shape "
                    f"{tuple(global_shape)} over mesh axis {' x '.join(map(repr, axes))} of "
                    f"size {blocks}, but {size} is not divisible by {blocks}{where(None)}")

    def shard_shape(self, global_shape: tuple) -> tuple:
        """The shape of each device's block of an array of ``global_shape``.
        Example: ``NamedSharding(mesh, P("x")).shard_shape((8, 3))`` -> ``(4, 3)`` on 2 devices"""
        self.check_shape(global_shape)
        return tuple(size // self._blocks(dim) for dim, size in enumerate(global_shape))

    def devices_indices_map(self, global_shape: tuple) -> dict:
        """Each device's block of an array of ``global_shape``, as a tuple of slices.
        Example: ``{CpuDevice(id=0): (slice(0, 4), slice(None)), CpuDevice(id=1): ...}``"""
        self.check_shape(global_shape)
        position = {name: a for a, name in enumerate(self.mesh.axis_names)}
        sizes = self.mesh.devices.shape
        indices = {}
        for coords in np.ndindex(*sizes):
            index = []
            for dim, size in enumerate(global_shape):
                axes = self.spec.axes_of(dim)
                if not axes:
                    index.append(slice(None))
                    continue
                block = 0   # (mixed radix over the named axes, the first outermost)
                for name in axes:
                    block = block * sizes[position[name]] + coords[position[name]]
                width = size // self._blocks(dim)
                index.append(slice(block * width, (block + 1) * width))
            indices[self.mesh.devices[coords]] = tuple(index)
        return indices

    def _normalized_spec(self) -> tuple:
        entries = [self.spec.axes_of(d) for d in range(len(self.spec))]
        while entries and not entries[-1]:
            entries.pop()   # (P("x") and P("x", None) place arrays alike)
        return tuple(entries)

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, NamedSharding) and other.mesh == self.mesh
                and other._normalized_spec() == self._normalized_spec())

    def __hash__(self) -> int:
        return hash((self.mesh, self._normalized_spec()))

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r})"


_current_mesh: list = [None]


class set_mesh:
    """Make ``mesh`` the current mesh (``jax.set_mesh``): a ``PartitionSpec`` given to
    ``reshard`` or ``with_sharding_constraint`` names its axes. Called plainly it sets the mesh
    for the rest of the program; as a context manager, for the ``with`` block only.

    Example::

        with pyree.set_mesh(mesh):
            y = reshard(x, P("batch"))        # NamedSharding(mesh, P("batch"))
    """

    def __init__(self, mesh: Optional[Mesh]) -> None:
        if mesh is not None and not isinstance(mesh, Mesh):
            raise TypeError(f"set_mesh takes a Mesh (or None), got {mesh!r}{where(None)}")
        self._previous = _current_mesh[0]
        _current_mesh[0] = mesh

    def __enter__(self) -> Optional[Mesh]:
        return _current_mesh[0]

    def __exit__(self, *exc: Any) -> None:
        _current_mesh[0] = self._previous


def get_mesh() -> Optional[Mesh]:
    """The mesh ``set_mesh`` made current, or None.

    Example::

        pyree.set_mesh(mesh)
        get_mesh() is mesh                    # True
    """
    return _current_mesh[0]


def _named(sharding: Any, what: str) -> Any:
    """``sharding`` as a Sharding: a PartitionSpec names axes of the current mesh."""
    if isinstance(sharding, PartitionSpec):
        if _current_mesh[0] is None:
            raise ValueError(f"{what} got the PartitionSpec {sharding!r} but no mesh is set: "
                             f"give a NamedSharding, or call pyree.set_mesh(mesh) first"
                             f"{where(None)}")
        return NamedSharding(_current_mesh[0], sharding)
    return sharding


def reshard(xs: Any, out_shardings: Any) -> Any:
    """``xs`` (a pytree of arrays) placed by ``out_shardings`` (one sharding or
    PartitionSpec, or a pytree of them matching ``xs``), as ``jax.sharding.reshard``: outside
    ``jit`` a ``device_put``, inside it a sharding constraint (``with_sharding_constraint``).
    A PartitionSpec names axes of the mesh ``set_mesh`` made current.

    Example::

        x = reshard(np.zeros((8, 3), np.float32), NamedSharding(mesh, P("batch")))
    """
    return with_sharding_constraint(xs, out_shardings)


def put_sharded(x: Any, sharding: NamedSharding, weak_type: bool = False) -> ShardedArray:
    """``x`` (a NumPy array of a canonical dtype, or an Array) placed by ``sharding``: each mesh
    device gets its block, and the mesh's first device also the whole (what computations on
    the result use for now). Called by ``pyree.device_put``.

    Example::

        put_sharded(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P("x")))
    """
    shape = tuple(np.shape(x))
    sharding.check_shape(shape)
    first = sharding.mesh.devices.flat[0]
    if isinstance(x, Array):
        weak_type = x.weak_type
        host = x._value()
        whole = x if type(x) is Array and x.device == first else \
            device_put_numpy(host, first, weak_type=weak_type)
    else:
        host = np.asarray(x)
        whole = device_put_numpy(host, first, weak_type=weak_type)
    pieces = []
    for device, index in sharding.devices_indices_map(shape).items():
        block = np.ascontiguousarray(host[index])
        pieces.append(device_put_numpy(block, device, weak_type=weak_type))
    return ShardedArray(whole, pieces, sharding)


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """Ask that ``x`` (a pytree of arrays) be placed by ``shardings`` (one sharding, or a
    pytree of them matching ``x``), as ``jax.lax.with_sharding_constraint``. Outside ``jit``
    this is ``device_put(x, shardings)``. Inside a ``jit`` whose arguments are split over a
    mesh axis (the computation follows them, transpiler/programs/partition.py), or none of whose
    arguments is split but whose constraints all name one mesh of one axis of several
    devices, a NamedSharding on that mesh places the value: cut into blocks along the
    dimension it names (or gathered whole on every device if it names none) from there on.
    Elsewhere (another mesh, outside ``jit``'s tracing) the values pass unchanged; their
    shapes are checked against the shardings in every case, so that a program that would
    not shard fails here too.

    Example::

        @pyree.jit
        def step(x):
            x = lax.with_sharding_constraint(x, NamedSharding(mesh, P("batch")))
            return x * 2
    """
    from pyree import tree_util
    from pyree._api import device_put
    from pyree.transpiler.core.trace import Tracer, get_aval

    is_spec = lambda v: isinstance(v, PartitionSpec)
    shardings = tree_util.tree_map(lambda s: _named(s, "with_sharding_constraint"), shardings,
                                   is_leaf=is_spec)
    leaves = tree_util.tree_leaves(x)
    if not any(isinstance(leaf, Tracer) for leaf in leaves):
        return device_put(x, shardings)
    if isinstance(shardings, Sharding):
        places = [shardings] * len(leaves)
    else:
        is_none = lambda v: v is None   # (None: no constraint on that leaf)
        places = tree_util.tree_leaves(tree_util.tree_broadcast(shardings, x, is_leaf=is_none),
                                       is_leaf=is_none)
    from pyree.transpiler.programs.partition import sharding_constraint_p
    constrained = []
    for leaf, sharding in zip(leaves, places):
        if isinstance(sharding, NamedSharding):
            sharding.check_shape(get_aval(leaf).shape)
            leaf = sharding_constraint_p.bind(leaf, sharding=sharding)
        constrained.append(leaf)
    return tree_util.tree_unflatten(tree_util.tree_structure(x), constrained)


# jit plans programs over meshes through _sharded_jit, which installs itself when imported.
from . import _sharded_jit  # noqa: E402,F401
