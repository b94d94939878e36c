"""Primitives of the incomplete gamma family, with every rule for them:

* ``igamma`` P(a, x) and ``igammac`` Q(a, x) = 1 - P, the regularized incomplete gamma
  functions, differentiable in both operands (d/dx is the Gamma(a, 1) density, d/da is
  ``igamma_grad_a``);
* ``igamma_grad_a`` dP/da, ``random_gamma_grad`` the implicit derivative dx/da of a
  Gamma(a, 1) draw x, and ``log_gamma_sample_grad`` d log x / da from log x (pyree.random's
  log-space samplers); these three have no derivatives of their own.

Each is elementwise over operands of one shape (or rank 0), and is lowered by inlining its
implementation below, traced at lowering time: a while loop over the whole array, in float64.
As primitives (rather than compositions in pyree.lax) they are batched as the elementwise
functions they are: under vmap the batch axis is just more elements, where a composed while
loop would become a per-example loop (which IREE 3.13 failed to compile here: "operand does
not dominate this use"); eagerly, each runs as one program compiled per shape.

The mathematics:

P(a, x) = gamma(a, x) / Gamma(a) and Q = 1 - P, with their derivatives in a, by the classic
pair of expansions (as in Numerical Recipes / Cephes):

* x < 1 or x <= a: the series P = D_p S, D_p = x^a e^-x / Gamma(a + 1), S = sum_n t_n with
  t_0 = 1, t_n = t_{n-1} x / (a + n);
* otherwise Legendre's continued fraction Q = D_q C, D_q = x^a e^-x / Gamma(a),
  C = 1/(x+1-a - 1(1-a)/(x+3-a - 2(2-a)/(x+5-a - ...))), evaluated by its three-term
  recurrence (numerators A_n, denominators B_n).

The derivatives in a are carried along (t'_n, S'; A'_n, B'_n, C'), so that with
L_p = log x - digamma(a + 1) and L_q = log x - digamma(a):
  dP/da = D_p (L_p S + S')             (series)     = -D_q (L_q C + C')      (fraction)
and the implicit derivative of a Gamma(a, 1) draw, dx/da = -(dP/da)(a, x) / p(a, x) with the
density p = D_p a / x = D_q / x, in which the prefactor cancels:
  dx/da = -(x / a)(L_p S + S')         (series)     = x (L_q C + C')          (fraction)
(and d log x / da = dx/da / x needs only log x, which keeps it finite where x underflows).

The work is done in float64 whatever the operands' dtype (and even with x64 off, through the
primitives, which do not canonicalise): float32's rounding of a log x - x - lgamma(a) alone
costs ~1e-3 relative at a ~ 1e3. The loops stop once the float32 (or float64) result has
converged, so a float32 caller pays few iterations more than a float32 evaluation would.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from pyree import dtypes

from ..core.ir import ShapedArray
from ..core import primitives as P
from ..core.trace import Primitive, TypedScalar, abstract_eval_rules, get_aval, trace_region
from ..interpreters.ad_rules import defjvp, mul, neg
from ..interpreters import batching
from ..backend import eager
from ..backend.lower import Lowering, RuleContext, lowering_rules
from .control_flow import while_p
from . import math_functions as M
from . import special as S

_WIDE = np.dtype(np.float64)
# A backstop: at a ~ 1e5 near x = a the series needs about 2000 terms for float64 precision.
_MAX_INCOMPLETE_GAMMA_TERMS = 2000
# Continued-fraction numerators and denominators are rescaled by this power of two (exactly)
# once they pass its inverse, long before float64 overflows.
_CF_RESCALE = 2.0 ** -256


class _Wide:
    """An array with arithmetic bound straight to the primitives (``jnp`` would canonicalise
    float64 to float32 when x64 is off). Python numbers become constants of its dtype."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def _o(self, other: Any) -> Any:
        if isinstance(other, _Wide):
            return other.v
        return TypedScalar(other, get_aval(self.v).dtype, False)

    def __add__(self, o): return _Wide(P.add_p.bind(self.v, self._o(o)))
    def __radd__(self, o): return _Wide(P.add_p.bind(self._o(o), self.v))
    def __sub__(self, o): return _Wide(P.sub_p.bind(self.v, self._o(o)))
    def __rsub__(self, o): return _Wide(P.sub_p.bind(self._o(o), self.v))
    def __mul__(self, o): return _Wide(P.mul_p.bind(self.v, self._o(o)))
    def __rmul__(self, o): return _Wide(P.mul_p.bind(self._o(o), self.v))
    def __truediv__(self, o): return _Wide(P.div_p.bind(self.v, self._o(o)))
    def __rtruediv__(self, o): return _Wide(P.div_p.bind(self._o(o), self.v))
    def __neg__(self): return _Wide(P.neg_p.bind(self.v))
    def __lt__(self, o): return _Wide(P.lt_p.bind(self.v, self._o(o)))
    def __le__(self, o): return _Wide(P.le_p.bind(self.v, self._o(o)))
    def __gt__(self, o): return _Wide(P.gt_p.bind(self.v, self._o(o)))
    def __ge__(self, o): return _Wide(P.ge_p.bind(self.v, self._o(o)))
    def eq(self, o): return _Wide(P.eq_p.bind(self.v, self._o(o)))
    def __and__(self, o): return _Wide(P.and_p.bind(self.v, o.v))
    def __or__(self, o): return _Wide(P.or_p.bind(self.v, o.v))
    def __invert__(self): return _Wide(P.not_p.bind(self.v))

    def abs(self): return _Wide(S.abs_p.bind(self.v))
    def log(self): return _Wide(M.log_p.bind(self.v))
    def exp(self): return _Wide(M.exp_p.bind(self.v))
    def lgamma(self): return _Wide(S.lgamma_p.bind(self.v))
    def digamma(self): return _Wide(S.digamma_p.bind(self.v))
    def isnan(self): return _Wide(P.ne_p.bind(self.v, self.v))

    def where(self, pred: "_Wide", other: Any) -> "_Wide":
        """``self`` where ``pred``, else ``other``."""
        other = self._o(other)
        if get_aval(other).shape != get_aval(self.v).shape:
            other = _broadcast(other, get_aval(self.v).shape)
        return _Wide(P.select_p.bind(pred.v, self.v, other))


