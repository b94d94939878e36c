"""pyree.example_libraries.stax and .optimizers: layer outputs against NumPy references (dense,
direct convolution loops, pooling loops, batch norm), init_fun's output shapes (with -1 batch
dims) against the arrays apply_fun really makes, known parameters from JAX 0.10.2 (pasted:
JAX is not needed), each optimizer's first updates against its recurrence in NumPy, schedules
against their closed forms; then training: an MLP reaching high accuracy, a small CNN whose
jitted gradient matches eager and finite differences, and scaled-down versions of JAX's
classic examples (mnist_vae, resnet50, differentially_private_sgd) with ``jax`` = pyree."""
import functools
import itertools

import numpy as np
import pytest

import pyree as jax
import pyree.numpy as jnp
from pyree import lax, random
from pyree.example_libraries import optimizers, stax
from pyree.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten

KEY = random.PRNGKey(0)


def _np(tree):
    return tree_map(lambda x: np.asarray(x, np.float64), tree)


def _rand(*shape, seed=0):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


def _same_pads(n, k, s):
    """'SAME' padding in one axis: output ceil(n / s), the odd element padded high."""
    out = -(-n // s)
    total = max((out - 1) * s + k - n, 0)
    return total // 2, total - total // 2


def _concrete(shape, batch):
    return tuple(batch if d == -1 else d for d in shape)


# ---- NumPy references ----------------------------------------------------------------------------

def np_conv_nhwc(x, w, strides, pads):
    """Direct cross-correlation of NHWC ``x`` with an HWIO kernel."""
    x = np.pad(np.asarray(x, np.float64), ((0, 0), pads[0], pads[1], (0, 0)))
    w = np.asarray(w, np.float64)
    (sh, sw), (kh, kw) = strides, w.shape[:2]
    oh, ow = (x.shape[1] - kh) // sh + 1, (x.shape[2] - kw) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]
            out[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, w)
    return out


def np_pool_nhwc(x, window, strides, pads, kind):
    """Max / sum / average pooling of NHWC ``x``; averages count only real elements."""
    x = np.asarray(x, np.float64)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), pads[0], pads[1], (0, 0)), constant_values=fill)
    real = np.pad(np.ones(x.shape[1:3]), (pads[0], pads[1]))
    (sh, sw), (kh, kw) = strides, window
    oh, ow = (xp.shape[1] - kh) // sh + 1, (xp.shape[2] - kw) // sw + 1
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * sh:i * sh + kh, j * sw:j * sw + kw, :]
            if kind == "max":
                out[:, i, j] = patch.max(axis=(1, 2))
            else:
                out[:, i, j] = patch.sum(axis=(1, 2))
                if kind == "avg":
                    out[:, i, j] /= real[i * sh:i * sh + kh, j * sw:j * sw + kw].sum()
    return out


def np_conv_transpose_valid_1d(x, w, stride):
    """'VALID' transposed convolution of NHC ``x`` with an HIO kernel: each input element
    scatters its row times the (flipped) kernel at ``i * stride``."""
    n, length, _ = x.shape
    k = w.shape[0]
    out = np.zeros((n, (length - 1) * stride + k, w.shape[2]))
    for i in range(length):
        for j in range(k):
            out[:, i * stride + j, :] += x[:, i, :] @ w[k - 1 - j]
    return out


# ---- known answers -------------------------------------------------------------------------------
# jax.example_libraries.stax.serial(Dense(3), Relu, Dense(2))[0](jax.random.PRNGKey(0), (-1, 4))
JAX_MLP_PARAMS = [
    [0.11530236154794693, -0.44237709045410156, -0.7077285051345825, -0.23753589391708374,
     -0.5729313492774963, 0.16600154340267181, 0.5668796300888062, 0.28791844844818115,
     -0.42734357714653015, 0.6447167992591858, -0.005555788055062294, 0.26014530658721924],
    [-0.013356249779462814, -0.0035256301052868366, 0.00309704034589231],
    [0.025407645851373672, -0.9285575747489929, -0.2233559489250183, 0.7025297284126282,
     0.17655688524246216, 0.6585864424705505],
    [-0.000604900240432471, -0.02217775583267212]]
# stax.Conv(2, (2, 2))[0](jax.random.key(5), (-1, 4, 4, 3)): first six weights, the bias
JAX_CONV_W_HEAD = [0.1421271562576294, 0.38507434725761414, -0.226582869887352,
                   0.4134218692779541, 0.20743653178215027, 0.009060456417500973]
JAX_CONV_B = [-1.3798700138067943e-06, -7.414402602989867e-07]


def test_init_matches_jax_known_answers():
    out_shape, params = stax.serial(stax.Dense(3), stax.Relu, stax.Dense(2))[0](KEY, (-1, 4))
    assert out_shape == (-1, 2)
    assert [np.shape(p) for p in tree_leaves(params)] == [(4, 3), (3,), (3, 2), (2,)]
    assert params[1] == () and len(params) == 3
    for got, want in zip(tree_leaves(params), JAX_MLP_PARAMS):
        np.testing.assert_allclose(np.ravel(got), want, rtol=2e-6, atol=1e-9)
    out_shape, (W, b) = stax.Conv(2, (2, 2))[0](random.key(5), (-1, 4, 4, 3))   # a typed key
    assert out_shape == (-1, 3, 3, 2) and W.shape == (2, 2, 3, 2) and b.shape == (1, 1, 1, 2)
    np.testing.assert_allclose(np.ravel(W)[:6], JAX_CONV_W_HEAD, rtol=2e-6)
    np.testing.assert_allclose(np.ravel(b), JAX_CONV_B, rtol=2e-6)


