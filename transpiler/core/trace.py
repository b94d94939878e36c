"""Tracing: running Python on abstract values to record IR.

``bind(primitive, *args)`` is the single entry point of every operation. While a function is
being traced (inside ``jit``, ``make_ir``, or the branch of a control-flow operator) the
innermost ``IRBuilder`` records an equation and hands back ``Tracer`` objects; with no trace
active the primitive runs eagerly on the device.
"""
from __future__ import annotations

import os

import sys
import threading
from typing import Any, Callable, Optional, Sequence

import numpy as np

from pyree import dtypes
from pyree.errors import (ConcretizationTypeError, TracerArrayConversionError,
                          TracerBoolConversionError, TracerIntegerConversionError,
                          UnexpectedTracerError)
from pyree.runtime.array import Array, immutable_update_message

from .ir import IR, Atom, ClosedIR, Eqn, Literal, ShapedArray, Var, closed_to_region, regions
from .source import SourceLoc, user_loc, where


class Primitive:
    """One operation of the IR. Its rules live in tables keyed by the primitive:
    ``abstract_eval_rules`` here, ``lowering_rules`` in lower.py, and the transformation rules
    in their own modules.

    Example::

        add_p = Primitive("add")
        add_p.bind(x, y)
    """

    __slots__ = ("name", "multiple_results")

    def __init__(self, name: str, multiple_results: bool = False) -> None:
        self.name = name
        self.multiple_results = multiple_results

    def bind(self, *args: Any, **params: Any) -> Any:
        outs = bind(self, args, params)
        return outs if self.multiple_results else outs[0]

    def __repr__(self) -> str:
        return self.name


# primitive -> rule(*in_avals, **params) -> ShapedArray | list[ShapedArray]
abstract_eval_rules: dict[Primitive, Callable] = {}


def abstract_eval(primitive: Primitive, in_avals: Sequence[ShapedArray], params: dict,
                  loc: Optional[SourceLoc] = None) -> list[ShapedArray]:
    """Output avals of ``primitive`` applied to ``in_avals``; shape/dtype errors name the user's
    line."""
    try:
        out = abstract_eval_rules[primitive](*in_avals, **params)
    except TypeError as e:
        if getattr(e, "_pyree_located", False):
            raise
        located = type(e)(f"{e}{where(loc)}")
        located._pyree_located = True
        raise located.with_traceback(None) from None
    outs = list(out) if primitive.multiple_results else [out]
    for aval in outs:
        if aval.size * aval.dtype.itemsize > MAX_ARRAY_BYTES:
            raise MemoryError(_too_large(aval, loc))
    return outs


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not a POSIX system: no bound
        return 1 << 62


# No array may need more bytes than the machine has: such a request (jnp.zeros(1 << 40),
# jnp.arange(1e13), a broadcast to 2**40 elements) fails here, naming its size, instead of
# failing inside IREE's allocator (which then crashed the interpreter at exit).
MAX_ARRAY_BYTES = _memory_bytes()


def _bytes_text(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{n} B"
        n /= 1024
    return f"{n} B"


def _too_large(aval: ShapedArray, loc) -> str:
    need = aval.size * aval.dtype.itemsize
    return (f"Unable to allocate {_bytes_text(need)} for an array with shape {aval.shape} and "
            f"data type {aval.dtype}: more than this machine's {_bytes_text(MAX_ARRAY_BYTES)} "
            f"of memory{where(loc)}")


# -- values while tracing ---------------------------------------------------------------------

class Tracer:
    """A value whose contents are unknown while tracing: it has an abstract value and stands for
    an IR variable of the builder that made it. NumPy-style operators are attached by
    ``pyree.numpy``, the same ones ``Array`` gets."""

    # Slot names start with an underscore: public names (var, ...) are NumPy methods.
    __slots__ = ("aval", "_ir_var", "_builder", "__weakref__")
    __array_priority__ = 100

    def __init__(self, builder: "IRBuilder", var: Var) -> None:
        self._builder = builder
        self._ir_var = var
        self.aval = var.aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: self.aval.size)

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def __repr__(self) -> str:
        return f"Traced<{self.aval.str_short()}>"

    def __bool__(self) -> bool:
        raise TracerBoolConversionError(
            f"Attempted boolean conversion of a traced array {self.aval.str_short()}: its value "
            f"is only known when the compiled program runs.{where(None)}\n"
            "Ways out: compute both sides and choose with pyree.numpy.where(cond, a, b) when "
            "the choice depends on data, or pass the argument as static "
            "(jit(..., static_argnums=...)) when it is a Python setting." + _unconverted_note())

    def __int__(self) -> int:
        raise TracerIntegerConversionError(
            f"int() of a traced array {self.aval.str_short()}: its value is only known when the "
            f"compiled program runs.{where(None)}\nMark the argument static "
            "(jit(..., static_argnums=...)) if it is a Python setting such as a size.")

    __index__ = __int__

    def __float__(self) -> float:
        raise ConcretizationTypeError(
            f"float() of a traced array {self.aval.str_short()}: its value is only known when "
            f"the compiled program runs.{where(None)}")

    __complex__ = __float__

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            f"numpy.asarray() of a traced array {self.aval.str_short()}: NumPy functions cannot "
            f"run on values that are only known when the compiled program runs.{where(None)}\n"
            "Use pyree.numpy instead of numpy inside jitted functions.")

    def tolist(self):
        raise ConcretizationTypeError(
            f"tolist() of a traced array {self.aval.str_short()}: its values are only known "
            f"when the compiled program runs.{where(None)}\nReturn the array from the jitted "
            f"function and call tolist() on the result.")

    item = tolist

    def __setitem__(self, index, value) -> None:
        raise TypeError(immutable_update_message(index, value, sys._getframe(1)) + where(None))

    __hash__ = None


