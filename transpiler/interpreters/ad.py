"""Automatic differentiation as IR -> IR transformations.

Forward mode: ``jvp_eval`` interprets an IR, emitting (into whatever trace is active, or
eagerly) each equation's primal computation and, through the primitive's JVP rule, its
tangent. Tangents that are known to be zero stay the symbolic ``Zero``.

Reverse mode: the JVP of a function, traced with symbolic tangent inputs, is linear in those
tangents. Its equations split into the primal part (no tangent among the inputs) and the linear
part; ``backward_pass`` walks the linear part backwards applying each primitive's transpose
rule to the cotangents. Control-flow equations that mix both parts are split first by their
partial-evaluation rule (``partial_eval_rules``).

Rules live in tables keyed by primitive: ``jvp_rules`` (ad_rules.py, control_flow_ad.py) and
``transpose_rules``.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np

from pyree import dtypes

from ..core.ir import IR, Atom, ClosedIR, Eqn, Literal, ShapedArray, Var
from ..core.trace import IRBuilder, Primitive, TypedScalar, bind, located, read_env, tracing

# primitive -> rule(primals, tangents, **params) -> (primal outputs, tangent outputs)
jvp_rules: dict[Primitive, Callable] = {}
# primitive -> rule(cotangents, *inputs, **params) -> input cotangents; a linear input is an
# UndefinedPrimal, the others are their (primal) values; None/Zero means no cotangent.
transpose_rules: dict[Primitive, Callable] = {}
# primitive -> rule(eqn, unknown_inputs) -> (known eqns, unknown eqns, residual vars): splits
# an equation whose inputs are partly linear (unknown) into a primal and a linear part.
partial_eval_rules: dict[Primitive, Callable] = {}


class Zero:
    """A tangent or cotangent known to be zero (nothing is computed for it)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """Stands for a linear input in a transpose rule: only its type is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x: Any) -> bool:
    return isinstance(x, UndefinedPrimal)


def tangent_dtype(dtype: np.dtype) -> Optional[np.dtype]:
    """The tangent dtype of a primal dtype (None: not differentiable, tangents are zero)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc" or dtype == dtypes.bfloat16:
        return dtype
    return None


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    return ShapedArray(aval.shape, aval.dtype, False)


def is_differentiable(aval: ShapedArray) -> bool:
    return tangent_dtype(aval.dtype) is not None


def instantiate(t: Any) -> Any:
    """A tangent as a value (zeros for ``Zero``)."""
    if isinstance(t, Zero):
        return zeros(t.aval)
    return t


def zeros(aval: ShapedArray) -> Any:
    from ..core import primitives as P
    scalar = TypedScalar(0, aval.dtype, False)
    return P.broadcast_in_dim_p.bind(scalar, shape=aval.shape, broadcast_dimensions=())


def add_tangents(a: Any, b: Any) -> Any:
    if isinstance(a, Zero):
        return b
    if isinstance(b, Zero):
        return a
    from ..core import primitives as P
    return P.add_p.bind(a, b)


# -- forward mode ------------------------------------------------------------------------------------

def jvp_eval(closed: ClosedIR, primals: Sequence[Any], tangents: Sequence[Any]
             ) -> tuple[list, list]:
    """Evaluate ``closed`` and its JVP: (primal outputs, tangent outputs). ``tangents`` may hold
    ``Zero``; outputs whose tangent is zero come back as ``Zero``."""
    ir = closed.ir
    primal_env: dict[Var, Any] = {}
    tangent_env: dict[Var, Any] = {}
    for v, c in zip(ir.const_vars, closed.consts):
        primal_env[v] = c
        tangent_env[v] = Zero(v.aval)
    for v, p, t in zip(ir.in_vars, primals, tangents):
        primal_env[v] = p
        tangent_env[v] = t

    def read_p(a: Atom) -> Any:
        return read_env(primal_env, a)

    def read_t(a: Atom) -> Any:
        if isinstance(a, Literal):
            return Zero(a.aval)
        return tangent_env[a]

    for eqn in ir.eqns:
        ps = [read_p(a) for a in eqn.inputs]
        ts = [read_t(a) for a in eqn.inputs]
        with located(eqn.loc):
            if all(isinstance(t, Zero) for t in ts):
                outs = bind(eqn.primitive, ps, eqn.params)
                touts = [Zero(v.aval) for v in eqn.outputs]
            else:
                rule = jvp_rules.get(eqn.primitive)
                if rule is None:
                    raise NotImplementedError(f"no JVP rule for primitive {eqn.primitive}")
                outs, touts = rule(ps, ts, **eqn.params)
        for v, p, t in zip(eqn.outputs, outs, touts):
            primal_env[v] = p
            tangent_env[v] = _fix_tangent(t, v.aval)
    return [read_p(a) for a in ir.outs], [read_t(a) for a in ir.outs]


