"""The transpiler: a function's Python AST rewritten so its control flow works on traced values.

``converted(fn)`` parses ``fn``'s source, rewrites it, compiles the result with ``fn``'s globals
and closure cells, and caches it per code object. The rewrite, one pass per concern:

1. ``x[i] = v`` / ``x[i] += v`` become ``x = setitem(x, i, v)`` (functional for arrays); a
   ``while`` whose test binds a name (``:=``) gets the test moved into its body.
2. ``return`` inside control flow becomes a flag and a value slot, the rest of each block
   guarded by ``if not returned``; loops also stop on the flag.
3. ``break``/``continue`` become flags likewise.
4. ``if``/``while``/``for``, conditional expressions, ``and``/``or``/``not``, chained
   comparisons and ``assert`` become calls of operators.py, which decide at trace time whether
   the condition is static (plain Python) or traced (structured control flow); every call goes
   through ``operators.call`` so called user functions are converted too.

Line numbers are kept, so tracebacks, IR locations and error messages name the user's lines.
Library code (pyree, NumPy, the standard library, installed packages) is never converted.
"""
from __future__ import annotations

import ast
import copy
import functools
import linecache
import os
import site
import sysconfig
import threading
import types
import weakref
from typing import Any, Callable, Iterable, Optional

from ..core import trace
from . import operators

OPS = "_pyree"  # the name under which converted code sees operators.py
_PREFIX = "_pyree_"


# -- which functions ----------------------------------------------------------------------------

_LIBRARY_MODULES = ("pyree", "numpy", "jax", "jaxlib", "scipy", "ml_dtypes", "iree", "builtins")


def _library_dirs() -> tuple[str, ...]:
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.realpath(path))
    try:
        dirs.update(os.path.realpath(p) for p in site.getsitepackages())
    except AttributeError:  # some virtualenvs
        pass
    user = getattr(site, "getusersitepackages", lambda: None)()
    if user:
        dirs.add(os.path.realpath(user))
    return tuple(d + os.sep for d in dirs)


_LIBRARY_DIRS = _library_dirs()


def is_library(fn: Any) -> bool:
    """Whether ``fn`` belongs to library code that is called, never converted."""
    module = getattr(fn, "__module__", None) or ""
    # The module whose globals the code runs in: a wrapper made with functools.wraps (as
    # grad's) carries the wrapped function's __module__.
    defining = (getattr(fn, "__globals__", None) or {}).get("__name__") or ""
    if module.split(".")[0] in _LIBRARY_MODULES or defining.split(".")[0] in _LIBRARY_MODULES:
        return True
    code = getattr(fn, "__code__", None)
    if code is None:
        return True
    filename = code.co_filename
    if filename.startswith("<"):
        return False
    return os.path.realpath(filename).startswith(_LIBRARY_DIRS)


# -- converting ------------------------------------------------------------------------------------

class _Conversion:
    __slots__ = ("code", "reason", "source", "name")

    def __init__(self, code=None, reason: str = "", source: str = "", name: str = "") -> None:
        self.code = code
        self.reason = reason
        self.source = source
        self.name = name


_conversions: dict[Any, _Conversion] = {}
_converted_codes: set = set()  # code objects that conversion produced (already converted)
_functions: "weakref.WeakKeyDictionary[Any, Callable]" = weakref.WeakKeyDictionary()
_lock = threading.RLock()


def unconverted_reason(code: Any) -> Optional[str]:
    """Why the function with this code object is traced without conversion (None if it is
    converted, or was never asked for)."""
    conversion = _conversions.get(code)
    return conversion.reason if conversion is not None and conversion.code is None else None


def explain_unconverted(code: Any) -> str:
    """The note a traced value's ``bool`` error adds about the user's function with this code
    object: why pyree did not convert it, or which statements it converts, or ''."""
    reason = unconverted_reason(code)
    if reason is None:
        if code in _converted_codes:
            return ("\n(pyree converted this function, but this use of the value is not a "
                    "statement it converts: an `if`/`while`/`for`, `and`/`or`/`not`, a "
                    "conditional expression or `assert`.)")
        return ""
    return (f"\npyree did not convert `{code.co_name}` into structured control flow because "
            f"{reason}.")


def converted(fn: Any) -> Any:
    """``fn`` with its control flow converted, or ``fn`` itself when it is library code or
    cannot be converted (the reason is kept for error messages).

    Example::

        g = converted(f)      # g(x) works on traced x even where f uses `if x > 0:`
    """
    from ..programs.jit import JitFunction
    if isinstance(fn, JitFunction):
        return converted(fn._fun)
    if isinstance(fn, types.MethodType):
        func = converted(fn.__func__)
        return fn if func is fn.__func__ else types.MethodType(func, fn.__self__)
    if isinstance(fn, functools.partial):
        func = converted(fn.func)
        return fn if func is fn.func else functools.partial(func, *fn.args, **fn.keywords)
    if isinstance(fn, type) and type(fn) is type and fn.__new__ is object.__new__:
        # A user class: constructing it runs its __init__, which is converted too.
        init = getattr(fn, "__init__", None)
        conv_init = converted(init) if isinstance(init, types.FunctionType) else init
        if conv_init is init:
            return fn

        def construct(*args: Any, **kwargs: Any) -> Any:
            obj = object.__new__(fn)
            conv_init(obj, *args, **kwargs)
            return obj
        return construct
    if not isinstance(fn, types.FunctionType):
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, types.FunctionType) and not is_library(call) and \
                not isinstance(fn, type):
            conv = converted(call)
            return fn if conv is call else functools.partial(conv, fn)
        return fn
    try:
        return _functions[fn]
    except KeyError:
        pass
    if fn.__code__ in _converted_codes or is_library(fn):
        result = fn
    else:
        conversion = _conversion(fn)
        result = fn if conversion.code is None else _bind(conversion, fn)
    if result is not fn:  # (fn as its own value would be a strong reference to a weak key)
        try:
            _functions[fn] = result
        except TypeError:
            pass
    return result


