"""Global settings, read by every layer at the moment they matter.

This module is the settings object: each option has a default, an environment variable that
overrides the default when pyree is imported, and ``update`` for changes at run time::

    import pyree
    pyree.config.update("enable_x64", True)
    pyree.config.enable_x64        # -> True
"""
from __future__ import annotations

import os
import threading
from typing import Any, Callable

# name -> (default, environment variable, parser of the environment value; None = boolean)
_OPTIONS: dict[str, tuple[Any, str, Callable[[str], Any] | None]] = {
    "enable_x64": (False, "PYREE_ENABLE_X64", None),
    "debug_nans": (False, "PYREE_DEBUG_NANS", None),
    "debug_infs": (False, "PYREE_DEBUG_INFS", None),
    # Where compiled modules are kept between processes; None = the user's cache directory.
    "cache_dir": (None, "PYREE_CACHE_DIR", str),
    # False switches the on-disk compilation cache off (the in-memory cache stays).
    "disk_cache": (True, "PYREE_DISK_CACHE", None),
    # On the first compile that no cache answers, a background process compiles the eager
    # kernels that programs commonly need into the disk cache (transpiler/backend/eager_warmup.py).
    "eager_warmup": (True, "PYREE_EAGER_WARMUP", None),
    "platform": ("cpu", "PYREE_PLATFORM", str),
    # How many CPU devices ``pyree.devices("cpu")`` has (each its own IREE device; like JAX's
    # jax_num_cpu_devices, for programs and tests that place arrays on several devices).
    "num_cpu_devices": (1, "PYREE_NUM_CPU_DEVICES", int),
    # Calls of jitted functions run their Python op by op, eagerly (jax_disable_jit).
    "disable_jit": (False, "PYREE_DISABLE_JIT", None),
    # The CUDA architecture pyree compiles for ("sm_80", ...); "auto" reads the device's
    # compute capability when it opens and takes the best target IREE knows that runs there.
    "cuda_target": ("auto", "PYREE_CUDA_TARGET", str),
    # IREE's Vulkan target (its --iree-vulkan-target: "llvmpipe", "sm_80", "rdna3", ...);
    # "auto" picks it from the device the Vulkan loader describes (runtime/vulkan.py).
    "vulkan_target": ("auto", "PYREE_VULKAN_TARGET", str),
    # Matrix products and float32 2-D convolutions on CUDA (sm_80 and newer) through pyree's own
    # kernels (transpiler/backend/cuda_gemm.py); False leaves them all to IREE's code generator.
    "cuda_gemm_kernels": (True, "PYREE_CUDA_GEMM_KERNELS", None),
    # The precision of float32 contractions given no ``precision=`` (JAX's values: None or
    # "default"/"bfloat16", "high"/"tensorfloat32"/"bfloat16_3x", "highest"/"float32"). CPUs
    # always multiply in full float32; on CUDA the lower two run on tensor cores.
    "default_matmul_precision": (None, "PYREE_DEFAULT_MATMUL_PRECISION", str),
    # Where arrays are created and computations without array operands run (JAX's
    # jax_default_device): a Device, a platform name ("cpu") or None for the platform's first
    # device. ``with pyree.default_device(d):`` overrides it in one thread.
    "default_device": (None, "PYREE_DEFAULT_DEVICE", str),
    # Extra IREE compiler flags for every module (space-separated, part of the compile-cache
    # key; like XLA_FLAGS, for experiments and workarounds): "--iree-opt-level=O3 ...".
    # Set it before the first compile: functions already compiled keep their modules.
    "compiler_flags": ("", "PYREE_COMPILER_FLAGS", str),
    # IREE runtime flags (space-separated), parsed once before the first device opens, e.g.
    # "--cuda_use_streams=false" (CUDA graphs instead of streams).
    "runtime_flags": ("", "PYREE_RUNTIME_FLAGS", str),
    # Bytes of freed memory IREE's CUDA queue-allocation pool keeps for reuse past a
    # synchronisation (the pool's release threshold); -1: half of the device's memory, 0:
    # IREE's default (return all of it at each synchronisation). Read when a CUDA device opens
    # (runtime/device.keep_cuda_pool_memory).
    "cuda_pool_keep_bytes": (-1, "PYREE_CUDA_POOL_KEEP_BYTES", int),
}

# JAX's own names: "jax_enable_x64" is "enable_x64" (as an argument of update and as an
# attribute); "jax_platform_name" / "jax_platforms" choose the platform.
_JAX_ALIASES = {"jax_platform_name": "platform", "jax_platforms": "platform"}

# JAX's environment variables for the options pyree has, read as JAX reads them when the
# PYREE_* variable is not set (JAX_PLATFORMS="cuda,cpu" takes its first platform).
_JAX_ENV = {"enable_x64": "JAX_ENABLE_X64", "debug_nans": "JAX_DEBUG_NANS",
            "debug_infs": "JAX_DEBUG_INFS", "platform": "JAX_PLATFORMS",
            "disable_jit": "JAX_DISABLE_JIT", "num_cpu_devices": "JAX_NUM_CPU_DEVICES",
            "default_matmul_precision": "JAX_DEFAULT_MATMUL_PRECISION"}

