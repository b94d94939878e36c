"""Load a ``.vmfb`` made by ``pyree.export`` and call its functions with NumPy arrays.

This needs IREE's runtime and NumPy only: it imports neither ``iree.compiler`` nor
``pyree.transpiler``, so a service that serves exported models installs
``iree-base-runtime`` and ``numpy`` and nothing more::

    from pyree.runtime import load

    model = load("predict.vmfb")                  # device="cpu"
    probabilities = model.predict(params, batch)  # the same pytree predict returned
    model.predict.signature                       # argument and result shapes and dtypes

Each exported function carries its signature (pytree structures, shapes, dtypes, target,
versions) as JSON in IREE's reflection attributes under ``pyree.signature``. Arguments are
checked against it before IREE sees them; a file that is not an IREE module, is truncated or
was not made by pyree raises ``InvalidModuleError``.
"""
from __future__ import annotations

import collections
import hashlib
import json
import os
from typing import Any, Iterator, Sequence, Union

import numpy as np

from .array import Array, device_put_numpy
from .aval import ShapedArray
from .device import Device, devices, iree_runtime, vm_instance
from .executable import Executable

__all__ = ["load", "LoadedModule", "LoadedFunction", "InvalidModuleError", "read_signatures"]

SIGNATURE_KEY = "pyree.signature"
FORMAT_VERSION = 1

_ZIP_LOCAL_HEADER = b"PK\x03\x04"
_ZIP_END_OF_DIRECTORY = b"PK\x05\x06"
_FLATBUFFER_ID = b"IREE"


class InvalidModuleError(ValueError):
    """The file is not a usable ``.vmfb`` made by ``pyree.export``."""


# -- pytree structures as JSON (written by pyree.export) ----------------------------------------

def decode_tree(node: Any) -> Any:
    """Check a JSON structure description; returns it (raises InvalidModuleError if bad)."""
    if node == "*" or node is None:
        return node
    if isinstance(node, dict) and len(node) == 1 and ("tuple" in node or "list" in node):
        for child in next(iter(node.values())):
            decode_tree(child)
        return node
    if isinstance(node, dict) and set(node) == {"dict"}:
        for pair in node["dict"]:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], (str, int))):
                raise InvalidModuleError(f"bad dict entry {pair!r} in a signature")
            decode_tree(pair[1])
        return node
    if isinstance(node, dict) and set(node) == {"namedtuple", "fields", "children"}:
        for child in node["children"]:
            decode_tree(child)
        return node
    raise InvalidModuleError(f"bad structure node {node!r} in a signature")


def _count_leaves(node: Any) -> int:
    if node == "*":
        return 1
    if node is None:
        return 0
    if "dict" in node:
        return sum(_count_leaves(c) for _, c in node["dict"])
    children = node.get("tuple", node.get("list", node.get("children")))
    return sum(_count_leaves(c) for c in children)


_namedtuples: dict = {}


def _namedtuple(name: str, fields: Sequence[str]) -> type:
    key = (name, tuple(fields))
    cls = _namedtuples.get(key)
    if cls is None:
        cls = _namedtuples[key] = collections.namedtuple(name, fields)
    return cls


def _build(node: Any, leaves: Iterator[Any]) -> Any:
    if node == "*":
        return next(leaves)
    if node is None:
        return None
    if "tuple" in node:
        return tuple(_build(c, leaves) for c in node["tuple"])
    if "list" in node:
        return [_build(c, leaves) for c in node["list"]]
    if "dict" in node:
        return {k: _build(c, leaves) for k, c in node["dict"]}
    return _namedtuple(node["namedtuple"], node["fields"])(
        *(_build(c, leaves) for c in node["children"]))


def _flatten(node: Any, value: Any, path: str, out: list) -> None:
    """Leaves of ``value`` in the order of ``node``, with their paths; TypeError on mismatch."""
    if node == "*":
        out.append((path, value))
        return
    if node is None:
        if value is not None:
            raise TypeError(f"argument {_describe(path)}: expected None, got "
                            f"{type(value).__name__}")
        return
    if "dict" in node:
        keys = [k for k, _ in node["dict"]]
        if not isinstance(value, dict) or sorted(map(repr, value)) != sorted(map(repr, keys)):
            got = sorted(value) if isinstance(value, dict) else type(value).__name__
            raise TypeError(f"argument {_describe(path)}: expected a dict with keys {keys}, got "
                            f"{got}")
        for key, child in node["dict"]:
            _flatten(child, value[key], f"{path}[{key!r}]", out)
        return
    children = node.get("tuple", node.get("list", node.get("children")))
    if not isinstance(value, (tuple, list)) or len(value) != len(children):
        kind = "list" if "list" in node else "tuple"
        got = (f"a {type(value).__name__} of length {len(value)}"
               if isinstance(value, (tuple, list)) else f"a {type(value).__name__}")
        raise TypeError(f"argument {_describe(path)}: expected a {kind} of length "
                        f"{len(children)}, got {got}")
    for i, child in enumerate(children):
        _flatten(child, value[i], f"{path}[{i}]", out)


