"""Effects of compiled code on the host: ``print`` of traced values and runtime ``assert``s.

Both lower to ``flow.tensor.trace`` ops that hand tensors to a host handler while the program
runs (runtime/callbacks.py), so they happen at every call, in program order, and only on the
paths the program takes.

* ``debug_callback[callback, batch] *values`` calls ``callback`` with the values as NumPy
  arrays (``print``, ``pyree.debug.print``/``callback``). Under ``vmap`` the values carry
  leading batch axes of sizes ``batch``; a per-example callback is called once per example.
* ``check[key] ok token`` reports ``token`` to the host when ``ok`` is false; the jitted call
  that passed ``token`` raises the check's AssertionError once the program has finished.
  Under ``vmap`` it asserts its condition for every example.

Under ``grad`` both see primal values only, once (as JAX's ``debug.print``).
"""
from __future__ import annotations

import builtins
import hashlib
import itertools
import sys
import threading
from typing import Any, Optional

import numpy as np

from pyree import tree_util
from pyree.runtime import callbacks

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.source import user_loc
from ..core.trace import (Primitive, Tracer, _state, abstract_eval_rules, current_builder,
                          effectful_primitives)
from ..interpreters.ad import jvp_rules
from ..interpreters.batching import BatchAxis, batching_rules, broadcast_batched, moveaxis
from ..backend.lower import _compare, index_constant, lowering_rules, mlir, op, scalar_like

check_p = Primitive("check", multiple_results=True)
effectful_primitives.add(check_p)


def _check_abstract_eval(ok: ShapedArray, token: ShapedArray, *, key: str) -> list:
    if ok.shape != () or ok.dtype != np.bool_:
        raise TypeError(f"check needs a boolean scalar condition, got {ok.str_short()}")
    return []


abstract_eval_rules[check_p] = _check_abstract_eval


def _trace_op(key: str, values) -> None:
    from iree.compiler.dialects import flow
    ir = mlir()
    # Unknown dimensions (eager kernels) are passed along with the values.
    dims = []
    for value in values:
        shaped = ir.RankedTensorType(value.type)
        for i in range(shaped.rank):
            if shaped.is_dynamic_dim(i):
                dims.append(op("tensor.dim", [ir.IndexType.get()],
                               [value, index_constant(i)]).result)
    flow.TensorTraceOp(key, list(values), dims)


def _check_lowering(ctx, ok, token, *, key):
    ir = mlir()
    bool_aval = ShapedArray((), np.dtype(np.bool_))
    failed = _compare(ctx, ok, scalar_like(False, np.bool_), "EQ", bool_aval)
    if_op = op("stablehlo.if", [], [failed], regions=2)
    then_block = ir.Block.create_at_start(if_op.regions[0], [])
    with ir.InsertionPoint(then_block):
        _trace_op(key, [token])
        op("stablehlo.return", [], [])
    else_block = ir.Block.create_at_start(if_op.regions[1], [])
    with ir.InsertionPoint(else_block):
        op("stablehlo.return", [], [])
    return []


lowering_rules[check_p] = _check_lowering


# A check has no outputs: differentiating a function that checks a traced value runs the check
# on the primal values (once, as JAX's debug.print under grad) and gives it nothing to
# differentiate.
def _check_jvp(primals, tangents, **params):
    check_p.bind(*primals, **params)
    return [], []


jvp_rules[check_p] = _check_jvp


# -- debug callbacks -------------------------------------------------------------------------------

debug_callback_p = Primitive("debug_callback", multiple_results=True)
effectful_primitives.add(debug_callback_p)


class DebugCallback:
    """What a ``debug_callback`` equation calls: ``fn(arrays)`` with one NumPy array per traced
    value. ``per_example``: under ``vmap``, call it once per example (``pyree.debug.print``,
    as JAX) rather than once with the whole batch (Python's ``print``, which shows the batch).
    ``parts`` are stable across processes (they name the compiled key); ``identity`` tells
    two callbacks from the same source position apart."""

    __slots__ = ("fn", "per_example", "parts", "identity")

    def __init__(self, fn: Any, per_example: bool, parts: Any, identity: tuple) -> None:
        self.fn = fn
        self.per_example = per_example
        self.parts = parts
        self.identity = identity

    def run(self, arrays: list, batch: tuple = ()) -> None:
        """Call ``fn`` on ``arrays`` whose leading axes of sizes ``batch`` are vmapped ones."""
        if not batch or not self.per_example:
            self.fn(list(arrays))
            return
        for index in np.ndindex(*batch):
            self.fn([a[index] for a in arrays])

    # Equal callbacks (same source position and text, same user function) may share compiled
    # code: eager kernels are cached by their parameters.
    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, DebugCallback) and self.per_example == other.per_example
                and repr(self.parts) == repr(other.parts)
                and callbacks.same_identity(self.identity, other.identity))

    def __hash__(self) -> int:
        return hash((self.per_example, repr(self.parts)))

    def __repr__(self) -> str:
        return f"DebugCallback({getattr(self.fn, '__qualname__', self.fn)})"


