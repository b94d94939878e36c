"""The elementwise mathematical functions, with every rule for them: exp, log, log1p, expm1,
sin, cos, tan, tanh, logistic, sqrt, rsqrt, cbrt, erf, floor, ceil, round, sign, is_finite,
integer_pow, pow, atan2 and rem. (The arithmetic the interpreters build on, ``neg``, ``add``,
``mul``, ``div``, ``max``, comparisons, ``select``..., is arithmetic.py's.)

* **Abstract evaluation**: the operand's aval; ``is_finite`` is boolean. Like ``jax.lax``, the
  operands of a binary function have one dtype and equal shapes, except that a rank-0 operand
  broadcasts.
* **Lowering**, per backend where IREE's own expansion falls short (each rule says what it
  fixes): float32 sin/cos/tan by Cody-Waite range reduction and Cephes' polynomials; erf
  rounded as JAX's (float32_math); float64 expm1, log1p and tanh from exp and log with their
  classic corrections; float64 sin, cos, tan, cbrt, pow, atan2 and rem by float64_math's
  formulas (IREE's llvm-cpu links them against libm symbols it lacks, or loses precision);
  pow and atan2 with C's values at zeros, infinities and negative bases; complex128 results by
  formulas from their float64 parts (``COMPLEX128_FORMULAS``); on Vulkan, float64 exp and log
  from arithmetic, and what cannot be compiled there refused before IREE sees it
  (``VULKAN_NO_FLOAT64``, ``VULKAN_NO_COMPLEX128``).
* **Derivatives**: JVPs written with the primitives themselves (``integer_pow`` with ``y=1``
  is linear and has a transpose); rounding, sign and is_finite have zero derivatives; pow's
  derivative is 0 where C's pow is constant (``0 ** 0``; the base at 0 for the exponent).
* **Batching, partitioning and eager mode**: as for every member of ``primitives.ELEMENTWISE``
  (one rule each, in batching.py and partition.py; eager mode runs them on flat views).

Example: adding a unary function is one declaration and its rules here, plus its public
wrapper in ``pyree.lax``::

    cosh_p = P.unary_primitive("cosh", P.FLOATING)
    lowering_rules[cosh_p] = lambda ctx, x: hlo("cosh", ctx.out_type(), x)
    defjvp(cosh_p, lambda g, x: mul(g, sinh_p.bind(x)))
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from pyree.dtypes import bfloat16

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import abstract_eval_rules
from ..interpreters.ad import Zero, add_tangents, jvp_rules, transpose_rules
from ..interpreters.ad_rules import (add, aval, const, defjvp, defjvp_zero, div, full_like,
                                     match_shape, mul, neg, select, sub, zeros_like)
from ..backend import float32_math, float64_math
from ..backend.lower import (COMPLEX128_FORMULAS, VULKAN_NO_COMPLEX128, VULKAN_NO_FLOAT64,
                             RuleContext, _compare, _expm1_f64, _float64_formula, _log1p_f64,
                             _splat, broadcast_to_result, division_rule, exponential,
                             float32_formula, hlo, logarithm, lowering_rules, op, tensor_type,
                             unary_op_rule)

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


# -- primitives and abstract evaluation ----------------------------------------------------------

exp_p = P.unary_primitive("exp", P.FLOATING)
log_p = P.unary_primitive("log", P.FLOATING)
log1p_p = P.unary_primitive("log1p", P.FLOATING)
expm1_p = P.unary_primitive("expm1", P.FLOATING)
sin_p = P.unary_primitive("sin", P.FLOATING)
cos_p = P.unary_primitive("cos", P.FLOATING)
tan_p = P.unary_primitive("tan", P.FLOATING)
tanh_p = P.unary_primitive("tanh", P.FLOATING)
logistic_p = P.unary_primitive("logistic", P.FLOATING)
sqrt_p = P.unary_primitive("sqrt", P.FLOATING)
rsqrt_p = P.unary_primitive("rsqrt", P.FLOATING)
cbrt_p = P.unary_primitive("cbrt", P.REAL_FLOATING)
erf_p = P.unary_primitive("erf", P.REAL_FLOATING)
floor_p = P.unary_primitive("floor", P.REAL_FLOATING)
ceil_p = P.unary_primitive("ceil", P.REAL_FLOATING)
# params: rounding_method (0 away from zero, 1 to even)
round_p = P.unary_primitive("round", P.REAL_FLOATING)
sign_p = P.unary_primitive("sign", P.NUMERIC)
is_finite_p = P.unary_primitive("is_finite", P.REAL_FLOATING, lambda d: np.dtype(np.bool_))
rem_p = P.binary_primitive("rem", ("iuf", "real numbers"))
pow_p = P.binary_primitive("pow", P.FLOATING)
atan2_p = P.binary_primitive("atan2", P.REAL_FLOATING)

integer_pow_p = P.unary_primitive("integer_pow", P.NUMERIC)   # params: y, a Python int


def _integer_pow_shape_rule(x: ShapedArray, *, y: int) -> ShapedArray:
    P.check_kinds("integer_pow", x, *P.NUMERIC)
    if y < 0 and x.dtype.kind in "iu":
        raise TypeError(f"integer_pow with a negative exponent {y} needs a floating-point base, "
                        f"got {x.dtype.name}")
    return x


abstract_eval_rules[integer_pow_p] = _integer_pow_shape_rule


# -- lowering: unary functions -------------------------------------------------------------------

for _prim, _name in {sqrt_p: "sqrt", rsqrt_p: "rsqrt", floor_p: "floor", ceil_p: "ceil",
                     is_finite_p: "is_finite"}.items():
    lowering_rules[_prim] = unary_op_rule(_name)


def _sign_rule(ctx: RuleContext, x):
    aval = ctx.avals_in[0]
    if aval.dtype.kind == "u":
        zero, one = _splat(ctx, 0, aval, x), _splat(ctx, 1, aval, x)
        return hlo("select", ctx.out_type(), _compare(ctx, x, zero, "NE", aval), one, zero)
    return hlo("sign", ctx.out_type(), x)


def _round_rule(ctx: RuleContext, x, *, rounding_method: int = 0):
    return hlo("round_nearest_even" if rounding_method == 1 else "round_nearest_afz",
               ctx.out_type(), x)


def _exp_rule(ctx: RuleContext, x):
    return exponential(ctx, x, ctx.avals_in[0])


def _log_rule(ctx: RuleContext, x):
    return logarithm(ctx, x, ctx.avals_in[0])


def _logistic_rule(ctx: RuleContext, x):
    aval = ctx.avals_in[0]
    if not (aval.dtype == _F64 and ctx.lowering.platform == "vulkan"):
        return hlo("logistic", ctx.out_type(), x)
    # 1 / (1 + e**-x), written e**x / (1 + e**x) for x < 0 so that e**-x cannot overflow.
    t = ctx.out_type()
    e = exponential(ctx, hlo("negate", t, hlo("abs", t, x)), aval)
    one = _splat(ctx, 1.0, aval, x)
    positive = hlo("divide", t, one, hlo("add", t, one, e))
    return hlo("select", t, _compare(ctx, x, _splat(ctx, 0.0, aval, x), "LT", aval),
               hlo("divide", t, e, hlo("add", t, one, e)), positive)


lowering_rules[exp_p] = _exp_rule
lowering_rules[log_p] = _log_rule
lowering_rules[logistic_p] = _logistic_rule


def _expm1_rule(ctx: RuleContext, x):
    aval = ctx.avals_in[0]
    if aval.dtype == np.float64:
        return _expm1_f64(ctx, x, aval)
    return hlo("exponential_minus_one", ctx.out_type(), x)


def _log1p_rule(ctx: RuleContext, x):
    aval = ctx.avals_in[0]
    if aval.dtype == np.float64 and ctx.lowering.platform == "vulkan":
        return _float64_formula(ctx, float64_math.log1p, x, shape=aval.shape)   # (see float64_math)
    if aval.dtype == np.float64:
        return _log1p_f64(ctx, x, aval)
    return hlo("log_plus_one", ctx.out_type(), x)


def _tanh_rule(ctx: RuleContext, x):
    t = ctx.out_type()
    aval = ctx.avals_in[0]
    if aval.dtype != np.float64:
        return hlo("tanh", t, x)
    # tanh |x| = e / (e + 2) with e = expm1(2|x|); |x| is capped at 20, past which tanh is 1
    # in float64 and e would overflow (inf / inf). sign(x) restores the sign (and keeps -0.0
    # and NaN).
    a = hlo("minimum", t, hlo("abs", t, x), _splat(ctx, 20.0, aval, x))
    e = _expm1_f64(ctx, hlo("add", t, a, a), aval)
    magnitude = hlo("divide", t, e, hlo("add", t, e, _splat(ctx, 2.0, aval, x)))
    return hlo("multiply", t, hlo("sign", t, x), magnitude)


def _erf_rule(ctx: RuleContext, x):
    if ctx.avals_in[0].dtype == _F64:
        return op("chlo.erf", [ctx.out_type()], [x]).result
    return float32_formula(ctx, float32_math.erf, x)  # rounded as JAX's


def _cbrt_rule(ctx: RuleContext, x):
    if ctx.avals_in[0].dtype == _F64:
        return _float64_formula(ctx, float64_math.cbrt, x)
    t = ctx.out_type()
    if ctx.avals_in[0].dtype.kind != "f" and ctx.avals_in[0].dtype != bfloat16:
        return hlo("cbrt", t, x)
    # IREE's cbrt gives NaN for +-inf.
    aval = ctx.avals_in[0]
    infinite = _compare(ctx, hlo("abs", t, x), _splat(ctx, np.inf, aval, x), "EQ", aval)
    return hlo("select", t, infinite, x, hlo("cbrt", t, x))


# pi/2 as a sum of float32s: k * part is exact for the first three when |k| < 2**16 (|x| up to
# ~1e5), and the fourth carries the remaining bits (Cody-Waite range reduction).
_PI_2_PARTS = (1.5703125, 0.000484466552734375, -6.407499313354492e-07, 9.92093629470503e-10)
# Cephes' sinf/cosf polynomials for |y| <= pi/4: y + y**3 * S(y**2), 1 - y**2/2 + y**4 * C(y**2).
_SIN_COEFFS = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
_COS_COEFFS = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)


def _trig_rule(kind: str) -> Callable:
    """sin, cos and tan: range reduction to [-pi/4, pi/4], then polynomials.

    IREE's own kernels reduce with floor(x * 2/pi) and a single float32 pi/2: results for x < 0
    were off by ~6e-8 absolute (sin(-1e-9) came out as +6.2e-8), and by 2.6e-4 around
    |x| = 1e4. These are within 2.3 ulps (tan 4) up to |x| = 1e5."""
    names = {"sin": "sine", "cos": "cosine", "tan": "tan"}

    def rule(ctx: RuleContext, x):
        in_aval = ctx.avals_in[0]
        if in_aval.dtype == _F64:
            return _float64_formula(ctx, lambda m, v: float64_math.sin_cos_tan(m, v, kind), x)
        if in_aval.dtype == np.complex64 and kind != "tan":
            return _complex64_sin_cos(ctx, x, kind)
        if in_aval.dtype not in (np.dtype(np.float32), np.dtype(np.float16), bfloat16):
            return hlo(names[kind], ctx.out_type(), x)
        aval = ShapedArray(in_aval.shape, np.dtype(np.float32))
        t = tensor_type(aval, ctx.dynamic)
        x32 = x if in_aval.dtype == aval.dtype else hlo("convert", t, x)

        def const(v):
            return _splat(ctx, v, aval, x32)

        def select(pred, a, b):
            return hlo("select", t, pred, a, b)

        k = hlo("round_nearest_even", t, hlo("multiply", t, x32, const(2 / np.pi)))
        y = x32
        for part in _PI_2_PARTS:
            y = hlo("subtract", t, y, hlo("multiply", t, k, const(part)))
        # |y| <= pi/4 (plus rounding).
        z = hlo("multiply", t, y, y)

        def poly(coeffs):
            acc = const(coeffs[0])
            for c in coeffs[1:]:
                acc = hlo("add", t, hlo("multiply", t, acc, z), const(c))
            return acc
        sin_y = hlo("add", t, y, hlo("multiply", t, hlo("multiply", t, y, z), poly(_SIN_COEFFS)))
        cos_y = hlo("add", t, hlo("subtract", t, const(1.0), hlo("multiply", t, z, const(0.5))),
                    hlo("multiply", t, hlo("multiply", t, z, z), poly(_COS_COEFFS)))

        def is_odd(v):  # exact in float32 for every integer v (true for NaN)
            return _compare(ctx, v, hlo("multiply", t, const(2.0), hlo(
                "floor", t, hlo("multiply", t, v, const(0.5)))), "NE", aval)
        # x = y + k * pi/2: an odd k swaps sin and cos; the sign comes from the parity of k // 2
        # ((k + 1) // 2 for cos).
        odd = is_odd(k)
        if kind == "tan":
            result = select(odd, hlo("negate", t, hlo("divide", t, cos_y, sin_y)),
                            hlo("divide", t, sin_y, cos_y))
        else:
            r = select(odd, cos_y, sin_y) if kind == "sin" else select(odd, sin_y, cos_y)
            turns = k if kind == "sin" else hlo("add", t, k, const(1.0))
            negative = is_odd(hlo("floor", t, hlo("multiply", t, turns, const(0.5))))
            result = select(negative, hlo("negate", t, r), r)
        if kind != "cos":  # sin(-0.0) and tan(-0.0) are -0.0
            result = select(_compare(ctx, x32, const(0.0), "EQ", aval), x32, result)
        return result if in_aval.dtype == aval.dtype else hlo("convert", ctx.out_type(), result)
    return rule


def _complex64_sin_cos(ctx: RuleContext, z, kind: str):
    """sin(a + ib) = sin a cosh b + i cos a sinh b, cos(a + ib) = cos a cosh b - i sin a sinh b,
    from the float32 parts. IREE 3.13's own expansion of a complex sine or cosine makes a
    constant of the operand's dynamic shape, which fails to compile ("'stablehlo.constant' op
    result #0 must be statically shaped"): eager mode could not run them. sinh and cosh come
    from expm1 (no cancellation for small b); sin and cos of a from the rule above."""
    part = ctx.avals_in[0].update(dtype=np.dtype(np.float32))
    part_ctx = RuleContext(ctx.lowering, [part], [part], ctx.dyn)
    t = part_ctx.type(part)
    a, b = hlo("real", t, z), hlo("imag", t, z)
    sin_a, cos_a = _trig_rule("sin")(part_ctx, a), _trig_rule("cos")(part_ctx, a)
    up = hlo("exponential_minus_one", t, b)
    down = hlo("exponential_minus_one", t, hlo("negate", t, b))
    half = _splat(part_ctx, 0.5, part, b)
    sinh_b = hlo("multiply", t, half, hlo("subtract", t, up, down))
    cosh_b = hlo("add", t, _splat(part_ctx, 1.0, part, b),
                 hlo("multiply", t, half, hlo("add", t, up, down)))
    if kind == "sin":
        re, im = hlo("multiply", t, sin_a, cosh_b), hlo("multiply", t, cos_a, sinh_b)
    else:
        re = hlo("multiply", t, cos_a, cosh_b)
        im = hlo("negate", t, hlo("multiply", t, sin_a, sinh_b))
    return hlo("complex", ctx.out_type(), re, im)


lowering_rules[tanh_p] = _tanh_rule
lowering_rules[expm1_p] = _expm1_rule
lowering_rules[log1p_p] = _log1p_rule
lowering_rules[sign_p] = _sign_rule
lowering_rules[cbrt_p] = _cbrt_rule
lowering_rules[sin_p] = _trig_rule("sin")
lowering_rules[cos_p] = _trig_rule("cos")
lowering_rules[tan_p] = _trig_rule("tan")
lowering_rules[round_p] = _round_rule
lowering_rules[erf_p] = _erf_rule


def _integer_pow_rule(ctx: RuleContext, x, *, y: int):
    aval = ctx.avals_in[0]
    if y == 0:
        return _splat(ctx, 1, aval, x)
    # Square-and-multiply: O(log y) multiplications.
    t = ctx.out_type()
    base, acc, n = x, None, abs(y)
    while n:
        if n & 1:
            acc = base if acc is None else hlo("multiply", t, acc, base)
        n >>= 1
        if n:
            base = hlo("multiply", t, base, base)
    if y < 0:
        acc = hlo("divide", t, _splat(ctx, 1, aval, x), acc)
    return acc


lowering_rules[integer_pow_p] = _integer_pow_rule


# -- lowering: binary functions -------------------------------------------------------------------

def _pow_rule(ctx: RuleContext, x, y):
    out = ctx.avals_out[0]
    x, y = broadcast_to_result(ctx, [x, y], ctx.avals_in, out)
    t = ctx.out_type()
    if out.dtype.kind != "f" and out.dtype != bfloat16:
        return hlo("power", t, x, y)
    # IREE computes exp(y * log(x)): NaN for every negative base, and for 0**0, nan**0, 1**nan.
    # C's (and XLA's) pow: the power of |x|, negated for odd integer y when x has its sign bit
    # set, NaN for a finite negative x and non-integer y, and 1 for y == 0, x == 1, (-1)**inf.
    bool_t = tensor_type(out.update(dtype=np.bool_), ctx.dynamic)

    def cmp(a, b, direction):
        return _compare(ctx, a, b, direction, out)

    def const(v):
        return _splat(ctx, v, out, x)

    def both(a, b):
        return hlo("and", bool_t, a, b)

    if out.dtype.itemsize < 4:
        # In float16, exp(y * log(x)) loses ~4 ulps: compute in float32 and round once.
        t32 = tensor_type(out.update(dtype=np.dtype(np.float32)), ctx.dynamic)
        result = hlo("convert", t, hlo("power", t32, hlo("convert", t32, hlo("abs", t, x)),
                                       hlo("convert", t32, y)))
    elif out.dtype == _F64:
        # IREE's exp(y * log x) loses up to ~500 ulps in float64.
        result = _float64_formula(ctx, float64_math.pow_abs, hlo("abs", t, x), y)
    else:
        result = hlo("power", t, hlo("abs", t, x), y)
    y_integer = cmp(hlo("floor", t, y), y, "EQ")
    half_y = hlo("multiply", t, y, const(0.5))
    y_odd = both(y_integer, cmp(hlo("floor", t, half_y), half_y, "NE"))
    result = hlo("select", t, both(_sign_bit(ctx, x, out), y_odd), hlo("negate", t, result), result)
    finite_negative = both(cmp(x, const(0.0), "LT"), cmp(x, const(-np.inf), "GT"))
    result = hlo("select", t, both(finite_negative, hlo("not", bool_t, y_integer)),
                 const(np.nan), result)
    one = hlo("or", bool_t, cmp(y, const(0.0), "EQ"), cmp(x, const(1.0), "EQ"))
    one = hlo("or", bool_t, one, both(cmp(x, const(-1.0), "EQ"),
                                      cmp(hlo("abs", t, y), const(np.inf), "EQ")))
    return hlo("select", t, one, const(1.0), result)


def _sign_bit(ctx: RuleContext, x, aval: ShapedArray):
    """Whether float ``x`` has its sign bit set (-0.0 included): its bits, read as a signed
    integer, are negative."""
    int_aval = aval.update(dtype=np.dtype(f"i{aval.dtype.itemsize}"))
    bits = hlo("bitcast_convert", tensor_type(int_aval, ctx.dynamic), x)
    return _compare(ctx, bits, _splat(ctx, 0, int_aval, bits), "LT", int_aval)


def _atan2_rule(ctx: RuleContext, y, x):
    out = ctx.avals_out[0]
    y, x = broadcast_to_result(ctx, [y, x], ctx.avals_in, out)
    if out.dtype == _F64:
        return _float64_formula(ctx, float64_math.atan2, y, x)
    t = ctx.out_type()
    if out.dtype.kind != "f" and out.dtype != bfloat16:
        return hlo("atan2", t, y, x)
    # IREE's atan2 is NaN for two zeros or two infinities and loses the sign of y when
    # x = -inf. atan2(y, x) = copysign(atan2(|y|, x), y), with C's values for those cases.
    bool_t = tensor_type(out.update(dtype=np.bool_), ctx.dynamic)

    def const(v):
        return _splat(ctx, v, out, x)

    def both(a, b):
        return hlo("and", bool_t, a, b)

    def select(pred, a, b):
        return hlo("select", t, pred, a, b)

    abs_y, abs_x = hlo("abs", t, y), hlo("abs", t, x)
    result = hlo("atan2", t, abs_y, x)
    zeros = both(_compare(ctx, abs_y, const(0.0), "EQ", out),
                 _compare(ctx, x, const(0.0), "EQ", out))
    result = select(zeros, select(_sign_bit(ctx, x, out), const(np.pi), const(0.0)), result)
    infs = both(_compare(ctx, abs_y, const(np.inf), "EQ", out),
                _compare(ctx, abs_x, const(np.inf), "EQ", out))
    at_inf = select(_compare(ctx, x, const(0.0), "GT", out), const(np.pi / 4), const(3 * np.pi / 4))
    result = select(infs, at_inf, result)
    return select(_sign_bit(ctx, y, out), hlo("negate", t, result), result)


lowering_rules[pow_p] = _pow_rule
lowering_rules[atan2_p] = _atan2_rule
lowering_rules[rem_p] = division_rule("remainder")


# -- complex128 results ----------------------------------------------------------------------------
# IREE expands these into float64 sin, cos and atan2, which it cannot link (see float64_math.py):
# with a complex128 result they are computed by these formulas (lower.apply_rule).

def _complex_rsqrt(m, a, b):
    re, im = float64_math.complex_sqrt(m, a, b)
    return _complex_reciprocal(m, re, im)


def _complex_logistic(m, a, b):
    re, im = float64_math.complex_exp(m, -a, -b)
    return _complex_reciprocal(m, 1.0 + re, im)


def _complex_reciprocal(m, re, im):
    """1 / (re + i im) by Smith's method (no overflow in the squares)."""
    swap = m.abs(im) > m.abs(re)
    big, small = m.select(swap, im, re), m.select(swap, re, im)
    ratio = small / big
    denominator = big + small * ratio
    first, second = 1.0 / denominator, -ratio / denominator
    return m.select(swap, -second, first), m.select(swap, -first, second)


