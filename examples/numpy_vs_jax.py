"""NumPy next to pyree.numpy: where they agree, and JAX's sharp bits, which pyree keeps (or,
where noted, smooths over). Each comparison is checked with an assert, so the script doubles
as a test.

    python examples/numpy_vs_jax.py
"""
import warnings

import numpy as np

import pyree as jax
import pyree.numpy as jnp
from pyree import lax
from pyree.errors import NonConcreteBooleanIndexError


def section(title):
    print(f"\n== {title}")


def show(label, value):
    print(f"  {label:<44} {value}")


# -- 1. Same API, same numbers ----------------------------------------------------------------
section("1. jnp follows np")
x_np = np.linspace(0, 10, 1000)
y_np = 2 * np.sin(x_np) * np.cos(x_np)
x_jnp = jnp.linspace(0, 10, 1000)
y_jnp = 2 * jnp.sin(x_jnp) * jnp.cos(x_jnp)
show("max |np - jnp| of 2 sin(x) cos(x)", float(np.max(np.abs(y_np - np.asarray(y_jnp)))))
assert np.allclose(y_np, y_jnp, atol=1e-5)
show("np dtype / jnp dtype", f"{y_np.dtype} / {y_jnp.dtype}   (float32 by default)")
assert y_jnp.dtype == jnp.float32

# -- 2. Arrays are immutable ------------------------------------------------------------------
section("2. immutable arrays: x.at[i].set(v) instead of x[i] = v")
a = jnp.arange(10)
try:
    a[0] = 10
except TypeError as e:
    show("a[0] = 10", f"TypeError: {str(e).splitlines()[0][:60]}...")
b = a.at[0].set(10)
show("a.at[0].set(10)", b)
show("a is unchanged", a)
assert int(b[0]) == 10 and int(a[0]) == 0
c = jnp.zeros(5).at[jnp.array([0, 2, 2])].add(1.0)
show("repeated indices accumulate in .at[].add", c)
assert np.array_equal(np.asarray(c), [1, 0, 2, 0, 0])

# -- 3. 1-D convolution ----------------------------------------------------------------------
section("3. convolve: np.convolve vs jnp.convolve (a smoothing window)")
rng = np.random.default_rng(1701)
noisy = np.sin(np.linspace(0, 10, 200)) + 0.2 * rng.standard_normal(200)
window = np.exp(-np.linspace(-3, 3, 9) ** 2)
window /= window.sum()
smooth_np = np.convolve(noisy, window, mode="same")
smooth_jnp = jnp.convolve(jnp.asarray(noisy, jnp.float32), jnp.asarray(window, jnp.float32),
                          mode="same")
show("max |np - jnp|", float(np.max(np.abs(smooth_np - np.asarray(smooth_jnp)))))
assert np.allclose(smooth_np, smooth_jnp, atol=1e-5)

# -- 4. 2-D convolution with lax's general convolution ----------------------------------------
section("4. 2-D convolution: lax.conv_general_dilated vs a NumPy loop")
image = rng.random((1, 32, 32, 3)).astype(np.float32)          # NHWC
kernel = np.zeros((3, 3, 3, 3), np.float32)                      # HWIO: blur each channel
for ch in range(3):
    kernel[:, :, ch, ch] = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]) / 16


