"""``pyree.example_libraries.stax``: ``jax.example_libraries.stax``, the small combinator library
for neural networks that JAX's classic examples are written with.

A layer is a pair ``(init_fun, apply_fun)``:

* ``init_fun(rng, input_shape) -> (output_shape, params)`` draws the parameters from the key
  ``rng`` and computes the output shape. Shapes are tuples of ints and ``-1`` stands for a
  size not known yet (usually the batch), which flows through the shape arithmetic unchanged.
* ``apply_fun(params, inputs, **kwargs) -> outputs`` runs the layer. Keyword arguments (such as
  ``rng=`` for ``Dropout``) are passed down to every sub-layer by ``serial`` and ``parallel``.

Layers compose with ``serial`` (one after the other) and ``parallel`` (side by side on a list of
inputs); ``FanOut``/``FanInSum``/``FanInConcat`` split and join branches::

    import pyree as jax
    import pyree.numpy as jnp
    from pyree import random
    from pyree.example_libraries import stax

    init_fun, predict = stax.serial(stax.Dense(64), stax.Relu, stax.Dense(10), stax.LogSoftmax)
    out_shape, params = init_fun(random.PRNGKey(0), (-1, 28 * 28))   # out_shape == (-1, 10)
    logits = jax.jit(predict)(params, jnp.ones((8, 28 * 28)))         # shape (8, 10)

Parameters are pytrees (tuples and lists of arrays), so ``grad``, ``jit`` and
``pyree.example_libraries.optimizers`` take them as they are. Everything is composed from
``pyree.numpy``, ``pyree.lax`` and ``pyree.nn``, so layers run eagerly, under ``jit``, ``grad``
and ``vmap``.
"""
from __future__ import annotations

import functools
import operator
from typing import Any, Callable, Optional, Sequence, Union

from pyree import lax
from pyree import numpy as jnp
from pyree import random
from pyree.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                      softplus, standardize)
from pyree.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = [
    "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense", "Dropout",
    "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu", "GeneralConv",
    "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax", "MaxPool", "Relu", "Selu",
    "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh", "elementwise", "parallel", "serial",
    "shape_dependent",
    # JAX's stax re-exports these activations and initializers; programs import them from here.
    "elu", "gelu", "glorot", "glorot_normal", "leaky_relu", "log_softmax", "logsoftmax",
    "normal", "ones", "randn", "relu", "selu", "sigmoid", "softmax", "softplus", "standardize",
    "zeros",
]

# JAX's stax has these shorter names for the same initializers.
glorot, randn = glorot_normal, normal

Shape = tuple
InitFun = Callable[[Any, Shape], tuple[Any, Any]]
ApplyFun = Callable[..., Any]
Layer = tuple[InitFun, ApplyFun]
Padding = Union[str, Sequence[tuple[int, int]]]

logsoftmax = log_softmax  # the old name, still exported by JAX's stax


# -- shape arithmetic ------------------------------------------------------------------------------
# init_fun computes output shapes without running anything. Sizes may be -1 ("unknown", the batch
# in practice); a -1 only ever meets windows of size 1 and stride 1, which the formulas map back
# to -1, so it needs no special case.


def _pads(in_spatial: Sequence[int], window: Sequence[int], strides: Sequence[int],
          padding: Padding) -> list[tuple[int, int]]:
    """(low, high) pairs for each spatial axis: a padding name resolved, or explicit pairs."""
    if isinstance(padding, str):
        return [tuple(p) for p in lax.padtype_to_pads(in_spatial, window, strides, padding)]
    pairs = [(int(lo), int(hi)) for lo, hi in padding]
    if len(pairs) != len(in_spatial):
        raise ValueError(f"padding {padding!r} needs one (low, high) pair per spatial axis "
                         f"({len(in_spatial)})")
    return pairs


def _window_out(n: int, k: int, s: int, lo: int, hi: int) -> int:
    """Number of windows of size ``k`` and stride ``s`` that fit in ``n`` padded by lo, hi."""
    out = (n + lo + hi - k) // s + 1
    return out if n < 0 else max(out, 0)


