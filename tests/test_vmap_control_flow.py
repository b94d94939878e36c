"""vmap of control flow (cond/switch, while, scan, the loops of reverse-mode AD), of custom
derivatives and of effects (print, assert).

Each batched result is compared with the function applied to each example on its own (jitted
once, then called per example) or with NumPy. Examples that take different branches or run
different trip counts (batched predicates) are the interesting cases; in_axes vary over 0, 1
and None, eagerly and under jit.
"""
from __future__ import annotations

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax, nn, tree_util

# Run again on Vulkan (.ci/run: PYREE_PLATFORM=vulkan pytest -n 0 -m vulkan_subset).
pytestmark = pytest.mark.vulkan_subset


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def f32(*values):
    return np.array(values, np.float32)


def per_example(f, *args, in_axes=0):
    """``f`` applied to each example of ``args`` (mapped along ``in_axes``), stacked: what
    ``vmap(f, in_axes)(*args)`` must equal."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    g = pyree.jit(f)
    outs = [g(*[a if ax is None else np.take(a, b, axis=ax) for a, ax in zip(args, axes)])
            for b in range(size)]
    return tree_util.tree_map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *outs)


def check_vmap(f, *args, in_axes=0, rtol=1e-5, atol=1e-6):
    """vmap(f) eagerly and under jit against ``per_example``."""
    want = per_example(f, *args, in_axes=in_axes)
    for g in (pyree.vmap(f, in_axes=in_axes), pyree.jit(pyree.vmap(f, in_axes=in_axes))):
        tree_util.tree_map(lambda a, b: close(a, b, rtol, atol), g(*args), want)


# -- cond / switch -------------------------------------------------------------------------------

def sign_scale(x, y):
    if x.sum() > 0:
        out = x * y
    else:
        out = x - y
    return out


@pytest.mark.parametrize("in_axes", [(0, 0), (1, None), (None, 0)])
def test_python_if_per_example_and_shared_predicate(in_axes):
    # (None, 0): the predicate is shared by every example, only the operand is batched.
    x = {0: f32([1.0, 2.0], [-3.0, 1.0], [0.5, -4.0]),
         1: f32([1.0, -3.0, 0.5], [2.0, 1.0, -4.0]),  # 3 examples along axis 1
         None: f32(1.0, -2.0)}[in_axes[0]]
    y = f32([2.0, 3.0], [4.0, 5.0], [6.0, 7.0]) if in_axes[1] == 0 else f32(2.0, 3.0)
    check_vmap(sign_scale, x, y, in_axes=in_axes)


def test_lax_cond_branches_differ_in_batchedness():
    # One branch returns the unbatched constant, the other a batched value.
    def f(x, c):
        return lax.cond(x > 0, lambda x: (x * 2.0, c), lambda x: (c, c + 1.0), x)

    x = f32(1.0, -1.0, 3.0)
    check_vmap(f, x, np.float32(5.0), in_axes=(0, None))
    out = pyree.vmap(lambda c: f(np.float32(2.0), c))(f32(1.0, 2.0))  # shared predicate
    close(out[0], [4.0, 4.0])
    close(out[1], [1.0, 2.0])


def test_switch_per_example_index_is_clamped():
    branches = [lambda x: x + 1.0, lambda x: x * 10.0, lambda x: -x]
    f = lambda i, x: lax.switch(i, branches, x)
    i = np.array([-1, 0, 1, 2, 7], np.int32)
    x = f32(1.0, 2.0, 3.0, 4.0, 5.0)
    close(pyree.vmap(f)(i, x), [2.0, 3.0, 30.0, -4.0, -5.0])
    close(pyree.jit(pyree.vmap(f, in_axes=(0, None)))(i, np.float32(2.0)),
          [3.0, 3.0, 20.0, -2.0, -2.0])
    close(pyree.vmap(f, in_axes=(None, 0))(np.int32(1), x), x * 10.0)


def test_nested_vmap_of_cond():
    def f(x, y):
        return lax.cond(x > y, lambda: x - y, lambda: y * 2.0)

    x, y = f32(1.0, 5.0, 3.0), f32(2.0, 4.0)
    want = np.where(x[:, None] > y[None, :], x[:, None] - y[None, :], 2.0 * y[None, :])
    inner = pyree.vmap(f, in_axes=(None, 0))
    close(pyree.vmap(inner, in_axes=(0, None))(x, y), want)
    close(pyree.jit(pyree.vmap(pyree.vmap(f, in_axes=(0, None)), in_axes=(None, 0)))(x, y),
          want.T)


# -- while -----------------------------------------------------------------------------------------

def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-6 * a:
        x = 0.5 * (x + a / x)
    return x


A = f32(0.25, 2.0, 9.0, 1e4)  # different trip counts


def test_while_per_example_trip_counts():
    close(pyree.vmap(newton_sqrt)(A), np.sqrt(A))
    close(pyree.jit(pyree.vmap(newton_sqrt))(A), np.sqrt(A))


def test_while_loop_shared_predicate_batched_carry():
    # The trip count (i < n) is the same for every example; x and the constant s are batched
    # (along axes 1 and 0), n is not.
    def f(x, s, n):
        def body(c):
            i, v = c
            return i + 1, v * s + i
        return lax.while_loop(lambda c: c[0] < n, body, (0, x))[1]

    x = f32([1.0, 2.0], [3.0, 4.0], [5.0, 6.0])  # mapped along axis 1: 2 examples of 3
    s = f32(0.5, 2.0)
    check_vmap(f, x, s, np.int32(4), in_axes=(1, 0, None))
    # An unbatched initial carry that the batched constant makes batched (a fixed point).
    check_vmap(f, x[:, 0], s, np.int32(3), in_axes=(None, 0, None))


def test_while_loop_per_example_counts_and_extra_carries():
    # Collatz steps: the loop runs per example until its own value reaches 1; a carry that
    # starts unbatched (the count) becomes batched.
    def steps(n):
        def body(c):
            v, k = c
            return jnp.where(v % 2 == 0, v // 2, 3 * v + 1), k + 1
        return lax.while_loop(lambda c: c[0] != 1, body, (n, 0))

    n = np.array([1, 6, 7, 27], np.int32)
    v, k = pyree.jit(pyree.vmap(steps))(n)
    close(v, [1, 1, 1, 1])
    close(k, [0, 8, 16, 111])


def test_while_per_example_vector_carry_mapped_along_axis_1():
    def grow(v, limit):
        while v.sum() < limit:
            v = v * 2.0 + 1.0
        return v

    v = f32([0.5, 1.0, 8.0], [0.0, 2.0, 0.5])  # 3 examples of shape (2,) along axis 1
    check_vmap(grow, v, np.float32(10.0), in_axes=(1, None))


def test_fori_loop_with_per_example_bounds():
    def f(n, x):
        return lax.fori_loop(0, n, lambda i, acc: acc * x + i, 1.0)

    n = np.array([0, 1, 3, 5], np.int32)
    check_vmap(f, n, np.float32(1.5), in_axes=(0, None))


# -- scan ------------------------------------------------------------------------------------------

def test_scan_batched_xs_carry_and_consts():
    def f(c0, xs, w):
        def step(c, x):
            c = c * w + x
            return c, (c, x * 2.0)
        return lax.scan(step, c0, xs)

    c0 = f32(1.0, 2.0, 3.0)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)  # (scan length 4, batch 3)
    w = np.float32(0.5)
    check_vmap(f, c0, xs, w, in_axes=(0, 1, None))
    check_vmap(f, np.float32(1.0), xs.T, f32(0.5, 1.0, 2.0), in_axes=(None, 0, 0))


def test_scan_reverse_unbatched_carry_becomes_batched():
    def f(x):
        return lax.scan(lambda c, t: (c + t * x, c), 0.0, jnp.arange(3.0), reverse=True)

    x = f32(1.0, 2.0)
    carry, ys = pyree.vmap(f)(x)
    close(carry, 3.0 * x)
    close(ys, np.outer(x, [3.0, 2.0, 0.0]))


def test_python_for_loop_over_static_range():
    def f(x):
        acc = jnp.zeros_like(x)
        for i in range(4):
            if acc.sum() < 3.0:
                acc = acc + x * i
        return acc

    check_vmap(f, f32([0.1, 0.2], [1.0, 2.0], [0.5, -1.0]))


# -- gradients through data-dependent loops --------------------------------------------------------

def test_vmap_of_grad_through_newton_loop():
    # The gradient's while_count and counted loops get per-example trip counts.
    want = 0.5 / np.sqrt(A)
    close(pyree.vmap(pyree.grad(newton_sqrt))(A), want, rtol=1e-4)
    close(pyree.jit(pyree.vmap(pyree.grad(newton_sqrt)))(A), want, rtol=1e-4)
    close(per_example(pyree.grad(newton_sqrt), A), want, rtol=1e-4)


def test_vmap_of_grad_loop_with_shared_trip_count():
    def f(x, n):
        i = 0
        while i < n:
            x = jnp.sin(x) * 1.5
            i += 1
        return x

    x = f32(0.1, 0.5, 0.9)
    check_vmap(pyree.grad(f), x, np.int32(3), in_axes=(0, None), rtol=1e-4)
    n = np.array([0, 2, 4], np.int32)
    check_vmap(pyree.grad(f), x, n, rtol=1e-4)
    # Second order: counted loops with per-example bounds nested in one another.
    gg = pyree.grad(pyree.grad(f))
    close(pyree.jit(pyree.vmap(gg))(x, n), per_example(gg, x, n), rtol=1e-4)


def test_grad_of_vmap_over_newton_loop():
    g = pyree.grad(lambda a: jnp.sum(pyree.vmap(newton_sqrt)(a) * f32(1.0, 2.0, 3.0, 4.0)))
    close(pyree.jit(g)(A), f32(1.0, 2.0, 3.0, 4.0) * 0.5 / np.sqrt(A), rtol=1e-4)


# -- custom derivatives ----------------------------------------------------------------------------

@pyree.custom_jvp
def odd_sin(x):
    return jnp.sin(x)


@odd_sin.defjvp
def _odd_sin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return odd_sin(x), 3.0 * t * x  # deliberately not cos(x): shows the rule is used


@pyree.custom_vjp
def clip_gradient(x, lo):
    return x * 1.0


def _clip_fwd(x, lo):
    return x, lo


def _clip_bwd(lo, g):
    return jnp.clip(g, lo, -lo), None


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_vmap_of_custom_jvp_and_nn():
    x = f32(-1.0, 0.5, 2.0)
    close(pyree.vmap(odd_sin)(x), np.sin(x))
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    close(pyree.jit(pyree.vmap(nn.softmax, in_axes=1))(m), np.asarray(nn.softmax(m.T)))
    close(pyree.vmap(nn.relu)(x), np.maximum(x, 0))


def test_custom_jvp_rule_survives_vmap():
    x = f32(-1.0, 0.5, 2.0)
    # grad of vmap: the batched call differentiates with the vmapped rule.
    close(pyree.grad(lambda x: jnp.sum(pyree.vmap(odd_sin)(x)))(x), 3.0 * x)
    close(pyree.jit(pyree.vmap(pyree.grad(odd_sin)))(x), 3.0 * x)
    # A shared argument (in_axes None): its tangent is shared too.
    g = pyree.grad(lambda s: jnp.sum(pyree.vmap(lambda x: odd_sin(x * s))(x)))(np.float32(2.0))
    close(g, np.sum(3.0 * (2.0 * x) * x))
    # A rule with a non-differentiated argument (softmax's axes), batched along axis 1.
    m = np.arange(6, dtype=np.float32).reshape(2, 3) / 4.0
    w = f32([1.0, -2.0], [0.5, 3.0], [2.0, 1.0])
    g = pyree.grad(lambda m: jnp.sum(pyree.vmap(nn.softmax, in_axes=1)(m) * w))(m)
    close(g, pyree.grad(lambda m: jnp.sum(nn.softmax(m, axis=0).T * w))(m))


def test_custom_vjp_rule_survives_vmap():
    x, lo = f32(0.5, -2.0, 3.0), np.float32(-1.0)
    scale = f32(0.5, 4.0, -3.0)
    loss = lambda x: jnp.sum(pyree.vmap(clip_gradient, in_axes=(0, None))(x, lo) * scale)
    close(pyree.grad(loss)(x), np.clip(scale, -1.0, 1.0))
    close(pyree.jit(pyree.grad(loss))(x), np.clip(scale, -1.0, 1.0))
    per = pyree.vmap(pyree.grad(lambda x, s: clip_gradient(x, lo) * s))(x, scale)
    close(per, np.clip(scale, -1.0, 1.0))


def test_custom_lin_batches_with_the_vectorized_bwd():
    # The linear part of a custom_vjp call (residuals, tangents) -> tangents, batched, then
    # transposed: its cotangents come from the vmapped bwd. (Public transformations transpose
    # custom_lin before any vmap sees it, so this is checked on the IR.)
    from pyree.transpiler.interpreters import ad, batching
    from pyree.transpiler.families import custom_derivatives as cd
    from pyree.transpiler.core.trace import eval_ir, trace_region
    from pyree.transpiler.core.ir import ClosedIR, ShapedArray
    scalar = ShapedArray((), np.dtype(np.float32))
    info = cd.CallInfo((_clip_bwd, tree_util.tree_structure(0.0)),
                       tree_util.tree_structure((0.0, 0.0)), tree_util.tree_structure(0.0), 1, ())
    lin, _ = trace_region(
        lambda lo, tx, tlo: cd.custom_lin_p.bind(lo, tx, tlo, info=info, out_avals=(scalar,)),
        [scalar] * 3)
    batched, dims = batching.batch_region(lin, [None, 0, None], batching.BatchAxis(3), [0])
    transposed = ad.transpose_ir(batched, [False, True, True])
    ct_x, ct_lo = eval_ir(ClosedIR(transposed, []), np.float32(-1.0), f32(0.5, 4.0, -3.0))
    close(ct_x, [0.5, 1.0, -1.0])
    close(ct_lo, [0.0, 0.0, 0.0])


# -- effects ---------------------------------------------------------------------------------------

def test_print_shows_the_batch(capsys):
    def f(x):
        print("x =", x)
        return x * 2.0

    out = pyree.jit(pyree.vmap(f))(f32(1.0, 2.0))
    pyree.block_until_ready(out)
    close(out, [2.0, 4.0])
    assert capsys.readouterr().out == "x = [1. 2.]\n"


def test_assert_must_hold_for_every_example():
    def f(x):
        assert x > 0, "x must be positive"
        return jnp.sqrt(x)

    g = pyree.jit(pyree.vmap(f))
    close(g(f32(1.0, 4.0)), [1.0, 2.0])
    with pytest.raises(AssertionError, match="x must be positive"):
        pyree.block_until_ready(g(f32(1.0, -4.0)))


def test_effects_under_a_batched_predicate_are_refused():
    def f(x):
        if x > 0:
            print("positive", x)
            x = x * 2.0
        return x

    def g(x):
        while x < 10.0:
            print("x", x)
            x = x * 2.0
        return x

    for fun in (f, g):
        with pytest.raises(NotImplementedError, match="batched predicate"):
            pyree.vmap(fun)(f32(1.0, -1.0))
