"""JAX's sharding API (``pyree.sharding``): ``Mesh``, ``make_mesh``, ``PartitionSpec``,
``NamedSharding``, ``SingleDeviceSharding``, ``device_put(x, sharding)`` and ``Array.sharding``.

The device count is fixed when pyree creates its devices, so the checks on several devices run
in subprocesses started with PYREE_NUM_CPU_DEVICES=2 and 4 (as tests/test_pmap.py does); the
checks one device allows run in this process. Values are checked against NumPy: each shard's
data against the block of the NumPy array its index names, and computations on sharded arrays
(eager, on the whole array on the mesh's first device, and jitted, following the sharding:
tests/test_sharded_jit.py) against the same computation in NumPy.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree.sharding import Mesh, NamedSharding, P, PartitionSpec, SingleDeviceSharding


def _check_blocks(x, host: np.ndarray) -> None:
    """Every shard of ``x`` lives on its device and holds the block of ``host`` its index
    names; the shards cover ``host``; ``np.asarray(x)`` is ``host``."""
    np.testing.assert_array_equal(np.asarray(x), host)
    covered = np.zeros(host.shape, bool)
    for shard in x.addressable_shards:
        assert shard.data.device == shard.device
        np.testing.assert_array_equal(np.asarray(shard.data), host[shard.index])
        covered[shard.index] = True
    assert covered.all()


def test_partition_spec_entries_and_equality():
    spec = PartitionSpec("batch", None, ("x", "y"))
    assert P is PartitionSpec and pyree.P is PartitionSpec
    assert len(spec) == 3 and list(spec) == ["batch", None, ("x", "y")] and spec[0] == "batch"
    assert spec.axes_of(2) == ("x", "y") and spec.axes_of(1) == () and spec.axes_of(7) == ()
    assert P(("x",)) == P("x") and P("x") != P("y") and hash(P("x")) == hash(P("x"))
    assert repr(P("x")) == "P('x',)" and repr(P()) == "P()" and repr(P("x", None)) == \
        "P('x', None)"


def test_mesh_and_make_mesh_on_one_device():
    mesh = pyree.make_mesh((1,), ("batch",))
    assert mesh.axis_names == ("batch",) and dict(mesh.shape) == {"batch": 1}
    assert mesh.size == 1 and mesh.axis_sizes == (1,) and mesh.shape_tuple == (("batch", 1),)
    assert list(mesh.devices.flat) == pyree.devices()[:1] and mesh.devices.shape == (1,)
    assert mesh.device_ids.tolist() == [pyree.devices()[0].id]
    assert mesh == Mesh(np.array(pyree.devices()[:1]), "batch") and hash(mesh) == hash(
        Mesh(pyree.devices()[:1], ("batch",)))
    with mesh as inside:
        assert inside is mesh
    two_d = Mesh(np.array(pyree.devices()[:1]).reshape(1, 1), ("data", "model"))
    assert dict(two_d.shape) == {"data": 1, "model": 1}


def test_named_sharding_attributes_on_one_device():
    mesh = pyree.make_mesh((1,), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    device = pyree.devices()[0]
    assert sharding.mesh is mesh and sharding.spec == P("x")
    assert sharding.num_devices == 1 and sharding.device_set == {device}
    assert sharding.addressable_devices == {device} and sharding.is_fully_addressable
    assert sharding.is_fully_replicated   # (split in one block)
    assert sharding.shard_shape((4, 3)) == (4, 3)
    assert sharding.devices_indices_map((4, 3)) == {device: (slice(0, 4), slice(None))}
    assert sharding == NamedSharding(mesh, P("x", None)) != NamedSharding(mesh, P())
    assert NamedSharding(mesh, P()).spec == P() and NamedSharding(mesh).spec == P()
    assert isinstance(sharding, pyree.sharding.Sharding)


def test_device_put_with_named_sharding_on_one_device():
    mesh = pyree.make_mesh((1,), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    host = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    x = pyree.device_put(host, sharding)
    assert x.sharding == sharding and x.shape == (4, 3) and x.dtype == np.float32
    _check_blocks(x, host)
    assert pyree.device_put(x, sharding) is x
    np.testing.assert_allclose(np.asarray(jnp.sin(x) + x), np.sin(host) + host, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(pyree.jit(lambda v: v @ v.T)(x)), host @ host.T)
    # A pytree of arrays, and a pytree of shardings (a prefix of it):
    tree = pyree.device_put({"w": host, "b": np.ones(3, np.float32)}, sharding)
    assert tree["w"].sharding == sharding == tree["b"].sharding
    tree = pyree.device_put({"w": host, "b": 2.0}, {"w": sharding, "b": None})
    assert tree["w"].sharding == sharding
    assert tree["b"].sharding == SingleDeviceSharding(pyree.devices()[0]) and tree["b"].weak_type


def test_with_sharding_constraint_on_one_device():
    mesh = pyree.make_mesh((1,), ("x",))
    sharding = NamedSharding(mesh, P("x"))
    host = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    eager = pyree.lax.with_sharding_constraint(host, sharding)
    assert eager.sharding == sharding
    _check_blocks(eager, host)
    f = pyree.jit(lambda a, b: pyree.lax.with_sharding_constraint(
        {"a": a * 2, "b": b}, {"a": sharding, "b": None}))
    out = f(host, 1.0)
    np.testing.assert_array_equal(np.asarray(out["a"]), host * 2)
    assert float(out["b"]) == 1.0
    with pytest.raises(ValueError, match=r"(?s)rank at least 2.*test_sharding\.py"):
        pyree.jit(lambda a: pyree.lax.with_sharding_constraint(
            a, NamedSharding(mesh, P(None, "x"))))(np.ones(3, np.float32))


def test_set_mesh_reshard_and_axis_types_on_one_device():
    # JAX's explicit-sharding spelling (its SPMD MNIST example): a mesh with axis types, a
    # current mesh that PartitionSpecs name, reshard outside and inside jit.
    from pyree.sharding import AxisType, get_mesh, reshard
    mesh = pyree.make_mesh((1,), ("batch",), axis_types=(AxisType.Explicit,))
    assert mesh.axis_types == (AxisType.Explicit,)
    host = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    rows = NamedSharding(mesh, P("batch"))
    assert reshard(host, rows).sharding == rows
    assert get_mesh() is None
    with pytest.raises(ValueError, match=r"(?s)no mesh is set.*test_sharding\.py"):
        reshard(host, P("batch"))
    with pyree.set_mesh(mesh) as current:
        assert current is mesh and get_mesh() is mesh
        x = reshard(host, P("batch"))
        assert x.sharding == rows
        _check_blocks(x, host)
        out = pyree.jit(lambda v: reshard(v * 2, P()))(x)
        np.testing.assert_array_equal(np.asarray(out), host * 2)
    assert get_mesh() is None
    pyree.set_mesh(mesh)        # called plainly: current from here on
    try:
        assert get_mesh() is mesh
    finally:
        pyree.set_mesh(None)
    with pytest.raises(TypeError, match=r"(?s)takes a Mesh.*test_sharding\.py"):
        pyree.set_mesh("batch")


def test_jit_in_and_out_shardings_on_one_device():
    mesh = pyree.make_mesh((1,), ("batch",))
    rows, replicated = NamedSharding(mesh, P("batch")), NamedSharding(mesh, P())
    host = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    f = pyree.jit(lambda x, w: (x @ w, w * 2), in_shardings=(rows, None),
                  out_shardings=(rows, replicated))
    y, w2 = f(host, np.eye(2, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(y), host)
    assert y.sharding == rows and w2.sharding == replicated
    # one sharding for every argument; a PartitionSpec under set_mesh; as a decorator factory
    g = pyree.jit(lambda a, b: a + b, in_shardings=rows, out_shardings=rows)
    assert g(host, host).sharding == rows
    with pyree.set_mesh(mesh):
        h = pyree.jit(in_shardings=P("batch"), out_shardings=P())(lambda a: a.sum(0))
        np.testing.assert_array_equal(np.asarray(h(host)), host.sum(0))
        assert h.lower(host).as_text()      # the jitted function's other attributes
    with pytest.raises(ValueError, match=r"(?s)one entry per positional argument.*test_sharding"):
        f(host)


def test_array_sharding_and_device_put_to_a_device():
    x = jnp.arange(3.0)
    device = pyree.devices()[0]
    assert x.sharding == SingleDeviceSharding(device) and x.sharding.num_devices == 1
    assert x.is_fully_replicated and x.is_fully_addressable
    assert x.sharding.devices_indices_map((3,)) == {device: (slice(None),)}
    y = pyree.device_put(np.arange(3.0), device)
    assert y.device == device and y.sharding == SingleDeviceSharding(device)
    z = pyree.device_put(np.arange(3.0), SingleDeviceSharding(device))
    np.testing.assert_array_equal(np.asarray(z), np.arange(3.0))


def test_unknown_axis_in_spec_names_the_line():
    mesh = pyree.make_mesh((1,), ("batch",))
    with pytest.raises(ValueError, match=r"(?s)Resource axis: model .* not found in mesh: "
                                         r"\('batch',\).*test_sharding\.py"):
        NamedSharding(mesh, P(None, "model"))
    with pytest.raises(ValueError, match=r"(?s)names 'batch' twice.*test_sharding\.py"):
        NamedSharding(mesh, P("batch", "batch"))


def test_mesh_with_more_devices_than_exist_names_the_line():
    count = len(pyree.devices())
    with pytest.raises(ValueError, match=rf"(?s)needs {count + 1} devices, but there are "
                                         rf"{count}.*PYREE_NUM_CPU_DEVICES.*test_sharding\.py"):
        pyree.make_mesh((count + 1,), ("x",))
    missing = pyree.runtime.device.Device("cpu", count)
    with pytest.raises(ValueError, match=r"(?s)does not exist.*test_sharding\.py"):
        Mesh(np.array([missing]), ("x",))
    with pytest.raises(ValueError, match=r"(?s)ndim of its first argument.*test_sharding\.py"):
        Mesh(np.array(pyree.devices()[:1]), ("x", "y"))


def test_rank_below_the_spec_names_the_line():
    mesh = pyree.make_mesh((1,), ("x",))
    with pytest.raises(ValueError, match=r"(?s)rank at least 2.*test_sharding\.py"):
        pyree.device_put(np.ones(4), NamedSharding(mesh, P(None, "x")))


_ON_N_DEVICES = """
import numpy as np
import pyree
import pyree.numpy as jnp
from pyree.sharding import Mesh, NamedSharding, P
from test_sharding import _check_blocks

