"""JAX's names that real programs use, with JAX's behaviour (issue: real programs run)."""
import re

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
        # (atol: HIGH is three bf16 products on a GPU, ~1e-6 of the operands' scale)
        np.testing.assert_allclose(lax.dot_general(a[0], b[0], (((1,), (0,)), ((), ())), p),
                                   a[0] @ b[0], rtol=1e-5, atol=1e-5)
    assert lax.Precision.from_any("float32") is lax.Precision.HIGHEST
    # Construction from JAX's names, as jax.lax.Precision('highest').
    assert lax.Precision("highest") is lax.Precision.HIGHEST is lax.Precision(2)
    assert lax.Precision("tensorfloat32") is lax.Precision.HIGH
    assert lax.Precision("bfloat16") is lax.Precision.DEFAULT
    with pytest.raises(ValueError):
        lax.Precision("fast")
    with pytest.raises(ValueError, match="unknown precision"):
        lax.dot(a[0], b[0], precision="fast")


def test_numpy_names():
    assert jnp.bool is jnp.bool_ and jnp.ones(2, jnp.bool).dtype == np.bool_
    assert jnp.isscalar(1.0) and jnp.isscalar(jnp.float32(2)) and not jnp.isscalar(jnp.ones(2))
    # JAX 0.10.2: 0-d arrays of any kind are scalars, 1-d ones and containers are not.
    for v in (1, True, 1j, np.float32(1), np.array(1.0), np.array(1), np.array("a"), "a",
              b"x", jnp.array(1.0), jnp.ones(()).astype(jnp.int8)):
        assert jnp.isscalar(v), v
    for v in (np.ones(1), jnp.ones(1), np.ones((1, 1)), None, [1], (1,)):
        assert not jnp.isscalar(v), v
    seen = []
    pyree.jit(lambda x: seen.append((jnp.isscalar(x), jnp.isscalar(x[0]))) or x)(jnp.ones(2))
    assert seen == [(False, True)]                      # traced values too
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


def test_stax_initializer_aliases():
    """JAX's stax names glorot_normal and normal also glorot and randn."""
    from pyree.example_libraries import stax
    assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal
    w = stax.glorot()(pyree.random.PRNGKey(0), (4, 3))
    assert w.shape == (4, 3) and w.dtype == np.float32


def test_rank_promotion_option():
    """jax_numpy_rank_promotion: 'raise' refuses implicit rank promotion in ufuncs (scalars
    and equal ranks still broadcast), 'warn' warns, as in JAX 0.10.2."""
    try:
        pyree.config.update("jax_numpy_rank_promotion", "raise")
        for f in (lambda: jnp.ones(3) + jnp.ones((2, 3)), lambda: jnp.ones((2, 3)) * np.ones(3),
                  lambda: pyree.jit(jnp.maximum)(jnp.ones(3), jnp.ones((2, 3)))):
            with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
                f()
        assert (jnp.ones(3) + 1.0).shape == (3,) and (jnp.ones(3) + jnp.ones(())).shape == (3,)
        assert (jnp.ones((1, 3)) + jnp.ones((2, 3))).shape == (2, 3)
        pyree.config.update("jax_numpy_rank_promotion", "warn")
        with pytest.warns(UserWarning, match="rank promotion for add on shapes"):
            assert (jnp.ones(3) + jnp.ones((2, 3))).shape == (2, 3)
        with pytest.raises(ValueError, match="allow"):
            pyree.config.update("jax_numpy_rank_promotion", "sometimes")
    finally:
        pyree.config.update("jax_numpy_rank_promotion", "allow")
    assert (jnp.ones(3) + jnp.ones((2, 3))).shape == (2, 3)


def test_jax_only_options_and_platforms_none():
    for name in ("jax_enable_checks", "jax_softmax_custom_jvp",
                 "jax_raise_persistent_cache_errors"):
        assert getattr(pyree.config, name) is False           # JAX's defaults
        pyree.config.update(name, True)
        assert getattr(pyree.config, name) is True
        pyree.config.update(name, False)
    # Not implemented: a clear error rather than standard promotion under a 'strict' name.
    with pytest.raises(NotImplementedError, match="strict"):
        pyree.config.update("jax_numpy_dtype_promotion", "strict")
    assert pyree.config.jax_numpy_dtype_promotion == "standard"
    platform = pyree.config.platform
    pyree.config.update("jax_platforms", None)                # JAX's default value
    assert pyree.config.platform == platform
    np.testing.assert_array_equal(jnp.ones(2) + 1, [2, 2])


def test_jax_environment_variables(tmp_path):
    """JAX_* variables are read as JAX reads them; PYREE_* ones take precedence."""
    import os
    import subprocess
    import sys
    code = ("import pyree; c = pyree.config; "
            "print(c.enable_x64, c.debug_nans, c.platform, c.jax_numpy_rank_promotion)")

    def run(**env):
        ours = ("JAX_", "PYREE_ENABLE_X64", "PYREE_DEBUG_NANS", "PYREE_PLATFORM")
        base = {k: v for k, v in os.environ.items() if not k.startswith(ours)}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120, env={**base, **env}, cwd=tmp_path)
        return out.stdout.split(), out.stderr
    assert run(JAX_ENABLE_X64="1", JAX_DEBUG_NANS="true", JAX_PLATFORMS="cpu",
               JAX_NUMPY_RANK_PROMOTION="warn")[0] == ["True", "True", "cpu", "warn"]
    assert run(JAX_ENABLE_X64="1", PYREE_ENABLE_X64="0")[0][0] == "False"
    assert run()[0] == ["False", "False", "cpu", "allow"]
    out, err = run(JAX_ENABLE_X64="maybe")
    assert not out and "invalid truth value 'maybe'" in err   # as JAX


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


