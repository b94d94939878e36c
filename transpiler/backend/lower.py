"""Lowering: pyree IR -> an MLIR module (StableHLO, CHLO and func/arith/tensor ops), built with
the MLIR Python bindings that ship inside ``iree-base-compiler``.

Each primitive has one lowering rule in ``lowering_rules``: ``rule(ctx, *operands, **params)``
returns the MLIR values of its results. The rules are the families' (arithmetic.py, shapes.py,
reductions.py, dot_general.py, math_functions.py, windows.py, ...); this module is the
machinery they share: the contexts, types and constants, helpers the rules build on (broadcasting
operands, comparisons, reductions, fusion barriers, the data-tiling choice for contractions),
and what applies to every rule (bfloat16 computed in float32, complex128 formulas). Every
operation is created under the location of the user's source line that traced it, so IREE's
diagnostics and debug info point at user code.

Rules also serve eager mode, where one module per primitive serves every shape: there
``ctx.dynamic`` is true, tensor types have unknown (``?``) dimensions, and shape-valued params
named in ``ctx.dyn`` arrive as i64 function arguments instead of constants.
"""
from __future__ import annotations

import contextlib
import contextvars
import math
import os
import threading
from typing import Any, Callable, Optional, Sequence

import numpy as np

from pyree.dtypes import bfloat16

from ..core.ir import IR, ClosedIR, Eqn, Literal, ShapedArray, Var
from ..core import primitives as P
from ..core.trace import has_effects
from . import float64_math

_ir = None  # iree.compiler.ir, imported on first lowering


def mlir():
    """The ``iree.compiler.ir`` module."""
    global _ir
    if _ir is None:
        from iree.compiler import ir
        _ir = ir
    return _ir


_local = threading.local()


def mlir_context():
    """This thread's MLIR context (creating one costs ~10 ms, so it is kept)."""
    ctx = getattr(_local, "context", None)
    if ctx is None:
        ctx = _local.context = mlir().Context()
    return ctx


# -- types and constants ------------------------------------------------------------------------

def element_type(dtype: np.dtype):
    ir = mlir()
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return ir.IntegerType.get_signless(1)
    if dtype.kind == "i":
        return ir.IntegerType.get_signless(8 * dtype.itemsize)
    if dtype.kind == "u":
        return ir.IntegerType.get_unsigned(8 * dtype.itemsize)
    if dtype == np.float32:
        return ir.F32Type.get()
    if dtype == np.float16:
        return ir.F16Type.get()
    if dtype == np.float64:
        return ir.F64Type.get()
    if dtype == bfloat16:
        return ir.BF16Type.get()
    if dtype == np.complex64:
        return ir.ComplexType.get(ir.F32Type.get())
    if dtype == np.complex128:
        return ir.ComplexType.get(ir.F64Type.get())
    raise TypeError(f"pyree cannot lower dtype {dtype}")


def tensor_type(aval: ShapedArray, dynamic: bool = False):
    ir = mlir()
    if dynamic:
        shape = [ir.ShapedType.get_dynamic_size()] * len(aval.shape)
        minor = _static_minor.get()
        if minor and aval.ndim >= 2 and aval.shape[-1] == minor:
            shape[-1] = minor
    else:
        shape = list(aval.shape)
    return ir.RankedTensorType.get(shape, element_type(aval.dtype))


def i64_array(values: Sequence[int]):
    return mlir().DenseI64ArrayAttr.get([int(v) for v in values])


def i64_attr(value: int):
    ir = mlir()
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(value))


def op(name: str, results: Sequence, operands: Sequence, attributes: Optional[dict] = None,
       regions: int = 0):
    """Create one operation at the current insertion point and location."""
    return mlir().Operation.create(name, results=list(results), operands=list(operands),
                                   attributes=attributes or {}, regions=regions)


def hlo(name: str, result_type, *operands, **attributes):
    """A single-result ``stablehlo.<name>`` op; returns its value."""
    return op("stablehlo." + name, [result_type], operands, attributes).result


def constant(value: Any, aval: ShapedArray):
    """A ``stablehlo.constant`` of ``value`` (a scalar is splatted to the aval's shape)."""
    ir = mlir()
    array = np.asarray(value, dtype=aval.dtype)
    etype = element_type(aval.dtype)
    if array.dtype.kind == "c":
        # The bindings cannot hand back a parsed complex attribute ("Can't cast unknown element
        # type"): build the constant from its real and imaginary parts.
        part = aval.update(dtype=np.float32 if array.dtype == np.complex64 else np.float64)
        return hlo("complex", tensor_type(aval), constant(array.real, part),
                   constant(array.imag, part))
    if aval.dtype == bfloat16:
        attr = _bfloat16_dense(array, aval, etype)
    else:
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        attr = ir.DenseElementsAttr.get(np.ascontiguousarray(array).reshape(-1) if array.size != 1
                                        else array.reshape(1), type=etype, shape=list(aval.shape))
    return op("stablehlo.constant", [tensor_type(aval)], [], {"value": attr}).result


def _bfloat16_dense(array: np.ndarray, aval: ShapedArray, etype):
    """A bfloat16 constant's attribute, bit-cast through uint16 (the builders take NumPy
    buffers, and NumPy has no bfloat16 of its own)."""
    ir = mlir()
    bits = np.ascontiguousarray(array.astype(bfloat16)).view(np.uint16).reshape(-1)
    return ir.DenseElementsAttr.get(bits, type=etype, shape=list(aval.shape))


def scalar_like(value: Any, dtype: np.dtype):
    """A rank-0 constant."""
    return constant(value, ShapedArray((), dtype))


def fusion_barrier(value):
    """``value``, computed in a dispatch of its own: IREE fuses neither its producer nor its
    consumers with the other across it.

    ``iree_tensor_ext.compute_barrier.start``, not ``stablehlo.optimization_barrier``: IREE
    3.13 keeps an optimization barrier on the host and waits there for its operand
    (``stream.timepoint.await``; ``hal.fence.await`` in the VM code), so a call whose program
    has one returns only once the work before it has finished, where pyree's calls otherwise
    return at once (a vmapped convolution's module: 3 host waits with optimization barriers,
    none with compute barriers; dispatching 5 calls of JAX's DP-SGD step took 1.66 s, JAX
    queues them in 0.7 ms). The compute barrier stays on the device and keeps the dispatches
    apart (11 in that module either way, 9 with no barrier).

    Optimization barriers remain where a compute barrier failed or cost: on unsigned integers
    (IREE's signless conversion leaves the compute barrier illegal: "failed to legalize
    operation 'iree_tensor_ext.compute_barrier.start'"), inside loop and branch regions ("
    'stream.yield' op used resource not listed in explicit captures", matrix_rank's SVD
    loop), in multi-device modules ("op affinity ... is not compatible with the partition
    affinity", a pmap gradient over 4 devices), in the sorts (sorting.py: a program of
    several matrix_rank calls failed the 'stream.yield' way) and after channels-last
    convolutions (windows.py: slower), and where a barrier hides a value from folding or
    ties values together."""
    ir = mlir()
    element = ir.RankedTensorType(value.type).element_type
    owner = ir.InsertionPoint.current.block.owner
    region = getattr(getattr(owner, "operation", owner), "name", "func.func")
    if ((isinstance(element, ir.IntegerType) and element.is_unsigned) or _multi_device.get()
            or region != "func.func"):
        return op("stablehlo.optimization_barrier", [value.type], [value]).result
    return op("iree_tensor_ext.compute_barrier.start", [value.type], [value]).result


def opaque_true(tag: int):
    """A one-element boolean vector, true, that IREE can neither fold nor prove true (an
    optimization barrier hides a constant ``[tag]`` compared with itself); ``tag`` makes it an
    op of its own (CSE merges equal ones). For ``opaque_select``.

    A vector, not a scalar: IREE reads a rank-0 predicate back on the host to pass it to the
    select as a scalar, a whole-device wait for each one at each call (the prologue of every
    loop with constant initial carries waited twice; made in a loop body, once an iteration)."""
    ir = mlir()
    tag_vector = constant(np.array([tag], np.int32), ShapedArray((1,), np.dtype(np.int32)))
    hidden = op("stablehlo.optimization_barrier", [tag_vector.type], [tag_vector]).result
    return op("stablehlo.compare", [tensor_type(ShapedArray((1,), np.dtype(np.bool_)))],
              [hidden, tag_vector], {
                  "comparison_direction": ir.Attribute.parse("#stablehlo<comparison_direction EQ>"),
                  "compare_type": ir.Attribute.parse("#stablehlo<comparison_type SIGNED>")}).result


def opaque_select(value, other, true):
    """``select(true, value, other)`` with ``true`` from ``opaque_true`` (or the tag to make
    one with): always ``value``, in a buffer of its own, as far as IREE can tell."""
    ir = mlir()
    if isinstance(true, int):
        true = opaque_true(true)
    shape = list(ir.RankedTensorType(value.type).shape)
    if not shape:
        vector_t = ir.RankedTensorType.get([1], ir.RankedTensorType(value.type).element_type)
        chosen = hlo("select", vector_t, true, hlo("reshape", vector_t, value),
                     hlo("reshape", vector_t, other))
        return hlo("reshape", value.type, chosen)
    mask_t = ir.RankedTensorType.get(shape, ir.IntegerType.get_signless(1))
    mask = hlo("broadcast_in_dim", mask_t, true, broadcast_dimensions=i64_array([0]))
    return hlo("select", value.type, mask, value, other)


def fresh_copy(value, aval: ShapedArray, tag: int):
    """``value`` in storage of its own, never a function input's buffer.

    IREE 3.13 performs some updates in place on their operand (scatter, sort, updates of a
    slice), and when that operand is a function input it writes into the caller's buffer
    (IREE issue #16168), which pyree's immutable Arrays share. The copy is a select whose
    predicate IREE cannot see through (``opaque_select``), so IREE can neither fold it away
    nor prove it the identity: an iota compared with a bound folds when the axis has length 1,
    and the scatter then wrote into its input (x.at[jnp.array([0])].add(2) with x of shape
    (1,) changed x). ``tag`` (``Lowering.new_tag()``) makes each copy an op of its own: CSE
    merges identical copies of one value, and two in-place updates then share one buffer."""
    if aval.size == 0:
        return value
    zero = scalar_like(0, aval.dtype)
    if aval.ndim:
        zero = hlo("broadcast_in_dim", tensor_type(aval), zero,
                   broadcast_dimensions=i64_array([]))
    return opaque_select(value, zero, tag)


