"""A scan step's products that read no carry run for all steps before the loop
(transpiler/families/loop_hoisting.py): same values as the loop computing them step by step,
forwards and in reverse, with per-step values the loop's outputs return directly, with values the
same at every step, under grad and vmap; and nothing is hoisted where it would not gain."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree.transpiler.families import control_flow, loop_hoisting
from pyree.transpiler.backend.lower import lower_closed_ir

RNG = np.random.RandomState(7)
N = 64   # 64 x 64 matrix-vector products: loop_hoisting.HOIST_MIN_MACS multiply-adds
W_X = (RNG.randn(N, N) / 8).astype(np.float32)
W_H = (RNG.randn(N, N) / 8).astype(np.float32)
B = RNG.randn(N).astype(np.float32)
XS = RNG.randn(9, N).astype(np.float32)


def rnn(w_x, w_h, xs, reverse=False):
    def step(h, x):
        shifted = w_x + jnp.full((N, N), 0.01, np.float32)   # the same at every step
        projected = x @ shifted + B        # reads no carry: hoisted, shifted computed once
        scale = jnp.sum(w_h) * 0.1         # carry-free but no product reads it: stays
        h = jnp.tanh(projected + h @ w_h + shifted[0]) * (1.0 + scale)
        return h, (h, projected * 2.0)     # reads a hoisted value per step
    return lax.scan(step, jnp.zeros(N, np.float32), xs, reverse=reverse)


def rnn_numpy(w_x, w_h, xs, reverse=False):
    h = np.zeros(N)
    hs, projected = np.zeros((len(xs), N)), np.zeros((len(xs), N))
    scale = 1.0 + np.sum(w_h.astype(np.float64)) * 0.1
    for i in (range(len(xs) - 1, -1, -1) if reverse else range(len(xs))):
        p = xs[i].astype(np.float64) @ (w_x + 0.01) + B
        h = np.tanh(p + h @ w_h + (w_x[0] + 0.01)) * scale
        hs[i], projected[i] = h, 2 * p
    return h, (hs, projected)


@pytest.fixture
def without_hoisting():
    saved = list(control_flow.scan_body_rewrites)
    control_flow.scan_body_rewrites.clear()
    yield
    control_flow.scan_body_rewrites[:] = saved


def test_hoisted_product_runs_before_the_loop():
    text = lower_closed_ir(pyree.make_ir(rnn)(W_X, W_H, XS)).text_without_locations
    before_loop = text.split("scf.for")[0]
    assert "stablehlo.dot_general" in before_loop   # xs @ w_x, once for all steps
    before, body, n_invariant = _hoist(pyree.make_ir(rnn)(W_X, W_H, XS))
    assert n_invariant == 1                                    # shifted, for shifted[0]
    assert [o.aval.shape for o in before.outs] == [(N, N), (9, 1, N)]  # x @ shifted, each step
    assert sum(e.primitive.name == "dot_general" for e in body.eqns) == 1   # h @ w_h


def _hoist(closed):
    """hoist_per_step_work applied to the (one) scan of ``closed``."""
    (eqn,) = [e for e in closed.ir.eqns if e.primitive.name == "scan"]
    p = eqn.params
    return loop_hoisting.hoist_per_step_work(p["body"], p["num_consts"], p["num_carry"],
                                             p["length"])


@pytest.mark.parametrize("reverse", [False, True])
def test_values_forwards_and_in_reverse(reverse):
    want = rnn_numpy(W_X, W_H, XS, reverse)
    for run in (pyree.jit(rnn, static_argnums=3), rnn):
        got = run(W_X, W_H, XS, reverse)
        for g, w in zip(pyree.tree_util.tree_leaves(got), pyree.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), w, rtol=2e-5, atol=2e-5)


def test_gradient_and_vmap_agree_with_the_loop_unhoisted(request):
    loss = lambda w_x, w_h, xs: jnp.sum(rnn(w_x, w_h, xs)[1][0] ** 2)  # noqa: E731
    grad = pyree.jit(pyree.grad(loss, argnums=(0, 1)))
    batched = pyree.jit(pyree.vmap(lambda xs: rnn(W_X, W_H, xs)[0]))
    xs3 = np.stack([XS, XS[::-1], XS * 0.5])
    hoisted = grad(W_X, W_H, XS), batched(xs3)
    request.getfixturevalue("without_hoisting")
    grad0 = pyree.jit(pyree.grad(loss, argnums=(0, 1)))
    batched0 = pyree.jit(pyree.vmap(lambda xs: rnn(W_X, W_H, xs)[0]))
    plain = grad0(W_X, W_H, XS), batched0(xs3)
    for g, w in zip(pyree.tree_util.tree_leaves(hoisted), pyree.tree_util.tree_leaves(plain)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_nothing_hoisted_without_a_large_carry_free_product():
    # Elementwise work alone, a product that reads the carry, or a small product (a dot of
    # two short vectors, as in an HMC step) stays in the loop.
    elementwise = pyree.make_ir(lambda xs: lax.scan(
        lambda c, x: (c + jnp.sin(x), c), jnp.zeros(N, np.float32), xs))(XS)
    carried = pyree.make_ir(lambda xs: lax.scan(
        lambda c, x: (jnp.tanh(c @ W_H) + x, c), jnp.zeros(N, np.float32), xs))(XS)
    small = pyree.make_ir(lambda xs: lax.scan(
        lambda c, x: (c + jnp.dot(x[:2], x[:2]), c), jnp.zeros((), np.float32), xs))(XS)
    assert _hoist(elementwise) is None and _hoist(carried) is None and _hoist(small) is None