# Primitives with effects beyond their results (printing, runtime checks): never removed.
effectful_primitives: set = set()


def has_effects(eqns: Sequence[Eqn]) -> bool:
    """Whether any equation, or any region inside one, has effects."""
    for eqn in eqns:
        if eqn.primitive in effectful_primitives:
            return True
        if any(has_effects(region.eqns) for region in regions(eqn)):
            return True
    return False


def _unconverted_note() -> str:
    """Why the user's function at hand was not converted (pyree converts `if`/`while` on
    traced values in the functions it can read), or '': the front end's explanation
    (``hooks.explain_unconverted``) of the code object of the user's frame."""
    loc = user_loc(3)
    frame = sys._getframe(2)
    while frame is not None and loc is not None and frame.f_code.co_filename != loc.filename:
        frame = frame.f_back
    return "" if frame is None else hooks.explain_unconverted(frame.f_code)


# -- what the core asks of the layers above it ---------------------------------------------------
# The core (source, ir, trace, primitives) imports nothing above itself. What it needs from
# above is installed there when those modules are imported, as Autodidax's bottom evaluator
# is: how a primitive runs now, on a device (eager.py); and from the AST front end (convert.py),
# why a function the user wrote was not converted into structured control flow, the function
# with its control flow converted (what jit traces, and the user's custom derivative rules),
# and the error for a result that is the front end's marker of a variable left undefined on
# some path.

def _no_evaluator(primitive: "Primitive", args: Sequence[Any], params: dict) -> list:
    raise RuntimeError(f"{primitive} was applied outside any trace and no evaluator is "
                       "installed: import pyree (its eager backend installs one)")


class Hooks:
    """The core's hooks, set by the layers above (``install``).

    Example::

        from pyree.transpiler.core import trace
        trace.hooks.install(apply_now=eager.apply)
    """
    apply_now: Callable[["Primitive", Sequence[Any], dict], list] = staticmethod(_no_evaluator)
    explain_unconverted: Callable[[Any], str] = staticmethod(lambda code: "")
    converted: Callable[[Callable], Callable] = staticmethod(lambda fn: fn)
    reject_undefined: Callable[[Any], None] = staticmethod(lambda value: None)

    def install(self, **hooks: Callable) -> None:
        for name, fn in hooks.items():
            if not hasattr(Hooks, name):
                raise TypeError(f"no core hook named {name!r}")
            setattr(self, name, fn)


hooks = Hooks()