COMPLEX128_FORMULAS.update({
    exp_p: float64_math.complex_exp, log_p: float64_math.complex_log,
    expm1_p: float64_math.complex_expm1, log1p_p: float64_math.complex_log1p,
    sin_p: float64_math.complex_sin, cos_p: float64_math.complex_cos,
    tan_p: float64_math.complex_tan, tanh_p: float64_math.complex_tanh,
    sqrt_p: float64_math.complex_sqrt, rsqrt_p: _complex_rsqrt,
    logistic_p: _complex_logistic, pow_p: float64_math.complex_pow})


# -- Vulkan ----------------------------------------------------------------------------------------
# SPIR-V's extended instructions for exp and log (GLSL.std.450 Exp, Log) take 16- and 32-bit
# floats only, and IREE 3.13 expands these primitives into them whatever the width: in float64
# (and complex128) they fail to compile ("'spirv.GL.Exp' op operand #0 must be 16/32-bit
# float", lavapipe). sin, cos, tan, atan2, cbrt, sqrt, rem and the rest compiled and matched
# NumPy to 1-2 ulps there (pyree builds the trigonometric ones, float64_math.py).
# pyree builds float64 exp, log and log1p from arithmetic there (float64_math.exp, log, log1p:
# ``exponential``, ``logarithm``), and expm1, tanh and logistic from those; erf, which IREE expands
# itself, and pow, whose float64 formula needs exact products that Mesa's shader compiler
# does not keep (float64_math), are refused.
_SPIRV_EXP_LOG = ("SPIR-V's exp and log instructions take 16- and 32-bit floats only, and IREE "
                  "3.13 expands this function into them")
