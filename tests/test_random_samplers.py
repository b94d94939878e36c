"""pyree.random's samplers beyond uniform/normal (stdlib/_random_samplers.py): 100 000 draws of
each against SciPy's distribution (mean, variance, Kolmogorov–Smirnov; chi-square of the
frequencies for discrete ones), with fixed keys so that every test is deterministic; jit
against eager, vmap over keys against a loop, gradients of reparameterised draws against
closed forms, and errors.

To keep compiles few, the statistical draws come from three jitted programs (module-scope
fixtures), each computing many samplers at once."""
import numpy as np
import pytest
from scipy import stats

import pyree
import pyree.numpy as jnp
from pyree import random

N = 100_000
KEY = random.PRNGKey(7)
KS_P_MIN = 1e-3


def _draw_keys(key, count):
    return [random.fold_in(key, i) for i in range(count)]


# ---- the three jitted programs --------------------------------------------------------------

@pyree.jit
def _transforms(key):
    k = _draw_keys(key, 16)
    return {
        "exponential": random.exponential(k[0], (N,)),
        "gumbel": random.gumbel(k[1], (N,)),
        "gumbel_high": random.gumbel(k[2], (N,), mode="high"),
        "laplace": random.laplace(k[3], (N,)),
        "logistic": random.logistic(k[4], (N,)),
        "cauchy": random.cauchy(k[5], (N,)),
        "lognormal": random.lognormal(k[6], 0.5, (N,)),
        "pareto": random.pareto(k[7], 5.0, (N,)),
        "weibull_min": random.weibull_min(k[8], 2.0, 1.5, (N,)),
        "rayleigh": random.rayleigh(k[9], 2.0, (N,)),
        "maxwell": random.maxwell(k[10], (N,)),
        "double_sided_maxwell": random.double_sided_maxwell(k[11], 1.0, 2.0, (N,)),
        "triangular": random.triangular(k[12], 0.0, 1.0, 3.0, (N,)),
        "wald": random.wald(k[13], 2.0, (N,)),
        "geometric": random.geometric(k[14], 0.25, (N,)),
        "rademacher": random.rademacher(k[15], (N,)),
    }


@pyree.jit
def _gamma_family(key):
    k = _draw_keys(key, 10)
    return {
        "gamma": random.gamma(k[0], jnp.array([[0.3], [1.0], [4.5]]), (3, N)),
        "loggamma": random.loggamma(k[1], 0.01, (N,)),
        "beta": random.beta(k[2], jnp.array([[2.0], [0.1]]), jnp.array([[5.0], [0.2]]),
                            (2, N)),
        "dirichlet": random.dirichlet(k[3], jnp.array([1.0, 2.0, 3.0]), (N,)),
        "chisquare": random.chisquare(k[4], 3.0, (N,)),
        "t": random.t(k[5], 5.0, (N,)),
        "f": random.f(k[6], 5.0, 10.0, (N,)),
        "generalized_normal": random.generalized_normal(k[7], 1.5, (N,)),
        "ball": random.ball(k[8], 3, 2, (N,)),
    }


LOGITS = np.log(np.array([0.2, 0.3, 0.5], np.float32))
P4 = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
MVN_MEAN = np.array([1.0, -2.0, 0.5], np.float32)
MVN_COV = np.array([[2.0, 0.6, 0.2], [0.6, 1.0, -0.3], [0.2, -0.3, 0.5]], np.float32)


@pyree.jit
def _discrete(key):
    k = _draw_keys(key, 6)
    return {
        "poisson": random.poisson(k[0], jnp.array([[3.0], [25.0], [0.0]]), (3, N)),
        "categorical": random.categorical(k[1], jnp.asarray(LOGITS), shape=(N,)),
        # 2 draws without replacement from each of N rows of logits: shape (2, N).
        "categorical_norep": random.categorical(k[2], jnp.broadcast_to(LOGITS, (N, 3)),
                                                shape=(2, N), replace=False),
        "choice_p": random.choice(k[3], 4, (N,), p=jnp.asarray(P4)),
        "mvn": random.multivariate_normal(k[4], jnp.asarray(MVN_MEAN), jnp.asarray(MVN_COV),
                                          (N,)),
    }


@pytest.fixture(scope="module")
def transforms():
    return {name: np.asarray(v) for name, v in _transforms(KEY).items()}


@pytest.fixture(scope="module")
def gamma_family():
    return {name: np.asarray(v) for name, v in _gamma_family(KEY).items()}


@pytest.fixture(scope="module")
def discrete():
    return {name: np.asarray(v) for name, v in _discrete(KEY).items()}


