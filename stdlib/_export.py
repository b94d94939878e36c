"""Ahead-of-time export: Python functions -> one self-describing ``.vmfb``.

``pyree.export(fn, *specs)`` traces ``fn`` for the given argument shapes, embeds its constants
(closed-over weights), compiles it with IREE for a target and returns the module's bytes. Each
function of the module carries its signature in IREE's reflection attributes (key
``pyree.signature``, JSON): the argument and result pytree structures, shapes and dtypes, the
target and the versions. ``pyree.runtime.load`` reads them back with IREE's runtime alone, and
the file also runs under IREE's own ``iree-run-module``.

A spec is an array (its shape and dtype are used), a ``ShapeDtypeStruct``, or a string such
as ``"f32[32,784]"``, ``"i32[]"``, or a pytree of them (``"(f32[784,512], f32[512])"``,
``"{w: f32[3], b: f32[]}"``).
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, Mapping, Optional, Sequence, Union

import numpy as np

import pyree.numpy  # noqa: F401  (gives traced values their operators: + in a module that
#                                  never imports pyree.numpy still traces)
from pyree import dtypes, tree_util
from pyree.runtime import compile as rcompile
from pyree.runtime.aval import ShapedArray
from pyree.runtime.device import Device
from pyree.runtime.loader import SIGNATURE_KEY, FORMAT_VERSION, decode_tree, seal
from pyree.transpiler.families.host_callbacks import uses_host_callbacks
from pyree.transpiler.programs.jit import JitFunction, ShapeDtypeStruct, estimate_work
from pyree.transpiler.backend.lower import lower_for_export

__all__ = ["export", "export_functions", "parse_spec", "ExportError"]

TARGETS = ("cpu", "cuda", "vulkan")


class ExportError(ValueError):
    """A function cannot be exported as asked (bad spec, unsupported result, bad target)."""


# -- specs ---------------------------------------------------------------------------------------

_DTYPE_NAMES = {
    "bool": np.bool_, "i1": np.bool_, "pred": np.bool_,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "bf16": dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
    "c64": np.complex64, "c128": np.complex128,
}
_TOKEN = re.compile(r"\s*(?:(?P<array>[A-Za-z_][A-Za-z0-9_]*\s*\[[^\]]*\])|(?P<punct>[()\[\]{},:])"
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*|'[^']*'|\"[^\"]*\"|-?\d+))")


def _spec_dtype(name: str, spec: str) -> np.dtype:
    dtype = _DTYPE_NAMES.get(name)
    if dtype is None:
        try:
            dtype = np.dtype(name)
        except TypeError:
            raise ExportError(f"unknown dtype {name!r} in spec {spec!r} (use f32, f64, bf16, "
                              f"f16, i8..i64, u8..u64, bool, or a NumPy name)") from None
    return np.dtype(dtype)


def _array_spec(token: str, spec: str) -> ShapeDtypeStruct:
    name, dims = token.split("[", 1)
    dims = dims.rstrip("]").strip()
    try:
        shape = tuple(int(d) for d in dims.split(",")) if dims else ()
    except ValueError:
        raise ExportError(f"bad dimensions [{dims}] in spec {spec!r}: dimensions are "
                          f"non-negative integers, e.g. f32[32,784]") from None
    if any(d < 0 for d in shape):
        raise ExportError(f"negative dimension in spec {spec!r}")
    return ShapeDtypeStruct(shape, _spec_dtype(name.strip(), spec))


def parse_spec(spec: str) -> Any:
    """A pytree of ``ShapeDtypeStruct`` from its text form.

    Example::

        parse_spec("f32[32,784]")                     # ShapeDtypeStruct((32, 784), float32)
        parse_spec("(f32[784,512], f32[512])")        # a tuple of two
        parse_spec("{w: f32[3], b: f32[]}")           # a dict
    """
    tokens = []
    pos = 0
    text = spec.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ExportError(f"cannot read spec {spec!r} at {text[pos:]!r}: write e.g. "
                              f"'f32[32,784]', '(f32[3], i32[])' or '{{w: f32[3]}}'")
        kind = match.lastgroup
        tokens.append((kind, match.group(kind)))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    items = iter(tokens + [("end", "")])
    current = [next(items)]

    def take() -> tuple:
        token = current[0]
        current[0] = next(items, ("end", ""))
        return token

    def expect(value: str) -> None:
        kind, got = take()
        if got != value:
            raise ExportError(f"in spec {spec!r}: expected {value!r}, got {got or 'the end'!r}")

    def parse_one() -> Any:
        kind, value = take()
        if kind == "array":
            return _array_spec(value, spec)
        if value in ("(", "["):
            close = ")" if value == "(" else "]"
            children = []
            while current[0][1] != close:
                children.append(parse_one())
                if current[0][1] == ",":
                    take()
                elif current[0][1] != close:
                    break
            expect(close)
            return tuple(children) if value == "(" else children
        if value == "{":
            children = {}
            while current[0][1] != "}":
                key_kind, key = take()
                if key_kind != "name":
                    raise ExportError(f"in spec {spec!r}: expected a key, got {key!r}")
                key = key[1:-1] if key[0] in "'\"" else int(key) if key.lstrip("-").isdigit() \
                    else key
                expect(":")
                children[key] = parse_one()
                if current[0][1] == ",":
                    take()
                elif current[0][1] != "}":
                    break
            expect("}")
            return children
        if kind == "name" and value == "None":
            return None
        raise ExportError(f"in spec {spec!r}: unexpected {value or 'end'!r}")

    result = parse_one()
    if current[0][0] != "end":
        raise ExportError(f"in spec {spec!r}: unexpected {current[0][1]!r} after the spec")
    return result


def _as_spec(x: Any) -> Any:
    """Strings become ShapeDtypeStructs; arrays and ShapeDtypeStructs stay."""
    return parse_spec(x) if isinstance(x, str) else x


# -- signatures ----------------------------------------------------------------------------------

def encode_tree(treedef: tree_util.PyTreeDef, what: str) -> Any:
    """A pytree structure as JSON data (loader.decode_tree inverts it); containers only."""
    node_type, aux, children, _ = treedef
    if node_type is None:
        return "*"
    encoded = [encode_tree(c, what) for c in children]
    if node_type is type(None):
        return None
    if node_type is tuple:
        return {"tuple": encoded}
    if node_type is list:
        return {"list": encoded}
    if node_type in (dict, tree_util._OrderedDict, tree_util._defaultdict):
        keys = aux[1] if node_type is tree_util._defaultdict else aux
        for key in keys:
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise ExportError(f"{what}: dict keys must be str or int to be exported, got "
                                  f"{key!r}")
        return {"dict": [[k, c] for k, c in zip(keys, encoded)]}
    if issubclass(node_type, tuple) and hasattr(node_type, "_fields"):
        return {"namedtuple": node_type.__name__, "fields": list(node_type._fields),
                "children": encoded}
    raise ExportError(f"{what} contain a {node_type.__name__}, a custom pytree node: an exported "
                      f"module describes tuples, lists, dicts, namedtuples and None only")


def _avals_json(avals: Sequence[ShapedArray]) -> list:
    return [[np.dtype(a.dtype).name, list(a.shape)] for a in avals]


def _target_flags(target: str, cpu: Optional[str]) -> tuple[str, ...]:
    if target not in TARGETS:
        raise ExportError(f"unknown target {target!r}: choose one of {', '.join(TARGETS)}")
    flags = Device(target).target_flags
    if target == "cpu":
        cpu_flags = tuple(f for f in rcompile.CPU_FLAGS
                          if not f.startswith("--iree-llvmcpu-target-cpu="))
        flags += (f"--iree-llvmcpu-target-cpu={cpu or 'host'}",) + cpu_flags
    elif cpu is not None:
        raise ExportError(f"cpu={cpu!r} applies to the cpu target only")
    return flags + rcompile.COMMON_FLAGS


def _trace(name: str, fn: Callable, specs: Sequence[Any], kwargs: Mapping[str, Any],
           source: str) -> tuple:
    jitted = fn if isinstance(fn, JitFunction) else JitFunction(fn, None, None)
    args = tuple(_as_spec(s) for s in specs)
    kwargs = {k: _as_spec(v) for k, v in kwargs.items()}
    static, in_tree, avals = jitted._abstract_signature(args, kwargs)
    closed, out_tree = jitted._trace(static, in_tree, avals)
    if closed.has_token:
        raise ExportError(f"{name}: functions with runtime checks (assert on traced values) "
                          f"cannot be exported yet")
    if uses_host_callbacks(closed.ir.eqns):
        raise ExportError(f"{name}: functions that call pyree.pure_callback cannot be exported: "
                          f"the callback is Python code, which a .vmfb cannot carry")
    signature = {
        "format": FORMAT_VERSION, "function": name, "source": source,
        "inputs": {"tree": encode_tree(in_tree, f"{name}'s arguments"),
                   "avals": _avals_json(closed.in_avals)},
        "outputs": {"tree": encode_tree(out_tree, f"{name}'s results"),
                    "avals": _avals_json(closed.out_avals)},
        "work": estimate_work(closed),
    }
    decode_tree(signature["inputs"]["tree"])  # what the loader will read must be readable
    return closed, signature


def export_functions(functions: Mapping[str, tuple], *, target: str = "cpu",
                     cpu: Optional[str] = None, path: Union[str, os.PathLike, None] = None
                     ) -> bytes:
    """Compile several functions into one ``.vmfb``: ``{name: (fn, specs)}`` or ``{name: (fn,
    specs, kwargs)}``, where ``specs`` is a tuple of argument specs and ``kwargs`` maps keyword
    arguments to specs. ``fn`` may be a ``pyree.jit`` function with static arguments: give
    their values where their specs would go.

    Example::

        vmfb = pyree.export_functions({"predict": (predict, (params, "f32[32,784]")),
                                       "loss": (loss, (params, "f32[32,784]", "i32[32]"))})
    """
    from pyree import __version__
    from pyree.runtime.compile import compiler_version

    if not functions:
        raise ExportError("nothing to export: give at least one function")
    flags = _target_flags(target, cpu)
    entries = []
    for name, entry in functions.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
            raise ExportError(f"exported function names are identifiers, got {name!r}")
        try:
            fn, specs, kwargs = entry if len(entry) == 3 else (*entry, {})
        except (TypeError, ValueError):
            raise ExportError(f"{name}: expected (function, (specs...)) or (function, "
                              f"(specs...), {{keyword: spec or static value}}), got {entry!r}"
                              ) from None
        if not callable(fn):
            raise ExportError(f"{name}: {fn!r} is not callable")
        source = getattr(fn, "__qualname__", getattr(fn, "__name__", ""))
        closed, signature = _trace(name, fn, tuple(specs), dict(kwargs), source)
        signature.update({"target": target, "cpu": cpu if target == "cpu" else None,
                          "pyree": __version__, "iree": compiler_version()})
        entries.append((name, closed, {SIGNATURE_KEY: json.dumps(signature)}))
    lowered = lower_for_export(entries, platform=target)
    vmfb = seal(rcompile.compile_mlir(lowered.text, flags,
                                      cache_text=lowered.text_without_locations))
    if path is not None:
        with open(path, "wb") as f:
            f.write(vmfb)
    return vmfb


def export(fn: Callable, *specs: Any, target: str = "cpu", cpu: Optional[str] = None,
           name: Optional[str] = None, path: Union[str, os.PathLike, None] = None) -> bytes:
    """Compile ``fn`` for the given argument specs into a ``.vmfb`` (bytes; also written to
    ``path`` if given) that ``pyree.runtime.load`` and ``iree-run-module`` run.

    ``target`` is ``"cpu"``, ``"cuda"`` or ``"vulkan"``; ``cpu`` names the CPU to generate code
    for (``"host"``, the default, is this machine's; ``"generic"`` runs on any x86-64).

    Example::

        vmfb = pyree.export(predict, params, "f32[32,784]", path="predict.vmfb")
        model = pyree.runtime.load("predict.vmfb")
        model.predict(params, batch)
    """
    name = name or getattr(fn, "__name__", "main")
    if name == "<lambda>":
        name = "main"
    return export_functions({name: (fn, specs)}, target=target, cpu=cpu, path=path)
