"""``pyree.nn``: activation functions, softmax and friends, with ``jax.nn``'s names, signatures,
values and gradients. Everything is composed from ``pyree.numpy`` and ``pyree.lax``, so it
works eagerly, under ``jit`` and under ``grad`` alike::

    import pyree
    import pyree.nn as nn
    import pyree.numpy as jnp

    logits = jnp.array([1.0, 2.0, 3.0])
    nn.softmax(logits)                     # [0.090, 0.245, 0.665]
    pyree.grad(lambda x: nn.logsumexp(x))(logits)   # == nn.softmax(logits)

Numerical conventions (as in JAX): softmax, log_softmax and logsumexp subtract the maximum
(under ``stop_gradient``: the result does not depend on it, so neither does its derivative)
and so are finite for large inputs; ``relu``'s derivative at 0 is 0; functions with a branch
that would overflow or take a log of a negative (``elu``, ``logsumexp`` with ``where=``) mask
the input of that branch as well as its output, so that no NaN leaks into gradients.
"""
from __future__ import annotations

import math
from typing import Any, Optional, Sequence, Union

import numpy as np

from pyree import dtypes, lax
from pyree import numpy as jnp
from pyree._custom_derivatives import custom_jvp
from pyree.numpy._util import (canonical_axes, canonical_axis, check_arraylike,
                               promote_dtypes_inexact)

Axis = Optional[Union[int, Sequence[int]]]

__all__ = [
    "celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
    "leaky_relu", "log_sigmoid", "log_softmax", "logsumexp", "mish", "one_hot", "relu", "relu6",
    "selu", "sigmoid", "silu", "soft_sign", "softmax", "softplus", "sparse_plus",
    "squareplus", "standardize", "swish", "tanh",
    "dot_product_attention", "identity", "log1mexp", "logmeanexp", "sparse_sigmoid",
]

tanh = jnp.tanh


def _inexact(x: Any, name: str) -> Any:
    """``x`` as an array of a floating dtype (integers and booleans promote as in jnp.exp);
    a list is a TypeError, as in JAX."""
    check_arraylike(name, x)
    (x,) = promote_dtypes_inexact(x)
    return x


def _static_axis(axis: Axis, ndim: int) -> tuple:
    """A hashable, normalised tuple of axes (custom_jvp needs its static arguments hashable)."""
    return tuple(canonical_axes(axis, ndim))


# -- rectifiers ----------------------------------------------------------------------------------


@custom_jvp
def relu(x: Any) -> Any:
    """Rectified linear unit, ``max(x, 0)``. Its derivative at 0 is 0 (as in JAX), so that a
    unit sitting exactly at 0 gets no gradient.

    Example::

        nn.relu(jnp.array([-1.0, 0.0, 2.0]))      # [0., 0., 2.]
    """
    return jnp.maximum(x, 0)


# jnp.maximum's derivative splits ties in half; relu's convention is the subgradient 0 at 0.
relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, jnp.zeros_like(g)))


@custom_jvp
def relu6(x: Any) -> Any:
    """``min(max(x, 0), 6)``; derivative 1 strictly between 0 and 6, else 0 (as in JAX).

    Example::

        nn.relu6(jnp.array([-1.0, 3.0, 9.0]))     # [0., 3., 6.]
    """
    return jnp.minimum(jnp.maximum(x, 0), 6.0)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, jnp.zeros_like(g)))


def leaky_relu(x: Any, negative_slope: Any = 0.01) -> Any:
    """``x`` for ``x >= 0``, ``negative_slope * x`` below.

    Example::

        nn.leaky_relu(jnp.array([-2.0, 3.0]), negative_slope=0.1)   # [-0.2, 3.]
    """
    x = _inexact(x, "leaky_relu")
    return jnp.where(x >= 0, x, negative_slope * x)


def elu(x: Any, alpha: Any = 1.0) -> Any:
    """Exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Example::

        nn.elu(jnp.array([-1.0, 2.0]))            # [-0.632, 2.]
    """
    x = _inexact(x, "elu")
    positive = x > 0
    # expm1 only sees the non-positive inputs: exp of a large positive x would overflow to inf,
    # and inf * 0 in the unselected branch's gradient is NaN.
    safe_x = jnp.where(positive, 0.0, x)
    return jnp.where(positive, x, alpha * jnp.expm1(safe_x))


