"""pyree against JAX on the same GPU, in one run (issue 20): the workloads of
``../shared/gpu/README.md``'s table, each checked to give the same values in both, with times,
TFLOP/s or GB/s and the ratio pyree / JAX.

    PYREE_PLATFORM=cuda python benchmarks/gpu.py            # on the GPU machine
    python benchmarks/gpu.py --scale 64 --only selu          # a smoke test on the CPU

``--scale N`` divides every problem's size by about N (the GPU sizes take minutes on a CPU).
Each time is the median over rounds of calls that wait for their result, after a warm-up
(GPU clocks ramp up under load), pyree and JAX alternating so that both see the same machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from typing import Callable, NamedTuple

import numpy as np

import pyree
import pyree.numpy as pjnp
from pyree import lax as plax
from run import per_call   # benchmarks/run.py: seconds per call over enough calls

try:
    import jax
    import jax.numpy as jjnp
    from jax import lax as jlax
except ImportError:  # JAX is an optional dependency of the benchmarks
    jax = None


class Workload(NamedTuple):
    name: str
    make: Callable[[int], tuple]               # scale -> host inputs
    program: Callable[[object, object], Callable]   # (numpy-like, lax-like) -> function
    jit: bool                                  # jitted (else eager op by op)
    work: Callable[[tuple], tuple[float, str]]  # inputs -> (amount, unit) per call
    rtol: float                                # pyree vs JAX, relative to the largest value
    # inputs -> (float64 values, outputs -> the same part of them): the error of each library
    # against float64, where matrix precision makes the two differ
    exact: Callable[[tuple], tuple] | None = None


def _rng():
    return np.random.default_rng(0)


def selu(np_like, _):
    def f(x):
        return 1.05 * np_like.where(x > 0, x, 1.67 * np_like.exp(x) - 1.67)
    return f


def matmul(np_like, _):
    return lambda a, b: a @ b


def mlp_step(np_like, _):
    def loss(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = np_like.maximum(h @ w + b, 0.0)
        w, b = params[-1]
        logits = h @ w + b
        logits = logits - logits.max(axis=1, keepdims=True)
        logp = logits - np_like.log(np_like.exp(logits).sum(axis=1, keepdims=True))
        return -(logp * y).sum() / x.shape[0]

    lib = pyree if np_like is pjnp else jax

    def step(params, x, y):
        grads = lib.grad(loss)(params, x, y)
        return [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]
    return step


def cross_entropy(np_like, _):
    def f(logits, labels):
        shifted = logits - logits.max(axis=1, keepdims=True)
        logp = shifted - np_like.log(np_like.exp(shifted).sum(axis=1, keepdims=True))
        return -np_like.take_along_axis(logp, labels[:, None], axis=1).mean()
    return f


def vmap_grad(np_like, _):
    lib = pyree if np_like is pjnp else jax
    return lib.vmap(lib.grad(lambda x: np_like.sin(x) * x ** 2))


def newton_sqrt(np_like, lax_like):
    def f(a):
        def cond(state):
            x, previous = state
            return np_like.max(np_like.abs(x - previous)) > 1e-6
        def body(state):
            x, _ = state
            return 0.5 * (x + a / x), x
        return lax_like.while_loop(cond, body, (a, a + 1.0))[0]
    return f


def scan_rnn(np_like, lax_like):
    def f(w_in, w_h, xs):
        def step(h, x):
            h = np_like.tanh(x @ w_in + h @ w_h)
            return h, h.sum()
        h0 = np_like.zeros((xs.shape[1], w_h.shape[0]), xs.dtype)
        h, sums = lax_like.scan(step, h0, xs)
        return h, sums
    return f


def matmul_highest(np_like, _):
    return lambda a, b: np_like.matmul(a, b, precision="highest")


def rnn_step(np_like, _):
    """One step of ``scan_rnn`` alone: where a scan's per-step time goes."""
    return lambda w_in, w_h, x, h: np_like.tanh(x @ w_in + h @ w_h)


def newton_body(np_like, _):
    """One iteration of ``newton_sqrt``'s body and condition alone."""
    def f(a, x, previous):
        return 0.5 * (x + a / x), np_like.max(np_like.abs(x - previous)) > 1e-6
    return f


