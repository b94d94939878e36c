"""Primitives for user-defined derivatives and for ``stop_gradient``.

* ``custom_jvp_call[fun, jvp, ...] *args`` computes ``fun`` (a region, inlined when lowered);
  its JVP rule calls the user's JVP function instead of differentiating ``fun``.
* ``custom_vjp_call[fun, fwd, bwd, ...] *args`` computes ``fun``; its JVP rule runs the user's
  ``fwd`` and makes the tangents a ``custom_lin`` of the residuals, whose transpose rule is the
  user's ``bwd``. (As in JAX, it cannot be differentiated in forward mode.)
* ``stop_gradient`` is the identity with a zero derivative.

Under ``vmap`` a call's region is batched and the user's rules are wrapped in ``vmap``, so
derivatives of the batched call keep the custom rules.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from pyree import tree_util

from ..core.ir import IR, ShapedArray
from ..core.trace import Primitive, TypedScalar, abstract_eval_rules, get_aval, hooks, located
from ..interpreters import ad, batching
from ..interpreters.ad import Zero, instantiate, jvp_rules, tangent_aval, transpose_rules
from ..interpreters.batching import BatchAxis, batch_region, batched_aval, batching_rules, to_front
from ..interpreters.nan_check import descend_rules
from ..backend import eager
from ..backend.lower import BF16_KEPT_PRIMITIVES, Lowering, RuleContext, lowering_rules

stop_gradient_p = Primitive("stop_gradient")
abstract_eval_rules[stop_gradient_p] = lambda x: x
lowering_rules[stop_gradient_p] = lambda ctx, x: x
eager.PASS_THROUGH_PRIMITIVES.add(stop_gradient_p)
BF16_KEPT_PRIMITIVES.add(stop_gradient_p)


def _stop_gradient_jvp(primals, tangents):
    (x,) = primals
    return [stop_gradient_p.bind(x)], [Zero(get_aval(x))]


jvp_rules[stop_gradient_p] = _stop_gradient_jvp

custom_jvp_call_p = Primitive("custom_jvp_call", multiple_results=True)
custom_vjp_call_p = Primitive("custom_vjp_call", multiple_results=True)
custom_lin_p = Primitive("custom_lin", multiple_results=True)
eager.STATIC_SHAPE_PRIMITIVES.update({custom_jvp_call_p, custom_vjp_call_p, custom_lin_p})


def _region_abstract_eval(*avals: ShapedArray, fun: IR, **params: Any) -> list:
    return fun.out_avals


def _inline_lowering(ctx: RuleContext, *args, fun: IR, **params):
    sub = Lowering(ctx.dynamic)
    sub._input_views = ctx.lowering._input_views
    return sub.lower_ir(fun, list(args))


for _p in (custom_jvp_call_p, custom_vjp_call_p):
    abstract_eval_rules[_p] = _region_abstract_eval
    lowering_rules[_p] = _inline_lowering


class CallInfo:
    """What a custom-derivative call needs beyond its region: the user's functions and the
    pytree structures of the differentiated arguments and the outputs. Compared by identity
    (it is a parameter of the equation)."""

    def __init__(self, rule: Any, in_tree: Any, out_tree: Any, num_consts: int,
                 nondiff: tuple) -> None:
        self.rule = rule            # jvp function, or (fwd, bwd)
        self.in_tree = in_tree      # structure of the differentiated arguments (a tuple)
        self.out_tree = out_tree
        self.num_consts = num_consts  # leading inputs that are captured values, not arguments
        self.nondiff = nondiff      # the non-differentiated arguments, in order, with positions

    def __repr__(self) -> str:
        return f"<custom rule {getattr(self.rule, '__name__', self.rule)!s:.40}>"


def _user_values(values: Sequence[Any]) -> list:
    """Operands as values user code can compute with: a literal of the IR (a TypedScalar, e.g.
    a Python scalar argument) becomes a rank-0 array (or tracer)."""
    from ..core import primitives as P
    return [P.broadcast_in_dim_p.bind(v, shape=(), broadcast_dimensions=())
            if isinstance(v, TypedScalar) else v for v in values]


def _custom_jvp_rule(primals, tangents, *, fun, info):
    primals = _user_values(primals)
    args = primals[info.num_consts:]
    t_args = tangents[info.num_consts:]
    t_args = [instantiate(t) if not isinstance(t, Zero) else ad.zeros(tangent_aval(t.aval))
              for t in t_args]
    primal_tree = tree_util.tree_unflatten(info.in_tree, list(args))
    tangent_tree = tree_util.tree_unflatten(info.in_tree, t_args)
    with located(None):  # the user's rule: its own lines
        # (the user's rule with its Python control flow on traced values converted too)
        rule = hooks.converted(info.rule)
        out, t_out = rule(*[v for _, v in info.nondiff], tuple(primal_tree), tuple(tangent_tree))
    out_leaves, out_tree = tree_util.tree_flatten(out)
    t_leaves, t_tree = tree_util.tree_flatten(t_out)
    if out_tree != info.out_tree or t_tree != info.out_tree:
        raise TypeError(f"the custom JVP rule must return (primal_out, tangent_out) with the "
                        f"function's output structure {info.out_tree}; got {out_tree} and "
                        f"{t_tree}")
    for p, t in zip(out_leaves, t_leaves):
        pa, ta = get_aval(p), get_aval(t)
        if pa.shape != ta.shape:
            raise TypeError(f"the custom JVP rule returned a tangent of shape {ta.shape} for an "
                            f"output of shape {pa.shape}")
    return out_leaves, t_leaves


jvp_rules[custom_jvp_call_p] = _custom_jvp_rule


def _custom_vjp_rule(primals, tangents, *, fun, info):
    fwd, bwd = info.rule
    primals = _user_values(primals)
    args = primals[info.num_consts:]
    arg_tree = tree_util.tree_unflatten(info.in_tree, list(args))
    full = _with_nondiff(info.nondiff, tuple(arg_tree))
    with located(None):  # the user's rule: its own lines
        result = hooks.converted(fwd)(*full)
    if not isinstance(result, tuple) or len(result) != 2:
        raise TypeError("a custom_vjp fwd function must return a pair (output, residuals)")
    out, residuals = result
    out_leaves, out_tree = tree_util.tree_flatten(out)
    if out_tree != info.out_tree:
        raise TypeError(f"custom_vjp fwd returned an output of structure {out_tree}, but the "
                        f"function's output has structure {info.out_tree}")
    res_leaves, res_tree = tree_util.tree_flatten(residuals)
    t_args = tangents[info.num_consts:]
    t_args = [instantiate(t) if not isinstance(t, Zero) else ad.zeros(tangent_aval(t.aval))
              for t in t_args]
    out_avals = [tangent_aval(get_aval(o)) for o in out_leaves]
    lin_info = CallInfo((bwd, res_tree), info.in_tree, out_tree, len(res_leaves), info.nondiff)
    t_out = custom_lin_p.bind(*res_leaves, *t_args, info=lin_info, out_avals=tuple(out_avals))
    return out_leaves, t_out


def _with_nondiff(nondiff: tuple, diff_args: tuple) -> tuple:
    """The full argument list: non-differentiated arguments back at their positions."""
    total = len(diff_args) + len(nondiff)
    positions = dict(nondiff)
    it = iter(diff_args)
    return tuple(positions[i] if i in positions else next(it) for i in range(total))


jvp_rules[custom_vjp_call_p] = _custom_vjp_rule


def _nan_search_call(params: dict, ins: list, run_region):
    """debug_nans' search inside a custom_jvp/custom_vjp call: its function (nan_check.py)."""
    return run_region(params["fun"], ins)[0]


