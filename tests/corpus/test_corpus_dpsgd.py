"""Corpus: one step of differentially private SGD, in the manner of JAX's
examples/differentially_private_sgd.py: per-example gradients by
``vmap(grad(loss), in_axes=(None, 0, 0))``, each clipped to global L2 norm at most ``C``
with ``tree_util`` (flatten, norm of the leaves' norms, unflatten), Gaussian noise of scale
``C * noise_multiplier`` from ``random.normal`` on split keys, averaged, applied as SGD in a
jitted step. The model is a small tanh MLP with a logistic output, parameters in a dict.

Checked: the per-example gradients against a float64 NumPy backpropagation, example by
example; the clipped gradients' global norms are at most ``C`` (equal to ``C`` where the raw
norm exceeded it, untouched elsewhere); the noised mean gradient (jitted and eager) against
NumPy with the same noise, drawn again from the same keys; private SGD lowers the loss. Keys
are new-style typed keys (``random.key``)."""
import numpy as np

import pyree as jax
import pyree.numpy as jnp
from pyree import random, vmap
from pyree.nn import log_sigmoid
from pyree.tree_util import tree_flatten, tree_leaves, tree_map, tree_unflatten

FEATURES, HIDDEN, BATCH = 10, 16, 16
L2_NORM_CLIP = 1.0
NOISE_MULTIPLIER = 0.5


def init_params(key):
    k1, k2 = random.split(key)
    return {"hidden": {"w": random.normal(k1, (FEATURES, HIDDEN)) / np.sqrt(FEATURES),
                       "b": jnp.zeros(HIDDEN)},
            "out": {"w": random.normal(k2, (HIDDEN,)) / np.sqrt(HIDDEN),
                    "b": jnp.zeros(())}}


def logit(params, x):
    h = jnp.tanh(jnp.dot(x, params["hidden"]["w"]) + params["hidden"]["b"])
    return jnp.dot(h, params["out"]["w"]) + params["out"]["b"]


def loss(params, x, y):
    """Logistic loss of one example (y in {0, 1})."""
    z = logit(params, x)
    return -(y * log_sigmoid(z) + (1.0 - y) * log_sigmoid(-z))


def batch_loss(params, xs, ys):
    return jnp.mean(vmap(loss, in_axes=(None, 0, 0))(params, xs, ys))


def clip_by_global_norm(grads, l2_norm_clip):
    leaves, treedef = tree_flatten(grads)
    total_norm = jnp.sqrt(sum(jnp.sum(g ** 2) for g in leaves))
    divisor = jnp.maximum(total_norm / l2_norm_clip, 1.0)
    return tree_unflatten(treedef, [g / divisor for g in leaves])


per_example_grads = vmap(jax.grad(loss), in_axes=(None, 0, 0))


def private_grad(params, xs, ys, rng, l2_norm_clip, noise_multiplier):
    clipped = vmap(clip_by_global_norm, in_axes=(0, None))(
        per_example_grads(params, xs, ys), l2_norm_clip)
    summed = tree_map(lambda g: jnp.sum(g, axis=0), clipped)
    leaves, treedef = tree_flatten(summed)
    keys = random.split(rng, len(leaves))
    noised = [g + l2_norm_clip * noise_multiplier * random.normal(k, g.shape)
              for g, k in zip(leaves, keys)]
    return tree_unflatten(treedef, [g / xs.shape[0] for g in noised])


# ---- NumPy reference (float64) -----------------------------------------------------------------

def np_example_grad(params, x, y):
    p = tree_map(lambda a: np.asarray(a, np.float64), params)
    a = x @ p["hidden"]["w"] + p["hidden"]["b"]
    h = np.tanh(a)
    z = h @ p["out"]["w"] + p["out"]["b"]
    dz = 1.0 / (1.0 + np.exp(-z)) - y          # d loss / d logit
    dh = dz * p["out"]["w"] * (1.0 - h ** 2)
    return {"hidden": {"w": np.outer(x, dh), "b": dh}, "out": {"w": dz * h, "b": dz}}


