"""float64 functions that IREE's llvm-cpu backend cannot compile, built from operations it can.

IREE lowers float64 sin, cos, tan, atan2 and fmod to calls of libm symbols that its embedded
linker does not have, and has no float64 cbrt at all. These functions rebuild them from
operations IREE computes exactly or correctly rounded: +, -, *, /, floor, comparisons, selects,
int64 arithmetic and bit casts. The error-free transformations of double-double arithmetic
(``two_sum``, ``two_prod``) carry the extra precision the range reductions need; they rely
on IREE not contracting a*b + c into a fused multiply-add, which it does not (checked: Dekker's
product is exact in its code).

Every function takes ``m``, the operations on elementwise values (see ``ElementwiseOps`` in
lower.py), and values that support Python's arithmetic, comparison and bitwise operators;
Python numbers in expressions become constants. Values are float64 or int64 (bit patterns).

All results are within a few ulps over the whole float64 domain; the tests measure them.
Subnormal inputs and results are flushed to zero by the CPU in IREE's runtime (as in XLA), so
most of these see a subnormal input as 0; cbrt and rem work on the bits and handle them.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

_MANTISSA = (1 << 52) - 1
_EXPONENT_ONE = 1023 << 52        # the bits of 1.0
_ABS = (1 << 63) - 1              # all bits but the sign
_INF_BITS = 2047 << 52


# -- constants, derived here in exact integer arithmetic -------------------------------------

_PRECISION = 1400  # bits after the binary point of the fixed-point constants below


def _atan_inverse(n: int) -> int:
    """atan(1/n) * 2**_PRECISION (to within a few units), from its Taylor series."""
    one = 1 << (_PRECISION + 16)  # 16 guard bits absorb the truncation of each term
    total, power, k, n2 = 0, one // n, 1, n * n
    while power:
        term = power // k
        total += term if k % 4 == 1 else -term
        power //= n2
        k += 2
    return total >> 16


def _atanh_inverse(n: int) -> int:
    """atanh(1/n) * 2**_PRECISION (to within a few units), from its Taylor series."""
    one = 1 << (_PRECISION + 16)
    total, power, k, n2 = 0, one // n, 1, n * n
    while power:
        total += power // k
        power //= n2
        k += 2
    return total >> 16


@functools.cache
def _pi() -> int:
    """pi * 2**_PRECISION, from Machin's formula pi = 16 atan(1/5) - 4 atan(1/239)."""
    return 16 * _atan_inverse(5) - 4 * _atan_inverse(239)


def _fixed(value: int) -> Fraction:
    return Fraction(value, 1 << _PRECISION)


def _double_double(value: Fraction) -> tuple[float, float]:
    """(hi, lo): hi the float nearest ``value``, lo the float nearest the rest."""
    hi = float(value)
    return hi, float(value - Fraction(hi))


def _leading_bits(value: Fraction, bits: int) -> float:
    """``value`` truncated to its leading ``bits`` significant bits."""
    exponent = value.numerator.bit_length() - value.denominator.bit_length()
    scale = Fraction(2) ** (bits - 1 - exponent)
    while value * scale >= 2 ** bits:
        scale /= 2
    while value * scale < 2 ** (bits - 1):
        scale *= 2
    return float(Fraction(int(value * scale)) / scale)


# Payne-Hanek reduction reads the bits of 2/pi from a table of 24-bit chunks. Bit i after the
# point (weight 2**-i) sits at position i + 63 of the table's bit string, so that windows may
# start up to 63 bits before the point (those bits are 0).
_CHUNK = 24
_CHUNK_MASK = (1 << _CHUNK) - 1
_TABLE_OFFSET = 63
_TABLE_CHUNKS = 53  # enough for windows of 216 bits starting at positions up to 1033


