"""Checking for NaNs and infinities: ``pyree.config.update("debug_nans", True)`` (and
``"debug_infs"``; environment variables ``PYREE_DEBUG_NANS`` / ``PYREE_DEBUG_INFS``).

While an option is on:

* every eager operation fetches its floating-point (and complex) results to the host and raises
  ``FloatingPointError`` naming the user's line when one holds a NaN (an infinity);
* every jitted call does the same with its results. When one is bad, the program the jit traced
  (its IR) runs again eagerly, equation by equation, on the same inputs; the first equation
  whose results hold a NaN its operands did not (elementwise operations: at a position where no
  operand had one) is the culprit, and its traced source position names the line. Inside
  ``cond``/``while``/``scan`` (and custom-derivative calls) the search goes on in the body, step
  by step, so the message names the line in the body and the enclosing control flow (the loops
  reverse mode makes of while loops included).

As in JAX, a bad value in a jitted function's results raises even when no operation produced
it (a NaN argument flowing through ``x + 1``); the message then says where it came from.

Off, the options cost one test of the module global ``enabled`` per jitted call and per eager
operation: ``pyree.config.update`` refreshes it; no compiled program changes either way.

Example::

    pyree.config.update("debug_nans", True)
    pyree.jit(lambda x: jnp.log(x) * 2)(np.float32(-1))
    # FloatingPointError: invalid value (nan) encountered in log at prog.py:7: ...
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Optional, Sequence

import numpy as np

from pyree import config, dtypes

from ..core.ir import IR, ClosedIR, Eqn, Literal, Var, regions
from ..core import primitives as P
from ..core.source import SourceLoc, _is_internal, user_loc
from ..core.trace import Primitive, TypedScalar, effectful_primitives, read_env

# True while debug_nans or debug_infs is on; read by jit.py and eager.py on every call.
enabled = False
# The kinds of bad value looked for: "nan", "inf", or both, in that order.
_kinds: tuple[str, ...] = ()
_OPTIONS = ("debug_nans", "debug_infs")


def _refresh(name: Optional[str] = None, value: Any = None) -> None:
    global enabled, _kinds
    if name is not None and name not in _OPTIONS:
        return
    kinds = []
    if config.debug_nans:
        kinds.append("nan")
    if config.debug_infs:
        kinds.append("inf")
    _kinds = tuple(kinds)
    enabled = bool(kinds)


_refresh()
config.on_update(_refresh)


# -- host values --------------------------------------------------------------------------------

_inexact_cache: dict[np.dtype, bool] = {}


def _is_inexact(dtype: np.dtype) -> bool:
    known = _inexact_cache.get(dtype)
    if known is None:  # bfloat16 and friends are not np.inexact; pyree's lattice knows them
        known = _inexact_cache[dtype] = bool(dtypes.issubdtype(dtype, np.inexact))
    return known


def _host(value: Any) -> Optional[np.ndarray]:
    """The value as a NumPy array when it is floating point or complex, else None (without
    fetching integer or boolean device arrays)."""
    dtype = getattr(value, "dtype", None)
    if dtype is not None and not isinstance(value, (TypedScalar, Literal)) and \
            not _is_inexact(np.dtype(dtype)):
        return None
    array = host_value(value)
    return array if _is_inexact(array.dtype) else None


def host_value(value: Any) -> np.ndarray:
    """``value`` (an array, typed scalar or literal) as a NumPy array on the host."""
    return np.asarray(value.value if isinstance(value, (TypedScalar, Literal)) else value)


def _bad(value: np.ndarray, kind: str) -> np.ndarray:
    if value.dtype.kind not in "fc":  # bfloat16 etc.: compare as float32
        value = value.astype(np.complex64 if "complex" in value.dtype.name else np.float32)
    return np.isnan(value) if kind == "nan" else np.isinf(value)


def _bad_kind(values: Sequence[Optional[np.ndarray]]) -> Optional[str]:
    """The first kind of bad value (in ``_kinds`` order) that any of ``values`` holds."""
    for kind in _kinds:
        if any(v is not None and _bad(v, kind).any() for v in values):
            return kind
    return None


def _produced(primitive, ins: Sequence[Optional[np.ndarray]],
              outs: Sequence[Optional[np.ndarray]], kind: str) -> bool:
    """Whether the operation made a bad value of ``kind`` its operands did not hold."""
    out_bad = [_bad(o, kind) for o in outs if o is not None]
    if not any(m.any() for m in out_bad):
        return False
    in_bad = [_bad(i, kind) for i in ins if i is not None]
    if primitive in P.ELEMENTWISE and len(out_bad) == 1:
        # Position by position: log(x) makes a new NaN even where another element of x is NaN.
        shape = out_bad[0].shape
        try:
            inherited = np.zeros(shape, bool)
            for mask in in_bad:
                inherited |= np.broadcast_to(mask, shape)
        except ValueError:
            pass
        else:
            return bool((out_bad[0] & ~inherited).any())
    return not any(m.any() for m in in_bad)


# -- messages -----------------------------------------------------------------------------------

def _at(loc: Optional[SourceLoc]) -> str:
    if loc is None:
        return " at an unknown location"
    code = loc.source_line()
    return f" at {loc.filename}:{loc.line}" + (f": {code}" if code else "")


def _located_message(kind: str, eqn: Eqn, context: Sequence[Eqn]) -> str:
    lines = [f"invalid value ({kind}) encountered in {eqn.primitive.name}{_at(eqn.loc)}"]
    for outer in reversed(context):  # innermost enclosing control flow first
        lines.append(f"  inside {outer.primitive.name}{_at(outer.loc)}")
    return "\n".join(lines)


def _interpreted_eqn_loc() -> Optional[SourceLoc]:
    """The traced position of the equation an eager IR interpreter (eval_ir, AD's forward and
    backward passes) is running, when the operation at hand comes from one: such interpreters
    run with the user's call of grad/vmap on the stack, while the equation knows the line of
    the operation. Looked up only when a check fails."""
    frame = sys._getframe(2)
    while frame is not None:
        if not _is_internal(frame.f_code.co_filename):
            return None
        eqn = frame.f_locals.get("eqn")
        if isinstance(eqn, Eqn) and eqn.loc is not None:
            return eqn.loc
        frame = frame.f_back
    return None


# -- eager operations ---------------------------------------------------------------------------

def check_eager(primitive, args: Sequence[Any], outs: Sequence[Any]) -> None:
    """Raise FloatingPointError when an eager operation's results hold a bad value.

    Like JAX, any bad value in the results raises; the message says when the operands held it
    already (the operation did not produce it)."""
    out_values = [_host(o) for o in outs]
    kind = _bad_kind(out_values)
    if kind is None:
        return
    in_values = [_host(a) for a in args]
    loc = _interpreted_eqn_loc() or user_loc(2)
    message = f"invalid value ({kind}) encountered in {primitive.name}{_at(loc)}"
    if not _produced(primitive, in_values, out_values, kind):
        message += f"\n  (its operands already held the {kind}: it was not produced here)"
    raise FloatingPointError(message)


# -- jitted calls -------------------------------------------------------------------------------

class _Culprit:
    __slots__ = ("kind", "eqn", "context")

    def __init__(self, kind: str, eqn: Eqn, context: list) -> None:
        self.kind = kind
        self.eqn = eqn
        self.context = context


def run_checked(compiled, arrays: list) -> Any:
    """``compiled.run_unchecked(arrays)``, raising FloatingPointError when a result holds a bad
    value; ``compiled`` is jit's ``_Compiled`` (its ``closed`` IR, device ``consts``)."""
    result = compiled.run_unchecked(arrays)
    from pyree import tree_util
    kind = _bad_kind([_host(leaf) for leaf in tree_util.tree_leaves(result)])
    if kind is not None:
        raise FloatingPointError(_explain_jit(compiled, arrays, kind))
    return result


