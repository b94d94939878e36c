"""pyree's transpiler: Python source -> IR -> MLIR.

Modules: ``source`` (user source positions), ``ir`` (the IR), ``trace`` (tracing and ``bind``),
``primitives`` (primitives and their shape rules), ``lower`` (IR -> MLIR), ``eager`` (running
primitives outside ``jit``), ``jit`` (the ``jit`` transformation), ``convert`` (the AST rewrite
of Python control flow), ``operators`` (what converted code calls), ``control_flow`` (the
structured ``cond``/``while``/``scan`` primitives), ``checks`` (runtime ``print``/``assert``).

``converted_source(fn)`` shows the Python that pyree runs in place of ``fn`` under ``jit``.
"""
from .convert import converted_source

__all__ = ["converted_source"]
