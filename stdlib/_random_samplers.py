"""The distributions of ``pyree.random`` beyond uniform/normal/randint/bernoulli/choice.

Re-exported by ``pyree.random``: use them as ``random.gamma(key, a, shape)``. Signatures,
defaults, dtypes and shape rules are JAX 0.10's; the draws follow the same distributions
(statistically, not bit for bit, except where the same transform of the same uniform is used).

* Transforms of one uniform or normal draw: ``exponential``, ``gumbel``, ``laplace``,
  ``logistic``, ``cauchy``, ``lognormal``, ``pareto``, ``weibull_min``, ``rayleigh``,
  ``triangular``, ``wald``, ``geometric``, ``rademacher``, ``maxwell``,
  ``double_sided_maxwell``, ``categorical`` (Gumbel-max / Gumbel top-k).
* Rejection samplers, vectorised as one ``lax.while_loop`` over the whole array that redraws
  only where nothing has been accepted yet (fresh subkeys each iteration): ``gamma`` and
  ``loggamma`` (Marsaglia–Tsang), ``poisson`` (Knuth below 10, Hörmann's PTRS above).
* Built on gamma: ``beta``, ``dirichlet``, ``chisquare``, ``t``, ``f``,
  ``generalized_normal``, ``ball``.
* ``multivariate_normal`` through a Cholesky factor.

Everything works eagerly, under ``jit`` and under ``vmap`` over a batch of keys, and gradients
flow to location/scale parameters of reparameterised draws (e.g. ``weibull_min``'s ``scale``)
and, by implicit reparameterisation, to the shape parameters of the gamma family (``gamma``,
``loggamma``, ``beta``, ``dirichlet``, ``chisquare``, ``t``, ``f``, ``generalized_normal``).
"""
from __future__ import annotations

import math
from functools import partial
from typing import Any, Optional, Sequence, Union

import numpy as np

from pyree import dtypes, lax
from pyree import numpy as jnp
from pyree._custom_derivatives import custom_jvp
from pyree.numpy._util import canonical_axis, check_arraylike
from pyree.random import (_U32, _check_broadcast, _check_dtype, _counters, _param,
                          _shape_tuple, _single_key, _split_words, _threefry2x32, _uniform,
                          normal)
from pyree.transpiler.families import igamma as _igamma
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import get_aval

__all__ = [
    "exponential", "gumbel", "laplace", "logistic", "cauchy", "rademacher", "lognormal",
    "pareto", "weibull_min", "rayleigh", "maxwell", "double_sided_maxwell", "triangular",
    "wald", "geometric", "categorical", "gamma", "loggamma", "beta", "dirichlet", "chisquare",
    "t", "f", "generalized_normal", "ball", "poisson", "multivariate_normal", "binomial",
    "multinomial", "orthogonal",
]

Shape = Union[int, Sequence[int]]


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

def _float_dtype(dtype: Any, name: str) -> np.dtype:
    return _check_dtype(dtypes.canonicalize_dtype(float) if dtype is None else dtype, name,
                        "f", "a float dtype")


def _int_dtype(dtype: Any, name: str, kinds: str = "iu", what: str = "an int dtype") -> np.dtype:
    return _check_dtype(dtypes.canonicalize_dtype(int) if dtype is None else dtype, name,
                        kinds, what)


def _subkeys(k0: Any, k1: Any, count: int) -> list:
    """``count`` key-word pairs, as ``split(key, count)`` gives them."""
    words = _split_words(k0, k1, (count,))
    return [(words[i, 0], words[i, 1]) for i in range(count)]


def _const(value: float, dtype: np.dtype) -> Any:
    return jnp.asarray(np.array(value, dtype))


def _unit(k0: Any, k1: Any, shape: tuple, dtype: np.dtype, low: float = 0.0,
          high: float = 1.0) -> Any:
    """Uniform draws in ``[low, high)`` (Python-float bounds)."""
    return _uniform(k0, k1, shape, dtype, _const(low, dtype), _const(high, dtype))


def _std_normal(k0: Any, k1: Any, shape: tuple, dtype: np.dtype) -> Any:
    return normal(jnp.stack([k0, k1]), shape, dtype)


def _float_params(name: str, dtype: np.dtype, *params: Any) -> list:
    check_arraylike(name, *params)
    return [_param(p, dtype) for p in params]


def _sample_shape(name: str, shape: Optional[Shape], *params: Any) -> tuple:
    """``shape`` (checked against the parameters' shapes), or their broadcast shape."""
    param_shapes = [tuple(get_aval(p).shape) for p in params]
    if shape is None:
        try:
            return tuple(np.broadcast_shapes(*param_shapes))
        except ValueError:
            raise ValueError(f"{name}: parameter shapes {param_shapes} do not broadcast "
                             f"together{_where(None)}") from None
    shape = _shape_tuple(shape, name)
    _check_broadcast(name, shape, *param_shapes)
    return shape


def _two_units(k0: Any, k1: Any, shape: tuple) -> list:
    """Two float32 uniform [0, 1) arrays from one Threefry block per element (its two output
    words): half the code of two draws, which matters in rejection loops' bodies."""
    one_bits = np.array(1.0, np.float32).view(np.uint32)
    units = []
    for word in _threefry2x32(k0, k1, *_counters(shape)):
        # As uniform: the top 23 bits as the mantissa of a float in [1, 2), minus 1.
        mantissa = lax.shift_right_logical(word, np.uint32(9)) | one_bits
        units.append(lax.bitcast_convert_type(mantissa, np.float32) - np.float32(1.0))
    return units


def _normal_and_uniform(k0: Any, k1: Any, shape: tuple, dtype: np.dtype) -> tuple[Any, Any]:
    """A standard normal and a [0, 1) uniform array of ``dtype``, for rejection loops."""
    if dtype.itemsize == 8:
        (x0, x1), (u0, u1) = _subkeys(k0, k1, 2)
        return _std_normal(x0, x1, shape, dtype), _unit(u0, u1, shape, dtype)
    first, second = _two_units(k0, k1, shape)
    low = np.nextafter(np.float32(-1.0), np.float32(0.0))
    symmetric = jnp.maximum(low, first * np.float32(2.0) - np.float32(1.0))
    x = np.float32(np.sqrt(2)) * lax.erf_inv(symmetric)
    return x.astype(dtype), second.astype(dtype)


def _fold_words(k0: Any, k1: Any, counter: Any) -> tuple[Any, Any]:
    """The words of ``fold_in(key, counter)`` (``counter``: a traced uint32 scalar)."""
    return _threefry2x32(k0, k1, jnp.zeros((), _U32), counter)