def test_option_context_managers_set_and_restore():
    """jax.enable_x64 and friends: the option holds inside the block (or a decorated call),
    the old value comes back after it, also on an exception; jit traces again under them."""
    assert pyree.config.enable_x64 is False
    f = pyree.jit(lambda x: x / 3.0 + jnp.ones(2))
    k = pyree.jit(lambda: jnp.ones(2))
    x = jnp.arange(2)                                       # int32, made with x64 off
    assert f(x).dtype == np.float32 and k().dtype == np.float32
    with pyree.enable_x64():
        assert pyree.config.enable_x64 is True and jnp.ones(1).dtype == np.float64
        y = f(x)                                            # traced again: float64 as in JAX
        assert y.dtype == np.float64 and k().dtype == np.float64
        np.testing.assert_array_equal(np.asarray(y), np.arange(2) / 3.0 + 1.0)
        with pyree.enable_x64(False):
            assert f(x).dtype == np.float32
    assert pyree.config.enable_x64 is False and f(x).dtype == np.float32
    with pytest.raises(KeyError):
        with pyree.enable_x64():
            raise KeyError
    assert pyree.config.enable_x64 is False

    @pyree.enable_x64()
    def ones():
        return jnp.ones(1).dtype
    assert ones() == np.float64 and pyree.config.enable_x64 is False

    g = pyree.jit(lambda x: jnp.log(x))
    assert np.isnan(np.asarray(g(-jnp.ones(2)))).all()
    for manager, bad in ((pyree.debug_nans, lambda: g(-jnp.ones(2))),
                         (pyree.debug_infs, lambda: jnp.ones(1) / 0.0)):
        with pytest.raises(FloatingPointError):
            with manager():
                bad()
    assert pyree.config.debug_nans is False and pyree.config.debug_infs is False

    add = pyree.jit(lambda a, b: a + b)
    assert add(jnp.ones(3), jnp.ones((2, 3))).shape == (2, 3)
    with pyree.numpy_rank_promotion("raise"):
        assert pyree.config.jax_numpy_rank_promotion == "raise"
        with pytest.raises(ValueError, match="rank_promotion"):
            add(jnp.ones(3), jnp.ones((2, 3)))              # the cached trace is not reused
    assert pyree.config.jax_numpy_rank_promotion == "allow"
    with pytest.raises(ValueError):
        pyree.numpy_rank_promotion("sometimes").__enter__()

    with pyree.default_matmul_precision("float32"):
        assert pyree.config.default_matmul_precision == "float32"
        assert pyree.default_matmul_precision.value == "float32"
    assert pyree.config.default_matmul_precision is None
    with pytest.raises(ValueError):
        pyree.default_matmul_precision("bogus")
    with pytest.raises(TypeError, match="requires an argument"):
        pyree.default_matmul_precision()


def test_array_sharding():
    x = jnp.arange(3.0)
    assert x.sharding == pyree.sharding.SingleDeviceSharding(x.device)
    assert x.sharding.device_set == {x.device} and x.sharding.is_fully_replicated
    (shard,) = x.addressable_shards
    np.testing.assert_array_equal(np.asarray(shard.data), [0, 1, 2])


# -- checkpoint / remat ---------------------------------------------------------------------------

def _f_and_derivative():
    f = lambda x: jnp.sin(x) * x                        # noqa: E731
    df = lambda x: np.cos(x) * x + np.sin(x)            # noqa: E731
    return f, df


def test_checkpoint_keeps_values_and_derivatives():
    f, df = _f_and_derivative()
    cf = pyree.checkpoint(f)
    assert pyree.remat is pyree.checkpoint
    x = np.array([0.3, -1.2, 2.0], np.float32)
    np.testing.assert_allclose(cf(x), np.sin(x) * x, rtol=1e-6)
    np.testing.assert_allclose(pyree.grad(lambda v: cf(v).sum())(x), df(x), rtol=1e-5)
    np.testing.assert_allclose(pyree.jit(pyree.grad(lambda v: cf(v).sum()))(x), df(x), rtol=1e-5)
    _, t = pyree.jvp(cf, (x,), (np.ones(3, np.float32),))
    np.testing.assert_allclose(t, df(x), rtol=1e-5)
    np.testing.assert_allclose(pyree.vmap(pyree.grad(cf))(x), df(x), rtol=1e-5)
    # Nested: checkpoint of a function of checkpointed functions (chain rule by hand).
    nested = pyree.checkpoint(lambda v: cf(cf(v)))
    y = np.sin(x) * x
    np.testing.assert_allclose(pyree.grad(lambda v: nested(v).sum())(x), df(y) * df(x),
                               rtol=1e-5)

    @pyree.checkpoint
    def branchy(v):
        if v > 0:                    # traced control flow in the checkpointed function
            return v * 2.0
        return -v

    step = pyree.jit(pyree.vmap(pyree.grad(branchy)))
    np.testing.assert_array_equal(step(jnp.array([3.0, -3.0])), [2.0, -1.0])


def test_checkpoint_static_argnums_policies_and_scan():
    import functools

    @functools.partial(pyree.checkpoint, static_argnums=(1,),
                       policy=pyree.checkpoint_policies.dots_saveable)
    def repeat(x, n):
        for _ in range(n):           # Python control flow on the static argument
            x = jnp.sin(x)
        if n > 2:
            x = x * 2.0
        return x

    d = np.cos(1.0) * np.cos(np.sin(1.0)) * np.cos(np.sin(np.sin(1.0))) * 2
    np.testing.assert_allclose(pyree.grad(lambda v: repeat(v, 3))(1.0), d, rtol=1e-5)
    np.testing.assert_allclose(pyree.jit(lambda v: repeat(v, 1))(1.0), np.sin(1.0), rtol=1e-6)
    with pytest.raises(ValueError, match="hashable"):
        repeat(1.0, [1])

    # The usual pattern: a checkpointed scan step. c_{t+1} = sin(c_t) * a; d c_4 / d a by
    # forward recursion in NumPy.
    def final(a_):
        step = pyree.checkpoint(lambda c_, t: (jnp.sin(c_) * a_, None),
                                policy=pyree.checkpoint_policies.nothing_saveable)
        return lax.scan(step, 0.7, None, length=4)[0]

    a, c, dc = 1.5, 0.7, 0.0
    for _ in range(4):
        c, dc = np.sin(c) * a, np.cos(c) * a * dc + np.sin(c)
    np.testing.assert_allclose(final(a), c, rtol=1e-6)
    np.testing.assert_allclose(pyree.grad(final)(a), dc, rtol=1e-5)
    np.testing.assert_allclose(pyree.jit(pyree.grad(final))(a), dc, rtol=1e-5)

    P = pyree.transpiler.core.primitives
    pol = pyree.checkpoint_policies
    assert pol.dots_saveable(P.dot_general_p) and not pol.dots_saveable(P.add_p)
    assert pol.checkpoint_dots is pol.dots_saveable
    no_batch = dict(dimension_numbers=(((1,), (0,)), ((), ())))
    batch = dict(dimension_numbers=(((2,), (1,)), ((0,), (0,))))
    assert pol.dots_with_no_batch_dims_saveable(P.dot_general_p, **no_batch)
    assert not pol.dots_with_no_batch_dims_saveable(P.dot_general_p, **batch)
    for make in (pol.save_only_these_names, pol.save_any_names_but_these,
                 pol.save_anything_except_these_names):
        assert callable(make("h"))
    assert pol.everything_saveable(P.add_p) and not pol.nothing_saveable(P.add_p)
    with pytest.raises(TypeError, match="policy must be callable"):
        pyree.checkpoint(jnp.sin, policy="dots")


