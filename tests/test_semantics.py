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


def test_sums_are_accurate_eagerly_and_under_jit():
    rng = np.random.default_rng(0)
    for shape, axis in (((10000, 10), 0), ((100000,), 0), ((1000, 1000), 0), ((4, 5000), 1)):
        x = (rng.normal(size=shape) + 3).astype(np.float32)
        want = x.astype(np.float64).mean(axis)
        for run in (lambda v: jnp.mean(v, axis), pyree.jit(lambda v: jnp.mean(v, axis))):
            err = np.abs(np.asarray(run(jnp.asarray(x))) - want).max()
            assert err < 1.5e-6, (shape, err)   # one accumulator would be ~1e-5 off
    # The seed's normalisation: eager and jit agree to 1e-6.
    x = jnp.array(np.random.default_rng(1).random((10000, 10)))
    norm = lambda v: (v - v.mean(0)) / v.std(0)
    assert np.allclose(norm(x), pyree.jit(norm)(x), atol=1e-6)


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


def test_complex_isclose_and_abs_gradient():
    z = np.array([1 + 2j, 3 - 1j, np.inf + 0j], np.complex64)
    np.testing.assert_array_equal(jnp.isclose(z, z + 1e-7), [True, True, True])
    np.testing.assert_array_equal(jnp.isclose(z, z + 1j), [False, False, False])
    assert bool(jnp.allclose(z[:2], z[:2] * (1 + 1e-7)))
    # For a real f of complex z, JAX's grad is the conjugate of df/dx + i df/dy: conj(z) / |z|.
    w = z[:2]
    np.testing.assert_allclose(np.asarray(pyree.grad(lambda v: jnp.abs(v).sum())(w)),
                               np.conj(w) / np.abs(w), rtol=1e-6)
