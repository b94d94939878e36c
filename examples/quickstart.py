"""The first things a JAX user does, with pyree.

    python examples/quickstart.py
"""
import time

import numpy as np

import pyree as jax  # pyree speaks JAX's API
import pyree.numpy as jnp

# NumPy-like arrays, computed by IREE-compiled code on the CPU.
x = jnp.linspace(0.0, 2.0 * jnp.pi, 8)
print("x                 =", x)
print("sin(x)^2 + cos(x)^2 =", jnp.sin(x) ** 2 + jnp.cos(x) ** 2)

# Arrays are immutable: updates make new arrays.
y = jnp.zeros(5)
try:
    y[0] = 1.0
except TypeError as err:
    print("y[0] = 1.0  ->  TypeError:", str(err).split(".")[0])
y2 = y.at[0].set(1.0).at[2:].add(10.0)
print("y.at[0].set(1.0).at[2:].add(10.0) =", y2, " (y is still", y, ")")


# jit: traced once per input signature, lowered to MLIR, compiled by IREE, cached.
@jax.jit
def normalize(X):
    return (X - X.mean(0)) / X.std(0)


X = np.random.RandomState(0).randn(10000, 10).astype(np.float32)
start = time.perf_counter()
Z = normalize(X).block_until_ready()
first = time.perf_counter() - start
start = time.perf_counter()
for _ in range(100):
    Z = normalize(X)
Z.block_until_ready()
later = (time.perf_counter() - start) / 100
print(f"normalize: first call {first * 1e3:.1f} ms (trace + compile or disk cache), "
      f"then {later * 1e6:.0f} us per call")
print("column means ~0:", np.allclose(np.asarray(Z.mean(0)), 0, atol=1e-5),
      " column stds ~1:", np.allclose(np.asarray(Z.std(0)), 1, atol=1e-4))
print(jax.make_ir(normalize)(X))


# static_argnums: Python values that shape the computation are compiled in.
def power_sum(x, n):
    total = jnp.zeros_like(x)
    for k in range(n):  # a Python loop over a static n: unrolled at trace time
        total = total + x ** k
    return total


power_sum_jit = jax.jit(power_sum, static_argnums=1)
v = jnp.arange(4.0)
print("power_sum(v, 3) =", power_sum_jit(v, 3), "  power_sum(v, 5) =", power_sum_jit(v, 5))
