"""What converted code calls: Python control flow that decides at run time of the trace whether
its condition is static (ordinary Python) or traced (a structured ``cond``/``while``/``scan``).

The converter (convert.py) turns ``if``/``while``/``for`` statements into calls of ``if_stmt``,
``while_stmt`` and ``for_stmt`` with the statement's bodies as local functions; the variables a
statement assigns are passed in and returned as a tuple, in the order of ``meta.names``.
"""
from __future__ import annotations

import builtins
import contextlib
import contextvars
import operator
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from pyree import dtypes, tree_util
from pyree.runtime.array import Array

from ..core import primitives as P
from ..core.ir import ShapedArray, closed_to_region
from ..core.promotion import bind_binary, convert, promote_dtypes
from ..core.source import SourceLoc, user_loc
from ..core.trace import (IRBuilder, Tracer, TypedScalar, current_builder, get_aval, has_effects,
                          hooks, trace_region, tracing)
from ..families.control_flow import cond_p, region_with_extra_inputs, scan_p, while_p


class ConversionError(Exception):
    """Code that pyree cannot turn into structured control flow (the message says why)."""


# -- undefined variables -------------------------------------------------------------------------

class Undefined:
    """The value of a variable that is not defined on every path through traced control flow.

    Using it in any way raises an error that names the variable and the lines involved."""

    __slots__ = ("name", "why")

    def __init__(self, name: str, why: str = "") -> None:
        self.name = name
        self.why = why

    def fail(self, *args: Any, **kwargs: Any):
        why = f" {self.why}" if self.why else ""
        raise NameError(f"variable '{self.name}' is used here but is not defined on every path "
                        f"through traced control flow.{why}\n  at {_here()}")

    __getattr__ = __call__ = __getitem__ = __iter__ = __len__ = __bool__ = __index__ = fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = fail
    __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = fail
    __rpow__ = __matmul__ = __rmatmul__ = __neg__ = __pos__ = __abs__ = __invert__ = fail
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __lt__ = __le__ = fail
    __gt__ = __ge__ = __float__ = __int__ = __array__ = fail

    def __eq__(self, other):  # noqa: D105 (comparisons use it too)
        self.fail()

    __ne__ = __eq__
    __hash__ = None

    def __repr__(self) -> str:
        return f"<undefined variable {self.name!r}>"


def _here() -> str:
    loc = user_loc(3)
    return loc.describe() if loc else "?"


class _UndefinedReturn:
    """No ``return`` has run yet (the return value slot of a converted function)."""

    def __repr__(self) -> str:
        return "<no return value>"


UNDEFINED_RETURN = _UndefinedReturn()


class _State(tuple):
    """A statement's variables, remembering the scope's locals (``scope``) so that traced control
    flow can check it leaves the Python containers there unchanged."""


def state(local_vars: dict, names: Sequence[str]) -> tuple:
    """The current values of ``names`` (``Undefined`` for unbound ones)."""
    values = _State(local_vars[n] if n in local_vars else Undefined(n) for n in names)
    values.scope = local_vars
    return values


_CONTAINERS = (list, dict, set, bytearray)
_NOT_WATCHED = ("builtins", "pyree", "numpy", "jax", "jaxlib", "ml_dtypes", "iree")


def _snapshot(x: Any) -> Any:
    """What traced control flow must leave unchanged in ``x``: the items of a Python container,
    the attributes of an object of the user's classes (None: nothing)."""
    if type(x) in _CONTAINERS:
        return [v for item in x.items() for v in item] if isinstance(x, dict) else list(x)
    if isinstance(x, type) or (type(x).__module__ or "").split(".")[0] in _NOT_WATCHED:
        return None
    try:  # not getattr: some objects (Undefined) raise on any attribute
        attributes = object.__getattribute__(x, "__dict__")
    except AttributeError:
        return None
    return dict(attributes) if isinstance(attributes, dict) else None


def _changed(name: str, x: Any, old: Any) -> Optional[str]:
    """``'the Python list 'l''`` / ``'the attribute 'obj.n''`` if ``x`` changed, else None."""
    new = _snapshot(x)
    if isinstance(old, dict):
        keys = [k for k in {**old, **new} if old.get(k, old) is not new.get(k, new)]
        return f"the attribute '{name}.{keys[0]}'" if keys else None
    if len(new) != len(old) or any(a is not b for a, b in zip(new, old)):
        return f"the Python {type(x).__name__} '{name}'"
    return None


# How many statements of converted control flow on traced values are being traced around the
# current point (a print of static values there prints on the path taken, at run time).
_traced_control_flow = contextvars.ContextVar("pyree_traced_control_flow", default=0)


