"""The front end: ``convert`` rewrites a function's Python source so that ``if``/``while``/
``for`` on traced values become structured control flow, and ``operators`` is what the
rewritten code calls. Nothing below imports it (jit reaches it through
``trace.hooks.converted``).

Example: ``print(pyree.transpiler.converted_source(f))``
"""
