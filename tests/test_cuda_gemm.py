"""pyree's tensor-core GEMM kernels on CUDA (transpiler/backend/cuda_gemm.py, issue 20): which
products take them and in what form, that modules holding them compile for CUDA with the kernels'
PTX, that the PTX is built from the source in the tree, which convolutions take the implicit-GEMM
kernel, and — where a CUDA device exists — values against float64 for every type pair and layout,
ragged and batched shapes, operands that are views at unaligned offsets, and convolutions (strides,
dilation, padding, layouts) with their gradients."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.dtypes import bfloat16
from pyree.runtime import device as device_module
from pyree.runtime.device import Device
from pyree.transpiler.backend import cuda_gemm
from pyree.transpiler.core.ir import ShapedArray

from conftest import cuda_ptx
from test_conv import conv_ref

pytestmark = pytest.mark.usefixtures("jax_default_matmul_precision")


@pytest.fixture
def sm80():
    pyree.config.update("cuda_target", "sm_80")
    yield
    pyree.config.update("cuda_target", "auto")


def _plan(lhs, rhs, out_dtype, dims, precision=None, target="sm_80"):
    avals = [ShapedArray(tuple(s), np.dtype(d)) for s, d in (lhs, rhs)]
    out = ShapedArray((), np.dtype(out_dtype))
    return cuda_gemm.plan(avals[0], avals[1], out, dims, precision, target)


MATMUL = (((1,), (0,)), ((), ()))


def test_which_products_take_a_kernel():
    f32 = np.float32
    p = _plan(((512, 256), f32), ((256, 384), f32), f32, MATMUL)
    assert p.kernel == "pyree_gemm_f32_f32_rr" and (p.batch, p.m, p.n, p.k) == (1, 512, 384, 256)
    # HIGHEST: exact float32 on the CUDA cores; HIGH (JAX's "tensorfloat32"): TF32. Small
    # products, matrix-vector products, targets without sm_80's instructions, float64 and
    # mixed operand types stay IREE's.
    highest = _plan(((512, 256), f32), ((256, 384), f32), f32, MATMUL, "HIGHEST")
    assert highest.kernel == "pyree_sgemm_f32_f32_rr"
    assert _plan(((512, 256), f32), ((256, 384), f32), f32, MATMUL, "HIGH").kernel == p.kernel
    assert _plan(((64, 64), f32), ((64, 64), f32), f32, MATMUL) is None
    assert _plan(((4096, 4096), f32), ((4096, 1), f32), f32, MATMUL) is None
    assert _plan(((512, 256), f32), ((256, 384), f32), f32, MATMUL, target="sm_75") is None
    assert _plan(((512, 256), np.float64), ((256, 384), np.float64), np.float64, MATMUL) is None
    assert _plan(((512, 256), bfloat16), ((256, 384), f32), f32, MATMUL) is None
    pyree.config.update("cuda_gemm_kernels", False)
    try:
        assert _plan(((512, 256), f32), ((256, 384), f32), f32, MATMUL) is None
    finally:
        pyree.config.update("cuda_gemm_kernels", True)


def test_layouts_transposes_and_padding():
    bf16 = bfloat16
    # a.T @ b as dot_general: A stored K x M (column-major), no transpose.
    p = _plan(((300, 512), bf16), ((300, 384), bf16), bf16, (((0,), (0,)), ((), ())))
    assert p.kernel == "pyree_gemm_bf16_bf16_cr" and p.lhs_order is None and p.rhs_order is None
    # a @ b.T: B stored N x K.
    p = _plan(((512, 300), bf16), ((384, 300), bf16), np.float32, (((1,), (1,)), ((), ())))
    assert p.kernel == "pyree_gemm_bf16_f32_rc"
    # 300 bf16 elements are 600 bytes: padded to 304 (608 bytes, a multiple of 16).
    assert (p.pad_a, p.pad_b) == (4, 4)
    # Batched, batch axis not first: transposed to (batch, free, contracted).
    p = _plan(((64, 8, 200), np.float16), ((8, 200, 96), np.float16), np.float16,
              (((2,), (1,)), ((1,), (0,))))
    assert p.lhs_order == (1, 0, 2) and p.rhs_order is None
    assert (p.batch, p.m, p.n, p.k) == (8, 64, 96, 200) and p.kernel.endswith("_rr")


def test_products_of_few_tiles_split_k():
    # Few 128 x 128 tiles over a long k: the slices of k run side by side (cuda_gemm.
    # split_count), their float32 products summed; bf16/f16 results from float32 partials.
    f32 = np.float32
    p = _plan(((64, 1024), f32), ((1024, 1024), f32), f32, MATMUL)   # an RNN step's product
    assert p.split == 8 and p.kernel == "pyree_gemm_f32_f32_rr"
    p = _plan(((4096, 4096), f32), ((4096, 10), f32), f32, MATMUL)   # an MLP's last layer
    assert p.split == 8
    p = _plan(((64, 1024), bfloat16), ((1024, 1024), bfloat16), bfloat16, MATMUL)
    assert p.split == 8 and p.kernel == "pyree_gemm_bf16_f32_rr"
    assert _plan(((64, 1024), f32), ((1024, 1024), f32), f32, MATMUL, "HIGHEST").split == 8
    # Enough tiles, batched products, or a k without aligned slices of 128: no split.
    assert _plan(((4096, 1024), f32), ((1024, 4096), f32), f32, MATMUL).split == 1
    assert _plan(((4, 64, 1024), f32), ((4, 1024, 512), f32), f32,
                 (((2,), (1,)), ((0,), (0,)))).split == 1
    assert _plan(((64, 1002), f32), ((1002, 1024), f32), f32, MATMUL).split == 1
    assert _plan(((64, 200), f32), ((200, 1024), f32), f32, MATMUL).split == 1


@pytest.mark.parametrize("layout", cuda_gemm.LAYOUTS)
def test_split_k_arguments_read_each_slice(layout):
    # The kernel's arguments for a split product, applied as cuda_gemm.cu reads its flat
    # operands (element (m, k) of slice z of A at z * strideA + m * lda + k, or k * lda + m
    # stored K x M; B likewise), sum to the product.
    m, n, k = 100, 260, 1024
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    stored_a = a.T if layout[0] == "c" else a
    stored_b = b.T if layout[1] == "c" else b
    dims = (((0 if layout[0] == "c" else 1,), (1 if layout[1] == "c" else 0,)), ((), ()))
    p = _plan((stored_a.shape, np.float32), (stored_b.shape, np.float32), np.float32, dims)
    assert p.split > 1 and p.kernel.endswith(layout)
    pad = lambda x, extra: np.pad(x, ((0, 0), (0, extra))).ravel()
    flat_a, flat_b = pad(stored_a, p.pad_a), pad(stored_b, p.pad_b)
    rows, cols, ks, lda, ldb, ldc, stride_a, stride_b, _ = cuda_gemm.kernel_constants(p)
    mi, ni, ki = np.arange(rows)[:, None], np.arange(cols)[None, :], np.arange(ks)
    total = np.zeros((rows, cols))
    for z in range(p.split):
        a_z = flat_a[z * stride_a + (ki[None, :] * lda + mi if p.a_col else mi * lda + ki)]
        b_z = flat_b[z * stride_b + (ni * ldb + ki[:, None] if p.b_col else
                                     ki[:, None] * ldb + ni)]
        total += a_z @ b_z
    np.testing.assert_allclose(total, a @ b, rtol=1e-10, atol=1e-9)


# dot_general forms: (lhs shape, rhs shape, dimension numbers) — every stored layout of A and B,
# contiguous extents that need padding (odd sizes), batch axes in and out of place.
PRODUCT_FORMS = [
    ((131, 77), (77, 257), (((1,), (0,)), ((), ()))),           # A M x K, B K x N
    ((77, 131), (77, 257), (((0,), (0,)), ((), ()))),           # A K x M (a.T @ b)
    ((131, 77), (257, 77), (((1,), (1,)), ((), ()))),           # B N x K (a @ b.T)
    ((77, 131), (257, 77), (((0,), (1,)), ((), ()))),           # both column-major
    ((3, 131, 77), (3, 77, 130), (((2,), (1,)), ((0,), (0,)))),  # batched
    ((131, 3, 77), (77, 3, 130), (((2,), (0,)), ((1,), (1,)))),  # batch axes transposed
    ((9, 11, 77), (77, 13, 17), (((2,), (0,)), ((), ()))),      # several free axes
    ((64, 512), (512, 200), (((1,), (0,)), ((), ()))),          # split k, every layout
    ((512, 64), (512, 200), (((0,), (0,)), ((), ()))),
    ((64, 512), (200, 512), (((1,), (1,)), ((), ()))),
    ((512, 64), (200, 512), (((0,), (1,)), ((), ()))),
]


@pytest.mark.parametrize("dtype", [np.float32, bfloat16, np.float16])
@pytest.mark.parametrize("form", range(len(PRODUCT_FORMS)))
def test_kernel_plans_on_the_cpu(dtype, form, monkeypatch):
    # The kernels' lowering (transposes, rank-3 reshapes, padding, layouts, result reshape)
    # with the kernel's arithmetic done by a dot_general on the CPU (cuda_gemm.EMULATE_ON_CPU).
    lhs_shape, rhs_shape, dims = PRODUCT_FORMS[form]
    rng = np.random.default_rng(form)
    x = rng.standard_normal(lhs_shape).astype(dtype)
    y = rng.standard_normal(rhs_shape).astype(dtype)
    f = lambda x, y: pyree.lax.dot_general(x, y, dims, preferred_element_type=jnp.float32)
    p = _plan((lhs_shape, dtype), (rhs_shape, dtype), np.float32, dims)
    assert p is not None and (p.split > 1) == (lhs_shape[0] * lhs_shape[1] == 64 * 512)
    monkeypatch.setattr(cuda_gemm, "EMULATE_ON_CPU", True)
    got = np.asarray(pyree.jit(f)(x, y))
    want = _reference_dot_general(x.astype(np.float64), y.astype(np.float64), dims)
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


def _reference_dot_general(x, y, dims):
    (lc, rc), (lb, rb) = dims
    lf = [d for d in range(x.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(y.ndim) if d not in rc and d not in rb]
    xt = np.transpose(x, list(lb) + lf + list(lc))
    yt = np.transpose(y, list(rb) + list(rc) + rf)
    nb, nl, nc = len(lb), len(lf), len(lc)
    bshape = xt.shape[:nb]
    xm = xt.reshape(bshape + (int(np.prod(xt.shape[nb:nb + nl])), -1))
    ym = yt.reshape(bshape + (int(np.prod(yt.shape[nb:nb + nc])), -1))
    out = np.matmul(xm, ym)
    return out.reshape(bshape + xt.shape[nb:nb + nl] + yt.shape[nb + nc:])


def test_modules_with_kernels_compile_for_cuda(sm80, tmp_path):
    cuda = Device("cuda")   # (not opened: compiling needs no GPU)
    a, b = np.ones((256, 320), np.float32), np.ones((320, 200), np.float32)
    text = pyree.jit(lambda a, b: jnp.tanh(a @ b), device=cuda).lower(a, b).as_text()
    assert 'hal.dispatch.extern "pyree_gemm_f32_f32_rr"' in text
    ptx = cuda_ptx(text, tmp_path / "f32")
    assert "wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32" in ptx
    assert "cp.async.cg.shared.global" in ptx
    h = np.ones((4, 256, 136), bfloat16)
    text = pyree.jit(lambda h: jnp.einsum("bij,bkj->bik", h, h), device=cuda).lower(h).as_text()
    ptx = cuda_ptx(text, tmp_path / "bf16")
    assert ".m16n16k16.f32.bf16.bf16.f32" in ptx
    # HIGHEST: fused multiply-adds, no tensor cores. On the CPU, no kernel.
    highest = pyree.jit(lambda a, b: jnp.matmul(a, b, precision="highest"), device=cuda)
    ptx = cuda_ptx(highest.lower(a, b).as_text(), tmp_path / "highest")
    assert "fma.rn.f32" in ptx and "mma" not in ptx
    cpu = pyree.devices("cpu")[0]   # (the default device of a GPU run is the GPU)
    assert "hal.dispatch.extern" not in pyree.jit(lambda a, b: a @ b, device=cpu).lower(
        a, b).as_text()


@pytest.mark.parametrize("damage", ["truncated", "kernel missing"])
def test_damaged_kernel_file_is_a_clear_error(damage, sm80, tmp_path, monkeypatch):
    import gzip
    path = tmp_path / "kernels.json.gz"
    if damage == "truncated":
        path.write_bytes(open(cuda_gemm.PTX_FILE, "rb").read()[:1000])
    else:
        with gzip.open(path, "wt") as f:
            f.write('{"kernels": {}}')
    monkeypatch.setenv("PYREE_CUDA_GEMM_PTX", str(path))
    cuda_gemm._ptx_file.cache_clear()
    try:
        a = np.ones((256, 256), np.float32)
        with pytest.raises(RuntimeError, match="CUDA kernels could not be read.*"
                                               "PYREE_CUDA_GEMM_KERNELS=0"):
            pyree.jit(lambda a, b: a @ b, device=Device("cuda")).lower(a, a)
    finally:
        monkeypatch.delenv("PYREE_CUDA_GEMM_PTX")
        cuda_gemm._ptx_file.cache_clear()


def test_ptx_is_built_from_the_source_in_the_tree():
    # Rebuild with `python -m pyree.transpiler.backend.build_cuda_kernels` after changing
    # cuda_gemm.cu.
    assert cuda_gemm._ptx_file()["source_sha256"] == cuda_gemm.source_hash()
    for name in cuda_gemm.KERNELS:
        ptx = cuda_gemm.kernel_ptx(name)
        assert f".entry {name}(" in ptx and ".target sm_80" in ptx
        assert f".version {cuda_gemm.PTX_VERSION}" in ptx


def _conv(x, w, strides=(1, 1), padding="SAME", rhs_dilation=(1, 1), numbers=None,
          precision=None):
    return pyree.lax.conv_general_dilated(x, w, strides, padding, rhs_dilation=rhs_dilation,
                                         dimension_numbers=numbers, precision=precision)


def test_which_convolutions_take_the_implicit_gemm_kernel(sm80, tmp_path):
    cuda = Device("cuda")
    x, w = np.ones((4, 16, 32, 32), np.float32), np.ones((32, 16, 3, 3), np.float32)
    kernels = lambda f, *args: [line.split('"')[1] for line in
                                pyree.jit(f, device=cuda).lower(*args).as_text().splitlines()
                                if "hal.dispatch.extern" in line]
    assert kernels(_conv, x, w) == ["pyree_conv2d_f32_f32"]
    # Its gradient: the input's is a convolution of the same kind; the filter's (a window as
    # large as the image, 3x3 results) stays IREE's.
    step = pyree.grad(lambda x, w: jnp.sum(_conv(x, w) ** 2), argnums=(0, 1))
    assert kernels(step, x, w) == ["pyree_conv2d_f32_f32"] * 2
    nhwc = ("NHWC", "HWIO", "NHWC")
    assert kernels(lambda x, w: _conv(x, w, (2, 2), numbers=nhwc),
                   np.ones((4, 32, 32, 16), np.float32), np.ones((3, 3, 16, 32), np.float32))
    assert not kernels(lambda x, w: _conv(x, w, precision="highest"), x, w)
    assert not kernels(_conv, x.astype(bfloat16), w.astype(bfloat16))
    grouped = lambda x, w: pyree.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                                          feature_group_count=2)
    assert not kernels(grouped, x, w[:, :8])
    ptx = cuda_ptx(pyree.jit(_conv, device=cuda).lower(x, w).as_text(), tmp_path)
    assert "cp.async.ca.shared.global" in ptx and ".m16n16k8.f32.tf32.tf32.f32" in ptx


# -- on a CUDA device ---------------------------------------------------------------------------

def _cuda_or_skip():
    if device_module.cuda_compute_capability() is None:
        pytest.skip("no CUDA device")
    cuda = pyree.devices("cuda")[0]
    if cuda_gemm._arch(device_module.cuda_target(cuda.id)) < 80:
        pytest.skip("the kernels need sm_80")
    return cuda


# Relative error bounds against float64, in units of the result's largest magnitude: TF32 keeps
# 11 significand bits, bf16 8, f16 11; rounding a bf16/f16 result adds half an ulp; exact
# float32 ("highest") only its rounding.
_BOUND = {("f32", "f32"): 2e-3, ("bf16", "f32"): 1e-2, ("bf16", "bf16"): 2e-2,
          ("f16", "f32"): 2e-3, ("f16", "f16"): 4e-3, ("f32", "highest"): 2e-6}
_DTYPES = {"f32": np.float32, "bf16": bfloat16, "f16": np.float16}


@pytest.mark.parametrize("pair", sorted(_BOUND))
@pytest.mark.parametrize("layout", cuda_gemm.LAYOUTS)
def test_kernel_values(pair, layout):
    cuda = _cuda_or_skip()
    in_dtype, out_dtype = _DTYPES[pair[0]], _DTYPES.get(pair[1], np.float32)
    precision = "highest" if pair[1] == "highest" else None
    rng = np.random.default_rng(7)
    for m, n, k in ((256, 384, 512), (131, 257, 77), (1000, 130, 300)):
        a = rng.standard_normal((m, k)).astype(in_dtype)
        b = rng.standard_normal((k, n)).astype(in_dtype)
        want = a.astype(np.float64) @ b.astype(np.float64)
        stored_a = a.T.copy() if layout[0] == "c" else a
        stored_b = b.T.copy() if layout[1] == "c" else b
        dims = (((0 if layout[0] == "c" else 1,), (1 if layout[1] == "c" else 0,)), ((), ()))
        f = pyree.jit(lambda x, y: pyree.lax.dot_general(
            x, y, dims, precision=precision, preferred_element_type=out_dtype))
        got = np.asarray(f(pyree.device_put(stored_a, cuda), pyree.device_put(stored_b, cuda)),
                         np.float64)
        error = np.abs(got - want).max() / np.abs(want).max()
        assert error < _BOUND[pair], (pair, layout, (m, n, k), error)


def test_kernel_batched_and_unaligned_views():
    cuda = _cuda_or_skip()
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 200, 136)).astype(np.float32)
    b = rng.standard_normal((3, 136, 260)).astype(np.float32)
    got = pyree.jit(jnp.matmul)(pyree.device_put(a, cuda), pyree.device_put(b, cuda))
    want = a.astype(np.float64) @ b
    assert np.abs(np.asarray(got) - want).max() / np.abs(want).max() < 2e-3
    # An operand one element into a buffer (a view IREE may pass at a 4-byte offset).
    flat = rng.standard_normal(1 + 300 * 256).astype(np.float32)
    x = pyree.device_put(flat, cuda)
    w = rng.standard_normal((256, 200)).astype(np.float32)
    got = pyree.jit(lambda x, w: x[1:].reshape(300, 256) @ w)(x, pyree.device_put(w, cuda))
    want = flat[1:].reshape(300, 256).astype(np.float64) @ w
    assert np.abs(np.asarray(got) - want).max() / np.abs(want).max() < 2e-3


@pytest.mark.parametrize("strides, padding, dilation, numbers", [
    ((1, 1), ((1, 1), (1, 1)), (1, 1), None),
    ((2, 1), ((0, 2), (1, 0)), (1, 2), None),
    ((1, 1), ((-1, 1), (2, 2)), (2, 1), None),
    ((2, 2), ((1, 1), (1, 1)), (1, 1), ("NHWC", "HWIO", "NHWC")),
])
def test_kernel_convolutions(strides, padding, dilation, numbers):
    cuda = _cuda_or_skip()
    rng = np.random.default_rng(10)
    x = rng.standard_normal((6, 24, 37, 30)).astype(np.float32)
    w = (rng.standard_normal((40, 24, 3, 3)) / 15).astype(np.float32)
    want = conv_ref(x, w, strides, padding, rhs_dil=dilation)
    if numbers is not None:
        x, w, want = np.moveaxis(x, 1, -1), np.transpose(w, (2, 3, 1, 0)), np.moveaxis(want, 1, -1)
    f = pyree.jit(lambda x, w: _conv(x, w, strides, padding, dilation, numbers))
    got = np.asarray(f(pyree.device_put(x, cuda), pyree.device_put(w, cuda)), np.float64)
    assert got.shape == want.shape
    assert np.abs(got - want).max() / np.abs(want).max() < 2e-3


def test_kernel_convolution_gradients():
    cuda = _cuda_or_skip()
    rng = np.random.default_rng(11)
    x = rng.standard_normal((8, 32, 40, 40)).astype(np.float32)
    w = (rng.standard_normal((64, 32, 3, 3)) / 17).astype(np.float32)
    x, w = pyree.device_put(x, cuda), pyree.device_put(w, cuda)
    grads = lambda precision: pyree.jit(pyree.grad(
        lambda x, w: jnp.sum(_conv(x, w, precision=precision) ** 2) / 2, argnums=(0, 1)))(x, w)
    for g, h in zip(grads(None), grads("highest")):   # (HIGHEST: exact float32)
        g, h = np.asarray(g), np.asarray(h)
        assert np.abs(g - h).max() / np.abs(h).max() < 4e-3