def _broadcast(v: Any, shape: tuple) -> Any:
    """Rank-0 ``v`` broadcast to ``shape``."""
    return P.broadcast_in_dim_p.bind(v, shape=tuple(shape), broadcast_dimensions=())


def _full(value: float, like: _Wide) -> _Wide:
    aval = get_aval(like.v)
    return _Wide(_broadcast(TypedScalar(value, aval.dtype, False), aval.shape))


def _incomplete_gamma_sums(a: _Wide, x: _Wide, use_fraction: _Wide, active: _Wide, tol: float,
                           derivative: bool, log_x: _Wide) -> tuple:
    """The series (S, S') and the continued fraction (C, C') of the comment above, each where
    ``use_fraction`` says, iterated (one while loop over the whole array) until the lanes in
    ``active`` have converged to ``tol``. Without ``derivative``, S' and C' are not computed.
    """
    ndim = len(get_aval(a.v).shape)
    zero, one = _full(0.0, a), _full(1.0, a)
    # Scale of the derivative terms (L S resp. L C stand beside S' resp. C' in the result).
    l_series = (log_x - (a + 1.0).digamma()).abs() if derivative else None
    l_fraction = (log_x - a.digamma()).abs() if derivative else None
    b1 = x + 1.0 - a
    c1 = 1.0 / b1
    # State: k, done; series t, S (t', S'); fraction A_{n-1}, A_{n-2}, B_{n-1}, B_{n-2}, C
    # (and their derivatives).
    series = [one, one] + ([zero, zero] if derivative else [])
    fraction = [one, zero, b1, one, c1] + ([zero, zero, -one, zero, c1 * c1] if derivative
                                          else [])
    counter = _broadcast(TypedScalar(1.0, get_aval(a.v).dtype, False), ())
    init = [counter, (~active).v] + [w.v for w in series + fraction]

    def not_done(*state):
        k, done = state[0], state[1]
        pending = P.reduce_or_p.bind(P.not_p.bind(done), axes=tuple(range(ndim)))
        more = P.lt_p.bind(k, TypedScalar(_MAX_INCOMPLETE_GAMMA_TERMS, get_aval(k).dtype, False))
        return [P.and_p.bind(pending, more)]

    def step(*state):
        k, done = _Wide(state[0]), _Wide(state[1])
        vals = [_Wide(v) for v in state[2:]]
        s_vals, f_vals = vals[:len(series)], vals[len(series):]
        run_series = ~done & ~use_fraction
        run_fraction = ~done & use_fraction
        # Series: t_k = t_{k-1} x / (a + k); d t_k = d t_{k-1} x / (a + k) - t_k / (a + k).
        term, total = s_vals[0], s_vals[1]
        r = a + k
        new_term = term * x / r
        new_total = total + new_term
        # The tail beyond t_k is below t_k q / (1 - q), q = x / (a + k + 1) < 1 (x < a + 1).
        tail_factor = x / (r + 1.0 - x)
        series_ok = new_term * tail_factor <= new_total * tol
        new_series = [new_term, new_total]
        if derivative:
            d_term, d_total = s_vals[2], s_vals[3]
            new_d_term = d_term * x / r - new_term / r
            new_d_total = d_total + new_d_term
            scale = new_d_total.abs() + l_series * new_total
            series_ok = series_ok & (new_d_term.abs() * (tail_factor + 1.0) <= scale * tol)
            new_series += [new_d_term, new_d_total]
        # Fraction: step n = k + 1 with partial numerator k (a - k), denominator x + 2k + 1 - a.
        num = k * (a - k)
        den = x + 2.0 * k + 1.0 - a
        a_prev, a_prev2, b_prev, b_prev2, c_old = f_vals[:5]
        a_new = den * a_prev + num * a_prev2
        b_new = den * b_prev + num * b_prev2
        nonzero = ~b_new.eq(0.0)
        c_new = (a_new / b_new).where(nonzero, c_old)
        fraction_ok = (c_new - c_old).abs() <= c_new.abs() * tol
        updated = [a_new, a_prev, b_new, b_prev, c_new]
        if derivative:
            da_prev, da_prev2, db_prev, db_prev2, dc_old = f_vals[5:]
            # d(den)/da = -1, d(num)/da = k.
            da_new = den * da_prev - a_prev + num * da_prev2 + k * a_prev2
            db_new = den * db_prev - b_prev + num * db_prev2 + k * b_prev2
            dc_new = ((da_new - c_new * db_new) / b_new).where(nonzero, dc_old)
            scale = dc_new.abs() + l_fraction * c_new.abs()
            fraction_ok = fraction_ok & ((dc_new - dc_old).abs() <= scale * tol)
            updated += [da_new, da_prev, db_new, db_prev, dc_new]
        # Rescale the recurrence's terms together (C and C' are ratios, unchanged).
        big = b_new.abs() > 1.0 / _CF_RESCALE
        for i, w in enumerate(updated):
            if i % 5 != 4:
                updated[i] = (w * _CF_RESCALE).where(big, w)
        new_series = [n.where(run_series, o) for n, o in zip(new_series, s_vals)]
        updated = [n.where(run_fraction, o) for n, o in zip(updated, f_vals)]
        converged = (run_series & series_ok) | (run_fraction & fraction_ok)
        return [(k + 1.0).v, (done | converged).v] + [w.v for w in new_series + updated]

    out = [_Wide(v) for v in _while(not_done, step, init)[2:]]
    s_vals, f_vals = out[:len(series)], out[len(series):]
    total, fraction = s_vals[1], f_vals[4]
    if not derivative:
        return total, None, fraction, None
    return total, s_vals[3], fraction, f_vals[9]


