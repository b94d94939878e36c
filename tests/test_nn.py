"""``pyree.nn`` against NumPy and closed forms: values (float32, and float64 with x64 on),
derivatives (finite differences to second order, and closed forms: the gradient of logsumexp
is the softmax, the softmax Jacobian is diag(y) - y y^T), JAX's conventions at kinks (relu'(0)
= 0), stability for large inputs, and the absence of NaN gradients from masked branches.

Reference values come from NumPy in float64 (and ``math.erf``), never from JAX.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import config, nn
from pyree.test_util import check_grads


@pytest.fixture(params=["float32", "float64"])
def dtype(request):
    """Each test runs in float32 and, with x64 enabled, in float64."""
    saved = config.enable_x64
    if request.param == "float64":
        config.update("enable_x64", True)
    yield np.dtype(request.param)
    config.update("enable_x64", saved)


def rtol_for(dtype) -> float:
    return 2e-6 if np.dtype(dtype) == np.float32 else 1e-13


# -- NumPy references (float64), written from the definitions ------------------------------------

def np_sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0.0)


def np_gelu_exact(x):
    return x * 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def np_gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0)))


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

# name -> (pyree function, NumPy reference)
ELEMENTWISE = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0.0)),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0.0, 6.0)),
    "sigmoid": (nn.sigmoid, np_sigmoid),
    "log_sigmoid": (nn.log_sigmoid, lambda x: -np_softplus(-x)),
    "softplus": (nn.softplus, np_softplus),
    "silu": (nn.silu, lambda x: x * np_sigmoid(x)),
    "swish": (nn.swish, lambda x: x * np_sigmoid(x)),
    "gelu_tanh": (nn.gelu, np_gelu_tanh),
    "gelu_exact": (lambda x: nn.gelu(x, approximate=False), np_gelu_exact),
    "elu": (nn.elu, np_elu),
    "elu_alpha": (lambda x: nn.elu(x, alpha=0.5), lambda x: np_elu(x, 0.5)),
    "celu": (lambda x: nn.celu(x, alpha=2.0),
             lambda x: np.maximum(x, 0.0) + 2.0 * np.expm1(np.minimum(x, 0.0) / 2.0)),
    "selu": (nn.selu, lambda x: SELU_SCALE * np_elu(x, SELU_ALPHA)),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x)),
    "leaky_relu_0.2": (lambda x: nn.leaky_relu(x, negative_slope=0.2),
                       lambda x: np.where(x >= 0, x, 0.2 * x)),
    "tanh": (nn.tanh, np.tanh),
    "mish": (nn.mish, lambda x: x * np.tanh(np_softplus(x))),
    "soft_sign": (nn.soft_sign, lambda x: x / (np.abs(x) + 1.0)),
    "squareplus": (nn.squareplus, lambda x: (x + np.sqrt(x * x + 4.0)) / 2.0),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1.0, 1.0)),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3.0, 0.0, 6.0) / 6.0),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0),
    "sparse_plus": (nn.sparse_plus,
                    lambda x: np.where(x <= -1, 0.0, np.where(x >= 1, x, (x + 1) ** 2 / 4))),
}

# Inputs spanning every branch (kinks at 0, +-1, 6, -3, 3 included), plus large magnitudes.
POINTS = np.array([-30.0, -7.0, -3.0, -1.5, -1.0, -0.3, 0.0, 0.2, 1.0, 2.5, 3.0, 6.0, 8.0,
                   30.0])


# Formulas that cancel for very negative x (JAX uses the same ones): gelu's 1 + erf(x/sqrt 2)
# and 1 + tanh(...) at x = -3 or -7.
# name -> (float32 tolerance, float64 tolerance)
CANCELLING = {"gelu_exact": (1e-4, 1e-11), "gelu_tanh": (1e-4, 1e-11)}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_values(name, dtype):
    fn, ref = ELEMENTWISE[name]
    x = POINTS.astype(dtype)
    want = ref(POINTS.astype(np.float64))
    eager = fn(jnp.asarray(x))
    jitted = pyree.jit(fn)(x)
    for got in (eager, jitted):
        assert got.dtype == dtype
        # A few ulps, relative to the larger of |y| and 1e-3 (for the float32 approximations of
        # the transcendental functions).
        tol = max(8 * np.finfo(dtype).eps, rtol_for(dtype))
        if name in CANCELLING:
            tol = CANCELLING[name][dtype == np.float64]
        err = np.abs(np.asarray(got, np.float64) - want) / np.maximum(np.abs(want), 1e-3)
        assert np.all(err <= tol), (name, got, want, err)


def test_tiny_results_keep_relative_precision(dtype):
    # log1p and expm1 near 0: log(1 + x) or exp(x) - 1 would lose every digit here.
    x = np.array([-30.0, -1e-10, 1e-10, 30.0], dtype)
    cases = {
        "softplus": (nn.softplus(x[:1]), np_softplus(np.float64(-30.0))),
        "log_sigmoid": (nn.log_sigmoid(x[3:]), -np_softplus(np.float64(-30.0))),
        "elu": (nn.elu(x[1:2]), np.expm1(-1e-10)),
        "gelu_tanh": (nn.gelu(x[2:3]), np_gelu_tanh(np.float64(1e-10))),
        "tanh": (nn.tanh(x[2:3]), 1e-10),
    }
    for name, (got, want) in cases.items():
        got = float(np.asarray(got)[0])
        assert abs(got - want) <= 4 * np.finfo(dtype).eps * abs(want), (name, got, want)


def test_integer_inputs_become_float():
    x = jnp.array([-2, 0, 3])
    np.testing.assert_allclose(np.asarray(nn.sigmoid(x)), np_sigmoid(np.array([-2.0, 0, 3])),
                               rtol=1e-6)
    assert nn.gelu(x).dtype == np.float32
    assert nn.elu(x).dtype == np.float32
    assert nn.softmax(x).dtype == np.float32
    np.testing.assert_array_equal(np.asarray(nn.relu(x)), [0, 0, 3])


# -- derivatives ---------------------------------------------------------------------------------

# Smooth points only (finite differences straddling a kink mean nothing).
SMOOTH = np.array([-2.3, -0.7, 0.4, 1.6, 3.7], np.float32)

GRAD_FUNCTIONS = {
    "relu": nn.relu, "relu6": nn.relu6, "sigmoid": nn.sigmoid, "log_sigmoid": nn.log_sigmoid,
    "softplus": nn.softplus, "silu": nn.silu, "gelu_tanh": nn.gelu,
    "gelu_exact": lambda x: nn.gelu(x, approximate=False), "elu": nn.elu,
    "celu": nn.celu, "selu": nn.selu, "leaky_relu": nn.leaky_relu, "mish": nn.mish,
    "soft_sign": nn.soft_sign, "squareplus": nn.squareplus, "hard_tanh": nn.hard_tanh,
    "hard_silu": nn.hard_silu,
}


@pytest.mark.parametrize("name", sorted(GRAD_FUNCTIONS))
def test_elementwise_grads(name):
    check_grads(GRAD_FUNCTIONS[name], (SMOOTH,), order=2)


def test_elementwise_grads_float64(x64):
    x = SMOOTH.astype(np.float64)
    for fn in (nn.gelu, nn.softplus, nn.elu, nn.log_sigmoid):
        check_grads(fn, (x,), order=2)


def grad_at(fn, points, dtype=np.float32):
    return np.asarray(pyree.grad(lambda x: jnp.sum(fn(x)))(np.asarray(points, dtype)))


def test_derivatives_closed_forms():
    x = np.array([-4.0, -1.0, -0.25, 0.5, 2.0, 5.0], np.float32)
    x64_ = x.astype(np.float64)
    s = np_sigmoid(x64_)
    np.testing.assert_allclose(grad_at(nn.sigmoid, x), s * (1 - s), rtol=1e-5)
    np.testing.assert_allclose(grad_at(nn.softplus, x), s, rtol=1e-5)
    np.testing.assert_allclose(grad_at(nn.log_sigmoid, x), 1 - s, rtol=1e-5)
    np.testing.assert_allclose(grad_at(nn.silu, x), s * (1 + x64_ * (1 - s)), rtol=1e-5)
    np.testing.assert_allclose(grad_at(nn.elu, x), np.where(x64_ > 0, 1.0, np.exp(x64_)),
                               rtol=1e-5)
    pdf = np.exp(-x64_ ** 2 / 2) / math.sqrt(2 * math.pi)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x64_ / math.sqrt(2)))
    np.testing.assert_allclose(grad_at(lambda v: nn.gelu(v, approximate=False), x),
                               cdf + x64_ * pdf, rtol=1e-5, atol=1e-6)


def test_derivatives_at_kinks_follow_jax():
    # relu'(0) = 0; relu6' is 0 at both ends; leaky_relu'(0) = 1; hard_tanh' is 1 at +-1
    # (its where() picks x there).
    np.testing.assert_array_equal(grad_at(nn.relu, [-1.0, 0.0, 1.0]), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(grad_at(nn.relu6, [0.0, 3.0, 6.0, 7.0]), [0.0, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(grad_at(nn.leaky_relu, [-1.0, 0.0, 1.0]), [0.01, 1.0, 1.0])
    np.testing.assert_array_equal(grad_at(nn.hard_tanh, [-1.5, -1.0, 0.0, 1.0, 2.0]),
                                  [0.0, 1.0, 1.0, 1.0, 0.0])
    np.testing.assert_array_equal(grad_at(nn.elu, [0.0]), [1.0])
    # Under jit and in forward mode too.
    g = pyree.jit(pyree.grad(lambda x: jnp.sum(nn.relu(x))))(np.zeros(3, np.float32))
    np.testing.assert_array_equal(np.asarray(g), 0.0)
    _, t = pyree.jvp(nn.relu, (np.zeros(2, np.float32),), (np.ones(2, np.float32),))
    np.testing.assert_array_equal(np.asarray(t), 0.0)


def test_softplus_derivatives_at_zero():
    # sigmoid(0) = 1/2, sigmoid'(0) = 1/4: exact through the kinks of max and abs.
    d1 = pyree.grad(lambda x: nn.softplus(x))
    d2 = pyree.grad(d1)
    assert float(d1(0.0)) == 0.5
    assert float(d2(0.0)) == 0.25


def test_no_nan_gradients_from_masked_branches():
    big = np.array([-200.0, -1.0, 0.0, 100.0, 200.0], np.float32)
    for fn in (nn.elu, nn.selu, nn.celu, nn.softplus, nn.log_sigmoid, nn.sigmoid, nn.silu,
               nn.gelu, nn.mish):
        g = grad_at(fn, big)
        assert np.all(np.isfinite(g)), (fn, g)
    np.testing.assert_array_equal(grad_at(nn.elu, big)[3:], 1.0)
    # The double-where idiom with nn functions inside: the masked branch's derivative (of a
    # log at 0) must not turn the gradient into NaN.
    def safe(x):
        positive = x > 0
        safe_x = jnp.where(positive, x, 1.0)
        return jnp.where(positive, jnp.log(nn.softplus(safe_x) - nn.softplus(0.0)), 0.0)

    g = grad_at(safe, [0.0, 1.0, -2.0])
    assert np.all(np.isfinite(g))
    want = np_sigmoid(1.0) / (np_softplus(1.0) - np_softplus(0.0))
    np.testing.assert_allclose(g, [0.0, want, 0.0], rtol=1e-5)


# -- softmax, log_softmax, logsumexp -------------------------------------------------------------

def np_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def np_logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


LOGITS = np.random.RandomState(0).randn(3, 5) * 3


@pytest.mark.parametrize("axis", [-1, 0, (0, 1), None])
def test_softmax_values(axis, dtype):
    x = LOGITS.astype(dtype)
    want_axis = axis if axis is not None else (0, 1)
    for fn in (nn.softmax, pyree.jit(nn.softmax, static_argnums=1)):
        got = fn(x, axis)
        assert got.dtype == dtype
        np.testing.assert_allclose(np.asarray(got), np_softmax(LOGITS, want_axis),
                                   rtol=10 * rtol_for(dtype), atol=1e-7)
        np.testing.assert_allclose(np.sum(np.asarray(got, np.float64), axis=want_axis), 1.0,
                                   rtol=1e-5)
        got = nn.log_softmax(x, axis=axis)
        np.testing.assert_allclose(np.asarray(got), np.log(np_softmax(LOGITS, want_axis)),
                                   rtol=10 * rtol_for(dtype), atol=1e-6)


@pytest.mark.parametrize("axis, keepdims", [(None, False), (-1, False), (0, True), ((0, 1), True)])
def test_logsumexp_values(axis, keepdims, dtype):
    x = LOGITS.astype(dtype)
    got = nn.logsumexp(x, axis=axis, keepdims=keepdims)
    want = np_logsumexp(LOGITS, axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(want) and got.dtype == dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=10 * rtol_for(dtype))


def test_large_inputs_are_stable(dtype):
    x = np.array([1000.0, 1000.0], dtype)
    assert float(nn.logsumexp(x)) == float(np.asarray(dtype.type(1000.0) + dtype.type(np.log(2))))
    np.testing.assert_array_equal(np.asarray(nn.softmax(x)), [0.5, 0.5])
    np.testing.assert_allclose(np.asarray(nn.log_softmax(x)), [-np.log(2)] * 2,
                               rtol=rtol_for(dtype))
    y = np.array([-1000.0, 0.0, 1000.0], dtype)
    np.testing.assert_array_equal(np.asarray(nn.softmax(y)), [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(np.asarray(nn.log_softmax(y)), [-2000.0, -1000.0, 0.0])
    assert float(nn.logsumexp(-y)) == 1000.0
    g = pyree.grad(lambda v: nn.logsumexp(v))(x)
    np.testing.assert_array_equal(np.asarray(g), [0.5, 0.5])
    # Infinities: -inf entries drop out; all -inf gives -inf; +inf gives +inf.
    assert float(nn.logsumexp(np.array([-np.inf, 0.0], dtype))) == 0.0
    assert float(nn.logsumexp(np.array([-np.inf, -np.inf], dtype))) == -np.inf
    assert float(nn.logsumexp(np.array([np.inf, 0.0], dtype))) == np.inf
    np.testing.assert_array_equal(np.asarray(nn.softmax(np.array([-np.inf, 0.0], dtype))),
                                  [0.0, 1.0])


def test_logsumexp_with_weights_and_sign():
    a = np.array([0.0, 1.0, 2.0], np.float32)
    b = np.array([2.0, 0.0, 0.5], np.float32)
    want = np.log(2.0 + 0.5 * np.exp(2.0))
    np.testing.assert_allclose(float(nn.logsumexp(a, b=b)), want, rtol=1e-6)
    # A weight of 0 removes its term even when exp of it would overflow.
    a_big = np.array([0.0, 1e4], np.float32)
    assert float(nn.logsumexp(a_big, b=np.array([1.0, 0.0], np.float32))) == 0.0
    # Negative sums: NaN, unless the sign is asked for.
    neg = np.array([-2.0, 1.0], np.float32)
    assert np.isnan(float(nn.logsumexp(np.zeros(2, np.float32), b=neg)))
    value, sign = nn.logsumexp(np.zeros(2, np.float32), b=neg, return_sign=True)
    assert float(value) == 0.0 and float(sign) == -1.0
    value, sign = nn.logsumexp(LOGITS.astype(np.float32), axis=1, return_sign=True)
    np.testing.assert_array_equal(np.asarray(sign), 1.0)
    # Broadcasting weights; gradient with respect to both a and b.
    b2 = np.array([1.0, 2.0, 3.0, 4.0, 5.0], np.float32)
    got = nn.logsumexp(LOGITS.astype(np.float32), axis=1, b=b2)
    np.testing.assert_allclose(np.asarray(got), np.log(np.sum(b2 * np.exp(LOGITS), axis=1)),
                               rtol=1e-5)
    check_grads(lambda a, b: nn.logsumexp(a, axis=1, b=b),
                (LOGITS.astype(np.float32), b2), order=2)


def test_where_masks():
    x = np.array([[1.0, 2.0, np.inf, 3.0], [0.5, np.nan, -1.0, 2.0]], np.float32)
    mask = np.array([[True, True, False, True], [True, False, True, True]])
    clean = np.where(mask, x, -np.inf).astype(np.float64)
    e = np.where(mask, np.exp(clean - np.max(clean, axis=1, keepdims=True)), 0.0)
    want_softmax = e / e.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(nn.softmax(x, where=mask)), want_softmax, rtol=1e-6)
    lse = np.log(np.sum(np.exp(clean), axis=1))
    np.testing.assert_allclose(np.asarray(nn.logsumexp(x, axis=1, where=mask)), lse, rtol=1e-6)
    got = np.asarray(nn.log_softmax(x, where=mask))
    np.testing.assert_allclose(got[mask], (clean - lse[:, None])[mask], rtol=1e-6)
    assert np.all(got[~mask] == -np.inf)
    # Gradients are finite, 0 at the masked entries (which hold inf and NaN), and equal to the
    # softmax elsewhere.
    for fn in (lambda v: jnp.sum(nn.logsumexp(v, axis=1, where=mask)),
               lambda v: jnp.sum(jnp.where(mask, nn.log_softmax(v, where=mask), 0.0)
                                 * np.arange(4.0, dtype=np.float32)),
               lambda v: jnp.sum(nn.softmax(v, where=mask) * np.arange(4.0, dtype=np.float32))):
        g = np.asarray(pyree.grad(fn)(x))
        assert np.all(np.isfinite(g)), g
        assert np.all(g[~mask] == 0.0)
    g = np.asarray(pyree.grad(lambda v: jnp.sum(nn.logsumexp(v, axis=1, where=mask)))(x))
    np.testing.assert_allclose(g, want_softmax, rtol=1e-6)


def test_logsumexp_gradient_is_softmax(dtype):
    x = LOGITS.astype(dtype)
    g = pyree.grad(lambda v: jnp.sum(nn.logsumexp(v, axis=1)))(x)
    np.testing.assert_allclose(np.asarray(g), np_softmax(LOGITS, 1), rtol=10 * rtol_for(dtype))
    g = pyree.jit(pyree.grad(lambda v: nn.logsumexp(v)))(x)
    np.testing.assert_allclose(np.asarray(g), np_softmax(LOGITS.ravel()).reshape(3, 5),
                               rtol=10 * rtol_for(dtype))
    # Its Hessian is the softmax Jacobian diag(p) - p p^T.
    v = LOGITS[0].astype(dtype)
    p = np_softmax(LOGITS[0])
    hess = pyree.hessian(lambda v: nn.logsumexp(v))(v)
    np.testing.assert_allclose(np.asarray(hess), np.diag(p) - np.outer(p, p),
                               rtol=10 * rtol_for(dtype), atol=10 * rtol_for(dtype))


def test_softmax_jacobian(dtype):
    v = LOGITS[1].astype(dtype)
    p = np_softmax(LOGITS[1])
    want = np.diag(p) - np.outer(p, p)
    for jac in (pyree.jacfwd, pyree.jacrev):
        np.testing.assert_allclose(np.asarray(jac(nn.softmax)(v)), want,
                                   rtol=10 * rtol_for(dtype), atol=10 * rtol_for(dtype))
    # log_softmax: d/dx_j log p_i = delta_ij - p_j
    np.testing.assert_allclose(np.asarray(pyree.jacrev(nn.log_softmax)(v)),
                               np.eye(5) - p[None, :], rtol=10 * rtol_for(dtype),
                               atol=10 * rtol_for(dtype))


def test_softmax_family_finite_differences():
    x = LOGITS.astype(np.float32)
    check_grads(lambda v: nn.softmax(v, axis=0), (x,), order=2)
    check_grads(lambda v: nn.log_softmax(v, axis=1), (x,), order=2)
    check_grads(lambda v: nn.logsumexp(v, axis=(0, 1)), (x,), order=2)
    check_grads(lambda v: nn.softmax(v, axis=None), (x,), order=1)


def test_softmax_family_finite_differences_float64(x64):
    x = LOGITS
    check_grads(lambda v: nn.softmax(v), (x,), order=2)
    check_grads(lambda v: nn.log_softmax(v, axis=0), (x,), order=2)
    check_grads(lambda v: nn.logsumexp(v, axis=1), (x,), order=2)


def test_cross_entropy_gradient_closed_form():
    # d/dlogits of -sum(onehot * log_softmax(logits)) = softmax(logits) - onehot
    labels = np.array([1, 4, 0])
    def loss(logits):
        return -jnp.sum(nn.one_hot(labels, 5) * nn.log_softmax(logits))
    g = pyree.jit(pyree.grad(loss))(LOGITS.astype(np.float32))
    np.testing.assert_allclose(np.asarray(g), np_softmax(LOGITS) - np.eye(5)[labels],
                               rtol=1e-5, atol=1e-6)


# -- one_hot, standardize, glu -------------------------------------------------------------------

def test_one_hot():
    x = np.array([0, 2, -1, 3, 1])
    want = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0], [0, 1, 0]], np.float32)
    got = nn.one_hot(x, 3)
    assert got.dtype == np.float32 and got.shape == (5, 3)
    np.testing.assert_array_equal(np.asarray(got), want)
    got = nn.one_hot(x, 3, axis=0, dtype=jnp.int32)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(got), want.T)
    x2 = np.array([[0, 1], [2, 0]])
    got = pyree.jit(lambda v: nn.one_hot(v, 3, axis=1))(x2)
    assert got.shape == (2, 3, 2)
    np.testing.assert_array_equal(np.asarray(got), np.moveaxis(np.eye(3)[x2], -1, 1))


def test_one_hot_default_dtype_follows_x64(x64):
    assert nn.one_hot(np.array([1]), 2).dtype == np.float64


def test_standardize():
    x = LOGITS.astype(np.float32)
    got = np.asarray(nn.standardize(x, axis=1), np.float64)
    m = LOGITS.mean(axis=1, keepdims=True)
    v = LOGITS.var(axis=1, keepdims=True)
    np.testing.assert_allclose(got, (LOGITS - m) / np.sqrt(v + 1e-5), rtol=1e-4, atol=1e-5)
    got = nn.standardize(x, axis=0, mean=0.0, variance=4.0, epsilon=0.0)
    np.testing.assert_allclose(np.asarray(got), x / 2.0, rtol=1e-6)


def test_glu():
    x = LOGITS[:, :4].astype(np.float32)
    got = nn.glu(x, axis=1)
    np.testing.assert_allclose(np.asarray(got), LOGITS[:, :2] * np_sigmoid(LOGITS[:, 2:4]),
                               rtol=1e-5)
    with pytest.raises(ValueError):
        nn.glu(LOGITS.astype(np.float32), axis=1)


def test_public_functions_have_docstrings_with_examples():
    for name in nn.__all__:
        fn = getattr(nn, name)
        assert fn.__doc__ and "nn." in fn.__doc__ or name == "tanh", name