def _conv_shape(lhs_shape: Sequence[int], rhs_shape: Sequence[int], strides: Sequence[int],
                padding: Padding, dimension_numbers: Any) -> Shape:
    """Output shape of ``lax.conv_general_dilated`` without dilation (JAX's
    ``lax.conv_general_shape_tuple``)."""
    lhs_spec, rhs_spec, out_spec = lax.conv_dimension_numbers(lhs_shape, rhs_shape,
                                                              dimension_numbers)
    in_spatial = [lhs_shape[a] for a in lhs_spec[2:]]
    kernel = [rhs_shape[a] for a in rhs_spec[2:]]
    pads = _pads(in_spatial, kernel, strides, padding)
    spatial = [_window_out(n, k, s, lo, hi)
               for n, k, s, (lo, hi) in zip(in_spatial, kernel, strides, pads)]
    return _place(out_spec, lhs_shape[lhs_spec[0]], rhs_shape[rhs_spec[0]], spatial)


def _conv_transpose_shape(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                          strides: Sequence[int], padding: Padding,
                          dimension_numbers: Any) -> Shape:
    """Output shape of ``lax.conv_transpose`` (JAX's ``lax.conv_transpose_shape_tuple``): 'SAME'
    multiplies each spatial size by its stride, 'VALID' gives ``n * s + max(k - s, 0)``, and
    explicit pads apply to the stride-dilated input."""
    lhs_spec, rhs_spec, out_spec = lax.conv_dimension_numbers(lhs_shape, rhs_shape,
                                                              dimension_numbers)
    in_spatial = [lhs_shape[a] for a in lhs_spec[2:]]
    kernel = [rhs_shape[a] for a in rhs_spec[2:]]
    if isinstance(padding, str):
        kind = padding.upper()
        if kind not in ("SAME", "VALID"):
            raise ValueError(f"transposed convolution padding must be 'SAME', 'VALID' or "
                             f"(low, high) pairs, got {padding!r}")
        spatial = [n * s + (max(k - s, 0) if kind == "VALID" else 0)
                   for n, k, s in zip(in_spatial, kernel, strides)]
    else:
        pads = _pads(in_spatial, kernel, strides, padding)
        spatial = [max((n - 1) * s + 1 + lo + hi - k + 1, 0)
                   for n, k, s, (lo, hi) in zip(in_spatial, kernel, strides, pads)]
    return _place(out_spec, lhs_shape[lhs_spec[0]], rhs_shape[rhs_spec[0]], spatial)


def _place(out_spec: Sequence[int], batch: int, features: int, spatial: Sequence[int]) -> Shape:
    """A shape with ``batch``, ``features`` and ``spatial`` sizes at the axes ``out_spec`` names."""
    shape = [0] * len(out_spec)
    for axis, size in zip(out_spec, (batch, features, *spatial)):
        shape[axis] = int(size)
    return tuple(shape)


def _kernel_shape(rhs_layout: str, lhs_layout: str, input_shape: Sequence[int], out_chan: int,
                  filter_shape: Sequence[int]) -> list[int]:
    """The kernel's shape in ``rhs_layout``: 'O' is ``out_chan``, 'I' the input's channels ('C'
    of ``lhs_layout``), the spatial letters take ``filter_shape`` in the order they appear."""
    spatial = iter(filter_shape)
    in_chan = input_shape[lhs_layout.index("C")]
    return [out_chan if c == "O" else in_chan if c == "I" else next(spatial) for c in rhs_layout]


# -- dense and convolutional layers ----------------------------------------------------------------


