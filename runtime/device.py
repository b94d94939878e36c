"""Devices: IREE HAL devices behind pyree's ``Device`` objects, and host <-> device copies.

A CPU ``Device`` owns two IREE drivers over the same host memory: ``local-sync`` runs a call
inline in the calling thread (~4 µs a call, one core) and ``local-task`` runs it on a pool of
worker threads (all cores, but ~50 µs of thread wake-up when the caller waits). Executables
choose per call by the amount of work; buffers from either driver are usable by both.
"""
from __future__ import annotations

import atexit
import collections
import gc
import os
import sys
import threading
from typing import Any, Sequence

import numpy as np

from pyree import config
from pyree.dtypes import bfloat16

_rt = None  # iree.runtime, imported on first use


def iree_runtime():
    """The ``iree.runtime`` module (imported lazily: it is not needed to trace or lower)."""
    global _rt
    if _rt is None:
        import iree.runtime as rt
        # IREE's default task topology pins one worker per physical core. On shared or virtual
        # machines a pinned worker cannot move off a busy core: SELU on 1M floats ran at
        # one-thread speed (0.40 ms instead of 0.25 ms) in about one process in four here.
        # Unpinned workers, one per CPU this process may use, were fast every time.
        workers = os.environ.get("PYREE_CPU_WORKERS") or str(_usable_cpus())
        try:
            rt.flags.parse_flags(f"--task_topology_group_count={int(workers)}")
        except ValueError:
            pass  # flags already fixed by a device created before pyree was imported
        # The user's runtime flags, before any device exists (IREE's drivers read their
        # flags when they create a device).
        flags = str(config.runtime_flags or "").split()
        if flags:
            try:
                rt.flags.parse_flags(*flags)
            except Exception as e:
                raise ValueError(f"IREE's runtime rejected pyree.config.runtime_flags "
                                 f"{' '.join(flags)!r}: {e}") from None
        _rt = rt
    return _rt


def _usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


_instance = None
_instance_lock = threading.Lock()


def vm_instance():
    """The process's one ``VmInstance``."""
    global _instance
    if _instance is None:
        with _instance_lock:
            if _instance is None:
                _instance = iree_runtime().VmInstance()
    return _instance


def hal_element_type(dtype: np.dtype):
    """IREE's element type for a NumPy dtype."""
    rt = iree_runtime()
    table = _ELEMENT_TYPES.get("table")
    if table is None:
        E = rt.HalElementType
        table = {
            np.dtype(np.bool_): E.BOOL_8, np.dtype(np.int8): E.SINT_8,
            np.dtype(np.int16): E.SINT_16, np.dtype(np.int32): E.SINT_32,
            np.dtype(np.int64): E.SINT_64, np.dtype(np.uint8): E.UINT_8,
            np.dtype(np.uint16): E.UINT_16, np.dtype(np.uint32): E.UINT_32,
            np.dtype(np.uint64): E.UINT_64, np.dtype(np.float16): E.FLOAT_16,
            np.dtype(np.float32): E.FLOAT_32, np.dtype(np.float64): E.FLOAT_64,
            np.dtype(bfloat16): E.BFLOAT_16, np.dtype(np.complex64): E.COMPLEX_64,
            np.dtype(np.complex128): E.COMPLEX_128,
        }
        _ELEMENT_TYPES["table"] = table
    try:
        return table[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"dtype {np.dtype(dtype)} is not supported on pyree devices") from None


_ELEMENT_TYPES: dict[str, Any] = {}


def put_on(hal, value: np.ndarray):
    """Copy a host array into a new buffer view of the IREE ``HalDevice`` ``hal``."""
    rt = iree_runtime()
    value = np.asarray(value, order="C")  # (ascontiguousarray would make 0-d arrays 1-d)
    if value.size == 0:
        # No allocation of zero bytes (CUDA refuses one): a small buffer holds no elements.
        buffer = hal.allocator.allocate_buffer(
            memory_type=rt.MemoryType.DEVICE_LOCAL, allowed_usage=rt.BufferUsage.DEFAULT,
            allocation_size=16)
        return rt.HalBufferView(buffer, list(value.shape), hal_element_type(value.dtype))
    try:
        return hal.allocator.allocate_buffer_copy(
            memory_type=rt.MemoryType.DEVICE_LOCAL, allowed_usage=rt.BufferUsage.DEFAULT,
            device=hal, buffer=value, element_type=hal_element_type(value.dtype))
    except RuntimeError as e:
        raise_if_device_lost(e)
        raise