# JAX options that change logging, tracebacks, checks of JAX's internals or compile-time
# policy, never results: accepted and kept, so that programs which set them run; reading one
# gives what was set. Each also reads its JAX_* environment variable, as in JAX.
# jax_numpy_rank_promotion is acted on (pyree.numpy's ufuncs read it).
_JAX_ONLY = {
    "jax_log_compiles": False, "jax_traceback_filtering": "auto",
    "jax_numpy_rank_promotion": "allow", "jax_numpy_dtype_promotion": "standard",
    "jax_default_prng_impl": "threefry2x32", "jax_threefry_partitionable": True,
    "jax_compilation_cache_dir": None, "jax_persistent_cache_min_compile_time_secs": 1.0,
    "jax_persistent_cache_min_entry_size_bytes": 0, "jax_check_tracer_leaks": False,
    "jax_explain_cache_misses": False,
    "jax_transfer_guard": "allow", "jax_spmd_mode": "allow_all", "jax_dynamic_shapes": False,
    "jax_debug_key_reuse": False, "jax_pmap_shmap_merge": False,
    "jax_enable_checks": False, "jax_softmax_custom_jvp": False,
    "jax_raise_persistent_cache_errors": False, "jax_enable_compilation_cache": True,
    "jax_include_full_tracebacks_in_locations": True, "jax_use_shardy_partitioner": True,
    "jax_captured_constants_warn_bytes": 2000000000, "jax_enable_pgle": False,
    "jax_pgle_profiling_runs": 3, "jax_hlo_source_file_canonicalization_regex": None,
}

# Allowed values of the JAX-only options pyree checks.
_CHOICES = {"jax_numpy_rank_promotion": ("allow", "warn", "raise"),
            "jax_numpy_dtype_promotion": ("standard", "strict")}


def _parse_bool(text: str) -> bool:
    return text.strip().lower() not in ("", "0", "false", "no", "off")


def _parse_jax_bool(text: str, env: str) -> bool:
    """JAX's reading of a boolean environment variable (anything else is an error)."""
    value = text.strip().lower()
    if value in ("y", "yes", "t", "true", "on", "1"):
        return True
    if value in ("n", "no", "f", "false", "off", "0"):
        return False
    raise ValueError(f"invalid truth value {text!r} for environment {env!r}")


def _initial_values() -> dict[str, Any]:
    values = {}
    for name, (default, env, parse) in _OPTIONS.items():
        value = default
        jax_env = _JAX_ENV.get(name)
        if env in os.environ:   # pyree's variable first
            value = (parse or _parse_bool)(os.environ[env])
        elif jax_env is not None and jax_env in os.environ:
            text = os.environ[jax_env]
            if name == "platform":
                text = text.split(",")[0].strip() or default
            value = _parse_jax_bool(text, jax_env) if parse is None else parse(text)
        values[name] = value
    for name, default in _JAX_ONLY.items():
        env = name.upper()
        if env in os.environ:
            text = os.environ[env]
            if isinstance(default, bool):
                value = _parse_jax_bool(text, env)
            elif isinstance(default, (int, float)):
                value = type(default)(text)
            else:
                value = text
            values[name] = _checked(name, value)
    return values


def _checked(name: str, value: Any) -> Any:
    """``value`` for a JAX-only option, or the error JAX gives (or pyree's where it lacks the
    feature)."""
    choices = _CHOICES.get(name)
    if choices is not None and value not in choices:
        raise ValueError(f"new enum value must be in {list(choices)}, got {value!r} for {name}")
    if name == "jax_numpy_dtype_promotion" and value == "strict":
        raise NotImplementedError(
            "pyree does not implement jax_numpy_dtype_promotion='strict' (it always promotes "
            "as JAX's 'standard' mode does); cast operands explicitly instead")
    return value


_values: dict[str, Any] = _initial_values()
_lock = threading.Lock()
_listeners: list[Callable[[str, Any], None]] = []


def _canonical_name(name: str) -> str:
    if name in _JAX_ALIASES:
        return _JAX_ALIASES[name]
    if name.startswith("jax_") and name[4:] in _OPTIONS:
        return name[4:]
    return name


def update(name: str, value: Any) -> None:
    """Set one option (pyree's name or JAX's ``jax_``-prefixed one).

    Example::

        pyree.config.update("debug_nans", True)
        pyree.config.update("jax_enable_x64", True)
    """
    name = _canonical_name(name)
    if name in _JAX_ONLY:
        value = _checked(name, value)
        with _lock:
            _values[name] = value
        for listener in list(_listeners):  # (jit's cache keys read jax_numpy_rank_promotion)
            listener(name, value)
        return
    if name not in _OPTIONS:
        known = ", ".join(sorted(_OPTIONS))
        raise AttributeError(f"pyree.config has no option {name!r} (options: {known})")
    if name == "platform" and value is None:
        # JAX's default jax_platforms (None: the platform chosen at start-up).
        value = _initial_values()["platform"]
    with _lock:
        _values[name] = value
    for listener in list(_listeners):
        listener(name, value)


def on_update(listener: Callable[[str, Any], None]) -> None:
    """Call ``listener(name, value)`` after every ``update`` (used to drop stale caches)."""
    _listeners.append(listener)


def config_with_absl() -> None:
    """Accepted for programs written for JAX's absl flags; pyree reads no command-line flags
    (options come from ``update`` and PYREE_* environment variables)."""


def parse_flags_with_absl() -> None:
    """Accepted, as ``config_with_absl``: pyree reads no command-line flags."""


def __getattr__(name: str) -> Any:
    if name == "config":  # `from jax.config import config` (older JAX programs)
        import sys
        return sys.modules[__name__]
    canonical = _canonical_name(name)
    if canonical in _JAX_ONLY:
        return _values.get(canonical, _JAX_ONLY[canonical])
    try:
        return _values[canonical]
    except KeyError:
        raise AttributeError(f"pyree.config has no option {name!r}") from None
