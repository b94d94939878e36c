"""Vulkan: the target chosen from the device, the features a program needs, and programs run
on a Vulkan device (Mesa's lavapipe in CI) agreeing with NumPy.

Tests that need a device skip where the Vulkan loader finds none."""
import subprocess
import sys

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.runtime import device as rdevice
from pyree.runtime.device import Device
from pyree.runtime.vulkan import (IREE_DEFAULT_VULKAN_TARGET, VulkanDeviceInfo, missing_feature,
                                  query_vulkan_devices, vulkan_target_for)

# Run again on Vulkan (.ci/run: PYREE_PLATFORM=vulkan pytest -n 0 -m vulkan_subset).
pytestmark = pytest.mark.vulkan_subset

_FEATURES = dict(api_version=(1, 3, 0), shader_float64=True, shader_int64=True,
                 shader_int16=True, shader_float16=True, shader_int8=True,
                 storage_buffer_16bit_access=True, storage_buffer_8bit_access=True,
                 cooperative_matrix=False)
LAVAPIPE = VulkanDeviceInfo(name="llvmpipe (LLVM 15.0.6, 256 bits)", vendor_id=0x10005,
                            device_type=4, **_FEATURES)
NVIDIA = VulkanDeviceInfo(name="NVIDIA H200", vendor_id=0x10DE, device_type=2,
                          **dict(_FEATURES, cooperative_matrix=True))


def _vulkan_or_skip() -> Device:
    try:
        return pyree.devices("vulkan")[0]
    except RuntimeError as e:
        pytest.skip(f"no Vulkan device on this machine ({str(e).splitlines()[0][:120]})")


def test_target_is_chosen_from_the_device():
    assert vulkan_target_for(LAVAPIPE) == "llvmpipe"
    # NVIDIA: the CUDA architecture of its compute capability (Hopper: sm_80, as for CUDA).
    assert vulkan_target_for(NVIDIA, (9, 0)) == "sm_80"
    assert vulkan_target_for(NVIDIA, (8, 6)) == "sm_86"
    assert vulkan_target_for(NVIDIA, (7, 5)) == "sm_75"
    # No CUDA driver to ask, another vendor, or no device: IREE's own default.
    assert vulkan_target_for(NVIDIA, None) == IREE_DEFAULT_VULKAN_TARGET
    other = VulkanDeviceInfo(name="AMD Radeon", vendor_id=0x1002, device_type=2, **_FEATURES)
    assert vulkan_target_for(other) == IREE_DEFAULT_VULKAN_TARGET
    assert vulkan_target_for(None) == IREE_DEFAULT_VULKAN_TARGET


def test_missing_features_are_named():
    assert missing_feature(np.float64, LAVAPIPE, "llvmpipe") is None
    assert missing_feature(np.float16, LAVAPIPE, "llvmpipe") is None
    no_f64 = VulkanDeviceInfo(**dict(vars(LAVAPIPE), shader_float64=False))
    assert "lacks shaderFloat64" in missing_feature(np.float64, no_f64, "llvmpipe")
    assert "lacks shaderFloat64" in missing_feature(np.complex128, no_f64, "llvmpipe")
    assert missing_feature(np.float32, no_f64, "llvmpipe") is None
    no_16bit_storage = VulkanDeviceInfo(**dict(vars(LAVAPIPE), storage_buffer_16bit_access=False))
    assert "storageBuffer16BitAccess" in missing_feature(np.float16, no_16bit_storage, "llvmpipe")
    # IREE's default target has 32-bit types only, whatever the device has.
    for dtype in (np.float64, np.float16, np.int16):
        assert IREE_DEFAULT_VULKAN_TARGET in missing_feature(dtype, LAVAPIPE,
                                                             IREE_DEFAULT_VULKAN_TARGET)
    for dtype in (np.float32, np.int32, np.bool_, np.int8, np.complex64):
        assert missing_feature(dtype, LAVAPIPE, IREE_DEFAULT_VULKAN_TARGET) is None


def test_target_option_is_part_of_the_compile_flags_and_checked():
    saved = pyree.config.vulkan_target
    try:
        pyree.config.update("vulkan_target", "sm_80")
        assert "--iree-vulkan-target=sm_80" in Device("vulkan").compile_flags
        pyree.config.update("vulkan_target", "no_such_gpu")
        with pytest.raises(ValueError, match="vulkan_target.*'no_such_gpu'.*does not know"):
            Device("vulkan").compile_flags
    finally:
        pyree.config.update("vulkan_target", saved)
    assert f"--iree-vulkan-target={rdevice.vulkan_target()}" in Device("vulkan").compile_flags


