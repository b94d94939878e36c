"""The top-level functions of ``pyree`` (loaded on first use by ``pyree/__init__``)."""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Optional

import numpy as np

import pyree.numpy as _jnp  # attaches the NumPy-style methods to Array and Tracer
from pyree import tree_util
from pyree.runtime import device as _device
from pyree.runtime.array import Array as _RuntimeArray
from pyree.runtime.array import ShardedArray, Sharding, SingleDeviceSharding
from pyree.runtime.array import device_put_numpy as _device_put_numpy
from pyree.runtime.device import Device
from pyree.sharding import NamedSharding, put_sharded
from pyree.transpiler.programs.jit import ShapeDtypeStruct, make_ir
from pyree.transpiler.programs.jit import jit as _jit
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import Tracer, canonicalize_array

Array = _jnp.ndarray
live_arrays = _device.live_arrays
_NO_VALUE = object()   # an option context manager called without a value


def jit(fun: Optional[Callable] = None, *, in_shardings: Any = None, out_shardings: Any = None,
        **options: Any) -> Any:
    """Compile ``fun`` with IREE, once per new signature of its arguments (``jax.jit``; the
    options ``static_argnums``, ``static_argnames``, ``device``, ``donate_argnums``).

    ``in_shardings`` places the positional arguments before each call (one sharding for all,
    or a tuple with one entry per positional argument: a sharding, a pytree of them, or None
    to leave that argument as it is); ``out_shardings`` places the results (one sharding, or
    a pytree matching them). A ``PartitionSpec`` names axes of the mesh ``set_mesh`` made
    current. The computation follows the arguments' shardings (``pyree.sharding``).

    Example::

        @pyree.jit
        def selu(x, alpha=1.67, lmbda=1.05):
            return lmbda * pyree.numpy.where(x > 0, x, alpha * pyree.numpy.exp(x) - alpha)

        f = pyree.jit(lambda x, n: x * n, static_argnums=1)
        step = pyree.jit(update, in_shardings=(replicated, rows), out_shardings=replicated)
    """
    if fun is None:
        return functools.partial(jit, in_shardings=in_shardings, out_shardings=out_shardings,
                                 **options)
    if in_shardings is None and out_shardings is None:
        return _jit(fun, **options)
    return _PlacedJit(fun, in_shardings, out_shardings, options)


def _is_spec(value: Any) -> bool:
    from pyree.sharding import PartitionSpec
    return isinstance(value, PartitionSpec)


def _tracing() -> bool:
    """Whether a trace is under way (a jitted function called inside another is inlined)."""
    from pyree.transpiler.core.trace import current_builder
    return current_builder() is not None


class _PlacedJit:
    """A jitted function whose arguments and results are placed by shardings (``jit``'s
    ``in_shardings`` / ``out_shardings``); other attributes are the jitted function's."""

    def __init__(self, fun: Callable, in_shardings: Any, out_shardings: Any,
                 options: dict) -> None:
        from pyree.sharding import with_sharding_constraint
        self._in_shardings = in_shardings
        functools.update_wrapper(self, fun)
        self._out_shardings = out_shardings
        if out_shardings is None:
            self._jitted = _jit(fun, **options)
        else:
            @functools.wraps(fun)
            def placed(*args: Any, **kwargs: Any) -> Any:
                from pyree._checkpoint import call_traced
                return with_sharding_constraint(call_traced(fun, args, kwargs), out_shardings)
            self._jitted = _jit(placed, **options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._in_shardings is not None:
            args = self._placed_arguments(args)
        outs = self._jitted(*args, **kwargs)
        if self._out_shardings is None or _tracing():
            return outs
        # Results the program did not place already (a mesh of one device, one the
        # partitioner does not follow) are put where asked.
        from pyree.sharding import _named
        is_none = lambda v: v is None
        wanted = tree_util.tree_leaves(tree_util.tree_broadcast(
            tree_util.tree_map(lambda s: _named(s, "jit's out_shardings"),
                               self._out_shardings, is_leaf=_is_spec), outs, is_leaf=is_none),
            is_leaf=is_none)
        leaves = [o if s is None or getattr(o, "sharding", None) == s else device_put(o, s)
                  for o, s in zip(tree_util.tree_leaves(outs), wanted)]
        return tree_util.tree_unflatten(tree_util.tree_structure(outs), leaves)

    def _placed_arguments(self, args: tuple) -> tuple:
        from pyree.sharding import PartitionSpec, with_sharding_constraint
        shardings = self._in_shardings
        if isinstance(shardings, (Sharding, PartitionSpec)):
            shardings = (shardings,) * len(args)
        if not isinstance(shardings, (tuple, list)) or len(shardings) != len(args):
            raise ValueError(f"jit's in_shardings must be one sharding or a tuple with one entry "
                             f"per positional argument ({len(args)} here), got {shardings!r}"
                             f"{_where(None)}")
        return tuple(a if s is None else with_sharding_constraint(a, s)
                     for a, s in zip(args, shardings))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jitted, name)


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
    """The platform computations run on by default, by JAX's names: 'cpu', or 'gpu' for CUDA
    and Vulkan devices. Example: ``pyree.default_backend()`` -> 'cpu'"""
    platform = _device.default_device().platform
    return "cpu" if platform == "cpu" else "gpu"


