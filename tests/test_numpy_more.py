"""NumPy names added to pyree.numpy: index helpers, set operations, statistics, calculus,
polynomials, windows, bits and dtype helpers, against NumPy (values, shapes, dtypes), eagerly,
under jit (grouped into few programs) and under grad."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.errors import ConcretizationTypeError

RNG = np.random.RandomState(0)
X35 = RNG.randn(3, 5).astype(np.float32)


def check(got, want, rtol=1e-5, atol=1e-6, dtype=None):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), got.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def test_index_helpers_eager():
    for fn in ("tril_indices", "triu_indices"):
        for args in ((3,), (3, 1), (3, -1, 4), (2, 0, 5)):
            got, want = getattr(jnp, fn)(*args), getattr(np, fn)(*args)
            for g, w in zip(got, want):
                check(g, w, dtype=np.int32)
    x = np.ones((3, 4))
    for g, w in zip(jnp.triu_indices_from(x, 1), np.triu_indices_from(x, 1)):
        check(g, w)
    for g, w in zip(jnp.tril_indices_from(x), np.tril_indices_from(x)):
        check(g, w)
    for g, w in zip(jnp.diag_indices(3, 3), np.diag_indices(3, 3)):
        check(g, w, dtype=np.int32)
    with pytest.raises(ValueError, match="equal"):
        jnp.diag_indices_from(jnp.ones((2, 3)))
    for g, w in zip(jnp.mask_indices(4, jnp.triu, 1), np.mask_indices(4, np.triu, 1)):
        check(g, w)
    grid = jnp.ix_(jnp.array([0, 2]), jnp.array([1, 3]))
    a = np.arange(20).reshape(4, 5)
    check(jnp.asarray(a)[grid], a[np.ix_([0, 2], [1, 3])])
    check(jnp.ix_(jnp.array([True, False, True]))[0], [0, 2])
    # unravel_index clips (JAX), negative indices count from the end.
    got = jnp.unravel_index(jnp.array([1, 5, -1, 100, -7]), (2, 3))
    check(got[0], [0, 1, 1, 1, 0])
    check(got[1], [1, 2, 2, 2, 0])
    idx = (np.array([0, 1, 1]), np.array([2, 0, 1]))
    check(jnp.ravel_multi_index(idx, (2, 3)), np.ravel_multi_index(idx, (2, 3)), dtype=np.int32)
    check(jnp.ravel_multi_index(idx, (2, 3), order="F"),
          np.ravel_multi_index(idx, (2, 3), order="F"))
    bad = (np.array([0, 5]), np.array([-1, 1]))
    check(jnp.ravel_multi_index(bad, (2, 3), mode="clip"),
          np.ravel_multi_index(bad, (2, 3), mode="clip"))
    check(jnp.ravel_multi_index(bad, (2, 3), mode="wrap"),
          np.ravel_multi_index(bad, (2, 3), mode="wrap"))
    with pytest.raises(ValueError):
        jnp.ravel_multi_index(bad, (2, 3))


def test_updates_and_selections_eager():
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match="inplace=False"):
        jnp.put_along_axis(a, np.array([[1], [2]]), 5.0, axis=1)
    want = a.copy()
    np.put_along_axis(want, np.array([[1], [2]]), 5.0, axis=1)
    check(jnp.put_along_axis(a, np.array([[1], [2]]), 5.0, axis=1, inplace=False), want)
    want = np.zeros(5)
    np.put(want, [0, 3], [1.0, 2.0])
    check(jnp.put(jnp.zeros(5), jnp.array([0, 3]), jnp.array([1.0, 2.0]), inplace=False), want)
    for shape, wrap in (((3, 3), False), ((5, 3), True), ((5, 3), False), ((2, 4), False),
                        ((2, 2, 2), False)):
        want = np.zeros(shape, np.float32)
        np.fill_diagonal(want, [1.0, 2.0], wrap=wrap)
        check(jnp.fill_diagonal(jnp.zeros(shape), jnp.array([1.0, 2.0]), wrap=wrap,
                                inplace=False), want, dtype=np.float32)
    choices = [np.array([1, 2, 3]), np.array([10, 20, 30]), np.array([[7], [8]])]
    a = np.array([[0, 1, 2], [2, 1, 0]])
    check(jnp.choose(a, choices), np.choose(a, choices))
    check(jnp.choose(np.array([0, 4, 1]), choices[:2], mode="clip"),
          np.choose(np.array([0, 4, 1]), choices[:2], mode="clip"))
    check(jnp.choose(np.array([0, 3, 2]), choices[:2], mode="wrap"),
          np.choose(np.array([0, 3, 2]), choices[:2], mode="wrap"))
    m = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    check(jnp.compress(np.array([True, False, True]), m, axis=0), np.compress([True, False, True], m, 0))
    check(jnp.compress(np.array([False, True]), m, axis=1), np.compress([False, True], m, 1))
    check(jnp.compress(np.array([1, 0, 1]), m), np.compress([1, 0, 1], m))
    cond = m % 3 == 0
    check(jnp.extract(cond, m), np.extract(cond, m))
    x = np.arange(6)
    check(jnp.select([x < 2, x > 3], [x, x ** 2], -1), np.select([x < 2, x > 3], [x, x ** 2], -1))
    assert jnp.select([x < 2], [x], 0.5).dtype == np.float32   # weak default promotes
    check(jnp.rollaxis(jnp.ones((2, 3, 4)), 2), np.rollaxis(np.ones((2, 3, 4)), 2))
    check(jnp.rollaxis(jnp.ones((2, 3, 4)), 0, 3), np.rollaxis(np.ones((2, 3, 4)), 0, 3))
    check(jnp.concat([jnp.ones((2, 2)), jnp.zeros((1, 2))]), np.concat([np.ones((2, 2)),
                                                                       np.zeros((1, 2))]))
    check(jnp.concat([jnp.ones((2, 2))] * 2, axis=None), np.ones(8))
    check(jnp.astype(jnp.array([1.5, -2.5]), jnp.int32), [1, -2], dtype=np.int32)
    check(jnp.apply_over_axes(jnp.sum, np.ones((2, 3, 4)), [0, 2]),
          np.apply_over_axes(np.sum, np.ones((2, 3, 4)), [0, 2]))


def test_set_operations_and_unique_family_eager():
    a = np.array([5, 1, 5, 2, 9, 1], np.int32)
    b = np.array([2, 7, 0, 5], np.int32)
    check(jnp.isin(a.reshape(2, 3), b), np.isin(a.reshape(2, 3), b))
    check(jnp.isin(a, b, invert=True), np.isin(a, b, invert=True))
    f = np.array([1.0, np.nan, 2.0], np.float32)
    check(jnp.isin(f, np.array([np.nan, 2.0])), np.isin(f, [np.nan, 2.0]))
    for fn in ("union1d", "setdiff1d", "setxor1d", "intersect1d"):
        check(getattr(jnp, fn)(a, b), getattr(np, fn)(a, b), dtype=np.int32)
    got = jnp.intersect1d(a, b, return_indices=True)
    for g, w in zip(got, np.intersect1d(a, b, return_indices=True)):
        check(g, w)
    x = np.array([[3, 1], [3, 2]], np.int32)
    u = jnp.unique_all(x)
    w = np.unique_all(x)
    for field in ("values", "indices", "inverse_indices", "counts"):
        check(getattr(u, field), getattr(w, field))
    check(jnp.unique_counts(x).counts, np.unique_counts(x).counts)
    check(jnp.unique_inverse(x).inverse_indices, np.unique_inverse(x).inverse_indices)
    check(jnp.unique_values(f), np.unique_values(f))
    y = RNG.randn(4, 7).astype(np.float32)
    for k in (0, 3, -1):
        got = np.asarray(jnp.partition(y, k, axis=1))
        assert (got[:, k] == np.partition(y, k, axis=1)[:, k]).all()
        assert (got[:, :k % 7] <= got[:, k % 7:k % 7 + 1]).all()
        idx = np.asarray(jnp.argpartition(y, k, axis=1))
        assert (np.take_along_axis(y, idx, 1)[:, k] == got[:, k]).all()
    check(jnp.sort_complex(np.array([3, 1 + 2j, 1 - 1j])), np.sort_complex([3, 1 + 2j, 1 - 1j]),
          dtype=np.complex64)
    assert jnp.sort_complex(np.array([3, 1], np.int32)).dtype == np.complex64


def test_statistics_calculus_polynomials_eager():
    check(jnp.cov(X35), np.cov(X35), dtype=np.float32)
    check(jnp.cov(X35, rowvar=False, bias=True), np.cov(X35, rowvar=False, bias=True))
    fw, aw = np.array([1, 2, 1, 3, 1]), np.array([0.5, 1, 1, 2, 0.3], np.float32)
    check(jnp.cov(X35, fweights=fw, aweights=aw), np.cov(X35, fweights=fw, aweights=aw))
    check(jnp.cov(X35, X35[0] * 2, ddof=0), np.cov(X35, X35[0] * 2, ddof=0))
    check(jnp.cov(np.arange(4.0)), np.cov(np.arange(4.0)))
    assert jnp.cov(np.arange(4)).dtype == np.float32
    check(jnp.corrcoef(X35), np.corrcoef(X35))
    check(jnp.corrcoef(X35.T, X35.T[:, 0], rowvar=False),
          np.corrcoef(X35.T, X35.T[:, 0], rowvar=False))
    f = (np.arange(12.0) ** 2).reshape(3, 4).astype(np.float32)
    check(jnp.gradient(f[0]), np.gradient(f[0]), dtype=np.float32)
    coords = np.array([0.0, 1.0, 3.0, 3.5], np.float32)
    for g, w in zip(jnp.gradient(f, 2.0, coords), np.gradient(f, 2.0, coords)):
        check(g, w, rtol=1e-5)
    check(jnp.gradient(f, axis=1), np.gradient(f, axis=1))
    assert jnp.gradient(np.array([1, 4, 9])).dtype == np.float32
    check(jnp.trapezoid(f), np.trapezoid(f), dtype=np.float32)
    check(jnp.trapezoid(f, x=coords), np.trapezoid(f, x=coords))
    check(jnp.trapezoid(f, dx=0.5, axis=0), np.trapezoid(f, dx=0.5, axis=0))
    assert jnp.trapezoid(np.array([1, 2, 3])).dtype == np.float32
    p = np.array([0.0, 3.0, 6.5, 0.1, -3.5], np.float32)
    check(jnp.unwrap(p), np.unwrap(p), rtol=1e-5, atol=1e-5)
    check(jnp.unwrap(p, period=4.0), np.unwrap(p, period=4.0), rtol=1e-5, atol=1e-5)
    check(jnp.poly(np.array([1.0, 2.0, -3.0])), np.poly([1.0, 2.0, -3.0]), dtype=np.float32)
    q, r = jnp.polydiv(np.array([1.0, 3.0, 2.0, 5.0]), np.array([2.0, 1.0]))
    wq, wr = np.polydiv([1.0, 3.0, 2.0, 5.0], [2.0, 1.0])
    check(q, wq)
    check(r[-1:], wr)
    check(jnp.polydiv(np.array([1.0, 3.0, 2.0, 5.0]), np.array([2.0, 1.0]),
                      trim_leading_zeros=True)[1], wr)
    x = np.linspace(0, 2, 9).astype(np.float32)
    y = (1 + 2 * x - x ** 2 + 0.01 * RNG.randn(9)).astype(np.float32)
    check(jnp.polyfit(x, y, 2), np.polyfit(x, y, 2), rtol=1e-3, atol=1e-4)
    w = np.linspace(1, 2, 9).astype(np.float32)
    check(jnp.polyfit(x, np.stack([y, 2 * y], 1), 1, w=w), np.polyfit(x, np.stack([y, 2 * y], 1),
                                                                      1, w=w), rtol=1e-3)
    c, cov = jnp.polyfit(x, y, 1, cov=True)
    wc, wcov = np.polyfit(x, y, 1, cov=True)
    check(cov, wcov, rtol=1e-3, atol=1e-6)
    check(jnp.polyfit(x, y, 2, full=True)[1], np.polyfit(x, y, 2, full=True)[1], rtol=1e-2)


def test_windows_bits_and_host_helpers():
    for name in ("hanning", "hamming", "blackman", "bartlett"):
        for m in (0, 1, 2, 7):
            check(getattr(jnp, name)(m), getattr(np, name)(m), atol=1e-6, dtype=np.float32)
    check(jnp.kaiser(7, 3.0), np.kaiser(7, 3.0), dtype=np.float32)
    check(jnp.i0(np.array([0.0, 1.0, 2.5])), np.i0([0.0, 1.0, 2.5]))
    assert jnp.i0(np.array([1, 2])).dtype == np.float32
    v = np.array([7, -1, 0, 255], np.int32)
    check(jnp.bitwise_count(v), [3, 1, 0, 8], dtype=np.uint8)
    check(jnp.bitwise_invert(v), ~v)
    check(jnp.bitwise_left_shift(v, 1), v << 1)
    check(jnp.bitwise_right_shift(v, 1), v >> 1)
    bits = np.array([[1, 0, 1, 1, 1, 0, 0, 1, 1], [0, 2, 0, 0, 0, 0, 0, 0, 1]])
    for axis, order in ((None, "big"), (1, "little"), (0, "big")):
        check(jnp.packbits(bits, axis=axis, bitorder=order),
              np.packbits(bits, axis=axis, bitorder=order), dtype=np.uint8)
    packed = np.array([[3, 255], [128, 7]], np.uint8)
    for axis, count, order in ((None, None, "big"), (1, 12, "little"), (0, -3, "big"),
                               (None, 40, "big")):
        check(jnp.unpackbits(packed, axis=axis, count=count, bitorder=order),
              np.unpackbits(packed, axis=axis, count=count, bitorder=order), dtype=np.uint8)
    check(jnp.trim_zeros(np.array([0, 0, 1, 0, 2, 0])), [1, 0, 2])
    check(jnp.trim_zeros(np.array([0, 1, 0]), "f"), [1, 0])
    assert jnp.single is jnp.float32 and jnp.cdouble is jnp.complex128
    assert jnp.isdtype(jnp.float32, "real floating") and not jnp.isdtype(jnp.int8, "numeric") \
        is False and jnp.isdtype(jnp.uint8, ("bool", "unsigned integer"))
    assert not jnp.isdtype(jnp.int32, "complex floating")
    assert jnp.can_cast(np.int8, np.int32) and jnp.iterable([1])
    assert jnp.array_str(jnp.ones(2)) == "[1. 1.]"
    check(jnp.frombuffer(b"\x01\x02", dtype=np.uint8), [1, 2])
    check(jnp.fromstring("1 2 3", dtype=np.int32, sep=" "), [1, 2, 3])
    with pytest.raises(NotImplementedError):
        jnp.fromiter(range(3), np.int32)


def test_vectorize():
    add = jnp.vectorize(lambda a, b: a * 2 + b)
    got = add(np.ones((2, 1), np.float32), np.arange(3.0, dtype=np.float32))
    check(got, 2 + np.arange(3.0)[None] * np.ones((2, 1)))
    dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
    a = RNG.randn(4, 3).astype(np.float32)
    check(dot(a, a[0]), a @ a[0], rtol=1e-5)
    stats = jnp.vectorize(lambda v: (jnp.mean(v), jnp.max(v)), signature="(n)->(),()")
    mean, mx = stats(a)
    check(mean, a.mean(1), rtol=1e-5)
    check(mx, a.max(1))
    scaled = jnp.vectorize(lambda v, s: v * s, excluded={1})
    check(scaled(np.arange(3.0), 2.0), np.arange(3.0) * 2)
    with pytest.raises(ValueError, match="core dimension"):
        dot(np.ones((2, 3)), np.ones(4))


def test_jit_programs():
    @pyree.jit
    def program(x, c, a, b, cond):
        return (jnp.cov(x), jnp.corrcoef(x), jnp.gradient(x, axis=1), jnp.trapezoid(x),
                jnp.unravel_index(a, (2, 3)),
                jnp.ravel_multi_index((a, b), (6, 4), mode="clip"),
                jnp.select([x > 0.5, x < -0.5], [x, -x], 0.0),
                jnp.isin(a, b), jnp.union1d(a, b, size=8), jnp.setdiff1d(a, b, size=5),
                jnp.intersect1d(a, b, size=3, fill_value=-1),
                jnp.extract(cond, a, size=4, fill_value=-9),
                jnp.compress(cond, a, size=3),
                jnp.choose(jnp.clip(a, 0, 1), [a, b], mode="wrap"),
                jnp.unwrap(c), jnp.kaiser(6, c[0]), jnp.unique_counts(a, size=5),
                jnp.fill_diagonal(x[:, :3], 0.0, inplace=False),
                jnp.put_along_axis(x, jnp.argmax(x, axis=1, keepdims=True), -1.0, axis=1,
                                   inplace=False),
                jnp.piecewise(c, [c < 1.0, c > 3.0], [lambda v: v * 2, 7.0, lambda v: -v]))

    c = np.array([0.5, 3.5, 7.0, 1.0, 5.0, 2.0], np.float32)
    a = np.array([5, 1, 5, 2, 0, 3], np.int32)
    b = np.array([2, 7, 0, 5, 5, 9], np.int32)
    cond = np.array([True, False, True, True, False, False])
    out = program(X35, c, a, b, cond)
    check(out[0], np.cov(X35))
    check(out[1], np.corrcoef(X35))
    check(out[2], np.gradient(X35, axis=1))
    check(out[3], np.trapezoid(X35))
    check(out[4][0], np.unravel_index(np.clip(a, 0, 5), (2, 3))[0])
    check(out[4][1], np.unravel_index(np.clip(a, 0, 5), (2, 3))[1])
    check(out[5], np.ravel_multi_index((a, b), (6, 4), mode="clip"))
    check(out[6], np.select([X35 > 0.5, X35 < -0.5], [X35, -X35], 0.0))
    check(out[7], np.isin(a, b))
    u = np.union1d(a, b)
    check(out[8], np.concatenate([u, np.full(8 - u.size, u.min())]))
    d = np.setdiff1d(a, b)
    check(out[9], np.concatenate([d, np.zeros(5 - d.size)]))
    i = np.intersect1d(a, b)
    check(out[10], np.concatenate([i, np.full(3 - i.size, -1)]))
    e = np.extract(cond, a)
    check(out[11], np.concatenate([e, np.full(4 - e.size, -9)]))
    check(out[12], np.compress(cond, a))
    check(out[13], np.choose(np.clip(a, 0, 1), [a, b]))
    check(out[14], np.unwrap(c), rtol=1e-5)
    check(out[15], np.kaiser(6, c[0]), rtol=1e-5)
    vals, counts = np.unique_counts(a)
    check(out[16].values, vals)
    check(out[16].counts, counts)
    want = X35[:, :3].copy()
    np.fill_diagonal(want, 0.0)
    check(out[17], want)
    want = X35.copy()
    want[np.arange(3), X35.argmax(1)] = -1.0
    check(out[18], want)
    check(out[19], np.piecewise(c, [c < 1.0, c > 3.0], [lambda v: v * 2, 7.0, lambda v: -v]))


def test_traced_sizes_need_size():
    with pytest.raises(ConcretizationTypeError):
        pyree.jit(lambda a: jnp.setdiff1d(a, a[:2]))(jnp.arange(4))
    with pytest.raises(ConcretizationTypeError):
        pyree.jit(lambda a: jnp.compress(a > 1, a))(jnp.arange(4))
    with pytest.raises(ConcretizationTypeError, match="mode='raise'"):
        pyree.jit(lambda a: jnp.choose(a, [a, a]))(jnp.arange(2))
    with pytest.raises(ConcretizationTypeError):
        pyree.jit(jnp.trim_zeros)(jnp.arange(4))


def test_grads():
    x = X35.astype(np.float32)

    def numeric(f, v, eps=1e-3):
        v = np.asarray(v, np.float64)
        g = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            up, dn = v.copy(), v.copy()
            up[idx] += eps
            dn[idx] -= eps
            g[idx] = (f(up) - f(dn)) / (2 * eps)
        return g

    g = pyree.grad(lambda v: jnp.sum(jnp.cov(v) * jnp.arange(9.0).reshape(3, 3)))(x)
    check(g, numeric(lambda v: np.sum(np.cov(v) * np.arange(9.0).reshape(3, 3)), x),
          rtol=1e-2, atol=1e-3)
    y = np.array([1.0, 2.0, 4.0, 3.0], np.float32)
    g = pyree.grad(lambda v: jnp.trapezoid(v * v, dx=0.5))(y)
    check(g, numeric(lambda v: np.trapezoid(v * v, dx=0.5), y), rtol=1e-3)
    pw = lambda v: jnp.sum(jnp.piecewise(v, [v < 2.0], [lambda t: t ** 2, lambda t: 3 * t]))
    check(pyree.grad(pw)(y), np.where(y < 2.0, 2 * y, 3.0))
    vec = jnp.vectorize(lambda a, b: jnp.sin(a) * b)
    ga = pyree.grad(lambda a: jnp.sum(vec(a, np.float32(2.0))))(y)
    check(ga, 2 * np.cos(y), rtol=1e-5)
