"""Triangular solves by substitution (a while loop over columns) on the default device, in
float32 and float64, eagerly and jitted, against NumPy (issue 20: NaN in float64 on CUDA)."""
import numpy as np

import pyree
pyree.config.update("enable_x64", True)
import pyree.numpy as jnp                 # noqa: E402
from pyree.scipy import linalg            # noqa: E402

rng = np.random.default_rng(0)
for n in (3, 8, 32):
    t = np.tril(rng.normal(size=(n, n))) + 4 * np.eye(n)
    b = rng.normal(size=(n,))
    want = np.linalg.solve(t, b)
    for dtype in (np.float32, np.float64):
        for mode, wrap in (("eager", lambda f: f), ("jit", pyree.jit)):
            # (trans=1 is cho_solve's second solve: the GP's float64 NaN, H200 2026-11-27.)
            for lower, trans in ((True, 0), (False, 0), (True, 1)):
                tt = t if lower else t.T
                got = np.asarray(wrap(lambda a, v: linalg.solve_triangular(
                    a, v, lower=lower, trans=trans))(tt.astype(dtype), b.astype(dtype)),
                    np.float64)
                ref = np.linalg.solve(tt.T if trans else tt, b)
                print(f"n={n:2d} {np.dtype(dtype).name} {mode:5s} lower={lower!s:5s} trans={trans} "
                      f"nan={np.isnan(got).any()!s:5s} err={np.nanmax(np.abs(got - ref)):.2e}",
                      flush=True)
x = jnp.arange(6.0, dtype=jnp.float64).reshape(3, 2)
k = jnp.int32(1)
print("column f64", np.asarray(pyree.jit(lambda x, k: x[:, k])(x, k)), "row",
      np.asarray(pyree.jit(lambda x, k: x[k])(x, k)), flush=True)
