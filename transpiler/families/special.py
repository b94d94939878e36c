"""Special-function, bit-level and complex-part primitives, with every rule for them:
erf_inv, erfc, lgamma, digamma, population_count, clz, bitcast_convert_type (equal widths),
real, imag, conj, complex, and fma.

* ``erfc``, ``lgamma``, ``digamma`` and float64 ``erf_inv`` lower to CHLO's ops of those
  names, which IREE expands into polynomials (accurate in float64 too for erf_inv and erfc).
  ``erf_inv`` of 32 bits and less is float32_math's formula, rounded as JAX's. The float64
  expansions of lgamma and digamma call libm's sin/cos, which IREE's embedded linker lacks
  ("undefined symbol: sin"), so float64 has its own formulas here (reflection, recurrence up
  to 15, Stirling/asymptotic series with Bernoulli numbers), written with ``ElementwiseOps``.
  digamma's derivative, trigamma, is a composition of primitives.
* ``population_count`` and ``clz`` are StableHLO's ``popcnt`` and ``count_leading_zeros``.
* ``bitcast_convert_type`` reinterprets bits between types of equal widths (the shape is
  kept). IREE 3.13 crashes ("could not reify") on StableHLO's width-changing bit casts of
  dynamically shaped tensors, which eager mode uses, so lax builds those from shifts.
* ``fma`` is a fused multiply-add (``a * b + c`` rounded once), lowered to ``math.fma``. The
  random samplers use it to round exactly where XLA's CPU backend fuses, so that draws are
  bit for bit JAX's eagerly too (IREE's LLVM backend contracts a single-use multiply feeding
  an add under jit, as XLA does; eager mode runs each primitive alone and never would).
* The complex parts are linear: their transposes follow JAX's convention (the real inner
  product Re(a conj b)).

All join primitives.ELEMENTWISE, so that eager mode runs them on flat views (one kernel per
dtype), and they batch and partition by the elementwise rules (fma has its own batching).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import Primitive, TypedScalar, abstract_eval_rules
from ..interpreters.ad import Zero
from ..interpreters.ad_rules import (add, aval, const, defjvp, defjvp_zero, deflinear, div, mul,
                                     neg, select, sub)
from ..interpreters import batching
from ..backend import float32_math
from ..backend.lower import (BF16_KEPT_PRIMITIVES, ElementwiseOps, RuleContext, float32_formula,
                             hlo, lowering_rules, op, tensor_type)
from . import math_functions as M

_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)


erf_inv_p = P.unary_primitive("erf_inv", P.REAL_FLOATING)
lgamma_p = P.unary_primitive("lgamma", P.REAL_FLOATING)
digamma_p = P.unary_primitive("digamma", P.REAL_FLOATING)
population_count_p = P.unary_primitive("population_count", P.INTEGER)
clz_p = P.unary_primitive("clz", P.INTEGER)


def _chlo_rule(name: str, f64_formula=None):
    def rule(ctx: RuleContext, x):
        if ctx.avals_in[0].dtype == _F64 and f64_formula is not None:
            ops = ElementwiseOps(ctx, x, ctx.avals_out[0].shape)
            return f64_formula(ops, ops.wrap(x, _F64)).value
        return op("chlo." + name, [ctx.out_type()], [x]).result
    return rule




def _erf_inv_rule(ctx: RuleContext, x):
    if ctx.avals_in[0].dtype == _F64:
        return op("chlo.erf_inv", [ctx.out_type()], [x]).result
    # float32 rounds as XLA's CPU code does, so random.normal is bit for bit JAX's.
    return float32_formula(ctx, float32_math.erf_inv, x)


lowering_rules[erf_inv_p] = _erf_inv_rule
lowering_rules[population_count_p] = lambda ctx, x: hlo("popcnt", ctx.out_type(), x)
lowering_rules[clz_p] = lambda ctx, x: hlo("count_leading_zeros", ctx.out_type(), x)

for _p in (population_count_p, clz_p):
    defjvp_zero(_p)
defjvp(erf_inv_p, lambda g, ans, x: mul(g, mul(const(math.sqrt(math.pi) / 2, ans),
                                               M.exp_p.bind(mul(ans, ans)))), use_output=True)
defjvp(lgamma_p, lambda g, x: mul(g, digamma_p.bind(x)))
defjvp(digamma_p, lambda g, x: mul(g, trigamma(x)))


# -- float64 formulas --------------------------------------------------------------------------

def _bernoulli_even(count: int) -> list:
    """B_2, B_4, ..., B_{2 count} as Fractions (from the recurrence sum_k C(n+1, k) B_k = 0)."""
    b = [Fraction(1)]
    for n in range(1, 2 * count + 1):
        b.append(-sum(math.comb(n + 1, k) * b[k] for k in range(n)) / (n + 1))
    return [b[2 * k] for k in range(1, count + 1)]


_ASYMPTOTIC_TERMS = 8
_B = _bernoulli_even(_ASYMPTOTIC_TERMS)
# lgamma y = (y - 1/2) log y - y + log(2 pi)/2 + (1/y) sum_k LGAMMA[k] y**(-2k)
_LGAMMA = tuple(float(b / ((2 * k + 2) * (2 * k + 1))) for k, b in enumerate(_B))
# digamma y = log y - 1/(2y) - sum_k DIGAMMA[k] y**(-2k-2)
_DIGAMMA = tuple(float(b / (2 * k + 2)) for k, b in enumerate(_B))
# trigamma y = 1/y + 1/(2 y**2) + (1/y**3) sum_k TRIGAMMA[k] y**(-2k)
_TRIGAMMA = tuple(float(b) for b in _B)
# Below this the argument is shifted up by the recurrences first; from here the series'
# first omitted term is below 2**-64 of the result.
_ASYMPTOTIC_FROM = 15.0
# sin(pi r) = pi r * sum_k SIN_PI[k] (pi r)**(2k), cos(pi r) = sum_k COS_PI[k] (pi r)**(2k),
# for |r| <= 1/2: the first omitted terms are below 2**-60.
_SIN_PI = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(12))
_COS_PI = tuple((-1) ** k / math.factorial(2 * k) for k in range(12))


def _horner(coefficients, z):
    acc = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = acc * z + c
    return acc


def _sin_cos_pi(m, x):
    """(sin(pi r), cos(pi r), r) with r = x - round(x), |r| <= 1/2: sin(pi x) and cos(pi x)
    up to a common sign (-1)**round(x), exact reduction (x - round(x) has no rounding)."""
    r = x - m.round_even(x)
    t = r * math.pi
    z = t * t
    return t * _horner(_SIN_PI, z), _horner(_COS_PI, z), r


def _shift_up(m, x, step):
    """Apply the recurrence while y < _ASYMPTOTIC_FROM: ``step(acc, y)`` accumulates per step,
    for x >= 1/2 (at most 15 steps)."""
    y, acc = x, None
    for _ in range(int(_ASYMPTOTIC_FROM)):
        small = y < _ASYMPTOTIC_FROM
        acc = step(acc, y, small)
        y = m.select(small, y + 1.0, y)
    return y, acc


def _lgamma_f64(m, x):
    # Reflection below 1/2: lgamma x = log(pi / |sin(pi x)|) - lgamma(1 - x).
    reflect = x < 0.5
    z = m.select(reflect, 1.0 - x, x)
    # lgamma z = lgamma(z + n) - log(z (z+1) ... (z+n-1)).
    y, product = _shift_up(m, z, lambda acc, y, small: m.select(
        small, y if acc is None else acc * y, 1.0 if acc is None else acc))
    inv = 1.0 / y
    series = (y - 0.5) * m.log(y) - y + 0.5 * math.log(2 * math.pi) + \
        inv * _horner(_LGAMMA, inv * inv)
    result = series - m.log(product)
    sin, _, _ = _sin_cos_pi(m, x)
    reflected = math.log(math.pi) - m.log(m.abs(sin)) - result
    result = m.select(reflect, reflected, result)
    # +-inf: lgamma is +inf (the series would give inf - inf).
    return m.select(m.abs(x) == float("inf"), float("inf"), result)


def _digamma_f64(m, x):
    # Reflection below 1/2: digamma x = digamma(1 - x) - pi cot(pi x); NaN at the poles
    # x = 0, -1, -2, ... (as XLA).
    reflect = x < 0.5
    z = m.select(reflect, 1.0 - x, x)
    y, total = _shift_up(m, z, lambda acc, y, small: m.select(
        small, 1.0 / y if acc is None else acc + 1.0 / y, 0.0 if acc is None else acc))
    inv = 1.0 / y
    inv2 = inv * inv
    result = m.log(y) - 0.5 * inv - inv2 * _horner(_DIGAMMA, inv2) - total
    sin, cos, r = _sin_cos_pi(m, x)
    reflected = result - math.pi * cos / sin
    result = m.select(reflect, reflected, result)
    result = m.select(reflect & (r == 0.0), float("nan"), result)
    return m.select(x == float("inf"), float("inf"), result)


lowering_rules[lgamma_p] = _chlo_rule("lgamma", _lgamma_f64)
_chlo_digamma = _chlo_rule("digamma", _digamma_f64)


def _digamma_rule(ctx: RuleContext, x):
    result = _chlo_digamma(ctx, x)
    if ctx.avals_in[0].dtype == _F64:
        return result
    # IREE's expansion gives -inf at 0; XLA's (and JAX's) digamma is NaN at every pole.
    ops = ElementwiseOps(ctx, x, ctx.avals_out[0].shape)
    dtype = ctx.avals_in[0].dtype
    xv, rv = ops.wrap(x, dtype), ops.wrap(result, dtype)
    pole = (xv <= ops.constant(0.0, dtype)) & (ops.floor(xv) == xv)
    return ops.select(pole, ops.constant(float("nan"), dtype), rv).value


lowering_rules[digamma_p] = _digamma_rule


def trigamma(x):
    """polygamma(1, x), digamma's derivative, composed from primitives (so that it has
    derivatives, batching and eager mode of its own)."""
    def c(v):
        return const(v, x)

    def where(pred, a, b):
        return P.select_p.bind(pred, a, b)

    reflect = P.lt_p.bind(x, c(0.5))
    z = where(reflect, sub(c(1.0), x), x)
    y, total = z, None
    for _ in range(int(_ASYMPTOTIC_FROM)):
        small = P.lt_p.bind(y, c(_ASYMPTOTIC_FROM))
        term = where(small, M.integer_pow_p.bind(y, y=-2), c(0.0))
        total = term if total is None else add(total, term)
        y = where(small, add(y, c(1.0)), y)
    inv = M.integer_pow_p.bind(y, y=-1)
    inv2 = mul(inv, inv)
    series = add(add(inv, mul(c(0.5), inv2)), mul(mul(inv2, inv), _poly(_TRIGAMMA, inv2, x)))
    result = add(series, total)
    # trigamma x + trigamma(1 - x) = pi**2 / sin(pi x)**2
    r = sub(x, M.round_p.bind(x, rounding_method=1))
    sin = M.sin_p.bind(mul(r, c(math.pi)))
    reflected = sub(div(c(math.pi ** 2), mul(sin, sin)), result)
    return where(reflect, reflected, result)


def _poly(coefficients, z, like):
    acc = const(coefficients[-1], like)
    for co in reversed(coefficients[:-1]):
        acc = add(mul(acc, z), const(co, like))
    return acc


# -- erfc ---------------------------------------------------------------------------------------

erfc_p = P.unary_primitive("erfc", P.REAL_FLOATING)
lowering_rules[erfc_p] = _chlo_rule("erfc")
defjvp(erfc_p, lambda g, x: mul(g, mul(const(-2 / math.sqrt(math.pi), x),
                                       M.exp_p.bind(neg(mul(x, x))))))


# -- bit cast of equal widths -----------------------------------------------------------------

bitcast_p = Primitive("bitcast_convert_type")
BF16_KEPT_PRIMITIVES.add(bitcast_p)   # (the bits, not the value)


def _bitcast_abstract_eval(x: ShapedArray, *, new_dtype: np.dtype) -> ShapedArray:
    new_dtype = np.dtype(new_dtype)
    for d in (x.dtype, new_dtype):
        if d == np.bool_ or d.kind == "c":
            raise TypeError(f"bitcast_convert_type does not support {d.name}")
    if x.dtype.itemsize != new_dtype.itemsize:
        raise TypeError(f"bitcast_convert_type primitive needs equal widths, got "
                        f"{x.dtype.name} and {new_dtype.name}")
    return ShapedArray(x.shape, new_dtype, False)


abstract_eval_rules[bitcast_p] = _bitcast_abstract_eval
lowering_rules[bitcast_p] = lambda ctx, x, *, new_dtype: hlo("bitcast_convert", ctx.out_type(), x)
defjvp_zero(bitcast_p)


# -- complex parts -----------------------------------------------------------------------------

_COMPLEX_OF = {np.dtype(np.float32): np.dtype(np.complex64),
               np.dtype(np.float64): np.dtype(np.complex128)}
_REAL_OF = {c: f for f, c in _COMPLEX_OF.items()}


def _part_prim(name: str) -> Primitive:
    prim = Primitive(name)

    def rule(x: ShapedArray) -> ShapedArray:
        if x.dtype.kind != "c":
            raise TypeError(f"{name} takes complex numbers, got {x.dtype.name}")
        return ShapedArray(x.shape, _REAL_OF[x.dtype], x.weak_type)

    abstract_eval_rules[prim] = rule
    lowering_rules[prim] = lambda ctx, x: hlo(name, ctx.out_type(), x)
    return prim


real_p = _part_prim("real")
imag_p = _part_prim("imag")
conj_p = Primitive("conj")
complex_p = Primitive("complex")


def _conj_abstract_eval(x: ShapedArray) -> ShapedArray:
    if x.dtype.kind != "c":
        raise TypeError(f"conj takes complex numbers, got {x.dtype.name}")
    return x


def _complex_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    P.same_dtypes("complex", [x, y])
    if x.dtype not in _COMPLEX_OF:
        raise TypeError(f"complex takes float32 or float64 parts, got {x.dtype.name}")
    shape = P.broadcast_shapes("complex", [x, y])
    return ShapedArray(shape, _COMPLEX_OF[x.dtype], x.weak_type and y.weak_type)


def _conj_lowering(ctx: RuleContext, x):
    part = tensor_type(ctx.avals_in[0].update(dtype=_REAL_OF[ctx.avals_in[0].dtype]),
                       ctx.dynamic)
    return hlo("complex", ctx.out_type(), hlo("real", part, x),
               hlo("negate", part, hlo("imag", part, x)))


def _complex_lowering(ctx: RuleContext, x, y):
    from ..backend.lower import _from_data_tiled_product, broadcast_to_result, fusion_barrier
    if not ctx.dynamic:
        # IREE 3.13 fails to compile a data-tiled product whose result a complex op reads in
        # the same dispatch ("'vector.transfer_read' op requires valid padding vector
        # elemental type"): a barrier keeps them apart.
        x, y = [fusion_barrier(v) if _from_data_tiled_product(v) else v for v in (x, y)]
    x, y = broadcast_to_result(ctx, [x, y], ctx.avals_in, ctx.avals_out[0])
    return hlo("complex", ctx.out_type(), x, y)


abstract_eval_rules[conj_p] = _conj_abstract_eval
abstract_eval_rules[complex_p] = _complex_abstract_eval
lowering_rules[conj_p] = _conj_lowering
lowering_rules[complex_p] = _complex_lowering
for _p in (conj_p, complex_p):
    batching.batching_rules[_p] = batching._elementwise_rule(_p)


def _t_real(ct, x):
    if isinstance(ct, Zero):
        return [None]
    return [complex_p.bind(ct, TypedScalar(0, aval(ct).dtype, False))]


def _t_imag(ct, x):
    # <imag z, c> = <z, -i c> for the real inner product Re(a conj(b)) of JAX's convention.
    if isinstance(ct, Zero):
        return [None]
    return [complex_p.bind(TypedScalar(0, aval(ct).dtype, False), neg(ct))]


def _t_conj(ct, x):
    return [None if isinstance(ct, Zero) else conj_p.bind(ct)]


def _t_complex(ct, x, y):
    if isinstance(ct, Zero):
        return [None, None]
    from ..interpreters.ad import is_undefined
    from ..interpreters.ad_rules import sum_to
    re = sum_to(real_p.bind(ct), aval(x).shape) if is_undefined(x) else None
    im = sum_to(neg(imag_p.bind(ct)), aval(y).shape) if is_undefined(y) else None
    return [re, im]


deflinear(real_p, _t_real)
deflinear(imag_p, _t_imag)
deflinear(conj_p, _t_conj)
deflinear(complex_p, _t_complex)


# -- abs (of real and complex numbers) ----------------------------------------------------------

def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else (
        np.dtype(np.float64) if dtype == np.complex128 else dtype)


abs_p = P.unary_primitive("abs", P.NUMERIC, _real_dtype)


def _abs_lowering(ctx: RuleContext, x):
    if ctx.avals_in[0].dtype.kind == "u":
        return x
    return hlo("abs", ctx.out_type(), x)


lowering_rules[abs_p] = _abs_lowering


def _abs_jvp(g, x):
    """d|x| = sign(x) dx for real x, with slope +1 at +0.0 and -0.0 as in JAX (so grad of an
    L1 penalty at a zero parameter is JAX's subgradient, not 0); for complex x, |x| is real
    and d|x| = Re(conj(x / |x|) dx) (jnp.abs of a complex array under grad)."""
    if aval(x).dtype.kind != "c":
        return select(P.ge_p.bind(x, const(0, x)), g, neg(g))
    return real_p.bind(mul(conj_p.bind(M.sign_p.bind(x)), g))


defjvp(abs_p, _abs_jvp)


fma_p = Primitive("fma")


def _fma_rule(a: ShapedArray, b: ShapedArray, c: ShapedArray) -> ShapedArray:
    for x in (a, b, c):
        P.check_kinds("fma", x, *P.REAL_FLOATING)
    if not a.shape == b.shape == c.shape or not a.dtype == b.dtype == c.dtype:
        raise TypeError(f"fma takes operands of one shape and dtype, got {a.str_short()}, "
                        f"{b.str_short()} and {c.str_short()}")
    return ShapedArray(a.shape, a.dtype, a.weak_type and b.weak_type and c.weak_type)


abstract_eval_rules[fma_p] = _fma_rule
lowering_rules[fma_p] = lambda ctx, a, b, c: op("math.fma", [ctx.out_type()], [a, b, c]).result


def _fma_batching(axis, values, dims):
    # fma's operands have one shape (math.fma takes no implicit broadcast), so unbatched ones,
    # rank 0 included, are broadcast along the batch axis too; the generic elementwise rule
    # leaves rank-0 operands as they are.
    dim = next(d for d in dims if d is not None)
    args = [batching.broadcast_batched(v, axis.size, dim) if d is None
            else batching.moveaxis(v, d, dim) for v, d in zip(values, dims)]
    return [fma_p.bind(*args)], [dim]


batching.batching_rules[fma_p] = _fma_batching


defjvp(fma_p, lambda g, a, b, c: mul(g, b), lambda g, a, b, c: mul(a, g),
       lambda g, a, b, c: g)

# (The unary ones joined it when declared.)
P.ELEMENTWISE.update({bitcast_p, real_p, imag_p, conj_p, fma_p})
