"""pmap over several CPU devices (one IREE multi-device program) and the collectives it shares
with vmap (psum, pmean, pmax, pmin, axis_index, all_gather, ppermute, psum_scatter,
all_to_all), their values and their derivatives.

The device count is fixed when pyree creates its devices, so the multi-device checks run in
subprocesses started with PYREE_NUM_CPU_DEVICES=2 and 4; each checks pmap results against
NumPy and against the same function applied to each slice on one device (stacked). The
subprocess scripts import this file for the NumPy references of the collectives.

Derivatives through collectives are checked against float64 central differences of the NumPy
references: under ``vmap(grad(f), axis_name=...)`` or ``pmap(grad(f))`` each example's
(device's) cotangent is the derivative of the sum over all examples of ``<u, f>`` with respect
to its input (JAX's convention: psum transposes to psum, all_gather to psum_scatter...).
"""
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyree
import pyree.numpy as jnp
from pyree import lax

# -- NumPy references: ``stacked`` holds every example's (device's) operand along axis 0 ------------


def _piece(a: np.ndarray, dim: int, index: int, count: int, tiled: bool) -> np.ndarray:
    if not tiled:
        return np.take(a, index, axis=dim)
    width = a.shape[dim] // count
    return np.take(a, range(index * width, (index + 1) * width), axis=dim)


def _join(pieces: list, dim: int, tiled: bool) -> np.ndarray:
    return np.concatenate(pieces, dim) if tiled else np.stack(pieces, dim)


def psum_scatter_reference(stacked: np.ndarray, dim: int, tiled: bool) -> np.ndarray:
    n, total = stacked.shape[0], stacked.sum(0)
    return np.stack([_piece(total, dim, i, n, tiled) for i in range(n)])


def all_to_all_reference(stacked: np.ndarray, split: int, concat: int, tiled: bool) -> np.ndarray:
    n = stacked.shape[0]
    return np.stack([_join([_piece(stacked[j], split, i, n, tiled) for j in range(n)], concat,
                           tiled) for i in range(n)])


def all_gather_reference(stacked: np.ndarray, dim: int, tiled: bool) -> np.ndarray:
    n = stacked.shape[0]
    return np.stack([_join(list(stacked), dim, tiled)] * n)


def ppermute_reference(stacked: np.ndarray, perm: list) -> np.ndarray:
    out = np.zeros_like(stacked)
    for src, dst in perm:
        out[dst] = stacked[src]
    return out


def collective_cases(n: int) -> list:
    """(name, per-example function, NumPy reference of the stacked result, example shape) for
    every collective over an axis "i" of size ``n``, in its different forms."""
    ring = [(j, (j + 1) % n) for j in range(n)]
    # Sources that send nothing, destinations that get nothing:
    partial = [(0, n - 1)] + ([(n - 1, 1)] if n > 2 else [])
    bcast = lambda r: (lambda X: np.broadcast_to(r(X), X.shape))
    return [
        ("psum", lambda v: lax.psum(v, "i"), bcast(lambda X: X.sum(0)), (3,)),
        ("pmean", lambda v: lax.pmean(v, "i"), bcast(lambda X: X.mean(0)), (3,)),
        ("pmax", lambda v: lax.pmax(v, "i"), bcast(lambda X: X.max(0)), (3,)),
        ("pmin", lambda v: lax.pmin(v, "i"), bcast(lambda X: X.min(0)), (3,)),
        ("all_gather", lambda v: lax.all_gather(v, "i", axis=1),
         lambda X: all_gather_reference(X, 1, False), (3, 2)),
        ("all_gather tiled", lambda v: lax.all_gather(v, "i", tiled=True),
         lambda X: all_gather_reference(X, 0, True), (2, 3)),
        ("ppermute ring", lambda v: lax.ppermute(v, "i", ring),
         lambda X: ppermute_reference(X, ring), (3,)),
        ("ppermute partial", lambda v: lax.ppermute(v, "i", partial),
         lambda X: ppermute_reference(X, partial), (3,)),
        ("psum_scatter", lambda v: lax.psum_scatter(v, "i", scatter_dimension=1),
         lambda X: psum_scatter_reference(X, 1, False), (3, n)),
        ("psum_scatter tiled", lambda v: lax.psum_scatter(v, "i", tiled=True),
         lambda X: psum_scatter_reference(X, 0, True), (2 * n, 3)),
        ("all_to_all", lambda v: lax.all_to_all(v, "i", 0, 1),
         lambda X: all_to_all_reference(X, 0, 1, False), (n, 3)),
        ("all_to_all tiled", lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True),
         lambda X: all_to_all_reference(X, 1, 0, True), (3, 2 * n)),
    ]


def _around(f):
    """``f`` between nonlinear functions, so that its derivative depends on where it is taken
    (polynomials: float64 sin and cos are long formulas in pyree's programs, which made IREE's
    compile of the 4-device pmap of every case take minutes)."""
    def around(v):
        w = f(v + 0.5 * v * v)
        return w * w - w
    return around


def _around_reference(reference):
    def around(X):
        w = reference(X + 0.5 * X * X)
        return w * w - w
    return around


