"""``pyree.random``: JAX's explicit-key random numbers (Threefry-2x32), bit for bit.

Keys are counter-based: a key is two uint32 words, and every sample is a pure function of the
key and the sample's position, so results are reproducible and independent of jit/vmap. The
generator is Threefry-2x32 with 20 rounds in JAX's *partitionable* layout (the default of JAX
0.10): element ``i`` (row-major) of a request of shape ``s`` is ``threefry(key, (i >> 32,
i & 0xFFFFFFFF))``, its two output words xor-ed for 32-bit draws. So the same key gives the
same numbers as ``jax.random``::

    import pyree.random as random

    key = random.PRNGKey(0)                 # uint32[2]: [0, 0]
    key, sub = random.split(key)
    x = random.normal(sub, (3,))            # the same three float32s as jax.random.normal

Everything is composed from uint32 arithmetic on ``pyree.lax`` primitives, so it works eagerly,
under ``jit``, under ``vmap`` over a batch of keys, and ``grad`` flows through reparameterised
draws such as ``mu + sigma * normal(key, shape)``.

Keys come in two forms, as in JAX: raw ``uint32[..., 2]`` arrays (``PRNGKey``) and typed keys
(``key``), a :class:`PRNGKeyArray` wrapping such an array. A typed key has ``shape``, ``ndim``,
``size``, ``dtype`` (``key<fry>``), indexing, ``len`` and iteration; it is a pytree node whose
one child is its uint32 data, so it passes through ``jit``, ``vmap`` (batch axis 0) and
``tree_map`` (which see the uint32 data).
"""
from __future__ import annotations

import math
import operator
from typing import Any, Optional, Sequence, Union

import numpy as np

from pyree import dtypes, lax
from pyree._lax_special import fused_multiply_add as _fma
from pyree import numpy as jnp
from pyree.numpy._util import canonical_axis, check_arraylike, requested_dtype
from pyree.transpiler.core.source import where as _where
from pyree.transpiler.core.trace import get_aval
from pyree.tree_util import register_pytree_node

__all__ = [
    "PRNGKey", "PRNGKeyArray", "key", "key_data", "wrap_key_data", "split", "fold_in", "bits",
    "uniform", "normal", "truncated_normal", "randint", "bernoulli", "permutation", "choice",
]

Shape = Union[int, Sequence[int]]

_U32 = np.dtype(np.uint32)
_UINT_BY_BITS = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32,
                 64: np.dtype(np.uint64)}
# Threefry-2x32's rotation distances: the first four rounds of every eight use the first row.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = 0x1BD11BDA  # Threefry's key-schedule constant


# --------------------------------------------------------------------------------------------
# The block cipher
# --------------------------------------------------------------------------------------------

def _u32(value: int) -> np.uint32:
    return np.uint32(value & 0xFFFFFFFF)


def _rotate_left(v: Any, distance: int) -> Any:
    return lax.shift_left(v, _u32(distance)) | lax.shift_right_logical(v, _u32(32 - distance))


def _threefry2x32(k0: Any, k1: Any, x0: Any, x1: Any) -> tuple[Any, Any]:
    """Threefry-2x32 (20 rounds) of the counter words ``(x0, x1)`` under key ``(k0, k1)``.

    All operands are uint32; ``k0``/``k1`` broadcast against ``x0``/``x1``.
    """
    schedule = (k0, k1, k0 ^ k1 ^ _u32(_KEY_PARITY))
    x0 = x0 + schedule[0]
    x1 = x1 + schedule[1]
    for group in range(5):
        for distance in _ROTATIONS[group % 2]:
            x0 = x0 + x1
            x1 = _rotate_left(x1, distance)
            x1 = x1 ^ x0
        # Key injection after every four rounds: words rotate through the schedule, and the
        # second word also gets the injection count.
        x0 = x0 + schedule[(group + 1) % 3]
        x1 = x1 + schedule[(group + 2) % 3] + _u32(group + 1)
    return x0, x1


def _counters(shape: tuple) -> tuple[Any, Any]:
    """The (high, low) words of each element's row-major index, for a request of ``shape``."""
    size = math.prod(shape)
    if size >= 2 ** 32:
        raise NotImplementedError(f"random draws of more than 2**32 elements: shape {shape}")
    low = lax.reshape(lax.iota(_U32, size), shape)
    return jnp.zeros(shape, _U32), low


