"""JAX's semantics where NumPy's or a first implementation's differ (issue: real programs)."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp

VALUES = np.array([300.0, -5.0, np.nan, 3.7, -3.7, 1e10, -1e10, np.inf, -np.inf], np.float32)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16, np.int32, np.uint32])
def test_float_to_integer_saturates(dtype):
    info = np.iinfo(dtype)
    want = np.clip(np.nan_to_num(np.trunc(VALUES.astype(np.float64)), nan=0.0,
                                 posinf=info.max, neginf=info.min), info.min, info.max)
    for run in (lambda v: jnp.asarray(v).astype(dtype), pyree.jit(lambda v: v.astype(dtype))):
        got = np.asarray(run(VALUES))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want.astype(dtype))


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float32])
def test_complex_to_real_takes_the_real_part_then_converts_as_floats(dtype):
    """jnp.array([300+1j]).astype(uint8) is 255 in JAX (the real part saturates)."""
    values = (VALUES + 2j).astype(np.complex64)
    real = VALUES.astype(np.float64)
    if np.dtype(dtype).kind == "f":
        want = real.astype(dtype)
    else:
        info = np.iinfo(dtype)
        want = np.clip(np.nan_to_num(np.trunc(real), nan=0.0, posinf=info.max,
                                     neginf=info.min), info.min, info.max).astype(dtype)
    for run in (lambda v: jnp.asarray(v).astype(dtype), pyree.jit(lambda v: v.astype(dtype))):
        got = np.asarray(run(values))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, want)


def test_sums_are_accurate_eagerly_and_under_jit():
    rng = np.random.default_rng(0)
    # (Eagerly, a sum over rows shorter than a 64-byte vector sums strided blocks first:
    # eager._strided_first.)
    for shape, axis in (((10000, 10), 0), ((100000,), 0), ((1000, 1000), 0), ((4, 5000), 1),
                        ((100000, 3), 0), ((10000, 17), 0), ((5, 10000, 10), 1)):
        x = (rng.normal(size=shape) + 3).astype(np.float32)
        want = x.astype(np.float64).mean(axis)
        for run in (lambda v: jnp.mean(v, axis), pyree.jit(lambda v: jnp.mean(v, axis))):
            err = np.abs(np.asarray(run(jnp.asarray(x))) - want).max()
            assert err < 1.5e-6, (shape, err)   # one accumulator would be ~1e-5 off
    # The seed's normalisation: eager and jit agree to 1e-6.
    x = jnp.array(np.random.default_rng(1).random((10000, 10)))
    norm = lambda v: (v - v.mean(0)) / v.std(0)
    assert np.allclose(norm(x), pyree.jit(norm)(x), atol=1e-6)


@pytest.mark.parametrize("shape,axis", [((400, 500), 0), ((128, 512), 0), ((3, 400, 2), 1),
                                        ((400, 500), None), ((64, 3), 0), ((5, 100000), 1)])
def test_std_of_data_far_from_zero_is_accurate_over_short_leading_axes(shape, axis):
    """The float32 std of 1000 + 0.01 * noise depends on the mean's last bits: over 400 rows
    in one serial sum it was 3.7e-3 off (NumPy's error), JAX's 1.0e-4. Axes other than the
    last are summed in blocks from 64 elements, the last from 512 (see lower.sum_block)."""
    x = (1000 + 0.01 * np.random.default_rng(2).standard_normal(shape)).astype(np.float32)
    want_mean = x.astype(np.float64).mean(axis)
    want_std = x.astype(np.float64).std(axis)
    for run in (lambda v: (jnp.mean(v, axis), jnp.std(v, axis)),
                pyree.jit(lambda v: (jnp.mean(v, axis), jnp.std(v, axis)))):
        mean, std = run(x)
        assert np.max(np.abs(np.asarray(mean) - want_mean)) < 4e-4   # 6 ulps of 1000 (one serial sum: 14)
        assert np.max(np.abs(np.asarray(std) - want_std) / want_std) < 1e-3, shape


def test_python_if_inside_a_custom_jvp_rule():
    @pyree.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        if x > 0:
            d = jnp.cos(x)
        else:
            d = -jnp.cos(x)
        return f(x), d * t

    assert float(pyree.jit(pyree.grad(f))(1.0)) == pytest.approx(np.cos(1.0), rel=1e-6)
    assert float(pyree.grad(f)(-1.0)) == pytest.approx(-np.cos(-1.0), rel=1e-6)


def test_complex_constant_expressions_under_jit():
    """IREE's compile-time evaluation of constant expressions failed on this one ("jit global
    source initialization order invalid")."""
    got = pyree.jit(lambda x: x + (jnp.log(1j) - jnp.log(1 + 0j)) / 2)(1.0)
    assert complex(got) == pytest.approx(1 + (np.log(1j) - np.log(1 + 0j)) / 2, rel=1e-6)
    got = pyree.jit(lambda x: x * jnp.exp(2j * jnp.pi * jnp.arange(4) / 4))(2.0)
    np.testing.assert_allclose(np.asarray(got), 2 * np.exp(2j * np.pi * np.arange(4) / 4),
                               rtol=1e-6, atol=1e-6)


def test_complex_isclose_and_abs_gradient():
    z = np.array([1 + 2j, 3 - 1j, np.inf + 0j], np.complex64)
    np.testing.assert_array_equal(jnp.isclose(z, z + 1e-7), [True, True, True])
    np.testing.assert_array_equal(jnp.isclose(z, z + 1j), [False, False, False])
    assert bool(jnp.allclose(z[:2], z[:2] * (1 + 1e-7)))
    # For a real f of complex z, JAX's grad is the conjugate of df/dx + i df/dy: conj(z) / |z|.
    w = z[:2]
    np.testing.assert_allclose(np.asarray(pyree.grad(lambda v: jnp.abs(v).sum())(w)),
                               np.conj(w) / np.abs(w), rtol=1e-6)


@pytest.mark.parametrize("jitted", [False, True])
def test_broadcast_errors_have_jax_types(jitted):
    """JAX 0.10's jnp: ValueError when ranks differ (its vmapped_log_probs notebook catches it),
    TypeError for equal ranks; the message names both shapes."""
    run = pyree.jit if jitted else (lambda f: f)
    for a, b, error in (((100,), (100, 10), ValueError), ((2, 3), (3, 2), TypeError),
                        ((2, 3), (4, 2, 2), ValueError)):
        for f in (lambda x, y: x * y, jnp.multiply, jnp.arctan2, lambda x, y: x + y):
            with pytest.raises(error, match=r"\(2, 3\)|\(100,\)"):
                run(f)(jnp.ones(a), jnp.ones(b))
    with pytest.raises(ValueError):
        jnp.where(jnp.ones(3) > 0, jnp.ones(2), 1.0)


COMPLEX_FUNCTIONS = ["sin", "cos", "sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh",
                     "arccosh", "arctanh", "exp2"]
# Points in every quadrant, near zero, and of large modulus (off the branch cuts).
COMPLEX_POINTS = np.array([1 + 0.5j, 2 - 1j, -0.5 + 2j, -3 - 0.25j, 1e-4 + 2e-4j, 0.3 - 1e-5j,
                           40 + 30j, -25 - 60j, 0.9 + 0.1j, -1.5 + 0.01j], np.complex128)


def _complex_case(name, dtype):
    rtol = 2e-6 if dtype == np.complex64 else 1e-13
    if name in ("sin", "cos", "sinh", "cosh", "exp2"):
        points = COMPLEX_POINTS[np.abs(COMPLEX_POINTS) < 50]   # no overflow in cosh
    else:
        points = COMPLEX_POINTS
    return points.astype(dtype), rtol


@pytest.mark.parametrize("jitted", [False, True])
@pytest.mark.parametrize("name", COMPLEX_FUNCTIONS)
def test_complex_elementary_functions_match_numpy(name, jitted):
    """complex64 eagerly and under jit against NumPy's complex128 (principal branches)."""
    z, rtol = _complex_case(name, np.complex64)
    f = getattr(jnp, name)
    got = np.asarray((pyree.jit(f) if jitted else f)(z))
    assert got.dtype == np.complex64
    want = getattr(np, name)(z.astype(np.complex128))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-30)