def _fix_tangent(t: Any, aval: ShapedArray) -> Any:
    """Tangents of non-differentiable values are zero; rules may return None for them."""
    if t is None or not is_differentiable(aval):
        return Zero(aval)
    return t


def jvp_ir(closed: ClosedIR, nonzero: Sequence[bool]) -> tuple[ClosedIR, list[bool]]:
    """The JVP of ``closed`` as an IR taking (primals..., tangents of the ``nonzero`` inputs...)
    and returning (primal outputs..., tangents of the differentiable outputs...); also which
    outputs have a nonzero tangent (the zero ones are still returned, as zeros)."""
    ir = closed.ir
    in_avals = ir.in_avals
    t_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzero) if nz]
    out_nonzero: list[bool] = []
    builder = IRBuilder()
    with tracing(builder):
        ps = [builder.new_input(a) for a in in_avals]
        ts_in = [builder.new_input(a) for a in t_avals]
        it = iter(ts_in)
        ts = [next(it) if nz else Zero(a) for a, nz in zip(in_avals, nonzero)]
        outs, touts = jvp_eval(closed, ps, ts)
        out_nonzero = [not isinstance(t, Zero) for t in touts]
        diff = [instantiate(t) for t, a in zip(touts, ir.out_avals) if is_differentiable(a)]
        result = builder.finish(list(outs) + diff)
    return result, out_nonzero


# -- reverse mode -------------------------------------------------------------------------------------

class Linearized:
    """An IR split for reverse mode: its primal equations, its linear ones, and which
    variables are linear (depend on the linear inputs). For a JVP IR the linear inputs are the
    tangents; ``outs`` are the outputs whose cotangents come in (the tangent outputs)."""

    def __init__(self, closed: ClosedIR, linear_in: Sequence[bool],
                 n_primal_outs: int = 0) -> None:
        self.closed = closed
        ir = closed.ir
        self.primal_in = [v for v, lin in zip(ir.in_vars, linear_in) if not lin]
        self.tangent_in = [v for v, lin in zip(ir.in_vars, linear_in) if lin]
        self.primal_out = ir.outs[:n_primal_outs]
        self.tangent_out = ir.outs[n_primal_outs:]
        linear = {id(v) for v in self.tangent_in}
        primal_eqns, linear_eqns = split_eqns(ir.eqns, linear)
        self.primal_eqns = primal_eqns
        self.linear_eqns = linear_eqns
        self.linear = linear

    def is_linear(self, atom: Atom) -> bool:
        return isinstance(atom, Var) and id(atom) in self.linear


def split_eqns(eqns: Sequence[Eqn], unknown: set) -> tuple[list[Eqn], list[Eqn]]:
    """Partial evaluation of ``eqns``: (known equations, unknown ones), given the ids of the
    unknown variables, ``unknown``, which grows by the unknown equations' outputs. A primitive
    with a partial-evaluation rule may split into a known and an unknown part."""
    known_eqns: list[Eqn] = []
    unknown_eqns: list[Eqn] = []
    for eqn in eqns:
        mask = [isinstance(a, Var) and id(a) in unknown for a in eqn.inputs]
        if not any(mask):
            known_eqns.append(eqn)
            continue
        rule = partial_eval_rules.get(eqn.primitive)
        known_part, unknown_part = rule(eqn, mask) if rule else ([], [eqn])
        known_eqns.extend(known_part)
        unknown_eqns.extend(unknown_part)
        for e in unknown_part:
            unknown.update(id(v) for v in e.outputs)
    return known_eqns, unknown_eqns


