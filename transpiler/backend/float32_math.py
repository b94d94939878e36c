"""float32 formulas that round exactly as JAX's CPU backend (XLA) does, for primitives whose
results users compare bit for bit with JAX's (``random.normal`` is ``sqrt(2) * erf_inv(u)``,
``random.truncated_normal`` also needs ``erf``).

XLA's ``erf`` is ``x * P(x**2) / Q(x**2)`` with FMA Horner chains, and +-1 from |x| >= 3.8325.

XLA expands ``erf_inv`` into Giles' single-precision polynomial ("Approximating the erfinv
function", GPU Computing Gems, 2011) over ``w = -log1p(-x*x)``; its ``log1p`` is a Cephes-style
rational function below ``sqrt(2) - 1`` and ``log(1 + x)`` above, with its own frexp-based
``log``. LLVM then fuses every multiply whose only use is an add into an FMA. These formulas
spell the same operations with ``math.fma`` where XLA's code fuses; the products that stay
unfused have several uses, which LLVM (in IREE as in XLA) never contracts. Checked against JAX
0.10.2 on 2**21 normal draws and on 2**20 evenly spaced float32s in [-1, 1] (erf: in
[-5, 5]), eagerly and under jit: no bit differs.

Each function takes an ``ElementwiseOps`` and float32 ``Value``s (see lower.py).
"""
from __future__ import annotations

import numpy as np

_F32 = np.dtype(np.float32)
_U32 = np.dtype(np.uint32)
_I32 = np.dtype(np.int32)


def _bits_float(bits: int) -> np.float32:
    return np.array(bits, np.uint32).view(np.float32)[()]


_MIN_NORMAL = _bits_float(0x00800000)
_SQRT_HALF = _bits_float(0x3F3504F3)
_SQRT2_MINUS_1 = _bits_float(0x3ED413CD)
# log's polynomial for the mantissa m - 1 in [sqrt(1/2) - 1, sqrt(2) - 1), as three
# interleaved Horner chains joined with z**3; then e * (ln 2 split in two parts).
_LOG_CHAINS = ((0x3D9021BB, 0xBDEBD1B8, 0x3DEF251A), (0xBDFE5D4F, 0x3E11E9BF, 0xBE2AAE50),
               (0x3E4CCEAC, 0xBE7FFFFC, 0x3EAAAAAA))
_LN2_LOW, _LN2_HIGH = 0xB95E8083, 0x3F318000
# log1p(x) = x - x**2/2 + x**3 * P(x) / Q(x) for |x| < sqrt(2) - 1 (coefficients from high
# degree down; P's first one is written as a decimal in XLA).
_LOG1P_P = (np.float32(4.527e-05), 0x3EFF40C5, 0x40D284FA, 0x41EF4B9C, 0x4273CC76, 0x426473AD,
            0x41A05101)
_LOG1P_Q = (np.float32(1.0), 0x417101AD, 0x42A6185B, 0x435DC32D, 0x439A8CA3, 0x43586D8A,
            0x42707982)
# Giles' coefficients, high degree first: w < 5 (central) and w >= 5 (tails).
_ERF_INV_CENTRAL = (0x32F16588, 0x34B84B36, 0xB66C7357, 0xB6935AC1, 0x396532DB, 0xBAA45408,
                    0xBB88E4EF, 0x3E7C8F63, 0x3FC02E2F)
_ERF_INV_TAIL = (0xB951F09B, 0x38D3B56B, 0x3AB0DC72, 0xBB70BDE7, 0x3BBC127B, 0xBBF9C5D7,
                 0x3C1AA57E, 0x3F8036DB, 0x40354F7E)


_ERF_LIMIT = _bits_float(0x407547CB)
_ERF_P = (0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA)
_ERF_Q = (0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, np.float32(1.0))


def _c(ops, coefficient):
    value = coefficient if isinstance(coefficient, np.float32) else _bits_float(coefficient)
    return ops.constant(value, _F32)