@functools.cache
def two_over_pi_chunks() -> tuple[int, ...]:
    total_bits = _TABLE_CHUNKS * _CHUNK
    fraction_bits = total_bits - _TABLE_OFFSET - 1
    # floor(2/pi * 2**fraction_bits): 2**(PRECISION + 1) / pi keeps ~1400 correct bits.
    scaled = ((1 << (2 * _PRECISION + 1)) // _pi()) >> (_PRECISION - fraction_bits)
    return tuple((scaled >> (total_bits - _CHUNK * (c + 1))) & _CHUNK_MASK
                 for c in range(_TABLE_CHUNKS))


class _Constants:
    """Double-double values of pi and friends, and the Cody-Waite split of pi/2."""

    def __init__(self) -> None:
        pi = _fixed(_pi())
        self.pi = _double_double(pi)
        self.pi_2 = _double_double(pi / 2)
        # pi/2 = P1 + P2 + P3 + P4: P1..P3 hold 33 bits each, so k * Pi is exact for
        # |k| < 2**20; P4 holds the next 53.
        rest, parts = pi / 2, []
        for _ in range(3):
            parts.append(_leading_bits(rest, 33))
            rest -= Fraction(parts[-1])
        parts.append(float(rest))
        self.pi_2_parts = tuple(parts)
        # ln 2 = 2 atanh(1/3) = LN2_HI + LN2_LO, LN2_HI with 42 bits: e * LN2_HI is exact for
        # any float64 exponent e.
        ln2 = 2 * _fixed(_atanh_inverse(3))
        self.ln2_hi = _leading_bits(ln2, 42)
        self.ln2_lo = float(ln2 - Fraction(self.ln2_hi))
        self.two_thirds = _double_double(Fraction(2, 3))
        quarter_pi = pi / 4
        # atan(j/4) for j = 1..4; atan(3/4) = atan(1) - atan(1/7).
        self.atan_quarters = tuple(_double_double(v) for v in (
            _fixed(_atan_inverse(4)), _fixed(_atan_inverse(2)),
            quarter_pi - _fixed(_atan_inverse(7)), quarter_pi))


@functools.cache
def constants() -> _Constants:
    return _Constants()


def _factorial(n: int) -> int:
    return 1 if n < 2 else n * _factorial(n - 1)


# Taylor coefficients (exact rationals, rounded to float64). On |y| <= pi/4 the first term left
# out is below 2**-62 of sin y and 2**-67 of cos y.
#   sin y = y + y**3 * (SIN[0] + SIN[1] y**2 + ...),  SIN[i] = (-1)**(i+1) / (2i+3)!
#   cos y = 1 - y**2/2 + y**4 * (COS[0] + COS[1] y**2 + ...),  COS[i] = (-1)**i / (2i+4)!
_SIN = tuple((-1) ** (i + 1) / _factorial(2 * i + 3) for i in range(8))
_COS = tuple((-1) ** i / _factorial(2 * i + 4) for i in range(8))
# atan u = u + u**3 * (ATAN[0] + ATAN[1] u**2 + ...), ATAN[i] = (-1)**(i+1) / (2i+3), for
# |u| <= 1/8, where the first term left out is below 2**-61 of atan u.
_ATAN = tuple((-1) ** (i + 1) / (2 * i + 3) for i in range(9))
# log m = 2 atanh s = 2s + 2s**3/3 + s**5 (LOG[0] + LOG[1] s**2 + ...), LOG[i] = 2 / (2i + 5), for
# s = (m - 1)/(m + 1), |s| <= 0.1716 (m in [sqrt(1/2), sqrt(2)]); the first term left out is
# below 2**-70 of log m.
_LOG = tuple(2 / (2 * i + 5) for i in range(12))
# cbrt(u) on [1, 2]: least-squares cubic fit of the relative error at 2000 Chebyshev nodes
# (numpy.linalg.lstsq, one-off): relative error below 8.3e-5, which one Halley step
# takes to ~1e-13 before the last Newton step.
_CBRT_START = (0.553837744, 0.5849490985, -0.1614754996, 0.02277094564)


def _horner(coefficients, z):
    """c[0] + c[1] z + c[2] z**2 + ..."""
    acc = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = acc * z + c
    return acc


# -- error-free transformations ----------------------------------------------------------------

def two_sum(a, b):
    """(s, e) with s = fl(a + b) and s + e = a + b exactly (Knuth)."""
    s = a + b
    b_part = s - a
    return s, (a - (s - b_part)) + (b - b_part)


def fast_two_sum(a, b):
    """``two_sum`` for exponent(a) >= exponent(b) (or a == 0) (Dekker)."""
    s = a + b
    return s, b - (s - a)


def split(a):
    """(hi, lo) with hi + lo = a and each fitting in 26 bits (Veltkamp). |a| < 2**995."""
    t = a * 134217729.0  # 2**27 + 1
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a, b):
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker), barring over/underflow."""
    p = a * b
    a_hi, a_lo = split(a)
    b_hi, b_lo = split(b)
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _pow2(m, k):
    """2.0**k for int64 k in the normal range [-1022, 1023], from its bits."""
    return m.from_bits((k + 1023) << 52)


def _sign_bit(m, x):
    return m.bits(x) < 0


# -- sin, cos, tan -----------------------------------------------------------------------------

# Below this, Cody-Waite reduction (k < 2**20); above, Payne-Hanek.
_CODY_WAITE_LIMIT = 2.0 ** 20


def _reduce_cody_waite(m, a):
    """a = k pi/2 + (hi + lo), |hi + lo| <= pi/4 (plus rounding), for 0 <= a <= 2**20.

    pi/2 is split as P1 + P2 + P3 + P4 (152 bits) with k * P1..P3 exact; a - k P1 is exact
    (Sterbenz) and two_sum keeps what the later subtractions round off. The reduced argument
    is off by ~2**-130 absolute and ~2**-105 relative: far below an ulp even for the floats
    nearest a multiple of pi/2 in this range (|hi| of order 2**-60)."""
    p1, p2, p3, p4 = constants().pi_2_parts
    k = m.round_even(a * (2 / math.pi))
    hi = a - k * p1
    hi, e1 = two_sum(hi, -(k * p2))
    hi, e2 = two_sum(hi, -(k * p3))
    hi, lo = fast_two_sum(hi, (e1 + e2) - k * p4)
    return m.to_int(k), hi, lo


def _reduce_payne_hanek(m, a):
    """a = n pi/2 + (hi + lo), |hi + lo| <= pi/4, for finite a >= 2**-10, with n mod 4 exact.

    a = M 2**E with a 53-bit integer M. Bits of 2/pi of weight 2**(E-2) and above contribute
    multiples of 4 to a * 2/pi, which do not change sin or cos: only a 192-bit window of 2/pi
    starting there matters. M (as three 24-bit limbs) times the window (eight 24-bit limbs)
    gives n (2 bits) and the fraction (190 bits) in int64 arithmetic; the bits beyond the
    window add less than 2**-137. The closest float64 to a multiple of pi/2 leaves a fraction
    of ~2**-62, so the result keeps ~70 bits beyond float64 precision."""
    bits = m.bits(a)
    mantissa = (bits & _MANTISSA) | (1 << 52)
    exponent = (bits >> 52) - 1075  # a = mantissa * 2**exponent
    # The window starts at the bit of weight 2**-(exponent - 1), at table position
    # exponent - 1 + 63. Smaller a (whose result is not used) are clamped into the table.
    position = m.clamp(exponent + (_TABLE_OFFSET - 1), 0, (_TABLE_CHUNKS - 9) * _CHUNK)
    chunk, shift = position // _CHUNK, position % _CHUNK
    table = two_over_pi_chunks()
    # One index for all lookups (table[chunk + i] is table[i:][chunk]): IREE then fuses them.
    chunks = [m.take(table[i:] + (0,) * i, chunk) for i in range(9)]
    window = [((chunks[i] << shift) | (chunks[i + 1] >> (_CHUNK - shift))) & _CHUNK_MASK
              for i in range(8)]
    limbs = [mantissa & _CHUNK_MASK, (mantissa >> _CHUNK) & _CHUNK_MASK, mantissa >> (2 * _CHUNK)]
    # Column c holds the products limbs[j] * window[c + j], of weight 2**(-22 - 24c).
    columns = []
    for c in range(8):
        terms = [limbs[j] * window[c + j] for j in range(3) if c + j < 8]
        column = terms[0]
        for t in terms[1:]:
            column = column + t
        columns.append(column)
    for c in range(7, 0, -1):  # propagate carries: every column but the first holds 24 bits
        columns[c - 1] = columns[c - 1] + (columns[c] >> _CHUNK)
        columns[c] = columns[c] & _CHUNK_MASK
    # columns[0] holds bits of weight 2**-22 and up: two bits of n, then 22 of fraction.
    n = (columns[0] >> 22) & 3
    columns[0] = columns[0] & ((1 << 22) - 1)
    # Round to the nearest multiple of pi/2: a fraction f >= 1/2 becomes n + 1 and 1 - f
    # (negated below); 1 - f is the bitwise complement of f, give or take 2**-190.
    upper_half = ((columns[0] >> 21) & 1) == 1
    n = (n + m.select(upper_half, m.int(1), m.int(0))) & 3
    columns[0] = m.select(upper_half, ((1 << 22) - 1) - columns[0], columns[0])
    for c in range(1, 8):
        columns[c] = m.select(upper_half, _CHUNK_MASK - columns[c], columns[c])
    # Pairs of columns are 46- and 48-bit integers: exact in float64. Add them from the least
    # significant up; each is 0 or larger than all those below, so fast_two_sum applies.
    pairs = [m.to_float((columns[2 * i] << _CHUNK) | columns[2 * i + 1]) * 2.0 ** (-46 - 48 * i)
             for i in range(4)]
    hi, lo = pairs[3], 0.0
    for i in (2, 1, 0):
        hi, err = fast_two_sum(pairs[i], hi)
        lo = lo + err
    # (hi + lo) * pi/2 in double-double.
    pi_2_hi, pi_2_lo = constants().pi_2
    p, err = two_prod(hi, pi_2_hi)
    hi, lo = fast_two_sum(p, err + (hi * pi_2_lo + lo * pi_2_hi))
    return n, m.select(upper_half, -hi, hi), m.select(upper_half, -lo, lo)


def _reduce(m, a):
    """n, hi, lo with a = n pi/2 + hi + lo (n mod 4 exact), |hi| <= pi/4, for finite a >= 0.

    Payne-Hanek's table lookups (gathers) make eager mode's shape-polymorphic kernels ~7x
    slower, so there it only runs when some element needs it (see ElementwiseOps.if_any)."""
    def both(m, a):
        small = a <= _CODY_WAITE_LIMIT
        n_small, hi_small, lo_small = _reduce_cody_waite(m, m.select(small, a, 0.0))
        n_large, hi_large, lo_large = _reduce_payne_hanek(
            m, m.select(small, _CODY_WAITE_LIMIT, a))
        return (m.select(small, n_small, n_large), m.select(small, hi_small, hi_large),
                m.select(small, lo_small, lo_large))

    return m.if_any(a > _CODY_WAITE_LIMIT, [a], ("int64", "float64", "float64"), both,
                    _reduce_cody_waite)


def _sin_cos_reduced(m, hi, lo):
    """sin and cos of hi + lo, |hi| <= pi/4, |lo| <= ulp(hi)."""
    z = hi * hi
    # sin(hi + lo) = sin hi + lo cos hi, and cos hi ~ 1 - z/2 is close enough for lo's term.
    sin = hi + (hi * z * _horner(_SIN, z) + lo * (1.0 - 0.5 * z))
    # cos hi = 1 - z/2 + ...: 1 - z/2 rounds by up to half an ulp; w + ((1 - w) - z/2) gets
    # that back, since the rounding error of a subtraction is representable.
    half_z = 0.5 * z
    w = 1.0 - half_z
    cos = w + (((1.0 - w) - half_z) + (z * z * _horner(_COS, z) - hi * lo))
    return sin, cos


def sin_and_cos(m, x):
    """sin x and cos x of float64 ``x`` (one range reduction for both): NaN for inf and NaN,
    sin keeps -0.0."""
    # IREE 3.13's constant-expression analysis (run for hoisting and for data tiling) takes
    # time exponential in the number of Payne-Hanek reductions chained one after another
    # (two chained sines: minutes); a barrier on the input cuts the chain, at the cost of
    # materializing x. (Eager mode's one-op modules chain nothing, and IREE rejects barriers
    # on their dynamically-shaped tensors.)
    if not m.ctx.dynamic:
        x = m.barrier(x)
    a = m.abs(x)
    finite = a < float("inf")
    n, hi, lo = _reduce(m, m.select(finite, a, 0.0))
    sin, cos = _sin_cos_reduced(m, hi, lo)
    # sin(y + n pi/2) = sin y, cos y, -sin y, -cos y for n = 0, 1, 2, 3 (sin is odd);
    # cos(y + n pi/2) = cos y, -sin y, -cos y, sin y (cos is even).
    odd = (n & 1) == 1
    sin_x = m.select(odd, cos, sin)
    sin_x = m.select(((n & 2) == 2) ^ _sign_bit(m, x), -sin_x, sin_x)
    cos_x = m.select(odd, sin, cos)
    cos_x = m.select(((n + 1) & 2) == 2, -cos_x, cos_x)
    # sin x rounds to x below 2**-26; this also keeps subnormal x, which the arithmetic above
    # sees as 0.
    sin_x = m.select(a < 2.0 ** -26, x, sin_x)
    nan = float("nan")
    return m.select(finite, sin_x, nan), m.select(finite, cos_x, nan)


def sin_cos_tan(m, x, kind: str):
    """sin, cos or tan of float64 ``x``."""
    sin, cos = sin_and_cos(m, x)
    if kind == "sin":
        return sin
    if kind == "cos":
        return cos
    # tan x rounds to x below 2**-26 (kept for subnormal x, as in sin).
    return m.select(m.abs(x) < 2.0 ** -26, x, sin / cos)


# -- atan2 -------------------------------------------------------------------------------------

def atan2(m, y, x):
    """atan2 with C99's (and NumPy's) values for zeros, infinities and NaN."""
    c = constants()
    abs_y, abs_x = m.abs(y), m.abs(x)
    swap = abs_y > abs_x
    # t = min/max in [0, 1]: 0/0 and inf/inf are taken as 0 and 1 (atan2(0, 0) is 0 or pi,
    # atan2(inf, inf) is pi/4 or 3pi/4); NaN stays NaN.
    t = m.select(swap, abs_x, abs_y) / m.select(swap, abs_y, abs_x)
    both_zero = (abs_y == 0.0) & (abs_x == 0.0)
    both_inf = (abs_y == float("inf")) & (abs_x == float("inf"))
    t = m.select(both_zero, 0.0, m.select(both_inf, 1.0, t))
    # atan t = atan(j/4) + atan u with j = round(4t), u = (t - j/4) / (1 + t j/4), |u| <= 1/8.
    # u is computed in double-double: atan(j/4) and atan u partly cancel for t just above 1/8.
    j = m.round_even(t * 4.0)
    centre = j * 0.25
    numerator = t - centre  # exact (Sterbenz)
    product, product_err = two_prod(t, centre)
    denominator, denominator_lo = fast_two_sum(1.0, product)
    denominator_lo = denominator_lo + product_err
    u = numerator / denominator
    u_times_denominator, u_times_denominator_err = two_prod(u, denominator)
    u_lo = (((numerator - u_times_denominator) - u_times_denominator_err)
            - u * denominator_lo) / denominator
    atan_u_rest = u_lo + u * (u * u) * _horner(_ATAN, u * u)  # atan u = u + atan_u_rest
    j_int = m.to_int(j)
    zero = m.float(0.0)
    centre_hi, centre_lo = zero, zero  # atan(j/4)
    for i, (hi, lo) in enumerate(c.atan_quarters, start=1):
        centre_hi = m.select(j_int == i, m.float(hi), centre_hi)
        centre_lo = m.select(j_int == i, m.float(lo), centre_lo)
    # The quadrant: atan2(|y|, x) = offset + atan t or offset - atan t, with offset 0, pi/2
    # or pi. The large terms are added with two_sum, the rest in one rounding.
    negative_x = _sign_bit(m, x)
    offset_hi = m.select(swap, m.float(c.pi_2[0]), m.select(negative_x, m.float(c.pi[0]), zero))
    offset_lo = m.select(swap, m.float(c.pi_2[1]), m.select(negative_x, m.float(c.pi[1]), zero))
    subtract = swap ^ negative_x

    def signed(v):
        return m.select(subtract, -v, v)
    hi, err1 = two_sum(offset_hi, signed(centre_hi))
    hi, err2 = two_sum(hi, signed(u))
    result = hi + ((err1 + err2) + (offset_lo + signed(centre_lo + atan_u_rest)))
    return m.select(_sign_bit(m, y), -result, result)


# -- cbrt --------------------------------------------------------------------------------------

def cbrt(m, x):
    """Cube root, exact on perfect cubes, correctly signed; subnormal inputs are handled
    from their bits (the CPU flushes them); 0, inf and NaN are returned as they are."""
    bits = m.bits(x) & _ABS
    subnormal = bits < (1 << 52)
    # A subnormal's bits, as an integer, are the number times 2**1074 (and 1074 = 3 * 358).
    v = m.select(subnormal, m.to_float(bits), m.from_bits(bits))
    v_bits = m.bits(v)
    exponent = (v_bits >> 52) - 1023
    k = (exponent + 1026) // 3 - 342  # floor(exponent / 3)
    r = exponent - 3 * k              # 0, 1 or 2
    u = m.from_bits((v_bits & _MANTISSA) | _EXPONENT_ONE)  # in [1, 2)
    target = u * m.select(r == 0, m.float(1.0), m.select(r == 1, m.float(2.0), m.float(4.0)))
    # cbrt(target), target in [1, 8), is cbrt(u) * 2**(r/3).
    y = _horner(_CBRT_START, u) * m.select(
        r == 0, m.float(1.0), m.select(r == 1, m.float(2 ** (1 / 3)), m.float(4 ** (1 / 3))))
    y_cubed = y * y * y  # Halley: relative error e -> ~e**3
    y = y * (y_cubed + 2.0 * target) / (2.0 * y_cubed + target)
    # Newton with y**3 - target computed exactly: the error of y, ~1e-12, becomes ~1e-24, and
    # the result is the correctly rounded cube root but for values within 1e-24 of a tie
    # (a perfect cube's root, representable, comes out exactly).
    square, square_err = two_prod(y, y)
    cube, cube_err = two_prod(square, y)
    residual = (cube - target) + (cube_err + square_err * y)
    y = y - residual / (3.0 * square)
    k = k - m.select(subnormal, m.int(358), m.int(0))
    result = y * _pow2(m, k)
    result = m.select(_sign_bit(m, x), -result, result)
    # 0 (bits 0), inf and NaN (exponent all ones) are their own cube roots.
    return m.select((bits == 0) | (bits >= _INF_BITS), x, result)


# -- rem (C's fmod) ----------------------------------------------------------------------------

# Each step of the long division takes up to this many bits of the exponent difference.
_REM_STEP_BITS = 50
_REM_STEPS = -(-2045 // _REM_STEP_BITS)  # exponents differ by at most 2046 - 1


def _rem_step(m, r, my, my_float, shift):
    """(r 2**shift) mod My, for int64 Values with 0 <= r, 0 < My < 2**53, 0 <= shift and a
    quotient r 2**shift / My below 2**53.

    The quotient's float64 estimate is within 1 of it, so its floor q is off by at most one,
    which the selects fix. (r << shift) - q My is computed modulo 2**64, where both terms may
    wrap, but the result, in (-My, 2 My), is exact."""
    q = m.to_int(m.floor(m.to_float(r) * _pow2(m, shift) / my_float))
    r = (r << shift) - q * my
    r = m.select(r < 0, r + my, r)
    return m.select(r >= my, r - my, r)


def rem(m, x, y):
    """fmod(x, y): x - trunc(x / y) * y, exactly (it always is representable), with the sign
    of x; NaN for y = 0 or x infinite or either NaN; x for infinite y.

    With x = Mx 2**ex and y = My 2**ey (53-bit integers Mx, My), the remainder is
    (Mx 2**(ex - ey) mod My) 2**ey: a long division over int64 that takes the exponent
    difference up to 50 bits at a time. A difference over 50 (|x / y| >= 2**51 or so) takes
    up to 40 more steps, run only when some element needs them."""
    x_bits, y_bits = m.bits(x), m.bits(y)
    ax_bits, ay_bits = x_bits & _ABS, y_bits & _ABS

    def unpack(b):  # (integer mantissa, exponent >= 1) with value = mantissa * 2**(exp - 1075)
        biased = b >> 52
        normal = biased > 0
        return ((b & _MANTISSA) | m.select(normal, m.int(1 << 52), m.int(0)),
                m.select(normal, biased, m.int(1)))

    mx, ex = unpack(ax_bits)
    my, ey = unpack(ay_bits)
    my = m.select(my == 0, m.int(1), my)  # y = 0 gives NaN below; keep the steps finite
    my_float = m.to_float(my)
    # Mx mod My (Mx / My < 2**53), then steps whose quotients are below 2**50.
    r = _rem_step(m, mx, my, my_float, m.int(0))
    shift_left = m.max(ex - ey, m.int(0))
    shift = m.min(shift_left, m.int(_REM_STEP_BITS))
    r = _rem_step(m, r, my, my_float, shift)
    shift_left = shift_left - shift

    def long_division(m, remainder, left, my, my_float):
        for _ in range(_REM_STEPS - 1):
            step = m.min(left, m.int(_REM_STEP_BITS))
            remainder = _rem_step(m, remainder, my, my_float, step)
            left = left - step
        return (remainder,)

    (r,) = m.if_any(shift_left > 0, [r, shift_left, my, my_float], ("int64",), long_division,
                    lambda m, remainder, *_: (remainder,))
    # r 2**(ey - 1075) as float64: normal results get the bits of float(r) (exact) with the
    # exponent raised; subnormal ones are r << (ey - 1) as bits.
    r_float_bits = m.bits(m.to_float(r))
    result_exponent = (r_float_bits >> 52) + (ey - 1075)
    result_bits = m.select(result_exponent >= 1, r_float_bits + ((ey - 1075) << 52),
                           r << (ey - 1))
    result_bits = m.select(r == 0, m.int(0), result_bits)
    result_bits = m.select(ax_bits < ay_bits, ax_bits, result_bits)  # |x| < |y|: x itself
    result = m.from_bits(result_bits | (x_bits & ~_ABS))
    invalid = (ay_bits == 0) | (ax_bits >= _INF_BITS) | (ay_bits > _INF_BITS)
    return m.select(invalid, float("nan"), result)


# -- pow -------------------------------------------------------------------------------------------

def _log_double_double(m, a):
    """log a as (hi, lo), relative error ~2**-66, for finite a > 0 (subnormals included)."""
    c = constants()
    bits = m.bits(a)
    subnormal = bits < (1 << 52)
    v = m.select(subnormal, m.to_float(bits), a)  # a subnormal's bits are a * 2**1074
    v_bits = m.bits(v)
    exponent = (v_bits >> 52) - 1023 - m.select(subnormal, m.int(1074), m.int(0))
    mantissa = m.from_bits((v_bits & _MANTISSA) | _EXPONENT_ONE)  # in [1, 2)
    high = mantissa > 1.4142135623730951
    mantissa = m.select(high, mantissa * 0.5, mantissa)  # in [sqrt(1/2), sqrt(2)]
    exponent = m.to_float(exponent + m.select(high, m.int(1), m.int(0)))
    # s = (mantissa - 1) / (mantissa + 1) in double-double; mantissa - 1 is exact.
    numerator = mantissa - 1.0
    denominator, denominator_lo = fast_two_sum(m.float(1.0), mantissa)
    s = numerator / denominator
    product, product_err = two_prod(s, denominator)
    s_lo = (((numerator - product) - product_err) - s * denominator_lo) / denominator
    # 2s**3/3 in double-double too: it is up to 1% of log m.
    square, square_lo = two_prod(s, s)
    square_lo = square_lo + 2.0 * s * s_lo
    cube, cube_lo = two_prod(square, s)
    cube_lo = cube_lo + (square_lo * s + square * s_lo)
    third_hi, third_lo = c.two_thirds
    cubic, cubic_lo = two_prod(cube, third_hi)
    cubic_lo = cubic_lo + (cube_lo * third_hi + cube * third_lo)
    rest = (exponent * c.ln2_lo + 2.0 * s_lo) + (cubic_lo + cube * square * _horner(_LOG, square))
    hi, err1 = two_sum(exponent * c.ln2_hi, 2.0 * s)
    hi, err2 = two_sum(hi, cubic)
    return fast_two_sum(hi, (err1 + err2) + rest)


# -- exp, log and log1p ------------------------------------------------------------------------------
# For targets without a float64 exp or log (SPIR-V's are 16- and 32-bit: lower.py routes
# Vulkan's float64 exp, log and the functions built on them here). These do without the
# error-free transformations above: Mesa's shader compiler treats float operations as
# reassociable (it simplified Goldberg's log(u) x / (u - 1), u = 1 + x, to log(u), and
# Dekker's products lost their error terms: float64 log1p of 1e-16 was off by 10%, pow by
# ~500 ulps, on lavapipe).

_EXP_LARGEST = 709.782712893384      # log of the largest float64: above it exp is inf
_EXP_SMALLEST = -745.1332191019412   # below it e**x rounds to 0 (under the least subnormal)
_INV_LN2 = 1.4426950408889634
# 1/n! for n = 0..13: e**r to 4e-18 (relative) for |r| <= ln 2 / 2.
_EXP_TAYLOR = tuple(float(Fraction(1, math.factorial(n))) for n in range(14))
# 2 / (2n + 1) for n = 0..17: log1p x = 2 atanh s = sum of 2 s**(2n+1) / (2n + 1), s = x / (2 + x),
# to 1e-18 (relative) for |s| <= 1/3 (|x| <= 1/2).
_LOG1P_ATANH = tuple(2.0 / (2 * n + 1) for n in range(18))


def exp(m, x):
    """e**x from +, *, floor and bit casts: x = k ln 2 + r with |r| <= ln 2 / 2 (k ln 2 taken
    off in two parts, the first exact), e**r by its Taylor series, then 2**k put in as two
    factors built in the exponent bits (each in the normal range, so that results near
    overflow and the subnormal ones come out right). Within ~1 ulp of the correctly rounded
    value (the tests measure it)."""
    c = constants()
    clamped = m.clamp(x, _EXP_SMALLEST - 1.0, _EXP_LARGEST + 1.0)   # (keeps k an integer)
    k = m.floor(clamped * _INV_LN2 + 0.5)
    r = (clamped - k * c.ln2_hi) - k * c.ln2_lo
    power = m.to_int(k)
    half = power >> 1                     # (arithmetic shift: floor(k / 2))
    result = _horner(_EXP_TAYLOR, r) * _pow2(m, half) * _pow2(m, power - half)
    result = m.select(x > _EXP_LARGEST, float("inf"), result)
    result = m.select(x < _EXP_SMALLEST, 0.0, result)
    return m.select(x != x, x, result)


def log(m, x):
    """The natural logarithm from +, *, / and bit casts (``_log_double_double``, rounded to
    float64): -inf at +-0, NaN below 0, inf at inf, NaN for NaN."""
    positive_finite = (x > 0.0) & (x < float("inf"))
    hi, lo = _log_double_double(m, m.select(positive_finite, x, 1.0))
    result = hi + lo
    result = m.select(x == 0.0, -float("inf"), result)
    result = m.select(x < 0.0, float("nan"), result)
    result = m.select(x == float("inf"), x, result)
    return m.select(x != x, x, result)


def log1p(m, x):
    """log(1 + x) without cancelling terms: 2 atanh(x / (2 + x)) by its series for |x| <= 1/2,
    ``log(1 + x)`` (``log`` above) past that, where 1 + x keeps x's precision."""
    near = m.abs(x) <= 0.5
    s = m.select(near, x, 0.0) / (m.select(near, x, 0.0) + 2.0)
    series = s * _horner(_LOG1P_ATANH, s * s)
    return m.select(near, series, log(m, x + 1.0))