def _to_wide(v: Any) -> _Wide:
    if get_aval(v).dtype == _WIDE:
        return _Wide(v)
    return _Wide(P.convert_element_type_p.bind(v, new_dtype=_WIDE, weak_type=False))


def _from_wide(w: _Wide, dtype: np.dtype) -> Any:
    if dtype == _WIDE:
        return w.v
    return P.convert_element_type_p.bind(w.v, new_dtype=dtype, weak_type=False)


_VALUE_KINDS = ("igamma", "igammac")


def _incomplete_gamma(kind: str, a_in: Any, x_in: Any) -> Any:
    """One of the incomplete-gamma family for arrays ``a_in``, ``x_in`` of one shape, in
    ``a_in``'s dtype. ``kind``: ``igamma``, ``igammac``, ``igamma_grad_a``,
    ``random_gamma_grad``, ``log_sample_grad`` (d log x / da with ``x_in`` holding log x), or
    ``density`` (the Gamma(a, 1) density).
    """
    if kind == "density":
        return _gamma_density(a_in, x_in)
    shape = np.broadcast_shapes(get_aval(a_in).shape, get_aval(x_in).shape)
    a_in, x_in = (v if get_aval(v).shape == shape else _broadcast(v, shape) for v in (a_in, x_in))
    if math.prod(shape) == 1:
        # IREE 3.13 folds the unit dimensions of a one-element problem away and fuses all the
        # work before the loop into one dispatch with an output per live value, over its 32
        # buffer bindings. Two copies of the element keep the ordinary fusion.
        pair = [_broadcast(P.reshape_p.bind(v, new_sizes=()), (2,)) for v in (a_in, x_in)]
        out = _incomplete_gamma(kind, *pair)
        first = P.slice_p.bind(out, start_indices=(0,), limit_indices=(1,), strides=(1,))
        return P.reshape_p.bind(first, new_sizes=tuple(shape))
    out_dtype = get_aval(a_in).dtype
    # igammac takes 1 - P where the series runs (x < 1 or x <= a), small for small a and x
    # near 1: P's absolute error must be small against Q, so its series runs to float64's eps.
    tol = float(np.finfo(np.float64).eps if out_dtype == _WIDE or kind == "igammac"
                else np.finfo(np.float32).eps / 16)
    a = _to_wide(a_in)
    if kind == "log_sample_grad":
        # A draw of exactly 0 (log -inf) counts as the smallest normal number of its dtype,
        # as in JAX: its derivative stays finite (and so do products with it).
        log_x = _to_wide(x_in)
        floor = float(np.log(float(dtypes.finfo(out_dtype).tiny)))
        log_x = log_x.where(log_x > floor, floor).where(~log_x.isnan(), math.nan)
        x = log_x.exp()
    else:
        x = _to_wide(x_in)
    # Subnormal operands count as 0 throughout (the CPU flushes them in some operations and
    # not in others, which would mix x = 0 with log x = -inf).
    tiny = float(dtypes.finfo(out_dtype).tiny)
    a = a.where(~(a.abs() < tiny), 0.0)
    x = x.where(~(x.abs() < tiny), 0.0)
    nan = a.isnan() | x.isnan()
    x_zero, x_inf = x.eq(0.0), x.eq(math.inf)
    a_zero, a_inf = a.eq(0.0), a.eq(math.inf)
    if kind in _VALUE_KINDS:
        bad = nan | (x < 0.0) | (a < 0.0) | (a_zero & x_zero)
        special = bad | x_zero | x_inf | a_zero | a_inf
    elif kind == "log_sample_grad":
        bad = nan | (a <= 0.0) | a_inf | x_inf
        special = bad
    else:
        bad = nan | (x < 0.0) | (a <= 0.0) | a_inf
        special = bad | x_zero | x_inf
    active = ~special
    # Stand-ins where the answer is fixed below, so that those lanes stop at once.
    a = a.where(active, 1.0)
    x = x.where(active, 1.0)
    if kind == "log_sample_grad":
        log_x = log_x.where(active, 0.0)
    else:
        log_x = x.log()
    # As Cephes: the fraction where x >= 1 and x > a (it converges fast there, and gives the
    # small Q of large x directly), the series elsewhere.
    use_fraction = (x >= 1.0) & (x > a)
    derivative = kind not in _VALUE_KINDS
    total, d_total, fraction, d_fraction = _incomplete_gamma_sums(
        a, x, use_fraction, active, tol, derivative, log_x)
    log_x_pow_exp = a * log_x - x  # log(x^a e^-x)
    if kind in _VALUE_KINDS:
        p_series = (log_x_pow_exp - (a + 1.0).lgamma()).exp() * total
        q_fraction = (log_x_pow_exp - a.lgamma()).exp() * fraction
        if kind == "igamma":
            out = p_series.where(~use_fraction, 1.0 - q_fraction)
            out = out.where(~a_inf, math.nan).where(~a_zero, 1.0).where(~x_inf, 1.0)
            out = out.where(~x_zero, 0.0)
        else:
            out = q_fraction.where(use_fraction, 1.0 - p_series)
            out = out.where(~a_inf, math.nan).where(~a_zero, 0.0).where(~x_inf, 0.0)
            out = out.where(~x_zero, 1.0)
        return _from_wide(out.where(~bad, math.nan), out_dtype)
    series_part = (log_x - (a + 1.0).digamma()) * total + d_total
    fraction_part = (log_x - a.digamma()) * fraction + d_fraction
    if kind == "igamma_grad_a":
        out = ((log_x_pow_exp - (a + 1.0).lgamma()).exp() * series_part).where(
            ~use_fraction, -(log_x_pow_exp - a.lgamma()).exp() * fraction_part)
        out = out.where(~(x_zero | x_inf), 0.0)
    elif kind == "random_gamma_grad":
        out = (-(x / a) * series_part).where(~use_fraction, x * fraction_part)
        out = out.where(~x_zero, 0.0).where(~x_inf, math.nan)
    else:
        out = (-series_part / a).where(~use_fraction, fraction_part)
    return _from_wide(out.where(~bad, math.nan), out_dtype)


