"""``jit`` over arguments placed with ``NamedSharding``: the computation follows the sharding
(stdlib/_sharded_jit.py, transpiler/programs/partition.py).

In this process (one device is enough to trace): the partitioned program of each rule, traced
for 2 and 4 devices, has the layouts the rules promise, and combines devices (transfers) only
where they say, never gathering where a rule applies. In subprocesses with
PYREE_NUM_CPU_DEVICES=2 and 4 (the device count is fixed when pyree creates its devices): an
MLP SGD step (the gradient of a mean cross-entropy) on a batch-split batch with replicated
parameters equals the single-device step, over several steps, with JAX's output shardings and
as one IREE multi-device program; every rule's values, and those of operations that gather,
against NumPy.
"""

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree.transpiler.programs import partition
from pyree.transpiler.core import primitives as P
from pyree.transpiler.core.ir import ShapedArray
from pyree.transpiler.backend.spmd import transfer_p
from pyree.transpiler.core.trace import get_aval, trace_to_ir
from test_sharding import _run_on_devices


def mlp_loss(params, x, y):
    """Mean cross-entropy of a 2-layer tanh MLP against one-hot labels ``y``."""
    (w1, b1), (w2, b2) = params
    logits = jnp.tanh(x @ w1 + b1) @ w2 + b2
    return -jnp.mean(jnp.sum(pyree.nn.log_softmax(logits) * y, axis=1))


def sgd_step(params, x, y):
    loss, grads = pyree.value_and_grad(mlp_loss)(params, x, y)
    new = pyree.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
    (w1, b1), _ = params
    return new, loss, jnp.tanh(x @ w1 + b1)   # (the hidden activations: batch-shaped)


