"""Rotated while loops (transpiler/families/loop_rotation.py): the condition is tested before the
loop and at the end of the body; values, trip counts and nesting are as written."""
import re

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import lax

pytestmark = pytest.mark.vulkan_subset


def newton_sqrt(a):
    def cond(state):
        x, previous = state
        return jnp.max(jnp.abs(x - previous)) > 1e-6 * jnp.max(x)
    return lax.while_loop(cond, lambda s: (0.5 * (s[0] + a / s[0]), s[0]), (a, a + 1.0))[0]


def test_a_carry_only_the_condition_read_is_dropped():
    a = np.random.RandomState(0).uniform(1, 100, 1000).astype(np.float32)
    f = pyree.jit(newton_sqrt)
    np.testing.assert_allclose(np.asarray(f(a)), np.sqrt(a), rtol=1e-6)
    text = f.lower(a).as_text()
    loop = next(line for line in text.splitlines() if "stablehlo.while(" in line)
    # x and the carried test; the previous iterate is gone.
    assert len(re.findall(r"%iterArg\w* =", loop)) == 2, loop


@pytest.mark.parametrize("start", [0, 3, 7, 10])
def test_trip_counts_and_a_loop_that_never_runs(start):
    def count(n, x):
        return lax.while_loop(lambda s: s[0] < 7, lambda s: (s[0] + 1, s[1] * 2.0, s[2] + 1),
                              (n, x, 0))
    n, x, trips = pyree.jit(count)(start, np.float32(1.5))
    want = max(7 - start, 0)
    assert (int(n), int(trips)) == (max(start, 7), want)
    assert float(x) == 1.5 * 2.0 ** want


def test_nested_loops_in_scans_branches_and_under_vmap():
    def inner(x):
        return lax.while_loop(lambda v: jnp.sum(v) < 100.0, lambda v: v * 1.5 + 1.0, x)

    def f(xs, flag):
        total, ys = lax.scan(lambda c, x: (c + inner(x).sum(), inner(x)), 0.0, xs)
        branch = lax.cond(flag, lambda: inner(xs[0]), lambda: xs[0])
        return total, ys, branch

    def ref_inner(x):
        x = np.asarray(x, np.float32)
        while x.sum() < 100.0:
            x = (x * np.float32(1.5) + np.float32(1.0)).astype(np.float32)
        return x

    xs = np.random.RandomState(1).uniform(0.1, 3.0, (4, 3)).astype(np.float32)
    total, ys, branch = pyree.jit(f)(xs, True)
    want = np.stack([ref_inner(x) for x in xs])
    np.testing.assert_allclose(np.asarray(ys), want, rtol=1e-6)
    np.testing.assert_allclose(float(total), want.sum(), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(branch), ref_inner(xs[0]), rtol=1e-6)
    batched = pyree.jit(pyree.vmap(inner))(xs)
    np.testing.assert_allclose(np.asarray(batched), want, rtol=1e-6)
