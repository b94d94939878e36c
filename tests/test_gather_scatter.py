"""``lax.gather`` and the ``lax.scatter`` family in their general forms, against a NumPy
reference written here (a loop over index vectors), with their modes, derivatives (finite
differences) and batching (stacked per-example results).

Dimension numbers are drawn at random (with a fixed seed): operand dimensions that are
batching, collapsed and indexed, indexed windows, unindexed windows, collapsed and unindexed;
indices out of bounds included. Each drawn form is one jitted program computing every gather
mode and scatter combiner at once, to keep compiles few.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree.test_util import check_grads

# -- the reference ---------------------------------------------------------------------------------


def np_gather(x, idx, dn, slice_sizes, mode="clip", fill_value=0):
    offset_dims, collapsed, start_index_map, obd, sibd = dn
    batch_shape = idx.shape[:-1]
    window_dims = [d for d in range(x.ndim) if d not in collapsed and d not in obd]
    out_rank = len(batch_shape) + len(offset_dims)
    batch_pos = [p for p in range(out_rank) if p not in offset_dims]
    shape = [0] * out_rank
    for p, n in zip(batch_pos, batch_shape):
        shape[p] = n
    for p, d in zip(offset_dims, window_dims):
        shape[p] = slice_sizes[d]
    out = np.zeros(shape, x.dtype)
    for b in np.ndindex(*batch_shape):
        start, outside = [0] * x.ndim, False
        for k, d in enumerate(start_index_map):
            s, hi = int(idx[b][k]), x.shape[d] - slice_sizes[d]
            outside |= not 0 <= s <= hi
            start[d] = min(max(s, 0), hi)
        for od, sd in zip(obd, sibd):
            start[od] = b[sd]
        region = tuple(slice(start[d], start[d] + slice_sizes[d]) if d in window_dims
                       else start[d] for d in range(x.ndim))
        window = x[region]
        if mode == "fill" and outside:
            window = np.full(window.shape, fill_value, x.dtype)
        it = iter(b)
        out[tuple(next(it) if p in batch_pos else slice(None) for p in range(out_rank))] = window
    return out


_COMBINE = {"replace": lambda a, b: b, "add": lambda a, b: a + b, "mul": lambda a, b: a * b,
            "min": np.minimum, "max": np.maximum}


def np_scatter(x, idx, upd, dn, combiner, mode="drop"):
    uwd, inserted, s2o, obd, sibd = dn
    out = np.array(x, copy=True)
    window_dims = [d for d in range(x.ndim) if d not in inserted and d not in obd]
    size = {d: upd.shape[u] for d, u in zip(window_dims, uwd)}
    scatter_pos = [p for p in range(upd.ndim) if p not in uwd]
    for b in np.ndindex(*idx.shape[:-1]):
        start, outside = [0] * x.ndim, False
        for k, d in enumerate(s2o):
            s, hi = int(idx[b][k]), x.shape[d] - size.get(d, 1)
            outside |= not 0 <= s <= hi
            start[d] = min(max(s, 0), hi)
        if outside and mode == "drop":
            continue
        for od, sd in zip(obd, sibd):
            start[od] = b[sd]
        region = tuple(slice(start[d], start[d] + size[d]) if d in window_dims else start[d]
                       for d in range(x.ndim))
        it = iter(b)
        src = tuple(next(it) if p in scatter_pos else slice(None) for p in range(upd.ndim))
        out[region] = _COMBINE[combiner](out[region], upd[src])
    return out


def random_form(rng):
    """A valid gather form: operand shape, indices shape, dimension numbers, slice sizes."""
    rank = int(rng.integers(1, 4))
    xshape = [int(rng.integers(1, 5)) for _ in range(rank)]
    roles = [str(rng.choice(["batch", "collapsed_indexed", "window_indexed", "window",
                             "collapsed"])) for _ in range(rank)]
    idx_batch = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, 3)))]
    obd = [d for d in range(rank) if roles[d] == "batch"]
    sibd: list = []
    for d in obd:
        pos = int(rng.integers(0, len(idx_batch) + 1))
        idx_batch.insert(pos, xshape[d])
        sibd = [s + (s >= pos) for s in sibd] + [pos]
    start_index_map = [d for d in range(rank) if roles[d] in ("collapsed_indexed",
                                                             "window_indexed")]
    rng.shuffle(start_index_map)
    collapsed = sorted(d for d in range(rank) if roles[d] in ("collapsed_indexed", "collapsed"))
    sizes = tuple(1 if roles[d] in ("batch", "collapsed_indexed", "collapsed")
                  else int(rng.integers(0 if rng.random() < 0.1 else 1, xshape[d] + 1))
                  for d in range(rank))
    n_window = rank - len(collapsed) - len(obd)
    out_rank = len(idx_batch) + n_window
    offset_dims = sorted(int(p) for p in rng.choice(out_rank, n_window, replace=False))
    dn = (tuple(offset_dims), tuple(collapsed), tuple(int(d) for d in start_index_map),
          tuple(obd), tuple(sibd))
    return tuple(xshape), tuple(idx_batch) + (len(start_index_map),), dn, sizes


def random_indices(rng, xshape, idx_shape, start_index_map, sizes, outside=True):
    idx = np.zeros(idx_shape, np.int32)
    for k, d in enumerate(start_index_map):
        hi = xshape[d] - sizes[d]
        lo, top = (-2, hi + 3) if outside else (0, hi + 1)
        idx[..., k] = rng.integers(lo, top, size=idx_shape[:-1])
    return idx


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), b, rtol=1e-5, atol=1e-5, equal_nan=True)


# -- general forms -----------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(7))
def test_random_forms_against_numpy(seed):
    rng = np.random.default_rng(seed)
    xshape, idx_shape, dn, sizes = random_form(rng)
    x = rng.standard_normal(xshape).astype(np.float32)
    idx = random_indices(rng, xshape, idx_shape, dn[2], sizes)
    gdn, sdn = lax.GatherDimensionNumbers(*dn), lax.ScatterDimensionNumbers(*dn)
    clipped = np_gather(x, idx, dn, sizes, "clip")
    upd = rng.standard_normal(clipped.shape).astype(np.float32)

    def f(x, idx, upd):
        return (lax.gather(x, idx, gdn, sizes, mode="clip"),
                lax.gather(x, idx, gdn, sizes, mode="fill"),
                lax.gather(x, idx, gdn, sizes, mode="fill", fill_value=-3.0),
                lax.scatter_add(x, idx, upd, sdn),
                lax.scatter_add(x, idx, upd, sdn, mode="clip"),
                lax.scatter_mul(x, idx, upd, sdn),
                lax.scatter_min(x, idx, upd, sdn),
                lax.scatter_max(x, idx, upd, sdn, mode="clip"))

    refs = (clipped, np_gather(x, idx, dn, sizes, "fill", np.nan),
            np_gather(x, idx, dn, sizes, "fill", -3.0),
            np_scatter(x, idx, upd, dn, "add", "drop"), np_scatter(x, idx, upd, dn, "add", "clip"),
            np_scatter(x, idx, upd, dn, "mul", "drop"), np_scatter(x, idx, upd, dn, "min", "drop"),
            np_scatter(x, idx, upd, dn, "max", "clip"))
    for out, ref in zip(pyree.jit(f)(x, idx, upd), refs):
        _close(out, ref)


@pytest.mark.parametrize("seed", [3, 7])
def test_scatter_replace_unique_indices(seed):
    # Each index vector once (within bounds or not): the result does not depend on an order.
    rng = np.random.default_rng(100 + seed)
    x = rng.standard_normal((5, 4, 3)).astype(np.float32)
    idx = np.array([[4, 0], [0, 2], [7, 1], [2, -1], [1, 1]], np.int32)
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0, 1),
                                     scatter_dims_to_operand_dims=(0, 1))
    upd = rng.standard_normal((5, 3)).astype(np.float32)
    f = pyree.jit(lambda x, i, u: (lax.scatter(x, i, u, dn), lax.scatter(x, i, u, dn, mode="clip")))
    drop, clip = f(x, idx, upd)
    ref = x.copy()
    for (a, b), u in zip(idx, upd):
        if 0 <= a < 5 and 0 <= b < 4:
            ref[a, b] = u
    _close(drop, ref)
    ref = x.copy()
    for (a, b), u in zip(idx, upd):
        ref[min(max(a, 0), 4), min(max(b, 0), 3)] = u
    _close(clip, ref)


def test_eager_matches_reference_and_leaves_operand_alone():
    x = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    jx = jnp.asarray(x)
    gdn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                     start_index_map=(0, 1))
    idx = np.array([[1, 2], [3, 5], [-1, 0]], np.int32)
    dn = ((1,), (0,), (0, 1), (), ())
    _close(lax.gather(jx, idx, gdn, (1, 3)), np_gather(x, idx, dn, (1, 3)))
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0, 1))
    upd = np.ones((3, 3), np.float32)
    _close(lax.scatter(jx, idx, upd, sdn), np_scatter(x, idx, upd, dn, "replace"))
    _close(pyree.jit(lambda a: lax.scatter_add(a, idx, upd, sdn))(jx),
           np_scatter(x, idx, upd, dn, "add"))
    _close(jx, x)  # neither the eager nor the jitted scatter wrote into the operand


def test_defaults_and_mode_names():
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    idx = np.array([[3], [12], [-1]], np.int32)

    def f(x):
        return (lax.gather(x, idx, dn, (1,)),  # gather clamps by default (as JAX's)
                *[lax.gather(x, idx, dn, (1,), mode=m)
                  for m in ("fill", "drop", lax.GatherScatterMode.FILL_OR_DROP)],
                lax.gather(x, idx, dn, (1,), mode="promise_in_bounds"),
                lax.scatter(x, idx, jnp.array([-1.0, -2.0, -3.0]), sdn),  # drops by default
                lax.scatter_add(x, idx, jnp.ones(3), sdn, mode="clip"))

    outs = pyree.jit(f)(jnp.arange(10.0))
    _close(outs[0], [3.0, 9.0, 0.0])
    for out in outs[1:4]:
        _close(out, [3.0, np.nan, np.nan])
    _close(outs[4], [3.0, 9.0, 0.0])
    _close(outs[5], [0, 1, 2, -1, 4, 5, 6, 7, 8, 9])
    _close(outs[6], [1, 1, 2, 4, 4, 5, 6, 7, 8, 10])
    assert lax.GatherScatterMode.from_any("clip") is lax.GatherScatterMode.CLIP
    with pytest.raises(ValueError, match="Unknown gather mode"):
        lax.gather(jnp.arange(10.0), idx, dn, (1,), mode="bogus")


def test_dtypes_and_default_fill_values():
    dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                    start_index_map=(0,))
    sdn = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))
    idx = np.array([[1], [9], [1]], np.int32)

    def f(i, u, b, bu):
        return (lax.gather(i, idx, dn, (1,), mode="fill"), lax.gather(u, idx, dn, (1,), mode="fill"),
                lax.gather(b, idx, dn, (1,), mode="fill"),
                lax.scatter_add(i, idx, jnp.array([5, 5, 5], np.int32), sdn),
                lax.scatter_max(u, idx, jnp.array([7, 7, 7], np.uint8), sdn),
                lax.scatter_add(b, idx, bu, sdn), lax.scatter_mul(b, idx, bu, sdn))

    ints, uints = np.arange(4, dtype=np.int32), np.arange(4, dtype=np.uint8)
    bools = np.array([True, False, True, False])
    outs = pyree.jit(f)(ints, uints, bools, np.array([True, True, False]))
    np.testing.assert_array_equal(outs[0], [1, np.iinfo(np.int32).min, 1])
    np.testing.assert_array_equal(outs[1], [1, 255, 1])
    np.testing.assert_array_equal(outs[2], [False, True, False])
    np.testing.assert_array_equal(outs[3], [0, 11, 2, 3])
    np.testing.assert_array_equal(outs[4], [0, 7, 2, 3])
    np.testing.assert_array_equal(outs[5], [True, True, True, False])   # add: or
    np.testing.assert_array_equal(outs[6], [True, False, True, False])  # mul: and
    assert outs[3].dtype == np.int32 and outs[4].dtype == np.uint8


@pytest.mark.parametrize("bad, message", [
    (dict(offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,)), "offset_dims"),
    (dict(offset_dims=(0, 1), collapsed_slice_dims=(0,), start_index_map=(0,)), "offset_dims"),
    (dict(offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0, 1)), "start_index_map"),
    (dict(offset_dims=(1,), collapsed_slice_dims=(1,), start_index_map=(0,)), "slice size"),
    (dict(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0,),
          operand_batching_dims=(0,), start_indices_batching_dims=(0,)), "share"),
])
def test_inconsistent_gather_dimension_numbers(bad, message):
    x = jnp.zeros((3, 4))
    with pytest.raises(TypeError, match=message):
        lax.gather(x, jnp.zeros((2, 1), np.int32), lax.GatherDimensionNumbers(**bad), (1, 2))


def test_inconsistent_scatter_arguments():
    x = jnp.zeros((3, 4))
    dn = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,))
    idx = jnp.zeros((2, 1), np.int32)
    with pytest.raises(TypeError, match="one dtype"):
        lax.scatter(x, idx, jnp.zeros((2, 4), np.int32), dn)
    with pytest.raises(TypeError, match="scatter dimensions of updates"):
        lax.scatter(x, idx, jnp.zeros((3, 4)), dn)
    with pytest.raises(TypeError, match="larger than operand"):
        lax.scatter(x, idx, jnp.zeros((2, 5)), dn)
    with pytest.raises(TypeError, match="integer dtype"):
        lax.scatter(x, jnp.zeros((2, 1)), jnp.zeros((2, 4)), dn)


# -- derivatives -------------------------------------------------------------------------------------

_GDN = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                  start_index_map=(0, 1))
_SDN = lax.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                   scatter_dims_to_operand_dims=(0, 1))
_IDX = np.array([[0, 1], [2, 0], [0, 1], [5, 0]], np.int32)     # a repeat; one out of bounds
_UNIQUE = np.array([[0, 1], [2, 0], [3, 2]], np.int32)


def test_gather_derivatives():
    x = np.random.RandomState(0).randn(4, 5).astype(np.float32)

    def f(x):
        return (jnp.sin(lax.gather(x, _IDX, _GDN, (1, 3))),
                lax.gather(x, _IDX, _GDN, (1, 3), mode="fill", fill_value=2.0))

    check_grads(pyree.jit(f), (x,), order=2)


def test_scatter_derivatives():
    rng = np.random.RandomState(1)
    x = rng.randn(4, 5).astype(np.float32)
    u = rng.randn(4, 3).astype(np.float32)

    def f(x, u):
        unique_u = u[:3]
        return (lax.scatter_add(x, _IDX, u, _SDN), lax.scatter_min(x, _IDX, u, _SDN),
                lax.scatter_max(x, _IDX, u, _SDN, mode="clip"),
                lax.scatter(x, _UNIQUE, unique_u, _SDN, unique_indices=True),
                lax.scatter_mul(x, _UNIQUE, unique_u, _SDN, unique_indices=True),
                lax.scatter_mul(x, _IDX, jnp.ones((4, 3)) * 2.0, _SDN))

    check_grads(pyree.jit(f), (x, u), order=1)


def test_scatter_replace_repeated_indices_derivative():
    # With repeated indices one update lands; the derivative follows the one that did.
    x = np.random.RandomState(2).randn(4, 5).astype(np.float32)
    u = np.random.RandomState(3).randn(4, 3).astype(np.float32)
    out = lax.scatter(x, _IDX, u, _SDN)
    landed = [i for i in (0, 2) if np.allclose(np.asarray(out)[0, 1:4], u[i])]
    assert landed
    grad_u = pyree.jit(pyree.grad(lambda u: jnp.sum(lax.scatter(x, _IDX, u, _SDN) * 2.0)))(u)
    expect = np.zeros_like(u)
    expect[landed[0]] = 2.0
    expect[1] = 2.0
    _close(grad_u, expect)
    grad_x = pyree.jit(pyree.grad(lambda x: jnp.sum(lax.scatter(x, _IDX, u, _SDN))))(x)
    kept = np.ones_like(x)
    kept[0, 1:4] = 0.0
    kept[2, 0:3] = 0.0
    _close(grad_x, kept)


def test_scatter_mul_repeated_updates_derivative_not_implemented():
    with pytest.raises(NotImplementedError, match="unique_indices"):
        pyree.grad(lambda u: jnp.sum(lax.scatter_mul(jnp.ones((4, 5)), _IDX, u, _SDN)))(
            jnp.ones((4, 3)))


# -- batching -------------------------------------------------------------------------------------

def _stacked(f, args, axes):
    size = next(a.shape[ax] for a, ax in zip(args, axes) if ax is not None)
    outs = []
    for b in range(size):
        outs.append(np.asarray(f(*[a if ax is None else np.take(a, b, axis=ax)
                                   for a, ax in zip(args, axes)])))
    return np.stack(outs)


@pytest.mark.parametrize("axes", [(0, None), (None, 0), (2, 1)])
def test_vmap_gather_and_scatter(axes):
    rng = np.random.RandomState(4)
    xs = rng.randn(3, 4, 5).astype(np.float32)
    idxs = np.stack([_IDX, _IDX[::-1], _IDX + 1])       # (3, 4, 2)
    upds = rng.randn(3, 4, 3).astype(np.float32)
    x = np.moveaxis(xs, 0, axes[0]) if axes[0] is not None else xs[0]
    idx = np.moveaxis(idxs, 0, axes[1]) if axes[1] is not None else idxs[0]
    upd = upds if axes[1] is not None else upds[0]
    u_axis = 0 if axes[1] is not None else None

    def f(x, idx, u):
        return (lax.gather(x, idx, _GDN, (1, 3), mode="fill"),
                lax.scatter_add(x, idx, u, _SDN), lax.scatter_max(x, idx, u, _SDN, mode="clip"))

    outs = pyree.jit(pyree.vmap(f, in_axes=(axes[0], axes[1], u_axis)))(x, idx, upd)
    for k, out in enumerate(outs):
        ref = _stacked(lambda *a: f(*a)[k], (x, idx, upd), (axes[0], axes[1], u_axis))
        _close(out, ref)


def test_vmap_of_grad_through_gather():
    xs = np.random.RandomState(5).randn(2, 4, 5).astype(np.float32)
    g = pyree.jit(pyree.vmap(pyree.grad(
        lambda x: jnp.sum(lax.gather(x, _IDX, _GDN, (1, 3)) ** 2))))
    ref = np.zeros_like(xs)
    for b in range(2):
        for (i, j) in _IDX:
            if i < 4:
                ref[b, i, j:j + 3] += 2 * xs[b, i, j:j + 3]
            else:  # clamped to the last row
                ref[b, 3, j:j + 3] += 2 * xs[b, 3, j:j + 3]
    _close(g(xs), ref)


def test_large_scatters_with_computed_operands_compile():
    # IREE 3.13 kept computed indices/updates fused into a scatter on its 32 KiB stack and
    # failed to compile from ~10 000 f32 updates on; the lowering keeps them apart.
    rng = np.random.RandomState(0)
    x = rng.randn(1000).astype(np.float32)
    i = rng.randint(-1000, 1000, 20_000).astype(np.int32)
    v = rng.randn(20_000).astype(np.float32)
    added, maxed = pyree.jit(lambda x, i, v: (x.at[i].add(jnp.sin(v)), x.at[i * 2].max(v)))(x, i, v)
    want = x.copy()
    np.add.at(want, i % 1000, np.sin(v))
    np.testing.assert_allclose(np.asarray(added), want, rtol=1e-4, atol=1e-4)
    want = x.copy()
    inside = (i * 2 >= -1000) & (i * 2 < 1000)
    np.maximum.at(want, (i * 2)[inside] % 1000, v[inside])
    np.testing.assert_allclose(np.asarray(maxed), want)
