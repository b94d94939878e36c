"""pmap over several CPU devices (one IREE multi-device program) and the collectives it shares
with vmap (psum, pmean, pmax, pmin, axis_index, all_gather, ppermute).

The device count is fixed when pyree creates its devices, so the multi-device checks run in
subprocesses started with PYREE_NUM_CPU_DEVICES=2 and 4; each checks pmap results against
NumPy and against the same function applied to each slice on one device (stacked).
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax

_ON_N_DEVICES = r"""
import numpy as np
import pyree, pyree.numpy as jnp
from pyree import lax

n = len(pyree.devices())
devs = pyree.devices()
rng = np.random.default_rng(0)
x = rng.standard_normal((n, 3)).astype(np.float32)


def check(got, want):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)


def stacked(f, *xs):
    # The same function on one device, one slice at a time, stacked: what pmap must equal
    # (for functions without collectives).
    return np.stack([np.asarray(pyree.jit(f)(*(a[i] for a in xs))) for i in range(n)])


# -- each device runs the function on its slice; results stay where they were computed
f = lambda v: jnp.sin(v) * 2.0 + v.sum()
y = pyree.pmap(f)(x)
check(y, stacked(f, x))
assert y.shape == (n, 3) and y.dtype == np.float32
assert y.devices() == set(devs)
assert isinstance(y.sharding, pyree.sharding.PmapSharding)
assert y.sharding.devices == tuple(devs) and y.sharding.sharded_axis == 0
shards = y.addressable_shards
assert [s.device for s in shards] == devs
assert [s.data.device for s in shards] == devs
assert [s.index[0] for s in shards] == list(range(n))
for i, s in enumerate(shards):
    check(s.data, stacked(f, x)[i])

# -- collectives: every device gets the reduction over all devices, bit-identical
for collective, reduce in [(lax.psum, np.sum), (lax.pmean, np.mean), (lax.pmax, np.max),
                           (lax.pmin, np.min)]:
    out = np.asarray(pyree.pmap(lambda v: collective(v, "i"), "i")(x))
    check(out, np.broadcast_to(reduce(x, 0), x.shape))
    assert all((out[i] == out[0]).all() for i in range(n)), collective
xi = np.arange(n * 2, dtype=np.int32).reshape(n, 2)
check(pyree.pmap(lambda v: lax.psum(v, "i"), "i")(xi), np.broadcast_to(xi.sum(0), xi.shape))
check(pyree.pmap(lambda v: v / lax.psum(v, "i"), "i")(np.abs(x) + 1),
      (np.abs(x) + 1) / (np.abs(x) + 1).sum(0))
index = pyree.pmap(lambda v: lax.axis_index("i"), "i")(x)
assert index.dtype == np.int32
check(index, np.arange(n))
check(pyree.pmap(lambda v: v * lax.axis_index("i"), "i")(x), x * np.arange(n)[:, None])
check(pyree.pmap(lambda v: lax.all_gather(v, "i"), "i")(x), np.broadcast_to(x, (n, n, 3)))
check(pyree.pmap(lambda v: lax.all_gather(v, "i", axis=1, tiled=True), "i")(x[:, None]),
      np.broadcast_to(x.reshape(1, -1), (n, 1, n * 3)))
ring = [(j, (j + 1) % n) for j in range(n)]
check(pyree.pmap(lambda v: lax.ppermute(v, "i", ring), "i")(x), np.roll(x, 1, axis=0))
check(pyree.pmap(lambda v: lax.ppermute(v, "i", [(0, n - 1)]), "i")(x),
      np.concatenate([np.zeros((n - 1, 3), np.float32), x[:1]]))
# a vmap inside the pmap: psum over both axes
xx = rng.standard_normal((n, 5, 3)).astype(np.float32)
check(pyree.pmap(lambda a: pyree.vmap(lambda b: lax.psum(b, ("i", "j")), axis_name="j")(a),
                 "i")(xx), np.broadcast_to(xx.sum((0, 1)), xx.shape))