# ---- layers vs NumPy -----------------------------------------------------------------------------

def test_dense():
    init_fun, apply_fun = stax.Dense(5)
    out_shape, (W, b) = init_fun(KEY, (-1, 3, 7))
    assert out_shape == (-1, 3, 5) and W.shape == (7, 5) and b.shape == (5,)
    # glorot_normal weights, normal(1e-2) biases: the defaults' scales
    assert 0.05 < np.std(np.asarray(W)) < 0.8 and np.max(np.abs(np.asarray(b))) < 0.05
    x = _rand(2, 3, 7)
    W, b = _rand(7, 5, seed=1), _rand(5, seed=2)
    y = apply_fun((jnp.asarray(W), jnp.asarray(b)), x)
    assert y.shape == _concrete(out_shape, 2)
    np.testing.assert_allclose(y, x.astype(np.float64) @ W + b, rtol=1e-5, atol=1e-5)
    ones_init = stax.Dense(2, W_init=jax.nn.initializers.ones, b_init=jax.nn.initializers.zeros)
    _, (W1, b1) = ones_init[0](KEY, (-1, 3))
    np.testing.assert_array_equal(W1, np.ones((3, 2))) and np.testing.assert_array_equal(b1, 0)


@pytest.mark.parametrize("strides,padding", [((1, 1), "VALID"), ((2, 1), "SAME"),
                                             ((2, 2), [(1, 0), (2, 1)])])
def test_conv_matches_direct_convolution(strides, padding):
    init_fun, apply_fun = stax.Conv(4, (3, 2), strides=strides, padding=padding)
    out_shape, (W, b) = init_fun(KEY, (-1, 9, 8, 3))
    assert W.shape == (3, 2, 3, 4) and b.shape == (1, 1, 1, 4)
    x, b = _rand(2, 9, 8, 3), _rand(1, 1, 1, 4, seed=3)
    if padding == "VALID":
        pads = [(0, 0), (0, 0)]
    elif padding == "SAME":
        pads = [_same_pads(9, 3, strides[0]), _same_pads(8, 2, strides[1])]
    else:
        pads = padding
    y = apply_fun((W, jnp.asarray(b)), x)
    want = np_conv_nhwc(x, W, strides, pads) + b
    assert y.shape == want.shape == _concrete(out_shape, 2)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)


def test_general_conv_nchw_and_mixed_layouts():
    x = _rand(2, 3, 7, 6)                                               # NCHW
    init_fun, apply_fun = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 5, (3, 2), (1, 2), "SAME")
    out_shape, (W, b) = init_fun(KEY, (-1, 3, 7, 6))
    assert W.shape == (5, 3, 3, 2) and b.shape == (1, 5, 1, 1)
    y = apply_fun((W, b), x)
    want = np_conv_nhwc(x.transpose(0, 2, 3, 1), np.asarray(W).transpose(2, 3, 1, 0), (1, 2),
                        [_same_pads(7, 3, 1), _same_pads(6, 2, 2)])
    want = want.transpose(0, 3, 1, 2) + np.asarray(b)
    assert y.shape == want.shape == _concrete(out_shape, 2) == (2, 5, 7, 3)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-5)
    # NHWC in, NCHW out, kernel OIHW: shapes follow each layout
    init_fun, apply_fun = stax.GeneralConv(("NHWC", "OIHW", "NCHW"), 4, (3, 3), (2, 2), "VALID")
    out_shape, params = init_fun(KEY, (-1, 7, 6, 3))
    assert out_shape == (-1, 4, 3, 2)
    assert apply_fun(params, _rand(2, 7, 6, 3)).shape == (2, 4, 3, 2)


def test_conv_transpose():
    x = _rand(2, 5, 3)                                                  # NHC
    init_fun, apply_fun = stax.Conv1DTranspose(4, (3,), strides=(2,), padding="VALID")
    out_shape, (W, b) = init_fun(KEY, (-1, 5, 3))
    assert out_shape == (-1, 11, 4) and W.shape == (3, 3, 4) and b.shape == (1, 1, 4)
    y = apply_fun((W, b), x)
    want = np_conv_transpose_valid_1d(x.astype(np.float64), np.asarray(W, np.float64), 2)
    np.testing.assert_allclose(y, want + np.asarray(b), rtol=1e-4, atol=1e-5)
    for layer, in_shape, want_shape in [
            (stax.Conv1DTranspose(4, (3,), strides=(2,), padding="SAME"), (-1, 5, 3), (-1, 10, 4)),
            (stax.ConvTranspose(4, (3, 3), strides=(2, 2), padding="SAME"), (-1, 5, 4, 3),
             (-1, 10, 8, 4)),
            (stax.ConvTranspose(2, (2, 2), strides=(3, 3), padding="VALID"), (-1, 5, 4, 3),
             (-1, 15, 12, 2)),
            (stax.GeneralConvTranspose(("NCHW", "OIHW", "NCHW"), 2, (3, 3), (2, 1), "SAME"),
             (-1, 3, 5, 4), (-1, 2, 10, 4))]:
        out_shape, params = layer[0](KEY, in_shape)
        assert out_shape == want_shape
        assert layer[1](params, jnp.ones(_concrete(in_shape, 2))).shape == _concrete(want_shape, 2)


@pytest.mark.parametrize("kind", ["max", "sum", "avg"])
@pytest.mark.parametrize("window,strides,padding", [((2, 2), (2, 2), "VALID"),
                                                    ((3, 2), (2, 1), "SAME"),
                                                    ((2, 2), None, "VALID")])