def all_derivatives(cases: list, n: int):
    """A per-example function of flat float64 vectors (x, t, u) returning, for every case, the
    value of its function at x, its JVP along t, and its VJP of u (the derivatives computed
    inside the vmap or pmap it is mapped with), flattened and concatenated: one program, and
    one result to assemble, for all the collectives. Also how to cut the inputs and outputs."""
    out_shapes = [reference(np.zeros((n,) + shape)).shape[1:] for _, _, reference, shape in cases]

    def per_example(x, t, u):
        results, xo, uo = [], 0, 0
        for (_, f, _, shape), out_shape in zip(cases, out_shapes):
            size, out_size = math.prod(shape), math.prod(out_shape)
            xi = x[xo:xo + size].reshape(shape)
            ti = t[xo:xo + size].reshape(shape)
            ui = u[uo:uo + out_size].reshape(out_shape)
            xo, uo = xo + size, uo + out_size
            g = _around(f)
            value, tangent = pyree.jvp(g, (xi,), (ti,))
            (cotangent,) = pyree.vjp(g, xi)[1](ui)
            results += [value.ravel(), tangent.ravel(), cotangent.ravel()]
        return jnp.concatenate(results)
    return per_example, out_shapes


def check_all_derivatives(mapped, cases: list, n: int, seed: int = 0) -> None:
    """``mapped(per_example)`` (a vmap or pmap over "i" of size ``n``) gives every case's value,
    JVP and VJP equal to the NumPy reference and its float64 central differences."""
    per_example, out_shapes = all_derivatives(cases, n)
    rng = np.random.default_rng(seed)
    X = [rng.standard_normal((n,) + shape) for *_, shape in cases]
    T = [rng.standard_normal(x.shape) for x in X]
    U = [rng.standard_normal((n,) + s) for s in out_shapes]
    flat = lambda arrays: np.concatenate([a.reshape(n, -1) for a in arrays], axis=1)
    got = np.asarray(mapped(per_example)(flat(X), flat(T), flat(U)))
    assert got.dtype == np.float64
    eps, offset = 1e-6, 0
    for (name, _, reference, _), x, t, u in zip(cases, X, T, U):
        g = _around_reference(reference)
        pieces = []
        for shape in (u.shape, u.shape, x.shape):
            size = math.prod(shape[1:])
            pieces.append(got[:, offset:offset + size].reshape(shape))
            offset += size
        value, tangent, cotangent = pieces
        np.testing.assert_allclose(value, g(x), rtol=1e-12, atol=1e-12, err_msg=name)
        central = (g(x + eps * t) - g(x - eps * t)) / (2 * eps)
        np.testing.assert_allclose(tangent, central, rtol=1e-6, atol=1e-8, err_msg=f"{name} jvp")
        central = np.zeros_like(x)
        for index in np.ndindex(x.shape):
            step = np.zeros_like(x)
            step[index] = eps
            central[index] = (np.vdot(u, g(x + step)) - np.vdot(u, g(x - step))) / (2 * eps)
        np.testing.assert_allclose(cotangent, central, rtol=1e-6, atol=1e-8,
                                   err_msg=f"{name} vjp")
    assert offset == got.shape[1]


