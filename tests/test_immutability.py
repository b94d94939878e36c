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


# -- every update IREE may perform in place, on the shapes where its folds differ ---------------
#
# A leading axis of length 1 once let IREE fold the copy guarding a scatter's operand, and the
# scatter then wrote into the caller's array (x.at[jnp.asarray([0])].add(2) changed x).

def _first():
    return jnp.asarray([0])


IN_PLACE_CANDIDATES = {
    "at_array_set": lambda x: x.at[_first()].set(7),
    "at_array_add": lambda x: x.at[_first()].add(7),
    "at_array_mul": lambda x: x.at[_first()].mul(7),
    "at_array_min": lambda x: x.at[_first()].min(-7),
    "at_array_max": lambda x: x.at[_first()].max(70),
    "at_array_subtract": lambda x: x.at[_first()].subtract(7),
    "at_array_divide": lambda x: x.at[_first()].divide(7),
    "at_repeated_add": lambda x: x.reshape(-1).at[jnp.asarray([0, 0])].add(1),
    "at_static_add": lambda x: x.at[0].add(7),
    "at_reversed_view": lambda x: x[::-1].at[0].set(7),
    "at_transposed_view": lambda x: x.T.at[0].set(7),
    "sort": lambda x: jnp.sort(x, axis=0),
    "argsort": lambda x: jnp.argsort(x, axis=-1),
    "top_k": lambda x: lax.top_k(x, 1)[0],
    "dynamic_update_slice": lambda x: lax.dynamic_update_slice(
        x, jnp.full((1,) + x.shape[1:], 7, x.dtype), (jnp.asarray(0),) + (0,) * (x.ndim - 1)),
    "cumsum": lambda x: jnp.cumsum(x, axis=0),
    "fori_loop_updates": lambda x: lax.fori_loop(0, 2, lambda i, c: c.at[i % c.shape[0]].add(1), x),
    "scan_carry_updates": lambda x: lax.scan(lambda c, _: (c.at[0].add(1), None), x, None,
                                             length=2)[0],
    "while_carry_updates": lambda x: lax.while_loop(lambda c: c.reshape(-1)[0] < 100,
                                                    lambda c: c.at[0].add(50), x),
}


@pytest.mark.parametrize("shape", [(1,), (1, 3), (3, 1)])
@pytest.mark.parametrize("name", sorted(IN_PLACE_CANDIDATES))
def test_no_update_writes_into_its_input(name, shape):
    fn = IN_PLACE_CANDIDATES[name]
    base = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float32).reshape(shape)
    expected = None
    for run in (fn, pyree.jit(fn)):
        x = pyree.device_put(base)
        out = np.asarray(run(x))
        np.testing.assert_array_equal(device_contents(x), base)
        if expected is None:
            expected = out
        np.testing.assert_array_equal(out, expected)  # eager and jit agree