abstract_eval_rules[debug_callback_p] = lambda *values, callback, batch: []


def _debug_callback_lowering(ctx, *values, callback: DebugCallback, batch: tuple):
    count = len(values)

    def handler(arrays: list) -> None:
        callback.run(arrays[:count], batch)

    key = callbacks.register_unique("debug", (callback.parts, batch, count),
                                    callback.identity + (batch,), handler)
    _trace_op(key, values or [scalar_like(0, np.int8)])
    return []


lowering_rules[debug_callback_p] = _debug_callback_lowering


def _debug_callback_jvp(primals, tangents, *, callback, batch):
    # Effects see primal values only, once (as JAX's debug.print under grad).
    debug_callback_p.bind(*primals, callback=callback, batch=batch)
    return [], []


def _debug_callback_batching(axis: BatchAxis, values, dims, *, callback, batch):
    if callback.per_example:
        # Every value gets this vmap's axis in front (unbatched ones are repeated), so that
        # the host can hand each example its own slice.
        values = [broadcast_batched(x, axis.size, 0) if d is None else moveaxis(x, d, 0)
                  for x, d in zip(values, dims)]
        batch = (axis.size,) + batch
    else:
        values = [x if d is None else moveaxis(x, d, 0) for x, d in zip(values, dims)]
    debug_callback_p.bind(*values, callback=callback, batch=batch)
    return [], []


jvp_rules[debug_callback_p] = _debug_callback_jvp


batching_rules[debug_callback_p] = _debug_callback_batching


def debug_callback(fn: Any, values: list, *, per_example: bool, parts: Any,
                   identity: tuple) -> None:
    """Call ``fn(arrays)`` when the program runs, with ``values`` (tracers) as NumPy arrays."""
    debug_callback_p.bind(*values, callback=DebugCallback(fn, per_example, parts, identity),
                          batch=())


def _stable_key(kind: str, *parts: Any) -> str:
    # Derived from the source position and the template, so that the same program gives the
    # same MLIR text (and disk-cache key) in every process.
    digest = hashlib.sha1(repr(parts).encode()).hexdigest()[:16]
    return f"pyree.{kind}.{digest}"


# -- print -----------------------------------------------------------------------------------------

def traced_print(*args: Any, sep: Optional[str] = " ", end: Optional[str] = "\n", file: Any = None,
                 flush: bool = False) -> None:
    """``print`` inside converted code: traced values are printed when the program runs."""
    if current_builder() is None:
        builtins.print(*args, sep=sep, end=end, file=file, flush=flush)
        return
    leaves, treedef = tree_util.tree_flatten(args)
    traced = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tracer)]
    static = {i: leaf for i, leaf in enumerate(leaves) if not isinstance(leaf, Tracer)}
    loc = user_loc(2)
    parts = ("print", loc and (loc.filename, loc.line, loc.col), repr(treedef),
             sorted((i, repr(v)) for i, v in static.items()), sep, end)
    stream = file

    def show(arrays: list) -> None:
        values = dict(static)
        values.update(zip(traced, arrays))
        shown = tree_util.tree_unflatten(treedef, [values[i] for i in range(len(leaves))])
        builtins.print(*shown, sep=sep, end=end, file=stream if stream is not None else
                       sys.stdout, flush=flush)

    # Python's print under vmap shows the whole batch (it is one statement of the program).
    debug_callback(show, [leaves[i] for i in traced], per_example=False, parts=parts,
                   identity=(stream,))


# -- checks ----------------------------------------------------------------------------------------

_failures: dict[int, list[str]] = {}
_failures_lock = threading.Lock()
_tokens = itertools.count(1)


def next_token() -> int:
    """A fresh token for one call of a program with checks."""
    return next(_tokens) & 0x7FFFFFFF


def pop_failures(token: int) -> list[str]:
    """The messages of the checks that failed in the call that used ``token``."""
    with _failures_lock:
        return _failures.pop(token, [])


def add_check(ok: Any, message: str) -> None:
    """Fail the running call with AssertionError(message) when the traced ``ok`` is false."""
    builders = _state.builders
    top = builders[0] if builders else None
    if top is None or not top.top_level:
        raise TypeError("an `assert` on a traced value needs jit: it is checked when the "
                        "compiled program runs, and this code is not inside a jitted function\n"
                        f"  ({message})")
    if top.check_token is None:
        top.check_token = top.new_input(ShapedArray((), np.dtype(np.int32)))
    key = _stable_key("check", message)

    def handler(arrays: list, message: str = message) -> None:
        with _failures_lock:
            _failures.setdefault(int(arrays[0]), []).append(message)

    callbacks.register(key, handler)
    check_p.bind(ok, top.check_token, key=key)


def _check_batching(axis, values, dims, *, key):
    """The assertion must hold for every example."""
    (ok, token), (ok_dim, token_dim) = values, dims
    if token_dim is not None:
        raise ValueError("internal: a check's token is batched")
    if ok_dim is not None:
        ok = P.reduce_and_p.bind(ok, axes=(ok_dim,))
    check_p.bind(ok, token, key=key)
    return [], []


batching_rules[check_p] = _check_batching