def test_program_a_target_cannot_compute_is_refused_at_the_users_line():
    saved = pyree.config.vulkan_target
    pyree.config.update("vulkan_target", IREE_DEFAULT_VULKAN_TARGET)
    try:
        with pytest.raises(TypeError) as caught:
            pyree.export(lambda x: jnp.sin(x).astype(jnp.float16), "f32[4]", target="vulkan")
        message = str(caught.value)
        assert "float16" in message and "has no 16-bit floats" in message
        assert "test_vulkan.py" in message and "jnp.sin(x).astype(jnp.float16)" in message
    finally:
        pyree.config.update("vulkan_target", saved)


def test_loader_query_matches_iree_and_needs_no_device():
    found = query_vulkan_devices()   # [] without a loader or device, never an error
    if not found:
        pytest.skip("no Vulkan device on this machine")
    gpu = _vulkan_or_skip()
    info = rdevice.vulkan_device_info(gpu.id)
    assert info in found
    if info.name.startswith("llvmpipe"):
        assert rdevice.vulkan_target(gpu.id) == "llvmpipe" or pyree.config.vulkan_target != "auto"


def test_jit_eager_transfers_and_async_calls():
    gpu = _vulkan_or_skip()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 256), dtype=np.float32)
    x = pyree.device_put(a, gpu)
    assert x.device == gpu
    step = pyree.jit(lambda m, v: jnp.tanh(m @ v) + v.sum())
    y = step(x, x[:, :1])
    z = step(x, y)               # queued behind y, without the host waiting
    assert z.device == gpu and z.shape == (256, 1)
    y64 = np.tanh(a.astype(np.float64) @ a[:, :1]) + a[:, :1].sum()
    z64 = np.tanh(a.astype(np.float64) @ y64) + y64.sum()
    np.testing.assert_allclose(np.asarray(z), z64, rtol=1e-4, atol=1e-3)
    assert y.is_ready() and z.is_ready()
    e = jnp.exp(x[:3, :4]) * 2.0            # eager ops on the device
    assert e.device == gpu
    np.testing.assert_allclose(np.asarray(e), np.exp(a[:3, :4]) * 2, rtol=1e-6)
    back = pyree.device_put(z, pyree.devices("cpu")[0])
    assert back.device.platform == "cpu"
    np.testing.assert_array_equal(np.asarray(back), np.asarray(z))
    again = pyree.device_put(back, gpu)
    np.testing.assert_array_equal(np.asarray(again), np.asarray(z))


def test_callbacks_on_vulkan(capsys):
    gpu = _vulkan_or_skip()
    seen = []

    def f(v):
        pyree.debug.callback(lambda w: seen.append(np.asarray(w)), v * 2)
        pyree.debug.print("v={v}", v=v)
        return pyree.pure_callback(np.sort, jax_struct(v), v) + 1.0

    def jax_struct(v):
        return pyree.ShapeDtypeStruct(v.shape, v.dtype)

    x = pyree.device_put(np.array([3.0, -1.0, 2.0], np.float32), gpu)
    out = pyree.jit(f)(x)
    np.testing.assert_array_equal(np.asarray(out), [0.0, 3.0, 4.0])
    np.testing.assert_array_equal(seen[0], [6.0, -2.0, 4.0])
    assert "v=[ 3. -1.  2.]" in capsys.readouterr().out


def test_cpu_traces_still_read_after_a_vulkan_device_opened(capsys, monkeypatch):
    # One debug sink for the process read CPU buffers through the Vulkan device once one had
    # opened: "buffer is not backed by the Vulkan HAL". Each device has its own sink now.
    _vulkan_or_skip()
    monkeypatch.setattr(rdevice, "READ_BY_COPY", True)
    cpu = pyree.devices("cpu")[0]
    with pyree.default_device(cpu):
        f = pyree.jit(lambda v: (pyree.debug.print("w={w}", w=v + 1), v * 2)[1])
        np.testing.assert_array_equal(np.asarray(f(np.arange(3.0, dtype=np.float32))), [0, 2, 4])
    assert "w=[1. 2. 3.]" in capsys.readouterr().out