def pow_abs(m, a, y):
    """a**y for a >= 0 (C's pow there): exp(y log a), with y log a in double-double so that its
    rounding, which exp magnifies by up to 745, stays below 2**-60."""
    log_hi, log_lo = _log_double_double(m, m.select((a > 0.0) & (a < float("inf")), a, 1.0))
    t, t_err = two_prod(y, log_hi)
    t_err = t_err + y * log_lo
    e = m.exp(t)
    result = e + e * t_err  # exp(t + t_err), |t_err| <= 2**-44
    # Past |t| = 1000 the result is 0 or inf (and t_err may be NaN).
    result = m.select(m.abs(t) > 1000.0, e, result)
    # 0**y and inf**y; NaN stays NaN.
    positive_y, negative_y = y > 0.0, y < 0.0
    inf, nan = float("inf"), float("nan")
    zero_base = m.select(positive_y, 0.0, m.select(negative_y, m.float(inf), m.float(nan)))
    inf_base = m.select(positive_y, inf, m.select(negative_y, m.float(0.0), m.float(nan)))
    result = m.select(m.bits(a) == 0, zero_base, result)
    result = m.select(a == inf, inf_base, result)
    return m.select(a != a, a, result)


# -- complex128 ------------------------------------------------------------------------------------
# IREE expands complex128 functions into float64 sin, cos and atan2 (which it cannot link), so
# these build them from the float64 functions above and IREE's float64 exp, log and sqrt. Each
# takes and returns (real, imaginary) pairs. What does not depend on sin_and_cos is computed
# before it: its branch (in eager mode) must not sit between an op and its operands (see
# ElementwiseOps.if_any in lower.py).

