"""MLP trained from scratch with grad and jit (the style of JAX's mnist_classifier_fromscratch)."""
import numpy as np
import jax
import jax.numpy as jnp
from jax import random, grad, jit
from jax.scipy.special import logsumexp

def init_params(sizes, key):
    keys = random.split(key, len(sizes))
    return [(random.normal(k, (m, n)) * 0.1, random.normal(k, (n,)) * 0.1)
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]

def predict(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    logits = x @ w + b
    return logits - logsumexp(logits, axis=1, keepdims=True)

def loss(params, x, y):
    return -jnp.mean(jnp.sum(predict(params, x) * y, axis=1))

def accuracy(params, x, y):
    return jnp.mean(jnp.argmax(predict(params, x), 1) == jnp.argmax(y, 1))

@jit
def update(params, x, y):
    g = grad(loss)(params, x, y)
    return [(w - 0.1 * dw, b - 0.1 * db) for (w, b), (dw, db) in zip(params, g)]

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 64)).astype(np.float32)
labels = (x[:, :10].argmax(1))
y = np.eye(10, dtype=np.float32)[labels]
params = init_params([64, 128, 64, 10], random.PRNGKey(0))
for epoch in range(3):
    for i in range(0, 256, 32):
        params = update(params, x[i:i+32], y[i:i+32])
    print(epoch, float(accuracy(params, x, y)))
