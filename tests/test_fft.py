"""``pyree.numpy.fft`` and ``lax.fft`` against ``numpy.fft`` (computed in float64): every
transform over lengths that take each of the algorithm's paths (direct DFT matrices up to 64
and for primes up to 256, Cooley-Tukey splits, Bluestein for larger primes, the even-length
real transforms' half-length packing, odd real lengths), ``n``/``s`` padding and truncation,
axes, norms and dtypes; eagerly and under ``jit``; derivatives against central differences;
``vmap``.

Compiles are the cost: the value sweeps run eagerly (each primitive compiles once per dtype and
rank, whatever the shapes), and each jitted test checks many transforms in one program.
"""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax

# Relative error (max |error| / max |value|) against NumPy in float64.
F32_TOL = 1e-5
F64_TOL = 1e-12
NORMS = (None, "backward", "ortho", "forward")
# Direct (1, 2, 5, 7, 16, 64, 97), split (100, 128, 4096), Bluestein (257, 1009).
LENGTHS = (1, 2, 5, 7, 16, 64, 97, 100, 128, 257, 1009, 4096)


def close(got, want, tol=F32_TOL, dtype=None):
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    if dtype is not None:
        assert got.dtype == dtype, (got.dtype, dtype)
    if want.size:
        scale = max(np.abs(want).max(), 1e-30)
        error = np.abs(got - want).max() / scale
        assert error <= tol, f"relative error {error:.2e} > {tol:.0e}"


def numpy_nd(name, a, s=None, axes=None, **kwargs):
    """NumPy's N-D transform, given the axes that ``s`` alone implies (the last len(s): NumPy
    2 deprecates leaving them out)."""
    if s is not None and axes is None and not name.endswith("2"):
        axes = tuple(range(-len(s), 0))
    if axes is not None:
        kwargs["axes"] = axes
    return getattr(np.fft, name)(a, s=s, **kwargs)


