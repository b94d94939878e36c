"""Part of ``pyree.lax``: parallel prefix scans, general reductions, n-way selection, implicit
solves (``custom_root``, ``custom_linear_solve``), ``lax``'s special functions and array
helpers, with ``jax.lax``'s signatures.

Example::

    from pyree import lax
    lax.associative_scan(jnp.add, jnp.arange(5.0))               # [0., 1., 3., 6., 10.]
    lax.reduce(x, 0.0, lambda a, b: a + b, (0,))                  # x.sum(0)
    lax.select_n(jnp.array([0, 2, 1]), zeros, ones, twos)
"""
from __future__ import annotations

__all__ = [
    "associative_scan", "bessel_i0e", "bessel_i1e", "betainc", "broadcast_shapes",
    "broadcast_to_rank", "collapse", "custom_linear_solve", "custom_root", "full_like",
    "index_take", "optimization_barrier", "polygamma", "reduce", "reduce_xor", "select_n",
    "split", "stack", "tile", "unstack", "zeta",
]

import builtins
import math
from typing import Any, Callable, Optional, Sequence

import numpy as np

from pyree import dtypes, tree_util
from pyree._checkpoint import call_traced
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import TypedScalar, get_aval

_PY_SCALARS = (bool, int, float, complex)


def _lax():
    from pyree import lax
    return lax


def _axis(axis: int, ndim: int, what: str) -> int:
    if not -ndim <= int(axis) < builtins.max(ndim, 1):
        raise ValueError(f"{what}: axis {axis} is out of bounds for an array of rank {ndim}"
                         f"{_where(None)}")
    return int(axis) % builtins.max(ndim, 1)


# -- associative_scan ------------------------------------------------------------------------------

def associative_scan(fn: Callable, elems: Any, reverse: bool = False, axis: int = 0) -> Any:
    """All prefix combinations of ``elems`` along ``axis`` under an associative ``fn``:
    ``out[i] = fn(... fn(fn(e[0], e[1]), e[2]) ..., e[i])`` (with ``reverse``, of the
    suffixes, combined in the same argument order on the reversed sequence, as JAX does).
    ``elems`` is a pytree of arrays of equal length along ``axis``; ``fn(a, b)`` takes and
    returns such pytrees (slices of them) and must be vectorized, as in JAX. It runs in
    ``ceil(log2(n))`` parallel steps (Hillis and Steele: step k combines each element with the
    one 2**k before it), so associativity is all it needs: ``fn`` may be non-commutative,
    e.g. matrix products.

    Example::

        lax.associative_scan(jnp.add, jnp.arange(5.0))           # [0., 1., 3., 6., 10.]
        lax.associative_scan(jnp.matmul, mats)                   # mats[0] @ ... @ mats[i]
    """
    lax = _lax()
    leaves, tree = tree_util.tree_flatten(elems)
    if not leaves:
        raise ValueError(f"associative_scan needs at least one array in elems{_where(None)}")
    avals = [get_aval(x) for x in leaves]
    axes = [_axis(axis, a.ndim, "associative_scan") if a.ndim else None for a in avals]
    if any(a is None for a in axes):
        raise ValueError(f"associative_scan: elems must be arrays of rank >= 1{_where(None)}")
    lengths = {a.shape[ax] for a, ax in zip(avals, axes)}
    if len(lengths) != 1:
        raise ValueError(f"associative_scan: array inputs to associative_scan must have the "
                         f"same first dimension; got lengths {sorted(lengths)}{_where(None)}")
    (n,) = lengths

    def combine(a: list, b: list) -> list:
        out = call_traced(fn, (tree_util.tree_unflatten(tree, a),
                               tree_util.tree_unflatten(tree, b)), {})
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"associative_scan: fn must return a pytree of the structure of "
                            f"elems, {tree}; got {out_tree}{_where(None)}")
        return out_leaves

    if reverse:
        leaves = [lax.rev(x, (ax,)) for x, ax in zip(leaves, axes)]
    shift = 1
    while shift < n:
        earlier = [lax.slice_in_dim(x, 0, n - shift, axis=ax) for x, ax in zip(leaves, axes)]
        later = [lax.slice_in_dim(x, shift, n, axis=ax) for x, ax in zip(leaves, axes)]
        combined = combine(earlier, later)
        leaves = [lax.concatenate([lax.slice_in_dim(x, 0, shift, axis=ax), c], ax)
                  for x, c, ax in zip(leaves, combined, axes)]
        shift *= 2
    if reverse:
        leaves = [lax.rev(x, (ax,)) for x, ax in zip(leaves, axes)]
    return tree_util.tree_unflatten(tree, leaves)


