"""The transpiler's core (source positions, the IR, tracing, the primitives) imports nothing
above itself: no interpreter, backend or front-end module, not even inside a function. What
it needs from above is installed as a hook (``trace.hooks``)."""
import ast
import pathlib

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp

TRANSPILER = pathlib.Path(pyree.transpiler.__file__).parent
CORE = ("source", "ir", "trace", "primitives")
# Below the transpiler: the runtime, and the two leaf modules of dtypes and error types.
BELOW = ("pyree.runtime", "pyree.dtypes", "pyree.errors")


def _imports(module: str) -> list[tuple[str, int]]:
    """(what, line) for every import in ``transpiler/<module>.py``, wherever it stands; a
    module of the transpiler as its bare name."""
    found = []
    for node in ast.walk(ast.parse((TRANSPILER / f"{module}.py").read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                names = [node.module] if node.module else [a.name for a in node.names]
                found += [(n.split(".")[0], node.lineno) for n in names]
            elif node.module == "pyree":
                found += [(f"pyree.{a.name}", node.lineno) for a in node.names]
            else:
                found.append((node.module, node.lineno))
    return found


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_nothing_above_it(module):
    wrong = []
    for name, line in _imports(module):
        if name.startswith("pyree.transpiler."):
            name = name.split(".")[2]
        if name.startswith("pyree") and not name.startswith(BELOW):
            wrong.append(f"{module}.py:{line} imports {name}")
        elif (TRANSPILER / f"{name}.py").exists() and name not in CORE:
            wrong.append(f"{module}.py:{line} imports {name}, above the core")
    assert not wrong, wrong


def test_the_hooks_the_layers_above_install():
    from pyree.transpiler import convert, eager, trace
    assert trace.hooks.apply_now is eager.apply
    assert trace.hooks.explain_unconverted is convert.explain_unconverted
    # bind outside a trace runs on the device through the hook
    np.testing.assert_allclose(jnp.sin(jnp.arange(3.0)), np.sin(np.arange(3.0)), rtol=1e-6)
    with pytest.raises(TypeError, match="no core hook named"):
        trace.hooks.install(lower=None)


def test_without_an_evaluator_bind_says_what_to_do(monkeypatch):
    from pyree.transpiler import trace
    monkeypatch.setattr(trace.hooks, "apply_now", trace._no_evaluator)
    with pytest.raises(RuntimeError, match="no evaluator is installed"):
        jnp.sin(jnp.arange(3.0))


def _name_lookups(path: pathlib.Path) -> list[int]:
    """Lines of ``path`` that compare a primitive's name with strings (``primitive.name ==
    "cond"``, ``prim.name in ("a", "b")``)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute)
                and node.left.attr == "name" and isinstance(node.left.value, ast.Name)
                and node.left.value.id in ("primitive", "prim", "p")):
            continue
        for right in node.comparators:
            items = right.elts if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else [right]
            if any(isinstance(i, ast.Constant) and isinstance(i.value, str) for i in items):
                lines.append(node.lineno)
    return lines


def test_rules_are_looked_up_by_primitive_not_by_name():
    found = {p.name: _name_lookups(p) for p in TRANSPILER.glob("*.py")}
    assert not {name: lines for name, lines in found.items() if lines}
