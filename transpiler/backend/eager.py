"""Eager mode: a primitive applied outside any trace runs at once, compiled, on the device.

IREE's fixed compile cost (~0.3 s a module) must not be paid per shape, so each primitive is
compiled once per (dtypes, ranks, structural params) into a module whose tensors have unknown
dimensions; params that depend on the shape (a slice's bounds, a broadcast's target shape)
become i64 arguments. Elementwise operations are flattened to rank 1 first, so one kernel serves
every rank. Reshapes are free: a new view of the same buffer. A primitive that runs better
otherwise has an eager rule, registered by its family (``EAGER_RULES``: a long sum in blocks,
a concatenation of many operands in groups, a contraction as a batched matmul, ...).
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from pyree.runtime import compile as rcompile
from pyree.runtime.array import Array, device_put_numpy
from pyree.runtime.device import Device, default_device, iree_runtime
from pyree.runtime.executable import CALLER_STORAGE_PLATFORMS, Executable

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.source import user_loc, where
from ..core import trace
from ..core.trace import (TypedScalar, abstract_eval, canonicalize_array, effectful_primitives,
                          get_aval)
from ..interpreters import nan_check
from . import eager_warmup
from .lower import lower_primitive_dynamic, takes_caller_storage

# Params that vary with the shape: passed to the kernel as i64 arguments, not compiled in
# (primitive -> their names; the families register theirs, e.g. shapes.py for slice's).
DYNAMIC_PARAMS: dict[Any, tuple[str, ...]] = {}


def _flat_ints(value) -> list[int]:
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(_flat_ints(v))
        return out
    return [int(value)]


# An eager kernel is one memory-bound pass; in the units of jit's work estimate (element
# operations of a fused program) it weighs about this much per element.
EAGER_WORK_PER_ELEMENT = 8
# An elementwise one reads and writes each element once, and waking the worker pool paid off
# only past ~2M elements (2 cores, alternating, pool / inline: a + a on 1M floats 0.22-0.26 /
# 0.17-0.18 ms, exp 0.37 / 0.34 ms; on 4M 0.86-0.95 / 1.17-1.30 ms and 1.24 / 1.10 ms; on 16M
# 4.1-4.4 / 6.1-6.9 ms): it weighs 1 per element, so that SELU on 1M floats, six kernels, runs
# inline (1.2-1.4 ms against 1.5-2.0 on the pool; JAX 1.0-1.8 in the same runs).
EAGER_ELEMENTWISE_WORK_PER_ELEMENT = 1

_kernels: dict[tuple, Executable] = {}

# A first compile starts compiling common eager kernels in the background (eager_warmup.py).
rcompile.first_compile_hooks.append(eager_warmup.start_in_background)


def _kernel(primitive, avals_in: Sequence[ShapedArray], avals_out: Sequence[ShapedArray],
            params: dict, dyn_counts: dict[str, int], device: Device,
            static_minor: int = 0) -> Executable:
    static = tuple((k, v) for k, v in params.items() if k not in dyn_counts)
    key = (primitive, static, tuple((a.dtype, a.ndim) for a in avals_in),
           tuple((a.dtype, a.ndim) for a in avals_out), tuple(dyn_counts.items()), device,
           static_minor)
    kernel = _kernels.get(key)
    if kernel is None:
        static_params = dict(static)
        for name in dyn_counts:
            static_params[name] = params[name]
        # Where IREE's own allocations would wait on the host (CUDA), the kernel computes into
        # buffers pyree allocates (runtime/executable.py, CALLER_STORAGE_PLATFORMS). Its inputs
        # need no wait on CUDA either: IREE's CUDA runtime allocates at once, so no input can
        # be a buffer a queued call has still to allocate (ready_inputs, Executable).
        plain = lower_primitive_dynamic(primitive, avals_in, avals_out, static_params, dyn_counts,
                                        platform=device.platform, static_minor=static_minor)
        forms = [(plain, False)]
        if device.platform in CALLER_STORAGE_PLATFORMS and takes_caller_storage(plain):
            # IREE 3.13 refuses the caller's storage for some kernels (complex128 formulas:
            # "explicit execution regions must only contain explicit ops"): then IREE
            # allocates (the plain form, tried second).
            forms.insert(0, (lower_primitive_dynamic(
                primitive, avals_in, avals_out, static_params, dyn_counts,
                platform=device.platform, caller_storage=True, static_minor=static_minor), True))
        for i, (module, caller_storage) in enumerate(forms):
            # Concurrent requests for one module compile it once. The answer may be a bundle of
            # kernels the warm-up compiled together (eager_warmup.py), holding this one by
            # another name.
            try:
                vmfb, function = rcompile.compile_function(
                    module.text, device.compile_flags, module.function,
                    cache_text=module.text_without_locations)
                break
            except rcompile.CompileError:
                if i == len(forms) - 1:
                    raise
        kernel = _kernels.setdefault(key, Executable(
            vmfb, function, device, avals_out, ready_inputs=device.platform != "cuda",
            caller_storage=caller_storage))
    return kernel


# -- operands ------------------------------------------------------------------------------------

_scalar_cache: dict[tuple, Array] = {}
_SCALAR_CACHE_LIMIT = 4096


def scalar_key(x: Any) -> tuple:
    """A dict key for a Python scalar that tells 0.0 from -0.0 and treats NaNs alike."""
    t = type(x)
    if t is float:
        return (t, x.hex())
    if t is complex:
        return (t, x.real.hex(), x.imag.hex())
    return (t, x)


def to_array(x: Any, device: Optional[Device] = None) -> Array:
    """An operand as an Array on ``device`` (default: the default device; Python scalars
    become cached weakly-typed 0-d Arrays). Arrays are returned as they are."""
    if isinstance(x, Array):
        return x
    if isinstance(x, (np.ndarray, np.generic)):  # before scalars: np.float64 is a float
        return device_put_numpy(canonicalize_array(np.asarray(x)), device)
    if isinstance(x, (bool, int, float, complex, TypedScalar)):
        aval = get_aval(x)
        value = x.value.item() if isinstance(x, TypedScalar) else x
        # (Keyed by the actual device: the default one changes under pyree.default_device.)
        key = (scalar_key(value), aval.dtype, aval.weak_type, device or default_device())
        cached = _scalar_cache.get(key)
        if cached is None:
            cached = device_put_numpy(np.asarray(value, aval.dtype), device,
                                      weak_type=aval.weak_type)
            if len(_scalar_cache) >= _SCALAR_CACHE_LIMIT:
                _scalar_cache.clear()
            _scalar_cache[key] = cached
        return cached
    get_aval(x)  # raises the right TypeError (lists, strings, ...)
    raise TypeError(f"cannot use a value of type {type(x).__name__} as an array")


def view(x: Array, aval: ShapedArray) -> Array:
    """``x``'s buffer seen with another shape or weak type (no copy, no kernel)."""
    if aval.shape == x.aval.shape:
        if aval == x.aval:
            return x
        out = Array(x._buffer, aval, x._device, x._fence)
        return out
    rt = iree_runtime()
    buffer = x.buffer_view()
    new = rt.HalBufferView(buffer.get_buffer(), list(aval.shape), buffer.element_type)
    return Array(new, aval, x._device, x._fence)


