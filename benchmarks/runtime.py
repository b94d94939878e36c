"""The runtime, pyree against JAX: asynchronous dispatch and the cost of small calls.

    python benchmarks/runtime.py            # these benchmarks alone
    python benchmarks/run.py                # everything, these included

* Return time of a 2000x2000 f32 matmul: how long a jitted call takes to return, as a fraction
  of the time until its result is ready (the issue's bar: under 5%). Reported as
  "return / ready" rows; the time column is the return time.
* A chain of 100 dependent small calls (``x = f(x)`` on 16 floats), waiting only at the end:
  the cost per call when results feed the next call without the host waiting.
* A small call waited for each time (``f(x).block_until_ready()``): the round trip.

Measured as in run.py (``compare``: warm-up, contestants interleaved over rounds, median).
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Share, compare, jax, run_alone  # noqa: E402  (jax is None when it is not installed)


def _libraries():
    """(name, library module) of each contestant."""
    import pyree
    libs = [("pyree", pyree)]
    if jax is not None:
        libs.append(("jax", jax))
    return libs


MATMUL_N = 2000


def bench_matmul_return(rounds: int) -> tuple[dict, dict]:
    """(median seconds for the call to return, median seconds until the result is ready)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((MATMUL_N, MATMUL_N), dtype=np.float32)
    calls = {}
    for name, lib in _libraries():
        f = lib.jit(lambda x, y: x @ y)
        x, y = lib.device_put(a), lib.device_put(a)
        f(x, y).block_until_ready()
        f(x, y).block_until_ready()
        calls[name] = (f, x, y)
    back = {name: [] for name in calls}
    done = {name: [] for name in calls}
    for _ in range(max(rounds, 5)):  # contestants interleaved, as in compare()
        for name, (f, x, y) in calls.items():
            start = time.perf_counter()
            out = f(x, y)
            back[name].append(time.perf_counter() - start)
            out.block_until_ready()
            done[name].append(time.perf_counter() - start)
    returned = {name: statistics.median(times) for name, times in back.items()}
    ready = {name: statistics.median(times) for name, times in done.items()}
    return returned, ready


def bench_chain(rounds: int, length: int = 100) -> dict:
    contestants = {}
    for name, lib in _libraries():
        f = lib.jit(lambda x: x * 0.5 + 1.0)
        x0 = lib.device_put(np.ones(16, np.float32))

        def run(f=f, x0=x0):
            x = x0
            for _ in range(length):
                x = f(x)
            x.block_until_ready()

        contestants[name] = run
    return {k: v / length for k, v in compare(contestants, rounds).items()}


def bench_small_call_waited(rounds: int) -> dict:
    contestants = {}
    for name, lib in _libraries():
        f = lib.jit(lambda x: x + 1.0)
        x = lib.device_put(np.ones(16, np.float32))
        contestants[name] = lambda f=f, x=x: f(x).block_until_ready()
    return compare(contestants, rounds)


def benchmarks(rounds: int) -> list:
    """(name, run, bar) rows, as in run.py; each run returns seconds per contestant."""
    cache: dict = {}

    def matmul(which: str):
        def run():
            if not cache:
                cache["returned"], cache["ready"] = bench_matmul_return(rounds)
            if which == "fraction":
                return {name: Share(cache["returned"][name] / cache["ready"][name])
                        for name in cache["ready"]}
            return dict(cache["returned"])
        return run

    return [
        ("2000x2000 matmul: call returns after", matmul("times"), 1.5),
        ("2000x2000 matmul: return / ready (pyree < 5%)", matmul("fraction"), 1.5),
        ("chain of 100 dependent small calls, per call", lambda: bench_chain(rounds), 1.0),
        ("small call, waited each time", lambda: bench_small_call_waited(rounds), 1.5),
    ]


if __name__ == "__main__":
    run_alone(benchmarks, __doc__.splitlines()[0])