@pytest.mark.parametrize("name", COMPLEX_FUNCTIONS)
def test_complex_elementary_functions_float64_and_gradient(x64, name):
    """complex128 under x64 against NumPy, and grad of the real part against the holomorphic
    derivative by central differences (JAX's convention: grad of Re f is f' itself)."""
    z, rtol = _complex_case(name, np.complex128)
    f = getattr(jnp, name)
    np.testing.assert_allclose(np.asarray(f(z)), getattr(np, name)(z), rtol=rtol)
    z = z[np.abs(z) < 10]
    h = 1e-6
    derivative = (getattr(np, name)(z + h) - getattr(np, name)(z - h)) / (2 * h)
    for run in (lambda g: g, pyree.jit):
        got = run(pyree.grad(lambda v: jnp.real(f(v)).sum()))(z)
        np.testing.assert_allclose(np.asarray(got), derivative, rtol=1e-7)


def test_gradient_at_a_python_number_is_weakly_typed():
    """As in JAX: grad at 3.0 is a weak float32, so adding it to bfloat16 stays bfloat16."""
    for run in (lambda f: f, pyree.jit):
        g = run(pyree.grad(lambda x: x ** 2))(3.0)
        assert g.aval.weak_type and float(g) == 6.0
        assert (g + jnp.ones(2, jnp.bfloat16)).dtype == jnp.bfloat16
    assert not pyree.grad(lambda x: x ** 2)(jnp.float32(3.0)).aval.weak_type
    gx, gy = pyree.grad(lambda x, y: x * y, argnums=(0, 1))(3.0, jnp.ones(()))
    assert gx.aval.weak_type and not gy.aval.weak_type