def test_pooling(kind, window, strides, padding):
    layer = {"max": stax.MaxPool, "sum": stax.SumPool, "avg": stax.AvgPool}[kind]
    init_fun, apply_fun = layer(window, strides, padding)
    out_shape, params = init_fun(KEY, (-1, 7, 6, 3))
    assert params == ()
    x = _rand(2, 7, 6, 3)
    s = strides or (1, 1)
    pads = [(0, 0), (0, 0)] if padding == "VALID" else \
        [_same_pads(7, window[0], s[0]), _same_pads(6, window[1], s[1])]
    y = apply_fun((), x)
    want = np_pool_nhwc(x, window, s, pads, kind)
    assert y.shape == want.shape == _concrete(out_shape, 2)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_pooling_spec_nchw():
    x = _rand(2, 3, 5, 4)
    init_fun, apply_fun = stax.AvgPool((2, 2), (1, 1), "SAME", spec="NCHW")
    out_shape, _ = init_fun(KEY, (-1, 3, 5, 4))
    y = apply_fun((), x)
    want = np_pool_nhwc(x.transpose(0, 2, 3, 1), (2, 2), (1, 1), [(0, 1), (0, 1)], "avg")
    assert out_shape == (-1, 3, 5, 4)
    np.testing.assert_allclose(y, want.transpose(0, 3, 1, 2), rtol=1e-5, atol=1e-6)
    init_fun, apply_fun = stax.MaxPool((3,), (2,), spec="NCW")                  # 1-D
    assert init_fun(KEY, (-1, 3, 9))[0] == (-1, 3, 4)
    x1 = _rand(2, 3, 9)
    want = np.stack([x1[:, :, i:i + 3].max(-1) for i in range(0, 7, 2)], -1)
    np.testing.assert_allclose(apply_fun((), x1), want)


def test_batch_norm():
    x = _rand(6, 3, 2, 4) * 3 + 1
    init_fun, apply_fun = stax.BatchNorm()
    out_shape, (beta, gamma) = init_fun(KEY, (-1, 3, 2, 4))
    assert out_shape == (-1, 3, 2, 4) and beta.shape == gamma.shape == (4,)
    np.testing.assert_array_equal(beta, 0) and np.testing.assert_array_equal(gamma, 1)
    beta, gamma = _rand(4, seed=1), _rand(4, seed=2)
    y = apply_fun((jnp.asarray(beta), jnp.asarray(gamma)), x)
    x64 = x.astype(np.float64)
    mean, var = x64.mean((0, 1, 2)), x64.var((0, 1, 2))
    np.testing.assert_allclose(y, (x64 - mean) / np.sqrt(var + 1e-5) * gamma + beta,
                               rtol=1e-4, atol=1e-4)
    # dense features, no scale: only beta, over the batch axis
    init_fun, apply_fun = stax.BatchNorm(axis=(0,), scale=False, epsilon=1e-3)
    out_shape, (beta, gamma) = init_fun(KEY, (-1, 5))
    assert beta.shape == (5,) and gamma == ()
    x2 = _rand(8, 5).astype(np.float64)
    y2 = apply_fun((jnp.full(5, 0.5), ()), x2.astype(np.float32))
    want = (x2 - x2.mean(0)) / np.sqrt(x2.var(0) + 1e-3) + 0.5
    np.testing.assert_allclose(y2, want, rtol=1e-4, atol=1e-4)


def test_elementwise_layers():
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    xd = x.astype(np.float64)
    sig = 1 / (1 + np.exp(-xd))
    gelu = 0.5 * xd * (1 + np.tanh(np.sqrt(2 / np.pi) * (xd + 0.044715 * xd ** 3)))
    lse = np.log(np.exp(xd).sum(-1, keepdims=True))
    cases = [(stax.Relu, np.maximum(xd, 0)), (stax.Tanh, np.tanh(xd)), (stax.Sigmoid, sig),
             (stax.Softplus, np.log1p(np.exp(xd))), (stax.Exp, np.exp(xd)),
             (stax.Elu, np.where(xd > 0, xd, np.expm1(xd))),
             (stax.LeakyRelu, np.where(xd >= 0, xd, 0.01 * xd)), (stax.Gelu, gelu),
             (stax.LogSoftmax, xd - lse), (stax.Softmax, np.exp(xd - lse))]
    for (init_fun, _), _ in cases:
        assert init_fun(KEY, (-1, 4)) == ((-1, 4), ())
    # all in one jitted program (one compile rather than one per eager primitive)
    outs = jax.jit(lambda x, key: [apply_fun((), x, rng=key) for (_, apply_fun), _ in cases])(
        x, KEY)
    for out, (_, want) in zip(outs, cases):
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    init_fun, apply_fun = stax.elementwise(jnp.clip, min=-1.0, max=2.0)
    np.testing.assert_allclose(apply_fun((), x), np.clip(x, -1, 2))


