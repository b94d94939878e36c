"""The transpiler's layers are its folders, from the bottom up: ``core/`` (source positions, the
IR, tracing, the primitives' names), ``interpreters/`` (AD, batching, pruning, NaN checks),
``backend/`` (lowering, eager mode, pmap's interpreter), ``families/`` (the primitives and all of
their rules), ``programs/`` (jit, jit over a mesh) and ``frontend/`` (the AST rewrite). A module
imports nothing from a folder above its own, not even inside a function; what a layer needs from
above is installed as a hook (``trace.hooks``, ``nan_check.apply_unchecked``) or registered by
the families that hold the primitives (``prune.pruning_rules``, ``nan_check.descend_rules``, the
rule tables)."""
import ast
import pathlib

import numpy as np
import pytest

import pyree
import pyree.numpy as jnp

TRANSPILER = pathlib.Path(pyree.transpiler.__file__).parent
ROOMS = ("core", "interpreters", "backend", "families", "programs", "frontend")
# module name -> its folder
MODULES = {path.stem: path.parent.name for path in TRANSPILER.glob("*/*.py")
           if path.stem != "__init__"}
# Below the transpiler: the runtime, and the leaf modules of dtypes, error types, options and
# pytrees (the core may use only the first three).
BELOW = ("pyree.runtime", "pyree.dtypes", "pyree.errors")
LEAVES = BELOW + ("pyree.config", "pyree.tree_util")


def _imports(module: str) -> list[tuple[str, int]]:
    """(what, line) for every import in ``module`` of the transpiler, wherever it stands; a
    module of the transpiler as its bare name."""
    found = []
    path = TRANSPILER / MODULES[module] / f"{module}.py"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = (node.module or "").split(".") if node.module else []
                if parts and parts[-1] in MODULES:       # from .lower / ..backend.lower import x
                    found.append((parts[-1], node.lineno))
                else:                                    # from . / ..backend import lower
                    found += [(a.name, node.lineno) for a in node.names]
            elif node.module == "pyree":
                found += [(f"pyree.{a.name}", node.lineno) for a in node.names]
            elif node.module and node.module.startswith("pyree.transpiler"):
                parts = node.module.split(".")
                found += ([(parts[-1], node.lineno)] if parts[-1] in MODULES else
                          [(a.name, node.lineno) for a in node.names])
            else:
                found.append((node.module, node.lineno))
    return found


def _imports_above(module: str) -> list[str]:
    """The imports of ``module`` that reach above its folder: a transpiler module in a folder
    above, or pyree beyond the leaves below the transpiler."""
    room = MODULES[module]
    allowed = ROOMS[:ROOMS.index(room) + 1]
    below = BELOW if room == "core" else LEAVES
    wrong = []
    for name, line in _imports(module):
        if name in MODULES:
            if MODULES[name] not in allowed:
                wrong.append(f"{room}/{module}.py:{line} imports {MODULES[name]}/{name}")
        elif (name.startswith("pyree") and not name.startswith(below)
              and name not in ("pyree.transpiler", "pyree")):
            wrong.append(f"{room}/{module}.py:{line} imports {name}")
    return wrong


@pytest.mark.parametrize("room", ROOMS)
def test_no_module_imports_from_a_folder_above_its_own(room):
    # (nor from pyree's public layer, which builds on the transpiler: the front end too)
    wrong = [w for module, r in sorted(MODULES.items()) if r == room
             for w in _imports_above(module)]
    assert not wrong, wrong


def test_the_folders_are_the_layers():
    assert set(MODULES.values()) == set(ROOMS)
    assert {p.name for p in TRANSPILER.glob("*.py")} == {"__init__.py"}
    assert MODULES["trace"] == "core" and MODULES["lower"] == "backend"
    assert MODULES["arithmetic"] == "families" and MODULES["convert"] == "frontend"


