#!/usr/bin/env bash
# The one prepared GPU session (issue 20): run on the GPU machine as
#   bash .gpu/remote.sh bash benchmarks/gpu_check.sh [seconds for the suite] [workloads]
# after `bash ../shared/gpu/pack.sh` here. [workloads]: gpu.py's --only words (comma-separated;
# default: the whole table, then the flag variants). Logs go to $OUT (the device tool brings
# them back):
#   device.txt    the GPU, pyree's CUDA target, a first read of a result
#   gpu_tests.txt the GPU-only tests (transfers, target, precision)
#   suite.txt     pyree's whole suite on CUDA, time-boxed, in the background on 10 workers;
#   failures.txt  each failure's report as it happens (benchmarks/pytest_failure_log.py)
#   table.txt     benchmarks/gpu.py: pyree and JAX on the same GPU
#   accuracy.txt  float64 errors of the MLP step's float32 products, pyree and JAX
#   variants.txt  workloads under other IREE compiler / runtime settings (pyree alone)
# A dry run on the CPU: GPU_CHECK_PLATFORM=cpu GPU_CHECK_SCALE=256 bash benchmarks/gpu_check.sh 30
set -u
budget=${1:-420} only=${2:-}
platform=${GPU_CHECK_PLATFORM:-cuda} scale=${GPU_CHECK_SCALE:-1}
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export PYREE_CACHE_DIR=/tmp/pyree-cache XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
export PYTHONPATH=$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH}
# remote.sh unpacks IREE's wheels with Python's zipfile, which drops the executable bit of its
# tools (iree-compile; iree-lld, which the compiler runs to link CPU code for constant folding).
chmod +x /tmp/site/iree/compiler/_mlir_libs/iree-* /tmp/site/iree/_runtime_libs/iree-* 2>/dev/null
start=$(date +%s)
stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }

{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  PYREE_PLATFORM=$platform timeout 120 python3 -c "
import time, numpy as np, pyree, pyree.numpy as jnp
d = pyree.devices()[0]; print(d, d.compile_flags)
t = time.perf_counter(); y = pyree.jit(lambda x: jnp.sin(x) * 2)(np.arange(8, dtype=np.float32))
print('first jit call + read', np.asarray(y), f'{time.perf_counter() - t:.2f} s')
print('eager', np.asarray(jnp.arange(4.0) * 3), float(jnp.sum(jnp.ones(10))), jnp.zeros((0, 3)))
" 2>&1 | tail -20; } > "$OUT/device.txt" 2>&1
stamp device; cat "$OUT/device.txt"

timeout_flag=""; python3 -c "import pytest_timeout" 2>/dev/null && timeout_flag="--timeout=120"
( PYREE_PLATFORM=$platform PYREE_FAILURE_LOG="$OUT/failures.txt" timeout "$budget" python3 -m pytest \
    -q -n 10 -p no:cacheprovider -p pytest_failure_log -o addopts="" $timeout_flag tests \
    > "$OUT/suite.txt" 2>&1; echo "suite exit $?" >> "$OUT/suite.txt" ) &
suite=$!

PYREE_PLATFORM=$platform timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="" \
  tests/test_cuda_target.py tests/test_device_transfer.py tests/test_precision.py \
  > "$OUT/gpu_tests.txt" 2>&1
stamp gpu tests; tail -15 "$OUT/gpu_tests.txt"

(cd benchmarks && PYREE_PLATFORM=$platform timeout 240 python3 gpu.py --rounds 3 --scale $scale \
  ${only:+--only "$only"}) > "$OUT/table.txt" 2>&1
stamp table; cat "$OUT/table.txt"

(cd benchmarks && PYREE_PLATFORM=$platform timeout 150 python3 gpu.py --accuracy) \
  > "$OUT/accuracy.txt" 2>&1
stamp accuracy; cat "$OUT/accuracy.txt"

variant() {  # name, compiler flags, runtime flags, workload filter[, VAR=value ...]
  (cd benchmarks && env "${@:5}" PYREE_PLATFORM=$platform PYREE_COMPILER_FLAGS="$2" \
    PYREE_RUNTIME_FLAGS="$3" timeout 40 python3 gpu.py --no-jax --scale $scale --rounds 3 \
    --min-time 0.1 --only "$4" 2>&1 | grep -E "^(\| [a-zA-Z]|async)" | grep -v "^| workload" | \
    sed "s/^/$1 /") >> "$OUT/variants.txt"
}
if [ -z "$only" ]; then
  variant graphs "" "--cuda_use_streams=false" "trivial,Newton,scan,async"
  variant caching-allocator "" "" "SELU,async" PYREE_ALLOCATORS=caching
  variant highest "" "" "RNN" PYREE_DEFAULT_MATMUL_PRECISION=highest
  variant im2col "--iree-global-opt-use-im2col-for-convs" "" "conv"
  stamp variants; cat "$OUT/variants.txt"
fi

wait $suite
stamp suite; tail -5 "$OUT/suite.txt"; grep -c "^===" "$OUT/failures.txt" 2>/dev/null