def conv_numpy(img, ker):
    """'SAME' padding, stride 1, NHWC x HWIO."""
    kh, kw = ker.shape[:2]
    padded = np.pad(img, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    out = np.zeros(img.shape[:3] + (ker.shape[3],), np.float32)
    for i in range(kh):
        for j in range(kw):
            out += padded[:, i:i + img.shape[1], j:j + img.shape[2], :] @ ker[i, j]
    return out


blurred = lax.conv_general_dilated(jnp.asarray(image), jnp.asarray(kernel), window_strides=(1, 1),
                                   padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
show("output shape", blurred.shape)
show("max |loop - lax|", float(np.max(np.abs(conv_numpy(image, kernel) - np.asarray(blurred)))))
assert np.allclose(conv_numpy(image, kernel), blurred, atol=1e-5)
strided = lax.conv_general_dilated(jnp.asarray(image), jnp.asarray(kernel), (2, 2), "VALID",
                                   dimension_numbers=("NHWC", "HWIO", "NHWC"))
show("stride 2, VALID: shape", strided.shape)
assert strided.shape == (1, 15, 15, 3)

# -- 5. Type promotion ------------------------------------------------------------------------
section("5. type promotion: JAX's lattice, weak Python scalars, 32 bits by default")
cases = [
    ("int8 array + 4", np.array([1], np.int8) + 4, jnp.array([1], jnp.int8) + 4),
    ("int32 array + 5.0", np.array([1], np.int32) + 5.0, jnp.array([1], jnp.int32) + 5.0),
    ("arange(3) / 2", np.arange(3) / 2, jnp.arange(3) / 2),
    ("int32 array + float16 array", np.array([1], np.int32) + np.array([1], np.float16),
     jnp.array([1], jnp.int32) + jnp.array([1], jnp.float16)),
    ("bool array + 1.5", np.array([True]) + 1.5, jnp.array([True]) + 1.5),
    ("uint8 array + int8 array", np.array([1], np.uint8) + np.array([1], np.int8),
     jnp.array([1], jnp.uint8) + jnp.array([1], jnp.int8)),
]
for label, n, j in cases:
    show(label, f"numpy {n.dtype}, pyree {j.dtype}")
assert [j.dtype for _, _, j in cases] == [jnp.int8, jnp.float32, jnp.float32, jnp.float16,
                                          jnp.float32, jnp.int16]
show("jnp.result_type(jnp.int32, jnp.float16)", jnp.result_type(jnp.int32, jnp.float16))
try:
    lax.add(jnp.array([1], jnp.int32), jnp.array([1.0]))
except TypeError as e:
    show("lax.add(int32, float32) is strict", f"TypeError: {str(e).splitlines()[0][:50]}...")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    z = jnp.zeros(3, dtype=jnp.float64)
show("jnp.zeros(3, dtype=float64), x64 off", f"{z.dtype} (with a warning: {bool(caught)})")
assert z.dtype == jnp.float32 and caught

# -- 6. Sharp bits ----------------------------------------------------------------------------
section("6. sharp bits")
idx = jnp.array([11])
show("jnp.arange(10)[jnp.array([11])] clamps", jnp.arange(10)[idx])
assert int(jnp.arange(10)[idx][0]) == 9
filled = jnp.arange(10.0).at[11].get(mode="fill", fill_value=jnp.nan)
show(".at[11].get(mode='fill', fill_value=nan)", filled)
assert np.isnan(float(filled))
dropped = jnp.arange(10).at[idx].set(99)
show("out-of-bounds .at[jnp.array([11])].set(99)", f"{dropped} (dropped)")
assert np.array_equal(np.asarray(dropped), np.arange(10))
try:  # a static Python int out of bounds is a bug pyree reports (JAX would clamp it too)
    jnp.arange(10)[11]
except IndexError as e:
    show("jnp.arange(10)[11], static index", f"IndexError: {str(e).splitlines()[0]}")

try:
    jnp.sum([1, 2, 3])
except TypeError as e:
    show("jnp.sum([1, 2, 3]): lists are not arrays", f"TypeError: {str(e).splitlines()[0][:40]}...")
show("jnp.sum(jnp.array([1, 2, 3]))", jnp.sum(jnp.array([1, 2, 3])))

v = jnp.array([-2.0, 3.0, -1.0, 4.0])
show("boolean mask outside jit: v[v > 0]", v[v > 0])


@jax.jit
def positives_masked(v):
    return v[v > 0]


try:
    positives_masked(v)
    raise AssertionError("a boolean mask inside jit should raise")
except NonConcreteBooleanIndexError as e:
    show("v[v > 0] inside jit", f"NonConcreteBooleanIndexError ({type(e).__mro__[1].__name__})")


@jax.jit
def positives_where(v):
    return jnp.where(v > 0, v, 0.0)


show("jnp.where(v > 0, v, 0) inside jit", positives_where(v))
assert np.array_equal(np.asarray(positives_where(v)), [0, 3, 0, 4])
show("jnp.nonzero(v > 0, size=3, fill_value=-1)", jnp.nonzero(v > 0, size=3, fill_value=-1)[0])
assert np.array_equal(np.asarray(jnp.nonzero(v > 0, size=3, fill_value=-1)[0]), [1, 3, -1])

show("integer division by zero (XLA's rule)", jnp.array([7]) // 0)
show("float 0/0", jnp.array(0.0) / 0.0)


# Python control flow on traced values: JAX raises TracerBoolConversionError here, pyree
# rewrites the `if` into a structured conditional.
@jax.jit
def relu_if(x):
    if x > 0:
        return x
    return 0.0 * x


show("Python `if` on a traced value under jit", [float(relu_if(t)) for t in (-2.0, 3.0)])
assert [float(relu_if(t)) for t in (-2.0, 3.0)] == [0.0, 3.0]
print("\nall comparisons hold")