def test_the_hooks_the_layers_above_install():
    from pyree.transpiler.frontend import convert
    from pyree.transpiler.backend import eager
    from pyree.transpiler.core import trace
    assert trace.hooks.apply_now is eager.apply
    assert trace.hooks.explain_unconverted is convert.explain_unconverted
    assert trace.hooks.converted is convert.converted
    import pyree._sharded_jit
    import pyree._vmap
    from pyree.transpiler.interpreters import batching
    from pyree.transpiler.programs import jit
    # (installed by pyree's public layer: the transpiler imports nothing of it)
    assert batching.vectorize is pyree._vmap.vmap
    assert jit.mesh_partitioner is pyree._sharded_jit
    from pyree.transpiler.families import control_flow
    from pyree.transpiler.interpreters import nan_check, prune
    assert nan_check.apply_unchecked is eager.apply_unchecked
    assert prune.pruning_rules[control_flow.while_p] is not None
    assert control_flow.cond_p in nan_check.descend_rules
    from pyree.transpiler.backend import eager, lower
    from pyree.transpiler.families import gather_scatter, loop_rotation, windows
    assert [r for _, r in lower.REWRITES_BEFORE_LOWERING] == [loop_rotation.rotate_loops,
                                                               gather_scatter.sink_gathers]
    assert control_flow.cond_p in eager.BRANCH_PRIMITIVES
    assert windows.conv_general_dilated_p in lower.WORK_ESTIMATES
    # bind outside a trace runs on the device through the hook
    np.testing.assert_allclose(jnp.sin(jnp.arange(3.0)), np.sin(np.arange(3.0)), rtol=1e-6)
    with pytest.raises(TypeError, match="no core hook named"):
        trace.hooks.install(lower=None)


def test_without_an_evaluator_bind_says_what_to_do(monkeypatch):
    from pyree.transpiler.core import trace
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
    found = {p.name: _name_lookups(p) for p in TRANSPILER.glob("*/*.py")}
    assert not {name: lines for name, lines in found.items() if lines}


def test_a_new_elementwise_function_is_its_declaration_and_rules_in_one_place():
    # What math_functions.py does for exp or sin, done here for x * x: the declaration, the
    # lowering and the JVP; eager mode, jit, grad, vmap and jit over a mesh need nothing more.
    from pyree.transpiler.core import primitives as P
    from pyree.transpiler.interpreters.ad_rules import const, defjvp, mul
    from pyree.transpiler.backend.lower import hlo, lowering_rules
    square_p = P.unary_primitive("square_for_test", P.NUMERIC)
    lowering_rules[square_p] = lambda ctx, x: hlo("multiply", ctx.out_type(), x, x)
    defjvp(square_p, lambda g, x: mul(g, mul(const(2, x), x)))
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    np.testing.assert_array_equal(square_p.bind(jnp.asarray(x)), x * x)
    np.testing.assert_array_equal(pyree.jit(square_p.bind)(x), x * x)
    np.testing.assert_allclose(pyree.grad(lambda v: jnp.sum(square_p.bind(v)))(x), 2 * x)
    rows = x.reshape(2, 4)
    np.testing.assert_array_equal(pyree.vmap(lambda r: square_p.bind(r) + r[0])(rows),
                                  rows * rows + rows[:, :1])
    assert square_p in P.ELEMENTWISE


# -- one primitive, one file ------------------------------------------------------------------------

RULE_TABLES = ("abstract_eval_rules", "lowering_rules", "jvp_rules", "transpose_rules",
               "batching_rules", "EAGER_RULES", "DYNAMIC_PARAMS", "spmd_rules",
               "pruning_rules", "descend_rules", "COMPLEX128_FORMULAS", "VULKAN_NO_FLOAT64",
               "VULKAN_NO_COMPLEX128")
# Sets of primitives that share a policy (bf16 kept, views, effects, eager per shape, ...).
RULE_SETS = ("ELEMENTWISE", "BF16_KEPT_PRIMITIVES", "BF16_CONTRACTIONS", "VIEW_PRIMITIVES",
             "FUSED_SHAPE_PRIMITIVES", "EMPTY_OPERANDS_HANDLED", "STATIC_SHAPE_PRIMITIVES",
             "PASS_THROUGH_PRIMITIVES", "effectful_primitives")
RULE_DECLARERS = ("defjvp", "defjvp_zero", "deflinear", "elementwise_unary",
                  "elementwise_binary")
# A family in several files: control flow (its derivatives and batching are long enough).
FAMILY_FILES = {"control_flow_ad": "control_flow", "control_flow_batching": "control_flow",
                "control_flow_spmd": "control_flow"}


def _table(node: ast.AST) -> str:
    """The name of a table written as ``name`` or ``module.name``."""
    return getattr(node, "id", None) or getattr(node, "attr", "")


def _declared_table(func: ast.AST) -> str:
    name = getattr(func, "id", None) or getattr(func, "attr", None)
    return "abstract_eval_rules" if name.startswith("elementwise_") else "jvp_rules"


def _primitive_names(node: ast.AST, tables: dict) -> set:
    """The primitives (``P.add_p``, ``add_p``) named in ``node``, through module-level tables
    (``_BINARY = {P.add_p: "add", ...}``)."""
    names = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr.endswith("_p"):
            names.add(n.attr)
        elif isinstance(n, ast.Name) and n.id.endswith("_p") and not n.id.startswith("_"):
            names.add(n.id)
        elif isinstance(n, ast.Name) and n.id in tables:
            names |= _primitive_names(tables[n.id], {})
    return names