VULKAN_NO_FLOAT64.update({
    erf_p: _SPIRV_EXP_LOG,
    pow_p: "its float64 formula needs exact products that Vulkan drivers may reassociate"})
# complex128 functions are built from float64 exp, log, sin and cos (float64_math.complex_exp
# ...): not yet checked on Vulkan.
VULKAN_NO_COMPLEX128.update({p: _SPIRV_EXP_LOG for p in (
    exp_p, log_p, log1p_p, expm1_p, tanh_p, logistic_p, erf_p, pow_p, sin_p, cos_p, tan_p)})


# -- derivatives -----------------------------------------------------------------------------------

defjvp(exp_p, lambda g, ans, x: mul(g, ans), use_output=True)
defjvp(log_p, lambda g, x: div(g, x))
defjvp(log1p_p, lambda g, x: div(g, add(x, const(1, x))))
defjvp(expm1_p, lambda g, ans, x: mul(g, add(ans, const(1, ans))), use_output=True)
defjvp(sin_p, lambda g, x: mul(g, cos_p.bind(x)))
defjvp(cos_p, lambda g, x: neg(mul(g, sin_p.bind(x))))
defjvp(tan_p, lambda g, ans, x: mul(g, add(const(1, ans), mul(ans, ans))), use_output=True)
defjvp(tanh_p, lambda g, ans, x: mul(g, sub(const(1, ans), mul(ans, ans))), use_output=True)
defjvp(logistic_p, lambda g, ans, x: mul(g, mul(ans, sub(const(1, ans), ans))),
       use_output=True)
