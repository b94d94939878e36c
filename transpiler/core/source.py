"""Where in the user's program something happened: file, line and column.

Every IR equation records the user's source position (the first stack frame outside pyree) so
that MLIR locations and error messages point at the user's line, not at pyree's internals.
"""
from __future__ import annotations

import linecache
import os
import sys
from typing import Optional

# Frames in these folders belong to pyree itself and are skipped when looking for the user.
# In the source tree the package is three folders (transpiler/, runtime/, stdlib/, whose tests/
# and examples/ beside them are user code); installed, it is one folder, pyree/, wherever it was
# installed (site-packages, a --target folder, a zip).
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(  # (this is transpiler/core/)
    os.path.abspath(__file__))))
if os.path.isdir(os.path.join(_PACKAGE_ROOT, "stdlib")):
    _INTERNAL_DIRS = tuple(os.path.join(_PACKAGE_ROOT, name) + os.sep
                           for name in ("transpiler", "runtime", "stdlib"))
else:
    _INTERNAL_DIRS = (_PACKAGE_ROOT + os.sep,)
_internal_files: dict[str, bool] = {}


def _is_internal(filename: str) -> bool:
    known = _internal_files.get(filename)
    if known is None:
        path = os.path.abspath(filename)
        known = path.startswith(_INTERNAL_DIRS) or filename.startswith("<frozen ")
        _internal_files[filename] = known
    return known


class SourceLoc:
    """A position in user code. Cheap to capture: the column is resolved only when asked for."""

    __slots__ = ("filename", "line", "_code", "_lasti", "_col", "function")

    def __init__(self, filename: str, line: int, col: int | None = None, *, code=None,
                 lasti: int = -1, function: str = "") -> None:
        self.filename = filename
        self.line = line
        self._col = col
        self._code = code
        self._lasti = lasti
        self.function = function

    @property
    def col(self) -> int:
        """1-based column of the expression that produced the value (1 when unknown)."""
        if self._col is None:
            self._col = 1
            if self._code is not None and self._lasti >= 0:
                try:
                    positions = list(self._code.co_positions())
                    _, _, col, _ = positions[self._lasti // 2]
                    if col is not None:
                        self._col = col + 1
                except (AttributeError, IndexError):
                    pass
            self._code = None
        return self._col

    def source_line(self) -> str:
        """The text of the user's line, stripped ('' when the file can't be read)."""
        return linecache.getline(self.filename, self.line).strip()

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.col}"

    def describe(self) -> str:
        """``file:line:col`` followed by the source line, for error messages."""
        text = self.source_line()
        return f"{self}\n    {text}" if text else str(self)

    def __repr__(self) -> str:
        return f"SourceLoc({self})"


def user_loc(skip: int = 1) -> Optional[SourceLoc]:
    """The innermost stack frame that is not inside pyree, or None (e.g. called from C)."""
    frame = sys._getframe(skip)
    while frame is not None:
        code = frame.f_code
        if not _is_internal(code.co_filename):
            # (convert.py compiles a converted lambda as a function of this name.)
            name = "<lambda>" if code.co_name == "_pyree_lambda" else code.co_name
            return SourceLoc(code.co_filename, frame.f_lineno, code=code, lasti=frame.f_lasti,
                             function=name)
        frame = frame.f_back
    return None


def where(loc: Optional[SourceLoc]) -> str:
    """A phrase for error messages: ``'\\n  at file:line:col\\n    <source line>'``."""
    if loc is None:
        loc = user_loc(2)
    if loc is None:
        return ""
    return "\n  at " + loc.describe()