def own_buffers(values: Sequence, block, barrier_outside: bool = False) -> list:
    """``values``, to be yielded by ``block`` (a branch or loop body), each in a buffer reference
    of its own. Works around an IREE 3.13 VM bug met by real programs.

    When a branch or loop body yields one ``!hal.buffer`` to several block arguments of one
    ``vm.br``, the VM's register allocator may give one of those arguments the source's own
    register and *move* the source into another (its last use), which leaves the first null:
    "ref is null; hal.buffer_view.create", or "indirect buffer reference slot 0 is out range"
    in a later copy (found in the annotated VM IR: remap ``R2->r3`` while a block argument
    lives in r2). Seen in: a cond returning ``rev(a), rev(b), rev(a) * rev(b)``, an HMC chain
    (scan with a cond), the gradient of a Riccati scan, an eager 16-carry while loop, second
    derivatives of cond and switch. One buffer reaches several arguments in two ways:

    * IREE packs the values one execution region produces into one allocation. A one-value
      optimization barrier on each makes IREE take a subspan per value (distinct references).
    * Equal values are one value: a value yielded twice, or constants (the zero tangents of
      AD, which CSE merges however many barriers they pass). Those get a copy of their own:
      a select whose predicate compares a barrier-hidden tag, as ``fresh_copy``.

    ``block`` None: ``values`` are a loop's initial carries, which the branch into the loop
    passes alike (one zero fill as two carries of a third derivative's loop). There equal
    values get their copy, without the barrier; barriers there made IREE fail to compile
    ("operand #1 does not dominate this use").

    ``barrier_outside``: values from outside the block get a barrier too. Inside loops (and
    inside another branch) a branch that hands back an outer value (the ``else`` of
    ``if p: x = ...``) otherwise fails alike; at the top level such a barrier does harm
    instead (a top-level case returning a barrier of an argument gave a null output buffer).
    Tensors of unknown shape get nothing: IREE cannot resolve the dimensions of a barrier's
    result ("'tensor.dim' op unexpected during shape cleanup")."""
    result, seen = [], set()
    i32_t = tensor_type(ShapedArray((), np.dtype(np.int32)))
    for index, value in enumerate(values):
        owner = getattr(value, "owner", None)
        made_here = (isinstance(value, mlir().OpResult)
                     and (block is None or getattr(owner, "operation", owner).block == block))
        repeated = value in seen
        seen.add(value)
        if not value.type.has_static_shape:
            pass
        elif repeated or (made_here and _is_constant(value)):
            # (Negative tags: distinct from those of Lowering.new_tag, whose copies feed
            # in-place updates and must not be merged with these.)
            tag = scalar_like(-1 - index, np.int32)
            hidden, hidden_tag = op("stablehlo.optimization_barrier", [value.type, i32_t],
                                    [value, tag]).results
            keep = _compare_i32(hidden_tag, tag, "EQ")
            value = hlo("select", value.type, keep, value, hidden)
            if block is not None:
                value = op("stablehlo.optimization_barrier", [value.type], [value]).results[0]
        elif (made_here and block is not None) or barrier_outside:
            value = op("stablehlo.optimization_barrier", [value.type], [value]).results[0]
        result.append(value)
    return result


# Whether loops keep their initial carries alive past them (kept_past_loop): jit lowers a
# module again without that when IREE fails to compile it (see initial_carries_released).
_keep_initial_carries = contextvars.ContextVar("pyree_keep_initial_carries", default=True)


@contextlib.contextmanager
def initial_carries_released():
    """Lower without ``kept_past_loop``'s barriers (loops' results stay as they are).

    IREE 3.13's CUDA stream passes fail on some modules holding those barriers ("failed to
    solve for usage analysis": a scan of 800 or 1000 steps of ``tanh(x + h @ w)`` run in
    blocks, whose loops follow each other and nest; 666 steps or a CPU target compiled), so
    jit compiles such a module once more lowered this way (``jit.compile_closed_ir``).

    Example::

        with initial_carries_released():
            module = lower_closed_ir(closed, platform="cuda")
    """
    token = _keep_initial_carries.set(False)
    try:
        yield
    finally:
        _keep_initial_carries.reset(token)


def kept_past_loop(results: Sequence, inits: Sequence) -> list:
    """``results`` of a loop that started from ``inits`` (what ``own_buffers(..., None)``
    returned), passed through one optimization barrier together with the initial carries, so
    that the initial carries' buffers stay alive past the loop. Works around the IREE 3.13 VM
    bug of ``own_buffers`` at the loop's entry branch, where its barriers cannot go.

    IREE packs the initial carries one execution region produces into one allocation and the
    branch into the loop passes that buffer once per carry (with different offsets). When the
    branch is the buffer's last use, the VM's register allocator keeps one occurrence in the
    source register (the block argument's own) and *moves* another out of it, and the first
    argument reads null: "indirect buffer reference slot 0 is out range" in a copy inside the
    loop (three solves in one jitted program; found in the annotated VM IR, ``%ref`` passed
    three times, ``R9->r12`` beside the unmoved ``r9``). A use after the loop makes the branch
    retain the buffer instead of moving it. (IREE's upstream fix: "[VM] Fix ref ownership in
    branch remaps".) Only loops with several static-shaped initial carries can meet it; the
    cost is that such a loop's first iteration cannot update an initial carry's buffer in
    place (IREE copies it once at entry)."""
    kept = [v for v in inits if v.type.has_static_shape]
    if len(kept) < 2 or not _keep_initial_carries.get():
        return list(results)
    barrier = op("stablehlo.optimization_barrier",
                 [r.type for r in results] + [v.type for v in kept], list(results) + kept)
    return list(barrier.results)[:len(results)]


def _is_constant(value, depth: int = 4) -> bool:
    """Whether ``value`` is computed from constants alone (looking ``depth`` ops back)."""
    owner = getattr(value, "owner", None)
    operation = getattr(owner, "operation", owner)
    if not isinstance(value, mlir().OpResult) or operation is None or depth == 0:
        return False
    if operation.name == "stablehlo.constant":
        return True
    return (operation.name != "stablehlo.optimization_barrier" and len(operation.regions) == 0
            and all(_is_constant(v, depth - 1) for v in operation.operands))


def _compare_i32(a, b, direction: str):
    ir = mlir()
    bool_t = tensor_type(ShapedArray((), np.dtype(np.bool_)))
    return op("stablehlo.compare", [bool_t], [a, b], {
        "comparison_direction": ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        "compare_type": ir.Attribute.parse("#stablehlo<comparison_type SIGNED>")}).result


# -- contexts -----------------------------------------------------------------------------------

class RuleContext:
    """What a lowering rule knows about the equation it lowers."""

    __slots__ = ("avals_in", "avals_out", "dynamic", "dyn", "lowering")

    def __init__(self, lowering: "Lowering", avals_in: Sequence[ShapedArray],
                 avals_out: Sequence[ShapedArray], dyn: Optional[dict] = None) -> None:
        self.lowering = lowering
        self.avals_in = avals_in
        self.avals_out = avals_out
        self.dynamic = lowering.dynamic
        self.dyn = dyn or {}

    def type(self, aval: ShapedArray):
        return tensor_type(aval, self.dynamic)

    def out_type(self, i: int = 0):
        return tensor_type(self.avals_out[i], self.dynamic)


# The platform ("cpu", "cuda", "vulkan") the module being lowered will run on: rules whose best
# form depends on the hardware read it (float32 contractions on CUDA, see _dot_general_rule).
# Set by the entry points below for one lowering; sub-lowerings of regions inherit it.
_platform = contextvars.ContextVar("pyree_lowering_platform", default="cpu")
# A last dimension that the tensors of an eager kernel being lowered keep static (0: none; see
# lower_primitive_dynamic's ``static_minor``).
_static_minor = contextvars.ContextVar("pyree_static_minor", default=0)
# PYREE_LOWER_AS=cuda lowers every module as for that platform whatever device runs it: the
# tests run the GPU's forms on the CPU this way (tests/test_gpu_forms_on_cpu.py), so CI checks
# their values without a GPU. A testing aid, not an option for users.
LOWER_AS = os.environ.get("PYREE_LOWER_AS") or None


# The platform the module is compiled for, whatever LOWER_AS says: what may appear in the
# module only for that platform's compiler (CUDA kernels, cuda_gemm.py) reads it.
_device_platform = contextvars.ContextVar("pyree_device_platform", default="cpu")
# Whether the module being lowered spans several devices (lower_closed_ir's affinities).
_multi_device = contextvars.ContextVar("pyree_multi_device", default=False)


@contextlib.contextmanager
def _lowering_for(platform: str):
    token = _platform.set(LOWER_AS or platform)
    device_token = _device_platform.set(platform)
    try:
        yield
    finally:
        _platform.reset(token)
        _device_platform.reset(device_token)


class Lowering:
    """State of one module being built."""

    def __init__(self, dynamic: bool = False) -> None:
        self.dynamic = dynamic
        self.platform = _platform.get()
        self.device_platform = _device_platform.get()
        # Values that may share storage with the function's inputs (see aliases_input).
        self._input_views: set = set()
        # Whether the code being emitted is inside a loop's body, or inside any region (a
        # branch or a loop): see control_flow's conds.
        self.in_loop = False
        self.in_region = False
        self._tags = 0
        # Loop-invariant values made before a loop for its body, by (loop, value): see
        # _loop_matvec_as_vecmat. Shared with the Lowerings of the module's regions.
        self.hoisted: dict = {}

    def new_tag(self) -> int:
        """A number not handed out before by this Lowering (deterministic, for cache keys)."""
        self._tags += 1
        return self._tags

    def aliases_input(self, value) -> bool:
        """Whether ``value`` may be the storage of a function input (or a view of one).

        IREE may perform an update in place on such a value, overwriting the caller's buffer
        (IREE issue #16168): pyree's Arrays are immutable, so those updates are written
        out of place instead."""
        return self.dynamic or value in self._input_views

    def lower_ir(self, ir: IR, args: Sequence, dyn_args: Optional[dict] = None) -> list:
        """Emit the equations of ``ir`` with ``args`` bound to const_vars + in_vars."""
        env: dict[Var, Any] = {}
        for var, value in zip(list(ir.const_vars) + list(ir.in_vars), args):
            env[var] = value

        def read(atom):
            if isinstance(atom, Literal):
                return constant(atom.value, atom.aval)
            return env[atom]

        fan_in = _FanIn(self)
        used = {a for eqn in ir.eqns for a in eqn.inputs if isinstance(a, Var)}
        used.update(a for a in ir.outs if isinstance(a, Var))
        unused_effect_results: list = []
        for eqn in ir.eqns:
            if self.device_platform == "vulkan":
                check_device_types(eqn.primitive, [a.aval for a in eqn.inputs]
                                   + [v.aval for v in eqn.outputs], eqn.loc)
            with _location(eqn):
                rule = lowering_rules.get(eqn.primitive)
                if rule is None:
                    raise NotImplementedError(f"no lowering rule for primitive {eqn.primitive}")
                ctx = RuleContext(self, [a.aval for a in eqn.inputs],
                                  [v.aval for v in eqn.outputs], dyn_args)
                fan_in.limit_inputs(eqn, env)
                ins = [read(a) for a in eqn.inputs]
                outs = apply_rule(rule, eqn.primitive, ctx, ins, eqn.params)
                if eqn.primitive in VIEW_PRIMITIVES and ins and ins[0] in self._input_views:
                    self._input_views.update(outs)
                for var, value in zip(eqn.outputs, outs):
                    env[var] = value
                fan_in.record(eqn, ins, outs)
                if (eqn.outputs and not any(v in used for v in eqn.outputs)
                        and has_effects([eqn])):
                    unused_effect_results.extend(outs)
                # A cond without results whose branch left such results hands back one token
                # for them (control_flow._cond_lowering); it needs a use in turn.
                unused_effect_results.extend(outs[len(eqn.outputs):])
        results = [read(atom) for atom in ir.outs]
        self.unused_effect_results = unused_effect_results if not results else []
        if unused_effect_results and results:
            # IREE 3.13 fails to compile a while loop whose body prints and whose results are
            # all unused ("maximum iteration count exceeded in fixed point pipeline", in its
            # stream passes; reproduced with iree-compile alone). One barrier joining such
            # results to the IR's outputs gives them a use.
            barrier = op("stablehlo.optimization_barrier",
                         [r.type for r in results + unused_effect_results],
                         results + unused_effect_results)
            results = list(barrier.results)[:len(results)]
        return results