# --------------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------------

class _KeyDtype:
    """The dtype of typed Threefry keys, shown as ``key<fry>``."""

    name = "key<fry>"

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _KeyDtype)

    def __hash__(self) -> int:
        return hash(_KeyDtype)


_KEY_DTYPE = _KeyDtype()


class PRNGKeyArray:
    """An array of typed Threefry keys (``random.key(seed)``), wrapping uint32 data of shape
    ``shape + (2,)``.

    Example::

        k = random.key(0)
        k.shape                       # ()
        random.split(k, 4)[1:3].shape # (2,)
        random.key_data(k)            # uint32[2]: [0, 0]
    """

    __slots__ = ("_data",)
    __array_priority__ = 200

    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def shape(self) -> tuple:
        return tuple(get_aval(self._data).shape[:-1])

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def dtype(self) -> _KeyDtype:
        return _KEY_DTYPE

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, index: Any) -> "PRNGKeyArray":
        if not isinstance(index, tuple):
            index = (index,)
        if any(i is Ellipsis for i in index):
            index = index + (slice(None),)  # keep the trailing word axis out of the ellipsis
        if len([i for i in index if i is not None and i is not Ellipsis]) > self.ndim:
            raise IndexError(f"too many indices for a key array of shape {self.shape}"
                             f"{_where(None)}")
        return PRNGKeyArray(self._data[index])

    def reshape(self, *shape: Any) -> "PRNGKeyArray":
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        return PRNGKeyArray(jnp.reshape(self._data, tuple(shape) + (2,)))

    def __repr__(self) -> str:
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{self._data}"


register_pytree_node(PRNGKeyArray, lambda k: ((k._data,), None),
                     lambda _, children: PRNGKeyArray(children[0]))


def _seed_words(seed: Any) -> Any:
    """``[high word, low word]`` of an integer seed, as JAX derives them."""
    if isinstance(seed, PRNGKeyArray):
        raise TypeError(f"PRNGKey seed must be an integer, got a key array{_where(None)}")
    if isinstance(seed, bool) or isinstance(seed, (np.bool_,)):
        seed = int(seed)
    if isinstance(seed, int):
        if not -2 ** 63 <= seed < 2 ** 63:
            raise OverflowError(f"seed {seed} does not fit in 64 bits{_where(None)}")
        high = (seed >> 32) & 0xFFFFFFFF if dtypes.canonicalize_dtype(int).itemsize == 8 else 0
        return jnp.asarray(np.array([high, seed & 0xFFFFFFFF], dtype=_U32))
    check_arraylike("PRNGKey", seed)
    aval = get_aval(seed) if not isinstance(seed, np.ndarray) else seed
    if tuple(aval.shape) != ():
        raise TypeError(f"PRNGKey accepts a scalar seed, but was given an array of shape "
                        f"{tuple(aval.shape)} != (). Use vmap for batching{_where(None)}")
    dtype = np.dtype(aval.dtype)
    if dtype == np.bool_:
        seed, dtype = jnp.asarray(seed).astype(np.int32), np.dtype(np.int32)
    if not np.issubdtype(dtype, np.integer):
        raise TypeError(f"PRNG key seed must be an integer; got {dtype}{_where(None)}")
    seed = jnp.asarray(seed)
    dtype = np.dtype(get_aval(seed).dtype)
    low = lax.convert_element_type(seed, _U32)  # wraps: keeps the low 32 bits
    if dtype.itemsize == 8:
        high = lax.convert_element_type(
            lax.shift_right_logical(seed, np.array(32, dtype)), _U32)
    else:
        high = jnp.zeros((), _U32)
    return jnp.stack([high, low])


def PRNGKey(seed: Any) -> Any:
    """A raw key: ``uint32[2]`` holding ``[seed >> 32, seed & 0xFFFFFFFF]`` (the high word is 0
    unless x64 is enabled and the seed is 64-bit).

    Example::

        random.PRNGKey(42)   # Array([ 0, 42], dtype=uint32)
        random.PRNGKey(-1)   # Array([0, 4294967295], dtype=uint32)
    """
    return _seed_words(seed)


