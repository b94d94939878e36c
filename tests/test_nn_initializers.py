"""pyree.nn.initializers: known answers from JAX 0.10.2 (computed once with
``jax.nn.initializers.<name>(...)(jax.random.key(7), shape, dtype)`` and pasted here: JAX is not
needed), the variance / bounds each mode and distribution promise, fan computation for dense
and conv kernels, orthogonality, eager vs jit, typed vs raw keys, dtypes, errors."""
import math

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp
from pyree import dtypes, random
from pyree.nn import initializers as init

F32, F64, F16 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.float16)
BF16 = np.dtype(dtypes.bfloat16)
C64 = np.dtype(np.complex64)

# ---- known answers (row-major, flattened), key = jax.random.key(7) ----
GLOROT_UNIFORM_3x4 = [
    0.32235187, 0.8788197, -0.36506277, -0.103768654, 0.42751887, 0.24243449, -0.09526625,
    -0.16390508, -0.79664224, -0.7596684, -0.2385028, 0.6318743]
GLOROT_UNIFORM_CONV = [
    0.10745063, 0.2929399, -0.1216876, -0.034589555, 0.1425063, 0.0808115, -0.031755418,
    -0.05463503, -0.26554742, -0.25322282, -0.079500936, 0.21062478, 0.12424486, -0.28368622,
    0.26525244, -0.009284386, -0.0620568, 0.16531372, -0.08274159, 0.29285464, 0.26855433,
    -0.06362172, -0.092406005, 0.110665016, 0.15747307, -0.23703265, 0.17678492, -0.08751155,
    0.015316938, -0.12720929, 0.28214374, -0.2900971, 0.25752902, -0.13765423, -0.29180557,
    0.27811787, -0.2588551, 0.012619437, 0.053089604, -0.09129623, -0.2062035, 0.20898989,
    -0.19371231, -0.027389547, 0.03647152, 0.18980196, -0.094150305, 0.13141595, -0.06434322,
    -0.13669293, -0.049049754, -0.005930794, -0.19005771, 0.12065596, 0.07256243, 0.070775226,
    -0.14765452, 0.13106233, 0.011653879, -0.04042433, -0.13626324, 0.28780854, -0.28189048,
    -0.07237421, -0.2000221, 0.19142781, -0.04871623, 0.13574754, -0.044276264, -0.0630267,
    0.21965238, 0.27020547, -0.2536091, 0.21046887, 0.23920085, 0.09078869, 0.28637496,
    0.22369605, 0.048640884, 0.17802918, 0.10251166, 0.16516209, 0.23726921, 0.18223584,
    -0.20172219, 0.24286279, -0.15331888, 0.06522027, 0.08806853, 0.24828392]
LECUN_UNIFORM_3x4 = [
    0.34817982, 0.9492338, -0.39431286, -0.11208296, 0.46177316, 0.26185918, -0.10289931,
    -0.17703772, -0.86047196, -0.82053566, -0.25761247, 0.68250227]
LECUN_UNIFORM_CONV = [
    0.14214382, 0.38752308, -0.16097756, -0.045757677, 0.1885181, 0.10690357, -0.04200847,
    -0.07227535, -0.35128623, -0.3349823, -0.105169855, 0.2786304, 0.1643605, -0.37528157,
    0.350896, -0.012282088, -0.082093425, 0.2186895, -0.10945683, 0.38741025, 0.35526398,
    -0.08416362, -0.122241646, 0.14639606, 0.2083173, -0.31356472, 0.23386446, -0.1157669,
    0.020262403, -0.16828208, 0.37324107, -0.3837624, 0.34067887, -0.18209942, -0.38602248,
    0.36791533, -0.34243312, 0.016693946, 0.070230946, -0.12077356, -0.2727816, 0.27646762,
    -0.2562573, -0.036232963, 0.048247285, 0.2510844, -0.12454914, 0.17384696, -0.08511808,
    -0.18082775, -0.06488673, -0.007845703, -0.25142273, 0.15961283, 0.09599107, 0.09362682,
    -0.19532856, 0.17337917, 0.0154166315, -0.05347636, -0.18025932, 0.38073492, -0.37290606,
    -0.095742084, -0.26460436, 0.2532352, -0.06444551, 0.17957711, -0.058571987, -0.08337648,
    0.2905728, 0.35744825, -0.3354933, 0.27842414, 0.31643295, 0.12010215, 0.37883845, 0.29592207,
    0.06434584, 0.23551047, 0.13561018, 0.2184889, 0.31387767, 0.24107534, -0.26685336, 0.3212773,
    -0.20282182, 0.0862783, 0.116503716, 0.32844874]
