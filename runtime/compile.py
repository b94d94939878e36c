"""MLIR text -> ``.vmfb`` bytes, compiled in-process by IREE, cached in memory and on disk.

The cache key is a hash of the MLIR text, the compiler flags and the compiler's version (and,
for code compiled for this machine's CPU, that CPU), so a second process running the same
program loads the module from disk and compiles nothing.
Disk entries carry a checksum: a truncated or corrupted entry is recompiled, never loaded.
``iree.compiler`` is imported only when something must really be compiled.
"""
from __future__ import annotations

import collections
import functools
import hashlib
import linecache
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
from typing import Optional, Sequence

from pyree import config

# Flags every CPU compile gets: code for this machine's CPU, data tiling (it halved a 1000x1000
# f32 matmul here; dropped for modules without a wide matmul, see prepare_module) and O3 (it
# fuses a whole normalisation into one dispatch and made SELU on 1M floats 3x faster here).
# In a compiler session (IREE 3.13's in-process API, which pyree uses) --iree-opt-level sets
# only what reads it directly: the options iree-compile derives from it keep their O0 values
# (a module compiled in-process matched iree-compile's output only with them set one by one).
# Of those, reassociating float reductions is set here: sums and maxima vectorize across the
# reduced axis; jit sum of 1M f32 0.40 -> 0.16-0.21 ms, max 0.40 -> 0.15-0.18 ms, vmap(dot)
# of 1000 64x64 matrix-vector products 2.4-3.2 -> 1.0-1.6 ms. The others did not measure
# better here (global optimization and dispatch creation at O3 changed no row beyond noise;
# aggressive fusion made a CNN step's convolution gradient exceed the stack limit).
HOST_CPU_FLAG = "--iree-llvmcpu-target-cpu=host"   # (the cache key names the CPU: host_cpu)
CPU_FLAGS = (
    HOST_CPU_FLAG,
    "--iree-opt-data-tiling",
    "--iree-opt-level=O3",
    "--iree-llvmcpu-reassociate-fp-reductions=true",
)
# Flags of every platform. IREE demotes f64 to f32 by default, changing the signature the
# runtime checks (and failing to compile float64 bit manipulations on CUDA): with x64 enabled
# float64 must stay float64. Then IREE's async ABI: functions take wait and signal fences.
COMMON_FLAGS = ("--iree-input-demote-f64-to-f32=false",
                "--iree-execution-model=async-external")