def key(seed: Any, *, impl: Optional[str] = None) -> PRNGKeyArray:
    """A typed key (shape ``()``, dtype ``key<fry>``) from an integer seed.

    Example::

        k = random.key(0)
        random.uniform(k)    # the same float as jax.random.uniform(jax.random.key(0))
    """
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"unsupported PRNG implementation {impl!r}: only 'threefry2x32'"
                         f"{_where(None)}")
    return PRNGKeyArray(_seed_words(seed))


def key_data(keys: Any) -> Any:
    """The uint32 data (shape ``keys.shape + (2,)``) under typed keys; raw keys as they are.

    Example: ``random.key_data(random.key(3))`` is ``Array([0, 3], dtype=uint32)``.
    """
    data, _ = _key_words(keys, "key_data")
    return data


def wrap_key_data(key_bits_array: Any, *, impl: Optional[str] = None) -> PRNGKeyArray:
    """Typed keys over raw uint32 data of shape ``(..., 2)``.

    Example: ``random.wrap_key_data(random.PRNGKey(3))`` equals ``random.key(3)``.
    """
    if impl not in (None, "threefry2x32"):
        raise ValueError(f"unsupported PRNG implementation {impl!r}{_where(None)}")
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError(f"wrap_key_data takes raw uint32 data, got a typed key array"
                        f"{_where(None)}")
    data, _ = _key_words(key_bits_array, "wrap_key_data")
    return PRNGKeyArray(data)


def _key_words(k: Any, name: str) -> tuple[Any, bool]:
    """(uint32 data of shape (..., 2), whether ``k`` was a typed key), after checks."""
    if isinstance(k, PRNGKeyArray):
        return k._data, True
    if isinstance(k, (int, float, bool, complex)) or not hasattr(k, "shape") and not \
            isinstance(k, (list, tuple)):
        raise TypeError(f"{name}: expected a PRNG key (from random.key or random.PRNGKey), "
                        f"got {k!r}{_where(None)}")
    k = jnp.asarray(k)
    aval = get_aval(k)
    if np.dtype(aval.dtype) != _U32 or not aval.shape or aval.shape[-1] != 2:
        raise TypeError(f"{name}: invalid PRNG key data: expected a uint32 array of shape "
                        f"(..., 2), got {np.dtype(aval.dtype)}{list(aval.shape)}{_where(None)}")
    return k, False


def _single_key(k: Any, name: str) -> tuple[Any, Any, bool]:
    """The two words of one key (``k0``, ``k1``: uint32 scalars) and whether it was typed."""
    data, typed = _key_words(k, name)
    batch = tuple(get_aval(data).shape[:-1])
    if batch:
        raise TypeError(f"{name} accepts a single key, but was given a key array of shape "
                        f"{batch} != (). Use vmap for batching{_where(None)}")
    return data[0], data[1], typed


def _wrap(data: Any, typed: bool) -> Any:
    return PRNGKeyArray(data) if typed else data


def _shape_tuple(shape: Shape, name: str) -> tuple:
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be an int or a sequence of ints, got {shape!r}"
                        f"{_where(None)}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{name}: negative dimension in shape {shape}{_where(None)}")
    return shape


def _split_words(k0: Any, k1: Any, shape: tuple) -> Any:
    high, low = _counters(shape)
    y0, y1 = _threefry2x32(k0, k1, high, low)
    return jnp.stack([y0, y1], axis=len(shape))


def split(key: Any, num: Shape = 2) -> Any:
    """``num`` new keys (``num`` an int or a shape) derived from ``key``; typed in, typed out.

    Example::

        key, sub = random.split(random.PRNGKey(0))
        random.split(random.key(1), (2, 3)).shape     # (2, 3)
    """
    k0, k1, typed = _single_key(key, "split")
    return _wrap(_split_words(k0, k1, _shape_tuple(num, "split")), typed)