HE_NORMAL_3x4 = [
    0.39854413, 1.5546824, -0.45549676, -0.12483587, 0.54206353, 0.29570332, -0.114552855,
    -0.19808163, -1.2483152, -1.146445, -0.2907464, 0.8701264]
HE_NORMAL_CONV = [
    0.16270496, 0.6346964, -0.18595576, -0.05096403, 0.2212965, 0.12072037, -0.046766005,
    -0.08086648, -0.5096226, -0.46803424, -0.11869671, 0.35522762, 0.19020471, -0.58511394,
    0.50855434, -0.013641376, -0.09205668, 0.2623785, -0.123706974, 0.63418764, 0.52075183,
    -0.09442616, -0.13878201, 0.1678981, 0.24792999, -0.42074338, 0.28423604, -0.13112144,
    0.022513269, -0.1951603, 0.57776165, -0.61831933, 0.4819092, -0.21289778, -0.6280205,
    0.55953175, -0.48631436, 0.018544901, 0.07854553, -0.13704018, -0.34527212, 0.35151803,
    -0.3183493, -0.040310156, 0.053755093, 0.3102471, -0.14152573, 0.20225047, -0.09551983,
    -0.2112463, -0.07249206, -0.0087128915, -0.31077263, 0.18424833, 0.10803751, 0.10530606,
    -0.23032846, 0.20165178, 0.017124955, -0.059627023, -0.21050939, 0.6059275, -0.576575,
    -0.10774959, -0.33173975, 0.31359836, -0.07199313, 0.209626, -0.06536291, -0.0935248,
    0.37635857, 0.5270591, -0.46925336, 0.35487238, 0.42669445, 0.13624455, 0.5984836, 0.38621277,
    0.071880445, 0.28666338, 0.15478434, 0.2620955, 0.4213876, 0.29495874, -0.3354189, 0.43699163,
    -0.2404197, 0.09685035, 0.13199045, 0.45285618]
HE_UNIFORM_F16 = [
    -0.961, -0.0221, -0.9556, -0.652, -0.315, 0.301, -0.8477, 0.942, -1.254, 0.5356, 0.174,
    -0.7373]
UNIFORM10 = [
    6.740899, 9.746169, 3.0284357, 4.439585, 7.3088655, 6.3092957, 4.485503, 4.1148114, 0.6976402,
    0.8973217, 3.7119377, 8.412512]
NORMAL5 = [
    2.2561758, 9.767255, -2.5811973, -0.7047015, 3.0774834, 1.6715825, -0.6466234, -1.1186825,
    -7.387753, -6.712031, -1.6434662, 4.998066]
TRUNC5 = [
    2.3491704, 6.8141723, -1.3546951, 0.031556237, 2.9851208, 1.8906628, 0.07613357, -0.2838669,
    -3.9856095, -3.7246635, -0.67686135, 4.393829]