def _registrations(path: pathlib.Path) -> set:
    """(table, primitive) for every rule ``path`` registers at module level: assignments into
    the rule tables, ``defjvp``-style declarations and ``batching_rules.update``, in loops over
    primitives too."""
    tree = ast.parse(path.read_text())
    tables = {t.id: s.value for s in tree.body if isinstance(s, ast.Assign)
              for t in s.targets if isinstance(t, ast.Name)}
    found = set()

    def visit(statements, loop_primitives):
        for statement in statements:
            if isinstance(statement, ast.For):
                visit(statement.body, _primitive_names(statement.iter, tables))
                continue
            for n in ast.walk(statement):
                if isinstance(n, ast.Assign):
                    for t in n.targets:
                        if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                                and t.value.id in RULE_TABLES):
                            keys = _primitive_names(t.slice, {}) or loop_primitives
                            found.update((t.value.id, k) for k in keys)
                elif isinstance(n, ast.Call) and n.args and (
                        getattr(n.func, "id", None) in RULE_DECLARERS
                        or getattr(n.func, "attr", None) in RULE_DECLARERS):
                    keys = _primitive_names(n.args[0], {}) or loop_primitives
                    found.update((_declared_table(n.func), k) for k in keys)
                elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                      and n.func.attr == "update" and n.args
                      and _table(n.func.value) in RULE_TABLES + RULE_SETS):
                    table, arg = _table(n.func.value), n.args[0]
                    keys = arg.keys if isinstance(arg, ast.Dict) else [arg]
                    found.update((table, k) for key in keys for k in _primitive_names(key, {}))
                elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                      and n.func.attr == "add" and n.args and _table(n.func.value) in RULE_SETS):
                    keys = _primitive_names(n.args[0], {}) or loop_primitives
                    found.update((_table(n.func.value), k) for k in keys)

    visit(tree.body, set())
    return found


def test_each_primitive_has_its_rules_in_one_file():
    # The core primitives are named in primitives.py (the elementwise ones with their shape
    # rule); every rule of theirs, as of every other primitive, is registered by one family.
    from pyree.transpiler.core import primitives as P
    files: dict = {}
    for path in TRANSPILER.glob("*/*.py"):
        for table, primitive in _registrations(path):
            files.setdefault(primitive, set()).add(FAMILY_FILES.get(path.stem, path.stem))
    spread = {p: sorted(f) for p, f in files.items() if len(f) > 1}
    assert not spread, spread
    core = {n for n in dir(P) if n.endswith("_p")}
    assert files["add_p"] == files["select_p"] == files["eq_p"] == {"arithmetic"}   # (eq: loops)
    assert files["pad_p"] == files["dynamic_slice_p"] == {"shapes"}
    assert files["reduce_sum_p"] == {"reductions"}
    assert files["dot_general_p"] == {"dot_general"}
    from pyree.transpiler.backend import eager
    assert eager.EAGER_RULES[P.reduce_sum_p].__module__.endswith(".reductions")
    assert core <= set(files), core - set(files)   # (every core primitive has its family)


def test_the_transpiler_has_no_import_cycle():
    # (Imports inside functions count: a cycle is a cycle whenever it closes.)
    graph = {m: {name for name, _ in _imports(m) if name in MODULES and name != m}
             for m in MODULES}
    seen, on_path = set(), []

    def visit(module):
        if module in on_path:
            cycle = on_path[on_path.index(module):] + [module]
            raise AssertionError(" -> ".join(cycle))
        if module in seen:
            return
        on_path.append(module)
        for dep in sorted(graph[module]):
            visit(dep)
        on_path.pop()
        seen.add(module)

    for module in sorted(graph):
        visit(module)


def test_the_leaves_below_the_transpiler_import_no_pyree_above_them():
    # (config, dtypes, tree_util and errors sit below the transpiler, beside the runtime: with
    # the transpiler importing nothing else of pyree's public layer, the packages form no cycle)
    stdlib = pathlib.Path(pyree.__file__).parent
    wrong = []
    for leaf in ("config", "dtypes", "tree_util", "errors"):
        for node in ast.walk(ast.parse((stdlib / f"{leaf}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:   # from . import config
                names = [f"pyree.{node.module or a.name}" for a in node.names]
            else:
                names = ([node.module or ""] if isinstance(node, ast.ImportFrom) else
                         [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            for name in names:
                if name.startswith("pyree") and not name.startswith(LEAVES):
                    wrong.append(f"{leaf}.py:{node.lineno} imports {name}")
    assert not wrong, wrong
