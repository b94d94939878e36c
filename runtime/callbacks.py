"""Host callbacks from compiled code.

Two routes from a running program to Python, both taken in program order while the call that
reaches them is being invoked (so a call's callbacks happen before the next call's):

* **Traces** (``print``, ``pyree.debug.print``/``callback``, runtime checks): the program hands
  tensors to the host with ``flow.tensor.trace "<key>"``; the HAL module of every device is
  created with a debug sink that passes them, as NumPy arrays, to the handler registered under
  that key. They return nothing to the program, and a module holding them still runs without
  pyree (``iree-run-module`` prints the traces). The sink is called in the invoking thread
  once the traced values are ready (the compiled code waits for them there).
* **The host module** ``pyree_host`` (``pyree.pure_callback``): an IREE module implemented in
  Python whose functions the compiled module imports and calls, so their results flow back into
  the program. ``call_<n>_<m>_<types>(key: i64, n tensors) -> m tensors`` runs the handler
  registered under ``key``. The compiler passes the import a wait fence (its inputs are
  ready) and a signal fence (its results are), as for any call of the async-external model:
  the import waits, runs the handler, and signals.

A handler's exception (on either route) fails the invocation, so the call that ran into it
raises; ``take_callback_error`` hands the original exception to whoever reports it.
"""
from __future__ import annotations

import hashlib
import re
import sys
import threading
from typing import Any, Callable, Optional, Sequence

import numpy as np

from . import device as _device_module
from .device import iree_runtime, put_on, read_buffer_view

_handlers: dict[str, Callable[[list], None]] = {}
_lock = threading.Lock()
# HalDevice -> the debug sink of the HAL modules created for it. The sink's callback is not
# told which device a traced buffer is on, so each device has its own sink, which reads
# buffers the host cannot map (a GPU's) through that device. (One sink for the process,
# reading through the last GPU opened, made a CPU program's traces fail once a Vulkan device
# had opened in the same process: "buffer is not backed by the Vulkan HAL", the CPU buffers
# being read through the Vulkan device, lavapipe.)
_sinks: dict[Any, Any] = {}


def register(key: str, handler: Callable[[list], None]) -> None:
    """Call ``handler(arrays)`` whenever compiled code traces tensors under ``key``."""
    with _lock:
        _handlers[key] = handler


# -- keys that are stable across processes ---------------------------------------------------------

# key -> the identity of what was registered under it (see register_unique)
_identities: dict[Any, tuple] = {}


def same_identity(a: tuple, b: tuple) -> bool:
    """Whether two identities name the same callback: callables compared by identity (a new
    closure may see other values), other items by equality."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if callable(x) or callable(y):
            if x is not y:
                return False
            continue
        try:
            if not bool(x == y):
                return False
        except Exception:
            return False
    return True


def register_unique(kind: str, parts: Any, identity: tuple, handler: Callable,
                    host: bool = False) -> Any:
    """Register ``handler`` under a key derived from ``parts`` (things that are the same in
    every process: source position, types, names), so that the same program gives the same
    MLIR text and disk-cache entry each time. When the key is already taken by a handler of a
    different ``identity`` (the same source line with another callback: a closure made in a
    loop, say), the next free variant is used, so that each compiled program keeps its own.

    Returns the key: a string for traces, or (``host=True``) an int for the host module."""
    digest = hashlib.sha1(repr(parts).encode()).hexdigest()
    with _lock:
        for variant in range(1 << 16):
            if host:
                key: Any = (int(digest[:13], 16) << 8) | variant  # fits an i64
            else:
                key = f"pyree.{kind}.{digest[:16]}" + (f".{variant}" if variant else "")
            taken = _identities.get(key)
            if taken is None or same_identity(taken, identity):
                _identities[key] = identity
                (_host_handlers if host else _handlers)[key] = handler
                return key
    raise RuntimeError("too many distinct callbacks registered at one source position")


def to_numpy(buffer_view, hal=None) -> np.ndarray:
    """A (ready) buffer view's contents copied into a new NumPy array (``hal``: the HalDevice
    holding it, needed where the host cannot map its memory, as a GPU's)."""
    rt = iree_runtime()
    dtype = np.dtype(rt.HalElementType.map_to_dtype(buffer_view.element_type))
    return read_buffer_view(buffer_view, tuple(buffer_view.shape), dtype, hal)


def _dispatch(key: str, buffer_views: list, hal=None) -> None:
    handler = _handlers.get(key)
    arrays = [to_numpy(bv, hal) for bv in buffer_views]
    if handler is None:
        print(f"[trace {key}]", *arrays, file=sys.stderr)
        return
    try:
        handler(arrays)
    except BaseException as e:
        # Raised from the sink, it fails the invocation: the call that ran into it raises.
        _pending.error = e
        raise


def debug_sink(hal):
    """The ``HalModuleDebugSink`` to give the HAL modules of device ``hal`` (for a module of
    several devices, the first): it hands traced buffers to their handlers, reading them
    through ``hal`` where the host cannot map them (a GPU's). One sink per device, made on
    first use."""
    sink = _sinks.get(hal)
    if sink is None:
        with _lock:
            sink = _sinks.get(hal)
            if sink is None:
                sink = iree_runtime().HalModuleDebugSink(
                    lambda key, buffer_views: _dispatch(key, buffer_views, hal))
                _sinks[hal] = sink
    return sink