def test_ad_checkpoint_module():
    import functools
    from pyree.ad_checkpoint import checkpoint, checkpoint_name, checkpoint_policies

    @functools.partial(checkpoint, policy=checkpoint_policies.save_only_these_names("h"))
    def layer(w, x):
        return jnp.tanh(checkpoint_name(x @ w, "h"))

    w = np.array([[0.5, -1.0], [2.0, 0.3]], np.float32)
    x = np.array([[1.0, 2.0]], np.float32)
    h = x @ w
    np.testing.assert_allclose(layer(w, x), np.tanh(h), rtol=1e-6)
    h64 = x.astype(np.float64) @ w
    np.testing.assert_allclose(pyree.grad(lambda w_: layer(w_, x).sum())(w),
                               x.T @ (1 - np.tanh(h64) ** 2), rtol=1e-5, atol=1e-6)
    tree = {"a": jnp.ones(2)}
    assert checkpoint_name(tree, "t") is tree


def _residual_layer(W, x):
    y = jnp.dot(W, x)
    return jnp.sin(y)


def test_print_saved_residuals_lists_what_the_backward_pass_reads(capsys):
    """As JAX's list for the remat notebook's three-layer example: the arguments, each layer's
    sin (the next dot's tangent reads it) and cos (sin's derivative); not the dots' outputs."""
    from pyree.ad_checkpoint import print_saved_residuals, saved_residuals

    def f(W1, W2, W3, x):
        return _residual_layer(W3, _residual_layer(W2, _residual_layer(W1, x)))

    args = (jnp.ones((5, 4)), jnp.ones((6, 5)), jnp.ones((7, 6)), jnp.ones(4))
    found = [(r.shape, re.sub(r" from \S+:\d+:\d+", "", text))
             for r, text in saved_residuals(f, *args)]
    assert found == [
        ((5, 4), "from the argument W1"), ((6, 5), "from the argument W2"),
        ((7, 6), "from the argument W3"), ((4,), "from the argument x"),
        ((5,), "output of sin (_residual_layer)"), ((5,), "output of cos (_residual_layer)"),
        ((6,), "output of sin (_residual_layer)"), ((6,), "output of cos (_residual_layer)"),
        ((7,), "output of cos (_residual_layer)")]
    print_saved_residuals(lambda params, x: jnp.sin(jnp.dot(params[0], x)).sum(), [args[0]],
                          args[3])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["f32[5,4] from the argument params[0]", "f32[4] from the argument x"]
    assert lines[2].startswith("f32[5] output of cos from " + __file__)
    assert lines[2].endswith("(<lambda>)") and len(lines) == 3
    # As JAX, the column counts from 0: it points at the expression that made the value.
    line, col = map(int, re.search(r":(\d+):(\d+) \(<lambda>\)$", lines[2]).groups())
    import linecache
    assert linecache.getline(__file__, line)[col:].startswith("jnp.sin(")


# -- top-level utilities --------------------------------------------------------------------------

def test_named_call_scope_and_process_queries():
    layer = pyree.named_call(lambda x: jnp.tanh(x) * 2, name="layer")
    np.testing.assert_allclose(pyree.jit(pyree.grad(layer))(0.5), 2 * (1 - np.tanh(0.5) ** 2),
                               rtol=1e-6)

    @pyree.jit
    def f(x):
        with pyree.named_scope("block"):
            y = x + 1
        if x.sum() > 0:          # converted control flow inside named functions still works
            y = y * 2
        return y

    np.testing.assert_array_equal(f(jnp.ones(2)), [4.0, 4.0])
    with pytest.raises(TypeError, match="must be a string"):
        pyree.named_scope(3)
    assert pyree.process_index() == pyree.host_id() == 0
    assert pyree.process_count() == pyree.host_count() == 1
    assert pyree.process_indices() == [0]
    assert pyree.local_device_count() == pyree.device_count() == len(pyree.local_devices())
    info = pyree.print_environment_info(return_string=True)
    assert "pyree" in info and "numpy:" in info and "process_count: 1" in info


def test_typeof_gives_shaped_arrays():
    t = pyree.typeof(jnp.ones((2, 3)))
    assert t.shape == (2, 3) and t.dtype == np.float32 and not t.weak_type
    assert pyree.typeof(1.0).weak_type and pyree.typeof(np.int8(3)).dtype == np.int8
    seen = []
    pyree.jit(lambda x: seen.append(pyree.typeof(x)) or x)(jnp.zeros((4,), jnp.int32))
    assert seen[0].shape == (4,) and seen[0].dtype == np.int32


def test_ensure_compile_time_eval_runs_constants_now():
    from pyree.runtime.array import Array
    seen = []

    @pyree.jit
    def f(x):
        with pyree.ensure_compile_time_eval():
            table = jnp.arange(4) * 2
            n = int(jnp.sum(table))              # a Python int while tracing
            seen.append((type(table), type(x + 1).__name__))
        return x * n + table[1]

    np.testing.assert_array_equal(f(jnp.ones(3)), [14.0, 14.0, 14.0])
    assert seen[0][0] is Array and seen[0][1] == "Tracer"   # traced values are still traced
    with pyree.ensure_compile_time_eval():                  # eagerly: nothing changes
        assert float(jnp.sum(jnp.ones(3))) == 3.0


def test_clear_caches_and_effects_barrier(capsys):
    from pyree.runtime import compile as rcompile
    f = pyree.jit(lambda x: x * 3 - 1)
    assert float(f(2.0)) == 5.0 and len(f._cache) == 1
    pyree.clear_caches()
    assert len(f._cache) == 0 and len(rcompile._memory_cache) == 0
    assert float(f(2.0)) == 5.0 and len(f._cache) == 1

    @pyree.jit
    def g(x):
        pyree.debug.print("x={}", x)
        return x + 1

    g(jnp.float32(1.0))
    assert pyree.effects_barrier() is None
    assert "x=1" in capsys.readouterr().out


_DEFAULT_DEVICE = """
import numpy as np
import pyree, pyree.numpy as jnp
d0, d1 = pyree.devices()
assert pyree.local_device_count() == 2
f = pyree.jit(lambda x: x * 2 + 1)
g = pyree.jit(lambda: jnp.arange(3.0) * 2)
assert g().device == d0 and jnp.ones(2).device == d0
with pyree.default_device(d1):
    x = jnp.ones(3)
    assert x.device == d1 and (x + 1).device == d1 and jnp.sum(x).device == d1
    y = f(np.arange(3.0, dtype=np.float32))
    assert y.device == d1 and f(2.0).device == d1 and g().device == d1
    assert pyree.device_put(np.ones(2)).device == d1
    with pyree.default_device(None):
        assert jnp.ones(1).device == d0
    np.testing.assert_array_equal(np.asarray(y), [1, 3, 5])
assert jnp.ones(2).device == d0 and f(2.0).device == d0 and g().device == d0
pyree.config.update("jax_default_device", d1)
assert jnp.zeros(2).device == d1
pyree.config.update("jax_default_device", None)
with pyree.default_device("cpu"):
    assert jnp.zeros(2).device == d0
print("ok")
"""