def global_norm(tree):
    return np.sqrt(sum(np.sum(np.asarray(g, np.float64) ** 2) for g in tree_leaves(tree)))


def make_data(seed=0):
    rs = np.random.RandomState(seed)
    xs = rs.randn(BATCH, FEATURES).astype(np.float32)
    direction = rs.randn(FEATURES)
    ys = (xs @ direction > 0).astype(np.float32)
    # a few large examples, whose gradients the clipping must shrink
    xs[:4] *= 6.0
    return xs, ys


def test_per_example_gradients_and_clipping():
    params = init_params(random.key(0))
    xs, ys = make_data()
    grads = jax.jit(per_example_grads)(params, xs, ys)
    assert tree_flatten(grads)[1] == tree_flatten(params)[1]
    assert grads["hidden"]["w"].shape == (BATCH, FEATURES, HIDDEN)
    want = [np_example_grad(params, x, y) for x, y in zip(xs.astype(np.float64), ys)]
    for n in range(BATCH):
        got_n = tree_map(lambda g: np.asarray(g)[n], grads)
        for a, b in zip(tree_leaves(got_n), tree_leaves(want[n])):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)

    clipped = jax.jit(vmap(clip_by_global_norm, in_axes=(0, None)))(grads, L2_NORM_CLIP)
    raw_norms = np.array([global_norm(w) for w in want])
    assert (raw_norms > L2_NORM_CLIP).sum() >= 2 and (raw_norms < L2_NORM_CLIP).sum() >= 2
    for n in range(BATCH):
        got_n = tree_map(lambda g: np.asarray(g, np.float64)[n], clipped)
        norm = global_norm(got_n)
        assert norm <= L2_NORM_CLIP * (1 + 1e-6), (n, norm)
        scale = min(1.0, L2_NORM_CLIP / raw_norms[n])
        np.testing.assert_allclose(norm, raw_norms[n] * scale, rtol=1e-4)
        for a, b in zip(tree_leaves(got_n), tree_leaves(want[n])):
            np.testing.assert_allclose(a, b * scale, rtol=1e-4, atol=1e-6)


def test_private_gradient_against_numpy():
    params = init_params(random.key(1))
    xs, ys = make_data(1)
    rng = random.key(42)
    got = jax.jit(private_grad, static_argnums=(4, 5))(params, xs, ys, rng, L2_NORM_CLIP,
                                                       NOISE_MULTIPLIER)
    eager = private_grad(params, xs, ys, rng, L2_NORM_CLIP, NOISE_MULTIPLIER)

    # NumPy: clip each example's gradient, sum, add the same noise, average
    total = None
    for x, y in zip(xs.astype(np.float64), ys):
        g = np_example_grad(params, x, y)
        scale = min(1.0, L2_NORM_CLIP / global_norm(g))
        g = tree_map(lambda a: a * scale, g)
        total = g if total is None else tree_map(np.add, total, g)
    leaves, treedef = tree_flatten(total)
    keys = random.split(rng, len(leaves))
    noise = [np.asarray(random.normal(k, np.shape(l)), np.float64) for l, k in zip(leaves, keys)]
    want = tree_unflatten(treedef, [(l + L2_NORM_CLIP * NOISE_MULTIPLIER * z) / BATCH
                                    for l, z in zip(leaves, noise)])
    for a, b, c in zip(tree_leaves(got), tree_leaves(eager), tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), c, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(np.asarray(b), c, rtol=1e-4, atol=1e-6)


def test_private_sgd_trains():
    params = init_params(random.key(2))
    xs, ys = make_data(2)
    step_size = 0.5

    @jax.jit
    def private_update(params, rng, xs, ys):
        g = private_grad(params, xs, ys, rng, L2_NORM_CLIP, 0.1)
        return tree_map(lambda p, d: p - step_size * d, params, g)

    first = float(jax.jit(batch_loss)(params, xs, ys))
    rng = random.key(0)
    for i in range(40):
        params = private_update(params, random.fold_in(rng, i), xs, ys)
    last = float(jax.jit(batch_loss)(params, xs, ys))
    assert last < 0.5 * first, (first, last)
