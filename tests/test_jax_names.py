"""JAX's names that real programs use, with JAX's behaviour (issue: real programs run)."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax


def test_make_jaxpr_prints_the_ir_and_returns_shapes():
    closed = pyree.make_jaxpr(lambda x, y: jnp.sin(x) * y)(1.0, 2.0)
    text = str(closed)
    assert text.startswith("{ lambda ;") and "sin a" in text and "mul" in text
    assert [str(v.aval) for v in closed.jaxpr.invars] == ["f32[]", "f32[]"]
    assert len(closed.eqns) == 2
    closed, shape = pyree.make_jaxpr(lambda x: x[:2] * 2, return_shape=True)(jnp.ones(3))
    assert shape == pyree.ShapeDtypeStruct((2,), np.float32)
    closed = pyree.make_jaxpr(lambda x, n: x * n, static_argnums=1)(jnp.ones(3), 4)
    assert "4" in str(closed)


def test_jacobian_is_reverse_mode_jacobian():
    x = np.array([0.5, 1.0, 2.0], np.float32)
    got = pyree.jacobian(lambda v: jnp.sin(v) * v[0])(x)
    want = np.diag(np.sin(x) * 0 + np.cos(x) * x[0]) + np.outer(np.sin(x), [1, 0, 0])
    want[0, 0] = np.cos(x[0]) * x[0] + np.sin(x[0])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def test_custom_gradient_uses_the_given_vjp():
    @pyree.custom_gradient
    def log1pexp(x):
        e = jnp.exp(x)
        return jnp.log1p(e), lambda g: (g * (1 - 1 / (1 + e)),)

    assert float(pyree.grad(log1pexp)(100.0)) == 1.0      # the naive derivative is nan
    np.testing.assert_allclose(float(pyree.jit(pyree.grad(log1pexp))(3.0)),
                               1 / (1 + np.exp(-3.0)), rtol=1e-6)
    np.testing.assert_allclose(float(log1pexp(1.0)), np.log1p(np.e), rtol=1e-6)

    @pyree.custom_gradient
    def clip_gradient(x, y):
        return x * y, lambda g: (jnp.clip(g * y, -1, 1), g * x)

    gx, gy = pyree.grad(clip_gradient, argnums=(0, 1))(2.0, 5.0)
    assert (float(gx), float(gy)) == (1.0, 2.0)


def test_lax_in_dim_helpers():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    jx = jnp.asarray(x)
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(jx, 1, 2, axis=1), x[:, 1:3])
    np.testing.assert_array_equal(lax.dynamic_slice_in_dim(jx, 5, 2, axis=0), x[1:3])  # clamped
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(jx, 2, 1, keepdims=False), x[:, 2])
    np.testing.assert_array_equal(lax.dynamic_index_in_dim(jx, 1), x[1:2])
    np.testing.assert_array_equal(lax.slice_in_dim(jx, 1, None, axis=0), x[1:])
    np.testing.assert_array_equal(lax.slice_in_dim(jx, 0, 4, 2, axis=1), x[:, ::2])
    np.testing.assert_array_equal(lax.index_in_dim(jx, -1, keepdims=False), x[-1])
    want = x.copy()
    want[1] = 0
    np.testing.assert_array_equal(lax.dynamic_update_index_in_dim(jx, jnp.zeros(4), 1, 0), want)
    want = x.copy()
    want[:, 2:] = -1
    np.testing.assert_array_equal(
        pyree.jit(lambda v, i: lax.dynamic_update_slice_in_dim(v, -jnp.ones((3, 2)), i, 1))(
            jx, 2), want)


def test_shape_tuples_match_the_operations():
    x, w = jnp.ones((2, 9, 7, 3)), jnp.ones((3, 2, 3, 5))
    for strides, padding in (((1, 1), "SAME"), ((2, 3), "VALID"), ((2, 2), [(1, 0), (2, 2)])):
        shape = lax.conv_general_shape_tuple(x.shape, w.shape, strides, padding,
                                             ("NHWC", "HWIO", "NHWC"))
        out = lax.conv_general_dilated(x, w, strides, padding,
                                       dimension_numbers=("NHWC", "HWIO", "NHWC"))
        assert shape == out.shape
    pads = ((0, 0), (1, 1), (0, 1), (0, 0))
    shape = lax.reduce_window_shape_tuple(x.shape, (1, 3, 2, 1), (1, 2, 2, 1), pads)
    assert shape == lax.reduce_window(x, 0.0, lax.add, (1, 3, 2, 1), (1, 2, 2, 1), pads).shape


def test_precision_and_batch_matmul():
    a = np.random.default_rng(0).normal(size=(4, 2, 3)).astype(np.float32)
    b = np.random.default_rng(1).normal(size=(4, 3, 5)).astype(np.float32)
    np.testing.assert_allclose(lax.batch_matmul(a, b), a @ b, rtol=1e-5)
    for p in (None, lax.Precision.HIGHEST, "highest", (lax.Precision.HIGH, "default")):
        np.testing.assert_allclose(lax.dot_general(a[0], b[0], (((1,), (0,)), ((), ())), p),
                                   a[0] @ b[0], rtol=1e-5)
    assert lax.Precision.from_any("float32") is lax.Precision.HIGHEST
    with pytest.raises(ValueError, match="unknown precision"):
        lax.dot(a[0], b[0], precision="fast")


def test_numpy_names():
    assert jnp.bool is jnp.bool_ and jnp.ones(2, jnp.bool).dtype == np.bool_
    assert jnp.isscalar(1.0) and jnp.isscalar(jnp.float32(2)) and not jnp.isscalar(jnp.ones(2))
    assert jnp.iscomplexobj(jnp.ones(2, jnp.complex64)) and not jnp.iscomplexobj(jnp.ones(2))


def test_jax_option_names(x64):
    from pyree.config import config
    config.update("jax_enable_x64", False)
    assert pyree.config.jax_enable_x64 is False and jnp.ones(2).dtype == np.float32
    config.update("jax_enable_x64", True)
    assert pyree.config.enable_x64 is True and jnp.ones(2).dtype == np.float64
    pyree.config.update("jax_log_compiles", True)          # accepted: no effect on results
    assert pyree.config.jax_log_compiles is True
    pyree.config.update("jax_log_compiles", False)
    pyree.config.config_with_absl()
    pyree.config.parse_flags_with_absl()
    with pytest.raises(AttributeError, match="no option 'jax_no_such_thing'"):
        pyree.config.update("jax_no_such_thing", 1)


def test_disable_jit_runs_python_op_by_op():
    seen = []

    @pyree.jit
    def f(x):
        seen.append(type(x).__name__)
        return x * 2

    with pyree.disable_jit():
        np.testing.assert_array_equal(f(jnp.ones(2)), [2, 2])
        np.testing.assert_array_equal(f(jnp.ones(2)), [2, 2])
    assert seen == ["Array", "Array"]
    f(jnp.ones(2))
    assert seen[-1] == "Tracer"


def test_array_sharding():
    x = jnp.arange(3.0)
    assert x.sharding == pyree.sharding.SingleDeviceSharding(x.device)
    assert x.sharding.device_set == {x.device} and x.sharding.is_fully_replicated
    (shard,) = x.addressable_shards
    np.testing.assert_array_equal(np.asarray(shard.data), [0, 1, 2])
