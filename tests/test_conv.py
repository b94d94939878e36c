"""lax.conv_general_dilated (and conv, conv_with_general_padding, conv_transpose) and
jnp.convolve / jnp.correlate against a direct NumPy reference and NumPy itself; derivatives
against finite differences (check_grads); vmap against stacked per-example results.

Compile counts are kept low: the jit checks of many configurations share one program, and the
derivative and vmap checks jit the function they transform.
"""
import math

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree.test_util import check_grads

RNG = np.random.RandomState(0)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# -- reference -------------------------------------------------------------------------------------

def conv_ref(x, w, strides, pads, lhs_dil=None, rhs_dil=None, fgc=1, bgc=1):
    """Direct convolution of x (N, C, *spatial) with w (O, I, *window): the input dilated,
    padded (negative = cropped), and every window position summed by hand."""
    nsp = x.ndim - 2
    lhs_dil = lhs_dil or (1,) * nsp
    rhs_dil = rhs_dil or (1,) * nsp
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    dil_shape = x.shape[:2] + tuple((n - 1) * d + 1 if n else 0
                                    for n, d in zip(x.shape[2:], lhs_dil))
    xd = np.zeros(dil_shape)
    xd[(slice(None), slice(None)) + tuple(slice(None, None, d) for d in lhs_dil)] = x
    for i, (lo, hi) in enumerate(pads):
        ax = 2 + i
        if lo >= 0:
            shape = list(xd.shape)
            shape[ax] = lo
            xd = np.concatenate([np.zeros(shape), xd], ax)
        else:
            xd = np.take(xd, range(-lo, xd.shape[ax]), axis=ax)
        if hi >= 0:
            shape = list(xd.shape)
            shape[ax] = hi
            xd = np.concatenate([xd, np.zeros(shape)], ax)
        else:
            xd = np.take(xd, range(0, xd.shape[ax] + hi), axis=ax)
    n, c = x.shape[:2]
    o_count, i_count = w.shape[:2]
    window = w.shape[2:]
    out_sp = []
    for p, k, d, s in zip(xd.shape[2:], window, rhs_dil, strides):
        kd = (k - 1) * d + 1
        out_sp.append((p - kd) // s + 1 if p >= kd else 0)
    out = np.zeros((n // bgc, o_count) + tuple(out_sp))
    if 0 in out_sp:
        return out
    for o in range(o_count):
        g = o // (o_count // fgc)
        b = o // (o_count // bgc)
        xs = xd[b * (n // bgc):(b + 1) * (n // bgc), g * i_count:(g + 1) * i_count]
        for kidx in np.ndindex(*window):
            sl = tuple(slice(k * d, k * d + (m - 1) * s + 1, s)
                       for k, d, m, s in zip(kidx, rhs_dil, out_sp, strides))
            patch = xs[(slice(None), slice(None)) + sl]
            out[:, o] += np.tensordot(patch, w[(o, slice(None)) + kidx], axes=([1], [0]))
    return out


def same_pads(in_sp, window, strides, rhs_dil=None, lower=False):
    pads = []
    for i, (n, k, s) in enumerate(zip(in_sp, window, strides)):
        kd = (k - 1) * (rhs_dil[i] if rhs_dil else 1) + 1
        total = max((math.ceil(n / s) - 1) * s + kd - n, 0)
        pads.append((total - total // 2, total // 2) if lower else (total // 2, total - total // 2))
    return pads


def to_layout(a, layout, canonical):
    """An array in the canonical layout (e.g. 'NCHW') rearranged into ``layout`` ('NHWC')."""
    return np.transpose(a, [canonical.index(c) for c in layout])


# Cases: shapes in canonical layout, and the lax call's keywords. ``pads`` is the reference's.
CASES = {
    "plain_2d": dict(x=(2, 3, 6, 5), w=(4, 3, 3, 2), strides=(1, 1), padding="VALID"),
    "strided_same": dict(x=(2, 3, 7, 6), w=(4, 3, 3, 3), strides=(2, 2), padding="SAME"),
    "same_lower": dict(x=(1, 2, 6, 6), w=(3, 2, 2, 2), strides=(1, 1), padding="SAME_LOWER"),
    "explicit_neg": dict(x=(2, 2, 7, 6), w=(3, 2, 3, 2), strides=(2, 1),
                         padding=[(2, -1), (0, 3)]),
    "dilations": dict(x=(2, 3, 5, 6), w=(2, 3, 3, 2), strides=(1, 2), padding=[(1, 2), (2, 0)],
                      lhs_dilation=(2, 1), rhs_dilation=(1, 2)),
    "groups": dict(x=(2, 4, 6, 6), w=(6, 2, 3, 3), strides=(1, 1), padding="SAME",
                   feature_group_count=2),
    "depthwise": dict(x=(1, 3, 5, 5), w=(3, 1, 3, 3), strides=(2, 2), padding="SAME",
                      feature_group_count=3, rhs_dilation=(2, 1)),
    "batch_groups": dict(x=(4, 2, 6, 5), w=(6, 2, 2, 3), strides=(1, 2), padding="VALID",
                         batch_group_count=2),
    "conv_1d": dict(x=(2, 3, 9), w=(2, 3, 4), strides=(3,), padding=[(1, 2)],
                    rhs_dilation=(2,)),
    "conv_3d": dict(x=(1, 2, 4, 5, 4), w=(2, 2, 2, 3, 2), strides=(1, 2, 1), padding="SAME"),
    "empty_output": dict(x=(1, 1, 2, 2), w=(1, 1, 3, 3), strides=(1, 1), padding="VALID"),
}


def _reference_for(case, x, w):
    kw = dict(case)
    shape_x, shape_w = kw.pop("x"), kw.pop("w")
    padding = kw["padding"]
    rhs_dil = kw.get("rhs_dilation")
    if isinstance(padding, str):
        pads = ([(0, 0)] * len(shape_x[2:]) if padding == "VALID" else
                same_pads(shape_x[2:], shape_w[2:], kw["strides"], rhs_dil,
                          lower=padding == "SAME_LOWER"))
    else:
        pads = padding
    return conv_ref(x, w, kw["strides"], pads, kw.get("lhs_dilation"), rhs_dil,
                    kw.get("feature_group_count", 1), kw.get("batch_group_count", 1))


def _lax_kwargs(case):
    kw = {k: v for k, v in case.items() if k not in ("x", "w", "strides")}
    return dict(kw, window_strides=case["strides"])


@pytest.fixture(params=["eager", "jit"])
def run(request):
    """``run(f, *args)``: ``f(*args)`` as is, or through ``pyree.jit``."""
    if request.param == "eager":
        return lambda f, *args: f(*args)
    return lambda f, *args: pyree.jit(f)(*args)


EAGER_CASES = ["strided_same", "dilations", "batch_groups", "conv_3d"]


def test_conv_general_dilated_matches_reference(run, request):
    # Eagerly each configuration is a compile of its own: a representative subset there.
    names = list(CASES) if "jit" in request.node.name else EAGER_CASES
    xs = [randn(*CASES[n]["x"]) for n in names]
    ws = [randn(*CASES[n]["w"]) for n in names]

    def all_cases(xs, ws):
        return [lax.conv_general_dilated(x, w, **_lax_kwargs(CASES[n]))
                for n, x, w in zip(names, xs, ws)]

    outs = run(all_cases, xs, ws)
    for n, x, w, got in zip(names, xs, ws, outs):
        want = _reference_for(CASES[n], x, w)
        assert got.dtype == np.float32 and got.shape == want.shape, (n, got.shape, want.shape)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4, err_msg=n)


def test_layouts_nhwc_hwio_and_spec_tuples(run):
    x = randn(2, 3, 7, 6)   # NCHW
    w = randn(4, 3, 3, 2)   # OIHW
    want = conv_ref(x, w, (2, 1), same_pads((7, 6), (3, 2), (2, 1)))
    x_nhwc, w_hwio = to_layout(x, "NHWC", "NCHW"), to_layout(w, "HWIO", "OIHW")
    x_hwcn = to_layout(x, "HWCN", "NCHW")
    numbers = lax.conv_dimension_numbers(x_hwcn.shape, w_hwio.shape, ("HWCN", "HWIO", "NCHW"))
    assert numbers == lax.ConvDimensionNumbers((3, 2, 0, 1), (3, 2, 0, 1), (0, 1, 2, 3))

    def f(x_nhwc, w_hwio, x_hwcn):
        a = lax.conv_general_dilated(x_nhwc, w_hwio, (2, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        b = lax.conv_general_dilated(x_hwcn, w_hwio, (2, 1), "SAME", dimension_numbers=numbers)
        return a, b

    a, b = run(f, x_nhwc, w_hwio, x_hwcn)
    np.testing.assert_allclose(np.asarray(a), to_layout(want, "NHWC", "NCHW"), rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(np.asarray(b), want, rtol=1e-4, atol=1e-4)


def test_conv_and_conv_with_general_padding():
    x, w = randn(2, 3, 6, 6), randn(2, 3, 2, 3)

    @pyree.jit
    def f(x, w):
        return (lax.conv(x, w, (1, 2), "SAME"),
                lax.conv_with_general_padding(x, w, (2, 1), [(1, 0), (2, 2)], (1, 2), (2, 1)))

    a, b = f(x, w)
    np.testing.assert_allclose(np.asarray(a), conv_ref(x, w, (1, 2), same_pads((6, 6), (2, 3),
                                                                              (1, 2))),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(b), conv_ref(x, w, (2, 1), [(1, 0), (2, 2)], (1, 2),
                                                       (2, 1)), rtol=1e-4, atol=1e-4)


def test_integer_complex_and_preferred_element_type():
    xi = RNG.randint(-4, 5, size=(2, 3, 7)).astype(np.int32)
    wi = RNG.randint(-4, 5, size=(2, 3, 3)).astype(np.int32)
    xc = (randn(1, 2, 6) + 1j * randn(1, 2, 6)).astype(np.complex64)
    wc = (randn(3, 2, 2) + 1j * randn(3, 2, 2)).astype(np.complex64)

    @pyree.jit
    def f(xi, wi, xc, wc):
        return (lax.conv(xi, wi, (2,), "SAME"),
                lax.conv(xi, wi, (1,), "VALID", preferred_element_type=jnp.float32),
                lax.conv(xc, wc, (1,), [(1, 1)]))

    a, b, c = f(xi, wi, xc, wc)
    assert a.dtype == np.int32 and b.dtype == np.float32 and c.dtype == np.complex64
    np.testing.assert_array_equal(np.asarray(a), conv_ref(xi, wi, (2,), same_pads((7,), (3,),
                                                                                   (2,))))
    np.testing.assert_allclose(np.asarray(b), conv_ref(xi, wi, (1,), [(0, 0)]))
    # complex reference: the bilinear parts.
    want = (conv_ref(xc.real, wc.real, (1,), [(1, 1)]) - conv_ref(xc.imag, wc.imag, (1,),
                                                                   [(1, 1)])
            + 1j * (conv_ref(xc.real, wc.imag, (1,), [(1, 1)])
                    + conv_ref(xc.imag, wc.real, (1,), [(1, 1)])))
    np.testing.assert_allclose(np.asarray(c), want, rtol=1e-4, atol=1e-4)


def test_conv_transpose_known_values():
    # Known answers computed once with jax.lax.conv_transpose (NHC / HIO layouts).
    x = np.array([[[1.0, 0.0], [2.0, 1.0], [-1.0, 0.5], [0.5, -2.0]]], np.float32)
    w = np.array([[[1.0, 0.5], [0.0, 1.0]], [[2.0, -1.0], [1.0, 0.0]],
                  [[0.25, 3.0], [-1.0, 2.0]]], np.float32)

    @pyree.jit
    def f(x, w):
        return (lax.conv_transpose(x, w, (2,), "SAME"), lax.conv_transpose(x, w, (2,), "VALID"),
                lax.conv_transpose(x, w, (2,), "SAME", transpose_kernel=True),
                lax.conv_transpose(x, w, (2,), [(1, 0)], rhs_dilation=(2,)))

    same, valid, flipped, explicit = f(x, w)
    rows = [[0.25, 3.0], [2.0, -1.0], [0.5, 8.5], [5.0, -2.0], [1.25, 0.0], [-1.5, 1.0],
            [1.125, -2.5], [-1.0, -0.5]]
    np.testing.assert_allclose(np.asarray(same)[0], rows, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(valid)[0], rows + [[0.5, -1.75]], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(flipped)[0], [
        [1.0, 0.0], [2.0, 1.0], [2.75, 0.0], [3.0, 2.0], [2.75, 0.5], [-2.5, -1.0],
        [0.75, 0.0], [3.0, 0.5]], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(explicit)[0], [
        [0.0, 0.0], [5.25, -3.5], [0.0, 0.0], [2.625, 0.5]], rtol=1e-6)


def test_dimension_number_and_shape_errors():
    x, w = jnp.ones((1, 3, 5, 5)), jnp.ones((2, 4, 3, 3))
    with pytest.raises(TypeError, match="feature"):
        lax.conv_general_dilated(x, w, (1, 1), "VALID")
    with pytest.raises(TypeError, match="same dtype"):
        lax.conv_general_dilated(x, jnp.ones((2, 3, 3, 3), jnp.int32), (1, 1), "VALID")
    with pytest.raises(TypeError, match="layout"):
        lax.conv_general_dilated(x, jnp.ones((2, 3, 3, 3)), (1, 1), "VALID",
                                 dimension_numbers=("NCHW", "OIHX", "NCHW"))
    with pytest.raises(ValueError, match="window_strides"):
        lax.conv_general_dilated(x, jnp.ones((2, 3, 3, 3)), (1,), "VALID")
    with pytest.raises(ValueError, match="padding"):
        lax.conv_general_dilated(x, jnp.ones((2, 3, 3, 3)), (1, 1), "FULL")
    with pytest.raises(TypeError, match="feature_group_count"):
        lax.conv_general_dilated(jnp.ones((1, 4, 5, 5)), jnp.ones((3, 2, 3, 3)), (1, 1), "VALID",
                                 feature_group_count=2)
    with pytest.raises(ValueError, match="lhs_dilation"):
        lax.conv_general_dilated(x, jnp.ones((2, 3, 3, 3)), (1, 1), "SAME", lhs_dilation=(2, 2))


# -- derivatives -----------------------------------------------------------------------------------

GRAD_CASES = ["strided_same", "explicit_neg", "dilations", "groups", "batch_groups", "conv_3d"]


def _inner(a, b):
    return float(np.sum(np.asarray(a, np.float64) * np.asarray(b, np.float64)))


def test_jvp_and_vjp_of_both_operands():
    # conv is bilinear, so its derivatives have exact identities against the reference:
    # jvp = conv(tx, w) + conv(x, tw), and <vjp(ct), (u, v)> = <ct, conv(u, w) + conv(x, v)>.
    # All configurations share one jitted program per transformation.
    xs = [randn(*CASES[n]["x"]) for n in GRAD_CASES]
    ws = [randn(*CASES[n]["w"]) for n in GRAD_CASES]
    txs = [randn(*x.shape) for x in xs]
    tws = [randn(*w.shape) for w in ws]
    cts = [randn(*_reference_for(CASES[n], x, w).shape) for n, x, w in zip(GRAD_CASES, xs, ws)]

    def f(xs, ws):
        return [lax.conv_general_dilated(x, w, **_lax_kwargs(CASES[n]))
                for n, x, w in zip(GRAD_CASES, xs, ws)]

    _, tangents = pyree.jit(lambda *a: pyree.jvp(f, a[:2], a[2:]))(xs, ws, txs, tws)
    gxs, gws = pyree.jit(pyree.grad(
        lambda xs, ws, cts: sum(jnp.sum(y * ct) for y, ct in zip(f(xs, ws), cts)),
        argnums=(0, 1)))(xs, ws, cts)
    for n, x, w, tx, tw, ct, t, gx, gw in zip(GRAD_CASES, xs, ws, txs, tws, cts, tangents, gxs,
                                              gws):
        case = CASES[n]
        want = _reference_for(case, tx, w) + _reference_for(case, x, tw)
        np.testing.assert_allclose(np.asarray(t), want, rtol=1e-4, atol=1e-4, err_msg=n)
        assert gx.shape == x.shape and gw.shape == w.shape, n
        np.testing.assert_allclose(_inner(gx, tx), _inner(ct, _reference_for(case, tx, w)),
                                   rtol=1e-4, atol=1e-3, err_msg=n)
        np.testing.assert_allclose(_inner(gw, tw), _inner(ct, _reference_for(case, x, tw)),
                                   rtol=1e-4, atol=1e-3, err_msg=n)


def test_check_grads_finite_differences():
    x, w = randn(2, 4, 7), randn(4, 2, 3)
    f = pyree.jit(lambda x, w: lax.conv_general_dilated(
        x, w, (2,), [(2, -1)], lhs_dilation=(2,), rhs_dilation=(2,), feature_group_count=2))
    check_grads(f, (x, w), order=1, atol=5e-2, rtol=5e-2)


def test_second_order_nhwc():
    # d/dw <u, d/dx <ct, conv(x, w)>> = d/dw <ct, conv(u, w)>: the rhs gradient at lhs = u.
    x, w, u = randn(1, 5, 6, 2), randn(2, 3, 2, 3), randn(1, 5, 6, 2)   # NHWC, HWIO
    conv = lambda x, w: lax.conv_general_dilated(  # noqa: E731
        x, w, (2, 1), [(1, 1), (0, 2)], rhs_dilation=(1, 2),
        dimension_numbers=("NHWC", "HWIO", "NHWC"))
    ct = randn(*conv(x, w).shape)
    loss = lambda x, w: jnp.sum(conv(x, w) * ct)  # noqa: E731
    second = pyree.jit(pyree.grad(lambda x, w: jnp.sum(pyree.grad(loss)(x, w) * u),
                                  argnums=1))(x, w)
    u_c = to_layout(u, "NCHW", "NHWC")
    w_c = to_layout(w, "OIHW", "HWIO")
    ct_c = to_layout(ct, "NCHW", "NHWC")
    want = np.zeros(w_c.shape)
    for idx in np.ndindex(*w_c.shape):
        e = np.zeros(w_c.shape)
        e[idx] = 1
        want[idx] = np.sum(conv_ref(u_c, e, (2, 1), [(1, 1), (0, 2)], None, (1, 2)) * ct_c)
    np.testing.assert_allclose(np.asarray(second), to_layout(want, "HWIO", "OIHW"), rtol=1e-4,
                               atol=1e-4)


def test_grad_values_against_reference():
    # d/dx sum(conv(x, w) * ct) by the reference's linearity: each input element's
    # derivative is the conv of a unit impulse.
    case = CASES["dilations"]
    x, w = randn(*case["x"]), randn(*case["w"])
    ct = randn(*_reference_for(case, x, w).shape)
    gx, gw = pyree.jit(pyree.grad(
        lambda x, w: jnp.sum(lax.conv_general_dilated(x, w, **_lax_kwargs(case)) * ct),
        argnums=(0, 1)))(x, w)
    want_gx = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        e = np.zeros(x.shape)
        e[idx] = 1
        want_gx[idx] = np.sum(_reference_for(case, e, w) * ct)
    want_gw = np.zeros(w.shape)
    for idx in np.ndindex(*w.shape):
        e = np.zeros(w.shape)
        e[idx] = 1
        want_gw[idx] = np.sum(_reference_for(case, x, e) * ct)
    np.testing.assert_allclose(np.asarray(gx), want_gx, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(gw), want_gw, rtol=1e-4, atol=1e-4)


# -- vmap ------------------------------------------------------------------------------------------

VMAP_CASES = ["strided_same", "groups", "batch_groups", "conv_1d"]


def test_vmap_lhs_rhs_and_both():
    xs = [randn(3, *CASES[n]["x"]) for n in VMAP_CASES]
    ws = [randn(3, *CASES[n]["w"]) for n in VMAP_CASES]

    @pyree.jit
    def batched(xs, ws):
        outs = []
        for name, x, w in zip(VMAP_CASES, xs, ws):
            kw = _lax_kwargs(CASES[name])
            f = lambda x, w: lax.conv_general_dilated(x, w, **kw)  # noqa: E731
            outs.append((pyree.vmap(f, (0, None))(x, w[0]), pyree.vmap(f, (None, 0))(x[0], w),
                         pyree.vmap(f, (0, 0))(x, w),
                         pyree.vmap(f, (1, 1), out_axes=1)(jnp.moveaxis(x, 0, 1),
                                                           jnp.moveaxis(w, 0, 1))))
        return outs

    for name, x, w, (lhs_b, rhs_b, both, moved) in zip(VMAP_CASES, xs, ws, batched(xs, ws)):
        case = CASES[name]
        want_lhs = np.stack([_reference_for(case, xi, w[0]) for xi in x])
        want_rhs = np.stack([_reference_for(case, x[0], wi) for wi in w])
        want_both = np.stack([_reference_for(case, xi, wi) for xi, wi in zip(x, w)])
        for got, want in ((lhs_b, want_lhs), (rhs_b, want_rhs), (both, want_both),
                          (moved, np.moveaxis(want_both, 0, 1))):
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-4,
                                       err_msg=name)


def test_vmap_of_grad():
    case = CASES["groups"]
    xs, w = randn(2, *case["x"]), randn(*case["w"])
    loss = lambda x, w: jnp.sum(lax.conv_general_dilated(x, w, **_lax_kwargs(case)) ** 2)  # noqa
    per_example = pyree.jit(pyree.vmap(pyree.grad(loss, argnums=1), (0, None)))(xs, w)
    single = pyree.jit(pyree.grad(loss, argnums=1))
    for i in range(2):
        np.testing.assert_allclose(np.asarray(per_example[i]), np.asarray(single(xs[i], w)),
                                   rtol=1e-4, atol=1e-4)


# -- convolve / correlate --------------------------------------------------------------------------

def test_convolve_correlate_match_numpy(run, request):
    a, v, b = randn(7), randn(3), randn(2)
    if "jit" in request.node.name:
        modes, pairs = ("full", "same", "valid"), ((0, 1), (1, 0), (0, 2), (2, 2))
    else:  # each eager convolution is a compile of its own
        modes, pairs = ("same",), ((0, 1), (1, 0))

    def f(*arrays):
        out = [jnp.correlate(arrays[0], arrays[1]), jnp.convolve(arrays[0], arrays[1])]
        for mode in modes:
            for i, j in pairs:
                out.append(jnp.convolve(arrays[i], arrays[j], mode))
                out.append(jnp.correlate(arrays[i], arrays[j], mode))
        return out

    got = run(f, a, v, b)
    arrays = (a, v, b)
    # Defaults: 'valid' for correlate, 'full' for convolve (as in NumPy).
    want = [np.correlate(a, v), np.convolve(a, v)]
    for mode in modes:
        for i, j in pairs:
            want.append(np.convolve(arrays[i], arrays[j], mode))
            want.append(np.correlate(arrays[i], arrays[j], mode))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == np.float32 and g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)


def test_convolve_dtypes_and_errors():
    ai, vi = np.array([1, 2, 3], np.int32), np.array([0, 1, 5], np.int32)
    ac = np.array([1 + 1j, 2, -1j], np.complex64)
    vc = np.array([1j, 1 - 2j], np.complex64)
    has_conj = hasattr(jnp, "conj")   # (correlate of complex arrays needs it)
    as_float, as_int, complex_, *correlations = pyree.jit(lambda ai, vi, ac, vc: [
        jnp.convolve(ai, vi), jnp.convolve(ai, vi, preferred_element_type=jnp.int32),
        jnp.convolve(ac, vc)] + ([jnp.correlate(ac, vc, "full"), jnp.correlate(vc, ac, "same")]
                                 if has_conj else []))(ai, vi, ac, vc)
    assert as_float.dtype == np.float32 and not as_float.weak_type
    np.testing.assert_allclose(np.asarray(as_float), np.convolve(ai, vi))
    assert as_int.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(as_int), np.convolve(ai, vi))
    np.testing.assert_allclose(np.asarray(complex_), np.convolve(ac, vc), rtol=1e-6)
    if has_conj:
        np.testing.assert_allclose(np.asarray(correlations[0]), np.correlate(ac, vc, "full"),
                                   rtol=1e-6)
        np.testing.assert_allclose(np.asarray(correlations[1]), np.correlate(vc, ac, "same"),
                                   rtol=1e-6)
    with pytest.raises(ValueError, match="1-dimensional"):
        jnp.convolve(jnp.ones((2, 2)), jnp.ones(2))
    with pytest.raises(ValueError, match="empty"):
        jnp.correlate(jnp.ones(3), jnp.ones(0))
    with pytest.raises(ValueError, match="mode"):
        jnp.convolve(jnp.ones(3), jnp.ones(2), "circular")
    with pytest.raises(TypeError):
        jnp.convolve([1.0, 2.0], jnp.ones(2))


def test_convolve_grads_and_vmap():
    a, v = randn(6), randn(3)
    check_grads(pyree.jit(lambda a, v: jnp.convolve(a, v, "same")), (a, v), order=1,
                atol=5e-2, rtol=5e-2)
    as_, vs = randn(4, 6), randn(4, 3)
    got = pyree.jit(pyree.vmap(lambda a, v: jnp.correlate(a, v, "full")))(as_, vs)
    np.testing.assert_allclose(np.asarray(got), np.stack([np.correlate(x, y, "full")
                                                          for x, y in zip(as_, vs)]),
                               rtol=1e-5, atol=1e-5)


def test_conv_shape_tuples_as_jax():
    """Values from JAX 0.10.2's lax.conv_shape_tuple / conv_transpose_shape_tuple."""
    assert lax.conv_shape_tuple((2, 3, 10, 9), (4, 3, 3, 2), (1, 2), "SAME") == (2, 4, 10, 5)
    assert lax.conv_shape_tuple((2, 3, 10, 9), (4, 3, 3, 2), (1, 2), "VALID") == (2, 4, 8, 4)
    assert lax.conv_shape_tuple((2, 3, 10, 9), (4, 3, 3, 2), (2, 3),
                                [(1, 2), (0, 1)]) == (2, 4, 6, 3)
    assert lax.conv_shape_tuple((2, 3, 10, 9), (4, 3, 3, 2), (1, 1), [(1, 2), (0, 1)],
                                batch_group_count=2) == (1, 4, 11, 9)
    assert lax.conv_shape_tuple((2, 3, 2, 9), (4, 3, 5, 2), (1, 1), "VALID") == (2, 4, 0, 8)
    nchw, nhwc = ("NCHW", "OIHW", "NCHW"), ("NHWC", "HWIO", "NHWC")
    for pad, want_nchw, want_nhwc in (([(1, 2), (0, 1)], (2, 4, 20, 9), (2, 11, 17, 4)),
                                      ("SAME", (2, 4, 20, 9), (2, 10, 18, 4)),
                                      ("VALID", (2, 4, 21, 10), (2, 12, 18, 4))):
        assert lax.conv_transpose_shape_tuple((2, 3, 10, 9), (4, 3, 3, 2), (2, 1), pad,
                                              nchw) == want_nchw
        assert lax.conv_transpose_shape_tuple((2, 10, 9, 3), (3, 2, 3, 4), (1, 2), pad,
                                              nhwc) == want_nhwc
    # The shape conv_transpose itself produces.
    x, w = jnp.ones((1, 4, 5, 2)), jnp.ones((3, 2, 2, 3))
    assert lax.conv_transpose(x, w, (2, 1), "SAME").shape == \
        lax.conv_transpose_shape_tuple(x.shape, w.shape, (2, 1), "SAME", nhwc)


def test_conv_general_dilated_patches():
    """Channel-major patches (values from JAX 0.10.2 and a NumPy loop), eager and jit."""
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    p = lax.conv_general_dilated_patches(x, (2, 3), (1, 1), "VALID")
    ref = np.zeros((2, 18, 3, 3), np.float32)   # feature c * 6 + (a * 3 + b): x[c, i+a, j+b]
    for c, a, b in np.ndindex(3, 2, 3):
        ref[:, c * 6 + a * 3 + b] = x[:, c, a:a + 3, b:b + 3]
    assert p.shape == (2, 18, 3, 3) and p.dtype == np.float32
    np.testing.assert_array_equal(p, ref)
    np.testing.assert_array_equal(p[0, :, 0, 0], [0, 1, 2, 5, 6, 7, 20, 21, 22, 25, 26, 27,
                                                  40, 41, 42, 45, 46, 47])
    q = lax.conv_general_dilated_patches(x, (2, 2), (2, 1), "SAME",
                                         dimension_numbers=("NCHW", "OIHW", "NHWC"))
    assert q.shape == (2, 2, 5, 12)
    np.testing.assert_array_equal(q[1, 1, 2], [72, 73, 77, 78, 92, 93, 97, 98, 112, 113, 117,
                                               118])
    r = pyree.jit(lambda v: lax.conv_general_dilated_patches(
        v, (2, 2), (1, 1), "VALID", rhs_dilation=(1, 2),
        dimension_numbers=("NHWC", "HWIO", "NHWC")))(x.transpose(0, 2, 3, 1))
    assert r.shape == (2, 3, 3, 12)
    np.testing.assert_array_equal(r[0, 0, 0], [0, 2, 5, 7, 20, 22, 25, 27, 40, 42, 45, 47])
    ints = lax.conv_general_dilated_patches(x.astype(np.int32), (2, 2), (1, 1), "VALID")
    assert ints.dtype == np.int32 and int(np.asarray(ints).sum()) == 17136