def raise_if_device_lost(error: Exception) -> None:
    """Raise ``device_lost_error(error)`` from ``error`` when it reports a lost device.

    Example::

        except RuntimeError as e:
            raise_if_device_lost(e)
            raise
    """
    lost = device_lost_error(error)
    if lost is not error:
        raise lost from error


def device_lost_error(error: Exception) -> Exception:
    """A clearer error for ``error`` when it reports a lost Vulkan device, else ``error``.

    Example::

        raise device_lost_error(e) from e
    """
    if "VK_ERROR_DEVICE_LOST" not in str(error):
        return error
    return RuntimeError(
        "the Vulkan device was lost (VK_ERROR_DEVICE_LOST): nothing more can run on it in this "
        "process, and arrays on it are gone. On Mesa's lavapipe, IREE 3.13's Vulkan queue can "
        "cause this itself: two of its threads can signal its wake-up semaphore out of order, "
        "which Mesa treats as a lost device. pyree avoids the pattern known to trigger it "
        "(results computed from constants alone), but cannot rule it out; running the program "
        f"again starts a new device. IREE said: {error}")

# Reads of results copy through host memory even where the device's memory could be mapped.
# The CPU's memory is host memory and is mapped; a GPU's device-local memory cannot be, and is
# read by a queue copy into host memory. Tests set this on the CPU, which has no other way to
# run the GPU's path.
READ_BY_COPY = False


def read_buffer_view(buffer_view, shape: tuple, dtype: np.dtype, hal=None) -> np.ndarray:
    """A new host array holding a (ready) buffer view's contents. Memory the host can map is
    mapped and copied out; other memory (a GPU's) is copied by the device's queue into host
    memory first, which needs ``hal``, the ``HalDevice`` that owns the buffer."""
    dtype = np.dtype(dtype)
    if 0 in shape:
        return np.zeros(shape, dtype)
    rt = iree_runtime()
    buffer = buffer_view.get_buffer()
    mappable = (buffer.memory_type() & int(rt.MemoryType.HOST_VISIBLE)
                and buffer.allowed_usage() & int(rt.BufferUsage.MAPPING_SCOPED))
    if mappable and not READ_BY_COPY:
        mapping = buffer_view.map()
        # Copy out of the mapping: a NumPy view of it must not outlive the device at exit.
        host = np.array(mapping.asarray(shape, dtype), copy=True)
        del mapping
        return host
    if hal is None:
        raise RuntimeError("pyree cannot read a device buffer the host cannot map without "
                           "the device that holds it")
    return _read_by_copy(buffer, shape, dtype, hal)