GEO_BATCH = [
    0.33395138, 1.4457154, -0.38205996, -0.10430749, 0.4555185, 0.24742189, -0.09571097,
    -0.16558354, -1.0935098, -0.9934917, -0.24326022, 0.7397966, 0.39086905, -1.2924368, 1.090876,
    -0.027911946, -0.1885391, 0.5415542, -0.2535649, 1.443992, 1.1211902, -0.1934019, -0.28459933,
    0.34468338, 0.5112049, -0.88470316, 0.5876817, -0.26882312, 0.046066765, -0.40115032,
    1.2716521, -1.3920622, 1.0263278, -0.43801984, -1.4234035, 1.2216718, -1.0368571, 0.037945975,
    0.16082434, -0.2810111, -0.71821016, 0.73174196, -0.6602815, -0.082493156, 0.11002372,
    0.6429638, -0.2902527, 0.41587487, -0.19564669, -0.43458217, -0.14841393, -0.017827412,
    -0.6440855, 0.37852174, 0.22135192, 0.21574084, -0.47436795, 0.41463086, 0.035040334,
    -0.122051336, -0.43304864, 1.3536404, -1.2683332, -0.2207603, -0.68901587, 0.65012103,
    -0.14739123, 0.43121067, -0.13380319, -0.19155198, 0.78595287, 1.1370817, -0.9963577,
    0.73902464, 0.89816415, 0.27937242, 1.3313134, 0.8076507, 0.14716038, 0.59282184, 0.31759626,
    0.5409587, 0.88615775, 0.61041605, -0.696937, 0.92159885, -0.49546972, 0.19837795, 0.27061227,
    0.95809, 0.048471987, -0.30749935, 0.24948665, -2.5064173, 0.7713232, -0.068908714,
    -0.38337466, 0.45615047, -1.8751857, -0.396278, 1.0412794, 0.14188455, 0.06373092, 0.72055984,
    0.01953886, 0.7178909, -0.3657935, 1.0884128, -0.42045927, -0.13512044, -1.5252326, 0.6817069,
    -0.51886123, 0.35157248, -0.5186461, 0.75518584, 1.6144797, -0.0036338405, 0.29939735,
    0.4662568]
FANOUT_UNIFORM = [
    0.17408991, 0.4746169, -0.19715643, -0.05604148, 0.23088658, 0.13092959, -0.051449656,
    -0.08851886, -0.43023598, -0.41026783, -0.12880623, 0.34125113, 0.20129967, -0.45962417,
    0.42975807, -0.015042424, -0.1005435, 0.26783884, -0.13405669, 0.47447872, 0.4351077,
    -0.10307896, -0.14971483, 0.1792978]
ORTH_3x4 = [
    0.31575322, -0.09862341, -0.09049535, -0.93935287, 0.88602537, 0.3719827, -0.076026805,
    0.26609734, -0.15024924, 0.1368067, -0.978695, 0.029417368]
ORTH_5x3 = [
    0.2961744, 0.69587994, 0.22354542, -0.0925081, 0.23466916, 0.28609324, -0.084884025,
    -0.07547576, -0.79389423, -0.8811068, -0.048155833, 0.2789946, 0.34665352, -0.67280465,
    0.40009016]
ORTH_COL0 = [
    0.38819885, 0.52951366, -1.2711413, 0.45436242, -0.21916568, 1.303318, 1.2199217, 0.104384996,
    -0.6119049, -1.2712481, 0.53916377, -0.4687188, 0.25517884, -0.20090964, -0.93005466,
    1.1514119, -0.0138696, -1.3052107, 0.062345143, -0.13561949, 0.2307179, 0.58872724, 1.8553287,
    0.36830148]
DELTA_CENTRE = [
    0.25842583, -0.29565442, 0.3524998, -0.07406526, -0.8462049, 0.9387558, 0.25065657,
    -0.19366036, -0.05641052, 0.123378985]
GLOROT_UNIFORM_F64 = [
    0.6371622524571435, -0.8417323315867703, -0.5092295225600553, -0.8066011250350135,
    -0.9037134690999603, 0.6189131314605445, 0.23263489639985563, 0.49853614876889185,
    0.6524432795387535, 0.28578015026174386, 0.49312230819690633, 0.2800008499630223]
HE_NORMAL_F64 = [
    0.8800174858291828, -1.3974628938374376, -0.6631049450212032, -1.2784752893208453,
    -1.692238348842793, 0.8462905230330178, 0.2833636345410488, 0.6466548639185284,
    0.9091793710864258, 0.35095101200582884, 0.6384036421673617, 0.3435169061669982]