# -- the module file --------------------------------------------------------------------------

def _read(source: Union[str, os.PathLike, bytes, bytearray, memoryview]) -> tuple[bytes, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "<bytes>"
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            return f.read(), path
    except OSError as e:
        raise InvalidModuleError(f"cannot read {path}: {e.strerror}") from None


# pyree.export seals each module with a checksum of its contents, kept in the zip archive's
# comment (IREE's loader, iree-run-module and zip tools ignore it): the end-of-directory
# record says the comment is _SEAL_SIZE bytes, which are _SEAL_TAG and the SHA-256 of every
# byte before them. load() verifies it before IREE parses anything: IREE's loader trusts a
# module's FlatBuffer offsets, and flipped bytes crashed the interpreter (SIGSEGV, SIGILL).
_SEAL_TAG = b"PYREESUM"
_SEAL_SIZE = len(_SEAL_TAG) + 32
_EOCD_SIZE = 22  # the end-of-central-directory record without its comment


def seal(vmfb: bytes) -> bytes:
    """``vmfb`` (IREE's zip-archive module, as compiled) with pyree's checksum in its comment.

    Example::

        open("model.vmfb", "wb").write(seal(compiled_bytes))
    """
    end = len(vmfb) - _EOCD_SIZE
    if vmfb[:4] != _ZIP_LOCAL_HEADER or vmfb[end:end + 4] != _ZIP_END_OF_DIRECTORY or \
            vmfb[-2:] != b"\0\0":
        raise ValueError("seal() takes a module as IREE writes it: a zip archive without comment")
    body = vmfb[:-2] + _SEAL_SIZE.to_bytes(2, "little")
    return body + _SEAL_TAG + hashlib.sha256(body).digest()


def _check_seal(data: bytes, origin: str) -> None:
    end = len(data) - _SEAL_SIZE - _EOCD_SIZE
    tag = data[-_SEAL_SIZE:-32]
    if end < 0 or data[end:end + 4] != _ZIP_END_OF_DIRECTORY or tag != _SEAL_TAG or \
            data[end + 20:end + 22] != _SEAL_SIZE.to_bytes(2, "little"):
        raise InvalidModuleError(
            f"{origin} carries no pyree checksum: it is damaged at its end, or it was not made "
            f"by pyree.export (export it again; a module of IREE's own runs with iree.runtime)")
    if hashlib.sha256(data[:-_SEAL_SIZE]).digest() != data[-32:]:
        raise InvalidModuleError(f"{origin} is damaged: its contents do not match the checksum "
                                 f"pyree.export wrote (was it modified or copied incompletely?)")


def _check_container(data: bytes, origin: str) -> None:
    """Reject what is not a whole, unmodified module made by pyree.export, before IREE parses
    it."""
    if data[:4] != _ZIP_LOCAL_HEADER:
        what = "empty" if not data else f"a {len(data)}-byte file that is not an IREE module"
        if data[4:8] == _FLATBUFFER_ID:
            what = "an IREE module without pyree's checksum (not made by pyree.export)"
        raise InvalidModuleError(f"{origin} is {what} (pyree.export writes zip-archive modules "
                                 f"that start with 'PK')")
    _check_seal(data, origin)
    if _FLATBUFFER_ID not in data[:512]:
        raise InvalidModuleError(f"{origin} is a zip archive but not an IREE module")


def _runtime_version() -> str:
    try:
        from iree.runtime.version import VERSION
        return VERSION
    except ImportError:
        return "unknown"


def read_signatures(source: Union[str, os.PathLike, bytes]) -> dict[str, dict]:
    """The signatures of the functions of an exported module, by name (no device needed).

    Example::

        read_signatures("predict.vmfb")["predict"]["inputs"]["avals"]  # [['float32', [32, 784]]]
    """
    data, origin = _read(source)
    return _parse(data, origin)[1]


def _parse(data: bytes, origin: str) -> tuple[Any, dict[str, dict]]:
    _check_container(data, origin)
    rt = iree_runtime()
    try:
        module = rt.VmModule.copy_buffer(vm_instance(), data)
    except Exception as e:  # IREE's FlatBuffer verifier: corrupted contents
        raise InvalidModuleError(f"{origin} is not a valid IREE module: {e}") from None
    signatures = {}
    for name in module.function_names:
        if name.startswith("__"):
            continue  # IREE's own (__init)
        function = module.lookup_function(name)
        text = function.reflection.get(SIGNATURE_KEY) if function is not None else None
        if text is None:
            raise InvalidModuleError(
                f"{origin}: function {name!r} has no pyree signature: the module was not made "
                f"by pyree.export (call it with iree.runtime directly)")
        try:
            signature = json.loads(text)
            if signature.get("format") != FORMAT_VERSION:
                raise InvalidModuleError(
                    f"{origin}: signature format {signature.get('format')!r} of {name!r}; this "
                    f"pyree reads format {FORMAT_VERSION}")
            for side in ("inputs", "outputs"):
                decode_tree(signature[side]["tree"])
                avals = [ShapedArray(tuple(shape), np.dtype(dtype))
                         for dtype, shape in signature[side]["avals"]]
                if len(avals) != _count_leaves(signature[side]["tree"]):
                    raise InvalidModuleError(f"{origin}: {name!r}'s {side} do not match their "
                                             f"structure")
                signature[side]["avals"] = avals
        except InvalidModuleError:
            raise
        except (ValueError, KeyError, TypeError) as e:
            raise InvalidModuleError(f"{origin}: unreadable signature of {name!r}: {e}") from None
        signatures[name] = signature
    if not signatures:
        raise InvalidModuleError(f"{origin} exports no functions")
    return module, signatures


# -- calling --------------------------------------------------------------------------------------

def _leaf_array(path: str, value: Any, aval: ShapedArray, device: Device, fn: str) -> Array:
    if isinstance(value, Array):
        if value.aval.shape != aval.shape or np.dtype(value.aval.dtype) != aval.dtype:
            raise TypeError(f"{fn}: argument {path} is {value.aval.str_short()}, expected "
                            f"{aval.str_short()}")
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        array = value
        if array.dtype != aval.dtype:
            raise TypeError(f"{fn}: argument {path} has dtype {array.dtype}, expected "
                            f"{aval.str_short()}")
    else:  # Python numbers and nested lists take the expected dtype if they fit its kind
        try:
            array = np.asarray(value)
        except Exception:
            raise TypeError(f"{fn}: argument {path} is a {type(value).__name__}, not an array"
                            ) from None
        if array.dtype == object or not np.can_cast(array.dtype, aval.dtype, "same_kind"):
            raise TypeError(f"{fn}: argument {path} ({array.dtype}) cannot be read as "
                            f"{aval.str_short()}")
        array = array.astype(aval.dtype)
    if array.shape != aval.shape:
        raise ValueError(f"{fn}: argument {path} has shape {tuple(array.shape)}, expected "
                         f"{aval.str_short()}")
    return device_put_numpy(np.asarray(array, order="C"), device)  # (0-d stays 0-d)


class LoadedFunction:
    """One exported function; call it with the arguments the Python function took.

    Results come back in the Python function's structure, as Arrays (``np.asarray`` reads
    them). Example: ``model.predict(params, batch)``; ``model.predict.signature``.
    """

    def __init__(self, name: str, vmfb: bytes, signature: dict, device: Device,
                 module: Any = None) -> None:
        self.name = name
        self.signature = signature
        self.device = device
        self.in_avals: list[ShapedArray] = signature["inputs"]["avals"]
        self.out_avals: list[ShapedArray] = signature["outputs"]["avals"]
        self._executable = Executable(vmfb, name, device, self.out_avals,
                                      work=int(signature.get("work", 0)), module=module)

    def call_flat(self, leaves: Sequence[Any]) -> Any:
        """Call with the arguments' leaves in flattened order (as ``pyree run`` does)."""
        if len(leaves) != len(self.in_avals):
            raise TypeError(f"{self.name} takes {len(self.in_avals)} arrays "
                            f"({', '.join(a.str_short() for a in self.in_avals)}), got "
                            f"{len(leaves)}")
        arrays = [_leaf_array(f"#{i}", value, aval, self.device, self.name)
                  for i, (value, aval) in enumerate(zip(leaves, self.in_avals))]
        return _build(self.signature["outputs"]["tree"], iter(self._checked(arrays)))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves: list = []
        tree = self.signature["inputs"]["tree"]
        positional, keywords = tree["tuple"]
        expected_keys = [k for k, _ in keywords["dict"]]
        if len(args) != len(positional["tuple"]) or sorted(kwargs) != sorted(expected_keys):
            ins = ", ".join(a.str_short() for a in self.in_avals)
            keys = f" and keywords {expected_keys}" if expected_keys else ""
            raise TypeError(f"{self.name} takes {len(positional['tuple'])} positional "
                            f"arguments{keys} ({ins}), got {len(args)}"
                            f"{' and ' + str(sorted(kwargs)) if kwargs else ''}")
        _flatten(tree, (args, kwargs), "", leaves)
        arrays = [_leaf_array(_describe(path), value, aval, self.device, self.name)
                  for (path, value), aval in zip(leaves, self.in_avals)]
        return _build(self.signature["outputs"]["tree"], iter(self._checked(arrays)))

    def _checked(self, arrays: list) -> list:
        """The call's results, each checked against the signature: the signature is data in
        the file, and results read with a wrong shape or dtype would read past their buffers."""
        outs = self._executable(arrays)
        if len(outs) != len(self.out_avals):
            raise InvalidModuleError(f"{self.name} returned {len(outs)} arrays but its "
                                     f"signature declares {len(self.out_avals)}")
        for i, (out, aval) in enumerate(zip(outs, self.out_avals)):
            view = out.buffer_view()
            # IREE's element type holds its width in bits in its low byte (signless and signed
            # integers differ in their high bits, so those are not compared).
            if tuple(view.shape) != tuple(aval.shape) or \
                    (int(view.element_type) & 0xFF) != 8 * aval.dtype.itemsize:
                raise InvalidModuleError(
                    f"{self.name}: result {i} is {list(view.shape)} of IREE element type "
                    f"{view.element_type}, but the module's signature declares "
                    f"{aval.str_short()}: the signature was altered")
        return outs

    def __repr__(self) -> str:
        ins = ", ".join(a.str_short() for a in self.in_avals)
        outs = ", ".join(a.str_short() for a in self.out_avals)
        return f"<exported {self.name}({ins}) -> ({outs})>"


def _describe(path: str) -> str:
    """``[0][1]['w']`` (a path into (args, kwargs)) as ``args[1]['w']``."""
    if path.startswith("[0]"):
        rest = path[3:]
        index, _, tail = rest[1:].partition("]")
        return f"{index}{tail}" if index else "args"
    if path.startswith("[1]"):
        return f"keyword {path[3:]}"
    return path or "args"


class LoadedModule:
    """The functions of an exported ``.vmfb``, as attributes and by name.

    Example::

        model = pyree.runtime.load("model.vmfb")
        model.functions          # {'predict': <exported predict(f32[32,784]) -> (f32[32,10])>}
        model["predict"](x)
    """

    def __init__(self, functions: dict[str, LoadedFunction], origin: str) -> None:
        self.functions = functions
        self.origin = origin

    def __getattr__(self, name: str) -> LoadedFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(f"{self.__dict__.get('origin', 'the module')} has no function "
                             f"{name!r}; it has {sorted(functions)}")

    def __getitem__(self, name: str) -> LoadedFunction:
        return getattr(self, name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.functions))

    def __repr__(self) -> str:
        return f"<LoadedModule {self.origin}: {', '.join(self.functions)}>"


