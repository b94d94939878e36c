"""Batching rules of the primitives that hold regions (control flow, custom derivatives) and
of the effectful ones (print, runtime checks)."""
from __future__ import annotations

from .batching import batching_rules
from .custom_derivatives import stop_gradient_p


def _stop_gradient_rule(axis, values, dims):
    return [stop_gradient_p.bind(values[0])], [dims[0]]


batching_rules[stop_gradient_p] = _stop_gradient_rule
