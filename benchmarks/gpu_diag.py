"""Which small programs give other values on a GPU than on the CPU (issue 20): each case runs
once per configuration, in a process of its own per group (a lost CUDA device fails every later
call of its process), and the values are compared with the CPU's.

    python benchmarks/gpu_diag.py                  # on the GPU machine: cpu vs the cuda variants
    python benchmarks/gpu_diag.py --configs cpu    # a dry run here

A configuration is a name and environment variables (see CONFIGS): CUDA as pyree runs it, CUDA
without the caller-storage path (IREE's own allocations), CUDA compiled for sm_60, CUDA without
the barriers on strided slices (shapes.GPU_SLICE_BARRIERS).
"""
from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile

import numpy as np

GROUPS = ("slices", "scalar", "fft", "sort", "updates")
CONFIGS = {
    "cpu": {"PYREE_PLATFORM": "cpu"},
    "cpu-caller-storage": {"PYREE_PLATFORM": "cpu", "PYREE_CALLER_STORAGE_PLATFORMS": "cpu"},
    "cuda": {"PYREE_PLATFORM": "cuda"},
    "cuda-iree-alloc": {"PYREE_PLATFORM": "cuda", "PYREE_CALLER_STORAGE_PLATFORMS": ""},
    "cuda-sm60": {"PYREE_PLATFORM": "cuda", "PYREE_CUDA_TARGET": "sm_60"},
    "cuda-no-slice-barriers": {"PYREE_PLATFORM": "cuda", "PYREE_GPU_SLICE_BARRIERS": "0"},
}


