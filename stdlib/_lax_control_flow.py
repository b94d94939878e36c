"""``lax.cond``, ``switch``, ``while_loop``, ``fori_loop``, ``scan`` and ``map``, with JAX's
signatures, built on the ``cond``/``while``/``scan`` primitives.

Functions passed in are traced as regions (and converted by the transpiler, so Python control
flow inside them works too). Loop carries keep their types from one iteration to the next; a
weakly typed initial value (a Python scalar) takes the type the body gives it, as in JAX.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Optional, Sequence

import numpy as np

from pyree import dtypes, tree_util
from pyree.runtime.array import Array
from pyree.transpiler.families.control_flow import (cond_p, region_with_extra_inputs, scan_p,
                                                    while_p)
from pyree.transpiler.core.ir import IR, ShapedArray
from pyree.transpiler.frontend.operators import join_avals
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import Tracer, get_aval, trace_region

_MAX_RETRACES = 4


def _convert_fn(fun: Callable) -> Callable:
    """The transpiler's version of ``fun`` (Python control flow on traced values converted)."""
    import pyree.numpy  # noqa: F401 (installs the array operators the traced bodies use)
    from pyree.transpiler.frontend.convert import converted
    return converted(fun)


def _flatten_operands(tree: Any, what: str) -> tuple[list, Any, list[ShapedArray]]:
    leaves, treedef = tree_util.tree_flatten(tree)
    avals = []
    for leaf in leaves:
        try:
            avals.append(get_aval(leaf))
        except TypeError:
            raise TypeError(f"{what} must be arrays, scalars or pytrees of them; got a "
                            f"{type(leaf).__name__}{where(None)}") from None
    return leaves, treedef, avals


def _cast_all(values: Sequence[Any], avals: Sequence[ShapedArray]) -> list:
    from pyree.numpy._util import convert
    out = []
    for v, a in zip(values, avals):
        va = get_aval(v)
        out.append(v if (va.dtype == a.dtype and va.weak_type == a.weak_type) else
                   convert(v, a.dtype, a.weak_type))
    return out


def _leaf_paths(treedef) -> list[str]:
    return [p or "the value" for p in tree_util.leaf_paths(treedef)]


# -- cond / switch ------------------------------------------------------------------------------

