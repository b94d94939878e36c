"""Sorting and searching in ``pyree.numpy``: sort, argsort, searchsorted, unique, nonzero,
argwhere, median, quantile, percentile."""
from __future__ import annotations

__all__: list[str] = []