def fold_in(key: Any, data: Any) -> Any:
    """A new key from ``key`` and an integer ``data`` (taken modulo 2**32).

    Example: ``random.fold_in(random.PRNGKey(0), step)`` gives one key per training step.
    """
    k0, k1, typed = _single_key(key, "fold_in")
    if isinstance(data, (int, np.integer)) and not isinstance(data, bool):
        word = jnp.asarray(np.array(int(data) & 0xFFFFFFFF, dtype=_U32))
    else:
        check_arraylike("fold_in", data)
        data = jnp.asarray(data)
        aval = get_aval(data)
        if aval.shape != ():
            raise TypeError(f"fold_in: data must be a scalar, got shape {tuple(aval.shape)}"
                            f"{_where(None)}")
        if not (np.issubdtype(aval.dtype, np.integer) or aval.dtype == np.bool_):
            raise TypeError(f"fold_in: data must be an integer, got {np.dtype(aval.dtype)}"
                            f"{_where(None)}")
        word = lax.convert_element_type(data, _U32)
    y0, y1 = _threefry2x32(k0, k1, jnp.zeros((), _U32), word)
    return _wrap(jnp.stack([y0, y1]), typed)


def _random_bits(k0: Any, k1: Any, nbits: int, shape: tuple) -> Any:
    high, low = _counters(shape)
    y0, y1 = _threefry2x32(k0, k1, high, low)
    dtype = _UINT_BY_BITS[nbits]
    if nbits == 64:
        return (lax.shift_left(lax.convert_element_type(y0, dtype), np.uint64(32))
                | lax.convert_element_type(y1, dtype))
    word = y0 ^ y1
    return word if nbits == 32 else lax.convert_element_type(word, dtype)


def _check_dtype(dtype: Any, name: str, kinds: str, what: str) -> np.dtype:
    """A sampler's ``dtype=``: Python's float/int mean the default width; a 64-bit request
    without x64 warns and gives 32 bits, as in JAX."""
    try:
        np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name}: {dtype!r} is not a dtype{_where(None)}") from None
    requested = requested_dtype(dtype)
    if not (requested.kind in kinds or "f" in kinds and requested == np.dtype(dtypes.bfloat16)):
        raise ValueError(f"dtype argument to `{name}` must be {what}, got {requested}"
                         f"{_where(None)}")
    return requested


def bits(key: Any, shape: Shape = (), dtype: Any = None) -> Any:
    """Uniform random bits: an unsigned integer array (uint32 by default; uint8/16, and uint64
    under x64).

    Example: ``random.bits(random.PRNGKey(0), (4,))`` is four uint32 words, as JAX's.
    """
    k0, k1, _ = _single_key(key, "bits")
    dtype = _U32 if dtype is None else np.dtype(dtype)
    if dtype not in _UINT_BY_BITS.values():
        raise TypeError(f"bits: dtype must be an unsigned integer type, got {dtype}"
                        f"{_where(None)}")
    if dtype.itemsize == 8 and dtypes.canonicalize_dtype(dtype) != dtype:
        raise ValueError(f"bits: dtype uint64 needs config.enable_x64{_where(None)}")
    return _random_bits(k0, k1, dtype.itemsize * 8, _shape_tuple(shape, "bits"))


def _check_broadcast(name: str, shape: tuple, *param_shapes: tuple) -> None:
    for param_shape in param_shapes:
        try:
            out = np.broadcast_shapes(shape, tuple(param_shape))
        except ValueError:
            out = None
        if out != shape:
            raise ValueError(f"{name}: parameter shapes {[tuple(s) for s in param_shapes]} do "
                             f"not broadcast to the requested shape {shape}{_where(None)}")


def _param(x: Any, dtype: np.dtype) -> Any:
    return jnp.asarray(x, dtype=dtype) if not hasattr(x, "shape") or isinstance(
        x, np.ndarray) else lax.convert_element_type(x, dtype)


# --------------------------------------------------------------------------------------------
# Samplers
# --------------------------------------------------------------------------------------------

def _uniform(k0: Any, k1: Any, shape: tuple, dtype: np.dtype, minval: Any, maxval: Any) -> Any:
    finfo = dtypes.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    uint = _UINT_BY_BITS[nbits]
    # As JAX: a float with fewer than 8 mantissa bits (bfloat16) takes 8 random bits.
    word_bits = 8 if nmant < 8 else nbits
    word = _random_bits(k0, k1, word_bits, shape)
    if word_bits != nbits:
        word = lax.convert_element_type(word, uint)
    # Keep the top nmant bits as the mantissa of a float in [1, 2), then shift down to [0, 1).
    one_bits = np.array(1.0, dtype).view(uint)
    mantissa = lax.shift_right_logical(word, np.array(word_bits - nmant, uint)) | one_bits
    unit = lax.bitcast_convert_type(mantissa, dtype) - np.array(1.0, dtype)
    # One rounding for unit * span + minval, as XLA's CPU code fuses it (and IREE would under
    # jit, but not eagerly, where each operation runs alone).
    span = jnp.broadcast_to(maxval - minval, shape)
    return jnp.maximum(minval, _fma(unit, span, jnp.broadcast_to(minval, shape)))