def log(ops, y):
    """Natural log of float32 ``y`` (NaN below 0, -inf at 0, inf at inf)."""
    bits = ops.apply("bitcast_convert", _U32, ops.select(y > _MIN_NORMAL, y, _MIN_NORMAL))
    exponent = ops.apply("convert", _F32, ops.apply("convert", _I32, bits >> 23) - 127) + 1.0
    mantissa = ops.apply("bitcast_convert", _F32, (bits & 0x807FFFFF) | 0x3F000000)  # [1/2, 1)
    low = mantissa < _SQRT_HALF
    one, zero = ops.constant(1.0, _F32), ops.constant(0.0, _F32)
    exponent = exponent - ops.select(low, one, zero)
    z = (mantissa + -1.0) + ops.select(low, mantissa, zero)
    z2 = z * z
    z3 = z2 * z
    chains = []
    for first, second, third in _LOG_CHAINS:
        p = ops.fma(z, _c(ops, first), _c(ops, second))
        chains.append(ops.fma(p, z, _c(ops, third)))
    p = ops.fma(chains[0], z3, chains[1])
    p = ops.fma(p, z3, chains[2])
    tail = ops.fma(p, z3, exponent * _c(ops, _LN2_LOW))
    result = ops.fma(-z2, 0.5, z) + tail
    result = ops.fma(exponent, _c(ops, _LN2_HIGH), result)
    nan_bits = ops.constant(np.uint32(0xFFFFFFFF), _U32)
    # ~(y > 0) rather than y <= 0: NaN too gives NaN
    result = ops.select(~(y > 0.0), ops.apply("bitcast_convert", _F32, nan_bits), result)
    result = ops.select(y == 0.0, -np.inf, result)
    return ops.select(y == np.inf, np.inf, result)


def _horner(ops, coefficients, x, start):
    acc = start
    for coefficient in coefficients:
        acc = ops.fma(acc, x, _c(ops, coefficient))
    return acc


def erf(ops, x):
    """The error function of float32 ``x``."""
    x2 = x * x
    p = _horner(ops, _ERF_P[1:], x2, _c(ops, _ERF_P[0]))
    q = _horner(ops, _ERF_Q[1:], x2, _c(ops, _ERF_Q[0]))
    one = ops.constant(1.0, _F32)
    saturated = ops.select(x < 0.0, -one, one)
    return ops.select(ops.abs(x) >= _ERF_LIMIT, saturated, (x * p) / q)


def log1p(ops, x):
    """log(1 + x) of float32 ``x``."""
    zero = x * 0.0  # the Horner chains start from 0 * x + leading coefficient, as XLA's
    ratio = (_horner(ops, _LOG1P_P[1:], x, zero + _c(ops, _LOG1P_P[0]))
             / _horner(ops, _LOG1P_Q[1:], x, zero + _c(ops, _LOG1P_Q[0])))
    x2 = x * x
    small = x + ops.fma(x2, -0.5, (x * x2) * ratio)
    return ops.select(ops.abs(x) < _SQRT2_MINUS_1, small, log(ops, x + 1.0))


def erf_inv(ops, x):
    """Inverse error function of float32 ``x`` (±inf at ±1, NaN outside [-1, 1])."""
    neg_w = log1p(ops, x * -x)
    central = neg_w > -5.0
    t = ops.select(central, -2.5 - neg_w, ops.apply("sqrt", _F32, -neg_w) + -3.0)
    p = ops.select(central, _c(ops, _ERF_INV_CENTRAL[0]), _c(ops, _ERF_INV_TAIL[0]))
    for a, b in zip(_ERF_INV_CENTRAL[1:], _ERF_INV_TAIL[1:]):
        p = ops.fma(p, t, ops.select(central, _c(ops, a), _c(ops, b)))
    p = ops.select(ops.abs(x) == 1.0, np.inf, p)
    return x * p
