"""``Array``: an immutable array living in a device buffer, possibly still being computed.

Arithmetic, indexing and the other NumPy-style methods are attached by ``pyree.numpy`` (they
are programs, and the runtime knows nothing of programs); this class holds the buffer, the
fence that says when its contents are ready, and the conversions to host values.
"""
from __future__ import annotations

import linecache
import re
import sys
from typing import Any, Optional

import numpy as np

from .aval import ShapedArray, interned
from .device import Device, default_device, raise_if_device_lost


class Sharding:
    """Where the pieces of an array live (``jax.sharding.Sharding``): the base of
    ``SingleDeviceSharding``, ``PmapSharding`` and ``pyree.sharding.NamedSharding``. Subclasses
    define ``device_set`` and ``devices_indices_map``; the rest follows from them.

    Example::

        isinstance(jnp.ones(3).sharding, pyree.sharding.Sharding)   # True
    """

    is_fully_addressable = True   # (one process sees every device)
    memory_kind = "device"

    @property
    def device_set(self) -> set:
        raise NotImplementedError(f"{type(self).__name__} does not define device_set")

    @property
    def num_devices(self) -> int:
        """How many devices hold a piece. Example: ``jnp.ones(3).sharding.num_devices`` -> 1"""
        return len(self.device_set)

    @property
    def addressable_devices(self) -> set:
        return self.device_set

    def devices_indices_map(self, global_shape: tuple) -> dict:
        raise NotImplementedError(f"{type(self).__name__} does not define devices_indices_map")

    def addressable_devices_indices_map(self, global_shape: tuple) -> dict:
        return self.devices_indices_map(global_shape)


class SingleDeviceSharding(Sharding):
    """An array placed whole on one device (``jax.sharding.SingleDeviceSharding``).

    Example::

        jnp.ones(3).sharding.device_set   # {CpuDevice(id=0)}
    """

    def __init__(self, device: Device, *, memory_kind: Optional[str] = None) -> None:
        self._device = device

    @property
    def device_set(self) -> set:
        return {self._device}

    @property
    def _device_assignment(self) -> tuple:
        return (self._device,)

    is_fully_replicated = True

    def devices_indices_map(self, global_shape: tuple) -> dict:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def shard_shape(self, global_shape: tuple) -> tuple:
        return tuple(global_shape)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, SingleDeviceSharding) and other._device == self._device

    def __hash__(self) -> int:
        return hash(self._device)

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r})"


class PmapSharding(Sharding):
    """An array split along one axis over several devices, one piece per device, as ``pmap``
    leaves its results (``jax.sharding.PmapSharding``). Each piece lacks the split axis.

    Example::

        y = pyree.pmap(lambda x: x * 2)(np.arange(2.0))
        y.sharding.devices            # (CpuDevice(id=0), CpuDevice(id=1))
        y.sharding.sharded_axis       # 0
    """

    def __init__(self, devices: tuple, sharded_axis: int) -> None:
        self.devices = tuple(devices)
        self.sharded_axis = sharded_axis

    @property
    def device_set(self) -> set:
        return set(self.devices)

    @property
    def _device_assignment(self) -> tuple:
        return self.devices

    @property
    def is_fully_replicated(self) -> bool:
        return len(self.devices) == 1

    def devices_indices_map(self, global_shape: tuple) -> dict:
        """Each device's index into an array of ``global_shape``: an int on the split axis."""
        return {d: self._index(i, len(global_shape)) for i, d in enumerate(self.devices)}

    def _index(self, position: int, ndim: int) -> tuple:
        return tuple(position if a == self.sharded_axis else slice(None) for a in range(ndim))

    def shard_shape(self, global_shape: tuple) -> tuple:
        return tuple(n for a, n in enumerate(global_shape) if a != self.sharded_axis)

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, PmapSharding) and other.devices == self.devices
                and other.sharded_axis == self.sharded_axis)

    def __hash__(self) -> int:
        return hash((self.devices, self.sharded_axis))

    def __repr__(self) -> str:
        return f"PmapSharding(devices={list(self.devices)}, sharded_axis={self.sharded_axis})"


class Shard:
    """One piece of an array: its device, the index it covers, its data, and which copy it is
    (``replica_id``: 0 for the first device holding that index, 1 for the next...)."""

    __slots__ = ("device", "index", "data", "replica_id")

    def __init__(self, device: Device, index: tuple, data: "Array", replica_id: int = 0) -> None:
        self.device, self.index, self.data, self.replica_id = device, index, data, replica_id

    def __repr__(self) -> str:
        return f"Shard(device={self.device!r}, index={self.index}, data={self.data.shape})"


