"""Reading results through a queue copy into host memory: the only way to read a GPU's
device-local memory, which the host cannot map. CI has no GPU, so these tests force that path on
the CPU (``device.READ_BY_COPY``) and check every kind of read: values, callbacks' operands,
debug prints and debug_nans' re-run."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.dtypes import bfloat16
from pyree.runtime import device as device_module


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
