"""Batching (``vmap``) as an IR -> IR transformation.

``batch_eval`` interprets an IR on values that each carry a batch dimension (``dims[i]``, an
axis of ``values[i]``, or ``None`` for a value shared by every example), emitting into whatever
trace is active (or eagerly) each equation's batched form: equations whose inputs are all
unbatched are emitted as they are; the others go through the primitive's batching rule, which
moves the batch axis as little as it can. Rules live in ``batching_rules``, filled by the
families that define the primitives (shapes.py, reductions.py, dot_general.py, ...); members of
``primitives.ELEMENTWISE`` share one rule, here:

    rule(axis, values, dims, **params) -> (outputs, their batch dims)

where ``axis`` (a ``BatchAxis``) has the batch size and the ``axis_name``.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Hashable, Optional, Sequence

from ..core.ir import IR, Atom, ClosedIR, Literal, ShapedArray, Var
from ..core import primitives as P
from ..core.source import where
from ..core.trace import Primitive, bind, get_aval, literal_value, located, trace_region

# pyree.vmap itself (stdlib/_vmap.py installs it): the rules that vectorize a user's Python
# function (a custom derivative's rules under vmap) call it.
vectorize: Optional[Callable] = None

# primitive -> rule(axis, values, dims, **params) -> (outputs, output batch dims)
batching_rules: dict[Primitive, Callable] = {}

Dim = Optional[int]


class BatchAxis:
    """The axis being vectorized over: its size, and its name for collectives (``psum``)."""

    __slots__ = ("size", "name")

    def __init__(self, size: int, name: Optional[Hashable] = None) -> None:
        self.size = size
        self.name = name

    def __repr__(self) -> str:
        return f"BatchAxis({self.size}, {self.name!r})"


# -- moving batch axes ---------------------------------------------------------------------------

def moveaxis(x: Any, src: int, dst: int) -> Any:
    """``x`` with its axis ``src`` moved to position ``dst``."""
    if src == dst:
        return x
    ndim = get_aval(x).ndim
    perm = [d for d in range(ndim) if d != src]
    perm.insert(dst, src)
    return P.transpose_p.bind(x, permutation=tuple(perm))


def broadcast_batched(x: Any, size: int, dim: int) -> Any:
    """An unbatched ``x`` repeated ``size`` times along a new axis ``dim``."""
    aval = get_aval(x)
    shape = list(aval.shape)
    shape.insert(dim, size)
    kept = tuple(d for d in range(len(shape)) if d != dim)
    return P.broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=kept)


def move_to(x: Any, d: Dim, dst: int, size: int) -> Any:
    """``x`` with its batch axis at ``dst``: moved there, or created there if ``d`` is None."""
    if d is None:
        return broadcast_batched(x, size, dst)
    return moveaxis(x, d, dst)


def to_front(x: Any, d: Dim, size: int) -> Any:
    return move_to(x, d, 0, size)


def example_aval(aval: ShapedArray, d: Dim) -> ShapedArray:
    """The per-example abstract value of a batched one."""
    if d is None:
        return aval
    shape = aval.shape[:d] + aval.shape[d + 1:]
    return ShapedArray(shape, aval.dtype, aval.weak_type)


def batched_aval(aval: ShapedArray, d: Dim, size: int) -> ShapedArray:
    if d is None:
        return aval
    shape = aval.shape[:d] + (size,) + aval.shape[d:]
    return ShapedArray(shape, aval.dtype, aval.weak_type)


def example_axes(axes: Sequence[int], d: int) -> tuple:
    """Axes of an example as axes of the batched value whose batch axis is ``d``."""
    return tuple(a + (a >= d) for a in axes)


# -- the interpreter -----------------------------------------------------------------------------

def batch_eval(closed: ClosedIR, values: Sequence[Any], dims: Sequence[Dim],
               axis: BatchAxis) -> tuple[list, list[Dim]]:
    """Evaluate ``closed`` on batched ``values`` (batch axes ``dims``): (outputs, their
    batch axes)."""
    ir = closed.ir
    env: dict[Var, tuple[Any, Dim]] = {}
    for v, c in zip(ir.const_vars, closed.consts):
        env[v] = (c, None)
    for v, x, d in zip(ir.in_vars, values, dims):
        env[v] = (x, d)

    def read(a: Atom) -> tuple[Any, Dim]:
        if isinstance(a, Literal):
            return literal_value(a), None
        return env[a]

    for eqn in ir.eqns:
        ins = [read(a) for a in eqn.inputs]
        xs = [x for x, _ in ins]
        ds = [d for _, d in ins]
        with located(eqn.loc):
            if all(d is None for d in ds) and not _names_axis(eqn.primitive, eqn.params, axis):
                outs = bind(eqn.primitive, xs, eqn.params)
                out_dims: list[Dim] = [None] * len(outs)
            else:
                rule = batching_rule(eqn.primitive)
                if rule is None:
                    raise NotImplementedError(f"vmap of primitive {eqn.primitive} is not "
                                              f"supported (no batching rule)")
                outs, out_dims = rule(axis, xs, ds, **eqn.params)
        for v, o, d in zip(eqn.outputs, outs, out_dims):
            env[v] = (o, d)
    results = [read(a) for a in ir.outs]
    return [x for x, _ in results], [d for _, d in results]


# Collectives over a named axis (psum, ...) must see the axis even when their operand is
# shared by every example: they register here with their axis-name parameter.
named_axis_params: dict[Primitive, str] = {}


def _names_axis(prim: Primitive, params: dict, axis: BatchAxis) -> bool:
    """Whether an equation, or one inside its regions, is a collective over ``axis``."""
    if axis.name is None:
        return False
    key = named_axis_params.get(prim)
    if key is not None and axis.name in params[key]:
        return True
    for value in params.values():
        for region in value if isinstance(value, tuple) else (value,):
            inner = region.ir if isinstance(region, ClosedIR) else region
            if isinstance(inner, IR) and any(_names_axis(e.primitive, e.params, axis)
                                             for e in inner.eqns):
                return True
    return False


def batch_region(region: IR, in_dims: Sequence[Dim], axis: BatchAxis,
                 out_dims: Optional[Sequence[Dim]] = None) -> tuple[IR, list[Dim]]:
    """``region`` batched: an IR taking the batched inputs (batch axes ``in_dims``) and
    returning its outputs batched along ``out_dims`` (given: each output moved there, ``None``
    meaning it must be unbatched; not given: where the rules left them). Returns the IR and
    its outputs' batch axes."""
    in_avals = [batched_aval(v.aval, d, axis.size) for v, d in zip(region.in_vars, in_dims)]
    found: list[Dim] = []

    def fun(*args):
        outs, dims = batch_eval(ClosedIR(region, []), args, in_dims, axis)
        if out_dims is None:
            found.extend(dims)
            return outs
        moved = []
        for o, d, want in zip(outs, dims, out_dims):
            if want is None:
                if d is not None:
                    raise ValueError("internal: a region output expected unbatched is batched")
                moved.append(o)
            else:
                moved.append(move_to(o, d, want, axis.size))
        found.extend(out_dims)
        return moved

    ir, captured = trace_region(fun, in_avals)
    assert not captured, "a batched region captured values"
    return ir, found