def celu(x: Any, alpha: Any = 1.0) -> Any:
    """Continuously differentiable ELU: ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)``.

    Example::

        nn.celu(jnp.array([-1.0, 2.0]), alpha=2.0)   # [-0.787, 2.]
    """
    x = _inexact(x, "celu")
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x: Any) -> Any:
    """Scaled ELU with the self-normalising constants (alpha ~ 1.6733, scale ~ 1.0507).

    Example::

        nn.selu(jnp.array([-1.0, 1.0]))           # [-1.111, 1.051]
    """
    return _SELU_SCALE * elu(x, _SELU_ALPHA)


# -- smooth activations --------------------------------------------------------------------------


def sigmoid(x: Any) -> Any:
    """The logistic function ``1 / (1 + exp(-x))``.

    Example::

        nn.sigmoid(jnp.array([0.0]))              # [0.5]
    """
    return jnp.logistic(x)


@custom_jvp
def softplus(x: Any) -> Any:
    """``log(1 + exp(x))``, computed as ``max(x, 0) + log1p(exp(-|x|))`` so that it neither
    overflows for large ``x`` nor loses precision for very negative ``x``. Its derivative is
    ``sigmoid(x)`` everywhere (0.5 at 0), to every order.

    Example::

        nn.softplus(jnp.array([0.0, 100.0]))      # [0.693, 100.]
    """
    x = _inexact(x, "softplus")
    return jnp.maximum(x, 0.0) + jnp.log1p(jnp.exp(-jnp.abs(x)))


# The formula's max and abs have kinks at 0 whose one-sided derivatives only average to the
# right first derivative; the rule gives sigmoid, whose own derivative is then right too.
softplus.defjvps(lambda g, ans, x: g * jnp.logistic(x))


def log_sigmoid(x: Any) -> Any:
    """``log(sigmoid(x)) = -softplus(-x)``, finite for very negative ``x``.

    Example::

        nn.log_sigmoid(jnp.array([0.0, -100.0]))  # [-0.693, -100.]
    """
    return -softplus(-_inexact(x, "log_sigmoid"))


def silu(x: Any) -> Any:
    """Sigmoid-weighted linear unit ``x * sigmoid(x)`` (also called ``swish``).

    Example::

        nn.silu(jnp.array([1.0]))                 # [0.731]
    """
    x = _inexact(x, "silu")
    return x * jnp.logistic(x)