n = len(pyree.devices())
mesh = pyree.make_mesh((n,), ("batch",))
assert list(mesh.devices.flat) == pyree.devices()

# Split along axis 0, along axis 1, replicated (P()), from NumPy and from a device Array:
host = np.arange(4.0 * n * 3, dtype=np.float32).reshape(4 * n, 3)
rows = NamedSharding(mesh, P("batch"))
x = pyree.device_put(host, rows)
assert x.sharding == rows and x.sharding.num_devices == n and not x.is_fully_replicated
assert {s.device for s in x.addressable_shards} == set(pyree.devices()) == x.devices()
assert [s.index for s in x.addressable_shards] == [(slice(4 * i, 4 * i + 4), slice(None))
                                                    for i in range(n)]
assert [s.data.shape for s in x.addressable_shards] == [(4, 3)] * n
assert rows.shard_shape(host.shape) == (4, 3)
_check_blocks(x, host)
cols = NamedSharding(mesh, P(None, "batch"))
_check_blocks(pyree.device_put(host.T.copy(), cols), host.T)
_check_blocks(pyree.device_put(jnp.asarray(host), rows), host)
replicated = pyree.device_put(host, NamedSharding(mesh, P()))
assert replicated.is_fully_replicated and len(replicated.addressable_shards) == n
assert [s.replica_id for s in replicated.addressable_shards] == list(range(n))
_check_blocks(replicated, host)
ints = pyree.device_put(np.arange(2 * n, dtype=np.int32), rows)
_check_blocks(ints, np.arange(2 * n, dtype=np.int32))
assert ints.dtype == np.int32