# IREE's data tiling re-lays out both operands of each matmul-like op into tiles, in extra
# dispatches run on every call (pyree passes weights as arguments, so nothing is hoisted). That
# pays for a wide matmul, but a matrix-vector product reads its matrix once and the relayout
# triples its memory traffic (measured here, one thread: 2000x2000 @ 2000 2.7 ms tiled, 0.83 ms
# untiled; 1000 batched 64x64 @ 64 3.0 vs 0.7 ms). IREE has no per-op opt-out and every
# stablehlo form of a matvec fuses into the same linalg contraction, so the choice is per module:
# the lowering marks each dot_general that gains from data tiling with DATA_TILING_MARK, and a
# module without one compiles without the flag. (Contractions IREE raises from multiply + reduce
# are memory-bound in the same way, so they lose nothing either.)
DATA_TILING_FLAG = "--iree-opt-data-tiling"
DATA_TILING_MARK = "pyree.data_tiling"
# That flag picks IREE 3.13's data tiling in dispatch creation; its other data tiling, in
# global optimization, is faster for straight-line products and slower for products in loops
# and for convolutions (modules alone in iree-benchmark-module, alternating, three rounds,
# late / global path: a 784-512-10 MLP step 2.32 / 1.90, 2.92 / 2.73, 2.03 / 2.03 ms; a
# 1000x1000 matmul 14.3 / 11.7, 14.2 / 14.0, 13.4 / 12.0 ms; the RNN gradient's scan 12.2 /
# 15.6, 17.4 / 19.8, 21.9 / 24.7 ms; and in benchmarks/run.py a channels-last convolution 10.1
# / 15.2 ms, its gradient 49.8 / 65.7 ms). So modules without loops or convolutions take the
# global path. So do modules with a boolean array read from memory (an argument: a mask
# captured or passed in): the dispatch-creation path fails to pack it when it selects the
# operands of two or more data-tiled products, e.g. jnp.where(mask, x, 0) @ w in a loop
# ("'linalg.pack' op expected padding_value has 'i8' but got: 'i1'").
# Those figures are an AMD Zen 3's (AVX2). On an Intel Emerald Rapids (AVX-512) the global
# path is as fast or faster for convolutions (alternating with JAX in one process, median of
# 7 rounds, dispatch-creation / global path, ms): a small CNN's SGD step 38.8 / 28.5 and 45.7
# / 38.4 (JAX 36.9, 43.9), NHWC 8x64x64x32 convolution 14.4 / 13.5, stride 2 4.1 / 3.7 and
# 5.2 / 4.7, its gradient 49.7 / 50.4 and 63.9 / 54.3; NCHW 8x32x64x64 and 32x64x8x8 and
# their gradients within 5% either way; an RNN gradient's scan 13.6 / 13.6. So with AVX-512
# only loops keep the dispatch-creation path.
GLOBAL_DATA_TILING_FLAG = "--iree-global-opt-data-tiling"
# On that global path IREE 3.13 can lower the tiled products to its newer inner_tiled op
# instead of linalg.mmt4d; on AVX-512 it picks a taller register tile (a 1000x1000 product:
# mmt4d_63x63x1000x16x16x1 took 12-20 ms, tiles of 29 x 16 8-16 ms). Alternating with JAX in one
# process (Intel Emerald Rapids, 2 threads, median of 7 rounds, pyree/JAX): 1000x1000 1.46 ->
# 1.01, 128x784 @ 784x512 1.61 -> 1.04, x.T @ g (784x128 @ 128x512) 1.25 -> 1.02, 4096x1000 @
# 1000x1000 1.36 -> 1.14, an MLP's SGD step 1.27 -> 1.22. It is experimental: on the other
# path it fails on a tiled product with a fused elementwise consumer ("failed to legalize
# operation 'linalg.generic'"), and on this one for a small CNN's step ("'inner_tiled' op
# shape does not match iteration bounds"); a module IREE refuses with it is compiled again
# without it (_compile_now), and modules with a convolution (not measured with it) do without.
INNER_TILED_FLAG = "--iree-llvmcpu-enable-inner-tiled"
BOOLEAN_OPERAND = re.compile(r"%arg\d+: tensor<(?:\d+x)+i1>"
                             r"|stablehlo\.constant dense<[\[\"][^>]*> : tensor<(?:\d+x)+i1>")
_LOOP = re.compile(r"scf\.for|stablehlo\.while|\"stablehlo\.while\"")


def _avx512_host(flags: Sequence[str]) -> bool:
    """Whether ``flags`` compile for this machine's CPU and it has AVX-512."""
    return HOST_CPU_FLAG in flags and " avx512f " in f" {host_cpu()} "


# IREE's CPU heuristics tile a batched matrix-vector product whose reduction runs along the
# matrix's rows (contiguous) as 16 rows x 16 columns and transpose each tile to sum across rows:
# four shuffles per multiply-add. One row at a time with the whole row as a single vector, IREE
# sums each row with a short tree instead: 1000 batched 64x64 @ 64 went from 1.0 to 0.28 ms on
# one thread here. Rows of 96-1024 bytes gain (16 floats gained nothing; a 2000-long row is
# slower than the default, whose vector accumulator survives the reduction loop). The lowering
# marks such products with MATVEC_MARK = row length, and a CPU compile without data tiling
# replaces the mark with that configuration (``compilation_info``, which IREE takes from the op
# itself). A tuning spec would say the same, but loading one deadlocks IREE 3.13's compiler
# intermittently (a worker waits forever on the transform-library mutex).
MATVEC_MARK = "pyree.matvec_k"
_MATVEC_ATTR = re.compile(re.escape(MATVEC_MARK) + r" = (\d+) : i64")
# Bytes of one row that the configuration suits (see above): K floats in one vector.
MATVEC_ROW_BYTES = (96, 1024)
_CPU_BACKEND_FLAG = "--iree-hal-local-target-device-backends=llvm-cpu"

# IREE 3.13's CPU backend runs a convolution as a direct loop nest, far from the matmul code
# it generates well: NCHW 8x32x64x64 with 64 3x3 filters took 1.6 s here (JAX: 31 ms, same
# busy moment). Rewritten by IREE into im2col + matmul it took 95 ms (JAX 60 ms); NHWC 56 ->
# 61 ms, about even. Data tiling on top of it gained nothing for these (it does for a kernel
# gradient's long reduction; and an NCHW result makes IREE's matmul write transposed, which it
# neither tiles nor vectorizes well: transpiler/families/windows.py lowers both into the forms that
# run fast, NCHW 8x32x64x64 then ~1.3-1.7x JAX instead of 2.2-2.5x). CPU modules with a
# convolution get it (measured on this 2-core znver3 machine while other work ran: ratios
# only). A convolution of half-precision operands with a float32 result (the GPU's form, forced
# on the CPU in tests) fails to compile with it ("'arith.addf' op requires the same type").
IM2COL_FLAG = "--iree-global-opt-use-im2col-for-convs"