# -- the host module -------------------------------------------------------------------------------

HOST_MODULE = "pyree_host"
_IMPORT = re.compile(rb"pyree_host\.(call_(\d+)_(\d+)(?:_[0-9a-f]+)?)")

# key -> handler(list of NumPy arrays) -> list of NumPy arrays (already checked)
_host_handlers: dict[int, Callable[[list], list]] = {}
# (signatures, hal device) -> VmModule: a context needs the module once per device
_host_modules: dict[tuple, Any] = {}


def host_function_name(n_args: int, n_results: int, types: str = "") -> str:
    """The name (without the module) of the host function that takes ``n_args`` tensors (after
    the i64 key) and returns ``n_results`` tensors; ``types`` (hex digits) tells apart the
    declarations of one module whose tensor types differ."""
    return f"call_{n_args}_{n_results}" + (f"_{types}" if types else "")


def _cconv(n_args: int, n_results: int) -> str:
    # IREE's calling convention string: 0, then the argument types, _, the result types. The
    # async-external model appends the wait and signal fences to the arguments.
    return "0I" + "r" * (n_args + 2) + "_" + ("r" * n_results if n_results else "v")


class _HostState:
    """The host module's state in one VM context: the device its results are allocated on."""

    def __init__(self, hal_device) -> None:
        self.hal = hal_device


def _host_call(n_args: int, n_results: int) -> Callable:
    def call(state: _HostState, key: int, *refs):
        rt = iree_runtime()
        signal = rt.HalFence.__iree_vm_cast__(refs[-1])  # (the compiler always makes one)
        try:
            # (VmRef.deref(HalFence) crashes IREE 3.13's bindings; __iree_vm_cast__ does not.)
            wait = rt.HalFence.__iree_vm_cast__(refs[-2])
            if wait is not None:  # null when nothing is to be waited for
                wait.wait()
            arrays = [to_numpy(rt.HalBufferView.__iree_vm_cast__(r), state.hal)
                      for r in refs[:n_args]]
            handler = _host_handlers.get(key)
            if handler is None:
                raise RuntimeError(
                    f"this program calls a host callback (key {key}) that was not registered "
                    "in this process: programs with pure_callback run only under pyree.jit")
            results = handler(arrays)
            views = [put_on(state.hal, r) for r in results]
        except BaseException as e:
            if signal is not None:  # whatever waits on the results fails instead of hanging
                signal.fail(f"{type(e).__name__}: {e}")
            _pending.error = e
            raise
        if signal is not None:
            signal.signal()
        if n_results == 0:
            return None
        if n_results == 1:
            return views[0].ref
        return tuple(v.ref for v in views)
    return call


class _Pending(threading.local):
    error: Optional[BaseException] = None


_pending = _Pending()


def take_callback_error() -> Optional[BaseException]:
    """The exception a host callback raised in this thread's last failed call (once)."""
    error, _pending.error = _pending.error, None
    return error


def host_modules(vmfb: Optional[bytes], hal_device) -> list:
    """The modules a context must register before the compiled module ``vmfb`` (none unless it
    imports host functions): a ``pyree_host`` module exporting the functions it imports."""
    if not vmfb or b"pyree_host." not in vmfb:
        return []
    signatures = tuple(sorted({(name.decode(), int(n), int(m))
                               for name, n, m in _IMPORT.findall(vmfb)}))
    if not signatures:
        return []
    cache_key = (signatures, id(hal_device))
    module = _host_modules.get(cache_key)
    if module is None:
        with _lock:
            module = _host_modules.get(cache_key)
            if module is None:
                rt = iree_runtime()
                iface = rt.PyModuleInterface(HOST_MODULE, lambda _iface: _HostState(hal_device))
                for name, n, m in signatures:
                    iface.export(name, _cconv(n, m), _host_call(n, m))
                module = _host_modules[cache_key] = iface.create()
    return [module]


def _drop_host_modules() -> None:
    _host_modules.clear()


_device_module.exit_hooks.append(_drop_host_modules)
# (The sinks hold their devices: dropped at exit with everything else IREE's, not after.)
_device_module.exit_hooks.append(_sinks.clear)


def check_result(value: Any, shape: Sequence[int], dtype: np.dtype, what: str,
                 canonical_dtype: Callable[[np.dtype], np.dtype]) -> np.ndarray:
    """``value`` (a callback's result) as a NumPy array of ``shape`` and ``dtype``, or a
    TypeError/ValueError naming ``what`` when it is not one."""
    try:
        array = np.asarray(value)
    except Exception as e:
        raise TypeError(f"{what} is not an array: {type(value).__name__} ({e})") from None
    if array.dtype == object:
        raise TypeError(f"{what} is not an array of numbers: {type(value).__name__}")
    if tuple(array.shape) != tuple(shape):
        raise ValueError(f"{what} has shape {tuple(array.shape)}, but result_shape_dtypes "
                         f"declared {tuple(shape)}")
    got = canonical_dtype(array.dtype)
    if got != np.dtype(dtype):
        raise TypeError(f"{what} has dtype {array.dtype}, but result_shape_dtypes declared "
                        f"{np.dtype(dtype)}")
    return np.asarray(array, dtype=dtype, order="C")  # (ascontiguousarray makes 0-d 1-d)