def device_put(x: Any, device: Any = None) -> Any:
    """Copy a pytree of arrays/scalars to ``device`` (default: the default device), or place it
    by a sharding: ``SingleDeviceSharding(d)`` as ``d``, ``NamedSharding(mesh, spec)`` split in
    blocks over the mesh's devices (a ``ShardedArray``; see ``pyree.sharding``). ``device`` may
    also be a pytree of devices/shardings matching ``x`` (a prefix of it), as in JAX.

    Example::

        x = pyree.device_put(np.arange(4.0))
        mesh = pyree.make_mesh((2,), ("batch",))      # PYREE_NUM_CPU_DEVICES=2
        xs = pyree.device_put(np.zeros((8, 3)), NamedSharding(mesh, P("batch")))
    """
    def put(leaf: Any, where_to: Any) -> Any:
        if isinstance(leaf, Tracer):
            return leaf
        if isinstance(where_to, NamedSharding):
            if isinstance(leaf, ShardedArray) and leaf.sharding == where_to:
                return leaf
            if isinstance(leaf, _RuntimeArray):
                return put_sharded(leaf, where_to)
            return put_sharded(canonicalize_array(np.asarray(leaf)), where_to,
                               weak_type=_is_weak_scalar(leaf))
        if isinstance(where_to, SingleDeviceSharding):
            where_to = where_to._device
        elif where_to is not None and not isinstance(where_to, Device):
            raise TypeError(f"device_put expects a device or a sharding, got "
                            f"{type(where_to).__name__}")
        target = where_to or _device.default_device()
        if isinstance(leaf, _RuntimeArray):
            if leaf.device == target:
                if type(leaf) is ShardedArray:   # (the whole, as an ordinary array)
                    return _RuntimeArray(leaf._buffer, leaf.aval, leaf._device, leaf._fence)
                return leaf
            value = leaf._value()
            return _device_put_numpy(value, target, weak_type=leaf.weak_type)
        host = np.asarray(leaf)
        return _device_put_numpy(canonicalize_array(host), target,
                                 weak_type=_is_weak_scalar(leaf))

    if device is None or isinstance(device, (Device, Sharding)):
        return tree_util.tree_map(lambda leaf: put(leaf, device), x)
    places = tree_util.tree_broadcast(device, x, is_leaf=lambda v: v is None)
    return tree_util.tree_map(put, x, places)


def _is_weak_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, complex)) and not isinstance(value, bool)


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


class _OptionContext(contextlib.ContextDecorator):
    """Sets one config option inside a ``with`` block (or a decorated function's calls) and
    puts the previous value back on the way out, exceptions included."""

    def __init__(self, option: str, value: Any) -> None:
        self._option, self._value = option, value
        self._saved: list[Any] = []   # a stack: the same object may be entered recursively

    def __enter__(self) -> None:
        from pyree import config
        self._saved.append(getattr(config, self._option))
        config.update(self._option, self._value)

    def __exit__(self, *exc: Any) -> None:
        from pyree import config
        config.update(self._option, self._saved.pop())


class _OptionState:
    """A config option as JAX exposes it at top level (``jax.enable_x64`` and friends):
    calling it gives a context manager and decorator that sets the option. Boolean options
    default to True; the others need a value. pyree's options are process-wide, so the value
    holds in every thread while the block runs (JAX's are per thread)."""

    def __init__(self, option: str, boolean: bool, doc: str) -> None:
        self._option, self._boolean = option, boolean
        self.__doc__ = doc

    def __call__(self, new_val: Any = _NO_VALUE) -> _OptionContext:
        if new_val is _NO_VALUE:
            if not self._boolean:
                raise TypeError(f"Context manager for {self._option} config option requires an "
                                "argument representing the new value for the config option.")
            new_val = True
        if self._option == "default_matmul_precision" and new_val is not None:
            from pyree.lax import Precision
            Precision.from_any(new_val)   # an unknown name fails here, as in JAX
        return _OptionContext(self._option, new_val)

    @property
    def value(self) -> Any:
        """The option's current value."""
        from pyree import config
        return getattr(config, self._option)

    def __repr__(self) -> str:
        return f"<pyree option {self._option}>"