ORTH_F64 = [
    0.5337938487775991, -0.8016108140076543, 0.16904411335868127, 0.20954311635546718,
    -0.841237125770161, -0.4739759596820839, 0.1940643270831555, 0.1732221834037679,
    0.085928040101381, 0.33823687404460506, 0.8538429089476582, 0.3862181712460853]
COMPLEX_UNIFORM = [
    complex(-0.4221169, -0.8301733), complex(0.34351853, -0.6620494), complex(-0.43112528,
    0.33883333), complex(-0.5126491, 0.2639723), complex(0.25036082, 0.9640527),
    complex(-0.44870284, -0.06598501)]
COMPLEX_TRUNC = [
    complex(-0.41533563, -0.81683666), complex(0.27162614, -0.5234941), complex(-0.3085664,
    0.24251086), complex(-0.37083548, 0.19094992), complex(0.31848922, 1.2263916),
    complex(-0.31178802, -0.045850694)]

COMPLEX_NORMAL = [
    complex(0.64319545, 0.26219413), complex(0.08177087, 0.5422259),
    complex(-0.30163908, -0.15527439), complex(-0.25001937, -0.1101894),
    complex(1.3928567, -0.46646678), complex(-0.47427803, 0.033649612)]
COMPLEX_NORMAL_INIT = [
    complex(0.39387515, 0.16056044), complex(0.050074223, 0.33204418),
    complex(-0.18471545, -0.095085755)]


def typed_key():
    return random.key(7)


def raw_key():
    return random.PRNGKey(7)  # the same key data as random.key(7): the same draws


@pytest.fixture(params=["eager", "jit"])
def run(request):
    """``run(f, key)``: ``f(key)`` as is, or through ``pyree.jit`` with the key traced."""
    if request.param == "eager":
        return lambda f, key: f(key)
    return lambda f, key: pyree.jit(f)(key)


def check(got, want, shape, dtype, ulps=0, scale=1.0):
    """``got`` has ``shape`` and ``dtype`` and equals ``want`` bit for bit (``ulps=0``) or
    within ``ulps`` units of ``max(|want|, scale)`` (normal draws go through erf_inv, whose
    last bits may differ from XLA's)."""
    got = np.asarray(got)
    assert got.dtype == dtype, got.dtype
    assert got.shape == shape, got.shape
    want = np.asarray(want, dtype=np.complex128 if dtype.kind == "c" else np.float64)
    want = want.reshape(shape)
    if ulps == 0:
        np.testing.assert_array_equal(got, want.astype(dtype))
    else:
        eps = float(dtypes.finfo(dtype).eps)
        bound = ulps * eps * np.maximum(np.abs(want), scale)
        err = np.abs(got.astype(want.dtype) - want)
        assert (err <= bound).all(), (err / (eps * np.maximum(np.abs(want), scale))).max()


# (initializer, shape, dtype, answer, ulps, scale); keys alternate typed/raw by position.
KNOWN = {
    "glorot_uniform": (init.glorot_uniform(), (3, 4), F32, GLOROT_UNIFORM_3x4, 0),
    "glorot_uniform_conv": (init.glorot_uniform(), (3, 3, 2, 5), F32, GLOROT_UNIFORM_CONV, 0),
    "lecun_uniform": (init.lecun_uniform(), (3, 4), F32, LECUN_UNIFORM_3x4, 0),
    "lecun_uniform_conv": (init.lecun_uniform(), (3, 3, 2, 5), F32, LECUN_UNIFORM_CONV, 0),
    "he_normal": (init.he_normal(), (3, 4), F32, HE_NORMAL_3x4, 4),
    "he_normal_conv": (init.he_normal(), (3, 3, 2, 5), F32, HE_NORMAL_CONV, 4),
    "he_uniform_f16": (init.he_uniform(dtype=F16), (3, 4), F16, HE_UNIFORM_F16, 0),
    "uniform": (init.uniform(10.0), (3, 4), F32, UNIFORM10, 0),
    "normal": (init.normal(5.0), (3, 4), F32, NORMAL5, 4),
    "truncated_normal": (init.truncated_normal(5.0, lower=-1.0, upper=1.5), (3, 4), F32,
                         TRUNC5, 4),
    "geo_avg_batch": (init.variance_scaling(3.0, "fan_geo_avg", "normal", in_axis=(0, 1),
                                            out_axis=-1, batch_axis=2),
                      (2, 3, 4, 5), F32, GEO_BATCH, 4),
    "fan_out_axes": (init.variance_scaling(0.5, "fan_out", "uniform", in_axis=0,
                                           out_axis=(1, 2)), (4, 3, 2), F32, FANOUT_UNIFORM, 0),
}
JIT_KNOWN = ["glorot_uniform_conv", "he_normal", "he_uniform_f16", "geo_avg_batch"]
EAGER_KNOWN = sorted(set(KNOWN) - {"he_uniform_f16"})  # float16 kernels: jit only (compiles)