def switch(index: Any, branches: Sequence[Callable], *operands: Any, operand: Any = None) -> Any:
    """Apply ``branches[index](*operands)``; ``index`` is clamped into range. Only the chosen
    branch runs (both are compiled).

    Example::

        lax.switch(i, [lambda x: x + 1, lambda x: x * 2, jnp.sin], x)
    """
    branches = list(branches)
    if not branches:
        raise ValueError("switch needs at least one branch")
    if operand is not None:
        operands = operands + (operand,)
    from pyree.numpy._util import convert
    index_aval = get_aval(index)
    if index_aval.shape != () or index_aval.dtype.kind not in "iub":
        raise TypeError(f"switch index must be an integer scalar, got {index_aval.str_short()}"
                        f"{where(None)}")
    from pyree import lax
    index = convert(index, np.dtype(np.int32))
    if len(branches) > 1:
        index = lax.clamp(0, index, len(branches) - 1)
    return _cond(index, branches, operands)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = None) -> Any:
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one structured op.

    Example::

        lax.cond(x.sum() > 0, lambda x: x * 2, lambda x: -x, x)
    """
    if operand is not None:
        operands = operands + (operand,)
    pred_aval = get_aval(pred)
    if pred_aval.shape != ():
        raise TypeError(f"cond predicate must be a scalar, got {pred_aval.str_short()}"
                        f"{where(None)}")
    from pyree.numpy._util import convert
    from pyree import lax
    if pred_aval.dtype != np.bool_:
        pred = lax.ne(convert(pred, pred_aval.dtype), 0)
    index = convert(pred, np.dtype(np.int32))
    return _cond(index, [false_fun, true_fun], operands)


def _cond(index: Any, branches: Sequence[Callable], operands: tuple) -> Any:
    leaves, in_tree, in_avals = _flatten_operands(operands, "cond/switch operands")
    out_trees: list = [None] * len(branches)
    fns = [_convert_fn(b) for b in branches]

    def tracer_for(k: int, casts: Optional[list] = None) -> Callable:
        def run(*xs):
            out = fns[k](*tree_util.tree_unflatten(in_tree, list(xs)))
            flat, tree = tree_util.tree_flatten(out)
            out_trees[k] = tree
            return _cast_all(flat, casts) if casts else flat
        return run

    traced = [trace_region(tracer_for(k), in_avals) for k in range(len(branches))]
    for k in range(1, len(branches)):
        if out_trees[k] != out_trees[0]:
            raise TypeError(f"cond/switch branches return different structures: branch 0 "
                            f"returns {out_trees[0]}, branch {k} returns {out_trees[k]}"
                            f"{where(None)}")
    out_avals = [ir.out_avals for ir, _ in traced]
    joined = list(out_avals[0])
    for k, avals in enumerate(out_avals[1:], start=1):
        for i, (a, b) in enumerate(zip(joined, avals)):
            j = join_avals(a, b)
            if j is None:
                raise TypeError(
                    f"cond/switch branches must return the same types, but output "
                    f"{_leaf_paths(out_trees[0])[i]} is {out_avals[0][i].str_short()} in branch 0 "
                    f"and {b.str_short()} in branch {k}{where(None)}")
            joined[i] = j
    for k in range(len(branches)):
        if [a.dtype for a in out_avals[k]] != [a.dtype for a in joined]:
            traced[k] = trace_region(tracer_for(k, joined), in_avals)
    const_avals = [[get_aval(c) for c in consts] for _, consts in traced]
    regions = []
    for k, (region, consts) in enumerate(traced):
        before = [a for avals in const_avals[:k] for a in avals]
        after = [a for avals in const_avals[k + 1:] for a in avals]
        regions.append(region_with_extra_inputs(region, before, after, len(consts)))
    all_consts = [c for _, consts in traced for c in consts]
    outs = cond_p.bind(index, *all_consts, *leaves, branches=tuple(regions))
    return tree_util.tree_unflatten(out_trees[0], outs)


# -- loops ------------------------------------------------------------------------------------------

def _trace_loop_body(make_body: Callable[[list], Callable], carry_avals: list[ShapedArray],
                     extra_avals: Sequence[ShapedArray], carry_tree, what: str
                     ) -> tuple[IR, list, list[ShapedArray]]:
    """Trace a loop body until its carry types are stable: a weakly typed initial value takes
    the type the body gives it. Returns (region, consts, carry avals)."""
    for _ in range(_MAX_RETRACES):
        region, consts = trace_region(make_body(carry_avals), list(carry_avals) + list(extra_avals))
        outs = region.out_avals[:len(carry_avals)]
        if all(a.shape == b.shape and a.dtype == b.dtype for a, b in zip(outs, carry_avals)):
            return region, consts, carry_avals
        joined = []
        for i, (a, b) in enumerate(zip(carry_avals, outs)):
            j = join_avals(a, b)
            if j is None or j.dtype != b.dtype and not b.weak_type:
                raise TypeError(
                    f"{what}: the loop carry must keep its type, but "
                    f"{_leaf_paths(carry_tree)[i]} is {a.str_short()} when the loop starts and "
                    f"{b.str_short()} after the body{where(None)}")
            joined.append(j)
        carry_avals = joined
    raise TypeError(f"{what}: the loop carry types did not settle: {_avals_text(carry_avals)}")


def _avals_text(avals: Sequence[ShapedArray]) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def while_loop(cond_fun: Callable, body_fun: Callable, init_val: Any) -> Any:
    """``while cond_fun(val): val = body_fun(val)``, as one structured op.

    Example::

        lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 2), (0, 1.0))
    """
    leaves, carry_tree, carry_avals = _flatten_operands(init_val, "while_loop's init_val")
    body_fn, cond_fn = _convert_fn(body_fun), _convert_fn(cond_fun)

    def make_body(avals):
        def run(*xs):
            out = body_fn(tree_util.tree_unflatten(carry_tree, list(xs)))
            flat, tree = tree_util.tree_flatten(out)
            if tree != carry_tree:
                raise TypeError(f"while_loop body_fun must return the structure it takes: "
                                f"{carry_tree} in, {tree} out{where(None)}")
            return flat
        return run

    body, body_consts, carry_avals = _trace_loop_body(make_body, carry_avals, [], carry_tree,
                                                      "while_loop")
    init = _cast_all(leaves, carry_avals)

    def run_cond(*xs):
        out = cond_fn(tree_util.tree_unflatten(carry_tree, list(xs)))
        aval = get_aval(out)
        if aval.shape != () or aval.dtype != np.bool_:
            raise TypeError(f"while_loop cond_fun must return a boolean scalar, got "
                            f"{aval.str_short()}{where(None)}")
        return [out]

    cond_region, cond_consts = trace_region(run_cond, carry_avals)
    outs = while_p.bind(*cond_consts, *body_consts, *init, cond_ir=cond_region, body_ir=body,
                        cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))
    return tree_util.tree_unflatten(carry_tree, outs)


def _is_concrete_int(x: Any) -> bool:
    if isinstance(x, (Tracer,)):
        return False
    try:
        operator.index(x)
        return True
    except TypeError:
        return False


def fori_loop(lower: Any, upper: Any, body_fun: Callable, init_val: Any, *,
              unroll: Any = None) -> Any:
    """``for i in range(lower, upper): val = body_fun(i, val)``. Static bounds give a counted
    loop (a ``scan``); traced bounds a ``while``.

    Example::

        lax.fori_loop(0, 10, lambda i, acc: acc + i, 0)
    """
    body_fn = _convert_fn(body_fun)
    if _is_concrete_int(lower) and _is_concrete_int(upper):
        lo, hi = operator.index(lower), operator.index(upper)
        if hi <= lo:
            return init_val
        int_t = dtypes.canonicalize_dtype(int)
        from pyree.numpy._util import typed_scalar
        from pyree import lax
        # Python int bounds give a weakly typed index, as in JAX (fori_loop(0, 10, lambda i, x:
        # x + i, 0) is a weak int32).
        weak = type(lower) is int and type(upper) is int

        def step(carry, _):
            i, val = carry
            return (lax.add(i, typed_scalar(1, int_t, weak)), body_fn(i, val)), None

        start = lax.broadcast_in_dim(typed_scalar(lo, int_t, weak), (), ())
        (_, val), _ = scan(step, (start, init_val), None, length=hi - lo)
        return val
    from pyree.numpy._util import promote_dtypes
    from pyree import lax
    lower, upper = promote_dtypes(lower, upper)
    lower = lax.broadcast_in_dim(lower, (), ()) if not isinstance(lower, (Tracer, Array)) else lower

    def cond_f(carry):
        return lax.lt(carry[0], carry[1])

    def body_f(carry):
        i, n, val = carry
        return lax.add(i, 1), n, body_fn(i, val)

    return while_loop(cond_f, body_f, (lower, upper, init_val))[2]


def scan(f: Callable, init: Any, xs: Any = None, length: Optional[int] = None,
         reverse: bool = False, unroll: Any = 1) -> tuple[Any, Any]:
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns the final carry
    and the stacked ``y``s.

    Example::

        total, cumsum = lax.scan(lambda c, x: (c + x, c + x), 0.0, jnp.arange(5.0))
    """
    x_leaves, x_tree, x_avals = _flatten_operands(xs, "scan's xs")
    lengths = {a.shape[0] for a in x_avals if a.ndim}
    if any(a.ndim == 0 for a in x_avals):
        raise TypeError(f"scan: xs leaves must have a leading axis to scan over{where(None)}")
    if length is not None:
        length = operator.index(length)
        lengths.add(length)
    if len(lengths) != 1:
        raise ValueError(f"scan: xs leaves and length disagree on the loop length: "
                         f"{sorted(lengths) or 'none given (pass length=)'}{where(None)}")
    (length,) = lengths
    c_leaves, carry_tree, carry_avals = _flatten_operands(init, "scan's init")
    slice_avals = [a.update(shape=a.shape[1:]) for a in x_avals]
    f_conv = _convert_fn(f)
    y_tree_box: list = [None]
    n_carry = len(carry_avals)

    def make_body(avals):
        def run(*vals):
            carry = tree_util.tree_unflatten(carry_tree, list(vals[:n_carry]))
            x = tree_util.tree_unflatten(x_tree, list(vals[n_carry:]))
            out = f_conv(carry, x)
            if not isinstance(out, tuple) or len(out) != 2:
                raise TypeError(f"scan body must return a pair (carry, y), got "
                                f"{type(out).__name__}{where(None)}")
            new_carry, y = out
            c_flat, c_tree = tree_util.tree_flatten(new_carry)
            if c_tree != carry_tree:
                raise TypeError(f"scan body must return the carry structure it takes: "
                                f"{carry_tree} in, {c_tree} out{where(None)}")
            y_flat, y_tree_box[0] = tree_util.tree_flatten(y)
            return c_flat + y_flat
        return run

    body, consts, carry_avals = _trace_loop_body(make_body, carry_avals, slice_avals,
                                                 carry_tree, "scan")
    init_leaves = _cast_all(c_leaves, carry_avals)
    outs = scan_p.bind(*consts, *init_leaves, *x_leaves, body=body, length=length,
                       reverse=bool(reverse), num_consts=len(consts), num_carry=n_carry)
    carry = tree_util.tree_unflatten(carry_tree, outs[:n_carry])
    ys = tree_util.tree_unflatten(y_tree_box[0], outs[n_carry:])
    return carry, ys


def map(f: Callable, xs: Any) -> Any:
    """``f`` applied to each slice of ``xs`` along the leading axis, results stacked.

    Example::

        lax.map(lambda row: row.sum(), jnp.ones((3, 4)))   # [4., 4., 4.]
    """
    f_conv = _convert_fn(f)
    return scan(lambda carry, x: (carry, f_conv(x)), (), xs)[1]
