"""Python control flow on traced values, under pyree.jit — code JAX rejects — next to the
jax.lax formulation that both accept.

    python examples/control_flow.py
"""
import numpy as np

import pyree as jax
import pyree.numpy as jnp
from pyree import lax
from pyree.transpiler import converted_source


# 1. JAX raises TracerBoolConversionError on `if x > 0` inside jit. pyree converts the `if`
#    into a structured conditional (stablehlo.if in the MLIR).
@jax.jit
def f(x):
    if x > 0:
        return 3.0 * x ** 2
    return 2.0 * x


def f_lax(x):
    return lax.cond(x > 0, lambda x: 3.0 * x ** 2, lambda x: 2.0 * x, x)


# 2. JAX raises ConcretizationTypeError on `while i < n` with a traced n. pyree converts the
#    loop into a structured while (stablehlo.while), carrying i and the accumulator.
@jax.jit
def g(x, n):
    i = 0
    while i < n:
        x = x + x
        i += 1
    return x


def g_lax(x, n):
    return lax.fori_loop(0, n, lambda i, x: x + x, x)


# 3. Loops with break, early return, x[i] = v updates, and `for row in matrix`.
@jax.jit
def first_row_over(m, limit):
    for i, row in enumerate(m):
        if row.sum() > limit:
            return i
    return -1


@jax.jit
def clip_negative_prefix(v):
    out = jnp.zeros_like(v)
    i = 0
    while i < v.shape[0]:
        if v[i] >= 0:
            break
        out[i] = -v[i]  # becomes out = out.at[i].set(-v[i])
        i += 1
    return out, i


# 4. print and assert on traced values work at every call.
@jax.jit
def checked_mean(x):
    m = x.mean()
    print("mean is", m)
    assert m < 100.0, "mean too large"
    return m


if __name__ == "__main__":
    for value in (-2.0, 3.0):
        print(f"f({value}) = {float(f(value)):g}   lax.cond version: {float(f_lax(value)):g}")
    for n in (0, 3, 5):
        print(f"g(1.0, {n}) = {float(g(1.0, n)):g}   lax.fori_loop version: "
              f"{float(jax.jit(g_lax)(1.0, n)):g}")
    m = jnp.asarray(np.arange(12.0).reshape(4, 3))
    print("first row with sum > 10:", int(first_row_over(m, 10.0)),
          "  with sum > 100:", int(first_row_over(m, 100.0)))
    out, i = clip_negative_prefix(jnp.asarray([-3.0, -1.0, 2.0, -5.0]))
    print("negated negative prefix:", out, "stopped at", int(i))
    checked_mean(jnp.arange(5.0))
    try:
        checked_mean(jnp.arange(5.0) * 1000)
    except AssertionError as err:
        print("AssertionError:", str(err).splitlines()[0])
    print("\nThe MLIR of g holds a structured loop:",
          "stablehlo.while" in jax.jit(g).lower(1.0, 3).as_text())
    print("\nWhat pyree runs for f:\n" + converted_source(f))