# -- apply ---------------------------------------------------------------------------------------

def _apply_cond(arrays: Sequence[Array], avals_out: Sequence[ShapedArray], taken: Any,
                device: Optional[Device]) -> list[Array]:
    """An eager cond runs the branch its index picks (``taken``, an IR), op by op, as a Python
    ``if`` on a concrete value would (the index is read on the host: the branch taken is known
    anyway).

    Compiled whole, eager conds met IREE 3.13 VM bugs that no jitted program of the suite
    met: a 17-operand cond nested in another (JAX's physical_optimization example under
    grad) and the second derivative of an ``if``/``elif`` ran into null buffers ("ref is
    null; while invoking native function hal.buffer_view.create"). Only the branch taken
    runs, so its effects (prints, callbacks) are the only ones, and nothing is compiled
    but the branch's eager kernels."""
    from ..core.trace import read_env
    env = dict(zip(taken.in_vars, arrays[1:]))
    # Unchecked, as one compiled cond was: debug_nans checks the cond's results (apply).
    for eqn in taken.eqns:
        env.update(zip(eqn.outputs, apply_unchecked(
            eqn.primitive, [read_env(env, a) for a in eqn.inputs], eqn.params)))
    outs = [to_array(read_env(env, a), device) for a in taken.outs]
    return [o if o.aval == aval else view(o, aval) for o, aval in zip(outs, avals_out)]


def operands_device(args: Sequence[Any]) -> Optional[Device]:
    """The device of the Arrays among ``args`` (None when there are none: the default). Arrays
    on different devices are an error: pyree moves arrays only when asked (``device_put``)."""
    device = None
    for a in args:
        if isinstance(a, Array):
            if device is None:
                device = a._device
            elif a._device is not device:
                raise ValueError(
                    f"operands are on different devices ({device} and {a._device}); pyree "
                    f"moves arrays between devices only when asked: copy one with "
                    f"pyree.device_put(x, device){where(None)}")
    return None if device is default_device() else device