def _gamma_density(a_in: Any, x_in: Any) -> Any:
    """The Gamma(a, 1) density x^(a-1) e^-x / Gamma(a) (igamma's derivative in x)."""
    out_dtype = get_aval(a_in).dtype
    shape = np.broadcast_shapes(get_aval(a_in).shape, get_aval(x_in).shape)
    a, x = (_to_wide(v if get_aval(v).shape == shape else _broadcast(v, shape))
            for v in (a_in, x_in))
    positive = x > 0.0
    safe_x = x.where(positive, 1.0)
    out = ((a - 1.0) * safe_x.log() - safe_x - a.lgamma()).exp()
    # At x = 0: infinite below a = 1, 1 at a = 1, 0 above.
    at_zero = _full(0.0, a).where(a > 1.0, 1.0).where(a >= 1.0, math.inf)
    out = out.where(positive, at_zero.where(x.eq(0.0), 0.0))
    return _from_wide(out.where(~(a.isnan() | x.isnan()), math.nan), out_dtype)




def _while(cond: Callable, body: Callable, init: Sequence[Any]) -> list:
    """A while loop of flat carries (``cond(*carry) -> [pred]``, ``body(*carry) -> carry``)."""
    avals = [get_aval(v) for v in init]
    cond_ir, cond_consts = trace_region(cond, avals)
    body_ir, body_consts = trace_region(body, avals)
    return while_p.bind(*cond_consts, *body_consts, *init, cond_ir=cond_ir, body_ir=body_ir,
                        cond_nconsts=len(cond_consts), body_nconsts=len(body_consts))