def converted_source(fn: Callable) -> str:
    """The Python source pyree runs in place of ``fn`` under ``jit`` (for debugging).

    Example::

        print(pyree.transpiler.converted_source(f))
    """
    from ..programs.jit import JitFunction
    if isinstance(fn, JitFunction):
        fn = fn._fun
    fn = getattr(fn, "__func__", fn)
    conversion = _conversion(fn)
    if conversion.code is None:
        raise ValueError(f"{fn.__qualname__} is not converted: {conversion.reason}")
    return conversion.source


def _conversion(fn: types.FunctionType) -> _Conversion:
    code = fn.__code__
    with _lock:
        conversion = _conversions.get(code)
        if conversion is None:
            try:
                conversion = _convert(fn)
            except ConversionImpossible as e:
                conversion = _Conversion(reason=str(e))
            _conversions[code] = conversion
    return conversion


def _bind(conversion: _Conversion, fn: types.FunctionType) -> types.FunctionType:
    """The converted code with ``fn``'s globals, defaults and closure cells."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    closure = []
    for name in conversion.code.co_freevars:
        if name == OPS:
            closure.append(types.CellType(operators))
        elif name in cells:
            closure.append(cells[name])
        else:
            closure.append(types.CellType())
    new = types.FunctionType(conversion.code, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(closure) or None)
    new.__kwdefaults__ = copy.copy(fn.__kwdefaults__)
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__dict__.update(fn.__dict__)
    # No __wrapped__ = fn: _functions maps fn weakly to this function, and a reference back
    # to fn from its value would keep every converted function alive forever (each
    # pyree.jit(lambda ...) kept ~55 KB: its compiled module, IR and MLIR text).
    return new


class ConversionImpossible(Exception):
    """Why a function is traced without conversion."""


# -- finding the source ----------------------------------------------------------------------------

_parsed: dict[tuple[str, int], ast.Module] = {}
# id(node) -> its parent, for the nodes of the trees in _parsed (which keep the ids valid). Kept
# out of the nodes themselves: a parent link in a node would make copy.deepcopy of any node copy
# the whole module (slow, and past the recursion limit in large files).
_parents: dict[int, ast.AST] = {}


def _module_ast(filename: str, lines: list[str]) -> ast.Module:
    key = (filename, hash("".join(lines)))
    tree = _parsed.get(key)
    if tree is None:
        tree = ast.parse("".join(lines), filename)
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                _parents[id(child)] = node
        _parsed[key] = tree
    return tree


def _find_node(fn: types.FunctionType) -> tuple[ast.AST, str, Optional[str]]:
    """The function's AST node, its file name, and the class whose body defines it (for
    private-name mangling)."""
    code = fn.__code__
    filename = code.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    if not lines:
        raise ConversionImpossible(
            f"its source code is not available (file {filename!r}: defined in an interactive "
            f"session, with exec, or in a compiled module)")
    try:
        tree = _module_ast(filename, lines)
    except SyntaxError as e:
        raise ConversionImpossible(f"its file {filename!r} could not be parsed: {e}") from None
    first = code.co_firstlineno
    # The code's name, not __name__: functools.wraps gives a wrapper the wrapped one's name.
    name = code.co_name
    lam = name == "<lambda>"
    candidates = []
    for node in ast.walk(tree):
        if lam and isinstance(node, ast.Lambda) and node.lineno == first:
            candidates.append(node)
        elif not lam and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name == name:
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            if start == first:
                candidates.append(node)
    if lam and len(candidates) > 1:
        # Empty spans (RESUME and other artificial instructions sit at column 0) say nothing.
        cols = [c for _, _, c, e in code.co_positions() if c is not None and e is not None
                and e > c]
        col = min(cols) if cols else None
        matching = [n for n in candidates if n.body.col_offset == col]
        candidates = matching or candidates
    if len(candidates) != 1:
        raise ConversionImpossible(
            f"its definition could not be located in {filename}:{first}" +
            (" (several lambdas on one line)" if candidates else ""))
    node = candidates[0]
    if isinstance(node, ast.AsyncFunctionDef):
        raise ConversionImpossible("async functions are not converted")
    cls = None
    parent = _parents.get(id(node))
    if isinstance(parent, ast.ClassDef):
        cls = parent.name
    return node, filename, cls


def _convert(fn: types.FunctionType) -> _Conversion:
    node, filename, cls = _find_node(fn)
    if isinstance(node, ast.Lambda):
        fdef = ast.FunctionDef(name=_PREFIX + "lambda", args=copy.deepcopy(node.args),
                               body=[ast.Return(value=copy.deepcopy(node.body))],
                               decorator_list=[], returns=None, type_comment=None)
        ast.copy_location(fdef, node)
        ast.copy_location(fdef.body[0], node.body)
    else:
        fdef = copy.deepcopy(node)
        fdef.decorator_list = []
    for sub in ast.walk(fdef):
        if isinstance(sub, (ast.Yield, ast.YieldFrom)) and _owner(fdef, sub) is fdef:
            raise ConversionImpossible(
                f"it is a generator (`yield` at line {sub.lineno}): generators are traced "
                f"without conversion")
    fdef = _SubscriptAssignments().visit(fdef)
    fdef = _WhileTestAssignments().visit(fdef)
    fdef = _lower_returns_everywhere(fdef, filename)
    fdef = _lower_break_continue_everywhere(fdef)
    fdef = _ControlFlow(filename).visit(fdef)
    ast.fix_missing_locations(fdef)
    source = ast.unparse(fdef)
    code = _compile(fdef, fn, filename, cls)
    _register_codes(code)
    return _Conversion(code=code, source=source, name=fn.__qualname__)


def _owner(root: ast.AST, target: ast.AST) -> ast.AST:
    """The innermost function (or lambda) inside ``root`` that contains ``target``."""
    found = root

    def visit(node: ast.AST, owner: ast.AST) -> bool:
        nonlocal found
        if node is target:
            found = owner
            return True
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) \
            and node is not root else owner
        return any(visit(child, inner) for child in ast.iter_child_nodes(node))

    visit(root, root)
    return found


def _compile(fdef: ast.FunctionDef, fn: types.FunctionType, filename: str,
             cls: Optional[str]) -> Any:
    freevars = [n for n in fn.__code__.co_freevars if n != "__class__"]
    placeholders = [ast.Assign(targets=[ast.Name(id=n, ctx=ast.Store())],
                               value=ast.Constant(value=None)) for n in [OPS] + freevars]
    if fdef.name not in freevars:
        # The `def` would make the function's own name a local of the factory, and so a
        # (never filled) closure cell in the function: a recursive call by its global name, or
        # a method `max` calling the builtin `max`, would fail with NameError.
        placeholders.append(ast.Global(names=[fdef.name]))
    factory = ast.FunctionDef(
        name=_PREFIX + "factory", args=ast.arguments(posonlyargs=[], args=[], vararg=None,
                                                     kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                     defaults=[]),
        body=placeholders + [fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    body: list[ast.stmt] = [factory]
    if cls is not None:  # compile inside a class of the same name: private names mangle alike
        body = [ast.ClassDef(name=cls, bases=[], keywords=[], body=[factory], decorator_list=[])]
    module = ast.Module(body=body, type_ignores=[])
    for node in ast.walk(module):
        if not hasattr(node, "lineno") and isinstance(node, (ast.stmt, ast.expr)):
            ast.copy_location(node, fdef)
    ast.fix_missing_locations(module)
    module_code = compile(module, filename, "exec")
    code = _find_code(module_code, fdef.name)
    if code is None:
        raise ConversionImpossible("the converted function could not be found after compiling")
    return code


def _find_code(code: Any, name: str) -> Any:
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            if const.co_name == name and const.co_name != _PREFIX + "factory":
                return const
            found = _find_code(const, name)
            if found is not None:
                return found
    return None


def _register_codes(code: Any) -> None:
    _converted_codes.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _register_codes(const)


# -- AST helpers -------------------------------------------------------------------------------------

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _walk_scope(nodes: Iterable[ast.AST]) -> Iterable[ast.AST]:
    """Every node in ``nodes`` without entering nested scopes (their names are their own)."""
    stack = list(nodes)[::-1]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, _SCOPES):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stack.extend(reversed(node.decorator_list))
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for elt in target.elts for n in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    return []


def _assignments(nodes: Iterable[ast.AST]) -> list[tuple[str, int]]:
    """(name, line) of every binding of a local name in ``nodes``, in source order."""
    found: list[tuple[str, int]] = []
    for node in _walk_scope(nodes):
        names: list[str] = []
        if isinstance(node, ast.Assign):
            for t in node.targets:
                names += _target_names(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            names += _target_names(node.target) if (
                not isinstance(node, ast.AnnAssign) or node.value is not None) else []
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            names += _target_names(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            names += _target_names(node.optional_vars)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.append(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.NamedExpr):
            names += _target_names(node.target)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                names += _target_names(t)
        line = getattr(node, "lineno", 0)
        found += [(n, line) for n in names]
    return found


def _is_helper(name: str) -> bool:
    """Functions and temporaries the converter makes: never state of the user's program."""
    return name.startswith(_PREFIX) and not name.startswith(
        (_PREFIX + "break", _PREFIX + "continue", _PREFIX + "returned", _PREFIX + "retval"))


