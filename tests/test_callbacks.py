"""Host callbacks: pyree.debug.print / debug.callback (traces) and pyree.pure_callback (the
IREE host module). Order and values, eagerly and under jit, grad, vmap and lax control flow.

Callbacks run in the thread that invokes the program, so captured stdout is complete once a
call's results are ready (block_until_ready)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.special

import pyree
import pyree.numpy as jnp
from pyree import lax

# Run again on Vulkan (.ci/run: PYREE_PLATFORM=vulkan pytest -n 0 -m vulkan_subset).
pytestmark = pytest.mark.vulkan_subset

debug = pyree.debug
SDS = pyree.ShapeDtypeStruct


def out(capsys) -> str:
    return capsys.readouterr().out


# -- debug.print -----------------------------------------------------------------------------------

def show_all(x, n):
    debug.print("pos {0} {1} named {n} idx {1} fmt {0:.2f}", x[0], x, n=n)
    debug.print("no args")
    return x


@pytest.mark.parametrize("jitted", [False, True])
def test_print_placeholders_and_values(capsys, jitted):
    x = np.array([1.5, -2.0, 3.25], np.float32)
    f = pyree.jit(show_all) if jitted else show_all
    pyree.block_until_ready(f(jnp.asarray(x), jnp.int32(7)))
    assert out(capsys) == f"pos 1.5 {x} named 7 idx {x} fmt 1.50\nno args\n"


def test_print_static_leaves_and_pytrees(capsys):
    @pyree.jit
    def f(x):
        debug.print("{a[0]} {a[1]} {b[k]} {s}", a=(x, x * 2), b={"k": x + 1}, s="tag")
        return x
    f(jnp.float32(2.0)).block_until_ready()
    assert out(capsys) == "2.0 4.0 3.0 tag\n"


def test_print_format_errors_are_raised_at_trace_time():
    with pytest.raises(IndexError, match="does not fit"):
        pyree.jit(lambda x: debug.print("{} {}", x))(1.0)
    with pytest.raises(KeyError, match="does not fit"):
        pyree.jit(lambda x: debug.print("{y}", x))(1.0)
    with pytest.raises(TypeError):
        debug.print(3, 1.0)


def step(x, i):
    debug.print("call {}", i)
    return x * 0.5 + 1.0


def test_print_order_across_asynchronous_calls(capsys):
    # Large enough to run on the worker pool, whose calls return before they finish.
    f = pyree.jit(step)
    x = jnp.ones((1500, 1500))
    for i in range(3):
        x = f(x, i)
        print(f"host {i}")
    x.block_until_ready()
    assert out(capsys) == "".join(f"call {i}\nhost {i}\n" for i in range(3))
    np.testing.assert_allclose(np.asarray(x)[0, 0], 1.875)


def loops(x):
    def fori_body(i, c):
        debug.print("fori {} {}", i, c)
        return c * 2.0

    def while_cond(c):
        return c[0] < 3

    def while_body(c):
        debug.print("while {}", c[0])
        return c[0] + 1, c[1] + 1.0

    def scan_body(c, v):
        debug.print("scan {} {}", c, v)
        return c + v, c

    def branch(name):
        def f(v):
            debug.print(name + " {}", v)
            return v
        return f

    y = lax.fori_loop(0, 3, fori_body, x)
    _, z = lax.while_loop(while_cond, while_body, (jnp.int32(0), y))
    s, _ = lax.scan(scan_body, z, jnp.arange(3.0))
    return lax.cond(s > 0, branch("pos"), branch("neg"), s)


LOOPS_OUT = ("fori 0 1.0\nfori 1 2.0\nfori 2 4.0\nwhile 0\nwhile 1\nwhile 2\n"
             "scan 11.0 0.0\nscan 11.0 1.0\nscan 12.0 2.0\npos 14.0\n")


def test_print_every_iteration_of_loops_in_order(capsys):
    f = pyree.jit(loops)
    r = f(jnp.float32(1.0))
    r.block_until_ready()
    assert out(capsys) == LOOPS_OUT
    r = f(jnp.float32(-20.0))  # the other branch, and every print again
    r.block_until_ready()
    got = out(capsys)
    assert got.count("fori") == 3 and got.count("scan") == 3 and got.endswith("neg -154.0\n")


def test_print_under_grad_shows_primal_values_once(capsys):
    def f(x):
        debug.print("x={} y={}", x, x * 2)
        return jnp.sum(x ** 2)
    x = jnp.array([0.0, 1.0])
    g = pyree.jit(pyree.grad(f))(x)
    np.testing.assert_allclose(np.asarray(g), [0.0, 2.0])
    assert out(capsys) == "x=[0. 1.] y=[0. 2.]\n"


def test_print_under_vmap_prints_each_example(capsys):
    # As JAX's debug.print: once per example (pyree: in index order), the unbatched value
    # repeated for each.
    def f(x, c):
        debug.print("x={x} c={}", c, x=x)
        return x
    pyree.block_until_ready(pyree.jit(pyree.vmap(f, (0, None)))(jnp.arange(3.0), 5.0))
    assert out(capsys) == "x=0.0 c=5.0\nx=1.0 c=5.0\nx=2.0 c=5.0\n"
    # nested: outer axis first
    pyree.block_until_ready(pyree.jit(pyree.vmap(pyree.vmap(f, (0, None)), (0, None)))(
        jnp.arange(4.0).reshape(2, 2), 1.0))
    assert out(capsys) == "".join(f"x={v}.0 c=1.0\n" for v in range(4))


def test_eager_transformations_print(capsys):
    # Outside jit, grad and vmap evaluate their IR eagerly: the print still runs.
    g = pyree.grad(lambda x: (debug.print("g {}", x), x * x)[1])(3.0)
    assert float(g) == 6.0
    pyree.vmap(lambda x: debug.print("v {}", x))(jnp.arange(2))
    assert out(capsys) == "g 3.0\nv 0\nv 1\n"


def test_python_print_in_jit_uses_the_same_route(capsys):
    @pyree.jit
    def f(x):
        for i in range(2):
            print("py", i, x + i)
        return x
    f(jnp.float32(1.0)).block_until_ready()
    assert out(capsys) == "py 0 1.0\npy 1 2.0\n"


# -- debug.callback --------------------------------------------------------------------------------

def test_callback_gets_numpy_pytrees(capsys):
    seen = []

    def record(tree, scale, *, label):
        seen.append((label, {k: (type(v), v.dtype, v.copy()) for k, v in tree.items()}, scale))

    @pyree.jit
    def f(x, n):
        debug.callback(record, {"x": x, "n": n}, 2.0, label="hi")
        return x + 1
    r = f(jnp.arange(3.0), jnp.int32(4))
    r.block_until_ready()
    assert len(seen) == 1
    label, tree, scale = seen[0]
    assert label == "hi" and float(scale) == 2.0
    assert tree["x"][0] is np.ndarray and tree["x"][1] == np.float32
    np.testing.assert_array_equal(tree["x"][2], [0.0, 1.0, 2.0])
    assert tree["n"][1] == np.int32 and int(tree["n"][2]) == 4
    assert debug.callback(record, {"x": np.ones(1), "n": 1}, 0.0, label="eager") is None
    assert seen[-1][0] == "eager"


def test_callback_in_loop_and_vmap_order():
    seen = []

    @pyree.jit
    def f(xs):
        def body(c, x):
            debug.callback(lambda a, b: seen.append((float(a), float(b))), c, x)
            return c + x, c
        return lax.scan(body, 0.0, xs)[0]
    assert float(f(jnp.array([1.0, 2.0, 3.0]))) == 6.0
    assert seen == [(0.0, 1.0), (1.0, 2.0), (3.0, 3.0)]
    seen.clear()
    pyree.block_until_ready(pyree.jit(pyree.vmap(f))(jnp.array([[1.0, 2.0], [3.0, 4.0]])))
    # per example, each loop iteration: (example 0, iteration 0), (example 1, iteration 0), ...
    assert sorted(seen) == sorted([(0.0, 1.0), (1.0, 2.0), (0.0, 3.0), (3.0, 4.0)])


def test_callback_exception_is_raised_by_the_call():
    def bad(v):
        raise ValueError("callback boom")
    f = pyree.jit(lambda v: (debug.callback(bad, v), v * 2)[1])
    with pytest.raises(Exception, match="callback boom"):
        pyree.block_until_ready(f(1.0))
    with pytest.raises(ValueError, match="callback boom"):
        debug.callback(bad, 1.0)  # eagerly: raised as is


# -- pure_callback ---------------------------------------------------------------------------------

def host_sort(x):
    return np.sort(x)


def test_pure_callback_values_jit_and_eager():
    x = np.array([3.0, -1.0, 2.0, 0.5], np.float32)

    def f(x):
        y = pyree.pure_callback(host_sort, SDS(x.shape, x.dtype), x)
        return y * 2.0
    np.testing.assert_array_equal(np.asarray(pyree.jit(f)(x)), np.sort(x) * 2)
    np.testing.assert_array_equal(np.asarray(f(jnp.asarray(x))), np.sort(x) * 2)


def test_pure_callback_float64_function_declared_float32():
    # scipy computes in float64; the declared float32 result accepts it (x64 is off).
    def host_gammaln(x):
        return scipy.special.gammaln(x.astype(np.float64))
    x = np.array([0.5, 1.5, 10.0], np.float32)
    f = pyree.jit(lambda x: pyree.pure_callback(host_gammaln, SDS(x.shape, np.float32), x) + 1)
    r = f(x)
    assert r.dtype == np.float32
    np.testing.assert_allclose(np.asarray(r), scipy.special.gammaln(x.astype(np.float64)) + 1,
                               rtol=1e-6)


def test_pure_callback_pytrees_several_results_and_kwargs():
    def host(a, b, *, scale):
        return {"sum": (a + b) * scale, "idx": np.argsort(a).astype(np.int32)}
    shapes = {"sum": SDS((3,), np.float32), "idx": SDS((3,), np.int32)}

    @pyree.jit
    def f(a, b):
        r = pyree.pure_callback(host, shapes, a, b, scale=jnp.float32(2.0))
        return r["sum"], r["idx"]
    a = np.array([2.0, 0.0, 1.0], np.float32)
    s, i = f(a, np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(s), (a + 1) * 2)
    np.testing.assert_array_equal(np.asarray(i), [1, 2, 0])


def test_pure_callback_in_loop_body():
    calls = []

    def host(c):
        calls.append(float(c))
        return np.float32(c * 3 + 1)

    @pyree.jit
    def f(x):
        return lax.fori_loop(0, 4, lambda i, c: pyree.pure_callback(host, SDS((), np.float32), c),
                             x)
    assert float(f(1.0)) == 121.0
    assert calls == [1.0, 4.0, 13.0, 40.0]


def test_pure_callback_shape_and_dtype_mismatch():
    def wrong_shape(x):
        return np.ones(3, np.float32)
    f = pyree.jit(lambda x: pyree.pure_callback(wrong_shape, SDS((2,), np.float32), x))
    with pytest.raises(Exception, match=r"wrong_shape.*shape \(3,\).*\(2,\)"):
        pyree.block_until_ready(f(1.0))
    with pytest.raises(ValueError, match=r"wrong_shape.*shape \(3,\).*\(2,\)"):
        pyree.pure_callback(wrong_shape, SDS((2,), np.float32), 1.0)

    def wrong_dtype(x):
        return x
    with pytest.raises(TypeError, match="wrong_dtype.*float32.*int32"):
        pyree.pure_callback(wrong_dtype, SDS((), np.int32), np.float32(1.0))


def test_pure_callback_exception_surfaces_and_program_still_runs():
    def host(x):
        if x > 0:
            raise ZeroDivisionError("host boom")
        return x

    f = pyree.jit(lambda x: pyree.pure_callback(host, SDS((), np.float32), x) + 1)
    with pytest.raises(Exception, match="host boom"):
        pyree.block_until_ready(f(1.0))
    assert float(f(-1.0)) == 0.0  # the executable is still usable


def test_pure_callback_vmap_methods():
    shapes_seen = []

    def host(x, y):
        shapes_seen.append((np.shape(x), np.shape(y)))
        return np.sin(x + y).astype(np.float32)

    xs = np.array([0.0, 1.0, 2.0], np.float32)
    want = np.sin(xs + 1).astype(np.float32)
    expected_shapes = {"sequential": [((), ())] * 3, "expand_dims": [((3,), (1,))],
                       "broadcast_all": [((3,), (3,))]}
    for method, shapes in expected_shapes.items():
        shapes_seen.clear()
        fn = pyree.vmap(lambda x, y: pyree.pure_callback(host, SDS((), np.float32), x, y,
                                                        vmap_method=method), (0, None))
        np.testing.assert_allclose(np.asarray(pyree.jit(fn)(xs, 1.0)), want, rtol=1e-6)
        assert shapes_seen == shapes, method
    with pytest.raises(NotImplementedError, match="vmap_method"):
        pyree.vmap(lambda x: pyree.pure_callback(host, SDS((), np.float32), x, x))(xs)
    with pytest.raises(ValueError, match="vmap_method"):
        pyree.pure_callback(host, SDS((), np.float32), 1.0, 1.0, vmap_method="loop")


def test_pure_callback_nested_sequential_vmap():
    calls = []

    def host(x, y):
        calls.append((float(x), float(y)))
        return np.float32(x * 10 + y)

    f = pyree.vmap(pyree.vmap(lambda x, y: pyree.pure_callback(
        host, SDS((), np.float32), x, y, vmap_method="sequential"), (None, 0)), (0, None))
    r = pyree.jit(f)(jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0, 5.0]))
    np.testing.assert_array_equal(np.asarray(r), [[13, 14, 15], [23, 24, 25]])
    assert calls == [(1, 3), (1, 4), (1, 5), (2, 3), (2, 4), (2, 5)]


def test_pure_callback_grad_needs_custom_jvp():
    f = lambda x: pyree.pure_callback(np.sin, SDS((), np.float32), x)
    with pytest.raises(ValueError, match="custom_jvp"):
        pyree.grad(f)(1.0)

    @pyree.custom_jvp
    def host_sin(x):
        return pyree.pure_callback(lambda v: np.sin(v), SDS((), np.float32), x)

    @host_sin.defjvp
    def host_sin_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return host_sin(x), pyree.pure_callback(lambda v: np.cos(v), SDS((), np.float32), x) * t

    g = pyree.jit(pyree.grad(host_sin))(0.5)
    np.testing.assert_allclose(float(g), np.cos(0.5), rtol=1e-6)


def test_pure_callback_unused_result_is_dropped():
    calls = []

    def host(x):
        calls.append(1)
        return x

    @pyree.jit
    def f(x):
        pyree.pure_callback(host, SDS((), np.float32), x)
        return x + 1
    assert float(f(1.0)) == 2.0
    assert calls == []  # pure: like JAX, an unused call may be removed


def test_callbacks_made_at_one_source_line_keep_their_own_closures():
    fs = [pyree.jit(lambda x, c=c: pyree.pure_callback(lambda a: a + np.float32(c),
                                                       SDS((), np.float32), x))
          for c in range(3)]
    assert [float(f(1.0)) for f in fs] == [1.0, 2.0, 3.0]
    assert [float(f(1.0)) for f in fs] == [1.0, 2.0, 3.0]  # compiled ones too


def test_pure_callback_order_across_asynchronous_calls():
    calls = []

    def host(i, x):
        calls.append(int(i))
        return x

    @pyree.jit
    def f(x, i):
        y = pyree.pure_callback(host, SDS(x.shape, x.dtype), i, x * 0.5)
        return y + 1.0

    x = jnp.ones((1500, 1500))
    for i in range(3):
        x = f(x, i)
        calls.append(-i - 1)  # on the host, between the calls
    np.testing.assert_allclose(np.asarray(x)[0, 0], 1.875)
    assert calls == [0, -1, 1, -2, 2, -3]
