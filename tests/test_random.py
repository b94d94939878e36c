"""pyree.random: known-answer vectors from JAX 0.10.2 (Threefry-2x32, partitionable layout,
generated once and pasted here: JAX is not needed), jit/vmap/grad behaviour, statistics, errors.
All draws use the raw key PRNGKey(7) unless said otherwise."""
import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import random

from conftest import ON_CPU

# ---- known answers: jax.random.<fn>(jax.random.PRNGKey(7), ...) in JAX 0.10.2 ----
PRNGKEY = {0: [0, 0], 42: [0, 42], -1: [0, 4294967295], 4294967301: [0, 5], 9223372036854775807: [0, 4294967295]}
SPLIT2 = [[3625411723, 1954958720], [195045567, 4062205631]]
SPLIT3 = [[3625411723, 1954958720], [195045567, 4062205631], [966301609, 1948237315]]
SPLIT22 = [[[3625411723, 1954958720], [195045567, 4062205631]], [[966301609, 1948237315], [276534068, 1641862660]]]
FOLD_IN = [3583082021, 1947592014]
FOLD_IN_BIG = [3807796315, 52626347]
BITS32 = [[2895194379, 4185947648, 1300703658], [1906787632, 3139134342, 2709822315]]
BITS8 = [11, 0, 170, 48, 134]
BITS16 = [10507, 32256, 10666, 17712, 25478]
UNIFORM = [0.6740899085998535, 0.9746168851852417, 0.3028435707092285, 0.4439585208892822, 0.7308865785598755, 0.6309295892715454, 0.44855034351348877, 0.4114811420440674]
UNIFORM_F16 = [0.16015625, 0.4921875, 0.162109375, 0.26953125, 0.388671875, 0.6064453125]
NORMAL = [0.4512351453304291, 1.9534509181976318, -0.5162394642829895, -0.14094029366970062, 0.6154966950416565, 0.3343164920806885, -0.12932467460632324, -0.2237364947795868]
RANDINT = [9, 2, 0, 7, 2, 6, 4, 4]
RANDINT_FULL = [752193311, 1400917350, -455323268, -325042195]
RANDINT_U8 = [31, 102, 124, 237, 222, 102]
RANDINT_I16 = [[799, 897, 400], [637, 802, 786]]
BERNOULLI = [False, False, False, False, False, False, False, False, True, True]
PERM10 = [9, 4, 2, 3, 5, 0, 7, 6, 1, 8]
PERM_AXIS1 = [[2, 3, 0, 1], [6, 7, 4, 5], [10, 11, 8, 9]]
PERM_INDEP = [[2, 3, 0, 1], [4, 5, 7, 6], [10, 9, 11, 8]]
PERM2000_HEAD = [1785, 5, 1002, 442, 880, 109, 1429, 1338]
CHOICE = [9, 2, 0, 7, 2]
CHOICE_NOREP = [9, 4, 2, 3, 5]
TYPED_SPLIT3_1 = [1946498123, 2217676430]
UNIFORM_RANGE = [2.729764223098755, 5.284243583679199, -0.4258296489715576, 0.7736474275588989, 3.212535858154297, 2.362901449203491]
UNIFORM_BF16 = [0.0390625, 0.0, 0.6640625, 0.1875, 0.5234375, 0.4140625]
NORMAL_F16 = [-0.99267578125, -0.0189666748046875, -0.984375, -0.61328125, -0.281982421875, 0.270751953125]
# jax.jit(lambda k: jax.random.normal(k, (1000, 1000)))(PRNGKey(7)): the sum of its bit
# patterns as uint32s, and its last three values
NORMAL_1M_SUM_BITS = 2130386308172754
NORMAL_1M_LAST = [1.89475417137146, -0.6314957737922668, -0.08248096704483032]

KEY = random.PRNGKey(7)


def eq(got, want, dtype):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), got.dtype
    np.testing.assert_array_equal(got, np.asarray(want, dtype=dtype))


@pytest.mark.parametrize("seed", sorted(PRNGKEY))
def test_prngkey_seeds(seed):
    eq(random.PRNGKey(seed), PRNGKEY[seed], np.uint32)


