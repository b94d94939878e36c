#!/usr/bin/env bash
# pyree's tensor-core GEMM kernels on the GPU (issue 20; transpiler/backend/cuda_gemm.py), then a fresh
# baseline of the other gpu.py rows and the tests that failed on CUDA before. On the GPU
# machine, after `bash ../shared/gpu/pack.sh` here:
#   bash .gpu/remote.sh bash benchmarks/gpu_gemm.sh
# (~5 minutes on an H200; GPU_GEMM_SHORT=1: the tests, the variants and the product rows, ~2.5).
# Logs go to $OUT:
#   gemm_tests.txt  the kernels' values against float64 (every type pair and layout, ragged,
#                   batched, an unaligned view, convolutions), the CUDA target and transfer tests
#   variants.txt    tuning builds of the kernels side by side (benchmarks/gpu_gemm_variants.py)
#   gemm_on.txt     gpu.py rows of products (matmuls, MLP step, convolution, RNN) with the
#                   kernels, and JAX
#   gemm_off.txt    the same rows with IREE's own code (PYREE_CUDA_GEMM_KERNELS=0), pyree alone
#   shapes.txt      the kernels alone at several shapes (TFLOP/s), pyree and JAX
#   table.txt       the other gpu.py rows, pyree and JAX
#   refailed.txt    the tests that failed on CUDA in earlier sessions
# A dry run on the CPU: GPU_CHECK_PLATFORM=cpu GPU_CHECK_SCALE=64 bash benchmarks/gpu_gemm.sh
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
platform=${GPU_CHECK_PLATFORM:-cuda} scale=${GPU_CHECK_SCALE:-1}
export PYREE_CACHE_DIR=/tmp/pyree-cache XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH}
chmod +x /tmp/site/iree/compiler/_mlir_libs/iree-* /tmp/site/iree/_runtime_libs/iree-* 2>/dev/null
start=$(date +%s); stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null

timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider -o addopts="" tests/test_cuda_gemm.py \
  tests/test_cuda_target.py "tests/test_runtime.py::test_gpu_runs_jit_and_eager_and_transfers" \
  > "$OUT/gemm_tests.txt" 2>&1
stamp gemm_tests; grep -E "^(FAILED|ERROR)|passed|failed|Error" "$OUT/gemm_tests.txt" | cut -c1-400 | tail -25

