"""Part of ``pyree.lax``."""
from __future__ import annotations

__all__: list[str] = []
