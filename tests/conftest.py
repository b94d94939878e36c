"""Fixtures shared by the test files."""
import os

import pytest

# No background compiles of common eager kernels while the suite runs (tests with caches of
# their own would each start one); tests/test_eager_warmup.py checks that machinery.
os.environ["PYREE_EAGER_WARMUP"] = "0"

import pyree  # noqa: E402

# The suite on a GPU (PYREE_PLATFORM=cuda): float32 products in exact float32, as on the CPU.
# Most tests compare products with NumPy's at float32 tolerances; on a GPU the default precision
# is JAX's there (TF32 class: bf16 parts, see lower._bf16_split_product), which
# test_precision.py and test_cuda_target.py check (fixture jax_default_matmul_precision).
ON_CPU = pyree.config.platform == "cpu"
if not ON_CPU:
    pyree.config.update("default_matmul_precision", "highest")


def pytest_collection_modifyitems(config, items):
    """The suite on a platform whose device is absent (PYREE_PLATFORM=vulkan on a machine
    without a Vulkan driver, as CI's Vulkan run may meet): every test skips, saying why."""
    if ON_CPU:
        return
    try:
        pyree.devices(pyree.config.platform)
    except RuntimeError as e:
        skip = pytest.mark.skip(reason=f"PYREE_PLATFORM={pyree.config.platform}: no "
                                       f"{pyree.config.platform} device on this machine "
                                       f"({str(e).splitlines()[0][:160]})")
        for item in items:
            item.add_marker(skip)


def cuda_ptx(mlir_text: str, out_dir) -> str:
    """The PTX IREE generates for a module's dispatches, compiled for pyree's CUDA device (not
    opened: compiling for it needs no GPU), its files written under ``out_dir``."""
    import glob
    from iree.compiler import compile_str
    from pyree.runtime import compile as rcompile
    from pyree.runtime.device import Device
    text, flags = rcompile.prepare_module(mlir_text, Device("cuda").compile_flags)
    compile_str(text, extra_args=list(flags) + [
        f"--iree-hal-dump-executable-binaries-to={out_dir}"])
    return "".join(open(p).read() for p in glob.glob(os.path.join(str(out_dir), "*.ptx")))


def cpu_only(reason: str):
    """Skip a test that is about the CPU backend when the suite runs on another platform."""
    return pytest.mark.skipif(not ON_CPU, reason=f"CPU backend only: {reason}")


def _configured(name: str, value):
    """A fixture's body: config option ``name`` set to ``value`` for the test, then restored."""
    saved = getattr(pyree.config, name)
    pyree.config.update(name, value)
    yield
    pyree.config.update(name, saved)


@pytest.fixture
def jax_default_matmul_precision():
    """The default matmul precision JAX has (None) for the test, whatever the suite set."""
    yield from _configured("default_matmul_precision", None)


@pytest.fixture
def x64():
    """64-bit types on for the test, restored after it."""
    yield from _configured("enable_x64", True)
