"""pyree's IR: typed SSA equations of primitives, with sub-IR regions for control flow.

An ``IR`` is a list of equations ``outs = prim[params](inputs)`` over variables that each have
an abstract value (shape, dtype, weak type). It is plain data, built by tracing and rewritten by
transformations (AD, batching) before lowering to MLIR. Printed, it reads like a jaxpr::

    { lambda ; a:f32[3]. let
        b:f32[3] = mul a 2.0:f32[]
        c:f32[] = reduce_sum[axes=(0,)] b
      in (c,) }
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import numpy as np

from pyree.runtime.aval import ShapedArray

from .source import SourceLoc

__all__ = ["ShapedArray", "Var", "Literal", "Atom", "Eqn", "IR", "ClosedIR", "map_regions",
           "inline"]


class Var:
    """An SSA variable. Identity is the variable; names are assigned when printing."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray) -> None:
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written into the program (Python and NumPy scalars)."""

    __slots__ = ("value", "aval")

    def __init__(self, value: Any, aval: ShapedArray) -> None:
        self.value = np.asarray(value, dtype=aval.dtype)
        self.aval = aval

    @property
    def val(self) -> np.ndarray:
        """The value (JAX's name, for interpreters written against Jaxprs)."""
        return self.value

    def __repr__(self) -> str:
        return f"Literal({self.value.item()!r}:{self.aval.str_short()})"


Atom = Union[Var, Literal]


class Eqn:
    """``outputs = primitive[params](*inputs)``, traced at ``loc`` in the user's code."""

    __slots__ = ("primitive", "inputs", "params", "outputs", "loc")

    def __init__(self, primitive, inputs: Sequence[Atom], params: dict, outputs: Sequence[Var],
                 loc: Optional[SourceLoc]) -> None:
        self.primitive = primitive
        self.inputs = list(inputs)
        self.params = params
        self.outputs = list(outputs)
        self.loc = loc

    # JAX's names for the same fields (code written for a JaxprEqn reads an Eqn too).
    invars = property(lambda self: self.inputs)
    outvars = property(lambda self: self.outputs)

    def replace(self, **changes) -> "Eqn":
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return Eqn(**fields)

    def __repr__(self) -> str:
        return f"Eqn({self.primitive.name})"


class IR:
    """A function as equations: ``const_vars`` (values captured while tracing, passed in as
    arguments), ``in_vars``, ``eqns`` and the output atoms ``outs``."""

    __slots__ = ("const_vars", "in_vars", "eqns", "outs")

    def __init__(self, const_vars: Sequence[Var], in_vars: Sequence[Var], eqns: Sequence[Eqn],
                 outs: Sequence[Atom]) -> None:
        self.const_vars = list(const_vars)
        self.in_vars = list(in_vars)
        self.eqns = list(eqns)
        self.outs = list(outs)

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.in_vars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [a.aval for a in self.outs]

    # JAX's names for the same fields (code written for a Jaxpr reads an IR too).
    invars = property(lambda self: self.in_vars)
    constvars = property(lambda self: self.const_vars)
    outvars = property(lambda self: self.outs)

    def __str__(self) -> str:
        return pretty_print(self)

    def __repr__(self) -> str:
        return pretty_print(self)


class ClosedIR:
    """An IR together with the values of its ``const_vars``."""

    __slots__ = ("ir", "consts", "has_token")

    def __init__(self, ir: IR, consts: Sequence[Any], has_token: bool = False) -> None:
        assert len(ir.const_vars) == len(consts)
        self.ir = ir
        self.consts = list(consts)
        # The last input is a per-call token that runtime checks (asserts) report against.
        self.has_token = has_token

    @property
    def in_avals(self) -> list[ShapedArray]:
        return self.ir.in_avals

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.ir.out_avals

    @property
    def eqns(self) -> list[Eqn]:
        return self.ir.eqns

    @property
    def jaxpr(self) -> IR:
        """The IR itself (``ClosedJaxpr.jaxpr``)."""
        return self.ir

    @property
    def literals(self) -> list:
        """The constants' values (``ClosedJaxpr.literals``)."""
        return self.consts

    def __str__(self) -> str:
        return pretty_print(self.ir)

    def _repr_pretty_(self, p, cycle) -> None:  # IPython
        p.text(str(self))

    __repr__ = __str__


# -- rewriting ------------------------------------------------------------------------------------

def regions(eqn: Eqn) -> list[IR]:
    """The IRs among ``eqn``'s parameters (a loop's body and condition, a cond's branches,
    ...), a ClosedIR as its IR: where the walks over nested programs go.

    Example: ``any(has_effects(region.eqns) for region in regions(eqn))``
    """
    found = []
    for value in eqn.params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, ClosedIR):
                found.append(item.ir)
            elif isinstance(item, IR):
                found.append(item)
    return found