def Dense(out_dim: int, W_init: Callable = glorot_normal(), b_init: Callable = normal()) -> Layer:
    """A fully connected layer ``inputs @ W + b`` on the last axis; ``W`` has shape
    ``(in_dim, out_dim)``, ``b`` shape ``(out_dim,)``; params are ``(W, b)``.

    Example::

        init_fun, apply_fun = stax.Dense(3)
        out_shape, (W, b) = init_fun(random.PRNGKey(0), (-1, 5))   # (-1, 3); W: (5, 3)
        apply_fun((W, b), jnp.ones((2, 5))).shape                  # (2, 3)
    """
    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return output_shape, (W, b)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        W, b = params
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def GeneralConv(dimension_numbers: tuple[str, str, str], out_chan: int,
                filter_shape: Sequence[int], strides: Optional[Sequence[int]] = None,
                padding: Padding = "VALID", W_init: Optional[Callable] = None,
                b_init: Callable = normal(1e-6)) -> Layer:
    """A convolution with layouts given as strings, e.g. ``('NCHW', 'OIHW', 'NCHW')``:
    ``out_chan`` filters of spatial size ``filter_shape``, moved by ``strides`` (default 1),
    with ``padding`` 'VALID', 'SAME' or (low, high) pairs. ``W_init`` defaults to
    ``glorot_normal`` with the kernel's I and O axes as fan-in and fan-out; ``b`` is shaped to
    broadcast along the output's channel axis. Params are ``(W, b)``.

    Example::

        init_fun, apply_fun = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 8, (3, 3), padding="SAME")
        out_shape, params = init_fun(random.PRNGKey(0), (-1, 3, 16, 16))   # (-1, 8, 16, 16)
    """
    lhs_layout, rhs_layout, out_layout = dimension_numbers
    filter_shape = tuple(filter_shape)
    one = (1,) * len(filter_shape)
    strides = tuple(strides) if strides else one
    W_init = W_init or glorot_normal(rhs_layout.index("I"), rhs_layout.index("O"))

    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        kernel_shape = _kernel_shape(rhs_layout, lhs_layout, input_shape, out_chan, filter_shape)
        output_shape = _conv_shape(input_shape, kernel_shape, strides, padding,
                                   dimension_numbers)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_layout)
        k1, k2 = random.split(rng)
        W, b = W_init(k1, tuple(kernel_shape)), b_init(k2, bias_shape)
        return output_shape, (W, b)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        W, b = params
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv.__doc__ = """A 2-D convolution of NHWC inputs with an HWIO kernel: ``GeneralConv`` with
``dimension_numbers=('NHWC', 'HWIO', 'NHWC')``.

Example::

    init_fun, apply_fun = stax.Conv(16, (3, 3), strides=(2, 2), padding="SAME")
    out_shape, params = init_fun(random.PRNGKey(0), (-1, 28, 28, 1))   # (-1, 14, 14, 16)
"""