# IREE 3.13 fuses a tree of elementwise ops (and the reduction or copy consuming it) into one
# dispatch that binds every distinct buffer the tree reads; past its runtime's limit (32 on
# the CPU, 16 with CUDA) the module cannot load ("binding count 41 > 32": a jitted
# `sum(x * (i + 1) for i, x in enumerate(xs))` over 40 arrays, which JAX computes). Lowering
# counts the buffers each elementwise value's tree reads and materializes the operands of an
# op whose trees together read more than this many, behind a barrier IREE does not fuse across.
# On GPUs 12, not less: with 10 the barriers it placed made IREE fail on two programs (the GP
# example's float64 gradient: a stream-dominance error compiling; two complex solves in one
# program: "indirect buffer reference slot 0 is out range" at run time), which 12 compiles and
# runs right (2026-11-27, the GPU forms run on the CPU).
FUSION_INPUT_LIMIT = {"cpu": 24, "cuda": 12, "vulkan": 12}
# What IREE fuses into one elementwise dispatch besides P.ELEMENTWISE (shapes.py fills it).
FUSED_SHAPE_PRIMITIVES: set = set()


class _FanIn:
    """For each elementwise value of one lowered block, the buffers its fused tree reads."""

    def __init__(self, lowering: "Lowering") -> None:
        self.limit = None if lowering.dynamic else FUSION_INPUT_LIMIT.get(lowering.platform)
        self.reads: dict = {}

    def _of(self, value) -> frozenset:
        return self.reads.get(value) or frozenset((value,))

    def limit_inputs(self, eqn: Eqn, env: dict) -> None:
        """Puts barriers on ``eqn``'s operands when their trees together read too many buffers
        (a barrier on unknown shapes fails to compile: eager mode's modules get none)."""
        if self.limit is None:
            return
        operands = [a for a in eqn.inputs if not isinstance(a, Literal)]
        trees = [self._of(env[a]) for a in operands]
        if len(frozenset().union(*trees)) <= self.limit:
            return
        for atom, tree in zip(operands, trees):
            value = env[atom]
            if len(tree) > 1 and value.type.has_static_shape:
                barrier = fusion_barrier(value)
                env[atom] = barrier
                self.reads[barrier] = frozenset((barrier,))

    def record(self, eqn: Eqn, ins: Sequence, outs: Sequence) -> None:
        if self.limit is None:
            return
        if eqn.primitive in P.ELEMENTWISE or eqn.primitive in FUSED_SHAPE_PRIMITIVES:
            tree = frozenset().union(*(self._of(v) for a, v in zip(eqn.inputs, ins)
                                       if not isinstance(a, Literal)))
            for value in outs:
                self.reads[value] = tree


# Primitives IREE cannot compile for Vulkan on float64 (or complex128) operands, with why
# (their families register them; check_device_types raises with the reason).
VULKAN_NO_FLOAT64: dict = {}
VULKAN_NO_COMPLEX128: dict = {}


def check_device_types(primitive, avals: Sequence[ShapedArray], loc) -> None:
    """Raise a TypeError, naming the user's line ``loc``, when the Vulkan device being
    lowered for cannot compute ``primitive`` on ``avals``: an element type the device lacks
    (float64 on a device without shaderFloat64, ...; runtime/vulkan.py), or a float64 or
    complex128 function IREE cannot compile for Vulkan (VULKAN_NO_FLOAT64,
    VULKAN_NO_COMPLEX128). IREE would fail to compile the module, or compute wrong values.

    Example::

        check_device_types(math_functions.erf_p, [ShapedArray((3,), np.float64)], loc)
    """
    from pyree.runtime.device import vulkan_missing_feature
    from ..core.source import where
    dtypes = {np.dtype(a.dtype) for a in avals}
    for dtype in dtypes:
        missing = vulkan_missing_feature(dtype)
        if missing is not None:
            raise TypeError(f"{dtype.name} values cannot be computed on Vulkan here: "
                            f"{missing}{where(loc)}")
    for wide, refused in ((np.dtype(np.float64), VULKAN_NO_FLOAT64),
                          (np.dtype(np.complex128), VULKAN_NO_COMPLEX128)):
        why = refused.get(primitive)
        if why is not None and wide in dtypes:
            raise TypeError(f"{primitive.name} of {wide.name} values cannot be computed on "
                            f"Vulkan: {why} (compute it in float32, or on the CPU){where(loc)}")


def _location(eqn: Eqn):
    ir = mlir()
    loc = eqn.loc
    if loc is None:
        return ir.Location.unknown()
    return ir.Location.file(loc.filename, loc.line, loc.col)


class LoweredModule:
    """MLIR text of a module, with and without source locations."""

    __slots__ = ("text", "text_without_locations", "function")

    def __init__(self, text: str, text_without_locations: str, function: str) -> None:
        self.text = text
        self.text_without_locations = text_without_locations
        self.function = function


# IREE 3.13's conversion to streams finds no device for the values a loop carries (block
# arguments of scf.while / scf.for) and moves each one "to" the device before its first use
# in the body; that transfer becomes a copy of the carry every iteration (a while loop Newton
# iteration on 1M float32 copied its 4 MB carry into a transient each step: 9.8 ms, now 6.9,
# JAX 4.4-7.2 in the same hour). With the function's arguments and results declared on the
# module's one device (IREE names it @__device_0) the carries are known to live there and the
# copies go. (Declared on the function as a whole, ``stream.affinity``, did the same but
# failed to compile a scipy.special test's module: "failed to legalize unresolved target
# materialization".) Multi-device modules declare their own.
SINGLE_DEVICE_AFFINITY = "#hal.device.affinity<@__device_0>"
_LOOP_OPS = ("stablehlo.while", "scf.for", "scf.while")


def _declare_single_device(module) -> None:
    """Declare the arguments and results of each function of ``module`` that holds a loop on
    the module's one device (``iree.abi.affinity``)."""
    ir = mlir()
    for fn in module.body.operations:
        if (not _holds_loop(fn.operation) or "arg_attrs" in fn.attributes
                or "res_attrs" in fn.attributes):
            continue
        fn_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
        on_device = ir.DictAttr.get(
            {"iree.abi.affinity": ir.Attribute.parse(SINGLE_DEVICE_AFFINITY)})

        def declared(types):   # (tensors only: a caller's !hal.buffer is no value of the device)
            return ir.ArrayAttr.get([on_device if isinstance(t, ir.RankedTensorType)
                                     else ir.DictAttr.get({}) for t in types])
        fn.attributes["arg_attrs"] = declared(fn_type.inputs)
        fn.attributes["res_attrs"] = declared(fn_type.results)


def _holds_loop(operation) -> bool:
    found = []

    def visit(op):
        if op.name in _LOOP_OPS:
            found.append(op)
            return mlir().WalkResult.INTERRUPT
        return mlir().WalkResult.ADVANCE
    operation.walk(visit)
    return bool(found)


def _finish_module(module, function: str, single_device: bool = True) -> LoweredModule:
    op_ = module.operation
    if single_device:
        _declare_single_device(module)
    op_.verify()
    return LoweredModule(op_.get_asm(enable_debug_info=True),
                         op_.get_asm(enable_debug_info=False), function)


def lower_closed_ir(closed: ClosedIR, function: str = "main", platform: str = "cpu",
                    caller_storage: bool = False,
                    affinities: Optional[tuple[Sequence[int], Sequence[int]]] = None
                    ) -> LoweredModule:
    """A module whose function takes (consts..., inputs...) and returns the IR's outputs, for
    a device of ``platform``. With ``caller_storage`` it also takes one ``!hal.buffer`` per
    output, which the output is computed into, then one for every intermediate value (its
    size is the function's ``iree.abi.transients.size.constant`` reflection): see
    ``_into_caller_storage``.

    ``affinities`` = (argument devices, result devices) makes a multi-device module: each
    argument and result is declared on device ``runtime.device.device_symbol(i)``
    (``iree.abi.affinity = #hal.device.promise<@device_i>``), and the IR moves values between
    devices with ``spmd.transfer_p``. Compile it with ``multi_device_compile_flags``."""
    multi_device = _multi_device.set(affinities is not None)
    try:
        with _lowering_for(platform):
            return _lower_closed_ir(closed, function, caller_storage, affinities)
    finally:
        _multi_device.reset(multi_device)


def _affinity_attributes(devices: Sequence[int]):
    """One ``{iree.abi.affinity = #hal.device.promise<@device_i>}`` per entry of ``devices``."""
    ir = mlir()
    return ir.ArrayAttr.get([ir.DictAttr.get({"iree.abi.affinity": device_promise(i)})
                             for i in devices])


def device_promise(index: int):
    """``#hal.device.promise<@device_i>``: the ``index``-th device of a multi-device module."""
    from pyree.runtime.device import device_symbol
    return mlir().Attribute.parse(f"#hal.device.promise<@{device_symbol(index)}>")


# How many element operations an equation of a primitive does, where that is more than the
# size of its results (jit.estimate_work, which picks the driver a call runs on): Eqn -> int,
# registered by the families (a convolution's multiply-adds: windows.py).
WORK_ESTIMATES: dict[Any, Callable[[Eqn], int]] = {}


# Rewrites of the IR before it is lowered, IR -> IR, installed by the modules that define them
# with their place in the order: while loops rotated (loop_rotation.py, 10), then gathers moved
# into the elementwise expressions they read (gather_scatter.sink_gathers, 20). What nothing
# reads is pruned after them.
REWRITES_BEFORE_LOWERING: list[tuple[int, Callable[[IR], IR]]] = []


