"""Tuning builds of pyree's CUDA GEMM kernels side by side (transpiler/backend/cuda_gemm.py,
VARIANTS): each build times the same products and a convolution in a process of its own
(PYREE_CUDA_GEMM_PTX), checks its values against JAX's, and prints TFLOP/s; JAX's times once.

    python -m pyree.transpiler.backend.build_cuda_kernels pad benchmarks/gemm_variants/pad.json.gz
    python benchmarks/gpu_gemm_variants.py benchmarks/gemm_variants/*.json.gz
"""
import os
import statistics
import subprocess
import sys
import time

import numpy as np

PRODUCTS = [("f32 4096^3", "float32", 4096), ("bf16 4096^3", "bfloat16", 4096),
            ("f32 8192^3", "float32", 8192), ("bf16 8192^3", "bfloat16", 8192)]
CONV = ("conv f32 NCHW 32x64x128x128, 128 3x3", (32, 64, 128, 128), (128, 64, 3, 3))


def timed(f, *args) -> float:
    f(*args).block_until_ready()
    samples = []
    for _ in range(5):
        calls, start = 0, time.perf_counter()
        while True:
            out = f(*args)
            calls += 1
            if time.perf_counter() - start > 0.05:
                break
        out.block_until_ready()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def workloads(lib, jnp, scale: int):
    rng = np.random.default_rng(0)
    for name, dtype, n in PRODUCTS:
        n = max(64, n // scale)
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        if dtype == "bfloat16":
            a, b = a.astype(jnp.bfloat16), b.astype(jnp.bfloat16)
        yield name, lib.jit(lambda a, b: a @ b), (a, b), 2.0 * n ** 3
    name, xs, ws = CONV
    xs = (xs[0] // min(scale, 32),) + xs[1:3] + (xs[3],)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / 24).astype(np.float32)
    conv = lib.jit(lambda x, w: lib.lax.conv_general_dilated(x, w, (1, 1), "SAME"))
    yield name, conv, (x, w), 2.0 * xs[0] * xs[2] * xs[3] * ws[0] * ws[1] * 9


def run_one(lib_name: str, scale: int, reference_dir: str) -> None:
    if lib_name == "jax":
        import jax
        import jax.numpy as jnp
        lib = jax
    else:
        import pyree as lib
        import pyree.numpy as jnp
    for name, f, args, flops in workloads(lib, jnp, scale):
        args = [lib.device_put(a) for a in args]
        out = np.asarray(f(*args), np.float32)
        path = os.path.join(reference_dir, name.split()[0] + name.split()[1] + ".npy")
        if lib_name == "jax":
            np.save(path, out)
            agree = ""
        else:
            want = np.load(path)
            error = float(np.abs(out - want).max() / np.abs(want).max())
            agree = f"{error:.1e}"
        seconds = timed(f, *args)
        print(f"ROW|{name}|{seconds}|{flops / seconds / 1e12:.1f}|{agree}", flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--one"]:
        run_one(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    scale = int(os.environ.get("GEMM_VARIANTS_SCALE", "1"))
    import tempfile
    reference = tempfile.mkdtemp()
    runs = [("JAX", "jax", None)] + [(os.path.basename(p).split(".")[0], "pyree", p)
                                     for p in sys.argv[1:]]
    table = {}
    for label, lib, ptx in runs:
        env = dict(os.environ)
        if ptx:
            env["PYREE_CUDA_GEMM_PTX"] = os.path.abspath(ptx)
        done = subprocess.run([sys.executable, __file__, "--one", lib, str(scale), reference],
                              env=env, capture_output=True, text=True, timeout=300)
        rows = [line.split("|")[1:] for line in done.stdout.splitlines() if line.startswith("ROW|")]
        if done.returncode:
            print(f"{label}: failed: {done.stderr[-1500:]}", flush=True)
        for name, seconds, rate, agree in rows:
            table.setdefault(name, {})[label] = (float(seconds), rate, agree)
        print(f"{label}: {len(rows)} rows", flush=True)
    labels = [label for label, _, _ in runs]
    print("| workload | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name, cells in table.items():
        jax_time = cells.get("JAX", (None,))[0]
        out = []
        for label in labels:
            if label not in cells:
                out.append("-")
                continue
            seconds, rate, agree = cells[label]
            ratio = f", {seconds / jax_time:.2f}x" if jax_time and label != "JAX" else ""
            error = f", err {agree}" if agree else ""
            out.append(f"{seconds * 1e3:.3f} ms ({rate} TF/s{ratio}{error})")
        print(f"| {name} | " + " | ".join(out) + " |")


if __name__ == "__main__":
    main()