# -- in_axes, out_axes, pytrees, keyword and static arguments
w = rng.standard_normal((3, 4)).astype(np.float32)
check(pyree.pmap(lambda v, m: v @ m, in_axes=(1, None))(np.ascontiguousarray(x.T), w), x @ w)
check(pyree.pmap(lambda v: v * 2, out_axes=1)(x), (x * 2).T)
assert pyree.pmap(lambda v: v * 2, out_axes=1)(x).sharding.sharded_axis == 1
total = pyree.pmap(lambda v: lax.psum(v, "i"), "i", out_axes=None)(x)
assert total.shape == (3,) and total.device == devs[0]
check(total, x.sum(0))


def tree_fn(d, k, scale):
    return {"a": d["p"] * scale + k, "b": lax.psum(d["q"], "i")}


out = pyree.pmap(tree_fn, "i", static_broadcasted_argnums=(2,))({"p": x, "q": x + 1}, x, 3.0)
check(out["a"], x * 4)
check(out["b"], np.broadcast_to((x + 1).sum(0), x.shape))
check(pyree.pmap(lambda v, *, k: v + k)(x, k=x), 2 * x)
check(pyree.pmap(lambda v: v + 1, axis_size=n, in_axes=None)(x[0]), np.broadcast_to(x[0] + 1,
                                                                                      x.shape))
check(pyree.pmap(lambda v: v + 1, devices=devs[::-1])(x), x + 1)

# -- a pmap result feeds the next pmap piece by piece, and ordinary computations whole
y = pyree.pmap(lambda v: v + 1)(x)
z = pyree.pmap(lambda v: v * 2)(y)
check(z, (x + 1) * 2)
check(jnp.sum(z, 0), ((x + 1) * 2).sum(0))
check(pyree.jit(lambda a: a * 3)(z), (x + 1) * 6)
check(pyree.device_get(z), (x + 1) * 2)

# -- Python control flow on traced values, as under jit
def clip(v):
    if v.sum() > 0:
        v = v * 2
    return v


check(pyree.pmap(clip)(x), stacked(clip, x))

# -- data-parallel gradient step: the same step as on one device over the whole batch
X = rng.standard_normal((n, 8, 4)).astype(np.float32)
Y = rng.standard_normal((n, 8)).astype(np.float32)
w0 = rng.standard_normal(4).astype(np.float32)
loss = lambda w, a, b: jnp.mean((a @ w - b) ** 2)


def step(w, a, b):
    value, g = pyree.value_and_grad(loss)(w, a, b)
    return w - 0.1 * lax.pmean(g, "i"), lax.pmean(value, "i")


w1, value = pyree.pmap(step, "i", in_axes=(None, 0, 0))(w0, X, Y)
whole = pyree.jit(lambda w, a, b: w - 0.1 * pyree.grad(loss)(w, a, b))(
    w0, X.reshape(-1, 4), Y.reshape(-1))
check(w1, np.broadcast_to(np.asarray(whole), (n, 4)))
check(value, np.full(n, np.asarray(loss(w0, X.reshape(-1, 4), Y.reshape(-1)))))
assert all((np.asarray(w1)[i] == np.asarray(w1)[0]).all() for i in range(n))
# the gradient through psum (its transpose is psum): n on every device
check(pyree.pmap(pyree.grad(lambda v: lax.psum(v, "i").sum()), "i")(x), np.full(x.shape, n))

