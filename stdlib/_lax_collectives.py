"""Part of ``pyree.lax``: collectives over the named axis of an enclosing ``vmap`` or ``pmap``
(``jax.lax``'s names and forms). Each takes a pytree ``x`` (all but ``axis_index``) and the
``axis_name`` given to the ``vmap`` / ``pmap`` (or a tuple of names, for ``psum``, ``pmean``,
``pmax``, ``pmin``).

Example::

    from pyree import lax
    pyree.vmap(lambda v: v / lax.psum(v, "i"), axis_name="i")(jnp.arange(4.0))
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from pyree import tree_util
from pyree.transpiler.interpreters import batching
from pyree.transpiler.families import collectives as _c
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import get_aval

__all__ = ["psum", "pmax", "pmin", "pmean", "axis_index", "all_gather", "ppermute",
           "psum_scatter", "all_to_all"]


def _axis_names(axis_name: Any, what: str) -> tuple:
    """``axis_name`` (a name or a tuple of names) as a tuple, each bound by an enclosing vmap
    or pmap."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    batching.check_axis_names(names, what)
    return names


def _reduction(prim, x: Any, axis_name: Any, axis_index_groups: Any = None) -> Any:
    what = f"lax.{prim.name}"
    names = _axis_names(axis_name, what)
    if axis_index_groups is not None:
        import pyree.numpy as jnp
        combine = {_c.psum_p: jnp.sum, _c.pmax_p: jnp.max, _c.pmin_p: jnp.min}[prim]
        return tree_util.tree_map(
            lambda leaf: combine(_group_peers(leaf, names, axis_index_groups, what)[0], axis=0), x)
    return tree_util.tree_map(lambda leaf: prim.bind(leaf, axis_name=names), x)


def _groups(names: tuple, axis_index_groups: Any, what: str) -> list:
    """``axis_index_groups`` checked: lists of positions along the one named axis, all of one
    size, each position in one."""
    if len(names) != 1:
        raise ValueError(f"{what}: axis_index_groups needs one axis name, got {names}"
                         f"{where(None)}")
    size = batching.named_axis_size(names[0])
    try:
        groups = [[int(i) for i in group] for group in axis_index_groups]
    except TypeError:
        groups = None
    if (groups is None or sorted(i for group in groups for i in group) != list(range(size))
            or len({len(group) for group in groups}) != 1):
        raise ValueError(
            f"{what}: axis_index_groups {axis_index_groups!r} must split the {size} positions "
            f"of axis {names[0]!r} into groups of one size, each position in one group"
            f"{where(None)}")
    return groups


def _group_peers(leaf: Any, names: tuple, axis_index_groups: Any, what: str
                 ) -> tuple[Any, Any]:
    """The ``leaf`` of every member of this example's (device's) group, stacked along a new
    first axis in the group's order, and this example's rank in its group: one all_gather
    over the whole axis, then the group's rows (a group of g positions out of n costs an
    all_gather of n; groups are small in practice)."""
    import pyree.numpy as jnp
    groups = _groups(names, axis_index_groups, what)
    size = batching.named_axis_size(names[0])
    members = np.zeros((size, len(groups[0])), np.int32)   # position -> its group's members
    ranks = np.zeros(size, np.int32)                       # position -> its rank in the group
    for group in groups:
        members[group] = group
        ranks[group] = range(len(group))
    position = _position(names)
    return (jnp.take(_everyone(leaf, names), jnp.asarray(members)[position], axis=0),
            jnp.asarray(ranks)[position])