# Above this, exp overflows: e**a is taken as exp(a/2)**2, multiplied in after the factors
# it scales (e**710 cos b may be finite).
_EXP_OVERFLOW = 709.0


def _exp_halves(m, a):
    """(e1, e2) with e1 * e2 = e**a, each finite for a < 1419."""
    large = a > _EXP_OVERFLOW
    half = m.exp(a * 0.5)
    return m.select(large, half, m.exp(a)), m.select(large, half, m.float(1.0))


def _sinh_cosh(m, b):
    """(sinh b, cosh b, large, h): for |b| > 709 (large), sinh and cosh are +-inf and
    0.5 h**2 should be used, multiplied in after the factors it scales."""
    magnitude = m.abs(b)
    e = m.expm1(magnitude)
    # sinh = (e**b - e**-b) / 2 with e**b = e + 1: accurate for small b too.
    sinh = 0.5 * (e + e / (e + 1.0))
    cosh = 0.5 * (e + 1.0) + 0.5 / (e + 1.0)
    sinh = m.select(_sign_bit(m, b), -sinh, sinh)
    return sinh, cosh, magnitude > _EXP_OVERFLOW, m.exp(magnitude * 0.5)


def _times_sinh_cosh(m, factor, value, large, h, negative=None):
    """factor * value, value being sinh or cosh with _sinh_cosh's large and h."""
    big = (0.5 * h * factor) * h
    if negative is not None:
        big = m.select(negative, -big, big)
    return m.select(large, big, factor * value)


