"""``pyree.scipy.signal`` (convolve, correlate, convolve2d, correlate2d, fftconvolve) checked
against SciPy: every mode over odd, even, swapped and mixed sizes in 1 to 3 dimensions,
complex inputs, correlate2d's own conventions and every 2-D boundary; dtypes as JAX's
(integers and booleans convolve in float32); jit, vmap and derivatives against finite
differences in float64; errors.

Each new (function, shape) pair is a new compiled program, so the checks are grouped: most run
as one jitted program per test.
"""
import numpy as np
import pytest
import scipy.signal as ss

import pyree
import pyree.numpy as jnp
from pyree.scipy import signal as S

MODES = ("full", "same", "valid")


def close(got, want, rtol=1e-4, atol=1e-4):
    assert isinstance(got, pyree.Array), type(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


def valid_ok(a, b):
    """SciPy's 'valid' needs one input at least as large as the other in every dimension."""
    return all(x >= y for x, y in zip(a.shape, b.shape)) or \
        all(x <= y for x, y in zip(a.shape, b.shape))


def cases(pairs):
    """(pair index, mode) of each check: 'valid' only where it is defined."""
    return [(i, mode) for i, (a, b) in enumerate(pairs) for mode in MODES
            if mode != "valid" or valid_ok(a, b)]


def test_nd_against_scipy():
    """convolve, correlate and fftconvolve: 1-D to 3-D, in2 smaller, larger (valid swaps),
    equal and of mixed sizes, odd and even (the 'same' centre)."""
    rng = np.random.RandomState(0)
    shapes = [((7,), (3,)), ((6,), (4,)), ((3,), (8,)), ((5,), (5,)), ((1,), (4,)),
              ((5, 6), (2, 3)), ((3, 4), (5, 6)), ((4, 3), (2, 5)), ((3, 4, 2), (2, 3, 2))]
    pairs = [(rng.randn(*a).astype(np.float32), rng.randn(*b).astype(np.float32))
             for a, b in shapes]
    todo = cases(pairs)

    def f(pairs):
        return [(S.convolve(*pairs[i], mode), S.correlate(*pairs[i], mode),
                 S.fftconvolve(*pairs[i], mode)) for i, mode in todo]

    for (i, mode), got in zip(todo, pyree.jit(f)(pairs)):
        a, b = (x.astype(np.float64) for x in pairs[i])
        for g, fn in zip(got, (ss.convolve, ss.correlate, ss.fftconvolve)):
            assert g.dtype == np.float32
            close(g, fn(a, b, mode))
    # method= picks nothing (all direct), as in JAX; the 1-D case equals jnp.convolve's.
    a, b = pairs[0]
    close(S.convolve(a, b, "same", method="fft"), ss.convolve(a, b, "same"))
    close(S.correlate(a, b, "valid", method="direct"), np.correlate(a, b, "valid"))


def test_2d_against_scipy():
    """convolve2d and correlate2d with every boundary ('fill' with zero and other values,
    'wrap', 'symm'), kernels smaller, larger and mixed; correlate2d's 'same' centre."""
    rng = np.random.RandomState(1)
    shapes = [((5, 6), (3, 2)), ((4, 4), (4, 4)), ((2, 3), (4, 5)), ((3, 5), (4, 2))]
    pairs = [(rng.randn(*a).astype(np.float32), rng.randn(*b).astype(np.float32))
             for a, b in shapes]
    bounds = [("fill", 0), ("fill", 2.5), ("wrap", 0), ("symm", 0)]
    todo = [(i, mode, bd) for i, mode in cases(pairs) for bd in bounds
            if mode != "valid" or bd == bounds[0]]      # 'valid' never reads past the edges

    def f(pairs):
        return [(S.convolve2d(*pairs[i], mode, boundary=bd, fillvalue=v),
                 S.correlate2d(*pairs[i], mode, boundary=bd, fillvalue=v))
                for i, mode, (bd, v) in todo]

    for (i, mode, (bd, v)), (conv, corr) in zip(todo, pyree.jit(f)(pairs)):
        a, b = (x.astype(np.float64) for x in pairs[i])
        close(conv, ss.convolve2d(a, b, mode, boundary=bd, fillvalue=v))
        close(corr, ss.correlate2d(a, b, mode, boundary=bd, fillvalue=v))
    # SciPy's aliases; a traced fill value.
    a, b = pairs[0]
    got = pyree.jit(lambda a, b, v: (S.convolve2d(a, b, "same", "circular"),
                                     S.correlate2d(a, b, boundary="symmetric"),
                                     S.convolve2d(a, b, boundary="pad", fillvalue=v)))(a, b, 1.5)
    close(got[0], ss.convolve2d(a, b, "same", "wrap"))
    close(got[1], ss.correlate2d(a, b, boundary="symm"))
    close(got[2], ss.convolve2d(a, b, fillvalue=1.5))


def test_complex_dtypes_and_special_shapes():
    rng = np.random.RandomState(2)

    def c(*shape):
        return (rng.randn(*shape) + 1j * rng.randn(*shape)).astype(np.complex64)

    a1, b1, a2, b2 = c(6), c(3), c(3, 4), c(4, 5)
    x = rng.randn(2, 1, 6).astype(np.float32)
    k = rng.randn(1, 3, 3).astype(np.float32)

    def f(a1, b1, a2, b2, x, k):
        return dict(
            complex=[(S.convolve(a1, b1, m), S.correlate(a1, b1, m), S.correlate(b1, a1, m),
                      S.correlate2d(a2, b2, m), S.correlate2d(b2, a2, m),
                      S.convolve2d(a2, b2, m)) for m in MODES],
            mixed=S.correlate(a1, x[0, 0]),
            ints=(S.convolve(jnp.arange(4), jnp.array([1, 1])),
                  S.correlate2d(jnp.ones((2, 2), jnp.int8), jnp.ones((2, 2), jnp.int8)),
                  S.convolve(jnp.array([True, False]), jnp.array([True, True]))),
            scalars=(S.convolve(jnp.float32(2.0), jnp.float32(3.0)),
                     S.correlate(jnp.complex64(1 + 2j), jnp.complex64(1j))),
            # Convolved along the last axis only, elementwise (broadcast) along the others.
            axes=[S.fftconvolve(x, k, m, axes=-1) for m in MODES]
            + [S.fftconvolve(k, x, "valid", axes=[2]), S.fftconvolve(x, k, axes=(1, 2))])

    out = pyree.jit(f)(a1, b1, a2, b2, x, k)
    for m, got in zip(MODES, out["complex"]):
        want = (ss.convolve(a1, b1, m), ss.correlate(a1, b1, m), ss.correlate(b1, a1, m),
                ss.correlate2d(a2, b2, m), ss.correlate2d(b2, a2, m), ss.convolve2d(a2, b2, m))
        for g, w in zip(got, want):
            assert g.dtype == np.complex64
            close(g, w)
    close(out["mixed"], ss.correlate(a1, x[0, 0]))
    conv, corr, boolean = out["ints"]
    # Integers and booleans convolve in float32 (JAX's dtypes; SciPy keeps integers).
    assert conv.dtype == corr.dtype == boolean.dtype == np.float32
    close(conv, [0, 1, 3, 5, 3])
    close(corr, [[1, 2, 1], [2, 4, 2], [1, 2, 1]])
    close(boolean, [1, 1, 0])
    close(out["scalars"][0], 6.0)
    close(out["scalars"][1], (1 + 2j) * -1j)
    want = [ss.fftconvolve(x, k, m, axes=-1) for m in MODES] + \
        [ss.fftconvolve(k, x, "valid", axes=[2]), ss.fftconvolve(x, k, axes=(1, 2))]
    for got, w in zip(out["axes"], want):
        close(got, w)       # 'same' keeps in1's size along the broadcast axis too, as SciPy


def test_eager_and_vmap():
    rng = np.random.RandomState(3)
    signals = rng.randn(4, 9).astype(np.float32)
    kernels = rng.randn(4, 3).astype(np.float32)
    image = rng.randn(6, 5).astype(np.float32)
    # Eagerly: one compiled program per call.
    close(S.convolve(signals[0], kernels[0], "same"), ss.convolve(signals[0], kernels[0], "same"))
    close(S.convolve2d(image, kernels[:2, :2], boundary="symm"),
          ss.convolve2d(image, kernels[:2, :2], boundary="symm"))
    close(S.correlate(signals[0], kernels[0]), ss.correlate(signals[0], kernels[0]))

    def f(signals, kernels, image):
        return (pyree.vmap(lambda s: S.convolve(s, kernels[0], "same"))(signals),
                pyree.vmap(S.correlate)(signals, kernels),
                pyree.vmap(lambda k: S.convolve2d(image, k[None], "valid"))(kernels))

    same, corr, conv2 = pyree.jit(f)(signals, kernels, image)
    close(same, np.stack([ss.convolve(s, kernels[0], "same") for s in signals]))
    close(corr, np.stack([ss.correlate(s, k) for s, k in zip(signals, kernels)]))
    close(conv2, np.stack([ss.convolve2d(image, k[None], "valid") for k in kernels]))


def test_grad(x64):
    """Reverse-mode derivatives of a loss through each function, against central
    differences along a random direction (both inputs differentiated)."""
    rng = np.random.RandomState(4)
    a, b = rng.randn(7), rng.randn(4)
    img, ker = rng.randn(5, 4), rng.randn(3, 3)
    w1, w2 = rng.randn(7), rng.randn(5, 4)

    def loss(a, b, img, ker):
        return (jnp.sum(S.convolve(a, b, "same") * w1) + jnp.sum(S.correlate(b, a) ** 2)
                + jnp.sum(S.convolve2d(img, ker, "same", boundary="symm") * w2)
                + jnp.sum(jnp.sin(S.correlate2d(img, ker, "valid")))
                + jnp.sum(S.fftconvolve(img, ker[:1], "full", axes=1) ** 2))

    args = (a, b, img, ker)
    grads = pyree.jit(pyree.grad(loss, argnums=(0, 1, 2, 3)))(*args)
    f = pyree.jit(loss)
    eps = 1e-6
    dirs = [rng.randn(*np.shape(x)) for x in args]
    numeric = (float(f(*[x + eps * d for x, d in zip(args, dirs)]))
               - float(f(*[x - eps * d for x, d in zip(args, dirs)]))) / (2 * eps)
    analytic = sum(np.vdot(np.asarray(g), d) for g, d in zip(grads, dirs))
    assert grads[0].dtype == np.float64
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6)