def mlp_data(batch: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    params = ((rng.normal(size=(5, 8)).astype(np.float32), rng.normal(size=8).astype(np.float32)),
              (rng.normal(size=(8, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)))
    x = rng.normal(size=(batch, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, batch)]
    return params, x, y


def _partitioned(f, args, layouts, n):
    """The IR of ``f`` partitioned over ``n`` devices, its arguments split as ``layouts`` say
    (a dimension, or None: replicated), and the results' layouts."""
    closed = pyree.make_ir(f)(*args)
    avals = []
    for aval, layout in zip(closed.in_avals, layouts):
        shape = list(aval.shape)
        if layout is not None:
            shape[layout] //= n
        avals += [ShapedArray(tuple(shape), aval.dtype, aval.weak_type)] * n
    box = {}

    def program(*xs):
        inputs = [list(xs[k * n:(k + 1) * n]) for k in range(len(layouts))]
        outs, box["layouts"] = partition.partition_eval(closed, inputs, layouts, n)
        return [v for per_device in outs for v in per_device]

    return trace_to_ir(program, avals, top_level=False), box["layouts"]


def _count(ir, primitive) -> int:
    """How many equations of ``primitive`` ``ir`` holds, inside its regions too."""
    ir = ir.ir if hasattr(ir, "ir") else ir
    total = 0
    for eqn in ir.eqns:
        total += eqn.primitive is primitive
        for value in eqn.params.values():
            for region in value if isinstance(value, tuple) else (value,):
                if hasattr(region, "eqns"):
                    total += _count(region, primitive)
    return total


@pytest.mark.parametrize("n", [2, 4])
def test_mlp_step_partitions_without_gathering(n):
    params, x, y = mlp_data(4 * n)
    flat, tree = pyree.tree_util.tree_flatten(params)
    step = lambda *a: sgd_step(pyree.tree_util.tree_unflatten(tree, a[:4]), a[4], a[5])
    ir, layouts = _partitioned(step, [*flat, x, y], [None] * 4 + [0, 0], n)
    # Parameters and loss replicated, the activations split along the batch:
    assert layouts == [None] * 5 + [0]
    # Five all-reduces (the loss and the four gradients), each device receiving every other
    # device's partial result; no gathering (no concatenation of blocks).
    assert _count(ir, transfer_p) == 5 * n * (n - 1)
    assert _count(ir, P.concatenate_p) == 0
    # Each device's copy of the first layer's product works on its block of the batch:
    products = [e for e in ir.ir.eqns if e.primitive is P.dot_general_p]
    assert {e.outputs[0].aval.shape for e in products} >= {(4, 8), (4, 3), (5, 8), (8, 3)}


def cnn_loss(params, images, labels):
    """Mean cross-entropy of a small CNN (a 3x3 convolution, ReLU, a dense layer)."""
    kernel, w = params
    y = lax.conv_general_dilated(images, kernel, (1, 1), "SAME",
                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
    logits = jnp.maximum(y, 0).reshape(images.shape[0], -1) @ w
    return -jnp.mean(jnp.sum(pyree.nn.log_softmax(logits) * labels, axis=1))


def cnn_step(params, images, labels):
    loss, grads = pyree.value_and_grad(cnn_loss)(params, images, labels)
    return [p - 0.1 * g for p, g in zip(params, grads)], loss


def cnn_data(batch: int):
    rng = np.random.default_rng(2)
    params = [rng.normal(size=(3, 3, 2, 4)).astype(np.float32) * 0.3,
              rng.normal(size=(5 * 5 * 4, 3)).astype(np.float32) * 0.1]
    images = rng.normal(size=(batch, 5, 5, 2)).astype(np.float32)
    labels = np.eye(3, dtype=np.float32)[rng.integers(0, 3, batch)]
    return params, images, labels


def test_cnn_step_partitions_without_gathering():
    """The convolution's forward and input gradient stay split along the batch, its weight
    gradient (the batch contracted) is a local convolution and an all-reduce."""
    n = 2
    params, images, labels = cnn_data(4 * n)
    step = lambda k, w, x, y: cnn_step([k, w], x, y)
    ir, layouts = _partitioned(step, [*params, images, labels], [None, None, 0, 0], n)
    assert layouts == [None, None, None]
    assert _count(ir, transfer_p) == 3 * n * (n - 1)   # (loss, kernel and dense gradients)
    assert _count(ir, P.concatenate_p) == 0


def test_integer_label_loss_partitions_without_gathering():
    """take_along_axis (a gather with batching dimensions) of batch-split log-probabilities
    and labels, and its transpose (a scatter-add), index each device's own rows."""
    n = 2
    params, x, y = mlp_data(4 * n)
    labels = np.argmax(y, 1).astype(np.int32)

    def loss(w, x, labels):
        logp = pyree.nn.log_softmax(x @ w)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    ir, layouts = _partitioned(pyree.value_and_grad(loss), [np.ones((5, 3), np.float32), x,
                                                            labels], [None, 0, 0], n)
    assert layouts == [None, None]
    assert _count(ir, transfer_p) == 2 * n * (n - 1) and _count(ir, P.concatenate_p) == 0


def test_loops_and_conditionals_partition():
    """A training loop (fori_loop) over a batch-split batch is one loop whose body is the
    partitioned step: all-reduces inside, no gathers; a while loop's split carry stays split;
    a scan over a split array's rows gives split per-step outputs; a cond's outputs keep
    the layout its branches agree on."""
    n = 2
    params, x, y = mlp_data(4 * n)
    flat, tree = pyree.tree_util.tree_flatten(params)

    def train(*a):
        update = lambda i, p: pyree.tree_util.tree_map(
            lambda v, g: v - 0.1 * g, p, pyree.grad(mlp_loss)(p, a[4], a[5]))
        return lax.fori_loop(0, 3, update, pyree.tree_util.tree_unflatten(tree, a[:4]))

    ir, layouts = _partitioned(train, [*flat, x, y], [None] * 4 + [0, 0], n)
    assert layouts == [None] * 4
    assert _count(ir, P.concatenate_p) == 0 and _count(ir, transfer_p) >= 4 * n * (n - 1)
    ir, layouts = _partitioned(lambda x: (
        lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2 + c[1].mean()),
                       (0, x))[1],
        lax.scan(lambda c, r: (c + r.sum(), r * c), 0.0, x.T),
        lax.cond(x.sum() > 0, lambda u: (u * 2, u.sum()), lambda u: (u - 1, u.max()), x),
        lax.cond(x.sum() > 0, lambda u: u * 2, lambda u: u.sum() + u * 0, x)), [_X], [0], n)
    assert layouts == [0, None, 1, 0, None, 0]
    assert _count(ir, P.concatenate_p) == 0
    # Branches that disagree (one gathers to sort): the output is gathered, replicated.
    _, layouts = _partitioned(lambda x: lax.cond(x.sum() > 0, lambda u: u * 2,
                                                 lambda u: jnp.sort(u, 0), x), [_X], [0], n)
    assert layouts == [None]


_X = np.ones((8, 3), np.float32)     # split along dimension 0 over 2 devices
_V = np.ones(3, np.float32)
_W = np.ones((2, 3), np.float32)


@pytest.mark.parametrize("f, args, layouts, expected, all_reduces, gathers, concatenations", [
    # elementwise with a replicated operand cut to blocks; a row reduction stays split
    (lambda x, v: (jnp.sin(x) * v).sum(1), [_X, _X], [0, None], [0], 0, 0, 0),
    # a reduction over the split dimension: local reduction, then an all-reduce
    (lambda x, v: x.max(0) + v, [_X, _V], [0, None], [None], 1, 0, 0),
    # contracting the split dimension (a weight gradient); a free dimension of one side
    (lambda x, w: (x.T @ x, x @ w.T), [_X, _W], [0, None], [None, 0], 1, 0, 0),
    # the split dimension moved by transpose, kept by reshape and broadcast_in_dim
    (lambda x, v: (x.T * 2, x.reshape(-1), x.reshape(8, 1, 3),
                   jnp.broadcast_to(x[:, None, :], (8, 2, 3))), [_X, _V], [0, None],
     [1, 0, 0, 0], 0, 0, 0),
    # a whole slice, padding, a concatenation along another dimension (the user's own, one
    # per device), argmax of rows
    (lambda x, v: (x[:, 1:], jnp.pad(x, ((0, 0), (1, 2))), jnp.concatenate([x, x], 1),
                   jnp.argmax(x, 1)), [_X, _V], [0, None], [0, 0, 0, 0], 0, 0, 1),
    # split along the columns, contracted by the product
    (lambda x, u: x @ u, [_X.T.copy(), np.ones(8, np.float32)], [1, None], [None], 1, 0, 0),
    # no partitioned form (x gathered once for all three): a slice of the split dimension,
    # sorting along it, argmax over it
    (lambda x, v: (x[1:], jnp.sort(x, 0), jnp.argmax(x, 0)), [_X, _V], [0, None],
     [None, None, None], 0, 1, 1),
])
def test_rules_layouts(f, args, layouts, expected, all_reduces, gathers, concatenations):
    """Layouts of the results, all-reduces and gathers (each device receiving the n - 1
    others' values) and concatenations per device (gathers, or the user's own) as the rules
    say, on 2 devices."""
    n = 2
    ir, out_layouts = _partitioned(f, args, layouts, n)
    assert out_layouts == expected
    assert _count(ir, transfer_p) == (all_reduces + gathers) * n * (n - 1)
    assert _count(ir, P.concatenate_p) == concatenations * n


def test_sharding_constraint_changes_the_layout():
    """with_sharding_constraint inside a partitioned program: a replicated value cut into
    blocks (no transfers), a split one gathered (transfers and concatenations); a constraint
    on another mesh keeps the layout. Its cotangent is constrained too."""
    from pyree.sharding import Mesh, NamedSharding, P as Spec
    mesh = Mesh(np.array(pyree.devices()[:1] * 1), ("batch",))   # (stands for a 2-device mesh)
    rows, whole = NamedSharding(mesh, Spec("batch")), NamedSharding(mesh, Spec())
    other = NamedSharding(Mesh(np.array(pyree.devices()[:1]), ("other",)), Spec("other"))
    closed = pyree.make_ir(lambda x, v: (
        lax.with_sharding_constraint(jnp.broadcast_to(v, x.shape), rows) * x,
        lax.with_sharding_constraint(x * 2, whole),
        lax.with_sharding_constraint(x * 3, other)))(_X, _V)
    n = 2
    box = {}

    def program(x0, x1, v0, v1):
        box["outs"], box["layouts"] = partition.partition_eval(
            closed, [[x0, x1], [v0, v1]], [0, None], n, mesh, "batch")
        return [v for per_device in box["outs"] for v in per_device]

    half = ShapedArray((4, 3), np.dtype(np.float32))
    third = ShapedArray((3,), np.dtype(np.float32))
    ir = trace_to_ir(program, [half, half, third, third], top_level=False)
    assert box["layouts"] == [0, None, 0]
    assert _count(ir, transfer_p) == n * (n - 1) and _count(ir, P.concatenate_p) == n
    assert [get_aval(v).shape for v in box["outs"][0]] == [(4, 3), (4, 3)]
    # Its transpose: the cotangent constrained as the value is (the value itself is unused).
    from pyree.transpiler.programs.partition import sharding_constraint_p
    grad_ir = pyree.make_ir(pyree.grad(lambda x: lax.with_sharding_constraint(
        x * x, whole).sum()))(_X)
    assert _count(grad_ir, sharding_constraint_p) == 1


_ON_N_DEVICES = """
import numpy as np
import pyree
import pyree.numpy as jnp
from pyree import lax
from pyree._sharded_jit import PartitionedProgram
from pyree.runtime.executable import MultiDeviceExecutable
from pyree.sharding import NamedSharding, P
from pyree.tree_util import tree_leaves, tree_map
from test_sharded_jit import cnn_data, cnn_step, mlp_data, mlp_loss, sgd_step
from test_sharding import _check_blocks

n = len(pyree.devices())
mesh = pyree.make_mesh((n,), ("batch",))
rows, replicated = NamedSharding(mesh, P("batch")), NamedSharding(mesh, P())

# An SGD step on a batch split over the devices, parameters replicated: three steps, each
# taking the last one's results, equal three steps on one device.
step = pyree.jit(sgd_step)
params, x, y = mlp_data(8 * n)
ref = params
for _ in range(3):
    ref, ref_loss, ref_hidden = step(ref, x, y)
sharded = pyree.device_put(params, replicated)
xs, ys = pyree.device_put(x, rows), pyree.device_put(y, rows)
for _ in range(3):
    sharded, loss, hidden = step(sharded, xs, ys)
for got, want in zip(tree_leaves(sharded), tree_leaves(ref)):
    assert got.sharding == replicated, got.sharding
    assert got.sharding.spec == P(*[None] * got.ndim)   # (JAX 0.10.2's spec: P(None, None))
    _check_blocks(got, np.asarray(got))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=2e-6)
    for shard in got.addressable_shards:   # (every device's copy is the same)
        np.testing.assert_array_equal(np.asarray(shard.data), np.asarray(got))
assert loss.sharding == replicated and loss.shape == ()
np.testing.assert_allclose(float(loss), float(ref_loss), rtol=2e-5)
assert hidden.sharding == rows and hidden.sharding.spec == P("batch", None)
_check_blocks(hidden, np.asarray(hidden))
np.testing.assert_allclose(np.asarray(hidden), np.asarray(ref_hidden), rtol=2e-5, atol=2e-6)
# ... compiled as one IREE multi-device program over the mesh's devices, with five all-reduces
# (loss and four gradients) as transfers between the devices:
programs = [p for p in step._cache.values() if isinstance(p, PartitionedProgram)]
assert len(programs) == 1, programs
program = programs[0]
assert isinstance(program.executable, MultiDeviceExecutable)
assert program.executable.devices == tuple(pyree.devices())
text = program.lowered.text_without_locations
assert all(f"#hal.device.promise<@device_{i}>" in text for i in range(n))
assert text.count("flow.tensor.transfer") == 5 * n * (n - 1), text.count("flow.tensor.transfer")
# ... which jit's lower shows, and whose Compiled runs it:
lowered = step.lower(sharded, xs, ys)
assert lowered.as_text() == text
again, again_loss, _ = lowered.compile()(sharded, xs, ys)
np.testing.assert_array_equal(np.asarray(again_loss), np.asarray(step(sharded, xs, ys)[1]))
assert again_loss.sharding == replicated

# A CNN step (a convolution's forward, input and weight gradients) likewise:
cnn = pyree.jit(cnn_step)
cnn_params, images, labels_1h = cnn_data(4 * n)
want, want_loss = cnn(cnn_params, images, labels_1h)
got, got_loss = cnn(pyree.device_put(cnn_params, replicated), pyree.device_put(images, rows),
                    pyree.device_put(labels_1h, rows))
for g, w in zip(got, want):
    assert g.sharding == replicated
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-6)
np.testing.assert_allclose(float(got_loss), float(want_loss), rtol=2e-5)

# Integer labels (take_along_axis: a gather along a batching dimension, each device indexing
# its own rows; its transpose a scatter-add), a Python scalar learning rate:
def int_label_step(params, x, labels, lr):
    def loss(params):
        (w1, b1), (w2, b2) = params
        logp = pyree.nn.log_softmax(jnp.tanh(x @ w1 + b1) @ w2 + b2)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))
    return tree_map(lambda p, g: p - lr * g, params, pyree.grad(loss)(params))
labels = np.argmax(y, 1).astype(np.int32)
int_step = pyree.jit(int_label_step)
want = int_step(params, x, labels, 0.1)
got = int_step(params, xs, pyree.device_put(labels, rows), 0.1)
for g, w in zip(tree_leaves(got), tree_leaves(want)):
    assert g.sharding == replicated
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-6)

# Each rule's values (and those of operations that gather) against NumPy:
host = np.random.default_rng(1).normal(size=(4 * n, 3)).astype(np.float32)
v = np.array([0.5, -1.0, 2.0], np.float32)
w = np.arange(6.0, dtype=np.float32).reshape(2, 3)
x = pyree.device_put(host, rows)
cols = NamedSharding(mesh, P(None, "batch"))
@pyree.jit
def many(x, v, w):
    return dict(rowsum=(jnp.sin(x) * v).sum(1), colmax=x.max(0) + v, gram=x.T @ x,
                proj=x @ w.T, t=x.T * 2, flat=x.reshape(-1), cols=x[:, 1:],
                pad=jnp.pad(x, ((0, 0), (1, 2))), cat=jnp.concatenate([x, x], 1),
                argmax_rows=jnp.argmax(x, 1), tail=x[1:], sorted=jnp.sort(x, 0),
                argmax_batch=jnp.argmax(x, 0), mean=x.mean(), prod=jnp.prod(x, 0),
                any=(x > 1).any(0), all=(x > -3).all(0), min=x.min(),
                cond=lax.cond(x.sum() > 0, lambda: x * 2, lambda: x - 1),
                constrained=lax.with_sharding_constraint(x * 3, rows).sum(0))
out = many(x, pyree.device_put(v, replicated), w)
expected = dict(rowsum=((np.sin(host) * v).sum(1), rows), colmax=(host.max(0) + v, replicated),
                gram=(host.T @ host, replicated), proj=(host @ w.T, rows),
                t=(host.T * 2, cols), flat=(host.reshape(-1), rows), cols=(host[:, 1:], rows),
                pad=(np.pad(host, ((0, 0), (1, 2))), rows),
                cat=(np.concatenate([host, host], 1), rows),
                argmax_rows=(np.argmax(host, 1), rows), tail=(host[1:], replicated),
                sorted=(np.sort(host, 0), replicated),
                argmax_batch=(np.argmax(host, 0), replicated),
                mean=(host.mean(), replicated), prod=(np.prod(host, 0), replicated),
                any=((host > 1).any(0), replicated), all=((host > -3).all(0), replicated),
                min=(host.min(), replicated),
                cond=(host * 2 if host.sum() > 0 else host - 1, rows),
                constrained=((host * 3).sum(0), replicated))
for name, (value, sharding) in expected.items():
    assert out[name].sharding == sharding, (name, out[name].sharding)
    _check_blocks(out[name], np.asarray(out[name]))
    np.testing.assert_allclose(np.asarray(out[name]), value, rtol=1e-5, atol=1e-5, err_msg=name)

# with_sharding_constraint inside: a replicated value split into blocks, a split one
# gathered, a gradient through it.
@pyree.jit
def constrained(x, v):
    spread = lax.with_sharding_constraint(jnp.broadcast_to(v, x.shape), rows)
    return spread * x, lax.with_sharding_constraint(x * 2, replicated), pyree.grad(
        lambda x: (lax.with_sharding_constraint(x * x, replicated) * v).sum())(x)
spread, gathered, grad = constrained(x, pyree.device_put(v, replicated))
assert spread.sharding == rows and gathered.sharding == replicated and grad.sharding == rows
np.testing.assert_allclose(np.asarray(spread), host * v, rtol=1e-6)
np.testing.assert_allclose(np.asarray(gathered), host * 2, rtol=1e-6)
np.testing.assert_allclose(np.asarray(grad), 2 * host * v, rtol=1e-6)

# Loops and conditionals on split values: a training loop (fori_loop of SGD steps), a while
# loop carrying a split value, a scan over a split array's rows, a cond:
def train(params, X, Y):
    return lax.fori_loop(0, 3, lambda i, p: tree_map(
        lambda a, g: a - 0.1 * g, p, pyree.grad(mlp_loss)(p, X, Y)), params)
params, X, Y = mlp_data(8 * n)
looped = pyree.jit(train)
want = looped(params, X, Y)
got = looped(pyree.device_put(params, replicated), pyree.device_put(X, rows),
             pyree.device_put(Y, rows))
for g, w in zip(tree_leaves(got), tree_leaves(want)):
    assert g.sharding == replicated
    np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=2e-6)
@pyree.jit
def control(x):
    grown = lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2 + c[1].mean()),
                           (0, x))[1]
    total, ys = lax.scan(lambda c, r: (c + r.sum(), r * c), 0.0, x.T)
    picked = lax.cond(x.sum() > 0, lambda u: u * 2, lambda u: u - u.mean(), x)
    return grown, total, ys, picked
grown, total, ys, picked = control(x)
want = host.astype(np.float64)
for _ in range(3):
    want = want * 2 + want.mean()
np.testing.assert_allclose(np.asarray(grown), want, rtol=1e-5, atol=1e-5)
assert grown.sharding == rows and ys.sharding == cols and picked.sharding == rows
want_ys, c = [], 0.0
for r in host.T:
    want_ys.append(r * c)
    c = c + r.sum()
np.testing.assert_allclose(float(total), c, rtol=1e-5)
np.testing.assert_allclose(np.asarray(ys), np.stack(want_ys), rtol=1e-5, atol=1e-5)
np.testing.assert_allclose(np.asarray(picked), host * 2 if host.sum() > 0 else
                           host - host.mean(), rtol=1e-6)

# An ordinary array argument enters on its own device, wherever it is (one program per
# device it comes from):
scale = pyree.jit(lambda x, s: x * s)
for device in pyree.devices():
    got = scale(x, pyree.device_put(np.float32(3.0), device))
    np.testing.assert_array_equal(np.asarray(got), host * 3)

# A jit whose arguments are not split follows its sharding constraints:
follows = pyree.jit(lambda x: (lax.with_sharding_constraint(x, rows) * 2,
                               lax.with_sharding_constraint(x, rows).sum(0)))
doubled, summed = follows(host)
assert doubled.sharding == rows and summed.sharding == replicated
np.testing.assert_array_equal(np.asarray(doubled), host * 2)
np.testing.assert_allclose(np.asarray(summed), host.sum(0), rtol=1e-5)
assert any(isinstance(p, PartitionedProgram) for p in follows._cache.values())

# Split along the columns, contracted by the product:
u = np.linspace(-1, 1, 4 * n, dtype=np.float32)
got = pyree.jit(lambda xc, u: xc @ u)(pyree.device_put(host.T.copy(), cols), u)
assert got.sharding == replicated
np.testing.assert_allclose(np.asarray(got), host.T @ u, rtol=1e-5)

if n >= 4:
    # A 2-D mesh whose second axis holds all the devices: the computation follows it.
    line = pyree.make_mesh((1, n), ("a", "batch"))
    got = pyree.jit(lambda x: x * 2)(pyree.device_put(host, NamedSharding(line, P("batch"))))
    assert got.sharding == NamedSharding(line, P("batch"))
    np.testing.assert_array_equal(np.asarray(got), host * 2)
    # Split over two axes of more than one device: not followed; the whole is computed on the
    # mesh's first device, as an ordinary array.
    grid = pyree.make_mesh((2, n // 2), ("data", "model"))
    got = pyree.jit(lambda x: x.sum(0))(pyree.device_put(host, NamedSharding(grid, P("data"))))
    assert type(got) is pyree.runtime.array.Array and got.device == pyree.devices()[0]
    np.testing.assert_allclose(np.asarray(got), host.sum(0), rtol=1e-5)
print("ok")
"""


@pytest.mark.parametrize("count", [2, 4])
def test_jit_follows_named_sharding_on_several_cpu_devices(count, tmp_path):
    done = _run_on_devices(_ON_N_DEVICES, count, tmp_path, "test_sharded_jit_script", 900)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-4000:]