# Dispatch creation at O3 is not among the options a session derives from --iree-opt-level
# either, and pyree's reductions need one of its options: a row reduction is lowered as a
# reshape of each row into (n / 8, 8) and two reductions (reductions.py), and that reshape kept an
# elementwise producer out of the first one's dispatch. The log-sum-exp of 4096x1000 floats
# wrote x - max to memory to read it back for the sum of exponentials; moving reshapes across
# elementwise ops fused it (the cross-entropy module, iree-benchmark-module, 2 cores: 5.2 ->
# 1.7 ms on the worker pool, 5.9 -> 2.6 ms inline; benchmarks/run.py 3.1 -> 1.4 ms, JAX 2.3).
# With a convolution it is left out: the same table with it everywhere had the convolutions
# and their gradients 8-25x slower (32x64x8x8 NCHW 4.0 -> 94 ms, NHWC gradient 49 -> 638 ms).
# (iree-compile's O3 fuses the log-sum-exp by aggressive fusion instead, the option that
# overflowed a convolution gradient's stack, see CPU_FLAGS.)
RESHAPE_MOVEMENT_FLAG = "--iree-dispatch-creation-enable-aggressive-reshape-movement"


def _matvec_configuration(row: re.Match) -> str:
    """IREE's configuration for a marked product's loops (batch, row, reduction): 32 x 64
    outputs per workgroup, one output per step, the whole row reduced as one vector."""
    return ("compilation_info = #iree_codegen.compilation_info<lowering_config = "
            "#iree_cpu.lowering_config<distribution = [32, 64, 0], vector_common_parallel = "
            f"[1, 1, 0], vector_reduction = [0, 0, {row.group(1)}]>, translation_info = "
            "#iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>")


