"""``checkpoint`` (alias ``remat``), its policies and ``checkpoint_name``, with JAX's interfaces.

In JAX, ``checkpoint(f)`` makes reverse mode recompute ``f``'s intermediate values in the
backward pass instead of keeping them from the forward pass, trading compute for memory; a
``policy`` chooses which intermediates may be kept anyway. Values and derivatives are those of
``f`` either way.

pyree compiles a whole program (the forward and the backward pass of a ``grad`` are one
module) and leaves the choice of what to keep alive, recompute or fuse to IREE, so here
``checkpoint(f)`` computes exactly what ``f`` computes, under every transformation, and the
policies are accepted (and answer JAX's questions) but do not change the program::

    @pyree.checkpoint
    def block(w, x):
        return jnp.tanh(x @ w)

    pyree.grad(lambda w, x: block(w, block(w, x)).sum())(w, x)
"""
from __future__ import annotations

import functools
import operator
import types
from typing import Any, Callable, Iterable, NamedTuple, Sequence, Union

from pyree.transpiler.core.source import where
from pyree.transpiler.core.trace import current_builder


def call_traced(fun: Callable, args: tuple, kwargs: dict) -> Any:
    """``fun(*args, **kwargs)``; under a trace ``fun`` is converted first, so that its Python
    control flow on traced values works (a library wrapper is never converted itself, so it
    must convert what it calls).

    Example: ``call_traced(user_fn, (x,), {})`` inside a pyree wrapper of ``user_fn``
    """
    if current_builder() is None:
        return fun(*args, **kwargs)
    from pyree.transpiler.frontend.convert import converted
    return converted(fun)(*args, **kwargs)


def _argnums(static_argnums: Union[int, Sequence[int]]) -> tuple[int, ...]:
    if isinstance(static_argnums, int):
        return (static_argnums,)
    return tuple(operator.index(i) for i in static_argnums)


def checkpoint(fun: Callable, *, prevent_cse: Union[bool, Sequence[bool]] = True,
               policy: Callable[..., Any] | None = None,
               static_argnums: Union[int, Sequence[int]] = (),
               static_argnames: Union[str, Iterable[str]] = ()) -> Callable:
    """``fun`` marked for rematerialization (``jax.checkpoint`` / ``jax.remat``): the result
    computes ``fun``'s values, and ``grad``, ``jvp``, ``vmap`` and ``jit`` of it give
    ``fun``'s derivatives and batches.

    In JAX the mark makes reverse mode recompute ``fun``'s intermediates instead of saving
    them (``policy`` picks those that may be saved; ``prevent_cse`` stops XLA from merging
    the recomputation with the forward pass). pyree compiles the forward and backward passes
    as one program and leaves what to keep in memory to IREE, so the mark changes nothing
    here: ``policy`` and ``prevent_cse`` are checked and accepted. Arguments at
    ``static_argnums`` (or named in ``static_argnames``) are Python values that ``fun`` may
    branch on, as in JAX.

    Example::

        @functools.partial(pyree.checkpoint, policy=pyree.checkpoint_policies.dots_saveable)
        def layer(w, x):
            return jnp.sin(x @ w)

        pyree.grad(lambda w: layer(w, x).sum())(w)     # the gradient of the plain function
    """
    if not callable(fun):
        raise TypeError(f"checkpoint expects a callable, got {fun!r}{where(None)}")
    if policy is not None and not callable(policy):
        raise TypeError(f"checkpoint's policy must be callable (see pyree.checkpoint_policies), "
                        f"got {policy!r}{where(None)}")
    nums = _argnums(static_argnums)
    names = (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)

    @functools.wraps(fun)
    def remat_fun(*args: Any, **kwargs: Any) -> Any:
        for i in nums:
            if not -len(args) <= i < len(args):
                raise ValueError(f"checkpoint: static_argnums {nums} out of range for a call "
                                 f"with {len(args)} positional arguments{where(None)}")
            _check_hashable(args[i], f"argument {i}")
        for name in names:
            if name in kwargs:
                _check_hashable(kwargs[name], f"argument {name!r}")
        return call_traced(fun, args, kwargs)

    remat_fun.policy = policy
    remat_fun.prevent_cse = prevent_cse
    return remat_fun


def _check_hashable(value: Any, what: str) -> None:
    try:
        hash(value)
    except TypeError:
        raise ValueError(f"checkpoint: static {what} must be hashable, got a "
                         f"{type(value).__name__}{where(None)}") from None


remat = checkpoint


