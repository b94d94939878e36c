"""A compiled function loaded on a device and called with Arrays, asynchronously.

Modules are compiled with IREE's async-external execution model: every function takes its
inputs followed by a wait fence (when its inputs are ready) and a signal fence (when its outputs
are). A call returns as soon as the work is queued; the outputs carry the signal fence, and the
next call waits on it on the device, not in Python.
"""
from __future__ import annotations

import re
import threading
import weakref
from typing import Sequence

from .array import Array
from .aval import ShapedArray
from . import device as _device_module
from .device import Device, iree_runtime, vm_instance


_loaded: "weakref.WeakSet[Executable]" = weakref.WeakSet()


def _unload_all() -> None:
    """Drop every executable's contexts and modules (at interpreter exit)."""
    for exe in list(_loaded):
        exe._bound.clear()
        exe._default = None
        exe._module = None
    _inline.semaphores.clear()


_device_module.exit_hooks.append(_unload_all)


class _InlineTimeline(threading.local):
    """Per thread and device: one semaphore whose value counts that thread's inline calls.

    An inline (local-sync) call has finished when invoke returns, so a thread's calls signal
    in order and can share a timeline instead of creating a semaphore each (0.4 µs)."""

    def __init__(self) -> None:
        self.semaphores: dict = {}


_inline = _InlineTimeline()


class Executable:
    """One function of a ``.vmfb``, callable with Arrays on ``device``.

    ``work`` (about how many element operations the call does) picks the driver: small calls
    run inline on ``local-sync``, large ones on the ``local-task`` worker pool.

    Example::

        exe = Executable(vmfb, "main", default_device(), [ShapedArray((3,), "float32")])
        (y,) = exe([x])
    """

    def __init__(self, vmfb: bytes, function: str, device: Device,
                 out_avals: Sequence[ShapedArray], work: int = 0, module=None) -> None:
        self.vmfb = vmfb
        self.function = function
        self.device = device
        self.out_avals = tuple(out_avals)
        self.work = work
        self._module = module  # a VmModule of vmfb already loaded (shared by its functions)
        self._bound: dict[str, tuple] = {}
        self._lock = threading.Lock()
        self._default = None  # the binding for `work`, once known
        _loaded.add(self)

    def _bind(self, driver: str) -> tuple:
        """(context, function, hal device, inline?) for one driver, created on first use."""
        bound = self._bound.get(driver)
        if bound is None:
            with self._lock:
                bound = self._bound.get(driver)
                if bound is None:
                    rt = iree_runtime()
                    instance = vm_instance()
                    if self._module is None:
                        self._module = rt.VmModule.copy_buffer(instance, self.vmfb)
                    hal = self.device.hal_device(driver)
                    try:
                        context = rt.VmContext(instance,
                                               [self.device.hal_module(driver), self._module])
                    except Exception as e:
                        raise _explained(e) from e
                    fn = self._module.lookup_function(self.function)
                    if fn is None:
                        raise RuntimeError(f"compiled module has no function {self.function!r}")
                    bound = (context, fn, hal, driver == "local-sync")
                    self._bound[driver] = bound
        return bound

    def __call__(self, args: Sequence[Array], ints: Sequence[int] = (), work: int | None = None,
                 out_avals: Sequence[ShapedArray] | None = None,
                 wait: bool = False) -> list[Array]:
        """Queue a call; returns the output Arrays at once (they may still be computing).

        ``ints`` are trailing i64 arguments; ``work`` overrides the size estimate that picks the
        driver and ``out_avals`` the output types (both vary per call in shape-polymorphic
        modules); ``wait`` returns only once the call has finished."""
        if work is None:
            bound = self._default
            if bound is None:
                bound = self._default = self._bind(self.device.driver_for(self.work))
        else:
            bound = self._bind(self.device.driver_for(work))
        context, fn, hal, inline = bound
        inputs = _VariantList(len(args) + len(ints) + 2)
        waits = None
        for a in args:
            buffer = a._buffer
            if buffer is None:
                raise RuntimeError("an argument Array has been deleted")
            inputs.push_ref(buffer)
            fence = a._fence
            if fence is not None:
                if waits is None:
                    waits = [fence]
                else:
                    waits.append(fence)
        for i in ints:
            inputs.push_int(i)
        if waits is None:
            inputs.push_ref(_Fence(0))
        else:
            inputs.push_ref(waits[0] if len(waits) == 1 else _Fence.join(waits))
        if inline:
            timeline = _inline.semaphores.get(hal)
            if timeline is None:
                timeline = _inline.semaphores[hal] = [hal.create_semaphore(0), 0]
            timeline[1] += 1
            inputs.push_ref(_Fence.create_at(timeline[0], timeline[1]))
            fence = None  # local-sync has finished by the time invoke returns
        else:
            fence = _Fence.create_at(hal.create_semaphore(0), 1)
            inputs.push_ref(fence)
        avals = self.out_avals if out_avals is None else out_avals
        outputs = _VariantList(len(avals))
        try:
            context.invoke(fn, inputs, outputs)
        except Exception as e:
            if inline:  # the timeline may be left failed or behind: start a fresh one
                _inline.semaphores.pop(hal, None)
            explained = _explained(e)
            if explained is e:
                raise
            raise explained from e
        if wait and fence is not None:
            fence.wait()
            fence = None
        device = self.device
        new = Array.__new__
        results = []
        for i, aval in enumerate(avals):
            out = new(Array)
            out._buffer = outputs.get_as_object(i, _BufferView)
            out._fence = fence
            out.aval = aval
            out._device = device
            out._npy = None
            results.append(out)
        return results


def _load_types() -> None:
    global _VariantList, _Fence, _BufferView
    rt = iree_runtime()
    _VariantList, _Fence, _BufferView = rt.VmVariantList, rt.HalFence, rt.HalBufferView


_VariantList = _Fence = _BufferView = None
_load_types()


def _explained(error: Exception) -> Exception:
    """``error`` from IREE's runtime, or a clearer one for the failures known to come from
    IREE itself rather than from the program's inputs."""
    match = re.search(r"binding count (\d+) > (\d+)", str(error))
    if match:
        return RuntimeError(
            f"IREE fused this program into a dispatch that uses {match[1]} buffers, more than "
            f"its runtime's limit of {match[2]} (a limitation of IREE 3.13). Passing fewer "
            f"separate arrays (stacking them into one) or splitting the function avoids it.")
    return error