def prepare_module(mlir_text: str, flags: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """The module text and flags IREE gets for ``mlir_text`` compiled with ``flags``: data
    tiling only when an op is marked for it (on IREE's global path, with inner-tiled products
    on a CPU); on a CPU, reshapes moved across elementwise ops
    without a convolution and im2col with one; marked matrix-vector products configured row by
    row on a CPU without data tiling (with data tiling IREE may fuse a marked product into a
    dispatch whose root is a tiled matmul, and two configurations in one dispatch fail to
    compile); no compile-time constant evaluation for modules with complex values.

    Example::

        text, flags = prepare_module(text, pyree.devices()[0].compile_flags)
    """
    flags = tuple(flags)
    if DATA_TILING_FLAG in flags and DATA_TILING_MARK not in mlir_text:
        flags = tuple(f for f in flags if f != DATA_TILING_FLAG)
    convolution = "stablehlo.convolution" in mlir_text
    late_path = _LOOP.search(mlir_text) or (convolution and not _avx512_host(flags))
    if DATA_TILING_FLAG in flags and (BOOLEAN_OPERAND.search(mlir_text) or not late_path):
        flags = tuple(GLOBAL_DATA_TILING_FLAG if f == DATA_TILING_FLAG else f for f in flags)
        if _CPU_BACKEND_FLAG in flags and not convolution:
            flags += (INNER_TILED_FLAG,)
    if _CPU_BACKEND_FLAG in flags and not convolution:
        flags += (RESHAPE_MOVEMENT_FLAG,)
    if _CPU_BACKEND_FLAG in flags and convolution and not any(
            "stablehlo.convolution" in line and ("bf16" in line or "f16" in line)
            for line in mlir_text.splitlines()):
        flags += (IM2COL_FLAG,)
    if (MATVEC_MARK in mlir_text and _CPU_BACKEND_FLAG in flags
            and DATA_TILING_FLAG not in flags and GLOBAL_DATA_TILING_FLAG not in flags):
        mlir_text = _MATVEC_ATTR.sub(_matvec_configuration, mlir_text)
    if "complex<" in mlir_text:
        flags += (NO_CONST_EVAL_FLAG,)
    return mlir_text, flags


# IREE 3.13 evaluates constant subexpressions at compile time (const-eval) and fails on some
# complex ones: jit(lambda x: x + (jnp.log(1j) - jnp.log(1 + 0j)) / 2) stopped with "jit global
# source initialization order invalid: global __hoisted_tensor_f32_1 has no value" (with
# iree-compile alone too). Modules with complex values compute such constants when they load.
NO_CONST_EVAL_FLAG = "--iree-opt-const-eval=false"


_MAGIC = b"PYREEVM2"
# magic, sha256 of the cache key and the payload, payload length. The key is in the digest so
# that an entry copied over another key's file (a swapped entry) is recompiled, never run.
_HEADER = struct.Struct("<8s32sQ")


def _entry_digest(key: str, payload: bytes) -> bytes:
    h = hashlib.sha256(key.encode())
    h.update(b"\0")
    h.update(payload)
    return h.digest()


class CompileError(RuntimeError):
    """IREE rejected a module. pyree checks programs before this point, so seeing one is a bug
    in pyree (or an IREE limitation) rather than in the user's program."""


def compiler_version() -> str:
    """The version of the installed IREE compiler (part of every cache key)."""
    global _compiler_version
    if _compiler_version is None:
        try:
            from iree.compiler.version import VERSION, REVISIONS
            _compiler_version = f"{VERSION}:{REVISIONS.get('IREE', '')}"
        except ImportError:  # a runtime-only install cannot compile anyway
            _compiler_version = "none"
    return _compiler_version


_compiler_version: Optional[str] = None


@functools.lru_cache(maxsize=None)
def host_cpu() -> str:
    """This machine's CPU as ``--iree-llvmcpu-target-cpu=host`` compiles for it: its model and
    feature flags (Linux's /proc/cpuinfo), else what the platform module says.

    A module compiled for one CPU may use instructions another lacks (AVX-512 code on an AMD
    Zen 3 dies of SIGILL) or run slowly on it, and a cache directory can outlive the machine or
    be shared between machines (a home directory on a network share, an image built elsewhere):
    the cache key of such a module names the CPU. (The machine pyree's benchmarks ran on
    changed from an AMD Zen 3 to an Intel Emerald Rapids, with AVX-512 and AMX, between two
    sessions, 2026-11-28.)

    Example: ``host_cpu()`` is e.g. ``"x86_64 Intel(R) Xeon(R) Processor | fpu vme ... amx_tile"``
    """
    import platform
    described = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                name, _, value = line.partition(":")
                name = name.strip()
                if not name and described:
                    break   # the first processor's block is enough
                if name in ("model name", "flags", "Features", "CPU implementer", "CPU part"):
                    described.setdefault(name, " ".join(value.split()))
    except OSError:
        pass
    parts = [platform.machine(), platform.processor()] + [
        described[k] for k in ("model name", "CPU implementer", "CPU part", "flags", "Features")
        if k in described]
    return " | ".join(p for p in parts if p)


def cache_key(mlir_text: str, flags: Sequence[str]) -> str:
    """The disk and memory cache key of a module compiled with ``flags``.

    Example: ``cache_key(text, device.compile_flags)``"""
    h = hashlib.sha256()
    h.update(compiler_version().encode())
    h.update(b"\0".join(f.encode() for f in GLOBAL_COMPILER_OPTIONS + tuple(flags)))
    if HOST_CPU_FLAG in flags:
        h.update(b"\0cpu\0" + host_cpu().encode())
    h.update(b"\0\0")
    h.update(mlir_text.encode())
    return h.hexdigest()


def cache_dir() -> str:
    """Where compiled modules are kept: ``PYREE_CACHE_DIR`` / ``config.cache_dir``, else the
    user's cache directory."""
    configured = config.cache_dir
    if configured:
        return os.path.expanduser(configured)
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "pyree")


class CompileStats:
    """Counters for tests and benchmarks: how many modules IREE really compiled."""

    compiled = 0
    disk_hits = 0
    memory_hits = 0
    fallbacks = 0  # compiled only with one of FALLBACK_FLAG_SETS
    refusals_remembered = 0  # CompileErrors raised from the memory of an earlier refusal