defjvp(sqrt_p, lambda g, ans, x: div(mul(g, const(0.5, ans)), ans), use_output=True)
defjvp(rsqrt_p, lambda g, ans, x: mul(g, mul(const(-0.5, ans), div(ans, x))),
       use_output=True)
defjvp(cbrt_p, lambda g, ans, x: mul(g, div(const(1 / 3, ans), mul(ans, ans))),
       use_output=True)
defjvp(erf_p, lambda g, x: mul(g, mul(const(2 / math.sqrt(math.pi), x),
                                      exp_p.bind(neg(mul(x, x))))))
for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p):
    defjvp_zero(_p)


def _integer_pow_jvp(g, x, *, y):
    if y == 0:
        return zeros_like(g)
    if y == 1:
        return g
    return mul(g, mul(const(y, x), integer_pow_p.bind(x, y=y - 1)))


defjvp(integer_pow_p, _integer_pow_jvp)


def _t_integer_pow(ct, x, *, y):
    if y != 1:
        raise TypeError(f"integer_pow with y={y} is not linear")
    return [ct]


transpose_rules[integer_pow_p] = _t_integer_pow


def _rem_jvp_y(g, x, y):
    # x % y = x - y * trunc(x / y): d/dy = -trunc(x / y)
    q = div(x, y)
    trunc = select(P.lt_p.bind(q, const(0, q)), ceil_p.bind(q), floor_p.bind(q))
    return neg(mul(g, trunc))