def uniform(key: Any, shape: Shape = (), dtype: Any = float, minval: Any = 0.0,
            maxval: Any = 1.0) -> Any:
    """Uniform floats in ``[minval, maxval)``, bit for bit as ``jax.random.uniform``.

    Example: ``random.uniform(random.PRNGKey(0), (2, 3), minval=-1., maxval=1.)``.
    """
    k0, k1, _ = _single_key(key, "uniform")
    shape = _shape_tuple(shape, "uniform")
    dtype = _check_dtype(dtype, "uniform", "f", "a float dtype")
    minval, maxval = _param(minval, dtype), _param(maxval, dtype)
    _check_broadcast("uniform", shape, minval.shape, maxval.shape)
    return _uniform(k0, k1, shape, dtype, minval, maxval)


def normal(key: Any, shape: Shape = (), dtype: Any = float) -> Any:
    """Standard normal floats, bit for bit as ``jax.random.normal`` (inverse-CDF of a uniform
    on ``(-1, 1)`` through ``erf_inv``).

    Example: ``mu + sigma * random.normal(key, (1000,))``.
    """
    k0, k1, _ = _single_key(key, "normal")
    shape = _shape_tuple(shape, "normal")
    dtype = _check_dtype(dtype, "normal", "f", "a float dtype")
    low = np.nextafter(np.array(-1.0, dtype), np.array(0.0, dtype))
    u = _uniform(k0, k1, shape, dtype, jnp.asarray(low), jnp.asarray(np.array(1.0, dtype)))
    return np.array(np.sqrt(2), dtype) * lax.erf_inv(u)


def truncated_normal(key: Any, lower: Any, upper: Any, shape: Optional[Shape] = None,
                     dtype: Any = float) -> Any:
    """Standard normal floats conditioned on ``lower < x < upper`` (inverse CDF of a uniform
    between the bounds' CDF values); ``shape`` defaults to the bounds' broadcast shape.

    Example: ``random.truncated_normal(key, -2.0, 2.0, (256, 128))`` (as initializers use).
    """
    k0, k1, _ = _single_key(key, "truncated_normal")
    dtype = _check_dtype(dtype, "truncated_normal", "f", "a float dtype")
    check_arraylike("truncated_normal", lower, upper)
    lower, upper = _param(lower, dtype), _param(upper, dtype)
    if shape is None:
        shape = np.broadcast_shapes(tuple(lower.shape), tuple(upper.shape))
    shape = _shape_tuple(shape, "truncated_normal")
    _check_broadcast("truncated_normal", shape, lower.shape, upper.shape)
    sqrt2 = np.array(np.sqrt(2), dtype)
    low_cdf, high_cdf = lax.erf(lower / sqrt2), lax.erf(upper / sqrt2)
    x = sqrt2 * lax.erf_inv(_uniform(k0, k1, shape, dtype, low_cdf, high_cdf))
    # Rounding can land exactly on a bound; keep draws strictly inside, as JAX does.
    inf = np.array(np.inf, dtype)
    return jnp.clip(x, lax.nextafter(lax.stop_gradient(lower), inf),
                    lax.nextafter(lax.stop_gradient(upper), -inf))


def _clip_to(x: Any, dtype: np.dtype) -> Any:
    """``x`` (an integer array) converted to ``dtype``, saturating at ``dtype``'s range."""
    src, dst = np.iinfo(get_aval(x).dtype), np.iinfo(dtype)
    low, high = builtin_max(src.min, dst.min), builtin_min(src.max, dst.max)
    if (low, high) != (src.min, src.max):
        x = lax.clamp(np.array(low, src.dtype), x, np.array(high, src.dtype))
    return lax.convert_element_type(x, dtype)


builtin_max, builtin_min = max, min


