"""``pyree.nn.initializers``: JAX's parameter initializers, with ``jax.nn.initializers``'
names, signatures, defaults and values (the same key gives the same weights as JAX: bit for bit
for the uniform-based ones, within a few ulp for the normal-based ones).

An initializer is a function ``init(key, shape, dtype=None) -> Array``; ``dtype=None`` means
the default float type (float32, or float64 with x64 enabled). The factories (``normal``,
``glorot_uniform``, ``variance_scaling``...) take hyper-parameters and return one::

    import pyree.random as random
    from pyree.nn import initializers

    init = initializers.glorot_uniform()
    w = init(random.key(0), (784, 256))              # float32, Var(w) = 2 / (784 + 256)
    b = initializers.zeros(random.key(1), (256,))

Initializers are composed from ``pyree.random`` and ``pyree.numpy``, so they run eagerly and
under ``jit`` (with the key a traced argument; shape and dtype are static), with typed keys
(``random.key``) and raw keys (``random.PRNGKey``).
"""
from __future__ import annotations

import math
import operator
import typing
from typing import Any, Protocol, Sequence, Union

import numpy as np

from pyree import dtypes, lax
from pyree import numpy as jnp
from pyree import random
from pyree.numpy.linalg import _loop  # a for loop as a while_loop beyond two steps
from pyree.random import _shape_tuple
from pyree.numpy._util import requested_dtype
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import get_aval

__all__ = [
    "Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
    "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
    "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
    "variance_scaling", "xavier_normal", "xavier_uniform", "zeros",
]

Shape = Sequence[int]
Axes = Union[int, Sequence[int]]

# The standard deviation of a standard normal truncated to (-2, 2), and of a complex standard
# normal whose modulus is truncated to 2: variance_scaling divides by them so that the
# *truncated* samples have the requested variance.
_TRUNCATED_NORMAL_STDDEV = 0.87962566103423978
_COMPLEX_TRUNCATED_NORMAL_STDDEV = 0.95311164380491208

_MODES = ("fan_in", "fan_out", "fan_avg", "fan_geo_avg")
_DISTRIBUTIONS = ("truncated_normal", "normal", "uniform")


@typing.runtime_checkable
class Initializer(Protocol):
    """What the factories of this module return: ``init(key, shape, dtype=None) -> Array``.

    Example::

        isinstance(initializers.he_normal(), initializers.Initializer)   # True
    """

    def __call__(self, key: Any, shape: Shape, dtype: Any = None,
                 out_sharding: Any = None) -> Any:
        ...


# -- helpers -------------------------------------------------------------------------------------


def _init_dtype(dtype: Any, name: str) -> np.dtype:
    """``dtype`` as a numpy dtype; None means the default float type (float64 under x64), and
    a 64-bit request without x64 warns and gives 32 bits, as in JAX."""
    if dtype is None:
        return dtypes.canonicalize_dtype(float)
    try:
        np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name}: {dtype!r} is not a dtype{_where(None)}") from None
    return requested_dtype(dtype)


def _no_sharding(out_sharding: Any, name: str) -> None:
    if out_sharding is not None:
        raise NotImplementedError(f"{name}: out_sharding is not supported (pyree runs on one "
                                  f"device); pass None{_where(None)}")


def _is_static(x: Any) -> bool:
    """True for Python numbers and numpy values: hyper-parameters known while tracing."""
    return isinstance(x, (bool, int, float, complex, np.bool_, np.number, np.ndarray))


def _as_dtype(x: Any, dtype: np.dtype) -> Any:
    """``jnp.array(x, dtype)``: a numpy constant for static ``x``, a conversion otherwise."""
    if _is_static(x):
        return np.asarray(x, dtype=dtype)
    return lax.convert_element_type(jnp.asarray(x), dtype)


def _is_float(dtype: np.dtype) -> bool:
    return dtypes.issubdtype(dtype, np.floating)


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.zeros((), dtype).real.dtype)


# -- constant initializers -----------------------------------------------------------------------


def zeros(key: Any, shape: Shape, dtype: Any = None, out_sharding: Any = None) -> Any:
    """An initializer that returns zeros (``key`` is ignored).

    Example::

        initializers.zeros(random.key(42), (2, 3))   # [[0., 0., 0.], [0., 0., 0.]]
    """
    _no_sharding(out_sharding, "zeros")
    return jnp.zeros(_shape_tuple(shape, "zeros"), _init_dtype(dtype, "zeros"))


