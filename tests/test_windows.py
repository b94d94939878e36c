"""lax.reduce_window (max/avg/min pooling, dilations, general computations) and the
cumulative reductions (lax.cumsum/cumprod/cummax/cummin/cumlogsumexp, jnp.cumsum, cumprod,
nancumsum, nancumprod, cumulative_sum, cumulative_prod) against NumPy loops and NumPy itself;
derivatives against finite differences (check_grads); vmap against per-example results.
Eagerly and under jit; the jit checks of many cases share one program.
"""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree.test_util import check_grads

RNG = np.random.RandomState(1)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.fixture(params=["eager", "jit"])
def run(request):
    """``run(f, *args)``: ``f(*args)`` as is, or through ``pyree.jit``."""
    if request.param == "eager":
        return lambda f, *args: f(*args)
    return lambda f, *args: pyree.jit(f)(*args)


# -- reduce_window ---------------------------------------------------------------------------------

def reduce_window_ref(x, init, ufunc, window, strides, pads, base=None, wdil=None):
    """Each output element reduced by hand from its window of the base-dilated, padded input
    (holes and padding hold ``init``; negative padding crops)."""
    ndim = x.ndim
    base = base or (1,) * ndim
    wdil = wdil or (1,) * ndim
    x = np.asarray(x)
    dil_shape = tuple((n - 1) * b + 1 if n else 0 for n, b in zip(x.shape, base))
    xd = np.full(dil_shape, init, x.dtype)
    xd[tuple(slice(None, None, b) for b in base)] = x
    for ax, (lo, hi) in enumerate(pads):
        def pad_block(n):
            shape = list(xd.shape)
            shape[ax] = n
            return np.full(shape, init, x.dtype)
        xd = np.concatenate([pad_block(lo), xd], ax) if lo >= 0 else \
            np.take(xd, range(-lo, xd.shape[ax]), axis=ax)
        xd = np.concatenate([xd, pad_block(hi)], ax) if hi >= 0 else \
            np.take(xd, range(0, xd.shape[ax] + hi), axis=ax)
    out_shape = []
    for p, k, s, d in zip(xd.shape, window, strides, wdil):
        kd = (k - 1) * d + 1
        out_shape.append((p - kd) // s + 1 if p >= kd else 0)
    out = np.empty(out_shape, x.dtype)
    for idx in np.ndindex(*out_shape):
        sl = tuple(slice(i * s, i * s + (k - 1) * d + 1, d)
                   for i, s, k, d in zip(idx, strides, window, wdil))
        out[idx] = ufunc.reduce(xd[sl].ravel(), initial=init)
    return out


def same_pads(shape, window, strides, wdil=None):
    pads = []
    for i, (n, k, s) in enumerate(zip(shape, window, strides)):
        kd = (k - 1) * (wdil[i] if wdil else 1) + 1
        total = max((-(-n // s) - 1) * s + kd - n, 0)
        pads.append((total // 2, total - total // 2))
    return pads


X4 = randn(2, 7, 6, 3)   # NHWC
X1 = randn(11)
XI = RNG.randint(-50, 50, size=(5, 8)).astype(np.int32)

# name: (operand, init, lax computation, NumPy ufunc, window, strides, padding, base, wdil)
POOLS = {
    "max_2x2_valid": (X4, -np.inf, lax.max, np.maximum, (1, 2, 2, 1), (1, 2, 2, 1), "VALID",
                      None, None),
    "max_3x3_same": (X4, -np.inf, lax.max, np.maximum, (1, 3, 3, 1), (1, 2, 2, 1), "SAME",
                     None, None),
    "sum_explicit": (X4, 0.0, lax.add, np.add, (1, 3, 2, 1), (1, 1, 2, 1),
                     [(0, 0), (1, 2), (0, 1), (0, 0)], None, None),
    "min_dilated": (X4, np.inf, lax.min, np.minimum, (1, 2, 3, 1), (1, 1, 2, 1),
                    [(0, 0), (1, -1), (0, 2), (0, 0)], (1, 2, 1, 1), (1, 1, 2, 1)),
    "prod_1d": (X1, 1.0, lax.mul, np.multiply, (3,), (2,), "SAME", None, (2,)),
    "int_max": (XI, np.iinfo(np.int32).min, lax.max, np.maximum, (2, 3), (1, 2), "VALID",
                None, None),
    "init_not_identity": (X1, 0.5, lax.max, np.maximum, (4,), (3,), [(2, 0)], None, None),
    "python_callable": (X1, 0.0, lambda a, b: jnp.maximum(a, b) + 0 * b, np.maximum, (2,),
                        (1,), "VALID", None, None),
}


def _pool_ref(name):
    x, init, _, ufunc, window, strides, padding, base, wdil = POOLS[name]
    if isinstance(padding, str):
        dilated = tuple((n - 1) * b + 1 for n, b in zip(x.shape, base or (1,) * x.ndim))
        pads = [(0, 0)] * x.ndim if padding == "VALID" else same_pads(dilated if base else
                                                                      x.shape, window, strides,
                                                                      wdil)
    else:
        pads = padding
    if name == "python_callable":
        init = 0.0
    return reduce_window_ref(x, x.dtype.type(init), ufunc, window, strides, pads, base, wdil)


def _pool(name, x):
    _, init, computation, _, window, strides, padding, base, wdil = POOLS[name]
    return lax.reduce_window(x, init, computation, window, strides, padding, base, wdil)


EAGER_POOLS = ["max_3x3_same", "min_dilated", "python_callable"]


def test_reduce_window_matches_reference(run, request):
    # Eagerly every primitive compiles a kernel per dtype and rank: a subset there.
    names = list(POOLS) if "jit" in request.node.name else EAGER_POOLS
    got = run(lambda *xs: [_pool(n, x) for n, x in zip(names, xs)],
              *[POOLS[n][0] for n in names])
    for name, g in zip(names, got):
        want = _pool_ref(name)
        assert g.dtype == want.dtype and g.shape == want.shape, (name, g.shape, want.shape)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_avg_pool_and_pytree_operands():
    x = randn(1, 6, 6, 2)

    @pyree.jit
    def f(x):
        total = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        both = lax.reduce_window((x, -x), (0.0, 0.0),
                                 lambda a, b: (lax.add(a[0], b[0]), lax.max(a[1], b[1])),
                                 (1, 3, 1, 1), (1, 1, 1, 1), "VALID")
        return total / 4.0, both

    avg, (sums, maxes) = f(x)
    want = x.reshape(1, 3, 2, 3, 2, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(np.asarray(avg), want, rtol=1e-5, atol=1e-6)
    ref = lambda ufunc, v, init: reduce_window_ref(v, np.float32(init), ufunc,  # noqa: E731
                                                   (1, 3, 1, 1), (1,) * 4, [(0, 0)] * 4)
    np.testing.assert_allclose(np.asarray(sums), ref(np.add, x, 0.0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(maxes), ref(np.maximum, -x, 0.0), rtol=1e-5)


def test_reduce_window_grads_and_vmap():
    x = (RNG.permutation(2 * 6 * 5 * 2).reshape(2, 6, 5, 2) / 10.0).astype(np.float32)  # no ties

    def pools(x):
        return (lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME"),
                lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 2, 1),
                                  [(0, 0), (1, 0), (0, 1), (0, 0)], None, (1, 2, 1, 1)) / 4.0)

    check_grads(pyree.jit(pools), (x,), order=1, atol=2e-2, rtol=2e-2)
    # max pooling's gradient routes each cotangent to the window's largest element.
    ct = randn(*pools(x)[0].shape)
    got = pyree.jit(pyree.grad(lambda x: jnp.sum(pools(x)[0] * ct)))(x)
    want = np.zeros(x.shape, np.float64)
    pads = same_pads(x.shape, (1, 3, 3, 1), (1, 2, 2, 1))
    padded = np.pad(x, pads, constant_values=-np.inf)
    for n, i, j, c in np.ndindex(*ct.shape):
        window = padded[n, 2 * i:2 * i + 3, 2 * j:2 * j + 3, c]
        a, b = np.unravel_index(np.argmax(window), window.shape)
        want[n, 2 * i + a - pads[1][0], 2 * j + b - pads[2][0], c] += ct[n, i, j, c]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
    xs = randn(3, 2, 6, 5, 2)
    batched = pyree.jit(pyree.vmap(pools, in_axes=1, out_axes=1))(np.moveaxis(xs, 0, 1))
    for k in range(2):
        want = np.stack([np.asarray(pools(x)[k]) for x in xs], axis=1)
        np.testing.assert_allclose(np.asarray(batched[k]), want, rtol=1e-5, atol=1e-6)


def test_reduce_window_errors():
    x = jnp.ones((4, 4))
    with pytest.raises(TypeError, match="window_dimensions"):
        lax.reduce_window(x, 0.0, lax.add, (2,), (1,), "VALID")
    with pytest.raises(ValueError, match="padding"):
        lax.reduce_window(x, 0.0, lax.add, (2, 2), (1, 1), "FULL")
    with pytest.raises(TypeError, match="callable"):
        lax.reduce_window(x, 0.0, "add", (2, 2), (1, 1), "VALID")
    with pytest.raises(ValueError, match="tree structure"):
        lax.reduce_window((x, x), 0.0, lax.add, (2, 2), (1, 1), "VALID")


# -- cumulative reductions -------------------------------------------------------------------------

NP_CUMULATIVE = {
    "cumsum": np.cumsum, "cumprod": np.cumprod,
    "cummax": lambda x, axis: np.maximum.accumulate(x, axis=axis),
    "cummin": lambda x, axis: np.minimum.accumulate(x, axis=axis),
    "cumlogsumexp": lambda x, axis: np.logaddexp.accumulate(x, axis=axis),
}


def np_cumulative(name, x, axis, reverse):
    x = np.asarray(x)
    if reverse:
        x = np.flip(x, axis)
    out = NP_CUMULATIVE[name](x, axis=axis).astype(x.dtype)
    return np.flip(out, axis) if reverse else out


def test_lax_cumulative_matches_numpy(run, request):
    xf = (randn(5, 9) * 0.8).astype(np.float32)
    xi = RNG.randint(-3, 4, size=(4, 6)).astype(np.int32)
    empty = np.zeros((0, 3), np.float32)
    inf = np.array([-np.inf, -np.inf, 1.0, 1.0, np.inf, 2.0], np.float32)
    cases = []
    for name in NP_CUMULATIVE:
        for axis, reverse in ((0, False), (1, True), (-1, False)):
            cases.append((name, "f", axis, reverse))
            if name != "cumlogsumexp":
                cases.append((name, "i", axis, reverse))
        cases.append((name, "empty", 0, True))
    cases += [("cumlogsumexp", "inf", 0, False), ("cummax", "inf", 0, True)]
    if "eager" in request.node.name:  # kernels compile per dtype and rank: a subset eagerly
        cases = [c for c in cases if c[1] in ("f", "inf") and c[2] != -1]
    arrays = {"f": xf, "i": xi, "empty": empty, "inf": inf}

    def f(xf, xi, empty, inf):
        named = {"f": xf, "i": xi, "empty": empty, "inf": inf}
        return [getattr(lax, n)(named[k], axis, reverse) for n, k, axis, reverse in cases]

    got = run(f, xf, xi, empty, inf)
    for (name, key, axis, reverse), g in zip(cases, got):
        want = np_cumulative(name, arrays[key], axis, reverse)
        assert g.dtype == want.dtype and g.shape == want.shape, (name, key)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} {key} axis={axis} reverse={reverse}")


def test_long_axis_is_accurate():
    x = randn(3000)
    got = pyree.jit(lambda x: (lax.cumsum(x), lax.cummax(x, reverse=True)))(x)
    np.testing.assert_allclose(np.asarray(got[0]), np.cumsum(x.astype(np.float64)), rtol=1e-4,
                               atol=1e-3)
    np.testing.assert_array_equal(np.asarray(got[1]), np.maximum.accumulate(x[::-1])[::-1])


def test_cumulative_grads_and_vmap():
    x = (RNG.permutation(24).reshape(4, 6) / 12.0 + 0.5).astype(np.float32)  # no ties

    def ops(x):
        return (lax.cumsum(x, 1), lax.cumprod(x, 0, reverse=True), lax.cummax(x, 1),
                lax.cummin(x, 0), lax.cumlogsumexp(x, 1, reverse=True),
                jnp.cumsum(x), jnp.nancumprod(x, axis=1))

    check_grads(pyree.jit(ops), (x,), order=1, atol=2e-2, rtol=2e-2)
    xs = randn(4, 3, 5)
    got = pyree.jit(pyree.vmap(lambda v: (lax.cumsum(v, 0, reverse=True), jnp.cumprod(v)),
                               in_axes=1))(xs)
    for b in range(3):
        np.testing.assert_allclose(np.asarray(got[0][b]), np_cumulative("cumsum", xs[:, b], 0,
                                                                        True), rtol=1e-5,
                                   atol=1e-6)  # sums of random signs cancel to near 0
        np.testing.assert_allclose(np.asarray(got[1][b]), np.cumprod(xs[:, b]), rtol=1e-5,
                                   atol=1e-6)


def test_jnp_cumulative_dtypes_and_axes(run, request):
    a = np.arange(1, 7, dtype=np.int32).reshape(2, 3)
    i8 = np.array([100, 100, -50], np.int8)
    b = np.array([True, False, True])
    nan = np.array([[1.0, np.nan], [np.nan, 2.0]], np.float32)

    ops = [lambda a, i8, b, nan: jnp.cumsum(a),
           lambda a, i8, b, nan: jnp.cumsum(a, axis=0),
           lambda a, i8, b, nan: jnp.cumprod(a, axis=-1),
           lambda a, i8, b, nan: jnp.cumsum(i8),
           lambda a, i8, b, nan: jnp.cumsum(b),
           lambda a, i8, b, nan: jnp.cumsum(a, dtype=jnp.float32),
           lambda a, i8, b, nan: jnp.cumsum(np.array([1, -1, 0, 2], np.int32), dtype=bool),
           lambda a, i8, b, nan: jnp.nancumsum(nan, axis=0),
           lambda a, i8, b, nan: jnp.nancumprod(nan),
           lambda a, i8, b, nan: jnp.cumsum(nan, axis=1),
           lambda a, i8, b, nan: jnp.cumulative_sum(i8, include_initial=True),
           lambda a, i8, b, nan: jnp.cumulative_prod(a, axis=1, include_initial=True),
           lambda a, i8, b, nan: jnp.cumsum(a[0, 0])]
    # Eagerly each dtype and rank compiles its own kernels: a subset there.
    keep = range(len(ops)) if "jit" in request.node.name else (0, 4, 7, 10)
    got = run(lambda *args: [ops[i](*args) for i in keep], a, i8, b, nan)
    i32 = lambda v: v.astype(np.int32)  # noqa: E731  (NumPy widens to int64, JAX does not)
    want = [i32(np.cumsum(a)), i32(np.cumsum(a, axis=0)), i32(np.cumprod(a, axis=-1)),
            np.cumsum(i8, dtype=np.int8),                 # JAX keeps int8 (NumPy widens)
            np.cumsum(b).astype(np.int32), np.cumsum(a).astype(np.float32),
            np.array([True, True, True, True]),
            np.nancumsum(nan, axis=0), np.nancumprod(nan), np.cumsum(nan, axis=1),
            np.array([0, 100, 200, 150], np.int32),       # cumulative_sum widens small ints
            i32(np.concatenate([np.ones((2, 1), np.int32), np.cumprod(a, axis=1)], 1)),
            np.array([1], np.int32)]
    want = [want[i] for i in keep]
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, (i, g.dtype, w.dtype, g.shape, w.shape)
        assert not g.weak_type, i
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6, err_msg=str(i))
    assert jnp.cumsum(2.0).dtype == np.float32 and not jnp.cumsum(2.0).weak_type


def test_cumulative_errors():
    with pytest.raises(TypeError, match="bool"):
        lax.cumsum(jnp.array([True, False]))
    with pytest.raises(ValueError, match="0-d"):
        lax.cummax(jnp.float32(1.0))
    with pytest.raises(np.exceptions.AxisError):
        jnp.cumsum(jnp.ones((2, 3)), axis=2)
    with pytest.raises(ValueError, match="axis"):
        jnp.cumulative_sum(jnp.ones((2, 3)))
    with pytest.raises(NotImplementedError, match="out"):
        jnp.cumprod(jnp.ones(3), out=jnp.ones(3))
    with pytest.raises(TypeError):
        jnp.cumsum([1, 2, 3])