# ---- statistical checks ---------------------------------------------------------------------

def check_continuous(samples, dist, moments=True, cdf=None, ks=True):
    """Mean and variance within 6 standard errors of ``dist``'s, and a KS test (against
    ``cdf`` if given, else ``dist.cdf``)."""
    samples = np.asarray(samples, np.float64).ravel()
    assert np.all(np.isfinite(samples))
    n = samples.size
    if moments:
        mean, var, _, excess_kurtosis = (float(m) for m in dist.stats(moments="mvsk"))
        assert abs(samples.mean() - mean) < 6 * np.sqrt(var / n), (samples.mean(), mean)
        var_se = var * np.sqrt((excess_kurtosis + 2) / n)
        assert abs(samples.var() - var) < 6 * var_se, (samples.var(), var)
    if ks:
        result = stats.kstest(samples, dist.cdf if cdf is None else cdf)
        assert result.pvalue > KS_P_MIN, result


def check_discrete(samples, pmf, support):
    """Chi-square test of the counts of ``samples`` over ``support`` against ``pmf`` (the
    last bin takes the tail beyond it; bins with expectation < 5 are merged)."""
    samples = np.asarray(samples).ravel()
    n = samples.size
    assert samples.min() >= support[0]
    probs = np.array([pmf(k) for k in support], np.float64)
    counts = np.array([np.sum(samples == k) for k in support], np.float64)
    probs[-1] += 1 - probs.sum()
    counts[-1] += n - counts.sum()
    merged_p, merged_c, acc_p, acc_c = [], [], 0.0, 0.0
    for p_, c_ in zip(probs, counts):
        acc_p, acc_c = acc_p + p_, acc_c + c_
        if acc_p * n >= 5:
            merged_p.append(acc_p)
            merged_c.append(acc_c)
            acc_p = acc_c = 0.0
    merged_p[-1] += acc_p
    merged_c[-1] += acc_c
    expected = np.array(merged_p) * n
    result = stats.chisquare(merged_c, expected)
    assert result.pvalue > KS_P_MIN, (result, merged_c, expected)


SIMPLE = {
    "exponential": stats.expon(),
    "gumbel": stats.gumbel_r(),
    "gumbel_high": stats.gumbel_r(),
    "laplace": stats.laplace(),
    "logistic": stats.logistic(),
    "lognormal": stats.lognorm(0.5),
    "pareto": stats.pareto(5.0),
    "weibull_min": stats.weibull_min(1.5, scale=2.0),
    "rayleigh": stats.rayleigh(scale=2.0),
    "maxwell": stats.maxwell(),
    "triangular": stats.triang(1.0 / 3.0, loc=0.0, scale=3.0),
    "wald": stats.invgauss(2.0),
}


@pytest.mark.parametrize("name", sorted(SIMPLE))
def test_transform_distribution(transforms, name):
    x = transforms[name]
    assert x.shape == (N,) and x.dtype == np.float32
    check_continuous(x, SIMPLE[name])


def test_cauchy_distribution(transforms):
    check_continuous(transforms["cauchy"], stats.cauchy(), moments=False)


def test_double_sided_maxwell_distribution(transforms):
    x = transforms["double_sided_maxwell"]
    assert x.shape == (N,)
    # Symmetric about loc = 1, |x - loc| / scale Maxwell-distributed, variance 3 scale^2.
    assert abs(x.mean() - 1.0) < 6 * np.sqrt(12.0 / N)
    assert abs(x.var() - 12.0) < 0.3
    assert abs(np.mean(x > 1.0) - 0.5) < 6 * np.sqrt(0.25 / N)
    check_continuous(np.abs(x - 1.0) / 2.0, stats.maxwell())