def _state_names(nodes: Iterable[ast.AST]) -> list[str]:
    seen: dict[str, None] = {}
    for name, _ in _assignments(nodes):
        if not _is_helper(name):
            seen.setdefault(name)
    return list(seen)


def _last_lines(nodes: Iterable[ast.AST], names: list[str]) -> tuple[int, ...]:
    last: dict[str, int] = {}
    for name, line in _assignments(nodes):
        last[name] = max(line, last.get(name, 0))
    return tuple(last.get(n, 0) for n in names)


def _name(id_: str, store: bool = False) -> ast.Name:
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _ops(attr: str) -> ast.Attribute:
    return ast.Attribute(value=_name(OPS), attr=attr, ctx=ast.Load())


def _call(attr: str, *args: ast.expr, keywords: Optional[list] = None) -> ast.Call:
    return ast.Call(func=_ops(attr), args=list(args), keywords=keywords or [])


def _assign(name: str, value: ast.expr, like: ast.AST) -> ast.Assign:
    return ast.copy_location(ast.Assign(targets=[_name(name, True)], value=value), like)


def _contains(stmt: ast.AST, kinds: tuple, stop: tuple) -> bool:
    """Whether ``stmt`` contains a node of ``kinds`` outside nested ``stop`` nodes."""
    stack = list(ast.iter_child_nodes(stmt))
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, stop):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _on_first_line(call: ast.Call, node: ast.stmt) -> ast.Call:
    """``call`` (and its parts without a location) placed on ``node``'s first line. Spanning the
    whole statement would make CPython attribute the call to its last line, and so the MLIR
    location of the structured op and error positions to the end of the block."""
    for sub in ast.walk(call):
        if sub is call or isinstance(sub, (ast.expr, ast.stmt)) and not hasattr(sub, "lineno"):
            sub.lineno = sub.end_lineno = node.lineno
            sub.col_offset = node.col_offset
            sub.end_col_offset = node.col_offset + 1
    return call


