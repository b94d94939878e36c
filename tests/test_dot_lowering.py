"""Narrow dot_generals (matrix-vector, vector-matrix, dot; batched or not) and the compile flags
they get: a module whose contractions all have a side without free dims is compiled without
IREE's data tiling, and batched matrix-vector products with short contiguous rows are configured
to be summed row by row (runtime/compile.py, ``prepare_module``). Values are checked against
NumPy under eager, jit, vmap and grad, in float32 and (with x64) float64."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax
import pyree.runtime.compile as rcompile

from conftest import cpu_only

RNG = np.random.RandomState(0)


@pytest.fixture(params=["eager", "jit"])
def run(request):
    """``run(f, *args)``: ``f(*args)`` as is, or through ``pyree.jit``."""
    if request.param == "eager":
        return lambda f, *args: f(*args)
    return lambda f, *args: pyree.jit(f)(*args)


def _data(*shapes, dtype=np.float32):
    return [RNG.randn(*s).astype(dtype) for s in shapes]


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)


# -- values ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matvec_and_vecmat(run, dtype, request):
    if dtype == np.float64:
        request.getfixturevalue("x64")
    m, v, w = _data((7, 5), (5,), (7,), dtype=dtype)
    got = run(lambda m, v, w: (m @ v, w @ m, jnp.dot(v, v)), m, v, w)
    want = (m @ v, w @ m, np.dot(v, v))
    for g, x in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(np.asarray(g), x, **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_matvec_vecmat_dot_under_vmap(dtype, request):
    if dtype == np.float64:
        request.getfixturevalue("x64")
    ms, vs, ws = _data((6, 4, 3), (6, 3), (6, 4), dtype=dtype)

    @pyree.jit
    def f(ms, vs, ws):
        return (pyree.vmap(jnp.dot)(ms, vs),                       # batched matvec
                pyree.vmap(lambda w, m: w @ m)(ws, ms),             # batched vecmat
                pyree.vmap(jnp.dot)(vs, vs),                        # batched dot
                pyree.vmap(jnp.dot, in_axes=(None, 0))(ms[0], vs))  # one matrix, many vectors

    got = f(ms, vs, ws)
    want = (np.einsum("bij,bj->bi", ms, vs), np.einsum("bi,bij->bj", ws, ms),
            np.einsum("bi,bi->b", vs, vs), vs @ ms[0].T)
    for g, x in zip(got, want):
        assert g.dtype == dtype and g.shape == x.shape
        np.testing.assert_allclose(np.asarray(g), x, **_tol(dtype))


def test_benchmark_sized_batched_matvec():
    # The shape of benchmarks/vmap.py, where data tiling made pyree 6x slower than JAX.
    ms, vs = _data((1000, 64, 64), (1000, 64))
    got = pyree.jit(pyree.vmap(jnp.dot))(ms, vs)
    np.testing.assert_allclose(np.asarray(got), np.einsum("bij,bj->bi", ms, vs),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_of_matvec(dtype, request):
    if dtype == np.float64:
        request.getfixturevalue("x64")
    m, v, c = _data((5, 4), (4,), (5,), dtype=dtype)

    def loss(m, v):
        return jnp.sum(jnp.tanh(m @ v) * c)

    gm, gv = pyree.jit(pyree.grad(loss, argnums=(0, 1)))(m, v)
    dy = c * (1 - np.tanh(m @ v) ** 2)                  # d loss / d (m @ v)
    np.testing.assert_allclose(np.asarray(gm), np.outer(dy, v), **_tol(dtype))
    np.testing.assert_allclose(np.asarray(gv), m.T @ dy, **_tol(dtype))


def test_per_example_grads_of_batched_matvec():
    ms, vs = _data((3, 4, 5), (3, 5))
    f = pyree.jit(pyree.vmap(pyree.grad(lambda m, v: jnp.sum((m @ v) ** 2), argnums=1)))
    want = np.stack([2 * m.T @ (m @ v) for m, v in zip(ms, vs)])
    np.testing.assert_allclose(np.asarray(f(ms, vs)), want, rtol=1e-4, atol=1e-4)


def test_matmul_with_matvec_in_one_module():
    # A module with a wide matmul keeps data tiling; the matvec beside it still computes right.
    a, b, v = _data((20, 30), (30, 40), (40,))
    got_mm, got_mv = pyree.jit(lambda a, b, v: (a @ b, (a @ b) @ v))(a, b, v)
    np.testing.assert_allclose(np.asarray(got_mm), a @ b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(got_mv), (a @ b) @ v, rtol=1e-4, atol=1e-3)


# -- which modules get data tiling ----------------------------------------------------------------

def _flags(f, *args):
    text = pyree.jit(f).lower(*args).as_text()
    return rcompile.prepare_module(text, rcompile.CPU_FLAGS)[1]


def _tiled(flags) -> bool:
    """Whether IREE data-tiles the module: in dispatch creation or in global optimization."""
    return rcompile.DATA_TILING_FLAG in flags or rcompile.GLOBAL_DATA_TILING_FLAG in flags


def test_narrow_modules_compile_without_data_tiling():
    m, v, ms, vs = _data((8, 8), (8,), (4, 8, 8), (4, 8))
    for f, args in [(lambda m, v: m @ v, (m, v)), (lambda m, v: v @ m, (m, v)),
                    (jnp.dot, (v, v)), (pyree.vmap(jnp.dot), (ms, vs)),
                    (lambda v: jnp.sum(v * v), (v,))]:
        assert not _tiled(_flags(f, *args))


@cpu_only("data tiling and the matvec configuration are CPU compile flags")
def test_wide_products_keep_data_tiling():
    # Straight-line products: IREE's global-optimization data tiling; in a loop, or beside a
    # convolution on a CPU without AVX-512: its dispatch-creation data tiling (see
    # GLOBAL_DATA_TILING_FLAG).
    m, ms = _data((8, 8), (4, 8, 8))
    large = np.zeros((2, 1024, 1024), np.float32)
    for f, args in [(lambda m: m @ m, (m,)), (pyree.vmap(jnp.matmul), (large, large)),
                    (lambda m: (m @ m) @ m[0], (m,))]:
        assert rcompile.GLOBAL_DATA_TILING_FLAG in _flags(f, *args)
    # Batched products of small matrices lose more to the relayout than they gain
    # (lower.DATA_TILING_BATCHED_MACS).
    assert not _tiled(_flags(pyree.vmap(jnp.matmul), ms, ms))
    looped = _flags(lambda m: lax.fori_loop(0, 100, lambda i, x: jnp.tanh(x @ m), m), m)
    assert rcompile.DATA_TILING_FLAG in looped and rcompile.GLOBAL_DATA_TILING_FLAG not in looped
    x, w = np.ones((2, 8, 8, 4), np.float32), np.ones((3, 3, 4, 8), np.float32)
    conv = _flags(lambda x, w, m: (lax.conv_general_dilated(
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")), m @ m), x, w, m)
    path = (rcompile.GLOBAL_DATA_TILING_FLAG if rcompile._avx512_host(rcompile.CPU_FLAGS)
            else rcompile.DATA_TILING_FLAG)
    assert path in conv and _tiled(tuple(flag for flag in conv if flag != path)) is False


@cpu_only("data tiling is a CPU compile flag")
def test_a_matrix_vector_product_in_a_loop_drops_small_products_data_tiling(monkeypatch):
    from pyree.transpiler.backend import lower
    # Data tiling is one flag per module, and it made a vector-matrix product in a loop slow
    # (lower.DATA_TILING_KEEP_MACS): an unbatched RNN's hoisted input projection loses its
    # mark; a large product beside the loop keeps it; the values are the same either way.
    rng = np.random.default_rng(0)
    w_x, w_h = rng.normal(size=(64, 256)).astype(np.float32) / 8, \
        rng.normal(size=(256, 256)).astype(np.float32) / 16
    xs, big = rng.normal(size=(100, 64)).astype(np.float32), np.ones((300, 300), np.float32)

    def rnn(w_x, w_h, xs):
        return lax.scan(lambda h, x: (jnp.tanh(x @ w_x + h @ w_h),) * 2,
                        jnp.zeros(256, np.float32), xs)[1]
    assert not _tiled(_flags(rnn, w_x, w_h, xs))
    monkeypatch.setattr(lower, "DATA_TILING_KEEP_MACS", -1)   # (the mark was there to drop)
    assert _tiled(_flags(rnn, w_x, w_h, xs))
    monkeypatch.undo()
    assert _tiled(_flags(lambda w_x, w_h, xs, big: (rnn(w_x, w_h, xs), big @ big @ big),
                         w_x, w_h, xs, big))
    h, want = np.zeros(256), []
    for x in xs.astype(np.float64):
        h = np.tanh(x @ w_x + h @ w_h)
        want.append(h)
    np.testing.assert_allclose(np.asarray(pyree.jit(rnn)(w_x, w_h, xs)), want, atol=2e-5)


@cpu_only("data tiling is a CPU compile flag")
def test_products_with_few_columns_against_a_large_operand_compile_without_data_tiling():
    # Measured slower tiled (lower._data_tiling_pays): a convolution's im2col product with 32
    # filters, a classifier head over 4096 examples, a tall product with few columns, a wide
    # one with a handful of rows.
    for f, shapes in [(jnp.matmul, ((8192, 576), (576, 32))),
                      (jnp.matmul, ((4096, 1000), (1000, 10))),
                      (jnp.matmul, ((2048, 2048), (2048, 32))),
                      (lambda w, x: w @ x, ((8, 1024), (1024, 1024))),
                      (pyree.vmap(jnp.matmul), ((2, 2048, 1024), (2, 1024, 128)))]:
        args = [np.zeros(s, np.float32) for s in shapes]
        assert not _tiled(_flags(f, *args)), shapes
    # Few rows but more than a handful (an MLP's layer over a batch of 128): tiled is faster.
    for shapes in [((32, 2048), (2048, 2048)), ((128, 1024), (1024, 1024))]:
        args = [np.zeros(s, np.float32) for s in shapes]
        assert _tiled(_flags(jnp.matmul, *args)), shapes


def test_prepare_module_only_drops_data_tiling():
    flags = ("--a", rcompile.DATA_TILING_FLAG, "--b")
    assert rcompile.prepare_module("module {}", flags) == ("module {}", ("--a", "--b"))
    marked = f"stablehlo.dot_general {{{rcompile.DATA_TILING_MARK}}}"
    assert rcompile.prepare_module(marked, flags) == (
        marked, ("--a", rcompile.GLOBAL_DATA_TILING_FLAG, "--b"))
    looped = "scf.for " + marked
    assert rcompile.prepare_module(looped, flags) == (looped, flags)
    assert rcompile.prepare_module("module {}", ("--a",)) == ("module {}", ("--a",))


def test_convolutions_take_the_global_data_tiling_path_with_avx512(monkeypatch):
    # Measured per CPU (runtime/compile.py, GLOBAL_DATA_TILING_FLAG): with AVX-512 only loops
    # keep the dispatch-creation path; without it convolutions do too.
    flags = (rcompile.HOST_CPU_FLAG, rcompile.DATA_TILING_FLAG)
    conv = f"stablehlo.convolution {{{rcompile.DATA_TILING_MARK}}}"
    looped = "stablehlo.while " + conv
    monkeypatch.setattr(rcompile, "host_cpu", lambda: "x86_64 Xeon | fpu avx2 avx512f avx512bw")
    assert rcompile.prepare_module(conv, flags)[1][1] == rcompile.GLOBAL_DATA_TILING_FLAG
    assert rcompile.prepare_module(looped, flags)[1][1] == rcompile.DATA_TILING_FLAG
    # (not compiling for this machine's CPU: no AVX-512 assumed)
    assert rcompile.prepare_module(conv, flags[1:])[1][0] == rcompile.DATA_TILING_FLAG
    monkeypatch.setattr(rcompile, "host_cpu", lambda: "x86_64 Ryzen | fpu avx avx2 fma")
    assert rcompile.prepare_module(conv, flags)[1][1] == rcompile.DATA_TILING_FLAG


@cpu_only("inner-tiled products are a CPU compile flag")
def test_inner_tiled_products_and_a_module_compiled_again_without_them():
    # Straight-line products compile with IREE's inner-tiled products (runtime/compile.py,
    # INNER_TILED_FLAG); where IREE refuses a module with them (on its dispatch-creation path,
    # a tiled product with a bias added), it is compiled again without them.
    a, b, c = _data((40, 30), (30, 50), (50,))
    f = lambda a, b, c: a @ b + c
    text = pyree.jit(f).lower(a, b, c).as_text()
    flags = rcompile.prepare_module(text, pyree.devices()[0].compile_flags)[1]
    assert rcompile.GLOBAL_DATA_TILING_FLAG in flags and rcompile.INNER_TILED_FLAG in flags
    np.testing.assert_allclose(np.asarray(pyree.jit(f)(a, b, c)),
                               a.astype(np.float64) @ b + c, rtol=1e-5, atol=1e-5)
    late = tuple(rcompile.DATA_TILING_FLAG if flag == rcompile.GLOBAL_DATA_TILING_FLAG else flag
                 for flag in flags)
    assert rcompile._run_compiler(text, late)[0] is None
    before = rcompile.CompileStats.fallbacks
    assert rcompile._compile_now(text, late)   # the module's .vmfb
    assert rcompile.CompileStats.fallbacks == before + 1


# -- batched matrix-vector products configured row by row (runtime/compile.py, MATVEC_MARK) ------

CONFIGURED = "vector_common_parallel = [1, 1, 0], vector_reduction = [0, 0, {}]"


def _cpu_module(f, *args):
    text = pyree.jit(f).lower(*args).as_text()
    return rcompile.prepare_module(text, pyree.devices("cpu")[0].compile_flags)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_configured_matvecs_values(dtype, request):
    if dtype == np.float64:
        request.getfixturevalue("x64")
    # Rows of 64 and 30 (not a multiple of the vector width), vector first (vmap(dot)) and
    # matrix first (einsum), with a fused consumer after one of them and an unbatched matvec.
    ms, vs, m, v, ns, us, b = _data((50, 20, 64), (50, 64), (40, 48), (48,), (9, 11, 30),
                                    (9, 30), (20,), dtype=dtype)

    def f(ms, vs, m, v, ns, us, b):
        return (pyree.vmap(jnp.dot)(ms, vs), jnp.tanh(m @ v + 1),
                jnp.einsum("bij,bj->bi", ns, us), jnp.tanh(pyree.vmap(jnp.dot)(ms, vs) * 2 + b))

    got = pyree.jit(f)(ms, vs, m, v, ns, us, b)
    want = (np.einsum("bij,bj->bi", ms, vs), np.tanh(m @ v + 1),
            np.einsum("bij,bj->bi", ns, us), np.tanh(np.einsum("bij,bj->bi", ms, vs) * 2 + b))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else _tol(dtype)
    for g, x in zip(got, want):
        assert g.dtype == dtype and g.shape == x.shape
        np.testing.assert_allclose(np.asarray(g), x, **tol)
    text, _ = _cpu_module(f, ms, vs, m, v, ns, us, b)
    assert CONFIGURED.format(64) in text and CONFIGURED.format(30) in text


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_through_row_configured_matvec(dtype, request):
    if dtype == np.float64:
        request.getfixturevalue("x64")
    ms, vs, c = _data((30, 16, 64), (30, 64), (30, 16), dtype=dtype)

    def loss(vs):
        return jnp.sum(jnp.tanh(pyree.vmap(jnp.dot)(ms, vs)) * c)

    got = pyree.jit(pyree.grad(loss))(vs)
    y = np.einsum("bij,bj->bi", ms, vs)
    want = np.einsum("bij,bi->bj", ms, c * (1 - np.tanh(y) ** 2))
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else _tol(dtype)
    np.testing.assert_allclose(np.asarray(got), want, **tol)
    assert CONFIGURED.format(64) in _cpu_module(pyree.grad(loss), vs)[0]  # the forward matvec


@cpu_only("data tiling and the matvec configuration are CPU compile flags")
def test_which_products_are_marked():
    ms, vs, w, big, us = _data((4, 8, 64), (4, 64), (4, 64, 40), (5, 8, 2000), (5, 2000))
    mark = rcompile.MATVEC_MARK
    text, _ = _cpu_module(pyree.vmap(jnp.dot), ms, vs)
    assert CONFIGURED.format(64) in text and mark not in text
    # Not marked: unbatched, a vector-matrix product (reduction not along the rows), rows too
    # long or too short for one vector, integers, and a batched dot product.
    for f, args in [(lambda m, v: m @ v, (ms[0], vs[0])), (pyree.vmap(jnp.dot), (vs, w)),
                    (pyree.vmap(jnp.dot), (big, us)),
                    (pyree.vmap(jnp.dot), (ms[:, :, :8], vs[:, :8])),
                    (pyree.vmap(jnp.dot), (ms.astype(np.int32), vs.astype(np.int32))),
                    (pyree.vmap(jnp.dot), (vs, vs))]:
        text, _ = _cpu_module(f, *args)
        assert mark not in text and "compilation_info" not in text
    # A module with data tiling keeps IREE's own configuration for its matvecs.
    text, flags = _cpu_module(lambda m, v: (m[0] @ m[0].T, pyree.vmap(jnp.dot)(m, v)), ms, vs)
    assert _tiled(flags) and mark in text and "compilation_info" not in text


def test_matvec_configuration_only_for_cpu():
    text = f"stablehlo.dot_general %a, %b {{{rcompile.MATVEC_MARK} = 64 : i64}}"
    cpu = pyree.devices("cpu")[0].compile_flags
    assert CONFIGURED.format(64) in rcompile.prepare_module(text, cpu)[0]
    for gpu in [("--iree-hal-target-device=cuda",), ("--iree-hal-target-device=vulkan",)]:
        assert rcompile.prepare_module(text, gpu + rcompile.COMMON_FLAGS)[0] == text


def test_configuration_reaches_the_dispatch(tmp_path):
    # Guards against IREE dropping the op's configuration on its way to the dispatch (that
    # would only slow these products down, silently).
    from iree.compiler import compile_str
    ms, vs = _data((10, 8, 64), (10, 64))
    text, flags = _cpu_module(lambda ms, vs: jnp.einsum("bij,bj->bi", ms, vs), ms, vs)
    compile_str(text, extra_args=list(flags) + [
        f"--iree-hal-dump-executable-configurations-to={tmp_path}"])
    configured = "".join(p.read_text() for p in tmp_path.iterdir())
    assert CONFIGURED.format(64) in configured