def _explain_jit(compiled, arrays: list, kind: str) -> str:
    closed: ClosedIR = compiled.closed
    inputs = list(arrays)
    if closed.has_token:  # runtime checks (asserts) are skipped when re-running
        from pyree.runtime.array import device_put_numpy
        inputs.append(device_put_numpy(np.asarray(0, np.int32)))
    caller = user_loc(3)
    try:
        culprit, _ = _search(closed.ir, compiled.consts, inputs, [])
    except Exception as e:  # noqa: BLE001 (the search is a diagnosis: never hide the NaN)
        return (f"invalid value ({kind}) in the results of the jitted function called"
                f"{_at(caller)}\n  (re-running it operation by operation to find the line "
                f"failed: {type(e).__name__}: {e})")
    if culprit is not None:
        return (_located_message(culprit.kind, culprit.eqn, culprit.context) +
                f"\n  (found by re-running, operation by operation, the jitted function called"
                f"{_at(caller)})")
    head = f"invalid value ({kind}) in the results of the jitted function called{_at(caller)}"
    if any(_bad_kind_of(_host(a), kind) for a in arrays):
        return head + f"\n  No operation in it produced the {kind}: it was in the arguments."
    if any(_bad_kind_of(_host(c), kind) for c in compiled.consts) or _literal_holds(closed.ir,
                                                                                    kind):
        return head + (f"\n  No operation in it produced the {kind}: it comes from a constant "
                       f"in the function (such as jnp.{kind}).")
    return head + (f"\n  Running its operations one by one produced no {kind}: the compiled "
                   f"program's fused arithmetic differs from the operation-by-operation one.")