_ON_N_DEVICES = r"""
import numpy as np
import pyree, pyree.nn, pyree.numpy as jnp
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
# psum_scatter and all_to_all: each device's piece of the sum, of every device's pieces
from test_pmap import all_to_all_reference, psum_scatter_reference
blocks = rng.standard_normal((n, 2 * n, 3)).astype(np.float32)
rows = rng.standard_normal((n, 3, n)).astype(np.float32)
check(pyree.pmap(lambda v: lax.psum_scatter(v, "i", tiled=True), "i")(blocks),
      psum_scatter_reference(blocks, 0, True))
check(pyree.pmap(lambda v: lax.psum_scatter(v, "i", scatter_dimension=1), "i")(rows),
      psum_scatter_reference(rows, 1, False))
check(pyree.pmap(lambda v: lax.all_to_all(v, "i", 1, 0), "i")(rows),
      all_to_all_reference(rows, 1, 0, False))
check(pyree.pmap(lambda v: lax.all_to_all(v, "i", 0, 1, tiled=True), "i")(blocks),
      all_to_all_reference(blocks, 0, 1, True))
check(pyree.pmap(lambda a: pyree.vmap(lambda b: lax.psum_scatter(b, "i"), axis_name="j")(a),
                 "i")(rows), psum_scatter_reference(rows, 1, False))
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
# ... the same step inside jit (one multi-device program), and three of them in a fori_loop
# there, against the single-device steps on the whole batch
replicated_step = pyree.pmap(step, "i", in_axes=(None, 0, 0), out_axes=None)
check(pyree.jit(lambda w, a, b: replicated_step(w, a, b)[0])(w0, X, Y), np.asarray(whole))
looped = pyree.jit(lambda w, a, b: lax.fori_loop(0, 3, lambda k, w: replicated_step(w, a, b)[0],
                                                 w))(w0, X, Y)
want = w0
for _ in range(3):
    want = pyree.jit(lambda w, a, b: w - 0.1 * pyree.grad(loss)(w, a, b))(
        want, X.reshape(-1, 4), Y.reshape(-1))
check(looped, np.asarray(want))
# the gradient through psum (its transpose is psum): n on every device
check(pyree.pmap(pyree.grad(lambda v: lax.psum(v, "i").sum()), "i")(x), np.full(x.shape, n))
# a product the single-device lowering marks for data tiling (IREE 3.13 failed to compile
# data tiling in a multi-device module: "stream.tensor.sizeof illegal for this phase")
# in a pmap'd MLP training step)
A = rng.standard_normal((n, 64, 784)).astype(np.float32)
W1 = (rng.standard_normal((784, 512)) / 28).astype(np.float32)
W2 = (rng.standard_normal((512, 10)) / 22).astype(np.float32)
L = rng.integers(0, 10, (n, 64)).astype(np.int32)
mlp_loss = lambda ws, a, k: -jnp.mean(jnp.sum(
    pyree.nn.one_hot(k, 10) * pyree.nn.log_softmax(pyree.nn.relu(a @ ws[0]) @ ws[1]), axis=-1))
grads = pyree.pmap(lambda ws, a, k: lax.pmean(pyree.grad(mlp_loss)(ws, a, k), "i"), "i",
                   in_axes=(None, 0, 0), out_axes=None)((W1, W2), A, L)
want = pyree.jit(pyree.grad(mlp_loss))((W1, W2), A.reshape(-1, 784), L.reshape(-1))
for g, w in zip(grads, want):
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-6)

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
    pyree.pmap(lambda v: lax.psum_scatter(v, "i", tiled=True), "i")(x[:, :1])
except ValueError as e:
    assert "not divisible by the size" in str(e) and "test_pmap_script" in str(e), e
else:
    raise AssertionError("a scatter dimension not divisible by the device count must fail")
try:
    pyree.pmap(lambda v: lax.psum(v, "k"), "i")(x)
except NameError as e:
    assert "unbound axis name: 'k'" in str(e) and "test_pmap_script" in str(e), e
else:
    raise AssertionError("an unbound axis name must fail")

# -- pmap inside jit and grad (a vmap of the same axis whose mapped axes are placed over
# the devices: a jit around it follows them), against NumPy and central differences
normalize = pyree.pmap(lambda v: v / lax.psum(v * v, "i"), axis_name="i")
jitted = pyree.jit(lambda v: normalize(v) * 2)
inside = jitted(x)
check(inside, x / (x * x).sum(0) * 2)
assert inside.sharding.spec == pyree.sharding.P("i", None) and inside.devices() == set(devs)
from pyree._sharded_jit import PartitionedProgram
assert any(isinstance(p, PartitionedProgram) for p in jitted._cache.values())
scaled = pyree.pmap(lambda w, v, k: lax.pmean(w * v, "i") * k, "i", in_axes=(None, 0, None),
                    static_broadcasted_argnums=2)
check(pyree.jit(lambda w, v: scaled(w, v, 3))(np.float32(2.0), x),
      np.broadcast_to((2 * x).mean(0) * 3, x.shape))
F = lambda v: (v / (v * v).sum(0)).sum()
x64 = x.astype(np.float64)
numeric = np.zeros_like(x64)
for idx in np.ndindex(x.shape):
    e = np.zeros_like(x64)
    e[idx] = 1e-3
    numeric[idx] = (F(x64 + e) - F(x64 - e)) / 2e-3
np.testing.assert_allclose(np.asarray(pyree.grad(lambda v: normalize(v).sum())(x)), numeric,
                           rtol=2e-3, atol=1e-4)
np.testing.assert_allclose(np.asarray(pyree.jit(pyree.grad(lambda v: normalize(v).sum()))(x)),
                           numeric, rtol=2e-3, atol=1e-4)
try:
    pyree.jit(lambda v: normalize(v))(np.ones((n + 1, 3), np.float32))
except ValueError as e:
    assert "one entry per device" in str(e) and "test_pmap_script" in str(e), e
else:
    raise AssertionError("a mapped axis unlike the device count must fail inside jit too")

# -- collectives inside lax.cond (every branch on every device, each device selecting its
# own), fori_loops over Python ints and scans (one loop over every device), against NumPy
sums, maxes = x.sum(0), x.max(0)
both = pyree.pmap(lambda v: lax.cond(v.sum() > 0, lambda u: lax.psum(u, "i") * 2,
                                     lambda u: lax.pmax(u, "i") - 1, v), "i")(x)
check(both, np.where((x.sum(1) > 0)[:, None], sums * 2, maxes - 1))
picked = pyree.pmap(lambda v: lax.switch(lax.axis_index("i") % 3, [
    lambda u: lax.psum(u, "i"), lambda u: lax.pmin(u, "i"), lambda u: u * 0 + 7], v), "i")(x)
check(picked, np.stack([[sums, x.min(0), np.full(3, 7.0)][i % 3] for i in range(n)]))
looped = pyree.pmap(lambda v: lax.fori_loop(0, 3, lambda k, a: a + lax.pmean(a * k, "i"), v),
                    "i")(x)
want = x.copy()
for k in range(3):
    want = want + (want * k).mean(0)
check(looped, want)
carried = pyree.pmap(lambda v: lax.scan(lambda c, r: (c + lax.psum(r * c, "i"), None),
                                        v[0], v)[0], "i")(x)
want = x[:, 0].copy()
for t in range(3):
    want = want + (x[:, t] * want).sum()
check(carried, want)
# while_loops: one loop over every device's values, going on while any device's condition
# holds; a device whose condition no longer holds keeps its values (which the others'
# psums go on seeing). The trip count the same on every device, then one per device:
grown = pyree.pmap(lambda v: lax.while_loop(lambda a: lax.psum(a * a, "i").sum() < 1e4,
                                            lambda a: a * 2 + lax.pmean(a, "i"), v), "i")(x)
want = x.astype(np.float64)
while (want * want).sum() < 1e4:
    want = want * 2 + want.mean(0)
check(grown, want)
counts, totals = pyree.pmap(lambda v: lax.while_loop(
    lambda c: c[0] < 3 + lax.axis_index("i"),
    lambda c: (c[0] + 1, c[1] + 0.5 * lax.psum(c[1], "i")), (0, v)), "i")(x)
want_counts, want = np.zeros(n, int), x.astype(np.float64)
while (want_counts < 3 + np.arange(n)).any():
    going = want_counts < 3 + np.arange(n)
    want = np.where(going[:, None], want + 0.5 * want.sum(0), want)
    want_counts += going
np.testing.assert_array_equal(np.asarray(counts), want_counts)
check(totals, want)
traced_bounds = pyree.pmap(lambda v, k: lax.fori_loop(0, k, lambda j, a: a + lax.pmax(a, "i"), v),
                           "i")(x, np.arange(n, dtype=np.int32) + 1)
want = x.astype(np.float64)
for step in range(n):   # device i runs i + 1 steps
    want = np.where((step < np.arange(n) + 1)[:, None], want + want.max(0), want)
check(traced_bounds, want)
# Scans with per-step outputs, forward and reversed, and a long fori_loop over Python ints:
for reverse in (False, True):
    final, ys = pyree.pmap(lambda v: lax.scan(
        lambda c, r: (c + lax.psum(r * c, "i"), lax.pmax(r, "i") + c), v[0], v,
        reverse=reverse), "i")(x)
    want_c, want_ys = x[:, 0].astype(np.float64), np.zeros((n, 3))
    for t in (reversed(range(3)) if reverse else range(3)):
        want_ys[:, t] = x[:, t].max() + want_c
        want_c = want_c + (x[:, t] * want_c).sum()
    check(final, want_c)
    check(ys, want_ys)
# Gradients through loops holding collectives (scan's transpose; a while loop's derivative:
# while_count and counted loops), against central differences of a NumPy model of the
# loops: each device gets the derivative of the sum over devices.
def lockstep(X, trips):
    counts, vals = np.zeros(len(X), int), X.copy()
    while (counts < trips).any():
        going = counts < trips
        vals = np.where(going[:, None], vals * 0.5 + 0.1 * (vals * vals).sum(0), vals)
        counts += going
    return vals.sum()


def central_differences(F, X):
    out = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        e = np.zeros_like(X)
        e[idx] = 1e-5
        out[idx] = (F(X + e) - F(X - e)) / 2e-5
    return out


fixed = lambda v: jnp.sum(lax.fori_loop(0, 3, lambda k, a: a * 0.5 + 0.1 * lax.psum(a * a, "i"),
                                        v))
# (A while loop's trip count the same on every device, as JAX requires: with different
# counts, the derivative's backward steps pair the devices' steps as vmap's do.)
counted = lambda v: jnp.sum(lax.while_loop(lambda c: lax.psum(c[0], "i") < 3 * n, lambda c: (
    c[0] + 1, c[1] * 0.5 + 0.1 * lax.psum(c[1] * c[1], "i")), (0, v))[1])
for f, trips in [(fixed, np.full(n, 3)), (counted, np.full(n, 3))]:
    np.testing.assert_allclose(np.asarray(pyree.pmap(pyree.grad(f), "i")(x)), central_differences(
        lambda X: lockstep(X, trips), x.astype(np.float64)), rtol=1e-3, atol=1e-4)
long = pyree.pmap(lambda v: lax.fori_loop(0, 300, lambda k, a: a * 0.99 + lax.pmean(a, "i")
                                          * 0.01, v), "i")(x)
want = x.astype(np.float64)
for k in range(300):
    want = want * 0.99 + want.mean(0) * 0.01
check(long, want)
print("ok")
"""