def _standard_gumbel(k0: Any, k1: Any, shape: tuple, dtype: np.dtype, mode: str) -> Any:
    info = dtypes.finfo(dtype)
    if mode == "low":
        return -jnp.log(-jnp.log(_unit(k0, k1, shape, dtype, float(info.tiny), 1.0)))
    # "high": a second uniform fills in the bits below the first one's resolution, so that
    # x near 0 (the large-gumbel tail) is not rounded to a multiple of 2**-nmant.
    both = _unit(k0, k1, (2,) + shape, dtype)
    high, low = both[0], both[1]
    fine = high + _const(2.0 ** -info.nmant, dtype) * low + _const(float(info.tiny), dtype)
    x = jnp.where(high >= _const(0.5, dtype), high, fine)
    return -jnp.log(-jnp.log1p(-x))


# --------------------------------------------------------------------------------------------
# Weighted choice (random.choice with p=)
# --------------------------------------------------------------------------------------------

def weighted_choice_indices(k0: Any, k1: Any, n: int, count: int, replace: bool, p: Any) -> Any:
    """``count`` indices into ``range(n)`` drawn with probabilities ``p`` (called by
    ``random.choice`` with ``p=``; ``k0``, ``k1`` are the key's words). With replacement:
    inverse CDF (a uniform draw searched in ``cumsum(p)``); without: Gumbel top-k."""
    check_arraylike("choice", p)
    p = jnp.asarray(p)
    if tuple(p.shape) != (n,):
        raise ValueError(f"choice: p must be None or a 1-D array of the population's length "
                         f"({n},), got shape {tuple(p.shape)}{_where(None)}")
    dtype = np.dtype(get_aval(p).dtype)
    if dtype.kind != "f":
        dtype = dtypes.canonicalize_dtype(float)
        p = p.astype(dtype)
    if replace:
        cumulative = jnp.cumsum(p)
        # 1 - u lies in (0, 1]: the draw is never 0, so a zero-weight first entry is never hit.
        r = cumulative[-1] * (_const(1.0, dtype) - _unit(k0, k1, (count,), dtype))
        index = jnp.searchsorted(cumulative, r)
        return jnp.minimum(index, n - 1).astype(dtypes.canonicalize_dtype(int))
    perturbed = _standard_gumbel(k0, k1, (n,), dtype, "low") + jnp.log(p)
    return lax.top_k(perturbed, count)[1].astype(dtypes.canonicalize_dtype(int))


# --------------------------------------------------------------------------------------------
# Transforms of a uniform or normal draw
# --------------------------------------------------------------------------------------------

