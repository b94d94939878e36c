"""Programs: ``jit`` (trace, lower, compile and call a function) and ``partition`` (a jitted
function over arrays sharded on a mesh).

Example: ``from pyree.transpiler.programs.jit import JitFunction``
"""
