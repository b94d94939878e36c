#!/usr/bin/env bash
# The one prepared GPU session (issue 20): run on the GPU machine as
#   bash .gpu/remote.sh bash benchmarks/gpu_check.sh [seconds for the suite] [workloads]
# (about 3 minutes before the suite on an H100; give the run's timeout_s that plus the suite's)
# after `bash ../shared/gpu/pack.sh` here. [workloads]: gpu.py's --only words (comma-separated;
# default: the whole table, then the flag variants). Logs go to $OUT (the device tool brings
# them back):
#   device.txt    the GPU, pyree's CUDA target, a first read of a result
#   gpu_tests.txt the GPU-only tests (transfers, target, precision, pyree's kernels)
#   suite.txt     pyree's whole suite on CUDA, last, time-boxed ([seconds]), on 14 workers;
#   failures.txt  each failure's report as it happens (benchmarks/pytest_failure_log.py)
#   table.txt     benchmarks/gpu.py: pyree and JAX on the same GPU
#   accuracy.txt  float64 errors of the MLP step's float32 products, pyree and JAX
#   variants.txt  workloads under other IREE compiler / runtime settings (pyree alone)
# GPU_CHECK_VARIANTS=0 skips the flag variants (a short lease), =short runs the kernel ones
# only, =all adds the allocator ones;
# GPU_CHECK_ACCURACY=0 skips accuracy.txt; a suite budget of 0 skips the suite;
# GPU_CHECK_TESTS="tests/test_a.py tests/test_b.py" runs those files instead of the whole suite.
# A dry run on the CPU: GPU_CHECK_PLATFORM=cpu GPU_CHECK_SCALE=256 bash benchmarks/gpu_check.sh 30
set -u
budget=${1:-240} only=${2:-}
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

PYREE_PLATFORM=$platform timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="" \
  tests/test_cuda_target.py tests/test_cuda_gemm.py tests/test_device_transfer.py tests/test_precision.py \
  > "$OUT/gpu_tests.txt" 2>&1
stamp gpu tests; tail -15 "$OUT/gpu_tests.txt"

(cd benchmarks && PYREE_PLATFORM=$platform timeout 240 python3 gpu.py --rounds 3 --scale $scale \
  ${only:+--only "$only"}) > "$OUT/table.txt" 2>&1
stamp table; cat "$OUT/table.txt"

if [ "${GPU_CHECK_ACCURACY:-1}" = 1 ]; then
  (cd benchmarks && PYREE_PLATFORM=$platform timeout 150 python3 gpu.py --accuracy) \
    > "$OUT/accuracy.txt" 2>&1
  stamp accuracy; cat "$OUT/accuracy.txt"
fi

variant() {  # name, compiler flags, runtime flags, workload filter[, VAR=value ...]
  (cd benchmarks && env "${@:5}" PYREE_PLATFORM=$platform PYREE_COMPILER_FLAGS="$2" \
    PYREE_RUNTIME_FLAGS="$3" timeout 60 python3 gpu.py --no-jax --scale $scale --rounds 3 \
    --min-time 0.1 --only "$4" 2>&1 | grep -E "^(\| [a-zA-Z]|async)" | grep -v "^| workload" | \
    sed "s/^/$1 /") >> "$OUT/variants.txt"
}
if [ -z "$only" ] && [ "${GPU_CHECK_VARIANTS:=1}" != 0 ]; then
  [ "${GPU_CHECK_VARIANTS}" = short ] || variant graphs "" "--cuda_use_streams=false" \
    "trivial,Newton,scan,async"
  variant no-gemm-kernels "" "" "scan RNN,RNN step,64x1024" PYREE_CUDA_GEMM_KERNELS=0
  variant no-split-k "" "" "scan RNN,64x1024,MLP" PYREE_CUDA_MAX_SPLIT=1
  if [ "${GPU_CHECK_VARIANTS}" = all ]; then
    variant no-caching-allocator "" "" "SELU,async" PYREE_ALLOCATORS=
    variant iree-allocations "" "" "SELU,MLP,async" PYREE_CALLER_STORAGE_PLATFORMS=
  fi
  stamp variants; cat "$OUT/variants.txt"
fi

# The suite last, alone: timings above are taken on a quiet machine (run 2 of 2026-11-26 ran
# the suite beside the table, and JAX's own times were up to 2.4x slower for it).
[ "$budget" = 0 ] && exit 0
timeout_flag=""; python3 -c "import pytest_timeout" 2>/dev/null && timeout_flag="--timeout=120"
PYREE_PLATFORM=$platform PYREE_FAILURE_LOG="$OUT/failures.txt" timeout "$budget" python3 -m pytest \
  -q -n 14 -p no:cacheprovider -p pytest_failure_log -o addopts="" $timeout_flag ${GPU_CHECK_TESTS:-tests} \
  > "$OUT/suite.txt" 2>&1; echo "suite exit $?" >> "$OUT/suite.txt"
stamp suite; tail -5 "$OUT/suite.txt"; grep -c "^===" "$OUT/failures.txt" 2>/dev/null