def exponential(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard exponential draws (rate 1): ``-log1p(-u)``.

    Example: ``random.exponential(key, (1000,)) / rate``.
    """
    k0, k1, _ = _single_key(key, "exponential")
    shape = _shape_tuple(shape, "exponential")
    dtype = _float_dtype(dtype, "exponential")
    return -jnp.log1p(-_unit(k0, k1, shape, dtype))


def gumbel(key: Any, shape: Shape = (), dtype: Any = None, mode: Optional[str] = None) -> Any:
    """Standard Gumbel draws (density ``exp(-(x + exp(-x)))``): ``-log(-log(u))``.

    ``mode="high"`` spends a second uniform draw per value to resolve the upper tail further
    (the default, ``"low"``, is JAX's default too). Example: ``random.gumbel(key, (5,))``.
    """
    k0, k1, _ = _single_key(key, "gumbel")
    dtype = _float_dtype(dtype, "gumbel")
    shape = _shape_tuple(shape, "gumbel")
    mode = "low" if mode is None else mode
    if mode == "highest":
        raise NotImplementedError(f"gumbel: mode='highest' is not implemented; use 'high'"
                                  f"{_where(None)}")
    if mode not in ("high", "low"):
        raise ValueError(f"Must provide valid mode for gumbel got: {mode}{_where(None)}")
    return _standard_gumbel(k0, k1, shape, dtype, mode)


def laplace(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard Laplace draws (density ``exp(-|x|) / 2``).

    Example: ``loc + scale * random.laplace(key, (100,))``.
    """
    k0, k1, _ = _single_key(key, "laplace")
    shape = _shape_tuple(shape, "laplace")
    dtype = _float_dtype(dtype, "laplace")
    # u in (-1, 1): the sign picks the side, |u| the depth into the exponential tail.
    u = _unit(k0, k1, shape, dtype, -1.0 + float(dtypes.finfo(dtype).epsneg), 1.0)
    return jnp.sign(u) * jnp.log1p(-jnp.abs(u))


def logistic(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard logistic draws (CDF ``1 / (1 + exp(-x))``): ``log(u) - log1p(-u)``.

    Example: ``random.logistic(key, (100,))``.
    """
    k0, k1, _ = _single_key(key, "logistic")
    shape = _shape_tuple(shape, "logistic")
    dtype = _float_dtype(dtype, "logistic")
    u = _unit(k0, k1, shape, dtype, float(dtypes.finfo(dtype).tiny), 1.0)
    return jnp.log(u) - jnp.log1p(-u)


def cauchy(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Standard Cauchy draws: ``tan(pi * (u - 1/2))``.

    Example: ``random.cauchy(key, (100,))``.
    """
    k0, k1, _ = _single_key(key, "cauchy")
    shape = _shape_tuple(shape, "cauchy")
    dtype = _float_dtype(dtype, "cauchy")
    u = _unit(k0, k1, shape, dtype, float(dtypes.finfo(dtype).eps), 1.0)
    return jnp.tan(_const(np.pi, dtype) * (u - _const(0.5, dtype)))


def rademacher(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """-1 or +1 with equal probability (int32 by default).

    Example: ``random.rademacher(key, (4,))`` such as ``[ 1, -1, -1,  1]``.
    """
    k0, k1, _ = _single_key(key, "rademacher")
    shape = _shape_tuple(shape, "rademacher")
    dtype = _int_dtype(dtype, "rademacher", "iuf", "a numeric dtype")
    coin = _unit(k0, k1, shape, dtypes.canonicalize_dtype(float)) < _const(
        0.5, dtypes.canonicalize_dtype(float))
    return (2 * coin.astype(dtype) - 1).astype(dtype)


def lognormal(key: Any, sigma: Any = np.float32(1), shape: Optional[Shape] = None,
              dtype: Any = None) -> Any:
    """Log-normal draws ``exp(sigma * z)`` (``z`` standard normal); ``shape`` defaults to
    ``sigma``'s shape.

    Example: ``random.lognormal(key, 0.5, (100,))``.
    """
    k0, k1, _ = _single_key(key, "lognormal")
    dtype = _float_dtype(dtype, "lognormal")
    sigma, = _float_params("lognormal", dtype, sigma)
    shape = _sample_shape("lognormal", shape, sigma)
    return jnp.exp(_std_normal(k0, k1, shape, dtype) * sigma)


def pareto(key: Any, b: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Pareto draws with shape parameter ``b`` (support ``[1, inf)``): ``exp(e / b)``,
    ``e`` standard exponential.

    Example: ``random.pareto(key, 3.0, (100,))``.
    """
    k0, k1, _ = _single_key(key, "pareto")
    dtype = _float_dtype(dtype, "pareto")
    b, = _float_params("pareto", dtype, b)
    shape = _sample_shape("pareto", shape, b)
    return jnp.exp(-jnp.log1p(-_unit(k0, k1, shape, dtype)) / b)


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Shape = (),
                dtype: Any = None) -> Any:
    """Weibull draws ``scale * (-log1p(-u)) ** (1 / concentration)``; ``shape`` (default
    ``()``) must hold the parameters' broadcast shape.

    Example: ``random.weibull_min(key, 2.0, 1.5, (100,))``.
    """
    k0, k1, _ = _single_key(key, "weibull_min")
    dtype = _float_dtype(dtype, "weibull_min")
    shape = _shape_tuple(shape, "weibull_min")
    scale, concentration = _float_params("weibull_min", dtype, scale, concentration)
    exponential_draw = -jnp.log1p(-_unit(k0, k1, shape, dtype))
    return jnp.power(exponential_draw, _const(1.0, dtype) / concentration) * scale


def rayleigh(key: Any, scale: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Rayleigh draws ``scale * sqrt(-2 log u)``; ``shape`` defaults to ``scale``'s.

    Example: ``random.rayleigh(key, 2.0, (100,))``.
    """
    k0, k1, _ = _single_key(key, "rayleigh")
    dtype = _float_dtype(dtype, "rayleigh")
    scale, = _float_params("rayleigh", dtype, scale)
    shape = _sample_shape("rayleigh", shape, scale)
    u = _unit(k0, k1, shape, dtype)
    return scale * jnp.sqrt(_const(-2.0, dtype) * jnp.log(u))


def _maxwell(k0: Any, k1: Any, shape: tuple, dtype: np.dtype) -> Any:
    z = _std_normal(k0, k1, shape + (3,), dtype)
    return jnp.sqrt(jnp.sum(z * z, axis=-1))


def maxwell(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Maxwell draws: the length of a standard normal 3-vector.

    Example: ``random.maxwell(key, (100,))``.
    """
    k0, k1, _ = _single_key(key, "maxwell")
    shape = _shape_tuple(shape, "maxwell")
    dtype = _float_dtype(dtype, "maxwell")
    return _maxwell(k0, k1, shape, dtype)


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Shape = (),
                         dtype: Any = None) -> Any:
    """Double-sided Maxwell draws ``loc + scale * sign * maxwell``. As JAX: the result's
    shape is ``shape + broadcast(loc, scale).shape`` (``shape`` empty: the parameters' shape).

    Example: ``random.double_sided_maxwell(key, 0.0, 1.0, (100,))``.
    """
    k0, k1, _ = _single_key(key, "double_sided_maxwell")
    dtype = _float_dtype(dtype, "double_sided_maxwell")
    loc, scale = _float_params("double_sided_maxwell", dtype, loc, scale)
    param_shape = tuple(np.broadcast_shapes(tuple(loc.shape), tuple(scale.shape)))
    shape = _shape_tuple(shape, "double_sided_maxwell")
    shape = (shape or param_shape) + param_shape
    (m0, m1), (s0, s1) = _subkeys(k0, k1, 2)
    sign = rademacher(jnp.stack([s0, s1]), shape, dtype)
    return sign * _maxwell(m0, m1, shape, dtype) * scale + loc


def triangular(key: Any, left: Any, mode: Any, right: Any, shape: Optional[Shape] = None,
               dtype: Any = None) -> Any:
    """Triangular draws on ``[left, right]`` peaking at ``mode`` (inverse CDF); ``shape``
    defaults to the parameters' broadcast shape.

    Example: ``random.triangular(key, 0.0, 1.0, 3.0, (100,))``.
    """
    k0, k1, _ = _single_key(key, "triangular")
    dtype = _float_dtype(dtype, "triangular")
    left, mode, right = _float_params("triangular", dtype, left, mode, right)
    shape = _sample_shape("triangular", shape, left, mode, right)
    width = right - left
    u = _unit(k0, k1, shape, dtype)
    rising = left + jnp.sqrt(u * width * (mode - left))
    falling = right - jnp.sqrt((_const(1.0, dtype) - u) * width * (right - mode))
    return jnp.where(u < (mode - left) / width, rising, falling)


def wald(key: Any, mean: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Wald (inverse Gaussian, scale 1) draws with mean ``mean`` (Michael, Schucany and Haas'
    transform of a normal and a uniform draw); ``shape`` defaults to ``mean``'s.

    Example: ``random.wald(key, 2.0, (100,))``.
    """
    k0, k1, _ = _single_key(key, "wald")
    dtype = _float_dtype(dtype, "wald")
    mean, = _float_params("wald", dtype, mean)
    shape = _sample_shape("wald", shape, mean)
    (n0, n1), (u0, u1) = _subkeys(k0, k1, 2)
    v = _std_normal(n0, n1, shape, dtype)
    z = _unit(u0, u1, shape, dtype)
    y = v * v
    mean_sq = mean * mean
    root = jnp.sqrt(_const(4.0, dtype) * mean * y + mean_sq * y * y)
    x = mean + mean_sq * y / _const(2.0, dtype) - mean / _const(2.0, dtype) * root
    return jnp.where(z <= mean / (mean + x), x, mean_sq / x)


def geometric(key: Any, p: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Geometric draws: the number of Bernoulli(``p``) trials up to the first success
    (support ``1, 2, ...``; int32 by default); ``shape`` defaults to ``p``'s.

    Example: ``random.geometric(key, 0.25, (100,))``.
    """
    k0, k1, _ = _single_key(key, "geometric")
    dtype = _int_dtype(dtype, "geometric")
    check_arraylike("geometric", p)
    p = jnp.asarray(p)
    if np.dtype(get_aval(p).dtype).kind not in "fc":
        p = p.astype(dtypes.canonicalize_dtype(float))
    shape = _sample_shape("geometric", shape, p)
    float_dtype = np.dtype(get_aval(p).dtype)
    u = _unit(k0, k1, shape, float_dtype)
    u = jnp.where(u == _const(0.0, float_dtype), _const(1.0, float_dtype), u)
    return (jnp.floor(jnp.log(u) / jnp.log1p(-p)) + _const(1.0, float_dtype)).astype(dtype)


def categorical(key: Any, logits: Any, axis: int = -1, shape: Optional[Shape] = None,
                replace: bool = True, mode: Optional[str] = None) -> Any:
    """Indices drawn from the categorical distributions ``softmax(logits, axis)`` (Gumbel-max;
    without replacement, Gumbel top-k). ``shape`` defaults to ``logits``' shape without
    ``axis``; a longer ``shape`` adds leading sample dimensions.

    Example: ``random.categorical(key, jnp.log(jnp.array([0.2, 0.3, 0.5])), shape=(1000,))``.
    """
    k0, k1, _ = _single_key(key, "categorical")
    check_arraylike("categorical", logits)
    logits = jnp.asarray(logits)
    dtype = np.dtype(get_aval(logits).dtype)
    if dtype.kind != "f":
        dtype = dtypes.canonicalize_dtype(float)
        logits = logits.astype(dtype)
    axis = canonical_axis(axis, logits.ndim)
    batch_shape = tuple(d for i, d in enumerate(logits.shape) if i != axis)
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape_tuple(shape, "categorical")
        _check_broadcast("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    gumbel_mode = "low" if mode is None else mode
    if gumbel_mode not in ("high", "low"):
        raise ValueError(f"categorical: mode must be 'high' or 'low', got {mode!r}"
                         f"{_where(None)}")
    index_dtype = dtypes.canonicalize_dtype(int)
    if replace:
        draw_shape = list(shape[len(prefix):])
        draw_shape.insert(axis, logits.shape[axis])
        noise = _standard_gumbel(k0, k1, prefix + tuple(draw_shape), dtype, gumbel_mode)
        logits = jnp.reshape(logits, (1,) * len(prefix) + tuple(logits.shape))
        return jnp.argmax(noise + logits, axis=len(prefix) + axis).astype(index_dtype)
    count = math.prod(prefix)
    if count > logits.shape[axis]:
        raise ValueError(f"Number of samples without replacement ({count}) cannot exceed "
                         f"number of categories ({logits.shape[axis]}){_where(None)}")
    perturbed = logits + _standard_gumbel(k0, k1, tuple(logits.shape), dtype, gumbel_mode)
    _, index = lax.top_k(jnp.moveaxis(perturbed, axis, -1), count)  # batch_shape + (count,)
    index = jnp.moveaxis(index, -1, 0)
    return jnp.reshape(index, shape).astype(index_dtype)


# --------------------------------------------------------------------------------------------
# Gamma family (Marsaglia–Tsang rejection in one while loop)
# --------------------------------------------------------------------------------------------

_MAX_REJECTION_ROUNDS = 10_000  # a backstop only: each round accepts > 95% of what is left


def _marsaglia_tsang(k0: Any, k1: Any, a: Any, log_space: bool) -> Any:
    """Gamma(``a``, 1) draws (their logs if ``log_space``) for a float array ``a``.

    For a >= 1: d = a - 1/3, c = 1/sqrt(9d); propose v = (1 + c x)^3 with x normal, accept
    d*v when log(u) < x^2/2 + d - d v + d log v. For a < 1 draw Gamma(a + 1) and multiply by
    u^(1/a) (added as log(u)/a in log space, so tiny a does not underflow to 0).
    """
    dtype = np.dtype(get_aval(a).dtype)
    shape = tuple(a.shape)
    one = _const(1.0, dtype)
    valid = a >= _const(0.0, dtype)  # False for NaN
    finite = jnp.isfinite(a)
    safe_a = jnp.where(valid & finite, a, one)
    boost = safe_a < one
    d = jnp.where(boost, safe_a + one, safe_a) - _const(1.0 / 3.0, dtype)
    c = one / jnp.sqrt(_const(9.0, dtype) * d)
    (l0, l1), (b0, b1) = _subkeys(k0, k1, 2)

    def not_done(state):
        rounds, done, _ = state
        return ~jnp.all(done) & (rounds < np.uint32(_MAX_REJECTION_ROUNDS))

    def propose(state):
        rounds, done, accepted = state
        x, u = _normal_and_uniform(*_fold_words(l0, l1, rounds), shape, dtype)
        v = one + c * x
        v = v * v * v
        positive = v > _const(0.0, dtype)
        log_v = jnp.log(jnp.where(positive, v, one))
        bound = _const(0.5, dtype) * x * x + d - d * v + d * log_v
        ok = positive & (jnp.log(u) < bound)
        accepted = jnp.where(ok & ~done, d * v, accepted)
        return rounds + np.uint32(1), done | ok, accepted

    state = (jnp.zeros((), _U32), jnp.zeros(shape, bool), jnp.ones(shape, dtype))
    _, _, dv = lax.while_loop(not_done, propose, state)
    log_boost = jnp.log(_unit(b0, b1, shape, dtype)) / safe_a
    if log_space:
        out = jnp.log(dv) + jnp.where(boost, log_boost, _const(0.0, dtype))
    else:
        out = dv * jnp.where(boost, jnp.exp(log_boost), one)
    # Out-of-domain shapes: a = inf gives inf (log inf), a < 0 or NaN gives NaN.
    out = jnp.where(valid & ~finite, _const(np.inf, dtype), out)
    out = jnp.where(valid, out, _const(np.nan, dtype))
    # The rejection loop itself is not differentiated: the derivative in a is attached to the
    # final draw (see _with_shape_gradient).
    return _with_shape_gradient(a, lax.stop_gradient(out), log_space)


@partial(custom_jvp, nondiff_argnums=(2,))
def _with_shape_gradient(a: Any, draw: Any, log_space: bool) -> Any:
    """``draw`` (a Gamma(``a``, 1) draw, or its log), carrying its derivative in ``a``.

    The derivative is the implicit reparameterisation one: a draw x is F^-1(u; a) for the
    quantile u = P(a, x), and holding u fixed, dx/da = -(dP/da)(a, x) / p(a, x) =
    ``lax.random_gamma_grad(a, x)`` (JAX's convention for its gamma sampler); in log space
    d log x / da = random_gamma_grad(a, x) / x, computed from log x so that it stays finite
    where x underflows. It needs only (a, x), so the a < 1 boost path needs no chain rule of
    its own: the boosted x = y u^(1/a) (y ~ Gamma(a + 1), u uniform) is itself exactly
    Gamma(a, 1)-distributed, and is differentiated like any other draw at its own quantile.
    (Differentiating the boost pathwise instead, random_gamma_grad(a + 1, y) x / y -
    x log(u) / a^2, is another unbiased estimator of the same expected gradient, but not the
    per-draw derivative at fixed quantile, and would need y and u kept.)
    """
    return draw


@_with_shape_gradient.defjvp
def _with_shape_gradient_jvp(log_space: bool, primals: tuple, tangents: tuple) -> tuple:
    (a, draw), (a_dot, _) = primals, tangents
    prim = _igamma.log_gamma_sample_grad_p if log_space else _igamma.random_gamma_grad_p
    return draw, lax.mul(a_dot, prim.bind(a, draw))


def _gamma(name: str, key: Any, a: Any, shape: Optional[Shape], dtype: Any,
           log_space: bool) -> Any:
    k0, k1, _ = _single_key(key, name)
    dtype = _float_dtype(dtype, name)
    a, = _float_params(name, dtype, a)
    shape = _sample_shape(name, shape, a)
    return _marsaglia_tsang(k0, k1, jnp.broadcast_to(a, shape), log_space)


def gamma(key: Any, a: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Gamma draws with shape parameter ``a`` and scale 1 (Marsaglia–Tsang); ``shape``
    defaults to ``a``'s shape. Scale by ``theta`` for Gamma(a, theta).

    Example: ``random.gamma(key, jnp.array([0.5, 2.0, 10.0]))``.
    """
    return _gamma("gamma", key, a, shape, dtype, False)


def loggamma(key: Any, a: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Logs of gamma draws, computed in log space: accurate (finite) for tiny ``a``, where
    ``gamma`` itself underflows to 0.

    Example: ``random.loggamma(key, 1e-3, (10,))``.
    """
    return _gamma("loggamma", key, a, shape, dtype, True)


def beta(key: Any, a: Any, b: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Beta(``a``, ``b``) draws ``G_a / (G_a + G_b)``, formed from log-gamma draws so that
    small parameters do not give 0/0; ``shape`` defaults to the parameters' broadcast shape.

    Example: ``random.beta(key, 2.0, 5.0, (100,))``.
    """
    k0, k1, _ = _single_key(key, "beta")
    dtype = _float_dtype(dtype, "beta")
    a, b = _float_params("beta", dtype, a, b)
    shape = _sample_shape("beta", shape, a, b)
    (a0, a1), (b0, b1) = _subkeys(k0, k1, 2)
    log_a = _marsaglia_tsang(a0, a1, jnp.broadcast_to(a, shape), True)
    log_b = _marsaglia_tsang(b0, b1, jnp.broadcast_to(b, shape), True)
    top = jnp.maximum(log_a, log_b)
    scaled_a, scaled_b = jnp.exp(log_a - top), jnp.exp(log_b - top)
    return scaled_a / (scaled_a + scaled_b)


def dirichlet(key: Any, alpha: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Dirichlet(``alpha``) draws over ``alpha``'s last axis (a softmax of log-gamma draws);
    the result's shape is ``shape + alpha.shape[-1:]``, ``shape`` defaulting to
    ``alpha.shape[:-1]``.

    Example: ``random.dirichlet(key, jnp.array([1.0, 2.0, 3.0]), (100,))``.
    """
    k0, k1, _ = _single_key(key, "dirichlet")
    dtype = _float_dtype(dtype, "dirichlet")
    alpha, = _float_params("dirichlet", dtype, alpha)
    if alpha.ndim < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {alpha.ndim}"
                         f"{_where(None)}")
    batch = tuple(alpha.shape[:-1])
    if shape is None:
        shape = batch
    else:
        shape = _shape_tuple(shape, "dirichlet")
        _check_broadcast("dirichlet", shape, batch)
    full = shape + tuple(alpha.shape[-1:])
    log_g = _marsaglia_tsang(k0, k1, jnp.broadcast_to(alpha, full), True)
    log_g = log_g - jnp.max(log_g, axis=-1, keepdims=True)
    g = jnp.exp(log_g)
    return g / jnp.sum(g, axis=-1, keepdims=True)


def chisquare(key: Any, df: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Chi-square draws with ``df`` degrees of freedom: ``2 * Gamma(df / 2)``.

    Example: ``random.chisquare(key, 3.0, (100,))``.
    """
    k0, k1, _ = _single_key(key, "chisquare")
    dtype = _float_dtype(dtype, "chisquare")
    df, = _float_params("chisquare", dtype, df)
    shape = _sample_shape("chisquare", shape, df)
    half = jnp.broadcast_to(df / _const(2.0, dtype), shape)
    return _const(2.0, dtype) * jnp.exp(_marsaglia_tsang(k0, k1, half, True))


def t(key: Any, df: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Student's t draws with ``df`` degrees of freedom: ``z * sqrt(df / chi2(df))``.

    Example: ``random.t(key, 5.0, (100,))``.
    """
    k0, k1, _ = _single_key(key, "t")
    dtype = _float_dtype(dtype, "t")
    df, = _float_params("t", dtype, df)
    shape = _sample_shape("t", shape, df)
    (n0, n1), (g0, g1) = _subkeys(k0, k1, 2)
    z = _std_normal(n0, n1, shape, dtype)
    half = jnp.broadcast_to(df / _const(2.0, dtype), shape)
    g = _marsaglia_tsang(g0, g1, half, False)
    return z * jnp.sqrt(half / g)


def f(key: Any, dfnum: Any, dfden: Any, shape: Optional[Shape] = None,
      dtype: Any = None) -> Any:
    """F draws: ``(chi2(dfnum) / dfnum) / (chi2(dfden) / dfden)``.

    Example: ``random.f(key, 5.0, 10.0, (100,))``.
    """
    k0, k1, _ = _single_key(key, "f")
    dtype = _float_dtype(dtype, "f")
    dfnum, dfden = _float_params("f", dtype, dfnum, dfden)
    shape = _sample_shape("f", shape, dfnum, dfden)
    (d0, d1), (n0, n1) = _subkeys(k0, k1, 2)
    two = _const(2.0, dtype)
    log_num = _marsaglia_tsang(n0, n1, jnp.broadcast_to(dfnum / two, shape), True)
    log_den = _marsaglia_tsang(d0, d1, jnp.broadcast_to(dfden / two, shape), True)
    # The ratio in log space: no overflow of either chi-square for huge df.
    return jnp.exp(log_num - log_den) * (dfden / dfnum)


def _generalized_normal(k0: Any, k1: Any, p: Any, shape: tuple, dtype: np.dtype) -> Any:
    (g0, g1), (r0, r1) = _subkeys(k0, k1, 2)
    inv_p = _const(1.0, dtype) / p
    g = _marsaglia_tsang(g0, g1, jnp.broadcast_to(inv_p, shape), False)
    sign = rademacher(jnp.stack([r0, r1]), shape, dtype)
    return sign * g ** inv_p


def generalized_normal(key: Any, p: float, shape: Shape = (), dtype: Any = None) -> Any:
    """Generalized normal draws (density proportional to ``exp(-|x|**p)``): ``p = 2`` is a
    normal with variance 1/2, ``p = 1`` a Laplace.

    Example: ``random.generalized_normal(key, 1.5, (100,))``.
    """
    k0, k1, _ = _single_key(key, "generalized_normal")
    shape = _shape_tuple(shape, "generalized_normal")
    dtype = _float_dtype(dtype, "generalized_normal")
    p, = _float_params("generalized_normal", dtype, p)
    return _generalized_normal(k0, k1, p, shape, dtype)


def ball(key: Any, d: int, p: float = 2, shape: Shape = (), dtype: Any = None) -> Any:
    """Points uniform in the ``d``-dimensional unit ``p``-norm ball; result shape
    ``shape + (d,)``.

    Example: ``random.ball(key, 3, shape=(100,))``.
    """
    k0, k1, _ = _single_key(key, "ball")
    shape = _shape_tuple(shape, "ball")
    dtype = _float_dtype(dtype, "ball")
    try:
        d = int(np.asarray(d).item()) if not isinstance(d, int) else d
    except Exception:
        raise TypeError(f"ball: d must be a concrete integer (static under jit), got {d!r}"
                        f"{_where(None)}") from None
    if d < 0:
        raise ValueError(f"ball: d must be non-negative, got {d}{_where(None)}")
    p, = _float_params("ball", dtype, p)
    (g0, g1), (e0, e1) = _subkeys(k0, k1, 2)
    g = _generalized_normal(g0, g1, p, shape + (d,), dtype)
    e = -jnp.log1p(-_unit(e0, e1, shape, dtype))
    radius = (jnp.sum(jnp.abs(g) ** p, axis=-1) + e) ** (_const(1.0, dtype) / p)
    return g / radius[..., None]


# --------------------------------------------------------------------------------------------
# Poisson (Knuth for small rates, Hörmann's PTRS for large ones)
# --------------------------------------------------------------------------------------------

def _poisson_knuth(k0: Any, k1: Any, lam: Any) -> Any:
    """Poisson draws for lam < 10: count uniforms until their product drops below exp(-lam)
    (summed in log space)."""
    shape = tuple(lam.shape)
    f32 = np.dtype(np.float32)

    def not_done(state):
        rounds, done = state[0], state[1]
        return ~jnp.all(done) & (rounds < np.uint32(_MAX_REJECTION_ROUNDS))

    def multiply(state):
        rounds, done, count, log_product, neg_lam = state
        u0, u1 = _fold_words(k0, k1, rounds)
        log_product = log_product + jnp.log(_unit(u0, u1, shape, f32))
        stop = log_product < neg_lam
        count = jnp.where(done | stop, count, count + 1)
        return rounds + np.uint32(1), done | stop, count, log_product, neg_lam

    # -lam rides in the loop state: read from outside the loop, IREE 3.13 fuses its
    # computation into the body's dispatch together with the cond's reduction, and that
    # dispatch then needs 9 bytes of stack per element (over the 32 KiB limit at 100 000).
    state = (jnp.zeros((), _U32), jnp.zeros(shape, bool), jnp.zeros(shape, np.int32),
             jnp.zeros(shape, f32), -lam)
    return lax.while_loop(not_done, multiply, state)[2]


def _poisson_ptrs(k0: Any, k1: Any, lam: Any) -> Any:
    """Poisson draws for lam >= 10: Hörmann's transformed rejection with squeeze (PTRS)."""
    f32 = np.dtype(np.float32)
    shape = tuple(lam.shape)
    c = lambda v: _const(v, f32)  # noqa: E731
    sqrt_lam, log_lam = jnp.sqrt(lam), jnp.log(lam)
    b = c(0.931) + c(2.53) * sqrt_lam
    a = c(-0.059) + c(0.02483) * b
    log_inv_alpha = jnp.log(c(1.1239) + c(1.1328) / (b - c(3.4)))
    v_r = c(0.9277) - c(3.6224) / (b - c(2.0))

    def not_done(state):
        rounds, done, _ = state
        return ~jnp.all(done) & (rounds < np.uint32(_MAX_REJECTION_ROUNDS))

    def propose(state):
        rounds, done, accepted = state
        u, v = _two_units(*_fold_words(k0, k1, rounds), shape)
        u = u - c(0.5)
        us = c(0.5) - jnp.abs(u)
        k = jnp.floor((c(2.0) * a / us + b) * u + lam + c(0.43))
        quick = (us >= c(0.07)) & (v <= v_r)
        hopeless = (k < c(0.0)) | ((us < c(0.013)) & (v > us))
        log_ratio = jnp.log(v) + log_inv_alpha - jnp.log(a / (us * us) + b)
        exact = log_ratio <= -lam + k * log_lam - lax.lgamma(k + c(1.0))
        ok = quick | (~hopeless & exact)
        accepted = jnp.where(ok & ~done, k, accepted)
        return rounds + np.uint32(1), done | ok, accepted

    state = (jnp.zeros((), _U32), jnp.zeros(shape, bool), jnp.zeros(shape, f32))
    return lax.while_loop(not_done, propose, state)[2]


def poisson(key: Any, lam: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Poisson draws with rate ``lam`` (int32 by default); ``shape`` defaults to ``lam``'s.
    Knuth's method for ``lam < 10``, Hörmann's transformed rejection (PTRS) above; ``lam = 0``
    gives 0, and an invalid rate (negative, NaN or inf) gives -1.

    Example: ``random.poisson(key, jnp.array([0.5, 3.0, 100.0]))``.
    """
    k0, k1, _ = _single_key(key, "poisson")
    dtype = _int_dtype(dtype, "poisson", "iuf", "a numeric dtype")
    check_arraylike("poisson", lam)
    lam = _param(lam, np.dtype(np.float32))
    shape = _sample_shape("poisson", shape, lam)
    lam = lax.stop_gradient(jnp.broadcast_to(lam, shape))
    valid = (lam >= _const(0.0, np.dtype(np.float32))) & jnp.isfinite(lam)
    small = lam < _const(10.0, np.dtype(np.float32))
    (s0, s1), (l0, l1) = _subkeys(k0, k1, 2)
    # Each loop sees harmless rates where the other method applies (or the rate is invalid),
    # so those entries stop at once.
    knuth = _poisson_knuth(s0, s1, jnp.where(small & valid, lam, _const(0.0, np.float32)))
    ptrs = _poisson_ptrs(l0, l1, jnp.where(small | ~valid, _const(1e5, np.float32), lam))
    count = jnp.where(small, knuth, ptrs.astype(np.int32))
    count = jnp.where(valid, count, -1)
    return jnp.where(lam == _const(0.0, np.float32), 0, count).astype(dtype)


# --------------------------------------------------------------------------------------------
# Multivariate normal
# --------------------------------------------------------------------------------------------

def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Optional[Shape] = None,
                        dtype: Any = None, method: str = "cholesky") -> Any:
    """Multivariate normal draws ``mean + L @ z`` with ``L = cholesky(cov)``; the result's
    shape is ``shape + mean.shape[-1:]``, ``shape`` defaulting to the broadcast of
    ``mean.shape[:-1]`` and ``cov.shape[:-2]``. Only ``method='cholesky'`` is available.

    Example: ``random.multivariate_normal(key, jnp.zeros(2), jnp.array([[2., 1.], [1., 2.]]),
    (1000,))``.
    """
    k0, k1, _ = _single_key(key, "multivariate_normal")
    check_arraylike("multivariate_normal", mean, cov)
    if method not in ("svd", "eigh", "cholesky"):
        raise ValueError(f"method must be one of {{'svd', 'eigh', 'cholesky'}}{_where(None)}")
    if method != "cholesky":
        raise NotImplementedError(f"multivariate_normal: method={method!r} needs "
                                  f"jnp.linalg.{method}, which pyree does not have yet; use "
                                  f"method='cholesky'{_where(None)}")
    mean, cov = jnp.asarray(mean), jnp.asarray(cov)
    common = dtypes.result_type(mean, cov)
    if np.dtype(common).kind not in "fc":
        common = dtypes.canonicalize_dtype(float)
    dtype = np.dtype(common) if dtype is None else _float_dtype(dtype, "multivariate_normal")
    mean, cov = _param(mean, dtype), _param(cov, dtype)
    if mean.ndim < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                         f"{mean.ndim}{_where(None)}")
    if cov.ndim < 2:
        raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                         f"{cov.ndim}{_where(None)}")
    n = mean.shape[-1]
    if tuple(cov.shape[-2:]) != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, "
                         f"but got cov.shape == {tuple(cov.shape)}{_where(None)}")
    batch = (tuple(mean.shape[:-1]), tuple(cov.shape[:-2]))
    if shape is None:
        shape = tuple(np.broadcast_shapes(*batch))
    else:
        shape = _shape_tuple(shape, "multivariate_normal")
        _check_broadcast("multivariate_normal", shape, *batch)
    factor = jnp.linalg.cholesky(cov)
    z = _std_normal(k0, k1, shape + (n,), dtype)
    return mean + jnp.matmul(factor, z[..., None])[..., 0]


# --------------------------------------------------------------------------------------------
# Binomial (inversion for small means, Hörmann's BTRS for large ones), multinomial, orthogonal
# --------------------------------------------------------------------------------------------

def _unit_pair(k0: Any, k1: Any, shape: tuple, dtype: np.dtype) -> tuple[Any, Any]:
    """Two independent [0, 1) uniform arrays of ``dtype`` (one Threefry block in float32)."""
    if dtype.itemsize == 8:
        (a0, a1), (b0, b1) = _subkeys(k0, k1, 2)
        return _unit(a0, a1, shape, dtype), _unit(b0, b1, shape, dtype)
    first, second = _two_units(k0, k1, shape)
    return first.astype(dtype), second.astype(dtype)


def _binomial_inversion(k0: Any, k1: Any, n: Any, p: Any) -> Any:
    """Binomial draws for n * p < 10: the number of geometric waiting times (trials up to and
    including a success) that fit in n trials."""
    shape, dtype = tuple(n.shape), np.dtype(n.dtype)
    one = _const(1.0, dtype)

    def not_done(state):
        rounds, done = state[0], state[1]
        return ~jnp.all(done) & (rounds < np.uint32(_MAX_REJECTION_ROUNDS))

    def wait(state):
        rounds, done, count, trials, n_, log_q = state
        u = _unit(*_fold_words(k0, k1, rounds), shape, dtype)
        # log(u) / log(1 - p) > 0; u = 0 (or p = 0) gives inf: no success within n trials.
        trials = trials + jnp.maximum(jnp.ceil(jnp.log(u) / log_q), one)
        stop = trials > n_
        count = jnp.where(done | stop, count, count + one)
        return rounds + np.uint32(1), done | stop, count, trials, n_, log_q

    # n and log(1 - p) ride in the loop state (see _poisson_knuth on IREE's fusion).
    state = (jnp.zeros((), _U32), jnp.zeros(shape, bool), jnp.zeros(shape, dtype),
             jnp.zeros(shape, dtype), n, jnp.log1p(-p))
    return lax.while_loop(not_done, wait, state)[2]


def _binomial_btrs(k0: Any, k1: Any, n: Any, p: Any) -> Any:
    """Binomial draws for n * p >= 10, p <= 1/2: Hörmann's transformed rejection with squeeze
    (BTRS, 1993)."""
    shape, dtype = tuple(n.shape), np.dtype(n.dtype)
    c = lambda v: _const(v, dtype)  # noqa: E731
    q = c(1.0) - p
    spq = jnp.sqrt(n * p * q)
    b = c(1.15) + c(2.53) * spq
    a = c(-0.0873) + c(0.0248) * b + c(0.01) * p
    mid = n * p + c(0.5)
    v_r = c(0.92) - c(4.2) / b
    alpha = (c(2.83) + c(5.1) / b) * spq
    log_odds = jnp.log(p / q)
    mode = jnp.floor((n + c(1.0)) * p)
    log_h = lax.lgamma(mode + c(1.0)) + lax.lgamma(n - mode + c(1.0))

    def not_done(state):
        rounds, done, _ = state
        return ~jnp.all(done) & (rounds < np.uint32(_MAX_REJECTION_ROUNDS))

    def propose(state):
        rounds, done, accepted = state
        u, v = _unit_pair(*_fold_words(k0, k1, rounds), shape, dtype)
        u = u - c(0.5)
        us = c(0.5) - jnp.abs(u)
        k = jnp.floor((c(2.0) * a / us + b) * u + mid)
        inside = (k >= c(0.0)) & (k <= n)
        quick = (us >= c(0.07)) & (v <= v_r)
        k_safe = jnp.clip(k, c(0.0), n)   # (lgamma of the rejected ones stays finite)
        log_v = jnp.log(v * alpha / (a / (us * us) + b))
        exact = log_v <= (log_h - lax.lgamma(k_safe + c(1.0)) - lax.lgamma(n - k_safe + c(1.0))
                          + (k_safe - mode) * log_odds)
        ok = inside & (quick | exact)
        accepted = jnp.where(ok & ~done, k, accepted)
        return rounds + np.uint32(1), done | ok, accepted

    state = (jnp.zeros((), _U32), jnp.zeros(shape, bool), jnp.zeros(shape, dtype))
    return lax.while_loop(not_done, propose, state)[2]


def binomial(key: Any, n: Any, p: Any, shape: Optional[Shape] = None, dtype: Any = None) -> Any:
    """Binomial draws: successes in ``n`` trials (a float array, non-integers rounded down)
    of probability ``p``, as floats; ``shape`` defaults to the broadcast of ``n``'s and
    ``p``'s. Inversion (counting geometric waiting times) where ``n * min(p, 1 - p) < 10``,
    Hörmann's BTRS rejection above; invalid parameters (``n < 0``, ``p`` outside [0, 1],
    NaN) give NaN, as in JAX.

    Example: ``random.binomial(key, 20.0, 0.3, (1000,))``  (mean 6, variance 4.2)
    """
    k0, k1, _ = _single_key(key, "binomial")
    dtype = _float_dtype(dtype, "binomial")
    n, p = _float_params("binomial", dtype, n, p)
    shape = _sample_shape("binomial", shape, n, p)
    n = lax.stop_gradient(jnp.broadcast_to(jnp.floor(n), shape))
    p = lax.stop_gradient(jnp.broadcast_to(p, shape))
    zero, one = _const(0.0, dtype), _const(1.0, dtype)
    valid = (n >= zero) & jnp.isfinite(n) & (p >= zero) & (p <= one)
    flip = p > _const(0.5, dtype)
    q = jnp.where(flip, one - p, p)                       # <= 1/2: count the rarer outcome
    small = n * q < _const(10.0, dtype)
    (s0, s1), (l0, l1) = _subkeys(k0, k1, 2)
    # Each method sees harmless parameters where the other applies, so those stop at once.
    inverted = _binomial_inversion(s0, s1, jnp.where(small & valid, n, zero),
                                   jnp.where(small & valid, q, zero))
    rejected = _binomial_btrs(l0, l1, jnp.where(small | ~valid, _const(100.0, dtype), n),
                              jnp.where(small | ~valid, _const(0.5, dtype), q))
    count = jnp.where(small, inverted, rejected)
    count = jnp.where(flip, n - count, count)
    return jnp.where(valid, count, _const(np.nan, dtype))


def multinomial(key: Any, n: Any, p: Any, *, shape: Optional[Shape] = None, dtype: Any = None,
                unroll: Union[int, bool] = 1) -> Any:
    """Multinomial counts of ``n`` trials over the outcomes of the last axis of ``p``
    (probabilities, normalized here): one binomial per outcome, of the trials left and the
    outcome's share of the probability left, in a scan over outcomes. As in JAX's
    implementation, ``shape`` (default ``p.shape``) is the whole result shape, outcomes
    last; ``n`` broadcasts to ``shape[:-1]``.

    Example: ``random.multinomial(key, 10.0, jnp.array([0.2, 0.3, 0.5]))``  (sums to 10)
    """
    k0, k1, _ = _single_key(key, "multinomial")
    check_arraylike("multinomial", n, p)
    dtype = _float_dtype(dtype, "multinomial")
    p = jnp.asarray(p)
    work = np.dtype(p.dtype) if np.dtype(p.dtype).kind == "f" else dtype
    n, p = _float_params("multinomial", work, n, p)
    shape = tuple(p.shape) if shape is None else _shape_tuple(shape, "multinomial")
    if not shape:
        raise ValueError(f"multinomial: p needs an outcome axis{_where(None)}")
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    left = lax.cumsum(p, 0, reverse=True)                  # probability of this outcome or later
    ratios = jnp.clip(p / jnp.where(left == 0, 1, left), 0, 1)
    keys = _split_words(k0, k1, (shape[-1],))

    def draw(remaining, ratio_key):
        ratio, words = ratio_key
        count = binomial(words, remaining, ratio, dtype=np.dtype(remaining.dtype))
        return remaining - count, count

    _, counts = lax.scan(draw, n, (ratios, keys))
    return jnp.moveaxis(counts, 0, -1).astype(dtype)


def orthogonal(key: Any, n: int, shape: Shape = (), dtype: Any = None, m: Optional[int] = None,
               *, out_sharding: Any = None) -> Any:
    """Matrices uniform (Haar) on the orthogonal group O(n), or semi-orthogonal ``n x m`` ones
    (orthonormal rows if ``n <= m``, columns if ``m <= n``): the Q of a Gaussian matrix's QR
    with its columns' signs fixed by R's diagonal (Mezzadri 2007). Shape ``shape + (n, m)``.

    Example: ``q = random.orthogonal(key, 3)``; ``q.T @ q`` is the identity.
    """
    k0, k1, _ = _single_key(key, "orthogonal")
    shape = _shape_tuple(shape, "orthogonal")
    dtype = _check_dtype(dtypes.canonicalize_dtype(float) if dtype is None else dtype,
                         "orthogonal", "fc", "a float or complex dtype")
    n = _static_int(n, "orthogonal", "n")
    m = n if m is None else _static_int(m, "orthogonal", "m")
    z = _std_normal(k0, k1, shape + (max(n, m), min(n, m)), dtype)
    q, r = jnp.linalg.qr(z)
    d = jnp.diagonal(r, axis1=-2, axis2=-1)
    phase = d / jnp.abs(d) if dtype.kind == "c" else jnp.sign(d)
    q = q * phase[..., None, :]
    return jnp.swapaxes(q, -1, -2) if n < m else q


def _static_int(value: Any, name: str, what: str) -> int:
    try:
        return int(value) if isinstance(value, (int, np.integer)) else int(
            np.asarray(value).item())
    except Exception:
        raise TypeError(f"{name}: {what} must be a concrete integer, got {value!r}"
                        f"{_where(None)}") from None