def ones(key: Any, shape: Shape, dtype: Any = None, out_sharding: Any = None) -> Any:
    """An initializer that returns ones (``key`` is ignored).

    Example::

        initializers.ones(random.key(42), (3, 2), jnp.float16)   # float16 ones
    """
    _no_sharding(out_sharding, "ones")
    return jnp.ones(_shape_tuple(shape, "ones"), _init_dtype(dtype, "ones"))


def constant(value: Any, dtype: Any = None) -> Initializer:
    """Builds an initializer that returns arrays full of ``value`` (``dtype``: the
    initializer's default dtype).

    Example::

        initializers.constant(-7)(random.key(42), (2, 3))   # [[-7., -7., -7.], [-7., ...]]
    """
    default_dtype = dtype

    def init(key: Any, shape: Shape, dtype: Any = default_dtype,
             out_sharding: Any = None) -> Any:
        _no_sharding(out_sharding, "constant")
        return jnp.full(_shape_tuple(shape, "constant"), value,
                        dtype=_init_dtype(dtype, "constant"))

    return init


# -- simple distributions ------------------------------------------------------------------------


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """Builds an initializer of uniform values in ``[0, scale)``.

    Example::

        initializers.uniform(10.0)(random.key(42), (2, 3))   # values in [0, 10)
    """
    default_dtype = dtype

    def init(key: Any, shape: Shape, dtype: Any = default_dtype,
             out_sharding: Any = None) -> Any:
        _no_sharding(out_sharding, "uniform")
        dtype = _init_dtype(dtype, "uniform")
        draws = random.uniform(key, _shape_tuple(shape, "uniform"), dtype)
        return draws * _as_dtype(scale, dtype)

    return init


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    """Builds an initializer of normal values with mean 0 and standard deviation ``stddev``.

    Example::

        initializers.normal(5.0)(random.key(42), (2, 3))
    """
    default_dtype = dtype

    def init(key: Any, shape: Shape, dtype: Any = default_dtype,
             out_sharding: Any = None) -> Any:
        _no_sharding(out_sharding, "normal")
        dtype = _init_dtype(dtype, "normal")
        shape = _shape_tuple(shape, "normal")
        if dtype.kind == "c":
            if np.iscomplexobj(stddev):
                raise TypeError(f"normal: stddev must be real, got {stddev!r}{_where(None)}")
            return _complex_normal(key, shape, dtype, _as_dtype(stddev, _real_dtype(dtype)))
        return random.normal(key, shape, dtype) * _as_dtype(stddev, dtype)

    return init


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0,
                     upper: Any = 2.0) -> Initializer:
    """Builds an initializer of normal values truncated to ``(lower, upper)`` and then scaled
    by ``stddev``: the values lie in ``(lower * stddev, upper * stddev)``. Unlike
    ``variance_scaling``, ``stddev`` is that of the *untruncated* distribution (no correction).

    Example::

        initializers.truncated_normal(5.0)(random.key(42), (2, 3))   # all in (-10, 10)
    """
    default_dtype = dtype

    def init(key: Any, shape: Shape, dtype: Any = default_dtype,
             out_sharding: Any = None) -> Any:
        _no_sharding(out_sharding, "truncated_normal")
        dtype = _init_dtype(dtype, "truncated_normal")
        draws = random.truncated_normal(key, lower, upper, _shape_tuple(shape, "truncated_normal"),
                                        dtype)
        return draws * _as_dtype(stddev, dtype)

    return init


# -- variance scaling ----------------------------------------------------------------------------


def _axes_size(shape: tuple, axes: Axes, what: str, name: str) -> int:
    """The product of ``shape``'s sizes along ``axes`` (an int or a sequence of ints)."""
    single = isinstance(axes, (int, np.integer)) and not isinstance(axes, bool)
    try:
        axes = (operator.index(axes),) if single else tuple(operator.index(a) for a in axes)
    except TypeError:
        raise TypeError(f"{name}: {what} must be an int or a sequence of ints, got {axes!r}"
                        f"{_where(None)}") from None
    for axis in axes:
        if not -len(shape) <= axis < len(shape):
            raise IndexError(f"{name}: {what} {axis} is out of range for a weights shape "
                             f"{shape} of rank {len(shape)}{_where(None)}")
    return math.prod(shape[a] for a in axes)