class _BoundedCache:
    """Compiled modules by key, the least recently used dropped past ``max_bytes`` (a program
    making new jitted functions forever must not grow forever; the disk cache keeps them)."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: "collections.OrderedDict[str, bytes]" = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: str) -> Optional[bytes]:
        with self._lock:
            payload = self._entries.get(key)
            if payload is not None:
                self._entries.move_to_end(key)
            return payload

    def __setitem__(self, key: str, payload: bytes) -> None:
        with self._lock:
            old = self._entries.pop(key, None)
            self._bytes += len(payload) - (len(old) if old is not None else 0)
            self._entries[key] = payload
            while self._bytes > self.max_bytes and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


_memory_cache = _BoundedCache(256 << 20)
_key_locks: dict[str, threading.Lock] = {}
_key_locks_guard = threading.Lock()


def _lock_for(key: str) -> threading.Lock:
    with _key_locks_guard:
        lock = _key_locks.get(key)
        if lock is None:
            lock = _key_locks[key] = threading.Lock()
        return lock


def _disk_path(key: str) -> str:
    return os.path.join(cache_dir(), key[:2], key + ".vmfb")


def _read_disk(key: str, magic: bytes = _MAGIC) -> Optional[bytes]:
    path = _disk_path(key)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if len(data) < _HEADER.size:
        return None
    found_magic, digest, length = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if found_magic != magic or length != len(payload) or _entry_digest(key, payload) != digest:
        return None  # truncated, corrupted or another key's: recompile and overwrite
    return payload


def _write_disk(key: str, payload: bytes, magic: bytes = _MAGIC) -> None:
    path = _disk_path(key)
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".vmfb")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_HEADER.pack(magic, _entry_digest(key, payload), len(payload)))
                f.write(payload)
            os.replace(tmp, path)  # atomic: readers see the old entry or the whole new one
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass  # an unwritable cache only costs recompiles


# Called once per process, before the first module that no cache holds is compiled (the
# transpiler starts compiling common eager kernels in the background there: eager_warmup.py).
first_compile_hooks: list = []
_hooks_ran = threading.Event()


def _run_first_compile_hooks() -> None:
    if _hooks_ran.is_set():
        return
    _hooks_ran.set()
    for hook in first_compile_hooks:
        try:
            hook()
        except Exception:  # a warm-up that cannot start must not fail the compile
            pass


def compile_mlir(mlir_text: str, flags: Sequence[str], *, cache_text: Optional[str] = None) -> bytes:
    """Compile MLIR text with IREE, or fetch the result from the caches.

    ``cache_text`` (default: ``mlir_text``) is what the key hashes; the jit path passes the
    module printed without source locations so that moving code around keeps cache hits.

    Example::

        vmfb = compile_mlir(text, device.compile_flags)
    """
    return _compiled(mlir_text, flags, cache_text, None)[0]


def compile_function(mlir_text: str, flags: Sequence[str], function: str, *,
                     cache_text: Optional[str] = None) -> tuple[bytes, str]:
    """Like ``compile_mlir`` for a module whose one public function is ``function``, but the
    answer may be a bundle (``compile_bundle``) holding that function among others: returns
    the ``.vmfb`` and the function's name in it.

    Example::

        vmfb, name = compile_function(text, device.compile_flags, "main")
    """
    return _compiled(mlir_text, flags, cache_text, function)


def _prepared_with_key(mlir_text: str, flags: Sequence[str], cache_text: Optional[str]
                       ) -> tuple[str, tuple[str, ...], str]:
    """(module text, flags) as compiled (prepare_module), and the cache key."""
    if cache_text is not None:
        cache_text = prepare_module(cache_text, flags)[0]
    mlir_text, flags = prepare_module(mlir_text, flags)
    return mlir_text, flags, cache_key(cache_text if cache_text is not None else mlir_text,
                                       flags)


# A module IREE refused is remembered (in memory, and in the disk cache under its key), so that
# asking for it again raises at once instead of running IREE's pipeline to fail the same way:
# the transpiler's fallbacks ask for such a module first in every process (a refused eager
# complex128 kernel for CUDA, jit._compiled_module and eager._kernel), 1-3 s each here. The
# key names the compiler's version and the flags, so a refusal is not carried over them.
_REFUSED_MAGIC = b"PYREERF1"
_refused: dict[str, str] = {}


def _compiled(mlir_text: str, flags: Sequence[str], cache_text: Optional[str],
              function: Optional[str]) -> tuple[bytes, str]:
    mlir_text, flags, key = _prepared_with_key(mlir_text, flags, cache_text)
    payload = _memory_cache.get(key)
    if payload is not None:
        CompileStats.memory_hits += 1
        return payload, function
    with _lock_for(key):  # one thread compiles a given module; the others wait for it
        payload = _memory_cache.get(key)
        if payload is not None:
            CompileStats.memory_hits += 1
            return payload, function
        use_disk = config.disk_cache
        if use_disk:
            if function is not None:
                bundled = _read_bundled(key)
                if bundled is not None:
                    CompileStats.disk_hits += 1
                    return bundled
            payload = _read_disk(key)
            if payload is not None:
                CompileStats.disk_hits += 1
        if payload is None:
            refusal = _refused.get(key)
            if refusal is None and use_disk:
                found = _read_disk(key, _REFUSED_MAGIC)
                refusal = found.decode(errors="replace") if found is not None else None
            if refusal is not None:
                CompileStats.refusals_remembered += 1
                raise CompileError(refusal)
            _run_first_compile_hooks()
            try:
                payload = _compile_now(mlir_text, flags)
            except CompileError as error:
                _refused[key] = str(error)
                if use_disk:
                    _write_disk(key, str(error).encode(), _REFUSED_MAGIC)
                raise
            CompileStats.compiled += 1
            if use_disk:
                _write_disk(key, payload)
        _memory_cache[key] = payload
        return payload, function


# -- bundles: many small modules compiled as one --------------------------------------------------
#
# IREE spends ~0.4 s on any module, however small (its pipeline's fixed passes, LLVM and the
# linker per executable): one eager kernel alone took 0.55 s here, 16 of them in one module
# 0.18 s each, 32 0.17 s. The background warm-up of eager kernels (eager_warmup.py) compiles
# them in bundles: each kernel's @main is renamed in one module, and each kernel's cache key
# gets a small entry naming the bundle's key and the function (read by compile_function only;
# compile_mlir, which must return a module whose function is the caller's, ignores them).

_BUNDLED_MAGIC = b"PYREEBN1"
_LONE_MAIN = re.compile(r"\Amodule \{\n  func\.func @main\(")


def _can_bundle(text: str) -> bool:
    """A module with one function, @main, and nothing else naming a symbol."""
    return bool(_LONE_MAIN.match(text)) and text.count("@") == 1 and text.rstrip().endswith("}")


def bundle_text(texts: Sequence[str]) -> str:
    """One module holding each module of ``texts`` (each ``_can_bundle``) as @k0, @k1, ...

    Example::

        bundle_text([kernel_a, kernel_b])   # module { func.func @k0(...) ... @k1(...) ... }
    """
    bodies = []
    for i, text in enumerate(texts):
        body = text.rstrip()[len("module {"):-1]
        bodies.append(body.replace("@main(", f"@k{i}(", 1))
    return "module {" + "".join(bodies) + "}\n"


def compile_bundle(texts: Sequence[str], flags: Sequence[str]) -> int:
    """Compile the modules of ``texts`` that no cache holds, together, into the disk cache, so
    that ``compile_function(text, flags, "main")`` of each finds it there. Modules that cannot
    be bundled, or whose bundle IREE refuses, are compiled alone. Returns how many modules were
    compiled.

    Example::

        compile_bundle(eager_kernel_texts, Device("cpu").compile_flags)
    """
    # (key, module as IREE gets it, module as given) by the flags IREE gets
    groups: dict[tuple[str, ...], list[tuple[str, str, str]]] = {}
    compiled = 0
    for text in texts:
        prepared, module_flags = prepare_module(text, flags)
        key = cache_key(prepared, module_flags)
        if _memory_cache.get(key) is not None or os.path.exists(_disk_path(key)):
            continue
        if _can_bundle(prepared) and config.disk_cache:
            groups.setdefault(module_flags, []).append((key, prepared, text))
        else:
            compile_mlir(text, flags)
            compiled += 1
    for module_flags, members in groups.items():
        bundle = bundle_text([prepared for _, prepared, _ in members])
        payload = _run_compiler(bundle, module_flags)[0] if len(members) > 1 else None
        if payload is None:  # alone, or one member IREE refuses: each alone, as eager mode would
            for _, _, text in members:
                try:
                    compile_mlir(text, flags)
                    compiled += 1
                except CompileError:
                    pass
            continue
        bundle_key = cache_key(bundle, module_flags)
        _write_disk(bundle_key, payload)
        for i, (key, _, _) in enumerate(members):
            _write_disk(key, f"{bundle_key}\0k{i}".encode(), magic=_BUNDLED_MAGIC)
        CompileStats.compiled += len(members)
        compiled += len(members)
    return compiled


def _read_bundled(key: str) -> Optional[tuple[bytes, str]]:
    """The bundle holding the module of ``key`` and its function there, if the disk says so."""
    entry = _read_disk(key, magic=_BUNDLED_MAGIC)
    if entry is None:
        return None
    bundle_key, _, function = entry.decode(errors="replace").partition("\0")
    payload = _memory_cache.get(bundle_key) or _read_disk(bundle_key)
    if payload is None or not function:
        return None
    _memory_cache[bundle_key] = payload
    return payload, function


# IREE 3.13 fails on some dispatches it forms itself: fusing a value with several uses into two
# reductions of products (a gradient of mean(exp(a u - b v)) with respect to a and b) put a
# whole 100,000-float intermediate on the stack ("exceeded stack allocation limit"). Such a
# module is compiled a second time without multi-use fusion, which avoids it; modules that
# compile keep the fusion (O3's fusions made normalisations several times faster here).
FALLBACK_FLAGS = ("--iree-dispatch-creation-fuse-multi-use=false",)
# Its stream partitioning also loses a dispatch without operands (an iota a non-fusing consumer
# reads) that CSE shared between the code before and after a nested loop in a loop body:
# "'stream.async.dispatch' op streamable op expected to be in an execution region" (an HMC
# sampler: a scan whose step inverts a 2x2 matrix, by LU, before and after a leapfrog
# fori_loop). With aggressive fusion the iota fuses into its consumers and the module compiles
# (without multi-use fusion it fails too, so each fallback is tried alone). It is not the
# default: it made a CNN step's convolution gradient exceed the stack limit. (Writing small
# iotas as constants instead made IREE fold masks into boolean constants, see
# BOOLEAN_OPERAND; 17 tests failed.)
FALLBACK_FLAG_SETS = (FALLBACK_FLAGS, ("--iree-dispatch-creation-enable-aggressive-fusion=true",))


def _compile_now(mlir_text: str, flags: Sequence[str]) -> bytes:
    payload, diagnostics = _run_compiler(mlir_text, flags)
    if payload is None and INNER_TILED_FLAG in flags:   # (experimental in IREE: see its note)
        flags = tuple(f for f in flags if f != INNER_TILED_FLAG)
        payload, diagnostics = _run_compiler(mlir_text, flags)
        CompileStats.fallbacks += payload is not None
    for fallback in FALLBACK_FLAG_SETS:
        if payload is not None:
            break
        if not set(fallback) <= set(flags):
            payload, _ = _run_compiler(mlir_text, tuple(flags) + fallback)
            CompileStats.fallbacks += payload is not None
    if payload is None:
        raise CompileError("IREE failed to compile a module pyree generated:\n"
                           + "\n".join(diagnostics))
    return payload


_compile_options_lock = threading.Lock()

# Process-wide compiler options (LLVM command-line options a session's flags cannot set).
# IREE 3.13's CPU backend refuses dispatches holding vectors it judges too large ("One or more
# operations with large vector sizes (16384 bytes) were found"), as in the momentum step of
# a 784-1024-1024-10 MLP (batch 128) or the stax MNIST and VAE examples; the check only
# fails compiles, it changes no code: with it off LLVM compiles those vectors, and the
# results are right (tests/test_iree_workarounds.py).
# IREE binds each result of a dispatch separately even when all of them live in one buffer,
# and its runtimes refuse dispatches of more than 32 buffers (16 with CUDA): the second
# derivative of a 3-step scan fused into a dispatch of 10 inputs and 7 outputs, 17 bindings
# (a CUDA failure on the H200, 2026-11-27). Aliasing the mutable bindings of one buffer makes
# those outputs one binding (10 in all; the CPU's reverse pytree scan 13 -> 6).
# IREE 3.13 vectorizes a CPU loop over a dimension of unknown length (every eager kernel) with
# masked loads and stores, and on AMD Zen a masked store (vmaskmovps) is microcoded: eager
# multiply of 1M floats took 2.1 ms (JAX 0.16). Peeling runs the main loop unmasked and masks
# only the remainder: 0.63 ms; eager SELU of 1M floats 14.4 -> 4.8 ms (2 cores, znver3). The
# compiler API rejects this option per session, so it is process-wide.
GLOBAL_COMPILER_OPTIONS = ("--iree-llvmcpu-fail-on-large-vector=false",
                           "--iree-stream-resource-alias-mutable-bindings=true",
                           "--iree-llvmcpu-vector-pproc-strategy=peel")


@functools.lru_cache(maxsize=None)
def _set_global_compiler_options() -> None:
    from iree.compiler.api import ctypes_dl
    ctypes_dl._initializeGlobalCL("pyree", *GLOBAL_COMPILER_OPTIONS)


def _run_compiler(mlir_text: str, flags: Sequence[str]) -> tuple[Optional[bytes], list[str]]:
    """The ``.vmfb`` (None if IREE failed) and IREE's diagnostics, formatted."""
    from iree.compiler import api

    with _compile_options_lock:
        _set_global_compiler_options()

    diagnostics: list[str] = []
    session = api.Session()
    try:
        session.set_flags(*flags)
        invocation = session.invocation()
        _collect_diagnostics(invocation, diagnostics)
        source = api.Source.wrap_buffer(session, mlir_text.encode())
        if not (invocation.parse_source(source) and invocation.execute()):
            return None, diagnostics
        output = api.Output.open_membuffer()
        invocation.output_vm_bytecode(output)
        return bytes(output.map_memory()), diagnostics
    finally:
        session.close()


