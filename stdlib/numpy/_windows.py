"""Windowed and cumulative functions of ``pyree.numpy``: convolve, correlate, cumsum, cumprod."""
from __future__ import annotations

__all__: list[str] = []