def _piece(x: Any, rank: Any, dimension: int, count: int, tiled: bool) -> Any:
    """Piece ``rank`` of ``count`` along ``dimension``: an entry (removing the dimension) or,
    ``tiled``, a block."""
    import pyree.numpy as jnp
    from pyree import lax
    if not tiled:
        return jnp.take(x, rank, axis=dimension)
    width = get_aval(x).shape[dimension] // count
    return lax.dynamic_slice_in_dim(x, rank * width, width, axis=dimension)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The sum of ``x`` over the examples of the ``vmap`` (devices of the ``pmap``) whose
    ``axis_name`` is given (a name or a tuple of names); every example gets the total. ``x``
    may be a pytree. ``axis_index_groups`` (lists of positions along one axis, all of one
    size, each position in one) sums within each group instead: ``[[0, 1], [2, 3]]``. Every
    collective here takes it (``psum_scatter`` and ``all_to_all`` then scatter and exchange
    among the group's members, by their rank in the group).

    Example::

        pyree.vmap(lambda v: v / lax.psum(v, "i"), axis_name="i")(jnp.arange(4.0))
    """
    return _reduction(_c.psum_p, x, axis_name, axis_index_groups)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The maximum of ``x`` over a named ``vmap`` / ``pmap`` axis.

    Example::

        pyree.vmap(lambda v: lax.pmax(v, "i"), axis_name="i")(jnp.array([1.0, 3.0]))  # [3, 3]
    """
    return _reduction(_c.pmax_p, x, axis_name, axis_index_groups)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The minimum of ``x`` over a named ``vmap`` / ``pmap`` axis.

    Example::

        pyree.vmap(lambda v: lax.pmin(v, "i"), axis_name="i")(jnp.array([1.0, 3.0]))  # [1, 1]
    """
    return _reduction(_c.pmin_p, x, axis_name, axis_index_groups)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The mean of ``x`` over a named ``vmap`` / ``pmap`` axis: ``psum(x) / axis size``
    (a float for integer ``x``, as in JAX).

    Example::

        pyree.vmap(lambda v: v - lax.pmean(v, "i"), axis_name="i")(jnp.arange(4.0))
    """
    import pyree.numpy as jnp
    names = _axis_names(axis_name, "lax.pmean")
    if axis_index_groups is not None:
        return tree_util.tree_map(lambda leaf: jnp.mean(
            _group_peers(leaf, names, axis_index_groups, "lax.pmean")[0], axis=0), x)
    count = _c.psum_p.bind(1.0, axis_name=names)  # the axes' total size
    return tree_util.tree_map(lambda total: jnp.true_divide(total, count), psum(x, axis_name))


def axis_index(axis_name: Any) -> Any:
    """This example's position along a named ``vmap`` axis, or this device's along a ``pmap``
    axis (an int32 scalar).

    Example::

        pyree.vmap(lambda v: v * lax.axis_index("i"), axis_name="i")(jnp.ones(3))  # [0, 1, 2]
    """
    names, _ = _named_axes(axis_name, "lax.axis_index")
    return _position(names)


def _position(names: tuple) -> Any:
    """This example's (device's) position along ``names`` taken together, the first the most
    significant (JAX's order): along ("i", "j") of sizes (2, 3), i * 3 + j."""
    position = None
    for name in names:
        along = _c.axis_index_p.bind(axis_name=(name,))
        position = along if position is None else (
            position * batching.named_axis_size(name) + along)
    return position


def _everyone(leaf: Any, names: tuple) -> Any:
    """``leaf`` of every example (device) along ``names`` taken together, stacked along a new
    first axis in the order of _position: one all_gather per name, the last first."""
    import pyree.numpy as jnp
    shape = get_aval(leaf).shape
    for name in reversed(names):
        leaf = _c.all_gather_p.bind(leaf, axis_name=(name,), tiled=False, all_gather_dimension=0,
                                    axis_size=batching.named_axis_size(name))
    return jnp.reshape(leaf, (-1,) + tuple(shape))


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False) -> Any:
    """Every example's (or device's) ``x`` along a named ``vmap`` / ``pmap`` axis, stacked
    along a new axis ``axis`` (``tiled=True``: concatenated along the existing one). ``x``
    may be a pytree.

    Example::

        pyree.vmap(lambda v: lax.all_gather(v, "i"), axis_name="i")(jnp.arange(3.0))
        # each example gets [0., 1., 2.]
    """
    names, size = _named_axes(axis_name, "lax.all_gather")

    def gather(leaf):
        ndim = get_aval(leaf).ndim
        if not -(ndim + (not tiled)) <= axis < ndim + (not tiled):
            raise ValueError(f"lax.all_gather axis {axis} is out of range for an operand of "
                             f"rank {ndim}")
        if axis_index_groups is not None or len(names) > 1:
            import pyree.numpy as jnp
            peers = (_everyone(leaf, names) if axis_index_groups is None else
                     _group_peers(leaf, names, axis_index_groups, "lax.all_gather")[0])
            if not tiled:
                return jnp.moveaxis(peers, 0, axis % (ndim + 1))
            return jnp.concatenate(list(peers), axis=axis)
        return _c.all_gather_p.bind(leaf, axis_name=names, axis_size=size, tiled=bool(tiled),
                                    all_gather_dimension=axis % (ndim + (not tiled)))
    return tree_util.tree_map(gather, x)