def rewrite_before_lowering(position: int, rewrite: Callable[[IR], IR]) -> None:
    """Install ``rewrite`` (IR -> IR) to run on every IR before it is lowered, ordered by
    ``position``.

    Example: ``rewrite_before_lowering(10, rotate_loops)``"""
    REWRITES_BEFORE_LOWERING.append((position, rewrite))
    REWRITES_BEFORE_LOWERING.sort(key=lambda entry: entry[0])


def _as_lowered(ir: IR) -> IR:
    """``ir`` as it is lowered: the REWRITES_BEFORE_LOWERING in order, then what nothing reads
    pruned."""
    from ..interpreters.prune import prune_ir
    for _, rewrite in REWRITES_BEFORE_LOWERING:
        ir = rewrite(ir)
    return prune_ir(ir)


def _lower_closed_ir(closed: ClosedIR, function: str, caller_storage: bool,
                     affinities: Optional[tuple] = None) -> LoweredModule:
    ir_module = mlir()
    from iree.compiler.dialects import func

    ir = _as_lowered(closed.ir)
    with mlir_context(), ir_module.Location.unknown():
        module = ir_module.Module.create()
        arg_types = [tensor_type(v.aval) for v in list(ir.const_vars) + list(ir.in_vars)]
        n_tensors = len(arg_types)
        out_types = [tensor_type(a.aval) for a in ir.outs]
        if caller_storage:
            arg_types += [ir_module.Type.parse("!hal.buffer")] * (len(out_types) + 1)
        with ir_module.InsertionPoint(module.body):
            fn = func.FuncOp(function, ir_module.FunctionType.get(arg_types, out_types))
            if affinities is not None:
                arg_devices, out_devices = affinities
                fn.arg_attrs = _affinity_attributes(arg_devices)
                fn.res_attrs = _affinity_attributes(out_devices)
            block = fn.add_entry_block()
            with ir_module.InsertionPoint(block):
                lowering = Lowering(dynamic=False)
                tensors = list(block.arguments)[:n_tensors]
                lowering._input_views.update(tensors)
                with _settled_products():
                    results = lowering.lower_ir(ir, tensors)
                if caller_storage:
                    *storage, scratch = list(block.arguments)[n_tensors:]
                    results = [_into_caller_storage(r, buffer, scratch)
                               for r, buffer in zip(results, storage)]
                func.ReturnOp(results)
        return _finish_module(module, function, single_device=affinities is None)


def takes_caller_storage(module: LoweredModule) -> bool:
    """Whether a lowered module may take caller storage (``lower_closed_ir``): a straight-line
    program. One with loops or conditionals waits on the host for each condition anyway, and
    with the annotations IREE 3.13 failed to compile a scan for CUDA ("failed to distribute")
    and float64 sines ("explicit execution regions must only contain explicit ops"); one calling
    the host (callbacks) is refused ("function contains function calls, which are not
    supported by EmplaceTransientsPass")."""
    text = module.text_without_locations
    return not any(construct in text for construct in (
        "stablehlo.while", "stablehlo.if", "stablehlo.case", " call @"))


def _into_caller_storage(value, storage, scratch):
    """``value`` computed into the caller's buffer ``storage``, the intermediate values it
    needs placed in the caller's buffer ``scratch``.

    IREE 3.13's CUDA runtime waits on the host, before it returns, for the work that a queue
    allocation or deallocation is ordered after ("The CUDA HAL is not currently asynchronous",
    cuda_device.c): a function allocating its results and intermediates that way returned only
    once the GPU had finished (three 8192^2 matmuls: returned after 44 ms of 44 ms, H100). With
    both in the caller's buffers the function only queues its work. (Unsigned values go through
    as signless bits: IREE has no rule for a hal.tensor.alias of unsigned ones, "failed to
    legalize operation 'hal.tensor.alias'".)"""
    ir = mlir()
    original_type = value.type
    value = signless(value)
    tensor = ir.RankedTensorType(value.type)
    dims = [op("tensor.dim", [ir.IndexType.get()], [value, index_constant(axis)]).result
            for axis, size in enumerate(tensor.shape) if ir.ShapedType.is_dynamic_size(size)]
    aliased = ir.Operation.create(
        "hal.tensor.alias", results=[value.type], operands=[value, *dims, storage],
        attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([1, len(dims), 1, 0])}
    ).result
    placed = ir.Operation.create("hal.tensor.transients", results=[value.type],
                                 operands=[aliased, *dims, scratch]).result
    return bitcast_to(placed, original_type)


def lower_for_export(functions: Sequence[tuple[str, ClosedIR, dict[str, str]]],
                     platform: str = "cpu") -> LoweredModule:
    """One module of several functions ``(name, closed IR, reflection)`` that take only their
    inputs: the IRs' constants (closed-over weights) are embedded, so the module runs alone.
    ``reflection`` (string -> string) becomes the function's ``iree.reflection`` attributes,
    which IREE's runtime reports for each function of a loaded module."""
    with _lowering_for(platform):
        return _lower_for_export(functions)


def _lower_for_export(functions: Sequence[tuple[str, ClosedIR, dict[str, str]]]) -> LoweredModule:
    ir_module = mlir()
    from iree.compiler.dialects import func

    with mlir_context(), ir_module.Location.unknown():
        module = ir_module.Module.create()
        for name, closed, reflection in functions:
            ir = _as_lowered(closed.ir)
            arg_types = [tensor_type(v.aval) for v in ir.in_vars]
            out_types = [tensor_type(a.aval) for a in ir.outs]
            with ir_module.InsertionPoint(module.body):
                fn = func.FuncOp(name, ir_module.FunctionType.get(arg_types, out_types))
                fn.attributes["iree.reflection"] = ir_module.DictAttr.get(
                    {k: ir_module.StringAttr.get(v) for k, v in reflection.items()})
                block = fn.add_entry_block()
                with ir_module.InsertionPoint(block):
                    consts = [constant(np.asarray(value), var.aval)
                              for var, value in zip(ir.const_vars, closed.consts)]
                    lowering = Lowering(dynamic=False)
                    lowering._input_views.update(block.arguments)
                    with _settled_products():
                        results = lowering.lower_ir(ir, consts + list(block.arguments))
                    func.ReturnOp(results)
        return _finish_module(module, functions[0][0] if functions else "")


def lower_primitive_dynamic(primitive, avals_in: Sequence[ShapedArray],
                            avals_out: Sequence[ShapedArray], params: dict,
                            dyn_params: dict[str, int], platform: str = "cpu",
                            caller_storage: bool = False, static_minor: int = 0) -> LoweredModule:
    """One primitive as a module whose tensors have unknown dimensions (for eager mode).

    ``dyn_params`` maps a param name to how many i64 values it contributes; they follow the
    tensor arguments in the function signature, in that order. With ``caller_storage``, then a
    ``!hal.buffer`` per output and one for intermediates (see ``lower_closed_ir``).
    ``static_minor``: tensors of rank 2 or more whose last dimension has this size keep it
    static (eager elementwise kernels on GPUs, see eager._apply_elementwise).
    """
    if platform == "vulkan":
        check_device_types(primitive, list(avals_in) + list(avals_out), None)
    minor = _static_minor.set(static_minor)
    try:
        with _lowering_for(platform):
            return _lower_primitive_dynamic(primitive, avals_in, avals_out, params, dyn_params,
                                            caller_storage)
    finally:
        _static_minor.reset(minor)


def _lower_primitive_dynamic(primitive, avals_in: Sequence[ShapedArray],
                             avals_out: Sequence[ShapedArray], params: dict,
                             dyn_params: dict[str, int],
                             caller_storage: bool = False) -> LoweredModule:
    ir_module = mlir()
    from iree.compiler.dialects import func

    with mlir_context(), ir_module.Location.unknown():
        module = ir_module.Module.create()
        i64 = ir_module.IntegerType.get_signless(64)
        n_ints = sum(dyn_params.values())
        arg_types = [tensor_type(a, True) for a in avals_in] + [i64] * n_ints
        out_types = [tensor_type(a, True) for a in avals_out]
        if caller_storage:
            arg_types += [ir_module.Type.parse("!hal.buffer")] * (len(out_types) + 1)
        with ir_module.InsertionPoint(module.body):
            fn = func.FuncOp("main", ir_module.FunctionType.get(arg_types, out_types))
            block = fn.add_entry_block()
            with ir_module.InsertionPoint(block):
                args = list(block.arguments)
                tensors = args[:len(avals_in)]
                ints = args[len(avals_in):len(avals_in) + n_ints]
                dyn, pos = {}, 0
                for name, count in dyn_params.items():
                    dyn[name] = ints[pos:pos + count]
                    pos += count
                ctx = RuleContext(Lowering(dynamic=True), avals_in, avals_out, dyn)
                outs = apply_rule(lowering_rules[primitive], primitive, ctx, tensors, params)
                if caller_storage:
                    *storage, scratch = args[len(avals_in) + n_ints:]
                    outs = [_into_caller_storage(o, buffer, scratch)
                            for o, buffer in zip(outs, storage)]
                func.ReturnOp(outs)
        return _finish_module(module, "main")


# -- dynamic-shape helpers -------------------------------------------------------------------------

def index_constant(value: int):
    ir = mlir()
    index = ir.IndexType.get()
    return op("arith.constant", [index], [], {"value": ir.IntegerAttr.get(index, value)}).result


def i64_constant(value: int):
    ir = mlir()
    i64 = ir.IntegerType.get_signless(64)
    return op("arith.constant", [i64], [], {"value": ir.IntegerAttr.get(i64, value)}).result


def signless(value):
    """``value`` with unsigned elements bit-cast to signless ones (no-op for other types).

    IREE converts the unsigned element types of StableHLO ops only: a tensor-dialect op
    (tensor.dim, insert_slice, ...) on a ``tensor<?xui8>`` fails to legalize."""
    ir = mlir()
    t = ir.RankedTensorType(value.type)
    et = t.element_type
    if not (isinstance(et, ir.IntegerType) and et.is_unsigned):
        return value
    signless_t = ir.RankedTensorType.get(t.shape, ir.IntegerType.get_signless(et.width))
    return hlo("bitcast_convert", signless_t, value)


def bitcast_to(value, type_):
    """Undo ``signless``: ``value`` bit-cast back to ``type_`` if its type differs."""
    return value if value.type == type_ else hlo("bitcast_convert", type_, value)


def dim_i64(value, axis: int):
    """The size of dimension ``axis`` of a tensor value, as an i64 scalar."""
    ir = mlir()
    d = op("tensor.dim", [ir.IndexType.get()], [signless(value), index_constant(axis)]).result
    return op("arith.index_cast", [ir.IntegerType.get_signless(64)], [d]).result


def shape_tensor(dims: Sequence):
    """A ``tensor<N x i64>`` from i64 scalars (or ints)."""
    ir = mlir()
    i64 = ir.IntegerType.get_signless(64)
    values = [i64_constant(d) if isinstance(d, (int, np.integer)) else d for d in dims]
    return op("tensor.from_elements", [ir.RankedTensorType.get([len(values)], i64)], values).result