def test_prngkey_array_seeds():
    eq(random.PRNGKey(np.int32(-1)), [0, 2**32 - 1], np.uint32)
    eq(random.PRNGKey(jnp.asarray(42)), [0, 42], np.uint32)


def test_split_fold_in_bits():
    eq(KEY, [0, 7], np.uint32)
    eq(random.split(KEY), SPLIT2, np.uint32)
    eq(random.split(KEY, 3), SPLIT3, np.uint32)
    eq(random.split(KEY, (2, 2)), SPLIT22, np.uint32)
    eq(random.fold_in(KEY, 5), FOLD_IN, np.uint32)
    eq(random.fold_in(KEY, 2**31 + 3), FOLD_IN_BIG, np.uint32)
    eq(random.fold_in(KEY, jnp.asarray(5)), FOLD_IN, np.uint32)
    eq(random.bits(KEY, (2, 3)), BITS32, np.uint32)
    eq(random.bits(KEY, (5,), np.uint8), BITS8, np.uint8)
    eq(random.bits(KEY, (5,), "uint16"), BITS16, np.uint16)
    assert random.split(KEY, 0).shape == (0, 2)


def test_split_fold_in_trees():
    # split's i-th key does not depend on num; fold_in then split composes per key.
    a, b = random.split(KEY)
    eq(random.split(KEY, 5)[:2], np.stack([a, b]), np.uint32)
    eq(random.split(random.fold_in(a, 5))[1],
       random.split(random.fold_in(random.split(KEY, 3)[0], 5))[1], np.uint32)
    children = [random.fold_in(KEY, i) for i in range(4)]
    assert len({tuple(np.asarray(c).tolist()) for c in children}) == 4


def test_samplers_known_answers():
    eq(random.uniform(KEY, (8,)), UNIFORM, np.float32)
    eq(random.uniform(KEY, (6,), jnp.float16).astype(np.float32), UNIFORM_F16, np.float32)
    eq(random.randint(KEY, (8,), 0, 10), RANDINT, np.int32)
    eq(random.randint(KEY, (4,), -2**31, 2**31 - 1), RANDINT_FULL, np.int32)
    eq(random.randint(KEY, (6,), 0, 256, jnp.uint8), RANDINT_U8, np.uint8)
    eq(random.randint(KEY, (2, 3), np.array([0, 5, 100]), 1000, jnp.int16), RANDINT_I16,
       np.int16)
    eq(random.randint(KEY, (3,), 5, 3), [5, 5, 5], np.int32)
    eq(random.bernoulli(KEY, 0.3, (10,)), BERNOULLI, np.bool_)
    eq(random.permutation(KEY, 10), PERM10, np.int32)
    x = np.arange(12).reshape(3, 4)
    eq(random.permutation(KEY, x, axis=1), PERM_AXIS1, np.int32)
    eq(random.permutation(KEY, x, axis=-1, independent=True), PERM_INDEP, np.int32)
    eq(random.choice(KEY, 10, (5,)), CHOICE, np.int32)
    eq(random.choice(KEY, 10, (5,), replace=False), CHOICE_NOREP, np.int32)


def test_permutation_two_rounds():
    # More than ~1600 elements take two sort rounds.
    p = np.asarray(random.permutation(KEY, 2000))
    eq(p[:8], PERM2000_HEAD, np.int32)
    np.testing.assert_array_equal(np.sort(p), np.arange(2000))


def test_normal_bit_for_bit():
    # erf_inv rounds as XLA's CPU code does (transpiler/backend/float32_math.py), eagerly and in
    # jit.
    eq(random.normal(KEY, (8,)), NORMAL, np.float32)
    eq(pyree.jit(lambda k: random.normal(k, (8,)))(KEY), NORMAL, np.float32)
    eq(random.normal(KEY, (6,), jnp.float16).astype(np.float32), NORMAL_F16, np.float32)
    big = np.asarray(pyree.jit(lambda k: random.normal(k, (1000, 1000)))(KEY))
    if ON_CPU:
        assert int(big.view(np.uint32).astype(np.uint64).sum()) == NORMAL_1M_SUM_BITS
        eq(big[-1, -3:], NORMAL_1M_LAST, np.float32)
    else:  # a GPU's log rounds otherwise for some inputs (XLA's GPU code differs from its CPU's)
        np.testing.assert_allclose(big[-1, -3:], NORMAL_1M_LAST, rtol=1e-6)
        assert abs(big.mean()) < 5e-3 and abs(big.std() - 1) < 5e-3


