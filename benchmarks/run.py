"""pyree against JAX and NumPy, in one run, on this machine.

    python benchmarks/run.py            # all benchmarks (JAX is optional: pip install .[bench])
    python benchmarks/run.py --rounds 9
    python benchmarks/ad.py             # only the gradient benchmarks (MLP step, scan RNN)
    python benchmarks/vmap.py           # only the vmap benchmarks (per-example grads, matvec)
    python benchmarks/runtime.py        # only the runtime benchmarks (async dispatch, small calls)

Each benchmark alternates the contestants over several rounds and reports the median round,
so that a noisy machine hurts all of them alike. Times are per call, waiting for the result
(``block_until_ready``), except dispatch, which is the cost of queueing one call in a stream of
calls (as JAX's asynchronous dispatch is measured). Ratios are pyree / JAX: below 1 is faster.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import Callable

import numpy as np

try:
    import jax
    import jax.numpy as jjnp
except ImportError:  # JAX is an optional dependency of the benchmarks
    jax = None

import pyree
import pyree.numpy as pjnp


def per_call(fn, min_time: float = 0.1) -> float:
    """Seconds per call of ``fn``, over enough calls to last ``min_time``."""
    fn()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time:
            return elapsed / n
        n *= 2 if elapsed > min_time / 10 else 10


def compare(contestants: dict, rounds: int) -> dict:
    """Median over rounds of each contestant's time per call, contestants interleaved."""
    samples = {name: [] for name in contestants}
    for fn in contestants.values():  # warm up: compile, fill allocator caches, wake threads
        per_call(fn, min_time=0.3)
    for _ in range(rounds):
        for name, fn in contestants.items():
            samples[name].append(per_call(fn))
    return {name: statistics.median(times) for name, times in samples.items()}


def selu_numpy(x, alpha=1.67, lmbda=1.05):
    return lmbda * np.where(x > 0, x, alpha * np.exp(x) - alpha)


def make_selu(np_like):
    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * np_like.where(x > 0, x, alpha * np_like.exp(x) - alpha)
    return selu


def make_norm():
    def norm(x):
        return (x - x.mean(0)) / x.std(0)
    return norm


def bench_dispatch(rounds: int) -> dict:
    x_p = pyree.device_put(np.ones(4, np.float32))
    f_p = pyree.jit(lambda x: x + 1)

    def stream(f, x, block, n=200):
        def run():
            y = None
            for _ in range(n):
                y = f(x)
            block(y)
        return run, n

    run_p, n = stream(f_p, x_p, lambda y: y.block_until_ready())
    contestants = {"pyree": run_p}
    if jax is not None:
        x_j = jax.device_put(np.ones(4, np.float32))
        f_j = jax.jit(lambda x: x + 1)
        contestants["jax"] = stream(f_j, x_j, lambda y: y.block_until_ready())[0]
    result = compare(contestants, rounds)
    return {k: v / n for k, v in result.items()}


def bench_selu(rounds: int, eager: bool) -> dict:
    x = np.random.RandomState(0).randn(1_000_000).astype(np.float32)
    selu_p = make_selu(pjnp)
    fp = selu_p if eager else pyree.jit(selu_p)
    xp = pyree.device_put(x)
    contestants = {"pyree": lambda: fp(xp).block_until_ready()}
    if jax is not None:
        selu_j = make_selu(jjnp)
        fj = selu_j if eager else jax.jit(selu_j)
        xj = jax.device_put(x)
        contestants["jax"] = lambda: fj(xj).block_until_ready()
    contestants["numpy"] = lambda: selu_numpy(x)
    check = np.asarray(fp(xp))
    np.testing.assert_allclose(check, selu_numpy(x), rtol=1e-5, atol=1e-6)
    return compare(contestants, rounds)