enable_x64 = _OptionState("enable_x64", True, """\
``with pyree.enable_x64():`` (or ``enable_x64(False)``) switches 64-bit dtypes on (off) inside
the block, as ``jax.enable_x64``; functions jitted and called inside compute in float64.

Example::

    with pyree.enable_x64():
        jnp.ones(2).dtype        # float64
""")
debug_nans = _OptionState("debug_nans", True, """\
``with pyree.debug_nans():`` raises FloatingPointError where an operation produces a NaN
inside the block (``jax.debug_nans``).

Example::

    with pyree.debug_nans():
        jnp.log(-1.0)            # FloatingPointError
""")
debug_infs = _OptionState("debug_infs", True, """\
``with pyree.debug_infs():`` raises FloatingPointError where an operation produces an
infinity inside the block (``jax.debug_infs``).

Example::

    with pyree.debug_infs():
        jnp.ones(1) / 0.0        # FloatingPointError
""")
default_matmul_precision = _OptionState("default_matmul_precision", False, """\
``with pyree.default_matmul_precision("float32"):`` sets the precision of contractions
given no ``precision=`` inside the block (``jax.default_matmul_precision``; None, "default",
"high", "highest", "bfloat16", "tensorfloat32", "float32").

Example::

    with pyree.default_matmul_precision("highest"):
        y = x @ w
""")
numpy_rank_promotion = _OptionState("jax_numpy_rank_promotion", False, """\
``with pyree.numpy_rank_promotion("raise"):`` makes implicit rank promotion in
``pyree.numpy`` ufuncs an error ("raise"), a warning ("warn") or allowed ("allow") inside
the block (``jax.numpy_rank_promotion``).

Example::

    with pyree.numpy_rank_promotion("raise"):
        jnp.ones(3) + jnp.ones((2, 3))     # ValueError
""")


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


# -- processes and devices ------------------------------------------------------------------------
# A pyree process sees only its own devices. Several processes form one run after
# pyree.distributed.initialize() (over MPI); until then a process is process 0 of 1.

def local_device_count(backend: Optional[str] = None) -> int:
    """How many devices this process has (all the devices it sees: a process's devices are all
    local). Example: ``pyree.local_device_count()`` -> 1"""
    return len(devices(backend))


def process_index(backend: Optional[str] = None) -> int:
    """This process's index among the processes of the run: its MPI rank after
    ``pyree.distributed.initialize()``, 0 before. Example: ``if pyree.process_index() == 0:
    print(loss)``"""
    from pyree import distributed
    return distributed.process_index()


def process_count(backend: Optional[str] = None) -> int:
    """How many processes the run has: MPI's process count after
    ``pyree.distributed.initialize()``, 1 before. Example: ``pyree.process_count()`` -> 1"""
    from pyree import distributed
    return distributed.process_count()


def process_indices(backend: Optional[str] = None) -> list[int]:
    """The indices of the processes of the run: ``[0, ..., process_count() - 1]``.
    Example: ``pyree.process_indices()`` -> [0]"""
    return list(range(process_count(backend)))


host_id = process_index        # JAX's older names
host_count = process_count
host_ids = process_indices

class default_device(_device.use_default_device):
    """``with pyree.default_device(device):`` makes ``device`` (a Device, a platform name such
    as ``"cpu"``, or None for no override) the default device in this thread: arrays created
    inside live there, and computations whose operands are not Arrays (or are Arrays there) run
    there (``jax.default_device``). ``pyree.config.update("jax_default_device", device)`` sets
    it for every thread.

    Example::

        with pyree.default_device(pyree.devices("cpu")[1]):
            y = jnp.ones(3) * 2          # y.device == CpuDevice(id=1)
    """


def typeof(x: Any) -> Any:
    """The abstract value of ``x``: its ``ShapedArray`` (shape, dtype, weak type), for Arrays,
    tracers and Python or NumPy scalars and arrays (``jax.typeof``).

    Example::

        pyree.typeof(jnp.ones((2, 3)))    # ShapedArray(f32[2,3])
    """
    from pyree.transpiler.core.trace import get_aval
    return get_aval(x)