def GeneralConvTranspose(dimension_numbers: tuple[str, str, str], out_chan: int,
                         filter_shape: Sequence[int], strides: Optional[Sequence[int]] = None,
                         padding: Padding = "VALID", W_init: Optional[Callable] = None,
                         b_init: Callable = normal(1e-6)) -> Layer:
    """A transposed convolution (``lax.conv_transpose``): the input dilated by ``strides``,
    then convolved, so that 'SAME' multiplies each spatial size by its stride. Arguments as in
    ``GeneralConv``; params are ``(W, b)``.

    Example::

        init_fun, apply_fun = stax.GeneralConvTranspose(("NHWC", "HWIO", "NHWC"), 4, (3, 3),
                                                        strides=(2, 2), padding="SAME")
        out_shape, params = init_fun(random.PRNGKey(0), (-1, 7, 7, 8))     # (-1, 14, 14, 4)
    """
    lhs_layout, rhs_layout, out_layout = dimension_numbers
    filter_shape = tuple(filter_shape)
    one = (1,) * len(filter_shape)
    strides = tuple(strides) if strides else one
    W_init = W_init or glorot_normal(rhs_layout.index("I"), rhs_layout.index("O"))

    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        kernel_shape = _kernel_shape(rhs_layout, lhs_layout, input_shape, out_chan, filter_shape)
        output_shape = _conv_transpose_shape(input_shape, kernel_shape, strides, padding,
                                             dimension_numbers)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_layout)
        k1, k2 = random.split(rng)
        W, b = W_init(k1, tuple(kernel_shape)), b_init(k2, bias_shape)
        return output_shape, (W, b)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        W, b = params
        return lax.conv_transpose(inputs, W, strides, padding,
                                  dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
Conv1DTranspose.__doc__ = """A 1-D transposed convolution of NHC inputs with an HIO kernel.

Example::

    init_fun, apply_fun = stax.Conv1DTranspose(4, (3,), strides=(2,), padding="SAME")
    out_shape, params = init_fun(random.PRNGKey(0), (-1, 10, 2))        # (-1, 20, 4)
"""

ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
ConvTranspose.__doc__ = """A 2-D transposed convolution of NHWC inputs with an HWIO kernel.

Example::

    init_fun, apply_fun = stax.ConvTranspose(4, (3, 3), strides=(2, 2), padding="SAME")
    out_shape, params = init_fun(random.PRNGKey(0), (-1, 7, 7, 8))      # (-1, 14, 14, 4)
"""


# -- normalization ---------------------------------------------------------------------------------


def BatchNorm(axis: Union[int, Sequence[int]] = (0, 1, 2), epsilon: float = 1e-5,
              center: bool = True, scale: bool = True, beta_init: Callable = zeros,
              gamma_init: Callable = ones) -> Layer:
    """Batch normalization: standardizes the inputs over ``axis`` (mean and variance of the
    batch itself; no running averages are kept, as in JAX's stax), then applies a learned
    ``gamma * z + beta`` shaped like the axes not reduced. ``center=False`` / ``scale=False``
    drop ``beta`` / ``gamma`` (their params are then ``()``). Params are ``(beta, gamma)``.

    Example::

        init_fun, apply_fun = stax.BatchNorm(axis=(0,))
        out_shape, (beta, gamma) = init_fun(random.PRNGKey(0), (-1, 5))   # beta: (5,)
        apply_fun((beta, gamma), x).mean(0)                                # ~ 0
    """
    axes = (axis,) if isinstance(axis, int) else tuple(axis)

    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        ndim = len(input_shape)
        reduced = {a % ndim for a in axes}
        shape = tuple(d for i, d in enumerate(input_shape) if i not in reduced)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return tuple(input_shape), (beta, gamma)

    def apply_fun(params: Any, x: Any, **kwargs: Any) -> Any:
        beta, gamma = params
        ndim = jnp.ndim(x)
        reduced = {a % ndim for a in axes}
        # beta and gamma lack the reduced axes: index with None there to broadcast them.
        expand = tuple(None if i in reduced else slice(None) for i in range(ndim))
        z = standardize(x, tuple(sorted(reduced)), epsilon=epsilon)
        if scale:
            z = gamma[expand] * z
        if center:
            z = z + beta[expand]
        return z

    return init_fun, apply_fun


# -- elementwise layers ----------------------------------------------------------------------------


def elementwise(fun: Callable, **fun_kwargs: Any) -> Layer:
    """A layer without parameters that applies ``fun(inputs, **fun_kwargs)``; its params are
    ``()`` and its output shape is its input shape.

    Example::

        init_fun, apply_fun = stax.elementwise(jnp.clip, min=-1.0, max=1.0)
        apply_fun((), jnp.array([-3.0, 0.5, 2.0]))   # [-1., 0.5, 1.]
    """
    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# -- pooling ---------------------------------------------------------------------------------------


def _non_spatial_axes(spec: Optional[str], ndim: int) -> tuple[int, int]:
    """The batch and channel axes: those of ``spec``'s 'N' and 'C', else the first and the
    last (NHWC)."""
    return (0, ndim - 1) if spec is None else (spec.index("N"), spec.index("C"))


def _with_non_spatial(values: Sequence[Any], spec: Optional[str], fill: Any) -> tuple:
    """``values`` (one per spatial axis) with ``fill`` inserted at the batch and channel axes."""
    out = list(values)
    for i in sorted(_non_spatial_axes(spec, len(values) + 2)):
        out.insert(i, fill)
    return tuple(out)


def _window_counts(window: tuple, strides: tuple, padding: Padding) -> Callable:
    """For AvgPool: divides window sums by the number of real (not padding) elements in each
    window, which is the window size except at 'SAME'-padded borders."""
    def rescale(outputs: Any, inputs: Any, spec: Optional[str]) -> Any:
        non_spatial = _non_spatial_axes(spec, jnp.ndim(inputs))
        spatial_shape = tuple(d for i, d in enumerate(inputs.shape) if i not in non_spatial)
        counts = lax.reduce_window(jnp.ones(spatial_shape, inputs.dtype), 0.0, lax.add,
                                   window, strides, padding)
        for i in sorted(non_spatial):
            counts = jnp.expand_dims(counts, i)
        return outputs / counts

    return rescale


def _pooling_layer(reducer: Callable, init_val: float, rescaler: Optional[Callable] = None,
                   name: str = "", doc: str = "") -> Callable[..., Layer]:
    def PoolingLayer(window_shape: Sequence[int], strides: Optional[Sequence[int]] = None,
                     padding: Padding = "VALID", spec: Optional[str] = None) -> Layer:
        window_shape = tuple(window_shape)
        nsp = len(window_shape)
        strides = tuple(strides) if strides else (1,) * nsp
        if not isinstance(padding, str):  # explicit (low, high) pairs for the spatial axes
            padding = tuple((int(lo), int(hi)) for lo, hi in padding)
            if len(padding) != nsp:
                raise ValueError(f"pooling padding {padding} needs one (low, high) pair per "
                                 f"spatial axis ({nsp})")
        rescale = rescaler(window_shape, strides, padding) if rescaler else None
        full_window = _with_non_spatial(window_shape, spec, 1)
        full_strides = _with_non_spatial(strides, spec, 1)
        full_padding = padding if isinstance(padding, str) else \
            _with_non_spatial(padding, spec, (0, 0))

        def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
            pads = _pads(input_shape, full_window, full_strides, full_padding)
            out_shape = tuple(_window_out(n, k, s, lo, hi) for n, k, s, (lo, hi)
                              in zip(input_shape, full_window, full_strides, pads))
            return out_shape, ()

        def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
            out = lax.reduce_window(inputs, init_val, reducer, full_window, full_strides,
                                    full_padding)
            return rescale(out, inputs, spec) if rescale else out

        return init_fun, apply_fun

    PoolingLayer.__name__ = PoolingLayer.__qualname__ = name
    PoolingLayer.__doc__ = doc
    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf, name="MaxPool", doc="""\
Max pooling over windows of ``window_shape`` moved by ``strides`` (default 1) with
``padding`` 'VALID', 'SAME' or (low, high) pairs per spatial axis. Inputs are NHWC unless
``spec`` (e.g. ``'NCHW'``) names the batch and channel axes.

Example::

    init_fun, apply_fun = stax.MaxPool((2, 2), strides=(2, 2))
    out_shape, () = init_fun(random.PRNGKey(0), (-1, 28, 28, 8))       # (-1, 14, 14, 8)
""")

