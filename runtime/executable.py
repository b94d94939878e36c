"""A compiled function loaded on a device and called with Arrays, asynchronously.

Modules are compiled with IREE's async-external execution model: every function takes its
inputs followed by a wait fence (when its inputs are ready) and a signal fence (when its outputs
are). A call returns as soon as the work is queued; the outputs carry the signal fence, and the
next call waits on it on the device, not in Python.
"""
from __future__ import annotations

import os
import re
import threading
import time
import weakref
from typing import Any, Callable, Sequence

from .array import Array
from .aval import ShapedArray, interned
from . import callbacks
from . import device as _device_module
from .device import Device, iree_runtime, use_cuda_context, vm_instance


# Calls timed on each driver before one is chosen, and the calls at which both are timed once
# more (Executable._timed_caller).
TIMED_CALLS = 2
RETIMED_AT = frozenset(4 ** k for k in range(3, 11))

# Calls on a worker-pool driver that may be queued, not yet finished, before a new call waits
# for the oldest (each such call is large: at least device.LARGE_WORK element operations).
MAX_IN_FLIGHT = 16

_loaded: "weakref.WeakSet[Executable]" = weakref.WeakSet()


def _unload_all() -> None:
    """Drop every executable's contexts and modules (at interpreter exit)."""
    for exe in list(_loaded):
        exe._bound.clear()
        exe._default = None
        exe._module = None


_device_module.exit_hooks.append(_unload_all)