class IRBuilder:
    """Collects the equations of one function (or region) being traced.

    A ``top_level`` builder traces a whole program (not a region): runtime checks may add a
    per-call token input to it."""

    def __init__(self, top_level: bool = False) -> None:
        self.in_vars: list[Var] = []
        self.eqns: list[Eqn] = []
        self.const_vars: list[Var] = []
        self.const_values: list[Any] = []
        self._const_ids: dict[int, Var] = {}
        self.active = True
        self.top_level = top_level
        self.check_token: Optional[Tracer] = None

    def new_input(self, aval: ShapedArray) -> Tracer:
        var = Var(aval)
        self.in_vars.append(var)
        return Tracer(self, var)

    def _const(self, value: Any, aval: ShapedArray) -> Var:
        var = self._const_ids.get(id(value))
        if var is None:
            var = self._const_ids[id(value)] = Var(aval)
            self.const_vars.append(var)
            self.const_values.append(value)
        return var

    def atom(self, x: Any) -> Atom:
        """The IR atom for an operand: a variable of this builder, a captured value or a literal."""
        if isinstance(x, Tracer):
            if x._builder is self:
                return x._ir_var
            if not x._builder.active:
                raise UnexpectedTracerError(
                    f"A traced value {x.aval.str_short()} from a function that finished tracing "
                    f"was used here{where(None)}\nIt escaped its function (stored in a global "
                    "or a Python container?). Return values from jitted functions instead.")
            # A value of an enclosing trace used inside a region: captured as an input.
            return self._const(x, x.aval)
        aval = get_aval(x)
        if isinstance(x, TypedScalar):
            return Literal(x.value, aval)
        if aval.shape == () and not isinstance(x, Array):
            return Literal(x, aval)
        if isinstance(x, np.ndarray):
            x = canonicalize_array(x)
        return self._const(x, aval)

    def add_eqn(self, primitive: Primitive, inputs: Sequence[Atom], params: dict,
                out_avals: Sequence[ShapedArray], loc: Optional[SourceLoc]) -> list[Tracer]:
        outs = [Var(a) for a in out_avals]
        self.eqns.append(Eqn(primitive, inputs, params, outs, loc))
        return [Tracer(self, v) for v in outs]

    def finish(self, outputs: Sequence[Any]) -> ClosedIR:
        """Close the trace; ``outputs`` may be tracers, arrays or Python scalars. Equations
        whose results are unused (and have no effects) are dropped."""
        outs = [self.atom(x) for x in outputs]
        self.active = False
        live = {id(a) for a in outs if isinstance(a, Var)}
        kept = []
        for eqn in reversed(self.eqns):
            if any(id(v) in live for v in eqn.outputs) or has_effects([eqn]):
                kept.append(eqn)
                live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
        kept.reverse()
        ir = IR(self.const_vars, self.in_vars, kept, outs)
        return ClosedIR(ir, self.const_values, has_token=self.check_token is not None)


class _TraceState(threading.local):
    def __init__(self) -> None:
        self.builders: list[IRBuilder] = []
        self.loc: Optional[SourceLoc] = None  # see `located`
        self.compile_time_eval = 0  # depth of `compile_time_eval` contexts


_state = _TraceState()


def current_builder() -> Optional[IRBuilder]:
    builders = _state.builders
    return builders[-1] if builders else None


class located:
    """Context manager: equations recorded inside carry ``loc`` instead of the innermost user
    frame. Transformations re-bind each equation of a traced program (its JVP, transpose or
    batching rule) under the location of that equation, so that a gradient's operations name
    the line of the operation they differentiate, not the line that called ``grad``.
    ``located(None)`` restores the frame lookup (around user code called from a rule: custom
    derivative rules)."""

    __slots__ = ("loc", "saved")

    def __init__(self, loc: Optional[SourceLoc]) -> None:
        self.loc = loc

    def __enter__(self) -> None:
        self.saved = _state.loc
        _state.loc = self.loc

    def __exit__(self, *exc) -> None:
        _state.loc = self.saved


class tracing:
    """Context manager that makes ``builder`` the innermost active trace."""

    def __init__(self, builder: IRBuilder) -> None:
        self.builder = builder

    def __enter__(self) -> IRBuilder:
        _state.builders.append(self.builder)
        return self.builder

    def __exit__(self, *exc) -> None:
        popped = _state.builders.pop()
        assert popped is self.builder


class compile_time_eval:
    """Context manager: inside, an operation whose operands are all known values (no tracers)
    runs at once, even inside a trace, and gives a concrete Array
    (``jax.ensure_compile_time_eval``); operations on traced values are traced as usual.

    Example::

        with compile_time_eval():
            n = int(jnp.sum(jnp.arange(4)))     # 6, a Python int even under jit
    """

    def __enter__(self) -> None:
        _state.compile_time_eval += 1

    def __exit__(self, *exc) -> None:
        _state.compile_time_eval -= 1


# -- abstract values of concrete things -------------------------------------------------------

def canonicalize_array(x: np.ndarray) -> np.ndarray:
    """A NumPy array converted to the dtype pyree uses for it (float64 -> float32 without x64)."""
    dtype = dtypes.canonicalize_dtype(x.dtype)
    return x if x.dtype == dtype else x.astype(dtype)


_SCALAR_TYPES = (bool, int, float, complex)