def _rem(a: Any, span: Any) -> Any:
    # XLA defines x % 0 == x; IREE's integer remainder by zero is undefined (a trap on x86),
    # and span wraps to 0 for a full-range request such as randint(..., 0, 256, uint8).
    zero = span == np.array(0, get_aval(span).dtype)
    safe = lax.select(zero, jnp.ones_like(span), span)
    return lax.select(zero, a, lax.rem(a, safe))


def randint(key: Any, shape: Shape, minval: Any, maxval: Any, dtype: Any = int) -> Any:
    """Integers in ``[minval, maxval)`` (``minval`` where ``maxval <= minval``), bit for bit as
    ``jax.random.randint``.

    Example: ``random.randint(random.PRNGKey(0), (5,), 0, 10)``.
    """
    k0, k1, _ = _single_key(key, "randint")
    shape = _shape_tuple(shape, "randint")
    try:
        dtype = dtypes.canonicalize_dtype(int) if dtype is int else np.dtype(dtype)
    except TypeError:
        raise TypeError(f"randint: {dtype!r} is not a dtype{_where(None)}") from None
    if dtype.kind not in "iu":
        raise TypeError(f"randint only accepts integer dtypes, got {dtype}{_where(None)}")
    if dtype.itemsize == 8 and dtypes.canonicalize_dtype(dtype) != dtype:
        raise ValueError(f"randint: dtype {dtype} needs config.enable_x64{_where(None)}")
    check_arraylike("randint", minval, maxval)
    minval, maxval = jnp.asarray(minval), jnp.asarray(maxval)
    _check_broadcast("randint", shape, minval.shape, maxval.shape)
    info = np.iinfo(dtype)
    if info.bits < 32:
        # As JAX: 8- and 16-bit draws are made at 32 bits (less modulo bias), then cast.
        i32 = np.dtype(np.int32)
        minval = jnp.clip(minval.astype(i32), int(info.min), int(info.max))
        maxval = jnp.clip(maxval.astype(i32), int(info.min), int(info.max) + 1)
        return randint(jnp.stack([k0, k1]), shape, minval, maxval, i32).astype(dtype)
    int_dtype = dtypes.canonicalize_dtype(int)
    if get_aval(minval).dtype.kind not in "iu":
        minval = minval.astype(int_dtype)
    if get_aval(maxval).dtype.kind not in "iu":
        maxval = maxval.astype(int_dtype)
    # maxval may exceed dtype's range (randint(k, s, 0, 256, uint8)): then the span is one more.
    max_dtype = np.iinfo(get_aval(maxval).dtype)
    above_range = maxval > np.array(builtin_min(np.iinfo(dtype).max, max_dtype.max),
                                    max_dtype.dtype)
    minval, maxval = _clip_to(minval, dtype), _clip_to(maxval, dtype)
    minval, maxval, above_range = (jnp.broadcast_to(v, shape)
                                   for v in (minval, maxval, above_range))
    nbits = dtype.itemsize * 8
    unsigned = _UINT_BY_BITS[nbits]
    k0a, k1a = _threefry2x32(k0, k1, jnp.zeros((2,), _U32), lax.iota(_U32, 2))
    high_bits = _random_bits(k0a[0], k1a[0], nbits, shape)
    low_bits = _random_bits(k0a[1], k1a[1], nbits, shape)
    span = lax.convert_element_type(maxval - minval, unsigned)
    empty = maxval <= minval
    span = lax.select(empty, jnp.ones_like(span), span)
    span = lax.select(above_range & ~empty, span + np.array(1, unsigned), span)
    # (a * 2**nbits + b) % span, without the double-width product: 2**nbits % span first.
    multiplier = _rem(jnp.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = _rem(multiplier * multiplier, span)
    offset = _rem(_rem(high_bits, span) * multiplier + _rem(low_bits, span), span)
    return minval + lax.convert_element_type(offset, dtype)


def bernoulli(key: Any, p: Any = 0.5, shape: Optional[Shape] = None) -> Any:
    """Booleans, True with probability ``p``, bit for bit as ``jax.random.bernoulli``.

    Example: ``random.bernoulli(random.PRNGKey(0), 0.3, (10,))``.
    """
    k0, k1, _ = _single_key(key, "bernoulli")
    check_arraylike("bernoulli", p)
    if isinstance(p, (int, float, bool)):
        p = jnp.asarray(p, dtype=dtypes.canonicalize_dtype(float))
    p = jnp.asarray(p)
    dtype = np.dtype(get_aval(p).dtype)
    if dtype.kind != "f":
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}"
                        f"{_where(None)}")
    shape = tuple(p.shape) if shape is None else _shape_tuple(shape, "bernoulli")
    _check_broadcast("bernoulli", shape, p.shape)
    zero, one = jnp.asarray(np.array(0, dtype)), jnp.asarray(np.array(1, dtype))
    return _uniform(k0, k1, shape, dtype, zero, one) < p


