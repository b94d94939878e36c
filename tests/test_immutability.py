"""Arrays are immutable: no compiled program may write into its inputs' buffers.

IREE performs some updates in place on a function's input buffers (its issue #16168); pyree
lowers those updates out of place. These tests read the input buffers back from the device
(bypassing the Array's cached host copy) after each call.
"""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax


def device_contents(x):
    """The buffer's current contents, fetched anew (Arrays cache their first fetch)."""
    x.block_until_ready()
    return x._device.fetch(x.buffer_view(), x.shape, x.dtype)


BASE = np.arange(6, dtype=np.float32)

# name -> (program, the result it should give for BASE)
PROGRAMS = {
    "at_set": (lambda y: y.at[1].set(3.0), [0, 3, 2, 3, 4, 5]),
    "at_set_then_use": (lambda y: y.at[1].set(3.0) * 2, [0, 6, 4, 6, 8, 10]),
    "at_add_slice": (lambda y: y.at[1:].add(1.0), [0, 2, 3, 4, 5, 6]),
    "at_strided": (lambda y: y.at[::2].multiply(5.0), [0, 1, 10, 3, 20, 5]),
    "dus": (lambda y: lax.dynamic_update_slice(y, jnp.ones(2), (1,)), [0, 1, 1, 3, 4, 5]),
    "reshape_then_update": (lambda y: y.reshape(2, 3).at[0].set(-1.0).reshape(6),
                            [-1, -1, -1, 3, 4, 5]),
    "slice_then_update": (lambda y: y[2:].at[0].set(-1.0), [-1, 3, 4, 5]),
    "convert_then_update": (lambda y: y.astype(jnp.float32).at[0].set(-1.0),
                            [-1, 1, 2, 3, 4, 5]),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jitted_updates_leave_inputs_alone(name):
    fn, expected = PROGRAMS[name]
    y = pyree.device_put(BASE)
    out = pyree.jit(fn)(y)
    np.testing.assert_array_equal(np.asarray(out), expected)
    np.testing.assert_array_equal(device_contents(y), BASE)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_eager_updates_leave_inputs_alone(name):
    fn, expected = PROGRAMS[name]
    y = pyree.device_put(BASE)
    np.testing.assert_array_equal(np.asarray(fn(y)), expected)
    np.testing.assert_array_equal(device_contents(y), BASE)


def test_cached_scalars_are_not_overwritten():
    # Python scalars become cached device constants in eager mode; updating an array made
    # from one must not change the constant.
    a = jnp.full((), 7.0)
    b = a.at[()].set(1.0)
    assert float(b) == 1.0
    assert float(jnp.full((), 7.0)) == 7.0
    assert float(jnp.asarray(7.0) + 0) == 7.0