def ppermute(x: Any, axis_name: Any, perm: Any) -> Any:
    """``x`` sent along a named ``vmap`` / ``pmap`` axis: for each ``(source, destination)``
    pair of ``perm``, the destination gets the source's ``x``; positions no pair sends to get
    zeros. ``x`` may be a pytree.

    Example::

        n = 4   # a ring shift over a pmap of 4 devices
        lax.ppermute(v, "i", perm=[(j, (j + 1) % n) for j in range(n)])
    """
    names, size = _named_axes(axis_name, "lax.ppermute")
    pairs = tuple((int(s), int(d)) for s, d in perm)
    if len(names) == 1:
        return tree_util.tree_map(lambda leaf: _c.ppermute_p.bind(leaf, axis_name=names,
                                                                  perm=pairs), x)
    # Over several axes taken together: every example's x, and each destination's source.
    import pyree.numpy as jnp
    sources, destinations = [s for s, _ in pairs], [d for _, d in pairs]
    if (any(not 0 <= i < size for i in sources + destinations)
            or len(set(sources)) != len(sources) or len(set(destinations)) != len(destinations)):
        raise ValueError(f"lax.ppermute: perm {perm!r} must pair positions in [0, {size}) of "
                         f"the axes {names}, each at most once as a source and once as a "
                         f"destination{where(None)}")
    source_of = np.full(size, -1, np.int32)
    source_of[destinations] = sources
    source = jnp.asarray(source_of)[_position(names)]

    def receive(leaf: Any) -> Any:
        sent = jnp.take(_everyone(leaf, names), jnp.maximum(source, 0), axis=0)
        return jnp.where(source >= 0, sent, jnp.zeros_like(sent))
    return tree_util.tree_map(receive, x)


def _named_axes(axis_name: Any, what: str) -> tuple[tuple, int]:
    """``axis_name`` as a tuple of names, each bound by an enclosing vmap or pmap and named
    once, and the product of their sizes."""
    names = _axis_names(axis_name, what)
    if len(set(names)) != len(names):
        raise ValueError(f"{what}: an axis is named twice in {names}{where(None)}")
    return names, math.prod(batching.named_axis_size(name) for name in names)


def _named(names: tuple) -> Any:
    """The axis name for messages: the name, or the names taken together."""
    return names[0] if len(names) == 1 else names


def _dimension(dimension: int, rank: int, what: str) -> int:
    """``dimension`` of an operand of ``rank`` (negative: from the end), checked."""
    if rank == 0:
        raise ValueError(f"{what} needs an operand of rank at least 1, got a scalar"
                         f"{where(None)}")
    if not -rank <= dimension < rank:
        raise ValueError(f"{what} {dimension} is out of range for an operand of rank {rank}"
                         f"{where(None)}")
    return dimension % rank