def bench_norm(rounds: int) -> dict:
    x = np.random.RandomState(0).randn(10000, 10).astype(np.float32)
    norm = make_norm()
    fp = pyree.jit(norm)
    xp = pyree.device_put(x)
    contestants = {"pyree": lambda: fp(xp).block_until_ready()}
    if jax is not None:
        fj = jax.jit(norm)
        xj = jax.device_put(x)
        contestants["jax"] = lambda: fj(xj).block_until_ready()
    contestants["numpy"] = lambda: norm(x)
    np.testing.assert_allclose(np.asarray(fp(xp)), norm(x), rtol=1e-4, atol=1e-5)
    return compare(contestants, rounds)


def bench_matmul(rounds: int) -> dict:
    rng = np.random.RandomState(0)
    a = rng.randn(1000, 1000).astype(np.float32)
    b = rng.randn(1000, 1000).astype(np.float32)
    fp = pyree.jit(lambda a, b: a @ b)
    ap, bp = pyree.device_put(a), pyree.device_put(b)
    contestants = {"pyree": lambda: fp(ap, bp).block_until_ready()}
    if jax is not None:
        fj = jax.jit(lambda a, b: a @ b)
        aj, bj = jax.device_put(a), jax.device_put(b)
        contestants["jax"] = lambda: fj(aj, bj).block_until_ready()
    contestants["numpy"] = lambda: a @ b
    np.testing.assert_allclose(np.asarray(fp(ap, bp)), a @ b, rtol=1e-3, atol=1e-3)
    return compare(contestants, max(3, rounds // 2))


FIRST_CALL = textwrap.dedent("""
    import sys, time
    import numpy as np
    lib = sys.argv[1]
    if lib == "pyree":
        import pyree as jax, pyree.numpy as jnp
        jax.jit  # finish the lazy import before the clock starts
    else:
        import jax, jax.numpy as jnp
    x = np.random.RandomState(0).randn(1000).astype(np.float32)

    def selu(x, alpha=1.67, lmbda=1.05):
        return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    start = time.perf_counter()
    jax.jit(selu)(x).block_until_ready()
    print(time.perf_counter() - start)
""")


def first_call(lib: str, env: dict) -> float:
    proc = subprocess.run([sys.executable, "-c", FIRST_CALL, lib], env=env, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr)
    return float(proc.stdout.strip().splitlines()[-1])


def bench_first_call(rounds: int) -> dict:
    """First call of a jitted SELU in a new process: pyree with an empty and with a warm disk
    cache, JAX as it comes (its persistent cache is off by default)."""
    cold, warm, jax_times = [], [], []
    for _ in range(max(3, rounds // 2)):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, PYREE_CACHE_DIR=cache)
            cold.append(first_call("pyree", env))
            warm.append(first_call("pyree", env))
        if jax is not None:
            jax_times.append(first_call("jax", dict(os.environ)))
    result = {"pyree cold cache": statistics.median(cold),
              "pyree warm cache": statistics.median(warm)}
    if jax_times:
        result["jax"] = statistics.median(jax_times)
    return result


class Share(float):
    """A result that is a fraction of something (printed as a percentage), not seconds."""


def fmt(seconds: float) -> str:
    if isinstance(seconds, Share):
        return f"{seconds * 100:9.2f} %"
    if seconds < 1e-3:
        return f"{seconds * 1e6:9.1f} us"
    return f"{seconds * 1e3:9.3f} ms"


def run_alone(benchmarks: Callable[[int], list], description: str) -> None:
    """The command line of a benchmark file run by itself (benchmarks/ad.py, vmap.py): its
    rows, each printed as soon as it is measured."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rounds", type=int, default=7, help="rounds per benchmark (median)")
    parser.add_argument("--only", help="run the benchmarks whose name contains this")
    args = parser.parse_args()
    print(f"pyree {pyree.__version__}; JAX {jax.__version__ if jax else 'not installed'}; "
          f"NumPy {np.__version__}; {os.cpu_count()} CPUs")
    print(f"{'benchmark':44s} {'pyree':>12s} {'JAX':>12s} {'NumPy':>12s} {'pyree/JAX':>10s} "
          f"{'bar':>5s}")
    for name, run, bar in benchmarks(args.rounds):
        if args.only and args.only not in name:
            continue
        times = run()
        ratio = f"{times['pyree'] / times['jax']:10.2f}" if "jax" in times else f"{'-':>10s}"
        jax_t = fmt(times["jax"]) if "jax" in times else "-"
        np_t = fmt(times["numpy"]) if "numpy" in times else "-"
        print(f"{name:44s} {fmt(times['pyree']):>12s} {jax_t:>12s} {np_t:>12s} {ratio} "
              f"{bar:5.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds per benchmark (median)")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()

    print(f"pyree {pyree.__version__}; JAX {jax.__version__ if jax else 'not installed'}; "
          f"NumPy {np.__version__}; {os.cpu_count()} CPUs")
    benchmarks = [
        ("dispatch (trivial jitted call)", lambda: bench_dispatch(args.rounds), 1.5),
        ("SELU 1M f32, jit", lambda: bench_selu(args.rounds, eager=False), 1.2),
        ("SELU 1M f32, eager", lambda: bench_selu(args.rounds, eager=True), 2.0),
        ("(X - X.mean(0)) / X.std(0), 10000x10", lambda: bench_norm(args.rounds), 1.2),
        ("matmul 1000x1000 f32", lambda: bench_matmul(args.rounds), 1.5),
    ]
    from ad import benchmarks as ad_benchmarks  # gradients: benchmarks/ad.py (imports this file)
    benchmarks += ad_benchmarks(args.rounds)
    from vmap import benchmarks as vmap_benchmarks  # benchmarks/vmap.py
    benchmarks += vmap_benchmarks(args.rounds)
    from runtime import benchmarks as runtime_benchmarks  # benchmarks/runtime.py
    benchmarks += runtime_benchmarks(args.rounds)
    rows, results = [], {}
    for name, run, bar in benchmarks:
        times = run()
        results[name] = times
        ratio = times["pyree"] / times["jax"] if "jax" in times else None
        numpy_ratio = times["pyree"] / times["numpy"] if "numpy" in times else None
        rows.append((name, times, ratio, numpy_ratio, bar))
        print(f"  done: {name}", file=sys.stderr)
    first = bench_first_call(args.rounds)
    results["first call, new process"] = first

    print()
    print(f"{'benchmark':42s} {'pyree':>12s} {'JAX':>12s} {'NumPy':>12s} {'pyree/JAX':>10s} "
          f"{'bar':>5s} {'pyree/NumPy':>12s}")
    for name, times, ratio, numpy_ratio, bar in rows:
        jax_t = fmt(times["jax"]) if "jax" in times else "-"
        np_t = fmt(times["numpy"]) if "numpy" in times else "-"
        r = f"{ratio:10.2f}" if ratio is not None else f"{'-':>10s}"
        nr = f"{numpy_ratio:12.2f}" if numpy_ratio is not None else f"{'-':>12s}"
        print(f"{name:42s} {fmt(times['pyree']):>12s} {jax_t:>12s} {np_t:>12s} {r} {bar:5.1f} {nr}")
    jax_first = first.get("jax")
    for key, bar in (("pyree cold cache", None), ("pyree warm cache", 2.0)):
        r = f"{first[key] / jax_first:10.2f}" if jax_first else f"{'-':>10s}"
        b = f"{bar:5.1f}" if bar else f"{'':5s}"
        print(f"{'first call, new process, ' + key[6:]:42s} {fmt(first[key]):>12s} "
              f"{fmt(jax_first) if jax_first else '-':>12s} {'-':>12s} {r} {b} {'-':>12s}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    # The other benchmark files import this one as `run`: let them share this copy (its Share
    # class above all; a second copy's instances would print as seconds).
    sys.modules.setdefault("run", sys.modules[__name__])
    main()
