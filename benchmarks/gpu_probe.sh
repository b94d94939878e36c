#!/usr/bin/env bash
# Where time goes on the GPU, under configurations (issue 20): gpu_loops.py with the CUDA pool
# kept (pyree's default), with IREE's pool setting, and with IREE's queue allocations served
# by pyree's caching allocator; rows of gpu.py; the tests that failed on CUDA before, and
# diagnostics of those left (float64 solves, a traced trip count's gradient). On the GPU
# machine, after `bash ../shared/gpu/pack.sh` here:
#   bash .gpu/remote.sh bash benchmarks/gpu_probe.sh
set -u
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 PYREE_PLATFORM=cuda
chmod +x /tmp/site/iree/compiler/_mlir_libs/iree-* /tmp/site/iree/_runtime_libs/iree-* 2>/dev/null
start=$(date +%s); stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }
(cd benchmarks && timeout 100 python3 gpu_loops.py) > "$OUT/loops.txt" 2>&1
stamp loops; tail -25 "$OUT/loops.txt"
(cd benchmarks && PYREE_CUDA_POOL_KEEP_BYTES=0 timeout 50 python3 gpu_loops.py --no-jax) \
  > "$OUT/loops_pool0.txt" 2>&1
stamp loops_pool0; tail -12 "$OUT/loops_pool0.txt"
(cd benchmarks && PYREE_RUNTIME_FLAGS=--cuda_async_allocations=false timeout 50 python3 \
  gpu_loops.py --no-jax) > "$OUT/loops_sync_alloc.txt" 2>&1
stamp loops_sync_alloc; tail -12 "$OUT/loops_sync_alloc.txt"
(cd benchmarks && timeout 130 python3 gpu.py --rounds 3 --no-first-call \
  --only "SELU eager,Newton,scan RNN,RNN step,cross-entropy") > "$OUT/table.txt" 2>&1
stamp table; tail -14 "$OUT/table.txt"
# The options iree-compile derives from --iree-opt-level=O3, which a compiler session (pyree's
# in-process compiles) leaves at O0 (runtime/compile.py, CPU_FLAGS): the same rows with them.
O3_DERIVED="--iree-dispatch-creation-opt-level=O3 --iree-global-optimization-opt-level=O3
 --iree-dispatch-creation-enable-aggressive-fusion=true --iree-opt-aggressively-propagate-transposes=true
 --iree-opt-generalize-matmul=true --iree-opt-outer-dim-concat=true --iree-opt-strip-assertions=true"
(cd benchmarks && PYREE_COMPILER_FLAGS="$(echo $O3_DERIVED)" timeout 130 python3 gpu.py --rounds 3 \
  --no-first-call --no-jax --only "SELU eager,Newton,scan RNN,RNN step,cross-entropy") \
  > "$OUT/table_o3.txt" 2>&1
stamp table_o3; tail -14 "$OUT/table_o3.txt"
FAILED="tests/corpus/test_corpus_gp.py tests/test_ad.py::test_fori_loop_with_traced_trip_count_first_order
 tests/test_random_samplers.py tests/test_scipy_optimize.py tests/test_numpy_math.py tests/test_numpy_more.py
 tests/test_nn.py tests/test_runtime.py tests/test_iree_workarounds.py
 tests/test_transpiler.py::test_scan_loops_count_on_the_host tests/test_transpiler.py::test_long_scans_run_in_blocks"
PYREE_FAILURE_LOG="$OUT/failures.txt" timeout 100 python3 -m pytest -q -n 14 \
  -p no:cacheprovider -p pytest_failure_log -o addopts="" $FAILED > "$OUT/refailed.txt" 2>&1
stamp tests; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/refailed.txt" | tail -30
(cd benchmarks && timeout 40 python3 gpu_gp_diag.py) > "$OUT/gp_diag.txt" 2>&1
stamp gp_diag; tail -14 "$OUT/gp_diag.txt"
(cd benchmarks && timeout 60 python3 gpu_subst_diag.py) > "$OUT/subst.txt" 2>&1
stamp subst; grep -v "nan=False" "$OUT/subst.txt" | tail -30
# The traced-trip-count loop's gradient, each case in a process of its own (a lost device
# fails every later call of its process).
for n in 0 4; do for way in eager jit; do
  timeout 20 python3 - "$n" "$way" > "$OUT/fori_${n}_${way}.txt" 2>&1 <<'PY'
import sys
import pyree, pyree.numpy as jnp
from pyree import lax
n, way = int(sys.argv[1]), sys.argv[2]
f = lambda x, n: lax.fori_loop(0, n, lambda i, c: c * x, 1.0)
run = {"eager": lambda: pyree.grad(f)(1.5, jnp.int32(n)),
       "jit": lambda: pyree.jit(pyree.grad(f))(1.5, n)}[way]
print(n, way, float(run()), n * 1.5 ** (n - 1) if n else 0.0)
PY
  echo "fori n=$n $way: $(tail -1 "$OUT/fori_${n}_${way}.txt" | cut -c1-300)"
done; done
stamp fori