_SEVERITIES = ("note", "warning", "error", "remark")
_LOCATION = re.compile(r"^(.+?):(\d+):(\d+): ")


def _collect_diagnostics(invocation, into: list) -> None:
    """Send the invocation's diagnostics to ``into`` instead of the process's stderr (a
    module that compiles at the second try must not print the first try's errors)."""
    api = _callback_diagnostics_api()
    if api is None:  # not in this IREE: its console diagnostics, on stderr
        invocation.enable_console_diagnostics()
        return
    enable, callback_type, string_at = api

    def collect(severity: int, message: int, size: int, _) -> None:
        text = string_at(message, size).decode(errors="replace")
        into.append(_format_diagnostic(severity, text))

    # The invocation holds the callback: it must live as long as IREE may call it.
    invocation._pyree_diagnostics = callback_type(collect)
    enable(invocation._inv_p, 0, invocation._pyree_diagnostics, None)


@functools.lru_cache(maxsize=None)
def _callback_diagnostics_api():
    """(IREE's C function routing an invocation's diagnostics to a callback, declared; the
    callback's ctypes type; ctypes.string_at), or None when this IREE lacks the function."""
    import ctypes
    from iree.compiler.api import ctypes_dl

    enable = getattr(ctypes_dl._dylib, "ireeCompilerInvocationEnableCallbackDiagnostics", None)
    if enable is None:
        return None
    callback_type = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_void_p)
    enable.argtypes = [ctypes.c_void_p, ctypes.c_int, callback_type, ctypes.c_void_p]
    enable.restype = None
    return enable, callback_type, ctypes.string_at