def _not(expr: ast.expr) -> ast.expr:
    return ast.UnaryOp(op=ast.Not(), operand=expr)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


# -- pass 1: subscript assignment --------------------------------------------------------------------

def _index_expr(index: ast.expr) -> ast.expr:
    """A subscript's index as an ordinary expression (slices become ``slice(...)`` calls)."""
    if isinstance(index, ast.Slice):
        parts = [p if p is not None else ast.Constant(value=None)
                 for p in (index.lower, index.upper, index.step)]
        return ast.Call(func=_name("slice"), args=parts, keywords=[])
    if isinstance(index, ast.Tuple):
        return ast.Tuple(elts=[_index_expr(e) for e in index.elts], ctx=ast.Load())
    return index


def _load(target: ast.expr) -> ast.expr:
    node = copy.deepcopy(target)
    for sub in ast.walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return node


def _rebindable_names(scope: ast.AST) -> set[str]:
    """The names a function may rebind: its parameters, the names it assigns (so they are its
    locals) and those it declares ``global`` or ``nonlocal``."""
    names: set[str] = set()
    args = scope.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            names.add(a.arg)
    for node in _walk_scope(scope.body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


class _SubscriptAssignments(ast.NodeTransformer):
    """``x[i] = v`` -> ``x = setitem(x, i, v)``; ``x[i] += v`` -> ``x = setitem_op(...)``.
    Only where the function may rebind ``x``: a container of an enclosing scope or a global
    (``cache[key] = value`` in a nested function) is updated in place as Python does, since
    binding ``x`` would make it a local of the function (UnboundLocalError)."""

    def __init__(self) -> None:
        self._rebindable: list[set[str]] = []

    def _visit_scope(self, node: ast.AST) -> ast.AST:
        self._rebindable.append(_rebindable_names(node))
        try:
            self.generic_visit(node)
        finally:
            self._rebindable.pop()
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _visit_scope

    def _may_rebind(self, target: ast.Subscript) -> bool:
        base = target.value
        while isinstance(base, ast.Subscript):
            base = base.value
        return (not isinstance(base, ast.Name) or not self._rebindable
                or base.id in self._rebindable[-1])

    def _store_target(self, target: ast.expr) -> ast.expr:
        node = copy.deepcopy(target)
        node.ctx = ast.Store()
        return node

    def _rewrite(self, target: ast.Subscript, value: ast.expr) -> tuple[ast.expr, ast.expr]:
        """(what to assign to, the new value) for ``target = value``, unwinding x[i][j]."""
        new = _call("setitem", _load(target.value), _index_expr(target.slice), value)
        base = target.value
        if isinstance(base, ast.Subscript):
            return self._rewrite(base, new)
        return self._store_target(base), new

    def visit_Assign(self, node: ast.Assign) -> Any:
        self.generic_visit(node)
        if not any(isinstance(t, ast.Subscript) and self._may_rebind(t) for t in node.targets):
            return node
        if len(node.targets) == 1:
            target, value = self._rewrite(node.targets[0], node.value)
            return ast.copy_location(ast.Assign(targets=[target], value=value), node)
        tmp = _PREFIX + f"value_{node.lineno}_{node.col_offset}"
        out = [_assign(tmp, node.value, node)]
        for t in node.targets:
            if isinstance(t, ast.Subscript) and self._may_rebind(t):
                target, value = self._rewrite(t, _name(tmp))
                out.append(ast.copy_location(ast.Assign(targets=[target], value=value), node))
            else:
                out.append(ast.copy_location(ast.Assign(targets=[t], value=_name(tmp)), node))
        return out

    _OPS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide",
            ast.Pow: "power", ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.MatMult: "matmul",
            ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor", ast.LShift: "lshift",
            ast.RShift: "rshift"}

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        self.generic_visit(node)
        if not isinstance(node.target, ast.Subscript) or not self._may_rebind(node.target):
            return node
        t = node.target
        new = _call("setitem_op", _load(t.value), _index_expr(t.slice), node.value,
                    ast.Constant(value=self._OPS[type(node.op)]))
        if isinstance(t.value, ast.Subscript):
            target, value = self._rewrite(t.value, new)
        else:
            target, value = self._store_target(t.value), new
        return ast.copy_location(ast.Assign(targets=[target], value=value), node)