def complex_exp(m, a, b):
    e1, e2 = _exp_halves(m, a)
    sin, cos = sin_and_cos(m, b)
    re, im = (e1 * cos) * e2, (e1 * sin) * e2
    # exp(a + 0i) is real (and e**inf * sin 0 would be NaN).
    return re, m.select(b == 0.0, b, im)


def complex_expm1(m, a, b):
    e1, e2 = _exp_halves(m, a)
    expm1_a = m.expm1(a)
    sin, cos = sin_and_cos(m, b)
    # Re = e**a cos b - 1 = expm1(a) cos b + (cos b - 1), and cos b - 1 = -sin**2 / (1 + cos b)
    # keeps its precision for small b.
    cos_minus_1 = m.select(cos > 0.0, -(sin * sin) / (1.0 + cos), cos - 1.0)
    large = a > _EXP_OVERFLOW
    re = m.select(large, (e1 * cos) * e2, expm1_a * cos + cos_minus_1)
    im = (e1 * sin) * e2
    return re, m.select(b == 0.0, b, im)


def _log_abs(m, x_hi, x_lo, y):
    """log |x + iy| with x = x_hi + x_lo (|x_lo| <= ulp(x_hi)/2).

    Near |x + iy| = 1 it is log1p(x**2 + y**2 - 1) / 2 with the argument in double-double
    (the squares and their sum lose nothing); elsewhere log(max) + log1p((min/max)**2) / 2."""
    abs_x, abs_y = m.abs(x_hi), m.abs(y)
    big, small = m.max(abs_x, abs_y), m.min(abs_x, abs_y)
    ratio = small / big
    # 0/0 (at 0) and inf/inf (both infinite) would be NaN; the result is -inf or inf.
    ratio = m.select((big == 0.0) | (big == float("inf")), 0.0, ratio)
    far = m.log(big) + 0.5 * m.log1p(ratio * ratio)
    x_square, x_square_err = two_prod(x_hi, x_hi)
    y_square, y_square_err = two_prod(y, y)
    sum1, err1 = two_sum(x_square, -1.0)
    sum2, err2 = two_sum(sum1, y_square)
    rest = ((err1 + err2) + (x_square_err + y_square_err)) + 2.0 * x_hi * x_lo
    near = 0.5 * m.log1p(sum2 + rest)
    square = x_square + y_square
    return m.select((square >= 0.5) & (square <= 2.0), near, far)


