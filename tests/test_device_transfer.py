"""Reading results through a queue copy into host memory: the only way to read a GPU's
device-local memory, which the host cannot map. CI has no GPU, so these tests force that path on
the CPU (``device.READ_BY_COPY``) and check every kind of read: values, callbacks' operands,
debug prints and debug_nans' re-run. Then the other CUDA path run on the CPU: jitted programs
computing into buffers pyree allocates (``executable.CALLER_STORAGE_PLATFORMS``)."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.dtypes import bfloat16
from pyree.runtime import device as device_module
from pyree.runtime import executable


@pytest.fixture
def copies(monkeypatch):
    """Force reads through the copy path, and count the copies made."""
    count = []
    real = device_module._read_by_copy

    def counted(*args):
        count.append(args[1])
        return real(*args)

    monkeypatch.setattr(device_module, "READ_BY_COPY", True)
    monkeypatch.setattr(device_module, "_read_by_copy", counted)
    return count


def test_results_read_through_host_memory(copies):
    values = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(True),
              np.array([1 + 2j, -3j], np.complex64), np.arange(5).astype(bfloat16),
              np.uint8([1, 2, 255]), np.float16([0.5, -2.0]), np.int32(7)]
    double = pyree.jit(lambda x: x + x)
    for v in values:
        got = jnp.asarray(v)
        np.testing.assert_array_equal(np.asarray(got), v)
        if v.dtype != np.bool_:
            np.testing.assert_array_equal(np.asarray(double(got)), v + v)
    assert len(copies) == len(values) + len(values) - 1
    # A slice of a larger result, a 0-d read, an empty array (nothing to copy).
    x = jnp.arange(10.0)[2:5]
    np.testing.assert_array_equal(np.asarray(x), [2.0, 3.0, 4.0])
    assert float(jnp.sum(x)) == 9.0
    assert np.asarray(jnp.zeros((0, 3))).shape == (0, 3)
    assert pyree.device_get({"a": jnp.ones(2)})["a"].tolist() == [1.0, 1.0]


def test_callback_operands_and_debug_nans_read_through_host_memory(copies, capsys):
    seen = []

    @pyree.jit
    def f(x):
        pyree.debug.callback(lambda v: seen.append(np.array(v)), x * 2)
        pyree.debug.print("x = {}", x)
        y = pyree.pure_callback(lambda v: np.sin(v), jax_shape(x), x)
        return y + 1

    def jax_shape(x):
        return pyree.ShapeDtypeStruct(x.shape, x.dtype)

    x = np.array([0.5, 1.5], np.float32)
    np.testing.assert_allclose(np.asarray(f(x)), np.sin(x) + 1, rtol=1e-6)
    np.testing.assert_array_equal(seen[0], x * 2)
    assert "x = [0.5 1.5]" in capsys.readouterr().out
    pyree.config.update("debug_nans", True)
    try:
        with pytest.raises(FloatingPointError):
            pyree.jit(lambda v: jnp.log(v - 1.0))(np.array([0.0, 2.0], np.float32))
    finally:
        pyree.config.update("debug_nans", False)
    assert copies


# -- results and intermediates in buffers pyree allocates (the CUDA path, forced here) ------

@pytest.fixture
def caller_storage(monkeypatch):
    """Jitted straight-line programs and eager kernels compute into buffers pyree allocates,
    as on CUDA (eager kernels compiled before are set aside)."""
    from pyree.transpiler.backend import eager
    monkeypatch.setattr(eager, "_kernels", {})
    added = "cpu" not in executable.CALLER_STORAGE_PLATFORMS
    executable.CALLER_STORAGE_PLATFORMS.add("cpu")
    yield eager._kernels
    if added:
        executable.CALLER_STORAGE_PLATFORMS.discard("cpu")


def _executable_of(f, *args):
    return next(iter(f._cache.values())).executable


def test_outputs_and_intermediates_in_caller_storage(caller_storage):
    a = np.random.default_rng(0).normal(size=(64, 48)).astype(np.float32)
    f = pyree.jit(lambda a: ((a @ a.T) @ (a @ a.T), jnp.tanh(a).sum(), a, jnp.ones(2),
                             a[:0], (a * 2,) * 2, (a > 0).astype(np.uint8)))
    chain, total, same, ones, empty, twice, bits = f(a)
    np.testing.assert_array_equal(np.asarray(bits), (a > 0).astype(np.uint8))
    assert _executable_of(f).caller_storage
    exact = (a.astype(np.float64) @ a.T) @ (a.astype(np.float64) @ a.T)
    np.testing.assert_allclose(np.asarray(chain), exact, rtol=2e-5, atol=1e-3)
    np.testing.assert_allclose(float(total), np.tanh(a.astype(np.float64)).sum(), rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(same), a)
    assert np.asarray(ones).tolist() == [1.0, 1.0] and np.asarray(empty).shape == (0, 48)
    np.testing.assert_array_equal(np.asarray(twice[0]), a * 2)
    np.testing.assert_array_equal(np.asarray(twice[1]), a * 2)
    # Each call has its own buffers: results of two calls stay apart.
    first, second = f(a)[0], f(a + 1)[0]
    assert not np.array_equal(np.asarray(first), np.asarray(second))
    # A program with a loop keeps IREE's own allocations (it waits for each condition).
    loop = pyree.jit(lambda a: pyree.lax.while_loop(lambda c: c.sum() < 1e6, lambda c: c * 2.0,
                                                    a * a + 1.0))
    assert float(loop(a).sum()) >= 1e6
    assert not _executable_of(loop).caller_storage


def test_intermediate_size_from_iree_function(caller_storage, monkeypatch):
    # Where IREE records no constant size for the intermediates, its size function is asked.
    def by_query(fn, module):
        return module.lookup_function(fn.reflection["iree.abi.transients.size"])
    monkeypatch.setattr(executable, "_scratch_size", by_query)
    a = np.random.default_rng(1).normal(size=(40, 40)).astype(np.float32)
    got = pyree.jit(lambda a: (a @ a) @ a)(a)
    np.testing.assert_allclose(np.asarray(got), (a.astype(np.float64) @ a) @ a, rtol=1e-4,
                               atol=1e-4)


def test_cuda_straight_line_program_queues_no_allocation():
    # IREE's CUDA runtime waits on the host in a queue allocation or deallocation for the work
    # it is ordered after: a straight-line program for CUDA must contain neither.
    from iree.compiler import compile_str
    from pyree.runtime import compile as rcompile
    from pyree.runtime.device import Device
    from pyree.transpiler.backend.lower import lower_closed_ir
    f = pyree.jit(lambda a: ((a @ a) @ (a @ a), jnp.tanh(a).sum()))
    closed, _ = f._trace(*f._abstract_signature((np.ones((256, 256), np.float32),), {}))
    cuda = Device("cuda")
    text, flags = rcompile.prepare_module(
        lower_closed_ir(closed, platform="cuda", caller_storage=True).text, cuda.compile_flags)
    hal = compile_str(text, extra_args=list(flags) + ["--compile-to=hal"]).decode()
    main = hal[hal.index("util.func public @main("):]
    main = main[:main.index("util.func public @main_transients_size")]
    assert "hal.device.queue.execute" in main
    assert "queue.alloca" not in main and "queue.dealloca" not in main
    assert "iree.abi.transients.size.constant" in hal


def test_eager_kernels_in_caller_storage(caller_storage):
    x = np.random.default_rng(2).normal(size=(3, 40)).astype(np.float32)
    a = jnp.asarray(x)
    np.testing.assert_allclose(np.asarray(jnp.exp(a).sum(axis=1)), np.exp(x).sum(axis=1),
                               rtol=1e-5)
    np.testing.assert_array_equal(np.asarray(a[1:, ::3]), x[1:, ::3])
    np.testing.assert_allclose(np.asarray(a @ a.T), x @ x.T, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(np.asarray(abs(a * 3).astype(np.uint8) + np.uint8(250)),
                                  np.abs(x * 3).astype(np.uint8) + np.uint8(250))
    np.testing.assert_array_equal(np.asarray(jnp.sort(a, axis=1)), np.sort(x, axis=1))
    assert caller_storage and all(k.caller_storage for k in caller_storage.values())