def apply(primitive, args: Sequence[Any], params: dict) -> list[Array]:
    """Run ``primitive`` on concrete operands now; returns its outputs as Arrays."""
    outs = apply_unchecked(primitive, args, params)
    if nan_check.enabled:  # config debug_nans/debug_infs: check the results (nan_check.py)
        nan_check.check_eager(primitive, args, outs)
    return outs


# True: eager operations with an empty operand run compiled for their static shapes on the CPU
# too, as on GPUs (a testing aid: see apply_unchecked).
STATIC_EMPTY_OPERANDS_ON_CPU = False


trace.hooks.install(apply_now=apply)   # (bind outside any trace runs the primitive here)


def apply_unchecked(primitive, args: Sequence[Any], params: dict) -> list[Array]:
    """``apply`` without the debug_nans/debug_infs check of the results."""
    device = operands_device(args)
    arrays = [to_array(a, device) for a in args]
    avals_in = [a.aval for a in arrays]
    avals_out = abstract_eval(primitive, avals_in, params, user_loc(3))

    if (avals_out and all(a.size == 0 for a in avals_out)
            and primitive not in effectful_primitives):
        # Nothing to compute. A kernel of unknown shapes would be launched with no workgroups,
        # which CUDA refuses (CUDA_ERROR_INVALID_VALUE, after which IREE's device fails every
        # later call).
        target = arrays[0]._device if arrays else default_device()
        return [device_put_numpy(np.zeros(a.shape, a.dtype), target, a.weak_type)
                for a in avals_out]
    rule = EAGER_RULES.get(primitive)
    if (arrays and (arrays[0]._device.platform != "cpu" or STATIC_EMPTY_OPERANDS_ON_CPU)
            and any(a.size == 0 for a in avals_in) and primitive not in effectful_primitives
            and primitive not in BRANCH_PRIMITIVES and primitive not in EMPTY_OPERANDS_HANDLED):
        # An empty operand of a non-empty result (a pad of a (0, 3) array, nonzero of an empty
        # one with a size): its part of a kernel of unknown shapes is launched with no
        # workgroups (the CUDA device was lost so on an H200, 2026-11-28). Compiled for these
        # static shapes, IREE leaves the empty tensors out.
        return _apply_static(primitive, arrays, avals_out, params)
    if primitive in BRANCH_PRIMITIVES:
        taken = BRANCH_PRIMITIVES[primitive](params, arrays[0])
        return _apply_cond(arrays, avals_out, taken, device)
    static_when = STATIC_SHAPE_WHEN.get(primitive)
    if primitive in STATIC_SHAPE_PRIMITIVES or (
            static_when is not None and static_when(avals_in, params)):
        return _apply_static(primitive, arrays, avals_out, params)
    if primitive in PASS_THROUGH_PRIMITIVES:
        return [arrays[0]]
    if rule is not None:
        outs = rule(arrays, avals_in, avals_out, params)
        if outs is not None:
            return outs
    if primitive in P.ELEMENTWISE:
        return _apply_elementwise(primitive, arrays, avals_in, avals_out, params)
    return apply_kernel(primitive, arrays, avals_in, avals_out, params)


# (the evaluator debug_nans' search re-runs equations with, one by one)
nan_check.apply_unchecked = apply_unchecked


def apply_kernel(primitive, arrays: list, avals_in: list, avals_out: list,
                 params: dict) -> list[Array]:
    """``primitive`` run by its shape-polymorphic kernel, as it is (no eager rule).

    Example: ``apply_kernel(P.reduce_sum_p, [x], [x.aval], [out_aval], {"axes": (0,)})``"""
    names = DYNAMIC_PARAMS.get(primitive, ())
    dyn_counts, ints = {}, []
    for name in names:
        flat = _flat_ints(params[name])
        dyn_counts[name] = len(flat)
        ints.extend(flat)
    kernel = _kernel(primitive, avals_in, avals_out, params, dyn_counts,
                     arrays[0]._device if arrays else default_device())
    work = EAGER_WORK_PER_ELEMENT * max([a.size for a in avals_in] + [a.size for a in avals_out] + [1])
    return kernel(arrays, ints, work=work, out_avals=avals_out)