def clear_caches() -> None:
    """Forget every traced and compiled program held in memory: jitted functions' traces and
    executables, eager kernels and compiled modules (``jax.clear_caches``); later calls trace
    again and compile again (or read the disk cache, which stays).

    Example::

        pyree.clear_caches()
    """
    from pyree.runtime import compile as rcompile
    from pyree.transpiler.backend import eager
    from pyree.transpiler.programs import jit as jit_module
    with jit_module._caches_lock:
        for per_fun in list(jit_module._caches.values()):
            for cache in per_fun.values():
                cache.clear()  # (cleared in place: JitFunctions hold these dicts)
    jit_module._forget_fast_paths()
    eager._kernels.clear()
    eager._static_programs.clear()
    eager._static_by_signature.clear()
    eager._scalar_cache.clear()
    rcompile.clear_memory_cache()


def effects_barrier() -> None:
    """Wait until every computation queued on any device has finished, so that their effects
    (debug prints and callbacks) have happened (``jax.effects_barrier``).

    Example::

        f(x)                        # calls pyree.debug.print inside
        pyree.effects_barrier()     # its output has been printed
    """
    from pyree.runtime.executable import _wait_oldest
    for devs in list(_device._devices.values()):
        for dev in devs:
            while dev.in_flight:
                _wait_oldest(dev.in_flight)


def print_environment_info(return_string: bool = False) -> Optional[str]:
    """Print (or, with ``return_string``, return) the versions of pyree, IREE, NumPy and
    Python, the devices and the platform, for bug reports (``jax.print_environment_info``).

    Example::

        pyree.print_environment_info()
    """
    import platform as _platform
    import sys
    import pyree
    from pyree.runtime.compile import compiler_version
    try:
        from iree.runtime.version import VERSION as runtime_version
    except ImportError:
        runtime_version = "unknown"
    devs = devices()
    text = "\n".join([
        f"pyree:  {pyree.__version__}",
        f"iree-compiler: {compiler_version()}",
        f"iree-runtime:  {runtime_version}",
        f"numpy:  {np.__version__}",
        f"python: {sys.version}",
        f"device info: {default_backend()}-{len(devs)}, {len(devs)} local devices",
        f"process_count: {process_count()}",
        f"platform: {_platform.uname()}",
    ]) + "\n"
    if return_string:
        return text
    print(text)
    return None


# -- naming and evaluation -----------------------------------------------------------------------

def named_call(fun: Any, *, name: Optional[str] = None) -> Any:
    """``fun``, whose calls JAX names ``name`` (default: ``fun``'s name) in its programs and
    profiles (``jax.named_call``). pyree's IR names the source line of each operation instead,
    so this computes exactly ``fun``, under every transformation.

    Example::

        layer = pyree.named_call(lambda x: jnp.tanh(x), name="layer")
        layer(x)
    """
    import functools
    from pyree._checkpoint import call_traced
    if not callable(fun):
        raise TypeError(f"named_call expects a callable, got {fun!r}")

    @functools.wraps(fun)
    def named(*args: Any, **kwargs: Any) -> Any:
        return call_traced(fun, args, kwargs)

    return named


class named_scope:
    """``with pyree.named_scope("name"):`` names the operations inside in JAX's programs and
    profiles (``jax.named_scope``); pyree's IR locates each operation by its source line, so the
    scope only checks its name.

    Example::

        with pyree.named_scope("attention"):
            y = jnp.tanh(x)
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError("named_scope name argument must be a string.")
        self.name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def ensure_compile_time_eval() -> Any:
    """Context manager: inside, operations whose operands are all known values run at once,
    even under ``jit``, and give concrete Arrays (``jax.ensure_compile_time_eval``); so Python
    can read them (``int(...)``, ``if``), as when setting up constants. Operations on traced
    values are traced as usual.

    Example::

        @pyree.jit
        def f(x):
            with pyree.ensure_compile_time_eval():
                n = int(jnp.sum(jnp.arange(4)))     # 6: a Python int while tracing
            return x * n
    """
    from pyree.transpiler.core.trace import compile_time_eval
    return compile_time_eval()


__all__ = ["Array", "ShapeDtypeStruct", "block_until_ready", "clear_caches",
           "debug_infs", "debug_nans", "default_backend", "default_device",
           "default_matmul_precision", "device_count", "device_get", "device_put",
           "devices", "disable_jit", "effects_barrier", "enable_x64",
           "ensure_compile_time_eval", "eval_shape", "host_count", "host_id",
           "host_ids", "jit", "live_arrays", "local_device_count", "local_devices",
           "make_ir", "make_jaxpr", "named_call", "named_scope", "numpy_rank_promotion",
           "print_environment_info", "process_count", "process_index",
           "process_indices", "typeof"]