@contextlib.contextmanager
def _containers_unchanged(scope: Optional[dict], meta: "Meta"):
    """Both paths of traced control flow are traced: a Python list/dict/set (or an object's
    attributes) among the function's locals (``scope``) that tracing them changes
    (``l.append(v)``, ``obj.n = v``) would hold both paths' changes at once."""
    before = [(name, x, _snapshot(x)) for name, x in (scope or {}).items()]
    depth = _traced_control_flow.set(_traced_control_flow.get() + 1)
    try:
        yield
    finally:
        _traced_control_flow.reset(depth)
    for name, x, old in before:
        what = _changed(name, x, old) if old is not None else None
        if what:
            why = ("both paths are traced, so a change of a Python value cannot depend on the "
                   "condition" if meta.kind == "if" else "its body is traced once for all "
                   "iterations, so a change of a Python value cannot happen once per iteration")
            raise ConversionError(
                f"{what} is changed inside the `{meta.kind}` at {meta.at()}\nwhich depends on "
                f"a traced value: {why}. Use an array (with x.at[i].set(v)) or assign a new "
                f"value to the variable.")


# -- statement metadata ----------------------------------------------------------------------------

class Meta:
    """Static facts about one converted statement (the converter writes them into the converted
    code as the constant tuple ``Meta.pack`` makes).

    ``names``: assigned variables, in the order of the state tuples; ``body_lines`` /
    ``else_lines``: for each name, the line of its last assignment in the body / else part (0:
    none); ``before_lines``: the line of its last assignment before the statement (0: none);
    ``outer_writes``: global or nonlocal names assigned; ``in_try``: inside a try block."""

    __slots__ = ("kind", "line", "names", "body_lines", "else_lines", "before_lines",
                 "outer_writes", "in_try", "filename")

    def __init__(self, raw: tuple, filename: str) -> None:
        (self.kind, self.line, self.names, self.body_lines, self.else_lines, self.before_lines,
         self.outer_writes, self.in_try) = raw
        self.filename = filename

    @staticmethod
    def pack(kind: str, line: int, names: Iterable[str] = (), body_lines: Iterable[int] = (),
             else_lines: Iterable[int] = (), before_lines: Iterable[int] = (),
             outer_writes: Iterable[str] = (), in_try: bool = False) -> tuple:
        """The facts as the constant tuple a converted statement passes (``__init__`` reads it).

        Example: ``Meta.pack("assert", 12)`` is ``("assert", 12, (), (), (), (), (), False)``
        """
        return (kind, line, tuple(names), tuple(body_lines), tuple(else_lines),
                tuple(before_lines), tuple(outer_writes), in_try)

    def at(self, line: int = 0) -> str:
        loc = SourceLoc(self.filename, line or self.line, 1)
        text = loc.source_line()
        return f"{self.filename}:{line or self.line}" + (f"\n    {text}" if text else "")

    def where_defined(self, i: int, part: str) -> str:
        lines = {"body": self.body_lines, "else": self.else_lines}[part]
        line = lines[i] or self.before_lines[i]
        if not line:
            return "(no assignment found)"
        origin = "" if lines[i] else f" before the `{self.kind}`"
        return f"line {line}{origin}"


_meta_cache: dict[tuple, Meta] = {}


def _meta(raw: tuple, filename: str) -> Meta:
    key = (raw, filename)
    meta = _meta_cache.get(key)
    if meta is None:
        meta = _meta_cache[key] = Meta(raw, filename)
    return meta


# -- values ----------------------------------------------------------------------------------------

_NUMBERS = (bool, int, float, complex, np.generic)


def _is_arraylike(x: Any) -> bool:
    return isinstance(x, (Tracer, Array, TypedScalar, np.ndarray) + _NUMBERS)


def _same_static(a: Any, b: Any) -> bool:
    """Whether two Python values are the same, so a variable holding them needs no output."""
    if a is b:
        return True
    if type(a) is type(b) and isinstance(a, (bool, int, float, complex, str)):
        return a == b
    return False


def _pred(test: Any, meta: Meta) -> Any:
    """A traced condition as a boolean scalar (Python truthiness: nonzero is true)."""
    aval = test.aval
    if aval.size != 1:
        raise TypeError(f"The truth value of a traced array with more than one element is "
                        f"ambiguous ({aval.str_short()}): use .any() or .all() in the condition "
                        f"of the `{meta.kind}` at {meta.at()}")
    return _nonzero_scalar(test)


def _nonzero_scalar(x: Any) -> Any:
    """A one-element traced ``x`` as a boolean scalar: whether it is nonzero."""
    if x.aval.shape != ():
        x = P.reshape_p.bind(x, new_sizes=())
    return x if x.aval.dtype == np.bool_ else bind_binary(P.ne_p, x, 0)


def _check_convertible(meta: Meta) -> None:
    # Inside a `try` the statement converts too: both paths are traced, and an exception
    # raised while tracing either one reaches the `try`'s handlers, as under jax.jit (nothing
    # raises while the compiled program runs).
    if meta.outer_writes:
        names = ", ".join(f"'{n}'" for n in meta.outer_writes)
        raise ConversionError(
            f"the `{meta.kind}` at {meta.at()}\ndepends on a traced value but assigns the "
            f"global/nonlocal variable(s) {names}: both paths are traced, so such side effects "
            f"cannot depend on the condition. Return the value instead.")