def test_combinators_shapes_and_values():
    x = _rand(3, 4)
    # FanOut -> parallel(Dense, Identity, Dense) -> FanInConcat
    init_fun, apply_fun = stax.serial(
        stax.FanOut(3), stax.parallel(stax.Dense(3), stax.Identity, stax.Dense(2)),
        stax.FanInConcat())
    out_shape, params = init_fun(KEY, (-1, 4))
    assert out_shape == (-1, 9)
    (_, (pa, pb, pc), _) = params
    assert pb == () and pa[0].shape == (4, 3) and pc[0].shape == (4, 2)
    y = apply_fun(params, x)
    np.testing.assert_allclose(y[:, :3], x @ np.asarray(pa[0]) + np.asarray(pa[1]), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(y[:, 3:7], x)
    # parallel's shapes and outputs are sequences, one per branch
    shapes, _ = stax.parallel(stax.Dense(2), stax.Flatten)[0](KEY, [(-1, 3), (-1, 2, 5)])
    assert tuple(shapes) == ((-1, 2), (-1, 10))
    # residual: FanInSum of a Dense branch and an Identity
    init_fun, apply_fun = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(4), stax.Identity),
                                      stax.FanInSum)
    out_shape, params = init_fun(KEY, (-1, 4))
    W, b = params[1][0]
    assert out_shape == (-1, 4)
    np.testing.assert_allclose(apply_fun(params, x), x @ np.asarray(W) + np.asarray(b) + x,
                               rtol=1e-5, atol=1e-5)
    # FanInConcat along another axis, Flatten
    assert stax.FanInConcat(axis=1)[0](KEY, [(-1, 2, 5), (-1, 3, 5)])[0] == (-1, 5, 5)
    assert stax.Flatten[0](KEY, (-1, 3, 4, 2)) == ((-1, 24), ())
    np.testing.assert_array_equal(stax.Flatten[1]((), _rand(2, 3, 4)),
                                  _rand(2, 3, 4).reshape(2, 12))
    # an empty serial is the identity; each layer draws from its own key
    assert stax.serial()[0](KEY, (-1, 3)) == ((-1, 3), [])
    _, (p1, p2) = stax.serial(stax.Dense(3), stax.Dense(3))[0](KEY, (-1, 3))
    assert not np.allclose(p1[0], p2[0])


def test_shape_dependent():
    def make(input_shape):
        return stax.Identity if input_shape[-1] == 4 else stax.Dense(4)
    init_fun, apply_fun = stax.shape_dependent(make)
    assert init_fun(KEY, (-1, 4)) == ((-1, 4), ())
    out_shape, params = init_fun(KEY, (-1, 6))
    assert out_shape == (-1, 4) and params[0].shape == (6, 4)
    assert apply_fun(params, _rand(2, 6)).shape == (2, 4)
    np.testing.assert_array_equal(apply_fun((), _rand(2, 4)), _rand(2, 4))


def test_dropout():
    x = jnp.ones((40, 50))
    init_fun, apply_fun = stax.Dropout(0.75)
    assert init_fun(KEY, (-1, 50)) == ((-1, 50), ())
    y = np.asarray(apply_fun((), x, rng=random.PRNGKey(3)))
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)               # rate = keep rate
    assert 0.7 < kept.mean() < 0.8
    expected_keep = np.asarray(random.bernoulli(random.PRNGKey(3), 0.75, (40, 50)))
    np.testing.assert_array_equal(kept, expected_keep)
    with pytest.raises(ValueError, match="PRNG key"):
        apply_fun((), x)
    np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), x), 1.0)
    # serial splits its rng among the layers, so each dropout layer gets another mask
    init_fun, apply_fun = stax.serial(stax.Dropout(0.5), stax.Dropout(0.5))
    _, params = init_fun(KEY, (-1, 50))
    y = np.asarray(apply_fun(params, x, rng=random.PRNGKey(1)))
    assert set(np.unique(y)) <= {0.0, 4.0} and 0.15 < (y != 0).mean() < 0.35
    with pytest.raises(ValueError):
        stax.Dropout(0.5, mode="eval")


# ---- optimizers vs NumPy recurrences -------------------------------------------------------------

X0 = {"w": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3), "b": np.float32(0.5)}
GRADS = [{"w": _rand(2, 3, seed=10 + t), "b": np.float32(0.3 - 0.2 * t)} for t in range(3)]


def _np_run(init, update, steps=3):
    """The recurrence, leaf by leaf in float64; returns the parameters after each step."""
    leaves = {k: np.asarray(v, np.float64) for k, v in X0.items()}
    states = {k: init(v) for k, v in leaves.items()}
    out = []
    for t in range(steps):
        states = {k: update(t, np.asarray(GRADS[t][k], np.float64), s) for k, s in states.items()}
        out.append({k: s[0] for k, s in states.items()})
    return out


def _ref_sgd(lr):
    return (lambda x: (x,)), (lambda t, g, s: (s[0] - lr * g,))


def _ref_momentum(lr, mass, nesterov=False):
    def update(t, g, s):
        x, v = s
        v = mass * v + g
        return x - lr * ((mass * v + g) if nesterov else v), v
    return (lambda x: (x, 0 * x)), update


def _ref_adagrad(lr, mom=0.9):
    def update(t, g, s):
        x, gsq, m = s
        gsq = gsq + g * g
        m = (1 - mom) * g / np.sqrt(gsq) + mom * m
        return x - lr * m, gsq, m
    return (lambda x: (x, 0 * x, 0 * x)), update


def _ref_rmsprop(lr, gamma=0.9, eps=1e-8, mom=None):
    def update(t, g, s):
        x, a = s[:2]
        a = gamma * a + (1 - gamma) * g * g
        if mom is None:
            return x - lr * g / np.sqrt(a + eps), a
        m = mom * s[2] + lr * g / np.sqrt(a + eps)
        return x - m, a, m
    return (lambda x: (x, 0 * x) if mom is None else (x, 0 * x, 0 * x)), update


def _ref_adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def update(t, g, s):
        x, m, v = s
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1 ** (t + 1)), v / (1 - b2 ** (t + 1))
        return x - lr * mhat / (np.sqrt(vhat) + eps), m, v
    return (lambda x: (x, 0 * x, 0 * x)), update