# -- errors, raised before compiling and naming the caller's line
for bad, text in [
        (lambda: pyree.pmap(lambda v: v)(np.ones((n + 1, 2), np.float32)), "has size"),
        (lambda: pyree.pmap(lambda v: v, devices=devs[:1])(x), "given 1 devices"),
        (lambda: pyree.pmap(lambda a, b: a + b)(x, np.ones((n + 1, 3))), "inconsistent sizes"),
        (lambda: pyree.pmap(lambda v: v)(np.float32(1.0)), "rank should be at least"),
        (lambda: pyree.pmap(lambda v: v, in_axes=None)(x), "at least one non-None")]:
    try:
        bad()
    except ValueError as e:
        assert text in str(e) and "test_pmap_script" in str(e), e
    else:
        raise AssertionError(f"no error for {text}")
try:
    pyree.pmap(lambda v: lax.psum(v, "k"), "i")(x)
except NameError as e:
    assert "unbound axis name: 'k'" in str(e) and "test_pmap_script" in str(e), e
else:
    raise AssertionError("an unbound axis name must fail")
try:
    pyree.jit(lambda v: pyree.pmap(lambda u: u * 2)(v))(x)
except NotImplementedError as e:
    assert "inside jit" in str(e), e
else:
    raise AssertionError("pmap inside jit is not supported yet and must say so")
print("ok")
"""


@pytest.mark.parametrize("count", [2, 4])
def test_pmap_on_several_cpu_devices(count, tmp_path):
    script = tmp_path / "test_pmap_script.py"
    script.write_text(_ON_N_DEVICES)
    env = dict(os.environ, PYREE_NUM_CPU_DEVICES=str(count), PYREE_PLATFORM="cpu",
               PYREE_EAGER_WARMUP="0")
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-4000:]


def test_pmap_module_places_values_on_devices():
    """A pmap is one multi-device module whose arguments and results are placed on devices,
    compiled with one --iree-hal-target-device per device (here the size-1 pmap this process's
    one device allows; the subprocess tests run 2 and 4)."""
    from pyree.runtime.device import multi_device_compile_flags
    x = np.arange(3.0, dtype=np.float32)[None]
    f = pyree.pmap(lambda v: lax.psum(v, "i") * 2, "i")
    np.testing.assert_allclose(np.asarray(f(x)), x * 2)
    text = f.lower_text()
    assert "iree.abi.affinity = #hal.device.promise<@device_0>" in text
    flags = multi_device_compile_flags(pyree.devices()[:1])
    assert "--iree-hal-target-device=device_0=local[0]" in flags


def test_pmap_mapped_axis_larger_than_device_count_names_the_line():
    count = len(pyree.devices())
    with pytest.raises(ValueError, match=r"(?s)has size .* devices.*test_pmap\.py"):
        pyree.pmap(lambda v: v)(np.ones((count + 1, 2), np.float32))


def test_vmap_axis_index_all_gather_ppermute():
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(
        np.asarray(pyree.vmap(lambda v: lax.axis_index("i"), axis_name="i")(x)), np.arange(4))
    np.testing.assert_allclose(
        np.asarray(pyree.vmap(lambda v: lax.all_gather(v, "i"), axis_name="i")(x)),
        np.broadcast_to(x, (4, 4, 3)))
    np.testing.assert_allclose(
        np.asarray(pyree.vmap(lambda v: lax.all_gather(v, "i", axis=1), axis_name="i")(x)),
        np.broadcast_to(x.T, (4, 3, 4)))
    ring = [(j, (j + 1) % 4) for j in range(4)]
    np.testing.assert_allclose(
        np.asarray(pyree.vmap(lambda v: lax.ppermute(v, "i", ring), axis_name="i")(x)),
        np.roll(x, 1, axis=0))
    np.testing.assert_allclose(
        np.asarray(pyree.jit(pyree.vmap(lambda v: lax.ppermute(v, "i", [(1, 0)]),
                                        axis_name="i"))(x)),
        np.concatenate([x[1:2], np.zeros((3, 3), np.float32)]))
    with pytest.raises(ValueError, match="distinct destinations"):
        pyree.vmap(lambda v: lax.ppermute(v, "i", [(0, 1), (2, 1)]), axis_name="i")(x)
