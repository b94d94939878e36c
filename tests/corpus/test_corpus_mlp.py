"""Corpus: a multilayer perceptron trained from scratch, as JAX's
examples/mnist_classifier_fromscratch.py does it (no stax, no optimizers: parameters are a list
of (W, b) tuples, initialised with ``random.normal``, updated by hand with ``jax.grad`` inside a
jitted ``update``), on a small subset of scikit-learn's 8x8 digits.

Checked: one jitted update step and the same step run eagerly against a float64 NumPy
implementation of the same forward pass and backpropagation (rtol 1e-4); the training loss
falls below a threshold and the training accuracy rises above one."""
import numpy as np

import pyree as jax
import pyree.numpy as jnp
from pyree import random
from pyree.scipy.special import logsumexp

LAYER_SIZES = [64, 32, 10]
PARAM_SCALE = 0.1
STEP_SIZE = 0.5
BATCH_SIZE = 32


def init_random_params(key, scale, layer_sizes):
    keys = random.split(key, 2 * (len(layer_sizes) - 1))
    return [(scale * random.normal(kw, (m, n)), scale * random.normal(kb, (n,)))
            for kw, kb, m, n in zip(keys[::2], keys[1::2], layer_sizes[:-1], layer_sizes[1:])]


def predict(params, inputs):
    activations = inputs
    for w, b in params[:-1]:
        outputs = jnp.dot(activations, w) + b
        activations = jnp.tanh(outputs)
    final_w, final_b = params[-1]
    logits = jnp.dot(activations, final_w) + final_b
    return logits - logsumexp(logits, axis=1, keepdims=True)


def loss(params, batch):
    inputs, targets = batch
    preds = predict(params, inputs)
    return -jnp.mean(jnp.sum(preds * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(predict(params, inputs), axis=1)
    return jnp.mean(predicted_class == target_class)


def update(params, batch):
    grads = jax.grad(loss)(params, batch)
    return [(w - STEP_SIZE * dw, b - STEP_SIZE * db)
            for (w, b), (dw, db) in zip(params, grads)]


# ---- NumPy reference (float64) ---------------------------------------------------------------

def np_loss_and_grads(params, inputs, targets):
    """Forward pass and hand-written backpropagation of ``loss``."""
    params = [(np.asarray(w, np.float64), np.asarray(b, np.float64)) for w, b in params]
    inputs = np.asarray(inputs, np.float64)
    acts, pre = [inputs], []
    for w, b in params[:-1]:
        pre.append(acts[-1] @ w + b)
        acts.append(np.tanh(pre[-1]))
    logits = acts[-1] @ params[-1][0] + params[-1][1]
    m = logits.max(1, keepdims=True)
    logp = logits - (m + np.log(np.exp(logits - m).sum(1, keepdims=True)))
    n = inputs.shape[0]
    value = -np.mean(np.sum(logp * targets, 1))
    # d loss / d logits = (softmax - targets) / n   (targets one-hot rows sum to 1)
    delta = (np.exp(logp) * targets.sum(1, keepdims=True) - targets) / n
    grads = []
    for layer in range(len(params) - 1, -1, -1):
        w, _ = params[layer]
        grads.append((acts[layer].T @ delta, delta.sum(0)))
        if layer > 0:
            delta = (delta @ w.T) * (1.0 - acts[layer] ** 2)
    return value, grads[::-1]


def np_update(params, inputs, targets):
    _, grads = np_loss_and_grads(params, inputs, targets)
    return [(np.asarray(w, np.float64) - STEP_SIZE * dw, np.asarray(b, np.float64) - STEP_SIZE * db)
            for (w, b), (dw, db) in zip(params, grads)]


def digits_subset(n=256):
    from sklearn.datasets import load_digits
    digits = load_digits()
    inputs = (digits.data[:n] / 16.0).astype(np.float32)
    targets = np.eye(10, dtype=np.float32)[digits.target[:n]]
    return inputs, targets


def test_mlp_from_scratch():
    inputs, targets = digits_subset()
    params = init_random_params(random.PRNGKey(0), PARAM_SCALE, LAYER_SIZES)
    assert [(w.shape, b.shape) for w, b in params] == [((64, 32), (32,)), ((32, 10), (10,))]
    # random.normal draws are standard normal-ish and differ between the layers' keys
    w0 = np.asarray(params[0][0]) / PARAM_SCALE
    assert abs(w0.mean()) < 0.1 and 0.9 < w0.std() < 1.1

    jit_update = jax.jit(update)
    batch = (inputs[:BATCH_SIZE], targets[:BATCH_SIZE])

    # the loss and its gradient against the NumPy reference
    ref_value, ref_grads = np_loss_and_grads(params, *batch)
    value, grads = jax.jit(jax.value_and_grad(loss))(params, batch)
    np.testing.assert_allclose(float(value), ref_value, rtol=1e-5)
    for (dw, db), (rdw, rdb) in zip(grads, ref_grads):
        np.testing.assert_allclose(np.asarray(dw), rdw, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(np.asarray(db), rdb, rtol=1e-4, atol=1e-6)

    # one update step, jitted and eager, against the reference step
    ref_step = np_update(params, *batch)
    for stepped in (jit_update(params, batch), update(params, batch)):
        for (w, b), (rw, rb) in zip(stepped, ref_step):
            np.testing.assert_allclose(np.asarray(w), rw, rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(np.asarray(b), rb, rtol=1e-4, atol=1e-6)

    # training: minibatches of 32 over 256 examples
    jit_loss = jax.jit(loss)
    jit_accuracy = jax.jit(accuracy)
    full = (inputs, targets)
    first_loss = float(jit_loss(params, full))
    assert first_loss > 2.0  # ~log(10) at init
    rs = np.random.RandomState(0)
    for epoch in range(10):
        perm = rs.permutation(len(inputs))
        for i in range(0, len(inputs), BATCH_SIZE):
            idx = perm[i:i + BATCH_SIZE]
            params = jit_update(params, (inputs[idx], targets[idx]))
    final_loss = float(jit_loss(params, full))
    assert final_loss < 0.3, (first_loss, final_loss)
    assert float(jit_accuracy(params, full)) > 0.95
