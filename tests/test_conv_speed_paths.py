"""The CPU lowering's fast forms of a convolution (transpiler/families/windows.py): a convolution
whose result is not channels-last runs as a channels-last one between transposes; one with few
output positions and a large window (a kernel gradient) as one product per output position; one
whose reduction is longer than its result has rows otherwise is marked for data tiling. They change
only the form IREE compiles: every layout, stride, padding, dilation and group setting, and the
gradients, must give the values of a float64 NumPy reference."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree.runtime.compile import DATA_TILING_MARK

from conftest import cpu_only
from test_conv import conv_ref, same_pads, to_layout

RNG = np.random.RandomState(1)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _pads(padding, x_shape, w_shape, strides, rhs_dil):
    if padding == "VALID":
        return [(0, 0)] * (len(x_shape) - 2)
    if padding == "SAME":
        return same_pads(x_shape[2:], w_shape[2:], strides, rhs_dil)
    return padding


# (canonical x shape, canonical w shape, strides, padding, lhs dilation, rhs dilation,
#  feature groups, batch groups, layouts (lhs, rhs, out) or None for the canonical ones)
CASES = {
    "nchw_same": ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), "SAME", None, None, 1, 1, None),
    "nchw_stride2": ((2, 3, 9, 8), (5, 3, 3, 3), (2, 2), "SAME", None, None, 1, 1, None),
    "nhwc_stride2": ((2, 3, 9, 8), (5, 3, 3, 3), (2, 2), "SAME", None, None, 1, 1,
                     ("NHWC", "HWIO", "NHWC")),
    "mixed_layouts": ((2, 3, 6, 7), (4, 3, 2, 3), (1, 2), "VALID", None, None, 1, 1,
                      ("NHWC", "OIHW", "NCHW")),
    "odd_layouts": ((3, 2, 5, 6), (4, 2, 3, 2), (2, 1), [(1, 0), (2, 1)], None, (1, 2), 1, 1,
                    ("HWCN", "IHWO", "CWHN")),
    "negative_pad_dilations": ((2, 2, 7, 6), (3, 2, 3, 2), (1, 2), [(2, -1), (-1, 3)],
                               (2, 1), (1, 2), 1, 1, None),
    "feature_groups": ((2, 4, 6, 5), (6, 2, 3, 3), (1, 1), "SAME", None, None, 2, 1, None),
    "batch_groups": ((4, 2, 6, 5), (6, 2, 2, 3), (1, 2), "VALID", None, None, 1, 2, None),
    "conv_1d": ((2, 3, 11), (4, 3, 3), (2,), [(1, 2)], None, (2,), 1, 1, None),
    "conv_3d": ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), (1, 2, 1), "SAME", None, None, 1, 1, None),
}


def _case(name):
    xs, ws, strides, padding, ld, rd, fgc, bgc, layouts = CASES[name]
    x, w = randn(*xs), randn(*ws)
    kw = dict(window_strides=strides, padding=padding, lhs_dilation=ld, rhs_dilation=rd,
              feature_group_count=fgc, batch_group_count=bgc)
    want = conv_ref(x, w, strides, _pads(padding, xs, ws, strides, rd), ld, rd, fgc, bgc)
    if layouts is not None:
        lhs_l, rhs_l, out_l = layouts
        x = np.ascontiguousarray(to_layout(x, lhs_l, "NCHW"))
        w = np.ascontiguousarray(to_layout(w, rhs_l, "OIHW"))
        want = to_layout(want, out_l, "NCHW")
        kw["dimension_numbers"] = layouts
    return x, w, kw, want


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_against_reference(name):
    x, w, kw, want = _case(name)
    got = pyree.jit(lambda x, w: lax.conv_general_dilated(x, w, **kw))(x, w)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)


def _grads_ref(x, w, ct, strides, pads, rhs_dil):
    """d/dx and d/dw of sum(conv(x, w) * ct) for a 2-D NCHW convolution without groups or
    input dilation, in float64: each output is a sum over the window of padded inputs."""
    x, w, ct = (np.asarray(a, np.float64) for a in (x, w, ct))
    (lo_h, hi_h), (lo_w, hi_w) = pads
    xp = np.pad(x, ((0, 0), (0, 0), (lo_h, hi_h), (lo_w, hi_w)))
    gxp, gw = np.zeros_like(xp), np.zeros_like(w)
    oh, ow = ct.shape[2:]
    for ky in range(w.shape[2]):
        for kx in range(w.shape[3]):
            sl = (slice(None), slice(None),
                  slice(ky * rhs_dil[0], ky * rhs_dil[0] + (oh - 1) * strides[0] + 1, strides[0]),
                  slice(kx * rhs_dil[1], kx * rhs_dil[1] + (ow - 1) * strides[1] + 1, strides[1]))
            gw[:, :, ky, kx] = np.einsum("niyx,noyx->oi", xp[sl], ct)
            gxp[sl] += np.einsum("oi,noyx->niyx", w[:, :, ky, kx], ct)
    return gxp[:, :, lo_h:lo_h + x.shape[2], lo_w:lo_w + x.shape[3]], gw


@pytest.mark.parametrize("layouts,strides,rhs_dil", [
    (None, (1, 1), (1, 1)),
    (("NHWC", "HWIO", "NHWC"), (2, 2), (1, 1)),
    (("NCHW", "HWIO", "NHWC"), (1, 2), (2, 1)),
])
def test_gradients_against_reference(layouts, strides, rhs_dil):
    # Batch 3 of 9x8 images and a 3x3 kernel: the kernel gradient (9 output positions, a
    # window of the output's pixels) runs as products per position.
    x, w = randn(3, 3, 9, 8), randn(4, 3, 3, 3)
    pads = same_pads(x.shape[2:], w.shape[2:], strides, rhs_dil)
    ct = randn(*conv_ref(x, w, strides, pads, None, rhs_dil).shape)
    want_gx, want_gw = _grads_ref(x, w, ct, strides, pads, rhs_dil)
    xl, wl, ctl = x, w, ct
    if layouts is not None:
        xl = np.ascontiguousarray(to_layout(x, layouts[0], "NCHW"))
        wl = np.ascontiguousarray(to_layout(w, layouts[1], "OIHW"))
        ctl = np.ascontiguousarray(to_layout(ct, layouts[2], "NCHW"))
        want_gx = to_layout(want_gx, layouts[0], "NCHW")
        want_gw = to_layout(want_gw, layouts[1], "OIHW")

    def loss(x, w, ct):
        return jnp.sum(lax.conv_general_dilated(x, w, strides, "SAME", rhs_dilation=rhs_dil,
                                                dimension_numbers=layouts) * ct)
    gx, gw = pyree.jit(pyree.grad(loss, argnums=(0, 1)))(xl, wl, ctl)
    np.testing.assert_allclose(np.asarray(gx), want_gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(gw), want_gw, rtol=1e-4, atol=1e-4)


def test_second_order_through_the_fast_forms():
    # The Hessian-vector product of a conv loss is conv transposes of conv transposes.
    x, w = randn(2, 3, 6, 6), randn(2, 3, 3, 3)
    v = randn(*w.shape)

    def loss(w):
        return jnp.sum(jnp.tanh(lax.conv_general_dilated(x, w, (1, 1), "SAME")))
    hvp = pyree.jit(lambda w, v: pyree.jvp(pyree.grad(loss), (w,), (v,))[1])(w, v)
    grad = pyree.jit(pyree.grad(loss))
    eps = 1e-3
    fd = (np.asarray(grad(w + eps * v), np.float64) - np.asarray(grad(w - eps * v))) / (2 * eps)
    np.testing.assert_allclose(np.asarray(hvp), fd, rtol=2e-2, atol=2e-3)


@cpu_only("the CPU lowering's batch chunks")
@pytest.mark.parametrize("name", sorted(CASES))
def test_convolution_in_batch_chunks(name, monkeypatch):
    # Convolutions whose im2col columns exceed windows.IM2COL_CHUNK_BYTES run a few images at
    # a time; a tiny budget sends these small cases through that form (one image per chunk).
    from pyree.transpiler.families import windows
    monkeypatch.setattr(windows, "IM2COL_CHUNK_BYTES", 64)
    x, w, kw, want = _case(name)
    f = lambda x, w: lax.conv_general_dilated(x, w, **kw)
    text = pyree.jit(f).lower(x, w).as_text()
    chunked = CASES[name][0][0] > 1 and CASES[name][7] == 1   # several images, no batch groups
    assert ("stablehlo.concatenate" in text) == chunked
    np.testing.assert_allclose(np.asarray(pyree.jit(f)(x, w)), want, rtol=1e-4, atol=1e-4)


@cpu_only("the CPU lowering's batch chunks")
def test_gradients_in_batch_chunks(monkeypatch):
    # 40 images, one per chunk: more parts than one concatenation may join (IREE's binding
    # limit; shapes.py's concatenate lowering groups them).
    from pyree.transpiler.families import windows
    monkeypatch.setattr(windows, "IM2COL_CHUNK_BYTES", 64)
    x, w = randn(40, 3, 6, 5), randn(4, 3, 3, 3)
    pads = same_pads(x.shape[2:], w.shape[2:], (1, 1), (1, 1))
    ct = randn(*conv_ref(x, w, (1, 1), pads, None, (1, 1)).shape)
    want_gx, want_gw = _grads_ref(x, w, ct, (1, 1), pads, (1, 1))

    def loss(x, w, ct):
        return jnp.sum(lax.conv_general_dilated(x, w, (1, 1), "SAME") * ct)
    gx, gw = pyree.jit(pyree.grad(loss, argnums=(0, 1)))(x, w, ct)
    np.testing.assert_allclose(np.asarray(gx), want_gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(gw), want_gw, rtol=1e-4, atol=1e-4)


def _lowered(f, *args):
    return pyree.jit(f).lower(*args).as_text()


@cpu_only("the CPU lowering's channels-last forms")
def test_forms_in_the_lowered_module():
    x, w = np.ones((2, 3, 8, 8), np.float32), np.ones((4, 3, 3, 3), np.float32)
    nchw = _lowered(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"), x, w)
    # Computed channels-last, the result behind a barrier, then transposed back.
    assert "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]" in nchw
    assert "stablehlo.optimization_barrier" in nchw and "stablehlo.transpose" in nchw
    assert DATA_TILING_MARK not in nchw
    # One image (a batch of one, or one of the batch chunks): its product is already a plain
    # matmul writing the feature-first result in order, so it keeps its layout.
    one = _lowered(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"), x[:1], w)
    assert "[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]" in one
    assert "stablehlo.transpose" not in one and "barrier" not in one
    xh, wh = np.ones((2, 8, 8, 3), np.float32), np.ones((3, 3, 3, 4), np.float32)
    nhwc = _lowered(lambda x, w: lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")), xh, wh)
    assert "stablehlo.transpose" not in nhwc and "barrier" not in nhwc
    grads = _lowered(pyree.grad(lambda x, w: jnp.sum(lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2),
        argnums=(0, 1)), xh, wh)
    # The forward and input-gradient convolutions stay channels-last (no transpose of an
    # image: only the kernels' and the kernel gradient's); the kernel gradient (3x3 output
    # positions, a window of 8x8 pixels) is 9 products, and nothing is marked.
    lines = grads.splitlines()
    conv_lines = [line for line in lines if "stablehlo.convolution" in line]
    assert len(conv_lines) == 2
    assert all("[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]" in line for line in conv_lines)
    assert sum("stablehlo.dot_general" in line for line in lines) == 9
    transposed = [line.split("->")[-1] for line in lines if "stablehlo.transpose" in line]
    assert transposed and all("tensor<3x3x" in t for t in transposed)
    assert DATA_TILING_MARK not in grads
    # Too many output positions for products (a 9x9 kernel's gradient: 81): the data-tiled
    # convolution (reduction 2 * 64 > 3 * 81 rows).
    wide = _lowered(pyree.grad(lambda w: jnp.sum(lax.conv_general_dilated(
        xh, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")) ** 2)),
        np.ones((9, 9, 3, 4), np.float32))
    marked = [line for line in wide.splitlines() if "stablehlo.convolution" in line]
    assert len(marked) == 2 and sum(DATA_TILING_MARK in line for line in marked) == 1


@cpu_only("the CPU lowering's products per output position")
@pytest.mark.parametrize("name", sorted(CASES))
def test_convolution_as_window_products(name, monkeypatch):
    # With the thresholds lifted every convolution without groups takes that form: strides,
    # dilations of both operands (the lhs's by an interior pad), negative padding, 1-D and 3-D,
    # any layout.
    from pyree.transpiler.families import windows
    monkeypatch.setattr(windows, "WINDOW_PRODUCTS_MAX_POSITIONS", 10_000)
    monkeypatch.setattr(windows, "WINDOW_PRODUCTS_MIN_WINDOW_RATIO", 0)
    x, w, kw, want = _case(name)
    f = lambda x, w: lax.conv_general_dilated(x, w, **kw)
    text = _lowered(f, x, w)
    grouped = CASES[name][6] > 1 or CASES[name][7] > 1
    assert ("stablehlo.convolution" in text) == grouped
    assert ("stablehlo.dot_general" in text) == (not grouped)
    np.testing.assert_allclose(np.asarray(pyree.jit(f)(x, w)), want, rtol=1e-4, atol=1e-4)


def test_vmap_of_a_kernel_gradient():
    # Batching folds the vmapped axis into feature groups: the group path keeps its form.
    xs, w = randn(3, 2, 2, 6, 6), randn(4, 2, 3, 3)

    def gw(x, w):
        return pyree.grad(lambda w: jnp.sum(lax.conv_general_dilated(x, w, (1, 1), "SAME")
                                            ** 2))(w)
    got = pyree.jit(pyree.vmap(gw, in_axes=(0, None)))(xs, w)
    want = np.stack([np.asarray(pyree.jit(gw)(x, w)) for x in xs])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4)