_GRADIENTS_ON_N_DEVICES = r"""
import numpy as np
import pyree, pyree.numpy as jnp
from pyree import lax
from test_pmap import check_all_derivatives, collective_cases

n = len(pyree.devices())
# Every collective's value, JVP and VJP computed on the devices (grad inside the pmap), one
# program for all of them, against float64 central differences.
check_all_derivatives(lambda f: pyree.pmap(f, "i"), collective_cases(n), n)

# Sharded parameters (each device holds a block of w): all_gather puts the whole w together
# for each device's batch, and the gradient of a block is the psum_scatter of the devices'
# gradients, which is the block of the whole batch's gradient.
rng = np.random.default_rng(1)
X = rng.standard_normal((n, 8, 2 * n))
Y = rng.standard_normal((n, 8))
w = rng.standard_normal(2 * n)
loss = lambda w, a, b: jnp.mean((a @ w - b) ** 2)
sharded = pyree.pmap(pyree.grad(lambda block, a, b: loss(lax.all_gather(block, "i", tiled=True),
                                                         a, b)), "i")(w.reshape(n, 2), X, Y)
whole = pyree.grad(lambda w: sum(loss(w, X[i], Y[i]) for i in range(n)))(w)
np.testing.assert_allclose(np.asarray(sharded), np.asarray(whole).reshape(n, 2), rtol=1e-12)

# A vmap inside the pmap: collectives over the pmap axis (batched along the vmap's) and over
# both axes, differentiated inside both; the same as grad of the batched program.
X = rng.standard_normal((n, 3, n, 2))
U = rng.standard_normal((n, 3, 2, n))
f = lambda v: (lax.all_to_all(v * v, "i", 0, 1)
               + lax.psum_scatter(v * v, "i")[:, None] * lax.psum(v, ("i", "j")).T)
per_example = lambda x, u: pyree.vjp(f, x)[1](u)[0]
inside = pyree.pmap(pyree.vmap(per_example, axis_name="j"), "i")(X, U)
outside = pyree.grad(lambda X: jnp.vdot(U, pyree.vmap(pyree.vmap(f, axis_name="j"),
                                                      axis_name="i")(X)))(X)
np.testing.assert_allclose(np.asarray(inside), np.asarray(outside), rtol=1e-12)
print("ok")
"""