class Executable:
    """One function of a ``.vmfb``, callable with Arrays on ``device``.

    ``work`` (about how many element operations the call does) picks the driver: small calls
    run inline on ``local-sync``, large ones on the ``local-task`` worker pool.

    Example::

        exe = Executable(vmfb, "main", default_device(), [ShapedArray((3,), "float32")])
        (y,) = exe([x])
    """

    def __init__(self, vmfb: bytes, function: str, device: Device,
                 out_avals: Sequence[ShapedArray], work: int = 0, module=None,
                 ready_inputs: bool = False, caller_storage: bool = False) -> None:
        self.vmfb = vmfb
        # The function takes a buffer per output and one for intermediates after its inputs
        # (the lowering's caller_storage; see CALLER_STORAGE_PLATFORMS).
        self.caller_storage = caller_storage
        # Inputs are waited for on the host before a call. IREE 3.13 records
        # a module of unknown shapes into a command buffer with its buffers resolved at invoke,
        # and an input that a queued call still has to allocate is refused ("transient buffer
        # has not been committed": an eager matmul on a jitted training step's results).
        self.ready_inputs = ready_inputs
        self.function = function
        self.device = device
        self.out_avals = tuple(interned(a) for a in out_avals)
        self.work = work
        self._module = module  # a VmModule of vmfb already loaded (shared by its functions)
        self._bound: dict[str, Callable] = {}  # driver -> its call
        self._lock = threading.Lock()
        self._default = None  # caller(): the call bound to the driver for `work`, once known
        _loaded.add(self)

    def _bind(self, driver: str) -> tuple[Callable, Callable]:
        """The calls of this function on one driver, made on first use: the general one and
        the one for default arguments (see ``_callers``)."""
        call = self._bound.get(driver)
        if call is None:
            with self._lock:
                call = self._bound.get(driver)
                if call is None:
                    rt = iree_runtime()
                    instance = vm_instance()
                    if self._module is None:
                        self._module = rt.VmModule.copy_buffer(instance, self.vmfb)
                    hal = self.device.hal_device(driver)
                    try:
                        # Host functions the module imports (pure_callback) come before it.
                        context = rt.VmContext(instance, [
                            self.device.hal_module(driver),
                            *callbacks.host_modules(self.vmfb, hal), self._module])
                    except Exception as e:
                        raise _explained(e) from e
                    fn = self._module.lookup_function(self.function)
                    if fn is None:
                        raise RuntimeError(f"compiled module has no function {self.function!r}")
                    storage = None
                    if self.caller_storage:
                        storage = _scratch_size(fn, self._module)
                    call = _callers(context, fn, hal, driver == "local-sync", self.device,
                                    self.out_avals, self.ready_inputs, storage)
                    self._bound[driver] = call
        return call

    def __call__(self, args: Sequence[Array], ints: Sequence[int] = (), work: int | None = None,
                 out_avals: Sequence[ShapedArray] | None = None,
                 wait: bool = False) -> list[Array]:
        """Queue a call; returns the output Arrays at once (they may still be computing).

        ``ints`` are trailing i64 arguments; ``work`` overrides the size estimate that picks the
        driver and ``out_avals`` the output types (both vary per call in shape-polymorphic
        modules); ``wait`` returns only once the call has finished."""
        if work is None:
            if not ints and out_avals is None and not wait:
                return (self._default or self.caller())(args)
            work = self.work
        return self._bind(self.device.driver_for(work))[0](args, ints, out_avals, wait)

    def caller(self) -> Callable[..., list[Array]]:
        """``self`` for the default work size, its driver chosen once: the cheapest way to call
        (jit's fast path holds on to it; a chain of small calls is dominated by such costs).

        Example::

            call = exe.caller()
            (y,) = call([x])
        """
        call = self._default
        if call is None:
            drivers = self.device.drivers_to_time(self.work)
            if drivers is None:
                call = self._default = self._bind(self.device.driver_for(self.work))[1]
            else:
                call = self._default = self._timed_caller(drivers)
        return call

    def _timed_caller(self, drivers: tuple[str, str]) -> Callable[..., list[Array]]:
        """A call that runs the first calls on each of ``drivers`` in turn, each waited for,
        then calls through the faster one (the fastest of TIMED_CALLS each, after one untimed
        call each), timing both again now and then (RETIMED_AT) in case the first timings
        were disturbed. The work estimate does not tell a program of many small dispatches
        from one of a few large ones: top_k of 100,000 floats (k=100) took 0.27 ms inline and
        0.42 ms on the worker pool, jnp.cumsum(jnp.sort(x)) of 100,000 6.5 and 11.8 ms, a
        256x256 matmul 0.38 and 0.52 ms, while top_k of 10M floats took 10.6 ms inline and
        5.7 ms on the pool (2 cores, 2026-11-28)."""
        general = [self._bind(d)[0] for d in drivers]
        plain = [self._bind(d)[1] for d in drivers]
        schedule = [i for _ in range(1 + TIMED_CALLS) for i in (0, 1)]
        best = [float("inf"), float("inf")]
        count = [0]
        chosen: list = []

        def waited(which: int, args: Sequence[Array]) -> tuple[float, list[Array]]:
            begin = time.perf_counter()
            outs = general[which](args, (), None, True)
            return time.perf_counter() - begin, outs

        def timed(args: Sequence[Array]) -> list[Array]:
            n = count[0]
            count[0] = n + 1   # (not atomic: threads calling at once may skip a count)
            if chosen:
                if n not in RETIMED_AT:
                    return chosen[0](args)
                times = [0.0, 0.0]
                for which in (0, 1):
                    times[which], outs = waited(which, args)
                chosen[0] = plain[0 if times[0] <= times[1] else 1]
                return outs
            if n >= len(schedule):
                while not chosen:   # (another thread is finishing the last timed call)
                    time.sleep(0)
                return chosen[0](args)
            which = schedule[n]
            elapsed, outs = waited(which, args)
            if n >= 2:
                best[which] = min(best[which], elapsed)
            if n == len(schedule) - 1:
                chosen.append(plain[0 if best[0] <= best[1] else 1])
            return outs
        return timed