def _ref_adamax(lr, b1=0.9, b2=0.999, eps=1e-8):
    def update(t, g, s):
        x, m, u = s
        m, u = b1 * m + (1 - b1) * g, np.maximum(b2 * u, np.abs(g))
        return x - lr / (1 - b1 ** (t + 1)) * m / (u + eps), m, u
    return (lambda x: (x, 0 * x, 0 * x)), update


def _ref_sm3(lr, mom=0.9):
    def init(x):
        x = np.atleast_1d(x)
        return x, 0 * x, [np.zeros(n) for n in x.shape]

    def update(t, g, s):
        x, m, vs = s
        g = np.reshape(g, x.shape)
        shape = lambda j: [-1 if a == j else 1 for a in range(x.ndim)]
        acc = functools.reduce(np.minimum, [v.reshape(shape(j)) for j, v in enumerate(vs)])
        acc = acc + g * g
        m = (1 - mom) * g / np.sqrt(acc) + mom * m
        vs = [acc.max(axis=tuple(a for a in range(x.ndim) if a != j)) if x.ndim > 1 else acc
              for j in range(x.ndim)]
        return x - lr * m, m, vs
    return init, update


OPTIMIZERS = [
    ("sgd", (0.1,), {}, _ref_sgd(0.1)),
    ("momentum", (0.1,), {"mass": 0.9}, _ref_momentum(0.1, 0.9)),
    ("nesterov", (0.1, 0.8), {}, _ref_momentum(0.1, 0.8, nesterov=True)),
    ("adagrad", (0.2,), {}, _ref_adagrad(0.2)),
    ("adagrad", (0.2,), {"momentum": 0.5}, _ref_adagrad(0.2, 0.5)),
    ("rmsprop", (0.01,), {"gamma": 0.8}, _ref_rmsprop(0.01, 0.8)),
    ("rmsprop_momentum", (0.01,), {}, _ref_rmsprop(0.01, mom=0.9)),
    ("adam", (0.05,), {}, _ref_adam(0.05)),
    ("adam", (0.05,), {"b1": 0.5, "b2": 0.9, "eps": 1e-3}, _ref_adam(0.05, 0.5, 0.9, 1e-3)),
    ("adamax", (0.05,), {}, _ref_adamax(0.05)),
    ("sm3", (0.1,), {}, _ref_sm3(0.1)),
]


@pytest.mark.parametrize("name,args,kwargs,ref", OPTIMIZERS,
                         ids=[f"{o[0]}-{i}" for i, o in enumerate(OPTIMIZERS)])
