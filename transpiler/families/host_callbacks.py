"""Host callbacks with results: ``pure_callback``. (``debug_callback``, which returns
nothing, is checks.py's.)

* ``pure_callback[callback, result_avals, vmap_method, sequential] *args`` calls a Python
  function on the host while the program runs and returns its results to the program. It is
  lowered to a call of a function of IREE host module ``pyree_host`` (runtime/callbacks.py):
  ``func.call @pyree_host.call_<n>_<m>_<types>(key, args...)``; the compiler makes the call
  wait for its inputs and hands them over as buffer views.
  Under ``vmap`` it follows JAX's ``vmap_method``: ``"sequential"`` calls the function once per
  example (the host loops over the leading axes listed in ``sequential``: (size, which
  arguments are batched) per vmap, outermost first); ``"expand_dims"``, ``"broadcast_all"``
  and ``"legacy_vectorized"`` call it once on the whole batch. It has no JVP (as in JAX:
  wrap it in ``custom_jvp``).
"""
from __future__ import annotations

import hashlib
from typing import Any, Callable, Optional, Sequence

import numpy as np

from pyree import dtypes, tree_util
from pyree.runtime import callbacks
from pyree.runtime.array import Array, device_put_numpy

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.source import user_loc, where
from ..core.trace import Primitive, Tracer, abstract_eval_rules, current_builder, get_aval
from ..interpreters.ad import jvp_rules
from ..interpreters.batching import (BatchAxis, batched_aval, batching_rules, broadcast_batched,
                                     moveaxis)
from ..backend.lower import i64_constant, lowering_rules, mlir


# -- pure_callback ---------------------------------------------------------------------------------

pure_callback_p = Primitive("pure_callback", multiple_results=True)

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized")


class HostCallback:
    """The user's function behind a ``pure_callback`` equation: ``call(arrays)`` rebuilds its
    arguments, calls it, and returns its flat results checked against the declared ones."""

    __slots__ = ("fn", "name", "in_tree", "out_tree", "static", "traced", "parts")

    def __init__(self, fn: Callable, in_tree, out_tree, static: dict, traced: list,
                 parts: Any) -> None:
        self.fn = fn
        self.name = getattr(fn, "__qualname__", None) or repr(fn)
        self.in_tree = in_tree
        self.out_tree = out_tree
        self.static = static  # leaf position -> value, for leaves that are not arrays
        self.traced = traced  # leaf positions of the arrays
        self.parts = parts

    def call(self, arrays: Sequence[np.ndarray], result_avals: Sequence[ShapedArray]) -> list:
        leaves = dict(self.static)
        leaves.update(zip(self.traced, arrays))
        args, kwargs = tree_util.tree_unflatten(
            self.in_tree, [leaves[i] for i in range(len(leaves))])
        out = self.fn(*args, **kwargs)
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != self.out_tree:
            raise TypeError(f"pure_callback {self.name}: the callback returned a value of "
                            f"structure {out_tree}, but result_shape_dtypes has structure "
                            f"{self.out_tree}")
        return [callbacks.check_result(value, aval.shape, aval.dtype,
                                       f"pure_callback {self.name}: result {i} of the callback",
                                       dtypes.canonicalize_dtype)
                for i, (value, aval) in enumerate(zip(out_leaves, result_avals))]

    def run(self, arrays: Sequence[np.ndarray], result_avals: Sequence[ShapedArray],
            sequential: tuple) -> list:
        """The results for ``arrays`` whose leading axes are the ``sequential`` vmaps' ones:
        one call per example, results stacked."""
        if not sequential:
            return self.call(arrays, result_avals)
        (size, batched), inner = sequential[0], sequential[1:]
        example_avals = [a.update(shape=a.shape[1:]) for a in result_avals]
        per_example = [self.run([a[i] if b else a for a, b in zip(arrays, batched)],
                                example_avals, inner) for i in range(size)]
        if size == 0:
            return [np.zeros(a.shape, a.dtype) for a in result_avals]
        return [np.stack([outs[k] for outs in per_example]) for k in range(len(result_avals))]

    def identity(self) -> tuple:
        return (self.fn, repr(self.in_tree), repr(self.out_tree), repr(self.static))

    # Equal callbacks may share compiled code: eager kernels are cached by their parameters.
    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, HostCallback) and repr(self.parts) == repr(other.parts)
                and callbacks.same_identity(self.identity(), other.identity()))

    def __hash__(self) -> int:
        return hash(repr(self.parts))

    def __repr__(self) -> str:
        return f"HostCallback({self.name})"


