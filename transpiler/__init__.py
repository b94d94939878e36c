"""pyree's transpiler: Python source -> IR -> MLIR.

Its modules, grouped by layer from the core up. Each layer imports nothing from the layers
above it, nothing below the front end imports it, and no import closes a cycle
(tests/test_layers.py). What a layer needs from above is installed as a hook (``trace.hooks``:
``eager`` runs a primitive bound outside any trace; ``convert`` explains why a function was not
converted and converts one; ``nan_check.apply_unchecked``) or registered by the module that
defines it (the rule tables, ``prune.pruning_rules``, ``nan_check.descend_rules``,
``eager.BRANCH_PRIMITIVES``, ``lower.WORK_ESTIMATES``, ``lower.rewrite_before_lowering``).

* core: ``source`` (user source positions), ``ir`` (the IR, its region walks and rewrites),
  ``trace`` (tracing, ``bind``, evaluating IR), ``primitives`` (names the primitives the
  interpreters build on -- arithmetic, shapes, reductions, ``dot_general`` --, whose rules are
  their families').
* interpreters: ``ad`` and ``ad_rules`` (derivatives), ``batching`` (``vmap``), ``prune``
  (dead code), ``nan_check`` (``debug_nans``).
* backend machinery: ``lower`` (IR -> MLIR), ``eager`` (primitives run outside ``jit``) and
  ``eager_warmup``, ``cuda_gemm`` (pyree's CUDA kernels; ``build_cuda_kernels`` builds their
  PTX); numerics the lowering rules build on: ``float32_math``, ``float64_math``.
* multi-device: ``spmd`` (``pmap``'s interpreter; the families register their rules in it,
  as they do batching rules).
* primitive families, each with all of its rules: ``arithmetic`` (the core's arithmetic,
  comparisons, ``select`` and conversions), ``shapes``, ``reductions``, ``dot_general``,
  ``math_functions`` (exp, sin, pow, ...: the elementwise functions beyond the core's
  arithmetic), ``control_flow`` with ``control_flow_ad``, ``control_flow_batching`` and
  ``control_flow_spmd`` (``cond``/``while``/``scan``) and the rewrites of loops before
  lowering (``loop_rotation``, ``loop_hoisting``),
  ``gather_scatter``, ``sorting``, ``windows`` (convolution), ``collectives``,
  ``custom_derivatives``, ``linear_solve``, ``host_callbacks``, ``checks`` (``print``,
  ``assert``), ``special``, ``igamma``.
* programs: ``jit`` and ``partition`` (``jit`` over a mesh).
* front end: ``convert`` (the AST rewrite of Python control flow) and ``operators`` (what
  converted code calls). Nothing below imports it: jit and the custom derivative rules get the
  user's function converted through ``trace.hooks.converted``.

``converted_source(fn)`` shows the Python that pyree runs in place of ``fn`` under ``jit``.
"""
import importlib

from .frontend.convert import converted_source

__all__ = ["converted_source"]

# Modules that only register (a family's rules, a rewrite before lowering) and that no module
# imports them for: importing the transpiler registers them.
for _module in ("families.arithmetic", "families.shapes", "families.reductions",
                "families.dot_general", "families.control_flow", "families.control_flow_ad",
                "families.control_flow_batching", "families.control_flow_spmd",
                "families.loop_hoisting", "families.loop_rotation", "interpreters.ad_rules",
                "families.custom_derivatives", "families.gather_scatter",
                "families.host_callbacks"):
    importlib.import_module(f".{_module}", __name__)