defjvp(rem_p, lambda g, x, y: g, _rem_jvp_y)


def _pow_jvp_x(g, x, y):
    # y * x ** (y - 1), taken as 0 where y == 0 (so 0 ** 0 has a zero derivative).
    one = const(1, y)
    jac = mul(y, pow_p.bind(x, sub(y, one)))
    jac = select(P.eq_p.bind(y, const(0, y)), zeros_like(jac) if aval(jac).shape else
                 const(0, jac), jac)
    return mul(g, jac)


def _pow_jvp_y(g, ans, x, y):
    # log(x) * x ** y, taken as 0 where x == 0 (the limit for y > 0).
    safe_x = select(P.eq_p.bind(x, const(0, x)), full_like(x, 1), x)
    jac = mul(log_p.bind(safe_x), ans)
    return mul(g, select(P.eq_p.bind(x, const(0, x)), full_like(jac, 0), jac))


def _pow_jvp(primals, tangents):
    x, y = primals
    ans = pow_p.bind(x, y)
    shape = aval(ans).shape
    out = Zero(aval(ans))
    if not isinstance(tangents[0], Zero):
        out = add_tangents(out, match_shape(_pow_jvp_x(tangents[0], x, y), shape))
    if not isinstance(tangents[1], Zero):
        out = add_tangents(out, match_shape(_pow_jvp_y(tangents[1], ans, x, y), shape))
    return [ans], [out]


jvp_rules[pow_p] = lambda primals, tangents: _pow_jvp(primals, tangents)


defjvp(atan2_p,
       lambda g, x, y: mul(g, div(y, add(mul(x, x), mul(y, y)))),
       lambda g, x, y: mul(g, div(neg(x), add(mul(x, x), mul(y, y)))))