def _run_on_devices(script_text: str, count: int, tmp_path, **env_vars: str) -> None:
    """Run a script in a process with ``count`` CPU devices; it imports this file (for the
    NumPy references) and prints "ok" at its end."""
    script = tmp_path / "test_pmap_script.py"
    tests = str(pathlib.Path(__file__).parent)
    script.write_text(f"import sys\nsys.path.insert(0, {tests!r})\n" + script_text)
    env = dict(os.environ, PYREE_NUM_CPU_DEVICES=str(count), PYREE_PLATFORM="cpu",
               PYREE_EAGER_WARMUP="0", **env_vars)
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-4000:]


@pytest.mark.parametrize("count", [2, 4])
def test_pmap_on_several_cpu_devices(count, tmp_path):
    _run_on_devices(_ON_N_DEVICES, count, tmp_path)


@pytest.mark.parametrize("count", [2, 4])
def test_pmap_gradients_through_collectives_match_central_differences(count, tmp_path):
    _run_on_devices(_GRADIENTS_ON_N_DEVICES, count, tmp_path, PYREE_ENABLE_X64="1")


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


# -- psum_scatter and all_to_all under vmap; derivatives through every collective --------------------

@pytest.mark.parametrize("example_shape, dim, tiled", [
    ((4, 5), 0, False), ((3, 4, 2), 1, False), ((3, 8), 1, True), ((8, 3), -2, True),
    ((4,), 0, False)])
def test_vmap_psum_scatter_matches_numpy(example_shape, dim, tiled):
    x = np.random.default_rng(0).standard_normal((4,) + example_shape).astype(np.float32)
    want = psum_scatter_reference(x, dim % len(example_shape), tiled)
    f = lambda v: lax.psum_scatter(v, "i", scatter_dimension=dim, tiled=tiled)
    np.testing.assert_allclose(np.asarray(pyree.vmap(f, axis_name="i")(x)), want, rtol=1e-5,
                               atol=1e-6)
    moved = np.ascontiguousarray(np.moveaxis(x, 0, 1))
    np.testing.assert_allclose(np.asarray(pyree.jit(pyree.vmap(f, axis_name="i", in_axes=1))(
        moved)), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("example_shape, split, concat, tiled", [
    ((4, 3), 0, 0, False), ((4, 3), 0, 1, False), ((3, 4, 2), 1, 2, False),
    ((2, 3, 4), -1, 1, False), ((8, 3), 0, 1, True), ((8, 3), 0, 0, True),
    ((3, 8), 1, 0, True), ((5, 8, 3), 1, 1, True)])
def test_vmap_all_to_all_matches_numpy(example_shape, split, concat, tiled):
    x = np.random.default_rng(1).standard_normal((4,) + example_shape).astype(np.float32)
    rank = len(example_shape)
    want = all_to_all_reference(x, split % rank, concat % rank, tiled)
    f = lambda v: lax.all_to_all(v, "i", split, concat, tiled=tiled)
    np.testing.assert_array_equal(np.asarray(pyree.vmap(f, axis_name="i")(x)), want)
    moved = np.ascontiguousarray(np.moveaxis(x, 0, 2))
    np.testing.assert_array_equal(np.asarray(pyree.vmap(f, axis_name="i", in_axes=2)(moved)),
                                  want)


@settings(max_examples=8, deadline=None, derandomize=True, database=None)
@given(hyp=st.data())
def test_vmap_pieces_collectives_over_shapes_and_axis_sizes(hyp):
    """psum_scatter, all_to_all and all_gather against NumPy for drawn axis sizes, ranks,
    dimensions and tiling."""
    size = hyp.draw(st.sampled_from([1, 2, 3, 5]), "axis size")
    rank = hyp.draw(st.integers(1, 3), "rank")
    tiled = hyp.draw(st.booleans(), "tiled")
    split = hyp.draw(st.integers(0, rank - 1), "split / scatter dimension")
    concat = hyp.draw(st.integers(0, rank - 1), "concat / gather dimension")
    shape = [hyp.draw(st.integers(1, 3)) for _ in range(rank)]
    shape[split] = size * (hyp.draw(st.integers(1, 2)) if tiled else 1)
    x = np.random.default_rng(size).standard_normal((size,) + tuple(shape)).astype(np.float32)
    got = pyree.vmap(lambda v: (lax.psum_scatter(v, "i", scatter_dimension=split, tiled=tiled),
                                lax.all_to_all(v, "i", split, concat, tiled=tiled),
                                lax.all_gather(v, "i", axis=concat, tiled=tiled)),
                     axis_name="i")(x)
    want = (psum_scatter_reference(x, split, tiled), all_to_all_reference(x, split, concat, tiled),
            all_gather_reference(x, concat, tiled))
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)


