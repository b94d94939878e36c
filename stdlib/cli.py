"""The ``pyree`` command: compile Python functions to a ``.vmfb``, inspect one, run one.

    pyree compile model.py:predict --arg 'f32[32,784]' -o predict.vmfb
    pyree inspect predict.vmfb
    pyree run predict.vmfb predict --input batch.npy

``inspect`` and ``run`` use IREE's runtime only (no compiler is imported).
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import sys
import traceback
from typing import Any, Callable, Optional, Sequence

import numpy as np

_SPEC_HELP = ("an argument spec: dtype[dims] such as 'f32[32,784]' or 'i32[]' (dtypes f16 bf16 "
              "f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 bool), or a pytree of them: "
              "'(f32[784,512], f32[512])', '[f32[3], f32[3]]', '{w: f32[3], b: f32[]}'")


class CommandError(Exception):
    """A mistake in the command line or its inputs: printed without a traceback."""


def _import_module(module_ref: str) -> Any:
    """``path/to/file.py`` or ``package.module``, imported."""
    if module_ref.endswith(".py") or os.sep in module_ref or "/" in module_ref:
        path = os.path.abspath(module_ref)
        if not os.path.isfile(path):
            raise CommandError(f"no such file: {module_ref}")
        directory = os.path.dirname(path)
        if directory not in sys.path:
            sys.path.insert(0, directory)  # so that the module's own imports resolve
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault(name, module)
        loader = spec.loader
    else:
        loader = None
    try:
        if loader is not None:
            loader.exec_module(module)
            return module
        return importlib.import_module(module_ref)
    except ModuleNotFoundError as e:
        if loader is None and e.name == module_ref.split(".")[0]:
            raise CommandError(f"no module named {module_ref!r} (give a path ending in .py, or "
                               f"a module importable from here)") from None
        raise CommandError(_import_failure(module_ref)) from None
    except Exception:
        raise CommandError(_import_failure(module_ref)) from None


def _import_failure(module_ref: str) -> str:
    lines = traceback.format_exc().rstrip().splitlines()
    return f"importing {module_ref} failed:\n" + "\n".join(lines[-6:])


def _function(target: str) -> tuple[str, Callable]:
    module_ref, sep, name = target.rpartition(":")
    if not sep or not module_ref or not name:
        raise CommandError(f"{target!r}: write MODULE:FUNCTION, e.g. model.py:predict")
    module = _import_module(module_ref)
    fn = module
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            defined = sorted(n for n, v in vars(module).items()
                             if callable(v) and not n.startswith("_")
                             and getattr(v, "__module__", None) == module.__name__)
            raise CommandError(f"{module_ref} has no function {name!r}"
                               f"{'; it defines: ' + ', '.join(defined) if defined else ''}")
    if not callable(fn):
        raise CommandError(f"{target}: {name} is a {type(fn).__name__}, not a function")
    return name.split(".")[-1], fn


def _static_value(assignment: str) -> tuple[str, Any]:
    name, sep, text = assignment.partition("=")
    if not sep or not name.isidentifier():
        raise CommandError(f"--static {assignment!r}: write NAME=VALUE, e.g. --static n=3")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text  # a bare word is a string
    return name, value


def _compile(args: argparse.Namespace) -> int:
    from pyree import _export
    from pyree.transpiler.programs.jit import JitFunction

    statics = dict(_static_value(s) for s in args.static)
    try:
        specs = tuple(_export.parse_spec(s) for s in args.arg)
    except _export.ExportError as e:
        raise CommandError(str(e)) from None
    functions = {}
    for target in args.functions:
        name, fn = _function(target)
        if name in functions:
            raise CommandError(f"two functions named {name!r}")
        if statics:
            fn = JitFunction(getattr(fn, "_fun", fn), None, tuple(statics))
        functions[name] = (fn, specs, statics)
    try:
        vmfb = _export.export_functions(functions, target=args.target, cpu=args.cpu)
    except _export.ExportError as e:
        raise CommandError(str(e)) from None
    except TypeError as e:  # wrong number of specs for the function, a bad static, ...
        raise CommandError(f"tracing failed: {e}") from None
    output = args.output or (os.path.splitext(os.path.basename(
        args.functions[0].rpartition(":")[0]))[0] + ".vmfb")
    with open(output, "wb") as f:
        f.write(vmfb)
    print(f"wrote {output} ({len(vmfb)} bytes): {', '.join(functions)} for {args.target}")
    return 0


def _describe_tree(node: Any, avals: list, indent: str) -> list[str]:
    """Lines showing a signature's structure with its leaves' types."""
    if node == "*":
        return [indent + avals.pop(0).str_short()]
    if node is None:
        return [indent + "None"]
    if "dict" in node:
        lines = [indent + "{"]
        for key, child in node["dict"]:
            sub = _describe_tree(child, avals, indent + "    ")
            lines.append(f"{indent}  {key!r}: {sub[0].strip()}")
            lines.extend(sub[1:])
        return lines + [indent + "}"]
    kind, children = next((k, v) for k, v in node.items() if k in ("tuple", "list", "children"))
    opening = {"tuple": "(", "list": "[", "children": f"{node.get('namedtuple', '')}("}[kind]
    lines = [indent + opening]
    for child in children:
        lines.extend(_describe_tree(child, avals, indent + "  "))
    return lines + [indent + (")" if kind != "list" else "]")]


def _inspect(args: argparse.Namespace) -> int:
    from pyree.runtime.loader import InvalidModuleError, read_signatures

    try:
        signatures = read_signatures(args.vmfb)
    except InvalidModuleError as e:
        raise CommandError(str(e)) from None
    size = os.path.getsize(args.vmfb)
    first = next(iter(signatures.values()))
    print(f"{args.vmfb}: {size} bytes, target {first.get('target')}"
          f"{' (cpu ' + str(first.get('cpu')) + ')' if first.get('cpu') else ''}, "
          f"made by pyree {first.get('pyree')} with IREE {first.get('iree', '').split(':')[0]}")
    for name, signature in signatures.items():
        ins = ", ".join(a.str_short() for a in signature["inputs"]["avals"])
        outs = ", ".join(a.str_short() for a in signature["outputs"]["avals"])
        print(f"\n{name}({ins}) -> ({outs})")
        if signature.get("source"):
            print(f"  from {signature['source']}")
        positional, keywords = signature["inputs"]["tree"]["tuple"]
        avals = list(signature["inputs"]["avals"])
        print("  arguments:")
        for line in _describe_tree(positional, avals, "  ")[1:-1]:
            print(line)
        for line in _describe_tree(keywords, avals, "  ")[1:-1]:
            print(line)
        print("  results:")
        for line in _describe_tree(signature["outputs"]["tree"],
                                   list(signature["outputs"]["avals"]), "    "):
            print(line)
    return 0


def _input_value(text: str) -> Any:
    if text.endswith(".npy"):
        try:
            return np.load(text, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise CommandError(f"--input {text}: cannot read it as a .npy file: {e}") from None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise CommandError(f"--input {text!r}: give a .npy file or a Python literal such as "
                           f"'[[1.0, 2.0]]' or '3'") from None


def _run(args: argparse.Namespace) -> int:
    from pyree.runtime.loader import InvalidModuleError, load

    try:
        module = load(args.vmfb, device=args.device)
    except InvalidModuleError as e:
        raise CommandError(str(e)) from None
    if args.function not in module.functions:
        raise CommandError(f"{args.vmfb} has no function {args.function!r}; it has "
                           f"{', '.join(module.functions)}")
    fn = module.functions[args.function]
    leaves = [_input_value(t) for t in args.input]
    try:
        result = fn.call_flat(leaves)
    except (TypeError, ValueError) as e:
        raise CommandError(str(e)) from None
    outputs = _leaves_with_paths(result, "result")
    saved = {}
    for path, value in outputs:
        array = np.asarray(value)
        print(f"{path}: {array.dtype}{list(array.shape)}")
        print(np.array2string(array, threshold=args.print_max))
        saved[path] = array
    if args.output:
        np.savez(args.output, **saved)
        print(f"wrote {args.output}")
    return 0


def _leaves_with_paths(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [item for k, v in value.items() for item in _leaves_with_paths(v, f"{path}[{k!r}]")]
    if isinstance(value, (tuple, list)):
        return [item for i, v in enumerate(value) for item in _leaves_with_paths(v, f"{path}[{i}]")]
    if value is None:
        return []
    return [(path, value)]


def parser() -> argparse.ArgumentParser:
    """The command line's argument parser (``pyree --help``)."""
    top = argparse.ArgumentParser(
        prog="pyree", description="Compile Python functions with pyree to IREE .vmfb modules, "
        "inspect them and run them.",
        epilog="Example: pyree compile model.py:predict --arg 'f32[32,784]' -o predict.vmfb")
    commands = top.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    c = commands.add_parser(
        "compile", help="compile MODULE:FUNCTION(s) to a .vmfb",
        description="Trace and compile functions for the given argument specs into one .vmfb "
        "that `pyree run`, pyree.runtime.load and iree-run-module can run.",
        epilog="Example: pyree compile examples/train_mlp.py:predict --arg "
        "'(f32[784,512], f32[512], f32[512,10], f32[10])' --arg 'f32[32,784]' -o mlp.vmfb")
    c.add_argument("functions", nargs="+", metavar="MODULE:FUNCTION",
                   help="path/to/module.py:function or package.module:function (several share "
                   "the --arg specs)")
    c.add_argument("--arg", action="append", default=[], metavar="SPEC",
                   help=f"one per positional argument, in order: {_SPEC_HELP}")
    c.add_argument("--static", action="append", default=[], metavar="NAME=VALUE",
                   help="a keyword argument fixed at compile time (a Python literal), e.g. "
                   "--static n_layers=3")
    c.add_argument("--target", choices=("cpu", "cuda", "vulkan"), default="cpu",
                   help="the device kind to compile for (default cpu)")
    c.add_argument("--cpu", default=None, metavar="CPU",
                   help="cpu target only: 'host' (this machine's CPU, the default), 'generic' "
                   "(any CPU of this architecture) or an LLVM CPU name such as 'skylake'")
    c.add_argument("-o", "--output", metavar="FILE.vmfb",
                   help="where to write the module (default: the module's name + .vmfb)")
    c.set_defaults(handler=_compile)

    i = commands.add_parser("inspect", help="show a .vmfb's functions and signatures",
                            description="Show the functions of a .vmfb made by pyree, their "
                            "argument and result structures, target and versions.")
    i.add_argument("vmfb", metavar="FILE.vmfb")
    i.set_defaults(handler=_inspect)

    r = commands.add_parser("run", help="run a function of a .vmfb",
                            description="Run one function of a .vmfb made by pyree and print "
                            "its results.",
                            epilog="Example: pyree run mlp.vmfb predict --input w1.npy ... "
                            "--input '[[0.0, 1.0]]'")
    r.add_argument("vmfb", metavar="FILE.vmfb")
    r.add_argument("function", metavar="FUNCTION")
    r.add_argument("--input", action="append", default=[], metavar="VALUE",
                   help="one per array argument, in flattened order (see `pyree inspect`): a "
                   ".npy file or a Python literal such as '[[1.0, 2.0]]'")
    r.add_argument("--device", default="cpu", help="cpu (default), cuda or vulkan")
    r.add_argument("-o", "--output", metavar="FILE.npz", help="also save the results")
    r.add_argument("--print-max", type=int, default=20, metavar="N",
                   help="summarise printed arrays of more than N elements (default 20)")
    r.set_defaults(handler=_run)
    return top


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``pyree`` console script; returns the exit status.

    Example: ``main(["inspect", "predict.vmfb"])``.
    """
    args = parser().parse_args(argv)
    try:
        return args.handler(args)
    except CommandError as e:
        print(f"pyree {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
