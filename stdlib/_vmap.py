"""``vmap`` with JAX's signature, on the IR transformation of transpiler/interpreters/batching.py.

The function is traced once on one example's abstract values (converted by the transpiler, so
Python control flow is fine), then the IR is interpreted on the whole batch by each
primitive's batching rule: one batched program, never a loop over examples. Outside ``jit`` it
runs eagerly (a jitted function is batched and compiled as one program); inside, it is traced
into the enclosing program.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable, Hashable, Optional, Sequence

from pyree import dtypes, tree_util
from pyree.runtime.array import Array
from pyree.transpiler.interpreters import batching
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import get_aval


def _axes_for_leaves(axes: Any, tree: Any, what: str) -> list:
    """``axes`` (a pytree prefix of ``tree``: an int or None applies to a whole subtree) as
    one entry per leaf of ``tree``."""
    if axes is None or isinstance(axes, int):
        return [axes] * len(tree_util.tree_leaves(tree))
    prefix = tree_util.tree_structure(axes, is_leaf=lambda x: x is None)
    try:
        subtrees = prefix.flatten_up_to(tree)
    except ValueError as e:
        raise ValueError(f"vmap {what} must be a pytree prefix of the {what.split('_')[0]}puts"
                         f": {e}{where(None)}") from None
    leaves = tree_util.tree_leaves(axes, is_leaf=lambda x: x is None)
    out = []
    for ax, sub in zip(leaves, subtrees):
        if ax is not None and not isinstance(ax, int):
            raise TypeError(f"vmap {what} entries must be ints or None, got "
                            f"{type(ax).__name__}{where(None)}")
        out.extend([ax] * len(tree_util.tree_leaves(sub)))
    return out


def _arg_names(fun: Callable, n: int) -> list[str]:
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(n):
        if i < len(params) and params[i].kind in (params[i].POSITIONAL_ONLY,
                                                   params[i].POSITIONAL_OR_KEYWORD):
            names.append(params[i].name)
        else:
            names.append(f"args[{i}]")
    return names


def _leaf_names(fun: Callable, args: tuple, kwargs: dict) -> list[str]:
    """A readable name per leaf of (args, kwargs): the parameter's name and the leaf's path."""
    names = []
    for name, arg in zip(_arg_names(fun, len(args)), args):
        paths = tree_util.leaf_paths(tree_util.tree_structure(arg))
        names.extend(f"argument {name}{p}" for p in paths)
    for key in sorted(kwargs):
        paths = tree_util.leaf_paths(tree_util.tree_structure(kwargs[key]))
        names.extend(f"argument {key}{p}" for p in paths)
    return names


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0,
         axis_name: Optional[Hashable] = None, axis_size: Optional[int] = None,
         spmd_axis_name: Any = None) -> Callable:
    """Vectorize ``fun`` over an axis of its arguments: ``vmap(f)(xs)`` is ``f`` applied to
    each ``xs[i]``, stacked, computed as one batched program.

    ``in_axes``: an int, None (not mapped) or a pytree prefix of the positional arguments (a
    tuple with one entry per argument); negative axes count from the end. Keyword arguments
    are mapped over their axis 0. ``out_axes`` likewise for the outputs. ``axis_name`` names
    the axis for collectives (``lax.psum``, ``lax.pmean``); ``axis_size`` gives the size when
    no argument is mapped.

    Example::

        pyree.vmap(jnp.dot, in_axes=(0, None))(matrix_rows, vector)   # matrix @ vector
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    from pyree.transpiler.programs.jit import JitFunction

    @functools.wraps(fun)
    def vmapped(*args: Any, **kwargs: Any) -> Any:
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(
                f"vmap in_axes must be an int, None, or a tuple of entries corresponding to the "
                f"positional arguments passed to the function, but got len(in_axes)="
                f"{len(in_axes)}, len(args)={len(args)}{where(None)}")
        per_arg = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        dims = []
        for ax, arg in zip(per_arg, args):
            dims.extend(_axes_for_leaves(ax, arg, "in_axes"))
        dims.extend([0] * len(tree_util.tree_leaves(kwargs)))
        leaves, in_tree = tree_util.tree_flatten((args, kwargs))
        if len(dims) != len(leaves):  # None leaves in args are not leaves
            raise ValueError(f"vmap in_axes do not match the arguments{where(None)}")
        names = _leaf_names(fun, args, kwargs)
        dims, size = _check_axes(leaves, dims, names, axis_size)
        # Python scalars that are not mapped reach ``fun`` unchanged, as in JAX (a jitted
        # callee can take them as static arguments); the other leaves are traced.
        static = tuple((i, leaf) for i, (leaf, d) in enumerate(zip(leaves, dims))
                       if d is None and type(leaf) in (int, float, bool, complex))
        if static:
            passed = {i for i, _ in static}
            leaves = [leaf for i, leaf in enumerate(leaves) if i not in passed]
            dims = [d for i, d in enumerate(dims) if i not in passed]
        if isinstance(fun, JitFunction) and not _tracing():
            # A jitted function: batch it and compile the batched program as one.
            from pyree._api import jit
            return jit(functools.partial(_batched_call, fun._fun, in_tree, static, dims, size,
                                         axis_name, out_axes))(*leaves)
        return _batched_call(fun, in_tree, static, dims, size, axis_name, out_axes, *leaves)

    return vmapped