def test_geometric_and_rademacher(transforms):
    g = transforms["geometric"]
    assert g.dtype == np.int32
    check_discrete(g, stats.geom(0.25).pmf, range(1, 40))
    r = transforms["rademacher"]
    assert r.dtype == np.int32 and set(np.unique(r)) == {-1, 1}
    check_discrete((r + 1) // 2, stats.bernoulli(0.5).pmf, [0, 1])


@pytest.mark.parametrize("row,a", [(0, 0.3), (1, 1.0), (2, 4.5)])
def test_gamma_distribution(gamma_family, row, a):
    check_continuous(gamma_family["gamma"][row], stats.gamma(a))


def test_loggamma_tiny_shape(gamma_family):
    x = gamma_family["loggamma"]
    # Gamma(0.01) underflows float32 most of the time; its log stays finite and exact.
    check_continuous(x, stats.loggamma(0.01))


@pytest.mark.parametrize("row,a,b", [(0, 2.0, 5.0), (1, 0.1, 0.2)])
def test_beta_distribution(gamma_family, row, a, b):
    x = gamma_family["beta"][row]
    assert np.all((x >= 0) & (x <= 1))
    dist = stats.beta(a, b)
    # In float32 everything above 1 - 2**-25 rounds to 1 (about 1% of beta(0.1, 0.2)): the
    # mass there is checked on its own, the KS test is of the rest (conditionally).
    top = 1 - 2.0 ** -25
    at_one = np.mean(x == 1.0)
    expected = dist.sf(top)
    assert abs(at_one - expected) < 6 * np.sqrt(expected / N) + 2e-3, (at_one, expected)
    check_continuous(x, dist, ks=False)
    below = x[x < 1.0]
    result = stats.kstest(below, lambda v: dist.cdf(v) / dist.cdf(top))
    assert result.pvalue > KS_P_MIN, result


def test_dirichlet_distribution(gamma_family):
    x = gamma_family["dirichlet"]
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    for i, alpha in enumerate([1.0, 2.0, 3.0]):
        check_continuous(x[:, i], stats.beta(alpha, 6.0 - alpha))


@pytest.mark.parametrize("name,dist", [
    ("chisquare", stats.chi2(3.0)), ("t", stats.t(5.0)), ("f", stats.f(5.0, 10.0)),
    ("generalized_normal", stats.gennorm(1.5))])
def test_gamma_based_distribution(gamma_family, name, dist):
    # t(5) and F(5, 10) have heavy tails: the sample variance converges too slowly to test.
    check_continuous(gamma_family[name], dist, moments=name in ("chisquare", "generalized_normal"))


def test_ball(gamma_family):
    x = gamma_family["ball"]
    assert x.shape == (N, 3)
    radius = np.linalg.norm(x.astype(np.float64), axis=-1)
    assert radius.max() <= 1.0 + 1e-6
    check_continuous(radius ** 3, stats.uniform())  # uniform in the ball: P(r < s) = s^3
    # Directions are uniform: each coordinate has mean 0 and variance E[r^2]/3 = 1/5.
    np.testing.assert_allclose(x.mean(0), 0.0, atol=6 * np.sqrt(0.2 / N))
    np.testing.assert_allclose(x.var(0), 0.2, atol=0.005)


@pytest.mark.parametrize("row,lam", [(0, 3.0), (1, 25.0)])
def test_poisson_distribution(discrete, row, lam):
    x = discrete["poisson"][row]
    assert x.dtype == np.int32
    assert abs(x.mean() - lam) < 6 * np.sqrt(lam / N)
    assert abs(x.var() - lam) < 6 * lam * np.sqrt((1 / lam + 2) / N)
    check_discrete(x, stats.poisson(lam).pmf, range(0, int(lam * 3) + 10))


def test_poisson_zero_rate(discrete):
    np.testing.assert_array_equal(discrete["poisson"][2], 0)


def test_categorical(discrete):
    x = discrete["categorical"]
    assert x.shape == (N,) and x.dtype == np.int32
    check_discrete(x, lambda k: np.exp(LOGITS)[k], [0, 1, 2])
    pairs = discrete["categorical_norep"]
    assert pairs.shape == (2, N)
    assert np.all(pairs[0] != pairs[1])
    check_discrete(pairs[0], lambda k: np.exp(LOGITS)[k], [0, 1, 2])
    # The second draw, given the first i, has probabilities p_j / (1 - p_i).
    p = np.exp(LOGITS).astype(np.float64)
    second = sum(p[i] * p[1] / (1 - p[i]) for i in (0, 2))
    assert abs(np.mean(pairs[1] == 1) - second) < 6 * np.sqrt(second * (1 - second) / N)


def test_choice_with_p(discrete):
    x = discrete["choice_p"]
    assert x.shape == (N,)
    check_discrete(x, lambda k: P4[k], [0, 1, 2, 3])


def test_multivariate_normal(discrete):
    x = discrete["mvn"].astype(np.float64)
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.mean(0), MVN_MEAN, atol=6 * np.sqrt(2.0 / N))
    np.testing.assert_allclose(np.cov(x.T), MVN_COV, atol=0.03)
    # Squared Mahalanobis distances are chi-square with 3 degrees of freedom.
    centred = x - MVN_MEAN
    d2 = np.einsum("ni,ij,nj->n", centred, np.linalg.inv(MVN_COV.astype(np.float64)), centred)
    check_continuous(d2, stats.chi2(3))