def join_avals(a: ShapedArray, b: ShapedArray) -> Optional[ShapedArray]:
    """The type both ``a`` and ``b`` convert to without loss (weak types yield), or None."""
    if a.shape != b.shape:
        return None
    if a.dtype == b.dtype:
        return ShapedArray(a.shape, a.dtype, a.weak_type and b.weak_type)
    if not (a.weak_type or b.weak_type):
        return None
    dtype, weak = dtypes.result_type(a, b, return_weak_type_flag=True)
    strong = b if a.weak_type else a
    if not (a.weak_type and b.weak_type) and dtype != strong.dtype:
        return None
    return ShapedArray(a.shape, dtype, weak)


def _cast(x: Any, aval: ShapedArray) -> Any:
    have = get_aval(x)
    if have.dtype == aval.dtype and have.weak_type == aval.weak_type and not isinstance(
            x, (bool, int, float, complex, np.generic, np.ndarray)):
        return x
    return convert(x, aval.dtype, aval.weak_type)


def _zeros_like(x: Any) -> Any:
    aval = get_aval(x)
    # Keep the weak type: a filler for `return 1` must not make the result a strong int32.
    return P.broadcast_in_dim_p.bind(TypedScalar(0, aval.dtype, aval.weak_type),
                                     shape=tuple(aval.shape), broadcast_dimensions=())


def _mismatch(meta: Meta, name: str, a: Any, b: Any, where_a: str, where_b: str,
              what_a: str, what_b: str) -> TypeError:
    if isinstance(a, ShapedArray) and isinstance(b, ShapedArray):
        shape = a.shape != b.shape
        detail = (f"it has {'shape' if shape else 'dtype'} {a.str_short()} {what_a} "
                  f"({where_a}) but {b.str_short()} {what_b} ({where_b})")
        hint = ("a traced condition cannot decide the shape of a value" if shape else
                "convert one side with .astype(...) so both agree")
    else:
        detail = f"it is {a} {what_a} ({where_a}) but {b} {what_b} ({where_b})"
        hint = "only arrays can depend on a traced condition"
    return TypeError(f"{_var(name)} must have one type after the `{meta.kind}` at "
                     f"{meta.at()}\n{detail}: {hint}.")


def _var(name: str) -> str:
    """How messages name a variable (the converter's return-value slot in the user's words)."""
    return "the return value" if name == "_pyree_retval" else f"variable '{name}'"


def _describe(x: Any) -> str:
    if _is_arraylike(x):
        return get_aval(x).str_short()
    return f"the Python {type(x).__name__} {x!r:.60}"


# -- if ----------------------------------------------------------------------------------------------

def if_stmt(test: Any, body: Callable, orelse: Callable, values: tuple, raw_meta: tuple,
            filename: str) -> tuple:
    """``if test: body else: orelse`` over the variables in ``values``."""
    if not isinstance(test, Tracer):
        return body(*values) if test else orelse(*values)
    meta = _meta(raw_meta, filename)
    _check_convertible(meta)
    with _containers_unchanged(getattr(values, "scope", None), meta):
        return _traced_if(_pred(test, meta), body, orelse, values, meta)


def _trace_branch(fn: Callable, args: tuple) -> tuple[IRBuilder, tuple]:
    builder = IRBuilder()
    with tracing(builder):
        outs = fn(*args)
    return builder, tuple(outs)


def _fresh(values: tuple) -> tuple:
    """``values`` with their containers (pytree nodes) rebuilt; the leaves are shared."""
    out = []
    for v in values:
        leaves, tree = tree_util.tree_flatten(v)
        out.append(tree_util.tree_unflatten(tree, leaves))
    return tuple(out)


_STOP_FLAGS = ("_pyree_break_", "_pyree_continue_", "_pyree_returned")


def _ends_iteration(outs: tuple, meta: Meta) -> bool:
    """Whether a branch set a break/continue/return flag to a static True (convert.py's pass 3
    guards everything after such a branch by the flag)."""
    return any(name.startswith(_STOP_FLAGS) and out is True
               for name, out in zip(meta.names, outs))