def conv(np_like, lax_like):
    return lambda x, w: lax_like.conv_general_dilated(x, w, (1, 1), "SAME")


def _sized(n: int, scale: float, least: int = 1) -> int:
    return max(least, int(n / scale))


def _mlp_inputs(scale):
    r = _rng()
    sizes = [784, _sized(4096, scale, 16), _sized(4096, scale, 16), 10]
    batch = _sized(4096, scale, 8)
    params = [((r.normal(size=(m, n)) / np.sqrt(m)).astype(np.float32),
               np.zeros(n, np.float32)) for m, n in zip(sizes[:-1], sizes[1:])]
    x = r.normal(size=(batch, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[r.integers(0, 10, batch)]
    return params, x, y


def _rows_exact(inputs, rows: int = 64):
    """float64 values of some rows of a @ b, and how to take those rows of a result."""
    a, b = (np.asarray(x, np.float64) for x in inputs)
    picked = np.random.default_rng(1).choice(a.shape[0], size=min(rows, a.shape[0]),
                                              replace=False)
    return a[picked] @ b, lambda out: np.asarray(out, np.float64)[picked]


def _mlp_exact(inputs):
    """The MLP step's updated parameters in float64 (NumPy: forward, backward, update)."""
    params, x, y = inputs
    params = [(np.asarray(w, np.float64), np.asarray(b, np.float64)) for w, b in params]
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    hs = [x]
    for w, b in params[:-1]:
        hs.append(np.maximum(hs[-1] @ w + b, 0.0))
    logits = hs[-1] @ params[-1][0] + params[-1][1]
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    g = (p * y.sum(axis=1, keepdims=True) - y) / x.shape[0]    # d loss / d logits
    new = []
    for i in range(len(params) - 1, -1, -1):
        w, b = params[i]
        new.append((w - 0.01 * hs[i].T @ g, b - 0.01 * g.sum(axis=0)))
        if i:
            g = (g @ w.T) * (hs[i] > 0)
    new = new[::-1]
    # Each parameter apart: a bias's update is small beside the weights', so its error is
    # measured against its own scale (run 2026-11-27: pyree and JAX differed by 7e-3 there).
    return ([v for pair in new for v in pair],
            lambda out: [np.asarray(v, np.float64) for pair in out for v in pair])


def _mlp_flops(inputs):
    params, x, _ = inputs
    return 6.0 * x.shape[0] * sum(w.size for w, _ in params), "FLOP"


WORKLOADS = [
    Workload("trivial jit call", lambda s: (np.ones(4, np.float32),),
             lambda np_like, _: (lambda x: x + 1), True, lambda i: (0, ""), 0),
    Workload("SELU jit, 64M f32", lambda s: (_rng().normal(size=_sized(1 << 26, s)).astype(
        np.float32),), selu, True, lambda i: (8.0 * i[0].size, "B"), 1e-5),
    Workload("SELU eager, 64M f32", lambda s: (_rng().normal(size=_sized(1 << 26, s)).astype(
        np.float32),), selu, False, lambda i: (8.0 * i[0].size, "B"), 1e-5),
    Workload("matmul f32 8192^2", lambda s: tuple(_rng().normal(size=(_sized(8192, s ** 0.5, 64),) * 2).astype(
        np.float32) for _ in range(2)), matmul, True,
        lambda i: (2.0 * i[0].shape[0] ** 3, "FLOP"), 2e-3, _rows_exact),
    Workload("matmul bf16 8192^2", lambda s: tuple(_rng().normal(size=(_sized(8192, s ** 0.5, 64),) * 2).astype(
        pjnp.bfloat16) for _ in range(2)), matmul, True,
        lambda i: (2.0 * i[0].shape[0] ** 3, "FLOP"), 2e-2),
    Workload("MLP SGD step 784-4096-4096-10, batch 4096", _mlp_inputs, mlp_step, True,
             _mlp_flops, 2e-3, _mlp_exact),
    Workload("log-softmax cross-entropy 65536x1000", lambda s: (
        _rng().normal(size=(_sized(65536, s, 64), 1000)).astype(np.float32),
        _rng().integers(0, 1000, _sized(65536, s, 64)).astype(np.int32)), cross_entropy, True,
        lambda i: (4.0 * i[0].size, "B"), 1e-5),
    Workload("vmap(grad) over 16M scalars", lambda s: (_rng().normal(size=_sized(1 << 24, s)).astype(
        np.float32),), vmap_grad, True, lambda i: (8.0 * i[0].size, "B"), 1e-5),
    Workload("while_loop Newton sqrt, 16M values", lambda s: (_rng().uniform(
        1, 100, size=_sized(1 << 24, s)).astype(np.float32),), newton_sqrt, True,
        lambda i: (8.0 * i[0].size, "B"), 1e-5),
    Workload("scan RNN, 1000 steps, hidden 1024, batch 64", lambda s: (
        (_rng().normal(size=(256, _sized(1024, s, 32))) / 16).astype(np.float32),
        (_rng().normal(size=(_sized(1024, s, 32),) * 2) / 32).astype(np.float32),
        _rng().normal(size=(_sized(1000, s, 10), 64, 256)).astype(np.float32)), scan_rnn, True,
        lambda i: (2.0 * i[2].shape[0] * 64 * (256 + i[1].shape[0]) * i[1].shape[0], "FLOP"),
        2e-3),
    Workload("matmul f32 8192^2, precision highest", lambda s: tuple(_rng().normal(size=(
        _sized(8192, s ** 0.5, 64),) * 2).astype(np.float32) for _ in range(2)), matmul_highest,
        True, lambda i: (2.0 * i[0].shape[0] ** 3, "FLOP"), 1e-4, _rows_exact),
    Workload("RNN step alone, hidden 1024, batch 64", lambda s: (
        (_rng().normal(size=(256, _sized(1024, s, 32))) / 16).astype(np.float32),
        (_rng().normal(size=(_sized(1024, s, 32),) * 2) / 32).astype(np.float32),
        _rng().normal(size=(64, 256)).astype(np.float32),
        _rng().normal(size=(64, _sized(1024, s, 32))).astype(np.float32)), rnn_step, True,
        lambda i: (2.0 * 64 * (256 + i[1].shape[0]) * i[1].shape[0], "FLOP"), 2e-3),
    Workload("matmul f32 64x1024 @ 1024x1024 (the RNN step's product)", lambda s: (
        _rng().normal(size=(64, _sized(1024, s, 32))).astype(np.float32),
        (_rng().normal(size=(_sized(1024, s, 32),) * 2) / 32).astype(np.float32)), matmul, True,
        lambda i: (2.0 * 64 * i[1].shape[0] ** 2, "FLOP"), 2e-3, _rows_exact),
    Workload("Newton body+cond alone, 16M values", lambda s: tuple(_rng().uniform(
        1, 100, size=_sized(1 << 24, s)).astype(np.float32) for _ in range(3)), newton_body,
        True, lambda i: (16.0 * i[0].size, "B"), 1e-5),
    Workload("conv NCHW 32x64x128x128, 128 3x3 filters", lambda s: (
        _rng().normal(size=(_sized(32, s), 64, _sized(128, s ** 0.5, 8), _sized(128, s ** 0.5, 8))
                      ).astype(np.float32),
        (_rng().normal(size=(128, 64, 3, 3)) / 24).astype(np.float32)), conv, True,
        lambda i: (2.0 * i[0].shape[0] * i[0].shape[2] * i[0].shape[3] * 128 * 64 * 9, "FLOP"),
        2e-3),
]


def _block(tree, lib):
    for leaf in lib.tree_util.tree_leaves(tree):
        leaf.block_until_ready()
    return tree


def _max_relative_difference(a, b) -> float:
    worst = 0.0
    for x, y in zip(pyree.tree_util.tree_leaves(a), pyree.tree_util.tree_leaves(b)):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        scale = max(np.abs(y).max(), 1e-30) if y.size else 1.0
        worst = max(worst, float(np.abs(x - y).max() / scale) if y.size else 0.0)
    return worst


def run_workload(w: Workload, scale: int, rounds: int, min_time: float,
                 skip_jax: bool = False) -> dict:
    inputs = w.make(scale)
    fp = w.program(pjnp, plax)
    fp = pyree.jit(fp) if w.jit else fp
    args_p = pyree.device_put(inputs)
    contestants = {"pyree": lambda: _block(fp(*args_p), pyree)}
    result = {}
    start = time.perf_counter()
    got = contestants["pyree"]()
    result["first"] = time.perf_counter() - start
    if jax is not None and not skip_jax:
        fj = w.program(jjnp, jlax)
        fj = jax.jit(fj) if w.jit else fj
        args_j = jax.device_put(inputs)
        contestants["jax"] = lambda: _block(fj(*args_j), jax)
        want = contestants["jax"]()
        difference = _max_relative_difference(got, want)
        result["agree"] = difference <= w.rtol or w.rtol == 0
        result["difference"] = difference
    if w.exact is not None:
        exact, part = w.exact(inputs)
        result["errors"] = {name: _max_relative_difference(part(out), exact)
                            for name, out in (("pyree", got), ("jax", want if "agree" in result
                                                                    else None)) if out is not None}
        if "agree" in result and not result["agree"]:
            # Apart by more than rtol, but pyree no further from float64 than JAX: agree.
            result["agree"] = result["errors"]["pyree"] <= result["errors"]["jax"]
    samples = {k: [] for k in contestants}
    for fn in contestants.values():
        per_call(fn, min_time)   # warm-up
    for _ in range(rounds):
        for k, fn in contestants.items():
            samples[k].append(per_call(fn, min_time))
    result.update({k: statistics.median(v) for k, v in samples.items()})
    result["work"] = w.work(inputs)
    return result


FIRST_CALL = """
import sys, time
import numpy as np
lib = sys.argv[1]
if lib == "pyree":
    import pyree as jax, pyree.numpy as jnp
    jax.jit
else:
    import jax, jax.numpy as jnp
x = np.random.default_rng(0).normal(size=1000).astype(np.float32)
start = time.perf_counter()
jax.jit(lambda x: 1.05 * jnp.where(x > 0, x, 1.67 * jnp.exp(x) - 1.67))(x).block_until_ready()
print(time.perf_counter() - start)
"""


def first_call(lib: str, env: dict) -> float:
    out = subprocess.run([sys.executable, "-c", FIRST_CALL, lib], env=env, capture_output=True,
                         text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    return float(out.stdout.strip().splitlines()[-1])


def async_share(scale: int) -> tuple[float, float]:
    """(seconds until a jitted call returns, seconds until its result is ready) for a chain of
    three 8192^2 matmuls: a call should return long before the device finishes."""
    n = _sized(8192, scale ** 0.5, 64)
    a = pyree.device_put(_rng().normal(size=(n, n)).astype(np.float32))
    f = pyree.jit(lambda a: (a @ a) @ (a @ a))
    f(a).block_until_ready()
    returned, ready = [], []
    for _ in range(5):
        start = time.perf_counter()
        out = f(a)
        returned.append(time.perf_counter() - start)
        out.block_until_ready()
        ready.append(time.perf_counter() - start)
    return statistics.median(returned), statistics.median(ready)


# The products of the MLP step (forward, and the backward's transposed forms), for --accuracy.
ACCURACY_PRODUCTS = [("x @ w1", (4096, 784), (784, 4096), ""), ("h @ w2", (4096, 4096),
                     (4096, 4096), ""), ("h @ w3", (4096, 4096), (4096, 10), ""),
                     ("h.T @ g", (4096, 4096), (4096, 10), "lhs.T"),
                     ("g @ w3.T", (4096, 10), (4096, 10), "rhs.T"),
                     ("x.T @ g", (4096, 784), (4096, 4096), "lhs.T"),
                     ("square 8192", (8192, 8192), (8192, 8192), "")]


def accuracy() -> None:
    """Error against float64 (64 rows) of float32 products at the default precision, pyree and
    JAX side by side: which products of an MLP step lose accuracy on this device."""
    print("| product | pyree error | JAX error |\n|---|---|---|")
    for name, a_shape, b_shape, form in ACCURACY_PRODUCTS:
        r = _rng()
        a = r.normal(size=a_shape).astype(np.float32)
        b = r.normal(size=b_shape).astype(np.float32)
        def f(np_like):
            if form == "lhs.T":
                return lambda a, b: a.T @ b
            if form == "rhs.T":
                return lambda a, b: a @ b.T
            return lambda a, b: a @ b
        la = a.T if form == "lhs.T" else a
        lb = b.T if form == "rhs.T" else b
        exact, part = _rows_exact((la, lb))
        errors = []
        for lib, np_like in (("pyree", pjnp), ("jax", jjnp if jax else None)):
            if np_like is None:
                errors.append("-")
                continue
            jit = pyree.jit if lib == "pyree" else jax.jit
            out = jit(f(np_like))(a, b)
            errors.append(f"{np.abs(part(out) - exact).max() / np.abs(exact).max():.1e}")
        print(f"| {name} {form} | {errors[0]} | {errors[1]} |", flush=True)


def _rate(seconds: float, work: tuple) -> str:
    amount, unit = work
    if not amount or not seconds:
        return ""
    per_second = amount / seconds
    return f"{per_second / 1e12:.1f} TFLOP/s" if unit == "FLOP" else f"{per_second / 1e9:.0f} GB/s"


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1, help="divide problem sizes by this")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per sample")
    parser.add_argument("--only", help="run the workloads whose name contains one of these "
                        "comma-separated words ('async': the async row)")
    parser.add_argument("--no-first-call", action="store_true")
    parser.add_argument("--accuracy", action="store_true",
                        help="only the float64 errors of the MLP step's products")
    parser.add_argument("--no-jax", action="store_true",
                        help="time pyree alone (to compare pyree's settings run by run)")
    args = parser.parse_args()
    only = [word for word in (args.only or "").split(",") if word]
    device = pyree.devices()[0]
    print(f"pyree {pyree.__version__} on {device} ({' '.join(device.target_flags)}); "
          f"JAX {jax.__version__ + ' on ' + str(jax.devices()[0]) if jax else 'not installed'}; "
          f"scale 1/{args.scale}")
    if args.accuracy:
        accuracy()
        return
    print(f"compiler_flags={pyree.config.compiler_flags!r} "
          f"runtime_flags={pyree.config.runtime_flags!r}")
    print(f"| workload | pyree | JAX | pyree rate | JAX rate | pyree/JAX | same values "
          f"| pyree first call |")
    print("|---|---|---|---|---|---|---|---|")
    for w in WORKLOADS:
        if only and not any(word in w.name for word in only):
            continue
        try:
            r = run_workload(w, args.scale, args.rounds, args.min_time, args.no_jax)
        except Exception as e:  # a failure is a row of the table, not the end of the run
            print(f"| {w.name} | failed: {type(e).__name__}: {str(e)[:200]} | | | | | |",
                  flush=True)
            continue
        jax_t = r.get("jax")
        agree = "" if "agree" not in r else (
            "yes" if r["agree"] else f"NO (max rel. difference {r['difference']:.1e})")
        if "errors" in r:
            agree += " (error vs float64: " + ", ".join(
                f"{k} {v:.1e}" for k, v in r["errors"].items()) + ")"
        print(f"| {w.name} | {_fmt(r['pyree'])} | {_fmt(jax_t) if jax_t else '-'} | "
              f"{_rate(r['pyree'], r['work'])} | {_rate(jax_t, r['work']) if jax_t else ''} | "
              f"{r['pyree'] / jax_t if jax_t else float('nan'):.2f} | {agree} | "
              f"{r['first']:.2f} s |", flush=True)
    if not only or "async" in only:
        returned, ready = async_share(args.scale)
        print(f"async: a call of three 8192^2 matmuls returned after {_fmt(returned)}, its "
              f"result was ready after {_fmt(ready)}")
    if not args.no_first_call and not args.only and not args.no_jax:
        import tempfile
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, PYREE_CACHE_DIR=cache)
            cold = first_call("pyree", env)
            warm = first_call("pyree", env)
        jax_first = first_call("jax", dict(os.environ)) if jax else None
        for name, t in (("first call, empty cache", cold), ("first call, warm cache", warm)):
            ratio = f"{t / jax_first:.2f}" if jax_first else "-"
            print(f"| {name} | {_fmt(t)} | {_fmt(jax_first) if jax_first else '-'} | | | "
                  f"{ratio} | |")


if __name__ == "__main__":
    main()
