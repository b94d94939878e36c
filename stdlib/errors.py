"""Errors pyree raises for mistakes in user programs.

Each names the user's source line. Example::

    @pyree.jit
    def f(x):
        return bool(x > 0)   # -> pyree.errors.TracerBoolConversionError
"""
from __future__ import annotations


class PyreeTypeError(TypeError):
    """Base of pyree's errors about values whose type or shape does not fit."""


class ConcretizationTypeError(PyreeTypeError):
    """A traced value was used where a concrete Python value is needed.

    Example: ``range(x)`` or ``int(x)`` on a traced ``x`` inside ``@jit``; mark the argument
    static with ``static_argnums`` or keep the computation in arrays.
    """


class TracerBoolConversionError(ConcretizationTypeError):
    """``bool()`` of a traced value, e.g. ``if x > 0:`` in code pyree could not convert."""


class TracerIntegerConversionError(ConcretizationTypeError):
    """``int()``/``operator.index()`` of a traced value, e.g. ``range(n)`` with a traced ``n``."""


class TracerArrayConversionError(PyreeTypeError):
    """``numpy.asarray`` of a traced value: its contents are not known while tracing."""


class UnexpectedTracerError(Exception):
    """A traced value escaped the function being traced (stored in a global, say) and was used
    after tracing finished."""


class NonConcreteBooleanIndexError(IndexError):
    """A boolean mask used as an index inside ``jit``: the result's shape would depend on the
    mask's values. Use the three-argument ``jnp.where(mask, x, other)`` instead, or index
    outside ``jit``.

    Example: ``x[x > 0]`` inside ``@jit`` raises it; ``jnp.where(x > 0, x, 0)`` works.
    """