# ---- choice without replacement, vmap over keys ---------------------------------------------

def test_choice_without_replacement_over_keys():
    keys = random.split(KEY, 20_000)
    draws = np.asarray(pyree.jit(pyree.vmap(
        lambda k: random.choice(k, 4, (2,), replace=False, p=jnp.asarray(P4))))(keys))
    assert draws.shape == (20_000, 2)
    assert np.all(draws[:, 0] != draws[:, 1])
    check_discrete(draws[:, 0], lambda k: P4[k], [0, 1, 2, 3])


# ---- jit against eager; vmap against a loop ---------------------------------------------------

def _few(key):
    k = random.split(key, 3)
    return (random.gamma(k[0], jnp.array([0.2, 1.0, 7.0, 30.0])),
            random.poisson(k[1], jnp.array([0.0, 2.0, 9.5, 40.0])),
            random.categorical(k[2], jnp.asarray(LOGITS), shape=(4,)))


_few_jit = pyree.jit(_few)


def test_jit_matches_eager():
    for e, j in zip(_few(KEY), _few_jit(KEY)):
        e, j = np.asarray(e), np.asarray(j)
        assert e.dtype == j.dtype and e.shape == j.shape == (4,)
        np.testing.assert_allclose(e, j, rtol=1e-6)


def test_vmap_over_keys_matches_loop():
    keys = random.split(KEY, 6)
    batched = pyree.jit(pyree.vmap(_few))(keys)
    for i in range(6):
        for b, single in zip(batched, _few_jit(keys[i])):
            np.testing.assert_allclose(np.asarray(b[i]), np.asarray(single), rtol=1e-6)


def test_known_answers_of_plain_transforms():
    # Same transform of the same uniform as JAX 0.10.2: jax.random.<fn>(PRNGKey(0), (4,)).
    key = random.PRNGKey(0)
    np.testing.assert_allclose(np.asarray(random.exponential(key, (4,))),
                               [2.950128, 3.8434246, 0.40390354, 0.6323691], rtol=1e-5)
    np.testing.assert_allclose(np.asarray(random.gumbel(key, (4,))),
                               [2.9233725, 3.8326178, -0.09689324, 0.27725708], rtol=1e-5)
    np.testing.assert_array_equal(
        np.asarray(random.choice(key, 5, (4,), p=jnp.array([.1, .2, .3, .4, 0.]))),
        [0, 0, 3, 2])


# ---- gradients of reparameterised draws -------------------------------------------------------

def test_gradients_of_reparameterised_draws():
    k = _draw_keys(KEY, 4)

    def losses(scale, sigma, loc):
        return (jnp.sum(random.weibull_min(k[0], scale, 1.5, (50,))),
                jnp.sum(random.lognormal(k[1], sigma, (50,))),
                jnp.sum(random.rayleigh(k[2], scale, (50,))),
                jnp.sum(random.double_sided_maxwell(k[3], loc, scale, (50,))))

    def grads(scale, sigma, loc):
        return tuple(pyree.grad(lambda *a, i=i: losses(*a)[i], argnums=(0, 1, 2))(
            scale, sigma, loc) for i in range(4))

    scale, sigma, loc = 2.0, 0.7, 1.0
    got = pyree.jit(grads)(scale, sigma, loc)
    w = np.asarray(random.weibull_min(k[0], scale, 1.5, (50,)), np.float64)
    z = np.asarray(random.normal(k[1], (50,)), np.float64)
    r = np.asarray(random.rayleigh(k[2], scale, (50,)), np.float64)
    m = np.asarray(random.double_sided_maxwell(k[3], loc, scale, (50,)), np.float64)
    # Each draw is scale * (a standard draw): d/dscale = draw / scale; lognormal
    # exp(sigma z): d/dsigma = z exp(sigma z); double-sided Maxwell: d/dloc = 1.
    np.testing.assert_allclose(float(got[0][0]), w.sum() / scale, rtol=1e-4)
    np.testing.assert_allclose(float(got[1][1]), np.sum(z * np.exp(sigma * z)), rtol=1e-4)
    np.testing.assert_allclose(float(got[2][0]), r.sum() / scale, rtol=1e-4)
    np.testing.assert_allclose(float(got[3][0]), (m - loc).sum() / scale, rtol=1e-4,
                               atol=1e-4)
    np.testing.assert_allclose(float(got[3][2]), 50.0, rtol=1e-6)
    for g in (got[0][1], got[0][2], got[2][1], got[2][2]):
        assert float(g) == 0.0