swish = silu


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit ``x * Phi(x)``, with ``Phi`` the standard normal CDF. With
    ``approximate=True`` (the default, as in JAX) ``Phi`` is the tanh approximation
    ``(1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2``; otherwise the exact ``(1 + erf(x/sqrt 2)) / 2``.

    Example::

        nn.gelu(jnp.array([1.0]), approximate=False)   # [0.841]
    """
    x = _inexact(x, "gelu")
    if approximate:
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))
        return x * (0.5 * (1.0 + jnp.tanh(inner)))
    return x * (0.5 * (1.0 + jnp.erf(x * (1.0 / math.sqrt(2.0)))))


def mish(x: Any) -> Any:
    """``x * tanh(softplus(x))``.

    Example::

        nn.mish(jnp.array([1.0]))                 # [0.865]
    """
    x = _inexact(x, "mish")
    return x * jnp.tanh(softplus(x))


def soft_sign(x: Any) -> Any:
    """``x / (|x| + 1)``.

    Example::

        nn.soft_sign(jnp.array([-3.0, 1.0]))      # [-0.75, 0.5]
    """
    x = _inexact(x, "soft_sign")
    return x / (jnp.abs(x) + 1.0)


def squareplus(x: Any, b: Any = 4) -> Any:
    """``(x + sqrt(x^2 + b)) / 2``, a smooth and algebraic relative of relu.

    Example::

        nn.squareplus(jnp.array([0.0]))           # [1.]
    """
    x = _inexact(x, "squareplus")
    root = jnp.sqrt(x * x + b)
    # For x < 0 the sum cancels (x = -30: 1 ulp of the root is 6e-5 of the result); the same
    # value as b / (2 (root - x)) adds two positive terms.
    return jnp.where(x < 0, b / (2 * (root - x)), (x + root) / 2)


def sparse_plus(x: Any) -> Any:
    """0 for ``x <= -1``, ``(x + 1)^2 / 4`` for ``-1 < x < 1``, ``x`` for ``x >= 1``.

    Example::

        nn.sparse_plus(jnp.array([-2.0, 0.0, 2.0]))   # [0., 0.25, 2.]
    """
    x = _inexact(x, "sparse_plus")
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def hard_tanh(x: Any) -> Any:
    """``x`` clipped to ``[-1, 1]``.

    Example::

        nn.hard_tanh(jnp.array([-2.0, 0.5, 2.0]))     # [-1., 0.5, 1.]
    """
    x = _inexact(x, "hard_tanh")
    return jnp.where(x > 1, 1.0, jnp.where(x < -1, -1.0, x))


def hard_sigmoid(x: Any) -> Any:
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid.

    Example::

        nn.hard_sigmoid(jnp.array([0.0]))         # [0.5]
    """
    return relu6(_inexact(x, "hard_sigmoid") + 3.0) / 6.0


def hard_silu(x: Any) -> Any:
    """``x * hard_sigmoid(x)`` (also called ``hard_swish``).

    Example::

        nn.hard_silu(jnp.array([1.0]))            # [0.667]
    """
    x = _inexact(x, "hard_silu")
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: split ``x`` in two halves ``a, b`` along ``axis``, return
    ``a * sigmoid(b)``.

    Example::

        nn.glu(jnp.array([1.0, 2.0, 0.0, 0.0]))   # [0.5, 1.]
    """
    x = _inexact(x, "glu")
    shape = jnp.shape(x)
    axis = canonical_axis(axis, len(shape))
    size = shape[axis]
    if size % 2:
        raise ValueError(f"glu: axis {axis} must have an even size, got {size}")
    half = size // 2
    starts = [0] * len(shape)
    first_limit = list(shape)
    first_limit[axis] = half
    second_start = list(starts)
    second_start[axis] = half
    a = lax.slice(x, starts, first_limit)
    b = lax.slice(x, second_start, shape)
    return a * jnp.logistic(b)


# -- normalisation over an axis --------------------------------------------------------------------


def _reduce_max_safe(x: Any, axes: tuple, where: Any) -> Any:
    """Max over ``axes`` (kept as size 1), where masked-out entries count as -inf, with -inf
    and inf replaced by 0 so that subtracting it never makes inf - inf = NaN. Under
    stop_gradient: every function below is invariant to the shift, so its derivative is 0."""
    x_max = jnp.max(x, axis=axes, keepdims=True, where=where, initial=-np.inf)
    x_max = jnp.where(jnp.isfinite(x_max), x_max, 0.0)
    return lax.stop_gradient(x_max)


def _softmax_formula(x: Any, axes: tuple) -> Any:
    unnormalized = jnp.exp(x - _reduce_max_safe(x, axes, None))
    return unnormalized / jnp.sum(unnormalized, axis=axes, keepdims=True)


def _softmax_jvp(axes: tuple, primals: tuple, tangents: tuple) -> tuple:
    # d softmax = y * (t - <y, t>) along the axes: no division, no second exp.
    (x,), (t,) = primals, tangents
    y = _softmax(x, axes)
    return y, y * (t - jnp.sum(y * t, axis=axes, keepdims=True))


_softmax = custom_jvp(_softmax_formula, nondiff_argnums=(1,))
_softmax.defjvp(_softmax_jvp)


def softmax(x: Any, axis: Axis = -1, where: Any = None, initial: Any = None) -> Any:
    """``exp(x) / sum(exp(x))`` along ``axis`` (an int, a tuple, or None for all axes),
    computed as ``exp(x - max x)`` so that large logits do not overflow. Entries where
    ``where`` is False are left out and get 0.

    Example::

        nn.softmax(jnp.array([1000.0, 1000.0]))   # [0.5, 0.5]
    """
    del initial  # accepted for JAX's signature; it has no effect there either
    x = _inexact(x, "softmax")
    axes = _static_axis(axis, jnp.ndim(x))
    if where is None:
        return _softmax(x, axes)
    # Masked entries get exp(-inf) = 0 before the sum, so they contribute neither value nor
    # gradient; the mask is a boolean, so the rule above (which has no tangent for it) is not
    # needed: the formula is differentiated directly.
    shifted = jnp.where(where, x - _reduce_max_safe(x, axes, where), -np.inf)
    unnormalized = jnp.exp(shifted)
    total = jnp.sum(unnormalized, axis=axes, keepdims=True, where=where)
    return jnp.where(where, unnormalized / total, 0.0)


def log_softmax(x: Any, axis: Axis = -1, where: Any = None, initial: Any = None) -> Any:
    """``x - logsumexp(x)`` along ``axis``, without overflow for large ``x``. Entries where
    ``where`` is False are left out and get ``-inf``.

    Example::

        nn.log_softmax(jnp.array([0.0, 0.0]))     # [-0.693, -0.693]
    """
    del initial
    x = _inexact(x, "log_softmax")
    axes = _static_axis(axis, jnp.ndim(x))
    x_max = _reduce_max_safe(x, axes, where)
    shifted = x - x_max
    if where is not None:
        shifted = jnp.where(where, shifted, -np.inf)
    shifted_lse = jnp.log(jnp.sum(jnp.exp(shifted), axis=axes, keepdims=True, where=where))
    if where is not None:
        return jnp.where(where, shifted - shifted_lse, -np.inf)
    # x + (-x_max) is x - x_max bit for bit, but an operation of its own: IREE then computes it
    # again where the result is written, instead of writing the shifted values out for both
    # the exponentials' sum and the result and reading them back (4096 x 1000 float32: 4.2 ->
    # 2.3 ms here, JAX 2.2 ms).
    return (x + (-x_max)) - shifted_lse


def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """``log(sum(b * exp(a)))`` over ``axis`` (all axes by default), stable for large ``a``:
    the maximum is taken out first. ``b`` scales the terms (entries with ``b == 0`` are left
    out); if the sum can be negative, ``return_sign=True`` returns ``(log|sum|, sign)``,
    otherwise a negative sum gives NaN. The derivative with respect to ``a`` is the softmax.

    Example::

        nn.logsumexp(jnp.array([1000.0, 1000.0]))    # 1000.6931
        nn.logsumexp(jnp.array([0.0, 0.0]), b=jnp.array([2.0, -1.0]))   # 0.
    """
    if b is not None:
        check_arraylike("logsumexp", a, b)
        check_arraylike("logsumexp", a, b)
        a, b = promote_dtypes_inexact(a, b)
        shape = jnp.broadcast_shapes(jnp.shape(a), jnp.shape(b))
        a, b = jnp.broadcast_to(a, shape), jnp.broadcast_to(b, shape)
        # A term with weight 0 must not set the maximum (nor make exp(a) of it overflow).
        a = jnp.where(b != 0, a, -np.inf)
    else:
        a = _inexact(a, "logsumexp")
    if where is not None:
        # Masked entries become -inf before exp (not only after the sum): an inf or NaN there
        # would otherwise reach the gradient as 0 * exp(inf) = NaN.
        a = jnp.where(where, a, -np.inf)
    axes = _static_axis(axis, jnp.ndim(a))
    a_max = _reduce_max_safe(a, axes, where)
    terms = jnp.exp(a - a_max)
    if b is not None:
        terms = terms * b
    total = jnp.sum(terms, axis=axes, keepdims=keepdims, where=where)
    sign = lax.stop_gradient(jnp.sign(total))
    if not keepdims:
        a_max = jnp.squeeze(a_max, axis=axes)
    # |total| with the sign divided out is differentiable where total != 0, unlike abs at 0.
    out = jnp.log(total * sign if b is not None else total) + a_max
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(sign < 0, np.nan, out)
    return out


def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                epsilon: float = 1e-5, where: Any = None) -> Any:
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis``; the mean and variance are
    computed from ``x`` unless given.

    Example::

        nn.standardize(jnp.array([1.0, 3.0]))     # [-1., 1.] (up to epsilon)
    """
    x = _inexact(x, "standardize")
    axes = _static_axis(axis, jnp.ndim(x))
    if mean is None:
        mean = jnp.mean(x, axis=axes, keepdims=True, where=where)
    if variance is None:
        # E[x^2] - E[x]^2 (not E[(x - E x)^2]), as JAX computes it.
        variance = jnp.mean(x * x, axis=axes, keepdims=True, where=where) - mean * mean
    return (x - mean) * lax.rsqrt(variance + epsilon)


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """One-hot encoding: an array one dimension larger than ``x``, with a new axis of size
    ``num_classes`` at ``axis`` that holds 1 at index ``x`` and 0 elsewhere. Indices outside
    ``[0, num_classes)`` give all zeros. ``dtype`` defaults to the default float type.

    Example::

        nn.one_hot(jnp.array([0, 2]), 3)          # [[1., 0., 0.], [0., 0., 1.]]
    """
    num_classes = int(num_classes)
    dtype = dtypes.canonicalize_dtype(np.float64 if dtype is None else dtype)
    x = jnp.asarray(x)
    out_ndim = jnp.ndim(x) + 1
    axis = canonical_axis(axis, out_ndim)
    classes_shape = [1] * out_ndim
    classes_shape[axis] = num_classes
    classes = jnp.arange(num_classes).reshape(classes_shape)
    return (jnp.expand_dims(x, axis) == classes).astype(dtype)


def identity(x: Any) -> Any:
    """The identity activation: ``x`` unchanged.

    Example::

        nn.identity(jnp.array([-1.0, 2.0]))       # [-1., 2.]
    """
    return x


def sparse_sigmoid(x: Any) -> Any:
    """The sparse sigmoid: 0 below -1, 1 above 1, ``(x + 1) / 2`` between (sparse_plus's
    derivative).

    Example::

        nn.sparse_sigmoid(jnp.array([-2.0, 0.0, 0.5]))   # [0., 0.5, 0.75]
    """
    x = _inexact(x, "sparse_sigmoid")
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, 1.0, (x + 1.0) / 2.0))


