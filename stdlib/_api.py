"""The top-level functions of ``pyree`` (loaded on first use by ``pyree/__init__``)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

import pyree.numpy as _jnp  # attaches the NumPy-style methods to Array and Tracer
from pyree import tree_util
from pyree.runtime import device as _device
from pyree.runtime.array import Array as _RuntimeArray
from pyree.runtime.array import device_put_numpy as _device_put_numpy
from pyree.runtime.device import Device
from pyree.transpiler.jit import ShapeDtypeStruct, jit, make_ir
from pyree.transpiler.trace import Tracer, canonicalize_array

Array = _jnp.ndarray
live_arrays = _device.live_arrays


def devices(backend: Optional[str] = None) -> list[Device]:
    """The devices of a backend (``"cpu"``, ``"cuda"``, ``"vulkan"``; default: the configured
    platform).

    Example::

        pyree.devices()   # [CpuDevice(id=0)]
    """
    return _device.devices(backend)


local_devices = devices


def device_count(backend: Optional[str] = None) -> int:
    """How many devices a backend has. Example: ``pyree.device_count()`` -> 1"""
    return len(devices(backend))


def default_backend() -> str:
    """The platform computations run on by default. Example: ``pyree.default_backend()`` -> 'cpu'"""
    return _device.default_device().platform


def device_put(x: Any, device: Optional[Device] = None) -> Any:
    """Copy a pytree of arrays/scalars to ``device`` (default: the default device).

    Example::

        x = pyree.device_put(np.arange(4.0))
    """
    target = device or _device.default_device()

    def put(leaf: Any) -> Any:
        if isinstance(leaf, _RuntimeArray):
            if leaf.device == target:
                return leaf
            value = leaf._value()
            return _device_put_numpy(value, target, weak_type=leaf.weak_type)
        if isinstance(leaf, Tracer):
            return leaf
        host = np.asarray(leaf)
        weak = isinstance(leaf, (int, float, complex)) and not isinstance(leaf, bool)
        return _device_put_numpy(canonicalize_array(host), target, weak_type=weak)

    return tree_util.tree_map(put, x)


def device_get(x: Any) -> Any:
    """A pytree of Arrays fetched to NumPy arrays (waits for them).

    Example::

        pyree.device_get({"w": w})   # {'w': numpy.ndarray}
    """
    return tree_util.tree_map(
        lambda leaf: np.asarray(leaf) if isinstance(leaf, _RuntimeArray) else leaf, x)


def block_until_ready(x: Any) -> Any:
    """Wait until every Array in the pytree ``x`` is computed; returns ``x``.

    Example::

        pyree.block_until_ready(f(x))
    """
    for leaf in tree_util.tree_leaves(x):
        if isinstance(leaf, _RuntimeArray):
            leaf.block_until_ready()
    return x


def eval_shape(fun: Any, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes ``fun`` would return, without compiling or running it.

    Example::

        pyree.eval_shape(lambda x: x @ x.T, pyree.ShapeDtypeStruct((3, 4), np.float32))
    """
    return jit(fun).eval_shape(*args, **kwargs)


class disable_jit:
    """Within ``with pyree.disable_jit():`` jitted functions run their Python op by op, as
    ``jax.disable_jit`` (for debugging with print and pdb); ``disable_jit(False)`` turns jit
    back on inside.

    Example::

        with pyree.disable_jit():
            f(x)          # f's body runs eagerly
    """

    def __init__(self, disable: bool = True) -> None:
        self.disable = disable

    def __enter__(self) -> "disable_jit":
        from pyree import config
        self._saved = config.disable_jit
        config.update("disable_jit", self.disable)
        return self

    def __exit__(self, *exc: Any) -> None:
        from pyree import config
        config.update("disable_jit", self._saved)


def make_jaxpr(fun: Any, static_argnums: Any = (), axis_env: Any = None,
               return_shape: bool = False, abstracted_axes: Any = None) -> Any:
    """``make_jaxpr(f)(*args)``: pyree's IR of ``f`` for these arguments, printed as JAX
    prints a jaxpr (``jax.make_jaxpr``); with ``return_shape=True`` also the output's
    pytree of ``ShapeDtypeStruct``. It has ``.jaxpr``, ``.eqns``, ``.consts``, ``.in_avals``
    and ``.out_avals``. ``axis_env`` and ``abstracted_axes`` are not supported.

    Example::

        print(pyree.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0))
        # { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = mul b 2.0:f32[] in (c,) }
    """
    import functools
    if axis_env is not None or abstracted_axes is not None:
        raise NotImplementedError("make_jaxpr: axis_env and abstracted_axes are not supported")
    jitted = jit(fun, static_argnums=static_argnums)

    @functools.wraps(fun)
    def make(*args: Any, **kwargs: Any) -> Any:
        closed = jitted.trace(*args, **kwargs)
        if not return_shape:
            return closed
        return closed, jitted.eval_shape(*args, **kwargs)

    return make


__all__ = ["Array", "ShapeDtypeStruct", "block_until_ready", "default_backend", "device_count",
           "device_get", "device_put", "devices", "eval_shape", "jit", "live_arrays",
           "local_devices", "make_ir", "make_jaxpr", "disable_jit"]