def _read_by_copy(buffer, shape: tuple, dtype: np.dtype, hal) -> np.ndarray:
    """``buffer``'s leading elements as a host array, through a host-visible staging buffer
    that the device's queue copies into."""
    rt = iree_runtime()
    size = buffer.byte_length()
    staging = hal.allocator.allocate_buffer(
        memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
        allocation_size=size)
    semaphore = hal.create_semaphore(0)
    hal.queue_copy(buffer, staging, wait_semaphores=rt.HalFence.create_at(semaphore, 0),
                   signal_semaphores=rt.HalFence.create_at(semaphore, 1))
    rt.HalFence.create_at(semaphore, 1).wait()
    mapping = staging.map()
    count = int(np.prod(shape))
    host = np.array(mapping.asarray((size // dtype.itemsize,), dtype)[:count].reshape(shape),
                    copy=True)
    del mapping
    return host


# Variables by which IREE's runtime (iree_hal_mpi_is_configured) decides that the process was
# started by an MPI launcher: then every device it creates gets an MPI "channel provider", which
# dlopens "libmpi.so" and calls MPI_Init. pyree never asks IREE for a collective channel: its
# CPU drivers cannot make one (local-sync and local-task answer "collectives not implemented"),
# on CUDA the provider would give NCCL channels their rank and id, which pyree's programs do not
# use, and pyree.distributed reduces across processes with mpi4py. Under `mpirun` from PyPI's
# mpich the provider could not load (its libmpi.so is a linker script, "file too short"), so
# creating any device failed: "MPI runtime library not available" (IREE 3.13, measured here).
_MPI_LAUNCHER_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPIEXEC_HOSTNAME")


class _hidden_mpi_launcher:
    """Hides the MPI launcher's variables from IREE while it creates (configures) a device, so
    that it installs no MPI channel provider (see ``_MPI_LAUNCHER_VARIABLES``)."""

    def __enter__(self) -> None:
        self._saved = {name: os.environ.pop(name) for name in _MPI_LAUNCHER_VARIABLES
                       if name in os.environ}

    def __exit__(self, *exc: Any) -> None:
        os.environ.update(self._saved)


def _allocators(platform: str) -> list[str]:
    """IREE allocator wrappers for a device of ``platform`` (PYREE_ALLOCATORS, comma-separated,
    overrides them for experiments)."""
    chosen = os.environ.get("PYREE_ALLOCATORS")
    if chosen is not None:
        return [a for a in chosen.split(",") if a]
    # A caching allocator reuses freed blocks instead of mapping fresh pages each call: SELU
    # on 1M floats ran 2.5x faster with it here. It serves the buffers pyree allocates itself
    # (uploads, and on CUDA every jitted call's results and intermediates: see
    # executable.CALLER_STORAGE_PLATFORMS), where a plain cuMemAlloc / cuMemFree would cost
    # each call a driver allocation and a device synchronisation. (IREE's own queue
    # allocations on CUDA come from its stream-ordered pools either way.) A block returns to
    # the cache only when the work using it has finished: IREE holds each buffer a queued
    # command uses until the command completes. Not on Vulkan: there IREE 3.13's queue
    # allocations through the caching wrapper failed ("allocator cannot allocate a Vulkan
    # buffer with the given parameters; memory_type=DEVICE_LOCAL"), and every call with them;
    # without it calls run on Mesa's lavapipe (the same error was seen on NVIDIA's Vulkan
    # driver, not yet rerun there). The cause, in IREE's source: the Vulkan device's
    # queue_alloca hands its device allocator to a function that casts it to IREE's Vulkan
    # allocator unchecked; with the wrapper installed it reads the wrapper's fields as the
    # Vulkan allocator's, finds no memory type, and the process then crashed at exit
    # (segmentation fault after the failed call, lavapipe; the suite's worker that died).
    # The wrapper's own allocate_buffer worked.
    return [] if platform == "vulkan" else ["caching"]


# Per platform: (drivers in order of preference for small and large work, compile flags).
# CUDA, measured on an H100 (2026-11-26): O3 made SELU on 64M floats 1.60 -> 1.03 ms.
_PLATFORMS = {
    "cpu": (("local-sync", "local-task"), ("--iree-hal-target-device=local",
             "--iree-hal-local-target-device-backends=llvm-cpu")),
    "cuda": (("cuda", "cuda"), ("--iree-hal-target-device=cuda", "--iree-opt-level=O3")),
    "vulkan": (("vulkan", "vulkan"), ("--iree-hal-target-device=vulkan",)),
}


# CUDA architectures IREE 3.13 generates code for (its target table stops at sm_89;
# "sm_90" fails with "missing GPU target", iree-org/iree#22147).
IREE_CUDA_TARGETS = ("sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_89")


def cuda_target_for(capability: tuple[int, int] | None) -> str:
    """The best IREE CUDA target for a device of compute capability ``(major, minor)``.

    The newest target not above the device's own, except that Hopper and later (9.x+) get
    sm_80: PTX runs on newer GPUs through the driver's JIT, and sm_80 is the target with the
    tensor-core (``mma.sync``) code IREE uses for f16/bf16 contractions; sm_89 adds only fp8.
    Unknown capability: IREE's default, sm_60, which runs everywhere.

    Example::

        cuda_target_for((9, 0))   # "sm_80"
        cuda_target_for((8, 6))   # "sm_86"
    """
    if capability is None:
        return "sm_60"
    major, minor = capability
    if major >= 9:
        return "sm_80"
    fitting = [t for t in IREE_CUDA_TARGETS if (int(t[3]), int(t[4:])) <= (major, minor)]
    return fitting[-1] if fitting else "sm_60"


def cuda_compute_capability(ordinal: int = 0) -> tuple[int, int] | None:
    """The compute capability of CUDA device ``ordinal``, read from the CUDA driver
    (``libcuda``); None where there is no driver or no such device."""
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    device, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75, _MINOR = 76.
    if (cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(device), ordinal) != 0
            or cuda.cuDeviceGetAttribute(ctypes.byref(major), 75, device) != 0
            or cuda.cuDeviceGetAttribute(ctypes.byref(minor), 76, device) != 0):
        return None
    return major.value, minor.value


def cuda_target(ordinal: int = 0) -> str:
    """The CUDA target pyree compiles for: ``config.cuda_target`` (``PYREE_CUDA_TARGET``) when
    set, else chosen from the device's compute capability (``cuda_target_for``)."""
    chosen = str(config.cuda_target)
    if chosen != "auto":
        if chosen not in IREE_CUDA_TARGETS:
            raise ValueError(f"pyree.config.cuda_target must be 'auto' or one of "
                             f"{IREE_CUDA_TARGETS} (what IREE 3.13 can target); got {chosen!r}")
        return chosen
    target = _auto_cuda_targets.get(ordinal)
    if target is None:
        target = _auto_cuda_targets.setdefault(
            ordinal, cuda_target_for(cuda_compute_capability(ordinal)))
    return target


_auto_cuda_targets: dict[int, str] = {}


def vulkan_device_info(ordinal: int = 0):
    """The Vulkan loader's description (``vulkan.VulkanDeviceInfo``) of the device IREE's
    Vulkan driver opens as ``ordinal``, or None where the loader finds none.

    Example::

        vulkan_device_info().shader_float64   # True on lavapipe
    """
    from . import vulkan
    if ordinal not in _vulkan_device_names:
        try:
            found = iree_runtime().get_driver("vulkan").query_available_devices()
        except Exception:  # no Vulkan loader or driver
            found = []
        _vulkan_device_names[ordinal] = found[ordinal]["name"] if ordinal < len(found) else ""
    return vulkan.device_info(_vulkan_device_names[ordinal])


_vulkan_device_names: dict[int, str] = {}


def vulkan_target(ordinal: int = 0) -> str:
    """The IREE Vulkan target pyree compiles for: ``config.vulkan_target``
    (``PYREE_VULKAN_TARGET``) when set, else chosen from the device
    (``vulkan.vulkan_target_for``). A target IREE does not know is a ValueError here, before
    any program is compiled for it.

    Example::

        vulkan_target()   # "llvmpipe" on Mesa's lavapipe, "sm_80" on an H100
    """
    from . import vulkan
    chosen = str(config.vulkan_target)
    if chosen != "auto":
        _check_vulkan_target(chosen)
        return chosen
    target = _auto_vulkan_targets.get(ordinal)
    if target is None:
        info = vulkan_device_info(ordinal)
        capability = (cuda_compute_capability(ordinal)
                      if info is not None and info.vendor_id == vulkan.NVIDIA_VENDOR_ID else None)
        target = _auto_vulkan_targets.setdefault(
            ordinal, vulkan.vulkan_target_for(info, capability))
    return target


_auto_vulkan_targets: dict[int, str] = {}
_known_vulkan_targets: set[str] = set()


def _check_vulkan_target(target: str) -> None:
    """Raise a ValueError unless IREE's compiler knows the Vulkan target ``target`` (checked
    by compiling an empty function for it, once per name: IREE's table of targets has GPU
    architectures, product names and profiles, too many to copy here)."""
    if target in _known_vulkan_targets:
        return
    from iree.compiler import compile_str
    try:
        compile_str("func.func @f(%a: tensor<f32>) -> tensor<f32> { return %a : tensor<f32> }",
                    extra_args=["--iree-hal-target-device=vulkan",
                                f"--iree-vulkan-target={target}"])
    except Exception as e:
        detail = next((line.strip() for line in str(e).splitlines() if "error" in line), "")
        raise ValueError(f"pyree.config.vulkan_target (PYREE_VULKAN_TARGET) is {target!r}, which "
                         f"IREE's compiler does not know as a Vulkan target ({detail}); use "
                         f"'auto' or one of IREE's names ('llvmpipe', 'sm_80', 'rdna3', "
                         f"'valhall4', 'vp_android_baseline_2022', ...)") from None
    _known_vulkan_targets.add(target)


def vulkan_missing_feature(dtype, ordinal: int = 0) -> str | None:
    """Why values of ``dtype`` cannot be computed on Vulkan device ``ordinal`` with the
    target pyree compiles for (a phrase naming the missing device feature), or None.

    Example::

        vulkan_missing_feature(np.float64)   # None on lavapipe
    """
    from . import vulkan
    return vulkan.missing_feature(dtype, vulkan_device_info(ordinal), vulkan_target(ordinal))


class _CurrentCudaContext(threading.local):
    ordinal: int | None = None


_current_cuda_context = _CurrentCudaContext()
_cuda_primary_contexts: dict[int, Any] = {}


def use_cuda_context(ordinal: int) -> None:
    """Make CUDA device ``ordinal``'s primary context current in the calling thread.

    IREE's CUDA driver makes its context current in its own threads only; an allocation or a
    call made from another thread of the process failed with CUDA_ERROR_INVALID_CONTEXT (one
    Python thread per request, H200). IREE's devices use the primary context, so the context
    made current here is theirs. Cheap after the first time in a thread; a no-op without CUDA.
    """
    if _current_cuda_context.ordinal == ordinal:
        return
    import ctypes
    context = _cuda_primary_contexts.get(ordinal)
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return
    if context is None:
        device, context = ctypes.c_int(), ctypes.c_void_p()
        if (cuda.cuInit(0) != 0 or cuda.cuDeviceGet(ctypes.byref(device), ordinal) != 0
                or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) != 0):
            return
        context = _cuda_primary_contexts.setdefault(ordinal, context)
    if cuda.cuCtxSetCurrent(context) == 0:
        _current_cuda_context.ordinal = ordinal