def test_wider_and_narrower_types_on_lavapipe(x64):
    gpu = _vulkan_or_skip()
    if rdevice.vulkan_target(gpu.id) != "llvmpipe":
        pytest.skip("checked on lavapipe (the 'llvmpipe' target)")
    f = pyree.jit(lambda v: v * 3 + 1)
    for dtype in (np.float64, np.int64, np.int16, np.int8, np.float16):
        v = np.arange(-5, 7).astype(dtype)
        got = np.asarray(f(pyree.device_put(v, gpu)))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, v * dtype(3) + dtype(1))
    big = np.array([2 ** 40 + 5, -2 ** 41], np.int64)
    np.testing.assert_array_equal(np.asarray(f(pyree.device_put(big, gpu))), big * 3 + 1)
    t = np.linspace(0.1, 3.0, 7)
    np.testing.assert_allclose(np.asarray(pyree.jit(jnp.sin)(pyree.device_put(t, gpu))),
                               np.sin(t), rtol=1e-14)


def test_suite_subset_skips_cleanly_without_a_vulkan_device(tmp_path):
    # The CI's Vulkan run (PYREE_PLATFORM=vulkan -m vulkan_subset) on a machine whose loader
    # finds no device: every test skips, saying why, instead of failing.
    import os
    test = tmp_path / "test_one.py"
    test.write_text("import pytest\n\n@pytest.mark.vulkan_subset\ndef test_x():\n    pass\n")
    env = dict(os.environ, PYREE_PLATFORM="vulkan", VK_DRIVER_FILES=str(tmp_path / "none.json"),
               VK_ICD_FILENAMES=str(tmp_path / "none.json"))
    conftest = os.path.join(os.path.dirname(__file__), "conftest.py")
    (tmp_path / "conftest.py").write_text(open(conftest).read())
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "-n", "0", "-m", "vulkan_subset", str(test)], env=env,
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 skipped" in done.stdout and "no vulkan device" in done.stdout.lower()


def test_vulkan_devices_get_no_allocator_wrapper(monkeypatch):
    # IREE's Vulkan queue_alloca casts the device allocator to its own type unchecked: with the
    # caching wrapper every call failed ('allocator cannot allocate a Vulkan buffer') and the
    # process crashed at exit (runtime/device._allocators).
    monkeypatch.delenv("PYREE_ALLOCATORS", raising=False)
    assert rdevice._allocators("vulkan") == []
    assert rdevice._allocators("cpu") == ["caching"]


def test_eager_concatenation_of_three_operands():
    # IREE's unknown-shape concatenation of 3+ operands read the third from the second's
    # buffer on lavapipe; eager mode joins two at a time on Vulkan (eager.VULKAN_CONCAT_GROUP).
    gpu = _vulkan_or_skip()
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    parts = [pyree.device_put(x + 10 * k, gpu) for k in range(3)]
    parts.append(pyree.device_put(np.full((3, 1), 7.0, np.float32), gpu))
    for axis in (0, 1):
        pieces = parts[:3] if axis == 0 else parts
        np.testing.assert_array_equal(np.asarray(jnp.concatenate(pieces, axis)),
                                      np.concatenate([np.asarray(p) for p in pieces], axis))


def _ulps(got: np.ndarray, want: np.ndarray) -> float:
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(all="ignore"):
        error = np.abs(got - want) / np.maximum(np.spacing(np.abs(want)), 5e-324)
    return float(np.max(np.where(same, 0.0, error)))