# Computations on sharded arrays (eager, jit, grad, pmap) equal NumPy's:
w = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(3, 2)
np.testing.assert_allclose(np.asarray(jnp.tanh(x / 10) * 2 + x.sum()),
                           np.tanh(host / 10) * 2 + host.sum(), rtol=1e-5)
step = pyree.jit(lambda w, x: w - 0.01 * pyree.grad(lambda w: jnp.mean((x @ w) ** 2))(w))
expected = w - 0.01 * (2 * host.T @ (host @ w) / (host.shape[0] * 2))
np.testing.assert_allclose(np.asarray(step(w, x)), expected, rtol=1e-5)
np.testing.assert_allclose(np.asarray(pyree.jit(lambda a: a[1:, ::2] * 3)(x)),
                           host[1:, ::2] * 3)
stacked = pyree.device_put(host.reshape(n, 4, 3), rows)
np.testing.assert_allclose(np.asarray(pyree.pmap(lambda v: v.sum(0))(stacked)),
                           host.reshape(n, 4, 3).sum(1))

# Leaving the mesh: device_put to one device gives an ordinary array there.
last = pyree.devices()[-1]
moved = pyree.device_put(x, last)
assert type(moved) is pyree.runtime.array.Array and moved.device == last
np.testing.assert_array_equal(np.asarray(moved), host)