def _tracing() -> bool:
    from pyree.transpiler.core.trace import _state
    return bool(_state.builders)


def _batched_call(fun: Callable, in_tree: Any, static: tuple, dims: list, size: int,
                  axis_name: Optional[Hashable], out_axes: Any, *leaves: Any) -> Any:
    """``fun`` batched over ``leaves`` (axes ``dims``); ``static``: (position, value) of the
    leaves passed unchanged."""
    from pyree.transpiler.frontend.convert import converted
    from pyree.transpiler.core.trace import trace_to_ir
    fn = converted(fun)
    box: dict = {}

    def flat(*xs):
        xs = list(xs)
        for i, value in static:
            xs.insert(i, value)
        args, kwargs = tree_util.tree_unflatten(in_tree, xs)
        out_leaves, box["tree"] = tree_util.tree_flatten(fn(*args, **kwargs))
        # float0 results (integer values' cotangents) hold no data: they are not traced, and
        # get their batch axis below.
        box["float0"] = {i: leaf.shape for i, leaf in enumerate(out_leaves)
                         if dtypes._is_float0(leaf)}
        return [leaf for i, leaf in enumerate(out_leaves) if i not in box["float0"]]

    example_avals = [batching.example_aval(get_aval(x), d) for x, d in zip(leaves, dims)]
    with batching.named_axis(axis_name, size):
        closed = trace_to_ir(flat, example_avals, top_level=False)
    axis = batching.BatchAxis(size, axis_name)
    outs, out_dims = batching.batch_eval(closed, list(leaves), dims, axis)
    out_tree, float0_shapes = box["tree"], box["float0"]
    if float0_shapes:   # every output leaf, float0 ones in their places (dim None)
        traced = iter(zip(outs, out_dims))
        pairs = [(dtypes._float0_zeros(float0_shapes[i]), None) if i in float0_shapes
                 else next(traced) for i in range(out_tree.num_leaves)]
        outs, out_dims = [o for o, _ in pairs], [d for _, d in pairs]
    wanted = _axes_for_leaves(out_axes, tree_util.tree_unflatten(out_tree, outs), "out_axes")
    results = []
    for o, d, want in zip(outs, out_dims, wanted):
        if dtypes._is_float0(o):
            if want is not None:
                want %= o.ndim + 1
                o = dtypes._float0_zeros(o.shape[:want] + (size,) + o.shape[want:])
            results.append(o)
            continue
        if want is None:
            if d is not None:
                raise ValueError(f"vmap has mapped output but out_axes is None{where(None)}")
            results.append(o)
            continue
        ndim = get_aval(o).ndim + (d is None)
        if not -ndim <= want < ndim:
            raise ValueError(f"vmap out_axes {want} is out of range for an output of rank "
                             f"{ndim}{where(None)}")
        results.append(batching.move_to(o, d, want % ndim, size))
    if not _tracing():  # an argument passed straight through is still the caller's value
        import pyree.numpy as jnp
        results = [r if isinstance(r, Array) or dtypes._is_float0(r) else jnp.asarray(r)
                   for r in results]
    return tree_util.tree_unflatten(out_tree, results)


def _check_axes(leaves: Sequence[Any], dims: Sequence[Optional[int]], names: Sequence[str],
                axis_size: Optional[int], what: str = "vmap") -> tuple[list, int]:
    """Normalized mapped axes and the mapped size (of a ``what``: vmap or pmap); errors name
    the arguments."""
    normalized = []
    sizes = []
    for leaf, d, name in zip(leaves, dims, names):
        if d is None:
            normalized.append(None)
            continue
        aval = get_aval(leaf)
        if not -aval.ndim <= d < aval.ndim or aval.ndim == 0:
            raise ValueError(f"{what} was requested to map its {name} along axis {d}, which "
                             f"implies that its rank should be at least {max(d + 1, -d)}, but "
                             f"is only {aval.ndim} (its shape is {aval.shape}){where(None)}")
        d %= aval.ndim
        normalized.append(d)
        sizes.append((aval.shape[d], d, name, aval))
    if not sizes:
        if axis_size is None:
            raise ValueError(f"{what} must have at least one non-None value in in_axes (or be "
                             f"given axis_size){where(None)}")
        return normalized, axis_size
    distinct = sorted({s for s, *_ in sizes})
    if len(distinct) > 1 or (axis_size is not None and distinct[0] != axis_size):
        lines = [f"  * {name} (shape {aval.shape}) has size {s} along axis {d}"
                 for s, d, name, aval in sizes]
        given = f"; axis_size={axis_size}" if axis_size is not None else ""
        raise ValueError(f"{what} got inconsistent sizes for array axes to be mapped"
                         f"{given}:\n" + "\n".join(lines) + where(None))
    return normalized, distinct[0]


batching.vectorize = vmap   # (custom derivative rules under vmap vectorize the user's rules)