@pytest.mark.parametrize("name", EAGER_KNOWN)
def test_known_answers_eager(name):
    initializer, shape, dtype, want, ulps = KNOWN[name]
    key = typed_key() if EAGER_KNOWN.index(name) % 2 else raw_key()
    check(initializer(key, shape, dtype), want, shape, dtype, ulps)


@pytest.mark.parametrize("name", JIT_KNOWN)
@pytest.mark.parametrize("make_key", [typed_key, raw_key])
def test_known_answers_jit(name, make_key):
    initializer, shape, dtype, want, ulps = KNOWN[name]
    got = pyree.jit(lambda key: initializer(key, shape, dtype))(make_key())
    check(got, want, shape, dtype, ulps)


def test_default_dtype_is_the_factory_dtype_then_float32():
    # The factory's dtype is the initializer's default; the call's dtype overrides it.
    got = pyree.jit(lambda key: init.he_uniform(dtype=F16)(key, (3, 4)))(raw_key())
    check(got, HE_UNIFORM_F16, (3, 4), F16)
    check(init.glorot_uniform(dtype=F16)(raw_key(), (3, 4), F32), GLOROT_UNIFORM_3x4, (3, 4),
          F32)
    check(init.glorot_uniform()(raw_key(), [3, 4]), GLOROT_UNIFORM_3x4, (3, 4), F32)


def test_traced_hyper_parameters():
    # scale / stddev may be traced values (not only Python numbers).
    got = pyree.jit(lambda key, s: init.uniform(s)(key, (3, 4)))(raw_key(), 10.0)
    check(got, UNIFORM10, (3, 4), F32)
    got = pyree.jit(lambda key, s: init.variance_scaling(s, "fan_avg", "uniform")(
        key, (3, 4)))(typed_key(), jnp.float32(1.0))
    check(got, GLOROT_UNIFORM_3x4, (3, 4), F32, ulps=2)


def test_float64(x64):
    # Under x64 the default dtype (None) is float64. One jit program for all (a compile is
    # cheaper than eager kernels for a new dtype).
    def draws(key):
        return (init.glorot_uniform()(key, (3, 4)), init.he_normal()(key, (3, 4)),
                init.orthogonal()(key, (3, 4)), init.zeros(key, (2,)))

    glorot, he, orth, zeros = pyree.jit(draws)(typed_key())
    check(glorot, GLOROT_UNIFORM_F64, (3, 4), F64)
    check(he, HE_NORMAL_F64, (3, 4), F64, ulps=8)
    check(orth, ORTH_F64, (3, 4), F64, ulps=64)
    check(zeros, [0, 0], (2,), F64)