def region_out_batched(region: IR, in_batched: Sequence[bool], axis: BatchAxis) -> list[bool]:
    """Which outputs of ``region`` are batched when the inputs ``in_batched`` are (at axis 0)."""
    _, dims = batch_region(region, [0 if b else None for b in in_batched], axis)
    return [d is not None for d in dims]


# -- rules: elementwise (the other rules are their families') ---------------------------------

def _elementwise_rule(prim: Primitive) -> Callable:
    def rule(axis: BatchAxis, values, dims, **params):
        avals = [get_aval(v) for v in values]
        ranks = [a.ndim - (d is not None) for a, d in zip(avals, dims)]
        out_rank = max(ranks)
        full = [d for d, r in zip(dims, ranks) if d is not None and r == out_rank]
        # Keep the batch axis where the full-rank operands agree on it; else at the front.
        out_dim = full[0] if full and all(d == full[0] for d in full) else 0
        example_shape = next(example_aval(a, d).shape for a, d, r in zip(avals, dims, ranks)
                             if r == out_rank)
        out_shape = batched_aval(ShapedArray(example_shape, avals[0].dtype), out_dim,
                                 axis.size).shape
        args = []
        for v, a, d, r in zip(values, avals, dims, ranks):
            if d is None:
                if r == 0:
                    args.append(v)  # a rank-0 operand broadcasts
                else:
                    args.append(broadcast_batched(v, axis.size, out_dim))
            elif r == 0 and out_rank > 0:
                args.append(P.broadcast_in_dim_p.bind(v, shape=out_shape,
                                                      broadcast_dimensions=(out_dim,)))
            else:
                args.append(moveaxis(v, d, out_dim))
        return [prim.bind(*args, **params)], [out_dim]
    return rule


def batching_rule(primitive: Primitive) -> Optional[Callable]:
    """The batching rule of ``primitive``: its own, or for a member of primitives.ELEMENTWISE
    (whichever family defines it) the elementwise rule; None if it has neither.

    Example: ``outs, out_dims = batching_rule(P.add_p)(axis, values, dims)``"""
    rule = batching_rules.get(primitive)
    if rule is None and primitive in P.ELEMENTWISE:
        rule = batching_rules[primitive] = _elementwise_rule(primitive)
    return rule


def with_weak_type(x: Any, weak: bool) -> Any:
    """``x`` weakly typed if ``weak`` (a select of it and a weak value is then weak)."""
    aval = get_aval(x)
    if not weak or aval.weak_type:
        return x
    return P.convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=True)


# -- named axes (the collectives that name them: collectives.py) ----------------------------------

class _AxisNames(threading.local):
    def __init__(self) -> None:
        self.stack: list = []
        self.sizes: list = []


_axis_names = _AxisNames()


@contextlib.contextmanager
def named_axis(name: Optional[Hashable], size: Optional[int] = None):
    """While tracing the function of a ``vmap`` or ``pmap`` with ``axis_name=name`` (of
    ``size`` examples or devices): collectives may name it."""
    _axis_names.stack.append(name)
    _axis_names.sizes.append(size)
    try:
        yield
    finally:
        _axis_names.stack.pop()
        _axis_names.sizes.pop()


def named_axis_size(name: Hashable) -> int:
    """The size of the innermost enclosing vmap or pmap axis called ``name``."""
    for bound, size in zip(reversed(_axis_names.stack), reversed(_axis_names.sizes)):
        if bound == name and size is not None:
            return size
    raise NameError(f"the size of axis {name!r} is unknown here{where(None)}")


def check_axis_names(names: tuple, what: str) -> None:
    for name in names:
        if name is None or name not in _axis_names.stack:
            bound = [n for n in _axis_names.stack if n is not None]
            raise NameError(f"unbound axis name: {name!r} ({what} names an axis that no "
                            f"enclosing vmap or pmap (axis_name=...) defines; bound here: "
                            f"{bound or 'none'}){where(None)}")