def complex_log(m, a, b):
    return _log_abs(m, a, m.float(0.0), b), atan2(m, b, a)


def complex_log1p(m, a, b):
    one_plus_a, one_plus_a_lo = two_sum(m.float(1.0), a)
    return _log_abs(m, one_plus_a, one_plus_a_lo, b), atan2(m, b, one_plus_a)


def complex_sin(m, a, b):
    sinh, cosh, large, h = _sinh_cosh(m, b)
    negative_b = _sign_bit(m, b)
    sin, cos = sin_and_cos(m, a)
    return (_times_sinh_cosh(m, sin, cosh, large, h),
            _times_sinh_cosh(m, cos, sinh, large, h, negative_b))


def complex_cos(m, a, b):
    sinh, cosh, large, h = _sinh_cosh(m, b)
    negative_b = _sign_bit(m, b)
    sin, cos = sin_and_cos(m, a)
    return (_times_sinh_cosh(m, cos, cosh, large, h),
            -_times_sinh_cosh(m, sin, sinh, large, h, negative_b))


# Past this |Im z|, tan z = tanh-like limits: coth |b| is 1 in float64.
_TAN_SATURATION = 20.0


def complex_tan(m, a, b):
    """tan(a + ib) = (sin a cos a + i sinh b cosh b) / (cos**2 a + sinh**2 b): no cancellation
    in the denominator."""
    saturated = m.abs(b) > _TAN_SATURATION
    sinh, cosh, _, _ = _sinh_cosh(m, m.select(saturated, 0.0, b))
    decay = m.exp(-m.abs(b))
    sin, cos = sin_and_cos(m, a)
    denominator = cos * cos + sinh * sinh
    re, im = (sin * cos) / denominator, (sinh * cosh) / denominator
    # Large |b|: Im = coth b -> +-1, Re = 4 sin a cos a e**-2|b| (no overflow).
    re = m.select(saturated, ((4.0 * sin * cos) * decay) * decay, re)
    im = m.select(saturated, m.select(_sign_bit(m, b), m.float(-1.0), m.float(1.0)), im)
    return re, im