def _pure_callback_abstract_eval(*args, callback, result_avals, vmap_method, sequential):
    return list(result_avals)


abstract_eval_rules[pure_callback_p] = _pure_callback_abstract_eval


def _module_body():
    """The body of the module being built (host function declarations go there)."""
    ir = mlir()
    op = ir.InsertionPoint.current.block.owner
    while op.name != "builtin.module":
        op = op.parent
    return op.regions[0].blocks[0]


def _declare(name: str, arg_types: list, result_types: list) -> None:
    ir = mlir()
    from iree.compiler.dialects import func
    body = _module_body()
    for existing in body.operations:
        attrs = existing.attributes
        if "sym_name" in attrs and ir.StringAttr(attrs["sym_name"]).value == name:
            return
    with ir.InsertionPoint.at_block_begin(body), ir.Location.unknown():
        func.FuncOp(name, ir.FunctionType.get(arg_types, result_types), visibility="private")


def _pure_callback_lowering(ctx, *args, callback: HostCallback, result_avals, vmap_method,
                            sequential):
    ir = mlir()
    from iree.compiler.dialects import func
    result_avals = list(result_avals)
    n_results = len(result_avals)

    def handler(arrays: list) -> list:
        return callback.run(arrays, result_avals, sequential)

    key = callbacks.register_unique(
        "host", (callback.parts, [a.str_short() for a in ctx.avals_in],
                 [a.str_short() for a in result_avals], sequential),
        callback.identity() + (sequential, tuple(result_avals)), handler, host=True)
    arg_types = [v.type for v in args]
    result_types = [ctx.out_type(i) for i in range(n_results)]
    i64 = ir.IntegerType.get_signless(64)
    # One declaration per signature: the name carries the types, which must match the call's.
    types = hashlib.sha1(repr([str(t) for t in arg_types + ["->"] + result_types]).encode())
    name = (f"{callbacks.HOST_MODULE}."
            f"{callbacks.host_function_name(len(args), n_results, types.hexdigest()[:10])}")
    _declare(name, [i64] + arg_types, result_types)
    call = func.CallOp(result_types, ir.FlatSymbolRefAttr.get(name),
                       [i64_constant(key)] + list(args))
    return list(call.results)


lowering_rules[pure_callback_p] = _pure_callback_lowering


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `pyree.custom_jvp` to use "
                     f"callbacks while taking gradients.{where(None)}")


jvp_rules[pure_callback_p] = _pure_callback_jvp


def _pure_callback_batching(axis: BatchAxis, args, dims, *, callback, result_avals,
                            vmap_method, sequential):
    if vmap_method is None:
        raise NotImplementedError(
            "vmap is only supported for pure_callback when vmap_method is one of "
            f"{', '.join(repr(m) for m in VMAP_METHODS)}; got vmap_method=None "
            f"(callback {callback.name}){where(None)}")
    size = axis.size
    out_avals = tuple(batched_aval(a, 0, size) for a in result_avals)
    if vmap_method in ("sequential", "sequential_unrolled"):
        args = [x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims)]
        sequential = ((size, tuple(d is not None for d in dims)),) + sequential
    elif vmap_method == "expand_dims":
        args = [_expand_front(x) if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims)]
    elif vmap_method == "broadcast_all":
        args = [broadcast_batched(x, size, 0) if d is None else moveaxis(x, d, 0)
                for x, d in zip(args, dims)]
    else:  # legacy_vectorized: unbatched arguments as they are
        args = [x if d is None else moveaxis(x, d, 0) for x, d in zip(args, dims)]
    outs = pure_callback_p.bind(*args, callback=callback, result_avals=out_avals,
                                vmap_method=vmap_method, sequential=sequential)
    return outs, [0] * len(outs)


def _expand_front(x: Any) -> Any:
    aval = get_aval(x)
    return P.broadcast_in_dim_p.bind(x, shape=(1,) + aval.shape,
                                     broadcast_dimensions=tuple(range(1, aval.ndim + 1)))


batching_rules[pure_callback_p] = _pure_callback_batching