def checkpoint_name(x: Any, name: str) -> Any:
    """``x`` (a pytree), labelled ``name`` for the name-based checkpoint policies
    (``jax.ad_checkpoint.checkpoint_name``). The label is the identity on values and
    derivatives.

    Example::

        h = checkpoint_name(jnp.tanh(x @ w), "hidden")
    """
    return x


# -- policies ------------------------------------------------------------------------------------
# A policy answers, for an equation ``prim`` with operand avals and params, whether its result
# may be saved for the backward pass (JAX also accepts the markers below as answers).

class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


Saveable = _Marker("Saveable")      # a policy's answer: keep the value
Recompute = _Marker("Recompute")    # a policy's answer: recompute the value


class Offloadable(NamedTuple):
    """A policy's answer: keep the value in memory of kind ``dst`` (JAX offloads it from
    ``src``; pyree has one memory per device, so this is ``Saveable`` here).

    Example: ``Offloadable(src="device", dst="pinned_host")``
    """

    src: str
    dst: str


def _prim_name(prim: Any) -> str:
    return getattr(prim, "name", str(prim))


def everything_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
    """Policy: every intermediate may be saved.
    Example: ``checkpoint(f, policy=everything_saveable)``"""
    return True


def nothing_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
    """Policy: nothing is saved, all is recomputed (``checkpoint``'s default).
    Example: ``checkpoint(f, policy=nothing_saveable)``"""
    return False


def dots_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
    """Policy: the results of matrix products (``dot_general``) may be saved.
    Example: ``checkpoint(f, policy=dots_saveable)``"""
    return _prim_name(prim) == "dot_general"


def dots_with_no_batch_dims_saveable(prim: Any, *avals: Any, **params: Any) -> bool:
    """Policy: products without batch dimensions may be saved.
    Example: ``checkpoint(f, policy=dots_with_no_batch_dims_saveable)``"""
    if _prim_name(prim) != "dot_general":
        return False
    (_, (lhs_batch, rhs_batch)) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


def _is_named(prim: Any, params: dict) -> bool:
    return _prim_name(prim) == "name" and "name" in params


def save_anything_except_these_names(*names_not_saveable: str) -> Callable[..., bool]:
    """Policy: anything may be saved except the values labelled with these names.
    Example: ``checkpoint(f, policy=save_anything_except_these_names("hidden"))``"""
    names = frozenset(names_not_saveable)

    def policy(prim: Any, *avals: Any, **params: Any) -> bool:
        return not (_is_named(prim, params) and params["name"] in names)
    return policy


def save_any_names_but_these(*names_not_saveable: str) -> Callable[..., bool]:
    """Policy: labelled values may be saved, except those with these names.
    Example: ``checkpoint(f, policy=save_any_names_but_these("hidden"))``"""
    names = frozenset(names_not_saveable)

    def policy(prim: Any, *avals: Any, **params: Any) -> bool:
        return _is_named(prim, params) and params["name"] not in names
    return policy


def save_only_these_names(*names_which_can_be_saved: str) -> Callable[..., bool]:
    """Policy: only values labelled with these names may be saved.
    Example: ``checkpoint(f, policy=save_only_these_names("hidden"))``"""
    names = frozenset(names_which_can_be_saved)

    def policy(prim: Any, *avals: Any, **params: Any) -> bool:
        return _is_named(prim, params) and params["name"] in names
    return policy


def save_from_both_policies(policy_1: Callable[..., Any],
                            policy_2: Callable[..., Any]) -> Callable[..., bool]:
    """Policy: saveable when either policy says so.
    Example: ``save_from_both_policies(dots_saveable, save_only_these_names("h"))``"""
    def policy(prim: Any, *avals: Any, **params: Any) -> bool:
        return bool(policy_1(prim, *avals, **params)) or bool(policy_2(prim, *avals, **params))
    return policy


def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str) -> Callable[..., Any]:
    """Policy: products without batch dimensions are kept (JAX moves them to ``offload_dst``
    memory; pyree keeps them where they are).
    Example: ``offload_dot_with_no_batch_dims("device", "pinned_host")``"""
    def policy(prim: Any, *avals: Any, **params: Any) -> Any:
        if dots_with_no_batch_dims_saveable(prim, *avals, **params):
            return Offloadable(offload_src, offload_dst)
        return Recompute
    return policy


