"""Data-parallel training of the digits MLP of examples/train_mlp.py, two ways:

* over N devices of one process with ``pyree.pmap`` (default: 2 CPU devices): each device takes
  the gradient of its slice of the batch, ``lax.pmean`` averages the gradients over the
  devices, and every device applies the same update; one IREE multi-device program a step.
* over several processes with MPI (``--mpi``): each process takes the gradient of its slice of
  the batch, ``pyree.distributed.all_reduce`` averages the gradients across the processes, and
  each applies the same update, so the parameters stay bit-identical in every process (checked
  at the end). Any MPI launcher starts it, on one machine or several.

    pip install -e '.[examples]'                   # scikit-learn: the digits data
    python examples/data_parallel.py               # pmap over 2 CPU devices
    python examples/data_parallel.py --devices 4   # over 4 (they must divide the batch, 32)
    pip install -e '.[examples,mpi]'               # mpi4py and MPICH
    mpirun -n 2 python examples/data_parallel.py --mpi

Same data, initialisation, batches and learning rate as train_mlp.py: the averaged gradient of
the slices is the gradient of the whole batch's mean loss, so both runs follow the
single-device run up to float rounding and reach its accuracy (97.2% test accuracy after 15
epochs; each run also trains the single-device model and prints both).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable, Optional

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_mlp import (BATCH, EPOCHS, HIDDEN, LEARNING_RATE, TARGET_TEST_ACCURACY,  # noqa: E402
                       accuracy, init_params, load_data, loss_fn, update)

import pyree as jax  # noqa: E402
from pyree import lax  # noqa: E402


def make_pmap_step() -> Callable:
    """One SGD step over the devices: batch slices in (axis 0), parameters replicated."""
    def step(params, x, labels):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, labels)
        grads = lax.pmean(grads, "batch")       # the whole batch's gradient, on every device
        new_params = jax.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)
        return new_params, lax.pmean(loss, "batch")

    return jax.pmap(step, axis_name="batch", in_axes=(None, 0, 0), out_axes=None)


@jax.jit
def slice_loss_and_grads(params, x, labels):
    return jax.value_and_grad(loss_fn)(params, x, labels)


@jax.jit
def apply_grads(params, grads):
    return jax.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def make_mpi_step() -> Callable:
    """One SGD step of this process: the gradient of its slice of the batch, averaged with the
    other processes' (the same bytes arrive in every process), then the update."""
    import pyree.distributed
    rank, count = jax.process_index(), jax.process_count()

    def step(params, x, labels):
        width = len(labels) // count
        mine = slice(rank * width, (rank + 1) * width)
        loss, grads = slice_loss_and_grads(params, x[mine], labels[mine])
        loss, grads = pyree.distributed.all_reduce((loss, grads), op="mean")
        return apply_grads(params, grads), loss

    return step


def make_single_step() -> Callable:
    """train_mlp.py's step: the whole batch on one device."""
    return update


def train(step: Callable, epochs: int = EPOCHS, max_steps: Optional[int] = None,
          verbose: bool = True, label: str = ""):
    """train_mlp.py's loop (same data, initialisation and batch order) with ``step`` taking the
    batch; stops after ``max_steps`` steps if given. Returns (params, test accuracy)."""
    x_train, y_train, x_test, y_test = load_data()
    params = jax.device_put(init_params([x_train.shape[1], HIDDEN, 10]))
    rng = np.random.RandomState(1)
    steps = len(y_train) // BATCH
    done, test_acc = 0, 0.0
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        order = rng.permutation(len(y_train))
        losses = []
        for s in range(steps):
            if max_steps is not None and done == max_steps:
                break
            idx = order[s * BATCH:(s + 1) * BATCH]
            params, loss = step(params, x_train[idx], y_train[idx])
            losses.append(loss)
            done += 1
        test_acc = float(accuracy(params, x_test, y_test))
        if verbose:
            print(f"{label}epoch {epoch:2d}  loss {np.mean([float(v) for v in losses]):.4f}  "
                  f"test acc {test_acc:6.2%}  {(time.perf_counter() - start) * 1e3:7.1f} ms",
                  flush=True)
    return params, test_acc


def max_difference(a, b) -> float:
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
               for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)))


def check_accuracy(acc: float, single_acc: float, epochs: int) -> None:
    """The data-parallel run reached the single-device run's test accuracy (within 1%: 3 of
    the 360 test images), and after all of train_mlp.py's epochs the target accuracy."""
    assert abs(acc - single_acc) <= 0.01, "the data-parallel accuracy differs from one device's"
    if epochs >= EPOCHS:
        assert acc >= TARGET_TEST_ACCURACY, "the data-parallel run missed the target accuracy"


def run_pmap(devices: int, epochs: int) -> None:
    if BATCH % devices:
        raise SystemExit(f"--devices {devices} must divide the batch of {BATCH}")
    jax.config.update("jax_num_cpu_devices", devices)   # before pyree creates its devices
    pmap_step = make_pmap_step()

    def step(params, x, labels):   # the batch as one slice per device
        return pmap_step(params, x.reshape(devices, -1, x.shape[-1]), labels.reshape(devices, -1))

    print(f"pmap over {devices} CPU devices, {BATCH // devices} examples each a step")
    params, acc = train(step, epochs)
    single_params, single_acc = train(make_single_step(), epochs, verbose=False)
    print(f"final test accuracy: pmap over {devices} devices {acc:.2%}, one device "
          f"{single_acc:.2%}; largest parameter difference "
          f"{max_difference(params, single_params):.2e}")
    check_accuracy(acc, single_acc, epochs)


def run_mpi(epochs: int) -> None:
    import pyree.distributed
    pyree.distributed.initialize()
    rank, count = jax.process_index(), jax.process_count()
    if BATCH % count:
        raise SystemExit(f"{count} processes must divide the batch of {BATCH}")
    if rank == 0:
        print(f"MPI: {count} processes, {BATCH // count} examples each a step")
    params, acc = train(make_mpi_step(), epochs, verbose=rank == 0)
    # Every process must hold exactly the parameters of process 0.
    reference = pyree.distributed.broadcast_one_to_all(params)
    same = all(np.asarray(p).tobytes() == np.asarray(r).tobytes()
               for p, r in zip(jax.tree_util.tree_leaves(params),
                               jax.tree_util.tree_leaves(reference)))
    agree = pyree.distributed.all_reduce(np.array(int(same), np.int32), op="min")
    if rank == 0:
        single_params, single_acc = train(make_single_step(), epochs, verbose=False)
        print(f"final test accuracy: {count} processes {acc:.2%}, one process {single_acc:.2%}; "
              f"largest parameter difference {max_difference(params, single_params):.2e}; "
              f"parameters bit-identical in all {count} processes: {bool(agree)}")
        check_accuracy(acc, single_acc, epochs)
    assert agree, "the processes' parameters differ"
    pyree.distributed.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpi", action="store_true",
                        help="data parallel across the processes of an MPI launcher")
    parser.add_argument("--devices", type=int, default=2,
                        help="CPU devices for pmap (default 2; ignored with --mpi)")
    parser.add_argument("--epochs", type=int, default=EPOCHS)
    args = parser.parse_args()
    if args.mpi:
        run_mpi(args.epochs)
    else:
        run_pmap(args.devices, args.epochs)


if __name__ == "__main__":
    main()