def test_grad_of_python_if_outside_jit_differentiates_the_branch_taken():
    """As JAX (which runs the `if` on the concrete value): a NaN derivative of a value only
    the branch not taken reads does not reach the gradient."""
    def f(x):
        s = jnp.sqrt(x - 2.0)            # NaN for x < 2
        if s > 0:
            return s * 2
        elif x > 0.5:
            return x ** 3
        return 0.0 * x

    assert float(pyree.grad(f)(1.0)) == 3.0
    assert float(pyree.grad(f)(0.25)) == 0.0
    np.testing.assert_allclose(float(pyree.grad(f)(3.0)), 1.0, rtol=1e-6)   # d/dx 2 sqrt(x - 2)
    np.testing.assert_allclose(float(pyree.grad(pyree.grad(f))(3.0)), -0.5, rtol=1e-5)
    value, grad = pyree.value_and_grad(f)(1.0)
    assert (float(value), float(grad)) == (1.0, 3.0)


def test_fori_loop_with_python_int_bounds_has_a_weak_index():
    """As JAX (the control-flow notebook): fori_loop(0, 10, lambda i, x: x + i, 0) is a weakly
    typed int32 45; a float16 carry stays float16."""
    from pyree import lax
    out = lax.fori_loop(0, 10, lambda i, x: x + i, 0)
    assert int(out) == 45 and out.dtype == np.int32 and out.aval.weak_type
    out = pyree.jit(lambda: lax.fori_loop(0, 10, lambda i, x: x + i, jnp.float16(0)))()
    assert float(out) == 45.0 and out.dtype == np.float16 and not out.aval.weak_type


def test_row_reductions_in_vector_wide_columns_keep_their_values(monkeypatch):
    """Float32 rows of 8k elements (k odd) are reduced as (k, 8) on the CPU, the 8 columns
    first (reductions.ROW_VECTOR_WIDTH): max/min keep NaN, signed zeros and infinities as the
    reduction in one pass does, bit for bit, and sums stay accurate."""
    from pyree.transpiler.families import reductions
    rng = np.random.default_rng(3)
    x = (rng.normal(size=(6, 1000)) + 3).astype(np.float32)
    x[1, 17] = np.nan
    x[2, :] = -0.0
    x[2, 999] = 0.0
    x[3, 500] = np.inf
    x[4, :] = -np.inf
    x[5, 3] = -np.nan

    def extremes(v):
        return jnp.max(v, 1), jnp.min(v, 1), jnp.sum(v[np.array([0, 2, 3])], 1)
    split = pyree.jit(extremes)
    assert "x125x8xf32" in split.lower(x).as_text()
    monkeypatch.setattr(reductions, "ROW_VECTOR_MIN", 1 << 30)
    one_pass = pyree.jit(lambda v: extremes(v))
    assert "x125x8xf32" not in one_pass.lower(x).as_text()
    for got, want in zip(split(x)[:2], one_pass(x)[:2]):
        np.testing.assert_array_equal(np.asarray(got).view(np.int32),
                                      np.asarray(want).view(np.int32))
    np.testing.assert_array_equal(np.asarray(split(x)[0]), np.max(x, 1))
    np.testing.assert_array_equal(np.asarray(split(x)[1]), np.min(x, 1))
    want = x[[0, 2, 3]].astype(np.float64).sum(1)
    np.testing.assert_allclose(np.asarray(split(x)[2]), want, rtol=1e-6)