def _cases():
    import pyree
    import pyree.numpy as jnp
    from pyree import lax
    rng = np.random.RandomState(1)
    x = rng.randn(4, 5).astype(np.float32)
    xs = rng.randn(3, 4, 5).astype(np.float32)
    i = np.array([0, 2, 2, -1], np.int32)
    idxs = np.array([[0, 1], [3, 3], [2, -1]], np.int32)
    c = (rng.randn(64) + 1j * rng.randn(64)).astype(np.complex64)
    a8 = np.array([5, 1, 5, 2, 9, 1], np.int32)
    jit = pyree.jit
    groups = {
        "slices": {  # gathers from slices, and other consumers of strided slices
            "jit x[i]": lambda: jit(lambda x: x[i])(x),
            "eager x[i]": lambda: jnp.asarray(x)[i],
            "jit x[i,1:4]": lambda: jit(lambda x: x[i, 1:4])(x),
            "eager x[i,1:4]": lambda: jnp.asarray(x)[i, 1:4],
            "jit x[:,i]": lambda: jit(lambda x: x[:, i])(x),
            "jit take_along_axis": lambda: jit(lambda x: jnp.take_along_axis(
                x, np.array([[0, 4, 4]] * 4), axis=1))(x),
            "jit vmap x[i,1:3]": lambda: jit(pyree.vmap(lambda x, i: x[i, 1:3]))(xs, idxs),
            "jit vmap x[:,i]": lambda: jit(pyree.vmap(lambda x, i: x[:, i]))(xs, idxs),
            "jit at add": lambda: jit(lambda x: x.at[i, 2].add(1.0))(x),
            "jit sin(x[i,1:4])": lambda: jit(lambda x: jnp.sin(x[i, 1:4]))(x),
            "jit x[1:3,1:4] @ w": lambda: jit(lambda x: x[1:3, 1:4] @ x[:3, :2])(x),
            "jit rev(x[:,1:4])": lambda: jit(lambda x: x[:, 1:4][:, ::-1] * 2)(x),
            "jit x[:,1:4].T": lambda: jit(lambda x: x[:, 1:4].T * 2)(x),
            "jit irfft 128": lambda: jit(lambda z: jnp.fft.irfft(z, 128))(
                np.resize(c, (4, 100))),
            "jit hfft 30": lambda: jit(lambda z: jnp.fft.hfft(z, 30))(np.resize(c, (4, 100))),
            "jit dynamic_slice": lambda: jit(lambda x, s: lax.dynamic_slice(x, (s, 1), (2, 3)))(
                x, np.int32(1)),
        },
        "scalar": {
            "eager sinh 0-d": lambda: jnp.sinh(np.float32(0.9)),
            "eager hypot 0-d": lambda: jnp.hypot(np.float32(0.9), np.float32(2.0)),
            "eager arcsin 0-d": lambda: jnp.arcsin(np.float32(0.4)),
            "eager add 0-d": lambda: jnp.add(np.float32(0.4), np.float32(3.0)),
            "eager exp2 (3,)": lambda: jnp.exp2(np.float32([0.5, 1, 2])),
            "eager hypot (1,)x()": lambda: jnp.hypot(np.float32([0.9]), np.float32(2.0)),
            "eager logaddexp (3,)x(1,)": lambda: jnp.logaddexp(np.float32([0.9, 1, 2]),
                                                                np.float32([2.0])),
            "jit sin 0-d": lambda: jit(jnp.sin)(np.float32(0.5)),
            "eager sum": lambda: jnp.sum(jnp.asarray(x)),
            "eager 0-d chain x40": lambda: _eager_chain(jnp),
            "eager tiny": lambda: jnp.sin(np.float32([1e-45, -1e-45, 1e-38])),
        },
        "fft": {
            f"fft {n}": (lambda n=n: jnp.fft.fft(c[:n])) for n in (2, 4, 8, 16, 64)
        } | {
            "fft 128": lambda: jnp.fft.fft(np.tile(c, 2)),
            "fft 1000": lambda: jnp.fft.fft(np.resize(c, 1000)),
            "rfft 16": lambda: jnp.fft.rfft(c.real[:16]),
            "fft2 8x8": lambda: jnp.fft.fft2(c.reshape(8, 8)),
            "jit fft 16": lambda: jit(jnp.fft.fft)(c[:16]),
            "dot 8x8 highest": lambda: jnp.dot(c.real.reshape(8, 8), c.imag.reshape(8, 8),
                                               precision="highest"),
            "dot_general batched": lambda: jit(lambda a, b: jnp.einsum(
                "bij,bjk->bik", a, b, precision="highest"))(xs, xs.transpose(0, 2, 1)),
            "transpose 3d": lambda: jit(lambda a: a.transpose(2, 0, 1) * 2)(xs),
        },
        "sort": {
            "eager sort": lambda: jnp.sort(a8),
            "eager argsort": lambda: jnp.argsort(a8),
            "jit sort": lambda: jit(jnp.sort)(a8),
            "eager unique": lambda: jnp.unique(a8, return_index=True, return_inverse=True),
            "eager searchsorted": lambda: jnp.searchsorted(np.array([1, 2, 5, 9], np.int32),
                                                           a8),
            "jit searchsorted": lambda: jit(jnp.searchsorted)(np.array([1, 2, 5, 9], np.int32),
                                                              a8),
            "eager intersect1d": lambda: jnp.intersect1d(a8, np.array([2, 7, 0, 5], np.int32),
                                                         return_indices=True),
            "sort 5000": lambda: jnp.sort(rng.randn(5000).astype(np.float32)),
            "eager sort bool,int,int 2 keys": lambda: lax.sort(
                (a8 > 2, a8, np.arange(6, dtype=np.int32)), num_keys=2),
            "eager sort int,int,int 2 keys": lambda: lax.sort(
                (a8 % 2, a8, np.arange(6, dtype=np.int32)), num_keys=2),
            "eager sort bool,int 1 key": lambda: lax.sort((a8 > 2, a8), num_keys=1),
        },
        "updates": {
            "jit dus": lambda: jit(lambda x, u, s: lax.dynamic_update_slice(x, u, (s,)))(
                np.arange(10, dtype=np.float32), np.ones(4, np.float32), np.int32(3)),
            "eager dus": lambda: lax.dynamic_update_slice(
                jnp.arange(10.0), jnp.ones(4), (np.int32(3),)),
            "eager dus 0-d": lambda: lax.dynamic_update_slice(
                jnp.asarray(np.float32(1)), jnp.asarray(np.float32(2)), ()),
            "eager at set": lambda: jnp.arange(6.0).at[np.array([1, 3])].set(-1.0),
            "eager at set scalar idx": lambda: jnp.arange(6.0).at[2].set(-1.0),
            "eager dus empty": lambda: lax.dynamic_update_slice(
                jnp.arange(10.0), jnp.ones(0), (np.int32(5),)),
        },
    }
    return groups