def save_and_offload_only_these_names(*, names_which_can_be_saved: Iterable[str],
                                      names_which_can_be_offloaded: Iterable[str],
                                      offload_src: str, offload_dst: str) -> Callable[..., Any]:
    """Policy: values with the first names are saved, with the second ones offloaded, the
    rest recomputed. Example::

        save_and_offload_only_these_names(names_which_can_be_saved=["a"],
            names_which_can_be_offloaded=["b"], offload_src="device", offload_dst="pinned_host")
    """
    saved, offloaded = frozenset(names_which_can_be_saved), frozenset(names_which_can_be_offloaded)

    def policy(prim: Any, *avals: Any, **params: Any) -> Any:
        if _is_named(prim, params):
            if params["name"] in saved:
                return Saveable
            if params["name"] in offloaded:
                return Offloadable(offload_src, offload_dst)
        return Recompute
    return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
)
checkpoint_policies.__doc__ = """The policies ``checkpoint(f, policy=...)`` accepts, under
JAX's names (``jax.checkpoint_policies``). Example: ``pyree.checkpoint_policies.dots_saveable``"""

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "remat"]


# -- inspecting residuals ---------------------------------------------------------------------

def saved_residuals(fun: Callable, *args: Any, **kwargs: Any) -> list[tuple[Any, str]]:
    """The values reverse mode keeps from ``fun``'s forward pass for its backward pass, as
    ``(ShapeDtypeStruct, description)`` pairs: arguments first, then intermediate values in
    the order they are computed, each described by the primitive that makes it and the user's
    source line (``jax.ad_checkpoint.saved_residuals``).

    They are the values of pyree's linearized program that its linear (backward) part reads
    from the primal part. Since ``checkpoint`` changes nothing in pyree (see the module
    docstring: IREE decides what stays in memory), the list is the same with or without it.

    Example::

        saved_residuals(lambda x: jnp.sin(x).sum(), jnp.ones(3))
        # [(ShapeDtypeStruct(shape=(3,), dtype=float32), 'output of cos from f.py:1:18 (<lambda>)')]
    """
    import inspect

    from pyree import tree_util
    from pyree.transpiler.interpreters import ad
    from pyree.transpiler.core.ir import Var
    from pyree.transpiler.programs.jit import ShapeDtypeStruct
    from pyree.transpiler.core.trace import get_aval

    from ._autodiff import _flatten_args, _trace
    if kwargs:
        fun = functools.partial(fun, **kwargs)
    leaves, tree = _flatten_args(args, "saved_residuals arguments")
    closed, _, _ = _trace(fun, leaves, tree)
    nonzero = [ad.is_differentiable(get_aval(leaf)) for leaf in leaves]
    lin, _ = ad.linearize_closed(closed, nonzero)

    # Names of the arguments' leaves: the parameter's name and the path inside it.
    try:
        params = list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        params = []
    names = []
    for i, arg in enumerate(args):
        base = params[i] if i < len(params) else f"args[{i}]"
        names += [base + path for path in tree_util.leaf_paths(tree_util.tree_structure(arg))]

    def residuals_read_by(eqns) -> list:
        return [a for eqn in eqns for a in eqn.inputs
                if isinstance(a, Var) and not lin.is_linear(a)]

    read = {id(a) for a in residuals_read_by(lin.linear_eqns)}
    ir = lin.closed.ir
    found: list[tuple[Any, str]] = []
    for var, name in zip(lin.primal_in, names):
        if id(var) in read:
            found.append((var, f"from the argument {name}"))
    for var in ir.const_vars:
        if id(var) in read:
            found.append((var, "from a constant"))
    for eqn in lin.primal_eqns:
        for var in eqn.outputs:
            if id(var) in read:
                what = (f"named {eqn.params['name']!r}" if _is_named(eqn.primitive, eqn.params)
                        else f"output of {_prim_name(eqn.primitive)}")
                loc = eqn.loc   # (JAX counts columns from 0, as Python's positions do)
                found.append((var, f"{what} from {loc.filename}:{loc.line}:{loc.col - 1} "
                                   f"({loc.function})" if loc else what))
    return [(ShapeDtypeStruct(v.aval.shape, v.aval.dtype), text) for v, text in found]


def print_saved_residuals(fun: Callable, *args: Any, **kwargs: Any) -> None:
    """Print ``saved_residuals(fun, *args, **kwargs)``, one value per line
    (``jax.ad_checkpoint.print_saved_residuals``).

    Example::

        print_saved_residuals(lambda w, x: jnp.sin(w @ x).sum(), w, x)
        # f32[5,4] from the argument w
        # f32[4] from the argument x
        # f32[5] output of cos from f.py:1:35 (<lambda>)
    """
    from pyree.transpiler.core.ir import ShapedArray
    for shape, text in saved_residuals(fun, *args, **kwargs):
        print(ShapedArray(shape.shape, shape.dtype).str_short(), text)