def _bad_kind_of(value: Optional[np.ndarray], kind: str) -> bool:
    return value is not None and bool(_bad(value, kind).any())


def _literal_holds(ir: IR, kind: str) -> bool:
    for eqn in ir.eqns:
        for atom in eqn.inputs:
            if isinstance(atom, Literal) and _bad_kind_of(_host(atom), kind):
                return True
        for region in regions(eqn):
            if _literal_holds(region, kind):
                return True
    return any(isinstance(a, Literal) and _bad_kind_of(_host(a), kind) for a in ir.outs)


# How the search looks inside an equation holding sub-IRs that produced a bad value:
# ``rule(params, ins, run_region) -> culprit or None``, where ``run_region(region, args)`` runs a
# region (an IR or ClosedIR) eagerly, checking every equation, and returns (its first culprit or
# None, its outputs). The families holding such primitives register theirs (control_flow,
# control_flow_ad, custom_derivatives); ``host_value`` reads a predicate or a count.
descend_rules: dict[Primitive, Callable[..., Any]] = {}


def _no_evaluator(primitive: Primitive, args: Sequence[Any], params: dict) -> list:
    raise RuntimeError("debug_nans has no eager evaluator installed: import pyree")


# The eager evaluator the search runs equations with, unchecked (eager.apply_unchecked, which
# eager.py installs: the backend sits above this interpreter).
apply_unchecked: Callable[[Primitive, Sequence[Any], dict], list] = _no_evaluator


def _search(ir: IR, consts: Sequence[Any], args: Sequence[Any], context: list
            ) -> tuple[Optional[_Culprit], list]:
    """Run ``ir`` eagerly, checking every equation; (the first culprit or None, the outputs)."""
    env: dict[Var, Any] = dict(zip(ir.const_vars, consts))
    env.update(zip(ir.in_vars, args))
    hosts: dict[int, Optional[np.ndarray]] = {}

    def read(atom: Any) -> Any:
        return read_env(env, atom)

    def host(atom: Any) -> Optional[np.ndarray]:
        if isinstance(atom, Literal):
            return _host(atom)
        key = id(atom)
        if key not in hosts:
            hosts[key] = _host(env[atom])
        return hosts[key]

    for eqn in ir.eqns:
        if eqn.primitive in effectful_primitives and not eqn.outputs:
            continue  # prints and runtime checks ran with the compiled program already
        ins = [read(a) for a in eqn.inputs]
        outs = apply_unchecked(eqn.primitive, ins, eqn.params)
        env.update(zip(eqn.outputs, outs))
        out_values = [host(v) for v in eqn.outputs]
        if not any(v is not None for v in out_values):
            continue
        in_values = [host(a) for a in eqn.inputs]
        for kind in _kinds:
            if _produced(eqn.primitive, in_values, out_values, kind):
                inner = _descend(eqn, ins, context + [eqn])
                return (inner or _Culprit(kind, eqn, context)), []
    return None, [read(a) for a in ir.outs]


def _region(region: Any) -> tuple[IR, list]:
    if isinstance(region, ClosedIR):
        return region.ir, list(region.consts)
    return region, []


def _run_region(region: Any, args: Sequence[Any], context: list
                ) -> tuple[Optional[_Culprit], list]:
    ir, consts = _region(region)
    return _search(ir, consts, list(args), context)


def _descend(eqn: Eqn, ins: list, context: list) -> Optional[_Culprit]:
    """Look inside an equation holding sub-IRs (control flow, custom derivatives) that
    produced a bad value, by its primitive's rule in ``descend_rules``. None when it has no
    rule (or its regions, run this way, produce nothing bad)."""
    rule = descend_rules.get(eqn.primitive)
    if rule is None:
        return None
    return rule(eqn.params, ins, lambda region, args: _run_region(region, list(args), context))
