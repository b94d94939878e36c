"""vmap composed with jit, grad and itself; collectives over named axes; Jacobians built on vmap."""
from __future__ import annotations

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=rtol, atol=atol)


RNG = np.random.RandomState(0)
XS = RNG.randn(5, 3).astype(np.float32)
W = RNG.randn(3, 4).astype(np.float32)


def loss(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)


def loss_grad_numpy(w, x):
    h = np.tanh(x @ w)
    return np.outer(x, 2 * h * (1 - h * h))


def test_per_example_gradients():
    want = np.stack([loss_grad_numpy(W, x) for x in XS])
    per_example = pyree.vmap(pyree.grad(loss), in_axes=(None, 0))
    close(per_example(W, XS), want)
    close(pyree.jit(per_example)(W, XS), want)
    # vmap of a jitted gradient compiles the batched program.
    close(pyree.vmap(pyree.jit(pyree.grad(loss)), in_axes=(None, 0))(W, XS), want)


def test_grad_of_a_function_containing_vmap():
    def total(w):
        return jnp.sum(pyree.vmap(loss, in_axes=(None, 0))(w, XS))

    want = sum(loss_grad_numpy(W, x) for x in XS)
    close(pyree.grad(total)(W), want, rtol=1e-4)
    close(pyree.jit(pyree.grad(total))(W), want, rtol=1e-4)


def test_vmap_of_jvp_and_of_vjp():
    tangents = RNG.randn(5, 3).astype(np.float32)
    f = lambda x: jnp.sin(x) * x
    got = pyree.vmap(lambda x, t: pyree.jvp(f, (x,), (t,))[1])(XS, tangents)
    close(got, (np.cos(XS) * XS + np.sin(XS)) * tangents)
    got = pyree.vmap(lambda x, c: pyree.vjp(f, x)[1](c)[0])(XS, tangents)
    close(got, (np.cos(XS) * XS + np.sin(XS)) * tangents)


def test_nested_vmap_in_different_axes():
    m = RNG.randn(4, 5, 3).astype(np.float32)
    f = lambda a, b: jnp.dot(a, b)  # (3,) . (3,)
    v = RNG.randn(3, 5).astype(np.float32)
    # Outer over m's axis 0 and nothing of v; inner over m's axis 0 (was 1) and v's axis 1.
    got = pyree.vmap(pyree.vmap(f, in_axes=(0, 1)), in_axes=(0, None))(m, v)
    want = np.einsum("abk,kb->ab", m, v)
    close(got, want)
    got = pyree.jit(pyree.vmap(pyree.vmap(f, in_axes=(0, 1), out_axes=0),
                               in_axes=(0, None), out_axes=1))(m, v)
    close(got, want.T)


def test_jacobians_and_hessian_are_batched_programs():
    x = np.array([0.3, -0.8, 1.1], np.float32)
    f = lambda x: jnp.sin(x) * jnp.sum(x ** 2)
    s = np.sum(x ** 2)
    want = np.diag(np.cos(x) * s) + np.outer(np.sin(x), 2 * x)
    close(pyree.jacfwd(f)(x), want)
    close(pyree.jacrev(f)(x), want)
    close(pyree.jit(pyree.jacrev(f))(x), want)
    g = lambda x: jnp.sum(x ** 3) * x[0]
    h = np.diag(6 * x * x[0])
    h[0, :] += 3 * x ** 2
    h[:, 0] += 3 * x ** 2
    close(pyree.hessian(g)(x), h, rtol=1e-4)
    # A vmap over per-example Hessians.
    xs = np.stack([x, 2 * x])
    close(pyree.vmap(pyree.hessian(lambda v: jnp.sum(v ** 3)))(xs),
          np.stack([np.diag(6 * v) for v in xs]), rtol=1e-4)


def test_psum_and_pmean_over_a_named_axis():
    v = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    close(pyree.vmap(lambda a: a / lax.psum(a, "i"), axis_name="i")(v), v / v.sum())
    close(pyree.vmap(lambda a: a - lax.pmean(a, "i"), axis_name="i")(v), v - v.mean())
    close(pyree.vmap(lambda a: lax.pmax(a, "i") - lax.pmin(a, "i"), axis_name="i")(v),
          np.full(4, 3.0))
    # Unbatched values summed over the axis: size times the value.
    close(pyree.vmap(lambda a: lax.psum(1.0, "i") + 0 * a, axis_name="i")(v), np.full(4, 4.0))
    close(pyree.jit(pyree.vmap(lambda a: a / lax.psum(a, "i"), axis_name="i"))(v), v / v.sum())


def test_collectives_name_the_right_axis_in_nested_vmaps():
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    rows = pyree.vmap(pyree.vmap(lambda a: lax.psum(a, "cols"), axis_name="cols"),
                      axis_name="rows")(m)
    close(rows, np.repeat(m.sum(1, keepdims=True), 3, axis=1))
    cols = pyree.vmap(pyree.vmap(lambda a: lax.psum(a, "rows"), axis_name="cols"),
                      axis_name="rows")(m)
    close(cols, np.repeat(m.sum(0, keepdims=True), 2, axis=0))
    both = pyree.vmap(pyree.vmap(lambda a: lax.psum(a, ("rows", "cols")), axis_name="cols"),
                      axis_name="rows")(m)
    close(both, np.full((2, 3), m.sum()))


def test_gradient_through_psum():
    x = np.array([0.5, 1.0, 2.0], np.float32)

    def f(x):
        return jnp.sum(pyree.vmap(lambda v: v * lax.psum(v, "i"), axis_name="i")(x))

    close(pyree.grad(f)(x), np.full(3, 2 * x.sum()))  # d/dx_k (sum x)^2


def test_unbound_axis_name_is_a_clear_error():
    with pytest.raises(NameError, match="unbound axis name: 'j'"):
        pyree.vmap(lambda a: lax.psum(a, "j"), axis_name="i")(np.ones(3, np.float32))
    with pytest.raises(NameError, match="unbound axis name"):
        lax.psum(np.ones(3, np.float32), "i")


def test_collective_inside_a_region_of_unbatched_operands():
    # The cond's operands are shared by every example, but the psum inside names the axis.
    f = lambda x, c: x + lax.cond(c > 0, lambda c: lax.psum(c, "i"), lambda c: c, c)
    close(pyree.vmap(f, in_axes=(0, None), axis_name="i")(jnp.ones(3), 2.0), np.full(3, 7.0))