def complex_tanh(m, a, b):
    """tanh(a + ib) = i' tan(b + ia) with the parts swapped."""
    re, im = complex_tan(m, b, a)
    return im, re


def complex_sqrt(m, a, b):
    """The principal square root: sqrt((|a| + |z|) / 2) and b / (2 that), scaled by a power
    of 4 away from overflow and underflow."""
    abs_a, abs_b = m.abs(a), m.abs(b)
    big = m.max(abs_a, abs_b)
    scale = m.select(big > 2.0 ** 1000, m.float(2.0 ** -4),
                     m.select(big < 2.0 ** -1000, m.float(2.0 ** 100), m.float(1.0)))
    unscale = m.select(big > 2.0 ** 1000, m.float(2.0 ** 2),
                       m.select(big < 2.0 ** -1000, m.float(2.0 ** -50), m.float(1.0)))
    sa, sb, sbig = abs_a * scale, abs_b * scale, big * scale
    ratio = m.min(sa, sb) / sbig
    ratio = m.select((sbig == 0.0) | (sbig == float("inf")), 0.0, ratio)
    modulus = sbig * m.sqrt(1.0 + ratio * ratio)
    t = m.sqrt((sa + modulus) * 0.5)
    other = (sb / (2.0 * t))
    other = m.select(t == 0.0, 0.0, other)
    negative_a = _sign_bit(m, a)
    re = m.select(negative_a, other, t) * unscale
    im = m.select(negative_a, t, other) * unscale
    im = m.select(_sign_bit(m, b), -im, im)
    # sqrt(x + i inf) = inf + i inf, even for NaN x.
    infinite_b = abs_b == float("inf")
    return m.select(infinite_b, float("inf"), re), m.select(infinite_b, b, im)


def complex_pow(m, a, b, c, d):
    """(a + ib)**(c + id) = exp((c + id) log(a + ib)); 0**w is 1 for w = 0, 0 for Re w > 0
    and NaN otherwise (as NumPy)."""
    log_re, log_im = complex_log(m, a, b)
    re, im = complex_exp(m, c * log_re - d * log_im, c * log_im + d * log_re)
    zero_base = (a == 0.0) & (b == 0.0)
    zero_power = (c == 0.0) & (d == 0.0)
    zero_result = zero_base & (c > 0.0)
    nan_result = zero_base & ~(zero_power | zero_result)
    nan = float("nan")
    re = m.select(zero_power, 1.0, m.select(zero_result, 0.0, m.select(nan_result, nan, re)))
    im = m.select(zero_power | zero_result, 0.0, m.select(nan_result, nan, im))
    return re, im
