"""Gradients, pyree against JAX: a training step and a recurrent network's backward pass.

    python benchmarks/ad.py                 # these benchmarks alone
    python benchmarks/run.py                # everything, these included

* MLP SGD step: 784-512-10, batch 128, float32, ReLU, mean softmax cross-entropy;
  ``value_and_grad`` and the SGD update in one jitted function.
* RNN gradient: a tanh RNN (input 32, hidden 128, batch 32, 100 steps) written with
  ``lax.scan``; the gradient of the loss with respect to the weights, jitted. Two losses: the
  sum of the final state (the scan stacks only what the backward pass needs) and the sum of all
  hidden states (the scan also stacks its outputs).

Measured as in run.py (``compare``: warm-up, contestants interleaved over rounds, median);
times are per call, waiting for the result. Both contestants get the same NumPy inputs.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import _contest, compare, jax, run_alone  # noqa: E402  (jax: None if not installed)

import pyree  # noqa: E402

if jax is not None:
    import jax.nn  # noqa: E402


def _libraries():
    """(name, library module, nn module, numpy module, lax module) of each contestant."""
    import pyree.nn
    import pyree.numpy
    libs = [("pyree", pyree, pyree.nn, pyree.numpy, pyree.lax)]
    if jax is not None:
        libs.append(("jax", jax, jax.nn, jax.numpy, jax.lax))
    return libs


# -- MLP SGD step ---------------------------------------------------------------------------------

MLP_SIZES = (784, 512, 10)
MLP_BATCH = 128
LEARNING_RATE = 0.01


def make_mlp_loss(nn, jnp):
    """The MLP's mean softmax cross-entropy, written with ``nn`` and ``jnp`` of one library."""
    def loss_fn(params, x, labels):
        (w1, b1), (w2, b2) = params
        hidden = nn.relu(x @ w1 + b1)
        logits = hidden @ w2 + b2
        return -jnp.mean(jnp.sum(nn.one_hot(labels, MLP_SIZES[-1]) * nn.log_softmax(logits),
                                 axis=-1))
    return loss_fn


def make_mlp_step(lib, nn, jnp):
    loss_fn = make_mlp_loss(nn, jnp)

    def step(params, x, labels):
        loss, grads = lib.value_and_grad(loss_fn)(params, x, labels)
        new_params = lib.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
        return new_params, loss

    return lib.jit(step)


def mlp_inputs():
    rng = np.random.RandomState(0)
    params = [(rng.randn(n_in, n_out).astype(np.float32) * np.sqrt(2.0 / n_in),
               np.zeros(n_out, np.float32))
              for n_in, n_out in zip(MLP_SIZES[:-1], MLP_SIZES[1:])]
    x = rng.rand(MLP_BATCH, MLP_SIZES[0]).astype(np.float32)
    labels = rng.randint(0, MLP_SIZES[-1], MLP_BATCH).astype(np.int32)
    return params, x, labels


def bench_mlp_sgd(rounds: int) -> dict:
    params, x, labels = mlp_inputs()
    contestants, results = {}, {}
    for name, lib, nn, jnp, _ in _libraries():
        step = make_mlp_step(lib, nn, jnp)
        args = lib.device_put((params, x, labels))
        contestants[name] = (lambda step=step, args=args, lib=lib:
                             lib.block_until_ready(step(*args)))
        results[name] = step(*args)
    check_same_results(results)
    return compare(contestants, rounds)


def check_same_results(results: dict) -> None:
    """pyree's and JAX's results of the same step (pytrees) agree, when JAX ran."""
    if "jax" in results:
        for got, want in zip(pyree.tree_util.tree_leaves(results["pyree"]),
                             jax.tree_util.tree_leaves(results["jax"])):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-4, atol=2e-5)


# -- RNN gradient through lax.scan ---------------------------------------------------------------

RNN_INPUT, RNN_HIDDEN, RNN_BATCH, RNN_STEPS = 32, 128, 32, 100


def make_rnn_grad(lib, jnp, lax, loss: str):
    def run(params, xs):
        wx, wh, b = params

        def cell(h, x):
            h = jnp.tanh(x @ wx + h @ wh + b)
            return h, h

        h0 = jnp.zeros((xs.shape[1], wh.shape[0]), xs.dtype)
        if loss == "final":
            final, _ = lax.scan(lambda h, x: (cell(h, x)[0], None), h0, xs)
            return jnp.sum(final)
        _, hs = lax.scan(cell, h0, xs)
        return jnp.sum(hs)

    return lib.jit(lib.grad(run))


def rnn_inputs():
    rng = np.random.RandomState(0)
    params = (rng.randn(RNN_INPUT, RNN_HIDDEN).astype(np.float32) / np.sqrt(RNN_INPUT),
              rng.randn(RNN_HIDDEN, RNN_HIDDEN).astype(np.float32) / np.sqrt(RNN_HIDDEN),
              np.zeros(RNN_HIDDEN, np.float32))
    xs = rng.randn(RNN_STEPS, RNN_BATCH, RNN_INPUT).astype(np.float32)
    return params, xs


def bench_rnn_grad(rounds: int, loss: str) -> dict:
    params, xs = rnn_inputs()
    return _contest(lambda lib: make_rnn_grad(lib, lib.numpy, lib.lax, loss), (params, xs),
                    rounds)


def benchmarks(rounds: int) -> list:
    """(name, run, bar) rows in run.py's format."""
    return [
        ("MLP 784-512-10 SGD step, batch 128", lambda: bench_mlp_sgd(rounds), 1.3),
        ("RNN grad, scan 100x32x128, final state", lambda: bench_rnn_grad(rounds, "final"), 1.3),
        ("RNN grad, scan 100x32x128, all states", lambda: bench_rnn_grad(rounds, "all"), 1.3),
    ]


if __name__ == "__main__":
    run_alone(benchmarks, __doc__.splitlines()[0])