# The eager policies of primitives that are not one shape-polymorphic kernel, registered by
# the modules that define them (with the primitive's other rules):
# run as a one-equation program of static shapes (compiled per shape): those with regions
# (their bodies are arbitrary programs: no shape-polymorphic kernel can be prepared for them),
# and others whose lowering needs static shapes;
STATIC_SHAPE_PRIMITIVES: set = set()
# their operand is their result (stop_gradient, sharding_constraint);
PASS_THROUGH_PRIMITIVES: set = set()
# the branch to run is chosen on the host, from the index operand (cond; _apply_cond):
# primitive -> taken(params, index) -> the branch's IR.
BRANCH_PRIMITIVES: dict[Any, Any] = {}
# Primitives compiled per shape only for some operands: primitive -> predicate(avals, params)
# (a sort is quadratic in a shape-polymorphic kernel; per shape it can be a sorting network).
STATIC_SHAPE_WHEN: dict[Any, Any] = {}
# A primitive's own way to run eagerly: rule(arrays, avals_in, avals_out, params) -> its results,
# or None for its kernel (a reshape is a view of its operand; a long sum runs in blocks).
EAGER_RULES: dict[Any, Callable] = {}
# Primitives whose eager rule handles empty operands itself: they skip the static-shape path
# that apply_unchecked takes for empty operands on GPUs.
EMPTY_OPERANDS_HANDLED: set = set()
_static_by_signature: dict[tuple, Executable] = {}
_static_programs: dict[tuple, Executable] = {}


def _apply_static(primitive, arrays: list, avals_out: list, params: dict) -> list[Array]:
    from ..core.ir import IR, ClosedIR, Eqn, Var
    from .lower import lower_closed_ir

    in_vars = [Var(a.aval) for a in arrays]
    out_vars = [Var(a) for a in avals_out]
    closed = ClosedIR(IR([], in_vars, [Eqn(primitive, in_vars, params, out_vars, None)], out_vars),
                      [])
    device = arrays[0]._device if arrays else default_device()
    # Lowering is the cost of a repeated call (a 1000-element sort: ~4 ms, its run 0.25 ms):
    # calls with plain parameters find their program by signature first.
    signature = ((primitive, tuple(a.aval for a in arrays), tuple(sorted(params.items())),
                  device) if all(_plain(v) for v in params.values()) else None)
    exe = _static_by_signature.get(signature) if signature is not None else None
    if exe is not None:
        return exe(arrays)
    module = lower_closed_ir(closed, platform=device.platform)
    key = (module.text_without_locations, device)
    exe = _static_programs.get(key)
    if exe is None:
        vmfb = rcompile.compile_mlir(module.text, device.compile_flags,
                                     cache_text=module.text_without_locations)
        exe = _static_programs.setdefault(key, Executable(vmfb, module.function, device,
                                                          avals_out))
    if signature is not None:
        _static_by_signature[signature] = exe
    return exe(arrays)


def _plain(value: Any) -> bool:
    """Whether a parameter is a plain value (a number, string, dtype or tuple of them), which
    a signature can hold without keeping traced programs alive."""
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (bool, int, float, str, np.dtype, np.generic))


# On GPUs, eager elementwise kernels of at least GPU_ROWS_MIN elements, a multiple of GPU_ROW,
# compute on (rows, GPU_ROW) views whose row length the kernel knows. IREE 3.13's CUDA code
# for a rank-1 tensor of unknown length moves one 4-byte element per thread and step (32
# elements a workgroup): SELU on 64M floats, op by op, took 8.03 ms (H200; JAX 1.10 ms). With
# a known row length it loads 4 elements per thread, as for static shapes (read in the PTX
# here): 2.14 ms (JAX 1.02 ms, same run).
# GPU_ROWS_ON_CPU applies it on the CPU (tests).
GPU_ROW = 256
GPU_ROWS_MIN = 1 << 16
GPU_ROWS_ON_CPU = False


def _apply_elementwise(primitive, arrays, avals_in, avals_out, params) -> list[Array]:
    # Same-shape operands (rank-0 ones aside) are contiguous: compute on rank-1 views.
    out = avals_out[0]
    device = arrays[0]._device
    static_minor = 0
    if ((device.platform != "cpu" or GPU_ROWS_ON_CPU) and out.size >= GPU_ROWS_MIN
            and out.size % GPU_ROW == 0):
        static_minor = GPU_ROW
        flat = (out.size // GPU_ROW, GPU_ROW)
    elif out.ndim != 1 and out.shape != ():
        flat = (out.size,)
    else:
        flat = None
    if flat is not None:
        arrays = [view(a, a.aval.update(shape=flat)) if a.aval.shape != () else a for a in arrays]
        kernel_in = [a.aval for a in arrays]
        kernel_out = [o.update(shape=flat) for o in avals_out]
    else:
        kernel_in, kernel_out = avals_in, avals_out
    kernel = _kernel(primitive, kernel_in, kernel_out, params, {}, device, static_minor)
    results = kernel(arrays, (), work=EAGER_ELEMENTWISE_WORK_PER_ELEMENT * out.size,
                     out_avals=kernel_out)
    if kernel_out is not avals_out:
        results = [view(r, aval) for r, aval in zip(results, avals_out)]
    return results