def linearize_closed(closed: ClosedIR, nonzero: Sequence[bool]) -> tuple[Linearized, list[bool]]:
    jvp_closed, out_nonzero = jvp_ir(closed, nonzero)
    n_in = len(closed.ir.in_vars)
    linear_in = [False] * n_in + [True] * (len(jvp_closed.ir.in_vars) - n_in)
    return Linearized(jvp_closed, linear_in, len(closed.ir.outs)), out_nonzero


def transpose_ir(ir: IR, linear_in: Sequence[bool]) -> IR:
    """The transpose of an IR linear in the inputs ``linear_in``: an IR taking (the other
    inputs..., cotangents of every output...) and returning the cotangents of the linear
    inputs (zeros where none flows)."""
    lin = Linearized(ClosedIR(ir, []), linear_in)
    nonlinear_avals = [v.aval for v in lin.primal_in]
    ct_avals = [tangent_aval(a.aval) for a in ir.outs]
    builder = IRBuilder()
    with tracing(builder):
        primals = [builder.new_input(a) for a in nonlinear_avals]
        cts = [builder.new_input(a) for a in ct_avals]
        env = forward_pass(lin, primals)
        in_cts = backward_pass(lin, env, cts)
        closed = builder.finish([instantiate(ct) for ct in in_cts])
    assert not closed.consts, "a transposed region captured values"
    return closed.ir


def forward_pass(lin: Linearized, primals: Sequence[Any]) -> dict:
    """Evaluate the primal equations; returns the environment of primal values."""
    ir = lin.closed.ir
    env: dict[Var, Any] = dict(zip(ir.const_vars, lin.closed.consts))
    env.update(zip(lin.primal_in, primals))

    def read(a: Atom) -> Any:
        return read_env(env, a)

    for eqn in lin.primal_eqns:
        with located(eqn.loc):
            outs = bind(eqn.primitive, [read(a) for a in eqn.inputs], eqn.params)
        env.update(zip(eqn.outputs, outs))
    return env


def backward_pass(lin: Linearized, env: dict, cotangents: Sequence[Any]) -> list[Any]:
    """Cotangents of the tangent inputs, given cotangents of the tangent outputs (``Zero`` for
    none) and the primal environment from ``forward_pass``."""
    ct_env: dict[int, Any] = {}

    def accumulate(v: Var, ct: Any) -> None:
        if ct is None or isinstance(ct, Zero):
            return
        prev = ct_env.get(id(v))
        ct_env[id(v)] = ct if prev is None else add_tangents(prev, ct)

    for atom, ct in zip(lin.tangent_out, cotangents):
        if lin.is_linear(atom):
            accumulate(atom, ct)
    for eqn in reversed(lin.linear_eqns):
        cts = [ct_env.pop(id(v), None) for v in eqn.outputs]
        if all(ct is None for ct in cts):
            continue
        cts = [Zero(v.aval) if ct is None else ct for v, ct in zip(eqn.outputs, cts)]
        args = [UndefinedPrimal(a.aval) if lin.is_linear(a) else read_env(env, a)
                for a in eqn.inputs]
        rule = transpose_rules.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"reverse-mode differentiation of {eqn.primitive} is not supported (no "
                f"transpose rule)")
        with located(eqn.loc):
            in_cts = rule(cts if eqn.primitive.multiple_results else cts[0], *args, **eqn.params)
        for a, ct in zip(eqn.inputs, in_cts):
            if lin.is_linear(a):
                accumulate(a, ct)
    return [ct_env.get(id(v), Zero(v.aval)) for v in lin.tangent_in]


def linear_eval(lin: Linearized, env: dict, tangents: Sequence[Any]) -> list[Any]:
    """Run the linear part forward: tangent outputs for the given (nonzero) tangent inputs."""
    t_env: dict[int, Any] = {id(v): t for v, t in zip(lin.tangent_in, tangents)}

    def read(a: Atom) -> Any:
        if isinstance(a, Var) and id(a) in t_env:
            return t_env[id(a)]
        return read_env(env, a)

    for eqn in lin.linear_eqns:
        with located(eqn.loc):
            outs = bind(eqn.primitive, [read(a) for a in eqn.inputs], eqn.params)
        for v, o in zip(eqn.outputs, outs):
            t_env[id(v)] = o
    return [read(a) if lin.is_linear(a) else zeros(a.aval) for a in lin.tangent_out]
