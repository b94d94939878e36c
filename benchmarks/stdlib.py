"""The stdlib's heavier functions, pyree against JAX and NumPy: sort, gather and scatter-add,
2-D convolution, cumulative sum, batched linear solves, einsum, FFTs; and random.normal.

    python benchmarks/stdlib.py             # these benchmarks alone (not part of run.py)

Every function is jitted; times are per call, waiting for the result (``compare`` of run.py:
warm-up, contestants interleaved over rounds, median). All contestants get the same NumPy
inputs and their results are checked against NumPy's first. Only random.normal has a bar
(issue 7: 1.5 x JAX); the others show 0.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import compare, jax, run_alone  # noqa: E402  (jax is None when it is not installed)


def _libraries():
    """(name, library module, numpy module, lax module) of each contestant."""
    import pyree.numpy
    from pyree import lax
    libs = [("pyree", pyree, pyree.numpy, lax)]
    if jax is not None:
        libs.append(("jax", jax, jax.numpy, jax.lax))
    return libs


def _bench(make, args: tuple, numpy_fn, rounds: int, rtol: float = 1e-4,
           atol: float = 1e-4) -> dict:
    """``make(lib, jnp, lax)`` builds the function each library runs on ``args``."""
    want = numpy_fn(*args)
    contestants = {"numpy": lambda: numpy_fn(*args)}
    for name, lib, jnp, lax in _libraries():
        fn = lib.jit(make(lib, jnp, lax))
        dev_args = lib.device_put(args)
        np.testing.assert_allclose(np.asarray(fn(*dev_args)), want, rtol=rtol, atol=atol)
        contestants[name] = (lambda fn=fn, a=dev_args, lib=lib: lib.block_until_ready(fn(*a)))
    return compare(contestants, rounds)


RNG = np.random.RandomState(0)


def bench_sort(rounds: int, n: int) -> dict:
    x = RNG.randn(n).astype(np.float32)
    return _bench(lambda lib, jnp, lax: jnp.sort, (x,), np.sort, rounds)


def bench_gather(rounds: int) -> dict:
    x = RNG.randn(1_000_000).astype(np.float32)
    idx = RNG.randint(0, x.size, 100_000).astype(np.int32)
    return _bench(lambda lib, jnp, lax: lambda x, i: x[i], (x, idx), lambda x, i: x[i], rounds)


def bench_scatter_add(rounds: int) -> dict:
    x = np.zeros(100_000, np.float32)
    idx = RNG.randint(0, x.size, 1_000_000).astype(np.int32)
    v = RNG.rand(idx.size).astype(np.float32)

    def numpy_fn(x, i, v):
        out = x.copy()
        np.add.at(out, i, v)
        return out
    return _bench(lambda lib, jnp, lax: lambda x, i, v: x.at[i].add(v), (x, idx, v), numpy_fn,
                  rounds, rtol=1e-3, atol=1e-3)


def bench_conv(rounds: int) -> dict:
    images = RNG.randn(8, 64, 64, 16).astype(np.float32)
    kernel = RNG.randn(3, 3, 16, 32).astype(np.float32) / 12

    def numpy_fn(img, ker):
        padded = np.pad(img, ((0, 0), (1, 1), (1, 1), (0, 0)))
        out = np.zeros(img.shape[:3] + (ker.shape[3],), np.float32)
        for i in range(3):
            for j in range(3):
                out += padded[:, i:i + 64, j:j + 64, :] @ ker[i, j]
        return out

    def make(lib, jnp, lax):
        return lambda img, ker: lax.conv_general_dilated(
            img, ker, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    return _bench(make, (images, kernel), numpy_fn, rounds, rtol=1e-3, atol=1e-3)


def bench_cumsum(rounds: int) -> dict:
    x = RNG.rand(1_000_000).astype(np.float32)
    return _bench(lambda lib, jnp, lax: jnp.cumsum, (x,), np.cumsum, rounds, rtol=1e-3, atol=1e-1)


def bench_solve(rounds: int) -> dict:
    a = RNG.randn(100, 64, 64).astype(np.float32) + 8 * np.eye(64, dtype=np.float32)
    b = RNG.randn(100, 64, 1).astype(np.float32)
    return _bench(lambda lib, jnp, lax: jnp.linalg.solve, (a, b), np.linalg.solve, rounds,
                  rtol=1e-3, atol=1e-4)


def bench_einsum(rounds: int) -> dict:
    a = RNG.randn(64, 128, 64).astype(np.float32)
    b = RNG.randn(64, 64, 128).astype(np.float32)

    def numpy_fn(a, b):
        return np.einsum("bij,bjk->bik", a, b)
    return _bench(lambda lib, jnp, lax: lambda a, b: jnp.einsum("bij,bjk->bik", a, b), (a, b),
                  numpy_fn, rounds, rtol=1e-3, atol=1e-3)


def bench_fft(rounds: int, real: bool) -> dict:
    """64 transforms of 4096 points (pyree: two passes of 64-point DFTs as real matrix
    products); NumPy's pocketfft computes complex64 and float32 input in single precision."""
    shape = (64, 4096)
    if real:
        x = RNG.randn(*shape).astype(np.float32)
        return _bench(lambda lib, jnp, lax: jnp.fft.rfft, (x,), np.fft.rfft, rounds,
                      rtol=1e-3, atol=1e-2)
    x = (RNG.randn(*shape) + 1j * RNG.randn(*shape)).astype(np.complex64)
    return _bench(lambda lib, jnp, lax: jnp.fft.fft, (x,), np.fft.fft, rounds, rtol=1e-3,
                  atol=1e-2)