# Tuning builds of the kernels (cuda_gemm.VARIANTS, built into benchmarks/gemm_variants/ before
# packing, e.g. `python -m pyree.transpiler.backend.build_cuda_kernels pad benchmarks/gemm_variants/
# pad.json.gz`; the folder is git-ignored: carry it), each in a process of its own.
if ls benchmarks/gemm_variants/*.json.gz > /dev/null 2>&1; then
  PYREE_PLATFORM=$platform GEMM_VARIANTS_SCALE=$scale timeout 200 python3 \
    benchmarks/gpu_gemm_variants.py benchmarks/gemm_variants/*.json.gz > "$OUT/variants.txt" 2>&1
  stamp variants; tail -8 "$OUT/variants.txt"
fi

rows="matmul f32 8192^2,matmul bf16,MLP SGD,conv,scan RNN,RNN step"
[ "${GPU_GEMM_SHORT:-0}" = 1 ] && rows="MLP SGD,conv,scan RNN,RNN step"
(cd benchmarks && PYREE_PLATFORM=$platform timeout 150 python3 gpu.py --rounds 3 --scale $scale \
  --no-first-call --only "$rows") > "$OUT/gemm_on.txt" 2>&1
stamp gemm_on; tail -8 "$OUT/gemm_on.txt"
[ "${GPU_GEMM_SHORT:-0}" = 1 ] || (cd benchmarks && PYREE_PLATFORM=$platform PYREE_CUDA_GEMM_KERNELS=0 timeout 100 python3 gpu.py \
  --rounds 3 --scale $scale --no-first-call --no-jax --only "$rows") > "$OUT/gemm_off.txt" 2>&1
[ "${GPU_GEMM_SHORT:-0}" = 1 ] || { stamp gemm_off; tail -7 "$OUT/gemm_off.txt"; }

[ "${GPU_GEMM_SHORT:-0}" = 1 ] && exit 0
PYREE_PLATFORM=$platform timeout 90 python3 - "$scale" > "$OUT/shapes.txt" 2>&1 <<'PY'
# The kernels alone: median time of a jitted product at several shapes, pyree and JAX.
import sys, time, statistics
import numpy as np
import pyree, pyree.numpy as pjnp
try:
    import jax, jax.numpy as jjnp
except ImportError:
    jax = None
scale = int(sys.argv[1])
def timed(f, *args):
    f(*args).block_until_ready()
    samples = []
    for _ in range(5):
        n, t0 = 0, time.perf_counter()
        while True:
            out = f(*args); n += 1
            if time.perf_counter() - t0 > 0.05: break
        out.block_until_ready(); samples.append((time.perf_counter() - t0) / n)
    return statistics.median(samples)
rng = np.random.default_rng(0)
print("| product | dtype | pyree | JAX | pyree TFLOP/s | JAX TFLOP/s | pyree/JAX |")
print("|---|---|---|---|---|---|---|")
for (m, k, n), form in [((2048, 2048, 2048), "a@b"), ((4096, 4096, 4096), "a@b"),
                        ((4096, 784, 4096), "a@b"), ((4096, 4096, 4096), "a.T@b"),
                        ((4096, 4096, 4096), "a@b.T"), ((8192, 8192, 8192), "a@b")]:
    m, k, n = (max(64, d // scale) for d in (m, k, n))
    for dtype in ("float32", "bfloat16"):
        a = rng.standard_normal((k, m) if form == "a.T@b" else (m, k)).astype(np.float32)
        b = rng.standard_normal((n, k) if form == "a@b.T" else (k, n)).astype(np.float32)
        fn = {"a@b": lambda np_, x, y: x @ y, "a.T@b": lambda np_, x, y: x.T @ y,
              "a@b.T": lambda np_, x, y: x @ y.T}[form]
        row = []
        for lib, np_ in ((pyree, pjnp), (jax, jax and jjnp)):
            if lib is None:
                row.append(None); continue
            x, y = (lib.device_put(v.astype(np_.bfloat16) if dtype == "bfloat16" else v)
                    for v in (a, b))
            row.append(timed(lib.jit(lambda x, y, np_=np_: fn(np_, x, y)), x, y))
        flops = 2.0 * m * n * k
        p, j = row
        print(f"| {form} {m}x{k}x{n} | {dtype} | {p * 1e3:.3f} ms | "
              f"{j * 1e3 if j else float('nan'):.3f} ms | {flops / p / 1e12:.1f} | "
              f"{flops / j / 1e12 if j else float('nan'):.1f} | {p / j if j else float('nan'):.2f} |",
              flush=True)
PY
stamp shapes; cat "$OUT/shapes.txt" | tail -16

(cd benchmarks && PYREE_PLATFORM=$platform timeout 140 python3 gpu.py --rounds 3 --scale $scale \
  --no-first-call --only "SELU eager,Newton,cross-entropy,trivial") \
  > "$OUT/table.txt" 2>&1
stamp table; tail -10 "$OUT/table.txt"

FAILED="tests/corpus/test_corpus_gp.py tests/test_ad.py::test_fori_loop_with_traced_trip_count_first_order
 tests/test_scipy_optimize.py"
PYREE_PLATFORM=$platform timeout 80 python3 -m pytest -q -n 8 -p no:cacheprovider -o addopts="" \
  $FAILED > "$OUT/refailed.txt" 2>&1
stamp refailed; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/refailed.txt" | cut -c1-300 | tail -12