descend_rules[custom_jvp_call_p] = descend_rules[custom_vjp_call_p] = _nan_search_call


def _custom_lin_abstract_eval(*avals, info, out_avals):
    return list(out_avals)


def _custom_lin_lowering(ctx, *args, info, out_avals):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function: only "
                    "reverse mode (grad, vjp) uses its bwd rule")


def _custom_lin_transpose(cts, *args, info, out_avals):
    bwd, res_tree = info.rule
    n_res = info.num_consts
    args = _user_values(args[:n_res]) + list(args[n_res:])
    residuals = tree_util.tree_unflatten(res_tree, list(args[:n_res]))
    ct_tree = tree_util.tree_unflatten(info.out_tree, [instantiate(c) for c in cts])
    with located(None):  # the user's rule: its own lines
        in_cts = hooks.converted(bwd)(*[v for _, v in info.nondiff], residuals, ct_tree)
    if not isinstance(in_cts, (tuple, list)):
        raise TypeError("a custom_vjp bwd function must return a tuple with one cotangent per "
                        "differentiated argument")
    leaves, tree = tree_util.tree_flatten(tuple(in_cts), is_leaf=lambda x: x is None)
    expected = tree_util.tree_structure(tuple(tree_util.tree_unflatten(
        info.in_tree, [0] * info.in_tree.num_leaves)))
    flat: list = []
    for arg_ct, arg_def in zip(in_cts, expected.children()):
        if arg_ct is None:
            flat.extend([None] * arg_def.num_leaves)
        else:
            sub, sub_tree = tree_util.tree_flatten(arg_ct)
            if sub_tree != arg_def:
                raise TypeError(f"custom_vjp bwd returned a cotangent of structure {sub_tree} for "
                                f"an argument of structure {arg_def}")
            flat.extend(sub)
    return [None] * n_res + flat