def _traced_if(pred: Any, body: Callable, orelse: Callable, values: tuple, meta: Meta) -> tuple:
    # Each branch gets its own copies of the variables' lists and dicts (as loop bodies do):
    # `d[k] = v` in one branch must not show in the other, nor after the `if` unless taken.
    b_then, outs_then = _trace_branch(body, _fresh(values))
    b_else, outs_else = _trace_branch(orelse, _fresh(values))
    results: list = [None] * len(values)
    # Per variable: its tree structure and, per leaf, an output index or a static value.
    plans: list = []
    then_leaves: list = []
    else_leaves: list = []
    out_avals: list = []
    for i, name in enumerate(meta.names):
        a, b = outs_then[i], outs_else[i]
        a_undef, b_undef = isinstance(a, Undefined), isinstance(b, Undefined)
        if a_undef and b_undef:
            results[i] = a
            plans.append(None)
            continue
        if name == "_pyree_retval" and (a is UNDEFINED_RETURN) != (b is UNDEFINED_RETURN):
            # One branch returned: the other's slot is never read (the flag says so).
            with tracing(b_then if a is UNDEFINED_RETURN else b_else):
                filler = tree_util.tree_map(_zeros_like, b if a is UNDEFINED_RETURN else a)
            a, b = (filler, b) if a is UNDEFINED_RETURN else (a, filler)
        elif (a_undef or b_undef) and _ends_iteration(outs_then if a_undef else outs_else, meta):
            # The branch without the variable ends with `continue`, `break` or `return`: the code
            # after the `if` that reads it runs only when the other branch was taken (as in
            # Python), so any value of its type will do there. Static values stay static.
            with tracing(b_then if a_undef else b_else):
                filler = tree_util.tree_map(
                    lambda v: _zeros_like(v) if isinstance(v, Tracer) else v, b if a_undef else a)
            a, b = (filler, b) if a_undef else (a, filler)
        elif a_undef or b_undef:
            part = "else" if a_undef else "body"
            results[i] = Undefined(name, f"It is assigned at {meta.where_defined(i, part)} in "
                                         f"one branch of the traced `if` at line {meta.line} "
                                         f"but not in the other: assign it before the `if` or "
                                         f"in both branches.")
            plans.append(None)
            continue
        if _same_static(a, b):
            results[i] = a
            plans.append(None)
            continue
        a_flat, a_tree = tree_util.tree_flatten(a)
        b_flat, b_tree = tree_util.tree_flatten(b)
        if a_tree != b_tree:
            raise TypeError(f"{_var(name)} must have one structure after the `if` at "
                            f"{meta.at()}\nit is {a_tree} in the `if` branch "
                            f"({meta.where_defined(i, 'body')}) but {b_tree} in the `else` "
                            f"branch ({meta.where_defined(i, 'else')}).")
        leaf_plan = []
        for la, lb in zip(a_flat, b_flat):
            if _same_static(la, lb):
                leaf_plan.append(("static", la))
                continue
            if not (_is_arraylike(la) and _is_arraylike(lb)):
                raise _mismatch(meta, name, _describe(la), _describe(lb),
                                meta.where_defined(i, "body"), meta.where_defined(i, "else"),
                                "in the `if` branch", "in the `else` branch")
            av_a, av_b = get_aval(la), get_aval(lb)
            joined = join_avals(av_a, av_b)
            if joined is None:
                raise _mismatch(meta, name, av_a, av_b, meta.where_defined(i, "body"),
                                meta.where_defined(i, "else"), "in the `if` branch",
                                "in the `else` branch")
            leaf_plan.append(("out", len(out_avals)))
            then_leaves.append(la)
            else_leaves.append(lb)
            out_avals.append(joined)
        plans.append((a_tree, leaf_plan))
    with tracing(b_then):
        then_outs = [_cast(v, a) for v, a in zip(then_leaves, out_avals)]
        closed_then = b_then.finish(then_outs)
    with tracing(b_else):
        else_outs = [_cast(v, a) for v, a in zip(else_leaves, out_avals)]
        closed_else = b_else.finish(else_outs)
    then_ir, then_consts = closed_to_region(closed_then)
    else_ir, else_consts = closed_to_region(closed_else)
    then_avals = [get_aval(c) for c in then_consts]
    else_avals = [get_aval(c) for c in else_consts]
    # Operands: (else consts..., then consts...); branch 0 runs when the predicate is false.
    branches = (region_with_extra_inputs(else_ir, [], then_avals, len(else_consts)),
                region_with_extra_inputs(then_ir, else_avals, [], 0))
    index = convert(pred, np.dtype(np.int32))
    effects = has_effects(then_ir.eqns) or has_effects(else_ir.eqns)
    outs = cond_p.bind(index, *else_consts, *then_consts, branches=branches) \
        if out_avals or effects else []
    for i, plan in enumerate(plans):
        if plan is None:
            continue
        tree, leaf_plan = plan
        leaves = [outs[v] if kind == "out" else v for kind, v in leaf_plan]
        results[i] = tree_util.tree_unflatten(tree, leaves)
    return tuple(results)


def if_exp(test: Any, true_fn: Callable, false_fn: Callable, raw_meta: tuple,
           filename: str) -> Any:
    """``true_fn() if test else false_fn()`` (a conditional expression)."""
    if not isinstance(test, Tracer):
        return true_fn() if test else false_fn()
    meta = _meta(raw_meta, filename)
    _check_convertible(meta)
    (value,) = _traced_if(_pred(test, meta), lambda v: (true_fn(),), lambda v: (false_fn(),),
                          (Undefined("<expression>"),), meta)
    return value


# -- boolean operators ----------------------------------------------------------------------------

def _truth(x: Any) -> Any:
    aval = x.aval
    if aval.size != 1:
        raise TypeError(f"The truth value of a traced array with more than one element is "
                        f"ambiguous ({aval.str_short()}): use .any() or .all()\n  at {_here()}")
    return _nonzero_scalar(x)


