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
import signal
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


def bench_norm(rounds: int, eager: bool = False) -> dict:
    x = np.random.RandomState(0).randn(10000, 10).astype(np.float32)
    norm = make_norm()
    fp = norm if eager else pyree.jit(norm)
    xp = pyree.device_put(x)
    contestants = {"pyree": lambda: fp(xp).block_until_ready()}
    if jax is not None:
        fj = norm if eager else jax.jit(norm)
        xj = jax.device_put(x)
        contestants["jax"] = lambda: fj(xj).block_until_ready()
    contestants["numpy"] = lambda: norm(x)
    np.testing.assert_allclose(np.asarray(fp(xp)), norm(x), rtol=1e-4, atol=1e-5)
    if eager:
        # Its mean, std and broadcasting operations compile once hot, in processes of their
        # own (jit.compiled_when_hot): measure after those (JAX's compile at its first call),
        # and keep them from running beside the rows measured next.
        from pyree.transpiler.programs.jit import HOT_CALLS, finish_hot_compiles
        for _ in range(3 * HOT_CALLS):
            fp(xp).block_until_ready()
            finish_hot_compiles()
    return compare(contestants, rounds)


def bench_cross_entropy(rounds: int, by_hand: bool = False) -> dict:
    """Issue 21's mean log-softmax cross-entropy of 4096 x 1000 logits with int labels; with
    ``by_hand`` the log-softmax written out (its shifted logits read twice)."""
    rng = np.random.RandomState(0)
    logits = (3 * rng.randn(4096, 1000)).astype(np.float32)
    labels = rng.randint(0, 1000, 4096).astype(np.int32)

    def make(lib):
        def log_softmax(x):
            if not by_hand:
                return lib.nn.log_softmax(x)
            shifted = x - x.max(axis=1, keepdims=True)
            return shifted - lib.numpy.log(lib.numpy.exp(shifted).sum(axis=1, keepdims=True))

        def loss(logits, labels):
            logp = log_softmax(logits)
            return -lib.numpy.take_along_axis(logp, labels[:, None], axis=1).mean()
        return lib.jit(loss)
    return _contest(make, (logits, labels), rounds, rtol=1e-5, atol=1e-5)


# (name, lhs shape, rhs shape, whether the lhs is given transposed): the square product, and
# the products of an MLP's training step (784-512-10, batch 128): the forward layers, the
# backward pass's g @ w.T, and the weight gradient x.T @ g; and a wider layer (1024 units).
MATMUL_CASES = (
    ("1000x1000", (1000, 1000), (1000, 1000), False),
    ("128x784 @ 784x512", (128, 784), (784, 512), False),
    ("128x1024 @ 1024x1024", (128, 1024), (1024, 1024), False),
    ("128x512 @ 512x10", (128, 512), (512, 10), False),
    ("x.T @ g, 784x128 @ 128x512", (128, 784), (128, 512), True),
)