def _device(device: Union[str, Device]) -> Device:
    if isinstance(device, Device):
        return device
    if not isinstance(device, str):
        raise TypeError(f"device must be a platform name or a Device, got {device!r}")
    try:
        return devices(device)[0]
    except ValueError as e:
        raise ValueError(str(e)) from None


def load(source: Union[str, os.PathLike, bytes], device: Union[str, Device] = "cpu"
         ) -> LoadedModule:
    """Load an exported ``.vmfb`` (a path or its bytes) onto ``device`` ("cpu", "cuda",
    "vulkan" or a Device); returns its functions.

    Example::

        model = pyree.runtime.load("predict.vmfb")
        logits = model.predict(params, np.zeros((32, 784), np.float32))
    """
    data, origin = _read(source)
    module, signatures = _parse(data, origin)
    target_device = _device(device)
    for name, signature in signatures.items():
        target = signature.get("target", "cpu")
        if target != target_device.platform:
            raise InvalidModuleError(f"{origin} was compiled for {target}, not for "
                                     f"{target_device.platform}: export it again with "
                                     f"target={target_device.platform!r}")
        built_with = str(signature.get("iree", "")).split(":")[0]
        if built_with and built_with != _runtime_version():
            raise InvalidModuleError(
                f"{origin} was compiled by IREE {built_with} but this runtime is IREE "
                f"{_runtime_version()}: a .vmfb runs only on the runtime release it was built "
                f"for; install iree-base-runtime=={built_with} or export it again")
    # The module parsed for its signatures serves every function: the file is copied once.
    functions = {name: LoadedFunction(name, data, signature, target_device, module)
                 for name, signature in signatures.items()}
    return LoadedModule(functions, origin)