SumPool = _pooling_layer(lax.add, 0.0, name="SumPool", doc="""\
Sum pooling; arguments as in ``MaxPool``.

Example::

    init_fun, apply_fun = stax.SumPool((2, 2))
    apply_fun((), jnp.ones((1, 3, 3, 1)))[0, :, :, 0]                   # [[4., 4.], [4., 4.]]
""")

AvgPool = _pooling_layer(lax.add, 0.0, _window_counts, name="AvgPool", doc="""\
Average pooling; arguments as in ``MaxPool``. With 'SAME' padding, border windows average
only the elements they really cover.

Example::

    init_fun, apply_fun = stax.AvgPool((2, 2), padding="SAME")
    apply_fun((), jnp.ones((1, 3, 3, 1)))[0, :, :, 0]                   # all ones, (3, 3)
""")


# -- reshaping and plumbing ------------------------------------------------------------------------


def _flatten() -> Layer:
    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        return (input_shape[0], functools.reduce(operator.mul, input_shape[1:], 1)), ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()
"""Flattens every axis but the first: ``(N, H, W, C) -> (N, H * W * C)``.

Example::

    init_fun, apply_fun = stax.Flatten
    init_fun(random.PRNGKey(0), (-1, 7, 7, 4))[0]                       # (-1, 196)
"""


def _identity() -> Layer:
    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return inputs

    return init_fun, apply_fun


Identity = _identity()
"""The layer that returns its input (a skip branch in ``parallel``).

Example::

    stax.Identity[1]((), jnp.ones(3))                                   # [1., 1., 1.]
"""


def FanOut(num: int) -> Layer:
    """Copies the input into a list of ``num`` (for ``parallel`` branches).

    Example::

        init_fun, apply_fun = stax.FanOut(2)
        init_fun(random.PRNGKey(0), (-1, 3))[0]                         # [(-1, 3), (-1, 3)]
    """
    def init_fun(rng: Any, input_shape: Shape) -> tuple[Any, Any]:
        return [input_shape] * num, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum() -> Layer:
    def init_fun(rng: Any, input_shape: Any) -> tuple[Shape, Any]:
        return input_shape[0], ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return functools.reduce(operator.add, inputs)

    return init_fun, apply_fun