def _operand(value: Any, nxt: Any, op: str) -> Any:
    """``value and nxt`` / ``value or nxt`` for a traced ``value``: like Python, the result is one
    of the operands (``x.sum() or 1.0`` is the sum where it is nonzero), chosen at run time."""
    truth = _truth(value)
    if _is_bool(value) and _is_bool(nxt):
        other = _truth(nxt) if isinstance(nxt, Tracer) else bool(nxt)
        return bind_binary(P.and_p if op == "and" else P.or_p, truth, other)
    if not _is_arraylike(nxt) or get_aval(nxt).shape != value.aval.shape:
        raise TypeError(f"`{op}` on the traced value {value.aval.str_short()} returns one of its "
                        f"operands, so they must be arrays of one shape; the other operand is "
                        f"{_describe(nxt)}\n  at {_here()}")
    # (jnp.where's semantics: the two operands promoted to one dtype, the predicate broadcast)
    nxt, value = promote_dtypes(nxt, value)
    shape = value.aval.shape if isinstance(value, Tracer) else get_aval(nxt).shape
    if shape != ():
        truth = P.broadcast_in_dim_p.bind(truth, shape=tuple(shape), broadcast_dimensions=())
    return (P.select_p.bind(truth, nxt, value) if op == "and"
            else P.select_p.bind(truth, value, nxt))


def _is_bool(x: Any) -> bool:
    return isinstance(x, (bool, np.bool_)) or isinstance(x, Tracer) and x.dtype == np.bool_


def and_(first: Any, *rest: Callable) -> Any:
    """``first and rest[0]() and ...``: Python's short circuit while values are concrete; once
    one is traced, every operand is evaluated and the operand Python would give is chosen at
    run time."""
    value = first
    for fn in rest:
        if isinstance(value, Tracer):
            value = _operand(value, fn(), "and")
            continue
        if not value:
            return value
        value = fn()
    return value


def or_(first: Any, *rest: Callable) -> Any:
    """``first or rest[0]() or ...`` (see ``and_``)."""
    value = first
    for fn in rest:
        if isinstance(value, Tracer):
            value = _operand(value, fn(), "or")
            continue
        if value:
            return value
        value = fn()
    return value


def not_(x: Any) -> Any:
    """``not x``: a logical not when ``x`` is traced."""
    if isinstance(x, Tracer):
        return P.not_p.bind(_truth(x))
    return not x


# -- loops -------------------------------------------------------------------------------------------

class _Carry:
    """How a loop's variables are carried: each array leaf is a carry; Python values must stay
    unchanged; variables first assigned in the body stay local to it."""

    def __init__(self, values: tuple, meta: Meta, offset: int = 0) -> None:
        self.meta = meta
        self.offset = offset  # state slots before the user's variables (a loop counter)
        self.kinds: list = []   # per variable: ("undef",) | ("static", v) | ("carry", tree, n)
        self.leaves: list = []
        self.returned: dict[int, Any] = {}  # slot -> what a `return` in the body gave it
        for i, v in enumerate(values):
            if isinstance(v, Undefined) or v is UNDEFINED_RETURN and i >= offset and \
                    self._name(i) == "_pyree_retval":
                self.kinds.append(("undef", v))
                continue
            flat, tree = tree_util.tree_flatten(v)
            if flat and all(_is_arraylike(x) for x in flat):
                self.kinds.append(("carry", tree, len(flat)))
                self.leaves.extend(flat)
            else:
                self.kinds.append(("static", v))
        self.avals = [get_aval(x) for x in self.leaves]

    def _name(self, i: int) -> str:
        return self.meta.names[i - self.offset] if i >= self.offset else "<loop counter>"

    def rebuild(self, leaves: Sequence[Any]) -> tuple:
        values, pos = [], 0
        for kind in self.kinds:
            if kind[0] == "carry":
                _, tree, n = kind
                values.append(tree_util.tree_unflatten(tree, list(leaves[pos:pos + n])))
                pos += n
            else:
                values.append(kind[1])
        return tuple(values)

    def outputs(self, outs: tuple) -> list:
        """The carried leaves of the body's results, checked against the carry."""
        leaves = []
        for i, (kind, out) in enumerate(zip(self.kinds, outs)):
            name = self._name(i)
            if kind[0] == "undef":
                if kind[1] is UNDEFINED_RETURN and out is not UNDEFINED_RETURN:
                    self.returned[i] = out  # `return` in the body: carried from the next trace
                continue
            if kind[0] == "static":
                if not _same_static(kind[1], out):
                    raise TypeError(
                        f"{_var(name)} holds {_describe(kind[1])} and is changed inside the "
                        f"`{self.meta.kind}` at {self.meta.at()}\nwhose condition is traced "
                        f"(assigned at {self._where(i)}): only arrays can be loop-carried.")
                continue
            _, tree, n = kind
            flat, out_tree = tree_util.tree_flatten(out)
            if out_tree != tree or not all(_is_arraylike(x) for x in flat):
                raise TypeError(f"{_var(name)} must keep its structure through the "
                                f"`{self.meta.kind}` at {self.meta.at()}\nit is {tree} before "
                                f"the loop but {out_tree if out_tree != tree else _describe(out)} "
                                f"after the body ({self._where(i)}).")
            leaves.extend(flat)
        return leaves

    def _where(self, i: int) -> str:
        if i < self.offset:
            return "the loop"
        line = self.meta.body_lines[i - self.offset]
        return f"line {line}" if line else "the loop body"

    def before(self, i: int) -> str:
        if i < self.offset:
            return "the loop start"
        line = self.meta.before_lines[i - self.offset]
        return f"line {line}" if line else "before the loop"

    def settle(self, out_avals: Sequence[ShapedArray]) -> bool:
        """Adopt weak-type promotions of the body's result types; False if unchanged."""
        if self.returned:
            # A `return` inside the loop: its value slot (unset before the loop) becomes a
            # carry, starting as zeros of the type the body returns (the flag says it is unset).
            for i in sorted(self.returned):
                flat, tree = tree_util.tree_flatten(self.returned[i])
                if not all(_is_arraylike(x) for x in flat):
                    raise TypeError(f"the `return` at {self._where(i)} inside the "
                                    f"`{self.meta.kind}` at {self.meta.at()}\nreturns "
                                    f"{_describe(self.returned[i])}, and the loop's condition "
                                    f"is traced: only arrays can be returned from inside it.")
                pos = sum(k[2] for k in self.kinds[:i] if k[0] == "carry")
                self.leaves[pos:pos] = [_zeros_like(x) for x in flat]
                self.avals[pos:pos] = [get_aval(x) for x in flat]
                self.kinds[i] = ("carry", tree, len(flat))
            self.returned = {}
            return True
        changed = False
        pos = 0
        for i, kind in enumerate(self.kinds):
            if kind[0] != "carry":
                continue
            for _ in range(kind[2]):
                a, b = self.avals[pos], out_avals[pos]
                if a.shape != b.shape or a.dtype != b.dtype:
                    joined = join_avals(a, b)
                    if joined is None or (joined.dtype != b.dtype and not b.weak_type):
                        raise _mismatch(self.meta, self._name(i), a, b, self.before(i),
                                        self._where(i), "before the loop", "after the body")
                    self.avals[pos] = joined
                    changed = True
                pos += 1
        return changed

    def results(self, outs: Sequence[Any]) -> tuple:
        values = list(self.rebuild(outs))
        for i, kind in enumerate(self.kinds):
            if kind[0] == "undef" and isinstance(kind[1], Undefined):
                values[i] = Undefined(self._name(i),
                                      f"It is first assigned inside the `{self.meta.kind}` at "
                                      f"line {self.meta.line} (at {self._where(i)}) and the loop "
                                      f"may run zero times: assign it before the loop.")
        return tuple(values)


