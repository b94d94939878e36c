"""``pyree.debug``: print and inspect values from inside compiled code, as ``jax.debug``.

``print`` and ``callback`` run on the host while the program runs, at every call and loop
iteration that reaches them, in program order (a call's output appears before the next
call's, even though calls are dispatched asynchronously). Outside ``jit`` they run at once.

* Under ``grad`` they see the primal values, once.
* Under ``vmap`` they run once per example (as JAX's do; pyree in index order). Python's
  ``print`` inside converted code shows the whole batch instead, being one statement.

They travel as ``flow.tensor.trace`` ops (runtime/callbacks.py), which return nothing to the
program: so a module with prints still runs without pyree (``iree-run-module`` shows them).
Host functions whose results flow back into the program are ``pyree.pure_callback``.
"""
from __future__ import annotations

import builtins
from typing import Any, Callable

import numpy as np

from pyree import tree_util
from pyree.runtime.array import Array
from pyree.transpiler.families import checks
from pyree.transpiler.core.source import user_loc, where
from pyree.transpiler.core.trace import Tracer, current_builder

__all__ = ["print", "callback"]

_SCALARS = (bool, int, float, complex)


def _is_array(x: Any) -> bool:
    return isinstance(x, (Tracer, Array, np.ndarray, np.generic)) or type(x) in _SCALARS


def _split(args: tuple, kwargs: dict) -> tuple:
    """(leaves, treedef, positions of the array leaves, {position: static leaf})."""
    leaves, treedef = tree_util.tree_flatten((args, kwargs))
    arrays = [i for i, leaf in enumerate(leaves) if _is_array(leaf)]
    static = {i: leaf for i, leaf in enumerate(leaves) if not _is_array(leaf)}
    return leaves, treedef, arrays, static


def _host_value(x: Any) -> Any:
    """What a callback sees for an argument given eagerly: a NumPy array."""
    if type(x) in _SCALARS:
        from pyree.transpiler.backend.eager import to_array
        x = to_array(x)  # the dtype JAX would give it (weakly typed int32/float32...)
    return np.asarray(x)


def _run(fn: Callable, args: tuple, kwargs: dict, parts: Any, identity: tuple) -> None:
    leaves, treedef, arrays, static = _split(args, kwargs)

    def call(values: list) -> None:
        filled = dict(static)
        filled.update(zip(arrays, values))
        a, k = tree_util.tree_unflatten(treedef, [filled[i] for i in range(len(leaves))])
        fn(*a, **k)

    values = [leaves[i] for i in arrays]
    if current_builder() is None and not any(isinstance(v, Tracer) for v in values):
        call([_host_value(v) for v in values])
        return
    loc = user_loc(3)
    parts = parts + (loc and (loc.filename, loc.line, loc.col), repr(treedef),
                     sorted((i, repr(v)) for i, v in static.items()))
    checks.debug_callback(call, values, per_example=True, parts=parts, identity=identity)


def print(fmt: str, *args: Any, ordered: bool = False, **kwargs: Any) -> None:
    """Print ``fmt.format(*args, **kwargs)`` with the values the arguments have when the
    program runs (arrays print as NumPy prints them).

    ``ordered`` is accepted for JAX's signature: pyree's prints always come in program order.

    Example::

        @pyree.jit
        def f(x):
            pyree.debug.print("x = {}, total = {total}", x, total=x.sum())
            return x * 2

        f(jnp.arange(3.0))          # prints: x = [0. 1. 2.], total = 3.0
    """
    if not isinstance(fmt, str):
        raise TypeError(f"pyree.debug.print: the format must be a str, got "
                        f"{type(fmt).__name__}{where(None)}")
    _check_format(fmt, args, kwargs)

    def show(*a: Any, **k: Any) -> None:
        builtins.print(fmt.format(*a, **k))

    _run(show, args, kwargs, ("debug.print", fmt), (fmt,))


def _check_format(fmt: str, args: tuple, kwargs: dict) -> None:
    """Fail now, with a clear message, when the format does not fit the arguments (rather than
    on the host when the program runs)."""
    def stand_in(x: Any) -> Any:
        if isinstance(x, (Tracer, Array)):
            return np.broadcast_to(np.zeros((), x.dtype), x.shape)
        return x
    a, k = tree_util.tree_map(stand_in, (args, kwargs))
    try:
        fmt.format(*a, **k)
    except (IndexError, KeyError, ValueError, TypeError) as e:
        raise type(e)(f"pyree.debug.print: the format {fmt!r} does not fit the arguments "
                      f"({len(args)} positional, keywords {sorted(kwargs)}): "
                      f"{e}{where(None)}") from None


def callback(callback: Callable[..., Any], *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any) -> None:
    """Call ``callback(*args, **kwargs)`` on the host with the values the arguments have when
    the program runs: array leaves of the pytrees become NumPy arrays, other leaves are passed
    as they are. Its return value is ignored. Under ``vmap`` it is called once per example.

    Example::

        seen = []

        @pyree.jit
        def f(x):
            pyree.debug.callback(lambda v: seen.append(v.copy()), x)
            return x + 1

        f(jnp.ones(2))              # seen == [array([1., 1.], dtype=float32)]
    """
    if not callable(callback):
        raise TypeError(f"pyree.debug.callback: callback must be callable, got "
                        f"{type(callback).__name__}{where(None)}")
    del ordered, partitioned  # always in program order; one device

    def call(*a: Any, **k: Any) -> None:
        callback(*a, **k)

    _run(call, args, kwargs, ("debug.callback", getattr(callback, "__module__", None),
                             getattr(callback, "__qualname__", None)), (callback,))
