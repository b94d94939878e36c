"""The primitive behind ``lax.custom_linear_solve``: a linear solve whose derivatives come from
implicit differentiation instead of differentiating the solver.

``custom_linear_solve[matvec, solve, transpose_solve, counts] *consts, *b`` computes ``x =
solve(b)``, the user's solver (a region, inlined when lowered), for the linear map ``matvec``
(``A``). The operands are the values each region captured (``counts`` says how many each:
matvec's, solve's, transpose_solve's), then the right-hand side's leaves.

* JVP: ``A x = b`` gives ``A dx = db - dA x``, so ``dx`` is this same solve of
  ``db - (jvp of matvec in its captured values) x``: linear in the tangents.
* Transpose (reverse mode): the transpose of ``b -> A^-1 b`` is ``c -> A^-T c``, the solve of
  the transposed system with ``transpose_solve`` and ``matvec``'s transpose, so the user's
  solver never has to be transposable (an iterative one, with a while loop, is fine).
* vmap: each region is batched; the result is batched.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from ..core.ir import IR, ClosedIR
from ..core.source import where
from ..core.trace import Primitive, abstract_eval_rules
from ..interpreters import ad
from ..interpreters.ad import Zero, instantiate, is_undefined, jvp_rules, transpose_rules
from ..interpreters.batching import batch_region, batching_rules, to_front
from ..backend import eager
from ..backend.lower import Lowering, RuleContext, lowering_rules

linear_solve_p = Primitive("custom_linear_solve", multiple_results=True)
eager.STATIC_SHAPE_PRIMITIVES.add(linear_solve_p)  # regions: compiled per shape


def _split(values: Sequence[Any], counts: tuple) -> tuple[list, list, list, list]:
    nm, ns, nt = counts
    values = list(values)
    return (values[:nm], values[nm:nm + ns], values[nm + ns:nm + ns + nt],
            values[nm + ns + nt:])


def _abstract_eval(*avals, matvec: IR, solve: IR, transpose_solve: Optional[IR], counts: tuple):
    return [a.strip_weak_type() for a in _split(avals, counts)[3]]


def _lowering(ctx: RuleContext, *args, matvec: IR, solve: IR, transpose_solve: Optional[IR],
              counts: tuple):
    _, solve_consts, _, b = _split(args, counts)
    sub = Lowering(ctx.dynamic)
    sub._input_views = ctx.lowering._input_views
    return sub.lower_ir(solve, solve_consts + b)


abstract_eval_rules[linear_solve_p] = _abstract_eval
lowering_rules[linear_solve_p] = _lowering


def _jvp(primals, tangents, *, matvec: IR, solve: IR, transpose_solve: Optional[IR],
         counts: tuple):
    params = dict(matvec=matvec, solve=solve, transpose_solve=transpose_solve, counts=counts)
    x = linear_solve_p.bind(*primals, **params)
    m_consts, s_consts, t_consts, _ = _split(primals, counts)
    t_m, _, _, t_b = _split(tangents, counts)
    # dA x: matvec differentiated in its captured values only, at the solution.
    if all(isinstance(t, Zero) for t in t_m):
        dax = [Zero(ad.tangent_aval(v.aval)) for v in matvec.outs]
    else:
        _, dax = ad.jvp_eval(ClosedIR(matvec, []), m_consts + list(x),
                             list(t_m) + [Zero(ad.tangent_aval(v.aval)) for v in matvec.outs])
    rhs = []
    for db, d in zip(t_b, dax):
        if isinstance(d, Zero):
            rhs.append(db)
        elif isinstance(db, Zero):
            rhs.append(_neg(d))
        else:
            from ..core import primitives as P
            rhs.append(P.sub_p.bind(db, d))
    if all(isinstance(r, Zero) for r in rhs):
        return x, [Zero(ad.tangent_aval(v.aval)) for v in matvec.outs]
    dx = linear_solve_p.bind(*m_consts, *s_consts, *t_consts, *[instantiate(r) for r in rhs],
                             **params)
    return x, dx


def _neg(x: Any) -> Any:
    from ..core import primitives as P
    return P.neg_p.bind(x)


jvp_rules[linear_solve_p] = _jvp


_vecmats: dict[int, tuple[IR, IR]] = {}  # id(matvec) -> (matvec, its transpose)


def _transposed_matvec(matvec: IR, num_consts: int) -> IR:
    """``matvec``'s transpose as a region of the same captured values: (consts, y) -> A^T y."""
    cached = _vecmats.get(id(matvec))
    if cached is not None and cached[0] is matvec:
        return cached[1]
    n_x = len(matvec.in_vars) - num_consts
    vecmat = ad.transpose_ir(matvec, [False] * num_consts + [True] * n_x)
    if len(_vecmats) > 256:
        _vecmats.clear()
    _vecmats[id(matvec)] = (matvec, vecmat)
    return vecmat


def _transpose(cts, *args, matvec: IR, solve: IR, transpose_solve: Optional[IR], counts: tuple):
    m_consts, s_consts, t_consts, b = _split(args, counts)
    if any(is_undefined(c) for c in m_consts + s_consts + t_consts):
        raise NotImplementedError("custom_linear_solve: transposing with respect to the values "
                                  "the linear map or the solvers close over is not supported")
    if transpose_solve is None:
        raise TypeError("transpose_solve required for backwards mode automatic "
                        f"differentiation of custom_linear_solve{where(None)}")
    vecmat = _transposed_matvec(matvec, len(m_consts))
    cts = [instantiate(ct) if ct is not None else ad.zeros(ad.tangent_aval(v.aval))
           for ct, v in zip(cts, matvec.outs)]
    ct_b = linear_solve_p.bind(*m_consts, *t_consts, *s_consts, *cts, matvec=vecmat,
                               solve=transpose_solve, transpose_solve=solve,
                               counts=(counts[0], counts[2], counts[1]))
    return [None] * (len(args) - len(b)) + list(ct_b)


transpose_rules[linear_solve_p] = _transpose


def _batch(axis, values, dims, *, matvec: IR, solve: IR, transpose_solve: Optional[IR],
           counts: tuple):
    """Every region batched; the right-hand side and the solution batched at the front."""
    dm, ds, dt, db = _split(dims, counts)
    m_consts, s_consts, t_consts, b = _split(values, counts)
    b = [to_front(x, d, axis.size) for x, d in zip(b, db)]
    front = [0] * len(b)
    matvec_b, _ = batch_region(matvec, dm + front, axis, front)
    solve_b, _ = batch_region(solve, ds + front, axis, front)
    tsolve_b = None
    if transpose_solve is not None:
        tsolve_b, _ = batch_region(transpose_solve, dt + front, axis, front)
    outs = linear_solve_p.bind(*m_consts, *s_consts, *t_consts, *b, matvec=matvec_b,
                               solve=solve_b, transpose_solve=tsolve_b, counts=counts)
    return outs, front


batching_rules[linear_solve_p] = _batch