def complex_data(rng, *shape, dtype=np.complex64):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def real_data(rng, *shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# -- values, eagerly ---------------------------------------------------------------------------

@pytest.mark.parametrize("n", LENGTHS)
def test_one_dimensional_transforms_match_numpy(n):
    rng = np.random.default_rng(n)
    z = complex_data(rng, 3, n)
    x = real_data(rng, 3, n)
    half = complex_data(rng, 3, n // 2 + 1)
    norm = NORMS[n % 4]
    f64 = z.astype(np.complex128)
    close(jnp.fft.fft(z, norm=norm), np.fft.fft(f64, norm=norm), dtype=np.complex64)
    close(jnp.fft.ifft(z, norm=norm), np.fft.ifft(f64, norm=norm), dtype=np.complex64)
    close(jnp.fft.rfft(x, norm=norm), np.fft.rfft(x.astype(float), norm=norm),
          dtype=np.complex64)
    close(jnp.fft.ihfft(x, norm=norm), np.fft.ihfft(x.astype(float), norm=norm),
          dtype=np.complex64)
    h64 = half.astype(np.complex128)
    close(jnp.fft.irfft(half, n, norm=norm), np.fft.irfft(h64, n, norm=norm), dtype=np.float32)
    close(jnp.fft.hfft(half, n, norm=norm), np.fft.hfft(h64, n, norm=norm), dtype=np.float32)
    # Along the first axis.
    close(jnp.fft.fft(z.T, axis=0), np.fft.fft(f64.T, axis=0))
    close(jnp.fft.irfft(half.T, n, axis=0), np.fft.irfft(h64.T, n, axis=0))


def test_n_pads_and_truncates():
    rng = np.random.default_rng(0)
    z = complex_data(rng, 2, 12)
    x = real_data(rng, 12, 2)
    z64, x64 = z.astype(np.complex128), x.astype(np.float64)
    for n in (1, 5, 12, 17, 100, 300):
        close(jnp.fft.fft(z, n), np.fft.fft(z64, n))
        close(jnp.fft.ifft(z, n, norm="ortho"), np.fft.ifft(z64, n, norm="ortho"))
        close(jnp.fft.rfft(x, n, axis=0), np.fft.rfft(x64, n, axis=0))
        close(jnp.fft.ihfft(x, n, axis=-2), np.fft.ihfft(x64, n, axis=-2))
        close(jnp.fft.irfft(z, n), np.fft.irfft(z64, n))
        close(jnp.fft.hfft(z, n, norm="forward"), np.fft.hfft(z64, n, norm="forward"))
    # Default irfft/hfft lengths: 2 * (m - 1).
    close(jnp.fft.irfft(z), np.fft.irfft(z64))
    close(jnp.fft.hfft(z), np.fft.hfft(z64))


def test_irfft_ignores_imaginary_parts_of_zero_and_nyquist_bins():
    spectrum = np.array([1 + 5j, 2 - 1j, 3 + 2j, 4 + 7j], np.complex64)
    for n in (6, 7, 130, 131):      # even and odd; direct and packed/full paths
        want = np.fft.irfft(spectrum.astype(np.complex128), n)
        close(jnp.fft.irfft(spectrum, n), want)


def test_multidimensional_transforms_match_numpy():
    rng = np.random.default_rng(1)
    z = complex_data(rng, 3, 6, 10)
    x = real_data(rng, 3, 6, 10)
    z64, x64 = z.astype(np.complex128), x.astype(np.float64)
    cases = [
        ("fft2", {}), ("fft2", {"s": (4, 12)}), ("fft2", {"axes": (0, 2), "norm": "ortho"}),
        ("ifft2", {}), ("ifft2", {"s": (7, 3), "axes": (2, 1), "norm": "forward"}),
        ("fftn", {}), ("fftn", {"s": (5, 8)}), ("fftn", {"axes": (2, 0)}),
        ("fftn", {"s": (2, 9, 4), "norm": "ortho"}), ("ifftn", {"axes": (1,)}),
        ("ifftn", {"s": (4, 4, 4), "axes": (1, 2, 0), "norm": "backward"}),
    ]
    for name, kwargs in cases:
        got = getattr(jnp.fft, name)(z, **kwargs)
        close(got, numpy_nd(name, z64, **kwargs), dtype=np.complex64)
    real_cases = [
        ("rfft2", {}), ("rfft2", {"s": (5, 7), "axes": (2, 0)}), ("rfftn", {}),
        ("rfftn", {"s": (4, 9)}), ("rfftn", {"axes": (0, 1), "norm": "ortho"}),
    ]
    for name, kwargs in real_cases:
        got = getattr(jnp.fft, name)(x, **kwargs)
        close(got, numpy_nd(name, x64, **kwargs), dtype=np.complex64)
    inverse_cases = [
        ("irfft2", {}), ("irfft2", {"s": (6, 9)}), ("irfft2", {"axes": (0, 1), "s": (3, 4)}),
        ("irfftn", {}), ("irfftn", {"s": (3, 5, 18), "norm": "forward"}),
        ("irfftn", {"axes": (2, 1), "norm": "ortho"}),
    ]
    for name, kwargs in inverse_cases:
        got = getattr(jnp.fft, name)(z, **kwargs)
        close(got, numpy_nd(name, z64, **kwargs), dtype=np.float32)
    # Round trips.
    close(jnp.fft.irfftn(jnp.fft.rfftn(x), x.shape), x64, tol=1e-6)
    close(jnp.fft.ifftn(jnp.fft.fftn(z)), z64, tol=1e-6)


def test_dtypes_follow_jax():
    assert jnp.fft.fft(np.arange(4, dtype=np.int32)).dtype == np.complex64
    assert jnp.fft.fft(np.ones(4, np.bool_)).dtype == np.complex64
    assert jnp.fft.fft(np.ones(4, np.float16)).dtype == np.complex64
    assert jnp.fft.rfft(np.arange(4, dtype=np.int32)).dtype == np.complex64
    assert jnp.fft.fft(np.ones(4, np.float64)).dtype == np.complex64   # no x64
    assert jnp.fft.irfft(np.ones(3, np.complex64)).dtype == np.float32
    assert jnp.fft.irfft(np.ones(3, np.float32)).dtype == np.float32
    assert jnp.fft.hfft(np.ones(3, np.complex64)).dtype == np.float32
    close(jnp.fft.fft(np.arange(6, dtype=np.int32)), np.fft.fft(np.arange(6.0)))
    # Empty results, as JAX gives them.
    assert jnp.fft.irfft(np.ones(1, np.complex64)).shape == (0,)
    assert jnp.fft.fft(np.ones((0, 4), np.float32)).shape == (0, 4)


def test_float64_under_x64(x64):
    rng = np.random.default_rng(2)
    z = complex_data(rng, 3, 90, dtype=np.complex128)
    x = real_data(rng, 3, 100, dtype=np.float64)

    # One program: padding complex128 input (split 10 x 13), Bluestein, the real paths.
    @pyree.jit
    def transforms(z, x):
        return (jnp.fft.fft(z, 130), jnp.fft.ifft(z, 257, norm="ortho"), jnp.fft.rfft(x),
                jnp.fft.irfft(z, 97), jnp.fft.hfft(z[0], 100), jnp.fft.rfft2(x[:, :12], (5, 12)))

    got = transforms(z, x)
    want = (np.fft.fft(z, 130), np.fft.ifft(z, 257, norm="ortho"), np.fft.rfft(x),
            np.fft.irfft(z, 97), np.fft.hfft(z[0], 100), np.fft.rfft2(x[:, :12], (5, 12)))
    for g, w in zip(got, want):
        close(g, w, F64_TOL, dtype=w.dtype)


# -- jit -------------------------------------------------------------------------------------

def test_every_transform_under_jit():
    rng = np.random.default_rng(3)
    z = complex_data(rng, 4, 100)
    x = real_data(rng, 4, 100)
    small = complex_data(rng, 3, 6, 5)
    small_real = real_data(rng, 3, 6, 5)

    @pyree.jit
    def transforms(z, x, small, small_real):
        return {
            "fft": jnp.fft.fft(z, norm="ortho"),                 # split 10 x 10
            "ifft": jnp.fft.ifft(z, 7, axis=0),                  # padded, direct
            "rfft": jnp.fft.rfft(x),                             # even: half-length packing
            "irfft": jnp.fft.irfft(z, 128, norm="forward"),
            "irfft_105": jnp.fft.irfft(z, 105),                  # odd composite: full spectrum
            "hfft": jnp.fft.hfft(z, 30),
            "ihfft": jnp.fft.ihfft(x[:, :9], norm="ortho"),
            "fft2": jnp.fft.fft2(small),
            "ifft2": jnp.fft.ifft2(small, s=(4, 8)),
            "rfft2": jnp.fft.rfft2(small_real, axes=(0, 1)),
            "irfft2": jnp.fft.irfft2(small, s=(5, 6)),
            "fftn": jnp.fft.fftn(small),
            "ifftn": jnp.fft.ifftn(small, axes=(2, 0), norm="forward"),
            "rfftn": jnp.fft.rfftn(small_real, s=(7, 4)),
            "irfftn": jnp.fft.irfftn(small),
        }

    got = transforms(z, x, small, small_real)
    z64, x64 = z.astype(np.complex128), x.astype(np.float64)
    s64, sr64 = small.astype(np.complex128), small_real.astype(np.float64)
    want = {
        "fft": np.fft.fft(z64, norm="ortho"), "ifft": np.fft.ifft(z64, 7, axis=0),
        "rfft": np.fft.rfft(x64), "irfft": np.fft.irfft(z64, 128, norm="forward"),
        "irfft_105": np.fft.irfft(z64, 105), "hfft": np.fft.hfft(z64, 30),
        "ihfft": np.fft.ihfft(x64[:, :9], norm="ortho"),
        "fft2": np.fft.fft2(s64), "ifft2": np.fft.ifft2(s64, s=(4, 8)),
        "rfft2": np.fft.rfft2(sr64, axes=(0, 1)), "irfft2": np.fft.irfft2(s64, s=(5, 6)),
        "fftn": np.fft.fftn(s64), "ifftn": np.fft.ifftn(s64, axes=(2, 0), norm="forward"),
        "rfftn": numpy_nd("rfftn", sr64, s=(7, 4)), "irfftn": np.fft.irfftn(s64),
    }
    for key, value in want.items():
        close(got[key], value, dtype=np.float32 if value.dtype.kind == "f" else np.complex64)


# -- derivatives and vmap ----------------------------------------------------------------------

def _central_differences(f, x, h=1e-6):
    """The gradient of real ``f`` at float64 ``x`` (JAX's convention for complex ``x``:
    df/dRe - i df/dIm)."""
    grad = np.zeros(x.shape, np.complex128 if np.iscomplexobj(x) else np.float64)
    for index in np.ndindex(*x.shape):
        step = np.zeros(x.shape, x.dtype)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
        if np.iscomplexobj(x):
            grad[index] -= 1j * (f(x + 1j * step) - f(x - 1j * step)) / (2 * h)
    return grad


def test_gradients_match_central_differences():
    rng = np.random.default_rng(4)
    x = real_data(rng, 12)
    z = complex_data(rng, 9)
    weights = rng.standard_normal(7)

    def real_loss(fft, x):
        spectrum = fft.rfft(x)
        return (fft.fft(x, 16).real * 0.3).sum() + (abs(spectrum) ** 2 * weights).sum() \
            + (fft.irfft(spectrum * weights, 11) ** 3).sum()

    def complex_loss(fft, z):
        ramp = np.arange(10.0)
        return (abs(fft.ifft(z, 10) * ramp) ** 2).sum() + fft.irfft(z)[3] \
            + fft.hfft(z, 7)[1] ** 2

    real_want = _central_differences(lambda v: real_loss(np.fft, v), x.astype(np.float64))
    complex_want = _central_differences(lambda v: complex_loss(np.fft, v),
                                        z.astype(np.complex128))

    def f(x):
        return real_loss(jnp.fft, x)

    def g(z):
        return complex_loss(jnp.fft, z)

    # (One program: eagerly, grad runs the same derivative op by op, and compiles a kernel for
    # each new primitive of the backward pass: that costs more here than a program.)
    got_f, got_g = pyree.jit(lambda x, z: (pyree.grad(f)(x), pyree.grad(g)(z)))(x, z)
    close(got_f, real_want, 1e-4)
    close(got_g, complex_want, 1e-4)


def test_vmap():
    rng = np.random.default_rng(5)
    x = real_data(rng, 5, 4, 100)
    got = pyree.vmap(lambda v: jnp.fft.rfft(v, n=64), in_axes=1)(x)
    close(got, np.moveaxis(np.fft.rfft(x.astype(float), n=64), 1, 0))
    got = pyree.jit(pyree.vmap(lambda v: jnp.fft.fft2(v) + jnp.fft.ifft(v[0])))(x)
    want = np.fft.fft2(x.astype(float)) + np.fft.ifft(x[:, :1].astype(float))
    close(got, want)


# -- lax.fft ---------------------------------------------------------------------------------

def test_lax_fft():
    rng = np.random.default_rng(6)
    z = complex_data(rng, 2, 6, 8)
    x = real_data(rng, 2, 6, 8)
    z64, x64 = z.astype(np.complex128), x.astype(np.float64)
    assert [t.name for t in lax.FftType] == ["FFT", "IFFT", "RFFT", "IRFFT"]
    close(lax.fft(z, lax.FftType.FFT, (8,)), np.fft.fft(z64))
    close(lax.fft(z, "fft", (6, 8)), np.fft.fft2(z64))
    close(lax.fft(z, lax.FftType.IFFT, (6, 8)), np.fft.ifft2(z64))   # scaled by 1/n
    close(lax.fft(x, "rfft", (6, 8)), np.fft.rfft2(x64), dtype=np.complex64)
    half = np.fft.rfft2(x64).astype(np.complex64)
    close(lax.fft(half, lax.FftType.IRFFT, (6, 8)), x64, tol=1e-6, dtype=np.float32)
    close(lax.fft(x, "FFT", (8,)), np.fft.fft(x64))       # real input made complex
    close(pyree.jit(lambda v: lax.fft(v, "irfft", (7,)))(z[..., :4]),
          np.fft.irfft(z64[..., :4], 7))
    with pytest.raises(ValueError, match="minor dimensions"):
        lax.fft(z, "fft", (4,))
    with pytest.raises(ValueError, match="only real valued inputs"):
        lax.fft(z, "rfft", (8,))
    with pytest.raises(ValueError, match="Unknown FFT type"):
        lax.fft(z, "dct", (8,))


# -- frequencies, shifts, errors ---------------------------------------------------------------

def test_frequencies_and_shifts():
    for n in (1, 4, 5, 8):
        close(jnp.fft.fftfreq(n), np.fft.fftfreq(n), 1e-7, dtype=np.float32)
        close(jnp.fft.rfftfreq(n, d=0.1), np.fft.rfftfreq(n, d=0.1), 1e-7, dtype=np.float32)
    close(jnp.fft.fftfreq(6, d=jnp.array(0.5)), np.fft.fftfreq(6, 0.5), 1e-7)
    assert jnp.fft.fftfreq(5, dtype=jnp.int32).dtype == np.int32
    close(pyree.jit(lambda d: jnp.fft.fftfreq(7, d))(2.0), np.fft.fftfreq(7, 2.0), 1e-7)
    x = np.arange(30.0, dtype=np.float32).reshape(5, 6)
    for axes in (None, 0, 1, (1, 0), (-1,)):
        np.testing.assert_array_equal(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
        np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))


def test_errors():
    x = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match="repeated axes"):
        jnp.fft.fftn(x, axes=(0, 0))
    with pytest.raises(ValueError, match="Shape and axes have different lengths"):
        jnp.fft.fftn(x, s=(4,), axes=(0, 1))
    with pytest.raises(ValueError, match="Shape should be positive"):
        jnp.fft.fft(x, n=0)
    with pytest.raises(ValueError, match="Invalid norm value"):
        jnp.fft.fft(x, norm="both")
    with pytest.raises(ValueError, match="only real valued inputs"):
        jnp.fft.rfft(x.astype(np.complex64))
    with pytest.raises(ValueError, match="does not support multiple axes"):
        jnp.fft.fft(x, axis=(0, 1))
    with pytest.raises(ValueError, match="only supports 2 axes"):
        jnp.fft.fft2(np.ones((2, 2, 2)), axes=(0, 1, 2))
    with pytest.raises(TypeError, match="requires ndarray"):
        jnp.fft.fft([1.0, 2.0])