def uses_host_callbacks(eqns) -> bool:
    """Whether any equation (or any region inside one) calls the host module: such a program
    runs only in the process that traced it (its callbacks are Python functions)."""
    from ..core.ir import regions
    for eqn in eqns:
        if eqn.primitive is pure_callback_p:
            return True
        if any(uses_host_callbacks(region.eqns) for region in regions(eqn)):
            return True
    return False


# -- the public function ---------------------------------------------------------------------------

def _result_avals(result_shape_dtypes: Any) -> tuple[list[ShapedArray], Any]:
    leaves, tree = tree_util.tree_flatten(result_shape_dtypes)
    avals = []
    for leaf in leaves:
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        if shape is None or dtype is None:
            raise TypeError(f"pure_callback: result_shape_dtypes must be a pytree of objects with "
                            f".shape and .dtype (pyree.ShapeDtypeStruct, arrays), got "
                            f"{type(leaf).__name__}{where(None)}")
        avals.append(ShapedArray(tuple(int(d) for d in shape), dtypes.canonicalize_dtype(dtype)))
    return avals, tree


def _is_array_leaf(x: Any) -> bool:
    return isinstance(x, (Tracer, Array, np.ndarray, np.generic, bool, int, float, complex))


def pure_callback(callback: Callable, result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: Optional[str] = None,
                  **kwargs: Any) -> Any:
    """Call the Python function ``callback`` from compiled code; its results flow back in.

    ``callback`` gets NumPy arrays (the pytrees ``args``/``kwargs`` with their array leaves
    converted) and must return arrays of the shapes and dtypes of ``result_shape_dtypes`` (a
    pytree of ``pyree.ShapeDtypeStruct``; float64 results are accepted for float32 ones when
    x64 is off). It should be pure: a call whose results are unused may be dropped, and under
    ``vmap`` it runs as ``vmap_method`` says (``"sequential"``: once per example;
    ``"expand_dims"``/``"broadcast_all"``: once on the whole batch). It is not differentiable
    (wrap it in ``pyree.custom_jvp``). An exception in ``callback`` is raised by the jitted call.

    Example::

        def host_sort(x):
            return np.sort(x)

        @pyree.jit
        def f(x):
            return pyree.pure_callback(host_sort, pyree.ShapeDtypeStruct(x.shape, x.dtype), x)

        f(jnp.array([3., 1., 2.]))     # Array([1., 2., 3.], dtype=float32)
    """
    if not callable(callback):
        raise TypeError(f"pure_callback: callback must be callable, got "
                        f"{type(callback).__name__}{where(None)}")
    if vmap_method is not None and vmap_method not in VMAP_METHODS:
        raise ValueError(f"pure_callback: vmap_method must be one of "
                         f"{', '.join(repr(m) for m in VMAP_METHODS)} or None, got "
                         f"{vmap_method!r}{where(None)}")
    del sharding  # one device: nothing to place
    result_avals, out_tree = _result_avals(result_shape_dtypes)
    leaves, in_tree = tree_util.tree_flatten((args, kwargs))
    traced = [i for i, leaf in enumerate(leaves) if _is_array_leaf(leaf)]
    static = {i: leaf for i, leaf in enumerate(leaves) if not _is_array_leaf(leaf)}
    values = [leaves[i] for i in traced]
    loc = user_loc(2)
    parts = ("pure_callback", getattr(callback, "__module__", None),
             getattr(callback, "__qualname__", None), loc and (loc.filename, loc.line, loc.col),
             repr(in_tree), repr(out_tree), sorted((i, repr(v)) for i, v in static.items()))
    host = HostCallback(callback, in_tree, out_tree, static, traced, parts)
    if current_builder() is None and not any(isinstance(v, Tracer) for v in values):
        # Eagerly: call it now.
        arrays = [np.asarray(v) if not isinstance(v, (bool, int, float, complex))
                  else np.asarray(v, dtypes.canonicalize_dtype(get_aval(v).dtype))
                  for v in values]
        results = host.call(arrays, result_avals)
        outs = [device_put_numpy(r) for r in results]
    else:
        outs = pure_callback_p.bind(*values, callback=host, result_avals=tuple(result_avals),
                                    vmap_method=vmap_method, sequential=())
    return tree_util.tree_unflatten(out_tree, list(outs))
