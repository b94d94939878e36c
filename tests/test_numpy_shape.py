"""pyree.numpy's creation, shape and assorted functions checked against NumPy, eagerly and under
``pyree.jit``; gradients against finite differences; vmap against loops.

Expected values come from NumPy (or closed forms); expected dtypes and weak types are JAX's
(x64 off), learnt from jax 0.10.2. Many checks share one jitted function, since each jit
signature costs one IREE compile.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyree
import pyree.numpy as jnp
from pyree.errors import ConcretizationTypeError
from pyree.test_util import check_grads

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def check(got, want, dtype=None, weak=False, rtol=1e-6, atol=1e-6):
    """``got`` is a pyree Array equal to ``want`` (NumPy), of ``dtype`` and weak type ``weak``."""
    assert isinstance(got, pyree.Array), type(got)
    want = np.asarray(want)
    dtype = np.dtype(dtype) if dtype is not None else want.dtype
    assert got.dtype == dtype, (got.dtype, dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.weak_type == weak, f"weak_type is {got.weak_type}, expected {weak}"
    value = np.asarray(got)
    if dtype.kind in "fc":
        np.testing.assert_allclose(value.astype(np.float64), want.astype(np.float64), rtol=rtol,
                                   atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(value, want)


def check_all(got, want, **kw):
    assert len(got) == len(want), (len(got), len(want))
    for g, w in zip(got, want):
        check(g, w, **kw)


class _Runner:
    """``run(f, *args)``: ``f(*args)`` as is, or through ``pyree.jit``; ``run.jit`` says which.
    Eagerly every new (primitive, dtype, rank) costs a compile, so some groups run a subset of
    their cases eagerly."""

    def __init__(self, jit):
        self.jit = jit

    def __call__(self, f, *args):
        return pyree.jit(f)(*args) if self.jit else f(*args)


@pytest.fixture(params=["eager", "jit"])
def run(request):
    return _Runner(request.param == "jit")


def _line_of(text):
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if text in line and "_line_of" not in line:
                return i
    raise AssertionError(text)


RNG = np.random.RandomState(0)
M34 = RNG.randn(3, 4).astype(np.float32)
T234 = RNG.randn(2, 3, 4).astype(np.float32)
F32 = np.float32
I32 = np.int32


# -- creation -------------------------------------------------------------------------------------

def test_spaces_and_grids():
    check(jnp.logspace(0, 2, 3), np.logspace(0, 2, 3).astype(F32), rtol=1e-6)
    check(jnp.logspace(0.0, 3.0, 4, base=2.0, endpoint=False),
          np.logspace(0, 3, 4, base=2.0, endpoint=False).astype(F32))
    check(jnp.logspace(0, 2, 3, dtype=jnp.int32), np.array([1, 10, 100], I32))
    check(jnp.geomspace(1, 1000, 4), np.geomspace(1, 1000, 4).astype(F32), rtol=1e-6)
    check(jnp.geomspace(-1.0, -8.0, 4), np.array([-1, -2, -4, -8], F32), rtol=1e-6)
    check(jnp.geomspace(2.0, 32.0, 4, endpoint=False), np.geomspace(2, 32, 4, endpoint=False)
          .astype(F32), rtol=1e-6)
    # (Under jit: one compile rather than a dozen rank-2 eager kernels.)
    check(pyree.jit(lambda s: jnp.geomspace(s, 16.0, 3, axis=1))(jnp.array([1.0, 2.0])),
          np.geomspace([1.0, 2.0], 16.0, 3, axis=1).astype(F32), rtol=1e-6)
    with pytest.raises(ValueError, match="zero"):
        jnp.geomspace(0.0, 1.0, 3)
    check(jnp.tri(3), np.tri(3, dtype=F32))
    check(jnp.tri(3, 5, -1, dtype=jnp.int32), np.tri(3, 5, -1, dtype=I32))
    check(jnp.indices((2, 3)), np.indices((2, 3)).astype(I32))
    check_all(jnp.indices((2, 3), sparse=True), [a.astype(I32) for a in
                                                 np.indices((2, 3), sparse=True)])
    check(jnp.indices((2, 0), dtype=jnp.float32), np.indices((2, 0), dtype=F32))
    check(jnp.mgrid[0:3, 0:2], np.mgrid[0:3, 0:2].astype(I32))
    check(jnp.mgrid[-1:1:0.5, 0:2], np.mgrid[-1:1:0.5, 0:2].astype(F32))
    check(jnp.mgrid[0:1:5j], np.mgrid[0:1:5j].astype(F32))
    check(jnp.mgrid[2:5], np.arange(2, 5, dtype=I32))
    check_all(jnp.ogrid[0:3, 0:2], [a.astype(I32) for a in np.ogrid[0:3, 0:2]])
    check(jnp.fromfunction(lambda i, j: i * 10 + j, (2, 3)),
          np.fromfunction(lambda i, j: i * 10 + j, (2, 3)).astype(F32))
    check(jnp.fromfunction(lambda i, j: i - j, (3, 2), dtype=jnp.int32),
          np.fromfunction(lambda i, j: i - j, (3, 2), dtype=I32))
    x = jnp.arange(3.0)
    check(jnp.copy(x), np.arange(3.0, dtype=F32))
    check(jnp.copy([1, 2]), np.array([1, 2], I32))
    # NumPy scalars in a list keep their dtypes under JAX's promotion.
    check(jnp.array([np.int8(1), 2]), np.array([1, 2], np.int8))
    check(jnp.array([np.int8(1), np.uint8(2)]), np.array([1, 2], np.int16))
    check(jnp.array([np.array([1, 2], np.uint8), [3, 4]]), np.array([[1, 2], [3, 4]], np.uint8))


def test_triangles_diagonals(run):
    x = jnp.asarray(T234)

    def f(a, v):
        out = (jnp.tril(a, -1), jnp.triu(a, 2), jnp.diagonal(a, 1, 2, 0), jnp.diag(v, -1),
               jnp.diag(a[0], 1), jnp.diagflat(a[0], 1))
        if run.jit:
            out += (jnp.tril(a), jnp.triu(a, -5), jnp.diagonal(a), jnp.diagonal(a, -1, -1, -2),
                    jnp.diagonal(a, 7), jnp.diag(v), jnp.diag(v, 2), jnp.diag(a[0], -2),
                    jnp.tril(a > 0))
        return out

    v = jnp.array([1, 2, 3])
    out = run(f, x, v)
    n, nv = T234, np.array([1, 2, 3], I32)
    want = (np.tril(n, -1), np.triu(n, 2), np.diagonal(n, 1, 2, 0), np.diag(nv, -1),
            np.diag(n[0], 1), np.diagflat(n[0], 1))
    if run.jit:
        want += (np.tril(n), np.triu(n, -5), np.diagonal(n), np.diagonal(n, -1, -1, -2),
                 np.diagonal(n, 7), np.diag(nv), np.diag(nv, 2), np.diag(n[0], -2),
                 np.tril(n > 0))
    check_all(out, want)


@SETTINGS
@given(shape=st.lists(st.integers(0, 4), min_size=2, max_size=4),
       offset=st.integers(-5, 5), axes=st.sampled_from([(0, 1), (1, 0), (-1, 0), (-2, -1)]))
def test_diagonal_matches_numpy(shape, offset, axes):
    a = np.arange(np.prod(shape), dtype=F32).reshape(shape)
    check(jnp.diagonal(jnp.asarray(a), offset, *axes), np.diagonal(a, offset, *axes))
    check(jnp.tril(jnp.asarray(a), offset), np.tril(a, offset))


def test_meshgrid(run):
    def f(x, y, z):
        return (jnp.meshgrid(x, y) + jnp.meshgrid(x, y, z, indexing="ij")
                + jnp.meshgrid(x, y, z, sparse=True) + jnp.meshgrid(x))

    x, y, z = np.arange(3, dtype=I32), np.linspace(0, 1, 2).astype(F32), np.zeros(0, F32)
    out = run(f, jnp.asarray(x), jnp.asarray(y), jnp.asarray(z))
    want = (np.meshgrid(x, y) + np.meshgrid(x, y, z, indexing="ij")
            + np.meshgrid(x, y, z, sparse=True) + np.meshgrid(x))
    check_all(out, want)


# -- joining, splitting, reordering ---------------------------------------------------------------

def test_stacking(run):
    def f(a, v, s):
        return (jnp.hstack([v, v]), jnp.hstack([a, a]), jnp.vstack([v, v]), jnp.vstack([a, v]),
                jnp.row_stack([v, s * jnp.ones(4)]), jnp.dstack([a, a]), jnp.dstack([v, v]),
                jnp.column_stack([v, v]), jnp.column_stack([a, v[:3]]),
                jnp.hstack(a), jnp.vstack(a),
                jnp.atleast_1d(s), jnp.atleast_2d(v), jnp.atleast_3d(v), jnp.atleast_3d(a),
                jnp.append(a, v), jnp.append(a, a, axis=0),
                jnp.block([[a, a], [a, a]]), jnp.block([v, s]),
                jnp.permute_dims(a, (1, 0)), jnp.matrix_transpose(a),
                *jnp.broadcast_arrays(v, a[:, :1], s), *jnp.unstack(a, axis=1))

    a, v, s = M34, np.arange(4, dtype=F32), np.float32(2.5)
    out = run(f, jnp.asarray(a), jnp.asarray(v), jnp.asarray(s))
    want = (np.hstack([v, v]), np.hstack([a, a]), np.vstack([v, v]), np.vstack([a, v]),
            np.vstack([v, s * np.ones(4, F32)]), np.dstack([a, a]), np.dstack([v, v]),
            np.column_stack([v, v]), np.column_stack([a, v[:3]]), np.hstack(a), np.vstack(a),
            np.atleast_1d(s), np.atleast_2d(v), np.atleast_3d(v), np.atleast_3d(a),
            np.append(a, v), np.append(a, a, axis=0), np.block([[a, a], [a, a]]),
            np.block([v, s]), a.T, a.T, *np.broadcast_arrays(v, a[:, :1], s),
            *[a[:, i] for i in range(4)])
    check_all(out, want)
    # Several arguments give a list; Python scalars stay weak.
    one, two = jnp.atleast_2d(1.0, jnp.arange(2))
    check(one, np.ones((1, 1), F32), weak=True)
    check(two, np.arange(2, dtype=I32)[None])


def test_split_family(run):
    def f(a, t):
        return (jnp.split(a, 3), jnp.split(a, [1, -1, 9], axis=1), jnp.array_split(a, 5, 1),
                jnp.array_split(a, [2], axis=0), jnp.hsplit(a, 2), jnp.vsplit(a, [1]),
                jnp.dsplit(t, [1, 3]), jnp.hsplit(a[0], [1]), jnp.split(a, []))

    a = np.arange(24, dtype=F32).reshape(6, 4)
    out = run(f, jnp.asarray(a), jnp.asarray(T234))
    want = (np.split(a, 3), np.split(a, [1, -1, 9], axis=1), np.array_split(a, 5, 1),
            np.array_split(a, [2], axis=0), np.hsplit(a, 2), np.vsplit(a, [1]),
            np.dsplit(T234, [1, 3]), np.hsplit(a[0], [1]), np.split(a, []))
    for g, w in zip(out, want):
        check_all(g, w)


@SETTINGS
@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3), data=st.data())
def test_split_matches_numpy(shape, data):
    a = np.arange(np.prod(shape), dtype=I32).reshape(shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    spec = data.draw(st.one_of(st.integers(1, 4),
                               st.lists(st.integers(-6, 6), max_size=4)))
    check_all(jnp.array_split(jnp.asarray(a), spec, axis), np.array_split(a, spec, axis))


def test_tile_repeat_resize(run):
    def f(a, v):
        return (jnp.tile(v, 2), jnp.tile(v, (2, 1, 2)), jnp.tile(a, (2,)), jnp.tile(a, 0),
                jnp.repeat(a, 2), jnp.repeat(a, 3, axis=0), jnp.repeat(a, 2, axis=-1),
                jnp.repeat(a, np.array([1, 0, 3]), axis=0),
                jnp.repeat(v, np.array([2, 0, 1, 1, 0, 3, 1, 1, 2, 0, 1, 2, 1, 1, 3, 1, 2, 1,
                                        2, 3])),  # many runs: the one-hot gather
                jnp.repeat(a, [2], axis=1), jnp.repeat(a, np.array([1, 2, 0, 1]), axis=1,
                                                       total_repeat_length=7),
                jnp.resize(v, (3, 5)), jnp.resize(a, 5), jnp.resize(a, (0,)))

    a, v = M34[:3], np.arange(20, dtype=I32)
    out = run(f, jnp.asarray(a), jnp.asarray(v))
    counts = [2, 0, 1, 1, 0, 3, 1, 1, 2, 0, 1, 2, 1, 1, 3, 1, 2, 1, 2, 3]
    padded = np.concatenate([np.repeat(a, [1, 2, 0, 1], axis=1)] + [a[:, 3:]] * 3, 1)
    want = (np.tile(v, 2), np.tile(v, (2, 1, 2)), np.tile(a, (2,)), np.tile(a, 0),
            np.repeat(a, 2), np.repeat(a, 3, axis=0), np.repeat(a, 2, axis=-1),
            np.repeat(a, [1, 0, 3], axis=0), np.repeat(v, counts), np.repeat(a, [2], axis=1),
            padded, np.resize(v, (3, 5)), np.resize(a, 5), np.resize(a, (0,)))
    check_all(out, want)
    check(jnp.tile(2.0, 3), np.full(3, 2.0, F32), weak=True)
    check(jnp.repeat(jnp.array(2.0), 3), np.full(3, 2.0, F32), weak=True)


def test_repeat_traced_counts():
    @pyree.jit
    def f(a, counts):
        return jnp.repeat(a, counts, axis=0, total_repeat_length=6), \
            jnp.repeat(a, counts, axis=0, total_repeat_length=2)

    a = M34[:3]
    full, cut = f(jnp.asarray(a), jnp.array([1, 0, 3]))
    # Past the sum of the counts the last element repeats (JAX); short totals cut the result.
    check(full, np.concatenate([np.repeat(a, [1, 0, 3], axis=0), a[2:], a[2:]]))
    check(cut, np.repeat(a, [1, 0, 3], axis=0)[:2])

    @pyree.jit
    def g(a, counts):
        return jnp.repeat(a, counts)  # line-marker: traced repeats

    with pytest.raises(ConcretizationTypeError, match="total_repeat_length") as info:
        g(jnp.arange(3), jnp.array([1, 2, 3]))
    assert f":{_line_of('line-marker: traced repeats')}" in str(info.value)


def test_flip_roll_rot90(run):
    def f(a, t, shift):
        return (jnp.flip(a), jnp.flip(t, 1), jnp.flip(t, (0, -1)), jnp.fliplr(a), jnp.flipud(a),
                jnp.roll(a, 2), jnp.roll(a, -1, 0), jnp.roll(t, (1, -7), (0, 2)),
                jnp.roll(t, 3, (1, 2)), jnp.roll(a, shift, 1), jnp.roll(a, shift),
                jnp.rot90(a), jnp.rot90(a, 2), jnp.rot90(a, -1), jnp.rot90(t, 1, (2, 0)),
                jnp.roll(a[:0], 3, 0))

    out = run(f, jnp.asarray(M34), jnp.asarray(T234), jnp.array(-6))
    a, t = M34, T234
    want = (np.flip(a), np.flip(t, 1), np.flip(t, (0, -1)), np.fliplr(a), np.flipud(a),
            np.roll(a, 2), np.roll(a, -1, 0), np.roll(t, (1, -7), (0, 2)), np.roll(t, 3, (1, 2)),
            np.roll(a, -6, 1), np.roll(a, -6), np.rot90(a), np.rot90(a, 2), np.rot90(a, -1),
            np.rot90(t, 1, (2, 0)), np.roll(a[:0], 3, 0))
    check_all(out, want)


def test_delete_insert():
    a = np.arange(12, dtype=F32).reshape(3, 4)
    x = jnp.asarray(a)
    check(jnp.delete(x, 1), np.delete(a, 1))
    check(jnp.delete(x, [0, 2], axis=1), np.delete(a, [0, 2], axis=1))
    check(jnp.delete(x, slice(None, None, 2), axis=0), np.delete(a, slice(None, None, 2), axis=0))
    check(jnp.delete(x, np.array([True, False, True, False]), axis=-1),
          np.delete(a, np.array([True, False, True, False]), axis=-1))
    check(jnp.delete(x, [-1, -1], axis=0), np.delete(a, [-1, -1], axis=0))
    check(jnp.insert(x, 1, 9.0, axis=1), np.insert(a, 1, 9.0, axis=1))
    check(jnp.insert(x, [1, 4, 1], jnp.array([7.0, 8.0, 9.0]), axis=1),
          np.insert(a, [1, 4, 1], [7.0, 8.0, 9.0], axis=1))
    check(jnp.insert(x, -1, jnp.array([[5.0], [6.0]]), axis=0),
          np.insert(a, -1, [[5.0], [6.0]], axis=0))
    check(jnp.insert(jnp.arange(4), 2, jnp.array([5, 6])), np.insert(np.arange(4, dtype=I32),
                                                                     2, [5, 6]))
    check(jnp.insert(x, slice(0, 2), 0.5), np.insert(a, slice(0, 2), 0.5))
    with pytest.raises(IndexError, match="out of bounds"):
        jnp.delete(x, 3, axis=0)
    with pytest.raises(IndexError, match="out of bounds"):
        jnp.insert(x, 5, 1.0, axis=1)

    @pyree.jit
    def f(v, i):
        return jnp.delete(v, i)  # line-marker: traced delete

    with pytest.raises(ConcretizationTypeError) as info:
        f(jnp.arange(3), jnp.array(1))
    assert f":{_line_of('line-marker: traced delete')}" in str(info.value)


# -- pad ------------------------------------------------------------------------------------------

def test_pad_modes(run):
    modes = [("constant", {}), ("constant", {"constant_values": ((1, 2), (3, 4))}),
             ("edge", {}), ("reflect", {}), ("symmetric", {}), ("wrap", {}),
             ("reflect", {"reflect_type": "odd"}), ("symmetric", {"reflect_type": "odd"}),
             ("linear_ramp", {"end_values": (-2, 3)}), ("maximum", {}), ("minimum", {}),
             ("mean", {}), ("mean", {"stat_length": ((1, 2), (3, 1))}), ("empty", {})]
    widths = ((1, 2), (3, 1))

    if not run.jit:  # modes the eager hypothesis test below does not draw
        modes = [m for m in modes if m[1] or m[0] == "empty"]

    def f(a, v, c):
        out = [jnp.pad(a, widths, mode, **kw) for mode, kw in modes]
        out += [jnp.pad(v, 3), jnp.pad(v, (1, 2), "wrap"), jnp.pad(v, 1, constant_values=c),
                jnp.pad(v, ((1, 2),), "linear_ramp"), jnp.pad(v, 4, "mean"),
                jnp.pad(a, 1, "maximum", stat_length=2)]
        return out

    a, v = M34, np.array([1, 5, 2], I32)
    out = run(f, jnp.asarray(a), jnp.asarray(v), jnp.array(7))
    want = [np.pad(a, widths, mode if mode != "empty" else "constant", **kw)
            for mode, kw in modes]
    want += [np.pad(v, 3), np.pad(v, (1, 2), "wrap"), np.pad(v, 1, constant_values=7),
             np.pad(v, ((1, 2),), "linear_ramp"), np.pad(v, 4, "mean"),
             np.pad(a, 1, "maximum", stat_length=2)]
    check_all(out, want, rtol=1e-5)


@SETTINGS
@given(shape=st.lists(st.integers(0, 4), max_size=3), data=st.data())
def test_pad_matches_numpy(shape, data):
    a = (np.arange(np.prod(shape)) * 1.5 - 2).astype(F32).reshape(shape)
    mode = data.draw(st.sampled_from(["constant", "edge", "reflect", "symmetric", "wrap",
                                      "linear_ramp", "maximum", "minimum", "mean"]))
    widths = data.draw(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)),
                                min_size=len(shape), max_size=len(shape)))
    kwargs = {}
    if mode in ("reflect", "symmetric"):
        kwargs["reflect_type"] = data.draw(st.sampled_from(["even", "odd"]))
    widths = tuple(widths) if shape else 0
    empty_padded = any(d == 0 and (lo or hi) for d, (lo, hi) in zip(shape, widths or []))
    if mode != "constant" and empty_padded:
        with pytest.raises(ValueError, match="empty axis"):
            jnp.pad(jnp.asarray(a), widths, mode, **kwargs)
        return
    check(jnp.pad(jnp.asarray(a), widths, mode, **kwargs), np.pad(a, widths, mode, **kwargs),
          rtol=1e-5)


def test_pad_dtypes_and_errors():
    check(jnp.pad(jnp.array([True]), 1), np.array([False, True, False]))
    check(jnp.pad(jnp.arange(3), 1, constant_values=1.7), np.array([1, 0, 1, 2, 1], I32))
    check(jnp.pad(jnp.arange(3, dtype=jnp.uint8), 2, "linear_ramp", end_values=9),
          np.pad(np.arange(3, dtype=np.uint8), 2, "linear_ramp", end_values=9))
    check(jnp.pad(jnp.array(2.0), 3), np.float32(2.0), weak=True)  # 0-d: nothing to pad
    x = jnp.ones((2, 3))
    with pytest.raises(ValueError, match="negative"):
        jnp.pad(x, -1)
    with pytest.raises(ValueError, match="does not fit"):
        jnp.pad(x, ((1, 2), (3, 4), (5, 6)))
    with pytest.raises(TypeError, match="integral"):
        jnp.pad(x, 1.5)
    with pytest.raises(ValueError, match="not supported"):
        jnp.pad(x, 1, mode="bogus")
    with pytest.raises(ValueError, match="unsupported keyword"):
        jnp.pad(x, 1, mode="edge", constant_values=3)
    with pytest.raises(ValueError, match="empty axis"):
        jnp.pad(jnp.ones((0, 2)), 1, mode="reflect")

    @pyree.jit
    def f(v, w):
        return jnp.pad(v, w)  # line-marker: traced width

    with pytest.raises(ConcretizationTypeError) as info:
        f(jnp.ones(3), jnp.array(1))
    assert f":{_line_of('line-marker: traced width')}" in str(info.value)


# -- misc -----------------------------------------------------------------------------------------

def test_diff(run):
    def f(a, b, i):
        return (jnp.diff(a), jnp.diff(a, 2, axis=0), jnp.diff(a, 0), jnp.diff(a, 5),
                jnp.diff(a, prepend=0.0, append=a[:, :1]), jnp.diff(b), jnp.diff(i, axis=-2),
                jnp.ediff1d(i), jnp.ediff1d(i, to_begin=jnp.array([1.5, 2.5]), to_end=7),
                jnp.diff(a[:, :0]))

    a, i = M34, np.array([[1, 4, 9], [2, 3, 1]], I32)
    b = np.array([True, False, False, True])
    out = run(f, jnp.asarray(a), jnp.asarray(b), jnp.asarray(i))
    want = (np.diff(a), np.diff(a, 2, axis=0), a, np.diff(a, 5), np.diff(a, prepend=0.0,
            append=a[:, :1]), np.diff(b), np.diff(i, axis=-2), np.ediff1d(i),
            np.ediff1d(i, to_begin=[1, 2], to_end=7).astype(I32), np.diff(a[:, :0]))
    check_all(out, [np.asarray(w).astype(np.asarray(g).dtype) for g, w in zip(out, want)],
              rtol=1e-5)
    with pytest.raises(ValueError, match="non-negative"):
        jnp.diff(jnp.ones(3), -1)
    with pytest.raises(ValueError, match="one dimensional"):
        jnp.diff(jnp.array(1.0))


def test_interp(run):
    xp = np.array([0.0, 1.0, 3.0, 4.0], F32)
    fp = np.array([0.0, 2.0, 3.0, -1.0], F32)
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.5, 4.0, 5.0, np.nan], F32)

    def f(x, xp, fp):
        out = (jnp.interp(x, xp, fp), jnp.interp(x, xp, fp, left=-9.0, right=9.0),
               jnp.interp(x, xp[::-1] * -1, fp), jnp.interp(x, xp[1:2], fp[2:3]))
        if run.jit:
            out += (jnp.interp(x[2], xp, fp), jnp.interp(x.reshape(2, 4), xp, jnp.arange(4)),
                    jnp.interp(x, jnp.array([3.0, 0.0, 7.0, 1.0]), fp, period=5.0))
        return out

    out = run(f, jnp.asarray(x), jnp.asarray(xp), jnp.asarray(fp))
    want = (np.interp(x, xp, fp), np.interp(x, xp, fp, left=-9, right=9),
            np.interp(x, -xp[::-1], fp), np.interp(x, xp[1:2], fp[2:3]))
    if run.jit:
        want += (np.interp(x[2], xp, fp), np.interp(x.reshape(2, 4), xp, np.arange(4)),
                 np.interp(x, [3.0, 0.0, 7.0, 1.0], fp, period=5.0))
    check_all(out, [w.astype(F32) for w in want], rtol=1e-5)
    with pytest.raises(ValueError, match="same length"):
        jnp.interp(jnp.ones(2), jnp.ones(3), jnp.ones(2))
    with pytest.raises(ValueError, match="one-dimensional"):
        jnp.interp(jnp.ones(2), jnp.ones((3, 1)), jnp.ones((3, 1)))


@SETTINGS
@given(n=st.integers(2, 6), data=st.data())
def test_interp_matches_numpy(n, data):
    steps = data.draw(st.lists(st.floats(0.25, 3.0), min_size=n - 1, max_size=n - 1))
    xp = np.concatenate([[-1.0], -1.0 + np.cumsum(steps)]).astype(F32)
    fp = np.array(data.draw(st.lists(st.floats(-5, 5), min_size=n, max_size=n)), F32)
    x = np.array(data.draw(st.lists(st.floats(-3, 12), min_size=0, max_size=5)), F32)
    check(jnp.interp(jnp.asarray(x), jnp.asarray(xp), jnp.asarray(fp)),
          np.interp(x, xp, fp).astype(F32), rtol=1e-5, atol=1e-5)


def test_polynomials(run):
    def f(p, q, x, i):
        return (jnp.polyval(p, x), jnp.polyval(i, i), jnp.polyval(p[:0], x),
                jnp.polyadd(p, q), jnp.polyadd(i, i[:1]), jnp.polysub(q, p), jnp.polymul(p, q),
                jnp.polymul(i, i), jnp.polyder(p), jnp.polyder(i, 2), jnp.polyder(p, 0),
                jnp.polyint(p), jnp.polyint(i, 2, k=jnp.array([5.0, 7.0])),
                jnp.polyint(p, 3, k=2.0), jnp.vander(x), jnp.vander(i, 5, increasing=True),
                jnp.vander(x, 0))

    p, q = np.array([1.5, -2.0, 0.5], F32), np.array([2.0, 1.0], F32)
    x, i = np.array([-1.0, 0.5, 2.0, 3.0], F32), np.array([1, 2, 3, 4], I32)
    out = run(f, jnp.asarray(p), jnp.asarray(q), jnp.asarray(x), jnp.asarray(i))
    want = (np.polyval(p, x), np.polyval(i, i), np.zeros(4, F32), np.polyadd(p, q),
            np.polyadd(i, i[:1]), np.polysub(q, p), np.polymul(p, q),
            np.polymul(i, i).astype(F32), np.polyder(p), np.polyder(i, 2).astype(F32), p,
            np.polyint(p), np.polyint(i, 2, k=[5.0, 7.0]).astype(F32),
            np.polyint(p, 3, k=2.0), np.vander(x), np.vander(i, 5, increasing=True),
            np.vander(x, 0))
    dtypes = [F32, I32, F32, F32, I32, F32, F32, F32, F32, F32, F32, F32, F32, F32, F32, I32, F32]
    check_all(out, [np.asarray(w).astype(t) for w, t in zip(want, dtypes)], rtol=1e-5)
    check(jnp.polymul(jnp.array([0.0, 0.0, 1.0, 2.0]), jnp.array([3.0]), trim_leading_zeros=True),
          np.array([3.0, 6.0], F32))


def test_counting(run):
    def f(x, v, b, w):
        return (jnp.bincount(x, length=6), jnp.bincount(x, weights=w, length=4),
                jnp.bincount(x - 1, length=3),
                jnp.digitize(v, b), jnp.digitize(v, b, right=True),
                jnp.digitize(v, b[::-1]), jnp.digitize(v, b[::-1], True),
                jnp.digitize(v, b[:0]),
                *jnp.histogram(v, bins=4, range=(0.0, 4.0)),
                *jnp.histogram(v[:6], bins=b),
                *(jnp.histogram(v[:6], bins=3, weights=w[:6], density=True) if run.jit else
                  jnp.histogram(v[:6], bins=3)),
                jnp.histogram_bin_edges(v[:6], 5))

    x = np.array([0, 1, 1, 3, 5, 3, 3], I32)
    v = np.array([0.5, 1.0, 1.5, 3.0, 3.5, 2.2, np.nan], F32)
    b = np.array([1.0, 2.0, 3.0], F32)
    w = np.linspace(0.5, 2.0, 7).astype(F32)
    out = run(f, jnp.asarray(x), jnp.asarray(v), jnp.asarray(b), jnp.asarray(w))
    want = (np.bincount(x, minlength=6), np.bincount(x, weights=w)[:4],
            np.array([3, 0, 3], I32),  # x - 1 = -1 counts as 0 (JAX); 4 is past the end
            np.digitize(v, b), np.digitize(v, b, right=True), np.digitize(v, b[::-1]),
            np.digitize(v, b[::-1], True), np.zeros(7, I32),
            *np.histogram(v, bins=4, range=(0.0, 4.0)), *np.histogram(v[:6], bins=b),
            *(np.histogram(v[:6], bins=3, weights=w[:6], density=True) if run.jit else
              np.histogram(v[:6], bins=3)),
            np.histogram_bin_edges(v[:6], 5))
    types = [I32, F32, I32] + [I32] * 5 + [F32] * 7
    assert len(types) == len(want)
    for g, wv, t in zip(out, want, types):
        check(g, np.asarray(wv).astype(t), rtol=1e-5)
    # Outside jit the length comes from the data.
    check(jnp.bincount(jnp.array([2, 0, 2]), minlength=5), np.bincount([2, 0, 2], minlength=5)
          .astype(I32))
    check(jnp.bincount(jnp.array([2, 0, 2])), np.array([1, 0, 2], I32))
    counts, edges = jnp.histogram(jnp.array([1.0, 1.0]))  # empty range widens by 0.5 each way
    check(counts, np.histogram([1.0, 1.0])[0].astype(F32))
    check(edges, np.histogram([1.0, 1.0])[1].astype(F32))

    @pyree.jit
    def g(x):
        return jnp.bincount(x)  # line-marker: bincount length

    with pytest.raises(ConcretizationTypeError, match="length") as info:
        g(jnp.array([1, 2]))
    assert f":{_line_of('line-marker: bincount length')}" in str(info.value)
    with pytest.raises(TypeError, match="integer"):
        jnp.bincount(jnp.array([1.0]))


def test_apply_along_axis():
    t = jnp.asarray(T234)
    check(jnp.apply_along_axis(jnp.sum, 1, t), np.sum(T234, 1), rtol=1e-5)
    check(jnp.apply_along_axis(lambda r: r[::-1] * 2.0, -1, t), T234[..., ::-1] * 2)
    check(jnp.apply_along_axis(lambda r, s: jnp.outer(r, r) * s, 0, t, 3.0),
          np.apply_along_axis(lambda r: np.outer(r, r) * 3, 0, T234), rtol=1e-5)


# -- gradients and vmap ---------------------------------------------------------------------------

def test_gradients():
    a = jnp.asarray(M34)
    check_grads(lambda x: jnp.pad(x, ((2, 3), (1, 5)), mode="reflect"), (a,), 1)
    check_grads(lambda x: jnp.pad(x, 4, mode="symmetric", reflect_type="odd"), (a,), 1)
    check_grads(lambda x: jnp.pad(x, 2, mode="mean") + jnp.pad(x, 2, "linear_ramp"), (a,), 1)
    check_grads(lambda x: jnp.roll(x, 2, 1) * jnp.roll(x, jnp.array(-5)), (a,), 1)
    check_grads(lambda x: jnp.tril(x, 1) ** 2, (a,), 2)
    check_grads(lambda x: jnp.diff(x, 2) * jnp.diagonal(x, 1).sum(), (a,), 2)
    check_grads(lambda x: jnp.repeat(x, np.array([1, 0, 2]), axis=0), (a,), 1)
    xp = jnp.array([0.0, 1.0, 3.0, 4.0])
    x = jnp.array([-1.0, 0.3, 0.5, 1.2, 2.5, 3.7, 5.0])
    check_grads(lambda x, fp: jnp.interp(x, xp, fp), (x, jnp.array([0.0, 2.0, 3.0, -1.0])), 1)
    check_grads(lambda p, x: jnp.polyval(p, x), (jnp.array([1.0, -2.0, 0.5]), x), 2)


def test_vmap():
    a = jnp.asarray(M34)
    shifts = jnp.array([1, -2, 7])
    check(pyree.vmap(jnp.roll)(a, shifts),
          np.stack([np.roll(M34[i], s) for i, s in enumerate([1, -2, 7])]))
    check(pyree.vmap(lambda r: jnp.pad(r, (2, 3), "reflect"))(a),
          np.stack([np.pad(r, (2, 3), "reflect") for r in M34]))
    xp = jnp.array([0.0, 1.0, 3.0, 4.0])
    fps = jnp.asarray(M34)
    x = jnp.array([0.5, 2.0, 3.5])
    check(pyree.vmap(lambda fp: jnp.interp(x, xp, fp))(fps),
          np.stack([np.interp(np.asarray(x), np.asarray(xp), r) for r in M34]).astype(F32),
          rtol=1e-5)
    counts = jnp.array([[1, 2, 0, 3], [0, 0, 6, 0], [1, 1, 1, 1]])
    check(pyree.vmap(lambda r, c: jnp.repeat(r, c, total_repeat_length=6))(a, counts),
          np.stack([np.resize(np.repeat(M34[i], c), 6) if c.sum() == 6 else
                    np.concatenate([M34[i], M34[i, -1:], M34[i, -1:]])
                    for i, c in enumerate(np.asarray(counts))]))
    check(pyree.vmap(jnp.diagonal)(jnp.asarray(T234)),
          np.stack([np.diagonal(m) for m in T234]))
    check(pyree.vmap(lambda v: jnp.digitize(v, jnp.array([-0.5, 0.0, 0.5])))(a),
          np.digitize(M34, [-0.5, 0.0, 0.5]).astype(I32))


# -- errors ---------------------------------------------------------------------------------------

def test_errors():
    x = jnp.ones((2, 3))
    with pytest.raises(ValueError, match="equal division"):
        jnp.split(x, 2, axis=1)
    with pytest.raises(ValueError, match="larger than 0"):
        jnp.array_split(x, 0)
    with pytest.raises(ValueError, match="2 or more"):
        jnp.vsplit(jnp.ones(3), 1)
    with pytest.raises(ValueError, match="3 or more"):
        jnp.dsplit(x, 1)
    with pytest.raises(np.exceptions.AxisError):
        jnp.flip(x, 2)
    with pytest.raises(np.exceptions.AxisError):
        jnp.roll(x, 1, -3)
    with pytest.raises(np.exceptions.AxisError):
        jnp.split(x, 1, axis=2)
    with pytest.raises(ValueError, match="repeated axis"):
        jnp.flip(x, (0, 0))
    with pytest.raises(ValueError, match="different"):
        jnp.rot90(x, axes=(1, 1))
    with pytest.raises(ValueError, match="2D"):
        jnp.tril(jnp.ones(3))
    with pytest.raises(ValueError, match="1d or 2d"):
        jnp.diag(jnp.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="1D"):
        jnp.meshgrid(x, x)
    with pytest.raises(ValueError, match=">= 2-d"):
        jnp.fliplr(jnp.ones(3))
    with pytest.raises(ValueError, match="negative"):
        jnp.repeat(jnp.ones(3), -1)
    with pytest.raises(ValueError, match="repeats"):
        jnp.repeat(jnp.ones(3), np.array([1, 2]))
    with pytest.raises(ValueError, match="same"):
        jnp.diagonal(x, 0, 1, -1)
    with pytest.raises(TypeError, match="tuple"):
        jnp.block((x, x))
    with pytest.raises(ValueError, match="depths"):
        jnp.block([[x], x])
    with pytest.raises(TypeError, match="list"):
        jnp.hstack(1)
    with pytest.raises(ValueError, match="repeated axis"):
        jnp.squeeze(jnp.ones((1, 2, 1)), (0, 0))
    with pytest.raises(ValueError, match="squeeze"):
        jnp.squeeze(jnp.ones((1, 2, 1)), 1)
    with pytest.raises(ValueError, match="2"):
        jnp.matrix_transpose(jnp.ones(3))
    with pytest.raises(TypeError, match="integer"):
        jnp.split(x, 1.5)
    with pytest.raises(ConcretizationTypeError):
        pyree.jit(lambda v, r: jnp.tile(v, r))(jnp.ones(2), jnp.array(2))


def test_squeeze_expand_dims_tuple_axes():
    x = jnp.ones((1, 2, 1, 3))
    check(jnp.squeeze(x, (0, -2)), np.ones((2, 3), F32))
    check(jnp.expand_dims(jnp.ones((2, 3)), (0, -1, 2)), np.expand_dims(np.ones((2, 3), F32),
                                                                     (0, -1, 2)))