def test_optimizer_first_updates(name, args, kwargs, ref):
    opt_init, opt_update, get_params = getattr(optimizers, name)(*args, **kwargs)
    state = opt_init(X0)
    assert isinstance(state, optimizers.OptimizerState)
    got = []
    for t in range(3):
        state = opt_update(t, GRADS[t], state)
        got.append(_np(get_params(state)))
    for g, w in zip(got, _np_run(*ref)):
        assert g["b"].shape == () and g["w"].shape == (2, 3)
        np.testing.assert_allclose(g["w"], w["w"].reshape(2, 3), rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(g["b"], np.reshape(w["b"], ()), rtol=2e-5, atol=1e-6)


def test_optimizers_under_jit_and_fori_loop():
    """A traced step number and OptimizerStates as loop carries: adam (b ** (i + 1) of a
    traced i) and sm3 (whose state keeps the parameter's shape as static data)."""
    opts = [optimizers.adam(0.05), optimizers.sm3(0.05)]
    grads = jnp.stack([jnp.asarray(g["w"]) for g in GRADS])

    @jax.jit
    def run(states):
        def body(i, states):
            g = {"w": grads[i], "b": 0.1 * i}
            return [opt_update(i, g, s) for (_, opt_update, _), s in zip(opts, states)]
        return lax.fori_loop(0, 3, body, states)

    jitted = run([opt_init(X0) for opt_init, _, _ in opts])
    for (opt_init, opt_update, get_params), state in zip(opts, jitted):
        eager = opt_init(X0)
        for t in range(3):
            eager = opt_update(t, {"w": grads[t], "b": 0.1 * t}, eager)
        assert tree_flatten(state)[1] == tree_flatten(eager)[1]
        for a, b in zip(tree_leaves(get_params(state)), tree_leaves(get_params(eager))):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_schedules():
    i = np.arange(25)
    cases = [
        (optimizers.constant(0.3), np.full(25, 0.3)),
        (optimizers.exponential_decay(0.1, 10, 0.5), 0.1 * 0.5 ** (i / 10)),
        (optimizers.inverse_time_decay(0.1, 10, 0.5), 0.1 / (1 + 0.5 * i / 10)),
        (optimizers.inverse_time_decay(0.1, 10, 0.5, staircase=True),
         0.1 / (1 + 0.5 * np.floor(i / 10))),
        (optimizers.polynomial_decay(0.1, 10, 0.01, power=2.0),
         (1 - np.minimum(i, 10) / 10) ** 2 * 0.09 + 0.01),
        (optimizers.piecewise_constant([3, 6], [1.0, 0.5, 0.1]),
         np.where(i <= 3, 1.0, np.where(i <= 6, 0.5, 0.1))),
    ]
    for sched, want in cases:
        np.testing.assert_allclose([float(sched(int(k))) for k in i], want, rtol=1e-6)
    # a traced step number, as opt_update sees it under jit: all schedules in one program
    all_schedules = jax.jit(lambda step: [sched(step) for sched, _ in cases])
    for k in (0, 5, 20):
        np.testing.assert_allclose(all_schedules(k), [want[k] for _, want in cases], rtol=1e-6)
    sched = cases[-1][0]
    with pytest.raises(ValueError):
        optimizers.piecewise_constant([1, 2], [1.0, 0.5])
    assert optimizers.make_schedule(0.2)(100) == 0.2
    assert optimizers.make_schedule(sched) is sched
    with pytest.raises(TypeError):
        optimizers.make_schedule([0.1, 0.2])
    # a schedule drives the step size: sgd's first step uses sched(0)
    opt_init, opt_update, get_params = optimizers.sgd(optimizers.exponential_decay(1.0, 1, 0.5))
    state = opt_update(1, jnp.ones(2), opt_init(jnp.zeros(2)))
    np.testing.assert_allclose(get_params(state), [-0.5, -0.5])


def test_clip_grads_and_l2_norm():
    g = {"a": jnp.array([3.0, 0.0]), "b": (jnp.array(4.0),)}
    np.testing.assert_allclose(optimizers.l2_norm(g), 5.0)
    clipped = optimizers.clip_grads(g, 1.0)
    np.testing.assert_allclose(clipped["a"], [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(clipped["b"][0], 0.8, rtol=1e-6)
    same = optimizers.clip_grads(g, 10.0)
    np.testing.assert_array_equal(same["a"], g["a"])


def test_optimizer_state_pytree_and_pack_unpack():
    params = {"w": jnp.ones((2, 3)), "b": jnp.zeros(3)}
    opt_init, opt_update, get_params = optimizers.momentum(0.1, 0.9)
    state = opt_init(params)
    assert len(tree_leaves(state)) == 4                     # (x, velocity) per parameter
    leaves, treedef = tree_flatten(state)
    rebuilt = tree_unflatten(treedef, leaves)
    assert isinstance(rebuilt, optimizers.OptimizerState)
    state = opt_update(0, tree_map(jnp.ones_like, params), state)
    marked = optimizers.unpack_optimizer_state(state)
    assert isinstance(marked["w"], optimizers.JoinPoint)
    x, v = marked["w"].subtree
    np.testing.assert_allclose(x, 0.9) and np.testing.assert_allclose(v, 1.0)
    packed = optimizers.pack_optimizer_state(marked)
    assert tree_flatten(packed)[1] == tree_flatten(state)[1]
    for a, b in zip(tree_leaves(packed), tree_leaves(state)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="gradient tree"):
        opt_update(1, {"w": jnp.ones((2, 3))}, state)
    with pytest.raises(TypeError):
        optimizers.pack_optimizer_state({"w": 1.0})


def test_custom_optimizer_decorator():
    @optimizers.optimizer
    def sign_sgd(step_size):
        def init(x0):
            return (x0, jnp.zeros((), jnp.int32))

        def update(i, g, state):
            x, count = state
            return x - step_size * jnp.sign(g), count + 1

        def get_params(state):
            return state[0]
        return init, update, get_params

    assert sign_sgd.__name__ == "sign_sgd"
    opt = sign_sgd(0.5)
    assert isinstance(opt, optimizers.Optimizer)
    opt_init, opt_update, get_params = opt
    state = opt_update(0, [jnp.array([2.0, -3.0]), jnp.array(0.0)],
                       opt_init([jnp.zeros(2), jnp.ones(())]))
    np.testing.assert_allclose(get_params(state)[0], [-0.5, 0.5])
    np.testing.assert_allclose(get_params(state)[1], 1.0)
    assert int(optimizers.unpack_optimizer_state(state)[0].subtree[1]) == 1


# ---- training ------------------------------------------------------------------------------------

def _blobs(n, seed=0):
    """Three classes in 2-D: Gaussian blobs around the corners of a triangle."""
    rs = np.random.RandomState(seed)
    labels = rs.randint(0, 3, n)
    centers = np.array([[0.0, 1.5], [1.3, -0.8], [-1.3, -0.8]])
    x = centers[labels] + 0.45 * rs.randn(n, 2)
    return x.astype(np.float32), np.eye(3, dtype=np.float32)[labels]


def test_mlp_trains_to_high_accuracy():
    """mnist_classifier.py in small: stax MLP, optimizers.adam, a jitted update."""
    init_random_params, predict = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(32),
                                              stax.Relu, stax.Dense(3), stax.LogSoftmax)

    def loss(params, batch):
        inputs, targets = batch
        return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))

    def accuracy(params, batch):
        inputs, targets = batch
        return jnp.mean(jnp.argmax(predict(params, inputs), axis=1) == jnp.argmax(targets, 1))

    opt_init, opt_update, get_params = optimizers.adam(0.01)

    @jax.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, jax.grad(loss)(params, batch), opt_state)

    evaluate = jax.jit(lambda params, batch: (loss(params, batch), accuracy(params, batch)))
    train, test = _blobs(512), _blobs(512, seed=1)
    _, init_params = init_random_params(random.key(0), (-1, 2))
    opt_state = opt_init(init_params)
    itercount = itertools.count()
    first_loss = float(evaluate(init_params, train)[0])
    for epoch in range(6):
        for b in range(0, 512, 64):
            opt_state = update(next(itercount), opt_state, (train[0][b:b + 64],
                                                            train[1][b:b + 64]))
    params = get_params(opt_state)
    train_loss, train_acc = evaluate(params, train)
    assert float(train_loss) < 0.5 * first_loss
    assert float(train_acc) > 0.93
    assert float(evaluate(params, test)[1]) > 0.93