class Array:
    """An immutable N-dimensional array on a device (JAX's ``jax.Array``).

    Results of pyree computations are Arrays; the call that made one may still be running.
    Shape, dtype and size are known at once; reading the values (``np.asarray``, ``print``,
    ``float()``) waits for them::

        x = pyree.numpy.arange(3.0)
        x.shape, x.dtype          # ((3,), dtype('float32')), without waiting
        x.block_until_ready()
        x.at[0].set(5.0)          # Array([5., 1., 2.], dtype=float32); x is unchanged
    """

    __slots__ = ("_buffer", "_fence", "aval", "_device", "_npy", "__weakref__")
    __array_priority__ = 100

    def __init__(self, buffer, aval: ShapedArray, device: Device, fence=None) -> None:
        self._buffer = buffer
        self._fence = fence
        self.aval = interned(aval)  # so that jit's signature lookups compare by identity
        self._device = device
        self._npy = None

    # -- what is known without waiting ------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def weak_type(self) -> bool:
        return self.aval.weak_type

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def nbytes(self) -> int:
        return self.aval.size * self.aval.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.aval.dtype.itemsize

    @property
    def device(self) -> Device:
        return self._device

    def devices(self) -> set:
        return {self._device}

    @property
    def sharding(self) -> "SingleDeviceSharding":
        """Where the array lives: all of it on one device (``Array.sharding``)."""
        return SingleDeviceSharding(self._device)

    @property
    def addressable_shards(self) -> list:
        """The pieces of the array on this process's devices: here one, the whole array."""
        return [Shard(self._device, tuple(slice(None) for _ in self.aval.shape), self)]

    @property
    def is_fully_replicated(self) -> bool:
        """Whether every device holding a piece holds all of the array."""
        return self.sharding.is_fully_replicated

    @property
    def is_fully_addressable(self) -> bool:
        return True   # (one process sees every device)

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d Array)")
        return self.aval.shape[0]

    # -- waiting and reading ----------------------------------------------------------------
    def _wait(self) -> None:
        fence = self._fence
        if fence is not None:
            try:
                fence.wait()
            except RuntimeError as e:
                raise_if_device_lost(e)
                raise
            self._fence = None

    def block_until_ready(self) -> "Array":
        """Wait until the value is computed; returns ``self``."""
        self._check_alive()
        self._wait()
        return self

    def is_ready(self) -> bool:
        """True when the value is computed (never waits)."""
        fence = self._fence
        if fence is None:
            return True
        try:
            if not fence.wait(timeout=0):
                return False
        except Exception:  # the computation failed: reading the value raises the error
            return True
        self._fence = None
        return True

    def buffer_view(self):
        """The IREE ``HalBufferView`` holding the contents (which may still be computing)."""
        self._check_alive()
        buffer = self._buffer
        if type(buffer) is not _buffer_view_type():
            buffer = self._buffer = buffer.deref(_buffer_view_type())
        return buffer

    def _check_alive(self) -> None:
        if self._buffer is None:
            raise RuntimeError("Array has been deleted")

    def _value(self) -> np.ndarray:
        """The contents as a read-only NumPy array (fetched once, then kept)."""
        npy = self._npy
        if npy is None:
            self._check_alive()
            self._wait()
            npy = self._device.fetch(self.buffer_view(), self.aval.shape, self.aval.dtype)
            npy.flags.writeable = False
            self._npy = npy
        return npy

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        value = self._value()
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        return value.copy() if copy else value

    def tolist(self) -> Any:
        return self._value().tolist()

    def item(self, *args) -> Any:
        return self._value().item(*args)

    def _scalar(self, kind: str):
        if self.aval.shape != ():
            raise TypeError(f"Only scalar arrays can be converted to Python scalars; this one "
                            f"has shape {self.aval.shape}. Use {kind}(x[i]) or x.item(i)")
        return self._value()[()]

    def __float__(self) -> float:
        return float(self._scalar("float"))

    def __int__(self) -> int:
        return int(self._scalar("int"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex"))

    def __bool__(self) -> bool:
        if self.aval.size != 1:
            raise ValueError(f"The truth value of an array with more than one element is "
                             f"ambiguous (shape {self.aval.shape}). Use a.any() or a.all()")
        return bool(self._value().reshape(())[()])

    def __index__(self) -> int:
        if self.aval.shape != () or self.aval.dtype.kind not in "iub":
            raise TypeError(f"only integer scalar arrays can be converted to a scalar index "
                            f"(this one is {self.aval.str_short()})")
        return int(self._value()[()])

    def __format__(self, spec: str) -> str:
        if self.aval.shape == ():
            return format(self._value()[()], spec)
        return format(str(self), spec)

    def __repr__(self) -> str:
        if self._buffer is None:
            return f"Array(<deleted>, shape={self.shape}, dtype={self.dtype})"
        value = self._value()
        prefix = "Array("
        text = np.array2string(value, separator=", ", prefix=prefix,
                               threshold=1000) if value.size else f"[], shape={value.shape}"
        weak = ", weak_type=True" if self.aval.weak_type else ""
        return f"{prefix}{text}, dtype={self.dtype.name}{weak})"

    def __str__(self) -> str:
        return str(self._value())

    # -- immutability ------------------------------------------------------------------------
    def __setitem__(self, index, value) -> None:
        raise TypeError(immutable_update_message(index, value, sys._getframe(1)))

    __hash__ = None  # arrays are mutable-looking values; JAX's are unhashable too

    def __reduce__(self):
        return (_from_numpy_for_pickle, (self._value(), self.aval.weak_type))

    # -- lifetime ---------------------------------------------------------------------------
    def delete(self) -> None:
        """Free the device buffer now; the Array is unusable afterwards."""
        self._release()

    def is_deleted(self) -> bool:
        return self._buffer is None

    def _release(self) -> None:
        if self._buffer is not None:
            self._wait()
            self._buffer = None


class ShardedArray(Array):
    """An array in pieces over several devices (``addressable_shards``, ``sharding``), plus
    the whole array on the first device, so that a ShardedArray is also an ordinary Array
    (reading it, NumPy, other computations use the whole).

    ``pmap`` makes them (``PmapSharding``: each piece computed on its device, the whole stacked
    by a second multi-device program queued behind the first; a following ``pmap`` over the
    same devices takes the pieces where they are), and so does
    ``pyree.device_put(x, NamedSharding(mesh, spec))`` (each piece a block of ``x``).

    Example::

        y = pyree.pmap(lambda x: x * 2)(np.arange(2.0))
        [s.device for s in y.addressable_shards]     # [CpuDevice(id=0), CpuDevice(id=1)]
        np.asarray(y)                                # array([0., 2.], dtype=float32)
    """

    __slots__ = ("_pieces", "_sharding")

    def __init__(self, whole: Array, pieces: list, sharding: Sharding) -> None:
        """``pieces``: one Array per device, in the order of ``sharding.devices_indices_map``."""
        super().__init__(whole._buffer, whole.aval, whole._device, whole._fence)
        self._pieces = list(pieces)
        self._sharding = sharding

    def devices(self) -> set:
        return set(self._sharding.device_set)

    @property
    def sharding(self) -> Sharding:
        return self._sharding

    @property
    def addressable_shards(self) -> list:
        indices = self._sharding.devices_indices_map(self.aval.shape)
        shards, copies = [], {}
        for piece in self._pieces:
            index = indices[piece._device]
            key = repr(index)   # (slices are unhashable before Python 3.12)
            copies[key] = copies.get(key, -1) + 1
            shards.append(Shard(piece._device, index, piece, copies[key]))
        return shards

    def _release(self) -> None:
        super()._release()
        for piece in self._pieces:
            piece._release()


def _buffer_view_type():
    from .device import iree_runtime
    return iree_runtime().HalBufferView


def _from_numpy_for_pickle(value: np.ndarray, weak_type: bool) -> Array:
    return device_put_numpy(value, weak_type=weak_type)


def device_put_numpy(value: np.ndarray, device: Optional[Device] = None,
                     weak_type: bool = False) -> Array:
    """Copy a NumPy array (already of a canonical dtype) to a device as an Array."""
    device = device or default_device()
    value = np.asarray(value)
    aval = interned(ShapedArray(value.shape, value.dtype, weak_type))
    return Array(device.put(value), aval, device)


_AUGMENTED = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "**": "power"}
_ASSIGNMENT = re.compile(r"(?P<target>[\w.]+)\[(?P<index>.+)\]\s*(?P<op>\*\*|[-+*/])?="
                         r"(?!=)\s*(?P<value>.+?)\s*$")


def immutable_update_message(index: Any, value: Any, frame) -> str:
    """The TypeError text for ``x[index] = value``, showing the functional update to write
    instead, in the user's own words when their source line can be read."""
    code = frame.f_code
    line = linecache.getline(code.co_filename, frame.f_lineno)
    match = _ASSIGNMENT.search(line)
    if match:
        target, idx = match.group("target"), match.group("index").strip()
        method = _AUGMENTED.get(match.group("op") or "", "set")
        rhs = match.group("value")
        suggestion = f"{target} = {target}.at[{idx}].{method}({rhs})"
    else:
        suggestion = f"x = x.at[{_index_text(index)}].set({_value_text(value)})"
    return ("pyree arrays are immutable: in-place assignment like x[idx] = y is not supported. "
            f"Write\n    {suggestion}\ninstead: a new array, which jit updates in place when the "
            f"old one is not used afterwards.")


def _index_text(index: Any) -> str:
    if isinstance(index, tuple):
        return ", ".join(_index_text(i) for i in index) if index else "()"
    if isinstance(index, slice):
        parts = ["" if p is None else str(p) for p in (index.start, index.stop, index.step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if index.step is not None else "")
    if index is Ellipsis:
        return "..."
    if isinstance(index, (int, type(None))):
        return str(index)
    return "idx"


def _value_text(value: Any) -> str:
    return repr(value) if isinstance(value, (bool, int, float, complex)) else "y"
