"""Assorted ``pyree.numpy`` functions: diff, interp, polyval, histogram."""
from __future__ import annotations

__all__: list[str] = []