# -- the primitives ---------------------------------------------------------------------------

def _primitive(name: str, kind: str, same_dtypes: bool) -> Primitive:
    prim = Primitive(name)

    def abstract_eval(a: ShapedArray, x: ShapedArray) -> ShapedArray:
        for v in (a, x):
            P.check_kinds(name, v, *P.REAL_FLOATING)
        if same_dtypes and a.dtype != x.dtype:
            raise TypeError(f"{name} requires operands of one dtype, got {a.dtype.name} and "
                            f"{x.dtype.name}")
        if a.shape != x.shape and a.shape and x.shape:
            raise TypeError(f"{name} takes operands of one shape (or rank 0), got {a.shape} "
                            f"and {x.shape}")
        return ShapedArray(a.shape or x.shape, a.dtype, a.weak_type and x.weak_type)

    def lowering(ctx: RuleContext, a, x):
        region, consts = trace_region(lambda a, x: [_incomplete_gamma(kind, a, x)],
                                      ctx.avals_in)
        assert not consts, "the implementation captures no values"
        sub = Lowering(ctx.dynamic)
        sub._input_views = ctx.lowering._input_views
        return sub.lower_ir(region, [a, x])[0]

    abstract_eval_rules[prim] = abstract_eval
    lowering_rules[prim] = lowering
    batching.batching_rules[prim] = batching._elementwise_rule(prim)
    # Eagerly: one program per shape (the lowering's loop needs static shapes).
    eager.STATIC_SHAPE_PRIMITIVES.add(prim)
    return prim


igamma_p = _primitive("igamma", "igamma", True)
igammac_p = _primitive("igammac", "igammac", True)
igamma_grad_a_p = _primitive("igamma_grad_a", "igamma_grad_a", True)
random_gamma_grad_p = _primitive("random_gamma_grad", "random_gamma_grad", False)
log_gamma_sample_grad_p = _primitive("log_gamma_sample_grad", "log_sample_grad", False)
# d igamma / dx, the Gamma(a, 1) density (as one primitive so that eager JVPs run one program).
igamma_grad_x_p = _primitive("igamma_grad_x", "density", True)


defjvp(igamma_p, lambda g, a, x: mul(g, igamma_grad_a_p.bind(a, x)),
       lambda g, a, x: mul(g, igamma_grad_x_p.bind(a, x)))
defjvp(igammac_p, lambda g, a, x: neg(mul(g, igamma_grad_a_p.bind(a, x))),
       lambda g, a, x: neg(mul(g, igamma_grad_x_p.bind(a, x))))
