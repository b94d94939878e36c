"""``safe_map`` and ``safe_zip``: ``map`` and ``zip`` that insist on equal lengths (JAX's
documentation imports them from ``jax._src.util``).

Example::

    safe_map(lambda a, b: a + b, [1, 2], [3, 4])   # [4, 6]
"""
from __future__ import annotations

from typing import Any, Callable


def safe_zip(*args: Any) -> list:
    """``list(zip(*args))``, raising ValueError when the lengths differ."""
    args = [list(a) for a in args]
    if len({len(a) for a in args}) > 1:
        raise ValueError(f"safe_zip: lengths differ: {[len(a) for a in args]}")
    return list(zip(*args))


def safe_map(f: Callable, *args: Any) -> list:
    """``list(map(f, *args))``, raising ValueError when the lengths differ."""
    args = [list(a) for a in args]
    if len({len(a) for a in args}) > 1:
        raise ValueError(f"safe_map: lengths differ: {[len(a) for a in args]}")
    return list(map(f, *args))
