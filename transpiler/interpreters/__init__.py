"""Interpreters over pyree's IR: derivatives (``ad``, and ``ad_rules``, what JVP and
transpose rules are written with), batching (``batching``, ``vmap``), dead-code pruning
(``prune``) and the NaN search of ``debug_nans`` (``nan_check``).

They import only the core and each other; the primitives' rules are the families'.

Example: ``from pyree.transpiler.interpreters.batching import batching_rules``
"""