def test_cnn_grad_matches_finite_differences_and_trains():
    init_fun, predict = stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.Relu,
                                    stax.MaxPool((2, 2), (2, 2)), stax.Flatten, stax.Dense(3),
                                    stax.LogSoftmax)
    rs = np.random.RandomState(0)
    labels = rs.randint(0, 3, 12)
    # class c: a bright c-th row band on noise, so a conv net separates them easily
    images = 0.3 * rs.randn(12, 6, 6, 1).astype(np.float32)
    for n, c in enumerate(labels):
        images[n, 2 * c:2 * c + 2, :, 0] += 1.0
    targets = np.eye(3, dtype=np.float32)[labels]
    out_shape, params = init_fun(random.PRNGKey(1), (-1, 6, 6, 1))
    assert out_shape == (-1, 3)

    def loss(params, images, targets):
        return -jnp.mean(jnp.sum(predict(params, images) * targets, axis=1))

    opt_init, opt_update, get_params = optimizers.momentum(0.1, mass=0.9)

    @jax.jit
    def step(i, opt_state):
        value, g = jax.value_and_grad(loss)(get_params(opt_state), images, targets)
        return value, g, opt_update(i, g, opt_state)

    opt_state = opt_init(params)
    value, g_jit, opt_state = step(0, opt_state)
    losses = [float(value)]
    assert tree_flatten(g_jit)[1] == tree_flatten(params)[1]
    # directional derivatives against central differences, taken in float64: relu and the
    # max pool have kinks, which a float32-sized step (1e-2) crosses
    leaves, treedef = tree_flatten(params)
    saved = jax.config.enable_x64
    jax.config.update("enable_x64", True)
    try:
        loss64 = jax.jit(loss)
        leaves64 = [np.asarray(l, np.float64) for l in leaves]
        for seed in range(2):
            d = [np.random.RandomState(seed + 5).randn(*np.shape(l)) for l in leaves]
            shifted = lambda s: tree_unflatten(treedef, [jnp.asarray(l + s * di)
                                                         for l, di in zip(leaves64, d)])
            eps = 1e-4
            fd = (float(loss64(shifted(eps), images.astype(np.float64), targets))
                  - float(loss64(shifted(-eps), images.astype(np.float64), targets))) / (2 * eps)
            analytic = sum(float(np.vdot(np.asarray(g, np.float64), di))
                           for g, di in zip(tree_leaves(g_jit), d))
            np.testing.assert_allclose(analytic, fd, rtol=1e-4, atol=1e-6)
    finally:
        jax.config.update("enable_x64", saved)

    for i in range(1, 25):
        value, _, opt_state = step(i, opt_state)
        losses.append(float(value))
    assert losses[-1] < 0.3 * losses[0], losses


# ---- JAX's classic examples, scaled down ---------------------------------------------------------

def test_mnist_vae_style():
    """examples/mnist_vae.py: FanOut + parallel encoder heads, Softplus, a reparameterised
    sample, an opt_state carried through lax.fori_loop inside jit."""
    encoder_init, encode = stax.serial(stax.Dense(16), stax.Softplus, stax.FanOut(2),
                                       stax.parallel(stax.Dense(3), stax.serial(stax.Dense(3),
                                                                                stax.Softplus)))
    decoder_init, decode = stax.serial(stax.Dense(16), stax.Softplus, stax.Dense(12))

    def gaussian_kl(mu, sigmasq):
        return -0.5 * jnp.sum(1.0 + jnp.log(sigmasq) - mu ** 2.0 - sigmasq)

    def gaussian_sample(rng, mu, sigmasq):
        return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)

    def bernoulli_logpdf(logits, x):
        return -jnp.sum(jnp.logaddexp(0.0, jnp.where(x, -1.0, 1.0) * logits))

    def elbo(rng, params, images):
        enc_params, dec_params = params
        mu_z, sigmasq_z = encode(enc_params, images)
        logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
        return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)

    rs = np.random.RandomState(0)
    patterns = rs.rand(2, 12) > 0.5
    images = patterns[rs.randint(0, 2, 64)].astype(np.float32)
    enc_rng, dec_rng = random.split(random.PRNGKey(2))
    enc_shape, init_encoder_params = encoder_init(enc_rng, (-1, 12))
    assert [tuple(s) for s in enc_shape] == [(-1, 3), (-1, 3)]
    dec_shape, init_decoder_params = decoder_init(dec_rng, (-1, 3))
    assert dec_shape == (-1, 12)
    opt_init, opt_update, get_params = optimizers.momentum(0.003, mass=0.9)
    batch_size, num_batches = 16, 4

    @jax.jit
    def run_epoch(rng, opt_state, images):
        # as the example's, with the epoch's mean loss added to the loop carry
        def body_fun(i, carry):
            opt_state, total = carry
            elbo_rng, data_rng = random.split(random.fold_in(rng, i))
            batch = lax.dynamic_slice_in_dim(images, i * batch_size, batch_size)
            loss = lambda params: -elbo(elbo_rng, params, batch) / batch_size
            value, g = jax.value_and_grad(loss)(get_params(opt_state))
            return opt_update(i, g, opt_state), total + value / num_batches
        return lax.fori_loop(0, num_batches, body_fun, (opt_state, 0.0))

    opt_state = opt_init((init_encoder_params, init_decoder_params))
    losses = []
    for epoch in range(8):
        opt_state, epoch_loss = run_epoch(random.PRNGKey(epoch), opt_state, images)
        losses.append(float(epoch_loss))
    assert np.all(np.isfinite(losses)) and losses[-1] < 0.9 * losses[0], losses