def shape_of(value, rank: int):
    return shape_tensor([dim_i64(value, i) for i in range(rank)])


def arith(name: str, a, b):
    return op("arith." + name, [a.type], [a, b]).result


# -- the rule table, and helpers the rules build on ---------------------------------------------

lowering_rules: dict[Any, Callable] = {}


def broadcast_to_result(ctx: RuleContext, operands: Sequence, avals: Sequence[ShapedArray],
                        out_aval: ShapedArray, keep_scalar: Sequence[bool] = ()) -> list:
    """Broadcast rank-0 operands of an elementwise op to the result's shape."""
    if out_aval.shape == ():
        return list(operands)
    full = next((v for v, a in zip(operands, avals) if a.shape != ()), None)
    results = []
    for i, (v, a) in enumerate(zip(operands, avals)):
        if a.shape == () and not (i < len(keep_scalar) and keep_scalar[i]):
            target = tensor_type(out_aval.update(dtype=a.dtype), ctx.dynamic)
            if ctx.dynamic:
                v = op("stablehlo.dynamic_broadcast_in_dim", [target],
                       [v, shape_of(full, out_aval.ndim)],
                       {"broadcast_dimensions": i64_array([])}).result
            else:
                v = hlo("broadcast_in_dim", target, v, broadcast_dimensions=i64_array([]))
        results.append(v)
    return results


_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_I64, _BOOL = np.dtype(np.int64), np.dtype(np.bool_)


class ElementwiseOps:
    """Elementwise operations on tensors of one shape, for rules written as formulas (those of
    float64_math.py). ``wrap`` gives a ``Value``, which has Python's arithmetic, comparison and
    bitwise operators; a Python number in an expression becomes a constant of the other
    operand's dtype."""

    def __init__(self, ctx: RuleContext, like, shape: tuple) -> None:
        self.ctx, self.like, self.shape = ctx, like, shape  # like: any tensor of this shape
        self._constants: dict = {}

    def wrap(self, value, dtype) -> "Value":
        return Value(self, value, np.dtype(dtype))

    def type(self, dtype: np.dtype):
        return tensor_type(ShapedArray(self.shape, dtype), self.ctx.dynamic)

    def constant(self, number, dtype: np.dtype) -> "Value":
        key = (dtype.str, np.asarray(number, dtype).tobytes())  # tells -0.0 from 0.0
        value = self._constants.get(key)
        if value is None:
            value = self._constants[key] = self.wrap(
                _splat(self.ctx, number, ShapedArray(self.shape, dtype), self.like), dtype)
        return value

    def float(self, number: float) -> "Value":
        return self.constant(number, _F64)

    def int(self, number: int) -> "Value":
        return self.constant(number, _I64)

    def operand(self, x, dtype: np.dtype) -> "Value":
        """``x`` as a Value of ``dtype`` (a Python number becomes a constant)."""
        if isinstance(x, Value):
            if x.dtype != dtype:
                raise TypeError(f"operands of dtypes {x.dtype} and {dtype} mixed")
            return x
        return self.constant(x, dtype)

    def apply(self, name: str, dtype: np.dtype, *values: "Value") -> "Value":
        return self.wrap(hlo(name, self.type(dtype), *(v.value for v in values)), dtype)

    def compare(self, direction: str, a: "Value", b) -> "Value":
        b = self.operand(b, a.dtype)
        return self.wrap(_compare(self.ctx, a.value, b.value, direction,
                                  ShapedArray(self.shape, a.dtype)), _BOOL)

    def select(self, pred: "Value", on_true, on_false) -> "Value":
        dtype = on_true.dtype if isinstance(on_true, Value) else on_false.dtype
        return self.apply("select", dtype, pred, self.operand(on_true, dtype),
                          self.operand(on_false, dtype))

    def abs(self, x: "Value") -> "Value":
        return self.apply("abs", x.dtype, x)

    def floor(self, x: "Value") -> "Value":
        return self.apply("floor", x.dtype, x)

    def round_even(self, x: "Value") -> "Value":
        return self.apply("round_nearest_even", x.dtype, x)

    def max(self, a: "Value", b) -> "Value":
        return self.apply("maximum", a.dtype, a, self.operand(b, a.dtype))

    def min(self, a: "Value", b) -> "Value":
        return self.apply("minimum", a.dtype, a, self.operand(b, a.dtype))

    def clamp(self, x: "Value", lo, hi) -> "Value":
        return self.max(self.min(x, hi), lo)

    def fma(self, a: "Value", b, c) -> "Value":
        """``a * b + c`` rounded once."""
        b, c = self.operand(b, a.dtype), self.operand(c, a.dtype)
        return self.wrap(op("math.fma", [self.type(a.dtype)], [a.value, b.value, c.value]).result,
                         a.dtype)

    def barrier(self, x: "Value") -> "Value":
        """``x``, which IREE may not fuse or analyse across."""
        return self.wrap(op("stablehlo.optimization_barrier", [self.type(x.dtype)],
                            [x.value]).result, x.dtype)

    def bits(self, x: "Value") -> "Value":
        """float64 -> int64 bit cast."""
        return self.apply("bitcast_convert", _I64, x)

    def from_bits(self, x: "Value") -> "Value":
        return self.apply("bitcast_convert", _F64, x)

    def to_float(self, x: "Value") -> "Value":
        return self.apply("convert", _F64, x)

    def to_int(self, x: "Value") -> "Value":
        """float64 -> int64, truncating."""
        return self.apply("convert", _I64, x)

    def if_any(self, pred: "Value", operands: Sequence["Value"], dtypes: Sequence,
               then_fn: Callable, else_fn: Callable) -> list:
        """``then_fn(ops, *operands)`` if any element of ``pred`` is true, else
        ``else_fn(ops, *operands)``: a cheaper else_fn for the elements most calls have, when
        then_fn (right for all elements) is slow. Each returns Values of ``dtypes`` and gets
        ops of its own (its constants live in its branch); they use no Values from outside but
        ``operands``.

        Only eager mode's one-primitive modules branch. In a jit program then_fn runs: a
        branch there splits the program's dispatches where the host reads the predicate, and
        IREE 3.13 miscompiles branches that hand back outer values inside loops (see
        own_buffers); with static shapes the table lookups that make then_fn slow
        eagerly are cheap anyway."""
        ir = mlir()
        if not self.ctx.dynamic:
            return list(then_fn(self, *operands))
        bool_scalar = ShapedArray((), _BOOL)
        (any_true,) = _reduce(self.ctx, [pred.value], [scalar_like(False, _BOOL)], [_BOOL],
                              list(range(len(self.shape))), [bool_scalar],
                              lambda acc, v: [hlo("or", tensor_type(bool_scalar), acc, v)])
        dtypes = [np.dtype(d) for d in dtypes]
        if_op = op("stablehlo.if", [self.type(d) for d in dtypes], [any_true], regions=2)
        for region, fn in zip(if_op.regions, (then_fn, else_fn)):
            block = ir.Block.create_at_start(region, [])
            with ir.InsertionPoint(block):
                outs = fn(ElementwiseOps(self.ctx, self.like, self.shape), *operands)
                op("stablehlo.return", [], own_buffers([v.value for v in outs], block, False))
        return [self.wrap(r, d) for r, d in zip(if_op.results, dtypes)]

    def exp(self, x: "Value") -> "Value":
        return self.wrap(exponential(self.ctx, x.value, ShapedArray(self.shape, x.dtype)), x.dtype)

    def log(self, x: "Value") -> "Value":
        return self.wrap(logarithm(self.ctx, x.value, ShapedArray(self.shape, x.dtype)), x.dtype)

    def sqrt(self, x: "Value") -> "Value":
        return self.apply("sqrt", x.dtype, x)

    def expm1(self, x: "Value") -> "Value":
        """float64 only (IREE's own is exp(x) - 1)."""
        return self.wrap(_expm1_f64(self.ctx, x.value, ShapedArray(self.shape, _F64)), _F64)

    def log1p(self, x: "Value") -> "Value":
        """float64 only (IREE's own is log(1 + x))."""
        return self.wrap(_log1p_f64(self.ctx, x.value, ShapedArray(self.shape, _F64)), _F64)

    def take(self, table: Sequence[int], index: "Value") -> "Value":
        """``table[index]`` for a constant int64 table (a gather; index clamped into it)."""
        ir = mlir()
        table_value = constant(np.asarray(table, np.int64), ShapedArray((len(table),), _I64))
        numbers = ir.Attribute.parse(
            "#stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], "
            f"index_vector_dim = {len(self.shape)}>")
        return self.wrap(op("stablehlo.gather", [self.type(_I64)], [table_value, index.value],
                            {"dimension_numbers": numbers,
                             "slice_sizes": i64_array([1])}).result, _I64)


class Value:
    """A tensor of an ``ElementwiseOps``, with Python's operators (see there)."""

    __slots__ = ("ops", "value", "dtype")
    __hash__ = None  # == builds a comparison

    def __init__(self, ops: ElementwiseOps, value, dtype: np.dtype) -> None:
        self.ops, self.value, self.dtype = ops, value, dtype

    def _binary(self, name: str, other, reflected: bool = False) -> "Value":
        other = self.ops.operand(other, self.dtype)
        a, b = (other, self) if reflected else (self, other)
        return self.ops.apply(name, self.dtype, a, b)

    def __add__(self, other): return self._binary("add", other)
    def __radd__(self, other): return self._binary("add", other, True)
    def __sub__(self, other): return self._binary("subtract", other)
    def __rsub__(self, other): return self._binary("subtract", other, True)
    def __mul__(self, other): return self._binary("multiply", other)
    def __rmul__(self, other): return self._binary("multiply", other, True)
    def __truediv__(self, other): return self._binary("divide", other)
    def __rtruediv__(self, other): return self._binary("divide", other, True)
    # Integer // and % truncate (as C's): the formulas use them on non-negative integers only.
    def __floordiv__(self, other): return self._binary("divide", other)
    def __mod__(self, other): return self._binary("remainder", other)
    def __and__(self, other): return self._binary("and", other)
    def __rand__(self, other): return self._binary("and", other, True)
    def __or__(self, other): return self._binary("or", other)
    def __ror__(self, other): return self._binary("or", other, True)
    def __xor__(self, other): return self._binary("xor", other)
    def __lshift__(self, other): return self._binary("shift_left", other)
    def __rshift__(self, other): return self._binary("shift_right_arithmetic", other)
    def __neg__(self): return self.ops.apply("negate", self.dtype, self)
    def __invert__(self): return self.ops.apply("not", self.dtype, self)
    def __lt__(self, other): return self.ops.compare("LT", self, other)
    def __le__(self, other): return self.ops.compare("LE", self, other)
    def __gt__(self, other): return self.ops.compare("GT", self, other)
    def __ge__(self, other): return self.ops.compare("GE", self, other)
    def __eq__(self, other): return self.ops.compare("EQ", self, other)
    def __ne__(self, other): return self.ops.compare("NE", self, other)