def test_uniform_ranges_and_bfloat16_bit_for_bit():
    # unit * (maxval - minval) + minval is one fused multiply-add, as in XLA
    for got in (random.uniform(KEY, (6,), minval=-3.0, maxval=5.5),
                pyree.jit(lambda k: random.uniform(k, (6,), minval=-3.0, maxval=5.5))(KEY)):
        eq(got, UNIFORM_RANGE, np.float32)
    # bfloat16 (7 mantissa bits) draws 8 random bits per number, as JAX does
    eq(random.uniform(KEY, (6,), jnp.bfloat16).astype(np.float32), UNIFORM_BF16, np.float32)


def test_typed_keys():
    k = random.key(3)
    assert k.shape == () and str(k.dtype) == "key<fry>"
    eq(random.key_data(k), [0, 3], np.uint32)
    ks = random.split(k, 3)
    assert isinstance(ks, random.PRNGKeyArray) and ks.shape == (3,) and len(ks) == 3
    eq(random.key_data(ks[1]), TYPED_SPLIT3_1, np.uint32)
    assert ks[1:].shape == (2,)
    assert "key<fry>" in repr(ks)
    w = random.wrap_key_data(random.PRNGKey(7))
    eq(random.uniform(w, (8,)), UNIFORM, np.float32)
    eq(random.key_data(random.fold_in(w, 5)), FOLD_IN, np.uint32)
    leaves = pyree.tree_util.tree_leaves({"k": ks})
    assert len(leaves) == 1 and leaves[0].shape == (3, 2)


def test_jit_equals_eager():
    def draws(k):
        a, b = random.split(k)
        return (random.uniform(a, (8,)), random.randint(b, (8,), 0, 10),
                random.normal(k, (8,)), random.permutation(k, 10), random.fold_in(k, 5))
    eager = draws(KEY)
    jitted = pyree.jit(draws)(KEY)
    for e, j in zip(eager, jitted):
        np.testing.assert_array_equal(np.asarray(e), np.asarray(j))
    eq(jitted[3], PERM10, np.int32)
    # typed keys pass through jit as arguments and results
    k2 = pyree.jit(lambda k: random.split(k, 2))(random.key(3))
    assert isinstance(k2, random.PRNGKeyArray) and k2.shape == (2,)


def test_vmap_over_keys_equals_loop():
    keys = random.split(KEY, 4)
    f = lambda k: (random.uniform(k, (3,)), random.randint(k, (2,), 0, 100), random.split(k))
    batched = pyree.vmap(f)(keys)
    for i in range(4):
        for b, l in zip(batched, f(keys[i])):
            np.testing.assert_array_equal(np.asarray(b)[i], np.asarray(l))
    typed = pyree.vmap(lambda k: random.uniform(k, (3,)))(random.wrap_key_data(keys))
    np.testing.assert_array_equal(np.asarray(typed), np.asarray(batched[0]))


def test_grad_through_reparameterised_samplers():
    eps = np.asarray(random.normal(KEY, (1000,)))
    u = np.asarray(random.uniform(KEY, (1000,)))
    loss = lambda mu, sigma: jnp.mean(mu + sigma * random.normal(KEY, (1000,)))
    g_mu, g_sigma = pyree.grad(loss, argnums=(0, 1))(1.0, 2.0)
    np.testing.assert_allclose(g_mu, 1.0, rtol=1e-4)
    np.testing.assert_allclose(g_sigma, eps.mean(), rtol=1e-4, atol=1e-6)
    g = pyree.grad(lambda lo: jnp.sum(random.uniform(KEY, (1000,), minval=lo, maxval=3.0)))(1.0)
    np.testing.assert_allclose(g, np.sum(1 - u), rtol=1e-4)


