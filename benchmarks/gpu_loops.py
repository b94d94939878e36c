"""Where a compiled loop's time goes on the GPU (issue 20): the cost of one more iteration of a
loop whose body is small (fixed costs: host round trips, submissions, allocations) and large
(those plus the body's kernels), against the body alone and against JAX, in one run.

    PYREE_PLATFORM=cuda python benchmarks/gpu_loops.py          # on the GPU machine
    python benchmarks/gpu_loops.py --scale 256                   # a smoke test on the CPU

Per-iteration cost = (time of 1 + N iterations - time of 1 iteration) / N, each a median of
calls that wait for their result.
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np

import pyree
import pyree.numpy as pjnp
from pyree import lax as plax
from run import per_call

try:
    import jax
    import jax.numpy as jjnp
    from jax import lax as jlax
except ImportError:   # pyree alone
    jax = None


def _median_time(fn, rounds: int = 3) -> float:
    return statistics.median(per_call(fn, 0.1) for _ in range(rounds))


def _wait(result):
    leaves = result if isinstance(result, (tuple, list)) else (result,)
    for leaf in leaves:
        leaf.block_until_ready()


def newton_fori(np_like, lax_like, lib, iterations: int):
    def f(a):
        return lax_like.fori_loop(0, iterations, lambda i, x: 0.5 * (x + a / x), a)
    return lib.jit(f)


def newton_while_with_previous(np_like, lax_like, lib, iterations: int):
    """A while loop whose body passes a carry on unchanged (``x, previous = new, x``)."""
    def f(a):
        def cond(state):
            i, x, previous = state
            return (i < iterations) & (np_like.max(np_like.abs(x - previous)) >= 0)
        def body(state):
            i, x, _ = state
            return i + 1, 0.5 * (x + a / x), x
        return lax_like.while_loop(cond, body, (0, a, a + 1.0))[1]
    return lib.jit(f)


def rnn_scan(np_like, lax_like, lib, steps: int, precision):
    def f(w_in, w_h, xs):
        def step(h, x):
            h = np_like.tanh(np_like.matmul(x, w_in, precision=precision)
                             + np_like.matmul(h, w_h, precision=precision))
            return h, h.sum()
        h0 = np_like.zeros((xs.shape[1], w_h.shape[0]), xs.dtype)
        return lax_like.scan(step, h0, xs[:steps])
    return lib.jit(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--no-jax", action="store_true")
    args = parser.parse_args()
    libraries = [("pyree", pjnp, plax, pyree)]
    if jax is not None and not args.no_jax:
        libraries.append(("jax", jjnp, jlax, jax))
    rng = np.random.default_rng(0)
    from pyree.runtime.device import cuda_pool_kept
    print(f"pyree on {pyree.devices()[0]}; "
          f"cuda_pool_keep_bytes={pyree.config.cuda_pool_keep_bytes}, kept: {cuda_pool_kept}")
    n_extra = 10
    for size in (1 << 10, (1 << 24) // args.scale):
        a = rng.uniform(1, 100, size).astype(np.float32)
        for name, np_like, lax_like, lib in libraries:
            x = lib.device_put(a)
            for make in (newton_fori, newton_while_with_previous):
                once, more = make(np_like, lax_like, lib, 1), make(np_like, lax_like, lib,
                                                                  1 + n_extra)
                t1 = _median_time(lambda: _wait(once(x)))
                tn = _median_time(lambda: _wait(more(x)))
                print(f"{name:6s} {make.__name__:27s} {size:>9d} floats: one iteration "
                      f"{t1 * 1e6:9.1f} us, each more {(tn - t1) / n_extra * 1e6:9.1f} us")
    for hidden, batch, precision in ((64, 8, None), (64, 8, "highest"),
                                    (1024 // min(args.scale, 16), 64, None),
                                    (1024 // min(args.scale, 16), 64, "highest")):
        w_in = (rng.normal(size=(256, hidden)) / 16).astype(np.float32)
        w_h = (rng.normal(size=(hidden, hidden)) / np.sqrt(hidden)).astype(np.float32)
        xs = rng.normal(size=(101, batch, 256)).astype(np.float32)
        for name, np_like, lax_like, lib in libraries:
            ops = [lib.device_put(v) for v in (w_in, w_h, xs)]
            once = rnn_scan(np_like, lax_like, lib, 1, precision)
            more = rnn_scan(np_like, lax_like, lib, 101, precision)
            t1 = _median_time(lambda: _wait(once(*ops)))
            tn = _median_time(lambda: _wait(more(*ops)))
            print(f"{name:6s} scan RNN hidden {hidden:4d} batch {batch:3d} precision "
                  f"{precision or 'default':8s}: one step {t1 * 1e6:9.1f} us, each more "
                  f"{(tn - t1) / 100 * 1e6:9.1f} us")


if __name__ == "__main__":
    main()