class _WhileTestAssignments(ast.NodeTransformer):
    """``while (n := n + 1) < k: body`` -> ``while True: if not ((n := n + 1) < k): break``
    then ``body``: a converted test is a function of its own, so a name it binds (``:=``) would
    be bound there, not in the loop's state."""

    def visit_While(self, node: ast.While) -> Any:
        self.generic_visit(node)
        if not any(isinstance(n, ast.NamedExpr) for n in _walk_scope([node.test])):
            return node
        if any(_contains(s, (ast.Break, ast.Continue), _FUNCTIONS + _LOOPS) or
               isinstance(s, (ast.Break, ast.Continue)) for s in node.orelse):
            return node  # moved into the loop, the else part's break would change meaning
        leave = ast.copy_location(ast.If(test=_not(node.test), body=node.orelse + [
            ast.copy_location(ast.Break(), node.test)], orelse=[]), node.test)
        node.test = ast.copy_location(ast.Constant(value=True), node.test)
        node.body = [leave] + node.body
        node.orelse = []  # now run inside the loop, when the test fails
        return node


# -- pass 2: return ---------------------------------------------------------------------------------

RETURNED, RETVAL = _PREFIX + "returned", _PREFIX + "retval"
_COMPOUND = (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)


def _lower_returns_everywhere(root: ast.FunctionDef, filename: str) -> ast.FunctionDef:
    for node in list(ast.walk(root)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _lower_returns(node, filename)
    return root


def _lower_returns(fdef: ast.FunctionDef, filename: str) -> None:
    nested_return = any(isinstance(s, _COMPOUND) and _contains(s, (ast.Return,), _FUNCTIONS)
                        for s in fdef.body)
    if not nested_return or any(isinstance(n, (ast.Yield, ast.YieldFrom)) and _owner(fdef, n)
                                is fdef for n in ast.walk(fdef)):
        return
    start = [_assign(RETURNED, ast.Constant(value=False), fdef),
             _assign(RETVAL, _ops("UNDEFINED_RETURN"), fdef)]
    body = _return_block(fdef.body)
    meta = operators.Meta.pack("function", fdef.lineno, names=(fdef.name,))
    end = ast.copy_location(ast.Return(value=_call(
        "final_return", _name(RETURNED), _name(RETVAL), ast.Constant(value=meta),
        ast.Constant(value=filename))), fdef)
    fdef.body = start + body + [end]


def _return_block(stmts: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for k, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Return):
            value = stmt.value if stmt.value is not None else ast.Constant(value=None)
            out += [_assign(RETVAL, value, stmt), _assign(RETURNED, ast.Constant(value=True), stmt)]
            return out  # the rest of the block is unreachable
        returns = isinstance(stmt, _COMPOUND) and _contains(stmt, (ast.Return,), _FUNCTIONS)
        if returns:
            _return_children(stmt)
        out.append(stmt)
        if returns and k + 1 < len(stmts):
            rest = _return_block(stmts[k + 1:])
            guard = ast.If(test=_not(_name(RETURNED)), body=rest,
                           orelse=[_assign(RETURNED, ast.Constant(value=True), stmt)])
            out.append(ast.copy_location(guard, stmts[k + 1]))
            return out
    return out


def _return_children(stmt: ast.stmt) -> None:
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if block:
            setattr(stmt, field, _return_block(block))
    for handler in getattr(stmt, "handlers", []):
        handler.body = _return_block(handler.body)
    if isinstance(stmt, (ast.For, ast.While, ast.AsyncFor)):
        stmt._pyree_stop_flags = getattr(stmt, "_pyree_stop_flags", []) + [RETURNED]


# -- pass 3: break and continue --------------------------------------------------------------------

_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def _lower_break_continue_everywhere(root: ast.FunctionDef) -> ast.FunctionDef:
    counter = [0]

    class Visitor(ast.NodeTransformer):
        def visit_loop(self, node: Any) -> Any:
            self.generic_visit(node)  # inner loops first
            return _lower_loop(node, counter)

        visit_For = visit_While = visit_loop

    return Visitor().visit(root)


def _lower_loop(loop: Any, counter: list) -> Any:
    uses_break = any(_contains(s, (ast.Break,), _FUNCTIONS + _LOOPS) or isinstance(s, ast.Break)
                     for s in loop.body)
    uses_continue = any(_contains(s, (ast.Continue,), _FUNCTIONS + _LOOPS) or
                        isinstance(s, ast.Continue) for s in loop.body)
    if not uses_break and not uses_continue:
        return loop
    counter[0] += 1
    brk = f"{_PREFIX}break_{counter[0]}"
    cont = f"{_PREFIX}continue_{counter[0]}"
    loop.body = _bc_block(loop.body, brk, cont)
    before: list[ast.stmt] = []
    after: list[ast.stmt] = []
    if uses_continue:
        loop.body.insert(0, _assign(cont, ast.Constant(value=False), loop))
    if uses_break:
        before.append(_assign(brk, ast.Constant(value=False), loop))
        loop._pyree_stop_flags = getattr(loop, "_pyree_stop_flags", []) + [brk]
        if loop.orelse:  # `else:` runs when the loop ended without a break
            after.append(ast.copy_location(ast.If(test=_not(_name(brk)), body=loop.orelse,
                                                  orelse=[]), loop.orelse[0]))
            loop.orelse = []
    return before + [loop] + after


def _bc_block(stmts: list[ast.stmt], brk: str, cont: str) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for k, stmt in enumerate(stmts):
        if isinstance(stmt, ast.Break):
            out.append(_assign(brk, ast.Constant(value=True), stmt))
            return out
        if isinstance(stmt, ast.Continue):
            out.append(_assign(cont, ast.Constant(value=True), stmt))
            return out
        sets = set()
        if not isinstance(stmt, _LOOPS):
            if _contains(stmt, (ast.Break,), _FUNCTIONS + _LOOPS):
                sets.add(brk)
            if _contains(stmt, (ast.Continue,), _FUNCTIONS + _LOOPS):
                sets.add(cont)
        if sets:
            for field in ("body", "orelse", "finalbody"):
                block = getattr(stmt, field, None)
                if block:
                    setattr(stmt, field, _bc_block(block, brk, cont))
            for handler in getattr(stmt, "handlers", []):
                handler.body = _bc_block(handler.body, brk, cont)
        out.append(stmt)
        if sets and k + 1 < len(stmts):
            flags = sorted(sets)
            test = _name(flags[0]) if len(flags) == 1 else ast.BoolOp(
                op=ast.Or(), values=[_name(f) for f in flags])
            out.append(ast.copy_location(ast.If(test=_not(test),
                                                body=_bc_block(stmts[k + 1:], brk, cont),
                                                orelse=[]), stmts[k + 1]))
            return out
    return out


# -- pass 4: control flow --------------------------------------------------------------------------

_NO_WRAP = {"super", "locals", "globals", "vars", "eval", "exec", "dir", "slice"}


class _Scope:
    def __init__(self, fdef: Any) -> None:
        body = fdef.body if isinstance(fdef.body, list) else [fdef.body]
        self.lines: dict[str, list[int]] = {}
        for name, line in _assignments(body):
            self.lines.setdefault(name, []).append(line)
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        for node in _walk_scope(body):
            if isinstance(node, ast.Global):
                self.globals.update(node.names)
            elif isinstance(node, ast.Nonlocal):
                self.nonlocals.update(node.names)
        self.outer = self.globals | self.nonlocals

    def before(self, name: str, line: int) -> int:
        earlier = [ln for ln in self.lines.get(name, []) if ln < line]
        return max(earlier) if earlier else 0


class _ControlFlow(ast.NodeTransformer):
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.scopes: list[_Scope] = []
        self.try_depth = 0
        self.counter = 0

    def _fresh(self, kind: str) -> str:
        self.counter += 1
        return f"{_PREFIX}{kind}_{self.counter}"

    # scopes
    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        if any(isinstance(n, (ast.Yield, ast.YieldFrom)) and _owner(node, n) is node
               for n in ast.walk(node)):
            return node  # a nested generator: left as it is
        self.scopes.append(_Scope(node))
        depth, self.try_depth = self.try_depth, 0
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.body = self._visit_block(node.body)
        self.try_depth = depth
        self.scopes.pop()
        return node

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        self.scopes.append(_Scope(node))
        node.body = self.visit(node.body)
        self.scopes.pop()
        return node

    def _visit_block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for stmt in stmts:
            result = self.visit(stmt)
            if isinstance(result, list):
                out.extend(result)
            elif result is not None:
                out.append(result)
        return out

    def visit_Try(self, node: ast.Try) -> Any:
        self.try_depth += 1
        node.body = self._visit_block(node.body)
        for handler in node.handlers:
            handler.body = self._visit_block(handler.body)
        node.orelse = self._visit_block(node.orelse)
        self.try_depth -= 1
        node.finalbody = self._visit_block(node.finalbody)
        return node

    visit_TryStar = visit_Try

    def visit_With(self, node: ast.With) -> Any:
        node.items = [self.visit(item) for item in node.items]
        node.body = self._visit_block(node.body)
        return node

    # statements
    def _meta(self, kind: str, node: ast.stmt, names: list[str], body: list, orelse: list
              ) -> ast.Constant:
        scope = self.scopes[-1]
        outer = tuple(sorted(n for n in _state_names(body + orelse) if n in scope.outer))
        return ast.Constant(value=operators.Meta.pack(
            kind, node.lineno, names=names, body_lines=_last_lines(body, names),
            else_lines=_last_lines(orelse, names),
            before_lines=[scope.before(n, node.lineno) for n in names], outer_writes=outer,
            in_try=self.try_depth > 0))

    def _function(self, name: str, params: list[str], body: list[ast.stmt], returns: ast.expr,
                  like: ast.AST, extra: Optional[list[str]] = None) -> ast.FunctionDef:
        scope = self.scopes[-1]
        assigned = _state_names(body)
        decls: list[ast.stmt] = []
        for kind, declared in ((ast.Global, scope.globals), (ast.Nonlocal, scope.nonlocals)):
            names = [n for n in assigned if n in declared]
            if names:
                decls.append(kind(names=names))
        args = [ast.arg(arg=p) for p in (extra or []) + params]
        fdef = ast.FunctionDef(
            name=name, args=ast.arguments(posonlyargs=[], args=args, vararg=None, kwonlyargs=[],
                                          kw_defaults=[], kwarg=None, defaults=[]),
            body=decls + (body or [ast.Pass()]) + [ast.Return(value=returns)],
            decorator_list=[], returns=None, type_comment=None)
        for sub in ast.walk(fdef):
            if not hasattr(sub, "lineno") and isinstance(sub, (ast.stmt, ast.expr)):
                ast.copy_location(sub, like)
        return ast.copy_location(fdef, like)

    def _names(self, body: list[ast.stmt], extra: Iterable[str] = ()) -> list[str]:
        scope = self.scopes[-1]
        names = [n for n in _state_names(body) if n not in scope.outer]
        for n in extra:
            if n not in names:
                names.append(n)
        return names

    def _state(self, names: list[str]) -> ast.expr:
        return _call("state", ast.Call(func=_name("locals"), args=[], keywords=[]),
                     ast.Constant(value=tuple(names)))

    def _tuple(self, names: list[str]) -> ast.Tuple:
        return ast.Tuple(elts=[_name(n) for n in names], ctx=ast.Load())

    def _assign_names(self, names: list[str], value: ast.expr, like: ast.AST) -> ast.stmt:
        if not names:
            return ast.copy_location(ast.Expr(value=value), like)
        target = ast.Tuple(elts=[_name(n, True) for n in names], ctx=ast.Store())
        return ast.copy_location(ast.Assign(targets=[target], value=value), like)

    def visit_If(self, node: ast.If) -> Any:
        test = self.visit(node.test)
        body = self._visit_block(node.body)
        orelse = self._visit_block(node.orelse)
        names = self._names(body + orelse)
        body_fn = self._function(self._fresh("if_body"), names, body, self._tuple(names), node)
        else_fn = self._function(self._fresh("if_else"), names, orelse, self._tuple(names),
                                 node.orelse[0] if node.orelse else node)
        call = _call("if_stmt", test, _name(body_fn.name), _name(else_fn.name), self._state(names),
                     self._meta("if", node, names, body, orelse), ast.Constant(self.filename))
        return [body_fn, else_fn, self._assign_names(names, _on_first_line(call, node), node)]

    def _stop_test(self, node: Any) -> Optional[ast.expr]:
        flags = getattr(node, "_pyree_stop_flags", [])
        if not flags:
            return None
        return self.visit(_not(ast.BoolOp(op=ast.Or(), values=[_name(f) for f in flags]))
                          if len(flags) > 1 else _not(_name(flags[0])))

    def visit_While(self, node: ast.While) -> Any:
        stop = self._stop_test(node)
        test = node.test if stop is None else ast.BoolOp(op=ast.And(), values=[node.test, stop])
        test = self.visit(ast.copy_location(test, node.test))
        body = self._visit_block(node.body)
        names = self._names(body)
        test_fn = self._function(self._fresh("while_test"), names, [], test, node)
        body_fn = self._function(self._fresh("while_body"), names, body, self._tuple(names), node)
        call = _call("while_stmt", _name(test_fn.name), _name(body_fn.name), self._state(names),
                     self._meta("while", node, names, body, []), ast.Constant(self.filename))
        out = [test_fn, body_fn, self._assign_names(names, _on_first_line(call, node), node)]
        return out + self._visit_block(node.orelse)

    _ITERATORS = {"range": "range_", "enumerate": "enumerate_", "zip": "zip_"}

    def visit_For(self, node: ast.For) -> Any:
        iterable = self.visit(node.iter)
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and \
                iterable.func.id in self._ITERATORS and not iterable.keywords:
            iterable = ast.copy_location(_call(self._ITERATORS[iterable.func.id],
                                               iterable.func, *iterable.args), node.iter)
        elif isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute) and \
                isinstance(iterable.func.value, ast.Name) and iterable.func.value.id == OPS and \
                iterable.func.attr == "call" and isinstance(iterable.args[0], ast.Name) and \
                iterable.args[0].id in self._ITERATORS and not iterable.keywords:
            inner = iterable.args[0]
            iterable = ast.copy_location(_call(self._ITERATORS[inner.id], inner,
                                               *iterable.args[1:]), node.iter)
        body = self._visit_block(node.body)
        target_names = _target_names(node.target)
        names = self._names(body, target_names)
        item = _PREFIX + "item"
        bind = ast.copy_location(ast.Assign(targets=[node.target], value=_name(item)), node)
        body_fn = self._function(self._fresh("for_body"), names, [bind] + body,
                                 self._tuple(names), node, extra=[item])
        stop = self._stop_test(node)
        out: list[ast.stmt] = [body_fn]
        test_arg: ast.expr = ast.Constant(value=None)
        if stop is not None:
            test_fn = self._function(self._fresh("for_test"), names, [], stop, node)
            out.append(test_fn)
            test_arg = _name(test_fn.name)
        call = _call("for_stmt", iterable, _name(body_fn.name), test_arg, self._state(names),
                     self._meta("for", node, names, [bind] + body, []),
                     ast.Constant(self.filename))
        out.append(self._assign_names(names, _on_first_line(call, node), node))
        return out + self._visit_block(node.orelse)

    def visit_Assert(self, node: ast.Assert) -> Any:
        test = self.visit(node.test)
        msg = self.visit(node.msg) if node.msg is not None else ast.Constant(value=None)
        message = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], vararg=None,
                                                kwonlyargs=[], kw_defaults=[], kwarg=None,
                                                defaults=[]), body=msg)
        meta = ast.Constant(value=operators.Meta.pack("assert", node.lineno))
        call = _call("assert_", test, message, meta, ast.Constant(self.filename))
        return ast.copy_location(ast.Expr(value=_on_first_line(call, node)), node)

    # expressions
    def _thunk(self, expr: ast.expr) -> ast.Lambda:
        return ast.copy_location(ast.Lambda(
            args=ast.arguments(posonlyargs=[], args=[], vararg=None, kwonlyargs=[],
                               kw_defaults=[], kwarg=None, defaults=[]), body=expr), expr)

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        test, body, orelse = self.visit(node.test), self.visit(node.body), self.visit(node.orelse)
        meta = ast.Constant(value=operators.Meta.pack(
            "if", node.lineno, names=("<expression>",), body_lines=(node.lineno,),
            else_lines=(node.lineno,), before_lines=(0,), in_try=self.try_depth > 0))
        return ast.copy_location(_call("if_exp", test, self._thunk(body), self._thunk(orelse),
                                       meta, ast.Constant(self.filename)), node)

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        values = [self.visit(v) for v in node.values]
        name = "and_" if isinstance(node.op, ast.And) else "or_"
        return ast.copy_location(_call(name, values[0], *[self._thunk(v) for v in values[1:]]),
                                 node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return ast.copy_location(_call("not_", operand), node)
        node.operand = operand
        return node

    def visit_Compare(self, node: ast.Compare) -> Any:
        left = self.visit(node.left)
        comparators = [self.visit(c) for c in node.comparators]
        if len(node.ops) == 1:
            node.left, node.comparators = left, comparators
            return node
        # a < b < c: each middle operand evaluated once (kept in a temporary), the comparisons
        # joined like `and`.
        parts, prev = [], left
        for i, (op_, comp) in enumerate(zip(node.ops, comparators)):
            if i + 1 < len(comparators):
                tmp = self._fresh("cmp")
                comp = ast.NamedExpr(target=_name(tmp, True), value=comp)
                nxt = _name(tmp)
            else:
                nxt = None
            parts.append(ast.Compare(left=prev, ops=[op_], comparators=[comp]))
            prev = nxt
        # Nested thunks: a temporary bound inside one thunk (a lambda scope of its own) is seen
        # by the next only from within it.
        result = parts[-1]
        for part in reversed(parts[:-1]):
            result = _call("and_", part, self._thunk(ast.copy_location(result, node)))
        return ast.copy_location(result, node)

    def visit_Call(self, node: ast.Call) -> Any:
        node.func = self.visit(node.func)
        node.args = [self.visit(a) for a in node.args]
        node.keywords = [self.visit(k) for k in node.keywords]
        func = node.func
        if isinstance(func, ast.Name) and (func.id in _NO_WRAP or func.id.startswith(_PREFIX)):
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id == OPS:
            return node
        # The wrapper's own nodes take the call's position too: left without one, they get the
        # enclosing statement's, and Python reports that line for the call (inside converted
        # if/while bodies, the line an error names would be the branch's, not the call's).
        wrapper = _ops("call")
        for sub in ast.walk(wrapper):
            ast.copy_location(sub, node)
        return ast.copy_location(ast.Call(func=wrapper, args=[func] + node.args,
                                          keywords=node.keywords), node)


def _reject_undefined(value: Any) -> None:
    """Raise the error of a variable left undefined on some path when ``value`` is one."""
    if isinstance(value, operators.Undefined):
        value.fail()


trace.hooks.install(explain_unconverted=explain_unconverted, converted=converted,
                    reject_undefined=_reject_undefined)