# A sharded dimension not divisible by the mesh axis size names the line:
try:
    pyree.device_put(np.ones((4 * n + 1, 3), np.float32), rows)
except ValueError as e:
    assert f"{4 * n + 1} is not divisible by {n}" in str(e) and "test_sharding_script" in str(e), e
else:
    raise AssertionError("no error")
try:
    pyree.jit(lambda v: pyree.lax.with_sharding_constraint(v, rows) + 1)(
        np.ones((2 * n + 1, 3), np.float32))
except ValueError as e:
    assert f"{2 * n + 1} is not divisible by {n}" in str(e) and "test_sharding_script" in str(e), e
else:
    raise AssertionError("no error")
np.testing.assert_array_equal(np.asarray(pyree.jit(
    lambda v: pyree.lax.with_sharding_constraint(v * 2, rows))(x)), host * 2)
# jit's in_shardings / out_shardings split the arguments and place the results:
step2 = pyree.jit(lambda w, x: (w - 0.01 * pyree.grad(lambda w: jnp.mean((x @ w) ** 2))(w)),
                  in_shardings=(NamedSharding(mesh, P()), rows),
                  out_shardings=NamedSharding(mesh, P()))
new_w = step2(w, host)
np.testing.assert_allclose(np.asarray(new_w), expected, rtol=1e-5)
assert new_w.sharding == NamedSharding(mesh, P()) and new_w.is_fully_replicated
# The same through a current mesh and PartitionSpecs (pyree.set_mesh, sharding.reshard):
from pyree.sharding import reshard
with pyree.set_mesh(mesh):
    z = reshard(host, P("batch"))
    assert z.sharding == rows
    _check_blocks(z, host)
    np.testing.assert_allclose(np.asarray(pyree.jit(lambda v: reshard(v.sum(0), P()))(z)),
                               host.sum(0), rtol=1e-6)
if n >= 4:
    # A 2-D mesh: rows split over "data", copied along "model"; a tuple entry splits a
    # dimension over both axes, "data" the outer.
    grid = pyree.make_mesh((2, n // 2), ("data", "model"))
    data = NamedSharding(grid, P("data"))
    y = pyree.device_put(host, data)
    _check_blocks(y, host)
    assert sorted(s.replica_id for s in y.addressable_shards) == sorted(
        list(range(n // 2)) * 2)
    both = pyree.device_put(host, NamedSharding(grid, P(("data", "model"))))
    _check_blocks(both, host)
    assert [s.index[0] for s in both.addressable_shards] == [slice(4 * i, 4 * i + 4)
                                                              for i in range(n)]
    try:
        pyree.device_put(np.ones((3, n // 2 + 1)), NamedSharding(grid, P(None, "model")))
    except ValueError as e:
        assert "over mesh axis 'model'" in str(e) and "test_sharding_script" in str(e), e
    else:
        raise AssertionError("no error")
print("ok")
"""


def _run_on_devices(script_text: str, count: int, tmp_path, name: str = "test_sharding_script",
                    timeout: int = 600) -> subprocess.CompletedProcess:
    """Run a script (file ``name``.py) in a process with ``count`` CPU devices; it can import
    the test files."""
    script = tmp_path / f"{name}.py"
    tests = os.path.dirname(os.path.abspath(__file__))
    script.write_text(f"import sys\nsys.path.insert(0, {tests!r})\n" + script_text)
    env = dict(os.environ, PYREE_NUM_CPU_DEVICES=str(count), PYREE_PLATFORM="cpu",
               PYREE_EAGER_WARMUP="0")
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("count", [2, 4])
def test_named_sharding_on_several_cpu_devices(count, tmp_path):
    done = _run_on_devices(_ON_N_DEVICES, count, tmp_path)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-4000:]