def _complex128_formula(ctx: RuleContext, formula: Callable, *operands):
    """Lower an elementwise complex128 op by ``formula(ops, re0, im0, re1, im1, ...)``
    returning (re, im) (float64_math.py)."""
    ops = ElementwiseOps(ctx, operands[0], ctx.avals_out[0].shape)
    parts = []
    for v in operands:
        parts += [ops.apply(part, _F64, ops.wrap(v, np.dtype(np.complex128)))
                  for part in ("real", "imag")]
    if not ctx.dynamic:
        # IREE 3.13's dispatch formation at O3 fails ("operand #1 does not dominate this use")
        # on some programs where several of these formulas share their operand's parts (CSE
        # merges the formulas' common subexpressions): a barrier per formula keeps them apart.
        # Its extra operand, a number no other barrier of this module has, keeps CSE from
        # merging the barriers themselves.
        tag = scalar_like(ctx.lowering.new_tag(), _I64)
        barrier = op("stablehlo.optimization_barrier", [p.value.type for p in parts] + [tag.type],
                     [p.value for p in parts] + [tag])
        parts = [ops.wrap(r, _F64) for r in list(barrier.results)[:-1]]
    re, im = formula(ops, *parts)
    return hlo("complex", ctx.out_type(), re.value, im.value)


def _float64_formula(ctx: RuleContext, formula: Callable, *operands, shape=None):
    """Lower an elementwise float64 op by ``formula(ops, *values)`` (float64_math.py);
    operands have the result's shape (or ``shape``)."""
    ops = ElementwiseOps(ctx, operands[0], ctx.avals_out[0].shape if shape is None else shape)
    return formula(ops, *(ops.wrap(v, _F64) for v in operands)).value


def unary_op_rule(name: str) -> Callable:
    """The lowering rule that is StableHLO's op ``name`` of the operand.

    Example: ``lowering_rules[neg_p] = unary_op_rule("negate")``"""
    def rule(ctx: RuleContext, x):
        return hlo(name, ctx.out_type(), x)
    return rule


# IREE's llvm-cpu computes float64 expm1 and log1p as exp(x) - 1 and log(1 + x) (all
# precision lost for |x| << 1: expm1(1e-20) came out as 0), and has no float64 tanh at all (it
# links against a libm symbol that is not there). For float64 these rules use exp and log,
# which are accurate, with the classic corrections that cancel the rounding error of 1 + x.

def exponential(ctx: RuleContext, x, aval: ShapedArray):
    """``exp`` of ``x`` (of ``aval``): float64 on Vulkan from arithmetic (float64_math.exp;
    see VULKAN_NO_FLOAT64), else IREE's."""
    if aval.dtype == _F64 and ctx.lowering.platform == "vulkan":
        return _float64_formula(ctx, float64_math.exp, x, shape=aval.shape)
    return hlo("exponential", tensor_type(aval, ctx.dynamic), x)


def logarithm(ctx: RuleContext, x, aval: ShapedArray):
    """``log`` of ``x`` (of ``aval``), as ``exponential``."""
    if aval.dtype == _F64 and ctx.lowering.platform == "vulkan":
        return _float64_formula(ctx, float64_math.log, x, shape=aval.shape)
    return hlo("log", tensor_type(aval, ctx.dynamic), x)


def _expm1_f64(ctx: RuleContext, x, aval: ShapedArray):
    # Kahan: with u = exp(x) rounded, (u - 1) * x / log(u) is accurate whenever u != 1.
    t = tensor_type(aval, ctx.dynamic)
    u = exponential(ctx, x, aval)
    u_minus_1 = hlo("subtract", t, u, _splat(ctx, 1.0, aval, x))
    corrected = hlo("multiply", t, u_minus_1, hlo("divide", t, x, logarithm(ctx, u, aval)))
    # u == 1: |x| is below the rounding of 1, and expm1 x = x. u == inf (inf / inf) or u == 0
    # (x / log 0 = -0): the correction breaks down, and u - 1 is already exact.
    tiny = _compare(ctx, u, _splat(ctx, 1.0, aval, x), "EQ", aval)
    saturated = hlo("or", tensor_type(aval.update(dtype=np.dtype(np.bool_)), ctx.dynamic),
                    _compare(ctx, u, _splat(ctx, np.inf, aval, x), "EQ", aval),
                    _compare(ctx, u_minus_1, _splat(ctx, -1.0, aval, x), "EQ", aval))
    return hlo("select", t, tiny, x, hlo("select", t, saturated, u_minus_1, corrected))


def _log1p_f64(ctx: RuleContext, x, aval: ShapedArray):
    # Goldberg: with u = 1 + x rounded, log(u) * x / (u - 1) is accurate whenever u != 1.
    t = tensor_type(aval, ctx.dynamic)
    u = hlo("add", t, x, _splat(ctx, 1.0, aval, x))
    corrected = hlo("multiply", t, logarithm(ctx, u, aval),
                    hlo("divide", t, x, hlo("subtract", t, u, _splat(ctx, 1.0, aval, x))))
    tiny = _compare(ctx, u, _splat(ctx, 1.0, aval, x), "EQ", aval)
    infinite = _compare(ctx, u, _splat(ctx, np.inf, aval, x), "EQ", aval)
    return hlo("select", t, tiny, x, hlo("select", t, infinite, u, corrected))


def float32_formula(ctx: RuleContext, formula: Callable, x):
    """Lower a unary op of float32 (or a narrower float, computed in float32 as XLA does) by
    ``formula(ops, x)`` (float32_math.py)."""
    dtype = ctx.avals_in[0].dtype
    ops = ElementwiseOps(ctx, x, ctx.avals_out[0].shape)
    value = ops.wrap(x, dtype)
    if dtype != _F32:
        value = ops.apply("convert", _F32, value)
    result = formula(ops, value)
    return (result if dtype == _F32 else ops.apply("convert", dtype, result)).value


def _splat(ctx: RuleContext, value, like_aval: ShapedArray, like_value):
    """``value`` as a constant of ``like_aval``'s shape (dynamic-shape aware)."""
    scalar = scalar_like(value, like_aval.dtype)
    if like_aval.shape == ():
        return scalar
    return broadcast_to_result(ctx, [scalar, like_value],
                               [like_aval.update(shape=()), like_aval], like_aval)[0]


def division_rule(name: str) -> Callable:
    """The lowering rule of StableHLO's ``divide`` or ``remainder`` (``name``), with XLA's
    results where the hardware would trap (integers: see below).

    Example: ``lowering_rules[div_p] = division_rule("divide")``"""
    def rule(ctx: RuleContext, x, y):
        out = ctx.avals_out[0]
        x, y = broadcast_to_result(ctx, [x, y], ctx.avals_in, out)
        t = ctx.out_type()
        if name == "remainder" and out.dtype == _F64:
            return _float64_formula(ctx, float64_math.rem, x, y)
        if out.dtype.kind not in "iu":
            return hlo(name, t, x, y)
        # Integer division by zero (and INT_MIN / -1) traps on x86 and would kill the process;
        # give them XLA's defined results instead: x / 0 = -1, x % 0 = x, MIN / -1 = MIN.
        like = out
        zero = _splat(ctx, 0, like, x)
        is_zero = _compare(ctx, y, zero, "EQ", like)
        bad = is_zero
        if out.dtype.kind == "i":
            imin = _splat(ctx, np.iinfo(out.dtype).min, like, x)
            minus_one = _splat(ctx, -1, like, x)
            overflow = hlo("and", tensor_type(like.update(dtype=np.bool_), ctx.dynamic),
                           _compare(ctx, x, imin, "EQ", like), _compare(ctx, y, minus_one, "EQ", like))
            bad = hlo("or", tensor_type(like.update(dtype=np.bool_), ctx.dynamic), is_zero, overflow)
        safe_y = hlo("select", t, bad, _splat(ctx, 1, like, x), y)
        result = hlo(name, t, x, safe_y)
        if name == "divide":
            result = hlo("select", t, is_zero, _splat(ctx, -1 if out.dtype.kind == "i" else
                                                      np.iinfo(out.dtype).max, like, x), result)
            if out.dtype.kind == "i":
                result = hlo("select", t, overflow, imin, result)
        else:
            result = hlo("select", t, is_zero, x, result)
            if out.dtype.kind == "i":
                result = hlo("select", t, overflow, zero, result)
        return result
    return rule


def _compare_type(dtype: np.dtype) -> str:
    if P.kind(dtype) in "fc":
        return "FLOAT"
    if dtype.kind == "i":
        return "SIGNED"
    return "UNSIGNED"


def _compare(ctx: RuleContext, x, y, direction: str, aval: ShapedArray):
    ir = mlir()
    result = tensor_type(aval.update(dtype=np.bool_), ctx.dynamic)
    attrs = {
        "comparison_direction": ir.Attribute.parse(f"#stablehlo<comparison_direction {direction}>"),
        "compare_type": ir.Attribute.parse(f"#stablehlo<comparison_type {_compare_type(aval.dtype)}>"),
    }
    return op("stablehlo.compare", [result], [x, y], attrs).result


def _from_data_tiled_product(value, depth: int = 2) -> bool:
    """Whether ``value`` is a data-tiled dot_general's result, directly or through
    elementwise ops (what IREE fuses into the product's dispatch)."""
    from pyree.runtime.compile import DATA_TILING_MARK
    owner = getattr(value, "owner", None)
    operation = getattr(owner, "operation", None)
    if operation is None:
        return False
    if operation.name == "stablehlo.dot_general":
        return DATA_TILING_MARK in operation.attributes
    if depth == 0 or operation.name not in _FUSIBLE_ELEMENTWISE:
        return False
    return any(_from_data_tiled_product(v, depth - 1) for v in operation.operands)


def _broadcasts_computed(value, depth: int = 4) -> bool:
    """Whether ``value`` comes, through ops IREE fuses, from a broadcast of a computed,
    non-scalar value (a row's reduction spread along the row)."""
    owner = getattr(value, "owner", None)
    operation = getattr(owner, "operation", None)
    if operation is None or depth == 0:
        return False
    name = operation.name
    if name == "stablehlo.broadcast_in_dim":
        source = operation.operands[0]
        return (isinstance(source, mlir().OpResult)
                and mlir().RankedTensorType(source.type).rank > 0)
    if name not in _FUSIBLE_ELEMENTWISE and name not in ("stablehlo.reshape",
                                                          "stablehlo.transpose"):
        return False
    return any(_broadcasts_computed(v, depth - 1) for v in operation.operands)


_FUSIBLE_ELEMENTWISE = frozenset(f"stablehlo.{name}" for name in (
    "add", "subtract", "multiply", "divide", "select", "maximum", "minimum", "negate",
    "convert", "broadcast_in_dim", "tanh", "exponential", "logistic"))


# Primitives whose result IREE may make a view of their first operand's storage (their families
# fill it: shapes.py, arithmetic.py).
VIEW_PRIMITIVES: set = set()


