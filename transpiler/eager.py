"""Eager mode: a primitive applied outside any trace runs at once, compiled, on the device.

IREE's fixed compile cost (~0.3 s a module) must not be paid per shape, so each primitive is
compiled once per (dtypes, ranks, structural params) into a module whose tensors have unknown
dimensions; params that depend on the shape (a slice's bounds, a broadcast's target shape)
become i64 arguments. Elementwise operations are flattened to rank 1 first, so one kernel serves
every rank. Reshapes are free: a new view of the same buffer.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import numpy as np

from pyree.dtypes import bfloat16

from pyree.runtime import compile as rcompile
from pyree.runtime.array import Array, device_put_numpy
from pyree.runtime.device import Device, default_device, iree_runtime
from pyree.runtime.executable import CALLER_STORAGE_PLATFORMS, Executable

from . import nan_check, trace
from . import primitives as P
from .ir import ShapedArray
from . import eager_warmup
from .lower import (lower_primitive_dynamic, merged_reduction_axes, sum_block,
                    takes_caller_storage)
from .trace import TypedScalar, abstract_eval, canonicalize_array, effectful_primitives, get_aval
from .source import user_loc, where

# Params that vary with the shape: passed to the kernel as i64 arguments, not compiled in.
DYNAMIC_PARAMS: dict[Any, tuple[str, ...]] = {
    P.broadcast_in_dim_p: ("shape",),
    P.iota_p: ("shape",),
    P.slice_p: ("start_indices", "limit_indices"),
    P.pad_p: ("padding_config",),
    P.dynamic_slice_p: ("slice_sizes",),
}


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
    from .trace import read_env
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


CONCAT_GROUP = 8  # operands one eager concatenation kernel joins at most
# On Vulkan, two: IREE 3.13's eager (unknown-shape) concatenation of three or more operands
# read the third and later operands from the second's buffer (concatenate([x, y, z], 1) gave
# x, y, then y's rows shifted by one and zeros, on Mesa's lavapipe; two operands were right,
# and so were the jitted, static-shape forms, and eager selects and clamps of three operands).
VULKAN_CONCAT_GROUP = 2


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
    if primitive is P.dynamic_update_slice_p and avals_in[1].size == 0:
        # Writing nothing leaves the operand (Arrays are immutable); the kernel would run with
        # no workgroups (CUDA_ERROR_INVALID_VALUE, and IREE's CUDA device is lost after it).
        return [view(arrays[0], avals_out[0])]
    if (arrays and (arrays[0]._device.platform != "cpu" or STATIC_EMPTY_OPERANDS_ON_CPU)
            and any(a.size == 0 for a in avals_in) and primitive not in effectful_primitives
            and primitive not in BRANCH_PRIMITIVES and primitive is not P.concatenate_p):
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
    if primitive is P.reshape_p:
        return [view(arrays[0], avals_out[0])]
    if primitive is P.convert_element_type_p and avals_in[0].dtype == avals_out[0].dtype:
        return [view(arrays[0], avals_out[0])]
    if primitive is P.broadcast_in_dim_p:
        if avals_in[0].shape == avals_out[0].shape:
            return [view(arrays[0], avals_out[0])]
        arrays, params = _squeeze_expanding(arrays[0], params)
        avals_in = [a.aval for a in arrays]

    if primitive in P.ELEMENTWISE:
        return _apply_elementwise(primitive, arrays, avals_in, avals_out, params)
    if primitive is P.reduce_sum_p and avals_in[0].dtype in _BLOCK_SUMMED:
        blocked = _blocked_sum(arrays[0], params["axes"])
        if blocked is not None:
            return [blocked]
    if primitive is P.concatenate_p and any(a.size == 0 for a in arrays):
        # Empty operands add nothing, and their copies would be launched with no workgroups.
        kept = [a for a in arrays if a.size]
        if len(kept) == 1:
            return [view(kept[0], avals_out[0])]
        return apply_unchecked(primitive, kept, params)
    group = (VULKAN_CONCAT_GROUP if arrays and arrays[0]._device.platform == "vulkan"
             else CONCAT_GROUP)
    if primitive is P.concatenate_p and len(arrays) > group:
        # One kernel binds every operand, and IREE's runtime refuses dispatches of more than
        # 32 buffers (see shapes.py's concatenate lowering): join the operands a group at a time.
        groups = [arrays[i:i + group] for i in range(0, len(arrays), group)]
        joined = [g[0] if len(g) == 1 else apply_unchecked(primitive, g, params)[0]
                  for g in groups]
        return apply_unchecked(primitive, joined, params)
    if primitive is P.dot_general_p and params["dimension_numbers"] != _BATCHED_MATMUL:
        return [_dot_general(arrays, avals_out[0], params)]

    return _apply_kernel(primitive, arrays, avals_in, avals_out, params)


# (the evaluator debug_nans' search re-runs equations with, one by one)
nan_check.apply_unchecked = apply_unchecked


def _apply_kernel(primitive, arrays: list, avals_in: list, avals_out: list,
                  params: dict) -> list[Array]:
    """``primitive`` run by its shape-polymorphic kernel, as it is."""
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
_static_by_signature: dict[tuple, Executable] = {}
_static_programs: dict[tuple, Executable] = {}


def _apply_static(primitive, arrays: list, avals_out: list, params: dict) -> list[Array]:
    from .ir import IR, ClosedIR, Eqn, Var
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


_BATCHED_MATMUL = (((2,), (1,)), ((0,), (0,)))


def _dot_general(arrays: list, out_aval: ShapedArray, params: dict) -> Array:
    """dot_general as a batched matmul (B, M, K) x (B, K, N) on views of the operands.

    On unknown shapes IREE cannot compile most other forms (vector operands, several or no
    contracting dimensions: it would reshape them with stablehlo.dynamic_reshape); here every
    form becomes one kernel per dtype, plus transposes when dimensions are out of order."""
    lhs, rhs = arrays
    (lc, rc), (lb, rb) = params["dimension_numbers"]
    lf = tuple(i for i in range(lhs.ndim) if i not in lc and i not in lb)
    rf = tuple(i for i in range(rhs.ndim) if i not in rc and i not in rb)
    lhs = _transposed(lhs, tuple(lb) + lf + tuple(lc))
    rhs = _transposed(rhs, tuple(rb) + tuple(rc) + rf)

    def size(shape, start, stop):
        return math.prod(shape[start:stop])
    nb, nlf, nc = len(lb), len(lf), len(lc)
    b, m, k = size(lhs.shape, 0, nb), size(lhs.shape, nb, nb + nlf), size(lhs.shape, nb + nlf, None)
    n = size(rhs.shape, nb + nc, None)
    lhs = view(lhs, lhs.aval.update(shape=(b, m, k)))
    rhs = view(rhs, rhs.aval.update(shape=(b, k, n)))
    if lhs._device.platform == "cpu" and bfloat16 in (lhs.dtype, rhs.dtype):
        # bf16 operands widened by kernels of their own: fused into the matmul, the widening
        # made a 512x512 bf16 product take 357 ms on this CPU (lower.apply_rule's note).
        lhs, rhs = [apply_unchecked(P.convert_element_type_p, [x], dict(
            new_dtype=np.dtype(np.float32), weak_type=False))[0] if x.dtype == bfloat16 else x
            for x in (lhs, rhs)]
    out = apply_unchecked(P.dot_general_p, [lhs, rhs],
                          dict(params, dimension_numbers=_BATCHED_MATMUL))[0]
    if out.dtype != out_aval.dtype:   # (widened above: round to the result's dtype once)
        out = apply_unchecked(P.convert_element_type_p, [out], dict(
            new_dtype=out_aval.dtype, weak_type=out_aval.weak_type))[0]
    return view(out, out_aval)


_BLOCK_SUMMED = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64,
                                                np.complex128))


def _blocked_sum(x: Array, axes: tuple) -> Optional[Array]:
    """A float sum over a long axis in two kernels, blocks first, as jitted sums are summed
    (lower.sum_block): one kernel of unknown shapes accumulates the axis serially, and a mean
    over 10,000 rows was 10x less accurate eagerly than under jit. None if no axis is long."""
    merged_shape, merged_axes = merged_reduction_axes(x.shape, tuple(axes))
    if merged_shape != x.shape:
        x, axes = view(x, x.aval.update(shape=merged_shape)), merged_axes
    for axis in axes:
        block = sum_block(x.shape[axis], axis == x.ndim - 1)
        if block is not None:
            split = view(x, x.aval.update(
                shape=x.shape[:axis] + (x.shape[axis] // block, block) + x.shape[axis + 1:]))
            # Each block summed by one kernel, not blocked again, as under jit: a sum over
            # 10,000 rows took 5 kernels instead of 2 (alternating, 300 calls each: 247-320 us
            # against 199-237 us); the accuracy stayed at 1-2e-7 relative.
            # Either stage may come first: both sum about sqrt(n) terms per output.
            partial = _plain_sum(split, (axis,) if _strided_first(split.aval, axis) else
                                 (axis + 1,))
            total = _blocked_sum(partial, axes)
            return total if total is not None else _plain_sum(partial, axes)
    return None


def _strided_first(split: ShapedArray, axis: int) -> bool:
    """Whether a blocked sum over ``split``'s axes (axis, axis + 1) should sum the strided
    stage (``axis``, every block's i-th value) first rather than each contiguous block.

    IREE's kernel of unknown shapes sums a middle axis slowly when the rows after it are short
    and not a whole number of 64-byte vectors (each (m, n) over axis 0, 10 x 200 x 3 runs, us,
    contiguous blocks first -> strided first): (10000, 10) 100 -> 18, (100000, 3) 661 -> 121,
    (16384, 4) 154 -> 23, (10000, 17) 123 -> 32, (10000, 100) 281 -> 221; but (16384, 16) 101
    -> 158, (4096, 64) 117 -> 177, (1000, 1000) 168 -> 212, and along the last axis neither
    order won throughout."""
    if axis + 2 == split.ndim:
        return False
    inner = math.prod(split.shape[axis + 2:])
    per_vector = max(1, 64 // split.dtype.itemsize)
    return inner < 128 and inner % per_vector != 0


def _plain_sum(x: Array, axes: tuple) -> Array:
    """A float sum over ``axes`` in one kernel."""
    out = x.aval.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in axes))
    return _apply_kernel(P.reduce_sum_p, [x], [x.aval], [out], {"axes": tuple(axes)})[0]


def _transposed(x: Array, permutation: tuple) -> Array:
    if permutation == tuple(range(len(permutation))):
        return x
    return apply_unchecked(P.transpose_p, [x], {"permutation": permutation})[0]


def _squeeze_expanding(x: Array, params: dict) -> tuple[list[Array], dict]:
    """Drop the size-1 input dimensions of a broadcast, so that every remaining dimension keeps
    its size (IREE needs to know, for unknown dimensions, which ones expand)."""
    shape, dims = params["shape"], params["broadcast_dimensions"]
    keep = [i for i, d in enumerate(dims) if not (x.aval.shape[i] == 1 and shape[d] != 1)]
    if len(keep) == x.aval.ndim:
        return [x], params
    squeezed = view(x, x.aval.update(shape=tuple(x.aval.shape[i] for i in keep)))
    return [squeezed], dict(params, broadcast_dimensions=tuple(dims[i] for i in keep))
