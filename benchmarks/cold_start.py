"""Cold start: the wall time of a new user's first run of realistic JAX programs
(``benchmarks/programs/``), each in a new process, JAX as it comes against pyree with ``jax``
aliased to it, one empty compile cache for the whole corpus (as a new user has), then warm.

    python benchmarks/cold_start.py             # all programs
    python benchmarks/cold_start.py --only gp

The programs are written for JAX (``import jax``); under pyree a small prelude puts pyree in
``sys.modules`` under JAX's names. Every process's time includes importing the library. The
corpus total is the number issue 19 sets a bar on (cold pyree at most 2x JAX).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")

# Runs a JAX program with pyree in JAX's place.
ALIAS = """
import runpy, sys
import pyree
modules = ["numpy", "numpy.linalg", "lax", "random", "nn", "scipy", "scipy.special",
           "scipy.stats", "scipy.linalg", "example_libraries", "example_libraries.stax",
           "example_libraries.optimizers", "tree_util"]
sys.modules["jax"] = pyree
for name in modules:
    __import__("pyree." + name)
    sys.modules["jax." + name] = sys.modules["pyree." + name]
path = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(path, run_name="__main__")
"""


def run(program: str, lib: str, env: dict) -> tuple[float, str]:
    """Seconds the program's process took, and what it printed."""
    path = os.path.join(PROGRAMS, program)
    command = [sys.executable, path] if lib == "jax" else [sys.executable, "-c", ALIAS, path]
    start = time.perf_counter()
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{program} under {lib} failed:\n{proc.stderr[-3000:]}")
    return elapsed, proc.stdout.strip()


def _wait_for_warmup(cache: str, timeout: float = 600.0) -> None:
    """Wait until the background compile of eager kernels (if one started) is done."""
    import glob
    deadline = time.time() + timeout
    while time.time() < deadline:
        started = [p for p in glob.glob(os.path.join(cache, "**", "eager-warmup-*"),
                                        recursive=True) if not p.endswith(".done")]
        if all(os.path.exists(p + ".done") for p in started):
            return
        time.sleep(1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the programs whose name contains this")
    args = parser.parse_args()
    programs = sorted(p for p in os.listdir(PROGRAMS) if p.endswith(".py")
                      and (args.only is None or args.only in p))
    times: dict = {p: {} for p in programs}
    # JAX first, alone; then pyree from an empty cache, program after program as a new user
    # runs them (a background compile of common eager kernels, if on, runs meanwhile, as it
    # would for that user); then, once that is done, pyree with the cache warm.
    for program in programs:
        times[program]["jax"] = run(program, "jax", dict(os.environ))[0]
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, PYREE_CACHE_DIR=cache)
        for program in programs:
            times[program]["cold"] = run(program, "pyree", env)[0]
        _wait_for_warmup(cache)
        for program in programs:
            times[program]["warm"] = run(program, "pyree", env)[0]
    print(f"{'program':14s} {'JAX':>9s} {'pyree cold':>11s} {'pyree warm':>11s} "
          f"{'cold/JAX':>9s} {'warm/JAX':>9s}")
    totals = [0.0, 0.0, 0.0]
    for program in programs:
        t = times[program]
        for i, key in enumerate(("jax", "cold", "warm")):
            totals[i] += t[key]
        print(f"{program[:-3]:14s} {t['jax']:8.2f}s {t['cold']:10.2f}s {t['warm']:10.2f}s "
              f"{t['cold'] / t['jax']:9.2f} {t['warm'] / t['jax']:9.2f}")
    jax_s, cold_s, warm_s = totals
    print(f"{'corpus':14s} {jax_s:8.2f}s {cold_s:10.2f}s {warm_s:10.2f}s "
          f"{cold_s / jax_s:9.2f} {warm_s / jax_s:9.2f}   (bar: cold/JAX <= 2)")


if __name__ == "__main__":
    main()