abstract_eval_rules[custom_lin_p] = _custom_lin_abstract_eval
lowering_rules[custom_lin_p] = _custom_lin_lowering
transpose_rules[custom_lin_p] = _custom_lin_transpose


# -- batching -------------------------------------------------------------------------------------

def _stop_gradient_batching(axis, values, dims):
    return [stop_gradient_p.bind(values[0])], [dims[0]]


batching_rules[stop_gradient_p] = _stop_gradient_batching


def _vmap(fun: Callable, in_axes: Any, axis: BatchAxis) -> Callable:
    """``fun`` vectorized over ``axis`` (outputs batched at the front), by ``pyree.vmap``
    (``batching.vectorize``, which pyree.vmap installs: a vmap is what batches the call)."""
    return batching.vectorize(fun, in_axes=in_axes, out_axes=0, axis_name=axis.name,
                              axis_size=axis.size)


def _custom_jvp_batching(axis, values, dims, *, fun, info):
    """The batched call keeps its custom JVP: the user's rule, vectorized."""
    nc = info.num_consts
    out_dims = [0] * len(fun.outs)
    fun_b, _ = batch_region(fun, dims, axis, out_dims)
    arg_axes = tuple(tree_util.tree_unflatten(info.in_tree, list(dims[nc:])))
    nondiff = [v for _, v in info.nondiff]

    def batched_jvp(primals, tangents):
        rule = lambda p, t: info.rule(*nondiff, p, t)
        return _vmap(rule, (arg_axes, arg_axes), axis)(primals, tangents)

    info_b = CallInfo(batched_jvp, info.in_tree, info.out_tree, nc, ())
    return custom_jvp_call_p.bind(*values, fun=fun_b, info=info_b), out_dims


def _custom_vjp_batching(axis, values, dims, *, fun, info):
    """The batched call keeps its custom VJP: ``fwd`` and ``bwd`` vectorized. Every argument is
    batched (at the front), so that ``bwd``'s cotangents have the arguments' batched shapes."""
    nc = info.num_consts
    consts = values[:nc]
    args = [to_front(x, d, axis.size) for x, d in zip(values[nc:], dims[nc:])]
    out_dims = [0] * len(fun.outs)
    fun_b, _ = batch_region(fun, list(dims[:nc]) + [0] * len(args), axis, out_dims)
    fwd, bwd = info.rule

    def batched_fwd(*diff_args):
        return _vmap(lambda *d: fwd(*_with_nondiff(info.nondiff, d)), 0, axis)(*diff_args)

    info_b = CallInfo((batched_fwd, _batched_bwd(bwd, info.nondiff, axis)), info.in_tree,
                      info.out_tree, nc, ())
    return custom_vjp_call_p.bind(*consts, *args, fun=fun_b, info=info_b), out_dims


def _batched_bwd(bwd: Callable, nondiff: tuple, axis: BatchAxis) -> Callable:
    """A custom_vjp ``bwd(residuals, cotangents)`` on batched (at the front) values."""
    values = [v for _, v in nondiff]

    def batched(residuals, cts):
        return _vmap(lambda r, c: bwd(*values, r, c), 0, axis)(residuals, cts)
    return batched


def _custom_lin_batching(axis, values, dims, *, info, out_avals):
    """The linear part of a custom_vjp call (residuals, tangents): batched at the front, with
    ``bwd`` vectorized."""
    bwd, res_tree = info.rule
    values = [to_front(x, d, axis.size) for x, d in zip(values, dims)]
    info_b = CallInfo((_batched_bwd(bwd, info.nondiff, axis), res_tree), info.in_tree,
                      info.out_tree, info.num_consts, ())
    out_avals_b = tuple(batched_aval(a, 0, axis.size) for a in out_avals)
    outs = custom_lin_p.bind(*values, info=info_b, out_avals=out_avals_b)
    return outs, [0] * len(outs)


batching_rules[custom_jvp_call_p] = _custom_jvp_batching


batching_rules[custom_vjp_call_p] = _custom_vjp_batching


batching_rules[custom_lin_p] = _custom_lin_batching
