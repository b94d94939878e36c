#!/usr/bin/env bash
# The one prepared GPU session (issue 20): run on the GPU machine as
#   bash .gpu/remote.sh bash benchmarks/gpu_check.sh [seconds for the suite]
# after `bash ../shared/gpu/pack.sh` here. Prints, in order: the GPU-only tests, pyree's suite
# on CUDA (a time-boxed run; each failure listed), and benchmarks/gpu.py's table.
set -u
budget=${1:-240}
echo "== GPU tests"
PYREE_PLATFORM=cuda timeout 120 python3 -m pytest -q -p no:cacheprovider -o addopts="" \
  tests/test_cuda_target.py tests/test_device_transfer.py tests/test_precision.py 2>&1 | tail -15
echo "== suite on CUDA (${budget}s)"
PYREE_PLATFORM=cuda timeout "$budget" python3 -m pytest -q -n 14 -p no:cacheprovider \
  -o addopts="" --maxfail=30 tests 2>&1 | grep -E "FAILED|ERROR|passed|failed" | tail -40
echo "== benchmarks/gpu.py"
PYREE_PLATFORM=cuda timeout 300 python3 benchmarks/gpu.py --rounds 3 2>&1 | tail -20
