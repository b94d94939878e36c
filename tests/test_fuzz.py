"""Seeded property tests over random programs (issue 18): compositions of elementwise ops,
reductions, indexing and ``.at`` updates, on random dtypes and shapes (0-d, size 0, leading
1), run eagerly and under jit and compared with NumPy; no call may change its inputs.

CI runs a short profile (``PYREE_FUZZ_EXAMPLES``, default 20 programs per test); set it
higher for a long campaign, e.g. ``PYREE_FUZZ_EXAMPLES=500 pytest tests/test_fuzz.py``.
Damaged artifacts and cache entries are fuzzed in subprocesses by test_aot.py and
test_cache.py (a crash there fails the test)."""
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pyree
import pyree.numpy as jnp

EXAMPLES = int(os.environ.get("PYREE_FUZZ_EXAMPLES", "20"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))

DTYPES = [np.float32, np.float16, ml_dtypes.bfloat16, np.int32, np.uint8, np.bool_]
SHAPES = [(), (0,), (1,), (1, 3), (3, 1), (2, 3), (1, 1, 4), (4, 0)]

# name -> (pyree op, NumPy op, kinds it accepts); kinds: f float, i signed, u unsigned, b bool
UNARY = {
    "neg": (lambda x: -x, lambda x: -x, "fi"),
    "abs": (jnp.abs, np.abs, "fiu"),
    "square": (jnp.square, np.square, "fiu"),
    "sin": (jnp.sin, np.sin, "f"),
    "exp_clipped": (lambda x: jnp.exp(jnp.clip(x, -5, 5)), lambda x: np.exp(np.clip(x, -5, 5)),
                    "f"),
    "logical_not": (jnp.logical_not, np.logical_not, "b"),
    "sign": (jnp.sign, np.sign, "fi"),
}
BINARY = {
    "add": (jnp.add, np.add, "fiu"),
    "mul": (jnp.multiply, np.multiply, "fiu"),
    "max": (jnp.maximum, np.maximum, "fiub"),
    "min": (jnp.minimum, np.minimum, "fiub"),
    "and": (jnp.logical_and, np.logical_and, "b"),
}
REDUCE = {
    "sum": (jnp.sum, np.sum, "fiu"),
    "max": (jnp.max, np.max, "fiub"),
    "any": (jnp.any, np.any, "b"),
}


def kind(dtype) -> str:
    return "f" if np.dtype(dtype) in (np.float32, np.float16, np.dtype(ml_dtypes.bfloat16)) \
        else np.dtype(dtype).kind


def values(draw, dtype, shape):
    n = int(np.prod(shape))
    k = kind(dtype)
    if k == "b":
        flat = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    elif k == "u":
        flat = draw(st.lists(st.integers(0, 15), min_size=n, max_size=n))
    elif k == "i":
        flat = draw(st.lists(st.integers(-20, 20), min_size=n, max_size=n))
    else:
        flat = draw(st.lists(st.sampled_from([0.0, -0.0, 0.5, -1.25, 2.0, 3.5, -7.0, 1e-3]),
                             min_size=n, max_size=n))
    return np.asarray(flat, dtype=np.float64 if k == "f" else None).astype(dtype).reshape(shape)


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.sampled_from(SHAPES))
    x, y = values(draw, dtype, shape), values(draw, dtype, shape)
    k = kind(dtype)
    steps = []
    for _ in range(draw(st.integers(1, 3))):
        table = draw(st.sampled_from([UNARY, BINARY]))
        names = [n for n, (_, _, kinds) in table.items() if k in kinds]
        if names:
            steps.append((table is BINARY, draw(st.sampled_from(sorted(names)))))
    reducers = [n for n, (_, _, kinds) in REDUCE.items() if k in kinds]
    reduce = draw(st.sampled_from([None] + sorted(reducers)))
    return dtype, x, y, steps, reduce


def run_program(ops, reduce_ops, steps, reduce, x, y):
    for binary, name in steps:
        table = BINARY if binary else UNARY
        fn = table[name][ops]
        x = fn(x, y) if binary else fn(x)
    if reduce is not None and np.size(x) > 0 or reduce == "sum":
        x = REDUCE[reduce][reduce_ops](x) if reduce is not None else x
    return x


def device_contents(a):
    a.block_until_ready()
    return a._device.fetch(a.buffer_view(), a.shape, a.dtype)


def close(got, want, dtype):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape
    if kind(dtype) == "f":
        tol = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 2e-2}.get(np.dtype(dtype), 3e-2)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                                   atol=tol)
    else:
        np.testing.assert_array_equal(got, want.astype(got.dtype))


@FUZZ
@given(programs())
def test_random_programs_eager_jit_numpy(program):
    dtype, x, y, steps, reduce = program
    f = lambda a, b: run_program(0, 0, steps, reduce, a, b)   # noqa: E731
    # NumPy in float64 for float programs: pyree rounds each op to the dtype, as JAX does.
    wide = np.float64 if kind(dtype) == "f" else None
    want = run_program(1, 1, steps, reduce, x.astype(wide) if wide else x,
                       y.astype(wide) if wide else y)
    if wide is not None:
        want = np.asarray(want).astype(dtype)
    ax, ay = pyree.device_put(x), pyree.device_put(y)
    for run in (f, pyree.jit(f)):
        close(run(ax, ay), want, dtype)
        np.testing.assert_array_equal(device_contents(ax), x)   # inputs never change
        np.testing.assert_array_equal(device_contents(ay), y)


@st.composite
def updates(draw):
    dtype = draw(st.sampled_from([np.float32, np.int32, np.uint8]))
    shape = draw(st.sampled_from([(1,), (1, 3), (3, 1), (4, 2), (5,)]))
    x = values(draw, dtype, shape)
    n = shape[0]
    index = draw(st.one_of(
        st.integers(-n - 2, n + 2),                                       # static, maybe OOB
        st.lists(st.integers(-n, n - 1), min_size=1, max_size=3).map(np.asarray),
        st.builds(slice, st.sampled_from([None, 0, 1]), st.sampled_from([None, -1, n]),
                  st.sampled_from([None, 1, 2, -1]))))
    method = draw(st.sampled_from(["set", "add", "multiply", "min", "max", "get"]))
    value = values(draw, dtype, ())
    return x, index, method, value


def numpy_update(x, index, method, value):
    n = x.shape[0]
    if isinstance(index, int):
        i = index + n if index < 0 else index
        if method == "get":
            return x[min(max(i, 0), n - 1)]       # clamped, as in JAX
        if not 0 <= i < n:
            return x.copy()                      # dropped, as in JAX
        index = i
    if method == "get":
        return x[index]
    y = x.copy()
    ufunc = {"set": None, "add": np.add, "multiply": np.multiply, "min": np.minimum,
             "max": np.maximum}[method]
    if ufunc is None:
        y[index] = value
    else:
        ufunc.at(y, index, value)
    return y


@FUZZ
@given(updates())
def test_random_at_updates_never_touch_their_source(update):
    x, index, method, value = update
    want = numpy_update(x, index, method, value)
    jindex = jnp.asarray(index) if isinstance(index, np.ndarray) else index

    def f(a):
        ref = a.at[jindex]
        return ref.get() if method == "get" else getattr(ref, method)(value)

    ax = pyree.device_put(x)
    for run in (f, pyree.jit(f)):
        np.testing.assert_array_equal(np.asarray(run(ax)), want)
        np.testing.assert_array_equal(device_contents(ax), x)
