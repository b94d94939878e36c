"""vmap, pyree against JAX and NumPy: per-example gradients and a batched matrix-vector product.

    python benchmarks/vmap.py               # these benchmarks alone
    python benchmarks/run.py                # everything, these included

* Per-example gradients: ``vmap(grad(loss), in_axes=(None, 0, 0))`` over 10 000 examples of a
  one-hidden-layer tanh network (16 inputs, 32 hidden, squared error), jitted. NumPy computes
  the same gradients by hand-written backpropagation, vectorized over the examples.
* Batched matrix-vector product: ``vmap(jnp.dot)`` of 1000 matrices 64x64 with 1000 vectors,
  jitted; NumPy's ``matmul`` on the stacks.

Measured as in run.py (``compare``: warm-up, contestants interleaved over rounds, median);
times are per call, waiting for the result. All contestants get the same NumPy inputs.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import compare, jax, run_alone  # noqa: E402  (jax is None when it is not installed)



def _libraries():
    """(name, library module, numpy module) of each contestant."""
    import pyree.numpy
    libs = [("pyree", pyree, pyree.numpy)]
    if jax is not None:
        libs.append(("jax", jax, jax.numpy))
    return libs


# -- per-example gradients -------------------------------------------------------------------------

N_EXAMPLES, N_IN, N_HIDDEN = 10_000, 16, 32


def make_per_example_grads(lib, jnp):
    def loss(params, x, y):
        w1, b1, w2 = params
        prediction = jnp.tanh(x @ w1 + b1) @ w2
        return (prediction - y) ** 2

    return lib.jit(lib.vmap(lib.grad(loss), in_axes=(None, 0, 0)))


def per_example_grads_numpy(params, xs, ys):
    w1, b1, w2 = params
    h = np.tanh(xs @ w1 + b1)                       # (n, hidden)
    r = h @ w2 - ys                                 # (n,)
    g_w2 = 2 * r[:, None] * h
    g_pre = 2 * r[:, None] * w2 * (1 - h * h)       # (n, hidden)
    g_w1 = xs[:, :, None] * g_pre[:, None, :]       # (n, in, hidden)
    return g_w1, g_pre, g_w2


def per_example_inputs():
    rng = np.random.RandomState(0)
    params = (rng.randn(N_IN, N_HIDDEN).astype(np.float32) / np.sqrt(N_IN),
              np.zeros(N_HIDDEN, np.float32),
              rng.randn(N_HIDDEN).astype(np.float32) / np.sqrt(N_HIDDEN))
    xs = rng.randn(N_EXAMPLES, N_IN).astype(np.float32)
    ys = rng.randn(N_EXAMPLES).astype(np.float32)
    return params, xs, ys


def bench_per_example_grads(rounds: int) -> dict:
    params, xs, ys = per_example_inputs()
    want = per_example_grads_numpy(params, xs, ys)
    contestants = {"numpy": lambda: per_example_grads_numpy(params, xs, ys)}
    for name, lib, jnp in _libraries():
        fn = make_per_example_grads(lib, jnp)
        args = lib.device_put((params, xs, ys))
        for got, w in zip(fn(*args), want):
            np.testing.assert_allclose(np.asarray(got), w, rtol=1e-3, atol=1e-4)
        contestants[name] = (lambda fn=fn, args=args, lib=lib:
                             lib.block_until_ready(fn(*args)))
    return compare(contestants, rounds)


# -- batched matrix-vector product ---------------------------------------------------------------

N_MATRICES, SIZE = 1000, 64


def bench_batched_matvec(rounds: int) -> dict:
    rng = np.random.RandomState(0)
    ms = rng.randn(N_MATRICES, SIZE, SIZE).astype(np.float32)
    vs = rng.randn(N_MATRICES, SIZE).astype(np.float32)
    want = np.matmul(ms, vs[:, :, None])[:, :, 0]
    contestants = {"numpy": lambda: np.matmul(ms, vs[:, :, None])}
    for name, lib, jnp in _libraries():
        fn = lib.jit(lib.vmap(jnp.dot))
        args = lib.device_put((ms, vs))
        np.testing.assert_allclose(np.asarray(fn(*args)), want, rtol=1e-4, atol=1e-4)
        contestants[name] = (lambda fn=fn, args=args, lib=lib:
                             lib.block_until_ready(fn(*args)))
    return compare(contestants, rounds)


def benchmarks(rounds: int) -> list:
    """(name, run, bar) rows in run.py's format."""
    return [
        ("per-example grads, vmap(grad), 10k x 16-32", lambda: bench_per_example_grads(rounds),
         1.3),
        ("batched matvec, vmap(dot), 1000 x 64x64", lambda: bench_batched_matvec(rounds), 1.3),
    ]


if __name__ == "__main__":
    run_alone(benchmarks, __doc__.splitlines()[0])