def _callers(context, fn, hal, inline: bool, device: Device,
             default_avals: Sequence[ShapedArray], ready_inputs: bool = False,
             scratch_size: int | None = None) -> tuple[Callable, Callable]:
    """Two functions queueing one call of ``fn`` in ``context`` (see ``Executable.__call__``),
    with what is fixed per driver bound here: ``call(args, ints=(), out_avals=None,
    wait=False)``, and ``call(args)`` for the defaults, which on the inline driver skips every
    branch it can (a chain of small calls is dominated by such costs: 0.35 of 3.7 us here)."""
    invoke = context.invoke
    new = Array.__new__
    no_fence = _NO_FENCE

    def push_arrays(inputs, args: Sequence[Array]):
        """Push the arrays' buffers; returns the fence to wait on."""
        push = inputs.push_ref
        waits = None
        for a in args:
            buffer = a._buffer
            if buffer is None or a._device is not device:
                raise _unusable_argument(a, device)
            push(buffer)
            if a._fence is not None:
                if waits is None:
                    waits = [a._fence]
                else:
                    waits.append(a._fence)
        return no_fence if waits is None else waits[0] if len(waits) == 1 else _Fence.join(waits)

    def finish(inputs, avals: Sequence[ShapedArray], fence, wait: bool) -> list[Array]:
        """Invoke, and wrap the outputs in Arrays ready when ``fence`` signals."""
        outputs = _VariantList(len(avals))
        try:
            invoke(fn, inputs, outputs)
        except Exception as e:
            _reraise(e)
        if fence is not None:
            if wait:
                fence.wait()
                fence = None
            else:
                # Bound the calls queued ahead of the device: each holds its buffers until it
                # runs, and an unthrottled loop of calls grew resident memory by gigabytes.
                in_flight = device.in_flight
                in_flight.append(fence)
                if len(in_flight) > MAX_IN_FLIGHT:
                    _wait_oldest(in_flight)
        # Results keep IREE's untyped reference (a third the cost of casting each to a buffer
        # view); Array.buffer_view() casts when the contents are needed.
        get = outputs.get_as_ref
        results = []
        for i, aval in enumerate(avals):
            out = new(Array)
            out._buffer = get(i)
            out._fence = fence
            out.aval = aval
            out._device = device
            out._npy = None
            results.append(out)
        return results

    size_query = None
    if scratch_size is not None:
        rt = iree_runtime()
        allocate = hal.allocator.allocate_buffer
        memory, usage = rt.MemoryType.DEVICE_LOCAL, rt.BufferUsage.DEFAULT
        size_query = None if isinstance(scratch_size, int) else scratch_size
        default_sizes = _storage_sizes(default_avals, scratch_size if size_query is None else 0)

    def query_scratch_size(args: Sequence[Array], ints: Sequence[int], count: int) -> int:
        """Bytes of intermediates for these arguments, from IREE's size function."""
        query = _VariantList(len(args) + len(ints) + count + 2)
        push_arrays(query, args)
        for i in ints:
            query.push_int(i)
        for _ in range(count):
            query.push_ref(allocate(memory_type=memory, allowed_usage=usage,
                                    allocation_size=16))
        query.push_ref(no_fence)
        query.push_ref(no_fence)
        answer = _VariantList(1)
        invoke(size_query, query, answer)
        return int(answer.get_variant(0))

    def call(args: Sequence[Array], ints: Sequence[int] = (),
             out_avals: Sequence[ShapedArray] | None = None, wait: bool = False) -> list[Array]:
        nonlocal size_query, default_sizes
        storage = ()
        if scratch_size is not None:
            storage = default_sizes
            if out_avals is not None:   # (shapes vary per call)
                scratch = 0 if size_query is None else query_scratch_size(
                    args, ints, len(out_avals) + 1)
                storage = _storage_sizes(out_avals, scratch)
            elif size_query is not None:   # static shapes: asked once
                default_sizes = storage = _storage_sizes(
                    default_avals, query_scratch_size(args, ints, len(default_avals) + 1))
                size_query = None
        inputs = _VariantList(len(args) + len(ints) + len(storage) + 2)  # + wait, signal
        wait_for = push_arrays(inputs, args)
        for i in ints:
            inputs.push_int(i)
        for size in storage:   # each call's own: calls may run at once on the CPU's pool
            inputs.push_ref(allocate(memory_type=memory, allowed_usage=usage,
                                     allocation_size=size))
        if ready_inputs and wait_for is not no_fence:
            wait_for.wait()
            wait_for = no_fence
        inputs.push_ref(wait_for)
        if inline:
            # local-sync has finished by the time invoke returns: nothing to signal (an
            # empty fence is a valid signal fence, and saves a semaphore point per call).
            inputs.push_ref(no_fence)
            fence = None
        else:
            fence = _Fence.create_at(hal.create_semaphore(0), 1)
            inputs.push_ref(fence)
        avals = default_avals if out_avals is None else [interned(a) for a in out_avals]
        return finish(inputs, avals, fence, wait)

    if not inline and device.platform == "cuda":
        ordinal = device.id

        def call_in_context(args, ints=(), out_avals=None, wait=False):
            use_cuda_context(ordinal)   # (each thread that calls needs the context current)
            return call(args, ints, out_avals, wait)
        return call_in_context, call_in_context
    if not inline or scratch_size is not None:
        return call, call
    if len(default_avals) != 1:
        return call, lambda args: call(args)
    aval = default_avals[0]

    def call_inline(args: Sequence[Array]) -> list[Array]:
        # call(args) on the inline driver for one output, written out: each step saved here
        # is saved on every small call.
        inputs = _VariantList(len(args) + 2)
        push = inputs.push_ref
        waits = None
        for a in args:
            buffer = a._buffer
            if buffer is None or a._device is not device:
                raise _unusable_argument(a, device)
            push(buffer)
            if a._fence is not None:
                if waits is None:
                    waits = [a._fence]
                else:
                    waits.append(a._fence)
        push(no_fence if waits is None else waits[0] if len(waits) == 1 else _Fence.join(waits))
        push(no_fence)
        outputs = _VariantList(1)
        try:
            invoke(fn, inputs, outputs)
        except Exception as e:
            _reraise(e)
        out = new(Array)
        out._buffer = outputs.get_as_ref(0)
        out._fence = None
        out.aval = aval
        out._device = device
        out._npy = None
        return [out]

    return call, call_inline


