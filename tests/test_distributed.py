"""Data parallelism: examples/data_parallel.py's pmap step over 2 CPU devices against the
single-device step, and ``pyree.distributed`` across two MPI processes on this machine
(``mpirun -n 2``): both ranks end with bit-identical parameters, equal within float rounding to
one process training on the whole batches. Plus ``pyree.distributed``'s errors.

The MPI test needs mpi4py and an ``mpirun`` (the ``test`` and ``mpi`` extras install both, with
MPICH from PyPI); without them it skips, except under CI (CI=true), where it fails.
"""
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import pyree
import pyree.distributed

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
STEPS = 6   # SGD steps the multi-device and multi-process runs take (a few: each is checked)


def _reference_params(steps: int) -> list:
    """train_mlp.py's single-device training, ``steps`` steps, as NumPy leaves."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import data_parallel
    finally:
        sys.path.remove(str(EXAMPLES))
    params, _ = data_parallel.train(data_parallel.make_single_step(), epochs=1, max_steps=steps,
                                    verbose=False)
    return [np.asarray(p) for p in pyree.tree_util.tree_leaves(params)]


def _environment(**extra: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(EXAMPLES))
    env.pop("PYREE_NUM_CPU_DEVICES", None)
    env.update(extra)
    return env


_PMAP_DRIVER = """
import json, sys
import numpy as np
import pyree
import data_parallel as dp

assert len(pyree.devices()) == 2
pmap_step = dp.make_pmap_step()
def step(params, x, labels):
    return pmap_step(params, x.reshape(2, -1, x.shape[-1]), labels.reshape(2, -1))
params, acc = dp.train(step, epochs=1, max_steps=int(sys.argv[2]), verbose=False)
single, single_acc = dp.train(dp.make_single_step(), epochs=1, max_steps=int(sys.argv[2]),
                              verbose=False)
np.savez(sys.argv[1], *[np.asarray(p) for p in pyree.tree_util.tree_leaves(params)])
print(json.dumps({"acc": acc, "single_acc": single_acc}))
"""


def test_pmap_data_parallel_example_matches_one_device(tmp_path):
    """examples/data_parallel.py's pmap step over 2 CPU devices (half the batch each, gradients
    averaged with pmean) follows the single-device step of train_mlp.py: after a few steps the
    parameters agree to float rounding and the test accuracy is the same."""
    import json
    script = tmp_path / "pmap_driver.py"
    script.write_text(_PMAP_DRIVER)
    out = tmp_path / "pmap.npz"
    done = subprocess.run([sys.executable, str(script), str(out), str(STEPS)], capture_output=True,
                          text=True, timeout=600,
                          env=_environment(PYREE_NUM_CPU_DEVICES="2", PYREE_PLATFORM="cpu"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    accuracies = json.loads(done.stdout.strip().splitlines()[-1])
    assert accuracies["acc"] == accuracies["single_acc"] > 0.25, accuracies  # chance: 0.1
    with np.load(out) as saved:
        got = [saved[f"arr_{i}"] for i in range(len(saved.files))]
    want = _reference_params(STEPS)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


_MPI_DRIVER = """
import sys
import numpy as np
import pyree
import pyree.distributed as dist
from pyree.dtypes import bfloat16
import data_parallel as dp

dist.initialize(num_processes=2)
rank = pyree.process_index()
assert (rank, pyree.process_count(), pyree.process_indices()) == (rank, 2, [0, 1])

# all_reduce of a tree with several dtypes, against closed forms
tree = {"f": np.arange(3, dtype=np.float32) + rank, "i": np.full((2, 2), rank + 1, np.int32),
        "h": np.array([rank + 0.5], bfloat16), "x": pyree.device_put(np.float32(rank))}
total = dist.all_reduce(tree)
assert np.array_equal(total["f"], [1, 3, 5]) and total["f"].dtype == np.float32
assert np.array_equal(total["i"], np.full((2, 2), 3)) and total["i"].dtype == np.int32
assert float(total["h"][0]) == 2.0 and total["h"].dtype == bfloat16
assert isinstance(total["x"], pyree.Array) and float(total["x"]) == 1.0
assert np.array_equal(dist.all_reduce(tree["f"], op="mean"), [0.5, 1.5, 2.5])
assert np.array_equal(dist.all_reduce(tree["i"], op="max"), np.full((2, 2), 2))
assert np.array_equal(dist.broadcast_one_to_all(tree["i"], is_source=rank == 1), tree["i"] * 0 + 2)
try:
    dist.all_reduce(np.zeros(2 + rank, np.float32))
    raise SystemExit("a tree mismatched across processes was reduced")
except ValueError as e:
    assert "processes passed different trees" in str(e), e

# the example's MPI step: half the batch each, gradients averaged across the processes
params, acc = dp.train(dp.make_mpi_step(), epochs=1, max_steps=int(sys.argv[2]), verbose=False)
np.savez(f"{sys.argv[1]}.rank{rank}.npz",
         *[np.asarray(p) for p in pyree.tree_util.tree_leaves(params)])
