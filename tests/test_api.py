"""Top-level API: devices, device_put/get, block_until_ready, pyree.tree, eager compile reuse."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.runtime.compile import CompileStats


def test_devices_and_backend():
    devs = pyree.devices()
    platform = pyree.config.platform
    assert len(devs) == 1 and devs[0].platform == platform
    assert repr(devs[0]) == {"cpu": "CpuDevice(id=0)", "cuda": "CudaDevice(id=0)",
                             "vulkan": "VulkanDevice(id=0)"}[platform]
    # JAX's name for its CUDA backend
    assert pyree.default_backend() == ("cpu" if platform == "cpu" else "gpu")
    assert pyree.device_count() == 1


def test_device_put_and_get_pytrees():
    tree = {"a": np.arange(3.0), "b": (1, 2.5, True)}
    on_device = pyree.device_put(tree)
    assert isinstance(on_device["a"], pyree.Array)
    assert on_device["a"].dtype == np.float32  # float64 is canonicalised without x64
    assert on_device["b"][0].weak_type and on_device["b"][0].dtype == np.int32
    assert on_device["b"][2].dtype == np.bool_ and not on_device["b"][2].weak_type
    back = pyree.device_get(on_device)
    assert isinstance(back["a"], np.ndarray)
    np.testing.assert_array_equal(back["a"], [0, 1, 2])
    assert pyree.block_until_ready(on_device) is on_device


def test_tree_module_short_names():
    assert pyree.tree.map(lambda x: x + 1, [1, (2, 3)]) == [2, (3, 4)]
    assert pyree.tree.leaves({"b": 2, "a": 1}) == [1, 2]
    leaves, treedef = pyree.tree.flatten((1, None, [2]))
    assert pyree.tree.unflatten(treedef, [5, 6]) == (5, None, [6])


def test_eager_new_shapes_reuse_compiled_kernels():
    # Each primitive is compiled once per dtype and rank; new shapes compile nothing.
    jnp.sin(jnp.ones(3)) * 2.0  # warm the kernels used below
    jnp.ones((2, 2)).sum(0)
    before = CompileStats.compiled
    for n in (5, 17, 1000):
        x = jnp.ones(n)
        np.testing.assert_allclose(np.asarray(jnp.sin(x) * 2.0), np.sin(np.ones(n)) * 2, rtol=1e-6)
    for shape in ((3, 4), (10, 1), (7, 9)):
        np.testing.assert_allclose(np.asarray(jnp.ones(shape).sum(0)), np.ones(shape).sum(0))
    assert CompileStats.compiled == before


def test_eager_reshape_is_a_free_view():
    x = jnp.arange(12.0)
    before = CompileStats.compiled + CompileStats.memory_hits + CompileStats.disk_hits
    y = x.reshape(3, 4).reshape(2, 6).reshape(12)
    assert CompileStats.compiled + CompileStats.memory_hits + CompileStats.disk_hits == before
    assert y.buffer_view().get_buffer().byte_length() == x.buffer_view().get_buffer().byte_length()
    np.testing.assert_array_equal(np.asarray(y), np.arange(12.0))


def test_live_arrays_reports_and_delete_frees():
    x = jnp.arange(5.0) + 1
    assert any(a is x for a in pyree.live_arrays())
    x.delete()
    assert x.is_deleted()
    assert not any(a is x for a in pyree.live_arrays())
    with pytest.raises(RuntimeError, match="deleted"):
        x + 1


def test_config_update_and_unknown_option():
    assert pyree.config.enable_x64 is False
    with pytest.raises(AttributeError, match="no option 'enable_x65'"):
        pyree.config.update("enable_x65", True)


# The surface the stdlib issue names; each has value tests in its own file.
NUMPY_NAMES = """
array asarray zeros ones full empty zeros_like ones_like full_like empty_like arange linspace
logspace eye identity tri tril triu diag diagonal meshgrid
add subtract multiply divide floor_divide mod power reciprocal square cbrt exp2 log2 log10 sin cos
tan arcsin arccos arctan sinh cosh tanh arcsinh arccosh arctanh arctan2 hypot logaddexp deg2rad
rad2deg sinc trunc rint copysign heaviside nan_to_num isnan isinf isfinite
equal not_equal less less_equal greater greater_equal logical_and logical_or logical_not
logical_xor bitwise_and bitwise_or bitwise_xor invert left_shift right_shift all any isclose
allclose array_equal
sum prod mean std var max min argmax argmin cumsum cumprod nansum nanmean nanmax nanmin median
quantile percentile average ptp count_nonzero
ravel swapaxes moveaxis hstack vstack column_stack split array_split tile repeat flip roll rot90
pad atleast_1d atleast_2d atleast_3d take take_along_axis broadcast_arrays
sort argsort searchsorted unique nonzero argwhere
dot vdot inner outer matmul tensordot einsum kron trace cross
convolve correlate diff interp polyval histogram
bool_ int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 bfloat16 float32 float64
complex64 finfo iinfo result_type promote_types pi e inf nan newaxis
""".split()
LINALG_NAMES = "norm inv solve det slogdet cholesky".split()
LAX_NAMES = """
dot_general conv_general_dilated conv reduce_window gather scatter sort top_k cumsum cumprod
cummax cummin clamp broadcasted_iota erf_inv lgamma digamma bitcast_convert_type
population_count igamma igammac igamma_grad_a random_gamma_grad
""".split()
NN_NAMES = """
relu relu6 gelu silu sigmoid softplus log_sigmoid elu selu leaky_relu softmax log_softmax
logsumexp one_hot standardize
""".split()

INITIALIZER_NAMES = """
zeros ones constant normal uniform truncated_normal variance_scaling glorot_uniform glorot_normal
xavier_uniform xavier_normal he_uniform he_normal kaiming_uniform kaiming_normal lecun_uniform
lecun_normal orthogonal
""".split()


def test_the_stdlib_surface_exists():
    from pyree import lax, nn
    missing = [f"jnp.{n}" for n in NUMPY_NAMES if not hasattr(jnp, n)]
    missing += [f"jnp.linalg.{n}" for n in LINALG_NAMES if not hasattr(jnp.linalg, n)]
    missing += [f"lax.{n}" for n in LAX_NAMES if not hasattr(lax, n)]
    missing += [f"nn.{n}" for n in NN_NAMES if not hasattr(nn, n)]
    missing += [f"nn.initializers.{n}" for n in INITIALIZER_NAMES
                if not hasattr(nn.initializers, n)]
    assert not missing


@pytest.mark.parametrize("module", ["pyree", "pyree.lax", "pyree.numpy", "pyree.numpy.linalg",
                                    "pyree.nn", "pyree._custom_derivatives", "pyree.transpiler"])
def test_each_module_can_be_imported_first(module):
    import subprocess
    import sys
    code = f"import {module}; import pyree.numpy as jnp; print(float(jnp.exp2(3.0)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "8.0", out.stderr[-2000:]