def _trace_fixpoint(carry: _Carry, make_region: Callable, extra_avals: Sequence[ShapedArray] = ()):
    """Trace the body region until the carry types are stable (weak types promote)."""
    for _ in range(4):
        region, consts = trace_region(make_region, list(carry.avals) + list(extra_avals))
        n = len(carry.avals)
        if not carry.settle(region.out_avals[:n]):
            return region, consts
    raise TypeError(f"the carry types of the `{carry.meta.kind}` at {carry.meta.at()} did not "
                    f"settle")


def while_stmt(test_fn: Callable, body_fn: Callable, values: tuple, raw_meta: tuple,
               filename: str) -> tuple:
    """``while test: body`` over the variables in ``values``: iterations run in Python while the
    test is concrete; from the first traced test on, the rest is one structured loop."""
    scope = getattr(values, "scope", None)
    values = tuple(values)
    while True:
        test = test_fn(*values)
        if isinstance(test, Tracer):
            break
        if not test:
            return values
        values = tuple(body_fn(*values))
    meta = _meta(raw_meta, filename)
    _check_convertible(meta)
    with _containers_unchanged(scope, meta):
        return _traced_while(test_fn, body_fn, values, meta)


def _traced_while(test_fn: Callable, body_fn: Callable, values: tuple, meta: Meta,
                  offset: int = 0) -> tuple:
    carry = _Carry(values, meta, offset)

    def body_region(*leaves):
        return carry.outputs(tuple(body_fn(*carry.rebuild(leaves))))

    body, body_consts = _trace_fixpoint(carry, body_region)

    def test_region(*leaves):
        test = test_fn(*carry.rebuild(leaves))
        if not isinstance(test, Tracer):
            test = P.broadcast_in_dim_p.bind(bool(test), shape=(), broadcast_dimensions=())
        return [_pred(test, meta)]

    cond_ir, cond_consts = trace_region(test_region, carry.avals)
    init = [_cast(v, a) for v, a in zip(carry.leaves, carry.avals)]
    outs = while_p.bind(*cond_consts, *body_consts, *init, cond_ir=cond_ir, body_ir=body,
                        cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
    return carry.results(outs)


class TracedRange:
    """``range(start, stop, step)`` where some bound is traced."""

    def __init__(self, start: Any, stop: Any, step: Any) -> None:
        self.start, self.stop, self.step = start, stop, step


def range_(fn: Any, *args: Any) -> Any:
    """``range(*args)``, or a TracedRange when an argument is traced (``fn`` is whatever the
    name ``range`` meant at the call site)."""
    if fn is not builtins.range or not any(isinstance(a, Tracer) for a in args):
        return fn(*args)
    if not 1 <= len(args) <= 3:
        raise TypeError(f"range expected 1 to 3 arguments, got {len(args)}")
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (
        (args[0], args[1], 1) if len(args) == 2 else args)
    for a in (start, stop, step):
        if not isinstance(a, Tracer) and not isinstance(a, (int, np.integer)):
            raise TypeError(f"range() arguments must be integers, got {type(a).__name__}")
        if isinstance(a, Tracer) and a.dtype.kind not in "iu":
            raise TypeError(f"range() arguments must be integers, got a traced "
                            f"{a.aval.str_short()}")
    return TracedRange(start, stop, step)


class _Enumerate:
    def __init__(self, iterable: Any, start: int) -> None:
        self.iterable, self.start = iterable, start


class _Zip:
    def __init__(self, iterables: tuple) -> None:
        self.iterables = iterables


def _is_traced_array(x: Any) -> bool:
    return isinstance(x, Tracer) or (isinstance(x, Array) and current_builder() is not None)


def enumerate_(fn: Any, iterable: Any, start: int = 0) -> Any:
    """``enumerate(iterable)``: kept symbolic when ``iterable`` is a traced array."""
    if fn is builtins.enumerate and _is_traced_array(iterable):
        return _Enumerate(iterable, start)
    return fn(iterable, start)


def zip_(fn: Any, *iterables: Any) -> Any:
    """``zip(*iterables)``: kept symbolic when they are all traced arrays."""
    if fn is builtins.zip and iterables and all(_is_traced_array(x) for x in iterables):
        return _Zip(iterables)
    return fn(*iterables)


def for_stmt(iterable: Any, body_fn: Callable, extra_test: Optional[Callable], values: tuple,
             raw_meta: tuple, filename: str) -> tuple:
    """``for target in iterable: body``. Over traced arrays (and ``enumerate``/``zip`` of them)
    the loop is a ``scan``; over a range with a traced bound a ``while``; otherwise Python's."""
    scope = getattr(values, "scope", None)
    values = tuple(values)
    meta = None
    if isinstance(iterable, TracedRange):
        meta = _meta(raw_meta, filename)
        _check_convertible(meta)
        with _containers_unchanged(scope, meta):
            return _traced_range_loop(iterable, body_fn, extra_test, values, meta)
    if _is_traced_array(iterable) or isinstance(iterable, (_Enumerate, _Zip)):
        meta = _meta(raw_meta, filename)
        _check_convertible(meta)
        with _containers_unchanged(scope, meta):
            return _array_loop(iterable, body_fn, extra_test, values, meta)
    for item in iterable:
        if extra_test is not None:
            go = extra_test(*values)
            if isinstance(go, Tracer):
                # A traced break: the remaining iterations run only where it was not taken.
                meta = meta or _meta(raw_meta, filename)
                _check_convertible(meta)
                with _containers_unchanged(scope, meta):
                    values = _traced_if(_pred(go, meta), lambda *v, item=item: body_fn(item, *v),
                                        lambda *v: v, values, meta)
                continue
            if not go:
                break
        values = tuple(body_fn(item, *values))
    return values


def _array_loop(iterable: Any, body_fn: Callable, extra_test: Optional[Callable],
                values: tuple, meta: Meta) -> tuple:
    """``for x in xs`` over the leading axis of traced arrays: a scan (a while loop when the
    body can break)."""
    if isinstance(iterable, _Enumerate):
        arrays, start, kind = [iterable.iterable], iterable.start, "enumerate"
    elif isinstance(iterable, _Zip):
        arrays, start, kind = list(iterable.iterables), 0, "zip"
    else:
        arrays, start, kind = [iterable], 0, "array"
    for a in arrays:
        if get_aval(a).ndim == 0:
            raise TypeError(f"iteration over a 0-d array in the `for` at {meta.at()}")
    length = min(get_aval(a).shape[0] for a in arrays)
    if length == 0:  # the body never runs (and cannot be traced: no row to take)
        carry = _Carry(values, meta)
        return carry.results(carry.leaves)
    int_t = dtypes.canonicalize_dtype(int)

    def item_at(i: Any) -> Any:
        zero = TypedScalar(0, int_t, False)
        rows = [P.reshape_p.bind(P.dynamic_slice_p.bind(
                    a, i, *[zero] * (get_aval(a).ndim - 1),
                    slice_sizes=(1,) + get_aval(a).shape[1:]), new_sizes=get_aval(a).shape[1:])
                for a in arrays]
        if kind == "enumerate":
            return (bind_binary(P.add_p, i, start) if start else i, rows[0])
        if kind == "zip":
            return tuple(rows)
        return rows[0]

    if extra_test is not None:  # break: the loop must be able to stop early
        return _counted_while(length, item_at, body_fn, extra_test, values, meta)
    carry = _Carry(values, meta)
    xs = [P.iota_p.bind(dtype=int_t, shape=(length,), dimension=0)]

    def body_region(*leaves):
        n = len(carry.avals)
        vals = carry.rebuild(leaves[:n])
        return carry.outputs(tuple(body_fn(item_at(leaves[n]), *vals)))

    body, consts = _trace_fixpoint(carry, body_region, [ShapedArray((), int_t)])
    init = [_cast(v, a) for v, a in zip(carry.leaves, carry.avals)]
    outs = scan_p.bind(*consts, *init, *xs, body=body, length=length, reverse=False,
                       num_consts=len(consts), num_carry=len(init))
    return carry.results(outs)


def _counted_while(length: Any, item_at: Callable, body_fn: Callable,
                   extra_test: Optional[Callable], values: tuple, meta: Meta) -> tuple:
    """A ``while`` over ``i`` in ``[0, length)`` with ``item_at(i)`` as the loop target."""
    int_t = dtypes.canonicalize_dtype(int)
    counter = P.broadcast_in_dim_p.bind(TypedScalar(0, int_t, False), shape=(),
                                        broadcast_dimensions=())

    def test(i, *vals):
        go = bind_binary(P.lt_p, i, length)
        if extra_test is not None:
            more = extra_test(*vals)
            if isinstance(more, Tracer):
                go = P.and_p.bind(go, _truth(more))
            elif not more:
                go = bind_binary(P.and_p, go, False)
        return go

    def body(i, *vals):
        return (bind_binary(P.add_p, i, 1),) + tuple(body_fn(item_at(i), *vals))

    return _traced_while(test, body, (counter,) + values, meta, offset=1)[1:]


def _traced_range_loop(r: TracedRange, body_fn: Callable, extra_test: Optional[Callable],
                       values: tuple, meta: Meta) -> tuple:
    start, stop, step = (
        v if isinstance(v, Tracer) else
        P.broadcast_in_dim_p.bind(v, shape=(), broadcast_dimensions=())
        for v in promote_dtypes(r.start, r.stop, r.step))

    def sub(a, b):
        return bind_binary(P.sub_p, a, b)
    # Number of iterations: ceil((stop - start) / step), at least 0, for either sign of step.
    if isinstance(r.step, (int, np.integer)):
        span = sub(stop, start) if r.step > 0 else sub(start, stop)
        size = abs(int(r.step))
    else:
        positive = bind_binary(P.gt_p, step, 0)
        span = P.select_p.bind(positive, sub(stop, start), sub(start, stop))
        size = P.select_p.bind(positive, step, P.neg_p.bind(step))
    if not isinstance(size, int) or size != 1:
        span = bind_binary(P.div_p, bind_binary(P.add_p, span, sub(size, 1)), size)
    count = bind_binary(P.max_p, span, 0)
    return _counted_while(count, lambda i: bind_binary(P.add_p, start, P.mul_p.bind(i, step)),
                          body_fn, extra_test, values, meta)


# -- other statements ---------------------------------------------------------------------------------

def final_return(returned: Any, retval: Any, raw_meta: tuple, filename: str) -> Any:
    """The value a converted function returns, once its return flag is known."""
    if isinstance(returned, Tracer):
        meta = _meta(raw_meta, filename)
        raise TypeError(f"function '{meta.names[0]}' (defined at {meta.at()}) returns a value "
                        f"on some paths and reaches its end without a `return` on others, "
                        f"depending on a traced condition. Add a `return` at the end, or an "
                        f"`else` that returns.")
    if returned and retval is not UNDEFINED_RETURN:
        return retval
    return None


def setitem(base: Any, index: Any, value: Any) -> Any:
    """``base[index] = value``: a functional update for arrays, in place for other objects."""
    if isinstance(base, (Array, Tracer)):
        return base.at[index].set(value)
    base[index] = value
    return base


_AUGMENTED = {
    "add": ("add", operator.add), "subtract": ("subtract", operator.sub),
    "multiply": ("multiply", operator.mul), "divide": ("divide", operator.truediv),
    "power": ("power", operator.pow), "floordiv": (None, operator.floordiv),
    "mod": (None, operator.mod), "matmul": (None, operator.matmul),
    "and": (None, operator.and_), "or": (None, operator.or_), "xor": (None, operator.xor),
    "lshift": (None, operator.lshift), "rshift": (None, operator.rshift),
}


def setitem_op(base: Any, index: Any, value: Any, op: str) -> Any:
    """``base[index] <op>= value`` (``x[i] += v`` becomes ``x.at[i].add(v)`` for arrays)."""
    method, fn = _AUGMENTED[op]
    if isinstance(base, (Array, Tracer)):
        if method is not None:
            return getattr(base.at[index], method)(value)
        return base.at[index].set(fn(base[index], value))
    base[index] = fn(base[index], value)
    return base


def assert_(test: Any, message: Callable, raw_meta: tuple, filename: str) -> None:
    """``assert test, message``: checked when the compiled program runs if ``test`` is traced."""
    if not isinstance(test, Tracer):
        if not test:
            msg = message()
            raise AssertionError(msg) if msg is not None else AssertionError()
        return
    meta = _meta(raw_meta, filename)
    from ..families.checks import add_check
    msg = message()
    add_check(_pred(test, meta), f"{msg if msg is not None else 'assertion failed'}\n  at "
                                 f"{meta.at()}")


def call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """A call in converted code: user functions are converted too; ``print`` of traced values
    prints at run time, and so does one of static values on a path of traced control flow;
    any other print runs once, while tracing (as in JAX)."""
    if fn is builtins.print:
        if _traced_control_flow.get() == 0 and not any(
                isinstance(leaf, Tracer) for leaf in tree_util.tree_leaves(args)):
            return builtins.print(*args, **kwargs)
        from ..families.checks import traced_print
        return traced_print(*args, **kwargs)
    return hooks.converted(fn)(*args, **kwargs)   # (convert.converted: no import cycle)