def keep_cuda_pool_memory(hal, ordinal: int, keep_bytes: int) -> bool:
    """Make the memory pool behind IREE's CUDA queue allocations keep up to ``keep_bytes``
    of freed memory (its release threshold; -1: half of the device's memory). Returns whether
    the pool was found and set.

    IREE 3.13 creates its stream-ordered pool with a release threshold of 0, so the CUDA
    driver returns every freed block to the system at the next synchronisation, and the
    next allocation maps fresh pages. A compiled loop synchronises at least once an iteration
    (its condition is read on the host) and allocates its carries and intermediates anew each
    time: an iteration of a while loop over 16M floats took 1.49 ms with IREE's setting and
    0.44 ms with the pool kept (H200, benchmarks/gpu_loops.py; JAX 0.14 ms).

    IREE keeps the pool's handle to itself, and will not export a pool allocation through
    DLPack; the pool is found from the device pointer of one of its allocations: the words of
    IREE's buffer object are offered to the CUDA driver, which names the pool of the one that
    is such a pointer (and rejects the others)."""
    import ctypes
    import re
    rt = iree_runtime()
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    device = ctypes.c_int()
    if cuda.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
        return False
    if keep_bytes < 0:
        total = ctypes.c_size_t()
        if cuda.cuDeviceTotalMem_v2(ctypes.byref(total), device) != 0:
            return False
        keep_bytes = total.value // 2
    semaphore = hal.create_semaphore(0)
    buffer = hal.queue_alloca(256, rt.HalFence.create_at(semaphore, 0),
                              rt.HalFence.create_at(semaphore, 1))
    rt.HalFence.create_at(semaphore, 1).wait()
    try:
        address = re.search(r"at 0x([0-9a-fA-F]+)", repr(buffer.ref))
        if address is None:
            return False
        words = (ctypes.c_uint64 * 24).from_address(int(address.group(1), 16))
        pool = ctypes.c_void_p()
        threshold = ctypes.c_uint64(keep_bytes)
        get_attribute = cuda.cuPointerGetAttribute
        get_attribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64]
        for word in list(words):
            # CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE = 17: fails for what is not a pool pointer.
            if word and get_attribute(ctypes.byref(pool), 17, word) == 0 and pool.value:
                # CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4.
                return cuda.cuMemPoolSetAttribute(pool, 4, ctypes.byref(threshold)) == 0
        return False
    finally:
        hal.queue_dealloca(buffer, rt.HalFence.create_at(semaphore, 1),
                           rt.HalFence.create_at(semaphore, 2))
        rt.HalFence.create_at(semaphore, 2).wait()