def test_complex():
    # Complex dtypes: a uniform disk, a modulus-truncated normal, a complex normal (real and
    # imaginary parts each of variance 1/2), as in JAX.
    def draws(key):
        return (init.variance_scaling(1.0, "fan_in", "uniform")(key, (2, 3), C64),
                init.variance_scaling(1.0, "fan_avg", "truncated_normal")(key, (2, 3), C64),
                init.variance_scaling(2.0, "fan_out", "normal")(key, (2, 3), C64),
                init.normal(0.5)(key, (3,), C64))

    uniform, truncated, normal, plain = pyree.jit(draws)(raw_key())
    check(uniform, COMPLEX_UNIFORM, (2, 3), C64, ulps=8)
    check(truncated, COMPLEX_TRUNC, (2, 3), C64, ulps=8)
    check(normal, COMPLEX_NORMAL, (2, 3), C64, ulps=8)
    check(plain, COMPLEX_NORMAL_INIT, (3,), C64, ulps=8)
    w = np.asarray(init.variance_scaling(3.0, "fan_in", "uniform")(typed_key(), (256, 256), C64))
    assert np.abs(w).max() <= math.sqrt(2 * 3 / 256) * (1 + 1e-6)  # the disk's radius
    assert abs(np.mean(np.abs(w) ** 2) / (3 / 256) - 1) < 0.02


# ---- constants ----

def test_zeros_ones_constant(run):
    key = typed_key()
    check(run(lambda k: init.zeros(k, (2, 3)), key), np.zeros((2, 3)), (2, 3), F32)
    check(run(lambda k: init.ones(k, (3, 2), F16), key), np.ones((3, 2)), (3, 2), F16)
    check(run(lambda k: init.constant(-7)(k, (2, 3)), key), np.full((2, 3), -7), (2, 3), F32)
    check(run(lambda k: init.constant(2.5, BF16)(k, (4,)), raw_key()), np.full(4, 2.5), (4,),
          BF16)
    value = np.array([1.0, 2.0, 3.0])  # broadcast along the shape, as jnp.full does
    check(run(lambda k: init.constant(value)(k, (2, 3)), key), np.tile(value, (2, 1)), (2, 3),
          F32)
    check(init.zeros(key, (2,), np.int32), [0, 0], (2,), np.dtype(np.int32))
    check(init.ones(key, ()), 1.0, (), F32)


# ---- statistics: Var = scale / n for every mode and distribution ----

FAN_IN, FAN_OUT = 256, 1024
DENOMINATOR = {"fan_in": FAN_IN, "fan_out": FAN_OUT, "fan_avg": (FAN_IN + FAN_OUT) / 2,
               "fan_geo_avg": math.sqrt(FAN_IN * FAN_OUT)}


@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
def test_variance_for_each_mode(distribution):
    for i, mode in enumerate(DENOMINATOR):
        scale = 0.5 + i  # a different variance for each mode
        initializer = init.variance_scaling(scale, mode, distribution)
        w = np.asarray(initializer(random.key(i), (FAN_IN, FAN_OUT))).astype(np.float64)
        variance = scale / DENOMINATOR[mode]
        # 262144 draws: the sample variance's relative standard error is below 0.3 %.
        assert abs(w.var() / variance - 1) < 0.02, (mode, w.var(), variance)
        assert abs(w.mean()) < 5 * math.sqrt(variance / w.size)
        if distribution == "uniform":
            limit = math.sqrt(3 * variance)
            assert w.min() >= -limit * (1 + 1e-6) and w.max() < limit * (1 + 1e-6)
            assert w.max() > 0.99 * limit and w.min() < -0.99 * limit
        if distribution == "truncated_normal":
            limit = 2 * math.sqrt(variance) / 0.87962566103423978
            assert np.abs(w).max() < limit * (1 + 1e-6)
            assert np.abs(w).max() > 0.99 * limit


@pytest.mark.parametrize("name, scale, mode", [
    ("glorot_uniform", 1.0, "fan_avg"), ("glorot_normal", 1.0, "fan_avg"),
    ("lecun_uniform", 1.0, "fan_in"), ("lecun_normal", 1.0, "fan_in"),
    ("he_uniform", 2.0, "fan_in"), ("he_normal", 2.0, "fan_in")])
