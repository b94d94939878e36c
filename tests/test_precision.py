"""Matrix precision as in JAX (issue 20, item 3): ``precision=`` on every contraction and
convolution, ``config.default_matmul_precision`` (also under JAX's name), and the CUDA form of
float32 contractions below HIGHEST (bf16 parts, float32 accumulation), whose error is checked
here on the CPU against float64 products (``SPLIT_FLOAT32_CONTRACTIONS`` forces that form)."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree.transpiler.backend import lower

from conftest import cpu_only

RNG = np.random.default_rng(0)
A = RNG.normal(size=(96, 160)).astype(np.float32)   # 1.2M multiply-adds: split on GPUs
B = RNG.normal(size=(160, 80)).astype(np.float32)
X = RNG.normal(size=(2, 8, 8, 3)).astype(np.float32)
W = RNG.normal(size=(3, 3, 3, 5)).astype(np.float32)
EXACT_DOT = A.astype(np.float64) @ B.astype(np.float64)
# Float32 rounding of the inputs to TF32 (10 explicit significand bits): the error class of
# JAX's default on NVIDIA GPUs, which the default here must at least match.
TF32_ERROR = 1e-4


def conv(x, w, precision=None):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", precision=precision,
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def exact_conv():
    padded = np.pad(X.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((2, 8, 8, 5))
    for i in range(8):
        for j in range(8):
            out[:, i, j] = np.einsum("nhwc,hwco->no", padded[:, i:i + 3, j:j + 3], W)
    return out


def relative_error(got, exact):
    return np.abs(np.asarray(got, np.float64) - exact).max() / np.abs(exact).max()


@pytest.fixture
def split(monkeypatch):
    # The bf16-parts form everywhere; on CUDA from sm_80 products of this size would take
    # pyree's TF32 kernel instead (its error is tests/test_cuda_gemm.py's).
    monkeypatch.setattr(lower, "SPLIT_FLOAT32_CONTRACTIONS", True)
    saved = pyree.config.cuda_gemm_kernels
    pyree.config.update("cuda_gemm_kernels", False)
    yield
    pyree.config.update("cuda_gemm_kernels", saved)


pytestmark = pytest.mark.usefixtures("jax_default_matmul_precision")


@pytest.fixture
def default_precision():
    saved = pyree.config.default_matmul_precision
    yield lambda value: pyree.config.update("jax_default_matmul_precision", value)
    pyree.config.update("default_matmul_precision", saved)


def test_each_mode_error_against_float64(split, default_precision):
    exact_c = exact_conv()
    products = pyree.jit(lambda a, b, x, w: [
        a @ b, jnp.dot(a, b, precision="high"), jnp.matmul(a, b, precision="highest"),
        jnp.einsum("ij,jk->ik", a, b, precision=lax.Precision.HIGHEST),
        lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=("default", "highest")),
        conv(x, w), conv(x, w, "highest")])
    dot_default, dot_high, dot_highest, einsum_highest, pair, conv_default, conv_highest = \
        products(A, B, X, W)
    for got in (dot_default, dot_high):
        assert 1e-7 < relative_error(got, EXACT_DOT) < TF32_ERROR / 10
    for got in (dot_highest, einsum_highest, pair):   # a pair takes the higher precision
        assert relative_error(got, EXACT_DOT) < 1e-6
    assert 1e-7 < relative_error(conv_default, exact_c) < TF32_ERROR / 10
    assert relative_error(conv_highest, exact_c) < 1e-6
    # The configured default applies to functions traced after it is set.
    default_precision("float32")
    assert relative_error(pyree.jit(lambda a, b: jnp.dot(a, b))(A, B), EXACT_DOT) < 1e-6
    default_precision("bfloat16")
    assert pyree.config.jax_default_matmul_precision == "bfloat16"
    assert 1e-7 < relative_error(pyree.jit(lambda a, b: b.T @ a.T)(A, B), EXACT_DOT.T) \
        < TF32_ERROR / 10


def test_small_products_stay_float32(split):
    # Below lower.GPU_PLAIN_FLOAT32_MACS multiply-adds a product is not split on GPUs (the
    # splits' dispatches cost more than the work): exact float32 there.
    a, b = A[:16], B[:, :16]
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert relative_error(pyree.jit(lambda a, b: a @ b)(a, b), exact) < 1e-6


def test_gradients_keep_the_precision(split):
    grad = pyree.jit(pyree.grad(lambda a: jnp.sum(jnp.dot(a, B, precision="highest") ** 2)))(A)
    exact = 2 * EXACT_DOT @ B.T.astype(np.float64)
    assert relative_error(grad, exact) < 1e-6
    text = str(pyree.make_jaxpr(pyree.grad(
        lambda a: jnp.sum(jnp.dot(a, B, precision="highest"))))(A))
    assert "precision='HIGHEST'" in text and "precision='DEFAULT'" not in text


@cpu_only("on a GPU float32 contractions below HIGHEST use bf16 parts, as JAX's use TF32")
def test_cpu_contractions_are_full_float32():
    got = pyree.jit(lambda a, b, x, w: (a @ b, conv(x, w)))(A, B, X, W)
    assert relative_error(got[0], EXACT_DOT) < 1e-6
    assert relative_error(got[1], exact_conv()) < 1e-6


def test_half_precision_inputs_with_a_float32_result():
    a, b = A.astype(jnp.bfloat16), B.astype(jnp.bfloat16)
    exact = a.astype(np.float64) @ b.astype(np.float64)   # the bf16 values, multiplied exactly
    got = jnp.matmul(a, b, preferred_element_type=np.float32)
    assert got.dtype == np.float32
    assert relative_error(got, exact) < 1e-6


def test_bad_precision_is_a_clear_error(default_precision):
    with pytest.raises(ValueError, match="unknown precision"):
        jnp.dot(A, B, precision="fp8")
    default_precision("fastest-ever")
    with pytest.raises(ValueError, match="unknown precision"):
        jnp.dot(A, B)