class TypedScalar:
    """A concrete scalar with a dtype and weak type chosen by promotion (``x * 2.0`` on float16
    ``x`` multiplies by a weakly typed float16 2.0). Becomes a literal in IR."""

    __slots__ = ("value", "aval")

    def __init__(self, value: Any, dtype: np.dtype, weak_type: bool) -> None:
        self.value = np.asarray(value).astype(dtype)[()]
        self.aval = ShapedArray((), dtype, weak_type)

    def __repr__(self) -> str:
        return f"TypedScalar({self.value!r}, weak_type={self.aval.weak_type})"


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of anything that can be an operand."""
    if isinstance(x, (Tracer, Array, TypedScalar)):
        return x.aval
    if isinstance(x, (np.ndarray, np.generic)):  # before scalars: np.float64 is a float
        return ShapedArray(np.shape(x), dtypes.canonicalize_dtype(x.dtype), False)
    if isinstance(x, _SCALAR_TYPES):
        dtype = dtypes.python_scalar_dtype(x)
        if isinstance(x, int) and not isinstance(x, bool):
            _check_int_range(x, dtype)
        return ShapedArray((), dtype, not isinstance(x, bool))
    if isinstance(x, (list, tuple)):
        raise TypeError(
            f"a Python {type(x).__name__} is not an array: pyree, like JAX, does not turn lists "
            f"into arrays implicitly. Use pyree.numpy.asarray(...) first.{where(None)}")
    raise TypeError(f"value of type {type(x).__name__} is not a valid pyree array "
                    f"type{where(None)}")


def _check_int_range(x: int, dtype: np.dtype) -> None:
    info = np.iinfo(dtype)
    if not info.min <= x <= info.max:
        raise OverflowError(f"Python int {x} is too large to convert to {dtype}{where(None)}")


# -- bind ----------------------------------------------------------------------------------------

def bind(primitive: Primitive, args: Sequence[Any], params: dict) -> list[Any]:
    """Apply ``primitive``: record it in the innermost trace, or run it now on the device."""
    builder = current_builder()
    if builder is None:
        for a in args:
            if isinstance(a, Tracer):
                raise UnexpectedTracerError(
                    f"A traced value {a.aval.str_short()} was used after its function finished "
                    f"tracing{where(None)}\nIt escaped (stored in a global or a Python "
                    "container?). Return values from jitted functions instead.")
        return hooks.apply_now(primitive, args, params)
    if _state.compile_time_eval and not any(isinstance(a, Tracer) for a in args):
        # (operands all known: computed now, a constant of the trace)
        return hooks.apply_now(primitive, args, params)
    loc = _state.loc or user_loc(2)
    inputs = [builder.atom(a) for a in args]
    out_avals = abstract_eval(primitive, [a.aval for a in inputs], params, loc)
    return builder.add_eqn(primitive, inputs, params, out_avals, loc)


def trace_to_ir(fun: Callable, in_avals: Sequence[ShapedArray], top_level: bool = True
                ) -> ClosedIR:
    """Trace ``fun(*tracers)`` (flat arguments, flat list of results) into a ClosedIR.
    ``top_level``: the IR is a whole program (not a piece a transformation will re-emit)."""
    builder = IRBuilder(top_level=top_level)
    with tracing(builder):
        args = [builder.new_input(a) for a in in_avals]
        outs = fun(*args)
        closed = builder.finish(outs)
    return closed


def trace_region(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray]
                 ) -> tuple[IR, list]:
    """Trace ``fun(*tracers) -> flat outputs`` as a region of the current trace.

    Returns the region as an IR whose inputs are (captured values..., ``in_avals``...) and the
    captured values themselves (outer tracers or constants), which become operands.
    """
    builder = IRBuilder()
    with tracing(builder):
        args = [builder.new_input(a) for a in in_avals]
        outs = fun(*args)
        closed = builder.finish(list(outs))
    return closed_to_region(closed)


def eval_ir(closed: ClosedIR, *args: Any) -> list[Any]:
    """Run an IR by binding its equations again: inside a trace this inlines (and so copies or
    transforms) the IR; outside one it runs eagerly.

    Example::

        closed = trace_to_ir(lambda x: [x * 2], [ShapedArray((3,), np.float32)])
        eval_ir(closed, np.ones(3, np.float32))    # [Array([2., 2., 2.], dtype=float32)]
    """
    ir = closed.ir
    if len(args) != len(ir.in_vars):
        raise TypeError(f"eval_ir: the IR takes {len(ir.in_vars)} inputs, got {len(args)}")
    env: dict[Var, Any] = dict(zip(ir.const_vars, closed.consts))
    env.update(zip(ir.in_vars, args))
    for eqn in ir.eqns:
        outs = bind(eqn.primitive, [read_env(env, a) for a in eqn.inputs], eqn.params)
        env.update(zip(eqn.outputs, outs))
    return [read_env(env, atom) for atom in ir.outs]


def literal_value(atom: Literal) -> "TypedScalar":
    """The typed scalar an interpreter binds for a literal of the IR.

    Example::

        literal_value(Literal(2.0, ShapedArray((), np.dtype(np.float32))))   # TypedScalar(2.0)
    """
    return TypedScalar(atom.value, atom.aval.dtype, atom.aval.weak_type)


def read_env(env: dict, atom: Atom) -> Any:
    """``atom``'s value in an interpreter's environment ``env``: a literal as its typed scalar.

    Example::

        read_env({v: x}, v) is x; read_env({}, literal)   # literal_value(literal)
    """
    return literal_value(atom) if isinstance(atom, Literal) else env[atom]