def test_default_device_places_arrays_and_computations():
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYREE_NUM_CPU_DEVICES="2", PYREE_PLATFORM="cpu")
    done = subprocess.run([sys.executable, "-c", _DEFAULT_DEVICE], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
    with pyree.default_device(pyree.devices()[0]):     # the current default: accepted
        assert jnp.ones(2).device == pyree.devices()[0]


def test_linear_transpose():
    A = np.array([[1.0, 2.0, 0.0], [0.0, -1.0, 3.0]], np.float32)
    t = pyree.linear_transpose(lambda x: jnp.asarray(A) @ x, jnp.zeros(3))
    c = np.array([1.0, -2.0], np.float32)
    (got,) = t(c)
    np.testing.assert_allclose(got, A.T @ c, rtol=1e-6)
    # Pytrees in and out; ShapeDtypeStruct primals.
    t2 = pyree.linear_transpose(lambda p: {"s": p[0] * 2.0 + p[1][::-1]},
                                (pyree.ShapeDtypeStruct((2,), np.float32),
                                 pyree.ShapeDtypeStruct((2,), np.float32)))
    ((a, b),) = t2({"s": np.array([1.0, 3.0], np.float32)})     # one cotangent per primal
    np.testing.assert_allclose(a, [2.0, 6.0])
    np.testing.assert_allclose(b, [3.0, 1.0])
    with pytest.raises(TypeError, match="cotangent"):
        t(np.ones(3, np.float32))


def test_closure_convert():
    def g_of(x):
        return lambda y: jnp.sin(x * y)

    conv, consts = pyree.closure_convert(g_of(jnp.float32(2.0)), 1.0)
    assert consts == []                                  # nothing traced to hoist
    np.testing.assert_allclose(conv(0.5), np.sin(1.0), rtol=1e-6)

    def outer(x):
        conv, consts = pyree.closure_convert(g_of(x), 1.0)
        assert len(consts) == 1                          # the closed-over traced x
        return conv(0.5, *consts)

    np.testing.assert_allclose(pyree.jit(outer)(2.0), np.sin(1.0), rtol=1e-6)
    np.testing.assert_allclose(pyree.grad(outer)(2.0), 0.5 * np.cos(1.0), rtol=1e-5)


# -- tree_util key paths --------------------------------------------------------------------------

def test_tree_paths_print_like_jax():
    import collections
    import dataclasses
    from pyree import tree_util as tu
    NT = collections.namedtuple("NT", "a b")
    tree = {"a": [1, (2, None)], "b": NT(3, 4), "c": collections.OrderedDict(z=5, y=6),
            "d": tu.Partial(lambda x, y: x, 7), "e": collections.defaultdict(int, {"q": 8})}
    pairs, treedef = tu.tree_flatten_with_path(tree)
    assert [tu.keystr(p) for p, _ in pairs] == [
        "['a'][0]", "['a'][1][0]", "['b'].a", "['b'].b", "['c']['z']", "['c']['y']",
        "['d'][<flat index 0>][0]", "['e']['q']"]
    assert [leaf for _, leaf in pairs] == [1, 2, 3, 4, 5, 6, 7, 8]
    assert treedef == tu.tree_structure(tree)
    assert tu.keystr(pairs[1][0], simple=True, separator="/") == "a/1/0"
    assert pairs[2][0] == (tu.DictKey("b"), tu.GetAttrKey("a"))
    assert repr(pairs[6][0]) == ("(DictKey(key='d'), FlattenedIndexKey(key=0), "
                                 "SequenceKey(idx=0))")
    assert str(tu.SequenceKey(3)) == "[3]" and tu.SequenceKey(3).idx == 3
    assert tu.tree_leaves_with_path(1) == [((), 1)]
    assert pyree.tree.leaves_with_path({"x": 1}) == [((tu.DictKey("x"),), 1)]

    out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y),
                                {"a": 1, "b": [2]}, {"a": 10, "b": [20]})
    assert out == {"a": ("['a']", 11), "b": [("['b'][0]", 22)]}
    assert pyree.tree.map_with_path(lambda p, x: len(p), [1, [2]]) == [1, [2]]
    got = tu.tree_flatten_with_path([1, [2, 3]], is_leaf=lambda p, x: len(p) == 1,
                                    is_leaf_takes_path=True)[0]
    assert got == [((tu.SequenceKey(0),), 1), ((tu.SequenceKey(1),), [2, 3])]
    assert pyree.tree.flatten_with_path([5])[0] == [((tu.SequenceKey(0),), 5)]

    @tu.register_dataclass
    @dataclasses.dataclass
    class Params:
        w: float
        n: int = dataclasses.field(default=1, metadata=dict(static=True))

    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Params(2.0))] == [".w"]

    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    tu.register_pytree_with_keys(
        Pair, lambda p: (((tu.GetAttrKey("a"), p.a), (tu.DictKey("bee"), p.b)), None),
        lambda _, c: Pair(*c))
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path([Pair(1, {"k": 2})])] == [
        "[0].a", "[0]['bee']['k']"]
    assert tu.tree_leaves(Pair(5, 6)) == [5, 6]

    @tu.register_pytree_with_keys_class
    class Box:
        def __init__(self, x):
            self.x = x

        def tree_flatten_with_keys(self):
            return ((tu.GetAttrKey("x"), self.x),), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    assert tu.tree_map(lambda v: v + 1, Box(3)).x == 4
    assert float(pyree.jit(lambda b: b.x * 2)(Box(3.0))) == 6.0


