"""pyree's transpiler: Python source -> IR -> MLIR.

Modules: ``source`` (user source positions), ``ir`` (the IR), ``trace`` (tracing and ``bind``),
``primitives`` (primitives and their shape rules), ``lower`` (IR -> MLIR), ``eager`` (running
primitives outside ``jit``), ``jit`` (the ``jit`` transformation).
"""
