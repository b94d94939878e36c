"""The CUDA architecture pyree compiles for comes from the device (issue 20, item 2), can be set
by hand, and is part of every compile-cache key. CI has no GPU: these tests compile for CUDA
and read the PTX."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.dtypes import bfloat16
from pyree.runtime import compile as rcompile
from pyree.runtime import device as device_module
from pyree.runtime.device import Device, cuda_target_for

from conftest import cuda_ptx

# The tensor-core checks are about JAX's default precision, whatever the suite set.
pytestmark = pytest.mark.usefixtures("jax_default_matmul_precision")


@pytest.fixture
def cuda_target():
    def choose(target):
        pyree.config.update("cuda_target", target)
    yield choose
    pyree.config.update("cuda_target", "auto")


def test_target_from_compute_capability():
    # Hopper and later: sm_80 (IREE 3.13 has no sm_90; its PTX runs there through the JIT).
    assert cuda_target_for((9, 0)) == "sm_80"
    assert cuda_target_for((10, 0)) == "sm_80"
    assert cuda_target_for((8, 9)) == "sm_89"
    assert cuda_target_for((8, 7)) == "sm_86"
    assert cuda_target_for((8, 0)) == "sm_80"
    assert cuda_target_for((7, 5)) == "sm_75"
    assert cuda_target_for((7, 2)) == "sm_70"
    assert cuda_target_for((6, 1)) == "sm_60"
    assert cuda_target_for(None) == "sm_60"


def test_target_set_by_hand_and_in_the_cache_key(cuda_target):
    text = "module {}"
    keys = set()
    for target in ("sm_80", "sm_86"):
        cuda_target(target)
        flags = Device("cuda").compile_flags
        assert f"--iree-cuda-target={target}" in flags
        keys.add(rcompile.cache_key(text, flags))
    assert len(keys) == 2
    cuda_target("sm_90")
    with pytest.raises(ValueError, match="cuda_target"):
        Device("cuda").compile_flags
    env = dict(os.environ, PYREE_CUDA_TARGET="sm_75")
    out = subprocess.run([sys.executable, "-c", "from pyree.runtime.device import Device; "
                          "print(Device('cuda').target_flags[-1])"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "--iree-cuda-target=sm_75", out.stderr


def _ptx(f, args, tmp_path):
    return cuda_ptx(pyree.jit(f, device=Device("cuda")).lower(*args).as_text(), tmp_path)


@pytest.mark.parametrize("dtype", [bfloat16, np.float16])
def test_half_precision_matmul_uses_tensor_cores_on_sm80(dtype, cuda_target, tmp_path):
    cuda_target("sm_80")
    a = np.ones((128, 128), dtype)
    ptx = _ptx(lambda a, b: a @ b, (a, a), tmp_path)
    assert ".target sm_80" in ptx
    assert "mma.sync" in ptx


@pytest.mark.skipif(device_module.cuda_compute_capability() is None, reason="no CUDA device")
def test_target_of_the_device_present():
    capability = device_module.cuda_compute_capability()
    flags = Device("cuda").target_flags
    assert f"--iree-cuda-target={cuda_target_for(capability)}" in flags


def _conv(x, w, precision=None):
    return pyree.lax.conv_general_dilated(x, w, (1, 1), "SAME", precision=precision,
                                          dimension_numbers=("NHWC", "HWIO", "NHWC"))


@pytest.mark.parametrize("dtype", [np.float32, bfloat16, np.float16])
def test_contractions_run_on_tensor_cores_unless_highest(dtype, cuda_target, tmp_path):
    # float32 below HIGHEST runs as TF32 products in pyree's kernel (cuda_gemm.py) or, for a
    # convolution, as bf16 parts (lower._bf16_split_product); half precision accumulates in
    # float32. All reach mma.sync; HIGHEST float32 does not.
    cuda_target("sm_80")
    a = np.ones((128, 128), dtype)
    x, w = np.ones((4, 16, 16, 32), dtype), np.ones((3, 3, 32, 64), dtype)
    assert "mma.sync" in _ptx(lambda a, b: a @ b, (a, a), tmp_path / "dot")
    assert "mma.sync" in _ptx(_conv, (x, w), tmp_path / "conv")
    if dtype == np.float32:
        highest = _ptx(lambda a, b: jnp.matmul(a, b, precision="highest"), (a, a),
                       tmp_path / "highest")
        assert "mma.sync" not in highest


def _compile_for_cuda(f, *args):
    cuda = Device("cuda")   # (not opened)
    return rcompile.compile_mlir(pyree.jit(f, device=cuda).lower(*args).as_text(),
                                 cuda.compile_flags)


@pytest.mark.parametrize("dtype", [np.float32, bfloat16])
def test_depthwise_convolution_compiles_for_cuda(dtype, cuda_target):
    # IREE 3.13 failed on a depthwise convolution of bf16 operands with a float32 result (the
    # default-precision form of a float32 one): such convolutions are computed in float32.
    cuda_target("sm_80")
    x, w = np.ones((1, 3, 5, 5), dtype), np.ones((3, 1, 3, 3), dtype)
    assert _compile_for_cuda(lambda x, w: pyree.lax.conv_general_dilated(
        x, w, (2, 2), "SAME", feature_group_count=3), x, w)


def test_float64_and_long_reductions_compile_for_cuda(cuda_target, x64):
    # float64 stays float64 (IREE's default demotion broke bit manipulations of it); a
    # reduction of many elements into one runs in two stages (one GPU workgroup makes one
    # output), 2-D ones included.
    cuda_target("sm_80")
    assert _compile_for_cuda(lambda x: jnp.sin(x) + jnp.cbrt(x), np.ones(3))
    m = np.ones((64, 1024), np.float32)
    assert _compile_for_cuda(lambda m: (jnp.tanh(m).sum(), jnp.max(jnp.abs(m)), m.mean()), m)
    cuda = Device("cuda")
    text = pyree.jit(lambda v: jnp.max(v), device=cuda).lower(np.ones(1 << 20, np.float32)).as_text()
    assert text.count("stablehlo.reduce") >= 2