def _eager_chain(jnp):
    """tests/test_numpy_math.py's test_broadcasting_eager on 0-d operands, 40 times: on CUDA
    one read gave 3e-45 (the bits of 2) for sinh, exp2 or arcsin of a 0-d array."""
    out = []
    for k in range(40):
        a, b = np.float32(0.05 * k - 1), np.float32(0.3 - 0.02 * k)
        for name in ("hypot", "logaddexp", "fmax", "heaviside"):
            out.append(np.asarray(getattr(jnp, name)(a, b), np.float32))
        out.append(np.asarray(jnp.isclose(a, b), np.float32))
        for name in ("sinh", "exp2", "signbit", "arcsin"):
            out.append(np.asarray(getattr(jnp, name)(a), np.float32))
    return np.array(out)


def _run_group(group: str, out: str) -> None:
    import pyree
    cases = _cases()[group]
    results = {}
    for name, case in cases.items():
        try:
            value = pyree.tree_util.tree_map(np.asarray, case())
            results[name] = ("ok", value)
        except Exception as e:   # recorded, compared below
            results[name] = ("error", f"{type(e).__name__}: {str(e)[:300]}")
    with open(out, "wb") as f:
        pickle.dump(results, f)


def _differs(a, b) -> str:
    import pyree
    la, lb = pyree.tree_util.tree_leaves(a), pyree.tree_util.tree_leaves(b)
    if len(la) != len(lb):
        return "structure"
    for u, v in zip(la, lb):
        u, v = np.asarray(u), np.asarray(v)
        if u.shape != v.shape or u.dtype != v.dtype:
            return f"shape/dtype {u.shape}{u.dtype} vs {v.shape}{v.dtype}"
        if u.dtype.kind in "fc":
            scale = max(np.abs(v).max(initial=0), 1e-30)
            err = np.abs(u - v).max(initial=0) / scale
            if not err <= 1e-5:
                return f"rel {err:.2e}: {u.ravel()[:6]} vs {v.ravel()[:6]}"
        elif not np.array_equal(u, v):
            return f"{u.ravel()[:8]} vs {v.ravel()[:8]}"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--group", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.group:
        return _run_group(args.group, args.out)
    configs = args.configs.split(",")
    tmp = tempfile.mkdtemp()
    procs = {}
    for config in configs:
        for group in GROUPS:
            out = os.path.join(tmp, f"{config}-{group}.pkl")
            env = dict(os.environ, **CONFIGS[config])
            procs[config, group] = (subprocess.Popen(
                [sys.executable, __file__, "--group", group, "--out", out], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True), out)
    results = {}
    for (config, group), (proc, out) in procs.items():
        text = proc.communicate(timeout=300)[0]
        try:
            with open(out, "rb") as f:
                results.setdefault(config, {}).update(pickle.load(f))
        except OSError:
            print(f"{config} {group}: process failed:\n{text[-1500:]}")
    base = results.get("cpu", {})
    for config in configs:
        if config == "cpu":
            continue
        print(f"== {config}")
        for name, (status, value) in results.get(config, {}).items():
            ref = base.get(name)
            if status == "error":
                print(f"  {name}: {value}")
            elif ref is None or ref[0] == "error":
                print(f"  {name}: cpu failed: {ref}")
            else:
                d = _differs(value, ref[1])
                print(f"  {name}: {'DIFFERS ' + d if d else 'same'}")
    for name, (status, value) in base.items():
        if status == "error":
            print(f"cpu {name}: {value}")


if __name__ == "__main__":
    main()
