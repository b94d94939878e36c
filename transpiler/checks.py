"""Effects of compiled code on the host: ``print`` of traced values and runtime ``assert``s.

Both lower to ``flow.tensor.trace`` ops that hand tensors to a host handler while the program
runs (runtime/callbacks.py), so they happen at every call, in program order, and only on the
paths the program takes.

* ``debug_print[key] *values`` prints with the formatter registered under ``key``.
* ``check[key] ok token`` reports ``token`` to the host when ``ok`` is false; the jitted call
  that passed ``token`` raises the check's AssertionError once the program has finished.
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

from .ir import ShapedArray
from .lower import _compare, lowering_rules, mlir, op, scalar_like
from .source import user_loc
from .trace import (Primitive, Tracer, _state, abstract_eval_rules, current_builder,
                    effectful_primitives)

debug_print_p = Primitive("debug_print", multiple_results=True)
check_p = Primitive("check", multiple_results=True)
effectful_primitives.update({debug_print_p, check_p})

abstract_eval_rules[debug_print_p] = lambda *values, key: []


def _check_abstract_eval(ok: ShapedArray, token: ShapedArray, *, key: str) -> list:
    if ok.shape != () or ok.dtype != np.bool_:
        raise TypeError(f"check needs a boolean scalar condition, got {ok.str_short()}")
    return []


abstract_eval_rules[check_p] = _check_abstract_eval


def _trace_op(key: str, values) -> None:
    from iree.compiler.dialects import flow
    flow.TensorTraceOp(key, list(values), [])


def _debug_print_lowering(ctx, *values, key):
    # IREE cannot parse back a trace of no values: give it one the handler ignores.
    _trace_op(key, values or [scalar_like(0, np.int8)])
    return []


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


lowering_rules[debug_print_p] = _debug_print_lowering
lowering_rules[check_p] = _check_lowering


def _stable_key(kind: str, *parts: Any) -> str:
    # Derived from the source position and the template, so that the same program gives the
    # same MLIR text (and disk-cache key) in every process.
    digest = hashlib.sha1(repr(parts).encode()).hexdigest()[:16]
    return f"pyree.{kind}.{digest}"


# -- print ------------------------------------------------------------------------------------------

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
    key = _stable_key("print", loc and (loc.filename, loc.line, loc.col), treedef,
                      sorted((i, repr(v)) for i, v in static.items()), sep, end)
    stream = file

    def handler(arrays: list) -> None:
        values = dict(static)
        values.update(zip(traced, arrays[:len(traced)]))
        shown = tree_util.tree_unflatten(treedef, [values[i] for i in range(len(leaves))])
        builtins.print(*shown, sep=sep, end=end, file=stream if stream is not None else
                       sys.stdout, flush=flush)

    callbacks.register(key, handler)
    debug_print_p.bind(*[leaves[i] for i in traced], key=key)


# -- checks -----------------------------------------------------------------------------------------

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