def test_resnet_style():
    """examples/resnet50.py: GeneralConv blocks, BatchNorm, shape_dependent projections,
    FanOut/parallel/FanInSum residuals, AvgPool, Flatten, momentum."""
    def ConvBlock(kernel_size, filters, strides=(2, 2)):
        ks = kernel_size
        filters1, filters2 = filters
        main = stax.serial(stax.Conv(filters1, (1, 1), strides), stax.BatchNorm(), stax.Relu,
                           stax.Conv(filters2, (ks, ks), padding="SAME"), stax.BatchNorm())
        shortcut = stax.serial(stax.Conv(filters2, (1, 1), strides), stax.BatchNorm())
        return stax.serial(stax.FanOut(2), stax.parallel(main, shortcut), stax.FanInSum,
                           stax.Relu)

    def IdentityBlock(kernel_size, filters):
        ks = kernel_size
        filters1 = filters

        def make_main(input_shape):
            # the last layer matches the input's channels, known only at init
            return stax.serial(stax.Conv(filters1, (1, 1)), stax.BatchNorm(), stax.Relu,
                               stax.Conv(input_shape[3], (ks, ks), padding="SAME"),
                               stax.BatchNorm())
        main = stax.shape_dependent(make_main)
        return stax.serial(stax.FanOut(2), stax.parallel(main, stax.Identity), stax.FanInSum,
                           stax.Relu)

    init_fun, predict_fun = stax.serial(
        stax.GeneralConv(("HWCN", "OIHW", "NHWC"), 8, (3, 3), (1, 1), "SAME"),
        stax.BatchNorm(), stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)),
        ConvBlock(3, (4, 8)), IdentityBlock(3, 4),
        stax.AvgPool((2, 2)), stax.Flatten, stax.Dense(3), stax.LogSoftmax)

    rs = np.random.RandomState(0)
    batch_size = 8
    labels = rs.randint(0, 3, batch_size)
    images = (0.5 * rs.randn(8, 8, 1, batch_size) + labels[None, None, None, :]).astype(
        np.float32)                                                      # HWCN
    targets = np.eye(3, dtype=np.float32)[labels]
    out_shape, init_params = init_fun(random.PRNGKey(0), (8, 8, 1, batch_size))
    assert out_shape == (batch_size, 3)

    def loss(params, batch):
        inputs, targets = batch
        return -jnp.sum(predict_fun(params, inputs) * targets) / batch_size

    opt_init, opt_update, get_params = optimizers.momentum(0.05, mass=0.9)

    @jax.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        value, g = jax.value_and_grad(loss)(params, batch)
        return value, opt_update(i, g, opt_state)

    opt_state = opt_init(init_params)
    losses = []
    for i in range(12):
        value, opt_state = update(i, opt_state, (images, targets))
        losses.append(float(value))
    assert losses[-1] < 0.5 * losses[0], losses


def test_differentially_private_sgd_style():
    """examples/differentially_private_sgd.py: per-example gradients by vmap (each example a
    batch of one), clipped and noised, applied with optimizers.sgd inside jit."""
    init_random_params, predict = stax.serial(
        stax.Conv(4, (3, 3), padding="SAME", strides=(2, 2)), stax.Relu,
        stax.MaxPool((2, 2), (1, 1)), stax.Flatten, stax.Dense(8), stax.Relu, stax.Dense(2))

    def loss(params, batch):
        inputs, targets = batch
        logits = predict(params, inputs)
        logits = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.sum(logits * targets, axis=1))

    def private_grad(params, batch, rng, l2_norm_clip, noise_multiplier, batch_size):
        def _clipped_grad(params, single_example_batch):
            grads = jax.grad(loss)(params, single_example_batch)
            nonempty_grads, tree_def = tree_flatten(grads)
            total_grad_norm = jnp.linalg.norm(
                jnp.array([jnp.linalg.norm(neg.ravel()) for neg in nonempty_grads]))
            divisor = jnp.maximum(total_grad_norm / l2_norm_clip, 1.0)
            return tree_unflatten(tree_def, [g / divisor for g in nonempty_grads])

        px_clipped_grad_fn = jax.vmap(functools.partial(_clipped_grad, params))
        std_dev = l2_norm_clip * noise_multiplier
        noise_ = lambda n: n + std_dev * random.normal(rng, n.shape)
        aggregated = tree_map(lambda n: jnp.sum(n, 0), px_clipped_grad_fn(batch))
        return tree_map(lambda n: noise_(n) / float(batch_size), aggregated)

    rs = np.random.RandomState(0)
    batch_size = 8
    labels = rs.randint(0, 2, batch_size)
    images = (0.5 * rs.randn(batch_size, 1, 6, 6, 1) + labels[:, None, None, None, None]
              ).astype(np.float32)                                   # a dummy batch dim of 1
    targets = np.eye(2, dtype=np.float32)[labels][:, None, :]
    opt_init, opt_update, get_params = optimizers.sgd(0.5)

    @jax.jit
    def private_update(rng, i, opt_state, batch):
        params = get_params(opt_state)
        rng = random.fold_in(rng, i)
        return opt_update(i, private_grad(params, batch, rng, 1.0, 0.01, batch_size), opt_state)

    _, init_params = init_random_params(random.PRNGKey(1), (-1, 6, 6, 1))
    opt_state = opt_init(init_params)
    flat = (images[:, 0], targets[:, 0])
    loss_jit = jax.jit(loss)
    first = float(loss_jit(init_params, flat))
    for i in range(10):
        opt_state = private_update(random.PRNGKey(3), i, opt_state, (images, targets))
    assert float(loss_jit(get_params(opt_state), flat)) < 0.7 * first