def _shuffle(k0: Any, k1: Any, x: Any, axis: int) -> Any:
    # Sorting by fresh random words; enough rounds that ties (equal words) are unlikely.
    size = builtin_max(1, math.prod(x.shape))
    rounds = int(np.ceil(3 * np.log(size) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        pair = _split_words(k0, k1, (2,))
        k0, k1 = pair[0, 0], pair[0, 1]
        sort_words = _random_bits(pair[1, 0], pair[1, 1], 32, tuple(x.shape))
        _, x = lax.sort_key_val(sort_words, x, axis)
    return x


def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False) -> Any:
    """A random permutation of ``range(x)`` (int ``x``) or of ``x``'s entries along ``axis``
    (each slice independently if ``independent``), bit for bit as ``jax.random.permutation``.

    Example: ``random.permutation(random.PRNGKey(0), 5)``.
    """
    k0, k1, _ = _single_key(key, "permutation")
    check_arraylike("permutation", x)
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool) or (
            hasattr(x, "shape") and tuple(x.shape) == ()):
        dtype = np.dtype(get_aval(jnp.asarray(x)).dtype)
        if dtype.kind not in "iu":
            raise TypeError(f"x must be an integer or at least 1-dimensional{_where(None)}")
        try:
            n = operator.index(x) if isinstance(x, (int, np.integer)) else int(x)
        except Exception:
            raise TypeError(f"permutation: an integer x must be concrete (static under jit)"
                            f"{_where(None)}") from None
        canonical_axis(axis, 1)
        return _shuffle(k0, k1, jnp.arange(n), 0)
    x = jnp.asarray(x)
    axis = canonical_axis(axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle(k0, k1, x, axis)
    order = _shuffle(k0, k1, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, order, axis=axis, unique_indices=True)


def choice(key: Any, a: Any, shape: Shape = (), replace: bool = True, p: Any = None,
           axis: int = 0) -> Any:
    """Random draws from ``a`` (an int n: ``range(n)``; or an array along ``axis``).

    Uniform draws (``p=None``) are bit for bit JAX's (without replacement, a prefix of
    ``permutation``); ``p`` weights the entries. Example: ``random.choice(key, 10, (3,),
    replace=False, p=weights)``.
    """
    k0, k1, typed = _single_key(key, "choice")
    shape = _shape_tuple(shape, "choice")
    check_arraylike("choice", a)
    if isinstance(a, (int, np.integer)) or (hasattr(a, "shape") and tuple(a.shape) == ()):
        n = int(a)
        if n < 0:
            raise ValueError(f"choice: a must be non-negative, got {n}{_where(None)}")
        arr = None
    else:
        arr = jnp.asarray(a)
        axis = canonical_axis(axis, arr.ndim)
        n = arr.shape[axis]
    count = math.prod(shape)
    if n == 0 and count:
        raise ValueError(f"a must be greater than 0 unless no samples are taken{_where(None)}")
    if not replace and count > n:
        raise ValueError(f"cannot take a larger sample ({count}) than population ({n}) when "
                         f"'replace=False'{_where(None)}")
    if p is not None:
        index = _random_samplers.weighted_choice_indices(k0, k1, n, count, replace, p)
        index = index.reshape(shape)
    elif replace:
        raw = jnp.stack([k0, k1])
        index = randint(raw, shape, 0, n)
    else:
        index = permutation(jnp.stack([k0, k1]), n)[:count].reshape(shape)
    if arr is None:
        return index
    taken = jnp.take(arr, index.reshape(-1), axis=axis)
    return taken.reshape(arr.shape[:axis] + shape + arr.shape[axis + 1:])


from pyree import _random_samplers  # noqa: E402  (its samplers build on the functions above)
from pyree._random_samplers import *  # noqa: E402,F401,F403
__all__ += _random_samplers.__all__