def test_statistics():
    x = np.asarray(random.normal(random.PRNGKey(0), (100_000,)), np.float64)
    assert abs(x.mean()) < 0.02 and abs(x.var() - 1) < 0.02
    u = np.asarray(random.uniform(random.PRNGKey(1), (100_000,)), np.float64)
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
    assert u.min() >= 0 and u.max() < 1
    r = np.asarray(random.randint(random.PRNGKey(2), (100_000,), 3, 8))
    assert r.min() == 3 and r.max() == 7
    np.testing.assert_allclose(np.bincount(r - 3) / r.size, 0.2, atol=0.01)
    b = np.asarray(random.bernoulli(random.PRNGKey(3), 0.3, (100_000,)))
    assert abs(b.mean() - 0.3) < 0.01


def test_errors():
    with pytest.raises(TypeError, match="single key"):
        random.split(random.split(KEY, 3))
    with pytest.raises(TypeError, match="uint32"):
        random.uniform(jnp.zeros(2, jnp.float32))
    with pytest.raises(ValueError, match="float dtype"):
        random.uniform(KEY, (2,), jnp.int32)
    with pytest.raises(TypeError, match="integer dtypes"):
        random.randint(KEY, (2,), 0, 3, jnp.float32)
    with pytest.raises(TypeError, match="floating"):
        random.bernoulli(KEY, jnp.asarray(1))
    with pytest.raises(TypeError, match="integer"):
        random.PRNGKey(1.5)
    with pytest.raises(TypeError, match="scalar seed"):
        random.PRNGKey(np.array([1, 2]))
    with pytest.raises(ValueError, match="broadcast"):
        random.uniform(KEY, (3,), minval=jnp.zeros(4))
    with pytest.raises(ValueError, match="replace=False"):
        random.choice(KEY, 3, (5,), replace=False)


def test_fold_in_with_a_traced_loop_index():
    # a signed loop index converted to uint32 inside a while body (IREE needed a bit cast)
    def draws(key):
        return pyree.lax.fori_loop(
            0, 4, lambda i, acc: acc.at[i].set(random.uniform(random.fold_in(key, i))),
            jnp.zeros(4))
    want = np.array([float(random.uniform(random.fold_in(KEY, i))) for i in range(4)],
                    np.float32)
    np.testing.assert_array_equal(np.asarray(pyree.jit(draws)(KEY)), want)


def test_default_dtype_follows_x64(x64):
    assert random.uniform(KEY, (2,)).dtype == np.float64
    assert random.normal(KEY, (2,)).dtype == np.float64
    assert random.uniform(KEY, (2,), jnp.float32).dtype == np.float32


def test_float64_without_x64_warns_and_gives_float32():
    with pytest.warns(UserWarning, match="float64"):
        assert random.uniform(KEY, (2,), jnp.float64).dtype == np.float32


def test_kolmogorov_smirnov_on_100k_draws():
    stats = pytest.importorskip("scipy.stats")
    draws = pyree.jit(lambda k: (random.normal(k, (100_000,)),
                                 random.uniform(k, (100_000,), minval=-2.0, maxval=3.0),
                                 random.truncated_normal(k, -1.0, 2.0, (100_000,)),
                                 random.randint(k, (100_000,), 0, 7)))(random.PRNGKey(11))
    normal, uniform, truncated, ints = (np.asarray(d, np.float64) for d in draws)
    for sample, dist in ((normal, stats.norm()), (uniform, stats.uniform(-2.0, 5.0)),
                         (truncated, stats.truncnorm(-1.0, 2.0))):
        assert stats.kstest(sample, dist.cdf).pvalue > 1e-3
    assert truncated.min() > -1.0 and truncated.max() < 2.0
    counts = np.bincount(ints.astype(np.int64), minlength=7)
    assert stats.chisquare(counts).pvalue > 1e-3


def test_vmap_over_keys_of_scalar_draws_equals_the_loop():
    # fma's batching with unbatched rank-0 operands (uniform's bounds) once failed here.
    keys = random.split(random.PRNGKey(0), 3)
    for draw in (lambda k: random.uniform(k), lambda k: random.normal(k),
                 lambda k: random.uniform(k, minval=1.0, maxval=3.0)):
        batched = np.asarray(pyree.vmap(draw)(keys))
        np.testing.assert_array_equal(batched, np.array([float(draw(k)) for k in keys],
                                                        np.float32))
    gammas = np.asarray(pyree.vmap(lambda k: random.gamma(k, 2.0))(keys))
    np.testing.assert_allclose(gammas, [float(random.gamma(k, 2.0)) for k in keys], rtol=1e-6)