def _concatenate(result_type, xs: Sequence, dimension: int):
    return op("stablehlo.concatenate", [result_type], xs, {"dimension": i64_attr(dimension)}).result


# -- reductions (for reductions.py, gather_scatter, sorting and eager mode) ------------------

def _reduce(ctx: RuleContext, operands: Sequence, inits: Sequence, dtypes_: Sequence[np.dtype],
            axes: Sequence[int], out_avals: Sequence[ShapedArray], body: Callable):
    """``stablehlo.reduce`` whose region computes ``body(*accumulators, *elements)``."""
    ir = mlir()
    result_types = [tensor_type(a, ctx.dynamic) for a in out_avals]
    reduce_op = op("stablehlo.reduce", result_types, list(operands) + list(inits),
                   {"dimensions": i64_array(axes)}, regions=1)
    scalar_types = [tensor_type(ShapedArray((), d)) for d in dtypes_]
    block = ir.Block.create_at_start(reduce_op.regions[0], scalar_types + scalar_types)
    with ir.InsertionPoint(block):
        results = body(*block.arguments)
        op("stablehlo.return", [], results)
    return list(reduce_op.results)


# Float sums of long axes are summed in blocks: a sum of n floats accumulated one after the
# other errs by up to ~n ulps; blocks of b then n / b values err by b + n / b. Along the last
# (contiguous) axis IREE keeps a vector of partial sums, so only long ones need it (a float32
# mean of 100,000 values was 1.3e-5 off, JAX's 4e-7); below 2048 the blocks cost more than
# they give: the row sums of a 4096 x 1000 log-softmax in blocks of 25 kept IREE from fusing
# the exponentials into the sum (2.3 -> 4.4 ms), and unblocked rows of 1000 (normal + 3) err
# by 1.0e-6 (blocked 4.5e-7, JAX 4.8e-7), of 2000 5.8e-7. Along any other axis each output is one
# serial sum, so shorter ones do too: the float32 std over 400 rows of 1000 + 0.01 * noise was
# 3.7e-3 off (NumPy's error; JAX 1.0e-4), 2.5e-4 in blocks of 20, at the same speed here.
# Lengths without a divisor near their square root stay in one stage: splitting off the
# remainder (a slice, a third reduction and an add) doubled a jitted sum of 100,003 floats
# (16 -> 33 us) and made eager sums 3-7x slower here.
BLOCKED_SUM_MIN = 2048
BLOCKED_STRIDED_SUM_MIN = 64


def sum_block(n: int, last_axis: bool = True) -> Optional[int]:
    """The block length for summing ``n`` floats in two stages: a divisor of ``n`` near its
    square root, or None when ``n`` is short or has no such divisor. ``last_axis``: whether
    the axis is the array's last (contiguous) one.

    Example: ``sum_block(100_000)`` is 250, ``sum_block(400)`` None, ``sum_block(400,
    last_axis=False)`` 20."""
    minimum, smallest = (BLOCKED_SUM_MIN, 16) if last_axis else (BLOCKED_STRIDED_SUM_MIN, 8)
    if n < minimum:
        return None
    root = math.isqrt(n)
    for delta in range(0, root - smallest + 1):
        for b in (root - delta, root + delta):
            if smallest <= b <= n // smallest and n % b == 0:
                return b
    return None


def merged_reduction_axes(shape: tuple, axes: tuple) -> tuple[tuple, tuple]:
    """The same reduction over fewer axes: each run of adjacent reduced axes as one axis of a
    reshaped (row-major) view, so that a full sum of a 400x500 array is one sum of 200,000
    values, blocked as such.

    Example: ``merged_reduction_axes((4, 5, 6), (1, 2))`` is ``((4, 30), (1,))``."""
    shape_out: list = []
    axes_out: list = []
    for i, d in enumerate(shape):
        if i in axes and i - 1 in axes:
            shape_out[-1] *= d
        else:
            if i in axes:
                axes_out.append(len(shape_out))
            shape_out.append(d)
    return tuple(shape_out), tuple(axes_out)


# -- contractions: their operands, bf16 parts, data tiling (dot_general.py, windows.py) ----------

# IREE 3.13's SPIR-V code for a contraction that reads bfloat16 data fails to compile ("failed
# to legalize operation 'vector.bitcast' (vector<2xf32>) -> vector<4xbf16>", Mesa's lavapipe),
# even when the operands were widened to float32 first (x.astype(float32) @ y fuses the
# widening into the product's dispatch), and so does one whose result is rounded to bfloat16
# in its dispatch. On Vulkan such operands, and such results, are computed in dispatches of
# their own (round_to_bf16).
_BF16_TRACE_DEPTH = 8


def _computed_from_bfloat16(value, depth: int = _BF16_TRACE_DEPTH) -> bool:
    """Whether ``value`` is a bfloat16 tensor or is computed from one within ``depth`` ops."""
    ir = mlir()
    pending, seen = [(value, 0)], 0
    while pending and seen < 64:
        v, d = pending.pop()
        seen += 1
        try:
            element = str(ir.RankedTensorType(v.type).element_type)
        except ValueError:  # (not a tensor)
            element = None
        if element == "bf16":
            return True
        owner = v.owner
        if d < depth and not isinstance(owner, ir.Block):
            pending.extend((operand, d + 1) for operand in owner.operands)
    return False


_CONTRACTION_OPS = ("stablehlo.dot_general", "stablehlo.convolution")


def contraction_operand(ctx: RuleContext, x):
    """``x`` as a contraction (dot_general, convolution) operand: on Vulkan kept out of the
    contraction's dispatch when it is computed from bfloat16 data (see above)."""
    if ctx.lowering.platform == "vulkan" and not ctx.dynamic and _computed_from_bfloat16(x):
        return fusion_barrier(x)
    return x


# Float32 products of at most this many multiply-adds stay in float32 on GPUs whatever their
# precision: the three bf16 products and the splits cost more dispatches than the work is
# worth. A scan step of 8x256 @ 256x64 and 8x64 @ 64x64 products took 62-75 us split and 38-41
# us in float32 (H200, benchmarks/gpu_loops.py; exact, too).
GPU_PLAIN_FLOAT32_MACS = 1 << 20

# True: float32 contractions below HIGHEST precision take their CUDA form on every platform
# (tests check its numerics on the CPU, which has no tensor cores).
SPLIT_FLOAT32_CONTRACTIONS = False


def _splits_float32(ctx: RuleContext, precision: Optional[str]) -> bool:
    """Whether a float32 contraction at ``precision`` runs as bf16 parts (_bf16_split_product):
    on CUDA below HIGHEST, as JAX's default there is TF32. IREE 3.13 has no TF32 and puts only
    f16/bf16 contractions on tensor cores (mma.sync); a plain f32 GEMM ran at 4 TFLOP/s on an
    H200 (JAX: 309, TF32), one with bf16 inputs and f32 results at ~147."""
    avals = list(ctx.avals_in) + [ctx.avals_out[0]]
    return ((ctx.lowering.platform == "cuda" or SPLIT_FLOAT32_CONTRACTIONS)
            and precision != "HIGHEST" and all(a.dtype == _F32 for a in avals))


def _bf16_split_product(ctx: RuleContext, lhs, rhs, product: Callable):
    """A float32 bilinear product (a contraction or a convolution) from bfloat16 parts with
    float32 accumulation: x = hi + lo with hi = bf16(x) and lo = bf16(x - hi), and
    x·y ≈ hi_x·hi_y + (hi_x·lo_y + lo_x·hi_y) (JAX's BF16_BF16_F32_X3). Each term keeps
    about 16 of float32's 24 significand bits, better than TF32's 11 (the class of JAX's GPU
    default); the dropped lo_x·lo_y is 2^-16 of the product. ``product(a, b)`` builds one
    product of bf16 operands with a float32 result."""
    parts = []
    for x, aval in zip((lhs, rhs), ctx.avals_in):
        hi = round_to_bf16(ctx, x, aval)
        rest = hlo("subtract", ctx.type(aval), x, widen_bf16(ctx, hi, aval))
        parts.append((hi, round_to_bf16(ctx, rest, aval)))
    (hi_x, lo_x), (hi_y, lo_y) = parts
    out_type = ctx.out_type()
    small = hlo("add", out_type, product(hi_x, lo_y), product(lo_x, hi_y))
    return hlo("add", out_type, product(hi_x, hi_y), small)


# IREE's data tiling re-lays both operands out in tiles, in extra dispatches at every call:
# for a product with few columns (or rows) against a large operand, that relayout costs more
# than the tiled kernel gains. One f32 product alone, tiled vs untiled, iree-benchmark-module
# here (2 threads, a helper's tests beside; M x K @ K x N, ms): 32768x576x32 42-45 vs 12-13,
# x16 35-37 vs 6-8, x64 47-64 vs 16-21, x128 56-79 vs 42-44; 2048x2048x32 7.6-8.7 vs 4.0;
# 4096x1000x10 6.7 vs 2.0-2.5; 8192x576x32 8.2-9.8 vs 5.3-5.6; 1024x1024x128 4.0-4.2 vs
# 3.1-3.6. Larger products gain (1000^3 19-21 vs 36-40; 2048x512x2048 37-42 vs 48), and so do
# small ones in loops (benchmarks/ad.py's RNN gradient, 32x128 @ 128x128 steps, 1.13-1.26x
# JAX tiled, 1.40-1.49x untiled: the loop-invariant weights' relayout is hoisted).
# Those narrow products all had few columns. Few rows are another matter: IREE's untiled
# kernel for them is slow, and the tiled one (inner-tiled products, runtime/compile.py) gains
# down to a few rows. Alternating with JAX in one process (Emerald Rapids, 2 threads, tiled /
# untiled, ms): 128x1024 @ 1024x1024 3.6 / 6.3 (JAX 1.9), 128x4096 @ 4096x1024 8.2 / 25.5 (JAX
# 7.0), 32x2048 @ 2048x2048 6.2 / 9.4, 16x2048 @ 2048x2048 4.2 / 4.1, 8x1024 @ 1024x1024 0.82 /
# 0.47; while few columns still lose tiled: 1024x1024 @ 1024x128 3.1 / 2.0, 4096x1024 @
# 1024x64 7.1 / 3.9, 2048x2048 @ 2048x32 5.1 / 2.3, 4096x1000 @ 1000x10 4.1 / 1.4.
DATA_TILING_NARROW_SIDE = 128
DATA_TILING_NARROW_ROWS = 16
DATA_TILING_LARGE_OPERAND = 1 << 20
# A batched product pays for its relayout only with large matrices per batch: alternating with
# JAX in one process (Emerald Rapids, 2 threads, tiled / untiled, ms): 8 x 128x64 @ 64x128
# 0.32 / 0.16 (JAX 0.33), 32 x the same 1.12 / 0.63, 128 x 32^3 0.31 / 0.12, 64 x 64^3 0.61 /
# 0.40, 16 x 128x1024 @ 1024x128 7.8 / 4.5, 16 x 256^3 4.6 / 4.3, 4 x 512^3 10.0 / 8.4, 2 x
# 768^3 15.0 / 18.1, 2 x 1024^3 37.2 / 61.0. Below DATA_TILING_BATCHED_MACS multiply-adds per
# batch a batched product is not tiled.
DATA_TILING_BATCHED_MACS = 1 << 28

