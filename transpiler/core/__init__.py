"""The core: user source positions (``source``), pyree's IR (``ir``), tracing and ``bind``
(``trace``), and the names of the primitives the interpreters build on (``primitives``).

It imports nothing above itself (tests/test_layers.py); what it needs from above is installed
as a hook (``trace.hooks``: the evaluator of primitives bound outside any trace, the converter
of user functions).

Example: ``from pyree.transpiler.core import primitives as P; P.add_p.bind(x, y)``
"""