def bench_matmul(rounds: int, case: tuple = MATMUL_CASES[0]) -> dict:
    _, lhs_shape, rhs_shape, transposed = case
    rng = np.random.RandomState(0)
    a = rng.randn(*lhs_shape).astype(np.float32)
    b = rng.randn(*rhs_shape).astype(np.float32)
    product = (lambda a, b: a.T @ b) if transposed else (lambda a, b: a @ b)
    fp = pyree.jit(product)
    ap, bp = pyree.device_put(a), pyree.device_put(b)
    contestants = {"pyree": lambda: fp(ap, bp).block_until_ready()}
    if jax is not None:
        fj = jax.jit(product)
        aj, bj = jax.device_put(a), jax.device_put(b)
        contestants["jax"] = lambda: fj(aj, bj).block_until_ready()
    contestants["numpy"] = lambda: product(a, b)
    np.testing.assert_allclose(np.asarray(fp(ap, bp)), product(a, b), rtol=1e-3, atol=1e-3)
    return compare(contestants, max(3, rounds // 2) if lhs_shape[0] >= 1000 else rounds)


# -- convolutions (issue 21) ---------------------------------------------------------------------

# (name, lhs shape, rhs shape, strides, dimension numbers): 3x3 kernels, SAME padding.
CONV_CASES = (
    ("NCHW 8x32x64x64, 64 3x3", (8, 32, 64, 64), (64, 32, 3, 3), (1, 1),
     ("NCHW", "OIHW", "NCHW")),
    ("NCHW 32x64x8x8, 128 3x3", (32, 64, 8, 8), (128, 64, 3, 3), (1, 1),
     ("NCHW", "OIHW", "NCHW")),
    ("NHWC 8x64x64x32, 64 3x3", (8, 64, 64, 32), (3, 3, 32, 64), (1, 1),
     ("NHWC", "HWIO", "NHWC")),
    ("NHWC 8x64x64x32, 64 3x3, stride 2", (8, 64, 64, 32), (3, 3, 32, 64), (2, 2),
     ("NHWC", "HWIO", "NHWC")),
)


def _contest(make, args, rounds: int, rtol: float = 1e-3, atol: float = 1e-3,
             scale_atol: float = 0.0) -> dict:
    """pyree's and JAX's jitted ``make(lib)`` on the same NumPy ``args``, checked against each
    other (within ``rtol``, and ``atol`` plus ``scale_atol`` times the largest magnitude of the
    result: a sum of thousands of products is checked against its scale), then timed
    interleaved."""
    libs = [("pyree", pyree)] + ([("jax", jax)] if jax is not None else [])
    contestants, results = {}, {}
    for name, lib in libs:
        fn = make(lib)
        dev_args = lib.device_put(args)
        contestants[name] = (lambda fn=fn, a=dev_args, lib=lib:
                             lib.block_until_ready(fn(*a)))
        results[name] = fn(*dev_args)
    if "jax" in results:
        for got, want in zip(pyree.tree_util.tree_leaves(results["pyree"]),
                             jax.tree_util.tree_leaves(results["jax"])):
            want = np.asarray(want)
            np.testing.assert_allclose(np.asarray(got), want, rtol=rtol,
                                       atol=atol + scale_atol * float(np.abs(want).max()))
    return compare(contestants, rounds)


def bench_conv(rounds: int, case: tuple, grad: bool = False) -> dict:
    """One ``lax.conv_general_dilated`` (SAME padding), or the gradient of the sum of its
    squared outputs with respect to both operands (two more convolutions)."""
    _, lhs_shape, rhs_shape, strides, numbers = case
    rng = np.random.RandomState(0)
    args = (rng.randn(*lhs_shape).astype(np.float32),
            rng.randn(*rhs_shape).astype(np.float32) / np.sqrt(np.prod(rhs_shape[1:])))

    def make(lib):
        def conv(x, w):
            return lib.lax.conv_general_dilated(x, w, strides, "SAME",
                                                dimension_numbers=numbers)
        if grad:
            return lib.jit(lib.grad(lambda x, w: (conv(x, w) ** 2).sum(), argnums=(0, 1)))
        return lib.jit(conv)
    return _contest(make, args, max(3, rounds // 2), rtol=2e-3 if grad else 1e-3,
                    scale_atol=2e-5)


# A small CNN on 28x28 single-channel images, NHWC: conv 3x3x32 + ReLU, 2x2 max pooling,
# conv 3x3x64 + ReLU, 2x2 average pooling, dense 3136 -> 10; mean softmax cross-entropy, SGD.
CNN_BATCH = 64


def make_cnn_step(lib):
    jnp, nn = lib.numpy, lib.nn

    def loss_fn(params, x, labels):
        w1, w2, w3, b3 = params
        numbers = ("NHWC", "HWIO", "NHWC")
        h = nn.relu(lib.lax.conv_general_dilated(x, w1, (1, 1), "SAME",
                                                 dimension_numbers=numbers))
        n, hh, ww, c = h.shape
        h = h.reshape(n, hh // 2, 2, ww // 2, 2, c).max(axis=(2, 4))
        h = nn.relu(lib.lax.conv_general_dilated(h, w2, (1, 1), "SAME",
                                                 dimension_numbers=numbers))
        n, hh, ww, c = h.shape
        h = h.reshape(n, hh // 2, 2, ww // 2, 2, c).mean(axis=(2, 4))
        logits = h.reshape(n, -1) @ w3 + b3
        return -jnp.mean(jnp.sum(nn.one_hot(labels, 10) * nn.log_softmax(logits), axis=-1))

    def step(params, x, labels):
        loss, grads = lib.value_and_grad(loss_fn)(params, x, labels)
        return [p - 0.01 * g for p, g in zip(params, grads)], loss

    return lib.jit(step)


def bench_cnn_step(rounds: int) -> dict:
    rng = np.random.RandomState(0)
    params = [rng.randn(3, 3, 1, 32).astype(np.float32) / 3,
              rng.randn(3, 3, 32, 64).astype(np.float32) / np.sqrt(9 * 32),
              rng.randn(7 * 7 * 64, 10).astype(np.float32) / np.sqrt(7 * 7 * 64),
              np.zeros(10, np.float32)]
    x = rng.rand(CNN_BATCH, 28, 28, 1).astype(np.float32)
    labels = rng.randint(0, 10, CNN_BATCH).astype(np.int32)
    return _contest(make_cnn_step, (params, x, labels), rounds, rtol=1e-3, atol=1e-4)


def conv_benchmarks(rounds: int) -> list:
    """(name, run, bar) rows of the convolution workloads."""
    rows = [(f"conv {case[0]}", lambda case=case: bench_conv(rounds, case), 1.2)
            for case in CONV_CASES]
    rows += [(f"conv grad {case[0]}", lambda case=case: bench_conv(rounds, case, grad=True), 1.2)
             for case in (CONV_CASES[0], CONV_CASES[2])]
    rows.append((f"CNN SGD step (conv+pool+dense), batch {CNN_BATCH}",
                 lambda: bench_cnn_step(rounds), 1.2))
    return rows


# -- sorting (issue 21) ----------------------------------------------------------------------------

SORT_SIZES = (1_000, 100_000, 10_000_000)


def bench_sort(rounds: int, what: str, n: int, eager: bool = False) -> dict:
    """``jnp.sort``, ``jnp.argsort`` or ``jnp.cumsum(jnp.sort(x))`` of ``n`` standard normal
    float32, jitted (or eager: op by op), pyree and JAX on the same data; sorts must agree
    exactly."""
    x = np.random.RandomState(0).randn(n).astype(np.float32)

    def make(lib):
        jnp = lib.numpy
        fn = {"sort": jnp.sort, "argsort": jnp.argsort,
              "cumsum(sort)": lambda x: jnp.cumsum(jnp.sort(x))}[what]
        return fn if eager else lib.jit(fn)
    exact = what != "cumsum(sort)"
    return _contest(make, (x,), max(3, rounds // 2) if n >= 1_000_000 else rounds,
                    rtol=0 if exact else 1e-5, atol=0 if exact else 1e-3 * np.sqrt(n))


def sort_benchmarks(rounds: int) -> list:
    """(name, run, bar) rows of the sorting workloads: a 3-size sweep of sort and argsort, the
    issue's cumsum(sort) of 100k floats, jitted and eager."""
    rows = []
    for what in ("sort", "argsort"):
        for n in SORT_SIZES:
            rows.append((f"jnp.{what} {n:,} f32, jit",
                         lambda what=what, n=n: bench_sort(rounds, what, n), 1.0))
    for eager in (False, True):
        rows.append((f"jnp.cumsum(jnp.sort(x)) 100,000 f32, {'eager' if eager else 'jit'}",
                     lambda eager=eager: bench_sort(rounds, "cumsum(sort)", 100_000, eager), 1.0))
    rows.append(("jnp.sort 100,000 f32, eager",
                 lambda: bench_sort(rounds, "sort", 100_000, eager=True), 1.0))
    for n, k in ((1_000, 8), (100_000, 8), (100_000, 100), (10_000_000, 4)):
        rows.append((f"lax.top_k {n:,} f32, k={k}, jit",
                     lambda n=n, k=k: bench_top_k(rounds, n, k), 1.0))
    rows.append(("jnp.unique 1,000 int32 (size=1000), jit", lambda: bench_unique(rounds), 1.0))
    return rows


def bench_top_k(rounds: int, n: int, k: int) -> dict:
    """``lax.top_k`` of ``n`` standard normal float32 (values and indices must agree exactly)."""
    x = np.random.RandomState(0).randn(n).astype(np.float32)
    return _contest(lambda lib: lib.jit(lambda x: lib.lax.top_k(x, k)), (x,),
                    max(3, rounds // 2) if n >= 1_000_000 else rounds, rtol=0, atol=0)


def loop_benchmarks(rounds: int) -> list:
    """(name, run, bar) rows of compiled loops: issue 21's unbatched tanh RNN (a matrix-vector
    product per step) and a Newton iteration in a while loop keeping its previous iterate."""
    return [("lax.scan tanh RNN, 100 steps, hidden 256, input 64",
             lambda: bench_rnn_scan(rounds), 1.0),
            ("lax.scan tanh RNN, 100 steps, hidden 256, W @ h form",
             lambda: bench_rnn_scan(rounds, matrix_first=True), 1.0),
            ("while_loop Newton sqrt, 10,000 f32 (x, previous)",
             lambda: bench_newton_while(rounds, 10_000), 1.0),
            ("while_loop Newton sqrt, 1,000,000 f32 (x, previous)",
             lambda: bench_newton_while(rounds, 1_000_000), 1.0)]


def bench_rnn_scan(rounds: int, matrix_first: bool = False) -> dict:
    """The unbatched tanh RNN; ``matrix_first``: written ``w_h @ h`` (a matrix-vector
    product each step) instead of ``h @ w_h``."""
    rng = np.random.RandomState(0)
    w_x = (rng.randn(64, 256) / 8).astype(np.float32)
    w_h = (rng.randn(256, 256) / 16).astype(np.float32)
    xs = rng.randn(100, 64).astype(np.float32)

    def make(lib):
        def run(w_x, w_h, xs):
            def step(h, x):
                recurrent = w_h @ h if matrix_first else h @ w_h
                return (lib.numpy.tanh(x @ w_x + recurrent),) * 2
            return lib.lax.scan(step, lib.numpy.zeros(256, np.float32), xs)
        return lib.jit(run)
    return _contest(make, (w_x, w_h, xs), rounds, rtol=1e-4, atol=1e-5)


def bench_newton_while(rounds: int, n: int) -> dict:
    a = np.random.RandomState(0).uniform(1, 100, n).astype(np.float32)

    def make(lib):
        np_like = lib.numpy

        def run(a):
            def cond(state):
                x, previous = state
                return np_like.max(np_like.abs(x - previous)) > 1e-6 * np_like.max(x)
            return lib.lax.while_loop(cond, lambda s: (0.5 * (s[0] + a / s[0]), s[0]),
                                      (a, a + 1.0))[0]
        return lib.jit(run)
    return _contest(make, (a,), rounds, rtol=1e-5, atol=0)


def bench_unique(rounds: int) -> dict:
    """``jnp.unique`` of 1000 integers in [0, 300), with a static ``size`` (jit needs one)."""
    x = np.random.RandomState(0).randint(0, 300, 1000).astype(np.int32)
    return _contest(lambda lib: lib.jit(lambda x: lib.numpy.unique(x, size=1000, fill_value=0)),
                    (x,), rounds, rtol=0, atol=0)


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


def end_background_warmups(cache: str) -> None:
    """End the eager warm-up a first compile started in the background for ``cache``
    (transpiler/backend/eager_warmup.py): it outlives the process that started it and, left running
    into a deleted cache directory, kept both cores busy for minutes, slowing what was
    measured next (NumPy's SELU 5 -> 17 ms). Linux only (it reads /proc)."""
    wanted = f"PYREE_CACHE_DIR={cache}".encode()
    for pid in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"eager_warmup" not in f.read():
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if wanted in f.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGTERM)
        except OSError:   # (it ended meanwhile)
            pass


def bench_first_call(rounds: int) -> dict:
    """First call of a jitted SELU in a new process: pyree with an empty and with a warm disk
    cache, JAX as it comes (its persistent cache is off by default)."""
    cold, warm, jax_times = [], [], []
    for _ in range(max(3, rounds // 2)):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, PYREE_CACHE_DIR=cache)
            cold.append(first_call("pyree", env))
            warm.append(first_call("pyree", env))
            end_background_warmups(cache)
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
    parser.add_argument("--only", help="run the benchmarks whose name contains this")
    args = parser.parse_args()

    print(f"pyree {pyree.__version__}; JAX {jax.__version__ if jax else 'not installed'}; "
          f"NumPy {np.__version__}; {os.cpu_count()} CPUs")
    benchmarks = [
        ("dispatch (trivial jitted call)", lambda: bench_dispatch(args.rounds), 1.5),
        ("SELU 1M f32, jit", lambda: bench_selu(args.rounds, eager=False), 1.2),
        ("SELU 1M f32, eager", lambda: bench_selu(args.rounds, eager=True), 2.0),
        ("(X - X.mean(0)) / X.std(0), 10000x10", lambda: bench_norm(args.rounds), 1.2),
        ("(X - X.mean(0)) / X.std(0), 10000x10, eager",
         lambda: bench_norm(args.rounds, eager=True), 1.2),
    ]
    # (issue 21: the square product within 1.2x JAX, an MLP's products at or below 1.0x)
    benchmarks += [(f"matmul {case[0]} f32", lambda case=case: bench_matmul(args.rounds, case),
                    1.2 if case[1][0] >= 1000 else 1.0) for case in MATMUL_CASES]
    benchmarks += [
        ("log-softmax cross-entropy 4096x1000, int labels",
         lambda: bench_cross_entropy(args.rounds), 1.2),
        ("log-softmax cross-entropy 4096x1000, log-softmax by hand",
         lambda: bench_cross_entropy(args.rounds, by_hand=True), 1.2),
    ]
    benchmarks += conv_benchmarks(args.rounds)
    benchmarks += sort_benchmarks(args.rounds)
    benchmarks += loop_benchmarks(args.rounds)
    from ad import benchmarks as ad_benchmarks  # gradients: benchmarks/ad.py (imports this file)
    benchmarks += ad_benchmarks(args.rounds)
    from vmap import benchmarks as vmap_benchmarks  # benchmarks/vmap.py
    benchmarks += vmap_benchmarks(args.rounds)
    from runtime import benchmarks as runtime_benchmarks  # benchmarks/runtime.py
    benchmarks += runtime_benchmarks(args.rounds)
    rows, results = [], {}
    for name, run, bar in benchmarks:
        if args.only and args.only not in name:
            continue
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