# Per CUDA device ordinal: whether its IREE pool keeps freed memory (keep_cuda_pool_memory).
cuda_pool_kept: dict[int, bool] = {}


class Device:
    """A device that runs compiled modules, e.g. ``pyree.devices()[0]``.

    Example::

        dev = pyree.devices("cpu")[0]
        x = pyree.device_put(np.ones(3), dev)
    """

    def __init__(self, platform: str, id: int = 0) -> None:
        if platform not in _PLATFORMS:
            raise ValueError(f"unknown platform {platform!r}; pyree knows {sorted(_PLATFORMS)}")
        self.platform = platform
        self.id = id
        self._small_driver, self._large_driver = _PLATFORMS[platform][0]
        self._hal: dict[str, Any] = {}
        self._hal_modules: dict[str, Any] = {}
        self._lock = threading.Lock()
        # Signal fences of the calls queued on the worker pool, oldest first (executable.py).
        self.in_flight: collections.deque = collections.deque()

    @property
    def target_flags(self) -> tuple[str, ...]:
        """IREE compiler flags that target this device (for CUDA and Vulkan, its
        architecture: part of every compile-cache key)."""
        flags = _PLATFORMS[self.platform][1]
        if self.platform == "cuda":
            flags += (f"--iree-cuda-target={cuda_target(self.id)}",)
        elif self.platform == "vulkan":
            flags += (f"--iree-vulkan-target={vulkan_target(self.id)}",)
        return flags

    @property
    def compile_flags(self) -> tuple[str, ...]:
        """All the IREE compiler flags of a module pyree runs on this device (asynchronous)."""
        from .compile import COMMON_FLAGS, CPU_FLAGS
        return (self.target_flags + (CPU_FLAGS if self.platform == "cpu" else ()) + COMMON_FLAGS
                + tuple(str(config.compiler_flags or "").split()))

    def driver_for(self, work: int) -> str:
        """Which IREE driver runs a call that touches about ``work`` elements."""
        return self._large_driver if work >= LARGE_WORK else self._small_driver

    def drivers_to_time(self, work: int) -> tuple[str, str] | None:
        """The drivers a call of about ``work`` elements is timed on before one is chosen
        (executable.Executable._timed_caller), or None where the estimate decides."""
        if self._small_driver == self._large_driver or not LARGE_WORK <= work < TIMED_WORK:
            return None
        return self._small_driver, self._large_driver

    def hal_device(self, driver: str | None = None):
        """The IREE ``HalDevice`` of one of this device's drivers (created on first use)."""
        driver = driver or self._small_driver
        if self.platform == "cuda":
            use_cuda_context(self.id)
        hal = self._hal.get(driver)
        if hal is None:
            with self._lock:
                hal = self._hal.get(driver)
                if hal is None:
                    rt = iree_runtime()
                    try:
                        with _hidden_mpi_launcher():
                            hal = rt.get_driver(driver).create_default_device(
                                allocators=_allocators(self.platform))
                    except Exception as e:  # the driver or its hardware is missing
                        raise RuntimeError(
                            f"pyree could not open IREE driver {driver!r} for platform "
                            f"{self.platform!r}: {e}") from None
                    from .callbacks import debug_sink
                    self._hal_modules[driver] = rt.create_hal_module(
                        vm_instance(), hal, debug_sink=debug_sink(hal))
                    # (After the HAL module: it registers the VM's buffer type, without
                    # which the repr of a buffer's reference crashed the process, H200.)
                    if self.platform == "cuda" and int(config.cuda_pool_keep_bytes) != 0:
                        try:
                            cuda_pool_kept[self.id] = keep_cuda_pool_memory(
                                hal, self.id, int(config.cuda_pool_keep_bytes))
                        except Exception:   # an optimisation only: IREE's defaults stay
                            cuda_pool_kept[self.id] = False
                    self._hal[driver] = hal
        return hal

    def hal_module(self, driver: str):
        self.hal_device(driver)
        return self._hal_modules[driver]

    def put(self, value: np.ndarray):
        """Copy a host array into a new device buffer view (synchronously)."""
        return put_on(self.hal_device(self._small_driver), value)

    def fetch(self, buffer_view, shape: tuple, dtype: np.dtype) -> np.ndarray:
        """Copy a (ready) device buffer view into a new host array."""
        return read_buffer_view(buffer_view, shape, dtype, self.hal_device(self._small_driver))

    def __repr__(self) -> str:
        return f"{self.platform.capitalize() if self.platform != 'cpu' else 'Cpu'}Device(id={self.id})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and (self.platform, self.id) == (other.platform, other.id)

    def __hash__(self) -> int:
        return hash((self.platform, self.id))