def bench_random_normal(rounds: int) -> dict:
    """random.normal(key, (1000, 1000)) jitted; NumPy's Generator.standard_normal for scale.
    pyree's values are checked against JAX's (same key: the same bits)."""
    gen = np.random.default_rng(0)
    contestants = {"numpy": lambda: gen.standard_normal((1000, 1000), dtype=np.float32)}
    results = {}
    for name, lib, jnp, lax in _libraries():
        fn = lib.jit(lambda k, lib=lib: lib.random.normal(k, (1000, 1000)))
        key = lib.random.PRNGKey(0)
        results[name] = np.asarray(fn(key))
        contestants[name] = (lambda fn=fn, k=key, lib=lib: lib.block_until_ready(fn(k)))
    if "jax" in results:
        np.testing.assert_array_equal(results["pyree"], results["jax"])
    return compare(contestants, rounds)


def benchmarks(rounds: int) -> list:
    """(name, run, bar) rows in run.py's format."""
    return [
        ("sort 10k f32", lambda: bench_sort(rounds, 10_000), 0),
        ("sort 1k f32", lambda: bench_sort(rounds, 1_000), 0),
        ("gather x[idx], 100k of 1M", lambda: bench_gather(rounds), 0),
        ("scatter-add .at[idx].add, 1M into 100k", lambda: bench_scatter_add(rounds), 0),
        ("conv 8x64x64x16 * 3x3x16x32 SAME", lambda: bench_conv(rounds), 0),
        ("cumsum 1M f32", lambda: bench_cumsum(rounds), 0),
        ("linalg.solve 100 x 64x64", lambda: bench_solve(rounds), 0),
        ("einsum bij,bjk->bik 64x128x64", lambda: bench_einsum(rounds), 0),
        ("fft.fft 64 x 4096 c64", lambda: bench_fft(rounds, real=False), 0),
        ("fft.rfft 64 x 4096 f32", lambda: bench_fft(rounds, real=True), 0),
        ("random.normal(key, (1000, 1000))", lambda: bench_random_normal(rounds), 1.5),
    ]


if __name__ == "__main__":
    run_alone(benchmarks, __doc__.splitlines()[0])