def _format_diagnostic(severity: int, text: str) -> str:
    """``file:line:col: error: message``, that line of the user's source below it."""
    name = _SEVERITIES[severity] if 0 <= severity < len(_SEVERITIES) else "diagnostic"
    match = _LOCATION.match(text)
    if match is None:
        return f"{name}: {text}"
    first, newline, rest = text[match.end():].partition("\n")
    line = linecache.getline(match[1], int(match[2])).strip()
    source = f"\n    {line}" if line else ""
    return f"{match[0]}{name}: {first}{source}{newline}{rest}"


def clear_memory_cache() -> None:
    """Forget compiled modules (and refusals) held in memory (the disk cache is untouched)."""
    _memory_cache.clear()
    _refused.clear()


# -- compiles in a process of their own -----------------------------------------------------------

def compile_detached(mlir_text: str, flags: Sequence[str], *,
                     cache_text: Optional[str] = None) -> Optional[subprocess.Popen]:
    """Start compiling a module into the disk cache in a process of its own, or None if the
    cache holds it already (or there is no disk cache to share: ``config.disk_cache`` off).
    The process outlives this one: nothing waits for it at exit, and a later run finds the
    module compiled. Returns the process (``poll()``: None while it runs, 0 once done).

    Example::

        proc = compile_detached(text, device.compile_flags)
    """
    import json
    if not config.disk_cache:
        return None
    key = _prepared_with_key(mlir_text, flags, cache_text)[2]
    if _memory_cache.get(key) is not None or _read_disk(key) is not None:
        return None
    # The request goes through a file: through a pipe, a module larger than the pipe's buffer
    # would hold this thread until the new process had started and begun reading.
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="pyree-compile-",
                                     delete=False) as request:
        json.dump({"text": mlir_text, "flags": list(flags), "cache_text": cache_text}, request)
    env = dict(os.environ, PYREE_CACHE_DIR=cache_dir(), PYREE_EAGER_WARMUP="0")
    try:
        return subprocess.Popen([sys.executable, "-m", "pyree.runtime.compile", request.name],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError:
        os.unlink(request.name)
        raise


def _compile_request(path: str) -> None:
    """The detached compile (compile_detached): the module a request file names into the
    disk cache; the file is removed."""
    import json
    try:
        with open(path) as f:
            request = json.load(f)
    finally:
        os.unlink(path)
    compile_mlir(request["text"], request["flags"], cache_text=request["cache_text"])


if __name__ == "__main__":
    _compile_request(sys.argv[1])