def device_symbol(index: int) -> str:
    """The name of the ``index``-th device of a multi-device module: the IR places values with
    ``#hal.device.promise<@NAME>`` and the compiler gets ``--iree-hal-target-device=NAME=...``."""
    return f"device_{index}"


def multi_device_compile_flags(devices: Sequence[Device]) -> tuple[str, ...]:
    """IREE compiler flags for one module that runs over ``devices`` (all of one platform), the
    ``i``-th declared as ``device_symbol(i)``.

    ``--iree-hal-target-device`` given once per device, as ``NAME=TARGET[ORDINAL]``: the ordinal
    picks the runtime's ORDINAL-th device of that target among those the HAL module is given
    (``multi_device_hal_module``), so ``local[0]``, ``local[1]``... are the given devices in order.

    Example::

        multi_device_compile_flags(pyree.devices("cpu")[:2])
        # ('--iree-hal-target-device=device_0=local[0]', '--iree-hal-target-device=device_1=local[1]', ...)
    """
    platforms = {d.platform for d in devices}
    if len(platforms) != 1:
        raise ValueError(f"a multi-device program needs devices of one platform, got "
                         f"{sorted(platforms)}")
    first = devices[0]
    target = "local" if first.platform == "cpu" else first.platform
    flags = tuple(f"--iree-hal-target-device={device_symbol(i)}={target}[{i}]"
                  for i in range(len(devices)))
    # The single-device flags of the platform, less the target device itself and data tiling:
    # IREE 3.13 leaves the tiled layouts' sizes unresolved in a multi-device module
    # ("'stream.tensor.sizeof' op illegal for this phase of lowering", a pmap'd MLP step).
    from .compile import DATA_TILING_FLAG
    flags += tuple(f for f in first.compile_flags
                   if not f.startswith("--iree-hal-target-device=") and f != DATA_TILING_FLAG)
    # IREE 3.13's compile-time constant evaluation crashes (a segmentation fault in
    # HAL::DeviceAnalysis::gatherDeviceTargets, under ConstEval's JitGlobalsPass) on a module
    # that moves a constant to another device: `flow.tensor.transfer` of a
    # `stablehlo.constant`, which a pmap emits whenever a device's value does not depend on
    # its inputs (the gradient of psum(x).sum(), ones on every device). iree-compile alone
    # crashed the same way; without const-eval it compiles and runs right (the constants are
    # computed when the module loads).
    return flags + ("--iree-opt-const-eval=false",)


