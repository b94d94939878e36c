"""``pyree.numpy.linalg``: norm, inv, solve, det, slogdet, cholesky."""
from __future__ import annotations

__all__: list[str] = []
