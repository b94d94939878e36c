"""The primitive families: each file declares its primitives (or, for the core ones, holds
them) with every rule for them -- abstract evaluation, lowering, JVP, transpose, batching,
eager policy, pmap --: ``arithmetic``, ``shapes``, ``reductions``, ``dot_general``,
``math_functions``, ``special``, ``igamma``, ``gather_scatter``, ``sorting``, ``windows``
(convolutions), ``control_flow`` (with ``control_flow_ad``, ``control_flow_batching``,
``control_flow_spmd`` and the loop rewrites ``loop_rotation``, ``loop_hoisting``),
``collectives``, ``linear_solve``, ``custom_derivatives``, ``host_callbacks``, ``checks``.

A family may build on another family's primitives, never on a program or the front end.

Example: ``from pyree.transpiler.families.math_functions import sin_p``
"""