def test_presets_on_a_conv_kernel(name, scale, mode):
    # A (3, 3, 32, 64) kernel: receptive field 9, fan_in = 288, fan_out = 576.
    fans = {"fan_in": 288, "fan_avg": (288 + 576) / 2}
    w = np.asarray(getattr(init, name)()(random.key(1), (3, 3, 32, 64))).astype(np.float64)
    assert abs(w.var() / (scale / fans[mode]) - 1) < 0.03


def test_aliases():
    assert init.xavier_uniform is init.glorot_uniform
    assert init.xavier_normal is init.glorot_normal
    assert init.kaiming_uniform is init.he_uniform
    assert init.kaiming_normal is init.he_normal
    assert isinstance(init.he_normal(), init.Initializer)
    assert isinstance(init.zeros, init.Initializer)


def test_bfloat16_and_float16_draws():
    def draws(key):
        return [(init.glorot_uniform()(key, (64, 64), dtype),
                 init.he_normal()(key, (64, 64), dtype)) for dtype in (BF16, F16)]

    for dtype, (uniform, truncated) in zip((BF16, F16), pyree.jit(draws)(typed_key())):
        assert np.asarray(uniform).dtype == dtype and np.asarray(truncated).dtype == dtype
        w = np.asarray(uniform).astype(np.float64)
        limit = math.sqrt(3 / 64)
        assert np.abs(w).max() <= limit * 1.01 and abs(w.var() / (1 / 64) - 1) < 0.1
        w = np.asarray(truncated).astype(np.float64)
        assert np.abs(w).max() <= 2 * math.sqrt(2 / 64) / 0.8796 * 1.01
        assert abs(w.var() / (2 / 64) - 1) < 0.1


# ---- fan computation ----

# (shape, in_axis, out_axis, batch_axis, fan_in, fan_out)
FANS = [
    ((3, 4), -2, -1, (), 3, 4),
    ((3, 3, 2, 5), -2, -1, (), 18, 45),            # conv: receptive field 3 * 3
    ((5, 2, 7), -2, -1, (), 10, 35),               # 1-d conv
    ((2, 3, 4, 5), -2, -1, 0, 12, 15),             # batch axis left out of the field
    ((2, 3, 4, 5), (0, 1), -1, 2, 6, 5),
    ((4, 3, 2), 0, (1, 2), (), 4, 6),
    ((6, 7), 1, 0, (), 7, 6),
    # 1-d works with in_axis given; the one axis counts as input and output, so the
    # "receptive field" is 8 / 8 / 8 and both fans are 1 (as in JAX).
    ((8,), -1, -1, (), 1, 1),
]


@pytest.mark.parametrize("shape, in_axis, out_axis, batch_axis, fan_in, fan_out", FANS)
def test_fans(shape, in_axis, out_axis, batch_axis, fan_in, fan_out):
    # Uniform draws are random.uniform(key, shape, minval=-1) * sqrt(3 * variance) exactly,
    # so each mode's fan shows in the values bit for bit.
    unit = random.uniform(raw_key(), shape, F32, -1.0)
    for mode, n in [("fan_in", fan_in), ("fan_out", fan_out),
                    ("fan_avg", (fan_in + fan_out) / 2)]:
        got = init.variance_scaling(2.0, mode, "uniform", in_axis, out_axis, batch_axis)(
            raw_key(), shape)
        factor = np.sqrt(np.float32(2.0 / n) * np.float32(3))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(unit) * factor)


# ---- orthogonal ----

ORTH_TOL = 2e-6


@pytest.mark.parametrize("shape, column_axis, scale, want", [
    ((3, 4), -1, 1.0, ORTH_3x4), ((5, 3), -1, 1.0, ORTH_5x3), ((4, 2, 3), 0, 2.0, ORTH_COL0)])
def test_orthogonal_known_answers(run, shape, column_axis, scale, want):
    got = run(lambda k: init.orthogonal(scale, column_axis)(k, shape), typed_key())
    assert np.asarray(got).dtype == F32 and got.shape == shape
    np.testing.assert_allclose(np.asarray(got), np.reshape(want, shape), atol=ORTH_TOL * scale)


