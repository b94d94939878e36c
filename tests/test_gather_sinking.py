"""Gathers moved into the elementwise expression they read (gather_scatter.sink_gathers): the
expression is computed on the gathered elements only; values, out-of-bounds fills and
derivatives are as written."""
import re

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax, nn

pytestmark = pytest.mark.vulkan_subset

rng = np.random.RandomState(0)


def gathered_operands(f, *args) -> list:
    """The operands every gather of ``jit(f)``'s module reads."""
    text = pyree.jit(f).lower(*args).as_text()
    return re.findall(r'"stablehlo\.gather"\((%\w+)', text)


def cross_entropy(logits, labels):
    logp = nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, labels[:, None], axis=1).mean()


def test_cross_entropy_reads_the_logits_not_the_log_probabilities():
    logits = (3 * rng.randn(64, 50)).astype(np.float32)
    labels = rng.randint(0, 50, 64).astype(np.int32)
    x = logits.astype(np.float64)
    logp = x - x.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    want = -logp[np.arange(64), labels].mean()
    np.testing.assert_allclose(float(pyree.jit(cross_entropy)(logits, labels)), want, rtol=1e-5)
    assert gathered_operands(cross_entropy, logits, labels) == ["%arg0"]
    # The gradient: (softmax - one_hot) / n.
    grad = np.asarray(pyree.jit(pyree.grad(cross_entropy))(logits, labels))
    soft = np.exp(logp)
    soft[np.arange(64), labels] -= 1
    np.testing.assert_allclose(grad, soft / 64, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("fill_value", [None, -7.0])
def test_out_of_bounds_reads_the_fill_not_the_expression_of_it(fill_value):
    x = rng.randn(6, 40).astype(np.float32)
    idx = np.array([[0], [39], [40], [-41], [5], [1000]], np.int32)

    def f(x, idx):
        return jnp.take_along_axis(jnp.exp(x) + 1.0, idx, axis=1, mode="fill",
                                   fill_value=fill_value)
    got = np.asarray(pyree.jit(f)(x, idx))[:, 0]
    fill = np.nan if fill_value is None else fill_value
    rows = np.arange(6)
    want = np.where((idx[:, 0] >= -40) & (idx[:, 0] < 40),
                    np.exp(x[rows, idx[:, 0] % 40]) + 1, fill)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert gathered_operands(f, x, idx) == ["%arg0"]


def test_clip_mode_clamps_as_before():
    x = rng.randn(50, 3).astype(np.float32)
    idx = np.array([-5, 0, 49, 70], np.int32)

    def f(x, idx):
        return jnp.take(jnp.tanh(x) * 2.0, idx, axis=0, mode="clip")
    np.testing.assert_allclose(np.asarray(pyree.jit(f)(x, idx)),
                               np.tanh(x[np.clip(idx, 0, 49)]) * 2, rtol=1e-6)


def test_rows_of_an_expression_with_a_bias_and_a_scalar():
    x = rng.randn(100, 8).astype(np.float32)
    bias = rng.randn(8).astype(np.float32)
    idx = np.array([3, 97, 3, 0], np.int32)

    def f(x, bias, scale, idx):
        return (x * scale + bias)[idx]
    got = pyree.jit(f)(x, bias, np.float32(1.5), idx)
    np.testing.assert_allclose(np.asarray(got), (x * 1.5 + bias)[idx], rtol=1e-6)
    # The rows of x are gathered; the bias is read whole (it repeats along the rows).
    assert gathered_operands(f, x, bias, np.float32(1.5), idx) == ["%arg0"]


def test_columns_of_a_broadcast_along_the_selected_axis():
    x = rng.randn(4, 60).astype(np.float32)
    col = rng.randn(60).astype(np.float32)
    cols = np.array([59, 2, 30], np.int32)

    def f(x, col, cols):
        return jnp.sqrt(jnp.abs(x - col))[:, cols]
    np.testing.assert_allclose(np.asarray(pyree.jit(f)(x, col, cols)),
                               np.sqrt(np.abs(x - col))[:, cols], rtol=1e-6)


def test_pairs_of_indices_and_an_integer_expression():
    x = rng.randint(-100, 100, (30, 30)).astype(np.int32)
    rows, cols = np.array([0, 29, 7]), np.array([29, 0, 7])

    def f(x, rows, cols):
        return (x * 3 - 1)[rows, cols]
    np.testing.assert_array_equal(np.asarray(pyree.jit(f)(x, rows, cols)),
                                  (x * 3 - 1)[rows, cols])
    assert gathered_operands(f, x, rows, cols) == ["%arg0"]


def test_a_hand_written_log_softmax_read_twice_is_computed_again_where_gathered():
    # shifted = x - max feeds the sum of exponentials and the result: the gather (64 of 3200
    # elements, at most an eighth) computes it again at the labels, so the whole of it is only
    # the reduction's input (IREE fuses it there instead of writing it out).
    logits = (3 * rng.randn(64, 50)).astype(np.float32)
    labels = rng.randint(0, 50, 64).astype(np.int32)

    def loss(x, labels):
        shifted = x - x.max(axis=1, keepdims=True)
        logp = shifted - jnp.log(jnp.exp(shifted).sum(axis=1, keepdims=True))
        return -jnp.take_along_axis(logp, labels[:, None], axis=1).mean()
    x = logits.astype(np.float64)
    logp = x - x.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    np.testing.assert_allclose(float(pyree.jit(loss)(logits, labels)),
                               -logp[np.arange(64), labels].mean(), rtol=1e-5)
    assert gathered_operands(loss, logits, labels) == ["%arg0"]
    grad = np.asarray(pyree.jit(pyree.grad(loss))(logits, labels))
    soft = np.exp(logp)
    soft[np.arange(64), labels] -= 1
    np.testing.assert_allclose(grad, soft / 64, rtol=1e-4, atol=1e-7)


def test_an_expression_read_elsewhere_or_gathered_larger_is_kept():
    # Read elsewhere and gathered at more than an eighth of its elements (12 of 40), or
    # gathered larger than itself: the gathers read the expression.
    x = rng.randn(10, 4).astype(np.float32)
    idx = np.arange(40, dtype=np.int32) % 10

    def both(x):
        y = jnp.exp(x)
        return y[idx[:3]], y.sum()

    def larger(x):
        return jnp.exp(x)[idx]
    a, s = pyree.jit(both)(x)
    np.testing.assert_allclose(np.asarray(a), np.exp(x)[idx[:3]], rtol=1e-6)
    np.testing.assert_allclose(float(s), np.exp(x).sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(pyree.jit(larger)(x)), np.exp(x)[idx], rtol=1e-6)
    assert gathered_operands(larger, x) != ["%arg0"]
    assert gathered_operands(both, x) != ["%arg0"]


def test_in_a_scan_body_and_under_vmap():
    logits = rng.randn(5, 16, 20).astype(np.float32)
    labels = rng.randint(0, 20, (5, 16)).astype(np.int32)

    def total(logits, labels):
        return lax.scan(lambda c, xy: (c + cross_entropy(*xy), None), 0.0, (logits, labels))[0]

    x = logits.astype(np.float64)
    logp = x - np.log(np.exp(x).sum(-1, keepdims=True))
    per_batch = -np.take_along_axis(logp, labels[..., None], -1)[..., 0].mean(-1)
    np.testing.assert_allclose(float(pyree.jit(total)(logits, labels)), per_batch.sum(),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(pyree.jit(pyree.vmap(cross_entropy))(logits, labels)),
                               per_batch, rtol=1e-5)