def test_float64_exp_log_and_their_kin_on_vulkan(x64):
    # SPIR-V's exp and log are 32-bit: pyree builds float64 exp, log and log1p from arithmetic
    # (float64_math.py) and expm1, tanh and logistic from them; within 3 ulps of NumPy over
    # the whole range, overflow, underflow, subnormal results, zeros, infinities and NaN.
    gpu = _vulkan_or_skip()
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-745, 710, 2000), rng.uniform(-1, 1, 1000),
                        rng.uniform(-1e-8, 1e-8, 300),
                        [0.0, -0.0, 1.0, -1.0, 709.7, 709.79, -745.1, -745.2, -708.5, -740.0,
                         np.inf, -np.inf, np.nan]])
    positive = np.concatenate([np.exp(rng.uniform(-700, 700, 2000)), rng.uniform(0, 2, 1000),
                               rng.uniform(-0.5, 0.5, 300) * 1e-12,
                               [0.0, 1.0, 5e-324, 2.2e-308, np.inf, np.nan, -1.0, -0.5]])
    on_gpu = {id(x): pyree.device_put(x, gpu), id(positive): pyree.device_put(positive, gpu)}
    with np.errstate(all="ignore"):
        logistic = np.where(x < 0, np.exp(x) / (1 + np.exp(x)), 1 / (1 + np.exp(-x)))
        cases = [(jnp.exp, x, np.exp(x)), (jnp.log, positive, np.log(positive)),
                 (jnp.expm1, x, np.expm1(x)), (jnp.log1p, positive, np.log1p(positive)),
                 (jnp.tanh, x, np.tanh(x)), (pyree.nn.sigmoid, x, logistic)]
    for f, host, want in cases:
        for run in (pyree.jit(f), f):
            got = np.asarray(run(on_gpu[id(host)]))
            assert got.dtype == np.float64 and _ulps(got, want) <= 3, (f, _ulps(got, want))
    # erf (IREE expands it into SPIR-V's 32-bit exp) and pow (its float64 formula needs exact
    # products that Mesa's shader compiler reassociates away) are refused at the user's line.
    v = on_gpu[id(x)]
    with pytest.raises(TypeError, match=r"erf of float64 .* Vulkan(.|\n)*test_vulkan.py"):
        pyree.jit(lambda v: pyree.scipy.special.erf(v) + 1.0)(v)
    with pytest.raises(TypeError, match="pow of float64 values cannot be computed on Vulkan"):
        v ** 0.37
    t = np.linspace(0.1, 0.9, 5)
    g = pyree.device_put(t, gpu)
    np.testing.assert_allclose(np.asarray(jnp.sqrt(g) / jnp.arctan2(g, 0.5)),
                               np.sqrt(t) / np.arctan2(t, 0.5), rtol=1e-15)


def test_bfloat16_contractions_on_vulkan():
    # IREE 3.13's SPIR-V code for a product or convolution reading or writing bfloat16 in its
    # dispatch failed to compile ("failed to legalize operation 'vector.bitcast'"): on Vulkan
    # their bf16 operands widen, and the widening and rounding run in dispatches of their own
    # (lower.contraction_operand). Values as on the CPU, bit for bit.
    device = _vulkan_or_skip()
    cpu = pyree.devices("cpu")[0]
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 24)).astype(np.float32)
    x = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
    w = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    bf16, f32 = jnp.bfloat16, jnp.float32

    def conv(x, w):
        return pyree.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                              dimension_numbers=("NHWC", "HWIO", "NHWC"))

    cases = [(lambda a: a @ a.T, (a,)),
             (lambda a: (a.astype(f32) @ a.astype(f32).T).astype(bf16), (a,)),
             (pyree.grad(lambda a: jnp.sum((a @ a.T).astype(f32))), (a,)),
             (conv, (x, w)),
             (lambda x, w: conv(x.astype(f32), w.astype(f32)), (x, w))]
    for f, args in cases:
        on = [[pyree.device_put(v, d).astype(bf16) for v in args] for d in (device, cpu)]
        got, want = (np.asarray(pyree.jit(f)(*vs).astype(f32)) for vs in on)
        np.testing.assert_array_equal(got, want)
    eager = pyree.device_put(a, device).astype(bf16)
    np.testing.assert_array_equal(np.asarray((eager @ eager.T).astype(f32)),
                                  np.asarray(pyree.jit(lambda a: a @ a.T)(eager).astype(f32)))


def test_a_lost_device_is_explained():
    # (What IREE 3.13 raised on lavapipe when its queue's wake-up semaphore went backwards.)
    error = RuntimeError("Error invoking function: c/runtime/src/iree/hal/drivers/vulkan/"
                         "queue.c:2867: DATA_LOSS; [vkSignalSemaphore] VK_ERROR_DEVICE_LOST")
    explained = rdevice.device_lost_error(error)
    assert "the Vulkan device was lost" in str(explained) and "queue.c:2867" in str(explained)
    other = RuntimeError("something else")
    assert rdevice.device_lost_error(other) is other