def test_vmap_psum_scatter_and_all_to_all_of_shared_and_outer_operands():
    zeros = np.zeros(4, np.float32)
    # An operand every example shares (as JAX's pmap: each gets its piece of 4 copies' sum).
    np.testing.assert_allclose(np.asarray(pyree.vmap(
        lambda v: lax.psum_scatter(jnp.arange(4.0), "i") + v, axis_name="i")(zeros)),
        [0.0, 4.0, 8.0, 12.0])
    np.testing.assert_allclose(np.asarray(pyree.vmap(
        lambda v: lax.all_to_all(jnp.arange(4.0), "i", 0, 0) + v, axis_name="i")(zeros)),
        np.repeat(np.arange(4.0), 4).reshape(4, 4))
    # Over the outer of two nested vmaps: per inner example.
    x = np.random.default_rng(2).standard_normal((4, 3, 4, 5)).astype(np.float32)
    inner = lambda f, **kw: pyree.vmap(pyree.vmap(f, axis_name="j", **kw), axis_name="i")
    np.testing.assert_allclose(
        np.asarray(inner(lambda v: lax.psum_scatter(v, "i"))(x)),
        np.stack([psum_scatter_reference(x[:, k], 0, False) for k in range(3)], 1), rtol=1e-5)
    np.testing.assert_array_equal(
        np.asarray(inner(lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True), in_axes=2)(x)),
        np.stack([all_to_all_reference(x[..., k], 1, 0, True) for k in range(5)], 1))


def test_vmap_gradients_through_collectives_match_central_differences(x64):
    cases = collective_cases(4)
    check_all_derivatives(lambda f: pyree.vmap(f, axis_name="i"), cases, 4)
    # grad outside the vmap differentiates the batched computation (no collective left):
    # the same cotangents.
    rng = np.random.default_rng(3)
    for name, f, reference, shape in cases:
        x = rng.standard_normal((4,) + shape)
        u = rng.standard_normal(reference(x).shape)
        inside = pyree.vmap(lambda a, b: pyree.vjp(_around(f), a)[1](b)[0], axis_name="i")(x, u)
        outside = pyree.grad(lambda a: jnp.vdot(u, pyree.vmap(_around(f), axis_name="i")(a)))(x)
        np.testing.assert_allclose(np.asarray(inside), np.asarray(outside), rtol=1e-12,
                                   atol=1e-12, err_msg=name)


def test_vmap_second_derivatives_through_collectives(x64):
    # The derivative of a derivative transposes the transposes (all_gather -> psum_scatter ->
    # all_gather...): inside the vmap, the same as differentiating the batched program twice.
    rng = np.random.default_rng(4)
    for name, f, _, shape in collective_cases(4):
        g = _around(f)
        x = rng.standard_normal((4,) + shape)
        gradient = lambda v: pyree.grad(lambda q: jnp.sum(g(q)))(v)
        inside = pyree.vmap(pyree.grad(lambda v: jnp.sum(gradient(v) ** 2)), axis_name="i")(x)
        outside = pyree.grad(lambda a: jnp.sum(pyree.vmap(gradient, axis_name="i")(a) ** 2))(x)
        np.testing.assert_allclose(np.asarray(inside), np.asarray(outside), rtol=1e-10,
                                   atol=1e-10, err_msg=name)


def test_pmax_and_pmin_derivatives_average_over_ties():
    # Examples 1 and 3 hold the maximum (and 0 and 2 the minimum): each gets half of the
    # summed cotangent, as reduce_max's derivative gives (JAX 0.10.2 has no rule for pmax).
    x = np.array([1.0, 3.0, 1.0, 3.0], np.float32)
    for collective, want in [(lax.pmax, [0, 2, 0, 2]), (lax.pmin, [2, 0, 2, 0])]:
        g = pyree.vmap(pyree.grad(lambda v: collective(v, "i")), axis_name="i")(x)
        np.testing.assert_allclose(np.asarray(g), want)
        whole = pyree.grad(lambda a: pyree.vmap(lambda v: collective(v, "i"),
                                                 axis_name="i")(a).sum())(x)
        np.testing.assert_allclose(np.asarray(whole), want)