_multi_device_modules: dict[tuple, Any] = {}


def multi_device_hal_module(devices: Sequence[Device], driver: str):
    """A HAL module holding the IREE devices of ``driver`` of each of ``devices``, in order: the
    ``i``-th is the one a multi-device module declares as ``device_symbol(i)``."""
    key = (tuple(devices), driver)
    module = _multi_device_modules.get(key)
    if module is None:
        hals = [d.hal_device(driver) for d in devices]
        from .callbacks import debug_sink
        module = _multi_device_modules.setdefault(key, iree_runtime().create_hal_module(
            vm_instance(), devices=hals,
            debug_sink=debug_sink(hals[0])))
    return module


# Calls doing at least this many element operations run on the worker pool instead of inline.
# Waking the pool costs ~50 us here, so below this the single inline thread finishes first (a
# 10000x10 normalisation took 0.11 ms inline and 0.17 ms on the pool; SELU on 1M floats 0.29 ms
# inline and 0.25 ms on the pool).
LARGE_WORK = 1 << 21
# Calls from LARGE_WORK to this are timed on both drivers before one is chosen: the estimate
# counts elements, not dispatches, and programs of many small dispatches ran faster inline
# (Executable._timed_caller). Above it the pool's threads win.
TIMED_WORK = 1 << 28

_devices: dict[str, list[Device]] = {}