# -- selection and shapes --------------------------------------------------------------------------

def select_n(which: Any, *cases: Any) -> Any:
    """``cases[which]`` elementwise: ``which`` is a boolean (two cases: False picks the first)
    or an int32 index, a scalar or of the cases' shape; the cases share shape and dtype.
    Out-of-range indices give unspecified values, as in JAX.

    Example::

        lax.select_n(jnp.array([0, 2, 1]), zeros, ones, twos)    # [0., 2., 1.]
        lax.select_n(x > 0, -x, x)                                # |x|
    """
    lax = _lax()
    if not cases:
        raise ValueError("select_n() must have at least one case")
    avals = [get_aval(c) for c in cases]
    first = avals[0]
    for a in avals[1:]:
        if a.shape != first.shape or a.dtype != first.dtype:
            raise TypeError(f"select_n cases must have the same shapes and dtypes, got "
                            f"{[x.str_short() for x in avals]}{_where(None)}")
    w = get_aval(which)
    if w.shape not in ((), first.shape):
        raise TypeError(f"select_n: which must be scalar or have the same shape as the cases, "
                        f"got which {w.shape} and cases {first.shape}{_where(None)}")
    if w.dtype == np.bool_:
        if len(cases) > 2:
            raise TypeError(f"select_n with a boolean which takes at most two cases, got "
                            f"{len(cases)}{_where(None)}")
    elif w.dtype.kind not in "iu":
        raise TypeError(f"select_n: which must be a boolean or an integer, got "
                        f"{w.dtype.name}{_where(None)}")
    if len(cases) == 1:
        return cases[0]
    if isinstance(which, _PY_SCALARS):
        which = TypedScalar(which, np.dtype(np.bool_) if w.dtype == np.bool_ else w.dtype, False)
    if w.shape != first.shape:
        which = lax.broadcast_in_dim(which, first.shape, ())
    if w.dtype == np.bool_:
        return lax.select(which, cases[1], cases[0])
    out = cases[-1]
    for i in range(len(cases) - 2, -1, -1):
        out = lax.select(lax.eq(which, TypedScalar(i, w.dtype, False)), cases[i], out)
    return out


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """``x`` with leading size-1 axes added up to rank ``rank`` (unchanged at that rank).

    Example: ``lax.broadcast_to_rank(jnp.ones(3), 3).shape == (1, 1, 3)``
    """
    import pyree.numpy as jnp
    aval = get_aval(x)
    if aval.ndim == rank:
        return jnp.asarray(x)
    if aval.ndim > rank:
        raise ValueError(f"broadcast_to_rank: an array of rank {aval.ndim} cannot be "
                         f"broadcast to rank {rank}{_where(None)}")
    return _lax().broadcast(x, (1,) * (rank - aval.ndim))


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape NumPy broadcasting gives arrays of these shapes.

    Example: ``lax.broadcast_shapes((2, 1), (3,)) == (2, 3)``
    """
    return tuple(int(d) for d in np.broadcast_shapes(*[tuple(s) for s in shapes]))


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Optional[Sequence[int]] = None,
              sharding: Any = None) -> Any:
    """An array like ``x`` (its shape and dtype unless given, its weak type when ``dtype`` is
    not) filled with ``fill_value``, cast to the dtype.

    Example: ``lax.full_like(jnp.ones(3, jnp.int32), 2.7)``  -> ``[2, 2, 2]``
    """
    lax = _lax()
    aval = get_aval(x)
    out_dtype = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    out_shape = aval.shape if shape is None else tuple(int(d) for d in shape)
    weak = dtype is None and aval.weak_type
    if isinstance(fill_value, _PY_SCALARS + (np.generic,)) or (
            isinstance(fill_value, np.ndarray) and fill_value.ndim == 0):
        value = np.asarray(fill_value).astype(out_dtype).item()
        return lax.broadcast_in_dim(TypedScalar(value, out_dtype, weak), out_shape, ())
    value = lax.convert_element_type(fill_value, out_dtype, weak)
    return lax.broadcast_in_dim(value, out_shape, ())


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """``operand`` repeated ``reps[i]`` times along each axis i (one entry per axis).

    Example: ``lax.tile(jnp.arange(3), (2,))`` -> ``[0, 1, 2, 0, 1, 2]``
    """
    import pyree.numpy as jnp
    reps = tuple(int(r) for r in reps)
    ndim = get_aval(operand).ndim
    if len(reps) != ndim:
        raise ValueError(f"reps length must be equal to the ndim of x, got len(reps)="
                         f"{len(reps)} and x.ndim={ndim}.")
    return jnp.tile(operand, reps)


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """Arrays of one shape and dtype stacked along a new ``axis``.

    Example: ``lax.stack([x, y], axis=1)``
    """
    import pyree.numpy as jnp
    avals = [get_aval(o) for o in operands]
    if not avals:
        raise ValueError("lax.stack needs at least one operand")
    if any(a.shape != avals[0].shape or a.dtype != avals[0].dtype for a in avals):
        raise TypeError(f"lax.stack operands must have equal shapes and dtypes, got "
                        f"{[a.str_short() for a in avals]}{_where(None)}")
    return jnp.stack(operands, axis=axis)


def unstack(x: Any, axis: int = 0) -> tuple:
    """The slices of ``x`` along ``axis``, as a tuple (``lax.stack``'s inverse).

    Example: ``a, b = lax.unstack(jnp.ones((2, 3)))``
    """
    lax = _lax()
    aval = get_aval(x)
    axis = _axis(axis, aval.ndim, "unstack")
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(aval.shape[axis]))


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list:
    """``operand`` cut along ``axis`` into consecutive pieces of ``sizes`` (which add up to
    the axis length).

    Example: ``lax.split(jnp.arange(6), (2, 4))`` -> ``[[0, 1], [2, 3, 4, 5]]``
    """
    lax = _lax()
    aval = get_aval(operand)
    axis = _axis(axis, aval.ndim, "split")
    sizes = [int(s) for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != aval.shape[axis]:
        raise ValueError(f"Sum of sizes {sum(sizes)} must be equal to dimension {axis} of the "
                         f"operand shape {aval.shape}")
    out, start = [], 0
    for s in sizes:
        out.append(lax.slice_in_dim(operand, start, start + s, axis=axis))
        start += s
    return out


def collapse(operand: Any, start_dimension: int, stop_dimension: Optional[int] = None) -> Any:
    """``operand`` with axes ``start_dimension`` up to (not including) ``stop_dimension``
    merged into one (all the rest when ``stop_dimension`` is None).

    Example: ``lax.collapse(jnp.ones((2, 3, 4)), 1).shape == (2, 12)``
    """
    shape = get_aval(operand).shape
    lo, hi, _ = slice(start_dimension, stop_dimension).indices(len(shape))
    new = shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:]
    return _lax().reshape(operand, new)


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """``src`` indexed along ``axes`` by the index arrays ``idxs`` (one per axis, all of one
    length N): shape ``(N,) +`` the other axes, in order.

    Example: ``lax.index_take(x, (rows, cols), (0, 1))`` is ``x[rows, cols]``
    """
    import pyree.numpy as jnp
    axes = tuple(_axis(a, get_aval(src).ndim, "index_take") for a in axes)
    idxs = tuple(idxs)
    if len(idxs) != len(axes):
        raise ValueError(f"index_take: {len(idxs)} index arrays for {len(axes)} axes"
                         f"{_where(None)}")
    moved = jnp.moveaxis(src, axes, tuple(range(len(axes))))
    return moved[idxs]


def optimization_barrier(operand: Any) -> Any:
    """``operand`` (a pytree) unchanged: in XLA a barrier that stops the compiler moving
    computation across it; IREE schedules pyree's programs itself, so here it is the identity.

    Example: ``x, y = lax.optimization_barrier((x, y))``
    """
    return operand


# -- reduce ----------------------------------------------------------------------------------------

def _known_reduction(computation: Callable, aval) -> Optional[str]:
    """The name of the lax reduction (``reduce_sum``, ...) ``computation`` is, if it is one of
    add, mul, max, min, and, or: named directly, or a function whose trace on two scalars is
    that one operation on its arguments."""
    from pyree.transpiler.core import primitives as P
    from pyree.transpiler.core.trace import trace_to_ir
    by_prim = {P.add_p: "reduce_sum", P.mul_p: "reduce_prod", P.max_p: "reduce_max",
               P.min_p: "reduce_min", P.and_p: "reduce_and", P.or_p: "reduce_or"}
    scalar = aval.update(shape=(), weak_type=False)
    try:
        closed = trace_to_ir(lambda a, b: [call_traced(computation, (a, b), {})],
                             [scalar, scalar], top_level=False)
    except Exception:  # noqa: BLE001 - not a scalar function: the general path decides
        return None
    ir = closed.ir
    if len(ir.eqns) != 1 or closed.consts:
        return None
    eqn = ir.eqns[0]
    name = by_prim.get(eqn.primitive)
    if name is None or list(eqn.outputs) != list(ir.outs):
        return None
    if {id(a) for a in eqn.inputs} != {id(v) for v in ir.in_vars} or len(eqn.inputs) != 2:
        return None
    if name in ("reduce_and", "reduce_or") and aval.dtype.kind not in "biu":
        return None
    if name in ("reduce_sum", "reduce_prod") and aval.dtype == np.bool_:
        return None
    return name


def reduce(operands: Any, init_values: Any, computation: Callable,
           dimensions: Sequence[int]) -> Any:
    """Reduce ``operands`` over ``dimensions`` with ``computation``, starting from
    ``init_values`` (``jax.lax.reduce``). ``operands`` and ``init_values`` are matching
    pytrees (arrays and scalars); ``computation(acc, x)`` takes and returns such pytrees and
    must be associative and commutative, with ``init_values`` its identity, as in JAX.

    A single operand reduced by add, mul, max, min, and or or (``lax.add``, ``jnp.maximum``,
    ``lambda a, b: a + b``...) uses that reduction; anything else (variadic reductions, other
    functions) is computed by halving: ``computation`` on the two halves of the axis, then on
    their result's halves..., so it must work elementwise on arrays.

    Example::

        lax.reduce(x, 0.0, lax.add, (0,))                              # x.sum(0)
        lax.reduce((v, i), (-jnp.inf, 0), lambda a, b: ..., (0,))     # an argmax
    """
    lax = _lax()
    flat, tree = tree_util.tree_flatten(operands)
    inits, init_tree = tree_util.tree_flatten(init_values)
    if tree != init_tree:
        raise ValueError(f"reduce: operands and init_values must have the same structure, got "
                         f"{tree} and {init_tree}{_where(None)}")
    if not flat:
        raise ValueError("reduce needs at least one operand")
    avals = [get_aval(x) for x in flat]
    shape = avals[0].shape
    if any(a.shape != shape for a in avals):
        raise ValueError(f"reduce: operands must have equal shapes, got "
                         f"{[a.shape for a in avals]}{_where(None)}")
    dims = sorted({_axis(d, len(shape), "reduce") for d in dimensions})
    out_shape = tuple(s for i, s in enumerate(shape) if i not in dims)
    init_arrays = []
    for init, a in zip(inits, avals):
        if get_aval(init).shape != ():
            raise ValueError(f"reduce: init values must be scalars, got shape "
                             f"{get_aval(init).shape}{_where(None)}")
        if isinstance(init, _PY_SCALARS + (np.generic,)):
            init = TypedScalar(np.asarray(init).astype(a.dtype).item(), a.dtype, False)
        elif get_aval(init).dtype != a.dtype:
            init = lax.convert_element_type(init, a.dtype)
        init_arrays.append(init)

    def combine(acc: list, item: list) -> list:
        args = (tree_util.tree_unflatten(tree, acc), tree_util.tree_unflatten(tree, item))
        out = call_traced(computation, args, {})
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"reduce: computation must return a pytree of the operands' "
                            f"structure {tree}, got {out_tree}{_where(None)}")
        return [lax.convert_element_type(o, a.dtype) if get_aval(o).dtype != a.dtype else o
                for o, a in zip(out_leaves, avals)]

    def with_init(reduced: list) -> list:
        return combine([lax.broadcast_in_dim(i, out_shape, ()) for i in init_arrays], reduced)

    if any(shape[d] == 0 for d in dims):
        return tree_util.tree_unflatten(
            tree, [lax.broadcast_in_dim(i, out_shape, ()) for i in init_arrays])
    if not dims:
        return tree_util.tree_unflatten(tree, with_init(list(flat)))
    name = _known_reduction(computation, avals[0]) if len(flat) == 1 else None
    if name is not None:
        reduced = [getattr(lax, name)(flat[0], tuple(dims))]
        from pyree._lax_windows import _is_identity, _monoid_identity
        identity = _monoid_identity({"reduce_sum": lax.add, "reduce_prod": lax.mul,
                                     "reduce_max": lax.max, "reduce_min": lax.min}.get(name),
                                    avals[0].dtype)
        if _is_identity(inits[0], identity):
            return tree_util.tree_unflatten(tree, reduced)
        return tree_util.tree_unflatten(tree, with_init(reduced))
    leaves = list(flat)
    for d in reversed(dims):  # (from the last: the earlier axes keep their positions)
        n = get_aval(leaves[0]).shape[d]
        while n > 1:
            half = n // 2
            lo = [lax.slice_in_dim(x, 0, half, axis=d) for x in leaves]
            hi = [lax.slice_in_dim(x, half, 2 * half, axis=d) for x in leaves]
            combined = combine(lo, hi)
            if n % 2:
                combined = [lax.concatenate([c, lax.slice_in_dim(x, 2 * half, n, axis=d)], d)
                            for c, x in zip(combined, leaves)]
            leaves, n = combined, half + n % 2
        leaves = [lax.squeeze(x, (d,)) for x in leaves]
    return tree_util.tree_unflatten(tree, with_init(leaves))


def reduce_xor(operand: Any, axes: Sequence[int]) -> Any:
    """Bitwise exclusive or of integers (or booleans) over ``axes``.

    Example: ``lax.reduce_xor(jnp.array([1, 3, 4]), (0,))`` -> ``6``
    """
    lax = _lax()
    aval = get_aval(operand)
    if aval.dtype.kind not in "biu":
        raise TypeError(f"lax.reduce_xor takes integers or booleans, got {aval.dtype.name}"
                        f"{_where(None)}")
    return reduce(operand, TypedScalar(0, aval.dtype, False), lax.bitwise_xor, axes)


# -- implicit solves -------------------------------------------------------------------------------

def _flat_region(fun: Callable, tree: Any, avals: list, what: str) -> tuple:
    """``fun`` (pytree of ``tree`` -> pytree of ``tree``) traced as a region on flat leaves."""
    from pyree.transpiler.core.trace import trace_region

    def flat(*xs: Any) -> list:
        out = fun(tree_util.tree_unflatten(tree, list(xs)))
        out_leaves, out_tree = tree_util.tree_flatten(out)
        if out_tree != tree:
            raise TypeError(f"custom_linear_solve: {what} must return a pytree of b's structure "
                            f"{tree}, got {out_tree}{_where(None)}")
        out_avals = [get_aval(o) for o in out_leaves]
        for o, a in zip(out_avals, avals):
            if o.shape != a.shape:
                raise TypeError(f"custom_linear_solve: {what} returned shape {o.shape} where "
                                f"b has shape {a.shape}{_where(None)}")
        return [_convert(o, a.dtype) for o, a in zip(out_leaves, avals)]

    return trace_region(flat, avals)


def _convert(x: Any, dtype: np.dtype) -> Any:
    lax = _lax()
    if isinstance(x, _PY_SCALARS):
        return lax.broadcast_in_dim(TypedScalar(x, dtype, False), (), ())
    return x if get_aval(x).dtype == dtype else lax.convert_element_type(x, dtype)


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable,
                        transpose_solve: Optional[Callable] = None, symmetric: bool = False,
                        has_aux: bool = False) -> Any:
    """The solution ``x`` of ``matvec(x) == b`` computed by ``solve(matvec, b)``, with
    derivatives by implicit differentiation rather than through ``solve``
    (``jax.lax.custom_linear_solve``): ``dx = solve(matvec, db - dmatvec(x))`` where
    ``dmatvec`` is ``matvec``'s derivative in the values it closes over, and reverse mode
    solves the transposed system with ``transpose_solve(vecmat, cotangent)`` (``vecmat`` is
    ``matvec``'s transpose; ``symmetric=True`` uses ``solve``). So ``solve`` may be any
    algorithm, iterative ones included, and is never differentiated. ``b`` may be a pytree;
    with ``has_aux`` ``solve`` returns ``(x, aux)`` and the result is ``(x, aux)`` (aux
    not differentiated; it comes from a second run of ``solve``, which jit merges with the
    first).

    Example::

        x = lax.custom_linear_solve(lambda v: A @ v, b,
                                    solve=lambda mv, r: jnp.linalg.solve(A, r),
                                    transpose_solve=lambda vm, r: jnp.linalg.solve(A.T, r))
    """
    from pyree._autodiff import linear_transpose
    from pyree.transpiler.families.linear_solve import linear_solve_p
    b_leaves, tree = tree_util.tree_flatten(b)
    if not b_leaves:
        raise ValueError("custom_linear_solve: b must contain at least one array")
    b_leaves = [_convert(x, get_aval(x).dtype) if isinstance(x, _PY_SCALARS) else x
                for x in b_leaves]
    avals = [get_aval(x).strip_weak_type() for x in b_leaves]

    def solved(solver: Callable, operator: Callable) -> Callable:
        def run(rhs: Any) -> Any:
            out = call_traced(solver, (operator, rhs), {})
            return out[0] if has_aux else out
        return run

    matvec_ir, m_consts = _flat_region(lambda x: call_traced(matvec, (x,), {}), tree, avals,
                                       "matvec")
    solve_ir, s_consts = _flat_region(solved(solve, matvec), tree, avals, "solve")
    if symmetric:
        tsolve_ir, t_consts = solve_ir, list(s_consts)
    elif transpose_solve is not None:
        def vecmat(y: Any) -> Any:
            example = tree_util.tree_unflatten(tree, [_zeros(a) for a in avals])
            return linear_transpose(lambda x: call_traced(matvec, (x,), {}), example)(y)[0]
        tsolve_ir, t_consts = _flat_region(solved(transpose_solve, vecmat), tree, avals,
                                           "transpose_solve")
    else:
        tsolve_ir, t_consts = None, []
    outs = linear_solve_p.bind(*m_consts, *s_consts, *t_consts, *b_leaves, matvec=matvec_ir,
                               solve=solve_ir, transpose_solve=tsolve_ir,
                               counts=(len(m_consts), len(s_consts), len(t_consts)))
    x = tree_util.tree_unflatten(tree, outs)
    if not has_aux:
        return x
    from pyree import lax
    aux = call_traced(solve, (matvec, lax.stop_gradient(b)), {})[1]
    return x, lax.stop_gradient(aux)


def _zeros(aval: Any) -> Any:
    return _lax().full(aval.shape, 0, aval.dtype)


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False) -> Any:
    """A root of ``f`` found by ``solve(f, initial_guess)``, differentiated by implicit
    differentiation instead of through ``solve`` (``jax.lax.custom_root``): at the root,
    ``f(x*, theta) = 0`` gives ``dx* = -(df/dx)^-1 (df/dtheta) dtheta`` for the values
    ``theta`` that ``f`` closes over; ``tangent_solve(g, y)`` solves ``g(x) = y`` for the
    linear ``g`` (``f`` linearized at the root; for a scalar, ``lambda g, y: y / g(1.0)``).
    The initial guess gets no derivative. With ``has_aux``, ``solve`` returns
    ``(root, aux)``, and so does this (aux not differentiated).

    Example::

        def sqrt(a):                                  # d sqrt(a)/da = 1 / (2 sqrt(a))
            return lax.custom_root(lambda x: x ** 2 - a, 1.0, newton, lambda g, y: y / g(1.0))
    """
    from pyree._autodiff import closure_convert, jvp
    from pyree._custom_derivatives import custom_jvp
    guess_leaves, guess_tree = tree_util.tree_flatten(initial_guess)
    f_conv, consts = closure_convert(f, initial_guess)

    def solution(guess: Any, params: tuple) -> Any:
        return call_traced(solve, (lambda x: f_conv(x, *params), guess), {})

    def root(guess: Any, *params: Any) -> Any:
        return solution(guess, params)

    def root_jvp(primals: tuple, tangents: tuple) -> tuple:
        guess, params = primals[0], primals[1:]
        t_params = tangents[1:]
        out = wrapped(guess, *params)   # (itself: higher derivatives use this rule again)
        sol = out[0] if has_aux else out
        zeros = tree_util.tree_map(lambda v: v * 0, out)
        if not params:
            return out, zeros
        # df/dtheta dtheta at the root, then the linear solve of df/dx dx = -that.
        _, rhs = jvp(lambda *p: f_conv(sol, *p), tuple(params), tuple(t_params))

        def g(v: Any) -> Any:
            return jvp(lambda x: f_conv(x, *params), (sol,), (v,))[1]

        dx = custom_linear_solve(
            g, rhs, solve=lambda op, y: call_traced(tangent_solve, (op, y), {}),
            transpose_solve=lambda op, y: call_traced(tangent_solve, (op, y), {}))
        dsol = tree_util.tree_map(lambda v: -v, dx)
        return out, ((dsol, zeros[1]) if has_aux else dsol)

    wrapped = custom_jvp(root)
    wrapped.defjvp(root_jvp)
    if not guess_leaves:
        raise ValueError("custom_root: initial_guess must contain at least one array")
    return wrapped(initial_guess, *consts)


# -- special functions -----------------------------------------------------------------------------

def _floats(name: str, *xs: Any) -> list:
    """Operands of a lax special function: floating point, of one dtype (Python scalars take
    the arrays' dtype)."""
    import pyree.numpy as jnp
    avals = [get_aval(x) for x in xs]
    for a in avals:
        if a.dtype.kind != "f" and a.dtype != dtypes.bfloat16:
            raise TypeError(f"lax.{name} does not accept dtype {a.dtype.name}; it takes "
                            f"floating-point numbers{_where(None)}")
    strong = {a.dtype for x, a in zip(xs, avals)
              if not a.weak_type and not isinstance(x, _PY_SCALARS)}
    if len(strong) > 1:
        names = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got {names}"
                        f"{_where(None)}")
    dtype = strong.pop() if strong else dtypes.canonicalize_dtype(float)
    return [jnp.asarray(x, dtype) for x in xs]


def polygamma(m: Any, x: Any) -> Any:
    """The ``m``-th derivative of digamma, for float ``m`` holding non-negative integers (NaN
    otherwise) and ``x`` of the same dtype.

    Example: ``lax.polygamma(1.0, 2.0)`` -> ``0.644934``
    """
    from pyree.scipy import special
    import pyree.numpy as jnp
    lax = _lax()
    if isinstance(m, (int, float)) and not isinstance(m, bool) and float(m).is_integer() \
            and m >= 0:
        (x,) = _floats("polygamma", x)
        return special.polygamma(int(m), x)
    m, x = _floats("polygamma", m, x)
    order = jnp.maximum(m, 1.0)
    sign = jnp.where(jnp.floor(0.5 * order) == 0.5 * order, -1.0, 1.0)   # (-1) ** (m + 1)
    higher = sign * jnp.exp(lax.lgamma(order + 1.0)) * special.zeta(order + 1.0, x)
    out = jnp.where(m == 0, lax.digamma(x + jnp.zeros_like(m)), higher)
    return jnp.where((m < 0) | (jnp.floor(m) != m), jnp.nan, out).astype(x.dtype)


def zeta(x: Any, q: Any) -> Any:
    """The Hurwitz zeta function ``sum_k (k + q) ** -x``.

    Example: ``lax.zeta(2.0, 1.0)`` -> ``1.644934``
    """
    from pyree.scipy import special
    x, q = _floats("zeta", x, q)
    return special.zeta(x, q)


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function ``I_x(a, b)``.

    Example: ``lax.betainc(2.0, 3.0, 0.4)`` -> ``0.5248``
    """
    from pyree.scipy import special
    return special.betainc(*_floats("betainc", a, b, x))


def bessel_i0e(x: Any) -> Any:
    """``exp(-|x|) I0(x)``. Example: ``lax.bessel_i0e(1.0)`` -> ``0.4657596``"""
    from pyree.scipy import special
    return special.i0e(*_floats("bessel_i0e", x))


def bessel_i1e(x: Any) -> Any:
    """``exp(-|x|) I1(x)``. Example: ``lax.bessel_i1e(1.0)`` -> ``0.2079104``"""
    from pyree.scipy import special
    return special.i1e(*_floats("bessel_i1e", x))