dist.shutdown()
assert pyree.process_count() == 1
open(f"{sys.argv[1]}.rank{rank}.ok", "w").close()   # (the ranks' stdout lines may interleave)
"""


def _mpirun() -> str | None:
    here = os.path.join(os.path.dirname(sys.executable), "mpirun")  # the venv's (mpich wheel)
    return here if os.path.exists(here) else shutil.which("mpirun")


def test_two_mpi_processes_end_with_identical_parameters(tmp_path):
    """``mpirun -n 2``: each process takes the gradient of its half of each batch and
    ``pyree.distributed.all_reduce`` averages them; after a few steps both processes hold
    bit-identical parameters, equal (to float rounding) to one process training on the whole
    batches. The driver also checks all_reduce/broadcast_one_to_all against closed forms."""
    mpirun = _mpirun()
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        mpirun = None
    if mpirun is None:
        message = "needs mpi4py and mpirun (pip install '.[mpi]')"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the MPI test: {message}")
        pytest.skip(message)
    script = tmp_path / "mpi_driver.py"
    script.write_text(_MPI_DRIVER)
    prefix = tmp_path / "params"
    done = subprocess.run([mpirun, "-n", "2", sys.executable, str(script), str(prefix),
                           str(STEPS)], capture_output=True, text=True, timeout=600,
                          env=_environment(), stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert all(os.path.exists(f"{prefix}.rank{rank}.ok") for rank in (0, 1)), done.stdout
    ranks = []
    for rank in (0, 1):
        with np.load(f"{prefix}.rank{rank}.npz") as saved:
            ranks.append([saved[f"arr_{i}"] for i in range(len(saved.files))])
    for a, b in zip(*ranks):
        assert a.dtype == b.dtype == np.float32 and a.tobytes() == b.tobytes()
    for got, want in zip(ranks[0], _reference_params(STEPS)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_process_index_and_count_before_initialize():
    assert not pyree.distributed.is_initialized()
    assert (pyree.process_index(), pyree.process_count(), pyree.process_indices()) == (0, 1, [0])


def test_initialize_without_mpi4py_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)   # import mpi4py now raises ImportError
    with pytest.raises(RuntimeError, match=r"needs mpi4py and an MPI library(.|\n)*pip "
                                           r"install mpi4py mpich(.|\n)*test_distributed.py"):
        pyree.distributed.initialize()
    assert not pyree.distributed.is_initialized()


def test_distributed_errors_name_the_line():
    with pytest.raises(RuntimeError, match=r"initialize\(\) first(.|\n)*test_distributed.py"):
        pyree.distributed.all_reduce({"g": np.ones(3, np.float32)})
    with pytest.raises(RuntimeError, match="initialize"):
        pyree.distributed.broadcast_one_to_all(np.ones(3))
    with pytest.raises(ValueError, match=r"op must be one of(.|\n)*test_distributed.py"):
        pyree.distributed.all_reduce(np.ones(3), op="prod")
    with pytest.raises(NotImplementedError, match="CUDA_VISIBLE_DEVICES"):
        pyree.distributed.initialize(local_device_ids=[0])
    with pytest.raises(ValueError, match="cluster_detection_method"):
        pyree.distributed.initialize(cluster_detection_method="slurm")
    assert not pyree.distributed.is_initialized()


def test_initialize_without_an_mpi_library_says_so(tmp_path):
    """mpi4py present but its MPI library missing (here: pointed at a file that does not exist)
    gives a RuntimeError saying so, naming the line; in a subprocess, so that this process's
    mpi4py stays unloaded."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.skip("needs mpi4py")
    script = tmp_path / "no_libmpi.py"
    script.write_text("import pyree.distributed\npyree.distributed.initialize()\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, MPI4PY_LIBMPI=str(tmp_path / "no.so")))
    assert done.returncode == 1
    assert "mpi4py could not load an MPI library" in done.stderr, done.stderr[-2000:]
    assert "no_libmpi.py:2" in done.stderr, done.stderr[-2000:]


_FAILING_DRIVER = """
import numpy as np
import pyree
import pyree.distributed as dist

dist.initialize()
if pyree.process_index() == 1:
    raise ValueError("rank 1 fails before the collective")
dist.all_reduce(np.ones(3, np.float32))   # rank 0 would wait here for rank 1 forever
print("rank 0 was not aborted")
"""


def test_an_uncaught_exception_in_one_process_ends_all(tmp_path):
    """After initialize(), an uncaught exception in one process aborts the run (MPI_Abort)
    instead of leaving the other waiting in its collective: mpirun returns, non-zero, with the
    failing process's traceback."""
    mpirun = _mpirun()
    if mpirun is None:
        pytest.skip("needs mpirun")
    pytest.importorskip("mpi4py")
    script = tmp_path / "failing.py"
    script.write_text(_FAILING_DRIVER)
    done = subprocess.run([mpirun, "-n", "2", sys.executable, str(script)], capture_output=True,
                          text=True, timeout=120, env=_environment(), stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert "rank 1 fails before the collective" in done.stderr, done.stderr[-2000:]
    assert "was not aborted" not in done.stdout


def test_devices_open_in_an_mpi_launchers_environment(tmp_path):
    """With an MPI launcher's variables set (here PMI_SIZE, as MPICH's mpirun sets it), pyree
    still opens its device and computes: it hides them from IREE while creating the device,
    whose MPI channel provider otherwise failed to load ('MPI runtime library not available'),
    and puts them back."""
    script = tmp_path / "launcher_env.py"
    script.write_text("import os\nimport pyree.numpy as jnp\n"
                      "print(float(jnp.sum(jnp.arange(5.0))), os.environ['PMI_SIZE'])\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PMI_SIZE="2", PMI_RANK="0"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["10.0", "2"]
