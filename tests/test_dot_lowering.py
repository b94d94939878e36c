"""Narrow dot_generals (matrix-vector, vector-matrix, dot; batched or not) and the compile flags
they get: a module whose contractions all have a side without free dims is compiled without
IREE's data tiling (runtime/compile.py, ``module_flags``). Values are checked against NumPy
under eager, jit, vmap and grad, in float32 and (with x64) float64."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
import pyree.runtime.compile as rcompile

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
    return rcompile.module_flags(text, rcompile.CPU_FLAGS)


def test_narrow_modules_compile_without_data_tiling():
    m, v, ms, vs = _data((8, 8), (8,), (4, 8, 8), (4, 8))
    for f, args in [(lambda m, v: m @ v, (m, v)), (lambda m, v: v @ m, (m, v)),
                    (jnp.dot, (v, v)), (pyree.vmap(jnp.dot), (ms, vs)),
                    (lambda v: jnp.sum(v * v), (v,))]:
        assert rcompile.DATA_TILING_FLAG not in _flags(f, *args)


def test_wide_modules_keep_data_tiling():
    m, ms = _data((8, 8), (4, 8, 8))
    for f, args in [(lambda m: m @ m, (m,)), (pyree.vmap(jnp.matmul), (ms, ms)),
                    (lambda m: (m @ m) @ m[0], (m,))]:
        assert rcompile.DATA_TILING_FLAG in _flags(f, *args)


def test_module_flags_only_drops_data_tiling():
    flags = ("--a", rcompile.DATA_TILING_FLAG, "--b")
    assert rcompile.module_flags("module {}", flags) == ("--a", "--b")
    marked = f"stablehlo.dot_general {{{rcompile.DATA_TILING_MARK}}}"
    assert rcompile.module_flags(marked, flags) == flags
    assert rcompile.module_flags("module {}", ("--a",)) == ("--a",)