FanInSum = _fan_in_sum()
"""Sums a list of inputs of equal shapes (the join of a residual block).

Example::

    stax.FanInSum[1]((), [jnp.ones(2), jnp.ones(2)])                    # [2., 2.]
"""


def FanInConcat(axis: int = -1) -> Layer:
    """Concatenates a list of inputs along ``axis``.

    Example::

        init_fun, apply_fun = stax.FanInConcat()
        init_fun(random.PRNGKey(0), [(-1, 3), (-1, 4)])[0]              # (-1, 7)
    """
    def init_fun(rng: Any, input_shape: Any) -> tuple[Shape, Any]:
        first = tuple(input_shape[0])
        ax = axis % len(first)
        size = sum(shape[ax] for shape in input_shape)
        return first[:ax] + (size,) + first[ax + 1:], ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return jnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:
    """Dropout. As in JAX's stax, ``rate`` is the probability of KEEPING an element: in
    ``mode='train'`` each element is kept with probability ``rate`` and scaled by ``1 / rate``
    (so the expectation is unchanged), else zeroed; ``apply_fun`` then needs a key ``rng=``.
    In ``mode='test'`` the layer is the identity.

    Example::

        init_fun, apply_fun = stax.Dropout(0.9)
        apply_fun((), x, rng=random.PRNGKey(1))       # ~10% zeros, the rest x / 0.9
    """
    if mode not in ("train", "test"):
        raise ValueError(f"Dropout mode must be 'train' or 'test', got {mode!r}")

    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        return input_shape, ()

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        if mode != "train":
            return inputs
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError("Dropout in mode='train' needs a PRNG key: call "
                             "apply_fun(params, inputs, rng=key) (serial and parallel pass "
                             "rng= on to their layers, split), or build it with mode='test'")
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


# -- combinators -----------------------------------------------------------------------------------


def _layer_keys(kwargs: dict, n: int) -> Any:
    """One key per sub-layer, split from ``kwargs['rng']`` (removed), or None each."""
    rng = kwargs.pop("rng", None)
    return random.split(rng, n) if rng is not None else (None,) * n


def serial(*layers: Layer) -> Layer:
    """Composes layers in sequence: the output of each is the input of the next. Params are a
    list with one entry per layer; ``rng=`` given to ``apply_fun`` is split among the layers.

    Example::

        init_fun, apply_fun = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(2))
        out_shape, params = init_fun(random.PRNGKey(0), (-1, 8))        # (-1, 2), 3 entries
    """
    init_funs, apply_funs = zip(*layers) if layers else ((), ())
    n = len(layers)

    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rngs = _layer_keys(kwargs, n)
        for fun, param, rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """Applies layers side by side: the input is a sequence with one entry per layer (e.g. from
    ``FanOut``), and so are the output shapes, params and outputs.

    Example::

        init_fun, apply_fun = stax.serial(stax.FanOut(2),
                                          stax.parallel(stax.Dense(3), stax.Identity),
                                          stax.FanInConcat())
        init_fun(random.PRNGKey(0), (-1, 4))[0]                         # (-1, 7)
    """
    init_funs, apply_funs = zip(*layers) if layers else ((), ())
    n = len(layers)

    def init_fun(rng: Any, input_shape: Any) -> tuple[Any, Any]:
        rngs = random.split(rng, n)
        results = [init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)]
        return tuple(r[0] for r in results), tuple(r[1] for r in results)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        rngs = _layer_keys(kwargs, n)
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[Shape], Layer]) -> Layer:
    """A layer built from the input's shape: ``make_layer(input_shape)`` returns a layer,
    made again at init (from the given shape) and at each apply (from ``inputs.shape``). ResNet
    uses it to add a projection to a skip branch only when the channels change.

    Example::

        def make(input_shape):
            return stax.Identity if input_shape[-1] == 8 else stax.Dense(8)
        init_fun, apply_fun = stax.shape_dependent(make)
    """
    def init_fun(rng: Any, input_shape: Shape) -> tuple[Shape, Any]:
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params: Any, inputs: Any, **kwargs: Any) -> Any:
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