def test_tree_static_transpose_broadcast_and_helpers():
    import collections
    import operator
    from pyree import tree_util as tu

    @tu.register_static
    class Static:
        def __init__(self, v):
            self.v = v

        def __hash__(self):
            return hash(self.v)

        def __eq__(self, other):
            return isinstance(other, Static) and other.v == self.v

    assert tu.tree_leaves([Static(1), 2]) == [2]
    assert tu.tree_structure([Static(1), 2]) == tu.tree_structure([Static(1), 3])
    assert tu.tree_structure([Static(1), 2]) != tu.tree_structure([Static(2), 3])
    assert float(pyree.jit(lambda s, x: x * s.v)(Static(3), 2.0)) == 6.0

    assert tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure((0, 0)),
                             [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    assert pyree.tree.transpose(tu.tree_structure([0, 0, 0]), None,
                                [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]) == \
        {"a": [1, 3, 5], "b": [2, 4, 6]}
    assert tu.tree_broadcast([1, {"a": 2}], [(3, 4), {"a": [5, 6]}]) == [(1, 1), {"a": [2, 2]}]
    assert pyree.tree.broadcast(0, {"x": (1, 2)}) == {"x": (0, 0)}
    NT = collections.namedtuple("NT", "a b")
    assert all(tu.is_tree_node(t) for t in (list, tuple, dict, NT, type(None), tu.Partial))
    assert not tu.is_tree_node(int)
    assert tu.flatten_one_level({"b": 1, "a": [2]}) == ([[2], 1], ("a", "b"))
    assert tu.flatten_one_level_with_keys(NT(1, 2))[0] == [(tu.GetAttrKey("a"), 1),
                                                           (tu.GetAttrKey("b"), 2)]
    with pytest.raises(ValueError, match="can't tree-flatten"):
        tu.flatten_one_level(3)
    assert tu.tree_reduce_associative(operator.add, [1, (2, 3), 4, 5]) == 15
    assert pyree.tree.reduce_associative(operator.add, [], identity=0) == 0
    with pytest.raises(TypeError, match="identity"):
        tu.tree_reduce_associative(operator.add, [])


# -- lax ------------------------------------------------------------------------------------------

def test_associative_scan_matches_sequential_scans():
    rng = np.random.default_rng(0)
    mats = rng.normal(size=(7, 2, 2)).astype(np.float32)
    want = [mats[0]]
    for m in mats[1:]:
        want.append(want[-1] @ m)                       # non-commutative: order matters
    got = lax.associative_scan(jnp.matmul, mats)
    np.testing.assert_allclose(got, np.stack(want), rtol=1e-5, atol=1e-6)
    back = [mats[-1]]                                   # reverse: fn(later, earlier) sums
    for m in mats[-2::-1]:
        back.append(back[-1] @ m)
    np.testing.assert_allclose(lax.associative_scan(jnp.matmul, mats, reverse=True),
                               np.stack(back[::-1]), rtol=1e-5, atol=1e-6)
    x = rng.normal(size=(3, 5)).astype(np.float32)
    np.testing.assert_allclose(pyree.jit(lambda v: lax.associative_scan(jnp.add, v, axis=1))(x),
                               np.cumsum(x, 1), rtol=1e-5, atol=1e-6)
    pair = lax.associative_scan(lambda a, b: (a[0] + b[0], a[1] * b[1]),
                                (jnp.arange(4.0), jnp.arange(1.0, 5.0)))
    np.testing.assert_array_equal(pair[0], [0, 1, 3, 6])
    np.testing.assert_array_equal(pair[1], [1, 2, 6, 24])
    # d/dv sum(cumprod(v)) at [1, 2, 3, 4] (JAX gives [33, 16, 10, 6]).
    np.testing.assert_allclose(
        pyree.grad(lambda v: lax.associative_scan(jnp.multiply, v).sum())(jnp.arange(1.0, 5.0)),
        [33.0, 16.0, 10.0, 6.0], rtol=1e-6)


def test_lax_selection_and_shape_helpers():
    src = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)

    @pyree.jit      # one program for the values
    def values(src):
        z, o, t = jnp.zeros(3), jnp.ones(3), jnp.full(3, 2.0)
        return (lax.select_n(jnp.array([0, 2, 1]), z, o, t), lax.select_n(True, z, o),
                lax.select_n(jnp.array([True, False, True]), z, o),
                lax.full_like(jnp.ones(3, jnp.int32), 2.7), lax.split(jnp.arange(6), (2, 4)),
                lax.unstack(jnp.arange(6.0).reshape(2, 3), 1),
                lax.stack([jnp.ones(2), jnp.zeros(2)], 1), lax.tile(jnp.arange(3), (2,)),
                lax.index_take(src, (jnp.array([1, 0]), jnp.array([2, 1])), (0, 1)))

    sel3, sel_scalar, sel_bool, full, (a, b), parts, stacked, tiled, taken = values(src)
    np.testing.assert_array_equal(sel3, [0, 2, 1])
    np.testing.assert_array_equal(sel_scalar, [1, 1, 1])
    np.testing.assert_array_equal(sel_bool, [1, 0, 1])
    np.testing.assert_array_equal(full, [2, 2, 2])
    assert full.dtype == np.int32
    np.testing.assert_array_equal(a, [0, 1])
    np.testing.assert_array_equal(b, [2, 3, 4, 5])
    assert len(parts) == 3 and parts[2].tolist() == [2.0, 5.0]
    np.testing.assert_array_equal(stacked, [[1, 0], [1, 0]])
    np.testing.assert_array_equal(tiled, [0, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(taken, src[[1, 0], [2, 1]])
    with pytest.raises(ValueError, match="at least one case"):
        lax.select_n(0)
    with pytest.raises(ValueError, match="reps length"):
        lax.tile(jnp.ones((2, 3)), (2,))
    # Shapes and dtypes (no computation).
    shapes = pyree.eval_shape(lambda: (
        lax.broadcast_to_rank(jnp.ones(3), 3), lax.broadcast_to_rank(1.0, 2),
        lax.full_like(jnp.ones(3), 2, shape=(2, 2)), lax.full_like(jnp.ones(3), 2, jnp.int32),
        lax.collapse(jnp.ones((2, 3, 4)), 1), lax.collapse(jnp.ones((2, 3, 4)), 0, 2),
        lax.index_take(jnp.ones((2, 3, 4)), (jnp.array([1, 0]),), (2,))))
    assert [s.shape for s in shapes] == [(1, 1, 3), (1, 1), (2, 2), (3,), (2, 12), (6, 4),
                                         (2, 2, 3)]
    assert shapes[3].dtype == np.int32
    assert lax.broadcast_shapes((2, 1), (3,)) == (2, 3)
    pair = (jnp.ones(2), jnp.zeros(2))
    assert lax.optimization_barrier(pair) is pair


def test_lax_reduce():
    x = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(lax.reduce(x, 0.0, lax.add, (1,)), [6, 15])
    np.testing.assert_array_equal(lax.reduce(x, 1.0, lambda a, b: a * b, (0, 1)), 720.0)
    np.testing.assert_array_equal(lax.reduce(x, 100.0, lax.max, (0,)), [100, 100, 100])  # init
    np.testing.assert_array_equal(lax.reduce(x, -jnp.inf, jnp.maximum, (0,)), [4, 5, 6])
    np.testing.assert_array_equal(lax.reduce_xor(jnp.array([1, 3, 4]), (0,)), 6)
    # A variadic reduction: argmax as (value, index) pairs, traced by halving.
    v = np.array([[3.0, 9.0, 1.0, 9.5, 2.0], [0.0, -1.0, 4.0, 4.0, 1.0]], np.float32)
    idx = np.broadcast_to(np.arange(5, dtype=np.int32), v.shape)

    def pick(a, b):
        take = (a[0] > b[0]) | ((a[0] == b[0]) & (a[1] < b[1]))
        return jnp.where(take, a[0], b[0]), jnp.where(take, a[1], b[1])

    best, where = pyree.jit(lambda v_, i_: lax.reduce((v_, i_), (-jnp.inf, 0), pick, (1,)))(
        v, idx)
    np.testing.assert_array_equal(best, v.max(1))
    np.testing.assert_array_equal(where, v.argmax(1))
    np.testing.assert_allclose(pyree.grad(lambda y: lax.reduce(y * y, 0.0, lax.add, (0, 1)))(x),
                               2 * x)


def _jacobi(mv, r, diag):
    return lax.fori_loop(0, 60, lambda i, x: x + (r - mv(x)) / diag, jnp.zeros_like(r))


def test_custom_linear_solve_differentiates_implicitly():
    rng = np.random.default_rng(0)
    A = (rng.normal(size=(3, 3)) + 4 * np.eye(3)).astype(np.float32)
    b = rng.normal(size=3).astype(np.float32)

    def solve(A_, b_):       # an iterative solver (a loop pyree cannot transpose) in both ways
        return lax.custom_linear_solve(
            lambda v: A_ @ v, b_, solve=lambda mv, r: _jacobi(mv, r, jnp.diag(A_)),
            transpose_solve=lambda vm, r: _jacobi(vm, r, jnp.diag(A_)))

    x = np.linalg.solve(A.astype(np.float64), b)
    np.testing.assert_allclose(solve(A, b), x, rtol=1e-5)          # eagerly
    loss = lambda A_, b_: (solve(A_, b_) ** 2).sum()      # noqa: E731
    gb = np.linalg.solve(A.T.astype(np.float64), 2 * x)   # dL/db = A^-T 2x, dL/dA = -gb x^T
    dA, db = np.eye(3, dtype=np.float32), np.ones(3, np.float32)
    B = rng.normal(size=(4, 3)).astype(np.float32)

    @pyree.jit
    def derivatives(A, b, B):
        return (pyree.grad(loss, (0, 1))(A, b),
                pyree.jvp(solve, (A, b), (dA, db))[1],
                pyree.vmap(solve, (None, 0))(A, B))

    (g_A, g_b), t, batched = derivatives(A, b, B)
    np.testing.assert_allclose(g_b, gb, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(g_A, -np.outer(gb, x), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(t, np.linalg.solve(A.astype(np.float64), db - dA @ x),
                               rtol=1e-4, atol=1e-6)                   # A dx = db - dA x
    np.testing.assert_allclose(batched, np.linalg.solve(A.astype(np.float64), B.T).T,
                               rtol=1e-4, atol=1e-6)
    # Symmetric systems reuse solve; without transpose_solve reverse mode is refused.
    S = A @ A.T
    sym = lambda b_: lax.custom_linear_solve(lambda v: S @ v, b_,   # noqa: E731
                                             lambda mv, r: jnp.linalg.solve(S, r),
                                             symmetric=True)
    np.testing.assert_allclose(pyree.jit(pyree.grad(lambda b_: sym(b_).sum()))(b),
                               np.linalg.solve(S.astype(np.float64), np.ones(3)), rtol=1e-4)
    bare = lambda b_: lax.custom_linear_solve(lambda v: A @ v, b_,   # noqa: E731
                                              lambda mv, r: jnp.linalg.solve(A, r))
    with pytest.raises(TypeError, match="transpose_solve required"):
        pyree.grad(lambda b_: bare(b_).sum())(b)


def _newton_sqrt(a):
    def newton(f, x0):
        return lax.fori_loop(0, 30, lambda i, x: x - f(x) / (2 * x), x0)
    return lax.custom_root(lambda x: x ** 2 - a, 1.0, newton, lambda g, y: y / g(1.0))


def test_custom_root_differentiates_implicitly():
    np.testing.assert_allclose(_newton_sqrt(2.0), np.sqrt(2.0), rtol=1e-6)       # eagerly

    @pyree.jit
    def derivatives(a, batch):
        return (pyree.grad(_newton_sqrt)(a), pyree.jvp(_newton_sqrt, (a,), (1.0,))[1],
                pyree.vmap(pyree.grad(_newton_sqrt))(batch),
                pyree.grad(pyree.grad(_newton_sqrt))(a))

    d1, t, batched, d2 = derivatives(2.0, jnp.array([1.0, 4.0]))
    np.testing.assert_allclose(d1, 0.5 / np.sqrt(2.0), rtol=1e-5)
    np.testing.assert_allclose(t, 0.5 / np.sqrt(2.0), rtol=1e-5)
    np.testing.assert_allclose(batched, [0.5, 0.25], rtol=1e-5)
    np.testing.assert_allclose(d2, -0.25 * 2.0 ** -1.5, rtol=1e-4)   # its own rule, again

    # A vector root x(p) of tanh(x) + x = p: dx/dp = diag(1 / (2 - tanh(x)^2)).
    def root(p):
        f = lambda x: jnp.tanh(x) + x - p                     # noqa: E731
        solve = lambda f_, x0: lax.fori_loop(0, 60, lambda i, x: x - f_(x) * 0.4, x0)  # noqa
        return lax.custom_root(f, jnp.zeros(2), solve,
                               lambda g, y: jnp.linalg.solve(pyree.jacobian(g)(y), y),
                               has_aux=False)

    p = np.array([0.5, -1.0], np.float32)
    x, jac = pyree.jit(lambda p_: (root(p_), pyree.jacobian(root)(p_)))(p)
    x = np.asarray(x)
    np.testing.assert_allclose(np.tanh(x) + x, p, atol=1e-5)
    np.testing.assert_allclose(jac, np.diag(1 / (2 - np.tanh(x) ** 2)), rtol=1e-4, atol=1e-6)

    def with_aux(a):
        def solve(f, x0):
            return lax.fori_loop(0, 30, lambda i, x: x - f(x) / (2 * x), x0), 30
        return lax.custom_root(lambda x: x ** 2 - a, 1.0, solve, lambda g, y: y / g(1.0),
                               has_aux=True)

    (value, aux), d = pyree.jit(lambda a: (with_aux(a), pyree.grad(lambda a_: with_aux(a_)[0])(
        a)))(9.0)
    assert float(value) == pytest.approx(3.0) and int(aux) == 30
    np.testing.assert_allclose(d, 1 / 6, rtol=1e-5)


def test_lax_special_functions():
    from scipy import special
    m = np.array([1.0, 2.0, 1.5], np.float32)
    x = np.array([2.0, 3.0, 2.0], np.float32)
    v = np.array([-3.0, 0.5, 20.0], np.float32)

    @pyree.jit
    def values(m, x, v):
        return (lax.polygamma(m, x), lax.polygamma(1.0, x), lax.zeta(x + 1.0, m),
                lax.betainc(m, x, v * 0 + 0.4), lax.bessel_i0e(v), lax.bessel_i1e(v))

    poly, poly1, zeta, betainc, i0e, i1e = (np.asarray(a) for a in values(m, x, v))
    np.testing.assert_allclose(poly[:2], special.polygamma([1, 2], x[:2]), rtol=1e-5)
    assert np.isnan(poly[2])                     # a non-integer order, as in JAX
    np.testing.assert_allclose(poly1, special.polygamma(1, x), rtol=1e-5)
    np.testing.assert_allclose(zeta, special.zeta(x + 1.0, m), rtol=1e-5)
    np.testing.assert_allclose(betainc, special.betainc(m, x, 0.4), rtol=1e-5)
    np.testing.assert_allclose(i0e, special.i0e(v), rtol=1e-5)
    np.testing.assert_allclose(i1e, special.i1e(v), rtol=1e-5)
    with pytest.raises(TypeError, match="same dtypes"):
        lax.polygamma(jnp.ones(1, jnp.float16), jnp.ones(1))
    with pytest.raises(TypeError, match="floating"):
        lax.bessel_i0e(jnp.ones(2, jnp.int32))


# -- random ---------------------------------------------------------------------------------------

def test_random_binomial_multinomial_orthogonal():
    from scipy import stats
    from pyree import random
    key = random.PRNGKey(0)
    # One program: inversion (n p < 10), BTRS (large n p), p > 1/2 by symmetry, and the
    # edge cases (invalid n or p give NaN, p = 0 or 1 and n = 0 are exact).
    n = np.array([20.0, 1000.0, 5.0, -1.0, 3.0, 3.0, 3.0, 0.0], np.float32)[:, None]
    p = np.array([0.3, 0.7, 0.95, 0.5, 1.5, 0.0, 1.0, 0.5], np.float32)[:, None]
    x = np.asarray(pyree.jit(lambda k: random.binomial(k, n, p, (8, 20000)))(key))
    assert x.dtype == np.float32
    for i in range(3):
        row, ni, pi = x[i], n[i, 0], p[i, 0]
        assert row.min() >= 0 and row.max() <= ni and np.all(row == np.floor(row))
        sd = np.sqrt(ni * pi * (1 - pi))
        assert abs(row.mean() - ni * pi) < 4 * sd / np.sqrt(row.size)
        assert abs(row.var() / sd ** 2 - 1) < 0.05
    freq = np.bincount(x[0].astype(int), minlength=21)[:21] / x.shape[1]
    np.testing.assert_allclose(freq, stats.binom.pmf(np.arange(21), 20, 0.3), atol=0.01)
    assert np.isnan(x[3:5]).all()
    np.testing.assert_array_equal(x[5:, :3], [[0, 0, 0], [3, 3, 3], [0, 0, 0]])

    probs = np.array([0.2, 0.3, 0.5], np.float32)

    trials = np.where(np.arange(4000) % 2, 10.0, 20.0).astype(np.float32)

    @pyree.jit
    def draws(k):     # unnormalized probabilities, trials per row
        return (random.multinomial(k, trials, probs * 7, shape=(4000, 3)),
                random.orthogonal(k, 4, (3,)), random.orthogonal(k, 3, m=5))

    c, q, wide = (np.asarray(a) for a in draws(key))
    assert c.shape == (4000, 3) and np.all(c.sum(1) == trials)
    for rows, n_trials in ((c[1::2], 10), (c[::2], 20)):
        np.testing.assert_allclose(rows.mean(0), n_trials * probs, rtol=0.05)
        np.testing.assert_allclose(rows.var(0), n_trials * probs * (1 - probs), rtol=0.12)
    assert q.shape == (3, 4, 4) and wide.shape == (3, 5)
    np.testing.assert_allclose(np.einsum("bij,bik->bjk", q, q),
                               np.broadcast_to(np.eye(4), (3, 4, 4)), atol=1e-5)
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-5)


# -- nn -------------------------------------------------------------------------------------------

def _attention_reference(q, k, v, bias=None, keep=None, scale=None):
    """Grouped-query attention in float64 NumPy (query head n uses key head n // G)."""
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    g = q.shape[2] // k.shape[2]
    k, v = np.repeat(k, g, axis=2), np.repeat(v, g, axis=2)
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    logits = np.einsum("btnh,bsnh->bnts", q, k) * scale
    if bias is not None:
        logits = logits + bias
    if keep is not None:
        logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
    w = np.exp(logits - logits.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    return np.einsum("bnts,bsnh->btnh", w, v)


def test_dot_product_attention():
    from pyree import nn
    rng = np.random.default_rng(0)
    q = rng.normal(size=(2, 3, 4, 5)).astype(np.float32)
    k = rng.normal(size=(2, 6, 2, 5)).astype(np.float32)
    v = rng.normal(size=(2, 6, 2, 5)).astype(np.float32)
    bias = rng.normal(size=(1, 4, 3, 6)).astype(np.float32)
    mask = rng.random((2, 1, 3, 6)) > 0.3
    mask[0, 0, 0] = False                                   # a query with every key masked
    causal = np.tril(np.ones((3, 6), bool))

    @pyree.jit      # one program for all the variants
    def run(q, k, v, bias, mask):
        attend = nn.dot_product_attention
        return (attend(q, k, v), attend(q, k, v, bias, mask, scale=0.3),
                attend(q, k, v, is_causal=True),
                attend(q, k, v, local_window_size=(1, 2), query_seq_lengths=jnp.array([2, 3]),
                       key_value_seq_lengths=jnp.array([4, 6])),
                pyree.grad(lambda v_: attend(q, k, v_).sum())(v))

    plain, masked, causal_out, windowed, g = run(q, k, v, bias, mask)
    out, lse = pyree.jit(lambda q, k, v: nn.dot_product_attention(q, k, v, return_residual=True))(
        q[0], k[0], v[0])
    np.testing.assert_allclose(plain, _attention_reference(q, k, v), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(masked, _attention_reference(q, k, v, bias, mask, 0.3),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(causal_out, _attention_reference(q, k, v, keep=causal),
                               rtol=1e-5, atol=1e-6)
    # Sequence lengths and a local window; padded queries give zeros.
    rows, cols = np.arange(3)[:, None], np.arange(6)[None]
    keep = ((cols >= rows - 1) & (cols <= rows + 2))[None, None] & \
        (np.arange(6) < np.array([4, 6])[:, None])[:, None, None, :]
    want = _attention_reference(q, k, v, keep=keep)
    want[0, 2:] = 0
    np.testing.assert_allclose(windowed, want, rtol=1e-5, atol=1e-6)
    assert out.shape == (3, 4, 5) and lse.shape == (3, 4)
    np.testing.assert_allclose(out, _attention_reference(q[:1], k[:1], v[:1])[0], rtol=1e-5,
                               atol=1e-6)
    logits = np.einsum("tnh,snh->nts", q[0].astype(np.float64),
                       np.repeat(k[0], 2, axis=1)) / np.sqrt(5)
    np.testing.assert_allclose(lse, np.log(np.exp(logits).sum(-1)).T, rtol=1e-5)
    # d(sum of outputs)/d value[b, s, j, h] = sum over queries and heads of head j's weights.
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    want_g0 = weights.reshape(2, 2, 3, 6).sum((1, 2)).T          # (S, K) for batch 0
    np.testing.assert_allclose(np.asarray(g)[0], np.repeat(want_g0[:, :, None], 5, axis=2),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="multiple"):
        nn.dot_product_attention(q, k[:, :, :1].repeat(3, 2), v[:, :, :1].repeat(3, 2))


def test_nn_identity_log1mexp_logmeanexp():
    from pyree import nn
    x = np.array([0.0, 0.1, 1.0, 10.0, -1.0], np.float32)
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)

    @pyree.jit
    def values(x, a):
        return (nn.log1mexp(x), pyree.vmap(pyree.grad(nn.log1mexp))(jnp.array([0.5, 5.0])),
                nn.logmeanexp(a, axis=1), nn.logmeanexp(a, axis=0, keepdims=True),
                nn.logmeanexp(jnp.array([1.0, 2.0, 3.0]), where=jnp.array([True, False, True])),
                nn.sparse_sigmoid(jnp.array([-2.0, 0.0, 0.5, 3.0])))

    l1m, dl1m, lme1, lme0, lme_where, sparse = values(x, a)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log1p(-np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(l1m, want, rtol=1e-5)
    e = np.exp(-np.array([0.5, 5.0]))
    np.testing.assert_allclose(dl1m, e / (1 - e), rtol=1e-5)
    np.testing.assert_allclose(lme1, np.log(np.exp(a).mean(1)), rtol=1e-6)
    np.testing.assert_allclose(lme0, np.log(np.exp(a).mean(0, keepdims=True)), rtol=1e-6)
    np.testing.assert_allclose(lme_where, np.log((np.e + np.e ** 3) / 2), rtol=1e-6)
    np.testing.assert_array_equal(sparse, [0, 0.5, 0.75, 1])
    y = jnp.array([-2.0, 0.5])
    assert nn.identity(y) is y


# -- numpy ----------------------------------------------------------------------------------------

def test_index_tricks_r_and_c():
    def same(got, want):
        got, want = np.asarray(got), np.asarray(want)
        assert got.shape == want.shape, (got.shape, want.shape)
        np.testing.assert_allclose(got, want)

    same(jnp.r_[1:4, 0, jnp.array([7, 8])], np.r_[1:4, 0, np.array([7, 8])])
    same(jnp.r_[0:1:5j], np.r_[0:1:5j])
    same(jnp.r_[-1:1:3j, [2.5]], np.r_[-1:1:3j, [2.5]])
    same(jnp.r_["-1", jnp.ones((2, 2)), jnp.zeros((2, 1))],
         np.r_["-1", np.ones((2, 2)), np.zeros((2, 1))])
    same(jnp.r_["0,2", [1, 2], [3, 4]], np.r_["0,2", [1, 2], [3, 4]])
    same(jnp.r_["0,2,0", [1, 2], [3, 4]], np.r_["0,2,0", [1, 2], [3, 4]])
    same(jnp.r_["1,3,1", np.ones((2, 2)), np.zeros((2, 2))],
         np.r_["1,3,1", np.ones((2, 2)), np.zeros((2, 2))])
    same(jnp.r_["r", 1:3], [[1, 2]])
    same(jnp.c_[jnp.array([1, 2, 3]), jnp.array([4, 5, 6])], np.c_[[1, 2, 3], [4, 5, 6]])
    same(jnp.c_[jnp.ones((2, 2)), jnp.zeros((2, 1))], np.c_[np.ones((2, 2)), np.zeros((2, 1))])
    same(jnp.c_[1:3, 4:6], np.c_[1:3, 4:6])
    assert jnp.r_[jnp.array([1.0]), 2].dtype == np.float32
    with pytest.raises(ValueError, match="directive"):
        jnp.r_["x", 1]


def test_place_and_multidimensional_histograms():
    np.testing.assert_array_equal(
        jnp.place(jnp.arange(6), jnp.arange(6) % 2 == 0, jnp.array([9, 8]), inplace=False),
        [9, 1, 8, 3, 9, 5])
    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    m = np.array([[True, False, True], [True, True, False]])
    want = a.copy()
    np.place(want, m, [-1.0, -2.0, -3.0])
    np.testing.assert_array_equal(pyree.jit(lambda a_, m_: jnp.place(
        a_, m_, jnp.array([-1.0, -2.0, -3.0]), inplace=False))(a, m), want)
    with pytest.raises(ValueError, match="in-place"):
        jnp.place(a, m, 1.0)

    rng = np.random.default_rng(0)
    x, y, w = (rng.random(50).astype(np.float32) for _ in range(3))
    sample = rng.random((40, 3)).astype(np.float32)
    rng_spec = [(0, 1), None, (0.2, 0.8)]

    @pyree.jit
    def histograms(x, y, w, sample):
        return (jnp.histogram2d(x, y, bins=(3, 4), weights=w),
                jnp.histogram2d(x, y, bins=[0, 0.3, 0.6, 1.0], density=True)[0],
                jnp.histogramdd(sample, bins=(2, 3, 2), range=rng_spec),
                jnp.histogramdd(sample, bins=3, density=True)[0])

    (h, xe, ye), dense2, (hdd, edges), dense_dd = histograms(x, y, w, sample)
    hn, xen, yen = np.histogram2d(x, y, bins=(3, 4), weights=w)
    np.testing.assert_allclose(h, hn, rtol=1e-5)
    np.testing.assert_allclose(xe, xen, rtol=1e-6)
    np.testing.assert_allclose(ye, yen, rtol=1e-6)
    np.testing.assert_allclose(dense2, np.histogram2d(x, y, bins=[0, 0.3, 0.6, 1.0],
                                                      density=True)[0], rtol=1e-5)
    hn, en = np.histogramdd(sample, bins=(2, 3, 2), range=rng_spec)
    np.testing.assert_array_equal(hdd, hn)
    for e, e_np in zip(edges, en):
        np.testing.assert_allclose(e, e_np, rtol=1e-6)
    np.testing.assert_allclose(dense_dd, np.histogramdd(sample, bins=3, density=True)[0],
                               rtol=1e-5)


def test_core_names():
    from pyree import core
    closed = pyree.make_jaxpr(lambda x, y: x * 2 + y)(3.0, jnp.ones(2))
    (out,) = core.eval_jaxpr(closed.jaxpr, closed.consts, 4.0, jnp.arange(2.0))
    np.testing.assert_array_equal(np.asarray(out), [8.0, 9.0])
    seen = []

    @pyree.jit
    def f(x):
        seen.append(isinstance(x, core.Tracer) and isinstance(x.aval, core.ShapedArray))
        return x

    f(1.0)
    assert seen == [True] and core.max_dim(3, 4) == 4 and core.min_dim(3, 4) == 3
    assert pyree.core is core