def _compute_fans(shape: tuple, in_axis: Axes = -2, out_axis: Axes = -1,
                  batch_axis: Axes = (), name: str = "variance_scaling") -> tuple[float, float]:
    """(fan_in, fan_out) of a dense or convolutional weights shape: the input and output sizes,
    each times the receptive field size, the product of the axes that are neither input,
    output nor batch axes (a convolution kernel's spatial axes). Floats, as in JAX."""
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(f"{name}: can't compute input and output sizes of a {len(shape)}-"
                         f"dimensional weights shape {shape} with the default in_axis; it "
                         f"must be at least 2-d, or in_axis given explicitly{_where(None)}")
    in_size = _axes_size(shape, in_axis, "in_axis", name)
    out_size = _axes_size(shape, out_axis, "out_axis", name)
    batch_size = _axes_size(shape, batch_axis, "batch_axis", name)
    if in_size == 0 or out_size == 0 or batch_size == 0:
        # JAX divides by these sizes too, so a zero-size weights shape has no fans there either.
        raise ZeroDivisionError(f"{name}: the weights shape {shape} has a zero-size input, "
                                f"output or batch axis, so its fans are undefined"
                                f"{_where(None)}")
    receptive_field = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field, out_size * receptive_field


# The complex samplers work on real and imaginary parts and build the complex array last: the
# values equal JAX's complex arithmetic (whose imaginary operands are all 0 until the final
# exp(1j * angle)), and no complex constant reaches a jit program: under jit, lower.py's
# constant() fails on a complex scalar (ir.Attribute.parse of "dense<(re, im)>" gives a
# DenseTypedElementsAttr the bindings cannot cast).


def _polar(radius: Any, angle: Any, factor: Any, dtype: np.dtype) -> Any:
    """``factor * radius * exp(1j * angle)`` as a ``dtype`` array (all operands real)."""
    return lax.complex(factor * (radius * jnp.cos(angle)), factor * (radius * jnp.sin(angle)))


def _complex_uniform(key: Any, shape: tuple, dtype: np.dtype, factor: Any) -> Any:
    """``factor`` times complex values uniform on the disk of radius sqrt(2) (mean 0, variance
    1): radius ``sqrt(2 u)`` makes the area below each radius uniform, angle uniform."""
    real = _real_dtype(dtype)
    key_radius, key_angle = random.split(key)
    radius = jnp.sqrt(2 * random.uniform(key_radius, shape, real))
    angle = 2 * np.pi * random.uniform(key_angle, shape, real)
    return _polar(radius, angle, factor, dtype)


def _complex_normal(key: Any, shape: tuple, dtype: np.dtype, factor: Any) -> Any:
    """``factor`` times a complex standard normal: independent real and imaginary parts, each
    of variance 1/2 (drawn as ``jax.random.normal`` draws them for complex dtypes)."""
    real = _real_dtype(dtype)
    key_real, key_imag = random.split(key)
    sqrt2 = np.sqrt(np.asarray(2, real))
    return lax.complex(random.normal(key_real, shape, real) / sqrt2 * factor,
                       random.normal(key_imag, shape, real) / sqrt2 * factor)


def _complex_truncated_normal(key: Any, upper: float, shape: tuple, dtype: np.dtype,
                              factor: Any) -> Any:
    """``factor`` times a complex standard normal (variance 1 before truncation) with modulus
    below ``upper``: the modulus inverts its CDF ``1 - exp(-r^2)`` on ``[0, upper)``."""
    real = _real_dtype(dtype)
    key_radius, key_angle = random.split(key)
    mass = np.asarray(1, real) - np.exp(np.asarray(-(upper ** 2), real))
    t = mass * random.uniform(key_radius, shape, real)
    radius = jnp.sqrt(-jnp.log(1 - t))
    angle = 2 * np.pi * random.uniform(key_angle, shape, real)
    return _polar(radius, angle, factor, dtype)