def map_regions(eqn: Eqn, rewrite: Callable[[IR], IR]) -> Eqn:
    """``eqn`` with each IR among its parameters (a loop's body, a branch, ...) replaced by
    ``rewrite(ir)``; the same Eqn if nothing changed.

    Example: ``map_regions(eqn, prune_ir)``
    """
    def rewritten(value: Any) -> Any:
        if isinstance(value, IR):
            return rewrite(value)
        if isinstance(value, ClosedIR):
            return ClosedIR(rewrite(value.ir), value.consts, value.has_token)
        if isinstance(value, tuple) and any(isinstance(v, (IR, ClosedIR)) for v in value):
            return tuple(rewritten(v) for v in value)
        return value
    params = {name: rewritten(value) for name, value in eqn.params.items()}
    if all(params[name] is eqn.params[name] for name in params):
        return eqn
    return eqn.replace(params=params)


def inline(region: IR, inputs: Sequence[Atom]) -> tuple[list[Eqn], list[Atom]]:
    """The equations of ``region`` (no ``const_vars``) applied to ``inputs``, with fresh
    output variables, and its outputs. Regions nested in its equations are shared as they are.

    Example: ``eqns, (out,) = inline(cond_ir, [x, y])``
    """
    env: dict[int, Atom] = {id(v): a for v, a in zip(region.in_vars, inputs)}

    def read(atom: Atom) -> Atom:
        return env.get(id(atom), atom) if isinstance(atom, Var) else atom

    eqns = []
    for eqn in region.eqns:
        outputs = [Var(v.aval) for v in eqn.outputs]
        env.update((id(v), new) for v, new in zip(eqn.outputs, outputs))
        eqns.append(eqn.replace(inputs=[read(a) for a in eqn.inputs], outputs=outputs))
    return eqns, [read(a) for a in region.outs]


# -- printing ---------------------------------------------------------------------------------

def _names() -> Iterator[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    for size in itertools.count(1):
        for combo in itertools.product(letters, repeat=size):
            yield "".join(combo)


class _Namer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.fresh = _names()

    def __call__(self, var: Var) -> str:
        name = self.names.get(id(var))
        if name is None:
            name = self.names[id(var)] = next(self.fresh)
        return name


def _atom_text(atom: Atom, name: _Namer) -> str:
    if isinstance(atom, Literal):
        value = atom.value.item()
        return f"{value!r}:{atom.aval.str_short()}"
    return name(atom)


def _param_text(value: Any) -> str:
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    return repr(value)


def pretty_print(ir: IR, indent: int = 0, name: Optional[_Namer] = None) -> str:
    """The readable text of an IR (also what ``str(ir)`` gives)."""
    name = name or _Namer()
    pad = " " * indent

    def decl(v: Var) -> str:
        return f"{name(v)}:{v.aval.str_short()}"

    consts = " ".join(decl(v) for v in ir.const_vars)
    ins = " ".join(decl(v) for v in ir.in_vars)
    lines = [f"{pad}{{ lambda {consts}{' ' if consts else ''}; {ins}. let"]
    for eqn in ir.eqns:
        outs = " ".join(decl(v) for v in eqn.outputs) or "_"
        regions = {k: v for k, v in eqn.params.items() if isinstance(v, (IR, ClosedIR)) or (
            isinstance(v, tuple) and v and all(isinstance(r, (IR, ClosedIR)) for r in v))}
        simple = {k: v for k, v in eqn.params.items() if k not in regions}
        params = ", ".join(f"{k}={_param_text(v)}" for k, v in simple.items())
        params = f"[{params}]" if params else ""
        args = " ".join(_atom_text(a, name) for a in eqn.inputs)
        lines.append(f"{pad}    {outs} = {eqn.primitive.name}{params} {args}".rstrip())
        for key, value in regions.items():
            named = [(f"{key}[{i}]", r) for i, r in enumerate(value)] \
                if isinstance(value, tuple) else [(key, value)]
            for label, region in named:
                sub = region.ir if isinstance(region, ClosedIR) else region
                lines.append(f"{pad}      {label}=")
                lines.append(pretty_print(sub, indent + 8, name))
    outs = ", ".join(_atom_text(a, name) for a in ir.outs)
    trailing = "," if len(ir.outs) == 1 else ""
    lines.append(f"{pad}  in ({outs}{trailing}) }}")
    return "\n".join(lines)


def closed_to_region(closed: ClosedIR) -> tuple[IR, list]:
    """A ClosedIR as (IR taking its consts as leading inputs, the const values)."""
    ir = closed.ir
    return IR([], list(ir.const_vars) + list(ir.in_vars), ir.eqns, ir.outs), list(closed.consts)
