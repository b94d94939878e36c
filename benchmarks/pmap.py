"""pmap, pyree against JAX: a data-parallel MLP training step over two CPU devices.

    python benchmarks/pmap.py               # these benchmarks alone (sets up 2 CPU devices)

* pmap'd SGD step: the 784-512-10 MLP of benchmarks/ad.py, batch 128 split over 2 devices
  (64 examples each); each device takes the gradient of its shard, ``lax.pmean`` averages the
  gradients over the devices, and every device applies the same update. Parameters go in
  replicated (``in_axes=None``) and come out replicated (``out_axes=None``).
* The same step as one jitted program on one device, for reference.
* The same step jitted over a batch split by ``NamedSharding(mesh, P("batch"))`` (parameters
  replicated with ``P()``): the computation follows the sharding (JAX's SPMD data
  parallelism; pyree partitions the whole-array program, transpiler/programs/partition.py).

Both libraries get two CPU devices from their own option, set before either creates a device:
``PYREE_NUM_CPU_DEVICES=2`` and ``XLA_FLAGS=--xla_force_host_platform_device_count=2``. On a
machine with 2 cores each device's work gets about one core. Measured as in run.py
(``compare``: warm-up, contestants interleaved over rounds, median), waiting for the result.
"""
from __future__ import annotations

import os
import sys

# Before pyree or JAX create any device.
os.environ.setdefault("PYREE_NUM_CPU_DEVICES", "2")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=2").strip()

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ad import (LEARNING_RATE, check_same_results, make_mlp_loss, make_mlp_step,  # noqa: E402
                mlp_inputs)
from run import compare, jax, run_alone  # noqa: E402  (jax: None if not installed)


if jax is not None:
    import jax.nn  # noqa: E402

DEVICES = 2


def _libraries() -> list:
    import pyree.nn
    import pyree.numpy
    libs = [("pyree", pyree, pyree.nn, pyree.numpy, pyree.lax)]
    if jax is not None:
        libs.append(("jax", jax, jax.nn, jax.numpy, jax.lax))
    return libs


def make_pmap_step(lib, nn, jnp, lax):
    loss_fn = make_mlp_loss(nn, jnp)

    def step(params, x, labels):
        loss, grads = lib.value_and_grad(loss_fn)(params, x, labels)
        grads = lax.pmean(grads, "batch")
        new_params = lib.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
        return new_params, lax.pmean(loss, "batch")

    return lib.pmap(step, axis_name="batch", in_axes=(None, 0, 0), out_axes=None)


def sharded_inputs():
    """The MLP's parameters, and its batch split into one shard per device."""
    params, x, labels = mlp_inputs()
    return (params, x.reshape(DEVICES, -1, x.shape[-1]), labels.reshape(DEVICES, -1))


def bench_pmap_step(rounds: int) -> dict:
    params, xs, labels = sharded_inputs()
    contestants, results = {}, {}
    for name, lib, nn, jnp, lax in _libraries():
        if len(lib.devices()) < DEVICES:
            raise RuntimeError(f"{name} has {len(lib.devices())} CPU device(s), not {DEVICES}: "
                               f"set the device count before importing it")
        step = make_pmap_step(lib, nn, jnp, lax)
        contestants[name] = (lambda step=step, lib=lib:
                             lib.block_until_ready(step(params, xs, labels)))
        results[name] = step(params, xs, labels)
    check_same_results(results)
    return compare(contestants, rounds)


def bench_sharded_jit_step(rounds: int) -> dict:
    params, x, labels = mlp_inputs()
    contestants, results = {}, {}
    for name, lib, nn, jnp, _ in _libraries():
        mesh = lib.make_mesh((DEVICES,), ("batch",))
        rows = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec("batch"))
        replicated = lib.sharding.NamedSharding(mesh, lib.sharding.PartitionSpec())
        args = (lib.device_put(params, replicated), lib.device_put(x, rows),
                lib.device_put(labels, rows))
        step = make_mlp_step(lib, nn, jnp)
        contestants[name] = (lambda step=step, args=args, lib=lib:
                             lib.block_until_ready(step(*args)))
        results[name] = step(*args)
    check_same_results(results)
    return compare(contestants, rounds)


def benchmarks(rounds: int) -> list:
    """(name, run, bar) rows in run.py's format."""
    return [(f"pmap MLP 784-512-10 SGD step, batch 128 over {DEVICES} CPU devices",
             lambda: bench_pmap_step(rounds), 1.3),
            (f"jit over NamedSharding, same step, {DEVICES} CPU devices",
             lambda: bench_sharded_jit_step(rounds), 1.3)]


if __name__ == "__main__":
    run_alone(benchmarks, __doc__.splitlines()[0])