@pytest.mark.parametrize("fun, error, text", [
    (lambda v: lax.psum_scatter(v, "k"), NameError, "unbound axis name: 'k'"),
    (lambda v: lax.all_to_all(v, "k", 0, 0), NameError, "unbound axis name: 'k'"),
    (lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True), ValueError,
     "dimension 1 .* has size 6, which is not divisible by the size 4 of axis 'i'"),
    (lambda v: lax.psum_scatter(v, "i", scatter_dimension=1), ValueError,
     "has size 6, but it must equal the size 4"),
    (lambda v: lax.psum_scatter(v, "i", scatter_dimension=2), ValueError,
     "scatter_dimension 2 is out of range for an operand of rank 2"),
    (lambda v: lax.psum_scatter(v[0, 0], "i"), ValueError, "rank at least 1"),
    (lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True), ValueError,
     "split_axis: the operand's dimension 1 .* not divisible by the size 4"),
    (lambda v: lax.all_to_all(v, "i", 0, 2), ValueError,
     "concat_axis 2 is out of range"),
    (lambda v: lax.all_to_all(v, ("i", "i"), 0, 0), ValueError, "an axis is named twice"),
    (lambda v: lax.psum(v, "i", axis_index_groups=[[0, 1], [2]]), ValueError,
     "must split the 4 positions of axis 'i' into groups of one size"),
    (lambda v: lax.pmax(v, "i", axis_index_groups=[[0, 1], [2, 2]]), ValueError,
     "each position in one group"),
    (lambda v: lax.all_gather(v, "i", axis_index_groups=3), ValueError, "must split"),
    (lambda v: lax.psum_scatter(v, "i", axis_index_groups=[[0, 1], [2, 3]]), ValueError,
     "has size 4, but it must equal the size 2 of the groups of axis 'i'"),
])
def test_collective_argument_errors_name_the_line(fun, error, text):
    x = np.ones((4, 4, 6), np.float32)
    with pytest.raises(error, match=f"(?s){text}.*test_pmap\\.py"):
        pyree.vmap(fun, axis_name="i")(x)


# -- axis_index_groups --------------------------------------------------------------------------