# Data tiling is one flag for a whole module: IREE then tiles every product in it, and a
# matrix-vector product in a loop runs its tiled kernel, one accumulator for 16 outputs (a
# chain of dependent multiply-adds): the unbatched RNN of benchmarks/run.py (100 steps of a
# 256 x 256 product, its input projection 100x64 @ 64x256 hoisted out of the loop and marked)
# took 0.74-0.83 ms tiled and 0.45-0.53 ms untiled (JAX 0.46-0.56; alternating, 8 rounds). A
# module with such a product drops its marks unless the marked products are large enough to
# outweigh it (their multiply-adds above DATA_TILING_KEEP_MACS, where tiling gains milliseconds).
DATA_TILING_KEEP_MACS = 1 << 24


class _Products:
    """The products of the module being lowered that data tiling concerns."""

    def __init__(self) -> None:
        self.marked: list = []          # dot_general operations marked for data tiling
        self.marked_macs = 0            # their multiply-adds
        self.narrow_in_loop = False     # whether a matrix-vector product sits in a loop body

    def settle(self) -> None:
        """Drop the marks where they cost the module more than they gain (see above)."""
        if self.narrow_in_loop and self.marked_macs <= DATA_TILING_KEEP_MACS:
            from pyree.runtime.compile import DATA_TILING_MARK
            for product in self.marked:
                del product.attributes[DATA_TILING_MARK]


lowered_products: contextvars.ContextVar = contextvars.ContextVar("pyree_products", default=None)


@contextlib.contextmanager
def _settled_products():
    """Record the products lowered inside (``_Products``), then settle their data tiling."""
    products = _Products()
    token = lowered_products.set(products)
    try:
        yield
    finally:
        lowered_products.reset(token)
    products.settle()


def _data_tiling_pays(ctx: RuleContext, lc, lb, rc, rb) -> bool:
    """Whether a product gains from IREE's data tiling: not when its columns number at most
    DATA_TILING_NARROW_SIDE, or its rows at most DATA_TILING_NARROW_ROWS, while the other
    operand has DATA_TILING_LARGE_OPERAND elements or more (per batch), nor when it is batched
    with fewer than DATA_TILING_BATCHED_MACS multiply-adds per batch (unknown shapes: assumed
    to gain)."""
    if ctx.dynamic:
        return True
    lhs_aval, rhs_aval = ctx.avals_in
    reduction = math.prod(lhs_aval.shape[d] for d in lc)
    rows, columns = _free_size(lhs_aval, lc, lb), _free_size(rhs_aval, rc, rb)
    if lb and rows * columns * reduction < DATA_TILING_BATCHED_MACS:
        return False
    narrow = columns <= DATA_TILING_NARROW_SIDE or rows <= DATA_TILING_NARROW_ROWS
    return not (narrow and max(rows, columns) * reduction >= DATA_TILING_LARGE_OPERAND)


def _free_size(aval: ShapedArray, contracting: Sequence[int], batch: Sequence[int]) -> int:
    return math.prod(d for i, d in enumerate(aval.shape) if i not in contracting and i not in batch)


# -- bfloat16 ----------------------------------------------------------------------------------
# pyree computes every bfloat16 operation in float32 and rounds its result to bfloat16 itself,
# with integer arithmetic. Two IREE 3.13 problems, one cure:
# * its CPU backend computes bf16 arithmetic in f32 and converts back with arith.truncf, which
#   LLVM lowers to a call of __truncsfbf2 on CPUs without AVX512-BF16 (AMD znver3 here):
#   linking the dispatch fails, so any bf16 arithmetic failed to compile there;
# * it fuses chains of bf16 operations and keeps their intermediates in f32, so a jitted
#   program rounded less often than the same program run eagerly, and than JAX, which rounds
#   after every operation (jnp.sin(v.astype(bf16)) differed in the last bits).
# Operations that only move data keep their bf16 operands; contractions keep bf16 operands on
# CUDA GPUs (tensor cores) and accumulate in f32. On the CPU (and Vulkan) a contraction's
# operands are widened too: IREE 3.13 ran a 512x512 bf16 matmul with bf16 operands in 755 ms on this znver3 machine
# (no AVX512-BF16), where JAX took 5 ms.

# Primitives that keep bf16 (the families add theirs: the shapes, select, gather, sort,
# bitcast_convert_type, stop_gradient), and those that keep it only for some params (scatter
# replacing: primitive -> predicate(params)).
BF16_KEPT_PRIMITIVES: set = set()
BF16_KEPT_WHEN: dict = {}
# The contractions (dot_general.py and windows.py add theirs).
BF16_CONTRACTIONS: set = set()
# Platforms whose contractions get float32 operands: on Vulkan too (IREE 3.13's SPIR-V code for
# bf16 operands fails to compile; see contraction_operand).
_BF16_WIDENED_CONTRACTIONS = frozenset({"cpu", "vulkan"})


def apply_rule(rule: Callable, primitive, ctx: RuleContext, ins: Sequence, params: dict) -> list:
    """The values of ``rule`` applied to ``ins``, a list (bfloat16 computed as said above; a
    complex128 result of a primitive in COMPLEX128_FORMULAS by its formula)."""
    formula = COMPLEX128_FORMULAS.get(primitive)
    if formula is not None and ctx.avals_out[0].dtype == np.complex128:
        return _complex128_rule(formula, ctx, ins)
    if _bf16_computed_in_f32(primitive, ctx, params):
        contraction = (primitive in BF16_CONTRACTIONS
                       and ctx.lowering.platform not in _BF16_WIDENED_CONTRACTIONS)
        # (In a shape-polymorphic module a contraction's operands widen by stablehlo.convert:
        # the integer form made IREE fail to compile an eager matmul. With static shapes the
        # integer form is the fast one: IREE fuses a convert into the matmul, 352 ms.)
        f32_ins = [x if contraction or a.dtype != bfloat16 else
                   hlo("convert", ctx.type(_bf16_as_f32(a)), x)
                   if ctx.dynamic and primitive in BF16_CONTRACTIONS
                   else widen_bf16(ctx, x, a)
                   for x, a in zip(ins, ctx.avals_in)]
        ctx32 = RuleContext(ctx.lowering, [a if contraction else _bf16_as_f32(a)
                                           for a in ctx.avals_in],
                            [_bf16_as_f32(a) for a in ctx.avals_out], ctx.dyn)
        params32 = {k: (_F32 if _is_bf16_dtype(v) else v) for k, v in params.items()}
        outs = _as_list(rule(ctx32, *f32_ins, **params32))
        return [round_to_bf16(ctx, x, a) if a.dtype == bfloat16 else x
                for x, a in zip(outs, ctx.avals_out)]
    return _as_list(rule(ctx, *ins, **params))


def _as_list(outs) -> list:
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def _is_bf16_dtype(value) -> bool:
    try:
        return isinstance(value, (np.dtype, type)) and np.dtype(value) == bfloat16
    except TypeError:
        return False


def _bf16_as_f32(aval: ShapedArray) -> ShapedArray:
    return aval.update(dtype=_F32) if aval.dtype == bfloat16 else aval


def _bf16_computed_in_f32(primitive, ctx: RuleContext, params: dict) -> bool:
    if not any(a.dtype == bfloat16 for a in list(ctx.avals_in) + list(ctx.avals_out)):
        return False
    if primitive in BF16_KEPT_PRIMITIVES:
        return False
    kept_when = BF16_KEPT_WHEN.get(primitive)
    if kept_when is not None and kept_when(params):
        return False
    # Control flow and calls hold sub-IRs, whose own operations are lowered one by one.
    return not any(isinstance(v, (IR, ClosedIR)) for v in params.values())


def widen_bf16(ctx: RuleContext, x, aval: ShapedArray):
    """bfloat16 ``x`` as float32, exactly: its 16 bits become the high half of a float32."""
    i16, i32 = aval.update(dtype=np.dtype(np.int16)), aval.update(dtype=np.dtype(np.int32))
    bits = hlo("convert", ctx.type(i32), hlo("bitcast_convert", ctx.type(i16), x))
    bits = hlo("shift_left", ctx.type(i32), bits, _splat(ctx, 16, i32, bits))
    return hlo("bitcast_convert", ctx.type(aval.update(dtype=_F32)), bits)


def round_to_bf16(ctx: RuleContext, x, aval: ShapedArray):
    """float32 ``x`` rounded to the nearest bfloat16, ties to even; NaNs stay NaN (quiet)."""
    if (ctx.lowering.platform == "vulkan" and not ctx.dynamic
            and getattr(x.owner, "name", None) in _CONTRACTION_OPS):
        x = fusion_barrier(x)   # (see contraction_operand: a bf16 store fused into it fails)
    i16, i32 = aval.update(dtype=np.dtype(np.int16)), aval.update(dtype=np.dtype(np.int32))
    f32 = aval.update(dtype=_F32)
    t32 = ctx.type(i32)
    bits = hlo("bitcast_convert", t32, x)
    high = hlo("shift_right_logical", t32, bits, _splat(ctx, 16, i32, bits))
    odd = hlo("and", t32, high, _splat(ctx, 1, i32, bits))
    # Adding 0x7fff plus the kept part's lowest bit carries into the high half exactly when
    # the dropped half is above one half, or equal to it with an odd kept part.
    rounded = hlo("add", t32, bits, hlo("add", t32, _splat(ctx, 0x7FFF, i32, bits), odd))
    rounded = hlo("shift_right_logical", t32, rounded, _splat(ctx, 16, i32, bits))
    quiet_nan = hlo("or", t32, high, _splat(ctx, 0x40, i32, bits))
    is_nan = _compare(ctx, x, x, "NE", f32)
    rounded = hlo("select", t32, is_nan, quiet_nan, rounded)
    return hlo("bitcast_convert", ctx.type(aval.update(dtype=bfloat16)),
               hlo("convert", ctx.type(i16), rounded))


# -- complex128 ------------------------------------------------------------------------------------
# IREE expands these into float64 sin, cos and atan2, which it cannot link (see float64_math.py):
# with a complex128 result they are computed by the formulas of COMPLEX128_FORMULAS (apply_rule).

def _complex128_rule(formula: Callable, ctx: RuleContext, operands: Sequence) -> list:
    operands = broadcast_to_result(ctx, operands, ctx.avals_in, ctx.avals_out[0])
    return [_complex128_formula(ctx, formula, *operands)]


# Formulas for complex128 results, by primitive (the families register theirs).
COMPLEX128_FORMULAS: dict[Any, Callable] = {}