# ---- shapes and dtypes ----------------------------------------------------------------------

def test_default_shapes_and_dtypes():
    def aval(f, *args):
        out = pyree.eval_shape(f, KEY, *args)
        return tuple(out.shape), np.dtype(out.dtype)

    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    assert aval(lambda k: random.gamma(k, jnp.ones((2, 3)))) == ((2, 3), f32)
    assert aval(lambda k: random.poisson(k, jnp.ones((4,)))) == ((4,), i32)
    assert aval(lambda k: random.beta(k, jnp.ones((3, 1)), jnp.ones((4,)))) == ((3, 4), f32)
    assert aval(lambda k: random.dirichlet(k, jnp.ones((2, 5)))) == ((2, 5), f32)
    assert aval(lambda k: random.triangular(k, 0.0, jnp.ones((2,)), 3.0)) == ((2,), f32)
    assert aval(lambda k: random.double_sided_maxwell(k, jnp.zeros(2), 1.0, (3,)))[0] == (3, 2)
    assert aval(lambda k: random.categorical(k, jnp.zeros((4, 3)), axis=0)) == ((3,), i32)
    assert aval(lambda k: random.categorical(k, jnp.zeros((4, 3)), 0, (5, 3)))[0] == (5, 3)
    assert aval(lambda k: random.categorical(k, jnp.zeros((4, 3)), 0, (2, 3), False))[0] == (2, 3)
    assert aval(lambda k: random.multivariate_normal(k, jnp.zeros((2, 3)), jnp.eye(3)))[0] == (2, 3)
    assert aval(lambda k: random.ball(k, 4, shape=(2,)))[0] == (2, 4)
    assert aval(lambda k: random.maxwell(k, (0,)))[0] == (0,)
    assert aval(lambda k: random.rademacher(k, (3,), np.float32)) == ((3,), f32)
    assert aval(lambda k: random.geometric(k, 0.5, (2,), np.int8)) == ((2,), np.dtype(np.int8))
    assert aval(lambda k: random.exponential(k, (2,), np.float16)) == ((2,), np.dtype(np.float16))
    assert aval(lambda k: random.lognormal(k))[0] == ()


def test_out_of_domain_parameters():
    def draw(key):
        return (random.gamma(key, jnp.array([0.0, -1.0, np.inf, np.nan])),
                random.poisson(key, jnp.array([0.0, -1.0, np.nan, np.inf])),
                random.gamma(key, 2.0, (0, 3)))
    g, p, empty = (np.asarray(v) for v in pyree.jit(draw)(KEY))
    assert g[0] == 0.0 and np.isnan(g[1]) and g[2] == np.inf and np.isnan(g[3])
    np.testing.assert_array_equal(p, [0, -1, -1, -1])
    assert empty.shape == (0, 3)


# ---- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("call,error", [
    (lambda: random.gamma(KEY, 1.0, dtype=np.int32), ValueError),
    (lambda: random.exponential(KEY, dtype=np.int32), ValueError),
    (lambda: random.gumbel(KEY, (2,), mode="middle"), ValueError),
    (lambda: random.geometric(KEY, 0.5, dtype=np.float32), ValueError),
    (lambda: random.gamma(KEY, jnp.ones(3), (2,)), ValueError),
    (lambda: random.beta(KEY, jnp.ones(3), jnp.ones(2)), ValueError),
    (lambda: random.poisson(KEY, jnp.ones(3), (4, 2)), ValueError),
    (lambda: random.exponential(KEY, (-1,)), ValueError),
    (lambda: random.gamma(3, 1.0), TypeError),
    (lambda: random.poisson(jnp.zeros(2), 1.0), TypeError),
    (lambda: random.exponential(random.split(KEY), (2,)), TypeError),
    (lambda: random.choice(KEY, 4, (2,), p=jnp.ones(3) / 3), ValueError),
    (lambda: random.dirichlet(KEY, 1.0), ValueError),
    (lambda: random.categorical(KEY, jnp.zeros(3), shape=(4,), replace=False), ValueError),
    (lambda: random.categorical(KEY, jnp.zeros((2, 3)), shape=(3,)), ValueError),
    (lambda: random.multivariate_normal(KEY, jnp.zeros(2), jnp.eye(2), method="svd"),
     NotImplementedError),
    (lambda: random.multivariate_normal(KEY, jnp.zeros(2), jnp.eye(2), method="qr"),
     ValueError),
    (lambda: random.multivariate_normal(KEY, jnp.zeros(2), jnp.eye(3)), ValueError),
])
def test_errors(call, error):
    with pytest.raises(error):
        call()