def grouped(n: int) -> list:
    """Groups of two positions listed out of order ([[2, 0], [3, 1]] for 4), or of one."""
    if n % 2:
        return [[j] for j in range(n)]
    return [[j + n // 2, j] for j in range(n // 2)]


def group_cases(n: int) -> list:
    """(name, per-example function, NumPy reference of the stacked result) of the collectives
    that take axis_index_groups, grouped as ``grouped(n)``."""
    groups = grouped(n)
    members = {i: group for group in groups for i in group}
    g = len(groups[0])

    def within(combine):
        return lambda X: np.stack([combine(X[members[i]]) for i in range(n)])

    def scattered(dim, tiled, cut):
        return lambda X: np.stack([_piece(X[members[i]][:, :cut].sum(0), dim,
                                          members[i].index(i), g, tiled) for i in range(n)])

    def exchanged(split, concat, tiled, cut):
        return lambda X: np.stack([_join([_piece(X[k][:cut], split, members[i].index(i), g,
                                                 tiled) for k in members[i]], concat, tiled)
                                   for i in range(n)])
    return [
        ("psum", lambda v: lax.psum(v, "i", axis_index_groups=groups),
         within(lambda G: G.sum(0))),
        ("pmean", lambda v: lax.pmean(v, "i", axis_index_groups=groups),
         within(lambda G: G.mean(0))),
        ("pmax", lambda v: lax.pmax(v, "i", axis_index_groups=groups),
         within(lambda G: G.max(0))),
        ("pmin", lambda v: lax.pmin(v, "i", axis_index_groups=groups),
         within(lambda G: G.min(0))),
        ("all_gather", lambda v: lax.all_gather(v, "i", axis_index_groups=groups, axis=1),
         within(lambda G: np.moveaxis(G, 0, 1))),
        ("all_gather tiled", lambda v: lax.all_gather(v, "i", axis_index_groups=groups,
                                                       tiled=True),
         within(lambda G: np.concatenate(list(G), 0))),
        ("psum_scatter", lambda v: lax.psum_scatter(v[:g], "i", axis_index_groups=groups),
         scattered(0, False, g)),
        ("psum_scatter tiled", lambda v: lax.psum_scatter(
            v, "i", scatter_dimension=1, axis_index_groups=groups, tiled=True),
         scattered(1, True, None)),
        ("all_to_all", lambda v: lax.all_to_all(v[:g], "i", 0, 1, axis_index_groups=groups),
         exchanged(0, 1, False, g)),
        ("all_to_all tiled", lambda v: lax.all_to_all(v, "i", 1, 0, axis_index_groups=groups,
                                                       tiled=True),
         exchanged(1, 0, True, None)),
    ]


@pytest.mark.parametrize("n", [1, 4, 6])
def test_vmap_grouped_collectives_match_numpy(n):
    X = np.random.RandomState(n).randn(n, 2, 4).astype(np.float32)
    for name, f, reference in group_cases(n):
        got = pyree.jit(pyree.vmap(f, axis_name="i"))(X)
        np.testing.assert_allclose(np.asarray(got), reference(X), rtol=1e-6, err_msg=name)
    # The mean of integers is a float, as in JAX (with or without groups).
    ints = np.arange(n, dtype=np.int32)
    for groups in (None, grouped(n)):
        got = pyree.vmap(lambda v: lax.pmean(v, "i", axis_index_groups=groups),
                         axis_name="i")(ints)
        assert np.asarray(got).dtype == np.float32
        want = group_cases(n)[1][2](ints.astype(np.float64)) if groups else ints.mean()
        np.testing.assert_allclose(np.asarray(got), np.broadcast_to(want, (n,)))


def test_vmap_grouped_psum_and_all_gather_gradients():
    """Each example's cotangent of sum_j <u_j, psum_g(x)_j> is the sum of its group's u; of an
    all_gather within groups, its own row of every group member's u."""
    n, groups = 4, grouped(4)
    x = np.random.RandomState(0).randn(n, 3)
    u = np.random.RandomState(1).randn(n, 3)
    members = {i: group for group in groups for i in group}
    psum_grad = pyree.vmap(pyree.grad(
        lambda v, w: (lax.psum(v, "i", axis_index_groups=groups) * w).sum()), axis_name="i")
    np.testing.assert_allclose(np.asarray(psum_grad(x, u)),
                               np.stack([u[members[i]].sum(0) for i in range(n)]), rtol=1e-6)
    w = np.random.RandomState(2).randn(n, 2, 3)   # each example's cotangent of its gather
    gather_grad = pyree.vmap(pyree.grad(
        lambda v, w: (lax.all_gather(v, "i", axis_index_groups=groups) * w).sum()),
        axis_name="i")
    want = np.stack([sum(w[j][members[j].index(i)] for j in members[i]) for i in range(n)])
    np.testing.assert_allclose(np.asarray(gather_grad(x, w)), want, rtol=1e-6)


_GROUPED_ON_N_DEVICES = """
import numpy as np
import pyree
from test_pmap import group_cases
n = pyree.device_count()
X = np.random.RandomState(0).randn(n, 2, 4).astype(np.float32)
for name, f, reference in group_cases(n):
    got = pyree.pmap(f, axis_name="i")(X)
    np.testing.assert_allclose(np.asarray(got), reference(X), rtol=1e-6, err_msg=name)
print("ok")
"""


def test_pmap_grouped_collectives_on_four_devices(tmp_path):
    _run_on_devices(_GROUPED_ON_N_DEVICES, 4, tmp_path)


# -- several axes at once ------------------------------------------------------------------------

def several_axes_cases(order: tuple) -> list:
    """(name, per-example function, reference of the flat stacked result) over the axes "i"
    and "j" taken together in ``order``; the reference gets every example's operand stacked
    in that order (the first name the most significant, as in JAX)."""
    return [
        ("axis_index", lambda v: lax.axis_index(order) + 0 * v[0, 0],
         lambda F: np.arange(len(F), dtype=np.float64)),
        ("all_gather", lambda v: lax.all_gather(v, order, axis=1),
         lambda F: all_gather_reference(F, 1, False)),
        ("all_gather tiled", lambda v: lax.all_gather(v, order, tiled=True),
         lambda F: all_gather_reference(F, 0, True)),
        ("psum_scatter", lambda v: lax.psum_scatter(v, order, scatter_dimension=1, tiled=True),
         lambda F: psum_scatter_reference(F, 1, True)),
        ("all_to_all", lambda v: lax.all_to_all(v, order, 1, 0, tiled=True),
         lambda F: all_to_all_reference(F, 1, 0, True)),
        ("ppermute", lambda v: lax.ppermute(v, order, SEVERAL_AXES_PERM),
         lambda F: ppermute_reference(F, SEVERAL_AXES_PERM)),
    ]


# Over six positions: a cycle, and position 5 sending nothing, 0 getting nothing.
SEVERAL_AXES_PERM = [(0, 3), (3, 1), (1, 4), (4, 2), (2, 5)]


@pytest.mark.parametrize("order", [("i", "j"), ("j", "i")])
def test_vmap_collectives_over_two_axes_match_numpy(order):
    X = np.random.RandomState(0).randn(2, 3, 2, 12)   # vmap "i" of 2 around vmap "j" of 3
    # Each example's operand, stacked in the order the names are taken together.
    flat = (X if order == ("i", "j") else X.transpose(1, 0, 2, 3)).reshape(6, 2, 12)
    for name, f, reference in several_axes_cases(order):
        got = np.asarray(pyree.vmap(pyree.vmap(f, axis_name="j"), axis_name="i")(X))
        want = reference(flat)
        if order == ("j", "i"):   # back to the (i, j) order of the vmaps
            want = want.reshape((3, 2) + want.shape[1:]).swapaxes(0, 1)
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-6, atol=1e-6,
                                   err_msg=name)
    with pytest.raises(ValueError, match="(?s)once as a destination.*test_pmap\\.py"):
        pyree.vmap(pyree.vmap(lambda v: lax.ppermute(v, order, [(0, 1), (2, 1)]),
                              axis_name="j"), axis_name="i")(X)


_TWO_AXES_ON_N_DEVICES = """
import numpy as np
import pyree
from test_pmap import several_axes_cases
n = pyree.device_count()
X = np.random.RandomState(0).randn(n, 3, 2, 12).astype(np.float32)
for name, f, reference in several_axes_cases(("i", "j")):
    got = pyree.pmap(pyree.vmap(f, axis_name="j"), axis_name="i")(X)
    want = reference(X.reshape(3 * n, 2, 12).astype(np.float64))
    np.testing.assert_allclose(np.asarray(got).reshape(want.shape), want, rtol=1e-5,
                               atol=1e-5, err_msg=name)
print("ok")
"""


def test_pmap_of_vmap_collectives_over_both_axes(tmp_path):
    _run_on_devices(_TWO_AXES_ON_N_DEVICES, 2, tmp_path)
