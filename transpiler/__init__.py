"""pyree's transpiler: Python source -> IR -> MLIR.

Its modules, grouped by layer from the core up. The core imports nothing above itself, and
the interpreters nothing but the core and each other (tests/test_layers.py): what they need
from above is installed as a hook (``trace.hooks``: ``eager`` runs a primitive bound outside
any trace, ``convert`` explains why a function was not converted; ``nan_check.apply_unchecked``)
or registered by the family holding the primitive (``prune.pruning_rules``,
``nan_check.descend_rules``, the rule tables). Above the interpreters, imports still reach up:
the families hold their lowering rules and import ``lower``/``eager``.

* core: ``source`` (user source positions), ``ir`` (the IR, its region walks and rewrites),
  ``trace`` (tracing, ``bind``, evaluating IR), ``primitives`` (the primitives of arrays and
  their shape rules).
* interpreters: ``ad`` and ``ad_rules`` (derivatives), ``batching`` (``vmap``), ``prune``
  (dead code), ``nan_check`` (``debug_nans``).
* primitive families, each with all of its rules: ``control_flow`` with
  ``control_flow_ad`` and ``control_flow_batching`` (``cond``/``while``/``scan``),
  ``gather_scatter``, ``sorting``, ``windows`` (convolution), ``collectives``,
  ``custom_derivatives``, ``linear_solve``, ``host_callbacks``, ``checks`` (``print``,
  ``assert``), ``special``, ``igamma``; numerics they build on: ``float32_math``,
  ``float64_math``.
* backend: ``lower`` (IR -> MLIR), IR rewrites before it (``loop_rotation``,
  ``loop_hoisting``), ``cuda_gemm`` (pyree's CUDA kernels; ``build_cuda_kernels`` builds their
  PTX), ``eager`` (primitives run outside ``jit``) and ``eager_warmup``, ``jit``; the
  multi-device programs ``spmd`` (``pmap``) and ``partition`` (``jit`` over a mesh).
* front end: ``convert`` (the AST rewrite of Python control flow) and ``operators`` (what
  converted code calls).

``converted_source(fn)`` shows the Python that pyree runs in place of ``fn`` under ``jit``.
"""
import importlib

from .convert import converted_source

__all__ = ["converted_source"]

# Families whose rules no module imports them for: importing the transpiler registers them
# (a family module registers its primitives' rules when it is imported).
for _family in ("control_flow", "host_callbacks"):
    importlib.import_module(f".{_family}", __name__)
