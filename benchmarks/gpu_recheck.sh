#!/usr/bin/env bash
# A short GPU run after fixes (issue 20): the tests that failed on CUDA last time, the small
# programs of gpu_diag.py under each configuration, and a few rows of gpu.py; then the rest of
# the suite until [seconds]. On the GPU machine, after `bash ../shared/gpu/pack.sh` here:
#   bash .gpu/remote.sh bash benchmarks/gpu_recheck.sh [seconds for the suite] [gpu.py --only]
set -u
budget=${1:-60} only=${2:-MLP,SELU eager,async}
OUT=${OUT:-/tmp/gpu_out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/benchmarks${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
chmod +x /tmp/site/iree/compiler/_mlir_libs/iree-* /tmp/site/iree/_runtime_libs/iree-* 2>/dev/null
start=$(date +%s); stamp() { echo "[$(( $(date +%s) - start )) s] $*"; }
FAILED="tests/corpus/test_corpus_gp.py tests/corpus/test_corpus_hmc.py::test_grad_through_chain_float64
 tests/test_ad.py::test_control_flow_grads tests/test_ad.py::test_control_flow_grads_float64
 tests/test_ad.py::test_fori_loop_with_traced_trip_count_first_order tests/test_array.py::test_at_updates_1d
 tests/test_fft.py tests/test_float64.py::test_atan2 tests/test_fuzz.py::test_random_at_updates_never_touch_their_source
 tests/test_indexing.py tests/test_jax_names.py tests/test_jit.py::test_captured_numpy_constant_is_an_argument_not_embedded
 tests/test_jit.py::test_errors_name_the_user_line_when_pyree_is_installed tests/test_linalg_complex.py
 tests/test_nn.py::test_elementwise_values tests/test_numpy_math.py tests/test_numpy_more.py
 tests/test_primitives.py::test_dynamic_update_slice tests/test_random.py tests/test_scipy_optimize.py"
PYREE_PLATFORM=cuda PYREE_FAILURE_LOG="$OUT/failures.txt" timeout 150 python3 -m pytest -q -n 14 \
  -p no:cacheprovider -p pytest_failure_log -o addopts="" $FAILED > "$OUT/refailed.txt" 2>&1
stamp tests; grep -E "^(FAILED|ERROR)|passed|failed" "$OUT/refailed.txt" | tail -30
(cd benchmarks && timeout 100 python3 gpu_diag.py --configs cpu,cuda,cuda-no-slice-barriers) \
  > "$OUT/diag.txt" 2>&1
stamp diag; grep -v ": same$" "$OUT/diag.txt" | head -40
(cd benchmarks && PYREE_PLATFORM=cuda timeout 90 python3 gpu.py --rounds 3 --only "$only") \
  > "$OUT/table.txt" 2>&1
stamp table; cat "$OUT/table.txt"
PYREE_PLATFORM=cuda PYREE_FAILURE_LOG="$OUT/suite_failures.txt" timeout "$budget" python3 -m pytest \
  -q -n 14 -p no:cacheprovider -p pytest_failure_log -o addopts="" tests > "$OUT/suite.txt" 2>&1
stamp suite; grep "^===" "$OUT/suite_failures.txt" 2>/dev/null | sort -u | head -40