class MultiDeviceExecutable:
    """One function of a ``.vmfb`` compiled for several devices as one IREE multi-device
    program (``device.multi_device_compile_flags``): each argument is declared on one of
    ``devices`` (``in_devices[i]`` its position there) and each result likewise
    (``out_devices``). IREE runs each part of the program on the device its operands live on
    and moves data between devices where the program says so (``flow.tensor.transfer``).

    Calls are queued on the devices' worker-pool driver (``local-task`` on the CPU), so the
    devices compute at the same time; one fence signals when every result is ready.

    Example::

        exe = MultiDeviceExecutable(vmfb, "main", devs, [0, 1], out_avals, [0, 1])
        y0, y1 = exe([x0_on_dev0, x1_on_dev1])
    """

    def __init__(self, vmfb: bytes, function: str, devices: Sequence[Device],
                 in_devices: Sequence[int], out_avals: Sequence[ShapedArray],
                 out_devices: Sequence[int]) -> None:
        self.vmfb = vmfb
        self.function = function
        self.devices = tuple(devices)
        self.in_devices = tuple(self.devices[i] for i in in_devices)
        self.out_avals = tuple(interned(a) for a in out_avals)
        self.out_devices = tuple(self.devices[i] for i in out_devices)
        self._call: Callable | None = None
        self._lock = threading.Lock()
        _loaded_multi.add(self)

    def _bind(self) -> Callable:
        with self._lock:
            if self._call is not None:
                return self._call
            rt = iree_runtime()
            instance = vm_instance()
            module = rt.VmModule.copy_buffer(instance, self.vmfb)
            driver = self.devices[0].driver_for(LARGE_WORK_FOR_POOL)
            first = self.devices[0].hal_device(driver)
            try:
                context = rt.VmContext(instance, [
                    _device_module.multi_device_hal_module(self.devices, driver),
                    *callbacks.host_modules(self.vmfb, first), module])
            except Exception as e:
                raise _explained(e) from e
            fn = module.lookup_function(self.function)
            if fn is None:
                raise RuntimeError(f"compiled module has no function {self.function!r}")
            invoke = context.invoke
            in_devices, out_avals, out_devices = self.in_devices, self.out_avals, self.out_devices
            in_flight = self.devices[0].in_flight

            def call(args: Sequence[Array]) -> list[Array]:
                inputs = _VariantList(len(args) + 2)
                waits = []
                for a, device in zip(args, in_devices):
                    if a._buffer is None or a._device is not device:
                        raise _unusable_argument(a, device)
                    inputs.push_ref(a._buffer)
                    if a._fence is not None:
                        waits.append(a._fence)
                inputs.push_ref(_NO_FENCE if not waits else waits[0] if len(waits) == 1
                                else _Fence.join(waits))
                fence = _Fence.create_at(first.create_semaphore(0), 1)
                inputs.push_ref(fence)
                outputs = _VariantList(len(out_avals))
                try:
                    invoke(fn, inputs, outputs)
                except Exception as e:
                    _reraise(e)
                in_flight.append(fence)
                if len(in_flight) > MAX_IN_FLIGHT:
                    _wait_oldest(in_flight)
                return [Array(outputs.get_as_ref(i), aval, device, fence)
                        for i, (aval, device) in enumerate(zip(out_avals, out_devices))]

            self._module, self._context = module, context
            self._call = call
            return call

    def __call__(self, args: Sequence[Array]) -> list[Array]:
        """Queue a call; returns the results at once (they may still be computing), each an
        Array on its device."""
        if len(args) != len(self.in_devices):
            raise TypeError(f"this program takes {len(self.in_devices)} arrays, got {len(args)}")
        return (self._call or self._bind())(args)


