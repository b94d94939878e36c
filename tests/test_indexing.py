"""NumPy indexing of pyree arrays — basic and advanced, eagerly and under jit — and the
functional updates ``x.at[...]``, ``jnp.take``, ``jnp.take_along_axis``, against NumPy; out-of-
bounds behaviour as in JAX; boolean masks; errors; derivatives and vmap through indexing.

Index forms are grouped into one jitted function returning a tuple, to keep compiles few.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.errors import NonConcreteBooleanIndexError
from pyree.test_util import check_grads

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

# Index forms; each entry is (name, index). NumPy gives the reference.
FORMS = [
    ("int_array", np.array([0, 2])),
    ("list", [2, 0, 1]),
    ("int_slice_array_separated", (0, slice(None), [1, 2])),
    ("arrays_split_by_ellipsis", ([0], Ellipsis, [1])),
    ("arrays_split_by_none", (slice(None), [0], None, [1])),
    ("arrays_adjacent_after_none", (slice(None), None, [0], [1])),
    ("int_next_to_array", (slice(None), 0, [1, 2])),
    ("broadcast_2d", ([[0, 1], [2, 0]], slice(1, 3), [1, -1])),
    ("negative", (Ellipsis, [4, -5])),
    ("reversed_and_strided", (slice(None, None, -1), [1, 2, 3], slice(0, 5, 2))),
    ("negative_pairs", ([2, -3], [1, 2])),
    ("scalars_and_array", (1, [2, 3], 4)),
    ("empty_list", []),
    ("empty_in_tuple", (slice(None), [])),
    ("numpy_uint", (np.array([1, 0], np.uint8),)),
    ("tuple_inside", ((0, 2), 1)),
]
MASKS = [
    ("mask_first", (np.array([True, False, True]),)),
    ("mask_second", (slice(None), np.array([True, False, True, True]))),
    ("mask_2d", (np.array([[True, False, False, True]] * 3), 1)),
    ("mask_full", X > 30),
    ("mask_after_array", ([0, 2], slice(None), np.array([1, 0, 0, 1, 0], bool))),
    ("true", (True,)),
    ("false", (False,)),
    ("true_with_array", (Ellipsis, True, [1, 3])),
]


def _np_index(index):
    # NumPy needs arrays where pyree (like NumPy's docs) also takes lists.
    if isinstance(index, list):
        return np.array(index, dtype=np.intp)
    return index


@pytest.fixture(params=["eager", "jit"])
def run(request):
    """``run(f, *args)``: ``f(*args)`` as is, or through ``pyree.jit``."""
    if request.param == "eager":
        return lambda f, *args: f(*args)
    return lambda f, *args: pyree.jit(f)(*args)


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_index_forms(mode):
    # Eagerly each gather compiles for its shapes: a third of the forms there.
    forms = FORMS if mode == "jit" else FORMS[::3]

    def f(x):
        return tuple(x[index] for _, index in forms)

    outs = (pyree.jit(f) if mode == "jit" else f)(jnp.asarray(X))
    for (name, index), out in zip(forms, outs):
        ref = X[_np_index(index)]
        assert out.shape == ref.shape, name
        np.testing.assert_array_equal(np.asarray(out), ref, err_msg=name)


def test_traced_index_arrays(run):
    i = np.array([[2, -1], [0, 1]], np.int32)
    j = np.array([3, 0], np.int64)

    def f(x, i, j):
        return x[i], x[:, j, 1:4:2], x[i, j], x[1, i[0]], x[j[0] - 2, i]

    outs = run(f, jnp.asarray(X), i, j)
    refs = X[i], X[:, j, 1:4:2], X[i, j], X[1, i[0]], X[1, i]
    for out, ref in zip(outs, refs):
        np.testing.assert_array_equal(np.asarray(out), ref)


def test_boolean_masks_outside_jit():
    x = jnp.asarray(X)
    for name, index in MASKS:
        ref = X[index]
        out = x[index]
        assert out.shape == ref.shape, name
        np.testing.assert_array_equal(np.asarray(out), ref, err_msg=name)
    # A device (concrete) mask works too, inside jit as a captured constant as well.
    mask = jnp.asarray(X[:, 0, 0] > 10)
    np.testing.assert_array_equal(np.asarray(x[mask]), X[X[:, 0, 0] > 10])
    np.testing.assert_array_equal(np.asarray(pyree.jit(lambda a: a[np.array([1, 0, 1], bool)])(x)),
                                  X[[0, 2]])


def test_boolean_mask_inside_jit_raises():
    def f(x):
        return x[x > 3]  # the mask's line

    with pytest.raises(NonConcreteBooleanIndexError) as info:
        pyree.jit(f)(jnp.arange(5.0))
    text = str(info.value)
    assert "jnp.where" in text and "test_indexing.py" in text
    line = f.__code__.co_firstlineno + 1
    assert f":{line}" in text


def test_out_of_bounds_reads():
    x = jnp.arange(10.0)
    idx = jnp.array([3, 12, -1, -12])

    def f(x, idx):
        return (x[idx], x.at[idx].get(), x.at[idx].get(mode="fill"),
                x.at[idx].get(mode="fill", fill_value=-7.0), x.at[11].get(mode="fill",
                                                                          fill_value=jnp.nan),
                x.at[11].get(mode="clip"), x.at[-11].get(mode="clip"),
                x.at[idx[1]].get(mode="fill"))

    for outs in (f(x, idx), pyree.jit(f)(x, idx)):
        np.testing.assert_array_equal(np.asarray(outs[0]), [3.0, 9.0, 9.0, 0.0])  # clamped
        np.testing.assert_array_equal(np.asarray(outs[1]), [3.0, 9.0, 9.0, 0.0])
        np.testing.assert_array_equal(np.asarray(outs[2]), [3.0, np.nan, 9.0, np.nan])
        np.testing.assert_array_equal(np.asarray(outs[3]), [3.0, -7.0, 9.0, -7.0])
        assert np.isnan(outs[4]) and outs[5] == 9.0 and outs[6] == 0.0 and np.isnan(outs[7])
    # Static integers out of bounds, as in JAX: reads clamp, writes are dropped.
    assert float(x[10]) == 9.0 and float(pyree.jit(lambda v: v[10])(x)) == 9.0
    np.testing.assert_array_equal(np.asarray(x[-11, None]), [0.0])
    np.testing.assert_array_equal(np.asarray(jnp.asarray(X)[1, [0, 1], 7]),
                                  X[1, [0, 1], X.shape[2] - 1])
    assert float(x.at[11].get()) == 9.0
    np.testing.assert_array_equal(np.asarray(jnp.asarray(X).at[[0], 40].set(1.0)), X)
    np.testing.assert_array_equal(np.asarray(pyree.jit(lambda v: v.at[-11].add(5.0))(x)),
                                  np.asarray(x))


def _np_update(x, index, values, op):
    y = x.copy()
    index = _np_index(index)
    if op == "set":
        y[index] = values
    else:
        {"add": np.add, "multiply": np.multiply, "min": np.minimum,
         "max": np.maximum}[op].at(y, index, values)
    return y


UPDATES = [
    ((0, slice(None), [1, 2]), 7.0),
    ((slice(None), [0, 0, 1], slice(1, 3)), np.arange(18, dtype=np.float32).reshape(3, 3, 2)),
    ((np.array([True, False, True]),), -1.0),
    ((slice(None, None, -1), [1, 2, 3], slice(0, 5, 2)),
     np.arange(27, dtype=np.float32).reshape(3, 3, 3)),
    ((Ellipsis, [4, -5]), np.array([3.0, 4.0], np.float32)),
    ((1, [2, 3], 4), np.array([5.0, 6.0], np.float32)),
    ((1, slice(0, 2)), 9.0),
]


OPS = ["set", "add", "multiply", "min", "max"]


def _update_cases(op):
    # With repeated indices, which value `set` writes is unspecified: not compared.
    return [(i, v) for i, v in UPDATES if not (op == "set" and i[1:2] == ([0, 0, 1],))]


def test_at_updates_jit():
    def f(x):
        return tuple(tuple(getattr(x.at[index], op)(values) for index, values in _update_cases(op))
                     for op in OPS)

    for op, outs in zip(OPS, pyree.jit(f)(jnp.asarray(X))):
        for (index, values), out in zip(_update_cases(op), outs):
            np.testing.assert_array_equal(np.asarray(out), _np_update(X, index, values, op))


@pytest.mark.parametrize("op", ["set", "add"])
def test_at_updates_eager(op):
    x = jnp.asarray(X)
    for index, values in _update_cases(op)[::2]:
        out = getattr(x.at[index], op)(values)
        np.testing.assert_array_equal(np.asarray(out), _np_update(X, index, values, op))


def test_at_semantics_of_jax():
    i = jnp.array([0, 0, 2])
    x8 = jnp.ones(4) * 8

    def f(x8, ints, i):
        return (x8.at[i].divide(2.0), x8.at[i].power(2.0), x8.at[i].multiply(2.0),
                x8.at[i].apply(lambda v: v + 1), x8.at[i].subtract(1.0), x8.at[i].add(1.0),
                ints.at[i].divide(2), ints.at[i].set(2.7), x8.at[11].set(5.0, mode="drop"),
                x8.at[-5].add(1.0, mode="drop"), x8.at[jnp.array([1, 9])].add(100.0, mode="clip"),
                x8.at[jnp.array([1, 9])].set(0.0, mode="drop"), x8.at[i[2]].set(-1.0, mode="fill"))

    outs = [np.asarray(o) for o in pyree.jit(f)(x8, jnp.arange(4), i)]
    expect = [[2, 8, 4, 8], [4096, 8, 64, 8], [32, 8, 16, 8], [9, 8, 9, 8], [6, 8, 7, 8],
              [10, 8, 9, 8], [0, 1, 1, 3], [2, 1, 2, 3], [8, 8, 8, 8], [8, 8, 8, 8],
              [8, 108, 8, 108], [8, 0, 8, 8], [8, 8, -1, 8]]
    for k, (out, ref) in enumerate(zip(outs, expect)):
        np.testing.assert_array_equal(out, np.asarray(ref, out.dtype), err_msg=str(k))
    assert outs[6].dtype == np.int32 and outs[7].dtype == np.int32


def test_setitem_in_jit_with_array_index():
    @pyree.jit
    def f(x, i, v):
        x[i] = v
        x[0, [1, 2]] += 10.0
        return x

    i = np.array([2, 1], np.int32)
    ref = X[0].copy()
    ref[i] = 5.0
    ref[0, [1, 2]] += 10.0
    np.testing.assert_array_equal(np.asarray(f(jnp.asarray(X[0]), i, 5.0)), ref)


def test_take_and_take_along_axis():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.array([[0, 3], [-1, 17]], np.int32)
    t = np.array([[0, 3, 1], [2, -1, 0], [4, 0, 1]], np.int32)
    u = np.array([[2, 0, -1, 5]], np.int32)

    def f(a, i, t):
        return (jnp.take(a, i, axis=1), jnp.take(a, i), jnp.take(a, i, axis=-2, mode="clip"),
                jnp.take(a, i, axis=1, mode="wrap"), jnp.take(a, i, fill_value=-1.0),
                a.take(i[0], axis=0, mode="clip"), jnp.take(a, 5),
                jnp.take_along_axis(a, t, axis=1), jnp.take_along_axis(a, u, axis=0),
                jnp.take_along_axis(a, t, axis=1, mode="clip"),
                jnp.take_along_axis(a, t.reshape(-1), axis=None),
                jnp.take_along_axis(jnp.arange(5, dtype=jnp.int32), t[0], axis=0))

    outs = [np.asarray(o) for o in pyree.jit(f)(a, i, t)]
    flat = a.reshape(-1)
    nan = np.nan

    bad = (i >= 4) | (i < -4)
    np.testing.assert_array_equal(outs[0], np.where(bad[None], nan, np.take(
        a, np.clip(np.where(i < 0, i + 4, i), 0, 3), axis=1)))
    np.testing.assert_array_equal(outs[1], np.where(i == 17, nan, flat[i % 12]))
    np.testing.assert_array_equal(outs[2], np.take(a, i, axis=0, mode="clip"))
    np.testing.assert_array_equal(outs[3], np.take(a, i, axis=1, mode="wrap"))
    np.testing.assert_array_equal(outs[4], np.where(i == 17, -1.0, flat[i % 12]))
    np.testing.assert_array_equal(outs[5], np.take(a, i[0], axis=0, mode="clip"))
    assert outs[6] == 5.0
    ref = np.where((t >= 4) | (t < -4), nan,
                   np.take_along_axis(a, np.clip(np.where(t < 0, t + 4, t), 0, 3), axis=1))
    np.testing.assert_array_equal(outs[7], ref)
    np.testing.assert_array_equal(outs[8], [[8.0, 1.0, 10.0, nan]])
    np.testing.assert_array_equal(outs[9], np.take_along_axis(
        a, np.clip(np.where(t < 0, t + 4, t), 0, 3), axis=1))
    np.testing.assert_array_equal(outs[10], flat[np.where(t < 0, t + 12, t).reshape(-1)])
    np.testing.assert_array_equal(outs[11], [0, 3, 1])


def test_take_eagerly_and_take_along_axis_broadcasts():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    idx = np.array([[2, 0, 1, 1]], np.int32)  # (1, 4) against (2, 3) along axis 1
    out = jnp.take_along_axis(jnp.asarray(a), idx, axis=1)
    np.testing.assert_array_equal(np.asarray(out), np.take_along_axis(a, np.repeat(idx, 2, 0), 1))
    np.testing.assert_array_equal(np.asarray(jnp.take(a, np.array([5, -1, 6]))),
                                  [5.0, 5.0, np.nan])


def test_index_errors():
    x = jnp.asarray(X)
    with pytest.raises(IndexError, match="dtype float"):
        x[np.array([0.0, 1.0])]
    with pytest.raises(IndexError):
        x[1.5]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, [0], 0]
    with pytest.raises(IndexError, match="cannot be broadcast"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="boolean index"):
        x[np.array([True, False])]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(IndexError, match="dtype float"):
        pyree.jit(lambda a, i: a[i])(x, np.array([1.0]))
    with pytest.raises(ValueError, match="cannot broadcast"):  # ValueError, as in JAX
        x.at[[0, 1]].set(np.ones((3, 4, 5)))
    with pytest.raises(ValueError, match="invalid mode"):
        jnp.take(x, np.array([0]), mode="bogus")


def test_grads_through_indexing():
    x = np.random.RandomState(0).randn(4, 5).astype(np.float32)
    v = np.arange(4, dtype=np.float32)
    i = np.array([0, 2, 2, -1], np.int32)

    def f(x, v):
        x = jnp.asarray(x)
        return (jnp.sin(x[i, 1:4]), x[1:3, [0, 4]] * x[[3], 2],
                jnp.cos(x.at[i, 2].add(v)), x.at[np.array([0, 3]), 2].set(v[:2] ** 2),
                jnp.take_along_axis(x, np.array([[0, 4, 4]] * 4), axis=1) * 2.0,
                jnp.take(x, np.array([3, 20, -1]), axis=1, fill_value=0.0))

    check_grads(pyree.jit(f), (x, v), order=1)


def _stack(fn, n):
    return np.stack([np.asarray(fn(b)) for b in range(n)])


def test_vmap_through_indexing():
    rng = np.random.RandomState(1)
    xs = rng.randn(3, 4, 5).astype(np.float32)
    idxs = np.array([[0, 1], [3, 3], [2, -1]], np.int32)
    vs = rng.randn(3, 2, 5).astype(np.float32)

    def f(x, i, v):
        return x[i, 1:3], x[:, i], x.at[i].add(v), x.at[i, 0].set(v[:, 0]), x[i[0]]

    outs = pyree.jit(pyree.vmap(f))(xs, idxs, vs)
    for k, out in enumerate(outs):
        ref = _stack(lambda b: f(jnp.asarray(xs[b]), idxs[b], vs[b])[k], 3)
        np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6)
    outs = pyree.jit(pyree.vmap(f, in_axes=(None, 0, None)))(xs[0], idxs, vs[0])
    for k, out in enumerate(outs):
        ref = _stack(lambda b: f(jnp.asarray(xs[0]), idxs[b], vs[0])[k], 3)
        np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6)