def test_errors():
    one, two = np.ones(3, np.float32), np.ones((3, 3), np.float32)
    with pytest.raises(ValueError, match=r"convolve: in1 and in2 must have the same number"):
        S.convolve(one, two)
    with pytest.raises(ValueError, match=r"correlate: mode must be one of"):
        S.correlate(one, one, mode="circular")
    with pytest.raises(ValueError, match=r"convolve: method must be"):
        S.convolve(one, one, method="overlap-add")
    with pytest.raises(ValueError, match=r"convolve2d: inputs must be 2-dimensional"):
        S.convolve2d(one, one)
    with pytest.raises(ValueError, match=r"correlate2d: boundary must be one of"):
        S.correlate2d(two, two, boundary="reflect")
    with pytest.raises(ValueError, match=r"'valid' mode one input must be at least as large"):
        S.convolve(np.ones((3, 1)), np.ones((1, 3)), "valid")
    with pytest.raises(ValueError, match=r"fftconvolve: empty arrays"):
        S.fftconvolve(np.ones(0), one)
    with pytest.raises(ValueError, match=r"fftconvolve: the axes not convolved"):
        S.fftconvolve(np.ones((2, 3)), two, axes=1)
    with pytest.raises(ValueError, match=r"convolve2d: fillvalue must be a scalar"):
        S.convolve2d(two, two, fillvalue=np.ones(2))
    with pytest.raises(TypeError, match=r"convolve requires ndarray"):
        S.convolve([1.0, 2.0], one)