# A work size that always picks a device's worker-pool driver: a multi-device program runs
# on the pool so that its devices compute concurrently (inline, they would take turns).
LARGE_WORK_FOR_POOL = 1 << 62

_loaded_multi: "weakref.WeakSet[MultiDeviceExecutable]" = weakref.WeakSet()


def _unload_multi() -> None:
    for exe in list(_loaded_multi):
        exe._call = None
        exe._module = exe._context = None


_device_module.exit_hooks.append(_unload_multi)


def _storage_sizes(avals: Sequence[ShapedArray], scratch: int) -> list[int]:
    """Bytes of the buffers a caller_storage call passes: one per output, then the scratch
    (at least 16 each: CUDA refuses an allocation of no bytes)."""
    return [max(16, a.size * a.dtype.itemsize) for a in avals] + [max(16, scratch)]


# Platforms whose jitted functions without control flow compute into buffers pyree allocates
# (transpiler/backend/lower.py, _into_caller_storage): on CUDA the function's own queue allocations
# made each call wait for the GPU. Tests add "cpu", which runs the same path;
# PYREE_CALLER_STORAGE_PLATFORMS (comma-separated) sets them for experiments.
CALLER_STORAGE_PLATFORMS = set(
    p for p in os.environ.get("PYREE_CALLER_STORAGE_PLATFORMS", "cuda").split(",") if p)


def _scratch_size(fn, module) -> int | Any:
    """Bytes of the intermediates buffer a caller_storage function needs: the constant IREE
    records in its reflection (none: no intermediates), else the function IREE generated to
    compute it, returned to be called with the function's arguments."""
    reflection = fn.reflection
    size = reflection.get("iree.abi.transients.size.constant")
    if size is not None:
        return int(size)
    query = reflection.get("iree.abi.transients.size")
    return 0 if query is None else module.lookup_function(query)


def _reraise(error: Exception) -> None:
    explained = _explained(error)
    if explained is error:
        raise error
    raise explained from error


def _load_types() -> None:
    global _VariantList, _Fence, _NO_FENCE
    rt = iree_runtime()
    _VariantList, _Fence = rt.VmVariantList, rt.HalFence
    _NO_FENCE = rt.HalFence(0)  # holds no semaphore: never waits, never changes, so shared


_VariantList = _Fence = _NO_FENCE = None
_load_types()


def _wait_oldest(in_flight) -> None:
    try:
        oldest = in_flight.popleft()
    except IndexError:  # another thread took it
        return
    try:
        oldest.wait()
    except Exception:  # that call failed: whoever reads its results gets the error
        pass


def _unusable_argument(array: Array, device: Device) -> Exception:
    if array._buffer is None:
        return RuntimeError("an argument Array has been deleted")
    return ValueError(
        f"an argument Array is on {array._device} but this function runs on {device}; pyree "
        f"does not move arrays between devices implicitly: copy it with "
        f"pyree.device_put(x, {device!r}) first")


def _explained(error: Exception) -> Exception:
    """``error`` from IREE's runtime, or a clearer one for the failures known to come from
    IREE itself rather than from the program's inputs."""
    original = callbacks.take_callback_error()
    if original is not None:  # a host callback raised: that exception, not IREE's report of it
        return original
    # The CPU runtime refuses such a dispatch when called, the CUDA runtime when it loads the
    # module (its limit is 16).
    match = (re.search(r"binding count (\d+) > (\d+)", str(error))
             or re.search(r"binding_flags count (\d+) exceeds maximum of (\d+)", str(error)))
    if match:
        return RuntimeError(
            f"IREE fused this program into a dispatch that uses {match[1]} buffers, more than "
            f"its runtime's limit of {match[2]} (a limitation of IREE 3.13). Passing fewer "
            f"separate arrays (stacking them into one) or splitting the function avoids it.")
    return _device_module.device_lost_error(error)
