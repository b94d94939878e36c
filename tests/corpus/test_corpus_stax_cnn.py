"""Corpus: stax + optimizers, as JAX's examples/mnist_classifier.py uses them: a network built
with ``stax.serial`` and trained with ``optimizers.adam`` through a jitted
``update(i, opt_state, batch)``, here on 8x8 digits from scikit-learn.

Checked:
* a small dense stax model (Dense, Relu, Dense, LogSoftmax): its loss and gradient against a
  float64 NumPy forward/backward on the same parameters, and two adam steps against the adam
  recurrence in NumPy;
* a small CNN (Conv, Relu, MaxPool, Conv, Relu, AvgPool, Flatten, Dense, LogSoftmax): the
  jitted gradient equals the eager one, directional derivatives against central differences
  of the loss in float64, and adam lowers its training loss."""
import itertools

import numpy as np

import pyree as jax
import pyree.numpy as jnp
from pyree import random
from pyree.example_libraries import optimizers, stax
from pyree.tree_util import tree_flatten, tree_leaves, tree_unflatten


def loss_fn(predict):
    def loss(params, batch):
        inputs, targets = batch
        preds = predict(params, inputs)
        return -jnp.mean(jnp.sum(preds * targets, axis=1))
    return loss


def digits(n, image=False):
    from sklearn.datasets import load_digits
    data = load_digits()
    x = (data.data[:n] / 16.0).astype(np.float32)
    if image:
        x = x.reshape(n, 8, 8, 1)
    return x, np.eye(10, dtype=np.float32)[data.target[:n]]


# ---- the dense model against NumPy -------------------------------------------------------------

def np_dense_loss_and_grads(params, inputs, targets):
    (w1, b1), _, (w2, b2), _ = [tuple(np.asarray(a, np.float64) for a in p) for p in params]
    h_pre = inputs @ w1 + b1
    h = np.maximum(h_pre, 0.0)
    logits = h @ w2 + b2
    m = logits.max(1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(1, keepdims=True))
    n = len(inputs)
    value = -np.mean(np.sum(logp * targets, 1))
    d_logits = (np.exp(logp) - targets) / n
    d_h = d_logits @ w2.T * (h_pre > 0)
    grads = [(inputs.T @ d_h, d_h.sum(0)), (), (h.T @ d_logits, d_logits.sum(0)), ()]
    return value, grads


def np_adam(x, grads, step_size, b1=0.9, b2=0.999, eps=1e-8):
    m = np.zeros_like(x)
    v = np.zeros_like(x)
    for i, g in enumerate(grads):
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g ** 2 + b2 * v
        m_hat = m / (1 - b1 ** (i + 1))
        v_hat = v / (1 - b2 ** (i + 1))
        x = x - step_size * m_hat / (np.sqrt(v_hat) + eps)
    return x


def test_dense_stax_gradient_and_adam_against_numpy():
    init_random_params, predict = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(10),
                                              stax.LogSoftmax)
    loss = loss_fn(predict)
    out_shape, params = init_random_params(random.PRNGKey(0), (-1, 64))
    assert out_shape == (-1, 10)
    assert [tuple(np.shape(a) for a in p) for p in params] == [((64, 16), (16,)), (),
                                                              ((16, 10), (10,)), ()]
    inputs, targets = digits(32)
    opt_init, opt_update, get_params = optimizers.adam(1e-2)

    @jax.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        value, g = jax.value_and_grad(loss)(params, batch)
        return value, g, opt_update(i, g, opt_state)

    ref_value, ref_grads = np_dense_loss_and_grads(params, inputs, targets)
    opt_state = opt_init(params)
    value, g0, opt_state = update(0, opt_state, (inputs, targets))
    np.testing.assert_allclose(float(value), ref_value, rtol=1e-5)
    assert tree_flatten(g0)[1] == tree_flatten(params)[1]
    for got, want in zip(tree_leaves(g0), tree_leaves(ref_grads)):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-6)
    # the second step sees the once-updated parameters; adam's recurrence over both gradients
    _, g1, opt_state = update(1, opt_state, (inputs, targets))
    for p, a, b, new in zip(tree_leaves(params), tree_leaves(g0), tree_leaves(g1),
                            tree_leaves(get_params(opt_state))):
        want = np_adam(np.asarray(p, np.float64), [np.asarray(a, np.float64),
                                                   np.asarray(b, np.float64)], 1e-2)
        np.testing.assert_allclose(np.asarray(new), want, rtol=1e-5, atol=1e-6)


# ---- the CNN -----------------------------------------------------------------------------------

def test_cnn_adam_gradient_and_training():
    init_random_params, predict = stax.serial(
        stax.Conv(6, (3, 3), padding="SAME"), stax.Relu,
        stax.MaxPool((2, 2), strides=(2, 2)),
        stax.Conv(8, (3, 3)), stax.Relu,
        stax.AvgPool((2, 2)),
        stax.Flatten, stax.Dense(10), stax.LogSoftmax)
    loss = loss_fn(predict)
    out_shape, init_params = init_random_params(random.PRNGKey(1), (-1, 8, 8, 1))
    assert out_shape == (-1, 10)
    inputs, targets = digits(64, image=True)
    # the digits' blank background makes exact ties in the max pool windows, where the loss has
    # kinks that central differences straddle: a little noise breaks them
    inputs = inputs + 0.05 * np.random.RandomState(2).randn(*inputs.shape).astype(np.float32)
    batch = (inputs, targets)

    # the jitted gradient equals the eager one
    g_jit = jax.jit(jax.grad(loss))(init_params, batch)
    g_eager = jax.grad(loss)(init_params, batch)
    for a, b in zip(tree_leaves(g_jit), tree_leaves(g_eager)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-7)

    # directional derivatives against central differences of the float64 loss, along unit
    # directions with a small step: thousands of ReLU inputs lie near their kink
    leaves, treedef = tree_flatten(init_params)
    saved = jax.config.enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        loss64 = jax.jit(loss)
        batch64 = (inputs.astype(np.float64), targets.astype(np.float64))
        leaves64 = [np.asarray(l, np.float64) for l in leaves]
        rs = np.random.RandomState(3)
        for _ in range(2):
            d = [rs.randn(*np.shape(l)) for l in leaves64]
            norm = np.sqrt(sum(np.sum(di ** 2) for di in d))
            d = [di / norm for di in d]
            at = lambda s: tree_unflatten(treedef, [l + s * di for l, di in zip(leaves64, d)])
            eps = 1e-6
            fd = (float(loss64(at(eps), batch64)) - float(loss64(at(-eps), batch64))) / (2 * eps)
            analytic = sum(float(np.vdot(np.asarray(g, np.float64), di))
                           for g, di in zip(tree_leaves(g_jit), d))
            np.testing.assert_allclose(analytic, fd, rtol=1e-4, atol=1e-8)
    finally:
        jax.config.update("jax_enable_x64", saved)

    # adam lowers the loss
    opt_init, opt_update, get_params = optimizers.adam(0.02)

    @jax.jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, jax.grad(loss)(params, batch), opt_state)

    jit_loss = jax.jit(loss)
    opt_state = opt_init(init_params)
    itercount = itertools.count()
    first = float(jit_loss(init_params, batch))
    for _ in range(30):
        opt_state = update(next(itercount), opt_state, batch)
    last = float(jit_loss(get_params(opt_state), batch))
    assert last < 0.5 * first, (first, last)