def _check_divisible(what: str, dimension: int, shape: tuple, size: int, tiled: bool,
                     axis_name: Any, grouped: bool = False) -> None:
    """``shape[dimension]`` splits into ``size`` pieces: the axis's size, or ``grouped`` its
    groups' size."""
    of = f"of the groups of axis {axis_name!r}" if grouped else f"of axis {axis_name!r}"
    if tiled and shape[dimension] % size:
        raise ValueError(f"{what}: the operand's dimension {dimension} (shape {shape}) has size "
                         f"{shape[dimension]}, which is not divisible by the size {size} {of}"
                         f"{where(None)}")
    if not tiled and shape[dimension] != size:
        raise ValueError(f"{what}: the operand's dimension {dimension} (shape {shape}) has size "
                         f"{shape[dimension]}, but it must equal the size {size} {of} (or "
                         f"pass tiled=True to split it into {size} blocks){where(None)}")


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                 axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """The sum of ``x`` over a named ``vmap`` / ``pmap`` axis, scattered: example (device) ``i``
    gets piece ``i`` of the sum along ``scatter_dimension`` (a reduce-scatter). That dimension
    must have one entry per example, and is removed; with ``tiled=True`` its size must be a
    multiple of the axis size, and each gets a block of it. ``x`` may be a pytree.

    Example::

        x = jnp.arange(8.0).reshape(2, 4)
        pyree.vmap(lambda v: lax.psum_scatter(v, "i", tiled=True), axis_name="i")(x)
        # [[4., 6.], [8., 10.]]: example 0 gets the sum's first half, example 1 the second
    """
    names, size = _named_axes(axis_name, "lax.psum_scatter")
    if axis_index_groups is not None:
        size = len(_groups(names, axis_index_groups, "lax.psum_scatter")[0])

    def scatter(leaf: Any) -> Any:
        shape = get_aval(leaf).shape
        dimension = _dimension(scatter_dimension, len(shape), "lax.psum_scatter scatter_dimension")
        _check_divisible("lax.psum_scatter", dimension, shape, size, tiled, _named(names),
                         axis_index_groups is not None)
        if axis_index_groups is not None:
            peers, rank = _group_peers(leaf, names, axis_index_groups, "lax.psum_scatter")
            return _piece(peers.sum(0), rank, dimension, size, tiled)
        if len(names) > 1:
            total = _c.psum_p.bind(leaf, axis_name=names)
            return _piece(total, _position(names), dimension, size, tiled)
        return _c.psum_scatter_p.bind(leaf, axis_name=names, scatter_dimension=dimension,
                                      tiled=bool(tiled), axis_size=size)
    return tree_util.tree_map(scatter, x)


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """Pieces exchanged along a named ``vmap`` / ``pmap`` axis: ``x`` is cut into one piece per
    example (device) along ``split_axis``, and example ``i`` gets every example's piece ``i``,
    joined along ``concat_axis`` in example order. Without ``tiled``, ``split_axis`` has one
    entry per example and is removed, and the pieces are stacked along a new axis
    ``concat_axis`` of the result; with ``tiled=True`` ``split_axis`` is cut into equal blocks
    and they are concatenated along the existing ``concat_axis``. ``x`` may be a pytree.

    Example::

        x = jnp.arange(4.0).reshape(2, 2)          # example i holds row i
        pyree.vmap(lambda v: lax.all_to_all(v, "i", 0, 0), axis_name="i")(x)
        # [[0., 2.], [1., 3.]]: example i gets entry i of every row (a transpose)
    """
    names, size = _named_axes(axis_name, "lax.all_to_all")
    if axis_index_groups is not None:
        size = len(_groups(names, axis_index_groups, "lax.all_to_all")[0])

    def exchange(leaf: Any) -> Any:
        shape = get_aval(leaf).shape
        split = _dimension(split_axis, len(shape), "lax.all_to_all split_axis")
        concat = _dimension(concat_axis, len(shape), "lax.all_to_all concat_axis")
        _check_divisible("lax.all_to_all split_axis", split, shape, size, tiled, _named(names),
                         axis_index_groups is not None)
        if axis_index_groups is not None or len(names) > 1:
            import pyree.numpy as jnp
            # Every member's piece (this example's rank) in the group's order, joined.
            if axis_index_groups is None:
                peers, rank = _everyone(leaf, names), _position(names)
            else:
                peers, rank = _group_peers(leaf, names, axis_index_groups, "lax.all_to_all")
            pieces = _piece(peers, rank, split + 1, size, tiled)
            if not tiled:
                return jnp.moveaxis(pieces, 0, concat)
            return jnp.concatenate(list(pieces), axis=concat)
        return _c.all_to_all_p.bind(leaf, axis_name=names, split_axis=split,
                                    concat_axis=concat, tiled=bool(tiled), axis_size=size)
    return tree_util.tree_map(exchange, x)