def devices(platform: str | None = None) -> list[Device]:
    """The devices of a platform (default: ``pyree.config.platform``, normally ``"cpu"``).

    Example::

        pyree.devices()          # [CpuDevice(id=0)]
    """
    platform = platform or config.platform
    platform = {"gpu": "cuda"}.get(platform, platform)   # JAX's name for its CUDA backend
    devs = _devices.get(platform)
    if devs is None:
        count = max(1, int(config.num_cpu_devices)) if platform == "cpu" else 1
        devs = [Device(platform, i) for i in range(count)]
        if platform != "cpu":
            devs[0].hal_device()  # fail here, clearly, when the hardware is absent
        devs = _devices.setdefault(platform, devs)
    elif platform == "cpu" and len(devs) != max(1, int(config.num_cpu_devices)):
        raise RuntimeError(
            f"pyree.config.num_cpu_devices changed to {config.num_cpu_devices} after pyree "
            f"created its {len(devs)} CPU device(s); set it before the first computation (or "
            f"with PYREE_NUM_CPU_DEVICES)")
    return devs


class _Chosen(threading.local):
    device: Device | None = None  # set by ``with pyree.default_device(d):`` in this thread


_chosen = _Chosen()
# [config.default_device resolved to a Device (or None), whether a value that came from the
# environment (PYREE_DEFAULT_DEVICE) still waits to be resolved on first use]
_configured: list = [None, config.default_device is not None]


def _resolve(value: Any) -> Device | None:
    """A default-device setting (a Device, a platform name or None) as a Device."""
    if value is None or isinstance(value, Device):
        return value
    if isinstance(value, str):
        return devices(value)[0]
    raise TypeError(f"the default device must be a pyree Device, a platform name or None, "
                    f"got {value!r}")


def _on_config_update(name: str, value: Any) -> None:
    if name == "default_device":
        _configured[:] = [_resolve(value), False]


config.on_update(_on_config_update)


def default_device() -> Device:
    """The device computations run on unless told otherwise: the one chosen by ``with
    pyree.default_device(d):`` in this thread, else ``config.default_device``, else the
    configured platform's first device."""
    chosen = _chosen.device or _configured[0]
    if chosen is not None:
        return chosen
    if _configured[1]:
        _configured[:] = [_resolve(config.default_device), False]
        if _configured[0] is not None:
            return _configured[0]
    devs = _devices.get(config.platform)
    return (devs or devices())[0]


class use_default_device:
    """Context manager: ``device`` is this thread's default device inside (None: no
    override). ``pyree.default_device`` is this class.

    Example::

        with use_default_device(devices("cpu")[1]):
            x = pyree.numpy.ones(3)        # on CPU device 1
    """

    def __init__(self, device: Any) -> None:
        self.device = _resolve(device)

    def __enter__(self) -> "use_default_device":
        self._saved = _chosen.device
        _chosen.device = self.device
        return self

    def __exit__(self, *exc: Any) -> None:
        _chosen.device = self._saved


def live_arrays() -> list:
    """The Arrays whose device buffers are alive (a debugging aid: it walks the heap).

    Example::

        len(pyree.live_arrays())
    """
    from .array import Array
    # (isinstance: a pmap result is an Array subclass, ShardedArray)
    return [o for o in gc.get_objects() if isinstance(o, Array) and o._buffer is not None]


# Callables that drop IREE objects held elsewhere in the runtime (loaded modules, contexts).
exit_hooks: list = []


@atexit.register
def _release_iree_objects_at_exit() -> None:
    # IREE crashes when a buffer outlives the device that allocated it, and at interpreter exit
    # Python frees module globals in no fixed order (and the binding library may go first). So,
    # while everything is still alive: wait for pending work and drop every Array's buffer (one
    # heap walk at exit instead of a registry every Array would pay for), then the contexts and
    # modules, then the devices and the VM instance. Calls still running on a worker pool whose
    # results nobody holds any more are waited for too: a device destroyed under a running
    # dispatch crashed the process at exit.
    global _instance
    # An uncaught exception's traceback keeps its frames' locals (buffer views, arrays) alive
    # past this hook, and they were freed after the devices: a crash at exit after the error.
    for name in ("last_exc", "last_value", "last_traceback"):
        if getattr(sys, name, None) is not None:
            setattr(sys, name, None)
    gc.collect()
    for devs in _devices.values():
        for dev in devs:
            while dev.in_flight:
                try:
                    dev.in_flight.popleft().wait()
                except Exception:  # a failed call: nothing to wait for
                    pass
    for array in live_arrays():
        try:
            array._release()
        except Exception:  # a failed computation: nothing useful to do at exit
            array._buffer = None
    for hook in exit_hooks:
        hook()
    _multi_device_modules.clear()
    for devs in _devices.values():
        for dev in devs:
            dev._hal_modules.clear()
            dev._hal.clear()
    _instance = None