@pytest.mark.parametrize("shape", [(40, 24), (24, 40), (32, 32)])
def test_orthogonal_is_orthogonal(shape):
    w = np.asarray(init.orthogonal(scale=1.5)(raw_key(), shape)).astype(np.float64) / 1.5
    n = min(shape)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(n), atol=1e-5)


def test_orthogonal_edge_cases():
    w = init.orthogonal()(typed_key(), (0, 3))
    assert w.shape == (0, 3) and np.asarray(w).dtype == F32
    with pytest.raises(ValueError, match="at least a 2D"):
        init.orthogonal()(typed_key(), (4,))
    with pytest.raises(ValueError, match="floating"):
        init.orthogonal()(typed_key(), (4, 4), np.int32)


def test_delta_orthogonal():
    # jit only: eagerly it is orthogonal (tested eagerly above) and .at[].set.
    got = np.array(pyree.jit(lambda k: init.delta_orthogonal()(k, (3, 3, 2, 5)))(typed_key()))
    assert got.dtype == F32 and got.shape == (3, 3, 2, 5)
    np.testing.assert_allclose(got[1, 1], np.reshape(DELTA_CENTRE, (2, 5)), atol=ORTH_TOL)
    got[1, 1] = 0
    assert not got.any()  # zero away from the spatial centre


def test_delta_orthogonal_ranks():
    kernels = pyree.jit(lambda k: (init.delta_orthogonal(scale=2.0)(k, (4, 3, 3)),
                                   init.delta_orthogonal()(k, (2, 3, 3, 2, 2))))(raw_key())
    w = np.asarray(kernels[0])
    assert not np.delete(w, 1, axis=0).any()
    np.testing.assert_allclose(w[1] @ w[1].T, 4 * np.eye(3), atol=1e-5)
    w = np.asarray(kernels[1])
    np.testing.assert_allclose(w[0, 1, 1] @ w[0, 1, 1].T, np.eye(2), atol=1e-5)
    assert np.abs(w).sum() == pytest.approx(np.abs(w[0, 1, 1]).sum())
    with pytest.raises(ValueError, match="3D, 4D or 5D"):
        init.delta_orthogonal()(raw_key(), (3, 3))
    with pytest.raises(ValueError, match="fan_in"):
        init.delta_orthogonal()(raw_key(), (3, 5, 2))


# ---- errors ----

def test_errors():
    with pytest.raises(ValueError, match="invalid mode"):
        init.variance_scaling(1.0, "fan_sum", "uniform")
    with pytest.raises(ValueError, match="invalid distribution"):
        init.variance_scaling(1.0, "fan_in", "cauchy")
    with pytest.raises(ValueError, match="at least 2-d"):
        init.glorot_uniform()(typed_key(), (5,))
    with pytest.raises(ValueError, match="at least 2-d"):
        init.he_normal()(typed_key(), ())
    with pytest.raises(IndexError, match="out_axis 3"):
        init.lecun_uniform(out_axis=3)(typed_key(), (2, 3))
    with pytest.raises(ZeroDivisionError, match="zero-size"):
        init.glorot_uniform()(typed_key(), (0, 3))
    with pytest.raises(ValueError, match="floating or complex"):
        init.he_uniform()(typed_key(), (2, 3), np.int32)
    with pytest.raises(ValueError, match="a float dtype"):
        init.normal()(typed_key(), (2, 3), np.int32)
    with pytest.warns(UserWarning, match="float64"):  # truncated to float32, as in JAX
        assert init.glorot_uniform()(typed_key(), (2, 3), np.float64).dtype == np.float32
    with pytest.raises(ValueError, match="negative dimension"):
        init.zeros(typed_key(), (2, -1))
    with pytest.raises(TypeError, match="shape must be"):
        init.ones(typed_key(), (2.5,))
    with pytest.raises(NotImplementedError, match="out_sharding"):
        init.uniform()(typed_key(), (2, 3), out_sharding="x")
    with pytest.raises(TypeError, match="PRNG key"):
        init.uniform()(7, (2, 3))