def log1mexp(x: Any) -> Any:
    """``log(1 - exp(-x))`` for ``x >= 0``, accurate everywhere: ``log(-expm1(-x))`` for
    ``x`` below log 2, ``log1p(-exp(-x))`` above (Maechler 2012). NaN for ``x < 0``, -inf at 0.

    Example::

        nn.log1mexp(jnp.array([0.1, 10.0]))      # [-2.3521686, -4.5400961e-05]
    """
    x = _inexact(x, "log1mexp")
    small = x < np.log(2.0)
    # Each branch sees an argument where it is well behaved, so no NaN reaches the gradient.
    near = jnp.log(-jnp.expm1(-jnp.where(small, x, 1.0)))
    far = jnp.log1p(-jnp.exp(-jnp.where(small, 1.0, x)))
    return jnp.where(small, near, far)


def logmeanexp(x: Any, axis: Axis = None, where: Any = None, keepdims: bool = False) -> Any:
    """``log(mean(exp(x)))`` over ``axis``: ``logsumexp`` minus the log of the number of
    terms (those ``where`` selects).

    Example::

        nn.logmeanexp(jnp.array([[1.0, 2.0], [3.0, 4.0]]), axis=1)   # [1.6201143, 3.6201143]
    """
    x = _inexact(x, "logmeanexp")
    axes = _static_axis(axis, jnp.ndim(x))
    total = logsumexp(x, axis=axes, keepdims=keepdims, where=where)
    if where is None:
        count = math.prod(jnp.shape(x)[a] for a in axes)
        return total - np.log(count).astype(total.dtype) if count else total - np.inf
    count = jnp.sum(jnp.broadcast_to(where, jnp.shape(x)), axis=axes, keepdims=keepdims)
    return total - jnp.log(count.astype(total.dtype))


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None,
                          *, scale: Optional[float] = None, is_causal: bool = False,
                          query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: Optional[Union[int, tuple[int, int]]] = None,
                          implementation: Optional[str] = None,
                          return_residual: bool = False) -> Any:
    """Scaled dot-product attention, ``softmax(Q K^T * scale + bias) V`` per head, on arrays
    of shape ``(B, T, N, H)`` for ``query`` and ``(B, S, K, H)`` for ``key`` and ``value``
    (or without the batch axis); ``N`` a multiple of ``K`` (grouped-query attention: query
    head n reads key/value head ``n // (N // K)``). ``scale`` defaults to ``1 / sqrt(H)``.
    ``bias`` and the boolean ``mask`` (True: attend) broadcast to ``(B, N, T, S)``; so do the
    masks of ``is_causal`` (key ``s <= t``), the sequence lengths (padded queries give zeros)
    and ``local_window_size`` ``(left, right)``. Masked logits are set to ``-0.7 *`` the
    largest float32, as JAX's XLA path does, so a query with every key masked averages all
    values. Logits and softmax are float32 (or wider); the result has ``query``'s dtype and
    shape. ``return_residual=True`` also returns the softmax's logsumexp, shape ``(B, T, N)``.

    Example::

        out = nn.dot_product_attention(q, k, v, is_causal=True)    # q: (2, 16, 8, 64)
    """
    if implementation not in (None, "xla"):
        raise NotImplementedError(f"dot_product_attention: implementation={implementation!r} "
                                  "is not available in pyree (only 'xla', the default)")
    check_arraylike("dot_product_attention", query, key, value)
    q, k, v = jnp.asarray(query), jnp.asarray(key), jnp.asarray(value)
    unbatched = q.ndim == 3
    if unbatched:
        q, k, v = q[None], k[None], v[None]
        bias = None if bias is None else jnp.asarray(bias)[None] if jnp.ndim(bias) == 3 else bias
        mask = None if mask is None else jnp.asarray(mask)[None] if jnp.ndim(mask) == 3 else mask
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"dot_product_attention: query, key and value must have rank 4 "
                         f"(BTNH) or 3 (TNH), got shapes {jnp.shape(query)}, {jnp.shape(key)}, "
                         f"{jnp.shape(value)}")
    if k.shape != v.shape:
        raise ValueError(f"dot_product_attention: key and value must have the same shape, got "
                         f"{k.shape} and {v.shape}")
    b, t, n, h = q.shape
    _, s, kh, hk = k.shape
    if k.shape[0] != b or hk != h:
        raise ValueError(f"dot_product_attention: key's batch and head dimensions must match "
                         f"query's, got {k.shape} for query {q.shape}")
    if n % kh:
        raise ValueError(f"dot_product_attention: the number of query heads ({n}) must be a "
                         f"multiple of the number of key/value heads ({kh})")
    groups = n // kh
    out_dtype = q.dtype
    acc = jnp.promote_types(jnp.promote_types(q.dtype, k.dtype), np.float32)
    scale = 1.0 / math.sqrt(h) if scale is None else scale
    qg = q.astype(acc).reshape(b, t, kh, groups, h)
    logits = jnp.einsum("btkgh,bskh->bkgts", qg, k.astype(acc)).reshape(b, n, t, s)
    logits = logits * np.asarray(scale, acc)
    if bias is not None:
        logits = logits + jnp.asarray(bias).astype(acc)
    keep = None if mask is None else jnp.asarray(mask).astype(bool)

    def both(a: Any, c: Any) -> Any:
        return c if a is None else a & c

    rows, cols = jnp.arange(t)[:, None], jnp.arange(s)[None, :]
    if is_causal:
        keep = both(keep, cols <= rows)
    if local_window_size is not None:
        left, right = ((local_window_size, local_window_size)
                       if isinstance(local_window_size, int) else local_window_size)
        keep = both(keep, (cols >= rows - left) & (cols <= rows + right))
    if key_value_seq_lengths is not None:
        kv_len = jnp.asarray(key_value_seq_lengths).reshape(b, 1, 1, 1)
        keep = both(keep, jnp.arange(s).reshape(1, 1, 1, s) < kv_len)
    if query_seq_lengths is not None:
        q_len = jnp.asarray(query_seq_lengths).reshape(b, 1, 1, 1)
        keep = both(keep, jnp.arange(t).reshape(1, 1, t, 1) < q_len)
    if keep is not None:
        large_negative = np.asarray(-0.7 * np.finfo(np.float32).max, acc)
        logits = jnp.where(keep, logits, large_negative)
    probs = softmax(logits, axis=-1)
    out = jnp.einsum("bkgts,bskh->btkgh", probs.reshape(b, kh, groups, t, s), v.astype(acc))
    out = out.reshape(b, t, n, h)
    if query_seq_lengths is not None:
        valid = jnp.arange(t).reshape(1, t, 1, 1) < jnp.asarray(query_seq_lengths).reshape(
            b, 1, 1, 1)
        out = jnp.where(valid, out, 0.0)
    out = out.astype(out_dtype)
    if unbatched:
        out = out[0]
    if not return_residual:
        return out
    residual = jnp.transpose(logsumexp(logits, axis=-1), (0, 2, 1))     # (B, T, N)
    return out, residual[0] if unbatched else residual


from pyree.nn import initializers  # noqa: E402  (needs the names above; imports random)