def variance_scaling(scale: Any, mode: str, distribution: str, in_axis: Axes = -2,
                     out_axis: Axes = -1, batch_axis: Axes = (),
                     dtype: Any = None) -> Initializer:
    """Builds an initializer whose values have mean 0 and variance ``scale / n``, where ``n``
    is, by ``mode``: ``"fan_in"`` the number of inputs, ``"fan_out"`` the number of outputs,
    ``"fan_avg"`` their arithmetic mean, ``"fan_geo_avg"`` their geometric mean. Inputs and
    outputs are the sizes along ``in_axis`` and ``out_axis`` (ints or sequences), times the
    receptive field: the product of the axes that are neither those nor ``batch_axis`` (so a
    conv kernel ``(kh, kw, in, out)`` has ``fan_in = kh * kw * in``).

    ``distribution`` is ``"truncated_normal"`` (a normal truncated at 2 standard deviations,
    its scale corrected so that the variance after truncation is ``scale / n``), ``"normal"``
    or ``"uniform"`` (on ``[-sqrt(3 scale / n), sqrt(3 scale / n))``; for complex dtypes a
    uniform disk).

    Example::

        init = initializers.variance_scaling(2.0, "fan_in", "truncated_normal")
        w = init(random.key(0), (3, 3, 16, 32))    # Var(w) ~ 2 / (3 * 3 * 16)
    """
    if mode not in _MODES:
        raise ValueError(f"invalid mode for variance scaling initializer: {mode!r} (expected "
                         f"one of {', '.join(_MODES)}){_where(None)}")
    if distribution not in _DISTRIBUTIONS:
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution!r} (expected one of {', '.join(_DISTRIBUTIONS)})"
                         f"{_where(None)}")
    default_dtype = dtype

    def init(key: Any, shape: Shape, dtype: Any = default_dtype,
             out_sharding: Any = None) -> Any:
        _no_sharding(out_sharding, "variance_scaling")
        shape = _shape_tuple(shape, "variance_scaling")
        dtype = _init_dtype(dtype, "variance_scaling")
        if not (_is_float(dtype) or dtype.kind == "c"):
            raise ValueError(f"variance_scaling: dtype must be a floating or complex dtype, "
                             f"got {dtype}{_where(None)}")
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        denominator = {"fan_in": fan_in, "fan_out": fan_out,
                       "fan_avg": (fan_in + fan_out) / 2,
                       "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
        # The variance is rounded to dtype first and every factor below is computed in dtype,
        # in the order JAX does, so that the factor (and hence each weight) matches JAX's.
        # A complex variance (scale / n) is real: its real part serves the complex samplers.
        real = _real_dtype(dtype) if dtype.kind == "c" else dtype
        if _is_static(scale):
            variance = _as_dtype(np.real(scale / denominator), real)
            sqrt = np.sqrt
        else:
            variance = lax.convert_element_type(jnp.real(jnp.asarray(scale) / denominator), real)
            sqrt = jnp.sqrt
        if distribution == "truncated_normal":
            if _is_float(dtype):
                stddev = sqrt(variance) / np.asarray(_TRUNCATED_NORMAL_STDDEV, dtype)
                return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
            stddev = sqrt(variance) / np.asarray(_COMPLEX_TRUNCATED_NORMAL_STDDEV, real)
            return _complex_truncated_normal(key, 2, shape, dtype, stddev)
        if distribution == "normal":
            if dtype.kind == "c":
                return _complex_normal(key, shape, dtype, sqrt(variance))
            return random.normal(key, shape, dtype) * sqrt(variance)
        if _is_float(dtype):
            return random.uniform(key, shape, dtype, -1) * sqrt(variance * np.asarray(3, dtype))
        return _complex_uniform(key, shape, dtype, sqrt(variance))

    return init


def _variance_scaling_preset(scale: float, mode: str, distribution: str, doc: str):
    def factory(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                dtype: Any = None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis=in_axis,
                                out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)

    factory.__doc__ = doc
    return factory


glorot_uniform = _variance_scaling_preset(1.0, "fan_avg", "uniform", """\
Builds a Glorot (Xavier) uniform initializer: ``variance_scaling(1.0, "fan_avg", "uniform")``,
values uniform on ``[-limit, limit)`` with ``limit = sqrt(6 / (fan_in + fan_out))``.

Example::

    initializers.glorot_uniform()(random.key(42), (2, 3))
""")
glorot_uniform.__name__ = glorot_uniform.__qualname__ = "glorot_uniform"

glorot_normal = _variance_scaling_preset(1.0, "fan_avg", "truncated_normal", """\
Builds a Glorot (Xavier) normal initializer:
``variance_scaling(1.0, "fan_avg", "truncated_normal")``, variance ``2 / (fan_in + fan_out)``.

Example::

    initializers.glorot_normal()(random.key(42), (2, 3))
""")
glorot_normal.__name__ = glorot_normal.__qualname__ = "glorot_normal"

lecun_uniform = _variance_scaling_preset(1.0, "fan_in", "uniform", """\
Builds a LeCun uniform initializer: ``variance_scaling(1.0, "fan_in", "uniform")``, values
uniform on ``[-limit, limit)`` with ``limit = sqrt(3 / fan_in)``.

Example::

    initializers.lecun_uniform()(random.key(42), (2, 3))
""")
lecun_uniform.__name__ = lecun_uniform.__qualname__ = "lecun_uniform"

lecun_normal = _variance_scaling_preset(1.0, "fan_in", "truncated_normal", """\
Builds a LeCun normal initializer: ``variance_scaling(1.0, "fan_in", "truncated_normal")``,
variance ``1 / fan_in``.

Example::

    initializers.lecun_normal()(random.key(42), (2, 3))
""")
lecun_normal.__name__ = lecun_normal.__qualname__ = "lecun_normal"

he_uniform = _variance_scaling_preset(2.0, "fan_in", "uniform", """\
Builds a He (Kaiming) uniform initializer: ``variance_scaling(2.0, "fan_in", "uniform")``,
values uniform on ``[-limit, limit)`` with ``limit = sqrt(6 / fan_in)``.

Example::

    initializers.he_uniform()(random.key(42), (3, 3, 16, 32))   # a conv kernel
""")
he_uniform.__name__ = he_uniform.__qualname__ = "he_uniform"

he_normal = _variance_scaling_preset(2.0, "fan_in", "truncated_normal", """\
Builds a He (Kaiming) normal initializer: ``variance_scaling(2.0, "fan_in",
"truncated_normal")``, variance ``2 / fan_in``.

Example::

    initializers.he_normal()(random.key(42), (2, 3))
""")
he_normal.__name__ = he_normal.__qualname__ = "he_normal"

xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


# -- orthogonal ----------------------------------------------------------------------------------


def _householder_q(a: Any) -> Any:
    """The Q of the reduced QR decomposition of a tall matrix ``a`` (m x n, m >= n), with the
    signs chosen so that R's diagonal is positive: that Q is unique, so it agrees with any
    other QR's after the same sign fix (JAX's random.orthogonal makes it).

    Householder reflections ``H = I - 2 v v^T`` zero column ``k`` below the diagonal. Column
    ``k`` is picked with masks rather than slices, so that one loop body serves every ``k``
    and the program stays small under a ``while_loop`` (a Python loop would unroll n steps).
    """
    m, n = a.shape
    dtype = np.dtype(get_aval(a).dtype)
    rows = lax.iota(np.dtype(np.int32), m)
    cols = lax.iota(np.dtype(np.int32), n)
    zero = np.array(0, dtype)

    def reflect(k, state):
        r, reflectors, signs = state
        x = jnp.sum(jnp.where(cols[None, :] == k, r, zero), axis=1)
        x = jnp.where(rows >= k, x, zero)
        head = jnp.sum(jnp.where(rows == k, x, zero))
        norm = jnp.sqrt(jnp.sum(x * x))
        # v = x + sign(head) |x| e_k: adding (not subtracting) avoids cancellation; then
        # H x = -sign(head) |x| e_k, so R's diagonal entry has the sign -sign(head).
        head_sign = jnp.where(head >= 0, np.array(1, dtype), np.array(-1, dtype))
        v = x + jnp.where(rows == k, head_sign * norm, zero)
        v_norm = jnp.sqrt(jnp.sum(v * v))
        v = v / jnp.where(v_norm > 0, v_norm, np.array(1, dtype))
        r = r - 2 * v[:, None] * jnp.matmul(v, r)[None, :]
        reflectors = reflectors + jnp.where(cols[None, :] == k, v[:, None], zero)
        signs = signs + jnp.where(cols == k, -head_sign, zero)
        return r, reflectors, signs

    def apply_back(i, q):
        # Q = H_0 H_1 ... H_{n-1} I[:, :n], so the reflectors apply last to first.
        k = n - 1 - i
        v = jnp.sum(jnp.where(cols[None, :] == k, reflectors, zero), axis=1)
        return q - 2 * v[:, None] * jnp.matmul(v, q)[None, :]

    state = (a, jnp.zeros((m, n), dtype), jnp.zeros((n,), dtype))
    _, reflectors, signs = _loop(n, reflect, state)
    q = _loop(n, apply_back, jnp.eye(m, n, dtype=dtype))
    return q * signs[None, :]



def _random_orthogonal(key: Any, n: int, m: int, dtype: np.dtype) -> Any:
    """An n x m matrix with orthonormal rows (n <= m) or columns (n >= m), as
    ``jax.random.orthogonal(key, n, (), dtype, m)``: the sign-fixed Q of a Gaussian matrix."""
    tall = random.normal(key, (max(n, m), min(n, m)), dtype)
    # 16-bit types would lose orthogonality in the factorization: factor in float32.
    work = dtype if dtype.itemsize >= 4 else np.dtype(np.float32)
    q = _householder_q(tall.astype(work)).astype(dtype)
    return q.T if n < m else q


def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """Builds an initializer of (scaled) uniformly distributed orthogonal matrices: the shape
    is flattened to a matrix with ``shape[column_axis]`` columns and the product of the other
    sizes as rows; its rows or columns (whichever are fewer) are orthonormal.

    Example::

        w = initializers.orthogonal()(random.key(42), (3, 3))
        w @ w.T                                            # ~ identity
    """
    default_dtype = dtype

    def init(key: Any, shape: Shape, dtype: Any = default_dtype,
             out_sharding: Any = None) -> Any:
        _no_sharding(out_sharding, "orthogonal")
        dtype = _init_dtype(dtype, "orthogonal")
        shape = _shape_tuple(shape, "orthogonal")
        if len(shape) < 2:
            raise ValueError(f"orthogonal initializer requires at least a 2D shape, got "
                             f"{shape}{_where(None)}")
        if not _is_float(dtype):
            raise ValueError(f"orthogonal: dtype must be a floating dtype, got {dtype}"
                             f"{_where(None)}")
        if not -len(shape) <= column_axis < len(shape):
            raise IndexError(f"orthogonal: column_axis {column_axis} is out of range for a "
                             f"shape of rank {len(shape)}{_where(None)}")
        if 0 in shape:
            return jnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = _random_orthogonal(key, n_rows, n_cols, dtype)
        rest = tuple(d for i, d in enumerate(shape) if i != column_axis % len(shape))
        q = jnp.moveaxis(jnp.reshape(q, rest + (n_cols,)), -1, column_axis)
        return _as_dtype(scale, dtype) * q

    return init


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1,
                     dtype: Any = None) -> Initializer:
    """Builds an initializer of delta-orthogonal convolution kernels (Xiao et al. 2018): a 3-,
    4- or 5-d kernel ``(*spatial, in, out)`` (``in <= out``) that is zero except at the spatial
    centre, which holds an orthogonal ``in x out`` matrix.

    Example::

        k = initializers.delta_orthogonal()(random.key(42), (3, 3, 4, 4))
        k[1, 1] @ k[1, 1].T                                # ~ identity; k[0, 0] == 0
    """
    default_dtype = dtype

    def init(key: Any, shape: Shape, dtype: Any = default_dtype,
             out_sharding: Any = None) -> Any:
        _no_sharding(out_sharding, "delta_orthogonal")
        dtype = _init_dtype(dtype, "delta_orthogonal")
        shape = _shape_tuple(shape, "delta_orthogonal")
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"Delta orthogonal initializer requires a 3D, 4D or 5D shape, "
                             f"got {shape}{_where(None)}")
        if shape[-1] < shape[-2]:
            raise ValueError(f"delta_orthogonal: `fan_in` must be less or equal than "
                             f"`fan_out`, got shape {shape}{_where(None)}")
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(
            key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return jnp.zeros(shape, dtype).at[centre].set(matrix)

    return init
